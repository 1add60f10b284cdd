"""Compile a tree's hot modules with Cython, in place (the experiment of ``../round.md``).

``python cy_build.py TREE`` (Cython 3.0.11, ``pip install cython==3.0.11``): each module listed
below, as it is, with annotations not used as C types (``annotation_typing=False``) and functions
bound as Python's are, built beside its source, where the import system prefers it to the
``.py``. ``CY_ONLY=consumer,client`` limits it to those top-level folders. Not part of the
project: an experiment that measured slower (see ``../round.md``).
"""

from __future__ import annotations

import os
import sys

from Cython.Build import cythonize  # type: ignore[import-not-found]  # (not installed: an experiment)
from setuptools import Extension, setup  # type: ignore[import-untyped]  # (no stubs installed)

MODULES: dict[str, tuple[str, ...]] = {
    "consumer": (
        "consume_request_cache",
        "pull_task",
        "process_queue",
        "poller",
        "lite_pull_consumer",
        "_grpc_broker_api",
        "_pulled_messages",
        "message_batch",
        "assigned_queues",
        "positions",
        "commits",
        "offset_store",
        "_metrics",
        "_batch_message",
        "scheduler",
        "services",
    ),
    "client": (
        "_answer_readers",
        "_answer_dispatch",
        "_request_sender",
        "_session_state",
        "_back_to_back",
        "_sync_answer",
        "_pending_requests",
        "session",
        "message",
        "_answer_assembler",
        "scheduler",
        "_session_liveness",
    ),
    "producer": (
        "_one_send",
        "_answers",
        "_batch",
        "_routing",
        "_send_path",
        "_attempt",
        "_send_result",
        "_sequences",
        "_metrics",
        "_producer",
    ),
    "common": (
        "_message_id",
        "_pull_answer",
        "_pull_envelope",
        "_send_envelope",
        "_envelope",
    ),
    "broker/session": (
        "_agent",
        "_dispatch",
        "_answers",
        "_idle",
        "_answer_envelopes",
        "_session",
        "_table",
        "_counters",
    ),
    "broker/processor": (
        "pull",
        "send",
        "pull_hold",
    ),
    "broker/store": (
        "_put_path",
        "_arrival",
        "_get_path",
        "_reader",
        "_consume_queue",
        "_commit_log",
    ),
    "transport/concurrent": (
        "doorbell",
        "spin_predictor",
        "idle_strategy",
    ),
    "transport/client": (
        "subscription",
        "image",
        "publication",
        "exclusive_publication",
        "concurrent_publication",
    ),
}
"""The modules compiled, by folder (those on a message's path at 1,000 msgs/s)."""


def main() -> None:
    tree = sys.argv.pop(1)
    os.chdir(tree)
    only = os.environ.get("CY_ONLY")
    modules = [
        f"{folder}/{name}"
        for folder, names in MODULES.items()
        if not only or folder.split("/")[0] in only.split(",")
        for name in names
    ]
    extensions = [
        Extension("aeromq." + module.replace("/", "."), [f"aeromq/{module}.py"])
        for module in modules
    ]
    directives = {"annotation_typing": False, "binding": True, "always_allow_keywords": True}
    setup(
        name="cython-experiment",
        ext_modules=cythonize(
            extensions, nthreads=2, language_level=3, quiet=True, compiler_directives=directives
        ),
        script_args=["build_ext", "--inplace", "-j", "2"],
    )


if __name__ == "__main__":
    main()
