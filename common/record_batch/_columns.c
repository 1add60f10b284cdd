/*
 * The columnar encoder of aeromq.common.record_batch._native: ``encode_columns``, one record
 * batch straight from the buffers of a column set.
 *
 * Why it exists
 * -------------
 * ``encode`` (``_encoder.c``) takes a Python object per record (a body, a tag, a property
 * string), which the producer makes from a ``Message`` per record: about 3 microseconds of
 * client CPU per message in all (issue 36). Data that is already columnar (a Spark partition's
 * Arrow batches, numpy arrays) has every body in one data buffer behind an offsets buffer; here
 * the records of a batch are checked, sized and written from those buffers in two passes, with
 * no Python object per record, and the GIL released while they run.
 *
 * What it does
 * ------------
 *   encode_columns(topic, bodies, tags, keys, properties, property_map, rows, position, stop,
 *                  limits, born_timestamp_ms, born_host, unique_head, unique_counter,
 *                  producer_id, base_sequence, producer_epoch)
 *       -> (batch: bytes, next_position, 0), or (None, row, problem)
 *       the batch of the rows ``rows[position:next_position]`` (of ``position..`` when ``rows``
 *       is None), as many as ``limits`` (max records, max body length, max bodies in all, max
 *       batch bytes) allow, at least one; or the first row that cannot be a message and why
 *       (the ``ColumnProblem`` codes of ``column_encoder.py``). Every record's properties are
 *       RocketMQ's string of a ``Message`` of the row, in its order: KEYS (the keys split on
 *       whitespace, joined by one space), WAIT=true, the named properties, the map's entries,
 *       then UNIQ_KEY (``unique_head`` and a 4-digit hex counter from ``unique_counter``,
 *       wrapping at 16 bits; no UNIQ_KEY when ``unique_head`` is None). With ``producer_id``
 *       not None the batch carries the producer state, as ``encode`` writes it.
 *   hash_column(column, first_key) -> (hashes, row, problem)
 *       each row's Java ``String.hashCode`` (of its first key, up to whitespace, with
 *       ``first_key``) as int32s, for a selector that hashes keys; or the first row without a
 *       value to hash (NO_KEY: a null, or no key), or whose value is not UTF-8.
 *
 * A column is ``(kind, data, offsets, validity, first, width, length)``: Arrow's binary layout
 * (int32 or int64 offsets, a data buffer, a validity bitmap, the array's offset ``first``), a
 * fixed width (numpy rows; trailing NUL bytes dropped for ``PADDED``, numpy's ``S``), or one
 * constant value for every row. ``column_encoder.py`` keeps ``encode_column_batch_py``, the same
 * in Python over ``encode_batch_py``: the reference a test holds this to, the fallback, and
 * the words of a refusal. Tags, keys and property values are checked as ``Message`` checks them
 * (Python's whitespace, ``_utf8.h``), as UTF-8, and keys and values without \x00 (which the
 * broker's check refuses in a property string). Offsets outside the data, rows outside the
 * columns and buffers shorter than their columns are refused, never read.
 */
#include "_native.h"

#include "_crc32.h"
#include "_utf8.h"

enum { KIND_OFFSETS32 = 1, KIND_OFFSETS64 = 2, KIND_FIXED = 3, KIND_PADDED = 4, KIND_CONSTANT = 5 };

enum {
    PROBLEM_OK = 0,
    PROBLEM_EMPTY_BODY = -1,
    PROBLEM_BODY_TOO_LARGE = -2,
    PROBLEM_BAD_TAG = -3,
    PROBLEM_BAD_KEY = -4,
    PROBLEM_BAD_PROPERTY = -5,
    PROBLEM_PROPERTIES_TOO_LONG = -6,
    PROBLEM_NOT_UTF8 = -7,
    PROBLEM_BAD_COLUMN = -8,
    PROBLEM_NO_KEY = -9,
};

#define WAIT_PROPERTY "WAIT\x01true\x02"
#define WAIT_LENGTH 10
#define KEYS_NAME "KEYS"
#define UNIQ_NAME "UNIQ_KEY"
#define MAX_FIRST ((int64_t)1 << 48) /* an array offset or row count past any buffer */
#define RELEASE_GIL_ROWS 64

/* ------------------------------------------------------------------------------------------ */
/* columns                                                                                     */

typedef struct {
    int kind; /* 0: no column */
    const unsigned char *data, *offsets, *validity;
    Py_ssize_t data_length;
    int64_t first, width, length;
    Py_buffer views[3];
    int held[3];
} Column;

static void
column_release(Column *c)
{
    for (int i = 0; i < 3; i++)
        if (c->held[i])
            PyBuffer_Release(&c->views[i]);
    memset(c, 0, sizeof(*c));
}

