/*
 * libsched policy SDK: what a placement-policy author needs beyond
 * <libsched/libsched.h>. Every built-in policy (the library's policies/
 * folder) is written against this header and <libsched/libsched.h> only, so
 * an outside policy can do whatever a built-in one does, as fast.
 *
 * This header is the specification of that surface. It is stable in the
 * same way as the rest of the public interface: members of the documented
 * structs are only appended, and LSCHED_SDK_VERSION grows when they are.
 *
 * The model. A cluster keeps one record per node (lsched_node), the free
 * milli of every GPU in one pool of ints, and for MIG nodes one
 * lsched_mig_gpu_view per GPU. A policy reads them through an lsched_view:
 * a small versioned struct of pointers into the cluster's live state,
 * filled once (lsched_cluster_view(), typically in init or at the top of
 * place()) and then read with the static inline accessors below, which cost
 * what a field access costs. The view is read-only: a policy changes a
 * cluster only through lsched_alloc() / lsched_release().
 *
 * Lifetime of a view: its pointers stay valid, and keep showing the current
 * state, until a node is added, updated or removed, or the cluster is
 * destroyed. A policy is told of those changes (the ops table's
 * on_node_change hook, or a refresh that re-runs init), so a view taken in
 * init, and taken again on a node change, is always valid.
 *
 * Thread safety: as for the cluster (libsched.h): a view may be read from
 * the thread that uses the cluster, never while another thread changes it.
 *
 * Ownership: nothing returned here is owned by the caller unless stated;
 * memory obtained with lsched_mem_*() is freed with lsched_mem_free() on the
 * same allocator.
 */
#ifndef LIBSCHED_POLICY_SDK_H
#define LIBSCHED_POLICY_SDK_H

#include <libsched/libsched.h>
#include <libsched/migrate.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the SDK surface described here (structs and helpers). */
#define LSCHED_SDK_VERSION 3 /* 2 (0.2): lsched_frag_types and
                                lsched_frag_cache start with a version;
                                lsched_score_index; 3: lsched_node_watch */
/** The SDK version of the library actually linked. */
LSCHED_API unsigned lsched_sdk_version(void);

/* ---------------------------------------------------------------------- */
/* Nodes                                                                   */

/**
 * One node as the cluster keeps it (read-only for policies). The
 * aggregates are kept in step with the GPU pool on every alloc and release
 * (and re-derived by lsched_cluster_check()), so reading them is O(1).
 * Members are only appended; read records through lsched_view_node(),
 * which steps by the library's record size, never by indexing an array of
 * lsched_node directly.
 */
typedef struct lsched_node {
  char *name;                /* "" or NULL if none was given */
  int64_t cpu_cap, mem_cap;  /* capacity: CPU milli, memory MiB */
  int64_t cpu_free, mem_free;
  int gpu_count;
  int model;                 /* GPU model id; -1 without GPUs */
  lsched_gpu_mode mode;
  /* The node's GPUs' free milli are view->gpu_free[gpu_off ..
   * gpu_off + gpu_count) (lsched_view_gpus()). */
  int gpu_off;
  int gpus_full_free;        /* GPUs with 1000 milli free */
  int gpus_nonzero_free;     /* GPUs with > 0 milli free */
  int max_gpu_free;          /* largest free share on one GPU */
  int64_t gpu_free_sum;      /* sum of the free shares */
  /* MIG nodes (mode LSCHED_GPU_MIG): the GPUs are view->mig_gpus[mig_off
   * .. mig_off + gpu_count) (lsched_view_mig_gpus()); bit k-1 of mig_fit
   * set = some GPU of the node can serve an instance of kind k now. */
  int mig_off;
  uint8_t mig_fit;
  /* lsched_node_state: only UP nodes take new placements (the fit tests
   * say so); a REMOVED record has no capacity and no GPUs. */
  uint8_t state;
  uint64_t features; /* the node spec's features (version 3) */
} lsched_node;

/**
 * One MIG GPU as the cluster keeps it (read-only; see <libsched/mig.h> for
 * the model). Kinds are 1..LSCHED_MIG_KINDS; bit s of a slot mask is
 * memory slot s; bit k-1 of a kind mask is kind k. 16 bytes, so a scan
 * over 1,000 GPUs touches 16 KB. Policies index arrays of it, so its layout
 * is fixed (no version): a later change comes as a new struct and a new
 * view member.
 */
