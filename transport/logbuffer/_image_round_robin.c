/*
 * ``ImageRoundRobin`` of aeromq.transport.logbuffer._term_io: a subscription's poll of several
 * images in one call, the round robin of ``Subscription.round_robin_poll`` /
 * ``round_robin_controlled_poll`` (transport/client/subscription.py) in C.
 *
 *   ImageRoundRobin(polls, controlled_polls, index)
 *       the images' poll callables (each image's ``poll_call`` and ``controlled_poll_call``: an
 *       ``ImageReader``'s bound methods where built), as tuples of the same length, and the round
 *       robin's next starting index (carried over from the subscription's previous list).
 *     poll(handler, fragment_limit) -> int / controlled_poll(handler, fragment_limit) -> int
 *       start one image further along than the last call (back to 0 past the end), poll from
 *       there to the end of the list, then from the beginning up to the start, each image given
 *       the fragments left of the limit, while the limit is not reached; return the fragments
 *       read. An image's error propagates, as in the Python.
 *     index
 *       the next starting index (read and written).
 */
#include "_term_io.h" /* Python.h first */

#include <stddef.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *polls;            /* tuple */
    PyObject *controlled_polls; /* tuple, as long */
    Py_ssize_t index;
} ImageRoundRobinObject;

static int
round_robin_init(ImageRoundRobinObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"polls", "controlled_polls", "index", NULL};
    PyObject *polls, *controlled_polls;
    Py_ssize_t index;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!n", kwlist, &PyTuple_Type, &polls,
                                     &PyTuple_Type, &controlled_polls, &index)) {
        return -1;
    }
    if (PyTuple_GET_SIZE(polls) != PyTuple_GET_SIZE(controlled_polls)) {
        PyErr_SetString(PyExc_ValueError, "polls and controlled_polls differ in length");
        return -1;
    }
    Py_XSETREF(self->polls, Py_NewRef(polls));
    Py_XSETREF(self->controlled_polls, Py_NewRef(controlled_polls));
    self->index = index;
    return 0;
}

#define ROUND_ROBIN_REFS(self) {&(self)->polls, &(self)->controlled_polls}

static int
round_robin_traverse(ImageRoundRobinObject *self, visitproc visit, void *arg)
{
    PyObject **const refs[] = ROUND_ROBIN_REFS(self);
    return refs_traverse(refs, 2, visit, arg);
}

static int
round_robin_clear(ImageRoundRobinObject *self)
{
    PyObject **const refs[] = ROUND_ROBIN_REFS(self);
    refs_clear(refs, 2);
    return 0;
}

static void
round_robin_dealloc(ImageRoundRobinObject *self)
{
    PyObject_GC_UnTrack(self);
    round_robin_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ``fragments_read += polls[i](handler, limit - fragments_read)``; -1 with an error set. */
static int
poll_one(PyObject *poll, PyObject *handler, PyObject *limit, PyObject **fragments_read)
{
    PyObject *left = PyNumber_Subtract(limit, *fragments_read);
    if (left == NULL) {
        return -1;
    }
    PyObject *call_args[2] = {handler, left};
    PyObject *read = PyObject_Vectorcall(poll, call_args, 2, NULL);
    Py_DECREF(left);
    if (read == NULL) {
        return -1;
    }
    PyObject *sum = PyNumber_Add(*fragments_read, read);
    Py_DECREF(read);
    if (sum == NULL) {
        return -1;
    }
    Py_SETREF(*fragments_read, sum);
    return 0;
}

/* Whether ``fragments_read >= limit`` (-1 with an error set). */
static inline int
reached(PyObject *fragments_read, PyObject *limit)
{
    return PyObject_RichCompareBool(fragments_read, limit, Py_GE);
}

static PyObject *
round_robin(ImageRoundRobinObject *self, PyObject *polls, PyObject *const *args,
            Py_ssize_t nargs, const char *name)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes 2 arguments (%zd given)", name, nargs);
        return NULL;
    }
    PyObject *handler = args[0], *limit = args[1];
    Py_ssize_t length = PyTuple_GET_SIZE(polls);
    Py_ssize_t start = self->index;
    self->index = start + 1;
    if (start >= length) {
        self->index = start = 0;
    }
    PyObject *fragments_read = PyLong_FromLong(0);
    if (fragments_read == NULL) {
        return NULL;
    }
    for (Py_ssize_t step = 0; step < length; step++) {
        Py_ssize_t i = step < length - start ? start + step : step - (length - start);
        int done = reached(fragments_read, limit);
        if (done != 0) {
            if (done < 0) {
                Py_CLEAR(fragments_read);
            }
            return fragments_read;
        }
        /* the tuple is this object's own for the call: a new list makes a new object */
        if (poll_one(PyTuple_GET_ITEM(polls, i), handler, limit, &fragments_read) < 0) {
            Py_DECREF(fragments_read);
            return NULL;
        }
    }
    return fragments_read;
}

static PyObject *
round_robin_poll(ImageRoundRobinObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *polls = Py_NewRef(self->polls); /* kept while the images' handlers run */
    PyObject *result = round_robin(self, polls, args, nargs, "poll");
    Py_DECREF(polls);
    return result;
}

static PyObject *
round_robin_controlled_poll(ImageRoundRobinObject *self, PyObject *const *args,
                            Py_ssize_t nargs)
{
    PyObject *polls = Py_NewRef(self->controlled_polls);
    PyObject *result = round_robin(self, polls, args, nargs, "controlled_poll");
    Py_DECREF(polls);
    return result;
}

static PyMethodDef round_robin_methods[] = {
    {"poll", (PyCFunction)(void (*)(void))round_robin_poll, METH_FASTCALL,
     "poll(handler, fragment_limit) -> fragments read, round-robin over the images"},
    {"controlled_poll", (PyCFunction)(void (*)(void))round_robin_controlled_poll,
     METH_FASTCALL, "controlled_poll(handler, fragment_limit) -> fragments read, round-robin"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef round_robin_members[] = {
    {"index", T_PYSSIZET, offsetof(ImageRoundRobinObject, index), 0,
     "the next call's starting image"},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject ImageRoundRobinType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aeromq.transport.logbuffer._term_io.ImageRoundRobin",
    .tp_basicsize = sizeof(ImageRoundRobinObject),
    .tp_dealloc = (destructor)round_robin_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A subscription's round-robin poll of its images in one call (see the source).",
    .tp_traverse = (traverseproc)round_robin_traverse,
    .tp_clear = (inquiry)round_robin_clear,
    .tp_methods = round_robin_methods,
    .tp_members = round_robin_members,
    .tp_init = (initproc)round_robin_init,
    .tp_new = PyType_GenericNew,
};
