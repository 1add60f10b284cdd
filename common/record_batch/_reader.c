/*
 * The reader of aeromq.common.record_batch._native: ``read``, a pull answer's record batches
 * checked and read into columns.
 *
 * Why it exists
 * -------------
 * A consumer reads every pulled message: check each stored batch's CRC, cut the answer to the
 * pulled offset range, and turn the records into columns (queue offsets, timestamps, where
 * each body, tag and property string is). In numpy that is a fixed number of calls per answer
 * plus a CRC call, a slice and a join per stored batch of 32 records, about half a microsecond
 * of CPU per message (issue 13's Spark reader, issue 12's ``poll_batch`` drain). Here it is
 * one pass in C, with no object per record or per stored batch.
 *
 * What it does
 * ------------
 *   read(data, queue_id, topic, offset, next_offset[, ranges])
 *       -> None when any batch of the answer fails a check (the Python reader,
 *          ``reader.py``, then reads it again with ``read_pulled_chunk_py`` and raises its
 *          exact error), else ``(kept, capacity, columns, headers)``: ``kept`` records in
 *          ``[offset, next_offset)`` of the answer's ``capacity`` records; ``columns`` holds,
 *          for ``capacity`` slots each (the first ``kept`` used), the i64 columns
 *          ``COLUMNS_I64`` then the i32 columns ``COLUMNS_I32`` (names and order in
 *          ``reader.py``); ``headers`` is each batch's fixed header (76 bytes), back to back
 *          (``HEADER_DTYPE``). With ``ranges`` (little-endian i64 (position, length) pairs, or
 *          None), the batches are not back to back from 0 but one at each position of ``data``
 *          (a local read: ``data`` is a mapped commit log file, ``pipeline/_local_reads.py``);
 *          each must lie in ``data``, after the one before it (ascending, none overlapping),
 *          and its length field must be its range's length. Positions in the columns are
 *          positions in ``data`` either way.
 *
 * The checks of ``read`` accept no batch the numpy reader refuses (framing, magic, CRC, queue
 * id, topic, record count, non-negative lengths that add up to the batch). Every read is
 * bounds-checked. A read of an answer of 64 KiB or more runs with the GIL released (that path
 * calls no Python API; the buffers are held), so a pull thread's read runs beside the
 * application's thread.
 */
#include "_native.h"

#include "_crc32.h"
#include "_reader.h"

/* The i64 columns of ``read``, then its i32 columns (as COLUMNS_I64 / COLUMNS_I32). */
enum {
    C_BATCH,
    C_INDEX,
    C_BODY_START,
    C_TAG_START,
    C_PROPERTIES_START,
    C_TAG_HASH,
    C_QUEUE_OFFSET,
    C_COMMIT_LOG_OFFSET,
    C_STORE_MS,
    C_BORN_MS,
    I64_COLUMNS
};
enum { C_BODY_LENGTH, C_TAG_LENGTH, C_PROPERTIES_LENGTH, C_BORN_DELTA_MS, C_FLAG, I32_COLUMNS };

/* What pass 2 of ``read`` fills, and how many records it kept. */
typedef struct {
    const unsigned char *data;
    const Frame *frames;
    Py_ssize_t batches;
    int64_t capacity, offset, next_offset, kept;
    char *columns, *headers;
    int clmul; /* the CRC path, chosen once (use_clmul may change it meanwhile) */
} Fill;

/* Pass 2 of ``read``: each batch's CRC and lengths checked, its header copied, and its records
 * whose queue offset is in ``[offset, next_offset)`` written into the columns (queue offsets
 * and the sums after them wrap as numpy's int64 do). 0, 1 when a batch fails, -1 with a Python
 * error set (only through the zlib fallback, which runs with the GIL). */
int
frame_check_clmul(void)
{
    return crc32_clmul_on;
}

int
frame_check(const unsigned char *data, const Frame *frame, int clmul, int64_t sums[3])
{
    const unsigned char *b = data + frame->position;
    int64_t crc = crc32_of(b + CRC_START, frame->length - CRC_START, clmul);
    if (crc < 0)
        return -1;
    if ((uint32_t)crc != load_u32(b + CRC_OFFSET))
        return 1;
    const int32_t count = frame->count;
    const FrameColumns c = frame_columns(data, frame);
    int negative = 0;
    for (int k = 0; k < 3; k++) {
        const unsigned char *column = c.body_lengths + 4 * (size_t)count * (size_t)k;
        sums[k] = 0;
        for (int32_t i = 0; i < count; i++) {
            int32_t value = load_i32(column + 4 * (size_t)i);
            negative |= value < 0;
            sums[k] += value;
        }
    }
    if (negative || c.data_start + sums[0] + sums[1] + sums[2] != frame->position + frame->length)
        return 1;
    return 0;
}

