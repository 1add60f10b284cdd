"""``python -m bench latency``: the open-loop schedule (due times, late sends not skipped, the
warm-up), the consumer's receipts, the HDR histograms merged across processes, the CPU read of
other processes, the issue's targets from a run's rows, NATS's fetch of what is pending, and a
short real run of the floor and of aeromq over IPC."""

from __future__ import annotations

import json
import multiprocessing
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("hdrh")

from bench._harness import Result  # after the skip: these modules import hdrh
from bench._latency_roles import DUMP_ENV
from bench._latency_run import measure, role
from bench._latency_stats import encoded, merged, percentiles_us
from bench._latency_systems import aeromq_consumer, aeromq_producer
from bench._nats import nats_missing
from bench._proc_cpu import CpuWindow, cpu_ns
from bench._schedule import (
    BODY_LENGTH,
    PRIMED_AFTER,
    Pacer,
    Plan,
    Receipts,
    body,
    due_ns,
    warm_up_body,
)
from bench.suites import latency


def test_should_schedule_message_i_at_t0_plus_i_over_the_rate() -> None:
    assert [due_ns(1_000, i, 1_000.0) for i in range(4)] == [
        1_000,
        1_001_000,
        2_001_000,
        3_001_000,
    ]
    assert due_ns(0, 3, 3.0) == 1_000_000_000
    assert Plan(100.0, 1_000, 2.0, 30.0).warm_up_count == 200
    assert Plan(100.0, 50, 2.0, 30.0).warm_up_count == 50  # never more than the run
    assert Plan(None, 10**6, 2.0, 5.0).warm_up_count == 0


def test_should_carry_the_due_time_and_sequence_in_a_100_byte_body() -> None:
    one = body(123_456_789, 42)
    assert len(one) == BODY_LENGTH == 100
    assert int.from_bytes(one[0:8], "little") == 123_456_789
    assert int.from_bytes(one[8:16], "little") == 42
    assert int.from_bytes(warm_up_body(0)[8:16], "little", signed=True) == -1


class FakeClock:
    """A monotonic clock that moves only when the pacer sleeps or a send takes time: the
    schedule's tests check its arithmetic, not this host's scheduler (a loaded CI machine
    woke a real 2 ms sleep late enough to put a 500 msgs/s run 1% behind)."""

    def __init__(self, now_ns: int = 10**12) -> None:
        self.now_ns = now_ns
        self.sleeps_s: list[float] = []

    def __call__(self) -> int:
        return self.now_ns

    def sleep(self, seconds: float) -> None:
        self.sleeps_s.append(seconds)
        self.now_ns += round(seconds * 1e9)

    def pacer(self, plan: Plan) -> Pacer:
        return Pacer(plan, self.now_ns, clock_ns=self, sleep_s=self.sleep)

    def send(self, pacer: Pacer, duration_ns: int) -> None:
        started = self.now_ns
        self.now_ns += duration_ns
        pacer.sent(started, self.now_ns)


def test_should_keep_the_schedule_when_sends_are_quick() -> None:
    clock = FakeClock()
    pacer = clock.pacer(Plan(500.0, 50, 0.0, 30.0))
    dues = []
    while (one := pacer.next()) is not None:
        dues.append(int.from_bytes(one[0:8], "little"))
        assert clock.now_ns >= dues[-1]  # never before its time
        clock.send(pacer, 100_000)  # 0.1 ms a send, well inside the 2 ms between two
    assert dues == [pacer.t0_ns + i * 2_000_000 for i in range(50)]
    assert pacer.sequence == 50 and not pacer.gave_up
    assert not pacer.fell_behind()
    assert list(pacer.lags_ns) == [0] * 50
    assert clock.sleeps_s == [pytest.approx(0.0019)] * 49  # the first was due at once
    assert pacer.achieved_msgs_per_s() >= 0.99 * 500


def test_should_send_a_late_message_at_once_without_skipping_it() -> None:
    clock = FakeClock()
    pacer = clock.pacer(Plan(1_000.0, 40, 0.0, 30.0))
    sequences = []
    while (one := pacer.next()) is not None:
        sequences.append(int.from_bytes(one[8:16], "little"))
        clock.send(pacer, 3_000_000)  # a send of 3 ms at 1 ms a message: the schedule queues up
    assert sequences == list(range(40))  # every message, none skipped
    assert clock.sleeps_s == []  # each was due before the last send ended
    assert pacer.fell_behind()
    assert pacer.achieved_msgs_per_s() < 0.5 * 1_000
    assert pacer.lags_ns[-1] == 39 * 2_000_000  # the last started 78 ms behind its due time
    assert min(pacer.durations_ns) == 3_000_000


