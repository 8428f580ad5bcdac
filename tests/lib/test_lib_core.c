/*
 * libsched's core through its public headers only, on the minitest harness
 * (no Check): this is the suite a libsched-only build
 * (cmake -DLSCHED_BUILD_SIM=OFF) runs, and the full build runs it too.
 *
 * Covered: a cluster built node by node, allocations and releases that
 * restore the state exactly, the error codes of bad calls (with the state
 * unchanged after each), every built-in policy on cases where exactly one
 * node fits, the hand-computed placements of first-fit, best-fit and
 * worst-fit (the cases and expected values of tests/test_libsched.c), gang
 * placement (tests/test_gang.c), and MIG on a static and a dynamic node
 * (tests/test_mig.c). The library's own invariant checker
 * (lsched_cluster_check) runs after every state change.
 */
#include "libtest.h"

#include <libsched/libsched.h>
#include <libsched/mig.h>

#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */

static int add_node(lsched_cluster *c, int64_t cpu, int64_t mem, int gpus,
                    int model, lsched_gpu_mode mode) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = cpu;
  s.memory_mib = mem;
  s.gpu_count = gpus;
  s.gpu_model = model;
  s.gpu_mode = mode;
  int id = -1;
  int rc = lsched_cluster_add_node(c, &s, &id);
  MT_ASSERT_MSG(rc == LSCHED_OK, "add_node: %s (%s)", lsched_err_name(rc),
                lsched_cluster_errmsg(c));
  MT_GE(id, 0);
  return id;
}

static int add_mig_node(lsched_cluster *c, int gpus, int dynamic,
                        const lsched_mig_instance *layout, int n) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 64000;
  s.memory_mib = 524288;
  s.gpu_count = gpus;
  s.gpu_model = A100;
  s.gpu_mode = LSCHED_GPU_MIG;
  s.mig_dynamic = dynamic;
  s.mig_layout = layout;
  s.mig_layout_count = n;
  int id = -1;
  int rc = lsched_cluster_add_node(c, &s, &id);
  MT_ASSERT_MSG(rc == LSCHED_OK, "add MIG node: %s (%s)", lsched_err_name(rc),
                lsched_cluster_errmsg(c));
  return id;
}

static lsched_request mkreq(int64_t cpu, int64_t mem, int k, int milli,
                            uint64_t mask) {
  lsched_request r = LSCHED_REQUEST_INIT;
  r.cpu_milli = cpu;
  r.memory_mib = mem;
  r.gpu_count = k;
  r.gpu_milli = milli;
  r.model_mask = mask;
  return r;
}

static lsched_request mig_req(int kind) {
  lsched_request r = mkreq(1000, 1024, 1, 0, 0);
  r.mig_kind = kind;
  return r;
}

static lsched_placement mkpl(int node, int64_t cpu, int64_t mem, int k,
                             int milli, uint64_t mask) {
  lsched_placement p;
  memset(&p, 0, sizeof p);
  p.node = node;
  p.cpu_milli = cpu;
  p.memory_mib = mem;
  p.gpu_count = k;
  p.gpu_milli = milli;
  p.gpu_mask = mask;
  return p;
}

/* Allocation and release, each followed by the invariant checker. */
static void alloc_ok(lsched_cluster *c, lsched_placement p) {
  int rc = lsched_alloc(c, &p);
  MT_ASSERT_MSG(rc == LSCHED_OK, "alloc on node %d: %s (%s)", p.node,
                lsched_err_name(rc), lsched_cluster_errmsg(c));
  OK(lsched_cluster_check(c));
}

static void release_ok(lsched_cluster *c, lsched_placement p) {
  int rc = lsched_release(c, &p);
  MT_ASSERT_MSG(rc == LSCHED_OK, "release on node %d: %s (%s)", p.node,
                lsched_err_name(rc), lsched_cluster_errmsg(c));
  OK(lsched_cluster_check(c));
}

/* Everything observable about a cluster's state. */
#define SNAP_MAXN 16
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
  MT_LE(s->n, SNAP_MAXN);
  const int *order = lsched_cluster_order(c);
  for (int i = 0; i < s->n; i++) {
    OK(lsched_cluster_node_info(c, i, &s->info[i]));
    for (int g = 0; g < s->info[i].gpu_count; g++)
      s->gpu[i][g] = lsched_cluster_gpu_free(c, i, g);
    s->order[i] = order[i];
  }
  lsched_cluster_totals(c, &s->tot);
}

