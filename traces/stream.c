/*
 * Trace streams: a trace file read one job at a time in bounded memory
 * (trace.h, trace_stream_*), and the format detection every load goes
 * through (trace_load_ex is a loop over a stream).
 *
 * A stream pulls the file a piece at a time (a CSV piece is at most one
 * physical line and 64 KiB, traces/csvrows.c; an SWF piece is one line,
 * traces/swf.c) and hands each piece's records to the format's reader,
 * which puts their jobs into a small window (trace_sink). trace_stream_next
 * hands the window out job by job and reads on only once it is empty, so
 * the memory held is the read buffer, the current record, the jobs of one
 * piece, and the table of distinct GPU specs; never the trace.
 *
 * Every reader streams:
 *  - Alibaba pod lists (both layouts), Tiresias, generic CSV and SWF map
 *    one record to at most one job, with no cross-record state but the
 *    SWF skip count (kept in the meta trace as it grows);
 *  - a PAI task of N instances is one window entry whose N names are made
 *    as they are handed out;
 *  - Philly shifts times so that the earliest timestamp is 0; that needs
 *    the earliest timestamp before the first job, so a Philly stream reads
 *    the whole file once at open to find it (bounded memory, twice the
 *    reading; any error in the file is then reported by open).
 *
 * Errors, once reported, are sticky: every later trace_stream_next
 * returns -1 with the same message. Jobs a piece produced before its
 * error are handed out first, as a whole-file load would have added them
 * before failing.
 */
#include "fileout.h"
#include "trace_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the sink */

/* Grows the window arrays to hold one more job. 0 or -1. */
static int sink_grow(trace_sink *k) {
  if (k->n < k->cap)
    return 0;
  size_t cap = k->cap ? 2 * k->cap : 16;
  if (cap > SIZE_MAX / sizeof *k->jobs)
    return -1;
  job_record *jobs = realloc(k->jobs, cap * sizeof *jobs);
  if (!jobs)
    return -1;
  k->jobs = jobs;
  int64_t *inst = realloc(k->instances, cap * sizeof *inst);
  if (!inst)
    return -1;
  k->instances = inst;
  k->cap = cap;
  return 0;
}

/* Appends a NUL-terminated copy of a (and, when b is not NULL, '/' and
 * b) to the window's names; the offset goes to *off. 0 or -1. */
static int sink_name(trace_sink *k, const char *a, const char *b,
                     uint32_t *off) {
  size_t la = strlen(a), lb = b ? strlen(b) + 1 : 0;
  size_t need = k->names_len + la + lb + 1;
  if (k->names_len > UINT32_MAX || need < k->names_len)
    return -1;
  if (need > k->names_cap) {
    size_t cap = k->names_cap ? k->names_cap : 256;
    while (cap < need)
      cap *= 2;
    char *nb = realloc(k->names, cap);
    if (!nb)
      return -1;
    k->names = nb;
    k->names_cap = cap;
  }
  char *p = k->names + k->names_len;
  memcpy(p, a, la);
  if (b) {
    p[la] = '/';
    memcpy(p + la + 1, b, lb - 1);
  }
  p[la + lb] = '\0';
  *off = (uint32_t)k->names_len;
  k->names_len = need;
  return 0;
}

static int sink_put(trace_sink *k, const job_record *j, const char *a,
                    const char *b, int64_t instances, const char *spec,
                    const char *path, trace_error *err) {
  int idx = -1;
  uint32_t off;
  if (sink_grow(k) != 0 || sink_name(k, a ? a : "", b, &off) != 0 ||
      (spec && spec[0] != '\0' && (idx = trace_intern_spec(k->meta, spec)) < 0)) {
    trace_seterr(err, "%s:%" PRId64 ": out of memory", path, j->line);
    return -1;
  }
  job_record *w = &k->jobs[k->n];
  *w = *j;
  w->gpu_spec = idx;
  w->name_off = off;
  k->instances[k->n] = instances;
  k->n++;
  k->produced += instances > 0 ? (uint64_t)instances : 1;
  return 0;
}

