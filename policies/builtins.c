/*
 * The built-in policies register through the public registry API, as an
 * outside policy does; the core (libsched/src) knows none of them.
 */
#include "builtin.h"

int lsched_registry_add_builtins(lsched_registry *r) {
  static const lsched_policy_ops *const builtins[] = {
      &lsched_builtin_first_fit,      &lsched_builtin_best_fit,
      &lsched_builtin_worst_fit,      &lsched_builtin_defrag,
      &lsched_builtin_random,         &lsched_builtin_dot_product,
      &lsched_builtin_gpu_clustering, &lsched_builtin_gpu_packing,
      &lsched_builtin_fgd,            &lsched_builtin_mig_first_fit,
      &lsched_builtin_mig_best_fit,   &lsched_builtin_mig_aware,
      &lsched_builtin_fastest_fit,    &lsched_builtin_cheapest_work,
      &lsched_builtin_compose_aware,
  };
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
    int rc = lsched_registry_add(r, builtins[i]);
    if (rc && rc != LSCHED_EEXIST)
      return rc;
  }
  return LSCHED_OK;
}
