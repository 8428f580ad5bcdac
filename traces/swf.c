/*
 * Reader for the Standard Workload Format (SWF) of the Parallel Workloads
 * Archive (Feitelson et al.): one job per line, 18 whitespace-separated
 * numbers, header and remarks on lines starting with ';'. A gzip-compressed
 * file (".swf.gz", as the archive ships them) is read directly through
 * zlib, which passes plain files through unchanged.
 *
 * The 18 fields, in order (-1 = not known): job_number, submit_time,
 * wait_time, run_time, allocated_processors, average_cpu_time, used_memory,
 * requested_processors, requested_time, requested_memory, status, user_id,
 * group_id, executable, queue, partition, preceding_job, think_time.
 *
 * Mapping to a job record (README "Traces" says the same):
 *   name        = job_number (as written)
 *   submit      = submit_time (seconds from the log's start)
 *   duration    = run_time; when run_time is -1, requested_time, and the
 *                 job is flagged TRACE_JOB_ESTIMATED_DURATION
 *   req_s       = requested_time in whole seconds rounded up (0 when -1 or
 *                 0): the job's own estimate for --estimates trace
 *   processors  = allocated_processors, or requested_processors when the
 *                 former is -1 or 0
 *   num_gpu     = ceil(processors x R), R = --swf-gpus-per-proc (default
 *                 1), at least 1; gpu_milli = 1000 (whole GPUs)
 *   cpu_milli, memory_mib = 0 (an SWF log describes CPU machines: its
 *                 processors become GPUs, nothing else is constrained)
 *   gpu_spec    = any model; qos unknown
 * Skipped (counted in trace.skipped, not errors): status 2, 3, 4 (lines of
 * a checkpointed job's partial executions: its summary line, status 0 or
 * 1, carries the whole job), status 5 (cancelled) with no positive
 * run_time (cancelled before it started), jobs with no processor count,
 * and jobs with neither run_time nor requested_time.
 * Every field must be a number; the fields used are validated and the
 * first bad one stops the load with "FILE:LINE: field 'NAME': ...".
 */
#include "trace_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define SWF_FIELDS 18
/* Longer lines are rejected: real logs have lines under 200 bytes. */
#define SWF_LINE_MAX ((size_t)1 << 20)
/* Most GPUs one job may get (as the Alibaba reader). */
#define SWF_MAX_GPUS 1000000

static const char *const swf_names[SWF_FIELDS] = {"job_number",
                                                  "submit_time",
                                                  "wait_time",
                                                  "run_time",
                                                  "allocated_processors",
                                                  "average_cpu_time",
                                                  "used_memory",
                                                  "requested_processors",
                                                  "requested_time",
                                                  "requested_memory",
                                                  "status",
                                                  "user_id",
                                                  "group_id",
                                                  "executable",
                                                  "queue",
                                                  "partition",
                                                  "preceding_job",
                                                  "think_time"};

enum {
  F_JOB = 0,
  F_SUBMIT = 1,
  F_RUN = 3,
  F_ALLOC = 4,
  F_REQ_PROCS = 7,
  F_REQ_TIME = 8,
  F_STATUS = 10
};

static const char *const skip_note =
    "SWF partial-execution lines (status 2-4), jobs cancelled before they "
    "started, and jobs without a processor count or run time";

/* Bytes read from zlib at a time. */
#define SWF_CHUNK ((size_t)64 << 10)

/*
 * A line reader over gzFile: gzread into a fixed buffer, lines split with
 * memchr and assembled in a growable buffer, so that a NUL byte is seen
 * as a byte (gzgets ends its copy at a NUL, which made a line with one
 * lose or glue text: a fuzzer finding) and reported.
 */
typedef struct line_reader {
  gzFile gz;
  char *chunk;  /* bytes [pos, n) not yet consumed */
  size_t pos, n;
  int eof;      /* gzread reported the end */
  char *buf;    /* the current line, NUL-terminated, without its newline */
  size_t len, cap;
  int has_nul;  /* the current line holds a NUL byte */
  char zmsg[128]; /* a read error to report once the data before it is used */
  int64_t line; /* number of the line in buf, 1-based */
} line_reader;

static int lr_open(line_reader *lr, const char *path) {
  memset(lr, 0, sizeof *lr);
  lr->chunk = malloc(SWF_CHUNK);
  if (!lr->chunk)
    return -2;
  errno = 0;
  lr->gz = gzopen(path, "rb");
  if (!lr->gz) {
    int saved = errno;
    free(lr->chunk);
    lr->chunk = NULL;
    errno = saved;
    return -1;
  }
  return 0;
}

static void lr_close(line_reader *lr) {
  if (lr->gz)
    gzclose(lr->gz);
  free(lr->chunk);
  free(lr->buf);
  memset(lr, 0, sizeof *lr);
}

