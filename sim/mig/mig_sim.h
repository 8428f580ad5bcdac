/*
 * MIG in the simulator (README "MIG"): how trace jobs become MIG requests,
 * the reconfiguration delay of new instances, and the MIG metrics. The
 * engine's MIG part (sim/engine/mig_hooks.c) holds one sim_mig per run when
 * the cluster has MIG GPUs and calls the functions below from the engine's
 * hooks; everything MIG-specific lives here.
 *
 * Mapping (jobs without MIG data; --mig-map):
 *   compute  the smallest kind with slices / 7 >= gpu_milli / 1000;
 *   memory   the smallest kind with memory slots / 8 >= gpu_milli / 1000
 *            (the job's GPU memory need is its gpu_milli share of the GPU's
 *            memory, and an instance with m of the 8 slots holds m/8 of it);
 *   both     (default) the larger of the two.
 * gpu_milli 1000 and every multi-GPU job map to 7g (a whole GPU each). A
 * --mig-requests file gives jobs an explicit profile name or (GPU memory
 * GiB, compute fraction) instead; such a request maps on each node to the
 * smallest profile of the node's model that satisfies it, and one that no
 * profile of the cluster's MIG models satisfies is an input error naming
 * the job and both files' lines.
 */
#ifndef SCHEDSIM_MIG_SIM_H
#define SCHEDSIM_MIG_SIM_H

#include <libsched/libsched.h>
#include <stdint.h>
#include <stdio.h>

#include "catalog.h"
#include "cluster_spec.h"
#include "trace.h"

typedef enum sim_mig_map {
  SIM_MIG_MAP_BOTH = 0,
  SIM_MIG_MAP_COMPUTE = 1,
  SIM_MIG_MAP_MEMORY = 2
} sim_mig_map;

/* compute|memory|both; 0, or -1 for another name. */
int sim_mig_map_parse(const char *name, sim_mig_map *out);
const char *sim_mig_map_name(sim_mig_map m);
/* The kind a job of gpu_milli (1..1000) on one GPU maps to. */
int sim_mig_map_kind(sim_mig_map m, int gpu_milli);

/* MIG results of a run (sim_result.mig; NULL without MIG GPUs). */
typedef struct sim_mig_result {
  int gpus;                 /* MIG GPUs */
  const char *map;          /* "compute", "memory", "both" */
  double slice_util_mean;   /* time-weighted compute slices in use / all */
  double frag_slices_mean;  /* time-weighted free slices unusable by the
                               smallest kind in the queue (0 when empty) */
  double frag_slices_max;
  double frag_ratio_mean;   /* frag slices / free slices, time-weighted */
  double in_use_mean[LSCHED_MIG_KINDS]; /* instances in use, time-weighted */
  int64_t in_use_max[LSCHED_MIG_KINDS];
  uint64_t placed[LSCHED_MIG_KINDS];    /* jobs started per kind taken */
  uint64_t requested[LSCHED_MIG_KINDS]; /* trace jobs per kind asked */
  uint64_t created, destroyed;          /* instances */
  uint64_t reconfig_jobs;   /* job starts that waited for a reconfiguration */
  double reconfig_wait_s;   /* their total wait */
  /* Per job (trace order): kind and start of its instance (0/0 if none),
   * and its reconfiguration wait in us. */
  uint8_t *kind, *start;
  int64_t *wait_us;
} sim_mig_result;

void sim_mig_result_free(sim_mig_result *r);

typedef struct sim_mig sim_mig;

/*
 * Prepares the MIG state of a run, or sets *out to NULL when the cluster has
 * no MIG GPU (then nothing else here is called). Maps every job (see the
 * top of this file; requests_path may be NULL), and gives policies that
 * take a "mix" parameter (mig-aware) the trace's kind mix unless
 * user_sets_mix. 0; -1 with err set for bad input (an unsatisfiable
 * request, a bad requests file); -2 out of memory.
 */
int sim_mig_begin(sim_mig **out, const sim_cluster *sc,
                  const gpu_catalog *cat, const trace *t, sim_mig_map map,
                  const char *requests_path, lsched_policy *pol,
                  int user_sets_mix, char *err, size_t errlen);
void sim_mig_free(sim_mig *m);

/* The request of job j as the engine should first try it (MIG fields set on
 * a MIG-only cluster). *r already holds the plain request. */
void sim_mig_request(const sim_mig *m, uint32_t j, lsched_request *r);
/* On a cluster with MIG and plain GPUs: turns *r into job j's other
 * variant (plain <-> MIG); 0 when there is none. */
int sim_mig_other(const sim_mig *m, uint32_t j, lsched_request *r);

/* Before a placement attempt (records the instance-creation counter). */
void sim_mig_before_place(sim_mig *m);
/* Job j now holds parts (n of them): remembers its instance. */
void sim_mig_placed(sim_mig *m, uint32_t j, const lsched_placement *parts,
                    int n);
/* Fills parts[0]'s MIG fields for job j (0 when it holds no instance). */
void sim_mig_fill(const sim_mig *m, uint32_t j, lsched_placement *p);
/* Job j starts for real at `now` on parts: returns how long it waits for
 * MIG reconfiguration. A GPU (node scope: a node) applies changes in
 * rounds of the node's delay; the changes requested before a round starts
 * (in practice: in one scheduling pass) are applied together, a later one
 * waits for the next round. A new instance is usable when its round ends;
 * with node scope any placement on the node waits for the running round. */
int64_t sim_mig_commit(sim_mig *m, uint32_t j, const lsched_placement *parts,
                       int n, int64_t now);
/* Queue membership of job j changed by +1 / -1 (fragmentation metric). */
void sim_mig_queued(sim_mig *m, uint32_t j, int delta);
/* Job j's instance (kind 0 if none) and reconfiguration wait so far. */
void sim_mig_job(const sim_mig *m, uint32_t j, int *kind, int *start,
                 int64_t *wait_us);
/* Time advances by dt with the current state (integrals). */
void sim_mig_advance(sim_mig *m, int64_t dt);
/* Timeline columns (",slices_used,frag_slices"). */
void sim_mig_timeline(const sim_mig *m, FILE *f);
/* Moves the results into a new sim_mig_result (NULL on out of memory). */
sim_mig_result *sim_mig_finish(sim_mig *m, int64_t span_us);

#endif
