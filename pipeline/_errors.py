"""The pipeline's errors: one root, :class:`PipelineError`.

::

    PipelineError                   root of every error the Spark connector raises itself
    ├── OptionError                 (also ValueError) a bad or missing data source option
    ├── DataLossError               an offset below the queue's min offset (failOnDataLoss)
    ├── ReadTimeoutError            (retriable, also TimeoutError) a queue range stopped
    │                               coming in before its end offset
    └── JavaError                   Spark cannot start: Java is missing or too old
        ├── JavaNotFoundError       no ``java`` on ``JAVA_HOME`` or ``PATH``
        └── JavaVersionError        a Java release PySpark does not run on

Errors of the clients below (``aeromq.client.ClientError``: an unknown topic, an unreachable
broker) pass through unchanged. Messages name the values that matter as ``key=value``; the values
are kept as attributes. Spark shows an error raised in a Python worker as the worker's
traceback text, so the class name and the ``key=value`` pairs are what a user reads there.
"""

from __future__ import annotations

__all__ = [
    "DataLossError",
    "JavaError",
    "JavaNotFoundError",
    "JavaVersionError",
    "OptionError",
    "PipelineError",
    "ReadTimeoutError",
]


class PipelineError(Exception):
    """Root of the pipeline's errors: ``PipelineError(message, **values)`` becomes
    ``message: k=v ...`` and keeps each value as an attribute."""

    retriable: bool = False

    def __init__(self, message: str, **values: object) -> None:
        if values:
            detail = " ".join(f"{key}={value!r}" for key, value in values.items())
            message = f"{message}: {detail}"
        super().__init__(message)
        self.values = values
        for key, value in values.items():
            setattr(self, key, value)

    def __reduce__(self) -> tuple[object, ...]:
        # Errors cross process boundaries (Spark's Python workers): rebuild from the text.
        return (_rebuild, (type(self), str(self), self.values))


def _rebuild(cls: type[PipelineError], text: str, values: dict[str, object]) -> PipelineError:
    error = cls.__new__(cls)
    Exception.__init__(error, text)
    error.values = values
    for key, value in values.items():
        setattr(error, key, value)
    return error


class OptionError(PipelineError, ValueError):
    """A data source option that is missing, unknown in its combination, or malformed."""


class DataLossError(PipelineError):
    """A requested offset is below the queue's min offset: those messages are gone
    (retention). Raised when ``failOnDataLoss`` is true (the default)."""


class ReadTimeoutError(PipelineError, TimeoutError):
    """A queue range stopped arriving before its end offset within the read timeout."""

    retriable = True


class JavaError(PipelineError):
    """Spark cannot start on this machine's Java."""


class JavaNotFoundError(JavaError):
    """No Java runtime: install one (Debian: ``apt-get install openjdk-17-jre-headless``)."""


class JavaVersionError(JavaError):
    """A Java release PySpark does not run on (it needs 17 or 21)."""