static int
hold(Column *c, int slot, PyObject *object, const unsigned char **at, Py_ssize_t *length)
{
    if (PyObject_GetBuffer(object, &c->views[slot], PyBUF_SIMPLE) < 0)
        return -1;
    c->held[slot] = 1;
    *at = (const unsigned char *)c->views[slot].buf;
    *length = c->views[slot].len;
    return 0;
}

/* The column of ``spec`` (a 7-tuple, or None: no column) with ``rows`` rows, its buffers held
 * and their lengths checked against it. 0, or -1 with ValueError or TypeError set. */
static int
column_open(PyObject *spec, int64_t rows, const char *name, Column *c)
{
    memset(c, 0, sizeof(*c));
    if (spec == Py_None)
        return 0;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 7) {
        PyErr_Format(PyExc_TypeError, "%s: a column is a 7-tuple", name);
        return -1;
    }
    long long numbers[4];
    int kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    for (int i = 0; i < 3; i++)
        numbers[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(spec, 4 + i));
    if (PyErr_Occurred())
        return -1;
    c->first = numbers[0];
    c->width = numbers[1];
    c->length = numbers[2];
    if (kind < KIND_OFFSETS32 || kind > KIND_CONSTANT || c->first < 0 || c->first > MAX_FIRST ||
        c->width < 0 || c->width > MAX_FIRST ||
        (kind != KIND_CONSTANT && c->length != rows)) {
        PyErr_Format(PyExc_ValueError, "%s: bad column: kind=%d first=%lld length=%lld rows=%lld",
                     name, kind, (long long)c->first, (long long)c->length, (long long)rows);
        return -1;
    }
    c->kind = kind;
    Py_ssize_t offsets_length = 0, validity_length = 0;
    if (hold(c, 0, PyTuple_GET_ITEM(spec, 1), &c->data, &c->data_length) < 0)
        goto fail;
    int64_t end = c->first + rows;
    if (kind == KIND_OFFSETS32 || kind == KIND_OFFSETS64) {
        PyObject *offsets = PyTuple_GET_ITEM(spec, 2);
        if (offsets == Py_None || hold(c, 1, offsets, &c->offsets, &offsets_length) < 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "%s: an offsets column needs offsets", name);
            goto fail;
        }
        if (offsets_length / (kind == KIND_OFFSETS32 ? 4 : 8) < end + 1) {
            PyErr_Format(PyExc_ValueError, "%s: the offsets are shorter than the column", name);
            goto fail;
        }
    } else if (kind != KIND_CONSTANT && c->width && c->data_length / c->width < end) {
        PyErr_Format(PyExc_ValueError, "%s: the data is shorter than the column", name);
        goto fail;
    }
    PyObject *validity = PyTuple_GET_ITEM(spec, 3);
    if (validity != Py_None && kind != KIND_CONSTANT) {
        if (hold(c, 2, validity, &c->validity, &validity_length) < 0)
            goto fail;
        if (validity_length < (end + 7) / 8) {
            PyErr_Format(PyExc_ValueError, "%s: the validity bitmap is shorter than the column",
                         name);
            goto fail;
        }
    }
    return 0;
fail:
    column_release(c);
    return -1;
}

