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
#include "research.h"

#include <errno.h>
#include <getopt.h>
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
  char dir[4096];
} cmp_run;

typedef struct cmp_ctx {
  const gpu_catalog *cat;
  sim_cluster *clusters;
  const char **cluster_paths;
  const trace *t;
  const char *trace_path;
  uint64_t seed;
  int64_t unknown_us;
  cmp_run *runs;
} cmp_ctx;

static void compare_usage(FILE *f) {
  fputs(
      "usage: schedsim compare [--trace FILE] [--cluster FILE]...\n"
      "                        [--policy NAME[,NAME...]]... "
      "[--queue NAME[,NAME...]]...\n"
      "                        [--seed N] [--out DIR] [--jobs N] "
      "[--no-plots] [--quiet]\n"
      "                        [--trace-format NAME] "
      "[--swf-gpus-per-proc R]\n"
      "                        [--unknown-duration S] [--catalog FILE] "
      "[--price MODEL=USD]... [--check]\n"
      "\n"
      "Replays one trace with every combination of cluster x queue x policy,\n"
      "in parallel, and prints one table. Each run writes DIR/<run>/\n"
      "(summary.json, jobs.csv, timeline.csv, as 'schedsim run'); the table\n"
      "goes to DIR/compare.csv and the plots (utilization over time,\n"
      "queue-time CDF, cost per run; PNG and SVG) to DIR/plots/.\n"
      "\n"
      "  --trace FILE     job trace (default builtin:default)\n"
      "  --cluster FILE   cluster spec or node list, repeatable "
      "(default builtin:default)\n"
      "  --policy LIST    policies, repeatable or comma-separated "
      "(default: all)\n"
      "  --queue LIST     queue disciplines (fifo, skip, backfill, priority),\n"
      "                   repeatable or comma-separated (default fifo)\n"
      "  --seed N         seed for randomised policies and builtin traces (1)\n"
      "  --out DIR        output directory (default out/compare)\n"
      "  --jobs N         parallel workers (default: the number of CPUs)\n"
      "  --no-plots       do not write DIR/plots/\n"
      "  --quiet          no progress display\n"
      "  --trace-format, --swf-gpus-per-proc, --unknown-duration, --catalog,\n"
      "  --price, --check as for 'schedsim run'\n",
      f);
}

/* Appends the comma-separated items of arg (modified in place) to list.
 * 0, or -1 when an item is empty, repeated, or the list is full. */
