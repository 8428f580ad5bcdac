/*
 * schedsim rightsize (issue #13 item 6): which cluster shape does the work
 * of a trace at the lowest cost per unit of work within a queue-time
 * bound. One trace, one policy and one queue discipline on every cluster
 * given, run in parallel by the compare machinery (pool.c, cli_replay into
 * DIR/<cluster>/, byte-identical to `schedsim run --out`); then, from each
 * run's summary.json, one row per cluster (rightsize.csv), from each run's
 * jobs.csv one row per (job class, GPU model, share) (rightsize_by_class.csv),
 * the answer in one sentence and a plot of cost per work hour against
 * queue-time p95. Every number is defined in sim/README.md "Right-sizing".
 */
#include "cli.h"
#include "options.h"
#include "report.h"
#include "research.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN 1024

typedef struct rs_ctx {
  const gpu_catalog *cat;
  sim_cluster *clusters;
  trace *t;
  const trace *from; /* --durations-from (else NULL) */
  const char *trace_path;
  const char *policy, *queue_name;
  sim_queue_kind queue;
  const run_config *rc;
  char (*dir)[4096]; /* per cluster: its run directory */
} rs_ctx;

/* One run: cluster i, as compare's runs (synthetic times per cluster). */
static int rs_task(size_t i, pool_slot *slot, void *user) {
  rs_ctx *c = user;
  sim_cluster *sc = &c->clusters[i];
  char who[300];
  snprintf(who, sizeof who, "schedsim rightsize: %s", sc->name);
  research_replay rr = {.rc = c->rc,
                        .t = c->t,
                        .from = c->from,
                        .cluster = sc,
                        .cat = c->cat,
                        .policy = c->policy,
                        .queue = c->queue,
                        .queue_name = c->queue_name,
                        .seed = c->rc->seed,
                        .trace_path = c->trace_path,
                        .dir = c->dir[i],
                        .who = who};
  return research_pool_replay(&rr, slot);
}

/* ------------------------------------------------------ per cluster */

/* The numbers of one cluster's row (sim/README.md "Right-sizing"). */
typedef struct rs_row {
  double jobs, completed, never, work_h, cost, energy_cost, cost_per_work_h,
      work_per_usd, jct_mean, jct_p95, q_mean, q_p95, kwh, kwh_per_work_h;
  int has_per_usd, has_kwh_per; /* 0: empty (no cost / no work) */
  int eligible;                 /* every job started, some work done */
  int within; /* eligible and within the bound (or no bound) */
} rs_row;

static void row_from_metrics(rs_row *r, const run_metrics *m) {
  memset(r, 0, sizeof *r);
  r->jobs = m->num[METRIC_JOBS];
  r->completed = m->num[METRIC_COMPLETED];
  r->never = m->num[METRIC_NEVER_STARTED];
  r->work_h = m->has[METRIC_WORK_GPU_HOURS] ? m->num[METRIC_WORK_GPU_HOURS] : 0;
  r->cost = m->num[METRIC_COST_TOTAL];
  r->energy_cost = m->has[METRIC_ENERGY_COST] ? m->num[METRIC_ENERGY_COST] : 0;
  r->cost_per_work_h =
      m->has[METRIC_COST_PER_WORK_HOUR] ? m->num[METRIC_COST_PER_WORK_HOUR] : 0;
  double spend = r->cost + r->energy_cost;
  r->has_per_usd = spend > 0;
  r->work_per_usd = spend > 0 ? r->work_h / spend : 0;
  r->jct_mean = m->num[METRIC_JCT_MEAN];
  r->jct_p95 = m->num[METRIC_JCT_P95];
  r->q_mean = m->num[METRIC_QUEUE_MEAN];
  r->q_p95 = m->num[METRIC_QUEUE_P95];
  r->kwh = m->has[METRIC_ENERGY_FACILITY] ? m->num[METRIC_ENERGY_FACILITY] : 0;
  r->has_kwh_per = r->work_h > 0;
  r->kwh_per_work_h = r->work_h > 0 ? r->kwh / r->work_h : 0;
  r->eligible = r->never == 0 && r->work_h > 0;
}

/* ------------------------------------------- per job class and model */

