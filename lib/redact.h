/* polite redaction rules: the one table of what counts as a secret (lib-
 * private; docs/redaction.md lists the same rows). */
#ifndef POLITE_REDACT_RULES_H
#define POLITE_REDACT_RULES_H

#include <stddef.h>

/* Where a rule applies. */
typedef enum {
  POLITE__RULE_HEADER, /* a header name: its whole value is hidden */
  POLITE__RULE_VALUE,  /* a header value prefix (any header name) */
  POLITE__RULE_PARAM,  /* a URL parameter name (query or ;path parameter),
                          matched after percent-decoding */
  POLITE__RULE_SHAPE   /* a URL shape handled by the parser itself */
} polite__rule_where;

typedef enum {
  POLITE__MATCH_EXACT,    /* the whole name, any case */
  POLITE__MATCH_CONTAINS, /* anywhere in the name, any case */
  POLITE__MATCH_PREFIX,   /* the value starts with it, any case */
  POLITE__MATCH_CODE      /* POLITE__RULE_SHAPE: no text to match */
} polite__rule_match;

/* One row. `text` is lower case. `example` redacts to `redacted` (through
 * polite_redact_url, or polite_redact_header for header and value rows):
 * the unit test walks every row, and the docs test looks for every `text`
 * (or `example`) in docs/redaction.md. */
typedef struct {
  polite__rule_where where;
  polite__rule_match match;
  const char *text;
  const char *example;
  const char *redacted;
} polite__redact_rule;

/* The table and its length (static storage, never freed). */
const polite__redact_rule *polite__redact_rules(size_t *n);

#endif