/* Row ``row``'s value: 1 (at *p, *n bytes), 0 (null), or -1 (its offsets leave the data). */
static inline int
column_value(const Column *c, int64_t row, const unsigned char **p, int64_t *n)
{
    int64_t at = c->first + row;
    if (c->validity != NULL && !((c->validity[at >> 3] >> (at & 7)) & 1))
        return 0;
    int64_t start, stop;
    switch (c->kind) {
    case KIND_OFFSETS32:
        start = load_i32(c->offsets + 4 * at);
        stop = load_i32(c->offsets + 4 * at + 4);
        break;
    case KIND_OFFSETS64:
        start = load_i64(c->offsets + 8 * at);
        stop = load_i64(c->offsets + 8 * at + 8);
        break;
    case KIND_CONSTANT:
        *p = c->data;
        *n = c->data_length;
        return 1;
    default: /* fixed width */
        start = at * c->width;
        stop = start + c->width;
        if (c->kind == KIND_PADDED)
            while (stop > start && c->data[stop - 1] == 0)
                stop--;
        break;
    }
    if (start < 0 || stop < start || stop > c->data_length)
        return -1;
    *p = c->data + start;
    *n = stop - start;
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* the checks of a Message, on UTF-8 bytes                                                     */

/* A tag (not empty): PROBLEM_OK, NOT_UTF8, or BAD_TAG (whitespace, '|', \x01 or \x02). */
static int
check_tag(const unsigned char *p, int64_t n)
{
    if (!utf8_valid(p, n))
        return PROBLEM_NOT_UTF8; /* first, as Python decodes the text before it checks it */
    const unsigned char *end = p + n;
    while (p < end) {
        unsigned char c = *p;
        if (c < 0x80) {
            if (c == '|' || c == 0x01 || c == 0x02 || unicode_is_space(c))
                return PROBLEM_BAD_TAG;
            p++;
            continue;
        }
        int size;
        if (unicode_is_space(utf8_next(p, end, &size)))
            return PROBLEM_BAD_TAG;
        p += size;
    }
    return PROBLEM_OK;
}

/* Keys (``str.split()`` of the text, joined by one space): their length in *length (0: no
 * key), PROBLEM_OK, NOT_UTF8 or BAD_KEY (\x00, \x01 or \x02, which the broker's check of a
 * property string refuses); with ``out``, written there (the bytes checked already). */
static int
scan_keys(const unsigned char *p, int64_t n, int64_t *length, unsigned char *out)
{
    if (out == NULL && !utf8_valid(p, n))
        return PROBLEM_NOT_UTF8;
    const unsigned char *end = p + n;
    int64_t written = 0;
    int in_key = 0;
    while (p < end) {
        int size = 1;
        int32_t cp = *p >= 0x80 ? utf8_next(p, end, &size) : *p;
        if (cp <= 0x02) /* \x00 too: the broker's property check refuses it */
            return PROBLEM_BAD_KEY;
        if (unicode_is_space(cp)) {
            in_key = 0;
        } else {
            if (!in_key && written) {
                if (out != NULL)
                    out[written] = ' ';
                written++;
            }
            in_key = 1;
            if (out != NULL)
                memcpy(out + written, p, (size_t)size);
            written += size;
        }
        p += size;
    }
    *length = written;
    return PROBLEM_OK;
}

/* A property value: PROBLEM_OK, NOT_UTF8, or BAD_PROPERTY (blank, or \x00, \x01 or \x02). */
static int
check_value(const unsigned char *p, int64_t n)
{
    if (!utf8_valid(p, n))
        return PROBLEM_NOT_UTF8;
    const unsigned char *end = p + n;
    int blank = 1;
    while (p < end) {
        int size = 1;
        int32_t cp = *p >= 0x80 ? utf8_next(p, end, &size) : *p;
        if (cp <= 0x02)
            return PROBLEM_BAD_PROPERTY;
        if (!unicode_is_space(cp))
            blank = 0;
        p += size;
    }
    return blank ? PROBLEM_BAD_PROPERTY : PROBLEM_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* the two passes                                                                              */

typedef struct {
    Column bodies, tags, keys, map_keys, map_values;
    Column *properties; /* property_count of them, with their names */
    Py_buffer *names;
    Py_ssize_t property_count, names_held;
    /* the property map: entry offsets per row (int32 or int64), their validity */
    int map_kind;
    const unsigned char *map_offsets, *map_validity;
    int64_t map_first, map_entries;
    Py_buffer map_views[2];
    int map_held[2];
    /* which rows, and how many the columns have */
    const unsigned char *rows;
    Py_buffer rows_view;
    int rows_held;
    int64_t row_count, position, stop;
    /* the limits of one batch */
    int64_t max_records, max_body_length, max_body_total, max_batch_bytes;
    /* unique ids */
    const unsigned char *head;
    Py_ssize_t head_length;
    Py_buffer head_view;
    int head_held;
    uint32_t counter;
    /* pass 1's findings */
    int64_t count, body_total, tag_total, property_total, total, problem_row;
    int problem;
} Columns;

static void
columns_release(Columns *s)
{
    column_release(&s->bodies);
    column_release(&s->tags);
    column_release(&s->keys);
    column_release(&s->map_keys);
    column_release(&s->map_values);
    for (Py_ssize_t i = 0; i < s->property_count; i++)
        column_release(&s->properties[i]);
    for (Py_ssize_t i = 0; i < s->names_held; i++)
        PyBuffer_Release(&s->names[i]);
    PyMem_Free(s->properties);
    PyMem_Free(s->names);
    for (int i = 0; i < 2; i++)
        if (s->map_held[i])
            PyBuffer_Release(&s->map_views[i]);
    if (s->rows_held)
        PyBuffer_Release(&s->rows_view);
    if (s->head_held)
        PyBuffer_Release(&s->head_view);
}

/* The row at ``position``, or -1 when the rows name one outside the columns. */
static inline int64_t
row_at(const Columns *s, int64_t position)
{
    int64_t row = s->rows != NULL ? load_i64(s->rows + 8 * position) : position;
    return row >= 0 && row < s->row_count ? row : -1;
}

/* Row ``row``'s entries of the property map, [*start, *stop) (none for a null row): 1, or 0
 * when its offsets leave the map's entries. */
static inline int
map_entries(const Columns *s, int64_t row, int64_t *start, int64_t *stop)
{
    *start = *stop = 0;
    if (!s->map_kind)
        return 1;
    int64_t at = s->map_first + row;
    if (s->map_validity != NULL && !((s->map_validity[at >> 3] >> (at & 7)) & 1))
        return 1;
    if (s->map_kind == KIND_OFFSETS32) {
        *start = load_i32(s->map_offsets + 4 * at);
        *stop = load_i32(s->map_offsets + 4 * at + 4);
    } else {
        *start = load_i64(s->map_offsets + 8 * at);
        *stop = load_i64(s->map_offsets + 8 * at + 8);
    }
    return *start >= 0 && *start <= *stop && *stop <= s->map_entries;
}

/* One property ``name\x01value\x02`` of a checked value: its bytes, or a problem (< 0); a
 * null value counts 0 bytes. */
static inline int64_t
property_bytes(const Column *values, int64_t row, Py_ssize_t name_length)
{
    const unsigned char *p;
    int64_t n;
    int found = column_value(values, row, &p, &n);
    if (found < 0)
        return PROBLEM_BAD_COLUMN;
    if (!found)
        return 0;
    int problem = check_value(p, n);
    return problem ? problem : name_length + n + 2;
}

/* Pass 1: check and size the rows from ``position``, as many as the limits allow. Sets
 * ``count`` and the totals, or ``problem`` and ``problem_row``. Needs no GIL. */
static void
plan(Columns *s, Py_ssize_t header_length)
{
    int64_t count = 0, bodies = 0, tags = 0, properties = 0;
    int64_t total = header_length;
    int64_t unique = s->head != NULL ? (int64_t)strlen(UNIQ_NAME) + s->head_length + 4 + 2 : 0;
    for (int64_t position = s->position; position < s->stop; position++) {
        int64_t row = row_at(s, position), body_length = 0, tag_length = 0, key_length = 0;
        int problem = PROBLEM_OK;
        const unsigned char *p;
        int64_t n;
        if (row < 0) {
            problem = PROBLEM_BAD_COLUMN;
            row = s->rows != NULL ? load_i64(s->rows + 8 * position) : position;
            goto refused;
        }
        int found = column_value(&s->bodies, row, &p, &n);
        if (found < 0) {
            problem = PROBLEM_BAD_COLUMN;
            goto refused;
        }
        if (!found || n == 0) {
            problem = PROBLEM_EMPTY_BODY;
            goto refused;
        }
        if (n > s->max_body_length) {
            problem = PROBLEM_BODY_TOO_LARGE;
            goto refused;
        }
        body_length = n;
        if (s->tags.kind && (found = column_value(&s->tags, row, &p, &n)) != 0) {
            if (found < 0) {
                problem = PROBLEM_BAD_COLUMN;
                goto refused;
            }
            if (n && (problem = check_tag(p, n)) != PROBLEM_OK)
                goto refused;
            tag_length = n;
        }
        int64_t property_length = WAIT_LENGTH + unique;
        if (s->keys.kind && (found = column_value(&s->keys, row, &p, &n)) != 0) {
            if (found < 0) {
                problem = PROBLEM_BAD_COLUMN;
                goto refused;
            }
            if ((problem = scan_keys(p, n, &key_length, NULL)) != PROBLEM_OK)
                goto refused;
            if (key_length)
                property_length += (int64_t)strlen(KEYS_NAME) + key_length + 2;
        }
        for (Py_ssize_t i = 0; i < s->property_count; i++) {
            int64_t size = property_bytes(&s->properties[i], row, s->names[i].len);
            if (size < 0) {
                problem = (int)size;
                goto refused;
            }
            property_length += size;
        }
        int64_t start, stop;
        if (!map_entries(s, row, &start, &stop)) {
            problem = PROBLEM_BAD_COLUMN;
            goto refused;
        }
        for (int64_t entry = start; entry < stop; entry++) {
            int64_t size = property_bytes(&s->map_values, entry, 0);
            if (size < 0) {
                problem = (int)size;
                goto refused;
            }
            if (size == 0)
                continue; /* a null value: no property */
            if (column_value(&s->map_keys, entry, &p, &n) != 1) {
                problem = PROBLEM_BAD_COLUMN;
                goto refused;
            }
            property_length += size + n;
        }
        if (property_length > MAX_PROPERTIES_LENGTH) {
            problem = PROBLEM_PROPERTIES_TOO_LONG;
            goto refused;
        }
        int64_t record = RECORD_OVERHEAD + body_length + tag_length + property_length;
        if (count && (count >= s->max_records || bodies + body_length > s->max_body_total ||
                      total + record > s->max_batch_bytes))
            break;
        count++;
        bodies += body_length;
        tags += tag_length;
        properties += property_length;
        total += record;
        continue;
    refused:
        s->problem = problem;
        s->problem_row = row;
        return;
    }
    s->count = count;
    s->body_total = bodies;
    s->tag_total = tags;
    s->property_total = properties;
    s->total = total;
}

/* Write one property, ``name\x01value\x02``; the cursor after it. */
static inline unsigned char *
put_property(unsigned char *cursor, const unsigned char *name, Py_ssize_t name_length,
             const unsigned char *value, int64_t value_length)
{
    memcpy(cursor, name, (size_t)name_length);
    cursor += name_length;
    *cursor++ = 0x01;
    memcpy(cursor, value, (size_t)value_length);
    cursor += value_length;
    *cursor++ = 0x02;
    return cursor;
}

static const char HEX[] = "0123456789ABCDEF";

/* Pass 2: the records ``plan`` took, written after the header at ``b`` (columns, bodies, tags,
 * properties). Needs no GIL. */
static void
fill(const Columns *s, unsigned char *b, Py_ssize_t header_length)
{
    int64_t count = s->count;
    unsigned char *hash_col = b + header_length;
    unsigned char *body_col = hash_col + 8 * count;
    unsigned char *tag_col = body_col + 4 * count;
    unsigned char *property_col = tag_col + 4 * count;
    unsigned char *delta_col = property_col + 4 * count; /* the deltas and flags stay zero */
    unsigned char *body_at = delta_col + 8 * count;
    unsigned char *tag_at = body_at + s->body_total;
    unsigned char *property_at = tag_at + s->tag_total;
    memset(delta_col, 0, (size_t)(8 * count));
    uint32_t counter = s->counter;
    for (int64_t i = 0; i < count; i++) {
        int64_t row = row_at(s, s->position + i), n;
        const unsigned char *p;
        column_value(&s->bodies, row, &p, &n);
        memcpy(body_at, p, (size_t)n);
        body_at += n;
        store_u32(body_col + 4 * i, (uint32_t)n);
        int64_t hash = 0, tag_length = 0;
        if (s->tags.kind && column_value(&s->tags, row, &p, &n) == 1 && n) {
            int ok;
            hash = utf8_java_hash(p, n, &ok);
            memcpy(tag_at, p, (size_t)n);
            tag_at += n;
            tag_length = n;
        }
        store_i64(hash_col + 8 * i, hash);
        store_u32(tag_col + 4 * i, (uint32_t)tag_length);
        unsigned char *start = property_at;
        if (s->keys.kind && column_value(&s->keys, row, &p, &n) == 1) {
            int64_t key_length;
            unsigned char *value = property_at + strlen(KEYS_NAME) + 1;
            scan_keys(p, n, &key_length, value);
            if (key_length) {
                memcpy(property_at, KEYS_NAME, strlen(KEYS_NAME));
                property_at[strlen(KEYS_NAME)] = 0x01;
                property_at = value + key_length;
                *property_at++ = 0x02;
            }
        }
        memcpy(property_at, WAIT_PROPERTY, WAIT_LENGTH);
        property_at += WAIT_LENGTH;
        for (Py_ssize_t j = 0; j < s->property_count; j++)
            if (column_value(&s->properties[j], row, &p, &n) == 1)
                property_at = put_property(property_at, s->names[j].buf, s->names[j].len, p, n);
        int64_t first, last;
        map_entries(s, row, &first, &last);
        for (int64_t entry = first; entry < last; entry++) {
            const unsigned char *name;
            int64_t name_length;
            if (column_value(&s->map_values, entry, &p, &n) != 1)
                continue;
            column_value(&s->map_keys, entry, &name, &name_length);
            property_at = put_property(property_at, name, name_length, p, n);
        }
        if (s->head != NULL) {
            unsigned char id[4];
            uint32_t value = (counter + (uint32_t)i) & 0xFFFF;
            for (int k = 0; k < 4; k++)
                id[k] = (unsigned char)HEX[(value >> (12 - 4 * k)) & 0xF];
            memcpy(property_at, UNIQ_NAME, strlen(UNIQ_NAME));
            property_at += strlen(UNIQ_NAME);
            *property_at++ = 0x01;
            memcpy(property_at, s->head, (size_t)s->head_length);
            property_at += s->head_length;
            memcpy(property_at, id, 4);
            property_at += 4;
            *property_at++ = 0x02;
        }
        store_u32(property_col + 4 * i, (uint32_t)(property_at - start));
    }
}

/* ------------------------------------------------------------------------------------------ */
/* the Python call                                                                             */

/* The named property columns: a tuple of (name, column). 0, or -1 with an error set. */
static int
open_properties(Columns *s, PyObject *properties)
{
    if (properties == Py_None)
        return 0;
    if (!PyTuple_Check(properties)) {
        PyErr_SetString(PyExc_TypeError, "properties: a tuple of (name, column)");
        return -1;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(properties);
    s->properties = PyMem_Calloc((size_t)count + 1, sizeof(Column));
    s->names = PyMem_Calloc((size_t)count + 1, sizeof(Py_buffer));
    if (s->properties == NULL || s->names == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(properties); i++) {
        PyObject *pair = PyTuple_GET_ITEM(properties, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "properties: each a (name, column) pair");
            return -1;
        }
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(pair, 0), &s->names[i], PyBUF_SIMPLE) < 0)
            return -1;
        s->names_held++;
        if (column_open(PyTuple_GET_ITEM(pair, 1), s->row_count, "a property",
                        &s->properties[i]) < 0)
            return -1;
        s->property_count++;
        if (!s->properties[i].kind) {
            PyErr_SetString(PyExc_ValueError, "properties: a column, not None");
            return -1;
        }
    }
    return 0;
}

