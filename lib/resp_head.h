/* polite: what one answer's head (status line and header fields) says, as
 * the scheduler needs it, collected once as the fields arrive (internal;
 * not installed). Both transports use it: lib/batch.c feeds libcurl's raw
 * header lines, lib/engine.c the fields another program's parser gives. */
#ifndef POLITE_RESP_HEAD_H
#define POLITE_RESP_HEAD_H

#include "scheduler.h"

#include <polite/diagnose.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest Location value kept (longer ones are cut). */
#define POLITE__HEAD_MAX_LOCATION 8192

typedef struct {
  int status;
  polite_headers ph;
  char retry_after[128];
  int has_retry_after;
  char reqid[128];
  char reqid_name[64];
  char *location; /* malloc'ed, or NULL */
  /* The diagnosis of a 429/503 answer: allocated only when a status says
   * 429 or 503, so memory stays flat however many requests wait (it is
   * ~3.5 KiB), and kept for the next one. */
  polite_diagnosis *diag;
  int diag_on; /* the current answer is a 429/503 being diagnosed */
} polite__head;

/* A new answer begins with `status` (also after 100-continue): forgets the
 * last one's fields (keeping the diagnosis buffer), and diagnoses this one
 * when it is a 429 or 503. wall_ms turns resets and dates into waits. */
void polite__head_begin(polite__head *h, int status, int64_t wall_ms);
/* One header field (name without the colon; the value with or without
 * surrounding whitespace). A name that is not an HTTP token is ignored. */
void polite__head_field(polite__head *h, const char *name, size_t nlen,
                        const char *value, size_t vlen);
/* One raw header line "Name: value" (CR/LF allowed at the end); lines that
 * are not header fields are ignored. */
void polite__head_line(polite__head *h, const char *line, size_t len);
/* Points r's head members (status, headers, retry_after, request id,
 * location, diag) at h: valid while h is unchanged. The body and the
 * transport error are left to the caller. */
void polite__head_response(polite__head *h, polite__response *r);
/* Frees what h holds (h itself is the caller's). */
void polite__head_free(polite__head *h);

#ifdef __cplusplus
}
#endif

#endif
