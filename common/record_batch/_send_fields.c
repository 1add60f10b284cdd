/*
 * The broker's side of a send's envelope in aeromq.common.record_batch._native:
 * ``send_fields``, a send request read into its fields, and ``stored_send``, a stored send's
 * answer written.
 *
 * Why it exists
 * -------------
 * A one-at-a-time producer's send reached the broker's send processor through a protobuf parse
 * of the whole ``TransportRequest`` (its batch copied into the message, and out again on the
 * processor's read), and its answer left as a ``SendMessageResponse`` whose fields were set one
 * by one, copied into a ``TransportResponse`` and serialised: some fifteen calls of the broker's
 * a send (``docs/latency.md``, "A send in fewer calls at the broker"). Each is one pass here.
 *
 * What it does
 * ------------
 *   send_fields(cls, data) -> cls | None
 *       a serialised ``TransportRequest`` (``common/_envelope.py``) whose body is ``send``
 *       (field 13) and which holds no other field: its ``(correlation_id, session_id,
 *       producer_group, topic, queue_id, batch)`` as an instance of ``cls`` (a tuple type of six
 *       items: ``common/_stored_send.SendRequestFields``), the batch as ``bytes``. Anything
 *       else, None: another body, an unknown field or wire type, a varint cut or too long, a
 *       string that is not UTF-8. The caller then parses it with protobuf, which raises or
 *       reports what is wrong. ``read_send_request_py`` (``common/_stored_send.py``) is the same
 *       over protobuf, the reference a test holds this to. Read as protobuf reads it: fields in
 *       any order, a scalar's last value wins, the body's occurrences merge, an i32 is the low
 *       32 bits of its varint.
 *   stored_send(correlation_id, session_id, answer) -> bytes
 *       ``answer`` a tuple of six items, ``(queue_id, base_queue_offset, message_count,
 *       base_commit_log_offset, store_host, broker_name)`` (``common/_stored_send.
 *       StoredSendAnswer``): the ``TransportResponse`` whose ``SendMessageResponse`` (field 11)
 *       holds those six fields and nothing else (no status, SEND_OK): byte for byte protobuf's
 *       serialisation,
 *       every field at its default (0, "") left out, the ids too, an i32 sign-extended to ten
 *       bytes:
 *
 *   0x08 correlation id | 0x10 session id | 0x5A body length | 0x20 queue id |
 *     0x28 base queue offset | 0x30 count | 0x38 base commit log offset |
 *     0x42 store host | 0x4A broker name
 */
#include "_protobuf_wire.h"

#define SEND_REQUEST_ITEMS 6
#define REQUEST_SEND_FIELD 13 /* TransportRequest.send */
#define RESPONSE_SEND_FIELD 11 /* TransportResponse.send */

/* SendMessageRequest (messages.proto), its fields by number (4 is reserved). */
enum {
    PRODUCER_GROUP_FIELD = 1,
    TOPIC_FIELD = 2,
    QUEUE_ID_FIELD = 3,
    BATCH_FIELD = 5,
};

/* SendMessageResponse (messages.proto): the fields a stored send's answer sets. */
enum {
    ANSWER_QUEUE_ID_FIELD = 4,
    ANSWER_BASE_QUEUE_OFFSET_FIELD,
    ANSWER_MESSAGE_COUNT_FIELD,
    ANSWER_BASE_COMMIT_LOG_OFFSET_FIELD,
    ANSWER_STORE_HOST_FIELD,
    ANSWER_BROKER_NAME_FIELD,
};

typedef struct {
    Cursor group, topic, batch;
    int64_t queue_id;
} SendFields;

/* A varint field of the body into ``fields``: 0, or -1 for a field it does not know. */
static int
send_varint(uint64_t field, uint64_t value, void *fields)
{
    if (field != QUEUE_ID_FIELD)
        return -1;
    ((SendFields *)fields)->queue_id = (int32_t)(uint32_t)value;
    return 0;
}

/* One occurrence of the body into ``f`` (merged over what an earlier one set): 0, or -1 for a
 * field or wire type it does not know or a value that does not read. */
static int
read_send(Cursor c, void *fields)
{
    SendFields *f = fields;
    Cursor *const spans[BATCH_FIELD + 1] = {
        [PRODUCER_GROUP_FIELD] = &f->group,
        [TOPIC_FIELD] = &f->topic,
        [BATCH_FIELD] = &f->batch,
    };
    return read_body_fields(c, spans, BATCH_FIELD + 1, send_varint, f);
}

