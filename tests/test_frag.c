/*
 * Fragmentation (libsched workload / frag / fragmeter) and the FGD paper's
 * policies (random, dot-product, gpu-packing, gpu-clustering, fgd): hand-
 * computed cases with the exact node and GPU, a brute-force oracle for fgd,
 * and the incremental meter against a from-scratch recomputation.
 * (Every registered policy also runs through test_conformance.)
 */
#include "testutil.h"

#include <libsched/libsched.h>

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQ(cond)                                                              \
  do {                                                                         \
    if (!(cond))                                                               \
      ck_abort_msg("requirement failed: %s", #cond);                           \
  } while (0)
#define REQ_EQ(x, y)                                                           \
  do {                                                                         \
    intmax_t req_x_ = (intmax_t)(x), req_y_ = (intmax_t)(y);                   \
    if (req_x_ != req_y_)                                                      \
      ck_abort_msg("%s == %s failed: %jd vs %jd", #x, #y, req_x_, req_y_);     \
  } while (0)

/* ---------------------------------------------------------------- helpers */

static lsched_cluster *new_cluster(void) {
  lsched_cluster *c;
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.check_invariants = 1;
  ck_assert_int_eq(lsched_cluster_create(&c, &o), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_model_id(c, "A", 1), 0);
  ck_assert_int_eq(lsched_cluster_model_id(c, "B", 1), 1);
  return c;
}

static int add_node(lsched_cluster *c, int64_t cpu, int gpus, int model,
                    lsched_gpu_mode mode) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = cpu;
  s.memory_mib = 1 << 20;
  s.gpu_count = gpus;
  s.gpu_model = model;
  s.gpu_mode = mode;
  int id = -1;
  ck_assert_int_eq(lsched_cluster_add_node(c, &s, &id), LSCHED_OK);
  return id;
}

static lsched_placement pl(int node, int64_t cpu, int k, int milli,
                           uint64_t mask) {
  lsched_placement p;
  memset(&p, 0, sizeof p);
  p.node = node;
  p.cpu_milli = cpu;
  p.gpu_count = k;
  p.gpu_milli = milli;
  p.gpu_mask = mask;
  return p;
}

static void take(lsched_cluster *c, int node, int64_t cpu, int k, int milli,
                 uint64_t mask) {
  lsched_placement p = pl(node, cpu, k, milli, mask);
  ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_OK);
}

static lsched_request rq(int64_t cpu, int k, int milli) {
  lsched_request r = LSCHED_REQUEST_INIT;
  r.cpu_milli = cpu;
  r.memory_mib = 1;
  r.gpu_count = k;
  r.gpu_milli = milli;
  return r;
}

static lsched_task_type tt(int64_t cpu, int k, int milli, uint64_t mask,
                           uint64_t w) {
  lsched_task_type t = {LSCHED_TASK_TYPE_VERSION, cpu, k, milli, mask, w};
  return t;
}

static lsched_workload *workload(const lsched_task_type *t, int n) {
  lsched_workload *w;
  ck_assert_int_eq(lsched_workload_create(&w, NULL), LSCHED_OK);
  for (int i = 0; i < n; i++)
    ck_assert_int_eq(lsched_workload_add(w, &t[i]), LSCHED_OK);
  return w;
}

