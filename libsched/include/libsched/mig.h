/*
 * libsched: the MIG model (NVIDIA Multi-Instance GPU on A100, H100, H200).
 *
 * Included by <libsched/libsched.h>; it may also be included on its own.
 *
 * The model (docs/DESIGN.md section 4, NVIDIA's placement table, identical on
 * A100, H100 and H200): a GPU has 8 memory slots 0..7 and 7 compute slices;
 * compute slice i goes with memory slot i (slot 7 has none). A GPU instance
 * of a kind takes the memory slots [start, start + size) and must not
 * overlap another instance:
 *
 *   kind              compute slices  memory slots  valid starts   max
 *   LSCHED_MIG_1G           1              1        0,1,2,3,4,5,6   7
 *   LSCHED_MIG_1G_2X        1              2        0,2,4,6         4
 *   LSCHED_MIG_2G           2              2        0,2,4           3
 *   LSCHED_MIG_3G           3              4        0,4             2
 *   LSCHED_MIG_4G           4              4        0               1
 *   LSCHED_MIG_7G           7              8        0               1
 *
 * (1G_2X is the "1g with twice the memory" profile, 1g.10gb on A100-40GB
 * and 1g.20gb on 80 GB parts; media-extension "+me" profiles are left out.)
 * In this order every kind dominates the ones before it (at least as many
 * compute slices and memory slots), so "the smallest kind that satisfies a
 * request" is well defined and every larger kind satisfies it too. Where a
 * kind can be placed, every smaller kind can be placed as well.
 *
 * GPU mode LSCHED_GPU_MIG. A node in this mode has MIG on every GPU, either
 * - static: the instances are fixed (the node spec's layout on every GPU,
 *   or lsched_mig_set_layout()); a request takes one free instance; or
 * - dynamic: the scheduler creates instances in free slots. lsched_alloc()
 *   of a MIG placement uses an idle instance of that kind at that start if
 *   one exists, and otherwise creates it, destroying idle instances that
 *   overlap its slots (instances in use are never touched). lsched_release()
 *   leaves the instance in place, idle, so that the next request of its kind
 *   reuses it without reconfiguring the GPU.
 *
 * Requests. A request is a MIG request when its mig_kind is not
 * LSCHED_MIG_NONE (request version 2). A MIG request only fits MIG GPUs, and
 * a request without mig_kind never lands on a MIG GPU (CPU-only requests fit
 * any node). On a node of GPU model m, a MIG request needs the smallest kind
 * K that (1) is at least mig_kind, (2) has at least mig_compute_milli of the
 * GPU's compute (1000 x slices >= 7 x mig_compute_milli), (3) has at least
 * mig_memory_mib of memory on model m (lsched_mig_set_model_memory()), and
 * (4) is offered on model m. Static nodes serve it with a free instance of
 * kind K or larger (policies take the smallest kind available); dynamic
 * nodes create exactly K. Each of the request's gpu_count GPUs gets one
 * instance of the same kind at the same start slot (a multi-GPU MIG job is
 * usually k x 7g: instances of different GPUs cannot be joined anyway).
 *
 * Accounting: a MIG instance of kind K takes lsched_mig_kind_milli(K) =
 * floor(1000 x slices / 7) of its GPU's milli (1g 142, 2g 285, 3g 428,
 * 4g 571, 7g 1000), so totals and allocation ratios stay comparable with
 * the other modes; the placement's gpu_milli must be that value.
 * lsched_alloc() followed by lsched_release() restores every free CPU,
 * memory and milli figure and the set of instances in use bit for bit; on a
 * static GPU the whole state is restored. On a dynamic GPU the partition
 * (which idle instances exist) is not part of the allocation state: the
 * instance created by the alloc stays, idle, and idle instances it replaced
 * stay destroyed. lsched_cluster_check() verifies every GPU's slot bitmaps
 * against its instance list.
 */
#ifndef LIBSCHED_MIG_H
#define LIBSCHED_MIG_H

#include <libsched/libsched.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Memory slots and compute slices of a MIG GPU. */
#define LSCHED_MIG_SLOTS 8
#define LSCHED_MIG_SLICES 7
/** Number of instance kinds (LSCHED_MIG_1G .. LSCHED_MIG_7G). */
#define LSCHED_MIG_KINDS 6
/** Most instances one GPU can hold (7 x 1g). */
#define LSCHED_MIG_MAX_INSTANCES 7

