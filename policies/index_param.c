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
