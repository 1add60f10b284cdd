from __future__ import annotations

import importlib

import pytest

from tests.client._helpers import isort_key


@pytest.mark.parametrize(
    "module_name",
    [
        "aeromq.client",
        "aeromq.client.broker_sessions",
        "aeromq.client.message",
        "aeromq.client.session",
        "aeromq.common",
        "aeromq.common._envelope",
        "aeromq.common._errors",
        "aeromq.common._java_string",
        "aeromq.common._message_id",
        "aeromq.common._permission",
        "aeromq.common._properties",
        "aeromq.common._response_code",
        "aeromq.common._tags",
        "aeromq.common._validators",
    ],
)
def test_should_export_a_sorted_all_of_names_that_exist(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = module.__all__
    assert names == sorted(names, key=isort_key)
    assert len(set(names)) == len(names)
    for name in names:
        assert hasattr(module, name), name


def test_should_reexport_from_the_client_the_shared_objects_themselves() -> None:
    from aeromq import client, common

    shared = set(client.__all__) & set(common.__all__)
    assert {"ClientError", "ResponseCode", "SubscriptionData", "tag_hash_code"} <= shared
    for name in shared:
        assert getattr(client, name) is getattr(common, name), name
