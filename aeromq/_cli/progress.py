"""Progress of a long command (``produce``, ``consume``, ``admin offset reset``): count, rate, ETA.

On a terminal it is one live line drawn by ``rich`` (a bar when the total is known); anywhere
else (a pipe, a file, CI) it is a plain line every ``--progress-interval``::

    produce: 40,000/100,000 (40%) 15,873 msgs/s eta 4s

Progress goes to standard error, so standard output keeps only data (messages, ``--json``
records, the summary). ``--progress`` picks the mode: ``auto`` (live on a terminal, plain
otherwise), ``live``, ``plain`` or ``none``; :func:`add_progress` adds both options with the
shared help. Caller: the command's loop, through :meth:`Progress.advance`, which costs a clock
read and an add in plain mode and a locked add in live mode.
"""

from __future__ import annotations

import argparse
import time
from types import TracebackType
from typing import TYPE_CHECKING, Final, TextIO

from aeromq._cli.options import duration_ms
from aeromq.transport.util import format_duration_ms

if TYPE_CHECKING:  # rich is imported when a live line starts
    from rich.progress import Progress as RichProgress
    from rich.progress import ProgressColumn, TaskID

__all__ = ["MODES", "Progress", "add_progress", "format_eta", "plain_line"]

MODES: Final = ("auto", "live", "plain", "none")
"""``--progress`` values: ``auto`` is ``live`` when the stream is a terminal, else ``plain``."""
DEFAULT_INTERVAL_MS: Final = 5_000.0


def add_progress(
    parser: argparse.ArgumentParser,
    default_interval_ms: float = DEFAULT_INTERVAL_MS,
    stream: str = "standard error",
) -> None:
    """``--progress MODE`` and ``--progress-interval DURATION`` on ``parser``; ``stream`` is
    where the command shows it (the help says so)."""
    parser.add_argument(
        "--progress",
        choices=MODES,
        default="auto",
        help=f"progress on {stream}: live (redrawn in place), plain (a line every "
        "--progress-interval), none, or auto (live on a terminal, else plain)",
    )
    parser.add_argument(
        "--progress-interval",
        type=duration_ms,
        default=default_interval_ms,
        metavar="DURATION",
        help="time between plain progress lines, e.g. 1s; "
        f"default {format_duration_ms(default_interval_ms)}",
    )


def format_eta(seconds: float | None) -> str:
    """``75`` -> ``1m15s``; ``None`` (unknown) -> ``-``."""
    if seconds is None:
        return "-"
    whole = max(0, round(seconds))
    minutes, secs = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def plain_line(what: str, done: int, total: int | None, elapsed_s: float, unit: str) -> str:
    """``what: done/total (pct%) rate unit/s eta T`` (without a total: ``what: done rate``)."""
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    if not total:
        return f"{what}: {done:,} {rate:,.0f} {unit}/s"
    eta = (total - done) / rate if rate > 0 else None
    return (
        f"{what}: {done:,}/{total:,} ({100 * done // total}%) {rate:,.0f} {unit}/s "
        f"eta {format_eta(eta)}"
    )


class Progress:
    """A count toward an optional total, shown as ``mode`` says on ``stream``.

    Use as a context manager: the live line is removed on exit (the command's summary follows).
    """

    def __init__(
        self,
        what: str,
        total: int | None,
        stream: TextIO,
        *,
        mode: str = "auto",
        interval_ms: float = DEFAULT_INTERVAL_MS,
        unit: str = "msgs",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"not a progress mode: value={mode!r} (one of {', '.join(MODES)})")
        if mode == "auto":
            mode = "live" if stream.isatty() else "plain"
        self.what = what
        self.total = total or None
        self.stream = stream
        self.mode = mode
        self.unit = unit
        self.done = 0
        self._interval_s = max(interval_ms, 0.0) / 1e3
        self._started = time.monotonic()
        self._next_line = self._started + self._interval_s
        self._live: RichProgress | None = None  # in live mode
        self._task: TaskID  # set with _live

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        self._next_line = self._started + self._interval_s
        if self.mode == "live":
            self._live, self._task = _live_bar(self.what, self.total, self.stream)
            self._live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def advance(self, count: int = 1) -> None:
        """Add ``count`` done; in plain mode print a line when the interval has passed."""
        self.done += count
        if self._live is not None:
            elapsed_s = time.monotonic() - self._started
            rate = f"{self.done / elapsed_s:,.0f} {self.unit}/s" if elapsed_s > 0 else "-"
            self._live.update(self._task, completed=self.done, rate=rate)
        elif self.mode == "plain":
            now = time.monotonic()
            if now >= self._next_line:
                self._next_line = now + self._interval_s
                self._print(now)

    def close(self) -> None:
        """Stop the live line (idempotent)."""
        if self._live is not None:
            self._live.update(self._task, completed=self.done)
            self._live.stop()
            self._live = None

    def _print(self, now: float) -> None:
        line = plain_line(self.what, self.done, self.total, now - self._started, self.unit)
        print(line, file=self.stream, flush=True)


def _live_bar(what: str, total: int | None, stream: TextIO) -> tuple[RichProgress, TaskID]:
    """A ``rich`` progress line on ``stream``: description, bar, count, rate, ETA."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.progress import (
        Progress as RichProgress,
    )

    columns: list[ProgressColumn] = [TextColumn("{task.description}")]
    if total:
        columns += [
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.completed:,.0f}/{task.total:,.0f}"),
        ]
    else:
        columns.append(TextColumn("{task.completed:,.0f}"))
    columns += [TextColumn("{task.fields[rate]}"), TextColumn("eta"), TimeRemainingColumn()]
    bar = RichProgress(
        *columns,
        console=Console(file=stream, force_terminal=True),
        transient=True,
        redirect_stdout=False,
    )
    task = bar.add_task(what, total=total, rate="-")
    return bar, task
