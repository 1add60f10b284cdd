/*
 * Protobuf's wire format as the session envelope's native codecs read and write it
 * (_send_encode.c, _send_answer.c, _pull_envelope.c, _send_fields.c): varints and
 * length-delimited spans, a body's fields, an envelope, the ints they take and the tuples they
 * give. Every read is bounds-checked against its cursor's end and gives -1 rather than read
 * past it.
 */
#ifndef AEROMQ_RECORD_BATCH_PROTOBUF_WIRE_H
#define AEROMQ_RECORD_BATCH_PROTOBUF_WIRE_H

#include "_native.h"

#define WIRE_VARINT 0
#define WIRE_LENGTH_DELIMITED 2
#define MAX_VARINT_LENGTH 10
#define TAG(field, wire) ((unsigned char)((field) << 3 | (wire)))

typedef struct {
    const unsigned char *p, *end;
} Cursor;

/* The varint at the cursor (at most 10 bytes, ending within ``end``): 0, or -1 when it does
 * not. */
static inline int
read_varint(Cursor *c, uint64_t *out)
{
    uint64_t value = 0;
    for (int shift = 0; shift < 70 && c->p < c->end; shift += 7) {
        unsigned char byte = *c->p++;
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 0;
        }
    }
    return -1;
}

/* A length-delimited field's bytes at the cursor: 0, or -1 when they run past ``end``. */
static inline int
read_span(Cursor *c, Cursor *span)
{
    uint64_t length;
    if (read_varint(c, &length) < 0 || length > (uint64_t)(c->end - c->p))
        return -1;
    span->p = c->p;
    span->end = c->p + length;
    c->p = span->end;
    return 0;
}

/* One occurrence of a message's body whose fields are length-delimited ones and varints: a
 * length-delimited field ``n`` below ``span_count`` into ``*spans[n]`` (NULL: a field it does not
 * know), a varint field through ``on_varint(field, value, fields)`` (-1: one it does not know),
 * merged over what an earlier occurrence set, as protobuf merges them: 0, or -1 for a field or
 * wire type it does not know or a value that does not read. */
static inline int
read_body_fields(Cursor c, Cursor *const *spans, uint64_t span_count,
                 int (*on_varint)(uint64_t field, uint64_t value, void *fields), void *fields)
{
    while (c.p < c.end) {
        uint64_t tag, value;
        if (read_varint(&c, &tag) < 0)
            return -1;
        uint64_t field = tag >> 3, wire = tag & 7;
        if (wire == WIRE_LENGTH_DELIMITED) {
            if (field >= span_count || spans[field] == NULL || read_span(&c, spans[field]) < 0)
                return -1;
        } else if (wire != WIRE_VARINT || read_varint(&c, &value) < 0 ||
                   on_varint(field, value, fields) < 0)
            return -1;
    }
    return 0;
}

/* A serialised ``TransportRequest`` or ``TransportResponse`` (``common/_envelope.py``) of its two
 * ids (fields 1 and 2, varints) and the length-delimited body field ``body_field``, each of
 * whose occurrences ``read_body`` reads into ``fields`` (so that they merge, as protobuf merges
 * them), and nothing else: 0, its ids in ``ids``; -1 for a missing body, any other field, or
 * a varint, span or body that does not read. */
static inline int
read_envelope(Cursor c, uint64_t body_field, int (*read_body)(Cursor, void *), void *fields,
              uint64_t ids[2])
{
    int has_body = 0;
    ids[0] = ids[1] = 0;
    while (c.p < c.end) {
        uint64_t tag;
        Cursor span;
        if (read_varint(&c, &tag) < 0)
            return -1;
        if (tag == TAG(1, WIRE_VARINT) || tag == TAG(2, WIRE_VARINT)) {
            if (read_varint(&c, &ids[(tag >> 3) - 1]) < 0)
                return -1;
        } else if (tag == (body_field << 3 | WIRE_LENGTH_DELIMITED)) {
            if (read_span(&c, &span) < 0 || read_body(span, fields) < 0)
                return -1;
            has_body = 1;
        } else
            return -1;
    }
    return has_body ? 0 : -1;
}

/* How many bytes ``value``'s varint takes. */
static inline Py_ssize_t
varint_length(uint64_t value)
{
    Py_ssize_t n = 1;
    while (value > 0x7F) {
        value >>= 7;
        n++;
    }
    return n;
}

/* ``value``'s varint written at ``out``; where it ends. */
static inline unsigned char *
put_varint(unsigned char *out, uint64_t value)
{
    while (value > 0x7F) {
        *out++ = (unsigned char)((value & 0x7F) | 0x80);
        value >>= 7;
    }
    *out++ = (unsigned char)value;
    return out;
}

/* An int argument as protobuf takes it for a varint field of 64 bits (masked, as
 * ``common/_envelope.py``'s ``value & (2**64 - 1)``): 0, or -1 with a TypeError. */
