/*
 * Work and speed (sim/engine/speed.c, sim/config/speed_table.c): work on a
 * faster type, MIG slice speed, a co-runner arriving and leaving mid-job on
 * a shared GPU (exact re-timing to the microsecond), the table loaders
 * (Gavel's file unchanged, malformed tables named by file and key), and
 * the property that the work done equals the jobs' work. Every expected
 * value is worked out by hand in the comment above its test.
 */
#include "catalog.h"
#include "builtin_clusters.h"
#include "cluster_spec.h"
#include "engine.h"
#include "speed_table.h"
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

/* A cluster of one node group: count nodes of g GPUs of model, mode. */
static void cluster(sim_cluster *sc, const char *groups) {
  char json[2048], err[512];
  snprintf(json, sizeof json, "{\"name\": \"t\", \"node_groups\": [%s]}",
           groups);
  ck_assert_msg(sim_cluster_from_json(sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
}

static void group(char *out, size_t n, const char *name, const char *model,
                  int gpus, const char *mode) {
  snprintf(out, n,
           "{\"name\": \"%s\", \"count\": 1, \"gpu_model\": \"%s\", "
           "\"gpus_per_node\": %d, \"cpu_milli\": 640000, \"memory_mib\": "
           "640000, \"price_per_gpu_hour\": 1, \"gpu_mode\": \"%s\"}",
           name, model, gpus, mode);
}

static int run(sim_cluster *sc, const trace *t, sim_options *o,
               sim_result *r, char *err, size_t errlen) {
  if (!o->policy)
    o->policy = "first-fit";
  o->queue = SIM_QUEUE_SKIP;
  o->seed = 1;
  o->unknown_duration_us = -1;
  o->speed = SIM_SPEED_CATALOG;
  err[0] = 0;
  return sim_run(sc, &cat, t, o, r, err, errlen);
}

static sim_options opts(void) {
  sim_options o;
  memset(&o, 0, sizeof o);
  return o;
}

/* A table of round speeds: V100 1, A100-80GB 2, H100 4; interference f
 * per co-runner. */
static const char *round_table(double f) {
  static char path[512];
  char text[1024];
  snprintf(text, sizeof text,
           "{\"reference\": \"V100M16\", \"classes\": {\"default\": "
           "{\"V100M16\": 1, \"A100-SXM4-80GB\": 2, \"H100-SXM5-80GB\": 4}},"
           " \"interference\": {\"default\": %g}}",
           f);
  put_text(path, sizeof path, "round.json", text);
  return path;
}

/*
 * Work on a faster type. Table: V100 1, A100 2, H100 4. A job of 1,000 s
 * measured on an A100 has work 2,000 reference-s: on the H100 node it runs
 * 500 s, on the V100 node 2,000 s. Job a (1 GPU) goes to the H100 node
 * (first in the spec), job b to the V100 node (its spec). work_gpu_hours
 * = (2,000 + 2,000) / 3,600.
 */
START_TEST(test_faster_type) {
  sim_cluster sc;
  char g1[512], g2[512], groups[1100], err[512];
  group(g1, sizeof g1, "h", "H100-SXM5-80GB", 1, "exclusive");
  group(g2, sizeof g2, "v", "V100M16", 1, "exclusive");
  snprintf(groups, sizeof groups, "%s, %s", g1, g2);
  cluster(&sc, groups);
  trace t;
  trace_init(&t);
  tu_add_job(&t, "a", 0, 1000, 1, 1000, "H100-SXM5-80GB");
  tu_add_job(&t, "b", 0, 1000, 1, 1000, "V100M16");
  t.measured_on = "A100-SXM4-80GB";
  sim_options o = opts();
  o.speed_table = round_table(1);
  sim_result r;
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.js[0].finish_us - r.js[0].start_us, S(500));
  ck_assert_int_eq(r.js[1].finish_us - r.js[1].start_us, S(2000));
  ck_assert_double_eq_tol(r.work_gpu_hours, 4000.0 / 3600.0, 1e-12);
  ck_assert_double_eq_tol(r.cost_per_work_hour,
                          r.cost_total / r.work_gpu_hours, 1e-12);
  sim_result_free(&r);
  /* --speed none: the durations. */
  o.speed = SIM_SPEED_NONE;
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err), 0);
  ck_assert_int_eq(r.js[0].finish_us - r.js[0].start_us, S(1000));
  ck_assert_int_eq(r.js[1].finish_us - r.js[1].start_us, S(1000));
  ck_assert_double_eq_tol(r.work_gpu_hours, 2000.0 / 3600.0, 1e-12);
  sim_result_free(&r);
  /* --measured-on overrides the trace: measured on the V100, work 1,000
   * on the H100 node: 250 s. */
  o.measured_on = "V100M16";
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.js[0].finish_us - r.js[0].start_us, S(250));
  ck_assert_int_eq(r.js[1].finish_us - r.js[1].start_us, S(1000));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * The built-in table: measured on an A100-80GB (2.835), run on an H100
 * SXM (4.727): 1,000 s -> round(1e9 x 2.835 / 4.727) us = 599,746,139 us
 * (599,746,139.2). A job whose GPU spec names one model (generic traces,
 * measured_by_spec) counts as measured there: spec H100 on the H100 node
 * runs its duration.
 */
