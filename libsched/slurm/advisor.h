/*
 * lsched-slurm-advisor: internal interface between its parts.
 *
 *   slurm_io.c  libslurm -> adv_snapshot (nodes, partitions, pending jobs,
 *               GPUs in use by running jobs); applies decisions with
 *               slurm_update_job. The only files that include <slurm/slurm.h>
 *               are slurm_io.c and main.c.
 *   gres.c      parsers for Slurm's GRES and TRES strings (pure functions).
 *   plan.c      adv_snapshot -> a libsched cluster (the mirror, kept for
 *               the advisor's life and brought up to date each cycle with the
 *               live node calls), one decision per pending job in Slurm's
 *               priority order, the JSON lines and the --dump file (libsched
 *               only, no libslurm).
 *   pins.c      which pins are the advisor's own: the state file and the
 *               AdminComment marker (libc and fsync).
 *   conf.c      the option table, --config files (libc only).
 *
 * Mirror model (README "lsched-slurm-advisor"): one libsched node per Slurm
 * node, CPU = CPUs x 1000 milli, memory = RealMemory MiB, GPUs = the node's
 * first GPU GRES type that is not MIG-like, in shared mode. A whole GPU in use
 * takes 1000 milli; k shards in use on a GPU with S shards per GPU take
 * k x 1000 / S milli (S must divide 1000; otherwise any shard use takes the
 * GPU whole). A shard request of k becomes one GPU with k x 1000 / S milli.
 * Each MIG-like type of a node ("gpu:3g.40gb:2") is a mirror node of its
 * own, "NODE/TYPE", static MIG with one GPU per instance (README: MIG GRES);
 * it shares the node's CPUs and memory (allocated on every mirror node of
 * the Slurm node).
 */
#ifndef LSCHED_SLURM_ADVISOR_H
#define LSCHED_SLURM_ADVISOR_H

#include <libsched/libsched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ADV_MAX_TYPES 16
#define ADV_NAME 64

/* One GPU GRES type of a node, as configured ("gpu:a100:8"). Slurm numbers
 * a node's GPUs across types in the order of its GRES string: first is the
 * Slurm index (IDX) of this type's GPU 0. */
typedef struct adv_gpu_type {
  char name[ADV_NAME]; /* "" for an untyped gpu GRES */
  int count;
  int first;
  int mig_like; /* "1g.10gb", "3g.40gb", ...: a MIG sub-node (plan.c) */
} adv_gpu_type;

typedef struct adv_node {
  char *name;
  int usable;              /* state takes new jobs (no DOWN/DRAIN/...) */
  char state[96];          /* e.g. "IDLE+DRAIN", for notes */
  int64_t cpus, cpus_alloc; /* CPUs */
  int64_t mem_mib, mem_alloc;
  char *features;          /* active features, comma separated, or NULL */
  int ntypes;
  adv_gpu_type types[ADV_MAX_TYPES];
  int mirror_type;   /* index into types of the mirrored type, or -1 */
  int gpu_count;     /* GPUs of the mirrored type (at most 64) */
  int shards;        /* shard GRES count on the node (0 = none) */
  int shards_per_gpu; /* shards / all GPUs; 0 when not whole or none */
  /* Use of each mirrored GPU by running jobs. */
  uint8_t whole[LSCHED_MAX_GPUS_PER_NODE];
  int shard_used[LSCHED_MAX_GPUS_PER_NODE];
  uint8_t shard_unknown[LSCHED_MAX_GPUS_PER_NODE]; /* amount unknown */
  uint64_t idx_used; /* Slurm GPU indices (IDX) in use, every type */
} adv_node;

typedef struct adv_partition {
  char *name;
  uint8_t *member; /* per node of the snapshot */
  int sched;       /* Slurm starts its jobs (UP, DRAIN; not DOWN, INACTIVE) */
  char state[16];  /* "UP", "DOWN", "DRAIN", "INACTIVE" */
} adv_partition;

/* The request shape of a running single-node job (fgd's target workload). */
typedef struct adv_shape {
  int64_t cpus;
  int gpus, shards;
  int node; /* snapshot node it runs on */
  char gpu_type[ADV_NAME];
} adv_shape;

