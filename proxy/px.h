/* polite proxy: shared declarations of the proxy engine (config, rules,
 * tracking, report). */
#ifndef POLITE_PX_H
#define POLITE_PX_H

#include <polite/core.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Internal, not part of libpolite: names are polite__px_* for functions and
 * px_* for types. Everything here except px_server.c is free of I/O on
 * sockets and of clock reads, so it can be unit-tested and fuzzed. */

/* ---- Canned responses and rules (errors file, mocks file) ---------------- */

typedef struct {
  char *name;
  char *value;
} px_header;

typedef struct {
  int status;
  px_header *headers; /* owned */
  size_t nheaders;
  char *body; /* owned, may contain NUL bytes; NULL means empty */
  size_t body_len;
} px_response;

/* One entry of an errors file or a mocks file. `method` NULL means any
 * method; `nth` 0 means every matching request. */
typedef struct {
  char *url;
  char *method;
  char *body_fragment;
  unsigned nth;
  unsigned long seen; /* mocks: matching requests so far (for nth) */
  px_response *responses;
  size_t nresponses;
} px_rule;

typedef struct {
  px_rule *rules;
  size_t n;
} px_rules;

typedef enum { PX_RULES_ERRORS = 0, PX_RULES_MOCKS = 1 } px_rules_kind;

/* Loads a Dev Proxy errors file ({"errors":[...]}) or mocks file
 * ({"mocks":[...]}) from `text` (len bytes, need not be NUL-terminated).
 * `name` is the file name used in messages and `dir` the directory against
 * which "@file" bodies are resolved (NULL: no @file bodies). On failure
 * returns POLITE_EINVAL and writes "FILE:LINE:COL: ..." or
 * "FILE: errors[2].responses[0].statusCode: ..." into err. */
int polite__px_rules_parse(px_rules *out, px_rules_kind kind, const char *text,
                           size_t len, const char *name, const char *dir,
                           char *err, size_t errlen);
/* Reads and parses a file; same contract. */
int polite__px_rules_load(px_rules *out, px_rules_kind kind, const char *path,
                          char *err, size_t errlen);
void polite__px_rules_free(px_rules *r);

/* The first rule matching the request (url glob, method, body fragment),
 * honouring `nth` for mocks (every matching mock's counter advances).
 * Returns NULL when none matches. */
px_rule *polite__px_rules_match(px_rules *r, const char *method,
                                const char *url, const char *body,
                                size_t body_len);

/* ---- Globs, URLs, secrets ------------------------------------------------ */

/* Dev Proxy urlsToWatch semantics: `*` matches any run of characters
 * (including '/'), everything else literally and ignoring ASCII case (Dev
 * Proxy builds an IgnoreCase regex). A pattern that starts with '/' is
 * matched against the path+query only, else against the absolute URL. */
int polite__px_glob_match(const char *pattern, const char *url,
                          const char *path);

/* urlsToWatch list: first matching pattern wins; a leading '!' excludes.
 * An empty list watches everything. */
int polite__px_watch_match(char *const *patterns, size_t n, const char *url,
                           const char *path);

/* Copies `url` into a new string with the values of secret-looking query
 * parameters (names containing key, token, secret, signature, sig,
 * password, auth) and any userinfo ("user:pass@") replaced by REDACTED, and
 * the fragment dropped. Caller frees. */
char *polite__px_redact_url(const char *url);
/* Whole file, NUL-terminated and malloc'ed; NULL with errno on failure. */
char *polite__px_slurp(const char *path, size_t *len);

/* 1 when the header name carries a secret (Authorization, Cookie, ...). */
int polite__px_secret_header(const char *name);

/* FNV-1a 64 of salt+s, as 16 hex digits into out (>= 17 bytes). Used to
 * tell clients apart by their Authorization without storing it. */
void polite__px_hash_hex(uint64_t salt, const char *s, char *out);

/* ---- Configuration ------------------------------------------------------- */

typedef enum {
  PX_SCOPE_URL = 0,
  PX_SCOPE_HOST = 1,
  PX_SCOPE_CLIENT = 2,
  PX_SCOPE_GLOBAL = 3
} px_scope;

typedef struct {
  char *listen;   /* "ADDR:PORT" */
  char *upstream; /* NULL: mock mode */
  char *upstream_cacert; /* https upstreams: CA file (NULL: system store) */
  int upstream_insecure; /* https upstreams: no certificate verification */
  char **watch;
  size_t nwatch;
  double failure_rate;  /* percent, 0..100 */
  int failure_rate_set; /* given explicitly (else 50 with an errors file) */
  uint64_t seed;
  int has_seed;
  int64_t retry_after_s; /* injected 429s and @dynamic */
  char *errors_file;
  char *mocks_file;
  double rate_per_s;     /* 0: no rate limit */
  int64_t rate_n;        /* for RateLimit-Policy: q */
  int64_t rate_window_s; /* w */
  unsigned burst;
  px_scope rate_scope;
  int64_t quota;  /* -1: none */
  px_scope scope; /* Retry-After tracking key */
  int penalty;
  int64_t latency_min_ms, latency_max_ms;
  char *report;
  char *report_md;
  char *log;
  char *ready_file;
  px_rules errors;
  px_rules mocks;
  /* The server's bounds and mode (set by src/cmd_proxy.c's own options;
   * 0 means the documented default, see px_server.c set_bounds). */
  int64_t max_head, max_headers, max_body, max_connections;
  int header_timeout_ms, idle_timeout_ms;
  int forward;       /* --mode forward */
  char **allow_host; /* --allow-host globs (forward mode); owned */
  size_t nallow_host;
} px_config;

