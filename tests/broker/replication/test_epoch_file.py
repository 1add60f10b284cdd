"""The epoch file: its lines, the lookups of the truncation handshake, the truncation intent,
typed errors for corrupt files, and that a failure or a crash at any step of a change leaves
the old list or the new one."""

from __future__ import annotations

import errno
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker import InvalidArgumentError
from aeromq.broker.replication import (
    EPOCH_FILE_NAME,
    TRUNCATE_INTENT_FILE_NAME,
    CorruptEpochFileError,
    EpochEntry,
    EpochFile,
    EpochFileError,
    ReplicationError,
    clear_truncate_intent,
    read_truncate_intent,
    write_truncate_intent,
)
from aeromq.broker.replication._durable_file import REMOVE_STEPS, REPLACE_STEPS
from tests._fork_server import ForkServer

OLD = [EpochEntry(1, 0), EpochEntry(3, 200), EpochEntry(5, 500)]


def _epochs(data_dir: Path, entries: list[EpochEntry] = OLD) -> EpochFile:
    epochs = EpochFile(data_dir)
    for epoch, start in entries:
        epochs.append(epoch, start)
    return epochs


def test_should_start_empty_without_a_file(tmp_path: Path) -> None:
    epochs = EpochFile(tmp_path)

    assert (epochs.entries, epochs.last) == ((), None)
    assert epochs.end_offset_of(4, leo=900) == 900
    assert epochs.largest_at_most(4) is None


def test_should_write_one_line_per_epoch_and_read_it_back(tmp_path: Path) -> None:
    _epochs(tmp_path)

    reopened = EpochFile(tmp_path)

    assert (tmp_path / EPOCH_FILE_NAME).read_text() == "1 0\n3 200\n5 500\n"
    assert list(reopened.entries) == OLD
    assert reopened.last == EpochEntry(5, 500)


def test_should_let_two_epochs_start_at_the_same_offset(tmp_path: Path) -> None:
    epochs = _epochs(tmp_path, [EpochEntry(1, 0), EpochEntry(2, 0)])  # epoch 1 wrote nothing

    assert EpochFile(tmp_path).entries == epochs.entries


@pytest.mark.parametrize(
    ("epoch", "start", "match"),
    [(5, 600, "last_epoch=5"), (4, 600, "last_epoch=5"), (6, 499, "last_start_offset=500")],
)
def test_should_refuse_an_epoch_that_does_not_follow_the_last(
    tmp_path: Path, epoch: int, start: int, match: str
) -> None:
    epochs = _epochs(tmp_path)

    with pytest.raises(InvalidArgumentError, match=match):
        epochs.append(epoch, start)
    with pytest.raises(InvalidArgumentError, match="must not be negative"):
        EpochFile(tmp_path / "other").append(-1, 0)
    assert list(EpochFile(tmp_path).entries) == OLD


def test_should_drop_the_epochs_that_start_at_or_past_a_truncation(tmp_path: Path) -> None:
    epochs = _epochs(tmp_path)

    dropped = epochs.truncate_from(200)

    assert dropped == (EpochEntry(3, 200), EpochEntry(5, 500))
    assert list(EpochFile(tmp_path).entries) == [EpochEntry(1, 0)]
    assert epochs.truncate_from(200) == ()


@pytest.mark.parametrize(
    ("epoch", "largest", "end"),
    [
        (0, None, 0),  # below every epoch: nothing of it here, the log's bytes start at 0
        (1, EpochEntry(1, 0), 200),
        (2, EpochEntry(1, 0), 200),  # skipped here: the end of the newest epoch below it
        (3, EpochEntry(3, 200), 500),
        (4, EpochEntry(3, 200), 500),
        (5, EpochEntry(5, 500), 800),  # the last epoch ends at the LEO
        (9, EpochEntry(5, 500), 800),
    ],
)
def test_should_look_up_epochs_for_the_handshake(
    tmp_path: Path, epoch: int, largest: EpochEntry | None, end: int
) -> None:
    epochs = _epochs(tmp_path)

    assert epochs.largest_at_most(epoch) == largest
    assert epochs.end_offset_of(epoch, leo=800) == end


