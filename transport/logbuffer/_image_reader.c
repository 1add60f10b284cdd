/*
 * ``ImageReader`` of aeromq.transport.logbuffer._term_io: an image's poll and controlled poll
 * in one call, the term scan of ``Image.python_poll`` / ``python_controlled_poll``
 * (transport/client/image.py) in C. What each call does: the header comment of _term_io.c.
 */
#include "_term_io.h" /* Python.h first */

#include <limits.h>

typedef struct {
    PyObject_HEAD
    PyObject *term_buffers[PARTITION_COUNT];
    PyObject *position_buffer;
    int64_t position_offset;
    int position_bits;
    int64_t term_length_mask;
    PyObject *header;
    PyObject *error_handler;
    int closed;
} ImageReaderObject;

static int
reader_init(ImageReaderObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"term_buffers",  "position_buffer", "position_offset",
                             "position_bits_to_shift", "header", "error_handler", NULL};
    PyObject *terms, *position_buffer, *header, *error_handler;
    long long position_offset;
    int bits;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOLiOO", kwlist, &terms, &position_buffer,
                                     &position_offset, &bits, &header, &error_handler)) {
        return -1;
    }
    if (self->header != NULL) {
        PyErr_SetString(PyExc_TypeError, "ImageReader is initialised once");
        return -1;
    }
    if (check_buffers(&position_buffer, 1) < 0 || take_term_buffers(terms, self->term_buffers) < 0) {
        return -1;
    }
    if (bits < 16 || bits > 30) {
        PyErr_Format(PyExc_ValueError, "position_bits_to_shift=%d out of range", bits);
        return -1;
    }
    self->position_buffer = Py_NewRef(position_buffer);
    self->position_offset = position_offset;
    self->position_bits = bits;
    self->term_length_mask = ((int64_t)1 << bits) - 1;
    self->header = Py_NewRef(header);
    self->error_handler = Py_NewRef(error_handler);
    return 0;
}

/* The reader's references, for the garbage collector. */
#define READER_REFS(self)                                                                       \
    {&(self)->term_buffers[0], &(self)->term_buffers[1], &(self)->term_buffers[2],              \
     &(self)->position_buffer, &(self)->header, &(self)->error_handler}

static int
reader_traverse(ImageReaderObject *self, visitproc visit, void *arg)
{
    PyObject **const refs[] = READER_REFS(self);
    return refs_traverse(refs, 6, visit, arg);
}

static int
reader_clear(ImageReaderObject *self)
{
    PyObject **const refs[] = READER_REFS(self);
    refs_clear(refs, 6);
    return 0;
}

static void
reader_dealloc(ImageReaderObject *self)
{
    PyObject_GC_UnTrack(self);
    reader_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The handler raised (the error is set): an ``Exception`` goes to the error handler (0, or -1
 * when the error handler itself raised); anything else (KeyboardInterrupt...) stays set (-1). */
static int
report(ImageReaderObject *self)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception)) {
        return -1;
    }
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL) {
        PyException_SetTraceback(value, traceback);
    }
    PyObject *result = PyObject_CallOneArg(self->error_handler, value);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    return 0;
}

/* handler(term_buffer, frame_offset + HDR_LENGTH, frame_length - HDR_LENGTH, header) */
static PyObject *
deliver(ImageReaderObject *self, PyObject *handler, PyObject *term_buffer, int64_t frame_offset,
        int64_t frame_length)
{
    PyObject *offset = PyLong_FromLongLong(frame_offset);
    if (offset == NULL) {
        return NULL;
    }
    int failed = PyObject_SetAttr(self->header, STR_OFFSET, offset);
    Py_DECREF(offset);
    if (failed < 0) {
        return NULL;
    }
    PyObject *args[4] = {term_buffer, PyLong_FromLongLong(frame_offset + HDR_LENGTH),
                         PyLong_FromLongLong(frame_length - HDR_LENGTH), self->header};
    PyObject *result = NULL;
    if (args[1] != NULL && args[2] != NULL) {
        result = PyObject_Vectorcall(handler, args, 4, NULL);
    }
    Py_XDECREF(args[1]);
    Py_XDECREF(args[2]);
    return result;
}

