/*
 * aeromq.broker.store._index_put: the key index's queued entries written in one call, in C.
 *
 * Why it exists
 * -------------
 * The store's services thread writes the index entries that sends queued (``IndexService.drain``,
 * every 20 ms; ``_index_service.py``). In Python each entry is some twenty calls (the hash of
 * ``topic#key``, the slot read, the entry's and the header's packs), and its slot, a random 4-byte
 * word of a 20 MB table, takes a page fault most times (the checkpoint's flush write-protects
 * the pages it wrote back): 10-20 us an entry, all with the interpreter held, which the session
 * agent then waits for (a drain at 5,000 keyed messages a second held it about 1 ms every
 * 20 ms). Here the entries' hashes are taken with the interpreter held (they read the queued
 * Python objects), then the interpreter is let go while the entries, the header and the slots
 * are written, page faults and all.
 *
 * What it does
 * ------------
 *   put_entries(mm, slot_count, entry_count, items) -> int
 *       Writes the keys of ``items`` (each ``(topic, keys, physical_offset, store_timestamp_ms)``,
 *       an ``IndexService.pending`` entry: ``keys`` a sequence of ``str`` or one unique key's
 *       UTF-8 ``bytes``) to the index file mapped by ``mm``, in order, as ``IndexFile.put``
 *       does key by key (its Python reference, and the fallback when this module is not
 *       built), and returns how many items it wrote whole. It stops before the first item
 *       whose keys do not all fit in the file's free entries: the caller writes that one the
 *       Python way (which rolls to a new file). The file's header (``entries used``, end
 *       timestamp, end physical offset) is read at the start and kept current entry by entry.
 *       A key's hash is ``_index_file.key_hash``'s: the CRC-32 (zlib's) of ``topic#key`` in
 *       UTF-8, 31 bits.
 *
 * Each entry is written as ``IndexFile.put`` orders it: the entry, then the header, then the
 * slot, the slot with a release store: a reader that finds the slot finds the entry whole. The
 * layout (header, slots, entries; little-endian) is drawn in ``_index_file.py``. The caller
 * holds the index's drain lock (one writer of the files) and keeps the file open meanwhile
 * (retention never deletes the newest file; this module holds a buffer export of the map, so
 * a close meanwhile fails rather than unmapping it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define HEADER_LENGTH 40
#define END_TIMESTAMP_OFFSET 8
#define END_PHYSICAL_OFFSET_OFFSET 24
#define ENTRIES_USED_OFFSET 36
#define SLOT_LENGTH 4
#define ENTRY_LENGTH 20
#define ENTRY_PHYSICAL_OFFSET_OFFSET 4
#define ENTRY_TIME_DIFF_OFFSET 12
#define ENTRY_PREVIOUS_OFFSET 16

static uint32_t crc_table[256];

static void
crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

/* zlib's crc32 without its final inversion: start at 0xFFFFFFFF, invert at the end */
static uint32_t
crc_update(uint32_t crc, const unsigned char *data, Py_ssize_t length)
{
    for (Py_ssize_t i = 0; i < length; i++)
        crc = crc_table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
    return crc;
}

static int32_t
hash_of(const char *topic, Py_ssize_t topic_length, const char *key, Py_ssize_t key_length)
{
    uint32_t crc = crc_update(0xFFFFFFFFu, (const unsigned char *)topic, topic_length);
    crc = crc_update(crc, (const unsigned char *)"#", 1);
    crc = crc_update(crc, (const unsigned char *)key, key_length);
    return (int32_t)(~crc & 0x7FFFFFFFu);
}

/* little-endian loads and stores at any alignment (the entries' 8-byte fields are not aligned) */
static inline int32_t
load_i32(const unsigned char *at)
{
    int32_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

static inline int64_t
load_i64(const unsigned char *at)
{
    int64_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

static inline void
store_i32(unsigned char *at, int32_t v)
{
    memcpy(at, &v, sizeof v);
}

static inline void
store_i64(unsigned char *at, int64_t v)
{
    memcpy(at, &v, sizeof v);
}

typedef struct {
    int32_t hash;
    int64_t physical_offset;
    int64_t store_timestamp_ms;
} Key;

/* The keys of one item appended to keys[*count...]; -1 with an exception set on bad input. */
static int
item_keys(PyObject *item, Key **keys, Py_ssize_t *count, Py_ssize_t *capacity)
{
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "an index item is (topic, keys, physical_offset, store_timestamp_ms)");
        return -1;
    }
    Py_ssize_t topic_length;
    const char *topic = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(item, 0), &topic_length);
    if (topic == NULL)
        return -1;
    PyObject *item_keys_object = PyTuple_GET_ITEM(item, 1);
    long long physical_offset = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 2));
    long long stamp = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 3));
    if (PyErr_Occurred())
        return -1;
    PyObject *sequence = NULL;
    Py_ssize_t n = 1;
    if (!PyBytes_Check(item_keys_object)) {
        sequence = PySequence_Fast(item_keys_object,
                                   "an index item's keys are bytes or a sequence of str");
        if (sequence == NULL)
            return -1;
        n = PySequence_Fast_GET_SIZE(sequence);
    }
    if (*count + n > *capacity) {
        Py_ssize_t grown = (*capacity + n) * 2;
        Key *more = PyMem_Realloc(*keys, (size_t)grown * sizeof(Key));
        if (more == NULL) {
            Py_XDECREF(sequence);
            PyErr_NoMemory();
            return -1;
        }
        *keys = more;
        *capacity = grown;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *key;
        Py_ssize_t key_length;
        if (sequence == NULL) {
            key = PyBytes_AS_STRING(item_keys_object);
            key_length = PyBytes_GET_SIZE(item_keys_object);
        } else {
            key = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(sequence, i), &key_length);
            if (key == NULL) {
                Py_DECREF(sequence);
                return -1;
            }
        }
        Key *k = &(*keys)[*count + i];
        k->hash = hash_of(topic, topic_length, key, key_length);
        k->physical_offset = physical_offset;
        k->store_timestamp_ms = stamp;
    }
    Py_XDECREF(sequence);
    *count += n;
    return 0;
}

