/* polite net: TLS: the CA's server contexts for intercepted hosts, and the
 * client context and error words the upstream client uses. */
#ifndef POLITE_NET_TLS_H
#define POLITE_NET_TLS_H

#include "net_ca.h"

#include <openssl/ssl.h>
#include <stddef.h>

/* A server SSL_CTX presenting a leaf certificate for host (DNS name or IP
 * literal in the SAN), signed by the CA, made on first use and cached
 * (owned by ca; at most NET_CA_CACHE_MAX hosts, the oldest is dropped: an
 * SSL made from it keeps its own reference). NULL with err on failure
 * (e.g. a host name with characters no certificate may name). TLS 1.2+,
 * ALPN http/1.1. A client whose SNI names another host gets that host's
 * certificate instead (so ca must outlive the SSLs made from the context).
 * Use: SSL_new(ctx), then bufferevent_openssl_filter_new(...,
 * BUFFEREVENT_SSL_ACCEPTING, ...) over the CONNECT tunnel. */
SSL_CTX *polite__net_ca_ctx_for(net_ca *ca, const char *host, char *err,
                                size_t errlen);
#define NET_CA_CACHE_MAX 1024

/* ---- Client side (upstream connections) --------------------------------- */

/* A client SSL_CTX: TLS 1.2 or later, ALPN http/1.1, verification against
 * cafile (NULL: the system store) unless insecure. NULL with err. */
SSL_CTX *polite__net_tls_client_ctx(const char *cafile, int insecure, char *err,
                                    size_t errlen);

/* Describes why a client handshake on ssl failed (ret: SSL_connect's return
 * value) into out: the verify reason ("certificate verify failed:
 * self-signed certificate", "... Hostname mismatch"), else OpenSSL's error
 * queue, else the system error. Clears the error queue. */
void polite__net_tls_describe(SSL *ssl, int ret, char *out, size_t outlen);

#endif
