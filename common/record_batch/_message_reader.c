/*
 * The message reader of aeromq.common.record_batch._native: ``read_messages``, a small pull
 * answer's records checked and made into message objects, with no column in between.
 *
 * Why it exists
 * -------------
 * A consumer keeping up pulls one message at a time. Read by ``read`` (``_reader.c``) into
 * columns, each such message cost eleven ``numpy.frombuffer`` views, a ``PulledChunk``, a
 * ``MessageBatch`` and then, field by field, the numpy reads of a ``BatchMessageExt``, and
 * the consumer's bookkeeping read its offsets and lengths back out of numpy: about 60 calls of
 * Python functions a message (``python -m bench profile``). Here the checks of ``read`` run
 * the same way (pass 1 and each batch's CRC and lengths: ``_reader.h``) and each record in
 * the pulled range becomes one object of the class the caller gives (the client's
 * ``MessageExt``), every field set, in one call.
 *
 * What it does
 * ------------
 *   read_messages(data, queue_id, topic, offset, next_offset, limit, message_type,
 *                 topic_name, broker_name)
 *       -> None when the answer is not for this path: a batch fails a check, is compressed,
 *          or a property string or tag is not UTF-8; or no record, or more than ``limit``
 *          records are in ``[offset, next_offset)`` (the caller then reads it with
 *          ``read``, and ``reader.py`` raises the exact error of a refusal); else a list of
 *          ``message_type`` objects, in order, one per record in the range, with the fields
 *          of ``MessageExt`` (``topic``: ``topic_name``; ``broker_name``; ``queue_id``;
 *          ``queue_offset``; ``commit_log_offset``; ``store_size``: 28 and the record's
 *          body, tag and property bytes; ``sys_flag``: the batch's attributes;
 *          ``born_timestamp_ms``; ``born_host`` and ``store_host`` as ``(ip, port)``;
 *          ``store_timestamp_ms``; ``reconsume_times``; ``flag``; ``body`` (bytes);
 *          ``_properties``: the property string decoded, ``TAGS`` from the tag column put
 *          back, as ``properties.join_tag``).
 *
 * ``message_type`` must be a class whose instances take those attributes (its ``__init__``
 * is not run); the reader is the same on the fields as ``consumer.BatchMessageExt`` over a
 * column chunk (tests/common hold the two to each other). Runs with the GIL held: small
 * answers only.
 */
#include "_native.h"

#include "_reader.h"

/* The attributes set on each message, in the order of ``attribute_names``. */
enum {
    A_TOPIC,
    A_BODY,
    A_FLAG,
    A_PROPERTIES,
    A_BROKER_NAME,
    A_QUEUE_ID,
    A_QUEUE_OFFSET,
    A_COMMIT_LOG_OFFSET,
    A_STORE_SIZE,
    A_SYS_FLAG,
    A_BORN_TIMESTAMP_MS,
    A_BORN_HOST,
    A_STORE_TIMESTAMP_MS,
    A_STORE_HOST,
    A_RECONSUME_TIMES,
    ATTRIBUTES
};
static const char *const attribute_names[ATTRIBUTES] = {
    "topic",          "body",          "flag",
    "_properties",    "broker_name",   "queue_id",
    "queue_offset",   "commit_log_offset", "store_size",
    "sys_flag",       "born_timestamp_ms", "born_host",
    "store_timestamp_ms", "store_host", "reconsume_times",
};
static PyObject *attributes[ATTRIBUTES]; /* interned, made on the first call */
static PyObject *tags_name;              /* "TAGS" (common._properties.PROPERTY_TAGS) */

/* The last host field made into ``(ip, port)`` for each of the two host fields: a pull's
 * batches mostly share their hosts (GIL held: no other thread touches these). */
typedef struct {
    uint64_t field;
    PyObject *address;
} HostCache;
static HostCache host_caches[2];

static int
names_ready(void)
{
    if (tags_name != NULL)
        return 0;
    for (int k = 0; k < ATTRIBUTES; k++) {
        attributes[k] = PyUnicode_InternFromString(attribute_names[k]);
        if (attributes[k] == NULL)
            return -1;
    }
    tags_name = PyUnicode_InternFromString("TAGS");
    return tags_name == NULL ? -1 : 0;
}

/* ``(ip, port)`` of an 8-byte host field (``descriptor.unpack_host_field``): a new reference. */
static PyObject *
host_address(HostCache *cache, const unsigned char *field)
{
    uint64_t packed = (uint64_t)load_i64(field);
    if (cache->address == NULL || cache->field != packed) {
        PyObject *address = Py_BuildValue("(Ni)",
                                          PyUnicode_FromFormat("%u.%u.%u.%u", field[0], field[1],
                                                               field[2], field[3]),
                                          (int)load_i32(field + 4));
        if (address == NULL)
            return NULL;
        Py_XSETREF(cache->address, address);
        cache->field = packed;
    }
    return Py_NewRef(cache->address);
}

