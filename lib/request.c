/* polite requests: the request object and the line-oriented input format of
 * `polite run` (bare URL or JSON object per line), read lazily. */
#define _GNU_SOURCE
#include <polite/redact.h>
#include <polite/request.h>

#include "http_syntax.h"

#include <ctype.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

polite_request *polite_request_new(void) {
  return calloc(1, sizeof(polite_request));
}

void polite_request_free(polite_request *r) {
  if (r == NULL)
    return;
  free(r->id);
  free(r->method);
  free(r->url);
  for (size_t i = 0; i < r->nheaders; i++)
    free(r->headers[i]);
  free(r->headers);
  free(r->body);
  free(r->idempotency_key);
  free(r->error);
  free(r);
}

static char *xstrdup(const char *s) {
  return s ? strdup(s) : NULL;
}

static char *memdup0(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    if (n)
      memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

polite_request *polite_request_dup(const polite_request *r) {
  polite_request *d = polite_request_new();
  if (d == NULL || r == NULL)
    return d;
  d->id = xstrdup(r->id);
  d->method = xstrdup(r->method);
  d->url = xstrdup(r->url);
  d->line = r->line;
  d->has_body = r->has_body;
  d->body_len = r->body_len;
  d->body = r->body ? memdup0(r->body, r->body_len) : NULL;
  d->idempotency_key = xstrdup(r->idempotency_key);
  d->error = xstrdup(r->error);
  d->cost = r->cost;
  if (r->nheaders) {
    d->headers = calloc(r->nheaders, sizeof(char *));
    if (d->headers == NULL) {
      polite_request_free(d);
      return NULL;
    }
    for (size_t i = 0; i < r->nheaders; i++) {
      d->headers[i] = xstrdup(r->headers[i]);
      if (d->headers[i] == NULL) {
        polite_request_free(d);
        return NULL;
      }
      d->nheaders++;
    }
  }
  return d;
}

const char *polite_request_method(const polite_request *r) {
  if (r->method && r->method[0])
    return r->method;
  return r->has_body ? "POST" : "GET";
}

/* Header values must not smuggle extra lines into the request. */
static int value_ok(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0')
      return 0;
  return 1;
}

/* Drops a header already present with the same name (case-insensitive), so
 * a line's header replaces a global -H one. */
static void drop_header(polite_request *r, const char *name, size_t n) {
  for (size_t i = 0; i < r->nheaders; i++) {
    const char *h = r->headers[i];
    if (strlen(h) > n && h[n] == ':' && polite__ci_eqn(h, n, name, n)) {
      free(r->headers[i]);
      memmove(&r->headers[i], &r->headers[i + 1],
              (r->nheaders - i - 1) * sizeof(char *));
      r->nheaders--;
      i--;
    }
  }
}

int polite_request_has_header(const polite_request *r, const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; i < r->nheaders; i++) {
    const char *h = r->headers[i];
    if (strlen(h) > n && h[n] == ':' && polite__ci_eqn(h, n, name, n))
      return 1;
  }
  return 0;
}

int polite_request_add_header(polite_request *r, const char *name,
                              const char *value) {
  size_t nl = strlen(name), vl = strlen(value);
  if (!polite__is_token(name, nl) || !value_ok(value, vl))
    return POLITE_EINVAL;
  drop_header(r, name, nl);
  char **h = realloc(r->headers, (r->nheaders + 1) * sizeof(char *));
  if (h == NULL)
    return POLITE_ENOMEM;
  r->headers = h;
  char *line = malloc(nl + vl + 3);
  if (line == NULL)
    return POLITE_ENOMEM;
  memcpy(line, name, nl);
  memcpy(line + nl, ": ", 2);
  memcpy(line + nl + 2, value, vl + 1);
  r->headers[r->nheaders++] = line;
  return 0;
}