START_TEST(test_builtin_table) {
  sim_cluster sc;
  char g[512], err[512];
  group(g, sizeof g, "h", "H100-SXM5-80GB", 2, "exclusive");
  cluster(&sc, g);
  trace t;
  trace_init(&t);
  tu_add_job(&t, "a", 0, 1000, 1, 1000, NULL);
  tu_add_job(&t, "b", 0, 1000, 1, 1000, "H100-SXM5-80GB");
  t.measured_on = "A100-SXM4-80GB";
  t.measured_by_spec = 1;
  sim_options o = opts();
  sim_result r;
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.js[0].finish_us - r.js[0].start_us, 599746139);
  ck_assert_int_eq(r.js[1].finish_us - r.js[1].start_us, S(1000));
  /* work: 1,000 x 2.835 + 1,000 x 4.727 reference-s. */
  ck_assert_double_eq_tol(r.work_gpu_hours, (2835.0 + 4727.0) / 3600.0,
                          1e-9);
  sim_result_free(&r);
  /* An unknown --measured-on is an input error naming it. */
  o.measured_on = "Z999";
  ck_assert_int_eq(run(&sc, &t, &o, &r, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "--measured-on") && strstr(err, "Z999"), "%s",
                err);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * MIG slices. One A100 (static layout 4g.40gb@0 + 3g.40gb@4), durations
 * "same" (speed 1 on any type). Job w needs the whole GPU (gpu_milli 1000)
 * and is given a 3g.40gb instance by --mig-requests: it runs at 3/7 of
 * the GPU, 300 s -> 700 s. Job s needs 400 milli and gets the 4g.40gb
 * instance (compute map: 4/7 >= 0.4): full speed, 300 s.
 */
START_TEST(test_mig_slice) {
  sim_cluster sc;
  char err[512];
  cluster(&sc, "{\"name\": \"m\", \"count\": 1, \"gpu_model\": "
               "\"A100-SXM4-80GB\", \"gpus_per_node\": 1, \"cpu_milli\": "
               "64000, \"memory_mib\": 524288, \"price_per_gpu_hour\": 1, "
               "\"gpu_mode\": \"mig-static\", \"mig_layout\": "
               "[\"4g.40gb@0\", \"3g.40gb@4\"]}");
  trace t;
  trace_init(&t);
  tu_add_job(&t, "w", 0, 300, 1, 1000, NULL);
  tu_add_job(&t, "s", 0, 300, 1, 400, NULL);
  char req[512];
  put_text(req, sizeof req, "req.csv",
           "job,profile,gpu_memory_gib,compute_fraction\n"
           "w,3g.40gb,,\ns,4g.40gb,,\n");
  sim_options o = opts();
  o.policy = "mig-first-fit";
  o.mig_requests = req;
  sim_result r;
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.js[0].status, JOB_DONE);
  ck_assert_int_eq(r.js[0].finish_us - r.js[0].start_us, S(700));
  ck_assert_int_eq(r.js[1].finish_us - r.js[1].start_us, S(300));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * Sharing interference, one shared GPU, durations "same", interference
 * 0.5 per co-runner. a: 500 milli, 100 s, at 0; b: 500 milli, 100 s, at
 * 40. a runs alone until 40 (40 s done, 60 left); from 40 both run at 0.5:
 * a's 60 s take 120 s, it ends at 160; b would end at 40 + 200 = 240.
 * When a leaves at 160 b has done 60 (120 s at 0.5), its 40 left run at
 * full speed: b ends at 200. An exclusive node of the same jobs has no
 * interference (each takes a whole GPU: 2 GPUs, both run 100 s).
 */
START_TEST(test_interference) {
  sim_cluster sc;
  char g[512], err[512];
  group(g, sizeof g, "s", "A100-SXM4-80GB", 1, "shared");
  cluster(&sc, g);
  trace t;
  trace_init(&t);
  tu_add_job(&t, "a", 0, 100, 1, 500, NULL);
  tu_add_job(&t, "b", 40, 100, 1, 500, NULL);
  sim_options o = opts();
  o.speed_table = round_table(0.5);
  sim_result r;
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.js[0].start_us, 0);
  ck_assert_int_eq(r.js[0].finish_us, S(160));
  ck_assert_int_eq(r.js[1].start_us, S(40));
  ck_assert_int_eq(r.js[1].finish_us, S(200));
  ck_assert_double_eq_tol(r.work_done_ref_s, 200, 1e-6);
  ck_assert_double_eq_tol(r.work_ref_s, 200, 1e-9);
  sim_result_free(&r);
  sim_cluster_free(&sc);
  group(g, sizeof g, "x", "A100-SXM4-80GB", 2, "exclusive");
  cluster(&sc, g);
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.js[0].finish_us, S(100));
  ck_assert_int_eq(r.js[1].finish_us, S(140));
  sim_result_free(&r);
  sim_cluster_free(&sc);
  trace_free(&t);
}
END_TEST

/*
 * The rounding rule with the built-in interference (0.973): the same two
 * jobs. b starts at 40: a's 60,000,000 us left become round(6e7 / 0.973)
 * = 61,664,954 (61,664,953.75): a ends at 101,664,954; b runs
 * round(1e8 / 0.973) = 102,774,923 (102,774,922.9) and would end at
 * 142,774,923. a leaves at 101,664,954: b has 41,109,969 us left at
 * 0.973, round(41,109,969 x 0.973) = 40,000,000 (39,999,999.8) at full
 * speed: b ends at 141,664,954.
 */
START_TEST(test_rounding) {
  sim_cluster sc;
  char g[512], err[512];
  group(g, sizeof g, "s", "A100-SXM4-80GB", 1, "shared");
  cluster(&sc, g);
  trace t;
  trace_init(&t);
  tu_add_job(&t, "a", 0, 100, 1, 500, NULL);
  tu_add_job(&t, "b", 40, 100, 1, 500, NULL);
  sim_options o = opts();
  sim_result r;
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.js[0].finish_us, 101664954);
  ck_assert_int_eq(r.js[1].finish_us, 141664954);
  sim_result_free(&r);
  sim_cluster_free(&sc);
  trace_free(&t);
}
END_TEST

