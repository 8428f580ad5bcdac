/*
 * Fuzz target: every job-trace reader through trace_load_ex.
 *
 * Input: one selector byte, then the file's bytes.
 *   bits 0-2  format: 0 = detect from the header, then alibaba,
 *             alibaba-multi, swf, pai, tiresias, philly, generic (forced)
 *   bit 3     write the file gzip-compressed (the SWF .gz path; other
 *             formats must refuse it with a reason)
 *   bits 4-5  --swf-gpus-per-proc: default, 0.125, 0.0625 or 3.7
 *
 * Checks: a load either succeeds with records inside every documented
 * range, or fails with the trace left empty and a message that starts with
 * the file's path ("PATH: ..." or "PATH:LINE: ..." with LINE inside the
 * file). A UTF-8 BOM in front of the file, and CRLF instead of LF line
 * ends, give the same result (records or message) as the plain file.
 * A trace stream over the file, read to its end, rewound and read again,
 * gives the load's records both times, or fails with its message (at open
 * or after the jobs before the bad record).
 */
#include "fuzz.h"
#include "trace.h"

#include <string.h>

static const enum trace_format formats[8] = {
    TRACE_FMT_UNKNOWN, TRACE_FMT_ALIBABA_POD, TRACE_FMT_ALIBABA_POD_MULTI,
    TRACE_FMT_SWF,     TRACE_FMT_PAI,         TRACE_FMT_TIRESIAS,
    TRACE_FMT_PHILLY,  TRACE_FMT_GENERIC};
static const double rates[4] = {0, 0.125, 0.0625, 3.7};

typedef struct outcome {
  int rc;
  trace t;
  trace_error err;
} outcome;

static void load(outcome *o, const char *path, const trace_load_opts *opts) {
  trace_init(&o->t);
  o->err.msg[0] = '\0';
  o->rc = trace_load_ex(&o->t, path, opts, &o->err);
}

static size_t count_lines(const uint8_t *p, size_t n) {
  size_t lines = 1;
  for (size_t i = 0; i < n; i++)
    lines += p[i] == '\n';
  return lines;
}

