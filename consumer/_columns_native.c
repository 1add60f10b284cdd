/*
 * aeromq.consumer._columns_native: a pull answer's record batches read into columns in C.
 *
 * Why it exists
 * -------------
 * A consumer reads every pulled message: check each stored batch's CRC, cut the answer to the
 * pulled offset range, and turn the records into columns (queue offsets, timestamps, bodies in
 * Arrow's binary layout, tags, the KEYS property). In numpy that is a fixed number of calls per
 * answer plus a CRC call, a slice and a join per stored batch of 32 records, about half a
 * microsecond of CPU per message (issue 13's Spark reader, issue 12's ``poll_batch`` drain).
 * Here each step is one pass in C, with no object per record or per stored batch.
 *
 * What it does
 * ------------
 *   read(data, queue_id, topic, offset, next_offset[, ranges])
 *       -> None when any batch of the answer fails a check (the Python reader,
 *          ``consumer/_pulled.py``, then reads it again and raises its exact error), else
 *          ``(kept, capacity, columns, headers)``: ``kept`` records in ``[offset, next_offset)``
 *          of the answer's ``capacity`` records; ``columns`` holds, for ``capacity`` slots each
 *          (the first ``kept`` used), the i64 columns ``COLUMNS_I64`` then the i32 columns
 *          ``COLUMNS_I32`` (names and order in ``consumer/_pulled.py``); ``headers`` is each
 *          batch's fixed header (76 bytes), back to back (``HEADER_DTYPE``). With ``ranges``
 *          (little-endian i64 (position, length) pairs, or None), the batches are not back to
 *          back from 0 but one at each position of ``data`` (a local read: ``data`` is a
 *          mapped commit log file, ``pipeline/_local_reads.py``); each must lie in ``data``,
 *          after the one before it (ascending, none overlapping), and its length field must be
 *          its range's length. Positions in the columns are
 *          positions in ``data`` either way.
 *   gather(parts, count, null_empty)
 *       -> ``(offsets, data, validity, null_count)``: the ``[start, start + length)`` spans of
 *          ``parts`` (``(buffer, starts i64 array, lengths i32 array)`` each, ``count`` spans in
 *          all) in Arrow's binary layout: ``count + 1`` i32 offsets, the bytes back to back, and
 *          with ``null_empty`` a validity bitmap of the non-empty spans (None when all are).
 *   crc32(data), use_clmul(on)
 *       -> the CRC as ``read`` computes it; whether the folding CRC was in use, and from now on
 *          only if ``on`` (the tests run both paths).
 *   find_property(needle, parts, count)
 *       -> the same four, of the value of the property whose ``name\x01`` is ``needle`` in each
 *          span of RocketMQ's property string (``name\x01value\x02`` pairs); null where absent.
 *
 * The checks of ``read`` accept no batch the Python reader refuses (framing, magic, CRC, queue
 * id, topic, record count, non-negative lengths that add up to the batch). The CRC-32 is zlib's
 * (``zlib.crc32``): with PCLMULQDQ (x86-64, checked at run time) the folding CRC of
 * ``common/_crc32.h``, else a call of Python's ``zlib.crc32``. Every read is
 * bounds-checked; integers in the batch are little-endian whatever the host. A read of an
 * answer, or a gather, of 64 KiB or more runs with the GIL released (that path calls no Python
 * API; the buffers are held), so a pull thread's read runs beside the application's thread.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../common/_crc32.h"

#define BATCH_MAGIC 0x31425141u
#define FIXED_HEADER_LENGTH 76
#define BASE_QUEUE_OFFSET_OFFSET 8
#define BASE_PHYSICAL_OFFSET_OFFSET 16
#define STORE_TIMESTAMP_OFFSET 24
#define QUEUE_ID_OFFSET 40
#define CRC_OFFSET 44
#define CRC_START 48
#define RECORD_COUNT_OFFSET 48
#define BASE_BORN_TIMESTAMP_OFFSET 56
#define TOPIC_LENGTH_OFFSET 74
#define TOPIC_OFFSET 76
#define RECORD_OVERHEAD 28

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

static inline uint32_t
load_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline int32_t
load_i32(const unsigned char *p)
{
    return (int32_t)load_u32(p);
}

static inline int64_t
load_i64(const unsigned char *p)
{
    return (int64_t)((uint64_t)load_u32(p) | (uint64_t)load_u32(p + 4) << 32);
}

/* ------------------------------------------------------------------------------------------ */
/* CRC-32 (zlib's)                                                                             */

