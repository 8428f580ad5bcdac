/*
 * Check suite for libsched: hand-computed placements of the built-in
 * policies, error codes and argument checking, property tests of the exact
 * accounting and of the fit index, the policy registry with an outside
 * policy, and an allocation-failure loop over the library's create paths.
 *
 * Every test that needs a cluster gets a fresh one from the fixture (the
 * suite runs in fork mode, so nothing leaks from one test into another).
 */
#include "internal.h"
/* The built-in tables themselves (white-box: the library does not export
 * them). */
#include "../policies/builtin.h"
#include "testutil.h"

#include <check.h>
#include <libsched/migrate.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Small helpers                                                           */

/* xorshift64: a local, seeded PRNG (no global state). */
struct rng {
  uint64_t s;
};

static void rng_seed(struct rng *r, uint64_t seed) {
  r->s = seed * UINT64_C(0x9E3779B97F4A7C15) + UINT64_C(0x632BE59BD9B4E019);
  if (r->s == 0)
    r->s = 1;
}

static uint64_t rng_next(struct rng *r) {
  uint64_t x = r->s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  r->s = x;
  return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* Uniform-ish in [0, n); 0 when n == 0. */
static uint64_t rng_below(struct rng *r, uint64_t n) {
  return n ? (rng_next(r) >> 11) % n : 0;
}

static int popcount64(uint64_t x) { return __builtin_popcountll(x); }

/* Assertions for hot loops. Unlike ck_assert_*(), they record nothing on
 * success (Check writes a location record per passing assertion in fork
 * mode, which dominates the run time of the property tests). */
#define REQ(cond)                                                              \
  do {                                                                         \
    if (!(cond))                                                               \
      ck_abort_msg("requirement failed: %s", #cond);                           \
  } while (0)
#define REQ_MSG(cond, ...)                                                     \
  do {                                                                         \
    if (!(cond))                                                               \
      ck_abort_msg(__VA_ARGS__);                                               \
  } while (0)
#define REQ_CMP_(x, op, y)                                                     \
  do {                                                                         \
    intmax_t req_x_ = (intmax_t)(x), req_y_ = (intmax_t)(y);                   \
    if (!(req_x_ op req_y_))                                                   \
      ck_abort_msg("%s %s %s failed: %jd vs %jd", #x, #op, #y, req_x_,         \
                   req_y_);                                                    \
  } while (0)
#define REQ_EQ(x, y) REQ_CMP_(x, ==, y)
#define REQ_GE(x, y) REQ_CMP_(x, >=, y)
#define REQ_LE(x, y) REQ_CMP_(x, <=, y)
#define REQ_LT(x, y) REQ_CMP_(x, <, y)

static int add_node_rc(lsched_cluster *c, const char *name, int64_t cpu,
                       int64_t mem, int gpus, int model, lsched_gpu_mode mode,
                       int *id) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.name = name;
  s.cpu_milli = cpu;
  s.memory_mib = mem;
  s.gpu_count = gpus;
  s.gpu_model = model;
  s.gpu_mode = mode;
  return lsched_cluster_add_node(c, &s, id);
}

static int add_node(lsched_cluster *c, const char *name, int64_t cpu,
                    int64_t mem, int gpus, int model, lsched_gpu_mode mode) {
  int id = -1;
  int rc = add_node_rc(c, name, cpu, mem, gpus, model, mode, &id);
  ck_assert_msg(rc == LSCHED_OK, "add_node %s: %s (%s)", name ? name : "-",
                lsched_err_name(rc), lsched_cluster_errmsg(c));
  ck_assert_int_ge(id, 0);
  return id;
}

static void must_alloc(lsched_cluster *c, lsched_placement p) {
  int rc = lsched_alloc(c, &p);
  ck_assert_msg(rc == LSCHED_OK, "alloc on node %d: %s (%s)", p.node,
                lsched_err_name(rc), lsched_cluster_errmsg(c));
}

/* A full copy of everything observable about a cluster's state. */
#define SNAP_MAXN 32
struct snap {
  int n;
  lsched_node_info info[SNAP_MAXN];
  int gpu[SNAP_MAXN][LSCHED_MAX_GPUS_PER_NODE];
  int order[SNAP_MAXN];
  lsched_totals tot;
};

static void snap_take(const lsched_cluster *c, struct snap *s) {
  memset(s, 0, sizeof *s);
  s->n = lsched_cluster_node_count(c);
  REQ_LE(s->n, SNAP_MAXN);
  const int *order = lsched_cluster_order(c);
  for (int i = 0; i < s->n; i++) {
    REQ_EQ(lsched_cluster_node_info(c, i, &s->info[i]), LSCHED_OK);
    for (int g = 0; g < s->info[i].gpu_count; g++) {
      s->gpu[i][g] = lsched_cluster_gpu_free(c, i, g);
      REQ_GE(s->gpu[i][g], 0);
    }
    s->order[i] = order[i];
  }
  lsched_cluster_totals(c, &s->tot);
}

/* Compares the resource state (and the order when with_order is set). */
static void snap_assert_equal(const struct snap *a, const struct snap *b,
                              int with_order) {
  REQ_EQ(a->n, b->n);
  for (int i = 0; i < a->n; i++) {
    const lsched_node_info *x = &a->info[i], *y = &b->info[i];
    REQ(strcmp(x->name, y->name) == 0);
    REQ_EQ(x->cpu_milli, y->cpu_milli);
    REQ_EQ(x->memory_mib, y->memory_mib);
    REQ_EQ(x->cpu_free, y->cpu_free);
    REQ_EQ(x->memory_free, y->memory_free);
    REQ_EQ(x->gpu_count, y->gpu_count);
    REQ_EQ(x->gpu_model, y->gpu_model);
    REQ_EQ(x->gpu_mode, y->gpu_mode);
    REQ_EQ(x->gpus_fully_free, y->gpus_fully_free);
    REQ_EQ(x->gpu_milli_free, y->gpu_milli_free);
    for (int g = 0; g < x->gpu_count; g++)
      REQ_MSG(a->gpu[i][g] == b->gpu[i][g],
              "node %d GPU %d: %d vs %d milli free", i, g, a->gpu[i][g],
              b->gpu[i][g]);
    if (with_order)
      REQ_EQ(a->order[i], b->order[i]);
  }
  REQ_EQ(a->tot.nodes, b->tot.nodes);
  REQ_EQ(a->tot.gpus, b->tot.gpus);
  REQ_EQ(a->tot.cpu_free, b->tot.cpu_free);
  REQ_EQ(a->tot.memory_free, b->tot.memory_free);
  REQ_EQ(a->tot.gpu_milli_free, b->tot.gpu_milli_free);
}

static void assert_unchanged(const lsched_cluster *c,
                             const struct snap *before) {
  struct snap now;
  snap_take(c, &now);
  snap_assert_equal(before, &now, 1);
  REQ_EQ(lsched_cluster_check(c), LSCHED_OK);
}

/* Places req with the named built-in policy through a fresh registry and a
 * fresh policy instance (both destroyed before returning). */
static int place_with(lsched_cluster *c, const char *policy,
                      const lsched_request *req, lsched_placement *out) {
  lsched_registry *r = NULL;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  const lsched_policy_ops *ops = lsched_registry_find(r, policy);
  ck_assert_msg(ops != NULL, "policy %s not registered", policy);
  lsched_policy *p = NULL;
  ck_assert_int_eq(lsched_policy_create(&p, c, ops), LSCHED_OK);
  ck_assert_str_eq(lsched_policy_name(p), policy);
  memset(out, 0xA5, sizeof *out);
  int rc = lsched_policy_place(p, req, out);
  lsched_policy_destroy(p);
  lsched_registry_destroy(r);
  return rc;
}

/* Asserts that `policy` places req on `node` with exactly mask/milli, and
 * that the placement is then accepted by lsched_alloc (and released again,
 * leaving the state as it was). */
static void expect_place(lsched_cluster *c, const char *policy,
                         const lsched_request *req, int node, uint64_t mask,
                         int milli) {
  lsched_placement p;
  int rc = place_with(c, policy, req, &p);
  ck_assert_msg(rc == LSCHED_OK, "%s: %s", policy, lsched_err_name(rc));
  ck_assert_msg(p.node == node, "%s chose node %d, expected %d", policy, p.node,
                node);
  ck_assert_msg(p.gpu_mask == mask, "%s chose GPU mask %#llx, expected %#llx",
                policy, (unsigned long long)p.gpu_mask,
                (unsigned long long)mask);
  ck_assert_msg(p.gpu_milli == milli, "%s: milli %d, expected %d", policy,
                p.gpu_milli, milli);
  ck_assert_int_eq(p.gpu_count, req->gpu_count);
  ck_assert_int_eq(p.cpu_milli, req->cpu_milli);
  ck_assert_int_eq(p.memory_mib, req->memory_mib);
  struct snap before;
  snap_take(c, &before);
  ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_OK);
  ck_assert_int_eq(lsched_release(c, &p), LSCHED_OK);
  assert_unchanged(c, &before);
}

static void expect_nofit(lsched_cluster *c, const char *policy,
                         const lsched_request *req) {
  lsched_placement p;
  struct snap before;
  snap_take(c, &before);
  int rc = place_with(c, policy, req, &p);
  /* ENEVER when no node could ever hold it (issue #16), else ENOFIT. */
  int want = lsched_can_ever_fit(c, req) ? LSCHED_ENOFIT : LSCHED_ENEVER;
  ck_assert_msg(rc == want, "%s: %s, expected %s", policy,
                lsched_err_name(rc), lsched_err_name(want));
  ck_assert_str_ne(lsched_cluster_errmsg(c), "");
  assert_unchanged(c, &before);
}

/* ---------------------------------------------------------------------- */
/* Fixture: a fresh cluster with two GPU models per test                   */

static lsched_cluster *fx;
enum { A100 = 0, V100 = 1 };

static void fx_setup(void) {
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.check_invariants = 1;
  ck_assert_int_eq(lsched_cluster_create(&fx, &o), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_model_id(fx, "A100", 1), A100);
  ck_assert_int_eq(lsched_cluster_model_id(fx, "V100", 1), V100);
}

static void fx_teardown(void) {
  lsched_cluster_destroy(fx);
  fx = NULL;
}

/* Three shared nodes with 4 A100 each, 32 cores and 256 GiB. */
static void fx_three_shared(void) {
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof name, "n%d", i);
    ck_assert_int_eq(
        add_node(fx, name, 32000, 262144, 4, A100, LSCHED_GPU_SHARED), i);
  }
}

/* ---------------------------------------------------------------------- */
/* Hand-computed placements                                                */

/*
 * Notation for the hand computations below: A = largest node CPU capacity,
 * B = 1000 x largest node GPU count, a = CPU left on the node after the
 * request, b = GPU milli left. leftover = a/(2A) + b/(2B).
 * best-fit score = floor(100 (1 - leftover)), worst-fit = floor(100 leftover);
 * the normalisation (s - lo) x 100 / (hi - lo) keeps the order of the scores.
 */

START_TEST(test_hand_mixed_state) {
  fx_three_shared();
  /* n0: 8 cores and half of GPU0 used -> CPU free 24000, GPUs 500/1000x3. */
  must_alloc(fx, mkpl(0, 8000, 0, 1, 500, 0x1));
  /* n1: 16 cores, GPU0 and GPU1 whole, 300 of GPU2 -> CPU free 16000,
   * GPUs 0/0/700/1000 (sum 1700). */
  must_alloc(fx, mkpl(1, 16000, 0, 2, 1000, 0x3));
  must_alloc(fx, mkpl(1, 0, 0, 1, 300, 0x4));
  /* n2 untouched: CPU 32000, GPUs 1000x4. A = 32000, B = 4000. */

  /* Request: 4 cores, 1 GiB, 1 GPU x 500.
   * n0: a = 20000, b = 3500 - 500 = 3000:
   *     leftover = 20000/64000 + 3000/8000 = 0.3125 + 0.375 = 0.6875
   *     best = floor(31.25) = 31, worst = floor(68.75) = 68
   * n1: a = 12000, b = 1700 - 500 = 1200:
   *     leftover = 0.1875 + 0.15 = 0.3375 -> best 66, worst 33
   * n2: a = 28000, b = 3500: leftover = 0.4375 + 0.4375 = 0.875
   *     -> best 12, worst 87
   * best-fit -> n1; tightest GPU with >= 500 free: GPU2 (700) -> mask 0x4.
   * worst-fit -> n2; loosest GPU (all 1000, lowest index) -> GPU0.
   * first-fit -> n0 (fits: GPU0 has exactly 500 free) -> GPU0. */
  lsched_request r = mkreq(4000, 1024, 1, 500, 0);
  expect_place(fx, "first-fit", &r, 0, 0x1, 500);
  expect_place(fx, "best-fit", &r, 1, 0x4, 500);
  expect_place(fx, "worst-fit", &r, 2, 0x1, 500);

  /* Request: 2 whole GPUs, no CPU.
   * n0: 3 fully free GPUs; a = 24000, b = 3500 - 2000 = 1500:
   *     leftover = 0.375 + 0.1875 = 0.5625 -> best 43, worst 56
   * n1: only GPU3 fully free -> does not fit.
   * n2: a = 32000, b = 2000: leftover = 0.5 + 0.25 = 0.75 -> best 25,
   *     worst 75.
   * best-fit -> n0, whole GPUs = lowest-index fully free: GPU1, GPU2 (0x6).
   * worst-fit -> n2, loosest with ties to the lowest index: GPU0, GPU1.
   * first-fit -> n0, lowest-index GPUs with 1000 free: GPU1, GPU2. */
  r = mkreq(0, 0, 2, 1000, 0);
  expect_place(fx, "first-fit", &r, 0, 0x6, 1000);
  expect_place(fx, "best-fit", &r, 0, 0x6, 1000);
  expect_place(fx, "worst-fit", &r, 2, 0x3, 1000);

  /* Four whole GPUs: only n2. */
  r = mkreq(0, 0, 4, 1000, 0);
  expect_place(fx, "first-fit", &r, 2, 0xF, 1000);
  expect_place(fx, "best-fit", &r, 2, 0xF, 1000);
  expect_place(fx, "worst-fit", &r, 2, 0xF, 1000);
}
END_TEST

START_TEST(test_hand_gpu_choice) {
  /* One shared node with 5 GPUs; free shares 1000/300/600/1000/450. */
  ck_assert_int_eq(
      add_node(fx, "solo", 16000, 65536, 5, A100, LSCHED_GPU_SHARED), 0);
  must_alloc(fx, mkpl(0, 0, 0, 1, 700, 0x2));
  must_alloc(fx, mkpl(0, 0, 0, 1, 400, 0x4));
  must_alloc(fx, mkpl(0, 0, 0, 1, 550, 0x10));
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 0, 1), 300);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 0, 2), 600);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 0, 4), 450);
  /* The bulk read says the same, and the count when out is short. */
  int all[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  ck_assert_int_eq(lsched_cluster_gpus_free(fx, 0, all, 8), 5);
  ck_assert(all[0] == 1000 && all[1] == 300 && all[2] == 600 &&
            all[3] == 1000 && all[4] == 450 && all[5] == -1);
  int two[2] = {-1, -1};
  ck_assert_int_eq(lsched_cluster_gpus_free(fx, 0, two, 2), 5);
  ck_assert(two[0] == 1000 && two[1] == 300);
  ck_assert_int_eq(lsched_cluster_gpus_free(fx, 0, NULL, 0), 5);
  ck_assert_int_eq(lsched_cluster_gpus_free(fx, 1, all, 8), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_gpus_free(fx, 0, NULL, 3), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_gpus_free(NULL, 0, all, 8), LSCHED_EINVAL);

  /* 2 x 400: GPUs with >= 400 free are 0 (1000), 2 (600), 3 (1000),
   * 4 (450). first-fit: lowest index -> 0, 2 (0x5). best-fit: least free
   * share that fits -> 4 (450) then 2 (600) (0x14). worst-fit: most free,
   * ties lowest -> 0, 3 (0x9). */
  lsched_request r = mkreq(1000, 0, 2, 400, 0);
  expect_place(fx, "first-fit", &r, 0, 0x5, 400);
  expect_place(fx, "best-fit", &r, 0, 0x14, 400);
  expect_place(fx, "worst-fit", &r, 0, 0x9, 400);

  /* 1 x 300: best-fit takes GPU1, whose 300 free fit exactly. */
  r = mkreq(0, 0, 1, 300, 0);
  expect_place(fx, "first-fit", &r, 0, 0x1, 300);
  expect_place(fx, "best-fit", &r, 0, 0x2, 300);
  expect_place(fx, "worst-fit", &r, 0, 0x1, 300);

  /* 1 x 500: GPU 1 (300) and GPU 4 (450) are too small; best-fit takes
   * GPU2 (600). */
  r = mkreq(0, 0, 1, 500, 0);
  expect_place(fx, "first-fit", &r, 0, 0x1, 500);
  expect_place(fx, "best-fit", &r, 0, 0x4, 500);
  expect_place(fx, "worst-fit", &r, 0, 0x1, 500);

  /* Whole GPUs: every policy takes the lowest-index fully free, 0 and 3. */
  r = mkreq(0, 0, 2, 1000, 0);
  expect_place(fx, "first-fit", &r, 0, 0x9, 1000);
  expect_place(fx, "best-fit", &r, 0, 0x9, 1000);
  expect_place(fx, "worst-fit", &r, 0, 0x9, 1000);

  /* 3 whole GPUs: only two are fully free. 4 x 400 fits (0, 2, 3, 4),
   * 5 x 400 does not. */
  r = mkreq(0, 0, 3, 1000, 0);
  expect_nofit(fx, "first-fit", &r);
  expect_nofit(fx, "best-fit", &r);
  expect_nofit(fx, "worst-fit", &r);
  r = mkreq(0, 0, 4, 400, 0);
  expect_place(fx, "first-fit", &r, 0, 0x1D, 400);
  expect_place(fx, "best-fit", &r, 0, 0x1D, 400);
  expect_place(fx, "worst-fit", &r, 0, 0x1D, 400);
  r = mkreq(0, 0, 5, 400, 0);
  expect_nofit(fx, "best-fit", &r);
  /* 5 x 300 fits only because GPU1 has exactly 300 free. */
  r = mkreq(0, 0, 5, 300, 0);
  expect_place(fx, "first-fit", &r, 0, 0x1F, 300);
  expect_place(fx, "best-fit", &r, 0, 0x1F, 300);
  expect_place(fx, "worst-fit", &r, 0, 0x1F, 300);
  r = mkreq(0, 0, 5, 301, 0);
  expect_nofit(fx, "worst-fit", &r);
}
END_TEST

