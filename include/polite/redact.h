/* polite redact: what counts as a secret (headers, URL parameters) and the
 * copies of URLs, header lines and free text with the secrets replaced, so
 * that no log, report, error message or journal ever holds one. */
#ifndef POLITE_REDACT_H
#define POLITE_REDACT_H

#include <polite/core.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The rules are one table, listed row by row in docs/redaction.md. */
/* 1 when a header name is secret (Authorization, Cookie, X-Api-Key, ...;
 * any case, trailing whitespace ignored). */
POLITE_EXTERN int polite_header_is_secret(const char *name, size_t len);
/* 1 when a URL parameter name is secret (contains key, token, secret, sig,
 * password, auth, session, ...; is code or pass), after percent-decoding. */
POLITE_EXTERN int polite_param_is_secret(const char *name, size_t len);
/* A copy of url with secret query and ;path parameter values (also inside
 * nested URL values) and the userinfo password (a lone user name: all of
 * it) replaced by REDACTED, and the fragment dropped (malloc'ed; NULL only
 * when out of memory or url is NULL). */
POLITE_EXTERN char *polite_redact_url(const char *url);
/* A copy of free text (an error message) with every URL in it passed
 * through polite_redact_url (malloc'ed). */
POLITE_EXTERN char *polite_redact_text(const char *text);
/* A copy of "Name: value" with the value replaced by REDACTED when the name
 * is secret or the value is a credential (Bearer ..., Basic ...); a line
 * without a colon may be a bare credential and becomes "REDACTED". */
POLITE_EXTERN char *polite_redact_header(const char *line);

#ifdef __cplusplus
}
#endif

#endif