def test_should_give_up_when_the_run_overstays_its_time() -> None:
    clock = FakeClock()
    pacer = clock.pacer(Plan(1_000.0, 10_000, 0.0, 0.05))
    while pacer.next() is not None:
        clock.send(pacer, 5_000_000)
    assert pacer.gave_up and pacer.fell_behind()
    assert pacer.sequence == 10  # 10 sends of 5 ms fill the 50 ms given


def test_should_pace_on_the_real_clock_by_default() -> None:
    pacer = Pacer(Plan(1_000.0, 3, 0.0, 30.0), time.monotonic_ns())
    while (one := pacer.next()) is not None:
        assert time.monotonic_ns() >= int.from_bytes(one[0:8], "little")
        pacer.sent(time.monotonic_ns(), time.monotonic_ns())
    assert pacer.sequence == 3 and pacer.last_end_ns >= pacer.t0_ns + 2_000_000


def test_should_keep_each_first_receipt_and_count_duplicates() -> None:
    receipts = Receipts(4)
    receipts.take([body(1_000, 0), body(2_000, 1)], 5_000)
    receipts.take([body(2_000, 1), body(3_000, 2)], 9_000)  # 1 again: redelivered
    assert not receipts.complete(-1)  # the producer has not said how many it sent
    assert not receipts.complete(4)
    assert receipts.complete(3)
    assert (receipts.distinct, receipts.duplicates, receipts.last_ns) == (3, 1, 9_000)
    assert receipts.measured(0) == [4_000, 3_000, 6_000]
    assert receipts.measured(1) == [3_000, 6_000]  # the warm-up's messages dropped
    receipts.take([body(4_000, 3)], 9_500)
    assert receipts.complete(-1)  # the whole run came before the producer said so


def test_should_be_primed_by_warm_ups_in_a_row_in_any_order() -> None:
    receipts = Receipts(1)
    order = list(range(PRIMED_AFTER + 4))
    del order[3]  # one queue lost warm-up 3: only 4.. are in a row
    random.Random(7).shuffle(order)
    for index in order[:-1]:
        receipts.take([warm_up_body(index)], 0)
        assert not receipts.primed
    receipts.take([warm_up_body(order[-1])], 0)
    assert receipts.primed
    assert receipts.distinct == 0  # warm-ups are never measured


def test_should_merge_histograms_from_processes_into_the_percentiles_of_all_values() -> None:
    rng = random.Random(11)
    values = [int(rng.lognormvariate(11, 1.2)) + 1 for _ in range(20_000)]  # ~60 us median
    whole = percentiles_us(merged([encoded(values)]))
    halves = percentiles_us(merged([encoded(values[:7_000]), encoded(values[7_000:])]))
    assert halves == whole
    ordered = sorted(values)
    for key, q in (("p50_us", 0.5), ("p90_us", 0.9), ("p99_us", 0.99), ("p999_us", 0.999)):
        exact = ordered[int(q * len(ordered)) - 1] / 1000
        assert whole[key] == pytest.approx(exact, rel=2e-3), key
    assert whole["max_us"] == pytest.approx(max(values) / 1000, rel=1e-3)
    assert whole["samples"] == 20_000
    assert percentiles_us(merged([encoded([])])) == {"samples": 0}


def test_should_read_the_cpu_another_process_used_in_a_window() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nsys.stdin.readline()\n"
         "end = time.process_time() + 0.4\nwhile time.process_time() < end: pass\n"
         "print('spun', flush=True)\ntime.sleep(30)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as busy:  # fmt: skip
        assert busy.stdin is not None and busy.stdout is not None
        try:
            window = CpuWindow({"busy": busy.pid})
            window.start()
            busy.stdin.write("go\n")  # its 0.4 s of CPU inside the window, however slow the host
            busy.stdin.flush()
            assert busy.stdout.readline() == "spun\n"
            window.stop()
            assert 0.4e9 <= window.used_ns["busy"] < 1.5e9
            report = window.report(messages=1_000)["busy"]
            assert report["us_per_msg"] == pytest.approx(window.used_ns["busy"] / 1e6, abs=0.01)
            pct = 100.0 * window.used_ns["busy"] / window.wall_ns
            assert report["pct_core"] == pytest.approx(pct, abs=0.01) and 0 < pct <= 100
        finally:
            busy.kill()
            busy.wait()
    assert cpu_ns(busy.pid) == 0  # gone


