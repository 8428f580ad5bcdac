/*
 * libsched: GPU-cluster placement policies with exact resource accounting.
 *
 * This header is the specification of the library's public interface.
 *
 * Thread safety: the library keeps no global mutable state. Distinct
 * handles (clusters, registries, policies) may be used from distinct threads
 * concurrently. A single cluster and the policies attached to it must not be
 * used from two threads at once without external locking, not even through
 * calls that take it `const` (they may write caches kept in the cluster:
 * the error message, lsched_next_fit's first-fit memo).
 *
 * Errors: every fallible call returns an int; LSCHED_OK (0) on success and a
 * negative LSCHED_E* code otherwise. lsched_strerror() turns a code into text
 * and never returns NULL. Calls on a cluster also leave a detail message that
 * lsched_cluster_errmsg() returns until the next failing call on that cluster.
 * lsched_policy_place() and the node-change calls (add, remove, update,
 * set_node_state) set it on failure and clear it ("") on success.
 *
 * Units: CPU in milli-cores, memory in MiB, GPU share in milli-GPU
 * (1000 = one whole GPU). All accounting is exact integer arithmetic.
 *
 * Ownership: objects created by lsched_*_create() are released by the
 * matching lsched_*_destroy(); destroy(NULL) is a no-op. Strings passed in are
 * copied unless stated otherwise.
 */
#ifndef LIBSCHED_LIBSCHED_H
#define LIBSCHED_LIBSCHED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(LSCHED_STATIC_DEFINE)
#define LSCHED_API
#elif defined(_WIN32)
#ifdef LSCHED_BUILDING
#define LSCHED_API __declspec(dllexport)
#else
#define LSCHED_API __declspec(dllimport)
#endif
#else
#define LSCHED_API __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------------- */
/* Version                                                                 */

#define LSCHED_VERSION_MAJOR 0
#define LSCHED_VERSION_MINOR 3
#define LSCHED_VERSION_PATCH 0
#define LSCHED_VERSION_STRING "0.3.0"
/** Numeric version, major * 10000 + minor * 100 + patch. */
#define LSCHED_VERSION_NUMBER                                                  \
  (LSCHED_VERSION_MAJOR * 10000 + LSCHED_VERSION_MINOR * 100 +                 \
   LSCHED_VERSION_PATCH)

/** The version of the library actually linked, as LSCHED_VERSION_NUMBER. */
LSCHED_API unsigned lsched_version_number(void);
/** The version of the library actually linked, as "major.minor.patch". */
LSCHED_API const char *lsched_version_string(void);
/**
 * Can the linked library serve a program built against the header of
 * version `header_version` (pass LSCHED_VERSION_NUMBER)? LSCHED_OK when
 * the majors are equal and: for major 0, the minors are equal (a 0.x
 * minor release may change the ABI and gets a new SONAME); from 1.0, the
 * library's minor is at least the header's (minors only add). The patch
 * level never matters. LSCHED_EVERSION otherwise. See libsched/README.md,
 * "ABI and compatibility".
 */
LSCHED_API int lsched_version_check(unsigned header_version);

/*
 * ABI conventions (libsched/README.md, "ABI and compatibility").
 * Every struct that crosses the boundary starts with `unsigned version`
 * and has LSCHED_<NAME>_VERSION and an LSCHED_<NAME>_INIT initialiser;
 * members are only appended, each addition bumping the version.
 * - Structs the caller fills for the library (node spec, request, cluster
 *   options, policy ops, observer, defrag budget, view request) are read up
 *   to their version; an unknown version is LSCHED_EVERSION.
 * - Structs the library fills (node info, totals, frag figures, MIG GPU
 *   state and totals) are filled up to the version the caller set (its
 *   _INIT macro; a version outside 1..current counts as 1), and their
 *   version then says what was filled. The SDK's working structs
 *   (lsched_frag_types, lsched_frag_cache) are made whole by their build
 *   and init calls, which set their version.
 * - Placements, task types, running jobs and moves go both ways: every
 *   call that produces one sets its version to the current one; one built
 *   by hand starts from its _INIT macro (a version outside 1..current is
 *   read as 1).
 * The few fixed-layout element types (lsched_allocator,
 * lsched_mig_instance, lsched_mig_gpu_view, lsched_frag_type) never change
 * their layout; a change would come as a new type.
 */

/* ---------------------------------------------------------------------- */
/* Errors                                                                  */

/* X-macro table: name, value, message. Values are fixed forever. */
#define LSCHED_ERRNO_MAP(X)                                                    \
  X(NOMEM, -1, "out of memory")                                                \
  X(INVAL, -2, "invalid argument")                                             \
  X(NOFIT, -3, "no feasible placement in the current state")                   \
  X(NOENT, -4, "no such object")                                               \
  X(EXIST, -5, "object already exists")                                        \
  X(RANGE, -6, "value out of range or resource over-committed")                \
  X(STATE, -7, "inconsistent state (invariant violated)")                      \
  X(NEVER, -8, "request can never fit any node of this cluster")               \
  X(VERSION, -9, "unsupported structure or table version")                     \
  X(LIMIT, -10, "a fixed library limit was exceeded")                         \
  X(NOTSUP, -11, "not supported for this node or request")

enum {
  LSCHED_OK = 0,
#define LSCHED_ERR_ENUM_(name, val, msg) LSCHED_E##name = (val),
  LSCHED_ERRNO_MAP(LSCHED_ERR_ENUM_)
#undef LSCHED_ERR_ENUM_
};

/** Human-readable message for an error code; never NULL. */
LSCHED_API const char *lsched_strerror(int code);
/** Symbolic name ("LSCHED_ENOFIT") for an error code; never NULL. */
LSCHED_API const char *lsched_err_name(int code);

/* ---------------------------------------------------------------------- */
/* Limits                                                                  */

/** GPUs one node may hold (the GPU set of a placement is a 64-bit mask). */
#define LSCHED_MAX_GPUS_PER_NODE 64
/** Distinct GPU models one cluster may hold (model sets are 64-bit masks). */
#define LSCHED_MAX_MODELS 64
/** Largest CPU (milli-cores) and memory (MiB) of one node: 2^40. */
#define LSCHED_MAX_CPU_MILLI (INT64_C(1) << 40)
#define LSCHED_MAX_MEMORY_MIB (INT64_C(1) << 40)
/** A whole GPU in milli-GPU. */
#define LSCHED_GPU_MILLI 1000

/* ---------------------------------------------------------------------- */
/* Allocator                                                               */

/**
 * Per-instance allocator. Any member left NULL makes the whole struct count
 * as absent (libc malloc/realloc/free are used). realloc(NULL, n) must act as
 * alloc(n). `user` is passed back unchanged. Fixed layout (no version): it
 * never changes; another allocator interface would be a new type.
 */
typedef struct lsched_allocator {
  void *(*alloc)(size_t size, void *user);
  void *(*realloc)(void *ptr, size_t size, void *user);
  void (*free)(void *ptr, void *user);
  void *user;
} lsched_allocator;
#define LSCHED_ALLOCATOR_INIT {NULL, NULL, NULL, NULL}

/* ---------------------------------------------------------------------- */
/* Cluster                                                                 */

/** How the GPUs of a node are handed out. */
typedef enum lsched_gpu_mode {
  /** Whole GPUs only: a fractional request takes a whole GPU. */
  LSCHED_GPU_EXCLUSIVE = 0,
  /** Fractional shares in milli-GPU; several requests may share one GPU. */
  LSCHED_GPU_SHARED = 1,
  /** NVIDIA MIG on every GPU (static or dynamic instances; see
   * <libsched/mig.h>). Only MIG requests fit its GPUs. */
  LSCHED_GPU_MIG = 2
} lsched_gpu_mode;

