/*
 * The replay engine. See engine.h for the model; the definitions of every
 * reported number are in DESIGN.md section 6 and restated next to the code
 * that computes them.
 */
#include "engine.h"
#include "fragtrack.h"
#include "heap.h"

#include <libsched/migrate.h>

#include <gsl/gsl_statistics_double.h>
#include <inttypes.h>
#include <math.h>
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

int sim_queue_parse(const char *name, sim_queue_kind *out) {
  static const char *const names[] = {"fifo", "skip", "backfill", "priority"};
  for (int i = 0; i < 4; i++)
    if (strcmp(name, names[i]) == 0) {
      *out = (sim_queue_kind)i;
      return 0;
    }
  return -1;
}

void sim_result_free(sim_result *r) {
  free(r->js);
  for (size_t g = 0; g < r->ngangs; g++)
    free(r->gangs[g].parts);
  free(r->gangs);
  free(r->reserved_us);
  free(r->migrations);
  free(r->preemptions);
  free(r->lost_gpu_s);
  sim_mig_result_free(r->mig);
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
  int32_t mig; /* MIG kind | compute << 3 (memory: in mem's place below) */
  int64_t mig_mem;
} memo_entry;

typedef struct run_end {
  int64_t end;
  uint32_t job;
} run_end;

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
  int queue_changed;    /* arrivals since the last pass */
  uint32_t head_tried;  /* head job that last failed (head-of-line modes) */
  sim_gang *gangs;      /* parts of running/finished gang jobs */
  size_t ngangs, gangs_cap;
  uint32_t *run_list;   /* running jobs (any order) */
  uint32_t *run_pos;    /* job -> index in run_list */
  size_t nrun;
  run_end *scratch_ends;
  int64_t *reserved;    /* backfill: first reservation of each head job */
  /* Migration / preemption (only with a policy that plans migrations). */
  int can_plan;
  double *node_gpu_gib;  /* GPU memory of each node's model, GiB */
  int64_t *rem_us;       /* work left when the current segment started */
  int64_t *seg_us;       /* start of the current run segment */
  uint16_t *nmig, *npre; /* migrations and preemptions per job */
  double *lost_gpu_s;    /* GPU-seconds of progress lost per job */
  lsched_running *plan_run;
  lsched_placement *plan_parts;
  size_t plan_cap;
  uint64_t migrations, preemptions;
  uint32_t plan_failed;  /* head whose last plan failed */
  int64_t total_milli;
  sim_mig *mig;         /* MIG state; NULL without MIG GPUs */
  sim_fragtrack *ft;    /* fragmentation and stranded capacity */
  int reservation_valid;
  int64_t reservation_t;
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
  if (e->mig)
    sim_mig_request(e->mig, (uint32_t)(j - e->t->jobs), r);
}

static int32_t memo_mig(const lsched_request *r) {
  return r->mig_kind | r->mig_compute_milli << 3;
}

static uint32_t memo_hash(const lsched_request *r) {
  uint64_t h = (uint64_t)r->cpu_milli * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t)r->memory_mib * 0xC2B2AE3D27D4EB4Full;
  h ^= ((uint64_t)r->gpu_count << 32 | (uint32_t)r->gpu_milli) *
       0x165667B19E3779F9ull;
  h ^= r->model_mask * 0x27D4EB2F165667C5ull;
  h ^= (uint64_t)memo_mig(r) * 0x9E3779B97F4A7C15ull ^ (uint64_t)r->mig_memory_mib;
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
        m->mask == r->model_mask && m->mig == memo_mig(r) &&
        m->mig_mem == r->mig_memory_mib) {
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
    fragtrack_advance(e->ft, dt);
    if (e->mig)
      sim_mig_advance(e->mig, dt);
  }
  e->now = t;
}

static int64_t job_duration(const engine *e, const job_record *j) {
  return j->duration_us >= 0 ? j->duration_us : e->opt->unknown_duration_us;
}

/* ---- placing, starting and finishing jobs ---- */

/* Placements of job j (1 part, or its gang parts); returns the count. */
static int job_parts(const engine *e, uint32_t j, lsched_placement *parts) {
  const job_state *s = &e->js[j];
  if (s->node <= -2) {
    const sim_gang *g = &e->gangs[-2 - s->node];
    memcpy(parts, g->parts, (size_t)g->n * sizeof *parts);
    return g->n;
  }
  const job_record *jr = &e->t->jobs[j];
  parts[0].node = s->node;
  parts[0].gpu_count = jr->num_gpu;
  parts[0].gpu_milli = jr->num_gpu > 0 ? s->gpu_milli : 0;
  parts[0].gpu_mask = s->gpu_mask;
  parts[0].cpu_milli = jr->cpu_milli;
  parts[0].memory_mib = jr->memory_mib;
  sim_mig_fill(e->mig, j, &parts[0]);
  return 1;
}

