/* polite transport: the libcurl settings `polite run` takes from curl's
 * command line (CA bundle, client certificate, proxy, credentials, user
 * agent, compression, HTTP version) for every transfer of a batch. */
#ifndef POLITE_TRANSPORT_H
#define POLITE_TRANSPORT_H

#include <polite/core.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  POLITE_HTTP_ANY = 0, /* libcurl's default: HTTP/2 over TLS when offered */
  POLITE_HTTP_1_1,     /* --http1.1 */
  POLITE_HTTP_2        /* --http2: HTTP/2 (over TLS by ALPN, else h2c) */
} polite_http_version;

/* Zero (all NULL) means libcurl's defaults, which read the proxy variables
 * (http_proxy, HTTPS_PROXY, ALL_PROXY, NO_PROXY) themselves. Strings are
 * borrowed for the life of the batch. TLS verification is governed by
 * polite_batch_options.insecure, never here. */
typedef struct {
  const char *cacert;  /* CA bundle file (CURLOPT_CAINFO) */
  const char *capath;  /* CA directory, hashed (CURLOPT_CAPATH) */
  const char *cert;    /* client certificate, PEM (CURLOPT_SSLCERT) */
  const char *key;     /* its private key, PEM (CURLOPT_SSLKEY) */
  const char *proxy;   /* proxy URL (CURLOPT_PROXY); "" disables proxies */
  const char *noproxy; /* hosts not to proxy, comma-separated, "*" all */
  const char *userpwd; /* "user:password" for Basic authentication: a
                          secret, never logged or quoted */
  int compressed;      /* ask for gzip/deflate/br/zstd and decompress; the
                          decompressed size counts against max_body */
  polite_http_version http_version;
} polite_transport_options;

/* Checks t before a run: the files exist and can be read, the directory is
 * one, --http2 is supported by this libcurl. Returns 0, or POLITE_EINVAL
 * with a message naming the option and the file in err (never the
 * credentials). t may be NULL. */
POLITE_EXTERN int polite_transport_check(const polite_transport_options *t,
                                         char *err, size_t errlen);

/* Applies t to one easy handle (a CURL *; CURL is void in libcurl's API,
 * so this header does not need curl.h): what the batch engine does for
 * each transfer, for a program (polite diagnose) that makes its own. t may
 * be NULL (nothing to apply). */
POLITE_EXTERN void polite_transport_apply(void *easy,
                                          const polite_transport_options *t);

/* What libcurl result curl_code (a CURLcode; CURLE_OK included) means for
 * another attempt: POLITE_FAILURE_TLS for a TLS failure that every attempt
 * would repeat (60 CURLE_PEER_FAILED_VERIFICATION, 77
 * CURLE_SSL_CACERT_BADFILE, 58 CURLE_SSL_CERTPROBLEM, ...), else
 * POLITE_FAILURE_TRANSIENT. One table, which docs/decisions.md shows with
 * the reasons. */
POLITE_EXTERN polite_failure polite_transport_failure(int curl_code);

#ifdef __cplusplus
}
#endif

#endif