def test_should_find_the_truncation_point_as_kip_279_does(tmp_path: Path) -> None:
    leader = _epochs(tmp_path / "leader", [EpochEntry(1, 0), EpochEntry(2, 300)])
    leader_leo = 900
    follower = _epochs(tmp_path / "follower", [EpochEntry(1, 0), EpochEntry(3, 500)])
    follower_leo = 650  # epoch 3 was never committed: the follower led it alone, then died

    # The follower asks about its last epoch (3); the leader has 2 at most: (2, its LEO).
    asked = follower.last
    assert asked is not None
    answer = leader.largest_at_most(asked.epoch)
    assert answer == EpochEntry(2, 300)
    first = follower.truncation_point(2, leader.end_offset_of(2, leader_leo), follower_leo)
    # The follower has no epoch 2: it asks again with its largest epoch at most 2, epoch 1.
    again = follower.largest_at_most(2)
    assert first is None and again == EpochEntry(1, 0)
    point = follower.truncation_point(1, leader.end_offset_of(1, leader_leo), follower_leo)

    assert point == 300  # epoch 1 ends at 300 on the leader, 500 here: keep the common part


def test_should_not_truncate_a_follower_that_is_a_prefix_of_the_leader(tmp_path: Path) -> None:
    follower = _epochs(tmp_path, [EpochEntry(1, 0), EpochEntry(2, 300)])

    assert follower.truncation_point(2, leader_end_offset=1000, leo=700) == 700


def test_should_remove_a_temporary_file_an_interrupted_rewrite_left(tmp_path: Path) -> None:
    _epochs(tmp_path)
    stale = tmp_path / (EPOCH_FILE_NAME + ".tmp")
    stale.write_bytes(b"7 7")  # torn

    assert list(EpochFile(tmp_path).entries) == OLD
    assert not stale.exists()


@pytest.mark.parametrize(
    ("content", "line_number", "problem"),
    [
        ("1 0\nx 5\n", 2, "not '<epoch> <start_offset>'"),
        ("1 0\n3 200 9\n", 2, "not '<epoch> <start_offset>'"),
        ("1 0\n\n3 200\n", 2, "not '<epoch> <start_offset>'"),
        ("-1 0\n", 1, "not '<epoch> <start_offset>'"),
        ("1 0\n3 200\n3 300\n", 3, "epoch not above"),
        ("1 0\n3 200\n2 300\n", 3, "epoch not above"),
        ("1 0\n3 200\n4 100\n", 3, "start offset below"),
        ("1 0\n3 2\x000\n", 2, "not '<epoch> <start_offset>'"),
    ],
)
def test_should_name_the_file_and_line_of_a_corrupt_epoch_file(
    tmp_path: Path, content: str, line_number: int, problem: str
) -> None:
    (tmp_path / EPOCH_FILE_NAME).write_text(content)

    with pytest.raises(CorruptEpochFileError, match=problem) as caught:
        EpochFile(tmp_path)

    error = caught.value
    assert isinstance(error, EpochFileError) and isinstance(error, ReplicationError)
    assert error.path == str(tmp_path / EPOCH_FILE_NAME)  # type: ignore[attr-defined]
    assert error.line_number == line_number  # type: ignore[attr-defined]
    assert f"line_number={line_number}" in str(error)


def test_should_accept_a_last_line_without_its_newline(tmp_path: Path) -> None:
    (tmp_path / EPOCH_FILE_NAME).write_text("1 0\n3 200")

    assert EpochFile(tmp_path).entries == (EpochEntry(1, 0), EpochEntry(3, 200))


def test_should_write_read_and_clear_the_truncation_intent(tmp_path: Path) -> None:
    assert read_truncate_intent(tmp_path) is None

    write_truncate_intent(tmp_path, 4096)
    written = read_truncate_intent(tmp_path)
    clear_truncate_intent(tmp_path)

    assert written == 4096
    assert read_truncate_intent(tmp_path) is None
    clear_truncate_intent(tmp_path)  # nothing to clear: fine


@pytest.mark.parametrize("content", ["", "12x\n", "-4\n", "1 2\n"])
def test_should_refuse_a_corrupt_truncation_intent(tmp_path: Path, content: str) -> None:
    (tmp_path / TRUNCATE_INTENT_FILE_NAME).write_text(content)

    with pytest.raises(CorruptEpochFileError, match=TRUNCATE_INTENT_FILE_NAME):
        read_truncate_intent(tmp_path)


