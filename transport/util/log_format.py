"""``JsonLogFormatter``: one JSON object per log record, for ``--log-format json``.

Every ``aeromq`` command configures its logging in one place (the command line's
``setup_logging``), with :data:`TEXT_LOG_FORMAT` or this machine-readable format; a library
user may put it on a handler of their own. Keys, in order: ``ts`` (UTC, ISO 8601 with
milliseconds), ``level``, ``logger``, ``message`` (formatted with its arguments), ``thread``,
``pid``, then ``exception`` (the traceback text) when the record has one, and any ``extra=``
fields the caller passed. Values that JSON cannot hold are written as their ``str``.
Standard library only.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Final

__all__ = ["TEXT_LOG_FORMAT", "JsonLogFormatter"]

TEXT_LOG_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"
"""The ``text`` format (the default): what a person reads on a terminal."""

_RESERVED: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


class JsonLogFormatter(logging.Formatter):
    """Formats a record as one line of JSON (see module)."""

    def format(self, record: logging.LogRecord) -> str:
        seconds = int(record.created)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        fields: dict[str, object] = {
            "ts": f"{stamp}.{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "thread": record.threadName,
            "pid": record.process,
        }
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            fields["exception"] = record.exc_text
        for key, value in vars(record).items():
            if key not in _RESERVED and key not in fields:
                fields[key] = value
        return json.dumps(fields, default=str, ensure_ascii=False)