typedef struct lsched_cluster lsched_cluster;

#define LSCHED_CLUSTER_OPTS_VERSION 1
/**
 * Options for lsched_cluster_create(). Append-only; zero means default.
 * - allocator: NULL for libc.
 * - check_invariants: non-zero checks the invariants after every successful
 *   alloc and release: the node it touched and that node's index path every
 *   time (only they can change; O(GPUs + log nodes)), and the whole cluster
 *   (lsched_cluster_check) every 1024th operation; after a node is
 *   added or changes state, that node and its path; after an update or a
 *   removal, the whole cluster. For tests and debug.
 */
typedef struct lsched_cluster_opts {
  unsigned version;
  const lsched_allocator *allocator;
  int check_invariants;
} lsched_cluster_opts;
#define LSCHED_CLUSTER_OPTS_INIT {LSCHED_CLUSTER_OPTS_VERSION, NULL, 0}
/** Fills *opts with defaults for the given struct version. */
LSCHED_API int lsched_cluster_opts_init(lsched_cluster_opts *opts,
                                        unsigned version);

/**
 * Creates an empty cluster. opts may be NULL for defaults.
 * Returns LSCHED_OK, LSCHED_ENOMEM, LSCHED_EVERSION or LSCHED_EINVAL.
 */
LSCHED_API int lsched_cluster_create(lsched_cluster **out,
                                     const lsched_cluster_opts *opts);
/** Frees the cluster. Policies created on it must be destroyed first. */
LSCHED_API void lsched_cluster_destroy(lsched_cluster *c);
/** Detail message of the last failing call on c; "" if none. Never NULL. */
LSCHED_API const char *lsched_cluster_errmsg(const lsched_cluster *c);

/**
 * Finds the id of GPU model `name`, adding it if `create` is non-zero.
 * Ids are 0..LSCHED_MAX_MODELS-1 in order of first addition.
 * Returns the id (>= 0), LSCHED_ENOENT, LSCHED_ELIMIT or LSCHED_ENOMEM.
 */
LSCHED_API int lsched_cluster_model_id(lsched_cluster *c, const char *name,
                                       int create);
/** Looks up a model id without adding; id >= 0 or LSCHED_ENOENT. */
LSCHED_API int lsched_cluster_find_model(const lsched_cluster *c,
                                         const char *name);
/** Name of model id, or NULL if id is not a model of c. */
LSCHED_API const char *lsched_cluster_model_name(const lsched_cluster *c,
                                                 int id);
/** Number of models added so far. */
LSCHED_API int lsched_cluster_model_count(const lsched_cluster *c);

/**
 * The price of one GPU-hour of model id `model` (USD, or any one currency),
 * for policies that weigh cost (cheapest-work). A NaN, negative or
 * infinite price makes it unknown again; every model starts unknown.
 * LSCHED_OK, or LSCHED_EINVAL for a bad id. O(1).
 */
LSCHED_API int lsched_cluster_set_model_price(lsched_cluster *c, int model,
                                              double usd_per_gpu_hour);
/** The price set for model id `model`, or NaN when unknown or a bad id. */
LSCHED_API double lsched_cluster_model_price(const lsched_cluster *c,
                                             int model);

#define LSCHED_NODE_SPEC_VERSION 3
struct lsched_mig_instance; /* <libsched/mig.h> */
/**
 * A node to add. gpu_model is a model id (ignored when gpu_count is 0).
 * cpu_milli and memory_mib must be >= 0; gpu_count 0..LSCHED_MAX_GPUS_PER_NODE.
 * Version 2 (MIG): with gpu_mode LSCHED_GPU_MIG, mig_dynamic chooses
 * dynamic (non-zero) or static instances, and every GPU starts with the
 * idle instances mig_layout[0..mig_layout_count) (copied; they must pass
 * lsched_mig_layout_check() and be offered by the model, see
 * lsched_mig_set_model_memory(); may be empty on a dynamic node, while a
 * static node with GPUs needs at least one instance: LSCHED_EINVAL
 * otherwise, as no MIG request could ever be served there). The MIG fields are ignored
 * in the other modes; a version-1 spec cannot ask for LSCHED_GPU_MIG.
 * Version 3: features, a bit set of node features (bit meanings are the
 * caller's, e.g. Slurm node features); a request's `features` must all be
 * present on a node it goes to.
 */
typedef struct lsched_node_spec {
  unsigned version;
  const char *name; /* copied; may be NULL */
  int64_t cpu_milli;
  int64_t memory_mib;
  int gpu_count;
  int gpu_model;
  lsched_gpu_mode gpu_mode;
  /* version 2 */
  int mig_dynamic;
  const struct lsched_mig_instance *mig_layout;
  int mig_layout_count;
  /* version 3 */
  uint64_t features;
} lsched_node_spec;
#define LSCHED_NODE_SPEC_INIT                                                  \
  {LSCHED_NODE_SPEC_VERSION, NULL, 0, 0, 0, -1, LSCHED_GPU_SHARED, 0, NULL, 0, 0}

/**
 * Adds a node; its id (0, 1, ...) goes to *out_id (may be NULL). Node ids
 * are never reused: a removed node keeps its id (see below).
 * Nodes may be added at any time, also while jobs run and policies are
 * attached; attached policies and observers are told (lsched_node_change).
 * Names should be unique among the nodes present (lsched_cluster_find_node()
 * returns the lowest id of a name; adding does not search, to stay O(1)).
 * Sets the cluster's message on failure, clears it on success.
 */
LSCHED_API int lsched_cluster_add_node(lsched_cluster *c,
                                       const lsched_node_spec *spec,
                                       int *out_id);

/**
 * Node states. UP takes new placements; CORDONED and DRAINING take none
 * (lsched_fits() is 0, no policy chooses them) while what runs there keeps
 * running and is released as usual. DRAINING says the node is meant to
 * leave: it is "drained" once nothing is allocated on it
 * (lsched_cluster_node_idle()). REMOVED is the state of a removed id; it
 * cannot be set. A cordoned or draining node still counts for
 * lsched_can_ever_fit() (it may come back); a removed one does not.
 */
typedef enum lsched_node_state {
  LSCHED_NODE_UP = 0,
  LSCHED_NODE_CORDONED = 1,
  LSCHED_NODE_DRAINING = 2,
  LSCHED_NODE_REMOVED = 3
} lsched_node_state;

/** What happened to a node, as told to policies and observers. */
typedef enum lsched_node_change {
  LSCHED_NODE_ADDED = 1,
  LSCHED_NODE_UPDATED = 2,  /* capacity, features or GPUs changed */
  LSCHED_NODE_STATE = 3,    /* lsched_cluster_set_node_state() */
  LSCHED_NODE_DELETED = 4   /* lsched_cluster_remove_node() */
} lsched_node_change;

/**
 * Removes node `node`. It must be idle (nothing allocated on it;
 * LSCHED_ESTATE otherwise: drain it first). Its id stays taken and
 * reports LSCHED_NODE_REMOVED; lsched_cluster_node_info() then gives
 * LSCHED_ENOENT, and its name is free for a new node. Policies and
 * observers are told. LSCHED_OK, LSCHED_EINVAL, LSCHED_ENOENT (bad or
 * removed id), LSCHED_ESTATE, LSCHED_ENOMEM. O(nodes + GPUs).
 */
