from __future__ import annotations

import multiprocessing as mp
import os
import re
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aeromq.transport import cnc
from aeromq.transport._errors import CncFileError, ConfigurationError
from aeromq.transport.cnc import CncFile
from aeromq.transport.concurrent import AtomicBuffer, broadcast_descriptor, ring_buffer_descriptor

SMALL = {
    "to_driver_buffer_length": 64 * 1024 + ring_buffer_descriptor.TRAILER_LENGTH,
    "to_clients_buffer_length": 64 * 1024 + broadcast_descriptor.TRAILER_LENGTH,
    "counters_values_buffer_length": 16 * 1024,
    "error_log_buffer_length": 8 * 1024,
}


def _create(directory: Path, **overrides: int) -> CncFile:
    values = {"start_timestamp_ms": 1_700_000_000_123, "pid": 4242, **SMALL, **overrides}
    return CncFile.create(directory, **values)


def test_should_document_every_header_field_offset_in_the_diagram() -> None:
    assert cnc.__doc__ is not None
    labelled = [int(m) for m in re.findall(r"^\s*(\d+) \|", cnc.__doc__, flags=re.MULTILINE)]
    assert labelled == [0, 4, 8, 12, 16, 20, 24, 32, 40, 48, 52, 128]
    assert tuple(labelled) == (
        cnc.CNC_VERSION_FIELD_OFFSET,
        cnc.TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET,
        cnc.TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET,
        cnc.COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET,
        cnc.COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET,
        cnc.ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET,
        cnc.CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET,
        cnc.START_TIMESTAMP_FIELD_OFFSET,
        cnc.PID_FIELD_OFFSET,
        cnc.FILE_PAGE_SIZE_FIELD_OFFSET,
        cnc.META_DATA_FIELDS_LENGTH,
        cnc.END_OF_METADATA_OFFSET,
    )
    # aeron_cnc_metadata_t (#pragma pack(4)) and the 1.53 file page size after it.
    assert struct.calcsize("<iiiiiiqqqi") == cnc.META_DATA_FIELDS_LENGTH


def test_should_use_aerons_version_and_defaults() -> None:
    assert cnc.CNC_VERSION == 0x200
    assert cnc.semantic_version_to_string(cnc.CNC_VERSION) == "0.2.0"
    assert cnc.TO_DRIVER_BUFFER_LENGTH_DEFAULT == 1024 * 1024 + 768
    assert cnc.TO_CLIENTS_BUFFER_LENGTH_DEFAULT == 1024 * 1024 + 128
    assert cnc.COUNTERS_VALUES_BUFFER_LENGTH_DEFAULT == 1024 * 1024
    assert cnc.ERROR_LOG_BUFFER_LENGTH_DEFAULT == 1024 * 1024
    assert cnc.CLIENT_LIVENESS_TIMEOUT_NS_DEFAULT == 10 * 10**9


def test_should_compose_and_split_semantic_versions() -> None:
    version = cnc.semantic_version_compose(1, 2, 3)
    assert version == 0x010203
    assert (
        cnc.semantic_version_major(version),
        cnc.semantic_version_minor(version),
        cnc.semantic_version_patch(version),
    ) == (1, 2, 3)
    with pytest.raises(ConfigurationError, match="part='minor' value=256"):
        cnc.semantic_version_compose(0, 256, 0)


def test_should_write_aerons_header_bytes_and_page_aligned_length(shm_dir: Path) -> None:
    with _create(shm_dir, file_page_size=8192) as created:
        raw = (shm_dir / "cnc.dat").read_bytes()
        metadata = 4 * SMALL["counters_values_buffer_length"]
        assert raw[:52] == struct.pack(
            "<iiiiiiqqqi",
            0x200,
            SMALL["to_driver_buffer_length"],
            SMALL["to_clients_buffer_length"],
            metadata,
            SMALL["counters_values_buffer_length"],
            SMALL["error_log_buffer_length"],
            10 * 10**9,
            1_700_000_000_123,
            4242,
            8192,
        )
        assert raw[52:128] == bytes(76)
        total = 128 + sum(SMALL.values()) + metadata
        assert created.file_length == len(raw) == (total + 8191) // 8192 * 8192
        assert created.file_length == cnc.compute_cnc_file_length(total - 128, 8192)


def test_should_lay_out_the_regions_back_to_back(shm_dir: Path) -> None:
    with _create(shm_dir) as created:
        base = created.to_driver_buffer.address - 128
        regions = [
            created.to_driver_buffer,
            created.to_clients_buffer,
            created.counters_metadata_buffer,
            created.counters_values_buffer,
            created.error_log_buffer,
        ]
        offset = 128
        for region in regions:
            assert region.address - base == offset
            offset += region.capacity
        assert created.counters_metadata_buffer_length == 4 * SMALL["counters_values_buffer_length"]


