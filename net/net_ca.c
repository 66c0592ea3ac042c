/* polite proxy: the local root CA (created on first use, kept outside the
 * project) and the leaf certificates it signs for intercepted hosts. */
#define _GNU_SOURCE
#include "net_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Root: ten years (nothing limits a private root's life; renew replaces
 * it). Leaves: 397 days from notBefore to notAfter (Apple's and Chrome's
 * limit is 398), backdated a day so that a client whose clock is a little
 * behind still accepts a certificate made a second ago. */
#define ROOT_DAYS 3650
#define LEAF_DAYS 397
#define BACKDATE_S (24 * 3600)

typedef struct ca_entry {
  char host[256];
  SSL_CTX *ctx;
  struct ca_entry *next; /* newest first */
} ca_entry;

struct net_ca {
  char dir[1024];
  char cert_path[1100];
  X509 *cert;
  EVP_PKEY *key;
  EVP_PKEY *leaf_key; /* one key for every leaf, made at open */
  ca_entry *cache;
  size_t ncache;
};

static void set_err(char *err, size_t errlen, const char *what,
                    const char *path) {
  unsigned long e = ERR_get_error();
  char ossl[256] = "";
  if (e)
    ERR_error_string_n(e, ossl, sizeof ossl);
  ERR_clear_error();
  snprintf(err, errlen, "%s%s%s%s%s", what, path ? " " : "", path ? path : "",
           ossl[0] ? ": " : (errno && path ? ": " : ""),
           ossl[0] ? ossl : (errno && path ? strerror(errno) : ""));
}

int polite__net_ca_default_dir(char *out, size_t outlen, char *err,
                               size_t errlen) {
  const char *env = getenv("POLITE_CA_DIR");
  if (env && env[0]) {
    snprintf(out, outlen, "%s", env);
    return 0;
  }
  const char *xdg = getenv("XDG_DATA_HOME");
  if (xdg && xdg[0] == '/') {
    snprintf(out, outlen, "%s/polite/ca", xdg);
    return 0;
  }
  const char *home = getenv("HOME");
  if (home == NULL || home[0] == '\0') {
    const struct passwd *pw = getpwuid(getuid());
    home = pw ? pw->pw_dir : NULL;
  }
  if (home == NULL || home[0] == '\0') {
    snprintf(err, errlen,
             "no CA directory: set POLITE_CA_DIR, XDG_DATA_HOME or HOME");
    return -1;
  }
  snprintf(out, outlen, "%s/.local/share/polite/ca", home);
  return 0;
}

/* mkdir -p with mode 0700 for every directory it makes. The last one holds
 * the key: when it already exists it must be a directory of ours that
 * group and others cannot enter. It is refused otherwise, never chmod'ed:
 * `--dir /tmp` must not turn /tmp into a private directory. */
static int make_dirs(const char *dir, char *err, size_t errlen) {
  char p[1024];
  snprintf(p, sizeof p, "%s", dir);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/')
      continue;
    *s = '\0';
    if (mkdir(p, 0700) != 0 && errno != EEXIST) {
      set_err(err, errlen, "cannot create", p);
      return -1;
    }
    *s = '/';
  }
  if (mkdir(p, 0700) == 0)
    return chmod(p, 0700) == 0 ? 0
                               : (set_err(err, errlen, "cannot chmod", p), -1);
  struct stat st;
  if (errno != EEXIST || stat(p, &st) != 0) {
    set_err(err, errlen, "cannot create", p);
    return -1;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
    snprintf(err, errlen,
             "%s: the CA directory must be a directory of your own that "
             "group and others cannot access (mode 700; it is %03o%s); give "
             "--dir a new directory, or chmod 700 it",
             p, (unsigned)(st.st_mode & 0777),
             !S_ISDIR(st.st_mode)     ? ", not a directory"
             : st.st_uid != geteuid() ? ", owned by another user"
                                      : "");
    return -1;
  }
  return 0;
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
  X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
  if (ext == NULL)
    return -1;
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return ok ? 0 : -1;
}

/* A 128-bit random positive serial (CA/B Forum asks for >= 64 random bits). */
static int set_serial(X509 *cert) {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1)
    return -1;
  b[0] &= 0x7f;
  b[0] |= 0x01;
  BIGNUM *bn = BN_bin2bn(b, sizeof b, NULL);
  int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != NULL;
  BN_free(bn);
  return ok ? 0 : -1;
}

