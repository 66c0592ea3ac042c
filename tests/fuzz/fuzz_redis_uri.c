/* libFuzzer target: Redis URI parsing (lib/redis_uri.c). A URI that parses
 * has a host, a NAME that is a valid Cluster hash tag and a port in range;
 * its masked copy never holds the password. A refused one leaves nothing
 * allocated. */
#include "redis_uri.h"

#include <polite/core.h>

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *uri = malloc(size + 1);
  if (uri == NULL)
    return 0;
  memcpy(uri, data, size);
  uri[size] = '\0';
  polite__redis_uri u;
  char err[300];
  int rc = polite__redis_uri_parse(uri, &u, err, sizeof err);
  if (rc == 0) {
    if (u.host == NULL || u.host[0] == '\0' || u.name == NULL ||
        u.safe == NULL || u.port < 1 || u.port > 65535 || u.timeout_ms < 1)
      abort();
    for (const char *c = u.name; *c; c++)
      if (!isalnum((unsigned char)*c) && !strchr("._:-", *c))
        abort();
    if (strlen(u.name) > POLITE__REDIS_NAME_MAX)
      abort();
    /* The password as written sits between the userinfo's first ':' and
     * its '@': the masked copy keeps what comes before it (the scheme and
     * the user name) and puts exactly REDACTED where it was. What follows
     * the '@' (host, NAME) is not secret and is kept even when it holds
     * the same text: the fuzzer found a NAME that repeats the password. */
    const char *at = strrchr(uri, '@'), *colon = strchr(uri + 8, ':');
    if (u.pass && at && colon && colon < at) {
      size_t head = (size_t)(colon + 1 - uri);
      if (strncmp(u.safe, uri, head) != 0)
        abort();
      if (strncmp(u.safe + head, "REDACTED@", 9) != 0)
        abort();
    }
    if (u.key && !u.cert)
      abort();
    if (!u.tls && (u.cacert || u.cert || u.insecure))
      abort();
    polite__redis_uri_free(&u);
  } else if (rc != POLITE_EINVAL && rc != POLITE_ENOMEM) {
    abort();
  } else if (u.host || u.safe || u.pass) {
    abort();
  }
  free(uri);
  return 0;
}