int
frames_find(Frames *found, const unsigned char *data, Py_ssize_t end,
            const unsigned char *ranges, Py_ssize_t range_count, long long queue_id,
            const unsigned char *topic, Py_ssize_t topic_length)
{
    const int has_ranges = ranges != NULL;
    found->read_bytes = has_ranges ? 0 : end;
    Py_ssize_t next_range = 0;
    int64_t range_end = 0; /* where the last range ended: the next starts there or later */
    for (Py_ssize_t position = 0; has_ranges ? next_range < range_count : position < end;) {
        if (has_ranges) {
            int64_t at = load_i64(ranges + 16 * next_range);
            int64_t span = load_i64(ranges + 16 * next_range + 8);
            next_range++;
            if (at < range_end || span < FIXED_HEADER_LENGTH || at > (int64_t)end - span)
                return 1;
            range_end = at + span;
            position = (Py_ssize_t)at;
            found->read_bytes += (Py_ssize_t)span;
            if (load_i32(data + position + TOTAL_LENGTH_OFFSET) != span)
                return 1;
        }
        if (end - position < FIXED_HEADER_LENGTH)
            return 1;
        const unsigned char *b = data + position;
        int32_t length = load_i32(b + TOTAL_LENGTH_OFFSET);
        int32_t count = load_i32(b + RECORD_COUNT_OFFSET);
        /* the columns follow the topic's padding, and the producer state when it has one */
        const Py_ssize_t header_length = batch_header_length(topic_length, batch_attributes(b));
        if (length < FIXED_HEADER_LENGTH || length > end - position
            || load_u32(b + MAGIC_OFFSET) != BATCH_MAGIC
            || (long long)load_i32(b + QUEUE_ID_OFFSET) != queue_id
            || batch_topic_length(b) != topic_length
            || count <= 0
            || (batch_attributes(b) & COMPRESSED_FLAG) /* inflated first, in Python */
            || (int64_t)header_length + (int64_t)RECORD_OVERHEAD * count > (int64_t)length
            || memcmp(b + TOPIC_OFFSET, topic, (size_t)topic_length) != 0)
            return 1;
        if (found->batches == found->allocated) {
            Py_ssize_t grown = found->allocated ? 2 * found->allocated : 64;
            Frame *more = found->frames == found->local ? PyMem_Malloc((size_t)grown * sizeof(Frame))
                                                        : PyMem_Realloc(found->frames, (size_t)grown * sizeof(Frame));
            if (more == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            if (found->frames == found->local)
                memcpy(more, found->local, sizeof(found->local));
            found->frames = more;
            found->allocated = grown;
        }
        Frame *frame = &found->frames[found->batches++];
        frame->position = position;
        frame->length = length;
        frame->columns = position + header_length;
        frame->count = count;
        found->records += count;
        position += length;
    }
    return 0;
}

static int
fill_columns(Fill *fill)
{
    const int64_t capacity = fill->capacity;
    int64_t *c64[I64_COLUMNS];
    int32_t *c32[I32_COLUMNS];
    for (int k = 0; k < I64_COLUMNS; k++)
        c64[k] = (int64_t *)(void *)(fill->columns + (size_t)(8 * k) * (size_t)capacity);
    for (int k = 0; k < I32_COLUMNS; k++)
        c32[k] = (int32_t *)(void *)(fill->columns + (size_t)capacity * (8 * I64_COLUMNS + 4 * k));
    int64_t kept = 0;
    fill->kept = 0;
    for (Py_ssize_t f = 0; f < fill->batches; f++) {
        const Frame *frame = &fill->frames[f];
        const unsigned char *b = fill->data + frame->position;
        int64_t sums[3];
        int checked = frame_check(fill->data, frame, fill->clmul, sums);
        if (checked != 0)
            return checked;
        memcpy(fill->headers + f * FIXED_HEADER_LENGTH, b, FIXED_HEADER_LENGTH);
        const int32_t count = frame->count;
        const FrameColumns c = frame_columns(fill->data, frame);
        const uint64_t base_offset = (uint64_t)load_i64(b + BASE_QUEUE_OFFSET_OFFSET);
        const uint64_t physical = (uint64_t)load_i64(b + BASE_PHYSICAL_OFFSET_OFFSET);
        const int64_t store_ms = load_i64(b + STORE_TIMESTAMP_OFFSET);
        const uint64_t born_ms = (uint64_t)load_i64(b + BASE_BORN_TIMESTAMP_OFFSET);
        int64_t body_at = c.data_start, tag_at = c.data_start + sums[0],
                property_at = c.data_start + sums[0] + sums[1];
        for (int32_t i = 0; i < count; i++) {
            int32_t body_length = load_i32(c.body_lengths + 4 * (size_t)i);
            int32_t tag_length = load_i32(c.tag_lengths + 4 * (size_t)i);
            int32_t property_length = load_i32(c.property_lengths + 4 * (size_t)i);
            int64_t queue_offset = (int64_t)(base_offset + (uint64_t)i);
            if (queue_offset >= fill->offset && queue_offset < fill->next_offset) {
                int32_t born_delta = load_i32(c.born_deltas + 4 * (size_t)i);
                c64[C_BATCH][kept] = f;
                c64[C_INDEX][kept] = i;
                c64[C_BODY_START][kept] = body_at;
                c64[C_TAG_START][kept] = tag_at;
                c64[C_PROPERTIES_START][kept] = property_at;
                c64[C_TAG_HASH][kept] = load_i64(c.hashes + 8 * (size_t)i);
                c64[C_QUEUE_OFFSET][kept] = queue_offset;
                c64[C_COMMIT_LOG_OFFSET][kept] = (int64_t)(physical + (uint64_t)i);
                c64[C_STORE_MS][kept] = store_ms;
                c64[C_BORN_MS][kept] = (int64_t)(born_ms + (uint64_t)(int64_t)born_delta);
                c32[C_BODY_LENGTH][kept] = body_length;
                c32[C_TAG_LENGTH][kept] = tag_length;
                c32[C_PROPERTIES_LENGTH][kept] = property_length;
                c32[C_BORN_DELTA_MS][kept] = born_delta;
                c32[C_FLAG][kept] = load_i32(c.flags + 4 * (size_t)i);
                kept++;
            }
            body_at += body_length;
            tag_at += tag_length;
            property_at += property_length;
        }
    }
    fill->kept = kept;
    return 0;
}

PyObject *
columns_read(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "read(data, queue_id, topic, offset, next_offset[, ranges])");
        return NULL;
    }
    PyObject *ranges_arg = nargs == 6 ? args[5] : Py_None;
    long long queue_id = PyLong_AsLongLong(args[1]);
    long long offset = PyLong_AsLongLong(args[3]);
    long long next_offset = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    Py_buffer data_view, topic_view;
    if (answer_buffers(args, &data_view, &topic_view) < 0)
        return NULL;
    Py_buffer ranges_view = {0};
    int has_ranges = ranges_arg != Py_None;
    if (has_ranges) {
        if (PyObject_GetBuffer(ranges_arg, &ranges_view, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&topic_view);
            PyBuffer_Release(&data_view);
            return NULL;
        }
        if (ranges_view.len % 16 != 0) {
            PyErr_SetString(PyExc_ValueError, "ranges are (position, length) pairs of i64");
            PyBuffer_Release(&ranges_view);
            PyBuffer_Release(&topic_view);
            PyBuffer_Release(&data_view);
            return NULL;
        }
    }
    const unsigned char *ranges = (const unsigned char *)ranges_view.buf;
    const Py_ssize_t range_count = has_ranges ? ranges_view.len / 16 : 0;
    const unsigned char *data = (const unsigned char *)data_view.buf;
    const Py_ssize_t end = data_view.len;
    const unsigned char *topic = (const unsigned char *)topic_view.buf;
    const Py_ssize_t topic_length = topic_view.len;
    PyObject *out = NULL, *columns = NULL, *headers = NULL;
    Frames found;
    frames_init(&found);
    int refused = 0;

    /* pass 1: framing, magic, queue and topic, record counts; with ``ranges``, one batch at
     * each (position, length), which must lie in ``data`` and be the batch's own length */
    refused = frames_find(&found, data, end, has_ranges ? ranges : NULL, range_count, queue_id,
                          topic, topic_length);
    if (refused < 0)
        goto done;
    const Frame *frames = found.frames;
    const Py_ssize_t batches = found.batches;
    const int64_t capacity = found.records;
    const Py_ssize_t read_bytes = found.read_bytes;
    if (refused) {
        out = Py_NewRef(Py_None);
        goto done;
    }

    /* pass 2: each batch's CRC and lengths, then its records in the range, into the columns */
    columns = PyBytes_FromStringAndSize(
        NULL, (Py_ssize_t)(capacity * (8 * I64_COLUMNS + 4 * I32_COLUMNS)));
    headers = PyBytes_FromStringAndSize(NULL, batches * FIXED_HEADER_LENGTH);
    if (columns == NULL || headers == NULL)
        goto done;
    Fill fill = {
        .data = data,
        .frames = frames,
        .batches = batches,
        .capacity = capacity,
        .offset = offset,
        .next_offset = next_offset,
        .columns = PyBytes_AS_STRING(columns),
        .headers = PyBytes_AS_STRING(headers),
        .clmul = crc32_clmul_on,
    };
    int status;
    if (fill.clmul && read_bytes >= RELEASE_GIL_BYTES) {
        /* no Python call on this path: other threads run meanwhile (the buffers are held) */
        Py_BEGIN_ALLOW_THREADS
        status = fill_columns(&fill);
        Py_END_ALLOW_THREADS
    } else {
        status = fill_columns(&fill);
    }
    if (status < 0)
        goto done;
    refused = status;
    if (refused) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    out = Py_BuildValue("LLOO", (long long)fill.kept, (long long)capacity, columns, headers);

done:
    Py_XDECREF(columns);
    Py_XDECREF(headers);
    frames_free(&found);
    if (has_ranges)
        PyBuffer_Release(&ranges_view);
    PyBuffer_Release(&topic_view);
    PyBuffer_Release(&data_view);
    return out;
}
