/*
 * aeromq.common._batch_native: the record batch's encoder and checker in C.
 *
 * Why it exists
 * -------------
 * Every send crosses two loops over its records: the producer encodes the batch (lengths, tag
 * hashes, columns, the CRC) and the broker checks it (framing, CRC, topic, body sizes, the tags
 * against their hash column, the property strings) before it appends the bytes. In Python the
 * two cost about 30 and 13 microseconds per batch of 32 small messages, a large part of the
 * producer's and of the broker's CPU per message (issue 12 asks both to be below Redis's and
 * redis-py's). Here each is one pass over the bytes, with no object per record.
 *
 * What it does
 * ------------
 *   check(data, topic, max_body_length, max_body_total, max_records, check_crc, check_content)
 *       -> int: 0 for a well-formed batch, else the negative code of the first rule it breaks,
 *       in the order and with the meaning of ``BatchCheck`` (``common/_record_batch.py``).
 *   encode(topic, bodies, tags, properties, property_lengths, flags, born_timestamp_ms,
 *          born_deltas_ms, born_host, reconsume_times, attributes) -> bytearray
 *       the batch, as ``encode_batch`` documents it.
 *   use_clmul(on) -> bool
 *       whether the folding CRC was in use; from now on only if ``on`` (the tests run both).
 *   merge(batches) -> bytes | None
 *       one batch of the records of several, as ``merge_batches`` documents it (a producer's
 *       waiting sends joined into one request): columns, bodies, tags and properties copied
 *       back to back, born deltas rebased, one CRC; None when they cannot be one batch.
 *   take(entries, view, view_length, file_start, topic, queue_id, first_offset, max_bytes)
 *       -> (count, total_bytes, last_position, full, pieces) | None
 *       the broker's unfiltered get over consume-queue entries (``broker/store/_reader.py``,
 *       ``MessageReader._take_checked``): whole batches within max_bytes, each header checked
 *       against its entries, as slices of the segment's view; about 25 us of numpy steps per
 *       pull in Python, a large part of the broker's CPU per pull of a caught-up consumer.
 *
 * ``common/_record_batch.py`` keeps the pure-Python versions: they are the reference (a test
 * checks that both agree on valid batches and on every kind of broken one), the fallback when
 * this module is not built, and the source of the ``key=value`` text of a refusal (the cold
 * path). The layout is documented there, not here. UTF-8 is checked as strictly as Python's
 * decoder (no overlong forms, no surrogates, nothing above U+10FFFF), and a tag's hash is Java's
 * ``String.hashCode`` over its UTF-16 code units. The CRC-32 is zlib's: the folding CRC of
 * ``_crc32.h`` where the CPU has PCLMULQDQ (about five times faster on a 20 KB batch), else a
 * call of Python's ``zlib.crc32`` (no link-time dependency either way). Every read is
 * bounds-checked against the buffer; bad input returns a code (check) or raises (encode),
 * never crashes. Integers in the batch are little-endian whatever the host.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_crc32.h"

#define BATCH_MAGIC 0x31425141u
#define FIXED_HEADER_LENGTH 76
#define TOTAL_LENGTH_OFFSET 0
#define MAGIC_OFFSET 4
#define BASE_QUEUE_OFFSET_OFFSET 8
#define BASE_PHYSICAL_OFFSET_OFFSET 16
#define QUEUE_ID_OFFSET 40
#define CRC_OFFSET 44
#define CRC_START 48
#define RECORD_COUNT_OFFSET 48
#define RECONSUME_TIMES_OFFSET 52
#define BASE_BORN_TIMESTAMP_OFFSET 56
#define BORN_HOST_OFFSET 64
#define ATTRIBUTES_OFFSET 72
#define TOPIC_LENGTH_OFFSET 74
#define TOPIC_OFFSET 76
#define RECORD_OVERHEAD 28
#define MAX_TOPIC_LENGTH 255

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
    CHECK_FAILED = -100, /* a Python error is set (the CRC call failed) */
};

static PyObject *struct_error = NULL;

/* ------------------------------------------------------------------------------------------ */
/* little-endian access                                                                        */

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