LSCHED_API int lsched_cluster_remove_node(lsched_cluster *c, int node);

/**
 * Replaces node `node`'s spec (name, capacity, GPUs, features) in place;
 * its id, state and visit-order position stay. While jobs run on it, only
 * its name, CPU, memory and features may change, and CPU and memory not
 * below what is allocated (LSCHED_ESTATE otherwise); an idle node may
 * change anything, as lsched_cluster_add_node() checks it (a static MIG
 * node needs a layout). Policies and observers are told. LSCHED_OK or the
 * codes of add_node, LSCHED_ENOENT for a bad or removed id. O(nodes + GPUs).
 */
LSCHED_API int lsched_cluster_update_node(lsched_cluster *c, int node,
                                          const lsched_node_spec *spec);

/** Sets node `node`'s state (UP, CORDONED or DRAINING; LSCHED_EINVAL for
 * others). Policies and observers are told when it changes. O(log nodes). */
LSCHED_API int lsched_cluster_set_node_state(lsched_cluster *c, int node,
                                             lsched_node_state state);
/** The state of node `node`, or LSCHED_ENOENT for an id never added. */
LSCHED_API int lsched_cluster_node_state(const lsched_cluster *c, int node);
/** 1 if nothing is allocated on node `node` (every free amount equals its
 * capacity), 0 if something is, LSCHED_ENOENT for a bad id. */
LSCHED_API int lsched_cluster_node_idle(const lsched_cluster *c, int node);
/** The features of node `node` (0 for a bad id). */
LSCHED_API uint64_t lsched_cluster_node_features(const lsched_cluster *c,
                                                 int node);
/**
 * The lowest id of a node present (not removed) named `name`, or
 * LSCHED_ENOENT (the message names it) / LSCHED_EINVAL. O(nodes).
 */
LSCHED_API int lsched_cluster_find_node(lsched_cluster *c, const char *name);

/** Number of node ids given out, removed ones included (ids are
 * 0..count-1). */
LSCHED_API int lsched_cluster_node_count(const lsched_cluster *c);

#define LSCHED_NODE_INFO_VERSION 1
/** A snapshot of one node's capacity and free resources (filled by the
 * library up to the version set by LSCHED_NODE_INFO_INIT). */
typedef struct lsched_node_info {
  unsigned version;
  const char *name; /* owned by the cluster; "" if none given */
  int64_t cpu_milli, memory_mib;       /* capacity */
  int64_t cpu_free, memory_free;       /* free now */
  int gpu_count, gpu_model;            /* model id, -1 without GPUs */
  lsched_gpu_mode gpu_mode;
  int gpus_fully_free;                 /* GPUs with 1000 milli free */
  int64_t gpu_milli_free;              /* sum over the node's GPUs */
} lsched_node_info;
#define LSCHED_NODE_INFO_INIT                                                  \
  {LSCHED_NODE_INFO_VERSION, NULL, 0, 0, 0, 0, 0, 0, LSCHED_GPU_EXCLUSIVE, 0, 0}

/** Fills *out for node `node`. LSCHED_ENOENT for a bad or removed id. */
LSCHED_API int lsched_cluster_node_info(const lsched_cluster *c, int node,
                                        lsched_node_info *out);
/** Free milli of GPU `gpu` of node `node`, or a negative error code. */
LSCHED_API int lsched_cluster_gpu_free(const lsched_cluster *c, int node,
                                       int gpu);
/** Free milli of every GPU of node `node` into out[0 .. min(n, GPUs)).
 * Returns the node's GPU count (possibly more than n), or LSCHED_EINVAL /
 * LSCHED_ENOENT. One call instead of one per GPU. */
LSCHED_API int lsched_cluster_gpus_free(const lsched_cluster *c, int node,
                                        int *out, int n);

#define LSCHED_TOTALS_VERSION 1
/** Cluster-wide totals (filled up to the version set by
 * LSCHED_TOTALS_INIT). */
typedef struct lsched_totals {
  unsigned version;
  int nodes, gpus;
  int64_t cpu_milli, cpu_free;
  int64_t memory_mib, memory_free;
  int64_t gpu_milli, gpu_milli_free; /* gpu_milli = 1000 x gpus */
} lsched_totals;
#define LSCHED_TOTALS_INIT {LSCHED_TOTALS_VERSION, 0, 0, 0, 0, 0, 0, 0, 0}
LSCHED_API void lsched_cluster_totals(const lsched_cluster *c,
                                      lsched_totals *out);

/**
 * The order in which policies visit nodes ("earliest node" in a tie means
 * earliest in this order). Default: node id order. `order` must be a
 * permutation of 0..n-1 (LSCHED_EINVAL otherwise); it is copied.
 */
LSCHED_API int lsched_cluster_set_order(lsched_cluster *c, const int *order,
                                        int n);
/** The current visit order (n = node count entries), owned by c. */
LSCHED_API const int *lsched_cluster_order(const lsched_cluster *c);

/**
 * Checks every invariant: 0 <= free <= capacity for CPU, memory and each
 * GPU, exclusive GPUs either whole or empty, every MIG GPU's instances
 * valid and disjoint with its slot bitmaps and free milli matching them,
 * and every cached aggregate equal to its recomputation. LSCHED_OK or
 * LSCHED_ESTATE (detail in errmsg). O(nodes + GPUs).
 */
LSCHED_API int lsched_cluster_check(const lsched_cluster *c);

/* ---------------------------------------------------------------------- */
/* Requests and placements                                                 */

struct lsched_placement;
typedef struct lsched_placement lsched_placement;
#define LSCHED_REQUEST_VERSION 5
/**
 * What one task (pod, job, or one node's part of a job) asks for.
 * - gpu_count GPUs, each with gpu_milli (1..1000) of its share; a
 *   CPU-only request has gpu_count 0 and gpu_milli 0.
 * - model_mask: bit m set = GPU model id m allowed; 0 = any model.
 * On an exclusive node every requested GPU is taken whole.
 */
typedef struct lsched_request {
  unsigned version;
  int64_t cpu_milli;
  int64_t memory_mib;
  int gpu_count;
  int gpu_milli;
  uint64_t model_mask;
  int priority;
  /* version 2: MIG (see <libsched/mig.h>). mig_kind LSCHED_MIG_NONE (0)
   * makes an ordinary request; otherwise the request only fits MIG GPUs
   * and needs on each of its gpu_count GPUs an instance of the smallest
   * kind that is at least mig_kind, has mig_compute_milli (0..1000) of the
   * compute and mig_memory_mib (>= 0) of memory on the node's model.
   * gpu_milli is then not used (0..1000 accepted). With mig_kind 0 both
   * other fields must be 0. Version-1 requests are never MIG requests. */
  int mig_kind;
  int mig_compute_milli;
  int64_t mig_memory_mib;
  /* version 3: where the request may go. features: node feature bits that
   * must all be present (0 = none). node_allowed: if not NULL, a byte per
   * node id, non-zero = allowed; ids >= node_allowed_count are not allowed.
   * node_filter: if not NULL, called with node_filter_user and a node id
   * (that passed every other test) and returns non-zero to allow it; it
   * must not change the cluster and must answer the same for the same
   * node within one call. lsched_can_ever_fit() honours all three. */
  uint64_t features;
  const unsigned char *node_allowed;
  int node_allowed_count;
  /* version 5 (in what was padding: no member moved, the size stays): what
   * the speed callback's answer depends on (lsched_speed_scope), declared
   * by the caller so that a type-aware policy may ask it once per GPU
   * model instead of once per node. LSCHED_SPEED_ANY (0) by default. */
  int speed_scope;
  int (*node_filter)(void *user, const lsched_cluster *c, int node);
  void *node_filter_user;
  /* version 4: how fast the task runs on a candidate placement, relative
   * to a reference GPU (1 = the reference; > 1 finishes sooner). NULL =
   * speed 1 everywhere. Called with speed_user by type-aware policies
   * (fastest-fit, cheapest-work) for placements that fit now; it must not
   * change the cluster and must answer the same for the same placement
   * within one call. A result that is not > 0 (0, negative, NaN) counts
   * as the slowest possible (never chosen over a positive speed). */
  double (*speed)(void *user, const lsched_cluster *c,
                  const lsched_placement *pl);
  void *speed_user;
} lsched_request;
#define LSCHED_REQUEST_INIT                                                    \
  {LSCHED_REQUEST_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, 0, 0, NULL,     \
   NULL, NULL, NULL}

