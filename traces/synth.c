/*
 * Synthetic workload generator: Poisson arrivals, lognormal run times and
 * request shapes drawn from a weighted mix, all from one seeded GSL
 * Mersenne Twister so that a seed always gives the same jobs.
 *
 * Draw order per job is fixed (inter-arrival, shape, duration) and every
 * time is accumulated in integer microseconds, so the output does not
 * depend on anything but the parameters and the GSL version. Jobs are
 * drawn one at a time (synth_gen), so a generated trace of any length is
 * written in constant memory; synth_generate collects them in a trace.
 */
#include "trace_internal.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most GPUs one synthetic job may ask for: one node's worth in the
 * largest node list we read (NODE_LIST_MAX_GPUS). */
#define SYNTH_MAX_GPUS NODE_LIST_MAX_GPUS

/*
 * The built-in mix, meant for an A100/H100 cluster of 24 nodes x 8 GPUs:
 * 16 x A100-SXM4-80GB nodes (256000 cpu_milli, 2097152 MiB each) and
 * 8 x H100-SXM5-80GB nodes (224000 cpu_milli, 2097152 MiB each), 192 GPUs,
 * 5888 cores, 48 TiB of memory. The smallest node has 28 cores and 256 GiB
 * per GPU; every shape asks for less per GPU, so GPUs are the bottleneck
 * and any shape fits on any node.
 *
 * Weights are percentages (they sum to 100):
 *   55% whole-GPU training / fine-tuning: 1, 2, 4, 8 GPUs with 8 cores and
 *       64 GiB per GPU (the 8-GPU whole-node job gets 96 cores and 1 TiB,
 *       which still fits the 224-core H100 nodes);
 *   35% fractional GPU (GPU sharing, as in the Alibaba trace): inference
 *       servers at 500 and 250 milli-GPU, dev notebooks at 100 milli;
 *   10% CPU-only jobs (data preparation), 4 cores and 16 GiB.
 *
 * Expected GPU milli per job, E[G]:
 *   (30x1000 + 12x2000 + 8x4000 + 5x8000 + 12x500 + 12x250 + 11x100) / 100
 *   = 136100 / 100 = 1361 milli-GPU.
 * Expected CPU per job: 1291000 / 100 = 12910 milli (offered CPU load
 * about 28% of 5888 cores at the default rate).
 */
static const synth_shape default_shapes[] = {
    /* weight, cpu_milli, memory_mib, num_gpu, gpu_milli */
    {30.0, 8000, 65536, 1, 1000},   /* 1 GPU training */
    {12.0, 16000, 131072, 2, 1000}, /* 2 GPU training */
    {8.0, 32000, 262144, 4, 1000},  /* 4 GPU training */
    {5.0, 96000, 1048576, 8, 1000}, /* whole-node training */
    {12.0, 4000, 32768, 1, 500},    /* inference, half a GPU */
    {12.0, 2000, 16384, 1, 250},    /* inference, quarter GPU */
    {11.0, 1000, 8192, 1, 100},     /* dev notebook */
    {10.0, 4000, 16384, 0, 0},      /* CPU-only */
};
#define NDEFAULT (int)(sizeof default_shapes / sizeof default_shapes[0])

/* GPUs of the cluster the default mix is sized for, and the share of them
 * the offered load should keep busy (busy but with a queue that drains). */
#define DEFAULT_CLUSTER_GPUS 192.0
#define DEFAULT_TARGET_LOAD 0.9

const synth_shape *synth_default_shapes(int *n) {
  if (n)
    *n = NDEFAULT;
  return default_shapes;
}

void synth_default_params(synth_params *p) {
  memset(p, 0, sizeof *p);
  p->seed = 1;
  p->jobs = 5000;
  /* Durations: lognormal with median exp(mu) = 1800 s (30 min) and
   * sigma = 1.0, so the middle 68% of jobs run 11 min to 82 min and about
   * 1 job in 40 runs longer than 4 h. Mean E[D] = exp(mu + sigma^2/2) =
   * 1800 x e^0.5 = 2967.7 s. The cap of 7 days (604800 s) is 5.8 sigma
   * above the median and truncates almost nothing (P ~ 3e-9). */
  p->duration_mu = log(1800.0);
  p->duration_sigma = 1.0;
  p->max_duration_s = 7.0 * 24 * 3600;
  p->shapes = NULL;
  p->nshapes = 0; /* the default mix above */
  /* Offered GPU load = rate x E[D] x E[G] / 1000 GPUs; solve for 90% of
   * 192 GPUs: rate = 0.9 x 192 / (2967.7 s x 1.361) = 0.04278 jobs/s,
   * about 154 jobs an hour, so 5000 jobs span about 32.5 hours. Computed
   * here from the mix so the rate stays right if the mix changes. */
  double sum_w = 0, sum_milli = 0;
  for (int i = 0; i < NDEFAULT; i++) {
    sum_w += default_shapes[i].weight;
    sum_milli += default_shapes[i].weight * default_shapes[i].num_gpu *
                 default_shapes[i].gpu_milli;
  }
  double mean_gpu = sum_milli / sum_w / 1000.0;
  double mean_dur =
      exp(p->duration_mu + p->duration_sigma * p->duration_sigma / 2);
  p->arrival_rate =
      DEFAULT_TARGET_LOAD * DEFAULT_CLUSTER_GPUS / (mean_dur * mean_gpu);
}