/* Appends n bytes to the line. 0 or -1 (err set). */
static int lr_append(line_reader *lr, const char *s, size_t n,
                     const char *path, trace_error *err) {
  if (lr->len + n > SWF_LINE_MAX) {
    trace_seterr(err, "%s:%" PRId64 ": line longer than %zu bytes", path,
                 lr->line + 1, SWF_LINE_MAX);
    return -1;
  }
  if (lr->len + n + 1 > lr->cap) {
    size_t cap = lr->cap ? lr->cap : 4096;
    while (cap < lr->len + n + 1)
      cap *= 2;
    char *nb = realloc(lr->buf, cap);
    if (!nb) {
      trace_seterr(err, "%s:%" PRId64 ": out of memory", path, lr->line + 1);
      return -1;
    }
    lr->buf = nb;
    lr->cap = cap;
  }
  if (memchr(s, '\0', n))
    lr->has_nul = 1;
  memcpy(lr->buf + lr->len, s, n);
  lr->len += n;
  lr->buf[lr->len] = '\0';
  return 0;
}

/* Reads the next line into lr->buf (no newline, no trailing CRs). 1 read,
 * 0 end of file, -1 error (err set unless err is NULL). */
static int next_line(line_reader *lr, const char *path, trace_error *err) {
  lr->len = 0;
  lr->has_nul = 0;
  int got = 0; /* bytes of this line were read */
  for (;;) {
    if (lr->pos == lr->n) {
      if (lr->zmsg[0] != '\0') { /* the data before the error is used up */
        trace_seterr(err, "%s:%" PRId64 ": read error: %s", path,
                     lr->line + 1, lr->zmsg);
        return -1;
      }
      if (lr->eof)
        break;
      /* SWF_CHUNK fits an unsigned int. */
      int r = gzread(lr->gz, lr->chunk, (unsigned)SWF_CHUNK);
      int zerr;
      const char *msg = gzerror(lr->gz, &zerr);
      if (r < 0 || (zerr != Z_OK && zerr != Z_STREAM_END)) {
        /* A truncated stream (Z_BUF_ERROR) may come with data: the lines
         * before the cut are read first, as gzgets did. */
        snprintf(lr->zmsg, sizeof lr->zmsg, "%s",
                 zerr == Z_ERRNO ? strerror(errno) : msg);
        if (lr->zmsg[0] == '\0')
          snprintf(lr->zmsg, sizeof lr->zmsg, "zlib error %d", zerr);
        if (r <= 0)
          continue;
      }
      lr->pos = 0;
      lr->n = (size_t)r;
      if (r == 0) {
        lr->eof = 1;
        break;
      }
    }
    got = 1;
    const char *s = lr->chunk + lr->pos;
    const char *nl = memchr(s, '\n', lr->n - lr->pos);
    size_t take = nl ? (size_t)(nl - s) + 1 : lr->n - lr->pos;
    if (lr_append(lr, s, take, path, err) != 0)
      return -1;
    lr->pos += take;
    if (nl)
      break;
  }
  if (!got)
    return 0;
  while (lr->len > 0 &&
         (lr->buf[lr->len - 1] == '\n' || lr->buf[lr->len - 1] == '\r'))
    lr->buf[--lr->len] = '\0';
  lr->line++;
  return 1;
}

static int lr_rewind(line_reader *lr, const char *path, trace_error *err) {
  /* gzrewind refuses a stream that had a data error: open it again. */
  if (gzrewind(lr->gz) != 0) {
    gzclose(lr->gz);
    errno = 0;
    lr->gz = gzopen(path, "rb");
    if (!lr->gz) {
      trace_seterr(err, "%s: cannot open: %s", path,
                   errno ? strerror(errno) : "out of memory");
      return -1;
    }
  }
  lr->pos = lr->n = 0;
  lr->eof = 0;
  lr->len = 0;
  lr->has_nul = 0;
  lr->line = 0;
  lr->zmsg[0] = '\0';
  return 0;
}

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

/* Splits s into whitespace-separated tokens (in place). Returns the number
 * of tokens (may exceed max; only max are kept). */
static size_t tokenize(char *s, char **tok, size_t *tlen, size_t max) {
  size_t n = 0;
  while (*s) {
    while (is_space(*s))
      s++;
    if (!*s)
      break;
    char *b = s;
    while (*s && !is_space(*s))
      s++;
    if (n < max) {
      tok[n] = b;
      tlen[n] = (size_t)(s - b);
    }
    n++;
    if (*s)
      *s++ = '\0';
  }
  return n;
}

/* A plain decimal number: optional '-', digits, optional fraction and
 * exponent. */