/**
 * lsched_request.speed_scope (version 5): a contract on the request's
 * speed callback, for the placements a policy asks it about. The answer
 * is a function of the request and:
 * - LSCHED_SPEED_ANY: anything in the placement (node, GPUs, MIG
 *   instance) and the cluster's state. The default.
 * - LSCHED_SPEED_BY_MODEL: the GPU model of the placement's node only
 *   (lsched_node_info.gpu_model; -1 for a node without GPUs): two
 *   placements on nodes of one model get the same answer, bit for bit,
 *   whatever the node, its state, its GPU mode or the GPUs taken. (A
 *   non-MIG request's placements all take its gpu_count GPUs on one node,
 *   so a callback by model and GPU count, consolidated, qualifies.)
 * - LSCHED_SPEED_CONSTANT: nothing: the same answer on every placement.
 * A MIG request (mig_kind != 0) counts as LSCHED_SPEED_ANY whatever it
 * declares (the instance taken differs per node); without a callback the
 * speed is 1 everywhere anyway. Any other value is invalid
 * (lsched_request_validate). A false declaration is not detected: the
 * type-aware policies then place as if it held.
 */
typedef enum lsched_speed_scope {
  LSCHED_SPEED_ANY = 0,
  LSCHED_SPEED_BY_MODEL = 1,
  LSCHED_SPEED_CONSTANT = 2
} lsched_speed_scope;

/** LSCHED_OK if the request is well-formed, else LSCHED_EINVAL. */
LSCHED_API int lsched_request_validate(const lsched_request *req);

/**
 * Where a request goes and exactly what it takes there: the CPU and memory,
 * and gpu_milli on each GPU whose bit is set in gpu_mask (after exclusive
 * rounding, so 1000 on exclusive nodes). Passing the same placement to
 * lsched_release() undoes lsched_alloc() bit for bit.
 * On a MIG node (gpu_count > 0) every GPU of gpu_mask holds one instance of
 * mig_kind at memory slot mig_start, and gpu_milli is
 * lsched_mig_kind_milli(mig_kind). The two MIG fields are ignored on other
 * nodes; zero them when building a placement by hand.
 * Every call that fills a placement sets version to LSCHED_PLACEMENT_VERSION;
 * build one by hand from LSCHED_PLACEMENT_INIT.
 */
#define LSCHED_PLACEMENT_VERSION 1
struct lsched_placement {
  unsigned version;
  int node;
  int gpu_count;
  int gpu_milli;
  uint64_t gpu_mask;
  int64_t cpu_milli;
  int64_t memory_mib;
  int mig_kind;  /* MIG nodes: instance kind (lsched_mig_kind) */
  int mig_start; /* MIG nodes: its first memory slot */
};
#define LSCHED_PLACEMENT_INIT {LSCHED_PLACEMENT_VERSION, -1, 0, 0, 0, 0, 0, 0, 0}

/** Milli that `req` takes per GPU on `node` (1000 on exclusive nodes; for
 * a MIG request on a MIG node, the milli of the kind it maps to there, or
 * LSCHED_ENOENT when none; a static node may give a larger instance). */
LSCHED_API int lsched_effective_milli(const lsched_cluster *c, int node,
                                      const lsched_request *req);

/** 1 if req fits node `node` in the current state, 0 otherwise. */
LSCHED_API int lsched_fits(const lsched_cluster *c, int node,
                           const lsched_request *req);

/**
 * 1 if req would fit at least one node of c when that node is empty, 0 if no
 * node can ever hold it. O(distinct node shapes); O(nodes) for MIG requests
 * (static layouts: "empty" means every instance of the layout is free) and
 * for requests with features or a node filter. Removed nodes do not count;
 * cordoned and draining ones do.
 */
LSCHED_API int lsched_can_ever_fit(const lsched_cluster *c,
                                   const lsched_request *req);

/**
 * First position p >= from (in the visit order) whose node fits req, or -1.
 * Uses an index of per-subtree maxima: O(log n) when few nodes are
 * near-misses, O(n) at worst.
 */
LSCHED_API int lsched_next_fit(const lsched_cluster *c,
                               const lsched_request *req, int from);

/** GPU selection rules for lsched_pick_gpus(). */
typedef enum lsched_gpu_pick {
  /** Lowest-index GPUs that fit. */
  LSCHED_PICK_LOWEST = 0,
  /** GPUs with the least free share that still fits (ties: lowest index);
   * whole-GPU requests take the lowest-index fully free GPUs. */
  LSCHED_PICK_TIGHTEST = 1,
  /** GPUs with the most free share (ties: lowest index); whole-GPU
   * requests take the lowest-index fully free GPUs, as every rule does. */
  LSCHED_PICK_LOOSEST = 2
} lsched_gpu_pick;

/**
 * Builds a placement of req on node `node` choosing GPUs by `rule`. For a
 * MIG request on a MIG node it also chooses the instance: the smallest kind
 * the node can serve it with, and by rule the lowest GPUs (then the lowest
 * start), the GPUs with the fewest free slices, or the most.
 * LSCHED_OK, LSCHED_ENOFIT if it does not fit now, LSCHED_EINVAL/ENOENT.
 */
LSCHED_API int lsched_pick_gpus(const lsched_cluster *c, int node,
                                const lsched_request *req,
                                lsched_gpu_pick rule, lsched_placement *out);

/**
 * Takes the resources of placement p. Validates everything first and changes
 * nothing on failure: LSCHED_EINVAL (malformed), LSCHED_ENOENT (bad node),
 * LSCHED_ERANGE (would over-commit). Notifies attached policies.
 */
LSCHED_API int lsched_alloc(lsched_cluster *c, const lsched_placement *p);
/**
 * Gives back the resources of placement p. LSCHED_ERANGE if that would free
 * more than the capacity (a release without its alloc); nothing changes then.
 */
LSCHED_API int lsched_release(lsched_cluster *c, const lsched_placement *p);

/*
 * A hint that node `node` is about to be allocated on or released on: its
 * record, its GPUs' free shares and its leaf of the fit index are asked of
 * the memory system ahead of time. Nothing is written and nothing changes;
 * the only reads are of where those lie (the record's GPU offset, the
 * node's position). NULL c or a node out of range: no hint. For callers
 * that know their next release some work ahead (an event loop: the next
 * completion's node), on clusters larger than the cache.
 */
LSCHED_API void lsched_prefetch_node(const lsched_cluster *c, int node);