/* The cluster is exactly in the snapshot's state, and consistent. */
static void assert_state(const lsched_cluster *c, const struct snap *want) {
  struct snap now;
  snap_take(c, &now);
  MT_EQ(now.n, want->n);
  for (int i = 0; i < now.n; i++) {
    const lsched_node_info *x = &now.info[i], *y = &want->info[i];
    MT_EQ(x->cpu_free, y->cpu_free);
    MT_EQ(x->memory_free, y->memory_free);
    MT_EQ(x->gpus_fully_free, y->gpus_fully_free);
    MT_EQ(x->gpu_milli_free, y->gpu_milli_free);
    for (int g = 0; g < x->gpu_count; g++)
      MT_ASSERT_MSG(now.gpu[i][g] == want->gpu[i][g],
                    "node %d GPU %d: %d milli free, want %d", i, g,
                    now.gpu[i][g], want->gpu[i][g]);
    MT_EQ(now.order[i], want->order[i]);
  }
  MT_EQ(now.tot.cpu_free, want->tot.cpu_free);
  MT_EQ(now.tot.memory_free, want->tot.memory_free);
  MT_EQ(now.tot.gpu_milli_free, want->tot.gpu_milli_free);
  OK(lsched_cluster_check(c));
}

/* A fresh registry of the built-in policies. */
static lsched_registry *builtins(void) {
  lsched_registry *r = NULL;
  OK(lsched_registry_create(&r, NULL));
  OK(lsched_registry_add_builtins(r));
  return r;
}

static lsched_policy *attach(lsched_registry *r, lsched_cluster *c,
                             const char *name) {
  const lsched_policy_ops *ops = lsched_registry_find(r, name);
  MT_ASSERT_MSG(ops != NULL, "policy %s not registered", name);
  lsched_policy *p = NULL;
  OK(lsched_policy_create(&p, c, ops));
  MT_ASSERT(strcmp(lsched_policy_name(p), name) == 0);
  return p;
}

/* `policy` places req on `node` with exactly mask and milli; lsched_alloc
 * accepts that placement and lsched_release restores the state exactly. */
static void expect_place(lsched_cluster *c, const char *policy,
                         lsched_request req, int node, uint64_t mask,
                         int milli) {
  lsched_registry *r = builtins();
  lsched_policy *p = attach(r, c, policy);
  struct snap before;
  snap_take(c, &before);
  lsched_placement out;
  memset(&out, 0xA5, sizeof out);
  int rc = lsched_policy_place(p, &req, &out);
  MT_ASSERT_MSG(rc == LSCHED_OK, "%s: %s", policy, lsched_err_name(rc));
  assert_state(c, &before); /* placing changes nothing */
  MT_ASSERT_MSG(out.node == node, "%s chose node %d, want %d", policy,
                out.node, node);
  MT_ASSERT_MSG(out.gpu_mask == mask, "%s chose GPU mask %#llx, want %#llx",
                policy, (unsigned long long)out.gpu_mask,
                (unsigned long long)mask);
  MT_EQ(out.gpu_milli, milli);
  MT_EQ(out.gpu_count, req.gpu_count);
  MT_EQ(out.cpu_milli, req.cpu_milli);
  MT_EQ(out.memory_mib, req.memory_mib);
  lsched_policy_destroy(p);
  lsched_registry_destroy(r);
  alloc_ok(c, out);
  release_ok(c, out);
  assert_state(c, &before);
}

/* ---------------------------------------------------------------------- */
/* The cluster: build, allocate, release                                   */

static void test_version(void) {
  MT_ASSERT(strcmp(lsched_version_string(), LSCHED_VERSION_STRING) == 0);
  MT_EQ(lsched_version_number(), LSCHED_VERSION_NUMBER);
}

