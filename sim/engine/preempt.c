/*
 * Preemptible jobs by priority (--preemptible CLASS[,CLASS], issue #14
 * item 4) and the per-class figures (summary.json by_class, --slo), a
 * part opened only under --preemptible or --slo.
 *
 * A job's class is its trace QoS (Guaranteed, LS, Burstable, BE, unknown
 * where the format has none), or spot for a job the generic CSV flags
 * spot, and its rank the QoS order of the priority queue discipline:
 * Guaranteed 3 > LS 2 > Burstable 1 > BE = unknown 0 > spot -1.
 * Jobs of a preemptible class run on idle capacity as any job does. After
 * each scheduling pass (after_pass), a queued job of a class that is not
 * preemptible which did not start may evict running jobs of a preemptible
 * class and a lower rank that have been stopped fewer than
 * --max-preemptions times and run on one node:
 *
 *   - per node, the victims are taken cheapest first (lost work: GPU-s
 *     since their last checkpoint, as stop_requeue counts it; ties: the
 *     most recently (re)started first, then the later in the trace) until
 *     the job fits that node (lsched_fits), then every victim whose
 *     release is not needed is kept (tried from the most expensive down);
 *   - the node whose set loses the least work wins (ties: fewer victims,
 *     then the lower node index); the victims are released, the job is
 *     placed by the policy (it may choose any node that now fits) and, if
 *     the policy places it, the victims are stopped (stop_requeue: whole
 *     checkpoint intervals kept) and requeued where the discipline puts an
 *     arrival (the tail; priority: behind their class), and the job
 *     starts. If the policy does not place it, the victims run on.
 *
 * Which queued jobs may evict follows the discipline: under fifo, priority
 * and backfill (the head blocks) only the head, then the next head while
 * heads start; under skip every queued job in queue order. A job needing
 * several nodes (a gang) never evicts; a gang never is a victim.
 *
 * Cost: nothing without a running victim; otherwise one scan of the queue
 * per event time at which something was released, a job arrived or a
 * victim started, and per candidate one pass over the victims, trying
 * only nodes whose free resources plus their victims' cover the job
 * (request shapes that failed in the scan are not tried again in it: an
 * eviction only takes room away from the others).
 */
#include "engine_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const class_names[SIM_NCLASSES] = {
    "Guaranteed", "LS", "Burstable", "BE", "unknown", "spot"};
static const int class_rank[SIM_NCLASSES] = {3, 2, 1, 0, 0, -1};

#define DEFAULT_MAX_PREEMPTIONS 3
#define HEAD_CHUNK 64
#define FAIL_MEMO 256

static int class_of(const job_record *jr) {
  if (jr->flags & TRACE_JOB_SPOT)
    return 5;
  switch (jr->qos) {
  case TRACE_QOS_GUARANTEED:
    return 0;
  case TRACE_QOS_LS:
    return 1;
  case TRACE_QOS_BURSTABLE:
    return 2;
  case TRACE_QOS_BE:
    return 3;
  default:
    return 4;
  }
}

typedef struct victim {
  uint32_t sl;
  int node, rank;
  int gone;   /* evicted in this scan */
  int chosen; /* in the set being built */
  double cost; /* GPU-s lost if stopped now */
  int64_t seg;
  uint64_t idx;
  lsched_placement p;
} victim;

typedef struct fail_key {
  int64_t cpu, mem, mig_mem;
  uint64_t mask;
  int32_t k, milli, mig_kind, mig_compute, rank;
} fail_key;

typedef struct preempt {
  const engine *e; /* the slots' parts kept apart (evictable) */
  unsigned mask;  /* preemptible classes (bit per class) */
  int max_pre;
  int head_only;
  int64_t slo_us[SIM_NCLASSES]; /* -1: no target */
  int have_slo;
  size_t nvict;   /* running jobs that may be evicted */
  uint64_t vstarts, vseen;
  /* by_class */
  sim_class_stat st[SIM_NCLASSES];
  size_t completed[SIM_NCLASSES];
  unsigned char present[SIM_NCLASSES];
  pctl qt[SIM_NCLASSES], jct[SIM_NCLASSES];
  int pctl_failed;
  /* scratch */
  victim *v;
  size_t nv, vcap;
  uint32_t *cand;
  size_t ncand, ccap;
  uint32_t *started;
  size_t nstarted, scap;
  size_t *rel; /* released victims (indexes into v) */
  size_t relcap;
  fail_key fails[FAIL_MEMO];
  int nfails;
} preempt;