typedef struct lsched_mig_gpu_view {
  uint8_t kind_at[8]; /* kind of the instance starting at slot s, 0 none */
  uint8_t busy;       /* bit s: the instance starting at slot s is in use */
  uint8_t occ;        /* memory slots of every instance */
  uint8_t occ_busy;   /* memory slots of the instances in use */
  uint8_t busy_cs;    /* compute slices of the instances in use */
  uint8_t fit;        /* kind mask it can serve now: static, the kinds of
                         its idle instances; dynamic, the kinds that can be
                         created in slots no busy instance holds */
  uint8_t free_cs;    /* slices a new request could still use: static, the
                         slices of its idle instances; dynamic, 7 - busy_cs */
  uint8_t dynamic;    /* 1: instances are created on demand */
  uint8_t offered;    /* kind mask the GPU's model offers */
} lsched_mig_gpu_view;

#define LSCHED_VIEW_VERSION 1
/**
 * Read-only pointers into a cluster's live state, and its constants.
 * Fill with lsched_cluster_view() after setting .version (use
 * LSCHED_VIEW_INIT); later library versions may fill more members.
 */
typedef struct lsched_view {
  unsigned version;
  int n;                  /* nodes */
  int ngpus;              /* GPUs of every node, the size of gpu_free */
  size_t node_size;       /* the library's sizeof(lsched_node) */
  const void *nodes;      /* n records of node_size bytes, by node id */
  const int *gpu_free;    /* free milli per GPU, see lsched_node.gpu_off */
  const int *order;       /* visit position -> node id (n entries) */
  const int *pos_of;      /* node id -> visit position (n entries) */
  int64_t max_cpu_cap;    /* largest node CPU capacity (0 if no node) */
  int max_gpu_count;      /* largest node GPU count */
  int mig_ngpus;          /* MIG GPUs (0: no MIG node) */
  const lsched_mig_gpu_view *mig_gpus; /* NULL when mig_ngpus is 0 */
} lsched_view;
#define LSCHED_VIEW_INIT                                                       \
  {LSCHED_VIEW_VERSION, 0, 0, 0, NULL, NULL, NULL, NULL, 0, 0, 0, NULL}

/**
 * Fills *out (out->version must be 1..LSCHED_VIEW_VERSION) with the view of
 * c. LSCHED_OK, LSCHED_EINVAL (NULL argument), LSCHED_EVERSION. O(1).
 * The pointers stay valid until a node is added or c is destroyed.
 */
LSCHED_API int lsched_cluster_view(const lsched_cluster *c, lsched_view *out);

/** Node `id` (0 <= id < v->n; not checked). O(1). */
static inline const lsched_node *lsched_view_node(const lsched_view *v,
                                                  int id) {
  return (const lsched_node *)(const void *)((const char *)v->nodes +
                                             (size_t)id * v->node_size);
}

/** The free milli of node nd's GPUs: nd->gpu_count ints (NULL if none). */
static inline const int *lsched_view_gpus(const lsched_view *v,
                                          const lsched_node *nd) {
  return nd->gpu_count > 0 ? v->gpu_free + nd->gpu_off : (const int *)0;
}

/** The MIG GPUs of MIG node nd: nd->gpu_count entries (NULL if none or
 * not a MIG node). */
static inline const lsched_mig_gpu_view *
lsched_view_mig_gpus(const lsched_view *v, const lsched_node *nd) {
  return nd->mode == LSCHED_GPU_MIG && nd->gpu_count > 0
             ? v->mig_gpus + nd->mig_off
             : (const lsched_mig_gpu_view *)0;
}

/* ---------------------------------------------------------------------- */
/* Requests on nodes                                                       */

/** The MIG kind req asks for at least; 0 = not a MIG request (version-1
 * requests never are). */
static inline int lsched_request_mig_kind(const lsched_request *req) {
  return req->version >= 2 ? req->mig_kind : 0;
}

/**
 * Milli of the smallest MIG kind a valid MIG request could take on any
 * model (its mig_kind and compute need; memory depends on the model).
 * O(1).
 */
LSCHED_API int lsched_mig_request_milli_lb(const lsched_request *req);

/**
 * Effective per-GPU milli of valid request req on node nd, cheaply: 0 for a
 * CPU-only request, 1000 on exclusive nodes, on a MIG node for a MIG
 * request the milli of the smallest kind it could take (a lower bound of
 * lsched_effective_milli()), else req->gpu_milli. O(1).
 */
