"""``command_error``: the error a command handler raises to refuse a client's command.

The driver answers a refused command with ON_ERROR: the command's correlation id, one of Aeron's
``ErrorCode`` values and a text. Handlers raise :class:`~transport.RegistrationError` (the error
the client side raises for the same ON_ERROR) with ``code`` set; the text is the error's
message, ``what: key=value ...`` naming the offending values. The command adapter turns it into
the ON_ERROR, counts it and records it in the cnc error log.
"""

from __future__ import annotations

from aeromq.transport._errors import RegistrationError
from aeromq.transport.command import ErrorCode

__all__ = ["command_error"]


def command_error(code: ErrorCode, message: str, **values: object) -> RegistrationError:
    """A :class:`~transport.RegistrationError` with ``code`` and ``message: key=value ...``."""
    error = RegistrationError(message, **values)
    error.code = int(code)
    return error