static int is_number(const char *s, size_t len) {
  size_t i = 0, digits = 0;
  if (i < len && s[i] == '-')
    i++;
  while (i < len && s[i] >= '0' && s[i] <= '9')
    i++, digits++;
  if (i < len && s[i] == '.') {
    i++;
    while (i < len && s[i] >= '0' && s[i] <= '9')
      i++, digits++;
  }
  if (digits == 0)
    return 0;
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < len && (s[i] == '-' || s[i] == '+'))
      i++;
    size_t e = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9')
      i++, e++;
    if (e == 0)
      return 0;
  }
  return i == len;
}

static int is_minus_one(const char *s, size_t len) {
  return (len == 2 && memcmp(s, "-1", 2) == 0) ||
         (len >= 3 && s[0] == '-' && s[1] == '1' && s[2] == '.' &&
          strspn(s + 3, "0") == len - 3);
}

/* Per-line context for messages. */
typedef struct rec {
  const char *path;
  int64_t line;
  char **tok;
  size_t *tlen;
  trace_error *err;
} rec;

static int bad(const rec *r, int f, const char *why) {
  trace_field_error(r->err, r->path, r->line, swf_names[f], why, r->tok[f],
                    r->tlen[f]);
  return -1;
}

/* A time field: -1 (unknown) gives *out = -1. */
static int get_time(const rec *r, int f, int allow_unknown, int64_t *out) {
  if (allow_unknown && is_minus_one(r->tok[f], r->tlen[f])) {
    *out = -1;
    return 0;
  }
  char why[TRACE_WHY_MAX];
  if (trace_parse_time_us(r->tok[f], r->tlen[f], out, why))
    return bad(r, f, why);
  return 0;
}

/* An integer field: -1 (unknown) gives *out = -1. */
static int get_int(const rec *r, int f, int64_t max, int64_t *out) {
  if (is_minus_one(r->tok[f], r->tlen[f])) {
    *out = -1;
    return 0;
  }
  char why[TRACE_WHY_MAX];
  if (trace_parse_int(r->tok[f], r->tlen[f], max, out, why))
    return bad(r, f, why);
  return 0;
}

static int swf_record(trace_sink *k, const rec *r, double rate) {
  for (int f = 0; f < SWF_FIELDS; f++)
    if (!is_number(r->tok[f], r->tlen[f]))
      return bad(r, f, "not a number");
  int64_t submit, run, alloc, req, req_time, status;
  if (get_time(r, F_SUBMIT, 0, &submit) || get_time(r, F_RUN, 1, &run) ||
      get_int(r, F_ALLOC, INT32_MAX, &alloc) ||
      get_int(r, F_REQ_PROCS, INT32_MAX, &req) ||
      get_time(r, F_REQ_TIME, 1, &req_time) || get_int(r, F_STATUS, 5, &status))
    return -1;
  if (status >= 2 && status <= 4) { /* partial execution of a job */
    trace_sink_skip(k, skip_note);
    return 0;
  }
  if (status == 5 && run <= 0) { /* cancelled before it started */
    trace_sink_skip(k, skip_note);
    return 0;
  }
  int64_t procs = alloc > 0 ? alloc : req;
  if (procs <= 0) {
    trace_sink_skip(k, skip_note);
    return 0;
  }
  job_record j = {0};
  j.line = r->line;
  j.submit_us = submit;
  if (req_time > 0) {
    int64_t rs = req_time / 1000000 + (req_time % 1000000 != 0);
    j.req_s = rs > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)rs;
  }
  if (run >= 0) {
    j.duration_us = run;
  } else if (req_time >= 0) {
    j.duration_us = req_time;
    j.flags |= TRACE_JOB_ESTIMATED_DURATION;
  } else {
    trace_sink_skip(k, skip_note);
    return 0;
  }
  /* ceil(procs x rate), with a tolerance so that 8 x 0.125 is 1, not 2
   * through binary rounding. */
  double g = ceil((double)procs * rate - 1e-9);
  if (g < 1)
    g = 1;
  if (g > SWF_MAX_GPUS)
    return bad(r, alloc > 0 ? F_ALLOC : F_REQ_PROCS,
               "times --swf-gpus-per-proc gives more than 1000000 GPUs");
  j.num_gpu = (int32_t)g;
  j.gpu_milli = 1000;
  return trace_sink_add(k, &j, r->tok[F_JOB], NULL, r->path, r->err);
}

/* The text of the line after a BOM (line 1 only) and leading blanks. */
static char *line_text(line_reader *lr) {
  char *s = lr->buf;
  if (lr->line == 1 && strncmp(s, "\xEF\xBB\xBF", 3) == 0)
    s += 3;
  while (is_space(*s))
    s++;
  return s;
}

