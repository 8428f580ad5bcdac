/*
 * The type-aware policies fastest-fit and cheapest-work (policies/
 * fastest_fit.c, issue #13 item 5), the request's speed callback (request
 * version 4) and the per-model price (lsched_cluster_set_model_price), on
 * hand-computed cases: mixed models on shared and exclusive nodes, a
 * fractional share, sharing interference, MIG instances, unknown prices and
 * speeds, every tie rule, old request versions, and the declared speed
 * scope (request version 5: one speed call per model). Public headers only, on
 * the minitest harness (a libsched-only build runs it too). The generic
 * properties every policy must have (a valid placement, or ENOFIT exactly
 * when nothing fits, under every queue) are tests/test_conformance.c's,
 * which runs these two policies as it runs every registered one.
 */
#include "libtest.h"

#include <libsched/libsched.h>
#include <libsched/mig.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

/* A node of 8 CPUs and 64 GiB with `gpus` GPUs of `model`. */
static int add_node(lsched_cluster *c, int gpus, int model,
                    lsched_gpu_mode mode, int mig_dynamic) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 8000;
  s.memory_mib = 65536;
  s.gpu_count = gpus;
  s.gpu_model = model;
  s.gpu_mode = mode;
  s.mig_dynamic = mig_dynamic;
  int id = -1;
  int rc = lsched_cluster_add_node(c, &s, &id);
  MT_ASSERT_MSG(rc == LSCHED_OK, "add_node: %s (%s)", lsched_err_name(rc),
                lsched_cluster_errmsg(c));
  return id;
}

static lsched_request req(int k, int milli) {
  lsched_request r = LSCHED_REQUEST_INIT;
  r.cpu_milli = 1000;
  r.memory_mib = 1024;
  r.gpu_count = k;
  r.gpu_milli = milli;
  return r;
}

/* Takes `milli` of GPU `gpu` of node `node` (a co-runner). */
static lsched_placement hold(lsched_cluster *c, int node, int gpu, int milli) {
  lsched_placement p;
  memset(&p, 0, sizeof p);
  p.node = node;
  p.gpu_count = 1;
  p.gpu_milli = milli;
  p.gpu_mask = UINT64_C(1) << gpu;
  p.cpu_milli = 1000;
  p.memory_mib = 1024;
  OK(lsched_alloc(c, &p));
  return p;
}

/* Speeds per model: user points to double[2] (A100, V100). */
static double speed_by_model(void *user, const lsched_cluster *c,
                             const lsched_placement *pl) {
  const double *s = user;
  lsched_node_info ni;
  if (lsched_cluster_node_info(c, pl->node, &ni) != LSCHED_OK)
    return 0;
  return s[ni.gpu_model];
}

/* Sharing interference: half speed on a GPU someone already uses. */
static double speed_alone(void *user, const lsched_cluster *c,
                          const lsched_placement *pl) {
  (void)user;
  for (int g = 0; g < 64; g++)
    if ((pl->gpu_mask >> g & 1) &&
        lsched_cluster_gpu_free(c, pl->node, g) < LSCHED_GPU_MILLI)
      return 0.5;
  return 1.0;
}

/* A callback that must not be called (old request versions). */
static int never_calls;
static double speed_never(void *user, const lsched_cluster *c,
                          const lsched_placement *pl) {
  (void)user;
  (void)c;
  (void)pl;
  never_calls++;
  return 100;
}

/* `policy` places r: the node and GPU mask it chose ("node:mask"), or
 * "nofit". */
static void place(lsched_cluster *c, const char *policy, lsched_request r,
                  lsched_placement *out) {
  lsched_registry *reg = lt_builtins();
  const lsched_policy_ops *ops = lsched_registry_find(reg, policy);
  MT_ASSERT_MSG(ops != NULL, "policy %s not registered", policy);
  lsched_policy *p = NULL;
  OK(lsched_policy_create(&p, c, ops));
  memset(out, 0, sizeof *out);
  int rc = lsched_policy_place(p, &r, out);
  lsched_policy_destroy(p);
  lsched_registry_destroy(reg);
  MT_ASSERT_MSG(rc == LSCHED_OK, "%s: %s", policy, lsched_err_name(rc));
  /* What it chose can be taken, and given back. */
  OK(lsched_alloc(c, out));
  OK(lsched_release(c, out));
}

