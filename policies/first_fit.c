/*
 * first-fit: the first node in the cluster's visit order that fits, and on it
 * the lowest-index GPUs that fit. O(log n) typical through the fit index.
 */
#include "builtin.h"

static int ff_place(void *state, const lsched_cluster *c,
                    const lsched_request *req, lsched_placement *out) {
  (void)state;
  int p = lsched_next_fit(c, req, 0);
  if (p < 0)
    return LSCHED_ENOFIT;
  return lsched_pick_gpus(c, lsched_cluster_order(c)[p], req,
                          LSCHED_PICK_LOWEST, out);
}

const lsched_policy_ops lsched_builtin_first_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "first-fit",
    .description = "first node in order that fits; lowest-index GPUs",
    .place = ff_place,
};
