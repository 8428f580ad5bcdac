/*
 * Shared by the MIG policies (mig_first_fit.c, mig_best_fit.c,
 * mig_aware.c): placement of MIG requests of more than one GPU. Such a job
 * gets one instance of the same kind at the same start on each of its GPUs
 * (in practice k x 7g), so the choice is per node (lsched_mig_place_multi
 * in policy_sdk.h, the scan; lsched_builtin_mig_multi takes the node from
 * the policy's score index); and what mig-best-fit and mig-aware share
 * (builtin.h): the best-fit fallback of non-MIG requests and the score
 * index of MIG requests.
 */
#include "builtin.h"

int lsched_mig_place_multi(const lsched_cluster *c, const lsched_request *req,
                            int *scratch, lsched_gpu_pick rule,
                            lsched_placement *out) {
  lsched_view v = LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &v) != LSCHED_OK)
    return LSCHED_EINVAL;
  int m = lsched_collect_fits(c, req, scratch);
  int best_d = INT32_MAX;
  int64_t best_free = INT64_MAX;
  lsched_placement cand;
  int found = 0;
  for (int i = 0; i < m; i++) {
    const lsched_node *nd = lsched_view_node(&v, scratch[i]);
    int kmin = lsched_mig_model_kind(c, nd->model, req);
    if (kmin < 0)
      continue;
    if (lsched_mig_choose(c, scratch[i], kmin, req->gpu_count, rule, &cand))
      continue;
    int d = cand.mig_kind - kmin;
    int64_t fr = 0;
    if (rule != LSCHED_PICK_LOWEST) {
      const lsched_mig_gpu_view *gs = lsched_view_mig_gpus(&v, nd);
      for (int g = 0; g < nd->gpu_count; g++)
        if ((cand.gpu_mask >> g) & 1)
          fr += gs[g].free_cs;
      if (rule == LSCHED_PICK_LOOSEST)
        fr = -fr;
    }
    if (d < best_d || (d == best_d && fr < best_free)) {
      best_d = d;
      best_free = fr;
      *out = cand;
      out->node = scratch[i];
      found = 1;
      if (d == 0 && rule == LSCHED_PICK_LOWEST)
        break; /* the first node with the exact kind */
    }
  }
  if (!found)
    return LSCHED_ENOFIT;
  out->cpu_milli = req->cpu_milli;
  out->memory_mib = req->memory_mib;
  return LSCHED_OK;
}

int64_t lsched_builtin_mig_multi_score(const lsched_cluster *c,
                                       const lsched_view *v, int node,
                                       const lsched_request *req) {
  const lsched_node *nd = lsched_view_node(v, node);
  int kmin = lsched_mig_model_kind(c, nd->model, req);
  lsched_placement cand;
  if (kmin < 0 || lsched_mig_choose(c, node, kmin, req->gpu_count,
                                     LSCHED_PICK_TIGHTEST, &cand))
    return INT64_MIN + 1; /* not reached: the node fits req */
  const lsched_mig_gpu_view *gs = lsched_view_mig_gpus(v, nd);
  int64_t fr = 0;
  for (int g = 0; g < nd->gpu_count; g++)
    if ((cand.gpu_mask >> g) & 1)
      fr += gs[g].free_cs;
  /* fr <= 7 x 64 < 1024: the kind excess first, as in the scan. */
  return -((int64_t)(cand.mig_kind - kmin) * 1024 + fr);
}

int lsched_builtin_mig_multi(struct lsched_builtin_mig_fb *f,
                             const lsched_request *req,
                             lsched_placement *out) {
  int node;
  int rc = lsched_builtin_mig_fb_best(f, req, &node);
  if (rc == LSCHED_ENOENT)
    return lsched_mig_place_multi(f->c, req, f->scratch, LSCHED_PICK_TIGHTEST,
                                   out);
  if (rc)
    return rc;
  const lsched_node *nd = lsched_view_node(&f->v, node);
  int kmin = lsched_mig_model_kind(f->c, nd->model, req);
  if (kmin < 0 || lsched_mig_choose(f->c, node, kmin, req->gpu_count,
                                     LSCHED_PICK_TIGHTEST, out))
    return LSCHED_ENOFIT; /* not reached: the node fits req */
  out->node = node;
  out->cpu_milli = req->cpu_milli;
  out->memory_mib = req->memory_mib;
  return LSCHED_OK;
}

int lsched_builtin_mig_fb_best(struct lsched_builtin_mig_fb *f,
                               const lsched_request *req, int *node) {
  if (!f->ix || !f->use_index)
    return LSCHED_ENOENT;
  return lsched_score_index_best(f->ix, req, node);
}

int lsched_builtin_mig_fb_param(struct lsched_builtin_mig_fb *f,
                                const char *key, const char *value) {
  int rc = lsched_builtin_index_param(&f->use_index, key, value);
  if (rc)
    return rc;
  return lsched_builtin_best_fit.set_param(f->fallback, key, value);
}

int lsched_builtin_mig_fb_init(struct lsched_builtin_mig_fb *f,
                               const lsched_cluster *c, lsched_score_fn score,
                               void *ctx) {
  lsched_cluster_allocator(c, &f->a);
  f->v = (lsched_view)LSCHED_VIEW_INIT;
  f->scratch = NULL;
  f->fallback = NULL;
  f->c = c;
  f->ix = NULL;
  f->use_index = 1;
  if (lsched_cluster_view(c, &f->v) != LSCHED_OK)
    return LSCHED_EINVAL;
  f->scratch = lsched_mem_calloc(&f->a, (size_t)(f->v.n ? f->v.n : 1), sizeof(int));
  f->fallback = lsched_mem_calloc(&f->a, 1, lsched_builtin_best_fit.state_size);
  int rc = f->scratch && f->fallback
               ? lsched_builtin_best_fit.init(f->fallback, c)
               : LSCHED_ENOMEM;
  if (rc) { /* the library does not call fini after a failed init */
    lsched_mem_free(&f->a, f->fallback);
    lsched_mem_free(&f->a, f->scratch);
    f->fallback = NULL;
    f->scratch = NULL;
    return rc;
  }
  /* Without MIG GPUs no MIG request fits (a node added later re-inits). */
  if (f->v.mig_ngpus > 0 &&
      (rc = lsched_score_index_create(&f->ix, c, score, ctx))) {
    lsched_builtin_mig_fb_fini(f);
    f->fallback = NULL;
    f->scratch = NULL;
  }
  return rc;
}

void lsched_builtin_mig_fb_fini(struct lsched_builtin_mig_fb *f) {
  lsched_score_index_destroy(f->ix);
  f->ix = NULL;
  if (f->fallback)
    lsched_builtin_best_fit.fini(f->fallback);
  lsched_mem_free(&f->a, f->fallback);
  lsched_mem_free(&f->a, f->scratch);
}