/* A new certificate with subject CN (and O=polite), public key pub, valid
 * from a day ago for days days in all (capped at the issuer's notAfter). */
static X509 *cert_new(const char *cn, EVP_PKEY *pub, long days, X509 *issuer) {
  X509 *c = X509_new();
  X509_NAME *name = X509_NAME_new();
  if (c == NULL || name == NULL || X509_set_version(c, 2) != 1 ||
      set_serial(c) < 0)
    goto bad;
  X509_gmtime_adj(X509_getm_notBefore(c), -BACKDATE_S);
  X509_time_adj_ex(X509_getm_notAfter(c), (int)days, -BACKDATE_S, NULL);
  if (issuer &&
      ASN1_TIME_compare(X509_get0_notAfter(c), X509_get0_notAfter(issuer)) > 0)
    X509_set1_notAfter(c, X509_get0_notAfter(issuer));
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                             (const unsigned char *)"polite", -1, -1, 0);
  /* CN is at most 64 characters (RFC 5280 ub-common-name); the SAN is what
   * clients check, so a longer host name simply has no CN. */
  if (strlen(cn) <= 64)
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                               (const unsigned char *)cn, -1, -1, 0);
  if (X509_set_subject_name(c, name) != 1 ||
      X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : name) !=
          1 ||
      X509_set_pubkey(c, pub) != 1)
    goto bad;
  X509_NAME_free(name);
  return c;
bad:
  X509_NAME_free(name);
  X509_free(c);
  return NULL;
}

/* The root: "polite proxy CA (user@host)", CA:TRUE critical, keyCertSign. */
static X509 *root_new(EVP_PKEY *key) {
  char host[128] = "localhost", cn[256];
  gethostname(host, sizeof host - 1);
  const struct passwd *pw = getpwuid(getuid());
  snprintf(cn, sizeof cn, "polite proxy CA (%.24s@%.24s)",
           pw ? pw->pw_name : "user", host);
  X509 *c = cert_new(cn, key, ROOT_DAYS, NULL);
  if (c == NULL ||
      add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
      add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
      add_ext(c, c, NID_subject_key_identifier, "hash") < 0 ||
      add_ext(c, c, NID_authority_key_identifier, "keyid:always") < 0 ||
      X509_sign(c, key, EVP_sha256()) == 0) {
    X509_free(c);
    return NULL;
  }
  return c;
}

/* Writes text made by write_pem to path through a temporary file in the
 * same directory and rename(2), so readers see the old or the new file,
 * never half of one. The file is created with mode. */
