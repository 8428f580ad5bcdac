/*
 * fastest-fit and, through the shared walk below, cheapest-work: the
 * type-aware policies (issue #13 item 5). Both build, for every node that
 * fits the request now (visit order), the placement best-fit would take
 * there (lsched_pick_gpus, LSCHED_PICK_TIGHTEST: the tightest GPUs, or for
 * a MIG request the smallest instance on the GPU with the fewest free
 * slices) and ask the request for its speed there (lsched_request.speed,
 * version 4; speed 1 without a callback; a result not > 0 counts as 0).
 *
 * fastest-fit takes the placement where the job finishes earliest,
 * now + work / speed, i.e. the highest speed. Ties (equal speeds, e.g.
 * every node without a callback): the higher best-fit score
 * (lsched_fit_score, so on one model it places exactly as best-fit), then
 * the earliest node in the visit order (node id order unless
 * lsched_cluster_set_order() changed it).
 *
 * cheapest-work (cheapest_work.c) takes the lowest price of the work:
 * model price per GPU-hour (lsched_cluster_model_price) x GPUs taken
 * (gpu_count x gpu_milli / 1000 of the placement: whole GPUs on exclusive
 * nodes, the instance's compute share on MIG) / speed. A placement whose
 * cost is unknown (its model has no price, or its speed is not > 0) is
 * never cheaper than one with a known cost; a placement taking no GPU
 * costs 0. Ties (and among unknown costs): the higher speed (earlier
 * finish), then the higher best-fit score, then the earliest node in the
 * visit order.
 *
 * O(m) placements and speed calls for m fitting nodes (plus their GPUs).
 */
#include "builtin.h"

#include <math.h>

int lsched_builtin_typed_init(void *state, const lsched_cluster *c) {
  struct lsched_builtin_typed *s = state;
  int n = lsched_cluster_node_count(c);
  lsched_cluster_allocator(c, &s->a);
  s->scratch = lsched_mem_calloc(&s->a, (size_t)(n ? n : 1), sizeof(int));
  return s->scratch ? LSCHED_OK : LSCHED_ENOMEM;
}

void lsched_builtin_typed_fini(void *state) {
  struct lsched_builtin_typed *s = state;
  lsched_mem_free(&s->a, s->scratch);
}

/* The request's speed on pl: 1 without a callback, 0 for a result that is
 * not > 0 (NaN included). */
static double typed_speed(const lsched_cluster *c, const lsched_request *req,
                          const lsched_placement *pl) {
  if (req->version < 4 || !req->speed)
    return 1.0;
  double s = req->speed(req->speed_user, c, pl);
  return s > 0 ? s : 0;
}

/* One candidate: cost class (0 known, 1 unknown), cost, speed, best-fit
 * score. */
struct typed_cand {
  int unknown;
  double cost, speed;
  int64_t fit;
};

/* 1 if a ranks strictly before b. */
static int typed_better(const struct typed_cand *a, const struct typed_cand *b,
                        int by_cost) {
  if (by_cost) {
    if (a->unknown != b->unknown)
      return a->unknown < b->unknown;
    if (!a->unknown && a->cost != b->cost)
      return a->cost < b->cost;
  }
  if (a->speed != b->speed)
    return a->speed > b->speed;
  return a->fit > b->fit;
}

int lsched_builtin_typed_place(void *state, const lsched_cluster *c,
                               const lsched_request *req, int by_cost,
                               lsched_placement *out) {
  struct lsched_builtin_typed *s = state;
  lsched_view v = LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &v) != LSCHED_OK)
    return LSCHED_EINVAL;
  int has_speed = req->version >= 4 && req->speed;
  int m = lsched_collect_fits(c, req, s->scratch);
  int best_node = -1, picked = 0;
  struct typed_cand best = {0, 0, 0, 0};
  for (int i = 0; i < m; i++) {
    int node = s->scratch[i];
    const lsched_node *nd = lsched_view_node(&v, node);
    struct typed_cand k = {0, 0, 1.0, 0};
    int64_t taken_milli;
    lsched_placement pl;
    /* The placement itself is needed for the speed, and on MIG nodes for
     * the instance kind it takes; elsewhere without a callback the share
     * taken is known without it (whole GPUs on exclusive nodes). */
    int pick = has_speed || nd->mode == LSCHED_GPU_MIG;
    if (pick) {
      if (lsched_pick_gpus(c, node, req, LSCHED_PICK_TIGHTEST, &pl) !=
          LSCHED_OK)
        continue;
      k.speed = typed_speed(c, req, &pl);
      taken_milli = (int64_t)pl.gpu_count * pl.gpu_milli;
    } else {
      taken_milli = (int64_t)req->gpu_count * lsched_node_eff_milli(nd, req);
    }
    k.fit = lsched_fit_score(&v, node, req, 0);
    if (by_cost && taken_milli > 0) {
      double price = lsched_cluster_model_price(c, nd->model);
      if (isnan(price) || !(k.speed > 0))
        k.unknown = 1;
      else
        k.cost = price * (double)taken_milli / LSCHED_GPU_MILLI / k.speed;
    }
    if (best_node < 0 || typed_better(&k, &best, by_cost)) {
      best_node = node;
      best = k;
      picked = pick;
      if (pick)
        *out = pl;
    }
  }
  if (best_node < 0)
    return LSCHED_ENOFIT;
  return picked ? LSCHED_OK
                : lsched_pick_gpus(c, best_node, req, LSCHED_PICK_TIGHTEST,
                                   out);
}

static int ffast_place(void *state, const lsched_cluster *c,
                       const lsched_request *req, lsched_placement *out) {
  return lsched_builtin_typed_place(state, c, req, 0, out);
}

const lsched_policy_ops lsched_builtin_fastest_fit = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "fastest-fit",
    .description = "placement where the job runs fastest (finishes "
                   "earliest); ties as best-fit",
    .state_size = sizeof(struct lsched_builtin_typed),
    .init = lsched_builtin_typed_init,
    .fini = lsched_builtin_typed_fini,
    .place = ffast_place,
};