static void test_alloc_release_restores(void) {
  lsched_cluster *c = lt_new_cluster();
  MT_EQ(add_node(c, 32000, 262144, 4, A100, LSCHED_GPU_SHARED), 0);
  MT_EQ(add_node(c, 16000, 65536, 2, V100, LSCHED_GPU_EXCLUSIVE), 1);
  MT_EQ(add_node(c, 8000, 32768, 0, -1, LSCHED_GPU_SHARED), 2);
  MT_EQ(lsched_cluster_node_count(c), 3);

  lsched_totals t = LSCHED_TOTALS_INIT;
  lsched_cluster_totals(c, &t);
  MT_EQ(t.nodes, 3);
  MT_EQ(t.gpus, 6);
  MT_EQ(t.cpu_free, 56000);
  MT_EQ(t.gpu_milli, 6000);
  MT_EQ(t.gpu_milli_free, 6000);

  struct snap empty;
  snap_take(c, &empty);
  const lsched_placement steps[] = {
      mkpl(0, 8000, 1024, 1, 500, 0x1),  /* half of GPU0 */
      mkpl(0, 0, 0, 2, 1000, 0x6),       /* GPU1 and GPU2 whole */
      mkpl(0, 1000, 0, 1, 300, 0x1),     /* GPU0 shared again: 200 left */
      mkpl(1, 4000, 4096, 1, 1000, 0x2), /* exclusive GPU1 */
      mkpl(2, 8000, 32768, 0, 0, 0),     /* the whole CPU-only node */
  };
  enum { NSTEPS = sizeof steps / sizeof steps[0] };
  struct snap after[NSTEPS];
  for (int i = 0; i < NSTEPS; i++) {
    alloc_ok(c, steps[i]);
    snap_take(c, &after[i]);
  }
  MT_EQ(lsched_cluster_gpu_free(c, 0, 0), 200);
  MT_EQ(lsched_cluster_gpu_free(c, 0, 1), 0);
  MT_EQ(lsched_cluster_gpu_free(c, 0, 3), 1000);
  MT_EQ(lsched_cluster_gpu_free(c, 1, 1), 0);
  lsched_node_info ni = LSCHED_NODE_INFO_INIT;
  OK(lsched_cluster_node_info(c, 0, &ni));
  MT_EQ(ni.cpu_free, 23000);
  MT_EQ(ni.memory_free, 262144 - 1024);
  MT_EQ(ni.gpus_fully_free, 1);
  MT_EQ(ni.gpu_milli_free, 1200);
  /* Released in reverse, each release restores the state before its
   * allocation exactly. */
  for (int i = NSTEPS - 1; i >= 0; i--) {
    assert_state(c, &after[i]);
    release_ok(c, steps[i]);
  }
  assert_state(c, &empty);
  /* In another order, the end state is the same. */
  for (int i = 0; i < NSTEPS; i++)
    alloc_ok(c, steps[i]);
  static const int perm[NSTEPS] = {3, 0, 4, 2, 1};
  for (int i = 0; i < NSTEPS; i++)
    release_ok(c, steps[perm[i]]);
  assert_state(c, &empty);
  lsched_cluster_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Errors: the code, and the state unchanged                               */

static void test_errors(void) {
  static const int codes[] = {LSCHED_OK,     LSCHED_ENOMEM, LSCHED_EINVAL,
                              LSCHED_ENOFIT, LSCHED_ENOENT, LSCHED_EEXIST,
                              LSCHED_ERANGE, LSCHED_ESTATE, LSCHED_ENEVER,
                              LSCHED_EVERSION, LSCHED_ELIMIT,
                              LSCHED_ENOTSUP};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    MT_ASSERT(lsched_strerror(codes[i])[0] != '\0');
    MT_ASSERT(lsched_err_name(codes[i])[0] != '\0');
  }
  MT_ASSERT(strcmp(lsched_err_name(LSCHED_ENOFIT), "LSCHED_ENOFIT") == 0);
  MT_ASSERT(lsched_strerror(12345) != NULL);

  MT_EQ(lsched_cluster_create(NULL, NULL), LSCHED_EINVAL);
  lsched_cluster *c = lt_new_cluster();
  add_node(c, 8000, 1000, 2, A100, LSCHED_GPU_SHARED);
  add_node(c, 8000, 1000, 2, V100, LSCHED_GPU_EXCLUSIVE);
  add_node(c, 8000, 1000, 0, -1, LSCHED_GPU_SHARED);
  lsched_node_spec bad = LSCHED_NODE_SPEC_INIT;
  bad.cpu_milli = -1;
  MT_EQ(lsched_cluster_add_node(c, &bad, NULL), LSCHED_EINVAL);
  MT_EQ(lsched_cluster_node_count(c), 3);

  alloc_ok(c, mkpl(0, 6000, 800, 1, 600, 0x1));
  alloc_ok(c, mkpl(1, 0, 0, 1, 1000, 0x1));
  struct snap before;
  snap_take(c, &before);
  /* Over-commitment: LSCHED_ERANGE (from tests/test_libsched.c). */
  const lsched_placement over[] = {
      mkpl(0, 2001, 0, 0, 0, 0),       /* CPU: 2000 free */
      mkpl(0, 0, 201, 0, 0, 0),        /* memory: 200 free */
      mkpl(0, 0, 0, 1, 401, 0x1),      /* GPU0: 400 free */
      mkpl(0, 0, 0, 2, 500, 0x3),      /* GPU1 fits, GPU0 not: all or none */
      mkpl(1, 0, 0, 1, 1000, 0x1),     /* exclusive GPU0 is taken */
      mkpl(2, 8001, 0, 0, 0, 0),
  };
  for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
    MT_ASSERT_MSG(lsched_alloc(c, &over[i]) == LSCHED_ERANGE, "over case %zu",
                  i);
    MT_ASSERT(lsched_cluster_errmsg(c)[0] != '\0');
    assert_state(c, &before);
  }
  /* Malformed placements: LSCHED_EINVAL; no such node: LSCHED_ENOENT. */
  const lsched_placement malformed[] = {
      mkpl(0, 0, 0, 1, 500, 0x3),  /* mask has 2, count 1 */
      mkpl(0, 0, 0, 2, 500, 0x2),  /* mask has 1, count 2 */
      mkpl(0, 0, 0, 0, 0, 0x1),    /* mask has 1, count 0 */
      mkpl(0, 0, 0, 1, 500, 0x0),  /* mask empty, count 1 */
      mkpl(0, 0, 0, 1, 1001, 0x2), /* milli over 1000 */
      mkpl(1, 0, 0, 1, 500, 0x2),  /* exclusive, milli < 1000 */
      mkpl(2, 0, 0, 1, 1000, 0x1), /* node without GPUs */
      mkpl(0, -1, 0, 0, 0, 0),     /* negative CPU */
  };
  for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
    MT_ASSERT_MSG(lsched_alloc(c, &malformed[i]) == LSCHED_EINVAL,
                  "malformed case %zu", i);
    assert_state(c, &before);
  }
  lsched_placement nowhere = mkpl(3, 0, 0, 0, 0, 0);
  MT_EQ(lsched_alloc(c, &nowhere), LSCHED_ENOENT);
  /* A release without its allocation: LSCHED_ERANGE. */
  lsched_placement never = mkpl(0, 0, 0, 1, 100, 0x2);
  MT_EQ(lsched_release(c, &never), LSCHED_ERANGE);
  assert_state(c, &before);
  /* Policies: an unknown name is not found; a request that can never fit
   * is LSCHED_ENEVER from place() (issue #16; was ENOFIT) with the state
   * unchanged and a message. */
  lsched_registry *r = builtins();
  MT_ASSERT(lsched_registry_find(r, "no-such-policy") == NULL);
  lsched_policy *p = attach(r, c, "first-fit");
  lsched_request huge = mkreq(0, 0, 3, 1000, 0);
  lsched_placement out;
  MT_EQ(lsched_policy_place(p, &huge, &out), LSCHED_ENEVER);
  MT_ASSERT(strstr(lsched_cluster_errmsg(c), "ever") != NULL);
  MT_EQ(lsched_can_ever_fit(c, &huge), 0);
  assert_state(c, &before);
  /* Nodes may be added while allocations live and a policy is attached
   * (issue #16; was LSCHED_ESTATE); the message is cleared. */
  lsched_node_spec late = LSCHED_NODE_SPEC_INIT;
  late.cpu_milli = 1000;
  late.memory_mib = 1000;
  int late_id = -1;
  MT_EQ(lsched_cluster_add_node(c, &late, &late_id), LSCHED_OK);
  MT_EQ(late_id, 3);
  MT_ASSERT(lsched_cluster_errmsg(c)[0] == '\0');
  MT_EQ(lsched_cluster_check(c), LSCHED_OK);
  lsched_request bad_req = mkreq(0, 0, 1, 1500, 0);
  MT_EQ(lsched_request_validate(&bad_req), LSCHED_EINVAL);
  lsched_policy_destroy(p);
  lsched_registry_destroy(r);
  lsched_cluster_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Hand-computed placements (the cases of tests/test_libsched.c)           */

