/* Normalised scored placement (lsched_place_best_score, policy_sdk.h). */
#include <libsched/policy_sdk.h>

int lsched_place_best_score(const lsched_cluster *c, const lsched_request *req,
                            lsched_score_fn score, void *ctx, int *scratch,
                            lsched_gpu_pick pick, lsched_placement *out) {
  lsched_view v = LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &v) != LSCHED_OK)
    return LSCHED_EINVAL;
  int *cand = scratch, *sc = scratch + v.n;
  int m = lsched_collect_fits(c, req, cand);
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int i = 0; i < m; i++) {
    int64_t s = score(&v, cand[i], req, ctx);
    sc[i] = (int)s;
    if (s < lo)
      lo = s;
    if (s > hi)
      hi = s;
  }
  if (m == 0)
    return LSCHED_ENOFIT;
  int best = 0;
  int64_t best_norm = -1;
  for (int i = 0; i < m; i++) {
    int64_t norm = hi > lo ? (sc[i] - lo) * 100 / (hi - lo) : 100;
    if (norm > best_norm) {
      best_norm = norm;
      best = i;
    }
  }
  return lsched_pick_gpus(c, cand[best], req, pick, out);
}