START_TEST(test_hand_tie_order) {
  fx_three_shared();
  /* Three identical empty nodes: every score ties, so every policy takes
   * the earliest node in the visit order, then GPU0. */
  lsched_request r = mkreq(1000, 1024, 1, 250, 0);
  expect_place(fx, "first-fit", &r, 0, 0x1, 250);
  expect_place(fx, "best-fit", &r, 0, 0x1, 250);
  expect_place(fx, "worst-fit", &r, 0, 0x1, 250);
  const int order[] = {2, 0, 1};
  ck_assert_int_eq(lsched_cluster_set_order(fx, order, 3), LSCHED_OK);
  expect_place(fx, "first-fit", &r, 2, 0x1, 250);
  expect_place(fx, "best-fit", &r, 2, 0x1, 250);
  expect_place(fx, "worst-fit", &r, 2, 0x1, 250);
  /* Back to the identity (the fit index then reads no order), and away
   * from it again: the first fit follows each time. */
  const int id[] = {0, 1, 2}, back[] = {1, 2, 0};
  ck_assert_int_eq(lsched_cluster_set_order(fx, id, 3), LSCHED_OK);
  expect_place(fx, "first-fit", &r, 0, 0x1, 250);
  ck_assert_int_eq(lsched_cluster_set_order(fx, back, 3), LSCHED_OK);
  expect_place(fx, "first-fit", &r, 1, 0x1, 250);
  must_alloc(fx, mkpl(1, 100, 0, 4, 1000, 0xF)); /* n1: no GPU left */
  expect_place(fx, "first-fit", &r, 2, 0x1, 250);
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);
}
END_TEST

START_TEST(test_hand_floor_tie) {
  fx_three_shared();
  must_alloc(fx, mkpl(1, 100, 0, 0, 0, 0));    /* n1: 100 CPU used */
  must_alloc(fx, mkpl(2, 0, 0, 4, 1000, 0xF)); /* n2: no GPU left */
  /* Request 1 core, 1 whole GPU. A = 32000, B = 4000.
   * n0: a = 31000, b = 3000: leftover = 0.484375 + 0.375 = 0.859375
   *     best = floor(14.0625) = 14, worst = floor(85.9375) = 85
   * n1: a = 30900, b = 3000: leftover = 0.4828125 + 0.375 = 0.8578125
   *     best = floor(14.21875) = 14, worst = floor(85.78125) = 85
   * n2: does not fit. The floored scores tie, so the earliest node in the
   * visit order wins for both scoring policies. */
  lsched_request r = mkreq(1000, 0, 1, 1000, 0);
  expect_place(fx, "first-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "best-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "worst-fit", &r, 0, 0x1, 1000);
  const int order[] = {1, 0, 2};
  ck_assert_int_eq(lsched_cluster_set_order(fx, order, 3), LSCHED_OK);
  expect_place(fx, "first-fit", &r, 1, 0x1, 1000);
  expect_place(fx, "best-fit", &r, 1, 0x1, 1000);
  expect_place(fx, "worst-fit", &r, 1, 0x1, 1000);
  const int order2[] = {2, 0, 1};
  ck_assert_int_eq(lsched_cluster_set_order(fx, order2, 3), LSCHED_OK);
  expect_place(fx, "first-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "best-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "worst-fit", &r, 0, 0x1, 1000);

  /* Scores are floored, not rounded: request 960 CPU, 1 whole GPU.
   * n0: a = 31040, b = 3000: leftover = 0.485 + 0.375 = 0.86 exactly
   *     best = 14 (exact), worst = 86 (exact)
   * n1: a = 30940, b = 3000: leftover = 0.4834375 + 0.375 = 0.8584375
   *     best = floor(14.15625) = 14, worst = floor(85.84375) = 85
   * best-fit ties (earliest in order wins; rounding up would give n1 15);
   * worst-fit prefers n0 in every order. */
  r = mkreq(960, 0, 1, 1000, 0);
  ck_assert_int_eq(lsched_cluster_set_order(fx, order2, 3), LSCHED_OK);
  expect_place(fx, "best-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "worst-fit", &r, 0, 0x1, 1000);
  ck_assert_int_eq(lsched_cluster_set_order(fx, order, 3), LSCHED_OK);
  expect_place(fx, "best-fit", &r, 1, 0x1, 1000);
  expect_place(fx, "worst-fit", &r, 0, 0x1, 1000);
}
END_TEST

START_TEST(test_hand_exclusive_fraction) {
  ck_assert_int_eq(
      add_node(fx, "ex", 16000, 65536, 2, A100, LSCHED_GPU_EXCLUSIVE), 0);
  lsched_request r = mkreq(1000, 0, 1, 300, 0);
  ck_assert_int_eq(lsched_effective_milli(fx, 0, &r), 1000);
  /* A fractional request on an exclusive node takes the whole GPU. */
  expect_place(fx, "first-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "best-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "worst-fit", &r, 0, 0x1, 1000);
  lsched_placement p;
  ck_assert_int_eq(place_with(fx, "best-fit", &r, &p), LSCHED_OK);
  ck_assert_int_eq(lsched_alloc(fx, &p), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 0, 0), 0);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 0, 1), 1000);
  /* The next one goes to GPU1; then nothing is left although only 2 x 300
   * milli were asked for. */
  expect_place(fx, "worst-fit", &r, 0, 0x2, 1000);
  ck_assert_int_eq(place_with(fx, "first-fit", &r, &p), LSCHED_OK);
  ck_assert_int_eq(lsched_alloc(fx, &p), LSCHED_OK);
  expect_nofit(fx, "first-fit", &r);
  expect_nofit(fx, "best-fit", &r);
  expect_nofit(fx, "worst-fit", &r);
  lsched_node_info info;
  ck_assert_int_eq(lsched_cluster_node_info(fx, 0, &info), LSCHED_OK);
  ck_assert_int_eq(info.gpu_milli_free, 0);
  ck_assert_int_eq(info.cpu_free, 14000);
}
END_TEST

START_TEST(test_hand_exclusive_vs_shared) {
  add_node(fx, "ex", 32000, 262144, 4, A100, LSCHED_GPU_EXCLUSIVE);
  add_node(fx, "sh", 32000, 262144, 4, A100, LSCHED_GPU_SHARED);
  must_alloc(fx, mkpl(1, 1000, 0, 1, 800, 0x1)); /* sh: GPU0 has 200 left */
  /* Request 1 x 200, no CPU. A = 32000, B = 4000.
   * ex: the GPU is taken whole: a = 32000, b = 4000 - 1000 = 3000:
   *     leftover = 0.5 + 0.375 = 0.875 -> best 12, worst 87
   * sh: a = 31000, b = 3200 - 200 = 3000:
   *     leftover = 0.484375 + 0.375 = 0.859375 -> best 14, worst 85
   * best-fit -> sh, tightest GPU: GPU0 (exactly 200 free), 200 milli.
   * worst-fit -> ex, GPU0 whole. first-fit -> ex (first), GPU0 whole. */
  lsched_request r = mkreq(0, 0, 1, 200, 0);
  expect_place(fx, "best-fit", &r, 1, 0x1, 200);
  expect_place(fx, "worst-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "first-fit", &r, 0, 0x1, 1000);

  /* Now sh uses only 400 of GPU0 and no CPU. Same request:
   * ex: a = 32000, b = 3000 (a whole GPU is taken): leftover 0.875
   *     -> best 12, worst 87
   * sh: a = 32000, b = 3600 - 200 = 3400: leftover = 0.5 + 0.425 = 0.925
   *     -> best 7, worst 92
   * (Counting only 200 milli taken on ex would give it b = 3800, best 2,
   * worst 97, and flip both choices.)
   * best-fit -> ex, GPU0 whole; worst-fit -> sh, loosest GPU: GPU1 (GPU0
   * has 600 free, GPUs 1..3 have 1000; ties to the lowest index). */
  lsched_placement used = mkpl(1, 1000, 0, 1, 800, 0x1);
  ck_assert_int_eq(lsched_release(fx, &used), LSCHED_OK);
  must_alloc(fx, mkpl(1, 0, 0, 1, 400, 0x1));
  expect_place(fx, "best-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "worst-fit", &r, 1, 0x2, 200);
  expect_place(fx, "first-fit", &r, 0, 0x1, 1000);
}
END_TEST

START_TEST(test_hand_model_mask) {
  add_node(fx, "a4", 32000, 262144, 4, A100, LSCHED_GPU_SHARED);
  add_node(fx, "v2", 16000, 131072, 2, V100, LSCHED_GPU_SHARED);
  add_node(fx, "a8", 64000, 524288, 8, A100, LSCHED_GPU_SHARED);
  const uint64_t mA = UINT64_C(1) << A100, mV = UINT64_C(1) << V100;
  /* Request 1 core, 1 whole GPU. A = 64000, B = 8000.
   * a4: a = 31000, b = 3000: leftover = 0.2421875 + 0.1875 = 0.4296875
   *     -> best 57, worst 42
   * v2: a = 15000, b = 1000: leftover = 0.1171875 + 0.0625 = 0.1796875
   *     -> best 82, worst 17
   * a8: a = 63000, b = 7000: leftover = 0.4921875 + 0.4375 = 0.9296875
   *     -> best 7, worst 92 */
  lsched_request r = mkreq(1000, 0, 1, 1000, mV);
  expect_place(fx, "first-fit", &r, 1, 0x1, 1000);
  expect_place(fx, "best-fit", &r, 1, 0x1, 1000);
  expect_place(fx, "worst-fit", &r, 1, 0x1, 1000);
  r.model_mask = mA; /* a4 (57) vs a8 (7) */
  expect_place(fx, "first-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "best-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "worst-fit", &r, 2, 0x1, 1000);
  r.model_mask = mA | mV; /* same as any model */
  expect_place(fx, "first-fit", &r, 0, 0x1, 1000);
  expect_place(fx, "best-fit", &r, 1, 0x1, 1000);
  expect_place(fx, "worst-fit", &r, 2, 0x1, 1000);
  r.model_mask = 0;
  expect_place(fx, "best-fit", &r, 1, 0x1, 1000);
  /* A model no node has: nothing fits, ever. */
  r.model_mask = UINT64_C(1) << 5;
  expect_nofit(fx, "first-fit", &r);
  expect_nofit(fx, "best-fit", &r);
  expect_nofit(fx, "worst-fit", &r);
  ck_assert_int_eq(lsched_can_ever_fit(fx, &r), 0);
  r.model_mask = (UINT64_C(1) << 5) | mV;
  expect_place(fx, "worst-fit", &r, 1, 0x1, 1000);
  /* 3 V100 GPUs: v2 has only 2. */
  r = mkreq(0, 0, 3, 100, mV);
  expect_nofit(fx, "best-fit", &r);
  ck_assert_int_eq(lsched_can_ever_fit(fx, &r), 0);
}
END_TEST

START_TEST(test_hand_cpu_only_and_memory) {
  add_node(fx, "cpu", 16000, 65536, 0, -1, LSCHED_GPU_SHARED);
  add_node(fx, "g4", 32000, 262144, 4, A100, LSCHED_GPU_SHARED);
  add_node(fx, "g2", 32000, 131072, 2, A100, LSCHED_GPU_EXCLUSIVE);
  /* CPU-only, 8 cores. A = 32000, B = 4000; GPUs stay free (b = all).
   * cpu: a = 8000, b = 0: leftover = 0.125 -> best 87, worst 12
   * g4: a = 24000, b = 4000: leftover = 0.375 + 0.5 = 0.875
   *     -> best 12, worst 87
   * g2: a = 24000, b = 2000: leftover = 0.375 + 0.25 = 0.625
   *     -> best 37, worst 62 */
  lsched_request r = mkreq(8000, 1024, 0, 0, 0);
  expect_place(fx, "first-fit", &r, 0, 0, 0);
  expect_place(fx, "best-fit", &r, 0, 0, 0);
  expect_place(fx, "worst-fit", &r, 1, 0, 0);
  /* A model mask does not restrict a request without GPUs. */
  r.model_mask = UINT64_C(1) << V100;
  expect_place(fx, "best-fit", &r, 0, 0, 0);
  r.model_mask = 0;
  /* Memory binds: 100000 MiB rule out "cpu" (65536 MiB). */
  r.memory_mib = 100000;
  ck_assert_int_eq(lsched_fits(fx, 0, &r), 0);
  expect_place(fx, "first-fit", &r, 1, 0, 0);
  expect_place(fx, "best-fit", &r, 2, 0, 0);
  expect_place(fx, "worst-fit", &r, 1, 0, 0);
  /* 200000 MiB: only g4. */
  r.memory_mib = 200000;
  expect_place(fx, "first-fit", &r, 1, 0, 0);
  expect_place(fx, "best-fit", &r, 1, 0, 0);
  expect_place(fx, "worst-fit", &r, 1, 0, 0);
  /* Memory binds after an allocation too: g4 has 62144 MiB left. */
  lsched_placement used = mkpl(1, 0, 200000, 0, 0, 0);
  must_alloc(fx, used);
  expect_nofit(fx, "best-fit", &r);
  ck_assert_int_eq(lsched_can_ever_fit(fx, &r), 1);
  /* 70000 MiB: not "cpu" (65536), not g4 (62144 left): only g2. */
  r.memory_mib = 70000;
  expect_place(fx, "first-fit", &r, 2, 0, 0);
  expect_place(fx, "best-fit", &r, 2, 0, 0);
  expect_place(fx, "worst-fit", &r, 2, 0, 0);
  /* Once released, g4 competes again (scores as above: g4 12/87, g2
   * 37/62). */
  ck_assert_int_eq(lsched_release(fx, &used), LSCHED_OK);
  expect_place(fx, "first-fit", &r, 1, 0, 0);
  expect_place(fx, "best-fit", &r, 2, 0, 0);
  expect_place(fx, "worst-fit", &r, 1, 0, 0);
  /* More memory than any node has: never fits. */
  r.memory_mib = 300000;
  expect_nofit(fx, "first-fit", &r);
  expect_nofit(fx, "worst-fit", &r);
  ck_assert_int_eq(lsched_can_ever_fit(fx, &r), 0);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Errors, versions, argument checks                                       */

#define ERR_ROW_(name, val, msg) {val, "LSCHED_E" #name, msg},
static const struct {
  int code;
  const char *name;
  const char *msg;
} err_rows[] = {LSCHED_ERRNO_MAP(ERR_ROW_)};
#undef ERR_ROW_
#define N_ERR_ROWS ((int)(sizeof err_rows / sizeof err_rows[0]))

START_TEST(test_err_strings) {
  ck_assert_int_eq(N_ERR_ROWS, 11);
  /* Values are fixed forever. */
  ck_assert_int_eq(LSCHED_OK, 0);
  ck_assert_int_eq(LSCHED_ENOMEM, -1);
  ck_assert_int_eq(LSCHED_EINVAL, -2);
  ck_assert_int_eq(LSCHED_ENOFIT, -3);
  ck_assert_int_eq(LSCHED_ENOENT, -4);
  ck_assert_int_eq(LSCHED_EEXIST, -5);
  ck_assert_int_eq(LSCHED_ERANGE, -6);
  ck_assert_int_eq(LSCHED_ESTATE, -7);
  ck_assert_int_eq(LSCHED_ENEVER, -8);
  ck_assert_int_eq(LSCHED_EVERSION, -9);
  ck_assert_int_eq(LSCHED_ELIMIT, -10);
  ck_assert_int_eq(LSCHED_ENOTSUP, -11);
  for (int i = 0; i < N_ERR_ROWS; i++) {
    ck_assert_int_eq(err_rows[i].code, -(i + 1));
    const char *m = lsched_strerror(err_rows[i].code);
    const char *n = lsched_err_name(err_rows[i].code);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(n);
    ck_assert_str_eq(m, err_rows[i].msg);
    ck_assert_str_eq(n, err_rows[i].name);
    for (int j = 0; j < i; j++) {
      ck_assert_str_ne(m, err_rows[j].msg);
      ck_assert_str_ne(n, err_rows[j].name);
    }
  }
  ck_assert_str_eq(lsched_err_name(LSCHED_OK), "LSCHED_OK");
  ck_assert_ptr_nonnull(lsched_strerror(LSCHED_OK));
  ck_assert_int_gt((int)strlen(lsched_strerror(LSCHED_OK)), 0);
  const int unknown[] = {1, 42, -12, -100, INT_MIN, INT_MAX};
  for (size_t u = 0; u < sizeof unknown / sizeof unknown[0]; u++) {
    const char *m = lsched_strerror(unknown[u]);
    const char *n = lsched_err_name(unknown[u]);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(n);
    ck_assert_int_gt((int)strlen(m), 0);
    ck_assert_int_gt((int)strlen(n), 0);
    ck_assert_str_ne(n, "LSCHED_OK");
    for (int j = 0; j < N_ERR_ROWS; j++) {
      ck_assert_str_ne(m, err_rows[j].msg);
      ck_assert_str_ne(n, err_rows[j].name);
    }
  }
}
END_TEST

START_TEST(test_version) {
  ck_assert_uint_eq(lsched_version_number(), LSCHED_VERSION_NUMBER);
  ck_assert_str_eq(lsched_version_string(), LSCHED_VERSION_STRING);
  char buf[32];
  snprintf(buf, sizeof buf, "%d.%d.%d", LSCHED_VERSION_MAJOR,
           LSCHED_VERSION_MINOR, LSCHED_VERSION_PATCH);
  ck_assert_str_eq(lsched_version_string(), buf);
  ck_assert_uint_eq(lsched_version_number(),
                    (unsigned)(LSCHED_VERSION_MAJOR * 10000 +
                               LSCHED_VERSION_MINOR * 100 +
                               LSCHED_VERSION_PATCH));
}
END_TEST

START_TEST(test_null_args) {
  add_node(fx, "n", 1000, 1000, 1, A100, LSCHED_GPU_SHARED);
  lsched_request r = mkreq(0, 0, 1, 100, 0);
  lsched_placement p = mkpl(0, 0, 0, 1, 100, 1);
  lsched_node_info info;
  ck_assert_int_eq(lsched_cluster_create(NULL, NULL), LSCHED_EINVAL);
  lsched_cluster_destroy(NULL);
  ck_assert_str_eq(lsched_cluster_errmsg(NULL), "");
  ck_assert_int_eq(lsched_cluster_opts_init(NULL, 1), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_model_id(NULL, "x", 1), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_model_id(fx, NULL, 1), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_find_model(NULL, "A100"), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_find_model(fx, NULL), LSCHED_EINVAL);
  ck_assert_ptr_null(lsched_cluster_model_name(NULL, 0));
  ck_assert_int_eq(lsched_cluster_model_count(NULL), 0);
  ck_assert_int_eq(lsched_cluster_add_node(NULL, NULL, NULL), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_add_node(fx, NULL, NULL), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_node_count(NULL), 0);
  ck_assert_int_eq(lsched_cluster_node_info(NULL, 0, &info), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_node_info(fx, 0, NULL), LSCHED_EINVAL);
  ck_assert_int_lt(lsched_cluster_gpu_free(NULL, 0, 0), 0);
  ck_assert_int_eq(lsched_cluster_set_order(NULL, NULL, 0), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_set_order(fx, NULL, 1), LSCHED_EINVAL);
  ck_assert_ptr_null(lsched_cluster_order(NULL));
  ck_assert_int_eq(lsched_cluster_check(NULL), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_request_validate(NULL), LSCHED_EINVAL);
  ck_assert_int_lt(lsched_effective_milli(NULL, 0, &r), 0);
  ck_assert_int_lt(lsched_effective_milli(fx, 0, NULL), 0);
  ck_assert_int_eq(lsched_fits(NULL, 0, &r), 0);
  ck_assert_int_eq(lsched_fits(fx, 0, NULL), 0);
  ck_assert_int_eq(lsched_can_ever_fit(NULL, &r), 0);
  ck_assert_int_eq(lsched_can_ever_fit(fx, NULL), 0);
  ck_assert_int_eq(lsched_next_fit(NULL, &r, 0), -1);
  ck_assert_int_eq(lsched_next_fit(fx, NULL, 0), -1);
  ck_assert_int_eq(lsched_pick_gpus(NULL, 0, &r, LSCHED_PICK_LOWEST, &p),
                   LSCHED_EINVAL);
  ck_assert_int_eq(lsched_pick_gpus(fx, 0, NULL, LSCHED_PICK_LOWEST, &p),
                   LSCHED_EINVAL);
  ck_assert_int_eq(lsched_pick_gpus(fx, 0, &r, LSCHED_PICK_LOWEST, NULL),
                   LSCHED_EINVAL);
  ck_assert_int_eq(lsched_alloc(NULL, &p), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_alloc(fx, NULL), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_release(NULL, &p), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_release(fx, NULL), LSCHED_EINVAL);
  /* A prefetch hint with no cluster or a node out of range is no hint;
   * on a real node it changes nothing either. */
  lsched_node_info before, after;
  memset(&before, 0, sizeof before); /* padding compared too */
  memset(&after, 0, sizeof after);
  ck_assert_int_eq(lsched_cluster_node_info(fx, 0, &before), LSCHED_OK);
  lsched_prefetch_node(NULL, 0);
  lsched_prefetch_node(fx, -1);
  lsched_prefetch_node(fx, 1);
  lsched_prefetch_node(fx, INT32_MAX);
  lsched_prefetch_node(fx, 0);
  ck_assert_int_eq(lsched_cluster_node_info(fx, 0, &after), LSCHED_OK);
  ck_assert_mem_eq(&before, &after, sizeof before);
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);

  lsched_registry *reg = NULL;
  ck_assert_int_eq(lsched_registry_create(NULL, NULL), LSCHED_EINVAL);
  lsched_registry_destroy(NULL);
  ck_assert_int_eq(lsched_registry_add(NULL, &lsched_builtin_first_fit),
                   LSCHED_EINVAL);
  ck_assert_int_eq(lsched_registry_add_builtins(NULL), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_registry_create(&reg, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add(reg, NULL), LSCHED_EINVAL);
  ck_assert_ptr_null(lsched_registry_find(NULL, "first-fit"));
  ck_assert_ptr_null(lsched_registry_find(reg, NULL));
  ck_assert_uint_eq(lsched_registry_count(NULL), 0);
  ck_assert_ptr_null(lsched_registry_at(NULL, 0));
  ck_assert_ptr_null(lsched_registry_at(reg, 0));
  lsched_registry_destroy(reg);

  lsched_policy *pol = (lsched_policy *)&p; /* must be reset to NULL */
  ck_assert_int_eq(lsched_policy_create(NULL, fx, &lsched_builtin_best_fit),
                   LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_create(&pol, NULL, &lsched_builtin_best_fit),
                   LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_create(&pol, fx, NULL), LSCHED_EINVAL);
  ck_assert_ptr_null(pol);
  lsched_policy_destroy(NULL);
  ck_assert_ptr_null(lsched_policy_name(NULL));
  ck_assert_int_eq(lsched_policy_place(NULL, &r, &p), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_set_param(NULL, "seed", "1"), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_create(&pol, fx, &lsched_builtin_best_fit),
                   LSCHED_OK);
  ck_assert_int_eq(lsched_policy_place(pol, NULL, &p), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_place(pol, &r, NULL), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_set_param(pol, NULL, "1"), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_set_param(pol, "seed", NULL), LSCHED_EINVAL);
  lsched_policy_destroy(pol);
  /* Nothing above changed the cluster. */
  ck_assert_int_eq(lsched_cluster_node_count(fx), 1);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 0, 0), 1000);
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);
}
END_TEST

