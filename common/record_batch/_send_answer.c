/*
 * The send answer of aeromq.common.record_batch._native: ``send_answer``, a broker's answer to
 * a send read into its offsets.
 *
 * Why it exists
 * -------------
 * Each answer a client reads went through a look for a raw section (``split_raw_section``, two
 * varints skipped in Python), a protobuf parse of the whole ``TransportResponse``, a look at
 * which body it has, and then the producer's reading of the ``SendMessageResponse``'s fields
 * one attribute at a time: some 15 us of a one-at-a-time producer's profiled CPU a send
 * (``docs/latency.md``). A stored send's answer is small and always the same shape; here it is
 * read in one pass into one tuple.
 *
 * What it does
 * ------------
 *   send_answer(cls, data) -> cls | None
 *       a serialised ``TransportResponse`` (``common/_envelope.py``) whose body is ``send``
 *       (field 11), whose status says it was stored (SUCCESS or FLUSH_DISK_TIMEOUT) with no
 *       message and no leader, and which holds no other field: its ``(correlation_id,
 *       session_id, code, send_status, queue_id, base_queue_offset, message_count,
 *       base_commit_log_offset, store_host, broker_name)`` as an instance of ``cls`` (a tuple
 *       type of ten items: ``common/_send_envelope.SendAnswer``). Anything else, None: another
 *       body, a raw section (field 1000), an error, an unknown field or wire type, a varint
 *       cut or too long, a string that is not UTF-8. The caller then parses it with protobuf,
 *       which raises or reports what is wrong (the cold path keeps its words).
 *       ``read_send_answer_py`` (``common/_send_envelope.py``) is the same over protobuf, the
 *       reference a test holds this to. Every read is bounds-checked; bad input gives None.
 *
 * Read as protobuf reads it: fields in any order, a scalar's last value wins, an embedded
 * message's occurrences merge, an i32 is the low 32 bits of its varint.
 */
#include "_protobuf_wire.h"

#define SEND_ANSWER_ITEMS 10
#define RESPONSE_SEND_FIELD 11 /* TransportResponse.send */
#define FLUSH_DISK_TIMEOUT_CODE 10 /* ResponseCode.FLUSH_DISK_TIMEOUT */

typedef struct {
    int64_t code, send_status, queue_id, queue_offset, count, commit_log_offset;
    Cursor store_host, broker_name;
    Py_ssize_t message_length;
} SendFields;

/* Status{code = 1, message = 2}: 0, or -1 for anything else (a leader, field 3, included). */
static int
read_status(Cursor c, SendFields *f)
{
    while (c.p < c.end) {
        uint64_t tag, value;
        Cursor span;
        if (read_varint(&c, &tag) < 0)
            return -1;
        if (tag == (1 << 3 | 0)) {
            if (read_varint(&c, &value) < 0)
                return -1;
            f->code = (int32_t)(uint32_t)value;
        } else if (tag == (2 << 3 | 2)) {
            if (read_span(&c, &span) < 0)
                return -1;
            f->message_length = span.end - span.p;
        } else
            return -1;
    }
    return 0;
}

/* SendMessageResponse (messages.proto): 0, or -1 for a field it does not know. */
static int
read_send(Cursor c, void *fields)
{
    SendFields *f = fields;
    while (c.p < c.end) {
        uint64_t tag, value;
        if (read_varint(&c, &tag) < 0)
            return -1;
        unsigned field = (unsigned)(tag >> 3), wire = (unsigned)(tag & 7);
        if (tag >> 3 > 9)
            return -1;
        if (wire == 2 && (field == 1 || field == 8 || field == 9)) {
            Cursor span;
            if (read_span(&c, &span) < 0)
                return -1;
            if (field == 1) {
                if (read_status(span, f) < 0)
                    return -1;
            } else if (field == 8)
                f->store_host = span;
            else
                f->broker_name = span;
            continue;
        }
        if (wire != 0 || read_varint(&c, &value) < 0)
            return -1;
        switch (field) {
        case 3: f->send_status = (int32_t)(uint32_t)value; break;
        case 4: f->queue_id = (int32_t)(uint32_t)value; break;
        case 5: f->queue_offset = (int64_t)value; break;
        case 6: f->count = (int32_t)(uint32_t)value; break;
        case 7: f->commit_log_offset = (int64_t)value; break;
        default: return -1;
        }
    }
    return 0;
}

/* The fields read as a ``SendAnswer`` (``cls``), or None for an answer that is not a plain
 * stored one (a message, a code but SUCCESS and FLUSH_DISK_TIMEOUT). */
static PyObject *
make_answer(PyObject *cls, const uint64_t ids[2], void *fields)
{
    SendFields *f = fields;
    if (f->message_length || (f->code != 0 && f->code != FLUSH_DISK_TIMEOUT_CODE))
        return Py_NewRef(Py_None);
    PyObject *items[SEND_ANSWER_ITEMS] = {
        PyLong_FromLongLong((long long)(int64_t)ids[0]),
        PyLong_FromLongLong((long long)(int64_t)ids[1]),
        PyLong_FromLongLong(f->code),
        PyLong_FromLongLong(f->send_status),
        PyLong_FromLongLong(f->queue_id),
        PyLong_FromLongLong(f->queue_offset),
        PyLong_FromLongLong(f->count),
        PyLong_FromLongLong(f->commit_log_offset),
        text_of(f->store_host),
        text_of(f->broker_name),
    };
    return tuple_of_items(cls, items, SEND_ANSWER_ITEMS);
}

PyObject *
send_answer_read(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    SendFields f;
    memset(&f, 0, sizeof(f));
    return read_envelope_into(args, nargs, "send_answer", RESPONSE_SEND_FIELD, read_send, &f,
                              make_answer);
}
