/* The "index" parameter that every scoring built-in takes (builtin.h). */
#include "builtin.h"

#include <string.h>

int lsched_builtin_index_param(int *use_index, const char *key,
                               const char *value) {
  if (strcmp(key, "index") != 0)
    return LSCHED_ENOENT;
  if (strcmp(value, "on") == 0 || strcmp(value, "off") == 0) {
    *use_index = value[1] == 'n';
    return LSCHED_OK;
  }
  return LSCHED_EINVAL;
}

int lsched_builtin_scratch_fit(const lsched_allocator *a,
                               const lsched_cluster *c, size_t per_node,
                               int **scratch, size_t *cap) {
  int n = lsched_cluster_node_count(c);
  size_t need = per_node * (n > 0 ? (size_t)n : 1);
  if (need <= *cap)
    return LSCHED_OK;
  int *ns = lsched_mem_realloc(a, *scratch, need * sizeof *ns);
  if (!ns)
    return LSCHED_ENOMEM;
  *scratch = ns;
  *cap = need;
  return LSCHED_OK;
}