static inline int
u64_mask_of(PyObject *value, const char *name, uint64_t *out)
{
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", name,
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLongMask(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* An int argument within ``low..high``: 0 with it in ``*out``; 1, no error set, for an int out of
 * that range (the caller raises its own words); -1 with a TypeError naming ``name`` for a value
 * that is not an int (or the error of its conversion). */
static inline int
ranged_int_arg(PyObject *value, long long low, long long high, const char *name, long long *out)
{
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", name,
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < low || v > high)
        return 1;
    *out = v;
    return 0;
}

/* An int argument for a protobuf integer field of range ``low..high``: 0 with it in ``*out``,
 * or -1 with a TypeError (not an int) or protobuf's ValueError (out of the field's range). */
static inline int
field_int_arg(PyObject *value, long long low, long long high, const char *name, long long *out)
{
    int outside = ranged_int_arg(value, low, high, name, out);
    if (outside > 0)
        PyErr_Format(PyExc_ValueError, "Value out of range: %S", value);
    return outside ? -1 : 0;
}

/* A str argument's UTF-8 bytes and their ``length`` (held by ``text``), or NULL with a TypeError
 * naming ``name`` (or the error of a string that does not encode). */
static inline const char *
utf8_arg(PyObject *text, const char *name, Py_ssize_t *length)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", name,
                     Py_TYPE(text)->tp_name);
        return NULL;
    }
    return PyUnicode_AsUTF8AndSize(text, length);
}

/* A length-delimited field's size on the wire: tag, length, data (none when the data is
 * empty: protobuf leaves an empty string or bytes field out). */
static inline Py_ssize_t
bytes_field_length(Py_ssize_t length)
{
    return length ? 1 + varint_length((uint64_t)length) + length : 0;
}

/* A length-delimited field written at ``out`` (nothing when the data is empty); where it
 * ends. */
static inline unsigned char *
put_bytes_field(unsigned char *out, unsigned char tag, const char *data, Py_ssize_t length)
{
    if (!length)
        return out;
    *out++ = tag;
    out = put_varint(out, (uint64_t)length);
    memcpy(out, data, (size_t)length);
    return out + length;
}

/* A string field's text (empty when the field was absent): a new reference, or NULL with a
 * UnicodeDecodeError for bytes that are not UTF-8. */
static inline PyObject *
text_of(Cursor span)
{
    if (span.p == NULL)
        return PyUnicode_New(0, 0);
    return PyUnicode_DecodeUTF8((const char *)span.p, span.end - span.p, NULL);
}

/* A reader's two arguments, ``(cls, data)``: ``cls`` a tuple type (its NamedTuple), ``data`` a
 * buffer, taken into ``view`` (the caller releases it): 0, or -1 with a TypeError naming
 * ``function``. */
static inline int
reader_args(PyObject *const *args, Py_ssize_t nargs, const char *function, Py_buffer *view)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes 2 arguments (%zd given)", function, nargs);
        return -1;
    }
    PyObject *cls = args[0];
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)) {
        PyErr_Format(PyExc_TypeError, "%s() needs a tuple type", function);
        return -1;
    }
    return PyObject_GetBuffer(args[1], view, PyBUF_SIMPLE);
}

/* An instance of the tuple type ``cls`` (a NamedTuple: its items, no fields of its own) holding
 * ``items`` (new references, each taken here, NULL ones allowed); None when an item is NULL for
 * a string that is not UTF-8 (protobuf's parse, the caller's fallback, reports it); NULL with
 * the error of any other failure. */
static inline PyObject *
tuple_of_items(PyObject *cls, PyObject **items, int count)
{
    PyObject *out = NULL;
    for (int i = 0; i < count; i++) {
        if (items[i] == NULL) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear();
                out = Py_NewRef(Py_None);
            }
            goto done;
        }
    }
    out = ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, count);
    if (out == NULL)
        goto done;
    for (int i = 0; i < count; i++) {
        PyTuple_SET_ITEM(out, i, items[i]);
        items[i] = NULL;
    }
done:
    for (int i = 0; i < count; i++)
        Py_XDECREF(items[i]);
    return out;
}

/* What a reader makes of an envelope it read: an instance of ``cls`` from the envelope's ``ids``
 * and its body's ``fields`` (a new reference); None when it does not take them; NULL with an
 * error. */
typedef PyObject *(*MakeFields)(PyObject *cls, const uint64_t ids[2], void *fields);

/* A reader's pass (``pull_request``, ``send_fields``, ``send_answer``): its two arguments
 * (``reader_args``, ``function`` naming it in an error), the envelope whose body field is
 * ``body_field`` read into ``fields`` by ``read_body`` (``read_envelope``), and ``make``'s
 * instance of the tuple type ``cls`` while the bytes are held; None for an envelope that does
 * not read. */
static inline PyObject *
read_envelope_into(PyObject *const *args, Py_ssize_t nargs, const char *function,
                   uint64_t body_field, int (*read_body)(Cursor, void *), void *fields,
                   MakeFields make)
{
    Py_buffer data;
    if (reader_args(args, nargs, function, &data) < 0)
        return NULL;
    Cursor c = {data.buf, (const unsigned char *)data.buf + data.len};
    uint64_t ids[2];
    PyObject *out = read_envelope(c, body_field, read_body, fields, ids) < 0
                        ? Py_NewRef(Py_None)
                        : make(args[0], ids, fields);
    PyBuffer_Release(&data);
    return out;
}

#endif /* AEROMQ_RECORD_BATCH_PROTOBUF_WIRE_H */