/* Why a pending job is left to Slurm (decision "skip"). */
typedef struct adv_job {
  uint32_t id;
  char *name;
  uint32_t priority;
  char *partition; /* comma separated */
  char *req_nodes, *exc_nodes, *features;
  char *admin_comment;
  uint8_t *excluded; /* per snapshot node: in the job's --exclude; or NULL */
  int ours;          /* req_nodes is a pin the advisor set (pins.c) */
  char *ours_node;   /* that node (when ours) */
  const char *skip;  /* reason code, or NULL when the job is considered */
  /* The request (valid when skip is NULL). */
  int64_t cpus, mem_mib;
  char gpu_type[ADV_NAME]; /* "" = any type */
  int gpus;                /* whole GPUs (MIG instances when mig) */
  int shards;              /* > 0: a shard request (gpus is then 0) */
  int mig;                 /* gpu_type is a MIG profile ("3g.40gb") */
} adv_job;

typedef struct adv_name_idx {
  const char *name; /* points into nodes[idx].name */
  int idx;
} adv_name_idx;

typedef struct adv_snapshot {
  adv_node *nodes;
  int nnodes;
  adv_name_idx *by_name; /* nodes sorted by name (adv_snapshot_index), or NULL */
  adv_partition *parts;
  int nparts;
  adv_job *jobs; /* pending jobs, sorted into Slurm's priority order */
  int njobs;
  int running;   /* running jobs seen (for the summary) */
  adv_shape *shapes; /* running single-node jobs with a known request */
  int nshapes;
} adv_snapshot;

void adv_snapshot_free(adv_snapshot *s);
/* Sorts s->jobs: priority high to low, then job id (submission order). */
void adv_snapshot_sort_jobs(adv_snapshot *s);
/* Sorts the nodes by name for adv_snapshot_find_node. 0 or -1 (memory). */
int adv_snapshot_index(adv_snapshot *s);
/* Index of node `name`, or -1. O(log nodes) after adv_snapshot_index,
 * O(nodes) before. */
int adv_snapshot_find_node(const adv_snapshot *s, const char *name);

/* ----------------------------------------------------------------- gres.c */

/* Parses a node's configured GRES ("gpu:a100:8(S:0-1),shard:a100:32") into
 * n->types, n->shards, n->mirror_type, n->gpu_count, n->shards_per_gpu.
 * 0, or -1 with err set. */
int adv_node_parse_gres(adv_node *n, const char *gres, char *err,
                        size_t errlen);
/* Adds the GPUs in use listed by a node's gres_used ("gpu:a100:4(IDX:2-5),
 * shard:a100:2(IDX:0-1)"): whole GPUs, and GPUs with shards in use whose
 * amount the job details did not account for. Call after every job detail. */
void adv_node_apply_gres_used(adv_node *n, const char *gres_used);
/* Adds one running job's GRES detail on this node ("gpu:a100:2(IDX:0-1)",
 * "shard:3(IDX:0)"). */
void adv_node_apply_job_detail(adv_node *n, const char *detail);
/* Free milli of mirrored GPU g implied by whole/shard_used/shard_unknown. */
int adv_node_gpu_used_milli(const adv_node *n, int g);
/* Milli of one GPU taken by k shards on this node (k x 1000 / S). */
int adv_shard_milli(const adv_node *n, int k);

/* Parses a job's GPU request from tres_per_node or tres_per_job
 * ("gres:gpu:a100:2", "gres/gpu:2", "gres:shard:4"). Sets type, count and
 * shard. Returns 0 on success, 1 when the string names no gpu or shard GRES,
 * -1 when it is not understood (another GRES or several). */
int adv_parse_tres_gpu(const char *tres, char *type, size_t typelen,
                       int *count, int *shard);
/* 1 if a GPU type name looks like a MIG profile ("1g.10gb", "3g.40gb"). */
int adv_is_mig_like(const char *type);
/* libsched's MIG kind (<libsched/mig.h>) of a MIG profile name, by its
 * compute slices: 1g -> LSCHED_MIG_1G, 2g, 3g, 4g, 7g; -1 for others. */
int adv_mig_kind_of(const char *type);
/* 1 if the comma separated list contains word. */
int adv_list_has(const char *list, const char *word);
/* Parses "0-1,3" into a bitmask (indices >= 64 ignored); "N/A" gives 0. */
uint64_t adv_parse_idx(const char *s, size_t len);

/* ----------------------------------------------------------------- plan.c */

typedef struct adv_model_map {
  char *slurm_type; /* "a100" */
  char *model;      /* "A100-SXM4-80GB" */
} adv_model_map;

typedef struct adv_config {
  const char *policy; /* registry name */
  char **params;      /* "KEY=VALUE" for lsched_policy_set_param */
  int nparams;
  adv_model_map *models;
  int nmodels;
  const char *partition; /* only jobs of this partition; NULL = all */
} adv_config;