def test_should_write_the_version_last(shm_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[tuple[str, int]] = []

    def recording(name: str) -> Callable[[AtomicBuffer, int, int], None]:
        original = getattr(AtomicBuffer, name)

        def record(self: AtomicBuffer, index: int, value: int) -> None:
            writes.append((name, index))
            original(self, index, value)

        return record

    for name in ("put_int32", "put_int64", "put_int32_ordered"):
        monkeypatch.setattr(AtomicBuffer, name, recording(name))
    _create(shm_dir).close()
    assert writes[-1] == ("put_int32_ordered", cnc.CNC_VERSION_FIELD_OFFSET)
    assert all(index != cnc.CNC_VERSION_FIELD_OFFSET for _, index in writes[:-1])
    assert len(writes) == 10


def test_should_map_what_create_wrote(shm_dir: Path) -> None:
    with _create(shm_dir, client_liveness_timeout_ns=5_000_000_000), CncFile.map(shm_dir) as mapped:
        assert mapped.cnc_version == cnc.CNC_VERSION
        assert mapped.client_liveness_timeout_ns == 5_000_000_000
        assert (mapped.start_timestamp_ms, mapped.pid, mapped.file_page_size) == (
            1_700_000_000_123,
            4242,
            4096,
        )
        assert mapped.to_driver_buffer.capacity == SMALL["to_driver_buffer_length"]
        assert mapped.error_log_buffer.capacity == SMALL["error_log_buffer_length"]
        assert "version=0.2.0, pid=4242" in repr(mapped)


def test_should_share_memory_between_creator_and_mapper(shm_dir: Path) -> None:
    with _create(shm_dir) as created, CncFile.map(shm_dir) as mapped:
        trailer = created.to_driver_buffer.capacity - 768  # the ring buffer's trailer
        created.to_driver_buffer.put_int64_ordered(trailer + 640, 777)  # consumer heartbeat
        assert mapped.driver_heartbeat_ms() == 777
        mapped.counters_values_buffer.put_int64(128, -9)
        assert created.counters_values_buffer.get_int64(128) == -9


def test_should_time_out_when_no_file_appears(shm_dir: Path) -> None:
    started = time.monotonic()
    with pytest.raises(CncFileError, match=r"cnc.dat not ready: .* timeout_ms=50 reason='no file'"):
        CncFile.map(shm_dir, timeout_ms=50)
    assert time.monotonic() - started < 5


def test_should_time_out_when_the_version_is_never_set(shm_dir: Path) -> None:
    (shm_dir / "cnc.dat").write_bytes(bytes(4096))
    with pytest.raises(CncFileError, match="reason='version never set'"):
        CncFile.map(shm_dir, timeout_ms=30)


def test_should_refuse_another_major_version_naming_both(shm_dir: Path) -> None:
    _create(shm_dir).close()
    with (shm_dir / "cnc.dat").open("r+b") as file:
        file.write(struct.pack("<i", cnc.semantic_version_compose(1, 0, 0)))
    with pytest.raises(CncFileError, match=re.escape("app_version='0.2.0' file_version='1.0.0'")):
        CncFile.map(shm_dir, timeout_ms=100)


def test_should_accept_another_minor_version(shm_dir: Path) -> None:
    _create(shm_dir).close()
    with (shm_dir / "cnc.dat").open("r+b") as file:
        file.write(struct.pack("<i", cnc.semantic_version_compose(0, 3, 1)))
    with CncFile.map(shm_dir, timeout_ms=100) as mapped:
        assert mapped.cnc_version == 0x301


def test_should_refuse_a_file_shorter_than_its_header_says(shm_dir: Path) -> None:
    _create(shm_dir).close()
    path = shm_dir / "cnc.dat"
    path.write_bytes(path.read_bytes()[: 128 + SMALL["to_driver_buffer_length"]])
    with pytest.raises(CncFileError, match=r"shorter than its header says: .*file_length=66432"):
        CncFile.map(shm_dir, timeout_ms=100)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"to_driver_buffer_length": 65536}, "ring buffer capacity must be a power of two plus"),
        ({"to_clients_buffer_length": 65536 + 768}, "broadcast buffer capacity must be a power"),
        ({"counters_values_buffer_length": 1000}, "counters values buffer length must be"),
        ({"error_log_buffer_length": 0}, "error log buffer length must be"),
        ({"client_liveness_timeout_ns": 0}, "client liveness timeout must be positive"),
        ({"file_page_size": 1024}, "file page size must be a power of two"),
        ({"file_page_size": 6000}, "file_page_size=6000"),
    ],
)
def test_should_refuse_bad_lengths(shm_dir: Path, override: dict[str, int], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        _create(shm_dir, **override)
    assert not (shm_dir / "cnc.dat").exists()


def _driver_process(directory: str, ready_marker: int) -> None:
    time.sleep(0.2)  # the client maps first and must wait
    created = CncFile.create(
        directory, start_timestamp_ms=int(time.time() * 1000), pid=os.getpid(), **SMALL
    )
    created.counters_values_buffer.put_int64_ordered(0, ready_marker)
    for _ in range(5000):  # bounded: at most ~5 s for the client's answer
        if created.to_clients_buffer.get_int64_volatile(0) == -ready_marker:
            created.close()
            return
        time.sleep(0.001)
    raise SystemExit(3)


def test_should_map_a_cnc_written_by_another_process(shm_dir: Path) -> None:
    process = mp.get_context("spawn").Process(target=_driver_process, args=(str(shm_dir), 31337))
    process.start()
    try:
        with CncFile.map(shm_dir, timeout_ms=20_000) as mapped:
            assert mapped.pid == process.pid
            for _ in range(5000):
                if mapped.counters_values_buffer.get_int64_volatile(0) == 31337:
                    break
                time.sleep(0.001)
            assert mapped.counters_values_buffer.get_int64_volatile(0) == 31337
            mapped.to_clients_buffer.put_int64_ordered(0, -31337)
    finally:
        process.join(timeout=20)
        if process.is_alive():
            process.kill()
            process.join()
    assert process.exitcode == 0
