/*
 * Replay mode (docs/DESIGN.md section 5): jobs arrive at their submit time,
 * wait in a queue, run for their duration on the placement a libsched policy
 * chose, and release their resources. The engine is a discrete-event loop
 * over a 4-ary heap of completion events; arrivals stream from the trace in
 * submit order (ties in file order), so the heap only ever holds running
 * jobs. All events at one time are processed before the queue is scanned.
 * The loop can be stepped one event time at a time (sim_engine_step); its
 * parts (queue disciplines, migration, metrics, MIG) are described in
 * engine_internal.h.
 *
 * Memory: the engine keeps state only for jobs that have arrived and are
 * not finished (a slot each, recycled), plus one entry per distinct request
 * shape; a job's outcome is handed to sim_options.on_job when it is final.
 * So sim_run_stream replays a trace file of any length in memory bounded by
 * what is running and queued at once (and the percentile values, which
 * spill to a temporary file beyond sim_options.pctl_mem_values: pctl.h).
 */
#ifndef SCHEDSIM_ENGINE_H
#define SCHEDSIM_ENGINE_H

#include <stdint.h>
#include <stdio.h>

#include "cluster_spec.h"
#include "mig_sim.h"
#include "trace.h"

typedef enum sim_queue_kind {
  SIM_QUEUE_FIFO = 0,     /* head-of-line blocking */
  SIM_QUEUE_SKIP = 1,     /* every waiting job in order; start each that fits */
  SIM_QUEUE_BACKFILL = 2, /* EASY backfilling (estimates: duration x factor) */
  SIM_QUEUE_PRIORITY = 3  /* QoS classes, FIFO within a class, head blocks */
} sim_queue_kind;

/* Parses a discipline name (fifo|skip|backfill|priority: the table in
 * queue.c); 0, or -1 for another name. */
int sim_queue_parse(const char *name, sim_queue_kind *out);

/* Most nodes one gang job may span. */
#define SIM_MAX_PARTS 64

/* The per-node parts of a job placed on several nodes. */
typedef struct sim_gang {
  int n;
  lsched_placement *parts;
} sim_gang;

typedef enum job_status {
  JOB_PENDING = 0,    /* not yet arrived (only during a run) */
  JOB_QUEUED = 1,
  JOB_RUNNING = 2,
  JOB_DONE = 3,
  JOB_NEVER_NO_NODE = 4, /* no node of the cluster could ever hold it */
  JOB_NEVER_MODEL = 5,   /* its allowed GPU models are not in the cluster */
  JOB_NEVER_QUEUED = 6,  /* still queued when the simulation ended */
  JOB_KILLED = 7         /* ran until its estimate and was killed there
                            (--overrun kill); has start and finish */
} job_status;

/* Per-job outcome: 32 bytes. */
typedef struct job_state {
  int64_t start_us;  /* -1 if never started */
  int64_t finish_us; /* -1 if never finished */
  uint64_t gpu_mask; /* GPUs used on node */
  int32_t node;      /* -1 if never placed; <= -2: gang, see sim_result */
  int16_t gpu_milli; /* milli taken per GPU (1000 on exclusive nodes) */
  uint8_t status;    /* job_status */
  uint8_t epoch;     /* bumped when a migration or preemption moves its end */
} job_state;

/* A job whose outcome is final (completed, or never started), as handed to
 * sim_options.on_job. Pointers are valid during the call only. */
typedef struct sim_job_out {
  uint64_t index;          /* position in the trace file, 0-based */
  const job_record *rec;
  const char *name;
  const job_state *st;     /* st->node is the first part's node for gangs */
  const lsched_placement *parts; /* nparts placements (completed jobs) */
  int nparts;
  int planned;             /* the policy plans migrations (else the next
                              three are 0) */
  unsigned migrations, preemptions;
  double lost_gpu_s;
  int64_t reserved_us;     /* backfill: first reservation, or -1 */
  /* MIG: kind and start slot of its instance (0/0 if none), and its
   * reconfiguration wait in us. */
  int mig_kind, mig_start;
  int64_t mig_wait_us;
  /* jobs.csv's last columns (schedsim rightsize): the job's class in the
   * speed table (NULL under --speed none), and for a job that ran its
   * work in reference GPU-seconds (as work_gpu_hours counts it) and its
   * allocated cost in USD (cost_usd.total - cost_usd.idle over the jobs);
   * 0 for the others. */
  const char *jclass;
  double work_ref_s, cost_usd;
  /* Cloud bursting (sim/engine/cloud.c; set only in runs with the cloud
   * part, cloud_cols then 1): the cloud site the job ran at (NULL:
   * on-prem), its GPU model, and what it paid there (on-demand + spot). */
  int cloud_cols;
  const char *site, *site_model;
  double cloud_cost_usd;
} sim_job_out;