/* The property map: (kind, entry offsets, validity, first, keys, values). 0, or -1. */
static int
open_map(Columns *s, PyObject *map)
{
    if (map == Py_None)
        return 0;
    if (!PyTuple_Check(map) || PyTuple_GET_SIZE(map) != 6) {
        PyErr_SetString(PyExc_TypeError, "property_map: a 6-tuple");
        return -1;
    }
    int kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(map, 0));
    long long first = PyLong_AsLongLong(PyTuple_GET_ITEM(map, 3));
    if (PyErr_Occurred())
        return -1;
    if ((kind != KIND_OFFSETS32 && kind != KIND_OFFSETS64) || first < 0 || first > MAX_FIRST) {
        PyErr_SetString(PyExc_ValueError, "property_map: int32 or int64 offsets, first >= 0");
        return -1;
    }
    s->map_first = first;
    PyObject *keys = PyTuple_GET_ITEM(map, 4);
    if (!PyTuple_Check(keys) || PyTuple_GET_SIZE(keys) != 7) {
        PyErr_SetString(PyExc_TypeError, "property_map: the keys are a column");
        return -1;
    }
    long long entries = PyLong_AsLongLong(PyTuple_GET_ITEM(keys, 6));
    if (PyErr_Occurred())
        return -1;
    if (entries < 0 || entries > MAX_FIRST) {
        PyErr_SetString(PyExc_ValueError, "property_map: a bad count of entries");
        return -1;
    }
    s->map_entries = entries;
    if (column_open(keys, entries, "the map's keys", &s->map_keys) < 0 ||
        column_open(PyTuple_GET_ITEM(map, 5), entries, "the map's values", &s->map_values) < 0)
        return -1;
    if (!s->map_keys.kind || !s->map_values.kind) {
        PyErr_SetString(PyExc_ValueError, "property_map: keys and values are columns");
        return -1;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(map, 1), &s->map_views[0], PyBUF_SIMPLE) < 0)
        return -1;
    s->map_held[0] = 1;
    s->map_offsets = s->map_views[0].buf;
    int64_t end = first + s->row_count;
    if (s->map_views[0].len / (kind == KIND_OFFSETS32 ? 4 : 8) < end + 1) {
        PyErr_SetString(PyExc_ValueError, "property_map: the offsets are shorter than the rows");
        return -1;
    }
    PyObject *validity = PyTuple_GET_ITEM(map, 2);
    if (validity != Py_None) {
        if (PyObject_GetBuffer(validity, &s->map_views[1], PyBUF_SIMPLE) < 0)
            return -1;
        s->map_held[1] = 1;
        s->map_validity = s->map_views[1].buf;
        if (s->map_views[1].len < (end + 7) / 8) {
            PyErr_SetString(PyExc_ValueError, "property_map: the validity is shorter than the rows");
            return -1;
        }
    }
    s->map_kind = kind;
    return 0;
}

