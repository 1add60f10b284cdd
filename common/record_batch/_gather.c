/*
 * The gathers of aeromq.common.record_batch._native: ``gather`` and ``find_property``, the
 * kept records' spans in Arrow's binary layout.
 *
 * Why it exists
 * -------------
 * A consumer that reads pulled messages as columns (``MessageBatch.bodies``, ``to_arrow``, the
 * Spark reader) wants the bodies, tags and a property's values in Arrow's layout: i32 offsets
 * and one data buffer. In numpy that is a slice per run of adjacent records and a join, and a
 * regular expression over the property strings; here each is one pass of copies.
 *
 * What it does
 * ------------
 *   gather(parts, count, null_empty)
 *       -> ``(offsets, data, validity, null_count)``: the ``[start, start + length)`` spans of
 *          ``parts`` (``(buffer, starts i64 array, lengths i32 array)`` each, ``count`` spans in
 *          all) in Arrow's binary layout: ``count + 1`` i32 offsets, the bytes back to back, and
 *          with ``null_empty`` a validity bitmap of the non-empty spans (None when all are).
 *   find_property(needle, parts, count)
 *       -> the same four, of the value of the property whose ``name\x01`` is ``needle`` in each
 *          span of RocketMQ's property string (``name\x01value\x02`` pairs); null where absent.
 *
 * ``spans.py`` keeps the numpy versions, the reference a test holds these to and the fallback.
 * Every span is checked to lie in its buffer. A gather of 64 KiB or more runs with the GIL
 * released (the buffers are held).
 */
#include "_native.h"

/* One part of ``parts``: its buffer, and its spans' starts (i64) and lengths (i32). */
typedef struct {
    Py_buffer buffer, starts, lengths;
    Py_ssize_t count;
} Part;

static void
parts_release(Part *parts, Py_ssize_t held)
{
    for (Py_ssize_t p = 0; p < held; p++) {
        PyBuffer_Release(&parts[p].buffer);
        PyBuffer_Release(&parts[p].starts);
        PyBuffer_Release(&parts[p].lengths);
    }
    PyMem_Free(parts);
}

/* ``parts`` (a list of 3-tuples) held as Parts, each span checked to lie in its buffer; NULL
 * with an error set. ``*held`` is how many to release. */
static Part *
parts_hold(PyObject *list, Py_ssize_t count, Py_ssize_t *held)
{
    *held = 0;
    if (!PyList_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "parts is a list of (buffer, starts, lengths)");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(list);
    Part *parts = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Part));
    if (parts == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t p = 0; p < n; p++) {
        PyObject *item = PyList_GET_ITEM(list, p);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            PyErr_SetString(PyExc_TypeError, "parts is a list of (buffer, starts, lengths)");
            return parts;
        }
        Part *part = &parts[p];
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 0), &part->buffer, PyBUF_SIMPLE) < 0)
            return parts;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 1), &part->starts, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            PyBuffer_Release(&part->buffer);
            return parts;
        }
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 2), &part->lengths, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            PyBuffer_Release(&part->buffer);
            PyBuffer_Release(&part->starts);
            return parts;
        }
        *held = p + 1;
        if (part->starts.itemsize != 8 || part->lengths.itemsize != 4
            || part->starts.len / 8 != part->lengths.len / 4) {
            PyErr_SetString(PyExc_ValueError, "starts are i64 and lengths i32, as many of each");
            return parts;
        }
        part->count = part->starts.len / 8;
        const int64_t *starts = part->starts.buf;
        const int32_t *lengths = part->lengths.buf;
        for (Py_ssize_t i = 0; i < part->count; i++) {
            if (starts[i] < 0 || lengths[i] < 0 || starts[i] + lengths[i] > part->buffer.len) {
                PyErr_SetString(PyExc_ValueError, "a span outside its buffer");
                return parts;
            }
        }
        total += part->count;
    }
    if (total != count) {
        PyErr_Format(PyExc_ValueError, "the parts hold %zd spans, not %zd", total, count);
        return parts;
    }
    return parts;
}

/* The four results of gather and find_property, from filled ``offsets`` and ``valid``. */
static PyObject *
layout_result(PyObject *offsets, PyObject *data, PyObject *validity, Py_ssize_t null_count)
{
    if (validity == NULL || null_count == 0)
        return Py_BuildValue("OOOn", offsets, data, Py_None, (Py_ssize_t)0);
    return Py_BuildValue("OOOn", offsets, data, validity, null_count);
}

