/*
 * The simulator core: event heap, hand-computed replay metrics, cost,
 * never-started accounting, cluster-spec validation, determinism.
 */
#include "catalog.h"
#include "cluster_spec.h"
#include "engine.h"
#include "heap.h"
#include "output.h"
#include "testutil.h"
#include "trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S(x) ((int64_t)(x) * TRACE_US_PER_S)

/* ------------------------------------------------------------------ heap */

START_TEST(heap_orders_by_time_then_job) {
  event_heap h;
  heap_init(&h);
  uint64_t x = 88172645463325252ull;
  int64_t times[5000];
  for (int i = 0; i < 5000; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    /* Pushed in a scrambled job order (a permutation of 0..4999): equal
     * times must still come out by ascending job. */
    uint32_t job = (uint32_t)(((uint64_t)i * 2654435761u) % 5000u);
    times[job] = (int64_t)(x % 50); /* many equal times */
    ck_assert_int_eq(heap_push(&h, times[job], job, 1), 0);
    if (i % 97 == 0)
      ck_assert(heap_verify(&h));
  }
  ck_assert(heap_verify(&h));
  sim_event prev = {-1, 0, 0}, ev;
  int count = 0;
  while (heap_pop(&h, &ev) == 0) {
    ck_assert_int_eq(ev.time, times[ev.job]);
    ck_assert(ev.time >= prev.time);
    if (ev.time == prev.time)
      ck_assert_uint_gt(ev.job, prev.job);
    prev = ev;
    count++;
  }
  ck_assert_int_eq(count, 5000);
  ck_assert_int_eq(heap_pop(&h, &ev), -1);
  heap_free(&h);
}
END_TEST

/* Pushes and pops interleaved as in a replay (each pop followed by pushes
 * at or after the popped time, ties included, sizes crossing every number
 * of children at the end of the array): the pops come out exactly in
 * (time, job) order, checked against a sorted reference. */
static int ev_cmp(const void *a, const void *b) {
  const sim_event *x = a, *y = b;
  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  return x->job < y->job ? -1 : x->job > y->job;
}

START_TEST(heap_interleaved_matches_sorted_order) {
  enum { N = 20000 };
  event_heap h;
  heap_init(&h);
  static sim_event pushed[N], popped[N];
  size_t np = 0, no = 0;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  uint32_t job = 0;
  int64_t now = 0;
  while (no < N) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    int pushes = np < N ? (int)(x % 4) : 0; /* 0..3: the heap grows and shrinks */
    if (h.n == 0 && np < N && pushes == 0)
      pushes = 1;
    for (int k = 0; k < pushes && np < N; k++) {
      /* Jobs are distinct, so the order is total; after the last pop (so
       * that the pops are the pushes sorted), many at equal times. */
      uint32_t j = (job++ * 2654435761u) % 1000003u;
      int64_t t = now + 1 + (int64_t)((x >> (20 + 6 * k)) % 64);
      pushed[np++] = (sim_event){t, j, 0};
      ck_assert_int_eq(heap_push(&h, t, j, 0), 0);
    }
    sim_event ev;
    if (heap_pop(&h, &ev) == 0) {
      ck_assert(ev.time >= now);
      now = ev.time;
      popped[no++] = ev;
      if (no % 101 == 0)
        ck_assert(heap_verify(&h));
    }
  }
  ck_assert_uint_eq(h.n, 0);
  /* Pushes never went below the last pop: the pops are the pushes
   * sorted. */
  qsort(pushed, N, sizeof *pushed, ev_cmp);
  for (size_t i = 0; i < N; i++) {
    ck_assert_int_eq(popped[i].time, pushed[i].time);
    ck_assert_uint_eq(popped[i].job, pushed[i].job);
  }
  heap_free(&h);
}
END_TEST

/* --------------------------------------------------------------- fixtures */

static gpu_catalog cat;

static void load_catalog(void) {
  char err[512];
  ck_assert_msg(catalog_load_default(&cat, err, sizeof err) == 0, "%s", err);
}

static void free_catalog(void) { catalog_free(&cat); }

