/* The schedsim subcommands (see cli.h). */
#include "cli.h"
#include "clock.h"
#include "output.h"
#include "synth_mix.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERRLEN 1024

/* Strict unsigned integer parse. */
int cli_parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-' || *s == '+')
    return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end)
    return -1;
  *out = v;
  return 0;
}

int cli_load_status(const char *err) {
  return strstr(err, "out of memory") ? 1 : 2;
}

int cli_parse_positive(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || !(v > 0) || v > 1e6)
    return -1;
  *out = v;
  return 0;
}

void cli_note_skipped(const trace *t) {
  if (t->skipped)
    fprintf(stderr, "note: %s: %zu records skipped (%s)\n", t->path,
            t->skipped, t->skip_note ? t->skip_note : "reader rules");
}

int cli_parse_seconds_us(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 9.2e12)
    return -1;
  *out = llround(v * 1e6);
  return 0;
}

/* ------------------------------------------------------------- progress */

typedef struct progress_state {
  double t0, last;
  int enabled;
} progress_state;

static void progress_cb(int64_t now_us, uint64_t events, size_t done,
                        size_t total, void *user) {
  progress_state *p = user;
  double t = sim_now_s();
  if (!p->enabled || t - p->t0 < 1.0 || t - p->last < 0.2)
    return;
  p->last = t;
  double frac = total ? (double)done / (double)total : 0;
  double eta = frac > 0 ? (t - p->t0) * (1 - frac) / frac : 0;
  fprintf(stderr,
          "\rsim time %.0f s  events %" PRIu64 "  jobs done %zu/%zu  "
          "ETA %.0f s   ",
          (double)now_us / 1e6, events, done, total, eta);
  fflush(stderr);
}

static void progress_end(progress_state *p) {
  if (p->enabled && sim_now_s() - p->t0 >= 1.0)
    fputs("\n", stderr);
}

/* ---------------------------------------------------------- shared load */

int cli_load_catalog(gpu_catalog *cat, const char *path, char **prices,
                     int nprices, char *err, size_t errlen) {
  int rc = path ? catalog_load_file(cat, path, err, errlen)
                : catalog_load_default(cat, err, errlen);
  if (rc)
    return rc;
  for (int i = 0; i < nprices; i++)
    if (catalog_override_price(cat, prices[i], err, errlen)) {
      catalog_free(cat);
      return -1;
    }
  return 0;
}

int cli_load_cluster(sim_cluster *sc, const char *path,
                     const gpu_catalog *cat, int check, char *err,
                     size_t errlen) {
  if (strcmp(path, "builtin:default") == 0)
    return sim_cluster_from_json(sc, sim_default_cluster_json,
                                 "builtin:default", cat, check, err, errlen);
  return sim_cluster_load(sc, path, cat, check, err, errlen);
}

int cli_load_trace(trace *t, const char *path, uint64_t seed, char *err,
                   size_t errlen) {
  return cli_load_trace_as(t, path, seed, NULL, err, errlen);
}

int cli_load_trace_as(trace *t, const char *path, uint64_t seed,
                      const trace_load_opts *lo, char *err, size_t errlen) {
  trace_error te;
  te.msg[0] = 0;
  int rc;
  if (strcmp(path, "builtin:default") == 0) {
    synth_params p;
    synth_default_params(&p);
    p.seed = seed;
    rc = synth_generate(t, &p, &te);
  } else {
    rc = trace_load_ex(t, path, lo, &te);
  }
  if (rc)
    snprintf(err, errlen, "%s", te.msg);
  return rc;
}

/* Prints the warning about jobs that can never start, naming the first
 * few (collected by the replay's job sink). */
static void warn_never(const replay_notes *n, const sim_result *r) {
  if (r->never_started == 0)
    return;
  fprintf(stderr,
          "warning: %zu of %zu jobs can never start on this cluster "
          "(%zu: no node is large enough; %zu: allowed GPU models absent)\n",
          r->never_started, r->jobs, r->never_no_node, r->never_model);
  for (int i = 0; i < n->nnever; i++)
    fprintf(stderr, "warning:   %s\n", n->never[i]);
}

/* The job sink of a replay: jobs.csv rows as outcomes become final, and
 * the first jobs that can never start, for the warning. */
