/* polite proxy: Dev Proxy errors files and mocks files (load with jansson,
 * match requests). */
#include "px.h"

#include "http_syntax.h"

#include <jansson.h>
#include <stdarg.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void polite__px_errf(char *err, size_t errlen, const char *fmt, ...) {
  if (err == NULL || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

static char *xstrdup(const char *s) {
  return s ? strdup(s) : NULL;
}

static void response_free(px_response *r) {
  for (size_t i = 0; i < r->nheaders; i++) {
    free(r->headers[i].name);
    free(r->headers[i].value);
  }
  free(r->headers);
  free(r->body);
}

void polite__px_rules_free(px_rules *r) {
  if (r == NULL)
    return;
  for (size_t i = 0; i < r->n; i++) {
    px_rule *u = &r->rules[i];
    free(u->url);
    free(u->method);
    free(u->body_fragment);
    for (size_t j = 0; j < u->nresponses; j++)
      response_free(&u->responses[j]);
    free(u->responses);
  }
  free(r->rules);
  r->rules = NULL;
  r->n = 0;
}

void polite__px_dirname(const char *path, char *dir, size_t size,
                        const char *none) {
  snprintf(dir, size, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  else
    snprintf(dir, size, "%s", none);
}

void polite__px_file_error(char *err, size_t errlen, const char *path,
                           size_t max) {
  if (errno == EFBIG)
    polite__px_errf(err, errlen,
                    "%s: larger than the limit of %zu bytes (--max-file-size)",
                    path, max);
  else
    polite__px_errf(err, errlen, "%s: cannot read file: %s", path,
                    strerror(errno));
}

/* A body: a string is sent as is ("@file" reads the file next to the rules
 * file), any other JSON value is serialized compactly, null/absent is empty. */
static int parse_body(px_response *r, json_t *body, const char *dir, size_t max,
                      const char *name, const char *where, char *err,
                      size_t errlen) {
  if (body == NULL || json_is_null(body))
    return 0;
  if (json_is_string(body)) {
    const char *s = json_string_value(body);
    size_t n = json_string_length(body);
    if (dir && n > 1 && s[0] == '@') {
      char path[4096];
      if (s[1] == '/')
        snprintf(path, sizeof path, "%s", s + 1);
      else
        snprintf(path, sizeof path, "%s/%s", dir, s + 1);
      size_t len = 0;
      if (polite__read_file(path, max, &r->body, &len) != 0) {
        char why[600];
        polite__px_file_error(why, sizeof why, path, max);
        polite__px_errf(err, errlen, "%s: %s.body: body file %s", name, where,
                        why);
        return -1;
      }
      r->body_len = len;
      return 0;
    }
    r->body = malloc(n + 1);
    if (r->body == NULL)
      return -1;
    memcpy(r->body, s, n);
    r->body[n] = '\0';
    r->body_len = n;
    return 0;
  }
  r->body = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
  if (r->body == NULL)
    return -1;
  r->body_len = strlen(r->body);
  return 0;
}

static int parse_response(px_response *r, json_t *o, int default_status,
                          const char *dir, size_t max, const char *name,
                          const char *where, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  if (!json_is_object(o)) {
    polite__px_errf(err, errlen, "%s: %s: expected an object", name, where);
    return -1;
  }
  json_t *sc = json_object_get(o, "statusCode");
  if (sc == NULL) {
    if (default_status == 0) {
      polite__px_errf(err, errlen, "%s: %s.statusCode: missing", name, where);
      return -1;
    }
    r->status = default_status;
  } else if (!json_is_integer(sc) || json_integer_value(sc) < 100 ||
             json_integer_value(sc) > 599) {
    polite__px_errf(err, errlen,
                    "%s: %s.statusCode: expected an integer 100-599", name,
                    where);
    return -1;
  } else {
    r->status = (int)json_integer_value(sc);
  }
  json_t *hs = json_object_get(o, "headers");
  if (hs && !json_is_null(hs)) {
    if (!json_is_array(hs)) {
      polite__px_errf(
          err, errlen,
          "%s: %s.headers: expected an array of {\"name\",\"value\"}", name,
          where);
      return -1;
    }
    size_t n = json_array_size(hs);
    r->headers = calloc(n ? n : 1, sizeof *r->headers);
    if (r->headers == NULL)
      return -1;
    for (size_t i = 0; i < n; i++) {
      json_t *h = json_array_get(hs, i);
      json_t *hn = json_is_object(h) ? json_object_get(h, "name") : NULL;
      json_t *hv = json_is_object(h) ? json_object_get(h, "value") : NULL;
      if (!json_is_string(hn) || !json_is_string(hv) ||
          json_string_length(hn) == 0) {
        polite__px_errf(
            err, errlen,
            "%s: %s.headers[%zu]: expected {\"name\":STRING,\"value\":STRING}",
            name, where, i);
        return -1;
      }
      /* Header injection guard: CR/LF in a name or value would split the
       * response. */
      if (strpbrk(json_string_value(hn), "\r\n: ") ||
          strpbrk(json_string_value(hv), "\r\n")) {
        polite__px_errf(err, errlen,
                        "%s: %s.headers[%zu]: CR, LF or ':' in header", name,
                        where, i);
        return -1;
      }
      r->headers[i].name = xstrdup(json_string_value(hn));
      r->headers[i].value = xstrdup(json_string_value(hv));
      r->nheaders = i + 1;
    }
  }
  return parse_body(r, json_object_get(o, "body"), dir, max, name, where, err,
                    errlen);
}

static int parse_request(px_rule *u, json_t *o, int mocks, const char *name,
                         const char *where, char *err, size_t errlen) {
  if (!json_is_object(o)) {
    polite__px_errf(err, errlen, "%s: %s.request: expected an object", name,
                    where);
    return -1;
  }
  json_t *url = json_object_get(o, "url");
  if (!json_is_string(url) || json_string_length(url) == 0) {
    polite__px_errf(err, errlen,
                    "%s: %s.request.url: expected a non-empty string", name,
                    where);
    return -1;
  }
  u->url = xstrdup(json_string_value(url));
  json_t *m = json_object_get(o, "method");
  if (m && !json_is_null(m)) {
    if (!json_is_string(m) || json_string_length(m) == 0) {
      polite__px_errf(err, errlen, "%s: %s.request.method: expected a string",
                      name, where);
      return -1;
    }
    u->method = xstrdup(json_string_value(m));
  } else if (mocks) {
    u->method = xstrdup("GET"); /* Dev Proxy's default for mocks */
  }
  json_t *bf = json_object_get(o, "bodyFragment");
  if (bf && !json_is_null(bf)) {
    if (!json_is_string(bf)) {
      polite__px_errf(err, errlen,
                      "%s: %s.request.bodyFragment: expected a string", name,
                      where);
      return -1;
    }
    u->body_fragment = xstrdup(json_string_value(bf));
  }
  json_t *nth = json_object_get(o, "nth");
  if (nth && !json_is_null(nth)) {
    if (!json_is_integer(nth) || json_integer_value(nth) < 0 ||
        json_integer_value(nth) > 1000000000) {
      polite__px_errf(err, errlen,
                      "%s: %s.request.nth: expected an integer >= 0", name,
                      where);
      return -1;
    }
    u->nth = (unsigned)json_integer_value(nth);
    /* Dev Proxy loads nth 0 and, counting from 1, never reaches it. */
    u->never = u->nth == 0;
  }
  return 0;
}

int polite__px_rules_parse(px_rules *out, px_rules_kind kind, const char *text,
                           size_t len, const char *name, const char *dir,
                           size_t max, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (root == NULL) {
    polite__px_errf(err, errlen, "%s:%d:%d: %s", name, je.line, je.column,
                    je.text);
    return POLITE_EINVAL;
  }
  int mocks = kind == PX_RULES_MOCKS;
  const char *top = mocks ? "mocks" : "errors";
  json_t *arr = json_is_object(root) ? json_object_get(root, top) : NULL;
  if (!json_is_array(arr)) {
    polite__px_errf(err, errlen, "%s: expected an object with an array \"%s\"",
                    name, top);
    json_decref(root);
    return POLITE_EINVAL;
  }
  size_t n = json_array_size(arr);
  out->rules = calloc(n ? n : 1, sizeof *out->rules);
  if (out->rules == NULL) {
    json_decref(root);
    return POLITE_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(arr, i);
    px_rule *u = &out->rules[i];
    out->n = i + 1;
    char where[64];
    snprintf(where, sizeof where, "%s[%zu]", top, i);
    if (!json_is_object(e)) {
      polite__px_errf(err, errlen, "%s: %s: expected an object", name, where);
      goto fail;
    }
    if (parse_request(u, json_object_get(e, "request"), mocks, name, where, err,
                      errlen) < 0)
      goto fail;
    if (mocks) {
      u->responses = calloc(1, sizeof *u->responses);
      if (u->responses == NULL)
        goto fail;
      u->nresponses = 1;
      char w2[80];
      snprintf(w2, sizeof w2, "%s.response", where);
      json_t *r = json_object_get(e, "response");
      if (r == NULL) {
        /* Dev Proxy allows a mock without a response: 200, empty body. */
        u->responses[0].status = 200;
      } else if (parse_response(&u->responses[0], r, 200, dir, max, name, w2,
                                err, errlen) < 0) {
        goto fail;
      }
    } else {
      json_t *rs = json_object_get(e, "responses");
      if (!json_is_array(rs) || json_array_size(rs) == 0) {
        polite__px_errf(err, errlen,
                        "%s: %s.responses: expected a non-empty array", name,
                        where);
        goto fail;
      }
      size_t m = json_array_size(rs);
      u->responses = calloc(m, sizeof *u->responses);
      if (u->responses == NULL)
        goto fail;
      for (size_t j = 0; j < m; j++) {
        char w2[96];
        snprintf(w2, sizeof w2, "%s.responses[%zu]", where, j);
        u->nresponses = j + 1;
        if (parse_response(&u->responses[j], json_array_get(rs, j), 0, dir, max,
                           name, w2, err, errlen) < 0)
          goto fail;
      }
    }
  }
  json_decref(root);
  return 0;
fail:
  json_decref(root);
  polite__px_rules_free(out);
  return POLITE_EINVAL;
}

int polite__px_rules_load(px_rules *out, px_rules_kind kind, const char *path,
                          size_t max, char *err, size_t errlen) {
  size_t len = 0;
  char *text = NULL;
  if (polite__read_file(path, max, &text, &len) != 0) {
    polite__px_file_error(err, errlen, path, max);
    memset(out, 0, sizeof *out);
    return POLITE_EIO;
  }
  char dir[4096];
  polite__px_dirname(path, dir, sizeof dir, ".");
  int rc =
      polite__px_rules_parse(out, kind, text, len, path, dir, max, err, errlen);
  free(text);
  return rc;
}

static int body_has(const char *body, size_t len, const char *frag) {
  size_t f = strlen(frag);
  if (f == 0)
    return 1;
  if (body == NULL || len < f)
    return 0;
  for (size_t i = 0; i + f <= len; i++)
    if (memcmp(body + i, frag, f) == 0)
      return 1;
  return 0;
}

px_rule *polite__px_rules_match(px_rules *r, const char *method,
                                const char *url, const char *body,
                                size_t body_len) {
  /* The path part of url, for patterns that start with '/'. */
  const char *path = url;
  const char *sep = strstr(url, "://");
  if (sep) {
    path = strchr(sep + 3, '/');
    if (path == NULL)
      path = "/";
  }
  px_rule *found = NULL;
  for (size_t i = 0; i < r->n; i++) {
    px_rule *u = &r->rules[i];
    if (u->method && strcasecmp(u->method, method) != 0)
      continue;
    if (!polite__px_glob_match(u->url, url, path))
      continue;
    if (u->body_fragment && !body_has(body, body_len, u->body_fragment))
      continue;
    /* Every matching rule counts the request, so "nth" means the nth
     * request that this rule's pattern matched, as in Dev Proxy. */
    u->seen++;
    if (found)
      continue;
    if (u->never || (u->nth && u->seen != u->nth))
      continue;
    found = u;
  }
  return found;
}

/* A single-response file (Dev Proxy's RateLimitingPlugin customResponseFile:
 * {"statusCode":..,"headers":[..],"body":..}), kept as one rule matching
 * everything. Status 200 when absent, as in Dev Proxy. */
int polite__px_response_load(px_rules *out, const char *path, size_t max,
                             char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  size_t len = 0;
  char *text = NULL;
  if (polite__read_file(path, max, &text, &len) != 0) {
    polite__px_file_error(err, errlen, path, max);
    return POLITE_EIO;
  }
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  free(text);
  if (root == NULL) {
    polite__px_errf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column,
                    je.text);
    return POLITE_EINVAL;
  }
  char dir[4096];
  polite__px_dirname(path, dir, sizeof dir, ".");
  out->rules = calloc(1, sizeof *out->rules);
  px_rule *u = out->rules;
  if (u == NULL || (u->responses = calloc(1, sizeof *u->responses)) == NULL ||
      (u->url = strdup("*")) == NULL) {
    json_decref(root);
    polite__px_rules_free(out);
    return POLITE_ENOMEM;
  }
  out->n = 1;
  u->nresponses = 1;
  int rc = parse_response(&u->responses[0], root, 200, dir, max, path,
                          "response", err, errlen);
  json_decref(root);
  if (rc < 0) {
    polite__px_rules_free(out);
    return POLITE_EINVAL;
  }
  return 0;
}
