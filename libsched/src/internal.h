/*
 * Internal structures of libsched, shared by the core and the built-in
 * policies. Nothing here is part of the public interface.
 */
#ifndef LIBSCHED_INTERNAL_H
#define LIBSCHED_INTERNAL_H

#include <libsched/libsched.h>
#include <libsched/policy_sdk.h>

#define LSCHED_HIDDEN __attribute__((visibility("hidden")))

/* Value v is taken from a register here: the compiler may not fold its
 * load with its neighbours' into one wider load (it may still use a value
 * it knows). For fields the caller has just written one by one (a
 * request built field by field, a node's aggregates updated): a load
 * that spans two recent stores cannot take its data from the store
 * buffer, and waits until both have reached the cache. Such loads were
 * the stall of 15% of lsched_next_fit's time samples (the request's
 * amounts, read as one 16-byte word) and of 17% of lsched_release's (a
 * node's GPU aggregates, read as one word right after node_apply wrote
 * them), 100k@1.2 first-fit backfill. */
#if defined(__GNUC__)
#define LSCHED__IN_REG(v) __asm__("" : "+r"(v))
#else
#define LSCHED__IN_REG(v) ((void)0)
#endif

/* struct lsched_node (one node, its aggregates and its GPUs' place in the
 * pools) is documented in <libsched/policy_sdk.h>: policies read it there
 * through an lsched_view. */

/* Segment-tree entry over visit-order positions: maxima over the subtree,
 * used to prune lsched_next_fit(). 16 bytes (four to a cache line), eight
 * 16-bit lanes compared and combined at once (cluster.c "Lanes"): res
 * holds CPU milli free and memory MiB free (low to high; the upper 32
 * bits are 0), each through the monotone lane_amount() (-1, a node no
 * request may enter, is 0); gpu holds gpus_full_free, gpus_nonzero_free,
 * max_gpu_free and gpu_count (low to high: the node's field order), each
 * capped below 2^15.
 * The top bit of every lane is 0 (the guard of the word-wide tests).
 * Rounding and caps keep the test a necessary one: the leaf's exact test
 * decides. */
struct lsched_seg {
  uint64_t res, gpu;
};

/* The entry's fields that only MIG or model-restricted requests read and
 * that an allocation on a non-MIG node never changes, apart so that the
 * common descent and update touch 16 bytes per entry. */
struct lsched_segc {
  uint64_t models; /* OR of model bits of nodes with GPUs */
  uint8_t mig_fit; /* OR of the MIG nodes' mig_fit */
};

/* A request turned once into what the index's entries must reach
 * (cluster.c seg_need_of, seg_fits_at). */
struct lsched__seg_need {
  struct lsched_seg lanes; /* the minima, as an entry */
  uint64_t models;         /* 0: any */
  int mig_shift; /* MIG: the mig_fit bit of the smallest kind; else -1 */
  int cold;      /* models or mig_shift matter */
};

/* lsched_next_fit()'s memo (cluster.c "The first-fit memo"): per request
 * shape, the position before which no node fits it. WAYS shapes, any way
 * holding any shape (a tag compare finds it); arrays by way, so that the
 * tags are compared a register at a time. */
#define LSCHED__MEMO_WAYS 16
/* What a plain fit test reads of a request: its fields from cpu_milli to
 * model_mask in the request's order (cluster.c memo_key_of copies them at
 * once), the features, and 0 padding to three 16-byte words. */
struct lsched__memo_key {
  int64_t cpu, mem;
  int gpus, milli;
  uint64_t models, features, pad;
};
struct lsched__memo {
  uint32_t tag[LSCHED__MEMO_WAYS]; /* hash of key | 1; 0: way empty */
  int lb[LSCHED__MEMO_WAYS];       /* no node before position lb fits */
  /* The shape's need, which a leaf that gained room must also meet to
   * lower lb. */
  struct lsched__seg_need need[LSCHED__MEMO_WAYS];
  struct lsched__memo_key key[LSCHED__MEMO_WAYS];
  uint32_t filled; /* bit w: way w holds a shape */
  unsigned next;   /* the way a new shape takes (round robin) */
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
  /* Bumped by every lsched_cluster_set_order(): the score indexes
   * (scoreidx.c) keep their trees by visit position and rebuild on it. */
  uint64_t order_gen;
  /* 1 while order[p] == p for every position (no lsched_cluster_set_order
   * to another permutation): lsched__pos_node and lsched__node_pos answer
   * without a load (a dependent one on the way to a fit test or a leaf). */
  int order_id;