static lsched_policy *policy(lsched_cluster *c, lsched_registry **reg,
                             const char *name) {
  ck_assert_int_eq(lsched_registry_create(reg, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(*reg), LSCHED_OK);
  const lsched_policy_ops *ops = lsched_registry_find(*reg, name);
  ck_assert_ptr_nonnull(ops);
  lsched_policy *p;
  ck_assert_int_eq(lsched_policy_create(&p, c, ops), LSCHED_OK);
  return p;
}

static void expect(lsched_policy *p, lsched_request r, int node,
                   uint64_t mask) {
  lsched_placement out;
  ck_assert_int_eq(lsched_policy_place(p, &r, &out), LSCHED_OK);
  ck_assert_msg(out.node == node && out.gpu_mask == mask,
                "%s: node %d mask %#llx, expected node %d mask %#llx",
                lsched_policy_name(p), out.node,
                (unsigned long long)out.gpu_mask, node,
                (unsigned long long)mask);
}

/* --------------------------------------------------------------- workload */

START_TEST(workload_merge_validate_popular) {
  lsched_workload *w;
  ck_assert_int_eq(lsched_workload_create(&w, NULL), LSCHED_OK);
  const lsched_task_type bad[] = {
      tt(-1, 0, 0, 0, 1),   tt(0, 0, 5, 0, 1),  tt(0, 1, 0, 0, 1),
      tt(0, 1, 1001, 0, 1), tt(0, 1, 500, 0, 0), tt(0, -1, 0, 0, 1),
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_int_eq(lsched_workload_add(w, &bad[i]), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_workload_add(NULL, &bad[0]), LSCHED_EINVAL);
  /* Equal shapes merge; weights add. */
  lsched_task_type a = tt(1000, 1, 500, 0, 2), b = tt(1000, 1, 500, 0, 3);
  ck_assert_int_eq(lsched_workload_add(w, &a), LSCHED_OK);
  ck_assert_int_eq(lsched_workload_add(w, &b), LSCHED_OK);
  ck_assert_uint_eq(lsched_workload_count(w), 1);
  ck_assert_uint_eq(lsched_workload_weight(w), 5);
  ck_assert_uint_eq(lsched_workload_at(w, 0)->weight, 5);
  ck_assert_ptr_null(lsched_workload_at(w, 1));
  /* A different mask is a different type; a wide gang type is fine. */
  lsched_task_type c = tt(1000, 1, 500, 0x2, 1), g = tt(0, 16, 1000, 0, 1);
  ck_assert_int_eq(lsched_workload_add(w, &c), LSCHED_OK);
  ck_assert_int_eq(lsched_workload_add(w, &g), LSCHED_OK);
  ck_assert_uint_eq(lsched_workload_count(w), 3);
  /* The weight bound. */
  lsched_task_type huge = tt(7, 0, 0, 0, UINT64_C(1) << 40);
  ck_assert_int_eq(lsched_workload_add(w, &huge), LSCHED_ERANGE);
  lsched_workload_destroy(w);
  lsched_workload_destroy(NULL);

  /* keep_popular: weights 50, 30, 15, 5 (and a tie at 15 ordered by CPU). */
  const lsched_task_type pop[] = {
      tt(1000, 1, 1000, 0, 30), tt(2000, 0, 0, 0, 5), tt(3000, 1, 500, 0, 50),
      tt(4000, 2, 1000, 0, 10), tt(5000, 2, 1000, 0, 5),
  };
  w = workload(pop, 5); /* total 100 */
  ck_assert_int_eq(lsched_workload_keep_popular(w, 0), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_workload_keep_popular(w, 101), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_workload_keep_popular(w, 100), LSCHED_OK);
  ck_assert_uint_eq(lsched_workload_count(w), 5);
  /* sorted: 50 (3000), 30 (1000), 10 (4000), 5 (5000), 5 (2000) */
  static const int64_t cpu_order[] = {3000, 1000, 4000, 5000, 2000};
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(lsched_workload_at(w, (size_t)i)->cpu_milli, cpu_order[i]);
  /* 95%: 50 + 30 + 10 = 90 < 95, + 5 = 95: four types. */
  ck_assert_int_eq(lsched_workload_keep_popular(w, 95), LSCHED_OK);
  ck_assert_uint_eq(lsched_workload_count(w), 4);
  ck_assert_uint_eq(lsched_workload_weight(w), 95);
  /* 80% of 95 = 76: 50 + 30 = 80 >= 76: two. Adding after a cut works. */
  ck_assert_int_eq(lsched_workload_keep_popular(w, 80), LSCHED_OK);
  ck_assert_uint_eq(lsched_workload_count(w), 2);
  lsched_task_type again = tt(1000, 1, 1000, 0, 1);
  ck_assert_int_eq(lsched_workload_add(w, &again), LSCHED_OK);
  ck_assert_uint_eq(lsched_workload_count(w), 2);
  ck_assert_uint_eq(lsched_workload_weight(w), 81);

  /* copy: the same types in keep_popular's order (3000 before 1000),
   * weights 50 and 31, and independent of w afterwards. */
  lsched_workload *cp = NULL;
  ck_assert_int_eq(lsched_workload_copy(&cp, w, NULL), LSCHED_OK);
  ck_assert_uint_eq(lsched_workload_count(cp), 2);
  ck_assert_int_eq(lsched_workload_at(cp, 0)->cpu_milli, 3000);
  ck_assert_uint_eq(lsched_workload_at(cp, 0)->weight, 50);
  ck_assert_int_eq(lsched_workload_at(cp, 1)->cpu_milli, 1000);
  ck_assert_uint_eq(lsched_workload_at(cp, 1)->weight, 31);
  ck_assert_int_eq(lsched_workload_add(cp, &again), LSCHED_OK);
  ck_assert_uint_eq(lsched_workload_weight(cp), 82);
  ck_assert_uint_eq(lsched_workload_weight(w), 81);
  lsched_workload_destroy(cp);
  /* no workload: no copy; no out: refused. */
  cp = w;
  ck_assert_int_eq(lsched_workload_copy(&cp, NULL, NULL), LSCHED_OK);
  ck_assert_ptr_null(cp);
  ck_assert_int_eq(lsched_workload_copy(NULL, w, NULL), LSCHED_EINVAL);
  lsched_workload_destroy(w);
}
END_TEST

/* --------------------------------------------------------------- F(n) */

/*
 * Node 0: shared, 4 GPUs of model A with free shares (1000, 600, 300, 0),
 * 8000 CPU free. Workload (W = 4): X CPU-only (1000 CPU) w1; Y 1 x 500
 * (2000 CPU) w2; Z 2 x 1000 (4000 CPU) w1. Idle = 1900.
 *   f(X) = 1900 (CPU-only); f(Y): two GPUs have >= 500 free, CPU fits ->
 *   the GPUs below 500: 300 + 0 = 300; f(Z): one GPU fully free < 2 ->
 *   1900. F = (1900 + 2 x 300 + 1900) / 4 = 1100.
 */
static void frag_node_fixture(lsched_cluster *c) {
  add_node(c, 8000, 4, 0, LSCHED_GPU_SHARED);
  add_node(c, 8000, 2, 0, LSCHED_GPU_EXCLUSIVE);
  take(c, 0, 0, 1, 400, 0x2);
  take(c, 0, 0, 1, 700, 0x4);
  take(c, 0, 0, 1, 1000, 0x8);
  take(c, 1, 0, 1, 1000, 0x1);
}

START_TEST(frag_node_hand_computed) {
  lsched_cluster *c = new_cluster();
  frag_node_fixture(c);
  const lsched_task_type t[] = {tt(1000, 0, 0, 0, 1), tt(2000, 1, 500, 0, 2),
                                tt(4000, 2, 1000, 0, 1)};
  lsched_workload *w = workload(t, 3);
  double F;
  ck_assert_int_eq(lsched_frag_node(c, w, 0, &F), LSCHED_OK);
  ck_assert(F == 1100.0);
  /* Node 1, exclusive, GPUs (0, 1000): f(X) = 1000; f(Y): one GPU >= 500,
   * nothing below 500 but the empty one -> 0; f(Z) = 1000: F = 500. */
  ck_assert_int_eq(lsched_frag_node(c, w, 1, &F), LSCHED_OK);
  ck_assert(F == 500.0);
  lsched_frag fr;
  ck_assert_int_eq(lsched_frag_cluster(c, w, &fr), LSCHED_OK);
  ck_assert_int_eq(fr.amount_weighted, 6400);
  ck_assert_uint_eq(fr.weight_total, 4);
  ck_assert(fr.amount == 1600.0);
  ck_assert_int_eq(fr.idle_gpu_milli, 2900);
  ck_assert_double_eq_tol(fr.rate, 1600.0 / 2900.0, 1e-15);
  /* Less CPU: with 1500 free Y cannot run either -> F = (1900 + 3800 +
   * 1900) / 4 = 1900. */
  take(c, 0, 6500, 0, 0, 0);
  ck_assert_int_eq(lsched_frag_node(c, w, 0, &F), LSCHED_OK);
  ck_assert(F == 1900.0);
  lsched_workload_destroy(w);
  /* A model the node lacks: Y allowed on B only -> 1900 with all CPU. */
  lsched_cluster_destroy(c);
  c = new_cluster();
  frag_node_fixture(c);
  const lsched_task_type tb[] = {tt(1000, 0, 0, 0, 1), tt(2000, 1, 500, 0x2, 2),
                                 tt(4000, 2, 1000, 0, 1)};
  w = workload(tb, 3);
  ck_assert_int_eq(lsched_frag_node(c, w, 0, &F), LSCHED_OK);
  ck_assert(F == 1900.0);
  /* Errors and the empty workload. */
  ck_assert_int_eq(lsched_frag_node(c, w, 7, &F), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_frag_node(c, w, -1, &F), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_frag_node(NULL, w, 0, &F), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_frag_node(c, NULL, 0, &F), LSCHED_OK);
  ck_assert(F == 0.0);
  ck_assert_int_eq(lsched_frag_cluster(c, NULL, &fr), LSCHED_OK);
  ck_assert(fr.amount == 0.0 && fr.rate == 0.0);
  ck_assert_int_eq(fr.idle_gpu_milli, 2900);
  lsched_workload_destroy(w);
  lsched_cluster_destroy(c);
}
END_TEST

struct rng {
  uint64_t s;
};

static uint64_t rng_next(struct rng *r) {
  uint64_t x = r->s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  r->s = x;
  return x * UINT64_C(0x2545F4914F6CDD1D);
}

static uint64_t below(struct rng *r, uint64_t n) {
  return (rng_next(r) >> 11) % n;
}

/* A random share: one of six, or (wide) any multiple of 50. */
static int random_share(struct rng *r, const int *six, int wide) {
  return wide ? 50 * (1 + (int)below(r, 20)) : six[below(r, 6)];
}

/* wide: up to 24 types of 20 shares (more than 8 thresholds: the meter's
 * per-node record then holds 16 counts, and more small sums than fit in
 * 64 bytes from 13 on). */
static lsched_workload *random_workload(struct rng *r, int wide) {
  static const int shares[] = {100, 250, 300, 500, 700, 1000};
  lsched_workload *w;
  ck_assert_int_eq(lsched_workload_create(&w, NULL), LSCHED_OK);
  int n = 1 + (int)below(r, wide ? 24 : 8);
  for (int i = 0; i < n; i++) {
    int k = (int)below(r, 4);
    if (wide && k > 1) /* mostly one GPU, of some share */
      k = 1;
    lsched_task_type t =
        tt(1000 * (int64_t)below(r, 40), k,
           k ? (k > 1 ? 1000 : random_share(r, shares, wide)) : 0,
           below(r, 4) == 0 ? 1 + below(r, 3) : 0, 1 + below(r, 20));
    ck_assert_int_eq(lsched_workload_add(w, &t), LSCHED_OK);
  }
  return w;
}

static void random_cluster(lsched_cluster *c, struct rng *r) {
  int n = 2 + (int)below(r, 10);
  for (int i = 0; i < n; i++)
    add_node(c, 8000 * (1 + (int64_t)below(r, 8)), (int)below(r, 9),
             (int)below(r, 2),
             below(r, 4) ? LSCHED_GPU_SHARED : LSCHED_GPU_EXCLUSIVE);
}

static lsched_request random_request(struct rng *r, int wide) {
  static const int shares[] = {100, 200, 250, 500, 600, 1000};
  int k = (int)below(r, 4);
  lsched_request q = rq(1000 * (int64_t)below(r, 12), k,
                        k ? (k > 1 ? 1000 : random_share(r, shares, wide)) : 0);
  if (below(r, 5) == 0)
    q.model_mask = 1 + below(r, 3);
  return q;
}

/* The meter kept incrementally equals a from-scratch recomputation after
 * every allocation and release (loops 3..5: many thresholds). */
START_TEST(fragmeter_matches_scratch) {
  struct rng r = {0x9E3779B97F4A7C15ull + (uint64_t)_i};
  int wide = _i >= 3;
  for (int round = 0; round < 10; round++) {
    lsched_cluster *c = new_cluster();
    random_cluster(c, &r);
    lsched_workload *w = random_workload(&r, wide);
    lsched_fragmeter *m;
    ck_assert_int_eq(lsched_fragmeter_create(&m, c, w), LSCHED_OK);
    lsched_registry *reg;
    lsched_policy *p = policy(c, &reg, "first-fit");
    lsched_placement live[300];
    int nlive = 0;
    for (int step = 0; step < 300; step++) {
      if (nlive > 0 && below(&r, 3) == 0) {
        int j = (int)below(&r, (uint64_t)nlive);
        REQ_EQ(lsched_release(c, &live[j]), LSCHED_OK);
        live[j] = live[--nlive];
      } else {
        lsched_request q = random_request(&r, wide);
        if (lsched_policy_place(p, &q, &live[nlive]) == LSCHED_OK) {
          REQ_EQ(lsched_alloc(c, &live[nlive]), LSCHED_OK);
          nlive++;
        }
      }
      /* The hint reads and changes nothing (the comparison below); no
       * meter or a node out of range is no hint. */
      int nn = lsched_cluster_node_count(c);
      lsched_fragmeter_prefetch(NULL, 0);
      lsched_fragmeter_prefetch(m, -1);
      lsched_fragmeter_prefetch(m, nn);
      lsched_fragmeter_prefetch(m, nn > 0 ? step % nn : 0);
      lsched_frag a, b;
      lsched_fragmeter_get(m, &a);
      REQ_EQ(lsched_frag_cluster(c, w, &b), LSCHED_OK);
      REQ_EQ(a.amount_weighted, b.amount_weighted);
      REQ_EQ(a.idle_gpu_milli, b.idle_gpu_milli);
      REQ_EQ(a.weight_total, b.weight_total);
      REQ(a.rate == b.rate && a.amount == b.amount);
      REQ(a.rate >= 0 && a.rate <= 1 + 1e-12);
    }
    lsched_policy_destroy(p);
    lsched_registry_destroy(reg);
    /* Nodes may be added while the meter is attached (issue #16); it
     * follows them (tests/test_live.c checks it exactly). */
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    while (nlive > 0)
      REQ_EQ(lsched_release(c, &live[--nlive]), LSCHED_OK);
    ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), LSCHED_OK);
    lsched_fragmeter_destroy(m);
    lsched_fragmeter_destroy(NULL);
    ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), LSCHED_OK);
    lsched_workload_destroy(w);
    lsched_cluster_destroy(c);
  }
}
END_TEST

