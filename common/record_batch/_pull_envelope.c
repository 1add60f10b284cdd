/*
 * The pull envelope of aeromq.common.record_batch._native: ``pull_request``, a pull request read
 * into its fields, and ``pull_answer``, a stored pull's answer around its batches.
 *
 * Why it exists
 * -------------
 * A consumer keeping up pulls about once a message, and the broker read each pull with a
 * protobuf parse of the whole ``TransportRequest``, a look at which body it has and an attribute
 * read a field; it answered a FOUND pull with the ``PullMessageResponse``'s serialisation and the
 * envelope's varints written a byte at a time in Python around the stored batches
 * (``encode_envelope_around``): some 20 us of the broker's profiled CPU a message and a dozen
 * Python calls (``docs/latency.md``, "A pull in fewer calls at the broker"). Each is one pass
 * here.
 *
 * What it does
 * ------------
 *   pull_request(cls, data) -> cls | None
 *       a serialised ``TransportRequest`` (``common/_envelope.py``) whose body is ``pull``
 *       (field 14) and which holds no other field: its ``(correlation_id, session_id,
 *       consumer_group, topic, queue_id, queue_offset, max_msg_nums, max_bytes, sub_expression,
 *       expression_type, suspend_timeout_ms, commit_offset, local_read)`` as an instance of
 *       ``cls`` (a tuple type of thirteen items: ``common/_pull_envelope.PullRequestFields``).
 *       Anything else, None: another body (a send's: the first thing the caller tries), an
 *       unknown field or wire type, a varint cut or too long, a string that is not UTF-8. The
 *       caller then parses it with protobuf, which raises or reports what is wrong.
 *       ``read_pull_request_py`` (``common/_pull_envelope.py``) is the same over protobuf, the
 *       reference a test holds this to. Read as protobuf reads it: fields in any order, a
 *       scalar's last value wins, the body's occurrences merge, an i32 (and the enum) is the low
 *       32 bits of its varint, a bool any varint not 0.
 *   pull_answer(correlation_id, session_id, pull_status, next_begin_offset, min_offset,
 *               max_offset, pieces) -> (list, length) | (bytes, length)
 *       the ``TransportResponse`` of a pull answer whose ``PullMessageResponse`` (field 12)
 *       holds those four fields and nothing else: with ``pieces`` (the stored batches, each a
 *       buffer), ``[head, *pieces, tail]`` for one vectored offer, the batches as the raw
 *       section (``common/_envelope.py``'s second diagram), and the message's length; without,
 *       the one ``bytes`` of the envelope. Byte for byte what ``encode_envelope_around`` (and
 *       ``encode_envelope``) write around protobuf's serialisation of the response:
 *
 *   0x08 correlation id | 0x10 session id | 0xC2 0x3E raw length | raw section |
 *     0x62 body length | 0x10 pull status | 0x18 next | 0x20 min | 0x28 max
 *
 *       (a field at its default, 0, left out of the body; an i32 sign-extended to ten bytes).
 */
#include "_protobuf_wire.h"

#define PULL_REQUEST_ITEMS 13
#define REQUEST_PULL_FIELD 14 /* TransportRequest.pull */
#define RESPONSE_PULL_FIELD 12 /* TransportResponse.pull */
#define RAW_SECTION_TAG_0 0xC2 /* field 1000, length-delimited: the varint 0xC2 0x3E */
#define RAW_SECTION_TAG_1 0x3E
#define STRING_FIELDS 3

/* PullMessageRequest (messages.proto), its fields by number. */
enum {
    GROUP_FIELD = 1,
    TOPIC_FIELD,
    QUEUE_ID_FIELD,
    QUEUE_OFFSET_FIELD,
    MAX_MSG_NUMS_FIELD,
    MAX_BYTES_FIELD,
    SUB_EXPRESSION_FIELD,
    EXPRESSION_TYPE_FIELD,
    SUSPEND_TIMEOUT_FIELD,
    COMMIT_OFFSET_FIELD,
    LOCAL_READ_FIELD,
};

typedef struct {
    Cursor group, topic, sub_expression;
    int64_t queue_id, queue_offset, max_msg_nums, max_bytes, expression_type;
    int64_t suspend_timeout_ms, commit_offset, local_read;
} PullFields;

/* A varint field of the body into ``fields``: 0, or -1 for a field it does not know. */
static int
pull_varint(uint64_t field, uint64_t value, void *fields)
{
    PullFields *f = fields;
    switch (field) {
    case QUEUE_ID_FIELD: f->queue_id = (int32_t)(uint32_t)value; break;
    case QUEUE_OFFSET_FIELD: f->queue_offset = (int64_t)value; break;
    case MAX_MSG_NUMS_FIELD: f->max_msg_nums = (int32_t)(uint32_t)value; break;
    case MAX_BYTES_FIELD: f->max_bytes = (int32_t)(uint32_t)value; break;
    case EXPRESSION_TYPE_FIELD: f->expression_type = (int32_t)(uint32_t)value; break;
    case SUSPEND_TIMEOUT_FIELD: f->suspend_timeout_ms = (int64_t)value; break;
    case COMMIT_OFFSET_FIELD: f->commit_offset = (int64_t)value; break;
    case LOCAL_READ_FIELD: f->local_read = value != 0; break;
    default: return -1;
    }
    return 0;
}

/* One occurrence of the body into ``f`` (merged over what an earlier one set): 0, or -1 for a
 * field or wire type it does not know or a value that does not read. */
static int
read_pull(Cursor c, void *fields)
{
    PullFields *f = fields;
    Cursor *const spans[SUB_EXPRESSION_FIELD + 1] = {
        [GROUP_FIELD] = &f->group,
        [TOPIC_FIELD] = &f->topic,
        [SUB_EXPRESSION_FIELD] = &f->sub_expression,
    };
    return read_body_fields(c, spans, SUB_EXPRESSION_FIELD + 1, pull_varint, f);
}

