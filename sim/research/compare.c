/*
 * schedsim compare: several policies (and queue disciplines and clusters)
 * on one trace, run in parallel by forked workers (pool.c), merged into one
 * table on stdout and DIR/compare.csv, and plotted (plot.c).
 *
 * The trace and the clusters are loaded once, in the parent, before any
 * worker starts: input errors stop the command with status 2 before any
 * run, and the workers share the loaded data copy-on-write. Each run is a
 * cli_replay into DIR/<run>/, the same call `schedsim run --out` makes, so
 * its summary.json, jobs.csv and timeline.csv are byte-identical to that
 * single run's.
 */
#include "cli.h"
#include "options.h"
#include "report.h"
#include "research.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LIST 64
#define ERRLEN 1024

typedef struct cmp_run {
  int cluster;
  sim_queue_kind queue;
  const char *queue_name;
  const char *policy;
  char label[256];
  char group[256]; /* cluster (and queue): the answer's first-fit baseline */
  char dir[4096];
} cmp_run;

typedef struct cmp_ctx {
  const gpu_catalog *cat;
  sim_cluster *clusters;
  char *const *cluster_paths;
  trace *t; /* each worker's own copy after fork (synthetic times) */
  const trace *from; /* --durations-from, loaded once (else NULL) */
  const char *trace_path;
  uint64_t seed;
  const run_config *rc; /* every option that changes a run */
  cmp_run *runs;
} cmp_ctx;

int research_pool_replay(const research_replay *rr, pool_slot *slot) {
  sim_cluster *sc = rr->cluster;
  /* Synthetic times depend on the cluster's GPUs: each run rewrites the
   * trace it got from the parent, its own copy since the fork. */
  char err[ERRLEN];
  int sst = run_config_synthetic_times(rr->rc, rr->t, rr->from, sc->gpus, err,
                                       sizeof err);
  if (sst) {
    fprintf(stderr, "%s: %s\n", rr->who, err);
    return sst;
  }
  sim_options opt;
  run_config_sim_options(rr->rc, &opt);
  opt.policy = rr->policy;
  opt.queue = rr->queue;
  opt.progress = pool_progress_cb;
  opt.progress_user = slot;
  atomic_store_explicit(&slot->total, (uint64_t)rr->t->n, memory_order_relaxed);
  run_meta meta = {"replay",       rr->policy, rr->queue_name, rr->seed,
                   rr->trace_path, sc->name,   sc->nodes,      sc->gpus};
  sim_result res;
  memset(&res, 0, sizeof res);
  int st = cli_replay(sc, rr->cat, rr->t, &opt, rr->dir, &meta, &res, 1);
  sim_result_free(&res);
  if (st == 0)
    atomic_store_explicit(&slot->done, (uint64_t)rr->t->n,
                          memory_order_relaxed);
  return st;
}