/* Sets r->error to a formatted message (the request becomes invalid). */
__attribute__((format(printf, 2, 3))) static void fail(polite_request *r,
                                                       const char *fmt, ...) {
  if (r->error)
    return;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&r->error, fmt, ap) < 0)
    r->error = NULL;
  va_end(ap);
  if (r->error == NULL)
    r->error = strdup("invalid input");
}

/* URLs longer than this are invalid_input. Far above what servers take
 * (nginx answers 414 past 8 KiB by default, Cloudflare past 16 KiB) and far
 * below the 1 MiB input line limit; documented in docs/input-format.md. */
#define URL_MAX_BYTES 65536

/* What libcurl's URL parser says, in the words of an input error. */
static const struct {
  CURLUcode code;
  const char *why;
} url_faults[] = {
    {CURLUE_BAD_PORT_NUMBER, "has a port that is not a number from 1 to 65535"},
    {CURLUE_BAD_IPV6, "has a malformed IPv6 address (e.g. a missing ']')"},
    {CURLUE_NO_HOST, "has no host"},
    {CURLUE_BAD_HOSTNAME, "has a malformed host name"},
    {CURLUE_BAD_LOGIN, "has malformed user information"},
    {CURLUE_BAD_USER, "has a malformed user name"},
    {CURLUE_BAD_PASSWORD, "has a malformed password"},
    {CURLUE_BAD_PATH, "has a malformed path"},
    {CURLUE_BAD_QUERY, "has a malformed query"},
    {CURLUE_BAD_FRAGMENT, "has a malformed fragment"},
    {CURLUE_MALFORMED_INPUT, "is malformed"},
};

/* Why libcurl refuses url, or NULL when it takes it with a host and a
 * port from 1 to 65535 (curl allows port 0 and an empty host in some
 * forms; a request can be sent to neither). */
static const char *curl_url_fault(const char *url) {
  CURLU *h = curl_url();
  if (h == NULL)
    return "could not be checked (out of memory)";
  const char *why = NULL;
  CURLUcode rc = curl_url_set(h, CURLUPART_URL, url, 0);
  if (rc != CURLUE_OK) {
    why = "is not a URL libcurl accepts";
    for (size_t i = 0; i < sizeof url_faults / sizeof *url_faults; i++)
      if (url_faults[i].code == rc)
        why = url_faults[i].why;
  } else {
    char *host = NULL, *port = NULL;
    if (curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        host == NULL || host[0] == '\0')
      why = "has no host";
    else if (curl_url_get(h, CURLUPART_PORT, &port, 0) == CURLUE_OK &&
             port != NULL && strtol(port, NULL, 10) == 0)
      why = "has a port that is not a number from 1 to 65535";
    curl_free(host);
    curl_free(port);
  }
  curl_url_cleanup(h);
  return why;
}

/* Checks that url is an absolute http(s) URL without spaces or controls,
 * no longer than URL_MAX_BYTES, that libcurl's parser accepts with a host
 * and a usable port. The message names the field and quotes the URL
 * redacted (a query may carry a key), cut to 200 bytes. */
static int check_url(polite_request *r, const char *field, const char *url) {
  const char *why = NULL;
  size_t len = strlen(url);
  size_t skip = polite__ci_prefix(url, len, "http://")    ? 7
                : polite__ci_prefix(url, len, "https://") ? 8
                                                          : 0;
  if (len > URL_MAX_BYTES) {
    fail(r, "%s is %zu bytes long, more than the limit of %d bytes", field, len,
         URL_MAX_BYTES);
    return -1;
  }
  if (skip == 0)
    why = "must start with http:// or https://";
  else if (url[skip] == '\0' || strchr("/?#", url[skip]))
    why = "has no host";
  else
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
      if (*p <= 0x20 || *p == 0x7f) {
        why = "contains a space or control character";
        break;
      }
  if (why == NULL)
    why = curl_url_fault(url);
  if (why == NULL)
    return 0;
  char *red = polite_redact_url(url);
  /* Keep messages short: long values are cut, never the redaction. */
  fail(r, "%s \"%.200s\" %s", field, red ? red : "", why);
  free(red);
  return -1;
}