static inline int lsched_node_eff_milli(const lsched_node *nd,
                                        const lsched_request *req) {
  if (req->gpu_count <= 0)
    return 0;
  if (nd->mode == LSCHED_GPU_MIG && lsched_request_mig_kind(req))
    return lsched_mig_request_milli_lb(req);
  return nd->mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI : req->gpu_milli;
}

/**
 * The GPU rule of a plain (not MIG) fit test: k >= 1 of node nd's GPUs,
 * free shares g (lsched_view_gpus()), have d milli free each, d the
 * effective share (lsched_node_eff_milli()). lsched_fits() applies this
 * very rule after the node's state, CPU, memory and model. O(GPUs).
 */
static inline int lsched_node_gpus_fit(const lsched_node *nd, const int *g,
                                       int k, int d) {
  if (d == LSCHED_GPU_MILLI)
    return nd->gpus_full_free >= k;
  if (nd->max_gpu_free < d || nd->gpus_nonzero_free < k)
    return 0;
  if (k == 1)
    return 1;
  int cnt = 0;
  for (int i = 0; i < nd->gpu_count && cnt < k; i++)
    cnt += g[i] >= d;
  return cnt >= k;
}

/**
 * Writes the ids of every node that fits valid request req now, in visit
 * order, to out (room for node-count entries); returns how many. One walk
 * of the fit index that skips every subtree that cannot hold req:
 * O(m + pruned subtrees) for m fitting nodes. req is not validated.
 */
LSCHED_API int lsched_collect_fits(const lsched_cluster *c,
                                   const lsched_request *req, int *out);

/* ---------------------------------------------------------------------- */
/* Scoring helpers shared by the built-in policies                        */

/**
 * A node score for req: higher is better. node is a node id that fits req;
 * ctx is the caller's. Must not change the cluster.
 */
typedef int64_t (*lsched_score_fn)(const lsched_view *v, int node,
                                   const lsched_request *req, void *ctx);

/**
 * Scored placement as kube-scheduler does it: every node that fits req
 * (visit order) gets score(); the scores are min-max normalised to 0..100
 * with integer division (NormalizeScore) and the highest normalised score
 * wins, ties to the earliest node in the visit order; GPUs then chosen by
 * `pick` (lsched_pick_gpus()). Scores must fit in an int. scratch holds
 * 2 x node-count ints. LSCHED_OK with *out filled, or LSCHED_ENOFIT.
 * O(m) score calls for m fitting nodes.
 */
LSCHED_API int lsched_place_best_score(const lsched_cluster *c,
                                       const lsched_request *req,
                                       lsched_score_fn score, void *ctx,
                                       int *scratch, lsched_gpu_pick pick,
                                       lsched_placement *out);

/**
 * Like lsched_place_best_score() without normalisation: the highest raw
 * score wins, ties to the earliest node in the visit order (plugins
 * without ScoreExtensions). The node id goes to *node (-1 when nothing
 * fits). scratch holds node-count ints. LSCHED_OK or LSCHED_ENOFIT.
 * O(m) score calls.
 */
LSCHED_API int lsched_best_raw_score(const lsched_cluster *c,
                                     const lsched_request *req,
                                     lsched_score_fn score, void *ctx,
                                     int *scratch, int *node);

/**
 * The leftover score of best-fit and worst-fit for req on node `node`
 * (which fits): with A the largest node CPU capacity and B 1000 x the
 * largest node GPU count,
 *   leftover = 1/2 (CPU left / A) + 1/2 (GPU milli left / B)
 * after placing req; returns floor(100 x leftover) when worst is non-zero,
 * else floor(100 x (1 - leftover)). Exact integer arithmetic: the products
 * stay below 2^63 for A up to 2^31 milli and B up to 64000. O(1).
 */
static inline int64_t lsched_fit_score(const lsched_view *v, int node,
                                       const lsched_request *req, int worst) {
  const lsched_node *nd = lsched_view_node(v, node);
  int64_t A = v->max_cpu_cap > 0 ? v->max_cpu_cap : 1;
  int64_t B = (int64_t)(v->max_gpu_count > 0 ? v->max_gpu_count : 1) *
              LSCHED_GPU_MILLI;
  int64_t a = nd->cpu_free - req->cpu_milli;
  int64_t b = nd->gpu_free_sum -
              (int64_t)req->gpu_count * lsched_node_eff_milli(nd, req);
  /* 100 x leftover = (50 a B + 50 b A) / (A B); all terms >= 0. */
  int64_t num = 50 * a * B + 50 * b * A, den = A * B;
  if (worst)
    return num / den;
  return (100 * den - num) / den;
}

