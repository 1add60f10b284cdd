/*
 * aeromq.transport.logbuffer._term_io: an image's poll and an exclusive publication's offer of
 * one frame, each in one native call.
 *
 * Why it exists
 * -------------
 * Every process of a message spins on these two: the broker's session agent polls its
 * subscription about nine times a message at 1,000 msgs/s (most polls find nothing), and every
 * request, answer and send is one offer. In Python a poll costs ~0.45 us empty and an offer
 * ~0.77 us, a dozen interpreter steps each (bounds-checked loads, stores, a call per field);
 * Aeron's C client does either in a few dozen nanoseconds. Here the term scan and the frame
 * write run in C and Python is entered only for the handler of a data fragment.
 *
 * What it does
 * ------------
 *   ImageReader(term_buffers, position_buffer, position_offset, position_bits_to_shift,
 *               header, error_handler)
 *       an image's reading state: its three term buffers (``AtomicBuffer``s), the subscriber
 *       position counter (its values buffer and the counter's offset there), the ``Header`` the
 *       handler is given (moved from frame to frame: ``header.buffer`` set once a term,
 *       ``header.offset`` once a fragment) and the error handler.
 *     poll(handler, fragment_limit) -> int
 *       ``Image.poll`` (transport/client/image.py, the reference kept as the fallback): scans
 *       the term from the subscriber position, one acquire load of the first 8 bytes a frame
 *       (length and type), stops at a length <= 0, the term's end or the limit, steps over
 *       padding, calls ``handler(term_buffer, offset, length, header)`` for each data fragment,
 *       stores the new position with a release store, and reads on into the next term when
 *       the term ended before the limit. An empty poll enters no Python code. A handler's
 *       ``Exception`` goes to the error handler and ends the poll, its fragment consumed.
 *     controlled_poll(handler, fragment_limit) -> int
 *       ``Image.controlled_poll``: the same scan with the handler's ``Action`` applied (ABORT,
 *       BREAK, COMMIT, CONTINUE: identity with ``transport.concurrent.action.Action``'s members,
 *       as the Python's ``is``), the position stored on COMMIT and when the poll ends.
 *     close() / closed
 *       the image went away: polls return 0 (set by ``Image.close``; a handler may close it).
 *
 *   ExclusiveTail(term_buffers, meta_buffer, limit_buffer, limit_offset, header_words,
 *                 term_length, max_payload_length, term_id, term_offset, active_index,
 *                 term_begin_position)
 *       an exclusive publication's append state (``term_id``, ``term_offset``, ``active_index``,
 *       ``term_begin_position``: read and written by the Python paths too) and what an append
 *       needs: the log, the publication limit counter, the default header's three words
 *       (``HeaderWriter``'s ``version_flags_type``, ``session_id_high``, ``stream_id_low``).
 *     offer(buffer, offset, length) -> int
 *       ``ExclusivePublication.offer`` of a message that fits one frame: the limit check (an
 *       acquire load of the publication limit), the tail stored (release) as the exclusive
 *       owner does, the header's first word stored with the length negated (release), the other
 *       header words, the payload, then the frame length (release); returns the new position.
 *       Returns 0, having changed nothing, for everything else: closed, back pressure, the end
 *       of the term (padding, rotation, ADMIN_ACTION), a message longer than a frame, a region
 *       outside its buffer, a buffer that is not contiguous; the caller then runs the Python
 *       path, which returns the code or raises the error.
 *     close() / closed
 *       the publication closed: offer returns 0 (the Python path returns CLOSED).
 *
 * Ordering is Aeron's: acquire load of a frame's length before its body is read, release store
 * of the length after the body is written; the exclusive tail is a release store by its only
 * writer (``ExclusiveTermAppender``). Buffers are read through their ``AtomicBufferBase`` layout
 * (transport/concurrent/atomic_buffer.h) with the GIL held, and the term buffer's address and
 * capacity are read again after every handler call, which may release it; a bad index raises
 * the ``IndexOutOfBoundsError`` the Python path would (the buffer's own method raises it). A
 * property test drives both paths over the same logs and compares the bytes and the results.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../concurrent/atomic_buffer.h"

#define PARTITION_COUNT 3
#define HDR_LENGTH 32
#define ALIGN_UP 31
#define ALIGN_DOWN (~(int64_t)31)
#define LOW_32 0xFFFFFFFFLL

static PyTypeObject *AtomicBufferType = NULL;
static PyObject *ACTION_ABORT = NULL;
static PyObject *ACTION_BREAK = NULL;
static PyObject *ACTION_COMMIT = NULL;
static PyObject *STR_BUFFER = NULL;
static PyObject *STR_OFFSET = NULL;

/* ------------------------------------------------------------------------------------------ */
/* buffer access                                                                               */

