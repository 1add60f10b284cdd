/*
 * aeromq.transport.concurrent._atomic: atomic operations on shared memory.
 *
 * Why it exists
 * -------------
 * Aeron's design rests on memory shared between processes (cnc.dat, log buffers) that several
 * processes read and write at once. Correctness there needs:
 *   - ordered (release) stores, so a reader that sees a frame length also sees the frame body;
 *   - volatile (acquire) loads, the other half of that contract;
 *   - compare-and-set and get-and-add, so many producers can claim space without a lock.
 * CPython offers none of these on raw memory (struct/memoryview accesses are plain copies with
 * no ordering guarantee, and read-modify-write of shared memory from Python is never atomic).
 *
 * What it does
 * ------------
 * One type, ``AtomicBufferBase``: a bounds-checked view over a writable buffer (normally an
 * ``mmap`` of a file in /dev/shm). Plain little-endian get/put of 8 to 64-bit integers and bytes,
 * plus the GCC/Clang ``__atomic`` builtins for the ordered and atomic operations. Every index is
 * checked: a bad index raises ``aeromq.transport.IndexOutOfBoundsError`` (an ``IndexError``) with the
 * index, length and capacity; an atomic access on a misaligned address raises the same error type
 * with the alignment in the message. Nothing here can crash the interpreter on bad input.
 *
 * The memory orders follow Agrona's UnsafeBuffer:
 *   get_*_volatile  -> __ATOMIC_ACQUIRE load        (getIntVolatile / getLongVolatile)
 *   put_*_ordered   -> __ATOMIC_RELEASE store       (putIntOrdered / putLongOrdered)
 *   put_*_volatile  -> __ATOMIC_SEQ_CST store       (putIntVolatile / putLongVolatile)
 *   compare_and_set -> __ATOMIC_SEQ_CST CAS         (compareAndSetInt / compareAndSetLong)
 *   get_and_add/set -> __ATOMIC_SEQ_CST RMW         (getAndAddInt / getAndSetLong, ...)
 *   add_int64_ordered: single-writer increment (plain load, release store).
 *   get_and_and/or  -> __ATOMIC_SEQ_CST RMW         (bit flags in a shared word, the doorbell)
 *
 * Futexes (Linux): ``futex_wait_int32(index, expected, timeout_ns)`` sleeps while the aligned
 * 32-bit word at ``index`` holds ``expected`` (the kernel checks it atomically with going to
 * sleep), up to ``timeout_ns`` (< 0: no limit), with the GIL released; ``futex_wake_int32(index,
 * count)`` wakes up to ``count`` such sleepers. They use FUTEX_WAIT / FUTEX_WAKE, not the
 * _PRIVATE variants: the word lives in a file mapping shared by processes, and the kernel keys a
 * shared futex by the page's file and offset, so a waiter and a waker in two processes (each with
 * its own mapping of the file) meet. ``futex_wait_int32`` returns 0 when woken (or spuriously),
 * ``FUTEX_NOT_EXPECTED`` (EAGAIN) when the word did not hold ``expected``, ``FUTEX_TIMED_OUT``
 * (ETIMEDOUT) at the timeout; an interrupting signal runs Python's handlers (an exception they
 * raise propagates) and returns 0. While a wait runs the buffer counts as exported, so it cannot
 * be released under the sleeper. ``transport/concurrent/doorbell.py`` builds an eventcount on them.
 * ``HAS_FUTEX`` is False off Linux, where both raise ``OSError`` (ENOSYS).
 *
 * The methods use METH_FASTCALL to keep the cost of a call near CPython's floor; the benchmark
 * suite ``atomic`` measures it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#define HAVE_FUTEX 1
#else
#define HAVE_FUTEX 0
#endif

static PyObject *IndexOutOfBoundsError = NULL;

#include "atomic_buffer.h"

/* ------------------------------------------------------------------------------------------ */
/* checks                                                                                      */

static int
bounds_fail(AtomicBufferObject *self, Py_ssize_t index, Py_ssize_t length)
{
    PyErr_Format(IndexOutOfBoundsError,
                 "index out of bounds: index=%zd length=%zd capacity=%zd",
                 index, length, self->capacity);
    return -1;
}

static inline int
check(AtomicBufferObject *self, Py_ssize_t index, Py_ssize_t length)
{
    if (index < 0 || length < 0 || index > self->capacity - length) {
        return bounds_fail(self, index, length);
    }
    return 0;
}

