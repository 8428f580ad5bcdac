/*
 * mig-first-fit: a MIG request goes to the first node in the visit order
 * that can serve it, on that node's lowest-index GPU that can, at the
 * lowest valid start. On static nodes the instance taken is the smallest
 * kind that satisfies the request; the nodes able to give the exact kind
 * come first (a larger free instance is only taken when no node has the
 * exact one), so a static layout is not eaten by requests that a smaller
 * instance elsewhere would hold. Other requests are placed as first-fit
 * does (they never land on MIG GPUs).
 *
 * O(log n) per probed node through the fit index; when no node has the
 * exact kind, one pass over the fitting nodes.
 */
#include "builtin.h"

struct mff_state {
  lsched_allocator a;
  lsched_view v;
  int *scratch;
};

static int mff_init(void *state, const lsched_cluster *c) {
  struct mff_state *s = state;
  lsched_cluster_allocator(c, &s->a);
  s->v = (lsched_view)LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &s->v) != LSCHED_OK)
    return LSCHED_EINVAL;
  s->scratch = lsched_mem_calloc(&s->a, (size_t)(s->v.n ? s->v.n : 1), sizeof(int));
  return s->scratch ? LSCHED_OK : LSCHED_ENOMEM;
}

static void mff_fini(void *state) {
  struct mff_state *s = state;
  lsched_mem_free(&s->a, s->scratch);
}

static int mff_place(void *state, const lsched_cluster *c,
                     const lsched_request *req, lsched_placement *out) {
  struct mff_state *st = state;
  if (!lsched_request_mig_kind(req) || req->gpu_count == 0) {
    int p = lsched_next_fit(c, req, 0);
    if (p < 0)
      return LSCHED_ENOFIT;
    return lsched_pick_gpus(c, st->v.order[p], req, LSCHED_PICK_LOWEST, out);
  }
  if (req->gpu_count > 1)
    return lsched_mig_place_multi(c, req, st->scratch, LSCHED_PICK_LOWEST,
                                   out);
  int best = -1, best_d = INT32_MAX, best_k = 0;
  for (int p = lsched_next_fit(c, req, 0); p >= 0;
       p = lsched_next_fit(c, req, p + 1)) {
    const lsched_node *nd = lsched_view_node(&st->v, st->v.order[p]);
    int kmin = lsched_mig_model_kind(c, nd->model, req);
    int K = lsched_node_mig_kind(nd, kmin);
    if (K - kmin < best_d) {
      best_d = K - kmin;
      best = st->v.order[p];
      best_k = K;
      if (best_d == 0)
        break;
    }
  }
  if (best < 0)
    return LSCHED_ENOFIT;
  out->node = best;
  out->cpu_milli = req->cpu_milli;
  out->memory_mib = req->memory_mib;
  return lsched_mig_choose(c, best, best_k, 1, LSCHED_PICK_LOWEST, out);
}

const lsched_policy_ops lsched_builtin_mig_first_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "mig-first-fit",
    .description = "MIG: smallest instance kind available, first node in "
                   "order, lowest GPU and start; other requests as first-fit",
    .state_size = sizeof(struct mff_state),
    .init = mff_init,
    .fini = mff_fini,
    .place = mff_place,
    .flags = LSCHED_POLICY_ANY_FIT, /* tests/lib/test_score_index.c */
};
