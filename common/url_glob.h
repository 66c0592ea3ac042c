/* URL globs with Dev Proxy's urlsToWatch semantics, shared by the test
 * proxy and the gateway (their --watch and --allow-host): `*` matches any
 * run of characters (including '/'), everything else itself ignoring ASCII
 * case; a pattern that starts with '/' is matched against the path and
 * query only, else against the absolute URL; a leading '!' excludes. */
#ifndef POLITE_URL_GLOB_H
#define POLITE_URL_GLOB_H

#include <stddef.h>

/* 1 when pattern matches: a pattern starting with '/' against path (NULL:
 * ""), any other against url (NULL: ""). Iterative, never recursive:
 * linear in practice, so a hostile pattern cannot blow the stack. */
int polite__url_glob(const char *pattern, const char *url, const char *path);

/* A watch list: the first pattern that matches decides (a leading '!'
 * excludes); an empty list watches everything. */
int polite__url_watch(const char *const *patterns, size_t n, const char *url,
                      const char *path);

/* 1 when some pattern of the list could match a URL of authority
 * (host[:port]) under the scheme https (1) or http (0): its host part
 * matches, or it names no host (a path glob, a bare star). Exclusions are
 * skipped. What decides whether a CONNECT is intercepted. */
int polite__url_watch_host(const char *const *patterns, size_t n,
                           const char *authority, int https);

/* 1 when a CONNECT to host:port (an IPv6 literal without brackets) is to
 * be intercepted: some pattern could match an https:// URL of it, or an
 * http:// one (a client may send plain HTTP through a CONNECT, as undici's
 * ProxyAgent does for http:// URLs). Both the authority with its port and
 * the one without a scheme's default port are tried. */
int polite__url_watch_connect(const char *const *patterns, size_t n,
                              const char *host, int port);

#endif
