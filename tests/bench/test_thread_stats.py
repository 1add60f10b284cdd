"""Each thread's CPU and wake-ups from ``/proc`` (``bench/_thread_stats.py``), summed by name
over a run, a message at a time."""

from __future__ import annotations

import os
import threading

from bench._thread_stats import ThreadCost, costs, sample


def test_should_read_every_thread_of_this_process_by_its_kernel_name() -> None:
    started = threading.Event()
    stop = threading.Event()

    def sleeper() -> None:
        started.set()
        stop.wait(10)

    thread = threading.Thread(target=sleeper)
    thread.start()
    try:
        assert started.wait(10)
        threads = sample(os.getpid())
    finally:
        stop.set()
        thread.join(10)
    assert threading.get_native_id() in threads
    assert thread.native_id in threads
    name, cpu_ns, switches = threads[threading.get_native_id()]
    assert name and cpu_ns > 0 and switches >= 0


def test_should_sum_threads_of_one_name_a_message_and_count_new_threads_from_zero() -> None:
    before = {1: ("agent", 1_000_000, 10), 2: ("poller", 0, 0), 3: ("poller", 5_000, 3)}
    after = {
        1: ("agent", 3_000_000, 30),
        2: ("poller", 100_000, 2),
        3: ("poller", 105_000, 5),
        4: ("late", 50_000, 1),  # started during the run
    }
    assert costs(before, after, 10) == [
        ThreadCost("agent", 200.0, 2.0),
        ThreadCost("poller", 20.0, 0.4),
        ThreadCost("late", 5.0, 0.1),
    ]