/* RocketMQ's property string (``name\x01value\x02`` pairs) as a dict, with ``TAGS`` set to
 * the tag when it has one (``properties.join_tag``). NULL with a Python error set, or with
 * none when a part is not UTF-8 (the answer is then not for this path). The separators are
 * ASCII, so splitting the bytes splits the decoded string the same way. */
static PyObject *
decode_properties(const unsigned char *p, Py_ssize_t length, const unsigned char *tag,
                  Py_ssize_t tag_length, int *not_utf8)
{
    PyObject *out = PyDict_New();
    if (out == NULL)
        return NULL;
    const unsigned char *end = p + length;
    while (p < end) {
        const unsigned char *item_end = memchr(p, 0x02, (size_t)(end - p));
        if (item_end == NULL)
            item_end = end;
        if (item_end > p) {
            const unsigned char *split = memchr(p, 0x01, (size_t)(item_end - p));
            const unsigned char *name_end = split == NULL ? item_end : split;
            const unsigned char *value = split == NULL ? item_end : split + 1;
            PyObject *name = PyUnicode_DecodeUTF8((const char *)p, name_end - p, NULL);
            PyObject *text = name == NULL ? NULL
                                          : PyUnicode_DecodeUTF8((const char *)value,
                                                                 item_end - value, NULL);
            if (text == NULL || PyDict_SetItem(out, name, text) < 0) {
                Py_XDECREF(name);
                Py_XDECREF(text);
                goto failed;
            }
            Py_DECREF(name);
            Py_DECREF(text);
        }
        p = item_end + 1;
    }
    if (tag_length > 0) {
        PyObject *text = PyUnicode_DecodeUTF8((const char *)tag, tag_length, NULL);
        if (text == NULL || PyDict_SetItem(out, tags_name, text) < 0) {
            Py_XDECREF(text);
            goto failed;
        }
        Py_DECREF(text);
    }
    return out;
failed:
    Py_DECREF(out);
    if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        *not_utf8 = 1;
    }
    return NULL;
}

/* Set ``values`` (new references, stolen; any NULL: an error is set) on ``message``. */
static int
set_fields(PyObject *message, PyObject *values[ATTRIBUTES])
{
    int status = 0;
    for (int k = 0; k < ATTRIBUTES; k++) {
        if (status == 0 && (values[k] == NULL
                            || PyObject_GenericSetAttr(message, attributes[k], values[k]) < 0))
            status = -1;
        Py_XDECREF(values[k]);
    }
    return status;
}

/* The messages of one checked batch in ``[offset, next_offset)``, appended to ``out``.
 * 0, 1 when a string is not UTF-8, -1 with a Python error set. */
static int
append_messages(PyObject *out, const unsigned char *data, const Frame *frame,
                const int64_t sums[3], int64_t offset, int64_t next_offset,
                PyTypeObject *message_type, PyObject *topic_name, PyObject *broker_name,
                PyObject *queue_id)
{
    const unsigned char *b = data + frame->position;
    const int32_t count = frame->count;
    const FrameColumns c = frame_columns(data, frame);
    const uint64_t base_offset = (uint64_t)load_i64(b + BASE_QUEUE_OFFSET_OFFSET);
    const uint64_t physical = (uint64_t)load_i64(b + BASE_PHYSICAL_OFFSET_OFFSET);
    const uint64_t born_ms = (uint64_t)load_i64(b + BASE_BORN_TIMESTAMP_OFFSET);
    int64_t body_at = c.data_start, tag_at = c.data_start + sums[0],
            property_at = c.data_start + sums[0] + sums[1];
    for (int32_t i = 0; i < count; i++) {
        const int32_t body_length = load_i32(c.body_lengths + 4 * (size_t)i);
        const int32_t tag_length = load_i32(c.tag_lengths + 4 * (size_t)i);
        const int32_t property_length = load_i32(c.property_lengths + 4 * (size_t)i);
        const int64_t queue_offset = (int64_t)(base_offset + (uint64_t)i);
        if (queue_offset >= offset && queue_offset < next_offset) {
            int not_utf8 = 0;
            PyObject *properties = decode_properties(data + property_at, property_length,
                                                     data + tag_at, tag_length, &not_utf8);
            if (properties == NULL)
                return not_utf8 ? 1 : -1;
            PyObject *message = message_type->tp_alloc(message_type, 0);
            if (message == NULL) {
                Py_DECREF(properties);
                return -1;
            }
            const int64_t born = (int64_t)(born_ms + (uint64_t)(int64_t)load_i32(
                                                         c.born_deltas + 4 * (size_t)i));
            PyObject *values[ATTRIBUTES] = {
                [A_TOPIC] = Py_NewRef(topic_name),
                [A_BODY] = PyBytes_FromStringAndSize((const char *)data + body_at, body_length),
                [A_FLAG] = PyLong_FromLong(load_i32(c.flags + 4 * (size_t)i)),
                [A_PROPERTIES] = properties,
                [A_BROKER_NAME] = Py_NewRef(broker_name),
                [A_QUEUE_ID] = Py_NewRef(queue_id),
                [A_QUEUE_OFFSET] = PyLong_FromLongLong(queue_offset),
                [A_COMMIT_LOG_OFFSET] =
                    PyLong_FromLongLong((int64_t)(physical + (uint64_t)i)),
                [A_STORE_SIZE] = PyLong_FromLongLong((int64_t)RECORD_OVERHEAD + body_length
                                                     + tag_length + property_length),
                [A_SYS_FLAG] = PyLong_FromLong((long)batch_attributes(b)),
                [A_BORN_TIMESTAMP_MS] = PyLong_FromLongLong(born),
                [A_BORN_HOST] = host_address(&host_caches[0], b + BORN_HOST_OFFSET),
                [A_STORE_TIMESTAMP_MS] = PyLong_FromLongLong(load_i64(b + STORE_TIMESTAMP_OFFSET)),
                [A_STORE_HOST] = host_address(&host_caches[1], b + STORE_HOST_OFFSET),
                [A_RECONSUME_TIMES] = PyLong_FromLong(load_i32(b + RECONSUME_TIMES_OFFSET)),
            };
            if (set_fields(message, values) < 0 || PyList_Append(out, message) < 0) {
                Py_DECREF(message);
                return -1;
            }
            Py_DECREF(message);
        }
        body_at += body_length;
        tag_at += tag_length;
        property_at += property_length;
    }
    return 0;
}

