"""Which counters ``stat`` shows: AeronStat's filters, over a :class:`CounterSnapshot`.

Every filter that is set must match (they combine with AND); an unset filter matches all:

- ``type_ids``: the counter's type id is one of them.
- ``label``: the regular expression is found in the label (``re.search``).
- ``identities``: the counter's identity (:func:`~transport.tools.counter_keys.counter_identity`:
  a system counter's id, a stream counter's registration id, else the value record's
  registration id) is one of them.
- ``session_ids``, ``stream_ids``: the session / stream id in a stream counter's key is one of
  them.
- ``channel``: the regular expression is found in the channel of a stream or channel status
  counter's key.

One difference from AeronStat: there a session, stream or channel filter only narrows the
counters that have that field and lets every other counter through (so ``stream=1001`` still
lists the 46 system counters); here a counter without the field does not match, so
``--stream 1001`` shows the counters of stream 1001 and nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.tools.counter_keys import counter_channel, counter_identity, stream_key
from aeromq.transport.tools.counter_snapshot import CounterSnapshot

__all__ = ["CounterFilter", "parse_id_list"]


def parse_id_list(text: str) -> frozenset[int]:
    """``"1,4, 12"`` -> ``{1, 4, 12}``; raise ConfigurationError for anything but integers."""
    parts = [part.strip() for part in text.split(",")]
    try:
        return frozenset(int(part) for part in parts)
    except ValueError:
        raise ConfigurationError("expected a comma-separated list of integers", text=text) from None


@dataclass(frozen=True, slots=True)
class CounterFilter:
    """AeronStat's filters (see module); the default matches every counter."""

    type_ids: frozenset[int] | None = None
    label: re.Pattern[str] | None = None
    identities: frozenset[int] | None = None
    session_ids: frozenset[int] | None = None
    stream_ids: frozenset[int] | None = None
    channel: re.Pattern[str] | None = None

    def matches(self, counter: CounterSnapshot) -> bool:
        """Whether ``counter`` passes every filter that is set."""
        type_id = counter.type_id
        if self.type_ids is not None and type_id not in self.type_ids:
            return False
        if self.label is not None and self.label.search(counter.label) is None:
            return False
        if self.identities is not None and (
            counter_identity(type_id, counter.key, counter.registration_id) not in self.identities
        ):
            return False
        if self.session_ids is not None or self.stream_ids is not None:
            stream = stream_key(type_id, counter.key)
            if stream is None:
                return False
            if self.session_ids is not None and stream.session_id not in self.session_ids:
                return False
            if self.stream_ids is not None and stream.stream_id not in self.stream_ids:
                return False
        if self.channel is not None:
            channel = counter_channel(type_id, counter.key)
            if channel is None or self.channel.search(channel) is None:
                return False
        return True
