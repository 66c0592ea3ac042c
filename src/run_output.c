/* polite run: one JSON result line per request, body files, and what
 * happens when the results file cannot be written. */
#define _GNU_SOURCE
#include "run_output.h"

#include "http_syntax.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Length of a valid UTF-8 sequence at p[0..n), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  size_t len = c < 0x80         ? 1
               : (c >> 5) == 6  ? 2
               : (c >> 4) == 14 ? 3
               : (c >> 3) == 30 ? 4
                                : 0;
  if (len == 0 || len > n)
    return 0;
  for (size_t k = 1; k < len; k++)
    if ((p[k] & 0xc0) != 0x80)
      return 0;
  if (len > 1) { /* overlong forms and surrogates: jansson decides */
    json_t *t = json_stringn((const char *)p, len);
    if (t == NULL)
      return 0;
    json_decref(t);
  }
  return len;
}

json_t *run_text_json(const char *s, size_t n) {
  json_t *j = json_stringn(s, n);
  if (j)
    return j;
  char *buf = malloc(n * 3 + 1);
  if (buf == NULL)
    return json_string("");
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    size_t len = utf8_len(p + i, n - i);
    if (len > 0) {
      memcpy(buf + o, s + i, len);
      o += len;
      i += len;
    } else {
      memcpy(buf + o, "\xef\xbf\xbd", 3);
      o += 3;
      i++;
    }
  }
  j = json_stringn(buf, o);
  free(buf);
  return j ? j : json_string("");
}

json_t *run_redacted_url_json(const char *s) {
  char *r = polite_redact_url(s);
  json_t *j = run_text_json(r ? r : "", r ? strlen(r) : 0);
  free(r);
  return j;
}

json_t *run_redacted_text_json(const char *s) {
  char *r = polite_redact_text(s);
  json_t *j = run_text_json(r ? r : "", r ? strlen(r) : 0);
  free(r);
  return j;
}

char *run_body_name(const char *id) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = 0, len = strlen(id);
  if (len > RUN_BODY_NAME_MAX)
    return NULL;
  char *name = malloc(len * 3 + 2);
  if (name == NULL)
    return NULL;
  if (len == 0) /* "%" alone decodes to nothing else: the empty id */
    name[n++] = '%';
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)id[i];
    int keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
               (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
               (ch == '.' && i > 0);
    if (keep) {
      name[n++] = (char)ch;
    } else {
      name[n++] = '%';
      name[n++] = hex[ch >> 4];
      name[n++] = hex[ch & 15];
    }
  }
  name[n] = '\0';
  if (n > RUN_BODY_NAME_MAX) {
    free(name);
    return NULL;
  }
  return name;
}

/* 1 when path is a symbolic link to a stream polite may write through
 * (a character device, a FIFO or a socket: /dev/stdout, /dev/fd/N for a
 * shell's process substitution, /dev/null). */
