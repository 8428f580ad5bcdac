/*
 * gpu-packing (the FGD simulator's GpuPackingScore). CPU-only requests
 * score 0 everywhere (so they go to the earliest node that fits). For a GPU
 * request, with F = fully free GPUs of the node and G its GPU count:
 *   - no GPU in use (F == G): max(33 - F, F);
 *   - otherwise take the GPUs that would serve the request in ascending
 *     order of free share (the tightest ones, as placed): if any of them is
 *     fully free, max(50 - number of fully free ones used, 33);
 *   - else max(100 - (sum over them of floor(free x 100 / 1000)) / 10, 50).
 * So sharing an already shared GPU beats opening a free GPU on a used node,
 * which beats an empty node. The highest score wins, ties to the earliest
 * node in the visit order; no normalisation. GPUs: the least free share
 * that fits; whole GPUs: the lowest-index free ones. The node comes from
 * the score index (lsched_score_index: O(G + log n) per node changed since
 * the request's shape was last placed); parameter index=off scans the m
 * candidate nodes, O(m x G).
 */
#include "builtin.h"

struct pack_state {
  lsched_allocator a;
  int *scratch;
  size_t scratch_cap;
  lsched_score_index *ix;
  int use_index;
};

static void pack_fini(void *state) {
  struct pack_state *s = state;
  lsched_score_index_destroy(s->ix);
  lsched_mem_free(&s->a, s->scratch);
}

static int pack_set_param(void *state, const char *key, const char *value) {
  struct pack_state *s = state;
  return lsched_builtin_index_param(&s->use_index, key, value);
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int64_t pack_score(const lsched_view *v, int node,
                          const lsched_request *req, void *ctx) {
  const lsched_cluster *c = ctx;
  if (req->gpu_count == 0)
    return 0;
  const lsched_node *nd = lsched_view_node(v, node);
  int full = nd->gpus_full_free;
  if (full == nd->gpu_count)
    return max64(33 - full, full);
  lsched_placement p;
  if (lsched_pick_gpus(c, node, req, LSCHED_PICK_TIGHTEST, &p) != LSCHED_OK)
    return 0; /* cannot happen: the node fits */
  const int *g = lsched_view_gpus(v, nd);
  int used_full = 0;
  int64_t pct = 0;
  for (int i = 0; i < nd->gpu_count; i++)
    if ((p.gpu_mask >> i) & 1) {
      used_full += g[i] == LSCHED_GPU_MILLI;
      pct += (int64_t)g[i] * 100 / LSCHED_GPU_MILLI;
    }
  if (used_full > 0)
    return max64(50 - used_full, 33);
  return max64(100 - pct / 10, 50);
}

static int pack_init(void *state, const lsched_cluster *c) {
  struct pack_state *s = state;
  int n = lsched_cluster_node_count(c);
  lsched_cluster_allocator(c, &s->a);
  s->use_index = 1;
  s->scratch_cap = n ? (size_t)n : 1;
  s->scratch = lsched_mem_calloc(&s->a, s->scratch_cap, sizeof(int));
  int rc = s->scratch ? lsched_score_index_create(&s->ix, c, pack_score,
                                                  (void *)c)
                      : LSCHED_ENOMEM;
  /* The score reads the node's GPU shares (and the tightest GPUs they
   * give) alone: a function of the node's state (memoised per state; an
   * idle node max(33 - GPUs, GPUs)). */
  if (rc == LSCHED_OK)
    rc = lsched_score_index_state(s->ix);
  if (rc) /* no fini after a failed init */
    pack_fini(s);
  return rc;
}

/* The index follows node changes itself; the scratch follows the count. */
static int pack_node_change(void *state, const lsched_cluster *c, int node,
                            int change) {
  struct pack_state *s = state;
  (void)node;
  (void)change;
  return lsched_builtin_scratch_fit(&s->a, c, 1, &s->scratch, &s->scratch_cap);
}

static int pack_place(void *state, const lsched_cluster *c,
                      const lsched_request *req, lsched_placement *out) {
  struct pack_state *s = state;
  int node;
  int rc = s->use_index ? lsched_score_index_best(s->ix, req, &node)
                        : lsched_best_raw_score(c, req, pack_score, (void *)c,
                                                s->scratch, &node);
  if (rc)
    return rc;
  return lsched_pick_gpus(c, node, req, LSCHED_PICK_TIGHTEST, out);
}

const lsched_policy_ops lsched_builtin_gpu_packing = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "gpu-packing",
    .description = "shared GPU > free GPU on a used node > empty node; "
                   "tightest GPU",
    .state_size = sizeof(struct pack_state),
    .init = pack_init,
    .fini = pack_fini,
    .place = pack_place,
    .flags = LSCHED_POLICY_ANY_FIT,
    .set_param = pack_set_param,
    .on_node_change = pack_node_change,
};
