"""A real etcd per test: Debian's ``etcd`` (package ``etcd-server``, installed by
``scripts/install-system-packages``) on 127.0.0.1 with free ports and its data in the test's own
directory, stopped after the test; and a client of it.

No etcd binary is an error (:class:`EtcdNotInstalledError` names the package), not a skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.etcd import EtcdClient, EtcdServer


@pytest.fixture
def etcd_server(shm_dir: Path) -> Iterator[EtcdServer]:
    """A running etcd of one member (lease TTLs from 1 s), stopped (or killed) afterwards."""
    server = EtcdServer(shm_dir / "etcd")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def etcd(etcd_server: EtcdServer) -> Iterator[EtcdClient]:
    """A client of :func:`etcd_server`, closed afterwards."""
    with EtcdClient(etcd_server.endpoint) as client:
        yield client