typedef struct rs_group {
  char cls[256], model[256], share[32];
  size_t jobs, unpowered;
  double work_s, cost, run_s, kwh;
} rs_group;

typedef struct rs_groups {
  rs_group *g;
  size_t n, cap;
} rs_groups;

static rs_group *group_of(rs_groups *gs, const char *cls, const char *model,
                          const char *share) {
  for (size_t i = 0; i < gs->n; i++)
    if (!strcmp(gs->g[i].cls, cls) && !strcmp(gs->g[i].model, model) &&
        !strcmp(gs->g[i].share, share))
      return &gs->g[i];
  if (gs->n == gs->cap) {
    size_t nc = gs->cap ? gs->cap * 2 : 16;
    rs_group *ng = realloc(gs->g, nc * sizeof *ng);
    if (!ng)
      return NULL;
    gs->g = ng;
    gs->cap = nc;
  }
  rs_group *g = &gs->g[gs->n++];
  memset(g, 0, sizeof *g);
  snprintf(g->cls, sizeof g->cls, "%s", cls);
  snprintf(g->model, sizeof g->model, "%s", model);
  snprintf(g->share, sizeof g->share, "%s", share);
  return g;
}

static int group_cmp(const void *a, const void *b) {
  const rs_group *x = a, *y = b;
  int c = strcmp(x->cls, y->cls);
  if (!c)
    c = strcmp(x->model, y->model);
  return c ? c : strcmp(x->share, y->share);
}

/* The columns of jobs.csv this reads. */
enum {
  J_START,
  J_FINISH,
  J_GPUS,
  J_MILLI,
  J_STATUS,
  J_MIG,
  J_CLASS,
  J_MODEL,
  J_WORK,
  J_COST,
  J_N
};
static const char *const jcols[J_N] = {
    "start",        "finish", "gpus",      "gpu_milli",  "status",
    "mig_instance", "class",  "gpu_model", "work_gpu_s", "cost_usd"};

/* Strict number (the whole field). 0 or -1. */
static int num(const char *s, double *out) {
  char *end;
  if (!*s)
    return -1;
  *out = strtod(s, &end);
  return *end || !isfinite(*out) ? -1 : 0;
}

/* Adds the jobs of RUN_DIR/jobs.csv to gs. 0, or -1 with err naming the
 * file, line and field. */
static int read_jobs(const char *run_dir, const gpu_catalog *cat, rs_groups *gs,
                     char *err, size_t errlen) {
  char path[4200];
  snprintf(path, sizeof path, "%s/jobs.csv", run_dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "%.700s: cannot open", path);
    return -1;
  }
  char *rec = NULL;
  size_t cap = 0;
  int col[J_N], rc = -1;
  long line = 1;
  char fld[J_N][256], name[256];
  if (research_csv_record(f, &rec, &cap) != 1) {
    snprintf(err, errlen, "%.700s: empty file", path);
    goto out;
  }
  for (int k = 0; k < J_N; k++) {
    col[k] = -1;
    for (int i = 0; research_csv_field(rec, i, name, sizeof name) == 0; i++)
      if (!strcmp(name, jcols[k])) {
        col[k] = i;
        break;
      }
    if (col[k] < 0) {
      snprintf(err, errlen,
               "%.700s:1: no column '%s' (written by an older "
               "schedsim? run it again)",
               path, jcols[k]);
      goto out;
    }
  }
  int got;
  while ((got = research_csv_record(f, &rec, &cap)) == 1) {
    line++;
    for (int k = 0; k < J_N; k++)
      if (research_csv_field(rec, col[k], fld[k], sizeof fld[k])) {
        snprintf(err, errlen, "%.700s:%ld: field '%s': missing", path, line,
                 jcols[k]);
        goto out;
      }
    if (strcmp(fld[J_STATUS], "completed") && strcmp(fld[J_STATUS], "killed"))
      continue; /* never started: it ran on no model */
    double v[J_N];
    static const int need[] = {J_START, J_FINISH, J_MILLI, J_WORK, J_COST};
    for (size_t q = 0; q < sizeof need / sizeof need[0]; q++)
      if (num(fld[need[q]], &v[need[q]])) {
        snprintf(err, errlen,
                 "%.700s:%ld: field '%s': expected a number, got "
                 "'%s'",
                 path, line, jcols[need[q]], fld[need[q]]);
        goto out;
      }
    /* GPUs held: the indices of "gpus" (';' within a node, '+' between
     * a gang's nodes); the share of each: compute slices / 7 of a MIG
     * instance, gpu_milli / 1000 otherwise. */
    int ngpu = 0;
    for (const char *p = fld[J_GPUS]; *p; p++)
      if (*p >= '0' && *p <= '9' &&
          (p == fld[J_GPUS] || p[-1] == ';' || p[-1] == '+'))
        ngpu++;
    char share[32];
    double frac = v[J_MILLI] / 1000.0;
    if (fld[J_MIG][0]) {
      size_t kl = strcspn(fld[J_MIG], "@");
      snprintf(share, sizeof share, "mig:%.*s", (int)(kl < 20 ? kl : 20),
               fld[J_MIG]);
      frac = atoi(fld[J_MIG]) / 7.0;
    } else if (ngpu == 0) {
      snprintf(share, sizeof share, "none");
    } else {
      snprintf(share, sizeof share, "%s",
               v[J_MILLI] < 1000 ? "shared" : "whole");
    }
    rs_group *g = group_of(gs, fld[J_CLASS], fld[J_MODEL], share);
    if (!g) {
      snprintf(err, errlen, "out of memory");
      goto out;
    }
    double run = v[J_FINISH] - v[J_START];
    g->jobs++;
    g->work_s += v[J_WORK];
    g->cost += v[J_COST];
    g->run_s += run;
    const gpu_model_info *mi =
        strchr(fld[J_MODEL], '+') ? NULL : catalog_find(cat, fld[J_MODEL]);
    if (ngpu > 0 && (!mi || !mi->has_power))
      g->unpowered++;
    else if (mi)
      g->kwh += mi->busy_w * ngpu * frac * run / 3.6e6;
  }
  if (got < 0) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  rc = 0;
