/*
 * defrag: wraps a base placement policy (parameter "base", default
 * best-fit). The base is looked up by name in the registry the instance
 * was created from (lsched_policy_create_from(): any policy the caller
 * registered, built-in or not), else among the built-in policies; never
 * defrag itself. Placement is the base's.
 * When a waiting job cannot be placed, plan_migrations looks for a small-cost
 * set of running jobs to move so that it fits:
 *
 *   for every node n that could hold the waiting job when empty, release
 *   the movable jobs on n cheapest first (cost = move_cost_s x GPUs held)
 *   until the waiting job fits on n, at most max_moves of them; reserve the
 *   waiting job's GPUs on n; place each released job anew with the base
 *   policy (anywhere, including leftover room on n). The cheapest node whose
 *   plan succeeds wins (ties: earliest node in the visit order), and only if
 *   its cost in lost GPU-seconds is below the waiting job's expected wait x
 *   its GPUs. Everything is tried on the real cluster and undone exactly.
 *
 * This frees a whole node for a multi-GPU job and consolidates shared GPUs
 * for a fractional one with the same mechanism. Jobs on several nodes
 * (gangs) are never moved, and gang waiting jobs get no plan.
 * Cost O(nodes x moves x base place) per decision.
 */
#include "builtin.h"

#include <libsched/migrate.h>
#include <stdlib.h>
#include <string.h>

struct defrag_state {
  lsched_allocator a;
  lsched_view v;
  const lsched_policy_ops *base;
  void *base_state;
  const lsched_cluster *c;
  const lsched_registry *reg; /* set_registry's; NULL: built-ins only */
};

/* The policy `name`: from the instance's registry when it has one, else
 * the built-in one (through a temporary registry on the cluster's
 * allocator). LSCHED_OK, LSCHED_EINVAL (no such policy), LSCHED_ENOMEM. */
static int find_base(const struct defrag_state *s, const char *name,
                     const lsched_policy_ops **out) {
  const lsched_allocator *a = &s->a;
  lsched_registry *r;
  *out = NULL;
  if (s->reg) {
    *out = lsched_registry_find(s->reg, name);
    return *out ? LSCHED_OK : LSCHED_EINVAL;
  }
  int rc = lsched_registry_create(&r, a);
  if (rc)
    return rc;
  rc = lsched_registry_add_builtins(r);
  if (rc == LSCHED_OK) {
    *out = lsched_registry_find(r, name);
    if (!*out)
      rc = LSCHED_EINVAL;
  }
  lsched_registry_destroy(r);
  return rc;
}

static void drop_base(struct defrag_state *s) {
  if (s->base && s->base->fini)
    s->base->fini(s->base_state);
  lsched_mem_free(&s->a, s->base_state);
  s->base = NULL;
  s->base_state = NULL;
}

static int set_base(struct defrag_state *s, const char *name) {
  const lsched_policy_ops *ops;
  int rc = find_base(s, name, &ops);
  if (rc)
    return rc;
  if (strcmp(ops->name, "defrag") == 0 || ops == &lsched_builtin_defrag)
    return LSCHED_EINVAL;
  void *st = NULL;
  if (ops->state_size) {
    st = lsched_mem_calloc(&s->a, 1, ops->state_size);
    if (!st)
      return LSCHED_ENOMEM;
  }
  rc = ops->init ? ops->init(st, s->c) : LSCHED_OK;
  /* A base that itself wraps policies looks them up in the same registry. */
  if (rc == LSCHED_OK && s->reg && ops->version >= 4 && ops->set_registry &&
      (rc = ops->set_registry(st, s->reg)) != LSCHED_OK && ops->fini)
    ops->fini(st);
  if (rc) {
    lsched_mem_free(&s->a, st);
    return rc;
  }
  drop_base(s);
  s->base = ops;
  s->base_state = st;
  return LSCHED_OK;
}

