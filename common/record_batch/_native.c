/*
 * aeromq.common.record_batch._native: the record batch's passes in C, one file per role.
 *
 * Why it exists
 * -------------
 * Every message crosses a few loops over its batch's records: the producer encodes the batch
 * (and merges waiting sends), the broker checks it before it appends the bytes, and a consumer
 * checks each pulled batch again and reads its records into columns. In Python or numpy each
 * costs a fixed number of calls per batch or per answer plus work per record; here each is one
 * pass over the bytes, with no object per record (the figures are in each file).
 *
 * What it does
 * ------------
 *   encode(...)           _encoder.c: one batch of a send (``encoder.encode_batch``)
 *   encode_columns(...)   _columns.c: one batch from the buffers of a column set
 *                         (``column_encoder.encode_column_batch``)
 *   hash_column(...)      _columns.c: each row's Java hashCode (``column_encoder.hash_column``)
 *   check(...)            _checker.c: 0 or the ``BatchCheck`` code of the first rule a batch
 *                         breaks (``checker.check_batch``)
 *   merge(batches)        _merger.c: one batch of several (``merger.merge_batches``)
 *   read(...)             _reader.c: a pull answer's batches checked and read into columns
 *                         (``reader.read_pulled_chunk``)
 *   read_messages(...)    _message_reader.c: a small pull answer's records checked and made
 *                         into message objects (``message_reader.read_pulled_records``)
 *   gather(...), find_property(...)
 *                         _gather.c: spans of the records (bodies, tags, a property's values)
 *                         in Arrow's binary layout (``spans``)
 *   send_request(...)     _send_encode.c: a send's envelope, ready to offer, its batch stamped
 *                         (``common/_send_envelope.send_request_py``)
 *   send_answer(cls, data)
 *                         _send_answer.c: a stored send's answer read into its offsets
 *                         (``common/_send_envelope.read_send_answer_py``)
 *   pull_request(cls, data), pull_answer(...), pull_request_encode(...),
 *   pulled_answer(cls, buffer, offset, length)
 *                         _pull_envelope.c: at the broker a pull request read into its fields
 *                         and a stored pull's answer written around its batches; at the
 *                         client the request written and the answer read back
 *                         (``common/_pull_envelope``)
 *   send_fields(cls, data), stored_send(...)
 *                         _send_fields.c: a send request read into its fields, a stored send's
 *                         answer written, at the broker (``common/_stored_send``)
 *   crc32(data), use_clmul(on)
 *                         _crc32.c: the CRC as the passes compute it; whether the folding CRC
 *                         was in use, and from now on only if ``on`` (the tests run both paths)
 *
 * Each Python module beside these files keeps the same pass in Python or numpy: the reference
 * a test holds the C to (on valid input and on every kind of broken one), the fallback when
 * this module is not built, and the words of a refusal (the cold path). The layout is
 * ``record_batch.h`` (checked against ``descriptor.py``). Every read is bounds-checked against
 * its buffer; bad input returns a code or raises, never crashes.
 */
#include "_native.h"