out:
  free(rec);
  fclose(f);
  return rc;
}

/* ------------------------------------------------------------ outputs */

static void fnum(FILE *f, int has, double v) {
  if (has)
    fprintf(f, "%.6f", v);
}

static int write_rows(const char *outdir, char *const *paths,
                      const sim_cluster *scs, char (*label)[200],
                      const rs_row *rows, int n, int bounded, int chosen,
                      char *err, size_t errlen) {
  char path[4200];
  snprintf(path, sizeof path, "%s/rightsize.csv", outdir);
  out_file o;
  if (out_open(&o, path, err, errlen))
    return -1;
  FILE *f = o.f;
  fputs("run,cluster,cluster_name,gpus,jobs,jobs_completed,"
        "jobs_never_started,work_gpu_hours,cost_total_usd,energy_cost_usd,"
        "cost_per_work_hour,work_hours_per_usd,jct_mean_s,jct_p95_s,"
        "queue_mean_s,queue_p95_s,energy_kwh_facility,"
        "energy_kwh_per_work_hour,within_bound,chosen\n",
        f);
  for (int i = 0; i < n; i++) {
    const rs_row *r = &rows[i];
    csv_write_field(f, label[i], 0);
    fputc(',', f);
    csv_write_field(f, paths[i], 0);
    fputc(',', f);
    csv_write_field(f, scs[i].name, 0);
    fprintf(f, ",%d,%.0f,%.0f,%.0f,%.6f,%.6f,%.6f,%.6f,", scs[i].gpus, r->jobs,
            r->completed, r->never, r->work_h, r->cost, r->energy_cost,
            r->cost_per_work_h);
    fnum(f, r->has_per_usd, r->work_per_usd);
    fprintf(f, ",%.6f,%.6f,%.6f,%.6f,%.6f,", r->jct_mean, r->jct_p95, r->q_mean,
            r->q_p95, r->kwh);
    fnum(f, r->has_kwh_per, r->kwh_per_work_h);
    fprintf(f, ",%s,%d\n",
            !bounded    ? ""
            : r->within ? "yes"
                        : "no",
            i == chosen);
  }
  return out_commit(&o, err, errlen);
}

