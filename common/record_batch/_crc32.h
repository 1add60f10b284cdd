/*
 * common/record_batch/_crc32.h: CRC-32 (zlib's: reflected polynomial 0xEDB88320) with
 * PCLMULQDQ, for the passes of aeromq.common.record_batch._native that check or write record
 * batches (_encoder.c, _checker.c, _merger.c, _reader.c).
 *
 * The folding method of Intel's white paper "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ" (the constants of zlib's and Chromium's SIMD CRC): four 128-bit lanes folded by
 * 512 bits, then by 128 bits, reduced to 32 bits (Barrett); the tail of under 16 bytes by a
 * table. About five times zlib.crc32's speed here. x86-64 with GCC or Clang only
 * (``CRC32_HAVE_CLMUL``), and used only when the CPU has PCLMULQDQ and SSE4.1
 * (``crc32_cpu_has_clmul``, checked at run time); otherwise the module calls Python's
 * ``zlib.crc32``. The hot path is here, ``static`` in each file that includes it
 * (``crc32_of``, as each pass called it when it had its own copy); the state it reads (the
 * table, the ``crc32_clmul_on`` switch, zlib.crc32 for the fallback) is the module's one copy,
 * set up at import and switched by ``use_clmul`` in ``_crc32.c``.
 */
#ifndef AEROMQ_CRC32_H
#define AEROMQ_CRC32_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CRC32_HAVE_CLMUL 1
#else
#define CRC32_HAVE_CLMUL 0
#endif

#if CRC32_HAVE_CLMUL
/* The raw CRC state (not inverted) after ``length`` bytes (a multiple of 16, at least 64)
 * folded into ``state``: four 128-bit lanes folded by 512 bits, reduced to one, folded by 128
 * bits to the end, then to 64 bits and Barrett-reduced to 32. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
crc32_fold(const unsigned char *buf, size_t length, uint32_t state)
{
    const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596LL, 0x0154442bd4LL);
    const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009eLL, 0x01751997d0LL);
    const __m128i k5k0 = _mm_set_epi64x(0, 0x0163cd6124LL);
    const __m128i poly = _mm_set_epi64x(0x01f7011641LL, 0x01db710641LL);
    const __m128i mask32 = _mm_setr_epi32(~0, 0, ~0, 0);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(buf + 0x00));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(buf + 0x10));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(buf + 0x20));
    __m128i x4 = _mm_loadu_si128((const __m128i *)(buf + 0x30));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)state));
    buf += 64;
    length -= 64;
    while (length >= 64) {
        __m128i x5 = _mm_clmulepi64_si128(x1, k1k2, 0x00);
        __m128i x6 = _mm_clmulepi64_si128(x2, k1k2, 0x00);
        __m128i x7 = _mm_clmulepi64_si128(x3, k1k2, 0x00);
        __m128i x8 = _mm_clmulepi64_si128(x4, k1k2, 0x00);
        x1 = _mm_clmulepi64_si128(x1, k1k2, 0x11);
        x2 = _mm_clmulepi64_si128(x2, k1k2, 0x11);
        x3 = _mm_clmulepi64_si128(x3, k1k2, 0x11);
        x4 = _mm_clmulepi64_si128(x4, k1k2, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), _mm_loadu_si128((const __m128i *)(buf + 0x00)));
        x2 = _mm_xor_si128(_mm_xor_si128(x2, x6), _mm_loadu_si128((const __m128i *)(buf + 0x10)));
        x3 = _mm_xor_si128(_mm_xor_si128(x3, x7), _mm_loadu_si128((const __m128i *)(buf + 0x20)));
        x4 = _mm_xor_si128(_mm_xor_si128(x4, x8), _mm_loadu_si128((const __m128i *)(buf + 0x30)));
        buf += 64;
        length -= 64;
    }
    __m128i x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
    x1 = _mm_clmulepi64_si128(x1, k3k4, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
    x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
    x1 = _mm_clmulepi64_si128(x1, k3k4, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x3), x5);
    x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
    x1 = _mm_clmulepi64_si128(x1, k3k4, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x4), x5);
    while (length >= 16) {
        x2 = _mm_loadu_si128((const __m128i *)buf);
        x5 = _mm_clmulepi64_si128(x1, k3k4, 0x00);
        x1 = _mm_clmulepi64_si128(x1, k3k4, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
        buf += 16;
        length -= 16;
    }
    x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
    x2 = _mm_srli_si128(x1, 4);
    x1 = _mm_and_si128(x1, mask32);
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(x1, k5k0, 0x00), x2);
    x2 = _mm_and_si128(x1, mask32);
    x2 = _mm_clmulepi64_si128(x2, poly, 0x10);
    x2 = _mm_and_si128(x2, mask32);
    x2 = _mm_clmulepi64_si128(x2, poly, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}
#endif

/* The reflected CRC-32 table (polynomial 0xEDB88320), for the tail after the folded part;
 * filled once at import (_crc32.c). */
extern uint32_t crc_table[256];

#if CRC32_HAVE_CLMUL
/* zlib.crc32 of ``length`` bytes by folding (only where crc32_cpu_has_clmul() said so, after
 * the table is filled). Needs no GIL. */
static uint32_t
crc32_clmul(const unsigned char *data, size_t length)
{
    uint32_t state = 0xFFFFFFFFu;
    size_t folded = length & ~(size_t)15;
    if (folded >= 64)
        state = crc32_fold(data, folded, state);
    else
        folded = 0;
    for (size_t i = folded; i < length; i++)
        state = crc_table[(state ^ data[i]) & 0xFF] ^ (state >> 8);
    return state ^ 0xFFFFFFFFu;
}
#endif

#ifdef Py_PYTHON_H
/* Whether the module's CRC is the folding one: set once at import (crc32_cpu_has_clmul), and by
 * use_clmul for the tests. */
extern int crc32_clmul_on;
extern PyObject *crc32_zlib; /* zlib.crc32, the fallback */

/* zlib.crc32 of ``length`` bytes, or -1 with a Python error set: folded when ``clmul`` (no GIL
 * needed), else a call of zlib.crc32 (the caller holds the GIL). */
static int64_t
crc32_of(const unsigned char *data, Py_ssize_t length, int clmul)
{
    (void)clmul; /* unused without the folding path */
#if CRC32_HAVE_CLMUL
    if (clmul)
        return (int64_t)crc32_clmul(data, (size_t)length);
#endif
    PyObject *view = PyMemoryView_FromMemory((char *)data, length, PyBUF_READ);
    if (view == NULL)
        return -1;
    PyObject *result = PyObject_CallOneArg(crc32_zlib, view);
    Py_DECREF(view);
    if (result == NULL)
        return -1;
    unsigned long value = PyLong_AsUnsignedLong(result);
    Py_DECREF(result);
    if (value == (unsigned long)-1 && PyErr_Occurred())
        return -1;
    return (int64_t)(value & 0xFFFFFFFFu);
}
#endif

#endif /* AEROMQ_CRC32_H */