typedef struct replay_sink {
  FILE *jobs;            /* NULL: no jobs.csv */
  const sim_cluster *sc;
  const trace *meta;     /* path and GPU specs */
  replay_notes *notes;   /* may be NULL */
  int write_errno;       /* errno of a failed jobs.csv write, or 0 */
} replay_sink;

static int sink_job(void *user, const sim_job_out *o) {
  replay_sink *k = user;
  if (k->jobs) {
    errno = 0;
    write_job_row(k->jobs, k->sc, o);
    if (ferror(k->jobs)) {
      k->write_errno = errno ? errno : EIO;
      return -1;
    }
  }
  int st = o->st->status;
  replay_notes *n = k->notes;
  if (n && n->nnever < REPLAY_NOTES_NEVER &&
      (st == JOB_NEVER_NO_NODE || st == JOB_NEVER_MODEL)) {
    const job_record *jr = o->rec;
    snprintf(n->never[n->nnever++], sizeof n->never[0],
             "%s (%s:%" PRId64 "): cpu_milli=%" PRId64 " memory_mib=%" PRId64
             " num_gpu=%d gpu_milli=%d%s%s",
             o->name, k->meta->path, (int64_t)jr->line, jr->cpu_milli,
             jr->memory_mib, (int)jr->num_gpu, (int)jr->gpu_milli,
             jr->gpu_spec >= 0 ? " gpu_spec=" : "",
             jr->gpu_spec >= 0 ? k->meta->specs[jr->gpu_spec] : "");
  }
  return 0;
}

/* Runs one replay of t (loaded) or ts (streamed; exactly one is non-NULL)
 * and writes its outputs into outdir (may be NULL). Returns an exit
 * status, or CLI_REPLAY_LOAD_WHOLE when ts cannot be streamed (err says
 * why; nothing was written). */
int cli_replay_ex(sim_cluster *sc, const gpu_catalog *cat, const trace *t,
                  trace_stream *ts, const sim_options *base,
                  const char *outdir, run_meta *meta, sim_result *res,
                  int quiet, replay_notes *notes) {
  char err[ERRLEN] = "";
  sim_options opt = *base;
  out_file tl = {0}, jobs = {0};
  char path[4096];
  replay_sink sink = {NULL, sc, t ? t : trace_stream_meta(ts), notes, 0};
  if (notes)
    notes->nnever = 0;
  /* A streamed trace is validated inside the replay, after the output
   * directory was made: a directory made here is removed again when the
   * replay fails (only if empty). */
  struct stat dst;
  int made_dir = outdir && stat(outdir, &dst) != 0;
  if (outdir) {
    if (out_mkdir(outdir, err, sizeof err))
      goto io_fail;
    snprintf(path, sizeof path, "%s/timeline.csv", outdir);
    if (out_open(&tl, path, err, sizeof err))
      goto io_fail;
    opt.timeline = tl.f;
    snprintf(path, sizeof path, "%s/jobs.csv", outdir);
    if (out_open(&jobs, path, err, sizeof err))
      goto io_fail;
    sink.jobs = jobs.f;
    write_jobs_header(jobs.f);
  }
  opt.on_job = sink_job;
  opt.on_job_user = &sink;
  progress_state ps = {sim_now_s(), 0, !quiet && isatty(2)};
  if (!opt.progress) { /* compare/sweep workers bring their own */
    opt.progress = progress_cb;
    opt.progress_user = &ps;
  }
  int rc = t ? sim_run(sc, cat, t, &opt, res, err, sizeof err)
             : sim_run_stream(sc, cat, ts, &opt, res, err, sizeof err);
  progress_end(&ps);
  if (rc) {
    if (rc == -2 && sink.write_errno) /* as out_commit says it */
      snprintf(err, sizeof err, "%s: write failed: %s", jobs.path,
               strerror(sink.write_errno));
    out_abort(&tl);
    out_abort(&jobs);
    if (made_dir)
      rmdir(outdir);
    if (rc == -3) {
      if (notes)
        snprintf(notes->why_whole, sizeof notes->why_whole, "%s", err);
      return CLI_REPLAY_LOAD_WHOLE;
    }
    fprintf(stderr, "schedsim: %s\n", err);
    return rc == -1 ? 2 : 1;
  }
  if (outdir) {
    if (out_commit(&tl, err, sizeof err))
      goto io_fail;
    if (out_commit(&jobs, err, sizeof err))
      goto io_fail;
    snprintf(path, sizeof path, "%s/summary.json", outdir);
    if (write_summary_json(path, meta, res, err, sizeof err))
      goto io_fail;
  }
  return 0;
io_fail:
  out_abort(&tl);
  out_abort(&jobs);
  fprintf(stderr, "schedsim: %s\n", err);
  return 1;
}