/* ---------------------------------------------------------------------- */
/* Score index (SDK version 2)                                             */

/**
 * The node with the highest score for a request, ties to the earliest node
 * in the visit order -- exactly lsched_best_raw_score()'s answer (and so
 * lsched_place_best_score()'s node, since min-max normalisation keeps the
 * highest raw score alone at 100) -- without scanning every node.
 *
 * For each request shape it tracks (CPU, memory, GPU count and share, model
 * mask, the MIG fields, features: what decides where a request fits) the
 * index keeps a tree over the visit order holding every fitting node's
 * score, the best one at the root. It follows the cluster by itself as an
 * observer (lsched_cluster_add_observer(), registered by create): an
 * allocation, release or state change on node x logs x, O(1); a shape's
 * tree replays the entries it has not seen when the shape is asked for
 * (x re-scored, its path climbed: O(score + log n) per node changed, a
 * rebuild past n/2). Adding, updating or removing a node or a new visit
 * order rebuilds the trees lazily (O(n) scores each). Finding the shape is
 * O(1) (hash). At most 256 shapes are tracked (fewer when 32 MiB of trees,
 * 16 bytes per node and shape, would not hold them); a new shape while the
 * table is full is answered by a scan and tracked the second time it is
 * asked (least recently used out). Requests with node_allowed or
 * node_filter, and requests of a later version, are always answered by a
 * scan.
 *
 * The contract on `score`: the score of node x for a request may depend
 * only on the request's shape (above), on x's state in the cluster, on the
 * cluster's constants (they change only with nodes) and on state the
 * policy changes in its on_alloc / on_release hooks for x only (they run
 * before the observers). Anything else that changes scores must be followed
 * by lsched_score_index_reset() (e.g. a new workload) or
 * lsched_score_index_touch() (one node). Scores must not be INT64_MIN.
 *
 * Typical use: create in init with the policy's score function and state,
 * lsched_score_index_best() in place(), destroy in fini.
 */
typedef struct lsched_score_index lsched_score_index;

/** Creates an index of `score` (ctx passed through) over c and registers
 * it as an observer of c. The cluster must outlive it. LSCHED_OK,
 * LSCHED_EINVAL, LSCHED_ENOMEM. O(n). */
LSCHED_API int lsched_score_index_create(lsched_score_index **out,
                                         const lsched_cluster *c,
                                         lsched_score_fn score, void *ctx);
/** Unregisters and frees (NULL: no-op). */
LSCHED_API void lsched_score_index_destroy(lsched_score_index *ix);
/**
 * The best node for valid request req in *node (-1 if none): LSCHED_OK,
 * LSCHED_ENOFIT, LSCHED_EINVAL, LSCHED_ENOMEM (only when a node was added
 * and the scan's scratch could not grow). For a tracked shape O(1) plus
 * the replay of the changes since it was last asked, otherwise one scan
 * (lsched_best_raw_score()). The trees are a cache: when one cannot be
 * allocated the answer comes from a scan.
 */
LSCHED_API int lsched_score_index_best(lsched_score_index *ix,
                                       const lsched_request *req, int *node);
/** Every score may have changed: rebuilt before the next answer. O(1). */
LSCHED_API void lsched_score_index_reset(lsched_score_index *ix);
/** Node `node`'s scores may have changed (logged, replayed lazily). O(1). */
LSCHED_API void lsched_score_index_touch(lsched_score_index *ix, int node);
/** on = 0: answer every request by a scan (the reference), 1: index
 * (default). LSCHED_OK or LSCHED_EINVAL. */
LSCHED_API int lsched_score_index_enable(lsched_score_index *ix, int on);
/** Counting (for a policy that draws among the fitting nodes, such as
 * random): every tree also keeps how many nodes fit below each entry. Call
 * right after create, before the first answer (LSCHED_ESTATE otherwise);
 * the trees then take 20 bytes per node and shape instead of 16 (fewer
 * shapes fit the 32 MiB budget). Until the index's first
 * lsched_score_index_best, draws read only which nodes fit, so the score
 * function is not called; that first best answer rebuilds every tree
 * (O(shapes x n) scores, once). */