typedef enum sim_estimates {
  SIM_EST_EXACT = 0,
  SIM_EST_FACTOR = 1,
  SIM_EST_TRACE = 2,
  SIM_EST_MODEL = 3 /* a model of user estimates (estimate_model.h) */
} sim_estimates;

struct sim_est_model;

typedef enum sim_overrun {
  SIM_OVERRUN_DEFAULT = 0,
  SIM_OVERRUN_KILL = 1,
  SIM_OVERRUN_EXTEND = 2
} sim_overrun;

typedef struct sim_options {
  const char *policy;
  sim_queue_kind queue;
  uint64_t seed;
  /* Duration for jobs whose trace has none; < 0: such jobs are an error. */
  int64_t unknown_duration_us;
  /* Runtime estimate = duration x estimate_factor, for backfilling (<= 0
   * means 1: exact estimates). */
  double estimate_factor;
  /* Where runtime estimates come from (sim/engine/estimate.c): EXACT is
   * the duration x estimate_factor above; FACTOR the same (set by
   * --estimates factor:F); TRACE each job's requested time (job_record
   * req_s), the true duration for a job without one; MODEL drawn per job
   * by estimate_model (seeded by seed) with the largest estimate
   * estimate_model_max_s (whole seconds; 0: the model's default) given to
   * estimate_model_max_pct percent of the jobs (0: the model's share). */
  sim_estimates estimates;
  const struct sim_est_model *estimate_model;
  int64_t estimate_model_max_s;
  double estimate_model_max_pct;
  /* A job that reaches its estimate: killed there (status JOB_KILLED) or
   * extended (it runs on; reservations take it as ending at any moment).
   * DEFAULT: kill for TRACE and MODEL, extend otherwise (never reached
   * with exact estimates). */
  sim_overrun overrun;
  /* Check every backfill decision: after each backfilled start the head's
   * reservation is recomputed and the run fails if it moved later (tests;
   * --check). */
  int check_reservations;
  /* Tests: skip and backfill pass over every waiting job (the reference)
   * instead of the queue indexed by request shape (same decisions). */
  int queue_plain;
  /* Tests: EASY reservations by the walk over running jobs only (the
   * reference) instead of per node (reserve_nodes.c; same answers). */
  int reserve_walk;
  /* Tests: every answer given per node is also walked and compared; a
   * difference (a simulator bug, never an input error) prints both and
   * aborts. Also on in a -DRESERVE_VERIFY build. */
  int reserve_verify;
  /* Where to write timeline.csv rows (header included); may be NULL. */
  FILE *timeline;
  /* Migration (policies that plan migrations, e.g. defrag): a move costs
   * migration_fixed_s + migration_per_gib_s x the GPU memory the job holds
   * (GiB = GPUs x share x the model's memory); at most max_moves jobs per
   * decision and max_moves_per_job moves per job (0 = 2 and 1). With
   * preempt set, planned jobs are stopped and requeued instead, keeping
   * the progress of whole checkpoint_s intervals (0 = nothing kept). */
  double migration_fixed_s;
  double migration_per_gib_s;
  int max_moves;
  int max_moves_per_job;
  int preempt;
  double checkpoint_s;
  /* Policy parameters as "KEY=VALUE" (e.g. "base=first-fit" for defrag). */
  char *const *policy_params;
  int npolicy_params;
  /* Called about every 65536 events; may be NULL. */
  void (*progress)(int64_t now_us, uint64_t events, size_t done, size_t total,
                   void *user);
  void *progress_user;
  /* MIG (mig_sim.h): how jobs map to instance kinds, and a file of
   * explicit MIG requests (NULL: none). */
  sim_mig_map mig_map;
  const char *mig_requests;
  /* Called once per job when its outcome is final, in that order (a job
   * that can never start: at its arrival; one that completes: at its
   * completion; ties by slot). 0 to go on; nonzero stops the run with
   * sim_run returning -2 and err "job output: ..." (e.g. a full disk).
   * With on_job set, sim_run leaves the per-job arrays of sim_result NULL
   * (js, gangs, migrations, ...): the caller has had every job. */
  int (*on_job)(void *user, const sim_job_out *job);
  void *on_job_user;
  /* Queue-time and JCT values kept in memory before they spill to a
   * temporary file for the percentiles (0: sim_run keeps all in memory,
   * sim_run_stream 1<<18 each, 2 MiB). Either way the percentiles are
   * exact. */
  size_t pctl_mem_values;
  /* --energy-price: USD per facility kWh (0: energy_cost_usd is 0). */
  double energy_price;
  /* Work and speed (sim/engine/speed.c; sim/README.md "Work and speed"):
   * SIM_SPEED_NONE (0) runs every job for its trace duration;
   * SIM_SPEED_CATALOG gives each job work = duration x the speed of the
   * GPU type it was measured on, and runs it for work / the speed of its
   * placement. speed_table: a table file (speed_table.h) instead of the
   * built-in one; measured_on: a catalog model, or "same", for every job
   * instead of the trace format's rule; class_mix: a JSON object of job
   * class weights for jobs the trace gives no class. NULL: defaults. */
  int speed;
  const char *speed_table;
  const char *measured_on;
  const char *class_mix;
  /* Cloud bursting (sim/engine/cloud.c; sim/README.md "Cloud bursting"):
   * when a queued job leaves for a cloud site of the cluster spec. burst
   * SIM_BURST_NEVER (0) keeps every job on-prem; burst_param is T in
   * seconds (constant) or K (compute-wait: hours per GPU-hour; star-wait:
   * hours per GPU). spot_rate >= 0: cloud jobs run on spot, interrupted
   * by a Poisson process of spot_rate per instance-hour (< 0: on-demand
   * only); spot_trace instead: interrupted when fewer instances than its
   * GPUs are available. restart_overhead_s: the delay of each restart after an
   * interruption; deadline_slack > 0: deadline = submit + slack x the
   * job's run time in the cloud (Can't Be Late's fallback rule), 0: none. */
  int burst;
  double burst_param;
  double spot_rate;
  const char *spot_trace; /* CSV time_s,instances_available, or NULL */
  double restart_overhead_s;
  double deadline_slack;
  /* > 0: at most queue_cap jobs wait on-prem; after each pass the newest
   * beyond it leave for a cloud site at once (Starburst's queue cap). */
  uint64_t queue_cap;
  /* Preemption by priority (sim/engine/preempt.c; sim/README.md
   * "Preemptible jobs"): preemptible is a comma-separated list of job
   * classes (QoS names: Guaranteed, LS, Burstable, BE, unknown; spot) whose
   * jobs run on idle capacity and are stopped and requeued when a job of
   * a higher QoS class cannot otherwise start (NULL: none);
   * max_preemptions: times one job may be stopped before it becomes
   * non-preemptible (0 = 3); slo: "CLASS:SECONDS[,...]" start targets
   * (summary.json by_class.CLASS.slo_misses). Either of preemptible and
   * slo reports by_class. */
  const char *preemptible;
  int max_preemptions;
  const char *slo;
} sim_options;

