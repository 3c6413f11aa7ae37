#include "CXMLRecorder.h"

#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>

#include <stdlib.h>
#include <string.h>

/* The per-event helpers are inlined into the SAX2 callbacks even where they
   also serve a replay's pg_record_ function (a call each cost about as much
   as the work). */
#define INLINE static inline __attribute__((always_inline))

/* MARK: Runs */

static void run_init(pg_run *run, intptr_t capacity, size_t stride) {
    run->capacity = capacity < 4 ? 4 : capacity;
    run->count = 0;
    run->base = malloc((size_t)run->capacity * stride);
    if (run->base == NULL) abort();
}

/* Empties the run, keeping its memory when it has room for minimum values. */
static void run_reset(pg_run *run, intptr_t minimum, size_t stride) {
    run->count = 0;
    if (run->capacity >= minimum) return;
    free(run->base);
    run_init(run, minimum, stride);
}

static void run_grow(pg_run *run, intptr_t needed, size_t stride) {
    intptr_t capacity = run->capacity * 2 > needed ? run->capacity * 2 : needed;
    void *base = realloc(run->base, (size_t)capacity * stride);
    if (base == NULL) abort();
    run->base = base;
    run->capacity = capacity;
}

/* Room for extra more values; the address of the first. */
INLINE void *run_reserve(pg_run *run, intptr_t extra, size_t stride) {
    if (run->count + extra > run->capacity) run_grow(run, run->count + extra, stride);
    return (char *)run->base + (size_t)run->count * stride;
}

#define RUN_APPEND(run, type, value)                                   \
    do {                                                               \
        *(type *)run_reserve((run), 1, sizeof(type)) = (value);       \
        (run)->count += 1;                                             \
    } while (0)

/* MARK: Recorder */

/* Presence documents run to about one start tag per 30-40 bytes, and as many
   runs of text (mostly indentation) as tags; values and text are about half
   the bytes. Reserved once, so that a typical body records without growing a run. */
static intptr_t node_capacity(intptr_t bytes) { return bytes / 16 > 16 ? bytes / 16 : 16; }
static intptr_t byte_capacity(intptr_t bytes) { return bytes * 3 / 4 > 64 ? bytes * 3 / 4 : 64; }
static intptr_t attribute_capacity(intptr_t bytes) { return bytes / 64 > 8 ? bytes / 64 : 8; }

/* A reset of a recorder that holds no memory yet: every run is allocated. */
void pg_recorder_init(pg_recorder *r, intptr_t estimatedBytes) {
    memset(r, 0, sizeof *r);
    pg_recorder_reset(r, estimatedBytes);
}

void pg_recorder_reset(pg_recorder *r, intptr_t estimatedBytes) {
    run_reset(&r->nodes, node_capacity(estimatedBytes), sizeof(pg_node));
    run_reset(&r->attributes, attribute_capacity(estimatedBytes), sizeof(pg_attribute));
    run_reset(&r->declarations, 8, sizeof(pg_declaration));
    run_reset(&r->bytes, byte_capacity(estimatedBytes), 1);
    run_reset(&r->open, 16, sizeof(int32_t));
    r->openText = -1;
}

void pg_recorder_destroy(pg_recorder *r) {
    free(r->nodes.base);
    free(r->attributes.base);
    free(r->declarations.base);
    free(r->bytes.base);
    free(r->open.base);
}

intptr_t pg_recorder_allocated_bytes(const pg_recorder *r) {
    return r->nodes.capacity * (intptr_t)sizeof(pg_node) + r->attributes.capacity * (intptr_t)sizeof(pg_attribute)
        + r->declarations.capacity * (intptr_t)sizeof(pg_declaration) + r->bytes.capacity
        + r->open.capacity * (intptr_t)sizeof(int32_t);
}

INLINE int32_t index32(intptr_t n) { return (int32_t)n; }

/* Copies count (at least 1) bytes between regions that do not overlap. Up to
   16 bytes take two loads and two stores of the widest size that fits,
   overlapping in the middle: most values and texts (indentation) are that
   short, and a call to memcpy cost more than the copy. */
INLINE void copy_bytes(uint8_t *to, const uint8_t *from, intptr_t count) {
    if (count > 16) {
        memcpy(to, from, (size_t)count);
    } else if (count >= 8) {
        uint64_t head, tail;
        memcpy(&head, from, 8);
        memcpy(&tail, from + count - 8, 8);
        memcpy(to, &head, 8);
        memcpy(to + count - 8, &tail, 8);
    } else if (count >= 4) {
        uint32_t head, tail;
        memcpy(&head, from, 4);
        memcpy(&tail, from + count - 4, 4);
        memcpy(to, &head, 4);
        memcpy(to + count - 4, &tail, 4);
    } else {
        /* 1 to 3 bytes: the first, the middle and the last (some the same). */
        uint8_t first = from[0], middle = from[count / 2], last = from[count - 1];
        to[0] = first;
        to[count / 2] = middle;
        to[count - 1] = last;
    }
}