/* Whether ``length`` bytes at ``index`` lie in the buffer, aligned to ``length`` (8 or 4). */
static inline int
fits_aligned(AtomicBufferObject *b, int64_t index, Py_ssize_t length)
{
    return b->addr != NULL && index >= 0 && index <= (int64_t)(b->capacity - length) &&
           ((uintptr_t)(b->addr + index) & (uintptr_t)(length - 1)) == 0;
}

/* Raise what the buffer's method ``name(index[, value])`` raises (a bad index): the Python
 * path's exact error, made by the same code. Returns -1 with the exception set. */
static int
raise_like(AtomicBufferObject *b, const char *name, int64_t index, PyObject *value)
{
    PyObject *result = value == NULL
                           ? PyObject_CallMethod((PyObject *)b, name, "L", (long long)index)
                           : PyObject_CallMethod((PyObject *)b, name, "LO", (long long)index, value);
    if (result != NULL) {
        Py_DECREF(result);
        PyErr_Format(PyExc_RuntimeError, "%s(%lld) did not fail as checked", name,
                     (long long)index);
    }
    return -1;
}

static int
load_plain_i64(AtomicBufferObject *b, int64_t index, int64_t *out)
{
    if (b->addr == NULL || index < 0 || index > (int64_t)(b->capacity - 8)) {
        return raise_like(b, "get_int64", index, NULL);
    }
    memcpy(out, b->addr + index, 8);
    return 0;
}

static int
store_release_i64(AtomicBufferObject *b, int64_t index, int64_t value)
{
    if (!fits_aligned(b, index, 8)) {
        PyObject *boxed = PyLong_FromLongLong(value);
        if (boxed == NULL) {
            return -1;
        }
        raise_like(b, "put_int64_ordered", index, boxed);
        Py_DECREF(boxed);
        return -1;
    }
    __atomic_store_n((int64_t *)(b->addr + index), value, __ATOMIC_RELEASE);
    return 0;
}

/* The first header word of the frame at ``index`` (acquire), or -1 with an error set. */
static inline int
load_word(AtomicBufferObject *b, int64_t index, int64_t *out)
{
    if (!fits_aligned(b, index, 8)) {
        return raise_like(b, "get_int64_volatile", index, NULL);
    }
    *out = __atomic_load_n((int64_t *)(b->addr + index), __ATOMIC_ACQUIRE);
    return 0;
}

static int
check_buffers(PyObject *const *items, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyObject_TypeCheck(items[i], AtomicBufferType)) {
            PyErr_SetString(PyExc_TypeError, "term buffers must be AtomicBuffers");
            return -1;
        }
    }
    return 0;
}

/* The three term buffers of ``tuple`` (new references into ``out``). */
static int
take_term_buffers(PyObject *tuple, PyObject **out)
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != PARTITION_COUNT) {
        PyErr_SetString(PyExc_TypeError, "term_buffers must be a tuple of 3 AtomicBuffers");
        return -1;
    }
    if (check_buffers(&PyTuple_GET_ITEM(tuple, 0), PARTITION_COUNT) < 0) {
        return -1;
    }
    for (int i = 0; i < PARTITION_COUNT; i++) {
        out[i] = Py_NewRef(PyTuple_GET_ITEM(tuple, i));
    }
    return 0;
}

static inline int
partition_index(int64_t position, int bits)
{
    int64_t index = (position >> bits) % PARTITION_COUNT;
    return (int)(index < 0 ? index + PARTITION_COUNT : index);
}

/* ------------------------------------------------------------------------------------------ */
/* ImageReader                                                                                  */

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

static int
reader_traverse(ImageReaderObject *self, visitproc visit, void *arg)
{
    for (int i = 0; i < PARTITION_COUNT; i++) {
        Py_VISIT(self->term_buffers[i]);
    }
    Py_VISIT(self->position_buffer);
    Py_VISIT(self->header);
    Py_VISIT(self->error_handler);
    return 0;
}

