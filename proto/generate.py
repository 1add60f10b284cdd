"""Regenerate the Python code of ``proto/*.proto``: ``python -m aeromq.proto.generate [OUT_DIR]``.

Runs ``grpc_tools.protoc`` with the repository root as the include path and the schema named as
``aeromq/proto/<name>.proto`` (``aeromq/proto`` is the package's view of ``proto/``), so every
descriptor has a path unique to aeromq and generated modules import each other as
``from aeromq.proto import ...``. RocketMQ 5's protocol (``apache/rocketmq/v2/*.proto``, see the
README there) compiles the same way into ``aeromq.proto.apache.rocketmq.v2``, and etcd v3's API
(``etcd/*.proto``, trimmed, see the README there) into ``aeromq.proto.etcd``. It uses the Python,
gRPC and mypy-protobuf (``.pyi``) generators. With no argument it writes beside the ``.proto`` files; with ``OUT_DIR`` it writes
``OUT_DIR/aeromq/proto/...`` instead, which the staleness test compares with the committed files.
"""

from __future__ import annotations

import importlib
import importlib.resources
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

# Where the schema sits in the package: descriptor paths and generated imports use it.
PACKAGE_PATH = Path("aeromq", "proto")
# This file's directory as the package sees it (``<root>/aeromq/proto``, not the symlink's target),
# and ``<root>``, the directory that holds the ``aeromq`` package: the repository root.
PROTO_DIR = Path(__file__).absolute().parent
REPO_ROOT = PROTO_DIR.parent.parent
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")
# The schema's directories under ``aeromq/proto``: aeromq's own, RocketMQ 5's (apache.rocketmq.v2)
# and etcd v3's trimmed API (etcd: packages etcdserverpb and mvccpb).
SCHEMA_DIRS = (Path(), Path("apache", "rocketmq", "v2"), Path("etcd"))


def proto_files() -> list[Path]:
    """The schema's ``.proto`` files, sorted within each of :data:`SCHEMA_DIRS`."""
    return [p for d in SCHEMA_DIRS for p in sorted((PROTO_DIR / d).glob("*.proto"))]


def generated_files(root: Path) -> list[Path]:
    """The generated files under ``root/aeromq/proto`` (each of :data:`SCHEMA_DIRS`), sorted."""
    found: list[Path] = []
    for d in SCHEMA_DIRS:
        directory = root / PACKAGE_PATH / d
        if directory.is_dir():
            found += sorted(p for p in directory.iterdir() if p.name.endswith(GENERATED_SUFFIXES))
    return found


def _plugin(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(
            f"protoc plugin not found on PATH: name={name!r} (pip install mypy-protobuf)"
        )
    return found


def generate(out_root: Path = REPO_ROOT) -> list[Path]:
    """Compile every ``.proto`` into ``out_root/aeromq/proto``; returns the files written."""
    protoc = importlib.import_module("grpc_tools.protoc")  # a dev dependency, untyped

    (out_root / PACKAGE_PATH).mkdir(parents=True, exist_ok=True)
    include = importlib.resources.files("grpc_tools") / "_proto"  # google/protobuf/*.proto
    args = [
        "grpc_tools.protoc",
        f"-I{REPO_ROOT}",
        f"-I{include}",
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
        f"--python_out={out_root}",
        f"--grpc_python_out={out_root}",
        f"--mypy_out={out_root}",
        f"--mypy_grpc_out={out_root}",
        *(str(PACKAGE_PATH / p.relative_to(PROTO_DIR)) for p in proto_files()),
    ]
    code = protoc.main(args)
    if code != 0:
        raise RuntimeError(f"protoc failed: exit_code={code}")
    return generated_files(out_root)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    out_root = Path(args[0]) if args else REPO_ROOT
    for path in generate(out_root):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
