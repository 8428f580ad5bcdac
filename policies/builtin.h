/*
 * What the built-in policies share among themselves: their ops tables (for
 * lsched_registry_add_builtins() in builtins.c, and for the MIG policies'
 * best-fit fallback) and that fallback's bookkeeping. Like every file in
 * this folder it uses the public headers only (tests/cli_policy_headers.sh
 * checks): a built-in policy is written as an outside policy would be.
 */
#ifndef LIBSCHED_POLICIES_BUILTIN_H
#define LIBSCHED_POLICIES_BUILTIN_H

#include <libsched/libsched.h>
#include <libsched/policy_sdk.h>

/* The tables are internal to the library (not exported from libsched.so):
 * outside code reaches them through lsched_registry_add_builtins(). */
#if defined(__GNUC__) && !defined(_WIN32)
#define LSCHED_BUILTIN __attribute__((visibility("hidden")))
#else
#define LSCHED_BUILTIN
#endif

extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_first_fit;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_best_fit;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_worst_fit;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_defrag;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_random;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_dot_product;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_gpu_clustering;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_gpu_packing;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_fgd;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_mig_first_fit;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_mig_best_fit;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_mig_aware;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_fastest_fit;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_cheapest_work;
extern LSCHED_BUILTIN const lsched_policy_ops lsched_builtin_compose_aware;

/* What mig-best-fit and mig-aware keep besides their own state: the
 * cluster's allocator and view, node-count scratch ints, a best-fit
 * instance that places every request that is not a MIG one, and the score
 * index of their MIG requests (mig_common.c): `score` ranks nodes for a
 * one-GPU MIG request, lsched_builtin_mig_multi_score for more GPUs.
 * init: LSCHED_OK or LSCHED_ENOMEM (then nothing is held); fini frees what
 * init made. param: "index" (on/off) for both indexes. */
struct lsched_builtin_mig_fb {
  lsched_allocator a;
  lsched_view v;
  int *scratch;
  void *fallback;
  const lsched_cluster *c;
  lsched_score_index *ix; /* MIG requests; NULL without MIG GPUs */
  int use_index;
};
LSCHED_BUILTIN int lsched_builtin_mig_fb_init(struct lsched_builtin_mig_fb *f,
                                              const lsched_cluster *c,
                                              lsched_score_fn score,
                                              void *ctx);
LSCHED_BUILTIN void lsched_builtin_mig_fb_fini(struct lsched_builtin_mig_fb *f);
LSCHED_BUILTIN int lsched_builtin_mig_fb_param(struct lsched_builtin_mig_fb *f,
                                               const char *key,
                                               const char *value);
/* The index's node for MIG request req in *node: LSCHED_OK, LSCHED_ENOFIT,
 * or LSCHED_ENOENT when the index is off or absent (the caller scans). */
LSCHED_BUILTIN int lsched_builtin_mig_fb_best(struct lsched_builtin_mig_fb *f,
                                              const lsched_request *req,
                                              int *node);
/* A MIG request of more than one GPU on a node that fits it, ranked as
 * lsched_mig_place_multi(TIGHTEST) ranks: -(1024 x kind excess + free
 * slices of the chosen GPUs). */
LSCHED_BUILTIN int64_t lsched_builtin_mig_multi_score(const lsched_cluster *c,
                                                      const lsched_view *v,
                                                      int node,
                                                      const lsched_request *req);
/* Multi-GPU MIG requests as lsched_mig_place_multi(TIGHTEST) places them,
 * the node from the index when it is on. */
LSCHED_BUILTIN int lsched_builtin_mig_multi(struct lsched_builtin_mig_fb *f,
                                            const lsched_request *req,
                                            lsched_placement *out);

/* fastest-fit and cheapest-work (fastest_fit.c): their shared state
 * (the cluster's allocator, node-count scratch ints), its init (LSCHED_OK
 * or LSCHED_ENOMEM) and fini, and the walk over the fitting nodes that
 * ranks placements by speed (by_cost 0) or by price of the work (1). */
struct lsched_builtin_typed {
  lsched_allocator a;
  int *scratch;
  lsched_score_index *ix; /* best-fit score (fastest_fit.c "Index") */
  int use_index;          /* parameter index=on|off */
};
LSCHED_BUILTIN int lsched_builtin_typed_set_param(void *state, const char *key,
                                                  const char *value);
LSCHED_BUILTIN int lsched_builtin_typed_init(void *state,
                                             const lsched_cluster *c);
LSCHED_BUILTIN void lsched_builtin_typed_fini(void *state);
LSCHED_BUILTIN int lsched_builtin_typed_place(void *state,
                                              const lsched_cluster *c,
                                              const lsched_request *req,
                                              int by_cost,
                                              lsched_placement *out);

/* The "index" parameter of the scoring built-ins: "on" (default, *use_index
 * = 1) places through their lsched_score_index, "off" (0) by the scan it
 * replaces, the reference the tests compare it with. LSCHED_OK,
 * LSCHED_EINVAL (another value), LSCHED_ENOENT (another key). */
LSCHED_BUILTIN int lsched_builtin_index_param(int *use_index, const char *key,
                                              const char *value);

/* The scratch of a scoring built-in after a node change: grows *scratch
 * (*cap ints) to per_node x the node count of c (at least 1) ints, content
 * undefined. LSCHED_OK or LSCHED_ENOMEM (*scratch kept). Their
 * on_node_change hooks use it: the score index follows node changes
 * itself, so a scan's scratch is all they size by the node count. */
LSCHED_BUILTIN int lsched_builtin_scratch_fit(const lsched_allocator *a,
                                              const lsched_cluster *c,
                                              size_t per_node, int **scratch,
                                              size_t *cap);

#endif