/* Write keys[0, count) to the file (see the module doc): the caller counted them to fit. */
static void
write_keys(unsigned char *base, Py_ssize_t slot_count, Py_ssize_t entry_count, const Key *keys,
           Py_ssize_t count)
{
    unsigned char *entries = base + HEADER_LENGTH + slot_count * SLOT_LENGTH;
    int64_t begin_ms = load_i64(base);
    int64_t end_ms = load_i64(base + END_TIMESTAMP_OFFSET);
    int64_t end_physical = load_i64(base + END_PHYSICAL_OFFSET_OFFSET);
    Py_ssize_t used = load_i32(base + ENTRIES_USED_OFFSET);
    for (Py_ssize_t i = 0; i < count && used < entry_count; i++) {
        const Key *k = &keys[i];
        unsigned char *slot = base + HEADER_LENGTH + (k->hash % slot_count) * SLOT_LENGTH;
        int32_t previous = load_i32(slot);
        if (!(0 < previous && previous < used))
            previous = 0;
        /* max(0, (stamp - begin) // 1000): a stamp before the file's begin counts as 0 */
        int64_t stamp = k->store_timestamp_ms;
        int64_t diff_s = stamp > begin_ms ? (stamp - begin_ms) / 1000 : 0;
        if (diff_s > 0x7FFFFFFF)
            diff_s = 0x7FFFFFFF;
        unsigned char *entry = entries + used * ENTRY_LENGTH;
        store_i32(entry, k->hash);
        store_i64(entry + ENTRY_PHYSICAL_OFFSET_OFFSET, k->physical_offset);
        store_i32(entry + ENTRY_TIME_DIFF_OFFSET, (int32_t)diff_s);
        store_i32(entry + ENTRY_PREVIOUS_OFFSET, previous);
        if (k->store_timestamp_ms > end_ms)
            end_ms = k->store_timestamp_ms;
        if (k->physical_offset > end_physical)
            end_physical = k->physical_offset;
        store_i64(base + END_TIMESTAMP_OFFSET, end_ms);
        store_i64(base + END_PHYSICAL_OFFSET_OFFSET, end_physical);
        store_i32(base + ENTRIES_USED_OFFSET, (int32_t)(used + 1));
        /* the slot last, released: whoever reads it finds the entry and the header written */
        __atomic_store_n((int32_t *)(void *)slot, (int32_t)used, __ATOMIC_RELEASE);
        used++;
    }
}

/* put_entries(mm, slot_count, entry_count, items) -> int (see the module doc) */
static PyObject *
put_entries(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "put_entries() takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    Py_ssize_t slot_count = PyLong_AsSsize_t(args[1]);
    Py_ssize_t entry_count = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (slot_count < 1 || entry_count < 1) {
        PyErr_Format(PyExc_ValueError, "slot_count %zd and entry_count %zd must be positive",
                     slot_count, entry_count);
        return NULL;
    }
    PyObject *items = PySequence_Fast(args[3], "items must be a sequence");
    if (items == NULL)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0) {
        Py_DECREF(items);
        return NULL;
    }
    Py_ssize_t length = HEADER_LENGTH + slot_count * SLOT_LENGTH + entry_count * ENTRY_LENGTH;
    PyObject *result = NULL;
    Key *keys = NULL;
    Py_ssize_t n_items = PySequence_Fast_GET_SIZE(items);
    if (view.len < length) {
        PyErr_Format(PyExc_ValueError, "index map of %zd bytes, %zd expected", view.len, length);
        goto done;
    }
    unsigned char *base = view.buf;
    Py_ssize_t used = load_i32(base + ENTRIES_USED_OFFSET);
    if (used < 1 || used > entry_count) {
        PyErr_Format(PyExc_ValueError, "index header: entries used %zd out of [1, %zd]", used,
                     entry_count);
        goto done;
    }
    Py_ssize_t capacity = n_items + 1, count = 0, whole = 0;
    keys = PyMem_Malloc((size_t)capacity * sizeof(Key));
    if (keys == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t free_entries = entry_count - used;
    for (; whole < n_items; whole++) {
        Py_ssize_t before = count;
        if (item_keys(PySequence_Fast_GET_ITEM(items, whole), &keys, &count, &capacity) < 0)
            goto done;
        if (count > free_entries) { /* this item does not fit whole: the caller's */
            count = before;
            break;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    write_keys(base, slot_count, entry_count, keys, count);
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(whole);
done:
    PyMem_Free(keys);
    PyBuffer_Release(&view);
    Py_DECREF(items);
    return result;
}

static PyMethodDef methods[] = {
    {"put_entries", (PyCFunction)(void (*)(void))put_entries, METH_FASTCALL,
     "put_entries(mm, slot_count, entry_count, items) -> int: the items written whole."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "aeromq.broker.store._index_put",
    "The key index's queued entries written in one call (see broker/store/_index_put.c).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__index_put(void)
{
    crc_init();
    return PyModule_Create(&module_def);
}