LSCHED_API int lsched_score_index_enable_counts(lsched_score_index *ix);
/** Idle classes: the caller promises that score() of an idle node (up, all
 * its CPU, memory and every GPU free; not MIG) depends only on the node's
 * class (CPU and memory capacity, GPU count, model, GPU mode, features),
 * not on its id nor on policy state of that node. The index then fit-tests
 * and scores one idle node per class and shape (until the next reset or
 * node change) and gives every other idle node of the class that answer:
 * a tree built on a mostly idle cluster costs O(n) table reads instead of
 * O(n) fit tests and scores. Call right after create, before the first
 * answer (LSCHED_ESTATE otherwise); LSCHED_OK, LSCHED_EINVAL. */
LSCHED_API int lsched_score_index_idle(lsched_score_index *ix);
/** State scores: the caller promises more, that score() of any node
 * (not MIG) depends only on the node's class (as for
 * lsched_score_index_idle), its free CPU and the free share of each of its
 * GPUs in GPU order: not on its free memory (which decides only the fit;
 * the index tests memory before it reads the memo), its id, nor policy
 * state of that node; anything else that moves scores goes through
 * lsched_score_index_reset() (lsched_score_index_touch() forgets every
 * memoised answer). The index then takes each node's state at every
 * change and fit-tests and scores one node per (state, shape) it meets,
 * memoised until the next reset or visit order in a direct-mapped table
 * (a collision costs a fit test and a score again): a node that returns
 * to a state met before, or shares one with another node, costs a table
 * read per shape. Implies lsched_score_index_idle. Nodes with more than 8
 * GPUs are scored directly. Call right after create, before the first
 * answer: LSCHED_OK, LSCHED_EINVAL (NULL) or LSCHED_ESTATE. */
LSCHED_API int lsched_score_index_state(lsched_score_index *ix);
/**
 * A draw among the nodes that fit req (any score): with m >= 1 fitting
 * nodes, draw(user, m) returns r in [0, m) and *node is the r-th fitting
 * node in the visit order, exactly as lsched_collect_fits() followed by
 * out[r]; LSCHED_ENOFIT (draw not called) when none fits. O(log n) with a
 * counting index and a tracked shape (else the collect: O(n)). LSCHED_OK,
 * LSCHED_ENOFIT, LSCHED_EINVAL, LSCHED_ENOMEM.
 */
LSCHED_API int lsched_score_index_draw(lsched_score_index *ix,
                                       const lsched_request *req,
                                       uint64_t (*draw)(void *user,
                                                        uint64_t m),
                                       void *user, int *node);
/** Brings every tree up to date, recomputes each from scratch and
 * compares: LSCHED_OK or LSCHED_ESTATE. O(S x n) scores (tests). */
LSCHED_API int lsched_score_index_check(lsched_score_index *ix);

/** Counters of an index (lsched_score_index_stats_get). */
typedef struct lsched_score_index_stats {
  uint64_t indexed;   /* answers read from a tree */
  uint64_t scanned;   /* answers by a scan */
  uint64_t builds;    /* trees built (first use, after a reset) */
  uint64_t evictions; /* shapes replaced */
  int shapes, max_shapes;
} lsched_score_index_stats;
LSCHED_API int lsched_score_index_stats_get(const lsched_score_index *ix,
                                            lsched_score_index_stats *out);

/* ---------------------------------------------------------------------- */
/* Node changes                                                            */

/**
 * What a node change notice (the ops table's on_node_change, an observer's
 * on_node_change) moved. A composable pool attaching or detaching a GPU
 * (libsched.h "Composable GPU pools") reports the other hosts whose open
 * slots opened or closed as LSCHED_NODE_UPDATED, yet only their free GPU
 * shares moved: nothing a policy derived from capacities, models, GPU
 * counts or offsets is stale, and every view stays valid. A watch tells
 * the two apart, so that a hook can follow such a notice for that one
 * node (as after an alloc on it) and rebuild only after a real change.
 */
typedef struct lsched_node_watch lsched_node_watch;
/** Creates a watch of c: O(1) (the snapshot is taken at the first
 * notice). LSCHED_OK, LSCHED_EINVAL, LSCHED_ENOMEM. */
LSCHED_API int lsched_node_watch_create(lsched_node_watch **out,
                                        const lsched_cluster *c);
