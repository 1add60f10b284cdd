"""No package imports another package's private module or private name.

A package is one of the libraries (``transport proto common client producer consumer broker aio
pipeline``, imported as ``aeromq.<library>``), the top of ``aeromq`` (``aeromq/__init__.py``,
``aeromq/__main__.py``), the command line's room ``aeromq._cli`` (``aeromq/_cli/**``) and the
benchmarks ``bench``. Inside a package private modules and names are fine (httpx's convention:
private modules, public names re-exported from ``__init__``); across packages only public ones
are. An import is private when a part of its module path below its package, or an imported
name, starts with ``_`` (dunder names such as ``__version__`` are public). ``_cli`` is the
room's package name, not a private part below one: that no library imports the room at all is
checked by ``test_layering.py`` and ``test_cli_room.py``.

The tests of a package, ``tests/<library>/`` (``tests/cli/`` for the command line,
``tests/bench/`` for the benchmarks), may import that package's private units, as unit tests of
private units do; every other test folder imports public names only. Imports of ``tests.*``
helpers and of third-party modules are not checked here.

Every module is parsed with :mod:`ast` (nothing is imported), relative imports are resolved, and
every import counts: at module level, inside functions and under ``TYPE_CHECKING`` alike.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ._imports import imports

REPO = Path(__file__).resolve().parents[2]

LIBRARIES = ("transport", "proto", "common", "client", "producer", "consumer", "broker", "aio",
             "pipeline")  # fmt: skip
"""The subpackages of ``aeromq``, each a top-level folder of the repository."""

_TOP = "aeromq"
_CLI = "aeromq._cli"
_BENCH = "bench"

TEST_FOLDERS: dict[str, str] = {
    **{library: library for library in LIBRARIES},
    "cli": _CLI,
    "bench": _BENCH,
}
"""``tests/<folder>/`` -> the package whose private units its tests may import."""


def _module_name(path: Path) -> str:
    """``broker/store/x.py`` -> ``aeromq.broker.store.x``; ``bench/_all.py`` -> ``bench._all``;
    ``tests/common/test_x.py`` -> ``tests.common.test_x``."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] in LIBRARIES:
        parts.insert(0, _TOP)
    return ".".join(parts)


def _package_of_file(path: Path) -> str:
    """The package the module at ``path`` belongs to (for tests: whose private units it may
    import; ``tests`` for a folder that tests no one package)."""
    parts = path.relative_to(REPO).parts
    if parts[0] in LIBRARIES:
        return parts[0]
    if parts[0] == _TOP:
        return _CLI if parts[1] == "_cli" else _TOP
    if parts[0] == _BENCH:
        return _BENCH
    if parts[0] == "tests" and len(parts) > 2:
        return TEST_FOLDERS.get(parts[1], "tests")
    return "tests"


def _package_of_module(module: str) -> tuple[str, list[str]] | None:
    """The package an absolute module name lies in and the parts of the name below the
    package's own (``aeromq._cli.consume.main`` -> ``aeromq._cli``, ``[consume, main]``); None
    outside ``aeromq`` and ``bench``."""
    parts = module.split(".")
    if parts[0] == _BENCH:
        return _BENCH, parts[1:]
    if parts[0] != _TOP:
        return None
    if len(parts) > 1 and parts[1] in LIBRARIES:
        return parts[1], parts[2:]
    if len(parts) > 1 and parts[1] == "_cli":
        return _CLI, parts[2:]
    return _TOP, parts[1:]


def _imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """``(line, absolute name)`` of everything imported in ``tree``: ``import a.b`` gives
    ``a.b``, ``from a import b, c`` gives ``a.b`` and ``a.c`` (a module or a name alike)."""
    found: list[tuple[int, str]] = []
    for line, base, names in imports(tree, module, is_package):
        found += [(line, f"{base}.{name}") for name in names] if names else [(line, base)]
    return found


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def violations(source: str, path: Path) -> list[str]:
    """Each import in ``source`` (the module at ``path``) of another package's private module or
    name, as ``path:line: module imports X, private to package``."""
    module = _module_name(path)
    own = _package_of_file(path)
    tree = ast.parse(source, filename=str(path))
    out = []
    for line, imported in _imported(tree, module, path.name == "__init__.py"):
        found = _package_of_module(imported)
        if found is None or found[0] == own:
            continue
        package, below = found
        if any(_is_private(part) for part in below):
            out.append(
                f"{path.relative_to(REPO)}:{line}: {module} imports {imported}, "
                f"private to {package}"
            )
    return out