static int
as_i64(PyObject *value, int64_t low, int64_t high, const char *name, int64_t *out)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < low || v > high) {
        PyErr_Format(PyExc_ValueError, "%s out of range: %S", name, value);
        return -1;
    }
    *out = v;
    return 0;
}

PyObject *
columns_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 17) {
        PyErr_Format(PyExc_TypeError, "encode_columns() takes 17 arguments (%zd given)", nargs);
        return NULL;
    }
    Columns *s = PyMem_Calloc(1, sizeof(Columns));
    if (s == NULL)
        return PyErr_NoMemory();
    PyObject *out = NULL, *batch = NULL;
    Py_buffer topic, host;
    int topic_held = 0, host_held = 0;
    int64_t born_ms, producer_id = 0, sequence = 0, epoch = 0, counter;
    int has_producer = args[14] != Py_None;

    if (PyObject_GetBuffer(args[0], &topic, PyBUF_SIMPLE) < 0)
        goto done;
    topic_held = 1;
    if (topic.len > MAX_TOPIC_LENGTH) {
        PyErr_Format(PyExc_ValueError, "topic longer than %d bytes: %zd", MAX_TOPIC_LENGTH,
                     topic.len);
        goto done;
    }
    PyObject *bodies = args[1];
    if (!PyTuple_Check(bodies) || PyTuple_GET_SIZE(bodies) != 7) {
        PyErr_SetString(PyExc_TypeError, "bodies: a column");
        goto done;
    }
    if (as_i64(PyTuple_GET_ITEM(bodies, 6), 0, MAX_FIRST, "rows", &s->row_count) < 0)
        goto done;
    if (column_open(bodies, s->row_count, "bodies", &s->bodies) < 0 ||
        column_open(args[2], s->row_count, "tags", &s->tags) < 0 ||
        column_open(args[3], s->row_count, "keys", &s->keys) < 0 ||
        open_properties(s, args[4]) < 0 || open_map(s, args[5]) < 0)
        goto done;
    if (args[6] != Py_None) {
        if (PyObject_GetBuffer(args[6], &s->rows_view, PyBUF_SIMPLE) < 0)
            goto done;
        s->rows_held = 1;
        s->rows = s->rows_view.buf;
    }
    int64_t positions = s->rows != NULL ? s->rows_view.len / 8 : s->row_count;
    if (as_i64(args[7], 0, positions, "position", &s->position) < 0 ||
        as_i64(args[8], s->position, positions, "stop", &s->stop) < 0)
        goto done;
    PyObject *limits = args[9];
    if (!PyTuple_Check(limits) || PyTuple_GET_SIZE(limits) != 4) {
        PyErr_SetString(PyExc_TypeError, "limits: (max_records, max_body_length, "
                                         "max_body_total, max_batch_bytes)");
        goto done;
    }
    if (as_i64(PyTuple_GET_ITEM(limits, 0), 1, INT32_MAX / RECORD_OVERHEAD, "max_records",
               &s->max_records) < 0 ||
        as_i64(PyTuple_GET_ITEM(limits, 1), 1, INT32_MAX, "max_body_length",
               &s->max_body_length) < 0 ||
        as_i64(PyTuple_GET_ITEM(limits, 2), 1, INT32_MAX, "max_body_total",
               &s->max_body_total) < 0 ||
        as_i64(PyTuple_GET_ITEM(limits, 3), 1, INT32_MAX, "max_batch_bytes",
               &s->max_batch_bytes) < 0)
        goto done;
    if (as_i64(args[10], INT64_MIN, INT64_MAX, "born_timestamp_ms", &born_ms) < 0)
        goto done;
    if (PyObject_GetBuffer(args[11], &host, PyBUF_SIMPLE) < 0)
        goto done;
    host_held = 1;
    if (args[12] != Py_None) {
        if (PyObject_GetBuffer(args[12], &s->head_view, PyBUF_SIMPLE) < 0)
            goto done;
        s->head_held = 1;
        s->head = s->head_view.buf;
        s->head_length = s->head_view.len;
    }
    if (as_i64(args[13], 0, 0xFFFF, "unique_counter", &counter) < 0)
        goto done;
    s->counter = (uint32_t)counter;
    if (has_producer &&
        (as_i64(args[14], INT64_MIN, INT64_MAX, "producer_id", &producer_id) < 0 ||
         as_i64(args[15], 0, MAX_SEQUENCE, "base_sequence", &sequence) < 0 ||
         as_i64(args[16], INT16_MIN, INT16_MAX, "producer_epoch", &epoch) < 0))
        goto done;
    if (s->position >= s->stop) {
        PyErr_SetString(PyExc_ValueError, "no rows to encode: position >= stop");
        goto done;
    }

    unsigned attributes = has_producer ? PRODUCER_STATE_FLAG : 0;
    Py_ssize_t header_length = batch_header_length(topic.len, attributes);
    if (s->stop - s->position >= RELEASE_GIL_ROWS) {
        Py_BEGIN_ALLOW_THREADS
        plan(s, header_length);
        Py_END_ALLOW_THREADS
    } else {
        plan(s, header_length);
    }
    if (s->problem) {
        out = Py_BuildValue("(OLi)", Py_None, (long long)s->problem_row, s->problem);
        goto done;
    }
    if (s->total > INT32_MAX) { /* one record over an i32: a body near the largest limits */
        PyErr_Format(PyExc_ValueError, "the batch is longer than an i32: %lld",
                     (long long)s->total);
        goto done;
    }
    /* bytes, not a bytearray: the request's protobuf takes bytes only (no copy to make one) */
    batch = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)s->total);
    if (batch == NULL)
        goto done;
    unsigned char *b = (unsigned char *)PyBytes_AS_STRING(batch);
    batch_write_header(b, header_length, (uint32_t)s->total, (uint32_t)s->count, 0, born_ms,
                       host.buf, (size_t)host.len, attributes, topic.buf, topic.len, producer_id,
                       (uint32_t)sequence, (int16_t)epoch);
    int clmul = crc32_clmul_on;
    int64_t crc = 0;
    if (s->count >= RELEASE_GIL_ROWS) {
        Py_BEGIN_ALLOW_THREADS
        fill(s, b, header_length);
#if CRC32_HAVE_CLMUL
        if (clmul)
            crc = (int64_t)crc32_clmul(b + CRC_START, (size_t)(s->total - CRC_START));
#endif
        Py_END_ALLOW_THREADS
    } else {
        fill(s, b, header_length);
        clmul = 0;
    }
    if (!clmul)
        crc = crc32_of(b + CRC_START, (Py_ssize_t)s->total - CRC_START, crc32_clmul_on);
    if (crc < 0)
        goto done;
    store_u32(b + CRC_OFFSET, (uint32_t)crc);
    out = Py_BuildValue("(OLi)", batch, (long long)(s->position + s->count), PROBLEM_OK);