enum {
  SIM_BURST_NEVER = 0,
  SIM_BURST_NO_WAIT = 1,
  SIM_BURST_CONSTANT = 2,
  SIM_BURST_COMPUTE_WAIT = 3,
  SIM_BURST_STAR_WAIT = 4
};

/* The cloud figures of a run (summary.json "cloud"; metrics.def rows of
 * base CLOUD). */
typedef struct sim_cloud_result {
  double system_utilization_mean; /* (on-prem + cloud GPU-h) / on-prem GPU-h */
  double gpu_hours;               /* billed cloud GPU-hours */
  double cost_on_demand, cost_spot;
  size_t jobs;
  uint64_t interruptions;
  double lost_gpu_hours;
  size_t deadline_misses;
} sim_cloud_result;

enum { SIM_SPEED_NONE = 0, SIM_SPEED_CATALOG = 1 };

typedef struct sim_stats {
  double mean, p50, p95, p99, max;
  size_t n;
} sim_stats;

/* The job classes by_class reports, in order: the trace's QoS (trace.h
 * enum trace_qos; unknown where the format has none), and spot (the
 * generic CSV's spot flag, TRACE_JOB_SPOT, whatever the QoS). */
#define SIM_NCLASSES 6
/* One class's figures (docs/DESIGN.md section 6): jobs of the class in the
 * trace, queue time and JCT of its completed jobs, its preemptions, jobs
 * that missed the class's start target (never started included; 0 without
 * a target) and GPU-seconds of progress it lost. */
