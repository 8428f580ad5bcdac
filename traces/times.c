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
  double mean_dur_s = sum / (double)t->n / 1e6;
  double mean_gpus = gpus / (double)t->n;
  double rate = load * cluster_gpus / ((mean_dur_s > 0 ? mean_dur_s : 1) *
                                       mean_gpus);
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