/* 1 if the job in s may be evicted (when it runs): a preemptible class,
 * stopped fewer than max_pre times, on one node. */
static int evictable(const preempt *p, const slot *s) {
  /* npre only when some class is preemptible (then slots track it). */
  return (p->mask >> class_of(&s->rec) & 1u) &&
         slot_x_of(p->e, s)->npre < p->max_pre &&
         s->ngang <= 1;
}

/* ---- options ---- */

static int name_eq(const char *a, size_t n, const char *b) {
  if (strlen(b) != n)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
      return 0;
  return 1;
}

static int class_by_name(const char *s, size_t n) {
  for (int c = 0; c < SIM_NCLASSES; c++)
    if (name_eq(s, n, class_names[c]))
      return c;
  return -1;
}

static int parse_classes(engine *e, const char *list, unsigned *mask) {
  const char *s = list;
  *mask = 0;
  for (;;) {
    size_t n = strcspn(s, ",");
    int c = class_by_name(s, n);
    if (c < 0) {
      snprintf(e->err, e->errlen,
               "--preemptible '%s': unknown class '%.*s' (expected "
               "Guaranteed, LS, Burstable, BE, unknown or spot)",
               list, (int)(n < 64 ? n : 64), s);
      return -1;
    }
    *mask |= 1u << c;
    if (!s[n])
      return 0;
    s += n + 1;
  }
}

static int parse_slo(engine *e, const char *list, int64_t *slo_us) {
  const char *s = list;
  for (;;) {
    size_t n = strcspn(s, ",");
    const char *colon = memchr(s, ':', n);
    int c = colon ? class_by_name(s, (size_t)(colon - s)) : -1;
    char num[64];
    size_t nl = colon ? n - (size_t)(colon - s) - 1 : 0;
    double v = -1;
    if (colon && nl > 0 && nl < sizeof num) {
      memcpy(num, colon + 1, nl);
      num[nl] = 0;
      char *end;
      errno = 0;
      v = strtod(num, &end);
      if (*end || errno || !(v >= 0) || v > (double)TRACE_MAX_TIME_S)
        v = -1;
    }
    if (c < 0 || v < 0) {
      snprintf(e->err, e->errlen,
               "--slo '%s': bad item '%.*s' (expected CLASS:SECONDS, CLASS "
               "one of Guaranteed, LS, Burstable, BE, unknown, spot, "
               "SECONDS a number >= 0)",
               list, (int)(n < 64 ? n : 64), s);
      return -1;
    }
    slo_us[c] = llround(v * 1e6);
    if (!s[n])
      return 0;
    s += n + 1;
  }
}

/* ---- the per-class figures ---- */

static void on_arrival(void *self, engine *e, const slot *s) {
  (void)e;
  preempt *p = self;
  int c = class_of(&s->rec);
  p->st[c].jobs++;
  p->present[c] = 1;
}

static int64_t on_start(void *self, const slot *s,
                        const lsched_placement *parts, int n, int64_t now) {
  (void)parts, (void)n, (void)now;
  preempt *p = self;
  if (evictable(p, s)) {
    p->nvict++;
    p->vstarts++;
  }
  return 0;
}

static void on_finish(void *self, engine *e, const slot *s,
                      const lsched_placement *parts, int n) {
  (void)parts, (void)n;
  preempt *p = self;
  if (evictable(p, s))
    p->nvict--;
  int c = class_of(&s->rec);
  int64_t q = s->st.start_us - s->rec.submit_us;
  p->completed[c]++;
  if (pctl_add(&p->qt[c], (double)q / 1e6) ||
      pctl_add(&p->jct[c], (double)(s->st.finish_us - s->rec.submit_us) / 1e6))
    p->pctl_failed = 1;
  if (p->slo_us[c] >= 0 && q > p->slo_us[c])
    p->st[c].slo_misses++;
  if (e->can_plan) /* else the slot's slot_x is not set up (--slo) */
    p->st[c].lost_gpu_s += slot_x_of(e, s)->lost_gpu_s;
}