/* The fields read as a ``PullRequestFields`` (``cls``). */
static PyObject *
make_pull(PyObject *cls, const uint64_t ids[2], void *fields)
{
    PullFields *f = fields;
    PyObject *items[PULL_REQUEST_ITEMS] = {
        PyLong_FromLongLong((long long)(int64_t)ids[0]),
        PyLong_FromLongLong((long long)(int64_t)ids[1]),
        text_of(f->group),
        text_of(f->topic),
        PyLong_FromLongLong(f->queue_id),
        PyLong_FromLongLong(f->queue_offset),
        PyLong_FromLongLong(f->max_msg_nums),
        PyLong_FromLongLong(f->max_bytes),
        text_of(f->sub_expression),
        PyLong_FromLongLong(f->expression_type),
        PyLong_FromLongLong(f->suspend_timeout_ms),
        PyLong_FromLongLong(f->commit_offset),
        PyBool_FromLong((long)f->local_read),
    };
    return tuple_of_items(cls, items, PULL_REQUEST_ITEMS);
}

PyObject *
pull_request_read(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    PullFields f;
    memset(&f, 0, sizeof(f));
    /* None for a send (field 13), the other bodies, anything unknown */
    return read_envelope_into(args, nargs, "pull_request", REQUEST_PULL_FIELD, read_pull, &f,
                              make_pull);
}

/* A buffer's length (a memoryview's without a new reference to its buffer): 0, or -1. */
static int
piece_length(PyObject *piece, Py_ssize_t *out)
{
    if (PyMemoryView_Check(piece)) {
        *out = PyMemoryView_GET_BUFFER(piece)->len;
        return 0;
    }
    if (PyBytes_Check(piece)) {
        *out = PyBytes_GET_SIZE(piece);
        return 0;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(piece, &view, PyBUF_SIMPLE) < 0)
        return -1;
    *out = view.len;
    PyBuffer_Release(&view);
    return 0;
}

PyObject *
pull_answer_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "pull_answer() takes 7 arguments (%zd given)", nargs);
        return NULL;
    }
    static const char *const names[] = {
        "correlation_id", "session_id", "pull_status", "next_begin_offset", "min_offset",
        "max_offset",
    };
    uint64_t v[6];
    for (int i = 0; i < 6; i++)
        if (u64_mask_of(args[i], names[i], &v[i]) < 0)
            return NULL;
    PyObject *pieces = args[6];
    if (!PyList_Check(pieces) && !PyTuple_Check(pieces)) {
        PyErr_SetString(PyExc_TypeError, "pieces must be a list or a tuple");
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(pieces);
    PyObject **items = PySequence_Fast_ITEMS(pieces);
    Py_ssize_t raw_length = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t n;
        if (piece_length(items[i], &n) < 0)
            return NULL;
        raw_length += n;
    }
    /* the body: the response's fields 2 to 5, each left out at 0 */
    unsigned char body[4 * (1 + MAX_VARINT_LENGTH)];
    unsigned char *b = body;
    for (int i = 2; i < 6; i++) {
        if (v[i]) {
            *b++ = TAG(i, WIRE_VARINT); /* pull_status 2, next 3, min 4, max 5 */
            b = put_varint(b, v[i]);
        }
    }
    Py_ssize_t body_length = b - body;
    unsigned char head[2 * (1 + MAX_VARINT_LENGTH) + 2 + MAX_VARINT_LENGTH];
    unsigned char *h = head;
    *h++ = TAG(1, WIRE_VARINT);
    h = put_varint(h, v[0]);
    *h++ = TAG(2, WIRE_VARINT);
    h = put_varint(h, v[1]);
    unsigned char tail[1 + MAX_VARINT_LENGTH + sizeof(body)];
    unsigned char *t = tail;
    *t++ = TAG(RESPONSE_PULL_FIELD, WIRE_LENGTH_DELIMITED);
    t = put_varint(t, (uint64_t)body_length);
    memcpy(t, body, (size_t)body_length);
    t += body_length;
    Py_ssize_t tail_length = t - tail;
    if (!count) { /* no raw section: one envelope */
        Py_ssize_t ids_length = h - head;
        PyObject *data = PyBytes_FromStringAndSize(NULL, ids_length + tail_length);
        if (data == NULL)
            return NULL;
        memcpy(PyBytes_AS_STRING(data), head, (size_t)ids_length);
        memcpy(PyBytes_AS_STRING(data) + ids_length, tail, (size_t)tail_length);
        return Py_BuildValue("(Nn)", data, ids_length + tail_length);
    }
    *h++ = RAW_SECTION_TAG_0;
    *h++ = RAW_SECTION_TAG_1;
    h = put_varint(h, (uint64_t)raw_length);
    Py_ssize_t head_length = h - head;
    PyObject *out = PyList_New(count + 2);
    if (out == NULL)
        return NULL;
    PyObject *head_bytes = PyBytes_FromStringAndSize((const char *)head, head_length);
    PyObject *tail_bytes = PyBytes_FromStringAndSize((const char *)tail, tail_length);
    if (head_bytes == NULL || tail_bytes == NULL) {
        Py_XDECREF(head_bytes);
        Py_XDECREF(tail_bytes);
        Py_DECREF(out);
        return NULL;
    }
    PyList_SET_ITEM(out, 0, head_bytes);
    for (Py_ssize_t i = 0; i < count; i++)
        PyList_SET_ITEM(out, i + 1, Py_NewRef(items[i]));
    PyList_SET_ITEM(out, count + 1, tail_bytes);
    return Py_BuildValue("(Nn)", out, head_length + raw_length + tail_length);
}