/*
 * Notation: A = largest node CPU capacity, B = 1000 x largest node GPU
 * count, a = CPU left on the node after the request, b = GPU milli left.
 * leftover = a/(2A) + b/(2B); best-fit score = floor(100 (1 - leftover)),
 * worst-fit = floor(100 leftover).
 */
static void test_hand_mixed_state(void) {
  lsched_cluster *c = lt_new_cluster();
  for (int i = 0; i < 3; i++)
    MT_EQ(add_node(c, 32000, 262144, 4, A100, LSCHED_GPU_SHARED), i);
  /* n0: 8 cores and half of GPU0 used -> CPU free 24000, GPUs 500/1000x3.
   * n1: 16 cores, GPU0 and GPU1 whole, 300 of GPU2 -> CPU free 16000,
   * GPUs 0/0/700/1000. n2 untouched. A = 32000, B = 4000. */
  alloc_ok(c, mkpl(0, 8000, 0, 1, 500, 0x1));
  alloc_ok(c, mkpl(1, 16000, 0, 2, 1000, 0x3));
  alloc_ok(c, mkpl(1, 0, 0, 1, 300, 0x4));

  /* 4 cores, 1 GiB, 1 GPU x 500.
   * n0: leftover = 20000/64000 + 3000/8000 = 0.6875 -> best 31, worst 68
   * n1: leftover = 0.1875 + 0.15 = 0.3375 -> best 66, worst 33
   * n2: leftover = 0.4375 + 0.4375 = 0.875 -> best 12, worst 87
   * best-fit -> n1, tightest GPU with >= 500 free: GPU2 (700);
   * worst-fit -> n2, GPU0; first-fit -> n0, GPU0 (exactly 500 free). */
  lsched_request r = mkreq(4000, 1024, 1, 500, 0);
  expect_place(c, "first-fit", r, 0, 0x1, 500);
  expect_place(c, "best-fit", r, 1, 0x4, 500);
  expect_place(c, "worst-fit", r, 2, 0x1, 500);

  /* 2 whole GPUs: n0 leftover 0.5625 (best 43, worst 56); n1 does not fit;
   * n2 leftover 0.75 (best 25, worst 75). best-fit and first-fit -> n0,
   * GPUs 1 and 2; worst-fit -> n2, GPUs 0 and 1. */
  r = mkreq(0, 0, 2, 1000, 0);
  expect_place(c, "first-fit", r, 0, 0x6, 1000);
  expect_place(c, "best-fit", r, 0, 0x6, 1000);
  expect_place(c, "worst-fit", r, 2, 0x3, 1000);

  /* Four whole GPUs: only n2. */
  r = mkreq(0, 0, 4, 1000, 0);
  expect_place(c, "first-fit", r, 2, 0xF, 1000);
  expect_place(c, "best-fit", r, 2, 0xF, 1000);
  expect_place(c, "worst-fit", r, 2, 0xF, 1000);
  lsched_cluster_destroy(c);
}