static int64_t parts_milli(const lsched_placement *parts, int n) {
  int64_t m = 0;
  for (int i = 0; i < n; i++)
    m += (int64_t)parts[i].gpu_count * parts[i].gpu_milli;
  return m;
}

/* Places and allocates job j now (gang jobs all-or-nothing). 1 placed,
 * 0 no fit (memoised per pass), -1 internal error. */
static int place_job(engine *e, uint32_t j, lsched_placement *parts, int *n,
                     char *err, size_t errlen) {
  const job_record *jr = &e->t->jobs[j];
  lsched_request req;
  build_request(e, jr, &req);
  /* On a cluster with MIG and plain GPUs a job tries its MIG variant when
   * its plain one does not fit (mig_sim.h). */
  int rc = LSCHED_ENOFIT;
  for (int v = 0; v < 2 && rc == LSCHED_ENOFIT; v++) {
    if (v == 1 && !(e->mig && sim_mig_other(e->mig, j, &req)))
      break;
    int found = 0;
    memo_entry *m = memo_slot(e, &req, &found);
    if (found)
      continue;
    if (e->mig)
      sim_mig_before_place(e->mig);
    rc = lsched_place_gang(e->pol, &req, parts, SIM_MAX_PARTS, n);
    if (rc == LSCHED_ENOFIT || rc == LSCHED_ELIMIT) {
      if (m) {
        m->cpu = req.cpu_milli;
        m->mem = req.memory_mib;
        m->k = req.gpu_count;
        m->milli = req.gpu_milli;
        m->mask = req.model_mask;
        m->mig = memo_mig(&req);
        m->mig_mem = req.mig_memory_mib;
        m->gen = e->memo_gen;
      }
      rc = LSCHED_ENOFIT;
    }
  }
  if (rc == LSCHED_ENOFIT)
    return 0;
  if (rc != LSCHED_OK) {
    snprintf(err, errlen, "job %s: policy %s: %s (%s)",
             trace_job_name(e->t, j), e->opt->policy, lsched_strerror(rc),
             lsched_cluster_errmsg(e->sc->c));
    return -1;
  }
  return 1;
}

static void unplace(engine *e, const lsched_placement *parts, int n) {
  while (n-- > 0)
    lsched_release(e->sc->c, &parts[n]);
}

/* Records job j as running on parts (not yet in the event heap). */
static int mark_running(engine *e, uint32_t j, const lsched_placement *parts,
                        int n) {
  job_state *s = &e->js[j];
  if (s->start_us < 0)
    s->start_us = e->now; /* queue time counts to the first start */
  s->status = JOB_RUNNING;
  if (n == 1) {
    s->node = parts[0].node;
    s->gpu_mask = parts[0].gpu_mask;
    s->gpu_milli = (int16_t)parts[0].gpu_milli;
  } else {
    if (e->ngangs == e->gangs_cap) {
      size_t nc = e->gangs_cap ? 2 * e->gangs_cap : 64;
      sim_gang *ng = realloc(e->gangs, nc * sizeof *ng);
      if (!ng)
        return -1;
      e->gangs = ng;
      e->gangs_cap = nc;
    }
    sim_gang *g = &e->gangs[e->ngangs];
    g->parts = malloc((size_t)n * sizeof *parts);
    if (!g->parts)
      return -1;
    memcpy(g->parts, parts, (size_t)n * sizeof *parts);
    g->n = n;
    s->node = -2 - (int32_t)e->ngangs++;
    s->gpu_mask = 0;
    s->gpu_milli = (int16_t)parts[0].gpu_milli;
  }
  e->run_pos[j] = (uint32_t)e->nrun;
  e->run_list[e->nrun++] = j;
  fragtrack_queued(e->ft, j, -1);
  if (e->mig) {
    sim_mig_placed(e->mig, j, parts, n);
    sim_mig_queued(e->mig, j, -1);
  }
  return 0;
}

/* Undoes mark_running (the job goes back to the queue). */
static void unmark_running(engine *e, uint32_t j) {
  job_state *s = &e->js[j];
  if (s->node <= -2 && -2 - s->node == (int32_t)e->ngangs - 1) {
    free(e->gangs[--e->ngangs].parts);
  }
  uint32_t pos = e->run_pos[j], last = e->run_list[--e->nrun];
  e->run_list[pos] = last;
  e->run_pos[last] = pos;
  if (!e->npre || e->npre[j] == 0)
    s->start_us = -1;
  s->node = -1;
  s->gpu_mask = 0;
  s->gpu_milli = 0;
  s->status = JOB_QUEUED;
  fragtrack_queued(e->ft, j, 1);
  if (e->mig)
    sim_mig_queued(e->mig, j, 1);
}

