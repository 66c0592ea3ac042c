/* polite request: one logical HTTP request and the streaming input format
 * (one request per line, a URL or a JSON object; docs/input-format.md) that
 * `polite run`, the work queue and the journal read requests from. */
#ifndef POLITE_REQUEST_H
#define POLITE_REQUEST_H

#include <polite/core.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One logical request. All strings are owned by the request (malloc'ed) and
 * freed by polite_request_free. */
typedef struct {
  char *id;     /* "line-N" when the input gave none; never NULL once parsed */
  char *method; /* NULL: GET, or POST when a body is present */
  char *url;    /* http:// or https:// */
  char **headers; /* "Name: value" */
  size_t nheaders;
  char *body; /* may contain NUL bytes; body_len says how long */
  size_t body_len;
  int has_body;
  char *idempotency_key; /* NULL when none */
  long line;             /* 1-based input line, 0 when not from input */
  char *error;   /* non-NULL: the line is invalid; this message (with the
                    field and value, secrets redacted) becomes an
                    `invalid_input` result and nothing is sent */
  unsigned cost; /* budget rate units each attempt spends (input field
                    "cost", --cost); 0 means 1. An attempt holds one
                    concurrency slot whatever its cost. */
  unsigned max_attempts; /* network attempts for this request, capped by
                            the run's max_attempts; 0: the run's. 1 means
                            never retried (a gateway request whose body was
                            streamed once and not kept) */
  void *user;            /* the caller's own pointer (a gateway's client
                            connection): never read or freed by polite, copied by
                            polite_request_dup */
} polite_request;

/* Largest accepted cost (input field "cost", --cost). */
#define POLITE_REQUEST_MAX_COST 1000000000u

POLITE_EXTERN polite_request *polite_request_new(void);
POLITE_EXTERN polite_request *polite_request_dup(const polite_request *r);
POLITE_EXTERN void polite_request_free(polite_request *r);
/* Appends "name: value". Returns 0 or POLITE_ENOMEM / POLITE_EINVAL (a name
 * that is not an HTTP token, a value with CR, LF or NUL). */
POLITE_EXTERN int polite_request_add_header(polite_request *r, const char *name,
                                            const char *value);
/* 1 when r has a header line named name (ASCII case-insensitive), else 0. */
POLITE_EXTERN int polite_request_has_header(const polite_request *r,
                                            const char *name);
/* The request's method as sent: method, else POST with a body, else GET. */
POLITE_EXTERN const char *polite_request_method(const polite_request *r);

/* Settings that apply to every input line, like curl's -X, -H and -d. A
 * line's own method/body win; -H headers are sent first and a line header
 * with the same name replaces them. -d without -X makes a line without a
 * method a POST (curl's rule). The arrays are borrowed, not copied. */
typedef struct {
  const char *method;         /* -X; NULL for none */
  const char *const *headers; /* -H "Name: value" */
  size_t nheaders;
  const char *body; /* -d; NULL for none */
  size_t body_len;
  unsigned cost; /* --cost for lines that give none; 0 means 1 */
} polite_input_defaults;

/* Parses one input line (without the newline; a trailing CR is ignored).
 * Returns 0 for a line to skip (blank, '#' comment), 1 with *out set (check
 * (*out)->error for an invalid line), or POLITE_ENOMEM. `def` may be NULL. */
POLITE_EXTERN int polite_request_parse_line(const char *line, size_t len,
                                            long lineno,
                                            const polite_input_defaults *def,
                                            polite_request **out);

/* Streaming reader over a FILE (borrowed, not closed). Reads one line per
 * call, so memory stays flat whatever the input size. Lines longer than
 * POLITE_INPUT_MAX_LINE become invalid_input. */
#define POLITE_INPUT_MAX_LINE (1024 * 1024)
typedef struct polite_input polite_input;
POLITE_EXTERN polite_input *polite_input_open(FILE *f,
                                              const polite_input_defaults *def);
/* 1 and *out (owned by the caller), 0 at end of input, or POLITE_EIO /
 * POLITE_ENOMEM. */
POLITE_EXTERN int polite_input_next(polite_input *in, polite_request **out);
/* Lines read so far (including skipped ones). */
POLITE_EXTERN long polite_input_lines(const polite_input *in);
/* The text of the line the last polite_input_next returned (without its
 * line end; line 1 without a byte order mark), *len bytes, valid until the
 * next call; NULL for a line longer than POLITE_INPUT_MAX_LINE. The work
 * queue stores lines as they were written, for workers to parse with their
 * own -X, -H and -d. */
POLITE_EXTERN const char *polite_input_line(const polite_input *in,
                                            size_t *len);
/* Gives a request whose id is its line's default ("line-N") the stable id
 * "line-N-XXXXXXXX": the first 8 hex digits of the SHA-256 of its method,
 * URL, body and error (NUL-separated), so that an edited input never
 * matches another request's record. Other ids are left alone. The journal
 * and the work queue name requests this way. Returns 0 or POLITE_ENOMEM. */
POLITE_EXTERN int polite_request_stable_id(polite_request *q);
POLITE_EXTERN void polite_input_close(polite_input *in);

#ifdef __cplusplus
}
#endif

#endif