/* One node, 2 A100-80GB GPUs at $3.60 per GPU-hour. */
static void small_cluster(sim_cluster *sc, const char *mode) {
  char json[1024], err[512];
  snprintf(json, sizeof json,
           "{\"name\": \"t\", \"node_groups\": [{\"name\": \"n\", \"count\": "
           "1, \"gpu_model\": \"A100-80GB\", \"gpus_per_node\": 2, "
           "\"cpu_milli\": 10000, \"memory_mib\": 10000, \"gpu_mode\": "
           "\"%s\", \"price_per_gpu_hour\": 3.6}]}",
           mode);
  ck_assert_msg(sim_cluster_from_json(sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
}

/*
 * A: t=0, 10 s, 1 GPU; B: t=0, 20 s, 2 GPUs; C: t=5, 5 s, 1 GPU at 500.
 * fifo: A runs [0,10); B waits for A and runs [10,30); C is behind B and
 * runs [30,35).  skip: C starts at 5 beside A and runs [5,10).
 */
static void abc_trace(trace *t) {
  trace_init(t);
  t->path = strdup("abc.csv");
  t->has_times = 1;
  tu_add_job(t, "A", 0, 10, 1, 1000, NULL);
  tu_add_job(t, "B", 0, 20, 2, 1000, NULL);
  tu_add_job(t, "C", 5, 5, 1, 500, NULL);
}

static int run(sim_cluster *sc, const trace *t, const char *policy,
               sim_queue_kind q, FILE *timeline, sim_result *r) {
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = policy;
  o.queue = q;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.timeline = timeline;
  char err[512] = "";
  int rc = sim_run(sc, &cat, t, &o, r, err, sizeof err);
  if (rc)
    fprintf(stderr, "sim_run: %s\n", err);
  return rc;
}

#define EPS 1e-9

START_TEST(fifo_hand_computed) {
  sim_cluster sc;
  trace t;
  sim_result r;
  small_cluster(&sc, "shared");
  abc_trace(&t);
  char *buf = NULL;
  size_t len = 0;
  FILE *tl = open_memstream(&buf, &len);
  ck_assert_int_eq(run(&sc, &t, "first-fit", SIM_QUEUE_FIFO, tl, &r), 0);
  fclose(tl);
  ck_assert_int_eq(r.js[0].start_us, S(0));
  ck_assert_int_eq(r.js[1].start_us, S(10));
  ck_assert_int_eq(r.js[2].start_us, S(30));
  ck_assert_int_eq(r.js[2].finish_us, S(35));
  ck_assert_uint_eq(r.completed, 3);
  ck_assert_uint_eq(r.events, 6);
  /* queue times 0, 10, 25: mean 35/3; GSL quantiles at (n-1)p. */
  ck_assert_double_eq_tol(r.queue_time_s.mean, 35.0 / 3, EPS);
  ck_assert_double_eq_tol(r.queue_time_s.p50, 10, EPS);
  ck_assert_double_eq_tol(r.queue_time_s.p95, 10 + 0.9 * 15, EPS);
  ck_assert_double_eq_tol(r.queue_time_s.p99, 10 + 0.98 * 15, EPS);
  ck_assert_double_eq_tol(r.queue_time_s.max, 25, EPS);
  /* JCT 10, 30, 30. */
  ck_assert_double_eq_tol(r.jct_s.mean, 70.0 / 3, EPS);
  ck_assert_double_eq_tol(r.jct_s.p50, 30, EPS);
  ck_assert_double_eq_tol(r.jct_s.max, 30, EPS);
  /* Allocated milli x s: 10 x 1000 + 20 x 2000 + 5 x 500 = 52500 over a
   * span of 35 s x 2000 milli = 70000. */
  ck_assert_int_eq(r.makespan_us, S(35));
  ck_assert_double_eq_tol(r.gpu_alloc_ratio_mean, 52500.0 / 70000.0, EPS);
  ck_assert_double_eq_tol(r.allocated_gpu_hours, 52.5 / 3600, EPS);
  /* Cost at $3.60/GPU-h: 2 GPUs x 35 s = 0.07; allocated 0.0525. */
  ck_assert_double_eq_tol(r.cost_total, 0.07, EPS);
  ck_assert_double_eq_tol(r.cost_idle, 0.07 - 0.0525, EPS);
  ck_assert_double_eq_tol(r.cost_per_allocated_gpu_hour, 0.07 / (52.5 / 3600),
                          1e-6);
  /* Fragmentation (fragtrack.h): the workload is the trace's three shapes,
   * weight 1 each (W = 3). At 0 and 5 the GPUs are [0, 1000] free: A (1 x
   * 1000) and C (1 x 500) run and leave nothing below their share, B (2 x
   * 1000) cannot: F = 1000 / 3, rate 1/3. At 10 nothing is idle. At 30 C
   * holds 500 of GPU 0: A sees 500 below 1000, B all 1500 idle, C nothing:
   * F = 2000 / 3, rate 4/9. Stranded: at 0 only B waits and fits nowhere
   * (all 1000 idle); at 5 C waits too and could use the free GPU (0). */
  const char *want = "time,alloc_gpu_milli,alloc_ratio,running,queued,"
                     "frag_amount,frag_rate,stranded_gpu_milli\n"
                     "0,1000,0.500000,1,1,333.333,0.333333,1000\n"
                     "5,1000,0.500000,1,2,333.333,0.333333,0\n"
                     "10,2000,1.000000,1,1,0.000,0.000000,0\n"
                     "30,500,0.250000,1,0,666.667,0.444444,0\n"
                     "35,0,0.000000,0,0,0.000,0.000000,0\n";
  ck_assert_str_eq(buf, want);
  /* Time-weighted over [0, 35]: (1000/3 x 10 + 2000/3 x 5) / 35,
   * (1/3 x 10 + 4/9 x 5) / 35, 1000 x 5 / 35. */
  ck_assert_double_eq_tol(r.frag_amount_mean, 20000.0 / 105.0, 1e-9);
  ck_assert_double_eq_tol(r.frag_rate_mean, 50.0 / 315.0, 1e-12);
  ck_assert_double_eq_tol(r.stranded_gpu_milli_mean, 5000.0 / 35.0, 1e-9);
  free(buf);
  sim_result_free(&r);
  /* The cluster is idle again and consistent. */
  lsched_totals tot;
  lsched_cluster_totals(sc.c, &tot);
  ck_assert_int_eq(tot.gpu_milli_free, tot.gpu_milli);
  ck_assert_int_eq(lsched_cluster_check(sc.c), LSCHED_OK);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

START_TEST(skip_hand_computed) {
  sim_cluster sc;
  trace t;
  sim_result r;
  small_cluster(&sc, "shared");
  abc_trace(&t);
  ck_assert_int_eq(run(&sc, &t, "first-fit", SIM_QUEUE_SKIP, NULL, &r), 0);
  ck_assert_int_eq(r.js[2].start_us, S(5));
  ck_assert_int_eq(r.js[2].finish_us, S(10));
  ck_assert_int_eq(r.js[1].start_us, S(10));
  ck_assert_int_eq(r.makespan_us, S(30));
  /* 5 x 1000 + 5 x 1500 + 20 x 2000 = 52500 over 30 s x 2000. */
  ck_assert_double_eq_tol(r.gpu_alloc_ratio_mean, 52500.0 / 60000.0, EPS);
  /* C sits on GPU 1 beside A (first-fit: lowest index that fits). */
  ck_assert_uint_eq(r.js[2].gpu_mask, 2);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

START_TEST(exclusive_rounds_fractional_up) {
  sim_cluster sc;
  trace t;
  sim_result r;
  small_cluster(&sc, "exclusive");
  abc_trace(&t);
  ck_assert_int_eq(run(&sc, &t, "best-fit", SIM_QUEUE_FIFO, NULL, &r), 0);
  ck_assert_int_eq(r.js[2].gpu_milli, 1000);
  /* As fifo above but C takes 1000 for 5 s: 55000 / 70000. */
  ck_assert_double_eq_tol(r.gpu_alloc_ratio_mean, 55000.0 / 70000.0, EPS);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

START_TEST(never_started_reasons) {
  sim_cluster sc;
  trace t;
  sim_result r;
  small_cluster(&sc, "shared");
  abc_trace(&t);
  tu_add_job(&t, "too-wide", 1, 5, 4, 1000, NULL);    /* 4 GPUs on a 2-GPU node */
  tu_add_job(&t, "wrong-model", 1, 5, 1, 1000, "T4"); /* no T4 in the cluster */
  tu_add_job(&t, "a100-ok", 40, 5, 1, 1000, "A100-SXM4-80GB|T4");
  ck_assert_int_eq(run(&sc, &t, "worst-fit", SIM_QUEUE_FIFO, NULL, &r), 0);
  ck_assert_uint_eq(r.never_no_node, 1);
  ck_assert_uint_eq(r.never_model, 1);
  ck_assert_uint_eq(r.never_started, 2);
  ck_assert_uint_eq(r.completed, 4);
  ck_assert_int_eq(r.js[3].status, JOB_NEVER_NO_NODE);
  ck_assert_int_eq(r.js[4].status, JOB_NEVER_MODEL);
  ck_assert_int_eq(r.js[5].status, JOB_DONE);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

START_TEST(unknown_model_in_trace_is_input_error) {
  sim_cluster sc;
  trace t;
  sim_result r;
  small_cluster(&sc, "shared");
  abc_trace(&t);
  tu_add_job(&t, "bogus", 1, 5, 1, 1000, "NOT-A-GPU");
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = "first-fit";
  o.unknown_duration_us = -1;
  char err[512] = "";
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "abc.csv:5:"));
  ck_assert_ptr_nonnull(strstr(err, "gpu_spec"));
  ck_assert_ptr_nonnull(strstr(err, "NOT-A-GPU"));
  o.policy = "no-such-policy";
  trace_free(&t);
  abc_trace(&t);
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "no-such-policy"));
  ck_assert_ptr_nonnull(strstr(err, "first-fit"));
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

START_TEST(unknown_duration_needs_option) {
  sim_cluster sc;
  trace t;
  sim_result r;
  small_cluster(&sc, "shared");
  abc_trace(&t);
  t.jobs[1].duration_us = -1;
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = "first-fit";
  o.unknown_duration_us = -1;
  char err[512] = "";
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "--unknown-duration"));
  o.unknown_duration_us = S(20);
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err), 0);
  ck_assert_int_eq(r.js[1].finish_us - r.js[1].start_us, S(20));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

