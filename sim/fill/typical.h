/*
 * The FGD paper's target workload of a trace: its request shapes (CPU milli,
 * GPU count, per-GPU milli, allowed GPU models), weighted by how many jobs
 * have each shape, cut to the most popular shapes that cover `percent`% of
 * the jobs (95 in the paper; CPU-only jobs included). Follows GetTypicalPods
 * in the authors' simulator (pkg/utils/frag.go) with isInvolvedCpuPods =
 * true, podPopularityThreshold = 95, podIncreaseStep = 1, gpuResWeight = 0.
 */
#ifndef SCHEDSIM_TYPICAL_H
#define SCHEDSIM_TYPICAL_H

#include <libsched/libsched.h>

#include "catalog.h"
#include "cluster_spec.h"
#include "trace.h"

/*
 * Resolves every gpu_spec of t to a model mask of sc's cluster (masks[i] for
 * t->specs[i]; absent[i] = 1 when none of its models is in the cluster, and
 * then masks[i] names only models absent from it, so that such a task type
 * runs nowhere). Both arrays get t->nspecs entries (malloc'd; free them).
 * 0, or -1 with "FILE:LINE: field 'gpu_spec': ..." in err for a model the
 * catalog does not know, -2 out of memory.
 */
int sim_resolve_specs(const sim_cluster *sc, const gpu_catalog *cat,
                      const trace *t, uint64_t **masks, uint8_t **absent,
                      char *err, size_t errlen);

/* Builds the typical workload of t (spec masks from sim_resolve_specs).
 * 0, or -2 out of memory. *out is NULL for a trace without jobs. */
int sim_typical_workload(lsched_workload **out, const trace *t,
                         const uint64_t *masks, unsigned percent);

#endif
