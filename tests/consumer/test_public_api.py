from __future__ import annotations

from aeromq import consumer
from aeromq.consumer import allocate
from tests.client._helpers import isort_key


def test_should_export_sorted_names_that_exist_from_both_packages() -> None:
    for module in (consumer, allocate):
        assert module.__all__ == sorted(module.__all__, key=isort_key)
        assert all(hasattr(module, name) for name in module.__all__)
    assert set(allocate.__all__) <= set(consumer.__all__)
    assert "DefaultLitePullConsumer" in consumer.__all__