static int add_items(char *arg, const char **list, int *n, const char *what) {
  char *save = NULL;
  int any = 0;
  for (char *tok = strtok_r(arg, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    any = 1;
    for (int i = 0; i < *n; i++)
      if (strcmp(list[i], tok) == 0) {
        fprintf(stderr, "schedsim compare: %s '%s' given twice\n", what, tok);
        return -1;
      }
    if (*n == MAX_LIST) {
      fprintf(stderr, "schedsim compare: more than %d %ss\n", MAX_LIST, what);
      return -1;
    }
    list[(*n)++] = tok;
  }
  if (!any) {
    fprintf(stderr, "schedsim compare: empty --%s list\n", what);
    return -1;
  }
  return 0;
}

static int cmp_task(size_t i, pool_slot *slot, void *user) {
  cmp_ctx *c = user;
  cmp_run *r = &c->runs[i];
  sim_cluster *sc = &c->clusters[r->cluster];
  sim_options opt = {0};
  opt.policy = r->policy;
  opt.queue = r->queue;
  opt.seed = c->seed;
  opt.unknown_duration_us = c->unknown_us;
  opt.progress = pool_progress_cb;
  opt.progress_user = slot;
  atomic_store_explicit(&slot->total, (uint64_t)c->t->n, memory_order_relaxed);
  run_meta meta = {"replay",      r->policy, r->queue_name, c->seed,
                   c->trace_path, sc->name,  sc->nodes,     sc->gpus};
  sim_result res;
  memset(&res, 0, sizeof res);
  int st = cli_replay(sc, c->cat, c->t, &opt, r->dir, &meta, &res, 1);
  sim_result_free(&res);
  if (st == 0)
    atomic_store_explicit(&slot->done, (uint64_t)c->t->n, memory_order_relaxed);
  return st;
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
  enum {
    O_TRACE = 1000,
    O_CLUSTER,
    O_POLICY,
    O_QUEUE,
    O_SEED,
    O_OUT,
    O_JOBS,
    O_NOPLOTS,
    O_QUIET,
    O_FORMAT,
    O_GPP,
    O_UNKNOWN,
    O_CATALOG,
    O_PRICE,
    O_CHECK,
    O_HELP
  };
  static const struct option lo[] = {
      {"trace", required_argument, 0, O_TRACE},
      {"cluster", required_argument, 0, O_CLUSTER},
      {"policy", required_argument, 0, O_POLICY},
      {"queue", required_argument, 0, O_QUEUE},
      {"seed", required_argument, 0, O_SEED},
      {"out", required_argument, 0, O_OUT},
      {"jobs", required_argument, 0, O_JOBS},
      {"no-plots", no_argument, 0, O_NOPLOTS},
      {"quiet", no_argument, 0, O_QUIET},
      {"trace-format", required_argument, 0, O_FORMAT},
      {"swf-gpus-per-proc", required_argument, 0, O_GPP},
      {"unknown-duration", required_argument, 0, O_UNKNOWN},
      {"catalog", required_argument, 0, O_CATALOG},
      {"price", required_argument, 0, O_PRICE},
      {"check", no_argument, 0, O_CHECK},
      {"help", no_argument, 0, O_HELP},
      {0, 0, 0, 0}};
  const char *trace_path = "builtin:default", *outdir = "out/compare";
  const char *catalog = NULL;
  const char *clusters[MAX_LIST], *policies[MAX_LIST], *queues[MAX_LIST];
  char *prices[MAX_LIST];
  int ncl = 0, npol = 0, nq = 0, nprices = 0, plots = 1, quiet = 0, check = 0;
  uint64_t seed = 1, workers = 0;
  int64_t unknown_us = -1;
  trace_load_opts tlo = TRACE_LOAD_OPTS_INIT;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    switch (c) {
    case O_TRACE:
      trace_path = optarg;
      break;
    case O_CLUSTER:
      for (int i = 0; i < ncl; i++)
        if (strcmp(clusters[i], optarg) == 0) {
          fprintf(stderr, "schedsim compare: cluster '%s' given twice\n",
                  optarg);
          return 2;
        }
      if (ncl == MAX_LIST) {
        fprintf(stderr, "schedsim compare: too many --cluster options\n");
        return 2;
      }
      clusters[ncl++] = optarg;
      break;
    case O_POLICY:
      if (add_items(optarg, policies, &npol, "policy"))
        return 2;
      break;
    case O_QUEUE:
      if (add_items(optarg, queues, &nq, "queue"))
        return 2;
      break;
    case O_SEED:
      if (cli_parse_u64(optarg, &seed)) {
        fprintf(stderr,
                "schedsim: --seed '%s': expected an unsigned "
                "integer\n",
                optarg);
        return 2;
      }
      break;
    case O_OUT:
      outdir = optarg;
      break;
    case O_JOBS:
      if (cli_parse_u64(optarg, &workers) || workers == 0 || workers > 4096) {
        fprintf(stderr, "schedsim compare: --jobs '%s': expected 1..4096\n",
                optarg);
        return 2;
      }
      break;
    case O_NOPLOTS:
      plots = 0;
      break;
    case O_QUIET:
      quiet = 1;
      break;
    case O_FORMAT:
      tlo.format = trace_format_from_name(optarg);
      if (tlo.format == TRACE_FMT_UNKNOWN) {
        fprintf(
            stderr,
            "schedsim: --trace-format '%s': expected one of " TRACE_FORMAT_NAMES
            "\n",
            optarg);
        return 2;
      }
      break;
    case O_GPP:
      if (cli_parse_positive(optarg, &tlo.swf_gpus_per_proc)) {
        fprintf(stderr,
                "schedsim: --swf-gpus-per-proc '%s': expected a "
                "number > 0\n",
                optarg);
        return 2;
      }
      break;
    case O_UNKNOWN:
      if (cli_parse_seconds_us(optarg, &unknown_us)) {
        fprintf(stderr,
                "schedsim: --unknown-duration '%s': expected "
                "seconds >= 0\n",
                optarg);
        return 2;
      }
      break;
    case O_CATALOG:
      catalog = optarg;
      break;
    case O_PRICE:
      if (nprices == MAX_LIST) {
        fprintf(stderr, "schedsim: too many --price options\n");
        return 2;
      }
      prices[nprices++] = optarg;
      break;
    case O_CHECK:
      check = 1;
      break;
    case 'h':
    case O_HELP:
      compare_usage(stdout);
      return 0;
    default:
      fprintf(stderr,
              "schedsim compare: unknown option or missing "
              "argument '%s'\n",
              argv[optind - 1]);
      compare_usage(stderr);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "schedsim compare: unexpected argument '%s'\n",
            argv[optind]);
    compare_usage(stderr);
    return 2;
  }
  if (ncl == 0)
    clusters[ncl++] = "builtin:default";
  if (nq == 0)
    queues[nq++] = "fifo";
  for (int i = 0; i < nq; i++) {
    sim_queue_kind k;
    if (sim_queue_parse(queues[i], &k)) {
      fprintf(stderr,
              "schedsim: --queue '%s': expected fifo, skip, "
              "backfill or priority\n",
              queues[i]);
      return 2;
    }
  }

  /* ---- every input, loaded once and checked before any run ---- */
  char err[ERRLEN] = "";
  int status = 2;
  gpu_catalog cat;
  trace t;
  trace_init(&t);
  sim_cluster *scs = calloc((size_t)ncl, sizeof *scs);
  cmp_run *runs = NULL;
  run_metrics *met = NULL;
  plot_run *pr = NULL;
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
  for (; ncl_loaded < ncl; ncl_loaded++)
    if (cli_load_cluster(&scs[ncl_loaded], clusters[ncl_loaded], &cat, check,
                         err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      status = cli_load_status(err);
      goto done;
    }
  if (cli_load_trace_as(&t, trace_path, seed, &tlo, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = cli_load_status(err);
    goto done;
  }
  cli_note_skipped(&t);
  if (!t.has_times)
    fprintf(stderr, "note: %s has no times: every job arrives at 0%s\n", t.path,
            unknown_us >= 0 ? " and runs for --unknown-duration" : "");
  if (unknown_us < 0)
    for (size_t j = 0; j < t.n; j++)
      if (t.jobs[j].duration_us < 0) {
        fprintf(stderr,
                "schedsim: %s:%" PRId64 ": job %s has no duration (this trace "
                "format has no times); replay needs --unknown-duration "
                "SECONDS\n",
                t.path, t.jobs[j].line, trace_job_name(&t, j));
        goto done;
      }

  /* ---- the runs: cluster x queue x policy, labels ---- */
  size_t n = (size_t)ncl * (size_t)nq * (size_t)npol;
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
      for (int pi = 0; pi < npol; pi++, r++) {
        cmp_run *x = &runs[r];
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
  printf("schedsim compare: trace %s (%zu jobs), seed %" PRIu64 "; %zu runs "
         "(%d cluster%s x %d queue%s x %d polic%s) on %d worker%s\n\n",
         trace_path, t.n, seed, n, ncl, ncl > 1 ? "s" : "", nq,
         nq > 1 ? "s" : "", npol, npol > 1 ? "ies" : "y", nw,
         nw > 1 ? "s" : "");

  /* ---- run, merge, print, plot ---- */
  cmp_ctx ctx = {&cat, scs, clusters, &t, trace_path, seed, unknown_us, runs};
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
  printf("\nutil%% = time-weighted mean GPU allocation; queue and JCT in "
         "seconds; cost at the catalog's prices; never = jobs never "
         "started;\nfrag%% = time-weighted mean fragmentation rate; stranded "
         "= mean GPUs idle that no queued job can use.\n"
         "outputs: %s/compare.csv and %s/<run>/",
         outdir, outdir);
  if (plots) {
    for (size_t i = 0; i < n; i++) {
      pr[i].label = runs[i].label;
      pr[i].dir = runs[i].dir;
      pr[i].cost_total = met[i].num[METRIC_COST_TOTAL];
      pr[i].cost_idle = met[i].num[METRIC_COST_IDLE];
    }
    int prc = plot_runs(outdir, pr, n, err, sizeof err);
    if (prc == 0)
      printf("; plots: %s/plots/{utilization,queue_cdf,cost}.{png,svg}",
             outdir);
    printf("\n");
    if (prc < 0) {
      fprintf(stderr, "schedsim: plots: %s\n", err);
      status = 1;
    }
  } else {
    printf("\n");
  }
done:
  for (int i = 0; i < ncl_loaded; i++)
    sim_cluster_free(&scs[i]);
  free(scs);
  free(runs);
  free(met);
  free(pr);
  free(st);
  lsched_registry_destroy(reg);
  trace_free(&t);
  catalog_free(&cat);
  return status;
}