  struct lsched_seg *seg; /* 2 * seg_size entries, 1-based heap layout */
  struct lsched_segc *segc; /* their cold fields, same indexes */
  int seg_size;            /* power of two >= n, 0 = not built */
  /* A cache of answers, not state: lsched_next_fit() (const) writes it, as
   * the const calls write errmsg. Reset with the tree (seg_build). */
  struct lsched__memo memo;

  struct lsched_shape *shapes;
  int nshapes, shape_cap;

  struct lsched_policy **attached;
  int nattached, attached_cap;
  /* The attached policies with an on_alloc or on_release hook, in the same
   * order (capacity attached_cap): the only ones alloc/release must call. */
  struct lsched_policy **hooked;
  int nhooked;

  /* Observers (lsched_cluster_add_observer), told after the policies. */
  struct lsched__observer *observers;
  int nobservers, observers_cap;
  /* The calls an alloc (a release) makes to them: each observer with an
   * on_alloc (on_release), in order, as function and user side by side
   * (lsched__observers_index, after every add and remove; capacity
   * obs_calls_cap). A walk over the observers themselves tested and
   * skipped the missing members and read 48-byte records. */
  struct lsched__obs_call *obs_alloc, *obs_release;
  int nobs_alloc, nobs_release, obs_calls_cap;
  /* > 0 while a planner or a gang placement makes changes it undoes
   * before returning: observers get trial = 1 (lsched__trial_begin). */
  int trial_depth;

  /* The request a placement in progress already validated (place_gang,
   * policy_place: set for the policy's place call and restored after), or
   * NULL: the fit and pick calls skip their own lsched_request_validate()
   * for it (lsched__req_valid). A request is const to the policy, so the
   * one validation holds for the whole call. */
  const lsched_request *valid_req;

  int64_t max_cpu_cap;   /* largest node CPU capacity */
  int max_gpu_count;     /* largest node GPU count */
  int model_max_gpus[LSCHED_MAX_MODELS]; /* largest GPU count per model */
  int64_t live_allocs;   /* allocations not yet released */
  struct lsched__mig *mig; /* MIG state (mig.c); NULL until first needed */
  /* lsched_cluster_set_model_price(): USD per GPU-hour, known when the
   * byte is non-zero (calloc: every price unknown). */
  double model_price[LSCHED_MAX_MODELS];
  unsigned char model_priced[LSCHED_MAX_MODELS];
  /* Composable GPU pools (pool.c); phost covers node ids < npool_nodes
   * (nodes added later are no pool's hosts). */
  struct lsched__pool *pools;
  int npools, pools_cap;
  struct lsched__pool_host *phost;
  int npool_nodes;
};

/* The node at visit position pos, and the position of node id. */
static inline int lsched__pos_node(const struct lsched_cluster *c, int pos) {
  return c->order_id ? pos : c->order[pos];
}
static inline int lsched__node_pos(const struct lsched_cluster *c, int node) {
  return c->order_id ? node : c->pos_of[node];
}

/* A pool (pool.c): GPUs in the chassis, not attached, slots per host. */
struct lsched__pool {
  int gpus, free, slots, max_per_host, keep_attached;
  int *hosts;
  int nhosts;
};
/* A node's place in the pools: pool id or -1, its slot mask, the slots
 * attached to it and the open ones (the rest of `slots` is blocked). */
struct lsched__pool_host {
  int pool;
  uint64_t slots, attached, open;
};

/* The pool bookkeeping of lsched_alloc / lsched_release on a host node
 * (call only when lsched__pool_host_of() >= 0): after alloc, the slots of
 * p taken while open become attached; after release, fully free attached
 * slots are detached unless the pool keeps them. Other hosts whose open
 * slots moved are refreshed and told. pool.c. */
