/*
 * The built-in clusters, named builtin:NAME wherever a cluster spec path is
 * taken (--cluster, sweep manifests). All have the node shapes of
 * builtin:default (16 x 8 A100-SXM4-80GB + 8 x 8 H100-SXM5-80GB) and differ
 * in the GPU mode of every group:
 *   builtin:default      shared (fractional shares in milli-GPU)
 *   builtin:exclusive    exclusive (whole GPUs)
 *   builtin:mig-static   mig-static: 8 A100 nodes "balanced" (2g+1g+1g+3g),
 *                        8 A100 and the 8 H100 nodes "all-7g"
 *   builtin:mig-dynamic  mig-dynamic (instances on demand, 5 s per GPU)
 */
#ifndef SIM_BUILTIN_CLUSTERS_H
#define SIM_BUILTIN_CLUSTERS_H

#include <stddef.h>

/* Number of built-in clusters and the name of the i-th ("builtin:..."). */
size_t sim_builtin_cluster_count(void);
const char *sim_builtin_cluster_name(size_t i);

/* The JSON spec of the built-in cluster NAME ("builtin:..."), malloc'd
 * (free it); NULL with *unknown = 1 when NAME is not one, NULL with
 * *unknown = 0 when out of memory. */
char *sim_builtin_cluster_json(const char *name, int *unknown);

#endif