/* The properties of one load (see the file comment). */
static void check(const outcome *o, const char *path,
                  const trace_load_opts *opts, size_t lines) {
  const trace *t = &o->t;
  if (o->rc != 0) {
    FUZZ_CHECK(o->rc == -1, "rc %d", o->rc);
    FUZZ_CHECK(t->n == 0 && t->jobs == NULL && t->names == NULL &&
                   t->specs == NULL && t->path == NULL,
               "failed load left %zu jobs", t->n);
    size_t pl = strlen(path);
    FUZZ_CHECK(strncmp(o->err.msg, path, pl) == 0 && o->err.msg[pl] == ':',
               "message does not start with the path: '%s'", o->err.msg);
    const char *p = o->err.msg + pl + 1;
    if (*p >= '0' && *p <= '9') {
      unsigned long line = strtoul(p, NULL, 10);
      FUZZ_CHECK(line >= 1 && line <= lines, "line %lu of %zu: '%s'", line,
                 lines, o->err.msg);
    }
    return;
  }
  FUZZ_CHECK(t->n >= 1, "a loaded trace without jobs");
  FUZZ_CHECK(t->path && strcmp(t->path, path) == 0, "path");
  FUZZ_CHECK(t->format != TRACE_FMT_UNKNOWN, "format unknown");
  if (opts->format != TRACE_FMT_UNKNOWN)
    FUZZ_CHECK(t->format == opts->format, "format %d forced, got %d",
               (int)opts->format, (int)t->format);
  FUZZ_CHECK((t->skipped == 0) == (t->skip_note == NULL), "skip note");
  int64_t prev_line = 0;
  for (size_t i = 0; i < t->n; i++) {
    const job_record *j = &t->jobs[i];
    FUZZ_CHECK(j->submit_us >= 0 && j->submit_us <= TRACE_MAX_TIME_US,
               "job %zu submit %lld", i, (long long)j->submit_us);
    FUZZ_CHECK(j->duration_us >= -1 && j->duration_us <= TRACE_MAX_TIME_US,
               "job %zu duration %lld", i, (long long)j->duration_us);
    FUZZ_CHECK((j->duration_us == -1) == !!(j->flags & TRACE_JOB_NO_DURATION),
               "job %zu: duration -1 iff NO_DURATION", i);
    if (!t->has_times)
      FUZZ_CHECK(j->submit_us == 0 && j->duration_us == -1,
                 "job %zu of a trace without times", i);
    FUZZ_CHECK(j->num_gpu >= 0 && j->num_gpu <= 1000000, "job %zu num_gpu %d",
               i, (int)j->num_gpu);
    FUZZ_CHECK(j->gpu_milli >= 0 && j->gpu_milli <= 1000,
               "job %zu gpu_milli %d", i, (int)j->gpu_milli);
    FUZZ_CHECK((j->num_gpu == 0) == (j->gpu_milli == 0),
               "job %zu: num_gpu %d with gpu_milli %d", i, (int)j->num_gpu,
               (int)j->gpu_milli);
    FUZZ_CHECK(j->cpu_milli >= 0 && j->memory_mib >= 0, "job %zu cpu/mem", i);
    FUZZ_CHECK(j->gpu_spec >= -1 && j->gpu_spec < t->nspecs, "job %zu spec", i);
    FUZZ_CHECK(j->name_off < t->names_len &&
                   memchr(t->names + j->name_off, '\0',
                          t->names_len - j->name_off) != NULL,
               "job %zu name offset", i);
    FUZZ_CHECK(j->line >= 1 && (size_t)j->line <= lines && j->line >= prev_line,
               "job %zu line %lld (previous %lld, %zu lines)", i,
               (long long)j->line, (long long)prev_line, lines);
    FUZZ_CHECK(j->qos <= TRACE_QOS_GUARANTEED, "job %zu qos", i);
    prev_line = j->line;
  }
  for (int s = 0; s < t->nspecs; s++)
    FUZZ_CHECK(t->specs[s] && t->specs[s][0], "spec %d empty", s);
}

/* The same records, names, specs, or the same message. */
static void same(const outcome *a, const outcome *b, const char *what) {
  FUZZ_CHECK(a->rc == b->rc, "%s changes the result: %d '%s' vs %d '%s'", what,
             a->rc, a->err.msg, b->rc, b->err.msg);
  if (a->rc != 0) {
    FUZZ_CHECK(strcmp(a->err.msg, b->err.msg) == 0,
               "%s changes the message: '%s' vs '%s'", what, a->err.msg,
               b->err.msg);
    return;
  }
  const trace *x = &a->t, *y = &b->t;
  FUZZ_CHECK(x->n == y->n && x->format == y->format &&
                 x->names_len == y->names_len && x->nspecs == y->nspecs &&
                 x->skipped == y->skipped,
             "%s changes the trace (%zu vs %zu jobs)", what, x->n, y->n);
  FUZZ_CHECK(memcmp(x->jobs, y->jobs, x->n * sizeof *x->jobs) == 0,
             "%s changes the records", what);
  FUZZ_CHECK(memcmp(x->names, y->names, x->names_len) == 0,
             "%s changes the names", what);
  for (int s = 0; s < x->nspecs; s++)
    FUZZ_CHECK(strcmp(x->specs[s], y->specs[s]) == 0, "%s changes spec %d",
               what, s);
}