INLINE void append_bytes(pg_recorder *r, const uint8_t *bytes, intptr_t count) {
    if (count <= 0) return;
    copy_bytes(run_reserve(&r->bytes, count, 1), bytes, count);
    r->bytes.count += count;
}

INLINE void record_attribute_from(pg_recorder *r, int32_t name, int32_t prefix, intptr_t start) {
    pg_attribute a = {name, prefix, index32(start), index32(r->bytes.count - start)};
    RUN_APPEND(&r->attributes, pg_attribute, a);
}

/* The per-event work, inlined into the SAX2 callbacks below; the pg_record_
   functions are these for a replay. */
INLINE void record_attribute(pg_recorder *r, int32_t name, int32_t prefix, const uint8_t *value, intptr_t count) {
    intptr_t start = r->bytes.count;
    append_bytes(r, value, count);
    record_attribute_from(r, name, prefix, start);
}

void pg_record_attribute(pg_recorder *r, int32_t name, int32_t prefix, const uint8_t *value, intptr_t count) {
    record_attribute(r, name, prefix, value, count);
}

void pg_record_declaration(pg_recorder *r, int32_t prefix, int32_t uri) {
    pg_declaration d = {prefix, uri};
    RUN_APPEND(&r->declarations, pg_declaration, d);
}

INLINE void record_start(
    pg_recorder *r, int32_t name, int32_t prefix, int32_t line, int32_t column, intptr_t attributes,
    intptr_t declarations) {
    r->openText = -1;
    intptr_t index = r->nodes.count;
    RUN_APPEND(&r->open, int32_t, index32(index));
    pg_node node = {
        index32(index + 1), name, prefix, line, column,
        index32(r->attributes.count - attributes), index32(attributes),
        index32(r->declarations.count - declarations), index32(declarations),
        0, 0};
    RUN_APPEND(&r->nodes, pg_node, node);
}

void pg_record_start(
    pg_recorder *r, int32_t name, int32_t prefix, int32_t line, int32_t column, intptr_t attributes,
    intptr_t declarations) {
    record_start(r, name, prefix, line, column, attributes, declarations);
}

INLINE void record_end(pg_recorder *r) {
    r->openText = -1;
    if (r->open.count == 0) return;
    r->open.count -= 1;
    int32_t index = ((int32_t *)r->open.base)[r->open.count];
    ((pg_node *)r->nodes.base)[index].end = index32(r->nodes.count);
}

void pg_record_end(pg_recorder *r) { record_end(r); }

INLINE void append_text_node(pg_recorder *r, intptr_t start, intptr_t count) {
    pg_node node = {-1, 0, -1, 0, 0, 0, 0, 0, 0, index32(start), index32(count)};
    RUN_APPEND(&r->nodes, pg_node, node);
}

INLINE void record_characters(pg_recorder *r, const uint8_t *text, intptr_t count) {
    if (r->open.count == 0 || count <= 0) return;
    intptr_t start = r->bytes.count;
    append_bytes(r, text, count);
    if (r->openText >= 0) {
        ((pg_node *)r->nodes.base)[r->openText].textCount += index32(count);
        return;
    }
    r->openText = r->nodes.count;
    append_text_node(r, start, count);
}

void pg_record_characters(pg_recorder *r, const uint8_t *text, intptr_t count) { record_characters(r, text, count); }

void pg_record_text(pg_recorder *r, const uint8_t *text, intptr_t count) {
    intptr_t start = r->bytes.count;
    append_bytes(r, text, count);
    append_text_node(r, start, count);
    r->openText = -1;
}

/* MARK: Names by address */

/* Multiplicative mixing, high bits taken: a dictionary's strings lie a few
   bytes apart in its pool, so their low address bits follow each other and a
   hash of those bits alone fills runs of adjacent slots, which linear probing
   then walks on every lookup. */
INLINE intptr_t slot_of(const void *a, const void *b, intptr_t mask) {
    uint64_t x = (uint64_t)(uintptr_t)a * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)b * 0xC2B2AE3D27D4EB4Full;
    return (intptr_t)(x >> 32) & mask;
}

