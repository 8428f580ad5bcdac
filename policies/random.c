/*
 * random: a uniformly random node among those that fit, and on it a
 * uniformly random GPU among those that fit (whole-GPU requests take the
 * lowest-index fully free GPUs). Follows the FGD simulator's RandomScore
 * plugin (one node drawn uniformly from the feasible ones) with its "random"
 * GPU selection (allocateGpuIdBasedOnRandomFit: a uniform draw among the
 * GPUs with enough free share; AllocateExclusiveGpuId for whole GPUs).
 *
 * The generator is per instance (no global state): SplitMix64 seeded by
 * set_param("seed", N) (default 1), bounded draws by rejection so that
 * every outcome is exactly equally likely.
 *
 * Speed: the draw among the m fitting nodes is the r-th of them in the
 * visit order, r = rnd_below(m). A counting score index
 * (lsched_score_index_draw) keeps per request shape how many nodes fit
 * under each entry of a tree over the visit order, so m and the r-th node
 * cost O(log n) per node changed since the shape was last placed instead
 * of collecting every fitting node (O(n)). Parameter index=off collects
 * them (the reference: the same node for the same draw, so the same
 * generator stream and placements; tests/lib/test_score_index.c).
 *
 * It promises LSCHED_POLICY_ANY_FIT_DRAWS: a host answers its what-ifs
 * (EASY reservations) by fit tests, so only real placement attempts draw.
 */
#include "builtin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct rnd_state {
  lsched_allocator a;
  lsched_view v;
  uint64_t s;
  uint64_t seed; /* the generator's start (param seed) */
  int *scratch;
  size_t scratch_cap;
  lsched_score_index *ix;
  int use_index;
};

static uint64_t rnd_next(struct rnd_state *r) {
  uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* Uniform in [0, n), n >= 1. */
static uint64_t rnd_below(struct rnd_state *r, uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do
    x = rnd_next(r);
  while (x >= limit);
  return x % n;
}

static int64_t rnd_score(const lsched_view *v, int node,
                         const lsched_request *req, void *ctx) {
  (void)v, (void)node, (void)req, (void)ctx;
  return 0; /* the index is used for its counts only */
}

static uint64_t rnd_draw(void *user, uint64_t m) {
  return rnd_below(user, m);
}

static int rnd_init(void *state, const lsched_cluster *c) {
  struct rnd_state *s = state;
  lsched_cluster_allocator(c, &s->a);
  s->s = s->seed = 1;
  s->v = (lsched_view)LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &s->v) != LSCHED_OK)
    return LSCHED_EINVAL;
  int n = lsched_cluster_node_count(c);
  s->scratch_cap = n ? (size_t)n : 1;
  s->scratch = lsched_mem_calloc(&s->a, s->scratch_cap, sizeof(int));
  if (!s->scratch)
    return LSCHED_ENOMEM;
  s->use_index = 1;
  int rc = lsched_score_index_create(&s->ix, c, rnd_score, s);
  if (rc == LSCHED_OK)
    rc = lsched_score_index_enable_counts(s->ix);
  if (rc == LSCHED_OK) /* only fits matter: an idle node fits as its class */
    rc = lsched_score_index_idle(s->ix);
  if (rc) {
    lsched_score_index_destroy(s->ix);
    lsched_mem_free(&s->a, s->scratch);
    return rc;
  }
  return LSCHED_OK;
}

static void rnd_fini(void *state) {
  struct rnd_state *s = state;
  lsched_score_index_destroy(s->ix);
  lsched_mem_free(&s->a, s->scratch);
}

static int rnd_set_param(void *state, const char *key, const char *value) {
  struct rnd_state *s = state;
  if (strcmp(key, "seed") != 0)
    return lsched_builtin_index_param(&s->use_index, key, value);
  char *end;
  errno = 0;
  if (!*value || *value == '-')
    return LSCHED_EINVAL;
  unsigned long long v = strtoull(value, &end, 10);
  if (errno || *end)
    return LSCHED_EINVAL;
  s->s = s->seed = (uint64_t)v;
  return LSCHED_OK;
}

/* A node change (not a state change): the view is taken again, the scratch
 * follows the node count, the index follows the change itself, and the
 * generator starts again from the seed, as the refresh that followed every
 * node change before this hook did (so that a run's draws, pooled clusters'
 * included, stay what they were). */
static int rnd_node_change(void *state, const lsched_cluster *c, int node,
                           int change) {
  struct rnd_state *s = state;
  (void)node;
  if (change == LSCHED_NODE_STATE)
    return LSCHED_OK;
  s->s = s->seed;
  if (lsched_cluster_view(c, &s->v) != LSCHED_OK)
    return LSCHED_EINVAL;
  return lsched_builtin_scratch_fit(&s->a, c, 1, &s->scratch, &s->scratch_cap);
}

static int rnd_place(void *state, const lsched_cluster *c,
                     const lsched_request *req, lsched_placement *out) {
  struct rnd_state *s = state;
  int node;
  if (s->use_index) {
    int rc = lsched_score_index_draw(s->ix, req, rnd_draw, s, &node);
    if (rc)
      return rc;
  } else {
    int m = lsched_collect_fits(c, req, s->scratch);
    if (m == 0)
      return LSCHED_ENOFIT;
    node = s->scratch[rnd_below(s, (uint64_t)m)];
  }
  const lsched_node *nd = lsched_view_node(&s->v, node);
  int d = lsched_node_eff_milli(nd, req), k = req->gpu_count;
  if (k == 0 || d == LSCHED_GPU_MILLI || nd->mode != LSCHED_GPU_SHARED)
    return lsched_pick_gpus(c, node, req, LSCHED_PICK_TIGHTEST, out);
  /* k distinct GPUs drawn uniformly among those with >= d free (a partial
   * Fisher-Yates shuffle of the fitting indices). */
  const int *g = lsched_view_gpus(&s->v, nd);
  int fit[LSCHED_MAX_GPUS_PER_NODE], nfit = 0;
  for (int i = 0; i < nd->gpu_count; i++)
    if (g[i] >= d)
      fit[nfit++] = i;
  memset(out, 0, sizeof *out);
  out->node = node;
  out->cpu_milli = req->cpu_milli;
  out->memory_mib = req->memory_mib;
  out->gpu_count = k;
  out->gpu_milli = d;
  out->gpu_mask = 0;
  for (int j = 0; j < k; j++) {
    int r = j + (int)rnd_below(s, (uint64_t)(nfit - j));
    int t = fit[j];
    fit[j] = fit[r];
    fit[r] = t;
    out->gpu_mask |= UINT64_C(1) << fit[j];
  }
  return LSCHED_OK;
}

const lsched_policy_ops lsched_builtin_random = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "random",
    .description = "uniformly random node that fits; random GPU that fits "
                   "(param seed)",
    .state_size = sizeof(struct rnd_state),
    .init = rnd_init,
    .fini = rnd_fini,
    .set_param = rnd_set_param,
    .place = rnd_place,
    .on_node_change = rnd_node_change,
    /* It places exactly when some node fits (the draw is among the m
     * fitting nodes; m == 0 draws nothing), but a placement draws. */
    .flags = LSCHED_POLICY_ANY_FIT_DRAWS,
};