/* ---------------------------------------------------------------------- */
/* Observers                                                               */

#define LSCHED_OBSERVER_VERSION 2
/**
 * Callbacks told about every lsched_alloc() and lsched_release() on a
 * cluster, after the change and after the attached policies' hooks; for a
 * tracker that keeps figures in step with the cluster (what changed where)
 * without being a policy. Either member may be NULL.
 *
 * trial is 1 for a change that the library call making it undoes before
 * it returns: the allocations and releases a migration planner makes while
 * it tries plans (lsched_policy_plan_migrations()), and those of a gang
 * placement (lsched_place_gang()) of more than one part, whose parts are
 * trial while they are placed; when the gang is kept, each part is then
 * released (trial) and allocated again with trial 0, so an observer that
 * ignores trial changes still sees every kept allocation exactly once, and
 * one that counts every change sees a consistent sequence. trial is 0 for
 * every other change.
 *
 * A callback sees the cluster after the change; it must not change the
 * cluster, nor add or remove observers. `user` is the pointer given to
 * lsched_cluster_add_observer(). Members are only appended, with a version
 * bump; a table of an older version stays valid.
 */
typedef struct lsched_observer {
  unsigned version;
  void (*on_alloc)(void *user, const lsched_cluster *c,
                   const lsched_placement *p, int trial);
  void (*on_release)(void *user, const lsched_cluster *c,
                     const lsched_placement *p, int trial);
  /* version 2: node `node` changed (lsched_node_change), after the change
   * and after the policies were told. May be NULL. */
  void (*on_node_change)(void *user, const lsched_cluster *c, int node,
                         int change);
} lsched_observer;
/* Every member empty but the version. Fill a table with designated
 * initialisers ({.version = LSCHED_OBSERVER_VERSION, .on_alloc = f}) or
 * start from this macro and assign members (C++ before C++20): a
 * positional list that names fewer members warns under -Wextra
 * (missing-field-initializers) once a member is appended. */
#define LSCHED_OBSERVER_INIT {LSCHED_OBSERVER_VERSION, NULL, NULL, NULL}

/**
 * Registers observer `obs` with `user` on c; observers are called in the
 * order they were added. The table is copied; (obs, user) identifies the
 * registration for lsched_cluster_remove_observer(). The same pair may not
 * be added twice (LSCHED_EEXIST). LSCHED_OK, LSCHED_EINVAL (NULL c or
 * obs), LSCHED_EVERSION, LSCHED_ENOMEM. O(observers). Observers may be
 * added at any time, also while allocations are live; they are not told
 * about earlier changes.
 */
LSCHED_API int lsched_cluster_add_observer(lsched_cluster *c,
                                           const lsched_observer *obs,
                                           void *user);
/** Removes the registration (obs, user). LSCHED_OK, LSCHED_EINVAL,
 * LSCHED_ENOENT (not registered). O(observers). */
LSCHED_API int lsched_cluster_remove_observer(lsched_cluster *c,
                                              const lsched_observer *obs,
                                              void *user);

/* ---------------------------------------------------------------------- */
/* Workloads and fragmentation (FGD, Weng et al., USENIX ATC 2023)         */

/**
 * One task type of a target workload: a request shape and how often it
 * occurs. The probability of the type is weight / (sum of the weights of the
 * workload); integer weights (e.g. pod counts) keep every fragmentation
 * figure exact, so incremental sums never drift.
 * - gpu_count 0 is a CPU-only type (gpu_milli must then be 0); otherwise
 *   gpu_milli is the share of each GPU, 1..1000. A gpu_count larger than
 *   any node's (a gang job's total) is allowed: such a type runs nowhere.
 * - model_mask: allowed GPU models (bit m = model id m of the cluster the
 *   workload is used with); 0 = any. A mask naming only models absent from
 *   the cluster describes a type that can run nowhere.
 * - weight >= 1.
 * lsched_workload_at() gives types of version LSCHED_TASK_TYPE_VERSION;
 * build one with LSCHED_TASK_TYPE_INIT.
 */
#define LSCHED_TASK_TYPE_VERSION 1
typedef struct lsched_task_type {
  unsigned version;
  int64_t cpu_milli;
  int gpu_count;
  int gpu_milli;
  uint64_t model_mask;
  uint64_t weight;
} lsched_task_type;
#define LSCHED_TASK_TYPE_INIT {LSCHED_TASK_TYPE_VERSION, 0, 0, 0, 0, 1}

/** A target workload: a set of task types (opaque; see below). */
typedef struct lsched_workload lsched_workload;

/** Creates an empty workload (allocator may be NULL). LSCHED_ENOMEM. */
LSCHED_API int lsched_workload_create(lsched_workload **out,
                                      const lsched_allocator *allocator);
LSCHED_API void lsched_workload_destroy(lsched_workload *w);
/**
 * Adds t; a type of the same shape (cpu_milli, gpu_count, gpu_milli,
 * model_mask) already present gets t->weight added instead. O(1) expected.
 * LSCHED_EINVAL for a malformed type, LSCHED_ERANGE if the total weight
 * would pass 2^31, LSCHED_ENOMEM.
 */
LSCHED_API int lsched_workload_add(lsched_workload *w, const lsched_task_type *t);
/**
 * Keeps only the most popular types: sorted by weight (descending; ties by
 * cpu_milli, gpu_milli, gpu_count, model_mask, all descending), the shortest
 * prefix whose weight is at least percent% of the total (1..100). The
 * remaining types keep their weights, so probabilities are renormalised to
 * the kept set. The order of lsched_workload_at() becomes that sorted order.
 * O(T log T). LSCHED_EINVAL for percent outside 1..100.
 */
LSCHED_API int lsched_workload_keep_popular(lsched_workload *w,
                                            unsigned percent);
/** Number of task types. */
LSCHED_API size_t lsched_workload_count(const lsched_workload *w);
/** The i-th task type (owned by w, valid until w changes), or NULL. */
LSCHED_API const lsched_task_type *lsched_workload_at(const lsched_workload *w,
                                                      size_t i);
/** Sum of the weights. */
LSCHED_API uint64_t lsched_workload_weight(const lsched_workload *w);
/**
 * A copy of w on allocator (may be NULL): the same types, weights and order
 * of lsched_workload_at(). w NULL gives *out NULL and LSCHED_OK (for
 * policies that keep a copy of an optional workload). LSCHED_ENOMEM, *out
 * then NULL.
 */
LSCHED_API int lsched_workload_copy(lsched_workload **out,
                                    const lsched_workload *w,
                                    const lsched_allocator *allocator);

/**
 * Fragmentation of a node for a workload (docs/DESIGN.md section 6). For node n
 * and type m, f(n,m) is all idle GPU milli of n if m cannot run on n now
 * (CPU-only type, model not allowed, fewer than gpu_count GPUs with at least
 * gpu_milli free, or less CPU free than cpu_milli); otherwise the free milli
 * of the GPUs whose free share is below gpu_milli. Memory is not part of the
 * measure. F(n) = sum over m of p_m f(n,m), in milli-GPU.
 *
 * The cluster figures: amount = sum of F(n); rate = amount / idle GPU milli
 * (0 when nothing is idle). amount_weighted = amount x weight_total exactly
 * (an integer), for exact sums and integrals. Filled up to the version set
 * by LSCHED_FRAG_INIT.
 */