static int never_place(void *state, const lsched_cluster *c,
                       const lsched_request *req, lsched_placement *out) {
  (void)state;
  (void)c;
  (void)req;
  (void)out;
  return LSCHED_ENOFIT;
}

START_TEST(test_bad_versions) {
  lsched_cluster *c = (lsched_cluster *)&c;
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  ck_assert_uint_eq(o.version, LSCHED_CLUSTER_OPTS_VERSION);
  o.version = 0;
  ck_assert_int_eq(lsched_cluster_create(&c, &o), LSCHED_EVERSION);
  ck_assert_ptr_null(c);
  o.version = LSCHED_CLUSTER_OPTS_VERSION + 1;
  ck_assert_int_eq(lsched_cluster_create(&c, &o), LSCHED_EVERSION);
  ck_assert_ptr_null(c);
  /* opts_init matches the _INIT macro. */
  lsched_cluster_opts d;
  memset(&d, 0x5A, sizeof d);
  ck_assert_int_eq(lsched_cluster_opts_init(&d, 0), LSCHED_EVERSION);
  ck_assert_int_eq(lsched_cluster_opts_init(&d, 99), LSCHED_EVERSION);
  ck_assert_int_eq(lsched_cluster_opts_init(&d, LSCHED_CLUSTER_OPTS_VERSION),
                   LSCHED_OK);
  lsched_cluster_opts m = LSCHED_CLUSTER_OPTS_INIT;
  ck_assert_uint_eq(d.version, m.version);
  ck_assert_ptr_eq(d.allocator, m.allocator);
  ck_assert_int_eq(d.check_invariants, m.check_invariants);
  ck_assert_int_eq(lsched_cluster_create(&c, &d), LSCHED_OK);
  lsched_cluster_destroy(c);

  /* Node spec versions. */
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 1000;
  s.version = 0;
  ck_assert_int_eq(lsched_cluster_add_node(fx, &s, NULL), LSCHED_EVERSION);
  s.version = LSCHED_NODE_SPEC_VERSION + 1;
  ck_assert_int_eq(lsched_cluster_add_node(fx, &s, NULL), LSCHED_EVERSION);
  ck_assert_int_eq(lsched_cluster_node_count(fx), 0);
  s.version = LSCHED_NODE_SPEC_VERSION;
  ck_assert_int_eq(lsched_cluster_add_node(fx, &s, NULL), LSCHED_OK);

  /* Policy table versions. */
  lsched_policy_ops ops = {0};
  ops.name = "v";
  ops.place = never_place;
  lsched_registry *r = NULL;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  lsched_policy *pol = NULL;
  const unsigned bad[] = {0, 99, LSCHED_POLICY_OPS_VERSION + 1};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ops.version = bad[i];
    ck_assert_int_eq(lsched_registry_add(r, &ops), LSCHED_EVERSION);
    ck_assert_int_eq(lsched_policy_create(&pol, fx, &ops), LSCHED_EVERSION);
    ck_assert_ptr_null(pol);
  }
  ck_assert_uint_eq(lsched_registry_count(r), 0);
  ops.version = LSCHED_POLICY_OPS_VERSION;
  ck_assert_int_eq(lsched_registry_add(r, &ops), LSCHED_OK);
  lsched_registry_destroy(r);

  /* Request versions: a malformed request is EINVAL everywhere. */
  lsched_request q = mkreq(0, 0, 1, 500, 0);
  ck_assert_int_eq(lsched_request_validate(&q), LSCHED_OK);
  q.version = 0;
  ck_assert_int_eq(lsched_request_validate(&q), LSCHED_EINVAL);
  q.version = LSCHED_REQUEST_VERSION + 1;
  ck_assert_int_eq(lsched_request_validate(&q), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_create(&pol, fx, &lsched_builtin_first_fit),
                   LSCHED_OK);
  lsched_placement p;
  ck_assert_int_eq(lsched_policy_place(pol, &q, &p), LSCHED_EINVAL);
  lsched_policy_destroy(pol);
}
END_TEST

START_TEST(test_request_validate) {
  static const struct {
    int64_t cpu, mem;
    int k, milli, ok;
  } cases[] = {
      {0, 0, 0, 0, 1},         {1000, 1024, 0, 0, 1},
      {0, 0, 1, 1, 1},         {0, 0, 1, 1000, 1},
      {0, 0, 8, 500, 1},       {INT64_MAX, INT64_MAX, 64, 1000, 1},
      {-1, 0, 0, 0, 0},        {0, -1, 0, 0, 0},
      {0, 0, -1, 0, 0},        {0, 0, -1, 500, 0},
      {0, 0, 0, 500, 0},       {0, 0, 0, 1000, 0},
      {0, 0, 1, 0, 0},         {0, 0, 1, 1001, 0},
      {0, 0, 1, -1, 0},        {0, 0, 2, INT_MAX, 0},
      {INT64_MIN, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lsched_request r =
        mkreq(cases[i].cpu, cases[i].mem, cases[i].k, cases[i].milli, 0);
    ck_assert_msg(lsched_request_validate(&r) ==
                      (cases[i].ok ? LSCHED_OK : LSCHED_EINVAL),
                  "case %zu", i);
    r.model_mask = ~UINT64_C(0); /* any mask is well-formed */
    ck_assert_msg(lsched_request_validate(&r) ==
                      (cases[i].ok ? LSCHED_OK : LSCHED_EINVAL),
                  "case %zu with mask", i);
  }
  lsched_request init = LSCHED_REQUEST_INIT;
  ck_assert_uint_eq(init.version, LSCHED_REQUEST_VERSION);
  ck_assert_int_eq(lsched_request_validate(&init), LSCHED_OK);
  /* A malformed request never fits and never places. */
  add_node(fx, "n", 1000, 1000, 2, A100, LSCHED_GPU_SHARED);
  lsched_request bad = mkreq(0, 0, 1, 0, 0);
  lsched_placement p;
  ck_assert_int_eq(lsched_fits(fx, 0, &bad), 0);
  ck_assert_int_eq(lsched_can_ever_fit(fx, &bad), 0);
  ck_assert_int_eq(lsched_pick_gpus(fx, 0, &bad, LSCHED_PICK_LOWEST, &p),
                   LSCHED_EINVAL);
}
END_TEST

/* Two shared GPUs, two exclusive GPUs and a GPU-less node. */
static void fx_small_mixed(void) {
  add_node(fx, "sh", 8000, 1000, 2, A100, LSCHED_GPU_SHARED);
  add_node(fx, "ex", 8000, 1000, 2, V100, LSCHED_GPU_EXCLUSIVE);
  add_node(fx, "cpu", 8000, 1000, 0, -1, LSCHED_GPU_SHARED);
}

START_TEST(test_alloc_overcommit) {
  fx_small_mixed();
  must_alloc(fx, mkpl(0, 6000, 800, 1, 600, 0x1));
  must_alloc(fx, mkpl(1, 0, 0, 1, 1000, 0x1));
  struct snap before;
  snap_take(fx, &before);
  const lsched_placement over[] = {
      mkpl(0, 2001, 0, 0, 0, 0),       /* CPU: 2000 free */
      mkpl(0, 0, 201, 0, 0, 0),        /* memory: 200 free */
      mkpl(0, 0, 0, 1, 401, 0x1),      /* GPU0: 400 free */
      mkpl(0, 0, 0, 2, 500, 0x3),      /* GPU1 fits, GPU0 not: all or none */
      mkpl(0, 2000, 200, 2, 401, 0x3), /* only the GPU part over-commits */
      mkpl(1, 0, 0, 1, 1000, 0x1),     /* exclusive GPU0 is taken */
      mkpl(1, 0, 0, 2, 1000, 0x3),
      mkpl(2, 8001, 0, 0, 0, 0),
      mkpl(2, INT64_MAX, INT64_MAX, 0, 0, 0),
  };
  for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
    fx->errmsg[0] = '\0';
    ck_assert_msg(lsched_alloc(fx, &over[i]) == LSCHED_ERANGE, "case %zu", i);
    ck_assert_msg(lsched_cluster_errmsg(fx)[0] != '\0', "case %zu: no detail",
                  i);
    assert_unchanged(fx, &before);
  }
  /* Exactly what is left is accepted, then refused once more. */
  lsched_placement exact = mkpl(0, 2000, 200, 2, 400, 0x3);
  ck_assert_int_eq(lsched_alloc(fx, &exact), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 0, 0), 0);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 0, 1), 600);
  lsched_placement one_more = mkpl(0, 0, 0, 1, 1, 0x1);
  ck_assert_int_eq(lsched_alloc(fx, &one_more), LSCHED_ERANGE);
  ck_assert_int_eq(lsched_release(fx, &exact), LSCHED_OK);
  assert_unchanged(fx, &before);
}
END_TEST

START_TEST(test_alloc_malformed) {
  fx_small_mixed();
  must_alloc(fx, mkpl(0, 1000, 100, 1, 300, 0x2));
  struct snap before;
  snap_take(fx, &before);
  static const struct {
    int node;
    int64_t cpu, mem;
    int k, milli;
    uint64_t mask;
    int rc;
  } cases[] = {
      {0, 0, 0, 1, 500, 0x3, LSCHED_EINVAL},  /* mask has 2, count 1 */
      {0, 0, 0, 2, 500, 0x1, LSCHED_EINVAL},  /* mask has 1, count 2 */
      {0, 0, 0, 1, 500, 0x0, LSCHED_EINVAL},  /* empty mask */
      {0, 0, 0, 0, 0, 0x1, LSCHED_EINVAL},    /* mask without count */
      {0, 0, 0, 1, 0, 0x1, LSCHED_EINVAL},    /* milli 0 */
      {0, 0, 0, 1, 1001, 0x1, LSCHED_EINVAL}, /* milli 1001 */
      {0, 0, 0, 1, -5, 0x1, LSCHED_EINVAL},   /* milli < 0 */
      {0, 0, 0, 0, 500, 0x0, LSCHED_EINVAL},  /* milli without GPUs */
      {0, 0, 0, 1, 100, 0x4, LSCHED_EINVAL},  /* GPU 2 of a 2-GPU node */
      {0, 0, 0, 1, 100, UINT64_C(1) << 63, LSCHED_EINVAL},
      {0, 0, 0, 3, 100, 0x7, LSCHED_EINVAL},
      {1, 0, 0, 1, 500, 0x1, LSCHED_EINVAL}, /* exclusive, milli < 1000 */
      {1, 0, 0, 1, 999, 0x2, LSCHED_EINVAL},
      {1, 0, 0, 2, 1, 0x3, LSCHED_EINVAL},
      {2, 0, 0, 1, 1000, 0x1, LSCHED_EINVAL}, /* node without GPUs */
      {0, -1, 0, 0, 0, 0x0, LSCHED_EINVAL},   /* negative amounts */
      {0, 0, -1, 0, 0, 0x0, LSCHED_EINVAL},
      {0, 0, 0, -1, 100, 0x0, LSCHED_EINVAL},
      {-1, 0, 0, 0, 0, 0x0, LSCHED_ENOENT}, /* no such node */
      {3, 0, 0, 0, 0, 0x0, LSCHED_ENOENT},
      {INT_MAX, 0, 0, 0, 0, 0x0, LSCHED_ENOENT},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lsched_placement p = mkpl(cases[i].node, cases[i].cpu, cases[i].mem,
                              cases[i].k, cases[i].milli, cases[i].mask);
    ck_assert_msg(lsched_alloc(fx, &p) == cases[i].rc, "alloc case %zu: %s", i,
                  lsched_err_name(lsched_alloc(fx, &p)));
    assert_unchanged(fx, &before);
    ck_assert_msg(lsched_release(fx, &p) == cases[i].rc, "release case %zu", i);
    assert_unchanged(fx, &before);
  }
}
END_TEST

