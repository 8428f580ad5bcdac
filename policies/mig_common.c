/*
 * Shared by the MIG policies (mig_first_fit.c, mig_best_fit.c,
 * mig_aware.c): placement of MIG requests of more than one GPU. Such a job
 * gets one instance of the same kind at the same start on each of its GPUs
 * (in practice k x 7g), so the choice is per node; see mig_internal.h.
 */
#include "../libsched/src/mig_internal.h"

int lsched__mig_place_multi(const lsched_cluster *c, const lsched_request *req,
                            int *scratch, lsched_gpu_pick rule,
                            lsched_placement *out) {
  int m = lsched__collect_fits(c, req, scratch);
  int best_d = INT32_MAX;
  int64_t best_free = INT64_MAX;
  lsched_placement cand;
  int found = 0;
  for (int i = 0; i < m; i++) {
    const struct lsched_node *nd = &c->nodes[scratch[i]];
    int kmin = lsched__mig_model_kind(c, nd->model, req);
    if (kmin < 0)
      continue;
    if (lsched__mig_choose(c, scratch[i], kmin, req->gpu_count, rule, &cand))
      continue;
    int d = cand.mig_kind - kmin;
    int64_t fr = 0;
    if (rule != LSCHED_PICK_LOWEST) {
      const struct lsched__mig_gpu *gs = lsched__mig_gpus(c, nd);
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

int lsched__mig_fb_init(struct lsched__mig_fb *f, const lsched_cluster *c) {
  f->a = c->a;
  f->scratch = lsched__calloc(&f->a, (size_t)(c->n ? c->n : 1), sizeof(int));
  f->fallback = lsched__calloc(&f->a, 1, lsched__policy_best_fit.state_size);
  int rc = f->scratch && f->fallback
               ? lsched__policy_best_fit.init(f->fallback, c)
               : LSCHED_ENOMEM;
  if (rc) { /* the library does not call fini after a failed init */
    lsched__free(&f->a, f->fallback);
    lsched__free(&f->a, f->scratch);
    f->fallback = NULL;
    f->scratch = NULL;
  }
  return rc;
}

void lsched__mig_fb_fini(struct lsched__mig_fb *f) {
  if (f->fallback)
    lsched__policy_best_fit.fini(f->fallback);
  lsched__free(&f->a, f->fallback);
  lsched__free(&f->a, f->scratch);
}
