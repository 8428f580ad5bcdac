/*
 * first-fit: the first node in the cluster's visit order that fits, and on it
 * the lowest-index GPUs that fit. O(log n) typical through the fit index.
 */
#include "builtin.h"

/* The cluster's view, taken once: place() reads the visit order from it. */
struct ff_state {
  lsched_view v;
};

static int ff_init(void *state, const lsched_cluster *c) {
  struct ff_state *s = state;
  s->v = (lsched_view)LSCHED_VIEW_INIT;
  return lsched_cluster_view(c, &s->v);
}

static int ff_place(void *state, const lsched_cluster *c,
                    const lsched_request *req, lsched_placement *out) {
  const struct ff_state *s = state;
  int p = lsched_next_fit(c, req, 0);
  if (p < 0)
    return LSCHED_ENOFIT;
  return lsched_pick_gpus(c, s->v.order[p], req, LSCHED_PICK_LOWEST, out);
}

const lsched_policy_ops lsched_builtin_first_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "first-fit",
    .description = "first node in order that fits; lowest-index GPUs",
    .state_size = sizeof(struct ff_state),
    .init = ff_init,
    .place = ff_place,
};
