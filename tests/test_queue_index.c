/*
 * The queue indexed by request shape (sim/engine/queue_index.c) against the
 * plain pass over every waiting job (sim_options.queue_plain, the
 * reference): random workloads crowded with identical jobs (a few request
 * shapes), jobs that fit only an empty node or two (whole-node and gang
 * jobs that wait long), replayed under skip and backfill with several
 * policies (random included: its draws must follow the same attempts),
 * runtime estimates from the trace, and migration with preemption (a
 * preempted job re-enters the queue behind the head); the plain run also
 * sorts the running jobs by estimated end for every reservation instead
 * of keeping them ordered (reserve.c), also under the speed model where
 * ends move. Every job's start,
 * end, node and status must be the same; each workload must also have made
 * a queue (jobs waited, and some started ahead of earlier arrivals), or
 * the comparison would prove nothing. The index's memo across releases of
 * shapes that found no node (its release log) is on for every policy here
 * but random; a log that drops a node's repeated release after a shape
 * was noted fails 32 of the 37 cases. skip's opening of an epoch fails the
 * shapes known_nofit answers without a turn in the merge: failing there a
 * shape that failed in the last epoch without asking the release log
 * fails the 15 skip cases; going on with a started job's shape without
 * comparing its next job with the merge's first fails 11. The release
 * log's test of the one node released since a mark (rlog.h, its usual
 * case) answering "fits none" when the node fits fails 49 checks; skip's
 * pass taking its one pending shape without the merge but leaving it
 * marked pending fails 20; opening no live shape after a release when
 * only one is live fails 21. Going on with a tried job's shape in a
 * backfill pass without comparing its next job with the merge's first
 * fails 28, and so does returning from a backfill pass early (no release,
 * head failed before) with a shape pending; opening a backfill epoch with
 * another live shape than the head's taken as failed fails 23, and with
 * the head's one opened too fails 3; stamping a rejected candidate's
 * shape for a policy that does not promise LSCHED_POLICY_ANY_FIT fails 3;
 * a backfill pass after a release with one job queued returning as one
 * with none fails 23, a skip pass 21.
 */
#include "catalog.h"
#include "cluster_spec.h"
#include "engine.h"
#include "testutil.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gpu_catalog cat;

static void load_catalog(void) {
  char err[512];
  ck_assert_msg(catalog_load_default(&cat, err, sizeof err) == 0, "%s", err);
}

static void free_catalog(void) { catalog_free(&cat); }