static int link_to_stream(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 &&
         (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

int run_output_path_check(const char *what, const char *path, char *err,
                          size_t len) {
  char target[256];
  if (path == NULL || !polite__symlink_at(path, target, sizeof target) ||
      link_to_stream(path))
    return 0;
  struct stat t;
  snprintf(err, len,
           "%s '%s' is a symbolic link to %s'%s': polite writes no file "
           "through a symbolic link (only to a stream such as /dev/stdout); "
           "give the target's path",
           what, path, stat(path, &t) != 0 ? "a missing file " : "", target);
  return -1;
}

FILE *run_output_open(const char *path, int append) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  int fd = open(path, flags | O_NOFOLLOW, 0666);
  if (fd < 0 && errno == ELOOP && link_to_stream(path))
    fd = open(path, flags, 0666);
  if (fd < 0)
    return NULL;
  FILE *f = fdopen(fd, append ? "a" : "w");
  if (f == NULL) {
    int e = errno;
    close(fd);
    errno = e;
  }
  return f;
}

/* The first failed result write without a journal: stops new starts
 * (cancel), drops what stdio still buffers (it would be written after the
 * cut or fail again) and cuts a partial line back to the last complete one,
 * so the file holds only whole result lines. op NULL: the file is gone or
 * was replaced (err says which). */
static void out_fail(run_output *c, const char *op, int err) {
  c->out_failed = 1;
  c->out_op = op;
  c->out_errno = err;
  c->out_error = 1;
  c->out_unwritten++;
  if (c->batch)
    polite_batch_cancel(c->batch);
  __fpurge(c->out);
  struct stat st;
  if (op && c->out_regular && fstat(fileno(c->out), &st) == 0 &&
      st.st_size > c->out_good &&
      ftruncate(fileno(c->out), (off_t)c->out_good) == 0)
    c->out_torn_removed = 1;
}

/* 1 when the --out path still names the file the run opened: writes to a
 * removed file would vanish without an error. */
static int out_intact(run_output *c) {
  if (!c->out_regular)
    return 1;
  struct stat now;
  if (stat(c->out_name, &now) != 0) {
    out_fail(c, NULL, errno);
    return 0;
  }
  if (now.st_dev != c->out_st.st_dev || now.st_ino != c->out_st.st_ino) {
    out_fail(c, NULL, 0);
    return 0;
  }
  return 1;
}

/* Writes one result line. Without a journal a failure stops the run here;
 * with one, the journal wrapper sees ferror and stops it (its message). */
static void write_line(run_output *c, const char *s) {
  if (!c->journal && !out_intact(c))
    return; /* out_fail counted this line as unwritten */
  size_t len = strlen(s);
  errno = 0;
  if (fwrite(s, 1, len, c->out) != len || fputc('\n', c->out) == EOF) {
    if (c->journal)
      c->out_error = 1;
    else
      out_fail(c, "write", errno);
    return;
  }
  if (fflush(c->out) != 0) {
    if (c->journal)
      c->out_error = 1;
    else
      out_fail(c, "flush", errno);
    return;
  }
  c->out_good += (long long)len + 1;
  c->out_lines++;
}

/* Writes the body to --bodies-dir and sets "body_file", or leaves it in the
 * line as "body" when the id makes no file name. */
static void put_body(run_output *c, json_t *o, const polite_result *r) {
  char *name = c->bodies_dir ? run_body_name(r->req->id) : NULL;
  if (name == NULL) {
    json_object_set_new(
        o, "body", r->body ? run_text_json(r->body, r->body_len) : json_null());
    return;
  }
  char *path = NULL;
  FILE *f = NULL;
  if (asprintf(&path, "%s/%s", c->bodies_dir, name) >= 0)
    f = run_output_open(path, 0); /* a link planted there is refused */
  else
    path = NULL;
  /* fclose runs exactly once whatever happens: closing again after a
     failed fclose would be undefined behaviour. */
  int ok = f && fwrite(r->body, 1, r->body_len, f) == r->body_len;
  if (f && fclose(f) != 0)
    ok = 0;
  if (ok) {
    json_object_set_new(o, "body_file", run_text_json(path, strlen(path)));
  } else {
    fprintf(stderr, "polite run: cannot write body file %s: %s\n",
            path ? path : "(none)", strerror(errno));
    json_object_set_new(o, "body_file", json_null());
    c->body_errors++;
  }
  free(path);
  free(name);
}

char *run_output_line(run_output *c, const polite_result *r) {
  json_t *o = json_object();
  json_object_set_new(o, "id", run_text_json(r->req->id, strlen(r->req->id)));
  json_object_set_new(o, "method", run_text_json(r->method, strlen(r->method)));
  json_object_set_new(
      o, "url", r->req->url ? run_redacted_url_json(r->req->url) : json_null());
  json_object_set_new(o, "status",
                      r->status ? json_integer(r->status) : json_null());
  json_object_set_new(o, "outcome",
                      json_string(polite_outcome_name(r->outcome)));
  json_object_set_new(o, "attempts", json_integer(r->attempts));
  json_object_set_new(o, "elapsed_ms", json_integer(r->elapsed_ms));
  if (r->body != NULL && c->bodies_dir != NULL)
    put_body(c, o, r);
  else
    json_object_set_new(
        o, "body", r->body ? run_text_json(r->body, r->body_len) : json_null());
  if (r->body_truncated)
    json_object_set_new(o, "body_truncated", json_true());
  if (r->error)
    json_object_set_new(o, "error", run_redacted_text_json(r->error));
  json_object_set_new(o, "line",
                      r->req->line ? json_integer(r->req->line) : json_null());
  char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  return s;
}

void run_output_write(run_output *c, const char *line) {
  if (!c->journal && c->out_failed)
    c->out_unwritten++;
  else
    write_line(c, line);
}

void run_output_result(void *ud, const polite_result *r) {
  run_output *c = ud;
  if (!c->journal && c->out_failed) {
    c->out_unwritten++; /* stopped: no line, and no body file either */
    return;
  }
  char *s = run_output_line(c, r);
  if (s) {
    write_line(c, s);
    free(s);
  } else if (!c->journal) {
    out_fail(c, "write", ENOMEM);
  }
}

void run_output_report(const run_output *c) {
  if (!c->out_failed)
    return;
  const char *name = c->out_name ? c->out_name : "standard output";
  if (c->out_op)
    fprintf(stderr, "polite run: cannot write the results file '%s' (%s): %s\n",
            name, c->out_op,
            c->out_errno ? strerror(c->out_errno) : "write error");
  else if (c->out_errno)
    fprintf(stderr,
            "polite run: the results file '%s' is gone (%s) while the run "
            "was writing it\n",
            name, strerror(c->out_errno));
  else
    fprintf(stderr,
            "polite run: the results file '%s' was replaced by another file "
            "while the run was writing it\n",
            name);
  fprintf(stderr,
          "polite run: stopped: nothing new was started after that; the "
          "%llu line(s) written before are kept%s; %llu request(s) read "
          "have no result line (unread input lines were not run)\n",
          (unsigned long long)c->out_lines,
          c->out_torn_removed ? " (a partial line was removed)" : "",
          (unsigned long long)c->out_unwritten);
}
