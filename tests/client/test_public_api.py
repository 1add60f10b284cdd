from __future__ import annotations

import importlib
import re

import pytest


def _isort_key(name: str) -> tuple[int, list[object]]:
    """Ruff's RUF022 order: CONSTANTS, then CamelCase, then the rest, each in natural order."""
    category = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    parts = re.split(r"(\d+)", name)
    return category, [int(part) if part.isdigit() else part for part in parts]


@pytest.mark.parametrize(
    "module_name",
    [
        "client",
        "client._errors",
        "client.java_string",
        "client.message",
        "client.message_id",
        "client.response_code",
        "client.tags",
        "client.validators",
    ],
)
def test_should_export_a_sorted_all_of_names_that_exist(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = module.__all__
    assert names == sorted(names, key=_isort_key)
    assert len(set(names)) == len(names)
    for name in names:
        assert hasattr(module, name), name


def test_should_reexport_every_public_name_of_the_private_errors_module() -> None:
    import client
    import client._errors

    assert set(client._errors.__all__) <= set(client.__all__)