INLINE int32_t lookup(const pg_intern *t, const void *a, const void *b) {
    if (t->used == 0) return -1;
    intptr_t mask = t->capacity - 1;
    for (intptr_t i = slot_of(a, b, mask); t->slots[i].first != NULL; i = (i + 1) & mask) {
        if (t->slots[i].first == a && t->slots[i].second == b) return t->slots[i].id;
    }
    return -1;
}

int32_t pg_intern_lookup(const pg_intern *t, const void *a, const void *b) { return lookup(t, a, b); }

static void insert(pg_slot *slots, intptr_t capacity, pg_slot slot) {
    intptr_t mask = capacity - 1;
    intptr_t i = slot_of(slot.first, slot.second, mask);
    while (slots[i].first != NULL) i = (i + 1) & mask;
    slots[i] = slot;
}

static pg_slot *new_slots(intptr_t capacity) {
    pg_slot *slots = calloc((size_t)capacity, sizeof(pg_slot));
    if (slots == NULL) abort();
    return slots;
}

void pg_intern_remember(pg_intern *t, const void *a, const void *b, int32_t id) {
    if (t->slots == NULL) {
        t->capacity = PG_INTERN_INITIAL_SLOTS;
        t->slots = new_slots(t->capacity);
    }
    if (t->used >= t->capacity * 3 / 4) {
        if (t->capacity >= PG_INTERN_MAX_SLOTS) {
            t->saturated = true;
            return;
        }
        intptr_t capacity = t->capacity * 2;
        pg_slot *bigger = new_slots(capacity);
        for (intptr_t i = 0; i < t->capacity; i++) {
            if (t->slots[i].first != NULL) insert(bigger, capacity, t->slots[i]);
        }
        free(t->slots);
        t->slots = bigger;
        t->capacity = capacity;
    }
    pg_slot slot = {a, b, id};
    insert(t->slots, t->capacity, slot);
    t->used += 1;
}

void pg_intern_clear(pg_intern *t) {
    free(t->slots);
    t->slots = NULL;
    t->capacity = 0;
    t->used = 0;
    t->saturated = false;
}

/* MARK: SAX2 callbacks */

/* The first key of a string that may be missing. */
INLINE const void *key(const uint8_t *string) { return string ? (const void *)string : PG_EMPTY_KEY; }

INLINE int32_t name_id(pg_sink *s, const uint8_t *local, const uint8_t *uri) {
    int32_t id = lookup(&s->names, key(local), uri);
    return id >= 0 ? id : s->addName(s->owner, local, uri);
}

/* -1 for no prefix. */
INLINE int32_t prefix_id(pg_sink *s, const uint8_t *prefix) {
    if (prefix == NULL) return -1;
    int32_t id = lookup(&s->names, prefix, PG_PREFIX_TAG);
    return id >= 0 ? id : s->addPrefix(s->owner, prefix);
}

INLINE int32_t namespace_id(pg_sink *s, const uint8_t *uri) {
    int32_t id = lookup(&s->names, key(uri), PG_URI_TAG);
    return id >= 0 ? id : s->addNamespace(s->owner, uri);
}

int32_t pg_sink_lookup_namespace(const pg_sink *s, const uint8_t *uri) {
    return lookup(&s->names, key(uri), PG_URI_TAG);
}

void pg_sink_remember_name(pg_sink *s, const uint8_t *local, const uint8_t *uri, int32_t id) {
    pg_intern_remember(&s->names, key(local), uri, id);
}

void pg_sink_remember_prefix(pg_sink *s, const uint8_t *prefix, int32_t id) {
    pg_intern_remember(&s->names, prefix, PG_PREFIX_TAG, id);
}

void pg_sink_remember_namespace(pg_sink *s, const uint8_t *uri, int32_t id) {
    pg_intern_remember(&s->names, key(uri), PG_URI_TAG, id);
}

/* Whether the count bytes at p hold a &, eight bytes at a time (four, or one
   by one, for the last few): a word xor'ed with eight &s has a zero byte
   exactly where p has a & (the exact zero-byte test: subtract 1 from each
   byte, keep the high bits that were clear before). Every attribute value is
   tested, most of them short, which a call to memchr cost more than. */