/** GPU instance kinds, smallest first (see the table above). */
typedef enum lsched_mig_kind {
  LSCHED_MIG_NONE = 0, /* not a MIG request */
  LSCHED_MIG_1G = 1,
  LSCHED_MIG_1G_2X = 2, /* 1 compute slice, 2 memory slots */
  LSCHED_MIG_2G = 3,
  LSCHED_MIG_3G = 4,
  LSCHED_MIG_4G = 5,
  LSCHED_MIG_7G = 6
} lsched_mig_kind;
/** As a request's mig_kind: any kind that meets its compute and memory. */
#define LSCHED_MIG_ANY LSCHED_MIG_1G

/** One GPU instance of a layout: a kind at a start slot. An element of
 * arrays (layouts), so its layout is fixed (no version; it never changes). */
typedef struct lsched_mig_instance {
  int kind;  /* LSCHED_MIG_1G .. LSCHED_MIG_7G */
  int start; /* memory slot 0..7, one of the kind's valid starts */
} lsched_mig_instance;

/* ---------------------------------------------------------------------- */
/* The placement table                                                     */

/** Compute slices of kind, or LSCHED_EINVAL for a bad kind. */
LSCHED_API int lsched_mig_kind_slices(int kind);
/** Memory slots of kind, or LSCHED_EINVAL. */
LSCHED_API int lsched_mig_kind_size(int kind);
/** Valid starts of kind as a bit mask (bit s = start s), 0 for a bad kind. */
LSCHED_API unsigned lsched_mig_kind_starts(int kind);
/** Milli of a GPU an instance of kind takes: floor(1000 x slices / 7);
 * LSCHED_EINVAL for a bad kind. */
LSCHED_API int lsched_mig_kind_milli(int kind);
/** Short name: "1g", "1g-2x", "2g", "3g", "4g", "7g"; "none" for 0,
 * "?" for anything else. Never NULL. */
LSCHED_API const char *lsched_mig_kind_name(int kind);
/**
 * The kind of a short name ("3g", case-insensitive), or of a profile name
 * whose kind does not depend on the model ("3g.40gb": 2g, 3g, 4g and 7g
 * profiles); LSCHED_ENOENT otherwise, also for "1g.<m>gb" names, whose
 * kind depends on the model (1g.10gb is 1g-2x on A100-40GB, 1g on 80 GB
 * parts): lsched_mig_profile_from_name() parses those.
 */
LSCHED_API int lsched_mig_kind_from_name(const char *name);
/** Memory slots an instance of kind at start occupies, as a bit mask; 0 if
 * start is not a valid start of kind. */
LSCHED_API unsigned lsched_mig_slot_mask(int kind, int start);

/**
 * Checks a layout (instances of one GPU): LSCHED_OK; LSCHED_EINVAL if an
 * entry has a bad kind or a start that kind may not use (*bad = its index);
 * LSCHED_ERANGE if an entry overlaps an earlier one (*bad = its index).
 * n may be 0. bad may be NULL.
 */
LSCHED_API int lsched_mig_layout_check(const lsched_mig_instance *v, int n,
                                       int *bad);

/**
 * The smallest kind that is at least min_kind (LSCHED_MIG_ANY for any), has
 * at least compute_milli of the compute (0..1000) and, when memory_mib > 0,
 * at least memory_mib in memory_by_kind[kind - 1]. memory_by_kind NULL
 * means every kind is offered with unknown memory (no kind satisfies a
 * memory need); an entry of 0 means the kind is not offered and is skipped.
 * Returns the kind, LSCHED_ENOENT when
 * no kind satisfies all, LSCHED_EINVAL for bad arguments.
 */
LSCHED_API int lsched_mig_kind_for(int min_kind, int compute_milli,
                                   int64_t memory_mib,
                                   const int64_t *memory_by_kind);

/* ---------------------------------------------------------------------- */
/* Per-model profiles                                                      */

/**
 * Sets the instance memory of each kind on GPU model `model` of c:
 * memory_mib[k - 1] for kind k, in MiB (> 0), or 0 when the model does not
 * offer kind k (such instances are then never created or matched). Without
 * a call, a model offers all six kinds with unknown memory: MIG requests
 * that ask for memory (mig_memory_mib > 0) do not fit it, and
 * lsched_policy_place() says so (LSCHED_ENEVER, the message naming the
 * model). lsched_mig_use_builtin() sets the table of a model the library
 * knows in one call. Allowed at any
 * time; it changes which kind later requests map to, not existing
 * instances; every MIG node of the model already in c is told to
 * policies and observers as LSCHED_NODE_UPDATED. LSCHED_OK, LSCHED_ENOENT
 * (bad model), LSCHED_EINVAL, LSCHED_ENOMEM.
 */