/* Applies the global -H headers, then the global -X/-d where the line gave
 * none. */
static int apply_defaults(polite_request *r, const polite_input_defaults *def,
                          int line_has_headers) {
  (void)line_has_headers;
  if (def == NULL)
    return 0;
  if (r->cost == 0 && def->cost > 0)
    r->cost = def->cost;
  if (r->method == NULL && def->method != NULL) {
    r->method = strdup(def->method);
    if (r->method == NULL)
      return POLITE_ENOMEM;
  }
  if (!r->has_body && def->body != NULL) {
    r->body = memdup0(def->body, def->body_len);
    if (r->body == NULL)
      return POLITE_ENOMEM;
    r->body_len = def->body_len;
    r->has_body = 1;
  }
  return 0;
}

/* Adds the -H headers to a fresh request before the line's own. */
static void add_global_headers(polite_request *r,
                               const polite_input_defaults *def) {
  if (def == NULL)
    return;
  for (size_t i = 0; i < def->nheaders; i++) {
    const char *h = def->headers[i];
    const char *colon = strchr(h, ':');
    if (colon == NULL)
      continue; /* the command validates -H before it gets here */
    char *name = memdup0(h, (size_t)(colon - h));
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
      v++;
    if (name)
      polite_request_add_header(r, name, v);
    free(name);
  }
}

/* "cost": a whole number 1..POLITE_REQUEST_MAX_COST (5 or 5.0 is not the
 * same thing to every JSON writer, so only integers are accepted). The
 * message quotes the value as given, cut to 40 characters. */
static void parse_cost(polite_request *r, json_t *v) {
  if (json_is_integer(v) && json_integer_value(v) >= 1 &&
      json_integer_value(v) <= (json_int_t)POLITE_REQUEST_MAX_COST) {
    r->cost = (unsigned)json_integer_value(v);
    return;
  }
  char *txt = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
  fail(r, "field \"cost\" must be a whole number from 1 to %u, got %.40s%s",
       POLITE_REQUEST_MAX_COST, txt ? txt : "?",
       txt && strlen(txt) > 40 ? "..." : "");
  free(txt);
}

/* jansson's messages end in " near '<text>'", and that text can be the
 * secret that made the line malformed ("Bearer sk-..."); some also quote
 * input bytes before it ("control character 0x1"). So a message is shown
 * as the kind of fault from this table, with its line and column, never
 * with the text. A message not listed here is "invalid JSON". */
static const struct {
  const char *prefix; /* how jansson's message starts */
  const char *kind;   /* what the error says instead */
} json_faults[] = {
    {"premature end of input near '\"", "unterminated string"},
    {"premature end of input", "premature end of input"},
    {"unexpected token near end of file", "premature end of input"},
    {"'}' expected near end of file",
     "premature end of input (an object is not closed)"},
    {"']' expected near end of file",
     "premature end of input (an array is not closed)"},
    {"unexpected newline", "unterminated string"},
    {"invalid escape", "bad escape in a string"},
    {"control character", "control character in a string"},
    {"unable to decode byte", "invalid UTF-8"},
    {"invalid Unicode", "invalid \\u escape in a string"},
    {"invalid token", "invalid token (not a string, number, object, array, "
                      "true, false or null)"},
    {"end of file expected", "text after the JSON object"},
    {"'[' or '{' expected", "expected an object"},
    {"string or '}' expected", "object key is not a string"},
    {"':' expected", "':' expected after an object key"},
    {"'}' expected", "'}' expected (an object is not closed)"},
    {"']' expected", "']' expected (an array is not closed)"},
    {"unexpected token", "unexpected token"},
    {"maximum parsing depth", "nested too deep"},
    {"duplicate object key", "duplicate field"},
    {"too big integer", "integer out of range"},
    {"too big negative integer", "integer out of range"},
    {"real number overflow", "number out of range"},
    {"NUL byte in object key", "NUL byte in a field name"},
};