/* ---------------------------------------------------------- policies */

/*
 * dot-product. A = 64000 CPU (largest node), B = 4000 (4 GPUs). N0: all
 * free (64000, 4000); N1: 16000 CPU and GPU 3 (1000) free. Request 8000
 * CPU, 1 x 1000:
 *   N0: dot = 64000 x 8000 / A^2 + 4000 x 1000 / B^2 = 0.125 + 0.25 = 0.375
 *       -> floor(100 (1 - 0.1875)) = 81
 *   N1: dot = 16000 x 8000 / A^2 + 1000 x 1000 / B^2 = 0.03125 + 0.0625
 *       -> floor(100 (1 - 0.046875)) = 95: N1, GPU 3.
 * N2 in N1's state ties with it: the earliest in the visit order wins.
 */
START_TEST(dot_product_hand_computed) {
  lsched_cluster *c = new_cluster();
  add_node(c, 64000, 4, 0, LSCHED_GPU_SHARED);
  add_node(c, 32000, 4, 0, LSCHED_GPU_SHARED);
  add_node(c, 32000, 4, 0, LSCHED_GPU_SHARED);
  take(c, 1, 16000, 3, 1000, 0x7);
  take(c, 2, 16000, 3, 1000, 0x7);
  lsched_registry *reg;
  lsched_policy *p = policy(c, &reg, "dot-product");
  expect(p, rq(8000, 1, 1000), 1, 0x8);
  const int order[] = {2, 0, 1};
  ck_assert_int_eq(lsched_cluster_set_order(c, order, 3), LSCHED_OK);
  expect(p, rq(8000, 1, 1000), 2, 0x8);
  /* A request only N0 holds (2 GPUs). */
  expect(p, rq(8000, 2, 1000), 0, 0x3);
  lsched_policy_destroy(p);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}
