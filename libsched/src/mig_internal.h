/*
 * MIG internals (mig.c), shared by the cluster core and the MIG policies.
 * The public model is documented in <libsched/mig.h>.
 *
 * Kinds are numbered 1..6 in dominance order (1g < 1g-2x < 2g < 3g < 4g <
 * 7g); bit k-1 of a "kind mask" stands for kind k. Slot masks are 8-bit
 * (bit s = memory slot s).
 */
#ifndef LIBSCHED_MIG_INTERNAL_H
#define LIBSCHED_MIG_INTERNAL_H

#include "internal.h"

#define LSCHED__MIG_ALL_KINDS 0x3F

/* One MIG GPU is an lsched_mig_gpu_view (<libsched/policy_sdk.h>): the
 * policies read the same records the core keeps. */

struct lsched__mig {
  int ngpus, cap;
  lsched_mig_gpu_view *gpu;
  uint64_t *created; /* 8 per GPU: creation number of the instance at s */
  /* Per model: instance memory per kind (MiB), whether a table was set,
   * and the kinds offered (all six by default). */
  int64_t mem[LSCHED_MAX_MODELS][LSCHED_MIG_KINDS];
  uint8_t has_mem[LSCHED_MAX_MODELS];
  uint8_t offered[LSCHED_MAX_MODELS];
  /* Tables over the 256 busy-slot bitmaps: kinds that can be created, and
   * how many instances of kind k fit at once (the valid starts of every
   * kind are disjoint, so that is the number of free valid starts). */
  uint8_t can[256];
  uint8_t pack[256][LSCHED_MIG_KINDS];
  uint64_t seq, destroyed;
  /* Cluster totals (lsched_mig_totals), kept by every change. */
  int gpus;
  int64_t slices_used;
  int64_t in_use[LSCHED_MIG_KINDS], idle[LSCHED_MIG_KINDS];
  int64_t unusable[LSCHED_MIG_KINDS];
};

/* The placement table, index = kind (0 unused). */
extern LSCHED_HIDDEN const uint8_t lsched__mig_cs[7];
extern LSCHED_HIDDEN const uint8_t lsched__mig_size[7];
extern LSCHED_HIDDEN const uint8_t lsched__mig_starts[7];
extern LSCHED_HIDDEN const uint16_t lsched__mig_milli[7];

/* Slot mask of kind k at start s (no validity check). */
static inline unsigned lsched__mig_mask(int k, int s) {
  return ((1u << lsched__mig_size[k]) - 1u) << s;
}

/* Smallest kind with 1000 x slices >= 7 x milli (milli 0..1000). */
static inline int lsched__mig_kind_for_compute(int milli) {
  int cs = (7 * milli + 999) / 1000;
  return cs <= 1 ? 1 : cs == 2 ? 3 : cs == 3 ? 4 : cs == 4 ? 5 : 6;
}

/* Can GPU g host an instance of kind k at start s now? (s a valid start) */
static inline int lsched__mig_gpu_hosts(const lsched_mig_gpu_view *g, int k,
                                        int s) {
  if (g->dynamic)
    return ((g->offered >> (k - 1)) & 1) &&
           !(lsched__mig_mask(k, s) & g->occ_busy);
  return g->kind_at[s] == k && !((g->busy >> s) & 1);
}

/* The lowest start at which GPU g can host kind k now, or -1. */
static inline int lsched__mig_gpu_start(const lsched_mig_gpu_view *g,
                                        int k) {
  for (int s = 0; s < 8; s++)
    if ((lsched__mig_starts[k] >> s) & 1 && lsched__mig_gpu_hosts(g, k, s))
      return s;
  return -1;
}

/* The kind a node serves a request of kind kmin with: the smallest kind
 * >= kmin it can serve now (on dynamic nodes kmin itself), or -1. */
static inline int lsched__mig_node_kind(const struct lsched_node *nd,
                                        int kmin) {
  unsigned f = (unsigned)nd->mig_fit >> (kmin - 1);
  return f ? kmin + __builtin_ctz(f) : -1;
}