START_TEST(test_release_without_alloc) {
  fx_small_mixed();
  struct snap empty;
  snap_take(fx, &empty);
  const lsched_placement never[] = {
      mkpl(0, 1, 0, 0, 0, 0),       mkpl(0, 0, 1, 0, 0, 0),
      mkpl(0, 0, 0, 1, 100, 0x1),   mkpl(1, 0, 0, 1, 1000, 0x2),
      mkpl(2, 8000, 1000, 0, 0, 0), mkpl(0, 0, 0, 0, 0, 0),
  };
  for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
    ck_assert_msg(lsched_release(fx, &never[i]) == LSCHED_ERANGE,
                  "case %zu: %s", i,
                  lsched_err_name(lsched_release(fx, &never[i])));
    assert_unchanged(fx, &empty);
  }
  /* An empty release on an idle cluster must not make room for a later
   * allocation to go uncounted: add_node must still see it. */
  lsched_placement a = mkpl(0, 100, 10, 1, 300, 0x1);
  must_alloc(fx, a);
  struct snap after_a;
  snap_take(fx, &after_a);
  lsched_placement more = mkpl(0, 200, 0, 0, 0, 0);
  ck_assert_int_eq(lsched_release(fx, &more), LSCHED_ERANGE);
  lsched_placement gpu_more = mkpl(0, 0, 0, 1, 400, 0x1); /* 700 + 400 */
  ck_assert_int_eq(lsched_release(fx, &gpu_more), LSCHED_ERANGE);
  lsched_placement other_gpu = mkpl(0, 0, 0, 1, 300, 0x2);
  ck_assert_int_eq(lsched_release(fx, &other_gpu), LSCHED_ERANGE);
  assert_unchanged(fx, &after_a);
  ck_assert_int_eq(lsched_release(fx, &a), LSCHED_OK);
  assert_unchanged(fx, &empty);
  ck_assert_int_eq(lsched_release(fx, &a), LSCHED_ERANGE);
  assert_unchanged(fx, &empty);
}
END_TEST

START_TEST(test_add_node_state) {
  /* Issue #16: nodes may be added while jobs run and policies are
   * attached (before, LSCHED_ESTATE); the message is cleared on success. */
  add_node(fx, "a", 4000, 4000, 1, A100, LSCHED_GPU_SHARED);
  lsched_placement p = mkpl(0, 1000, 0, 1, 100, 0x1);
  must_alloc(fx, p);
  lsched_placement bad = mkpl(5, 0, 0, 0, 0, 0);
  ck_assert_int_eq(lsched_alloc(fx, &bad), LSCHED_ENOENT);
  ck_assert_str_ne(lsched_cluster_errmsg(fx), "");
  ck_assert_int_eq(
      add_node_rc(fx, "b", 4000, 4000, 0, -1, LSCHED_GPU_SHARED, NULL),
      LSCHED_OK);
  ck_assert_str_eq(lsched_cluster_errmsg(fx), "");
  ck_assert_int_eq(lsched_cluster_node_count(fx), 2);
  lsched_policy *pol = NULL;
  ck_assert_int_eq(lsched_policy_create(&pol, fx, &lsched_builtin_best_fit),
                   LSCHED_OK);
  ck_assert_int_eq(add_node(fx, "c", 4000, 4000, 0, -1, LSCHED_GPU_SHARED), 2);
  lsched_request q = mkreq(3500, 0, 0, 0, 0); /* only b and c have room */
  lsched_placement out;
  ck_assert_int_eq(lsched_policy_place(pol, &q, &out), LSCHED_OK);
  ck_assert_int_ge(out.node, 1);
  lsched_policy_destroy(pol);
  ck_assert_int_eq(lsched_release(fx, &p), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);
}
END_TEST

START_TEST(test_node_limits) {
  int id = 77;
  ck_assert_int_eq(
      add_node_rc(fx, "g65", 1000, 1000, 65, A100, LSCHED_GPU_SHARED, &id),
      LSCHED_ELIMIT);
  ck_assert_int_eq(id, 77); /* untouched on failure */
  ck_assert_int_eq(
      add_node_rc(fx, "g-1", 1000, 1000, -1, A100, LSCHED_GPU_SHARED, NULL),
      LSCHED_EINVAL);
  ck_assert_int_eq(add_node_rc(fx, "cpu+", LSCHED_MAX_CPU_MILLI + 1, 1000, 0,
                               -1, LSCHED_GPU_SHARED, NULL),
                   LSCHED_ERANGE);
  ck_assert_int_eq(add_node_rc(fx, "mem+", 1000, LSCHED_MAX_MEMORY_MIB + 1, 0,
                               -1, LSCHED_GPU_SHARED, NULL),
                   LSCHED_ERANGE);
  ck_assert_int_eq(
      add_node_rc(fx, "cpu-", -1, 1000, 0, -1, LSCHED_GPU_SHARED, NULL),
      LSCHED_EINVAL);
  ck_assert_int_eq(
      add_node_rc(fx, "mem-", 1000, -1, 0, -1, LSCHED_GPU_SHARED, NULL),
      LSCHED_EINVAL);
  ck_assert_int_eq(
      add_node_rc(fx, "model2", 1000, 1000, 1, 2, LSCHED_GPU_SHARED, NULL),
      LSCHED_ENOENT);
  ck_assert_int_eq(
      add_node_rc(fx, "model-1", 1000, 1000, 1, -1, LSCHED_GPU_SHARED, NULL),
      LSCHED_ENOENT);
  ck_assert_int_eq(
      add_node_rc(fx, "model64", 1000, 1000, 1, 64, LSCHED_GPU_SHARED, NULL),
      LSCHED_ENOENT);
  ck_assert_int_eq(
      add_node_rc(fx, "mode", 1000, 1000, 1, A100, (lsched_gpu_mode)7, NULL),
      LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_node_count(fx), 0);
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);

  /* The limits themselves are accepted. */
  ck_assert_int_eq(add_node_rc(fx, "g64", LSCHED_MAX_CPU_MILLI,
                               LSCHED_MAX_MEMORY_MIB, 64, V100,
                               LSCHED_GPU_SHARED, &id),
                   LSCHED_OK);
  ck_assert_int_eq(id, 0);
  /* Without GPUs the model id is ignored. */
  ck_assert_int_eq(
      add_node_rc(fx, NULL, 0, 0, 0, 99, LSCHED_GPU_EXCLUSIVE, &id), LSCHED_OK);
  ck_assert_int_eq(id, 1);
  lsched_node_info info;
  ck_assert_int_eq(lsched_cluster_node_info(fx, 0, &info), LSCHED_OK);
  ck_assert_str_eq(info.name, "g64");
  ck_assert_int_eq(info.gpu_count, 64);
  ck_assert_int_eq(info.gpu_model, V100);
  ck_assert_int_eq(info.gpus_fully_free, 64);
  ck_assert_int_eq(info.gpu_milli_free, 64000);
  ck_assert_int_eq(info.cpu_milli, LSCHED_MAX_CPU_MILLI);
  ck_assert_int_eq(lsched_cluster_node_info(fx, 1, &info), LSCHED_OK);
  ck_assert_str_eq(info.name, "");
  ck_assert_int_eq(info.gpu_model, -1);
  ck_assert_int_eq(info.gpu_count, 0);
  ck_assert_int_eq(lsched_cluster_node_info(fx, 2, &info), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_node_info(fx, -1, &info), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 0, 64), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 0, -1), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 1, 0), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 2, 0), LSCHED_ENOENT);

  /* All 64 GPUs (the full mask), and the largest node's scores stay exact:
   * best-fit and worst-fit both place on it. */
  lsched_placement all =
      mkpl(0, LSCHED_MAX_CPU_MILLI, 0, 64, 1000, ~UINT64_C(0));
  ck_assert_int_eq(lsched_alloc(fx, &all), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_gpu_free(fx, 0, 63), 0);
  ck_assert_int_eq(lsched_release(fx, &all), LSCHED_OK);
  lsched_request r = mkreq(1000, 1, 64, 1000, 0);
  expect_place(fx, "best-fit", &r, 0, ~UINT64_C(0), 1000);
  r = mkreq(1000, 1, 1, 1, 0);
  expect_place(fx, "worst-fit", &r, 0, 0x1, 1);
  expect_place(fx, "best-fit", &r, 0, 0x1, 1);
  lsched_totals t;
  lsched_cluster_totals(fx, &t);
  ck_assert_int_eq(t.nodes, 2);
  ck_assert_int_eq(t.gpus, 64);
  ck_assert_int_eq(t.gpu_milli, 64000);
  ck_assert_int_eq(t.gpu_milli_free, 64000);
  ck_assert_int_eq(t.cpu_milli, LSCHED_MAX_CPU_MILLI);
}
END_TEST

START_TEST(test_model_registry) {
  lsched_cluster *c = NULL;
  ck_assert_int_eq(lsched_cluster_create(&c, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_model_count(c), 0);
  ck_assert_int_eq(lsched_cluster_model_id(c, "m0", 0), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_model_count(c), 0);
  char name[32];
  for (int i = 0; i < LSCHED_MAX_MODELS; i++) {
    snprintf(name, sizeof name, "m%d", i);
    ck_assert_int_eq(lsched_cluster_model_id(c, name, 1), i);
    ck_assert_int_eq(lsched_cluster_model_id(c, name, 1), i); /* again */
    ck_assert_int_eq(lsched_cluster_model_id(c, name, 0), i);
  }
  ck_assert_int_eq(lsched_cluster_model_count(c), LSCHED_MAX_MODELS);
  ck_assert_int_eq(lsched_cluster_model_id(c, "one-too-many", 1),
                   LSCHED_ELIMIT);
  ck_assert_str_ne(lsched_cluster_errmsg(c), "");
  ck_assert_int_eq(lsched_cluster_model_count(c), LSCHED_MAX_MODELS);
  ck_assert_int_eq(lsched_cluster_find_model(c, "one-too-many"), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_model_id(c, "m63", 1), 63);
  for (int i = 0; i < LSCHED_MAX_MODELS; i++) {
    snprintf(name, sizeof name, "m%d", i);
    ck_assert_str_eq(lsched_cluster_model_name(c, i), name);
    ck_assert_int_eq(lsched_cluster_find_model(c, name), i);
  }
  ck_assert_ptr_null(lsched_cluster_model_name(c, LSCHED_MAX_MODELS));
  ck_assert_ptr_null(lsched_cluster_model_name(c, -1));
  /* A node of model 63 is accepted, and a model mask bit 63 selects it. */
  ck_assert_int_eq(
      add_node_rc(c, "last", 1000, 1000, 2, 63, LSCHED_GPU_SHARED, NULL),
      LSCHED_OK);
  ck_assert_int_eq(
      add_node_rc(c, "first", 1000, 1000, 2, 0, LSCHED_GPU_SHARED, NULL),
      LSCHED_OK);
  lsched_request r = mkreq(0, 0, 1, 500, UINT64_C(1) << 63);
  ck_assert_int_eq(lsched_next_fit(c, &r, 0), 0);
  ck_assert_int_eq(lsched_fits(c, 1, &r), 0);
  r.model_mask = 1;
  ck_assert_int_eq(lsched_next_fit(c, &r, 0), 1);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  lsched_cluster_destroy(c);
}
END_TEST

START_TEST(test_set_order) {
  fx_three_shared();
  const int *o = lsched_cluster_order(fx);
  ck_assert_int_eq(o[0], 0);
  ck_assert_int_eq(o[1], 1);
  ck_assert_int_eq(o[2], 2);
  const int bad1[] = {0, 1, 1};
  const int bad2[] = {0, 1, 3};
  const int bad3[] = {-1, 0, 1};
  const int good[] = {2, 0, 1};
  ck_assert_int_eq(lsched_cluster_set_order(fx, bad1, 3), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_set_order(fx, bad2, 3), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_set_order(fx, bad3, 3), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_set_order(fx, good, 2), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_set_order(fx, good, 4), LSCHED_EINVAL);
  o = lsched_cluster_order(fx);
  ck_assert_int_eq(o[0], 0);
  ck_assert_int_eq(o[1], 1);
  ck_assert_int_eq(o[2], 2);
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_set_order(fx, good, 3), LSCHED_OK);
  o = lsched_cluster_order(fx);
  ck_assert_int_eq(o[0], 2);
  ck_assert_int_eq(o[1], 0);
  ck_assert_int_eq(o[2], 1);
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);
  /* After a failed set_order the old order still holds. */
  ck_assert_int_eq(lsched_cluster_set_order(fx, bad1, 3), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);
  o = lsched_cluster_order(fx);
  ck_assert_int_eq(o[0], 2);
  /* next_fit reports positions in the visit order. */
  must_alloc(fx, mkpl(2, 0, 0, 4, 1000, 0xF));
  lsched_request r = mkreq(0, 0, 1, 1000, 0);
  ck_assert_int_eq(lsched_next_fit(fx, &r, 0), 1); /* node 0 at position 1 */
  ck_assert_int_eq(lsched_next_fit(fx, &r, 2), 2);
  ck_assert_int_eq(lsched_next_fit(fx, &r, 3), -1);
  ck_assert_int_eq(lsched_next_fit(fx, &r, -5), 1);
  /* set_order on an empty cluster. */
  lsched_cluster *c = NULL;
  ck_assert_int_eq(lsched_cluster_create(&c, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_set_order(c, NULL, 0), LSCHED_OK);
  ck_assert_int_eq(lsched_next_fit(c, &r, 0), -1);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  lsched_cluster_destroy(c);
}
END_TEST

START_TEST(test_pick_gpus_errors) {
  fx_small_mixed();
  lsched_placement p;
  lsched_request r = mkreq(0, 0, 1, 500, 0);
  ck_assert_int_eq(lsched_pick_gpus(fx, 3, &r, LSCHED_PICK_LOWEST, &p),
                   LSCHED_ENOENT);
  ck_assert_int_eq(lsched_pick_gpus(fx, -1, &r, LSCHED_PICK_LOWEST, &p),
                   LSCHED_ENOENT);
  ck_assert_int_eq(lsched_pick_gpus(fx, 2, &r, LSCHED_PICK_LOWEST, &p),
                   LSCHED_ENOFIT);
  r.gpu_count = 3;
  ck_assert_int_eq(lsched_pick_gpus(fx, 0, &r, LSCHED_PICK_TIGHTEST, &p),
                   LSCHED_ENOFIT);
  r.gpu_count = 2;
  ck_assert_int_eq(lsched_pick_gpus(fx, 1, &r, LSCHED_PICK_LOOSEST, &p),
                   LSCHED_OK);
  ck_assert_int_eq(p.node, 1);
  ck_assert_int_eq(p.gpu_milli, 1000);
  ck_assert_uint_eq(p.gpu_mask, 0x3);
  ck_assert_int_eq(lsched_effective_milli(fx, 0, &r), 500);
  ck_assert_int_eq(lsched_effective_milli(fx, 1, &r), 1000);
  ck_assert_int_lt(lsched_effective_milli(fx, 3, &r), 0);
  /* A shared node with GPU0 at 700 free and GPU1 whole: a whole GPU is
   * GPU1 under every rule; a half GPU is GPU1 for the loosest, GPU0 for
   * the tightest and the lowest. */
  must_alloc(fx, mkpl(0, 0, 0, 1, 300, 0x1));
  lsched_request w = mkreq(0, 0, 1, 1000, 0), h = mkreq(0, 0, 1, 500, 0);
  const lsched_gpu_pick rules[] = {LSCHED_PICK_LOWEST, LSCHED_PICK_TIGHTEST,
                                   LSCHED_PICK_LOOSEST};
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(lsched_pick_gpus(fx, 0, &w, rules[i], &p), LSCHED_OK);
    ck_assert_uint_eq(p.gpu_mask, 0x2);
    ck_assert_int_eq(lsched_pick_gpus(fx, 0, &h, rules[i], &p), LSCHED_OK);
    ck_assert_uint_eq(p.gpu_mask, rules[i] == LSCHED_PICK_LOOSEST ? 0x2 : 0x1);
  }
  w.gpu_count = 2; /* two whole GPUs: only one is whole */
  ck_assert_int_eq(lsched_pick_gpus(fx, 0, &w, LSCHED_PICK_LOOSEST, &p),
                   LSCHED_ENOFIT);
}
END_TEST

START_TEST(test_check_detects_corruption) {
  fx_small_mixed();
  must_alloc(fx, mkpl(0, 1000, 100, 1, 300, 0x1));
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);
  struct lsched_node *nd = &fx->nodes[0];
  int64_t save = nd->cpu_free;
  nd->cpu_free = nd->cpu_cap + 1;
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_ESTATE);
  ck_assert_str_ne(lsched_cluster_errmsg(fx), "");
  nd->cpu_free = save;
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);
  /* A share on an exclusive GPU that is neither whole nor empty. */
  int *g = &fx->gpu_free[fx->nodes[1].gpu_off];
  g[0] = 500;
  fx->nodes[1].gpu_free_sum -= 500;
  fx->nodes[1].gpus_full_free -= 1;
  fx->nodes[1].max_gpu_free = 1000;
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_ESTATE);
  g[0] = 1000;
  fx->nodes[1].gpu_free_sum += 500;
  fx->nodes[1].gpus_full_free += 1;
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);
  /* A cached aggregate that disagrees with the pool. */
  fx->nodes[0].gpu_free_sum += 1;
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_ESTATE);
  fx->nodes[0].gpu_free_sum -= 1;
  /* A stale fit index entry. */
  fx->seg[1].res += 1;
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_ESTATE);
  fx->seg[1].res -= 1;
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Property tests                                                          */