static int write_atomic(const char *path, mode_t mode,
                        int (*write_pem)(FILE *, void *), void *obj) {
  char tmp[1200];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    return -1;
  FILE *f = fdopen(fd, "w");
  if (f == NULL) {
    close(fd);
    unlink(tmp);
    return -1;
  }
  int ok = write_pem(f, obj) == 1;
  ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

static int pem_key(FILE *f, void *k) {
  return PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
}
static int pem_cert(FILE *f, void *c) {
  return PEM_write_X509(f, c);
}

/* Makes a new key and root in dir (which exists, mode 0700). */
static int create_in(const char *dir, char *err, size_t errlen) {
  char kp[1100], cp[1100];
  snprintf(kp, sizeof kp, "%s/ca.key", dir);
  snprintf(cp, sizeof cp, "%s/ca.pem", dir);
  EVP_PKEY *key = EVP_EC_gen("P-256");
  X509 *cert = key ? root_new(key) : NULL;
  int rc = -1;
  errno = 0;
  if (cert == NULL)
    set_err(err, errlen, "cannot make the CA certificate", NULL);
  else if (write_atomic(kp, 0600, pem_key, key) < 0)
    set_err(err, errlen, "cannot write", kp);
  else if (write_atomic(cp, 0644, pem_cert, cert) < 0)
    set_err(err, errlen, "cannot write", cp);
  else
    rc = 0;
  X509_free(cert);
  EVP_PKEY_free(key);
  return rc;
}

/* Holds an exclusive lock on dir/.lock so that two proxies starting at once
 * make one CA, not two halves of two. Returns the fd (close to unlock). */
static int lock_dir(const char *dir, char *err, size_t errlen) {
  char lp[1100];
  snprintf(lp, sizeof lp, "%s/.lock", dir);
  int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || flock(fd, LOCK_EX) != 0) {
    set_err(err, errlen, "cannot lock", lp);
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

static int resolve_dir(const char *dir, char *out, size_t outlen, char *err,
                       size_t errlen) {
  if (dir && dir[0]) {
    snprintf(out, outlen, "%s", dir);
    return 0;
  }
  return polite__net_ca_default_dir(out, outlen, err, errlen);
}

int polite__net_ca_renew(const char *dir, char *err, size_t errlen) {
  char d[1024];
  if (resolve_dir(dir, d, sizeof d, err, errlen) < 0 ||
      make_dirs(d, err, errlen) < 0)
    return -1;
  int lk = lock_dir(d, err, errlen);
  if (lk < 0)
    return -1;
  int rc = create_in(d, err, errlen);
  close(lk);
  return rc;
}

/* Loads dir/ca.key (refused when group or others may read it) and
 * dir/ca.pem, and checks that they belong together. */
static int load(net_ca *ca, char *err, size_t errlen) {
  char kp[1100];
  snprintf(kp, sizeof kp, "%s/ca.key", ca->dir);
  struct stat st;
  if (stat(kp, &st) == 0 && (st.st_mode & 077) != 0) {
    snprintf(err, errlen,
             "%s is readable by group or others (mode %03o); run chmod 600 "
             "on it, or polite proxy ca --renew",
             kp, (unsigned)(st.st_mode & 0777));
    return -1;
  }
  errno = 0;
  FILE *f = fopen(kp, "r");
  if (f) {
    ca->key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
  }
  if (ca->key == NULL) {
    set_err(err, errlen, "cannot read the CA key", kp);
    return -1;
  }
  errno = 0;
  f = fopen(ca->cert_path, "r");
  if (f) {
    ca->cert = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
  }
  if (ca->cert == NULL) {
    set_err(err, errlen, "cannot read the CA certificate", ca->cert_path);
    return -1;
  }
  if (X509_check_private_key(ca->cert, ca->key) != 1) {
    ERR_clear_error();
    snprintf(err, errlen, "%s does not match %s (run polite proxy ca --renew)",
             ca->cert_path, kp);
    return -1;
  }
  return 0;
}

int polite__net_ca_open(const char *dir, int create, net_ca **out, char *err,
                        size_t errlen) {
  *out = NULL;
  net_ca *ca = calloc(1, sizeof *ca);
  if (ca == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (resolve_dir(dir, ca->dir, sizeof ca->dir, err, errlen) < 0)
    goto bad;
  snprintf(ca->cert_path, sizeof ca->cert_path, "%s/ca.pem", ca->dir);
  char kp[1100];
  snprintf(kp, sizeof kp, "%s/ca.key", ca->dir);
  if (create && access(kp, F_OK) != 0) {
    if (make_dirs(ca->dir, err, errlen) < 0)
      goto bad;
    int lk = lock_dir(ca->dir, err, errlen);
    if (lk < 0)
      goto bad;
    /* Another process may have made it while we waited for the lock. */
    int rc = access(kp, F_OK) == 0 ? 0 : create_in(ca->dir, err, errlen);
    close(lk);
    if (rc < 0)
      goto bad;
  }
  if (load(ca, err, errlen) < 0)
    goto bad;
  ca->leaf_key = EVP_EC_gen("P-256");
  if (ca->leaf_key == NULL) {
    set_err(err, errlen, "cannot make the leaf key", NULL);
    goto bad;
  }
  *out = ca;
  return 0;
bad:
  polite__net_ca_free(ca);
  return -1;
}

void polite__net_ca_free(net_ca *ca) {
  if (ca == NULL)
    return;
  while (ca->cache) {
    ca_entry *e = ca->cache;
    ca->cache = e->next;
    SSL_CTX_free(e->ctx);
    free(e);
  }
  X509_free(ca->cert);
  EVP_PKEY_free(ca->key);
  EVP_PKEY_free(ca->leaf_key);
  free(ca);
}

const char *polite__net_ca_cert_path(const net_ca *ca) {
  return ca->cert_path;
}
const char *polite__net_ca_dir(const net_ca *ca) {
  return ca->dir;
}

void polite__net_ca_fingerprint(const net_ca *ca, char *out, size_t outlen) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  out[0] = '\0';
  if (X509_digest(ca->cert, EVP_sha256(), md, &n) != 1)
    return;
  size_t o = 0;
  for (unsigned i = 0; i < n && o + 4 <= outlen; i++)
    o += (size_t)snprintf(out + o, outlen - o, i ? ":%02X" : "%02X", md[i]);
}

void polite__net_ca_subject(const net_ca *ca, char *out, size_t outlen) {
  X509_NAME_oneline(X509_get_subject_name(ca->cert), out, (int)outlen);
}

void polite__net_ca_not_after(const net_ca *ca, char *out, size_t outlen) {
  struct tm tm;
  if (ASN1_TIME_to_tm(X509_get0_notAfter(ca->cert), &tm) == 1)
    strftime(out, outlen, "%Y-%m-%d", &tm);
  else
    snprintf(out, outlen, "?");
}

/* The SAN for host: "IP:..." for an IPv4/IPv6 literal (brackets allowed),
 * "DNS:..." for a name made of letters, digits, '-', '_' and '.'; -1 for
 * anything else, so that a hostile name cannot add SAN entries of its own
 * (the value goes through OpenSSL's comma-separated syntax). The name is
 * also copied, lower-cased and without brackets, into canon. */
static int san_for(const char *host, char *san, size_t sanlen, char *canon,
                   size_t canonlen) {
  char h[256];
  size_t n = strlen(host);
  if (n == 0 || n >= sizeof h)
    return -1;
  if (host[0] == '[' && host[n - 1] == ']') {
    memcpy(h, host + 1, n - 2);
    h[n - 2] = '\0';
  } else {
    memcpy(h, host, n + 1);
  }
  unsigned char bin[16];
  char ip[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, h, bin) == 1 &&
      inet_ntop(AF_INET, bin, ip, sizeof ip)) {
    snprintf(san, sanlen, "IP:%s", ip);
    snprintf(canon, canonlen, "%s", ip);
    return 0;
  }
  if (inet_pton(AF_INET6, h, bin) == 1 &&
      inet_ntop(AF_INET6, bin, ip, sizeof ip)) {
    snprintf(san, sanlen, "IP:%s", ip);
    snprintf(canon, canonlen, "%s", ip);
    return 0;
  }
  if (strlen(h) > 253 || h[0] == '.' || h[0] == '-')
    return -1;
  for (char *p = h; *p; p++) {
    char ch = *p;
    if (ch >= 'A' && ch <= 'Z')
      *p = (char)(ch - 'A' + 'a');
    else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
               ch == '-' || ch == '_' || ch == '.'))
      return -1;
  }
  snprintf(san, sanlen, "DNS:%s", h);
  snprintf(canon, canonlen, "%s", h);
  return 0;
}

