/*
 * The policy SDK's entry points into the core (<libsched/policy_sdk.h>):
 * the read-only view of a cluster, the allocator, and the MIG tables that
 * policies read. The helpers built on them live with the policies
 * (policies/sdk_*.c), written against the public headers only.
 */
#include "mig_internal.h"

unsigned lsched_sdk_version(void) { return LSCHED_SDK_VERSION; }

int lsched_cluster_view(const lsched_cluster *c, lsched_view *out) {
  if (!c || !out)
    return LSCHED_EINVAL;
  if (out->version == 0 || out->version > LSCHED_VIEW_VERSION)
    return LSCHED_EVERSION;
  out->n = c->n;
  out->ngpus = c->ngpus;
  out->node_size = sizeof(struct lsched_node);
  out->nodes = c->nodes;
  out->gpu_free = c->gpu_free;
  out->order = c->order;
  out->pos_of = c->pos_of;
  out->max_cpu_cap = c->max_cpu_cap;
  out->max_gpu_count = c->max_gpu_count;
  out->mig_ngpus = c->mig ? c->mig->ngpus : 0;
  out->mig_gpus = out->mig_ngpus > 0 ? c->mig->gpu : NULL;
  return LSCHED_OK;
}

int lsched_cluster_allocator(const lsched_cluster *c, lsched_allocator *out) {
  if (!c || !out)
    return LSCHED_EINVAL;
  *out = c->a;
  return LSCHED_OK;
}

void *lsched_mem_alloc(const lsched_allocator *a, size_t n) {
  return lsched__alloc(a, n);
}

void *lsched_mem_calloc(const lsched_allocator *a, size_t n, size_t size) {
  return lsched__calloc(a, n, size);
}

void *lsched_mem_realloc(const lsched_allocator *a, void *p, size_t n) {
  return lsched__realloc(a, p, n);
}

void lsched_mem_free(const lsched_allocator *a, void *p) { lsched__free(a, p); }

int lsched_mig_request_milli_lb(const lsched_request *req) {
  return lsched__mig_milli_lb(req);
}

int lsched_mig_pack_count(unsigned busy_slots, int k) {
  if (busy_slots > 255 || k < 1 || k > LSCHED_MIG_KINDS)
    return 0;
  int n = 0;
  for (int s = 0; s < LSCHED_MIG_SLOTS; s++)
    if ((lsched__mig_starts[k] >> s) & 1 &&
        !(lsched__mig_mask(k, s) & busy_slots))
      n++;
  return n;
}