int cli_replay(sim_cluster *sc, const gpu_catalog *cat, const trace *t,
               const sim_options *base, const char *outdir, run_meta *meta,
               sim_result *res, int quiet) {
  return cli_replay_ex(sc, cat, t, NULL, base, outdir, meta, res, quiet,
                       NULL);
}

/* ------------------------------------------------------------------ run */

static void run_usage(FILE *f) {
  fputs(
      "usage: schedsim run --cluster FILE --trace FILE --policy NAME\n"
      "                    [--queue fifo|skip|backfill|priority] [--seed N]\n"
      "                    [--out DIR] [--estimate-factor F]\n"
      "                    [--unknown-duration SECONDS] [--catalog FILE]\n"
      "                    [--price MODEL=USD]... [--check] [--quiet]\n"
      "\n"
      "Replays TRACE on CLUSTER: jobs arrive at their submit time, wait in\n"
      "the queue, run for their duration where POLICY places them.\n"
      "\n"
      "  --cluster FILE   JSON cluster spec or Alibaba node list CSV;\n"
      "                   'builtin:default' = 16x8 A100-80GB + 8x8 H100\n"
      "  --trace FILE     job trace, format detected (see --trace-format);\n"
      "                   'builtin:default' = the synthetic default workload\n"
      "  --policy NAME    see 'schedsim policies'\n"
      "  --queue          fifo: head-of-line blocking (default);\n"
      "                   skip: start every waiting job that fits, in order;\n"
      "                   backfill: EASY backfilling behind the head's\n"
      "                   reservation; priority: QoS classes (Guaranteed >\n"
      "                   LS > Burstable > BE), FIFO within a class\n"
      "  --estimate-factor F  runtime estimate = duration x F (backfill; 1)\n"
      "  --policy-param K=V   set a policy parameter (defrag: base=NAME)\n"
      "  migration (policies that plan moves, e.g. --policy defrag):\n"
      "  --migration-cost S   seconds per move (fixed part; 0)\n"
      "  --migration-cost-per-gib S  seconds per GiB of GPU memory held (0)\n"
      "  --max-moves M        moves per decision (2)\n"
      "  --max-moves-per-job K  moves per job over its life (1)\n"
      "  --preempt            stop and requeue instead of moving\n"
      "  --synthetic-load L --durations-from FILE  give the trace synthetic\n"
      "                   times: durations drawn from FILE, Poisson arrivals\n"
      "                   offering L x the cluster's GPUs (seed --seed)\n"
      "  --checkpoint-interval S  preempted jobs keep whole intervals (0)\n"
      "  --seed N         seed for randomised policies and builtin traces (1)\n"
      "  --out DIR        write summary.json, jobs.csv, timeline.csv\n"
      "  --unknown-duration S  run time for jobs whose trace has none\n"
      "  --catalog FILE   GPU catalog JSON instead of the built-in one\n"
      "  --price M=USD    override the per-GPU-hour price of model M\n"
      "  --check          check every libsched invariant after each event\n"
      "  --quiet          no progress display\n"
      "  --trace-format NAME  read TRACE as NAME instead of detecting it:\n"
      "                   " TRACE_FORMAT_NAMES "\n"
      "  --swf-gpus-per-proc R  SWF: a job gets ceil(processors x R) GPUs (1)\n"
      "  --mig-map M      MIG GPUs: a job's instance kind from its gpu_milli\n"
      "                   by compute (slices/7), memory (slots/8) or both\n"
      "                   (default); multi-GPU jobs take 7g per GPU\n"
      "  --mig-requests FILE  explicit MIG requests per job (CSV job,profile,\n"
      "                   gpu_memory_gib,compute_fraction)\n",
      f);
}

typedef struct common_opts {
  const char *cluster, *trace, *policy, *out, *catalog;
  sim_queue_kind queue;
  const char *queue_name;
  uint64_t seed;
  int64_t unknown_us;
  double estimate_factor;
  double mig_fixed, mig_gib, checkpoint;
  int max_moves, max_moves_job, preempt;
  char *pparams[32];
  int npparams;
  double synth_load;
  const char *durations_from;
  sim_mig_map mig_map;       /* --mig-map */
  const char *mig_requests;  /* --mig-requests */
  const char *mix;           /* generate --mix */
  int check, quiet;
  char *prices[64];
  int nprices;
  trace_load_opts load; /* --trace-format, --swf-gpus-per-proc */
} common_opts;

