/* polite proxy: TLS client context for upstream connections and the words
 * a 502 uses to say why a handshake failed. */
#include "net_tls.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

SSL_CTX *polite__net_tls_client_ctx(const char *cafile, int insecure, char *err,
                                    size_t errlen) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == NULL) {
    snprintf(err, errlen, "cannot make a TLS client context");
    return NULL;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  /* An upstream that closes without close_notify is read like a TCP close:
   * HTTP framing still tells a complete body from a cut one. */
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  static const unsigned char h11[] = {8,   'h', 't', 't', 'p',
                                      '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx, h11, sizeof h11);
  if (insecure) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    return ctx;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  int ok = cafile ? SSL_CTX_load_verify_locations(ctx, cafile, NULL)
                  : SSL_CTX_set_default_verify_paths(ctx);
  if (ok != 1) {
    unsigned long e = ERR_get_error();
    char ossl[256] = "";
    if (e)
      ERR_error_string_n(e, ossl, sizeof ossl);
    ERR_clear_error();
    if (cafile)
      snprintf(err, errlen, "--upstream-cacert %s: cannot load: %s", cafile,
               ossl[0] ? ossl : "no certificate in it");
    else
      snprintf(err, errlen, "cannot load the system CA store: %s", ossl);
    SSL_CTX_free(ctx);
    return NULL;
  }
  return ctx;
}

void polite__net_tls_describe(SSL *ssl, int ret, char *out, size_t outlen) {
  long vr = SSL_get_verify_result(ssl);
  int saved = errno;
  unsigned long e = ERR_peek_error();
  if (vr != X509_V_OK) {
    const char *why = X509_verify_cert_error_string(vr);
    if (vr == X509_V_ERR_HOSTNAME_MISMATCH ||
        vr == X509_V_ERR_IP_ADDRESS_MISMATCH)
      snprintf(out, outlen,
               "certificate name mismatch: the upstream's certificate does "
               "not name the host (%s)",
               why);
    else
      snprintf(out, outlen, "certificate verify failed: %s", why);
  } else if (e != 0) {
    char ossl[256];
    ERR_error_string_n(e, ossl, sizeof ossl);
    snprintf(out, outlen, "TLS handshake failed: %s", ossl);
  } else if (SSL_get_error(ssl, ret) == SSL_ERROR_SYSCALL && saved != 0) {
    snprintf(out, outlen, "TLS handshake failed: %s", strerror(saved));
  } else {
    snprintf(out, outlen,
             "TLS handshake failed: the upstream closed the connection");
  }
  ERR_clear_error();
}