/* One pass of a stream against the load: 0 at the end, -1 on error. */
static int stream_pass(trace_stream *s, const outcome *a, trace_error *err) {
  size_t i = 0;
  job_record j;
  const char *name;
  int rc;
  while ((rc = trace_stream_next(s, &j, &name, err)) == 1) {
    const trace *m = trace_stream_meta(s);
    if (a->rc == 0) {
      FUZZ_CHECK(i < a->t.n, "the stream gives more than %zu jobs", a->t.n);
      job_record x = a->t.jobs[i];
      x.name_off = 0;
      FUZZ_CHECK(memcmp(&x, &j, sizeof j) == 0, "stream job %zu differs", i);
      FUZZ_CHECK(strcmp(name, trace_job_name(&a->t, i)) == 0,
                 "stream job %zu name '%s'", i, name);
      FUZZ_CHECK(j.gpu_spec < m->nspecs &&
                     (j.gpu_spec < 0 ||
                      strcmp(m->specs[j.gpu_spec],
                             a->t.specs[a->t.jobs[i].gpu_spec]) == 0),
                 "stream job %zu spec", i);
    }
    i++;
  }
  if (rc == 0) {
    FUZZ_CHECK(a->rc == 0 && i == a->t.n, "stream ended after %zu jobs, load "
               "gave %d '%s'", i, a->rc, a->err.msg);
    FUZZ_CHECK(trace_stream_meta(s)->skipped == a->t.skipped, "skip count");
  } else {
    FUZZ_CHECK(a->rc != 0 && strcmp(err->msg, a->err.msg) == 0,
               "stream failed with '%s', load gave %d '%s'", err->msg, a->rc,
               a->err.msg);
  }
  return rc;
}

/* The stream gives the load's result, twice (read, rewind, read). */
static void check_stream(const outcome *a, const char *path,
                         const trace_load_opts *opts) {
  trace_stream *s;
  trace_error err;
  err.msg[0] = '\0';
  if (trace_stream_open(&s, path, opts, &err) != 0) {
    FUZZ_CHECK(a->rc != 0 && strcmp(err.msg, a->err.msg) == 0,
               "stream open failed with '%s', load gave %d '%s'", err.msg,
               a->rc, a->err.msg);
    return;
  }
  if (stream_pass(s, a, &err) == 0) {
    err.msg[0] = '\0';
    FUZZ_CHECK(trace_stream_rewind(s, &err) == 0, "rewind: %s", err.msg);
    stream_pass(s, a, &err);
  }
  trace_stream_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  uint8_t sel = data[0];
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  trace_load_opts opts = TRACE_LOAD_OPTS_INIT;
  opts.format = formats[sel & 7];
  opts.swf_gpus_per_proc = rates[(sel >> 4) & 3];
  int gz = (sel >> 3) & 1;

  char path[512];
  fuzz_path(path, sizeof path, gz ? "trace.gz" : "trace");
  if (gz)
    fuzz_write_gz(path, p, n);
  else
    fuzz_write(path, p, n);
  size_t lines = count_lines(p, n);
  outcome a;
  load(&a, path, &opts);
  check(&a, path, &opts, lines);
  check_stream(&a, path, &opts);

  /* A raw file that happens to start with the gzip magic is read through
   * zlib: the BOM and CRLF variants would not be. */
  int magic = n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
  if (!gz && !magic && !(n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)) {
    uint8_t *v = malloc(n + 3);
    if (!v)
      abort();
    memcpy(v, "\xEF\xBB\xBF", 3);
    memcpy(v + 3, p, n);
    fuzz_write(path, v, n + 3);
    free(v);
    outcome b;
    load(&b, path, &opts);
    check(&b, path, &opts, lines);
    same(&a, &b, "a UTF-8 BOM");
    trace_free(&b.t);
  }
  /* CRLF line ends; files with quotes (whose fields may hold newlines) or
   * carriage returns of their own are left out. */
  if (!gz && !magic && !memchr(p, '"', n) && !memchr(p, '\r', n) &&
      memchr(p, '\n', n)) {
    uint8_t *v = malloc(2 * n);
    if (!v)
      abort();
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
      if (p[i] == '\n')
        v[m++] = '\r';
      v[m++] = p[i];
    }
    fuzz_write(path, v, m);
    free(v);
    outcome b;
    load(&b, path, &opts);
    check(&b, path, &opts, lines);
    same(&a, &b, "CRLF line ends");
    trace_free(&b.t);
  }
  trace_free(&a.t);
  return 0;
}