static PyMethodDef methods[] = {
    {"check", (PyCFunction)(void (*)(void))batch_check, METH_FASTCALL,
     "check(data, topic, max_body_length, max_body_total, max_records, check_crc, "
     "check_content) -> int: 0, or the BatchCheck code of the first rule broken."},
    {"encode", (PyCFunction)(void (*)(void))batch_encode, METH_FASTCALL,
     "encode(topic, bodies, tags, properties, property_lengths, flags, born_timestamp_ms, "
     "born_deltas_ms, born_host, reconsume_times, attributes, producer_id, base_sequence, "
     "producer_epoch) -> bytearray: one batch."},
    {"encode_columns", (PyCFunction)(void (*)(void))columns_encode, METH_FASTCALL,
     "encode_columns(topic, bodies, tags, keys, properties, property_map, rows, position, stop, "
     "limits, born_timestamp_ms, born_host, unique_head, unique_counter, producer_id, "
     "base_sequence, producer_epoch) -> (batch, next_position, 0) | (None, row, problem): one "
     "batch from a column set's buffers."},
    {"hash_column", (PyCFunction)(void (*)(void))columns_hash, METH_FASTCALL,
     "hash_column(column, first_key) -> (hashes, row, problem): each row's Java hashCode (of "
     "its first key), int32; or the first row without one and why."},
    {"merge", (PyCFunction)batch_merge, METH_O,
     "merge(batches) -> bytes | None: one batch of the records of batches (merge_batches)."},
    {"read", (PyCFunction)(void (*)(void))columns_read, METH_FASTCALL,
     "read(data, queue_id, topic, offset, next_offset) -> None, or (kept, capacity, columns, "
     "headers): a pull answer's records in the range, as columns."},
    {"read_messages", (PyCFunction)(void (*)(void))messages_read, METH_FASTCALL,
     "read_messages(data, queue_id, topic, offset, next_offset, limit, message_type, "
     "topic_name, broker_name) -> list | None: a small pull answer's records in the range, "
     "as message_type objects."},
    {"gather", (PyCFunction)(void (*)(void))columns_gather, METH_FASTCALL,
     "gather(parts, count, null_empty) -> (offsets, data, validity, null_count): spans in "
     "Arrow's binary layout."},
    {"find_property", (PyCFunction)(void (*)(void))columns_find_property, METH_FASTCALL,
     "find_property(needle, parts, count) -> (offsets, data, validity, null_count): a "
     "property's values in Arrow's string layout."},
    {"send_request", (PyCFunction)(void (*)(void))send_request_encode, METH_FASTCALL,
     "send_request(correlation_id, session_id, group, topic, queue_id, batch, producer_id, "
     "base_sequence, producer_epoch) -> bytes: a send's envelope, its batch stamped."},
    {"send_answer", (PyCFunction)(void (*)(void))send_answer_read, METH_FASTCALL,
     "send_answer(cls, data) -> cls | None: a stored send's answer, read into its offsets."},
    {"pull_request", (PyCFunction)(void (*)(void))pull_request_read, METH_FASTCALL,
     "pull_request(cls, data) -> cls | None: a pull request's fields, read without protobuf."},
    {"pull_answer", (PyCFunction)(void (*)(void))pull_answer_encode, METH_FASTCALL,
     "pull_answer(correlation_id, session_id, pull_status, next_begin_offset, min_offset, "
     "max_offset, pieces) -> (list | bytes, length): a pull answer's envelope around pieces."},
    {"pull_request_encode", (PyCFunction)(void (*)(void))pull_request_encode, METH_FASTCALL,
     "pull_request_encode(correlation_id, session_id, body) -> bytes: a pull request's "
     "envelope, ready to offer."},
    {"pulled_answer", (PyCFunction)(void (*)(void))pulled_answer_read, METH_FASTCALL,
     "pulled_answer(cls, buffer, offset, length) -> cls | None: a pull answer's fields and raw "
     "section, read without protobuf."},
    {"send_fields", (PyCFunction)(void (*)(void))send_fields_read, METH_FASTCALL,
     "send_fields(cls, data) -> cls | None: a send request's fields, read without protobuf."},
    {"stored_send", (PyCFunction)(void (*)(void))stored_send_encode, METH_FASTCALL,
     "stored_send(correlation_id, session_id, answer) -> bytes: a stored send's answer, "
     "answer (queue_id, base_queue_offset, message_count, base_commit_log_offset, store_host, "
     "broker_name)."},
    {"crc32", (PyCFunction)columns_crc32, METH_O,
     "crc32(data) -> int: zlib.crc32 of data, as the passes compute it."},
    {"use_clmul", (PyCFunction)crc32_use_clmul, METH_O,
     "use_clmul(on) -> bool: whether the PCLMULQDQ CRC was in use; from now on only if on "
     "(and the CPU has it), else zlib.crc32."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "aeromq.common.record_batch._native",
    "The record batch's passes in C (see common/record_batch/_native.c).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    if (crc32_module_init() < 0 || encoder_module_init() < 0)
        return NULL;
    return PyModule_Create(&module_def);
}