#define PMAXN 12
#define PMAXG 8
#define PSTEPS 500
#define PCLUSTERS_PER_RUN 50
#define PRUNS 4 /* x 50 = 200 random clusters */

/* What the test believes the free resources are. */
struct shadow {
  int n;
  lsched_node_spec spec[PMAXN];
  int64_t cpu[PMAXN], mem[PMAXN];
  int gpu[PMAXN][PMAXG];
};

static void shadow_assert_matches(const lsched_cluster *c,
                                  const struct shadow *sh) {
  REQ_EQ(lsched_cluster_node_count(c), sh->n);
  for (int i = 0; i < sh->n; i++) {
    lsched_node_info info;
    REQ_EQ(lsched_cluster_node_info(c, i, &info), LSCHED_OK);
    REQ_EQ(info.cpu_free, sh->cpu[i]);
    REQ_EQ(info.memory_free, sh->mem[i]);
    REQ_GE(info.cpu_free, 0);
    REQ_GE(info.memory_free, 0);
    REQ_LE(info.cpu_free, info.cpu_milli);
    REQ_LE(info.memory_free, info.memory_mib);
    int full = 0;
    int64_t sum = 0;
    for (int g = 0; g < sh->spec[i].gpu_count; g++) {
      REQ_EQ(lsched_cluster_gpu_free(c, i, g), sh->gpu[i][g]);
      REQ_GE(sh->gpu[i][g], 0);
      REQ_LE(sh->gpu[i][g], LSCHED_GPU_MILLI);
      full += sh->gpu[i][g] == LSCHED_GPU_MILLI;
      sum += sh->gpu[i][g];
    }
    REQ_EQ(info.gpus_fully_free, full);
    REQ_EQ(info.gpu_milli_free, sum);
  }
}

/* Would placement p fit the shadow state? (p is well-formed.) */
static int shadow_fits(const struct shadow *sh, const lsched_placement *p) {
  int i = p->node;
  if (p->cpu_milli > sh->cpu[i] || p->memory_mib > sh->mem[i])
    return 0;
  for (int g = 0; g < sh->spec[i].gpu_count; g++)
    if ((p->gpu_mask >> g) & 1 && sh->gpu[i][g] < p->gpu_milli)
      return 0;
  return 1;
}

/* Does req fit node i of the shadow state? Written from the definitions,
 * independently of the library. */
static int shadow_req_fits(const struct shadow *sh, int i,
                           const lsched_request *req) {
  const lsched_node_spec *s = &sh->spec[i];
  if (req->cpu_milli > sh->cpu[i] || req->memory_mib > sh->mem[i])
    return 0;
  if (req->gpu_count == 0)
    return 1;
  if (s->gpu_count < req->gpu_count)
    return 0;
  if (req->model_mask && !(req->model_mask & (UINT64_C(1) << s->gpu_model)))
    return 0;
  int d =
      s->gpu_mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI : req->gpu_milli;
  int cnt = 0;
  for (int g = 0; g < s->gpu_count; g++)
    cnt += sh->gpu[i][g] >= d;
  return cnt >= req->gpu_count;
}

/*
 * The three built-in policies re-derived from their definitions (see the
 * notation above test_hand_mixed_state), on the shadow state. policy: 0
 * first-fit, 1 best-fit, 2 worst-fit. Returns 0 and fills *out, or -1 when
 * nothing fits. Products stay small: caps here are below 2^17 milli.
 */
static int reference_place(const struct shadow *sh, const int *order,
                           const lsched_request *req, int policy,
                           lsched_placement *out) {
  int64_t A = 0, B = 0;
  for (int i = 0; i < sh->n; i++) {
    if (sh->spec[i].cpu_milli > A)
      A = sh->spec[i].cpu_milli;
    if (1000 * (int64_t)sh->spec[i].gpu_count > B)
      B = 1000 * (int64_t)sh->spec[i].gpu_count;
  }
  if (A == 0)
    A = 1; /* every a is 0 then */
  if (B == 0)
    B = 1000;
  int cand[PMAXN], m = 0;
  int64_t score[PMAXN], lo = INT64_MAX, hi = INT64_MIN;
  for (int p = 0; p < sh->n; p++) {
    int i = order[p];
    if (!shadow_req_fits(sh, i, req))
      continue;
    const lsched_node_spec *s = &sh->spec[i];
    int d = req->gpu_count == 0                   ? 0
            : s->gpu_mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI
                                                  : req->gpu_milli;
    int64_t gfree = 0;
    for (int g = 0; g < s->gpu_count; g++)
      gfree += sh->gpu[i][g];
    int64_t a = sh->cpu[i] - req->cpu_milli;
    int64_t b = gfree - (int64_t)req->gpu_count * d;
    /* 100 x leftover = 100 (a/(2A) + b/(2B)) = (50 a B + 50 b A) / (A B) */
    int64_t num = 50 * a * B + 50 * b * A, den = A * B;
    int64_t sc = policy == 2 ? num / den : (100 * den - num) / den;
    cand[m] = i;
    score[m] = sc;
    m++;
    if (sc < lo)
      lo = sc;
    if (sc > hi)
      hi = sc;
  }
  if (m == 0)
    return -1;
  int best = 0;
  if (policy != 0) {
    int64_t best_norm = -1;
    for (int j = 0; j < m; j++) {
      int64_t norm = hi > lo ? (score[j] - lo) * 100 / (hi - lo) : 100;
      if (norm > best_norm) {
        best_norm = norm;
        best = j;
      }
    }
  }
  int i = cand[best];
  const lsched_node_spec *s = &sh->spec[i];
  memset(out, 0, sizeof *out);
  out->node = i;
  out->cpu_milli = req->cpu_milli;
  out->memory_mib = req->memory_mib;
  out->gpu_count = req->gpu_count;
  if (req->gpu_count == 0)
    return 0;
  int d =
      s->gpu_mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI : req->gpu_milli;
  out->gpu_milli = d;
  for (int got = 0; got < req->gpu_count; got++) {
    int pick = -1;
    for (int g = 0; g < s->gpu_count; g++) {
      int f = sh->gpu[i][g];
      if (f < d || (out->gpu_mask >> g) & 1)
        continue;
      if (pick < 0 ||
          (policy == 1 && d < LSCHED_GPU_MILLI && f < sh->gpu[i][pick]) ||
          (policy == 2 && f > sh->gpu[i][pick]))
        pick = g; /* first-fit and whole-GPU best-fit: lowest index */
    }
    out->gpu_mask |= UINT64_C(1) << pick;
  }
  return 0;
}

static void shadow_apply(struct shadow *sh, const lsched_placement *p,
                         int sign) {
  int i = p->node;
  sh->cpu[i] -= sign * p->cpu_milli;
  sh->mem[i] -= sign * p->memory_mib;
  for (int g = 0; g < sh->spec[i].gpu_count; g++)
    if ((p->gpu_mask >> g) & 1)
      sh->gpu[i][g] -= sign * p->gpu_milli;
}

static const int64_t cpu_caps[] = {0, 4000, 8000, 16000, 32000, 64000, 96000};
static const int64_t mem_caps[] = {0, 16384, 65536, 131072, 262144};

static void random_specs(struct rng *r, struct shadow *sh) {
  memset(sh, 0, sizeof *sh);
  sh->n = 1 + (int)rng_below(r, PMAXN);
  for (int i = 0; i < sh->n; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = rng_below(r, 4) ? cpu_caps[rng_below(r, 7)]
                                  : (int64_t)rng_below(r, 100000);
    s.memory_mib = mem_caps[rng_below(r, 5)];
    s.gpu_count = (int)rng_below(r, PMAXG + 1);
    s.gpu_model = (int)rng_below(r, 3);
    s.gpu_mode = rng_below(r, 2) ? LSCHED_GPU_SHARED : LSCHED_GPU_EXCLUSIVE;
    sh->spec[i] = s;
    sh->cpu[i] = s.cpu_milli;
    sh->mem[i] = s.memory_mib;
    for (int g = 0; g < s.gpu_count; g++)
      sh->gpu[i][g] = LSCHED_GPU_MILLI;
  }
}

static lsched_cluster *build_from_specs(const struct shadow *sh,
                                        int check_inv) {
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.check_invariants = check_inv;
  lsched_cluster *c = NULL;
  REQ_EQ(lsched_cluster_create(&c, &o), LSCHED_OK);
  REQ_EQ(lsched_cluster_model_id(c, "A", 1), 0);
  REQ_EQ(lsched_cluster_model_id(c, "B", 1), 1);
  REQ_EQ(lsched_cluster_model_id(c, "C", 1), 2);
  for (int i = 0; i < sh->n; i++) {
    int id = -1;
    REQ_EQ(lsched_cluster_add_node(c, &sh->spec[i], &id), LSCHED_OK);
    REQ_EQ(id, i);
  }
  return c;
}

static lsched_request random_request(struct rng *r) {
  lsched_request q = LSCHED_REQUEST_INIT;
  q.cpu_milli = rng_below(r, 4) == 0 ? 0 : (int64_t)rng_below(r, 40000);
  q.memory_mib = rng_below(r, 3) == 0 ? 0 : (int64_t)rng_below(r, 140000);
  uint64_t kind = rng_below(r, 10);
  q.gpu_count = kind < 3   ? 0
                : kind < 9 ? 1 + (int)rng_below(r, 3)
                           : (int)rng_below(r, PMAXG + 2);
  if (q.gpu_count > 0) {
    static const int shares[] = {1000, 1000, 500, 250, 1};
    uint64_t s = rng_below(r, 7);
    q.gpu_milli = s < 5 ? shares[s] : 1 + (int)rng_below(r, 1000);
  }
  if (rng_below(r, 3) == 0)
    q.model_mask = rng_below(r, 16); /* bit 3 names no model */
  return q;
}

static void random_permutation(struct rng *r, int *perm, int n) {
  for (int i = 0; i < n; i++)
    perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)rng_below(r, (uint64_t)i + 1);
    int t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

static int brute_next_fit(const lsched_cluster *c, const lsched_request *req,
                          int from) {
  int n = lsched_cluster_node_count(c);
  const int *order = lsched_cluster_order(c);
  for (int p = from < 0 ? 0 : from; p < n; p++)
    if (lsched_fits(c, order[p], req))
      return p;
  return -1;
}

static int brute_ever_fit(const lsched_cluster *empty,
                          const lsched_request *req) {
  for (int i = 0; i < lsched_cluster_node_count(empty); i++)
    if (lsched_fits(empty, i, req))
      return 1;
  return 0;
}

/* A policy's placement is well-formed and fits the shadow state. */
static void assert_valid_placement(const lsched_cluster *c,
                                   const struct shadow *sh,
                                   const lsched_request *req,
                                   const lsched_placement *p) {
  REQ_GE(p->node, 0);
  REQ_LT(p->node, sh->n);
  const lsched_node_spec *s = &sh->spec[p->node];
  REQ(lsched_fits(c, p->node, req));
  REQ_EQ(p->cpu_milli, req->cpu_milli);
  REQ_EQ(p->memory_mib, req->memory_mib);
  REQ_EQ(p->gpu_count, req->gpu_count);
  REQ_EQ(popcount64(p->gpu_mask), req->gpu_count);
  if (req->gpu_count == 0) {
    REQ_EQ(p->gpu_milli, 0);
  } else {
    REQ_EQ(p->gpu_milli, s->gpu_mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI
                                                             : req->gpu_milli);
    REQ_EQ(p->gpu_mask >> s->gpu_count, 0);
    if (req->model_mask)
      REQ(req->model_mask & (UINT64_C(1) << s->gpu_model));
  }
  REQ(shadow_fits(sh, p));
}

/* One random well-formed placement on a random node (it may over-commit). */
static lsched_placement random_raw_placement(struct rng *r,
                                             const struct shadow *sh) {
  int i = (int)rng_below(r, (uint64_t)sh->n);
  const lsched_node_spec *s = &sh->spec[i];
  lsched_placement p =
      mkpl(i, (int64_t)rng_below(r, (uint64_t)sh->cpu[i] + 2),
           (int64_t)rng_below(r, (uint64_t)sh->mem[i] + 2), 0, 0, 0);
  if (s->gpu_count > 0 && rng_below(r, 4)) {
    for (int g = 0; g < s->gpu_count; g++)
      if (rng_below(r, 3) == 0)
        p.gpu_mask |= UINT64_C(1) << g;
    p.gpu_count = popcount64(p.gpu_mask);
    if (p.gpu_count)
      p.gpu_milli = s->gpu_mode == LSCHED_GPU_EXCLUSIVE
                        ? LSCHED_GPU_MILLI
                        : 1 + (int)rng_below(r, 1000);
  }
  return p;
}

static void run_random_cluster(uint64_t seed) {
  struct rng r;
  rng_seed(&r, seed);
  struct shadow sh;
  random_specs(&r, &sh);
  lsched_cluster *c = build_from_specs(&sh, (int)(seed & 1));
  lsched_cluster *empty = build_from_specs(&sh, 0);
  int perm[PMAXN];
  if (rng_below(&r, 2)) {
    random_permutation(&r, perm, sh.n);
    REQ_EQ(lsched_cluster_set_order(c, perm, sh.n), LSCHED_OK);
  }
  struct snap initial;
  snap_take(c, &initial);

  lsched_registry *reg = NULL;
  REQ_EQ(lsched_registry_create(&reg, NULL), LSCHED_OK);
  REQ_EQ(lsched_registry_add_builtins(reg), LSCHED_OK);
  static const char *const names[] = {"first-fit", "best-fit", "worst-fit"};
  lsched_policy *pol[3];
  for (int i = 0; i < 3; i++)
    REQ_EQ(
        lsched_policy_create(&pol[i], c, lsched_registry_find(reg, names[i])),
        LSCHED_OK);

  lsched_placement live[PSTEPS];
  int nlive = 0;
  for (int step = 0; step < PSTEPS; step++) {
    uint64_t op = rng_below(&r, 100);
    if (op < 50) {
      lsched_request q = random_request(&r);
      lsched_placement p;
      int which = (int)rng_below(&r, 3);
      int rc = lsched_policy_place(pol[which], &q, &p);
      lsched_placement want;
      int ref = reference_place(&sh, lsched_cluster_order(c), &q, which, &want);
      if (rc == LSCHED_OK) {
        assert_valid_placement(c, &sh, &q, &p);
        REQ_MSG(ref == 0 && p.node == want.node &&
                    p.gpu_mask == want.gpu_mask &&
                    p.gpu_milli == want.gpu_milli,
                "%s: node %d mask %#llx milli %d, definition gives node %d "
                "mask %#llx milli %d",
                names[which], p.node, (unsigned long long)p.gpu_mask,
                p.gpu_milli, ref == 0 ? want.node : -1,
                (unsigned long long)want.gpu_mask, want.gpu_milli);
        REQ_EQ(lsched_alloc(c, &p), LSCHED_OK);
        shadow_apply(&sh, &p, 1);
        live[nlive++] = p;
      } else {
        REQ_MSG(rc == (lsched_can_ever_fit(c, &q) ? LSCHED_ENOFIT
                                                  : LSCHED_ENEVER),
                "%s: %s", names[which], lsched_err_name(rc));
        REQ(ref == -1);
        for (int i = 0; i < sh.n; i++)
          REQ_MSG(!shadow_req_fits(&sh, i, &q),
                  "%s said ENOFIT but node %d fits", names[which], i);
      }
    } else if (op < 60) {
      /* A raw placement: accepted exactly when it fits. */
      lsched_placement p = random_raw_placement(&r, &sh);
      int expect = shadow_fits(&sh, &p) ? LSCHED_OK : LSCHED_ERANGE;
      REQ_EQ(lsched_alloc(c, &p), expect);
      if (expect == LSCHED_OK) {
        shadow_apply(&sh, &p, 1);
        live[nlive++] = p;
      }
    } else if (op < 62) {
      random_permutation(&r, perm, sh.n);
      REQ_EQ(lsched_cluster_set_order(c, perm, sh.n), LSCHED_OK);
      const int *o = lsched_cluster_order(c);
      for (int i = 0; i < sh.n; i++)
        REQ_EQ(o[i], perm[i]);
    } else if (nlive > 0) {
      int k = (int)rng_below(&r, (uint64_t)nlive);
      REQ_EQ(lsched_release(c, &live[k]), LSCHED_OK);
      shadow_apply(&sh, &live[k], -1);
      live[k] = live[--nlive];
    }
    REQ_EQ(lsched_cluster_check(c), LSCHED_OK);
    shadow_assert_matches(c, &sh);
    for (int t = 0; t < 3; t++) {
      lsched_request q = random_request(&r);
      for (int i = 0; i < sh.n; i++)
        REQ_EQ(lsched_fits(c, i, &q), shadow_req_fits(&sh, i, &q));
      int from = (int)rng_below(&r, (uint64_t)sh.n + 4) - 2;
      REQ_EQ(lsched_next_fit(c, &q, from), brute_next_fit(c, &q, from));
      REQ_EQ(lsched_can_ever_fit(c, &q), brute_ever_fit(empty, &q));
    }
  }
  /* Release everything, in random order: the exact initial state. */
  while (nlive > 0) {
    int k = (int)rng_below(&r, (uint64_t)nlive);
    REQ_EQ(lsched_release(c, &live[k]), LSCHED_OK);
    shadow_apply(&sh, &live[k], -1);
    live[k] = live[--nlive];
    REQ_EQ(lsched_cluster_check(c), LSCHED_OK);
  }
  struct snap final;
  snap_take(c, &final);
  snap_assert_equal(&initial, &final, 0);
  shadow_assert_matches(c, &sh);
  for (int i = 0; i < 3; i++)
    lsched_policy_destroy(pol[i]);
  lsched_registry_destroy(reg);
  /* Nothing is allocated any more, so the node set may grow again. */
  REQ_EQ(add_node_rc(c, "extra", 1000, 1000, 0, -1, LSCHED_GPU_SHARED, NULL),
         LSCHED_OK);
  REQ_EQ(lsched_cluster_check(c), LSCHED_OK);
  lsched_cluster_destroy(empty);
  lsched_cluster_destroy(c);
}

