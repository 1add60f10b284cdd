/*
 * The send request of aeromq.common.record_batch._native: ``send_request``, the envelope of one
 * attempt of a send, ready to offer.
 *
 * Why it exists
 * -------------
 * A one-at-a-time ``Producer.send`` built its request in four Python steps, each a copy of the
 * batch: the idempotent producer's stamp (``stamp_batch``: the state inserted, the total length
 * and the CRC made again), the ``SendMessageRequest`` and its ``SerializeToString``, and the
 * session envelope around it (``encode_envelope``: the varints a byte at a time). Together
 * about 25 us of the producer's profiled CPU a send and a dozen Python calls
 * (``docs/latency.md``, "The send in one native call"); here they are one pass writing one
 * ``bytes``.
 *
 * What it does
 * ------------
 *   send_request(correlation_id, session_id, group, topic, queue_id, batch, producer_id,
 *                base_sequence, producer_epoch) -> bytes
 *       the serialised ``TransportRequest`` (``common/_envelope.py``'s first diagram) whose body
 *       is ``send`` (field 13): a ``SendMessageRequest`` of ``group``, ``topic`` (str),
 *       ``queue_id`` (an i32) and ``batch``. With ``producer_id`` not None the batch is stamped
 *       on its way in: the producer state (``record_batch.h``, after the topic's padding) is
 *       inserted, PRODUCER_STATE_FLAG set, the total length and the CRC made again, as
 *       ``stamp_batch`` does. ``send_request_py`` (``common/_send_envelope.py``) is the same in
 *       Python (protobuf and ``encode_envelope``), the reference a test holds this to, and the
 *       fallback. Byte for byte what protobuf writes: fields in number order, those at their
 *       default (an empty string, queue 0, an empty batch) left out, an i32 sign-extended.
 *
 * The layout it writes, each part a protobuf field (tag, then a varint or a length and bytes):
 * the envelope's head as the first diagram of ``common/_envelope.py`` draws it, then the
 * ``SendMessageRequest`` (``proto/messages.proto``), then the batch as the diagram of
 * ``common/record_batch/descriptor.py`` draws it, with its producer state (that file's second
 * diagram) after the topic's padding:
 *
 *   0x08 correlation id | 0x10 session id | 0x6A body length |
 *     0x0A group | 0x12 topic | 0x18 queue id | 0x2A batch length | batch (stamped)
 */
#include "_native.h"

#include "_crc32.h"
#include "_protobuf_wire.h"

#include <stdarg.h>

#define SEND_FIELD 13 /* TransportRequest.send */
#define GROUP_FIELD 1 /* SendMessageRequest.producer_group */
#define TOPIC_FIELD 2
#define QUEUE_ID_FIELD 3
#define BATCH_FIELD 5
#define CORRELATION_ID_FIELD 1
#define SESSION_ID_FIELD 2

/* Raise ``struct.error`` (what stamp_batch's ``struct`` calls raise) with ``format``'s words;
 * the cold path, so the class is looked up here. */
static void
struct_error(const char *format, ...)
{
    PyObject *struct_module = PyImport_ImportModule("struct");
    PyObject *error = struct_module ? PyObject_GetAttrString(struct_module, "error") : NULL;
    Py_XDECREF(struct_module);
    if (error == NULL)
        return;
    va_list values;
    va_start(values, format);
    PyErr_FormatV(error, format, values);
    va_end(values);
    Py_DECREF(error);
}

/* ``value`` within ``low..high``: 0, or -1 with an error set: a TypeError for a value that is
 * not an int; out of range, a ValueError (protobuf's, for the queue id) or, when
 * ``struct_format`` is given, ``struct.error`` with its words (stamp_batch's pack: the producer
 * state). */
static int
as_ranged(PyObject *value, long long low, long long high, const char *name, char struct_format,
          long long *out)
{
    if (!struct_format)
        return field_int_arg(value, low, high, name, out);
    int outside = ranged_int_arg(value, low, high, name, out);
    if (outside <= 0)
        return outside;
    struct_error("'%c' format requires %lld <= number <= %lld", struct_format, low, high);
    return -1;
}

