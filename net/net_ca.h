/* polite net: the local root CA that signs certificates for intercepted
 * hosts: made on first use, shown, renewed, issuing a leaf for a test
 * server. Free of OpenSSL types, so that the command can use it through
 * proxy/proxy.h. */
#ifndef POLITE_NET_CA_H
#define POLITE_NET_CA_H

#include <stddef.h>

/* The CA: its certificate and key (from dir/ca.pem and dir/ca.key), one
 * key shared by every leaf certificate, and the per-host server contexts
 * made so far. One per process; not thread-safe (the proxy has one loop). */
typedef struct net_ca net_ca;

/* Opens the local root CA in dir (NULL: the default, outside any project
 * directory: $POLITE_CA_DIR, else $XDG_DATA_HOME/polite/ca, else
 * ~/.local/share/polite/ca), creating it when create != 0 and it does not
 * exist: the key file mode 0600, the directory 0700, never group/world
 * readable. A key file that group or others can read is refused. Returns 0
 * with *out (free with polite__net_ca_free), or -1 with a message in err. */
int polite__net_ca_open(const char *dir, int create, net_ca **out, char *err,
                        size_t errlen);

/* Replaces the CA in dir (NULL: the default) with a new one (new key, new
 * certificate); certificates signed by the old one stop being trusted by
 * clients that trust only the new one. Returns 0 or -1 with err. */
int polite__net_ca_renew(const char *dir, char *err, size_t errlen);

/* Writes a leaf certificate for host (PEM, the leaf then the CA) to
 * cert_path and its key to key_path (mode 0600), for a test server of the
 * user's own. Returns 0 or -1 with err. */
int polite__net_ca_issue(net_ca *ca, const char *host, const char *cert_path,
                         const char *key_path, char *err, size_t errlen);

/* Where the CA certificate is (dir/ca.pem) and its directory. */
const char *polite__net_ca_cert_path(const net_ca *ca);
const char *polite__net_ca_dir(const net_ca *ca);
/* The certificate's SHA-256 fingerprint as "AB:CD:..." (out >= 96 bytes),
 * its subject (one line), and its expiry as "YYYY-MM-DD". */
void polite__net_ca_fingerprint(const net_ca *ca, char *out, size_t outlen);
void polite__net_ca_subject(const net_ca *ca, char *out, size_t outlen);
void polite__net_ca_not_after(const net_ca *ca, char *out, size_t outlen);
void polite__net_ca_free(net_ca *ca);

/* The default CA directory (see polite__net_ca_open) into out. Returns 0, or
 * -1 with err when neither $XDG_DATA_HOME nor $HOME is set. */
int polite__net_ca_default_dir(char *out, size_t outlen, char *err,
                               size_t errlen);

#endif
