"""Local reads (``pipeline/_local_reads.py``): the queue reader reads its pulls' batches from the
broker's commit log files when it shares the broker's host, and reads exactly what a read
through the transport reads; a file it cannot read (gone, or not the broker's) sends it back to
the transport for the rest of the read, and a replaced file is mapped anew."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess
from aeromq.client import MessageQueue, RouteResolver
from aeromq.common import encode_batch, patch_batch
from aeromq.pipeline._local_reads import CommitLogFiles, commit_log_files
from aeromq.pipeline._reader_sessions import reader_sessions
from tests.pipeline.test_queue_reader import _fill, _read

_TOPIC = "LocalReadsTopic"


def _files_of(broker: ServerProcess) -> CommitLogFiles:
    """This process's mappings of ``broker``'s commit log (after a read opened a session)."""
    session = reader_sessions().open_session(broker.name)
    assert session is not None and session.local_read_dir  # granted: an IPC session
    with RouteResolver(broker.grpc_address) as resolver:
        broker_id = resolver.route(_TOPIC).broker(broker.name).broker_id
    files = commit_log_files(
        session.local_read_dir,
        session.local_read_file_bytes,
        session.local_read_dir_id,
        broker_id,
    )
    assert files is not None
    return files


@pytest.fixture(scope="module")
def filled(broker: ServerProcess) -> str:
    _fill(broker, _TOPIC, batches=40, per_batch=50, body_length=300)
    return _TOPIC


def test_should_read_the_broker_files_exactly_as_the_transport_carries_them(
    broker: ServerProcess, filled: str
) -> None:
    through = _read(broker, filled, 3, 1990, local_reads=False)
    files = _files_of(broker)
    read_before = files.answers_read
    local = _read(broker, filled, 3, 1990)
    assert files.answers_read > read_before and files.mapped_count >= 1
    assert local.schema == through.schema
    assert local.to_pylist() == through.to_pylist()  # every column of every row
    assert local.column("queueOffset").to_pylist() == list(range(3, 1990))


def test_should_read_a_stored_batch_longer_than_the_narrow_channel_takes_on_it(
    broker: ServerProcess,
) -> None:
    _fill(broker, "LocalReadsWide", batches=2, per_batch=3, body_length=800_000)
    reader_sessions().close()
    table = _read(broker, "LocalReadsWide", 1, 6)
    assert [bytes(b).rstrip(b".") for b in table.column("body").to_pylist()] == [
        str(n).encode() for n in range(1, 6)
    ]
    assert reader_sessions().open_session(broker.name, wide=True) is None  # not needed


def test_should_not_read_the_files_when_told_not_to(broker: ServerProcess, filled: str) -> None:
    _read(broker, filled, 0, 10)
    files = _files_of(broker)
    read_before = files.answers_read
    assert len(_read(broker, filled, 0, 2000, local_reads=False)) == 2000
    assert files.answers_read == read_before


def test_should_read_on_through_the_transport_when_a_file_is_gone(
    broker: ServerProcess, filled: str
) -> None:
    _read(broker, filled, 0, 10)
    files = _files_of(broker)
    directory = Path(files.directory)
    names = sorted(p.name for p in directory.iterdir() if p.name.isdigit())
    fallbacks, read_before = files.fallbacks, files.answers_read
    for name in names:  # out of the reader's sight; the broker keeps its own mappings
        os.rename(directory / name, directory / f"{name}.aside")
    try:
        table = _read(broker, filled, 0, 2000)
    finally:
        for name in names:
            os.rename(directory / f"{name}.aside", directory / name)
    assert table.column("queueOffset").to_pylist() == list(range(2000))
    assert files.fallbacks == fallbacks + 1  # once: the rest of the read went by the transport
    assert files.answers_read == read_before
    assert files.usable  # the directory is still the broker's: the next read tries again
    _read(broker, filled, 0, 2000)
    assert files.answers_read > read_before


def test_should_not_use_a_directory_that_is_not_the_brokers(tmp_path: Path) -> None:
    status = os.stat(tmp_path)
    assert commit_log_files(str(tmp_path), 4096, (status.st_dev, status.st_ino)) is not None
    assert commit_log_files(str(tmp_path), 8192, (status.st_dev, status.st_ino + 1)) is None
    assert commit_log_files(str(tmp_path / "none"), 4096, (status.st_dev, 1)) is None
    assert commit_log_files("", 4096, (0, 0)) is None  # not granted


def _file_with(directory: Path, body: bytes) -> bytes:
    """A commit log file at offset 0 of 64 KiB holding one batch of 3 ``body``s at position
    128; its range."""
    batch = encode_batch(b"T", [body] * 3)
    patch_batch(batch, 0, 0, 128, 1, b"\x7f\x00\x00\x01" + b"\x00" * 4, 0)
    content = bytearray(64 * 1024)
    content[128 : 128 + len(batch)] = batch
    temporary = directory / "next"
    temporary.write_bytes(bytes(content))
    os.replace(temporary, directory / f"{0:020d}")  # a new file (inode) in the old one's place
    return (128).to_bytes(8, "little") + len(batch).to_bytes(8, "little")


def test_should_map_a_replaced_file_anew(tmp_path: Path) -> None:
    files = CommitLogFiles(str(tmp_path), 64 * 1024)
    queue = MessageQueue("T", "broker-a", 0)
    ranges = _file_with(tmp_path, b"first")
    first = files.read(ranges, queue, 0, 3)
    assert first is not None and first.body_array().to_pylist() == [b"first"] * 3
    ranges = _file_with(tmp_path, b"again")
    again = files.read(ranges, queue, 0, 3)
    assert again is not None and again.body_array().to_pylist() == [b"again"] * 3
    assert first.body_array().to_pylist() == [b"first"] * 3  # the old mapping, still held
    os.unlink(tmp_path / f"{0:020d}")
    assert files.read(ranges, queue, 0, 3) is None and files.fallbacks == 1


def test_should_refuse_batches_that_are_not_where_the_ranges_say(tmp_path: Path) -> None:
    files = CommitLogFiles(str(tmp_path), 64 * 1024)
    ranges = _file_with(tmp_path, b"body")
    shifted = (130).to_bytes(8, "little") + ranges[8:]
    assert files.read(shifted, MessageQueue("T", "broker-a", 0), 0, 3) is None
    assert files.read(ranges, MessageQueue("T", "broker-a", 1), 0, 3) is None  # another queue
    assert files.read(ranges[:-3], MessageQueue("T", "broker-a", 0), 0, 3) is None  # not pairs
    assert files.fallbacks == 3