enum {
  OPT_CLUSTER = 1000,
  OPT_TRACE,
  OPT_POLICY,
  OPT_QUEUE,
  OPT_SEED,
  OPT_OUT,
  OPT_UNKNOWN,
  OPT_CATALOG,
  OPT_PRICE,
  OPT_CHECK,
  OPT_QUIET,
  OPT_JOBS,
  OPT_HELP,
  OPT_TRACE_FORMAT,
  OPT_SWF_GPP,
  OPT_ESTIMATE,
  OPT_MIG_COST,
  OPT_MIG_GIB,
  OPT_MAX_MOVES,
  OPT_MAX_MOVES_JOB,
  OPT_PREEMPT,
  OPT_CHECKPOINT,
  OPT_PPARAM,
  OPT_SYNTH_LOAD,
  OPT_DUR_FROM,
  OPT_MIG_MAP,
  OPT_MIG_REQUESTS,
  OPT_MIX
};

static const struct option common_long[] = {
    {"cluster", required_argument, 0, OPT_CLUSTER},
    {"trace", required_argument, 0, OPT_TRACE},
    {"policy", required_argument, 0, OPT_POLICY},
    {"queue", required_argument, 0, OPT_QUEUE},
    {"seed", required_argument, 0, OPT_SEED},
    {"out", required_argument, 0, OPT_OUT},
    {"unknown-duration", required_argument, 0, OPT_UNKNOWN},
    {"estimate-factor", required_argument, 0, OPT_ESTIMATE},
    {"migration-cost", required_argument, 0, OPT_MIG_COST},
    {"migration-cost-per-gib", required_argument, 0, OPT_MIG_GIB},
    {"max-moves", required_argument, 0, OPT_MAX_MOVES},
    {"max-moves-per-job", required_argument, 0, OPT_MAX_MOVES_JOB},
    {"preempt", no_argument, 0, OPT_PREEMPT},
    {"checkpoint-interval", required_argument, 0, OPT_CHECKPOINT},
    {"policy-param", required_argument, 0, OPT_PPARAM},
    {"synthetic-load", required_argument, 0, OPT_SYNTH_LOAD},
    {"durations-from", required_argument, 0, OPT_DUR_FROM},
    {"catalog", required_argument, 0, OPT_CATALOG},
    {"price", required_argument, 0, OPT_PRICE},
    {"check", no_argument, 0, OPT_CHECK},
    {"quiet", no_argument, 0, OPT_QUIET},
    {"jobs", required_argument, 0, OPT_JOBS},
    {"help", no_argument, 0, OPT_HELP},
    {"trace-format", required_argument, 0, OPT_TRACE_FORMAT},
    {"swf-gpus-per-proc", required_argument, 0, OPT_SWF_GPP},
    {"mig-map", required_argument, 0, OPT_MIG_MAP},
    {"mig-requests", required_argument, 0, OPT_MIG_REQUESTS},
    {"mix", required_argument, 0, OPT_MIX},
    {0, 0, 0, 0}};

/* Parses the options every command shares. Returns -1 to continue, or an
 * exit status. allowed: string of accepted OPT_ codes. */