#define EXPECT(c, policy, r, want_node, want_mask)                             \
  do {                                                                         \
    lsched_placement got_;                                                     \
    place((c), (policy), (r), &got_);                                          \
    MT_ASSERT_MSG(got_.node == (want_node), "%s chose node %d, want %d",       \
                  (policy), got_.node, (want_node));                           \
    MT_EQ_U(got_.gpu_mask, (uint64_t)(want_mask));                             \
  } while (0)

/* ------------------------------------------------------------- prices */

static void test_model_price(void) {
  lsched_cluster *c = lt_new_cluster();
  MT_ASSERT(isnan(lsched_cluster_model_price(c, A100))); /* unknown */
  OK(lsched_cluster_set_model_price(c, A100, 4.5));
  MT_ASSERT(lsched_cluster_model_price(c, A100) == 4.5);
  OK(lsched_cluster_set_model_price(c, V100, 0));
  MT_ASSERT(lsched_cluster_model_price(c, V100) == 0);
  /* NaN, negative, infinite: unknown again. */
  OK(lsched_cluster_set_model_price(c, A100, NAN));
  MT_ASSERT(isnan(lsched_cluster_model_price(c, A100)));
  OK(lsched_cluster_set_model_price(c, A100, -1));
  MT_ASSERT(isnan(lsched_cluster_model_price(c, A100)));
  OK(lsched_cluster_set_model_price(c, A100, INFINITY));
  MT_ASSERT(isnan(lsched_cluster_model_price(c, A100)));
  /* Bad ids. */
  MT_EQ(lsched_cluster_set_model_price(c, 2, 1.0), LSCHED_EINVAL);
  MT_EQ(lsched_cluster_set_model_price(c, -1, 1.0), LSCHED_EINVAL);
  MT_EQ(lsched_cluster_set_model_price(NULL, 0, 1.0), LSCHED_EINVAL);
  MT_ASSERT(isnan(lsched_cluster_model_price(c, 7)));
  MT_ASSERT(isnan(lsched_cluster_model_price(NULL, 0)));
  lsched_cluster_destroy(c);
}

static void test_request_versions(void) {
  lsched_request r = req(1, 500);
  MT_EQ(r.version, 5u);
  MT_ASSERT(r.speed == NULL && r.speed_user == NULL);
  MT_EQ(r.speed_scope, LSCHED_SPEED_ANY);
  OK(lsched_request_validate(&r));
  r.speed_scope = 3; /* not a scope */
  MT_EQ(lsched_request_validate(&r), LSCHED_EINVAL);
  r.version = 4; /* speed_scope is not read before version 5 */
  OK(lsched_request_validate(&r));
  r.speed_scope = 0;
  r.version = 3;
  OK(lsched_request_validate(&r));
  r.version = 6;
  MT_EQ(lsched_request_validate(&r), LSCHED_EINVAL);
  /* A version-3 request's speed members are not read: a callback left
   * there by a caller of the old layout is never called. */
  lsched_cluster *c = lt_new_cluster();
  add_node(c, 2, A100, LSCHED_GPU_SHARED, 0);
  int n1 = add_node(c, 2, V100, LSCHED_GPU_SHARED, 0);
  hold(c, n1, 0, 500); /* node 1 is the tighter: best-fit's choice */
  r = req(1, 500);
  r.version = 3;
  r.speed = speed_never;
  never_calls = 0;
  EXPECT(c, "fastest-fit", r, n1, 1);
  EXPECT(c, "cheapest-work", r, n1, 1);
  MT_EQ(never_calls, 0);
  lsched_cluster_destroy(c);
}

/* ------------------------------------------------------- speed scope */

/* Speeds per model (A100, V100), counting the calls. */
struct counted {
  double s[2];
  int calls;
};
static double speed_counted(void *user, const lsched_cluster *c,
                            const lsched_placement *pl) {
  struct counted *x = user;
  x->calls++;
  lsched_node_info ni;
  if (lsched_cluster_node_info(c, pl->node, &ni) != LSCHED_OK)
    return 0;
  return x->s[ni.gpu_model];
}

/* speed_scope (request version 5): the same answers as the scan, with one
 * speed call per model (by model) or none (constant, fastest-fit) instead
 * of one per fitting node. Four shared 2-GPU nodes A100, V100, A100, V100;
 * nodes 0 and 3 hold 500 of GPU 0 (the tightest, best-fit's tie: node 0,
 * the earlier). */