static inline void
store_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static inline void
store_i64(unsigned char *p, int64_t v)
{
    store_u32(p, (uint32_t)(uint64_t)v);
    store_u32(p + 4, (uint32_t)((uint64_t)v >> 32));
}

/* ------------------------------------------------------------------------------------------ */
/* UTF-8 and Java's hashCode                                                                   */

/* Decode one strictly valid UTF-8 sequence at p (< end): its code point, and its length in
 * *size; -1 when the bytes are not UTF-8 (Python's decoder refuses the same). */
static inline int32_t
utf8_next(const unsigned char *p, const unsigned char *end, int *size)
{
    unsigned char c = p[0];
    if (c < 0x80) {
        *size = 1;
        return c;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        if (end - p < 2 || (p[1] & 0xC0) != 0x80)
            return -1;
        *size = 2;
        return (int32_t)(c & 0x1F) << 6 | (p[1] & 0x3F);
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (end - p < 3)
            return -1;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c == 0xE0)
            lo = 0xA0; /* no overlong forms */
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
        if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80)
            return -1;
        *size = 3;
        return (int32_t)(c & 0x0F) << 12 | (int32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (end - p < 4)
            return -1;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c == 0xF0)
            lo = 0x90; /* no overlong forms */
        else if (c == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
        if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return -1;
        *size = 4;
        return (int32_t)(c & 0x07) << 18 | (int32_t)(p[1] & 0x3F) << 12 |
               (int32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
    }
    return -1;
}

static int
utf8_valid(const unsigned char *p, Py_ssize_t length)
{
    const unsigned char *end = p + length;
    while (p < end) {
        if (*p < 0x80) {
            p++;
            continue;
        }
        int size;
        if (utf8_next(p, end, &size) < 0)
            return 0;
        p += size;
    }
    return 1;
}

/* Fold one code point into a Java hashCode (a code point above U+FFFF is two UTF-16 units). */
static inline uint32_t
java_hash_step(uint32_t h, uint32_t cp)
{
    if (cp < 0x10000)
        return 31u * h + cp;
    cp -= 0x10000;
    h = 31u * h + (0xD800u + (cp >> 10));
    return 31u * h + (0xDC00u + (cp & 0x3FFu));
}

/* The Java hashCode of the UTF-8 at p, as a signed 32-bit value widened to 64 bits; sets *ok
 * to 0 when the bytes are not UTF-8. */
static int64_t
utf8_java_hash(const unsigned char *p, Py_ssize_t length, int *ok)
{
    const unsigned char *end = p + length;
    uint32_t h = 0;
    while (p < end) {
        int size;
        int32_t cp = utf8_next(p, end, &size);
        if (cp < 0) {
            *ok = 0;
            return 0;
        }
        h = java_hash_step(h, (uint32_t)cp);
        p += size;
    }
    *ok = 1;
    return (int64_t)(int32_t)h;
}

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
    int32_t total = load_i32(data);
    uint32_t magic = load_u32(data + 4);
    if (magic != BATCH_MAGIC)
        return CHECK_BAD_MAGIC;
    if ((Py_ssize_t)total != length)
        return CHECK_TRUNCATED;
    int32_t count = load_i32(data + RECORD_COUNT_OFFSET);
    if (count <= 0)
        return CHECK_BAD_LENGTHS;
    if ((long long)count > max_records)
        return CHECK_TOO_MANY_RECORDS;
    Py_ssize_t topic_length = (Py_ssize_t)data[TOPIC_LENGTH_OFFSET] |
                              (Py_ssize_t)data[TOPIC_LENGTH_OFFSET + 1] << 8;
    Py_ssize_t header_length = (FIXED_HEADER_LENGTH + topic_length + 7) & ~(Py_ssize_t)7;
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
    if (body_total > (int64_t)length || tag_total > (int64_t)length ||
        property_total > (int64_t)length) /* (and the sum below cannot overflow) */
        return CHECK_BAD_LENGTHS;
    if (data_start + body_total + tag_total + property_total != (int64_t)length)
        return CHECK_BAD_LENGTHS;
    if (!check_content)
        return CHECK_OK;
    if (body_total > max_body_total)
        return CHECK_BODY_TOO_LARGE;
    if (body_min == 0)
        return CHECK_EMPTY_BODY;
    if ((long long)body_max > max_body_length)
        return CHECK_BODY_TOO_LARGE;
    if (!has_topic && !utf8_valid(data + TOPIC_OFFSET, topic_length))
        return CHECK_BAD_TOPIC;
    const unsigned char *tags = data + data_start + body_total;
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

