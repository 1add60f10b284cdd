"""``ImageAdmission``: which SETUPs may become images, and what one source address may hold.

Aeron's receiver turns every SETUP that a subscription wants into an image (its log, counters, a
notice to each subscriber), with the term length the sender chose: up to 1 GiB, a 3 GiB log. The
SETUP/status exchange is the whole handshake (real Aeron peers must keep working with this
driver, so it stays as it is), and anyone who can send a datagram to the port can start it. So
the conductor bounds what a SETUP can make it hold, before anything is allocated for it:

- **the term length** is at most the cap of the subscriptions the image would serve: a
  subscription's ``max-term-length`` channel parameter (the largest among them), else
  ``UdpSettings.image_max_term_length``, else the larger of
  :data:`DEFAULT_IMAGE_MAX_TERM_LENGTH` (64 MiB: the UDP session term of aeromq's clients and
  brokers) and the driver's own ``term_buffer_length``. A receiver that expects larger terms
  (a replication follower, say) raises the cap for its own channel with ``max-term-length``;
- **one source address** (the sender's IP, whatever its port) holds at most
  ``max_images_per_source`` images and ``max_image_bytes_per_source`` bytes of their logs,
  images still being made included; for an image under a cap a subscription raised above the
  driver's, the bytes bound is at least :data:`LOGS_AT_CAP` logs of that cap, so raising
  ``max-term-length`` on a channel is enough for a few such streams from one sender.

A refused SETUP makes nothing: the receiver forgets it, so a sender's next SETUP (Aeron's send
one every 100 ms until answered) is asked about again, and refused again until something changed
(an image of the source went away). Each refusal counts in the system counter ``Images
rejected`` (id 42 in cnc.dat, :data:`~transport.driver.SystemCounter.IMAGES_REJECTED`; Aeron's
counter for images a subscriber rejected, which this driver has no other use for) and is logged
at WARNING at most once per source address and :data:`REFUSAL_LOG_INTERVAL_NS`
(:class:`~transport.driver.refusal_log.RefusalLog`).

Caller: ``UdpSubscriptions`` (conductor thread only): :meth:`ImageAdmission.admit` before making
an image, :meth:`ImageAdmission.release` when it is freed or could not be made.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Final, Protocol

from aeromq.transport.concurrent import AtomicCounter
from aeromq.transport.driver.context import MediaDriverContext
from aeromq.transport.driver.refusal_log import RefusalLog
from aeromq.transport.driver.udp.udp_channel import Sockaddr
from aeromq.transport.logbuffer.log_buffer_descriptor import compute_log_length

__all__ = [
    "DEFAULT_IMAGE_MAX_TERM_LENGTH",
    "LOGS_AT_CAP",
    "REFUSAL_LOG_INTERVAL_NS",
    "ImageAdmission",
    "Subscriber",
    "source_host",
]

DEFAULT_IMAGE_MAX_TERM_LENGTH: Final = 64 * 1024 * 1024
"""The default cap on an image's term length (see module): the term of aeromq's UDP sessions."""
REFUSAL_LOG_INTERVAL_NS: Final = 10_000_000_000
"""A source's refusals are logged at most once per this interval (10 s)."""
LOGS_AT_CAP: Final = 4
"""Logs of the largest term its cap allows that one source may always hold (see module)."""

_LOG = logging.getLogger(__name__)


class Subscriber(Protocol):
    """What admission reads of a subscription the image would serve."""

    @property
    def max_term_length(self) -> int | None: ...


def source_host(address: Sockaddr) -> str:
    """The IP of a source address: what the per-source bound counts by."""
    return str(address[0])


class ImageAdmission:
    """The SETUP admission rules of one driver (see module). Conductor thread only."""

    __slots__ = (
        "_held",
        "_log",
        "_max_bytes",
        "_max_images",
        "_page_size",
        "_refused",
        "default_max_term_length",
    )

    def __init__(self, context: MediaDriverContext, images_rejected: AtomicCounter) -> None:
        udp = context.udp
        self.default_max_term_length = udp.image_max_term_length or max(
            DEFAULT_IMAGE_MAX_TERM_LENGTH, context.term_buffer_length
        )
        self._max_images = udp.max_images_per_source
        self._max_bytes = udp.max_image_bytes_per_source
        self._page_size = context.file_page_size
        self._refused = images_rejected
        self._held: dict[str, tuple[int, int]] = {}  # host -> (images, log bytes)
        self._log = RefusalLog(_LOG, REFUSAL_LOG_INTERVAL_NS)

    def max_term_length(self, subscribers: Iterable[Subscriber]) -> int:
        """The cap for an image serving ``subscribers``: the largest of theirs (see module)."""
        default = self.default_max_term_length
        return max(
            (s.max_term_length if s.max_term_length is not None else default for s in subscribers),
            default=default,
        )

    def log_length(self, term_length: int) -> int:
        """The bytes of an image log of ``term_length``: three terms and the metadata."""
        return compute_log_length(term_length, self._page_size)

    def admit(
        self,
        source_address: Sockaddr,
        session_id: int,
        stream_id: int,
        term_length: int,
        subscribers: Iterable[Subscriber],
        now_ns: int,
    ) -> bool:
        """Whether a SETUP of ``term_length`` from ``source_address`` may become an image for
        ``subscribers``. True holds its log's bytes for the source (give them back with
        :meth:`release`); False counted and (rate-limited) logged the refusal."""
        host = source_host(source_address)
        cap = self.max_term_length(subscribers)
        images, held = self._held.get(host, (0, 0))
        log_length = self.log_length(term_length)
        max_bytes = self._max_bytes
        if cap > self.default_max_term_length:  # a subscription raised it for its channel
            max_bytes = max(max_bytes, LOGS_AT_CAP * self.log_length(cap))
        if term_length > cap:
            why = f"term_length={term_length} max_term_length={cap}"
        elif images >= self._max_images:
            why = f"images_held={images} max_images_per_source={self._max_images}"
        elif held + log_length > max_bytes:
            why = (
                f"image_bytes_held={held} log_length={log_length} "
                f"max_image_bytes_per_source={max_bytes}"
            )
        else:
            self._held[host] = (images + 1, held + log_length)
            return True
        self._refused.increment_ordered()
        self._log.refused(
            host,
            now_ns,
            f"SETUP refused, no image: {why} session_id={session_id} stream_id={stream_id}",
        )
        return False

    def release(self, source_address: Sockaddr, term_length: int) -> None:
        """An admitted image of ``term_length`` from ``source_address`` is gone (or was never
        made): its source may hold another."""
        host = source_host(source_address)
        images, held = self._held.get(host, (0, 0))
        if images <= 1:
            self._held.pop(host, None)
        else:
            self._held[host] = (images - 1, held - self.log_length(term_length))

    def held(self, source_address: Sockaddr) -> tuple[int, int]:
        """(images, log bytes) that ``source_address``'s host holds now."""
        return self._held.get(source_host(source_address), (0, 0))
