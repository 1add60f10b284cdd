"""What one client may hold of the broker's transport sessions, and how a refusal reaches it.

Every session holds two logs in the media driver's shared memory: the client's ingress
publication (the broker reads it as an image) and the broker's response publication. Over IPC
each is three terms of the driver's IPC term (64 MiB by default: 2 x 192 MiB a session), so one
client opening sessions in a loop could take nearly all of ``/dev/shm``, and then the broker's
next response publication would be refused by the driver (``STORAGE_SPACE``) with no way to say
so. So a CONNECT is checked before anything is made for it, per client (its source, the CONNECT's
``client_id``: :func:`client_key`):

- at most ``max_sessions_per_client`` live sessions;
- at most ``max_log_bytes_per_client`` bytes of logs (:func:`session_log_bytes`);
- a response channel whose ``term-length`` is at most ``max_response_term_length`` (64 MiB,
  the term of aeromq's UDP sessions): a client cannot make the broker map a 3 GiB log.

A refused CONNECT, like one whose response publication the driver refused, is answered with a
refusal code (``SYSTEM_BUSY``, retriable; ``INVALID_PARAMETER`` for the term) on a farewell
publication of a small term (:func:`farewell_channel`: 64 KiB terms, 192 KiB of shared memory),
never with silence. Limits cap honest clients that open too much; a local process that forges
``client_id`` values is not stopped by them (it can write ``/dev/shm`` anyway, see the security
guide). Pure functions, no I/O; the counts are ``SessionTable``'s.
"""

from __future__ import annotations

from typing import Final

from aeromq.broker.session._config import SessionServerConfig
from aeromq.broker.session._route_check import IPC_SOURCE
from aeromq.transport import TransportError
from aeromq.transport.channel_uri import ChannelUri

__all__ = [
    "FAREWELL_TERM_LENGTH",
    "client_key",
    "farewell_channel",
    "limit_refusal",
    "response_term_length",
    "session_log_bytes",
]

FAREWELL_TERM_LENGTH: Final = 64 * 1024
"""The term of a farewell publication: one short answer, then closed."""
_PARTITIONS: Final = 3


def client_key(source_identity: str, client_id: str) -> str:
    """Who a CONNECT is from, for its limits: ``client_id`` at its source's host (``aeron:ipc``
    for an IPC client)."""
    host = source_identity if source_identity == IPC_SOURCE else source_identity.rpartition(":")[0]
    return f"{client_id}@{host}"


def response_term_length(response_channel: str, ingress_term_length: int) -> int:
    """The term the response publication will have: the channel's ``term-length``, else (the
    driver's default for the media) taken to be the ingress image's."""
    try:
        term_length = ChannelUri.parse(response_channel).get_size("term-length")
    except TransportError:  # a bad channel or size: the route check refuses it anyway
        return ingress_term_length
    return ingress_term_length if term_length is None else term_length


def session_log_bytes(ingress_term_length: int, response_term: int) -> int:
    """The shared memory a session's two logs may take: three terms each (metadata aside)."""
    return _PARTITIONS * (ingress_term_length + response_term)


def limit_refusal(
    config: SessionServerConfig, sessions: int, log_bytes: int, new_log_bytes: int
) -> str | None:
    """Why a client holding ``sessions`` sessions and ``log_bytes`` may not open one more of
    ``new_log_bytes``, or None when it may."""
    if sessions >= config.max_sessions_per_client:
        return (
            f"too many sessions for this client: sessions={sessions} "
            f"max_sessions_per_client={config.max_sessions_per_client}"
        )
    if log_bytes + new_log_bytes > config.max_log_bytes_per_client:
        return (
            f"too much shared memory for this client: log_bytes={log_bytes} "
            f"session_log_bytes={new_log_bytes} "
            f"max_log_bytes_per_client={config.max_log_bytes_per_client}"
        )
    return None


def farewell_channel(response_channel: str) -> str:
    """``response_channel`` with the small term of a farewell (:data:`FAREWELL_TERM_LENGTH`)."""
    try:
        uri = ChannelUri.parse(response_channel)
        uri.put("term-length", str(FAREWELL_TERM_LENGTH))
    except TransportError:
        return response_channel
    return str(uri)