def _modules(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def _found(paths: list[Path]) -> list[str]:
    return [v for path in paths for v in violations(path.read_text(), path)]


@pytest.mark.parametrize("library", LIBRARIES)
def test_should_import_no_private_unit_of_another_library(library: str) -> None:
    modules = _modules(library)
    assert modules, f"no modules found for {library}"
    found = _found(modules)
    assert found == [], "private imports across packages:\n" + "\n".join(found)


def test_should_keep_the_top_of_aeromq_and_its_command_line_to_public_names() -> None:
    modules = sorted((REPO / _TOP).glob("*.py")) + _modules("aeromq/_cli")
    assert REPO / _TOP / "__init__.py" in modules and len(modules) > 2
    found = _found(modules)
    assert found == [], "private imports across packages:\n" + "\n".join(found)


def test_should_keep_the_benchmarks_to_public_names() -> None:
    modules = _modules(_BENCH)
    assert modules, "no benchmark modules found"
    found = _found(modules)
    assert found == [], "private imports across packages:\n" + "\n".join(found)


def test_should_let_tests_import_only_their_own_packages_private_units() -> None:
    modules = _modules("tests")
    assert modules, "no test modules found"
    found = _found(modules)
    assert found == [], "private imports across packages:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("file", "source", "line"),
    [
        ("consumer/x.py", "from aeromq.common._errors import AeromqError\n", 1),
        ("consumer/x.py", "from aeromq.common.record_batch import _native\n", 1),
        ("broker/store/x.py", "import os\nfrom ...common._envelope import MTU\n", 2),
        ("client/x.py", "def f():\n    import aeromq.transport._errors\n", 2),
        ("client/x.py", "from aeromq.common import _hidden_helper\n", 1),
        ("aeromq/__init__.py", "from aeromq.client._session import ClientSession\n", 1),
        ("aeromq/_cli/stat.py", "from aeromq.transport.driver._values import V\n", 1),
        ("bench/_all.py", "from aeromq.producer._batch import Batch\n", 1),
        ("consumer/x.py", "from aeromq._cli._table import table\n", 1),
        ("tests/consumer/test_x.py", "from aeromq.common.record_batch import _native\n", 1),
        ("tests/client/test_x.py", "from aeromq.common._errors import AeromqError\n", 1),
        ("tests/interop/_harness.py", "from aeromq.transport._errors import E\n", 1),
        ("tests/meta/test_x.py", "from aeromq.client._session import ClientSession\n", 1),
        ("tests/docs/test_x.py", "from aeromq._cli._table import table\n", 1),
        ("tests/common/test_x.py", "from bench._harness import Harness\n", 1),
    ],
)
def test_should_report_a_private_reach_with_its_file_and_line(
    file: str, source: str, line: int
) -> None:
    (found,) = violations(source, REPO / file)
    assert found.startswith(f"{file}:{line}: ") and ", private to " in found


@pytest.mark.parametrize(
    ("file", "source"),
    [
        ("consumer/x.py", "from aeromq.common import AeromqError\nimport numpy._core\n"),
        ("broker/store/x.py", "from . import _message\nfrom .._errors import E\n"),
        ("common/record_batch/x.py", "from aeromq.common.record_batch import _native\n"),
        ("aeromq/__init__.py", "from aeromq import __version__\n"),
        ("aeromq/__main__.py", "from aeromq._cli import main\n"),
        ("aeromq/_cli/stat.py", "from ._shared import table\nfrom aeromq.client import X\n"),
        ("bench/_all.py", "from bench._harness import Harness\nfrom ._charts import chart\n"),
        ("tests/common/test_x.py", "from aeromq.common.record_batch import _native\n"),
        ("tests/broker/data/test_x.py", "from aeromq.broker.store._message import M\n"),
        ("tests/cli/test_x.py", "from aeromq._cli._table import table\n"),
        ("tests/docs/test_x.py", "from aeromq._cli import COMMANDS, parser_of\n"),
        ("tests/bench/test_x.py", "from bench._bounded import run\n"),
        ("tests/system/test_x.py", "from tests.system._driver import start_driver\n"),
        ("tests/consumer/test_x.py", "from ._helpers import queues\n"),
    ],
)
def test_should_accept_public_names_and_a_packages_own_private_units(
    file: str, source: str
) -> None:
    assert violations(source, REPO / file) == []
