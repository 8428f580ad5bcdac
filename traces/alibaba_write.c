/*
 * Writes a trace as an 11-column Alibaba 2023 pod list, the format
 * alibaba.c reads, so that a generated workload can be saved, inspected,
 * and replayed by any tool that reads the original trace.
 *
 * The file is written to PATH.tmp.PID (an atomic file, fileout.h) and
 * renamed over PATH only once every byte is written and closed without
 * error: a failed write (disk full)
 * never leaves a truncated trace that would load as a shorter workload.
 * trace_writer writes job by job (schedsim generate streams millions of
 * jobs through it); trace_write_alibaba writes a trace in memory.
 */
#include "fileout.h"
#include "trace_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seconds as an integer when whole, else with up to 6 decimals and no
 * trailing zeros: the reader parses both back to the same microseconds. */
static void format_time(char *buf, size_t size, int64_t us) {
  int64_t s = us / TRACE_US_PER_S, frac = us % TRACE_US_PER_S;
  if (frac == 0) {
    snprintf(buf, size, "%" PRId64, s);
    return;
  }
  snprintf(buf, size, "%" PRId64 ".%06" PRId64, s, frac);
  size_t n = strlen(buf);
  while (n > 0 && buf[n - 1] == '0')
    buf[--n] = '\0';
}

static const char *qos_name(uint8_t qos) {
  switch (qos) {
  case TRACE_QOS_LS:
    return "LS";
  case TRACE_QOS_BE:
    return "BE";
  case TRACE_QOS_BURSTABLE:
    return "Burstable";
  case TRACE_QOS_GUARANTEED:
    return "Guaranteed";
  default:
    return ""; /* read back as TRACE_QOS_UNKNOWN */
  }
}

/* Checks that job i (named name) can be written faithfully. 0 or -1 with
 * err set. */
static int check_job(const job_record *j, size_t i, const char *name,
                     const char *path, trace_error *err) {
  if (j->duration_us < 0) {
    trace_seterr(err,
                 "%s: job %zu ('%s') has no duration; the 11-column pod list "
                 "needs one",
                 path, i, name);
    return -1;
  }
  if (j->submit_us < 0 || j->submit_us > TRACE_MAX_TIME_US ||
      j->duration_us > TRACE_MAX_TIME_US - j->submit_us) {
    trace_seterr(err, "%s: job %zu ('%s') has times out of range", path, i,
                 name);
    return -1;
  }
  return 0;
}

static void put_job(FILE *f, const job_record *j, const char *name,
                    const char *spec) {
  char create[32], del[32], sched[32];
  format_time(create, sizeof create, j->submit_us);
  format_time(del, sizeof del, j->submit_us + j->duration_us);
  int never = (j->flags & TRACE_JOB_NEVER_SCHEDULED) != 0;
  if (never)
    sched[0] = '\0';
  else
    memcpy(sched, create, sizeof sched);
  csv_write_field(f, name, CSV_QUOTE_BLANKS);
  fprintf(f, ",%" PRId64 ",%" PRId64 ",%d,%d,", j->cpu_milli, j->memory_mib,
          (int)j->num_gpu, (int)j->gpu_milli);
  csv_write_field(f, spec ? spec : "", CSV_QUOTE_BLANKS);
  fprintf(f, ",%s,%s,%s,%s,%s\n", qos_name(j->qos),
          never ? "Pending" : "Running", create, del, sched);
}

struct trace_writer {
  atomic_file out; /* PATH.tmp.PID until committed (fileout.h) */
  size_t n;        /* jobs written */
  int failed;      /* a write failed (the message was given) */
};

void trace_writer_abort(trace_writer *w) {
  if (!w)
    return;
  atomic_file_abort(&w->out);
  free(w);
}

int trace_writer_open(trace_writer **out, const char *path,
                      trace_error *err) {
  *out = NULL;
  trace_writer *w = calloc(1, sizeof *w);
  int rc = w ? atomic_file_open(&w->out, path, "wb") : -1;
  if (rc == -1) {
    trace_seterr(err, "%s: out of memory", path);
    free(w);
    return -1;
  }
  if (rc) {
    trace_seterr(err, "%s: cannot open: %s", w->out.tmp, strerror(errno));
    trace_writer_abort(w); /* not created: nothing to remove */
    return -1;
  }
  char cols[200];
  trace_join_columns(cols, sizeof cols, trace_alibaba_pod_reader.columns,
                     trace_alibaba_pod_reader.ncolumns);
  fprintf(w->out.f, "%s\n", cols);
  *out = w;
  return 0;
}

/* A write error already happened: report it. -1. */
static int write_error(trace_writer *w, int saved, trace_error *err) {
  w->failed = 1;
  trace_seterr(err, "%s: write error: %s", w->out.tmp, strerror(saved));
  return -1;
}

int trace_writer_put(trace_writer *w, const job_record *job, const char *name,
                     const char *spec, trace_error *err) {
  if (w->failed) {
    trace_seterr(err, "%s: an earlier write failed", w->out.tmp);
    return -1;
  }
  if (check_job(job, w->n, name, w->out.path, err) != 0)
    return -1;
  put_job(w->out.f, job, name, spec);
  if (ferror(w->out.f))
    return write_error(w, errno, err);
  w->n++;
  return 0;
}

int trace_writer_commit(trace_writer *w, trace_error *err) {
  if (w->failed) { /* reported when it happened */
    trace_writer_abort(w);
    return -1;
  }
  int rc = atomic_file_commit(&w->out);
  if (rc == ATOMIC_FILE_WRITE)
    write_error(w, errno, err);
  else if (rc)
    trace_seterr(err, "%s: cannot rename to %s: %s", w->out.tmp, w->out.path,
                 strerror(errno));
  trace_writer_abort(w);
  return rc ? -1 : 0;
}

int trace_write_alibaba(const trace *t, const char *path, trace_error *err) {
  /* Every job is checked before the file is created, so that a trace that
   * cannot be written leaves nothing behind, not even PATH.tmp.PID. */
  for (size_t i = 0; i < t->n; i++) {
    const job_record *j = &t->jobs[i];
    if (check_job(j, i, trace_job_name(t, i), path, err))
      return -1;
    if (j->gpu_spec < -1 || j->gpu_spec >= t->nspecs) {
      trace_seterr(err, "%s: job %zu ('%s') has a bad gpu_spec index %d",
                   path, i, trace_job_name(t, i), (int)j->gpu_spec);
      return -1;
    }
  }
  trace_writer *w;
  if (trace_writer_open(&w, path, err) != 0)
    return -1;
  for (size_t i = 0; i < t->n; i++) {
    const job_record *j = &t->jobs[i];
    if (trace_writer_put(w, j, trace_job_name(t, i),
                         j->gpu_spec >= 0 ? t->specs[j->gpu_spec] : NULL,
                         err) != 0) {
      trace_writer_abort(w);
      return -1;
    }
  }
  return trace_writer_commit(w, err);
}
