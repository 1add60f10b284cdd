"""The replication tests' fixtures: a real etcd per test (the etcd tests' own fixtures)."""

from tests.broker.etcd.conftest import etcd, etcd_server

__all__ = ["etcd", "etcd_server"]
