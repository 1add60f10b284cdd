/*
 * aeromq.broker.store._put_one: a one-record send's store append, in C.
 *
 * Why it exists
 * -------------
 * A one-message send (``Producer.send``) reaches the store as a record batch of one record. The
 * Python append (``PutPath._append`` in ``_put_path.py``) checks its header, copies it into the
 * commit log's map, patches the broker's fields, writes its consume-queue entry and reads the
 * key it is indexed under: some 25 calls of Python functions, a quarter of the broker's CPU for
 * the send. Here the checks are one call and the writes a second (``PutPath._append_one``
 * keeps the Python around them: the put lock, the disk's room, the clock, the offsets).
 *
 * What it does
 * ------------
 *   check(batch, topic, max_length, fallback_attributes, producer_type) -> int | producer_type
 *       Whether ``batch`` is a plain one-record batch of ``topic`` (UTF-8 bytes) that the
 *       Python path would append as it is: the same checks as ``PutPath._append`` (length
 *       within [FIXED_HEADER_LENGTH, max_length], magic, total length, the record's columns
 *       inside the batch, the topic), one record, and no attribute of ``fallback_attributes``
 *       (a timer, a transaction's half, compression: those go the Python way). 0 means "take
 *       the Python path", which refuses or appends it; 1 a plain batch; for one with a producer
 *       state (PRODUCER_STATE_FLAG: an idempotent producer's, which the caller checks against
 *       the producer's last batches as the Python path does), that state as an instance of
 *       ``producer_type`` (a tuple type of three items, ``ProducerState``: producer id, base
 *       sequence, epoch), what ``read_producer_state`` reads.
 *
 *   write(batch, segment, position, queue_offset, physical_offset, store_timestamp_ms,
 *         store_host, queue_id, queue_file, queue_position) -> None | bytes | True
 *       Copy a batch ``check`` passed into ``segment`` (the commit log segment's map) at
 *       ``position``, as ``CommitLog.append_batch`` does for a batch up to
 *       MAP_COPY_MAX_LENGTH: the bytes after the length and magic first, the broker's fields
 *       (base queue offset, base physical offset, store timestamp, store host (8 bytes, zero
 *       padded), queue id) patched over them, the length and magic last (a process killed in
 *       between leaves no batch whose magic is there without its fields). Then the record's
 *       consume-queue entry (physical offset, batch size, tag hash) into ``queue_file`` (the
 *       consume queue's file map) at ``queue_position``, as ``ConsumeQueue.put_batch``.
 *       Returns what the record is indexed under: None for no key, its ``UNIQ_KEY`` value
 *       (bytes) when that is its only key (what a producer sends unless told keys), True when
 *       ``_batch_codec.batch_keys`` must read them (``KEYS``, or a marker not at a property's
 *       start). The caller has checked that both writes fit; a write out of its map raises
 *       ValueError and writes nothing.
 *
 * The layouts: the batch's in ``common/record_batch/record_batch.h`` (diagram in
 * ``common/record_batch/descriptor.py``), the commit log segment's in ``_commit_log.py``, the
 * consume-queue entry's in ``_consume_queue.py``. ``PutPath._append`` is the reference a test
 * holds this to (the same files and answers, hypothesis-generated sends).
 */
#define _GNU_SOURCE /* memmem */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../../common/record_batch/record_batch.h"

/* the consume-queue entry (_consume_queue.py): i64 physical offset, i32 size, i64 tag hash */
#define ENTRY_LENGTH 20
#define ENTRY_SIZE_OFFSET 8
#define ENTRY_TAG_HASH_OFFSET 12
/* the record's column of property lengths (after tag hash, body and tags lengths) */
#define PROPERTIES_LENGTH_COLUMN 16
/* the commit log's prefix written last: total length and magic */
#define PREFIX_LENGTH 8
#define PROPERTY_SEPARATOR 2 /* ends each name=value pair of a property string */

static const char KEYS_MARKER[] = "KEYS\x01";
static const char UNIQ_KEY_MARKER[] = "UNIQ_KEY\x01";

/* A batch's producer state (``b`` holds it: check made sure) as an instance of the tuple type
 * ``cls``: a new reference, or NULL with an error. */
