/* libFuzzer target for --connect-to (net/net_connect_to.c): no crash, no
 * undefined behaviour; an accepted rule maps a connection to a host and a
 * port in range, and a connection it does not match keeps its host. */
#include "net_upstream.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s == NULL)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  net_connect_to *l = NULL;
  char err[512] = "";
  if (polite__net_connect_to_add(&l, s, err, sizeof err) == 0) {
    static const char *const hosts[] = {"api.openai.com", "[::1]", "::1", "",
                                        "x"};
    for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
      char host[256];
      int port = -1;
      int m = polite__net_connect_to_map(l, hosts[i], 443, host, sizeof host,
                                         &port);
      if (port < 1 || port > 65535 || strlen(host) >= sizeof host)
        abort();
      if (!m && port != 443)
        abort();
    }
  } else if (err[0] == '\0') {
    abort(); /* a refusal always says why */
  }
  polite__net_connect_to_free(l);
  free(s);
  return 0;
}
