/*
 * Runtime estimates (sim/engine/estimate.c): --estimates sources, the
 * overrun rules (kill, extend), the consistency of backfill decisions with
 * overdue jobs, SWF requested times, and bounded slowdown. Every expected
 * value is worked out by hand in the comment above its test.
 */
#include "catalog.h"
#include "cluster_spec.h"
#include "engine.h"
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
  trace_init(&t);
  t.path = strdup("four.csv");
  t.has_times = 1;
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
  trace_init(&t);
  t.path = strdup("d.csv");
  t.has_times = 1;
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
  trace_init(&t);
  t.path = strdup("b.csv");
  t.has_times = 1;
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
  trace_init(&t);
  t.path = strdup("rand.csv");
  t.has_times = 1;
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

static Suite *make_suite(void) {
  Suite *s = suite_create("estimates");
  TCase *tc = tcase_create("estimates");
  tcase_add_checked_fixture(tc, load_catalog, free_catalog);
  tcase_add_loop_test(tc, overdue_four_jobs, 0, 4);
  tcase_add_test(tc, overrun_defaults);
  tcase_add_test(tc, swf_requested_time_drives_backfill);
  tcase_add_test(tc, bounded_slowdown_hand);
  tcase_add_loop_test(tc, overdue_never_delays_head, 0, 40);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