START_TEST(zero_duration_and_same_time_events) {
  sim_cluster sc;
  trace t;
  sim_result r;
  small_cluster(&sc, "shared");
  trace_init(&t);
  t.path = strdup("z.csv");
  t.has_times = 1;
  tu_add_job(&t, "z0", 0, 0, 2, 1000, NULL); /* runs [0,0) */
  tu_add_job(&t, "z1", 0, 3, 2, 1000, NULL); /* starts at 0 after z0 */
  char *buf = NULL;
  size_t len = 0;
  FILE *tl = open_memstream(&buf, &len);
  ck_assert_int_eq(run(&sc, &t, "first-fit", SIM_QUEUE_FIFO, tl, &r), 0);
  fclose(tl);
  ck_assert_int_eq(r.js[0].finish_us, 0);
  ck_assert_int_eq(r.js[1].start_us, 0);
  ck_assert_double_eq_tol(r.gpu_alloc_ratio_mean, 1.0, EPS);
  /* one row per distinct time */
  ck_assert_str_eq(buf, "time,alloc_gpu_milli,alloc_ratio,running,queued,"
                        "frag_amount,frag_rate,stranded_gpu_milli\n"
                        "0,2000,1.000000,1,0,0.000,0.000000,0\n"
                        "3,0,0.000000,0,0,0.000,0.000000,0\n");
  free(buf);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* ------------------------------------------------------ cluster spec */

static void expect_spec_error(const char *json, const char *needle) {
  sim_cluster sc;
  char err[512] = "";
  ck_assert_int_eq(
      sim_cluster_from_json(&sc, json, "spec.json", &cat, 0, err, sizeof err),
      -1);
  ck_assert_msg(strstr(err, needle) != NULL, "'%s' lacks '%s'", err, needle);
  ck_assert_msg(strstr(err, "spec.json") != NULL, "'%s' lacks the file", err);
}

START_TEST(cluster_spec_errors) {
  expect_spec_error("{\"node_groups\": [{\"count\": 1, \"gpu_model\": "
                    "\"H900\", \"gpus_per_node\": 8, \"cpu_milli\": 1, "
                    "\"memory_mib\": 1}]}",
                    "unknown GPU model 'H900'");
  expect_spec_error("{\"node_groups\": [{\"count\": 1, \"gpu_model\": "
                    "\"H100\", \"gpus_per_node\": 8, \"cpu_milli\": 1, "
                    "\"memory_mib\": 1, \"gpu_modle\": \"shared\"}]}",
                    "unknown key 'gpu_modle'");
  expect_spec_error("{\"node_groups\": [{\"count\": 1, \"gpu_model\": "
                    "\"H100\", \"gpus_per_node\": 8, \"cpu_milli\": 1, "
                    "\"memory_mib\": 1, \"gpu_mode\": \"fancy\"}]}",
                    "unknown gpu_mode 'fancy'");
  expect_spec_error("{\"node_groups\": [{\"count\": -1, \"gpu_model\": "
                    "\"H100\", \"gpus_per_node\": 8, \"cpu_milli\": 1, "
                    "\"memory_mib\": 1}]}",
                    "'count' must be an integer");
  expect_spec_error("{\"node_groups\": [{\"count\": 1, \"gpu_model\": "
                    "\"H100\", \"gpus_per_node\": 8, \"cpu_milli\": 1.5, "
                    "\"memory_mib\": 1}]}",
                    "'cpu_milli' must be an integer");
  expect_spec_error("{\"node_groups\": [{\"count\": 1, \"gpu_model\": "
                    "\"H100\", \"gpus_per_node\": 65, \"cpu_milli\": 1, "
                    "\"memory_mib\": 1}]}",
                    "gpus_per_node");
  expect_spec_error("{\"node_groups\": [{\"count\": 1, \"gpu_model\": "
                    "\"H100\", \"gpus_per_node\": 8, \"cpu_milli\": 1}]}",
                    "missing key 'memory_mib'");
  expect_spec_error("{\"node_groups\": []}", "non-empty array");
  expect_spec_error("{\"node_groups\": [\n{\"count\": 1,,}]}",
                    "spec.json:2: JSON syntax error");
}
END_TEST

START_TEST(cluster_spec_aliases_and_prices) {
  sim_cluster sc;
  char err[512];
  const char *json =
      "{\"name\": \"x\", \"node_groups\": ["
      "{\"name\": \"a\", \"count\": 2, \"gpu_model\": \"h100\", "
      "\"gpus_per_node\": 8, \"cpu_milli\": 1000, \"memory_mib\": 1000},"
      "{\"name\": \"g\", \"count\": 1, \"gpu_model\": \"G2\", "
      "\"gpus_per_node\": 4, \"cpu_milli\": 1000, \"memory_mib\": 1000},"
      "{\"name\": \"c\", \"count\": 3, \"gpus_per_node\": 0, "
      "\"cpu_milli\": 1000, \"memory_mib\": 1000}]}";
  ck_assert_msg(sim_cluster_from_json(&sc, json, "x.json", &cat, 0, err,
                                      sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(sc.nodes, 6);
  ck_assert_int_eq(sc.gpus, 20);
  ck_assert_int_eq(sc.unpriced_gpus, 4); /* G2 has no catalog price */
  ck_assert_double_eq_tol(sc.node_price[0], 6.88, EPS);
  ck_assert_str_eq(lsched_cluster_model_name(sc.c, 0), "H100-SXM5-80GB");
  uint64_t mask;
  ck_assert_int_eq(sim_cluster_spec_mask(&sc, &cat, "T4|H100-80GB", &mask, err,
                                         sizeof err),
                   0);
  ck_assert_uint_eq(mask, 1);
  ck_assert_int_eq(sim_cluster_spec_mask(&sc, &cat, "T4", &mask, err,
                                         sizeof err),
                   1);
  ck_assert_int_eq(sim_cluster_spec_mask(&sc, &cat, "XYZ", &mask, err,
                                         sizeof err),
                   -1);
  sim_cluster_free(&sc);
  ck_assert_int_eq(catalog_override_price(&cat, "G2=1.5", err, sizeof err), 0);
  ck_assert_int_eq(catalog_override_price(&cat, "G9=1.5", err, sizeof err), -1);
  ck_assert_int_eq(catalog_override_price(&cat, "G2=-1", err, sizeof err), -1);
}
END_TEST

START_TEST(fmt_seconds) {
  char b[32];
  sim_fmt_seconds(b, sizeof b, S(12));
  ck_assert_str_eq(b, "12");
  sim_fmt_seconds(b, sizeof b, 1500000);
  ck_assert_str_eq(b, "1.5");
  sim_fmt_seconds(b, sizeof b, 1);
  ck_assert_str_eq(b, "0.000001");
  sim_fmt_seconds(b, sizeof b, -2500000);
  ck_assert_str_eq(b, "-2.5");
}
END_TEST


/* ----------------------------------------------- queue disciplines, gang */

static void two_node_cluster(sim_cluster *sc, int g0, int g1) {
  char json[1024], err[512];
  snprintf(json, sizeof json,
           "{\"name\": \"t\", \"node_groups\": ["
           "{\"name\": \"n0\", \"count\": 1, \"gpu_model\": \"A100-80GB\", "
           "\"gpus_per_node\": %d, \"cpu_milli\": 64000, \"memory_mib\": "
           "64000, \"price_per_gpu_hour\": 1},"
           "{\"name\": \"n1\", \"count\": 1, \"gpu_model\": \"A100-80GB\", "
           "\"gpus_per_node\": %d, \"cpu_milli\": 64000, \"memory_mib\": "
           "64000, \"price_per_gpu_hour\": 1}]}",
           g0, g1);
  ck_assert_msg(sim_cluster_from_json(sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
}

/*
 * n0: 4 GPUs, n1: 1 GPU. A t=0 2 GPUs 10 s; B t=1 4 GPUs 5 s (head, blocked:
 * reservation at 10 when A ends); C t=2 2 GPUs 5 s (ends 7 <= 10:
 * backfilled at 2); D t=3 1 GPU 20 s (fits only n1; ends 23 > 10 but leaves
 * n0 alone, so B still starts at 10: backfilled at 3); F t=5 1 GPU 30 s
 * (fits n0 at 7 when C ends, but would hold a GPU B needs at 10: waits,
 * starts at 15 when B ends).
 */
START_TEST(backfill_hand_computed) {
  sim_cluster sc;
  trace t;
  sim_result r;
  two_node_cluster(&sc, 4, 1);
  trace_init(&t);
  t.path = strdup("bf.csv");
  t.has_times = 1;
  tu_add_job(&t, "A", 0, 10, 2, 1000, NULL);
  tu_add_job(&t, "B", 1, 5, 4, 1000, NULL);
  tu_add_job(&t, "C", 2, 5, 2, 1000, NULL);
  tu_add_job(&t, "D", 3, 20, 1, 1000, NULL);
  tu_add_job(&t, "F", 5, 30, 1, 1000, NULL);
  ck_assert_int_eq(run(&sc, &t, "first-fit", SIM_QUEUE_BACKFILL, NULL, &r), 0);
  ck_assert_int_eq(r.js[0].start_us, S(0));
  ck_assert_int_eq(r.js[1].start_us, S(10));
  ck_assert_int_eq(r.js[2].start_us, S(2));
  ck_assert_int_eq(r.js[3].start_us, S(3));
  ck_assert_int_eq(r.js[3].node, 1);
  ck_assert_int_eq(r.js[4].start_us, S(15));
  ck_assert_int_eq(r.reserved_us[1], S(10)); /* B's reservation, kept */
  sim_result_free(&r);
  /* fifo for contrast: C, D and F all wait behind B. */
  ck_assert_int_eq(run(&sc, &t, "first-fit", SIM_QUEUE_FIFO, NULL, &r), 0);
  ck_assert_int_eq(r.js[2].start_us, S(15));
  ck_assert_int_eq(r.js[3].start_us, S(15));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* EASY with exact estimates never delays a head job past the reservation
 * it got: random workloads on a small cluster, every policy. */
START_TEST(backfill_never_delays_reservation) {
  sim_cluster sc;
  two_node_cluster(&sc, 8, 4);
  const char *pols[] = {"first-fit", "best-fit", "worst-fit"};
  uint64_t x = 0x243F6A8885A308D3ull + (uint64_t)_i * 7919;
  trace t;
  trace_init(&t);
  t.path = strdup("rand.csv");
  t.has_times = 1;
  int64_t submit = 0;
  for (int k = 0; k < 120; k++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    submit += (int64_t)(x % 4);
    int gpus = 1 + (int)((x >> 8) % 8);
    int milli = (x >> 20) % 3 == 0 ? 250 + (int)((x >> 24) % 700) : 1000;
    if (gpus > 1)
      milli = 1000;
    char name[16];
    snprintf(name, sizeof name, "j%d", k);
    tu_add_job(&t, name, submit, 1 + (int64_t)((x >> 32) % 40), gpus, milli, NULL);
  }
  sim_result r;
  ck_assert_int_eq(run(&sc, &t, pols[_i % 3], SIM_QUEUE_BACKFILL, NULL, &r),
                   0);
  int reserved = 0;
  for (size_t j = 0; j < t.n; j++) {
    ck_assert_int_eq(r.js[j].status, JOB_DONE);
    if (r.reserved_us[j] >= 0) {
      reserved++;
      ck_assert_msg(r.js[j].start_us <= r.reserved_us[j],
                    "job %zu started %lld after its reservation %lld", j,
                    (long long)r.js[j].start_us,
                    (long long)r.reserved_us[j]);
    }
  }
  ck_assert_int_gt(reserved, 0); /* the workload does block the head */
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* priority: X (BE) runs 0-10; Y (BE, t=1) and Z (LS, t=2) wait; Z's class
 * is higher, so Z runs 10-15 and Y 15-20. */
START_TEST(priority_classes) {
  sim_cluster sc;
  trace t;
  sim_result r;
  two_node_cluster(&sc, 1, 0);
  trace_init(&t);
  t.path = strdup("prio.csv");
  t.has_times = 1;
  tu_add_job(&t, "X", 0, 10, 1, 1000, NULL);
  tu_add_job(&t, "Y", 1, 5, 1, 1000, NULL);
  tu_add_job(&t, "Z", 2, 5, 1, 1000, NULL);
  t.jobs[0].qos = TRACE_QOS_BE;
  t.jobs[1].qos = TRACE_QOS_BE;
  t.jobs[2].qos = TRACE_QOS_LS;
  ck_assert_int_eq(run(&sc, &t, "first-fit", SIM_QUEUE_PRIORITY, NULL, &r), 0);
  ck_assert_int_eq(r.js[2].start_us, S(10));
  ck_assert_int_eq(r.js[1].start_us, S(15));
  sim_result_free(&r);
  ck_assert_int_eq(run(&sc, &t, "first-fit", SIM_QUEUE_FIFO, NULL, &r), 0);
  ck_assert_int_eq(r.js[1].start_us, S(10));
  ck_assert_int_eq(r.js[2].start_us, S(15));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* A job sink writing jobs.csv rows, as `schedsim run` does. */
typedef struct rows_sink {
  FILE *f;
  const sim_cluster *sc;
} rows_sink;

static int put_row(void *user, const sim_job_out *o) {
  rows_sink *k = user;
  write_job_row(k->f, k->sc, o);
  return 0;
}

/* Replays t again (fifo) with jobs.csv rows going to path. */
static void jobs_csv(const char *path, sim_cluster *sc, const trace *t,
                     const char *policy) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  write_jobs_header(f, 0);
  rows_sink k = {f, sc};
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = policy;
  o.queue = SIM_QUEUE_FIFO;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.on_job = put_row;
  o.on_job_user = &k;
  sim_result r;
  char err[512] = "";
  ck_assert_msg(sim_run(sc, &cat, t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_ptr_null(r.js);
  sim_result_free(&r);
  ck_assert_int_eq(fclose(f), 0);
}

/* An 8-GPU job on two 4-GPU nodes runs as a gang; a 9-GPU job never can. */
START_TEST(gang_job_in_replay) {
  sim_cluster sc;
  trace t;
  sim_result r;
  two_node_cluster(&sc, 4, 4);
  trace_init(&t);
  t.path = strdup("gang.csv");
  t.has_times = 1;
  tu_add_job(&t, "small", 0, 10, 1, 1000, NULL);
  tu_add_job(&t, "wide", 1, 10, 8, 1000, NULL);
  tu_add_job(&t, "wider", 1, 10, 9, 1000, NULL);
  ck_assert_int_eq(run(&sc, &t, "best-fit", SIM_QUEUE_FIFO, NULL, &r), 0);
  ck_assert_int_eq(r.js[1].start_us, S(10));
  ck_assert_int_le(r.js[1].node, -2);
  const sim_gang *g = &r.gangs[-2 - r.js[1].node];
  ck_assert_int_eq(g->n, 2);
  ck_assert_int_eq(g->parts[0].gpu_count + g->parts[1].gpu_count, 8);
  ck_assert_int_ne(g->parts[0].node, g->parts[1].node);
  ck_assert_int_eq(r.js[2].status, JOB_NEVER_NO_NODE);
  /* allocation: 1 GPU for 10 s, then 8 GPUs for 10 s, over 20 s x 8. */
  ck_assert_double_eq_tol(r.gpu_alloc_ratio_mean, 90.0 / 160.0, EPS);
  ck_assert_double_eq_tol(r.cost_idle, (160.0 - 90.0) / 3600, EPS);
  char path[4096];
  snprintf(path, sizeof path, "%s/jobs.csv", testutil_tmpdir());
  jobs_csv(path, &sc, &t, "best-fit");
  FILE *f = fopen(path, "r");
  char line[512];
  int found = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "wide,", 5) == 0) {
      ck_assert_str_eq(line, "wide,1,10,20,n0+n1,0;1;2;3+0;1;2;3,1000,9,19,"
                             "completed,0,0,0,,,,A100-SXM4-80GB,80.000000,"
                             "0.022222\n");
      found = 1;
    }
  fclose(f);
  ck_assert(found);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST


/* n0 and n1 have 4 GPUs. worst-fit spreads A (2 GPUs, 100 s) to n0 and B
 * (2 GPUs, 100 s) to n1; W (4 GPUs, t=1) fits nowhere though 4 GPUs are
 * free. defrag moves A to n1 (cost 5 s: A resumes at 6 with 99 s left and
 * ends at 105, losing 5 s x 2 GPUs) and W starts at 1 on n0. With
 * --preempt instead, A stops at 1 (no checkpoint: 1 s x 2 GPUs lost),
 * queues behind W and restarts at 1 on n1 with all 100 s left. */
START_TEST(migration_and_preemption) {
  sim_cluster sc;
  trace t;
  sim_result r;
  two_node_cluster(&sc, 4, 4);
  trace_init(&t);
  t.path = strdup("mig.csv");
  t.has_times = 1;
  tu_add_job(&t, "A", 0, 100, 2, 1000, NULL);
  tu_add_job(&t, "B", 0, 100, 2, 1000, NULL);
  tu_add_job(&t, "W", 1, 10, 4, 1000, NULL);
  char *params[] = {"base=worst-fit"};
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = "defrag";
  o.unknown_duration_us = -1;
  o.migration_fixed_s = 5;
  o.policy_params = params;
  o.npolicy_params = 1;
  char err[512] = "";
  ck_assert_msg(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err) == 0, "%s",
                err);
  ck_assert_int_eq(r.js[2].start_us, S(1));
  ck_assert_int_eq(r.js[2].node, 0);
  ck_assert_int_eq(r.js[0].start_us, S(0));
  ck_assert_int_eq(r.js[0].finish_us, S(105));
  ck_assert_int_eq(r.js[0].node, 1);
  ck_assert_uint_eq(r.migrations[0], 1);
  ck_assert_uint_eq(r.migrations[1], 0);
  ck_assert_double_eq_tol(r.lost_gpu_s[0], 10, EPS);
  ck_assert_uint_eq(r.migrations_total, 1);
  ck_assert_uint_eq(r.events, 6); /* stale completion events not counted */
  ck_assert_int_eq(lsched_cluster_check(sc.c), LSCHED_OK);
  sim_result_free(&r);
  /* without defrag W waits for A and B */
  ck_assert_int_eq(run(&sc, &t, "worst-fit", SIM_QUEUE_FIFO, NULL, &r), 0);
  ck_assert_int_eq(r.js[2].start_us, S(100));
  ck_assert_ptr_null(r.migrations);
  sim_result_free(&r);
  o.preempt = 1;
  ck_assert_msg(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err) == 0, "%s",
                err);
  ck_assert_int_eq(r.js[2].start_us, S(1));
  ck_assert_int_eq(r.js[0].start_us, S(0)); /* first start */
  ck_assert_int_eq(r.js[0].finish_us, S(101));
  ck_assert_uint_eq(r.preemptions[0], 1);
  ck_assert_double_eq_tol(r.lost_gpu_s[0], 2, EPS);
  sim_result_free(&r);
  /* a checkpoint every 0.4 s keeps 0.8 s of A's 1 s */
  o.checkpoint_s = 0.4;
  ck_assert_msg(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err) == 0, "%s",
                err);
  ck_assert_int_eq(r.js[0].finish_us, S(101) - 800000);
  ck_assert_double_eq_tol(r.lost_gpu_s[0], 0.4, EPS);
  sim_result_free(&r);
  /* a bad policy parameter is an input error */
  char *bad[] = {"base=nope"};
  o.policy_params = bad;
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "base"));
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* ------------------------------------------------- the real Alibaba trace */

/* Replays openb_pod_list_default on the 1,213-node GPU cluster with every
 * builtin policy, invariants checked after every alloc and release: every
 * pod that fits an empty node starts; two runs give identical results. */
START_TEST(alibaba_default_every_policy) {
  const char *pods = testutil_data("alibaba-gpu-v2023/openb_pod_list_default.csv");
  if (!pods)
    return;
  char podpath[4096];
  snprintf(podpath, sizeof podpath, "%s", pods);
  const char *nodes =
      testutil_data("alibaba-gpu-v2023/openb_node_list_gpu_node.csv");
  if (!nodes)
    return;
  char err[1024];
  /* sc checks every invariant after each alloc and release; plain (same
   * nodes, no checks) gives the second run that must be identical. */
  sim_cluster sc, plain;
  ck_assert_msg(sim_cluster_load(&sc, nodes, &cat, 1, err, sizeof err) == 0,
                "%s", err);
  ck_assert_msg(sim_cluster_load(&plain, nodes, &cat, 0, err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(sc.nodes, 1213);
  ck_assert_int_eq(sc.gpus, 6212);
  trace t;
  trace_init(&t);
  trace_error te;
  ck_assert_msg(trace_load(&t, podpath, &te) == 0, "%s", te.msg);
  lsched_registry *reg;
  ck_assert_int_eq(lsched_registry_create(&reg, NULL), 0);
  ck_assert_int_eq(lsched_registry_add_builtins(reg), 0);
  /* One policy per loop iteration (each its own forked test and timeout:
   * with --check semantics a run takes about half a minute under ASan). */
  for (size_t p = (size_t)_i; p < lsched_registry_count(reg) && p == (size_t)_i;
       p++) {
    const char *pol = lsched_registry_at(reg, p)->name;
    /* The MIG policies place this cluster's (non-MIG) requests exactly as
     * first-fit and best-fit do (test_conformance, test_mig): skipped to
     * keep this sanitizer-heavy test within its time limit. */
    if (strncmp(pol, "mig-", 4) == 0)
      continue;
    sim_result a, b;
    ck_assert_int_eq(run(&sc, &t, pol, SIM_QUEUE_FIFO, NULL, &a), 0);
    ck_assert_int_eq(run(&plain, &t, pol, SIM_QUEUE_FIFO, NULL, &b), 0);
    ck_assert_uint_eq(a.jobs, 8152);
    for (size_t j = 0; j < t.n; j++) {
      lsched_request req = LSCHED_REQUEST_INIT;
      req.cpu_milli = t.jobs[j].cpu_milli;
      req.memory_mib = t.jobs[j].memory_mib;
      req.gpu_count = t.jobs[j].num_gpu;
      req.gpu_milli = t.jobs[j].gpu_milli;
      if (t.jobs[j].gpu_spec >= 0)
        sim_cluster_spec_mask(&sc, &cat, t.specs[t.jobs[j].gpu_spec],
                              &req.model_mask, err, sizeof err);
      if (lsched_can_ever_fit(sc.c, &req))
        ck_assert_msg(a.js[j].status == JOB_DONE, "%s: %s did not run",
                      pol, trace_job_name(&t, j));
    }
    ck_assert_uint_eq(a.completed + a.never_started, a.jobs);
    ck_assert(memcmp(a.js, b.js, t.n * sizeof *a.js) == 0);
    ck_assert(a.gpu_alloc_ratio_mean == b.gpu_alloc_ratio_mean);
    ck_assert(a.gpu_alloc_ratio_mean > 0 && a.gpu_alloc_ratio_mean <= 1);
    ck_assert_int_eq(lsched_cluster_check(sc.c), LSCHED_OK);
    sim_result_free(&a);
    sim_result_free(&b);
  }
  lsched_registry_destroy(reg);
  trace_free(&t);
  sim_cluster_free(&sc);
  sim_cluster_free(&plain);
}
END_TEST

static int builtin_count(void) {
  lsched_registry *r = NULL;
  int n = 0;
  if (lsched_registry_create(&r, NULL) == LSCHED_OK &&
      lsched_registry_add_builtins(r) == LSCHED_OK)
    n = (int)lsched_registry_count(r);
  lsched_registry_destroy(r);
  return n;
}


/* ---------------------------------------------------------- streamed runs */

/* Per-job outcomes as on_job hands them, by trace position. */
typedef struct outcome {
  int seen;
  job_state st;
  int nparts;
  int node0;
  uint64_t mask0;
  unsigned migrations;
  int64_t reserved_us;
  char name[64]; /* the job's name as handed out */
} outcome;

typedef struct collect {
  outcome *o;
  size_t n;
  uint64_t last_index_order_breaks; /* outcomes not in trace order */
  uint64_t prev;
} collect;

static int collect_job(void *user, const sim_job_out *j) {
  collect *c = user;
  ck_assert_uint_lt(j->index, c->n);
  outcome *o = &c->o[j->index];
  ck_assert_msg(!o->seen, "job %llu handed out twice",
                (unsigned long long)j->index);
  o->seen = 1;
  o->st = *j->st;
  o->nparts = j->nparts;
  o->node0 = j->nparts ? j->parts[0].node : -1;
  o->mask0 = j->nparts ? j->parts[0].gpu_mask : 0;
  o->migrations = j->migrations;
  o->reserved_us = j->reserved_us;
  snprintf(o->name, sizeof o->name, "%s", j->name);
  if (j->index < c->prev)
    c->last_index_order_breaks++;
  c->prev = j->index;
  return 0;
}

static void same_stats(const sim_stats *a, const sim_stats *b) {
  ck_assert_uint_eq(a->n, b->n);
  ck_assert(a->mean == b->mean && a->p50 == b->p50 && a->p95 == b->p95 &&
            a->p99 == b->p99 && a->max == b->max);
}

/* A streamed replay of a file (read twice, slots recycled, percentiles
 * spilled to a temporary file after 64 values) gives exactly what the
 * replay of the loaded trace gives, job by job and in every total, for
 * each queue discipline and a policy that migrates. */
START_TEST(stream_matches_loaded) {
  static const struct {
    const char *policy;
    sim_queue_kind q;
  } cases[] = {{"first-fit", SIM_QUEUE_FIFO},
               {"best-fit", SIM_QUEUE_SKIP},
               {"fgd", SIM_QUEUE_BACKFILL},
               {"defrag", SIM_QUEUE_SKIP},
               {"worst-fit", SIM_QUEUE_PRIORITY}};
  sim_cluster sc;
  char err[1024];
  static const char json[] =
      "{\"name\": \"s\", \"node_groups\": [{\"name\": \"a\", \"count\": 3, "
      "\"gpu_model\": \"A100-SXM4-80GB\", \"gpus_per_node\": 8, "
      "\"cpu_milli\": 256000, \"memory_mib\": 2097152, \"gpu_mode\": "
      "\"shared\", \"price_per_gpu_hour\": 2}]}";
  ck_assert_msg(sim_cluster_from_json(&sc, json, "s", &cat, 1, err,
                                      sizeof err) == 0, "%s", err);
  synth_params p;
  synth_default_params(&p);
  p.jobs = 2000;
  p.seed = 7;
  /* The mix loads 192 GPUs to ~90%: here 24 GPUs to ~110%, so a queue
   * builds up and drains. */
  p.arrival_rate *= 24.0 * 1.2 / 192.0;
  trace gen;
  trace_init(&gen);
  trace_error te;
  ck_assert_msg(synth_generate(&gen, &p, &te) == 0, "%s", te.msg);
  char path[4096];
  snprintf(path, sizeof path, "%s/stream.csv", testutil_tmpdir());
  ck_assert_msg(trace_write_alibaba(&gen, path, &te) == 0, "%s", te.msg);
  trace_free(&gen);
  trace t;
  trace_init(&t);
  ck_assert_msg(trace_load(&t, path, &te) == 0, "%s", te.msg);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    sim_options o;
    memset(&o, 0, sizeof o);
    o.policy = cases[c].policy;
    o.queue = cases[c].q;
    o.seed = 1;
    o.unknown_duration_us = -1;
    collect a = {calloc(t.n, sizeof(outcome)), t.n, 0, 0};
    collect b = {calloc(t.n, sizeof(outcome)), t.n, 0, 0};
    o.on_job = collect_job;
    o.on_job_user = &a;
    sim_result ra, rb, rc;
    ck_assert_msg(sim_run(&sc, &cat, &t, &o, &ra, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_ptr_null(ra.js);
    trace_stream *ts;
    ck_assert_msg(trace_stream_open(&ts, path, NULL, &te) == 0, "%s", te.msg);
    o.on_job_user = &b;
    o.pctl_mem_values = 64;
    ck_assert_msg(sim_run_stream(&sc, &cat, ts, &o, &rb, err, sizeof err) == 0,
                  "%s: %s", cases[c].policy, err);
    trace_stream_close(ts);
    /* Without on_job: the per-job arrays, which must say the same. */
    o.on_job = NULL;
    o.pctl_mem_values = 0;
    ck_assert_msg(sim_run(&sc, &cat, &t, &o, &rc, err, sizeof err) == 0,
                  "%s", err);
    for (size_t j = 0; j < t.n; j++) {
      ck_assert_msg(a.o[j].seen && b.o[j].seen, "%s: job %zu missing",
                    cases[c].policy, j);
      ck_assert_int_eq(a.o[j].st.status, b.o[j].st.status);
      ck_assert_int_eq(a.o[j].st.start_us, b.o[j].st.start_us);
      ck_assert_int_eq(a.o[j].st.finish_us, b.o[j].st.finish_us);
      ck_assert_int_eq(a.o[j].node0, b.o[j].node0);
      ck_assert_uint_eq(a.o[j].mask0, b.o[j].mask0);
      ck_assert_uint_eq(a.o[j].migrations, b.o[j].migrations);
      /* Names and reservations as the trace and the loaded run say (a
       * discipline that reserves keeps the name apart: struct slot). */
      ck_assert_int_eq(a.o[j].reserved_us, b.o[j].reserved_us);
      ck_assert_str_eq(a.o[j].name, trace_job_name(&t, j));
      ck_assert_str_eq(b.o[j].name, a.o[j].name);
      if (rc.reserved_us)
        ck_assert_int_eq(rc.reserved_us[j], a.o[j].reserved_us);
      ck_assert_int_eq(rc.js[j].status, a.o[j].st.status);
      ck_assert_int_eq(rc.js[j].start_us, a.o[j].st.start_us);
      ck_assert_int_eq(rc.js[j].finish_us, a.o[j].st.finish_us);
      if (a.o[j].nparts == 1)
        ck_assert_int_eq(rc.js[j].node, a.o[j].node0);
    }
    /* Outcomes come in completion order, not in trace order. */
    ck_assert_uint_gt(a.last_index_order_breaks, 0);
    const sim_result *r[3] = {&ra, &rb, &rc};
    for (int k = 1; k < 3; k++) {
      ck_assert_uint_eq(r[k]->jobs, ra.jobs);
      ck_assert_uint_eq(r[k]->completed, ra.completed);
      ck_assert_uint_eq(r[k]->events, ra.events);
      ck_assert_int_eq(r[k]->makespan_us, ra.makespan_us);
      same_stats(&r[k]->queue_time_s, &ra.queue_time_s);
      same_stats(&r[k]->jct_s, &ra.jct_s);
      same_stats(&r[k]->queue_time_multigpu_s, &ra.queue_time_multigpu_s);
      ck_assert(r[k]->gpu_alloc_ratio_mean == ra.gpu_alloc_ratio_mean);
      ck_assert(r[k]->cost_idle == ra.cost_idle);
      ck_assert(r[k]->frag_amount_mean == ra.frag_amount_mean);
      ck_assert(r[k]->stranded_gpu_milli_mean == ra.stranded_gpu_milli_mean);
      ck_assert_uint_eq(r[k]->migrations_total, ra.migrations_total);
    }
    ck_assert_uint_eq(ra.completed, t.n);
    if (strcmp(cases[c].policy, "defrag") == 0)
      ck_assert_uint_gt(ra.migrations_total, 0);
    sim_result_free(&ra);
    sim_result_free(&rb);
    sim_result_free(&rc);
    free(a.o);
    free(b.o);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* A stream whose submit times go back is refused before anything is
 * replayed (the caller loads it whole), naming the line; so is a cluster
 * with MIG GPUs. */
START_TEST(stream_refuses_unsorted_and_mig) {
  sim_cluster sc;
  small_cluster(&sc, "shared");
  char path[4096];
  snprintf(path, sizeof path, "%s/unsorted.csv", testutil_tmpdir());
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
        "creation_time,deletion_time,scheduled_time\n"
        "a,1000,1000,1,1000,,LS,Running,10,20,10\n"
        "b,1000,1000,1,1000,,LS,Running,5,20,5\n", f);
  ck_assert_int_eq(fclose(f), 0);
  trace_stream *ts;
  trace_error te;
  ck_assert_msg(trace_stream_open(&ts, path, NULL, &te) == 0, "%s", te.msg);
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = "first-fit";
  o.unknown_duration_us = -1;
  collect c = {calloc(2, sizeof(outcome)), 2, 0, 0};
  o.on_job = collect_job;
  o.on_job_user = &c;
  sim_result r;
  char err[1024];
  ck_assert_int_eq(sim_run_stream(&sc, &cat, ts, &o, &r, err, sizeof err), -3);
  ck_assert_msg(strstr(err, "unsorted.csv:3: jobs are not in submit order"),
                "%s", err);
  ck_assert(!c.o[0].seen && !c.o[1].seen);
  ck_assert_ptr_null(r.js);
  trace_stream_close(ts);
  free(c.o);
  sim_cluster_free(&sc);
  static const char mig[] =
      "{\"name\": \"m\", \"node_groups\": [{\"name\": \"n\", \"count\": 1, "
      "\"gpu_model\": \"A100-80GB\", \"gpus_per_node\": 2, \"cpu_milli\": "
      "10000, \"memory_mib\": 10000, \"gpu_mode\": \"mig-dynamic\"}]}";
  ck_assert_msg(sim_cluster_from_json(&sc, mig, "m", &cat, 1, err,
                                      sizeof err) == 0, "%s", err);
  ck_assert_msg(trace_stream_open(&ts, path, NULL, &te) == 0, "%s", te.msg);
  ck_assert_int_eq(sim_run_stream(&sc, &cat, ts, &o, &r, err, sizeof err), -3);
  trace_stream_close(ts);
  sim_cluster_free(&sc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("sim");
  TCase *tc = tcase_create("heap");
  tcase_add_test(tc, heap_orders_by_time_then_job);
  tcase_add_test(tc, heap_interleaved_matches_sorted_order);
  suite_add_tcase(s, tc);
  tc = tcase_create("replay");
  tcase_add_checked_fixture(tc, load_catalog, free_catalog);
  tcase_add_test(tc, fifo_hand_computed);
  tcase_add_test(tc, skip_hand_computed);
  tcase_add_test(tc, exclusive_rounds_fractional_up);
  tcase_add_test(tc, never_started_reasons);
  tcase_add_test(tc, unknown_model_in_trace_is_input_error);
  tcase_add_test(tc, unknown_duration_needs_option);
  tcase_add_test(tc, zero_duration_and_same_time_events);
  tcase_add_test(tc, cluster_spec_errors);
  tcase_add_test(tc, cluster_spec_aliases_and_prices);
  tcase_add_test(tc, fmt_seconds);
  tcase_add_test(tc, backfill_hand_computed);
  tcase_add_loop_test(tc, backfill_never_delays_reservation, 0, 30);
  tcase_add_test(tc, priority_classes);
  tcase_add_test(tc, gang_job_in_replay);
  tcase_add_test(tc, migration_and_preemption);
  tcase_add_test(tc, stream_matches_loaded);
  tcase_add_test(tc, stream_refuses_unsorted_and_mig);
  suite_add_tcase(s, tc);
  tc = tcase_create("alibaba");
  tcase_set_timeout(tc, 600);
  tcase_add_checked_fixture(tc, load_catalog, free_catalog);
  tcase_add_loop_test(tc, alibaba_default_every_policy, 0, builtin_count());
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
