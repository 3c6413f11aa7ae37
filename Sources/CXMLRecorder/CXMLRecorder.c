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
/* Rare paths (a run to grow, a name met for the first time, a limit passed) are
   laid out after the common ones, so that the code every event runs stays on
   as few cache lines as it can. */
#define RARELY(condition) __builtin_expect(!!(condition), 0)

/* MARK: Runs */

static void run_init(pg_run *run, intptr_t capacity, size_t stride) {
    run->capacity = capacity < 4 ? 4 : capacity;
    run->count = 0;
    run->base = malloc((size_t)run->capacity * stride);
    if (run->base == NULL) abort();
}

/* The run's memory replaced by room for minimum values. Out of line: a reused
   recorder rarely needs it, and inlined five times it spread the reset over
   several more cache lines of code. */
static __attribute__((noinline)) void run_replace(pg_run *run, intptr_t minimum, size_t stride) {
    free(run->base);
    run_init(run, minimum, stride);
}

/* Empties the run, keeping its memory when it has room for minimum values. */
INLINE void run_reset(pg_run *run, intptr_t minimum, size_t stride) {
    run->count = 0;
    if (run->capacity < minimum) run_replace(run, minimum, stride);
}

static __attribute__((noinline)) void run_grow(pg_run *run, intptr_t needed, size_t stride) {
    intptr_t capacity = run->capacity * 2 > needed ? run->capacity * 2 : needed;
    void *base = realloc(run->base, (size_t)capacity * stride);
    if (base == NULL) abort();
    run->base = base;
    run->capacity = capacity;
}

/* Room for extra more values; the address of the first. */
INLINE void *run_reserve(pg_run *run, intptr_t extra, size_t stride) {
    if (RARELY(run->count + extra > run->capacity)) run_grow(run, run->count + extra, stride);
    return (char *)run->base + (size_t)run->count * stride;
}

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

/* Zero-byte tests (exact: subtract 1 from each byte, keep the high bits that
   were clear before). A word xor'ed with a run of &s has a zero byte exactly
   where the word has a &. */
