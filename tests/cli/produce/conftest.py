"""``aeromq produce`` runs against the broker of ``tests/producer`` (in this process, module
scope, topics ``orders``, ``events`` and ``keyed``) and reads back with its ``puller``: the
fixtures are that conftest's, imported, not copied."""

from tests.producer.conftest import broker, puller

__all__ = ["broker", "puller"]