class _FailAt:
    """A step hook that fails like the disk (EIO) at one step."""

    def __init__(self, step: str) -> None:
        self.step = step

    def __call__(self, step: str) -> None:
        if step == self.step:
            raise OSError(errno.EIO, "injected I/O error")


@pytest.mark.parametrize("step", REPLACE_STEPS)
def test_should_keep_the_old_or_the_new_list_when_a_step_fails(tmp_path: Path, step: str) -> None:
    _epochs(tmp_path)
    epochs = EpochFile(tmp_path, on_step=_FailAt(step))

    with pytest.raises(EpochFileError, match="injected I/O error") as caught:
        epochs.append(7, 700)

    on_disk = list(EpochFile(tmp_path).entries)
    assert caught.value.path == str(tmp_path / EPOCH_FILE_NAME)  # type: ignore[attr-defined]
    assert on_disk in (OLD, [*OLD, EpochEntry(7, 700)])
    assert list(epochs.entries) == on_disk  # memory follows the file
    assert on_disk == (OLD if step in REPLACE_STEPS[:3] else [*OLD, EpochEntry(7, 700)])
    assert not (tmp_path / (EPOCH_FILE_NAME + ".tmp")).exists()


_CHILD = "tests.broker.replication._epoch_crash_child"


@pytest.fixture(scope="module")
def children() -> Iterator[ForkServer]:
    """The crash children fork from one server: no interpreter start-up and imports each."""
    with ForkServer(_CHILD) as server:
        yield server


def _crash(children: ForkServer, data_dir: Path, change: str, step: str) -> int:
    return children.start(_CHILD, [str(data_dir), change, step]).wait()


@pytest.mark.parametrize(
    ("change", "new"),
    [("append", [*OLD, EpochEntry(7, 700)]), ("truncate", OLD[:2])],  # truncate from 300
)
@pytest.mark.parametrize("step", REPLACE_STEPS)
def test_should_hold_the_old_or_new_list_after_a_crash(
    children: ForkServer, tmp_path: Path, change: str, new: list[EpochEntry], step: str
) -> None:
    _epochs(tmp_path)

    code = _crash(children, tmp_path, change, step)

    assert code == -signal.SIGKILL
    before_rename = step in REPLACE_STEPS[:3]
    assert list(EpochFile(tmp_path).entries) == (OLD if before_rename else new)


@pytest.mark.parametrize("step", REPLACE_STEPS)
def test_should_hold_no_intent_or_a_whole_one_after_a_crash_writing_it(
    children: ForkServer, tmp_path: Path, step: str
) -> None:
    code = _crash(children, tmp_path, "write-intent", step)

    assert code == -signal.SIGKILL
    assert read_truncate_intent(tmp_path) == (None if step in REPLACE_STEPS[:3] else 300)


@pytest.mark.parametrize("step", REMOVE_STEPS)
def test_should_hold_the_intent_or_none_after_a_crash_clearing_it(
    children: ForkServer, tmp_path: Path, step: str
) -> None:
    write_truncate_intent(tmp_path, 300)

    code = _crash(children, tmp_path, "clear-intent", step)

    assert code == -signal.SIGKILL
    assert read_truncate_intent(tmp_path) is None


def test_should_read_a_whole_list_after_kills_at_random_moments(
    children: ForkServer, tmp_path: Path
) -> None:
    rng = random.Random(20261128)
    acknowledged = 0
    data_dir = tmp_path / "epochs"
    data_dir.mkdir()
    for round_ in range(5):
        out = tmp_path / f"loop-{round_}.out"  # the child's stdout
        child = children.start(_CHILD, [str(data_dir), "loop"], out)
        deadline = time.monotonic() + 60
        while not (out.exists() and out.read_bytes().startswith(b"R\n")):
            assert time.monotonic() < deadline, "the child never got ready"
            time.sleep(0.001)
        time.sleep(rng.uniform(0.01, 0.15))
        child.kill()
        assert child.wait() == -signal.SIGKILL
        lines = out.read_bytes().split()
        acknowledged = max([acknowledged, *(int(w) for w in lines if w.isdigit())])

        entries = EpochFile(data_dir).entries

        epochs = [entry.epoch for entry in entries]
        assert epochs == list(range(1, len(epochs) + 1))  # whole, in order, nothing lost
        assert len(epochs) >= acknowledged  # every append that returned is there
        assert [entry.start_offset for entry in entries] == [100 * e for e in epochs]
