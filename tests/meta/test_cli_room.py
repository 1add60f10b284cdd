"""The command line is one room above every library (``aeromq/_cli/``).

No library (nor the bench) imports it; it imports the libraries' public names only (no module
path part and no name starting with ``_``, as ``tests/meta/test_public_api.py`` has them
exported); each of its modules says its role in a docstring and stays under 600 lines. Parsed
with :mod:`ast`, nothing imported; every import counts, inside functions too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOM = REPO / "aeromq" / "_cli"
LIBRARIES = ("transport", "proto", "common", "client", "producer", "consumer", "broker", "aio",
             "pipeline", "bench")  # fmt: skip
MAX_LINES = 600


def _imports(source: str) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of every import: ``import a.b`` gives ``("a.b", [])``."""
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.append((node.lineno, node.module or "", [alias.name for alias in node.names]))
    return found


def _takes_the_room(module: str, names: list[str]) -> bool:
    return (
        module == "aeromq._cli"
        or module.startswith("aeromq._cli.")
        or (module == "aeromq" and "_cli" in names)
    )


def _private_reach(module: str, names: list[str]) -> list[str]:
    """What an import of the room takes that is private to a library (empty: nothing)."""
    if not module.startswith("aeromq.") or _takes_the_room(module, names):
        return []
    parts = module.split(".")[1:]
    private = [part for part in parts if part.startswith("_")]
    private += [name for name in names if name.startswith("_") and not name.startswith("__")]
    return private


def _room() -> list[Path]:
    return sorted(ROOM.rglob("*.py"))


@pytest.mark.parametrize("library", LIBRARIES)
def test_should_keep_every_library_free_of_the_command_line(library: str) -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}: imports {module}"
        for path in sorted((REPO / library).rglob("*.py"))
        for line, module, names in _imports(path.read_text())
        if _takes_the_room(module, names)
    ]
    assert found == [], "a library imports the command line:\n" + "\n".join(found)


def test_should_take_only_public_names_from_the_libraries() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}: {module} ({', '.join(private)})"
        for path in _room()
        for line, module, names in _imports(path.read_text())
        if (private := _private_reach(module, names))
    ]
    assert found == [], "the command line reaches into a library:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "private"),
    [
        ("from aeromq.broker._errors import BrokerError\n", ["_errors"]),
        ("from aeromq.client import _security\n", ["_security"]),
        ("def f():\n    import aeromq.transport.driver._values\n", ["_values"]),
        ("from aeromq.broker import BrokerError\n", []),
        ("from aeromq._cli.options import command_parser\n", []),
        ("from aeromq import __version__\n", []),
    ],
)
def test_should_tell_a_private_reach_from_a_public_import(source: str, private: list[str]) -> None:
    [(_, module, names)] = _imports(source)
    assert _private_reach(module, names) == private


def test_should_give_each_module_a_role_and_keep_it_short() -> None:
    modules = _room()
    assert modules, "no command-line modules found"
    for path in modules:
        source = path.read_text()
        assert ast.get_docstring(ast.parse(source)), f"{path.relative_to(REPO)}: no docstring"
        lines = source.count("\n")
        assert lines < MAX_LINES, f"{path.relative_to(REPO)}: {lines} lines"
