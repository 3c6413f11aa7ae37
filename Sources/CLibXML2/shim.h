#ifndef PRESENCEGATEWAY_CLIBXML2_SHIM_H
#define PRESENCEGATEWAY_CLIBXML2_SHIM_H

/* Debian's libxml2 is built with ICU; its encoding.h then includes the system
   ICU headers, which clash with the copy inside Foundation on a clean build
   (../shared/TOOLCHAIN.md, pitfall 1). Nothing here uses the ICU converters. */
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlmemory.h>
#include <libxml/xmlschemas.h>
#include <libxml/xmlIO.h>
#include <string.h>

/* xmlFree is a mutable global function pointer: not usable from Swift 6. */
static inline void pg_xmlFree(void *p) { xmlFree(p); }

/* Never fetch anything over a network: a URL with a scheme other than file
   is refused. Local paths stay loadable because XSD imports between the
   schema files the project carries need them; documents themselves never get
   that far, since the parser refuses any DTD. */
static xmlParserInputPtr pg_localOnlyLoader(const char *url, const char *id, xmlParserCtxtPtr ctxt) {
    (void)id;
    if (url == NULL) return NULL;
    const char *scheme = strstr(url, "://");
    if (scheme != NULL && strncmp(url, "file://", 7) != 0) return NULL;
    return xmlNewInputFromFile(ctxt, url);
}
static inline void pg_installLocalOnlyLoader(void) { xmlSetExternalEntityLoader(pg_localOnlyLoader); }

static inline int pg_libxmlVersion(void) { return LIBXML_VERSION; }

#endif
