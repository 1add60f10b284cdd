"""Short modules with one role each: no hand-written module of the project (its packages, the
command line, the bench, the tests) reaches 600 lines. Generated protobuf and gRPC code
(``*_pb2.py``, ``*_pb2_grpc.py``, their stubs) is not hand-written and is left out. A module that
grows past the bound is split by role, not trimmed of its docstrings."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("transport", "proto", "common", "client", "producer", "consumer", "broker", "aio",
           "pipeline", "bench", "aeromq/_cli", "tests")  # fmt: skip
MAX_LINES = 600


def _hand_written_modules() -> list[Path]:
    modules = []
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
                continue
            modules.append(path)
    return modules


def test_should_find_the_modules_it_bounds() -> None:
    modules = _hand_written_modules()
    assert len(modules) > 500
    assert REPO / "broker" / "broker.py" in modules


def test_should_keep_every_hand_written_module_under_six_hundred_lines() -> None:
    too_long = {
        str(path.relative_to(REPO)): lines
        for path in _hand_written_modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) >= MAX_LINES
    }
    assert not too_long, f"modules of {MAX_LINES} lines or more (split them by role): {too_long}"
