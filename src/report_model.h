/* polite report: the data model of a run, aggregated from attempt logs (or
 * fed live by `polite run --report`) into bounded time buckets. */
#ifndef POLITE_REPORT_MODEL_H
#define POLITE_REPORT_MODEL_H

#include <polite/batch.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Buckets kept while reading: when a log spans more, neighbours merge and the
 * bucket width doubles, so memory and the page stay the same size whatever
 * the log's length. */
#define RP_BUCKETS 256
#define RP_BASE_WIDTH_MS 125
/* 429/503 senders drawn with their own marker; the rest share "other". */
#define RP_MARKED 6
/* Sender + limit pairs counted in the summary (as polite run does). */
#define RP_PAIRS 32
/* Server pauses kept as exact intervals; beyond, the closest two merge. */
#define RP_PAUSES 2048
/* Logs read into one page, and bad lines quoted by file:line. */
#define RP_SOURCES 64
#define RP_BAD_QUOTED 20
/* Latency and retry-wait histogram bins (1-2-5 series from 1 ms). */
#define RP_HIST 17
/* Outcomes, in polite run's order, and "unknown" last (a name this build
 * does not know). */
#define RP_OUTCOMES (POLITE_OUT_COUNT + 1)

typedef enum { RP_ACT_DONE, RP_ACT_RETRY, RP_ACT_STOP } rp_action;

/* One network attempt (a line of the attempt log, or polite_attempt).
 * Strings are borrowed for the call. */
typedef struct {
  int64_t start_ms, end_ms; /* Unix ms */
  unsigned attempt;         /* 1-based */
  int status;               /* 0: no response */
  rp_action action;
  const char *reason;     /* "server", "prompt", "backoff" or an outcome */
  int64_t wait_ms;        /* chosen wait before the next attempt; -1 none */
  int64_t server_wait_ms; /* the server's minimum; -1 none */
  int account_pause;
  const char *component; /* diagnosis sender, NULL when none */
  const char *limit;     /* diagnosis limit kind, NULL when none */
} rp_attempt;

/* What a run planned (the log's "run" event). -1 / 0 when not known. */
typedef struct {
  double rate_per_s; /* planned rate units/s; 0: learned or none */
  long concurrency;  /* 0: unknown */
  long max_attempts;
  long burst;
  int64_t started_wall_ms;
  int64_t deadline_ms; /* per request; -1 none */
} rp_run;

typedef struct {
  const char *outcome;
  unsigned attempts;
  unsigned cost; /* rate units per attempt */
} rp_result;

/* One time bucket. Requests in flight are kept as a piecewise-linear
 * integral: counts of intervals starting/ending in the bucket and their
 * offsets from the bucket's end, which merge exactly when buckets do. */
typedef struct {
  uint64_t first, retry;       /* attempt starts */
  uint64_t thr[RP_MARKED + 1]; /* 429/503 answers per marked sender */
  uint64_t n429, n503;         /* answers ending here */
  uint64_t iv_start, iv_end;   /* attempt intervals starting/ending */
  double off_start, off_end;   /* sum of (bucket end - time), ms */
  double rate;                 /* learned rate set in this bucket */
  int64_t rate_ms;             /* when (valid with has_rate) */
  int has_rate;
} rp_bucket;

typedef struct {
  int64_t from, to;
} rp_span;

typedef struct {
  char name[256];
  uint64_t lines, attempts, results, bad;
  rp_run run;
  int has_run;
  int64_t first_ms, last_ms, end_ms; /* end_ms: "end" event, -1 none */
  uint64_t gaps;     /* gaps between its starts with no server pause */
  double gap_sum_ms; /* and their sum */
  unsigned peak_in_flight;
} rp_source;

typedef struct {
  char component[40];
  char limit[16];
  uint64_t count;
} rp_pair;

typedef struct rp_model rp_model;

