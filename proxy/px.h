/* polite proxy: shared declarations of the proxy engine (config, rules,
 * tracking, report). */
#ifndef POLITE_PX_H
#define POLITE_PX_H

#include <polite/core.h>

#include "px_limit.h"
#include "proxy.h"

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
  int never;          /* nth: 0 was given: loads, never matches (Dev Proxy) */
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
                           size_t max, char *err, size_t errlen);
/* Reads path (up to max bytes) and parses it; same contract. */
int polite__px_rules_load(px_rules *out, px_rules_kind kind, const char *path,
                          size_t max, char *err, size_t errlen);
void polite__px_rules_free(px_rules *r);
/* Reads a file holding one response object ({"statusCode","headers","body"},
 * Dev Proxy's customResponseFile) into out as one rule matching "*". */
int polite__px_response_load(px_rules *out, const char *path, size_t max,
                             char *err, size_t errlen);

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
/* 1 when some pattern could match a URL of authority (host[:port]) under
 * the scheme https (1) or http (0): its host part matches, or it names no
 * host (a path glob, a bare star). An intercepted CONNECT and the check of
 * a watch list against --upstream both ask it. */
int polite__px_watch_host(char *const *patterns, size_t n,
                          const char *authority, int https);

/* Copies `url` into a new string with the values of secret-looking query
 * parameters (names containing key, token, secret, signature, sig,
 * password, auth) and any userinfo ("user:pass@") replaced by REDACTED, and
 * the fragment dropped. Caller frees. */
char *polite__px_redact_url(const char *url);
/* Formats an error message into err (errlen > 0; NULL: nothing). */
void polite__px_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The directory part of path into dir, or `none` when path has no '/'. */
void polite__px_dirname(const char *path, char *dir, size_t size,
                        const char *none);
/* The message for a file polite__read_file (lib/http_syntax.h) refused,
 * from errno: "PATH: larger than the limit of MAX bytes (--max-file-size)"
 * for EFBIG, else "PATH: cannot read file: <strerror>". */
void polite__px_file_error(char *err, size_t errlen, const char *path,
                           size_t max);

/* What --max-file-size is unless set: the errors, mocks, config,
 * devproxyrc and response files and @file bodies are read up to this many
 * bytes (issue 15 item 6: --mocks-file /dev/zero read 5 GB). */
#define PX_FILE_MAX_DEFAULT ((size_t)16 << 20)

/* 1 when the header name carries a secret (Authorization, Cookie, ...). */
int polite__px_secret_header(const char *name);

/* A 64-bit hash of s seeded with salt (polite__hash_words), as 16 hex digits
 * into out (>= 17 bytes). Used to tell clients apart by their Authorization
 * without storing it. */
void polite__px_hash_hex(uint64_t salt, const char *s, char *out);

/* ---- Configuration ------------------------------------------------------- */

typedef enum {
  PX_SCOPE_URL = 0,
  PX_SCOPE_HOST = 1,
  PX_SCOPE_CLIENT = 2,
  PX_SCOPE_GLOBAL = 3
} px_scope;

#define PX_HDR_IETF 1     /* RateLimit-Policy + RateLimit (draft 10) */
#define PX_HDR_DEVPROXY 2 /* RateLimit-Limit/-Remaining/-Reset */
#define PX_HDR_OPENAI 4   /* x-ratelimit-{limit,remaining,reset}-requests */

/* What the tracking is asked to do (px_config.track). */
typedef struct {
  int judge;        /* 1: the early-retry judge runs (the default); 0: off
                       (a devproxyrc that does not enable RetryAfterPlugin) */
  int64_t max_urls; /* --max-urls: URLs with their own stats (the ones used
                       longest ago go first); 0: PX_MAX_URLS_DEFAULT */
} px_track_opts;

#define PX_MAX_URLS_DEFAULT 10000

/* Dev Proxy's plugins that polite simulates: what a devproxyrc's
 * per-plugin urlsToWatch narrows (px_devproxy.c). */