static PyObject *
producer_state_of(PyObject *cls, const unsigned char *b)
{
    const unsigned char *state = b + batch_producer_state(batch_topic_length(b));
    int16_t epoch = (int16_t)(uint16_t)(state[PRODUCER_EPOCH_OFFSET] |
                                        state[PRODUCER_EPOCH_OFFSET + 1] << 8);
    PyObject *items[3] = {
        PyLong_FromLongLong(load_i64(state + PRODUCER_ID_OFFSET)),
        PyLong_FromLong(load_i32(state + BASE_SEQUENCE_OFFSET)),
        PyLong_FromLong(epoch),
    };
    PyObject *out = NULL;
    if (items[0] != NULL && items[1] != NULL && items[2] != NULL)
        out = ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 3);
    if (out == NULL) {
        for (int i = 0; i < 3; i++)
            Py_XDECREF(items[i]);
        return NULL;
    }
    for (int i = 0; i < 3; i++)
        PyTuple_SET_ITEM(out, i, items[i]);
    return out;
}

/* check(batch, topic, max_length, fallback_attributes, producer_type) (see the module) */
static PyObject *
put_one_check(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "check() takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *producer_type = args[4];
    if (!PyType_Check(producer_type) ||
        !PyType_IsSubtype((PyTypeObject *)producer_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "check() needs a tuple type for the producer state");
        return NULL;
    }
    Py_ssize_t max_length = PyLong_AsSsize_t(args[2]);
    long fallback = PyLong_AsLong(args[3]);
    if (PyErr_Occurred())
        return NULL;
    Py_buffer batch, topic;
    if (PyObject_GetBuffer(args[0], &batch, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &topic, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&batch);
        return NULL;
    }
    const unsigned char *b = batch.buf;
    Py_ssize_t length = batch.len;
    int ok = 0;
    if (length >= FIXED_HEADER_LENGTH && length <= max_length &&
        load_u32(b + MAGIC_OFFSET) == BATCH_MAGIC && load_i32(b + TOTAL_LENGTH_OFFSET) == length &&
        load_i32(b + RECORD_COUNT_OFFSET) == 1) {
        unsigned attributes = batch_attributes(b);
        ptrdiff_t topic_length = batch_topic_length(b);
        ptrdiff_t header_length = batch_header_length(topic_length, attributes);
        if (!(attributes & (unsigned)fallback) && header_length + RECORD_OVERHEAD <= length &&
            topic_length == topic.len &&
            memcmp(b + TOPIC_OFFSET, topic.buf, (size_t)topic_length) == 0)
            ok = (attributes & PRODUCER_STATE_FLAG) ? 2 : 1;
    }
    PyObject *out = ok == 2 ? producer_state_of(producer_type, b) : PyLong_FromLong(ok);
    PyBuffer_Release(&topic);
    PyBuffer_Release(&batch);
    return out;
}

/* What the record of a one-record batch at ``b`` (``length`` bytes, its columns from
 * ``header_length``) is indexed under: Py_None, a new bytes of its UNIQ_KEY, or Py_True (see
 * the module). Its properties are the batch's last bytes (``_batch_codec.batch_keys``). */
static PyObject *
record_key(const unsigned char *b, Py_ssize_t length, ptrdiff_t header_length)
{
    int32_t properties_length = load_i32(b + header_length + PROPERTIES_LENGTH_COLUMN);
    if (properties_length <= 0)
        Py_RETURN_NONE;
    if (properties_length > length - header_length)
        Py_RETURN_TRUE; /* not a batch the send's check passes: the Python walk decides */
    const unsigned char *p = b + length - properties_length;
    size_t n = (size_t)properties_length;
    if (memmem(p, n, KEYS_MARKER, sizeof KEYS_MARKER - 1) != NULL)
        Py_RETURN_TRUE;
    /* the last UNIQ_KEY marker, as _batch_codec._record_keys finds it (rfind) */
    const unsigned char *found = NULL;
    const unsigned char *from = p;
    const size_t marker = sizeof UNIQ_KEY_MARKER - 1;
    for (;;) {
        size_t left = n - (size_t)(from - p);
        const unsigned char *at = memmem(from, left, UNIQ_KEY_MARKER, marker);
        if (at == NULL)
            break;
        found = at;
        from = at + 1;
    }
    if (found == NULL)
        Py_RETURN_NONE;
    if (found != p && found[-1] != PROPERTY_SEPARATOR)
        Py_RETURN_TRUE; /* inside another property's value: the Python walk decides */
    const unsigned char *value = found + marker;
    const unsigned char *end = memchr(value, PROPERTY_SEPARATOR, n - (size_t)(value - p));
    if (end == NULL)
        end = p + n;
    if (end == value)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)value, end - value);
}

/* write(batch, segment, position, queue_offset, physical_offset, store_timestamp_ms,
 *       store_host, queue_id, queue_file, queue_position) -> None | bytes | True */