/* Makes a marked job run: its completion event and the allocation sums. */
static int commit_running(engine *e, uint32_t j,
                          const lsched_placement *parts, int n) {
  e->alloc_milli += parts_milli(parts, n);
  e->running++;
  e->reservation_valid = 0;
  int64_t work = job_duration(e, &e->t->jobs[j]);
  /* A new MIG instance is usable after its reconfiguration delay: the job
   * holds its resources from now and runs from now + wait. */
  int64_t wait = e->mig ? sim_mig_commit(e->mig, j, parts, n, e->now) : 0;
  if (wait > 0 && e->js[j].start_us == e->now)
    e->js[j].start_us += wait;
  if (e->rem_us) {
    e->seg_us[j] = e->now + wait;
    work = e->rem_us[j];
  }
  return heap_push(&e->heap, e->now + wait + work, j,
                   EV_FINISH | (uint32_t)e->js[j].epoch << 8);
}

/* Tries to start job j now. 1 started, 0 no fit, -1 internal error. */
static int try_start(engine *e, uint32_t j, char *err, size_t errlen) {
  lsched_placement parts[SIM_MAX_PARTS];
  int n = 0;
  int r = place_job(e, j, parts, &n, err, errlen);
  if (r <= 0)
    return r;
  if (mark_running(e, j, parts, n) || commit_running(e, j, parts, n)) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 1;
}

static void finish(engine *e, uint32_t j, char *err, size_t errlen,
                   int *fail) {
  job_state *s = &e->js[j];
  lsched_placement parts[SIM_MAX_PARTS];
  int n = job_parts(e, j, parts);
  for (int i = n - 1; i >= 0; i--) {
    int rc = lsched_release(e->sc->c, &parts[i]);
    if (rc) {
      snprintf(err, errlen, "job %s: release failed: %s (%s)",
               trace_job_name(e->t, j), lsched_strerror(rc),
               lsched_cluster_errmsg(e->sc->c));
      *fail = 1;
      return;
    }
  }
  e->alloc_milli -= parts_milli(parts, n);
  e->running--;
  e->done++;
  fragtrack_completed(e->ft);
  uint32_t pos = e->run_pos[j], last = e->run_list[--e->nrun];
  e->run_list[pos] = last;
  e->run_pos[last] = pos;
  s->finish_us = e->now;
  s->status = JOB_DONE;
  e->freed = 1;
  e->reservation_valid = 0;
}

/* ---- queue order ---- */

/* Priority class of a job for the `priority` discipline: Guaranteed 3,
 * LS 2, Burstable 1, BE and unknown 0. Higher runs first. */
static int job_priority(const job_record *jr) {
  switch (jr->qos) {
  case TRACE_QOS_GUARANTEED:
    return 3;
  case TRACE_QOS_LS:
    return 2;
  case TRACE_QOS_BURSTABLE:
    return 1;
  default:
    return 0;
  }
}

/* Makes room for one more queue entry: the array holds every job once, so
 * moving the live entries to the front always leaves room (the head index
 * only runs off the end when preempted jobs come back). */
static void queue_room(engine *e) {
  if (e->qhead + e->qlen < e->t->n)
    return;
  memmove(e->queue, e->queue + e->qhead, e->qlen * sizeof *e->queue);
  e->qhead = 0;
}

/* Appends an arrival; under `priority` it goes behind every queued job of
 * its class or higher (FIFO within a class). */
static void enqueue(engine *e, uint32_t j) {
  queue_room(e);
  size_t pos = e->qlen;
  if (e->opt->queue == SIM_QUEUE_PRIORITY) {
    int p = job_priority(&e->t->jobs[j]);
    while (pos > 0 &&
           job_priority(&e->t->jobs[e->queue[e->qhead + pos - 1]]) < p)
      pos--;
    memmove(&e->queue[e->qhead + pos + 1], &e->queue[e->qhead + pos],
            (e->qlen - pos) * sizeof *e->queue);
  }
  e->queue[e->qhead + pos] = j;
  e->qlen++;
  fragtrack_queued(e->ft, j, 1);
  if (e->mig)
    sim_mig_queued(e->mig, j, 1);
}

/* Estimated end of job j if it started at `start`: the runtime estimate is
 * the actual duration x the configured factor (rounded up to a microsecond;
 * EASY backfilling needs estimates, not the truth). */
static int64_t est_end(const engine *e, uint32_t j, int64_t start) {
  double f = e->opt->estimate_factor > 0 ? e->opt->estimate_factor : 1.0;
  double d = ceil((double)job_duration(e, &e->t->jobs[j]) * f);
  if (d > 9.2e18 - (double)start)
    return INT64_MAX;
  return start + (int64_t)d;
}

/* Estimated end of running job j: its current segment's start plus the
 * estimate of the work it had left then (migrations and preemptions move
 * segments). */
static int64_t running_est_end(const engine *e, uint32_t j) {
  if (!e->rem_us)
    return est_end(e, j, e->js[j].start_us);
  double f = e->opt->estimate_factor > 0 ? e->opt->estimate_factor : 1.0;
  double d = ceil((double)e->rem_us[j] * f);
  if (d > 9.2e18 - (double)e->seg_us[j])
    return INT64_MAX;
  return e->seg_us[j] + (int64_t)d;
}