LSCHED_API void lsched_node_watch_destroy(lsched_node_watch *w);
/**
 * Call on every node change notice of c, after the change (from the hook).
 * 1 when only node `node`'s free state moved since the previous call: a
 * LSCHED_NODE_STATE change, or a LSCHED_NODE_UPDATED one that left every
 * member of the cluster's view (lsched_cluster_view(): node and GPU
 * counts, pointers, constants) and node's capacity, GPU count, model,
 * mode, features and GPU and MIG offsets as they were. 0 otherwise (and at
 * the first non-state call): the watch then keeps the new state for the
 * next call. LSCHED_ENOMEM when that snapshot could not be allocated (take
 * it as 0; the next call tries again). O(1) when 1; O(nodes) otherwise.
 */
LSCHED_API int lsched_node_watch_free_only(lsched_node_watch *w,
                                           const lsched_cluster *c, int node,
                                           int change);

/* ---------------------------------------------------------------------- */
/* MIG view                                                                */

/* NVIDIA's placement table, indexed by kind (0 unused): compute slices,
 * memory slots, valid starts (slot mask: 1g 0..6; 1g-2x 0, 2, 4, 6; 2g 0,
 * 2, 4; 3g 0, 4; 4g and 7g 0). The library's own tables are these. */
#define LSCHED_MIG_SLICES_TABLE {0, 1, 1, 2, 3, 4, 7}
#define LSCHED_MIG_SIZE_TABLE {0, 1, 2, 2, 4, 4, 8}
#define LSCHED_MIG_STARTS_TABLE {0, 0x7F, 0x55, 0x15, 0x11, 0x01, 0x01}
/* floor(1000 x slices / 7): the instances of one GPU never sum past 1000
 * because their slices never sum past 7. */
#define LSCHED_MIG_MILLI_TABLE {0, 142, 142, 285, 428, 571, 1000}

/* The table reads below take a kind 0..6 (0 gives 0) and check nothing:
 * they sit in policies' inner loops. lsched_mig_kind_slices() and its
 * siblings in <libsched/mig.h> check. */

/** Compute slices of kind k (0..6). O(1). */
static inline int lsched_mig_slices_of(int k) {
  static const unsigned char cs[7] = LSCHED_MIG_SLICES_TABLE;
  return cs[k];
}
/** Milli-GPU of kind k (0..6). O(1). */
static inline int lsched_mig_milli_of(int k) {
  static const unsigned short milli[7] = LSCHED_MIG_MILLI_TABLE;
  return milli[k];
}
/** Valid start slots of kind k (0..6) as a slot mask. O(1). */
static inline unsigned lsched_mig_starts_of(int k) {
  static const unsigned char st[7] = LSCHED_MIG_STARTS_TABLE;
  return st[k];
}
/** Slot mask of kind k (1..6) at start s (no validity check). */
static inline unsigned lsched_mig_mask_at(int k, int s) {
  static const unsigned char size[7] = LSCHED_MIG_SIZE_TABLE;
  return ((1u << size[k]) - 1u) << s;
}
/** Can MIG GPU g host an instance of kind k at valid start s now? */
static inline int lsched_mig_gpu_hosts(const lsched_mig_gpu_view *g, int k,
                                       int s) {
  if (g->dynamic)
    return ((g->offered >> (k - 1)) & 1) &&
           !(lsched_mig_mask_at(k, s) & g->occ_busy);
  return g->kind_at[s] == k && !((g->busy >> s) & 1);
}
/** The lowest start at which MIG GPU g can host kind k now, or -1. */
static inline int lsched_mig_gpu_start(const lsched_mig_gpu_view *g, int k) {
  for (int s = 0; s < 8; s++)
    if ((lsched_mig_starts_of(k) >> s) & 1 && lsched_mig_gpu_hosts(g, k, s))
      return s;
  return -1;
}
/** The kind MIG node nd serves a request needing kind kmin with: the
 * smallest kind >= kmin it can serve now (on dynamic nodes kmin), or -1. */
static inline int lsched_node_mig_kind(const lsched_node *nd, int kmin) {
  unsigned f = (unsigned)nd->mig_fit >> (kmin - 1);
  if (!f)
    return -1;
#if defined(__GNUC__)
  return kmin + __builtin_ctz(f);
#else
  int k = kmin;
  while (!(f & 1u)) {
    f >>= 1;
    k++;
  }
  return k;
#endif
}

/**
 * The kind valid MIG request req needs on GPU model `model` (1..6): the
 * smallest kind at least its lower bound that the model offers and whose
 * memory suffices; -1 when none. Unlike lsched_mig_request_kind() nothing
 * is validated (the hot-path form). O(kinds).
 */
