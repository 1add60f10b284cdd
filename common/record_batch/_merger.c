/*
 * The merger of aeromq.common.record_batch._native: ``merge``, one batch of several.
 *
 * Why it exists
 * -------------
 * A producer joins its waiting async sends into one request, as Kafka's record accumulator
 * does: their columns, bodies, tags and properties copied back to back, born deltas rebased,
 * one CRC. In Python each batch's columns are sliced and joined one by one; here it is one pass
 * of copies (0.28 us a message, docs/benchmarks.md).
 *
 * What it does
 * ------------
 *   merge(batches) -> bytes | None
 *       one batch of the records of several, as ``merge_batches`` (``merger.py``) documents
 *       it; None when they cannot be one batch; ``ValueError`` for a batch whose lengths do
 *       not fit its bytes. ``merge_batches_py`` beside it is the reference and the fallback.
 *       Batches with a producer state merge only when they are all of one producer and epoch
 *       and their sequences follow on (each starts where the one before ends): the merged
 *       batch has the first's state.
 */
#include "_native.h"

#include "_crc32.h"

#define MAX_MERGED 4096

static const Py_ssize_t column_widths[COLUMN_COUNT] = COLUMN_WIDTHS;

/* One batch's parts, as merge reads them: its record count, its base born time, and where its
 * columns, bodies, tags and properties start (offsets into its buffer). */
typedef struct {
    const unsigned char *data;
    Py_ssize_t length;
    int64_t count;
    int64_t born_ms;
    Py_ssize_t columns_at;
    Py_ssize_t bodies_at;
    Py_ssize_t body_bytes;
    Py_ssize_t tag_bytes;
} MergePart;

/* The sum of ``count`` little-endian i32 at ``p`` (none negative), or -1. */
static int64_t
sum_lengths(const unsigned char *p, int64_t count)
{
    int64_t total = 0;
    for (int64_t i = 0; i < count; i++) {
        int32_t v = load_i32(p + 4 * i);
        if (v < 0)
            return -1;
        total += v;
    }
    return total;
}

/* Read the framing of ``part`` (its header length is the first batch's): 0, or -1 with a
 * ValueError set when its lengths do not fit its buffer. */
static int
merge_part(MergePart *part, Py_ssize_t header_length, Py_ssize_t index)
{
    const unsigned char *d = part->data;
    Py_ssize_t length = part->length;
    if (length < header_length) {
        PyErr_Format(PyExc_ValueError, "merge: batch %zd shorter than its header: length=%zd",
                     index, length);
        return -1;
    }
    part->count = load_i32(d + RECORD_COUNT_OFFSET);
    part->born_ms = load_i64(d + BASE_BORN_TIMESTAMP_OFFSET);
    part->columns_at = header_length;
    int64_t count = part->count;
    if (count < 0 || count > (length - header_length) / RECORD_OVERHEAD) {
        PyErr_Format(PyExc_ValueError, "merge: batch %zd record count does not fit: count=%lld "
                     "length=%zd", index, (long long)count, length);
        return -1;
    }
    Py_ssize_t lengths_at = header_length + 8 * (Py_ssize_t)count;
    int64_t bodies = sum_lengths(d + lengths_at, count);
    int64_t tags = sum_lengths(d + lengths_at + 4 * count, count);
    part->bodies_at = header_length + RECORD_OVERHEAD * (Py_ssize_t)count;
    if (bodies < 0 || tags < 0 || bodies + tags > length - part->bodies_at) {
        PyErr_Format(PyExc_ValueError, "merge: batch %zd bodies and tags do not fit: "
                     "length=%zd", index, length);
        return -1;
    }
    part->body_bytes = (Py_ssize_t)bodies;
    part->tag_bytes = (Py_ssize_t)tags;
    return 0;
}