/*
 * Multi-GPU scale entries. Table (V100 only): 1 GPU 1, 2 GPUs 2, 8 GPUs 6
 * consolidated and 3 spread over nodes. Two nodes of 4 V100s; durations
 * measured on a V100 (consolidated). g8 (8 GPUs, 600 s at 0): work 600 x
 * 6 = 3,600; it spans both nodes, so it runs at the unconsolidated 3:
 * 1,200 s. g4 (4 GPUs, 600 s, at 1,200): no 4-GPU entry, so the 2-GPU one
 * x 4/2 = 4 both as measured and on one node: 600 s, ends at 1,800.
 */
START_TEST(test_scale_entries) {
  sim_cluster sc;
  char err[512], path[512];
  cluster(&sc, "{\"name\": \"v\", \"count\": 2, \"gpu_model\": "
               "\"V100M16\", \"gpus_per_node\": 4, \"cpu_milli\": 64000, "
               "\"memory_mib\": 524288, \"price_per_gpu_hour\": 1, "
               "\"gpu_mode\": \"exclusive\"}");
  put_text(path, sizeof path, "scale.json",
           "{\"classes\": {\"default\": {\"V100M16\": {\"1\": 1, \"2\": 2, "
           "\"8\": 6, \"unconsolidated\": {\"8\": 3}}}}}");
  trace t;
  trace_init(&t);
  tu_add_job(&t, "g8", 0, 600, 8, 1000, NULL);
  tu_add_job(&t, "g4", 1200, 600, 4, 1000, NULL);
  t.measured_on = "V100M16";
  sim_options o = opts();
  o.speed_table = path;
  sim_result r;
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.js[0].finish_us, S(1200));
  ck_assert_int_eq(r.js[1].start_us, S(1200));
  ck_assert_int_eq(r.js[1].finish_us, S(1800));
  /* work: (3,600 + 600 x 4) reference GPU-seconds. */
  ck_assert_double_eq_tol(r.work_gpu_hours, 6000.0 / 3600.0, 1e-12);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * Job classes from the trace. Table: class default (V100 1, A100 2) and
 * class vgg19 (V100 1, A100 4); durations measured on a V100, 1,000 s.
 * a (class vgg19) runs 250 s on the A100; b (class resnet, not in the
 * table) and c (no class) take the default class: 500 s.
 */
START_TEST(test_trace_classes) {
  sim_cluster sc;
  char g[512], err[512], path[512];
  group(g, sizeof g, "a", "A100-SXM4-80GB", 3, "exclusive");
  cluster(&sc, g);
  put_text(path, sizeof path, "cls.json",
           "{\"classes\": {\"default\": {\"V100M16\": 1, \"A100\": 2}, "
           "\"vgg19\": {\"V100M16\": 1, \"A100\": 4}}}");
  trace t;
  trace_init(&t);
  tu_add_job(&t, "a", 0, 1000, 1, 1000, NULL);
  t.jobs[0].jclass = (uint16_t)trace_intern_class(&t, "vgg19");
  tu_add_job(&t, "b", 0, 1000, 1, 1000, NULL);
  t.jobs[1].jclass = (uint16_t)trace_intern_class(&t, "resnet");
  tu_add_job(&t, "c", 0, 1000, 1, 1000, NULL);
  ck_assert_int_eq(t.jobs[0].jclass, 1);
  ck_assert_int_eq(t.jobs[1].jclass, 2);
  t.measured_on = "V100M16";
  sim_options o = opts();
  o.speed_table = path;
  sim_result r;
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.js[0].finish_us, S(250));
  ck_assert_int_eq(r.js[1].finish_us, S(500));
  ck_assert_int_eq(r.js[2].finish_us, S(500));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* The Tiresias reader gives each job its model name as class, and the
 * format's measurement type (P100). */
START_TEST(test_tiresias_classes) {
  char path[4096];
  if (!data_path(path, sizeof path, "tiresias/60_job.csv"))
    return;
  trace t;
  trace_init(&t);
  trace_error te;
  ck_assert_msg(trace_load(&t, path, &te) == 0, "%s", te.msg);
  ck_assert_int_eq(t.nclasses, 10);
  ck_assert_int_eq(t.jobs[0].jclass, 1);
  ck_assert_str_eq(t.classes[t.jobs[0].jclass - 1], "vgg19");
  ck_assert_str_eq(t.classes[t.jobs[1].jclass - 1], "vgg11");
  ck_assert_str_eq(t.measured_on, "P100");
  ck_assert_int_eq(t.measured_by_spec, 0);
  trace_free(&t);
}
END_TEST

/*
 * Gavel's simulation_throughputs.json, unchanged: 26 classes; k80, p100,
 * v100 -> K80, P100, V100M16 and V100M32; values as in the file (checked
 * against gavel_isolated_k80_p100_v100.csv: ResNet-50 (batch size 64) on
 * one V100 4.3948 steps/s, on 8 unconsolidated V100 19.7573 and
 * consolidated 17.3032; on one K80 0.619), each class's speeds divided
 * by its 1-GPU V100 speed (the reference).
 */
