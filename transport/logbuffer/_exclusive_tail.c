/*
 * ``ExclusiveTail`` of aeromq.transport.logbuffer._term_io: an exclusive publication's append
 * state and its offer of a one-frame message in one call, the single-frame path of
 * ``ExclusivePublication.offer`` (transport/client/exclusive_publication.py) in C. What the call
 * does and when it declines: the header comment of _term_io.c.
 */
#include "_term_io.h" /* Python.h first */

#include <stddef.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *term_buffers[PARTITION_COUNT];
    PyObject *meta_buffer;
    PyObject *limit_buffer;
    int64_t limit_offset;
    int64_t version_flags_type;
    int64_t session_id_high;
    int64_t stream_id_low;
    int64_t term_length;
    int64_t max_payload_length;
    /* the append state, shared with the Python paths through the members below */
    long long term_begin_position;
    long long term_offset;
    int term_id;
    int active_index;
    int closed;
} ExclusiveTailObject;

static int
tail_init(ExclusiveTailObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"term_buffers", "meta_buffer",        "limit_buffer",
                             "limit_offset", "header_words",       "term_length",
                             "max_payload_length", "term_id",      "term_offset",
                             "active_index", "term_begin_position", NULL};
    PyObject *terms, *meta, *limit_buffer;
    long long limit_offset, term_length, max_payload, term_offset, begin, words[3];
    int term_id, active_index;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOL(LLL)LLiLiL", kwlist, &terms, &meta,
                                     &limit_buffer, &limit_offset, &words[0], &words[1],
                                     &words[2], &term_length, &max_payload, &term_id,
                                     &term_offset, &active_index, &begin)) {
        return -1;
    }
    if (self->meta_buffer != NULL) {
        PyErr_SetString(PyExc_TypeError, "ExclusiveTail is initialised once");
        return -1;
    }
    PyObject *both[2] = {meta, limit_buffer};
    if (check_buffers(both, 2) < 0 || take_term_buffers(terms, self->term_buffers) < 0) {
        return -1;
    }
    if (active_index < 0 || active_index >= PARTITION_COUNT) {
        PyErr_Format(PyExc_ValueError, "active_index=%d out of range", active_index);
        return -1;
    }
    self->meta_buffer = Py_NewRef(meta);
    self->limit_buffer = Py_NewRef(limit_buffer);
    self->limit_offset = limit_offset;
    self->version_flags_type = words[0];
    self->session_id_high = words[1];
    self->stream_id_low = words[2];
    self->term_length = term_length;
    self->max_payload_length = max_payload;
    self->term_id = term_id;
    self->term_offset = term_offset;
    self->active_index = active_index;
    self->term_begin_position = begin;
    return 0;
}

/* The tail's references, for the garbage collector. */
#define TAIL_REFS(self)                                                                         \
    {&(self)->term_buffers[0], &(self)->term_buffers[1], &(self)->term_buffers[2],              \
     &(self)->meta_buffer, &(self)->limit_buffer}

static int
tail_traverse(ExclusiveTailObject *self, visitproc visit, void *arg)
{
    PyObject **const refs[] = TAIL_REFS(self);
    return refs_traverse(refs, 5, visit, arg);
}

static int
tail_clear(ExclusiveTailObject *self)
{
    PyObject **const refs[] = TAIL_REFS(self);
    refs_clear(refs, 5);
    return 0;
}