LSCHED_API int lsched_mig_model_kind(const lsched_cluster *c, int model,
                                     const lsched_request *req);

/**
 * How many instances of kind k (1..6) fit at once in a MIG GPU whose busy
 * instances hold the memory slots `busy_slots` (0..255): the number of
 * free valid starts of k. 0 for a bad argument. O(1) (a table).
 */
LSCHED_API int lsched_mig_pack_count(unsigned busy_slots, int k);

/**
 * Chooses instances for a MIG request of k GPUs needing kind kmin on MIG
 * node `node`: the smallest kind K >= kmin (static; exactly kmin on dynamic
 * nodes) for which some start has k GPUs that can host (K, start); among
 * those by rule: LOWEST the k lowest GPU indices (then lowest start),
 * TIGHTEST the fewest free slices, LOOSEST the most (sums; ties: lowest
 * start, lowest GPUs). Fills out's gpu_count, gpu_milli, gpu_mask,
 * mig_kind and mig_start (not node, CPU or memory). LSCHED_OK or
 * LSCHED_ENOFIT. Arguments are not validated. O(kinds x starts x GPUs x k).
 */
LSCHED_API int lsched_mig_choose(const lsched_cluster *c, int node, int kmin,
                                 int k, lsched_gpu_pick rule,
                                 lsched_placement *out);

/**
 * MIG requests of more than one GPU, as the MIG built-ins place them: over
 * the nodes that fit (visit order), the smallest kind excess first, then by
 * rule (LOWEST: the first such node; TIGHTEST: the fewest free slices on
 * the chosen GPUs; LOOSEST: the most; ties to the earlier node), the GPUs
 * and start chosen by lsched_mig_choose() with that rule. scratch holds
 * node-count ints. LSCHED_OK (*out complete) or LSCHED_ENOFIT.
 */
LSCHED_API int lsched_mig_place_multi(const lsched_cluster *c,
                                      const lsched_request *req, int *scratch,
                                      lsched_gpu_pick rule,
                                      lsched_placement *out);

/* ---------------------------------------------------------------------- */
/* Memory                                                                  */

/**
 * Copies c's allocator, with every member set (libc when c was created
 * without one), to *out, so that a policy's fini (which gets no cluster)
 * can free what init allocated. LSCHED_OK or LSCHED_EINVAL.
 */
LSCHED_API int lsched_cluster_allocator(const lsched_cluster *c,
                                        lsched_allocator *out);
/** n bytes (at least 1) from a complete allocator a; NULL when out of
 * memory. */
LSCHED_API void *lsched_mem_alloc(const lsched_allocator *a, size_t n);
/** n x size zeroed bytes; NULL on overflow or out of memory. */
LSCHED_API void *lsched_mem_calloc(const lsched_allocator *a, size_t n,
                                   size_t size);
/** Resizes p (NULL: allocates) to n bytes; NULL (p untouched) on failure. */
LSCHED_API void *lsched_mem_realloc(const lsched_allocator *a, void *p,
                                    size_t n);
/** Frees p (NULL is a no-op). */
LSCHED_API void lsched_mem_free(const lsched_allocator *a, void *p);

/* ---------------------------------------------------------------------- */
/* Fragmentation (FGD) building blocks                                     */

/* The measure is documented at lsched_frag in libsched.h. A policy that
 * minimises its increase (fgd) compiles the workload for the cluster
 * (lsched_frag_types), keeps per-node aggregates up to date from its
 * on_alloc / on_release hooks (lsched_frag_cache), and evaluates candidate
 * states with lsched_frag_eval(). */

/** A task type as the evaluation loop reads it (an array element in
 * library-made arrays: fixed layout, no version). */
typedef struct lsched_frag_type {
  int64_t cpu; /* CPU milli the type needs */
  int64_t w;   /* weight */
  int32_t ti;  /* index of its GPU share among the thresholds */
  int32_t k;   /* GPU count */
} lsched_frag_type;

#define LSCHED_FRAG_TYPES_VERSION 1
/** A workload compiled for one cluster: the types that may run on GPU
 * model m are ft[moff[m] .. moff[m+1]). Filled by
 * lsched_frag_types_build() (which sets version). */
