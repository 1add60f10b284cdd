/*
 * aeromq.transport.driver.udp._datagram: a UDP socket's non-blocking read that returns None,
 * rather than raising, when no datagram waits.
 *
 * Why it exists
 * -------------
 * The media driver reads its UDP sockets without blocking and stops at the first read that finds
 * nothing. ``socket.recvfrom_into`` reports that read as a raised ``BlockingIOError``: CPython
 * builds an ``OSError`` with its errno text (glibc's ``strerror``, its locale look-up in
 * ``__dcigettext``, both seen in ``perf`` of a broker group's members), a traceback, and the
 * ``except`` matches it. Every socket read that found data ends with one such empty read (a
 * broker group's leader made about 3.8 a commit round, a follower about 1.7), and each costs
 * several times the read itself.
 *
 * What it does
 * ------------
 *   DatagramReader(fd, buffer)
 *       reads datagrams from the socket ``fd`` (a bound UDP socket of family AF_INET or
 *       AF_INET6, which the caller keeps open while it reads) into the writable ``buffer`` (held
 *       exported until ``release()`` or the reader is freed).
 *   read() -> (length, address) | None
 *       one ``recvfrom(fd, buffer, MSG_DONTWAIT)``: the datagram's length and its source
 *       address, in the shape ``socket.recvfrom_into`` gives it (``(host, port)`` for AF_INET,
 *       ``(host, port, flowinfo, scope_id)`` for AF_INET6, the host from ``inet_ntop``); None
 *       when no datagram waits (EAGAIN, EWOULDBLOCK) or a signal interrupted the read (EINTR:
 *       the next read goes on); any other error raises the ``OSError`` subclass
 *       ``socket.recvfrom_into`` would (``ConnectionRefusedError`` for an ICMP error from an
 *       earlier send, ...). A datagram longer than the buffer is cut to it, as there.
 *       The address of the last datagram is kept: a datagram from the same source returns
 *       the same tuple (a stream's datagrams all come from its one peer), not a new one.
 *   release()
 *       lets go of the buffer (before the socket is closed); ``read()`` then raises
 *       ``OSError`` (EBADF), as a read of the closed socket would. Idempotent.
 *
 * The GIL is held through the read: with MSG_DONTWAIT it never waits, and a thread that let go
 * of the GIL may wait for it again behind another thread's switch interval (5 ms), where the
 * read itself takes a microsecond or two (a 64 KiB datagram's copy included).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

typedef struct {
    PyObject_HEAD
    int fd;
    int has_buffer;
    Py_buffer buffer;
    struct sockaddr_storage last_address;
    socklen_t last_address_length;
    PyObject *last_tuple; /* the address tuple of last_address, or NULL */
} DatagramReader;

static PyObject *
reader_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"fd", "buffer", NULL};
    int fd;
    PyObject *source;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iO:DatagramReader", keywords, &fd, &source)) {
        return NULL;
    }
    if (fd < 0) {
        PyErr_Format(PyExc_ValueError, "fd must be >= 0, got %d", fd);
        return NULL;
    }
    DatagramReader *self = (DatagramReader *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    if (PyObject_GetBuffer(source, &self->buffer, PyBUF_WRITABLE) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->has_buffer = 1;
    self->fd = fd;
    self->last_address_length = 0;
    self->last_tuple = NULL;
    return (PyObject *)self;
}

static void
reader_release_buffer(DatagramReader *self)
{
    if (self->has_buffer) {
        self->has_buffer = 0;
        PyBuffer_Release(&self->buffer);
    }
}

static void
reader_dealloc(DatagramReader *self)
{
    reader_release_buffer(self);
    Py_CLEAR(self->last_tuple);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The address tuple socket.recvfrom_into gives for this source (see the header). */
static PyObject *
address_tuple(const struct sockaddr_storage *address)
{
    char host[INET6_ADDRSTRLEN];
    if (address->ss_family == AF_INET) {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)address;
        if (inet_ntop(AF_INET, &in4->sin_addr, host, sizeof host) == NULL) {
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        return Py_BuildValue("(si)", host, (int)ntohs(in4->sin_port));
    }
    if (address->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)address;
        if (inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host) == NULL) {
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        return Py_BuildValue("(siII)", host, (int)ntohs(in6->sin6_port),
                             (unsigned int)ntohl(in6->sin6_flowinfo),
                             (unsigned int)in6->sin6_scope_id);
    }
    PyErr_Format(PyExc_OSError, "datagram from an address of family %d (not AF_INET/AF_INET6)",
                 (int)address->ss_family);
    return NULL;
}

static PyObject *
reader_read(DatagramReader *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->has_buffer) {
        errno = EBADF; /* released with its socket: read as a closed socket reads */
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    struct sockaddr_storage address;
    socklen_t address_length = sizeof address;
    memset(&address, 0, sizeof address);
    ssize_t length = recvfrom(self->fd, self->buffer.buf, (size_t)self->buffer.len, MSG_DONTWAIT,
                              (struct sockaddr *)&address, &address_length);
    if (length < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            Py_RETURN_NONE;
        }
        return PyErr_SetFromErrno(PyExc_OSError); /* the errno's OSError subclass */
    }
    PyObject *tuple = self->last_tuple;
    if (tuple == NULL || address_length != self->last_address_length ||
        memcmp(&address, &self->last_address, address_length) != 0) {
        tuple = address_tuple(&address);
        if (tuple == NULL) {
            return NULL;
        }
        Py_XSETREF(self->last_tuple, tuple);
        memcpy(&self->last_address, &address, sizeof address);
        self->last_address_length = address_length;
    }
    PyObject *length_object = PyLong_FromSsize_t(length);
    if (length_object == NULL) {
        return NULL;
    }
    PyObject *result = PyTuple_New(2);
    if (result == NULL) {
        Py_DECREF(length_object);
        return NULL;
    }
    Py_INCREF(tuple);
    PyTuple_SET_ITEM(result, 0, length_object);
    PyTuple_SET_ITEM(result, 1, tuple);
    return result;
}

static PyObject *
reader_release(DatagramReader *self, PyObject *Py_UNUSED(ignored))
{
    reader_release_buffer(self);
    Py_RETURN_NONE;
}

static PyMethodDef reader_methods[] = {
    {"read", (PyCFunction)reader_read, METH_NOARGS,
     "read() -> (length, address) or None when no datagram waits (see the module)"},
    {"release", (PyCFunction)reader_release, METH_NOARGS,
     "release(): let go of the buffer (idempotent); read() then raises OSError (EBADF)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DatagramReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aeromq.transport.driver.udp._datagram.DatagramReader",
    .tp_doc = "DatagramReader(fd, buffer): a socket's non-blocking reads into buffer",
    .tp_basicsize = sizeof(DatagramReader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = reader_new,
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_methods = reader_methods,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "aeromq.transport.driver.udp._datagram",
    .m_doc = "A UDP socket's non-blocking read, None when empty (see the header of _datagram.c).",
    .m_size = 0,
    .m_methods = NULL,
};

PyMODINIT_FUNC
PyInit__datagram(void)
{
    if (PyType_Ready(&DatagramReaderType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&DatagramReaderType);
    if (PyModule_AddObject(module, "DatagramReader", (PyObject *)&DatagramReaderType) < 0) {
        Py_DECREF(&DatagramReaderType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
