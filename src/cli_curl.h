/* curl's command-line habits that `polite run` and `polite diagnose` share:
 * the TLS and proxy rows, the CA environment variables, the -H check, and
 * curl's options polite spells differently (docs/cli.md). */
#ifndef POLITE_CLI_CURL_H
#define POLITE_CLI_CURL_H

#include "cli.h"

#include <polite/transport.h>

/* curl options the curl-like commands do not have, each with polite's
 * option that does the job or why none is needed (cli_command.foreign). */
extern const cli_foreign cli_curl_options[];

/* The CA environment variables, read as the curl tool reads them and only
 * when neither --cacert nor --capath was given: CURL_CA_BUNDLE is the
 * bundle; without it SSL_CERT_DIR is the directory and SSL_CERT_FILE the
 * bundle (both may be set). Empty values count as unset. *cacert and
 * *capath point into the environment afterwards. Returns 0, or
 * CLI_EXIT_USAGE after a message naming the variable when what it names
 * cannot be read. */
int cli_ca_env(const char *cmd, polite_transport_options *tr);

/* Checks that a -H value has a name before a colon. Returns 0, or -1 with a
 * message in err that quotes nothing of it ("Bearer sk-..." is all
 * secret). */
int cli_header_has_name(const char *h, char *err, size_t errlen);

/* The TLS rows (curl's -k, --cacert, --capath, --cert, --key) for options
 * struct T: TR names its polite_transport_options member, K its int
 * "insecure" member, G the help group they start. One definition, so the
 * two commands cannot drift apart. (clang-format would put every field of
 * these rows on a line of its own.) */
/* TR is a member designator for offsetof ("tr", "rq.tr"): it cannot be
 * put in parentheses. */
// NOLINTBEGIN(bugprone-macro-parentheses)
/* clang-format off */
#define CLI_ROWS_TLS(T, TR, K, G)                                              \
  {"insecure", 'k', CLI_FLAG, NULL, 1, 0, NULL, "off", NULL,                   \
   "do not verify TLS certificates (verification is on by default)", G,        \
   CLI_AT(T, K), NULL, NULL, 0},                                               \
  {"cacert", 0, CLI_STRING, "FILE", 0, 0, NULL,                                \
   "$CURL_CA_BUNDLE, else $SSL_CERT_FILE, else libcurl's bundle", NULL,        \
   "CA certificates (PEM) to verify servers with", NULL,                       \
   CLI_AT(T, TR.cacert), NULL, NULL, 0},                                       \
  {"capath", 0, CLI_STRING, "DIR", 0, 0, NULL,                                 \
   "$SSL_CERT_DIR (without $CURL_CA_BUNDLE), else libcurl's", NULL,            \
   "directory of hashed CA certificates (c_rehash)", NULL,                     \
   CLI_AT(T, TR.capath), NULL, NULL, 0},                                       \
  {"cert", 0, CLI_STRING, "FILE", 0, 0, NULL, NULL, NULL,                      \
   "client certificate (PEM), for servers that ask for one", NULL,             \
   CLI_AT(T, TR.cert), NULL, NULL, 0},                                         \
  {"key", 0, CLI_STRING, "FILE", 0, 0, NULL, NULL, NULL,                       \
   "the client certificate's private key (PEM; default: in --cert)", NULL,     \
   CLI_AT(T, TR.key), NULL, NULL, 0}

/* The proxy rows (curl's -x/--proxy and --noproxy), as CLI_ROWS_TLS. */
#define CLI_ROWS_PROXY(T, TR, G)                                               \
  {"proxy", 'x', CLI_STRING, "URL", 0, 0, NULL, "$HTTPS_PROXY, $http_proxy",   \
   NULL, "proxy for every request (e.g. polite proxy --mode forward); '' "     \
   "turns the proxy variables off", G, CLI_AT(T, TR.proxy), NULL, NULL, 0},    \
  {"noproxy", 0, CLI_STRING, "LIST", 0, 0, NULL, "$NO_PROXY", NULL,            \
   "hosts reached without the proxy, comma-separated ('*': all)", NULL,        \
   CLI_AT(T, TR.noproxy), NULL, NULL, 0}
/* clang-format on */
// NOLINTEND(bugprone-macro-parentheses)

#endif
