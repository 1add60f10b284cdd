/*
 * common/record_batch/_utf8.h: UTF-8 as the passes of aeromq.common.record_batch._native read it.
 *
 * Strictly valid UTF-8, as Python's decoder takes it (no overlong forms, no surrogates, nothing
 * above U+10FFFF); Java's ``String.hashCode`` of UTF-8 text (a tag's hash); and Python's
 * whitespace (``str.isspace``, what ``str.split()`` and the pattern ``\s`` match), which tags,
 * keys and property values are checked against. Included by the checker (``_checker.c``) and
 * the columnar encoder (``_columns.c``); ``static inline``, after ``_native.h``.
 */
#ifndef AEROMQ_UTF8_H
#define AEROMQ_UTF8_H

#include "_native.h"

/* Decode one strictly valid UTF-8 sequence at p (< end): its code point, and its length in
 * *size; -1 when the bytes are not UTF-8 (Python's decoder refuses the same). */
static inline int32_t
utf8_next(const unsigned char *p, const unsigned char *end, int *size)
{
    unsigned char c = p[0];
    if (c < 0x80) {
        *size = 1;
        return c;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        if (end - p < 2 || (p[1] & 0xC0) != 0x80)
            return -1;
        *size = 2;
        return (int32_t)(c & 0x1F) << 6 | (p[1] & 0x3F);
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (end - p < 3)
            return -1;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c == 0xE0)
            lo = 0xA0; /* no overlong forms */
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
        if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80)
            return -1;
        *size = 3;
        return (int32_t)(c & 0x0F) << 12 | (int32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (end - p < 4)
            return -1;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c == 0xF0)
            lo = 0x90; /* no overlong forms */
        else if (c == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
        if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return -1;
        *size = 4;
        return (int32_t)(c & 0x07) << 18 | (int32_t)(p[1] & 0x3F) << 12 |
               (int32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
    }
    return -1;
}

static inline int
utf8_valid(const unsigned char *p, Py_ssize_t length)
{
    const unsigned char *end = p + length;
    while (p < end) {
        if (*p < 0x80) {
            p++;
            continue;
        }
        int size;
        if (utf8_next(p, end, &size) < 0)
            return 0;
        p += size;
    }
    return 1;
}


/* The Java hashCode of the UTF-8 at p, as a signed 32-bit value widened to 64 bits; sets *ok
 * to 0 when the bytes are not UTF-8. */
static inline int64_t
utf8_java_hash(const unsigned char *p, Py_ssize_t length, int *ok)
{
    const unsigned char *end = p + length;
    uint32_t h = 0;
    while (p < end) {
        int size;
        int32_t cp = utf8_next(p, end, &size);
        if (cp < 0) {
            *ok = 0;
            return 0;
        }
        h = java_hash_step(h, (uint32_t)cp);
        p += size;
    }
    *ok = 1;
    return (int64_t)(int32_t)h;
}

/* Whether code point ``cp`` is whitespace to Python (``str.isspace``: Py_UNICODE_ISSPACE). */
static inline int
unicode_is_space(int32_t cp)
{
    if (cp < 0x80)
        return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
    if (cp < 0x1680)
        return cp == 0x85 || cp == 0xA0;
    return cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

#endif /* AEROMQ_UTF8_H */