/* The start of a poll: the position, its term buffer (borrowed), that buffer given to the
 * header. Returns -1 with an error set. */
static int
begin_poll(ImageReaderObject *self, int64_t *position, AtomicBufferObject **term_buffer)
{
    if (load_plain_i64((AtomicBufferObject *)self->position_buffer, self->position_offset,
                       position) < 0) {
        return -1;
    }
    PyObject *buffer = self->term_buffers[partition_index(*position, self->position_bits)];
    if (PyObject_SetAttr(self->header, STR_BUFFER, buffer) < 0) {
        return -1;
    }
    *term_buffer = (AtomicBufferObject *)buffer;
    return 0;
}

/* A poll's ``(handler, fragment_limit)``: the limit as a C integer, one past the 64-bit range
 * clamped to it (a Python int of any size compares as the reference's loop does). */
static int
poll_arguments(PyObject *const *args, Py_ssize_t nargs, const char *name, long long *limit)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes 2 arguments (%zd given)", name, nargs);
        return -1;
    }
    int overflow;
    *limit = PyLong_AsLongLongAndOverflow(args[1], &overflow);
    if (*limit == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        *limit = overflow > 0 ? LLONG_MAX : LLONG_MIN;
    }
    return 0;
}

/* The frame at ``*offset``: 1 with its length and whether it holds data (not padding),
 * ``*offset`` moved past it (aligned); 0 when none is published there (length <= 0); -1 with
 * an error set. One acquire load of the header's first 8 bytes gives length and type. */
static inline int
next_frame(AtomicBufferObject *term, int64_t *offset, int64_t *frame_length, int *is_data)
{
    int64_t word = 0;
    if (load_word(term, *offset, &word) < 0) {
        return -1;
    }
    *frame_length = word & LOW_32;
    if (*frame_length == 0 || (*frame_length & 0x80000000LL)) {
        return 0;
    }
    *offset += (*frame_length + ALIGN_UP) & ALIGN_DOWN;
    *is_data = ((uint64_t)word >> 48) != 0; /* the type field, in the top 16 bits */
    return 1;
}

static PyObject *
reader_poll(ImageReaderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long limit;
    if (poll_arguments(args, nargs, "poll", &limit) < 0) {
        return NULL;
    }
    PyObject *handler = args[0];
    long long total = 0;
    while (!self->closed) {
        int64_t position;
        AtomicBufferObject *term;
        if (begin_poll(self, &position, &term) < 0) {
            return NULL;
        }
        int64_t term_offset = position & self->term_length_mask;
        int64_t capacity = term->capacity;
        int64_t offset = term_offset;
        long long fragments = 0;
        int failed = 0;
        while (fragments < limit && offset < capacity) {
            int64_t frame_offset = offset, frame_length;
            int is_data;
            int found = next_frame(term, &offset, &frame_length, &is_data);
            if (found < 0) {
                goto error;
            }
            if (found == 0) {
                break;
            }
            if (is_data) {
                fragments++;
                PyObject *result =
                    deliver(self, handler, (PyObject *)term, frame_offset, frame_length);
                if (result == NULL) {
                    goto error;
                }
                Py_DECREF(result);
            }
        }
        goto done;
    error:
        if (report(self) < 0) {
            return NULL; /* as the Python: an error handler that raises skips the store */
        }
        failed = 1;
    done:
        if (offset > term_offset &&
            store_release_i64((AtomicBufferObject *)self->position_buffer,
                              self->position_offset, position + offset - term_offset) < 0) {
            return NULL;
        }
        total += fragments;
        if (!(offset >= capacity && !failed && fragments < limit && !self->closed)) {
            break;
        }
        limit -= fragments; /* the term ended here: read on into the next one */
    }
    return PyLong_FromLongLong(total);
}

/* The position store of the controlled poll's ``finally``: done whether or not an error is
 * pending; an error of the store replaces the pending one. */