def _rows(figures: dict[str, dict[str, float]]) -> dict[str, Result]:
    """Rows named as the suite names them, with these figures (columns or ``extra``)."""
    columns = ("msgs_per_s", "p50_us", "p99_us")
    return {
        name: Result(
            name,
            **{k: v for k, v in values.items() if k in columns},
            extra={k: v for k, v in values.items() if k not in columns},
        )
        for name, values in figures.items()
    }


def test_should_compute_the_issues_targets_from_the_rows_of_a_run() -> None:
    rows = _rows(
        {
            "aeromq:ipc:1000": {"p50_us": 120.0, "p99_us": 900.0, "cpu_total_us_per_msg": 90.0},
            "aeromq:ipc:5000": {
                "msgs_per_s": 5_001.0,
                "received_msgs_per_s": 4_990.0,
                "p50_us": 130.0,
                "p99_us": 1_200.0,
            },
            "baseline:floor:1000": {"p50_us": 100.0},
            "baseline:floor:5000": {"p50_us": 60.0},
            "baseline:redis-streams:1000": {
                "p50_us": 200.0,
                "p99_us": 800.0,
                "cpu_total_us_per_msg": 100.0,
            },
            "baseline:nats-jetstream:1000": {"p50_us": 300.0, "p99_us": 2_000.0},
            "aeromq:send-only:max": {"msgs_per_s": 19_000.0},
            "aeromq:idle-broker": {"cpu_pct_core": 1.2},
        }
    )
    got = {t.name: t for t in latency.targets(rows, (1_000, 5_000, 20_000))}
    verdicts = {name: (t.measured, t.met) for name, t in got.items()}
    assert verdicts == {
        "aeromq:ipc:1000 p50 / floor p50": (1.2, True),
        "aeromq:ipc:1000 p99": (900.0, True),
        "aeromq:ipc:1000 p50 / redis-streams p50": (0.6, True),
        "aeromq:ipc:1000 p99 / redis-streams p99": (1.125, False),
        "aeromq:ipc:1000 p50 / nats-jetstream p50": (0.4, True),
        "aeromq:ipc:1000 p99 / nats-jetstream p99": (0.45, True),
        "aeromq:ipc:5000 p50 / floor p50": (pytest.approx(130 / 60), False),
        "aeromq:ipc:5000 p99": (1_200.0, False),
        "aeromq:ipc:5000 p50 / redis-streams p50": (None, False),  # no such row: not measured
        "aeromq:ipc:5000 p99 / redis-streams p99": (None, False),
        "aeromq:ipc:5000 p50 / nats-jetstream p50": (None, False),
        "aeromq:ipc:5000 p99 / nats-jetstream p99": (None, False),
        "aeromq:ipc:5000 sent and received on schedule (within 1%), msgs/s": (4_990.0, True),
        "aeromq:send-only:max send() one at a time, no consumer": (19_000.0, False),
        "aeromq:ipc:1000 CPU (broker + producer + consumer) / redis-streams'": (0.9, True),
        "aeromq:idle-broker CPU": (1.2, True),
    }
    assert got["aeromq:ipc:1000 p99"].goal == 1_000.0 and got["aeromq:ipc:1000 p99"].unit == "us"
    assert got["aeromq:idle-broker CPU"].goal == 2.0
    # 20,000 msgs/s has no target; 10 and 100 were not run: none for them either
    assert not any(":20000" in name or ":10 " in name or ":100 " in name for name in got)


def test_should_size_each_rate_for_its_samples_and_bound_it_in_time() -> None:
    full, quick = latency.Settings.of(False), latency.Settings.of(True)
    assert full.rates == (10, 100, 1_000, 5_000, 20_000)
    for rate in full.rates:
        plan = full.plan(rate)
        assert plan.count - plan.warm_up_count >= 280  # p99.9 from a few hundred at 10 msgs/s
        assert plan.count / rate <= 30 and plan.give_up_s <= 65
    assert full.plan(1_000).count - full.plan(1_000).warm_up_count >= 10_000
    assert set(quick.rates) <= set(full.rates)
    assert all(quick.plan(rate).count / rate <= 5 for rate in quick.rates)


