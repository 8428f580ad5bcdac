/*
 * first-fit: the first node in the cluster's visit order that fits, and on it
 * the lowest-index GPUs that fit. O(log n) typical through the fit index.
 */
#include "builtin.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
  const int node = s->v.order[p];
  const lsched_node *nd = lsched_view_node(&s->v, node);
  const int k = req->gpu_count;
  if (k > 0 && nd->mode == LSCHED_GPU_MIG) /* a MIG request */
    return lsched_pick_gpus(c, node, req, LSCHED_PICK_LOWEST, out);
  /* lsched_pick_gpus(LOWEST) on a node lsched_next_fit() just found to
   * fit, without repeating its checks and fit test (about 100
   * instructions per placement): the lowest k GPUs with the share; none
   * and a share of 0 for a CPU-only request (k = 0, d = 0). */
  const int d = lsched_node_eff_milli(nd, req);
  const int *g = lsched_view_gpus(&s->v, nd);
  uint64_t mask = 0;
#if defined(__SSE2__)
  if (nd->gpu_count == 8) {
    /* The usual node: the 8 shares compared at once (g > d - 1: d >= 0),
     * then the k lowest bits of the result (a test per GPU cost 50
     * instructions per placement). */
    const __m128i below = _mm_set1_epi32(d - 1);
    uint64_t have =
        (uint64_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(
            _mm_loadu_si128((const __m128i *)(const void *)g), below))) |
        (uint64_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(
            _mm_loadu_si128((const __m128i *)(const void *)(g + 4)), below)))
            << 4;
    if (k == 1) { /* the usual request: the lowest (the loop cost 14) */
      mask = have & (0 - have);
    } else {
      for (int got = 0; got < k && have; got++) {
        uint64_t low = have & (0 - have);
        mask |= low;
        have ^= low;
      }
    }
  } else
#endif
    for (int i = 0, got = 0; i < nd->gpu_count && got < k; i++)
      if (g[i] >= d) {
        mask |= UINT64_C(1) << i;
        got++;
      }
  out->version = LSCHED_PLACEMENT_VERSION;
  out->node = node;
  out->cpu_milli = req->cpu_milli;
  out->memory_mib = req->memory_mib;
  out->gpu_count = k;
  out->gpu_milli = d;
  out->gpu_mask = mask;
  out->mig_kind = 0;
  out->mig_start = 0;
  return LSCHED_OK;
}

const lsched_policy_ops lsched_builtin_first_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "first-fit",
    .description = "first node in order that fits; lowest-index GPUs",
    .state_size = sizeof(struct ff_state),
    .init = ff_init,
    .place = ff_place,
    .flags = LSCHED_POLICY_ANY_FIT,
};
