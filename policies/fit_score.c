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
#include "../libsched/src/internal.h"

struct fit_state {
  lsched_allocator a;
  int *scratch;
};

static int fit_init(void *state, const lsched_cluster *c) {
  struct fit_state *s = state;
  s->a = c->a;
  s->scratch = lsched__calloc(&s->a, 2 * (size_t)(c->n ? c->n : 1), sizeof(int));
  return s->scratch ? LSCHED_OK : LSCHED_ENOMEM;
}

static void fit_fini(void *state) {
  struct fit_state *s = state;
  lsched__free(&s->a, s->scratch);
}

/* floor(100 x leftover) as an exact integer; worst = 1 returns it, worst = 0
 * returns floor(100 x (1 - leftover)). */
static int64_t fit_score(const lsched_cluster *c, int node,
                         const lsched_request *req, int worst) {
  const struct lsched_node *nd = &c->nodes[node];
  int64_t A = c->max_cpu_cap > 0 ? c->max_cpu_cap : 1;
  int64_t B = (int64_t)(c->max_gpu_count > 0 ? c->max_gpu_count : 1) *
              LSCHED_GPU_MILLI;
  int64_t a = nd->cpu_free - req->cpu_milli;
  int64_t b = nd->gpu_free_sum -
              (int64_t)req->gpu_count * lsched__eff_milli(nd, req);
  /* 100 x leftover = (50 a B + 50 b A) / (A B); all terms >= 0. The
   * products stay below 2^63 for A up to 2^31 milli and B up to 64000. */
  int64_t num = 50 * a * B + 50 * b * A, den = A * B;
  if (worst)
    return num / den;
  return (100 * den - num) / den;
}

static int64_t best_score(const lsched_cluster *c, int node,
                          const lsched_request *req, void *ctx) {
  (void)ctx;
  return fit_score(c, node, req, 0);
}

static int64_t worst_score(const lsched_cluster *c, int node,
                           const lsched_request *req, void *ctx) {
  (void)ctx;
  return fit_score(c, node, req, 1);
}

static int best_place(void *state, const lsched_cluster *c,
                      const lsched_request *req, lsched_placement *out) {
  struct fit_state *s = state;
  return lsched__place_best_score(c, req, best_score, NULL, s->scratch,
                                  LSCHED_PICK_TIGHTEST, out);
}

static int worst_place(void *state, const lsched_cluster *c,
                       const lsched_request *req, lsched_placement *out) {
  struct fit_state *s = state;
  return lsched__place_best_score(c, req, worst_score, NULL, s->scratch,
                                  LSCHED_PICK_LOOSEST, out);
}

const lsched_policy_ops lsched__policy_best_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "best-fit",
    .description = "node with the least CPU and GPU left (half each, "
                   "normalised); tightest GPU",
    .state_size = sizeof(struct fit_state),
    .init = fit_init,
    .fini = fit_fini,
    .place = best_place,
};

const lsched_policy_ops lsched__policy_worst_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "worst-fit",
    .description = "node with the most CPU and GPU left (spread); loosest GPU",
    .state_size = sizeof(struct fit_state),
    .init = fit_init,
    .fini = fit_fini,
    .place = worst_place,
};