static int cmp_run_end(const void *a, const void *b) {
  const run_end *x = a, *y = b;
  if (x->end != y->end)
    return x->end < y->end ? -1 : 1;
  return (x->job > y->job) - (x->job < y->job);
}

/*
 * EASY reservation of the head job h: the earliest estimated time at which
 * h could start if nothing else started. Running jobs are released on the
 * real cluster in order of estimated end (ties released together) and h is
 * tried after each group; then everything is allocated back, which restores
 * the state exactly. INT64_MAX if h cannot start even on the freed cluster.
 * O(R log R + R x place) for R running jobs.
 */
static int64_t reservation(engine *e, uint32_t h, int *fail) {
  size_t r = e->nrun;
  run_end *ends = e->scratch_ends;
  for (size_t i = 0; i < r; i++) {
    uint32_t j = e->run_list[i];
    ends[i].job = j;
    ends[i].end = running_est_end(e, j);
    if (ends[i].end < e->now)
      ends[i].end = e->now; /* overran its estimate: assume it ends now */
  }
  qsort(ends, r, sizeof *ends, cmp_run_end);
  lsched_request req;
  build_request(e, &e->t->jobs[h], &req);
  lsched_placement parts[SIM_MAX_PARTS], hp[SIM_MAX_PARTS];
  int64_t t = INT64_MAX;
  size_t released = 0;
  while (released < r) {
    int64_t te = ends[released].end;
    while (released < r && ends[released].end == te) {
      int n = job_parts(e, ends[released].job, parts);
      for (int k = n - 1; k >= 0; k--)
        if (lsched_release(e->sc->c, &parts[k]))
          *fail = 1;
      released++;
    }
    int hn = 0;
    if (lsched_place_gang(e->pol, &req, hp, SIM_MAX_PARTS, &hn) ==
        LSCHED_OK) {
      unplace(e, hp, hn);
      t = te;
      break;
    }
  }
  while (released-- > 0) {
    int n = job_parts(e, ends[released].job, parts);
    for (int k = 0; k < n; k++)
      if (lsched_alloc(e->sc->c, &parts[k]))
        *fail = 1;
  }
  return t;
}

/* ---- migration and preemption ---- */

/* What moving the job on p costs: fixed + per GiB of GPU memory it holds
 * (GPUs x share x the node model's memory). */
static double move_cost_s(const engine *e, const lsched_placement *p) {
  double gib = (double)p->gpu_count * p->gpu_milli / 1000.0 *
               e->node_gpu_gib[p->node];
  return e->opt->migration_fixed_s + e->opt->migration_per_gib_s * gib;
}

static int grow_plan(engine *e, size_t need) {
  if (need <= e->plan_cap)
    return 0;
  size_t nc = e->plan_cap ? e->plan_cap : 256;
  while (nc < need)
    nc *= 2;
  lsched_running *r = realloc(e->plan_run, nc * sizeof *r);
  if (r)
    e->plan_run = r;
  lsched_placement *p = realloc(e->plan_parts, nc * sizeof *p);
  if (p)
    e->plan_parts = p;
  if (!r || !p)
    return -1;
  e->plan_cap = nc;
  return 0;
}

/* Puts job j right behind the head of the queue (a preempted job resumes
 * before later arrivals). */
static void requeue_front(engine *e, uint32_t j) {
  queue_room(e);
  size_t pos = e->qlen > 0 ? 1 : 0;
  memmove(&e->queue[e->qhead + pos + 1], &e->queue[e->qhead + pos],
          (e->qlen - pos) * sizeof *e->queue);
  e->queue[e->qhead + pos] = j;
  e->qlen++;
  fragtrack_queued(e->ft, j, 1);
  if (e->mig)
    sim_mig_queued(e->mig, j, 1);
}

/*
 * The head h is blocked. If the cluster's free GPU capacity would hold it,
 * asks the policy for a plan (budget: max_moves, max_moves_per_job, and the
 * head's expected wait = its EASY reservation - now) and applies it:
 * migration reserves the target, frees the source, and the job resumes on
 * the target after its move cost with its remaining work; preemption stops
 * the job, keeps the progress of whole checkpoint intervals, and requeues
 * it behind the head. 1 if anything moved, 0 if not, -1 on error.
 */