static int results(void *self, const engine *e, sim_result *out) {
  (void)e;
  preempt *p = self;
  if (p->pctl_failed)
    return -1;
  sim_class_result *r = calloc(1, sizeof *r);
  if (!r)
    return -1;
  for (int c = 0; c < SIM_NCLASSES; c++) {
    sim_class_stat *x = &r->cls[c];
    *x = p->st[c];
    if (p->slo_us[c] >= 0)
      x->slo_misses += x->jobs - p->completed[c]; /* never started */
    if (pctl_finish(&p->qt[c], &x->queue_time_s) ||
        pctl_finish(&p->jct[c], &x->jct_s)) {
      free(r);
      return -1;
    }
    r->present[c] = p->present[c];
  }
  out->by_class = r;
  return 0;
}

static void preempt_close(void *self) {
  preempt *p = self;
  if (!p)
    return;
  for (int c = 0; c < SIM_NCLASSES; c++) {
    pctl_free(&p->qt[c]);
    pctl_free(&p->jct[c]);
  }
  free(p->v);
  free(p->cand);
  free(p->started);
  free(p->rel);
  free(p);
}

/* ---- eviction ---- */

/* GPU-seconds the job in slot sl would lose if stopped now (stop_requeue's
 * rule: the progress of whole checkpoint intervals is kept). */
static double lost_now(const engine *e, const slot *s,
                       const lsched_placement *pl) {
  double gpus = (double)pl->gpu_count * pl->gpu_milli / 1000.0;
  int64_t elapsed;
  int64_t kept = stop_kept_us(e, s, &elapsed);
  return (double)(elapsed - kept) / 1e6 * gpus;
}

/* Victims by node, then cheapest first (the documented tie rule). */
static int cmp_victim(const void *a, const void *b) {
  const victim *x = a, *y = b;
  if (x->node != y->node)
    return x->node < y->node ? -1 : 1;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  if (x->seg != y->seg)
    return x->seg > y->seg ? -1 : 1;
  return (x->idx < y->idx) - (x->idx > y->idx);
}

static int collect_victims(preempt *p, engine *e) {
  p->nv = 0;
  if (grow_array((void **)&p->v, &p->vcap, e->nrun + 1, sizeof *p->v))
    return -1;
  for (size_t i = 0; i < e->nrun; i++) {
    uint32_t sl = e->run_list[i];
    const slot *s = &e->slots[sl];
    if (!evictable(p, s))
      continue;
    victim *v = &p->v[p->nv++];
    lsched_placement parts[SIM_MAX_PARTS];
    job_parts(e, sl, parts);
    v->sl = sl;
    v->p = parts[0];
    v->node = parts[0].node;
    v->rank = class_rank[class_of(&s->rec)];
    v->gone = v->chosen = 0;
    v->cost = lost_now(e, s, &parts[0]);
    v->seg = slot_x_of(e, s)->seg_us;
    v->idx = s->idx;
  }
  qsort(p->v, p->nv, sizeof *p->v, cmp_victim);
  return 0;
}

static fail_key key_of(const lsched_request *r, int rank) {
  fail_key k;
  memset(&k, 0, sizeof k);
  k.cpu = r->cpu_milli;
  k.mem = r->memory_mib;
  k.mig_mem = r->mig_memory_mib;
  k.mask = r->model_mask;
  k.k = r->gpu_count;
  k.milli = r->gpu_milli;
  k.mig_kind = r->mig_kind;
  k.mig_compute = r->mig_compute_milli;
  k.rank = rank;
  return k;
}