/* The fields read as a ``SendRequestFields`` (``cls``). */
static PyObject *
make_send(PyObject *cls, const uint64_t ids[2], void *fields)
{
    SendFields *f = fields;
    PyObject *items[SEND_REQUEST_ITEMS] = {
        PyLong_FromLongLong((long long)(int64_t)ids[0]),
        PyLong_FromLongLong((long long)(int64_t)ids[1]),
        text_of(f->group),
        text_of(f->topic),
        PyLong_FromLongLong(f->queue_id),
        f->batch.p == NULL
            ? PyBytes_FromStringAndSize(NULL, 0)
            : PyBytes_FromStringAndSize((const char *)f->batch.p, f->batch.end - f->batch.p),
    };
    return tuple_of_items(cls, items, SEND_REQUEST_ITEMS);
}

PyObject *
send_fields_read(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    SendFields f;
    memset(&f, 0, sizeof(f));
    /* None for a pull, the other bodies, anything unknown */
    return read_envelope_into(args, nargs, "send_fields", REQUEST_SEND_FIELD, read_send, &f,
                              make_send);
}

/* A str argument's UTF-8 bytes: 0, or -1 with a TypeError (or the encoder's error). */
static int
utf8_of(PyObject *value, const char *name, const char **text, Py_ssize_t *length)
{
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", name,
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    *text = PyUnicode_AsUTF8AndSize(value, length);
    return *text == NULL ? -1 : 0;
}

PyObject *
stored_send_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "stored_send() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *answer = args[2];
    if (!PyTuple_Check(answer) || PyTuple_GET_SIZE(answer) != 6) {
        PyErr_SetString(PyExc_TypeError, "stored_send() needs an answer of six items");
        return NULL;
    }
    static const char *const names[] = {
        "correlation_id", "session_id", "queue_id", "base_queue_offset", "message_count",
        "base_commit_log_offset",
    };
    PyObject *ints[6] = {
        args[0],
        args[1],
        PyTuple_GET_ITEM(answer, 0),
        PyTuple_GET_ITEM(answer, 1),
        PyTuple_GET_ITEM(answer, 2),
        PyTuple_GET_ITEM(answer, 3),
    };
    uint64_t v[6];
    for (int i = 0; i < 6; i++)
        if (u64_mask_of(ints[i], names[i], &v[i]) < 0)
            return NULL;
    /* the i32s as protobuf writes them: sign-extended to 64 bits */
    v[2] = (uint64_t)(int64_t)(int32_t)(uint32_t)v[2];
    v[4] = (uint64_t)(int64_t)(int32_t)(uint32_t)v[4];
    const char *host, *name;
    Py_ssize_t host_length, name_length;
    if (utf8_of(PyTuple_GET_ITEM(answer, 4), "store_host", &host, &host_length) < 0
        || utf8_of(PyTuple_GET_ITEM(answer, 5), "broker_name", &name, &name_length) < 0)
        return NULL;
    Py_ssize_t body_length = 0;
    for (int i = 2; i < 6; i++)
        if (v[i])
            body_length += 1 + varint_length(v[i]);
    if (host_length)
        body_length += 1 + varint_length((uint64_t)host_length) + host_length;
    if (name_length)
        body_length += 1 + varint_length((uint64_t)name_length) + name_length;
    Py_ssize_t length = 1 + varint_length((uint64_t)body_length) + body_length;
    for (int i = 0; i < 2; i++)
        if (v[i])
            length += 1 + varint_length(v[i]);
    PyObject *out = PyBytes_FromStringAndSize(NULL, length);
    if (out == NULL)
        return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
    for (int i = 0; i < 2; i++) {
        if (v[i]) {
            *p++ = TAG(i + 1, WIRE_VARINT); /* correlation id 1, session id 2 */
            p = put_varint(p, v[i]);
        }
    }
    *p++ = TAG(RESPONSE_SEND_FIELD, WIRE_LENGTH_DELIMITED);
    p = put_varint(p, (uint64_t)body_length);
    for (int i = 2; i < 6; i++) {
        if (v[i]) {
            *p++ = TAG(ANSWER_QUEUE_ID_FIELD + i - 2, WIRE_VARINT);
            p = put_varint(p, v[i]);
        }
    }
    if (host_length) {
        *p++ = TAG(ANSWER_STORE_HOST_FIELD, WIRE_LENGTH_DELIMITED);
        p = put_varint(p, (uint64_t)host_length);
        memcpy(p, host, (size_t)host_length);
        p += host_length;
    }
    if (name_length) {
        *p++ = TAG(ANSWER_BROKER_NAME_FIELD, WIRE_LENGTH_DELIMITED);
        p = put_varint(p, (uint64_t)name_length);
        memcpy(p, name, (size_t)name_length);
    }
    return out;
}
