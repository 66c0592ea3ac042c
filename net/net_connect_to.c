/* polite net: --connect-to HOST:PORT:HOST2:PORT2 (curl's syntax): where a
 * connection to a host really goes, for the proxy and the gateway alike. */
#include "net_upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
  char host[256];    /* "" matches any host */
  int port;          /* 0 matches any port */
  char to_host[256]; /* "" keeps the host */
  int to_port;       /* 0 keeps the port */
} rule;

struct net_connect_to {
  rule *v;
  size_t n;
};

/* A host part of the spec at *p: a bracketed IPv6 literal ("[::1]",
 * brackets dropped) or text up to the next ':', which must follow (a port
 * part always comes after a host). Moves *p past the part and its ':'. -1
 * when malformed or too long. */
static int take_host(const char **p, char *out, size_t size) {
  const char *s = *p;
  const char *e;
  if (*s == '[') {
    const char *close = strchr(s, ']');
    if (close == NULL || close[1] != ':')
      return -1;
    s++;
    e = close;
    *p = close + 2;
  } else {
    e = strchr(s, ':');
    if (e == NULL)
      return -1;
    *p = e + 1;
  }
  size_t n = (size_t)(e - s);
  if (n >= size)
    return -1;
  memcpy(out, s, n);
  out[n] = '\0';
  return 0;
}

/* A port part ("" is 0: any, or keep). -1 when not 1..65535. */
static int take_port(const char **p, int last, int *out) {
  const char *s = *p;
  const char *e = last ? s + strlen(s) : strchr(s, ':');
  if (e == NULL)
    return -1;
  *out = 0;
  for (const char *q = s; q < e; q++) {
    if (*q < '0' || *q > '9' || *out > 65535)
      return -1;
    *out = *out * 10 + (*q - '0');
  }
  if (e > s && (*out < 1 || *out > 65535))
    return -1;
  *p = last ? e : e + 1;
  return 0;
}

int polite__net_connect_to_add(net_connect_to **list, const char *spec,
                               char *err, size_t errlen) {
  rule r;
  memset(&r, 0, sizeof r);
  const char *p = spec;
  if (take_host(&p, r.host, sizeof r.host) < 0 ||
      take_port(&p, 0, &r.port) < 0 ||
      take_host(&p, r.to_host, sizeof r.to_host) < 0 ||
      take_port(&p, 1, &r.to_port) < 0 || *p != '\0') {
    snprintf(err, errlen,
             "expected HOST:PORT:HOST2:PORT2 (parts may be empty, IPv6 in "
             "brackets), got '%.300s'",
             spec);
    return -1;
  }
  if (*list == NULL && (*list = calloc(1, sizeof **list)) == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  net_connect_to *l = *list;
  if (l->n >= NET_CONNECT_TO_MAX) {
    snprintf(err, errlen, "more than %d rules", NET_CONNECT_TO_MAX);
    return -1;
  }
  rule *grown = realloc(l->v, (l->n + 1) * sizeof *grown);
  if (grown == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  l->v = grown;
  l->v[l->n++] = r;
  return 0;
}

int polite__net_connect_to_map(const net_connect_to *list, const char *host,
                               int port, char *dial_host, size_t dlen,
                               int *dial_port) {
  char h[256];
  size_t hl = strlen(host);
  if (hl > 2 && host[0] == '[' && host[hl - 1] == ']')
    snprintf(h, sizeof h, "%.*s", (int)(hl - 2), host + 1);
  else
    snprintf(h, sizeof h, "%s", host);
  snprintf(dial_host, dlen, "%s", h);
  *dial_port = port;
  for (size_t i = 0; list && i < list->n; i++) {
    const rule *r = &list->v[i];
    if ((r->host[0] && strcasecmp(r->host, h) != 0) ||
        (r->port && r->port != port))
      continue;
    if (r->to_host[0])
      snprintf(dial_host, dlen, "%s", r->to_host);
    if (r->to_port)
      *dial_port = r->to_port;
    return 1;
  }
  return 0;
}

void polite__net_connect_to_free(net_connect_to *list) {
  if (list == NULL)
    return;
  free(list->v);
  free(list);
}

int polite__net_connect_to_add_all(net_connect_to **list,
                                   const char *const *specs, size_t n,
                                   const char *who) {
  for (size_t i = 0; i < n; i++) {
    char err[512];
    if (polite__net_connect_to_add(list, specs[i], err, sizeof err) < 0) {
      fprintf(stderr, "%s: --connect-to: %s\n", who, err);
      return -1;
    }
  }
  return 0;
}
