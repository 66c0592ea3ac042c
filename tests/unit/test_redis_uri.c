/* Unit tests of Redis URI parsing (lib/redis_uri.c): every part, every
 * parameter, every refusal and the masked copy messages show, as table
 * rows walked by one function each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <polite/core.h>

#include "redis_uri.h"

/* A URI that parses, and what it must give. */
typedef struct {
  const char *uri;
  int tls;
  const char *host;
  int port;
  const char *user, *pass, *name;
  int64_t timeout_ms;
  const char *cacert, *cert, *key;
  int insecure;
  const char *safe;
} good_row;

static const good_row good[] = {
    {"redis://127.0.0.1:6380/jobs", 0, "127.0.0.1", 6380, NULL, NULL, "jobs",
     1000, NULL, NULL, NULL, 0, "redis://127.0.0.1:6380/jobs"},
    {"redis://cache.internal/a.b_c:d-e", 0, "cache.internal", 6379, NULL, NULL,
     "a.b_c:d-e", 1000, NULL, NULL, NULL, 0,
     "redis://cache.internal/a.b_c:d-e"},
    {"redis://:pw@h:1/q", 0, "h", 1, NULL, "pw", "q", 1000, NULL, NULL, NULL, 0,
     "redis://:REDACTED@h:1/q"},
    {"redis://ops:p%40ss%2Fword@h/q", 0, "h", 6379, "ops", "p@ss/word", "q",
     1000, NULL, NULL, NULL, 0, "redis://ops:REDACTED@h/q"},
    /* The userinfo ends at the last '@': a password may hold '@' raw. */
    {"redis://:a@b@h/q", 0, "h", 6379, NULL, "a@b", "q", 1000, NULL, NULL, NULL,
     0, "redis://:REDACTED@h/q"},
    {"redis://[::1]:7000/q?timeout=250ms", 0, "::1", 7000, NULL, NULL, "q", 250,
     NULL, NULL, NULL, 0, "redis://[::1]:7000/q?timeout=250ms"},
    {"redis://[fe80::1%25eth0]/q", 0, "fe80::1%25eth0", 6379, NULL, NULL, "q",
     1000, NULL, NULL, NULL, 0, "redis://[fe80::1%25eth0]/q"},
    {"rediss://u:p@h:6390/q?cacert=/ca.pem&cert=/c.pem&key=/c.key&"
     "timeout=2s",
     1, "h", 6390, "u", "p", "q", 2000, "/ca.pem", "/c.pem", "/c.key", 0,
     "rediss://u:REDACTED@h:6390/q?cacert=/ca.pem&cert=/c.pem&key=/c.key&"
     "timeout=2s"},
    {"rediss://h/q?insecure=1", 1, "h", 6379, NULL, NULL, "q", 1000, NULL, NULL,
     NULL, 1, "rediss://h/q?insecure=1"},
    {"rediss://h/q?insecure=no&", 1, "h", 6379, NULL, NULL, "q", 1000, NULL,
     NULL, NULL, 0, "rediss://h/q?insecure=no&"},
};

static void eq_str(const char *uri, const char *what, const char *got,
                   const char *want) {
  if ((got == NULL) != (want == NULL) ||
      (got && want && strcmp(got, want) != 0))
    fail_msg("'%s': %s is '%s', want '%s'", uri, what, got ? got : "(null)",
             want ? want : "(null)");
}

static void uris_that_parse(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    const good_row *g = &good[i];
    polite__redis_uri u;
    char err[300];
    int rc = polite__redis_uri_parse(g->uri, &u, err, sizeof err);
    if (rc != 0)
      fail_msg("'%s': %d %s", g->uri, rc, err);
    assert_int_equal(u.tls, g->tls);
    eq_str(g->uri, "host", u.host, g->host);
    assert_int_equal(u.port, g->port);
    eq_str(g->uri, "user", u.user, g->user);
    eq_str(g->uri, "password", u.pass, g->pass);
    eq_str(g->uri, "name", u.name, g->name);
    assert_int_equal(u.timeout_ms, g->timeout_ms);
    eq_str(g->uri, "cacert", u.cacert, g->cacert);
    eq_str(g->uri, "cert", u.cert, g->cert);
    eq_str(g->uri, "key", u.key, g->key);
    assert_int_equal(u.insecure, g->insecure);
    eq_str(g->uri, "safe", u.safe, g->safe);
    polite__redis_uri_free(&u);
    assert_null(u.host);
  }
}

