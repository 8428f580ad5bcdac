/*
 * EASY reservations answered per node (sim/engine/reserve_nodes.c) against
 * the walk over running jobs in order of estimated end (reserve.c,
 * sim_options.reserve_walk, the reference): random workloads on a
 * heterogeneous cluster (8 shared A100 GPUs per node and 4 exclusive H100
 * per node), jobs of many CPU sizes, some restricted to a model, whole-node
 * and gang jobs (cut into parts: those reservations walk), requested times
 * from a third to twice the run time with overdue jobs extended (their
 * ends clamped to now; jobs that end early leave their node's order from
 * anywhere, the others from its front: reserve_nodes.c touch_fr), with and without the speed model (models of
 * different speeds; co-runners re-time each other), under backfill with
 * every reservation checked (check_reservations). Every job's start, end,
 * node, status and first reservation must be the same; the per-node
 * answers must have been used (most reservations) for the policies that
 * promise LSCHED_POLICY_ANY_FIT (defrag through its base best-fit) or
 * LSCHED_POLICY_ANY_FIT_DRAWS (random: the walk then tests fits too, so
 * neither way draws for a reservation and both give the same placements),
 * and a queue must have formed;
 * defrag must have moved jobs, as many either way.
 */
#include "catalog.h"
#include "cli.h"
#include "options.h"
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