int trace_swf_sniff(const char *path) {
  line_reader lr;
  int o = lr_open(&lr, path);
  if (o < 0)
    return o;
  int result = 0, got;
  trace_error e;
  e.msg[0] = '\0';
  while ((got = next_line(&lr, path, &e)) == 1) {
    /* A NUL byte: not SWF; the CSV reader then names the line. */
    if (lr.has_nul)
      break;
    char *s = line_text(&lr);
    if (!*s)
      continue; /* blank */
    if (*s == ';') {
      result = 1;
      break;
    }
    char *tok[SWF_FIELDS];
    size_t tlen[SWF_FIELDS];
    if (strchr(s, ',') == NULL &&
        tokenize(s, tok, tlen, SWF_FIELDS) == SWF_FIELDS) {
      result = 1;
      for (int f = 0; f < SWF_FIELDS; f++)
        if (!is_number(tok[f], tlen[f]))
          result = 0;
    }
    break;
  }
  /* Out of memory is not "not SWF": the caller reports it (before, the
   * file was then read as CSV and called an unknown header; found by
   * tests/test_faults.c). */
  if (got < 0 && strstr(e.msg, "out of memory"))
    result = -2;
  lr_close(&lr);
  return result;
}

struct swf_src {
  line_reader lr;
  char *path;
  double rate;
  int any;  /* a line that is not blank or a comment was read */
  int stop; /* an error was reported */
};

void trace_swf_close(swf_src *s) {
  if (!s)
    return;
  lr_close(&s->lr);
  free(s->path);
  free(s);
}

int trace_swf_open(swf_src **out, const char *path,
                   const trace_load_opts *opts, trace_error *err) {
  *out = NULL;
  double rate =
      opts && opts->swf_gpus_per_proc != 0 ? opts->swf_gpus_per_proc : 1.0;
  if (!(rate > 0) || rate > SWF_MAX_GPUS) {
    trace_seterr(err, "%s: --swf-gpus-per-proc must be in (0, %d] (got %g)",
                 path, SWF_MAX_GPUS, rate);
    return -1;
  }
  swf_src *s = calloc(1, sizeof *s);
  if (!s || !(s->path = strdup(path))) {
    free(s);
    trace_seterr(err, "%s: out of memory", path);
    return -1;
  }
  s->rate = rate;
  int o = lr_open(&s->lr, path);
  if (o < 0) {
    trace_seterr(err, "%s: cannot open: %s", path,
                 o == -1 && errno ? strerror(errno) : "out of memory");
    trace_swf_close(s);
    return -1;
  }
  *out = s;
  return 0;
}

size_t trace_swf_footprint(const swf_src *s) {
  return sizeof *s + SWF_CHUNK + s->lr.cap + strlen(s->path) + 1;
}

int trace_swf_rewind(swf_src *s, trace_error *err) {
  if (lr_rewind(&s->lr, s->path, err) != 0)
    return -1;
  s->any = 0;
  s->stop = 0;
  return 0;
}

/* One line: 1, 0 at the end, -1 with err set. */
static int pump_line(swf_src *s, trace_sink *k, trace_error *err) {
  const char *path = s->path;
  line_reader *lr = &s->lr;
  int rc = next_line(lr, path, err);
  if (rc <= 0)
    return rc;
  if (lr->has_nul) {
    trace_seterr(err, "%s:%" PRId64 ": NUL byte (binary data?)", path,
                 lr->line);
    return -1;
  }
  char *t = line_text(lr);
  if (!*t || *t == ';')
    return 1; /* blank line, header or remark */
  s->any = 1;
  char *tok[SWF_FIELDS];
  size_t tlen[SWF_FIELDS];
  size_t n = tokenize(t, tok, tlen, SWF_FIELDS);
  if (n < SWF_FIELDS) {
    trace_seterr(err,
                 "%s:%" PRId64 ": field '%s': missing (the record has %zu of "
                 "%d fields: truncated line?)",
                 path, lr->line, swf_names[n], n, SWF_FIELDS);
    return -1;
  }
  if (n > SWF_FIELDS) {
    trace_seterr(err,
                 "%s:%" PRId64 ": too many fields: the record has %zu, "
                 "expected %d (SWF has 18 whitespace-separated numbers)",
                 path, lr->line, n, SWF_FIELDS);
    return -1;
  }
  rec r = {path, lr->line, tok, tlen, err};
  return swf_record(k, &r, s->rate) != 0 ? -1 : 1;
}

int trace_swf_pump(swf_src *s, trace_sink *k, trace_error *err) {
  if (s->stop)
    return -1;
  int rc = pump_line(s, k, err);
  if (rc < 0)
    s->stop = 1;
  return rc;
}

int trace_swf_end(const swf_src *s, const trace_sink *k, trace_error *err) {
  if (!s->any) {
    trace_seterr(err, "%s: no jobs (only comments or blank lines)", s->path);
    return -1;
  }
  if (k->produced == 0) {
    trace_seterr(err, "%s: no jobs (%zu records skipped: %s)", s->path,
                 k->meta->skipped, skip_note);
    return -1;
  }
  return 0;
}