#define LSCHED_FRAG_VERSION 1
typedef struct lsched_frag {
  unsigned version;
  double amount;           /* milli-GPU */
  double rate;             /* 0..1 */
  int64_t idle_gpu_milli;  /* free GPU milli in the cluster */
  int64_t amount_weighted; /* amount x weight_total */
  uint64_t weight_total;   /* sum of the workload's weights (0: empty) */
} lsched_frag;
#define LSCHED_FRAG_INIT {LSCHED_FRAG_VERSION, 0.0, 0.0, 0, 0, 0}

/** F(n) of node `node` into *out. O(T log T + T x G). LSCHED_ENOENT. */
LSCHED_API int lsched_frag_node(const lsched_cluster *c,
                                const lsched_workload *w, int node,
                                double *out);
/** The whole cluster, computed from scratch: O(nodes x (T + G x D)) for T
 * types with D distinct GPU shares. */
LSCHED_API int lsched_frag_cluster(const lsched_cluster *c,
                                   const lsched_workload *w, lsched_frag *out);

/**
 * An incremental fragmentation meter: it keeps F(n) of every node cached and
 * recomputes only the node that an lsched_alloc()/lsched_release() changed
 * (O(T + G x D) per change), so reading the cluster figures is O(1). The
 * workload is copied. Like a policy it is attached to c: nodes cannot be
 * added while it lives, and it must be destroyed before c.
 */
typedef struct lsched_fragmeter lsched_fragmeter;
LSCHED_API int lsched_fragmeter_create(lsched_fragmeter **out,
                                       lsched_cluster *c,
                                       const lsched_workload *w);
LSCHED_API void lsched_fragmeter_destroy(lsched_fragmeter *m);
/** The current cluster figures. O(1). */
LSCHED_API void lsched_fragmeter_get(const lsched_fragmeter *m,
                                     lsched_frag *out);
/** A hint, as lsched_prefetch_node(): node `node` is about to be allocated
 * on or released on, so the meter's figures of that node (which the change
 * rewrites) are asked of the memory system. Nothing changes. NULL m or a
 * node out of range: no hint. */
LSCHED_API void lsched_fragmeter_prefetch(const lsched_fragmeter *m,
                                          int node);

#define LSCHED_NODE_FREE_VERSION 1
/** What is free on a node, for meters kept per node state (schedsim's
 * stranded GPU capacity): one call instead of lsched_cluster_node_info(),
 * lsched_cluster_node_state() and lsched_cluster_gpus_free(). */
typedef struct lsched_node_free {
  unsigned version;
  int state;                     /* lsched_node_state */
  int gpu_count, gpu_model;      /* model id, -1 without GPUs */
  lsched_gpu_mode gpu_mode;
  int64_t cpu_free, memory_free;
  int64_t gpu_milli_free;        /* sum over the node's GPUs */
} lsched_node_free;
#define LSCHED_NODE_FREE_INIT                                                  \
  {LSCHED_NODE_FREE_VERSION, 0, 0, 0, LSCHED_GPU_EXCLUSIVE, 0, 0, 0}
/** Fills *out for node `node` and the free milli of its GPUs into
 * gpu_free[0 .. min(n, GPUs)) (gpu_free may be NULL when n is 0). Returns
 * the node's GPU count, or LSCHED_EINVAL, or LSCHED_ENOENT for a bad or
 * removed id (as lsched_cluster_node_info()). O(GPUs). */
LSCHED_API int lsched_cluster_node_free(const lsched_cluster *c, int node,
                                        lsched_node_free *out, int *gpu_free,
                                        int n);

/**
 * When would valid request req fit node `node`, as lsched_fits() would
 * answer, if the placements released[0 .. n) were released in that order?
 * Returns the least m in 0 .. n such that req fits once released[0 .. m)
 * are released (0: it fits now), LSCHED_ENOFIT when it would not fit even
 * after all n, LSCHED_EINVAL (bad arguments, a malformed request, or
 * releases the node does not hold), LSCHED_ENOTSUP for a MIG node or the
 * host of a GPU pool (a release there changes more than the placement
 * gives back). Placements on other nodes are skipped; those on `node`
 * must be allocated there. c is not changed. Fit is monotone in what is
 * released, so with the running jobs' parts in order of their estimated
 * ends this is the earliest end after which req could start on the node
 * (an EASY reservation). O(GPUs of the node + n).
 */
LSCHED_API int lsched_fits_after(const lsched_cluster *c, int node,
                                 const lsched_request *req,
                                 const lsched_placement *released, int n);
/** lsched_fits_after() with placement `held` (on `node`; NULL or another
 * node: none) counted as allocated although it is not: a placement under
 * consideration, which `released` may then give back at its place in the
 * order. LSCHED_EINVAL when the node cannot hold it now. */
LSCHED_API int lsched_fits_after_held(const lsched_cluster *c, int node,
                                      const lsched_request *req,
                                      const lsched_placement *held,
                                      const lsched_placement *released,
                                      int n);

/* ---------------------------------------------------------------------- */
/* Policies                                                                */

#define LSCHED_POLICY_OPS_VERSION 7
/* Migration planning types, defined in <libsched/migrate.h>. */
struct lsched_running;
struct lsched_defrag_budget;
struct lsched_move;
struct lsched_running_index;
struct lsched_registry;
/**
 * A placement policy: a versioned table of functions. The library allocates
 * state_size bytes of zeroed state per instance and passes it to each hook.
 * - init: called once when an instance is created on cluster c (which has
 *   all its nodes). May be NULL.
 * - fini: releases what init acquired. May be NULL.
 * - set_param: key/value tuning ("seed" is used by randomised policies);
 *   LSCHED_ENOENT for an unknown key. May be NULL (no parameters).
 * - place: chooses a placement for req in c's current state without changing
 *   c. LSCHED_OK with *out filled, or LSCHED_ENOFIT. Required.
 * - on_alloc / on_release: told about every allocation and release on c
 *   (including ones this policy did not choose), for incremental indexes.
 *   May be NULL.
 * - set_workload (version 2): the target workload of fragmentation-aware
 *   policies (w may be NULL to clear it); the policy copies what it needs.
 *   May be NULL. Version-1 tables (without this member) stay valid.
 * - set_registry (version 4): the registry the instance was created from
 *   by lsched_policy_create_from(), called once right after init; a
 *   policy that looks other policies up by name (defrag's "base") keeps it
 *   (the registry outlives the instance). Not called for instances made by
 *   lsched_policy_create(). May be NULL.
 * Writing a policy: <libsched/policy_sdk.h> has what the built-in policies
 * use (node records, fit-index iteration, scoring helpers, the MIG view).
 * New members are only appended, with a version bump.
 */
