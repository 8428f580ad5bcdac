/* Migration planning (defrag policy): known plans on hand-built clusters,
 * budgets, cost vs expected gain, exact restore. */
#include "testutil.h"

#include <libsched/libsched.h>
#include <libsched/migrate.h>
#include <string.h>

static lsched_cluster *c;
static lsched_registry *reg;
static lsched_policy *pol;
static lsched_placement held[8];
static lsched_running run[8];

static void setup(void) {
  ck_assert_int_eq(lsched_cluster_create(&c, NULL), LSCHED_OK);
  int m = lsched_cluster_model_id(c, "A100", 1);
  for (int i = 0; i < 3; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = 32000;
    s.memory_mib = 65536;
    s.gpu_count = 4;
    s.gpu_model = m;
    ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), LSCHED_OK);
  }
  ck_assert_int_eq(lsched_registry_create(&reg, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(reg), LSCHED_OK);
  ck_assert_int_eq(
      lsched_policy_create(&pol, c, lsched_registry_find(reg, "defrag")),
      LSCHED_OK);
  /* Two 1-GPU jobs on each node (GPUs 0 and 1): every node has 2 GPUs
   * free, 6 in all, yet no node can take a 4-GPU job. Move costs (s):
   * node 0: 5 and 5, node 1: 20 and 20, node 2: 30 and 30. */
  static const double cost[6] = {5, 5, 20, 20, 30, 30};
  for (int k = 0; k < 6; k++) {
    lsched_request r = LSCHED_REQUEST_INIT;
    r.cpu_milli = 1000;
    r.memory_mib = 1000;
    r.gpu_count = 1;
    r.gpu_milli = 1000;
    ck_assert_int_eq(lsched_pick_gpus(c, k / 2, &r, LSCHED_PICK_LOWEST,
                                      &held[k]),
                     LSCHED_OK);
    ck_assert_int_eq(lsched_alloc(c, &held[k]), LSCHED_OK);
    run[k].id = 100 + (uint64_t)k;
    run[k].request = r;
    run[k].parts = &held[k];
    run[k].nparts = 1;
    run[k].move_cost_s = cost[k];
    run[k].moves = 0;
  }
}

static void teardown(void) {
  lsched_policy_destroy(pol);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}

static lsched_request waiting4(void) {
  lsched_request w = LSCHED_REQUEST_INIT;
  w.cpu_milli = 4000;
  w.memory_mib = 4000;
  w.gpu_count = 4;
  w.gpu_milli = 1000;
  return w;
}

static void snapshot(int *out) {
  for (int n = 0; n < 3; n++)
    for (int g = 0; g < 4; g++)
      out[n * 4 + g] = lsched_cluster_gpu_free(c, n, g);
}

START_TEST(two_moves_free_the_cheapest_node) {
  lsched_request w = waiting4();
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  b.max_moves = 2;
  b.expected_wait_s = 100;
  lsched_move mv[8];
  size_t n = 99;
  int before[12], after[12];
  snapshot(before);
  ck_assert_int_eq(lsched_policy_plan_migrations(pol, &w, run, 6, &b, mv, 8, &n),
                   LSCHED_OK);
  snapshot(after);
  ck_assert(memcmp(before, after, sizeof before) == 0); /* planning undone */
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  /* Node 0 (cost 5 + 5) is freed; best-fit puts both jobs on node 1 (the
   * tightest node once node 0 is reserved, earliest on ties). */
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(mv[0].index, 0);
  ck_assert_uint_eq(mv[1].index, 1);
  ck_assert_int_eq(mv[0].from.node, 0);
  ck_assert_int_eq(mv[0].to.node, 1);
  ck_assert_int_eq(mv[1].to.node, 1);
  ck_assert_uint_ne(mv[0].to.gpu_mask, mv[1].to.gpu_mask);
  /* Applying the plan as documented makes the waiting job fit node 0,
   * never over-committing on the way. */
  for (size_t k = 0; k < n; k++)
    ck_assert_int_eq(lsched_release(c, &mv[k].from), LSCHED_OK);
  for (size_t k = 0; k < n; k++) {
    ck_assert_int_eq(lsched_alloc(c, &mv[k].to), LSCHED_OK);
    ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  }
  lsched_placement wp;
  ck_assert_int_eq(lsched_policy_place(pol, &w, &wp), LSCHED_OK);
  ck_assert_int_eq(wp.node, 0);
}
END_TEST

