/*
 * MIG in the simulator: the catalog's MIG profiles, cluster-spec modes
 * and their validation errors, the trace mapping, the unsatisfiable-request
 * error, explicit requests by profile name, the reconfiguration delay
 * (hand-computed, per GPU and node-wide), mixed clusters, outputs.
 */
#include "catalog.h"
#include "cluster_spec.h"
#include "engine.h"
#include "mig_sim.h"
#include "output.h"
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

/* A cluster from one node group's JSON body. */
static int cluster(sim_cluster *sc, const char *groups, char *err,
                   size_t errlen) {
  char json[4096];
  snprintf(json, sizeof json, "{\"name\": \"t\", \"node_groups\": [%s]}",
           groups);
  return sim_cluster_from_json(sc, json, "spec.json", &cat, 1, err, errlen);
}

static void cluster_ok(sim_cluster *sc, const char *groups) {
  char err[1024];
  ck_assert_msg(cluster(sc, groups, err, sizeof err) == 0, "%s", err);
}

static void new_trace(trace *t, const char *path) {
  trace_init(t);
  t->path = strdup(path);
  t->has_times = 1;
}

static int run_opts(sim_cluster *sc, const trace *t, const char *policy,
                    sim_mig_map map, const char *requests, sim_result *r,
                    char *err, size_t errlen) {
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = policy;
  o.queue = SIM_QUEUE_FIFO;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.mig_map = map;
  o.mig_requests = requests;
  err[0] = 0;
  return sim_run(sc, &cat, t, &o, r, err, errlen);
}

/* A job sink writing jobs.csv rows. */
typedef struct jobs_sink {
  FILE *f;
  const sim_cluster *sc;
} jobs_sink;

static int write_row(void *user, const sim_job_out *o) {
  jobs_sink *k = user;
  write_job_row(k->f, k->sc, o);
  return 0;
}

static void run_ok(sim_cluster *sc, const trace *t, const char *policy,
                   sim_result *r) {
  char err[1024];
  int rc = run_opts(sc, t, policy, SIM_MIG_MAP_BOTH, NULL, r, err, sizeof err);
  ck_assert_msg(rc == 0, "sim_run: %s", err);
}

/* ---------------------------------------------------------------- catalog */

