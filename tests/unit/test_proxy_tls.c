/* Unit tests of the proxy's local CA and leaf certificates: files and
 * modes, a real OpenSSL handshake against each leaf (proxy/net_ca.c,
 * proxy/px_tls.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net_ca.c"
#include "net_tls.c"

static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/polite-tls-test-XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

static void ca_dir(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s/nested/ca", tmpdir, name);
}

static void creates_with_private_modes(void **state) {
  (void)state;
  char d[300], err[512], p[400];
  ca_dir(d, sizeof d, "modes");
  net_ca *ca = NULL;
  assert_int_equal(polite__net_ca_open(d, 0, &ca, err, sizeof err), -1);
  assert_null(ca);
  assert_non_null(strstr(err, "ca.key"));
  assert_int_equal(polite__net_ca_open(d, 1, &ca, err, sizeof err), 0);
  struct stat st;
  assert_int_equal(stat(d, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  snprintf(p, sizeof p, "%s/ca.key", d);
  assert_int_equal(stat(p, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  snprintf(p, sizeof p, "%s/ca.pem", d);
  assert_string_equal(polite__net_ca_cert_path(ca), p);
  char subj[256];
  polite__net_ca_subject(ca, subj, sizeof subj);
  assert_non_null(strstr(subj, "polite proxy CA ("));
  /* The root is a CA that may sign certificates. */
  assert_int_equal(X509_check_ca(ca->cert), 1);
  assert_true(X509_get_key_usage(ca->cert) & KU_KEY_CERT_SIGN);
  char fp1[128], fp2[128];
  polite__net_ca_fingerprint(ca, fp1, sizeof fp1);
  polite__net_ca_free(ca);
  /* Opening again reads the same CA. */
  assert_int_equal(polite__net_ca_open(d, 1, &ca, err, sizeof err), 0);
  polite__net_ca_fingerprint(ca, fp2, sizeof fp2);
  assert_string_equal(fp1, fp2);
  assert_int_equal(strlen(fp1), 32 * 3 - 1);
  polite__net_ca_free(ca);
}

static void refuses_a_readable_key(void **state) {
  (void)state;
  char d[300], err[512], p[400];
  ca_dir(d, sizeof d, "readable");
  net_ca *ca = NULL;
  assert_int_equal(polite__net_ca_open(d, 1, &ca, err, sizeof err), 0);
  polite__net_ca_free(ca);
  snprintf(p, sizeof p, "%s/ca.key", d);
  assert_int_equal(chmod(p, 0640), 0);
  assert_int_equal(polite__net_ca_open(d, 1, &ca, err, sizeof err), -1);
  assert_non_null(strstr(err, "readable by group or others"));
  assert_non_null(strstr(err, "640"));
}

static void renew_changes_the_fingerprint(void **state) {
  (void)state;
  char d[300], err[512], fp1[128], fp2[128];
  ca_dir(d, sizeof d, "renew");
  net_ca *ca = NULL;
  assert_int_equal(polite__net_ca_open(d, 1, &ca, err, sizeof err), 0);
  polite__net_ca_fingerprint(ca, fp1, sizeof fp1);
  polite__net_ca_free(ca);
  assert_int_equal(polite__net_ca_renew(d, err, sizeof err), 0);
  assert_int_equal(polite__net_ca_open(d, 0, &ca, err, sizeof err), 0);
  polite__net_ca_fingerprint(ca, fp2, sizeof fp2);
  assert_string_not_equal(fp1, fp2);
  polite__net_ca_free(ca);
}

/* Runs a TLS handshake between a client that trusts only ca_pem, checks
 * `name` and sends `sni` (NULL: none), and a server using sctx, over an
 * in-memory BIO pair. Returns the client's verify result (X509_V_OK on
 * success), or -1 when the handshake failed for another reason. */
static long handshake_sni(SSL_CTX *sctx, const char *ca_pem, const char *name,
                          const char *sni) {
  SSL_CTX *cctx = polite__net_tls_client_ctx(ca_pem, 0, NULL, 0);
  assert_non_null(cctx);
  SSL *c = SSL_new(cctx), *s = SSL_new(sctx);
  BIO *cb = NULL, *sb = NULL;
  assert_int_equal(BIO_new_bio_pair(&cb, 0, &sb, 0), 1);
  SSL_set_bio(c, cb, cb);
  SSL_set_bio(s, sb, sb);
  SSL_set_connect_state(c);
  SSL_set_accept_state(s);
  unsigned char ip[16];
  if (inet_pton(AF_INET, name, ip) == 1)
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c), name);
  else
    SSL_set1_host(c, name);
  if (sni)
    SSL_set_tlsext_host_name(c, sni);
  int cdone = 0, sdone = 0;
  for (int i = 0; i < 50 && !(cdone && sdone); i++) {
    if (!cdone) {
      int r = SSL_do_handshake(c);
      if (r == 1)
        cdone = 1;
      else if (SSL_get_error(c, r) != SSL_ERROR_WANT_READ)
        break;
    }
    if (!sdone) {
      int r = SSL_do_handshake(s);
      if (r == 1)
        sdone = 1;
      else if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ)
        break;
    }
  }
  long vr = SSL_get_verify_result(c);
  long rc = cdone && sdone ? vr : (vr != X509_V_OK ? vr : -1);
  if (cdone) {
    const unsigned char *alpn = NULL;
    unsigned alen = 0;
    SSL_get0_alpn_selected(c, &alpn, &alen);
    assert_int_equal(alen, 8);
    assert_memory_equal(alpn, "http/1.1", 8);
  }
  SSL_free(c);
  SSL_free(s);
  SSL_CTX_free(cctx);
  ERR_clear_error();
  return rc;
}

