/* The schedsim subcommands (see cli.h). */
#include "cli.h"
#include "builtin_clusters.h"
#include "clock.h"
#include "fileout.h"
#include "options.h"
#include "output.h"
#include "synth_mix.h"

#include <errno.h>
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

/* An input that may be a pipe, FIFO or "-" (issue #17): *path is replaced
 * by a spool's name when it is one (read once, in $TMPDIR; the loaders
 * open a file twice, to sniff and to read). 0, or -1 with err set. */
static int spool_open(const char **path, FILE **spool, char *name,
                      size_t namelen, char *err, size_t errlen) {
  *spool = NULL;
  if (!fileout_is_pipe(*path))
    return 0;
  if (!(*spool = fileout_spool(*path))) {
    snprintf(err, errlen, "%s: cannot read the pipe into $TMPDIR: %s", *path,
             strerror(errno));
    return -1;
  }
  fileout_spool_path(*spool, name, namelen);
  *path = name;
  return 0;
}

/* Closes the spool; a message names the input as the user gave it. */
static void spool_close(FILE *spool, const char *name, const char *given,
                        char *err, size_t errlen) {
  if (!spool)
    return;
  fclose(spool);
  if (err[0])
    fileout_rename_in(err, errlen, name, given);
}

int cli_load_catalog(gpu_catalog *cat, const char *path, char **prices,
                     int nprices, char *err, size_t errlen) {
  FILE *spool = NULL;
  char name[32];
  const char *given = path;
  err[0] = 0;
  if (path && spool_open(&path, &spool, name, sizeof name, err, errlen))
    return -1;
  int rc = path ? catalog_load_file(cat, path, err, errlen)
                : catalog_load_default(cat, err, errlen);
  spool_close(spool, name, given, err, errlen);
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
  if (strncmp(path, "builtin:", 8) == 0) {
    int unknown;
    char *json = sim_builtin_cluster_json(path, &unknown);
    if (!json) {
      if (unknown) {
        snprintf(err, errlen, "%s: unknown built-in cluster (available:",
                 path);
        for (size_t i = 0; i < sim_builtin_cluster_count(); i++) {
          size_t l = strlen(err);
          snprintf(err + l, errlen - l, " %s", sim_builtin_cluster_name(i));
        }
        size_t l = strlen(err);
        snprintf(err + l, errlen - l, ")");
      } else {
        snprintf(err, errlen, "out of memory");
      }
      return -1;
    }
    int rc = sim_cluster_from_json(sc, json, path, cat, check, err, errlen);
    free(json);
    return rc;
  }
  FILE *spool = NULL;
  char name[32];
  const char *given = path;
  err[0] = 0;
  if (spool_open(&path, &spool, name, sizeof name, err, errlen))
    return -1;
  int rc = sim_cluster_load(sc, path, cat, check, err, errlen);
  if (spool && rc == 0 && sc->name && strcmp(sc->name, name + 8) == 0) {
    /* a node list is named after its file: not after the spool's fd */
    const char *base = strrchr(given, '/');
    char *n = strdup(strcmp(given, "-") == 0 ? "stdin" : base ? base + 1 : given);
    if (n) {
      free(sc->name);
      sc->name = n;
    }
  }
  spool_close(spool, name, given, err, errlen);
  return rc;
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
    out_clean_stale(outdir); /* temporary files of killed runs */
    snprintf(path, sizeof path, "%s/timeline.csv", outdir);
    if (out_open(&tl, path, err, sizeof err))
      goto io_fail;
    opt.timeline = tl.f;
    snprintf(path, sizeof path, "%s/jobs.csv", outdir);
    if (out_open(&jobs, path, err, sizeof err))
      goto io_fail;
    sink.jobs = jobs.f;
    write_jobs_header(jobs.f,
                      sc->ncloud > 0 || opt.burst != SIM_BURST_NEVER);
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
    /* The marker first: a stop between the renames below leaves it, so
     * that no reader takes the mix of old and new files for results. */
    if (out_mark_incomplete(outdir, err, sizeof err))
      goto io_fail;
    if (out_commit(&tl, err, sizeof err))
      goto io_fail;
    if (out_commit(&jobs, err, sizeof err))
      goto io_fail;
    snprintf(path, sizeof path, "%s/summary.json", outdir);
    if (write_summary_json(path, meta, res, err, sizeof err))
      goto io_fail;
    if (out_mark_complete(outdir, err, sizeof err))
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

int cmd_run(int argc, char **argv) {
  run_config o;
  int npos;
  int st = cli_parse(C_RUN, argc, argv, &o, NULL, 0, &npos);
  if (st >= 0)
    return st;
  if (!o.ncluster || !o.trace || !o.npolicy) {
    fprintf(stderr, "schedsim run: --cluster, --trace and --policy are "
                    "required\n");
    cli_help(C_RUN, stderr);
    return 2;
  }
  const char *cluster = o.cluster[0], *policy = o.policy[0];
  const char *queue_name = run_config_queue(&o);
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
  if (cli_load_cluster(&sc, cluster, &cat, o.check, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    catalog_free(&cat);
    return cli_load_status(err);
  }
  sim_options opt;
  run_config_sim_options(&o, &opt);
  run_meta meta = {"replay", policy, queue_name, o.seed, o.trace,
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
      status =
          run_config_synthetic_times(&o, &t, NULL, sc.gpus, err, sizeof err);
      if (status) {
        fprintf(stderr, "schedsim%s: %s\n",
                o.given[OPT_SYNTH_LOAD] && o.given[OPT_DUR_FROM] ? ""
                                                                 : " run",
                err);
        goto out;
      }
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
    char sn[512];
    sim_speed_note(&opt, facts, sn, sizeof sn);
    if (sn[0] && !o.quiet)
      fprintf(stderr, "note: %s\n", sn);
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
  run_config o;
  int npos;
  int st = cli_parse(C_POLICIES, argc, argv, &o, NULL, 0, &npos);
  if (st >= 0)
    return st;
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
  run_config o;
  int npos;
  int st = cli_parse(C_MODELS, argc, argv, &o, NULL, 0, &npos);
  if (st >= 0)
    return st;
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

int cmd_generate(int argc, char **argv) {
  run_config o;
  int npos;
  int st = cli_parse(C_GENERATE, argc, argv, &o, NULL, 0, &npos);
  if (st >= 0)
    return st;
  uint64_t jobs = o.jobs;
  if (!o.out) {
    fprintf(stderr, "schedsim generate: --out is required\n");
    cli_help(C_GENERATE, stderr);
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