typedef enum {
  PX_PLUG_RETRY_AFTER = 0, /* RetryAfterPlugin: the early-retry judge */
  PX_PLUG_ERRORS = 1,      /* GenericRandomErrorPlugin: failures */
  PX_PLUG_RATE = 2,        /* RateLimitingPlugin */
  PX_PLUG_TOKENS = 3,      /* LanguageModelRateLimitingPlugin */
  PX_PLUG_MOCKS = 4,       /* MockResponsePlugin */
  PX_PLUG_LATENCY = 5,     /* LatencyPlugin */
  PX_PLUG__COUNT,
  PX_PLUG_NONE = PX_PLUG__COUNT /* polite's own checks: the global list */
} px_plugin;

/* One plugin's watch list. Set only when a devproxyrc gives some plugin a
 * urlsToWatch of its own: then every simulated plugin has its list (its
 * own, or the file's), and c->watch is the union of them all, as Dev Proxy
 * builds its set of watched URLs. */
typedef struct {
  char **pat; /* owned */
  size_t n;
  int used;   /* the plugin is enabled in the devproxyrc */
  int own;    /* its urlsToWatch is its own (plugins[i].urlsToWatch) */
  int set;    /* pat is the plugin's list (polite__px_plugin_watch_finish) */
  char *what; /* where it comes from, for messages (owned) */
} px_watch;

struct px_config {
  char *listen;          /* "ADDR:PORT" */
  char *upstream;        /* NULL: mock mode */
  char *upstream_cacert; /* https upstreams: CA file (NULL: system store) */
  int upstream_insecure; /* https upstreams: no certificate verification */
  int test_clock; /* --test-clock: time moves only by POST /__polite/clock */
  char **watch;
  size_t nwatch;
  char *watch_what;                      /* the list's origin for messages
                                            (a devproxyrc; NULL: --watch) */
  px_watch plugin_watch[PX_PLUG__COUNT]; /* per-plugin lists (px_watch) */
  px_track_opts track;                   /* the judge's switch, --max-urls */
  double failure_rate;                   /* percent, 0..100 */
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
  px_lim_mode rate_mode; /* --rate-limit-mode */
  int64_t rate_cost;     /* --rate-limit-cost: units per request */
  int rate_in_units;     /* rate_n counts units, not requests (devproxyrc) */
  px_lim_cfg lim;        /* built by polite__px_config_finish */
  int rate_headers;      /* PX_HDR_* bits; -1: by mode */
  int warn_pct;          /* Dev Proxy headers from this % used */
  int reset_epoch;       /* RateLimit-Reset as UTC epoch seconds */
  char *hdr_limit, *hdr_remaining, *hdr_reset; /* their names */
  char *limit_response_file;                   /* whenLimitExceeded Custom */
  px_rules limit_response;                     /* its one response (rules[0]) */
  int64_t concurrency; /* in flight per key; 0: no limit */
  px_scope conc_scope;
  int conc_status; /* 429 or 503 */
  int64_t conc_retry_after_s;
  int64_t quota;          /* -1: none */
  px_quota_cfg quota_cfg; /* limit = quota */
  px_tok_cfg tok;         /* --prompt-token-limit etc.; limits 0: none */
  int forward_mode;       /* --mode forward, or what a devproxyrc implies */
  char *warning;          /* what a devproxyrc asks that is not simulated */
  px_scope scope;         /* Retry-After tracking key */
  int penalty;
  int64_t latency_min_ms, latency_max_ms;
  char *report;
  char *report_md;
  char *report_html; /* --report-html (px_report_html.c) */
  char *log;
  char *ready_file;
  px_rules errors;
  px_rules mocks;
  int64_t errors_mtime_ns, mocks_mtime_ns; /* for polite__px_config_reload */
  /* The server's bounds and mode (rows of the option table;
   * 0 means the documented default, see px_server.c set_bounds). */
  int64_t max_head, max_headers, max_body, max_connections;
  size_t max_file;   /* --max-file-size: files the proxy reads, in bytes */
  char **allow_host; /* --allow-host globs (forward mode); owned */
  size_t nallow_host;
  char **connect_to; /* --connect-to HOST:PORT:HOST2:PORT2 rules; owned */
  size_t nconnect_to;
  const char *mode_note; /* said at start: how the mode was settled */
  int header_timeout_ms, idle_timeout_ms;
  int mode_set; /* --mode given: a devproxyrc or --upstream do not decide */
  /* While options are set (px_config.c): 1 when --config/--devproxy-config/
   * --preset were already read, and the directory relative paths are
   * resolved against (a config file's; NULL on the command line). */
  int skip_sources;
  const char *set_dir;
};