START_TEST(test_prop_random_ops) {
  for (int k = 0; k < PCLUSTERS_PER_RUN; k++)
    run_random_cluster((uint64_t)_i * PCLUSTERS_PER_RUN + (uint64_t)k + 1);
}
END_TEST

/* next_fit against brute force on larger clusters (deeper index trees),
 * with near-misses on most nodes. */
START_TEST(test_prop_next_fit_large) {
  struct rng r;
  rng_seed(&r, 0xC0FFEE + (uint64_t)_i);
  for (int round = 0; round < 10; round++) {
    lsched_cluster *c = NULL;
    REQ_EQ(lsched_cluster_create(&c, NULL), LSCHED_OK);
    REQ_EQ(lsched_cluster_model_id(c, "A", 1), 0);
    REQ_EQ(lsched_cluster_model_id(c, "B", 1), 1);
    int n = 1 + (int)rng_below(&r, 300);
    for (int i = 0; i < n; i++)
      add_node(c, NULL, 1000 * (int64_t)rng_below(&r, 9), 1024,
               (int)rng_below(&r, 9), (int)rng_below(&r, 2),
               rng_below(&r, 2) ? LSCHED_GPU_SHARED : LSCHED_GPU_EXCLUSIVE);
    int *perm = malloc(sizeof(int) * (size_t)n);
    REQ(perm != NULL);
    random_permutation(&r, perm, n);
    REQ_EQ(lsched_cluster_set_order(c, perm, n), LSCHED_OK);
    /* Fill randomly through first-fit placements. */
    for (int step = 0; step < 4 * n; step++) {
      lsched_request q =
          mkreq(1000 * (int64_t)rng_below(&r, 3), 0, 1 + (int)rng_below(&r, 2),
                1 + (int)rng_below(&r, 1000), 0);
      lsched_placement p;
      int pos = lsched_next_fit(c, &q, 0);
      REQ_EQ(pos, brute_next_fit(c, &q, 0));
      if (pos >= 0) {
        REQ_EQ(lsched_pick_gpus(c, perm[pos], &q,
                                (lsched_gpu_pick)rng_below(&r, 3), &p),
               LSCHED_OK);
        REQ_EQ(lsched_alloc(c, &p), LSCHED_OK);
      }
      for (int t = 0; t < 4; t++) {
        lsched_request x =
            mkreq(1000 * (int64_t)rng_below(&r, 9),
                  (int64_t)rng_below(&r, 1100), (int)rng_below(&r, 5), 0,
                  rng_below(&r, 2) ? 0 : 1 + rng_below(&r, 3));
        if (x.gpu_count)
          x.gpu_milli = rng_below(&r, 2) ? 1000 : 1 + (int)rng_below(&r, 1000);
        int from = (int)rng_below(&r, (uint64_t)n + 2) - 1;
        REQ_EQ(lsched_next_fit(c, &x, from), brute_next_fit(c, &x, from));
      }
    }
    REQ_EQ(lsched_cluster_check(c), LSCHED_OK);
    free(perm);
    lsched_cluster_destroy(c);
  }
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Registry and outside policies                                           */

/* Counters of hook calls (owned by the test). */
struct probe_counts {
  int inits, finis, places, allocs, releases;
  lsched_placement last_alloc, last_release;
  const lsched_cluster *last_cluster;
};

/* The counters of the probe instances, in order of creation: instance i of
 * a test reports into probe_log[i]. Each test runs in its own process (or
 * resets them first), so the log is the test's. The test reads an
 * instance's counts by its creation order instead of handing the instance
 * a pointer through set_param("%p"). */
enum { PROBE_MAX = 8 };
static struct probe_counts probe_log[PROBE_MAX];
static int probe_next;

static void probe_reset(void) {
  memset(probe_log, 0, sizeof probe_log);
  probe_next = 0;
}

/* "last-fit": the last node in the visit order that fits, loosest GPUs
 * (param "gpus": "loosest" or "lowest"). Written against the public
 * interface only, as an outside scheduler would. Its state counts hook
 * calls into its probe_log slot. */
struct probe_state {
  struct probe_counts *k;
  lsched_gpu_pick pick;
};

static int probe_init(void *state, const lsched_cluster *c) {
  struct probe_state *s = state;
  if (probe_next == PROBE_MAX)
    return LSCHED_ELIMIT;
  s->k = &probe_log[probe_next++];
  s->pick = LSCHED_PICK_LOOSEST;
  s->k->inits++;
  s->k->last_cluster = c;
  return LSCHED_OK;
}

static void probe_fini(void *state) {
  ((struct probe_state *)state)->k->finis++;
}

static int probe_set_param(void *state, const char *key, const char *value) {
  struct probe_state *s = state;
  if (strcmp(key, "gpus") != 0)
    return LSCHED_ENOENT;
  if (strcmp(value, "loosest") == 0)
    s->pick = LSCHED_PICK_LOOSEST;
  else if (strcmp(value, "lowest") == 0)
    s->pick = LSCHED_PICK_LOWEST;
  else
    return LSCHED_EINVAL;
  return LSCHED_OK;
}

static int probe_place(void *state, const lsched_cluster *c,
                       const lsched_request *req, lsched_placement *out) {
  struct probe_state *s = state;
  s->k->places++;
  const int *order = lsched_cluster_order(c);
  for (int p = lsched_cluster_node_count(c) - 1; p >= 0; p--)
    if (lsched_fits(c, order[p], req))
      return lsched_pick_gpus(c, order[p], req, s->pick, out);
  return LSCHED_ENOFIT;
}

static void probe_on_alloc(void *state, const lsched_cluster *c,
                           const lsched_placement *p) {
  struct probe_counts *k = ((struct probe_state *)state)->k;
  k->allocs++;
  k->last_alloc = *p;
  k->last_cluster = c;
}

static void probe_on_release(void *state, const lsched_cluster *c,
                             const lsched_placement *p) {
  struct probe_counts *k = ((struct probe_state *)state)->k;
  k->releases++;
  k->last_release = *p;
  k->last_cluster = c;
}

static const lsched_policy_ops probe_ops = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "last-fit",
    .description = "test policy: last node in order that fits",
    .state_size = sizeof(struct probe_state),
    .init = probe_init,
    .fini = probe_fini,
    .set_param = probe_set_param,
    .place = probe_place,
    .on_alloc = probe_on_alloc,
    .on_release = probe_on_release,
};

/* A cluster observer counting into a struct probe_counts (its user). */
struct obs_counts {
  struct probe_counts k;
  int trial_allocs, trial_releases;
};

static void obs_on_alloc(void *user, const lsched_cluster *c,
                         const lsched_placement *p, int trial) {
  struct obs_counts *o = user;
  if (trial) {
    o->trial_allocs++;
    return;
  }
  o->k.allocs++;
  o->k.last_alloc = *p;
  o->k.last_cluster = c;
}

static void obs_on_release(void *user, const lsched_cluster *c,
                           const lsched_placement *p, int trial) {
  struct obs_counts *o = user;
  if (trial) {
    o->trial_releases++;
    return;
  }
  o->k.releases++;
  o->k.last_release = *p;
  o->k.last_cluster = c;
}

static const lsched_observer obs_counter = {
    .version = LSCHED_OBSERVER_VERSION,
    .on_alloc = obs_on_alloc,
    .on_release = obs_on_release,
};

static void assert_same_placement(const lsched_placement *a,
                                  const lsched_placement *b) {
  ck_assert_int_eq(a->node, b->node);
  ck_assert_int_eq(a->gpu_count, b->gpu_count);
  ck_assert_int_eq(a->gpu_milli, b->gpu_milli);
  ck_assert_uint_eq(a->gpu_mask, b->gpu_mask);
  ck_assert_int_eq(a->cpu_milli, b->cpu_milli);
  ck_assert_int_eq(a->memory_mib, b->memory_mib);
}

START_TEST(test_registry_builtins) {
  lsched_registry *r = NULL;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  ck_assert_uint_eq(lsched_registry_count(r), 0);
  ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  /* The foundation's three come first, in this order; later builtins
   * (defrag, FGD, MIG, ...) follow and are covered by test_conformance. */
  static const char *const names[] = {"first-fit", "best-fit", "worst-fit"};
  ck_assert_uint_ge(lsched_registry_count(r), 3);
  ck_assert_ptr_nonnull(lsched_registry_find(r, "defrag"));
  for (size_t i = 0; i < 3; i++) {
    const lsched_policy_ops *ops = lsched_registry_at(r, i);
    ck_assert_ptr_nonnull(ops);
    ck_assert_str_eq(ops->name, names[i]);
    ck_assert_ptr_eq(lsched_registry_find(r, names[i]), ops);
    ck_assert_uint_eq(ops->version, LSCHED_POLICY_OPS_VERSION);
    ck_assert_ptr_nonnull(ops->place);
    ck_assert_ptr_nonnull(ops->description);
  }
  ck_assert_ptr_null(lsched_registry_at(r, lsched_registry_count(r)));
  ck_assert_ptr_null(lsched_registry_find(r, "no-such-policy"));
  ck_assert_ptr_null(lsched_registry_find(r, "First-Fit"));
  ck_assert_ptr_null(lsched_registry_find(r, ""));
  /* Registering the builtins again adds nothing. */
  size_t nb = lsched_registry_count(r);
  int rc = lsched_registry_add_builtins(r);
  ck_assert(rc == LSCHED_OK || rc == LSCHED_EEXIST);
  ck_assert_uint_eq(lsched_registry_count(r), nb);
  /* A distinct table under a taken name, or the same table again. */
  lsched_policy_ops dup = {0};
  dup.version = LSCHED_POLICY_OPS_VERSION;
  dup.name = "best-fit";
  dup.place = never_place;
  ck_assert_int_eq(lsched_registry_add(r, &dup), LSCHED_EEXIST);
  ck_assert_int_eq(lsched_registry_add(r, lsched_registry_at(r, 0)),
                   LSCHED_EEXIST);
  /* Malformed tables. */
  lsched_policy_ops bad = {0};
  bad.version = LSCHED_POLICY_OPS_VERSION;
  bad.name = "no-place";
  ck_assert_int_eq(lsched_registry_add(r, &bad), LSCHED_EINVAL);
  bad.place = never_place;
  bad.name = NULL;
  ck_assert_int_eq(lsched_registry_add(r, &bad), LSCHED_EINVAL);
  bad.name = "";
  ck_assert_int_eq(lsched_registry_add(r, &bad), LSCHED_EINVAL);
  bad.name = "bad-version";
  bad.version = 0;
  ck_assert_int_eq(lsched_registry_add(r, &bad), LSCHED_EVERSION);
  bad.version = 99;
  ck_assert_int_eq(lsched_registry_add(r, &bad), LSCHED_EVERSION);
  ck_assert_uint_eq(lsched_registry_count(r), nb);
  ck_assert_ptr_null(lsched_registry_find(r, "no-place"));
  ck_assert_ptr_null(lsched_registry_find(r, "bad-version"));
  lsched_registry_destroy(r);

  /* A registry grows past its first allocation and keeps the order. */
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  enum { NMANY = 40 };
  char many_names[NMANY][16];
  lsched_policy_ops many[NMANY];
  for (int i = 0; i < NMANY; i++) {
    snprintf(many_names[i], sizeof many_names[i], "p%02d", i);
    memset(&many[i], 0, sizeof many[i]);
    many[i].version = LSCHED_POLICY_OPS_VERSION;
    many[i].name = many_names[i];
    many[i].place = never_place;
    ck_assert_int_eq(lsched_registry_add(r, &many[i]), LSCHED_OK);
  }
  ck_assert_uint_eq(lsched_registry_count(r), NMANY);
  for (int i = 0; i < NMANY; i++) {
    ck_assert_ptr_eq(lsched_registry_at(r, (size_t)i), &many[i]);
    ck_assert_ptr_eq(lsched_registry_find(r, many_names[i]), &many[i]);
  }
  lsched_registry_destroy(r);
}
END_TEST

START_TEST(test_registry_outside_policy) {
  fx_three_shared();
  lsched_registry *r = NULL;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  size_t nb = lsched_registry_count(r);
  ck_assert_int_eq(lsched_registry_add(r, &probe_ops), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add(r, &probe_ops), LSCHED_EEXIST);
  ck_assert_uint_eq(lsched_registry_count(r), nb + 1);
  ck_assert_ptr_eq(lsched_registry_at(r, nb), &probe_ops);
  const lsched_policy_ops *ops = lsched_registry_find(r, "last-fit");
  ck_assert_ptr_eq(ops, &probe_ops);

  probe_reset();
  lsched_policy *a = NULL, *b = NULL, *ff = NULL;
  struct probe_counts *ka = &probe_log[0], *kb = &probe_log[1];
  ck_assert_int_eq(lsched_policy_create(&a, fx, ops), LSCHED_OK);
  ck_assert_int_eq(ka->inits, 1);
  ck_assert_ptr_eq(ka->last_cluster, fx);
  ck_assert_str_eq(lsched_policy_name(a), "last-fit");
  ck_assert_int_eq(lsched_policy_set_param(a, "nope", "1"), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_policy_set_param(a, "gpus", "0"), LSCHED_EINVAL);
  ck_assert_int_eq(
      lsched_policy_create(&ff, fx, lsched_registry_find(r, "first-fit")),
      LSCHED_OK);
  ck_assert_int_eq(lsched_policy_set_param(ff, "seed", "1"), LSCHED_ENOENT);

  /* Used the same way as a builtin. */
  lsched_request q = mkreq(2000, 1024, 1, 500, 0);
  lsched_placement pa, pf;
  ck_assert_int_eq(lsched_policy_place(a, &q, &pa), LSCHED_OK);
  ck_assert_int_eq(ka->places, 1);
  ck_assert_int_eq(pa.node, 2);
  ck_assert_uint_eq(pa.gpu_mask, 0x1);
  ck_assert_int_eq(ka->allocs, 0); /* placing allocates nothing */
  ck_assert_int_eq(lsched_alloc(fx, &pa), LSCHED_OK);
  ck_assert_int_eq(ka->allocs, 1);
  assert_same_placement(&ka->last_alloc, &pa);
  ck_assert_ptr_eq(ka->last_cluster, fx);
  /* Hooks also see placements another policy chose. */
  ck_assert_int_eq(lsched_policy_place(ff, &q, &pf), LSCHED_OK);
  ck_assert_int_eq(pf.node, 0);
  ck_assert_int_eq(lsched_alloc(fx, &pf), LSCHED_OK);
  ck_assert_int_eq(ka->allocs, 2);
  assert_same_placement(&ka->last_alloc, &pf);
  /* A failed alloc or release is not reported. */
  lsched_placement over = mkpl(0, 1000000, 0, 0, 0, 0);
  ck_assert_int_eq(lsched_alloc(fx, &over), LSCHED_ERANGE);
  ck_assert_int_eq(lsched_release(fx, &over), LSCHED_ERANGE);
  ck_assert_int_eq(ka->allocs, 2);
  ck_assert_int_eq(ka->releases, 0);
  ck_assert_int_eq(lsched_release(fx, &pa), LSCHED_OK);
  ck_assert_int_eq(ka->releases, 1);
  assert_same_placement(&ka->last_release, &pa);

  /* A second instance has its own state. */
  ck_assert_int_eq(lsched_policy_create(&b, fx, ops), LSCHED_OK);
  ck_assert_int_eq(kb->inits, 1);
  ck_assert_int_eq(kb->allocs, 0);
  ck_assert_int_eq(lsched_alloc(fx, &pa), LSCHED_OK);
  ck_assert_int_eq(ka->allocs, 3);
  ck_assert_int_eq(kb->allocs, 1);

  /* Destroy detaches: fini once, and no hook calls afterwards. */
  lsched_policy_destroy(a);
  ck_assert_int_eq(ka->finis, 1);
  ck_assert_int_eq(lsched_release(fx, &pa), LSCHED_OK);
  ck_assert_int_eq(lsched_release(fx, &pf), LSCHED_OK);
  ck_assert_int_eq(ka->allocs, 3);
  ck_assert_int_eq(ka->releases, 1);
  ck_assert_int_eq(kb->releases, 2);
  assert_same_placement(&kb->last_release, &pf);
  lsched_policy_destroy(b);
  ck_assert_int_eq(kb->finis, 1);
  ck_assert_int_eq(kb->inits, 1);
  lsched_policy_destroy(ff);
  /* With every policy gone and nothing allocated, nodes may be added. */
  ck_assert_int_eq(
      add_node_rc(fx, "n3", 1000, 1000, 0, -1, LSCHED_GPU_SHARED, NULL),
      LSCHED_OK);
  lsched_registry_destroy(r);
}
END_TEST

/* The observer API: registration, what is reported, in which order. */
static int obs_order[8], obs_norder;
static void order_a(void *user, const lsched_cluster *c,
                    const lsched_placement *p, int trial) {
  (void)c;
  (void)p;
  (void)trial;
  (void)user;
  obs_order[obs_norder++ & 7] = 1;
}
static void order_b(void *user, const lsched_cluster *c,
                    const lsched_placement *p, int trial) {
  (void)c;
  (void)p;
  (void)trial;
  (void)user;
  obs_order[obs_norder++ & 7] = 2;
}