/* n nodes of 8 A100-80GB GPUs shared by milli. */
static void nodes_of(sim_cluster *sc, int n, const char *model) {
  char json[512], err[512];
  snprintf(json, sizeof json,
           "{\"name\": \"t\", \"node_groups\": [{\"name\": \"n\", \"count\": "
           "%d, \"gpu_model\": \"%s\", \"gpus_per_node\": 8, "
           "\"cpu_milli\": 64000, \"memory_mib\": 640000, \"gpu_mode\": "
           "\"shared\", \"price_per_gpu_hour\": 1}]}",
           n, model);
  ck_assert_msg(sim_cluster_from_json(sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
}

static void nodes(sim_cluster *sc, int n) { nodes_of(sc, n, "A100-80GB"); }

/* n A100 nodes as nodes() and n H100 ones: under a speed model a job's
 * run time differs by node type. */
static void nodes_a100_h100(sim_cluster *sc, int n) {
  char json[1024], err[512];
  snprintf(json, sizeof json,
           "{\"name\": \"t\", \"node_groups\": [{\"name\": \"a\", "
           "\"count\": %d, \"gpu_model\": \"A100-80GB\", \"gpus_per_node\": "
           "8, \"cpu_milli\": 64000, \"memory_mib\": 640000, \"gpu_mode\": "
           "\"shared\", \"price_per_gpu_hour\": 1}, {\"name\": \"h\", "
           "\"count\": %d, \"gpu_model\": \"H100-SXM5-80GB\", "
           "\"gpus_per_node\": 8, \"cpu_milli\": 64000, \"memory_mib\": "
           "640000, \"gpu_mode\": \"shared\", \"price_per_gpu_hour\": 2}]}",
           n, n);
  ck_assert_msg(sim_cluster_from_json(sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
}

/* An empty trace named path, with submit times. */
static void trace_named(trace *t, const char *path) {
  trace_init(t);
  t->path = strdup(path);
  t->has_times = 1;
}

static uint64_t next(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* A workload of n jobs: most of four identical shapes, a few whole-node
 * and two-node (gang) jobs, arrivals in bursts (several at one time), and
 * requested times from a third to twice the run time. */
static void workload(trace *t, uint64_t seed, int n) {
  static const struct {
    int gpus, milli;
  } shapes[] = {{1, 1000}, {1, 500}, {2, 1000}, {1, 250},
                {0, 0},    {4, 1000}, {8, 1000}, {16, 1000}};
  trace_init(t);
  t->path = strdup("crowd.csv");
  t->has_times = 1;
  uint64_t x = 0x9E3779B97F4A7C15ull ^ (seed * 104729 + 1);
  int64_t submit = 0;
  for (int k = 0; k < n; k++) {
    uint64_t r = next(&x);
    if (r % 3 == 0)
      submit += (int64_t)((r >> 8) % 30);
    uint64_t p = (r >> 16) % 100;
    int s = p < 40 ? 0 : p < 55 ? 1 : p < 70 ? 2 : p < 78 ? 3 : p < 84 ? 4
          : p < 92 ? 5 : p < 97 ? 6 : 7;
    int64_t dur = 20 + (int64_t)((r >> 32) % 400);
    char name[16];
    snprintf(name, sizeof name, "j%d", k);
    tu_add_job(t, name, submit, dur, shapes[s].gpus, shapes[s].milli, NULL);
    uint32_t req = (uint32_t)(dur / 3 + (int64_t)((r >> 44) % (uint64_t)(2 * dur)));
    t->jobs[t->n - 1].req_s = req ? req : 1;
  }
}

static const char *const policies[] = {"first-fit",  "best-fit",
                                       "random",     "gpu-packing",
                                       "fgd",        "dot-product"};
#define NPOL (int)(sizeof policies / sizeof policies[0])

static void run(const sim_cluster *sc, const trace *t, const sim_options *base,
                int plain, sim_result *r) {
  sim_options o = *base;
  o.queue_plain = plain;
  char err[512] = "";
  ck_assert_msg(sim_run((sim_cluster *)sc, &cat, t, &o, r, err, sizeof err) ==
                    0,
                "%s %s plain=%d: %s", o.policy,
                o.queue == SIM_QUEUE_SKIP ? "skip" : "backfill", plain, err);
}

/* Runs t both ways under o and compares every job; the backfill jumps of
 * the indexed run (sim_result.backfill_jumps) into *jumps and its
 * reservations with slowed co-runners (reservations_slowed) into *slowed
 * when not NULL (the plain run's must be 0). */
static void compare_counts(const sim_cluster *sc, const trace *t,
                           const sim_options *o, uint64_t *jumps,
                           uint64_t *slowed) {
  sim_result a, b;
  run(sc, t, o, 0, &a);
  run(sc, t, o, 1, &b);
  ck_assert_uint_eq(b.backfill_jumps, 0);
  ck_assert_uint_eq(b.reservations_slowed, 0);
  if (jumps)
    *jumps = a.backfill_jumps;
  if (slowed)
    *slowed = a.reservations_slowed;
  ck_assert_uint_eq(a.jobs, t->n);
  ck_assert_uint_eq(b.jobs, t->n);
  size_t waited = 0, overtook = 0;
  int64_t last_start = -1;
  for (size_t j = 0; j < t->n; j++) {
    ck_assert_msg(a.js[j].start_us == b.js[j].start_us &&
                      a.js[j].finish_us == b.js[j].finish_us &&
                      a.js[j].node == b.js[j].node &&
                      a.js[j].status == b.js[j].status,
                  "%s: job %zu: indexed start %lld end %lld node %d, plain "
                  "start %lld end %lld node %d",
                  o->policy, j, (long long)a.js[j].start_us,
                  (long long)a.js[j].finish_us, a.js[j].node,
                  (long long)b.js[j].start_us, (long long)b.js[j].finish_us,
                  b.js[j].node);
    if (b.js[j].start_us > t->jobs[j].submit_us)
      waited++;
    if (b.js[j].start_us >= 0 && b.js[j].start_us < last_start)
      overtook++;
    if (b.js[j].start_us > last_start)
      last_start = b.js[j].start_us;
  }
  ck_assert_uint_eq(a.migrations_total, b.migrations_total);
  ck_assert_uint_eq(a.preemptions_total, b.preemptions_total);
  ck_assert(!a.reserved_us == !b.reserved_us);
  for (size_t j = 0; a.reserved_us && j < t->n; j++)
    ck_assert_int_eq(a.reserved_us[j], b.reserved_us[j]);
  /* A queue formed and jobs passed blocked ones. */
  ck_assert_uint_gt(waited, t->n / 4);
  ck_assert_uint_gt(overtook, 0);
  sim_result_free(&a);
  sim_result_free(&b);
}

static void compare(const sim_cluster *sc, const trace *t,
                    const sim_options *o) {
  compare_counts(sc, t, o, NULL, NULL);
}

START_TEST(indexed_equals_plain) {
  sim_cluster sc;
  nodes(&sc, 3);
  trace t;
  workload(&t, (uint64_t)_i, 400);
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = policies[_i % NPOL];
  o.queue = (_i / NPOL) % 2 ? SIM_QUEUE_BACKFILL : SIM_QUEUE_SKIP;
  o.seed = 1 + (uint64_t)_i;
  o.unknown_duration_us = -1;
  o.estimates = (_i / (2 * NPOL)) % 2 ? SIM_EST_TRACE : SIM_EST_EXACT;
  o.overrun = SIM_OVERRUN_EXTEND;
  o.check_reservations = 1;
  compare(&sc, &t, &o);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* Two shared nodes of 8 A100-80GB and one exclusive node of 4 V100M16. */
static void nodes_mixed(sim_cluster *sc) {
  char err[512];
  const char *json =
      "{\"name\": \"t\", \"node_groups\": [{\"name\": \"a\", \"count\": 2, "
      "\"gpu_model\": \"A100-80GB\", \"gpus_per_node\": 8, \"cpu_milli\": "
      "64000, \"memory_mib\": 640000, \"gpu_mode\": \"shared\", "
      "\"price_per_gpu_hour\": 1}, {\"name\": \"v\", \"count\": 1, "
      "\"gpu_model\": \"V100M16\", \"gpus_per_node\": 4, \"cpu_milli\": "
      "64000, \"memory_mib\": 640000, \"gpu_mode\": \"exclusive\", "
      "\"price_per_gpu_hour\": 1}]}";
  ck_assert_msg(
      sim_cluster_from_json(sc, json, "test", &cat, 1, err, sizeof err) == 0,
      "%s", err);
}

/* A workload of n jobs of shares of several GPUs (a node fits some only
 * with k GPUs at the share free, not one), whole GPUs and CPU-only jobs
 * (of three sizes), a third of them restricted to one of the two models,
 * QoS classes mixed within a shape. */
static void workload_shares(trace *t, uint64_t seed, int n) {
  static const struct {
    int gpus, milli;
  } shapes[] = {{2, 500},  {3, 250}, {1, 750}, {4, 600},
                {2, 1000}, {1, 300}, {0, 0}};
  static const char *const specs[] = {NULL, NULL, "A100-80GB", "V100M16"};
  trace_init(t);
  t->path = strdup("shares.csv");
  t->has_times = 1;
  uint64_t x = 0xD1B54A32D192ED03ull ^ (seed * 7919 + 1);
  int64_t submit = 0;
  for (int k = 0; k < n; k++) {
    uint64_t r = next(&x);
    if (r % 3 == 0)
      submit += (int64_t)((r >> 8) % 30);
    int s = (int)((r >> 16) % 7);
    int64_t dur = 20 + (int64_t)((r >> 32) % 400);
    char name[16];
    snprintf(name, sizeof name, "j%d", k);
    tu_add_job(t, name, submit, dur, shapes[s].gpus, shapes[s].milli,
               specs[(r >> 24) % 4]);
    job_record *j = &t->jobs[t->n - 1];
    j->qos = (uint8_t)((r >> 40) % 3);
    if (!shapes[s].gpus) { /* CPU-only: small, or most of a node's CPU or
                            * memory */
      j->cpu_milli = (r >> 44) % 3 == 0 ? 40000 : 1000;
      j->memory_mib = (r >> 48) % 3 == 0 ? 400000 : 1000;
    }
  }
}

/* Shares of several GPUs on shared and exclusive nodes of two models:
 * the release log's fit test read from a node's record (rlog.h
 * sim_rlog_fits_node: k GPUs with the share, whole GPUs on exclusive
 * nodes, the model) and the index's shape of a job taken from its
 * fragtrack shape, a CPU-only job's from the last CPU-only one's
 * (queue_index.c slot_shape) against the plain pass. Counting the GPUs
 * with more than the share (not at least) fails the 12 cases; the model
 * test inverted, or k whole GPUs asked to be more than k, fail them too
 * (jobs never start); a CPU-only job's shape taken without comparing the
 * memory fails 6. */
START_TEST(indexed_equals_plain_shares) {
  sim_cluster sc;
  nodes_mixed(&sc);
  trace t;
  workload_shares(&t, 3000 + (uint64_t)_i, 400);
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = policies[_i % NPOL];
  o.queue = _i / NPOL ? SIM_QUEUE_BACKFILL : SIM_QUEUE_SKIP;
  o.seed = 1 + (uint64_t)_i;
  o.unknown_duration_us = -1;
  o.check_reservations = 1;
  compare(&sc, &t, &o);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* defrag with preemption: a blocked head makes the policy stop running
 * jobs, which go back into the queue behind the head (the index is rebuilt
 * there). */
START_TEST(indexed_equals_plain_preempt) {
  sim_cluster sc;
  nodes(&sc, 3);
  trace t;
  workload(&t, 1000 + (uint64_t)_i, 300);
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = "defrag";
  o.queue = _i % 2 ? SIM_QUEUE_BACKFILL : SIM_QUEUE_SKIP;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.max_moves = 2;
  o.preempt = _i / 2 % 2;
  o.checkpoint_s = 60;
  compare(&sc, &t, &o);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* The running jobs' order by estimated end kept across completions
 * (sim/engine/reserve.c) against sorting them for every reservation (the
 * plain run): under the speed model on shared GPUs, where co-runners
 * re-time each other so that estimated ends move while jobs run (the
 * built-in interference 0.973; known ends as exact estimates, requested
 * times scaled), with backfill, and with defrag moves and preemptions. A
 * backfill candidate that would slow co-runners moves their ends for its
 * question only: the plain run sorts every end anew, the indexed one
 * moves those keys in the index and back (reserve.c
 * slowed_reservation). */
START_TEST(indexed_equals_plain_speed) {
  sim_cluster sc;
  nodes(&sc, 3);
  trace t;
  workload(&t, 2000 + (uint64_t)_i, 400);
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = _i < 4 ? policies[_i % NPOL] : "defrag";
  o.queue = SIM_QUEUE_BACKFILL;
  o.seed = 1 + (uint64_t)_i;
  o.unknown_duration_us = -1;
  o.speed = SIM_SPEED_CATALOG;
  o.estimates = _i % 2 ? SIM_EST_TRACE : SIM_EST_EXACT;
  o.overrun = SIM_OVERRUN_EXTEND;
  o.check_reservations = 1;
  o.max_moves = 2;
  o.migration_fixed_s = 2;
  o.preempt = _i >= 6;
  o.checkpoint_s = 60;
  uint64_t slowed = 0;
  compare_counts(&sc, &t, &o, NULL, &slowed);
  /* Candidates that slow co-runners were answered from the index (with
   * their keys moved and put back: leaving either step out fails 6 or 7
   * of the 8 cases). */
  ck_assert_uint_gt(slowed, 100);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* A cluster of 4,096 nodes (SIM_PREFETCH_NODES, engine_internal.h):
 * the engine hints the nodes of the next completion and of a starting
 * backfill candidate (loop.c prefetch_release, queue_backfill.c), of
 * the next candidate of a shape (queue_index.c) and of an arrival's link
 * (loop.c prefetch_next), which must change nothing. Two-node jobs (gangs:
 * no hint) fill every node at time 0; 1,200 whole-node, shared and
 * half-node jobs arrive while they run and, from 500 s on, while the first
 * of them end (an arrival then takes a freed slot), and wait (indexed
 * against plain). */
START_TEST(indexed_equals_plain_large) {
  sim_cluster sc;
  nodes(&sc, 4096);
  trace t;
  trace_named(&t, "large.csv");
  uint64_t x = 0xA24BAED4963EE407ull ^ (uint64_t)(_i + 1);
  for (int k = 0; k < 2048 + 1200; k++) {
    uint64_t r = next(&x);
    uint64_t p = (r >> 16) % 100;
    int fill = k < 2048;
    int gpus = fill ? 16 : p < 50 ? 8 : p < 80 ? 1 : 4;
    int64_t submit = fill ? 0 : 1 + (k - 2048) / 2;
    int64_t dur = (fill ? 500 : 100) + (int64_t)((r >> 32) % 1000);
    char name[16];
    snprintf(name, sizeof name, "j%d", k);
    tu_add_job(&t, name, submit, dur, gpus, gpus == 1 ? 500 : 1000, NULL);
    t.jobs[t.n - 1].req_s = (uint32_t)(dur + (int64_t)((r >> 44) % 300));
  }
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = _i ? "best-fit" : "first-fit";
  o.queue = SIM_QUEUE_BACKFILL;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.estimates = SIM_EST_TRACE;
  compare(&sc, &t, &o);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* Backfill's jumps over kept jobs (queue_index.c kept_next): whole-node
 * heads that hold reservations, behind them hundreds of 1-GPU jobs of one
 * or two shapes, half of them long (they would end after the head's
 * reservation: kept waiting) and half short (backfilled), so a pass keeps
 * runs of long jobs of a shape and jumps over them, and the jobs started
 * and tried in between move the generation (rewind_jumped). Indexed
 * against plain, every policy that promises LSCHED_POLICY_ANY_FIT (the
 * type-aware ones included), exact and trace estimates (defrag: moves, and
 * with trace estimates preemptions; its rejections in full stamp the shape
 * as a trial's do, queue_backfill.c decide), without a speed model and
 * with the built-in one on H100 nodes and on A100 and H100 ones, durations measured on A100
 * (the jump tree then holds each job's run time at the fastest speed any
 * node gives it, est_run_least: exact but for interference on H100 nodes
 * alone, below the A100 run time on the mixed cluster); the indexed runs
 * must have jumped, the plain ones never. Rewinding no shape failed 1 of
 * session 39's 12 cases (fgd under exact estimates: a job started later)
 * and jump_rewind_hand below; a tree of run times without the speed
 * model, or at the measured speed, fails the 12 speed cases of the six
 * policies but defrag. */
static const char *const kept_policies[] = {
    "first-fit",   "best-fit", "worst-fit",    "gpu-packing",  "fgd",
    "dot-product", "defrag",   "fastest-fit", "cheapest-work"};
#define NKEPT (int)(sizeof kept_policies / sizeof kept_policies[0])
#define KEPT_JOBS 300

/* The kept workload of seed k, of n jobs. */
static void kept_trace(trace *t, int k, int n_jobs) {
  trace_named(t, "kept.csv");
  uint64_t x = 0xD1B54A32D192ED03ull ^ (uint64_t)(k + 1);
  int64_t submit = 0;
  for (int n = 0; n < n_jobs; n++) {
    uint64_t r = next(&x);
    if (r % 4 == 0)
      submit += (int64_t)((r >> 8) % 20);
    uint64_t p = (r >> 16) % 100;
    int gpus = p < 8 ? 8 : p < 14 ? 2 : 1;
    int milli = gpus == 1 && p >= 80 ? 500 : 1000;
    int64_t dur = gpus == 8   ? 300 + (int64_t)((r >> 32) % 300)
                  : r & 1024 ? 1500 + (int64_t)((r >> 32) % 2500)
                             : 20 + (int64_t)((r >> 32) % 100);
    char name[16];
    snprintf(name, sizeof name, "k%d", n);
    tu_add_job(t, name, submit, dur, gpus, milli, NULL);
    t->jobs[t->n - 1].req_s = (uint32_t)(dur + (int64_t)((r >> 44) % 60));
  }
}

/* The kept workload of seed k (n jobs) under o with exact (est 0) or
 * trace estimates (defrag: moves, and with trace estimates preemptions
 * too), indexed against plain; the indexed run's jumps. With mix, each
 * job is of class a or b, drawn from mix. */
static uint64_t kept_case(const sim_cluster *sc, sim_options *o, int est,
                          int k, int n, uint64_t mix) {
  trace t;
  kept_trace(&t, k, n);
  if (mix) {
    int a = trace_intern_class(&t, "a"), b = trace_intern_class(&t, "b");
    for (size_t q = 0; q < t.n; q++)
      t.jobs[q].jclass = (uint16_t)(next(&mix) % 2 ? a : b);
  }
  o->estimates = est ? SIM_EST_TRACE : SIM_EST_EXACT;
  if (strcmp(o->policy, "defrag") == 0) {
    o->max_moves = 2;
    o->migration_fixed_s = 2;
    o->preempt = est;
    o->checkpoint_s = 60;
  }
  uint64_t j = 0;
  compare_counts(sc, &t, o, &j, NULL);
  trace_free(&t);
  return j;
}

/* Cases [0, 2 NKEPT): no speed model, exact then trace estimates; then
 * NKEPT on H100 nodes and NKEPT on A100 and H100 ones, each with both
 * estimates (a workload and estimate may keep no run of 64 jobs in a
 * pass: the two together must jump). */
START_TEST(indexed_equals_plain_kept) {
  int speed = _i < 2 * NKEPT ? 0 : _i < 3 * NKEPT ? 1 : 2;
  sim_cluster sc;
  if (speed == 2)
    nodes_a100_h100(&sc, 2);
  else if (speed == 1)
    nodes_of(&sc, 3, "H100-SXM5-80GB");
  else
    nodes(&sc, 3);
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = kept_policies[_i % NKEPT];
  o.queue = SIM_QUEUE_BACKFILL;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.overrun = SIM_OVERRUN_EXTEND;
  if (speed) {
    o.speed = SIM_SPEED_CATALOG;
    o.measured_on = "A100-SXM4-80GB"; /* (the trace's default: "same") */
  }
  uint64_t jumps = 0;
  for (int est = 0; est < 2; est++)
    if (speed || est == _i / NKEPT) /* (seeds as when the table held the
                                        first seven policies) */
      jumps += kept_case(&sc, &o, est, 7 * (2 * speed + est) + _i % NKEPT,
                         KEPT_JOBS, 0);
  ck_assert_msg(jumps > 10, "%s: %llu jumps", o.policy,
                (unsigned long long)jumps);
  sim_cluster_free(&sc);
}
END_TEST

/* Two job classes that rank the models apart (a faster on A100, b on
 * H100) in a table of schedsim's form, for indexed_equals_plain_classes;
 * its path. */
static const char *two_class_table(void) {
  static char path[512];
  put_text(path, sizeof path, "two.json",
           "{\"classes\": {\"a\": {\"A100-SXM4-80GB\": 3, "
           "\"H100-SXM5-80GB\": 2}, \"b\": {\"A100-SXM4-80GB\": 2, "
           "\"H100-SXM5-80GB\": 4}}}");
  return path;
}

/* The type-aware policies place by the request's speed, which differs by
 * job class: two jobs of one request may go to different models, so the
 * index keys a shape by class too when the table has several
 * (queue_index.c by_class; the rejection memo reuses a placement). The
 * kept workload on A100 and H100 nodes, jobs of classes a and b mixed
 * within each shape (two_class_table), indexed against plain; the
 * indexed runs must jump. Keying shapes without the class fails the 4
 * cases of fastest-fit and cheapest-work (a job started or ended at
 * another time); first-fit, which reads no speed, is the control. */
static const char *const class_policies[] = {"fastest-fit", "cheapest-work",
                                             "first-fit"};
START_TEST(indexed_equals_plain_classes) {
  sim_cluster sc;
  nodes_a100_h100(&sc, 2);
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = class_policies[_i % 3];
  o.queue = SIM_QUEUE_BACKFILL;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.overrun = SIM_OVERRUN_EXTEND;
  o.speed = SIM_SPEED_CATALOG;
  o.speed_table = two_class_table();
  o.measured_on = "A100-SXM4-80GB";
  uint64_t jumps = 0;
  for (int est = 0; est < 2; est++)
    jumps += kept_case(&sc, &o, est, 100 + 2 * _i + est, 2 * KEPT_JOBS,
                       0x94D049BB133111EBull ^ (uint64_t)(_i + 1));
  ck_assert_msg(jumps > 10, "%s: %llu jumps", o.policy,
                (unsigned long long)jumps);
  sim_cluster_free(&sc);
}
END_TEST

/* The hand cases' options: first-fit, backfill, seed 1, known durations
 * as exact estimates. */
static sim_options hand_opts(void) {
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = "first-fit";
  o.queue = SIM_QUEUE_BACKFILL;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.estimates = SIM_EST_EXACT;
  return o;
}

/* A rewind by hand (queue_index.c rewind_jumped). Two nodes of 8 GPUs,
 * first-fit, exact estimates: X (6 GPUs, 100 s) and Y (6 GPUs, 1,000 s)
 * start at 0 on nodes 0 and 1; at 1 s arrive H (8 GPUs: blocked, its
 * reservation node 0 at 100 s), then 70 jobs A (2 GPUs, 500 s), B1 and
 * B2 (1 GPU, 50 s) and 5 more A. The pass keeps A1 (node 0 past 100 s
 * would delay H), A2..A65 by rejected_before, and at the 64th such keep
 * (QX_JUMP_AFTER) jumps over every later A (all as long); B1 and B2 start
 * on node 0 (they end before 100 s), which moves the generation after
 * A70: the walk then tries A71 anew, finds node 0 full and starts it on
 * node 1, which leaves H's reservation alone; A72 then finds no room. So
 * A71 starts at 1 s and the other A at 100 s or later, indexed (with a
 * jump) and plain alike. Without the rewind A71 waits (fails). */
START_TEST(jump_rewind_hand) {
  sim_cluster sc;
  nodes(&sc, 2);
  trace t;
  trace_named(&t, "rewind.csv");
  tu_add_job(&t, "X", 0, 100, 6, 1000, NULL);
  tu_add_job(&t, "Y", 0, 1000, 6, 1000, NULL);
  tu_add_job(&t, "H", 1, 100, 8, 1000, NULL);
  char name[16];
  for (int k = 1; k <= 75; k++) {
    if (k == 71) {
      tu_add_job(&t, "B1", 1, 50, 1, 1000, NULL);
      tu_add_job(&t, "B2", 1, 50, 1, 1000, NULL);
    }
    snprintf(name, sizeof name, "A%d", k);
    tu_add_job(&t, name, 1, 500, 2, 1000, NULL);
  }
  for (int plain = 0; plain < 2; plain++) {
    sim_options o = hand_opts();
    sim_result r;
    run(&sc, &t, &o, plain, &r);
    const int64_t s1 = TRACE_US_PER_S;
    ck_assert_int_eq(r.js[73].start_us, s1); /* B1 */
    ck_assert_int_eq(r.js[74].start_us, s1); /* B2 */
    ck_assert_int_eq(r.js[75].start_us, s1); /* A71 */
    ck_assert_int_eq(r.js[75].node, 1);
    for (int j = 3; j <= 72; j++) /* A1..A70 */
      ck_assert_int_ge(r.js[j].start_us, 100 * s1);
    for (int j = 76; j <= 79; j++) /* A72..A75 */
      ck_assert_int_ge(r.js[j].start_us, 100 * s1);
    if (plain)
      ck_assert_uint_eq(r.backfill_jumps, 0);
    else
      ck_assert_uint_ge(r.backfill_jumps, 1);
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* 20,000 identical jobs at time 0 on one node (8 start at once, one per
 * GPU, each runs 10 s), then one 1-GPU job at 5 s: skip starts them 8 at a
 * time every 10 s, job k at 10 x floor(k / 8) s; the late one waits for a
 * free GPU behind the earlier arrivals (it is one of their shape): it
 * starts after all of them, at 10 x 2500 = 25,000 s. */
START_TEST(identical_jobs_hand) {
  sim_cluster sc;
  nodes(&sc, 1);
  trace t;
  trace_named(&t, "same.csv");
  for (int k = 0; k < 20000; k++) {
    char name[16];
    snprintf(name, sizeof name, "j%d", k);
    tu_add_job(&t, name, 0, 10, 1, 1000, NULL);
  }
  tu_add_job(&t, "late", 5, 10, 1, 1000, NULL);
  for (int q = 0; q < 2; q++) {
    sim_options o;
    memset(&o, 0, sizeof o);
    o.policy = "best-fit";
    o.queue = q ? SIM_QUEUE_BACKFILL : SIM_QUEUE_SKIP;
    o.seed = 1;
    o.unknown_duration_us = -1;
    sim_result r;
    run(&sc, &t, &o, 0, &r);
    for (size_t k = 0; k < 20000; k++)
      ck_assert_int_eq(r.js[k].start_us,
                       (int64_t)(k / 8) * 10 * TRACE_US_PER_S);
    ck_assert_int_eq(r.js[20000].start_us, INT64_C(25000) * TRACE_US_PER_S);
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* A head that failed alone in the queue (no reservation: no candidate)
 * gets its reservation at the first pass with a job behind it, here an
 * arrival of its own shape (failed in the epoch: nothing pending), which
 * the pass has no other work for (queue_index_pass_backfill's early
 * return must leave it). Job a holds the node from 0 s, requested 200 s,
 * ends at 100 s; b arrives at 1 s, c at 2 s, both of the whole node: b's
 * reservation is a's estimated end, 200 s, taken at 2 s; it starts at 100
 * s (a reservation taken then would be none: it starts in the head's
 * turn), c at 110 s. Leaving out the early return's test of the head's
 * reservation fails it. */
START_TEST(first_reservation_hand) {
  sim_cluster sc;
  nodes(&sc, 1);
  trace t;
  trace_named(&t, "first.csv");
  static const struct {
    const char *name;
    int64_t submit, dur;
    uint32_t req;
  } jobs[] = {{"a", 0, 100, 200}, {"b", 1, 10, 10}, {"c", 2, 10, 10}};
  for (int k = 0; k < 3; k++) {
    tu_add_job(&t, jobs[k].name, jobs[k].submit, jobs[k].dur, 8, 1000, NULL);
    t.jobs[k].req_s = jobs[k].req;
  }
  for (int plain = 0; plain < 2; plain++) {
    sim_options o = hand_opts();
    o.estimates = SIM_EST_TRACE;
    o.overrun = SIM_OVERRUN_EXTEND;
    sim_result r;
    run(&sc, &t, &o, plain, &r);
    ck_assert_int_eq(r.js[1].start_us, INT64_C(100) * TRACE_US_PER_S);
    ck_assert_int_eq(r.js[2].start_us, INT64_C(110) * TRACE_US_PER_S);
    ck_assert_ptr_nonnull(r.reserved_us);
    ck_assert_int_eq(r.reserved_us[1], INT64_C(200) * TRACE_US_PER_S);
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * A stamp compares the end a job of the shape would have marked running
 * (est_marked_end), which under segments is now plus its work left: a
 * preempted job queued again has done some (--preemptible BE, checkpoint
 * every 100 s, one node of 8 GPUs, first-fit, exact estimates). At 0 P
 * (BE, 1 GPU, 3,000 s), R (6 GPUs, 3,500 s) and Y (1 GPU, 3,000 s) fill
 * the node, all but P of class LS. At 2,600 arrive X (1 GPU, 300 s), H
 * (8 GPUs, 100 s) and A (BE, 1 GPU, 2,000 s: P's shape): X, the head,
 * stops P (26 whole intervals kept: 400 s left) and runs to 2,900; P goes
 * to the tail behind H and A (the shape's key holds the class: P and A
 * are both BE). At 2,900 H's reservation is 3,500 (R's end): A would end
 * at 4,900 and hold a GPU H needs, so it waits and stamps its shape with
 * 4,900; P, of its shape,
 * would end at 2,900 + 400 = 3,300 < 4,900, so it is asked, and starts
 * (it leaves before 3,500). H runs 3,500..3,600, A from 3,600. Comparing
 * P's whole run (2,900 + 3,000 = 5,900 >= 4,900) kept P until 3,600
 * (fails: P would end at 4,000).
 */
START_TEST(marked_end_hand) {
  sim_cluster sc;
  nodes(&sc, 1);
  trace t;
  trace_named(&t, "marked.csv");
  static const struct {
    const char *name;
    int64_t submit, dur;
    int gpus, qos;
  } jobs[] = {{"P", 0, 3000, 1, TRACE_QOS_BE},
              {"R", 0, 3500, 6, TRACE_QOS_LS},
              {"Y", 0, 3000, 1, TRACE_QOS_LS},
              {"X", 2600, 300, 1, TRACE_QOS_LS},
              {"H", 2600, 100, 8, TRACE_QOS_LS},
              {"A", 2600, 2000, 1, TRACE_QOS_BE}};
  for (int k = 0; k < 6; k++) {
    tu_add_job(&t, jobs[k].name, jobs[k].submit, jobs[k].dur, jobs[k].gpus,
               1000, NULL);
    t.jobs[k].qos = (uint8_t)jobs[k].qos;
  }
  const int64_t s1 = TRACE_US_PER_S;
  for (int plain = 0; plain < 2; plain++) {
    sim_options o = hand_opts();
    o.preemptible = "BE";
    o.checkpoint_s = 100;
    sim_result r;
    run(&sc, &t, &o, plain, &r);
    ck_assert_uint_eq(r.preemptions_total, 1);
    ck_assert_uint_eq(r.preemptions[0], 1);
    ck_assert_int_eq(r.js[0].finish_us, 3300 * s1); /* P */
    ck_assert_int_eq(r.js[3].finish_us, 2900 * s1); /* X */
    ck_assert_int_eq(r.js[4].start_us, 3500 * s1);  /* H */
    ck_assert_int_eq(r.js[5].start_us, 3600 * s1);  /* A */
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * A candidate rejected in full because it would slow a co-runner stamps
 * the shape of its class only (queue_backfill.c decide, queue_index.c
 * by_class): the slowdown depends on the two jobs' classes. A table in
 * Gavel's form on
 * one shared V100 (durations measured there, speed 1 for every class):
 * class a slows a co-runner of class c to half its speed; every other
 * pair runs at full speed. C (class c, 500 milli, 200 s) runs from 0. At
 * 1 arrive H (b, 600 milli, 10 s: its reservation 200), j (a, 400 milli,
 * 1,000 s) and k (b, 400 milli, 1,000 s). j beside C would stretch C's
 * 199 s left to 398: H could not start at 200, so j waits. k beside C
 * slows nobody, and at 200 leaves H its 600 milli: k starts at 1. H runs
 * 200..210, j from 210 (beside k). Keying shapes without the class let
 * j's stamp keep k waiting (j would start at 200, k at 210: fails).
 */
START_TEST(slowing_stamp_by_class_hand) {
  char table[1024];
  put_text(table, sizeof table, "pairs.json",
           "{\"v100\": {"
           "\"('a', 1)\": {\"null\": 1, \"('b', 1)\": [0.5, 0.5], "
           "\"('c', 1)\": [0.5, 0.5]}, "
           "\"('b', 1)\": {\"null\": 1, \"('a', 1)\": [0.5, 0.5], "
           "\"('b', 1)\": [0.5, 0.5], \"('c', 1)\": [0.5, 0.5]}, "
           "\"('c', 1)\": {\"null\": 1, \"('a', 1)\": [0.25, 0.25], "
           "\"('b', 1)\": [0.5, 0.5], \"('c', 1)\": [0.5, 0.5]}}}");
  char json[512], err[512];
  snprintf(json, sizeof json,
           "{\"name\": \"t\", \"node_groups\": [{\"name\": \"v\", \"count\": "
           "1, \"gpu_model\": \"V100M16\", \"gpus_per_node\": 1, "
           "\"cpu_milli\": 64000, \"memory_mib\": 640000, \"gpu_mode\": "
           "\"shared\", \"price_per_gpu_hour\": 1}]}");
  sim_cluster sc;
  ck_assert_msg(sim_cluster_from_json(&sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
  trace t;
  trace_named(&t, "slows.csv");
  static const struct {
    const char *name, *cls;
    int64_t submit, dur;
    int milli;
  } jobs[] = {{"C", "c", 0, 200, 500},
              {"H", "b", 1, 10, 600},
              {"j", "a", 1, 1000, 400},
              {"k", "b", 1, 1000, 400}};
  for (int n = 0; n < 4; n++) {
    tu_add_job(&t, jobs[n].name, jobs[n].submit, jobs[n].dur, 1,
               jobs[n].milli, NULL);
    t.jobs[n].jclass = (uint16_t)trace_intern_class(&t, jobs[n].cls);
  }
  t.measured_on = "V100M16";
  const int64_t s1 = TRACE_US_PER_S;
  for (int plain = 0; plain < 2; plain++) {
    sim_options o = hand_opts();
    o.speed = SIM_SPEED_CATALOG;
    o.speed_table = table;
    sim_result r;
    run(&sc, &t, &o, plain, &r);
    ck_assert_int_eq(r.js[0].finish_us, 200 * s1);  /* C, never slowed */
    ck_assert_int_eq(r.js[1].start_us, 200 * s1);   /* H */
    ck_assert_int_eq(r.js[1].finish_us, 210 * s1);
    ck_assert_int_eq(r.js[3].start_us, 1 * s1);     /* k */
    ck_assert_int_eq(r.js[3].finish_us, 1001 * s1);
    ck_assert_int_eq(r.js[2].start_us, 210 * s1);   /* j */
    ck_assert_int_eq(r.js[2].finish_us, 1210 * s1);
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("queue_index");
  TCase *tc = tcase_create("queue_index");
  tcase_set_timeout(tc, 600); /* ASan on a loaded 2-core machine */
  tcase_add_checked_fixture(tc, load_catalog, free_catalog);
  tcase_add_loop_test(tc, indexed_equals_plain, 0, 4 * NPOL);
  tcase_add_loop_test(tc, indexed_equals_plain_shares, 0, 2 * NPOL);
  tcase_add_loop_test(tc, indexed_equals_plain_preempt, 0, 4);
  tcase_add_loop_test(tc, indexed_equals_plain_speed, 0, 8);
  tcase_add_loop_test(tc, indexed_equals_plain_large, 0, 2);
  tcase_add_loop_test(tc, indexed_equals_plain_kept, 0, 4 * NKEPT);
  tcase_add_loop_test(tc, indexed_equals_plain_classes, 0, 6);
  tcase_add_test(tc, jump_rewind_hand);
  tcase_add_test(tc, identical_jobs_hand);
  tcase_add_test(tc, first_reservation_hand);
  tcase_add_test(tc, marked_end_hand);
  tcase_add_test(tc, slowing_stamp_by_class_hand);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
