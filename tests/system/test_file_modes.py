"""Files that hold messages are private: a real broker's store files and its embedded driver's
shared memory (cnc.dat, log buffers) are created 0600 and their directories 0700, whatever
the umask; ``--file-mode`` widens both (directories get an execute bit beside each read)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from aeromq.broker.testing import start_broker_process
from aeromq.client import Message
from aeromq.producer import Producer

_ARGS = [
    "--auto-create-topic", "true", "--default-queue-count", "1",
    "--ingress-udp-endpoint", "none", "--commit-log-segment-bytes", "16MiB",
    "--index-slots", "1000", "--index-entries", "4000",
]  # fmt: skip


def _modes(root: Path) -> dict[str, tuple[int, bool]]:
    """Permission bits of ``root`` and everything under it, and whether each is a directory,
    by path relative to it. A file renamed between the listing and its ``lstat`` (the store
    makes a file as ``NAME.creating`` and renames it once it is whole) is skipped: the walk
    after the broker stopped finds it under its final name."""
    found: dict[str, tuple[int, bool]] = {}
    for path in [root, *root.rglob("*")]:
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            continue
        found[str(path.relative_to(root))] = (stat.S_IMODE(mode), stat.S_ISDIR(mode))
    return found


def _broker_files(
    tmp_path: Path, extra: list[str]
) -> tuple[dict[str, tuple[int, bool]], dict[str, tuple[int, bool]]]:
    """The modes of a broker's data dir and aeron dir after a send, as it runs."""
    old_umask = os.umask(0o002)  # the child inherits a permissive umask: modes must not
    try:
        broker = start_broker_process(tmp_path / "data", extra_args=[*_ARGS, *extra])
    finally:
        os.umask(old_umask)
    try:
        with Producer("modes", broker.grpc_address) as producer:
            producer.send(Message("private", b"secret body", keys="k1"))
        data = _modes(tmp_path / "data")
        shm = _modes(Path(broker.ready["aeron_dir"]))
        # consumer offsets, the checkpoint: written when the broker stops
    finally:
        assert broker.stop() == 0
    data.update(_modes(tmp_path / "data"))
    return data, shm


@pytest.mark.parametrize(("extra", "file_mode"), [([], 0o600), (["--file-mode", "640"], 0o640)])
def test_should_create_store_and_shared_memory_files_with_the_configured_mode(
    tmp_path: Path, extra: list[str], file_mode: int
) -> None:
    directory_mode = 0o700 if file_mode == 0o600 else 0o750
    (tmp_path / "data").mkdir(mode=0o700)  # the operator's own directory keeps its mode
    data, shm = _broker_files(tmp_path, extra)
    assert data.pop(".") == (0o700, True)
    for expected in (
        "commitlog/00000000000000000000",
        "consumequeue/private/0/00000000000000000000",
        "index",
        "checkpoint",
        "lock",
        "config/topics.json",
    ):
        assert expected in data, sorted(data)
    assert any(name.endswith(".logbuffer") for name in shm), sorted(shm)
    assert "cnc.dat" in shm
    for name, (mode, is_dir) in [*data.items(), *shm.items()]:
        want = directory_mode if is_dir else file_mode
        assert mode == want, f"{name}: mode={mode:#o} want={want:#o}"
