/* The zoo's scenarios: one row per limiter shape, each run with 1, 2 and
 * 4 processes. The parameters are those of the software each row
 * stands for (nginx limit_req burst=1, express-rate-limit's fixed window,
 * Cloudflare's counter, nginx limit_conn); the request counts give every
 * row a floor of 30-120 s, long enough that learning is a share of the
 * run and not the whole of it. */
#include "sim.h"

#define MS INT64_C(1000)
#define S SIM_SEC
#define LAT (100 * MS)

/* clang-format off */
const sim_scenario sim_scenarios[] = {
  {"leaky-bucket", "nginx limit_req 40 r/s burst=1 nodelay, Retry-After 1",
   {ZOO_GCRA, 40, 2, 0, 0, 0, 0, 1, LAT, 10 * MS, {0}, {0}, 0, 0, 0}, 1200, 8},
  {"leaky-bucket-fast", "nginx limit_req 20 r/s burst=1 before a static "
   "file (2 ms), Retry-After 1",
   {ZOO_GCRA, 20, 2, 0, 0, 0, 0, 1, 2 * MS, 1 * MS, {0}, {0}, 0, 0, 0}, 600, 8},
  {"token-bucket", "a token bucket of 40 filled at 20/s, Retry-After 1",
   {ZOO_GCRA, 20, 40, 0, 0, 0, 0, 1, LAT, 10 * MS, {0}, {0}, 0, 0, 0}, 640, 8},
  {"fixed-window-headers",
   "100 per 5 s fixed window with IETF RateLimit headers, Retry-After to the "
   "window's end",
   {ZOO_FIXED, 0, 0, 100, 5 * S, 0, 1, ZOO_RA_WINDOW, LAT, 10 * MS, {0}, {0}, 0, 0, 0},
   1200, 8},
  {"fixed-window", "100 per 5 s fixed window, no headers, no Retry-After",
   {ZOO_FIXED, 0, 0, 100, 5 * S, 0, 0, ZOO_RA_NONE, LAT, 10 * MS, {0}, {0}, 0, 0, 0},
   1200, 8},
  {"fixed-window-anchored",
   "100 per 5 s, each window opened by the first request after the last "
   "ended (express-rate-limit's memory store), no headers, no Retry-After",
   {ZOO_FIXED, 0, 0, 100, 5 * S, 0, 0, ZOO_RA_NONE, LAT, 10 * MS, {0}, {0},
    1, 0, 0},
   1200, 8},
  {"sliding-log", "at most 40 in any 1 s (a sliding log), Retry-After 1",
   {ZOO_SLIDING_LOG, 0, 0, 40, 1 * S, 0, 0, 1, LAT, 10 * MS, {0}, {0}, 0, 0, 0}, 1200,
   8},
  {"sliding-counter",
   "40 per 1 s sliding-window counter that counts refused requests, "
   "Retry-After 1",
   {ZOO_SLIDING_COUNTER, 0, 0, 40, 1 * S, 0, 0, 1, LAT, 10 * MS, {0}, {0}, 0, 0, 0},
   1200, 8},
  {"concurrency", "4 in flight (nginx limit_conn), 100 ms +- 30 ms, no "
   "Retry-After",
   {ZOO_CONCURRENCY, 0, 0, 0, 0, 4, 0, ZOO_RA_NONE, LAT, 30 * MS, {0}, {0}, 0, 0, 0},
   1200, 8},
  {"shared-steady", "40 r/s burst=1 shared with another caller at 10/s",
   {ZOO_GCRA, 40, 2, 0, 0, 0, 0, 1, LAT, 10 * MS, {0}, {1, 100 * MS, 0}, 0, 0, 0}, 900,
   8},
  /* The other caller's bursts need a limiter that holds them: against
   * burst=1 a burst of 20 is refused but for two, and the row would be
   * the steady one. */
  {"shared-bursty",
   "a token bucket of 40 at 40/s shared with another caller sending 20 at "
   "once every 2 s",
   {ZOO_GCRA, 40, 40, 0, 0, 0, 0, 1, LAT, 10 * MS, {0}, {20, 2 * S, 0}, 0, 0, 0}, 900,
   8},
  {"halve-double", "40 r/s burst=1, halved at 20 s, doubled back at 50 s",
   {ZOO_GCRA, 40, 2, 0, 0, 0, 0, 1, LAT, 10 * MS,
    {20 * S, 50 * S, 0.5, 2.0}, {0}, 0, 0, 0}, 1800, 8},
  {"retry-after-10", "40 r/s burst=1 answering Retry-After 10",
   {ZOO_GCRA, 40, 2, 0, 0, 0, 0, 10, LAT, 10 * MS, {0}, {0}, 0, 0, 0}, 4800, 8},
  {"retry-after-absent", "40 r/s burst=1 answering 429 with no Retry-After",
   {ZOO_GCRA, 40, 2, 0, 0, 0, 0, ZOO_RA_NONE, LAT, 10 * MS, {0}, {0}, 0, 0, 0}, 1200,
   8},
};
/* clang-format on */

const unsigned sim_n_scenarios = sizeof sim_scenarios / sizeof sim_scenarios[0];
