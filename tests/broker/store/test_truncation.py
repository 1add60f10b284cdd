"""A follower's durable truncation (``truncate_to``): the log's tail zeroed, queue offsets and
producer state as the log before the point had them, the epoch file cut, the intent gone; and a
process killed (SIGKILL) after any step leaves a store that starts in the truncated state."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from aeromq.broker import BrokerStateError, InvalidArgumentError
from aeromq.broker.replication import EpochFile, read_truncate_intent, write_truncate_intent
from aeromq.broker.store import MessageStore, PutMessageResult, PutMessageStatus
from aeromq.broker.store._truncation import TRUNCATION_STEPS

from ._group import TOPIC, batch, group_config

REPO_ROOT = Path(__file__).resolve().parents[3]


class Prepared(NamedTuple):
    """A member's log: committed batch ``a``, then ``b`` and ``c`` appended as leader only."""

    data_dir: Path
    a: PutMessageResult
    b: PutMessageResult
    c: PutMessageResult

    @property
    def point(self) -> int:
        """Where the new leader's log and this one part: the end of ``b``."""
        return self.b.physical_offset + self.b.wrote_bytes


def _prepare(data_dir: Path) -> Prepared:
    with MessageStore(group_config(data_dir)) as store:
        store.start_leading()
        a = store.put_batch_async(batch([b"a"] * 3, keys="ka"), TOPIC, 0, lambda r: None)
        store.set_high_watermark(a.physical_offset + a.wrote_bytes)
        b = store.put_batch_async(batch([b"b"] * 2, sequence=0), TOPIC, 0, lambda r: None)
        c = store.put_batch_async(batch([b"c" * 5000], sequence=2), TOPIC, 0, lambda r: None)
        store.stop_leading()
    epochs = EpochFile(data_dir)
    epochs.append(1, 0)
    epochs.append(2, b.physical_offset + b.wrote_bytes)  # c's epoch: the new leader lacks it
    return Prepared(data_dir, a, b, c)


def _check_truncated(prepared: Prepared) -> None:
    """The store at ``prepared.data_dir`` holds a and b, not c, and nothing says otherwise."""
    data_dir, point = prepared.data_dir, prepared.point
    with MessageStore(group_config(data_dir)) as store:  # (a start finishes a truncation)
        assert read_truncate_intent(data_dir) is None
        assert [entry.epoch for entry in EpochFile(data_dir).entries] == [1]
        segment = (data_dir / "commitlog" / f"{0:020d}").read_bytes()
        assert not any(segment[point:]), "bytes left past the truncation point"
        assert store.max_physical_offset == point
        store.set_high_watermark(point)
        got = store.get_messages(TOPIC, 0, 0, max_count=100)
        assert [m.body for m in got.messages] == [b"a"] * 3 + [b"b"] * 2
        store.start_leading()
        answers: list[PutMessageResult] = []
        # c was never stored here now: its retry is a new batch, at c's queue offset
        retry = store.put_batch_async(batch([b"c" * 5000], sequence=2), TOPIC, 0, answers.append)
        assert retry.status is PutMessageStatus.PUT_OK and retry.queue_offset == 5
        again = store.put_batch_async(batch([b"b"] * 2, sequence=0), TOPIC, 0, answers.append)
        assert again.message_ids == prepared.b.message_ids  # b is still known


def test_should_truncate_the_log_and_what_it_derives(tmp_path: Path) -> None:
    prepared = _prepare(tmp_path / "member")
    steps: list[str] = []
    with MessageStore(group_config(prepared.data_dir)) as store:
        epochs = EpochFile(prepared.data_dir)
        dropped = store.truncate_to(prepared.point, epochs=epochs, on_step=steps.append)
        assert dropped >= prepared.c.wrote_bytes
        assert [entry.epoch for entry in epochs.entries] == [1]  # the object given, cut
        assert store.max_physical_offset == prepared.point
        assert store._counters.next_offset(TOPIC, 0) == 5
        assert len(store.producer_states) == 1
    assert steps == list(TRUNCATION_STEPS)
    _check_truncated(prepared)


def test_should_refuse_a_point_below_the_committed_offset_or_inside_a_batch(tmp_path: Path) -> None:
    prepared = _prepare(tmp_path / "member")
    with MessageStore(group_config(prepared.data_dir)) as store:
        with pytest.raises(InvalidArgumentError, match="committed"):
            store.truncate_to(prepared.a.physical_offset)
        with pytest.raises(InvalidArgumentError, match="boundary"):
            store.truncate_to(prepared.b.physical_offset + 8)
        with pytest.raises(InvalidArgumentError):
            store.truncate_to(store.max_physical_offset + 1)
        store.start_leading()
        with pytest.raises(BrokerStateError):
            store.truncate_to(prepared.point)
    assert read_truncate_intent(prepared.data_dir) is None


def test_should_finish_a_truncation_found_unfinished_at_start(tmp_path: Path) -> None:
    prepared = _prepare(tmp_path / "member")
    write_truncate_intent(prepared.data_dir, prepared.point)
    _check_truncated(prepared)


def _truncate_in_a_child(prepared: Prepared, step: str, out_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    with out_path.open("wb") as out:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.broker.store._truncate_child",
                str(prepared.data_dir),
                str(prepared.point),
                step,
            ],
            cwd=REPO_ROOT,
            stdout=out,
            env=env,
        )
    try:
        assert child.wait(60) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait(30)
    assert out_path.read_bytes().startswith(b"R")


@pytest.mark.parametrize("step", [*TRUNCATION_STEPS[:-1], "done"])
def test_should_start_truncated_after_a_kill_at_any_step(tmp_path: Path, step: str) -> None:
    prepared = _prepare(tmp_path / "member")
    began = time.monotonic()
    _truncate_in_a_child(prepared, step, tmp_path / "out")
    assert time.monotonic() - began < 60
    if step == TRUNCATION_STEPS[0]:
        assert read_truncate_intent(prepared.data_dir) == prepared.point
    _check_truncated(prepared)
