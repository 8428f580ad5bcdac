/*
 * mig-best-fit: a MIG request goes to the GPU with the fewest free compute
 * slices that can serve it (free = slices of its idle instances on a
 * static GPU, 7 minus the slices in use on a dynamic one), at that GPU's
 * lowest valid start; ties go to the earliest node in the visit order, then
 * the lowest GPU index. As in mig-first-fit, GPUs that can give the exact
 * kind come before GPUs that would give a larger static instance. Other
 * requests are placed as best-fit does.
 *
 * The node comes from a score index (lsched_score_index): a node's rank
 * for a request shape is its kind excess, then the free slices of its best
 * GPU, a function of that node's state alone, so each shape keeps a tree
 * that an alloc, release or MIG layout change on a node updates for that
 * node only: O(GPUs of the node + log n) per node changed since the shape
 * was last placed. Parameter index=off places by the pass over the fitting
 * nodes and their GPUs (the reference: O(m log n + GPUs of the m fitting
 * nodes)); the tests replay both and compare every decision.
 */
#include "builtin.h"

struct mbf_state {
  struct lsched_builtin_mig_fb fb; /* scratch, index, best-fit for others */
};

/* The best GPU of node `node` (which fits one-GPU MIG request req): the
 * kind K it serves req with, the GPU with K free and the fewest free
 * slices (the lowest index of those) in *gpu; returns that GPU's free
 * slices. */
static int mbf_node_gpu(const lsched_cluster *c, const lsched_view *v,
                        int node, const lsched_request *req, int *kind,
                        int *excess, int *gpu) {
  const lsched_node *nd = lsched_view_node(v, node);
  int kmin = lsched_mig_model_kind(c, nd->model, req);
  int K = lsched_node_mig_kind(nd, kmin);
  const lsched_mig_gpu_view *gs = lsched_view_mig_gpus(v, nd);
  const unsigned bit = 1u << (K - 1);
  int best = INT32_MAX;
  *gpu = -1;
  for (int g = 0; g < nd->gpu_count; g++)
    if ((gs[g].fit & bit) && gs[g].free_cs < best) {
      best = gs[g].free_cs;
      *gpu = g;
    }
  *kind = K;
  *excess = K - kmin;
  return best;
}

/* The index's score of a fitting node: the scan's order (kind excess,
 * then the free slices of the node's best GPU; both small) as one number,
 * higher better. */
static int64_t mbf_score(const lsched_view *v, int node,
                         const lsched_request *req, void *ctx) {
  const struct mbf_state *st = ctx;
  if (req->gpu_count > 1)
    return lsched_builtin_mig_multi_score(st->fb.c, v, node, req);
  int K, d, g;
  int fr = mbf_node_gpu(st->fb.c, v, node, req, &K, &d, &g);
  return -((int64_t)d * 16 + fr); /* free slices <= 7 */
}

static int mbf_init(void *state, const lsched_cluster *c) {
  return lsched_builtin_mig_fb_init(&((struct mbf_state *)state)->fb, c,
                                    mbf_score, state);
}

static void mbf_fini(void *state) {
  lsched_builtin_mig_fb_fini(&((struct mbf_state *)state)->fb);
}

/* "index" (on/off): the MIG index and the best-fit of non-MIG requests. */
static int mbf_set_param(void *state, const char *key, const char *value) {
  struct mbf_state *st = state;
  return lsched_builtin_mig_fb_param(&st->fb, key, value);
}

/* The reference (index=off): one pass over the fitting nodes and their
 * GPUs. */
static int mbf_scan(struct mbf_state *st, const lsched_cluster *c,
                    const lsched_request *req, int *node, int *gpu, int *kind) {
  int m = lsched_collect_fits(c, req, st->fb.scratch);
  int best_node = -1, best_gpu = -1, best_k = 0;
  int best_d = INT32_MAX, best_free = INT32_MAX;
  for (int i = 0; i < m; i++) {
    const lsched_node *nd = lsched_view_node(&st->fb.v, st->fb.scratch[i]);
    int kmin = lsched_mig_model_kind(c, nd->model, req);
    int K = lsched_node_mig_kind(nd, kmin);
    int d = K - kmin;
    if (d > best_d)
      continue;
    const lsched_mig_gpu_view *gs = lsched_view_mig_gpus(&st->fb.v, nd);
    const unsigned bit = 1u << (K - 1);
    for (int g = 0; g < nd->gpu_count; g++) {
      if (!(gs[g].fit & bit))
        continue;
      if (d < best_d || gs[g].free_cs < best_free) {
        best_d = d;
        best_free = gs[g].free_cs;
        best_node = st->fb.scratch[i];
        best_gpu = g;
        best_k = K;
      }
    }
  }
  *node = best_node;
  *gpu = best_gpu;
  *kind = best_k;
  return best_node < 0 ? LSCHED_ENOFIT : LSCHED_OK;
}

static int mbf_place(void *state, const lsched_cluster *c,
                     const lsched_request *req, lsched_placement *out) {
  struct mbf_state *st = state;
  if (!lsched_request_mig_kind(req) || req->gpu_count == 0)
    return lsched_builtin_best_fit.place(st->fb.fallback, c, req, out);
  if (req->gpu_count > 1)
    return lsched_builtin_mig_multi(&st->fb, req, out);
  int best_node, best_gpu, best_k;
  int rc = lsched_builtin_mig_fb_best(&st->fb, req, &best_node);
  if (rc == LSCHED_ENOENT) {
    rc = mbf_scan(st, c, req, &best_node, &best_gpu, &best_k);
  } else if (rc == LSCHED_OK) {
    int d;
    (void)mbf_node_gpu(c, &st->fb.v, best_node, req, &best_k, &d, &best_gpu);
  }
  if (rc)
    return rc;
  const lsched_mig_gpu_view *g =
      lsched_view_mig_gpus(&st->fb.v, lsched_view_node(&st->fb.v, best_node)) +
      best_gpu;
  out->node = best_node;
  out->cpu_milli = req->cpu_milli;
  out->memory_mib = req->memory_mib;
  out->gpu_count = 1;
  out->gpu_mask = UINT64_C(1) << best_gpu;
  out->gpu_milli = lsched_mig_milli_of(best_k);
  out->mig_kind = best_k;
  out->mig_start = lsched_mig_gpu_start(g, best_k);
  return LSCHED_OK;
}

const lsched_policy_ops lsched_builtin_mig_best_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "mig-best-fit",
    .description = "MIG: smallest instance kind available, the GPU with the "
                   "fewest free slices, lowest start; other requests as "
                   "best-fit",
    .state_size = sizeof(struct mbf_state),
    .init = mbf_init,
    .fini = mbf_fini,
    .place = mbf_place,
    .flags = LSCHED_POLICY_ANY_FIT, /* tests/lib/test_score_index.c */
    .set_param = mbf_set_param,
};
