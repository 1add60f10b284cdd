"""One error tree per package, one meaning per class name.

Every module of aeromq's packages and of its command line is imported (``__main__`` modules
excepted: importing one runs it), and every exception class defined at a module's top level is
checked:

- no two share a name, so that a name means one thing whichever tree a reader has in mind;
- each descends from its package's root (:data:`ROOTS`): ``producer``, ``consumer`` and ``aio``
  raise the clients' tree, rooted at the ``ClientError`` that ``common`` defines and ``client``
  re-exports; the command line (``aeromq/_cli/``, above every library) uses the libraries'
  roots; and no exception class is a root but those;
- each ``_errors.py`` docstring draws its tree: a root's names every public class under it,
  wherever in the package it is defined (the command line's classes aside: no library names
  them), every ``_errors.py`` names each class it defines, and none names a class that is gone.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType

import pytest

from aeromq.broker import BrokerError
from aeromq.common import ClientError
from aeromq.pipeline import PipelineError
from aeromq.transport import TransportError

REPO = Path(__file__).resolve().parents[2]
LIBRARIES = ("transport", "proto", "common", "client", "producer", "consumer", "broker", "aio",
             "pipeline")  # fmt: skip
CLI = "_cli"
"""The command line's package, ``aeromq/_cli/`` (the top of ``aeromq`` counts as it)."""

ROOTS: dict[str, tuple[type[BaseException], ...]] = {
    "transport": (TransportError,),
    "proto": (),  # the wire schema, generated: it defines no errors
    "common": (ClientError,),
    "client": (ClientError,),
    "producer": (ClientError,),
    "consumer": (ClientError,),
    "aio": (ClientError,),
    "broker": (BrokerError,),
    "pipeline": (PipelineError,),
    CLI: (BrokerError, ClientError, PipelineError, TransportError),
}
"""Package -> the roots its exception classes may descend from."""

LIBRARY_ROOTS = (BrokerError, ClientError, PipelineError, TransportError)

_DRAWN = re.compile(r"^ {4}[│├└─ ]*(?P<name>[A-Z]\w*)", re.MULTILINE)
"""A class name that starts a line of a tree drawing (``    │   ├── StoreIOError  ...``)."""


def _module_name(path: Path) -> str:
    """``broker/etcd/_errors.py`` -> ``aeromq.broker.etcd._errors``; ``aeromq/_cli/admin.py`` ->
    ``aeromq._cli.admin``."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[0] != "aeromq":
        parts.insert(0, "aeromq")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _paths() -> list[Path]:
    """Every module of the libraries and the command line (``aeromq/<library>`` are links to the
    libraries' folders: the top of ``aeromq`` is read without them)."""
    folders = [REPO / library for library in LIBRARIES] + [REPO / "aeromq" / CLI]
    paths = [path for folder in folders for path in sorted(folder.rglob("*.py"))]
    paths.append(REPO / "aeromq" / "__init__.py")
    return [path for path in paths if path.name != "__main__.py"]


@functools.cache
def _modules() -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(_module_name(path)) for path in _paths())


@functools.cache
def _errors() -> tuple[type[BaseException], ...]:
    """Every exception class defined at the top level of an aeromq module, once."""
    found: dict[str, type[BaseException]] = {}
    for module in _modules():
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and value.__qualname__ == value.__name__
            ):
                found[_qualified(value)] = value
    return tuple(found[name] for name in sorted(found))


def _qualified(error: type[BaseException]) -> str:
    return f"{error.__module__}.{error.__name__}"


def _package(error: type[BaseException]) -> str:
    """``aeromq.broker.store._errors`` -> ``broker``; the top of ``aeromq`` -> the CLI's."""
    parts = error.__module__.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOTS else CLI


def _drawn(module: ModuleType) -> set[str]:
    return {match["name"] for match in _DRAWN.finditer(module.__doc__ or "")}


def _errors_modules() -> list[ModuleType]:
    return [module for module in _modules() if module.__name__.endswith("._errors")]


def test_should_find_the_errors_of_every_errors_module() -> None:
    errors_modules = {module.__name__ for module in _errors_modules()}
    assert len(errors_modules) >= 6
    assert errors_modules <= {error.__module__ for error in _errors()}


def test_should_give_each_exception_class_a_name_of_its_own() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for error in _errors():
        where[error.__name__].append(error.__module__)
    shared = {name: modules for name, modules in where.items() if len(modules) > 1}
    assert shared == {}


def test_should_root_every_exception_class_at_its_package_root() -> None:
    stray = [
        f"{_qualified(error)}: not under {[root.__name__ for root in ROOTS[_package(error)]]}"
        for error in _errors()
        if not issubclass(error, ROOTS[_package(error)])
    ]
    assert stray == []


def test_should_keep_one_root_per_package() -> None:
    tops = {
        _qualified(error)
        for error in _errors()
        if not any(base.__module__.startswith("aeromq.") for base in error.__mro__[1:])
    }
    assert tops == {_qualified(root) for root in LIBRARY_ROOTS}
    assert all(root.__module__.endswith("._errors") for root in LIBRARY_ROOTS)


@pytest.mark.parametrize("root", LIBRARY_ROOTS, ids=lambda root: root.__name__)
def test_should_draw_every_class_of_a_tree_in_its_roots_docstring(
    root: type[BaseException],
) -> None:
    drawn = _drawn(sys.modules[root.__module__])
    missing = [
        _qualified(error)
        for error in _errors()
        if issubclass(error, root)
        and _package(error) != CLI
        and not error.__name__.startswith("_")
        and error.__name__ not in drawn
    ]
    assert missing == []


def test_should_draw_each_class_an_errors_module_defines_and_no_other() -> None:
    names = {error.__name__ for error in _errors()}
    undrawn: list[str] = []
    gone: list[str] = []
    for module in _errors_modules():
        drawn = _drawn(module)
        undrawn += [
            _qualified(error)
            for error in _errors()
            if error.__module__ == module.__name__ and error.__name__ not in drawn
        ]
        gone += [f"{module.__name__}: {name}" for name in sorted(drawn - names)]
    assert undrawn == []
    assert gone == []