int trace_sink_add(trace_sink *k, const job_record *j, const char *name,
                   const char *spec, const char *path, trace_error *err) {
  return sink_put(k, j, name, NULL, 0, spec, path, err);
}

int trace_sink_add_instances(trace_sink *k, const job_record *j,
                             const char *job, const char *task, int64_t count,
                             const char *spec, const char *path,
                             trace_error *err) {
  return sink_put(k, j, job, task, count < 1 ? 1 : count, spec, path, err);
}

void trace_sink_skip(trace_sink *k, const char *note) {
  k->meta->skipped++;
  k->meta->skip_note = note;
}

/* ----------------------------------------------------- format detection */

/* Every CSV format trace_load knows, tried in order against the header
 * (SWF is not CSV: it is sniffed first). */
static const trace_reader *const readers[] = {
    &trace_alibaba_pod_reader,   &trace_alibaba_multi_reader,
    &trace_pai_reader,           &trace_tiresias_reader,
    &trace_tiresias_tf_reader,   &trace_philly_reader,
    &trace_generic_reader,       &trace_generic_spot_reader,
};
#define NREADERS (sizeof readers / sizeof readers[0])

enum { ST_READING = 0, ST_DONE = 1, ST_ERROR = -1 };

struct trace_stream {
  trace meta;  /* path, format, has_times, specs, skipped */
  trace_load_opts opts;
  swf_src *swf; /* exactly one of swf and csv is set */
  csvsrc *csv;
  const trace_reader *reader; /* CSV: NULL until the header is read */
  int headerless;             /* forced format, first record was data */
  int origin_known;           /* shift_origin readers: k.origin_us is set */
  trace_sink k;
  size_t pos;       /* next window job to hand out */
  int64_t inst;     /* instance of k.jobs[pos] handed out next */
  char *name;       /* an instance's name */
  size_t name_cap;
  int state;        /* ST_* */
  trace_error err;  /* the sticky error */
  trace_horizon horizon; /* the time range check of this pass */
  FILE *spool;           /* a pipe's copy (fileout.h), or NULL */
  char spool_path[32];   /* its name for opening, in messages the path */
};

static void unknown_header(const trace_stream *s, const csvrow *row,
                           trace_error *err) {
  char got[80];
  csvrow_quote_joined(row, got, sizeof got);
  /* Every header we accept, so the user can fix the file. */
  char want[600], cols[200];
  size_t w = 0;
  want[0] = '\0';
  /* The header sharing most column names with the row, then the two
   * Alibaba headers (the message stays short; it may be cut at its end,
   * so the closest header comes first). */
  size_t best = 0, best_hits = 0;
  for (size_t r = 0; r < NREADERS; r++) {
    size_t hits = 0;
    for (size_t i = 0; i < row->nfields && i < CSVROW_MAX_FIELDS; i++)
      for (size_t c = 0; c < readers[r]->ncolumns; c++)
        if (strcmp(row->field[i], readers[r]->columns[c]) == 0)
          hits++;
    if (hits > best_hits)
      best = r, best_hits = hits;
  }
  size_t order[3] = {best, 0, 1};
  for (size_t k = 0; k < 3 && w < sizeof want; k++) {
    size_t r = order[k];
    if (k > 0 && r == best)
      continue;
    trace_join_columns(cols, sizeof cols, readers[r]->columns,
                       readers[r]->ncolumns);
    int len = snprintf(want + w, sizeof want - w, "%s'%s' (%s)",
                       w == 0 ? "" : " or ", cols, readers[r]->what);
    if (len < 0)
      break;
    w += (size_t)len;
  }
  const char *hint = csvrow_is_header(row, node_list_columns, 5)
                         ? " (this is a node list, not a job trace)"
                         : "";
  trace_seterr(err,
               "%s:%" PRId64 ": unrecognised header '%s'%s; formats: "
               TRACE_FORMAT_NAMES " (README 'Traces'; --trace-format NAME "
               "forces one); expected %s",
               s->meta.path, row->line, got, hint, want);
}

