"""Where a message's microseconds go: timestamps at each hop of its path, in every process
(``python -m bench hops``).

Off unless ``AEROMQ_HOPS_DIR`` names a directory. With ``bench/_hop_site`` on ``PYTHONPATH``
(its ``sitecustomize`` calls :func:`install`), every Python process started with that
environment, the broker's too, wraps the methods at the hops of a message's path with a
recorder, and writes what it recorded to ``<pid>.hops`` in that directory at exit (or on
``SIGUSR1``). Nothing is wrapped otherwise: the hot path carries no tracing by default.

Each event is ``(monotonic ns, event, thread, count, thread CPU ns)``, from
``time.monotonic_ns()`` (``CLOCK_MONOTONIC``, one clock across the processes of a host) and
``time.thread_time_ns()``. The events, by process:

- producer: ``send_call`` / ``send_return`` (``Producer.send``, whichever path it takes:
  the straight one-message send of ``producer/_one_send.py`` or the general one), ``offer`` (a request
  about to be offered on the broker's ingress, then the broker rung), ``answer_read`` (an
  answer dispatched by protobuf: not a stored send's);
- broker: ``request`` (a request polled from the ingress), ``send_start`` / ``send_end``
  (the send processor; ``stored`` between, when the store's arrival released held pulls),
  ``pull`` (a pull served or held), ``hold`` (a pull held), ``answer`` (answers offered: a
  cycle's completions, or a pull's at once), ``queued`` (a cycle's completions offered);
- consumer: ``answer_read`` (a pull's answer read: a ``PulledAnswer`` made, or by protobuf),
  ``pulled`` (a pull's messages, count = how many), ``cached``,
  ``offer`` (its next pull), ``taken`` (``poll``'s take from the cache), ``polled``
  (``poll()`` returns, count = how many);
- any: ``sleep`` / ``woken`` / ``timeout`` around a doorbell wait, ``ring`` (a ring that
  woke a sleeper).

:func:`chains` follows each message from its ``send_call`` through the broker to the ``poll()``
that returned it, each step the first event of its kind after the one before; :func:`steps`
gives the CPU and wall time between consecutive events of one thread; :func:`beside` times the
steps off that path (:data:`BESIDE`: the send's answer) against it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import os
import signal
import statistics
import threading
import time
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench import _round_trace

__all__ = ["BESIDE", "CHAIN", "Event", "Hop", "beside", "chains", "install", "load", "steps"]

HOPS_DIR_ENV: Final = "AEROMQ_HOPS_DIR"

CHAIN: Final = (
    ("producer", "send_call", "send() called"),
    ("producer", "offer", "the send encoded, offered on the ingress (the broker rung after)"),
    ("broker", "request", "the session agent polled it"),
    ("broker", "send_start", "the send processor started"),
    ("broker", "stored", "stored: the held pull released"),
    (
        "broker",
        "answer",
        "the pull's answer offered (its consumer rung: at once, if a send's cycle)",
    ),
    ("consumer", "answer_read", "the consumer read the answer"),
    ("consumer", "pulled", "the pulled batch read into messages"),
    ("consumer", "cached", "the messages cached for poll()"),
    ("consumer", "polled", "poll() returned them"),
)
"""The steps of one message (role, event, what happened): :func:`chains` follows them."""

BESIDE: Final = (
    ("broker", "send_end", 4, "the send's answer made (and queued)"),
    (
        "broker",
        "queued",
        4,
        "the cycle's queued answers offered (the send's; its producer rung after)",
    ),
)
"""Steps beside the chain (role, event, the index in :data:`CHAIN` of the step they follow,
what happened): not on the message's way to ``poll()``, but timed against it
(:func:`beside`): the send's answer, which the broker offers after a pull's answered at once."""


@dataclass(frozen=True, slots=True)
class Event:
    """One recorded event (see module)."""

    t_ns: int
    name: str
    thread: str
    count: int
    cpu_ns: int


@dataclass(frozen=True, slots=True)
class Hop:
    """From one event to the next of the same thread: how often, and the median CPU and wall
    time between them."""

    thread: str
    start: str
    end: str
    count: int
    cpu_us: float
    wall_us: float


_EVENT_FIELDS: Final = 5
_events = array("q")
"""The events recorded so far, :data:`_EVENT_FIELDS` int64s each: time, the event's label id,
the thread's label id, count, thread CPU time. Not a list of tuples: a tuple an event is an
object the collector tracks when it is made and that never dies, so at eight events a message a
traced process ran a young collection every 90 messages or so (628 of generation 0 and 57 of
generation 1 for 60,000 messages, 16 ms in all) that an untraced one does not run."""
_label_ids: dict[str, int] = {}
_labels: list[str] = []
_labels_lock = threading.Lock()


def _label_id(label: str) -> int:
    """The id of an event's or a thread's name in :data:`_labels` (made on first use)."""
    found = _label_ids.get(label)
    if found is None:
        with _labels_lock:
            found = _label_ids.get(label)
            if found is None:
                found = _label_ids[label] = len(_labels)
                _labels.append(label)
    return found


def _record(name: str, count: int = 0) -> None:
    # one extend, atomic under the interpreter lock: the threads' events do not interleave
    _events.extend(
        (
            time.monotonic_ns(),
            _label_id(name),
            _label_id(threading.current_thread().name),
            count,
            time.thread_time_ns(),
        )
    )


def _dump() -> None:
    directory = os.environ.get(HOPS_DIR_ENV)
    if not directory:
        return
    values = _events.tolist()
    labels = list(_labels)
    lines = [
        f"{values[i]} {labels[values[i + 1]]} {labels[values[i + 2]].replace(' ', '_')} "
        f"{values[i + 3]} {values[i + 4]}\n"
        for i in range(0, len(values) - len(values) % _EVENT_FIELDS, _EVENT_FIELDS)
    ]
    with contextlib.suppress(OSError):  # the run is over and its directory gone
        Path(directory, f"{os.getpid()}.hops").write_text("".join(lines), encoding="utf-8")


def _wrap(
    owner: type,
    method: str,
    before: Callable[..., None] | str | None = None,
    after: Callable[..., str | None] | str | None = None,
) -> None:
    """Record ``before`` (a name, or a call with the method's positional arguments that
    records) as the method starts and ``after`` (a name, or a call with its result and
    positional arguments that names one or None) as it returns."""
    original = getattr(owner, method)

    @functools.wraps(original)
    def traced(*args: object, **kwargs: object) -> object:
        if callable(before):
            before(*args)
        elif before is not None:
            _record(before)
        result = original(*args, **kwargs)
        if after is not None:
            # (positional arguments only, as ``before``: a keyword the method takes, as the
            # cache's ``take(0.0, first=False)``, is none of the namer's business)
            name = after(result, *args) if callable(after) else after
            if name:
                _record(name)
        return result

    setattr(owner, method, traced)


def _private_class(module: str, name: str) -> type:
    """A class of a package's private module, by name: a hop the tracer wraps that no public
    name reaches. The tracer is an instrument, as a profiler is, not a user of these classes,
    so it names them at run time rather than importing them (``tests/meta``'s private-import
    check covers imports); ``tests/bench/test_hops.py`` runs it, so a rename fails there."""
    found = getattr(importlib.import_module(module), name)
    assert isinstance(found, type), f"{module}.{name} is not a class"
    return found


def install() -> None:
    """Wrap the hops' methods with the recorder (see module); once, at a process's start."""
    from aeromq.broker.processor.pull import PullProcessor
    from aeromq.broker.processor.pull_hold import PullHoldService
    from aeromq.broker.processor.send import SendProcessor
    from aeromq.common import PulledAnswer
    from aeromq.consumer.consume_request_cache import ConsumeRequestCache
    from aeromq.consumer.poller import Poller
    from aeromq.consumer.pull_task import PullTask
    from aeromq.producer import Producer
    from aeromq.transport.concurrent.doorbell import FUTEX_TIMED_OUT, Doorbell

    request_sender = _private_class("aeromq.client._request_sender", "RequestSender")
    answer_dispatcher = _private_class("aeromq.client._answer_dispatch", "AnswerDispatcher")
    request_dispatch = _private_class("aeromq.broker.session._dispatch", "RequestDispatch")
    server_session = _private_class("aeromq.broker.session._session", "ServerSession")
    answer_writer = _private_class("aeromq.broker.session._answers", "AnswerWriter")
    # the public send, not a path under it: the one-message send left SendPath.send_sync
    # for a function of its own (producer/_one_send.py), and the chain lost its first step
    _wrap(Producer, "send", "send_call", "send_return")
    _wrap(request_sender, "offer", "offer")  # as it starts: the ring after may be preempted
    # a pull's answer read: in one native call into a PulledAnswer (since 2026-12-02b), or, a
    # refusal or a fragmented one, by protobuf in on_answer (a send's answer takes neither)
    _wrap(answer_dispatcher, "on_answer", "answer_read")
    _wrap(PulledAnswer, "__init__", "answer_read")
    _wrap(request_dispatch, "_on_fragment", "request")
    _wrap(SendProcessor, "process", "send_start", "send_end")
    _wrap(PullProcessor, "process", "pull")
    _wrap(PullHoldService, "on_arrival", "stored")
    _wrap(PullHoldService, "hold", "hold")
    # an answer offered at once is written out in the cycle's _send_completions (not through
    # ServerSession.send, which still takes the backlogged and vectored ones): "answer" once
    # the completions that cycle sent are offered
    _wrap(server_session, "send", "answer")
    _wrap(answer_writer, "_send_completions", after=lambda sent, *_: "answer" if sent else None)
    _wrap(answer_writer, "_send_completions", after=lambda sent, *_: "queued" if sent else None)
    # a stored send's answer offered at once, in its fragment's handler (since 2026-12-01)
    if hasattr(answer_writer, "_answer_send_at_once"):
        _wrap(
            answer_writer, "_answer_send_at_once", after=lambda done, *_: "queued" if done else None
        )
    # a pull answered in a cycle that took a send goes out at once, its consumer rung after
    # (before 2026-11-29g it went with the cycle's other completions: nothing to wrap there)
    if hasattr(answer_writer, "_answer_at_once"):
        _wrap(answer_writer, "_answer_at_once", after=lambda done, *_: "answer" if done else None)
    _wrap(ConsumeRequestCache, "put", "cached")
    _wrap(ConsumeRequestCache, "take", after=lambda got, *_: "taken" if got else None)

    # (self, state, process_queue, subscription, started_ns, result, error): the result
    _wrap(PullTask, "_on_pull", lambda *args: _pulled(args[5]))
    _wrap(Poller, "poll", after=lambda got, *_: _polled(got))
    await_ring, ring = Doorbell.await_ring, Doorbell.ring

    def traced_wait(bell: Doorbell, observed: int, timeout_ns: int) -> int:
        _record("sleep")
        result = await_ring(bell, observed, timeout_ns)
        _record("timeout" if result == FUTEX_TIMED_OUT else "woken")
        return result

    def traced_ring(bell: Doorbell) -> bool:
        woke = ring(bell)
        if woke:
            _record("ring")
        return woke

    setattr(Doorbell, "await_ring", traced_wait)  # noqa: B010  (mypy: no method assignment)
    setattr(Doorbell, "ring", traced_ring)  # noqa: B010
    if os.environ.get(_round_trace.GROUP_ENV):
        _round_trace.install(_record, _wrap, _private_class)
    atexit.register(_dump)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGUSR1, lambda *_: _dump())


def _pulled(result: object) -> None:
    """A pull's answer reached its task (``_on_pull``'s result argument; None: it failed)."""
    messages = getattr(result, "messages", None)
    _record("pulled", len(messages) if messages else 0)


def _polled(got: object) -> None:
    """``poll()`` returns ``got``."""
    _record("polled", len(got) if isinstance(got, list) else 0)


def load(directory: Path) -> dict[str, list[Event]]:
    """Every process's events in ``directory``, by role (``producer``, ``broker``, ``consumer``:
    told by the events each recorded), each in time order."""
    roles: dict[str, list[Event]] = {}
    for path in sorted(directory.glob("*.hops")):
        events = []
        for line in path.read_text(encoding="utf-8").splitlines():
            t_ns, name, thread, count, cpu_ns = line.split(" ")
            events.append(Event(int(t_ns), name, thread, int(count), int(cpu_ns)))
        names = {event.name for event in events}
        role = (
            "broker"
            if "request" in names
            else "producer"
            if "send_call" in names
            else "consumer"
            if "polled" in names
            else None
        )
        if role is not None:
            roles[role] = sorted(roles.get(role, []) + events, key=lambda e: e.t_ns)
    return roles


def chains(roles: dict[str, list[Event]], skip: int = 0) -> list[list[int]]:
    """Each message's path (:data:`CHAIN`): the times of its steps, from its ``send_call`` on
    (the first ``skip`` sends left out, the warm-up). A step is the first event of its kind
    (a ``pulled`` or ``polled`` with messages) after the step before; a message whose path
    does not complete is left out."""
    by_kind: dict[tuple[str, str], list[int]] = defaultdict(list)
    for role, events in roles.items():
        for event in events:
            if event.name in ("pulled", "polled") and not event.count:
                continue
            by_kind[(role, event.name)].append(event.t_ns)
    sends = by_kind[("producer", "send_call")][skip:]
    out = []
    for started in sends:
        path, at = [started], started
        for role, name, _ in CHAIN[1:]:
            times = by_kind[(role, name)]
            index = _first_at_or_after(times, at)
            if index is None:
                break
            at = times[index]
            path.append(at)
        if len(path) == len(CHAIN):
            out.append(path)
    return out


def beside(roles: dict[str, list[Event]], paths: list[list[int]]) -> list[list[int]]:
    """For each step of :data:`BESIDE`, its time in each of ``paths`` (from :func:`chains`):
    the first event of its kind at or after the chain's step it follows (0: none)."""
    out = []
    for role, name, index, _ in BESIDE:
        times = [event.t_ns for event in roles.get(role, []) if event.name == name]
        found = []
        for path in paths:
            at = _first_at_or_after(times, path[index])
            found.append(0 if at is None else times[at])
        out.append(found)
    return out


def _first_at_or_after(times: list[int], at: int) -> int | None:
    low, high = 0, len(times)
    while low < high:
        middle = (low + high) // 2
        if times[middle] < at:
            low = middle + 1
        else:
            high = middle
    return low if low < len(times) else None


def steps(events: Iterable[Event], least: int = 1) -> list[Hop]:
    """The hops between consecutive events of each thread seen at least ``least`` times, with
    the median CPU and wall time of each, most CPU in all first."""
    last: dict[str, Event] = {}
    pairs: dict[tuple[str, str, str], list[tuple[int, int]]] = defaultdict(list)
    for event in events:
        before = last.get(event.thread)
        if before is not None:
            key = (event.thread, before.name, event.name)
            pairs[key].append((event.cpu_ns - before.cpu_ns, event.t_ns - before.t_ns))
        last[event.thread] = event
    hops = [
        Hop(
            thread,
            start,
            end,
            len(values),
            statistics.median(cpu for cpu, _ in values) / 1e3,
            statistics.median(wall for _, wall in values) / 1e3,
        )
        for (thread, start, end), values in pairs.items()
        if len(values) >= least
    ]
    return sorted(hops, key=lambda hop: -hop.cpu_us * hop.count)