START_TEST(test_observer_api) {
  fx_three_shared();
  struct obs_counts o1, o2;
  memset(&o1, 0, sizeof o1);
  memset(&o2, 0, sizeof o2);
  ck_assert_int_eq(lsched_cluster_add_observer(NULL, &obs_counter, &o1),
                   LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_add_observer(fx, NULL, &o1), LSCHED_EINVAL);
  lsched_observer bad = LSCHED_OBSERVER_INIT;
  bad.version = 0;
  ck_assert_int_eq(lsched_cluster_add_observer(fx, &bad, &o1),
                   LSCHED_EVERSION);
  bad.version = LSCHED_OBSERVER_VERSION + 1;
  ck_assert_int_eq(lsched_cluster_add_observer(fx, &bad, &o1),
                   LSCHED_EVERSION);
  ck_assert_int_eq(lsched_cluster_remove_observer(fx, &obs_counter, &o1),
                   LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_add_observer(fx, &obs_counter, &o1),
                   LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_add_observer(fx, &obs_counter, &o1),
                   LSCHED_EEXIST);
  /* The same table with another user is another registration. */
  ck_assert_int_eq(lsched_cluster_add_observer(fx, &obs_counter, &o2),
                   LSCHED_OK);

  /* Every alloc and release, with no policy attached at all; never a
   * trial here; failed calls are not reported. */
  lsched_placement p = mkpl(1, 2000, 1024, 1, 500, 0x2);
  ck_assert_int_eq(lsched_alloc(fx, &p), LSCHED_OK);
  ck_assert_int_eq(o1.k.allocs, 1);
  ck_assert_int_eq(o2.k.allocs, 1);
  assert_same_placement(&o1.k.last_alloc, &p);
  ck_assert_ptr_eq(o1.k.last_cluster, fx);
  lsched_placement over = mkpl(0, 1000000, 0, 0, 0, 0);
  ck_assert_int_eq(lsched_alloc(fx, &over), LSCHED_ERANGE);
  ck_assert_int_eq(lsched_release(fx, &over), LSCHED_ERANGE);
  ck_assert_int_eq(o1.k.allocs, 1);
  ck_assert_int_eq(o1.k.releases, 0);
  /* Placements any policy chose reach observers too, after the policies'
   * own hooks. */
  probe_reset();
  lsched_policy *a = NULL;
  ck_assert_int_eq(lsched_policy_create(&a, fx, &probe_ops), LSCHED_OK);
  lsched_placement pa;
  lsched_request q = mkreq(1000, 1, 1, 250, 0);
  ck_assert_int_eq(lsched_policy_place(a, &q, &pa), LSCHED_OK);
  ck_assert_int_eq(lsched_alloc(fx, &pa), LSCHED_OK);
  ck_assert_int_eq(probe_log[0].allocs, 1);
  ck_assert_int_eq(o1.k.allocs, 2);
  assert_same_placement(&o1.k.last_alloc, &pa);
  lsched_policy_destroy(a);
  /* A removed observer hears nothing more; the others still do. */
  ck_assert_int_eq(lsched_cluster_remove_observer(fx, &obs_counter, &o2),
                   LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_remove_observer(fx, &obs_counter, &o2),
                   LSCHED_ENOENT);
  ck_assert_int_eq(lsched_release(fx, &p), LSCHED_OK);
  ck_assert_int_eq(lsched_release(fx, &pa), LSCHED_OK);
  ck_assert_int_eq(o1.k.releases, 2);
  ck_assert_int_eq(o2.k.releases, 0);
  assert_same_placement(&o1.k.last_release, &pa);
  ck_assert_int_eq(o1.trial_allocs + o1.trial_releases, 0);
  ck_assert_int_eq(lsched_cluster_remove_observer(fx, &obs_counter, &o1),
                   LSCHED_OK);

  /* Observers are called in the order they were added. */
  lsched_observer oa = {1, order_a, order_a, NULL};
  lsched_observer ob = {1, order_b, NULL, NULL};
  obs_norder = 0;
  ck_assert_int_eq(lsched_cluster_add_observer(fx, &ob, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_add_observer(fx, &oa, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_alloc(fx, &p), LSCHED_OK);
  ck_assert_int_eq(lsched_release(fx, &p), LSCHED_OK);
  ck_assert_int_eq(obs_norder, 3); /* ob has no on_release */
  ck_assert_int_eq(obs_order[0], 2);
  ck_assert_int_eq(obs_order[1], 1);
  ck_assert_int_eq(obs_order[2], 1);
  /* Observers do not freeze the node set (only policies do). */
  ck_assert_int_eq(
      add_node_rc(fx, "n3", 1000, 1000, 0, -1, LSCHED_GPU_SHARED, NULL),
      LSCHED_OK);
}
END_TEST

/* Gang placement reports its parts as trials while it places them: a gang
 * that fails leaves only undone trials; a kept gang's parts are then
 * re-reported as ordinary allocations, while the policies see each part
 * once. */
START_TEST(test_observer_gang_trials) {
  fx_three_shared(); /* 3 nodes x 4 GPUs */
  probe_reset();
  lsched_policy *a = NULL;
  ck_assert_int_eq(lsched_policy_create(&a, fx, &probe_ops), LSCHED_OK);
  struct obs_counts o;
  memset(&o, 0, sizeof o);
  ck_assert_int_eq(lsched_cluster_add_observer(fx, &obs_counter, &o),
                   LSCHED_OK);
  lsched_placement parts[8];
  int np = -1;
  /* 16 whole GPUs: three 4-GPU parts are placed, the fourth fails. */
  lsched_request big = mkreq(16000, 16000, 16, 1000, 0);
  ck_assert_int_eq(lsched_place_gang(a, &big, parts, 8, &np), LSCHED_ENOFIT);
  ck_assert_int_eq(np, 0);
  ck_assert_int_eq(o.trial_allocs, 3);
  ck_assert_int_eq(o.trial_releases, 3);
  ck_assert_int_eq(o.k.allocs, 0);
  ck_assert_int_eq(o.k.releases, 0);
  ck_assert_int_eq(probe_log[0].allocs, 3);
  ck_assert_int_eq(probe_log[0].releases, 3);
  /* 8 GPUs: two parts, kept. */
  memset(&o, 0, sizeof o);
  lsched_request two = mkreq(8000, 8000, 8, 1000, 0);
  ck_assert_int_eq(lsched_place_gang(a, &two, parts, 8, &np), LSCHED_OK);
  ck_assert_int_eq(np, 2);
  ck_assert_int_eq(o.trial_allocs, 2);
  ck_assert_int_eq(o.trial_releases, 2);
  ck_assert_int_eq(o.k.allocs, 2);
  ck_assert_int_eq(o.k.releases, 0);
  assert_same_placement(&o.k.last_alloc, &parts[1]);
  ck_assert_int_eq(probe_log[0].allocs, 3 + 2);
  ck_assert_int_eq(probe_log[0].releases, 3);
  ck_assert_int_eq(lsched_cluster_check(fx), LSCHED_OK);
  /* A gang of one part is an ordinary allocation. */
  memset(&o, 0, sizeof o);
  lsched_request one = mkreq(1000, 1000, 2, 1000, 0);
  ck_assert_int_eq(lsched_place_gang(a, &one, parts + 2, 6, &np), LSCHED_OK);
  ck_assert_int_eq(np, 1);
  ck_assert_int_eq(o.k.allocs, 1);
  ck_assert_int_eq(o.trial_allocs + o.trial_releases, 0);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(lsched_release(fx, &parts[i]), LSCHED_OK);
  ck_assert_int_eq(o.k.releases, 3);
  lsched_policy_destroy(a);
}
END_TEST

static int failing_init(void *state, const lsched_cluster *c) {
  (void)state;
  (void)c;
  return LSCHED_ERANGE;
}

START_TEST(test_policy_init_failure) {
  fx_three_shared();
  lsched_policy_ops ops = {0};
  ops.version = LSCHED_POLICY_OPS_VERSION;
  ops.name = "fails";
  ops.state_size = 64;
  ops.init = failing_init;
  ops.place = never_place;
  lsched_policy *p = (lsched_policy *)&ops;
  ck_assert_int_eq(lsched_policy_create(&p, fx, &ops), LSCHED_ERANGE);
  ck_assert_ptr_null(p);
  /* Not attached: the node set is not frozen. */
  ck_assert_int_eq(
      add_node_rc(fx, "n3", 1000, 1000, 0, -1, LSCHED_GPU_SHARED, NULL),
      LSCHED_OK);
  /* A table without hooks or state works. */
  ops.init = NULL;
  ops.state_size = 0;
  ck_assert_int_eq(lsched_policy_create(&p, fx, &ops), LSCHED_OK);
  lsched_request q = mkreq(0, 0, 0, 0, 0);
  lsched_placement out;
  ck_assert_int_eq(lsched_policy_place(p, &q, &out), LSCHED_ENOFIT);
  ck_assert_int_eq(lsched_policy_set_param(p, "seed", "3"), LSCHED_ENOENT);
  must_alloc(fx, mkpl(0, 1, 0, 0, 0, 0)); /* no hooks to call */
  lsched_policy_destroy(p);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Allocation-failure loop                                                 */

/* Fails the fail_at-th call to alloc/realloc (1-based; 0 = never). */
struct counting_alloc {
  long calls;
  long fail_at;
  long failures;
  long live;
};

static void *ca_alloc(size_t n, void *user) {
  struct counting_alloc *a = user;
  if (++a->calls == a->fail_at) {
    a->failures++;
    return NULL;
  }
  void *p = malloc(n);
  if (p)
    a->live++;
  return p;
}

static void *ca_realloc(void *p, size_t n, void *user) {
  struct counting_alloc *a = user;
  if (!p)
    return ca_alloc(n, user);
  if (++a->calls == a->fail_at) {
    a->failures++;
    return NULL;
  }
  return realloc(p, n);
}

static void ca_free(void *p, void *user) {
  struct counting_alloc *a = user;
  if (p) {
    a->live--;
    free(p);
  }
}

/* The rc a call must return: ENOMEM exactly when the injected failure
 * happened during it. */
#define FAILED_DURING(ca, before) ((ca)->failures > (before))

static void assert_rc_for(struct counting_alloc *ca, long before, int rc,
                          const char *what) {
  if (FAILED_DURING(ca, before))
    ck_assert_msg(rc == LSCHED_ENOMEM, "%s: failed allocation %ld gave %s",
                  what, ca->fail_at, lsched_err_name(rc));
  else
    ck_assert_msg(rc >= 0, "%s: %s without an allocation failure", what,
                  lsched_err_name(rc));
}

/* Every cached cluster-wide aggregate agrees with the nodes it has. */
static void assert_cluster_consistent(const lsched_cluster *c) {
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  int64_t max_cpu = 0;
  int max_gpus = 0;
  for (int i = 0; i < c->n; i++) {
    if (c->nodes[i].cpu_cap > max_cpu)
      max_cpu = c->nodes[i].cpu_cap;
    if (c->nodes[i].gpu_count > max_gpus)
      max_gpus = c->nodes[i].gpu_count;
  }
  ck_assert_int_eq(c->max_cpu_cap, max_cpu);
  ck_assert_int_eq(c->max_gpu_count, max_gpus);
  /* Each shape belongs to at least one node. */
  for (int s = 0; s < c->nshapes; s++) {
    int found = 0;
    for (int i = 0; i < c->n && !found; i++)
      found = c->shapes[s].cpu_cap == c->nodes[i].cpu_cap &&
              c->shapes[s].mem_cap == c->nodes[i].mem_cap &&
              c->shapes[s].gpu_count == c->nodes[i].gpu_count &&
              c->shapes[s].model == c->nodes[i].model &&
              c->shapes[s].mode == c->nodes[i].mode;
    ck_assert_msg(found, "shape %d belongs to no node", s);
  }
}

#define AF_NODES 20

static void af_node_spec(int i, lsched_node_spec *s, char *name, size_t len) {
  lsched_node_spec d = LSCHED_NODE_SPEC_INIT;
  *s = d;
  snprintf(name, len, "node-%d", i);
  s->name = name;
  s->cpu_milli = 1000 * (int64_t)(i + 1); /* each node a new largest */
  s->memory_mib = 1024 * (int64_t)(i + 1);
  s->gpu_count = i % 9;
  s->gpu_model = i % 3;
  s->gpu_mode = i % 2 ? LSCHED_GPU_EXCLUSIVE : LSCHED_GPU_SHARED;
}

/* The whole create path. Returns the number of allocation calls made. */
static long run_create_path(struct counting_alloc *ca) {
  lsched_allocator al = {ca_alloc, ca_realloc, ca_free, ca};
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.allocator = &al;
  o.check_invariants = 1;
  lsched_cluster *c = NULL;
  long before;
  int rc;

  before = ca->failures;
  rc = lsched_cluster_create(&c, &o);
  assert_rc_for(ca, before, rc, "cluster_create");
  if (rc) {
    ck_assert_ptr_null(c);
    ck_assert_int_eq(ca->live, 0);
    ck_assert_int_eq(lsched_cluster_create(&c, &o), LSCHED_OK);
  }

  static const char *const models[] = {"A100", "H100", "V100"};
  for (int m = 0; m < 3; m++) {
    before = ca->failures;
    rc = lsched_cluster_model_id(c, models[m], 1);
    assert_rc_for(ca, before, rc, "model_id");
    if (rc < 0) {
      ck_assert_int_eq(lsched_cluster_model_count(c), m);
      ck_assert_int_eq(lsched_cluster_find_model(c, models[m]), LSCHED_ENOENT);
      rc = lsched_cluster_model_id(c, models[m], 1);
    }
    ck_assert_int_eq(rc, m);
  }

  for (int i = 0; i < AF_NODES; i++) {
    lsched_node_spec s;
    char name[32];
    af_node_spec(i, &s, name, sizeof name);
    int id = -1;
    before = ca->failures;
    rc = lsched_cluster_add_node(c, &s, &id);
    assert_rc_for(ca, before, rc, "add_node");
    if (rc) {
      /* Nothing of the failed node remains, and the cluster works. */
      ck_assert_int_eq(id, -1);
      ck_assert_int_eq(lsched_cluster_node_count(c), i);
      assert_cluster_consistent(c);
      lsched_request big = mkreq(s.cpu_milli, 0, 0, 0, 0);
      ck_assert_msg(lsched_can_ever_fit(c, &big) == 0,
                    "a node that failed to be added can still fit requests");
      ck_assert_int_eq(lsched_next_fit(c, &big, 0), -1);
      if (i > 0) {
        lsched_placement p = mkpl(i - 1, 1000, 1024, 0, 0, 0);
        ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_OK);
        ck_assert_int_eq(lsched_release(c, &p), LSCHED_OK);
      }
      rc = lsched_cluster_add_node(c, &s, &id);
      ck_assert_int_eq(rc, LSCHED_OK);
    }
    ck_assert_int_eq(id, i);
  }
  assert_cluster_consistent(c);

  int order[AF_NODES];
  for (int i = 0; i < AF_NODES; i++)
    order[i] = AF_NODES - 1 - i;
  before = ca->failures;
  rc = lsched_cluster_set_order(c, order, AF_NODES);
  assert_rc_for(ca, before, rc, "set_order");
  if (rc)
    ck_assert_int_eq(lsched_cluster_set_order(c, order, AF_NODES), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_order(c)[0], AF_NODES - 1);

  /* Observers (five: the record array and the alloc and release call
   * lists grow twice): a failed registration is not called and leaves
   * the others' calls as they were (the lists rebuilt only once they
   * have room: a stale or half-built list calls the wrong observers). */
  struct obs_counts oc[5];
  memset(oc, 0, sizeof oc);
  for (int i = 0; i < 5; i++) {
    before = ca->failures;
    rc = lsched_cluster_add_observer(c, &obs_counter, &oc[i]);
    assert_rc_for(ca, before, rc, "add_observer");
    if (rc) {
      lsched_placement p = mkpl(0, 1000, 1024, 0, 0, 0);
      ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_OK);
      ck_assert_int_eq(lsched_release(c, &p), LSCHED_OK);
      for (int j = 0; j <= i; j++) {
        ck_assert_int_eq(oc[j].k.allocs, j < i);
        ck_assert_int_eq(oc[j].k.releases, j < i);
        memset(&oc[j], 0, sizeof oc[j]);
      }
      ck_assert_int_eq(lsched_cluster_remove_observer(c, &obs_counter, &oc[i]),
                       LSCHED_ENOENT);
      ck_assert_int_eq(lsched_cluster_add_observer(c, &obs_counter, &oc[i]),
                       LSCHED_OK);
    }
  }
  /* Every one called once per change; the removed ones no more. */
  lsched_placement op = mkpl(0, 1000, 1024, 0, 0, 0);
  ck_assert_int_eq(lsched_alloc(c, &op), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_remove_observer(c, &obs_counter, &oc[1]),
                   LSCHED_OK);
  ck_assert_int_eq(lsched_release(c, &op), LSCHED_OK);
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(oc[i].k.allocs, 1);
    ck_assert_int_eq(oc[i].k.releases, i != 1);
    if (i != 1)
      ck_assert_int_eq(lsched_cluster_remove_observer(c, &obs_counter, &oc[i]),
                       LSCHED_OK);
  }

  lsched_registry *r = NULL;
  before = ca->failures;
  rc = lsched_registry_create(&r, &al);
  assert_rc_for(ca, before, rc, "registry_create");
  if (rc) {
    ck_assert_ptr_null(r);
    ck_assert_int_eq(lsched_registry_create(&r, &al), LSCHED_OK);
  }
  before = ca->failures;
  rc = lsched_registry_add_builtins(r);
  assert_rc_for(ca, before, rc, "add_builtins");
  if (rc)
    ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  size_t npol = lsched_registry_count(r);
  ck_assert_uint_ge(npol, 3);
  ck_assert_uint_le(npol, 64);

  lsched_policy *pol[64] = {NULL};
  for (size_t i = 0; i < npol; i++) {
    before = ca->failures;
    rc = lsched_policy_create(&pol[i], c, lsched_registry_at(r, i));
    assert_rc_for(ca, before, rc, "policy_create");
    if (rc) {
      ck_assert_ptr_null(pol[i]);
      ck_assert_int_eq(c->nattached, (int)i);
      rc = lsched_policy_create(&pol[i], c, lsched_registry_at(r, i));
      ck_assert_int_eq(rc, LSCHED_OK);
    }
  }
  ck_assert_int_eq(c->nattached, (int)npol);

  /* Everything works: each policy places, allocs and releases. */
  lsched_request q = mkreq(1000, 1024, 1, 500, 0);
  for (size_t i = 0; i < npol; i++) {
    lsched_placement p;
    ck_assert_int_eq(lsched_policy_place(pol[i], &q, &p), LSCHED_OK);
    ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_OK);
    ck_assert_int_eq(lsched_release(c, &p), LSCHED_OK);
  }
  for (size_t i = 0; i < npol; i++)
    lsched_policy_destroy(pol[i]);
  lsched_registry_destroy(r);
  lsched_cluster_destroy(c);
  ck_assert_msg(ca->live == 0, "%ld allocations leaked (fail_at %ld)", ca->live,
                ca->fail_at);
  return ca->calls;
}