/* The usual client: SNI is the name it checks (none for an address). */
static long handshake(SSL_CTX *sctx, const char *ca_pem, const char *name) {
  unsigned char ip[16];
  int is_ip = inet_pton(AF_INET, name, ip) == 1;
  return handshake_sni(sctx, ca_pem, name, is_ip ? NULL : name);
}

static void leaves_verify_for_their_host_only(void **state) {
  (void)state;
  char d[300], err[512];
  ca_dir(d, sizeof d, "leaf");
  net_ca *ca = NULL;
  assert_int_equal(polite__net_ca_open(d, 1, &ca, err, sizeof err), 0);
  const char *pem = polite__net_ca_cert_path(ca);
  SSL_CTX *ip = polite__net_ca_ctx_for(ca, "127.0.0.1", err, sizeof err);
  assert_non_null(ip);
  assert_int_equal(handshake(ip, pem, "127.0.0.1"), X509_V_OK);
  assert_int_equal(handshake(ip, pem, "127.0.0.2"),
                   X509_V_ERR_IP_ADDRESS_MISMATCH);
  SSL_CTX *dns = polite__net_ca_ctx_for(ca, "API.Example.com", err, sizeof err);
  assert_non_null(dns);
  assert_int_equal(handshake(dns, pem, "api.example.com"), X509_V_OK);
  assert_int_equal(handshake_sni(dns, pem, "other.example.com", NULL),
                   X509_V_ERR_HOSTNAME_MISMATCH);
  /* SNI naming another host than the context's: that host's certificate
   * (and a client checking a name it did not send still fails). */
  assert_int_equal(
      handshake_sni(dns, pem, "other.example.com", "x.example.com"),
      X509_V_ERR_HOSTNAME_MISMATCH);
  assert_int_equal(handshake(ip, pem, "sni.example.com"), X509_V_OK);
  assert_int_equal(handshake(dns, pem, "sni2.example.com"), X509_V_OK);
  /* Cached: the same context for the same host, whatever its case. */
  assert_ptr_equal(
      polite__net_ca_ctx_for(ca, "api.example.COM", err, sizeof err), dns);
  assert_non_null(polite__net_ca_ctx_for(ca, "[::1]", err, sizeof err));
  /* A client that trusts another CA refuses the leaf. */
  char d2[300];
  ca_dir(d2, sizeof d2, "other");
  net_ca *other = NULL;
  assert_int_equal(polite__net_ca_open(d2, 1, &other, err, sizeof err), 0);
  long vr = handshake(dns, polite__net_ca_cert_path(other), "api.example.com");
  assert_true(vr == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
              vr == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT);
  polite__net_ca_free(other);
  polite__net_ca_free(ca);
}

static void hostile_names_are_refused(void **state) {
  (void)state;
  char d[300], err[512];
  ca_dir(d, sizeof d, "hostile");
  net_ca *ca = NULL;
  assert_int_equal(polite__net_ca_open(d, 1, &ca, err, sizeof err), 0);
  static const char *const bad[] = {"a.com,DNS:evil.com",
                                    "a.com, IP:1.2.3.4",
                                    "",
                                    "-a.com",
                                    "a b",
                                    "é.com",
                                    "a.com\n",
                                    "[1.2.3.4"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    assert_null(polite__net_ca_ctx_for(ca, bad[i], err, sizeof err));
    assert_non_null(strstr(err, "not a DNS name or IP address"));
  }
  polite__net_ca_free(ca);
}

static void leaf_is_short_lived_and_for_servers(void **state) {
  (void)state;
  char d[300], err[512], cp[400], kp[400];
  ca_dir(d, sizeof d, "issue");
  net_ca *ca = NULL;
  assert_int_equal(polite__net_ca_open(d, 1, &ca, err, sizeof err), 0);
  snprintf(cp, sizeof cp, "%s/leaf.pem", tmpdir);
  snprintf(kp, sizeof kp, "%s/leaf.key", tmpdir);
  assert_int_equal(
      polite__net_ca_issue(ca, "localhost", cp, kp, err, sizeof err), 0);
  struct stat st;
  assert_int_equal(stat(kp, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  FILE *f = fopen(cp, "r");
  assert_non_null(f);
  X509 *leaf = PEM_read_X509(f, NULL, NULL, NULL);
  fclose(f);
  assert_non_null(leaf);
  int days = 0, secs = 0;
  assert_int_equal(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(leaf),
                                  X509_get0_notAfter(leaf)),
                   1);
  assert_true(days <= 397 && days >= 390);
  /* Backdated: valid since before now. */
  assert_true(X509_cmp_current_time(X509_get0_notBefore(leaf)) < 0);
  assert_true(X509_get_extended_key_usage(leaf) & XKU_SSL_SERVER);
  assert_int_equal(X509_check_ca(leaf), 0);
  assert_int_equal(X509_check_host(leaf, "localhost", 0, 0, NULL), 1);
  X509_free(leaf);
  polite__net_ca_free(ca);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(creates_with_private_modes),
      cmocka_unit_test(refuses_a_readable_key),
      cmocka_unit_test(renew_changes_the_fingerprint),
      cmocka_unit_test(leaves_verify_for_their_host_only),
      cmocka_unit_test(hostile_names_are_refused),
      cmocka_unit_test(leaf_is_short_lived_and_for_servers),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