static void
tail_dealloc(ExclusiveTailObject *self)
{
    PyObject_GC_UnTrack(self);
    tail_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static inline int64_t
shift_32(int64_t value)
{
    return (int64_t)((uint64_t)value << 32);
}

/* The single-frame append, or 0 (nothing changed) for the Python path to take the message. */
static int64_t
append_one(ExclusiveTailObject *self, const char *payload, int64_t length)
{
    if (self->closed || length > self->max_payload_length) {
        return 0;
    }
    AtomicBufferObject *limit_buffer = (AtomicBufferObject *)self->limit_buffer;
    if (!fits_aligned(limit_buffer, self->limit_offset, 8)) {
        return 0;
    }
    int64_t limit = __atomic_load_n((int64_t *)(limit_buffer->addr + self->limit_offset),
                                    __ATOMIC_ACQUIRE);
    int64_t term_offset = self->term_offset;
    if (self->term_begin_position + term_offset >= limit) {
        return 0; /* back pressure, not connected, max position: the Python path says which */
    }
    int64_t frame_length = length + HDR_LENGTH;
    int64_t resulting_offset = term_offset + ((frame_length + ALIGN_UP) & ALIGN_DOWN);
    if (resulting_offset > self->term_length) {
        return 0; /* padding and rotation */
    }
    int index = self->active_index;
    AtomicBufferObject *meta = (AtomicBufferObject *)self->meta_buffer;
    AtomicBufferObject *term = (AtomicBufferObject *)self->term_buffers[index];
    if (!fits_aligned(meta, (int64_t)index * 8, 8) || !fits_aligned(term, term_offset, 8) ||
        term_offset + frame_length > (int64_t)term->capacity) {
        return 0; /* the Python path raises the buffer's error */
    }
    int64_t term_id = self->term_id;
    char *frame = term->addr + term_offset;
    __atomic_store_n((int64_t *)(meta->addr + (int64_t)index * 8),
                     shift_32(term_id) | resulting_offset, __ATOMIC_RELEASE);
    __atomic_store_n((int64_t *)frame, self->version_flags_type | (-frame_length & LOW_32),
                     __ATOMIC_RELEASE);
    int64_t words[2] = {self->session_id_high | term_offset,
                        self->stream_id_low | shift_32(term_id)};
    memcpy(frame + 8, words, sizeof(words));
    memmove(frame + HDR_LENGTH, payload, (size_t)length);
    __atomic_store_n((int32_t *)frame, (int32_t)frame_length, __ATOMIC_RELEASE);
    self->term_offset = resulting_offset;
    return self->term_begin_position + resulting_offset;
}

static PyObject *
tail_offer(ExclusiveTailObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 3) {
        PyErr_Format(PyExc_TypeError, "offer() takes 1 to 3 arguments (%zd given)", nargs);
        return NULL;
    }
    long long offset = 0, length = -1;
    int overflow = 0;
    if (nargs > 1 && (offset = PyLong_AsLongLongAndOverflow(args[1], &overflow)) == -1 &&
        PyErr_Occurred()) {
        return NULL;
    }
    if (!overflow && nargs > 2 &&
        (length = PyLong_AsLongLongAndOverflow(args[2], &overflow)) == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (overflow) {
        return PyLong_FromLong(0); /* outside any buffer: the Python path raises */
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear(); /* not contiguous, or not a buffer: the Python path raises */
        return PyLong_FromLong(0);
    }
    if (length < 0) {
        length = view.len - offset;
    }
    int64_t result = 0;
    if (offset >= 0 && length >= 0 && offset <= view.len - length) {
        result = append_one(self, (const char *)view.buf + offset, length);
    }
    PyBuffer_Release(&view);
    return PyLong_FromLongLong(result);
}

static PyObject *
tail_close(ExclusiveTailObject *self, PyObject *Py_UNUSED(ignored))
{
    self->closed = 1;
    Py_RETURN_NONE;
}

static PyObject *
tail_closed(ExclusiveTailObject *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->closed);
}

static PyMethodDef tail_methods[] = {
    {"offer", (PyCFunction)(void (*)(void))tail_offer, METH_FASTCALL,
     "offer(buffer, offset=0, length=-1) -> new position, or 0: take the Python path"},
    {"close", (PyCFunction)tail_close, METH_NOARGS, "close(): offers return 0 from now on"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef tail_members[] = {
    {"term_id", T_INT, offsetof(ExclusiveTailObject, term_id), 0,
     "the id of the term the next message goes into"},
    {"term_offset", T_LONGLONG, offsetof(ExclusiveTailObject, term_offset), 0,
     "where the next message starts in that term"},
    {"active_index", T_INT, offsetof(ExclusiveTailObject, active_index), 0,
     "the partition of that term"},
    {"term_begin_position", T_LONGLONG, offsetof(ExclusiveTailObject, term_begin_position), 0,
     "the stream position of that term's start"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef tail_getset[] = {
    {"closed", (getter)tail_closed, NULL, "whether close() was called", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject ExclusiveTailType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aeromq.transport.logbuffer._term_io.ExclusiveTail",
    .tp_basicsize = sizeof(ExclusiveTailObject),
    .tp_dealloc = (destructor)tail_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An exclusive publication's append state and one-frame offer (see the source).",
    .tp_traverse = (traverseproc)tail_traverse,
    .tp_clear = (inquiry)tail_clear,
    .tp_methods = tail_methods,
    .tp_members = tail_members,
    .tp_getset = tail_getset,
    .tp_init = (initproc)tail_init,
    .tp_new = PyType_GenericNew,
};

