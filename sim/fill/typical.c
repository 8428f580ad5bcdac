/* Typical workload of a trace (see typical.h). */
#include "typical.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int sim_resolve_specs(const sim_cluster *sc, const gpu_catalog *cat,
                      const trace *t, uint64_t **masks, uint8_t **absent,
                      char *err, size_t errlen) {
  size_t n = t->nspecs > 0 ? (size_t)t->nspecs : 1;
  *masks = calloc(n, sizeof **masks);
  *absent = calloc(n, 1);
  if (!*masks || !*absent) {
    free(*masks);
    free(*absent);
    *masks = NULL;
    *absent = NULL;
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  int nm = lsched_cluster_model_count(sc->c);
  uint64_t present = nm >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << nm) - 1;
  for (int s = 0; s < t->nspecs; s++) {
    char why[256];
    int r = sim_cluster_spec_mask(sc, cat, t->specs[s], &(*masks)[s], why,
                                  sizeof why);
    if (r < 0) {
      size_t j = 0;
      while (j < t->n && t->jobs[j].gpu_spec != s)
        j++;
      snprintf(err, errlen, "%s:%" PRId64 ": field '%s': %s", t->path,
               j < t->n ? t->jobs[j].line : 0, trace_gpu_field(t->format), why);
      free(*masks);
      free(*absent);
      *masks = NULL;
      *absent = NULL;
      return -1;
    }
    (*absent)[s] = (uint8_t)(r == 1);
    if (r == 1)
      (*masks)[s] = ~present; /* only models the cluster lacks */
  }
  return 0;
}

int sim_typical_workload(lsched_workload **out, const trace *t,
                         const uint64_t *masks, unsigned percent) {
  *out = NULL;
  if (t->n == 0)
    return 0;
  lsched_workload *w;
  if (lsched_workload_create(&w, NULL))
    return -2;
  for (size_t j = 0; j < t->n; j++) {
    const job_record *jr = &t->jobs[j];
    lsched_task_type tt;
    tt.cpu_milli = jr->cpu_milli;
    tt.gpu_count = jr->num_gpu;
    tt.gpu_milli = jr->num_gpu > 0 ? jr->gpu_milli : 0;
    tt.model_mask = jr->gpu_spec >= 0 && jr->num_gpu > 0 ? masks[jr->gpu_spec]
                                                         : 0;
    tt.weight = 1;
    int rc = lsched_workload_add(w, &tt);
    if (rc == LSCHED_ERANGE) /* > 2^31 jobs: keep the first ones */
      break;
    if (rc) {
      lsched_workload_destroy(w);
      return -2;
    }
  }
  if (lsched_workload_keep_popular(w, percent)) {
    lsched_workload_destroy(w);
    return -2;
  }
  *out = w;
  return 0;
}
