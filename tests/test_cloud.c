/*
 * Cloud sites and bursting (sim/engine/cloud.c; sim/README.md "Cloud
 * bursting"): hand-computed bursts (the wait, the start-up delay, the bill
 * to the cent), a spot job interrupted at known times (lost work, restarts,
 * the fall-back to on-demand), system vs on-prem utilization, the spec's
 * errors, no cloud figures without the part, and the queue indexed by
 * shape against the plain pass while jobs leave the middle of the queue.
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
#include <unistd.h>

static gpu_catalog cat;

static void load_catalog(void) {
  char err[512];
  ck_assert_msg(catalog_load_default(&cat, err, sizeof err) == 0, "%s", err);
}

static void free_catalog(void) { catalog_free(&cat); }

#define S (INT64_C(1000000))

/* One node of `gpus` V100s (exclusive, $3.06) and the cloud sites given
 * (a JSON array, or NULL). */
static void cluster(sim_cluster *sc, int nodes, int gpus, const char *cloud) {
  char json[2048], err[512];
  snprintf(json, sizeof json,
           "{\"name\": \"t\", \"node_groups\": [{\"name\": \"n\", \"count\": "
           "%d, \"gpu_model\": \"V100M16\", \"gpus_per_node\": %d, "
           "\"cpu_milli\": 64000, \"memory_mib\": 640000, \"gpu_mode\": "
           "\"exclusive\"}]%s%s}",
           nodes, gpus, cloud ? ", \"cloud\": " : "", cloud ? cloud : "");
  ck_assert_msg(sim_cluster_from_json(sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
}

static void opts(sim_options *o) {
  memset(o, 0, sizeof *o);
  o->policy = "first-fit";
  o->queue = SIM_QUEUE_FIFO;
  o->seed = 1;
  o->unknown_duration_us = -1;
  o->spot_rate = -1;
}

static void run(sim_cluster *sc, const trace *t, const sim_options *o,
                sim_result *r) {
  char err[512] = "";
  ck_assert_msg(sim_run(sc, &cat, t, o, r, err, sizeof err) == 0, "%s", err);
}

static void new_trace(trace *t) {
  trace_init(t);
  t->path = strdup("cloud.csv");
  t->has_times = 1;
}

/*
 * One V100 on-prem, busy with job a (0..3600 s); job b (1 GPU, 1800 s)
 * arrives at 10 s. constant:600: b leaves at 610 s for site aws (start-up
 * 120 s, not billed; transfer 60 s, billed): it runs 790..2590 s, billed
 * 730..2590 s = 1860 s = 0.516667 GPU-h x $3.06 = $1.581. System
 * utilization: (1 on-prem GPU-h + 0.516667) / (1 GPU x 1 h) = 1.516667;
 * on-prem (gpu_alloc_ratio_mean) 1.
 */
START_TEST(constant_wait_hand) {
  sim_cluster sc;
  cluster(&sc, 1, 1,
          "[{\"name\": \"aws\", \"gpu_model\": \"V100M16\", "
          "\"on_demand_per_gpu_hour\": 3.06, \"startup_s\": 120, "
          "\"transfer_s\": 60}]");
  trace t;
  new_trace(&t);
  tu_add_job(&t, "a", 0, 3600, 1, 1000, NULL);
  tu_add_job(&t, "b", 10, 1800, 1, 1000, NULL);
  sim_options o;
  opts(&o);
  o.burst = SIM_BURST_CONSTANT;
  o.burst_param = 600;
  sim_result r;
  run(&sc, &t, &o, &r);
  ck_assert_int_eq(r.js[1].start_us, 790 * S);
  ck_assert_int_eq(r.js[1].finish_us, 2590 * S);
  ck_assert_int_eq(r.js[1].node, -1);
  ck_assert_int_eq(r.js[0].start_us, 0);
  ck_assert_ptr_nonnull(r.cloud);
  ck_assert_uint_eq(r.cloud->jobs, 1);
  ck_assert_double_eq_tol(r.cloud->cost_on_demand, 1.581, 1e-9);
  ck_assert_double_eq_tol(r.cloud->gpu_hours, 1860.0 / 3600, 1e-12);
  ck_assert(r.cloud->cost_spot == 0);
  ck_assert_double_eq_tol(r.gpu_alloc_ratio_mean, 1, 1e-12);
  ck_assert_double_eq_tol(r.cloud->system_utilization_mean,
                          1 + 1860.0 / 3600, 1e-12);
  /* queue time counts to the cloud start: 780 s */
  ck_assert_double_eq_tol(r.queue_time_s.max, 780, 1e-9);
  sim_result_free(&r);

  /* A burst deadline after the on-prem start: b never leaves (constant
   * 4000 s > a's end at 3600 s). */
  o.burst_param = 4000;
  run(&sc, &t, &o, &r);
  ck_assert_int_eq(r.js[1].start_us, 3600 * S);
  ck_assert_int_ge(r.js[1].node, 0);
  ck_assert_uint_eq(r.cloud->jobs, 0);
  ck_assert_double_eq_tol(r.cloud->system_utilization_mean, 1, 1e-12);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * Waiting policies on the case above with b on 1 GPU for 1800 s:
 * compute-wait:0.2 waits 0.2 x 0.5 GPU-h = 0.1 h = 360 s (leaves at 370
 * s); star-wait:0.05 waits 0.05 x 1 GPU h = 180 s (leaves at 190 s);
 * no-wait leaves at its arrival (10 s). Start = leave + 180 s.
 */
START_TEST(waiting_policies_hand) {
  sim_cluster sc;
  cluster(&sc, 1, 1,
          "[{\"name\": \"aws\", \"gpu_model\": \"V100M16\", "
          "\"startup_s\": 120, \"transfer_s\": 60}]");
  trace t;
  new_trace(&t);
  tu_add_job(&t, "a", 0, 3600, 1, 1000, NULL);
  tu_add_job(&t, "b", 10, 1800, 1, 1000, NULL);
  static const struct {
    int kind;
    double k;
    int64_t start_s;
  } cases[] = {{SIM_BURST_COMPUTE_WAIT, 0.2, 370 + 180},
               {SIM_BURST_STAR_WAIT, 0.05, 190 + 180},
               {SIM_BURST_NO_WAIT, 0, 10 + 180}};
  for (int i = 0; i < 3; i++) {
    sim_options o;
    opts(&o);
    o.burst = cases[i].kind;
    o.burst_param = cases[i].k;
    sim_result r;
    run(&sc, &t, &o, &r);
    ck_assert_int_eq(r.js[1].start_us, cases[i].start_s * S);
    ck_assert_int_eq(r.js[1].finish_us, (cases[i].start_s + 1800) * S);
    /* the catalog's on-demand price of V100M16 ($3.06): 1860 s billed */
    ck_assert_double_eq_tol(r.cloud->cost_on_demand, 1.581, 1e-9);
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * Spot with an availability trace (1 instance from 0, none from 3500 s, 1
 * from 4000 s, none from 6000 s), checkpoints every 1000 s, restart
 * overhead 600 s, deadline slack 1.5: b (7200 s, 1 GPU, no-wait, no
 * start-up) has deadline 10800 s. At 0: 0 + 7200 + 600 + 1000 <= 10800:
 * spot. Interrupted at 3500 s: 3000 s kept, 500 s lost; no spot until
 * 4000 s, where 4000 + 600 + 4200 + 600 + 1000 = 10400 <= 10800: it waits
 * (unbilled) and restarts on spot, working from 4600 s. Interrupted at
 * 6000 s: 1400 s done, 1000 kept, 400 lost, 3200 s left; 6000 + 600 +
 * 3200 + 600 + 1000 = 11400 > 10800: on-demand, ending at 6000 + 600 +
 * 3200 = 9800 s (no miss). Spot billed 3500 + 2000 s x $0.9731 =
 * $1.486681; on-demand 3800 s x $3.06 = $3.23; lost 900 s = 0.25 GPU-h.
 */
START_TEST(spot_trace_fallback_hand) {
  char path[] = "/tmp/test_cloud_spot_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *f = fdopen(fd, "w");
  fputs("time_s,instances_available\n0,1\n3500,0\n4000,1\n6000,0\n", f);
  fclose(f);
  sim_cluster sc;
  cluster(&sc, 1, 1,
          "[{\"name\": \"aws\", \"gpu_model\": \"V100M16\", "
          "\"on_demand_per_gpu_hour\": 3.06, \"spot_per_gpu_hour\": 0.9731}]");
  trace t;
  new_trace(&t);
  tu_add_job(&t, "a", 0, 100000, 1, 1000, NULL);
  tu_add_job(&t, "b", 0, 7200, 1, 1000, NULL);
  sim_options o;
  opts(&o);
  o.burst = SIM_BURST_NO_WAIT;
  o.spot_trace = path;
  o.checkpoint_s = 1000;
  o.restart_overhead_s = 600;
  o.deadline_slack = 1.5;
  sim_result r;
  run(&sc, &t, &o, &r);
  ck_assert_int_eq(r.js[1].start_us, 0);
  ck_assert_int_eq(r.js[1].finish_us, 9800 * S);
  ck_assert_uint_eq(r.cloud->interruptions, 2);
  ck_assert_double_eq_tol(r.cloud->lost_gpu_hours, 0.25, 1e-12);
  ck_assert_double_eq_tol(r.cloud->cost_spot, 5500 * 0.9731 / 3600, 1e-9);
  ck_assert_double_eq_tol(r.cloud->cost_on_demand, 3.23, 1e-9);
  ck_assert_double_eq_tol(r.cloud->gpu_hours, 9300.0 / 3600, 1e-12);
  ck_assert_uint_eq(r.cloud->deadline_misses, 0);
  sim_result_free(&r);

  /* Slack 1.2 (deadline 8640 s): 0 + 7200 + 1600 > 8640 at once: all
   * on-demand, 0..7200 s, $6.12. */
  o.deadline_slack = 1.2;
  run(&sc, &t, &o, &r);
  ck_assert_int_eq(r.js[1].finish_us, 7200 * S);
  ck_assert_uint_eq(r.cloud->interruptions, 0);
  ck_assert_double_eq_tol(r.cloud->cost_on_demand, 6.12, 1e-9);
  ck_assert(r.cloud->cost_spot == 0);
  sim_result_free(&r);

  /* No deadline: spot throughout. Lost 500 + 400 s; after 6000 s no spot
   * ever again: it waits for an instance that never comes, so it falls
   * back to on-demand (tr_next finds none): 6000 + 600 + 3200 = 9800 s. */
  o.deadline_slack = 0;
  run(&sc, &t, &o, &r);
  ck_assert_int_eq(r.js[1].finish_us, 9800 * S);
  ck_assert_uint_eq(r.cloud->interruptions, 2);
  sim_result_free(&r);
  unlink(path);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* Poisson interruptions: rate 0 never interrupts (all spot, $0.9731 x
 * 2 h); a rate draws the same interruptions whatever else runs (seeded by
 * --seed and the job's trace position), and more at a higher rate. */
START_TEST(spot_rate_seeded) {
  sim_cluster sc;
  cluster(&sc, 1, 1,
          "[{\"name\": \"aws\", \"gpu_model\": \"V100M16\", "
          "\"on_demand_per_gpu_hour\": 3.06, \"spot_per_gpu_hour\": 0.9731}]");
  trace t;
  new_trace(&t);
  tu_add_job(&t, "a", 0, 100000, 1, 1000, NULL);
  tu_add_job(&t, "b", 0, 7200, 1, 1000, NULL);
  sim_options o;
  opts(&o);
  o.burst = SIM_BURST_NO_WAIT;
  o.spot_rate = 0;
  sim_result r, r2;
  run(&sc, &t, &o, &r);
  ck_assert_uint_eq(r.cloud->interruptions, 0);
  ck_assert_double_eq_tol(r.cloud->cost_spot, 2 * 0.9731, 1e-9);
  sim_result_free(&r);
  o.spot_rate = 2;
  o.checkpoint_s = 300;
  run(&sc, &t, &o, &r);
  run(&sc, &t, &o, &r2);
  ck_assert_uint_gt(r.cloud->interruptions, 0);
  ck_assert_uint_eq(r.cloud->interruptions, r2.cloud->interruptions);
  ck_assert_int_eq(r.js[1].finish_us, r2.js[1].finish_us);
  /* lost work < one checkpoint interval per interruption */
  ck_assert(r.cloud->lost_gpu_hours <
            r.cloud->interruptions * 300.0 / 3600 + 1e-12);
  ck_assert_int_gt(r.js[1].finish_us, 7200 * S);
  sim_result_free(&r2);
  /* Another job ahead in the trace does not change b's draws. */
  trace t2;
  new_trace(&t2);
  tu_add_job(&t2, "a", 0, 100000, 1, 1000, NULL);
  tu_add_job(&t2, "b", 0, 7200, 1, 1000, NULL);
  tu_add_job(&t2, "c", 5, 50, 1, 1000, NULL);
  run(&sc, &t2, &o, &r2);
  ck_assert_int_eq(r.js[1].finish_us, r2.js[1].finish_us);
  ck_assert_uint_gt(r2.cloud->jobs, 1);
  sim_result_free(&r);
  sim_result_free(&r2);
  trace_free(&t2);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* A site with room for 1 GPU: the second overdue job waits on-prem until
 * the first cloud job ends, then leaves. A job whose trace names only the
 * cluster's model never goes to a site of another model: it waits for the
 * on-prem GPU. */
START_TEST(capacity_and_models) {
  sim_cluster sc;
  cluster(&sc, 1, 1,
          "[{\"name\": \"small\", \"gpu_model\": \"V100M16\", "
          "\"capacity_gpus\": 1}]");
  trace t;
  new_trace(&t);
  tu_add_job(&t, "a", 0, 10000, 1, 1000, NULL);
  tu_add_job(&t, "b", 0, 1000, 1, 1000, NULL);
  tu_add_job(&t, "c", 0, 1000, 1, 1000, NULL);
  sim_options o;
  opts(&o);
  o.queue = SIM_QUEUE_SKIP;
  o.burst = SIM_BURST_NO_WAIT;
  sim_result r;
  run(&sc, &t, &o, &r);
  ck_assert_int_eq(r.js[1].start_us, 0);
  ck_assert_int_eq(r.js[1].node, -1);
  ck_assert_int_eq(r.js[2].start_us, 1000 * S);
  ck_assert_int_eq(r.js[2].node, -1);
  ck_assert_uint_eq(r.cloud->jobs, 2);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);

  cluster(&sc, 1, 1,
          "[{\"name\": \"a100\", \"gpu_model\": \"A100-80GB\", "
          "\"on_demand_per_gpu_hour\": 4}]");
  new_trace(&t);
  tu_add_job(&t, "a", 0, 10000, 1, 1000, NULL);
  tu_add_job(&t, "b", 0, 1000, 1, 1000, "V100M16");
  tu_add_job(&t, "c", 0, 1000, 1, 1000, NULL);
  run(&sc, &t, &o, &r);
  ck_assert_int_eq(r.js[1].start_us, 10000 * S);
  ck_assert_int_ge(r.js[1].node, 0);
  ck_assert_int_eq(r.js[2].node, -1);
  ck_assert_uint_eq(r.cloud->jobs, 1);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* --queue-cap 2, burst never: a holds the one GPU (0..1000 s); b, c, d,
 * e arrive at 10 s: after the pass d and e (the newest beyond 2) leave at
 * once (start 10 s, no delays), b and c wait for the GPU (1000, 1100 s).
 * Under skip and with the queue index the same. */
START_TEST(queue_cap_hand) {
  sim_cluster sc;
  cluster(&sc, 1, 1,
          "[{\"name\": \"aws\", \"gpu_model\": \"V100M16\"}]");
  trace t;
  new_trace(&t);
  tu_add_job(&t, "a", 0, 1000, 1, 1000, NULL);
  tu_add_job(&t, "b", 10, 100, 1, 1000, NULL);
  tu_add_job(&t, "c", 10, 100, 1, 1000, NULL);
  tu_add_job(&t, "d", 10, 100, 1, 1000, NULL);
  tu_add_job(&t, "e", 10, 100, 1, 1000, NULL);
  for (int q = 0; q < 2; q++) {
    sim_options o;
    opts(&o);
    o.queue = q ? SIM_QUEUE_SKIP : SIM_QUEUE_FIFO;
    o.queue_cap = 2;
    sim_result r;
    run(&sc, &t, &o, &r);
    ck_assert_int_eq(r.js[1].start_us, 1000 * S);
    ck_assert_int_eq(r.js[2].start_us, 1100 * S);
    ck_assert_int_eq(r.js[3].node, -1);
    ck_assert_int_eq(r.js[4].node, -1);
    ck_assert_int_eq(r.js[3].start_us, 10 * S);
    ck_assert_int_eq(r.js[4].finish_us, 110 * S);
    ck_assert_uint_eq(r.cloud->jobs, 2);
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* No cloud sites and burst never: no part, no cloud figures. --burst
 * without sites is an input error. */
START_TEST(no_cloud_no_part) {
  sim_cluster sc;
  cluster(&sc, 1, 1, NULL);
  trace t;
  new_trace(&t);
  tu_add_job(&t, "a", 0, 10, 1, 1000, NULL);
  sim_options o;
  opts(&o);
  sim_result r;
  run(&sc, &t, &o, &r);
  ck_assert_ptr_null(r.cloud);
  sim_result_free(&r);
  o.burst = SIM_BURST_NO_WAIT;
  char err[512] = "";
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "--burst needs a cluster spec with cloud sites"),
                "%s", err);
  o.burst = SIM_BURST_NEVER;
  o.queue_cap = 3;
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "--queue-cap needs a cluster spec"), "%s", err);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* Spec errors name the file and the key. */
START_TEST(spec_errors) {
  static const struct {
    const char *cloud, *msg;
  } cases[] = {
      {"{}", "'cloud' must be an array"},
      {"[{\"name\": \"x\"}]", "cloud[0].gpu_model: required"},
      {"[{\"name\": \"x\", \"gpu_model\": \"nope\"}]",
       "cloud[0].gpu_model: unknown GPU model 'nope'"},
      {"[{\"gpu_model\": \"V100M16\"}]", "cloud[0].name: required"},
      {"[{\"name\": \"x\", \"gpu_model\": \"V100M16\", \"price\": 1}]",
       "cloud[0]: unknown key 'price'"},
      {"[{\"name\": \"x\", \"gpu_model\": \"V100M16\", \"startup_s\": -1}]",
       "'cloud[0].startup_s' must be a number"},
      {"[{\"name\": \"x\", \"gpu_model\": \"V100M16\", \"capacity_gpus\": "
       "1.5}]",
       "cloud[0].capacity_gpus: must be a whole number"},
      {"[{\"name\": \"x\", \"gpu_model\": \"V100M16\"}, {\"name\": \"x\", "
       "\"gpu_model\": \"V100M16\"}]",
       "cloud[1].name: 'x' is also cloud[0]'s"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char json[1024], err[512] = "";
    snprintf(json, sizeof json,
             "{\"name\": \"t\", \"node_groups\": [{\"name\": \"n\", "
             "\"count\": 1, \"gpu_model\": \"V100M16\", \"gpus_per_node\": "
             "1, \"cpu_milli\": 1000, \"memory_mib\": 1000}], \"cloud\": %s}",
             cases[i].cloud);
    sim_cluster sc;
    ck_assert_int_eq(
        sim_cluster_from_json(&sc, json, "spec.json", &cat, 0, err, sizeof err),
        -1);
    ck_assert_msg(strstr(err, "spec.json: ") == err &&
                      strstr(err, cases[i].msg),
                  "case %zu: %s", i, err);
  }
}
END_TEST

/* ---- the queue index against the plain pass, with bursts ---- */

static uint64_t next(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

START_TEST(indexed_equals_plain_burst) {
  sim_cluster sc;
  char json[1024], err[512];
  snprintf(json, sizeof json,
           "{\"name\": \"t\", \"node_groups\": [{\"name\": \"n\", \"count\": "
           "2, \"gpu_model\": \"A100-80GB\", \"gpus_per_node\": 8, "
           "\"cpu_milli\": 64000, \"memory_mib\": 640000, \"gpu_mode\": "
           "\"shared\", \"price_per_gpu_hour\": 1}], \"cloud\": [{\"name\": "
           "\"c\", \"gpu_model\": \"A100-80GB\", \"capacity_gpus\": 6, "
           "\"startup_s\": 30}]}");
  ck_assert_msg(sim_cluster_from_json(&sc, json, "t", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
  trace t;
  new_trace(&t);
  uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)(_i + 1);
  int64_t submit = 0;
  static const int gpus[] = {1, 1, 2, 1, 4, 8};
  static const int milli[] = {1000, 500, 1000, 250, 1000, 1000};
  for (int k = 0; k < 400; k++) {
    uint64_t r = next(&x);
    if (r % 3 == 0)
      submit += (int64_t)((r >> 8) % 30);
    int s = (int)((r >> 16) % 6);
    char name[16];
    snprintf(name, sizeof name, "j%d", k);
    tu_add_job(&t, name, submit, 20 + (int64_t)((r >> 32) % 400), gpus[s],
               milli[s], NULL);
  }
  sim_options o;
  opts(&o);
  o.policy = _i % 2 ? "best-fit" : "first-fit";
  o.queue = _i / 2 % 2 ? SIM_QUEUE_BACKFILL : SIM_QUEUE_SKIP;
  o.burst = SIM_BURST_CONSTANT;
  o.burst_param = 200;
  o.queue_cap = _i >= 4 ? 12 : 0; /* with the queue cap too */
  o.check_reservations = 1;
  sim_result a, b;
  o.queue_plain = 0;
  run(&sc, &t, &o, &a);
  o.queue_plain = 1;
  run(&sc, &t, &o, &b);
  size_t cloud = 0, waited = 0;
  for (size_t j = 0; j < t.n; j++) {
    ck_assert_msg(a.js[j].start_us == b.js[j].start_us &&
                      a.js[j].finish_us == b.js[j].finish_us &&
                      a.js[j].node == b.js[j].node &&
                      a.js[j].status == b.js[j].status,
                  "job %zu differs", j);
    cloud += a.js[j].node == -1;
    waited += a.js[j].node >= 0 && a.js[j].start_us > t.jobs[j].submit_us;
  }
  ck_assert_uint_eq(cloud, a.cloud->jobs);
  ck_assert_uint_gt(cloud, 10);
  ck_assert_uint_gt(waited, 10);
  ck_assert(a.cloud->cost_on_demand == b.cloud->cost_on_demand);
  sim_result_free(&a);
  sim_result_free(&b);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("cloud");
  TCase *tc = tcase_create("cloud");
  tcase_set_timeout(tc, 600);
  tcase_add_checked_fixture(tc, load_catalog, free_catalog);
  tcase_add_test(tc, constant_wait_hand);
  tcase_add_test(tc, waiting_policies_hand);
  tcase_add_test(tc, spot_trace_fallback_hand);
  tcase_add_test(tc, spot_rate_seeded);
  tcase_add_test(tc, capacity_and_models);
  tcase_add_test(tc, queue_cap_hand);
  tcase_add_test(tc, no_cloud_no_part);
  tcase_add_test(tc, spec_errors);
  tcase_add_loop_test(tc, indexed_equals_plain_burst, 0, 8);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
