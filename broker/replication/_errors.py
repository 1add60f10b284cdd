"""Errors of replication, under the broker's root (:class:`BrokerError`).

::

    BrokerError                         (aeromq.broker) root of the broker's errors
    └── ReplicationError                root of the errors of aeromq.broker.replication
        ├── MalformedFrameError         a replication frame failed its checks (``reason``,
        │                               ``frame_type``, ``length``, ...)
        └── EpochFileError              the epoch file or the truncation intent cannot be used
            └── CorruptEpochFileError   a line that does not parse, or epochs out of order
                                        (``path``, ``line_number``, ``line``)

A malformed frame is expected on a network (a stray or truncated datagram): the frame codec's
:func:`~aeromq.broker.replication.check_frame` says so with a negative code, without raising;
``decode_frame`` raises :class:`MalformedFrameError` for callers that prefer an exception. A
corrupt epoch file is never repaired silently: the member stops and an operator looks. Every
message names the values that matter as ``key=value``; the values are kept as attributes.
"""

from __future__ import annotations

from aeromq.broker._errors import BrokerError

__all__ = ["CorruptEpochFileError", "EpochFileError", "MalformedFrameError", "ReplicationError"]


class ReplicationError(BrokerError):
    """Root of the replication errors."""


class MalformedFrameError(ReplicationError):
    """A replication frame that is too short, of an unknown version or type, of the wrong
    length, or with a negative field; ``reason`` is the name of its check code."""


class EpochFileError(ReplicationError):
    """The epoch file or the ``truncate.intent`` marker could not be read, written or used
    (``path`` says which)."""


class CorruptEpochFileError(EpochFileError):
    """A line of an epoch file (``path``, ``line_number``, ``line``) that is not
    ``<epoch> <start_offset>`` with both non-negative, epochs and start offsets increasing."""
