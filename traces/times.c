/* Synthetic arrival times and durations for traces without them (see
 * trace_synthetic_times in trace.h). */
#include "trace.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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
  for (size_t i = 0; i < t->n; i++) {
    now += gsl_ran_exponential(rng, 1.0 / rate);
    t->jobs[i].submit_us = llround(now * 1e6);
  }
  t->has_times = 1;
  gsl_rng_free(rng);
  free(durs);
  return 0;
}
