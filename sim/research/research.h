/*
 * The research workflow on top of single replays: `schedsim compare`
 * (several policies, queues and clusters on one trace), `schedsim sweep`
 * (a grid from a JSON manifest, resumable), the forked worker pool they and
 * `schedsim fill` use,
 * the per-run metrics row both write, and the gnuplot plots.
 *
 * Every run is an ordinary cli_replay in a forked child, so its outputs are
 * byte-identical to `schedsim run` with the same arguments; the parent only
 * merges the runs' summary.json files into one table.
 */
#ifndef SCHEDSIM_RESEARCH_H
#define SCHEDSIM_RESEARCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "metrics.h"

int cmd_compare(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
/* schedsim rightsize (rightsize.c): one trace on several clusters, the
 * cheapest per unit of work within a queue-time bound. */
int cmd_rightsize(int argc, char **argv);
/* Loads and checks a sweep manifest and expands its grid without loading
 * inputs or running anything (the fuzz target and tests use it). 0 with
 * *nruns set, or -1 with "FILE: ..." in err. */
int sweep_manifest_check(const char *file, size_t *nruns, char *err,
                         size_t errlen);

/* ------------------------------------------------------------ pool.c */

/* Progress of one task, in memory shared between a worker and the parent. */
typedef struct pool_slot {
  _Atomic int64_t now_us;  /* simulated time */
  _Atomic uint64_t events; /* events processed */
  _Atomic uint64_t done;   /* jobs finished */
  _Atomic uint64_t total;  /* jobs in the trace (0 until loaded) */
  /* pool_run_results: where the task writes its result (result_size
   * bytes, zeroed, shared with the parent); NULL with pool_run. */
  void *result;
} pool_slot;

/* Runs task i in a forked child; returns its exit status. */
typedef int (*pool_task_fn)(size_t i, pool_slot *slot, void *user);

/*
 * Runs tasks 0..n-1 in forked children, at most `workers` at a time, and
 * stores each exit status in status[i] (128 + signal number for a child
 * killed by a signal, which is also reported on stderr). When show is set
 * (and stderr is a terminal), an aggregate progress line labelled `what`
 * is drawn on stderr once the tasks have run for a second. 0, or -1 when
 * no worker could be started (message on stderr; unstarted tasks get 1).
 */
int pool_run(size_t n, int workers, pool_task_fn fn, void *user, int *status,
             int show, const char *what);

/*
 * pool_run for tasks that return a value as well as a status (fill's
 * seeds): task i writes result_size bytes at slot->result, and once every
 * task has ended they are copied to results[i] (zeros for a task that
 * wrote nothing), so the caller reads them in task order however many
 * workers ran them.
 */
int pool_run_results(size_t n, int workers, pool_task_fn fn, void *user,
                     int *status, int show, const char *what, void *results,
                     size_t result_size);

/* sim_options.progress for a task: copies the engine's counters into the
 * pool_slot given as user. */
void pool_progress_cb(int64_t now_us, uint64_t events, size_t done,
                      size_t total, void *user);

/* Online CPUs (at least 1): the default number of workers. */
int pool_default_workers(void);

/* ---------------------------------------------------------- compare.c */

/* One pooled replay as compare and rightsize run it (in a forked worker):
 * the cluster's synthetic times (--synthetic-load) on the worker's copy of
 * t, the run options of rc with this policy and queue, progress into the
 * task's pool_slot, outputs into dir (cli_replay: byte-identical to
 * `schedsim run`). who prefixes an error ("schedsim compare: run X"). */
struct run_config;
struct sim_cluster;
typedef struct research_replay {
  const struct run_config *rc;
  struct trace *t;
  const struct trace *from; /* --durations-from, or NULL */
  struct sim_cluster *cluster;
  const struct gpu_catalog *cat;
  const char *policy;
  int queue; /* sim_queue_kind */
  const char *queue_name;
  uint64_t seed;
  const char *trace_path;
  const char *dir;
  const char *who;
} research_replay;
/* The run's status (0, or the cli_replay / option error status). */
int research_pool_replay(const research_replay *rr, pool_slot *slot);

/* What compare and rightsize load after the catalog, each checked before
 * any run: clusters[0..ncl) into scs (*nloaded of them, for freeing), the
 * trace into t and, with --synthetic-load, --durations-from's into from;
 * prints the trace's notes (skipped jobs, synthetic times or no times, the
 * speed model) and refuses a job without a duration unless
 * --unknown-duration or synthetic times give it one. 0, or the exit
 * status after the error is printed. */
struct gpu_catalog;
int research_load_inputs(const struct run_config *o, const char *trace_path,
                         const struct gpu_catalog *cat, char **clusters,
                         int ncl, struct sim_cluster *scs, int *nloaded,
                         struct trace *t, struct trace *from);

/* --------------------------------------------------------- runtable.c */

/* The numbers of one run's summary.json that the merged tables carry:
 * every metric row of the metric table (sim/output/metrics.def), as
 * m->num[METRIC_COST_TOTAL] etc., m->has[...] = 0 for an optional key the
 * summary lacks. */
typedef metric_values run_metrics;

/* Reads RUN_DIR/summary.json. 0, or -1 with "PATH: ..." in err. */
int run_metrics_read(const char *run_dir, run_metrics *m, char *err,
                     size_t errlen);
/* The metric columns of compare.csv and sweep.csv (comma-separated, no
 * newline), and one row of them: the table's columns, the 24 original ones
 * first, then the others named by their summary.json path (metrics.h). */
void run_metrics_header(FILE *f);
void run_metrics_row(FILE *f, const run_metrics *m);
/* A label for file names and plots from a path: the base name without
 * ".gz" and one extension, every byte outside [A-Za-z0-9._-] replaced by
 * '-' ("builtin:default" -> "builtin-default"). */
void research_label(char *out, size_t size, const char *path);
/* CSV reading (plot.c): one record (quoted fields may span lines) into
 * *buf (1, 0 at end of file, -1 out of memory); field k (0-based) of a
 * record, unquoted, into out (0, or -1 when the record has fewer). */
int research_csv_record(FILE *f, char **buf, size_t *cap);
int research_csv_field(const char *rec, int k, char *out, size_t size);
/* Removes DIR and the regular files in it (one level). 0 or -1. */
int research_rmdir(const char *dir);
/* 1 if path exists. */
int research_exists(const char *path);

/* ------------------------------------------------------------ plot.c */

typedef struct plot_run {
  const char *label; /* legend and data-file name */
  const char *dir;   /* the run's output directory */
  double cost_total; /* USD */
  double cost_idle;
  const char *group;    /* its panel (cluster, queue); NULL: one panel */
  const char *policy;   /* its colour; NULL: the label */
  const run_metrics *m; /* bars and line selection; NULL: none */
} plot_run;

/*
 * Writes OUTDIR/plots/: data files (data/<label>.util, data/<label>.qcdf,
 * data/cost.dat, data/bars_<panel>.dat), plots.gp, and, through gnuplot,
 * bars, utilization, queue_cdf and cost as PNG and SVG: one panel per
 * group, a colour per policy (the same in every plot), at most six lines
 * per panel (see plot.c). Returns 0 when the plots were made, 1 when
 * gnuplot is not on PATH (the warning "gnuplot not found: plots skipped"
 * is printed; data and script are still written), -1 with err set on
 * failure (I/O, or gnuplot failed: its output is in plots/gnuplot.log).
 */
int plot_runs(const char *outdir, const plot_run *runs, size_t n, char *err,
              size_t errlen);

/* For other plots (rightsize.c): a gnuplot string literal; the terminal
 * lines of a script's `do for [fmt in "png svg"]` loop (w x h pixels);
 * and running PLOTDIR/SCRIPT with gnuplot, checking that each of the
 * nouts files PLOTDIR/OUTS[i].{png,svg} was written. The same returns as
 * plot_runs: 0, 1 without gnuplot (warning printed), -1 with err set. */
void plot_gp_str(FILE *f, const char *s);
void plot_gp_terminal(FILE *f, int w, int h);
int plot_run_script(const char *plotdir, const char *script,
                    const char *const *outs, int nouts, char *err,
                    size_t errlen);

#endif