START_TEST(test_gavel) {
  char path[4096], err[512];
  if (!data_path(path, sizeof path,
                 "gpu-performance/gavel/simulation_throughputs.json"))
    return;
  speed_table tab;
  ck_assert_msg(speed_table_load_file(&tab, path, &cat, err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(tab.nclasses, 26);
  ck_assert_int_eq(tab.nmodels, 4);
  int c = speed_table_class(&tab, "ResNet-50 (batch size 64)");
  ck_assert_int_ge(c, 0);
  int v = speed_table_model(&tab, catalog_find(&cat, "V100M16"));
  int v32 = speed_table_model(&tab, catalog_find(&cat, "V100M32"));
  int k = speed_table_model(&tab, catalog_find(&cat, "K80"));
  /* Relative to one V100 of the same class. */
  double v1 = 4.3948;
  ck_assert_double_eq_tol(speed_table_speed(&tab, c, v, 1, 0), 1, 1e-12);
  ck_assert_double_eq_tol(speed_table_speed(&tab, c, v32, 1, 0), 1, 1e-12);
  ck_assert_double_eq_tol(speed_table_speed(&tab, c, v, 8, 0), 17.3032 / v1,
                          1e-4);
  ck_assert_double_eq_tol(speed_table_speed(&tab, c, v, 8, 1), 19.7573 / v1,
                          1e-4);
  ck_assert_double_eq_tol(speed_table_speed(&tab, c, k, 1, 0), 0.619 / v1,
                          1e-4);
  /* 3 GPUs: the 2-GPU entry x 3/2 (7.9221 x 1.5). */
  ck_assert_double_eq_tol(speed_table_speed(&tab, c, v, 3, 0),
                          7.9221 * 1.5 / v1, 1e-3);
  /* Pairs come from the file; unmeasured ones take the default (1). */
  ck_assert_ptr_nonnull(tab.pair);
  double p = speed_table_pair(&tab, c, c, k);
  ck_assert(p > 0 && p <= 1);
  speed_table_free(&tab);
}
END_TEST

/*
 * Gavel's pairwise co-location on a shared P100, durations measured on a
 * P100. a = ResNet-18 (batch size 256) at 0, b = ResNet-50 (batch size
 * 128) at 40, 100 s each, 500 milli. Gavel's file gives the pair
 * [0.740846..., 3.509724...] against isolated 7.722785 and 1.584352:
 * S = 3.509724 / 7.722785 + 0.740846 / 1.584352 = 0.92206562 for either
 * order. a: 60,000,000 us left at 40 -> round(6e7 / S) = 65,071,291, ends
 * at 105,071,291; b would run round(1e8 / S) = 108,452,152 (to
 * 148,452,152); when a leaves, b's 43,380,861 us left at S become
 * round(43,380,861 x S) = 40,000,000 at full speed: b ends at 145,071,291.
 * (The rule computes with the speeds s x S and s, not S alone: the same
 * figures, checked in Python with the same double operations.)
 */
START_TEST(test_gavel_pairs) {
  char gpath[4096], err[512], g[512];
  if (!data_path(gpath, sizeof gpath,
                 "gpu-performance/gavel/simulation_throughputs.json"))
    return;
  sim_cluster sc;
  group(g, sizeof g, "p", "P100", 1, "shared");
  cluster(&sc, g);
  trace t;
  trace_init(&t);
  tu_add_job(&t, "a", 0, 100, 1, 500, NULL);
  t.jobs[0].jclass =
      (uint16_t)trace_intern_class(&t, "ResNet-18 (batch size 256)");
  tu_add_job(&t, "b", 40, 100, 1, 500, NULL);
  t.jobs[1].jclass =
      (uint16_t)trace_intern_class(&t, "ResNet-50 (batch size 128)");
  t.measured_on = "P100";
  sim_options o = opts();
  o.speed_table = gpath;
  sim_result r;
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.js[0].finish_us, 105071291);
  ck_assert_int_eq(r.js[1].finish_us, 145071291);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* The built-in table's interference is the documented constant. */
START_TEST(test_default_interference) {
  speed_table tab;
  char err[512];
  ck_assert_msg(speed_table_load_default(&tab, &cat, err, sizeof err) == 0,
                "%s", err);
  ck_assert_double_eq(tab.interference, SPEED_DEFAULT_INTERFERENCE);
  ck_assert_int_eq(tab.nclasses, 1);
  ck_assert_int_eq(tab.nmodels, cat.n); /* every catalog model */
  speed_table_free(&tab);
}
END_TEST

/* Malformed tables: the error names the file and the key. */
START_TEST(test_malformed) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"{\"classes\": {\"default\": {\"Z999\": 1}}}", "classes.default.Z999"},
      {"{\"classes\": {\"default\": {\"V100M16\": -1}}}",
       "classes.default.V100M16"},
      {"{\"classes\": {\"default\": {\"V100M16\": {\"3\": 1}}}}",
       "key '3'"},
      {"{\"classes\": {\"default\": {\"V100M16\": 1}}, \"bogus\": 1}",
       "bogus"},
      {"{\"classes\": {\"d\": {\"V100M16\": 1}}, \"interference\": "
       "{\"default\": 2}}",
       "interference.default"},
      {"{\"k80\": {\"ResNet (1)\": {\"null\": 1}}}", "k80.\"ResNet (1)\""},
      {"{\"k80\": {\"('R', 3)\": {\"null\": 1}}}", "('R', 3)"},
      {"{\"k80\": {\"('R', 1)\": {\"nul\": 1}}}", "('R', 1)"},
      {"{\"a100\": {\"('R', 1)\": {\"null\": 1}}}", "key 'a100'"},
      {"{\"k80\": {\"('R', 1)\": {\"null\": 1, \"('S', 1)\": [1]}}}",
       "('S', 1)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[512], name[32], err[512];
    snprintf(name, sizeof name, "bad%zu.json", i);
    put_text(path, sizeof path, name, cases[i].text);
    speed_table tab;
    ck_assert_int_eq(speed_table_load_file(&tab, path, &cat, err, sizeof err),
                     -1);
    ck_assert_msg(strstr(err, path) && strstr(err, cases[i].want),
                  "case %zu: %s", i, err);
  }
}
END_TEST