LSCHED_API int lsched_mig_set_model_memory(lsched_cluster *c, int model,
                                           const int64_t *memory_mib);

/**
 * The kind req needs on GPU model `model` (the rule in the introduction):
 * LSCHED_MIG_1G..LSCHED_MIG_7G, LSCHED_ENOENT when no kind of that model
 * satisfies it, LSCHED_EINVAL when req is not a valid MIG request.
 */
LSCHED_API int lsched_mig_request_kind(const lsched_cluster *c, int model,
                                       const lsched_request *req);

/* ---------------------------------------------------------------------- */
/* Built-in profile tables (A100, H100, H100 NVL, H200)                    */

#define LSCHED_MIG_PROFILE_VERSION 1
/**
 * One MIG profile of a GPU model, as `nvidia-smi mig -lgip` lists it
 * (sources: docs/DESIGN.md section 4 and the shared hardware notes; the
 * media-extension "+me" profiles are left out). Library-owned and constant.
 * - name: the profile name ("3g.40gb"); kind: its lsched_mig_kind;
 * - profile_id: NVIDIA's GPU-instance profile ID (19 1g, 15 1g-2x, 14 2g,
 *   9 3g, 5 4g, 0 7g); sm_count: streaming multiprocessors per instance;
 * - memory_gib: the instance memory as listed (GiB); memory_mib:
 *   round(memory_gib x 1024), the value lsched_mig_use_builtin() sets;
 * - verified: 0 when the source infers the value (same table as a sibling
 *   model) instead of showing it measured.
 * Compute slices, memory slots and valid starts are the kind's (the
 * placement table above). Members are only appended (version grows).
 */
typedef struct lsched_mig_profile {
  unsigned version;
  const char *name;
  int kind;
  int profile_id;
  int sm_count;
  double memory_gib;
  int64_t memory_mib;
  int verified;
} lsched_mig_profile;
#define LSCHED_MIG_PROFILE_INIT                                                \
  {LSCHED_MIG_PROFILE_VERSION, NULL, 0, 0, 0, 0.0, 0, 0}

#define LSCHED_MIG_MODEL_VERSION 1
/**
 * A MIG-capable GPU model the library knows (library-owned, constant):
 * its canonical name ("A100-SXM4-80GB"), other names it answers to
 * (aliases, NULL-terminated; e.g. "A100-80GB", "A100"), its memory in GiB
 * and its profiles. Read the profiles with lsched_mig_model_profile()
 * (not by indexing `profiles`, whose element may grow). Members are only
 * appended.
 */
typedef struct lsched_mig_model {
  unsigned version;
  const char *name;
  const char *const *aliases;
  double memory_gib;
  int nprofiles;                       /* profiles offered (<= 6) */
  const lsched_mig_profile *profiles;  /* by kind; see above */
} lsched_mig_model;
#define LSCHED_MIG_MODEL_INIT {LSCHED_MIG_MODEL_VERSION, NULL, NULL, 0.0, 0, NULL}

/** Number of built-in MIG models (A100-SXM4-40GB, A100-SXM4-80GB,
 * H100-SXM5-80GB, H100-PCIE-80GB, H100-NVL-94GB, H200-SXM-141GB). */
LSCHED_API int lsched_mig_builtin_count(void);
/** The i-th built-in MIG model (0 <= i < count), or NULL. */
LSCHED_API const lsched_mig_model *lsched_mig_builtin_at(int i);
/** The built-in model named `name` (its name or an alias, ASCII
 * case-insensitive), or NULL. */
LSCHED_API const lsched_mig_model *lsched_mig_builtin_model(const char *name);
/** Model m's profile of kind `kind`, or NULL when m does not offer it (or
 * an argument is bad). */
LSCHED_API const lsched_mig_profile *
lsched_mig_model_profile(const lsched_mig_model *m, int kind);
/**
 * The profile of model `model` (a built-in model's name or alias) named
 * `profile` ("3g.40gb", case-insensitive; a short kind name such as "3g"
 * is accepted too), or NULL. Profile names are per model: "1g.10gb" is
 * the 1g-2x kind on A100-SXM4-40GB but the 1g kind on 80 GB parts.
 */
LSCHED_API const lsched_mig_profile *
lsched_mig_profile_from_name(const char *model, const char *profile);
/**
 * Gives model id `model` of c the memory table of built-in model `name`
 * (NULL: the cluster model's own name), as lsched_mig_set_model_memory()
 * would with each profile's memory_mib. One call per model; a scheduler
 * whose MIG models are built-in needs nothing else. LSCHED_OK,
 * LSCHED_ENOENT (no such cluster model, or the library does not know the
 * name: c's message names it), LSCHED_EINVAL, LSCHED_ENOMEM.
 */