END_TEST

/*
 * gpu-packing, three nodes of 4 GPUs:
 *   N0 empty: max(33 - 4, 4) = 29.
 *   N1 GPU0 has 300 free: 1 x 200 takes it (tightest), not fully free:
 *      100 - floor(300 x 100 / 1000) / 10 = 100 - 3 = 97.
 *   N2 GPU0 full: 1 x 200 takes a fully free GPU: max(50 - 1, 33) = 49.
 * 1 x 200 -> N1 GPU0. 1 x 500: N1 and N2 both 49 (a free GPU), N0 29 ->
 * N1 (earlier), lowest free GPU 1. 2 x 1000: N1, N2 48; N0 29 -> N1, GPUs
 * 1 and 2. CPU-only: 0 everywhere -> the earliest node that fits.
 */
START_TEST(gpu_packing_hand_computed) {
  lsched_cluster *c = new_cluster();
  for (int i = 0; i < 3; i++)
    add_node(c, 64000, 4, 0, LSCHED_GPU_SHARED);
  take(c, 1, 0, 1, 700, 0x1);
  take(c, 2, 0, 1, 1000, 0x1);
  lsched_registry *reg;
  lsched_policy *p = policy(c, &reg, "gpu-packing");
  expect(p, rq(1000, 1, 200), 1, 0x1);
  expect(p, rq(1000, 1, 500), 1, 0x2);
  expect(p, rq(1000, 2, 1000), 1, 0x6);
  expect(p, rq(1000, 0, 0), 0, 0);
  const int order[] = {2, 1, 0};
  ck_assert_int_eq(lsched_cluster_set_order(c, order, 3), LSCHED_OK);
  expect(p, rq(1000, 1, 500), 2, 0x2);
  expect(p, rq(1000, 0, 0), 2, 0);
  /* A node with no GPU in use but with CPU in use is still "empty". */
  take(c, 0, 1000, 0, 0, 0);
  expect(p, rq(1000, 4, 1000), 0, 0xF);
  lsched_policy_destroy(p);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}
