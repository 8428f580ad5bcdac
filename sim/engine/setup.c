/*
 * Opening and closing a run: the policy, the first pass over the jobs
 * (validation, GPU specs, the typical workload), the parts of the run, and
 * every allocation the loop then reuses (the loop itself allocates only
 * when a table must grow).
 */
#include "engine_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The parts a run may have, asked in this order (each registers itself
 * only when it takes part). Cloud sites, pools and the like go here. */
static const sim_part_open_fn part_opens[] = {
    mig_part_open,   migrate_part_open, preempt_part_open, est_model_part_open,
    speed_part_open, energy_part_open,  cloud_part_open,   pools_part_open};

int engine_add_part(engine *e, const sim_part_ops *ops, void *self) {
  if (e->nparts == SIM_MAX_ENGINE_PARTS)
    return -1;
  e->parts[e->nparts].ops = ops;
  e->parts[e->nparts].self = self;
  e->nparts++;
  e->hooks |= (ops->on_arrival ? SIM_HOOK_ARRIVAL : 0) |
              (ops->request ? SIM_HOOK_REQUEST : 0) |
              (ops->alt_request ? SIM_HOOK_ALT_REQUEST : 0) |
              (ops->before_place ? SIM_HOOK_BEFORE_PLACE : 0) |
              (ops->on_queued ? SIM_HOOK_QUEUED : 0) |
              (ops->on_placed ? SIM_HOOK_PLACED : 0) |
              (ops->on_start ? SIM_HOOK_START : 0) |
              (ops->on_finish ? SIM_HOOK_FINISH : 0) |
              (ops->fill_part ? SIM_HOOK_FILL_PART : 0) |
              (ops->on_output ? SIM_HOOK_OUTPUT : 0) |
              (ops->on_advance ? SIM_HOOK_ADVANCE : 0) |
              (ops->after_pass ? SIM_HOOK_AFTER_PASS : 0) |
              (ops->run_time ? SIM_HOOK_RUN_TIME : 0);
  return 0;
}

/* Sets up the policy (parameters, seed). 0, -1 (input) or -2. */
static int setup_policy(engine *e) {
  const sim_options *opt = e->opt;
  char *err = e->err;
  size_t errlen = e->errlen;
  int rc;
  if ((rc = lsched_registry_create(&e->reg, NULL)) ||
      (rc = lsched_registry_add_builtins(e->reg))) {
    snprintf(err, errlen, "registry: %s", lsched_strerror(rc));
    return -2;
  }
  const lsched_policy_ops *ops = lsched_registry_find(e->reg, opt->policy);
  if (!ops) {
    int len = snprintf(err, errlen, "unknown policy '%s' (available:",
                       opt->policy);
    for (size_t i = 0; i < lsched_registry_count(e->reg) && len > 0 &&
                       (size_t)len < errlen;
         i++)
      len += snprintf(err + len, errlen - (size_t)len, " %s",
                      lsched_registry_at(e->reg, i)->name);
    if (len > 0 && (size_t)len < errlen)
      snprintf(err + len, errlen - (size_t)len, ")");
    return -1;
  }
  if ((rc = lsched_policy_create(&e->pol, e->sc->c, ops))) {
    snprintf(err, errlen, "policy %s: %s", opt->policy, lsched_strerror(rc));
    return -2;
  }
  char seedbuf[32];
  snprintf(seedbuf, sizeof seedbuf, "%" PRIu64, opt->seed);
  rc = lsched_policy_set_param(e->pol, "seed", seedbuf);
  if (rc != LSCHED_OK && rc != LSCHED_ENOENT) {
    snprintf(err, errlen, "policy %s: seed: %s", opt->policy,
             lsched_strerror(rc));
    return -2;
  }
  for (int i = 0; i < opt->npolicy_params; i++) {
    char key[128];
    const char *kv = opt->policy_params[i], *eq = strchr(kv, '=');
    size_t kl = eq ? (size_t)(eq - kv) : 0;
    if (!eq || kl == 0 || kl >= sizeof key) {
      snprintf(err, errlen, "--policy-param '%s': expected KEY=VALUE", kv);
      return -1;
    }
    memcpy(key, kv, kl);
    key[kl] = 0;
    rc = lsched_policy_set_param(e->pol, key, eq + 1);
    if (rc != LSCHED_OK) {
      snprintf(err, errlen, "policy %s: parameter '%s' = '%s': %s",
               opt->policy, key, eq + 1,
               rc == LSCHED_ENOENT ? "unknown parameter" : lsched_strerror(rc));
      return -1;
    }
  }
  /* Does the policy plan migrations? (ENOENT: no.) */
  lsched_request probe = LSCHED_REQUEST_INIT;
  lsched_move mv[1];
  size_t nm;
  e->can_plan = lsched_policy_plan_migrations(e->pol, &probe, NULL, 0, NULL,
                                              mv, 1, &nm) != LSCHED_ENOENT;
  return 0;
}