LSCHED_API int lsched_mig_use_builtin(lsched_cluster *c, int model,
                                      const char *name);

/* ---------------------------------------------------------------------- */
/* State                                                                   */

#define LSCHED_MIG_GPU_STATE_VERSION 1
/** A snapshot of one MIG GPU. Instances are listed by start slot. Filled
 * up to the version set by LSCHED_MIG_GPU_STATE_INIT. */
typedef struct lsched_mig_gpu_state {
  unsigned version;
  int dynamic;    /* 1: instances are created on demand */
  int ninstances; /* existing instances, in use or idle */
  lsched_mig_instance instances[LSCHED_MIG_MAX_INSTANCES];
  int in_use[LSCHED_MIG_MAX_INSTANCES]; /* 1 if instances[i] is in use */
  /* Creation number of instances[i]: the value lsched_mig_creations() had
   * just after it was created (0 for instances of the node's initial
   * layout or of lsched_mig_set_layout()). */
  uint64_t created[LSCHED_MIG_MAX_INSTANCES];
  unsigned slots;       /* memory slots of all instances (bit mask) */
  unsigned slots_used;  /* memory slots of the instances in use */
  int slices_used;      /* compute slices of the instances in use */
} lsched_mig_gpu_state;
#define LSCHED_MIG_GPU_STATE_INIT                                              \
  {LSCHED_MIG_GPU_STATE_VERSION, 0, 0, {{0, 0}}, {0}, {0}, 0, 0, 0}

/**
 * Fills *out for GPU `gpu` of node `node`. LSCHED_OK, LSCHED_ENOENT (no
 * such node or GPU), LSCHED_EINVAL (not a MIG node).
 */
LSCHED_API int lsched_mig_gpu_get(const lsched_cluster *c, int node, int gpu,
                                  lsched_mig_gpu_state *out);

/**
 * Replaces the instances of one GPU of a MIG node by layout v[0..n) (all
 * idle), for a scheduler that mirrors a real partition. The GPU must have
 * no instance in use (LSCHED_ESTATE), the layout must pass
 * lsched_mig_layout_check() (its code) and use only kinds the node's model
 * offers (LSCHED_EINVAL). Works on static and dynamic GPUs. Counts as no
 * creation. The node is told to policies and observers as
 * LSCHED_NODE_UPDATED (a refused call tells nothing).
 */
LSCHED_API int lsched_mig_set_layout(lsched_cluster *c, int node, int gpu,
                                     const lsched_mig_instance *v, int n);

/** Instances created so far by lsched_alloc() on dynamic GPUs of c (a
 * counter, also the creation number of the newest one). */
LSCHED_API uint64_t lsched_mig_creations(const lsched_cluster *c);

/**
 * Cluster-wide MIG figures, kept up to date by every alloc and release
 * (reading them is O(1)).
 * - unusable[k - 1]: over all MIG GPUs, the free compute slices that cannot
 *   host an instance of kind k. A dynamic GPU with busy-slot bitmap b and f
 *   free slices (7 minus the slices of its instances in use) contributes
 *   f - slices(k) x n(b, k), where n(b, k) is the largest number of
 *   kind-k instances that fit in the free slots (so all f when k does not
 *   fit); a static GPU contributes the slices no instance of its layout
 *   covers plus the slices of its free instances smaller than k.
 * Filled up to the version set by LSCHED_MIG_TOTALS_INIT.
 */
#define LSCHED_MIG_TOTALS_VERSION 1
typedef struct lsched_mig_totals {
  unsigned version;
  int gpus;             /* MIG GPUs */
  int64_t slices;       /* 7 x gpus */
  int64_t slices_used;  /* compute slices of instances in use */
  int64_t in_use[LSCHED_MIG_KINDS]; /* instances in use, per kind */
  int64_t idle[LSCHED_MIG_KINDS];   /* instances that exist but are idle */
  int64_t unusable[LSCHED_MIG_KINDS];
  uint64_t created;     /* instances created by lsched_alloc() */
  uint64_t destroyed;   /* idle instances destroyed to make room */
} lsched_mig_totals;
#define LSCHED_MIG_TOTALS_INIT                                                 \
  {LSCHED_MIG_TOTALS_VERSION, 0, 0, 0, {0}, {0}, {0}, 0, 0}

/** Fills *out (all zero for a cluster without MIG nodes). */
LSCHED_API void lsched_mig_totals_get(const lsched_cluster *c,
                                      lsched_mig_totals *out);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCHED_MIG_H */
