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

/* Effective per-GPU milli of req on node nd (1000 on exclusive nodes). */
static inline int lsched__eff_milli(const struct lsched_node *nd,
                                    const lsched_request *req) {
  if (req->gpu_count <= 0)
    return 0;
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

/* Built-in policy tables. */
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_first_fit;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_best_fit;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_worst_fit;
extern LSCHED_HIDDEN const lsched_policy_ops lsched__policy_defrag;

#endif