static PyObject *
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

/* ------------------------------------------------------------------------------------------ */
/* encode                                                                                      */

static int
as_int64(PyObject *value, int64_t low, int64_t high, char format, int64_t *out)
{
    if (!PyLong_Check(value)) {
        PyErr_SetString(struct_error, "required argument is not an integer");
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < low || v > high) {
        PyErr_Format(struct_error, "'%c' format requires %lld <= number <= %lld", format,
                     (long long)low, (long long)high);
        return -1;
    }
    *out = v;
    return 0;
}

/* A tuple of the items of an optional sequence of ``count`` values, or NULL for None. A tuple,
 * not the caller's list: nothing it holds can change between the passes of the encoder. */
static int
optional_items(PyObject *value, Py_ssize_t count, const char *name, PyObject **fast)
{
    *fast = NULL;
    if (value == Py_None)
        return 0;
    *fast = PySequence_Tuple(value);
    if (*fast == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s must be a sequence", name);
        }
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(*fast) != count) {
        PyErr_Format(struct_error, "%s: expected %zd items, got %zd", name, count,
                     PySequence_Fast_GET_SIZE(*fast));
        Py_CLEAR(*fast);
        return -1;
    }
    return 0;
}

typedef struct {
    Py_buffer *bodies;        /* count views, held until the end */
    Py_ssize_t bodies_held;
    Py_buffer *properties;    /* count views, or one (joined) */
    Py_ssize_t properties_held;
    PyObject *bodies_fast, *tags_fast, *properties_fast, *lengths_fast, *flags_fast,
        *deltas_fast;
} EncodeState;

static void
encode_release(EncodeState *s)
{
    for (Py_ssize_t i = 0; i < s->bodies_held; i++)
        PyBuffer_Release(&s->bodies[i]);
    for (Py_ssize_t i = 0; i < s->properties_held; i++)
        PyBuffer_Release(&s->properties[i]);
    PyMem_Free(s->bodies);
    PyMem_Free(s->properties);
    Py_XDECREF(s->bodies_fast);
    Py_XDECREF(s->tags_fast);
    Py_XDECREF(s->properties_fast);
    Py_XDECREF(s->lengths_fast);
    Py_XDECREF(s->flags_fast);
    Py_XDECREF(s->deltas_fast);
}