void polite__px_config_init(px_config *c);
void polite__px_config_free(px_config *c);

/* Sets option `name` (kebab-case "failure-rate", camelCase "failureRate"
 * or snake_case are all accepted) from its text value. Boolean options take
 * "true"/"false"/"1"/"0" or NULL (meaning true). `base_dir` (may be NULL)
 * resolves relative file paths (the config file's directory). Returns 0,
 * or -1 with a message naming the option and the value in err; -2 when the
 * name is unknown. */
int polite__px_config_set(px_config *c, const char *name, const char *value,
                          const char *base_dir, char *err, size_t errlen);

/* 1 when the option `name` is boolean (takes no value on the command line). */
int polite__px_config_is_bool(const char *name);
/* 1 when the option `name` exists. */
int polite__px_config_known(const char *name);

/* Applies a JSON config text ({"listen":"...","failureRate":50,...}).
 * Errors name the file, the line (and column for syntax errors) and the
 * field. Returns 0 or -1. */
int polite__px_config_parse_json(px_config *c, const char *text, size_t len,
                                 const char *name, const char *base_dir,
                                 char *err, size_t errlen);
int polite__px_config_load(px_config *c, const char *path, char *err,
                           size_t errlen);

/* Loads errors_file / mocks_file into c->errors / c->mocks. */
int polite__px_config_finish(px_config *c, char *err, size_t errlen);

/* ---- Tracking and report (pure: every time is an argument) --------------- */

typedef enum {
  PX_KIND_PASSED = 0,  /* answered by the upstream or a mock */
  PX_KIND_FAILURE = 1, /* --failure-rate / errors file */
  PX_KIND_RATE = 2,    /* --rate-limit */
  PX_KIND_QUOTA = 3,   /* --quota */
  PX_KIND_EARLY = 4,   /* arrived before its Retry-After */
  PX_KIND_ERROR = 5,   /* upstream unreachable / proxy error */
  PX_KIND__COUNT
} px_kind;

typedef struct px_state px_state;

px_state *polite__px_state_new(void);
void polite__px_state_free(px_state *s);

/* Early-retry check for `key` at now_ms (monotonic). Returns the remaining
 * wait in ms (> 0) when the request is early, else 0 (and forgets an
 * expired entry). With `penalty`, an early request restarts the full wait;
 * the new remaining wait is returned. */
int64_t polite__px_track_check(px_state *s, const char *key, int64_t now_ms,
                               int penalty);

/* Remembers that a Retry-After of wait_ms was sent for `key` at now_ms. A
 * later deadline never shortens an existing one. */
void polite__px_track_set(px_state *s, const char *key, int64_t now_ms,
                          int64_t wait_ms);

/* The GCRA limiter of `key` (created on first use with the given rate). */
polite_gcra *polite__px_gcra_get(px_state *s, const char *key,
                                 double rate_per_s, unsigned burst);

/* Quota: returns 1 and counts the request when one is left, else 0. */
int polite__px_quota_take(px_state *s, int64_t quota);

/* Records an early retry (wall_ms for the report's "time"). */
void polite__px_early_record(px_state *s, int64_t wall_ms, const char *key,
                             const char *client, const char *method,
                             const char *url, int64_t early_ms);

/* Records one finished request: per-URL counters and the retry chain
 * (consecutive requests to method+url whose previous answer was 429/503). */
void polite__px_stats_record(px_state *s, const char *method, const char *url,
                             int status, px_kind kind);

/* The report as JSON text (caller frees) / markdown into f. started_wall_ms
 * and now_wall_ms give the report's time span. */
char *polite__px_report_json(const px_state *s, int64_t started_wall_ms,
                             int64_t now_wall_ms);
void polite__px_report_md(const px_state *s, FILE *f, int64_t started_wall_ms,
                          int64_t now_wall_ms);

/* Number of requests recorded so far (all kinds). */
uint64_t polite__px_requests(const px_state *s);

/* ---- The engine (px_server.c) ------------------------------------------- */

/* Runs the proxy until SIGINT/SIGTERM, then writes the reports and returns
 * 0; returns 1 (with a message on stderr) when it cannot start. The config
 * is owned by the caller and must have been finished. */
int polite__px_run(px_config *c);

#endif