/* How many records of the found batches are in ``[offset, next_offset)`` (the range test of
 * ``fill_columns``, queue offsets wrapping as numpy's int64 do). */
static int64_t
records_in_range(const unsigned char *data, const Frames *found, int64_t offset,
                 int64_t next_offset)
{
    int64_t kept = 0;
    for (Py_ssize_t f = 0; f < found->batches; f++) {
        const Frame *frame = &found->frames[f];
        const uint64_t base = (uint64_t)load_i64(data + frame->position + BASE_QUEUE_OFFSET_OFFSET);
        for (int32_t i = 0; i < frame->count; i++) {
            const int64_t queue_offset = (int64_t)(base + (uint64_t)i);
            kept += queue_offset >= offset && queue_offset < next_offset;
        }
    }
    return kept;
}

PyObject *
messages_read(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError,
                        "read_messages(data, queue_id, topic, offset, next_offset, limit, "
                        "message_type, topic_name, broker_name)");
        return NULL;
    }
    PyObject *queue_id_arg = args[1], *topic_name = args[7], *broker_name = args[8];
    long long queue_id = PyLong_AsLongLong(queue_id_arg);
    long long offset = PyLong_AsLongLong(args[3]);
    long long next_offset = PyLong_AsLongLong(args[4]);
    long long limit = PyLong_AsLongLong(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (!PyType_Check(args[6]) || !PyUnicode_Check(topic_name) || !PyUnicode_Check(broker_name)) {
        PyErr_SetString(PyExc_TypeError,
                        "read_messages: message_type must be a class, topic_name and "
                        "broker_name str");
        return NULL;
    }
    if (names_ready() < 0)
        return NULL;
    PyTypeObject *message_type = (PyTypeObject *)args[6];
    Py_buffer data_view, topic_view;
    if (answer_buffers(args, &data_view, &topic_view) < 0)
        return NULL;
    const unsigned char *data = (const unsigned char *)data_view.buf;
    PyObject *out = NULL, *list = NULL;
    Frames found;
    frames_init(&found);
    int status = frames_find(&found, data, data_view.len, NULL, 0, queue_id,
                             (const unsigned char *)topic_view.buf, topic_view.len);
    if (status < 0)
        goto done;
    if (status > 0) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    int64_t kept = records_in_range(data, &found, offset, next_offset);
    if (kept == 0 || kept > limit) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    list = PyList_New(0);
    if (list == NULL)
        goto done;
    const int clmul = frame_check_clmul();
    for (Py_ssize_t f = 0; f < found.batches; f++) {
        int64_t sums[3];
        status = frame_check(data, &found.frames[f], clmul, sums);
        if (status == 0)
            status = append_messages(list, data, &found.frames[f], sums, offset, next_offset,
                                     message_type, topic_name, broker_name, queue_id_arg);
        if (status < 0)
            goto done;
        if (status > 0) {
            out = Py_NewRef(Py_None);
            goto done;
        }
    }
    out = Py_NewRef(list);

done:
    Py_XDECREF(list);
    frames_free(&found);
    PyBuffer_Release(&topic_view);
    PyBuffer_Release(&data_view);
    return out;
}