static void set_reader(trace_stream *s, const trace_reader *r) {
  s->reader = r;
  s->meta.format = r->format;
  s->meta.has_times = r->has_times;
  trace_measurement(r->format, &s->meta.measured_on,
                    &s->meta.measured_by_spec);
}

/* The csvsrc callback: the header picks the reader, data rows go to it. */
static int on_record(const csvrow *row, void *user, trace_error *err) {
  trace_stream *s = user;
  const char *path = s->meta.path;
  if (s->reader)
    return s->reader->row(&s->k, row, path, err);
  enum trace_format forced = s->opts.format;
  for (size_t r = 0; r < NREADERS; r++)
    if ((!forced || readers[r]->format == forced) &&
        csvrow_is_header(row, readers[r]->columns, readers[r]->ncolumns)) {
      set_reader(s, readers[r]);
      return 0;
    }
  if (forced) {
    /* A forced format may come without its header line (the upstream PAI
     * files have none): the first record is data. A format with several
     * layouts (Tiresias) then reads its first one. */
    for (size_t r = 0; r < NREADERS && !s->reader; r++)
      if (readers[r]->format == forced)
        set_reader(s, readers[r]);
    if (s->reader) {
      s->headerless = 1;
      return s->reader->row(&s->k, row, path, err);
    }
  }
  unknown_header(s, row, err);
  return -1;
}

/* The end of a CSV file: the checks of a whole load. 0 or -1. */
static int csv_end(trace_stream *s, trace_error *err) {
  const char *path = s->meta.path;
  int64_t rows = csvsrc_records(s->csv);
  if (rows >= 1 && s->headerless)
    rows++; /* every record was data: count a header for the checks */
  if (rows == 0) {
    trace_seterr(err, "%s: empty file", path);
    return -1;
  }
  if (rows == 1) {
    trace_seterr(err, "%s: no jobs after the header", path);
    return -1;
  }
  if (s->k.produced == 0) {
    trace_seterr(err, "%s: no jobs (%zu records skipped: %s)", path,
                 s->meta.skipped, s->meta.skip_note ? s->meta.skip_note : "");
    return -1;
  }
  return 0;
}

/* Reads one piece into the window; updates s->state at the end or on an
 * error (the message in s->err). */
static void pump(trace_stream *s) {
  int rc = s->swf ? trace_swf_pump(s->swf, &s->k, &s->err)
                  : csvsrc_pump(s->csv, on_record, s, &s->err);
  if (rc < 0) {
    s->state = ST_ERROR;
  } else if (rc == 0) {
    int end = s->swf ? trace_swf_end(s->swf, &s->k, &s->err)
                     : csv_end(s, &s->err);
    s->state = end == 0 ? ST_DONE : ST_ERROR;
  }
}

/* Empties the window once everything in it was handed out. */
static void drain(trace_stream *s) {
  s->k.n = 0;
  s->k.names_len = 0;
  s->pos = 0;
  s->inst = 0;
}

/* Reads until the window holds a job or the stream ends. */
static void fill(trace_stream *s) {
  while (s->pos == s->k.n && s->state == ST_READING) {
    drain(s);
    pump(s);
  }
}

/* Back to the first record, and reads up to the first job: 0, or -1 when
 * the file fails before its first job (message in s->err). */
static int restart(trace_stream *s) {
  drain(s);
  s->k.produced = 0;
  s->horizon.end_us = 0;
  s->meta.skipped = 0;
  s->meta.skip_note = NULL;
  s->state = ST_READING;
  int rc = s->swf ? trace_swf_rewind(s->swf, &s->err)
                  : csvsrc_rewind(s->csv, &s->err);
  if (rc != 0) {
    s->state = ST_ERROR;
    return -1;
  }
  if (s->csv) {
    s->reader = NULL;
    s->headerless = 0;
  }
  fill(s);
  return s->pos == s->k.n && s->state == ST_ERROR ? -1 : 0;
}

