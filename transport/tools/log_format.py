"""``JsonLogFormatter``: one JSON object per log record, for ``--log-format json``.

Every command's logging is configured once, by :func:`~transport.tools.cli.setup_logging`;
this is its machine-readable format. Keys, in order: ``ts`` (UTC, ISO 8601 with
milliseconds), ``level``, ``logger``, ``message`` (formatted with its arguments), ``thread``,
``pid``, then ``exception`` (the traceback text) when the record has one, and any ``extra=``
fields the caller passed. Values that JSON cannot hold are written as their ``str``.
Standard library only: the transport, the lowest layer, uses it too.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Final

__all__ = ["LOG_FORMATS", "TEXT_LOG_FORMAT", "JsonLogFormatter"]

LOG_FORMATS: Final = ("text", "json")
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
