"""The media driver: the conductor agent, IPC publications, counters and cnc.dat.

:class:`MediaDriver` launches a driver (standalone: ``aeromq driver`` / ``python -m
transport.driver``; or embedded in any process) over a :class:`MediaDriverContext`. Clients talk
to it through ``cnc.dat`` in its directory with Aeron's command protocol, byte for byte.
"""

from aeromq.transport.driver.conductor import DriverConductor
from aeromq.transport.driver.context import (
    MediaDriverContext,
    TerminationValidator,
    ThreadingMode,
    allow_termination,
    default_aeron_dir,
    deny_termination,
)
from aeromq.transport.driver.ipc_publication import IpcPublication, PublicationState
from aeromq.transport.driver.media_driver import MediaDriver
from aeromq.transport.driver.network_publication import NetworkPublication
from aeromq.transport.driver.publication_image import PublicationImage
from aeromq.transport.driver.receiver import Receiver
from aeromq.transport.driver.sender import Sender
from aeromq.transport.driver.system_counters import SystemCounter
from aeromq.transport.driver.udp_channel import UdpChannel
from aeromq.transport.driver.udp_settings import UdpSettings
from aeromq.transport.driver.udp_streams import UdpStreams

__all__ = [
    "DriverConductor",
    "IpcPublication",
    "MediaDriver",
    "MediaDriverContext",
    "NetworkPublication",
    "PublicationImage",
    "PublicationState",
    "Receiver",
    "Sender",
    "SystemCounter",
    "TerminationValidator",
    "ThreadingMode",
    "UdpChannel",
    "UdpSettings",
    "UdpStreams",
    "allow_termination",
    "default_aeron_dir",
    "deny_termination",
]