done:
    Py_XDECREF(batch);
    if (topic_held)
        PyBuffer_Release(&topic);
    if (host_held)
        PyBuffer_Release(&host);
    columns_release(s);
    PyMem_Free(s);
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* the hash of each row's key                                                                  */

PyObject *
columns_hash(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "hash_column() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *spec = args[0];
    int first_key = PyObject_IsTrue(args[1]);
    if (first_key < 0)
        return NULL;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 7) {
        PyErr_SetString(PyExc_TypeError, "hash_column: a column");
        return NULL;
    }
    long long rows = PyLong_AsLongLong(PyTuple_GET_ITEM(spec, 6));
    if (rows == -1 && PyErr_Occurred())
        return NULL;
    if (rows < 0 || rows > MAX_FIRST) {
        PyErr_SetString(PyExc_ValueError, "hash_column: a bad row count");
        return NULL;
    }
    Column c;
    if (column_open(spec, rows, "hash_column", &c) < 0)
        return NULL;
    PyObject *hashes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(4 * rows));
    int64_t bad_row = -1;
    int reason = 0;
    if (hashes == NULL)
        goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(hashes);
    for (int64_t row = 0; row < rows; row++) {
        const unsigned char *p;
        int64_t n;
        int found = column_value(&c, row, &p, &n);
        if (found < 0) {
            reason = PROBLEM_BAD_COLUMN;
        } else if (found && !utf8_valid(p, n)) {
            reason = PROBLEM_NOT_UTF8;
        } else if (found && first_key) { /* the first of the keys: up to whitespace */
            const unsigned char *end = p + n;
            while (p < end) { /* leading whitespace */
                int size = 1;
                int32_t cp = *p >= 0x80 ? utf8_next(p, end, &size) : *p;
                if (!unicode_is_space(cp))
                    break;
                p += size;
            }
            const unsigned char *key = p;
            while (p < end) {
                int size = 1;
                int32_t cp = *p >= 0x80 ? utf8_next(p, end, &size) : *p;
                if (unicode_is_space(cp))
                    break;
                p += size;
            }
            n = p - key;
            p = key;
            found = n > 0;
        }
        if (!reason && !found)
            reason = PROBLEM_NO_KEY;
        if (reason) {
            bad_row = row;
            break;
        }
        int ok;
        store_u32(out + 4 * row, (uint32_t)utf8_java_hash(p, n, &ok));
    }
done:
    column_release(&c);
    if (hashes == NULL)
        return NULL;
    PyObject *result = Py_BuildValue("(OLi)", hashes, (long long)bad_row, reason);
    Py_DECREF(hashes);
    return result;
}
