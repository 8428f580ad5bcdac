/*
 * Energy (sim/engine/energy.c; definitions in sim/README.md "Energy" and
 * docs/DESIGN.md section 6): a hand-computed two-job run, PUE and node
 * overhead, the energy price, a model without figures (left out and
 * counted), a MIG instance by compute share, and the same integral through
 * migrations and preemptions (checked against the engine's own allocation
 * integral); and the inputs: catalog watts, cluster spec pue and
 * node_overhead_w, with errors naming the file and key.
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

/* 1 kWh in joules. */
#define J_PER_KWH 3.6e6

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

static void options(sim_options *o, const char *policy) {
  memset(o, 0, sizeof *o);
  o->policy = policy;
  o->queue = SIM_QUEUE_FIFO;
  o->seed = 1;
  o->unknown_duration_us = -1;
}

static void run(sim_cluster *sc, trace *t, const sim_options *o,
                sim_result *r) {
  char err[512] = "";
  ck_assert_msg(sim_run(sc, &cat, t, o, r, err, sizeof err) == 0, "%s", err);
}

static void near(double got, double want) {
  ck_assert_msg(fabs(got - want) <= 1e-12 * fabs(want) + 1e-15,
                "got %.17g, want %.17g", got, want);
}

/*
 * Two jobs on one node of 2 A100-80GB GPUs (catalog: idle_w 60, busy_w
 * 400), shared: A at 0 s for 100 s on half a GPU (500 milli, GPU 0); B at
 * 50 s for 100 s on a whole GPU (GPU 1). Span [0, 150] s.
 *   idle:  2 GPUs x 60 W x 150 s                    = 18,000 J
 *   A:     (400 - 60) W x 500/1000 x 100 s          = 17,000 J
 *   B:     (400 - 60) W x 1000/1000 x 100 s         = 34,000 J
 *   GPU energy = 69,000 J = 69000 / 3.6e6 kWh       = 0.0191666... kWh
 * With node_overhead_w 200 (1 node) and pue 1.5:
 *   facility = (69,000 + 200 W x 1 x 150 s) x 1.5   = 148,500 J
 *            = 0.04125 kWh; at 0.20 USD/kWh          = 0.00825 USD.
 */
static void two_job_trace(trace *t) {
  trace_init(t);
  t->path = strdup("two.csv");
  t->has_times = 1;
  tu_add_job(t, "A", 0, 100, 1, 500, NULL);
  tu_add_job(t, "B", 50, 100, 1, 1000, NULL);
}

START_TEST(two_jobs_hand_computed) {
  sim_cluster sc;
  cluster_json(&sc, "{\"name\": \"e\", \"node_groups\": [{\"name\": \"n\", "
                    "\"count\": 1, \"gpu_model\": \"A100-80GB\", "
                    "\"gpus_per_node\": 2, \"cpu_milli\": 10000, "
                    "\"memory_mib\": 10000, \"gpu_mode\": \"shared\"}]}");
  trace t;
  two_job_trace(&t);
  sim_options o;
  options(&o, "first-fit");
  sim_result r;
  run(&sc, &t, &o, &r);
  ck_assert_int_eq(r.makespan_us, 150 * TRACE_US_PER_S);
  near(r.energy_gpu_kwh, 69000.0 / J_PER_KWH);
  near(r.energy_facility_kwh, 69000.0 / J_PER_KWH); /* pue 1, no overhead */
  ck_assert(r.energy_cost_usd == 0);                 /* no price */
  ck_assert_int_eq(r.energy_unknown_gpus, 0);
  sim_result_free(&r);
  sim_cluster_free(&sc);

  /* PUE and node overhead (top-level overhead overridden by the group's),
   * and a price. */
  cluster_json(&sc, "{\"name\": \"e\", \"pue\": 1.5, \"node_overhead_w\": "
                    "999, \"node_groups\": [{\"name\": \"n\", "
                    "\"count\": 1, \"gpu_model\": \"A100-80GB\", "
                    "\"gpus_per_node\": 2, \"cpu_milli\": 10000, "
                    "\"memory_mib\": 10000, \"gpu_mode\": \"shared\", "
                    "\"node_overhead_w\": 200}]}");
  ck_assert(sc.pue == 1.5);
  ck_assert_int_eq(sc.overhead_mw, 200000);
  o.energy_price = 0.20;
  run(&sc, &t, &o, &r);
  near(r.energy_gpu_kwh, 69000.0 / J_PER_KWH);
  near(r.energy_facility_kwh, 148500.0 / J_PER_KWH); /* 0.04125 */
  near(r.energy_cost_usd, 0.04125 * 0.20);
  sim_result_free(&r);
  sim_cluster_free(&sc);
  trace_free(&t);
}
END_TEST