typedef struct lsched_policy_ops {
  unsigned version;
  const char *name;
  const char *description;
  size_t state_size;
  int (*init)(void *state, const lsched_cluster *c);
  void (*fini)(void *state);
  int (*set_param)(void *state, const char *key, const char *value);
  int (*place)(void *state, const lsched_cluster *c, const lsched_request *req,
               lsched_placement *out);
  void (*on_alloc)(void *state, const lsched_cluster *c,
                   const lsched_placement *p);
  void (*on_release)(void *state, const lsched_cluster *c,
                     const lsched_placement *p);
  /* version 2 */
  int (*set_workload)(void *state, const lsched_cluster *c,
                      const lsched_workload *w);
  /* version 3: plans migrations that make room for a waiting request (see
   * lsched_policy_plan_migrations in <libsched/migrate.h> for the contract).
   * It may allocate and release on c while planning but must leave c
   * exactly as it found it. May be NULL (the policy does not plan). */
  int (*plan_migrations)(void *state, lsched_cluster *c,
                         const lsched_request *waiting,
                         const struct lsched_running *running, size_t nrunning,
                         const struct lsched_defrag_budget *budget,
                         struct lsched_move *out, size_t max_out,
                         size_t *nout);
  /* version 4 */
  int (*set_registry)(void *state, const struct lsched_registry *r);
  /* version 5: node `node` changed (lsched_node_change: added, updated,
   * state, deleted), after the change; views taken before it are stale
   * when the node set changed (added, updated, deleted) and must be taken
   * again. LSCHED_OK or an error (the instance then reports LSCHED_ESTATE
   * from place until destroyed). When NULL (or the table is older), the
   * library refreshes the instance instead: fini, zeroed state, init, then
   * set_registry, every successful set_param in order and the last
   * set_workload are replayed, so parameters and workload are kept while
   * what the policy learnt itself (e.g. a random policy's RNG position)
   * starts afresh. A state change alone never refreshes (no view changes). */
  int (*on_node_change)(void *state, const lsched_cluster *c, int node,
                        int change);
  /* version 6: plan_migrations over a running index (see
   * lsched_policy_plan_migrations_indexed in <libsched/migrate.h>): the
   * same contract and the same plan as plan_migrations given the index's
   * entries. May be NULL (the library then calls plan_migrations). */
  int (*plan_migrations_indexed)(void *state, lsched_cluster *c,
                                 const lsched_request *waiting,
                                 const struct lsched_running_index *ix,
                                 const struct lsched_defrag_budget *budget,
                                 struct lsched_move *out, size_t max_out,
                                 size_t *nout);
  /* version 7: LSCHED_POLICY_* promises the policy makes (0: none). */
  unsigned flags;
  /* version 7: when not NULL, the promises of this instance (they may
   * depend on its parameters, e.g. a wrapper's base policy): called by
   * lsched_policy_flags() instead of reading flags. */
  unsigned (*flags_of)(const void *state);
} lsched_policy_ops;
/**
 * flags: place() answers LSCHED_OK for a request placed as one part
 * (lsched_place_splits() is 0) exactly when some node fits it
 * (lsched_fits()), and LSCHED_ENOFIT or LSCHED_ENEVER otherwise; and a
 * place() call changes nothing a later call could observe (it draws no
 * random numbers, learns nothing). A host that only needs to know whether
 * the policy would place such a request (an EASY reservation) may then
 * answer by fit tests (lsched_fits_after()) instead of asking it.
 */
#define LSCHED_POLICY_ANY_FIT 1u
/**
 * flags: place() answers as LSCHED_POLICY_ANY_FIT promises (LSCHED_OK for
 * a one-part request exactly when some node fits it), and a call that does
 * not place changes nothing a later call could observe; a call that places
 * may change the policy's own state (it draws random numbers: random). A
 * host that asks a what-if ("would it place?", an EASY reservation) then
 * answers it by fit tests, so that the question draws nothing and a run's
 * placements do not depend on how many questions were asked; and it may
 * skip a call it knows would not place (no node fits).
 */
#define LSCHED_POLICY_ANY_FIT_DRAWS 2u
/** Every member zero/NULL but the version: fill name, place, ... after (or
 * use designated initialisers, as policies/ do). */
#define LSCHED_POLICY_OPS_INIT                                                 \
  {LSCHED_POLICY_OPS_VERSION, NULL, NULL, 0, NULL, NULL, NULL, NULL,           \
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0u, NULL}

/** A set of named policies. Per instance; no global registry exists. */
typedef struct lsched_registry lsched_registry;

/** Creates an empty registry (allocator may be NULL). */
LSCHED_API int lsched_registry_create(lsched_registry **out,
                                      const lsched_allocator *allocator);
LSCHED_API void lsched_registry_destroy(lsched_registry *r);
/**
 * Registers ops (not copied: it must outlive r). LSCHED_EEXIST for a taken
 * name, LSCHED_EVERSION for an unknown table version, LSCHED_EINVAL for a
 * table without name or place.
 */
LSCHED_API int lsched_registry_add(lsched_registry *r,
                                   const lsched_policy_ops *ops);
/** Registers every policy built into the library. */
LSCHED_API int lsched_registry_add_builtins(lsched_registry *r);
/** The policy named `name`, or NULL. */
LSCHED_API const lsched_policy_ops *lsched_registry_find(
    const lsched_registry *r, const char *name);
/** Number of registered policies, and the i-th in registration order. */
LSCHED_API size_t lsched_registry_count(const lsched_registry *r);
LSCHED_API const lsched_policy_ops *lsched_registry_at(
    const lsched_registry *r, size_t i);

/** An instance of a policy bound to one cluster. */
typedef struct lsched_policy lsched_policy;

/**
 * Creates an instance of ops on c and attaches it for on_alloc/on_release.
 * It uses c's allocator. LSCHED_ENOMEM, LSCHED_EVERSION, LSCHED_EINVAL or
 * init's own code.
 */
LSCHED_API int lsched_policy_create(lsched_policy **out, lsched_cluster *c,
                                    const lsched_policy_ops *ops);
/**
 * Creates an instance of the policy named `name` in registry r on c, as
 * lsched_policy_create() does, and hands r to the table's set_registry
 * hook (version 4) so that the policy can find other policies of r by
 * name. r must outlive the instance. LSCHED_ENOENT when r has no such
 * policy (c's message names it); else as lsched_policy_create(), or set_registry's code (the
 * instance is then destroyed).
 */
LSCHED_API int lsched_policy_create_from(lsched_policy **out,
                                         lsched_cluster *c,
                                         const lsched_registry *r,
                                         const char *name);
/** Detaches and frees the instance. */
LSCHED_API void lsched_policy_destroy(lsched_policy *p);
LSCHED_API int lsched_policy_set_param(lsched_policy *p, const char *key,
                                       const char *value);
/**
 * Asks the policy where req should go. LSCHED_OK (*out filled; nothing is
 * allocated yet), LSCHED_ENOFIT (no node can take it now), LSCHED_ENEVER
 * (no node could ever take it: lsched_can_ever_fit() is 0), LSCHED_EINVAL
 * for a malformed request, LSCHED_ESTATE if the instance could not follow
 * a node change. Sets the cluster's message on failure, clears it on
 * success.
 */
LSCHED_API int lsched_policy_place(lsched_policy *p, const lsched_request *req,
                                   lsched_placement *out);
LSCHED_API const char *lsched_policy_name(const lsched_policy *p);
/** The instance's table's flags (LSCHED_POLICY_*; 0 for a table older
 * than version 7 or NULL p). O(1). */
LSCHED_API unsigned lsched_policy_flags(const lsched_policy *p);
/**
 * Gives the policy its target workload (NULL clears it). LSCHED_ENOENT when
 * the policy takes none (a version-1 table or no set_workload hook); else
 * the hook's code (LSCHED_OK, LSCHED_ENOMEM, ...).
 */
LSCHED_API int lsched_policy_set_workload(lsched_policy *p,
                                          const lsched_workload *w);

/* ---------------------------------------------------------------------- */
/* Gang placement (jobs wider than one node)                               */

