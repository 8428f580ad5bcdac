/*
 * Models of user runtime estimates (--estimates model:NAME[:MAX_S]): given
 * the run times of a whole trace, each job's estimate as a user would have
 * given it. The models are one table, SIM_EST_MODELS below: a new model
 * costs one row there and one function of type sim_est_model_fn in
 * estimate_model.c. The engine calls the chosen model once per run, before
 * the first arrival (estimate.c), and reads the estimates as it reads a
 * trace's requested times.
 */
#ifndef SCHEDSIM_ESTIMATE_MODEL_H
#define SCHEDSIM_ESTIMATE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

/* What a run tells a model (--estimates model:NAME[:MAX_S[:P]]). */
typedef struct sim_est_model_params {
  int64_t max_s;  /* the largest estimate the modeled system allows, whole
                     seconds; 0: the model chooses it from the run times */
  double max_pct; /* percent of jobs whose estimate is max_s (the paper's
                     one-hint mode); 0: the model's own share */
  uint64_t seed;  /* the run's --seed */
} sim_est_model_params;

/*
 * A model: estimates in whole seconds (> 0) for n jobs of run times run_us
 * (microseconds, >= 0; job i's estimate into est_s[i]), drawn from p->seed:
 * the same inputs give the same estimates. 0; -1 when the model cannot
 * give these jobs estimates (err says why, naming the option); -2 out of
 * memory.
 */
typedef int (*sim_est_model_fn)(uint32_t *est_s, const int64_t *run_us,
                                size_t n, const sim_est_model_params *p,
                                char *err, size_t errlen);

/* The table: X(NAME, function), one row per model. */
#define SIM_EST_MODELS(X) X(tsafrir05, est_model_tsafrir05)

/* The names, for messages: " tsafrir05 ..." (one space before each). */
#define SIM_EST_MODEL_NAME_(name, fn) " " #name
#define SIM_EST_MODEL_NAMES SIM_EST_MODELS(SIM_EST_MODEL_NAME_)

typedef struct sim_est_model {
  const char *name;
  sim_est_model_fn fn;
} sim_est_model;

/* The model called name[0..len), or NULL. */
const sim_est_model *sim_est_model_find(const char *name, size_t len);

/* MAX_S of model:NAME:MAX_S: whole seconds in this range (the Tsafrir
 * model needs at least an hour; 10^9 s keeps estimates in 32 bits); P of
 * model:NAME:MAX_S:P a percentage in (0, 100]. */
#define SIM_EST_MODEL_MAX_S_MIN 3600
#define SIM_EST_MODEL_MAX_S_MAX 1000000000

#define X_(name, fn)                                                           \
  int fn(uint32_t *est_s, const int64_t *run_us, size_t n,                     \
         const sim_est_model_params *p, char *err, size_t errlen);
SIM_EST_MODELS(X_)
#undef X_

/* ---- the parts of tsafrir05, for tests (estimate_model.c) */

/* One bin of an estimate histogram: njobs jobs have estimate time_s. */
typedef struct sim_est_bin {
  int64_t time_s;
  int64_t njobs;
} sim_est_bin;

/* The Tsafrir model's number of distinct estimates for n jobs (the
 * linear model through the reference points of est_model.cc). */
int tsafrir05_binnum(size_t n);
/* The default max estimate for jobs whose longest runs longest_us: whole
 * hours rounded up, at least an hour, at most SIM_EST_MODEL_MAX_S_MAX. */
int64_t tsafrir05_default_max(int64_t longest_us);
/* The model's head times for max_s (>= 3600): head[0] = max_s, then the
 * other popular values in increasing order; returns how many (<= 20). */
int tsafrir05_head_times(int64_t max_s, int64_t head[20]);
/* The histogram of n > 0 jobs' estimates for max_s (>= 3600) into bins
 * (room for tsafrir05_binnum(n) + 20): sorted by time, every njobs >= 0,
 * their sum n; max_pct percent of the jobs (rounded) at max_s, or the
 * model's own share when max_pct is 0. Returns the number of bins, or -2
 * when out of memory. */
int tsafrir05_dist(sim_est_bin *bins, size_t n, int64_t max_s, double max_pct,
                   gsl_rng *r);
/* The assignment (est_model.cc est_assign/shuffle): sests holds n
 * estimates sorted from largest to smallest (seconds; it is permuted);
 * each job gets one of them, at least its run time (a job longer than
 * sests[0] counts as running sests[0]), chosen at random among those that
 * fit once the longer jobs have theirs. 0; -1 when some k-th longest job
 * is longer than the k-th largest estimate (err set); -2 out of memory. */
int sim_est_assign(uint32_t *est_s, const int64_t *run_us, size_t n,
                   uint32_t *sests, gsl_rng *r, char *err, size_t errlen);

#endif
