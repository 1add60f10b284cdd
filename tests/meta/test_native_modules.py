"""The native helpers: every one ``setup.py`` builds is named in ``aeromq._native`` and built in
this checkout (CI installs with pip, so a missing one is a build that silently fell back), and a
missing one is reported by name."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from aeromq.common import NATIVE_MODULES, missing_native_modules

ROOT = Path(__file__).resolve().parents[2]


def test_should_know_every_extension_of_setup_py_as_a_native_module() -> None:
    tree = ast.parse((ROOT / "setup.py").read_text())
    built = {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "Extension"
        and isinstance(node.args[0], ast.Constant)
    }
    assert built == set(NATIVE_MODULES)


def test_should_find_every_native_module_built_in_this_checkout() -> None:
    assert missing_native_modules() == []


def test_should_report_by_name_a_native_module_that_cannot_be_imported() -> None:
    # a child interpreter where one module's import fails as an unbuilt one does
    code = (
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'aeromq.common.record_batch._native':\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "from aeromq.common._native import missing_native_modules\n"
        "print(missing_native_modules())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "['aeromq.common.record_batch._native']"