static int check_shape(const synth_shape *s, int i, trace_error *err) {
  if (!(s->weight > 0) || !isfinite(s->weight)) {
    trace_seterr(err, "synth: shape %d: weight must be > 0 and finite (got %g)",
                 i, s->weight);
    return -1;
  }
  if (s->cpu_milli < 0 || s->memory_mib < 0) {
    trace_seterr(err,
                 "synth: shape %d: cpu_milli and memory_mib must not be "
                 "negative (got %lld, %lld)",
                 i, (long long)s->cpu_milli, (long long)s->memory_mib);
    return -1;
  }
  if (s->num_gpu < 0 || s->num_gpu > SYNTH_MAX_GPUS) {
    trace_seterr(err, "synth: shape %d: num_gpu must be 0..%d (got %d)", i,
                 SYNTH_MAX_GPUS, (int)s->num_gpu);
    return -1;
  }
  if (s->num_gpu == 0 && s->gpu_milli != 0) {
    trace_seterr(err,
                 "synth: shape %d: gpu_milli must be 0 when num_gpu is 0 "
                 "(got %d)",
                 i, (int)s->gpu_milli);
    return -1;
  }
  if (s->num_gpu > 0 && (s->gpu_milli < 1 || s->gpu_milli > 1000)) {
    trace_seterr(err,
                 "synth: shape %d: gpu_milli must be 1..1000 when num_gpu > 0 "
                 "(got %d)",
                 i, (int)s->gpu_milli);
    return -1;
  }
  return 0;
}

static int check_params(const synth_params *p, const synth_shape *shapes, int n,
                        trace_error *err) {
  if (p->jobs < 1) {
    trace_seterr(err, "synth: jobs must be >= 1 (got %zu)", p->jobs);
    return -1;
  }
  if (!(p->arrival_rate > 0) || !isfinite(p->arrival_rate)) {
    trace_seterr(err, "synth: arrival_rate must be > 0 and finite (got %g)",
                 p->arrival_rate);
    return -1;
  }
  if (!isfinite(p->duration_mu)) {
    trace_seterr(err, "synth: duration_mu must be finite (got %g)",
                 p->duration_mu);
    return -1;
  }
  if (!(p->duration_sigma >= 0) || !isfinite(p->duration_sigma)) {
    trace_seterr(err, "synth: duration_sigma must be >= 0 and finite (got %g)",
                 p->duration_sigma);
    return -1;
  }
  if (!(p->max_duration_s >= 1) ||
      !(p->max_duration_s <= (double)TRACE_MAX_TIME_S)) {
    trace_seterr(err, "synth: max_duration_s must be 1..%lld s (got %g)",
                 (long long)TRACE_MAX_TIME_S, p->max_duration_s);
    return -1;
  }
  if (n < 0 || (n > 0 && !shapes)) {
    trace_seterr(err, "synth: nshapes must be >= 0 with shapes given (got %d)",
                 n);
    return -1;
  }
  double sum = 0;
  for (int i = 0; i < n; i++) {
    if (check_shape(&shapes[i], i, err))
      return -1;
    sum += shapes[i].weight;
  }
  if (!isfinite(sum)) {
    trace_seterr(err, "synth: the shape weights add up to infinity");
    return -1;
  }
  return 0;
}

/* gsl_rng_mt19937 keeps only the low 32 bits of its seed; fold the high
 * half in so that every bit of the 64-bit seed matters (seeds below 2^32
 * are used as they are). GSL maps seed 0 to its default 4357. */
static unsigned long fold_seed(uint64_t seed) {
  return (unsigned long)((seed ^ (seed >> 32)) & 0xffffffffu);
}

struct synth_gen {
  synth_params p;
  const synth_shape *shapes;
  int n;
  gsl_rng *rng;
  gsl_ran_discrete_t *pick;
  double cap_s, mean_gap;
  int64_t submit; /* the last job's submit time */
  size_t i;       /* jobs drawn */
  char name[32];
  trace_horizon h; /* the time range check (trace.h) */
};