static int parse_common(int argc, char **argv, common_opts *o,
                        const int *allowed, uint64_t *jobs,
                        void (*help)(FILE *)) {
  memset(o, 0, sizeof *o);
  o->queue = SIM_QUEUE_FIFO;
  o->queue_name = "fifo";
  o->seed = 1;
  o->unknown_us = -1;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", common_long, NULL)) != -1) {
    int ok = c == 'h' || c == OPT_HELP;
    for (const int *a = allowed; *a && !ok; a++)
      ok = *a == c;
    if (!ok || c == '?' || c == ':') {
      if (optopt)
        fprintf(stderr, "schedsim %s: bad or missing argument for option\n",
                argv[0]);
      else
        fprintf(stderr, "schedsim %s: unknown option '%s'\n", argv[0],
                argv[optind - 1]);
      help(stderr);
      return 2;
    }
    switch (c) {
    case 'h':
    case OPT_HELP:
      help(stdout);
      return 0;
    case OPT_CLUSTER:
      o->cluster = optarg;
      break;
    case OPT_TRACE:
      o->trace = optarg;
      break;
    case OPT_POLICY:
      o->policy = optarg;
      break;
    case OPT_QUEUE:
      if (sim_queue_parse(optarg, &o->queue)) {
        fprintf(stderr, "schedsim: --queue '%s': expected fifo, skip, "
                        "backfill or priority\n", optarg);
        return 2;
      }
      o->queue_name = optarg;
      break;
    case OPT_SEED:
      if (cli_parse_u64(optarg, &o->seed)) {
        fprintf(stderr, "schedsim: --seed '%s': expected an unsigned "
                        "integer\n", optarg);
        return 2;
      }
      break;
    case OPT_OUT:
      o->out = optarg;
      break;
    case OPT_MIG_COST:
    case OPT_MIG_GIB:
    case OPT_CHECKPOINT: {
      int64_t us;
      if (cli_parse_seconds_us(optarg, &us)) {
        fprintf(stderr, "schedsim: --%s '%s': expected seconds >= 0\n",
                c == OPT_MIG_COST  ? "migration-cost"
                : c == OPT_MIG_GIB ? "migration-cost-per-gib"
                                   : "checkpoint-interval",
                optarg);
        return 2;
      }
      double v = (double)us / 1e6;
      if (c == OPT_MIG_COST)
        o->mig_fixed = v;
      else if (c == OPT_MIG_GIB)
        o->mig_gib = v;
      else
        o->checkpoint = v;
      break;
    }
    case OPT_MAX_MOVES:
    case OPT_MAX_MOVES_JOB: {
      uint64_t v;
      if (cli_parse_u64(optarg, &v) || v < 1 || v > 64) {
        fprintf(stderr, "schedsim: --%s '%s': expected 1..64\n",
                c == OPT_MAX_MOVES ? "max-moves" : "max-moves-per-job",
                optarg);
        return 2;
      }
      if (c == OPT_MAX_MOVES)
        o->max_moves = (int)v;
      else
        o->max_moves_job = (int)v;
      break;
    }
    case OPT_PREEMPT:
      o->preempt = 1;
      break;
    case OPT_SYNTH_LOAD: {
      char *end;
      errno = 0;
      o->synth_load = strtod(optarg, &end);
      if (errno || end == optarg || *end || !isfinite(o->synth_load) ||
          o->synth_load <= 0 || o->synth_load > 1000) {
        fprintf(stderr, "schedsim: --synthetic-load '%s': expected a number "
                        "> 0\n", optarg);
        return 2;
      }
      break;
    }
    case OPT_DUR_FROM:
      o->durations_from = optarg;
      break;
    case OPT_MIG_MAP:
      if (sim_mig_map_parse(optarg, &o->mig_map)) {
        fprintf(stderr, "schedsim: --mig-map '%s': expected compute, memory "
                        "or both\n", optarg);
        return 2;
      }
      break;
    case OPT_MIG_REQUESTS:
      o->mig_requests = optarg;
      break;
    case OPT_MIX:
      o->mix = optarg;
      break;
    case OPT_PPARAM:
      if (o->npparams == 32) {
        fprintf(stderr, "schedsim: too many --policy-param options\n");
        return 2;
      }
      o->pparams[o->npparams++] = optarg;
      break;
    case OPT_ESTIMATE: {
      char *end;
      errno = 0;
      o->estimate_factor = strtod(optarg, &end);
      if (errno || end == optarg || *end || !isfinite(o->estimate_factor) ||
          o->estimate_factor <= 0 || o->estimate_factor > 1e6) {
        fprintf(stderr, "schedsim: --estimate-factor '%s': expected a "
                        "number > 0\n", optarg);
        return 2;
      }
      break;
    }
    case OPT_UNKNOWN:
      if (cli_parse_seconds_us(optarg, &o->unknown_us)) {
        fprintf(stderr, "schedsim: --unknown-duration '%s': expected "
                        "seconds >= 0\n", optarg);
        return 2;
      }
      break;
    case OPT_CATALOG:
      o->catalog = optarg;
      break;
    case OPT_PRICE:
      if (o->nprices == 64) {
        fprintf(stderr, "schedsim: too many --price options\n");
        return 2;
      }
      o->prices[o->nprices++] = optarg;
      break;
    case OPT_CHECK:
      o->check = 1;
      break;
    case OPT_QUIET:
      o->quiet = 1;
      break;
    case OPT_JOBS:
      if (cli_parse_u64(optarg, jobs) || *jobs == 0 || *jobs > UINT32_MAX - 1) {
        fprintf(stderr, "schedsim: --jobs '%s': expected 1..%u\n", optarg,
                UINT32_MAX - 1);
        return 2;
      }
      break;
    case OPT_TRACE_FORMAT:
      o->load.format = trace_format_from_name(optarg);
      if (o->load.format == TRACE_FMT_UNKNOWN) {
        fprintf(stderr, "schedsim: --trace-format '%s': expected one of "
                        TRACE_FORMAT_NAMES "\n", optarg);
        return 2;
      }
      break;
    case OPT_SWF_GPP:
      if (cli_parse_positive(optarg, &o->load.swf_gpus_per_proc)) {
        fprintf(stderr, "schedsim: --swf-gpus-per-proc '%s': expected a "
                        "number > 0\n", optarg);
        return 2;
      }
      break;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "schedsim %s: unexpected argument '%s'\n", argv[0],
            argv[optind]);
    help(stderr);
    return 2;
  }
  return -1;
}