START_TEST(budgets_respected) {
  lsched_request w = waiting4();
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  lsched_move mv[8];
  size_t n;
  /* One move per decision cannot free any node. */
  b.max_moves = 1;
  b.expected_wait_s = 1e6;
  ck_assert_int_eq(lsched_policy_plan_migrations(pol, &w, run, 6, &b, mv, 8, &n),
                   LSCHED_ENOFIT);
  /* Cost 10 GPU-s (node 0) must stay below wait x 4 GPUs: 2 s is not
   * worth it, 3 s is. */
  b.max_moves = 2;
  b.expected_wait_s = 2;
  ck_assert_int_eq(lsched_policy_plan_migrations(pol, &w, run, 6, &b, mv, 8, &n),
                   LSCHED_ENOFIT);
  b.expected_wait_s = 3;
  ck_assert_int_eq(lsched_policy_plan_migrations(pol, &w, run, 6, &b, mv, 8, &n),
                   LSCHED_OK);
  ck_assert_int_eq(mv[0].from.node, 0);
  /* A job already moved once (K = 1) stays: node 0 is out, node 1 (cost
   * 40 GPU-s) is next. */
  run[0].moves = 1;
  b.expected_wait_s = 1e6;
  ck_assert_int_eq(lsched_policy_plan_migrations(pol, &w, run, 6, &b, mv, 8, &n),
                   LSCHED_OK);
  ck_assert_uint_eq(n, 2);
  ck_assert_int_eq(mv[0].from.node, 1);
  for (size_t k = 0; k < n; k++)
    ck_assert_uint_ne(mv[k].index, 0);
  /* Unknown expected wait: no plan. */
  b.expected_wait_s = -1;
  ck_assert_int_eq(lsched_policy_plan_migrations(pol, &w, run, 6, &b, mv, 8, &n),
                   LSCHED_ENOFIT);
  /* A job that fits needs no move. */
  lsched_request small = waiting4();
  small.gpu_count = 2;
  ck_assert_int_eq(
      lsched_policy_plan_migrations(pol, &small, run, 6, &b, mv, 8, &n),
      LSCHED_OK);
  ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(other_policies_do_not_plan) {
  lsched_policy *ff;
  ck_assert_int_eq(
      lsched_policy_create(&ff, c, lsched_registry_find(reg, "first-fit")),
      LSCHED_OK);
  lsched_request w = waiting4();
  lsched_move mv[4];
  size_t n;
  ck_assert_int_eq(lsched_policy_plan_migrations(ff, &w, run, 6, NULL, mv, 4, &n),
                   LSCHED_ENOENT);
  lsched_policy_destroy(ff);
  /* base can be changed; defrag itself or an unknown name cannot be. */
  ck_assert_int_eq(lsched_policy_set_param(pol, "base", "first-fit"), LSCHED_OK);
  ck_assert_int_eq(lsched_policy_set_param(pol, "base", "defrag"), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_set_param(pol, "base", "nope"), LSCHED_EINVAL);
}
END_TEST

/* An observer that counts changes, trial or not. */
struct seen {
  int allocs, releases, trial_allocs, trial_releases;
};

static void seen_alloc(void *user, const lsched_cluster *cl,
                       const lsched_placement *p, int trial) {
  (void)cl;
  (void)p;
  struct seen *s = user;
  if (trial)
    s->trial_allocs++;
  else
    s->allocs++;
}

static void seen_release(void *user, const lsched_cluster *cl,
                         const lsched_placement *p, int trial) {
  (void)cl;
  (void)p;
  struct seen *s = user;
  if (trial)
    s->trial_releases++;
  else
    s->releases++;
}

static const lsched_observer seen_ops = {1, seen_alloc, seen_release,
                                         NULL};

START_TEST(planning_is_a_trial_for_observers) {
  struct seen sn = {0, 0, 0, 0};
  ck_assert_int_eq(lsched_cluster_add_observer(c, &seen_ops, &sn), LSCHED_OK);
  lsched_request w = waiting4();
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  b.max_moves = 2;
  b.expected_wait_s = 100;
  lsched_move mv[8];
  size_t n = 0;
  ck_assert_int_eq(lsched_policy_plan_migrations(pol, &w, run, 6, &b, mv, 8, &n),
                   LSCHED_OK);
  ck_assert_uint_eq(n, 2);
  /* Every change the planner made was a trial, and each was undone. */
  ck_assert_int_eq(sn.allocs, 0);
  ck_assert_int_eq(sn.releases, 0);
  ck_assert_int_gt(sn.trial_allocs, 0);
  ck_assert_int_eq(sn.trial_allocs, sn.trial_releases);
  /* Applying the plan is not a trial. */
  for (size_t k = 0; k < n; k++)
    ck_assert_int_eq(lsched_release(c, &mv[k].from), LSCHED_OK);
  for (size_t k = 0; k < n; k++)
    ck_assert_int_eq(lsched_alloc(c, &mv[k].to), LSCHED_OK);
  ck_assert_int_eq(sn.allocs, 2);
  ck_assert_int_eq(sn.releases, 2);
  ck_assert_int_eq(lsched_cluster_remove_observer(c, &seen_ops, &sn),
                   LSCHED_OK);
}
END_TEST

/* "last-node": a policy the test registers itself: the last node in the
 * visit order that fits, lowest GPUs. Public interface only. */
static int last_place(void *state, const lsched_cluster *cl,
                      const lsched_request *req, lsched_placement *out) {
  (void)state;
  const int *order = lsched_cluster_order(cl);
  for (int p = lsched_cluster_node_count(cl) - 1; p >= 0; p--)
    if (lsched_fits(cl, order[p], req))
      return lsched_pick_gpus(cl, order[p], req, LSCHED_PICK_LOWEST, out);
  return LSCHED_ENOFIT;
}

static const lsched_policy_ops last_ops = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "last-node",
    .description = "test policy: last node in order that fits",
    .place = last_place,
};

