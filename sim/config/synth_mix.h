/*
 * Workload mix files for `schedsim generate --mix FILE`: the synthetic
 * generator's parameters and request shapes (traces/synth.c) as JSON:
 *
 *   {"description": "...", "jobs": 3000, "arrival_rate_per_hour": 60,
 *    "duration_median_s": 1800, "duration_sigma": 1.0,
 *    "max_duration_s": 86400,
 *    "shapes": [{"name": "inference", "weight": 70, "cpu_milli": 2000,
 *                "memory_mib": 8192, "num_gpu": 1, "gpu_milli": 100}, ...]}
 *
 * arrival_rate_per_hour and shapes are required; the other keys default to
 * the built-in workload's values (synth_default_params). Unknown keys are
 * errors naming the file and the key.
 */
#ifndef SCHEDSIM_SYNTH_MIX_H
#define SCHEDSIM_SYNTH_MIX_H

#include <stddef.h>

#include "trace.h"

/* Reads path into *p (which holds defaults), allocating the shapes into
 * *shapes (caller frees; p->shapes points at them). 0, or -1 with err. */
int synth_mix_load(const char *path, synth_params *p, synth_shape **shapes,
                   char *err, size_t errlen);

#endif