typedef struct sim_class_stat {
  size_t jobs;
  sim_stats queue_time_s, jct_s;
  uint64_t preemptions;
  size_t slo_misses;
  double lost_gpu_s;
} sim_class_stat;
typedef struct sim_class_result {
  sim_class_stat cls[SIM_NCLASSES]; /* Guaranteed, LS, Burstable, BE,
                                       unknown, spot */
  unsigned char present[SIM_NCLASSES]; /* 1: the trace has jobs of it */
} sim_class_result;

typedef struct sim_result {
  size_t jobs, completed, never_started;
  size_t never_no_node, never_model, never_queued;
  double gpu_alloc_ratio_mean;
  sim_stats queue_time_s, jct_s;
  sim_stats queue_time_multigpu_s; /* completed jobs with more than 1 GPU */
  /* Jobs killed at their estimate (--overrun kill; counted in completed
   * too); bounded slowdown of completed jobs (engine_internal.h). */
  size_t jobs_killed;
  sim_stats bounded_slowdown;
  int64_t first_arrival_us, last_completion_us, makespan_us;
  double allocated_gpu_hours;
  double cost_total, cost_per_allocated_gpu_hour, cost_idle;
  int unpriced_gpus;
  uint64_t events;
  /* One per trace job, in trace order (NULL with sim_options.on_job). */
  job_state *js;
  /* Jobs placed on several nodes: job_state.node = -2 - index here. */
  sim_gang *gangs;
  size_t ngangs;
  /* Per job when the policy plans migrations (else NULL): moves,
   * preemptions, and GPU-seconds of progress lost; and the totals. */
  uint16_t *migrations;
  uint16_t *preemptions;
  double *lost_gpu_s;
  uint64_t migrations_total, preemptions_total;
  double lost_gpu_s_total;
  /* backfill only: the first reservation (estimated start) each job got
   * when it blocked the head of the queue; -1 if it never did. */
  int64_t *reserved_us;
  /* Every run: time-weighted mean of running jobs; job-hours run by the
   * completed jobs (start to finish); cost_total / job_hours; and the
   * time-weighted GPU milli the running jobs asked for (their trace
   * gpu_milli, not what their mode took) / all GPU milli. */
  double running_jobs_mean, job_hours, cost_per_job_hour, gpu_used_ratio_mean;
  /* Time-weighted means over [first arrival, last completion] of the FGD
   * fragmentation amount (milli-GPU) and rate (0..1) under the trace's
   * typical task types, and of the stranded GPU milli (fragtrack.h). */
  double frag_amount_mean, frag_rate_mean, stranded_gpu_milli_mean;
  sim_mig_result *mig; /* NULL without MIG GPUs */
  struct sim_cloud_result *cloud; /* NULL without the cloud part */
  /* Per QoS class (preempt.c), NULL without --preemptible or --slo. */
  struct sim_class_result *by_class;
  /* Energy over the span (energy.c; sim/README.md "Energy"): the GPUs'
   * (those whose model has idle_w / busy_w), the facility's (GPUs plus
   * node overhead, x PUE), its cost at sim_options.energy_price, and the
   * GPUs left out for want of figures. */
  double energy_gpu_kwh, energy_facility_kwh, energy_cost_usd;
  int energy_unknown_gpus;
  /* Work done by the completed jobs in reference-GPU-hours (work x GPUs
   * asked, num_gpu x gpu_milli / 1000; with --speed none the work is the
   * duration) and cost_total / work_gpu_hours (0 without work). */
  double work_gpu_hours, cost_per_work_hour;
  /* Checks (tests; not reported): work done by the completed jobs,
   * integrated over their run segments at the speed each ran (reference
   * seconds, not GPU-weighted), and their work (duration x measured
   * speed); equal up to the re-timings' microsecond rounding. 0 with
   * --speed none. */
  double work_done_ref_s, work_ref_s;
  /* Checks (tests; not reported): EASY reservations answered per node
   * (reserve_nodes.c) and by the walk over running jobs (reserve.c). */
  uint64_t reservations_per_node, reservations_walked;
  /* Checks (tests; not reported): jumps of a backfill pass over kept jobs
   * (queue_index.c kept_next). */
  uint64_t backfill_jumps;
  /* Checks (tests; not reported): reservations under a speed model asked
   * of the index with a slowing candidate's co-runners' ends moved for
   * the question (reserve.c slowed_reservation). */
  uint64_t reservations_slowed;
  /* Composable GPU pools (pools.c; NULL on clusters without pools). */
  struct sim_pool_result *pools;
} sim_result;

