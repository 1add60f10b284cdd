/*
 * The CRC-32 of aeromq.common.record_batch._native: its state (the module's one copy, which
 * every pass's ``crc32_of`` reads), set up at import, the switch the tests turn, and the
 * module's ``crc32`` and ``use_clmul`` (see _crc32.h for the method).
 */
#include "_native.h"

#include "_crc32.h"

uint32_t crc_table[256];
int crc32_clmul_on = 0;
PyObject *crc32_zlib = NULL;

static void
crc_table_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

/* Whether this CPU runs the folding CRC (PCLMULQDQ and SSE4.1). */
static int
crc32_cpu_has_clmul(void)
{
#if CRC32_HAVE_CLMUL
    __builtin_cpu_init();
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#else
    return 0;
#endif
}

int
crc32_module_init(void)
{
    PyObject *zlib = PyImport_ImportModule("zlib");
    if (zlib == NULL)
        return -1;
    crc32_zlib = PyObject_GetAttrString(zlib, "crc32");
    Py_DECREF(zlib);
    if (crc32_zlib == NULL)
        return -1;
    crc_table_init();
    crc32_clmul_on = crc32_cpu_has_clmul();
    return 0;
}

/* use_clmul(on) -> bool: whether the folding CRC was in use; it is from now on if ``on`` and
 * the CPU has PCLMULQDQ, else zlib.crc32 is (for the tests of both paths). */
PyObject *
crc32_use_clmul(PyObject *Py_UNUSED(module), PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    int was = crc32_clmul_on;
    crc32_clmul_on = on && crc32_cpu_has_clmul();
    return PyBool_FromLong(was);
}

/* crc32(data) -> int: zlib.crc32 of a bytes-like object, computed here (for the tests). */
PyObject *
columns_crc32(PyObject *Py_UNUSED(module), PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int64_t crc = crc32_of((const unsigned char *)view.buf, view.len, crc32_clmul_on);
    PyBuffer_Release(&view);
    if (crc < 0)
        return NULL;
    return PyLong_FromLongLong(crc);
}
