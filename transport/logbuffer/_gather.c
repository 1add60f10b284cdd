/*
 * aeromq.transport.logbuffer._gather: the payload copies of a vectored offer in C, and the
 * prefaulting of the pages they are about to fill.
 *
 * Why it exists
 * -------------
 * A vectored offer (``Publication.offer_vectored``) gathers one message from many pieces: the
 * broker answers a pull with a view of each stored batch in its commit log (a 1 MiB answer is
 * ~170 batches of 32 small messages) behind one envelope head. In Python, checking the pieces
 * and copying them frame by frame cost a few microseconds per piece (a loop step, a call, a
 * memoryview each), a large part of the broker's CPU per pulled message beside the copy itself.
 * Here each is one call over the whole list: about 50 ns a piece.
 *
 * What it does
 * ------------
 *   vectors_length(vectors) -> int
 *       the total length of ``vectors``, a list or tuple of ``(buffer, offset, length)``; -1 when
 *       a piece is not such a triple, lies outside its buffer, or the total passes 2^31 - 1 (the
 *       caller then runs the Python check, ``buffer_vector.validate_and_compute_length``, for
 *       its typed error naming the piece).
 *   copy_vectors(destination, offset, vectors, index, inner, count) -> (index, inner)
 *       copies ``count`` bytes into the writable ``destination`` at ``offset``, from piece
 *       ``index`` of ``vectors`` at ``inner`` bytes into it, on through the next pieces; returns
 *       where the copy stopped (the piece and the bytes into it), ready for the next frame.
 *       Raises ``ValueError`` when the destination range or the pieces do not hold the bytes.
 *   prefault(destination, offset, length) -> int
 *       madvise(MADV_POPULATE_WRITE) over ``length`` bytes of ``destination`` from ``offset``
 *       (page-aligned, within the buffer): the pages a writer is about to fill, made present in
 *       one call rather than one page fault each (a fresh log's 4 KiB pages cost ~2 us a fault on
 *       this VM, ~25% less populated in 1 MiB steps). Contents do not change. Returns 0, or the
 *       errno (EINVAL before Linux 5.14): the caller then stops asking.
 *
 *   BytesFiller(length)
 *       a ``bytes`` of ``length`` being filled from the fragments of a message, so that the
 *       part of a message a reader keeps (a pull answer's raw section, ``client/_answer_assembler.py``)
 *       is copied out of the log buffer once, straight into the object handed on, instead of
 *       into the fragment assembler's buffer and then out of it. ``put(source, offset, length)``
 *       appends ``length`` bytes of ``source`` from ``offset`` and returns how many are filled;
 *       ``take()`` hands the ``bytes`` over once full (``ValueError`` before) and leaves the filler
 *       empty. The ``bytes`` is reachable from Python only once taken, so nothing sees it change
 *       (the way CPython itself builds a ``bytes`` before returning it).
 *
 * Ordering: these are plain copies, as ``AtomicBuffer.put_bytes`` is. The frame writer
 * (``transport/logbuffer/_frame_writer.py``) publishes a frame by a release store of its length
 * after the copy, so a reader that sees the length (acquire) sees the payload. The Python loop
 * in ``_frame_writer.py`` stays as the fallback where this module is not built, and a test holds
 * the two to the same frames.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define MAX_LENGTH 0x7FFFFFFFLL

/* The parts of piece ``item``: a triple (buffer, offset, length), its buffer acquired. */
static int
piece_of(PyObject *item, Py_buffer *view, Py_ssize_t *offset, Py_ssize_t *length)
{
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
        PyErr_SetString(PyExc_ValueError, "a vector is not a (buffer, offset, length) triple");
        return -1;
    }
    *offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 1));
    if (*offset == -1 && PyErr_Occurred()) {
        return -1;
    }
    *length = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 2));
    if (*length == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 0), view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (*offset < 0 || *length < 0 || *offset > view->len - *length) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "vector outside its buffer");
        return -1;
    }
    return 0;
}