PyObject *
send_request_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 9) {
        PyErr_Format(PyExc_TypeError, "send_request() takes 9 arguments (%zd given)", nargs);
        return NULL;
    }
    uint64_t correlation_id, session_id;
    long long queue_id, producer_id = 0, sequence = 0, epoch = 0;
    Py_ssize_t group_length, topic_length;
    int stamped = args[6] != Py_None;
    if (u64_mask_of(args[0], "correlation_id", &correlation_id) < 0 ||
        u64_mask_of(args[1], "session_id", &session_id) < 0)
        return NULL;
    const char *group = utf8_arg(args[2], "group", &group_length);
    if (group == NULL)
        return NULL;
    const char *topic = utf8_arg(args[3], "topic", &topic_length);
    if (topic == NULL || as_ranged(args[4], INT32_MIN, INT32_MAX, "queue_id", 0, &queue_id) < 0)
        return NULL;
    if (stamped &&
        (as_ranged(args[6], INT64_MIN, INT64_MAX, "producer_id", 'q', &producer_id) < 0 ||
         as_ranged(args[7], INT32_MIN, INT32_MAX, "base_sequence", 'i', &sequence) < 0 ||
         as_ranged(args[8], INT16_MIN, INT16_MAX, "producer_epoch", 'h', &epoch) < 0))
        return NULL;
    Py_buffer batch;
    if (PyObject_GetBuffer(args[5], &batch, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *out = NULL;
    const unsigned char *in = batch.buf;
    ptrdiff_t position = 0;
    Py_ssize_t batch_length = batch.len;
    if (stamped) {
        if (batch.len < FIXED_HEADER_LENGTH) {
            struct_error("a batch to stamp is shorter than its header: %zd", batch.len);
            goto done;
        }
        position = batch_producer_state(batch_topic_length(in));
        if (batch.len < position) {
            PyErr_Format(PyExc_ValueError,
                         "a batch to stamp is shorter than its topic: length=%zd position=%td",
                         batch.len, position);
            goto done;
        }
        batch_length += PRODUCER_STATE_LENGTH;
        if (batch_length > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "the batch is longer than an i32: %zd", batch_length);
            goto done;
        }
    }
    uint64_t queue_varint = (uint64_t)(int64_t)queue_id; /* an i32 sign-extended, as protobuf */
    Py_ssize_t body_length = bytes_field_length(group_length) +
                             bytes_field_length(topic_length) +
                             (queue_id ? 1 + varint_length(queue_varint) : 0) +
                             bytes_field_length(batch_length);
    Py_ssize_t total = 1 + varint_length(correlation_id) + 1 + varint_length(session_id) + 1 +
                       varint_length((uint64_t)body_length) + body_length;
    out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL)
        goto done;
    unsigned char *b = (unsigned char *)PyBytes_AS_STRING(out);
    *b++ = TAG(CORRELATION_ID_FIELD, WIRE_VARINT);
    b = put_varint(b, correlation_id);
    *b++ = TAG(SESSION_ID_FIELD, WIRE_VARINT);
    b = put_varint(b, session_id);
    *b++ = TAG(SEND_FIELD, WIRE_LENGTH_DELIMITED);
    b = put_varint(b, (uint64_t)body_length);
    b = put_bytes_field(b, TAG(GROUP_FIELD, WIRE_LENGTH_DELIMITED), group, group_length);
    b = put_bytes_field(b, TAG(TOPIC_FIELD, WIRE_LENGTH_DELIMITED), topic, topic_length);
    if (queue_id) {
        *b++ = TAG(QUEUE_ID_FIELD, WIRE_VARINT);
        b = put_varint(b, queue_varint);
    }
    if (!stamped) {
        b = put_bytes_field(b, TAG(BATCH_FIELD, WIRE_LENGTH_DELIMITED), batch.buf, batch.len);
        goto done;
    }
    *b++ = TAG(BATCH_FIELD, WIRE_LENGTH_DELIMITED);
    b = put_varint(b, (uint64_t)batch_length);
    /* the batch up to its producer state's place, the state, the rest: then its header's
     * attributes, total length and CRC (stamp_batch, in place) */
    memcpy(b, in, (size_t)position);
    unsigned char *state = b + position;
    memset(state, 0, PRODUCER_STATE_LENGTH);
    store_i64(state + PRODUCER_ID_OFFSET, (int64_t)producer_id);
    store_u32(state + BASE_SEQUENCE_OFFSET, (uint32_t)sequence);
    store_u16(state + PRODUCER_EPOCH_OFFSET, (unsigned)(uint16_t)(int16_t)epoch);
    memcpy(state + PRODUCER_STATE_LENGTH, in + position, (size_t)(batch.len - position));
    store_u16(b + ATTRIBUTES_OFFSET, batch_attributes(b) | PRODUCER_STATE_FLAG);
    store_u32(b + TOTAL_LENGTH_OFFSET, (uint32_t)batch_length);
    int64_t crc = crc32_of(b + CRC_START, batch_length - CRC_START, crc32_clmul_on);
    if (crc < 0) {
        Py_CLEAR(out);
        goto done;
    }
    store_u32(b + CRC_OFFSET, (uint32_t)crc);
done:
    PyBuffer_Release(&batch);
    return out;
}