/* A leaf for the canonical host (see san_for), signed by the CA. */
static X509 *leaf_new(net_ca *ca, const char *canon, const char *san) {
  X509 *c = cert_new(canon, ca->leaf_key, LEAF_DAYS, ca->cert);
  if (c == NULL ||
      add_ext(c, ca->cert, NID_basic_constraints, "CA:FALSE") < 0 ||
      add_ext(c, ca->cert, NID_key_usage, "critical,digitalSignature") < 0 ||
      add_ext(c, ca->cert, NID_ext_key_usage, "serverAuth") < 0 ||
      add_ext(c, ca->cert, NID_subject_alt_name, san) < 0 ||
      add_ext(c, ca->cert, NID_subject_key_identifier, "hash") < 0 ||
      add_ext(c, ca->cert, NID_authority_key_identifier, "keyid:always") < 0 ||
      X509_sign(c, ca->key, EVP_sha256()) == 0) {
    X509_free(c);
    return NULL;
  }
  return c;
}

static X509 *leaf_for(net_ca *ca, const char *host, char *canon,
                      size_t canonlen, char *err, size_t errlen) {
  char san[300];
  if (san_for(host, san, sizeof san, canon, canonlen) < 0) {
    snprintf(err, errlen,
             "cannot make a certificate for host '%.80s': not a DNS name or "
             "IP address",
             host);
    return NULL;
  }
  X509 *leaf = leaf_new(ca, canon, san);
  if (leaf == NULL) {
    errno = 0;
    set_err(err, errlen, "cannot sign a certificate for", canon);
  }
  return leaf;
}

