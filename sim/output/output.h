/*
 * Machine outputs of a run: summary.json, jobs.csv, timeline.csv (written
 * by the engine). Every file is written under a temporary name in the same
 * directory and renamed into place only when complete, so a results file is
 * never left half-written under its final name.
 */
#ifndef SCHEDSIM_OUTPUT_H
#define SCHEDSIM_OUTPUT_H

#include <stdio.h>

#include "engine.h"
#include "fileout.h"
#include "jsonutil.h"

typedef struct run_meta {
  const char *mode;    /* "replay" */
  const char *policy;
  const char *queue;
  unsigned long long seed;
  const char *trace;   /* path */
  const char *cluster; /* cluster name */
  int nodes, gpus;
} run_meta;

/* A file being written: FILE on "<path>.tmp.<pid>", renamed on commit
 * (the atomic file of traces/fileout.h, with the simulator's messages). */
typedef atomic_file out_file;

/* 0, or -1 with "PATH: cannot write: ..." in err. */
int out_open(out_file *o, const char *path, char *err, size_t errlen);
/* Flushes, closes and renames; 0, or -1 (the temporary file is removed). */
int out_commit(out_file *o, char *err, size_t errlen);
/* Closes and removes the temporary file. */
void out_abort(out_file *o);

/*
 * A results directory is all old or all new (issue #17): its files are
 * renamed into place one by one, so while they are, DIR holds the marker
 * OUT_INCOMPLETE, removed once the last one is in place. Every reader of
 * a results directory (compare, sweep, plot) refuses (or redoes) one that
 * holds it; a run killed between its renames leaves it, and the next run
 * into DIR replaces it. Leftover temporary files of killed runs
 * (NAME.tmp.PID of a process that no longer exists) are removed by the
 * next run into DIR (out_clean_stale).
 */
#define OUT_INCOMPLETE ".schedsim-incomplete"
int out_mark_incomplete(const char *dir, char *err, size_t errlen);
int out_mark_complete(const char *dir, char *err, size_t errlen);
/* 1 when dir does not hold the marker. */
int out_dir_complete(const char *dir);
void out_clean_stale(const char *dir);

/* Creates DIR (and parents) if missing; 0 or -1 with err. */
int out_mkdir(const char *dir, char *err, size_t errlen);

/* Prints the JSON object o (taking ownership: it is freed, NULL allowed)
 * into PATH atomically, with a final newline. 0, or -1 with err set ("PATH:
 * out of memory" when o or any member could not be allocated since the last
 * json_alloc_failed() call). */
int out_write_json(const char *path, cJSON *o, char *err, size_t errlen);

/* summary.json of a replay: every row of the metric table (metrics.def)
 * that the run has, in table order. 0, or -1 with err set. */
int write_summary_json(const char *path, const run_meta *m,
                       const sim_result *r, char *err, size_t errlen);
/* The summary `schedsim run` prints (the metric table's SUM rows). */
void print_summary(FILE *f, const run_meta *m, const sim_result *r);
/* jobs.csv (README "Outputs"): the header line, and the row of one job as
 * the engine hands it to sim_options.on_job. Rows come in the order the
 * jobs' outcomes became final, so a streamed replay writes each as it
 * happens. */
/* jobs.csv's header; cloud: with the site and cloud_cost_usd columns
 * (runs with cloud sites or --burst; cloud.c). */
void write_jobs_header(FILE *f, int cloud);
void write_job_row(FILE *f, const sim_cluster *sc, const sim_job_out *o);

#endif