static void test_hand_gpu_choice(void) {
  lsched_cluster *c = lt_new_cluster();
  /* One shared node with 5 GPUs; free shares 1000/300/600/1000/450. */
  MT_EQ(add_node(c, 16000, 65536, 5, A100, LSCHED_GPU_SHARED), 0);
  alloc_ok(c, mkpl(0, 0, 0, 1, 700, 0x2));
  alloc_ok(c, mkpl(0, 0, 0, 1, 400, 0x4));
  alloc_ok(c, mkpl(0, 0, 0, 1, 550, 0x10));
  /* 2 x 400: first-fit lowest index -> 0, 2; best-fit least free share that
   * fits -> 4 (450), 2 (600); worst-fit most free -> 0, 3. */
  lsched_request r = mkreq(1000, 0, 2, 400, 0);
  expect_place(c, "first-fit", r, 0, 0x5, 400);
  expect_place(c, "best-fit", r, 0, 0x14, 400);
  expect_place(c, "worst-fit", r, 0, 0x9, 400);
  /* 1 x 300: best-fit takes GPU1, whose 300 free fit exactly. */
  r = mkreq(0, 0, 1, 300, 0);
  expect_place(c, "first-fit", r, 0, 0x1, 300);
  expect_place(c, "best-fit", r, 0, 0x2, 300);
  expect_place(c, "worst-fit", r, 0, 0x1, 300);
  /* 5 x 300 fits only because GPU1 has exactly 300 free; 5 x 301 not. */
  r = mkreq(0, 0, 5, 300, 0);
  expect_place(c, "best-fit", r, 0, 0x1F, 300);
  lsched_registry *reg = builtins();
  lsched_policy *p = attach(reg, c, "worst-fit");
  r = mkreq(0, 0, 5, 301, 0);
  lsched_placement out;
  MT_EQ(lsched_policy_place(p, &r, &out), LSCHED_ENOFIT);
  lsched_policy_destroy(p);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Every built-in policy: cases where exactly one node fits                */
/* (the scenarios of tests/test_conformance.c, conf_fits_one_node)          */

struct one_node_case {
  const char *what;
  int want; /* the only node that fits */
};

/* Builds scenario `k` on c (nodes and allocations) and returns its request. */
static lsched_request one_node_scenario(lsched_cluster *c, int k) {
  switch (k) {
  case 0: /* by memory: node 3 alone has 256 GiB */
    for (int i = 0; i < 5; i++)
      add_node(c, 32000, i == 3 ? 262144 : 131072, 4, A100, LSCHED_GPU_SHARED);
    return mkreq(1000, 200000, 1, 500, 0);
  case 1: /* by model: node 1 alone has V100 */
    for (int i = 0; i < 5; i++)
      add_node(c, 32000, 131072, 4, i == 1 ? V100 : A100, LSCHED_GPU_SHARED);
    return mkreq(1000, 1024, 2, 1000, UINT64_C(1) << V100);
  case 2: /* by fully free GPUs: node 2 loses one GPU, the others two */
    for (int i = 0; i < 5; i++)
      add_node(c, 32000, 131072, 4, A100, LSCHED_GPU_SHARED);
    for (int i = 0; i < 5; i++)
      alloc_ok(c, i == 2 ? mkpl(i, 0, 0, 1, 1000, 0x8)
                         : mkpl(i, 0, 0, 2, 10, 0x5));
    return mkreq(0, 0, 3, 1000, 0);
  case 3: { /* by the largest free share: 200, 500, 699, 700, 100 */
    static const int used[] = {800, 500, 301, 300, 900};
    for (int i = 0; i < 5; i++)
      add_node(c, 8000, 8192, 1, A100, LSCHED_GPU_SHARED);
    for (int i = 0; i < 5; i++)
      alloc_ok(c, mkpl(i, 0, 0, 1, used[i], 0x1));
    return mkreq(0, 0, 1, 700, 0);
  }
  case 4: /* by CPU left after allocations: node 4 */
    for (int i = 0; i < 6; i++)
      add_node(c, 32000, 131072, i % 2 ? 0 : 2, i % 2 ? -1 : A100,
               LSCHED_GPU_SHARED);
    for (int i = 0; i < 6; i++)
      alloc_ok(c, mkpl(i, i == 4 ? 20000 : 24001, 0, 0, 0, 0));
    return mkreq(8000, 0, 0, 0, 0);
  default: /* a fraction where only exclusive node 2 has a whole GPU */
    for (int i = 0; i < 4; i++)
      add_node(c, 32000, 131072, 2, A100,
               i == 2 ? LSCHED_GPU_EXCLUSIVE : LSCHED_GPU_SHARED);
    for (int i = 0; i < 4; i++)
      if (i != 2)
        alloc_ok(c, mkpl(i, 0, 0, 2, 600, 0x3));
    return mkreq(0, 0, 1, 500, 0);
  }
}

static const struct one_node_case one_node_cases[] = {
    {"memory", 3},     {"model", 1}, {"fully free GPUs", 2},
    {"largest share", 3}, {"CPU", 4},   {"exclusive whole GPU", 2},
};

static void test_every_policy_one_node(void) {
  lsched_registry *r = builtins();
  size_t npol = lsched_registry_count(r);
  MT_GE(npol, 3);
  for (size_t pi = 0; pi < npol; pi++) {
    const lsched_policy_ops *ops = lsched_registry_at(r, pi);
    MT_ASSERT(ops != NULL && ops->name != NULL && ops->place != NULL);
    MT_ASSERT(lsched_registry_find(r, ops->name) == ops);
    for (int k = 0; k < (int)(sizeof one_node_cases / sizeof one_node_cases[0]);
         k++) {
      lsched_cluster *c = lt_new_cluster();
      lsched_request q = one_node_scenario(c, k);
      int want = one_node_cases[k].want;
      for (int i = 0; i < lsched_cluster_node_count(c); i++)
        MT_ASSERT_MSG(lsched_fits(c, i, &q) == (i == want),
                      "scenario '%s' broken at node %d", one_node_cases[k].what,
                      i);
      lsched_policy *p = NULL;
      OK(lsched_policy_create(&p, c, ops));
      /* Randomised policies get a fixed seed; others say LSCHED_ENOENT. */
      int rc = lsched_policy_set_param(p, "seed", "7");
      MT_ASSERT(rc == LSCHED_OK || rc == LSCHED_ENOENT);
      struct snap before;
      snap_take(c, &before);
      lsched_placement out;
      memset(&out, 0x5A, sizeof out);
      rc = lsched_policy_place(p, &q, &out);
      MT_ASSERT_MSG(rc == LSCHED_OK, "%s, by %s: %s", ops->name,
                    one_node_cases[k].what, lsched_err_name(rc));
      assert_state(c, &before);
      MT_ASSERT_MSG(out.node == want, "%s, by %s: node %d, want %d", ops->name,
                    one_node_cases[k].what, out.node, want);
      MT_EQ(out.gpu_count, q.gpu_count);
      MT_EQ(out.gpu_milli, q.gpu_count == 0 ? 0
                           : k == 5         ? 1000 /* exclusive: whole GPU */
                                            : q.gpu_milli);
      alloc_ok(c, out);
      release_ok(c, out);
      assert_state(c, &before);
      lsched_policy_destroy(p);
      lsched_cluster_destroy(c);
    }
  }
  lsched_registry_destroy(r);
}

/* ---------------------------------------------------------------------- */
/* Gang placement (tests/test_gang.c)                                      */

static lsched_request gang(int gpus, int64_t cpu, int64_t mem) {
  return mkreq(cpu, mem, gpus, 1000, 0);
}

static void test_gang(void) {
  lsched_cluster *c = lt_new_cluster();
  for (int i = 0; i < 4; i++)
    add_node(c, 64000, 524288, 8, A100, LSCHED_GPU_SHARED);
  struct snap empty;
  snap_take(c, &empty);
  lsched_registry *r = builtins();
  lsched_policy *p = attach(r, c, "first-fit");
  /* 16 GPUs on two whole nodes; 16001 CPU split 8001 + 8000. */
  lsched_request q = gang(16, 16001, 1000);
  lsched_placement out[8];
  int n = -1;
  OK(lsched_place_gang(p, &q, out, 8, &n));
  OK(lsched_cluster_check(c));
  MT_EQ(n, 2);
  MT_EQ(out[0].node, 0);
  MT_EQ(out[1].node, 1);
  MT_EQ_U(out[0].gpu_mask, 0xFF);
  MT_EQ_U(out[1].gpu_mask, 0xFF);
  MT_EQ(out[0].cpu_milli, 8001);
  MT_EQ(out[1].cpu_milli, 8000);
  MT_EQ(out[0].memory_mib + out[1].memory_mib, 1000);
  /* All or nothing: 2 x 8 GPUs are left, a 24-GPU job does not fit and
   * leaves the state as it was. */
  struct snap mid;
  snap_take(c, &mid);
  lsched_placement more[8];
  int m = -1;
  lsched_request wide = gang(24, 2400, 2400);
  MT_EQ(lsched_place_gang(p, &wide, more, 8, &m), LSCHED_ENOFIT);
  MT_EQ(m, 0);
  assert_state(c, &mid);
  /* Too few output slots: LSCHED_ELIMIT, state unchanged. */
  lsched_request two = gang(16, 0, 0);
  MT_EQ(lsched_place_gang(p, &two, more, 1, &m), LSCHED_ELIMIT);
  assert_state(c, &mid);
  for (int i = 0; i < n; i++)
    release_ok(c, out[i]);
  assert_state(c, &empty);
  MT_EQ(lsched_can_ever_fit_gang(c, &wide), 1);
  lsched_request too_wide = gang(33, 0, 0);
  MT_EQ(lsched_can_ever_fit_gang(c, &too_wide), 0);
  lsched_policy_destroy(p);
  lsched_registry_destroy(r);
  lsched_cluster_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* MIG (tests/test_mig.c)                                                  */

static lsched_placement mig_pl(int node, int gpu, int kind, int start) {
  lsched_placement p = mkpl(node, 0, 0, 1, lsched_mig_kind_milli(kind),
                            UINT64_C(1) << gpu);
  p.mig_kind = kind;
  p.mig_start = start;
  return p;
}

static void test_mig_static(void) {
  static const lsched_mig_instance balanced[] = {
      {LSCHED_MIG_2G, 0}, {LSCHED_MIG_1G, 2}, {LSCHED_MIG_1G, 3},
      {LSCHED_MIG_3G, 4}};
  lsched_cluster *c = lt_new_cluster();
  int n = add_mig_node(c, 2, 0, balanced, 4);
  struct snap empty;
  snap_take(c, &empty);
  /* Instances that are not in the layout cannot be allocated. */
  lsched_placement p = mig_pl(n, 0, LSCHED_MIG_1G, 5);
  MT_EQ(lsched_alloc(c, &p), LSCHED_ERANGE);
  lsched_request q = mig_req(LSCHED_MIG_4G);
  MT_EQ(lsched_can_ever_fit(c, &q), 0);
  /* Two 1g requests take the two 1g instances of GPU 0, the third the 1g at
   * 2 of GPU 1; with every 1g taken, a 1g request gets a 2g (285 milli). */
  lsched_placement got[5];
  for (int i = 0; i < 5; i++) {
    q = mig_req(LSCHED_MIG_1G);
    OK(lsched_pick_gpus(c, n, &q, LSCHED_PICK_LOWEST, &got[i]));
    alloc_ok(c, got[i]);
  }
  MT_EQ(got[0].mig_start, 2);
  MT_EQ(got[1].mig_start, 3);
  MT_EQ_U(got[2].gpu_mask, 2);
  MT_EQ(got[2].mig_start, 2);
  MT_EQ(got[4].mig_kind, LSCHED_MIG_2G);
  MT_EQ(got[4].mig_start, 0);
  MT_EQ(got[4].gpu_milli, 285);
  for (int i = 4; i >= 0; i--)
    release_ok(c, got[i]);
  assert_state(c, &empty);
  /* A static partition is never rebuilt. */
  MT_EQ_U(lsched_mig_creations(c), 0);
  lsched_cluster_destroy(c);
}

static void test_mig_dynamic(void) {
  lsched_cluster *c = lt_new_cluster();
  int n = add_mig_node(c, 2, 1, NULL, 0);
  lsched_registry *r = builtins();
  lsched_policy *p = attach(r, c, "mig-first-fit");
  lsched_placement out;
  /* 1g at 0 of GPU 0; then a 3g at 4 (slot 0 is taken); then a 2g at 2,
   * GPU 0's lowest valid start among slots 1..3; a 4g goes to GPU 1. */
  static const struct {
    int kind, mask, start;
  } want[] = {{LSCHED_MIG_1G, 1, 0},
              {LSCHED_MIG_3G, 1, 4},
              {LSCHED_MIG_2G, 1, 2},
              {LSCHED_MIG_4G, 2, 0}};
  lsched_placement held[4];
  for (int i = 0; i < 4; i++) {
    lsched_request q = mig_req(want[i].kind);
    OK(lsched_policy_place(p, &q, &out));
    MT_EQ(out.node, n);
    MT_EQ_U(out.gpu_mask, (unsigned)want[i].mask);
    MT_EQ(out.mig_start, want[i].start);
    alloc_ok(c, out);
    held[i] = out;
  }
  MT_EQ_U(lsched_mig_creations(c), 4);
  /* Released instances stay, idle, and are reused without a creation. */
  release_ok(c, held[0]);
  alloc_ok(c, held[0]);
  MT_EQ_U(lsched_mig_creations(c), 4);
  lsched_mig_gpu_state st = LSCHED_MIG_GPU_STATE_INIT;
  OK(lsched_mig_gpu_get(c, n, 0, &st));
  MT_EQ(st.ninstances, 3);
  for (int i = 3; i >= 0; i--)
    release_ok(c, held[i]);
  lsched_totals t = LSCHED_TOTALS_INIT;
  lsched_cluster_totals(c, &t);
  MT_EQ(t.gpu_milli_free, t.gpu_milli);
  MT_EQ(lsched_release(c, &held[0]), LSCHED_ERANGE);
  lsched_policy_destroy(p);
  lsched_registry_destroy(r);
  lsched_cluster_destroy(c);
}

/* A policy that writes a wrong placement version (place must overwrite it)
 * and whose init fails once the cluster has a second node (a node change
 * it cannot follow: it is broken from then on). */
static int lying_init(void *state, const lsched_cluster *c) {
  (void)state;
  return lsched_cluster_node_count(c) > 1 ? LSCHED_ENOMEM : LSCHED_OK;
}

static int lying_place(void *state, const lsched_cluster *c,
                       const lsched_request *req, lsched_placement *out) {
  (void)state;
  int pos = lsched_next_fit(c, req, 0);
  if (pos < 0)
    return LSCHED_ENOFIT;
  int rc = lsched_pick_gpus(c, lsched_cluster_order(c)[pos], req,
                            LSCHED_PICK_LOWEST, out);
  out->version = 0;
  return rc;
}

/* lsched_place_gang's one-node path and lsched_policy_place answer alike:
 * the version set, the message cleared on success, ENOFIT (gang) for
 * ENEVER, LSCHED_ESTATE and its message for a broken policy. */
static void test_gang_one_node_results(void) {
  static const lsched_policy_ops lying = {
      .version = LSCHED_POLICY_OPS_VERSION,
      .name = "lying",
      .init = lying_init,
      .place = lying_place,
  };
  lsched_cluster *c = lt_new_cluster();
  add_node(c, 8000, 8192, 2, A100, LSCHED_GPU_SHARED);
  lsched_policy *p = NULL;
  OK(lsched_policy_create(&p, c, &lying));
  lsched_request huge = mkreq(0, 0, 1, 500, 0), one = mkreq(1000, 0, 1, 500, 0);
  huge.cpu_milli = 9000;
  lsched_placement out[2];
  int n = -1;
  MT_EQ(lsched_place_gang(p, &huge, out, 2, &n), LSCHED_ENOFIT);
  MT_EQ(n, 0);
  MT_ASSERT(strstr(lsched_cluster_errmsg(c), "ever") != NULL);
  MT_EQ(lsched_place_gang(p, &one, out, 2, &n), LSCHED_OK);
  MT_EQ(n, 1);
  MT_EQ(out[0].version, LSCHED_PLACEMENT_VERSION);
  MT_ASSERT(lsched_cluster_errmsg(c)[0] == '\0');
  OK(lsched_release(c, &out[0]));
  MT_EQ(lsched_policy_place(p, &one, &out[1]), LSCHED_OK);
  MT_EQ(out[1].version, LSCHED_PLACEMENT_VERSION);
  lsched_node_spec second = LSCHED_NODE_SPEC_INIT;
  second.cpu_milli = 8000;
  second.memory_mib = 8192;
  int id = -1; /* added, but p cannot follow: it breaks */
  MT_EQ(lsched_cluster_add_node(c, &second, &id), LSCHED_ENOMEM);
  MT_EQ(id, 1);
  n = -1;
  MT_EQ(lsched_place_gang(p, &one, out, 2, &n), LSCHED_ESTATE);
  MT_EQ(n, 0);
  MT_ASSERT(strstr(lsched_cluster_errmsg(c), "could not follow") != NULL);
  MT_EQ(lsched_policy_place(p, &one, &out[1]), LSCHED_ESTATE);
  MT_ASSERT(strstr(lsched_cluster_errmsg(c), "could not follow") != NULL);
  lsched_policy_destroy(p);
  lsched_cluster_destroy(c);
}

int main(void) {
  mt_begin("test_lib_core");
  MT_RUN(test_version);
  MT_RUN(test_alloc_release_restores);
  MT_RUN(test_errors);
  MT_RUN(test_hand_mixed_state);
  MT_RUN(test_hand_gpu_choice);
  MT_RUN(test_every_policy_one_node);
  MT_RUN(test_gang);
  MT_RUN(test_gang_one_node_results);
  MT_RUN(test_mig_static);
  MT_RUN(test_mig_dynamic);
  return mt_finish();
}