void polite__px_config_init(px_config *c);
void polite__px_config_free(px_config *c);

/* polite__px_config_set (proxy.h): boolean options take
 * "true"/"false"/"1"/"0" or NULL (meaning true); `base_dir` (may be NULL)
 * resolves relative file paths (the config file's directory). */

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

/* Appends a copy of v to the list *v_ of *n strings. 0, or -1 out of
 * memory (the list as it was). */
int polite__px_list_add(char ***v_, size_t *n, const char *v);

/* Replaces *dst (freed) by a copy of v. 0, or -1 out of memory (*dst
 * kept). */
int polite__px_strset(char **dst, const char *v);

struct json_t;
/* The text of a JSON scalar as an option value: a string as is, numbers
 * printed, booleans as true/false when allow_bool; NULL for anything else.
 * buf (size bytes) holds a printed number. */
const char *polite__px_json_text(struct json_t *v, int allow_bool, char *buf,
                                 size_t size);

/* Reloads the errors and mocks files when their modification time changed
 * (as Dev Proxy watches them). A file that no longer loads keeps the
 * previous rules; the message goes to `log`. Returns how many reloaded. */
int polite__px_config_reload(px_config *c, FILE *log);
/* Modification time of path in ns; 0 when it is NULL or cannot be read. */
int64_t polite__px_file_mtime_ns(const char *path);

/* ---- Presets (px_preset.c) ------------------------------------------------
 */

/* Applies preset `name` (openai, github, graph) to c. -1 with a message
 * listing the names when unknown (without "--preset": the option table's
 * setter adds it). */
int polite__px_preset_apply(px_config *c, const char *name, char *err,
                            size_t errlen);

/* ---- Dev Proxy's configuration (px_devproxy.c) ----------------------------
 */

struct json_t;

/* Reads a devproxyrc (JSON, or YAML for .yaml/.yml) into c: urlsToWatch,
 * plugins[] with enabled and configSection, the sections of the plugins
 * polite simulates, rate, port and ipAddress. Sets forward mode and the
 * host throttle key, as Dev Proxy runs. What is not simulated is named in
 * c->warning. Errors name the file and the field. */
int polite__px_devproxy_load(px_config *c, const char *path, char *err,
                             size_t errlen);
int polite__px_devproxy_apply(px_config *c, struct json_t *root,
                              const char *name, const char *dir, char *err,
                              size_t errlen);
/* 1 when plugin p acts on the request (url, path): always when no
 * per-plugin lists are set (the global list already matched, see
 * px_watch); else when p's own list matches. PX_PLUG_NONE: 1. */
int polite__px_plugin_watches(const px_config *c, px_plugin p, const char *url,
                              const char *path);
/* Once every option is set (polite__px_config_finish): when some plugin
 * has its own list, every other enabled plugin gets a copy of the global
 * list, and the global list becomes the union. 0, or -1 out of memory. */
int polite__px_plugin_watch_finish(px_config *c, char *err, size_t errlen);
/* Frees the per-plugin lists (polite__px_config_free). */
void polite__px_plugin_watch_free(px_config *c);
/* Refuses a watch list that can match nothing in the mode in force (run
 * after the mode is settled): https:// patterns of other hosts in reverse
 * or mock mode, schemes other than http and https, lists of exclusions
 * only. Returns 0, or -1 with a message naming the list, the mode and
 * what requests look like in it. */
int polite__px_watch_check(const px_config *c, char *err, size_t errlen);

/* YAML text to a new JSON value (scalars typed as YAML 1.2's core schema);
 * NULL with "FILE:LINE:COL: problem" in err. */
struct json_t *polite__px_yaml_to_json(const char *text, size_t len,
                                       const char *name, char *err,
                                       size_t errlen);

/* ---- Tracking and report (pure: every time is an argument) --------------- */

