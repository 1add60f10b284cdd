"""A UDP peer cannot fill the driver's shared memory: a SETUP asking for a log the aeron
directory's file system cannot back (here a real 24 MiB tmpfs) gets no image, the refusal is
counted (the ERRORS system counter) and written to the error log, and the driver goes on
serving; images that fit count in full in every later check (sparse logs by what they may still
take), so the free space each check sees is what is really left."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from aeromq.transport._errors import RegistrationError
from aeromq.transport.client import Aeron, AeronContext, Subscription
from aeromq.transport.cnc import CncFile
from aeromq.transport.command import ErrorCode
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.error_log_reader import read as read_error_log
from aeromq.transport.driver import MediaDriver
from aeromq.transport.driver.log_storage import check_storage, unbacked_bytes
from aeromq.transport.driver.system_counters import SystemCounter
from tests.system._tmpfs import small_tmpfs
from tests.transport.driver.support import small_context, wait_until
from tests.transport.udp.support import setup_frame
from tests.transport.udp.test_media_driver_udp import _bound_port

STREAM_ID = 10
MIB = 1 << 20


def _errors(aeron_dir: str) -> list[str]:
    cnc = CncFile.map(aeron_dir, timeout_ms=0)
    texts: list[str] = []
    try:
        read_error_log(cnc.error_log_buffer, lambda _c, _f, _l, text: texts.append(text))
    finally:
        cnc.close()
    return texts


def _send_setup(port: int, session_id: int, term_length: int) -> None:
    buffer = AtomicBuffer(bytearray(64))
    length = setup_frame(
        buffer, session_id=session_id, stream_id=STREAM_ID, term_length=term_length
    )
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.sendto(buffer.get_bytes(0, length), ("127.0.0.1", port))


def _images(subscription: Subscription) -> set[int]:
    return {image.session_id for image in subscription.images}


def test_should_refuse_a_setup_the_shared_memory_cannot_back_and_keep_serving(
    tmp_path: Path,
) -> None:
    with small_tmpfs(tmp_path / "shm", 24) as shm:
        # sparse logs, as the broker's embedded driver has them: counted by what they may take
        context = small_context(shm / "aeron", term_buffer_sparse_file=True)
        with (
            MediaDriver.launch(context) as driver,
            Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir)) as aeron,
        ):
            subscription = aeron.add_subscription("aeron:udp?endpoint=127.0.0.1:0", STREAM_ID)
            port = _bound_port(aeron, subscription.channel_status_id)
            errors = aeron.counters_reader.get_counter_value

            _send_setup(port, session_id=1, term_length=64 * MIB)  # a 192 MiB log: no room
            wait_until(
                lambda: (
                    errors(SystemCounter.ERRORS) >= 1
                    and any("insufficient usable storage" in e for e in _errors(driver.aeron_dir))
                ),
                10.0,
                "the refusal counted and in the error log",
            )

            # each 4 MiB-term log takes 12 MiB: one fits in what the tmpfs has left, not two
            _send_setup(port, session_id=2, term_length=4 * MIB)
            wait_until(lambda: _images(subscription) == {2}, 10.0, "the image that fits")
            refused = errors(SystemCounter.ERRORS)
            _send_setup(port, session_id=3, term_length=4 * MIB)
            wait_until(lambda: errors(SystemCounter.ERRORS) > refused, 10.0, "the second refusal")
            time.sleep(0.1)
            assert _images(subscription) == {2}

            _send_setup(port, session_id=4, term_length=64 * 1024)  # still serving
            wait_until(
                lambda: _images(subscription) == {2, 4}, 10.0, "a small image after the refusals"
            )


def test_should_count_what_sparse_logs_may_still_take_when_checking_room(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "shm", 8) as shm:
        for name in ("publications", "images"):
            (shm / "aeron" / name).mkdir(parents=True)
        log = shm / "aeron" / "publications" / "1.logbuffer"
        with log.open("wb") as sparse:
            sparse.truncate(6 * MIB)  # takes no block yet, but will when written
        unbacked = unbacked_bytes(str(log))
        assert unbacked == 6 * MIB
        check_storage(str(shm / "aeron" / "images"), 1 * MIB, unbacked)
        with pytest.raises(RegistrationError) as refused:
            check_storage(str(shm / "aeron" / "images"), 4 * MIB, unbacked)
        assert refused.value.code == ErrorCode.STORAGE_SPACE
        assert "unbacked_by_live_logs=6291456" in str(refused.value)