/* A URI that is refused, a part of the message, and what the message must
 * never show. */
typedef struct {
  const char *uri, *says, *never;
} bad_row;

static const bad_row bad[] = {
    {"http://h/q", "expected redis://HOST:PORT/NAME or rediss://", NULL},
    {"redis:/h/q", "expected redis://", NULL},
    {"redis://h", "expected redis://HOST:PORT/NAME", NULL},
    {"redis://h/", "expected a NAME of 1 to 100", NULL},
    {"redis:///q", "expected a host", NULL},
    {"redis://:6379/q", "expected a host", NULL},
    {"redis://h:0/q", "port: expected 1-65535, got '0'", NULL},
    {"redis://h:65536/q", "port: expected 1-65535", NULL},
    {"redis://h:99999999999999999999/q", "port: expected 1-65535", NULL},
    {"redis://h:-1/q", "port: expected 1-65535", NULL},
    {"redis://h:12ab/q", "port: expected 1-65535, got '12ab'", NULL},
    {"redis://[::1/q", "lacks its ']'", NULL},
    {"redis://[::1]x/q", "expected ':PORT' after ']'", NULL},
    {"redis://h h/q", "the host has a character ' '", NULL},
    {"redis://h/bad{tag}", "NAME: only letters", NULL},
    {"redis://h/a/b", "NAME: only letters", NULL},
    {"redis://secret@h/q", "expected USER:PASSWORD@", "secret"},
    {"redis://:p%zzword@h/q", "bad %-escape", "zzword"},
    {"redis://:p%00@h/q", "bad %-escape", NULL},
    {"redis://:hunter2@h/q?token=abc", "unknown parameter 'token'", "hunter2"},
    {"redis://h/q?token=abc123", "token=REDACTED", "abc123"},
    {"redis://h/q?timeout=0", "timeout: expected a duration", NULL},
    {"redis://h/q?timeout=2h", "timeout: expected a duration", NULL},
    {"redis://h/q?timeout=fast", "got 'fast'", NULL},
    {"redis://h/q?cacert=/ca.pem", "'cacert' needs rediss://", NULL},
    {"redis://h/q?insecure=1", "'insecure' needs rediss://", NULL},
    {"rediss://h/q?insecure=maybe", "insecure: expected 1 or 0", NULL},
    {"rediss://h/q?cacert=", "cacert: expected a file name", NULL},
    {"rediss://h/q?key=/k.pem", "key= needs cert=", NULL},
};

static void uris_refused(void **state) {
  (void)state;
  char name[120];
  memset(name, 'n', sizeof name);
  memcpy(name, "redis://h/", 10);
  name[sizeof name - 1] = '\0'; /* a NAME of 109 characters */
  for (size_t i = 0; i <= sizeof bad / sizeof bad[0]; i++) {
    const char *uri = i < sizeof bad / sizeof bad[0] ? bad[i].uri : name;
    const char *says = i < sizeof bad / sizeof bad[0] ? bad[i].says : "NAME";
    const char *never = i < sizeof bad / sizeof bad[0] ? bad[i].never : NULL;
    polite__redis_uri u;
    char err[300];
    int rc = polite__redis_uri_parse(uri, &u, err, sizeof err);
    if (rc != POLITE_EINVAL)
      fail_msg("'%s': expected EINVAL, got %d", uri, rc);
    if (strstr(err, says) == NULL)
      fail_msg("'%s': message '%s' lacks '%s'", uri, err, says);
    if (never && strstr(err, never) != NULL)
      fail_msg("'%s': message '%s' shows '%s'", uri, err, never);
    assert_null(u.host); /* freed on error */
    assert_null(u.safe);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(uris_that_parse),
      cmocka_unit_test(uris_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
