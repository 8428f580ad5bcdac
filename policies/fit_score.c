/*
 * best-fit and worst-fit. Both score a feasible node by what it would have
 * left after placing the request:
 *
 *   leftover = 1/2 x (CPU left / largest node CPU capacity)
 *            + 1/2 x (GPU milli left / (1000 x largest node GPU count))
 *
 * best-fit scores floor(100 x (1 - leftover)) and takes the highest (the
 * tightest node; on it the GPU with the least free share that fits);
 * worst-fit scores floor(100 x leftover) and takes the highest (spread; the
 * GPU with the most free share). Scores are computed in exact integer
 * arithmetic, then min-max normalised over the candidates; ties go to the
 * earliest node in the visit order.
 */
#include "builtin.h"

struct fit_state {
  lsched_allocator a;
  int *scratch;
};

static int fit_init(void *state, const lsched_cluster *c) {
  struct fit_state *s = state;
  int n = lsched_cluster_node_count(c);
  lsched_cluster_allocator(c, &s->a);
  s->scratch = lsched_mem_calloc(&s->a, 2 * (size_t)(n ? n : 1), sizeof(int));
  return s->scratch ? LSCHED_OK : LSCHED_ENOMEM;
}

static void fit_fini(void *state) {
  struct fit_state *s = state;
  lsched_mem_free(&s->a, s->scratch);
}

/* The score itself is lsched_fit_score() (policy_sdk.h). */
static int64_t best_score(const lsched_view *v, int node,
                          const lsched_request *req, void *ctx) {
  (void)ctx;
  return lsched_fit_score(v, node, req, 0);
}

static int64_t worst_score(const lsched_view *v, int node,
                           const lsched_request *req, void *ctx) {
  (void)ctx;
  return lsched_fit_score(v, node, req, 1);
}

static int best_place(void *state, const lsched_cluster *c,
                      const lsched_request *req, lsched_placement *out) {
  struct fit_state *s = state;
  return lsched_place_best_score(c, req, best_score, NULL, s->scratch,
                                 LSCHED_PICK_TIGHTEST, out);
}

static int worst_place(void *state, const lsched_cluster *c,
                       const lsched_request *req, lsched_placement *out) {
  struct fit_state *s = state;
  return lsched_place_best_score(c, req, worst_score, NULL, s->scratch,
                                 LSCHED_PICK_LOOSEST, out);
}

const lsched_policy_ops lsched_builtin_best_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "best-fit",
    .description = "node with the least CPU and GPU left (half each, "
                   "normalised); tightest GPU",
    .state_size = sizeof(struct fit_state),
    .init = fit_init,
    .fini = fit_fini,
    .place = best_place,
};

const lsched_policy_ops lsched_builtin_worst_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "worst-fit",
    .description = "node with the most CPU and GPU left (spread); loosest GPU",
    .state_size = sizeof(struct fit_state),
    .init = fit_init,
    .fini = fit_fini,
    .place = worst_place,
};
