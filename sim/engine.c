/*
 * The replay engine. See engine.h for the model; the definitions of every
 * reported number are in DESIGN.md section 6 and restated next to the code
 * that computes them.
 */
#include "engine.h"
#include "heap.h"

#include <gsl/gsl_statistics_double.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { EV_FINISH = 1 };

__extension__ typedef __int128 i128;

#define US_PER_HOUR 3600000000.0

void sim_fmt_seconds(char *buf, size_t len, int64_t us) {
  const char *sign = us < 0 ? "-" : "";
  uint64_t a = us < 0 ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
  uint64_t s = a / 1000000u, f = a % 1000000u;
  if (f == 0) {
    snprintf(buf, len, "%s%" PRIu64, sign, s);
    return;
  }
  char frac[8];
  snprintf(frac, sizeof frac, "%06" PRIu64, f);
  for (int i = 5; i > 0 && frac[i] == '0'; i--)
    frac[i] = 0;
  snprintf(buf, len, "%s%" PRIu64 ".%s", sign, s, frac);
}

/* Sorts non-negative finite doubles ascending: their IEEE-754 bit patterns
 * order like unsigned integers, so an LSD radix sort on 16-bit digits does
 * it in 4 linear passes (qsort took ~40% of a first-fit replay's time on a
 * million jobs). Falls back to qsort for negative values. */
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void sort_nonneg(double *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(v[i] >= 0)) {
      qsort(v, n, sizeof *v, cmp_double);
      return;
    }
  if (n < 4096) {
    qsort(v, n, sizeof *v, cmp_double);
    return;
  }
  uint64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  size_t *count = calloc(65536, sizeof *count);
  if (!a || !b || !count) {
    free(a);
    free(b);
    free(count);
    qsort(v, n, sizeof *v, cmp_double);
    return;
  }
  memcpy(a, v, n * sizeof *a);
  for (int shift = 0; shift < 64; shift += 16) {
    memset(count, 0, 65536 * sizeof *count);
    for (size_t i = 0; i < n; i++)
      count[(a[i] >> shift) & 0xFFFF]++;
    size_t sum = 0;
    for (size_t d = 0; d < 65536; d++) {
      size_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++)
      b[count[(a[i] >> shift) & 0xFFFF]++] = a[i];
    uint64_t *tmp = a;
    a = b;
    b = tmp;
  }
  memcpy(v, a, n * sizeof *a);
  free(a);
  free(b);
  free(count);
}

void sim_stats_compute(double *v, size_t n, sim_stats *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  if (n == 0)
    return;
  sort_nonneg(v, n);
  /* Kahan-free plain sum in sorted order: deterministic for given input. */
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += v[i];
  out->mean = sum / (double)n;
  out->p50 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.50);
  out->p95 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.95);
  out->p99 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99);
  out->max = v[n - 1];
}

