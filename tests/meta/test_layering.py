"""The subpackages of ``aeromq`` import only downwards.

From the bottom::

    transport < proto < common < client < producer, consumer < aio, pipeline
                              ^
                              broker (transport, proto and common only)

A package may import itself and the layers below it; ``producer`` and ``consumer`` sit side by
side and do not import each other; ``aio`` (asyncio faces of both) uses them, ``client`` and
``common``, not the transport or the wire schema; ``pipeline`` (the Spark connector) uses both
and never the broker; ``broker`` sits beside the clients, so a server never loads client code.
The top of ``aeromq`` (``aeromq/__init__.py`` and the command line, ``aeromq/_cli/``) sits
above all: no package imports it, and it is not checked here (``test_cli_room.py`` checks that
the command line takes public names only). Every module of each package is parsed with :mod:`ast` (nothing is
imported), and every import counts: at module level, inside functions and under
``TYPE_CHECKING`` alike.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ._imports import imports

REPO = Path(__file__).resolve().parents[2]

ALLOWED: dict[str, frozenset[str]] = {
    "transport": frozenset({"transport"}),
    "proto": frozenset({"transport", "proto"}),
    "common": frozenset({"transport", "proto", "common"}),
    "client": frozenset({"transport", "proto", "common", "client"}),
    "producer": frozenset({"transport", "proto", "common", "client", "producer"}),
    "consumer": frozenset({"transport", "proto", "common", "client", "consumer"}),
    "broker": frozenset({"transport", "proto", "common", "broker"}),
    "aio": frozenset({"common", "client", "producer", "consumer", "aio"}),
    "pipeline": frozenset(
        {"transport", "proto", "common", "client", "producer", "consumer", "pipeline"}
    ),
}
"""Package -> the packages its modules may import (the top of ``aeromq`` is in none)."""

_TOP = "aeromq"


def _module_name(path: Path) -> str:
    """``broker/processor/pull.py`` -> ``aeromq.broker.processor.pull``."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([_TOP, *parts])


def _imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """``(line, absolute module)`` of every import in ``tree``; ``from aeromq import client``
    gives ``aeromq.client``."""
    found: list[tuple[int, str]] = []
    for line, base, names in imports(tree, module, is_package):
        if base == _TOP and names:
            found += [(line, f"{_TOP}.{name}") for name in names]
        else:
            found.append((line, base))
    return found


def _layer(imported: str) -> str | None:
    """The subpackage of ``aeromq`` an import names; ``aeromq`` for the top; None outside."""
    parts = imported.split(".")
    if parts[0] != _TOP:
        return None
    if len(parts) == 1 or parts[1] not in ALLOWED:
        return _TOP
    return parts[1]


def violations(source: str, path: Path, package: str) -> list[str]:
    """Each import in ``source`` (the module at ``path`` of ``package``) that the layers forbid,
    as ``path:line: module imports X (package may use ...)``."""
    module = _module_name(path)
    tree = ast.parse(source, filename=str(path))
    out = []
    for line, imported in _imported(tree, module, path.name == "__init__.py"):
        layer = _layer(imported)
        if layer is not None and layer not in ALLOWED[package]:
            allowed = ", ".join(sorted(ALLOWED[package]))
            out.append(
                f"{path.relative_to(REPO)}:{line}: {module} imports {imported} "
                f"({package} may use {allowed})"
            )
    return out


def _modules(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_should_import_only_the_layers_below(package: str) -> None:
    modules = _modules(package)
    assert modules, f"no modules found for {package}"
    found = [v for path in modules for v in violations(path.read_text(), path, package)]
    assert found == [], "imports against the layering:\n" + "\n".join(found)


def test_should_link_every_layer_into_the_installed_package() -> None:
    for package in ALLOWED:
        link = REPO / _TOP / package
        assert link.is_symlink() and link.resolve() == (REPO / package).resolve(), package


@pytest.mark.parametrize(
    ("package", "file", "source"),
    [
        ("broker", "broker/processor/x.py", "from aeromq.client import GrpcClient\n"),
        ("broker", "broker/x.py", "def f():\n    import aeromq.consumer.config\n"),
        ("broker", "broker/x.py", "from aeromq import producer\n"),
        ("broker", "broker/store/x.py", "from ...client import route\n"),
        ("common", "common/x.py", "from aeromq.client.session import ClientSession\n"),
        ("common", "common/x.py", "from aeromq import Message\n"),
        ("client", "client/x.py", "from aeromq.broker.store import MessageStore\n"),
        ("producer", "producer/x.py", "from aeromq.consumer import DefaultLitePullConsumer\n"),
        ("transport", "transport/x.py", "from aeromq.proto import session_pb2\n"),
        ("proto", "proto/x.py", "from aeromq.common import ResponseCode\n"),
        ("aio", "aio/x.py", "from aeromq.broker.testing import start_broker_process\n"),
        ("aio", "aio/x.py", "from aeromq.transport import Aeron\n"),
        ("consumer", "consumer/x.py", "from aeromq.aio import AsyncLitePullConsumer\n"),
        ("pipeline", "pipeline/x.py", "from aeromq.broker.testing import start_broker_process\n"),
        ("consumer", "consumer/x.py", "from aeromq.pipeline import AeromqDataSource\n"),
        ("transport", "transport/x.py", "from aeromq._cli.options import command_parser\n"),
        ("broker", "broker/x.py", "def f():\n    import aeromq._cli.stat\n"),
        ("client", "client/x.py", "from aeromq import _cli\n"),
    ],
)
def test_should_report_an_import_from_a_higher_layer(package: str, file: str, source: str) -> None:
    (found,) = violations(source, REPO / file, package)
    assert f"{file}:" in found and f"({package} may use" in found


@pytest.mark.parametrize(
    ("package", "file", "source"),
    [
        ("broker", "broker/x.py", "from aeromq.common import ResponseCode\nimport grpc\n"),
        ("broker", "broker/store/x.py", "from . import _message\nfrom .._errors import E\n"),
        ("consumer", "consumer/x.py", "from aeromq.client import MessageQueue\n"),
        ("common", "common/x.py", "from aeromq.proto import session_pb2\n"),
        ("aio", "aio/x.py", "from aeromq.consumer import DefaultLitePullConsumer\n"),
        ("pipeline", "pipeline/x.py", "from aeromq.consumer import DefaultLitePullConsumer\n"),
    ],
)
def test_should_accept_imports_of_the_same_or_lower_layers(
    package: str, file: str, source: str
) -> None:
    assert violations(source, REPO / file, package) == []
