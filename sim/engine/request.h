/*
 * The one rule that turns a job record into a libsched request, used by the
 * replay engine, fill mode and fragmentation tracking alike.
 */
#ifndef SCHEDSIM_REQUEST_H
#define SCHEDSIM_REQUEST_H

#include <libsched/libsched.h>
#include <stdint.h>

#include "trace.h"

/*
 * Fills *r with job jr's request: its CPU milli, memory MiB, GPU count and
 * per-GPU milli share (0 for CPU-only jobs), its QoS class as the priority,
 * and, for GPU jobs whose gpu_spec names models, model_mask (the cluster's
 * mask of those models; the caller resolves it). A CPU-only job allows any
 * node whatever its gpu_spec says. MIG fields stay at their defaults (the
 * MIG mapping, mig_sim.h, adds them).
 */
static inline void sim_job_request(const job_record *jr, uint64_t model_mask,
                                   lsched_request *r) {
  /* Inline: the replay builds a request on every placement attempt (a
   * call here cost 1% of a first-fit replay). */
  lsched_request init = LSCHED_REQUEST_INIT;
  *r = init;
  r->cpu_milli = jr->cpu_milli;
  r->memory_mib = jr->memory_mib;
  r->gpu_count = jr->num_gpu > 0 ? jr->num_gpu : 0;
  r->gpu_milli = jr->num_gpu > 0 ? jr->gpu_milli : 0;
  r->model_mask = jr->num_gpu > 0 && jr->gpu_spec >= 0 ? model_mask : 0;
  r->priority = jr->qos;
}

/* A job's speed on a placement (lsched_request.speed, version 4). */
typedef double (*sim_speed_fn)(void *user, const lsched_cluster *c,
                               const lsched_placement *pl);

/* Gives request r the speed callback the replay holds (NULL: speed 1
 * everywhere, as without it) and what its answer depends on (scope, an
 * lsched_speed_scope), for type-aware policies (fastest-fit,
 * cheapest-work). */
static inline void sim_request_speed(lsched_request *r, sim_speed_fn speed,
                                     void *user, int scope) {
  r->speed = speed;
  r->speed_user = user;
  r->speed_scope = scope;
}

#endif