int cmd_run(int argc, char **argv) {
  static const int allowed[] = {OPT_CLUSTER, OPT_TRACE, OPT_POLICY,
                                OPT_QUEUE,   OPT_SEED,  OPT_OUT,
                                OPT_UNKNOWN, OPT_CATALOG, OPT_PRICE,
                                OPT_CHECK,   OPT_QUIET, OPT_TRACE_FORMAT,
                                OPT_SWF_GPP, OPT_ESTIMATE, OPT_MIG_COST,
                                OPT_MIG_GIB, OPT_MAX_MOVES, OPT_MAX_MOVES_JOB,
                                OPT_PREEMPT, OPT_CHECKPOINT, OPT_PPARAM,
                                OPT_SYNTH_LOAD, OPT_DUR_FROM, OPT_MIG_MAP,
                                OPT_MIG_REQUESTS, 0};
  common_opts o;
  uint64_t jobs = 0;
  int st = parse_common(argc, argv, &o, allowed, &jobs, run_usage);
  if (st >= 0)
    return st;
  if (!o.cluster || !o.trace || !o.policy) {
    fprintf(stderr, "schedsim run: --cluster, --trace and --policy are "
                    "required\n");
    run_usage(stderr);
    return 2;
  }
  char err[ERRLEN] = "";
  gpu_catalog cat;
  sim_cluster sc;
  trace t;
  trace_init(&t);
  if (cli_load_catalog(&cat, o.catalog, o.prices, o.nprices, err,
                       sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    return cli_load_status(err);
  }
  int status = 2;
  if (cli_load_cluster(&sc, o.cluster, &cat, o.check, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    catalog_free(&cat);
    return cli_load_status(err);
  }
  sim_options opt = {0};
  opt.policy = o.policy;
  opt.queue = o.queue;
  opt.seed = o.seed;
  opt.unknown_duration_us = o.unknown_us;
  opt.estimate_factor = o.estimate_factor;
  opt.migration_fixed_s = o.mig_fixed;
  opt.migration_per_gib_s = o.mig_gib;
  opt.max_moves = o.max_moves;
  opt.max_moves_per_job = o.max_moves_job;
  opt.preempt = o.preempt;
  opt.checkpoint_s = o.checkpoint;
  opt.policy_params = o.pparams;
  opt.npolicy_params = o.npparams;
  opt.mig_map = o.mig_map;
  opt.mig_requests = o.mig_requests;
  run_meta meta = {"replay", o.policy, o.queue_name, o.seed, o.trace,
                   sc.name, sc.nodes, sc.gpus};
  sim_result res;
  memset(&res, 0, sizeof res);
  replay_notes notes;
  memset(&notes, 0, sizeof notes);
  const trace *facts = NULL; /* path, specs, skipped of what was replayed */
  double t0 = sim_now_s();
  /* A trace file is streamed: read twice (validation, then replay) in
   * memory bounded by the running and queued jobs. It is loaded whole when
   * it is generated or rewritten in memory (builtin:default, synthetic
   * times), not in submit order, or replayed on MIG GPUs. */
  trace_stream *ts = NULL;
  int streamed = 0;
  if (strcmp(o.trace, "builtin:default") != 0 && !(o.synth_load > 0) &&
      !o.durations_from) {
    trace_error te;
    te.msg[0] = 0;
    if (trace_stream_open(&ts, o.trace, &o.load, &te)) {
      fprintf(stderr, "schedsim: %s\n", te.msg);
      status = cli_load_status(te.msg);
      goto out;
    }
    const trace *m = trace_stream_meta(ts);
    if (!m->has_times)
      fprintf(stderr, "note: %s has no times: every job arrives at 0%s\n",
              m->path,
              o.unknown_us >= 0 ? " and runs for --unknown-duration" : "");
    status = cli_replay_ex(&sc, &cat, NULL, ts, &opt, o.out, &meta, &res,
                           o.quiet, &notes);
    if (status == CLI_REPLAY_LOAD_WHOLE) {
      if (!o.quiet)
        fprintf(stderr, "note: %s; loading the trace whole\n",
                notes.why_whole);
      trace_stream_close(ts);
      ts = NULL;
    } else {
      streamed = 1;
      facts = m;
    }
  }
  if (!streamed) {
    if (cli_load_trace_as(&t, o.trace, o.seed, &o.load, err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      status = cli_load_status(err);
      goto out;
    }
    if (o.synth_load > 0 || o.durations_from) {
      /* Synthetic times (e.g. for the 5-column multigpu lists): durations
       * drawn from another trace, Poisson arrivals at the given load. */
      if (!(o.synth_load > 0) || !o.durations_from) {
        fprintf(stderr, "schedsim run: --synthetic-load and --durations-from "
                        "go together\n");
        status = 2;
        goto out;
      }
      trace from;
      trace_init(&from);
      trace_error te;
      if (trace_load(&from, o.durations_from, &te) ||
          trace_synthetic_times(&t, &from, o.synth_load, sc.gpus, o.seed,
                                &te)) {
        fprintf(stderr, "schedsim: %s\n", te.msg);
        trace_free(&from);
        status = 2;
        goto out;
      }
      trace_free(&from);
      fprintf(stderr, "note: %s: synthetic Poisson arrivals at %.2f x the "
                      "cluster's GPUs, durations drawn from %s (seed %llu)\n",
              t.path, o.synth_load, o.durations_from,
              (unsigned long long)o.seed);
    } else if (!t.has_times && !ts) {
      fprintf(stderr,
              "note: %s has no times: every job arrives at 0%s\n", t.path,
              o.unknown_us >= 0 ? " and runs for --unknown-duration" : "");
    }
    t0 = sim_now_s();
    status = cli_replay_ex(&sc, &cat, &t, NULL, &opt, o.out, &meta, &res,
                           o.quiet, &notes);
    facts = &t;
  }
  double wall = sim_now_s() - t0;
  if (status == 0) {
    cli_note_skipped(facts);
    warn_never(&notes, &res);
    print_summary(stdout, &meta, &res);
    printf("  wall time %.3f s, %.0f events/s\n", wall,
           wall > 0 ? (double)res.events / wall : 0.0);
    if (o.out)
      printf("  outputs in %s/ (summary.json, jobs.csv, timeline.csv)\n",
             o.out);
  }
  sim_result_free(&res);
out:
  trace_stream_close(ts);
  trace_free(&t);
  sim_cluster_free(&sc);
  catalog_free(&cat);
  return status;
}

/* ------------------------------------------------------------- policies */

int cmd_policies(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || !strcmp(argv[1], "-h"))) {
    puts("usage: schedsim policies\n\nLists the placement policies.");
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "schedsim policies: unexpected argument '%s'\n", argv[1]);
    return 2;
  }
  lsched_registry *r;
  if (lsched_registry_create(&r, NULL) || lsched_registry_add_builtins(r)) {
    fprintf(stderr, "schedsim: cannot create the policy registry\n");
    return 1;
  }
  for (size_t i = 0; i < lsched_registry_count(r); i++) {
    const lsched_policy_ops *p = lsched_registry_at(r, i);
    printf("%-16s %s\n", p->name, p->description ? p->description : "");
  }
  lsched_registry_destroy(r);
  return 0;
}

