/*
 * Writes a trace as an 11-column Alibaba 2023 pod list, the format
 * alibaba.c reads, so that a generated workload can be saved, inspected,
 * and replayed by any tool that reads the original trace.
 *
 * The file is written to PATH.tmp and renamed over PATH only once every
 * byte is written and closed without error: a failed write (disk full)
 * never leaves a truncated trace that would load as a shorter workload.
 */
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

/* A field as CSV: quoted (with quotes doubled) when it holds a comma, a
 * quote, a line break, or leading/trailing blanks that the reader would
 * otherwise trim. */
static void put_field(FILE *f, const char *s) {
  size_t n = strlen(s);
  int quote = strpbrk(s, ",\"\r\n") != NULL ||
              (n > 0 && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' ||
                         s[n - 1] == '\t'));
  if (!quote) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
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

/* Checks that job i can be written faithfully. 0 or -1 with err set. */
static int check_job(const trace *t, size_t i, const char *path,
                     trace_error *err) {
  const job_record *j = &t->jobs[i];
  if (j->duration_us < 0) {
    trace_seterr(err,
                 "%s: job %zu ('%s') has no duration; the 11-column pod list "
                 "needs one",
                 path, i, trace_job_name(t, i));
    return -1;
  }
  if (j->submit_us < 0 || j->submit_us > TRACE_MAX_TIME_US ||
      j->duration_us > TRACE_MAX_TIME_US - j->submit_us) {
    trace_seterr(err, "%s: job %zu ('%s') has times out of range", path, i,
                 trace_job_name(t, i));
    return -1;
  }
  if (j->gpu_spec < -1 || j->gpu_spec >= t->nspecs) {
    trace_seterr(err, "%s: job %zu ('%s') has a bad gpu_spec index %d", path, i,
                 trace_job_name(t, i), (int)j->gpu_spec);
    return -1;
  }
  return 0;
}

static void put_job(FILE *f, const trace *t, size_t i) {
  const job_record *j = &t->jobs[i];
  char create[32], del[32], sched[32];
  format_time(create, sizeof create, j->submit_us);
  format_time(del, sizeof del, j->submit_us + j->duration_us);
  int never = (j->flags & TRACE_JOB_NEVER_SCHEDULED) != 0;
  if (never)
    sched[0] = '\0';
  else
    memcpy(sched, create, sizeof sched);
  put_field(f, trace_job_name(t, i));
  fprintf(f, ",%" PRId64 ",%" PRId64 ",%d,%d,", j->cpu_milli, j->memory_mib,
          (int)j->num_gpu, (int)j->gpu_milli);
  put_field(f, j->gpu_spec >= 0 ? t->specs[j->gpu_spec] : "");
  fprintf(f, ",%s,%s,%s,%s,%s\n", qos_name(j->qos),
          never ? "Pending" : "Running", create, del, sched);
}

int trace_write_alibaba(const trace *t, const char *path, trace_error *err) {
  for (size_t i = 0; i < t->n; i++)
    if (check_job(t, i, path, err))
      return -1;
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 5);
  if (!tmp) {
    trace_seterr(err, "%s: out of memory", path);
    return -1;
  }
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, ".tmp", 5);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    trace_seterr(err, "%s: cannot open: %s", tmp, strerror(errno));
    free(tmp);
    return -1;
  }
  char cols[200];
  trace_join_columns(cols, sizeof cols, trace_alibaba_pod_reader.columns,
                     trace_alibaba_pod_reader.ncolumns);
  fprintf(f, "%s\n", cols);
  for (size_t i = 0; i < t->n && !ferror(f); i++)
    put_job(f, t, i);
  /* fclose flushes: its failure is a write error too (disk full). */
  int failed = ferror(f);
  int saved = errno;
  if (fclose(f) != 0 && !failed)
    failed = 1, saved = errno;
  if (failed) {
    trace_seterr(err, "%s: write error: %s", tmp, strerror(saved));
    remove(tmp);
    free(tmp);
    return -1;
  }
  if (rename(tmp, path) != 0) {
    trace_seterr(err, "%s: cannot rename to %s: %s", tmp, path,
                 strerror(errno));
    remove(tmp);
    free(tmp);
    return -1;
  }
  free(tmp);
  return 0;
}