LSCHED_HIDDEN void lsched__pool_after_alloc(lsched_cluster *c,
                                            const lsched_placement *p);
LSCHED_HIDDEN void lsched__pool_after_release(lsched_cluster *c,
                                              const lsched_placement *p);
/* The pool invariants (masks, open counts, blocked slots empty, pool
 * free + attached = gpus). LSCHED_OK or LSCHED_ESTATE with why set. */
LSCHED_HIDDEN int lsched__pool_check(const lsched_cluster *c, char *why,
                                     size_t n);
/* Pool-aware totals: physical GPUs and free milli (pool GPUs once). */
LSCHED_HIDDEN void lsched__pool_totals(const lsched_cluster *c, int *gpus,
                                       int64_t *milli_free);
LSCHED_HIDDEN void lsched__pool_free_all(lsched_cluster *c);
/* Refreshes node aggregates and the index leaf (cluster.c). */
LSCHED_HIDDEN void lsched__node_changed(lsched_cluster *c, int node);

static inline int lsched__pool_host_of(const lsched_cluster *c, int node) {
  return node < c->npool_nodes ? c->phost[node].pool : -1;
}

/* One registered observer: a copy of the caller's table (missing members
 * of an older version zeroed), the table's address and user as the key
 * that lsched_cluster_remove_observer() matches. */
struct lsched__observer {
  lsched_observer ops;
  const lsched_observer *key;
  void *user;
};

/* One observer's on_alloc or on_release and its user. */
struct lsched__obs_call {
  void (*fn)(void *user, const lsched_cluster *c, const lsched_placement *p,
             int trial);
  void *user;
};

/* Rebuilds c->obs_alloc and c->obs_release from c->observers (call after
 * every change of them). LSCHED_OK, or LSCHED_ENOMEM with the lists as
 * they were (never when the observers did not grow). cluster.c. */
LSCHED_HIDDEN int lsched__observers_index(lsched_cluster *c);

struct lsched_policy {
  const lsched_policy_ops *ops;
  lsched_cluster *c;
  void *state;
  /* For the refresh of a policy without an on_node_change hook: what was
   * set on it, replayed after init (policy.c). */
  const struct lsched_registry *registry;
  char **params; /* key, value, key, value, ... */
  int nparams, params_cap;
  lsched_workload *workload; /* a copy of the last set_workload, or NULL */
  int broken; /* a node change it could not follow: place gives ESTATE */
};

/* lsched_policy_place()'s error tail: the message for rc (LSCHED_ESTATE
 * of a broken policy, LSCHED_ENEVER told from LSCHED_ENOFIT, any other
 * error) and the code to return. policy.c. */
LSCHED_HIDDEN int lsched__policy_place_failed(lsched_policy *p,
                                              const lsched_request *req,
                                              int rc);

/* lsched_policy_place() on a request already validated and set as
 * c->valid_req: inline, so that lsched_place_gang, which checked both,
 * pays neither twice (nor a call) per placement. */
static inline int lsched__policy_place_valid(lsched_policy *p,
                                             const lsched_request *req,
                                             lsched_placement *out) {
  lsched_cluster *c = p->c;
  if (__builtin_expect(p->broken, 0))
    return lsched__policy_place_failed(p, req, LSCHED_ESTATE);
  int rc = p->ops->place(p->state, c, req, out);
  if (__builtin_expect(rc != LSCHED_OK, 0))
    return lsched__policy_place_failed(p, req, rc);
  out->version = LSCHED_PLACEMENT_VERSION; /* whatever the policy wrote */
  c->errmsg[0] = '\0';
  return LSCHED_OK;
}

/* Trial changes: every alloc and release between begin and end reaches
 * the observers with trial = 1. Nests. */
static inline void lsched__trial_begin(lsched_cluster *c) { c->trial_depth++; }
static inline void lsched__trial_end(lsched_cluster *c) { c->trial_depth--; }

/* Tells the attached policies (hook or refresh, policy.c) and then the
 * observers that node `node` changed (lsched_node_change). Returns the
 * first error of a policy that could not follow (that instance is then
 * marked broken); the others are still told. */