/*
 * Property: on a shared cluster with many co-located jobs, the work done
 * (integrated over each job's segments at the speed it ran) equals the
 * sum of the jobs' work, up to the re-timings' rounding (at most 0.5 us
 * of run time at speed <= 4.727 per re-timing, fewer than the events);
 * with the built-in default workload on builtin:default.
 */
START_TEST(test_work_conserved) {
  char *json = NULL, err[512];
  int unknown = 0;
  json = sim_builtin_cluster_json("builtin:default", &unknown);
  ck_assert_ptr_nonnull(json);
  sim_cluster sc;
  ck_assert_msg(sim_cluster_from_json(&sc, json, "builtin:default", &cat, 1,
                                      err, sizeof err) == 0,
                "%s", err);
  free(json);
  synth_params sp;
  synth_default_params(&sp);
  sp.jobs = 1500;
  sp.seed = 7;
  trace t;
  trace_init(&t);
  trace_error te;
  ck_assert_int_eq(synth_generate(&t, &sp, &te), 0);
  ck_assert_str_eq(t.measured_on, "A100-SXM4-80GB");
  sim_options o = opts();
  o.policy = "best-fit";
  sim_result r;
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.completed, 1500);
  double tol = (double)r.events * 0.5e-6 * 4.727 + 1e-6;
  ck_assert_msg(fabs(r.work_done_ref_s - r.work_ref_s) <= tol,
                "done %.6f work %.6f tol %.6f", r.work_done_ref_s,
                r.work_ref_s, tol);
  /* work_gpu_hours weighs each job's work by its GPUs. */
  double w = 0;
  for (size_t i = 0; i < t.n; i++)
    w += (double)t.jobs[i].duration_us / 1e6 * 2.835 * t.jobs[i].num_gpu *
         t.jobs[i].gpu_milli / 1000.0;
  ck_assert_double_eq_tol(r.work_gpu_hours, w / 3600.0, 1e-6 * w / 3600.0);
  sim_result_free(&r);
  sim_cluster_free(&sc);
  trace_free(&t);
}
END_TEST

/* run() under another queue discipline (checked decisions). */
static int run_q(sim_cluster *sc, const trace *t, sim_options *o,
                 sim_queue_kind q, sim_result *r, char *err, size_t errlen) {
  if (!o->policy)
    o->policy = "first-fit";
  o->queue = q;
  o->seed = 1;
  o->unknown_duration_us = -1;
  o->speed = SIM_SPEED_CATALOG;
  o->check_reservations = 1;
  err[0] = 0;
  return sim_run(sc, &cat, t, o, r, err, errlen);
}

/*
 * A defrag move from a slow to a fast model (#13): round table (V100 1,
 * H100 4), durations measured on the V100, best-fit under defrag, moves
 * cost 7.5 s. Node h: one H100; node v: two V100s. At 0 c (1 GPU, 200 s:
 * 50 s on the H100) takes h (the tighter node), a (1,000 s) and b (100 s)
 * take v. d (2 GPUs, 10 s, at 10) waits: it fits nowhere and the free
 * capacity is short until b ends at 100 (one GPU free on each node). Then
 * defrag moves a to h: a has done 100 of its 1,000 reference-s; it
 * resumes at 107.5 and its 900 reference-s take 900 / 4 = 225 s on the
 * H100: a ends at 332.5 s = 332,500,000 us (before #13: 1,007.5 s, its
 * V100 run time kept). d runs 100..110 on v (2 V100s, 20 reference-s at
 * 2). The work done equals the jobs' work: 200 + 1,000 + 100 + 20. With
 * --speed none a ends at 107.5 + 900.
 */
START_TEST(test_defrag_move_speed) {
  sim_cluster sc;
  char g1[512], g2[512], groups[1100], err[512];
  group(g1, sizeof g1, "h", "H100-SXM5-80GB", 1, "exclusive");
  group(g2, sizeof g2, "v", "V100M16", 2, "exclusive");
  snprintf(groups, sizeof groups, "%s, %s", g1, g2);
  cluster(&sc, groups);
  trace t;
  trace_init(&t);
  tu_add_job(&t, "c", 0, 200, 1, 1000, NULL);
  tu_add_job(&t, "a", 0, 1000, 1, 1000, NULL);
  tu_add_job(&t, "b", 0, 100, 1, 1000, NULL);
  tu_add_job(&t, "d", 10, 10, 2, 1000, NULL);
  t.measured_on = "V100M16";
  char *params[] = {"base=best-fit"};
  sim_options o = opts();
  o.policy = "defrag";
  o.policy_params = params;
  o.npolicy_params = 1;
  o.migration_fixed_s = 7.5;
  o.speed_table = round_table(1);
  sim_result r;
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(r.js[0].node, 0);
  ck_assert_int_eq(r.js[0].finish_us, S(50));
  ck_assert_int_eq(r.js[2].finish_us, S(100));
  ck_assert_uint_eq(r.migrations_total, 1);
  ck_assert_uint_eq(r.migrations[1], 1);
  ck_assert_int_eq(r.js[1].node, 0);
  ck_assert_int_eq(r.js[1].start_us, 0);
  ck_assert_int_eq(r.js[1].finish_us, 332500000);
  ck_assert_int_eq(r.js[3].start_us, S(100));
  ck_assert_int_eq(r.js[3].finish_us, S(110));
  ck_assert_double_eq_tol(r.work_done_ref_s, 1320, 1e-6);
  ck_assert_double_eq_tol(r.work_ref_s, 1320, 1e-9);
  sim_result_free(&r);
  o.speed = SIM_SPEED_NONE;
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err), 0);
  ck_assert_uint_eq(r.migrations[1], 1);
  ck_assert_int_eq(r.js[1].finish_us, 1007500000);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * A move between shared GPUs re-times the moved job on its target and the
 * co-runner there (interference 0.5, durations "same", one shared A100
 * per node, first-fit under defrag, moves free). At 0 a (300 milli, 100
 * s) and x (500, 100 s) share n0, both at 0.5; b (700, 100 s) runs alone
 * on n1. At 10 w (500, 10 s) fits nowhere though 500 milli are free (200 +
 * 300): defrag moves a to n1 (released first on n0, it frees 500 there)
 * and w starts beside x. At 10 a and x have done 5, b 10. From 10
 * everyone runs at 0.5: a's 95 take 190 (end 200), b's 90 180 (end 190),
 * w's 10 take 20 (end 30), x's 95 190; when w ends at 30 x has done 15,
 * its 85 left run alone: x ends at 115. When b ends at 190 a has done 5 +
 * 90 = 95: its last 5 alone, a ends at 195. (Before #13 the move kept a's
 * run time and left b at full speed: b ended at 100.) Work done 310.
 */
