"""Running the application's hooks (tracing, auditing) around a client's sends and polls, as
RocketMQ's clients run their ``SendMessageHook`` and ``ConsumeMessageHook``: every registered
hook in turn, and a hook that raises is logged and skipped, never the send or poll it watches.

The hook types themselves live beside what they watch (``producer.SendMessageHook``,
``consumer.ConsumeMessageHook``); this is only their runner.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

__all__ = ["call_hooks"]

_log = logging.getLogger(__name__)


def call_hooks(hooks: Sequence[object], method: str, context: object) -> None:
    """Call ``hook.<method>(context)`` on each of ``hooks``, in order; an exception a hook
    raises is logged (with its traceback) and the next hook runs."""
    for hook in hooks:
        try:
            getattr(hook, method)(context)
        except Exception:
            _log.warning("hook %s.%s raised: skipped", type(hook).__name__, method, exc_info=True)