static int failed_before(const preempt *p, const fail_key *k) {
  for (int i = 0; i < p->nfails; i++)
    if (memcmp(&p->fails[i], k, sizeof *k) == 0)
      return 1;
  return 0;
}

static int internal(engine *e, const char *what, uint32_t sl) {
  snprintf(e->err, e->errlen, "preempt: %s of %s failed: %s", what,
           slot_name(e, &e->slots[sl]), lsched_cluster_errmsg(e->sc->c));
  return -1;
}

/* Puts the released victims rel[from..to) back (in reverse). */
static int restore(preempt *p, engine *e, size_t from, size_t to) {
  while (to-- > from) {
    victim *v = &p->v[p->rel[to]];
    if (lsched_alloc(e->sc->c, &v->p))
      return internal(e, "re-allocation", v->sl);
  }
  return 0;
}

/*
 * The cheapest set on node group [b, end) of p->v for req (rank r): marks
 * the set chosen and returns its size (0: the node cannot be made to fit),
 * with its lost work in *cost; the cluster is as before. -1 on error.
 */
static int node_set(preempt *p, engine *e, size_t b, size_t end,
                    const lsched_request *req, int r, double *cost) {
  lsched_cluster *c = e->sc->c;
  int node = p->v[b].node;
  size_t nrel = 0;
  int fits = 0;
  for (size_t i = b; i < end; i++)
    p->v[i].chosen = 0;
  for (size_t i = b; i < end && !fits; i++) {
    victim *v = &p->v[i];
    if (v->gone || v->rank >= r)
      continue;
    if (lsched_release(c, &v->p))
      return internal(e, "release", v->sl);
    p->rel[nrel++] = i;
    fits = lsched_fits(c, node, req);
  }
  if (!fits)
    return restore(p, e, 0, nrel) ? -1 : 0;
  /* Keep every victim whose release is not needed, the most expensive
   * first. */
  size_t w = nrel;
  for (size_t k = nrel; k-- > 0;) {
    victim *v = &p->v[p->rel[k]];
    if (lsched_alloc(c, &v->p))
      return internal(e, "re-allocation", v->sl);
    if (lsched_fits(c, node, req)) {
      /* not needed: it stays (out of rel) */
      memmove(&p->rel[k], &p->rel[k + 1], (w - k - 1) * sizeof *p->rel);
      w--;
    } else if (lsched_release(c, &v->p)) {
      return internal(e, "release", v->sl);
    }
  }
  *cost = 0;
  for (size_t k = 0; k < w; k++) {
    p->v[p->rel[k]].chosen = 1;
    *cost += p->v[p->rel[k]].cost;
  }
  if (restore(p, e, 0, w))
    return -1;
  return (int)w;
}

/*
 * Tries to start queued job j by evicting victims. 1 started, 0 not, -1
 * error.
 */