/* The top-level node_overhead_w is every group's default: 2 nodes x 50 W
 * x 150 s = 15,000 J on top of the 69,000 (one job per node now: A on
 * node a, B on node b; the same GPU figures). */
START_TEST(overhead_default_for_groups) {
  sim_cluster sc;
  cluster_json(&sc, "{\"name\": \"e\", \"node_overhead_w\": 50, "
                    "\"node_groups\": [{\"name\": \"a\", \"count\": 1, "
                    "\"gpu_model\": \"A100-80GB\", \"gpus_per_node\": 1, "
                    "\"cpu_milli\": 10000, \"memory_mib\": 10000}, "
                    "{\"name\": \"b\", \"count\": 1, \"gpu_model\": "
                    "\"A100-80GB\", \"gpus_per_node\": 1, \"cpu_milli\": "
                    "10000, \"memory_mib\": 10000}]}");
  trace t;
  two_job_trace(&t);
  sim_options o;
  options(&o, "first-fit");
  sim_result r;
  run(&sc, &t, &o, &r);
  near(r.energy_gpu_kwh, 69000.0 / J_PER_KWH);
  near(r.energy_facility_kwh, 84000.0 / J_PER_KWH);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* A model without idle_w / busy_w (G1): its GPUs are left out and
 * counted; a job on them adds nothing. Node g (4 x G1) comes first, so
 * first-fit puts A there; B (whole GPU) too. Only the A100 node's idle
 * draw remains: 1 GPU x 60 W x 150 s = 9,000 J. */
START_TEST(unknown_watts_left_out) {
  sim_cluster sc;
  cluster_json(&sc, "{\"name\": \"e\", \"node_groups\": [{\"name\": \"g\", "
                    "\"count\": 1, \"gpu_model\": \"G1\", \"gpus_per_node\": "
                    "4, \"cpu_milli\": 10000, \"memory_mib\": 10000}, "
                    "{\"name\": \"a\", \"count\": 1, \"gpu_model\": "
                    "\"A100-80GB\", \"gpus_per_node\": 1, \"cpu_milli\": "
                    "10000, \"memory_mib\": 10000}]}");
  ck_assert_int_eq(sc.unpowered_gpus, 4);
  trace t;
  two_job_trace(&t);
  sim_options o;
  options(&o, "first-fit");
  sim_result r;
  run(&sc, &t, &o, &r);
  ck_assert_int_eq(r.js[0].node, 0);
  ck_assert_int_eq(r.js[1].node, 0);
  ck_assert_int_eq(r.energy_unknown_gpus, 4);
  near(r.energy_gpu_kwh, 9000.0 / J_PER_KWH);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* MIG by compute share: one dynamic MIG A100 (no reconfiguration delay);
 * a job of 100 milli maps to a 1g instance (1 of 7 compute slices) and
 * runs 70 s: idle 60 W x 70 s = 4,200 J, plus 340 W x 1/7 x 70 s =
 * 3,400 J: 7,600 J (not 340 x 0.142 x 70, the kind's milli). */
START_TEST(mig_by_compute_share) {
  sim_cluster sc;
  cluster_json(&sc, "{\"name\": \"m\", \"node_groups\": [{\"name\": \"n\", "
                    "\"count\": 1, \"gpu_model\": \"A100-80GB\", "
                    "\"gpus_per_node\": 1, \"cpu_milli\": 10000, "
                    "\"memory_mib\": 10000, \"gpu_mode\": \"mig-dynamic\", "
                    "\"mig_reconfig_s\": 0}]}");
  trace t;
  trace_init(&t);
  t.path = strdup("mig.csv");
  t.has_times = 1;
  tu_add_job(&t, "A", 0, 70, 1, 100, NULL);
  sim_options o;
  options(&o, "mig-first-fit");
  sim_result r;
  run(&sc, &t, &o, &r);
  ck_assert_int_eq(r.completed, 1);
  ck_assert_int_eq(r.makespan_us, 70 * TRACE_US_PER_S);
  near(r.energy_gpu_kwh, 7600.0 / J_PER_KWH);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * Migration and preemption move and stop running jobs outside the start /
 * completion hooks. On one model of non-MIG GPUs the GPU energy must equal
 * idle x GPUs x span + (busy - idle) x the allocated GPU-hours the engine
 * integrates itself. Two nodes of 2 GPUs; A, B, C, D one GPU each at 0
 * (best-fit packs: A, B on node 0, C, D on node 1); B and D end at 10 s,
 * leaving one GPU free on each node; E (2 GPUs) at 20 s can only start
 * once defrag moves A or C (or preempts one).
 */
START_TEST(moves_and_preemptions) {
  sim_cluster sc;
  cluster_json(&sc, "{\"name\": \"d\", \"node_groups\": [{\"name\": \"n\", "
                    "\"count\": 2, \"gpu_model\": \"H100\", "
                    "\"gpus_per_node\": 2, \"cpu_milli\": 10000, "
                    "\"memory_mib\": 100000}]}");
  trace t;
  trace_init(&t);
  t.path = strdup("d.csv");
  t.has_times = 1;
  tu_add_job(&t, "A", 0, 1000, 1, 1000, NULL);
  tu_add_job(&t, "B", 0, 10, 1, 1000, NULL);
  tu_add_job(&t, "C", 0, 1000, 1, 1000, NULL);
  tu_add_job(&t, "D", 0, 10, 1, 1000, NULL);
  tu_add_job(&t, "E", 20, 100, 2, 1000, NULL);
  for (int preempt = 0; preempt <= 1; preempt++) {
    sim_options o;
    options(&o, "defrag");
    o.preempt = preempt;
    o.migration_fixed_s = 3;
    sim_result r;
    run(&sc, &t, &o, &r);
    ck_assert_uint_eq(r.completed, 5);
    if (preempt)
      ck_assert_uint_gt(r.preemptions_total, 0);
    else
      ck_assert_uint_gt(r.migrations_total, 0);
    /* H100-SXM5-80GB: idle 105 W, busy 700 W. */
    double span_h = (double)r.makespan_us / 3.6e9;
    double want = (4 * 105.0 * span_h + (700.0 - 105.0) *
                                            r.allocated_gpu_hours) /
                  1000.0;
    ck_assert_msg(fabs(r.energy_gpu_kwh - want) <= 1e-9 * want,
                  "preempt %d: %.17g kWh, want %.17g", preempt,
                  r.energy_gpu_kwh, want);
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* ------------------------------------------------------------- inputs */

static void bad_cluster(const char *json, const char *want) {
  sim_cluster sc;
  char err[1024] = "";
  ck_assert_int_eq(
      sim_cluster_from_json(&sc, json, "spec.json", &cat, 0, err, sizeof err),
      -1);
  ck_assert_msg(strstr(err, want) != NULL, "'%s' lacks '%s'", err, want);
  ck_assert_msg(strncmp(err, "spec.json: ", 11) == 0, "%s", err);
}

START_TEST(spec_errors_name_file_and_key) {
  bad_cluster("{\"pue\": 0.9, \"node_groups\": [{\"count\": 1, "
              "\"gpus_per_node\": 0, \"cpu_milli\": 1, \"memory_mib\": 1}]}",
              "'pue' must be a number in 1..10");
  bad_cluster("{\"pue\": \"1.2\", \"node_groups\": [{\"count\": 1, "
              "\"gpus_per_node\": 0, \"cpu_milli\": 1, \"memory_mib\": 1}]}",
              "'pue'");
  bad_cluster("{\"node_overhead_w\": -1, \"node_groups\": [{\"count\": 1, "
              "\"gpus_per_node\": 0, \"cpu_milli\": 1, \"memory_mib\": 1}]}",
              "'node_overhead_w' must be a number in 0..");
  bad_cluster("{\"node_groups\": [{\"count\": 1, \"gpus_per_node\": 0, "
              "\"cpu_milli\": 1, \"memory_mib\": 1, \"node_overhead_w\": "
              "null}]}",
              "'node_groups[0].node_overhead_w' must be a number");
}
END_TEST

static void bad_catalog(const char *model, const char *want) {
  char text[2048], err[1024] = "";
  snprintf(text, sizeof text, "{\"models\": [%s]}", model);
  gpu_catalog c;
  memset(&c, 0, sizeof c);
  ck_assert_int_eq(catalog_parse(&c, text, "cat.json", err, sizeof err), -1);
  ck_assert_msg(strstr(err, want) != NULL, "'%s' lacks '%s'", err, want);
  ck_assert_msg(strncmp(err, "cat.json: models[0]: ", 21) == 0, "%s", err);
}

START_TEST(catalog_watts) {
  /* Every model of the built-in catalog with a TDP has both figures,
   * idle below busy, and a source; the Alibaba G1-G3 and H100 NVL have
   * none. */
  for (int i = 0; i < cat.n; i++) {
    const gpu_model_info *m = &cat.models[i];
    ck_assert_msg(m->has_power == (m->tdp_w > 0), "%s", m->name);
    ck_assert_msg(m->power_source[0] != 0, "%s: no power_source", m->name);
    if (m->has_power)
      ck_assert_msg(m->idle_w < m->busy_w, "%s", m->name);
  }
  const gpu_model_info *a = catalog_find(&cat, "A100-80GB");
  ck_assert(a->idle_w == 60 && a->busy_w == 400);
  ck_assert(!catalog_find(&cat, "G1")->has_power);
  /* Both or neither; idle <= busy; bounded; numbers. */
  const char *why = "idle_w and busy_w must both be numbers";
  bad_catalog("{\"name\": \"X\", \"idle_w\": 10}", why);
  bad_catalog("{\"name\": \"X\", \"busy_w\": 10, \"idle_w\": null}", why);
  bad_catalog("{\"name\": \"X\", \"idle_w\": 20, \"busy_w\": 10}", why);
  bad_catalog("{\"name\": \"X\", \"idle_w\": -1, \"busy_w\": 10}", why);
  bad_catalog("{\"name\": \"X\", \"idle_w\": 1, \"busy_w\": 1e9}", why);
  bad_catalog("{\"name\": \"X\", \"idle_w\": \"1\", \"busy_w\": 2}", why);
  gpu_catalog c;
  char err[512];
  ck_assert_int_eq(catalog_parse(&c,
                                 "{\"models\": [{\"name\": \"X\", \"idle_w\": "
                                 "12.5, \"busy_w\": 80, \"power_source\": "
                                 "\"s\"}, {\"name\": \"Y\"}]}",
                                 "cat.json", err, sizeof err),
                   0);
  ck_assert(c.models[0].has_power && c.models[0].idle_w == 12.5 &&
            c.models[0].busy_w == 80);
  ck_assert(!c.models[1].has_power);
  catalog_free(&c);
}
END_TEST

/* The model prices reach libsched for cheapest-work: the catalog's, a
 * group's price_per_gpu_hour (the first priced group of a model), unknown
 * for a model without one. */
START_TEST(model_prices_reach_libsched) {
  sim_cluster sc;
  cluster_json(&sc, "{\"name\": \"p\", \"node_groups\": [{\"name\": \"a\", "
                    "\"count\": 1, \"gpu_model\": \"A100-80GB\", "
                    "\"gpus_per_node\": 1, \"cpu_milli\": 1, \"memory_mib\": "
                    "1, \"price_per_gpu_hour\": 1.25}, {\"name\": \"h\", "
                    "\"count\": 1, \"gpu_model\": \"H100\", "
                    "\"gpus_per_node\": 1, \"cpu_milli\": 1, \"memory_mib\": "
                    "1}, {\"name\": \"g\", \"count\": 1, \"gpu_model\": "
                    "\"G1\", \"gpus_per_node\": 1, \"cpu_milli\": 1, "
                    "\"memory_mib\": 1}]}");
  int a = lsched_cluster_find_model(sc.c, "A100-SXM4-80GB");
  int h = lsched_cluster_find_model(sc.c, "H100-SXM5-80GB");
  int g = lsched_cluster_find_model(sc.c, "G1");
  ck_assert(lsched_cluster_model_price(sc.c, a) == 1.25);
  ck_assert(lsched_cluster_model_price(sc.c, h) ==
            catalog_find(&cat, "H100")->price_per_gpu_hour);
  ck_assert(isnan(lsched_cluster_model_price(sc.c, g)));
  sim_cluster_free(&sc);
}
END_TEST

/* The type-aware policies replay (speed 1 without a speed model: their
 * tie rules), on a mixed cluster under every queue discipline. */
START_TEST(typed_policies_replay) {
  sim_cluster sc;
  cluster_json(&sc, "{\"name\": \"x\", \"node_groups\": [{\"name\": \"h\", "
                    "\"count\": 1, \"gpu_model\": \"H100\", "
                    "\"gpus_per_node\": 2, \"cpu_milli\": 10000, "
                    "\"memory_mib\": 10000}, {\"name\": \"a\", \"count\": 1, "
                    "\"gpu_model\": \"A100-80GB\", \"gpus_per_node\": 2, "
                    "\"cpu_milli\": 10000, \"memory_mib\": 10000}]}");
  trace t;
  two_job_trace(&t);
  const sim_queue_kind qs[] = {SIM_QUEUE_FIFO, SIM_QUEUE_SKIP,
                               SIM_QUEUE_BACKFILL, SIM_QUEUE_PRIORITY};
  for (size_t q = 0; q < sizeof qs / sizeof qs[0]; q++) {
    sim_options o;
    options(&o, "cheapest-work");
    o.queue = qs[q];
    sim_result r;
    run(&sc, &t, &o, &r);
    /* A100 (5.12 per GPU-hour) is cheaper than H100 (6.88): both jobs
     * there. */
    ck_assert_int_eq(r.js[0].node, 1);
    ck_assert_int_eq(r.js[1].node, 1);
    sim_result_free(&r);
    options(&o, "fastest-fit");
    o.queue = qs[q];
    run(&sc, &t, &o, &r);
    /* Speed 1 everywhere: best-fit's choice, node h first (equal). */
    ck_assert_int_eq(r.js[0].node, 0);
    ck_assert_int_eq(r.js[1].node, 0);
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("energy");
  TCase *tc = tcase_create("energy");
  tcase_add_unchecked_fixture(tc, load_catalog, free_catalog);
  tcase_add_test(tc, two_jobs_hand_computed);
  tcase_add_test(tc, overhead_default_for_groups);
  tcase_add_test(tc, unknown_watts_left_out);
  tcase_add_test(tc, mig_by_compute_share);
  tcase_add_test(tc, moves_and_preemptions);
  tcase_add_test(tc, spec_errors_name_file_and_key);
  tcase_add_test(tc, catalog_watts);
  tcase_add_test(tc, model_prices_reach_libsched);
  tcase_add_test(tc, typed_policies_replay);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
