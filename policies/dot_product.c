/*
 * dot-product (Tetris-style packing, as the FGD simulator's DotProductScore
 * with dimExtMethod "merge" and normMethod "max"): the node vector is (free
 * CPU / A, free GPU milli / B) before placing, the request vector is (CPU /
 * A, GPU milli / B), where A and B are the largest node's CPU and GPU
 * capacity in the cluster (the authors use the constants 128 cores and
 * 8 GPUs, which are exactly that on the Alibaba cluster). Score =
 * floor(100 x (1 - dot / 2)); the highest score wins (the smallest product),
 * ties to the earliest node in the visit order, no normalisation (the
 * plugin has no ScoreExtensions). GPUs: the least free share that fits
 * (their "best" GPU selection); whole GPUs: the lowest-index free ones.
 *
 * The score is exact integer arithmetic in 128 bits: with a = free CPU,
 * b = free GPU, r = request CPU, q = request GPU,
 *   floor(100 - 50 (a r B^2 + b q A^2) / (A^2 B^2)).
 * The node comes from the score index (lsched_score_index: O(score + log n)
 * per node changed since the request's shape was last placed); parameter
 * index=off scans the m candidate nodes, O(m).
 */
#include "builtin.h"

__extension__ typedef __int128 i128;

struct dot_state {
  lsched_allocator a;
  int *scratch;
  size_t scratch_cap;
  lsched_score_index *ix;
  int use_index;
};

static void dot_fini(void *state) {
  struct dot_state *s = state;
  lsched_score_index_destroy(s->ix);
  lsched_mem_free(&s->a, s->scratch);
}

static int dot_set_param(void *state, const char *key, const char *value) {
  struct dot_state *s = state;
  return lsched_builtin_index_param(&s->use_index, key, value);
}

static int64_t dot_score(const lsched_view *v, int node,
                         const lsched_request *req, void *ctx) {
  (void)ctx;
  const lsched_node *nd = lsched_view_node(v, node);
  i128 A = v->max_cpu_cap > 0 ? v->max_cpu_cap : 1;
  i128 B = (i128)(v->max_gpu_count > 0 ? v->max_gpu_count : 1) *
           LSCHED_GPU_MILLI;
  i128 q = (i128)req->gpu_count * lsched_node_eff_milli(nd, req);
  i128 den = A * A * B * B;
  i128 num = 50 * ((i128)nd->cpu_free * req->cpu_milli * B * B +
                   (i128)nd->gpu_free_sum * q * A * A);
  return (int64_t)((100 * den - num) / den);
}

static int dot_init(void *state, const lsched_cluster *c) {
  struct dot_state *s = state;
  int n = lsched_cluster_node_count(c);
  lsched_cluster_allocator(c, &s->a);
  s->use_index = 1;
  s->scratch_cap = n ? (size_t)n : 1;
  s->scratch = lsched_mem_calloc(&s->a, s->scratch_cap, sizeof(int));
  int rc = s->scratch ? lsched_score_index_create(&s->ix, c, dot_score, NULL)
                      : LSCHED_ENOMEM;
  /* The score reads the node's free CPU and GPU milli and the request
   * alone: a function of the node's state (memoised per state). */
  if (rc == LSCHED_OK)
    rc = lsched_score_index_state(s->ix);
  if (rc) /* no fini after a failed init */
    dot_fini(s);
  return rc;
}

/* The index follows node changes itself; the scratch follows the count. */
static int dot_node_change(void *state, const lsched_cluster *c, int node,
                           int change) {
  struct dot_state *s = state;
  (void)node;
  (void)change;
  return lsched_builtin_scratch_fit(&s->a, c, 1, &s->scratch, &s->scratch_cap);
}

static int dot_place(void *state, const lsched_cluster *c,
                     const lsched_request *req, lsched_placement *out) {
  struct dot_state *s = state;
  int node;
  int rc = s->use_index
               ? lsched_score_index_best(s->ix, req, &node)
               : lsched_best_raw_score(c, req, dot_score, NULL, s->scratch,
                                       &node);
  if (rc)
    return rc;
  return lsched_pick_gpus(c, node, req, LSCHED_PICK_TIGHTEST, out);
}

const lsched_policy_ops lsched_builtin_dot_product = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "dot-product",
    .description = "smallest dot product of normalised free (CPU, GPU) and "
                   "request; tightest GPU",
    .state_size = sizeof(struct dot_state),
    .init = dot_init,
    .fini = dot_fini,
    .place = dot_place,
    .flags = LSCHED_POLICY_ANY_FIT,
    .set_param = dot_set_param,
    .on_node_change = dot_node_change,
};
