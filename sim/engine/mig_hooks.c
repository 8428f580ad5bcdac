/*
 * MIG as a part of the run (engine_internal.h): the MIG state of mig_sim.h
 * behind the engine's hooks, so the loop, the queue disciplines and the
 * metrics hold no MIG branch. Registered only when the cluster has MIG
 * GPUs (a loaded trace: streamed replays refuse MIG clusters).
 */
#include "engine_internal.h"

#include <string.h>

static void mig_request(void *self, const slot *s, lsched_request *r) {
  sim_mig_request(self, (uint32_t)s->idx, r);
}

static int mig_alt_request(void *self, const slot *s, lsched_request *r) {
  return sim_mig_other(self, (uint32_t)s->idx, r);
}

static void mig_before_place(void *self) { sim_mig_before_place(self); }

static void mig_queued(void *self, const slot *s, int delta) {
  sim_mig_queued(self, (uint32_t)s->idx, delta);
}

static void mig_placed(void *self, const slot *s,
                       const lsched_placement *parts, int n) {
  sim_mig_placed(self, (uint32_t)s->idx, parts, n);
}

static int64_t mig_start(void *self, const slot *s,
                         const lsched_placement *parts, int n, int64_t now) {
  return sim_mig_commit(self, (uint32_t)s->idx, parts, n, now);
}

static void mig_fill_part(void *self, const slot *s, lsched_placement *p) {
  sim_mig_fill(self, (uint32_t)s->idx, p);
}

static void mig_output(void *self, const slot *s, sim_job_out *o) {
  sim_mig_job(self, (uint32_t)s->idx, &o->mig_kind, &o->mig_start,
              &o->mig_wait_us);
}

static void mig_advance(void *self, int64_t dt) { sim_mig_advance(self, dt); }

static void mig_timeline(void *self, FILE *f) { sim_mig_timeline(self, f); }

static int mig_results(void *self, const engine *e, sim_result *out) {
  (void)e;
  out->mig = sim_mig_finish(self, out->makespan_us);
  return out->mig ? 0 : -1;
}

static void mig_close(void *self) { sim_mig_free(self); }

static const sim_part_ops mig_part = {
    .name = "mig",
    .request = mig_request,
    .alt_request = mig_alt_request,
    .before_place = mig_before_place,
    .on_queued = mig_queued,
    .on_placed = mig_placed,
    .on_start = mig_start,
    .fill_part = mig_fill_part,
    .on_output = mig_output,
    .on_advance = mig_advance,
    .timeline_columns = ",mig_slices_used,mig_frag_slices",
    .timeline = mig_timeline,
    .results = mig_results,
    .close = mig_close,
};

int mig_part_open(engine *e, const gpu_catalog *cat, const trace *t) {
  if (!t)
    return 0;
  const sim_options *opt = e->opt;
  int user_mix = 0;
  for (int i = 0; i < opt->npolicy_params; i++)
    user_mix |= strncmp(opt->policy_params[i], "mix=", 4) == 0;
  sim_mig *m = NULL;
  int rc = sim_mig_begin(&m, e->sc, cat, t, opt->mig_map, opt->mig_requests,
                         e->pol, user_mix, e->err, e->errlen);
  if (rc) {
    if (rc == -2)
      snprintf(e->err, e->errlen, "out of memory");
    return rc;
  }
  if (m && engine_add_part(e, &mig_part, m)) {
    sim_mig_free(m);
    snprintf(e->err, e->errlen, "internal error: too many engine parts");
    return -2;
  }
  return 0;
}
