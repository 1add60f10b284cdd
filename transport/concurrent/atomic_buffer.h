/*
 * The layout of an ``AtomicBufferBase`` object (transport/concurrent/_atomic.c), shared with the
 * native helpers that read and write log buffers in one call (transport/logbuffer/_term_io.c):
 * they take ``addr`` and ``capacity`` straight from the object instead of through the buffer
 * protocol, with the GIL held, so that a buffer cannot be released under them. ``addr`` is NULL
 * and ``capacity`` 0 once the buffer is released.
 */
#ifndef AEROMQ_ATOMIC_BUFFER_H
#define AEROMQ_ATOMIC_BUFFER_H

#include <Python.h>

typedef struct {
    PyObject_HEAD
    Py_buffer view;
    char *addr;
    Py_ssize_t capacity;
    Py_ssize_t exports;
    int has_view;
} AtomicBufferObject;

#endif