static int write_by_class(const char *outdir, char (*label)[200],
                          const rs_groups *gs, int n, char *err,
                          size_t errlen) {
  char path[4200];
  snprintf(path, sizeof path, "%s/rightsize_by_class.csv", outdir);
  out_file o;
  if (out_open(&o, path, err, errlen))
    return -1;
  FILE *f = o.f;
  fputs("run,class,gpu_model,share,jobs,work_gpu_hours,cost_usd,"
        "work_hours_per_usd,run_mean_s,energy_kwh,energy_kwh_per_work_hour,"
        "energy_unknown_jobs\n",
        f);
  for (int i = 0; i < n; i++)
    for (size_t k = 0; k < gs[i].n; k++) {
      const rs_group *g = &gs[i].g[k];
      double wh = g->work_s / 3600.0;
      csv_write_field(f, label[i], 0);
      fputc(',', f);
      csv_write_field(f, g->cls, 0);
      fputc(',', f);
      csv_write_field(f, g->model, 0);
      fprintf(f, ",%s,%zu,%.6f,%.6f,", g->share, g->jobs, wh, g->cost);
      fnum(f, g->cost > 0, g->cost > 0 ? wh / g->cost : 0);
      fprintf(f, ",%.6f,%.6f,", g->run_s / (double)g->jobs, g->kwh);
      fnum(f, wh > 0, wh > 0 ? g->kwh / wh : 0);
      fprintf(f, ",%zu\n", g->unpowered);
    }
  return out_commit(&o, err, errlen);
}

/* DIR/plots/rightsize.{png,svg}: cost per work hour against queue-time
 * p95, one labelled point per cluster (the chosen one in orange), the
 * bound as a dashed line. 0, 1 without gnuplot, -1 with err set. */
static int write_plot(const char *outdir, char (*label)[200],
                      const rs_row *rows, int n, int bounded, double bound,
                      int chosen, char *err, size_t errlen) {
  char plotdir[4200], path[4300];
  snprintf(plotdir, sizeof plotdir, "%s/plots", outdir);
  if (out_mkdir(plotdir, err, errlen))
    return -1;
  snprintf(path, sizeof path, "%s/rightsize.dat", plotdir);
  out_file o;
  if (out_open(&o, path, err, errlen))
    return -1;
  fputs("# label queue_p95_s cost_per_work_hour chosen\n", o.f);
  for (int i = 0; i < n; i++) {
    plot_gp_str(o.f, label[i]);
    fprintf(o.f, " %.6f %.6f %d\n", rows[i].q_p95, rows[i].cost_per_work_h,
            i == chosen);
  }
  if (out_commit(&o, err, errlen))
    return -1;
  snprintf(path, sizeof path, "%s/rightsize.gp", plotdir);
  if (out_open(&o, path, err, errlen))
    return -1;
  FILE *f = o.f;
  fputs("# Written by schedsim rightsize; run again with 'gnuplot "
        "rightsize.gp' in this directory.\nset grid\nunset key\n"
        "do for [fmt in \"png svg\"] {\n",
        f);
  plot_gp_terminal(f, 900, 600);
  fputs("  set output \"rightsize.\".fmt\n"
        "  set title \"Cost per unit of work against queue time, one point "
        "per cluster\"\n"
        "  set xlabel \"queue time p95 (s)\"\n"
        "  set ylabel \"cost per reference GPU-hour of work (USD)\"\n"
        "  set offsets graph 0.1, graph 0.25, graph 0.1, graph 0.1\n",
        f);
  if (bounded)
    fprintf(f,
            "  set arrow 1 from %.6f, graph 0 to %.6f, graph 1 nohead "
            "dt 2 lc rgb \"#d62728\"\n",
            bound, bound);
  fputs("  plot \"rightsize.dat\" using 2:3:(int($4) ? 0xff7f0e : 0x1f77b4) "
        "with points pt 7 ps 1.5 lc rgb variable, \"\" using 2:3:1 with "
        "labels left offset 1,0 font \",9\"\n  set output\n}\n",
        f);
  if (out_commit(&o, err, errlen))
    return -1;
  static const char *const outs[] = {"rightsize"};
  return plot_run_script(plotdir, "rightsize.gp", outs, 1, err, errlen);
}

/* ------------------------------------------------------------ command */

