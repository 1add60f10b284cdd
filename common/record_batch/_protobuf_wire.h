/*
 * Protobuf's wire format as the session envelope's native codecs read and write it
 * (_send_encode.c, _send_answer.c, _pull_envelope.c): varints and length-delimited spans.
 * Every read is bounds-checked against its cursor's end and gives -1 rather than read past it.
 */
#ifndef AEROMQ_RECORD_BATCH_PROTOBUF_WIRE_H
#define AEROMQ_RECORD_BATCH_PROTOBUF_WIRE_H

#include <stddef.h>
#include <stdint.h>

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

#endif /* AEROMQ_RECORD_BATCH_PROTOBUF_WIRE_H */