/* Resolves the specs of the trace up to index `upto` (they are met in the
 * first pass; a stream's table grows as it reads). A spec naming an
 * unknown model is an input error at line `line`, the first job using it
 * (the first pass meets jobs in file order). */
static int resolve_specs(engine *e, const gpu_catalog *cat, int upto,
                         int64_t line) {
  const trace *t = src_meta(&e->src);
  if (upto < e->nspecs_resolved)
    return 0;
  if (upto >= e->specs_cap) {
    int cap = e->specs_cap ? e->specs_cap : 16;
    while (cap <= upto)
      cap *= 2;
    uint64_t *m = realloc(e->spec_mask, (size_t)cap * sizeof *m);
    if (m)
      e->spec_mask = m;
    uint8_t *a = realloc(e->spec_absent, (size_t)cap);
    if (a)
      e->spec_absent = a;
    if (!m || !a) {
      snprintf(e->err, e->errlen, "out of memory");
      return -2;
    }
    e->specs_cap = cap;
  }
  for (int s = e->nspecs_resolved; s <= upto; s++) {
    char why[256];
    int r = sim_cluster_spec_mask(e->sc, cat, t->specs[s], &e->spec_mask[s],
                                  why, sizeof why);
    if (r < 0) {
      snprintf(e->err, e->errlen, "%s:%" PRId64 ": field '%s': %s",
               t->path, line, trace_gpu_field(t->format), why);
      return -1;
    }
    e->spec_absent[s] = (uint8_t)(r == 1);
  }
  e->nspecs_resolved = upto + 1;
  return 0;
}

/* The first pass, in file order: every job has a duration (or the run has
 * --unknown-duration), every GPU spec names known models, the request
 * shapes are counted for the typical workload. Sets *n to the job count
 * and *first to the first arrival; a loaded trace out of submit order gets
 * its arrival order in src.order. */
static int first_pass(engine *e, const gpu_catalog *cat, size_t *n,
                      size_t *multi, int64_t *first) {
  job_src *src = &e->src;
  const trace *t = src->t;
  job_record rec;
  const char *name = NULL;
  uint64_t idx;
  int sorted = 1;
  int64_t prev = INT64_MIN;
  *n = *multi = 0;
  *first = INT64_MAX;
  for (;;) {
    /* A loaded trace's records are read in place (a copy and a name
     * lookup per job were a third of this pass). */
    const job_record *jp;
    if (t) { /* file order, not arrival order */
      if (*n >= t->n)
        break;
      jp = &t->jobs[*n];
      /* 32 records ahead (each its own line; in order, yet the pass
       * stalled on them at 100,000 GPUs' trace sizes, and a record's work
       * here is short: at 8 ahead this pass still held 1.07% of the time
       * samples of 100k@1.2 first-fit backfill, at 32 0.58%) */
      if (*n + 32 < t->n)
        __builtin_prefetch(&t->jobs[*n + 32], 0, 0);
    } else {
      int r = src_next(src, &rec, &name, &idx, e->err, e->errlen);
      if (r <= 0) {
        if (r < 0)
          return r;
        break;
      }
      jp = &rec;
    }
    if (jp->duration_us < 0 && e->opt->unknown_duration_us < 0) {
      snprintf(e->err, e->errlen,
               "%s:%" PRId64 ": job %s has no duration (this trace format "
               "has no times); replay needs --unknown-duration SECONDS",
               src_meta(src)->path, (int64_t)jp->line,
               t ? trace_job_name(t, *n) : name);
      return -1;
    }
    int rc = 0;
    if (jp->gpu_spec >= 0)
      rc = resolve_specs(e, cat, jp->gpu_spec, jp->line);
    if (rc)
      return rc;
    int absent = jp->gpu_spec >= 0 && e->spec_absent[jp->gpu_spec];
    uint64_t mask = jp->gpu_spec >= 0 ? e->spec_mask[jp->gpu_spec] : 0;
    if (fragtrack_add(e->ft, jp, mask, absent)) {
      snprintf(e->err, e->errlen, "out of memory");
      return -2;
    }
    if (jp->submit_us < prev)
      sorted = 0;
    prev = jp->submit_us;
    if (jp->submit_us < *first)
      *first = jp->submit_us;
    *multi += jp->num_gpu > 1;
    ++*n;
  }
  if (t && !sorted && src_sort(src)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -2;
  }
  return 0;
}

