/*
 * The reported numbers of a replay (definitions: docs/DESIGN.md section 6),
 * fed at the engine's hook points: time advancing (hook_advance in
 * engine_internal.h: the allocation integral and fragmentation), a job's
 * final outcome (metrics_completed), one timeline row per event time, and
 * the totals when the run ends. Sums are added in event order, so a
 * replay's numbers are reproducible to the last digit.
 */
#include "engine_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void sim_fmt_seconds(char *buf, size_t len, int64_t us) {
  const char *sign = us < 0 ? "-" : "";
  uint64_t a = us < 0 ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
  uint64_t s = a / 1000000u, f = a % 1000000u;
  if (f == 0) {
    snprintf(buf, len, "%s%" PRIu64, sign, s);
    return;
  }
  char frac[8];
  snprintf(frac, sizeof frac, "%06" PRIu64, f);
  for (int i = 5; i > 0 && frac[i] == '0'; i--)
    frac[i] = 0;
  snprintf(buf, len, "%s%" PRIu64 ".%s", sign, s, frac);
}

void sim_result_free(sim_result *r) {
  free(r->js);
  for (size_t g = 0; g < r->ngangs; g++)
    free(r->gangs[g].parts);
  free(r->gangs);
  free(r->reserved_us);
  free(r->migrations);
  free(r->preemptions);
  free(r->lost_gpu_s);
  sim_mig_result_free(r->mig);
  free(r->cloud);
  free(r->pools);
  free(r->by_class);
  memset(r, 0, sizeof *r);
}

void metrics_open(engine *e, size_t mem_values, size_t jobs,
                  size_t multi) {
  pctl_init(&e->qt, mem_values);
  pctl_init(&e->jct, mem_values);
  pctl_init(&e->qt_multi, mem_values);
  pctl_init(&e->bsld, mem_values);
  /* At most one value per job (multi-GPU jobs for qt_multi): room up
   * front, where it can be had (else the buffers grow as before). */
  (void)pctl_reserve(&e->qt, jobs);
  (void)pctl_reserve(&e->jct, jobs);
  (void)pctl_reserve(&e->bsld, jobs);
  (void)pctl_reserve(&e->qt_multi, multi);
}

void metrics_close(engine *e) {
  pctl_free(&e->qt);
  pctl_free(&e->jct);
  pctl_free(&e->qt_multi);
  pctl_free(&e->bsld);
  fragtrack_free(e->ft);
  e->ft = NULL;
}

/* err for a failed percentile accumulator (out of memory, or the
 * temporary file it spills to could not be written or read). */
void metrics_pctl_fail(engine *e) {
  const pctl *p[4] = {&e->qt, &e->qt_multi, &e->jct, &e->bsld};
  for (int i = 0; i < 4; i++)
    if (pctl_error(p[i])[0]) {
      snprintf(e->err, e->errlen, "queue time / JCT percentiles: %s",
               pctl_error(p[i]));
      return;
    }
  snprintf(e->err, e->errlen, "queue time / JCT percentiles failed");
}

void metrics_timeline_header(engine *e) {
  FILE *f = e->opt->timeline;
  fputs("time,alloc_gpu_milli,alloc_ratio,running,queued,frag_amount,"
        "frag_rate,stranded_gpu_milli",
        f);
  FOR_PARTS(e, p)
  if (p->ops->timeline_columns)
    fputs(p->ops->timeline_columns, f);
  fputc('\n', f);
}

void metrics_timeline_row(engine *e) {
  FILE *f = e->opt->timeline;
  char ts[32];
  sim_fmt_seconds(ts, sizeof ts, e->now);
  double ratio =
      e->total_milli ? (double)e->alloc_milli / (double)e->total_milli : 0;
  fragtrack_values fv;
  fragtrack_get(e->ft, &fv);
  fprintf(f, "%s,%" PRId64 ",%.6f,%zu,%zu,%.3f,%.6f,%" PRId64, ts,
          e->alloc_milli, ratio, e->running, e->qlen, fv.frag_amount,
          fv.frag_rate, fv.stranded_gpu_milli);
  FOR_PARTS(e, p)
  if (p->ops->timeline)
    p->ops->timeline(p->self, f);
  fputc('\n', f);
}

