/* The built-in clusters (see builtin_clusters.h). */
#include "builtin_clusters.h"
#include "cluster_spec.h"

#include <stdlib.h>
#include <string.h>

#define A100(NAME, COUNT)                                                      \
  "{\"name\": \"" NAME "\", \"count\": " #COUNT ", \"gpu_model\": "            \
  "\"A100-SXM4-80GB\", \"gpus_per_node\": 8, \"cpu_milli\": 256000, "          \
  "\"memory_mib\": 2097152, "
#define H100                                                                   \
  "{\"name\": \"hgx-h100\", \"count\": 8, \"gpu_model\": \"H100-SXM5-80GB\", " \
  "\"gpus_per_node\": 8, \"cpu_milli\": 224000, \"memory_mib\": 2097152, "

typedef struct builtin_cluster {
  const char *name; /* builtin:NAME */
  const char *json; /* NULL: sim_default_cluster_json */
} builtin_cluster;

static const builtin_cluster builtins[] = {
    {"builtin:default", NULL},
    {"builtin:exclusive",
     "{\"name\": \"a100-h100-exclusive\", \"node_groups\": ["
     A100("dgx-a100", 16) "\"gpu_mode\": \"exclusive\"}, "
     H100 "\"gpu_mode\": \"exclusive\"}]}"},
    /* Static MIG sized for the default workload, whose jobs are two thirds
     * whole GPUs: half the A100 nodes cut into small instances, the rest
     * whole (7g) instances. */
    {"builtin:mig-static",
     "{\"name\": \"a100-h100-mig-static\", \"node_groups\": ["
     A100("dgx-a100-small", 8)
     "\"gpu_mode\": \"mig-static\", \"mig_layout\": \"balanced\"}, "
     A100("dgx-a100-whole", 8)
     "\"gpu_mode\": \"mig-static\", \"mig_layout\": \"all-7g\"}, "
     H100 "\"gpu_mode\": \"mig-static\", \"mig_layout\": \"all-7g\"}]}"},
    {"builtin:mig-dynamic",
     "{\"name\": \"a100-h100-mig-dynamic\", \"node_groups\": ["
     A100("dgx-a100", 16) "\"gpu_mode\": \"mig-dynamic\"}, "
     H100 "\"gpu_mode\": \"mig-dynamic\"}]}"},
};

size_t sim_builtin_cluster_count(void) {
  return sizeof builtins / sizeof builtins[0];
}

const char *sim_builtin_cluster_name(size_t i) {
  return i < sim_builtin_cluster_count() ? builtins[i].name : NULL;
}

char *sim_builtin_cluster_json(const char *name, int *unknown) {
  *unknown = 0;
  for (size_t i = 0; i < sim_builtin_cluster_count(); i++)
    if (strcmp(name, builtins[i].name) == 0) {
      const char *src = builtins[i].json ? builtins[i].json
                                         : sim_default_cluster_json;
      char *s = malloc(strlen(src) + 1);
      if (s)
        strcpy(s, src);
      return s;
    }
  *unknown = 1;
  return NULL;
}
