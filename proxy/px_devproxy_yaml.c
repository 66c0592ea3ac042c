/* polite proxy: YAML (Dev Proxy's devproxyrc.yaml) read with libyaml into
 * the JSON values the JSON config is read into. */
#include "px.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

/* Nesting deeper than this is refused (a hostile file cannot exhaust the
 * stack), and so is a document that expands to more values than this
 * (aliases can make a small file into a huge one). */
#define YAML_DEPTH_MAX 64
#define YAML_NODES_MAX 200000

/* A plain scalar typed as YAML 1.2's core schema does: null, booleans,
 * integers, floats; anything else (and every quoted scalar) a string. */
static json_t *scalar(const yaml_node_t *n) {
  const char *s = (const char *)n->data.scalar.value;
  size_t len = n->data.scalar.length;
  if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return json_stringn(s, len);
  if (len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
      strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0)
    return json_null();
  if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
    return json_true();
  if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
    return json_false();
  char *end;
  errno = 0;
  long long i = strtoll(s, &end, 10);
  if (*end == '\0' && errno == 0 &&
      (s[0] == '-' || s[0] == '+' || (s[0] >= '0' && s[0] <= '9')))
    return json_integer(i);
  double d = strtod(s, &end);
  if (*end == '\0' && errno == 0 && strspn(s, "+-0123456789.eE") == len)
    return json_real(d);
  return json_stringn(s, len);
}

typedef struct {
  yaml_document_t *doc;
  const char *name;
  char *err;
  size_t errlen;
  size_t nodes;
} yaml_walk;

static json_t *node_to_json(yaml_walk *w, yaml_node_t *n, int depth) {
  yaml_document_t *doc = w->doc;
  const char *name = w->name;
  char *err = w->err;
  size_t errlen = w->errlen;
  if (n == NULL)
    return json_null();
  if (++w->nodes > YAML_NODES_MAX) {
    snprintf(err, errlen, "%s: more than %d values", name, YAML_NODES_MAX);
    return NULL;
  }
  if (depth > YAML_DEPTH_MAX) {
    snprintf(err, errlen, "%s:%zu: nested more than %d levels", name,
             n->start_mark.line + 1, YAML_DEPTH_MAX);
    return NULL;
  }
  switch (n->type) {
  case YAML_SCALAR_NODE: return scalar(n);
  case YAML_SEQUENCE_NODE: {
    json_t *a = json_array();
    for (yaml_node_item_t *it = n->data.sequence.items.start;
         it < n->data.sequence.items.top; it++) {
      json_t *v = node_to_json(w, yaml_document_get_node(doc, *it), depth + 1);
      if (v == NULL) {
        json_decref(a);
        return NULL;
      }
      json_array_append_new(a, v);
    }
    return a;
  }
  case YAML_MAPPING_NODE: {
    json_t *o = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
      yaml_node_t *k = yaml_document_get_node(doc, p->key);
      if (k == NULL || k->type != YAML_SCALAR_NODE) {
        snprintf(err, errlen, "%s:%zu: a mapping key must be a scalar", name,
                 k ? k->start_mark.line + 1 : n->start_mark.line + 1);
        json_decref(o);
        return NULL;
      }
      const char *key = (const char *)k->data.scalar.value;
      if (json_object_get(o, key)) {
        snprintf(err, errlen, "%s:%zu: duplicate key '%s'", name,
                 k->start_mark.line + 1, key);
        json_decref(o);
        return NULL;
      }
      json_t *v =
          node_to_json(w, yaml_document_get_node(doc, p->value), depth + 1);
      if (v == NULL) {
        json_decref(o);
        return NULL;
      }
      json_object_set_new(o, key, v);
    }
    return o;
  }
  case YAML_NO_NODE:
  default: return json_null();
  }
}

json_t *polite__px_yaml_to_json(const char *text, size_t len, const char *name,
                                char *err, size_t errlen) {
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser)) {
    snprintf(err, errlen, "%s: out of memory", name);
    return NULL;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    snprintf(err, errlen, "%s:%zu:%zu: %s", name, parser.problem_mark.line + 1,
             parser.problem_mark.column + 1,
             parser.problem ? parser.problem : "invalid YAML");
    yaml_parser_delete(&parser);
    return NULL;
  }
  yaml_walk w = {&doc, name, err, errlen, 0};
  json_t *root = node_to_json(&w, yaml_document_get_root_node(&doc), 0);
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return root;
}
