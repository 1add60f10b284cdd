/*
 * The encoder of aeromq.common.record_batch._native: ``encode``, one batch of a send.
 *
 * Why it exists
 * -------------
 * Every send is encoded once by the producer: lengths, tag hashes, columns, the CRC. In Python
 * that costs about 30 microseconds per batch of 32 small messages, a large part of the
 * producer's CPU per message (issue 12 asks for it to be below redis-py's); here it is one pass
 * over the records, with no object per record.
 *
 * What it does
 * ------------
 *   encode(topic, bodies, tags, properties, property_lengths, flags, born_timestamp_ms,
 *          born_deltas_ms, born_host, reconsume_times, attributes[, producer_id,
 *          base_sequence, producer_epoch]) -> bytearray
 *       the batch, as ``encode_batch`` (``encoder.py``) documents it; ``encode_batch_py``
 *       beside it is the same in Python, the reference a test holds this to, and the fallback.
 *       With ``producer_id`` not None, the producer state follows the topic's padding and the
 *       attributes have PRODUCER_STATE_FLAG; without it, that bit of ``attributes`` is cleared.
 *
 * A tag's hash is Java's ``String.hashCode`` over its UTF-16 code units, from the str's code
 * points. Values that cannot be encoded raise ``struct.error`` or ``ValueError`` as
 * ``encode_batch_py`` does, never crash.
 */
#include "_native.h"

#include "_crc32.h"

static PyObject *struct_error = NULL;

/* At the module's import: struct.error, which a value out of range raises (as in Python). 0,
 * or -1 with a Python error set. */
int
encoder_module_init(void)
{
    PyObject *struct_module = PyImport_ImportModule("struct");
    if (struct_module == NULL)
        return -1;
    struct_error = PyObject_GetAttrString(struct_module, "error");
    Py_DECREF(struct_module);
    return struct_error == NULL ? -1 : 0;
}

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

PyObject *
batch_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 11 && nargs != 14) { /* the producer state's three are optional */
        PyErr_Format(PyExc_TypeError, "encode() takes 11 or 14 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *topic_obj = args[0], *bodies_obj = args[1], *tags_obj = args[2],
             *properties_obj = args[3], *lengths_obj = args[4], *flags_obj = args[5],
             *born_obj = args[6], *deltas_obj = args[7], *host_obj = args[8],
             *reconsume_obj = args[9], *attributes_obj = args[10];
    PyObject *producer_obj = nargs == 14 ? args[11] : Py_None,
             *sequence_obj = nargs == 14 ? args[12] : NULL,
             *epoch_obj = nargs == 14 ? args[13] : NULL;
    EncodeState s;
    memset(&s, 0, sizeof(s));
    PyObject *out = NULL;
    Py_buffer topic, host;
    int topic_held = 0, host_held = 0;
    int64_t born_ms, reconsume, attributes, producer_id = 0, sequence = 0, epoch = 0;
    int has_producer = producer_obj != Py_None;

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
    if (has_producer &&
        (as_int64(producer_obj, INT64_MIN, INT64_MAX, 'q', &producer_id) < 0 ||
         as_int64(sequence_obj, 0, MAX_SEQUENCE, 'i', &sequence) < 0 ||
         as_int64(epoch_obj, INT16_MIN, INT16_MAX, 'h', &epoch) < 0))
        goto done;
    attributes = has_producer ? (attributes | PRODUCER_STATE_FLAG)
                              : (attributes & ~(int64_t)PRODUCER_STATE_FLAG);
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

    Py_ssize_t header_length = batch_header_length(topic.len, (unsigned)attributes);
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
    store_u32(b + TOTAL_LENGTH_OFFSET, (uint32_t)total);
    store_u32(b + MAGIC_OFFSET, BATCH_MAGIC);
    store_u32(b + RECORD_COUNT_OFFSET, (uint32_t)count);
    store_u32(b + RECONSUME_TIMES_OFFSET, (uint32_t)reconsume);
    store_i64(b + BASE_BORN_TIMESTAMP_OFFSET, born_ms);
    memcpy(b + BORN_HOST_OFFSET, host.buf, (size_t)(host.len < 8 ? host.len : 8));
    store_u16(b + ATTRIBUTES_OFFSET, (unsigned)attributes);
    store_u16(b + TOPIC_LENGTH_OFFSET, (unsigned)topic.len);
    memcpy(b + TOPIC_OFFSET, topic.buf, (size_t)topic.len);
    if (has_producer) {
        unsigned char *state = b + batch_producer_state(topic.len);
        store_i64(state + PRODUCER_ID_OFFSET, producer_id);
        store_u32(state + BASE_SEQUENCE_OFFSET, (uint32_t)sequence);
        store_u16(state + PRODUCER_EPOCH_OFFSET, (unsigned)(uint16_t)(int16_t)epoch);
        /* the reserved i16 is zero: the header was zeroed above */
    }

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