struct rp_model {
  /* the timeline */
  rp_bucket b[RP_BUCKETS];
  int64_t origin, width; /* ms; origin is a multiple of width */
  int nb;                /* buckets in use */
  /* pauses (sorted, disjoint) */
  rp_span pause[RP_PAUSES];
  size_t npause;
  int pauses_merged; /* 1 when close pauses were joined to stay bounded */
  /* totals */
  uint64_t attempts, first_attempts, retries, n429, n503, units;
  uint64_t results, by_outcome[RP_OUTCOMES];
  uint64_t final_by_outcome[RP_OUTCOMES]; /* from attempts, no result lines */
  uint64_t retry_by_reason[3];            /* server, prompt, backoff */
  int64_t wait_by_reason[3];
  uint64_t wait_hist[3][RP_HIST];
  uint64_t lat_hist[RP_HIST];
  int64_t retry_wait_ms;
  double latency_sum_ms;
  int64_t first_start, last_start, last_end;
  uint64_t rate_events;
  double rate_min, rate_max, rate_last;
  /* senders */
  char marked[RP_MARKED][40];
  int nmarked;
  rp_pair pairs[RP_PAIRS];
  size_t npairs;
  /* measured start spacing (per source, in start order) */
  uint64_t gaps, paused_gaps;
  double gap_sum_ms;
  /* sources and bad lines */
  rp_source src[RP_SOURCES];
  int nsrc;
  uint64_t bad_lines, unknown_events;
  char bad_quoted[RP_BAD_QUOTED][300];
  int nbad_quoted;
  void *sweep; /* per-source reorder window (report_model.c) */
};

/* Allocates an empty model (NULL when out of memory). */
rp_model *rp_model_new(void);
void rp_model_free(rp_model *m);

/* Starts a new source (a log file, or a live run) named `name`; ends the
 * previous one. Returns 0, or -1 beyond RP_SOURCES. */
int rp_model_source(rp_model *m, const char *name);
/* Ends the current source (flushes its start-order window). */
void rp_model_source_end(rp_model *m);

void rp_model_attempt(rp_model *m, const rp_attempt *a);
void rp_model_result(rp_model *m, const rp_result *r);
void rp_model_run(rp_model *m, const rp_run *r);
void rp_model_rate(rp_model *m, int64_t wall_ms, double rate_per_s);
void rp_model_end(rp_model *m, int64_t wall_ms);

/* Counts one malformed line; quotes the first RP_BAD_QUOTED as
 * "FILE:LINE: why" and prints each on stderr. */
void rp_model_bad_line(rp_model *m, long lineno, const char *why);

/* Parses one attempt-log line (JSON object) and feeds it to the model:
 * attempts, and the "run", "result", "rate" and "end" events; unknown
 * events and fields are ignored. Returns 0, or -1 for a malformed line
 * (counted with rp_model_bad_line). */
int rp_model_feed_line(rp_model *m, const char *line, size_t len, long lineno);

/* Reads a whole log (streaming, one line at a time). Returns 0, or -1 when
 * the file cannot be read (message in err). */
int rp_model_read_file(rp_model *m, const char *path, char *err, size_t n);

/* Lower edge in ms of histogram bin k+1 (bins: < 1 ms, 1-2, 2-5, ...,
 * >= 100 s); -1 past the last. */
int64_t rp_hist_edge(int k);
/* The histogram bin of a duration in ms. */
int rp_hist_bin(int64_t ms);

/* Index of an outcome name in polite run's order ("unknown" last). */
int rp_outcome_index(const char *name);
const char *rp_outcome_name(int i);

/* Figures derived for the summary table (all from the model). */
typedef struct {
  double run_s;            /* first start to the end of the run */
  double measured_rate;    /* starts/s over gaps without a server pause,
                              summed over the logs (hosts run at once) */
  double mean_latency_ms;  /* per attempt */
  double mean_in_flight;   /* over first start .. end of run */
  double little;           /* measured rate x mean latency */
  double planned_rate;     /* --rate units/s (0: none) */
  double mean_cost;        /* units per attempt */
  double start_plan;       /* planned starts/s = rate / mean cost */
  long concurrency;        /* limit (largest of the logs), 0 unknown */
  unsigned peak_in_flight; /* largest of the logs */
  int64_t paused_ms;       /* union of the server pauses */
  int have_results;        /* outcomes come from result lines */
} rp_derived;

void rp_model_derive(const rp_model *m, rp_derived *d);

/* Coarsens the timeline until buckets are at least min_width_ms wide. */
void rp_model_coarsen_to(rp_model *m, int64_t min_width_ms);

/* Requests in flight in bucket i: the mean over the bucket. */
double rp_bucket_in_flight(const rp_model *m, int i, double *active_io);

#endif