/* Clients that offer ALPN get http/1.1 (the proxy speaks nothing else);
 * one that offers only h2 gets no ALPN and may still try HTTP/1.1. */
static int alpn_select(SSL *ssl, const unsigned char **out,
                       unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
  (void)ssl;
  (void)arg;
  static const unsigned char h11[] = {8,   'h', 't', 't', 'p',
                                      '/', '1', '.', '1'};
  unsigned char *sel = NULL;
  if (SSL_select_next_proto(&sel, outlen, h11, sizeof h11, in, inlen) ==
      OPENSSL_NPN_NEGOTIATED) {
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

/* A client whose SNI names another host than the one the context was made
 * for (a CONNECT to an address, with the name in SNI) gets the certificate
 * for the SNI name: that is the name it checks. A name no certificate may
 * carry keeps the original one. The SSL keeps a reference to the context it
 * switched to, so evicting it from the cache later is harmless. */
static int sni_switch(SSL *ssl, int *alert, void *arg) {
  (void)alert;
  net_ca *ca = arg;
  const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == NULL)
    return SSL_TLSEXT_ERR_NOACK;
  char err[160];
  SSL_CTX *want = polite__net_ca_ctx_for(ca, name, err, sizeof err);
  if (want && want != SSL_get_SSL_CTX(ssl))
    SSL_set_SSL_CTX(ssl, want);
  return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *server_ctx(net_ca *ca, X509 *leaf) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == NULL)
    return NULL;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
  SSL_CTX_set_tlsext_servername_callback(ctx, sni_switch);
  SSL_CTX_set_tlsext_servername_arg(ctx, ca);
  if (SSL_CTX_use_certificate(ctx, leaf) != 1 ||
      SSL_CTX_use_PrivateKey(ctx, ca->leaf_key) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    SSL_CTX_free(ctx);
    return NULL;
  }
  return ctx;
}

SSL_CTX *polite__net_ca_ctx_for(net_ca *ca, const char *host, char *err,
                                size_t errlen) {
  char canon[256];
  char san[300];
  if (san_for(host, san, sizeof san, canon, sizeof canon) == 0)
    for (ca_entry *e = ca->cache; e; e = e->next)
      if (strcmp(e->host, canon) == 0)
        return e->ctx;
  X509 *leaf = leaf_for(ca, host, canon, sizeof canon, err, errlen);
  if (leaf == NULL)
    return NULL;
  SSL_CTX *ctx = server_ctx(ca, leaf);
  X509_free(leaf);
  ca_entry *e = ctx ? calloc(1, sizeof *e) : NULL;
  if (e == NULL) {
    SSL_CTX_free(ctx);
    errno = 0;
    set_err(err, errlen, "cannot make a TLS context for", canon);
    return NULL;
  }
  snprintf(e->host, sizeof e->host, "%s", canon);
  e->ctx = ctx;
  e->next = ca->cache;
  ca->cache = e;
  if (++ca->ncache > NET_CA_CACHE_MAX) {
    /* Drop the oldest (the list's tail). */
    ca_entry **pp = &ca->cache;
    while ((*pp)->next)
      pp = &(*pp)->next;
    SSL_CTX_free((*pp)->ctx);
    free(*pp);
    *pp = NULL;
    ca->ncache--;
  }
  return ctx;
}

static int pem_chain(FILE *f, void *arg) {
  X509 **pair = arg;
  return PEM_write_X509(f, pair[0]) == 1 && PEM_write_X509(f, pair[1]) == 1;
}

int polite__net_ca_issue(net_ca *ca, const char *host, const char *cert_path,
                         const char *key_path, char *err, size_t errlen) {
  char canon[256];
  X509 *leaf = leaf_for(ca, host, canon, sizeof canon, err, errlen);
  if (leaf == NULL)
    return -1;
  X509 *pair[2] = {leaf, ca->cert};
  int rc = -1;
  errno = 0;
  if (write_atomic(key_path, 0600, pem_key, ca->leaf_key) < 0)
    set_err(err, errlen, "cannot write", key_path);
  else if (write_atomic(cert_path, 0644, pem_chain, pair) < 0)
    set_err(err, errlen, "cannot write", cert_path);
  else
    rc = 0;
  X509_free(leaf);
  return rc;
}
