/*
 * cheapest-work: the placement with the lowest price of the job's work,
 * price per GPU-hour of the node's model x GPUs taken / speed; ties by
 * the earlier finish (higher speed), then as best-fit. The rule in full
 * and the walk it shares with fastest-fit are in fastest_fit.c.
 */
#include "builtin.h"

static int cwork_place(void *state, const lsched_cluster *c,
                       const lsched_request *req, lsched_placement *out) {
  return lsched_builtin_typed_place(state, c, req, 1, out);
}

const lsched_policy_ops lsched_builtin_cheapest_work = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "cheapest-work",
    .description = "lowest model price x GPUs taken / speed; unknown prices "
                   "last; ties by speed, then as best-fit",
    .state_size = sizeof(struct lsched_builtin_typed),
    .init = lsched_builtin_typed_init,
    .fini = lsched_builtin_typed_fini,
    .place = cwork_place,
    .flags = LSCHED_POLICY_ANY_FIT, /* as fastest-fit (fastest_fit.c) */
    .set_param = lsched_builtin_typed_set_param,
};