END_TEST

/*
 * gpu-clustering, B = 4000. Tags are learned from allocations made while
 * the policy is attached.
 *   N0 empty: 25 x (4000 - 4000) / 4000 + 25 = 25.
 *   N1 holds a share pod (GPU0 300 taken): base 25 x 300 / 4000 = 1;
 *      share request +75 = 76; a 1-GPU request +0 = 1.
 *   N2 holds a 1-GPU pod: base 25 x 1000 / 4000 = 6; share 6; 1-GPU 81.
 *   N3 holds both: base 25 x 1300 / 4000 = 8; share 58; 1-GPU 58.
 * share (1 x 200) -> N1 GPU0; 1 x 1000 -> N2 GPU1; 2 x 1000 -> N0 (25 vs
 * 1, 6, 8); CPU-only -> 0 everywhere -> earliest.
 */
START_TEST(gpu_clustering_hand_computed) {
  lsched_cluster *c = new_cluster();
  for (int i = 0; i < 4; i++)
    add_node(c, 64000, 4, 0, LSCHED_GPU_SHARED);
  lsched_registry *reg;
  lsched_policy *p = policy(c, &reg, "gpu-clustering");
  take(c, 1, 0, 1, 300, 0x1);
  take(c, 2, 0, 1, 1000, 0x1);
  take(c, 3, 0, 1, 300, 0x1);
  take(c, 3, 0, 1, 1000, 0x2);
  expect(p, rq(1000, 1, 200), 1, 0x1);
  expect(p, rq(1000, 1, 1000), 2, 0x2);
  expect(p, rq(1000, 2, 1000), 0, 0x3);
  expect(p, rq(1000, 0, 0), 0, 0);
  /* Releasing N2's only pod clears its tag: a 1-GPU request then scores
   * N0 25, N2 25 (empty again), N3 58 -> N3. */
  lsched_placement x = pl(2, 0, 1, 1000, 0x1);
  ck_assert_int_eq(lsched_release(c, &x), LSCHED_OK);
  expect(p, rq(1000, 1, 1000), 3, 0x4);
  lsched_policy_destroy(p);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}
END_TEST

