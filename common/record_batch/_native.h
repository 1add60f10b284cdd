/*
 * What the files of aeromq.common.record_batch._native share: Python, the layout
 * (record_batch.h), Java's hashCode step, and the functions each file gives the module's
 * method table (_native.c). One extension module built from one file per role; every symbol
 * but the module's init is hidden (setup.py builds it with -fvisibility=hidden).
 */
#ifndef AEROMQ_RECORD_BATCH_NATIVE_H
#define AEROMQ_RECORD_BATCH_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "record_batch.h"

/* Reads and gathers of at least this many bytes run with the GIL released (when the CRC needs
 * no Python call): a pull thread's read then runs beside the application's thread. */
#define RELEASE_GIL_BYTES 65536

/* Fold one code point into a Java hashCode (a code point above U+FFFF is two UTF-16 units):
 * the tag hash column (encode hashes a str's code points, check a tag's UTF-8). */
static inline uint32_t
java_hash_step(uint32_t h, uint32_t cp)
{
    if (cp < 0x10000)
        return 31u * h + cp;
    cp -= 0x10000;
    h = 31u * h + (0xD800u + (cp >> 10));
    return 31u * h + (0xDC00u + (cp & 0x3FFu));
}

/* _encoder.c: at import, struct.error (0, or -1 with a Python error set); encode */
int encoder_module_init(void);
PyObject *batch_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* _columns.c */
PyObject *columns_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *columns_hash(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* _checker.c */
PyObject *batch_check(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* _merger.c */
PyObject *batch_merge(PyObject *module, PyObject *batches);
/* _reader.c */
PyObject *columns_read(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* _message_reader.c */
PyObject *messages_read(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* _gather.c */
PyObject *columns_gather(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *columns_find_property(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* _send_encode.c, _send_answer.c */
PyObject *send_request_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *send_answer_read(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* _pull_envelope.c */
PyObject *pull_request_read(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *pull_answer_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *pull_request_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *pulled_answer_read(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* _send_fields.c */
PyObject *send_fields_read(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *stored_send_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* _crc32.c: at import, zlib.crc32 for the fallback, the table, the CPU check (0, or -1 with a
 * Python error set); the module's crc32 and use_clmul */
int crc32_module_init(void);
PyObject *columns_crc32(PyObject *module, PyObject *arg);
PyObject *crc32_use_clmul(PyObject *module, PyObject *arg);

#endif /* AEROMQ_RECORD_BATCH_NATIVE_H */
