/*
 * mig-best-fit: a MIG request goes to the GPU with the fewest free compute
 * slices that can serve it (free = slices of its idle instances on a
 * static GPU, 7 minus the slices in use on a dynamic one), at that GPU's
 * lowest valid start; ties go to the earliest node in the visit order, then
 * the lowest GPU index. As in mig-first-fit, GPUs that can give the exact
 * kind come before GPUs that would give a larger static instance. Other
 * requests are placed as best-fit does.
 *
 * One pass over the fitting nodes and their GPUs: O(m log n + GPUs of the
 * m fitting nodes).
 */
#include "builtin.h"

struct mbf_state {
  struct lsched_builtin_mig_fb fb; /* scratch, and best-fit for other requests */
};

static int mbf_init(void *state, const lsched_cluster *c) {
  return lsched_builtin_mig_fb_init(&((struct mbf_state *)state)->fb, c);
}

static void mbf_fini(void *state) {
  lsched_builtin_mig_fb_fini(&((struct mbf_state *)state)->fb);
}

/* "index" (on/off) goes to the best-fit that places non-MIG requests. */
static int mbf_set_param(void *state, const char *key, const char *value) {
  struct mbf_state *st = state;
  return lsched_builtin_best_fit.set_param(st->fb.fallback, key, value);
}

static int mbf_place(void *state, const lsched_cluster *c,
                     const lsched_request *req, lsched_placement *out) {
  struct mbf_state *st = state;
  if (!lsched_request_mig_kind(req) || req->gpu_count == 0)
    return lsched_builtin_best_fit.place(st->fb.fallback, c, req, out);
  if (req->gpu_count > 1)
    return lsched_mig_place_multi(c, req, st->fb.scratch, LSCHED_PICK_TIGHTEST,
                                   out);
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
  if (best_node < 0)
    return LSCHED_ENOFIT;
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
    .set_param = mbf_set_param,
};