static PyObject *
vectors_length(PyObject *module, PyObject *vectors)
{
    (void)module;
    PyObject *fast = PySequence_Fast(vectors, "vectors must be a sequence");
    if (fast == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    long long total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_buffer view;
        Py_ssize_t offset, length;
        if (piece_of(items[i], &view, &offset, &length) < 0) {
            PyErr_Clear();
            Py_DECREF(fast);
            return PyLong_FromLong(-1);
        }
        PyBuffer_Release(&view);
        total += length;
        if (total > MAX_LENGTH) {
            Py_DECREF(fast);
            return PyLong_FromLong(-1);
        }
    }
    Py_DECREF(fast);
    return PyLong_FromLongLong(total);
}

static PyObject *
copy_vectors(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "copy_vectors(destination, offset, vectors, index, inner, count)");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]);
    Py_ssize_t index = PyLong_AsSsize_t(args[3]);
    Py_ssize_t inner = PyLong_AsSsize_t(args[4]);
    Py_ssize_t count = PyLong_AsSsize_t(args[5]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer destination;
    if (PyObject_GetBuffer(args[0], &destination, PyBUF_WRITABLE) < 0) {
        return NULL;
    }
    PyObject *fast = NULL;
    if (offset < 0 || count < 0 || index < 0 || inner < 0 || offset > destination.len - count) {
        PyErr_SetString(PyExc_ValueError, "destination range outside the buffer");
        goto fail;
    }
    fast = PySequence_Fast(args[2], "vectors must be a sequence");
    if (fast == NULL) {
        goto fail;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    char *to = (char *)destination.buf + offset;
    while (count > 0) {
        if (index >= n) {
            PyErr_SetString(PyExc_ValueError, "vectors shorter than the bytes to copy");
            goto fail;
        }
        Py_buffer view;
        Py_ssize_t piece_offset, piece_length;
        if (piece_of(items[index], &view, &piece_offset, &piece_length) < 0) {
            goto fail;
        }
        Py_ssize_t left = piece_length - inner;
        if (left < 0) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "inner offset past the vector's end");
            goto fail;
        }
        Py_ssize_t take = left < count ? left : count;
        memcpy(to, (const char *)view.buf + piece_offset + inner, (size_t)take);
        PyBuffer_Release(&view);
        to += take;
        count -= take;
        if (take == left) {
            index++;
            inner = 0;
        } else {
            inner += take;
        }
    }
    Py_DECREF(fast);
    PyBuffer_Release(&destination);
    return Py_BuildValue("(nn)", index, inner);
fail:
    Py_XDECREF(fast);
    PyBuffer_Release(&destination);
    return NULL;
}

static PyObject *
prefault(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "prefault(destination, offset, length)");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]);
    Py_ssize_t length = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer destination;
    if (PyObject_GetBuffer(args[0], &destination, PyBUF_WRITABLE) < 0) {
        return NULL;
    }
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)destination.buf + (uintptr_t)offset;
    int result = 0;
    if (offset < 0 || length < 0 || offset > destination.len - length || page <= 0 ||
        start % (uintptr_t)page != 0) {
        result = EINVAL;
    } else if (length > 0) {
        Py_BEGIN_ALLOW_THREADS
        if (madvise((void *)start, (size_t)length, MADV_POPULATE_WRITE) != 0) {
            result = errno;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&destination);
    return PyLong_FromLong(result);
}

/* BytesFiller ---------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *bytes; /* NULL once taken */
    Py_ssize_t length;
    Py_ssize_t filled;
} BytesFiller;

