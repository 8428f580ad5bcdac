/*
 * Runtime estimates (sim/engine/estimate.c): --estimates sources, the
 * overrun rules (kill, extend), the consistency of backfill decisions with
 * overdue jobs, SWF requested times, bounded slowdown, and the model of
 * user estimates (sim/engine/estimate_model.c, model:tsafrir05). Every
 * expected value is worked out by hand in the comment above its test.
 */
#include "catalog.h"
#include "cluster_spec.h"
#include "engine.h"
#include "estimate_model.h"
#include "testutil.h"
#include "trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S(x) ((int64_t)(x) * TRACE_US_PER_S)

static gpu_catalog cat;

static void load_catalog(void) {
  char err[512];
  ck_assert_msg(catalog_load_default(&cat, err, sizeof err) == 0, "%s", err);
}

static void free_catalog(void) { catalog_free(&cat); }

/* One node of g A100-80GB GPUs. */
static void one_node(sim_cluster *sc, int g) {
  char json[512], err[512];
  snprintf(json, sizeof json,
           "{\"name\": \"t\", \"node_groups\": [{\"name\": \"n\", \"count\": "
           "1, \"gpu_model\": \"A100-80GB\", \"gpus_per_node\": %d, "
           "\"cpu_milli\": 640000, \"memory_mib\": 640000, "
           "\"price_per_gpu_hour\": 1}]}",
           g);
  ck_assert_msg(sim_cluster_from_json(sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
}

/* A job of gpus whole GPUs; req_s is its requested time (0: none). */
/* An empty trace with submit times, named path (for error messages). */
static void times_trace(trace *t, const char *path) {
  trace_init(t);
  t->path = strdup(path);
  t->has_times = 1;
}

static void add(trace *t, const char *name, int64_t submit_s, int64_t dur_s,
                int gpus, uint32_t req_s) {
  tu_add_job(t, name, submit_s, dur_s, gpus, 1000, NULL);
  t->jobs[t->n - 1].req_s = req_s; /* the requested time (SWF field 9) */
}

static int run(sim_cluster *sc, const trace *t, sim_queue_kind q,
               sim_estimates est, double factor, sim_overrun ov,
               sim_result *r, char *err, size_t errlen) {
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = "first-fit";
  o.queue = q;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.estimates = est;
  o.estimate_factor = factor;
  o.overrun = ov;
  o.check_reservations = 1;
  err[0] = 0;
  return sim_run(sc, &cat, t, &o, r, err, errlen);
}

/*
 * The reproducer, one 64-GPU node, estimates from the trace:
 *   job1 t=0 50 GPUs, runs 10 s, estimate 5 s
 *   job2 t=1 16 GPUs, runs 10 s, estimate 10 s (the head: 14 GPUs free)
 *   job3 t=3  1 GPU,  runs 6 s,  estimate 6 s (present or not)
 *   job4 t=8  1 GPU,  runs 20 s, estimate 20 s
 * extend: at 8 job1 is overdue and taken as ending now, so the head's
 * reservation is 8 (its 50 GPUs free 63 or 62); job4 leaves it at 8 and
 * starts at 8, with job3 or without. job1 ends at 10, the head starts
 * then. (Before the fix, the reservation of 5 computed at 1 was kept: job4
 * was refused, and started at 9 with job3, at 10 without.)
 * kill: job1 is killed at 5 (status killed); the head starts at 5, job4
 * at 8 (47 or 48 GPUs free).
 */
START_TEST(overdue_four_jobs) {
  int with3 = _i & 1, kill = _i >> 1;
  sim_cluster sc;
  one_node(&sc, 64);
  trace t;
  times_trace(&t, "four.csv");
  add(&t, "job1", 0, 10, 50, 5);
  add(&t, "job2", 1, 10, 16, 10);
  if (with3)
    add(&t, "job3", 3, 6, 1, 6);
  add(&t, "job4", 8, 20, 1, 20);
  size_t j4 = t.n - 1;
  sim_result r;
  char err[512];
  ck_assert_msg(run(&sc, &t, SIM_QUEUE_BACKFILL, SIM_EST_TRACE, 0,
                    kill ? SIM_OVERRUN_KILL : SIM_OVERRUN_EXTEND, &r, err,
                    sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(r.js[j4].start_us, S(8));
  if (kill) {
    ck_assert_int_eq(r.js[0].status, JOB_KILLED);
    ck_assert_int_eq(r.js[0].finish_us, S(5));
    ck_assert_int_eq(r.js[1].start_us, S(5));
    ck_assert_uint_eq(r.jobs_killed, 1);
  } else {
    ck_assert_int_eq(r.js[0].status, JOB_DONE);
    ck_assert_int_eq(r.js[0].finish_us, S(10));
    ck_assert_int_eq(r.js[1].start_us, S(10));
    ck_assert_uint_eq(r.jobs_killed, 0);
  }
  ck_assert_uint_eq(r.completed, t.n); /* killed jobs count as completed */
  if (with3)
    ck_assert_int_eq(r.js[2].start_us, S(3));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* The default overrun rule: kill with trace estimates, extend with a
 * factor (a factor below 1 lets jobs run past their estimates, as before
 * --overrun existed). */
START_TEST(overrun_defaults) {
  sim_options o;
  memset(&o, 0, sizeof o);
  sim_cluster sc;
  one_node(&sc, 64);
  trace t;
  times_trace(&t, "d.csv");
  add(&t, "a", 0, 10, 50, 5);
  sim_result r;
  char err[512];
  ck_assert_int_eq(run(&sc, &t, SIM_QUEUE_BACKFILL, SIM_EST_TRACE, 0,
                       SIM_OVERRUN_DEFAULT, &r, err, sizeof err),
                   0);
  ck_assert_int_eq(r.js[0].status, JOB_KILLED);
  sim_result_free(&r);
  ck_assert_int_eq(run(&sc, &t, SIM_QUEUE_BACKFILL, SIM_EST_FACTOR, 0.5,
                       SIM_OVERRUN_DEFAULT, &r, err, sizeof err),
                   0);
  ck_assert_int_eq(r.js[0].status, JOB_DONE);
  ck_assert_int_eq(r.js[0].finish_us, S(10));
  sim_result_free(&r);
  /* factor 0.5 under kill: killed at ceil(10 s x 0.5) = 5 s. */
  ck_assert_int_eq(run(&sc, &t, SIM_QUEUE_FIFO, SIM_EST_FACTOR, 0.5,
                       SIM_OVERRUN_KILL, &r, err, sizeof err),
                   0);
  ck_assert_int_eq(r.js[0].status, JOB_KILLED);
  ck_assert_int_eq(r.js[0].finish_us, S(5));
  sim_result_free(&r);
  /* exact: nothing is ever killed, whatever the rule. */
  ck_assert_int_eq(run(&sc, &t, SIM_QUEUE_BACKFILL, SIM_EST_EXACT, 0,
                       SIM_OVERRUN_KILL, &r, err, sizeof err),
                   0);
  ck_assert_int_eq(r.js[0].status, JOB_DONE);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * SWF field 9 differs from the run time, one 4-GPU node (1 GPU per
 * processor):
 *   A t=0 2 procs, runs 100 s, requests 100 s
 *   B t=1 4 procs, runs 50 s,  requests 50 s  (the head; reservation 100)
 *   C t=2 2 procs, runs 50 s,  requests 200 s
 *   D t=3 2 procs, runs 30 s,  requests -1    (no limit: its run time)
 * exact: C would end at 52 <= 100: backfilled at 2 (ends 52); D fits at
 * 52 and its end 82 <= 100: starts at 52. B starts at 100.
 * trace: C's estimated end 202 > 100 and, running, it holds 2 of the 4
 * GPUs B needs until 202: refused. D (estimate 30 s, the fallback) ends
 * at 33 <= 100: backfilled at 3. B runs 100-150, then C starts at 150.
 * The decision follows field 9, not the truth.
 */
START_TEST(swf_requested_time_drives_backfill) {
  char path[512];
  put_text(path, sizeof path, "req.swf",
           "; hand case\n"
           "1 0 -1 100 2 -1 -1 2 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
           "2 1 -1 50 4 -1 -1 4 50 -1 1 1 1 -1 -1 -1 -1 -1\n"
           "3 2 -1 50 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1\n"
           "4 3 -1 30 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n");
  trace t;
  trace_init(&t);
  trace_error te;
  ck_assert_msg(trace_load(&t, path, &te) == 0, "%s", te.msg);
  ck_assert_uint_eq(t.n, 4);
  ck_assert_uint_eq(t.jobs[0].req_s, 100);
  ck_assert_uint_eq(t.jobs[2].req_s, 200);
  ck_assert_uint_eq(t.jobs[3].req_s, 0); /* -1: none */
  sim_cluster sc;
  one_node(&sc, 4);
  sim_result r;
  char err[512];
  ck_assert_msg(run(&sc, &t, SIM_QUEUE_BACKFILL, SIM_EST_EXACT, 0,
                    SIM_OVERRUN_DEFAULT, &r, err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(r.js[1].start_us, S(100));
  ck_assert_int_eq(r.js[2].start_us, S(2));
  ck_assert_int_eq(r.js[3].start_us, S(52));
  sim_result_free(&r);
  ck_assert_msg(run(&sc, &t, SIM_QUEUE_BACKFILL, SIM_EST_TRACE, 0,
                    SIM_OVERRUN_DEFAULT, &r, err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(r.js[1].start_us, S(100));
  ck_assert_int_eq(r.js[2].start_us, S(150));
  ck_assert_int_eq(r.js[3].start_us, S(3));
  ck_assert_uint_eq(r.jobs_killed, 0); /* every run <= its request */
  for (int k = 0; k < 4; k++)
    ck_assert_int_eq(r.js[k].status, JOB_DONE);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * Bounded slowdown = max(1, (finish - submit) / max(finish - start, 10 s)),
 * fifo on one 2-GPU node:
 *   A t=0 1 GPU 10 s: runs 0-10           -> 10 / 10 = 1
 *   B t=0 2 GPUs 20 s: waits, runs 10-30  -> 30 / 20 = 1.5
 *   C t=5 1 GPU 4 s: behind B, runs 30-34 -> 29 / max(4, 10) = 2.9
 * mean 5.4 / 3 = 1.8, median 1.5, max 2.9.
 */
START_TEST(bounded_slowdown_hand) {
  sim_cluster sc;
  one_node(&sc, 2);
  trace t;
  times_trace(&t, "b.csv");
  add(&t, "A", 0, 10, 1, 0);
  add(&t, "B", 0, 20, 2, 0);
  add(&t, "C", 5, 4, 1, 0);
  sim_result r;
  char err[512];
  ck_assert_msg(run(&sc, &t, SIM_QUEUE_FIFO, SIM_EST_EXACT, 0,
                    SIM_OVERRUN_DEFAULT, &r, err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(r.js[2].start_us, S(30));
  ck_assert_uint_eq(r.bounded_slowdown.n, 3);
  ck_assert_double_eq_tol(r.bounded_slowdown.mean, 1.8, 1e-9);
  ck_assert_double_eq_tol(r.bounded_slowdown.p50, 1.5, 1e-9);
  ck_assert_double_eq_tol(r.bounded_slowdown.max, 2.9, 1e-9);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * Random workloads with many overdue jobs (requested times from a third
 * to twice the run time) on one 8-GPU node: with check_reservations every
 * backfilled start recomputes the head's reservation and the run fails if
 * it moved later; under both rules every run passes. Under kill exactly
 * the jobs whose request is below their run time are killed, at start +
 * request.
 */
START_TEST(overdue_never_delays_head) {
  int kill = _i & 1;
  uint64_t x = 0x9E3779B97F4A7C15ull + (uint64_t)_i * 104729;
  sim_cluster sc;
  one_node(&sc, 8);
  trace t;
  times_trace(&t, "rand.csv");
  int64_t submit = 0;
  size_t expect_killed = 0;
  for (int k = 0; k < 150; k++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    submit += (int64_t)(x % 4);
    int gpus = 1 + (int)((x >> 8) % 8);
    int64_t dur = 3 + (int64_t)((x >> 32) % 40);
    uint32_t req = (uint32_t)(dur / 3 + (int64_t)((x >> 40) % (uint64_t)(2 * dur)));
    if (req == 0)
      req = 1;
    expect_killed += (int64_t)req < dur;
    char name[16];
    snprintf(name, sizeof name, "j%d", k);
    add(&t, name, submit, dur, gpus, req);
  }
  sim_result r;
  char err[512];
  ck_assert_msg(run(&sc, &t, SIM_QUEUE_BACKFILL, SIM_EST_TRACE, 0,
                    kill ? SIM_OVERRUN_KILL : SIM_OVERRUN_EXTEND, &r, err,
                    sizeof err) == 0,
                "%s", err);
  ck_assert_uint_gt(expect_killed, 0);
  ck_assert_uint_eq(r.jobs_killed, kill ? expect_killed : 0);
  for (size_t j = 0; j < t.n; j++) {
    const job_record *jr = &t.jobs[j];
    if (kill && (int64_t)jr->req_s * TRACE_US_PER_S < jr->duration_us) {
      ck_assert_int_eq(r.js[j].status, JOB_KILLED);
      ck_assert_int_eq(r.js[j].finish_us - r.js[j].start_us, S(jr->req_s));
    } else {
      ck_assert_int_eq(r.js[j].status, JOB_DONE);
      ck_assert_int_eq(r.js[j].finish_us - r.js[j].start_us, jr->duration_us);
    }
  }
  sim_result_free(&r);
  /* The same jobs with the factor 0.5 (every job overdue under extend). */
  ck_assert_msg(run(&sc, &t, SIM_QUEUE_BACKFILL, SIM_EST_FACTOR, 0.5,
                    kill ? SIM_OVERRUN_KILL : SIM_OVERRUN_EXTEND, &r, err,
                    sizeof err) == 0,
                "%s", err);
  ck_assert_uint_eq(r.jobs_killed, kill ? t.n : 0);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* ------------------------------------------------------------ the model */

#define H_ (3600)
#define M_ (60)

/*
 * The model's fixed parts, by hand from est_model.cc:
 * - K, the number of distinct estimates, linear through (20,10),
 *   (200,20), (1000,35), (10000,90), (70000,340), (250000,565):
 *   n=20: 10; n=100: 10 + round(80 x 10/180 = 4.44) = 14; n=200: 20;
 *   n=18239: 90 + round(8239 x 250/60000 = 34.3) = 124; n=20000: 90 +
 *   round(41.7) = 132; beyond 250000: 565.
 * - The default maximum: the longest job in whole hours, rounded up, at
 *   least 1 h: 62643 s (the NASA log's longest) -> 18 h.
 * - Head times for M = 18 h: M; the 14 shared values below it (5m 10m 15m
 *   20m 30m 1h 2h 3h 4h 5h 6h 8h 10h 12h); then multiples counted down
 *   from M: of 10 h: 10h (taken); of 5 h: 15h (new), 10h, 5h; of 2 h: 18h,
 *   16h (new), 14h (new), 12h ... ; of 1 h: 18h, 17h (new), 16h, 15h, 14h,
 *   13h (new): 20. For M = 1 h: the 5 shared values below it, then 40m
 *   (20-minute steps), 50m (10-minute), 55m 45m 35m 25m (5-minute): 12.
 */
START_TEST(model_fixed_parts) {
  ck_assert_ptr_nonnull(sim_est_model_find("tsafrir05", 9));
  ck_assert_ptr_nonnull(sim_est_model_find("tsafrir05:3600", 9));
  ck_assert_ptr_null(sim_est_model_find("tsafrir0", 8));
  ck_assert_ptr_null(sim_est_model_find("tsafrir05x", 10));
  ck_assert_int_eq(tsafrir05_binnum(20), 10);
  ck_assert_int_eq(tsafrir05_binnum(100), 14);
  ck_assert_int_eq(tsafrir05_binnum(200), 20);
  ck_assert_int_eq(tsafrir05_binnum(18239), 124);
  ck_assert_int_eq(tsafrir05_binnum(20000), 132);
  ck_assert_int_eq(tsafrir05_binnum(1000000), 565);
  ck_assert_int_eq(tsafrir05_default_max(S(62643)), 18 * H_);
  ck_assert_int_eq(tsafrir05_default_max(S(3600)), H_);
  ck_assert_int_eq(tsafrir05_default_max(S(3600) + 1), 2 * H_);
  ck_assert_int_eq(tsafrir05_default_max(0), H_);
  int64_t head[20];
  static const int64_t want18[20] = {
      18 * H_, 5 * M_,  10 * M_, 15 * M_, 20 * M_, 30 * M_, 1 * H_,
      2 * H_,  3 * H_,  4 * H_,  5 * H_,  6 * H_,  8 * H_,  10 * H_,
      12 * H_, 13 * H_, 14 * H_, 15 * H_, 16 * H_, 17 * H_};
  ck_assert_int_eq(tsafrir05_head_times(18 * H_, head), 20);
  for (int i = 0; i < 20; i++)
    ck_assert_int_eq(head[i], want18[i]);
  static const int64_t want1[12] = {H_,      5 * M_,  10 * M_, 15 * M_,
                                    20 * M_, 25 * M_, 30 * M_, 35 * M_,
                                    40 * M_, 45 * M_, 50 * M_, 55 * M_};
  ck_assert_int_eq(tsafrir05_head_times(H_, head), 12);
  for (int i = 0; i < 12; i++)
    ck_assert_int_eq(head[i], want1[i]);
}
END_TEST

/*
 * The assignment by hand (est_model.cc shuffle): jobs longest first, each
 * draws one of the estimates left that are at least its run time.
 * - runs 100, 50, 10 s, estimates 100, 60, 20: one way only (100 -> 100,
 *   50 -> 60, 10 -> 20).
 * - runs 5, 150, 20 s, estimates 200, 100, 30: 150 s -> 200 (the only
 *   one); 20 s -> 100 or 30 at random, 5 s the other: over 64 seeds both
 *   ways happen.
 * - a job of 300 s with estimates 200, 100: longer than the largest, it
 *   counts as running 200 s and gets 200; the other (50 s) 100.
 * - runs 150, 120 s, estimates 200, 100: the second longest (trace
 *   position 2, 120 s) has no estimate left that long: an error naming it.
 */
START_TEST(model_assign_hand) {
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  char err[512];
  uint32_t est[3];
  {
    int64_t run[3] = {S(100), S(50), S(10)};
    uint32_t se[3] = {100, 60, 20};
    ck_assert_int_eq(sim_est_assign(est, run, 3, se, r, err, sizeof err), 0);
    ck_assert_uint_eq(est[0], 100);
    ck_assert_uint_eq(est[1], 60);
    ck_assert_uint_eq(est[2], 20);
  }
  int seen[2] = {0, 0};
  for (unsigned long seed = 1; seed <= 64; seed++) {
    gsl_rng_set(r, seed);
    int64_t run[3] = {S(5), S(150), S(20)};
    uint32_t se[3] = {200, 100, 30};
    ck_assert_int_eq(sim_est_assign(est, run, 3, se, r, err, sizeof err), 0);
    ck_assert_uint_eq(est[1], 200);
    ck_assert(est[2] == 100 || est[2] == 30);
    ck_assert_uint_eq(est[0] + est[2], 130);
    seen[est[2] == 100]++;
  }
  ck_assert_int_gt(seen[0], 0);
  ck_assert_int_gt(seen[1], 0);
  {
    int64_t run[2] = {S(300), S(50)};
    uint32_t se[2] = {200, 100};
    ck_assert_int_eq(sim_est_assign(est, run, 2, se, r, err, sizeof err), 0);
    ck_assert_uint_eq(est[0], 200);
    ck_assert_uint_eq(est[1], 100);
  }
  {
    int64_t run[2] = {S(150), S(120)};
    uint32_t se[2] = {200, 100};
    ck_assert_int_eq(sim_est_assign(est, run, 2, se, r, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "trace position 2 runs 120 s"), "%s", err);
  }
  gsl_rng_free(r);
}
END_TEST

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static int cmp_count_desc(const void *a, const void *b) {
  const int64_t *x = a, *y = b; /* {count, time} */
  if (x[0] != y[0])
    return (x[0] < y[0]) - (x[0] > y[0]);
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* n run times log-uniform from 1 s to 17 h, every 997th of 20 h. */
static void synth_runs(int64_t *run, size_t n) {
  uint64_t x = 0x243F6A8885A308D3ull;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    double u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
    run[i] = (int64_t)(1e6 * exp(u * log(17.0 * H_)));
  }
  for (size_t i = 0; i < n / 997; i++)
    run[i * 997] = S(20 * H_);
}

/* Jobs per estimate of est[0..n), most used first: {count, time}; the
 * number of distinct estimates into *nd. */
static int64_t (*count_estimates(const uint32_t *est, size_t n,
                                 size_t *nd))[2] {
  uint32_t *sorted = malloc(n * sizeof *sorted);
  int64_t(*cnt)[2] = malloc(n * sizeof *cnt);
  ck_assert(sorted && cnt);
  memcpy(sorted, est, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, cmp_u32);
  *nd = 0;
  for (size_t i = 0; i < n; i++) {
    if (!*nd || cnt[*nd - 1][1] != sorted[i]) {
      cnt[*nd][0] = 0;
      cnt[(*nd)++][1] = sorted[i];
    }
    cnt[*nd - 1][0]++;
  }
  qsort(cnt, *nd, sizeof *cnt, cmp_count_desc);
  free(sorted);
  return cnt;
}

/*
 * The model's distribution on 100,000 synthetic jobs (run times spread
 * log-uniformly from 1 s to 17 h, plus 100 jobs of 20 h) with M = 18 h:
 * - the 20 most used estimates are the 20 head times (model_fixed_parts);
 * - they hold 89% of the jobs, and the x-th most used holds
 *   a e^(bx) + c percent (a = 14.0491, b = -0.177531, c = 0.462513) for
 *   x = 2..20, the first 89 minus the sum of those (21.73%);
 * - the 21st most used (the first of the tail) holds 11% x 21^-2.267 /
 *   sum of r^-2.267 over the tail's ranks r = 21 .. 20 + (bins - 20);
 * within a tolerance of K + 30 jobs (K = 378 estimates for 100,000 jobs):
 * each bin's count is its share x n rounded (at least 1), so the counts
 * miss n by at most K; that difference is then spread over the bins
 * largest first, each taking ceil(its share of it): a bin moves by at
 * most 0.5 + K x its share + 1 jobs, the 20 head bins together by at most
 * 10 + K + 20.
 * Every job of at most M gets an estimate at least its run time, those of
 * 20 h get M. The same seed gives the same estimates, another seed others.
 */
START_TEST(model_distribution) {
  const size_t n = 100000;
  int64_t *run = malloc(n * sizeof *run);
  uint32_t *est = malloc(n * sizeof *est), *est2 = malloc(n * sizeof *est2);
  ck_assert(run && est && est2);
  synth_runs(run, n);
  char err[512];
  const int64_t M = 18 * H_;
  sim_est_model_params mp = {M, 0, 7};
  ck_assert_msg(est_model_tsafrir05(est, run, n, &mp, err, sizeof err) == 0,
                "%s", err);
  for (size_t i = 0; i < n; i++) {
    if (run[i] <= S(M))
      ck_assert_int_ge(S(est[i]), run[i]);
    else
      ck_assert_uint_eq(est[i], M);
    ck_assert_uint_le(est[i], M);
    ck_assert_uint_gt(est[i], 0);
  }
  size_t nd;
  int64_t(*cnt)[2] = count_estimates(est, n, &nd);
  int K = tsafrir05_binnum(n);
  ck_assert_int_eq(K, 378);
  ck_assert_uint_le(nd, (size_t)K);
  ck_assert_uint_gt(nd, 21);
  const double tol = K + 30;
  int64_t head[20];
  ck_assert_int_eq(tsafrir05_head_times(M, head), 20);
  double share[21], sum = 0;
  for (int r = 2; r <= 20; r++)
    sum += share[r] = 14.0491 * exp(-0.177531 * r) + 0.462513;
  share[1] = 89 - sum;
  ck_assert_double_eq_tol(share[1], 21.73, 0.01);
  int64_t top = 0;
  for (int r = 1; r <= 20; r++) {
    int in_head = 0;
    for (int k = 0; k < 20; k++)
      in_head |= head[k] == cnt[r - 1][1];
    ck_assert_msg(in_head, "rank %d: %lld s is no head time", r,
                  (long long)cnt[r - 1][1]);
    ck_assert_double_eq_tol((double)cnt[r - 1][0], share[r] * n / 100, tol);
    top += cnt[r - 1][0];
  }
  ck_assert_double_eq_tol((double)top, 0.89 * n, tol);
  /* The tail: K - 20 ranks asked for (a few may be lost to collisions). */
  double tsum = 0;
  for (int r = 21; r <= K; r++)
    tsum += pow(r, -2.267);
  ck_assert_double_eq_tol((double)cnt[20][0],
                          11.0 * pow(21, -2.267) / tsum * n / 100, tol);
  /* Seeds. */
  ck_assert_int_eq(est_model_tsafrir05(est2, run, n, &mp, err, sizeof err), 0);
  ck_assert(memcmp(est, est2, n * sizeof *est) == 0);
  mp.seed = 8;
  ck_assert_int_eq(est_model_tsafrir05(est2, run, n, &mp, err, sizeof err), 0);
  ck_assert(memcmp(est, est2, n * sizeof *est) != 0);
  free(cnt);
  free(run);
  free(est);
  free(est2);
}
END_TEST

/*
 * The paper's one-hint mode (model:tsafrir05:MAX_S:P), the same 100,000
 * jobs and M = 18 h. The raw shares of ranks 2..20 (a e^(bx) + c) add up
 * to 67.27%:
 * - P = 40: exactly round(0.4 n) = 40,000 jobs get M, the rest of the
 *   head (ranks 2..20) is scaled to 89 - 40 = 49%: rank x holds
 *   raw(x) x 49 / 67.27 (rank 2: 10.30 x 0.7284 = 7.50%);
 * - P = 11, below the scaled rank 2 (10.30 x 78 / 67.27 = 11.94%) and
 *   above rank 3 (8.71 x 78 / 67.27 = 10.10%): M gets 11,000 jobs and is
 *   the second most used; the most used, another head time, holds
 *   11.94%.
 * Tolerance as in model_distribution.
 */
START_TEST(model_share_at_max) {
  const size_t n = 100000;
  int64_t *run = malloc(n * sizeof *run);
  uint32_t *est = malloc(n * sizeof *est);
  ck_assert(run && est);
  synth_runs(run, n);
  const int64_t M = 18 * H_;
  const double tol = tsafrir05_binnum(n) + 30;
  double raw[21], rsum = 0;
  for (int r = 2; r <= 20; r++)
    rsum += raw[r] = 14.0491 * exp(-0.177531 * r) + 0.462513;
  ck_assert_double_eq_tol(rsum, 67.27, 0.01);
  char err[512];
  sim_est_model_params mp = {M, 40, 3};
  ck_assert_msg(est_model_tsafrir05(est, run, n, &mp, err, sizeof err) == 0,
                "%s", err);
  size_t nd;
  int64_t(*cnt)[2] = count_estimates(est, n, &nd);
  ck_assert_int_eq(cnt[0][1], M);
  ck_assert_int_eq(cnt[0][0], 40000);
  for (int r = 2; r <= 20; r++)
    ck_assert_double_eq_tol((double)cnt[r - 1][0],
                            raw[r] * 49 / rsum * n / 100, tol);
  free(cnt);
  mp.max_pct = 11;
  ck_assert_msg(est_model_tsafrir05(est, run, n, &mp, err, sizeof err) == 0,
                "%s", err);
  cnt = count_estimates(est, n, &nd);
  ck_assert_int_ne(cnt[0][1], M);
  ck_assert_double_eq_tol((double)cnt[0][0], raw[2] * 78 / rsum * n / 100,
                          tol);
  ck_assert_int_eq(cnt[1][1], M);
  ck_assert_int_eq(cnt[1][0], 11000);
  free(cnt);
  free(run);
  free(est);
}
END_TEST

/*
 * Jobs the model cannot cover: 1,000 jobs of 50 min with M = 1 h. Its own
 * share at M (~21.7%) leaves most of them with shorter estimates: an
 * error that names the option and the smallest share at M, in tenths of
 * a percent, that covers them; with that share the model works, with a
 * tenth less it does not.
 */
START_TEST(model_cannot_cover) {
  const size_t n = 1000;
  int64_t run[1000];
  uint32_t est[1000];
  for (size_t i = 0; i < n; i++)
    run[i] = S(50 * M_);
  char err[1024];
  sim_est_model_params mp = {H_, 0, 1};
  ck_assert_int_eq(est_model_tsafrir05(est, run, n, &mp, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "--estimates model:tsafrir05: with a maximal "
                            "estimate of 3600 s the model cannot"),
                "%s", err);
  const char *hint = strstr(err, "model:tsafrir05:3600:");
  ck_assert_msg(hint, "%s", err);
  double p = atof(hint + strlen("model:tsafrir05:3600:"));
  ck_assert_double_gt(p, 21.7);
  ck_assert_double_le(p, 100);
  mp.max_pct = p;
  ck_assert_msg(est_model_tsafrir05(est, run, n, &mp, err, sizeof err) == 0,
                "P = %.1f: %s", p, err);
  for (size_t i = 0; i < n; i++)
    ck_assert_int_ge(S(est[i]), run[i]);
  mp.max_pct = p - 0.1;
  ck_assert_int_eq(est_model_tsafrir05(est, run, n, &mp, err, sizeof err), -1);
}
END_TEST

static int run_model(sim_cluster *sc, const trace *t, sim_queue_kind q,
                     int64_t max_s, sim_overrun ov, uint64_t seed,
                     sim_result *r, char *err, size_t errlen) {
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = "first-fit";
  o.queue = q;
  o.seed = seed;
  o.unknown_duration_us = -1;
  o.estimates = SIM_EST_MODEL;
  o.estimate_model = sim_est_model_find("tsafrir05", 9);
  o.estimate_model_max_s = max_s;
  o.overrun = ov;
  o.check_reservations = 1;
  err[0] = 0;
  return sim_run(sc, &cat, t, &o, r, err, errlen);
}

/*
 * The model in a run, three 1-GPU jobs on one 4-GPU node, M = 1 h (12
 * head times, K = 2 for 3 jobs: no tail): every head time first gets
 * max(1, round(share x 3 / 100)) = 1 job, 12 in all; the 9 too many are
 * taken from the bins largest first, equal counts by time, down to zero
 * on the fourth attempt: 5m .. 45m go, 50m, 55m and 1h stay.
 *   A runs 2 h: longer than M, it counts as 1 h and gets M = 3600 s;
 *   B, C run 10 s: 3300 and 3000 s between them.
 * kill (the default with a model): A is killed at 3600 s. extend: A runs
 * its 2 h. Without MAX_S the maximum is A's 2 h: nothing is killed.
 */
START_TEST(model_in_a_run) {
  sim_cluster sc;
  one_node(&sc, 4);
  trace t;
  times_trace(&t, "m.csv");
  add(&t, "A", 0, 2 * H_, 1, 0);
  add(&t, "B", 1, 10, 1, 0);
  add(&t, "C", 2, 10, 1, 0);
  sim_result r;
  char err[512];
  ck_assert_msg(run_model(&sc, &t, SIM_QUEUE_BACKFILL, H_,
                          SIM_OVERRUN_DEFAULT, 1, &r, err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(r.js[0].status, JOB_KILLED);
  ck_assert_int_eq(r.js[0].finish_us, S(H_));
  ck_assert_int_eq(r.js[1].status, JOB_DONE);
  ck_assert_int_eq(r.js[2].status, JOB_DONE);
  ck_assert_uint_eq(r.jobs_killed, 1);
  sim_result_free(&r);
  ck_assert_msg(run_model(&sc, &t, SIM_QUEUE_BACKFILL, H_, SIM_OVERRUN_EXTEND,
                          1, &r, err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(r.js[0].status, JOB_DONE);
  ck_assert_int_eq(r.js[0].finish_us, S(2 * H_));
  ck_assert_uint_eq(r.jobs_killed, 0);
  sim_result_free(&r);
  ck_assert_msg(run_model(&sc, &t, SIM_QUEUE_BACKFILL, 0, SIM_OVERRUN_DEFAULT,
                          1, &r, err, sizeof err) == 0,
                "%s", err);
  ck_assert_uint_eq(r.jobs_killed, 0);
  sim_result_free(&r);
  /* The estimates themselves, through the model's function. */
  int64_t run[3] = {S(2 * H_), S(10), S(10)};
  uint32_t est[3];
  sim_est_model_params mp = {H_, 0, 1};
  ck_assert_int_eq(est_model_tsafrir05(est, run, 3, &mp, err, sizeof err), 0);
  ck_assert_uint_eq(est[0], 3600);
  ck_assert_uint_eq(est[1] + est[2], 6300);
  ck_assert(est[1] == 3300 || est[1] == 3000);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * Random workloads of 300 jobs (run times log-uniform from 1 s to 2 h, as
 * the logs the model was fitted to: most jobs short) under the model
 * (default maximum: the longest job, so every estimate is at least its
 * run time): backfill with every decision checked (check_reservations)
 * passes, nothing is killed, and two runs with the same seed are
 * identical.
 */
START_TEST(model_backfill_checked) {
  uint64_t x = 0x9E3779B97F4A7C15ull + (uint64_t)_i * 7919;
  sim_cluster sc;
  one_node(&sc, 8);
  trace t;
  times_trace(&t, "rand.csv");
  int64_t submit = 0;
  for (int k = 0; k < 300; k++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    submit += (int64_t)(x % 600);
    char name[16];
    snprintf(name, sizeof name, "j%d", k);
    double u = (double)(x >> 40) / 16777216.0; /* [0, 1) */
    add(&t, name, submit, (int64_t)exp(u * log(7200.0)) + 1,
        1 + (int)((x >> 8) % 8), 0);
  }
  sim_result r, r2;
  char err[512];
  ck_assert_msg(run_model(&sc, &t, SIM_QUEUE_BACKFILL, 0, SIM_OVERRUN_DEFAULT,
                          (uint64_t)_i, &r, err, sizeof err) == 0,
                "%s", err);
  ck_assert_uint_eq(r.jobs_killed, 0);
  ck_assert_uint_eq(r.completed, t.n);
  ck_assert_msg(run_model(&sc, &t, SIM_QUEUE_BACKFILL, 0, SIM_OVERRUN_DEFAULT,
                          (uint64_t)_i, &r2, err, sizeof err) == 0,
                "%s", err);
  for (size_t j = 0; j < t.n; j++)
    ck_assert_int_eq(r.js[j].start_us, r2.js[j].start_us);
  sim_result_free(&r);
  sim_result_free(&r2);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * An exact estimate is the run time through a double (x the factor,
 * rounded up): beyond 2^53 us a double does not hold every integer, and
 * the shortcut for a factor of 1 (estimate.c est_left) must keep that
 * rounding. One node of 2 GPUs: long (1 GPU, t=0, runs 2^53 + 1 us,
 * estimated 2^53), the head (2 GPUs, t=1 s) reserved at 2^53; cand (1 GPU,
 * t=2 s) would end at 2^53 + 1 exactly, after the reservation, and delay
 * the head: it waits for the head (taken as the true 2^53 + 1 it would
 * start at 2 s).
 */
START_TEST(exact_estimate_beyond_double) {
  const int64_t big = INT64_C(1) << 53;
  sim_cluster sc;
  one_node(&sc, 2);
  trace t;
  times_trace(&t, "big.csv");
  add(&t, "long", 0, 1, 1, 0);
  t.jobs[0].duration_us = big + 1;
  add(&t, "head", 1, 10, 2, 0);
  add(&t, "cand", 2, 1, 1, 0);
  t.jobs[2].duration_us = big + 1 - S(2);
  sim_result r;
  char err[512];
  ck_assert_msg(run(&sc, &t, SIM_QUEUE_BACKFILL, SIM_EST_EXACT, 0,
                    SIM_OVERRUN_DEFAULT, &r, err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(r.js[1].start_us, big + 1);
  ck_assert_int_eq(r.js[2].start_us, big + 1 + S(10));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * A factor of 2 against none (estimate.c mul_up: without a factor, or
 * with 1, the work itself without the multiplication), one node of 4
 * GPUs: a (t=0, 2 GPUs, runs 10 s), the head (t=1, 4 GPUs, runs 5 s), c
 * (t=2, 2 GPUs, runs 9 s).
 *   factor 2: the head is reserved at a's estimated end 20; c's is
 *     2 + 18 = 20 <= 20: c starts at 2, ends at 11; the head at 11.
 *   factor 1, or exact: reserved at 10; c's end 11 > 10 and with c running
 *     the head would wait until 11: c waits; the head runs 10..15, c
 *     starts at 15.
 */
START_TEST(factor_two_against_one) {
  static const struct {
    sim_estimates est;
    double f;
  } k[3] = {{SIM_EST_FACTOR, 2}, {SIM_EST_FACTOR, 1}, {SIM_EST_EXACT, 0}};
  sim_cluster sc;
  one_node(&sc, 4);
  trace t;
  times_trace(&t, "f2.csv");
  add(&t, "a", 0, 10, 2, 0);
  add(&t, "head", 1, 5, 4, 0);
  add(&t, "c", 2, 9, 2, 0);
  sim_result r;
  char err[512];
  ck_assert_msg(run(&sc, &t, SIM_QUEUE_BACKFILL, k[_i].est, k[_i].f,
                    SIM_OVERRUN_DEFAULT, &r, err, sizeof err) == 0,
                "%s", err);
  int two = k[_i].f == 2;
  int64_t c_start = two ? S(2) : S(15), head_start = two ? S(11) : S(10);
  ck_assert_int_eq(r.js[2].start_us, c_start);
  ck_assert_int_eq(r.js[1].start_us, head_start);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("estimates");
  TCase *tc = tcase_create("estimates");
  tcase_add_checked_fixture(tc, load_catalog, free_catalog);
  tcase_add_loop_test(tc, overdue_four_jobs, 0, 4);
  tcase_add_test(tc, overrun_defaults);
  tcase_add_test(tc, swf_requested_time_drives_backfill);
  tcase_add_test(tc, bounded_slowdown_hand);
  tcase_add_loop_test(tc, overdue_never_delays_head, 0, 40);
  tcase_add_test(tc, model_fixed_parts);
  tcase_add_test(tc, model_assign_hand);
  tcase_add_test(tc, model_distribution);
  tcase_add_test(tc, model_share_at_max);
  tcase_add_test(tc, model_cannot_cover);
  tcase_add_test(tc, model_in_a_run);
  tcase_add_loop_test(tc, model_backfill_checked, 0, 8);
  tcase_add_test(tc, exact_estimate_beyond_double);
  tcase_add_loop_test(tc, factor_two_against_one, 0, 3);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