static void fail(const trace_stream *s, trace_error *err) {
  if (err) {
    *err = s->err;
    if (s->spool) /* the name the user gave, not the spool's */
      fileout_rename_in(err->msg, sizeof err->msg, s->spool_path,
                        s->meta.path);
  }
}

void trace_stream_close(trace_stream *s) {
  if (!s)
    return;
  trace_swf_close(s->swf);
  csvsrc_close(s->csv);
  if (s->spool)
    fclose(s->spool);
  free(s->k.jobs);
  free(s->k.instances);
  free(s->k.names);
  free(s->name);
  trace_free(&s->meta);
  free(s);
}

/* Philly: one pass over the whole file with origin 0 finds the earliest
 * submit; the stream then starts again with that origin. 0 or -1. */
static int find_origin(trace_stream *s) {
  int64_t origin = INT64_MAX;
  job_record j;
  const char *name;
  int rc;
  while ((rc = trace_stream_next(s, &j, &name, NULL)) == 1)
    if (j.submit_us < origin)
      origin = j.submit_us;
  if (rc < 0)
    return -1;
  s->k.origin_us = origin;
  s->origin_known = 1;
  return restart(s);
}

int trace_stream_open(trace_stream **out, const char *path,
                      const trace_load_opts *opts, trace_error *err) {
  *out = NULL;
  trace_load_opts o = TRACE_LOAD_OPTS_INIT;
  if (opts)
    o = *opts;
  if (o.format != TRACE_FMT_UNKNOWN &&
      strcmp(trace_format_name(o.format), "unknown") == 0) {
    trace_seterr(err, "%s: unknown trace format %d", path, (int)o.format);
    return -1;
  }
  /* A pipe, FIFO or "-" is read once into a spool, and every pass reads
   * the spool (format sniffing and Philly's first pass open it again). */
  FILE *spool = NULL;
  char spool_path[32] = "";
  const char *shown = path;
  if (fileout_is_pipe(path)) {
    if (!(spool = fileout_spool(path))) {
      trace_seterr(err, "%s: cannot read the pipe into $TMPDIR: %s", path,
                   strerror(errno));
      return -1;
    }
    fileout_spool_path(spool, spool_path, sizeof spool_path);
    path = spool_path;
  }
  int swf = o.format == TRACE_FMT_SWF;
  if (o.format == TRACE_FMT_UNKNOWN) {
    swf = trace_swf_sniff(path);
    if (swf == -2) {
      trace_seterr(err, "%s: out of memory", shown);
      if (spool)
        fclose(spool);
      return -1;
    }
    if (swf < 0) /* unreadable: let the CSV path name the error */
      swf = 0;
  }
  if (!swf && trace_is_gzip(path) == 1) {
    trace_seterr(err,
                 "%s: gzip-compressed, but not SWF (only SWF is read "
                 "compressed; gunzip other formats first)",
                 shown);
    if (spool)
      fclose(spool);
    return -1;
  }
  trace_stream *s = calloc(1, sizeof *s);
  if (!s || !(s->meta.path = strdup(shown))) {
    free(s);
    if (spool)
      fclose(spool);
    trace_seterr(err, "%s: out of memory", shown);
    return -1;
  }
  s->spool = spool;
  memcpy(s->spool_path, spool_path, sizeof spool_path);
  s->opts = o;
  s->k.meta = &s->meta;
  int rc = swf ? trace_swf_open(&s->swf, path, &o, &s->err)
               : csvsrc_open(&s->csv, path, &s->err);
  if (rc != 0) {
    fail(s, err);
    trace_stream_close(s);
    return -1;
  }
  if (swf) {
    s->meta.format = TRACE_FMT_SWF;
    s->meta.has_times = 1;
    trace_measurement(TRACE_FMT_SWF, &s->meta.measured_on,
                      &s->meta.measured_by_spec);
  }
  fill(s);
  if (s->pos == s->k.n && s->state == ST_ERROR) {
    fail(s, err);
    trace_stream_close(s);
    return -1;
  }
  if (s->reader && s->reader->shift_origin && find_origin(s) != 0) {
    fail(s, err);
    trace_stream_close(s);
    return -1;
  }
  *out = s;
  return 0;
}