static PyObject *
filler_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t length;
    static char *keywords[] = {"length", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n:BytesFiller", keywords, &length)) {
        return NULL;
    }
    if (length < 0 || length > MAX_LENGTH) {
        PyErr_Format(PyExc_ValueError, "length outside 0..2^31-1: length=%zd", length);
        return NULL;
    }
    BytesFiller *self = (BytesFiller *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    /* length 0 gives the shared empty bytes, which is never written */
    self->bytes = PyBytes_FromStringAndSize(NULL, length);
    if (self->bytes == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->length = length;
    self->filled = 0;
    return (PyObject *)self;
}

static void
filler_dealloc(BytesFiller *self)
{
    Py_XDECREF(self->bytes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
filler_put(BytesFiller *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "put(source, offset, length)");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]);
    Py_ssize_t length = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (self->bytes == NULL) {
        PyErr_SetString(PyExc_ValueError, "the bytes were taken");
        return NULL;
    }
    if (length < 0 || length > self->length - self->filled) {
        PyErr_Format(PyExc_ValueError, "more bytes than are left to fill: length=%zd left=%zd",
                     length, self->length - self->filled);
        return NULL;
    }
    Py_buffer source;
    if (PyObject_GetBuffer(args[0], &source, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (offset < 0 || offset > source.len - length) {
        PyBuffer_Release(&source);
        PyErr_Format(PyExc_ValueError, "source range outside its buffer: offset=%zd length=%zd "
                     "capacity=%zd", offset, length, source.len);
        return NULL;
    }
    memcpy(PyBytes_AS_STRING(self->bytes) + self->filled, (const char *)source.buf + offset,
           (size_t)length);
    PyBuffer_Release(&source);
    self->filled += length;
    return PyLong_FromSsize_t(self->filled);
}

static PyObject *
filler_take(BytesFiller *self, PyObject *Py_UNUSED(ignored))
{
    if (self->bytes == NULL) {
        PyErr_SetString(PyExc_ValueError, "the bytes were taken");
        return NULL;
    }
    if (self->filled != self->length) {
        PyErr_Format(PyExc_ValueError, "not full: filled=%zd length=%zd", self->filled,
                     self->length);
        return NULL;
    }
    PyObject *bytes = self->bytes;
    self->bytes = NULL;
    return bytes;
}

static PyObject *
filler_get_filled(BytesFiller *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->filled);
}

static PyObject *
filler_get_length(BytesFiller *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->length);
}

static PyMethodDef filler_methods[] = {
    {"put", (PyCFunction)(void (*)(void))filler_put, METH_FASTCALL,
     "put(source, offset, length) -> filled: append length bytes of source from offset"},
    {"take", (PyCFunction)filler_take, METH_NOARGS,
     "take() -> bytes: the filled bytes (ValueError unless full); the filler is then empty"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef filler_getset[] = {
    {"filled", (getter)filler_get_filled, NULL, "how many bytes are filled", NULL},
    {"length", (getter)filler_get_length, NULL, "how many bytes the filled bytes hold", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject BytesFillerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aeromq.transport.logbuffer._gather.BytesFiller",
    .tp_doc = "BytesFiller(length): a bytes of length, filled by put, handed over by take",
    .tp_basicsize = sizeof(BytesFiller),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = filler_new,
    .tp_dealloc = (destructor)filler_dealloc,
    .tp_methods = filler_methods,
    .tp_getset = filler_getset,
};

static PyMethodDef methods[] = {
    {"vectors_length", (PyCFunction)vectors_length, METH_O,
     "vectors_length(vectors) -> total length, or -1 when a vector is bad"},
    {"copy_vectors", (PyCFunction)(void (*)(void))copy_vectors, METH_FASTCALL,
     "copy_vectors(destination, offset, vectors, index, inner, count) -> (index, inner)"},
    {"prefault", (PyCFunction)(void (*)(void))prefault, METH_FASTCALL,
     "prefault(destination, offset, length) -> 0 or errno (madvise MADV_POPULATE_WRITE)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "aeromq.transport.logbuffer._gather",
    .m_doc = "The payload copies of a vectored offer (see the header of _gather.c).",
    .m_size = 0,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__gather(void)
{
    if (PyType_Ready(&BytesFillerType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&BytesFillerType);
    if (PyModule_AddObject(module, "BytesFiller", (PyObject *)&BytesFillerType) < 0) {
        Py_DECREF(&BytesFillerType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
