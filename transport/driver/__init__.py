"""The media driver: the conductor agent, IPC publications, counters and cnc.dat.

:class:`MediaDriver` launches a driver (standalone: ``aeromq driver`` / ``python -m
transport.driver``; or embedded in any process) over a :class:`MediaDriverContext`. Clients talk
to it through ``cnc.dat`` in its directory with Aeron's command protocol, byte for byte.
"""

from transport.driver.conductor import DriverConductor
from transport.driver.context import (
    MediaDriverContext,
    TerminationValidator,
    ThreadingMode,
    allow_termination,
    default_aeron_dir,
    deny_termination,
)
from transport.driver.ipc_publication import IpcPublication, PublicationState
from transport.driver.media_driver import MediaDriver
from transport.driver.network_publication import NetworkPublication
from transport.driver.publication_image import PublicationImage
from transport.driver.receiver import Receiver
from transport.driver.sender import Sender
from transport.driver.system_counters import SystemCounter
from transport.driver.udp_channel import UdpChannel
from transport.driver.udp_settings import UdpSettings
from transport.driver.udp_streams import UdpStreams

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