static int evict_for(preempt *p, engine *e, uint32_t j) {
  slot *s = &e->slots[j];
  int cls = class_of(&s->rec);
  int r = class_rank[cls];
  if ((p->mask >> cls & 1u) || p->nv == 0)
    return 0;
  lsched_request req;
  build_request(e, s, &req);
  fail_key key = key_of(&req, r);
  if (failed_before(p, &key))
    return 0;
  /* A job wider than any node never evicts. */
  if (!lsched_can_ever_fit(e->sc->c, &req))
    goto fail;
  /* Enough GPU capacity free or held by lower-ranked victims? */
  int64_t room = e->total_milli - e->alloc_milli;
  for (size_t i = 0; i < p->nv; i++)
    if (!p->v[i].gone && p->v[i].rank < r)
      room += (int64_t)p->v[i].p.gpu_count * p->v[i].p.gpu_milli;
  if ((int64_t)req.gpu_count * req.gpu_milli > room)
    goto fail;
  if (grow_array((void **)&p->rel, &p->relcap, p->nv + 1, sizeof *p->rel))
    return -2;
  /* The best node: least lost work, then fewer victims, then lower
   * index. */
  size_t best_b = 0, best_e = 0;
  int best_n = 0;
  double best_cost = 0;
  for (size_t b = 0; b < p->nv;) {
    size_t end = b;
    int64_t g = 0, cpu = 0, mem = 0;
    while (end < p->nv && p->v[end].node == p->v[b].node) {
      const victim *v = &p->v[end++];
      if (!v->gone && v->rank < r) {
        g += (int64_t)v->p.gpu_count * v->p.gpu_milli;
        cpu += v->p.cpu_milli;
        mem += v->p.memory_mib;
      }
    }
    /* The node's free resources and its victims' must cover the job. */
    lsched_node_info ni = LSCHED_NODE_INFO_INIT;
    if (g + cpu + mem == 0 ||
        lsched_cluster_node_info(e->sc->c, p->v[b].node, &ni) != LSCHED_OK ||
        (ni.gpu_mode != LSCHED_GPU_MIG && /* MIG: kinds, not milli */
         ni.gpu_milli_free + g < (int64_t)req.gpu_count * req.gpu_milli) ||
        ni.cpu_free + cpu < req.cpu_milli ||
        ni.memory_free + mem < req.memory_mib) {
      b = end;
      continue;
    }
    double cost = 0;
    int n = node_set(p, e, b, end, &req, r, &cost);
    if (n < 0)
      return -1;
    if (n > 0 && (best_n == 0 || cost < best_cost ||
                  (cost == best_cost && n < best_n))) {
      /* The chosen marks of a former best are cleared below. */
      for (size_t i = best_b; i < best_e; i++)
        p->v[i].chosen = 0;
      best_b = b;
      best_e = end;
      best_n = n;
      best_cost = cost;
    } else {
      for (size_t i = b; i < end; i++)
        p->v[i].chosen = 0;
    }
    b = end;
  }
  if (best_n == 0)
    goto fail;
  /* Release the set, let the policy place the job; if it does not, the
   * victims run on. */
  size_t nrel = 0;
  for (size_t i = best_b; i < best_e; i++)
    if (p->v[i].chosen) {
      if (lsched_release(e->sc->c, &p->v[i].p))
        return internal(e, "release", p->v[i].sl);
      p->rel[nrel++] = i;
    }
  e->memo_gen++; /* the job's shape failed in this pass */
  lsched_placement parts[SIM_MAX_PARTS];
  int np = 0;
  int placed = place_job(e, j, parts, &np);
  if (placed < 0)
    return -1;
  if (placed == 0) {
    if (restore(p, e, 0, nrel))
      return -1;
    goto fail;
  }
  for (size_t k = 0; k < nrel; k++) {
    victim *v = &p->v[p->rel[k]];
    slot *vs = &e->slots[v->sl];
    v->gone = 1;
    p->nvict--; /* it no longer runs */
    p->st[class_of(&vs->rec)].preemptions++;
    if (stop_requeue(e, v->sl, &v->p, 1))
      return -1;
  }
  if (start_running(e, j, parts, np))
    return -1;
  e->freed = 1;
  e->reservation_valid = 0;
  e->head_tried = UINT32_MAX;
  /* Failed shapes stay failed: on the victim's node the job now holds what
   * the victims freed, and fewer victims are left (for any rank). */
  return 1;
fail:
  if (p->nfails < FAIL_MEMO)
    p->fails[p->nfails++] = key;
  return 0;
}

/* Drops the started candidates from the queue. */
static void drop_started(preempt *p, engine *e) {
  if (p->nstarted == 0)
    return;
  if (e->qx) {
    for (size_t i = 0; i < p->nstarted; i++)
      queue_index_drop(e, p->started[i]);
    queue_index_tidy(e);
  } else {
    size_t w = e->qhead;
    for (size_t i = e->qhead; i < e->qhead + e->qlen; i++)
      if (e->slots[e->queue[i]].st.status == JOB_QUEUED)
        e->queue[w++] = e->queue[i];
    e->qlen = w - e->qhead;
  }
  p->nstarted = 0;
}

