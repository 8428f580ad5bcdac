/*
 * Internal structures of libsched, shared by the core and the built-in
 * policies. Nothing here is part of the public interface.
 */
#ifndef LIBSCHED_INTERNAL_H
#define LIBSCHED_INTERNAL_H

#include <libsched/libsched.h>

#define LSCHED_HIDDEN __attribute__((visibility("hidden")))

/* One node. The GPU free shares live in the cluster's gpu_free pool at
 * [gpu_off, gpu_off + gpu_count). The aggregates below are kept in step with
 * the pool on every alloc and release and are re-derived by the checker. */
struct lsched_node {
  char *name;
  int64_t cpu_cap, mem_cap;
  int64_t cpu_free, mem_free;
  int gpu_count;
  int model; /* -1 without GPUs */
  lsched_gpu_mode mode;
  int gpu_off;
  /* aggregates */
  int gpus_full_free;     /* GPUs with 1000 free */
  int gpus_nonzero_free;  /* GPUs with > 0 free */
  int max_gpu_free;       /* largest free share on one GPU */
  int64_t gpu_free_sum;   /* sum of free shares */
  /* MIG nodes (mode LSCHED_GPU_MIG): per-GPU state at c->mig->gpu[mig_off
   * .. mig_off + gpu_count); mig_fit bit k-1 = some GPU can serve kind k
   * now (re-derived with the aggregates; see mig.c). */
  int mig_off;
  uint8_t mig_fit;
};

/* Segment-tree entry over visit-order positions: maxima over the subtree,
 * used to prune lsched_next_fit(). */
struct lsched_seg {
  int64_t cpu_free, mem_free;
  int max_gpu_free;
  int gpus_full_free;
  int gpus_nonzero_free;
  int gpu_count;
  uint64_t models; /* OR of model bits of nodes with GPUs */
  uint8_t mig_fit; /* OR of the MIG nodes' mig_fit */
};

/* A distinct node shape, for lsched_can_ever_fit(). */
struct lsched_shape {
  int64_t cpu_cap, mem_cap;
  int gpu_count, model;
  lsched_gpu_mode mode;
};

struct lsched_cluster {
  lsched_allocator a;
  int check_invariants;
  uint64_t check_ops; /* alloc/release count for check_invariants */
  char errmsg[256];

  char *model_names[LSCHED_MAX_MODELS];
  int nmodels;

  struct lsched_node *nodes;
  int n, node_cap;
  int *gpu_free; /* pool of per-GPU free milli */
  int ngpus, gpu_pool_cap;

  int *order;  /* position -> node id */
  int *pos_of; /* node id -> position */

  struct lsched_seg *seg; /* 2 * seg_size entries, 1-based heap layout */
  int seg_size;            /* power of two >= n, 0 = not built */

  struct lsched_shape *shapes;
  int nshapes, shape_cap;

  struct lsched_policy **attached;
  int nattached, attached_cap;

  int64_t max_cpu_cap;   /* largest node CPU capacity */
  int max_gpu_count;     /* largest node GPU count */
  int model_max_gpus[LSCHED_MAX_MODELS]; /* largest GPU count per model */
  int64_t live_allocs;   /* allocations not yet released */
  struct lsched__mig *mig; /* MIG state (mig.c); NULL until first needed */
};

struct lsched_policy {
  const lsched_policy_ops *ops;
  lsched_cluster *c;
  void *state;
};

/* Memory through the cluster's allocator. */
LSCHED_HIDDEN void *lsched__alloc(const lsched_allocator *a, size_t n);
LSCHED_HIDDEN void *lsched__calloc(const lsched_allocator *a, size_t n,
                                   size_t size);
LSCHED_HIDDEN void *lsched__realloc(const lsched_allocator *a, void *p,
                                    size_t n);
LSCHED_HIDDEN void lsched__free(const lsched_allocator *a, void *p);
LSCHED_HIDDEN void lsched__default_allocator(lsched_allocator *out,
                                             const lsched_allocator *in);

/* The MIG kind a request asks for at least; 0 = not a MIG request. */
static inline int lsched__req_mig(const lsched_request *req) {
  return req->version >= 2 ? req->mig_kind : 0;
}
/* Milli of the smallest kind a MIG request could take on any model (its
 * mig_kind and compute need; memory depends on the model). mig.c. */
LSCHED_HIDDEN int lsched__mig_milli_lb(const lsched_request *req);

/* Effective per-GPU milli of req on node nd (1000 on exclusive nodes; on a
 * MIG node, for a MIG request, the milli of the smallest kind it could
 * take, a lower bound of what lsched_mig_request_kind() gives). */
static inline int lsched__eff_milli(const struct lsched_node *nd,
                                    const lsched_request *req) {
  if (req->gpu_count <= 0)
    return 0;
  if (nd->mode == LSCHED_GPU_MIG && lsched__req_mig(req))
    return lsched__mig_milli_lb(req);
  return nd->mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI : req->gpu_milli;
}

/* Exact fit test on a node; the fast paths avoid touching the GPU pool. */
LSCHED_HIDDEN int lsched__node_fits(const lsched_cluster *c,
                                    const struct lsched_node *nd,
                                    const lsched_request *req);

/* Writes the ids of every node that fits req, in visit order, to out (room
 * for node-count entries); returns how many. One pruned walk of the fit
 * index: O(m + pruned subtrees). */
LSCHED_HIDDEN int lsched__collect_fits(const lsched_cluster *c,
                                       const lsched_request *req, int *out);

