"""Every package's public API is documented: at least 90% of it carries a docstring.

The public API of a package is each name of its ``__all__`` that is a class or a function, and
each public method and property that those classes define themselves (``vars(cls)``: not the
ones they inherit). A method or property without a docstring of its own counts as documented
when it overrides a documented one of a base class (:func:`inspect.getdoc` finds it there, as
``help()`` shows it). A class counts only by its own docstring: the one a dataclass or a named
tuple is given when it has none (``Name(field: type, ...)``, its signature) says nothing a
reader does not see already, and neither does a base class's.

The packages are those of ``test_public_api.py``; a failure lists the undocumented names.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Iterator
from functools import cached_property
from typing import NamedTuple

import pytest

from .test_public_api import PACKAGES

MIN_COVERAGE = 0.90
"""The documented share of each package's public API, at least."""


def _own_doc(cls: type) -> str:
    """The class's own docstring, without the one :mod:`dataclasses` or
    :class:`typing.NamedTuple` writes for a class that has none (its name and signature)."""
    doc = (vars(cls).get("__doc__") or "").strip()
    is_record = dataclasses.is_dataclass(cls) or (
        issubclass(cls, tuple) and hasattr(cls, "_fields")
    )
    if is_record and doc.startswith(f"{cls.__name__}(") and "\n" not in doc:
        return ""
    return doc


def _items(name: str, obj: object) -> Iterator[tuple[str, bool]]:
    """``(qualified name, documented)`` for ``obj`` exported as ``name``: a function, or a
    class and its own public methods and properties (nothing for a constant or an alias)."""
    if inspect.isclass(obj):
        yield name, bool(_own_doc(obj))
        for attr, value in vars(obj).items():
            if attr.startswith("_"):
                continue
            if isinstance(value, staticmethod | classmethod):
                value = value.__func__
            if isinstance(value, property | cached_property) or inspect.isfunction(value):
                doc = inspect.getdoc(getattr(obj, attr, value))
                yield f"{name}.{attr}", bool((doc or "").strip())
    elif inspect.isfunction(obj):
        yield name, bool((inspect.getdoc(obj) or "").strip())


def _public_api(package: str) -> Iterator[tuple[str, bool]]:
    """``(qualified name, documented)`` for each item of ``package``'s public API."""
    module = importlib.import_module(package)
    for name in module.__all__:
        yield from _items(name, getattr(module, name))


class _Base:
    """A documented base."""

    def run(self) -> None:
        """Documented once, here."""

    @property
    def size(self) -> int:
        """Documented once, here."""
        return 0


class _Child(_Base):
    def run(self) -> None:
        pass

    @property
    def size(self) -> int:
        return 1

    def extra(self) -> None:
        pass

    @staticmethod
    def helper() -> None:
        """A documented static method."""

    def _private(self) -> None:
        pass


@dataclasses.dataclass
class _Record:
    field: int


class _Pair(NamedTuple):
    left: int
    right: int


def test_should_count_what_a_base_documents_and_not_a_record_signature() -> None:
    assert dict(_items("Child", _Child)) == {
        "Child": False,  # a base's class docstring is not the class's own
        "Child.run": True,
        "Child.size": True,
        "Child.extra": False,
        "Child.helper": True,
    }
    assert dict(_items("Record", _Record)) == {"Record": False}
    assert dict(_items("Pair", _Pair)) == {"Pair": False}
    assert dict(_items("Base", _Base)) == {"Base": True, "Base.run": True, "Base.size": True}
    assert list(_items("LIMIT", 3)) == []


def test_should_find_a_public_api_in_every_package() -> None:
    empty = [package for package in PACKAGES if not list(_public_api(package))]
    assert empty == [], f"packages with no class or function in __all__: {empty}"


@pytest.mark.parametrize("package", PACKAGES)
def test_should_document_most_of_each_public_api(package: str) -> None:
    items = list(_public_api(package))
    missing = [name for name, documented in items if not documented]
    coverage = 1 - len(missing) / len(items)
    assert coverage >= MIN_COVERAGE, (
        f"{package}: {coverage:.0%} of {len(items)} public names documented, under"
        f" {MIN_COVERAGE:.0%}; without a docstring: {', '.join(missing)}"
    )