static const char *json_fault_kind(const char *text) {
  for (size_t i = 0; i < sizeof json_faults / sizeof *json_faults; i++)
    if (strncmp(text, json_faults[i].prefix, strlen(json_faults[i].prefix)) ==
        0)
      return json_faults[i].kind;
  return "invalid JSON";
}

/* Each field reader takes the field's value v (and the whole object root,
 * for fields that look at others) and either sets r's member or fails r
 * with a message naming the field. Returns 0, or POLITE_ENOMEM. */
typedef int (*field_fn)(polite_request *r, json_t *root, json_t *v);

static int field_id(polite_request *r, json_t *root, json_t *v) {
  (void)root;
  if (json_is_string(v) && json_string_length(v) > 0 &&
      strlen(json_string_value(v)) == json_string_length(v))
    r->id = memdup0(json_string_value(v), json_string_length(v));
  else if (json_is_integer(v)) {
    if (asprintf(&r->id, "%lld", (long long)json_integer_value(v)) < 0)
      r->id = NULL;
  } else
    fail(r, "field \"id\" must be a non-empty string (no NUL) or an "
            "integer");
  return 0;
}

static int field_method(polite_request *r, json_t *root, json_t *v) {
  (void)root;
  if (!json_is_string(v) ||
      !polite__is_token(json_string_value(v), json_string_length(v)))
    fail(r, "field \"method\" must be an HTTP method token (e.g. \"GET\")");
  else
    r->method = strdup(json_string_value(v));
  return 0;
}

static int field_url(polite_request *r, json_t *root, json_t *v) {
  (void)root;
  if (!json_is_string(v))
    fail(r, "field \"url\" must be a string");
  else if (strlen(json_string_value(v)) != json_string_length(v))
    fail(r, "field \"url\" contains a NUL character");
  else if (check_url(r, "field \"url\"", json_string_value(v)) == 0)
    r->url = strdup(json_string_value(v));
  return 0;
}

/* One header of the "headers" object; a bad name is quoted only up to its
 * first bad byte, since a name such as "Authorization: Bearer sk-..." holds
 * its own secret. */
static int one_header(polite_request *r, const char *hk, json_t *hv) {
  int secret = polite_header_is_secret(hk, strlen(hk));
  if (!polite__is_token(hk, strlen(hk))) {
    size_t ok = 0;
    while (hk[ok] && polite__is_tchar((unsigned char)hk[ok]))
      ok++;
    fail(r,
         "header name \"%.*s%s\" is not a valid HTTP token (byte %zu "
         "is 0x%02x)",
         (int)(ok > 100 ? 100 : ok), hk, hk[ok] ? "..." : "", ok + 1,
         (unsigned)(unsigned char)hk[ok]);
  } else if (!json_is_string(hv)) {
    fail(r, "header \"%.100s\" must have a string value", hk);
  } else if (!value_ok(json_string_value(hv), json_string_length(hv))) {
    fail(r, "header \"%.100s\" value%s contains CR, LF or NUL", hk,
         secret ? " (REDACTED)" : "");
  } else if (polite_request_add_header(r, hk, json_string_value(hv)) ==
             POLITE_ENOMEM) {
    return POLITE_ENOMEM;
  }
  return 0;
}

static int field_headers(polite_request *r, json_t *root, json_t *v) {
  (void)root;
  if (!json_is_object(v)) {
    fail(r, "field \"headers\" must be an object of strings");
    return 0;
  }
  const char *hk;
  json_t *hv;
  json_object_foreach(v, hk, hv) {
    if (one_header(r, hk, hv) != 0)
      return POLITE_ENOMEM;
  }
  return 0;
}

/* A string body is sent as it is; a structured one as compact JSON, with
 * Content-Type: application/json unless the line's headers (read before or
 * after this field) name one. */
