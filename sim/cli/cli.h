/* The schedsim subcommands and the loading steps they share. */
#ifndef SCHEDSIM_CLI_H
#define SCHEDSIM_CLI_H

#include <stdio.h>

#include "catalog.h"
#include "cluster_spec.h"
#include "engine.h"
#include "output.h"
#include "trace.h"

int cmd_run(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_policies(int argc, char **argv);
int cmd_models(int argc, char **argv);

/* Loads the catalog (default when path is NULL) and applies --price. */
int cli_load_catalog(gpu_catalog *cat, const char *path, char **prices,
                     int nprices, char *err, size_t errlen);
/* Loads a cluster file, or the built-in one for "builtin:default". */
int cli_load_cluster(sim_cluster *sc, const char *path,
                     const gpu_catalog *cat, int check, char *err,
                     size_t errlen);
/* Loads a trace file, or generates the default workload for
 * "builtin:default" with the given seed. */
int cli_load_trace(trace *t, const char *path, uint64_t seed, char *err,
                   size_t errlen);
/* cli_load_trace with trace_load_ex options (lo NULL = detect). */
int cli_load_trace_as(trace *t, const char *path, uint64_t seed,
                      const trace_load_opts *lo, char *err, size_t errlen);
/* The exit status of a failed load: 1 when its message says it ran out of
 * memory (a failure of the run, not of its input), else 2 (bad input). */
int cli_load_status(const char *err);
/* Strict number in (0, 1e6]; 0 or -1. */
int cli_parse_positive(const char *s, double *out);
/* Strict unsigned integer (digits only). 0, or -1. */
int cli_parse_u64(const char *s, uint64_t *out);
/* Seconds >= 0 (decimals allowed, at most 9.2e12) into microseconds. 0 or
 * -1. */
int cli_parse_seconds_us(const char *s, int64_t *out);
/* "note: PATH: N records skipped (why)" on stderr when a reader skipped
 * records. */
void cli_note_skipped(const trace *t);
/* One replay with outputs in outdir (NULL: none): timeline.csv and
 * jobs.csv written as the replay goes, summary.json at the end, each
 * under a temporary name until complete. res gets the totals (its per-job
 * arrays stay NULL: jobs go to jobs.csv). Returns an exit status. */
int cli_replay(sim_cluster *sc, const gpu_catalog *cat, const trace *t,
               const sim_options *base, const char *outdir, run_meta *meta,
               sim_result *res, int quiet);

/* What a replay tells `run` besides its results. */
#define REPLAY_NOTES_NEVER 5
typedef struct replay_notes {
  int nnever;                          /* first jobs that can never start */
  char never[REPLAY_NOTES_NEVER][512];
  char why_whole[1024];                /* why a stream was not replayed */
} replay_notes;

/* cli_replay of a loaded trace t or a stream ts (the other NULL); notes
 * may be NULL. CLI_REPLAY_LOAD_WHOLE: ts cannot be streamed (not in submit
 * order, MIG GPUs; notes->why_whole says which): load it and call again. */
#define CLI_REPLAY_LOAD_WHOLE 100
int cli_replay_ex(sim_cluster *sc, const gpu_catalog *cat, const trace *t,
                  trace_stream *ts, const sim_options *base,
                  const char *outdir, run_meta *meta, sim_result *res,
                  int quiet, replay_notes *notes);

#endif