static PyObject *
batch_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 11) {
        PyErr_Format(PyExc_TypeError, "encode() takes 11 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *topic_obj = args[0], *bodies_obj = args[1], *tags_obj = args[2],
             *properties_obj = args[3], *lengths_obj = args[4], *flags_obj = args[5],
             *born_obj = args[6], *deltas_obj = args[7], *host_obj = args[8],
             *reconsume_obj = args[9], *attributes_obj = args[10];
    EncodeState s;
    memset(&s, 0, sizeof(s));
    PyObject *out = NULL;
    Py_buffer topic, host;
    int topic_held = 0, host_held = 0;
    int64_t born_ms, reconsume, attributes;

    if (PyObject_GetBuffer(topic_obj, &topic, PyBUF_SIMPLE) < 0)
        goto done;
    topic_held = 1;
    if (topic.len > MAX_TOPIC_LENGTH) {
        PyErr_Format(PyExc_ValueError, "topic longer than %d bytes: %zd", MAX_TOPIC_LENGTH,
                     topic.len);
        goto done;
    }
    if (PyObject_GetBuffer(host_obj, &host, PyBUF_SIMPLE) < 0)
        goto done;
    host_held = 1;
    if (as_int64(born_obj, INT64_MIN, INT64_MAX, 'q', &born_ms) < 0 ||
        as_int64(reconsume_obj, INT32_MIN, INT32_MAX, 'i', &reconsume) < 0 ||
        as_int64(attributes_obj, 0, 0xFFFF, 'H', &attributes) < 0)
        goto done;
    s.bodies_fast = PySequence_Tuple(bodies_obj);
    if (s.bodies_fast == NULL)
        goto done;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(s.bodies_fast);
    if (count == 0) {
        PyErr_SetString(PyExc_ValueError, "a batch holds at least one record");
        goto done;
    }
    if (count > INT32_MAX / RECORD_OVERHEAD) {
        PyErr_Format(struct_error, "too many records: %zd", count);
        goto done;
    }
    int joined = lengths_obj != Py_None;
    if (optional_items(tags_obj, count, "tags", &s.tags_fast) < 0 ||
        optional_items(flags_obj, count, "flags", &s.flags_fast) < 0 ||
        optional_items(deltas_obj, count, "born_deltas_ms", &s.deltas_fast) < 0)
        goto done;
    if (joined) {
        if (optional_items(lengths_obj, count, "property_lengths", &s.lengths_fast) < 0)
            goto done;
    } else if (properties_obj != Py_None && PyObject_CheckBuffer(properties_obj)) {
        PyErr_SetString(PyExc_ValueError, "properties joined in one bytes need property_lengths");
        goto done;
    } else if (optional_items(properties_obj, count, "properties", &s.properties_fast) < 0)
        goto done;

    s.bodies = PyMem_Calloc((size_t)count, sizeof(Py_buffer));
    if (s.bodies == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject **bodies = PySequence_Fast_ITEMS(s.bodies_fast);
    int64_t body_total = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (PyObject_GetBuffer(bodies[i], &s.bodies[i], PyBUF_SIMPLE) < 0)
            goto done;
        s.bodies_held++;
        if (s.bodies[i].len > INT32_MAX) {
            PyErr_SetString(struct_error, "a body is longer than an i32");
            goto done;
        }
        body_total += s.bodies[i].len;
    }

    /* tags: UTF-8 from the str's cache, the hash from its code points */
    PyObject **tags = s.tags_fast ? PySequence_Fast_ITEMS(s.tags_fast) : NULL;
    int64_t tag_total = 0;
    if (tags != NULL) {
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *tag = tags[i];
            if (tag == Py_None)
                continue;
            if (!PyUnicode_Check(tag)) {
                PyErr_Format(PyExc_TypeError, "a tag must be a str or None, not %.100s",
                             Py_TYPE(tag)->tp_name);
                goto done;
            }
            Py_ssize_t size;
            if (PyUnicode_AsUTF8AndSize(tag, &size) == NULL)
                goto done;
            tag_total += size;
        }
    }

    Py_ssize_t property_parts = 0;
    int64_t property_total = 0;
    if (joined) {
        s.properties = PyMem_Calloc(1, sizeof(Py_buffer));
        if (s.properties == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        if (PyObject_GetBuffer(properties_obj, &s.properties[0], PyBUF_SIMPLE) < 0)
            goto done;
        s.properties_held = property_parts = 1;
        PyObject **lengths = PySequence_Fast_ITEMS(s.lengths_fast);
        int64_t sum = 0;
        for (Py_ssize_t i = 0; i < count; i++) {
            int64_t v;
            if (as_int64(lengths[i], 0, INT32_MAX, 'i', &v) < 0)
                goto done;
            sum += v;
        }
        if (sum != s.properties[0].len) {
            PyErr_Format(PyExc_ValueError,
                         "the property lengths do not add up: sum=%lld length=%zd",
                         (long long)sum, s.properties[0].len);
            goto done;
        }
        property_total = sum;
    } else if (s.properties_fast != NULL) {
        s.properties = PyMem_Calloc((size_t)count, sizeof(Py_buffer));
        if (s.properties == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        PyObject **items = PySequence_Fast_ITEMS(s.properties_fast);
        for (Py_ssize_t i = 0; i < count; i++) {
            if (PyObject_GetBuffer(items[i], &s.properties[i], PyBUF_SIMPLE) < 0)
                goto done;
            s.properties_held++;
            if (s.properties[i].len > INT32_MAX) {
                PyErr_SetString(struct_error, "properties longer than an i32");
                goto done;
            }
            property_total += s.properties[i].len;
        }
        property_parts = count;
    }

    Py_ssize_t header_length = (FIXED_HEADER_LENGTH + topic.len + 7) & ~(Py_ssize_t)7;
    int64_t total = (int64_t)header_length + (int64_t)count * RECORD_OVERHEAD + body_total +
                    tag_total + property_total;
    if (total > INT32_MAX) {
        PyErr_Format(struct_error, "the batch is longer than an i32: %lld", (long long)total);
        goto done;
    }
    out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (out == NULL)
        goto done;
    unsigned char *b = (unsigned char *)PyByteArray_AS_STRING(out);
    memset(b, 0, (size_t)header_length);
    store_u32(b, (uint32_t)total);
    store_u32(b + 4, BATCH_MAGIC);
    store_u32(b + RECORD_COUNT_OFFSET, (uint32_t)count);
    store_u32(b + RECONSUME_TIMES_OFFSET, (uint32_t)reconsume);
    store_i64(b + BASE_BORN_TIMESTAMP_OFFSET, born_ms);
    memcpy(b + BORN_HOST_OFFSET, host.buf, (size_t)(host.len < 8 ? host.len : 8));
    b[ATTRIBUTES_OFFSET] = (unsigned char)attributes;
    b[ATTRIBUTES_OFFSET + 1] = (unsigned char)(attributes >> 8);
    b[TOPIC_LENGTH_OFFSET] = (unsigned char)topic.len;
    b[TOPIC_LENGTH_OFFSET + 1] = 0;
    memcpy(b + TOPIC_OFFSET, topic.buf, (size_t)topic.len);

    unsigned char *hash_col = b + header_length;
    unsigned char *body_col = hash_col + 8 * count;
    unsigned char *tag_col = body_col + 4 * count;
    unsigned char *property_col = tag_col + 4 * count;
    unsigned char *delta_col = property_col + 4 * count;
    unsigned char *flag_col = delta_col + 4 * count;
    unsigned char *cursor = flag_col + 4 * count;
    PyObject **flags = s.flags_fast ? PySequence_Fast_ITEMS(s.flags_fast) : NULL;
    PyObject **deltas = s.deltas_fast ? PySequence_Fast_ITEMS(s.deltas_fast) : NULL;
    PyObject **lengths = s.lengths_fast ? PySequence_Fast_ITEMS(s.lengths_fast) : NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t flag = 0, delta = 0, property_length = 0, tag_length = 0, hash = 0;
        if (flags != NULL && as_int64(flags[i], INT32_MIN, INT32_MAX, 'i', &flag) < 0)
            goto fail;
        if (deltas != NULL && as_int64(deltas[i], INT32_MIN, INT32_MAX, 'i', &delta) < 0)
            goto fail;
        if (lengths != NULL)
            property_length = PyLong_AsLongLong(lengths[i]); /* checked above */
        else if (property_parts)
            property_length = s.properties[i].len;
        if (tags != NULL && tags[i] != Py_None) {
            PyObject *tag = tags[i];
            Py_ssize_t size;
            PyUnicode_AsUTF8AndSize(tag, &size); /* cached above */
            tag_length = size;
            if (size) {
                int kind = PyUnicode_KIND(tag);
                const void *chars = PyUnicode_DATA(tag);
                Py_ssize_t n = PyUnicode_GET_LENGTH(tag);
                uint32_t h = 0;
                for (Py_ssize_t j = 0; j < n; j++)
                    h = java_hash_step(h, PyUnicode_READ(kind, chars, j));
                hash = (int64_t)(int32_t)h;
            }
        }
        store_i64(hash_col + 8 * i, hash);
        store_u32(body_col + 4 * i, (uint32_t)s.bodies[i].len);
        store_u32(tag_col + 4 * i, (uint32_t)tag_length);
        store_u32(property_col + 4 * i, (uint32_t)property_length);
        store_u32(delta_col + 4 * i, (uint32_t)delta);
        store_u32(flag_col + 4 * i, (uint32_t)flag);
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        memcpy(cursor, s.bodies[i].buf, (size_t)s.bodies[i].len);
        cursor += s.bodies[i].len;
    }
    if (tags != NULL) {
        for (Py_ssize_t i = 0; i < count; i++) {
            if (tags[i] == Py_None)
                continue;
            Py_ssize_t size;
            const char *utf8 = PyUnicode_AsUTF8AndSize(tags[i], &size);
            memcpy(cursor, utf8, (size_t)size);
            cursor += size;
        }
    }
    for (Py_ssize_t i = 0; i < property_parts; i++) {
        memcpy(cursor, s.properties[i].buf, (size_t)s.properties[i].len);
        cursor += s.properties[i].len;
    }
    int64_t crc = crc32_of(b + CRC_START, (Py_ssize_t)total - CRC_START, crc32_clmul_on);
    if (crc < 0)
        goto fail;
    store_u32(b + CRC_OFFSET, (uint32_t)crc);
    goto done;
fail:
    Py_CLEAR(out);
done:
    if (topic_held)
        PyBuffer_Release(&topic);
    if (host_held)
        PyBuffer_Release(&host);
    encode_release(&s);
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* merge                                                                                       */

#define COLUMNS 6
#define BORN_DELTA_COLUMN 4
#define MAX_MERGED 4096

static const Py_ssize_t column_widths[COLUMNS] = {8, 4, 4, 4, 4, 4};

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

/* merge(batches) -> bytes | None: see ``merge_batches`` in common/_record_batch.py. */
static PyObject *
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
    Py_ssize_t topic_length = first[TOPIC_LENGTH_OFFSET] | first[TOPIC_LENGTH_OFFSET + 1] << 8;
    Py_ssize_t header_length = (FIXED_HEADER_LENGTH + topic_length + 7) & ~(Py_ssize_t)7;
    int64_t base_ms = INT64_MAX, total_count = 0;
    Py_ssize_t total = header_length;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (merge_part(&parts[i], header_length, i) < 0)
            goto done;
        const unsigned char *d = parts[i].data;
        /* one topic, born host, attributes and reconsume times: else not one batch */
        if (memcmp(d + RECONSUME_TIMES_OFFSET, first + RECONSUME_TIMES_OFFSET, 4) != 0 ||
            memcmp(d + BORN_HOST_OFFSET, first + BORN_HOST_OFFSET,
                   (size_t)(header_length - BORN_HOST_OFFSET)) != 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
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
    store_u32(w, (uint32_t)total);
    store_u32(w + RECORD_COUNT_OFFSET, (uint32_t)total_count);
    store_i64(w + BASE_BORN_TIMESTAMP_OFFSET, base_ms);
    unsigned char *at = w + header_length;
    for (Py_ssize_t c = 0; c < COLUMNS; c++) {
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

/* ------------------------------------------------------------------------------------------ */
/* take: the first window of a broker's unfiltered get                                         */

#define ENTRY_LENGTH 20            /* a consume-queue entry: i64 position, i32 size, i64 tag */

/* take(entries, view, view_length, file_start, topic, queue_id, first_offset, max_bytes)
 *   -> (count, total_bytes, last_position, full, pieces) | None
 * ``MessageReader._take_checked_py``'s result from one pass over the entries: the batches from
 * the first while their bytes stay within max_bytes (the first always), each header checked
 * against its entries; pieces are slices of view. None when a batch lies outside
 * [0, view_length) of the file or a check fails. */
static PyObject *
batch_take(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "take() takes 8 arguments (%zd given)", nargs);
        return NULL;
    }
    Py_ssize_t view_length = PyLong_AsSsize_t(args[2]);
    long long file_start = PyLong_AsLongLong(args[3]);
    long long queue_id = PyLong_AsLongLong(args[5]);
    long long first_offset = PyLong_AsLongLong(args[6]);
    long long max_bytes = PyLong_AsLongLong(args[7]);
    if (PyErr_Occurred())
        return NULL;
    Py_buffer entries, data, topic;
    if (PyObject_GetBuffer(args[0], &entries, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&entries);
        return NULL;
    }
    if (PyObject_GetBuffer(args[4], &topic, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&data);
        PyBuffer_Release(&entries);
        return NULL;
    }
    PyObject *result = NULL;
    PyObject *pieces = NULL;
    const unsigned char *e = (const unsigned char *)entries.buf;
    const unsigned char *d = (const unsigned char *)data.buf;
    Py_ssize_t m = entries.len / ENTRY_LENGTH;
    Py_ssize_t checked = FIXED_HEADER_LENGTH + topic.len;
    if (view_length > data.len)
        view_length = data.len;
    if (m == 0 || entries.len % ENTRY_LENGTH != 0)
        goto refused;
    pieces = PyList_New(0);
    if (pieces == NULL)
        goto done;
    long long total = 0, last_position = -1;
    Py_ssize_t count = m, i = 0;
    int full = 0;
    while (i < m) {
        long long position = load_i64(e + i * ENTRY_LENGTH);
        long long size = load_i32(e + i * ENTRY_LENGTH + 8);
        Py_ssize_t j = i + 1;
        while (j < m && load_i64(e + j * ENTRY_LENGTH) == position)
            j++;
        if (last_position >= 0 && total + size > max_bytes) {
            full = 1;
            count = i;
            break;
        }
        long long relative = position - file_start;
        if (size < checked || relative < 0 || relative + size > view_length)
            goto refused;
        const unsigned char *h = d + relative;
        long long base = load_i64(h + BASE_QUEUE_OFFSET_OFFSET);
        Py_ssize_t topic_length = (Py_ssize_t)h[TOPIC_LENGTH_OFFSET] |
                                  (Py_ssize_t)h[TOPIC_LENGTH_OFFSET + 1] << 8;
        if (load_u32(h + MAGIC_OFFSET) != BATCH_MAGIC ||
            load_i32(h + TOTAL_LENGTH_OFFSET) != size ||
            load_i64(h + BASE_PHYSICAL_OFFSET_OFFSET) != position ||
            load_i32(h + QUEUE_ID_OFFSET) != queue_id || base > first_offset + i ||
            first_offset + j - 1 >= base + load_i32(h + RECORD_COUNT_OFFSET) ||
            topic_length != topic.len ||
            memcmp(h + TOPIC_OFFSET, topic.buf, (size_t)topic.len) != 0)
            goto refused;
        PyObject *piece = PySequence_GetSlice(args[1], (Py_ssize_t)relative,
                                              (Py_ssize_t)(relative + size));
        if (piece == NULL)
            goto done;
        int appended = PyList_Append(pieces, piece);
        Py_DECREF(piece);
        if (appended < 0)
            goto done;
        total += size;
        last_position = position;
        i = j;
    }
    result = Py_BuildValue("(nLLOO)", count, total, last_position, full ? Py_True : Py_False,
                           pieces);
    goto done;
refused:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(pieces);
    PyBuffer_Release(&topic);
    PyBuffer_Release(&data);
    PyBuffer_Release(&entries);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* module                                                                                      */

static PyMethodDef methods[] = {
    {"check", (PyCFunction)(void (*)(void))batch_check, METH_FASTCALL,
     "check(data, topic, max_body_length, max_body_total, max_records, check_crc, "
     "check_content) -> int: 0, or the BatchCheck code of the first rule broken."},
    {"encode", (PyCFunction)(void (*)(void))batch_encode, METH_FASTCALL,
     "encode(topic, bodies, tags, properties, property_lengths, flags, born_timestamp_ms, "
     "born_deltas_ms, born_host, reconsume_times, attributes) -> bytearray: one batch."},
    {"use_clmul", (PyCFunction)crc32_use_clmul, METH_O,
     "use_clmul(on) -> bool: whether the PCLMULQDQ CRC was in use; from now on only if on "
     "(and the CPU has it), else zlib.crc32."},
    {"merge", (PyCFunction)batch_merge, METH_O,
     "merge(batches) -> bytes | None: one batch of the records of batches (merge_batches)."},
    {"take", (PyCFunction)(void (*)(void))batch_take, METH_FASTCALL,
     "take(entries, view, view_length, file_start, topic, queue_id, first_offset, max_bytes) "
     "-> (count, total_bytes, last_position, full, pieces) | None (MessageReader)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "aeromq.common._batch_native",
    "The record batch's encoder and checker in C (see common/_batch_native.c).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit__batch_native(void)
{
    if (crc32_module_init() < 0)
        return NULL;
    PyObject *struct_module = PyImport_ImportModule("struct");
    if (struct_module == NULL)
        return NULL;
    struct_error = PyObject_GetAttrString(struct_module, "error");
    Py_DECREF(struct_module);
    if (struct_error == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}