/*
 * Scored placement shared by the scoring policies: every node that fits req
 * (visited in the cluster's order) gets an integer score from `score`; the
 * scores are min-max normalised to 0..100 with integer division, as
 * kube-scheduler's NormalizeScore does, and the highest normalised score
 * wins, ties going to the earliest node in the order. GPUs are then chosen
 * by `pick`. scratch must hold 2 x node-count ints. O(m log n) for m
 * candidate nodes.
 */
typedef int64_t (*lsched__score_fn)(const lsched_cluster *c, int node,
                                    const lsched_request *req, void *ctx);
LSCHED_HIDDEN int lsched__place_best_score(const lsched_cluster *c,
                                           const lsched_request *req,
                                           lsched__score_fn score, void *ctx,
                                           int *scratch, lsched_gpu_pick pick,
                                           lsched_placement *out);

/*
 * Like lsched__place_best_score() but without min-max normalisation: the
 * highest raw score wins, ties to the earliest node in the visit order (the
 * scoring of kube-scheduler plugins without ScoreExtensions). The chosen
 * node's id goes to *node; -1 and LSCHED_ENOFIT when nothing fits. scratch
 * must hold node-count ints. O(m) score calls for m candidates.
 */
LSCHED_HIDDEN int lsched__best_raw_score(const lsched_cluster *c,
                                         const lsched_request *req,
                                         lsched__score_fn score, void *ctx,
                                         int *scratch, int *node);

/* ---------------------------------------------------------------------- */
/* Fragmentation internals (frag.c), shared by the meter and FGD.          */

/* A task type as the evaluation loop reads it: the types that may run on
 * one GPU model are stored contiguously per model. */
struct lsched__ftype {
  int64_t cpu;    /* CPU milli the type needs */
  int64_t w;      /* weight */
  int32_t ti;     /* index of its GPU share among the thresholds */
  int32_t k;      /* GPU count */
};

/* A workload compiled for one cluster. */
struct lsched__fragw {
  int64_t W;               /* sum of weights; 0 = empty workload */
  int nthr;                /* distinct GPU shares of the GPU types */
  int *thr;                /* ascending */
  struct lsched__ftype *ft; /* per-model lists, concatenated */
  int moff[LSCHED_MAX_MODELS + 1]; /* model m: ft[moff[m] .. moff[m+1]) */
};

/* Per-node cache: F(n) x W and, per threshold j, the GPUs with at least
 * thr[j] free (cnt) and the free milli of the others (small). */
struct lsched__fragstate {
  int n, nthr;
  int64_t *F;
  uint8_t *cnt;   /* n x nthr */
  int32_t *small; /* n x nthr */
  int64_t sum;    /* sum of F */
  int64_t *idle;  /* per node: free GPU milli when last updated */
  int64_t idle_sum;
};

/* Compiles w (NULL or empty: an empty workload) for c. LSCHED_ENOMEM. */
LSCHED_HIDDEN int lsched__fragw_build(struct lsched__fragw *fw,
                                      const lsched_allocator *a,
                                      const lsched_cluster *c,
                                      const lsched_workload *w);
LSCHED_HIDDEN void lsched__fragw_free(struct lsched__fragw *fw,
                                      const lsched_allocator *a);
/* Allocates and fills the cache of every node. LSCHED_ENOMEM. */
LSCHED_HIDDEN int lsched__fragstate_init(struct lsched__fragstate *fs,
                                         const lsched_allocator *a,
                                         const lsched_cluster *c,
                                         const struct lsched__fragw *fw);
LSCHED_HIDDEN void lsched__fragstate_free(struct lsched__fragstate *fs,
                                          const lsched_allocator *a);
/* Recomputes the cache of one node from the cluster: O(T + G x D). */
LSCHED_HIDDEN void lsched__fragstate_update(struct lsched__fragstate *fs,
                                            const lsched_cluster *c,
                                            const struct lsched__fragw *fw,
                                            int node);
/* The same after placement p was allocated (sign 1) or released (sign -1)
 * on a node whose cache was up to date before it: only p's GPUs are
 * re-aggregated, O(T + k x D). */
LSCHED_HIDDEN void lsched__fragstate_apply(struct lsched__fragstate *fs,
                                           const lsched_cluster *c,
                                           const struct lsched__fragw *fw,
                                           const lsched_placement *p,
                                           int sign);
/* Aggregates of GPU free shares g[0..G) for the thresholds: O(G x D). */
LSCHED_HIDDEN void lsched__frag_aggregate(const struct lsched__fragw *fw,
                                          const int *g, int G, uint8_t *cnt,
                                          int32_t *small);

/* F x W of a node state given its model, CPU free, aggregates and idle GPU
 * milli: sum over the types that can run of w x small[ti], plus the weight
 * of the others x idle. O(types of that model). */
static inline int64_t lsched__frag_eval(const struct lsched__fragw *fw,
                                        int model, int64_t cpu_free,
                                        const uint8_t *cnt,
                                        const int32_t *small, int64_t idle) {
  if (idle <= 0 || fw->W == 0)
    return 0;
  if (model < 0)
    return fw->W * idle;
  int64_t okw = 0, acc = 0;
  const struct lsched__ftype *e = fw->ft + fw->moff[model];
  const struct lsched__ftype *end = fw->ft + fw->moff[model + 1];
  for (; e < end; e++)
    if (cpu_free >= e->cpu && cnt[e->ti] >= e->k) {
      okw += e->w;
      acc += e->w * small[e->ti];
    }
  return acc + (fw->W - okw) * idle;
}

/* Built-in policy tables. */
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_first_fit;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_best_fit;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_worst_fit;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_defrag;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_random;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_dot_product;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_gpu_clustering;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_gpu_packing;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_fgd;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_mig_first_fit;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_mig_best_fit;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_mig_aware;

#endif