static int defrag_init(void *state, const lsched_cluster *c) {
  struct defrag_state *s = state;
  lsched_cluster_allocator(c, &s->a);
  s->c = c;
  s->v = (lsched_view)LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &s->v) != LSCHED_OK)
    return LSCHED_EINVAL;
  return set_base(s, "best-fit");
}

/* The default base stays the built-in best-fit: the registry only serves
 * later "base" parameters. */
static int defrag_set_registry(void *state, const lsched_registry *r) {
  struct defrag_state *s = state;
  s->reg = r;
  return LSCHED_OK;
}

static void defrag_fini(void *state) { drop_base(state); }

static int defrag_set_param(void *state, const char *key, const char *value) {
  struct defrag_state *s = state;
  if (strcmp(key, "base") == 0)
    return set_base(s, value);
  if (s->base->set_param)
    return s->base->set_param(s->base_state, key, value);
  return LSCHED_ENOENT;
}

static int defrag_place(void *state, const lsched_cluster *c,
                        const lsched_request *req, lsched_placement *out) {
  struct defrag_state *s = state;
  return s->base->place(s->base_state, c, req, out);
}

static void defrag_on_alloc(void *state, const lsched_cluster *c,
                            const lsched_placement *p) {
  struct defrag_state *s = state;
  if (s->base->on_alloc)
    s->base->on_alloc(s->base_state, c, p);
}

static void defrag_on_release(void *state, const lsched_cluster *c,
                              const lsched_placement *p) {
  struct defrag_state *s = state;
  if (s->base->on_release)
    s->base->on_release(s->base_state, c, p);
}

static int defrag_set_workload(void *state, const lsched_cluster *c,
                               const lsched_workload *w) {
  struct defrag_state *s = state;
  if (s->base->version < 2 || !s->base->set_workload)
    return LSCHED_OK; /* the base does not use a workload */
  return s->base->set_workload(s->base_state, c, w);
}

/* GPUs a placement holds (milli / 1000). */
static double held_gpus(const lsched_placement *p) {
  return (double)p->gpu_count * p->gpu_milli / 1000.0;
}

/* Could node nd hold req when empty? */
static int could_hold(const lsched_node *nd, const lsched_request *r) {
  if (nd->cpu_cap < r->cpu_milli || nd->mem_cap < r->memory_mib)
    return 0;
  if (r->gpu_count == 0)
    return 1;
  return nd->gpu_count >= r->gpu_count &&
         (!r->model_mask || (r->model_mask >> nd->model) & 1);
}

typedef struct cand {
  size_t idx;
  int node;
  double cost;
} cand;

static int cmp_cand(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->node != y->node)
    return x->node < y->node ? -1 : 1;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

