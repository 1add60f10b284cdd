"""Build hook for the one native helper: ``aeromq.transport.concurrent._atomic``.

Everything else in aeromq is pure Python; see ``transport/concurrent/_atomic.c`` for why this
module exists and what it does.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "aeromq.transport.concurrent._atomic",
            sources=["transport/concurrent/_atomic.c"],
            extra_compile_args=[
                "-O2",
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Wno-missing-field-initializers",
            ],
        )
    ]
)