typedef enum adv_kind {
  ADV_PLACE = 0, /* the policy chose a node and the guard accepted it */
  ADV_NOFIT,     /* no node can take the job now */
  ADV_SKIP,      /* left to Slurm (job->skip says why) */
  ADV_REJECT     /* the policy chose a node that cannot take the job */
} adv_kind;

typedef struct adv_decision {
  const adv_job *job;
  adv_kind kind;
  int node;                /* snapshot node index (PLACE, REJECT) */
  lsched_request req;      /* what was asked (not for SKIP) */
  lsched_placement place;  /* the policy's answer (PLACE, REJECT) */
  int asked;               /* the policy was asked (PLACE, REJECT, NOFIT) */
  int mig_type;            /* PLACE on a MIG sub-node: the type's index on
                              the node; -1 otherwise */
  int *blocked;            /* nodes made unavailable for this job */
  int nblocked;
  int allocated;           /* the placement is allocated in the mirror */
  int applied;             /* Slurm now holds this decision */
  char note[256];          /* reason, error, or "" */
} adv_decision;

typedef struct adv_alloc {
  lsched_placement p;
  int dump; /* listed in the --dump file (running jobs on plain nodes) */
} adv_alloc;

/* What the mirror holds for one node id (ids are never reused). */
typedef struct adv_mnode {
  char *name; /* NULL once removed; "NODE/TYPE" for a MIG sub-node */
  int64_t cpu_milli, memory_mib;
  int gpu_count, gpu_model;
  int mig_kind; /* MIG sub-node: the kind of its instances; 0 otherwise */
} adv_mnode;

/* The mirror: one libsched cluster with its policy, kept across cycles.
 * Each cycle adds the nodes Slurm gained, removes those it lost, updates
 * the ones whose CPUs, memory or GPUs changed (lsched_cluster_update_node),
 * cordons nodes that take no jobs (lsched_cluster_set_node_state), then
 * allocates what runs; adv_plan_free() releases those allocations, so the
 * mirror is idle between cycles and the policy's state (parameters,
 * workload) lives on. */
typedef struct adv_mirror {
  lsched_cluster *c;
  lsched_registry *reg;
  lsched_policy *pol;
  const adv_config *cfg;
  adv_mnode *nodes; /* per node id */
  int nnodes, capnodes;
  long added, removed, updated, restated; /* counts of the last sync */
  int takes_workload; /* the policy has a set_workload hook */
  uint64_t workload_types, workload_weight; /* last one set */
} adv_mirror;

/* 0, or -1 with err set (-2: unknown policy or refused parameter). */
int adv_mirror_init(adv_mirror *m, const adv_config *cfg, char *err,
                    size_t errlen);
void adv_mirror_free(adv_mirror *m);

typedef struct adv_plan {
  adv_mirror *m;
  adv_mirror own;   /* used when adv_plan_build got no mirror */
  lsched_cluster *c; /* m->c */
  lsched_policy *pol;
  const adv_snapshot *s;
  const adv_config *cfg;
  int *sid;        /* per snapshot node: its mirror node id */
  int *tsid;       /* [node * ADV_MAX_TYPES + type]: MIG sub-node id or -1 */
  int *owner;      /* per mirror id: snapshot node, or -1 */
  int *owner_type; /* per mirror id: MIG type index, or -1 */
  adv_alloc *base; /* allocations that mirror the running jobs */
  size_t nbase, capbase;
  adv_decision *d; /* one per job of the snapshot */
  int nd;
  unsigned char *allowed; /* scratch: per node id, for one request */
} adv_plan;

/* The libsched model name for a Slurm GPU type (the --model mapping, or the
 * type itself). */
const char *adv_model_name(const adv_config *cfg, const char *slurm_type);
/* Brings mirror m (NULL: a fresh one owned by the plan) up to date with s
 * and allocates the running jobs. 0, or -1 with err set (unknown policy or
 * refused parameter: -2). cfg must be m's. */
int adv_plan_build(adv_plan *pl, adv_mirror *m, const adv_snapshot *s,
                   const adv_config *cfg, char *err, size_t errlen);
/* Decides every pending job in order, allocating placed ones into the
 * mirror so that later decisions see earlier ones. Before that, a policy
 * that takes a target workload (fgd) gets the request shapes of the cycle's
 * jobs (adv_plan_workload). 0, or -1 with err. */