LSCHED_HIDDEN int lsched__node_changed_notify(lsched_cluster *c, int node,
                                              int change);

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

/* The GPU rule of a plain fit test (not MIG; node up, admitted):
 * lsched_node_gpus_fit (policy_sdk.h) on nd's shares. One rule for
 * cluster.c's fit test, the score index's test of plain shapes
 * (scoreidx.c leaf_fits) and schedsim's release log (sim/engine/rlog.h). */
static inline int lsched__gpus_fit(const lsched_cluster *c,
                                   const struct lsched_node *nd, int k,
                                   int d) {
  return lsched_node_gpus_fit(nd, c->gpu_free + nd->gpu_off, k, d);
}

/* lsched_request_validate(), inline: in lsched_fits (a call per node a
 * skip pass asks) and in every entry that validates a request
 * (lsched__req_valid: lsched_place_gang's check, once per placement, cost a
 * call and a third more instructions out of line). */
static inline int lsched__request_validate(const lsched_request *req) {
  /* The common case first (it runs several times per placement), with
   * the tests folded (version 1..V as one unsigned compare, the signs of
   * the three amounts as the sign of their OR): no MIG fields set. */
  if (!req || req->version - 1u >= (unsigned)LSCHED_REQUEST_VERSION)
    return LSCHED_EINVAL;
  int64_t cpu = req->cpu_milli, mem = req->memory_mib;
  LSCHED__IN_REG(cpu);
  LSCHED__IN_REG(mem);
  if ((cpu | mem | (int64_t)req->gpu_count) < 0 ||
      (req->version >= 5 &&
       (unsigned)req->speed_scope > (unsigned)LSCHED_SPEED_CONSTANT))
    return LSCHED_EINVAL;
  if (req->version >= 2 &&
      ((int64_t)(req->mig_kind | req->mig_compute_milli) |
       req->mig_memory_mib) != 0) {
    if (req->mig_kind < LSCHED_MIG_NONE || req->mig_kind > LSCHED_MIG_7G ||
        req->mig_compute_milli < 0 ||
        req->mig_compute_milli > LSCHED_GPU_MILLI || req->mig_memory_mib < 0)
      return LSCHED_EINVAL;
    if (req->mig_kind == LSCHED_MIG_NONE)
      return LSCHED_EINVAL; /* MIG amounts without a kind */
    return req->gpu_count >= 1 && req->gpu_milli >= 0 &&
                   req->gpu_milli <= LSCHED_GPU_MILLI
               ? LSCHED_OK
               : LSCHED_EINVAL;
  }
  if (req->gpu_count == 0)
    return req->gpu_milli == 0 ? LSCHED_OK : LSCHED_EINVAL;
  return (unsigned)req->gpu_milli - 1u < (unsigned)LSCHED_GPU_MILLI
             ? LSCHED_OK
             : LSCHED_EINVAL;
}

/* lsched_request_validate(req) == LSCHED_OK, without the work when req is
 * the request being placed (c->valid_req). */
static inline int lsched__req_valid(const lsched_cluster *c,
                                    const lsched_request *req) {
  return (req && req == c->valid_req) ||
         lsched__request_validate(req) == LSCHED_OK;
}

/* lsched_can_ever_fit() for a request known valid. cluster.c. */
LSCHED_HIDDEN int lsched__can_ever_fit(const lsched_cluster *c,
                                       const lsched_request *req);

/* Exact fit test on a node; the fast paths avoid touching the GPU pool. */
LSCHED_HIDDEN int lsched__node_fits(const lsched_cluster *c,
                                    const struct lsched_node *nd,
                                    const lsched_request *req);

/* The request's version-3 node restrictions (features, allowed set,
 * filter) accept node nd. */
LSCHED_HIDDEN int lsched__node_allowed(const lsched_cluster *c,
                                       const struct lsched_node *nd,
                                       const lsched_request *req);

/* The fragmentation building blocks (frag.c) shared by the meter and FGD
 * are public: lsched_frag_types, lsched_frag_cache and lsched_frag_eval()
 * in <libsched/policy_sdk.h>. */

#endif
