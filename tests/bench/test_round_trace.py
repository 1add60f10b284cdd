"""A broker group's commit round from every process's recorded events
(``bench/_round_trace.py``): the roles told by their events, each step the first event of its
kind after the step before, the median of each over the rounds, and whose fsync held the slow
ones."""

from __future__ import annotations

from pathlib import Path

from bench._round_trace import (
    cpu_per_round,
    cycles_per_round,
    durations,
    last_fsyncs,
    rounds,
    timeline,
)

_THREAD = "net"


def _write(directory: Path, pid: int, events: list[tuple[int, str]]) -> None:
    lines = [f"{t_us * 1000} {name} {_THREAD} 1 0\n" for t_us, name in events]
    (directory / f"{pid}.hops").write_text("".join(lines), encoding="utf-8")


def test_should_follow_each_round_from_the_leaders_send_through_both_followers(
    tmp_path: Path,
) -> None:
    leader, f1, f2, producer = [], [], [], []
    for start, slow in ((0, 0), (10_000, 100), (20_000, 200)):
        leader += [(start, "send_start"), (start + 50, "send_end"), (start + 100, "r_sent")]
        leader += [(start + 120, "snd"), (start + 130, "fsync0"), (start + 400, "fsync1")]
        leader += [(start + 900 + slow, "r_ack"), (start + 940 + slow, "ring")]
        leader += [(start + 950 + slow, "hw"), (start + 1000 + slow, "answer")]
        for events, lag in ((f1, 0), (f2, 50)):
            events += [(start + 200 + lag, "rcv"), (start + 220 + lag, "f_append")]
            events += [(start + 300 + lag, "fsync0"), (start + 800 + lag, "fsync1")]
            events += [(start + 820 + lag, "f_ack"), (start + 840 + lag, "snd")]
        producer += [(start + 1100 + slow, "settled"), (start + 1500, "offer")]
    _write(tmp_path, 1, leader)
    _write(tmp_path, 2, f2)  # the followers are told apart by their first APPEND, not the pid
    _write(tmp_path, 3, f1)
    _write(tmp_path, 4, producer)

    found = rounds(tmp_path)
    assert len(found) == 2  # a round ends where the next starts: the last is left out
    assert found[1]["high watermark moved"] == 1_050_000
    assert found[0]["f1 appended"] == 220_000 and found[0]["f2 appended"] == 270_000
    steps = {label: (at, own) for label, at, own, _ in timeline(found)}
    assert steps["f2 ACK sent"] == (890, 20)
    assert steps["high watermark moved"] == (1000, 50)
    # the sends answered on the leader's network thread, as the high watermark passes them:
    # timed from its ring of the producer, not from the hw
    assert steps["sends settled"] == (1150, 160)
    assert steps["next request offered"][0] == 1500


def test_should_time_only_the_rounds_of_the_producer_that_settled_the_most(tmp_path: Path) -> None:
    starts = [0, 1_000, 2_000, 30_000, 31_000, 40_000, 90_000]  # us; from 40 ms another phase
    _write(tmp_path, 1, [(t, name) for t in starts for name in ("send_start", "r_sent")])
    _write(tmp_path, 2, [(t + 500, "settled") for t in starts[:4]])  # the end-to-end producer
    _write(tmp_path, 3, [(40_500, "settled")])  # a later phase's

    count, median_ms, mean_ms, slow = durations(tmp_path)
    assert (count, slow) == (3, 1)  # 0-1, 1-2, 2-30 ms: the round from 30 ms is past its run
    assert median_ms == 1.0 and mean_ms == 10.0


def test_should_name_the_member_whose_fsync_ended_last_in_the_rounds_it_held() -> None:
    quick = {"high watermark moved": 2_000_000, "f1 fsync end": 1_900_000}
    leader_last = {"high watermark moved": 30_000_000, "leader fsync end": 29_000_000}
    leader_last["f1 fsync end"] = leader_last["f2 fsync end"] = 3_000_000
    follower_last = {"high watermark moved": 25_000_000, "leader fsync end": 1_000_000}
    follower_last["f1 fsync end"], follower_last["f2 fsync end"] = 2_000_000, 24_000_000
    untraced = {"high watermark moved": 21_000_000}

    counts = last_fsyncs([quick, leader_last, follower_last, untraced])

    assert counts == {"leader": 1, "f1": 0, "f2": 1, "none": 1}


def test_should_give_each_threads_cpu_a_round_within_the_producers_rounds(tmp_path: Path) -> None:
    def write(
        pid: int, events: list[tuple[int, str, str, int]]
    ) -> None:  # us, name, thread, cpu us
        lines = [f"{t * 1000} {name} {thread} 1 {cpu * 1000}\n" for t, name, thread, cpu in events]
        (tmp_path / f"{pid}.hops").write_text("".join(lines), encoding="utf-8")

    starts = (0, 1_000, 2_000, 3_000)  # three rounds
    leader = [(t, "send_start", "sessions", 10 * i) for i, t in enumerate(starts)]
    leader += [(t + 100, "r_sent", "driver", 100 * i) for i, t in enumerate(starts)]
    leader += [(9_000, "r_sent", "driver", 5_000)]  # after the producer's last round: left out
    write(1, leader)
    write(2, [(t + 500, "settled", "session", 0) for t in starts])

    count, cpu = cpu_per_round(tmp_path)
    assert count == 3
    assert cpu["leader"] == {"sessions": 10.0, "driver": 200 / 3}  # 0..30 and 0..200 us of CPU


def test_should_count_each_members_duty_cycles_and_parks_a_round(tmp_path: Path) -> None:
    def write(pid: int, events: list[tuple[int, str, int]]) -> None:  # us, name, count
        lines = [f"{t * 1000} {name} {_THREAD} {count} 0\n" for t, name, count in events]
        (tmp_path / f"{pid}.hops").write_text("".join(lines), encoding="utf-8")

    starts = (0, 1_000, 2_000)  # two rounds
    leader = [(t, "send_start", 0) for t in starts] + [(t + 10, "r_sent", 1) for t in starts]
    leader += [(t + 20, "cyc12", 300_000) for t in starts[:2]]  # a working cycle a round
    leader += [(t + 30, "cyc0", 40_000) for t in starts[:2]]  # then an empty one
    leader += [(t + 40, "park", 25_000) for t in starts[:2]]
    leader += [(45, "unsent", 100), (1_040, "park", 25_000)]  # one park with bytes unsent
    leader += [(t + 50, "unpark", 2) for t in starts[:2]] + [(1_060, "unpark", 1)]
    leader += [(2_500, "cyc0", 10_000)]  # after the producer's last round: left out
    write(1, leader)
    write(2, [(t + 500, "settled", 0) for t in starts])
    follower = [(t + 15, "f_append", 0) for t in starts[:2]]
    follower += [(t + 16, "cyc6", 200_000) for t in starts[:2]]
    write(3, follower)

    count, cycles = cycles_per_round(tmp_path)

    assert count == 2
    leader_cycles = cycles["leader"]
    assert (leader_cycles["cycles"], leader_cycles["empty"]) == (2.0, 1.0)
    assert (leader_cycles["parks"], leader_cycles["unsent"]) == (1.5, 0.5)
    assert (leader_cycles["by_socket"], leader_cycles["by_wake"]) == (1.0, 0.5)
    assert leader_cycles["cycle_cpu_us"] == 340.0
    assert (leader_cycles["empty_us"], leader_cycles["working_us"]) == (40.0, 300.0)
    assert cycles["f1"]["cycles"] == 1.0 and cycles["f1"]["empty"] == 0.0
