/*
 * aeromq.broker.store._batch_take: the first window of the broker's unfiltered get, in C.
 *
 * Why it exists
 * -------------
 * A pull of a caught-up consumer takes the stored batches its consume-queue entries point to,
 * whole, while their bytes stay within the pull's cap, each header checked against its entries
 * (``MessageReader._take_checked_py`` in ``_reader.py``). In numpy that is some 25 steps, about
 * 25 us per pull, a large part of the broker's CPU per pull; here it is one pass over the
 * entries.
 *
 * What it does
 * ------------
 *   take(entries, view, view_length, file_start, topic, queue_id, first_offset, max_bytes)
 *       -> (count, total_bytes, last_position, full, pieces) | None
 *       ``MessageReader._take_checked_py``'s result (see below); ``_take_checked_py`` is the
 *       reference a test holds this to, and the fallback when this module is not built.
 *
 * The batch's layout is ``common/record_batch/record_batch.h`` (the record batch's public C
 * header); the consume-queue entry's is ``_consume_queue.py``'s. Every read is bounds-checked
 * against the segment's view; bad input returns None, never crashes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../../common/record_batch/record_batch.h"

/* a consume-queue entry (ENTRY_DTYPE of _consume_queue.py): i64 position, i32 size, i64 tag */
#define ENTRY_LENGTH 20

/* take(entries, view, view_length, file_start, topic, queue_id, first_offset, max_bytes)
 *   -> (count, total_bytes, last_position, full, pieces) | None
 * ``MessageReader._take_checked_py``'s result from one pass over the entries: the batches from
 * the first while their bytes stay within max_bytes (the first always), each header checked
 * against its entries; pieces are slices of view. None when a batch lies outside
 * [0, view_length) of the file or a check fails. */
static PyObject *
batch_take(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "take() takes 8 arguments (%zd given)", nargs);
        return NULL;
    }
    Py_ssize_t view_length = PyLong_AsSsize_t(args[2]);
    long long file_start = PyLong_AsLongLong(args[3]);
    long long queue_id = PyLong_AsLongLong(args[5]);
    long long first_offset = PyLong_AsLongLong(args[6]);
    long long max_bytes = PyLong_AsLongLong(args[7]);
    if (PyErr_Occurred())
        return NULL;
    Py_buffer entries, data, topic;
    if (PyObject_GetBuffer(args[0], &entries, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&entries);
        return NULL;
    }
    if (PyObject_GetBuffer(args[4], &topic, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&data);
        PyBuffer_Release(&entries);
        return NULL;
    }
    PyObject *result = NULL;
    PyObject *pieces = NULL;
    const unsigned char *e = (const unsigned char *)entries.buf;
    const unsigned char *d = (const unsigned char *)data.buf;
    Py_ssize_t m = entries.len / ENTRY_LENGTH;
    Py_ssize_t checked = FIXED_HEADER_LENGTH + topic.len;
    if (view_length > data.len)
        view_length = data.len;
    if (m == 0 || entries.len % ENTRY_LENGTH != 0)
        goto refused;
    pieces = PyList_New(0);
    if (pieces == NULL)
        goto done;
    long long total = 0, last_position = -1;
    Py_ssize_t count = m, i = 0;
    int full = 0;
    while (i < m) {
        long long position = load_i64(e + i * ENTRY_LENGTH);
        long long size = load_i32(e + i * ENTRY_LENGTH + 8);
        Py_ssize_t j = i + 1;
        while (j < m && load_i64(e + j * ENTRY_LENGTH) == position)
            j++;
        if (last_position >= 0 && total + size > max_bytes) {
            full = 1;
            count = i;
            break;
        }
        long long relative = position - file_start;
        if (size < checked || relative < 0 || relative + size > view_length)
            goto refused;
        const unsigned char *h = d + relative;
        long long base = load_i64(h + BASE_QUEUE_OFFSET_OFFSET);
        Py_ssize_t topic_length = batch_topic_length(h);
        if (load_u32(h + MAGIC_OFFSET) != BATCH_MAGIC ||
            load_i32(h + TOTAL_LENGTH_OFFSET) != size ||
            load_i64(h + BASE_PHYSICAL_OFFSET_OFFSET) != position ||
            load_i32(h + QUEUE_ID_OFFSET) != queue_id || base > first_offset + i ||
            first_offset + j - 1 >= base + load_i32(h + RECORD_COUNT_OFFSET) ||
            topic_length != topic.len ||
            memcmp(h + TOPIC_OFFSET, topic.buf, (size_t)topic.len) != 0)
            goto refused;
        PyObject *piece = PySequence_GetSlice(args[1], (Py_ssize_t)relative,
                                              (Py_ssize_t)(relative + size));
        if (piece == NULL)
            goto done;
        int appended = PyList_Append(pieces, piece);
        Py_DECREF(piece);
        if (appended < 0)
            goto done;
        total += size;
        last_position = position;
        i = j;
    }
    result = Py_BuildValue("(nLLOO)", count, total, last_position, full ? Py_True : Py_False,
                           pieces);
    goto done;
refused:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(pieces);
    PyBuffer_Release(&topic);
    PyBuffer_Release(&data);
    PyBuffer_Release(&entries);
    return result;
}

static PyMethodDef methods[] = {
    {"take", (PyCFunction)(void (*)(void))batch_take, METH_FASTCALL,
     "take(entries, view, view_length, file_start, topic, queue_id, first_offset, max_bytes) "
     "-> (count, total_bytes, last_position, full, pieces) | None (MessageReader)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "aeromq.broker.store._batch_take",
    "The first window of the broker's unfiltered get in C (see broker/store/_batch_take.c).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit__batch_take(void)
{
    return PyModule_Create(&module_def);
}
