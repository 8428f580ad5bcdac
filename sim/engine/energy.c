/*
 * Energy as a part of the run (engine_internal.h; the definitions are
 * sim/README.md "Energy" and docs/DESIGN.md section 6).
 *
 * A GPU draws idle_w, plus (busy_w - idle_w) x the share of it the jobs
 * hold: milli / 1000 on exclusive and shared GPUs (an exclusive GPU is
 * held whole), compute slices / 7 of a MIG instance. So
 *
 *   GPU energy = sum over GPUs of idle_w x span
 *              + integral over the run of sum over running parts of
 *                (busy_w - idle_w) x GPUs x share  dt
 *
 * Jobs hold GPUs only inside the span [first arrival, last completion]
 * (cost_usd's span), so the integral over the whole run is the one over
 * the span. Shares are counted in 1/7000 of a GPU (milli x 7, slices x
 * 1000) so that both are integers; the rate (mW x 1/7000 GPU) changes when
 * a job starts, moves, is preempted (it is queued again while it held
 * GPUs) or completes, and the integral is summed in 128-bit integers
 * (mW x 1/7000 GPU x us), converted to kWh once at the end: no drift.
 * GPUs of a model without idle_w / busy_w are left out and counted.
 */
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

/* 1 kWh in mW x us: 1e6 mW x 3.6e9 us. */
#define MW_US_PER_KWH 3.6e15
/* Share units per GPU. */
#define SHARE_PER_GPU 7000

typedef struct energy_part {
  engine *e;
  int nodes;
  int64_t *delta_mw;  /* per node: busy - idle of one GPU, -1 unknown */
  uint8_t *mig;       /* per node: 1 = MIG GPUs */
  int64_t *charged;   /* per slot: its rate while it runs, -1 otherwise
                       * (runs that move running jobs only) */
  size_t ncharged;
  sim_i128 rate;      /* sum of charged */
  sim_i128 area;      /* integral of rate dt */
  int64_t idle_mw;    /* sum over the GPUs with figures of idle_mw */
  int oom;            /* a per-slot table could not grow */
  int uniform;        /* energy_ops_uniform: area from the engine's */
} energy_part;

/* The rate of a job on parts (mW x 1/7000 GPU). */
static int64_t parts_rate(const energy_part *p, const lsched_placement *parts,
                          int n) {
  int64_t r = 0;
  for (int i = 0; i < n; i++) {
    const lsched_placement *pl = &parts[i];
    if (pl->gpu_count <= 0 || pl->node < 0 || pl->node >= p->nodes ||
        p->delta_mw[pl->node] < 0)
      continue;
    /* A MIG instance's milli is its kind's (142, 285, 428, 571, 1000 for
     * 1, 2, 3, 4, 7 compute slices of 7): back to slices. */
    int64_t share = p->mig[pl->node]
                        ? (int64_t)((pl->gpu_milli * 7 + 500) / 1000) * 1000
                        : (int64_t)pl->gpu_milli * 7;
    r += p->delta_mw[pl->node] * pl->gpu_count * share;
  }
  return r;
}

/* s's entry in the per-slot table (grown to hold it), or NULL. */
static int64_t *slot_charge(energy_part *p, const slot *s) {
  size_t i = (size_t)(s - p->e->slots);
  if (i >= p->ncharged) {
    size_t cap = p->ncharged ? p->ncharged : 256;
    while (cap <= i)
      cap *= 2;
    int64_t *c = realloc(p->charged, cap * sizeof *c);
    if (!c) {
      p->oom = 1;
      return NULL;
    }
    for (size_t k = p->ncharged; k < cap; k++)
      c[k] = -1;
    p->charged = c;
    p->ncharged = cap;
  }
  return &p->charged[i];
}

static void charge(energy_part *p, const slot *s, const lsched_placement *parts,
                   int n) {
  int64_t *c = slot_charge(p, s);
  if (!c)
    return;
  if (*c >= 0)
    p->rate -= *c;
  *c = parts_rate(p, parts, n);
  p->rate += *c;
}

static void discharge(energy_part *p, const slot *s) {
  int64_t *c = slot_charge(p, s);
  if (c && *c >= 0) {
    p->rate -= *c;
    *c = -1;
  }
}

static int64_t energy_start(void *self, const slot *s,
                            const lsched_placement *parts, int n,
                            int64_t now) {
  (void)now;
  charge(self, s, parts, n);
  return 0;
}

/* A running job moved (migration): charged again where it is now. A job
 * placed but not started yet (not charged) is left alone. */
static void energy_placed(void *self, const slot *s,
                          const lsched_placement *parts, int n) {
  energy_part *p = self;
  int64_t *c = slot_charge(p, s);
  if (c && *c >= 0)
    charge(p, s, parts, n);
}

/* A charged job queued again was preempted: its GPUs are released. */
static void energy_queued(void *self, const slot *s, int delta) {
  if (delta > 0)
    discharge(self, s);
}

static void energy_finish(void *self, engine *e, const slot *s,
                          const lsched_placement *parts, int n) {
  (void)e;
  (void)parts;
  (void)n;
  discharge(self, s);
}

/* Runs where a running job never moves (energy_ops): a job's parts at its
 * completion are the ones it started on (loop.c's complete rebuilds them
 * from the slot), so its rate is recomputed rather than kept per slot: no
 * per-slot table, whose entry was a cache miss per completion. */