static int field_body(polite_request *r, json_t *root, json_t *v) {
  if (json_is_string(v)) {
    r->body = memdup0(json_string_value(v), json_string_length(v));
    r->body_len = json_string_length(v);
    r->has_body = 1;
  } else if (json_is_object(v) || json_is_array(v)) {
    r->body = json_dumps(v, JSON_COMPACT);
    r->body_len = r->body ? strlen(r->body) : 0;
    r->has_body = 1;
    int has_ct = polite_request_has_header(r, "Content-Type");
    json_t *hdrs = json_object_get(root, "headers");
    if (hdrs && json_is_object(hdrs)) {
      const char *hk;
      json_t *hv;
      json_object_foreach(hdrs, hk, hv) {
        if (polite__ci_eq(hk, strlen(hk), "content-type"))
          has_ct = 1;
      }
    }
    if (!has_ct)
      polite_request_add_header(r, "Content-Type", "application/json");
  } else if (!json_is_null(v)) {
    fail(r, "field \"body\" must be a string, an object or an array");
  }
  return 0;
}

static int field_idempotency_key(polite_request *r, json_t *root, json_t *v) {
  (void)root;
  if (!json_is_string(v) || json_string_length(v) == 0 ||
      !value_ok(json_string_value(v), json_string_length(v)))
    fail(r, "field \"idempotency_key\" must be a non-empty string without "
            "CR, LF or NUL");
  else
    r->idempotency_key = strdup(json_string_value(v));
  return 0;
}

static int field_cost(polite_request *r, json_t *root, json_t *v) {
  (void)root;
  parse_cost(r, v);
  return 0;
}

/* The fields of a JSON line, one row each (docs/input-format.md). */
static const struct {
  const char *name;
  field_fn read;
} k_fields[] = {
    {"id", field_id},     {"method", field_method},
    {"url", field_url},   {"headers", field_headers},
    {"body", field_body}, {"idempotency_key", field_idempotency_key},
    {"cost", field_cost},
};

/* Reads one JSON line into r. Returns 0 (r->error set when the line is
 * invalid) or POLITE_ENOMEM. The JSON text is never quoted in an error: it
 * may hold a secret. */
static int parse_json(polite_request *r, const char *line, size_t len) {
  json_error_t jerr;
  json_t *root =
      json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
  if (root == NULL) {
    fail(r,
         "not valid JSON at line %ld, column %d: %s (the text is not "
         "shown: it may hold a secret)",
         r->line, jerr.column, json_fault_kind(jerr.text));
    return 0;
  }
  if (!json_is_object(root)) {
    fail(r, "a JSON line must be an object");
    json_decref(root);
    return 0;
  }
  const char *k;
  json_t *v;
  json_object_foreach(root, k, v) {
    size_t i = 0, n = sizeof k_fields / sizeof k_fields[0];
    while (i < n && strcmp(k, k_fields[i].name) != 0)
      i++;
    if (i == n) {
      fail(r,
           "unknown field \"%.100s\" (expected id, method, url, headers, "
           "body, idempotency_key, cost)",
           k);
    } else if (k_fields[i].read(r, root, v) != 0) {
      json_decref(root);
      return POLITE_ENOMEM;
    }
  }
  if (r->url == NULL && r->error == NULL)
    fail(r, "missing field \"url\"");
  json_decref(root);
  return 0;
}

