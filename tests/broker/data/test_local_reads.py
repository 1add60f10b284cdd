"""Local reads against a broker process: an IPC session that asks is told where the commit log
is, and a pull that asks is answered with where its batches are in it; they are the very bytes
an ordinary pull carries. UDP sessions, sessions that do not ask, SQL92 pulls and a broker with
local reads off get the batches themselves."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client.grpc_client import GrpcClient
from aeromq.client.session import ClientSession
from aeromq.common import PullAnswer
from aeromq.proto import messages_pb2
from tests.broker.observability._scrape import scrape, value

from ._system import _session
from .conftest import pull_request, send_request

TOPIC = "local"
SEGMENT_BYTES = 64 * 1024  # small files: the batches of one answer lie in two of them


def _start(data: Path, *extra: str) -> ServerProcess:
    """A broker process (UDP ingress on a free port, ``extra`` arguments) with topic ``TOPIC``
    of one queue."""
    process = start_broker_process(
        data,
        extra_args=["--ingress-udp-endpoint", "127.0.0.1:0", "--index-enabled", "false",
                    "--log-level", "WARNING", *extra],
    )  # fmt: skip
    try:
        with GrpcClient(process.grpc_address, timeout_s=30) as admin:
            admin.create_topic(TOPIC, read_queue_nums=1, write_queue_nums=1)
    except BaseException:
        process.stop()
        raise
    return process


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A broker process with 64 KiB commit log files, 600 messages of 300 B in queue 0 (sends
    of 20: about 6 KiB a batch, so a file holds 10 batches and a 1 MiB pull spans files)."""
    data = tmp_path_factory.mktemp("local-reads") / "data"
    process = _start(
        data, "--commit-log-segment-bytes", str(SEGMENT_BYTES), "--max-message-size", "16384"
    )
    try:
        with _Connected(process, "ipc") as session:
            for first in range(0, 600, 20):
                bodies = [b"%06d" % i + b"." * 294 for i in range(first, first + 20)]
                assert session.request(send_request(*bodies, topic=TOPIC), 10_000).status.code == 0
        yield process
    finally:
        assert process.stop() == 0


class _Connected:
    """A session with ``broker`` over IPC or UDP (``tests/broker/data/_system.py``), asking for
    local reads unless told not to; closed with its client and driver."""

    def __init__(self, broker: ServerProcess, transport: str, *, local_reads: bool = True):
        self._driver, self._aeron, self.session = _session(
            broker.ready, transport, local_reads=local_reads
        )

    def __enter__(self) -> ClientSession:
        return self.session

    def __exit__(self, *exc: object) -> None:
        self.session.close()
        self._aeron.close()
        if self._driver is not None:
            self._driver.close()


def _pull(session: ClientSession, offset: int, **fields: Any) -> PullAnswer:
    answer = session.request(
        pull_request(offset=offset, topic=TOPIC, max_msg_nums=8192, **fields), 10_000
    )
    assert isinstance(answer, PullAnswer)
    assert answer.pull_status == messages_pb2.FOUND, answer
    return answer


def _read_ranges(directory: str, file_bytes: int, ranges: bytes) -> bytes:
    """The bytes at ``ranges`` of the commit log's files, back to back."""
    out = []
    for position, length in np.frombuffer(ranges, "<i8").reshape(-1, 2).tolist():
        base = position - position % file_bytes
        with open(os.path.join(directory, f"{base:020d}"), "rb") as file:
            file.seek(position - base)
            out.append(file.read(length))
    return b"".join(out)


def test_should_tell_an_ipc_session_that_asks_where_the_commit_log_is(
    broker: ServerProcess,
) -> None:
    with _Connected(broker, "ipc") as session:
        directory = Path(broker.data_dir, "commitlog").resolve()
        assert session.local_read_dir == str(directory)
        assert session.local_read_file_bytes == SEGMENT_BYTES
        status = os.stat(directory)
        assert session.local_read_dir_id == (status.st_dev, status.st_ino)


def test_should_answer_a_pull_that_asks_with_where_its_batches_are(broker: ServerProcess) -> None:
    local_before = value(scrape(broker.ready["metrics"]), "aeromq_pulls_local_total")
    answers = 0
    with _Connected(broker, "ipc") as session, _Connected(broker, "ipc") as plain:
        offset = 0
        files = set()
        while offset < 600:
            answers += 1
            local = _pull(session, offset, local_read=True)
            carried = _pull(plain, offset)  # the same pull, without asking
            assert local.batches == b"" and local.local_ranges
            assert carried.local_ranges == b""
            assert local.next_begin_offset == carried.next_begin_offset
            ranges = np.frombuffer(local.local_ranges, "<i8").reshape(-1, 2)
            files.update((ranges[:, 0] // SEGMENT_BYTES).tolist())
            read = _read_ranges(session.local_read_dir, SEGMENT_BYTES, local.local_ranges)
            assert read == carried.batches
            offset = local.next_begin_offset
        assert len(files) > 2  # the answers spanned files
    local = value(scrape(broker.ready["metrics"]), "aeromq_pulls_local_total")
    assert local == local_before + answers  # counted by the broker's /metrics


@pytest.mark.parametrize(
    ("transport", "asks"), [("udp", True), ("ipc", False)], ids=["udp", "ipc-not-asking"]
)
def test_should_send_the_batches_to_sessions_not_granted_local_reads(
    broker: ServerProcess, transport: str, asks: bool
) -> None:
    with _Connected(broker, transport, local_reads=asks) as session:
        assert session.local_read_dir == "" and session.local_read_file_bytes == 0
        answer = _pull(session, 0, local_read=True)
        assert answer.local_ranges == b"" and len(answer.batches) > 0


def test_should_send_the_batches_to_a_sql92_pull_that_asks(broker: ServerProcess) -> None:
    with _Connected(broker, "ipc") as session:
        answer = _pull(
            session,
            0,
            local_read=True,
            expression_type=messages_pb2.SQL92,
            sub_expression="TRUE",
        )
        assert answer.local_ranges == b"" and len(answer.batches) > 0


def test_should_grant_no_local_reads_when_the_broker_has_them_off(tmp_path: Path) -> None:
    process = _start(tmp_path / "data", "--local-reads-enabled", "false")
    try:
        with _Connected(process, "ipc") as session:
            assert session.local_read_dir == ""
            assert session.request(send_request(b"x", topic=TOPIC), 10_000).status.code == 0
            answer = _pull(session, 0, local_read=True)
            assert answer.local_ranges == b"" and len(answer.batches) > 0
    finally:
        assert process.stop() == 0