static inline int
check_aligned(AtomicBufferObject *self, Py_ssize_t index, Py_ssize_t length)
{
    if (check(self, index, length) < 0) {
        return -1;
    }
    if (((uintptr_t)(self->addr + index)) & (uintptr_t)(length - 1)) {
        PyErr_Format(IndexOutOfBoundsError,
                     "misaligned atomic access: index=%zd alignment=%zd", index, length);
        return -1;
    }
    return 0;
}

static inline int
arg_index(PyObject *obj, Py_ssize_t *out)
{
    Py_ssize_t v = PyLong_AsSsize_t(obj);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = v;
    return 0;
}

static inline int
arg_i64(PyObject *obj, int64_t *out)
{
    long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

/* Accept any int that fits in the unsigned or signed range of `bits` and truncate to it, the
 * way Java's (int) and (short) casts do; out-of-range values raise OverflowError. */
static inline int
arg_bits(PyObject *obj, int bits, int64_t *out)
{
    long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (bits < 64) {
        long long lo = -(1LL << (bits - 1));
        long long hi = (1LL << bits) - 1;
        if (v < lo || v > hi) {
            PyErr_Format(PyExc_OverflowError, "value=%lld does not fit in %d bits", v, bits);
            return -1;
        }
    }
    *out = (int64_t)v;
    return 0;
}

#define NARGS(n, name)                                                                          \
    if (nargs != (n)) {                                                                         \
        PyErr_Format(PyExc_TypeError, name "() takes %d arguments (%zd given)", (n), nargs);    \
        return NULL;                                                                            \
    }

/* ------------------------------------------------------------------------------------------ */
/* plain get/put                                                                               */

#define DEFINE_GET(NAME, CTYPE, CONV)                                                           \
    static PyObject *NAME(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)    \
    {                                                                                           \
        Py_ssize_t index;                                                                       \
        CTYPE v;                                                                                \
        NARGS(1, #NAME);                                                                        \
        if (arg_index(args[0], &index) < 0 || check(self, index, sizeof(CTYPE)) < 0) {         \
            return NULL;                                                                        \
        }                                                                                       \
        memcpy(&v, self->addr + index, sizeof(CTYPE));                                          \
        return CONV(v);                                                                         \
    }

#define DEFINE_PUT(NAME, CTYPE, BITS)                                                           \
    static PyObject *NAME(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)    \
    {                                                                                           \
        Py_ssize_t index;                                                                       \
        int64_t raw;                                                                            \
        CTYPE v;                                                                                \
        NARGS(2, #NAME);                                                                        \
        if (arg_index(args[0], &index) < 0 || check(self, index, sizeof(CTYPE)) < 0 ||          \
            arg_bits(args[1], BITS, &raw) < 0) {                                                \
            return NULL;                                                                        \
        }                                                                                       \
        v = (CTYPE)raw;                                                                         \
        memcpy(self->addr + index, &v, sizeof(CTYPE));                                          \
        Py_RETURN_NONE;                                                                         \
    }

#define PyLong_FromI8(v) PyLong_FromLong((long)(v))
DEFINE_GET(get_int8, int8_t, PyLong_FromI8)
DEFINE_GET(get_uint8, uint8_t, PyLong_FromI8)
DEFINE_GET(get_int16, int16_t, PyLong_FromI8)
DEFINE_GET(get_uint16, uint16_t, PyLong_FromI8)
DEFINE_GET(get_int32, int32_t, PyLong_FromI8)
DEFINE_GET(get_int64, int64_t, PyLong_FromLongLong)
DEFINE_PUT(put_int8, int8_t, 8)
DEFINE_PUT(put_int16, int16_t, 16)
DEFINE_PUT(put_int32, int32_t, 32)
DEFINE_PUT(put_int64, int64_t, 64)

/* ------------------------------------------------------------------------------------------ */
/* ordered, volatile and atomic operations                                                     */

#define DEFINE_GET_VOLATILE(NAME, CTYPE)                                                        \
    static PyObject *NAME(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)    \
    {                                                                                           \
        Py_ssize_t index;                                                                       \
        NARGS(1, #NAME);                                                                        \
        if (arg_index(args[0], &index) < 0 || check_aligned(self, index, sizeof(CTYPE)) < 0) { \
            return NULL;                                                                        \
        }                                                                                       \
        return PyLong_FromLongLong(                                                             \
            (long long)__atomic_load_n((CTYPE *)(self->addr + index), __ATOMIC_ACQUIRE));       \
    }

#define DEFINE_PUT_ORDER(NAME, CTYPE, BITS, ORDER)                                              \
    static PyObject *NAME(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)    \
    {                                                                                           \
        Py_ssize_t index;                                                                       \
        int64_t raw;                                                                            \
        NARGS(2, #NAME);                                                                        \
        if (arg_index(args[0], &index) < 0 || check_aligned(self, index, sizeof(CTYPE)) < 0 || \
            arg_bits(args[1], BITS, &raw) < 0) {                                                \
            return NULL;                                                                        \
        }                                                                                       \
        __atomic_store_n((CTYPE *)(self->addr + index), (CTYPE)raw, ORDER);                     \
        Py_RETURN_NONE;                                                                         \
    }

#define DEFINE_CAS(NAME, CTYPE, BITS)                                                           \
    static PyObject *NAME(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)    \
    {                                                                                           \
        Py_ssize_t index;                                                                       \
        int64_t expected, update;                                                               \
        CTYPE exp;                                                                              \
        NARGS(3, #NAME);                                                                        \
        if (arg_index(args[0], &index) < 0 || check_aligned(self, index, sizeof(CTYPE)) < 0 || \
            arg_bits(args[1], BITS, &expected) < 0 || arg_bits(args[2], BITS, &update) < 0) {   \
            return NULL;                                                                        \
        }                                                                                       \
        exp = (CTYPE)expected;                                                                  \
        if (__atomic_compare_exchange_n((CTYPE *)(self->addr + index), &exp, (CTYPE)update, 0,  \
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {                  \
            Py_RETURN_TRUE;                                                                     \
        }                                                                                       \
        Py_RETURN_FALSE;                                                                        \
    }

#define DEFINE_RMW(NAME, CTYPE, BITS, BUILTIN)                                                  \
    static PyObject *NAME(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)    \
    {                                                                                           \
        Py_ssize_t index;                                                                       \
        int64_t operand;                                                                        \
        NARGS(2, #NAME);                                                                        \
        if (arg_index(args[0], &index) < 0 || check_aligned(self, index, sizeof(CTYPE)) < 0 || \
            arg_bits(args[1], BITS, &operand) < 0) {                                            \
            return NULL;                                                                        \
        }                                                                                       \
        return PyLong_FromLongLong((long long)BUILTIN((CTYPE *)(self->addr + index),            \
                                                      (CTYPE)operand, __ATOMIC_SEQ_CST));       \
    }

DEFINE_GET_VOLATILE(get_int32_volatile, int32_t)
DEFINE_GET_VOLATILE(get_int64_volatile, int64_t)
DEFINE_PUT_ORDER(put_int32_ordered, int32_t, 32, __ATOMIC_RELEASE)
DEFINE_PUT_ORDER(put_int64_ordered, int64_t, 64, __ATOMIC_RELEASE)
DEFINE_PUT_ORDER(put_int32_volatile, int32_t, 32, __ATOMIC_SEQ_CST)
DEFINE_PUT_ORDER(put_int64_volatile, int64_t, 64, __ATOMIC_SEQ_CST)
DEFINE_CAS(compare_and_set_int32, int32_t, 32)
DEFINE_CAS(compare_and_set_int64, int64_t, 64)
DEFINE_RMW(get_and_add_int32, int32_t, 32, __atomic_fetch_add)
DEFINE_RMW(get_and_add_int64, int64_t, 64, __atomic_fetch_add)
DEFINE_RMW(get_and_set_int32, int32_t, 32, __atomic_exchange_n)
DEFINE_RMW(get_and_set_int64, int64_t, 64, __atomic_exchange_n)
DEFINE_RMW(get_and_and_int32, int32_t, 32, __atomic_fetch_and)
DEFINE_RMW(get_and_or_int32, int32_t, 32, __atomic_fetch_or)

/* Single-writer increment of a counter others read: plain load, release store (Agrona's
 * addLongOrdered). Returns the previous value. */
static PyObject *
add_int64_ordered(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t index;
    int64_t delta, prev;
    NARGS(2, "add_int64_ordered");
    if (arg_index(args[0], &index) < 0 || check_aligned(self, index, 8) < 0 ||
        arg_i64(args[1], &delta) < 0) {
        return NULL;
    }
    prev = __atomic_load_n((int64_t *)(self->addr + index), __ATOMIC_RELAXED);
    __atomic_store_n((int64_t *)(self->addr + index), prev + delta, __ATOMIC_RELEASE);
    return PyLong_FromLongLong((long long)prev);
}

/* ------------------------------------------------------------------------------------------ */
/* futexes (see the header)                                                                    */

#if HAVE_FUTEX
static long
sys_futex(uint32_t *word, int op, uint32_t value, const struct timespec *timeout)
{
    return syscall(SYS_futex, word, op, value, timeout, NULL, 0);
}
#endif

/* futex_wait_int32(index, expected, timeout_ns) -> 0 | FUTEX_NOT_EXPECTED | FUTEX_TIMED_OUT */
static PyObject *
futex_wait_int32(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t index;
    int64_t expected, timeout_ns;
    NARGS(3, "futex_wait_int32");
    if (arg_index(args[0], &index) < 0 || check_aligned(self, index, 4) < 0 ||
        arg_bits(args[1], 32, &expected) < 0 || arg_i64(args[2], &timeout_ns) < 0) {
        return NULL;
    }
#if HAVE_FUTEX
    {
        struct timespec ts, *timeout = NULL;
        uint32_t *word = (uint32_t *)(self->addr + index);
        long rc;
        int err;
        if (timeout_ns >= 0) {
            ts.tv_sec = (time_t)(timeout_ns / 1000000000);
            ts.tv_nsec = (long)(timeout_ns % 1000000000);
            timeout = &ts;
        }
        self->exports++; /* no release() while the kernel may touch the word */
        Py_BEGIN_ALLOW_THREADS
        rc = sys_futex(word, FUTEX_WAIT, (uint32_t)expected, timeout);
        err = errno;
        Py_END_ALLOW_THREADS
        self->exports--;
        if (rc == 0) {
            return PyLong_FromLong(0);
        }
        if (err == EAGAIN || err == ETIMEDOUT) {
            return PyLong_FromLong(err);
        }
        if (err == EINTR) {
            if (PyErr_CheckSignals() < 0) {
                return NULL;
            }
            return PyLong_FromLong(0);
        }
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
#else
    (void)timeout_ns;
    errno = ENOSYS;
    return PyErr_SetFromErrno(PyExc_OSError);
#endif
}

/* futex_wake_int32(index, count) -> how many sleepers were woken */
static PyObject *
futex_wake_int32(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t index;
    int64_t count;
    NARGS(2, "futex_wake_int32");
    if (arg_index(args[0], &index) < 0 || check_aligned(self, index, 4) < 0 ||
        arg_bits(args[1], 32, &count) < 0) {
        return NULL;
    }
    if (count < 0) {
        PyErr_Format(PyExc_ValueError, "count must not be negative: count=%lld", (long long)count);
        return NULL;
    }
#if HAVE_FUTEX
    {
        long rc = sys_futex((uint32_t *)(self->addr + index), FUTEX_WAKE, (uint32_t)count, NULL);
        if (rc < 0) {
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        return PyLong_FromLong(rc);
    }
#else
    errno = ENOSYS;
    return PyErr_SetFromErrno(PyExc_OSError);
#endif
}

/* ------------------------------------------------------------------------------------------ */
/* bytes                                                                                       */

static PyObject *
get_bytes(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t index, length;
    NARGS(2, "get_bytes");
    if (arg_index(args[0], &index) < 0 || arg_index(args[1], &length) < 0 ||
        check(self, index, length) < 0) {
        return NULL;
    }
    return PyBytes_FromStringAndSize(self->addr + index, length);
}

/* put_bytes(index, src, src_offset=0, length=len(src) - src_offset) */
static PyObject *
put_bytes(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t index, src_offset = 0, length = -1;
    Py_buffer src;
    if (nargs < 2 || nargs > 4) {
        PyErr_Format(PyExc_TypeError, "put_bytes() takes 2 to 4 arguments (%zd given)", nargs);
        return NULL;
    }
    if (arg_index(args[0], &index) < 0) {
        return NULL;
    }
    if (nargs > 2 && arg_index(args[2], &src_offset) < 0) {
        return NULL;
    }
    if (nargs > 3 && arg_index(args[3], &length) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(args[1], &src, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (length < 0) {
        length = src.len - src_offset;
    }
    if (src_offset < 0 || length < 0 || src_offset > src.len - length) {
        PyErr_Format(IndexOutOfBoundsError,
                     "source out of bounds: src_offset=%zd length=%zd src_length=%zd",
                     src_offset, length, src.len);
        PyBuffer_Release(&src);
        return NULL;
    }
    if (check(self, index, length) < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    memmove(self->addr + index, (char *)src.buf + src_offset, (size_t)length);
    PyBuffer_Release(&src);
    Py_RETURN_NONE;
}

/* copy_within(dst_index, src_index, length): memmove inside this buffer. */
static PyObject *
copy_within(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t dst, src, length;
    NARGS(3, "copy_within");
    if (arg_index(args[0], &dst) < 0 || arg_index(args[1], &src) < 0 ||
        arg_index(args[2], &length) < 0 || check(self, dst, length) < 0 ||
        check(self, src, length) < 0) {
        return NULL;
    }
    memmove(self->addr + dst, self->addr + src, (size_t)length);
    Py_RETURN_NONE;
}

static PyObject *
set_memory(AtomicBufferObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t index, length;
    int64_t value;
    NARGS(3, "set_memory");
    if (arg_index(args[0], &index) < 0 || arg_index(args[1], &length) < 0 ||
        arg_bits(args[2], 8, &value) < 0 || check(self, index, length) < 0) {
        return NULL;
    }
    memset(self->addr + index, (int)(value & 0xff), (size_t)length);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ */
/* lifecycle and buffer protocol                                                               */

static void
release_view(AtomicBufferObject *self)
{
    if (self->has_view) {
        PyBuffer_Release(&self->view);
        self->has_view = 0;
    }
    self->addr = NULL;
    self->capacity = 0;
}

/* AtomicBufferBase(source, offset=0, length=-1): a view over a writable buffer. */
static int
ab_init(AtomicBufferObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"source", "offset", "length", NULL};
    PyObject *source;
    Py_ssize_t offset = 0, length = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|nn", kwlist, &source, &offset, &length)) {
        return -1;
    }
    if (self->exports > 0) {
        PyErr_SetString(PyExc_BufferError, "AtomicBuffer has exported views");
        return -1;
    }
    release_view(self);
    if (PyObject_GetBuffer(source, &self->view, PyBUF_WRITABLE) < 0) {
        return -1;
    }
    self->has_view = 1;
    if (length < 0) {
        length = self->view.len - offset;
    }
    if (offset < 0 || length < 0 || offset > self->view.len - length) {
        PyErr_Format(IndexOutOfBoundsError,
                     "region out of bounds: offset=%zd length=%zd source_length=%zd", offset,
                     length, self->view.len);
        release_view(self);
        return -1;
    }
    self->addr = (char *)self->view.buf + offset;
    self->capacity = length;
    return 0;
}

static PyObject *
ab_release(AtomicBufferObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->exports > 0) {
        PyErr_SetString(PyExc_BufferError, "cannot release: views of this AtomicBuffer exist");
        return NULL;
    }
    release_view(self);
    Py_RETURN_NONE;
}

static void
ab_dealloc(AtomicBufferObject *self)
{
    release_view(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
ab_getbuffer(AtomicBufferObject *self, Py_buffer *view, int flags)
{
    if (PyBuffer_FillInfo(view, (PyObject *)self, self->addr ? self->addr : "", self->capacity,
                          0, flags) < 0) {
        return -1;
    }
    self->exports++;
    return 0;
}

static void
ab_releasebuffer(AtomicBufferObject *self, Py_buffer *Py_UNUSED(view))
{
    self->exports--;
}

static PyObject *
ab_capacity(AtomicBufferObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->capacity);
}

static PyObject *
ab_address(AtomicBufferObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSize_t((size_t)(uintptr_t)self->addr);
}

#define FAST(name, doc) {#name, (PyCFunction)(void (*)(void))name, METH_FASTCALL, doc}

static PyMethodDef ab_methods[] = {
    FAST(get_int8, "get_int8(index) -> int"),
    FAST(get_uint8, "get_uint8(index) -> int"),
    FAST(get_int16, "get_int16(index) -> int"),
    FAST(get_uint16, "get_uint16(index) -> int"),
    FAST(get_int32, "get_int32(index) -> int"),
    FAST(get_int64, "get_int64(index) -> int"),
    FAST(put_int8, "put_int8(index, value)"),
    FAST(put_int16, "put_int16(index, value)"),
    FAST(put_int32, "put_int32(index, value)"),
    FAST(put_int64, "put_int64(index, value)"),
    FAST(get_int32_volatile, "get_int32_volatile(index) -> int: acquire load"),
    FAST(get_int64_volatile, "get_int64_volatile(index) -> int: acquire load"),
    FAST(put_int32_ordered, "put_int32_ordered(index, value): release store"),
    FAST(put_int64_ordered, "put_int64_ordered(index, value): release store"),
    FAST(put_int32_volatile, "put_int32_volatile(index, value): sequentially consistent store"),
    FAST(put_int64_volatile, "put_int64_volatile(index, value): sequentially consistent store"),
    FAST(compare_and_set_int32, "compare_and_set_int32(index, expected, update) -> bool"),
    FAST(compare_and_set_int64, "compare_and_set_int64(index, expected, update) -> bool"),
    FAST(get_and_add_int32, "get_and_add_int32(index, delta) -> previous value"),
    FAST(get_and_add_int64, "get_and_add_int64(index, delta) -> previous value"),
    FAST(get_and_set_int32, "get_and_set_int32(index, value) -> previous value"),
    FAST(get_and_set_int64, "get_and_set_int64(index, value) -> previous value"),
    FAST(get_and_and_int32, "get_and_and_int32(index, mask) -> previous value"),
    FAST(get_and_or_int32, "get_and_or_int32(index, mask) -> previous value"),
    FAST(futex_wait_int32,
         "futex_wait_int32(index, expected, timeout_ns) -> 0 (woken), EAGAIN (not expected), "
         "ETIMEDOUT; GIL released while asleep"),
    FAST(futex_wake_int32, "futex_wake_int32(index, count) -> sleepers woken"),
    FAST(add_int64_ordered, "add_int64_ordered(index, delta) -> previous value (single writer)"),
    FAST(get_bytes, "get_bytes(index, length) -> bytes"),
    FAST(put_bytes, "put_bytes(index, src, src_offset=0, length=-1)"),
    FAST(copy_within, "copy_within(dst_index, src_index, length)"),
    FAST(set_memory, "set_memory(index, length, value)"),
    {"release", (PyCFunction)ab_release, METH_NOARGS, "release() drops the view of the source"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ab_getset[] = {
    {"capacity", (getter)ab_capacity, NULL, "length of the region in bytes", NULL},
    {"address", (getter)ab_address, NULL, "address of the region (for alignment checks)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyBufferProcs ab_as_buffer = {
    (getbufferproc)ab_getbuffer,
    (releasebufferproc)ab_releasebuffer,
};

static PyTypeObject AtomicBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aeromq.transport.concurrent._atomic.AtomicBufferBase",
    .tp_basicsize = sizeof(AtomicBufferObject),
    .tp_dealloc = (destructor)ab_dealloc,
    .tp_as_buffer = &ab_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Bounds-checked view over a writable buffer with atomic operations.",
    .tp_methods = ab_methods,
    .tp_getset = ab_getset,
    .tp_init = (initproc)ab_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef atomic_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "aeromq.transport.concurrent._atomic",
    .m_doc = "Atomic operations on shared memory for aeromq's transport (see the source header).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__atomic(void)
{
    PyObject *module, *errors;
    errors = PyImport_ImportModule("aeromq.transport._errors");
    if (errors == NULL) {
        return NULL;
    }
    IndexOutOfBoundsError = PyObject_GetAttrString(errors, "IndexOutOfBoundsError");
    Py_DECREF(errors);
    if (IndexOutOfBoundsError == NULL) {
        return NULL;
    }
    if (PyType_Ready(&AtomicBufferType) < 0) {
        return NULL;
    }
    module = PyModule_Create(&atomic_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&AtomicBufferType);
    if (PyModule_AddObject(module, "AtomicBufferBase", (PyObject *)&AtomicBufferType) < 0) {
        Py_DECREF(&AtomicBufferType);
        Py_DECREF(module);
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "HAS_FUTEX", HAVE_FUTEX ? Py_True : Py_False) < 0 ||
        PyModule_AddIntConstant(module, "FUTEX_NOT_EXPECTED", EAGAIN) < 0 ||
        PyModule_AddIntConstant(module, "FUTEX_TIMED_OUT", ETIMEDOUT) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