int polite_request_parse_line(const char *line, size_t len, long lineno,
                              const polite_input_defaults *def,
                              polite_request **out) {
  *out = NULL;
  while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n' ||
                     isspace((unsigned char)line[len - 1])))
    len--;
  size_t i = 0;
  while (i < len && isspace((unsigned char)line[i]))
    i++;
  line += i;
  len -= i;
  if (len == 0 || line[0] == '#')
    return 0;
  polite_request *r = polite_request_new();
  if (r == NULL)
    return POLITE_ENOMEM;
  r->line = lineno;
  add_global_headers(r, def);
  if (memchr(line, '\0', len) != NULL) {
    fail(r, "line contains a NUL byte");
  } else if (line[0] == '{' || line[0] == '[') {
    if (parse_json(r, line, len) == POLITE_ENOMEM) {
      polite_request_free(r);
      return POLITE_ENOMEM;
    }
  } else {
    char *url = memdup0(line, len);
    if (url == NULL) {
      polite_request_free(r);
      return POLITE_ENOMEM;
    }
    if (check_url(r, "url", url) == 0)
      r->url = url;
    else
      free(url);
  }
  if (r->id == NULL && asprintf(&r->id, "line-%ld", lineno) < 0)
    r->id = NULL;
  if (r->error == NULL && apply_defaults(r, def, 0) != 0) {
    polite_request_free(r);
    return POLITE_ENOMEM;
  }
  if (r->cost == 0)
    r->cost = 1;
  if (r->id == NULL) {
    polite_request_free(r);
    return POLITE_ENOMEM;
  }
  *out = r;
  return 1;
}

struct polite_input {
  FILE *f;
  const polite_input_defaults *def;
  char *buf;
  size_t cap;
  long lineno;
  int eof;
  const char *last; /* the line last parsed (polite_input_line) */
  size_t last_len;
};

polite_input *polite_input_open(FILE *f, const polite_input_defaults *def) {
  polite_input *in = calloc(1, sizeof *in);
  if (in == NULL)
    return NULL;
  in->f = f;
  in->def = def;
  return in;
}

long polite_input_lines(const polite_input *in) {
  return in->lineno;
}

const char *polite_input_line(const polite_input *in, size_t *len) {
  *len = in->last ? in->last_len : 0;
  return in->last;
}

/* Reads the rest of an over-long line without keeping it. */
static void skip_rest(FILE *f) {
  int c;
  while ((c = getc_unlocked(f)) != EOF && c != '\n')
    ;
}

int polite_input_next(polite_input *in, polite_request **out) {
  *out = NULL;
  while (!in->eof) {
    size_t n = 0;
    int c, too_long = 0;
    /* A bounded getline: the buffer grows to the longest line kept (at
     * most POLITE_INPUT_MAX_LINE), so memory stays flat. */
    while ((c = getc_unlocked(in->f)) != EOF && c != '\n') {
      if (n + 2 > in->cap) {
        if (in->cap >= POLITE_INPUT_MAX_LINE) {
          too_long = 1;
          skip_rest(in->f);
          break;
        }
        size_t nc = in->cap ? in->cap * 2 : 256;
        char *nb = realloc(in->buf, nc);
        if (nb == NULL)
          return POLITE_ENOMEM;
        in->buf = nb;
        in->cap = nc;
      }
      /* in->cap > 0 implies in->buf != NULL; the analyzer cannot tie them. */
      in->buf[n++] = (char)c; // NOLINT(clang-analyzer-core.NullDereference)
    }
    if (c == EOF) {
      if (ferror(in->f))
        return POLITE_EIO;
      in->eof = 1;
      if (n == 0)
        break;
    }
    in->lineno++;
    in->last = NULL;
    if (too_long) {
      polite_request *r = polite_request_new();
      if (r == NULL)
        return POLITE_ENOMEM;
      r->line = in->lineno;
      if (asprintf(&r->id, "line-%ld", in->lineno) < 0)
        r->id = NULL;
      fail(r, "line is longer than %d bytes", POLITE_INPUT_MAX_LINE);
      *out = r;
      return 1;
    }
    const char *line = in->buf ? in->buf : "";
    /* A UTF-8 byte order mark (editors on Windows write one) starts the
     * first line only; it is not part of the request. */
    if (in->lineno == 1 && n >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
      line += 3;
      n -= 3;
    }
    in->last = line;
    in->last_len = n;
    int rc = polite_request_parse_line(line, n, in->lineno, in->def, out);
    if (rc != 0)
      return rc;
  }
  return 0;
}

void polite_input_close(polite_input *in) {
  if (in == NULL)
    return;
  free(in->buf);
  free(in);
}