static void cluster(sim_cluster *sc) {
  const char *json =
      "{\"name\": \"mixed\", \"node_groups\": ["
      "{\"name\": \"a\", \"count\": 3, \"gpu_model\": \"A100-SXM4-80GB\", "
      "\"gpus_per_node\": 8, \"cpu_milli\": 64000, \"memory_mib\": 640000, "
      "\"gpu_mode\": \"shared\", \"price_per_gpu_hour\": 1},"
      "{\"name\": \"h\", \"count\": 2, \"gpu_model\": \"H100-SXM5-80GB\", "
      "\"gpus_per_node\": 4, \"cpu_milli\": 32000, \"memory_mib\": 320000, "
      "\"gpu_mode\": \"exclusive\", \"price_per_gpu_hour\": 2}]}";
  char err[512];
  ck_assert_msg(sim_cluster_from_json(sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
}

static uint64_t next(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* few: three shapes only (so the same few trees answer in turn, each
 * lagging behind the others' changes), else many. */
static void workload(trace *t, uint64_t seed, int n, int few) {
  static const struct {
    int gpus, milli;
  } shapes[] = {{1, 1000}, {1, 500}, {2, 1000}, {1, 250}, {0, 0},
                {4, 1000}, {8, 1000}, {3, 300},  {16, 1000}};
  static const char *const specs[] = {NULL, NULL, NULL, "A100-SXM4-80GB",
                                      "H100-SXM5-80GB"};
  trace_init(t);
  t->path = strdup("mixed.csv");
  t->has_times = 1;
  uint64_t x = 0x51ED5EED ^ (seed * 7919 + 3);
  int64_t submit = 0;
  for (int k = 0; k < n; k++) {
    uint64_t r = next(&x);
    if (r % 3 == 0)
      submit += (int64_t)((r >> 8) % 40);
    uint64_t p = (r >> 16) % 100;
    int s = p < 30 ? 0 : p < 45 ? 1 : p < 58 ? 2 : p < 66 ? 3 : p < 72 ? 4
          : p < 82 ? 5 : p < 90 ? 6 : p < 97 ? 7 : 8;
    int64_t dur = 20 + (int64_t)((r >> 32) % 500);
    char name[16];
    snprintf(name, sizeof name, "j%d", k);
    if (few)
      s = p % 3 == 0 ? 1 : p % 3 == 1 ? 3 : 2; /* shapes 1, 3 and 2 */
    const char *spec =
        few || s == 8 || s == 6 ? NULL : specs[(r >> 40) % 5];
    tu_add_job(t, name, submit, dur, shapes[s].gpus, shapes[s].milli, spec);
    job_record *j = &t->jobs[t->n - 1];
    j->cpu_milli = few ? 4000 * (int64_t)(1 + s % 2)
                       : 1000 * (int64_t)(1 + (r >> 48) % 12);
    uint32_t req =
        (uint32_t)(dur / 3 + (int64_t)((r >> 52) % (uint64_t)(2 * dur)));
    j->req_s = req ? req : 1;
  }
}

static const char *const policies[] = {
    "first-fit", "best-fit",       "worst-fit", "dot-product",
    "fgd",       "gpu-clustering", "gpu-packing", "random",
    "defrag"}; /* best-fit's promise, and migrations between reservations */
#define NPOL (int)(sizeof policies / sizeof policies[0])

static void run_v(sim_cluster *sc, const trace *t, const sim_options *base,
                  int walk, int verify, sim_result *r) {
  sim_options o = *base;
  o.reserve_walk = walk;
  o.reserve_verify = verify;
  char err[512] = "";
  ck_assert_msg(sim_run(sc, &cat, t, &o, r, err, sizeof err) == 0,
                "%s walk=%d: %s", o.policy, walk, err);
}

static void run(sim_cluster *sc, const trace *t, const sim_options *base,
                int walk, sim_result *r) {
  run_v(sc, t, base, walk, !walk, r); /* every per-node answer walked too */
}

/* The same start, end, node and status for every job. */
static void same_jobs(const sim_result *a, const sim_result *b, size_t n,
                      const char *what) {
  for (size_t j = 0; j < n; j++)
    ck_assert_msg(a->js[j].start_us == b->js[j].start_us &&
                      a->js[j].finish_us == b->js[j].finish_us &&
                      a->js[j].node == b->js[j].node &&
                      a->js[j].status == b->js[j].status,
                  "%s: job %zu: start %lld node %d against %lld node %d",
                  what, j, (long long)a->js[j].start_us, a->js[j].node,
                  (long long)b->js[j].start_us, b->js[j].node);
}

START_TEST(per_node_equals_walk) {
  sim_cluster sc;
  cluster(&sc);
  trace t;
  workload(&t, (uint64_t)_i, 350, 0);
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = policies[_i % NPOL];
  o.queue = SIM_QUEUE_BACKFILL;
  o.seed = 1 + (uint64_t)_i;
  o.unknown_duration_us = -1;
  o.estimates = SIM_EST_TRACE;
  o.overrun = SIM_OVERRUN_EXTEND;
  o.check_reservations = 1;
  o.speed = _i / NPOL ? SIM_SPEED_CATALOG : SIM_SPEED_NONE;
  sim_result a, b;
  run(&sc, &t, &o, 0, &a);
  run(&sc, &t, &o, 1, &b);
  ck_assert_uint_eq(a.jobs, t.n);
  if (strcmp(o.policy, "random") == 0) {
    /* A reservation draws nothing: per node without the verifying walks
     * (a walk that drew would move the generator there only) places as
     * the walk does. */
    sim_result c;
    run_v(&sc, &t, &o, 0, 0, &c);
    same_jobs(&c, &b, t.n, "random, per node unverified vs walk");
    ck_assert_uint_gt(c.reservations_per_node, 500);
    sim_result_free(&c);
  }
  size_t waited = 0;
  for (size_t j = 0; j < t.n; j++) {
    ck_assert_msg(a.js[j].start_us == b.js[j].start_us &&
                      a.js[j].finish_us == b.js[j].finish_us &&
                      a.js[j].node == b.js[j].node &&
                      a.js[j].status == b.js[j].status,
                  "%s: job %zu: per node start %lld end %lld node %d, walk "
                  "start %lld end %lld node %d",
                  o.policy, j, (long long)a.js[j].start_us,
                  (long long)a.js[j].finish_us, a.js[j].node,
                  (long long)b.js[j].start_us, (long long)b.js[j].finish_us,
                  b.js[j].node);
    ck_assert_int_eq(a.reserved_us[j], b.reserved_us[j]);
    waited += b.js[j].start_us > t.jobs[j].submit_us;
  }
  ck_assert_uint_gt(waited, t.n / 4);
  ck_assert_uint_eq(a.migrations_total, b.migrations_total);
  if (strcmp(o.policy, "defrag") == 0 && o.speed == SIM_SPEED_NONE)
    ck_assert_uint_gt(a.migrations_total, 0); /* moves between answers */
  ck_assert_uint_eq(b.reservations_per_node, 0);
  ck_assert_uint_gt(b.reservations_walked, 100);
  if (strcmp(o.policy, "defrag") == 0) {
    /* Its moves unblock heads: a few hundred reservations in all, most
     * of them a shape's first question (walked). */
    ck_assert_uint_gt(a.reservations_per_node, 10);
  } else {
    /* Walked: the first question of each shape, gang heads (often the
     * longest blocked), and (with the speed model) candidates that slow
     * co-runners; 772-4,435 answered per node in these workloads. */
    ck_assert_uint_gt(a.reservations_per_node, 500);
  }
  sim_result_free(&a);
  sim_result_free(&b);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* Three shapes in turn, so each shape's tree lags behind changes the
 * others have replayed (a node's change logged once more after another
 * tree passed it must keep what the first entry said): every answer given
 * per node is walked too (reserve_verify aborts on a difference), under
 * backfill and, for defrag (whose moves ask the head's reservation as
 * its expected wait), fifo. Case 6 also caught defrag parking a node
 * twice under one shape (two blocked jobs of one shape): a heap overflow
 * under ASan. */
START_TEST(few_shapes_verified) {
  static const char *const pol[] = {"first-fit", "fgd", "defrag",
                                    "defrag"};
  sim_cluster sc;
  cluster(&sc);
  trace t;
  workload(&t, 1000 + (uint64_t)_i, 1000, 1);
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = pol[_i % 4];
  o.queue = _i % 4 == 3 ? SIM_QUEUE_FIFO : SIM_QUEUE_BACKFILL;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.estimates = SIM_EST_TRACE;
  o.overrun = SIM_OVERRUN_EXTEND;
  o.speed = SIM_SPEED_NONE;
  sim_result a;
  run(&sc, &t, &o, 0, &a);
  ck_assert_uint_eq(a.jobs, t.n);
  ck_assert_uint_gt(a.reservations_per_node, 100);
  sim_result_free(&a);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* schedsim's defaults on builtin:default (24 nodes, the default 5,000-job
 * workload): defrag under fifo (about a thousand reservations asked as
 * the expected wait of its moves, between which moved jobs' ends move
 * earlier on their old nodes) and backfill, first-fit under backfill;
 * every per-node answer walked too. The first case caught a change log
 * that dropped a "may be earlier" mark when a node was logged again after
 * one tree had replayed it and before another had. */
START_TEST(builtin_default_verified) {
  static const struct {
    const char *policy, *queue;
  } runs[] = {{"defrag", "fifo"}, {"defrag", "backfill"},
              {"first-fit", "backfill"}};
  run_config rc;
  run_config_init(&rc);
  rc.policy[0] = (char *)runs[_i].policy;
  rc.npolicy = 1;
  rc.queue[0] = (char *)runs[_i].queue;
  rc.nqueue = 1;
  rc.speed = SIM_SPEED_NONE;
  sim_options o;
  run_config_sim_options(&rc, &o);
  o.reserve_verify = 1;
  char err[512] = "";
  sim_cluster sc;
  trace t;
  trace_init(&t);
  ck_assert_msg(cli_load_cluster(&sc, "builtin:default", &cat, 1, err,
                                 sizeof err) == 0,
                "%s", err);
  ck_assert_msg(cli_load_trace(&t, "builtin:default", rc.seed, err,
                               sizeof err) == 0,
                "%s", err);
  sim_result a;
  ck_assert_msg(sim_run(&sc, &cat, &t, &o, &a, err, sizeof err) == 0, "%s",
                err);
  ck_assert_uint_eq(a.jobs, t.n);
  ck_assert_uint_gt(a.reservations_per_node, 100);
  if (strcmp(o.policy, "defrag") == 0)
    ck_assert_uint_gt(a.migrations_total, 0);
  sim_result_free(&a);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* Parts the narrow form cannot hold (reserve_nodes.c rx_part_n): a node
 * with 40 GPUs and 3e9 CPU milli and MiB beside the usual ones, and jobs
 * from the middle of the trace on that need more than 2^31 CPU milli or
 * memory, or GPUs 32 and up. Every list turns wide at the first such
 * part, with the lists full of narrow ones; every per-node answer is
 * walked too, and the jobs must start where and when the walk starts
 * them. */
START_TEST(wide_parts_verified) {
  static const char *const pol[] = {"first-fit", "best-fit", "fgd"};
  const char *json =
      "{\"name\": \"wide\", \"node_groups\": ["
      "{\"name\": \"a\", \"count\": 3, \"gpu_model\": \"A100-SXM4-80GB\", "
      "\"gpus_per_node\": 8, \"cpu_milli\": 64000, \"memory_mib\": 640000, "
      "\"gpu_mode\": \"shared\", \"price_per_gpu_hour\": 1},"
      "{\"name\": \"big\", \"count\": 1, \"gpu_model\": \"A100-SXM4-80GB\", "
      "\"gpus_per_node\": 40, \"cpu_milli\": 3000000000, "
      "\"memory_mib\": 3000000000, \"gpu_mode\": \"shared\", "
      "\"price_per_gpu_hour\": 1}]}";
  char err[512];
  sim_cluster sc;
  ck_assert_msg(sim_cluster_from_json(&sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
  trace t;
  workload(&t, 77 + (uint64_t)_i, 600, 0);
  size_t wide = 0;
  for (size_t j = t.n / 2; j < t.n; j += 7) {
    job_record *r = &t.jobs[j];
    if (r->gpu_spec >= 0 || r->num_gpu > 8)
      continue; /* (H100 jobs, 16-GPU gangs: left as they are) */
    switch (j % 3) {
    case 0: /* CPU beyond 31 bits */
      r->cpu_milli = 2200000000;
      break;
    case 1: /* memory beyond 31 bits */
      r->memory_mib = 2500000000;
      break;
    default: /* on GPUs 32 and up of the big node (first-fit's choice) */
      r->num_gpu = 36;
      r->gpu_milli = 1000;
      break;
    }
    wide++;
  }
  ck_assert_uint_gt(wide, 20);
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = pol[_i];
  o.queue = SIM_QUEUE_BACKFILL;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.estimates = SIM_EST_TRACE;
  o.overrun = SIM_OVERRUN_EXTEND;
  o.check_reservations = 1;
  o.speed = SIM_SPEED_NONE;
  sim_result a, b;
  run(&sc, &t, &o, 0, &a);
  run(&sc, &t, &o, 1, &b);
  ck_assert_uint_eq(a.jobs, t.n);
  same_jobs(&a, &b, t.n, o.policy);
  for (size_t j = 0; j < t.n; j++)
    ck_assert_int_eq(a.reserved_us[j], b.reserved_us[j]);
  ck_assert_uint_gt(a.reservations_per_node, 100);
  sim_result_free(&a);
  sim_result_free(&b);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("reserve");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600); /* ASan on a loaded 2-core machine */
  tcase_add_checked_fixture(tc, load_catalog, free_catalog);
  tcase_add_loop_test(tc, per_node_equals_walk, 0, 2 * NPOL);
  tcase_add_loop_test(tc, few_shapes_verified, 0, 8);
  tcase_add_loop_test(tc, builtin_default_verified, 0, 3);
  tcase_add_loop_test(tc, wide_parts_verified, 0, 3);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