/**
 * Places and allocates a job of req->gpu_count GPUs that may be wider than
 * any node, all-or-nothing, on as few nodes as possible, through policy p.
 * The job is cut into parts: each part asks for as many GPUs as the largest
 * node holding an allowed model has (fewer for the last part), tried from
 * the widest part size down; each part's CPU and memory are the job's, split
 * in proportion to its GPUs (exact integers; the remainder goes to the first
 * part). Each part is allocated as soon as the policy places it, so later
 * parts see earlier ones; if any part cannot be placed every allocated part
 * is released and LSCHED_ENOFIT returned (the cluster is then as before).
 * On LSCHED_OK, out[0..*nout) hold the allocated parts; release each with
 * lsched_release(). A job that fits one node is placed as one part.
 * Fractional requests (gpu_milli < 1000) are never split.
 * Returns LSCHED_OK, LSCHED_ENOFIT, LSCHED_ELIMIT (more than max_out parts
 * needed), LSCHED_EINVAL, or an allocation error.
 */
LSCHED_API int lsched_place_gang(lsched_policy *p, const lsched_request *req,
                                 lsched_placement *out, int max_out,
                                 int *nout);

/**
 * Whether req could be placed now as lsched_place_gang() cuts it, with each
 * one-part request (a part, or req itself when it is not cut) on the first
 * node in the visit order that fits it (lowest-index GPUs): 1 or 0. Asks
 * no policy, so it draws and learns nothing: a what-if ("could the gang
 * start now?", an EASY reservation) for a policy that places every one-part
 * request on some node that fits it (LSCHED_POLICY_ANY_FIT,
 * LSCHED_POLICY_ANY_FIT_DRAWS). For a request that is not cut the answer
 * is exactly the policy's; for one that is, which nodes the policy's parts
 * take may decide whether the last parts fit, so it is the first-fit
 * answer. Parts go into scratch (max_parts entries; more needed: 0, as
 * lsched_place_gang's LSCHED_ELIMIT), allocated as trial changes and then
 * released, which leaves c exactly as it was (observers see trial
 * allocations and releases). LSCHED_EINVAL for a NULL argument or an
 * invalid request. O(parts x (log n + GPUs)) when few nodes are near-misses.
 */
LSCHED_API int lsched_gang_fits_first(lsched_cluster *c,
                                      const lsched_request *req,
                                      lsched_placement *scratch,
                                      int max_parts);

/**
 * 1 if lsched_place_gang() would cut valid request req into parts (whole
 * GPUs, more than the widest node of an allowed model holds), 0 if it
 * asks the policy for one placement, LSCHED_EINVAL. O(models).
 */
LSCHED_API int lsched_place_splits(const lsched_cluster *c,
                                   const lsched_request *req);

/**
 * 1 if an empty cluster could hold the gang job req (as lsched_place_gang
 * would cut it), 0 if never. O(nodes).
 */
LSCHED_API int lsched_can_ever_fit_gang(const lsched_cluster *c,
                                        const lsched_request *req);

/* ---------------------------------------------------------------------- */
/* Composable GPU pools (0.3)                                              */

/**
 * A composable GPU pool: a chassis of `gpus` GPUs that any of `nhosts`
 * host nodes can attach over a PCIe/CXL fabric, at most `max_per_host` at
 * a time on one host. A composed GPU belongs to one host at a time.
 *
 * Model. Each host node is added with its local GPUs plus S = min(gpus,
 * max_per_host) composable slots: its GPU indices gpu_count - S ..
 * gpu_count - 1 are the pool's slots on that host (same model and mode as
 * the node; not MIG). A slot is attached (it holds a pool GPU for this
 * host: its free milli is that GPU's), open (not attached, but the pool
 * could attach one now: free milli 1000) or blocked (free milli 0, as if
 * allocated). Host h shows open = min(pool free, S - attached(h)) slots,
 * always its lowest-indexed non-attached ones, so every fit test, score
 * and policy sees exactly local free + attached idle + min(pool free, cap
 * left) without knowing about pools. An allocation that takes an open slot
 * composes it (attaches it to the host; the pool's free count drops and
 * the other hosts' open slots beyond it become blocked: they are told as
 * LSCHED_NODE_UPDATED). A release gives the share back; a composed GPU
 * that becomes fully free is detached at once (back to the pool: alloc
 * then release restores the state bit for bit) unless keep_attached is
 * set, when it stays attached idle until lsched_pool_detach() (inside a
 * trial, a gang placement or a migration planner, it is always detached).
 * Hosts must be idle, UP, not MIG, in no other pool; a host cannot be
 * updated or removed afterwards (LSCHED_ESTATE).
 */
#define LSCHED_POOL_SPEC_VERSION 1
typedef struct lsched_pool_spec {
  unsigned version;
  int gpus;          /* GPUs in the chassis, 1..1000000 */
  int max_per_host;  /* most pool GPUs one host holds at once, >= 1 */
  const int *hosts;  /* node ids of the hosts that reach it */
  int nhosts;        /* >= 1 */
  int keep_attached; /* 1: released GPUs stay attached (see above) */
} lsched_pool_spec;
#define LSCHED_POOL_SPEC_INIT {LSCHED_POOL_SPEC_VERSION, 0, 0, NULL, 0, 0}

/** Adds a pool; *pool_out (may be NULL) gets its id (0, 1, ...).
 * LSCHED_OK, LSCHED_EINVAL (bad spec, detail in errmsg), LSCHED_ENOENT
 * (no such host), LSCHED_ESTATE (host busy, MIG, in a pool, or with fewer
 * GPUs than its slots), LSCHED_EVERSION, LSCHED_ENOMEM. */
LSCHED_API int lsched_cluster_add_pool(lsched_cluster *c,
                                       const lsched_pool_spec *spec,
                                       int *pool_out);
/** Number of pools. */
LSCHED_API int lsched_cluster_pool_count(const lsched_cluster *c);

#define LSCHED_POOL_INFO_VERSION 1
/** A pool's state (filled up to the caller's version). */
typedef struct lsched_pool_info {
  unsigned version;
  int gpus;      /* GPUs in the chassis */
  int free;      /* GPUs attached to no host */
  int slots;     /* composable slots per host: min(gpus, max_per_host) */
  int nhosts;
  int attached;  /* GPUs attached to some host (gpus - free) */
} lsched_pool_info;
#define LSCHED_POOL_INFO_INIT {LSCHED_POOL_INFO_VERSION, 0, 0, 0, 0, 0}
LSCHED_API int lsched_cluster_pool_info(const lsched_cluster *c, int pool,
                                        lsched_pool_info *out);

/**
 * Node `node`'s place in the pools: returns its pool id, or -1 when it
 * is no pool's host (or a bad id). *slots (may be NULL) gets the GPU mask
 * of its composable slots, *attached (may be NULL) of those attached to
 * it now. A placement composes `gpu_mask & slots & ~attached` (computed
 * before lsched_alloc) and runs over the fabric when gpu_mask & slots.
 */
LSCHED_API int lsched_pool_of_node(const lsched_cluster *c, int node,
                                   uint64_t *slots, uint64_t *attached);

/**
 * Detaches the GPUs of `mask` attached to host `node` that are fully free
 * (the others in mask are left alone): they go back to the pool. Returns
 * how many it detached (>= 0), LSCHED_EINVAL or LSCHED_ENOENT (not a
 * host). Policies and observers are told of every host whose state moved.
 */
LSCHED_API int lsched_pool_detach(lsched_cluster *c, int node, uint64_t mask);

#ifdef __cplusplus
}
#endif

/* The MIG model: kinds, layouts, per-model profiles, GPU state. */
#include <libsched/mig.h>

#endif /* LIBSCHED_LIBSCHED_H */
