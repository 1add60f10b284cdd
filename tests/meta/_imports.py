"""Every import statement of a parsed module, relative ones resolved: what the meta tests of
the layering (``test_layering.py``) and of private reaches (``test_private_imports.py``) read.
Modules are parsed with :mod:`ast`, never imported; every import counts, at module level,
inside functions and under ``TYPE_CHECKING`` alike."""

from __future__ import annotations

import ast


def imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str, list[str]]]:
    """``(line, absolute module, names)`` of each import in ``tree``, the parsed source of
    ``module`` (a package's ``__init__`` when ``is_package``): ``import a.b`` gives
    ``("a.b", [])``, ``from ..c import d, e`` in ``x.y.z`` gives ``("x.c", ["d", "e"])``."""
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            found.append((node.lineno, base, [alias.name for alias in node.names]))
    return found
