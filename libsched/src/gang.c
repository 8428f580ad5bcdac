/*
 * Gang placement: a job wider than one node is cut into per-node parts and
 * placed all-or-nothing through an ordinary placement policy (see the header
 * for the exact rules). Parts are allocated as they are placed so that the
 * policy sees them; on failure they are released in reverse order, which
 * restores the cluster bit for bit.
 */
#include "internal.h"

/* The largest GPU count of a node that req's models allow: O(models). */
static int widest_node(const lsched_cluster *c, const lsched_request *req) {
  if (!req->model_mask)
    return c->max_gpu_count;
  int w = 0;
  for (int m = 0; m < c->nmodels; m++)
    if ((req->model_mask >> m) & 1 && c->model_max_gpus[m] > w)
      w = c->model_max_gpus[m];
  return w;
}

/* The part of req with k of its GPUs: CPU and memory in proportion, the
 * remainder of the integer division on the first part. */
static void part_request(const lsched_request *req, int k, int first,
                         lsched_request *part) {
  *part = *req;
  int64_t g = req->gpu_count;
  part->gpu_count = k;
  part->cpu_milli = req->cpu_milli / g * k + (first ? req->cpu_milli % g : 0);
  part->memory_mib =
      req->memory_mib / g * k + (first ? req->memory_mib % g : 0);
}

/* The gang is kept: the observers saw its parts as trial allocations, so
 * each part is released (trial) and allocated again (not trial) with the
 * policies hidden (they saw each part once, as placed): nhooked is 0 for
 * that while, which keeps the alloc/release hot path free of a flag test.
 * No callback may attach or detach a policy, so restoring it is exact.
 * Both steps restore exactly what was there, so they cannot fail. Only
 * with observers. */
static void confirm_parts(lsched_cluster *c, const lsched_placement *parts,
                          int n) {
  const int nhooked = c->nhooked;
  c->nhooked = 0;
  for (int i = 0; i < n; i++) {
    lsched__trial_begin(c);
    lsched_release(c, &parts[i]);
    lsched__trial_end(c);
    lsched_alloc(c, &parts[i]);
  }
  c->nhooked = nhooked;
}

int lsched_place_splits(const lsched_cluster *c, const lsched_request *req) {
  if (!c || !lsched__req_valid(c, req))
    return LSCHED_EINVAL;
  return req->gpu_count > 0 && req->gpu_milli >= LSCHED_GPU_MILLI &&
         req->gpu_count > widest_node(c, req);
}

/* Places one part (LSCHED_OK and *out, or an error), allocating nothing. */
typedef int (*part_placer)(void *ctx, const lsched_cluster *c,
                           const lsched_request *part, lsched_placement *out);

static int part_by_policy(void *ctx, const lsched_cluster *c,
                          const lsched_request *part, lsched_placement *out) {
  (void)c;
  return lsched_policy_place(ctx, part, out);
}

/* The first node in the visit order that fits, its lowest GPUs. */
static int part_first(void *ctx, const lsched_cluster *c,
                      const lsched_request *part, lsched_placement *out) {
  (void)ctx;
  int p = lsched_next_fit(c, part, 0);
  if (p < 0)
    return LSCHED_ENOFIT;
  return lsched_pick_gpus(c, c->order[p], part, LSCHED_PICK_LOWEST, out);
}

/* Cuts req into parts of at most w GPUs, widest first, each placed by
 * `place` and allocated at once (so later parts see it), as trial changes
 * for the observers; on failure every part is released in reverse order
 * (the cluster is as before) and *nout is 0. */
static int place_parts(lsched_cluster *c, const lsched_request *req, int w,
                       part_placer place, void *ctx, lsched_placement *out,
                       int max_out, int *nout) {
  int left = req->gpu_count, rc = LSCHED_OK;
  lsched__trial_begin(c);
  while (left > 0) {
    if (*nout == max_out) {
      rc = LSCHED_ELIMIT;
      break;
    }
    rc = LSCHED_ENOFIT;
    /* Widest part first: fewest nodes. */
    for (int k = left < w ? left : w; k >= 1; k--) {
      lsched_request part;
      part_request(req, k, *nout == 0, &part);
      if (place(ctx, c, &part, &out[*nout]) != LSCHED_OK)
        continue;
      rc = lsched_alloc(c, &out[*nout]);
      if (rc == LSCHED_OK) {
        (*nout)++;
        left -= k;
      }
      break;
    }
    if (rc != LSCHED_OK)
      break;
  }
  if (rc != LSCHED_OK) {
    while (*nout > 0) {
      (*nout)--;
      lsched_release(c, &out[*nout]);
    }
  }
  lsched__trial_end(c);
  return rc;
}