/* --------------------------------------------------------------- models */

int cmd_models(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || !strcmp(argv[1], "-h"))) {
    puts("usage: schedsim models\n\nLists the built-in GPU catalog.");
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "schedsim models: unexpected argument '%s'\n", argv[1]);
    return 2;
  }
  char err[ERRLEN];
  gpu_catalog cat;
  if (catalog_load_default(&cat, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    return 1;
  }
  printf("%-16s %6s %7s %5s %4s %9s  %s\n", "model", "GiB", "TFLOPS", "TDP",
         "MIG", "$/GPU-h", "price source (date)");
  for (int i = 0; i < cat.n; i++) {
    const gpu_model_info *m = &cat.models[i];
    char price[32];
    if (m->has_price)
      snprintf(price, sizeof price, "%.3f", m->price_per_gpu_hour);
    else
      snprintf(price, sizeof price, "-");
    printf("%-16s %6.0f %7.1f %5.0f %4s %9s  %s (%s)\n", m->name,
           m->memory_gib, m->bf16_tflops, m->tdp_w, m->mig ? "yes" : "no",
           price, m->price_source, m->price_date[0] ? m->price_date : "-");
    if (m->nmig) {
      /* MIG profiles: name (kind, GiB, SMs; * = unverified values). */
      printf("%-16s  MIG:", "");
      for (int k = 0; k < m->nmig; k++) {
        const gpu_mig_profile *p = &m->mig_profiles[k];
        printf(" %s(%s %.2fGiB %dSM%s)", p->name, lsched_mig_kind_name(p->kind),
               p->memory_gib, p->sm_count, p->verified ? "" : "*");
      }
      putchar('\n');
    }
  }
  catalog_free(&cat);
  return 0;
}

