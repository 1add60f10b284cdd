from __future__ import annotations

import importlib

import pytest

from tests.client._helpers import isort_key


@pytest.mark.parametrize(
    "module_name",
    [
        "client",
        "aeromq.client._errors",
        "aeromq.client.java_string",
        "aeromq.client.message",
        "aeromq.client.message_id",
        "aeromq.client.response_code",
        "aeromq.client.tags",
        "aeromq.client.validators",
    ],
)
def test_should_export_a_sorted_all_of_names_that_exist(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = module.__all__
    assert names == sorted(names, key=isort_key)
    assert len(set(names)) == len(names)
    for name in names:
        assert hasattr(module, name), name


def test_should_reexport_every_public_name_of_the_private_errors_module() -> None:
    from aeromq import client
    from aeromq.client import _errors

    assert set(_errors.__all__) <= set(client.__all__)
