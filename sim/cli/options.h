/*
 * The option table (options.def) and the one parser and help generator
 * every schedsim command uses, after git's parse-options: a command
 * declares nothing but its bit in the table's command sets; parsing,
 * validation, error messages, `--help`, sweep manifest parameters and
 * `schedsim options` all come from the same rows.
 *
 * Every value lands in one run_config: the fields a replay needs are
 * turned into sim_options by run_config_sim_options, so an option that
 * changes a run means the same in run, compare, demo and a sweep manifest.
 */
#ifndef SCHEDSIM_OPTIONS_H
#define SCHEDSIM_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"
#include "trace.h"

/* Commands, as bits of an option's command set. */
enum {
  C_RUN = 1 << 0,
  C_COMPARE = 1 << 1,
  C_SWEEP = 1 << 2,
  C_FILL = 1 << 3,
  C_DEMO = 1 << 4,
  C_GENERATE = 1 << 5,
  C_POLICIES = 1 << 6,
  C_MODELS = 1 << 7,
  C_RIGHTSIZE = 1 << 8,
  C_ALL = (1 << 9) - 1,
  /* compare and rightsize: every option that changes a run (or a list of
   * clusters) is in both */
  C_MULTI = C_COMPARE | C_RIGHTSIZE
};

/* Row flags (options.def explains them). */
enum { OF_SPLIT = 1, OF_UNIQUE = 2, OF_PATH = 4 };

/* Value types. */
typedef enum cli_kind {
  K_FLAG,
  K_UINT,
  K_NUM,
  K_SECS,
  K_SECS_US,
  K_STR,
  K_ENUM,
  K_LIST,
  K_HELP
} cli_kind;

#define CLI_MAX_LIST 64

/* Option ids: OPT_<ID> for every row, in table order. */
enum {
#define OPT(id, ...) OPT_##id,
#include "options.def"
#undef OPT
  OPT__COUNT
};

/* --estimates: the source, F for factor:F, the model, MAX_S and P (0
 * when not given) for model:NAME[:MAX_S[:P]]. */
typedef struct cli_estimates {
  sim_estimates kind;
  double factor;
  const struct sim_est_model *model;
  int64_t max_s;
  double max_pct;
} cli_estimates;

/* --burst: SIM_BURST_* and its T or K. */
typedef struct cli_burst {
  int kind;
  double param;
} cli_burst;

/* Everything the options of any command set. */
typedef struct run_config {
  const char *trace, *out, *catalog, *durations_from, *mig_requests, *mix,
      *seeds, *emit_slurm, *speed_table, *measured_on, *class_mix;
  const char *preemptible, *slo; /* --preemptible, --slo */
  uint64_t max_preemptions;      /* --max-preemptions (0: default) */
  int speed; /* --speed: SIM_SPEED_* (default catalog) */
  char *cluster[CLI_MAX_LIST];
  int ncluster;
  char *policy[CLI_MAX_LIST];
  int npolicy;
  char *queue[CLI_MAX_LIST];
  int nqueue;
  char *pparams[32];
  int npparams;
  char *prices[64];
  int nprices;
  uint64_t seed, max_moves, max_moves_job, workers, jobs, task, slurm_max;
  int64_t unknown_us;
  double estimate_factor, mig_fixed, mig_gib, checkpoint, synth_load, tune;
  double energy_price; /* --energy-price */
  cli_burst burst;     /* --burst (default never) */
  double spot_rate;    /* --spot-rate (-1: not given: on-demand only) */
  const char *spot_trace; /* --spot-trace */
  double restart_overhead, deadline_slack;
  uint64_t queue_cap;  /* --queue-cap (0: none) */
  double max_queue_p95; /* rightsize --max-queue-p95 (seconds; given[]) */
  int preempt, check, quiet, no_plots, dry_run, help;
  sim_mig_map mig_map;
  cli_estimates estimates; /* --estimates */
  sim_overrun overrun;     /* --overrun */
  trace_load_opts load; /* --trace-format, --swf-gpus-per-proc */
  unsigned char given[OPT__COUNT]; /* 1: the option was given */
} run_config;

