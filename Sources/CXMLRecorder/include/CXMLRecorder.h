#ifndef PRESENCEGATEWAY_CXMLRECORDER_H
#define PRESENCEGATEWAY_CXMLRECORDER_H

/* The recording of SAX2 events behind XMLBridge's XMLEvents, in C: the
   start-tag, end-tag and character callbacks libxml2 calls for every event
   (a few hundred per presence document) append plain integers and bytes to
   flat runs, and find names by their libxml2 dictionary address. The Swift
   side (XMLBridge: XMLEventRecorder, EventSink, InternTable) owns these
   structures, converts each name met for the first time, builds the errors,
   and copies a finished recording into its XMLEvents. */

#include <stdbool.h>
#include <stdint.h>

/* The recording's entries; XMLEvents.Node, .Attribute and .Declaration have
   the same layout (XMLBridgeTests checks it), so a finished recording is
   copied into an XMLEvents as it lies. */
typedef struct {
    int32_t end, name, prefix, line, column;
    int32_t attributeStart, attributeCount, declarationStart, declarationCount;
    int32_t textStart, textCount;
} pg_node;

typedef struct {
    int32_t name, prefix, valueStart, valueCount;
} pg_attribute;

typedef struct {
    int32_t prefix, uri;
} pg_declaration;

/* A growable run of fixed-size values (count and capacity in values). */
typedef struct {
    void *base;
    intptr_t count;
    intptr_t capacity;
} pg_run;

/* The runs of one recording, and the open-element stack. Counts and positions
   are stored as int32_t by truncation: a parse reads at most INT32_MAX bytes
   and every recorded value comes from at least one (XMLEvents checks a
   replayed tree's totals once). */
typedef struct {
    pg_run nodes;        /* pg_node */
    pg_run attributes;   /* pg_attribute */
    pg_run declarations; /* pg_declaration */
    pg_run bytes;        /* uint8_t: attribute values and text */
    pg_run open;         /* int32_t: indices of the open elements, outermost first */
    /* The text node further character data extends; -1 after any tag. */
    intptr_t openText;
} pg_recorder;

/* Ready to record a document of about estimatedBytes, in the memory the
   recorder has (grown where the estimate needs more); init starts from none. */
void pg_recorder_init(pg_recorder *r, intptr_t estimatedBytes);
void pg_recorder_reset(pg_recorder *r, intptr_t estimatedBytes);
void pg_recorder_destroy(pg_recorder *r);
/* The memory the recorder's runs hold, in bytes. */
intptr_t pg_recorder_allocated_bytes(const pg_recorder *r);

/* An attribute of the next start tag; a namespace declaration on it. */
void pg_record_attribute(pg_recorder *r, int32_t name, int32_t prefix, const uint8_t *value, intptr_t count);
void pg_record_declaration(pg_recorder *r, int32_t prefix, int32_t uri);
/* A start tag, after its attributes and declarations (the last `attributes`
   and `declarations` recorded). Its content follows until pg_record_end. */
void pg_record_start(
    pg_recorder *r, int32_t name, int32_t prefix, int32_t line, int32_t column, intptr_t attributes,
    intptr_t declarations);
void pg_record_end(pg_recorder *r);
/* Character data inside the open element, extending the text node after the
   last tag (outside the root it is ignored). */
void pg_record_characters(pg_recorder *r, const uint8_t *text, intptr_t count);
/* A text node of its own, even empty (a replayed tree may hold such nodes). */
void pg_record_text(pg_recorder *r, const uint8_t *text, intptr_t count);

/* Keys: a (local name, URI) pair, or a prefix or URI with a tag no
   dictionary string has as the second key; a missing local name or URI
   reads as PG_EMPTY_KEY. */
#define PG_PREFIX_TAG ((const void *)1)
#define PG_URI_TAG ((const void *)2)
#define PG_EMPTY_KEY ((const void *)8)

/* Open addressing, from PG_INTERN_INITIAL_SLOTS slots doubling up to
   PG_INTERN_MAX_SLOTS; past that a key is not remembered and the table is
   marked saturated (its context is then not reused). */
