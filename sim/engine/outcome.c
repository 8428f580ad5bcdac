/*
 * A job's final outcome: counted by the metrics, then handed to
 * sim_options.on_job (jobs.csv, streamed) or kept in the per-job arrays of
 * sim_result. (emit_parts, which the loop inlines, is in
 * engine_internal.h.)
 */
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

int outcome_alloc(engine *e, size_t n) {
  sim_result *r = e->fill;
  size_t nz = n ? n : 1;
  r->js = calloc(nz, sizeof *r->js);
  if (!r->js)
    return -1;
  if (e->q->flags & SIM_QUEUE_RESERVES) {
    r->reserved_us = malloc(nz * sizeof *r->reserved_us);
    if (!r->reserved_us)
      return -1;
  }
  if (e->can_plan) {
    r->migrations = calloc(nz, sizeof *r->migrations);
    r->preemptions = calloc(nz, sizeof *r->preemptions);
    r->lost_gpu_s = calloc(nz, sizeof *r->lost_gpu_s);
    if (!r->migrations || !r->preemptions || !r->lost_gpu_s)
      return -1;
  }
  return 0;
}

int outcome_keep(engine *e, slot *s) {
  sim_result *r = e->fill;
  job_state st = s->st;
  if (s->ngang > 1) {
    if (grow_array((void **)&r->gangs, &e->gangs_cap, r->ngangs + 1,
                   sizeof *r->gangs)) {
      snprintf(e->err, e->errlen, "out of memory");
      return -1;
    }
    slot_x *sx = slot_x_of(e, s);
    r->gangs[r->ngangs].parts = sx->gang;
    r->gangs[r->ngangs].n = s->ngang;
    sx->gang = NULL;
    st.node = -2 - (int32_t)r->ngangs++;
    st.gpu_mask = 0;
  }
  r->js[s->idx] = st;
  if (r->reserved_us)
    r->reserved_us[s->idx] = s->reserved_us;
  if (r->migrations) {
    const slot_x *sx = slot_x_of(e, s);
    r->migrations[s->idx] = sx->nmig;
    r->preemptions[s->idx] = sx->npre;
    r->lost_gpu_s[s->idx] = sx->lost_gpu_s;
  }
  return 0;
}

int emit(engine *e, uint32_t sl) {
  slot *s = &e->slots[sl];
  lsched_placement parts[SIM_MAX_PARTS];
  int np = 0;
  if (s->st.status == JOB_QUEUED) /* cannot happen: see loop.c's drain */
    s->st.status = JOB_NEVER_QUEUED;
  if ((s->st.status == JOB_DONE || s->st.status == JOB_KILLED) &&
      s->st.node != -1) /* -1: it ran in a cloud (cloud.c) */
    np = job_parts(e, sl, parts);
  return emit_parts(e, sl, parts, np);
}