/* Cost per reference-GPU-hour of work: the one place its formula lives
 * (an energy cost would be added to the numerator here). */
double sim_cost_per_work_hour(const sim_result *r) {
  /* Total cost: the GPUs' (cost_usd.total) plus the energy bought at
   * --energy-price (0 without one). */
  double total = r->cost_total + r->energy_cost_usd;
  return r->work_gpu_hours > 0 ? total / r->work_gpu_hours : 0;
}

int metrics_results(engine *e) {
  sim_result *out = &e->res;
  sim_cluster *sc = e->sc;
  out->events = e->events;
  out->unpriced_gpus = sc->unpriced_gpus;
  out->never_started = out->never_no_node + out->never_model + out->never_queued;
  if (pctl_finish(&e->qt, &out->queue_time_s) ||
      pctl_finish(&e->jct, &out->jct_s) ||
      pctl_finish(&e->qt_multi, &out->queue_time_multigpu_s) ||
      pctl_finish(&e->bsld, &out->bounded_slowdown)) {
    metrics_pctl_fail(e);
    return -1;
  }
  /* Span [first arrival, last completion]; with no completion it is 0 and
   * the time-weighted means are 0. */
  out->makespan_us = out->last_completion_us - out->first_arrival_us;
  double span = (double)out->makespan_us;
  int64_t total = e->total_milli;
  out->gpu_alloc_ratio_mean =
      span > 0 && total > 0
          ? (double)e->alloc_area / (double)total / span
          : 0;
  /* GPU-hours allocated = integral of allocated milli / 1000. */
  out->allocated_gpu_hours = (double)e->alloc_area / 1000.0 / US_PER_HOUR;
  /* Cluster cost: every priced GPU for the whole span. */
  double price_sum = 0;
  for (int i = 0; i < sc->nodes; i++) {
    lsched_node_info ni;
    lsched_cluster_node_info(sc->c, i, &ni);
    /* A pool host's composable slots are no GPUs of its own: each
     * chassis is priced once (pool_price_sum). */
    price_sum += sc->node_price[i] * (ni.gpu_count - sim_node_slots(sc, i));
  }
  price_sum += sc->pool_price_sum;
  out->cost_total = price_sum * span / US_PER_HOUR;
  out->cost_idle = out->cost_total - e->cost_alloc;
  if (out->cost_idle < 0 && out->cost_idle > -1e-9 * out->cost_total)
    out->cost_idle = 0; /* rounding of the two sums */
  out->cost_per_allocated_gpu_hour =
      out->allocated_gpu_hours > 0 ? out->cost_total / out->allocated_gpu_hours
                                   : 0;
  out->job_hours = e->run_us / US_PER_HOUR;
  out->running_jobs_mean = span > 0 ? e->run_us / span : 0;
  out->cost_per_job_hour =
      out->job_hours > 0 ? out->cost_total / out->job_hours : 0;
  out->gpu_used_ratio_mean =
      span > 0 && total > 0 ? e->used_milli_us / (double)total / span : 0;
  fragtrack_means(e->ft, span, &out->frag_amount_mean, &out->frag_rate_mean,
                  &out->stranded_gpu_milli_mean);
  FOR_PARTS(e, p)
  if (p->ops->results && p->ops->results(p->self, e, out)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  /* Work (sim/README.md "Work and speed"), in reference-GPU-hours. */
  out->work_gpu_hours = e->work_ref_us / US_PER_HOUR;
  out->cost_per_work_hour = sim_cost_per_work_hour(out);
  out->migrations_total = e->migrations;
  out->reservations_per_node = e->res_per_node;
  out->reservations_walked = e->res_walked;
  out->backfill_jumps = e->bf_jumps;
  out->reservations_slowed = e->res_slowed;
  out->preemptions_total = e->preemptions;
  out->lost_gpu_s_total = e->lost_gpu_s_total;
  return 0;
}
