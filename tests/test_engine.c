/*
 * The replay engine as an object: stepping it one event time at a time
 * (sim_engine_step) gives exactly what sim_run gives, the time after each
 * step is the next event time (a hand-computed case), errors stick, an
 * abandoned run leaves the cluster idle, a part registered with the engine
 * sees every hook at the right moments, and the queue disciplines resolve
 * through their one table (queue.h).
 */
#include "catalog.h"
#include "cluster_spec.h"
#include "engine.h"
#include "engine_internal.h"
#include "queue.h"
#include "testutil.h"
#include "trace.h"

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

static void cluster_json(sim_cluster *sc, const char *json) {
  char err[1024];
  ck_assert_msg(sim_cluster_from_json(sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
}

/* One node, 2 A100-80GB GPUs. */
static void small_cluster(sim_cluster *sc) {
  cluster_json(sc, "{\"name\": \"t\", \"node_groups\": [{\"name\": \"n\", "
                   "\"count\": 1, \"gpu_model\": \"A100-80GB\", "
                   "\"gpus_per_node\": 2, \"cpu_milli\": 10000, "
                   "\"memory_mib\": 10000, \"gpu_mode\": \"shared\", "
                   "\"price_per_gpu_hour\": 3.6}]}");
}

/* Three nodes of 8 A100-80GB GPUs. */
static void mid_cluster(sim_cluster *sc) {
  cluster_json(sc, "{\"name\": \"s\", \"node_groups\": [{\"name\": \"a\", "
                   "\"count\": 3, \"gpu_model\": \"A100-SXM4-80GB\", "
                   "\"gpus_per_node\": 8, \"cpu_milli\": 256000, "
                   "\"memory_mib\": 2097152, \"gpu_mode\": \"shared\", "
                   "\"price_per_gpu_hour\": 2}]}");
}

/*
 * A: t=0, 10 s, 1 GPU; B: t=0, 20 s, 2 GPUs; C: t=5, 5 s, 1 GPU at 500.
 * fifo: A runs [0,10); B waits for A and runs [10,30); C is behind B and
 * runs [30,35).  skip: C starts at 5 beside A and runs [5,10); B runs
 * [10,30).
 */
static void abc_trace(trace *t) {
  trace_init(t);
  t->path = strdup("abc.csv");
  t->has_times = 1;
  tu_add_job(t, "A", 0, 10, 1, 1000, NULL);
  tu_add_job(t, "B", 0, 20, 2, 1000, NULL);
  tu_add_job(t, "C", 5, 5, 1, 500, NULL);
}

/* A synthetic trace that loads 24 GPUs to ~110% (a queue builds up and
 * drains). */
static void synth_trace(trace *t, size_t jobs) {
  synth_params p;
  synth_default_params(&p);
  p.jobs = jobs;
  p.seed = 11;
  p.arrival_rate *= 24.0 * 1.1 / 192.0;
  trace_init(t);
  trace_error te;
  ck_assert_msg(synth_generate(t, &p, &te) == 0, "%s", te.msg);
}

static void options(sim_options *o, const char *policy, sim_queue_kind q) {
  memset(o, 0, sizeof *o);
  o->policy = policy;
  o->queue = q;
  o->seed = 1;
  o->unknown_duration_us = -1;
}

static void same_stats(const sim_stats *a, const sim_stats *b) {
  ck_assert_uint_eq(a->n, b->n);
  ck_assert(a->mean == b->mean && a->p50 == b->p50 && a->p95 == b->p95 &&
            a->p99 == b->p99 && a->max == b->max);
}

/* Every total and every per-job array of two results of n jobs agree
 * exactly (the same sums in the same order). */
static void same_result(const sim_result *a, const sim_result *b, size_t n) {
  ck_assert_uint_eq(a->jobs, b->jobs);
  ck_assert_uint_eq(a->completed, b->completed);
  ck_assert_uint_eq(a->never_started, b->never_started);
  ck_assert_uint_eq(a->never_no_node, b->never_no_node);
  ck_assert_uint_eq(a->never_model, b->never_model);
  ck_assert_uint_eq(a->never_queued, b->never_queued);
  ck_assert_uint_eq(a->events, b->events);
  ck_assert_int_eq(a->first_arrival_us, b->first_arrival_us);
  ck_assert_int_eq(a->last_completion_us, b->last_completion_us);
  ck_assert_int_eq(a->makespan_us, b->makespan_us);
  same_stats(&a->queue_time_s, &b->queue_time_s);
  same_stats(&a->jct_s, &b->jct_s);
  same_stats(&a->queue_time_multigpu_s, &b->queue_time_multigpu_s);
  ck_assert(a->gpu_alloc_ratio_mean == b->gpu_alloc_ratio_mean);
  ck_assert(a->allocated_gpu_hours == b->allocated_gpu_hours);
  ck_assert(a->cost_total == b->cost_total);
  ck_assert(a->cost_idle == b->cost_idle);
  ck_assert(a->cost_per_allocated_gpu_hour == b->cost_per_allocated_gpu_hour);
  ck_assert(a->running_jobs_mean == b->running_jobs_mean);
  ck_assert(a->job_hours == b->job_hours);
  ck_assert(a->gpu_used_ratio_mean == b->gpu_used_ratio_mean);
  ck_assert(a->frag_amount_mean == b->frag_amount_mean);
  ck_assert(a->frag_rate_mean == b->frag_rate_mean);
  ck_assert(a->stranded_gpu_milli_mean == b->stranded_gpu_milli_mean);
  ck_assert_uint_eq(a->migrations_total, b->migrations_total);
  ck_assert_uint_eq(a->preemptions_total, b->preemptions_total);
  ck_assert(a->lost_gpu_s_total == b->lost_gpu_s_total);
  ck_assert_uint_eq(a->ngangs, b->ngangs);
  ck_assert_ptr_nonnull(a->js);
  ck_assert_ptr_nonnull(b->js);
  ck_assert(memcmp(a->js, b->js, n * sizeof *a->js) == 0);
  ck_assert((a->reserved_us == NULL) == (b->reserved_us == NULL));
  if (a->reserved_us)
    ck_assert(memcmp(a->reserved_us, b->reserved_us,
                     n * sizeof *a->reserved_us) == 0);
  ck_assert((a->migrations == NULL) == (b->migrations == NULL));
  if (a->migrations) {
    ck_assert(memcmp(a->migrations, b->migrations,
                     n * sizeof *a->migrations) == 0);
    ck_assert(memcmp(a->preemptions, b->preemptions,
                     n * sizeof *a->preemptions) == 0);
    ck_assert(memcmp(a->lost_gpu_s, b->lost_gpu_s,
                     n * sizeof *a->lost_gpu_s) == 0);
  }
  ck_assert((a->mig == NULL) == (b->mig == NULL));
  if (a->mig) {
    ck_assert_int_eq(a->mig->gpus, b->mig->gpus);
    ck_assert(a->mig->slice_util_mean == b->mig->slice_util_mean);
    ck_assert(a->mig->frag_slices_mean == b->mig->frag_slices_mean);
    ck_assert_uint_eq(a->mig->created, b->mig->created);
    ck_assert_uint_eq(a->mig->reconfig_jobs, b->mig->reconfig_jobs);
    ck_assert(a->mig->reconfig_wait_s == b->mig->reconfig_wait_s);
    ck_assert(memcmp(a->mig->kind, b->mig->kind, n) == 0);
    ck_assert(memcmp(a->mig->wait_us, b->mig->wait_us,
                     n * sizeof *a->mig->wait_us) == 0);
  }
}

/* Runs t with sim_run and again step by step (checking that each step
 * processes the time sim_engine_next_time announced and that time never
 * goes back), timelines included; both must agree byte for byte. Returns
 * the number of steps. */
static size_t stepped_equals_run(void (*make)(sim_cluster *), const trace *t,
                                 sim_options *o) {
  /* A fresh cluster for each run: MIG instances made by one run stay on
   * the GPUs. */
  sim_cluster sc_run, sc_step, *sc = &sc_run;
  make(&sc_run);
  make(&sc_step);
  char err[1024] = "";
  char *tl_run = NULL, *tl_step = NULL;
  size_t len_run = 0, len_step = 0;
  FILE *f = open_memstream(&tl_run, &len_run);
  o->timeline = f;
  sim_result a, b;
  ck_assert_msg(sim_run(sc, &cat, t, o, &a, err, sizeof err) == 0, "%s", err);
  fclose(f);
  f = open_memstream(&tl_step, &len_step);
  o->timeline = f;
  sc = &sc_step;
  sim_engine *e;
  ck_assert_msg(sim_engine_open(&e, sc, &cat, t, o, err, sizeof err) == 0,
                "%s", err);
  size_t steps = 0;
  int64_t prev = sim_engine_now(e);
  int rc;
  do {
    int64_t next = sim_engine_next_time(e);
    ck_assert_int_ge(next, prev);
    rc = sim_engine_step(e);
    ck_assert_msg(rc >= 0, "step %zu: %s", steps, err);
    ck_assert_int_eq(sim_engine_now(e), next);
    prev = next;
    steps++;
  } while (rc > 0);
  ck_assert_int_eq(sim_engine_next_time(e), INT64_MAX);
  ck_assert_int_eq(sim_engine_step(e), 0); /* a finished run stays so */
  ck_assert_int_eq(sim_engine_close(e, &b), 0);
  fclose(f);
  o->timeline = NULL;
  same_result(&a, &b, t->n);
  ck_assert_uint_eq(len_run, len_step);
  ck_assert(memcmp(tl_run, tl_step, len_run) == 0);
  /* One timeline row per step that ended an event time (header + rows). */
  size_t rows = 0;
  for (size_t i = 0; i < len_step; i++)
    rows += tl_step[i] == '\n';
  ck_assert_uint_le(rows, steps + 1);
  ck_assert_uint_gt(rows, 1);
  free(tl_run);
  free(tl_step);
  sim_result_free(&a);
  sim_result_free(&b);
  sim_cluster_free(&sc_run);
  sim_cluster_free(&sc_step);
  return steps;
}

/* ------------------------------------------------------------ hand cases */

/* The step API on the A/B/C case: each step is one event time, in order,
 * and returns 1 until the last one. */
START_TEST(step_times_hand_computed) {
  static const struct {
    sim_queue_kind q;
    int n;
    int64_t times[6];
  } cases[] = {
      /* fifo: arrivals A, B at 0 (A starts), C at 5, A ends at 10 (B
       * starts), B ends at 30 (C starts), C ends at 35. */
      {SIM_QUEUE_FIFO, 5, {0, 5, 10, 30, 35}},
      /* skip: C starts at 5 beside A; A and C end at 10 (B starts); B
       * ends at 30. */
      {SIM_QUEUE_SKIP, 4, {0, 5, 10, 30}},
  };
  sim_cluster sc;
  small_cluster(&sc);
  trace t;
  abc_trace(&t);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    sim_options o;
    options(&o, "first-fit", cases[c].q);
    char err[512] = "";
    sim_engine *e;
    ck_assert_msg(sim_engine_open(&e, &sc, &cat, &t, &o, err, sizeof err) == 0,
                  "%s", err);
    /* Before the first step: the first arrival. */
    ck_assert_int_eq(sim_engine_now(e), 0);
    for (int k = 0; k < cases[c].n; k++) {
      ck_assert_int_eq(sim_engine_next_time(e), S(cases[c].times[k]));
      int rc = sim_engine_step(e);
      ck_assert_int_eq(rc, k + 1 < cases[c].n ? 1 : 0);
      ck_assert_int_eq(sim_engine_now(e), S(cases[c].times[k]));
    }
    ck_assert_int_eq(sim_engine_step(e), 0);
    sim_result r;
    ck_assert_int_eq(sim_engine_close(e, &r), 0);
    ck_assert_uint_eq(r.completed, 3);
    ck_assert_int_eq(r.last_completion_us, S(cases[c].times[cases[c].n - 1]));
    ck_assert_int_eq(r.js[1].start_us, S(10)); /* B */
    ck_assert_int_eq(r.js[2].start_us, cases[c].q == SIM_QUEUE_FIFO ? S(30)
                                                                    : S(5));
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* Closing with results part-way runs the rest: the same as sim_run. */
START_TEST(close_midway_finishes_the_run) {
  sim_cluster sc;
  small_cluster(&sc);
  trace t;
  abc_trace(&t);
  sim_options o;
  options(&o, "first-fit", SIM_QUEUE_FIFO);
  char err[512] = "";
  sim_result a, b;
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &a, err, sizeof err), 0);
  sim_engine *e;
  ck_assert_int_eq(sim_engine_open(&e, &sc, &cat, &t, &o, err, sizeof err), 0);
  ck_assert_int_eq(sim_engine_step(e), 1);
  ck_assert_int_eq(sim_engine_step(e), 1);
  ck_assert_int_eq(sim_engine_close(e, &b), 0);
  same_result(&a, &b, t.n);
  sim_result_free(&a);
  sim_result_free(&b);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* Abandoning a run part-way (close without results) releases what runs:
 * the cluster is idle again, and a new run on it gives the usual result. */
START_TEST(abandon_leaves_cluster_idle) {
  sim_cluster sc;
  small_cluster(&sc);
  trace t;
  abc_trace(&t);
  sim_options o;
  options(&o, "best-fit", SIM_QUEUE_SKIP);
  char err[512] = "";
  sim_engine *e;
  ck_assert_int_eq(sim_engine_open(&e, &sc, &cat, &t, &o, err, sizeof err), 0);
  ck_assert_int_eq(sim_engine_step(e), 1);
  ck_assert_int_eq(sim_engine_step(e), 1); /* t=5: A and C run */
  lsched_totals tot;
  lsched_cluster_totals(sc.c, &tot);
  ck_assert_int_eq(tot.gpu_milli_free, 500);
  ck_assert_int_eq(sim_engine_close(e, NULL), 0);
  lsched_cluster_totals(sc.c, &tot);
  ck_assert_int_eq(tot.gpu_milli_free, tot.gpu_milli);
  ck_assert_int_eq(tot.cpu_free, tot.cpu_milli);
  ck_assert_int_eq(tot.memory_free, tot.memory_mib);
  ck_assert_int_eq(sim_engine_close(NULL, NULL), 0);
  sim_result r;
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err), 0);
  ck_assert_uint_eq(r.completed, 3);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static int refuse_job(void *user, const sim_job_out *o) {
  (void)o;
  ++*(int *)user;
  return 1;
}

/* A failed step sticks: every later step returns the same code, close
 * returns it and hands out zeroed results; the cluster is idle again. */
START_TEST(errors_stick) {
  sim_cluster sc;
  small_cluster(&sc);
  trace t;
  abc_trace(&t);
  sim_options o;
  options(&o, "first-fit", SIM_QUEUE_FIFO);
  int calls = 0;
  o.on_job = refuse_job;
  o.on_job_user = &calls;
  char err[512] = "";
  sim_engine *e;
  ck_assert_int_eq(sim_engine_open(&e, &sc, &cat, &t, &o, err, sizeof err), 0);
  ck_assert_int_eq(sim_engine_step(e), 1);  /* t=0: A starts */
  ck_assert_int_eq(sim_engine_step(e), 1);  /* t=5: C queues */
  ck_assert_int_eq(sim_engine_step(e), -2); /* t=10: A's output refused */
  ck_assert_msg(strstr(err, "job output failed (A)"), "%s", err);
  ck_assert_int_eq(sim_engine_step(e), -2);
  ck_assert_int_eq(calls, 1);
  sim_result r;
  memset(&r, 0xff, sizeof r);
  ck_assert_int_eq(sim_engine_close(e, &r), -2);
  ck_assert_ptr_null(r.js);
  ck_assert_uint_eq(r.completed, 0);
  lsched_totals tot;
  lsched_cluster_totals(sc.c, &tot);
  ck_assert_int_eq(tot.gpu_milli_free, tot.gpu_milli);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* A job on two nodes holds its gang parts until it ends: closing the run
 * while it runs (abandoned), or after the step that completes it failed
 * (its output refused), frees them (engine_teardown; ASan's leak check). */
START_TEST(teardown_frees_gang_parts) {
  for (int failed = 0; failed < 2; failed++) {
    sim_cluster sc;
    mid_cluster(&sc);
    trace t;
    trace_init(&t);
    t.path = strdup("gang.csv");
    t.has_times = 1;
    tu_add_job(&t, "G", 0, 10, 16, 1000, NULL); /* two nodes of 8 */
    tu_add_job(&t, "H", 20, 5, 1, 1000, NULL);
    sim_options o;
    options(&o, "first-fit", SIM_QUEUE_FIFO);
    int calls = 0;
    if (failed) {
      o.on_job = refuse_job;
      o.on_job_user = &calls;
    }
    char err[512] = "";
    sim_engine *e;
    ck_assert_int_eq(sim_engine_open(&e, &sc, &cat, &t, &o, err, sizeof err),
                     0);
    ck_assert_int_eq(sim_engine_step(e), 1); /* t=0: G starts on two nodes */
    lsched_totals tot;
    lsched_cluster_totals(sc.c, &tot);
    ck_assert_int_eq(tot.gpu_milli_free, tot.gpu_milli - 16000);
    if (failed) {
      ck_assert_int_eq(sim_engine_step(e), -2); /* t=10: G's output refused */
      ck_assert_int_eq(calls, 1);
      sim_result r;
      ck_assert_int_eq(sim_engine_close(e, &r), -2);
    } else {
      ck_assert_int_eq(sim_engine_close(e, NULL), 0);
    }
    lsched_cluster_totals(sc.c, &tot);
    ck_assert_int_eq(tot.gpu_milli_free, tot.gpu_milli);
    trace_free(&t);
    sim_cluster_free(&sc);
  }
}
END_TEST

/* Errors of open: as sim_run's (input -1 with the message, nothing open). */
START_TEST(open_errors) {
  sim_cluster sc;
  small_cluster(&sc);
  trace t;
  abc_trace(&t);
  sim_options o;
  options(&o, "no-such-policy", SIM_QUEUE_FIFO);
  char err[512] = "";
  sim_engine *e = (sim_engine *)&o;
  ck_assert_int_eq(sim_engine_open(&e, &sc, &cat, &t, &o, err, sizeof err), -1);
  ck_assert_ptr_null(e);
  ck_assert_msg(strstr(err, "unknown policy 'no-such-policy'"), "%s", err);
  options(&o, "first-fit", (sim_queue_kind)99);
  ck_assert_int_eq(sim_engine_open(&e, &sc, &cat, &t, &o, err, sizeof err), -1);
  ck_assert_ptr_null(e);
  ck_assert_msg(strstr(err, "unknown queue discipline 99"), "%s", err);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* ------------------------------------------------- stepped == sim_run */

/* Every discipline, a policy that migrates and one that preempts: the
 * stepped run equals sim_run in every number, per-job outcome and
 * timeline row. */
START_TEST(stepped_equals_sim_run) {
  static const struct {
    const char *policy;
    sim_queue_kind q;
    int preempt;
  } cases[] = {{"first-fit", SIM_QUEUE_FIFO, 0},
               {"best-fit", SIM_QUEUE_SKIP, 0},
               {"fgd", SIM_QUEUE_BACKFILL, 0},
               {"worst-fit", SIM_QUEUE_PRIORITY, 0},
               {"defrag", SIM_QUEUE_SKIP, 0},
               {"defrag", SIM_QUEUE_FIFO, 1}};
  trace t;
  synth_trace(&t, 1500);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    sim_options o;
    options(&o, cases[c].policy, cases[c].q);
    o.preempt = cases[c].preempt;
    o.checkpoint_s = 60;
    size_t steps = stepped_equals_run(mid_cluster, &t, &o);
    /* Distinct event times: at most one per arrival and completion (and
     * per stale event a migration or preemption leaves). */
    if (strcmp(cases[c].policy, "defrag") != 0)
      ck_assert_uint_le(steps, 2 * t.n);
    ck_assert_uint_gt(steps, t.n / 2);
  }
  trace_free(&t);
}
END_TEST

/* Two MIG nodes and a plain one (jobs try their other variant). */
static void mig_cluster(sim_cluster *sc) {
  cluster_json(sc, "{\"name\": \"m\", \"node_groups\": [{\"name\": \"n\", "
                   "\"count\": 2, \"gpu_model\": \"A100-80GB\", "
                   "\"gpus_per_node\": 2, \"cpu_milli\": 64000, "
                   "\"memory_mib\": 640000, \"gpu_mode\": \"mig-dynamic\"}, "
                   "{\"name\": \"p\", \"count\": 1, \"gpu_model\": "
                   "\"A100-80GB\", \"gpus_per_node\": 2, \"cpu_milli\": "
                   "64000, \"memory_mib\": 640000, \"gpu_mode\": "
                   "\"shared\"}]}");
}

/* MIG is a part behind the engine's hooks: stepping a MIG run (requests
 * mapped to instances, reconfiguration delays, the MIG timeline columns
 * and results) equals sim_run too. */
START_TEST(stepped_equals_sim_run_mig) {
  trace t;
  trace_init(&t);
  t.path = strdup("mig.csv");
  t.has_times = 1;
  static const int milli[] = {100, 250, 500, 1000, 300, 140};
  char name[16];
  for (int i = 0; i < 60; i++) {
    snprintf(name, sizeof name, "j%d", i);
    tu_add_job(&t, name, i / 3, 5 + (i * 7) % 23, i % 11 == 0 ? 2 : 1,
        milli[i % 6], NULL);
  }
  static const char *const policies[] = {"first-fit", "mig-best-fit",
                                         "mig-aware"};
  for (size_t p = 0; p < 3; p++) {
    sim_options o;
    options(&o, policies[p], SIM_QUEUE_SKIP);
    stepped_equals_run(mig_cluster, &t, &o);
  }
  sim_cluster sc;
  mig_cluster(&sc);
  sim_result r;
  sim_options o;
  options(&o, "mig-best-fit", SIM_QUEUE_FIFO);
  char err[512] = "";
  ck_assert_msg(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err) == 0, "%s",
                err);
  ck_assert_ptr_nonnull(r.mig);
  ck_assert_uint_gt(r.mig->created, 0);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* A streamed run stepped by hand equals sim_run_stream. */
static int count_out(void *user, const sim_job_out *o) {
  (void)o;
  ++*(size_t *)user;
  return 0;
}

START_TEST(stepped_stream_equals_run_stream) {
  sim_cluster sc;
  mid_cluster(&sc);
  trace gen;
  synth_trace(&gen, 800);
  char path[4096];
  snprintf(path, sizeof path, "%s/s.csv", testutil_tmpdir());
  trace_error te;
  ck_assert_msg(trace_write_alibaba(&gen, path, &te) == 0, "%s", te.msg);
  trace_free(&gen);
  sim_options o;
  options(&o, "fgd", SIM_QUEUE_BACKFILL);
  size_t na = 0, nb = 0;
  o.on_job = count_out;
  o.on_job_user = &na;
  char err[1024] = "";
  trace_stream *ts;
  ck_assert_msg(trace_stream_open(&ts, path, NULL, &te) == 0, "%s", te.msg);
  sim_result a, b;
  ck_assert_msg(sim_run_stream(&sc, &cat, ts, &o, &a, err, sizeof err) == 0,
                "%s", err);
  trace_stream_close(ts);
  ck_assert_msg(trace_stream_open(&ts, path, NULL, &te) == 0, "%s", te.msg);
  o.on_job_user = &nb;
  sim_engine *e;
  ck_assert_msg(sim_engine_open_stream(&e, &sc, &cat, ts, &o, err,
                                       sizeof err) == 0,
                "%s", err);
  int rc;
  size_t steps = 0;
  while ((rc = sim_engine_step(e)) > 0)
    steps++;
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(sim_engine_close(e, &b), 0);
  trace_stream_close(ts);
  ck_assert_uint_eq(na, 800);
  ck_assert_uint_eq(nb, 800);
  ck_assert_uint_gt(steps, 400);
  ck_assert_uint_eq(a.events, b.events);
  ck_assert_uint_eq(a.completed, b.completed);
  same_stats(&a.queue_time_s, &b.queue_time_s);
  same_stats(&a.jct_s, &b.jct_s);
  ck_assert(a.gpu_alloc_ratio_mean == b.gpu_alloc_ratio_mean);
  ck_assert(a.frag_amount_mean == b.frag_amount_mean);
  ck_assert(a.cost_idle == b.cost_idle);
  ck_assert_ptr_null(b.js);
  sim_result_free(&a);
  sim_result_free(&b);
  sim_cluster_free(&sc);
}
END_TEST

/* --------------------------------------------------------------- hooks */

/* A part that counts what the engine tells it. */
typedef struct counter {
  size_t arrivals, finishes, starts, outputs, passes, results, closes;
  size_t placed, requests, before_place;
  long queued;         /* +1 / -1 sum: queue length as the hooks say */
  long queued_max;
  int64_t advanced;    /* sum of dt */
  int64_t last_finish; /* e->now at the last on_finish */
  uint64_t finished_idx;
} counter;

static void c_arrival(void *self, engine *e, const slot *s) {
  counter *c = self;
  c->arrivals++;
  ck_assert_int_eq(s->rec.submit_us, e->now);
}
static void c_request(void *self, const slot *s, lsched_request *r) {
  (void)s;
  (void)r;
  ((counter *)self)->requests++;
}
static void c_before_place(void *self) { ((counter *)self)->before_place++; }
static void c_queued(void *self, const slot *s, int delta) {
  counter *c = self;
  (void)s;
  c->queued += delta;
  if (c->queued > c->queued_max)
    c->queued_max = c->queued;
  ck_assert_int_ge(c->queued, 0);
}
static void c_placed(void *self, const slot *s, const lsched_placement *p,
                     int n) {
  (void)s;
  (void)p;
  ck_assert_int_ge(n, 1);
  ((counter *)self)->placed++;
}
static int64_t c_start(void *self, const slot *s, const lsched_placement *p,
                       int n, int64_t now) {
  (void)p;
  (void)n;
  ck_assert_int_eq(s->st.start_us, now);
  ((counter *)self)->starts++;
  return 0;
}
static void c_finish(void *self, engine *e, const slot *s,
                     const lsched_placement *p, int n) {
  counter *c = self;
  (void)p;
  ck_assert_int_eq(s->st.status, JOB_DONE);
  ck_assert_int_eq(s->st.finish_us, e->now);
  ck_assert_int_ge(n, 1);
  c->finishes++;
  c->last_finish = e->now;
  c->finished_idx = s->idx;
}
static void c_output(void *self, const slot *s, sim_job_out *o) {
  counter *c = self;
  if (s->st.status == JOB_DONE)
    ck_assert_uint_eq(c->finished_idx, s->idx); /* right after on_finish */
  ck_assert_uint_eq(o->index, s->idx);
  c->outputs++;
}
static void c_advance(void *self, int64_t dt) {
  ck_assert_int_gt(dt, 0);
  ((counter *)self)->advanced += dt;
}
static int c_after_pass(void *self, engine *e) {
  (void)e;
  ((counter *)self)->passes++;
  return 0;
}
static int c_results(void *self, const engine *e, sim_result *out) {
  (void)e;
  (void)out;
  ((counter *)self)->results++;
  return 0;
}
static void c_close(void *self) { ((counter *)self)->closes++; }

static const sim_part_ops counter_ops = {
    .name = "counter",
    .on_arrival = c_arrival,
    .request = c_request,
    .before_place = c_before_place,
    .on_queued = c_queued,
    .on_placed = c_placed,
    .on_start = c_start,
    .on_finish = c_finish,
    .on_output = c_output,
    .on_advance = c_advance,
    .after_pass = c_after_pass,
    .results = c_results,
    .close = c_close,
};

static int ignore_job(void *user, const sim_job_out *o) {
  (void)user;
  (void)o;
  return 0;
}

/* A part registered with an open engine is called at every hook: once per
 * arrival, start, completion and outcome, after every pass, with time
 * advancing over the whole run; its queue count ends at 0; its results and
 * close hooks run once. */
START_TEST(parts_see_every_hook) {
  sim_cluster sc;
  mid_cluster(&sc);
  trace t;
  synth_trace(&t, 600);
  static const sim_queue_kind qs[] = {SIM_QUEUE_FIFO, SIM_QUEUE_BACKFILL};
  for (size_t k = 0; k < 2; k++) {
    sim_options o;
    options(&o, "best-fit", qs[k]);
    o.on_job = ignore_job; /* on_output is called on the way to on_job */
    char err[512] = "";
    sim_engine *e;
    ck_assert_int_eq(sim_engine_open(&e, &sc, &cat, &t, &o, err, sizeof err),
                     0);
    counter c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(engine_add_part(e, &counter_ops, &c), 0);
    int64_t first = sim_engine_now(e);
    size_t steps = 0;
    int rc;
    while ((rc = sim_engine_step(e)) > 0)
      steps++;
    ck_assert_int_eq(rc, 0);
    steps++;
    ck_assert_uint_eq(c.results, 1);
    sim_result r;
    ck_assert_int_eq(sim_engine_close(e, &r), 0);
    ck_assert_uint_eq(c.closes, 1);
    ck_assert_uint_eq(c.arrivals, t.n);
    ck_assert_uint_eq(c.finishes, r.completed);
    ck_assert_uint_eq(c.starts, r.completed);
    /* Backfill marks candidates as placed to test them (mark, reserve,
     * unmark): at least one placement per completed job. */
    if (qs[k] == SIM_QUEUE_FIFO)
      ck_assert_uint_eq(c.placed, r.completed);
    else
      ck_assert_uint_ge(c.placed, r.completed);
    ck_assert_uint_eq(c.outputs, r.jobs);
    ck_assert_uint_eq(c.passes, steps);
    ck_assert_int_eq(c.queued, 0);
    ck_assert_int_gt(c.queued_max, 1); /* a queue built up */
    ck_assert_uint_ge(c.requests, c.before_place);
    ck_assert_uint_ge(c.before_place, r.completed);
    ck_assert_int_eq(c.last_finish, r.last_completion_us);
    ck_assert_int_eq(c.advanced, r.last_completion_us - first);
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* ------------------------------------------------------ the queue table */

/* Every discipline resolves by name and by kind through the one table, in
 * sim_queue_kind order, with its pass; an unknown name or kind does not. */
START_TEST(queue_table) {
  static const char *const names[] = {"fifo", "skip", "backfill", "priority"};
  ck_assert_uint_eq(sim_queue_count(), 4);
  for (size_t i = 0; i < sim_queue_count(); i++) {
    const sim_queue_ops *q = sim_queue_at(i);
    ck_assert_ptr_nonnull(q);
    ck_assert_str_eq(q->name, names[i]);
    ck_assert_int_eq((int)q->kind, (int)i);
    ck_assert_ptr_nonnull(q->pass);
    ck_assert_ptr_eq(sim_queue_find(names[i]), q);
    ck_assert_ptr_eq(sim_queue_of(q->kind), q);
    sim_queue_kind k = (sim_queue_kind)-1;
    ck_assert_int_eq(sim_queue_parse(names[i], &k), 0);
    ck_assert_int_eq((int)k, (int)q->kind);
    /* Only backfill reports reservations; only priority reorders. */
    ck_assert_int_eq(!!(q->flags & SIM_QUEUE_RESERVES),
                     q->kind == SIM_QUEUE_BACKFILL);
    ck_assert_int_eq(q->insert_pos != NULL, q->kind == SIM_QUEUE_PRIORITY);
  }
  ck_assert_ptr_eq(sim_queue_find("fifo"), &sim_queue_fifo);
  ck_assert_ptr_eq(sim_queue_find("backfill"), &sim_queue_backfill);
  ck_assert_ptr_null(sim_queue_at(4));
  ck_assert_ptr_null(sim_queue_find("lifo"));
  ck_assert_ptr_null(sim_queue_find("FIFO"));
  ck_assert_ptr_null(sim_queue_find(""));
  ck_assert_ptr_null(sim_queue_of((sim_queue_kind)4));
  sim_queue_kind k = SIM_QUEUE_SKIP;
  ck_assert_int_eq(sim_queue_parse("lifo", &k), -1);
  ck_assert_int_eq((int)k, (int)SIM_QUEUE_SKIP); /* untouched */
}
END_TEST

/* The per-job backfill reservation is reported only under a discipline
 * that reserves (the table's flag decides, not a name). */
START_TEST(reservations_follow_the_table) {
  sim_cluster sc;
  small_cluster(&sc);
  trace t;
  abc_trace(&t);
  for (size_t i = 0; i < sim_queue_count(); i++) {
    const sim_queue_ops *q = sim_queue_at(i);
    sim_options o;
    options(&o, "first-fit", q->kind);
    sim_result r;
    char err[512] = "";
    ck_assert_msg(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_int_eq(r.reserved_us != NULL,
                     (q->flags & SIM_QUEUE_RESERVES) != 0);
    if (r.reserved_us) /* B blocked the head at 0 and reserved 10 s */
      ck_assert_int_eq(r.reserved_us[1], S(10));
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("engine");
  TCase *tc = tcase_create("step");
  tcase_add_unchecked_fixture(tc, load_catalog, free_catalog);
  tcase_add_test(tc, step_times_hand_computed);
  tcase_add_test(tc, close_midway_finishes_the_run);
  tcase_add_test(tc, abandon_leaves_cluster_idle);
  tcase_add_test(tc, teardown_frees_gang_parts);
  tcase_add_test(tc, errors_stick);
  tcase_add_test(tc, open_errors);
  tcase_add_test(tc, stepped_equals_sim_run);
  tcase_add_test(tc, stepped_equals_sim_run_mig);
  tcase_add_test(tc, stepped_stream_equals_run_stream);
  tcase_add_test(tc, parts_see_every_hook);
  suite_add_tcase(s, tc);
  tc = tcase_create("queue");
  tcase_add_unchecked_fixture(tc, load_catalog, free_catalog);
  tcase_add_test(tc, queue_table);
  tcase_add_test(tc, reservations_follow_the_table);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
