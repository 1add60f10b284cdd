/*
 * The checker of aeromq.common.record_batch._native: ``check``, one pass over a batch.
 *
 * Why it exists
 * -------------
 * The broker checks every batch a producer sends before it appends the bytes (framing, CRC,
 * topic, body sizes, the tags against their hash column, the property strings). In Python that
 * costs about 13 microseconds per batch of 32 small messages, a large part of the broker's CPU
 * per message (issue 12 asks for it to be below Redis's); here it is one pass over the bytes,
 * with no object per record.
 *
 * What it does
 * ------------
 *   check(data, topic, max_body_length, max_body_total, max_records, check_crc, check_content)
 *       -> int: 0 for a well-formed batch, else the negative code of the first rule it breaks,
 *       in the order and with the meaning of ``BatchCheck`` (``checker.py``).
 *
 * ``checker.py`` keeps ``check_batch_py``, the same in Python: the reference (a test checks
 * that both agree on valid batches and on every kind of broken one), the fallback when the
 * module is not built, and the source of the ``key=value`` text of a refusal (the cold path).
 * UTF-8 is checked as strictly as Python's decoder (no overlong forms, no surrogates, nothing
 * above U+10FFFF), and a tag's hash is Java's ``String.hashCode`` over its UTF-16 code units.
 * Every read is bounds-checked against the buffer; bad input returns a code, never crashes.
 */
#include "_native.h"

#include "_crc32.h"
#include "_utf8.h"

enum {
    CHECK_OK = 0,
    CHECK_TRUNCATED = -1,
    CHECK_BAD_MAGIC = -2,
    CHECK_BAD_LENGTHS = -3,
    CHECK_BAD_CRC = -4,
    CHECK_BAD_TOPIC = -5,
    CHECK_EMPTY_BODY = -6,
    CHECK_BODY_TOO_LARGE = -7,
    CHECK_BAD_TAG = -8,
    CHECK_BAD_TAG_HASH = -9,
    CHECK_BAD_PROPERTIES = -10,
    CHECK_TOO_MANY_RECORDS = -11,
    CHECK_BAD_PRODUCER_STATE = -12,
    CHECK_BAD_COMPRESSION = -13,
    CHECK_FAILED = -100, /* a Python error is set (the CRC call failed) */
};

/* ------------------------------------------------------------------------------------------ */
/* check                                                                                       */

static int
is_bad_tag_byte(unsigned char c)
{
    /* Python's bytes pattern [\s|]: ASCII whitespace " \t\n\r\f\v", and '|' */
    return c == ' ' || c == '|' || (c >= 0x09 && c <= 0x0D);
}

/* The property column is (?:[^\x00-\x02]++\x01[^\x00-\x02]*+\x02)*+ (names not empty) and
 * UTF-8: one pass, the separators and the state on ASCII bytes, a UTF-8 sequence at a time on
 * the others (never a separator). */
static int
properties_valid(const unsigned char *p, Py_ssize_t length)
{
    enum { NAME_START, NAME, VALUE } state = NAME_START;
    const unsigned char *end = p + length;
    while (p < end) {
        unsigned char c = *p;
        if (c > 0x02) {
            if (c >= 0x80) {
                int size;
                if (utf8_next(p, end, &size) < 0)
                    return 0;
                p += size;
            } else {
                p++;
            }
            if (state == NAME_START)
                state = NAME;
            continue;
        }
        if (c == 0x01 && state == NAME)
            state = VALUE;
        else if (c == 0x02 && state == VALUE)
            state = NAME_START;
        else
            return 0;
        p++;
    }
    return state == NAME_START;
}