static int
reader_clear(ImageReaderObject *self)
{
    for (int i = 0; i < PARTITION_COUNT; i++) {
        Py_CLEAR(self->term_buffers[i]);
    }
    Py_CLEAR(self->position_buffer);
    Py_CLEAR(self->header);
    Py_CLEAR(self->error_handler);
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

/* The fragment limit as a C integer, one past the 64-bit range clamped to it (a Python int of
 * any size compares as the reference's loop does). */
static int
fragment_limit_of(PyObject *value, long long *limit)
{
    int overflow;
    *limit = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (*limit == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        *limit = overflow > 0 ? LLONG_MAX : LLONG_MIN;
    }
    return 0;
}

static PyObject *
reader_poll(ImageReaderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "poll() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *handler = args[0];
    long long limit;
    if (fragment_limit_of(args[1], &limit) < 0) {
        return NULL;
    }
    long long total = 0;
    while (!self->closed) {
        int64_t position, word;
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
            if (load_word(term, offset, &word) < 0) {
                goto error;
            }
            int64_t frame_length = word & LOW_32;
            if (frame_length == 0 || (frame_length & 0x80000000LL)) {
                break;
            }
            int64_t frame_offset = offset;
            offset += (frame_length + ALIGN_UP) & ALIGN_DOWN;
            if ((uint64_t)word >> 48) { /* not padding */
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
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "controlled_poll() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *handler = args[0];
    long long limit;
    if (fragment_limit_of(args[1], &limit) < 0) {
        return NULL;
    }
    long long total = 0;
    while (!self->closed) {
        int64_t initial_position, word;
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
            if (load_word(term, offset, &word) < 0) {
                goto error;
            }
            int64_t frame_length = word & LOW_32;
            if (frame_length == 0 || (frame_length & 0x80000000LL)) {
                break;
            }
            int64_t frame_offset = offset;
            int64_t aligned_length = (frame_length + ALIGN_UP) & ALIGN_DOWN;
            offset += aligned_length;
            if (!((uint64_t)word >> 48)) { /* padding */
                continue;
            }
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

static PyTypeObject ImageReaderType = {
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

/* ------------------------------------------------------------------------------------------ */
/* ExclusiveTail                                                                                */

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

static int
tail_traverse(ExclusiveTailObject *self, visitproc visit, void *arg)
{
    for (int i = 0; i < PARTITION_COUNT; i++) {
        Py_VISIT(self->term_buffers[i]);
    }
    Py_VISIT(self->meta_buffer);
    Py_VISIT(self->limit_buffer);
    return 0;
}

static int
tail_clear(ExclusiveTailObject *self)
{
    for (int i = 0; i < PARTITION_COUNT; i++) {
        Py_CLEAR(self->term_buffers[i]);
    }
    Py_CLEAR(self->meta_buffer);
    Py_CLEAR(self->limit_buffer);
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

static PyTypeObject ExclusiveTailType = {
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

/* ------------------------------------------------------------------------------------------ */
/* module                                                                                       */

static struct PyModuleDef term_io_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "aeromq.transport.logbuffer._term_io",
    .m_doc = "An image's poll and an exclusive offer in one native call (see the source header).",
    .m_size = -1,
};

static PyObject *
attribute_of(const char *module_name, const char *name)
{
    PyObject *module = PyImport_ImportModule(module_name);
    if (module == NULL) {
        return NULL;
    }
    PyObject *value = PyObject_GetAttrString(module, name);
    Py_DECREF(module);
    return value;
}

PyMODINIT_FUNC
PyInit__term_io(void)
{
    PyObject *action = attribute_of("aeromq.transport.concurrent.action", "Action");
    if (action == NULL) {
        return NULL;
    }
    ACTION_ABORT = PyObject_GetAttrString(action, "ABORT");
    ACTION_BREAK = PyObject_GetAttrString(action, "BREAK");
    ACTION_COMMIT = PyObject_GetAttrString(action, "COMMIT");
    Py_DECREF(action);
    AtomicBufferType = (PyTypeObject *)attribute_of("aeromq.transport.concurrent._atomic",
                                                    "AtomicBufferBase");
    STR_BUFFER = PyUnicode_InternFromString("buffer");
    STR_OFFSET = PyUnicode_InternFromString("offset");
    if (ACTION_ABORT == NULL || ACTION_BREAK == NULL || ACTION_COMMIT == NULL ||
        AtomicBufferType == NULL || STR_BUFFER == NULL || STR_OFFSET == NULL) {
        return NULL;
    }
    if (!PyType_Check((PyObject *)AtomicBufferType)) {
        PyErr_SetString(PyExc_TypeError, "AtomicBufferBase is not a type");
        return NULL;
    }
    if (PyType_Ready(&ImageReaderType) < 0 || PyType_Ready(&ExclusiveTailType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&term_io_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "ImageReader", (PyObject *)&ImageReaderType) < 0 ||
        PyModule_AddObjectRef(module, "ExclusiveTail", (PyObject *)&ExclusiveTailType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
