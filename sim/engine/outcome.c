/*
 * A job's final outcome: counted by the metrics, then handed to
 * sim_options.on_job (jobs.csv, streamed) or kept in the per-job arrays of
 * sim_result.
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

/* Keeps s's outcome in the per-job arrays; a gang's parts move into the
 * result. */
static int keep(engine *e, slot *s) {
  sim_result *r = e->fill;
  job_state st = s->st;
  if (s->ngang > 1) {
    if (grow_array((void **)&r->gangs, &e->gangs_cap, r->ngangs + 1,
                   sizeof *r->gangs)) {
      snprintf(e->err, e->errlen, "out of memory");
      return -1;
    }
    r->gangs[r->ngangs].parts = s->gang;
    r->gangs[r->ngangs].n = s->ngang;
    s->gang = NULL;
    st.node = -2 - (int32_t)r->ngangs++;
    st.gpu_mask = 0;
  }
  r->js[s->idx] = st;
  if (r->reserved_us)
    r->reserved_us[s->idx] = s->reserved_us;
  if (r->migrations) {
    r->migrations[s->idx] = s->nmig;
    r->preemptions[s->idx] = s->npre;
    r->lost_gpu_s[s->idx] = s->lost_gpu_s;
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

int emit_parts(engine *e, uint32_t sl, const lsched_placement *parts,
               int np) {
  slot *s = &e->slots[sl];
  double work, cost;
  if (metrics_completed(e, s, parts, np, &work, &cost))
    return -1;
  if (e->opt->on_job) {
    sim_job_out o;
    o.index = s->idx;
    o.rec = &s->rec;
    o.name = slot_name(s);
    o.st = &s->st;
    o.parts = parts;
    o.nparts = np;
    o.planned = e->can_plan;
    /* The third cache line of the slot only when it holds something. */
    o.migrations = e->can_plan ? s->nmig : 0;
    o.preemptions = e->can_plan ? s->npre : 0;
    o.lost_gpu_s = e->can_plan ? s->lost_gpu_s : 0;
    o.reserved_us = e->q->flags & SIM_QUEUE_RESERVES ? s->reserved_us : -1;
    o.mig_kind = o.mig_start = 0;
    o.mig_wait_us = 0;
    uint32_t isl = (uint32_t)(s - e->slots);
    o.jclass = speed_class_name(e, isl);
    o.cloud_cols = 0;
    o.site = o.site_model = NULL;
    o.cloud_cost_usd = 0;
    /* The job's terms of the sums (metrics_completed); a job without
     * parts (a cloud job, or one that never ran) has no on-prem work or
     * cost here. */
    o.work_ref_s = np > 0 ? work / 1e6 : 0;
    o.cost_usd = cost;
    hook_output(e, s, &o);
    if (e->opt->on_job(e->opt->on_job_user, &o)) {
      snprintf(e->err, e->errlen, "job output failed (%s)", o.name);
      return -1;
    }
  } else if (keep(e, s)) {
    return -1;
  }
  slot_put(e, sl);
  return 0;
}