typedef enum {
  PX_KIND_PASSED = 0,      /* answered by the upstream or a mock */
  PX_KIND_FAILURE = 1,     /* --failure-rate / errors file */
  PX_KIND_RATE = 2,        /* --rate-limit */
  PX_KIND_QUOTA = 3,       /* --quota */
  PX_KIND_EARLY = 4,       /* arrived before its Retry-After */
  PX_KIND_ERROR = 5,       /* upstream unreachable / proxy error */
  PX_KIND_THROTTLED = 6,   /* during a throttle another client was told of */
  PX_KIND_CONCURRENCY = 7, /* over the concurrency limit */
  PX_KIND_TOKENS = 8,      /* the window's tokens are spent */
  PX_KIND__COUNT
} px_kind;

/* What each kind is called where it appears: one row per px_kind. */
typedef struct {
  const char *word;   /* the log line's kind word */
  const char *key;    /* the JSON report's count key */
  const char *label;  /* what the reports call it */
  const char *metric; /* polite_proxy_requests_total's outcome label */
  const char *rule;   /* polite_proxy_throttled_total's rule; NULL: not a
                         throttle the proxy made up */
} px_kind_info;

/* The row of kind k (k < PX_KIND__COUNT). */
const px_kind_info *polite__px_kind_info(px_kind k);
/* The kind whose log word is `word`, or PX_KIND__COUNT. */
px_kind polite__px_kind_of_word(const char *word);

typedef struct px_state px_state;

px_state *polite__px_state_new(void);
void polite__px_state_free(px_state *s);

/* Applies o to a new state (before its first request). */
void polite__px_track_setup(px_state *s, const px_track_opts *o);

/* The judge. A client is a connection `conn` ("ADDR:PORT"), or all the
 * connections of one identity: its address and credentials (`who`, the
 * report's "client") and its User-Agent (`ua`). A told wait follows its
 * client to another connection of the identity when the client reconnects
 * (its connection closed), and, once the identity has shown for a while
 * that it uses one connection at a time (a pool), to any of its
 * connections. An identity whose requests keep alternating between
 * connections holds several clients (threads each on its own connection):
 * from then on each connection is a client of its own. Nothing already
 * found is taken back (docs/proxy.md, "The early-retry judge"). */
typedef enum {
  PX_JUDGE_OK = 0,       /* nothing pending for this client and key */
  PX_JUDGE_EARLY = 1,    /* told a wait on this key that has not passed */
  PX_JUDGE_THROTTLED = 2 /* never told, but the key is throttled */
} px_verdict;

typedef struct {
  px_verdict verdict;
  int64_t remaining_ms; /* EARLY, THROTTLED: the wait left (> 0); EARLY
                           under --penalty: the whole wait told before */
  uint64_t client;      /* logical client id, for retry chains (never 0) */
  int across;           /* EARLY: the wait was told on another connection
                           of the client */
} px_judgement;

/* Judges a request on `key` arriving at now_ms (monotonic) on connection
 * `conn` (`handle`: the engine's handle of it for the probe, -1 none) from
 * identity who + ua (ua may be NULL). key NULL: the request is only noted
 * (its client and connection), never judged. Never moves a deadline
 * (polite__px_tell with PX_TELL_RESTART does, for --penalty). */
void polite__px_judge(px_state *s, const char *key, const char *conn,
                      int handle, const char *who, const char *ua,
                      int64_t now_ms, int penalty, px_judgement *out);

/* How the judge learns that a told client's connection has closed when the
 * server was not told: alive(ctx, conn, handle) returns 0 for a closed one.
 * NULL: only polite__px_conn_closed says so. */
void polite__px_conn_probe(px_state *s,
                           int (*alive)(void *ctx, const char *conn,
                                        int handle),
                           void *ctx);

#define PX_TELL_THROTTLE 1 /* the answer throttles the key for everybody */
#define PX_TELL_RESTART 2  /* replace the client's pending deadline */

/* Remembers that the client was told to wait wait_ms by an answer that left
 * the proxy at sent_ms. A client's pending deadline is kept as it was
 * (unless PX_TELL_RESTART); the key's throttle only grows. */
void polite__px_tell(px_state *s, const char *key, const char *conn,
                     const char *who, int64_t sent_ms, int64_t wait_ms,
                     int flags);