/* One row of the table. */
typedef struct cli_option {
  int id;
  const char *name; /* long name, without "--" */
  cli_kind kind;
  size_t off;       /* target field in run_config */
  size_t count_off; /* K_LIST: the int count */
  int cap;          /* K_LIST: capacity */
  double lo, hi;    /* K_UINT: [lo, hi]; K_NUM: (lo, hi] */
  const char *expect; /* what a bad value should have been */
  int (*parse)(const char *s, void *field); /* K_ENUM: 0 or -1 */
  int (*check)(const char *s);              /* K_LIST items: 0 or -1 */
  unsigned cmds, list_cmds, flags;
  const char *mkey;  /* sweep manifest "parameters" key, or NULL */
  const char *idtag; /* run id tag (NULL: mkey) */
  const char *metavar;
  const char *help;
} cli_option;

/* The table, in options.def order (n rows). */
const cli_option *cli_options(size_t *n);
/* The row of a manifest parameters key, or NULL. */
const cli_option *cli_option_by_mkey(const char *key);
/* The command's name for a C_* bit ("run", ...). */
const char *cli_command_name(unsigned cmd);

/* Defaults: seed 1, unknown_us -1, tune 1.3, slurm_max 4, the rest 0. */
void run_config_init(run_config *rc);

/*
 * Applies one value of option o for command cmd to rc (a flag takes
 * arg "1"/"true" or "0"/"false"). 0, or -1 with a message in err that
 * starts with the value ("'x': expected ..."), for the caller to prefix
 * with where the value came from.
 */
int cli_option_set(const cli_option *o, unsigned cmd, const char *arg,
                   run_config *rc, char *err, size_t errlen);

/*
 * Parses argv[1..argc) of command cmd (argv[0] is its name) into rc
 * (initialised here). Non-option arguments go to pos (at most maxpos, in
 * order; *npos their count; more is an error). Returns -1 to go on, or an
 * exit status: 0 after printing --help to stdout, 2 after a message and
 * the usage on stderr.
 */
int cli_parse(unsigned cmd, int argc, char **argv, run_config *rc,
              char **pos, int maxpos, int *npos);

/* The command's usage: its synopsis and description, then one line (or
 * a few) per option of the table that it takes. */
void cli_help(unsigned cmd, FILE *f);

/* The sim_options fields a run_config sets (policy, queue and seed too:
 * the first of each list); progress, outputs and sinks are left 0. */
void run_config_sim_options(const run_config *rc, sim_options *opt);

/* The queue name of a single-run command (default "fifo"). */
const char *run_config_queue(const run_config *rc);

/*
 * Synthetic times (--synthetic-load with --durations-from): rewrites t's
 * arrivals and durations for a cluster of `gpus` GPUs, as `schedsim run`
 * does, drawing durations from `from` (NULL: the --durations-from file is
 * loaded here). 0 when neither option is set or the rewrite worked; else
 * an exit status (2 bad input: only one of the two, unreadable FILE, no
 * durations; 1 out of memory) with err set.
 */
int run_config_synthetic_times(const run_config *rc, trace *t,
                               const trace *from, int gpus, char *err,
                               size_t errlen);

/* Table-driven parsers the rows name (0 or -1). */
int cli_check_queue(const char *s);
int cli_parse_trace_format(const char *s, void *field);
/* --estimates exact|trace|factor:F (F > 0)|model:NAME[:MAX_S[:P]] into a
 * cli_estimates. */
int cli_parse_estimates(const char *s, void *field);
/* --overrun kill|extend into a sim_overrun. */
int cli_parse_overrun(const char *s, void *field);
int cli_parse_mig_map(const char *s, void *field);
/* --speed catalog|none into an int (SIM_SPEED_*). */
int cli_parse_speed(const char *s, void *field);
int cli_parse_burst(const char *s, void *field);
int cli_parse_spot_rate(const char *s, void *field);

/* `schedsim options`: the table as text (one row per line, tab-separated:
 * name, commands, manifest key, metavar). */
int cmd_options(int argc, char **argv);

#endif