static int defrag_plan(void *state, lsched_cluster *c,
                        const lsched_request *w, const lsched_running *run,
                        size_t nrun, const lsched_defrag_budget *b,
                        lsched_move *out, size_t max_out, size_t *nout) {
  struct defrag_state *s = state;
  *nout = 0;
  if (lsched_next_fit(c, w, 0) >= 0)
    return LSCHED_OK;
  int max_moves = b && b->max_moves > 0 ? b->max_moves : 2;
  int per_job = b && b->max_moves_per_job > 0 ? b->max_moves_per_job : 1;
  double wait = b ? b->expected_wait_s : -1;
  /* GPUs the waiting job would hold (a MIG request: its kind's share). */
  int wmilli = w->version >= 2 && w->mig_kind > 0
                   ? lsched_mig_kind_milli(w->mig_kind)
                   : w->gpu_milli;
  double wgpus = (double)w->gpu_count * wmilli / 1000.0;
  if (wait < 0 || wgpus <= 0 || w->gpu_count > s->v.max_gpu_count)
    return LSCHED_ENOFIT;
  if ((size_t)max_moves > max_out)
    max_moves = (int)max_out;
  if (max_moves > 64)
    max_moves = 64;
  cand *cs = lsched_mem_alloc(&s->a, (nrun ? nrun : 1) * sizeof *cs);
  if (!cs)
    return LSCHED_ENOMEM;
  size_t nc = 0;
  for (size_t i = 0; i < nrun; i++) {
    const lsched_running *r = &run[i];
    if (r->nparts != 1 || r->moves >= per_job || r->parts[0].node < 0 ||
        r->parts[0].node >= s->v.n)
      continue;
    cs[nc].idx = i;
    cs[nc].node = r->parts[0].node;
    cs[nc].cost = r->move_cost_s * held_gpus(&r->parts[0]);
    nc++;
  }
  qsort(cs, nc, sizeof *cs, cmp_cand);
  /* Plans are compared by cost; the budget: cost below the expected
   * waiting GPU-seconds. */
  double best = wait * wgpus;
  int best_pos = -1, best_n = 0;
  lsched_move best_moves[64], moves[64];
  int rc = LSCHED_OK;
  for (int pos = 0; pos < s->v.n && rc == LSCHED_OK; pos++) {
    int n = s->v.order[pos];
    if (!could_hold(lsched_view_node(&s->v, n), w))
      continue;
    /* this node's candidates */
    size_t lo = 0;
    while (lo < nc && cs[lo].node < n)
      lo++;
    size_t hi = lo;
    while (hi < nc && cs[hi].node == n)
      hi++;
    if (hi == lo)
      continue;
    int released = 0, fits = 0;
    double cost = 0;
    for (size_t k = lo; k < hi && released < max_moves; k++) {
      const lsched_running *r = &run[cs[k].idx];
      if (lsched_release(c, &r->parts[0]) != LSCHED_OK) {
        rc = LSCHED_ESTATE;
        break;
      }
      moves[released].index = cs[k].idx;
      moves[released].from = r->parts[0];
      released++;
      cost += cs[k].cost;
      if (lsched_fits(c, n, w)) {
        fits = 1;
        break;
      }
    }
    int placed = 0;
    lsched_placement wp;
    int reserved = 0;
    if (fits && rc == LSCHED_OK && cost < best &&
        lsched_pick_gpus(c, n, w, LSCHED_PICK_TIGHTEST, &wp) == LSCHED_OK &&
        lsched_alloc(c, &wp) == LSCHED_OK) {
      reserved = 1;
      for (; placed < released; placed++) {
        const lsched_running *r = &run[moves[placed].index];
        if (s->base->place(s->base_state, c, &r->request,
                           &moves[placed].to) != LSCHED_OK ||
            lsched_alloc(c, &moves[placed].to) != LSCHED_OK)
          break;
      }
      if (placed == released) {
        best = cost;
        best_pos = pos;
        best_n = released;
        memcpy(best_moves, moves, (size_t)released * sizeof *moves);
      }
    }
    /* Undo: targets, the reservation, then the sources. */
    while (placed > 0)
      lsched_release(c, &moves[--placed].to);
    if (reserved)
      lsched_release(c, &wp);
    while (released > 0)
      if (lsched_alloc(c, &moves[--released].from) != LSCHED_OK)
        rc = LSCHED_ESTATE;
  }
  lsched_mem_free(&s->a, cs);
  if (rc != LSCHED_OK)
    return rc;
  if (best_pos < 0)
    return LSCHED_ENOFIT;
  memcpy(out, best_moves, (size_t)best_n * sizeof *out);
  *nout = (size_t)best_n;
  return LSCHED_OK;
}

const lsched_policy_ops lsched_builtin_defrag = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "defrag",
    .description = "a base policy (param base, default best-fit) that plans "
                   "migrations to make room for a blocked job",
    .state_size = sizeof(struct defrag_state),
    .init = defrag_init,
    .fini = defrag_fini,
    .set_param = defrag_set_param,
    .place = defrag_place,
    .on_alloc = defrag_on_alloc,
    .on_release = defrag_on_release,
    .set_workload = defrag_set_workload,
    .plan_migrations = defrag_plan,
    .set_registry = defrag_set_registry,
};
