"""How large a send's record batch may be: the rule the send path enforces and the broker's
config hands to the store (``BrokerConfig.max_record_bytes``).

It sits below both (``broker.config`` and ``broker.processor.send`` import it), so the config
does not load the send path to learn one number.
"""

from __future__ import annotations

from typing import Final

from aeromq.common import MAX_FRAMING_BYTES

__all__ = ["BATCH_FRAMING_ALLOWANCE"]

BATCH_FRAMING_ALLOWANCE: Final = MAX_FRAMING_BYTES
"""Bytes a send's record batch may take beyond ``max_message_size`` (see
:data:`common.MAX_FRAMING_BYTES`)."""