INLINE bool has_zero_byte64(uint64_t x) {
    return ((x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull) != 0;
}

INLINE bool has_zero_byte32(uint32_t x) { return ((x - 0x01010101u) & ~x & 0x80808080u) != 0; }

INLINE bool contains_ampersand(const uint8_t *p, intptr_t count) {
    if (count >= 8) {
        const uint64_t ampersands = 0x0101010101010101ull * '&';
        uint64_t word;
        intptr_t i = 0;
        for (; i + 8 <= count; i += 8) {
            memcpy(&word, p + i, 8);
            if (has_zero_byte64(word ^ ampersands)) return true;
        }
        if (i == count) return false;
        /* The last eight bytes, overlapping those already tested. */
        memcpy(&word, p + count - 8, 8);
        return has_zero_byte64(word ^ ampersands);
    }
    if (count >= 4) {
        const uint32_t ampersands = 0x01010101u * '&';
        uint32_t head, tail;
        memcpy(&head, p, 4);
        memcpy(&tail, p + count - 4, 4);
        return has_zero_byte32(head ^ ampersands) || has_zero_byte32(tail ^ ampersands);
    }
    for (intptr_t i = 0; i < count; i++) {
        if (p[i] == '&') return true;
    }
    return false;
}

bool pg_contains_ampersand(const uint8_t *bytes, intptr_t count) { return contains_ampersand(bytes, count); }

/* Appends raw with each &#38; turned back into &. With entity substitution
   off, libxml2 2.9 writes every & of an attribute value (from &amp; or &#38;)
   as &#38; and decodes everything else, so each & in raw starts such a
   reference and a left-to-right scan is exact (&amp;#38; arrives as
   &#38;#38; and becomes &#38;). */
static void append_decoding_ampersands(pg_recorder *r, const uint8_t *raw, intptr_t count) {
    uint8_t *out = run_reserve(&r->bytes, count, 1), *start = out;
    intptr_t i = 0;
    while (i < count) {
        if (raw[i] == '&' && i + 5 <= count && memcmp(raw + i, "&#38;", 5) == 0) {
            *out++ = '&';
            i += 5;
        } else {
            *out++ = raw[i++];
        }
    }
    r->bytes.count += out - start;
}

void pg_sink_start(
    void *ctx, const uint8_t *localname, const uint8_t *prefix, const uint8_t *uri, int nbNamespaces,
    const uint8_t **namespaces, int nbAttributes, int nbDefaulted, const uint8_t **attributes) {
    (void)nbDefaulted;
    pg_sink *s = ctx;
    if (s->stopped) return;
    s->elementCount += 1;
    if (s->elementCount > s->maxElements) {
        s->fail(s->owner, PG_FAIL_TOO_MANY_ELEMENTS);
        return;
    }
    pg_recorder *r = s->recorder;
    if (r->open.count >= s->maxDepth) {
        s->fail(s->owner, PG_FAIL_TOO_DEEP);
        return;
    }
    intptr_t declared = 0;
    if (nbNamespaces > 0 && namespaces != NULL) {
        for (int i = 0; i < nbNamespaces; i++) {
            int32_t p = prefix_id(s, namespaces[2 * i]);
            pg_record_declaration(r, p, namespace_id(s, namespaces[2 * i + 1]));
        }
        declared = nbNamespaces;
    }
    intptr_t attributeCount = 0;
    if (nbAttributes > 0 && attributes != NULL) {
        for (int i = 0; i < nbAttributes; i++) {
            const uint8_t **a = attributes + 5 * i;
            int32_t name = name_id(s, a[0], a[2]);
            int32_t p = prefix_id(s, a[1]);
            const uint8_t *value = a[3], *end = a[4];
            intptr_t count = value != NULL && end != NULL ? end - value : 0;
            if (s->decodeAmpersands && contains_ampersand(value, count)) {
                intptr_t start = r->bytes.count;
                append_decoding_ampersands(r, value, count);
                record_attribute_from(r, name, p, start);
            } else {
                record_attribute(r, name, p, value, count);
            }
            attributeCount += 1;
        }
    }
    /* Where the parser stands: the current input's line and column, as
       xmlSAX2GetLineNumber and xmlSAX2GetColumnNumber give them (0 and 0
       without an input), read in place instead of by two calls. */
    xmlParserInputPtr input = ((xmlParserCtxtPtr)s->context)->input;
    int32_t line = input != NULL ? input->line : 0, column = input != NULL ? input->col : 0;
    int32_t name = name_id(s, localname, uri);
    record_start(r, name, prefix_id(s, prefix), line, column, attributeCount, declared);
}

void pg_sink_end(void *ctx, const uint8_t *localname, const uint8_t *prefix, const uint8_t *uri) {
    (void)localname, (void)prefix, (void)uri;
    pg_sink *s = ctx;
    if (s->stopped) return;
    record_end(s->recorder);
    if (s->recorder->open.count == 0) s->complete = true;
}

void pg_sink_characters(void *ctx, const uint8_t *chars, int count) {
    pg_sink *s = ctx;
    if (s->stopped || chars == NULL || count <= 0) return;
    record_characters(s->recorder, chars, count);
}
