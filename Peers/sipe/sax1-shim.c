/*
 * sax1-shim.c: an LD_PRELOAD wrapper of libxml2's xmlSAXUserParseMemory for SIPE (pidgin-sipe
 * 1.25) on Debian 12's libxml2 2.9.14.
 *
 * SIPE's XML parser (sipe-xml.c) hands libxml2 a SAX handler whose `initialized` field is
 * XML_SAX2_MAGIC but which fills in only the SAX1 callbacks (startElement / endElement /
 * characters). That libxml2 takes XML_SAX2_MAGIC to mean "SAX2 element callbacks", finds
 * startElementNs and endElementNs NULL and then reports no element at all, so every document
 * SIPE receives (REGISTER and SUBSCRIBE answers, NOTIFY bodies, [MS-PRES] categories) parses as
 * empty. For such a handler only, this wrapper sets `initialized = 1` (a SAX1 handler) for the
 * duration of the call and restores it afterwards; every other caller is passed through as is.
 *
 * Built by the harness at run time (never committed as a binary):
 *   cc -shared -fPIC -O2 -o sax1-shim.so sax1-shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

/* The first fields of libxml2's xmlSAXHandler (libxml/parser.h, 2.9.x), declared here so the shim
 * builds without libxml2's headers; only the fields read or written are named. */
typedef void (*any_callback)(void);
struct sax_handler {
	any_callback internalSubset, isStandalone, hasInternalSubset, hasExternalSubset, resolveEntity,
		getEntity, entityDecl, notationDecl, attributeDecl, elementDecl, unparsedEntityDecl,
		setDocumentLocator, startDocument, endDocument;
	any_callback startElement;	/* SAX1 */
	any_callback endElement;	/* SAX1 */
	any_callback reference, characters, ignorableWhitespace, processingInstruction, comment,
		warning, error, fatalError, getParameterEntity, cdataBlock, externalSubset;
	unsigned int initialized;
	void *_private;
	any_callback startElementNs;	/* SAX2 */
	any_callback endElementNs;	/* SAX2 */
	any_callback serror;
};

#define XML_SAX2_MAGIC 0xDEEDBEAFu

typedef int (*parse_memory_fn)(struct sax_handler *, void *, const char *, int);

int xmlSAXUserParseMemory(struct sax_handler *sax, void *user_data, const char *buffer, int size)
{
	static parse_memory_fn real;
	if (!real)
		real = (parse_memory_fn)dlsym(RTLD_NEXT, "xmlSAXUserParseMemory");
	if (!real)
		return -1;
	if (sax && sax->initialized == XML_SAX2_MAGIC && !sax->startElementNs && !sax->endElementNs &&
	    sax->startElement) {
		unsigned int saved = sax->initialized;
		int result;
		sax->initialized = 1;
		result = real(sax, user_data, buffer, size);
		sax->initialized = saved;
		return result;
	}
	return real(sax, user_data, buffer, size);
}
