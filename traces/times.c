/* Synthetic arrival times and durations for traces without them (see
 * trace_synthetic_times in trace.h). */
#include "trace_internal.h"

#include <gsl/gsl_randist.h>
#include <inttypes.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int trace_horizon_add(trace_horizon *h, const job_record *j, const char *path,
                      trace_error *err) {
  int64_t d = j->duration_us > 0 ? j->duration_us : 0, end, sum, top;
  if (j->submit_us < 0 || j->submit_us > TRACE_MAX_TIME_US) {
    trace_seterr(err, "%s:%" PRId64 ": field 'submit': outside the time "
                 "range 0..%" PRId64 " s", path, j->line, TRACE_MAX_TIME_S);
    return -1;
  }
  if (__builtin_add_overflow(j->submit_us, d, &end) || end > TRACE_MAX_TIME_US) {
    trace_seterr(err, "%s:%" PRId64 ": field 'duration': submit + duration "
                 "ends past the time range (%" PRId64 " s)", path, j->line,
                 TRACE_MAX_TIME_S);
    return -1;
  }
  top = j->submit_us > h->end_us ? j->submit_us : h->end_us;
  if (__builtin_add_overflow(top, d, &sum) || sum > TRACE_MAX_TIME_US) {
    trace_seterr(err, "%s:%" PRId64 ": field 'duration': the jobs so far, "
                 "run one after another in file order, would end past the "
                 "time range (%" PRId64 " s)", path, j->line,
                 TRACE_MAX_TIME_S);
    return -1;
  }
  h->end_us = sum;
  return 0;
}

int trace_synthetic_times(trace *t, const trace *from, double load,
                          int cluster_gpus, uint64_t seed, trace_error *err) {
  if (!(load > 0) || !isfinite(load) || cluster_gpus <= 0) {
    snprintf(err->msg, sizeof err->msg,
             "synthetic times: load must be > 0 and the cluster must have "
             "GPUs");
    return -1;
  }
  size_t nd = 0;
  for (size_t i = 0; i < from->n; i++)
    nd += from->jobs[i].duration_us >= 0;
  double gpus = 0;
  for (size_t i = 0; i < t->n; i++)
    gpus += (double)t->jobs[i].num_gpu * t->jobs[i].gpu_milli / 1000.0;
  if (nd == 0 || gpus <= 0) {
    snprintf(err->msg, sizeof err->msg, "%s: %s",
             nd == 0 ? from->path : t->path,
             nd == 0 ? "no job has a duration to draw from"
                     : "no GPU demand to scale arrivals to");
    return -1;
  }
  int64_t *durs = malloc(nd * sizeof *durs);
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!durs || !rng) {
    free(durs);
    if (rng)
      gsl_rng_free(rng);
    snprintf(err->msg, sizeof err->msg, "out of memory");
    return -1;
  }
  nd = 0;
  for (size_t i = 0; i < from->n; i++)
    if (from->jobs[i].duration_us >= 0)
      durs[nd++] = from->jobs[i].duration_us;
  /* MT19937 keeps 32 bits of its seed: fold the high half in. */
  gsl_rng_set(rng, (unsigned long)((seed ^ (seed >> 32)) & 0xFFFFFFFFu));
  /* Durations first (so the rate can use their mean), then arrivals. */
  double sum = 0;
  for (size_t i = 0; i < t->n; i++) {
    size_t k = (size_t)gsl_rng_uniform_int(rng, (unsigned long)nd);
    t->jobs[i].duration_us = durs[k];
    t->jobs[i].flags &= (uint8_t)~TRACE_JOB_NO_DURATION;
    sum += (double)durs[k];
  }
  /* The rate r makes the GPU demand offered during the arrival window
   * W = n / r, each job counted for min(duration, W), equal to load x the
   * cluster's GPUs on average:  r x g x E[min(d, n / r)] = load x C, with
   * g the mean GPUs per job. (With the heavy-tailed durations of real
   * traces, the plain mean duration would count months-long jobs in full
   * and leave the window nearly idle.) The left side grows with r, so
   * bisection on log r finds it. */
  (void)sum;
  double g = gpus / (double)t->n, target = load * cluster_gpus;
  double lo = 1e-12, hi = 1e12;
  for (int it = 0; it < 200; it++) {
    double r = sqrt(lo * hi), w = (double)t->n / r, acc = 0;
    for (size_t i = 0; i < t->n; i++) {
      double d = (double)t->jobs[i].duration_us / 1e6;
      acc += d < w ? d : w;
    }
    if (r * g * acc / (double)t->n < target)
      lo = r;
    else
      hi = r;
  }
  double rate = sqrt(lo * hi);
  double now = 0;
  trace_horizon h = {0};
  for (size_t i = 0; i < t->n; i++) {
    now += gsl_ran_exponential(rng, 1.0 / rate);
    /* Checked before the conversion: llround of a value past int64 is
     * undefined (it gave INT64_MIN). */
    if (!(now * 1e6 <= (double)TRACE_MAX_TIME_US)) {
      snprintf(err->msg, sizeof err->msg,
               "synthetic times: load %g puts job %zu's arrival at %g s, "
               "past the time range (%" PRId64 " s); use a larger load",
               load, i + 1, now, TRACE_MAX_TIME_S);
      gsl_rng_free(rng);
      free(durs);
      return -1;
    }
    t->jobs[i].submit_us = llround(now * 1e6);
  }
  for (size_t i = 0; i < t->n; i++) {
    trace_error te;
    if (trace_horizon_add(&h, &t->jobs[i], t->path, &te)) {
      *err = te; /* the reason first: never cut (issue #17) */
      size_t l = strlen(err->msg);
      snprintf(err->msg + l, sizeof err->msg - l,
               " (synthetic times: load %g, durations drawn from %s)", load,
               from->path);
      gsl_rng_free(rng);
      free(durs);
      return -1;
    }
  }
  t->has_times = 1;
  gsl_rng_free(rng);
  free(durs);
  return 0;
}