/* The name of instance i of a window job: "JOB/TASK/i". NULL when out of
 * memory. */
static const char *instance_name(trace_stream *s, const char *prefix,
                                 int64_t i) {
  size_t need = strlen(prefix) + 24;
  if (need > s->name_cap) {
    char *nb = realloc(s->name, need);
    if (!nb)
      return NULL;
    s->name = nb;
    s->name_cap = need;
  }
  snprintf(s->name, s->name_cap, "%s/%" PRId64, prefix, i);
  return s->name;
}

int trace_stream_next(trace_stream *s, job_record *job, const char **name,
                      trace_error *err) {
  fill(s);
  if (s->pos == s->k.n) {
    if (s->state == ST_DONE)
      return 0;
    fail(s, err);
    return -1;
  }
  const job_record *w = &s->k.jobs[s->pos];
  const char *wname = s->k.names + w->name_off;
  int64_t count = s->k.instances[s->pos];
  if (count > 0) {
    const char *n = instance_name(s, wname, s->inst);
    if (!n) {
      trace_seterr(&s->err, "%s:%" PRId64 ": out of memory", s->meta.path,
                   w->line);
      s->state = ST_ERROR;
      drain(s);
      fail(s, err);
      return -1;
    }
    wname = n;
    if (++s->inst == count) {
      s->inst = 0;
      s->pos++;
    }
  } else {
    s->pos++;
  }
  /* Every reader's jobs pass the time range check here (a Philly first
   * pass, before its origin is known, is not checked). */
  if (!(s->reader && s->reader->shift_origin && !s->origin_known) &&
      trace_horizon_add(&s->horizon, w, s->meta.path, &s->err) != 0) {
    s->state = ST_ERROR;
    drain(s);
    fail(s, err);
    return -1;
  }
  *job = *w;
  job->name_off = 0;
  *name = wname;
  return 1;
}

const trace *trace_stream_meta(const trace_stream *s) { return &s->meta; }

size_t trace_stream_footprint(const trace_stream *s) {
  size_t b = sizeof *s + strlen(s->meta.path) + 1;
  b += s->k.cap * (sizeof *s->k.jobs + sizeof *s->k.instances);
  b += s->k.names_cap + s->name_cap;
  b += (size_t)s->meta.specs_cap * sizeof *s->meta.specs;
  for (int i = 0; i < s->meta.nspecs; i++)
    b += strlen(s->meta.specs[i]) + 1;
  b += s->swf ? trace_swf_footprint(s->swf) : csvsrc_footprint(s->csv);
  return b;
}

void trace_stream_take_meta(trace_stream *s, trace *t) {
  t->path = s->meta.path;
  t->format = s->meta.format;
  t->has_times = s->meta.has_times;
  t->specs = s->meta.specs;
  t->nspecs = s->meta.nspecs;
  t->specs_cap = s->meta.specs_cap;
  t->skipped = s->meta.skipped;
  t->skip_note = s->meta.skip_note;
  t->measured_on = s->meta.measured_on;
  t->measured_by_spec = s->meta.measured_by_spec;
  s->meta.path = NULL;
  s->meta.specs = NULL;
  s->meta.nspecs = s->meta.specs_cap = 0;
  t->classes = s->meta.classes;
  t->nclasses = s->meta.nclasses;
  t->classes_cap = s->meta.classes_cap;
  s->meta.classes = NULL;
  s->meta.nclasses = s->meta.classes_cap = 0;
}

int trace_stream_rewind(trace_stream *s, trace_error *err) {
  if (restart(s) != 0) {
    fail(s, err);
    return -1;
  }
  return 0;
}