/* Up to max live queued jobs from the head, in queue order, into cand. */
static int snapshot(preempt *p, engine *e, size_t max) {
  p->ncand = 0;
  size_t want = e->qlen < max ? e->qlen : max;
  if (grow_array((void **)&p->cand, &p->ccap, want + 1, sizeof *p->cand))
    return -1;
  for (size_t i = e->qhead; p->ncand < want; i++) {
    uint32_t sl = e->queue[i];
    if (sl != UINT32_MAX) /* the index's tombstones */
      p->cand[p->ncand++] = sl;
  }
  return 0;
}

/* 1 if the cluster's free GPU milli could hold the queued job in slot j
 * (a cheap bound before a placement attempt). */
static int fits_free(const engine *e, uint32_t j) {
  const job_record *jr = &e->slots[j].rec;
  int64_t need = jr->num_gpu > 0 ? (int64_t)jr->num_gpu * jr->gpu_milli : 0;
  return need <= e->total_milli - e->alloc_milli;
}

static int preempt_after_pass(void *self, engine *e) {
  preempt *p = self;
  if (p->nvict == 0 || e->qlen == 0)
    return 0;
  if (!e->freed && !e->queue_changed && p->vstarts == p->vseen)
    return 0;
  p->vseen = p->vstarts;
  if (collect_victims(p, e)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  p->nfails = 0;
  int any = 0;
  for (;;) {
    size_t max = p->head_only ? HEAD_CHUNK : e->qlen;
    int whole = e->qlen <= max, stop = 0;
    if (snapshot(p, e, max)) {
      snprintf(e->err, e->errlen, "out of memory");
      return -1;
    }
    for (size_t i = 0; i < p->ncand && !stop; i++) {
      uint32_t j = p->cand[i];
      int r = 0;
      if (any && fits_free(e, j)) { /* room an eviction left */
        e->memo_gen++;
        r = try_start(e, j);
      }
      if (r == 0)
        r = evict_for(p, e, j);
      if (r < 0) {
        if (r == -2 || !e->err[0])
          snprintf(e->err, e->errlen, "out of memory");
        return -1;
      }
      if (r > 0) {
        any = 1;
        if (grow_array((void **)&p->started, &p->scap, p->nstarted + 1,
                       sizeof *p->started)) {
          snprintf(e->err, e->errlen, "out of memory");
          return -1;
        }
        p->started[p->nstarted++] = j;
      } else if (p->head_only) {
        stop = 1;
      }
    }
    drop_started(p, e);
    if (stop || whole || !p->head_only || p->nvict == 0)
      break;
  }
  return any;
}

static const sim_part_ops preempt_part = {
    .name = "preempt",
    .on_arrival = on_arrival,
    .on_start = on_start,
    .on_finish = on_finish,
    .after_pass = preempt_after_pass,
    .results = results,
    .close = preempt_close,
};

int preempt_part_open(engine *e, const gpu_catalog *cat, const trace *t) {
  (void)cat;
  const sim_options *o = e->opt;
  if (!o->preemptible && !o->slo)
    return 0;
  preempt *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(e->err, e->errlen, "out of memory");
    return -2;
  }
  p->e = e;
  for (int c = 0; c < SIM_NCLASSES; c++) {
    p->slo_us[c] = -1;
    size_t mem = o->pctl_mem_values ? o->pctl_mem_values
                 : t                ? t->n
                                    : (size_t)1 << 18;
    pctl_init(&p->qt[c], mem);
    pctl_init(&p->jct[c], mem);
  }
  p->max_pre =
      o->max_preemptions > 0 ? o->max_preemptions : DEFAULT_MAX_PREEMPTIONS;
  p->head_only = o->queue != SIM_QUEUE_SKIP;
  if ((o->preemptible && parse_classes(e, o->preemptible, &p->mask)) ||
      (o->slo && parse_slo(e, o->slo, p->slo_us))) {
    preempt_close(p);
    return -1;
  }
  if (engine_add_part(e, &preempt_part, p)) {
    preempt_close(p);
    snprintf(e->err, e->errlen, "too many parts in one run");
    return -2;
  }
  /* Running jobs may be stopped: slots track their work left. */
  if (p->mask)
    e->can_plan = 1;
  return 0;
}