#define PG_INTERN_INITIAL_SLOTS 512
#define PG_INTERN_MAX_SLOTS 8192

typedef struct {
    const void *first;
    const void *second;
    int32_t id;
} pg_slot;

/* In front of the table, a cache of the keys last remembered or found:
   2^PG_INTERN_RECENT_BITS slots in sets of two, each set holding the two
   latest of its keys (an older one is dropped), so it never grows (12 KiB).
   A hit costs one multiply and two to four compares, where the table's
   lookup costs two multiplies, a probe loop and its bookkeeping. */
#define PG_INTERN_RECENT_BITS 9

typedef struct {
    pg_slot *slots; /* NULL until the first key */
    intptr_t capacity;
    intptr_t used;
    bool saturated;
    /* Empty slots have a NULL first key (no key has one). */
    pg_slot recent[1 << PG_INTERN_RECENT_BITS];
} pg_intern;

/* The id remembered for (a, b); -1 for none. */
int32_t pg_intern_lookup(pg_intern *t, const void *a, const void *b);
void pg_intern_remember(pg_intern *t, const void *a, const void *b, int32_t id);
/* Forgets every key (the memory is freed). */
void pg_intern_clear(pg_intern *t);

#define PG_FAIL_TOO_MANY_ELEMENTS 1
#define PG_FAIL_TOO_DEEP 2

/* The user data of a parse: what the SAX2 callbacks below need. */
typedef struct {
    pg_recorder *recorder;
    pg_intern names;
    /* The libxml2 parser context (xmlParserCtxtPtr), for the position of a start tag. */
    void *context;
    /* The Swift sink, and its functions: a name, prefix or URI met for the
       first time (converted, remembered in `names`, its id returned), and a
       limit passed (PG_FAIL_*; the sink stops the parser and sets stopped). */
    void *owner;
    int32_t (*addName)(void *owner, const uint8_t *local, const uint8_t *uri);
    int32_t (*addPrefix)(void *owner, const uint8_t *prefix);
    int32_t (*addNamespace)(void *owner, const uint8_t *uri);
    void (*fail)(void *owner, int32_t code);
    intptr_t maxElements;
    intptr_t maxDepth;
    intptr_t elementCount;
    /* Attribute values arrive with each & written as &#38; (libxml2 2.9
       with entity substitution off): turn them back into &. */
    bool decodeAmpersands;
    /* True once the root element has ended. */
    bool complete;
    /* True once an error was met: further events are ignored. */
    bool stopped;
} pg_sink;

/* The id of a URI, -1 if none is remembered, and the ids the owner's
   functions remember: ids in the owner's tables of names, prefixes and URIs,
   keyed by dictionary address. */
int32_t pg_sink_lookup_namespace(pg_sink *s, const uint8_t *uri);
void pg_sink_remember_name(pg_sink *s, const uint8_t *local, const uint8_t *uri, int32_t id);
void pg_sink_remember_prefix(pg_sink *s, const uint8_t *prefix, int32_t id);
void pg_sink_remember_namespace(pg_sink *s, const uint8_t *uri, int32_t id);

/* Whether the count bytes at bytes hold a '&' (what the start-tag callback
   tests each attribute value with; for tests). */
bool pg_contains_ampersand(const uint8_t *bytes, intptr_t count);
/* Copies count bytes (1 to 32) from `from` to `to` as the start-tag callback
   copies a short attribute value, testing them for a '&' in the same pass;
   whether they hold one (for tests). */
bool pg_copy_short(uint8_t *to, const uint8_t *from, intptr_t count);

/* libxml2's startElementNs, endElementNs and characters (also cdataBlock)
   SAX2 callbacks, with a pg_sink as the user data. */
void pg_sink_start(
    void *ctx, const uint8_t *localname, const uint8_t *prefix, const uint8_t *uri, int nbNamespaces,
    const uint8_t **namespaces, int nbAttributes, int nbDefaulted, const uint8_t **attributes);
void pg_sink_end(void *ctx, const uint8_t *localname, const uint8_t *prefix, const uint8_t *uri);
void pg_sink_characters(void *ctx, const uint8_t *chars, int count);

#endif