static void test_speed_scope(void) {
  lsched_cluster *c = lt_new_cluster();
  int n0 = add_node(c, 2, A100, LSCHED_GPU_SHARED, 0);
  add_node(c, 2, V100, LSCHED_GPU_SHARED, 0);
  add_node(c, 2, A100, LSCHED_GPU_SHARED, 0);
  int n3 = add_node(c, 2, V100, LSCHED_GPU_SHARED, 0);
  hold(c, n0, 0, 500);
  hold(c, n3, 0, 500);
  struct counted x = {{1.0, 2.0}, 0};
  lsched_request r = req(1, 500);
  r.speed = speed_counted;
  r.speed_user = &x;
  /* Any: a call per fitting node; V100 the faster: node 3, GPU 0. */
  EXPECT(c, "fastest-fit", r, n3, 1);
  MT_EQ(x.calls, 4);
  x.calls = 0;
  r.speed_scope = LSCHED_SPEED_BY_MODEL;
  EXPECT(c, "fastest-fit", r, n3, 1);
  MT_EQ(x.calls, 2);
  /* Equal speeds by model: best-fit's node 0. */
  x.s[1] = 1.0;
  x.calls = 0;
  EXPECT(c, "fastest-fit", r, n0, 1);
  MT_EQ(x.calls, 2);
  /* Constant (it is: 1 everywhere now): never asked. */
  r.speed_scope = LSCHED_SPEED_CONSTANT;
  x.calls = 0;
  EXPECT(c, "fastest-fit", r, n0, 1);
  MT_EQ(x.calls, 0);
  /* cheapest-work, A100 $4, V100 $1 per GPU-hour, V100 twice as fast:
   * 4 x 0.5 / 1 = 2 against 1 x 0.5 / 2 = 0.25: node 3 (the tighter V100),
   * one call per model. */
  OK(lsched_cluster_set_model_price(c, A100, 4.0));
  OK(lsched_cluster_set_model_price(c, V100, 1.0));
  x.s[1] = 2.0;
  r.speed_scope = LSCHED_SPEED_BY_MODEL;
  x.calls = 0;
  EXPECT(c, "cheapest-work", r, n3, 1);
  MT_EQ(x.calls, 2);
  /* A100 8 times as fast: 4 x 0.5 / 8 = 0.25, a tie on cost; then the
   * higher speed: node 0. */
  x.s[0] = 8.0;
  x.calls = 0;
  EXPECT(c, "cheapest-work", r, n0, 1);
  MT_EQ(x.calls, 2);
  /* Version 4 never reads the scope: every node is asked. */
  r.version = 4;
  x.calls = 0;
  EXPECT(c, "cheapest-work", r, n0, 1);
  MT_EQ(x.calls, 4);
  lsched_cluster_destroy(c);
}

/* ------------------------------------------------------- fastest-fit */

static void test_fastest_fit(void) {
  lsched_cluster *c = lt_new_cluster();
  int n0 = add_node(c, 2, A100, LSCHED_GPU_SHARED, 0);
  int n1 = add_node(c, 2, V100, LSCHED_GPU_SHARED, 0);
  hold(c, n0, 0, 500);
  /* Without a callback every speed is 1: best-fit's choice, node 0 (the
   * tighter, 1.5 of 2 GPUs free) and on it the tightest GPU that fits,
   * GPU 0 (500 free). */
  lsched_request r = req(1, 500);
  EXPECT(c, "best-fit", r, n0, 1);
  EXPECT(c, "fastest-fit", r, n0, 1);
  /* V100 twice as fast as A100 here: node 1, its GPU 0 (all free, the
   * lowest index among equals). */
  double s[2] = {1.0, 2.0};
  r.speed = speed_by_model;
  r.speed_user = s;
  EXPECT(c, "fastest-fit", r, n1, 1);
  /* Equal speeds: best-fit again. */
  s[1] = 1.0;
  EXPECT(c, "fastest-fit", r, n0, 1);
  /* A speed that is not > 0 (NaN, 0, negative) is the slowest: node 0 at
   * 1e-9 beats node 1 at NaN, and node 1 at 0 beats nothing. */
  s[0] = 1e-9;
  s[1] = NAN;
  EXPECT(c, "fastest-fit", r, n0, 1);
  s[0] = -3;
  s[1] = 0;
  EXPECT(c, "fastest-fit", r, n0, 1); /* both count as 0: best-fit */
  lsched_cluster_destroy(c);
}

/* Sharing interference on shared nodes: best-fit packs the job onto the
 * half-used GPU, fastest-fit takes the empty one where it runs alone. */
