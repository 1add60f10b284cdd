#define _GNU_SOURCE
#include <Python.h>
#include <sys/mman.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>
#include <dlfcn.h>

#define HUGE (2UL << 20)

/* remap(lo, hi): the 2 MiB-aligned range [lo, hi) (mapped read-only or executable, from a
   file) copied onto anonymous huge pages and moved over the original with one mremap. */
static PyObject *remap(PyObject *self, PyObject *args) {
    unsigned long lo, hi;
    if (!PyArg_ParseTuple(args, "kk", &lo, &hi)) return NULL;
    if ((lo | hi) & (HUGE - 1) || hi <= lo) { PyErr_SetString(PyExc_ValueError, "unaligned"); return NULL; }
    size_t size = hi - lo;
    char *raw = mmap(NULL, size + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return PyErr_SetFromErrno(PyExc_OSError);
    char *tmp = (char *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
    if (tmp > raw) munmap(raw, tmp - raw);
    if (tmp + size < raw + size + HUGE) munmap(tmp + size, raw + size + HUGE - (tmp + size));
    if (madvise(tmp, size, MADV_HUGEPAGE) != 0) { munmap(tmp, size); return PyErr_SetFromErrno(PyExc_OSError); }
    memcpy(tmp, (void *)lo, size);
#ifdef MADV_COLLAPSE
    madvise(tmp, size, MADV_COLLAPSE);
#endif
    if (mprotect(tmp, size, PROT_READ | PROT_EXEC) != 0) { munmap(tmp, size); return PyErr_SetFromErrno(PyExc_OSError); }
    void *moved = mremap(tmp, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)lo);
    if (moved == MAP_FAILED) { munmap(tmp, size); return PyErr_SetFromErrno(PyExc_OSError); }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"remap", remap, METH_VARARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_hugetext", NULL, -1, methods};
PyMODINIT_FUNC PyInit__hugetext(void) { return PyModule_Create(&mod); }
