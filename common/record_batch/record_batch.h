/*
 * common/record_batch/record_batch.h: the record batch's layout for C.
 *
 * The one place C learns the layout: the offsets of the fixed header, the columns, and the
 * little-endian reads and writes every pass uses. The diagram and what each field means are in
 * ``descriptor.py`` beside this file; the names here are its names, and
 * ``tests/common/test_record_batch_header.py`` parses this file and checks every constant
 * against it, so the layout is written once per language. Included by every C file that reads
 * or writes a batch: the passes of ``aeromq.common.record_batch._native`` (``_encoder.c``,
 * ``_checker.c``, ``_merger.c``, ``_reader.c``) and the broker's ``broker/store/_batch_take.c``.
 *
 * Header-only and ``static inline``: a read here compiles to the same instructions as the
 * expression it names. Integers in a batch are little-endian whatever the host.
 */
#ifndef AEROMQ_RECORD_BATCH_H
#define AEROMQ_RECORD_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define BATCH_MAGIC 0x31425141u /* "AQB1" in the file */

/* the fixed header */
#define TOTAL_LENGTH_OFFSET 0
#define MAGIC_OFFSET 4
#define BASE_QUEUE_OFFSET_OFFSET 8
#define BASE_PHYSICAL_OFFSET_OFFSET 16
#define STORE_TIMESTAMP_OFFSET 24
#define STORE_HOST_OFFSET 32
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
#define FIXED_HEADER_LENGTH 76
#define HOST_FIELD_LENGTH 8
#define MAX_TOPIC_LENGTH 255
#define MAX_PROPERTIES_LENGTH 32767 /* one record's property string (a Java short) */

/* the producer state, after the topic's padding, only when the attributes have
 * PRODUCER_STATE_FLAG; its offsets are from its own start (batch_producer_state) */
#define PRODUCER_STATE_FLAG 0x8000
#define COMPRESSED_FLAG 0x0001 /* the bodies are one compressed block (descriptor.py) */
#define COMPRESSION_TYPE_SHIFT 8
#define COMPRESSION_TYPE_MASK 0x0700 /* the codec: 1 LZ4, 2 ZSTD, 3 ZLIB */
#define MAX_COMPRESSION_TYPE 3
#define PRODUCER_ID_OFFSET 0
#define BASE_SEQUENCE_OFFSET 8
#define PRODUCER_EPOCH_OFFSET 12
#define PRODUCER_STATE_RESERVED_OFFSET 14
#define PRODUCER_STATE_LENGTH 16
#define MAX_SEQUENCE 0x7FFFFFFF

/* the columns, after the header (and the producer state): COLUMN_COUNT of them, of COLUMN_WIDTHS bytes a value (tag
 * hash, body, tags and properties lengths, born delta, flag), the born deltas at
 * BORN_DELTA_COLUMN */
#define COLUMN_COUNT 6
#define COLUMN_WIDTHS {8, 4, 4, 4, 4, 4}
#define BORN_DELTA_COLUMN 4
#define RECORD_OVERHEAD 28 /* column bytes per record: 8 + 5 * 4 */

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
store_u16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline void
store_i64(unsigned char *p, int64_t v)
{
    store_u32(p, (uint32_t)(uint64_t)v);
    store_u32(p + 4, (uint32_t)((uint64_t)v >> 32));
}

/* ------------------------------------------------------------------------------------------ */
/* header reads                                                                                */

/* The topic length field of the batch at ``b`` (u16). */
static inline ptrdiff_t
batch_topic_length(const unsigned char *b)
{
    return (ptrdiff_t)b[TOPIC_LENGTH_OFFSET] | (ptrdiff_t)b[TOPIC_LENGTH_OFFSET + 1] << 8;
}

/* The attributes field of the batch at ``b`` (u16). */
static inline unsigned
batch_attributes(const unsigned char *b)
{
    return (unsigned)b[ATTRIBUTES_OFFSET] | (unsigned)b[ATTRIBUTES_OFFSET + 1] << 8;
}

/* Where the producer state of a batch with a topic of ``topic_length`` bytes starts (when it has
 * one): after the topic's padding (``producer_state_position`` in descriptor.py). */
static inline ptrdiff_t
batch_producer_state(ptrdiff_t topic_length)
{
    return (FIXED_HEADER_LENGTH + topic_length + 7) & ~(ptrdiff_t)7;
}

/* The header's length with a topic of ``topic_length`` bytes (padded to 8), and the producer
 * state when ``attributes`` have PRODUCER_STATE_FLAG: where the columns start
 * (``batch_header_length`` in descriptor.py). */
static inline ptrdiff_t
batch_header_length(ptrdiff_t topic_length, unsigned attributes)
{
    return batch_producer_state(topic_length) +
           ((attributes & PRODUCER_STATE_FLAG) ? PRODUCER_STATE_LENGTH : 0);
}

/* The header's length of the batch at ``b`` (its topic length and attributes read). */
static inline ptrdiff_t
batch_header_length_of(const unsigned char *b)
{
    return batch_header_length(batch_topic_length(b), batch_attributes(b));
}

/* ------------------------------------------------------------------------------------------ */
/* header writes                                                                               */

/* A producer's header at ``b`` (``header_length`` bytes, zeroed first): the total length, the
 * magic, the record count, the reconsume times, the base born time, the born host (its first
 * 8 bytes), the attributes, the topic and, when they have PRODUCER_STATE_FLAG, the producer
 * state (its reserved i16 zero); the broker's fields and the CRC zero. The encoders' one
 * header (``_encoder.c``, ``_columns.c``). */
static inline void
batch_write_header(unsigned char *b, ptrdiff_t header_length, uint32_t total, uint32_t count,
                   uint32_t reconsume_times, int64_t born_ms, const unsigned char *host,
                   size_t host_length, unsigned attributes, const unsigned char *topic,
                   ptrdiff_t topic_length, int64_t producer_id, uint32_t base_sequence,
                   int16_t producer_epoch)
{
    memset(b, 0, (size_t)header_length);
    store_u32(b + TOTAL_LENGTH_OFFSET, total);
    store_u32(b + MAGIC_OFFSET, BATCH_MAGIC);
    store_u32(b + RECORD_COUNT_OFFSET, count);
    store_u32(b + RECONSUME_TIMES_OFFSET, reconsume_times);
    store_i64(b + BASE_BORN_TIMESTAMP_OFFSET, born_ms);
    memcpy(b + BORN_HOST_OFFSET, host,
           host_length < HOST_FIELD_LENGTH ? host_length : HOST_FIELD_LENGTH);
    store_u16(b + ATTRIBUTES_OFFSET, attributes);
    store_u16(b + TOPIC_LENGTH_OFFSET, (unsigned)topic_length);
    memcpy(b + TOPIC_OFFSET, topic, (size_t)topic_length);
    if (attributes & PRODUCER_STATE_FLAG) {
        unsigned char *state = b + batch_producer_state(topic_length);
        store_i64(state + PRODUCER_ID_OFFSET, producer_id);
        store_u32(state + BASE_SEQUENCE_OFFSET, base_sequence);
        store_u16(state + PRODUCER_EPOCH_OFFSET, (unsigned)(uint16_t)producer_epoch);
    }
}

#endif /* AEROMQ_RECORD_BATCH_H */
