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
 *   pull_request_encode(correlation_id, session_id, body) -> bytes
 *       the consumer's end of ``pull_request``: the serialised ``TransportRequest`` of the two
 *       ids whose body is ``pull``, a ``PullMessageRequest`` of ``body``'s eleven items
 *       (``common/_pull_envelope.PullRequestBody``: ``consumer_group``, ``topic``, ``queue_id``,
 *       ``queue_offset``, ``max_msg_nums``, ``max_bytes``, ``sub_expression``,
 *       ``expression_type``, ``suspend_timeout_ms``, ``commit_offset``, ``local_read``). Byte
 *       for byte what protobuf writes (``pull_request_py``, the reference): fields in number
 *       order, those at their default left out, an i32 sign-extended; a value out of its
 *       field's range a ValueError, as protobuf's, one of the wrong type a TypeError:
 *
 *   0x08 correlation id | 0x10 session id | 0x72 body length |
 *     0x0A group | 0x12 topic | 0x18 queue id | 0x20 offset | 0x28 max msgs | 0x30 max bytes |
 *     0x3A sub expression | 0x40 expression type | 0x48 suspend ms | 0x50 commit | 0x58 local
 *
 *   pulled_answer(cls, buffer, offset, length) -> cls | None
 *       the other end of ``pull_answer``, at the client: the ``TransportResponse`` of
 *       ``length`` bytes at ``offset`` of ``buffer`` (any buffer: the log buffer the answer
 *       was polled from) whose body is a ``PullMessageResponse`` of the four fields above and
 *       nothing else (no status: a refusal's code; no ``batches`` or ``local_ranges``), with
 *       or without a raw section, read as its ``(correlation_id, session_id, pull_status,
 *       next_begin_offset, min_offset, max_offset, batches)``: an instance of ``cls`` (a
 *       tuple type of seven items: ``common/_pull_envelope.PulledAnswerFields``), ``batches``
 *       the raw section's bytes copied out (empty without one). The raw section is read where
 *       ``split_raw_section`` (``common/_envelope.py``) looks for it, right after the two ids;
 *       a field 1000 anywhere else is an unknown field. Anything else, None: another body, an
 *       unknown field or wire type, a varint cut or too long, a raw section or span that runs
 *       past the message, a range outside the buffer. The caller then reads it as before
 *       (``split_raw_section`` and protobuf), which reports what is wrong.
 *       ``read_pulled_answer_py`` (``common/_pull_envelope.py``) is the same over protobuf.
 */
#include "_protobuf_wire.h"

#define PULL_REQUEST_ITEMS 13
#define PULLED_ANSWER_ITEMS 7
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

typedef struct {
    int64_t pull_status, next_begin_offset, min_offset, max_offset;
} PulledFields;

/* A varint field of a pull answer's body into ``fields``: 0, or -1 for a field it does not
 * know. */
static int
pulled_varint(uint64_t field, uint64_t value, void *fields)
{
    PulledFields *f = fields;
    switch (field) {
    case 2: f->pull_status = (int32_t)(uint32_t)value; break;
    case 3: f->next_begin_offset = (int64_t)value; break;
    case 4: f->min_offset = (int64_t)value; break;
    case 5: f->max_offset = (int64_t)value; break;
    default: return -1;
    }
    return 0;
}

/* One occurrence of a pull answer's body (merged over what an earlier one set): 0, or -1 for
 * any length-delimited field (the status, batches, local ranges) or a field it does not know. */
static int
read_pulled(Cursor c, void *fields)
{
    Cursor *const no_spans[1] = {NULL};
    return read_body_fields(c, no_spans, 1, pulled_varint, fields);
}

/* Where ``split_raw_section`` looks for a raw section: right after the envelope's two ids, in
 * order. 1 with the section's tag at ``*tag_at`` and its bytes in ``raw`` when one is there; 0
 * when there is none there; -1 for a section that runs past the message. */
static int
raw_section_after_ids(Cursor c, const unsigned char **tag_at, Cursor *raw)
{
    uint64_t value;
    for (unsigned char tag = TAG(1, WIRE_VARINT); tag <= TAG(2, WIRE_VARINT); tag += 8) {
        if (c.p >= c.end || *c.p != tag)
            return 0;
        c.p++;
        if (read_varint(&c, &value) < 0)
            return 0;
    }
    if (c.end - c.p < 2 || c.p[0] != RAW_SECTION_TAG_0 || c.p[1] != RAW_SECTION_TAG_1)
        return 0;
    *tag_at = c.p;
    c.p += 2;
    return read_span(&c, raw) < 0 ? -1 : 1;
}

PyObject *
pulled_answer_read(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "pulled_answer() takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *cls = args[0];
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "pulled_answer() needs a tuple type");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[2]);
    if (offset == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t length = PyLong_AsSsize_t(args[3]);
    if (length == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *out = Py_None; /* (borrowed until the end: None unless it reads) */
    if (offset < 0 || length < 0 || offset > view.len || length > view.len - offset)
        goto done;
    const unsigned char *start = (const unsigned char *)view.buf + offset;
    Cursor c = {start, start + length};
    const unsigned char *raw_tag_at = NULL;
    Cursor raw = {NULL, NULL};
    if (raw_section_after_ids(c, &raw_tag_at, &raw) < 0)
        goto done;
    PulledFields f;
    memset(&f, 0, sizeof(f));
    uint64_t ids[2] = {0, 0};
    int has_body = 0;
    while (c.p < c.end) {
        uint64_t tag;
        Cursor span;
        if (c.p == raw_tag_at) { /* the raw section, read above: skipped over */
            c.p = raw.end;
            continue;
        }
        if (read_varint(&c, &tag) < 0)
            goto done;
        if (tag == TAG(1, WIRE_VARINT) || tag == TAG(2, WIRE_VARINT)) {
            if (read_varint(&c, &ids[(tag >> 3) - 1]) < 0)
                goto done;
        } else if (tag == (RESPONSE_PULL_FIELD << 3 | WIRE_LENGTH_DELIMITED)) {
            if (read_span(&c, &span) < 0 || read_pulled(span, &f) < 0)
                goto done;
            has_body = 1;
        } else
            goto done; /* another body, a field 1000 elsewhere, anything unknown */
    }
    if (!has_body)
        goto done;
    PyObject *items[PULLED_ANSWER_ITEMS] = {
        PyLong_FromLongLong((long long)(int64_t)ids[0]),
        PyLong_FromLongLong((long long)(int64_t)ids[1]),
        PyLong_FromLongLong(f.pull_status),
        PyLong_FromLongLong(f.next_begin_offset),
        PyLong_FromLongLong(f.min_offset),
        PyLong_FromLongLong(f.max_offset),
        raw.p == NULL ? PyBytes_FromStringAndSize(NULL, 0)
                      : PyBytes_FromStringAndSize((const char *)raw.p, raw.end - raw.p),
    };
    PyBuffer_Release(&view);
    return tuple_of_items(cls, items, PULLED_ANSWER_ITEMS);
done:
    PyBuffer_Release(&view);
    return Py_NewRef(out);
}

#define PULL_REQUEST_BODY_ITEMS 11

PyObject *
pull_request_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "pull_request_encode() takes 3 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    uint64_t correlation_id, session_id;
    if (u64_mask_of(args[0], "correlation_id", &correlation_id) < 0 ||
        u64_mask_of(args[1], "session_id", &session_id) < 0)
        return NULL;
    PyObject *body = args[2];
    if (!PyTuple_Check(body) || PyTuple_GET_SIZE(body) != PULL_REQUEST_BODY_ITEMS) {
        PyErr_SetString(PyExc_TypeError, "body must be a tuple of 11 items (PullRequestBody)");
        return NULL;
    }
    PyObject **item = &PyTuple_GET_ITEM(body, 0);
    /* the strings, fields 1, 2 and 7 */
    static const int string_items[STRING_FIELDS] = {0, 1, 6};
    static const char *const string_names[STRING_FIELDS] = {"consumer_group", "topic",
                                                            "sub_expression"};
    const char *text[STRING_FIELDS];
    Py_ssize_t text_length[STRING_FIELDS];
    for (int i = 0; i < STRING_FIELDS; i++) {
        text[i] = utf8_arg(item[string_items[i]], string_names[i], &text_length[i]);
        if (text[i] == NULL)
            return NULL;
    }
    /* the varints, fields 3 to 6 and 8 to 10, each an i32 or an i64 */
    static const int varint_fields[] = {3, 4, 5, 6, 8, 9, 10};
    static const char *const varint_names[] = {
        "queue_id", "queue_offset", "max_msg_nums", "max_bytes", "expression_type",
        "suspend_timeout_ms", "commit_offset",
    };
    static const int is_i32[] = {1, 0, 1, 1, 1, 0, 0};
    enum { VARINTS = sizeof(varint_fields) / sizeof(varint_fields[0]) };
    uint64_t varint[VARINTS];
    Py_ssize_t body_length = 0;
    for (int i = 0; i < STRING_FIELDS; i++)
        body_length += bytes_field_length(text_length[i]);
    for (int i = 0; i < VARINTS; i++) {
        long long v;
        long long low = is_i32[i] ? INT32_MIN : INT64_MIN;
        long long high = is_i32[i] ? INT32_MAX : INT64_MAX;
        if (field_int_arg(item[varint_fields[i] - 1], low, high, varint_names[i], &v) < 0)
            return NULL;
        varint[i] = (uint64_t)(int64_t)v; /* an i32 sign-extended to ten bytes, as protobuf */
        if (v)
            body_length += 1 + varint_length(varint[i]);
    }
    int local_read = PyObject_IsTrue(item[10]);
    if (local_read < 0)
        return NULL;
    body_length += local_read ? 2 : 0;
    Py_ssize_t total = 1 + varint_length(correlation_id) + 1 + varint_length(session_id) + 1 +
                       varint_length((uint64_t)body_length) + body_length;
    if (!correlation_id)
        total -= 1 + varint_length(0);
    if (!session_id)
        total -= 1 + varint_length(0);
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL)
        return NULL;
    unsigned char *b = (unsigned char *)PyBytes_AS_STRING(out);
    if (correlation_id) {
        *b++ = TAG(1, WIRE_VARINT);
        b = put_varint(b, correlation_id);
    }
    if (session_id) {
        *b++ = TAG(2, WIRE_VARINT);
        b = put_varint(b, session_id);
    }
    *b++ = TAG(REQUEST_PULL_FIELD, WIRE_LENGTH_DELIMITED);
    b = put_varint(b, (uint64_t)body_length);
    int next_string = 0, next_varint = 0;
    for (int field = GROUP_FIELD; field <= COMMIT_OFFSET_FIELD; field++) {
        if (next_string < STRING_FIELDS && string_items[next_string] == field - 1) {
            b = put_bytes_field(b, TAG(field, WIRE_LENGTH_DELIMITED), text[next_string],
                                text_length[next_string]);
            next_string++;
        } else {
            uint64_t v = varint[next_varint++];
            if (v) {
                *b++ = TAG(field, WIRE_VARINT);
                b = put_varint(b, v);
            }
        }
    }
    if (local_read) {
        *b++ = TAG(LOCAL_READ_FIELD, WIRE_VARINT);
        *b++ = 1;
    }
    return out;
}
