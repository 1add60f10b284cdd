"""Build hook for the eight native helpers: ``aeromq.transport.concurrent._atomic`` (atomic
operations on shared memory), ``aeromq.transport.logbuffer._gather`` (a vectored offer's check
and frame-by-frame copy), ``aeromq.transport.logbuffer._term_io`` (an image's poll and a
one-frame exclusive offer in one call), ``aeromq.common.record_batch._native`` (the record batch's passes:
encode, from messages or from columns, check, merge, a pull answer's batches read into columns,
their spans gathered into Arrow's layout; the session envelope of a send and of a pull, at both ends), ``aeromq.broker.store._batch_take`` (the first window
of the broker's unfiltered get), ``aeromq.broker.store._put_one`` (a one-record send's store append),
``aeromq.broker.store._index_put`` (the key index's queued entries written in one call) and ``aeromq.transport.driver.udp._datagram`` (a UDP socket's read that returns None when empty).

Everything else in aeromq is pure Python; see ``transport/concurrent/_atomic.c``,
``transport/logbuffer/_gather.c``, ``transport/logbuffer/_term_io.c`` (its reader and
writer beside it), ``common/record_batch/_native.c`` (one file per role beside
it, the layout in ``common/record_batch/record_batch.h``), ``broker/store/_batch_take.c``,
``broker/store/_put_one.c``, ``broker/store/_index_put.c`` and ``transport/driver/udp/_datagram.c`` for why each module exists
and what it does.
"""

from setuptools import Extension, setup

_FLAGS = ["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"]
_RECORD_BATCH = "common/record_batch/"

setup(
    ext_modules=[
        Extension(
            "aeromq.transport.concurrent._atomic",
            sources=["transport/concurrent/_atomic.c"],
            depends=["transport/concurrent/atomic_buffer.h"],
            extra_compile_args=_FLAGS,
        ),
        Extension(
            "aeromq.transport.logbuffer._gather",
            sources=["transport/logbuffer/_gather.c"],
            extra_compile_args=_FLAGS,
        ),
        Extension(
            "aeromq.transport.logbuffer._term_io",
            sources=[
                "transport/logbuffer/" + name
                for name in (
                    "_term_io.c",
                    "_image_reader.c",
                    "_image_round_robin.c",
                    "_exclusive_tail.c",
                )
            ],
            depends=["transport/logbuffer/_term_io.h", "transport/concurrent/atomic_buffer.h"],
            # one module of several files: their shared symbols stay inside it
            extra_compile_args=[*_FLAGS, "-fvisibility=hidden"],
        ),
        Extension(
            "aeromq.transport.driver.udp._datagram",
            sources=["transport/driver/udp/_datagram.c"],
            extra_compile_args=_FLAGS,
        ),
        Extension(
            "aeromq.common.record_batch._native",
            sources=[
                _RECORD_BATCH + name
                for name in (
                    "_native.c",
                    "_crc32.c",
                    "_encoder.c",
                    "_columns.c",
                    "_checker.c",
                    "_merger.c",
                    "_reader.c",
                    "_message_reader.c",
                    "_gather.c",
                    "_send_encode.c",
                    "_send_answer.c",
                    "_pull_envelope.c",
                    "_send_fields.c",
                )
            ],
            depends=[
                _RECORD_BATCH + name
                for name in (
                    "record_batch.h",
                    "_native.h",
                    "_crc32.h",
                    "_utf8.h",
                    "_reader.h",
                    "_protobuf_wire.h",
                )
            ],
            # one module of several files: their shared symbols stay inside it
            extra_compile_args=[*_FLAGS, "-fvisibility=hidden"],
        ),
        Extension(
            "aeromq.broker.store._batch_take",
            sources=["broker/store/_batch_take.c"],
            depends=[_RECORD_BATCH + "record_batch.h"],
            extra_compile_args=_FLAGS,
        ),
        Extension(
            "aeromq.broker.store._index_put",
            sources=["broker/store/_index_put.c"],
            extra_compile_args=_FLAGS,
        ),
        Extension(
            "aeromq.broker.store._put_one",
            sources=["broker/store/_put_one.c"],
            depends=[_RECORD_BATCH + "record_batch.h"],
            extra_compile_args=_FLAGS,
        ),
    ]
)