/* crc32(data) -> int: zlib.crc32 of a bytes-like object, computed here (for the tests). */
static PyObject *
columns_crc32(PyObject *Py_UNUSED(module), PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int64_t crc = crc32_of((const unsigned char *)view.buf, view.len, crc32_clmul_on);
    PyBuffer_Release(&view);
    if (crc < 0)
        return NULL;
    return PyLong_FromLongLong(crc);
}

/* ------------------------------------------------------------------------------------------ */
/* read                                                                                        */

/* One batch's place, found by the first pass. */
typedef struct {
    Py_ssize_t position;
    Py_ssize_t length;
    Py_ssize_t columns; /* absolute position of its column block */
    int32_t count;
} Frame;

/* What pass 2 of ``read`` fills, and how many records it kept. */
typedef struct {
    const unsigned char *data;
    const Frame *frames;
    Py_ssize_t batches;
    int64_t capacity, offset, next_offset, kept;
    char *columns, *headers;
    int clmul; /* the CRC path, chosen once (use_clmul may change it meanwhile) */
} Fill;

/* Answers of at least this many bytes are read with the GIL released (when the CRC needs no
 * Python call): a pull thread's read then runs beside the application's thread. */
#define RELEASE_GIL_BYTES 65536

/* Pass 2 of ``read``: each batch's CRC and lengths checked, its header copied, and its records
 * whose queue offset is in ``[offset, next_offset)`` written into the columns (queue offsets
 * and the sums after them wrap as numpy's int64 do). 0, 1 when a batch fails, -1 with a Python
 * error set (only through the zlib fallback, which runs with the GIL). */
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
        int64_t crc = crc32_of(b + CRC_START, frame->length - CRC_START, fill->clmul);
        if (crc < 0)
            return -1;
        if ((uint32_t)crc != load_u32(b + CRC_OFFSET))
            return 1;
        memcpy(fill->headers + f * FIXED_HEADER_LENGTH, b, FIXED_HEADER_LENGTH);
        const int32_t count = frame->count;
        const unsigned char *hashes = fill->data + frame->columns;
        const unsigned char *body_lengths = hashes + 8 * (size_t)count;
        const unsigned char *tag_lengths = body_lengths + 4 * (size_t)count;
        const unsigned char *property_lengths = body_lengths + 8 * (size_t)count;
        const unsigned char *born_deltas = body_lengths + 12 * (size_t)count;
        const unsigned char *flags = body_lengths + 16 * (size_t)count;
        const int64_t data_start = frame->columns + (int64_t)RECORD_OVERHEAD * count;
        int64_t sums[3] = {0, 0, 0};
        int negative = 0;
        for (int k = 0; k < 3; k++) {
            const unsigned char *column = body_lengths + 4 * (size_t)count * (size_t)k;
            for (int32_t i = 0; i < count; i++) {
                int32_t value = load_i32(column + 4 * (size_t)i);
                negative |= value < 0;
                sums[k] += value;
            }
        }
        if (negative || data_start + sums[0] + sums[1] + sums[2] != frame->position + frame->length)
            return 1;
        const uint64_t base_offset = (uint64_t)load_i64(b + BASE_QUEUE_OFFSET_OFFSET);
        const uint64_t physical = (uint64_t)load_i64(b + BASE_PHYSICAL_OFFSET_OFFSET);
        const int64_t store_ms = load_i64(b + STORE_TIMESTAMP_OFFSET);
        const uint64_t born_ms = (uint64_t)load_i64(b + BASE_BORN_TIMESTAMP_OFFSET);
        int64_t body_at = data_start, tag_at = data_start + sums[0],
                property_at = data_start + sums[0] + sums[1];
        for (int32_t i = 0; i < count; i++) {
            int32_t body_length = load_i32(body_lengths + 4 * (size_t)i);
            int32_t tag_length = load_i32(tag_lengths + 4 * (size_t)i);
            int32_t property_length = load_i32(property_lengths + 4 * (size_t)i);
            int64_t queue_offset = (int64_t)(base_offset + (uint64_t)i);
            if (queue_offset >= fill->offset && queue_offset < fill->next_offset) {
                int32_t born_delta = load_i32(born_deltas + 4 * (size_t)i);
                c64[C_BATCH][kept] = f;
                c64[C_INDEX][kept] = i;
                c64[C_BODY_START][kept] = body_at;
                c64[C_TAG_START][kept] = tag_at;
                c64[C_PROPERTIES_START][kept] = property_at;
                c64[C_TAG_HASH][kept] = load_i64(hashes + 8 * (size_t)i);
                c64[C_QUEUE_OFFSET][kept] = queue_offset;
                c64[C_COMMIT_LOG_OFFSET][kept] = (int64_t)(physical + (uint64_t)i);
                c64[C_STORE_MS][kept] = store_ms;
                c64[C_BORN_MS][kept] = (int64_t)(born_ms + (uint64_t)(int64_t)born_delta);
                c32[C_BODY_LENGTH][kept] = body_length;
                c32[C_TAG_LENGTH][kept] = tag_length;
                c32[C_PROPERTIES_LENGTH][kept] = property_length;
                c32[C_BORN_DELTA_MS][kept] = born_delta;
                c32[C_FLAG][kept] = load_i32(flags + 4 * (size_t)i);
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

static PyObject *
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
    if (PyObject_GetBuffer(args[0], &data_view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[2], &topic_view, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&data_view);
        return NULL;
    }
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
    Py_ssize_t read_bytes = has_ranges ? 0 : end;
    const unsigned char *topic = (const unsigned char *)topic_view.buf;
    const Py_ssize_t topic_length = topic_view.len;
    const Py_ssize_t header_length = (FIXED_HEADER_LENGTH + topic_length + 7) & ~(Py_ssize_t)7;
    PyObject *out = NULL, *columns = NULL, *headers = NULL;
    Frame *frames = NULL;
    Py_ssize_t batches = 0, frame_capacity = 0;
    int64_t capacity = 0;
    int refused = 0;

    /* pass 1: framing, magic, queue and topic, record counts; with ``ranges``, one batch at
     * each (position, length), which must lie in ``data`` and be the batch's own length */
    Py_ssize_t next_range = 0;
    int64_t range_end = 0; /* where the last range ended: the next starts there or later */
    for (Py_ssize_t position = 0; has_ranges ? next_range < range_count : position < end;) {
        if (has_ranges) {
            int64_t at = load_i64(ranges + 16 * next_range);
            int64_t span = load_i64(ranges + 16 * next_range + 8);
            next_range++;
            if (at < range_end || span < FIXED_HEADER_LENGTH || at > (int64_t)end - span) {
                refused = 1;
                break;
            }
            range_end = at + span;
            position = (Py_ssize_t)at;
            read_bytes += (Py_ssize_t)span;
            if (load_i32(data + position) != span) {
                refused = 1;
                break;
            }
        }
        if (end - position < FIXED_HEADER_LENGTH) {
            refused = 1;
            break;
        }
        const unsigned char *b = data + position;
        int32_t length = load_i32(b);
        int32_t count = load_i32(b + RECORD_COUNT_OFFSET);
        if (length < FIXED_HEADER_LENGTH || length > end - position || load_u32(b + 4) != BATCH_MAGIC
            || (long long)load_i32(b + QUEUE_ID_OFFSET) != queue_id
            || (Py_ssize_t)(b[TOPIC_LENGTH_OFFSET] | b[TOPIC_LENGTH_OFFSET + 1] << 8) != topic_length
            || count <= 0
            || (int64_t)header_length + (int64_t)RECORD_OVERHEAD * count > (int64_t)length
            || memcmp(b + TOPIC_OFFSET, topic, (size_t)topic_length) != 0) {
            refused = 1;
            break;
        }
        if (batches == frame_capacity) {
            Py_ssize_t grown = frame_capacity ? 2 * frame_capacity : 64;
            Frame *more = PyMem_Realloc(frames, (size_t)grown * sizeof(Frame));
            if (more == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            frames = more;
            frame_capacity = grown;
        }
        frames[batches].position = position;
        frames[batches].length = length;
        frames[batches].columns = position + header_length;
        frames[batches].count = count;
        batches++;
        capacity += count;
        position += length;
    }
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
    PyMem_Free(frames);
    if (has_ranges)
        PyBuffer_Release(&ranges_view);
    PyBuffer_Release(&topic_view);
    PyBuffer_Release(&data_view);
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* gather and find_property                                                                    */

/* One part of ``parts``: its buffer, and its spans' starts (i64) and lengths (i32). */
typedef struct {
    Py_buffer buffer, starts, lengths;
    Py_ssize_t count;
} Part;

static void
parts_release(Part *parts, Py_ssize_t held)
{
    for (Py_ssize_t p = 0; p < held; p++) {
        PyBuffer_Release(&parts[p].buffer);
        PyBuffer_Release(&parts[p].starts);
        PyBuffer_Release(&parts[p].lengths);
    }
    PyMem_Free(parts);
}

/* ``parts`` (a list of 3-tuples) held as Parts, each span checked to lie in its buffer; NULL
 * with an error set. ``*held`` is how many to release. */
static Part *
parts_hold(PyObject *list, Py_ssize_t count, Py_ssize_t *held)
{
    *held = 0;
    if (!PyList_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "parts is a list of (buffer, starts, lengths)");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(list);
    Part *parts = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Part));
    if (parts == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t p = 0; p < n; p++) {
        PyObject *item = PyList_GET_ITEM(list, p);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            PyErr_SetString(PyExc_TypeError, "parts is a list of (buffer, starts, lengths)");
            return parts;
        }
        Part *part = &parts[p];
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 0), &part->buffer, PyBUF_SIMPLE) < 0)
            return parts;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 1), &part->starts, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            PyBuffer_Release(&part->buffer);
            return parts;
        }
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 2), &part->lengths, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            PyBuffer_Release(&part->buffer);
            PyBuffer_Release(&part->starts);
            return parts;
        }
        *held = p + 1;
        if (part->starts.itemsize != 8 || part->lengths.itemsize != 4
            || part->starts.len / 8 != part->lengths.len / 4) {
            PyErr_SetString(PyExc_ValueError, "starts are i64 and lengths i32, as many of each");
            return parts;
        }
        part->count = part->starts.len / 8;
        const int64_t *starts = part->starts.buf;
        const int32_t *lengths = part->lengths.buf;
        for (Py_ssize_t i = 0; i < part->count; i++) {
            if (starts[i] < 0 || lengths[i] < 0 || starts[i] + lengths[i] > part->buffer.len) {
                PyErr_SetString(PyExc_ValueError, "a span outside its buffer");
                return parts;
            }
        }
        total += part->count;
    }
    if (total != count) {
        PyErr_Format(PyExc_ValueError, "the parts hold %zd spans, not %zd", total, count);
        return parts;
    }
    return parts;
}