int engine_setup(engine *e, const gpu_catalog *cat, const trace *t) {
  const sim_options *opt = e->opt;
  char *err = e->err;
  size_t errlen = e->errlen;
  int rc = setup_policy(e);
  if (rc)
    return rc;
  if (fragtrack_begin(&e->ft, e->sc)) {
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  size_t n = 0, multi = 0;
  int64_t first = 0;
  if ((rc = first_pass(e, cat, &n, &multi, &first)))
    return rc;
  if (n == 0) {
    snprintf(err, errlen, "%s: the trace has no jobs", src_meta(&e->src)->path);
    return -1;
  }
  for (size_t i = 0; i < sizeof part_opens / sizeof part_opens[0]; i++)
    if ((rc = part_opens[i](e, cat, t)))
      return rc;
  /* Fragmentation: the trace's typical task types are the workload of the
   * meter and of fragmentation-aware policies (fgd). */
  if (fragtrack_ready(e->ft)) {
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  int wrc = lsched_policy_set_workload(e->pol, fragtrack_workload(e->ft));
  if (wrc != LSCHED_OK && wrc != LSCHED_ENOENT) {
    snprintf(err, errlen, "policy %s: workload: %s", opt->policy,
             lsched_strerror(wrc));
    return -2;
  }
  size_t mem_values = opt->pctl_mem_values ? opt->pctl_mem_values
                      : t                  ? n
                                           : (size_t)1 << 18;
  metrics_open(e, mem_values, n, multi);
  e->slot_ext = (e->can_plan ? SLOT_EXT_PLAN : 0u) |
                (e->q->flags & SIM_QUEUE_RESERVES ? SLOT_EXT_NAME : 0u);
  e->est_cut =
      opt->estimates != SIM_EST_EXACT || opt->overrun != SIM_OVERRUN_DEFAULT;
  e->est_f = opt->estimate_factor > 0 ? opt->estimate_factor : 1.0;
  e->ever_memo =
      !e->speed_fn && !(e->hooks & (SIM_HOOK_REQUEST | SIM_HOOK_ALT_REQUEST));
  e->hinted = e->released = UINT64_MAX;
  e->prefetch = e->sc->nodes >= SIM_PREFETCH_NODES &&
                (e->q->flags & SIM_QUEUE_RESERVES);
  e->memo = calloc(MEMO_SIZE, sizeof *e->memo);
  if (!e->memo || (e->fill && outcome_alloc(e, n))) {
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  e->head_tried = UINT32_MAX;
  e->plan_failed = UINT32_MAX;
  lsched_totals tot;
  lsched_cluster_totals(e->sc->c, &tot);
  e->total_milli = tot.gpu_milli;
  if (opt->timeline)
    metrics_timeline_header(e);
  if ((rc = src_rewind(&e->src, err, errlen)))
    return rc;
  e->njobs = n;
  e->res.jobs = n;
  e->res.first_arrival_us = first;
  e->res.last_completion_us = first;
  e->have = next_arrival(e);
  if (e->have < 0)
    return e->have == -3 ? -1 : e->have;
  e->now = first;
  e->next_progress = opt->progress ? 65536 : UINT64_MAX;
  return 0;
}

void engine_teardown(engine *e) {
  /* The cluster is left idle: release what is still running (a failed or
   * abandoned run). */
  for (size_t i = 0; i < e->nrun; i++) {
    lsched_placement parts[SIM_MAX_PARTS];
    int np = job_parts(e, e->run_list[i], parts);
    unplace(e, parts, np);
  }
  /* Gang parts are held by the jobs in run_list (mark_running sets them,
   * unmark_running and slot_put free them), unless a step failed between
   * the two; name buffers by streams alone. A run that did not fail is not
   * passed over slot by slot (on 100,000 GPUs a read miss per slot). */
  if (e->rc) {
    for (size_t i = 0; i < e->nslots; i++)
      if (e->slots[i].ngang)
        free(e->slotx[i].gang);
  } else {
    for (size_t i = 0; i < e->nrun; i++) {
      slot *s = &e->slots[e->run_list[i]];
      if (s->ngang)
        free(slot_x_of(e, s)->gang);
    }
  }
  e->nrun = 0;
  if (e->names && !e->src.t)
    for (size_t i = 0; i < e->nslots; i++)
      free(e->names[i].buf);
  metrics_close(e);
  lsched_policy_destroy(e->pol);
  lsched_registry_destroy(e->reg);
  heap_free(&e->heap);
  free(e->slots_raw);
  free(e->slotx_raw);
  free(e->free_slots);
  free(e->names);
  free(e->queue);
  queue_index_free(e);
  sim_rlog_close(e->rlog);
  e->rlog = NULL;
  free(e->run_list);
  free(e->scratch_ends);
  ends_free(e);
  free(e->node_gpu_gib);
  free(e->memo);
  free(e->spec_mask);
  free(e->spec_absent);
  for (int i = e->nparts - 1; i >= 0; i--)
    if (e->parts[i].ops->close)
      e->parts[i].ops->close(e->parts[i].self);
  e->nparts = 0;
  free(e->src.order);
}
