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
 *   ImageRoundRobin(polls, controlled_polls, index)
 *       a subscription's poll of several images: ``Subscription.round_robin_poll`` and
 *       ``round_robin_controlled_poll`` in one call over the images' poll callables (each an
 *       ``ImageReader``'s bound method), the round robin's index kept here (_image_round_robin.c).
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
 *
 * Files: this one (the module, the shared buffer access), _image_reader.c (``ImageReader``),
 * _image_round_robin.c (``ImageRoundRobin``), _exclusive_tail.c (``ExclusiveTail``),
 * _term_io.h (what they share).
 */
#include "_term_io.h"

PyTypeObject *AtomicBufferType = NULL;
PyObject *ACTION_ABORT = NULL;
PyObject *ACTION_BREAK = NULL;
PyObject *ACTION_COMMIT = NULL;
PyObject *STR_BUFFER = NULL;
PyObject *STR_OFFSET = NULL;

/* ------------------------------------------------------------------------------------------ */
/* buffer access                                                                               */

/* Raise what the buffer's method ``name(index[, value])`` raises (a bad index): the Python
 * path's exact error, made by the same code. Returns -1 with the exception set. */
int
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

int
load_plain_i64(AtomicBufferObject *b, int64_t index, int64_t *out)
{
    if (b->addr == NULL || index < 0 || index > (int64_t)(b->capacity - 8)) {
        return raise_like(b, "get_int64", index, NULL);
    }
    memcpy(out, b->addr + index, 8);
    return 0;
}

int
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

int
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
int
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

int
refs_traverse(PyObject **const *refs, int count, visitproc visit, void *arg)
{
    for (int i = 0; i < count; i++) {
        Py_VISIT(*refs[i]);
    }
    return 0;
}

void
refs_clear(PyObject **const *refs, int count)
{
    for (int i = 0; i < count; i++) {
        Py_CLEAR(*refs[i]);
    }
}

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
    if (PyType_Ready(&ImageReaderType) < 0 || PyType_Ready(&ImageRoundRobinType) < 0 ||
        PyType_Ready(&ExclusiveTailType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&term_io_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "ImageReader", (PyObject *)&ImageReaderType) < 0 ||
        PyModule_AddObjectRef(module, "ImageRoundRobin", (PyObject *)&ImageRoundRobinType) < 0 ||
        PyModule_AddObjectRef(module, "ExclusiveTail", (PyObject *)&ExclusiveTailType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