INLINE uint64_t zero_bytes64(uint64_t x) { return (x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull; }
INLINE uint32_t zero_bytes32(uint32_t x) { return (x - 0x01010101u) & ~x & 0x80808080u; }
INLINE bool has_zero_byte64(uint64_t x) { return zero_bytes64(x) != 0; }

#define SHORT_COPY_MAX 32

/* Copies count (1 to SHORT_COPY_MAX) bytes between regions that do not
   overlap, and tells whether they hold a '&'. Up to 32 bytes take at most
   four loads and four stores of the widest size that fits, overlapping in the
   middle, and the & test reads the same words: most values and texts
   (indentation) are that short, and a call to memcpy cost more than the copy.
   A caller that ignores the answer gets the copy alone (the test is dropped). */
INLINE bool copy_short(uint8_t *to, const uint8_t *from, intptr_t count) {
    const uint64_t ampersands = 0x0101010101010101ull * '&';
    if (count >= 8) {
        uint64_t a, b, c, d;
        memcpy(&a, from, 8);
        memcpy(&d, from + count - 8, 8);
        uint64_t found = zero_bytes64(a ^ ampersands) | zero_bytes64(d ^ ampersands);
        if (count > 16) {
            /* The middle: bytes 8 to 16 and count - 16 to count - 8. */
            memcpy(&b, from + 8, 8);
            memcpy(&c, from + count - 16, 8);
            found |= zero_bytes64(b ^ ampersands) | zero_bytes64(c ^ ampersands);
            memcpy(to + 8, &b, 8);
            memcpy(to + count - 16, &c, 8);
        }
        memcpy(to, &a, 8);
        memcpy(to + count - 8, &d, 8);
        return found != 0;
    }
    if (count >= 4) {
        uint32_t head, tail;
        memcpy(&head, from, 4);
        memcpy(&tail, from + count - 4, 4);
        memcpy(to, &head, 4);
        memcpy(to + count - 4, &tail, 4);
        return (zero_bytes32(head ^ (uint32_t)ampersands) | zero_bytes32(tail ^ (uint32_t)ampersands)) != 0;
    }
    /* 1 to 3 bytes: the first, the middle and the last (some the same). */
    uint8_t first = from[0], middle = from[count / 2], last = from[count - 1];
    to[0] = first;
    to[count / 2] = middle;
    to[count - 1] = last;
    return first == '&' || middle == '&' || last == '&';
}

/* Copies count (at least 1) bytes between regions that do not overlap. */
INLINE void copy_bytes(uint8_t *to, const uint8_t *from, intptr_t count) {
    if (count > SHORT_COPY_MAX) {
        memcpy(to, from, (size_t)count);
    } else {
        (void)copy_short(to, from, count);
    }
}

INLINE void append_bytes(pg_recorder *r, const uint8_t *bytes, intptr_t count) {
    if (count <= 0) return;
    copy_bytes(run_reserve(&r->bytes, count, 1), bytes, count);
    r->bytes.count += count;
}

/* The store_ helpers append an entry to a run the caller has made room in
   (the start-tag callback reserves every run once per tag); the record_
   helpers make the room first. */
INLINE void store_attribute(pg_recorder *r, int32_t name, int32_t prefix, intptr_t start) {
    pg_attribute a = {name, prefix, index32(start), index32(r->bytes.count - start)};
    ((pg_attribute *)r->attributes.base)[r->attributes.count++] = a;
}

INLINE void store_declaration(pg_recorder *r, int32_t prefix, int32_t uri) {
    pg_declaration d = {prefix, uri};
    ((pg_declaration *)r->declarations.base)[r->declarations.count++] = d;
}

/* A start tag, after its `attributes` attributes and `declarations`
   declarations: its node (whose end pg_record_end fills in) and its slot on
   the open-element stack. */
INLINE void store_start(
    pg_recorder *r, int32_t name, int32_t prefix, int32_t line, int32_t column, intptr_t attributes,
    intptr_t declarations) {
    r->openText = -1;
    intptr_t index = r->nodes.count;
    ((int32_t *)r->open.base)[r->open.count++] = index32(index);
    pg_node node = {
        index32(index + 1), name, prefix, line, column,
        index32(r->attributes.count - attributes), index32(attributes),
        index32(r->declarations.count - declarations), index32(declarations),
        0, 0};
    ((pg_node *)r->nodes.base)[r->nodes.count++] = node;
}

INLINE void store_text_node(pg_recorder *r, intptr_t start, intptr_t count) {
    pg_node node = {-1, 0, -1, 0, 0, 0, 0, 0, 0, index32(start), index32(count)};
    ((pg_node *)r->nodes.base)[r->nodes.count++] = node;
}

/* The per-event work of a replay's pg_record_ functions. */
void pg_record_attribute(pg_recorder *r, int32_t name, int32_t prefix, const uint8_t *value, intptr_t count) {
    intptr_t start = r->bytes.count;
    append_bytes(r, value, count);
    run_reserve(&r->attributes, 1, sizeof(pg_attribute));
    store_attribute(r, name, prefix, start);
}

void pg_record_declaration(pg_recorder *r, int32_t prefix, int32_t uri) {
    run_reserve(&r->declarations, 1, sizeof(pg_declaration));
    store_declaration(r, prefix, uri);
}

void pg_record_start(
    pg_recorder *r, int32_t name, int32_t prefix, int32_t line, int32_t column, intptr_t attributes,
    intptr_t declarations) {
    run_reserve(&r->open, 1, sizeof(int32_t));
    run_reserve(&r->nodes, 1, sizeof(pg_node));
    store_start(r, name, prefix, line, column, attributes, declarations);
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
    run_reserve(&r->nodes, 1, sizeof(pg_node));
    store_text_node(r, start, count);
}

/* Character data appended at bytes[start ..< start + count]: the text node
   after the last tag grows, or one begins (in room the caller made). */
INLINE void store_characters(pg_recorder *r, intptr_t start, intptr_t count) {
    if (r->openText >= 0) {
        ((pg_node *)r->nodes.base)[r->openText].textCount += index32(count);
        return;
    }
    r->openText = r->nodes.count;
    store_text_node(r, start, count);
}

INLINE void record_characters(pg_recorder *r, const uint8_t *text, intptr_t count) {
    if (r->open.count == 0 || count <= 0) return;
    intptr_t start = r->bytes.count;
    append_bytes(r, text, count);
    run_reserve(&r->nodes, 1, sizeof(pg_node));
    store_characters(r, start, count);
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

/* The cache set of (a, b): two adjacent slots, chosen by one multiply
   (high bits taken). Three keys in use that share a set only cost table
   lookups; the table behind is what bounds a lookup. */
INLINE pg_slot *recent_set(pg_intern *t, const void *a, const void *b) {
    uint64_t x = ((uint64_t)(uintptr_t)a ^ (uint64_t)(uintptr_t)b) * 0x9E3779B97F4A7C15ull;
    return &t->recent[(x >> (64 - PG_INTERN_RECENT_BITS)) & ~(uint64_t)1];
}

/* A key found or remembered goes first in its set, the one there second
   (the one second is dropped from the cache). */
INLINE void cache(pg_intern *t, pg_slot slot) {
    pg_slot *set = recent_set(t, slot.first, slot.second);
    set[1] = set[0];
    set[0] = slot;
}

/* The table's lookup, for a key the cache does not hold. */
static __attribute__((noinline)) int32_t lookup_table(pg_intern *t, const void *a, const void *b) {
    if (t->used == 0) return -1;
    intptr_t mask = t->capacity - 1;
    for (intptr_t i = slot_of(a, b, mask); t->slots[i].first != NULL; i = (i + 1) & mask) {
        if (t->slots[i].first == a && t->slots[i].second == b) {
            cache(t, t->slots[i]);
            return t->slots[i].id;
        }
    }
    return -1;
}

INLINE int32_t lookup(pg_intern *t, const void *a, const void *b) {
    const pg_slot *set = recent_set(t, a, b);
    if (set[0].first == a && set[0].second == b) return set[0].id;
    if (set[1].first == a && set[1].second == b) return set[1].id;
    return lookup_table(t, a, b);
}

int32_t pg_intern_lookup(pg_intern *t, const void *a, const void *b) { return lookup(t, a, b); }

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
    cache(t, slot);
}

void pg_intern_clear(pg_intern *t) {
    free(t->slots);
    t->slots = NULL;
    t->capacity = 0;
    t->used = 0;
    t->saturated = false;
    memset(t->recent, 0, sizeof t->recent);
}

/* MARK: SAX2 callbacks */

/* The first key of a string that may be missing. */
INLINE const void *key(const uint8_t *string) { return string ? (const void *)string : PG_EMPTY_KEY; }

INLINE int32_t name_id(pg_sink *s, const uint8_t *local, const uint8_t *uri) {
    int32_t id = lookup(&s->names, key(local), uri);
    return RARELY(id < 0) ? s->addName(s->owner, local, uri) : id;
}

/* -1 for no prefix. */
INLINE int32_t prefix_id(pg_sink *s, const uint8_t *prefix) {
    if (prefix == NULL) return -1;
    int32_t id = lookup(&s->names, prefix, PG_PREFIX_TAG);
    return RARELY(id < 0) ? s->addPrefix(s->owner, prefix) : id;
}

INLINE int32_t namespace_id(pg_sink *s, const uint8_t *uri) {
    int32_t id = lookup(&s->names, key(uri), PG_URI_TAG);
    return RARELY(id < 0) ? s->addNamespace(s->owner, uri) : id;
}

int32_t pg_sink_lookup_namespace(pg_sink *s, const uint8_t *uri) {
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

/* Whether the count bytes at p hold a &: what copy_short tells for short
   values, eight bytes at a time for longer ones (the last eight overlapping
   those before). */
INLINE bool contains_ampersand(const uint8_t *p, intptr_t count) {
    if (count <= SHORT_COPY_MAX) {
        uint8_t scratch[SHORT_COPY_MAX];
        return count > 0 && copy_short(scratch, p, count);
    }
    const uint64_t ampersands = 0x0101010101010101ull * '&';
    uint64_t word;
    intptr_t i = 0;
    for (; i + 8 <= count; i += 8) {
        memcpy(&word, p + i, 8);
        if (has_zero_byte64(word ^ ampersands)) return true;
    }
    if (i == count) return false;
    memcpy(&word, p + count - 8, 8);
    return has_zero_byte64(word ^ ampersands);
}

bool pg_contains_ampersand(const uint8_t *bytes, intptr_t count) { return contains_ampersand(bytes, count); }

bool pg_copy_short(uint8_t *to, const uint8_t *from, intptr_t count) {
    return count >= 1 && count <= SHORT_COPY_MAX && copy_short(to, from, count);
}

/* Appends raw with each &#38; turned back into &. With entity substitution
   off, libxml2 2.9 writes every & of an attribute value (from &amp; or &#38;)
   as &#38; and decodes everything else, so each & in raw starts such a
   reference and a left-to-right scan is exact (&amp;#38; arrives as
   &#38;#38; and becomes &#38;). */
static __attribute__((noinline)) void append_decoding_ampersands(pg_recorder *r, const uint8_t *raw, intptr_t count) {
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

/* Room for a start tag's entries: its node and open-stack slot, its
   attributes and declarations. Out of line: a reused context's runs
   rarely grow. */
static __attribute__((noinline)) void reserve_start(pg_recorder *r, intptr_t attributes, intptr_t declarations) {
    run_reserve(&r->nodes, 1, sizeof(pg_node));
    run_reserve(&r->open, 1, sizeof(int32_t));
    run_reserve(&r->attributes, attributes, sizeof(pg_attribute));
    run_reserve(&r->declarations, declarations, sizeof(pg_declaration));
}

void pg_sink_start(
    void *ctx, const uint8_t *localname, const uint8_t *prefix, const uint8_t *uri, int nbNamespaces,
    const uint8_t **namespaces, int nbAttributes, int nbDefaulted, const uint8_t **attributes) {
    (void)nbDefaulted;
    pg_sink *s = ctx;
    if (RARELY(s->stopped)) return;
    s->elementCount += 1;
    if (RARELY(s->elementCount > s->maxElements)) {
        s->fail(s->owner, PG_FAIL_TOO_MANY_ELEMENTS);
        return;
    }
    pg_recorder *r = s->recorder;
    if (RARELY(r->open.count >= s->maxDepth)) {
        s->fail(s->owner, PG_FAIL_TOO_DEEP);
        return;
    }
    intptr_t declared = nbNamespaces > 0 && namespaces != NULL ? nbNamespaces : 0;
    intptr_t attributeCount = nbAttributes > 0 && attributes != NULL ? nbAttributes : 0;
    /* Every run but the bytes is reserved once for the whole tag, so that
       each entry below is stored without a test. */
    if (RARELY(r->nodes.count >= r->nodes.capacity || r->open.count >= r->open.capacity
        || r->attributes.count + attributeCount > r->attributes.capacity
        || r->declarations.count + declared > r->declarations.capacity)) {
        reserve_start(r, attributeCount, declared);
    }
    for (intptr_t i = 0; i < declared; i++) {
        int32_t p = prefix_id(s, namespaces[2 * i]);
        store_declaration(r, p, namespace_id(s, namespaces[2 * i + 1]));
    }
    for (intptr_t i = 0; i < attributeCount; i++) {
        const uint8_t **a = attributes + 5 * i;
        int32_t name = name_id(s, a[0], a[2]);
        int32_t p = prefix_id(s, a[1]);
        const uint8_t *value = a[3], *end = a[4];
        intptr_t count = value != NULL && end != NULL ? end - value : 0;
        intptr_t start = r->bytes.count;
        if (count > 0) {
            /* Copied as it is and tested for a & in the same pass; a value
               with one is written again over the copy, decoded. */
            uint8_t *to = run_reserve(&r->bytes, count, 1);
            bool ampersand;
            if (count <= SHORT_COPY_MAX) {
                ampersand = copy_short(to, value, count);
            } else {
                memcpy(to, value, (size_t)count);
                ampersand = contains_ampersand(value, count);
            }
            if (RARELY(ampersand && s->decodeAmpersands)) {
                append_decoding_ampersands(r, value, count);
            } else {
                r->bytes.count = start + count;
            }
        }
        store_attribute(r, name, p, start);
    }
    /* Where the parser stands: the current input's line and column, as
       xmlSAX2GetLineNumber and xmlSAX2GetColumnNumber give them (0 and 0
       without an input), read in place instead of by two calls. */
    xmlParserInputPtr input = ((xmlParserCtxtPtr)s->context)->input;
    int32_t line = input != NULL ? input->line : 0, column = input != NULL ? input->col : 0;
    int32_t name = name_id(s, localname, uri);
    store_start(r, name, prefix_id(s, prefix), line, column, attributeCount, declared);
}

void pg_sink_end(void *ctx, const uint8_t *localname, const uint8_t *prefix, const uint8_t *uri) {
    (void)localname, (void)prefix, (void)uri;
    pg_sink *s = ctx;
    if (s->stopped) return;
    record_end(s->recorder);
    if (s->recorder->open.count == 0) s->complete = true;
}

/* Character data the fast path below does not take: text longer than
   copy_short copies, or a run to grow. */
static __attribute__((noinline)) void record_characters_slow(pg_recorder *r, const uint8_t *text, intptr_t count) {
    record_characters(r, text, count);
}

void pg_sink_characters(void *ctx, const uint8_t *chars, int count) {
    pg_sink *s = ctx;
    if (s->stopped || chars == NULL || count <= 0) return;
    pg_recorder *r = s->recorder;
    if (r->open.count == 0) return;
    intptr_t n = count, start = r->bytes.count;
    /* The common case (short text, room in the runs) stores in place and
       calls nothing, so it needs no saved registers; the rest goes out of line. */
    if (n > SHORT_COPY_MAX || start + n > r->bytes.capacity
        || (r->openText < 0 && r->nodes.count >= r->nodes.capacity)) {
        record_characters_slow(r, chars, n);
        return;
    }
    (void)copy_short((uint8_t *)r->bytes.base + start, chars, n);
    r->bytes.count = start + n;
    store_characters(r, start, n);
}