/* ------------------------------------------------------------- generate */

static void generate_usage(FILE *f) {
  fputs("usage: schedsim generate --out FILE [--jobs N] [--seed N] "
        "[--mix FILE]\n"
        "\n"
        "Writes the synthetic default workload (Poisson arrivals, lognormal\n"
        "durations, a mix of whole- and fractional-GPU shapes; see\n"
        "traces/synth.c) as an Alibaba pod list.\n"
        "  --mix FILE   JSON workload mix instead of the default one: request\n"
        "               shapes with weights, arrival rate, durations (README)\n",
        f);
}

int cmd_generate(int argc, char **argv) {
  static const int allowed[] = {OPT_OUT, OPT_SEED, OPT_JOBS, OPT_MIX, 0};
  common_opts o;
  uint64_t jobs = 0;
  int st = parse_common(argc, argv, &o, allowed, &jobs, generate_usage);
  if (st >= 0)
    return st;
  if (!o.out) {
    fprintf(stderr, "schedsim generate: --out is required\n");
    generate_usage(stderr);
    return 2;
  }
  synth_params p;
  synth_default_params(&p);
  synth_shape *mix_shapes = NULL;
  if (o.mix) {
    char merr[ERRLEN];
    if (synth_mix_load(o.mix, &p, &mix_shapes, merr, sizeof merr)) {
      fprintf(stderr, "schedsim: %s\n", merr);
      return 2;
    }
  }
  p.seed = o.seed;
  if (jobs)
    p.jobs = jobs;
  /* Jobs are drawn and written one at a time, so any --jobs runs in
   * constant memory; the file appears under its name only when complete.
   * Bad parameters and impossible times exit 2, write errors 1. */
  trace_error te;
  synth_gen *g;
  if (synth_gen_open(&g, &p, &te)) {
    free(mix_shapes);
    fprintf(stderr, "schedsim: %s\n", te.msg);
    return 2;
  }
  trace_writer *w;
  if (trace_writer_open(&w, o.out, &te)) {
    synth_gen_close(g);
    free(mix_shapes);
    fprintf(stderr, "schedsim: %s\n", te.msg);
    return 1;
  }
  job_record j;
  const char *name;
  size_t n = 0;
  int grc, rc = 0;
  while ((grc = synth_gen_next(g, &j, &name, &te)) == 1) {
    if ((rc = trace_writer_put(w, &j, name, NULL, &te)) != 0)
      break;
    n++;
  }
  synth_gen_close(g);
  free(mix_shapes);
  if (grc < 0 || rc != 0) {
    trace_writer_abort(w);
    fprintf(stderr, "schedsim: %s\n", te.msg);
    return grc < 0 ? 2 : 1;
  }
  if (trace_writer_commit(w, &te)) {
    fprintf(stderr, "schedsim: %s\n", te.msg);
    return 1;
  }
  printf("wrote %zu jobs to %s\n", n, o.out);
  return 0;
}