static int
check_buffer(const unsigned char *data, Py_ssize_t length, const unsigned char *topic,
             Py_ssize_t topic_size, int has_topic, long long max_body_length,
             long long max_body_total, long long max_records, int check_crc, int check_content)
{
    if (length < FIXED_HEADER_LENGTH)
        return CHECK_TRUNCATED;
    int32_t total = load_i32(data + TOTAL_LENGTH_OFFSET);
    uint32_t magic = load_u32(data + MAGIC_OFFSET);
    if (magic != BATCH_MAGIC)
        return CHECK_BAD_MAGIC;
    if ((Py_ssize_t)total != length)
        return CHECK_TRUNCATED;
    int32_t count = load_i32(data + RECORD_COUNT_OFFSET);
    if (count <= 0)
        return CHECK_BAD_LENGTHS;
    if ((long long)count > max_records)
        return CHECK_TOO_MANY_RECORDS;
    Py_ssize_t topic_length = batch_topic_length(data);
    unsigned attributes = batch_attributes(data);
    Py_ssize_t header_length = batch_header_length(topic_length, attributes);
    int64_t data_start = (int64_t)header_length + (int64_t)count * RECORD_OVERHEAD;
    if (data_start > (int64_t)length)
        return CHECK_BAD_LENGTHS;
    if (check_crc) {
        int64_t actual = crc32_of(data + CRC_START, length - CRC_START, crc32_clmul_on);
        if (actual < 0)
            return CHECK_FAILED;
        if ((uint32_t)actual != load_u32(data + CRC_OFFSET))
            return CHECK_BAD_CRC;
    }
    if (has_topic &&
        (topic_size != topic_length || memcmp(data + TOPIC_OFFSET, topic, (size_t)topic_size)))
        return CHECK_BAD_TOPIC;
    if (attributes & COMPRESSED_FLAG) {
        unsigned codec = (attributes & COMPRESSION_TYPE_MASK) >> COMPRESSION_TYPE_SHIFT;
        if (codec == 0 || codec > MAX_COMPRESSION_TYPE)
            return CHECK_BAD_COMPRESSION;
    }
    const unsigned char *hashes = data + header_length;
    const unsigned char *body_lengths = hashes + 8 * (Py_ssize_t)count;
    const unsigned char *tag_lengths = body_lengths + 4 * (Py_ssize_t)count;
    const unsigned char *property_lengths = tag_lengths + 4 * (Py_ssize_t)count;
    int64_t body_total = 0, tag_total = 0, property_total = 0;
    int32_t body_min = INT32_MAX, body_max = 0;
    for (int32_t i = 0; i < count; i++) {
        int32_t body = load_i32(body_lengths + 4 * i);
        int32_t tag = load_i32(tag_lengths + 4 * i);
        int32_t property = load_i32(property_lengths + 4 * i);
        if (body < 0 || tag < 0 || property < 0)
            return CHECK_BAD_LENGTHS;
        body_total += body;
        tag_total += tag;
        property_total += property;
        if (body < body_min)
            body_min = body;
        if (body > body_max)
            body_max = body;
    }
    /* (and the sum below cannot overflow); a compressed batch's bodies are longer than it */
    if ((body_total > (int64_t)length && !(attributes & COMPRESSED_FLAG)) ||
        tag_total > (int64_t)length || property_total > (int64_t)length)
        return CHECK_BAD_LENGTHS;
    /* the bytes the bodies take: their lengths' sum, or a compressed block's own length */
    int64_t bodies_length = body_total;
    if (attributes & COMPRESSED_FLAG) {
        bodies_length = (int64_t)length - data_start - tag_total - property_total;
        if (bodies_length <= 0)
            return CHECK_BAD_LENGTHS;
    }
    if (data_start + bodies_length + tag_total + property_total != (int64_t)length)
        return CHECK_BAD_LENGTHS;
    if (!check_content)
        return CHECK_OK;
    if (attributes & PRODUCER_STATE_FLAG) {
        const unsigned char *state = data + batch_producer_state(topic_length);
        if (load_i32(state + BASE_SEQUENCE_OFFSET) < 0 ||
            state[PRODUCER_STATE_RESERVED_OFFSET] || state[PRODUCER_STATE_RESERVED_OFFSET + 1])
            return CHECK_BAD_PRODUCER_STATE;
    }
    if (body_total > max_body_total)
        return CHECK_BODY_TOO_LARGE;
    if (body_min == 0)
        return CHECK_EMPTY_BODY;
    if ((long long)body_max > max_body_length)
        return CHECK_BODY_TOO_LARGE;
    if (!has_topic && !utf8_valid(data + TOPIC_OFFSET, topic_length))
        return CHECK_BAD_TOPIC;
    const unsigned char *tags = data + data_start + bodies_length;
    if (tag_total) {
        for (int64_t i = 0; i < tag_total; i++)
            if (is_bad_tag_byte(tags[i]))
                return CHECK_BAD_TAG;
        int mismatch = 0;
        const unsigned char *tag = tags;
        for (int32_t i = 0; i < count; i++) {
            int32_t size = load_i32(tag_lengths + 4 * i);
            int ok = 1;
            int64_t expected = size ? utf8_java_hash(tag, size, &ok) : 0;
            if (!ok)
                return CHECK_BAD_TAG;
            if (expected != load_i64(hashes + 8 * (Py_ssize_t)i))
                mismatch = 1;
            tag += size;
        }
        if (mismatch)
            return CHECK_BAD_TAG_HASH;
    } else {
        for (Py_ssize_t i = 0; i < 8 * (Py_ssize_t)count; i++)
            if (hashes[i])
                return CHECK_BAD_TAG_HASH;
    }
    if (property_total) {
        const unsigned char *properties = tags + tag_total;
        if (!properties_valid(properties, (Py_ssize_t)property_total))
            return CHECK_BAD_PROPERTIES;
        int64_t end = 0;
        for (int32_t i = 0; i < count; i++) {
            int32_t size = load_i32(property_lengths + 4 * i);
            end += size;
            if (size && properties[end - 1] != 0x02)
                return CHECK_BAD_PROPERTIES;
        }
    }
    return CHECK_OK;
}

PyObject *
batch_check(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "check() takes 7 arguments (%zd given)", nargs);
        return NULL;
    }
    Py_buffer data, topic;
    if (PyObject_GetBuffer(args[0], &data, PyBUF_SIMPLE) < 0)
        return NULL;
    int has_topic = args[1] != Py_None;
    if (has_topic && PyObject_GetBuffer(args[1], &topic, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    long long limits[3];
    int flags[2];
    int failed = 0;
    for (int i = 0; i < 3 && !failed; i++) {
        limits[i] = PyLong_AsLongLong(args[2 + i]);
        failed = limits[i] == -1 && PyErr_Occurred();
    }
    for (int i = 0; i < 2 && !failed; i++) {
        flags[i] = PyObject_IsTrue(args[5 + i]);
        failed = flags[i] < 0;
    }
    int code = CHECK_FAILED;
    if (!failed)
        code = check_buffer(data.buf, data.len, has_topic ? topic.buf : NULL,
                            has_topic ? topic.len : 0, has_topic, limits[0], limits[1],
                            limits[2], flags[0], flags[1]);
    if (has_topic)
        PyBuffer_Release(&topic);
    PyBuffer_Release(&data);
    if (code == CHECK_FAILED)
        return NULL;
    return PyLong_FromLong(code);
}