static void test_fastest_fit_interference(void) {
  lsched_cluster *c = lt_new_cluster();
  int n0 = add_node(c, 1, A100, LSCHED_GPU_SHARED, 0);
  int n1 = add_node(c, 1, A100, LSCHED_GPU_SHARED, 0);
  hold(c, n0, 0, 500);
  lsched_request r = req(1, 500);
  EXPECT(c, "best-fit", r, n0, 1);
  r.speed = speed_alone;
  EXPECT(c, "fastest-fit", r, n1, 1);
  lsched_cluster_destroy(c);
}

/* Ties: equal speed and equal best-fit score go to the earliest node in
 * the visit order. */
static void test_fastest_fit_ties(void) {
  lsched_cluster *c = lt_new_cluster();
  int n0 = add_node(c, 2, A100, LSCHED_GPU_SHARED, 0);
  int n1 = add_node(c, 2, A100, LSCHED_GPU_SHARED, 0);
  lsched_request r = req(1, 500);
  EXPECT(c, "fastest-fit", r, n0, 1);
  EXPECT(c, "cheapest-work", r, n0, 1);
  const int rev[2] = {1, 0};
  OK(lsched_cluster_set_order(c, rev, 2));
  EXPECT(c, "fastest-fit", r, n1, 1);
  EXPECT(c, "cheapest-work", r, n1, 1);
  lsched_cluster_destroy(c);
}

/* ----------------------------------------------------- cheapest-work */

static void test_cheapest_work(void) {
  lsched_cluster *c = lt_new_cluster();
  int n0 = add_node(c, 2, A100, LSCHED_GPU_SHARED, 0);
  int n1 = add_node(c, 2, V100, LSCHED_GPU_SHARED, 0);
  hold(c, n0, 0, 500); /* best-fit prefers node 0 */
  OK(lsched_cluster_set_model_price(c, A100, 4.0));
  OK(lsched_cluster_set_model_price(c, V100, 3.0));
  lsched_request r = req(1, 500);
  /* Speed 1: node 0 costs 4 x 0.5 = 2, node 1 3 x 0.5 = 1.5: node 1. */
  EXPECT(c, "cheapest-work", r, n1, 1);
  /* A100 three times as fast: 4 x 0.5 / 3 = 0.667 < 1.5: node 0. */
  double s[2] = {3.0, 1.0};
  r.speed = speed_by_model;
  r.speed_user = s;
  EXPECT(c, "cheapest-work", r, n0, 1);
  /* Equal cost (4 x 0.5 / 4 = 0.5 = 3 x 0.5 / 3): the faster, node 0 ... */
  s[0] = 4.0;
  s[1] = 3.0;
  EXPECT(c, "cheapest-work", r, n0, 1);
  /* ... and at equal cost and speed, best-fit's choice (node 0). */
  OK(lsched_cluster_set_model_price(c, V100, 4.0));
  s[1] = 4.0;
  EXPECT(c, "cheapest-work", r, n0, 1);
  r.speed = NULL;
  /* An unknown price is never cheaper than a known one: V100 unknown, the
   * A100 node even at a high price. */
  OK(lsched_cluster_set_model_price(c, A100, 1000.0));
  OK(lsched_cluster_set_model_price(c, V100, NAN));
  EXPECT(c, "cheapest-work", r, n0, 1);
  /* Both unknown: by speed, then as best-fit. */
  OK(lsched_cluster_set_model_price(c, A100, NAN));
  EXPECT(c, "cheapest-work", r, n0, 1);
  r.speed = speed_by_model;
  s[0] = 1.0;
  s[1] = 2.0;
  EXPECT(c, "cheapest-work", r, n1, 1);
  /* A known price but a speed that is not > 0: an unknown cost. */
  OK(lsched_cluster_set_model_price(c, A100, 1.0));
  OK(lsched_cluster_set_model_price(c, V100, 100.0));
  s[0] = NAN;
  s[1] = 1.0;
  EXPECT(c, "cheapest-work", r, n1, 1);
  lsched_cluster_destroy(c);
}