START_TEST(random_uniform_and_seeded) {
  lsched_cluster *c = new_cluster();
  add_node(c, 64000, 4, 0, LSCHED_GPU_SHARED);
  add_node(c, 4000, 4, 0, LSCHED_GPU_SHARED); /* too little CPU */
  add_node(c, 64000, 4, 0, LSCHED_GPU_SHARED);
  take(c, 0, 0, 1, 500, 0x2);
  take(c, 0, 0, 1, 800, 0x4);
  take(c, 0, 0, 1, 1000, 0x8);
  lsched_registry *reg;
  lsched_policy *p = policy(c, &reg, "random");
  ck_assert_int_eq(lsched_policy_set_param(p, "seed", "abc"), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_set_param(p, "seed", "-1"), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_set_param(p, "nope", "1"), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_policy_set_param(p, "seed", "42"), LSCHED_OK);
  /* 1 x 300 on node 0 fits GPUs 0 (1000) and 1 (500) only. */
  int nodes[3] = {0}, gpus[4] = {0};
  lsched_request q = rq(8000, 1, 300);
  int seq[64];
  for (int i = 0; i < 4000; i++) {
    lsched_placement out;
    REQ_EQ(lsched_policy_place(p, &q, &out), LSCHED_OK);
    nodes[out.node]++;
    if (i < 64)
      seq[i] = out.node * 64 + __builtin_ctzll(out.gpu_mask);
    if (out.node == 0)
      gpus[__builtin_ctzll(out.gpu_mask)]++;
  }
  ck_assert_int_eq(nodes[1], 0);
  ck_assert_int_gt(nodes[0], 1800); /* binomial(4000, 1/2): sd ~32 */
  ck_assert_int_gt(nodes[2], 1800);
  ck_assert_int_gt(gpus[0], 800);
  ck_assert_int_gt(gpus[1], 800);
  ck_assert_int_eq(gpus[2] + gpus[3], 0);
  /* Whole GPUs: the lowest-index free ones. */
  lsched_placement out;
  lsched_request whole = rq(0, 1, 1000);
  ck_assert_int_eq(lsched_policy_place(p, &whole, &out), LSCHED_OK);
  ck_assert_uint_eq(out.gpu_mask, 0x1);
  /* The same seed gives the same sequence. */
  ck_assert_int_eq(lsched_policy_set_param(p, "seed", "42"), LSCHED_OK);
  for (int i = 0; i < 64; i++) {
    REQ_EQ(lsched_policy_place(p, &q, &out), LSCHED_OK);
    REQ_EQ(out.node * 64 + __builtin_ctzll(out.gpu_mask), seq[i]);
  }
  lsched_policy_destroy(p);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}
END_TEST

/*
 * fgd. N0: 2 GPUs free (1000, 1000); N1: (1000, 400). Workload: one type,
 * 1 x 500 with 1000 CPU. F(N0) = 0 (both GPUs hold 500); F(N1) = 400 (GPU0
 * holds it; 400 below 500). Request 1 x 400:
 *   N0 GPU0 -> (600, 1000): F 0, increase 0, score floor(100 sigmoid(0))
 *   = 50; GPU1 the same.
 *   N1 GPU0 -> (600, 400): F 400, increase 0: 50;
 *   N1 GPU1 -> (1000, 0): F 0, increase -400: floor(100 sigmoid(0.4)) =
 *   floor(59.87) = 59 -> N1 GPU1.
 * Again 1 x 400: N0 50 (increase 0), N1 GPU0 -> (600, 0): F 0, increase
 * 0: 50 -> tie: the earliest node, N0, and there the lowest GPU.
 */
START_TEST(fgd_hand_computed) {
  lsched_cluster *c = new_cluster();
  add_node(c, 64000, 2, 0, LSCHED_GPU_SHARED);
  add_node(c, 64000, 2, 0, LSCHED_GPU_SHARED);
  take(c, 1, 0, 1, 600, 0x2);
  lsched_registry *reg;
  lsched_policy *p = policy(c, &reg, "fgd");
  /* Without a workload every node scores 50: the earliest that fits. */
  expect(p, rq(1000, 1, 400), 0, 0x1);
  const lsched_task_type t[] = {tt(1000, 1, 500, 0, 1)};
  lsched_workload *w = workload(t, 1);
  ck_assert_int_eq(lsched_policy_set_workload(p, w), LSCHED_OK);
  lsched_workload_destroy(w); /* copied */
  lsched_placement out;
  lsched_request q = rq(1000, 1, 400);
  ck_assert_int_eq(lsched_policy_place(p, &q, &out), LSCHED_OK);
  ck_assert_int_eq(out.node, 1);
  ck_assert_uint_eq(out.gpu_mask, 0x2);
  ck_assert_int_eq(lsched_alloc(c, &out), LSCHED_OK);
  expect(p, q, 0, 0x1);
  /* Clearing the workload: neutral again. */
  ck_assert_int_eq(lsched_policy_set_workload(p, NULL), LSCHED_OK);
  expect(p, rq(1000, 1, 1000), 0, 0x1);
  lsched_policy_destroy(p);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);

  /*
   * CPU only. N0 64000 CPU, N1 32000, both 2 free GPUs. Type 1 x 500 with
   * 40000 CPU: it runs on N0 (F 0), not on N1 (F = 2000). A CPU-only request
   * of 30000 leaves N0 34000 < 40000: F 0 -> 2000, score floor(100
   * sigmoid(-2)) = 11; on N1 nothing changes: 50 -> N1.
   */
  c = new_cluster();
  add_node(c, 64000, 2, 0, LSCHED_GPU_SHARED);
  add_node(c, 32000, 2, 0, LSCHED_GPU_SHARED);
  p = policy(c, &reg, "fgd");
  const lsched_task_type t2[] = {tt(40000, 1, 500, 0, 1)};
  w = workload(t2, 1);
  ck_assert_int_eq(lsched_policy_set_workload(p, w), LSCHED_OK);
  expect(p, rq(30000, 0, 0), 1, 0);
  /* A whole GPU: N0 -> (0, 1000): still fits the type, F 0 (the empty GPU
   * counts 0): increase 0, 50; N1: F 2000 -> 1000, increase -1000: 73 ->
   * N1, lowest free GPU. */
  expect(p, rq(1000, 1, 1000), 1, 0x1);
  lsched_workload_destroy(w);
  lsched_policy_destroy(p);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}
