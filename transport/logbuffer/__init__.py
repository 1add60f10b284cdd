"""Aeron's log buffers: the shared-memory data plane of a stream.

A stream's log is one file of three terms and a metadata page
(:mod:`~transport.logbuffer.log_buffer_descriptor`, :class:`LogBuffers`). Writers append frames
(:mod:`~transport.logbuffer.frame_descriptor`) with a :class:`TermAppender` (many writers) or an
:class:`ExclusiveTermAppender` (one); readers deliver them with
:func:`transport.logbuffer.term_reader.read` and a reusable :class:`Header`; the assemblers put
fragmented messages back together. The scanner, unblocker, rebuilder and gap scanner serve the
driver (sender, liveness, receiver). Functions live in their modules, the classes and callback
types are here.
"""

from aeromq.transport.logbuffer.buffer_builder import BufferBuilder
from aeromq.transport.logbuffer.buffer_claim import BufferClaim
from aeromq.transport.logbuffer.buffer_vector import DirectBufferVector, validate_and_compute_length
from aeromq.transport.logbuffer.bytes_filler import BytesFiller
from aeromq.transport.logbuffer.controlled_fragment_assembler import ControlledFragmentAssembler
from aeromq.transport.logbuffer.exclusive_term_appender import ExclusiveTermAppender
from aeromq.transport.logbuffer.fragment_assembler import FragmentAssembler
from aeromq.transport.logbuffer.handlers import (
    ControlledFragmentHandler,
    ErrorHandler,
    FragmentHandler,
    ReservedValueSupplier,
)
from aeromq.transport.logbuffer.header import Header, HeaderWriter
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.logbuffer.log_metadata import LogMetadata
from aeromq.transport.logbuffer.term_appender import TermAppender
from aeromq.transport.logbuffer.term_gap_scanner import GapHandler
from aeromq.transport.logbuffer.term_unblocker import UnblockStatus

__all__ = [
    "BufferBuilder",
    "BufferClaim",
    "BytesFiller",
    "ControlledFragmentAssembler",
    "ControlledFragmentHandler",
    "DirectBufferVector",
    "ErrorHandler",
    "ExclusiveTermAppender",
    "FragmentAssembler",
    "FragmentHandler",
    "GapHandler",
    "Header",
    "HeaderWriter",
    "LogBuffers",
    "LogMetadata",
    "ReservedValueSupplier",
    "TermAppender",
    "UnblockStatus",
    "validate_and_compute_length",
]