START_TEST(catalog_profiles) {
  static const struct {
    const char *model;
    const char *names[6];
    double gib[6];
  } want[] = {
      {"A100-SXM4-40GB",
       {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
       {4.75, 9.62, 9.62, 19.5, 19.5, 39.25}},
      {"A100-SXM4-80GB",
       {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
       {9.5, 19.5, 19.5, 39.25, 39.25, 78.75}},
      {"H100-SXM5-80GB",
       {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
       {9.75, 19.62, 19.62, 39.5, 39.5, 79.25}},
      {"H100-PCIE-80GB",
       {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
       {9.75, 19.62, 19.62, 39.5, 39.5, 79.25}},
      {"H100-NVL-94GB",
       {"1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"},
       {10.75, 21.62, 21.62, 46.38, 46.38, 93.12}},
      {"H200-SXM-141GB",
       {"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
       {16, 32.5, 32.5, 65, 65, 140}},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const gpu_model_info *m = catalog_find(&cat, want[i].model);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->nmig, 6);
    for (int k = 1; k <= 6; k++) {
      const gpu_mig_profile *p = catalog_mig_kind(m, k);
      ck_assert_ptr_nonnull(p);
      ck_assert_str_eq(p->name, want[i].names[k - 1]);
      ck_assert_double_eq_tol(p->memory_gib, want[i].gib[k - 1], 1e-9);
      ck_assert_ptr_eq(catalog_mig_profile(m, want[i].names[k - 1]), p);
    }
  }
  /* Unverified values are marked. */
  const gpu_model_info *h200 = catalog_find(&cat, "H200");
  ck_assert_int_eq(catalog_mig_profile(h200, "1g.35gb")->verified, 0);
  ck_assert_int_eq(catalog_mig_profile(
                       catalog_find(&cat, "A100-80GB"), "3g.40gb")->verified,
                   1);
  /* Models without MIG have none. */
  ck_assert_int_eq(catalog_find(&cat, "V100M16")->nmig, 0);
  /* H100 SMs are not uniform: 1g.20gb has 26, 3g.40gb 60, 4g.40gb 64. */
  const gpu_model_info *h = catalog_find(&cat, "H100-SXM5-80GB");
  ck_assert_int_eq(catalog_mig_profile(h, "1g.20gb")->sm_count, 26);
  ck_assert_int_eq(catalog_mig_profile(h, "3g.40gb")->sm_count, 60);
  ck_assert_int_eq(catalog_mig_profile(h, "4g.40gb")->sm_count, 64);
}
END_TEST

static void catalog_error(const char *profile, const char *want) {
  char text[2048], err[1024];
  snprintf(text, sizeof text,
           "{\"about\": \"x\", \"models\": [{\"name\": \"X\", \"mig\": true, "
           "\"mig_profiles\": [%s]}]}",
           profile);
  gpu_catalog c;
  ck_assert_int_eq(catalog_parse(&c, text, "cat.json", err, sizeof err), -1);
  ck_assert_msg(strstr(err, want) && strstr(err, "cat.json"),
                "error '%s' lacks '%s'", err, want);
}

START_TEST(catalog_rejects_bad_profiles) {
#define P(extra)                                                               \
  "{\"name\": \"1g.10gb\", \"kind\": \"1g\", \"compute_slices\": 1, "          \
  "\"memory_slots\": 1, \"starts\": [0,1,2,3,4,5,6], \"memory_gib\": 9.5" extra \
  "}"
  catalog_error(P(", \"colour\": 1"), "colour");
  catalog_error("{\"name\": \"x\", \"kind\": \"5g\", \"compute_slices\": 5, "
                "\"memory_slots\": 5, \"starts\": [0], \"memory_gib\": 1}",
                "'kind'");
  catalog_error("{\"name\": \"x\", \"kind\": \"3g\", \"compute_slices\": 3, "
                "\"memory_slots\": 3, \"starts\": [0, 4], \"memory_gib\": 1}",
                "placement table");
  catalog_error("{\"name\": \"x\", \"kind\": \"2g\", \"compute_slices\": 2, "
                "\"memory_slots\": 2, \"starts\": [0, 2, 4, 6], "
                "\"memory_gib\": 1}",
                "'starts'");
  catalog_error(P(", \"verified\": \"yes\""), "verified");
  catalog_error("{\"name\": \"x\", \"kind\": \"3g.40gb\", \"compute_slices\": 3, "
                "\"memory_slots\": 4, \"starts\": [0, 4], \"memory_gib\": 1}",
                "'kind'");
  catalog_error(P("") ", " P(""), "twice");
  catalog_error("{\"name\": \"x\", \"kind\": \"1g\", \"compute_slices\": 1, "
                "\"memory_slots\": 1, \"starts\": [0,1,2,3,4,5,6]}",
                "memory_gib");
#undef P
  /* mig_profiles without "mig": true. */
  char err[512];
  gpu_catalog c;
  ck_assert_int_eq(
      catalog_parse(&c,
                    "{\"models\": [{\"name\": \"X\", \"mig_profiles\": []}]}",
                    "c.json", err, sizeof err),
      0);
  catalog_free(&c);
}
END_TEST

/* The profiles of the models libsched knows come from the library
 * (libsched/src/mig_tables.c): the built-in catalog says "libsched", and a
 * catalog listing such a model's profiles must agree with the library. */
START_TEST(catalog_profiles_from_libsched) {
  char err[1024];
  gpu_catalog lc;
  ck_assert_int_eq(catalog_load_default(&lc, err, sizeof err), 0);
  int libmodels = 0;
  for (int i = 0; i < lc.n; i++) {
    const gpu_model_info *m = &lc.models[i];
    const lsched_mig_model *lm = lsched_mig_builtin_model(m->name);
    if (!lm) {
      ck_assert_int_eq(m->nmig, 0);
      continue;
    }
    libmodels++;
    ck_assert_int_eq(m->nmig, lm->nprofiles);
    for (int k = 1; k <= 6; k++) {
      const lsched_mig_profile *lp = lsched_mig_model_profile(lm, k);
      const gpu_mig_profile *p = catalog_mig_kind(m, k);
      ck_assert_str_eq(p->name, lp->name);
      ck_assert_double_eq(p->memory_gib, lp->memory_gib);
      ck_assert_int_eq(p->profile_id, lp->profile_id);
      ck_assert_int_eq(p->sm_count, lp->sm_count);
      ck_assert_int_eq(p->verified, lp->verified);
    }
  }
  ck_assert_int_eq(libmodels, 6);
  catalog_free(&lc);
  /* Listing them again is fine when every value agrees ... */
  static const char ok[] =
      "{\"models\": [{\"name\": \"A100-SXM4-80GB\", \"mig\": true, "
      "\"mig_profiles\": [{\"name\": \"3g.40gb\", \"kind\": \"3g\", "
      "\"compute_slices\": 3, \"memory_slots\": 4, \"starts\": [0, 4], "
      "\"memory_gib\": 39.25, \"profile_id\": 9, \"sm_count\": 42}]}]}";
  ck_assert_msg(catalog_parse(&lc, ok, "c.json", err, sizeof err) == 0, "%s",
                err);
  catalog_free(&lc);
  /* ... not when one differs (the field is named) ... */
  char bad[sizeof ok + 8];
  snprintf(bad, sizeof bad, "%s", ok);
  memcpy(strstr(bad, "39.25"), "39.50", 5);
  ck_assert_int_eq(catalog_parse(&lc, bad, "c.json", err, sizeof err), -1);
  ck_assert_msg(strstr(err, "c.json") && strstr(err, "'memory_gib'") &&
                    strstr(err, "libsched"),
                "%s", err);
  snprintf(bad, sizeof bad, "%s", ok);
  memcpy(strstr(bad, "3g.40gb"), "3g.20gb", 7);
  ck_assert_int_eq(catalog_parse(&lc, bad, "c.json", err, sizeof err), -1);
  ck_assert_msg(strstr(err, "'name'"), "%s", err);
  /* ... and "libsched" needs a model the library knows. */
  ck_assert_int_eq(
      catalog_parse(&lc,
                    "{\"models\": [{\"name\": \"X\", \"mig\": true, "
                    "\"mig_profiles\": \"libsched\"}]}",
                    "c.json", err, sizeof err),
      -1);
  ck_assert_msg(strstr(err, "no MIG profile table for 'X'"), "%s", err);
  ck_assert_int_eq(
      catalog_parse(&lc,
                    "{\"models\": [{\"name\": \"H200\", \"mig\": true, "
                    "\"mig_profiles\": \"libsched\"}]}",
                    "c.json", err, sizeof err),
      0);
  ck_assert_int_eq(lc.models[0].nmig, 6);
  ck_assert_str_eq(catalog_mig_kind(&lc.models[0], 6)->name, "7g.141gb");
  catalog_free(&lc);
}
END_TEST

/* ---------------------------------------------------------- cluster spec */

#define G                                                                      \
  "{\"name\": \"g\", \"count\": 1, \"gpu_model\": \"%s\", "                 \
  "\"gpus_per_node\": 2, \"cpu_milli\": 64000, \"memory_mib\": 65536%s}"

static void spec_error(const char *model, const char *extra,
                       const char *want) {
  char group[1024], err[1024];
  snprintf(group, sizeof group, G, model, extra);
  sim_cluster sc;
  ck_assert_int_eq(cluster(&sc, group, err, sizeof err), -1);
  ck_assert_msg(strstr(err, want) && strstr(err, "spec.json"),
                "error '%s' lacks '%s'", err, want);
}

START_TEST(spec_modes_and_errors) {
  char group[1024];
  sim_cluster sc;
  /* Named and explicit layouts; per-GPU instances follow. */
  snprintf(group, sizeof group, G, "A100-80GB",
           ", \"gpu_mode\": \"mig-static\", \"mig_layout\": \"balanced\"");
  cluster_ok(&sc, group);
  lsched_mig_gpu_state st;
  ck_assert_int_eq(lsched_mig_gpu_get(sc.c, 0, 1, &st), LSCHED_OK);
  ck_assert_int_eq(st.ninstances, 4);
  ck_assert_int_eq(st.dynamic, 0);
  ck_assert_int_eq(sc.mig_gpus, 2);
  ck_assert_int_eq(sc.plain_gpus, 0);
  sim_cluster_free(&sc);
  snprintf(group, sizeof group, G, "H100",
           ", \"gpu_mode\": \"mig-static\", \"mig_layout\": [\"3g.40gb@4\", "
           "\"2g.20gb@0\", \"1g.10gb@2\"]");
  cluster_ok(&sc, group);
  ck_assert_int_eq(lsched_mig_gpu_get(sc.c, 0, 0, &st), LSCHED_OK);
  ck_assert_int_eq(st.ninstances, 3);
  ck_assert_int_eq(st.instances[0].kind, LSCHED_MIG_2G);
  ck_assert_int_eq(st.instances[2].start, 4);
  sim_cluster_free(&sc);
  snprintf(group, sizeof group, G, "H200",
           ", \"gpu_mode\": \"mig-dynamic\", \"mig_reconfig_s\": 2.5, "
           "\"mig_reconfig_scope\": \"node\"");
  cluster_ok(&sc, group);
  ck_assert_int_eq(sc.mig_reconfig_us[0], 2500000);
  ck_assert_int_eq(sc.mig_scope_node[0], 1);
  sim_cluster_free(&sc);
  snprintf(group, sizeof group, G, "A100-40GB",
           ", \"gpu_mode\": \"mig-dynamic\"");
  cluster_ok(&sc, group);
  ck_assert_int_eq(sc.mig_reconfig_us[0], 5000000); /* default 5 s */
  ck_assert_int_eq(lsched_mig_gpu_get(sc.c, 0, 0, &st), LSCHED_OK);
  ck_assert_int_eq(st.dynamic, 1);
  sim_cluster_free(&sc);

  /* Errors name the file and the key. */
  spec_error("A100-80GB",
             ", \"gpu_mode\": \"mig-static\", \"mig_layout\": [\"3g.40gb@0\", "
             "\"2g.20gb@2\"]",
             "node_groups[0].mig_layout[1]: '2g.20gb@2' overlaps '3g.40gb@0'");
  spec_error("A100-80GB",
             ", \"gpu_mode\": \"mig-static\", \"mig_layout\": [\"2g.20gb@3\"]",
             "node_groups[0].mig_layout[0]: '2g.20gb@3': 2g.20gb cannot start "
             "at slot 3 (valid starts: 0, 2, 4)");
  spec_error("A100-80GB",
             ", \"gpu_mode\": \"mig-static\", \"mig_layout\": [\"3g.20gb@0\"]",
             "node_groups[0].mig_layout[0]: unknown MIG profile '3g.20gb' for "
             "A100-SXM4-80GB");
  spec_error("A100-80GB",
             ", \"gpu_mode\": \"mig-static\", \"mig_layout\": [\"3g.40gb\"]",
             "expected PROFILE@START");
  spec_error("A100-80GB",
             ", \"gpu_mode\": \"mig-static\", \"mig_layout\": [\"7g.80gb@8\"]",
             "cannot start at slot 8");
  spec_error("V100M16", ", \"gpu_mode\": \"mig-static\", \"mig_layout\": "
                        "\"all-1g\"",
             "node_groups[0].gpu_mode: GPU model V100M16 has no MIG profiles");
  spec_error("A100-80GB", ", \"gpu_mode\": \"mig-static\"",
             "gpu_mode mig-static needs 'mig_layout'");
  spec_error("A100-80GB", ", \"gpu_mode\": \"mig-static\", \"mig_layout\": "
                          "\"all-5g\"",
             "node_groups[0].mig_layout: unknown layout 'all-5g'");
  spec_error("A100-80GB", ", \"gpu_mode\": \"shared\", \"mig_layout\": "
                          "\"all-1g\"",
             "'mig_layout' needs gpu_mode mig-static or mig-dynamic");
  spec_error("A100-80GB", ", \"mig_reconfig_s\": 3",
             "'mig_reconfig_s' needs gpu_mode mig-static or mig-dynamic");
  spec_error("A100-80GB", ", \"gpu_mode\": \"mig-static\", \"mig_layout\": "
                          "\"all-1g\", \"mig_reconfig_s\": 3",
             "needs gpu_mode mig-dynamic");
  spec_error("A100-80GB", ", \"gpu_mode\": \"mig-dynamic\", "
                          "\"mig_reconfig_scope\": \"rack\"",
             "mig_reconfig_scope");
  spec_error("A100-80GB", ", \"gpu_mode\": \"mig-dynamic\", "
                          "\"mig_reconfig_s\": -1",
             "mig_reconfig_s");
  spec_error("A100-80GB", ", \"gpu_mode\": \"mig-wild\"",
             "unknown gpu_mode 'mig-wild'");
  spec_error("A100-80GB", ", \"gpu_mode\": \"mig-static\", \"mig_layout\": 7",
             "must be a layout name");
}
END_TEST

/* ---------------------------------------------------------------- mapping */

START_TEST(trace_mapping) {
  static const struct {
    int milli, compute, memory, both;
  } cases[] = {
      {50, 1, 1, 1},    {125, 1, 1, 1},   {126, 1, 2, 2},  {142, 1, 2, 2},
      {143, 3, 2, 3},   {250, 3, 2, 3},   {251, 3, 4, 4},  {285, 3, 4, 4},
      {286, 4, 4, 4},   {428, 4, 4, 4},   {429, 5, 4, 5},  {500, 5, 4, 5},
      {501, 5, 6, 6},   {571, 5, 6, 6},   {572, 6, 6, 6},  {1000, 6, 6, 6},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_msg(sim_mig_map_kind(SIM_MIG_MAP_COMPUTE, cases[i].milli) ==
                      cases[i].compute,
                  "compute %d", cases[i].milli);
    ck_assert_msg(sim_mig_map_kind(SIM_MIG_MAP_MEMORY, cases[i].milli) ==
                      cases[i].memory,
                  "memory %d", cases[i].milli);
    ck_assert_msg(sim_mig_map_kind(SIM_MIG_MAP_BOTH, cases[i].milli) ==
                      cases[i].both,
                  "both %d", cases[i].milli);
  }
  sim_mig_map m;
  ck_assert_int_eq(sim_mig_map_parse("memory", &m), 0);
  ck_assert_int_eq(m, SIM_MIG_MAP_MEMORY);
  ck_assert_int_eq(sim_mig_map_parse("slices", &m), -1);
  ck_assert_str_eq(sim_mig_map_name(SIM_MIG_MAP_BOTH), "both");
}
END_TEST

/* ------------------------------------------------------------ replays */

START_TEST(reconfig_per_gpu_hand) {
  sim_cluster sc;
  cluster_ok(&sc, "{\"name\": \"n\", \"count\": 1, \"gpu_model\": "
                  "\"A100-80GB\", \"gpus_per_node\": 1, \"cpu_milli\": 10000, "
                  "\"memory_mib\": 10000, \"gpu_mode\": \"mig-dynamic\", "
                  "\"mig_reconfig_s\": 5, \"price_per_gpu_hour\": 2.5}");
  trace t;
  new_trace(&t, "r.csv");
  tu_add_job(&t, "A", 0, 10, 1, 100, NULL);  /* 1g@0 created: usable at 5 */
  tu_add_job(&t, "B", 0, 10, 1, 100, NULL);  /* 1g@1, same round as A's: 5 */
  tu_add_job(&t, "C", 30, 10, 1, 100, NULL); /* reuses the idle 1g@0: no wait */
  tu_add_job(&t, "D", 30, 10, 1, 300, NULL); /* 3g@4 created in a new round: 35 */
  sim_result r;
  run_ok(&sc, &t, "mig-first-fit", &r);
  static const int64_t start[4] = {5, 5, 30, 35}, fin[4] = {15, 15, 40, 45};
  for (int j = 0; j < 4; j++) {
    ck_assert_int_eq(r.js[j].start_us, S(start[j]));
    ck_assert_int_eq(r.js[j].finish_us, S(fin[j]));
  }
  ck_assert_ptr_nonnull(r.mig);
  ck_assert_int_eq(r.mig->kind[2], LSCHED_MIG_1G);
  ck_assert_int_eq(r.mig->start[2], 0);
  ck_assert_int_eq(r.mig->kind[3], LSCHED_MIG_3G);
  ck_assert_int_eq(r.mig->start[3], 4);
  ck_assert_int_eq(r.mig->wait_us[1], S(5));
  ck_assert_int_eq(r.mig->wait_us[2], 0);
  ck_assert_uint_eq(r.mig->reconfig_jobs, 3);
  ck_assert_double_eq_tol(r.mig->reconfig_wait_s, 15, 1e-9);
  ck_assert_uint_eq(r.mig->created, 3);
  ck_assert_uint_eq(r.mig->placed[LSCHED_MIG_1G - 1], 3);
  ck_assert_uint_eq(r.mig->requested[LSCHED_MIG_3G - 1], 1);
  /* Queue time counts the wait: 5, 5, 0, 5. */
  ck_assert_double_eq_tol(r.queue_time_s.mean, 3.75, 1e-9);
  /* Span [0, 45]: slices in use 1 on [0,15) twice + 1 on [30,40) + 3 on
   * [30,45) (instances are held from placement) = 15+15+10+45 = 85
   * slice-seconds of 7 x 45. */
  ck_assert_double_eq_tol(r.mig->slice_util_mean, 85.0 / (7 * 45), 1e-9);
  /* Job-hours: 4 x 10 s; cost: 1 GPU x $2.50 x 45 s. */
  ck_assert_double_eq_tol(r.job_hours, 40.0 / 3600, 1e-12);
  ck_assert_double_eq_tol(r.cost_per_job_hour, 2.5 * 45 / 40, 1e-9);
  ck_assert_double_eq_tol(r.running_jobs_mean, 40.0 / 45, 1e-9);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

START_TEST(reconfig_node_scope_hand) {
  sim_cluster sc;
  cluster_ok(&sc, "{\"name\": \"n\", \"count\": 1, \"gpu_model\": "
                  "\"H100\", \"gpus_per_node\": 2, \"cpu_milli\": 10000, "
                  "\"memory_mib\": 10000, \"gpu_mode\": \"mig-dynamic\", "
                  "\"mig_reconfig_s\": 100, \"mig_reconfig_scope\": "
                  "\"node\"}");
  trace t;
  new_trace(&t, "n.csv");
  tu_add_job(&t, "A", 0, 10, 1, 100, NULL);   /* creates: the node stalls until 100 */
  tu_add_job(&t, "A2", 0, 10, 1, 300, NULL);  /* same pass, same round: 100 */
  tu_add_job(&t, "B", 10, 10, 1, 100, NULL);  /* creates after the round began: 200 */
  tu_add_job(&t, "C", 300, 10, 1, 100, NULL); /* reuses 1g@0: starts at once */
  tu_add_job(&t, "E", 150, 10, 1, 100, NULL); /* reuses 1g@0 (idle since 110)... */
  sim_result r;
  run_ok(&sc, &t, "mig-first-fit", &r);
  ck_assert_int_eq(r.js[0].start_us, S(100));
  ck_assert_int_eq(r.js[1].start_us, S(100));
  ck_assert_int_eq(r.js[2].start_us, S(200));
  ck_assert_int_eq(r.js[3].start_us, S(300));
  ck_assert_int_eq(r.js[3].finish_us, S(310));
  /* ... but the node is stalled by B's round until 200. */
  ck_assert_int_eq(r.js[4].start_us, S(200));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

START_TEST(static_layout_replay) {
  sim_cluster sc;
  cluster_ok(&sc, "{\"name\": \"n\", \"count\": 1, \"gpu_model\": "
                  "\"A100-80GB\", \"gpus_per_node\": 1, \"cpu_milli\": 10000, "
                  "\"memory_mib\": 10000, \"gpu_mode\": \"mig-static\", "
                  "\"mig_layout\": [\"4g.40gb@0\", \"1g.10gb@4\", "
                  "\"1g.10gb@5\", \"1g.10gb@6\"]}");
  trace t;
  new_trace(&t, "s.csv");
  tu_add_job(&t, "A", 0, 10, 1, 300, NULL);  /* 3g: the 4g (smallest that holds it) */
  tu_add_job(&t, "B", 0, 10, 1, 100, NULL);  /* 1g@4 */
  tu_add_job(&t, "C", 0, 10, 1, 1000, NULL); /* 7g: no node ever holds it */
  tu_add_job(&t, "D", 0, 10, 1, 300, NULL);  /* waits for the 4g (fifo: blocks E) */
  tu_add_job(&t, "E", 1, 10, 1, 100, NULL);
  sim_result r;
  run_ok(&sc, &t, "mig-best-fit", &r);
  ck_assert_int_eq(r.mig->kind[0], LSCHED_MIG_4G);
  ck_assert_int_eq(r.mig->kind[1], LSCHED_MIG_1G);
  ck_assert_int_eq(r.mig->start[1], 4);
  ck_assert_int_eq(r.js[2].status, JOB_NEVER_NO_NODE);
  ck_assert_int_eq(r.js[3].start_us, S(10));
  ck_assert_int_eq(r.js[4].start_us, S(10));
  ck_assert_uint_eq(r.mig->created, 0);
  ck_assert_uint_eq(r.mig->reconfig_jobs, 0);
  /* On [0, 1) only D (3g) is queued: the two idle 1g instances cannot host
   * it (2 slices). From 1, E (1g) is queued too and the smallest queued
   * kind is 1g, which every idle instance can host (0). */
  ck_assert_double_eq_tol(r.mig->frag_slices_max, 2, 1e-9);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

START_TEST(mixed_cluster_both_variants) {
  sim_cluster sc;
  cluster_ok(&sc,
             "{\"name\": \"p\", \"count\": 1, \"gpu_model\": \"A100-80GB\", "
             "\"gpus_per_node\": 1, \"cpu_milli\": 10000, \"memory_mib\": "
             "10000, \"gpu_mode\": \"shared\"}, {\"name\": \"m\", \"count\": "
             "1, \"gpu_model\": \"A100-80GB\", \"gpus_per_node\": 1, "
             "\"cpu_milli\": 10000, \"memory_mib\": 10000, \"gpu_mode\": "
             "\"mig-dynamic\", \"mig_reconfig_s\": 0}");
  ck_assert_int_eq(sc.plain_gpus, 1);
  ck_assert_int_eq(sc.mig_gpus, 1);
  trace t;
  new_trace(&t, "m.csv");
  tu_add_job(&t, "A", 0, 10, 1, 1000, NULL); /* the shared GPU */
  tu_add_job(&t, "B", 0, 10, 1, 1000, NULL); /* plain does not fit: 7g on the MIG GPU */
  tu_add_job(&t, "C", 0, 10, 1, 1000, NULL); /* neither: waits until 10 */
  sim_result r;
  run_ok(&sc, &t, "mig-aware", &r);
  ck_assert_int_eq(r.js[0].node, 0);
  ck_assert_int_eq(r.js[1].node, 1);
  ck_assert_int_eq(r.mig->kind[0], 0);
  ck_assert_int_eq(r.mig->kind[1], LSCHED_MIG_7G);
  ck_assert_int_eq(r.js[2].start_us, S(10));
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

START_TEST(unsatisfiable_request_is_an_error) {
  /* A catalog whose MIG model offers no 7g: a whole-GPU job cannot map. */
  static const char *text =
      "{\"models\": [{\"name\": \"X7\", \"memory_gib\": 80, \"mig\": true, "
      "\"price_per_gpu_hour\": 1, \"mig_profiles\": ["
      "{\"name\": \"1g.10gb\", \"kind\": \"1g\", \"compute_slices\": 1, "
      "\"memory_slots\": 1, \"starts\": [0,1,2,3,4,5,6], \"memory_gib\": 9.5},"
      "{\"name\": \"3g.40gb\", \"kind\": \"3g\", \"compute_slices\": 3, "
      "\"memory_slots\": 4, \"starts\": [0,4], \"memory_gib\": 39}]}]}";
  catalog_free(&cat);
  char err[1024];
  ck_assert_msg(catalog_parse(&cat, text, "x.json", err, sizeof err) == 0,
                "%s", err);
  sim_cluster sc;
  cluster_ok(&sc, "{\"name\": \"n\", \"count\": 1, \"gpu_model\": \"X7\", "
                  "\"gpus_per_node\": 1, \"cpu_milli\": 10000, \"memory_mib\": "
                  "10000, \"gpu_mode\": \"mig-dynamic\"}");
  trace t;
  new_trace(&t, "big.csv");
  tu_add_job(&t, "small", 0, 10, 1, 100, NULL);
  tu_add_job(&t, "whole", 0, 10, 1, 1000, NULL);
  sim_result r;
  ck_assert_int_eq(run_opts(&sc, &t, "mig-aware", SIM_MIG_MAP_BOTH, NULL, &r,
                            err, sizeof err),
                   -1);
  ck_assert_msg(strstr(err, "big.csv:3: job whole: no MIG profile") &&
                    strstr(err, "gpu_milli=1000") && strstr(err, "X7"),
                "%s", err);
  /* A job that maps to 2g (none) takes the 3g instead: satisfiable. */
  trace_free(&t);
  new_trace(&t, "ok.csv");
  tu_add_job(&t, "mid", 0, 10, 1, 200, NULL);
  ck_assert_int_eq(run_opts(&sc, &t, "mig-aware", SIM_MIG_MAP_BOTH, NULL, &r,
                            err, sizeof err),
                   0);
  ck_assert_int_eq(r.mig->kind[0], LSCHED_MIG_3G);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static const char *write_file(const char *dir, const char *name,
                              const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  return path;
}

START_TEST(requests_file) {
  sim_cluster sc;
  cluster_ok(&sc,
             "{\"name\": \"a40\", \"count\": 1, \"gpu_model\": \"A100-40GB\", "
             "\"gpus_per_node\": 1, \"cpu_milli\": 10000, \"memory_mib\": "
             "10000, \"gpu_mode\": \"mig-dynamic\"}, {\"name\": \"a80\", "
             "\"count\": 1, \"gpu_model\": \"A100-80GB\", \"gpus_per_node\": 1, "
             "\"cpu_milli\": 10000, \"memory_mib\": 10000, \"gpu_mode\": "
             "\"mig-dynamic\"}");
  trace t;
  new_trace(&t, "jobs.csv");
  tu_add_job(&t, "p", 0, 10, 1, 100, NULL);
  tu_add_job(&t, "q", 0, 10, 1, 100, NULL);
  tu_add_job(&t, "r", 0, 10, 1, 100, NULL);
  const char *dir = testutil_tmpdir();
  /* By profile name: 1g.10gb is the 1g-2x kind on A100-40GB (9.62 GiB) and
   * 1g on A100-80GB (9.5 GiB): p lands on the 40 GB node as a 1g-2x. By
   * memory and compute: 30 GiB, a quarter of the compute -> 3g.40gb on the
   * 80 GB node only. */
  const char *req =
      write_file(dir, "req.csv",
                 "job,profile,gpu_memory_gib,compute_fraction\n"
                 "p,1g.10gb,,\n"
                 "q,,30,0.25\n");
  sim_result r;
  char err[1024];
  ck_assert_msg(run_opts(&sc, &t, "mig-first-fit", SIM_MIG_MAP_BOTH, req, &r,
                         err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(r.js[0].node, 0);
  ck_assert_int_eq(r.mig->kind[0], LSCHED_MIG_1G_2X);
  ck_assert_int_eq(r.js[1].node, 1);
  ck_assert_int_eq(r.mig->kind[1], LSCHED_MIG_3G);
  ck_assert_int_eq(r.mig->kind[2], LSCHED_MIG_1G); /* mapped: 100 milli */
  sim_result_free(&r);
  /* Unsatisfiable: 90 GiB. */
  req = write_file(dir, "req2.csv",
                   "job,profile,gpu_memory_gib,compute_fraction\n"
                   "p,,10,\n"
                   "r,,90,0.5\n");
  ck_assert_int_eq(run_opts(&sc, &t, "mig-aware", SIM_MIG_MAP_BOTH, req, &r,
                            err, sizeof err),
                   -1);
  ck_assert_msg(strstr(err, "jobs.csv:4: job r: no MIG profile") &&
                    strstr(err, "90.00 GiB") && strstr(err, "A100-SXM4-80GB"),
                "%s", err);
  /* Unknown profile, unknown job, bad header. */
  req = write_file(dir, "req3.csv",
                   "job,profile,gpu_memory_gib,compute_fraction\n"
                   "q,5g.50gb,,\n");
  ck_assert_int_eq(run_opts(&sc, &t, "mig-aware", SIM_MIG_MAP_BOTH, req, &r,
                            err, sizeof err),
                   -1);
  ck_assert_msg(strstr(err, "req3.csv:2: field 'profile': job q") &&
                    strstr(err, "'5g.50gb' is not a MIG profile"),
                "%s", err);
  req = write_file(dir, "req4.csv",
                   "job,profile,gpu_memory_gib,compute_fraction\n"
                   "zz,1g.10gb,,\n");
  ck_assert_int_eq(run_opts(&sc, &t, "mig-aware", SIM_MIG_MAP_BOTH, req, &r,
                            err, sizeof err),
                   -1);
  ck_assert_msg(strstr(err, "req4.csv:2: field 'job': no job 'zz'"), "%s",
                err);
  req = write_file(dir, "req5.csv", "job,kind\n");
  ck_assert_int_eq(run_opts(&sc, &t, "mig-aware", SIM_MIG_MAP_BOTH, req, &r,
                            err, sizeof err),
                   -1);
  ck_assert_msg(strstr(err, "req5.csv:1: expected the header"), "%s", err);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

START_TEST(outputs) {
  sim_cluster sc;
  cluster_ok(&sc, "{\"name\": \"n\", \"count\": 1, \"gpu_model\": "
                  "\"A100-80GB\", \"gpus_per_node\": 2, \"cpu_milli\": 10000, "
                  "\"memory_mib\": 10000, \"gpu_mode\": \"mig-dynamic\"}");
  trace t;
  new_trace(&t, "o.csv");
  tu_add_job(&t, "A", 0, 10, 1, 100, NULL);
  tu_add_job(&t, "B", 0, 10, 2, 1000, NULL);
  tu_add_job(&t, "Z", 0, 10, 0, 0, NULL);
  sim_result r;
  run_ok(&sc, &t, "mig-aware", &r);
  const char *dir = testutil_tmpdir();
  char path[512], err[512], buf[8192];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  run_meta meta = {"replay", "mig-aware", "fifo", 1, "o.csv", "n", 1, 2};
  ck_assert_int_eq(write_summary_json(path, &meta, &r, err, sizeof err), 0);
  FILE *f = fopen(path, "r");
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  static const char *const keys[] = {
      "\"mig\":",          "\"slice_util_mean\":", "\"frag_slices_mean\":",
      "\"jobs_placed\":",  "\"instances_in_use_mean\":", "\"1g-2x\":",
      "\"reconfig_wait_s\":", "\"per_job_hour\":", "\"running_jobs_mean\":",
      "\"gpu_used_ratio_mean\":", "\"map\":\t\"both\""};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    ck_assert_msg(strstr(buf, keys[i]), "summary.json lacks %s", keys[i]);
  /* jobs.csv as `schedsim run` writes it: rows from the replay's job
   * sink. */
  snprintf(path, sizeof path, "%s/jobs.csv", dir);
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  write_jobs_header(f, 0);
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = "mig-aware";
  o.queue = SIM_QUEUE_FIFO;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.mig_map = SIM_MIG_MAP_BOTH;
  jobs_sink js = {f, &sc};
  o.on_job = write_row;
  o.on_job_user = &js;
  sim_result r2;
  ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r2, err, sizeof err), 0);
  ck_assert_ptr_null(r2.js);
  sim_result_free(&r2);
  fclose(f);
  f = fopen(path, "r");
  n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  ck_assert_msg(strstr(buf, "lost_gpu_seconds,mig_instance,mig_reconfig_s,"
                            "class,gpu_model,work_gpu_s,cost_usd\n"),
                "%s", buf);
  ck_assert_msg(strstr(buf, ",7g@0,"), "%s", buf);
  /* Z (no GPU) waits behind B in the fifo queue and has no instance. */
  ck_assert_msg(strstr(buf, "\nZ,0,15,25,n,,0,15,25,completed,0,0,0,,,,"
                            "A100-SXM4-80GB,0.000000,0.000000\n"),
                "%s", buf);
  /* No speed model: work = 10 s x its asked 100 milli; cost = $5.12 x
   * the instance's 142 milli x 10 s. */
  ck_assert_msg(strstr(buf, "\nA,0,5,15,n,0,142,5,15,completed,0,0,0,1g@0,5,,"
                            "A100-SXM4-80GB,1.000000,0.002020\n"),
                "%s", buf);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("mig_sim");
  TCase *tc = tcase_create("mig_sim");
  tcase_add_checked_fixture(tc, load_catalog, free_catalog);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, catalog_profiles);
  tcase_add_test(tc, catalog_rejects_bad_profiles);
  tcase_add_test(tc, catalog_profiles_from_libsched);
  tcase_add_test(tc, spec_modes_and_errors);
  tcase_add_test(tc, trace_mapping);
  tcase_add_test(tc, reconfig_per_gpu_hand);
  tcase_add_test(tc, reconfig_node_scope_hand);
  tcase_add_test(tc, static_layout_replay);
  tcase_add_test(tc, mixed_cluster_both_variants);
  tcase_add_test(tc, unsatisfiable_request_is_an_error);
  tcase_add_test(tc, requests_file);
  tcase_add_test(tc, outputs);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
