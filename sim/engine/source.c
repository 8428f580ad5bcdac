/*
 * Job sources: a loaded trace (sorted on the fly when it is not in submit
 * order) or a trace stream read twice (a validating first pass, then the
 * replay).
 */
#include "engine_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const trace *src_meta(const job_src *src) {
  return src->t ? src->t : trace_stream_meta(src->s);
}

/* Jobs in arrival order: by submit time, ties in trace order. */
typedef struct arrival {
  int64_t submit;
  uint32_t idx;
} arrival;

static int cmp_arrival(const void *a, const void *b) {
  const arrival *x = a, *y = b;
  if (x->submit != y->submit)
    return x->submit < y->submit ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

int src_sort(job_src *src) {
  const trace *t = src->t;
  arrival *arr = malloc(t->n * sizeof *arr);
  src->order = malloc(t->n * sizeof *src->order);
  if (!arr || !src->order) {
    free(arr);
    return -1;
  }
  for (size_t j = 0; j < t->n; j++) {
    arr[j].submit = t->jobs[j].submit_us;
    arr[j].idx = (uint32_t)j;
  }
  qsort(arr, t->n, sizeof *arr, cmp_arrival);
  for (size_t j = 0; j < t->n; j++)
    src->order[j] = arr[j].idx;
  free(arr);
  return 0;
}

int src_next(job_src *src, job_record *jr, const char **name, uint64_t *idx,
             char *err, size_t errlen) {
  if (src->t) {
    if (src->pos >= src->t->n)
      return 0;
    size_t j = src->order ? src->order[src->pos] : src->pos;
    src->pos++;
    *jr = src->t->jobs[j];
    *name = trace_job_name(src->t, j);
    *idx = j;
    return 1;
  }
  trace_error te;
  te.msg[0] = 0;
  int r = trace_stream_next(src->s, jr, name, &te);
  if (r < 0) {
    snprintf(err, errlen, "%s", te.msg);
    /* Running out of memory is a failure of the run, not of its input. */
    return strstr(te.msg, "out of memory") ? -2 : -1;
  }
  if (r == 0)
    return 0;
  if (src->count > 0 && jr->submit_us < src->last_submit) {
    snprintf(err, errlen,
             "%s:%" PRId64 ": jobs are not in submit order (this job is "
             "submitted before the one on line %" PRId64 ")",
             trace_stream_meta(src->s)->path, (int64_t)jr->line, src->last_line);
    return -3;
  }
  src->last_submit = jr->submit_us;
  src->last_line = jr->line;
  *idx = src->count++;
  return 1;
}

int src_rewind(job_src *src, char *err, size_t errlen) {
  src->pos = 0;
  src->count = 0;
  src->last_submit = INT64_MIN;
  if (src->s) {
    trace_error te;
    te.msg[0] = 0;
    if (trace_stream_rewind(src->s, &te)) {
      snprintf(err, errlen, "%s", te.msg);
      return strstr(te.msg, "out of memory") ? -2 : -1;
    }
  }
  return 0;
}