/* summary.json "pools" (sim/README.md "Composable GPU pools"). */
typedef struct sim_pool_result {
  int gpus;                  /* GPUs in every chassis */
  double composed_gpu_hours; /* integral of pool GPUs attached to a host */
  uint64_t attaches;         /* GPUs composed (attached) by starting jobs */
  double attach_wait_s;      /* sum over jobs of their attach wait */
} sim_pool_result;

/*
 * Runs a replay of t on sc (whose cluster must be idle; it is idle again
 * afterwards: nothing allocated, though on dynamic-MIG GPUs the idle
 * instances the run created stay, so a second run on the same sc starts
 * from that layout and may place differently; the CLI builds a fresh
 * cluster per run). 0 on success; -1 with err set for bad input (unknown policy,
 * unknown GPU model in a job's gpu_spec, jobs without duration, ...);
 * -2 for an internal failure (out of memory, invariant violation).
 */
int sim_run(sim_cluster *sc, const gpu_catalog *cat, const trace *t,
            const sim_options *opt, sim_result *out, char *err,
            size_t errlen);

/*
 * The same replay, reading the trace from an open stream (trace.h) twice:
 * a first pass validates every job and counts the request shapes (the
 * typical workload), a second one replays, so memory is bounded by the
 * running and queued jobs, not by the trace length. The trace must be in
 * submit order: returns -3 (err says where) when it is not, before any job
 * was replayed; the caller may then load it whole and use sim_run. Clusters
 * with MIG GPUs need sim_run (-3 too). Otherwise as sim_run; the per-job
 * outcomes only go to opt->on_job, and out's per-job arrays are NULL.
 */
struct trace_stream;
int sim_run_stream(sim_cluster *sc, const gpu_catalog *cat,
                   struct trace_stream *s, const sim_options *opt,
                   sim_result *out, char *err, size_t errlen);
void sim_result_free(sim_result *r);

/*
 * The engine as an object a host can step (libuv's uv_run(UV_RUN_ONCE)):
 * sim_run is sim_engine_open + sim_engine_close, sim_run_stream
 * sim_engine_open_stream + sim_engine_close.
 *
 * sim_engine_open prepares a replay of t (as sim_run: the first pass,
 * the policy, every table the loop reuses) and sets *out; the cluster must
 * be idle and sc, cat, t, opt and err must stay valid until the engine is
 * closed: err (errlen bytes) receives the message of any failure of the
 * engine's calls. Returns 0, or -1 (input) / -2 (internal) with err set
 * and *out NULL. sim_engine_open_stream does the same for a stream (-3 as
 * sim_run_stream).
 *
 * sim_engine_step processes the next event time: every completion and
 * arrival at that time, then one scheduling pass (and one timeline row).
 * Returns 1 while events remain, 0 once the run is complete (the results
 * are final; further calls return 0), or -1 / -2 with err set (further
 * calls return the same code). After a step, sim_engine_now is the time it
 * processed; before the first one it is the first arrival.
 * sim_engine_next_time is the time the next step will process (INT64_MAX
 * when none remains).
 *
 * sim_engine_close with out: steps the run to its end if it is not there
 * yet and moves its results into *out (zeroed on failure; free them with
 * sim_result_free); returns 0 or the run's error code. Without out: frees
 * the engine and abandons the run (the cluster is idle again). NULL-safe.
 */
typedef struct sim_engine sim_engine;
int sim_engine_open(sim_engine **out, sim_cluster *sc, const gpu_catalog *cat,
                    const trace *t, const sim_options *opt, char *err,
                    size_t errlen);
int sim_engine_open_stream(sim_engine **out, sim_cluster *sc,
                           const gpu_catalog *cat, struct trace_stream *s,
                           const sim_options *opt, char *err, size_t errlen);
int sim_engine_step(sim_engine *e);
int64_t sim_engine_now(const sim_engine *e);
int64_t sim_engine_next_time(const sim_engine *e);
int sim_engine_close(sim_engine *e, sim_result *out);

/* The note a replay prints about its speed assumption ("work: ..."):
 * which GPU type the trace's durations count as measured on. buf is
 * empty with --speed none. */
void sim_speed_note(const sim_options *opt, const trace *t, char *buf,
                    size_t len);
/* cost_usd.per_work_hour of a result: (cost_total + energy_cost_usd) /
 * work_gpu_hours, 0 without work. */
double sim_cost_per_work_hour(const sim_result *r);

/* Formats microseconds as seconds with no trailing zeros ("12", "0.5"). */
void sim_fmt_seconds(char *buf, size_t len, int64_t us);

#endif