@pytest.mark.skipif(nats_missing() is not None, reason=str(nats_missing()))
def test_should_fetch_one_held_message_when_none_is_pending_and_every_pending_one_after(
    tmp_path: Path,
) -> None:
    import asyncio

    from bench._nats import NatsServer, connect, fetch_next

    server = NatsServer(tmp_path)
    try:
        server.add_streams("held", durable="d")

        async def scenario() -> tuple[list[int], float, float]:
            client = await connect(server.url)
            try:
                stream = client.jetstream()
                subscription = await stream.pull_subscribe("held", durable="d")
                sizes = []
                for index in range(5):
                    await stream.publish("held", b"%d" % index)
                messages, pending = await fetch_next(subscription, 0, 5.0)
                sizes += [len(messages), pending]
                started = time.monotonic()
                messages, pending = await fetch_next(subscription, pending, 5.0)
                sizes += [len(messages), pending]  # every pending one, at once
                quick_s = time.monotonic() - started
                started = time.monotonic()
                messages, pending = await fetch_next(subscription, 0, 0.3)
                return [*sizes, len(messages)], quick_s, time.monotonic() - started
            finally:
                await client.close()

        sizes, quick_s, empty_s = asyncio.run(scenario())
    finally:
        server.close()
    assert sizes == [1, 4, 4, 0, 0]
    assert quick_s < 1.0  # not held until the fetch expired
    assert 0.2 < empty_s < 2.0


@pytest.mark.timeout(60)
def test_should_write_every_measured_messages_figures_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DUMP_ENV, str(tmp_path))  # (the roles are spawned: they inherit it)
    settings = latency.Settings((400,), {400: 1.0}, 0.25, 1.0, 0.1, 0.5)
    [floor] = latency._floor_rows(settings)
    assert floor.error is None, floor.error
    [consumer] = [json.loads(path.read_text()) for path in tmp_path.glob("consumer-*.json")]
    [producer] = [json.loads(path.read_text()) for path in tmp_path.glob("producer-*.json")]
    sent = floor.extra["sent"]
    assert sorted(consumer["sequence"]) == list(range(sent))  # each message's first receipt
    assert len(consumer["latency_ns"]) == sent and min(consumer["latency_ns"]) > 0
    measured = sent - 100  # the warm-up's 0.25 s of 400 msgs/s not among the sends
    assert len(producer["send_ns"]) == len(producer["lag_ns"]) == measured
    assert min(producer["send_ns"]) > 0


@pytest.mark.timeout(90)
def test_should_measure_the_floor_and_aeromq_over_ipc_at_one_rate(tmp_path: Path) -> None:
    from aeromq.client.grpc_client import GrpcClient

    settings = latency.Settings((400,), {400: 1.5}, 0.25, 1.0, 0.1, 0.5)
    [floor] = latency._floor_rows(settings)
    broker = latency._start_broker(tmp_path)
    try:
        admin = GrpcClient(broker.grpc_address)
        admin.create_topic("LatencySmoke")
        admin.close()
        plan = settings.plan(400)
        grpc = broker.grpc_address
        ours = measure(
            "aeromq:ipc:400",
            plan,
            {"broker": broker.pid},
            role("consumer", aeromq_consumer, grpc, "LatencySmoke", "auto"),
            role("producer", aeromq_producer, grpc, "LatencySmoke", "auto"),
        )
    finally:
        assert broker.stop() == 0
    for row, roles in (
        (floor, {"producer", "relay", "consumer"}),
        (ours, {"producer", "consumer", "broker"}),
    ):
        assert row.error is None, row.error
        extra = row.extra
        assert extra["sent"] == extra["received"] == 600 and extra["duplicates"] == 0
        assert extra["samples"] == 600 - 100  # the warm-up's 0.25 s of 400 msgs/s dropped
        assert row.p50_us is not None and row.p99_us is not None and row.p999_us is not None
        assert 0 < row.p50_us <= extra["p90_us"] <= row.p99_us <= row.p999_us <= extra["max_us"]
        assert 0 < extra["send_p50_us"] <= extra["send_p99_us"]
        assert set(extra["cpu"]) == roles
        assert extra["gc"] == "default"  # the clients' collector as a user's process has it
        assert extra["gc_stats"] == {}  # no recorder outside the suite's run
        assert all(cpu["us_per_msg"] > 0 for cpu in extra["cpu"].values())
        assert row.msgs_per_s is not None and row.msgs_per_s > 0
    assert multiprocessing.active_children() == []  # every role ended


def test_should_name_a_dead_brokers_exit_status_and_last_lines(tmp_path: Path) -> None:
    # a case that fails because its broker died reports the broker's end, not only the
    # refused connections that follow it
    broker = latency._start_broker(tmp_path)
    try:
        assert latency.broker_exit(broker) is None  # running
        broker.process.kill()
        broker.process.wait(30)
        gone = latency.broker_exit(broker)
        assert gone is not None
        assert gone.startswith("the broker exited with status -9; its last lines: ")
        assert broker.log and broker.log[-1] in gone  # (its ready line, at least)
    finally:
        broker.stop()
