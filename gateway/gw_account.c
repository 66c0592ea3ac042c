/* polite gateway: the account of a request, its canonical authority. One
 * host is one account (--budget-scope host, the gateway's default)
 * however a client spells it: "API.example.com:443" and "api.example.com"
 * over https share one budget, one pause and one learned rate. A parser
 * of what clients send, so it bounds everything and refuses what it does
 * not understand (tests/fuzz/fuzz_gateway_policy.c). */
#include "gateway.h"

#include "http_syntax.h"

#include <stdio.h>
#include <string.h>

/* Longest host name (RFC 1035). */
#define HOST_MAX 253

static int reg_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

static int ipv6_char(char c) {
  return polite__hexval(c) >= 0 || c == ':' || c == '.';
}

/* Splits a[0..n) into the host and the port text (after the colon that
 * ends the host; none: plen 0). Returns 0, or -1 with a message. */
static int split(const char *a, size_t n, const char **host, size_t *hlen,
                 const char **port, size_t *plen, char *err, size_t errlen) {
  *port = NULL;
  *plen = 0;
  if (n > 0 && a[0] == '[') {
    const char *close = memchr(a, ']', n);
    if (close == NULL) {
      snprintf(err, errlen, "an IPv6 address without its closing ']'");
      return -1;
    }
    *host = a;
    *hlen = (size_t)(close - a) + 1;
    for (size_t i = 1; i + 1 < *hlen; i++)
      if (!ipv6_char(a[i])) {
        snprintf(err, errlen, "'%c' in an IPv6 address", a[i]);
        return -1;
      }
    if (*hlen < 4) {
      snprintf(err, errlen, "an empty IPv6 address");
      return -1;
    }
  } else {
    const char *colon = memchr(a, ':', n);
    *host = a;
    *hlen = colon ? (size_t)(colon - a) : n;
    for (size_t i = 0; i < *hlen; i++)
      if (!reg_name_char(a[i])) {
        snprintf(err, errlen, "'%c' in the host name", a[i]);
        return -1;
      }
  }
  if (*hlen == 0) {
    snprintf(err, errlen, "no host");
    return -1;
  }
  size_t max = a[0] == '[' ? HOST_MAX + 2 : HOST_MAX; /* brackets */
  if (*hlen > max) {
    snprintf(err, errlen, "a host name of %zu characters (at most %d)", *hlen,
             HOST_MAX);
    return -1;
  }
  if (*hlen < n) {
    if (a[*hlen] != ':') {
      snprintf(err, errlen, "'%c' after the IPv6 address", a[*hlen]);
      return -1;
    }
    *port = a + *hlen + 1;
    *plen = n - *hlen - 1;
  }
  return 0;
}

/* The port p[0..n) as a number 1..65535, 0 for none (an empty port, which
 * RFC 3986 allows), or -1 with a message. */
static long port_of(const char *p, size_t n, char *err, size_t errlen) {
  long v = 0;
  if (n > 5) {
    snprintf(err, errlen, "a port of %zu digits", n);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') {
      snprintf(err, errlen, "'%c' in the port", p[i]);
      return -1;
    }
    v = v * 10 + (p[i] - '0');
  }
  if (n > 0 && (v < 1 || v > 65535)) {
    snprintf(err, errlen, "port %ld is not in 1..65535", v);
    return -1;
  }
  return v;
}

int polite__gw_authority(const char *scheme, const char *authority, size_t len,
                         char *out, size_t outlen, char *err, size_t errlen) {
  char dummy[8];
  if (err == NULL || errlen == 0) {
    err = dummy;
    errlen = sizeof dummy;
  }
  err[0] = '\0';
  long dflt = scheme && strcmp(scheme, "http") == 0    ? 80
              : scheme && strcmp(scheme, "https") == 0 ? 443
                                                       : -1;
  if (dflt < 0) {
    snprintf(err, errlen, "scheme '%s' is not http or https",
             scheme ? scheme : "");
    return POLITE_EINVAL;
  }
  if (authority == NULL || out == NULL || outlen < GW_ACCOUNT_MAX) {
    snprintf(err, errlen, "no authority");
    return POLITE_EINVAL;
  }
  if (memchr(authority, '@', len)) {
    /* user:password@ would put a credential in the account's name. */
    snprintf(err, errlen, "credentials (userinfo@) in the authority");
    return POLITE_EINVAL;
  }
  const char *host, *port;
  size_t hlen, plen;
  if (split(authority, len, &host, &hlen, &port, &plen, err, errlen) != 0)
    return POLITE_EINVAL;
  long p = port_of(port, plen, err, errlen);
  if (p < 0)
    return POLITE_EINVAL;
  for (size_t i = 0; i < hlen; i++)
    out[i] = polite__lower(host[i]);
  out[hlen] = '\0';
  if (p != 0 && p != dflt)
    snprintf(out + hlen, outlen - hlen, ":%ld", p);
  return 0;
}