static int defragment(engine *e, uint32_t h, char *err, size_t errlen) {
  const job_record *jr = &e->t->jobs[h];
  lsched_request req;
  build_request(e, jr, &req);
  if ((int64_t)req.gpu_count * req.gpu_milli > e->total_milli - e->alloc_milli)
    return 0; /* not a fragmentation problem: capacity is short */
  int fail = 0;
  int64_t t = reservation(e, h, &fail);
  if (fail || grow_plan(e, e->nrun + 1)) {
    snprintf(err, errlen, "defrag: %s", fail ? "inconsistent state" : "out of memory");
    return -1;
  }
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  b.max_moves = e->opt->max_moves;
  b.max_moves_per_job = e->opt->max_moves_per_job;
  b.expected_wait_s = t == INT64_MAX ? 1e18 : (double)(t - e->now) / 1e6;
  for (size_t i = 0; i < e->nrun; i++) {
    uint32_t j = e->run_list[i];
    lsched_running *r = &e->plan_run[i];
    lsched_placement parts[SIM_MAX_PARTS];
    int n = job_parts(e, j, parts);
    e->plan_parts[i] = parts[0];
    r->id = j;
    build_request(e, &e->t->jobs[j], &r->request);
    r->parts = n == 1 ? &e->plan_parts[i] : NULL;
    r->nparts = n;
    r->move_cost_s = move_cost_s(e, &parts[0]);
    /* A job still inside its move (segment not started) is not moved. */
    r->moves = e->seg_us[j] > e->now ? 1 << 20 : e->nmig[j] + e->npre[j];
  }
  lsched_move moves[64];
  size_t nm = 0;
  int rc = lsched_policy_plan_migrations(e->pol, &req, e->plan_run, e->nrun,
                                         &b, moves, 64, &nm);
  if (rc == LSCHED_ENOFIT || (rc == LSCHED_OK && nm == 0))
    return 0;
  if (rc != LSCHED_OK) {
    snprintf(err, errlen, "defrag: %s", lsched_strerror(rc));
    return -1;
  }
  /* Every source is released first, then every target allocated (a
   * target may use room another moved job frees; see migrate.h). */
  for (size_t m = 0; m < nm; m++)
    if (lsched_release(e->sc->c, &moves[m].from)) {
      snprintf(err, errlen, "defrag: release of %s failed: %s",
               trace_job_name(e->t, (uint32_t)e->plan_run[moves[m].index].id),
               lsched_cluster_errmsg(e->sc->c));
      return -1;
    }
  for (size_t m = 0; m < nm; m++) {
    uint32_t j = (uint32_t)e->plan_run[moves[m].index].id;
    job_state *s = &e->js[j];
    const lsched_placement *from = &moves[m].from;
    double gpus = (double)from->gpu_count * from->gpu_milli / 1000.0;
    int64_t end = e->seg_us[j] + e->rem_us[j];
    if (!e->opt->preempt) {
      double cost = move_cost_s(e, from);
      if (lsched_alloc(e->sc->c, &moves[m].to)) {
        snprintf(err, errlen, "defrag: move of %s failed: %s",
                 trace_job_name(e->t, j), lsched_cluster_errmsg(e->sc->c));
        return -1;
      }
      e->alloc_milli += parts_milli(&moves[m].to, 1) - parts_milli(from, 1);
      e->rem_us[j] = end - e->now;
      e->seg_us[j] = e->now + llround(cost * 1e6);
      s->node = moves[m].to.node;
      s->gpu_mask = moves[m].to.gpu_mask;
      s->gpu_milli = (int16_t)moves[m].to.gpu_milli;
      if (e->mig)
        sim_mig_placed(e->mig, j, &moves[m].to, 1);
      s->epoch++;
      if (heap_push(&e->heap, e->seg_us[j] + e->rem_us[j], j,
                    EV_FINISH | (uint32_t)s->epoch << 8)) {
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      e->nmig[j]++;
      e->lost_gpu_s[j] += cost * gpus;
      e->migrations++;
    } else {
      int64_t elapsed = e->now > e->seg_us[j] ? e->now - e->seg_us[j] : 0;
      int64_t ck = llround(e->opt->checkpoint_s * 1e6);
      int64_t kept = ck > 0 ? elapsed / ck * ck : 0;
      if (kept > e->rem_us[j])
        kept = e->rem_us[j];
      e->rem_us[j] -= kept;
      e->lost_gpu_s[j] += (double)(elapsed - kept) / 1e6 * gpus;
      e->alloc_milli -= parts_milli(from, 1);
      e->running--;
      uint32_t pos = e->run_pos[j], last = e->run_list[--e->nrun];
      e->run_list[pos] = last;
      e->run_pos[last] = pos;
      s->epoch++; /* its completion event is now stale */
      s->status = JOB_QUEUED;
      s->node = -1;
      requeue_front(e, j);
      e->npre[j]++;
      e->preemptions++;
    }
  }
  e->freed = 1;
  e->reservation_valid = 0;
  e->head_tried = UINT32_MAX;
  return 1;
}

/* ---- scheduling passes ---- */

/* Head-of-line blocking (fifo, priority): start jobs from the head while
 * they fit. The head is only retried after a release or when it changed. */
static int pass_head(engine *e, char *err, size_t errlen) {
  if (!e->freed && e->qlen > 0 && e->queue[e->qhead] == e->head_tried)
    return 0;
  while (e->qlen > 0) {
    uint32_t j = e->queue[e->qhead];
    int r = try_start(e, j, err, errlen);
    if (r < 0)
      return -1;
    if (r == 0) {
      e->head_tried = j;
      break;
    }
    e->qhead++;
    e->qlen--;
  }
  return 0;
}

/* skip: without a release, jobs that failed before still fail, so only
 * unseen arrivals need a try. Started jobs are compacted out. */
static int pass_skip(engine *e, char *err, size_t errlen) {
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
  return 0;
}

/*
 * EASY backfilling: the head starts as soon as it fits; while it does not,
 * it holds a reservation at its earliest estimated start time T, and a later
 * job may start now only if it fits now and either its estimated end is
 * <= T or, started, it leaves the head's reservation at or before T
 * (checked by recomputing the reservation with it running).
 */
static int pass_backfill(engine *e, char *err, size_t errlen) {
  int changed = e->freed || e->queue_changed;
  if (pass_head(e, err, errlen))
    return -1;
  if (e->qlen < 2 || !changed)
    return 0;
  uint32_t h = e->queue[e->qhead];
  int fail = 0;
  if (!e->reservation_valid) {
    e->reservation_t = reservation(e, h, &fail);
    e->reservation_valid = 1;
    if (e->reserved[h] < 0)
      e->reserved[h] = e->reservation_t;
  }
  /* Without a release only unseen arrivals can newly qualify: the others
   * failed to fit (resources only shrank) or would end after T (their end
   * only moves later). */
  size_t from = e->freed ? 1 : (e->new_from > 1 ? e->new_from : 1);
  size_t w = e->qhead + from;
  for (size_t i = from; i < e->qlen && !fail; i++) {
    uint32_t j = e->queue[e->qhead + i];
    lsched_placement parts[SIM_MAX_PARTS];
    int n = 0;
    int r = place_job(e, j, parts, &n, err, errlen);
    if (r < 0)
      return -1;
    int start = 0;
    if (r == 1) {
      if (e->reservation_t == INT64_MAX ||
          est_end(e, j, e->now) <= e->reservation_t) {
        start = 1;
      } else {
        if (mark_running(e, j, parts, n)) {
          snprintf(err, errlen, "out of memory");
          return -1;
        }
        start = reservation(e, h, &fail) <= e->reservation_t;
        unmark_running(e, j);
      }
      if (!start)
        unplace(e, parts, n);
    }
    if (start) {
      int64_t keep_t = e->reservation_t;
      if (mark_running(e, j, parts, n) || commit_running(e, j, parts, n)) {
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      /* A backfilled job never moves T later; keep it to protect the head
       * against later candidates in this pass. */
      e->reservation_t = keep_t;
      e->reservation_valid = 1;
    } else {
      e->queue[w++] = j;
    }
  }
  if (fail) {
    snprintf(err, errlen, "backfill: inconsistent release/allocation");
    return -1;
  }
  e->qlen = w - e->qhead;
  return 0;
}

/* One scheduling pass over the queue. 0, or -1 on internal error. */
static int schedule(engine *e, char *err, size_t errlen) {
  e->memo_gen++;
  int rc;
  switch (e->opt->queue) {
  case SIM_QUEUE_SKIP:
    rc = pass_skip(e, err, errlen);
    break;
  case SIM_QUEUE_BACKFILL:
    rc = pass_backfill(e, err, errlen);
    break;
  default:
    rc = pass_head(e, err, errlen);
    break;
  }
  /* A blocked head may get room by moving running jobs; a plan that failed
   * is not retried for the same head until something was released. */
  if (rc == 0 && e->can_plan && e->qlen > 0) {
    uint32_t h = e->queue[e->qhead];
    if (e->js[h].status == JOB_QUEUED && (e->freed || h != e->plan_failed)) {
      int d = defragment(e, h, err, errlen);
      if (d < 0)
        return -1;
      if (d == 0) {
        e->plan_failed = h;
      } else {
        e->memo_gen++;
        rc = e->opt->queue == SIM_QUEUE_SKIP       ? pass_skip(e, err, errlen)
             : e->opt->queue == SIM_QUEUE_BACKFILL ? pass_backfill(e, err, errlen)
                                                   : pass_head(e, err, errlen);
      }
    }
  }
  e->new_from = e->qlen;
  e->freed = 0;
  e->queue_changed = 0;
  return rc;
}

static void timeline_row(engine *e, int64_t total_milli) {
  char ts[32];
  sim_fmt_seconds(ts, sizeof ts, e->now);
  double ratio = total_milli ? (double)e->alloc_milli / (double)total_milli : 0;
  fragtrack_values fv;
  fragtrack_get(e->ft, &fv);
  fprintf(e->opt->timeline, "%s,%" PRId64 ",%.6f,%zu,%zu,%.3f,%.6f,%" PRId64,
          ts, e->alloc_milli, ratio, e->running, e->qlen, fv.frag_amount,
          fv.frag_rate, fv.stranded_gpu_milli);
  if (e->mig)
    sim_mig_timeline(e->mig, e->opt->timeline);
  fputc('\n', e->opt->timeline);
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
  for (int i = 0; i < opt->npolicy_params; i++) {
    char key[128];
    const char *kv = opt->policy_params[i], *eq = strchr(kv, '=');
    size_t kl = eq ? (size_t)(eq - kv) : 0;
    if (!eq || kl == 0 || kl >= sizeof key) {
      snprintf(err, errlen, "--policy-param '%s': expected KEY=VALUE", kv);
      rc = -1;
      goto out;
    }
    memcpy(key, kv, kl);
    key[kl] = 0;
    rc = lsched_policy_set_param(e.pol, key, eq + 1);
    if (rc != LSCHED_OK) {
      snprintf(err, errlen, "policy %s: parameter '%s' = '%s': %s",
               opt->policy, key, eq + 1,
               rc == LSCHED_ENOENT ? "unknown parameter" : lsched_strerror(rc));
      rc = -1;
      goto out;
    }
  }
  rc = resolve_specs(&e, cat, err, errlen);
  if (rc)
    goto out;
  {
    int user_mix = 0;
    for (int i = 0; i < opt->npolicy_params; i++)
      user_mix |= strncmp(opt->policy_params[i], "mix=", 4) == 0;
    rc = sim_mig_begin(&e.mig, sc, cat, t, opt->mig_map, opt->mig_requests,
                       e.pol, user_mix, err, errlen);
    if (rc) {
      if (rc == -2)
        snprintf(err, errlen, "out of memory");
      goto out;
    }
  }
  /* Fragmentation: the trace's typical task types are the workload of the
   * meter and of fragmentation-aware policies (fgd). */
  if (fragtrack_begin(&e.ft, sc, t, e.spec_mask, e.spec_absent)) {
    snprintf(err, errlen, "out of memory");
    rc = -2;
    goto out;
  }
  rc = lsched_policy_set_workload(e.pol, fragtrack_workload(e.ft));
  if (rc != LSCHED_OK && rc != LSCHED_ENOENT) {
    snprintf(err, errlen, "policy %s: workload: %s", opt->policy,
             lsched_strerror(rc));
    rc = -2;
    goto out;
  }
  rc = -2;
  e.js = calloc(t->n, sizeof *e.js);
  e.queue = malloc(t->n * sizeof *e.queue);
  e.run_list = malloc(t->n * sizeof *e.run_list);
  e.run_pos = malloc(t->n * sizeof *e.run_pos);
  e.head_tried = UINT32_MAX;
  if (opt->queue == SIM_QUEUE_BACKFILL) {
    e.scratch_ends = malloc(t->n * sizeof *e.scratch_ends);
    e.reserved = malloc(t->n * sizeof *e.reserved);
    if (e.reserved)
      for (size_t j = 0; j < t->n; j++)
        e.reserved[j] = -1;
  }
  e.memo = calloc(MEMO_SIZE, sizeof *e.memo);
  arr = malloc(t->n * sizeof *arr);
  if (!e.js || !e.queue || !e.memo || !arr || !e.run_list || !e.run_pos ||
      (opt->queue == SIM_QUEUE_BACKFILL && (!e.scratch_ends || !e.reserved))) {
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
  e.total_milli = tot.gpu_milli;
  e.plan_failed = UINT32_MAX;
  {
    /* Does the policy plan migrations? (ENOENT: no.) */
    lsched_request probe = LSCHED_REQUEST_INIT;
    lsched_move mv[1];
    size_t nm;
    e.can_plan = lsched_policy_plan_migrations(e.pol, &probe, NULL, 0, NULL,
                                               mv, 1, &nm) != LSCHED_ENOENT;
  }
  if (e.can_plan) {
    e.node_gpu_gib = calloc((size_t)sc->nodes + 1, sizeof *e.node_gpu_gib);
    e.rem_us = malloc(t->n * sizeof *e.rem_us);
    e.seg_us = calloc(t->n, sizeof *e.seg_us);
    e.nmig = calloc(t->n, sizeof *e.nmig);
    e.npre = calloc(t->n, sizeof *e.npre);
    e.lost_gpu_s = calloc(t->n, sizeof *e.lost_gpu_s);
    if (!e.scratch_ends)
      e.scratch_ends = malloc(t->n * sizeof *e.scratch_ends);
    if (!e.node_gpu_gib || !e.rem_us || !e.seg_us || !e.nmig || !e.npre ||
        !e.lost_gpu_s || !e.scratch_ends) {
      snprintf(err, errlen, "out of memory");
      goto out;
    }
    for (size_t j = 0; j < t->n; j++)
      e.rem_us[j] = job_duration(&e, &t->jobs[j]);
    for (int i = 0; i < sc->nodes; i++) {
      lsched_node_info ni;
      lsched_cluster_node_info(sc->c, i, &ni);
      const char *mname = lsched_cluster_model_name(sc->c, ni.gpu_model);
      const gpu_model_info *gm = mname ? catalog_find(cat, mname) : NULL;
      e.node_gpu_gib[i] = gm ? gm->memory_gib : 0;
    }
  }
  if (opt->timeline)
    fprintf(opt->timeline,
            "time,alloc_gpu_milli,alloc_ratio,running,queued,frag_amount,"
            "frag_rate,stranded_gpu_milli%s\n",
            e.mig ? ",mig_slices_used,mig_frag_slices" : "");

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
      /* Migrated and preempted jobs leave stale completion events. */
      if ((ev.tag >> 8 & 0xFF) != e.js[ev.job].epoch ||
          e.js[ev.job].status != JOB_RUNNING)
        continue;
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
      if (!lsched_can_ever_fit_gang(sc->c, &req) &&
          !(e.mig && sim_mig_other(e.mig, j, &req) &&
            lsched_can_ever_fit_gang(sc->c, &req))) {
        e.js[j].status = JOB_NEVER_NO_NODE;
        continue;
      }
      e.js[j].status = JOB_QUEUED;
      enqueue(&e, j);
      e.queue_changed = 1;
    }
    if (schedule(&e, err, errlen))
      goto out;
    /* One timeline row per distinct time, after everything at that time. */
    top = heap_top(&e.heap);
    int more_now = (next < n && arr[next].submit == tnext) ||
                   (top && top->time == tnext);
    if (!more_now && fragtrack_update(e.ft))
      goto out;
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
  double *mv = malloc(n * sizeof *mv);
  if (!qv || !jv || !mv) {
    free(qv);
    free(jv);
    free(mv);
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  size_t nq = 0, nj = 0, nmv = 0;
  double run_us = 0, used_milli_us = 0; /* over completed jobs */
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
      if (jr->num_gpu > 1)
        mv[nmv++] = qv[nq - 1];
      jv[nj++] = (double)(s->finish_us - jr->submit_us) / 1e6;
      run_us += (double)(s->finish_us - s->start_us);
      used_milli_us += (double)jr->num_gpu * jr->gpu_milli *
                       (double)(s->finish_us - s->start_us);
      {
        lsched_placement parts[SIM_MAX_PARTS];
        int np = job_parts(&e, (uint32_t)j, parts);
        for (int k = 0; k < np; k++)
          cost_alloc += sc->node_price[parts[k].node] *
                        (double)parts[k].gpu_count *
                        (double)parts[k].gpu_milli / 1000.0 *
                        (double)(s->finish_us - s->start_us) / US_PER_HOUR;
      }
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
  sim_stats_compute(mv, nmv, &out->queue_time_multigpu_s);
  free(mv);
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
  out->job_hours = run_us / US_PER_HOUR;
  out->running_jobs_mean = span > 0 ? run_us / span : 0;
  out->cost_per_job_hour =
      out->job_hours > 0 ? out->cost_total / out->job_hours : 0;
  out->gpu_used_ratio_mean =
      span > 0 && tot.gpu_milli > 0
          ? used_milli_us / (double)tot.gpu_milli / span
          : 0;
  fragtrack_means(e.ft, span, &out->frag_amount_mean, &out->frag_rate_mean,
                  &out->stranded_gpu_milli_mean);
  if (e.mig && !(out->mig = sim_mig_finish(e.mig, out->makespan_us))) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  out->js = e.js;
  e.js = NULL;
  out->reserved_us = e.reserved;
  e.reserved = NULL;
  out->migrations = e.nmig;
  out->preemptions = e.npre;
  out->lost_gpu_s = e.lost_gpu_s;
  e.nmig = e.npre = NULL;
  e.lost_gpu_s = NULL;
  out->migrations_total = e.migrations;
  out->preemptions_total = e.preemptions;
  if (out->lost_gpu_s)
    for (size_t j = 0; j < n; j++)
      out->lost_gpu_s_total += out->lost_gpu_s[j];
  out->gangs = e.gangs;
  out->ngangs = e.ngangs;
  e.gangs = NULL;
  e.ngangs = 0;
  rc = 0;
out:
  fragtrack_free(e.ft);
  lsched_policy_destroy(e.pol);
  lsched_registry_destroy(reg);
  heap_free(&e.heap);
  free(e.js);
  free(e.queue);
  free(e.run_list);
  free(e.run_pos);
  free(e.scratch_ends);
  free(e.reserved);
  free(e.node_gpu_gib);
  free(e.rem_us);
  free(e.seg_us);
  free(e.nmig);
  free(e.npre);
  free(e.lost_gpu_s);
  free(e.plan_run);
  free(e.plan_parts);
  for (size_t g = 0; g < e.ngangs; g++)
    free(e.gangs[g].parts);
  free(e.gangs);
  free(e.memo);
  free(e.spec_mask);
  free(e.spec_absent);
  sim_mig_free(e.mig);
  free(arr);
  if (rc == -2 && !err[0])
    snprintf(err, errlen, "internal error");
  return rc;
}