/* The MIG GPUs of node nd (NULL for a node without GPUs: the pool may
 * still be NULL, and NULL + 0 is undefined behaviour; clang's UBSan,
 * tests/fuzz/fuzz_libsched.c). */
static inline lsched_mig_gpu_view *
lsched__mig_gpus(const lsched_cluster *c, const struct lsched_node *nd) {
  return nd->gpu_count > 0 ? c->mig->gpu + nd->mig_off : NULL;
}

/* Creates c->mig (tables built) if absent. LSCHED_ENOMEM. */
LSCHED_HIDDEN int lsched__mig_ensure(lsched_cluster *c);
LSCHED_HIDDEN void lsched__mig_free(lsched_cluster *c);

/* Validates a version-2 spec's MIG part and appends the node's GPUs to the
 * pool (nd->mig_off set). Changes nothing on failure. */
LSCHED_HIDDEN int lsched__mig_add_node(lsched_cluster *c,
                                       struct lsched_node *nd,
                                       const lsched_node_spec *spec);
/* Undoes the last lsched__mig_add_node() (add_node rollback). */
/* Node changes: removes the k MIG GPUs at off (their totals too); moves
 * the last k GPUs of the pool to position `to` (< ngpus - k), shifting
 * those from `to` up by k. Offsets in node records are the caller's. */
LSCHED_HIDDEN void lsched__mig_cut(lsched_cluster *c, int off, int k);
LSCHED_HIDDEN void lsched__mig_move_last(lsched_cluster *c, int k, int to);
LSCHED_HIDDEN void lsched__mig_drop_node(lsched_cluster *c,
                                         const struct lsched_node *nd);
/* OR of the node's GPUs' fit masks. */
LSCHED_HIDDEN uint8_t lsched__mig_node_fit(const lsched_cluster *c,
                                           const struct lsched_node *nd);

/* The model-independent lower bound of that kind. */
LSCHED_HIDDEN int lsched__mig_kind_lb(const lsched_request *req);
/* Why MIG request req can never be placed on c, when the cause is a setup
 * one (no MIG node; a model that the request could use has no memory
 * table): writes a message to buf and returns 1; 0 otherwise. O(nodes). */
LSCHED_HIDDEN int lsched__mig_never_reason(const lsched_cluster *c,
                                           const lsched_request *req,
                                           char *buf, size_t n);

/* Exact fit of MIG request req on MIG node nd (CPU and memory included). */
LSCHED_HIDDEN int lsched__mig_node_fits(const lsched_cluster *c,
                                        const struct lsched_node *nd,
                                        const lsched_request *req);
/* 1 if req could fit node nd when nothing is in use on it. */
LSCHED_HIDDEN int lsched__mig_node_ever(const lsched_cluster *c,
                                        const struct lsched_node *nd,
                                        const lsched_request *req);

/* Placement checks and updates for alloc/release on a MIG node. */
LSCHED_HIDDEN int lsched__mig_check_alloc(lsched_cluster *c,
                                          const lsched_placement *p,
                                          char *why, size_t len);
LSCHED_HIDDEN int lsched__mig_check_release(lsched_cluster *c,
                                            const lsched_placement *p,
                                            char *why, size_t len);
LSCHED_HIDDEN void lsched__mig_apply(lsched_cluster *c,
                                     const lsched_placement *p, int alloc);

/* Refreshes node `node`'s aggregates and its fit-index entries after its
 * GPUs changed outside alloc/release (cluster.c). */
LSCHED_HIDDEN void lsched__node_changed(lsched_cluster *c, int node);

/* Invariants of every MIG GPU and the totals; LSCHED_OK or LSCHED_ESTATE
 * with why filled. */
LSCHED_HIDDEN int lsched__mig_check(const lsched_cluster *c, char *why,
                                    size_t len);

#endif