/* The four results of gather and find_property, from filled ``offsets`` and ``valid``. */
static PyObject *
layout_result(PyObject *offsets, PyObject *data, PyObject *validity, Py_ssize_t null_count)
{
    if (validity == NULL || null_count == 0)
        return Py_BuildValue("OOOn", offsets, data, Py_None, (Py_ssize_t)0);
    return Py_BuildValue("OOOn", offsets, data, validity, null_count);
}

static PyObject *
columns_gather(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "gather(parts, count, null_empty)");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    int null_empty = PyObject_IsTrue(args[2]);
    if ((count == -1 || null_empty < 0) && PyErr_Occurred())
        return NULL;
    Py_ssize_t held;
    Part *parts = parts_hold(args[0], count, &held);
    PyObject *out = NULL, *offsets = NULL, *data = NULL, *validity = NULL;
    if (parts == NULL || PyErr_Occurred())
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(args[0]);
    int64_t total = 0;
    for (Py_ssize_t p = 0; p < n; p++) {
        const int32_t *lengths = parts[p].lengths.buf;
        for (Py_ssize_t i = 0; i < parts[p].count; i++)
            total += lengths[i];
    }
    if (total > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "over 2 GiB of data in one column");
        goto done;
    }
    offsets = PyBytes_FromStringAndSize(NULL, 4 * (count + 1));
    data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (offsets == NULL || data == NULL)
        goto done;
    unsigned char *valid = NULL;
    if (null_empty) {
        validity = PyBytes_FromStringAndSize(NULL, (count + 7) / 8);
        if (validity == NULL)
            goto done;
        valid = (unsigned char *)PyBytes_AS_STRING(validity);
        memset(valid, 0, (size_t)(count + 7) / 8);
    }
    int32_t *offset_out = (int32_t *)(void *)PyBytes_AS_STRING(offsets);
    char *data_out = PyBytes_AS_STRING(data);
    int32_t at = 0;
    Py_ssize_t row = 0, null_count = 0;
    offset_out[0] = 0;
    PyThreadState *saved = total >= RELEASE_GIL_BYTES ? PyEval_SaveThread() : NULL;
    for (Py_ssize_t p = 0; p < n; p++) {
        const char *buffer = parts[p].buffer.buf;
        const int64_t *starts = parts[p].starts.buf;
        const int32_t *lengths = parts[p].lengths.buf;
        Py_ssize_t i = 0;
        while (i < parts[p].count) {
            /* a run of adjacent spans is one copy (a run is usually a whole stored batch) */
            Py_ssize_t j = i + 1;
            int64_t run_end = starts[i] + lengths[i];
            while (j < parts[p].count && starts[j] == run_end)
                run_end += lengths[j++];
            memcpy(data_out + at, buffer + starts[i], (size_t)(run_end - starts[i]));
            for (; i < j; i++, row++) {
                at += lengths[i];
                offset_out[row + 1] = at;
                if (valid != NULL) {
                    if (lengths[i])
                        valid[row >> 3] |= (unsigned char)(1u << (row & 7));
                    else
                        null_count++;
                }
            }
        }
    }
    if (saved != NULL)
        PyEval_RestoreThread(saved);
    out = layout_result(offsets, data, validity, null_count);