typedef struct lsched_frag_types {
  unsigned version;
  int64_t W;             /* sum of weights; 0 = empty workload */
  int nthr;              /* distinct GPU shares of the GPU types */
  int *thr;              /* those shares, ascending */
  lsched_frag_type *ft;  /* per-model lists, concatenated */
  int moff[LSCHED_MAX_MODELS + 1];
} lsched_frag_types;
#define LSCHED_FRAG_TYPES_INIT {LSCHED_FRAG_TYPES_VERSION, 0, 0, NULL, NULL, {0}}

#define LSCHED_FRAG_CACHE_VERSION 1
/** Per-node cache: F(n) x W and, per threshold j, the GPUs with at least
 * thr[j] free (cnt) and the free milli of the others (small). Filled by
 * lsched_frag_cache_init() (which sets version). */
typedef struct lsched_frag_cache {
  unsigned version;
  int n, nthr;
  int64_t *F;
  uint8_t *cnt;   /* n x nthr */
  int32_t *small; /* n x nthr */
  int64_t sum;    /* sum of F */
  int64_t *idle;  /* per node: free GPU milli when last updated */
  int64_t idle_sum;
} lsched_frag_cache;
#define LSCHED_FRAG_CACHE_INIT                                                 \
  {LSCHED_FRAG_CACHE_VERSION, 0, 0, NULL, NULL, NULL, 0, NULL, 0}

/**
 * Compiles w (NULL or empty: an empty workload) for c into *fw, memory from
 * allocator a (complete). LSCHED_OK or LSCHED_ENOMEM (*fw then holds
 * nothing). Free with lsched_frag_types_free(). O(T log T).
 */
LSCHED_API int lsched_frag_types_build(lsched_frag_types *fw,
                                       const lsched_allocator *a,
                                       const lsched_cluster *c,
                                       const lsched_workload *w);
/** Frees what lsched_frag_types_build() allocated (a zeroed *fw: no-op). */
LSCHED_API void lsched_frag_types_free(lsched_frag_types *fw,
                                       const lsched_allocator *a);
/** Allocates and fills the cache of every node of c for fw. LSCHED_OK or
 * LSCHED_ENOMEM (nothing held). O(nodes x (T + G x D)). */
LSCHED_API int lsched_frag_cache_init(lsched_frag_cache *fs,
                                      const lsched_allocator *a,
                                      const lsched_cluster *c,
                                      const lsched_frag_types *fw);
/** Frees the cache (a zeroed *fs: no-op). */
LSCHED_API void lsched_frag_cache_free(lsched_frag_cache *fs,
                                       const lsched_allocator *a);
/** Recomputes the cache of one node from the cluster: O(T + G x D). */
LSCHED_API void lsched_frag_cache_update(lsched_frag_cache *fs,
                                         const lsched_cluster *c,
                                         const lsched_frag_types *fw,
                                         int node);
/**
 * The same after placement p was allocated (sign 1) or released (sign -1)
 * on a node whose cache was up to date before: only p's GPUs are
 * re-aggregated, O(T + k x D).
 */
LSCHED_API void lsched_frag_cache_apply(lsched_frag_cache *fs,
                                        const lsched_cluster *c,
                                        const lsched_frag_types *fw,
                                        const lsched_placement *p, int sign);
/** The per-threshold aggregates of GPU free shares g[0..G) into cnt and
 * small (fw->nthr entries each): O(G x D). */
LSCHED_API void lsched_frag_aggregate(const lsched_frag_types *fw,
                                      const int *g, int G, uint8_t *cnt,
                                      int32_t *small);

/**
 * F(n) x W of a node state given its model, CPU free, per-threshold
 * aggregates and idle GPU milli: over the types that can run, weight x
 * small[ti]; plus the weight of the others x idle. O(types of the model).
 */
static inline int64_t lsched_frag_eval(const lsched_frag_types *fw, int model,
                                       int64_t cpu_free, const uint8_t *cnt,
                                       const int32_t *small, int64_t idle) {
  if (idle <= 0 || fw->W == 0)
    return 0;
  if (model < 0)
    return fw->W * idle;
  int64_t okw = 0, acc = 0;
  const lsched_frag_type *e = fw->ft + fw->moff[model];
  const lsched_frag_type *end = fw->ft + fw->moff[model + 1];
  for (; e < end; e++)
    if (cpu_free >= e->cpu && cnt[e->ti] >= e->k) {
      okw += e->w;
      acc += e->w * small[e->ti];
    }
  return acc + (fw->W - okw) * idle;
}

#ifdef __cplusplus
}
#endif

#endif /* LIBSCHED_POLICY_SDK_H */