void synth_gen_close(synth_gen *g) {
  if (!g)
    return;
  if (g->pick)
    gsl_ran_discrete_free(g->pick);
  if (g->rng)
    gsl_rng_free(g->rng);
  free(g);
}

int synth_gen_open(synth_gen **out, const synth_params *p, trace_error *err) {
  *out = NULL;
  const synth_shape *shapes = p->shapes;
  int n = p->nshapes;
  if (n == 0)
    shapes = synth_default_shapes(&n);
  if (check_params(p, shapes, n, err))
    return -1;
  synth_gen *g = calloc(1, sizeof *g);
  double *w = malloc((size_t)n * sizeof *w);
  if (g && w && (g->rng = gsl_rng_alloc(gsl_rng_mt19937))) {
    for (int i = 0; i < n; i++)
      w[i] = shapes[i].weight;
    g->pick = gsl_ran_discrete_preproc((size_t)n, w);
  }
  free(w);
  if (!g || !g->pick) {
    trace_seterr(err, "synth: out of memory");
    synth_gen_close(g);
    return -1;
  }
  gsl_rng_set(g->rng, fold_seed(p->seed));
  g->p = *p;
  g->shapes = shapes;
  g->n = n;
  g->cap_s = floor(p->max_duration_s);
  g->mean_gap = 1.0 / p->arrival_rate;
  *out = g;
  return 0;
}

int synth_gen_next(synth_gen *g, job_record *job, const char **name,
                   trace_error *err) {
  const synth_params *p = &g->p;
  if (g->i >= p->jobs)
    return 0;
  size_t i = g->i;
  double gap_us = gsl_ran_exponential(g->rng, g->mean_gap) * 1e6;
  if (!(gap_us <= (double)(TRACE_MAX_TIME_US - g->submit))) {
    trace_seterr(err,
                 "synth: job %zu would arrive after the maximum time of "
                 "%lld s (arrival_rate %g is too low for %zu jobs)",
                 i, (long long)TRACE_MAX_TIME_S, p->arrival_rate, p->jobs);
    return -1;
  }
  g->submit += llround(gap_us);
  if (g->submit > TRACE_MAX_TIME_US)
    g->submit = TRACE_MAX_TIME_US; /* llround of the bound itself */
  size_t k = gsl_ran_discrete(g->rng, g->pick);
  double d = round(gsl_ran_lognormal(g->rng, p->duration_mu, p->duration_sigma));
  if (!(d >= 1))
    d = 1;
  if (d > g->cap_s)
    d = g->cap_s;
  int64_t dur = (int64_t)d * TRACE_US_PER_S;
  if (dur > TRACE_MAX_TIME_US - g->submit) {
    trace_seterr(err,
                 "synth: job %zu would end after the maximum time of "
                 "%lld s",
                 i, (long long)TRACE_MAX_TIME_S);
    return -1;
  }
  const synth_shape *s = &g->shapes[k < (size_t)g->n ? k : 0];
  job_record j = {0};
  j.submit_us = g->submit;
  j.duration_us = dur;
  j.cpu_milli = s->cpu_milli;
  j.memory_mib = s->memory_mib;
  j.num_gpu = s->num_gpu;
  j.gpu_milli = s->gpu_milli;
  j.gpu_spec = -1;
  j.qos = TRACE_QOS_UNKNOWN;
  if (trace_horizon_add(&g->h, &j, "synth", NULL) != 0) {
    trace_seterr(err,
                 "synth: job %zu: the jobs so far, run one after another, "
                 "would end after the maximum time of %lld s (max_duration "
                 "too long for %zu jobs)",
                 i, (long long)TRACE_MAX_TIME_S, p->jobs);
    return -1;
  }
  *job = j;
  snprintf(g->name, sizeof g->name, "syn-%zu", i);
  *name = g->name;
  g->i++;
  return 1;
}

int synth_generate(trace *t, const synth_params *p, trace_error *err) {
  trace_free(t);
  synth_gen *g;
  if (synth_gen_open(&g, p, err) != 0)
    return -1;
  job_record j;
  const char *name;
  int rc;
  while ((rc = synth_gen_next(g, &j, &name, err)) == 1)
    if (trace_add_job(t, &j, name, NULL) != 0) {
      trace_seterr(err, "synth: out of memory at job %zu", t->n);
      rc = -1;
      break;
    }
  synth_gen_close(g);
  if (rc == 0 && !(t->path = strdup("<synthetic>"))) {
    trace_seterr(err, "synth: out of memory");
    rc = -1;
  }
  if (rc != 0) {
    trace_free(t);
    return -1;
  }
  t->format = TRACE_FMT_UNKNOWN;
  t->has_times = 1;
  /* The built-in workload's durations are A100-80GB run times (README
   * "Work and speed"). */
  t->measured_on = "A100-SXM4-80GB";
  return 0;
}