/* A client connection was accepted at now_ms (monotonic): a fresh
 * connection opened before a wait was told is not the told client coming
 * back. The flow calls it for every connection it accepts. */
void polite__px_conn_opened(px_state *s, const char *conn, int64_t now_ms);

/* The connection closed: a pending deadline of its client can pass to the
 * client's next connection. */
void polite__px_conn_closed(px_state *s, const char *conn);

/* Per-key objects of the limits (px_decide.c): one table each. */
typedef enum {
  PX_TAB_LIMIT = 0,  /* px_lim per rate-limit scope key */
  PX_TAB_CONC = 1,   /* in-flight count per concurrency scope key */
  PX_TAB_QUOTA = 2,  /* px_quota (one, key "quota") */
  PX_TAB_TOKENS = 3, /* px_tok (one, key "tokens") */
  PX_TAB__COUNT
} px_table;

/* At most this many keys per table; beyond, new keys are not limited. */
#define PX_KEYED_MAX 100000

/* The object stored for key in table t, or NULL. */
void *polite__px_keyed(px_state *s, px_table t, const char *key);
/* Stores obj (owned from now on, freed with destroy) for a key not yet
 * present. Returns obj, or NULL (obj destroyed) when out of memory or the
 * table is full. */
void *polite__px_keyed_put(px_state *s, px_table t, const char *key, void *obj,
                           void (*destroy)(void *));

/* Records an early retry (wall_ms for the report's "time"; across as the
 * judgement said). */
void polite__px_early_record(px_state *s, int64_t wall_ms, const char *key,
                             const char *client, const char *conn,
                             const char *method, const char *url,
                             int64_t early_ms, int across);

/* What a record is: the report counts requests only. */
typedef enum {
  PX_REC_REQUEST = 0,
  PX_REC_CONNECT = 1, /* a CONNECT: the requests inside it are counted */
  PX_REC_OWN = 2      /* a call to the proxy's own /__polite/ endpoints,
                         also one that reached it through itself */
} px_rec_class;

/* The class of a record (or of a log line) from its method and URL. */
px_rec_class polite__px_record_class(const char *method, const char *url);

/* One finished request, for the stats. */
typedef struct {
  const char *method, *url;
  const char *who; /* the report's client (address + auth hash) */
  uint64_t client; /* logical client id from the judge */
  int status;
  px_kind kind;
} px_record;

/* Records one finished request: per-URL and per-client counters and the
 * client's retry chain (consecutive requests of one client to method+url
 * whose previous answer was 429/503). CONNECTs and own endpoint calls are
 * counted apart, never as requests. */
void polite__px_stats_record(px_state *s, const px_record *rec);

/* The report as JSON text (caller frees) / markdown into f. started_wall_ms
 * and now_wall_ms give the report's time span. */
char *polite__px_report_json(const px_state *s, int64_t started_wall_ms,
                             int64_t now_wall_ms);
void polite__px_report_md(const px_state *s, FILE *f, int64_t started_wall_ms,
                          int64_t now_wall_ms);

/* ---- Metrics (px_metrics.c) ---------------------------------------------- */

/* Upstream latency histogram bounds, seconds (plus +Inf). */
#define PX_LAT_BUCKETS 11

typedef struct {
  int64_t in_flight;  /* requests arrived, not finished */
  uint64_t lat_count; /* upstream answers timed */
  double lat_sum_s;
  uint64_t lat_bucket[PX_LAT_BUCKETS]; /* non-cumulative counts */
  uint64_t lat_over;                   /* above the last bound */
} px_metrics;

/* The state's metrics (owned by it). */
px_metrics *polite__px_metrics(px_state *s);
/* Counts one upstream latency (time to the answer's head), us. */
void polite__px_metrics_latency(px_metrics *m, int64_t us);
/* Requests recorded of one kind. */
uint64_t polite__px_kind_count(const px_state *s, px_kind k);
/* Prometheus text exposition format 0.0.4 of the state (caller frees). */
char *polite__px_metrics_text(px_state *s);

/* Number of requests recorded so far (all kinds). */
uint64_t polite__px_requests(const px_state *s);

#endif
