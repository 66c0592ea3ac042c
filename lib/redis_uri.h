/* Redis URIs for libpolite's Redis clients: redis:// and rediss:// (TLS),
 * with optional credentials, a NAME and connection parameters. Internal,
 * not installed. The work queue (lib/queue*.c) parses its URI here, and
 * the budget (lib/budget_redis.c) the part before its own parameters. */
#ifndef POLITE_REDIS_URI_H
#define POLITE_REDIS_URI_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Default per-wait timeout of a connection (?timeout=). */
#define POLITE__REDIS_TIMEOUT_DEFAULT_MS 1000
/* Longest NAME (it becomes the Redis Cluster hash tag {NAME}). */
#define POLITE__REDIS_NAME_MAX 100

/* A parsed URI. Strings are malloc'ed and owned; NULL when absent. */
typedef struct {
  int tls;            /* rediss:// */
  char *host;         /* an IPv6 literal without its brackets */
  int port;           /* 6379 when not given */
  char *user;         /* percent-decoded (the redis URI scheme) */
  char *pass;         /* percent-decoded; never in a message */
  char *name;         /* [A-Za-z0-9._:-]{1,100} */
  char *safe;         /* the URI as given with the password replaced by
                         REDACTED: what every message shows */
  int64_t timeout_ms; /* ?timeout=DURATION: connect, and each wait for the
                         server (no byte for this long), default 1 s */
  char *cacert;       /* ?cacert=FILE (rediss): CA certificates to verify with;
                         default the system's */
  char *cert;         /* ?cert=FILE: client certificate (PEM) */
  char *key;          /* ?key=FILE: its private key (default: in cert) */
  int insecure;       /* ?insecure=1: do not verify the server (off) */
} polite__redis_uri;

/* Parses uri = redis[s]://[[USER]:PASSWORD@]HOST[:PORT]/NAME[?PARAMS],
 * PARAMS being timeout=DURATION, and with rediss:// cacert=FILE, cert=FILE,
 * key=FILE, insecure=1, joined by '&'. Returns 0, POLITE_EINVAL with a
 * message naming the URI (password masked) and the part at fault in err, or
 * POLITE_ENOMEM. On error u is freed (left zeroed). */
int polite__redis_uri_parse(const char *uri, polite__redis_uri *u, char *err,
                            size_t errlen);

/* Formats "WHAT'SAFE': " + fmt into buf (len bytes): the one shape of the
 * messages about a Redis URI (what names the client, "queue " or ""; safe
 * is a masked URI, cut to 200 bytes). */
void polite__redis_vmsg(char *buf, size_t len, const char *what,
                        const char *safe, const char *fmt, va_list ap);

/* Frees the strings of u (u itself is the caller's); zeroes it. */
void polite__redis_uri_free(polite__redis_uri *u);

#endif
