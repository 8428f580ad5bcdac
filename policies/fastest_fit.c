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
 * The scan: O(m) placements and speed calls for m fitting nodes (plus
 * their GPUs). With the index (parameter index=on, the default) a request
 * whose speed is the same everywhere (no callback, or speed_scope
 * LSCHED_SPEED_CONSTANT) or depends on the node's model only
 * (LSCHED_SPEED_BY_MODEL) costs one best-fit index query, one placement
 * and one speed call per model instead (typed_indexed: the same node).
 *
 * Both promise LSCHED_POLICY_ANY_FIT: every node that fits is a candidate
 * (a failed pick, which the scan skips, never happens on a node that
 * fits: best-fit places through the same pick), each ranks every
 * candidate, unknown costs and zero speeds included, so a one-part
 * request is placed exactly when some node fits; and a call changes
 * nothing a later one could observe (the index's lazy trees aside). The
 * placement may depend on the request's speed, i.e. on the job (a host
 * that reuses one job's placement for another must tell them apart:
 * schedsim's queue index keys shapes by speed class).
 */
#include "builtin.h"

#include <math.h>

static int64_t typed_fit(const lsched_view *v, int node,
                         const lsched_request *req, void *ctx) {
  (void)ctx;
  return lsched_fit_score(v, node, req, 0);
}

void lsched_builtin_typed_fini(void *state) {
  struct lsched_builtin_typed *s = state;
  lsched_score_index_destroy(s->ix);
  lsched_mem_free(&s->a, s->scratch);
}

int lsched_builtin_typed_init(void *state, const lsched_cluster *c) {
  struct lsched_builtin_typed *s = state;
  int n = lsched_cluster_node_count(c);
  lsched_cluster_allocator(c, &s->a);
  s->use_index = 1;
  s->ix = NULL;
  s->scratch = lsched_mem_calloc(&s->a, (size_t)(n ? n : 1), sizeof(int));
  int rc = s->scratch ? lsched_score_index_create(&s->ix, c, typed_fit, NULL)
                      : LSCHED_ENOMEM;
  if (rc) /* no fini after a failed init */
    lsched_builtin_typed_fini(s);
  return rc;
}

int lsched_builtin_typed_set_param(void *state, const char *key,
                                   const char *value) {
  struct lsched_builtin_typed *s = state;
  return lsched_builtin_index_param(&s->use_index, key, value);
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

/* ---------------------------------------------------------------------- */
/* Index                                                                   */

/* The indexed answer, or TYPED_SCAN when only the scan is exact. */
#define TYPED_SCAN 1000

/* What the request's speed depends on, as far as the policy may use it:
 * LSCHED_SPEED_CONSTANT without a callback (speed 1 everywhere), the
 * declared scope (request version 5) for a non-MIG request with one,
 * LSCHED_SPEED_ANY otherwise (the scan). */
static int typed_scope(const lsched_request *req) {
  if (req->version < 4 || !req->speed)
    return LSCHED_SPEED_CONSTANT;
  if (req->version < 5 || lsched_request_mig_kind(req))
    return LSCHED_SPEED_ANY;
  return req->speed_scope;
}

/* The node of the scan's answer through the best-fit score index, for a
 * request whose speed is the same on every placement (no callback, or
 * LSCHED_SPEED_CONSTANT) or depends only on the node's GPU model
 * (LSCHED_SPEED_BY_MODEL).
 *
 * Equal speeds everywhere: fastest-fit's answer is the highest best-fit
 * score, ties to the earliest node: the index's answer; so is
 * cheapest-work's for a request taking no GPU (every cost 0).
 *
 * Otherwise (speed by model, or cheapest-work taking GPUs): for each
 * model m the index answers the same request restricted to m (model_mask
 * = bit m): X_m, the best best-fit score of model m, ties to the earliest.
 * The speed s_m is asked once, on X_m's placement (the contract: every
 * node of m gets the same). fastest-fit: every node of m has speed s_m, so
 * X_m is the model's best. cheapest-work: the cost of node x is
 * price(m) x taken(x) / 1000 / s_m, taken(x) = gpu_count x (1000 on an
 * exclusive node, gpu_milli on a shared one); a non-MIG request never
 * fits a MIG node. So X_m is the best candidate of model m when the
 * model's cost does not vary (no price or s_m not > 0: every node
 * unknown; price 0; gpu_milli = 1000) or when X_m takes the least of its
 * model (k x min(1000, gpu_milli): the cost is nondecreasing in taken, and
 * on an equal cost X_m wins on the score); otherwise a node of m with a
 * smaller cost may have a lower score: the scan answers (and for a NaN
 * cost, which does not order). The X_m are then ranked as the scan ranks
 * them (typed_better, then the earlier visit position). MIG requests
 * (the instance taken depends on the node's layout), more than 64 models,
 * requests with node_allowed or node_filter, and speed-by-model requests
 * taking no GPU (model_mask does not sort those by model) go to the
 * scan. */
static int typed_indexed(struct lsched_builtin_typed *s,
                         const lsched_cluster *c, const lsched_request *req,
                         int by_cost, int scope, int *node_out) {
  if (scope == LSCHED_SPEED_CONSTANT && (!by_cost || req->gpu_count <= 0))
    return lsched_score_index_best(s->ix, req, node_out);
  if (req->gpu_count <= 0 || lsched_request_mig_kind(req) ||
      (req->version >= 3 && (req->node_allowed || req->node_filter)))
    return TYPED_SCAN;
  int nm = lsched_cluster_model_count(c);
  if (nm > 64)
    return TYPED_SCAN;
  lsched_view v = LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &v) != LSCHED_OK)
    return TYPED_SCAN;
  int has_speed = req->version >= 4 && req->speed;
  int64_t least = (int64_t)req->gpu_count *
                  (req->gpu_milli < LSCHED_GPU_MILLI ? req->gpu_milli
                                                     : LSCHED_GPU_MILLI);
  int best_node = -1;
  struct typed_cand best = {0, 0, 0, 0};
  for (int m = 0; m < nm; m++) {
    uint64_t bit = UINT64_C(1) << m;
    if (req->model_mask && !(req->model_mask & bit))
      continue;
    lsched_request r = *req;
    r.model_mask = bit;
    int node;
    int rc = lsched_score_index_best(s->ix, &r, &node);
    if (rc == LSCHED_ENOFIT)
      continue;
    if (rc != LSCHED_OK)
      return TYPED_SCAN;
    const lsched_node *nd = lsched_view_node(&v, node);
    if (nd->mode == LSCHED_GPU_MIG)
      return TYPED_SCAN;
    struct typed_cand k = {0, 0, 1.0, 0};
    if (has_speed) {
      lsched_placement pl;
      if (lsched_pick_gpus(c, node, req, LSCHED_PICK_TIGHTEST, &pl) !=
          LSCHED_OK)
        return TYPED_SCAN; /* the scan skips it and looks further */
      k.speed = typed_speed(c, req, &pl);
    }
    k.fit = lsched_fit_score(&v, node, req, 0);
    if (by_cost) {
      int64_t taken = (int64_t)req->gpu_count * lsched_node_eff_milli(nd, req);
      double price = lsched_cluster_model_price(c, nd->model);
      if (isnan(price) || !(k.speed > 0)) {
        k.unknown = 1;
      } else {
        if (taken != least && price != 0)
          return TYPED_SCAN;
        k.cost = price * (double)taken / LSCHED_GPU_MILLI / k.speed;
        if (isnan(k.cost))
          return TYPED_SCAN;
      }
    }
    if (best_node < 0 || typed_better(&k, &best, by_cost) ||
        (!typed_better(&best, &k, by_cost) &&
         v.pos_of[node] < v.pos_of[best_node])) {
      best_node = node;
      best = k;
    }
  }
  *node_out = best_node;
  return best_node < 0 ? LSCHED_ENOFIT : LSCHED_OK;
}

int lsched_builtin_typed_place(void *state, const lsched_cluster *c,
                               const lsched_request *req, int by_cost,
                               lsched_placement *out) {
  struct lsched_builtin_typed *s = state;
  lsched_view v = LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &v) != LSCHED_OK)
    return LSCHED_EINVAL;
  int has_speed = req->version >= 4 && req->speed;
  int scope = typed_scope(req);
  if (s->use_index && scope != LSCHED_SPEED_ANY) {
    int node = -1;
    int rc = typed_indexed(s, c, req, by_cost, scope, &node);
    if (rc == LSCHED_ENOFIT)
      return rc;
    /* A pick that fails (a MIG node) is skipped by the scan: its answer. */
    if (rc == LSCHED_OK &&
        lsched_pick_gpus(c, node, req, LSCHED_PICK_TIGHTEST, out) ==
            LSCHED_OK)
      return LSCHED_OK;
  }
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
    .flags = LSCHED_POLICY_ANY_FIT,
    .set_param = lsched_builtin_typed_set_param,
};
