/* libFuzzer target: the redaction functions (lib/redact.c). Beyond "no
 * crash, no overflow" it checks the promise: a marked secret put in a
 * secret parameter (every row of the rule table) or in a URL password,
 * surrounded by fuzzed text, never survives polite_redact_url or
 * polite_redact_text. */
#include <polite/batch.h>

#include "redact.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARK "zq9SECRETzq9"

static void must_hide(const char *in) {
  char *u = polite_redact_url(in);
  if (u == NULL || strstr(u, MARK) != NULL)
    abort();
  free(u);
  /* The same URL inside a message. */
  size_t n = strlen(in) + 32;
  char *msg = malloc(n);
  if (msg == NULL)
    return;
  snprintf(msg, n, "cannot reach '%s': refused", in);
  char *t = polite_redact_text(msg);
  if (t == NULL || strstr(t, MARK) != NULL)
    abort();
  free(t);
  free(msg);
}

/* Keeps the bytes that may stand in a host or path without changing where
 * the parameter starts ('?', '#', '&', ';', '=', '@', '%' and ':' would). */
static void path_safe(char *s) {
  for (char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '/' ||
          *p == '-' || *p == '.' || *p == '_'))
      *p = 'x';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s == NULL)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  size_t slen = strlen(s);

  /* Anything at all: no crash, no overflow, output always made. */
  free(polite_redact_url(s));
  free(polite_redact_text(s));
  free(polite_redact_header(s));
  polite_param_is_secret(s, slen);
  polite_header_is_secret(s, slen);

  /* Split the input into a path part and a tail part. */
  size_t cut = size ? data[0] % (slen + 1) : 0;
  char *path = strndup(s, cut);
  /* The tail must not hold the mark itself, nor make it by decoding: no
   * 'z' and no '%' in it (percent-encoded names are made below). */
  char *tail = s + cut;
  for (char *p = tail; *p; p++)
    if (*p == 'z' || *p == 'Z' || *p == '%')
      *p = 'y';
  if (path == NULL) {
    free(s);
    return 0;
  }
  path_safe(path);
  size_t nrules = 0;
  const polite__redact_rule *rules = polite__redact_rules(&nrules);
  size_t cap = slen + 256;
  char *url = malloc(cap);
  if (url != NULL) {
    for (size_t i = 0; i < nrules; i++) {
      if (rules[i].where != POLITE__RULE_PARAM)
        continue;
      snprintf(url, cap, "https://h/%s?a=1&%s=" MARK "&%s", path, rules[i].text,
               tail);
      must_hide(url);
      /* The same name with its first letter percent-encoded. */
      snprintf(url, cap, "https://h/%s;%%%02X%s=" MARK "/x?%s", path,
               (unsigned)(unsigned char)rules[i].text[0], rules[i].text + 1,
               tail);
      must_hide(url);
    }
    /* A password made of fuzzed bytes (no '@': the userinfo ends at the
     * last one) and no whitespace or quote (it would end a URL in text). */
    char *pw = strndup(tail, 64);
    if (pw != NULL) {
      for (char *p = pw; *p; p++)
        if (*p == '@' || *p <= ' ' || *p == '"' || *p == '\'' || *p == '<' ||
            *p == '>' || *p == 0x7f)
          *p = 'x';
      snprintf(url, cap, "https://user:" MARK "%s" MARK "@h/%s?q=1", pw, path);
      must_hide(url);
      snprintf(url, cap, "redis://:" MARK "%s" MARK "@h:6379/0", pw);
      must_hide(url);
      free(pw);
    }
    free(url);
  }
  free(path);
  free(s);
  return 0;
}
