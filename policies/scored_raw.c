/* Raw-score placement (lsched_best_raw_score, policy_sdk.h). */
#include <libsched/policy_sdk.h>

int lsched_best_raw_score(const lsched_cluster *c, const lsched_request *req,
                          lsched_score_fn score, void *ctx, int *scratch,
                          int *node) {
  lsched_view v = LSCHED_VIEW_INIT;
  *node = -1;
  if (lsched_cluster_view(c, &v) != LSCHED_OK)
    return LSCHED_EINVAL;
  int m = lsched_collect_fits(c, req, scratch);
  if (m == 0)
    return LSCHED_ENOFIT;
  int64_t best = INT64_MIN;
  for (int i = 0; i < m; i++) {
    int64_t s = score(&v, scratch[i], req, ctx);
    if (s > best) { /* strict: ties stay with the earliest node */
      best = s;
      *node = scratch[i];
    }
  }
  return LSCHED_OK;
}
