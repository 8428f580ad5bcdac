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
 *
 * Normalisation keeps the highest raw score alone at 100 (every lower one
 * gets (s - lo) x 100 / (hi - lo) < 100), so the node is the earliest with
 * the highest raw score: the score index (lsched_score_index) answers it
 * in O(log n) per node changed since that shape was last placed instead of
 * O(nodes); parameter index=off places by the
 * normalised scan (lsched_place_best_score), the reference.
 */
#include "builtin.h"

struct fit_state {
  lsched_allocator a;
  int *scratch;
  size_t scratch_cap;
  lsched_score_index *ix;
  int use_index;
};

static void fit_fini(void *state) {
  struct fit_state *s = state;
  lsched_score_index_destroy(s->ix);
  lsched_mem_free(&s->a, s->scratch);
}

static int fit_init(struct fit_state *s, const lsched_cluster *c,
                    lsched_score_fn score, int by_state) {
  int n = lsched_cluster_node_count(c);
  lsched_cluster_allocator(c, &s->a);
  s->use_index = 1;
  s->scratch_cap = 2 * (size_t)(n ? n : 1);
  s->scratch = lsched_mem_calloc(&s->a, s->scratch_cap, sizeof(int));
  int rc = s->scratch ? lsched_score_index_create(&s->ix, c, score, NULL)
                      : LSCHED_ENOMEM;
  /* The leftover is a function of the node's class, free CPU and free
   * shares: memoised per state for best-fit. worst-fit spreads, so its
   * nodes rarely return to a state met before (10k and 100k GPUs at load
   * 1.2: +3-6% instructions with the memo): idle classes only. */
  if (rc == LSCHED_OK)
    rc = by_state ? lsched_score_index_state(s->ix)
                  : lsched_score_index_idle(s->ix);
  if (rc) /* no fini after a failed init */
    fit_fini(s);
  return rc;
}

static int fit_set_param(void *state, const char *key, const char *value) {
  struct fit_state *s = state;
  return lsched_builtin_index_param(&s->use_index, key, value);
}

/* A node change: the index follows it (stale trees after a real change, one
 * node re-scored after a pool's compose); the scan's scratch follows the
 * node count. What a refresh would rebuild, without the rebuild. */
static int fit_node_change(void *state, const lsched_cluster *c, int node,
                           int change) {
  struct fit_state *s = state;
  (void)node;
  (void)change;
  return lsched_builtin_scratch_fit(&s->a, c, 2, &s->scratch, &s->scratch_cap);
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

static int best_init(void *state, const lsched_cluster *c) {
  return fit_init(state, c, best_score, 1);
}

static int worst_init(void *state, const lsched_cluster *c) {
  return fit_init(state, c, worst_score, 0);
}

static int fit_place(struct fit_state *s, const lsched_cluster *c,
                     const lsched_request *req, lsched_score_fn score,
                     lsched_gpu_pick pick, lsched_placement *out) {
  if (!s->use_index)
    return lsched_place_best_score(c, req, score, NULL, s->scratch, pick,
                                   out);
  int node;
  int rc = lsched_score_index_best(s->ix, req, &node);
  if (rc)
    return rc;
  return lsched_pick_gpus(c, node, req, pick, out);
}

static int best_place(void *state, const lsched_cluster *c,
                      const lsched_request *req, lsched_placement *out) {
  return fit_place(state, c, req, best_score, LSCHED_PICK_TIGHTEST, out);
}

static int worst_place(void *state, const lsched_cluster *c,
                       const lsched_request *req, lsched_placement *out) {
  return fit_place(state, c, req, worst_score, LSCHED_PICK_LOOSEST, out);
}

const lsched_policy_ops lsched_builtin_best_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "best-fit",
    .description = "node with the least CPU and GPU left (half each, "
                   "normalised); tightest GPU",
    .state_size = sizeof(struct fit_state),
    .init = best_init,
    .fini = fit_fini,
    .place = best_place,
    .flags = LSCHED_POLICY_ANY_FIT,
    .set_param = fit_set_param,
    .on_node_change = fit_node_change,
};

const lsched_policy_ops lsched_builtin_worst_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "worst-fit",
    .description = "node with the most CPU and GPU left (spread); loosest GPU",
    .state_size = sizeof(struct fit_state),
    .init = worst_init,
    .fini = fit_fini,
    .place = worst_place,
    .flags = LSCHED_POLICY_ANY_FIT,
    .set_param = fit_set_param,
    .on_node_change = fit_node_change,
};
