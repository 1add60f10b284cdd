/*
 * What the two readers of a pull answer share (_reader.c: into columns; _message_reader.c:
 * into MessageExt objects): pass 1, which finds each batch of the answer and checks its framing,
 * and each batch's CRC and length check (pass 2's first step). Both live in _reader.c.
 */
#ifndef AEROMQ_RECORD_BATCH_READER_H
#define AEROMQ_RECORD_BATCH_READER_H

#include "_native.h"

/* One batch's place, found by pass 1. */
typedef struct {
    Py_ssize_t position;
    Py_ssize_t length;
    Py_ssize_t columns; /* absolute position of its column block */
    int32_t count;
} Frame;

/* The batches pass 1 found: a few in place, more on the heap. */
typedef struct {
    Frame *frames;
    Py_ssize_t batches, allocated;
    int64_t records;       /* records of all the batches (in the pulled range or not) */
    Py_ssize_t read_bytes; /* bytes of the batches */
    Frame local[4];
} Frames;

static inline void
frames_init(Frames *found)
{
    found->frames = found->local;
    found->batches = 0;
    found->allocated = 4;
    found->records = 0;
    found->read_bytes = 0;
}

static inline void
frames_free(Frames *found)
{
    if (found->frames != found->local)
        PyMem_Free(found->frames);
}

/* Where a batch's columns are (``record_batch.h``'s layout: the tag hashes, then the body,
 * tag and property lengths, born deltas and flags), and where its variable data starts. */
typedef struct {
    const unsigned char *hashes, *body_lengths, *tag_lengths, *property_lengths, *born_deltas,
        *flags;
    int64_t data_start;
} FrameColumns;

static inline FrameColumns
frame_columns(const unsigned char *data, const Frame *frame)
{
    const size_t count = (size_t)frame->count;
    const unsigned char *body_lengths = data + frame->columns + 8 * count;
    return (FrameColumns){
        .hashes = data + frame->columns,
        .body_lengths = body_lengths,
        .tag_lengths = body_lengths + 4 * count,
        .property_lengths = body_lengths + 8 * count,
        .born_deltas = body_lengths + 12 * count,
        .flags = body_lengths + 16 * count,
        .data_start = frame->columns + (int64_t)RECORD_OVERHEAD * frame->count,
    };
}

/* The answer (``args[0]``) and the topic (``args[2]``) of a read's arguments as buffers: 0, or
 * -1 with a Python error set and neither held. */
static inline int
answer_buffers(PyObject *const *args, Py_buffer *data, Py_buffer *topic)
{
    if (PyObject_GetBuffer(args[0], data, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(args[2], topic, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(data);
        return -1;
    }
    return 0;
}

/* Pass 1: each batch of ``data`` (back to back, or one at each (position, length) pair of
 * ``ranges`` when not NULL) framed, of ``queue_id`` and ``topic``, uncompressed, with a record
 * count that fits. 0, 1 when a batch fails, -1 with a Python error set (no memory). */
int frames_find(Frames *found, const unsigned char *data, Py_ssize_t end,
                const unsigned char *ranges, Py_ssize_t range_count, long long queue_id,
                const unsigned char *topic, Py_ssize_t topic_length);

/* A batch's CRC, and its body, tag and property lengths: none negative, adding up to the
 * batch's end (their sums in ``sums``). 0, 1 when it fails, -1 with a Python error set (only
 * through the zlib fallback, which runs with the GIL). */
int frame_check(const unsigned char *data, const Frame *frame, int clmul, int64_t sums[3]);

/* The CRC path in use now (for ``frame_check``'s ``clmul``). */
int frame_check_clmul(void);

#endif /* AEROMQ_RECORD_BATCH_READER_H */
