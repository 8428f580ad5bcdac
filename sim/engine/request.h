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
void sim_job_request(const job_record *jr, uint64_t model_mask,
                     lsched_request *r);

#endif
