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