int adv_plan_decide(adv_plan *pl, char *err, size_t errlen);
/* Releases the cycle's allocations (the mirror stays) and frees the plan. */
void adv_plan_free(adv_plan *pl);
/* 1 if the Slurm node can ever take the job (state, partition, exclusion,
 * features, capacity, GPU type, shards); otherwise 0 with why set. This is
 * the guard every decision passes before it is applied. */
int adv_node_can_take(const adv_snapshot *s, int node, const adv_job *j,
                      const adv_config *cfg, const char **why);
/* Writes one JSON line per decision. */
void adv_print_decisions(FILE *f, const adv_plan *pl, long cycle, long t,
                         int dry_run);
/* Writes the mirrored state and the decisions (README: --dump). 0 or -1. */
int adv_write_dump(const adv_plan *pl, const char *path, char *err,
                   size_t errlen);
/* Writes s as a JSON string literal (with quotes); NULL as null. */
void adv_json_str(FILE *f, const char *s);

/* ----------------------------------------------------------------- pins.c */

/* Marker text the advisor appends to the AdminComment of a job it pinned:
 * "[lsched-slurm-advisor: POLICY placed on NODE]". */
#define ADV_MARKER "lsched-slurm-advisor:"

typedef struct adv_pin {
  uint32_t job;
  char node[ADV_NAME];
} adv_pin;

/* The pins the advisor set (state file STATE_DIR/pins), sorted by job. */
typedef struct adv_pins {
  adv_pin *v;
  int n, cap;
  int dirty; /* changed since loaded or saved */
} adv_pins;

typedef enum adv_pin_class {
  ADV_PIN_NONE = 0, /* no required node */
  ADV_PIN_OURS,     /* state file, marker and ReqNodeList name one node */
  ADV_PIN_OTHER     /* a required node someone else set (or disowned) */
} adv_pin_class;

/* 1 and the node if comment carries our marker, else 0. */
int adv_marker_node(const char *comment, char *node, size_t nodelen);
/* comment (NULL = "") with our marker replaced or appended (after one
 * space); malloc'd, NULL when out of memory. */
char *adv_comment_with_marker(const char *comment, const char *policy,
                              const char *node);
/* comment with our marker (and the space before it) removed; malloc'd. */
char *adv_comment_without_marker(const char *comment);
adv_pin_class adv_pin_classify(const adv_pins *p, uint32_t job,
                               const char *req_nodes, const char *comment);
/* Missing file: no pins (0). -1 unreadable, -2 a bad line (err names the
 * file and line). */
int adv_pins_load(adv_pins *p, const char *path, char *err, size_t errlen);
/* Writes PATH.tmp and renames it over path. 0 or -1 with err. */
int adv_pins_save(adv_pins *p, const char *path, char *err, size_t errlen);
const char *adv_pins_get(const adv_pins *p, uint32_t job);
/* Index of job's entry in p->v (O(log pins)), or -1. */
int adv_pins_index(const adv_pins *p, uint32_t job);
int adv_pins_set(adv_pins *p, uint32_t job, const char *node);
void adv_pins_del(adv_pins *p, uint32_t job);
void adv_pins_free(adv_pins *p);

/* ----------------------------------------------------------------- conf.c */

#define ADV_STATE_DIR "/var/lib/lsched-advisor"

/* One option: command line --NAME and, when in_config, configuration key
 * NAME (or with '_' for '-'). */
typedef struct adv_option {
  const char *name;
  int has_arg;
  int in_config;
  const char *arg;  /* argument name for --help, or NULL */
  const char *help; /* lines separated by '\n' */
} adv_option;
extern const adv_option adv_options[]; /* ends with a NULL name */
const adv_option *adv_option_find(const char *name);

typedef struct adv_opts {
  adv_config cfg;
  int once, dry_run, quiet, unpin_all;
  int retries; /* -1 = forever */
  double interval, max_backoff;
  const char *dump, *slurm_conf, *state_dir;
  char **owned; /* strings copied for the fields above */
  int nowned;
} adv_opts;

void adv_opts_init(adv_opts *o);
void adv_opts_free(adv_opts *o);
/* Sets option key (a long option name) to value (NULL for a flag on the
 * command line). 0, or -1 with why set. */
int adv_opts_set(adv_opts *o, const char *key, const char *value, char *why,
                 size_t whylen);
/* Reads a configuration file into o. 0, or -1 with err naming the file, the
 * line and the key. */
int adv_conf_read(adv_opts *o, const char *path, char *err, size_t errlen);

#endif