/* GPUs taken: an exclusive GPU is taken whole, a shared one by milli. */
static void test_cheapest_work_exclusive(void) {
  lsched_cluster *c = lt_new_cluster();
  int n0 = add_node(c, 1, A100, LSCHED_GPU_EXCLUSIVE, 0);
  int n1 = add_node(c, 1, V100, LSCHED_GPU_SHARED, 0);
  OK(lsched_cluster_set_model_price(c, A100, 1.0));
  OK(lsched_cluster_set_model_price(c, V100, 1.6));
  lsched_request r = req(1, 500);
  /* 1.0 x 1 (whole GPU) = 1.0 against 1.6 x 0.5 = 0.8: node 1. */
  EXPECT(c, "cheapest-work", r, n1, 1);
  /* 2.2 x 0.5 = 1.1 > 1.0: node 0, where the job takes 1000 milli. */
  OK(lsched_cluster_set_model_price(c, V100, 2.2));
  lsched_placement got;
  place(c, "cheapest-work", r, &got);
  MT_EQ(got.node, n0);
  MT_EQ(got.gpu_milli, 1000);
  /* A CPU-only request takes no GPU: cost 0 everywhere, best-fit's node
   * (equal CPU left on both: the first). */
  lsched_request cpu = req(0, 0);
  EXPECT(c, "cheapest-work", cpu, n0, 0);
  lsched_cluster_destroy(c);
}

/* MIG: the instance's compute share is what is taken (1g = 142 milli). */
static void test_mig(void) {
  lsched_cluster *c = lt_new_cluster();
  int n0 = add_node(c, 1, A100, LSCHED_GPU_MIG, 1);
  int n1 = add_node(c, 1, V100, LSCHED_GPU_MIG, 1);
  OK(lsched_cluster_set_model_price(c, A100, 2.0));
  OK(lsched_cluster_set_model_price(c, V100, 3.0));
  lsched_request r = req(1, 0);
  r.mig_kind = LSCHED_MIG_1G;
  /* 2 x 0.142 = 0.284 < 3 x 0.142 = 0.426: node 0, a 1g instance. */
  lsched_placement got;
  place(c, "cheapest-work", r, &got);
  MT_EQ(got.node, n0);
  MT_EQ(got.mig_kind, LSCHED_MIG_1G);
  MT_EQ(got.gpu_milli, 142);
  /* V100 twice as fast: 3 x 0.142 / 2 = 0.213 < 0.284: node 1; and
   * fastest-fit goes there too. */
  double s[2] = {1.0, 2.0};
  r.speed = speed_by_model;
  r.speed_user = s;
  place(c, "cheapest-work", r, &got);
  MT_EQ(got.node, n1);
  MT_EQ(got.mig_kind, LSCHED_MIG_1G);
  place(c, "fastest-fit", r, &got);
  MT_EQ(got.node, n1);
  /* Nothing fits a 7g on a GPU with a 1g taken: the other node. */
  lsched_placement held;
  place(c, "mig-first-fit", r, &held);
  OK(lsched_alloc(c, &held));
  MT_EQ(held.node, n0);
  lsched_request big = req(1, 0);
  big.mig_kind = LSCHED_MIG_7G;
  place(c, "cheapest-work", big, &got);
  MT_EQ(got.node, n1);
  MT_EQ(got.gpu_milli, 1000);
  OK(lsched_release(c, &held));
  lsched_cluster_destroy(c);
}

/* Nothing fits: ENOFIT (ENEVER when nothing ever could). */
static void test_nofit(void) {
  lsched_cluster *c = lt_new_cluster();
  add_node(c, 1, A100, LSCHED_GPU_SHARED, 0);
  lsched_registry *reg = lt_builtins();
  const char *names[2] = {"fastest-fit", "cheapest-work"};
  for (int i = 0; i < 2; i++) {
    lsched_policy *p = NULL;
    OK(lsched_policy_create(&p, c, lsched_registry_find(reg, names[i])));
    lsched_request r = req(2, 1000);
    lsched_placement out;
    MT_EQ(lsched_policy_place(p, &r, &out), LSCHED_ENEVER);
    r = req(1, 600);
    OK(lsched_policy_place(p, &r, &out));
    OK(lsched_alloc(c, &out));
    lsched_placement first = out;
    MT_EQ(lsched_policy_place(p, &r, &out), LSCHED_ENOFIT);
    OK(lsched_release(c, &first));
    lsched_policy_destroy(p);
  }
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}

int main(void) {
  mt_begin("test_typed");
  MT_RUN(test_model_price);
  MT_RUN(test_request_versions);
  MT_RUN(test_speed_scope);
  MT_RUN(test_fastest_fit);
  MT_RUN(test_fastest_fit_interference);
  MT_RUN(test_fastest_fit_ties);
  MT_RUN(test_cheapest_work);
  MT_RUN(test_cheapest_work_exclusive);
  MT_RUN(test_mig);
  MT_RUN(test_nofit);
  return mt_finish();
}
