/*
 * Composable GPU pools as a part of the run (engine_internal.h; the model
 * in libsched.h "Composable GPU pools", the definitions in sim/README.md
 * "Composable GPU pools"). libsched places on pool hosts like on any
 * node (a host shows its local GPUs, its attached GPUs and the slots the
 * pool could attach now); this part adds time:
 *
 *   attach   a job whose placement composes a pool GPU (takes an open
 *            slot) holds its resources from its start and runs attach_s
 *            later (the part's on_start wait), once per job; a job that a
 *            migration moves onto a composed GPU resumes attach_s after its
 *            move cost (pools_move_attach, called by migrate.c);
 *   detach   a composed GPU its job released stays attached idle to its
 *            host for detach_s (no other host can have it meanwhile) and
 *            then goes back to the chassis; a job placed on that host in
 *            the window reuses it with no attach wait (sticky reuse);
 *   fabric   a job with any GPU of a pool runs at fabric_speed x its speed
 *            (pools_fabric): under a speed model the speed part's speed
 *            includes it (its run time, moves, re-timings and work
 *            integral follow); with --speed none its run time here /
 *            fabric_speed, rounded to the microsecond, a moved or
 *            restarted job's run time left converted from the factor of
 *            its last placement (work x last / new);
 *            under a speed model a multi-GPU job with a composed GPU runs
 *            at the table's unconsolidated speed (speed.c asks
 *            pools_composed: pool GPUs sit on PCIe/CXL, outside the host's
 *            NVLink, whatever their chassis).
 *
 * The part follows the cluster as a libsched observer: an allocation
 * composes `mask & slots & ~attached` (read before libsched attaches),
 * a release starts the detach clock of the attached GPUs it left fully
 * free. Detaches are timed events: a wake-up event with a stale tag in the
 * engine's heap makes the loop stop at the detach time (it completes no
 * job there) and on_advance detaches first. Trial changes (a gang's parts
 * before it is kept, a migration planner's tries) are undone by libsched
 * and skipped here.
 */
#include "engine_internal.h"

#include <math.h>

typedef struct pool_timer {
  int64_t t;
  int node, slot;
} pool_timer;

typedef struct pools_part {
  engine *e;
  lsched_cluster *c;
  const sim_cluster *sc;
  int n;
  int *spec_of;      /* per node: its pool entry, -1 not a host */
  uint64_t *slots;   /* per node: its composable slots */
  uint64_t *pending; /* per node: slots composed for a job not yet started */
  int64_t *due;      /* per node x 64: detach time of an idle slot, -1 */
  pool_timer *heap;
  size_t nheap, capheap;
  int oom, dirty;
  /* Per slot: the fabric factor its run time was last converted at (1
   * before its first start): a move or a restart hands over a run time
   * left at that factor. */
  double *fab;
  size_t nfab;
  int64_t attached; /* pool GPUs attached to some host now */
  sim_i128 composed_us;
  uint64_t attaches;
  int64_t attach_wait_us;
} pools_part;

static int timer_less(const pool_timer *a, const pool_timer *b) {
  if (a->t != b->t)
    return a->t < b->t;
  if (a->node != b->node)
    return a->node < b->node;
  return a->slot < b->slot;
}

static void timer_push(pools_part *pp, pool_timer v) {
  if (pp->nheap == pp->capheap) {
    size_t nc = pp->capheap ? 2 * pp->capheap : 64;
    pool_timer *nh = realloc(pp->heap, nc * sizeof *nh);
    if (!nh) {
      pp->oom = 1;
      return;
    }
    pp->heap = nh;
    pp->capheap = nc;
  }
  size_t i = pp->nheap++;
  while (i > 0 && timer_less(&v, &pp->heap[(i - 1) / 2])) {
    pp->heap[i] = pp->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  pp->heap[i] = v;
}

static pool_timer timer_pop(pools_part *pp) {
  pool_timer top = pp->heap[0], last = pp->heap[--pp->nheap];
  size_t i = 0, n = pp->nheap;
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    const pool_timer *best = &last;
    if (l < n && timer_less(&pp->heap[l], best)) {
      m = l;
      best = &pp->heap[l];
    }
    if (l + 1 < n && timer_less(&pp->heap[l + 1], best))
      m = l + 1;
    if (m == i)
      break;
    pp->heap[i] = pp->heap[m];
    i = m;
  }
  if (n > 0)
    pp->heap[i] = last;
  return top;
}

static const sim_part_ops pools_ops;

/* ------------------------------------------------------------- observer */

static void obs_alloc(void *user, const lsched_cluster *c,
                      const lsched_placement *p, int trial) {
  pools_part *pp = user;
  if (trial || p->node < 0 || p->node >= pp->n || pp->spec_of[p->node] < 0)
    return;
  uint64_t att = 0;
  lsched_pool_of_node(c, p->node, NULL, &att);
  uint64_t mine = p->gpu_mask & pp->slots[p->node];
  pp->pending[p->node] |= mine & ~att;
  for (uint64_t m = mine & att; m; m &= m - 1) /* sticky reuse */
    pp->due[(size_t)p->node * 64 + (size_t)__builtin_ctzll(m)] = -1;
  pp->dirty |= (mine & ~att) != 0;
}