static int
store_finally(ImageReaderObject *self, int64_t value, int pending)
{
    PyObject *type = NULL, *exc = NULL, *traceback = NULL;
    if (pending) {
        PyErr_Fetch(&type, &exc, &traceback);
    }
    if (store_release_i64((AtomicBufferObject *)self->position_buffer, self->position_offset,
                          value) < 0) {
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(traceback);
        return -1;
    }
    if (pending) {
        PyErr_Restore(type, exc, traceback);
        return -1;
    }
    return 0;
}

static PyObject *
reader_controlled_poll(ImageReaderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long limit;
    if (poll_arguments(args, nargs, "controlled_poll", &limit) < 0) {
        return NULL;
    }
    PyObject *handler = args[0];
    long long total = 0;
    while (!self->closed) {
        int64_t initial_position;
        AtomicBufferObject *term;
        if (begin_poll(self, &initial_position, &term) < 0) {
            return NULL;
        }
        int64_t initial_offset = initial_position & self->term_length_mask;
        int64_t capacity = term->capacity;
        int64_t offset = initial_offset;
        long long fragments = 0;
        int stopped = 0; /* by the handler (ABORT, BREAK, an exception), not the term's end */
        int pending = 0; /* an error to raise after the position's store */
        while (fragments < limit && offset < capacity) {
            int64_t frame_offset = offset, frame_length;
            int is_data;
            int found = next_frame(term, &offset, &frame_length, &is_data);
            if (found < 0) {
                goto error;
            }
            if (found == 0) {
                break;
            }
            if (!is_data) {
                continue;
            }
            int64_t aligned_length = offset - frame_offset;
            fragments++;
            PyObject *action = deliver(self, handler, (PyObject *)term, frame_offset, frame_length);
            if (action == NULL) {
                goto error;
            }
            Py_DECREF(action); /* compared by identity only */
            if (action == ACTION_ABORT) {
                fragments--;
                offset -= aligned_length;
                stopped = 1;
                break;
            }
            if (action == ACTION_BREAK) {
                stopped = 1;
                break;
            }
            if (action == ACTION_COMMIT) {
                initial_position += offset - initial_offset;
                initial_offset = offset;
                if (!self->closed &&
                    store_release_i64((AtomicBufferObject *)self->position_buffer,
                                      self->position_offset, initial_position) < 0) {
                    goto error;
                }
            }
        }
        goto done;
    error:
        stopped = 1;
        pending = report(self) < 0;
    done:
        if (offset > initial_offset && !self->closed) {
            if (store_finally(self, initial_position + offset - initial_offset, pending) < 0) {
                return NULL;
            }
        }
        else if (pending) {
            return NULL;
        }
        total += fragments;
        if (!(offset >= capacity && !stopped && fragments < limit && !self->closed)) {
            break;
        }
        limit -= fragments; /* the term ended here: read on into the next one */
    }
    return PyLong_FromLongLong(total);
}

static PyObject *
reader_close(ImageReaderObject *self, PyObject *Py_UNUSED(ignored))
{
    self->closed = 1;
    Py_RETURN_NONE;
}

static PyObject *
reader_closed(ImageReaderObject *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->closed);
}

static PyMethodDef reader_methods[] = {
    {"poll", (PyCFunction)(void (*)(void))reader_poll, METH_FASTCALL,
     "poll(handler, fragment_limit) -> fragments read (Image.poll)"},
    {"controlled_poll", (PyCFunction)(void (*)(void))reader_controlled_poll, METH_FASTCALL,
     "controlled_poll(handler, fragment_limit) -> fragments read (Image.controlled_poll)"},
    {"close", (PyCFunction)reader_close, METH_NOARGS, "close(): polls return 0 from now on"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef reader_getset[] = {
    {"closed", (getter)reader_closed, NULL, "whether close() was called", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject ImageReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aeromq.transport.logbuffer._term_io.ImageReader",
    .tp_basicsize = sizeof(ImageReaderObject),
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An image's term scan in one call (see the module's source header).",
    .tp_traverse = (traverseproc)reader_traverse,
    .tp_clear = (inquiry)reader_clear,
    .tp_methods = reader_methods,
    .tp_getset = reader_getset,
    .tp_init = (initproc)reader_init,
    .tp_new = PyType_GenericNew,
};

