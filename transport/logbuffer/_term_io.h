/*
 * What the files of aeromq.transport.logbuffer._term_io share (the module's header comment, in
 * _term_io.c, says why it exists and what each call does): the log's constants, the types and
 * objects the module imports once, the bounds-checked access to ``AtomicBuffer``s through their
 * layout (transport/concurrent/atomic_buffer.h), and the reference-holding helpers of the types.
 * _image_reader.c holds ``ImageReader`` (the poll), _image_round_robin.c ``ImageRoundRobin``
 * (a poll of several images), _exclusive_tail.c ``ExclusiveTail`` (the offer). Symbols are hidden outside the module (-fvisibility=hidden).
 */
#ifndef AEROMQ_TERM_IO_H
#define AEROMQ_TERM_IO_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../concurrent/atomic_buffer.h"

#define PARTITION_COUNT 3
#define HDR_LENGTH 32
#define ALIGN_UP 31
#define ALIGN_DOWN (~(int64_t)31)
#define LOW_32 0xFFFFFFFFLL

/* imported once by the module's init (_term_io.c) */
extern PyTypeObject *AtomicBufferType;
extern PyObject *ACTION_ABORT;
extern PyObject *ACTION_BREAK;
extern PyObject *ACTION_COMMIT;
extern PyObject *STR_BUFFER;
extern PyObject *STR_OFFSET;

extern PyTypeObject ImageReaderType;
extern PyTypeObject ExclusiveTailType;
extern PyTypeObject ImageRoundRobinType;

/* Whether ``length`` bytes at ``index`` lie in the buffer, aligned to ``length`` (8 or 4). */
static inline int
fits_aligned(AtomicBufferObject *b, int64_t index, Py_ssize_t length)
{
    return b->addr != NULL && index >= 0 && index <= (int64_t)(b->capacity - length) &&
           ((uintptr_t)(b->addr + index) & (uintptr_t)(length - 1)) == 0;
}

static inline int
partition_index(int64_t position, int bits)
{
    int64_t index = (position >> bits) % PARTITION_COUNT;
    return (int)(index < 0 ? index + PARTITION_COUNT : index);
}

int raise_like(AtomicBufferObject *b, const char *name, int64_t index, PyObject *value);
int load_plain_i64(AtomicBufferObject *b, int64_t index, int64_t *out);
int store_release_i64(AtomicBufferObject *b, int64_t index, int64_t value);
int check_buffers(PyObject *const *items, Py_ssize_t n);
int take_term_buffers(PyObject *tuple, PyObject **out);

/* The first header word of the frame at ``index`` (acquire), or -1 with an error set. */
static inline int
load_word(AtomicBufferObject *b, int64_t index, int64_t *out)
{
    if (!fits_aligned(b, index, 8)) {
        return raise_like(b, "get_int64_volatile", index, NULL);
    }
    *out = __atomic_load_n((int64_t *)(b->addr + index), __ATOMIC_ACQUIRE);
    return 0;
}

/* The garbage collector's walks over a type's references, given as the addresses of its
 * ``PyObject *`` fields (each type lists its own). */
int refs_traverse(PyObject **const *refs, int count, visitproc visit, void *arg);
void refs_clear(PyObject **const *refs, int count);

#endif