END_TEST

/* The fgd choice equals a brute-force evaluation through the public API:
 * for every node that fits (visit order) and every GPU choice, allocate,
 * measure F(n) with lsched_frag_node, release; the best truncated score
 * wins (earliest node), and on it the least increase (lowest GPU). */
static void brute_fgd(lsched_cluster *c, const lsched_workload *w,
                      const lsched_request *q, int *node, uint64_t *mask) {
  uint64_t W = lsched_workload_weight(w);
  int n = lsched_cluster_node_count(c);
  const int *order = lsched_cluster_order(c);
  int best_score = -1;
  *node = -1;
  for (int pos = 0; pos < n; pos++) {
    int i = order[pos];
    if (!lsched_fits(c, i, q))
      continue;
    double F0;
    REQ_EQ(lsched_frag_node(c, w, i, &F0), LSCHED_OK);
    lsched_node_info ni;
    lsched_cluster_node_info(c, i, &ni);
    int d = lsched_effective_milli(c, i, q);
    /* candidate placements */
    lsched_placement cand[64];
    int nc = 0;
    if (q->gpu_count == 1 && d < 1000) {
      for (int g = 0; g < ni.gpu_count; g++)
        if (lsched_cluster_gpu_free(c, i, g) >= d) {
          cand[nc] = pl(i, q->cpu_milli, 1, d, UINT64_C(1) << g);
          cand[nc++].memory_mib = q->memory_mib;
        }
    } else {
      REQ_EQ(lsched_pick_gpus(c, i, q, LSCHED_PICK_TIGHTEST, &cand[0]),
             LSCHED_OK);
      nc = 1;
    }
    double bestF = INFINITY;
    uint64_t bmask = 0;
    for (int k = 0; k < nc; k++) {
      REQ_EQ(lsched_alloc(c, &cand[k]), LSCHED_OK);
      double F1;
      REQ_EQ(lsched_frag_node(c, w, i, &F1), LSCHED_OK);
      REQ_EQ(lsched_release(c, &cand[k]), LSCHED_OK);
      if (F1 < bestF) {
        bestF = F1;
        bmask = cand[k].gpu_mask;
      }
    }
    /* F x W is an integer: recover it to compute the increase as the
     * policy does, (F0 W - F1 W) / W / 1000. */
    double f0w = nearbyint(F0 * (double)W), f1w = nearbyint(bestF * (double)W);
    int score = W ? (int)(1.0 / (1.0 + exp(-((f0w - f1w) / (double)W / 1000.0))) *
                          100.0)
                  : 50;
    if (score > best_score) {
      best_score = score;
      *node = i;
      *mask = bmask;
    }
  }
}

START_TEST(fgd_matches_brute_force) {
  struct rng r = {0xD1B54A32D192ED03ull + (uint64_t)_i * 131};
  for (int round = 0; round < 6; round++) {
    lsched_cluster *c = new_cluster();
    random_cluster(c, &r);
    int n = lsched_cluster_node_count(c);
    int perm[16];
    for (int i = 0; i < n; i++)
      perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
      int j = (int)below(&r, (uint64_t)i + 1), x = perm[i];
      perm[i] = perm[j];
      perm[j] = x;
    }
    ck_assert_int_eq(lsched_cluster_set_order(c, perm, n), LSCHED_OK);
    lsched_workload *w = random_workload(&r, 0);
    lsched_registry *reg;
    lsched_policy *p = policy(c, &reg, "fgd");
    ck_assert_int_eq(lsched_policy_set_workload(p, w), LSCHED_OK);
    lsched_placement live[200];
    int nlive = 0;
    for (int step = 0; step < 200; step++) {
      if (nlive > 0 && below(&r, 4) == 0) {
        int j = (int)below(&r, (uint64_t)nlive);
        REQ_EQ(lsched_release(c, &live[j]), LSCHED_OK);
        live[j] = live[--nlive];
        continue;
      }
      lsched_request q = random_request(&r, 0);
      int bn;
      uint64_t bm = 0;
      brute_fgd(c, w, &q, &bn, &bm);
      lsched_placement out;
      int rc = lsched_policy_place(p, &q, &out);
      if (bn < 0) {
        REQ(rc == (lsched_can_ever_fit(c, &q) ? LSCHED_ENOFIT : LSCHED_ENEVER));
        continue;
      }
      REQ_EQ(rc, LSCHED_OK);
      if (out.node != bn || out.gpu_mask != bm)
        ck_abort_msg("round %d step %d: fgd node %d mask %#llx, brute force "
                     "node %d mask %#llx",
                     round, step, out.node, (unsigned long long)out.gpu_mask,
                     bn, (unsigned long long)bm);
      REQ_EQ(lsched_alloc(c, &out), LSCHED_OK);
      live[nlive++] = out;
    }
    lsched_policy_destroy(p);
    lsched_registry_destroy(reg);
    lsched_workload_destroy(w);
    lsched_cluster_destroy(c);
  }
}
END_TEST