static void obs_release(void *user, const lsched_cluster *c,
                        const lsched_placement *p, int trial) {
  pools_part *pp = user;
  if (trial || p->node < 0 || p->node >= pp->n || pp->spec_of[p->node] < 0)
    return;
  const sim_pool_spec *ps = &pp->sc->pools[pp->spec_of[p->node]];
  pp->pending[p->node] &= ~p->gpu_mask;
  pp->dirty = 1;
  if (ps->detach_us <= 0)
    return; /* libsched detaches at once (keep_attached 0) */
  uint64_t att = 0;
  lsched_pool_of_node(c, p->node, NULL, &att);
  engine *e = pp->e;
  for (uint64_t m = p->gpu_mask & att; m; m &= m - 1) {
    int i = __builtin_ctzll(m);
    if (lsched_cluster_gpu_free(c, p->node, i) != LSCHED_GPU_MILLI)
      continue; /* a co-runner still holds part of it */
    int64_t t = e->now + ps->detach_us;
    pp->due[(size_t)p->node * 64 + (size_t)i] = t;
    timer_push(pp, (pool_timer){t, p->node, i});
    /* Wakes the loop at t: an event whose tag no occupant of slot 0 has
     * (loop.c skips it as stale after advancing the time to t). Not for
     * the run's last release (nothing queued, running or to arrive): the
     * run ends at its last completion. */
    if (e->running <= 1 && e->qlen == 0 && e->have <= 0)
      continue;
    if (e->nslots > 0 &&
        heap_push(&e->heap, t, 0, e->slots[0].gen ^ UINT32_C(0x80000000)))
      pp->oom = 1;
  }
}

static const lsched_observer pools_obs = {
    .version = LSCHED_OBSERVER_VERSION,
    .on_alloc = obs_alloc,
    .on_release = obs_release,
};

/* ---------------------------------------------------------------- hooks */

static void recount(pools_part *pp) {
  int64_t a = 0;
  for (int k = 0; k < lsched_cluster_pool_count(pp->c); k++) {
    lsched_pool_info pi = LSCHED_POOL_INFO_INIT;
    lsched_cluster_pool_info(pp->c, k, &pi);
    a += pi.attached;
  }
  pp->attached = a;
  pp->dirty = 0;
}

static void pools_advance(void *self, int64_t dt) {
  pools_part *pp = self;
  if (pp->dirty)
    recount(pp);
  pp->composed_us += (sim_i128)pp->attached * dt;
  const int64_t now = pp->e->now + dt; /* the loop sets e->now next */
  while (pp->nheap > 0 && pp->heap[0].t <= now) {
    pool_timer tm = timer_pop(pp);
    int64_t *d = &pp->due[(size_t)tm.node * 64 + (size_t)tm.slot];
    if (*d != tm.t)
      continue; /* reused or re-released since */
    *d = -1;
    if (lsched_pool_detach(pp->c, tm.node, UINT64_C(1) << tm.slot) > 0)
      pp->dirty = 1;
  }
}

static int64_t pools_start(void *self, const slot *s,
                           const lsched_placement *parts, int n,
                           int64_t now) {
  (void)s;
  (void)now;
  pools_part *pp = self;
  int64_t wait = 0;
  for (int k = 0; k < n; k++) {
    int node = parts[k].node;
    if (node < 0 || node >= pp->n || pp->spec_of[node] < 0)
      continue;
    uint64_t comp = pp->pending[node] & parts[k].gpu_mask;
    if (!comp)
      continue;
    pp->pending[node] &= ~comp;
    pp->attaches += (uint64_t)__builtin_popcountll(comp);
    int64_t w = pp->sc->pools[pp->spec_of[node]].attach_us;
    if (w > wait)
      wait = w;
  }
  pp->attach_wait_us += wait;
  return wait;
}

int pools_composed(const engine *e, const lsched_placement *p) {
  if (e->sc->npools == 0 || p->node < 0 || p->gpu_count <= 0)
    return 0;
  uint64_t slots = 0;
  if (lsched_pool_of_node(e->sc->c, p->node, &slots, NULL) < 0)
    return 0;
  return __builtin_popcountll(p->gpu_mask & slots);
}

double pools_fabric(const engine *e, const lsched_placement *parts, int n) {
  const sim_cluster *sc = e->sc;
  double f = 1.0;
  for (int k = 0; sc->npools > 0 && k < n; k++) {
    if (!pools_composed(e, &parts[k]))
      continue;
    int pool = lsched_pool_of_node(sc->c, parts[k].node, NULL, NULL);
    for (int i = 0; i < sc->npools; i++)
      if (pool >= sc->pools[i].first_pool &&
          pool < sc->pools[i].first_pool + sc->pools[i].count &&
          sc->pools[i].fabric_speed < f)
        f = sc->pools[i].fabric_speed;
  }
  return f;
}