int cmd_rightsize(int argc, char **argv) {
  run_config o;
  int npos;
  int pst = cli_parse(C_RIGHTSIZE, argc, argv, &o, NULL, 0, &npos);
  if (pst >= 0)
    return pst;
  const char *trace_path = o.trace ? o.trace : "builtin:default";
  const char *outdir = o.out ? o.out : "out/rightsize";
  const char *policy = o.npolicy ? o.policy[o.npolicy - 1] : "best-fit";
  const char *queue_name = o.nqueue ? o.queue[o.nqueue - 1] : "fifo";
  int bounded = o.given[OPT_MAX_QUEUE_P95];
  double bound = o.max_queue_p95;
  char **clusters = o.cluster;
  int ncl = o.ncluster;
  int synthetic = o.synth_load > 0 || o.durations_from;
  if (synthetic && !(o.synth_load > 0 && o.durations_from)) {
    fprintf(stderr, "schedsim rightsize: --synthetic-load and "
                    "--durations-from go together\n");
    return 2;
  }
  static char *const builtins[] = {"builtin:default", "builtin:exclusive",
                                   "builtin:mig-static", "builtin:mig-dynamic"};
  if (ncl == 0)
    for (; ncl < 4; ncl++)
      clusters[ncl] = builtins[ncl];

  char err[ERRLEN] = "";
  int status = 2, ncl_loaded = 0;
  gpu_catalog cat = {NULL, 0};
  trace t, from;
  trace_init(&t);
  trace_init(&from);
  lsched_registry *reg = NULL;
  sim_cluster *scs = calloc((size_t)ncl, sizeof *scs);
  char(*label)[200] = calloc((size_t)ncl, sizeof *label);
  char(*dirs)[4096] = calloc((size_t)ncl, sizeof *dirs);
  int *st = calloc((size_t)ncl, sizeof *st);
  run_metrics *met = calloc((size_t)ncl, sizeof *met);
  rs_row *rows = calloc((size_t)ncl, sizeof *rows);
  rs_groups *gs = calloc((size_t)ncl, sizeof *gs);
  if (!scs || !label || !dirs || !st || !met || !rows || !gs) {
    fprintf(stderr, "schedsim: out of memory\n");
    free(scs);
    free(label);
    free(dirs);
    free(st);
    free(met);
    free(rows);
    free(gs);
    return 1;
  }
  if (cli_load_catalog(&cat, o.catalog, o.prices, o.nprices, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = cli_load_status(err);
    goto done;
  }
  if (lsched_registry_create(&reg, NULL) || lsched_registry_add_builtins(reg)) {
    fprintf(stderr, "schedsim: cannot create the policy registry\n");
    status = 1;
    goto done;
  }
  if (!lsched_registry_find(reg, policy)) {
    fprintf(stderr,
            "schedsim rightsize: unknown policy '%s' (available:", policy);
    for (size_t k = 0; k < lsched_registry_count(reg); k++)
      fprintf(stderr, " %s", lsched_registry_at(reg, k)->name);
    fprintf(stderr, ")\n");
    goto done;
  }
  sim_queue_kind queue;
  sim_queue_parse(queue_name, &queue); /* checked by the parser */
  if ((status = research_load_inputs(&o, trace_path, &cat, clusters, ncl, scs,
                                     &ncl_loaded, &t, &from)) != 0)
    goto done;
  status = 2;

  /* ---- one run per cluster, labelled as compare labels clusters */
  for (int i = 0; i < ncl; i++) {
    research_label(label[i], 180, clusters[i]);
    for (int k = 0; k < i; k++)
      if (strcmp(label[k], label[i]) == 0) {
        size_t l = strlen(label[i]);
        snprintf(label[i] + l, sizeof label[i] - l, "-%d", i + 1);
        break;
      }
    snprintf(dirs[i], sizeof dirs[i], "%s/%s", outdir, label[i]);
  }
  if (out_mkdir(outdir, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = 1;
    goto done;
  }
  int nw = o.workers ? (int)o.workers : pool_default_workers();
  if (nw > ncl)
    nw = ncl;
  printf("schedsim rightsize: trace %s (%zu jobs), seed %" PRIu64 ", policy "
         "%s, queue %s; %d cluster%s on %d worker%s\n\n",
         trace_path, t.n, o.seed, policy, queue_name, ncl, ncl > 1 ? "s" : "",
         nw, nw > 1 ? "s" : "");
  rs_ctx ctx = {&cat,       scs,    &t,         synthetic ? &from : NULL,
                trace_path, policy, queue_name, queue,
                &o,         dirs};
  pool_run((size_t)ncl, nw, rs_task, &ctx, st, !o.quiet, "rightsize");
  status = 0;
  for (int i = 0; i < ncl; i++)
    if (st[i]) {
      fprintf(stderr, "schedsim rightsize: run %s failed (status %d)\n",
              label[i], st[i]);
      if (st[i] == 2 || status == 0)
        status = st[i] == 2 ? 2 : 1;
    }
  if (status)
    goto done;

  /* ---- merge: rows, the answer, per class */
  int chosen = -1;
  for (int i = 0; i < ncl; i++) {
    if (run_metrics_read(dirs[i], &met[i], err, sizeof err) ||
        read_jobs(dirs[i], &cat, &gs[i], err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      status = 1;
      goto done;
    }
    qsort(gs[i].g, gs[i].n, sizeof *gs[i].g, group_cmp);
    rs_row *r = &rows[i];
    row_from_metrics(r, &met[i]);
    r->within = r->eligible && (!bounded || r->q_p95 <= bound);
    if (r->within &&
        (chosen < 0 || r->cost_per_work_h < rows[chosen].cost_per_work_h))
      chosen = i;
  }
  int w = 7;
  for (int i = 0; i < ncl; i++)
    if ((int)strlen(label[i]) > w)
      w = (int)strlen(label[i]);
  printf("  %-*s %6s %12s %10s %10s %10s %10s %10s %10s %6s\n", w, "cluster",
         "GPUs", "$/work-h", "work-h/$", "jct_mean", "jct_p95", "q_mean",
         "q_p95", "kWh/work-h", "never");
  for (int i = 0; i < ncl; i++) {
    const rs_row *r = &rows[i];
    printf("%c %-*s %6d %12.4f %10.4f %10.1f %10.1f %10.1f %10.1f %10.4f "
           "%6.0f\n",
           i == chosen ? '*' : ' ', w, label[i], scs[i].gpus,
           r->cost_per_work_h, r->work_per_usd, r->jct_mean, r->jct_p95,
           r->q_mean, r->q_p95, r->kwh_per_work_h, r->never);
  }
  printf("\n");
  if (chosen >= 0) {
    const rs_row *r = &rows[chosen];
    char within[128] = "";
    if (bounded)
      snprintf(within, sizeof within, " within the bound of %.6g s", bound);
    printf("answer: %s (%s) has the lowest cost per unit of work%s: %.4f "
           "USD per reference GPU-hour (%.4f work-hours per USD), queue-time "
           "p95 %.1f s.\n",
           label[chosen], clusters[chosen], bounded ? within : "",
           r->cost_per_work_h, r->work_per_usd, r->q_p95);
  } else if (bounded) {
    printf("answer: no cluster meets the bound: none starts every job with "
           "a queue-time p95 of at most %.6g s.\n",
           bound);
  } else {
    printf("answer: no cluster starts every job.\n");
  }
  if (write_rows(outdir, clusters, scs, label, rows, ncl, bounded, chosen, err,
                 sizeof err) ||
      write_by_class(outdir, label, gs, ncl, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = 1;
    goto done;
  }
  printf("outputs: %s/rightsize.csv, %s/rightsize_by_class.csv and "
         "%s/<cluster>/",
         outdir, outdir, outdir);
  if (!o.no_plots) {
    int prc = write_plot(outdir, label, rows, ncl, bounded, bound, chosen, err,
                         sizeof err);
    if (prc == 0)
      printf("; plot: %s/plots/rightsize.{png,svg}", outdir);
    if (prc < 0) {
      printf("\n");
      fprintf(stderr, "schedsim: plots: %s\n", err);
      status = 1;
      goto done;
    }
  }
  printf("\n");
done:
  for (int i = 0; i < ncl_loaded; i++)
    sim_cluster_free(&scs[i]);
  for (int i = 0; i < ncl; i++)
    free(gs[i].g);
  free(gs);
  free(scs);
  free(label);
  free(dirs);
  free(st);
  free(met);
  free(rows);
  lsched_registry_destroy(reg);
  trace_free(&t);
  trace_free(&from);
  catalog_free(&cat);
  return status;
}