static int64_t energy_start_fixed(void *self, const slot *s,
                                  const lsched_placement *parts, int n,
                                  int64_t now) {
  (void)s;
  (void)now;
  energy_part *p = self;
  p->rate += parts_rate(p, parts, n);
  return 0;
}

static void energy_finish_fixed(void *self, engine *e, const slot *s,
                                const lsched_placement *parts, int n) {
  (void)e;
  (void)s;
  energy_part *p = self;
  p->rate -= parts_rate(p, parts, n);
}

static void energy_advance(void *self, int64_t dt) {
  energy_part *p = self;
  p->area += p->rate * dt;
}

static int energy_results(void *self, const engine *e, sim_result *out) {
  energy_part *p = self;
  if (p->oom)
    return -1;
  const sim_cluster *sc = e->sc;
  int64_t span = out->makespan_us > 0 ? out->makespan_us : 0;
  /* Uniform: every node's rate is delta x GPUs x milli x 7, so the rate
   * is delta x 7 x the engine's allocated milli at every instant, and its
   * integral (over the same steps, in integers) delta x 7 x alloc_area. */
  sim_i128 area =
      p->uniform ? (sim_i128)p->delta_mw[0] * 7 * e->alloc_area : p->area;
  sim_i128 gpu = (sim_i128)p->idle_mw * span * SHARE_PER_GPU + area;
  sim_i128 node = (sim_i128)sc->overhead_mw * span * SHARE_PER_GPU;
  double gpu_kwh = (double)gpu / SHARE_PER_GPU / MW_US_PER_KWH;
  double facility_kwh =
      (double)(gpu + node) / SHARE_PER_GPU / MW_US_PER_KWH * sc->pue;
  out->energy_gpu_kwh = gpu_kwh;
  out->energy_facility_kwh = facility_kwh;
  out->energy_unknown_gpus = sc->unpowered_gpus;
  out->energy_cost_usd =
      e->opt->energy_price > 0 ? facility_kwh * e->opt->energy_price : 0;
  return 0;
}

static void energy_close(void *self) {
  energy_part *p = self;
  free(p->delta_mw);
  free(p->mig);
  free(p->charged);
  free(p);
}

/* Runs whose policy moves or preempts running jobs need the placement and
 * queue hooks too; the others only start, completion and time. */
static const sim_part_ops energy_ops_moving = {
    .name = "energy",
    .on_placed = energy_placed,
    .on_queued = energy_queued,
    .on_start = energy_start,
    .on_finish = energy_finish,
    .on_advance = energy_advance,
    .results = energy_results,
    .close = energy_close,
};
static const sim_part_ops energy_ops = {
    .name = "energy",
    .on_start = energy_start_fixed,
    .on_finish = energy_finish_fixed,
    .on_advance = energy_advance,
    .results = energy_results,
    .close = energy_close,
};

/* Runs where a running job never moves, on a cluster whose nodes all
 * have figures, the same busy - idle per GPU and no MIG GPUs: a job's rate
 * is that difference x its GPU milli x 7, so the run's is a multiple of
 * the allocated milli the engine integrates already (energy_results), and
 * no per-job or per-step hook is needed. */
static const sim_part_ops energy_ops_uniform = {
    .name = "energy",
    .results = energy_results,
    .close = energy_close,
};

/* Every run has it (energy is reported always). */
int energy_part_open(engine *e, const gpu_catalog *cat, const trace *t) {
  (void)cat;
  (void)t;
  const sim_cluster *sc = e->sc;
  energy_part *p = calloc(1, sizeof *p);
  size_t n = sc->nodes > 0 ? (size_t)sc->nodes : 1;
  if (p) {
    p->delta_mw = malloc(n * sizeof *p->delta_mw);
    p->mig = calloc(n, 1);
  }
  if (!p || !p->delta_mw || !p->mig) {
    if (p)
      energy_close(p);
    snprintf(e->err, e->errlen, "out of memory");
    return -2;
  }
  p->e = e;
  p->nodes = sc->nodes;
  for (int i = 0; i < sc->nodes; i++) {
    lsched_node_info ni;
    int gpus = 0;
    if (lsched_cluster_node_info(sc->c, i, &ni) == LSCHED_OK) {
      gpus = ni.gpu_count - sim_node_slots(sc, i); /* pools: below */
      p->mig[i] = (uint8_t)(ni.gpu_mode == LSCHED_GPU_MIG);
    }
    int known = sc->node_idle_mw[i] >= 0;
    p->delta_mw[i] = known ? sc->node_busy_mw[i] - sc->node_idle_mw[i] : -1;
    if (known)
      p->idle_mw += sc->node_idle_mw[i] * gpus;
  }
  p->idle_mw += sc->pool_idle_mw; /* every chassis GPU idles once */
  p->uniform = !e->can_plan && sc->nodes > 0 && p->delta_mw[0] >= 0;
  for (int i = 0; i < sc->nodes && p->uniform; i++)
    p->uniform = !p->mig[i] && p->delta_mw[i] == p->delta_mw[0];
  const sim_part_ops *ops = e->can_plan  ? &energy_ops_moving
                            : p->uniform ? &energy_ops_uniform
                                         : &energy_ops;
  if (engine_add_part(e, ops, p)) {
    energy_close(p);
    snprintf(e->err, e->errlen, "too many parts in one run");
    return -2;
  }
  return 0;
}