int lsched_place_gang(lsched_policy *p, const lsched_request *req,
                      lsched_placement *out, int max_out, int *nout) {
  if (!p || !out || !nout || max_out < 1 || !lsched__req_valid(p->c, req))
    return LSCHED_EINVAL;
  *nout = 0;
  lsched_cluster *c = p->c;
  /* One node, or parts: the O(models) widest_node() only for whole GPUs. */
  int w = 0;
  if (req->gpu_count == 0 || req->gpu_milli < LSCHED_GPU_MILLI ||
      req->gpu_count <= (w = widest_node(c, req))) {
    /* Validated above: lsched_policy_place's checks are not repeated, and
     * the policy's fit and pick calls skip it (c->valid_req). */
    const lsched_request *outer = c->valid_req;
    c->valid_req = req;
    int rc = lsched__policy_place_valid(p, req, &out[0]);
    c->valid_req = outer;
    /* The gang contract stays LSCHED_ENOFIT (lsched_can_ever_fit_gang()
     * tells "never" apart). */
    if (rc == LSCHED_ENEVER)
      rc = LSCHED_ENOFIT;
    if (rc == LSCHED_OK && (rc = lsched_alloc(c, &out[0])) == LSCHED_OK)
      *nout = 1;
    return rc;
  }
  /* Parts are trial changes for the observers until the gang is kept. */
  int rc = place_parts(c, req, w, part_by_policy, p, out, max_out, nout);
  if (rc == LSCHED_OK && c->nobservers > 0)
    confirm_parts(c, out, *nout);
  return rc;
}

int lsched_gang_fits_first(lsched_cluster *c, const lsched_request *req,
                           lsched_placement *scratch, int max_parts) {
  if (!c || !scratch || max_parts < 1 || !lsched__req_valid(c, req))
    return LSCHED_EINVAL;
  int w = 0;
  if (req->gpu_count == 0 || req->gpu_milli < LSCHED_GPU_MILLI ||
      req->gpu_count <= (w = widest_node(c, req)))
    return lsched_next_fit(c, req, 0) >= 0;
  int n = 0;
  int rc = place_parts(c, req, w, part_first, NULL, scratch, max_parts, &n);
  /* Placed: the parts go again (trial releases, in reverse order), which
   * restores the cluster bit for bit. */
  lsched__trial_begin(c);
  while (n > 0)
    lsched_release(c, &scratch[--n]);
  lsched__trial_end(c);
  if (rc == LSCHED_OK)
    return 1;
  return rc == LSCHED_ENOFIT || rc == LSCHED_ELIMIT ? 0 : rc;
}

int lsched_can_ever_fit_gang(const lsched_cluster *c,
                             const lsched_request *req) {
  if (!c || !lsched__req_valid(c, req))
    return 0;
  if (req->gpu_count == 0 || req->gpu_milli < LSCHED_GPU_MILLI ||
      req->gpu_count <= widest_node(c, req))
    return lsched__can_ever_fit(c, req);
  /* On an empty cluster parts go widest first; count how many GPUs the
   * nodes that can hold a part of their own size offer. */
  int64_t g = req->gpu_count, avail = 0;
  for (int i = 0; i < c->n && avail < g; i++) {
    const struct lsched_node *nd = &c->nodes[i];
    if (nd->gpu_count == 0 ||
        (req->model_mask && !((req->model_mask >> nd->model) & 1)))
      continue;
    /* MIG requests fit MIG GPUs only, and only they do (mig.h). */
    if ((nd->mode == LSCHED_GPU_MIG) != (lsched__req_mig(req) != 0))
      continue;
    int k = nd->gpu_count;
    if (nd->cpu_cap >= req->cpu_milli / g * k + req->cpu_milli % g &&
        nd->mem_cap >= req->memory_mib / g * k + req->memory_mib % g)
      avail += k;
  }
  return avail >= g;
}