START_TEST(test_alloc_failure_loop) {
  /* A dry run counts the allocations of the whole path. */
  struct counting_alloc dry = {0, 0, 0, 0};
  long total = run_create_path(&dry);
  ck_assert_int_gt(total, 20);
  ck_assert_int_eq(dry.failures, 0);
  long n;
  for (n = 1; n < 100000; n++) {
    struct counting_alloc ca = {0, n, 0, 0};
    run_create_path(&ca);
    if (ca.failures == 0)
      break; /* the N-th allocation is past the end: all paths covered */
  }
  ck_assert_int_eq(n, total + 1);
}
END_TEST

/*
 * The paths added after the create paths above: MIG (model memory, static
 * and dynamic MIG nodes, instance creation by alloc), workloads (growth
 * and keep_popular), fragmentation (meter, cluster and node measures,
 * policies given a workload), gang placement and migration plans. Every
 * call runs under the failing allocator: LSCHED_ENOMEM exactly when the
 * failure hit it, the cluster then unchanged and consistent, and the call
 * retried. Returns the number of allocation calls.
 */
static void totals_eq(const lsched_cluster *c, const lsched_totals *t,
                      const char *what) {
  lsched_totals now;
  lsched_cluster_totals(c, &now);
  ck_assert_msg(memcmp(&now, t, sizeof now) == 0,
                "%s changed the cluster although it failed", what);
  assert_cluster_consistent(c);
}

/* Runs CALL; an injected failure must give ENOMEM and change nothing;
 * then CALL runs again (the failure is spent) and must give OK_RC. */
#define AF_TRY(c, ca, what, ok_rc, CALL)                                       \
  do {                                                                         \
    lsched_totals t0_;                                                         \
    if (c)                                                                     \
      lsched_cluster_totals(c, &t0_);                                          \
    long b_ = (ca)->failures;                                                  \
    int r_ = (CALL);                                                           \
    if (FAILED_DURING(ca, b_)) {                                               \
      ck_assert_msg(r_ == LSCHED_ENOMEM, "%s: failed allocation %ld gave %s",  \
                    what, (ca)->fail_at, lsched_err_name(r_));                 \
      if (c)                                                                   \
        totals_eq(c, &t0_, what);                                              \
      r_ = (CALL);                                                             \
    }                                                                          \
    ck_assert_msg(r_ == (ok_rc), "%s: %s", what, lsched_err_name(r_));         \
  } while (0)

/* Placing may use allocations as a cache only (FGD's shape memo): with the
 * failure it gives ENOMEM, or the placement it gives without it. */
static void af_place(lsched_cluster *c, struct counting_alloc *ca,
                     lsched_policy *p, const lsched_request *q,
                     lsched_placement *out) {
  long b = ca->failures;
  int rc = lsched_policy_place(p, q, out);
  if (!FAILED_DURING(ca, b)) {
    ck_assert_msg(rc == LSCHED_OK, "place %s: %s", lsched_policy_name(p),
                  lsched_err_name(rc));
    return;
  }
  ck_assert_msg(rc == LSCHED_OK || rc == LSCHED_ENOMEM,
                "place %s: failed allocation %ld gave %s",
                lsched_policy_name(p), ca->fail_at, lsched_err_name(rc));
  assert_cluster_consistent(c);
  lsched_placement again;
  ck_assert_int_eq(lsched_policy_place(p, q, &again), LSCHED_OK);
  if (rc == LSCHED_OK)
    ck_assert_msg(again.node == out->node &&
                      again.gpu_count == out->gpu_count &&
                      again.gpu_milli == out->gpu_milli &&
                      again.gpu_mask == out->gpu_mask &&
                      again.cpu_milli == out->cpu_milli &&
                      again.memory_mib == out->memory_mib &&
                      again.mig_kind == out->mig_kind &&
                      again.mig_start == out->mig_start,
                  "place %s: the failed allocation %ld changed the placement",
                  lsched_policy_name(p), ca->fail_at);
  *out = again;
}

static long run_more_paths(struct counting_alloc *ca) {
  lsched_allocator al = {ca_alloc, ca_realloc, ca_free, ca};
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.allocator = &al;
  o.check_invariants = 1;
  lsched_cluster *c = NULL;
  lsched_cluster *none = NULL;
  AF_TRY(none, ca, "cluster_create", LSCHED_OK, lsched_cluster_create(&c, &o));
  int id;
  AF_TRY(c, ca, "model_id", 0,
         (id = lsched_cluster_model_id(c, "A100", 1)) < 0 ? id : 0);
  int64_t mem[LSCHED_MIG_KINDS] = {9728, 19968, 19968, 40192, 40192, 80640};
  AF_TRY(c, ca, "mig_set_model_memory", LSCHED_OK,
         lsched_mig_set_model_memory(c, 0, mem));
  static const lsched_mig_instance balanced[] = {
      {LSCHED_MIG_2G, 0}, {LSCHED_MIG_1G, 2}, {LSCHED_MIG_1G, 3},
      {LSCHED_MIG_3G, 4}};
  for (int i = 0; i < 5; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    static const char *const names[] = {"s0", "s1", "e0", "ms", "md"};
    s.name = names[i];
    s.cpu_milli = 64000;
    s.memory_mib = 262144;
    s.gpu_count = i < 3 ? 8 : 2;
    s.gpu_model = 0;
    s.gpu_mode = i < 2 ? LSCHED_GPU_SHARED
                 : i == 2 ? LSCHED_GPU_EXCLUSIVE
                          : LSCHED_GPU_MIG;
    if (i == 3) {
      s.mig_layout = balanced;
      s.mig_layout_count = 4;
    }
    s.mig_dynamic = i == 4;
    AF_TRY(c, ca, "add_node (MIG)", LSCHED_OK,
           lsched_cluster_add_node(c, &s, NULL));
  }
  ck_assert_int_eq(lsched_cluster_node_count(c), 5);

  lsched_workload *w = NULL;
  AF_TRY(none, ca, "workload_create", LSCHED_OK,
         lsched_workload_create(&w, &al));
  for (int i = 0; i < 40; i++) { /* enough to grow and rehash */
    lsched_task_type t = {LSCHED_TASK_TYPE_VERSION, 1000 * (i % 7), 1 + i % 3,
                          i % 3 ? 1000 : 100 * (1 + i % 9), 0, (uint64_t)(1 + i)};
    AF_TRY(none, ca, "workload_add", LSCHED_OK, lsched_workload_add(w, &t));
  }
  AF_TRY(none, ca, "workload_keep_popular", LSCHED_OK,
         lsched_workload_keep_popular(w, 95));

  lsched_registry *r = NULL;
  AF_TRY(none, ca, "registry_create", LSCHED_OK,
         lsched_registry_create(&r, &al));
  AF_TRY(none, ca, "add_builtins", LSCHED_OK, lsched_registry_add_builtins(r));
  static const char *const pn[] = {"fgd", "mig-aware", "defrag", "best-fit"};
  lsched_policy *pol[4] = {NULL};
  for (int i = 0; i < 4; i++) {
    const lsched_policy_ops *ops = lsched_registry_find(r, pn[i]);
    ck_assert_ptr_nonnull(ops);
    AF_TRY(c, ca, "policy_create", LSCHED_OK,
           lsched_policy_create(&pol[i], c, ops));
  }
  AF_TRY(c, ca, "set_workload fgd", LSCHED_OK,
         lsched_policy_set_workload(pol[0], w));
  AF_TRY(c, ca, "defrag base", LSCHED_OK,
         lsched_policy_set_param(pol[2], "base", "first-fit"));
  lsched_fragmeter *m = NULL;
  AF_TRY(c, ca, "fragmeter_create", LSCHED_OK,
         lsched_fragmeter_create(&m, c, w));
  lsched_frag fr;
  double fn;
  AF_TRY(c, ca, "frag_cluster", LSCHED_OK, lsched_frag_cluster(c, w, &fr));
  AF_TRY(c, ca, "frag_node", LSCHED_OK, lsched_frag_node(c, w, 0, &fn));

  /* Jobs: shared shares by FGD, a whole-GPU job by defrag (its base),
   * MIG instances created on the dynamic node by mig-aware. */
  lsched_placement pl[16];
  int np = 0;
  lsched_request q = mkreq(1000, 1024, 1, 500, 0);
  for (int i = 0; i < 3; i++) {
    af_place(c, ca, pol[0], &q, &pl[np]);
    AF_TRY(c, ca, "alloc", LSCHED_OK, lsched_alloc(c, &pl[np]));
    np++;
  }
  lsched_request whole = mkreq(1000, 1024, 4, 1000, 0);
  af_place(c, ca, pol[2], &whole, &pl[np]);
  AF_TRY(c, ca, "alloc", LSCHED_OK, lsched_alloc(c, &pl[np]));
  np++;
  lsched_request mq = LSCHED_REQUEST_INIT;
  mq.gpu_count = 1;
  mq.mig_kind = LSCHED_MIG_3G;
  for (int i = 0; i < 3; i++) {
    af_place(c, ca, pol[1], &mq, &pl[np]);
    AF_TRY(c, ca, "alloc (MIG)", LSCHED_OK, lsched_alloc(c, &pl[np]));
    np++;
  }
  /* A gang job over several nodes, released part by part. */
  lsched_placement parts[8];
  int nparts = 0;
  lsched_request gang = mkreq(2000, 2048, 12, 1000, 0);
  {
    /* best-fit's score index allocates its trees as a cache (as af_place
     * allows): a failed allocation gives ENOMEM, or the placement. */
    lsched_totals t0;
    lsched_cluster_totals(c, &t0);
    long fb = ca->failures;
    int gr = lsched_place_gang(pol[3], &gang, parts, 8, &nparts);
    if (FAILED_DURING(ca, fb) && gr != LSCHED_OK) {
      ck_assert_msg(gr == LSCHED_ENOMEM, "place_gang: failed allocation %ld "
                    "gave %s", ca->fail_at, lsched_err_name(gr));
      totals_eq(c, &t0, "place_gang");
      gr = lsched_place_gang(pol[3], &gang, parts, 8, &nparts);
    }
    ck_assert_msg(gr == LSCHED_OK, "place_gang: %s", lsched_err_name(gr));
  }
  ck_assert_int_ge(nparts, 2);
  for (int k = nparts - 1; k >= 0; k--)
    ck_assert_int_eq(lsched_release(c, &parts[k]), LSCHED_OK);
  /* A migration plan for a job that fits nowhere as things are. */
  lsched_running run[16];
  for (int i = 0; i < np; i++) {
    memset(&run[i], 0, sizeof run[i]);
    run[i].id = (uint64_t)i;
    run[i].request = i < 3 ? q : i == 3 ? whole : mq;
    run[i].parts = &pl[i];
    run[i].nparts = 1;
    run[i].move_cost_s = 1;
  }
  lsched_request wait = mkreq(1000, 1024, 8, 1000, 0);
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  b.expected_wait_s = 1e6;
  b.max_moves = 4;
  lsched_move mv[8];
  size_t nmv = 0;
  lsched_totals t0;
  lsched_cluster_totals(c, &t0);
  long b0 = ca->failures;
  int rc = lsched_policy_plan_migrations(pol[2], &wait, run, (size_t)np, &b,
                                         mv, 8, &nmv);
  if (FAILED_DURING(ca, b0))
    ck_assert_msg(rc == LSCHED_ENOMEM, "plan_migrations: %s",
                  lsched_err_name(rc));
  else
    ck_assert_msg(rc == LSCHED_OK || rc == LSCHED_ENOFIT, "plan: %s",
                  lsched_err_name(rc));
  totals_eq(c, &t0, "plan_migrations");
  AF_TRY(c, ca, "frag_cluster", LSCHED_OK, lsched_frag_cluster(c, w, &fr));
  lsched_frag inc;
  lsched_fragmeter_get(m, &inc);
  ck_assert_int_eq(inc.amount_weighted, fr.amount_weighted);
  for (int i = np - 1; i >= 0; i--)
    ck_assert_int_eq(lsched_release(c, &pl[i]), LSCHED_OK);
  lsched_fragmeter_destroy(m);
  for (int i = 0; i < 4; i++)
    lsched_policy_destroy(pol[i]);
  lsched_registry_destroy(r);
  lsched_workload_destroy(w);
  lsched_cluster_destroy(c);
  ck_assert_msg(ca->live == 0, "%ld allocations leaked (fail_at %ld)", ca->live,
                ca->fail_at);
  return ca->calls;
}

START_TEST(test_alloc_failure_more_paths) {
  struct counting_alloc dry = {0, 0, 0, 0};
  long total = run_more_paths(&dry);
  ck_assert_int_gt(total, 20);
  long n;
  for (n = 1; n < 100000; n++) {
    struct counting_alloc ca = {0, n, 0, 0};
    run_more_paths(&ca);
    if (ca.failures == 0)
      break;
  }
  ck_assert_int_eq(n, total + 1);
}
END_TEST

/* A custom allocator with a NULL member counts as absent (libc used). */
START_TEST(test_partial_allocator) {
  struct counting_alloc ca = {0, 1, 0, 0};
  lsched_allocator al = {ca_alloc, NULL, ca_free, &ca};
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.allocator = &al;
  lsched_cluster *c = NULL;
  ck_assert_int_eq(lsched_cluster_create(&c, &o), LSCHED_OK);
  ck_assert_int_eq(
      add_node_rc(c, "n", 1000, 1000, 1, -1, LSCHED_GPU_SHARED, NULL),
      LSCHED_ENOENT);
  ck_assert_int_eq(
      add_node_rc(c, "n", 1000, 1000, 0, -1, LSCHED_GPU_SHARED, NULL),
      LSCHED_OK);
  lsched_cluster_destroy(c);
  ck_assert_int_eq(ca.calls, 0);
  ck_assert_int_eq(ca.live, 0);
}
END_TEST

/* ---------------------------------------------------------------------- */

static Suite *make_suite(void) {
  Suite *s = suite_create("libsched");

  TCase *tc = tcase_create("hand");
  tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
  tcase_add_test(tc, test_hand_mixed_state);
  tcase_add_test(tc, test_hand_gpu_choice);
  tcase_add_test(tc, test_hand_tie_order);
  tcase_add_test(tc, test_hand_floor_tie);
  tcase_add_test(tc, test_hand_exclusive_fraction);
  tcase_add_test(tc, test_hand_exclusive_vs_shared);
  tcase_add_test(tc, test_hand_model_mask);
  tcase_add_test(tc, test_hand_cpu_only_and_memory);
  suite_add_tcase(s, tc);

  tc = tcase_create("errors");
  tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
  tcase_add_test(tc, test_err_strings);
  tcase_add_test(tc, test_version);
  tcase_add_test(tc, test_null_args);
  tcase_add_test(tc, test_bad_versions);
  tcase_add_test(tc, test_request_validate);
  tcase_add_test(tc, test_alloc_overcommit);
  tcase_add_test(tc, test_alloc_malformed);
  tcase_add_test(tc, test_release_without_alloc);
  tcase_add_test(tc, test_add_node_state);
  tcase_add_test(tc, test_node_limits);
  tcase_add_test(tc, test_model_registry);
  tcase_add_test(tc, test_set_order);
  tcase_add_test(tc, test_pick_gpus_errors);
  tcase_add_test(tc, test_check_detects_corruption);
  suite_add_tcase(s, tc);

  tc = tcase_create("properties");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_prop_random_ops, 0, PRUNS);
  tcase_add_loop_test(tc, test_prop_next_fit_large, 0, 2);
  suite_add_tcase(s, tc);

  tc = tcase_create("registry");
  tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
  tcase_add_test(tc, test_registry_builtins);
  tcase_add_test(tc, test_registry_outside_policy);
  tcase_add_test(tc, test_observer_api);
  tcase_add_test(tc, test_observer_gang_trials);
  tcase_add_test(tc, test_policy_init_failure);
  suite_add_tcase(s, tc);

  tc = tcase_create("alloc-failure");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_alloc_failure_loop);
  tcase_add_test(tc, test_partial_allocator);
  tcase_add_test(tc, test_alloc_failure_more_paths);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
