"""Every package's public API is re-exported from its ``__init__``.

The order of ``__all__`` is checked by ruff (RUF022, isort-style); this checks that each name
exists and appears once.
"""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "aeromq.transport",
    "aeromq.transport.concurrent",
    "aeromq.transport.command",
    "aeromq.transport.logbuffer",
    "aeromq.transport.protocol",
    "aeromq.transport.client",
    "aeromq.transport.driver",
    "aeromq.transport.tools",
    "aeromq.transport.util",
    "aeromq.common",
    "aeromq.common.record_batch",
    "aeromq.client",
    "aeromq.consumer",
    "aeromq.consumer.allocate",
    "aeromq.broker",
    "aeromq.broker.etcd",
    "aeromq.broker.grpc",
    "aeromq.broker.namesrv",
    "aeromq.broker.replication",
    "aeromq.producer",
    "aeromq.aio",
    "aeromq.pipeline",
]


@pytest.mark.parametrize("package", PACKAGES)
def test_should_export_each_public_name_once(package: str) -> None:
    module = importlib.import_module(package)
    exported = list(module.__all__)
    assert len(set(exported)) == len(exported)
    missing = [name for name in exported if not hasattr(module, name)]
    assert missing == []
