"""A started broker for a fixture: its topics created, stopped when the fixture ends.

Most system tests' fixtures start a broker (``aeromq.broker.testing``), create the topics they
send to, yield it, and stop it; :func:`serving` is that shape once::

    @pytest.fixture
    def broker(tmp_path: Path) -> Iterator[ServerProcess]:
        with serving(start_broker_process(tmp_path / "data"), {"Orders": 4}) as process:
            yield process
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from aeromq.broker.testing import ServerProcess
from aeromq.client import GrpcClient

__all__ = ["serving"]

ADMIN_TIMEOUT_S = 30.0


@contextmanager
def serving(
    process: ServerProcess, topics: Mapping[str, int] | None = None, *, clean_exit: bool = False
) -> Iterator[ServerProcess]:
    """``process`` with ``topics`` (name -> read and write queue count) created, stopped when
    the block ends, also when creating them failed; with ``clean_exit`` the stop must find it
    exiting 0 (a broker that shut down cleanly whatever the test threw at it)."""
    try:
        if topics:
            with GrpcClient(process.grpc_address, timeout_s=ADMIN_TIMEOUT_S) as admin:
                for topic, queues in topics.items():
                    admin.create_topic(topic, read_queue_nums=queues, write_queue_nums=queues)
        yield process
    finally:
        code = process.stop()
        assert not clean_exit or code == 0, f"broker pid={process.pid} exited {code}"