int research_load_inputs(const run_config *o, const char *trace_path,
                         const gpu_catalog *cat, char **clusters, int ncl,
                         sim_cluster *scs, int *nloaded, trace *t,
                         trace *from) {
  char err[ERRLEN] = "";
  int synthetic = o->synth_load > 0 || o->durations_from;
  for (; *nloaded < ncl; (*nloaded)++)
    if (cli_load_cluster(&scs[*nloaded], clusters[*nloaded], cat, o->check,
                         err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      return cli_load_status(err);
    }
  if (cli_load_trace_as(t, trace_path, o->seed, &o->load, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    return cli_load_status(err);
  }
  cli_note_skipped(t);
  if (synthetic) {
    trace_error te;
    te.msg[0] = 0;
    if (trace_load(from, o->durations_from, &te)) {
      fprintf(stderr, "schedsim: %s\n", te.msg);
      return cli_load_status(te.msg);
    }
    /* the times come from --durations-from, per run */
    fprintf(stderr, "note: %s: synthetic Poisson arrivals at %.2f x each "
                    "cluster's GPUs, durations drawn from %s (seed %" PRIu64
                    ")\n", t->path, o->synth_load, o->durations_from, o->seed);
  } else if (!t->has_times) {
    fprintf(stderr, "note: %s has no times: every job arrives at 0%s\n",
            t->path, o->unknown_us >= 0 ? " and runs for --unknown-duration"
                                         : "");
  }
  sim_options so;
  char sn[512];
  run_config_sim_options(o, &so);
  sim_speed_note(&so, t, sn, sizeof sn);
  if (sn[0] && !o->quiet)
    fprintf(stderr, "note: %s\n", sn);
  if (o->unknown_us < 0 && !synthetic)
    for (size_t j = 0; j < t->n; j++)
      if (t->jobs[j].duration_us < 0) {
        fprintf(stderr,
                "schedsim: %s:%" PRId64 ": job %s has no duration (this trace "
                "format has no times); replay needs --unknown-duration "
                "SECONDS\n",
                t->path, t->jobs[j].line, trace_job_name(t, j));
        return 2;
      }
  return 0;
}
static int cmp_task(size_t i, pool_slot *slot, void *user) {
  cmp_ctx *c = user;
  cmp_run *r = &c->runs[i];
  char who[300];
  snprintf(who, sizeof who, "schedsim compare: run %s", r->label);
  research_replay rr = {.rc = c->rc,
                        .t = c->t,
                        .from = c->from,
                        .cluster = &c->clusters[r->cluster],
                        .cat = c->cat,
                        .policy = r->policy,
                        .queue = r->queue,
                        .queue_name = r->queue_name,
                        .seed = c->seed,
                        .trace_path = c->trace_path,
                        .dir = r->dir,
                        .who = who};
  return research_pool_replay(&rr, slot);
}

/* The table on stdout: the compare-table columns of the metric table. */
static void print_table(const cmp_run *runs, const run_metrics *m, size_t n) {
  int w = 3;
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(runs[i].label) > w)
      w = (int)strlen(runs[i].label);
  metrics_table_header(stdout, w);
  for (size_t i = 0; i < n; i++)
    metrics_table_row(stdout, w, runs[i].label, &m[i]);
}

static int write_compare_csv(const char *outdir, const cmp_ctx *c,
                             const run_metrics *m, size_t n) {
  char path[4096], err[ERRLEN];
  snprintf(path, sizeof path, "%s/compare.csv", outdir);
  out_file o;
  if (out_open(&o, path, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    return 1;
  }
  fputs("run,cluster,queue,policy,seed,trace,", o.f);
  run_metrics_header(o.f);
  fputc('\n', o.f);
  for (size_t i = 0; i < n; i++) {
    const cmp_run *r = &c->runs[i];
    csv_write_field(o.f, r->label, 0);
    fputc(',', o.f);
    csv_write_field(o.f, c->cluster_paths[r->cluster], 0);
    fprintf(o.f, ",%s,", r->queue_name);
    csv_write_field(o.f, r->policy, 0);
    fprintf(o.f, ",%" PRIu64 ",", c->seed);
    csv_write_field(o.f, c->trace_path, 0);
    fputc(',', o.f);
    run_metrics_row(o.f, &m[i]);
    fputc('\n', o.f);
  }
  if (out_commit(&o, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    return 1;
  }
  return 0;
}

int cmd_compare(int argc, char **argv) {
  run_config o;
  int npos;
  int pst = cli_parse(C_COMPARE, argc, argv, &o, NULL, 0, &npos);
  if (pst >= 0)
    return pst;
  const char *trace_path = o.trace ? o.trace : "builtin:default";
  const char *outdir = o.out ? o.out : "out/compare";
  const char *catalog = o.catalog;
  char **clusters = o.cluster;
  const char **policies = (const char **)o.policy;
  char **queues = o.queue;
  int ncl = o.ncluster, npol = o.npolicy, nq = o.nqueue;
  int every_policy = npol == 0; /* then each cluster gets those that apply */
  char **prices = o.prices;
  int nprices = o.nprices, plots = !o.no_plots, quiet = o.quiet;
  uint64_t seed = o.seed, workers = o.workers;
  int synthetic = o.synth_load > 0 || o.durations_from;
  if (synthetic && !(o.synth_load > 0 && o.durations_from)) {
    fprintf(stderr, "schedsim compare: --synthetic-load and --durations-from "
                    "go together\n");
    return 2;
  }
  if (ncl == 0)
    clusters[ncl++] = "builtin:default";
  if (nq == 0)
    queues[nq++] = "fifo";

  /* ---- every input, loaded once and checked before any run ---- */
  char err[ERRLEN] = "";
  int status = 2;
  gpu_catalog cat;
  trace t, from; /* the trace; --durations-from's */
  trace_init(&t);
  trace_init(&from);
  sim_cluster *scs = calloc((size_t)ncl, sizeof *scs);
  cmp_run *runs = NULL;
  run_metrics *met = NULL;
  plot_run *pr = NULL;
  report_run *rr = NULL;
  int *st = NULL;
  int ncl_loaded = 0;
  lsched_registry *reg = NULL;
  if (!scs) {
    fprintf(stderr, "schedsim: out of memory\n");
    return 1;
  }
  if (cli_load_catalog(&cat, catalog, prices, nprices, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    free(scs);
    return cli_load_status(err);
  }
  if (lsched_registry_create(&reg, NULL) || lsched_registry_add_builtins(reg)) {
    fprintf(stderr, "schedsim: cannot create the policy registry\n");
    status = 1;
    goto done;
  }
  if (npol == 0)
    for (size_t i = 0; i < lsched_registry_count(reg) && npol < MAX_LIST; i++)
      policies[npol++] = lsched_registry_at(reg, i)->name;
  for (int i = 0; i < npol; i++)
    if (!lsched_registry_find(reg, policies[i])) {
      fprintf(stderr,
              "schedsim compare: unknown policy '%s' (available:", policies[i]);
      for (size_t k = 0; k < lsched_registry_count(reg); k++)
        fprintf(stderr, " %s", lsched_registry_at(reg, k)->name);
      fprintf(stderr, ")\n");
      goto done;
    }
  if ((status = research_load_inputs(&o, trace_path, &cat, clusters, ncl, scs,
                                     &ncl_loaded, &t, &from)) != 0)
    goto done;
  status = 2;

  /* ---- the runs: cluster x queue x policy, labels ---- */
  size_t n = 0;
  for (int ci = 0; ci < ncl; ci++)
    for (int pi = 0; pi < npol; pi++)
      if (!every_policy || report_policy_applies(policies[pi], &scs[ci]))
        n += (size_t)nq;
  runs = calloc(n, sizeof *runs);
  met = calloc(n, sizeof *met);
  pr = calloc(n, sizeof *pr);
  st = calloc(n, sizeof *st);
  char(*clabel)[200] = calloc((size_t)ncl, sizeof *clabel);
  if (!runs || !met || !pr || !st || !clabel) {
    free(clabel);
    fprintf(stderr, "schedsim: out of memory\n");
    status = 1;
    goto done;
  }
  for (int i = 0; i < ncl; i++) {
    research_label(clabel[i], 180, clusters[i]);
    for (int k = 0; k < i; k++)
      if (strcmp(clabel[k], clabel[i]) == 0) {
        size_t l = strlen(clabel[i]);
        snprintf(clabel[i] + l, sizeof clabel[i] - l, "-%d", i + 1);
        break;
      }
  }
  size_t r = 0;
  for (int ci = 0; ci < ncl; ci++)
    for (int qi = 0; qi < nq; qi++)
      for (int pi = 0; pi < npol; pi++) {
        if (every_policy && !report_policy_applies(policies[pi], &scs[ci]))
          continue;
        cmp_run *x = &runs[r++];
        x->cluster = ci;
        sim_queue_parse(queues[qi], &x->queue); /* checked above */
        x->queue_name = queues[qi];
        x->policy = policies[pi];
        char pol[128];
        research_label(pol, sizeof pol, policies[pi]);
        snprintf(x->label, sizeof x->label, "%s%s%s%s%s",
                 ncl > 1 ? clabel[ci] : "", ncl > 1 ? "_" : "",
                 nq > 1 ? queues[qi] : "", nq > 1 ? "_" : "", pol);
        snprintf(x->dir, sizeof x->dir, "%s/%s", outdir, x->label);
        snprintf(x->group, sizeof x->group, "%s%s%s", clabel[ci],
                 nq > 1 ? ", queue " : "", nq > 1 ? queues[qi] : "");
      }
  free(clabel);
  if (out_mkdir(outdir, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = 1;
    goto done;
  }
  int nw = workers ? (int)workers : pool_default_workers();
  if ((size_t)nw > n)
    nw = (int)n;
  if (n != (size_t)ncl * (size_t)nq * (size_t)npol)
    printf("schedsim compare: trace %s (%zu jobs), seed %" PRIu64 "; %zu runs "
           "(%d cluster%s x %d queue%s x the policies that apply to each) on "
           "%d worker%s\n\n",
           trace_path, t.n, seed, n, ncl, ncl > 1 ? "s" : "", nq,
           nq > 1 ? "s" : "", nw, nw > 1 ? "s" : "");
  else
    printf("schedsim compare: trace %s (%zu jobs), seed %" PRIu64 "; %zu runs "
           "(%d cluster%s x %d queue%s x %d polic%s) on %d worker%s\n\n",
           trace_path, t.n, seed, n, ncl, ncl > 1 ? "s" : "", nq,
           nq > 1 ? "s" : "", npol, npol > 1 ? "ies" : "y", nw,
           nw > 1 ? "s" : "");

  /* ---- run, merge, print, plot ---- */
  cmp_ctx ctx = {&cat, scs, clusters, &t, synthetic ? &from : NULL,
                 trace_path, seed, &o, runs};
  pool_run(n, nw, cmp_task, &ctx, st, !quiet, "compare");
  status = 0;
  for (size_t i = 0; i < n; i++)
    if (st[i]) {
      fprintf(stderr, "schedsim compare: run %s failed (status %d)\n",
              runs[i].label, st[i]);
      if (st[i] == 2 || status == 0)
        status = st[i] == 2 ? 2 : 1;
    }
  if (status)
    goto done;
  for (size_t i = 0; i < n; i++)
    if (run_metrics_read(runs[i].dir, &met[i], err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      status = 1;
      goto done;
    }
  print_table(runs, met, n);
  status = write_compare_csv(outdir, &ctx, met, n);
  if (status)
    goto done;
  rr = calloc(n, sizeof *rr);
  if (!rr) {
    fprintf(stderr, "schedsim: out of memory\n");
    status = 1;
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    rr[i].label = runs[i].label;
    rr[i].group = runs[i].group;
    rr[i].policy = runs[i].policy;
    rr[i].dir = runs[i].label;
    rr[i].m = &met[i];
  }
  printf("\n");
  report_answer(stdout, rr, n);
  printf("\nutil%% = time-weighted mean GPU allocation; queue and JCT in "
         "seconds; cost at the catalog's prices; never = jobs never "
         "started;\nfrag%% = time-weighted mean fragmentation rate; stranded "
         "= mean GPUs idle that no queued job can use.\n"
         "outputs: %s/report.html, %s/compare.csv and %s/<run>/",
         outdir, outdir, outdir);
  if (plots) {
    for (size_t i = 0; i < n; i++) {
      pr[i].label = runs[i].label;
      pr[i].dir = runs[i].dir;
      pr[i].cost_total = met[i].num[METRIC_COST_TOTAL];
      pr[i].cost_idle = met[i].num[METRIC_COST_IDLE];
      pr[i].group = runs[i].group;
      pr[i].policy = runs[i].policy;
      pr[i].m = &met[i];
    }
    int prc = plot_runs(outdir, pr, n, err, sizeof err);
    if (prc == 0)
      printf("; plots: %s/plots/{bars,utilization,queue_cdf,cost}.{png,svg}",
             outdir);
    printf("\n");
    if (prc < 0) {
      fprintf(stderr, "schedsim: plots: %s\n", err);
      status = 1;
    }
  } else {
    printf("\n");
  }
  if (status == 0) {
    char l0[4400], l1[600], l2[300];
    snprintf(l0, sizeof l0, "trace %s (%zu jobs), seed %" PRIu64, trace_path,
             t.n, seed);
    size_t w =
        (size_t)snprintf(l1, sizeof l1, "cluster%s:", ncl > 1 ? "s" : "");
    for (int i = 0; i < ncl && w < sizeof l1; i++)
      w += (size_t)snprintf(l1 + w, sizeof l1 - w, " %s (%s, %d GPUs)",
                            clusters[i], scs[i].name, scs[i].gpus);
    w = (size_t)snprintf(l2, sizeof l2, "queue%s:", nq > 1 ? "s" : "");
    for (int i = 0; i < nq && w < sizeof l2; i++)
      w += (size_t)snprintf(l2 + w, sizeof l2 - w, " %s", queues[i]);
    char l3[200];
    snprintf(l3, sizeof l3, "%zu runs%s; outputs: compare.csv and <run>/", n,
             every_policy ? " (every policy that applies to each cluster)"
                          : "");
    const char *setup[4] = {l0, l1, l2, l3};
    if (report_write_html(outdir, "schedsim compare", setup, 4, rr, n, err,
                          sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      status = 1;
    }
  }
done:
  for (int i = 0; i < ncl_loaded; i++)
    sim_cluster_free(&scs[i]);
  free(scs);
  free(rr);
  free(runs);
  free(met);
  free(pr);
  free(st);
  lsched_registry_destroy(reg);
  trace_free(&t);
  trace_free(&from);
  catalog_free(&cat);
  return status;
}