static PyObject *
put_one_write(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 10) {
        PyErr_Format(PyExc_TypeError, "write() takes 10 arguments (%zd given)", nargs);
        return NULL;
    }
    Py_ssize_t position = PyLong_AsSsize_t(args[2]);
    long long queue_offset = PyLong_AsLongLong(args[3]);
    long long physical_offset = PyLong_AsLongLong(args[4]);
    long long store_timestamp_ms = PyLong_AsLongLong(args[5]);
    long queue_id = PyLong_AsLong(args[7]);
    Py_ssize_t queue_position = PyLong_AsSsize_t(args[9]);
    if (PyErr_Occurred())
        return NULL;
    Py_buffer batch, segment, host, entries;
    if (PyObject_GetBuffer(args[0], &batch, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &segment, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&batch);
        return NULL;
    }
    if (PyObject_GetBuffer(args[6], &host, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&segment);
        PyBuffer_Release(&batch);
        return NULL;
    }
    if (PyObject_GetBuffer(args[8], &entries, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&host);
        PyBuffer_Release(&segment);
        PyBuffer_Release(&batch);
        return NULL;
    }
    PyObject *result = NULL;
    const unsigned char *b = batch.buf;
    Py_ssize_t length = batch.len;
    if (length < FIXED_HEADER_LENGTH || position < 0 || position > segment.len - length ||
        queue_position < 0 || queue_position > entries.len - ENTRY_LENGTH) {
        PyErr_Format(PyExc_ValueError,
                     "a write out of its map: length=%zd position=%zd segment=%zd "
                     "queue_position=%zd queue_file=%zd",
                     length, position, segment.len, queue_position, entries.len);
        goto done;
    }
    ptrdiff_t header_length = batch_header_length_of(b);
    if (header_length + RECORD_OVERHEAD > length) {
        PyErr_SetString(PyExc_ValueError, "not a batch check() passed");
        goto done;
    }
    unsigned char *to = (unsigned char *)segment.buf + position;
    memcpy(to + PREFIX_LENGTH, b + PREFIX_LENGTH, (size_t)(length - PREFIX_LENGTH));
    store_i64(to + BASE_QUEUE_OFFSET_OFFSET, queue_offset);
    store_i64(to + BASE_PHYSICAL_OFFSET_OFFSET, physical_offset);
    store_i64(to + STORE_TIMESTAMP_OFFSET, store_timestamp_ms);
    size_t host_length = host.len < HOST_FIELD_LENGTH ? (size_t)host.len : HOST_FIELD_LENGTH;
    memset(to + STORE_HOST_OFFSET, 0, HOST_FIELD_LENGTH);
    memcpy(to + STORE_HOST_OFFSET, host.buf, host_length);
    store_u32(to + QUEUE_ID_OFFSET, (uint32_t)(int32_t)queue_id);
    /* the length and magic last: nothing above may be reordered after them */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy(to, b, PREFIX_LENGTH);
    unsigned char *entry = (unsigned char *)entries.buf + queue_position;
    store_i64(entry, physical_offset);
    store_u32(entry + ENTRY_SIZE_OFFSET, (uint32_t)length);
    memcpy(entry + ENTRY_TAG_HASH_OFFSET, b + header_length, 8); /* the tag hash, as stored */
    result = record_key(b, length, header_length);
done:
    PyBuffer_Release(&entries);
    PyBuffer_Release(&host);
    PyBuffer_Release(&segment);
    PyBuffer_Release(&batch);
    return result;
}

static PyMethodDef put_one_methods[] = {
    {"check", (PyCFunction)(void (*)(void))put_one_check, METH_FASTCALL,
     "check(batch, topic, max_length, fallback_attributes, producer_type) -> int | "
     "producer_type: whether the native write takes this batch (a plain one-record batch of "
     "topic: 1, with a producer state: that state) or not (0)."},
    {"write", (PyCFunction)(void (*)(void))put_one_write, METH_FASTCALL,
     "write(batch, segment, position, queue_offset, physical_offset, store_timestamp_ms, "
     "store_host, queue_id, queue_file, queue_position) -> None | bytes | True: the batch into "
     "the commit log's map, its consume-queue entry, and the key it is indexed under."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef put_one_module = {
    PyModuleDef_HEAD_INIT,
    "_put_one",
    "A one-record send's store append in C (see _put_one.c).",
    -1,
    put_one_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__put_one(void)
{
    return PyModule_Create(&put_one_module);
}