/* ------------------------------------------------------- ops versions */

static int noop_place(void *state, const lsched_cluster *c,
                      const lsched_request *req, lsched_placement *out) {
  (void)state;
  (void)c;
  (void)req;
  (void)out;
  return LSCHED_ENOFIT;
}

/* A version-1 table as an outside user compiled it before version 2: the
 * struct ends before set_workload. */
struct ops_v1 {
  unsigned version;
  const char *name;
  const char *description;
  size_t state_size;
  int (*init)(void *state, const lsched_cluster *c);
  void (*fini)(void *state);
  int (*set_param)(void *state, const char *key, const char *value);
  int (*place)(void *state, const lsched_cluster *c, const lsched_request *req,
               lsched_placement *out);
  void (*on_alloc)(void *state, const lsched_cluster *c,
                   const lsched_placement *p);
  void (*on_release)(void *state, const lsched_cluster *c,
                     const lsched_placement *p);
};

START_TEST(ops_version_1_still_works) {
  ck_assert_int_ge(LSCHED_POLICY_OPS_VERSION, 2); /* v3 added planning */
  struct ops_v1 *v1 = malloc(sizeof *v1); /* exactly the v1 size */
  memset(v1, 0, sizeof *v1);
  v1->version = 1;
  v1->name = "old-style";
  v1->place = noop_place;
  const lsched_policy_ops *ops = (const lsched_policy_ops *)(void *)v1;
  lsched_registry *reg;
  ck_assert_int_eq(lsched_registry_create(&reg, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add(reg, ops), LSCHED_OK);
  lsched_cluster *c = new_cluster();
  add_node(c, 1000, 1, 0, LSCHED_GPU_SHARED);
  lsched_policy *p;
  ck_assert_int_eq(lsched_policy_create(&p, c, ops), LSCHED_OK);
  lsched_workload *w;
  ck_assert_int_eq(lsched_workload_create(&w, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_policy_set_workload(p, w), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_policy_set_workload(NULL, w), LSCHED_EINVAL);
  lsched_policy_destroy(p);
  /* A version-2 table without the hook. */
  lsched_policy_ops v2 = {0};
  v2.version = 2;
  v2.name = "no-hook";
  v2.place = noop_place;
  ck_assert_int_eq(lsched_policy_create(&p, c, &v2), LSCHED_OK);
  ck_assert_int_eq(lsched_policy_set_workload(p, w), LSCHED_ENOENT);
  lsched_policy_destroy(p);
  /* Builtins that take a workload say so; the others do not. */
  lsched_registry *b;
  ck_assert_int_eq(lsched_registry_create(&b, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(b), LSCHED_OK);
  ck_assert_int_eq(
      lsched_policy_create(&p, c, lsched_registry_find(b, "fgd")), LSCHED_OK);
  ck_assert_int_eq(lsched_policy_set_workload(p, w), LSCHED_OK);
  lsched_policy_destroy(p);
  ck_assert_int_eq(
      lsched_policy_create(&p, c, lsched_registry_find(b, "best-fit")),
      LSCHED_OK);
  ck_assert_int_eq(lsched_policy_set_workload(p, w), LSCHED_ENOENT);
  lsched_policy_destroy(p);
  static const char *const fgd_names[] = {"random", "dot-product",
                                          "gpu-clustering", "gpu-packing",
                                          "best-fit", "fgd"};
  for (size_t i = 0; i < 6; i++)
    ck_assert_ptr_nonnull(lsched_registry_find(b, fgd_names[i]));
  lsched_registry_destroy(b);
  lsched_workload_destroy(w);
  lsched_cluster_destroy(c);
  lsched_registry_destroy(reg);
  free(v1);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("frag");
  TCase *tc = tcase_create("frag");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, workload_merge_validate_popular);
  tcase_add_test(tc, frag_node_hand_computed);
  tcase_add_loop_test(tc, fragmeter_matches_scratch, 0, 6);
  tcase_add_test(tc, dot_product_hand_computed);
  tcase_add_test(tc, gpu_packing_hand_computed);
  tcase_add_test(tc, gpu_clustering_hand_computed);
  tcase_add_test(tc, random_uniform_and_seeded);
  tcase_add_test(tc, fgd_hand_computed);
  tcase_add_loop_test(tc, fgd_matches_brute_force, 0, 4);
  tcase_add_test(tc, ops_version_1_still_works);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