void sim_result_free(sim_result *r) {
  free(r->js);
  memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------------- */

/* Jobs in arrival order: by submit time, ties in trace order. */
typedef struct {
  int64_t submit;
  uint32_t idx;
} arrival;

static int cmp_arrival(const void *a, const void *b) {
  const arrival *x = a, *y = b;
  if (x->submit != y->submit)
    return x->submit < y->submit ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Failed request shapes within one queue pass: a job whose shape already
 * failed in this pass cannot fit either (allocations in the pass only take
 * resources away). Open addressing, cleared by bumping a generation. */
#define MEMO_SIZE 4096
typedef struct memo_entry {
  int64_t cpu, mem;
  uint64_t mask;
  int32_t k, milli;
  uint32_t gen;
} memo_entry;

typedef struct engine {
  sim_cluster *sc;
  const trace *t;
  const sim_options *opt;
  lsched_policy *pol;
  job_state *js;
  uint64_t *spec_mask;  /* per trace spec */
  uint8_t *spec_absent; /* per trace spec: no allowed model in cluster */
  event_heap heap;
  uint32_t *queue;      /* job indices, FIFO order */
  size_t qhead, qlen;   /* live entries queue[qhead .. qhead+qlen) */
  size_t new_from;      /* queue offset (from qhead) of unseen arrivals */
  int freed;            /* resources released since the last pass */
  memo_entry *memo;
  uint32_t memo_gen;
  /* time-weighted state */
  int64_t now;
  int64_t alloc_milli;  /* allocated GPU milli now */
  size_t running;
  i128 alloc_area;      /* integral of alloc_milli dt (milli x us) */
  uint64_t events;
  size_t done;
} engine;

static void build_request(const engine *e, const job_record *j,
                          lsched_request *r) {
  lsched_request init = LSCHED_REQUEST_INIT;
  *r = init;
  r->cpu_milli = j->cpu_milli;
  r->memory_mib = j->memory_mib;
  r->gpu_count = j->num_gpu;
  r->gpu_milli = j->num_gpu > 0 ? j->gpu_milli : 0;
  r->model_mask = j->gpu_spec >= 0 ? e->spec_mask[j->gpu_spec] : 0;
  r->priority = j->qos;
}

static uint32_t memo_hash(const lsched_request *r) {
  uint64_t h = (uint64_t)r->cpu_milli * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t)r->memory_mib * 0xC2B2AE3D27D4EB4Full;
  h ^= ((uint64_t)r->gpu_count << 32 | (uint32_t)r->gpu_milli) *
       0x165667B19E3779F9ull;
  h ^= r->model_mask * 0x27D4EB2F165667C5ull;
  h ^= h >> 29;
  return (uint32_t)(h % MEMO_SIZE);
}

static memo_entry *memo_slot(engine *e, const lsched_request *r, int *found) {
  uint32_t i = memo_hash(r);
  for (int probe = 0; probe < 8; probe++, i = (i + 1) % MEMO_SIZE) {
    memo_entry *m = &e->memo[i];
    if (m->gen != e->memo_gen) {
      *found = 0;
      return m;
    }
    if (m->cpu == r->cpu_milli && m->mem == r->memory_mib &&
        m->k == r->gpu_count && m->milli == r->gpu_milli &&
        m->mask == r->model_mask) {
      *found = 1;
      return m;
    }
  }
  *found = 0;
  return NULL; /* table crowded: do not memoise this shape */
}

/* Advances the time-weighted integrals to time t. */
static void advance(engine *e, int64_t t) {
  int64_t dt = t - e->now;
  if (dt > 0) {
    e->alloc_area += (i128)e->alloc_milli * dt;
  }
  e->now = t;
}

static int64_t job_duration(const engine *e, const job_record *j) {
  return j->duration_us >= 0 ? j->duration_us : e->opt->unknown_duration_us;
}

/* Tries to start job j now. 1 started, 0 no fit, -1 internal error. */
static int try_start(engine *e, uint32_t j, char *err, size_t errlen) {
  const job_record *jr = &e->t->jobs[j];
  lsched_request req;
  build_request(e, jr, &req);
  int found = 0;
  memo_entry *m = memo_slot(e, &req, &found);
  if (found)
    return 0;
  lsched_placement p;
  int rc = lsched_policy_place(e->pol, &req, &p);
  if (rc == LSCHED_ENOFIT) {
    if (m) {
      m->cpu = req.cpu_milli;
      m->mem = req.memory_mib;
      m->k = req.gpu_count;
      m->milli = req.gpu_milli;
      m->mask = req.model_mask;
      m->gen = e->memo_gen;
    }
    return 0;
  }
  if (rc == LSCHED_OK)
    rc = lsched_alloc(e->sc->c, &p);
  if (rc != LSCHED_OK) {
    snprintf(err, errlen, "job %s: policy %s: %s (%s)",
             trace_job_name(e->t, j), e->opt->policy, lsched_strerror(rc),
             lsched_cluster_errmsg(e->sc->c));
    return -1;
  }
  job_state *s = &e->js[j];
  s->start_us = e->now;
  s->node = p.node;
  s->gpu_mask = p.gpu_mask;
  s->gpu_milli = (int16_t)p.gpu_milli;
  s->status = JOB_RUNNING;
  int64_t milli = (int64_t)p.gpu_count * p.gpu_milli;
  e->alloc_milli += milli;
  e->running++;
  if (heap_push(&e->heap, e->now + job_duration(e, jr), j, EV_FINISH)) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 1;
}

static void finish(engine *e, uint32_t j, char *err, size_t errlen,
                   int *fail) {
  const job_record *jr = &e->t->jobs[j];
  job_state *s = &e->js[j];
  lsched_placement p;
  p.node = s->node;
  p.gpu_count = jr->num_gpu;
  p.gpu_milli = jr->num_gpu > 0 ? s->gpu_milli : 0;
  p.gpu_mask = s->gpu_mask;
  p.cpu_milli = jr->cpu_milli;
  p.memory_mib = jr->memory_mib;
  int rc = lsched_release(e->sc->c, &p);
  if (rc) {
    snprintf(err, errlen, "job %s: release failed: %s (%s)",
             trace_job_name(e->t, j), lsched_strerror(rc),
             lsched_cluster_errmsg(e->sc->c));
    *fail = 1;
    return;
  }
  int64_t milli = (int64_t)p.gpu_count * p.gpu_milli;
  e->alloc_milli -= milli;
  e->running--;
  e->done++;
  s->finish_us = e->now;
  s->status = JOB_DONE;
  e->freed = 1;
}

/* One scheduling pass over the queue. 0, or -1 on internal error. */
static int schedule(engine *e, char *err, size_t errlen) {
  e->memo_gen++;
  if (e->opt->queue == SIM_QUEUE_FIFO) {
    /* Head-of-line blocking: only the head may start; once it failed it
     * can only succeed after a release. */
    if (!e->freed && e->new_from > 0)
      return 0;
    while (e->qlen > 0) {
      uint32_t j = e->queue[e->qhead];
      int r = try_start(e, j, err, errlen);
      if (r < 0)
        return -1;
      if (r == 0)
        break;
      e->qhead++;
      e->qlen--;
    }
    e->new_from = e->qlen; /* the head (if any) has been tried */
    e->freed = 0;
    return 0;
  }
  /* skip: without a release, jobs that failed before still fail, so only
   * unseen arrivals need a try. Started jobs are compacted out. */
  size_t from = e->freed ? 0 : e->new_from;
  size_t w = e->qhead + from;
  for (size_t i = from; i < e->qlen; i++) {
    uint32_t j = e->queue[e->qhead + i];
    int r = try_start(e, j, err, errlen);
    if (r < 0)
      return -1;
    if (r == 0)
      e->queue[w++] = j;
  }
  e->qlen = w - e->qhead;
  e->new_from = e->qlen;
  e->freed = 0;
  return 0;
}

static void timeline_row(engine *e, int64_t total_milli) {
  char ts[32];
  sim_fmt_seconds(ts, sizeof ts, e->now);
  double ratio = total_milli ? (double)e->alloc_milli / (double)total_milli : 0;
  fprintf(e->opt->timeline, "%s,%" PRId64 ",%.6f,%zu,%zu\n", ts,
          e->alloc_milli, ratio, e->running, e->qlen);
}

static int resolve_specs(engine *e, const gpu_catalog *cat, char *err,
                         size_t errlen) {
  const trace *t = e->t;
  e->spec_mask = calloc(t->nspecs ? (size_t)t->nspecs : 1, sizeof *e->spec_mask);
  e->spec_absent = calloc(t->nspecs ? (size_t)t->nspecs : 1, 1);
  if (!e->spec_mask || !e->spec_absent) {
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  for (int s = 0; s < t->nspecs; s++) {
    char why[256];
    int r = sim_cluster_spec_mask(e->sc, cat, t->specs[s], &e->spec_mask[s],
                                  why, sizeof why);
    if (r < 0) {
      /* Name the first job that uses this spec. */
      size_t j = 0;
      while (j < t->n && t->jobs[j].gpu_spec != s)
        j++;
      snprintf(err, errlen, "%s:%d: field 'gpu_spec': %s", t->path,
               j < t->n ? (int)t->jobs[j].line : 0, why);
      return -1;
    }
    e->spec_absent[s] = (uint8_t)(r == 1);
  }
  return 0;
}

int sim_run(sim_cluster *sc, const gpu_catalog *cat, const trace *t,
            const sim_options *opt, sim_result *out, char *err,
            size_t errlen) {
  memset(out, 0, sizeof *out);
  engine e;
  memset(&e, 0, sizeof e);
  e.sc = sc;
  e.t = t;
  e.opt = opt;
  heap_init(&e.heap);
  int rc = -2;
  arrival *arr = NULL;
  lsched_registry *reg = NULL;

  if (t->n == 0) {
    snprintf(err, errlen, "%s: the trace has no jobs", t->path);
    return -1;
  }
  if (t->n > UINT32_MAX - 1) {
    snprintf(err, errlen, "%s: more than 2^32-1 jobs", t->path);
    return -1;
  }
  if (opt->unknown_duration_us < 0)
    for (size_t j = 0; j < t->n; j++)
      if (t->jobs[j].duration_us < 0) {
        snprintf(err, errlen,
                 "%s:%d: job %s has no duration (this trace format has no "
                 "times); replay needs --unknown-duration SECONDS",
                 t->path, (int)t->jobs[j].line, trace_job_name(t, j));
        return -1;
      }
  if ((rc = lsched_registry_create(&reg, NULL)) ||
      (rc = lsched_registry_add_builtins(reg))) {
    snprintf(err, errlen, "registry: %s", lsched_strerror(rc));
    rc = -2;
    goto out;
  }
  const lsched_policy_ops *ops = lsched_registry_find(reg, opt->policy);
  if (!ops) {
    int len = snprintf(err, errlen, "unknown policy '%s' (available:",
                       opt->policy);
    for (size_t i = 0; i < lsched_registry_count(reg) && len > 0 &&
                       (size_t)len < errlen;
         i++)
      len += snprintf(err + len, errlen - (size_t)len, " %s",
                      lsched_registry_at(reg, i)->name);
    if (len > 0 && (size_t)len < errlen)
      snprintf(err + len, errlen - (size_t)len, ")");
    rc = -1;
    goto out;
  }
  if ((rc = lsched_policy_create(&e.pol, sc->c, ops))) {
    snprintf(err, errlen, "policy %s: %s", opt->policy, lsched_strerror(rc));
    rc = -2;
    goto out;
  }
  char seedbuf[32];
  snprintf(seedbuf, sizeof seedbuf, "%" PRIu64, opt->seed);
  rc = lsched_policy_set_param(e.pol, "seed", seedbuf);
  if (rc != LSCHED_OK && rc != LSCHED_ENOENT) {
    snprintf(err, errlen, "policy %s: seed: %s", opt->policy,
             lsched_strerror(rc));
    rc = -2;
    goto out;
  }
  rc = resolve_specs(&e, cat, err, errlen);
  if (rc)
    goto out;
  rc = -2;
  e.js = calloc(t->n, sizeof *e.js);
  e.queue = malloc(t->n * sizeof *e.queue);
  e.memo = calloc(MEMO_SIZE, sizeof *e.memo);
  arr = malloc(t->n * sizeof *arr);
  if (!e.js || !e.queue || !e.memo || !arr) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  for (size_t j = 0; j < t->n; j++) {
    arr[j].submit = t->jobs[j].submit_us;
    arr[j].idx = (uint32_t)j;
    e.js[j].start_us = e.js[j].finish_us = -1;
    e.js[j].node = -1;
  }
  /* Most traces are already in submit order: sort only when needed. */
  for (size_t j = 1; j < t->n; j++)
    if (cmp_arrival(&arr[j - 1], &arr[j]) > 0) {
      qsort(arr, t->n, sizeof *arr, cmp_arrival);
      break;
    }

  lsched_totals tot;
  lsched_cluster_totals(sc->c, &tot);
  if (opt->timeline)
    fprintf(opt->timeline, "time,alloc_gpu_milli,alloc_ratio,running,queued\n");

  size_t next = 0, n = t->n;
  e.now = arr[0].submit;
  int fail = 0;
  uint64_t next_progress = 65536;
  while (next < n || e.heap.n > 0) {
    int64_t tnext = INT64_MAX;
    if (next < n)
      tnext = arr[next].submit;
    const sim_event *top = heap_top(&e.heap);
    if (top && top->time < tnext)
      tnext = top->time;
    advance(&e, tnext);
    /* Completions first (they only free resources), then arrivals in
     * submit order; then one scheduling pass. */
    while ((top = heap_top(&e.heap)) && top->time == tnext) {
      sim_event ev;
      heap_pop(&e.heap, &ev);
      e.events++;
      finish(&e, ev.job, err, errlen, &fail);
      if (fail)
        goto out;
    }
    while (next < n && arr[next].submit == tnext) {
      uint32_t j = arr[next++].idx;
      const job_record *jr = &t->jobs[j];
      e.events++;
      lsched_request req;
      build_request(&e, jr, &req);
      if (jr->gpu_spec >= 0 && e.spec_absent[jr->gpu_spec] &&
          jr->num_gpu > 0) {
        e.js[j].status = JOB_NEVER_MODEL;
        continue;
      }
      if (!lsched_can_ever_fit(sc->c, &req)) {
        e.js[j].status = JOB_NEVER_NO_NODE;
        continue;
      }
      e.js[j].status = JOB_QUEUED;
      e.queue[e.qhead + e.qlen++] = j;
    }
    if (schedule(&e, err, errlen))
      goto out;
    /* One timeline row per distinct time, after everything at that time. */
    top = heap_top(&e.heap);
    int more_now = (next < n && arr[next].submit == tnext) ||
                   (top && top->time == tnext);
    if (opt->timeline && !more_now)
      timeline_row(&e, tot.gpu_milli);
    if (opt->progress && e.events >= next_progress) {
      next_progress = e.events + 65536;
      opt->progress(e.now, e.events, e.done, n, opt->progress_user);
    }
  }

  /* ---- results (definitions: DESIGN.md section 6) ---- */
  out->jobs = n;
  out->events = e.events;
  out->unpriced_gpus = sc->unpriced_gpus;
  out->first_arrival_us = arr[0].submit;
  out->last_completion_us = arr[0].submit;
  double *qv = malloc(n * sizeof *qv), *jv = malloc(n * sizeof *jv);
  if (!qv || !jv) {
    free(qv);
    free(jv);
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  size_t nq = 0, nj = 0;
  /* Allocated cost = sum over jobs of the node's price x GPUs taken x run
   * time, per job (exact per job, summed in trace order). */
  double cost_alloc = 0;
  for (size_t j = 0; j < n; j++) {
    job_state *s = &e.js[j];
    const job_record *jr = &t->jobs[j];
    if (s->status == JOB_QUEUED) /* cannot happen: see schedule() */
      s->status = JOB_NEVER_QUEUED;
    switch (s->status) {
    case JOB_DONE:
      out->completed++;
      qv[nq++] = (double)(s->start_us - jr->submit_us) / 1e6;
      jv[nj++] = (double)(s->finish_us - jr->submit_us) / 1e6;
      cost_alloc += sc->node_price[s->node] * (double)jr->num_gpu *
                    (double)s->gpu_milli / 1000.0 *
                    (double)(s->finish_us - s->start_us) / US_PER_HOUR;
      if (s->finish_us > out->last_completion_us)
        out->last_completion_us = s->finish_us;
      break;
    case JOB_NEVER_NO_NODE:
      out->never_no_node++;
      break;
    case JOB_NEVER_MODEL:
      out->never_model++;
      break;
    default:
      out->never_queued++;
      break;
    }
  }
  out->never_started = out->never_no_node + out->never_model + out->never_queued;
  sim_stats_compute(qv, nq, &out->queue_time_s);
  sim_stats_compute(jv, nj, &out->jct_s);
  free(qv);
  free(jv);
  /* Span [first arrival, last completion]; with no completion it is 0 and
   * the time-weighted means are 0. */
  out->makespan_us = out->last_completion_us - out->first_arrival_us;
  double span = (double)out->makespan_us;
  out->gpu_alloc_ratio_mean =
      span > 0 && tot.gpu_milli > 0
          ? (double)e.alloc_area / (double)tot.gpu_milli / span
          : 0;
  /* GPU-hours allocated = integral of allocated milli / 1000. */
  out->allocated_gpu_hours = (double)e.alloc_area / 1000.0 / US_PER_HOUR;
  /* Cluster cost: every priced GPU for the whole span. */
  double price_sum = 0;
  for (int i = 0; i < sc->nodes; i++) {
    lsched_node_info ni;
    lsched_cluster_node_info(sc->c, i, &ni);
    price_sum += sc->node_price[i] * ni.gpu_count;
  }
  out->cost_total = price_sum * span / US_PER_HOUR;
  out->cost_idle = out->cost_total - cost_alloc;
  if (out->cost_idle < 0 && out->cost_idle > -1e-9 * out->cost_total)
    out->cost_idle = 0; /* rounding of the two sums */
  out->cost_per_allocated_gpu_hour =
      out->allocated_gpu_hours > 0 ? out->cost_total / out->allocated_gpu_hours
                                   : 0;
  out->js = e.js;
  e.js = NULL;
  rc = 0;
out:
  lsched_policy_destroy(e.pol);
  lsched_registry_destroy(reg);
  heap_free(&e.heap);
  free(e.js);
  free(e.queue);
  free(e.memo);
  free(e.spec_mask);
  free(e.spec_absent);
  free(arr);
  if (rc == -2 && !err[0])
    snprintf(err, errlen, "internal error");
  return rc;
}
