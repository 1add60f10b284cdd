"""Agrona's layer: shared-memory buffers, ring buffers, broadcast, counters, agents."""

from transport.concurrent.atomic_buffer import AtomicBuffer, MappedFile

__all__ = ["AtomicBuffer", "MappedFile"]