done:
    Py_XDECREF(offsets);
    Py_XDECREF(data);
    Py_XDECREF(validity);
    if (parts != NULL)
        parts_release(parts, held);
    return out;
}

static PyObject *
columns_find_property(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "find_property(needle, parts, count)");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[2]);
    if (count == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer needle_view;
    if (PyObject_GetBuffer(args[0], &needle_view, PyBUF_SIMPLE) < 0)
        return NULL;
    const char *needle = needle_view.buf;
    const Py_ssize_t needle_length = needle_view.len;
    Py_ssize_t held;
    Part *parts = parts_hold(args[1], count, &held);
    PyObject *out = NULL, *offsets = NULL, *data = NULL, *validity = NULL;
    int64_t *found = NULL; /* per row: value start, or -1; then value length */
    if (parts == NULL || PyErr_Occurred())
        goto done;
    if (needle_length == 0) {
        PyErr_SetString(PyExc_ValueError, "an empty property name");
        goto done;
    }
    found = PyMem_Malloc(sizeof(int64_t) * 2 * (size_t)(count ? count : 1));
    if (found == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n = PyList_GET_SIZE(args[1]);
    Py_ssize_t row = 0, null_count = 0;
    int64_t total = 0;
    for (Py_ssize_t p = 0; p < n; p++) {
        const char *buffer = parts[p].buffer.buf;
        const int64_t *starts = parts[p].starts.buf;
        const int32_t *lengths = parts[p].lengths.buf;
        for (Py_ssize_t i = 0; i < parts[p].count; i++, row++) {
            const char *pair = buffer + starts[i];
            const char *stop = pair + lengths[i];
            found[2 * row] = -1;
            /* pairs start at the span's start and after each \x02 */
            while (stop - pair > needle_length) {
                const char *pair_end = memchr(pair, 2, (size_t)(stop - pair));
                if (pair_end == NULL)
                    break;
                if (pair_end - pair >= needle_length && memcmp(pair, needle, (size_t)needle_length) == 0) {
                    found[2 * row] = (pair - buffer) + needle_length;
                    found[2 * row + 1] = pair_end - pair - needle_length;
                    total += found[2 * row + 1];
                    break;
                }
                pair = pair_end + 1;
            }
            if (found[2 * row] < 0)
                null_count++;
        }
    }
    if (total > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "over 2 GiB of data in one column");
        goto done;
    }
    offsets = PyBytes_FromStringAndSize(NULL, 4 * (count + 1));
    data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    validity = PyBytes_FromStringAndSize(NULL, (count + 7) / 8);
    if (offsets == NULL || data == NULL || validity == NULL)
        goto done;
    unsigned char *valid = (unsigned char *)PyBytes_AS_STRING(validity);
    memset(valid, 0, (size_t)(count + 7) / 8);
    int32_t *offset_out = (int32_t *)(void *)PyBytes_AS_STRING(offsets);
    char *data_out = PyBytes_AS_STRING(data);
    int32_t at = 0;
    offset_out[0] = 0;
    row = 0;
    for (Py_ssize_t p = 0; p < n; p++) {
        const char *buffer = parts[p].buffer.buf;
        for (Py_ssize_t i = 0; i < parts[p].count; i++, row++) {
            if (found[2 * row] >= 0) {
                memcpy(data_out + at, buffer + found[2 * row], (size_t)found[2 * row + 1]);
                at += (int32_t)found[2 * row + 1];
                valid[row >> 3] |= (unsigned char)(1u << (row & 7));
            }
            offset_out[row + 1] = at;
        }
    }
    out = layout_result(offsets, data, validity, null_count);

done:
    PyMem_Free(found);
    Py_XDECREF(offsets);
    Py_XDECREF(data);
    Py_XDECREF(validity);
    if (parts != NULL)
        parts_release(parts, held);
    PyBuffer_Release(&needle_view);
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* module                                                                                      */

static PyMethodDef methods[] = {
    {"read", (PyCFunction)(void (*)(void))columns_read, METH_FASTCALL,
     "read(data, queue_id, topic, offset, next_offset) -> None, or (kept, capacity, columns, "
     "headers): a pull answer's records in the range, as columns."},
    {"gather", (PyCFunction)(void (*)(void))columns_gather, METH_FASTCALL,
     "gather(parts, count, null_empty) -> (offsets, data, validity, null_count): spans in "
     "Arrow's binary layout."},
    {"find_property", (PyCFunction)(void (*)(void))columns_find_property, METH_FASTCALL,
     "find_property(needle, parts, count) -> (offsets, data, validity, null_count): a "
     "property's values in Arrow's string layout."},
    {"crc32", (PyCFunction)columns_crc32, METH_O,
     "crc32(data) -> int: zlib.crc32 of data, as read() computes it."},
    {"use_clmul", (PyCFunction)crc32_use_clmul, METH_O,
     "use_clmul(on) -> bool: whether the PCLMULQDQ CRC was in use; from now on only if on "
     "(and the CPU has it), else zlib.crc32."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "aeromq.consumer._columns_native",
    "A pull answer's record batches read into columns in C (see consumer/_columns_native.c).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit__columns_native(void)
{
    if (crc32_module_init() < 0)
        return NULL;
    return PyModule_Create(&module_def);
}