/* merge(batches) -> bytes | None: see ``merge_batches`` in merger.py. */
PyObject *
batch_merge(PyObject *module, PyObject *batches)
{
    (void)module;
    PyObject *fast = PySequence_Fast(batches, "merge() takes a sequence of batches");
    if (fast == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n < 1 || n > MAX_MERGED) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "merge: 1 to %d batches, not %zd", MAX_MERGED, n);
        return NULL;
    }
    Py_buffer *views = PyMem_Calloc((size_t)n, sizeof(Py_buffer));
    MergePart *parts = PyMem_Calloc((size_t)n, sizeof(MergePart));
    PyObject *result = NULL;
    Py_ssize_t held = 0;
    if (views == NULL || parts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; held < n; held++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(fast, held), &views[held],
                               PyBUF_SIMPLE) < 0)
            goto done;
        parts[held].data = views[held].buf;
        parts[held].length = views[held].len;
    }
    if (parts[0].length < FIXED_HEADER_LENGTH) {
        PyErr_Format(PyExc_ValueError, "merge: batch 0 shorter than a header: length=%zd",
                     parts[0].length);
        goto done;
    }
    const unsigned char *first = parts[0].data;
    Py_ssize_t header_length = batch_header_length_of(first);
    if (parts[0].length < header_length) {
        PyErr_Format(PyExc_ValueError, "merge: batch 0 shorter than its header: length=%zd",
                     parts[0].length);
        goto done;
    }
    /* the bytes every batch must share: born host to the end of the header, but for a
     * producer state's base sequence, which must follow on from the batch before */
    if (batch_attributes(first) & COMPRESSED_FLAG) { /* one block of bodies each: not joined */
        result = Py_NewRef(Py_None);
        goto done;
    }
    int stateful = (batch_attributes(first) & PRODUCER_STATE_FLAG) != 0;
    Py_ssize_t sequence_at = batch_producer_state(batch_topic_length(first)) + BASE_SEQUENCE_OFFSET;
    Py_ssize_t same_until = stateful ? sequence_at : header_length;
    int64_t sequence = stateful ? load_i32(first + sequence_at) : 0;
    int64_t base_ms = INT64_MAX, total_count = 0;
    Py_ssize_t total = header_length;
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char *d = parts[i].data;
        /* other attributes or topic length: another header layout, not one batch */
        if (parts[i].length >= FIXED_HEADER_LENGTH &&
            memcmp(d + ATTRIBUTES_OFFSET, first + ATTRIBUTES_OFFSET, 4) != 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (merge_part(&parts[i], header_length, i) < 0)
            goto done;
        /* one topic, born host, attributes and reconsume times: else not one batch */
        if (memcmp(d + RECONSUME_TIMES_OFFSET, first + RECONSUME_TIMES_OFFSET, 4) != 0 ||
            memcmp(d + BORN_HOST_OFFSET, first + BORN_HOST_OFFSET,
                   (size_t)(same_until - BORN_HOST_OFFSET)) != 0 ||
            (stateful && (load_i32(d + sequence_at) != (int32_t)sequence ||
                          memcmp(d + sequence_at + 4, first + sequence_at + 4, 4) != 0))) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        sequence = (sequence + parts[i].count) & MAX_SEQUENCE;
        if (parts[i].born_ms < base_ms)
            base_ms = parts[i].born_ms;
        total_count += parts[i].count;
        total += parts[i].length - header_length;
    }
    if (total_count > INT32_MAX || total > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "merge: too large: records=%lld length=%zd",
                     (long long)total_count, total);
        goto done;
    }
    /* every rebased born delta must stay an i32 */
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t shift = parts[i].born_ms - base_ms;
        if (shift == 0)
            continue;
        const unsigned char *deltas = parts[i].data + parts[i].columns_at;
        for (Py_ssize_t c = 0; c < BORN_DELTA_COLUMN; c++)
            deltas += column_widths[c] * parts[i].count;
        for (int64_t r = 0; r < parts[i].count; r++) {
            if ((int64_t)load_i32(deltas + 4 * r) + shift > INT32_MAX) {
                result = Py_NewRef(Py_None);
                goto done;
            }
        }
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL)
        goto done;
    unsigned char *w = (unsigned char *)PyBytes_AS_STRING(out);
    memcpy(w, first, (size_t)header_length);
    store_u32(w + TOTAL_LENGTH_OFFSET, (uint32_t)total);
    store_u32(w + RECORD_COUNT_OFFSET, (uint32_t)total_count);
    store_i64(w + BASE_BORN_TIMESTAMP_OFFSET, base_ms);
    unsigned char *at = w + header_length;
    for (Py_ssize_t c = 0; c < COLUMN_COUNT; c++) {
        for (Py_ssize_t i = 0; i < n; i++) {
            const unsigned char *src = parts[i].data + parts[i].columns_at;
            for (Py_ssize_t k = 0; k < c; k++)
                src += column_widths[k] * parts[i].count;
            size_t size = (size_t)(column_widths[c] * parts[i].count);
            int64_t shift = parts[i].born_ms - base_ms;
            if (c == BORN_DELTA_COLUMN && shift != 0) {
                for (int64_t r = 0; r < parts[i].count; r++)
                    store_u32(at + 4 * r, (uint32_t)(load_i32(src + 4 * r) + (int32_t)shift));
            } else {
                memcpy(at, src, size);
            }
            at += size;
        }
    }
    for (int section = 0; section < 3; section++) { /* bodies, tags, properties */
        for (Py_ssize_t i = 0; i < n; i++) {
            const MergePart *p = &parts[i];
            Py_ssize_t from = p->bodies_at, size = p->body_bytes;
            if (section == 1) {
                from += p->body_bytes;
                size = p->tag_bytes;
            } else if (section == 2) {
                from += p->body_bytes + p->tag_bytes;
                size = p->length - from;
            }
            memcpy(at, p->data + from, (size_t)size);
            at += size;
        }
    }
    int64_t crc = crc32_of(w + CRC_START, total - CRC_START, crc32_clmul_on);
    if (crc < 0) {
        Py_DECREF(out);
        goto done;
    }
    store_u32(w + CRC_OFFSET, (uint32_t)crc);
    result = out;
done:
    for (Py_ssize_t i = 0; i < held; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(parts);
    Py_DECREF(fast);
    return result;
}