START_TEST(wraps_a_policy_of_the_callers_registry) {
  ck_assert_int_eq(lsched_registry_add(reg, &last_ops), LSCHED_OK);
  /* An instance made without its registry knows only the built-ins. */
  ck_assert_int_eq(lsched_policy_set_param(pol, "base", "last-node"),
                   LSCHED_EINVAL);
  lsched_policy *d = NULL;
  ck_assert_int_eq(lsched_policy_create_from(&d, c, reg, "no-such"),
                   LSCHED_ENOENT);
  ck_assert_ptr_null(d);
  ck_assert_int_eq(lsched_policy_create_from(&d, c, reg, "defrag"), LSCHED_OK);
  ck_assert_str_eq(lsched_policy_name(d), "defrag");
  ck_assert_int_eq(lsched_policy_set_param(d, "base", "last-node"), LSCHED_OK);
  ck_assert_int_eq(lsched_policy_set_param(d, "base", "defrag"), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_set_param(d, "base", "nope"), LSCHED_EINVAL);
  /* Placement is the registered policy's: node 2, its lowest free GPU. */
  lsched_request one = LSCHED_REQUEST_INIT;
  one.cpu_milli = 1000;
  one.memory_mib = 1000;
  one.gpu_count = 1;
  one.gpu_milli = 1000;
  lsched_placement p;
  ck_assert_int_eq(lsched_policy_place(d, &one, &p), LSCHED_OK);
  ck_assert_int_eq(p.node, 2);
  ck_assert_uint_eq(p.gpu_mask, 0x4);
  /* So are the moved jobs' new places in a plan: node 0 (cheapest) is
   * freed and its two jobs go to the last node that fits, node 2. */
  lsched_request w = waiting4();
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  b.max_moves = 2;
  b.expected_wait_s = 100;
  lsched_move mv[8];
  size_t n = 0;
  ck_assert_int_eq(lsched_policy_plan_migrations(d, &w, run, 6, &b, mv, 8, &n),
                   LSCHED_OK);
  ck_assert_uint_eq(n, 2);
  ck_assert_int_eq(mv[0].from.node, 0);
  ck_assert_int_eq(mv[0].to.node, 2);
  ck_assert_int_eq(mv[1].to.node, 2);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  /* Built-in bases are still found through the caller's registry. */
  ck_assert_int_eq(lsched_policy_set_param(d, "base", "first-fit"), LSCHED_OK);
  ck_assert_int_eq(lsched_policy_place(d, &one, &p), LSCHED_OK);
  ck_assert_int_eq(p.node, 0);
  lsched_policy_destroy(d);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("defrag");
  TCase *tc = tcase_create("plan");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, two_moves_free_the_cheapest_node);
  tcase_add_test(tc, budgets_respected);
  tcase_add_test(tc, other_policies_do_not_plan);
  tcase_add_test(tc, planning_is_a_trial_for_observers);
  tcase_add_test(tc, wraps_a_policy_of_the_callers_registry);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
