"""Build hook for the four native helpers: ``aeromq.transport.concurrent._atomic`` (atomic
operations on shared memory), ``aeromq.transport.logbuffer._gather`` (a vectored offer's check
and frame-by-frame copy), ``aeromq.common._batch_native`` (the record batch's encoder and
checker) and ``aeromq.consumer._columns_native`` (a pull answer's batches read into columns).

Everything else in aeromq is pure Python; see ``transport/concurrent/_atomic.c``,
``transport/logbuffer/_gather.c``, ``common/_batch_native.c`` and ``consumer/_columns_native.c``
for why each module exists and what it does.
"""

from setuptools import Extension, setup

_FLAGS = ["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"]

setup(
    ext_modules=[
        Extension(
            "aeromq.transport.concurrent._atomic",
            sources=["transport/concurrent/_atomic.c"],
            extra_compile_args=_FLAGS,
        ),
        Extension(
            "aeromq.transport.logbuffer._gather",
            sources=["transport/logbuffer/_gather.c"],
            extra_compile_args=_FLAGS,
        ),
        Extension(
            "aeromq.common._batch_native",
            sources=["common/_batch_native.c"],
            depends=["common/_crc32.h"],
            extra_compile_args=_FLAGS,
        ),
        Extension(
            "aeromq.consumer._columns_native",
            sources=["consumer/_columns_native.c"],
            depends=["common/_crc32.h"],
            extra_compile_args=_FLAGS,
        ),
    ]
)
