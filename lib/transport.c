/* The curl command-line habits `polite run` offers (--cacert, --proxy, -u,
 * --compressed, --http2, ...) as libcurl options on each transfer. */
#include <polite/transport.h>

#include <curl/curl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

void polite_transport_apply(void *easy, const polite_transport_options *t) {
  CURL *e = easy;
  if (t == NULL)
    return;
  /* Each setter is given only what the user set, so libcurl's own
   * defaults (its CA bundle, the proxy variables) stay in force. */
  static const struct {
    CURLoption opt;
    size_t off;
  } strings[] = {
      {CURLOPT_CAINFO, offsetof(polite_transport_options, cacert)},
      {CURLOPT_CAPATH, offsetof(polite_transport_options, capath)},
      {CURLOPT_SSLCERT, offsetof(polite_transport_options, cert)},
      {CURLOPT_SSLKEY, offsetof(polite_transport_options, key)},
      {CURLOPT_PROXY, offsetof(polite_transport_options, proxy)},
      {CURLOPT_NOPROXY, offsetof(polite_transport_options, noproxy)},
      {CURLOPT_USERPWD, offsetof(polite_transport_options, userpwd)},
  };
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
    const char *v = *(const char *const *)((const char *)t + strings[i].off);
    if (v != NULL)
      curl_easy_setopt(e, strings[i].opt, v);
  }
  if (t->userpwd != NULL)
    curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
  /* "" asks for every encoding this libcurl can decode; what reaches the
   * write callback (and max_body) is the decoded body. */
  if (t->compressed)
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  if (t->http_version == POLITE_HTTP_1_1)
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  else if (t->http_version == POLITE_HTTP_2)
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_0);
}

/* 0 when path can be read and is (dir) a directory or (!dir) not one. */
static int check_path(const char *opt, const char *path, int dir, char *err,
                      size_t errlen) {
  struct stat st;
  if (path == NULL)
    return 0;
  if (stat(path, &st) != 0 || access(path, R_OK) != 0) {
    snprintf(err, errlen, "%s: cannot read '%s'", opt, path);
    return POLITE_EINVAL;
  }
  if (dir != !!S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "%s: '%s' is %sa directory", opt, path,
             dir ? "not " : "");
    return POLITE_EINVAL;
  }
  return 0;
}

int polite_transport_check(const polite_transport_options *t, char *err,
                           size_t errlen) {
  if (t == NULL)
    return 0;
  int rc = check_path("--cacert", t->cacert, 0, err, errlen);
  if (rc == 0)
    rc = check_path("--capath", t->capath, 1, err, errlen);
  if (rc == 0)
    rc = check_path("--cert", t->cert, 0, err, errlen);
  if (rc == 0)
    rc = check_path("--key", t->key, 0, err, errlen);
  if (rc != 0)
    return rc;
  if (t->key && !t->cert) {
    snprintf(err, errlen, "--key needs --cert (the certificate it belongs to)");
    return POLITE_EINVAL;
  }
  const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
  if (t->http_version == POLITE_HTTP_2 && !(v->features & CURL_VERSION_HTTP2)) {
    snprintf(err, errlen, "--http2: this libcurl (%s) has no HTTP/2 support",
             v->version);
    return POLITE_EINVAL;
  }
  if (t->compressed && !(v->features & CURL_VERSION_LIBZ)) {
    snprintf(err, errlen, "--compressed: this libcurl (%s) cannot decompress",
             v->version);
    return POLITE_EINVAL;
  }
  return 0;
}

polite_failure polite_transport_failure(int curl_code) {
  /* TLS failures the next attempt would repeat: the peer's certificate, or
   * the local files and settings TLS is set up with. A handshake that
   * breaks off (35 CURLE_SSL_CONNECT_ERROR) is not here: a reset looks the
   * same as a protocol mismatch, and a reset may pass. Every other result
   * (timeouts, resets, refused connections, DNS) is transient. */
  static const int tls[] = {
    CURLE_SSL_ENGINE_NOTFOUND,      /* 53 */
    CURLE_SSL_ENGINE_SETFAILED,     /* 54 */
    CURLE_SSL_CERTPROBLEM,          /* 58: the client certificate */
    CURLE_SSL_CIPHER,               /* 59 */
    CURLE_PEER_FAILED_VERIFICATION, /* 60: chain or name */
    CURLE_SSL_ENGINE_INITFAILED,    /* 66 */
    CURLE_SSL_CACERT_BADFILE,       /* 77 */
    CURLE_SSL_CRL_BADFILE,          /* 82 */
    CURLE_SSL_ISSUER_ERROR,         /* 83 */
    CURLE_SSL_PINNEDPUBKEYNOTMATCH, /* 90 */
    CURLE_SSL_INVALIDCERTSTATUS,    /* 91: OCSP says revoked */
#if LIBCURL_VERSION_NUM >= 0x074d00
    CURLE_SSL_CLIENTCERT, /* 98: the server wants one (7.77.0) */
#endif
  };
  for (size_t i = 0; i < sizeof tls / sizeof tls[0]; i++)
    if (tls[i] == curl_code)
      return POLITE_FAILURE_TLS;
  return POLITE_FAILURE_TRANSIENT;
}