PyObject *
columns_gather(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "gather(parts, count, null_empty)");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    int null_empty = PyObject_IsTrue(args[2]);
    if ((count == -1 || null_empty < 0) && PyErr_Occurred())
        return NULL;
    Py_ssize_t held;
    Part *parts = parts_hold(args[0], count, &held);
    PyObject *out = NULL, *offsets = NULL, *data = NULL, *validity = NULL;
    if (parts == NULL || PyErr_Occurred())
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(args[0]);
    int64_t total = 0;
    for (Py_ssize_t p = 0; p < n; p++) {
        const int32_t *lengths = parts[p].lengths.buf;
        for (Py_ssize_t i = 0; i < parts[p].count; i++)
            total += lengths[i];
    }
    if (total > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "over 2 GiB of data in one column");
        goto done;
    }
    offsets = PyBytes_FromStringAndSize(NULL, 4 * (count + 1));
    data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (offsets == NULL || data == NULL)
        goto done;
    unsigned char *valid = NULL;
    if (null_empty) {
        validity = PyBytes_FromStringAndSize(NULL, (count + 7) / 8);
        if (validity == NULL)
            goto done;
        valid = (unsigned char *)PyBytes_AS_STRING(validity);
        memset(valid, 0, (size_t)(count + 7) / 8);
    }
    int32_t *offset_out = (int32_t *)(void *)PyBytes_AS_STRING(offsets);
    char *data_out = PyBytes_AS_STRING(data);
    int32_t at = 0;
    Py_ssize_t row = 0, null_count = 0;
    offset_out[0] = 0;
    PyThreadState *saved = total >= RELEASE_GIL_BYTES ? PyEval_SaveThread() : NULL;
    for (Py_ssize_t p = 0; p < n; p++) {
        const char *buffer = parts[p].buffer.buf;
        const int64_t *starts = parts[p].starts.buf;
        const int32_t *lengths = parts[p].lengths.buf;
        Py_ssize_t i = 0;
        while (i < parts[p].count) {
            /* a run of adjacent spans is one copy (a run is usually a whole stored batch) */
            Py_ssize_t j = i + 1;
            int64_t run_end = starts[i] + lengths[i];
            while (j < parts[p].count && starts[j] == run_end)
                run_end += lengths[j++];
            memcpy(data_out + at, buffer + starts[i], (size_t)(run_end - starts[i]));
            for (; i < j; i++, row++) {
                at += lengths[i];
                offset_out[row + 1] = at;
                if (valid != NULL) {
                    if (lengths[i])
                        valid[row >> 3] |= (unsigned char)(1u << (row & 7));
                    else
                        null_count++;
                }
            }
        }
    }
    if (saved != NULL)
        PyEval_RestoreThread(saved);
    out = layout_result(offsets, data, validity, null_count);

done:
    Py_XDECREF(offsets);
    Py_XDECREF(data);
    Py_XDECREF(validity);
    if (parts != NULL)
        parts_release(parts, held);
    return out;
}

PyObject *
columns_find_property(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "find_property(needle, parts, count)");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[2]);
    if (count == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer needle_view;
    if (PyObject_GetBuffer(args[0], &needle_view, PyBUF_SIMPLE) < 0)
        return NULL;
    const char *needle = needle_view.buf;
    const Py_ssize_t needle_length = needle_view.len;
    Py_ssize_t held;
    Part *parts = parts_hold(args[1], count, &held);
    PyObject *out = NULL, *offsets = NULL, *data = NULL, *validity = NULL;
    int64_t *found = NULL; /* per row: value start, or -1; then value length */
    if (parts == NULL || PyErr_Occurred())
        goto done;
    if (needle_length == 0) {
        PyErr_SetString(PyExc_ValueError, "an empty property name");
        goto done;
    }
    found = PyMem_Malloc(sizeof(int64_t) * 2 * (size_t)(count ? count : 1));
    if (found == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n = PyList_GET_SIZE(args[1]);
    Py_ssize_t row = 0, null_count = 0;
    int64_t total = 0;
    for (Py_ssize_t p = 0; p < n; p++) {
        const char *buffer = parts[p].buffer.buf;
        const int64_t *starts = parts[p].starts.buf;
        const int32_t *lengths = parts[p].lengths.buf;
        for (Py_ssize_t i = 0; i < parts[p].count; i++, row++) {
            const char *pair = buffer + starts[i];
            const char *stop = pair + lengths[i];
            found[2 * row] = -1;
            /* pairs start at the span's start and after each \x02 */
            while (stop - pair > needle_length) {
                const char *pair_end = memchr(pair, 2, (size_t)(stop - pair));
                if (pair_end == NULL)
                    break;
                if (pair_end - pair >= needle_length && memcmp(pair, needle, (size_t)needle_length) == 0) {
                    found[2 * row] = (pair - buffer) + needle_length;
                    found[2 * row + 1] = pair_end - pair - needle_length;
                    total += found[2 * row + 1];
                    break;
                }
                pair = pair_end + 1;
            }
            if (found[2 * row] < 0)
                null_count++;
        }
    }
    if (total > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "over 2 GiB of data in one column");
        goto done;
    }
    offsets = PyBytes_FromStringAndSize(NULL, 4 * (count + 1));
    data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    validity = PyBytes_FromStringAndSize(NULL, (count + 7) / 8);
    if (offsets == NULL || data == NULL || validity == NULL)
        goto done;
    unsigned char *valid = (unsigned char *)PyBytes_AS_STRING(validity);
    memset(valid, 0, (size_t)(count + 7) / 8);
    int32_t *offset_out = (int32_t *)(void *)PyBytes_AS_STRING(offsets);
    char *data_out = PyBytes_AS_STRING(data);
    int32_t at = 0;
    offset_out[0] = 0;
    row = 0;
    for (Py_ssize_t p = 0; p < n; p++) {
        const char *buffer = parts[p].buffer.buf;
        for (Py_ssize_t i = 0; i < parts[p].count; i++, row++) {
            if (found[2 * row] >= 0) {
                memcpy(data_out + at, buffer + found[2 * row], (size_t)found[2 * row + 1]);
                at += (int32_t)found[2 * row + 1];
                valid[row >> 3] |= (unsigned char)(1u << (row & 7));
            }
            offset_out[row + 1] = at;
        }
    }
    out = layout_result(offsets, data, validity, null_count);

done:
    PyMem_Free(found);
    Py_XDECREF(offsets);
    Py_XDECREF(data);
    Py_XDECREF(validity);
    if (parts != NULL)
        parts_release(parts, held);
    PyBuffer_Release(&needle_view);
    return out;
}
