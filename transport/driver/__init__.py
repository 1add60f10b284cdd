"""The media driver: the conductor agent, its media, counters and cnc.dat.

:class:`MediaDriver` launches a driver (standalone: ``aeromq driver``; or embedded in any
process) over a :class:`MediaDriverContext`, whose values read from text follow Aeron's rules
(:func:`parse_duration_ns`, :func:`parse_size`). Clients talk to it through ``cnc.dat`` in its
directory with Aeron's command protocol, byte for byte.

Layout: what both media use is here (the conductor, the media driver and its context, clients
and their liveness, the command adapter, counters, session ids, channel parameters, log files and
their upkeep, subscription links and subscriber positions); ``ipc/`` holds the ``aeron:ipc`` media
and ``udp/`` the ``aeron:udp`` media with its sender and receiver agents.
"""

from aeromq.transport.driver._values import parse_duration_ns, parse_size
from aeromq.transport.driver.conductor import DriverConductor
from aeromq.transport.driver.context import (
    MediaDriverContext,
    TerminationValidator,
    ThreadingMode,
    allow_termination,
    default_aeron_dir,
    deny_termination,
)
from aeromq.transport.driver.event_driven_context import (
    DEEP_BACKOFF,
    deep_idle_unless_set,
    event_driven_context,
)
from aeromq.transport.driver.ipc.ipc_publication import IpcPublication, PublicationState
from aeromq.transport.driver.media_driver import MediaDriver, NetworkBell
from aeromq.transport.driver.system_counters import SystemCounter
from aeromq.transport.driver.udp.network_publication import NetworkPublication
from aeromq.transport.driver.udp.publication_image import PublicationImage
from aeromq.transport.driver.udp.receiver import Receiver
from aeromq.transport.driver.udp.sender import Sender
from aeromq.transport.driver.udp.udp_channel import UdpChannel
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.driver.udp.udp_streams import UdpStreams
from aeromq.transport.driver.uri_params import with_doorbell

__all__ = [
    "DEEP_BACKOFF",
    "DriverConductor",
    "IpcPublication",
    "MediaDriver",
    "MediaDriverContext",
    "NetworkBell",
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
    "deep_idle_unless_set",
    "default_aeron_dir",
    "deny_termination",
    "event_driven_context",
    "parse_duration_ns",
    "parse_size",
    "with_doorbell",
]
