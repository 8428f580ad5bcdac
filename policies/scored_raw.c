/* Raw-score placement shared by the FGD-paper policies (see internal.h). */
#include "../libsched/src/internal.h"

int lsched__best_raw_score(const lsched_cluster *c, const lsched_request *req,
                           lsched__score_fn score, void *ctx, int *scratch,
                           int *node) {
  int m = lsched__collect_fits(c, req, scratch);
  *node = -1;
  if (m == 0)
    return LSCHED_ENOFIT;
  int64_t best = INT64_MIN;
  for (int i = 0; i < m; i++) {
    int64_t s = score(c, scratch[i], req, ctx);
    if (s > best) { /* strict: ties stay with the earliest node */
      best = s;
      *node = scratch[i];
    }
  }
  return LSCHED_OK;
}