static int64_t pools_run_time(void *self, engine *e, uint32_t sl,
                              const lsched_placement *parts, int n,
                              int64_t begin, int64_t work) {
  (void)begin;
  pools_part *pp = self;
  if (e->speed)
    return work; /* the speed part's speed includes the fabric factor */
  double f = pools_fabric(e, parts, n);
  if (sl >= pp->nfab) {
    size_t nc = pp->nfab ? pp->nfab : 256;
    while (nc <= sl)
      nc *= 2;
    double *nf = realloc(pp->fab, nc * sizeof *nf);
    if (!nf) {
      snprintf(e->err, e->errlen, "out of memory");
      return -1;
    }
    for (size_t i = pp->nfab; i < nc; i++)
      nf[i] = 1.0;
    pp->fab = nf;
    pp->nfab = nc;
  }
  /* work is the run time left at the last placement's factor (a move or
   * a restart after a preemption; the trace duration at the first start):
   * the fabric part of it is not counted twice. */
  double last = pp->fab[sl];
  pp->fab[sl] = f < 1.0 ? f : 1.0;
  if (f >= 1.0 && last >= 1.0)
    return work;
  return llround((double)work * last / pp->fab[sl]);
}

static void pools_arrival(void *self, engine *e, const slot *s) {
  pools_part *pp = self;
  size_t sl = (size_t)(s - e->slots);
  if (sl < pp->nfab)
    pp->fab[sl] = 1.0; /* a new occupant of the slot */
}

int64_t pools_move_attach(engine *e, const lsched_placement *to) {
  for (int i = 0; i < e->nparts; i++)
    if (e->parts[i].ops == &pools_ops)
      return pools_start(e->parts[i].self, NULL, to, 1, e->now);
  return 0;
}

static int pools_results(void *self, const engine *e, sim_result *out) {
  (void)e;
  pools_part *pp = self;
  if (pp->oom)
    return -1;
  sim_pool_result *r = calloc(1, sizeof *r);
  if (!r)
    return -1;
  r->gpus = pp->sc->pool_gpus;
  r->composed_gpu_hours = (double)pp->composed_us / US_PER_HOUR;
  r->attaches = pp->attaches;
  r->attach_wait_s = (double)pp->attach_wait_us / 1e6;
  free(out->pools);
  out->pools = r;
  return 0;
}

static void pools_close(void *self) {
  pools_part *pp = self;
  lsched_cluster_remove_observer(pp->c, &pools_obs, pp);
  free(pp->spec_of);
  free(pp->slots);
  free(pp->pending);
  free(pp->due);
  free(pp->heap);
  free(pp->fab);
  free(pp);
}

static const sim_part_ops pools_ops = {
    .name = "pools",
    .on_arrival = pools_arrival,
    .on_start = pools_start,
    .on_advance = pools_advance,
    .results = pools_results,
    .close = pools_close,
    .run_time = pools_run_time,
};

int pools_part_open(engine *e, const gpu_catalog *cat, const trace *t) {
  (void)cat;
  (void)t;
  const sim_cluster *sc = e->sc;
  if (sc->npools == 0)
    return 0;
  pools_part *pp = calloc(1, sizeof *pp);
  size_t n = (size_t)sc->nodes;
  if (pp) {
    pp->spec_of = malloc(n * sizeof *pp->spec_of);
    pp->slots = calloc(n, sizeof *pp->slots);
    pp->pending = calloc(n, sizeof *pp->pending);
    pp->due = malloc(n * 64 * sizeof *pp->due);
  }
  if (!pp || !pp->spec_of || !pp->slots || !pp->pending || !pp->due) {
    if (pp) {
      free(pp->spec_of);
      free(pp->slots);
      free(pp->pending);
      free(pp->due);
      free(pp);
    }
    snprintf(e->err, e->errlen, "out of memory");
    return -2;
  }
  pp->e = e;
  pp->c = sc->c;
  pp->sc = sc;
  pp->n = sc->nodes;
  for (size_t i = 0; i < n * 64; i++)
    pp->due[i] = -1;
  for (int i = 0; i < sc->nodes; i++) {
    int pool = lsched_pool_of_node(sc->c, i, &pp->slots[i], NULL);
    pp->spec_of[i] = -1;
    for (int k = 0; pool >= 0 && k < sc->npools; k++)
      if (pool >= sc->pools[k].first_pool &&
          pool < sc->pools[k].first_pool + sc->pools[k].count)
        pp->spec_of[i] = k;
  }
  pp->dirty = 1;
  if (lsched_cluster_add_observer(sc->c, &pools_obs, pp) ||
      engine_add_part(e, &pools_ops, pp)) {
    lsched_cluster_remove_observer(sc->c, &pools_obs, pp);
    pp->c = sc->c;
    free(pp->spec_of);
    free(pp->slots);
    free(pp->pending);
    free(pp->due);
    free(pp);
    snprintf(e->err, e->errlen, "too many parts in one run");
    return -2;
  }
  return 0;
}