START_TEST(test_defrag_move_shared) {
  sim_cluster sc;
  char g1[512], g2[512], groups[1100], err[512];
  group(g1, sizeof g1, "n0", "A100-SXM4-80GB", 1, "shared");
  group(g2, sizeof g2, "n1", "A100-SXM4-80GB", 1, "shared");
  snprintf(groups, sizeof groups, "%s, %s", g1, g2);
  cluster(&sc, groups);
  trace t;
  trace_init(&t);
  tu_add_job(&t, "a", 0, 100, 1, 300, NULL);
  tu_add_job(&t, "x", 0, 100, 1, 500, NULL);
  tu_add_job(&t, "b", 0, 100, 1, 700, NULL);
  tu_add_job(&t, "w", 10, 10, 1, 500, NULL);
  char *params[] = {"base=first-fit"};
  sim_options o = opts();
  o.policy = "defrag";
  o.policy_params = params;
  o.npolicy_params = 1;
  o.speed_table = round_table(0.5);
  sim_result r;
  ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(r.migrations_total, 1);
  ck_assert_uint_eq(r.migrations[0], 1);
  ck_assert_int_eq(r.js[0].node, 1);
  ck_assert_int_eq(r.js[3].node, 0);
  ck_assert_int_eq(r.js[3].start_us, S(10));
  ck_assert_int_eq(r.js[3].finish_us, S(30));
  ck_assert_int_eq(r.js[1].finish_us, S(115));
  ck_assert_int_eq(r.js[2].finish_us, S(190));
  ck_assert_int_eq(r.js[0].finish_us, S(195));
  ck_assert_double_eq_tol(r.work_done_ref_s, 310, 1e-6);
  ck_assert_double_eq_tol(r.work_ref_s, 310, 1e-9);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * Backfill estimates under the speed model (#13), exact estimates, one
 * node of two H100s, round table, a job measured on the model its spec
 * names (else the V100). Case 1: a (1 GPU, spec H100, 400 s: runs 400 s)
 * at 0; h (2 GPUs, 40 s on the V100: 10 s on two H100s) at 1 waits for a:
 * reservation 400. c (1 GPU, 1,000 s on the V100) at 2 runs 250 s on the
 * H100: its estimated end 252 <= 400, it backfills (2..252); h runs
 * 400..410. In trace time c would end at 1,002 and wait behind h.
 * Case 2: a has no spec (400 s on the V100: 100 s), c the H100's (200 s:
 * 200 s). The reservation is a's known end 100, not 400; c would end at
 * 202 > 100 and delay h: h runs 100..110, then c 110..310 (in trace time
 * T = 400 and c would have started at 2).
 * Case 3: case 2 with --estimates trace, a requesting 800 s (on the V100:
 * 200 s on the H100, so T = 200) and c 250 s (its duration, on the H100:
 * 250 s): c would end at 252 > 200: h 100..110, c 110..360.
 * Case 4: case 2 with --estimate-factor 2: T = 0 + 2 x 100 = 200, c's
 * estimated end 2 + 2 x 200 = 402: h 100..110, c 110..310.
 */
START_TEST(test_backfill_speed) {
  sim_cluster sc;
  char g[512], err[512];
  group(g, sizeof g, "h", "H100-SXM5-80GB", 2, "exclusive");
  cluster(&sc, g);
  for (int k = 1; k <= 4; k++) {
    trace t;
    trace_init(&t);
    t.measured_on = "V100M16";
    t.measured_by_spec = 1;
    tu_add_job(&t, "a", 0, 400, 1, 1000, k == 1 ? "H100-SXM5-80GB" : NULL);
    tu_add_job(&t, "h", 1, 40, 2, 1000, NULL);
    if (k == 1)
      tu_add_job(&t, "c", 2, 1000, 1, 1000, NULL);
    else
      tu_add_job(&t, "c", 2, k == 3 ? 250 : 200, 1, 1000, "H100-SXM5-80GB");
    sim_options o = opts();
    o.speed_table = round_table(1);
    if (k == 3) {
      o.estimates = SIM_EST_TRACE;
      t.jobs[0].req_s = 800;
      t.jobs[2].req_s = 250;
    }
    if (k == 4)
      o.estimate_factor = 2;
    sim_result r;
    ck_assert_msg(run_q(&sc, &t, &o, SIM_QUEUE_BACKFILL, &r, err, sizeof err) == 0,
                  "case %d: %s", k, err);
    int64_t h0 = k == 1 ? 400 : 100, c0 = k == 1 ? 2 : 110;
    int64_t c1 = k == 1 ? 252 : k == 3 ? 360 : 310;
    ck_assert_int_eq(r.js[0].finish_us, S(k == 1 ? 400 : 100));
    ck_assert_int_eq(r.js[1].start_us, S(h0));
    ck_assert_int_eq(r.js[1].finish_us, S(h0 + 10));
    ck_assert_int_eq(r.js[2].start_us, S(c0));
    ck_assert_int_eq(r.js[2].finish_us, S(c1));
    sim_result_free(&r);
    /* The plain pass (no queue index) decides the same. */
    o.queue_plain = 1;
    ck_assert_msg(run_q(&sc, &t, &o, SIM_QUEUE_BACKFILL, &r, err, sizeof err) == 0,
                  "case %d: %s", k, err);
    ck_assert_int_eq(r.js[2].start_us, S(c0));
    sim_result_free(&r);
    trace_free(&t);
  }
  sim_cluster_free(&sc);
}
END_TEST

/*
 * A reservation takes a running job's re-timed end (interference 0.5,
 * durations "same", one node of two shared A100s, first-fit). a (500
 * milli, 100 s) at 0; b (500 milli, 100 s) at 10 joins it on GPU 0: a's
 * 90 s left take 180 (ends 190), b would end at 210. h (2 whole GPUs, 10
 * s) at 20 waits: reservation 210 (in trace time 110). c (1 GPU, 170 s) at
 * 30 takes GPU 1 alone: its end 200 <= 210, it backfills (30..200). When
 * a ends at 190 b has 10 s of work left: it ends at 200. h runs 200..210.
 * With the trace-time reservation (110) c would have waited for h.
 */
START_TEST(test_backfill_retimed) {
  sim_cluster sc;
  char g[512], err[512];
  group(g, sizeof g, "s", "A100-SXM4-80GB", 2, "shared");
  cluster(&sc, g);
  trace t;
  trace_init(&t);
  tu_add_job(&t, "a", 0, 100, 1, 500, NULL);
  tu_add_job(&t, "b", 10, 100, 1, 500, NULL);
  tu_add_job(&t, "h", 20, 10, 2, 1000, NULL);
  tu_add_job(&t, "c", 30, 170, 1, 1000, NULL);
  sim_options o = opts();
  o.speed_table = round_table(0.5);
  sim_result r;
  ck_assert_msg(run_q(&sc, &t, &o, SIM_QUEUE_BACKFILL, &r, err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(r.js[0].finish_us, S(190));
  ck_assert_int_eq(r.js[1].finish_us, S(200));
  ck_assert_int_eq(r.js[3].start_us, S(30));
  ck_assert_int_eq(r.js[3].finish_us, S(200));
  ck_assert_int_eq(r.js[2].start_us, S(200));
  ck_assert_int_eq(r.js[2].finish_us, S(210));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * A candidate that would slow a co-runner is checked against the
 * reservation with the co-runner re-timed (interference 0.5, durations
 * "same", one node of two shared A100s, first-fit, --check). a (500
 * milli, 100 s) at 0 on GPU 0; h (2 whole GPUs, 10 s) at 1: reservation
 * 100. c (500 milli, 20 s) at 2 would share GPU 0: it would end at 2 + 40
 * = 42 <= 100, but a, slowed from 2, would end at 2 + 98 / 0.5 = 198:
 * the head would wait, so c waits. h runs 100..110, then c alone
 * 110..130. (Deciding on c's end alone started c and moved the
 * reservation: --check failed.)
 */
START_TEST(test_backfill_slows_corunner) {
  sim_cluster sc;
  char g[512], err[512];
  group(g, sizeof g, "s", "A100-SXM4-80GB", 2, "shared");
  cluster(&sc, g);
  trace t;
  trace_init(&t);
  tu_add_job(&t, "a", 0, 100, 1, 500, NULL);
  tu_add_job(&t, "h", 1, 10, 2, 1000, NULL);
  tu_add_job(&t, "c", 2, 20, 1, 500, NULL);
  sim_options o = opts();
  o.speed_table = round_table(0.5);
  sim_result r;
  ck_assert_msg(run_q(&sc, &t, &o, SIM_QUEUE_BACKFILL, &r, err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(r.js[0].finish_us, S(100));
  ck_assert_int_eq(r.js[1].start_us, S(100));
  ck_assert_int_eq(r.js[1].finish_us, S(110));
  ck_assert_int_eq(r.js[2].start_us, S(110));
  ck_assert_int_eq(r.js[2].finish_us, S(130));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * Property with moves, preemptions and checkpoints: the work done equals
 * the jobs' work (the work before a move or a preemption carries; lost
 * work is redone, not counted twice), on builtin:default (shared GPUs)
 * with defrag, up to the re-timings' rounding.
 */
START_TEST(test_work_conserved_moves) {
  char *json = NULL, err[512];
  int unknown = 0;
  json = sim_builtin_cluster_json("builtin:default", &unknown);
  ck_assert_ptr_nonnull(json);
  sim_cluster sc;
  ck_assert_msg(sim_cluster_from_json(&sc, json, "builtin:default", &cat, 1,
                                      err, sizeof err) == 0,
                "%s", err);
  free(json);
  synth_params sp;
  synth_default_params(&sp);
  sp.jobs = 1500;
  sp.seed = 7;
  trace t;
  trace_init(&t);
  trace_error te;
  ck_assert_int_eq(synth_generate(&t, &sp, &te), 0);
  for (int pre = 0; pre <= 2; pre++) {
    sim_options o = opts();
    o.policy = "defrag";
    o.migration_fixed_s = 3;
    o.max_moves_per_job = 3;
    o.preempt = pre > 0;
    o.checkpoint_s = pre == 2 ? 60 : 0;
    sim_result r;
    ck_assert_msg(run(&sc, &t, &o, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(r.completed, 1500);
    ck_assert_uint_gt(pre ? r.preemptions_total : r.migrations_total, 0);
    double tol = (double)r.events * 0.5e-6 * 4.727 + 1e-6;
    ck_assert_msg(fabs(r.work_done_ref_s - r.work_ref_s) <= tol,
                  "case %d: done %.6f work %.6f tol %.6f", pre,
                  r.work_done_ref_s, r.work_ref_s, tol);
    sim_result_free(&r);
  }
  sim_cluster_free(&sc);
  trace_free(&t);
}
END_TEST

/*
 * Composable pools under a speed table (sim/README.md "Composable GPU
 * pools"): the fabric factor is part of the job's speed, so a move keeps
 * the work done. Two GPU-less hosts, one 2-GPU A100 chassis each (attach
 * 30 s, detach 0, fabric 0.5); table: 1 GPU 1, 2 GPUs 2, unconsolidated 2
 * GPUs 1.6; durations measured on the A100; defrag over worst-fit, fifo,
 * moves cost 5 s. x and y (1 GPU, 1,000 s) compose one GPU each on
 * host-0 and host-1: 30..2,030 at 0.5. h (2 GPUs, 100 s, at 100) fits on
 * neither host (one open slot each): x moves to host-1; at 100 it has done
 * 70 x 0.5 = 35 reference-s, its 965 left take 1,930 s from 100 + 5 + 30:
 * x ends at 2,065 s. h composes host-0's 2 GPUs (not on its NVLink: the
 * unconsolidated 1.6): 200 / (1.6 x 0.5) = 250 s from 130: ends at 380.
 * Work done = work = 1,000 + 1,000 + 200.
 */
START_TEST(test_pool_fabric_move) {
  char json[1024], err[512], st[512];
  snprintf(json, sizeof json,
           "{\"name\": \"cc\", \"node_groups\": [{\"name\": \"host\", "
           "\"count\": 2, \"gpus_per_node\": 0, \"cpu_milli\": 64000, "
           "\"memory_mib\": 262144}], \"pools\": [{\"name\": \"chassis\", "
           "\"count\": 2, \"gpus\": 2, \"gpu_model\": \"A100-SXM4-80GB\", "
           "\"hosts_group\": \"host\", \"hosts_per_pool\": 1, "
           "\"max_per_host\": 2, \"attach_s\": 30, \"detach_s\": 0, "
           "\"fabric_speed\": 0.5}]}");
  sim_cluster sc;
  ck_assert_msg(sim_cluster_from_json(&sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
  put_text(st, sizeof st, "pool_speed.json",
           "{\"classes\": {\"default\": {\"A100-SXM4-80GB\": {\"1\": 1, "
           "\"2\": 2, \"unconsolidated\": {\"2\": 1.6}}}}}");
  trace t;
  trace_init(&t);
  tu_add_job(&t, "x", 0, 1000, 1, 1000, NULL);
  tu_add_job(&t, "y", 0, 1000, 1, 1000, NULL);
  tu_add_job(&t, "h", 100, 100, 2, 1000, NULL);
  t.measured_on = "A100-SXM4-80GB";
  char *params[] = {"base=worst-fit"};
  sim_options o = opts();
  o.policy = "defrag";
  o.policy_params = params;
  o.npolicy_params = 1;
  o.migration_fixed_s = 5;
  o.speed_table = st;
  sim_result r;
  ck_assert_msg(run_q(&sc, &t, &o, SIM_QUEUE_FIFO, &r, err, sizeof err) == 0,
                "%s", err);
  ck_assert_uint_eq(r.migrations_total, 1);
  ck_assert_int_eq(r.js[0].start_us, S(30));
  ck_assert_int_eq(r.js[0].finish_us, S(2065));
  ck_assert_int_eq(r.js[1].finish_us, S(2030));
  ck_assert_int_eq(r.js[2].start_us, S(130));
  ck_assert_int_eq(r.js[2].finish_us, S(380));
  ck_assert_double_eq_tol(r.work_done_ref_s, 2200, 1e-6);
  ck_assert_double_eq_tol(r.work_ref_s, 2200, 1e-9);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("speed");
  TCase *tc = tcase_create("speed");
  tcase_add_checked_fixture(tc, load_catalog, free_catalog);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_faster_type);
  tcase_add_test(tc, test_builtin_table);
  tcase_add_test(tc, test_mig_slice);
  tcase_add_test(tc, test_interference);
  tcase_add_test(tc, test_rounding);
  tcase_add_test(tc, test_scale_entries);
  tcase_add_test(tc, test_trace_classes);
  tcase_add_test(tc, test_tiresias_classes);
  tcase_add_test(tc, test_gavel);
  tcase_add_test(tc, test_gavel_pairs);
  tcase_add_test(tc, test_default_interference);
  tcase_add_test(tc, test_malformed);
  tcase_add_test(tc, test_work_conserved);
  tcase_add_test(tc, test_defrag_move_speed);
  tcase_add_test(tc, test_defrag_move_shared);
  tcase_add_test(tc, test_backfill_speed);
  tcase_add_test(tc, test_backfill_retimed);
  tcase_add_test(tc, test_backfill_slows_corunner);
  tcase_add_test(tc, test_work_conserved_moves);
  tcase_add_test(tc, test_pool_fabric_move);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(suite()); }
