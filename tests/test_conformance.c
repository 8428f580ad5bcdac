/*
 * Conformance suite: every policy that lsched_registry_add_builtins()
 * registers goes through the same cases. Each test is a loop test over the
 * registry index, so a policy registered later is covered without touching
 * this file.
 *
 * The contract checked here (from libsched.h): place() returns LSCHED_OK
 * with a placement that lsched_alloc() accepts, or LSCHED_ENOFIT when no
 * node fits; it never changes the cluster; placements respect model masks,
 * take whole GPUs on exclusive nodes, exactly gpu_count GPUs, no GPU for a
 * CPU-only request; the same state gives the same answer.
 */
#include "testutil.h"

#include <libsched/libsched.h>

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */

/* Assertions that record nothing on success (ck_assert_* writes a location
 * record per passing assertion in fork mode, too slow for the loops). */
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
#define REQ_EQ(x, y)                                                           \
  do {                                                                         \
    intmax_t req_x_ = (intmax_t)(x), req_y_ = (intmax_t)(y);                   \
    if (req_x_ != req_y_)                                                      \
      ck_abort_msg("%s == %s failed: %jd vs %jd", #x, #y, req_x_, req_y_);     \
  } while (0)

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

static uint64_t rng_below(struct rng *r, uint64_t n) {
  return n ? (rng_next(r) >> 11) % n : 0;
}

static int popcount64(uint64_t x) { return __builtin_popcountll(x); }

/* Everything observable about a cluster's state. */
#define SNAP_MAXN 64
struct snap {
  int n;
  lsched_node_info info[SNAP_MAXN];
  int gpu[SNAP_MAXN][LSCHED_MAX_GPUS_PER_NODE];
  int order[SNAP_MAXN];
};

static void snap_take(const lsched_cluster *c, struct snap *s) {
  s->n = lsched_cluster_node_count(c);
  REQ(s->n <= SNAP_MAXN);
  const int *order = lsched_cluster_order(c);
  for (int i = 0; i < s->n; i++) {
    REQ_EQ(lsched_cluster_node_info(c, i, &s->info[i]), LSCHED_OK);
    for (int g = 0; g < s->info[i].gpu_count; g++)
      s->gpu[i][g] = lsched_cluster_gpu_free(c, i, g);
    s->order[i] = order[i];
  }
}

static void snap_assert_equal(const struct snap *a, const struct snap *b) {
  REQ_EQ(a->n, b->n);
  for (int i = 0; i < a->n; i++) {
    const lsched_node_info *x = &a->info[i], *y = &b->info[i];
    REQ_EQ(x->cpu_free, y->cpu_free);
    REQ_EQ(x->memory_free, y->memory_free);
    REQ_EQ(x->gpus_fully_free, y->gpus_fully_free);
    REQ_EQ(x->gpu_milli_free, y->gpu_milli_free);
    REQ_EQ(x->gpu_count, y->gpu_count);
    for (int g = 0; g < x->gpu_count; g++)
      REQ_EQ(a->gpu[i][g], b->gpu[i][g]);
    REQ_EQ(a->order[i], b->order[i]);
  }
}

/* One policy under test on one cluster. */
struct conf {
  lsched_registry *reg;
  const lsched_policy_ops *ops;
  lsched_cluster *c;
  lsched_policy *pol;
};

static void conf_begin(struct conf *k, int index) {
  memset(k, 0, sizeof *k);
  ck_assert_int_eq(lsched_registry_create(&k->reg, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(k->reg), LSCHED_OK);
  k->ops = lsched_registry_at(k->reg, (size_t)index);
  ck_assert_ptr_nonnull(k->ops);
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.check_invariants = 1;
  ck_assert_int_eq(lsched_cluster_create(&k->c, &o), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_model_id(k->c, "A", 1), 0);
  ck_assert_int_eq(lsched_cluster_model_id(k->c, "B", 1), 1);
  ck_assert_int_eq(lsched_cluster_model_id(k->c, "C", 1), 2);
}

/* Attaches the policy (after the nodes are added). Randomised policies get
 * a fixed seed; a policy without that parameter says LSCHED_ENOENT. */
static void conf_attach(struct conf *k) {
  int rc = lsched_policy_create(&k->pol, k->c, k->ops);
  ck_assert_msg(rc == LSCHED_OK, "%s: policy_create: %s", k->ops->name,
                lsched_err_name(rc));
  ck_assert_str_eq(lsched_policy_name(k->pol), k->ops->name);
  rc = lsched_policy_set_param(k->pol, "seed", "7");
  ck_assert_msg(rc == LSCHED_OK || rc == LSCHED_ENOENT, "%s: seed: %s",
                k->ops->name, lsched_err_name(rc));
}

static void conf_end(struct conf *k) {
  lsched_policy_destroy(k->pol);
  lsched_cluster_destroy(k->c);
  lsched_registry_destroy(k->reg);
}

static int node(lsched_cluster *c, int64_t cpu, int64_t mem, int gpus,
                int model, lsched_gpu_mode mode) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = cpu;
  s.memory_mib = mem;
  s.gpu_count = gpus;
  s.gpu_model = model;
  s.gpu_mode = mode;
  int id = -1;
  int rc = lsched_cluster_add_node(c, &s, &id);
  REQ_MSG(rc == LSCHED_OK, "add_node: %s", lsched_err_name(rc));
  return id;
}

/* Six nodes of every kind. */
static void mixed_cluster(lsched_cluster *c) {
  node(c, 64000, 524288, 8, 0, LSCHED_GPU_SHARED);    /* 0 */
  node(c, 64000, 524288, 8, 1, LSCHED_GPU_EXCLUSIVE); /* 1 */
  node(c, 32000, 131072, 4, 2, LSCHED_GPU_SHARED);    /* 2 */
  node(c, 96000, 262144, 0, -1, LSCHED_GPU_SHARED);   /* 3: CPU only */
  node(c, 16000, 65536, 2, 0, LSCHED_GPU_EXCLUSIVE);  /* 4 */
  node(c, 8000, 32768, 1, 1, LSCHED_GPU_SHARED);      /* 5 */
}

/* The placement is well-formed for req and fits the current state. Uses the
 * public interface only. */
static void assert_valid(const lsched_cluster *c, const lsched_request *req,
                         const lsched_placement *p, const char *who) {
  REQ_MSG(p->node >= 0 && p->node < lsched_cluster_node_count(c),
          "%s: node %d out of range", who, p->node);
  REQ_MSG(lsched_fits(c, p->node, req), "%s: node %d does not fit", who,
          p->node);
  lsched_node_info info;
  REQ_EQ(lsched_cluster_node_info(c, p->node, &info), LSCHED_OK);
  REQ_EQ(p->cpu_milli, req->cpu_milli);
  REQ_EQ(p->memory_mib, req->memory_mib);
  REQ_MSG(p->gpu_count == req->gpu_count, "%s: %d GPUs for a %d-GPU request",
          who, p->gpu_count, req->gpu_count);
  REQ_EQ(popcount64(p->gpu_mask), req->gpu_count);
  if (req->gpu_count == 0) {
    REQ_MSG(p->gpu_milli == 0 && p->gpu_mask == 0,
            "%s: a CPU-only request got GPUs", who);
    return;
  }
  if (info.gpu_mode == LSCHED_GPU_MIG || req->mig_kind) {
    /* MIG: only MIG requests on MIG GPUs, an instance of at least the kind
     * the request maps to there, at a valid start, with its milli. */
    REQ_MSG(info.gpu_mode == LSCHED_GPU_MIG && req->mig_kind,
            "%s: MIG and non-MIG mixed (node mode %d, request kind %d)", who,
            (int)info.gpu_mode, req->mig_kind);
    REQ(p->mig_kind >= lsched_mig_request_kind(c, info.gpu_model, req));
    REQ(lsched_mig_slot_mask(p->mig_kind, p->mig_start) != 0);
    REQ_EQ(p->gpu_milli, lsched_mig_kind_milli(p->mig_kind));
    REQ(info.gpu_count == 64 || (p->gpu_mask >> info.gpu_count) == 0);
    return;
  }
  int want =
      info.gpu_mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI : req->gpu_milli;
  REQ_MSG(p->gpu_milli == want, "%s: milli %d on a %s node, expected %d", who,
          p->gpu_milli,
          info.gpu_mode == LSCHED_GPU_EXCLUSIVE ? "exclusive" : "shared", want);
  REQ_EQ(lsched_effective_milli(c, p->node, req), want);
  REQ(info.gpu_count == 64 || (p->gpu_mask >> info.gpu_count) == 0);
  if (req->model_mask)
    REQ_MSG(req->model_mask & (UINT64_C(1) << info.gpu_model),
            "%s: model %d not in mask %#llx", who, info.gpu_model,
            (unsigned long long)req->model_mask);
  for (int g = 0; g < info.gpu_count; g++)
    if ((p->gpu_mask >> g) & 1)
      REQ_MSG(lsched_cluster_gpu_free(c, p->node, g) >= p->gpu_milli,
              "%s: GPU %d of node %d has too little free", who, g, p->node);
}

static int any_node_fits(const lsched_cluster *c, const lsched_request *req) {
  for (int i = 0; i < lsched_cluster_node_count(c); i++)
    if (lsched_fits(c, i, req))
      return 1;
  return 0;
}

/* Asks the policy; checks that the cluster is untouched, that OK comes with
 * a valid placement and ENOFIT only when no node fits. */
static int place(struct conf *k, const lsched_request *req,
                 lsched_placement *out) {
  struct snap before, after;
  snap_take(k->c, &before);
  memset(out, 0x5A, sizeof *out);
  int rc = lsched_policy_place(k->pol, req, out);
  snap_take(k->c, &after);
  snap_assert_equal(&before, &after);
  REQ_EQ(lsched_cluster_check(k->c), LSCHED_OK);
  if (rc == LSCHED_OK) {
    assert_valid(k->c, req, out, k->ops->name);
  } else {
    REQ_MSG(rc == LSCHED_ENOFIT || rc == LSCHED_ENEVER,
            "%s: place returned %s", k->ops->name, lsched_err_name(rc));
    /* ENEVER exactly when no node could ever hold it (issue #16). */
    REQ_MSG((rc == LSCHED_ENEVER) == !lsched_can_ever_fit(k->c, req),
            "%s: %s but can_ever_fit says %d", k->ops->name,
            lsched_err_name(rc), lsched_can_ever_fit(k->c, req));
    REQ(lsched_cluster_errmsg(k->c)[0] != '\0');
    REQ_MSG(!any_node_fits(k->c, req), "%s: ENOFIT although a node fits",
            k->ops->name);
  }
  return rc;
}

/* place() then lsched_alloc(), which must accept the placement. */
static int place_alloc(struct conf *k, const lsched_request *req,
                       lsched_placement *out) {
  int rc = place(k, req, out);
  if (rc == LSCHED_OK) {
    int a = lsched_alloc(k->c, out);
    REQ_MSG(a == LSCHED_OK, "%s: alloc refused its placement: %s (%s)",
            k->ops->name, lsched_err_name(a), lsched_cluster_errmsg(k->c));
    REQ_EQ(lsched_cluster_check(k->c), LSCHED_OK);
  }
  return rc;
}

static int policy_count(void) {
  lsched_registry *r = NULL;
  if (lsched_registry_create(&r, NULL) != LSCHED_OK ||
      lsched_registry_add_builtins(r) != LSCHED_OK)
    return 0;
  int n = (int)lsched_registry_count(r);
  lsched_registry_destroy(r);
  return n;
}

/* ---------------------------------------------------------------------- */
/* Cases                                                                   */

START_TEST(conf_placement_accepted) {
  struct conf k;
  conf_begin(&k, _i);
  mixed_cluster(k.c);
  conf_attach(&k);
  static const struct {
    int64_t cpu, mem;
    int k, milli;
    uint64_t mask;
  } shapes[] = {
      {1000, 1024, 1, 1000, 0},  {4000, 8192, 1, 500, 0},
      {2000, 4096, 2, 250, 0},   {8000, 16384, 4, 1000, 0},
      {500, 512, 0, 0, 0},       {1000, 2048, 1, 100, 0x2},
      {16000, 1024, 8, 1000, 0}, {0, 0, 3, 700, 0x5},
  };
  int ok = 0;
  for (int round = 0; round < 6; round++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      lsched_request q = mkreq(shapes[i].cpu, shapes[i].mem, shapes[i].k,
                               shapes[i].milli, shapes[i].mask);
      lsched_placement p;
      ok += place_alloc(&k, &q, &p) == LSCHED_OK;
    }
  ck_assert_int_gt(ok, 10);
  conf_end(&k);
}
END_TEST

START_TEST(conf_enofit_unchanged) {
  struct conf k;
  lsched_placement p;
  /* A cluster without nodes. */
  conf_begin(&k, _i);
  conf_attach(&k);
  lsched_request q = mkreq(0, 0, 0, 0, 0);
  ck_assert_int_eq(place(&k, &q, &p), LSCHED_ENEVER);
  q = mkreq(1, 1, 1, 1000, 0);
  ck_assert_int_eq(place(&k, &q, &p), LSCHED_ENEVER);
  conf_end(&k);

  conf_begin(&k, _i);
  mixed_cluster(k.c);
  conf_attach(&k);
  /* Requests no node can ever hold. */
  const lsched_request never[] = {
      mkreq(96001, 0, 0, 0, 0), mkreq(0, 524289, 0, 0, 0),
      mkreq(0, 0, 9, 1, 0),     mkreq(0, 0, 1, 1000, UINT64_C(1) << 5),
      mkreq(0, 0, 5, 500, 0x4), mkreq(64001, 0, 1, 1000, 0),
  };
  for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
    ck_assert_msg(lsched_can_ever_fit(k.c, &never[i]) == 0, "case %zu", i);
    ck_assert_msg(place(&k, &never[i], &p) == LSCHED_ENEVER, "case %zu", i);
  }
  /* A malformed request is refused without touching anything. */
  struct snap before, after;
  snap_take(k.c, &before);
  q = mkreq(0, 0, 1, 0, 0);
  ck_assert_int_eq(lsched_policy_place(k.pol, &q, &p), LSCHED_EINVAL);
  q = mkreq(-1, 0, 0, 0, 0);
  ck_assert_int_eq(lsched_policy_place(k.pol, &q, &p), LSCHED_EINVAL);
  snap_take(k.c, &after);
  snap_assert_equal(&before, &after);

  /* Take everything: nothing with any CPU, memory or GPU fits any more. */
  for (int i = 0; i < lsched_cluster_node_count(k.c); i++) {
    lsched_node_info info;
    ck_assert_int_eq(lsched_cluster_node_info(k.c, i, &info), LSCHED_OK);
    uint64_t all = info.gpu_count == 64 ? ~UINT64_C(0)
                                        : (UINT64_C(1) << info.gpu_count) - 1;
    lsched_placement full =
        mkpl(i, info.cpu_milli, info.memory_mib, info.gpu_count,
             info.gpu_count ? 1000 : 0, all);
    ck_assert_int_eq(lsched_alloc(k.c, &full), LSCHED_OK);
  }
  const lsched_request now[] = {
      mkreq(1, 0, 0, 0, 0),
      mkreq(0, 1, 0, 0, 0),
      mkreq(0, 0, 1, 1, 0),
      mkreq(0, 0, 1, 1000, 0x1),
  };
  for (size_t i = 0; i < sizeof now / sizeof now[0]; i++) {
    ck_assert_int_eq(lsched_can_ever_fit(k.c, &now[i]), 1);
    ck_assert_msg(place(&k, &now[i], &p) == LSCHED_ENOFIT, "case %zu", i);
  }
  /* An empty request still fits. */
  q = mkreq(0, 0, 0, 0, 0);
  ck_assert_int_eq(place_alloc(&k, &q, &p), LSCHED_OK);
  conf_end(&k);
}
END_TEST

START_TEST(conf_model_mask) {
  struct conf k;
  conf_begin(&k, _i);
  mixed_cluster(k.c);
  node(k.c, 32000, 131072, 4, 2, LSCHED_GPU_EXCLUSIVE); /* 6: another C */
  conf_attach(&k);
  const uint64_t masks[] = {0x1,
                            0x2,
                            0x4,
                            0x3,
                            0x5,
                            0x6,
                            0x7,
                            0x0,
                            UINT64_C(1) << 5,
                            (UINT64_C(1) << 5) | 0x2};
  const int milli[] = {1000, 300};
  for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++)
    for (size_t s = 0; s < 2; s++) {
      lsched_placement live[64];
      int nlive = 0;
      lsched_request q =
          mkreq(1000, 1024, 1 + (int)(m % 2), milli[s], masks[m]);
      /* Fill until ENOFIT; place() checks the model of every answer. */
      while (nlive < 64 && place_alloc(&k, &q, &live[nlive]) == LSCHED_OK)
        nlive++;
      if (masks[m] == UINT64_C(1) << 5)
        ck_assert_int_eq(nlive, 0);
      else
        ck_assert_int_gt(nlive, 0);
      ck_assert_int_lt(nlive, 64);
      while (nlive > 0)
        ck_assert_int_eq(lsched_release(k.c, &live[--nlive]), LSCHED_OK);
    }
  conf_end(&k);
}
END_TEST

START_TEST(conf_exclusive_whole) {
  struct conf k;
  conf_begin(&k, _i);
  for (int i = 0; i < 3; i++)
    node(k.c, 64000, 65536, 4, i % 2, LSCHED_GPU_EXCLUSIVE);
  conf_attach(&k);
  struct rng r;
  rng_seed(&r, 11);
  int taken = 0;
  for (int step = 0; step < 100; step++) {
    lsched_request q = mkreq(1000, 1024, 1 + (int)rng_below(&r, 3),
                             1 + (int)rng_below(&r, 999), 0);
    lsched_placement p;
    if (place_alloc(&k, &q, &p) != LSCHED_OK)
      continue;
    ck_assert_int_eq(p.gpu_milli, 1000);
    for (int g = 0; g < 4; g++)
      if ((p.gpu_mask >> g) & 1)
        ck_assert_int_eq(lsched_cluster_gpu_free(k.c, p.node, g), 0);
    taken += p.gpu_count;
  }
  /* Every GPU taken by a fractional request is gone whole. */
  lsched_totals t;
  lsched_cluster_totals(k.c, &t);
  ck_assert_int_eq(t.gpu_milli - t.gpu_milli_free, 1000 * (int64_t)taken);
  ck_assert_int_gt(taken, 0);
  conf_end(&k);

  /* Mixed: the milli taken follows the node's mode. */
  conf_begin(&k, _i);
  mixed_cluster(k.c);
  conf_attach(&k);
  int ex = 0, sh = 0;
  for (int step = 0; step < 60; step++) {
    lsched_request q = mkreq(100, 100, 1, 1 + (int)rng_below(&r, 999), 0);
    lsched_placement p;
    if (place_alloc(&k, &q, &p) != LSCHED_OK)
      break;
    lsched_node_info info;
    ck_assert_int_eq(lsched_cluster_node_info(k.c, p.node, &info), LSCHED_OK);
    if (info.gpu_mode == LSCHED_GPU_EXCLUSIVE) {
      ck_assert_int_eq(p.gpu_milli, 1000);
      ex++;
    } else {
      ck_assert_int_eq(p.gpu_milli, q.gpu_milli);
      sh++;
    }
  }
  ck_assert_int_gt(ex + sh, 0);
  conf_end(&k);
}
END_TEST

START_TEST(conf_gpu_count_exact) {
  struct conf k;
  conf_begin(&k, _i);
  node(k.c, 64000, 524288, 8, 0, LSCHED_GPU_SHARED);
  node(k.c, 64000, 524288, 8, 1, LSCHED_GPU_EXCLUSIVE);
  node(k.c, 64000, 524288, 8, 2, LSCHED_GPU_SHARED);
  /* Fragment node 0: GPU g keeps 1000 - 100 g free. */
  for (int g = 1; g < 8; g++) {
    lsched_placement f = mkpl(0, 0, 0, 1, 100 * g, UINT64_C(1) << g);
    ck_assert_int_eq(lsched_alloc(k.c, &f), LSCHED_OK);
  }
  conf_attach(&k);
  const int milli[] = {1, 150, 300, 450, 999, 1000};
  int ok = 0;
  for (int n = 1; n <= 9; n++)
    for (size_t m = 0; m < sizeof milli / sizeof milli[0]; m++) {
      lsched_request q = mkreq(0, 0, n, milli[m], 0);
      lsched_placement p;
      int rc = place(&k, &q, &p);
      if (n == 9) {
        ck_assert_int_eq(rc, LSCHED_ENEVER);
        continue;
      }
      ck_assert_int_eq(rc, LSCHED_OK); /* nodes 1 and 2 are empty */
      ck_assert_int_eq(popcount64(p.gpu_mask), n);
      ck_assert_int_eq(p.gpu_count, n);
      ck_assert_int_eq(lsched_alloc(k.c, &p), LSCHED_OK);
      ck_assert_int_eq(lsched_release(k.c, &p), LSCHED_OK);
      ok++;
    }
  ck_assert_int_eq(ok, 8 * 6);
  conf_end(&k);
}
END_TEST

START_TEST(conf_cpu_only) {
  struct conf k;
  conf_begin(&k, _i);
  mixed_cluster(k.c);
  conf_attach(&k);
  lsched_placement p;
  /* 90 cores: only node 3, which has no GPUs. */
  lsched_request q = mkreq(90000, 1024, 0, 0, 0);
  ck_assert_int_eq(place(&k, &q, &p), LSCHED_OK);
  ck_assert_int_eq(p.node, 3);
  ck_assert_uint_eq(p.gpu_mask, 0);
  ck_assert_int_eq(p.gpu_count, 0);
  ck_assert_int_eq(p.gpu_milli, 0);
  /* A model mask does not apply to a request without GPUs. */
  q.model_mask = UINT64_C(1) << 5;
  ck_assert_int_eq(place(&k, &q, &p), LSCHED_OK);
  ck_assert_int_eq(p.node, 3);
  /* With every GPU taken, CPU-only requests are still placed. */
  for (int i = 0; i < lsched_cluster_node_count(k.c); i++) {
    lsched_node_info info;
    ck_assert_int_eq(lsched_cluster_node_info(k.c, i, &info), LSCHED_OK);
    if (info.gpu_count == 0)
      continue;
    lsched_placement all = mkpl(i, 0, 0, info.gpu_count, 1000,
                                (UINT64_C(1) << info.gpu_count) - 1);
    ck_assert_int_eq(lsched_alloc(k.c, &all), LSCHED_OK);
  }
  int placed = 0;
  for (int i = 0; i < 40; i++) {
    q = mkreq(4000, 4096, 0, 0, 0);
    if (place_alloc(&k, &q, &p) == LSCHED_OK) {
      ck_assert_uint_eq(p.gpu_mask, 0);
      placed++;
    }
  }
  /* 280 cores in all, 4 per request: 70 would fit, so 40 all do. */
  ck_assert_int_eq(placed, 40);
  conf_end(&k);
}
END_TEST

/* Builds a scenario in which exactly node `want` fits q; checks the policy
 * sends q there in the default order and in random visit orders. */
static void expect_only(struct conf *k, const lsched_request *q, int want,
                        uint64_t seed) {
  int n = lsched_cluster_node_count(k->c);
  for (int i = 0; i < n; i++)
    ck_assert_msg(lsched_fits(k->c, i, q) == (i == want),
                  "scenario broken: node %d", i);
  struct rng r;
  rng_seed(&r, seed);
  int perm[16];
  ck_assert_int_le(n, 16);
  for (int round = 0; round < 5; round++) {
    lsched_placement p;
    ck_assert_int_eq(place(k, q, &p), LSCHED_OK);
    ck_assert_msg(p.node == want, "%s sent the request to node %d, not %d",
                  k->ops->name, p.node, want);
    for (int i = 0; i < n; i++)
      perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
      int j = (int)rng_below(&r, (uint64_t)i + 1);
      int t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    ck_assert_int_eq(lsched_cluster_set_order(k->c, perm, n), LSCHED_OK);
  }
}

START_TEST(conf_fits_one_node) {
  struct conf k;
  lsched_request q;
  /* By memory. */
  conf_begin(&k, _i);
  for (int i = 0; i < 5; i++)
    node(k.c, 32000, i == 3 ? 262144 : 131072, 4, 0, LSCHED_GPU_SHARED);
  conf_attach(&k);
  q = mkreq(1000, 200000, 1, 500, 0);
  expect_only(&k, &q, 3, 1);
  conf_end(&k);

  /* By model. */
  conf_begin(&k, _i);
  for (int i = 0; i < 5; i++)
    node(k.c, 32000, 131072, 4, i == 1 ? 1 : 0, LSCHED_GPU_SHARED);
  conf_attach(&k);
  q = mkreq(1000, 1024, 2, 1000, 0x2);
  expect_only(&k, &q, 1, 2);
  conf_end(&k);

  /* By the number of fully free GPUs. */
  conf_begin(&k, _i);
  for (int i = 0; i < 5; i++)
    node(k.c, 32000, 131072, 4, 0, LSCHED_GPU_SHARED);
  for (int i = 0; i < 5; i++) {
    /* node 2 loses 1 GPU, the others 2 */
    lsched_placement f =
        i == 2 ? mkpl(i, 0, 0, 1, 1000, 0x8) : mkpl(i, 0, 0, 2, 10, 0x5);
    ck_assert_int_eq(lsched_alloc(k.c, &f), LSCHED_OK);
  }
  conf_attach(&k);
  q = mkreq(0, 0, 3, 1000, 0);
  expect_only(&k, &q, 2, 3);
  conf_end(&k);

  /* By the largest free share: 200, 500, 699, 700, 100. */
  conf_begin(&k, _i);
  const int used[] = {800, 500, 301, 300, 900};
  for (int i = 0; i < 5; i++)
    node(k.c, 8000, 8192, 1, 0, LSCHED_GPU_SHARED);
  for (int i = 0; i < 5; i++) {
    lsched_placement f = mkpl(i, 0, 0, 1, used[i], 0x1);
    ck_assert_int_eq(lsched_alloc(k.c, &f), LSCHED_OK);
  }
  conf_attach(&k);
  q = mkreq(0, 0, 1, 700, 0);
  expect_only(&k, &q, 3, 4);
  conf_end(&k);

  /* By CPU left after allocations. */
  conf_begin(&k, _i);
  for (int i = 0; i < 6; i++)
    node(k.c, 32000, 131072, i % 2 ? 0 : 2, 0, LSCHED_GPU_SHARED);
  for (int i = 0; i < 6; i++) {
    lsched_placement f = mkpl(i, i == 4 ? 20000 : 24001, 0, 0, 0, 0);
    ck_assert_int_eq(lsched_alloc(k.c, &f), LSCHED_OK);
  }
  conf_attach(&k);
  q = mkreq(8000, 0, 0, 0, 0);
  expect_only(&k, &q, 4, 5);
  conf_end(&k);

  /* A fractional request where only an exclusive node has a whole GPU. */
  conf_begin(&k, _i);
  for (int i = 0; i < 4; i++)
    node(k.c, 32000, 131072, 2, 0,
         i == 2 ? LSCHED_GPU_EXCLUSIVE : LSCHED_GPU_SHARED);
  for (int i = 0; i < 4; i++)
    if (i != 2) {
      lsched_placement f = mkpl(i, 0, 0, 2, 600, 0x3);
      ck_assert_int_eq(lsched_alloc(k.c, &f), LSCHED_OK);
    }
  conf_attach(&k);
  q = mkreq(0, 0, 1, 500, 0);
  expect_only(&k, &q, 2, 6);
  lsched_placement p;
  ck_assert_int_eq(place(&k, &q, &p), LSCHED_OK);
  ck_assert_int_eq(p.gpu_milli, 1000);
  conf_end(&k);
}
END_TEST

/* A random cluster (up to 16 nodes), the same for the same seed. */
static void random_cluster(lsched_cluster *c, struct rng *r) {
  static const int64_t cpus[] = {8000, 16000, 32000, 64000, 96000};
  static const int64_t mems[] = {16384, 65536, 131072, 262144};
  int n = 1 + (int)rng_below(r, 16);
  for (int i = 0; i < n; i++)
    node(c, cpus[rng_below(r, 5)], mems[rng_below(r, 4)], (int)rng_below(r, 9),
         (int)rng_below(r, 3),
         rng_below(r, 3) ? LSCHED_GPU_SHARED : LSCHED_GPU_EXCLUSIVE);
}

/* Request shapes as in a trace: a few popular ones, plus some noise. */
static lsched_request random_request(struct rng *r) {
  static const struct {
    int64_t cpu, mem;
    int k, milli;
  } pop[] = {
      {4000, 16384, 1, 1000}, {2000, 8192, 1, 500},     {8000, 32768, 2, 1000},
      {1000, 4096, 1, 250},   {6000, 8192, 0, 0},       {16000, 65536, 4, 1000},
      {3000, 12288, 1, 330},  {32000, 131072, 8, 1000},
  };
  lsched_request q;
  if (rng_below(r, 5)) {
    size_t i = (size_t)rng_below(r, sizeof pop / sizeof pop[0]);
    q = mkreq(pop[i].cpu, pop[i].mem, pop[i].k, pop[i].milli, 0);
  } else {
    int kk = (int)rng_below(r, 4);
    q = mkreq((int64_t)rng_below(r, 20000), (int64_t)rng_below(r, 70000), kk,
              kk ? 1 + (int)rng_below(r, 1000) : 0, 0);
  }
  if (rng_below(r, 4) == 0)
    q.model_mask = 1 + rng_below(r, 7);
  return q;
}

START_TEST(conf_place_pure) {
  struct rng r;
  rng_seed(&r, 21);
  for (int round = 0; round < 10; round++) {
    struct conf k;
    conf_begin(&k, _i);
    random_cluster(k.c, &r);
    conf_attach(&k);
    /* place() checks the snapshot before and after every call. */
    int ok = 0, nofit = 0;
    for (int step = 0; step < 150; step++) {
      lsched_request q = random_request(&r);
      lsched_placement p;
      int rc = rng_below(&r, 2) ? place_alloc(&k, &q, &p) : place(&k, &q, &p);
      ok += rc == LSCHED_OK;
      nofit += rc == LSCHED_ENOFIT || rc == LSCHED_ENEVER;
    }
    REQ_EQ(ok + nofit, 150);
    conf_end(&k);
  }
}
END_TEST

START_TEST(conf_deterministic) {
  /* Two clusters built identically, each with its own instance of the
   * policy, fed the same requests: the same state must give the same
   * answer every time. */
  for (uint64_t seed = 1; seed <= 8; seed++) {
    struct conf a, b;
    struct rng ra, rb, rq;
    rng_seed(&ra, seed);
    rng_seed(&rb, seed);
    rng_seed(&rq, seed + 1000);
    conf_begin(&a, _i);
    conf_begin(&b, _i);
    random_cluster(a.c, &ra);
    random_cluster(b.c, &rb);
    if (seed % 2) {
      int n = lsched_cluster_node_count(a.c);
      int perm[16];
      for (int i = 0; i < n; i++)
        perm[i] = n - 1 - i;
      ck_assert_int_eq(lsched_cluster_set_order(a.c, perm, n), LSCHED_OK);
      ck_assert_int_eq(lsched_cluster_set_order(b.c, perm, n), LSCHED_OK);
    }
    conf_attach(&a);
    conf_attach(&b);
    lsched_placement live[200];
    int nlive = 0;
    for (int step = 0; step < 200; step++) {
      if (nlive > 0 && rng_below(&rq, 4) == 0) {
        int j = (int)rng_below(&rq, (uint64_t)nlive);
        REQ_EQ(lsched_release(a.c, &live[j]), LSCHED_OK);
        REQ_EQ(lsched_release(b.c, &live[j]), LSCHED_OK);
        live[j] = live[--nlive];
        continue;
      }
      lsched_request q = random_request(&rq);
      lsched_placement pa, pb;
      int rca = place(&a, &q, &pa);
      int rcb = place(&b, &q, &pb);
      REQ_EQ(rca, rcb);
      if (rca != LSCHED_OK)
        continue;
      REQ_MSG(pa.node == pb.node && pa.gpu_mask == pb.gpu_mask &&
                  pa.gpu_milli == pb.gpu_milli,
              "%s: step %d: node %d mask %#llx vs node %d mask %#llx",
              a.ops->name, step, pa.node, (unsigned long long)pa.gpu_mask,
              pb.node, (unsigned long long)pb.gpu_mask);
      REQ_EQ(lsched_alloc(a.c, &pa), LSCHED_OK);
      REQ_EQ(lsched_alloc(b.c, &pb), LSCHED_OK);
      live[nlive++] = pa;
    }
    struct snap sa, sb;
    snap_take(a.c, &sa);
    snap_take(b.c, &sb);
    snap_assert_equal(&sa, &sb);
    conf_end(&a);
    conf_end(&b);
  }
}
END_TEST

START_TEST(conf_random_fill) {
  struct rng r;
  rng_seed(&r, 1234);
  for (int round = 0; round < 20; round++) {
    struct conf k;
    conf_begin(&k, _i);
    random_cluster(k.c, &r);
    if (rng_below(&r, 2)) {
      int n = lsched_cluster_node_count(k.c);
      int perm[16];
      for (int i = 0; i < n; i++)
        perm[i] = i;
      for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(&r, (uint64_t)i + 1);
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
      }
      ck_assert_int_eq(lsched_cluster_set_order(k.c, perm, n), LSCHED_OK);
    }
    conf_attach(&k);
    lsched_totals t0;
    lsched_cluster_totals(k.c, &t0);
    int64_t cpu = 0, mem = 0, gpu = 0;
    int misses = 0, placed = 0;
    lsched_placement live[3000];
    for (int step = 0; step < 3000 && misses < 40; step++) {
      lsched_request q = random_request(&r);
      lsched_placement p;
      if (place_alloc(&k, &q, &p) != LSCHED_OK) {
        misses++;
        continue;
      }
      misses = 0;
      live[placed++] = p;
      cpu += p.cpu_milli;
      mem += p.memory_mib;
      gpu += (int64_t)p.gpu_count * p.gpu_milli;
      /* No over-commit: the totals account for every placement. */
      lsched_totals t;
      lsched_cluster_totals(k.c, &t);
      REQ_EQ(t.cpu_free, t0.cpu_free - cpu);
      REQ_EQ(t.memory_free, t0.memory_free - mem);
      REQ_EQ(t.gpu_milli_free, t0.gpu_milli_free - gpu);
      REQ(t.cpu_free >= 0 && t.memory_free >= 0 && t.gpu_milli_free >= 0);
    }
    REQ(placed > 0);
    /* Releasing everything restores the empty cluster. */
    while (placed > 0)
      REQ_EQ(lsched_release(k.c, &live[--placed]), LSCHED_OK);
    lsched_totals t1;
    lsched_cluster_totals(k.c, &t1);
    REQ_EQ(t1.cpu_free, t0.cpu_free);
    REQ_EQ(t1.memory_free, t0.memory_free);
    REQ_EQ(t1.gpu_milli_free, t0.gpu_milli_free);
    REQ_EQ(lsched_cluster_check(k.c), LSCHED_OK);
    conf_end(&k);
  }
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Composable GPU pools (libsched.h): every policy on a pooled cluster      */

/* Fixed nodes beside pool hosts: two 8-GPU chassis (4 + 4 slots per host;
 * one shared by three hosts, one reached by a GPU-less host and an
 * exclusive one), keep_attached as given. */
static void pooled_cluster(lsched_cluster *c, int keep) {
  node(c, 64000, 524288, 8, 0, LSCHED_GPU_SHARED);             /* 0 */
  int h[5];
  h[0] = node(c, 64000, 524288, 2 + 4, 0, LSCHED_GPU_SHARED);  /* 1 */
  h[1] = node(c, 32000, 131072, 0 + 4, 0, LSCHED_GPU_SHARED);  /* 2 */
  h[2] = node(c, 16000, 65536, 4 + 4, 0, LSCHED_GPU_SHARED);   /* 3 */
  h[3] = node(c, 64000, 524288, 0 + 4, 1, LSCHED_GPU_EXCLUSIVE); /* 4 */
  h[4] = node(c, 64000, 524288, 4 + 4, 1, LSCHED_GPU_EXCLUSIVE); /* 5 */
  node(c, 8000, 32768, 1, 1, LSCHED_GPU_SHARED);               /* 6 */
  lsched_pool_spec ps = LSCHED_POOL_SPEC_INIT;
  ps.gpus = 8;
  ps.max_per_host = 4;
  ps.hosts = h;
  ps.nhosts = 3;
  ps.keep_attached = keep;
  REQ_EQ(lsched_cluster_add_pool(c, &ps, NULL), LSCHED_OK);
  ps.hosts = h + 3;
  ps.nhosts = 2;
  REQ_EQ(lsched_cluster_add_pool(c, &ps, NULL), LSCHED_OK);
}

/* The contract of every case above on pooled clusters: each answer valid
 * (ENOFIT only when no node fits), alloc accepts it, the totals (each
 * chassis GPU once) account for every placement, and releasing (then
 * detaching what stayed attached) restores every GPU share. */
START_TEST(conf_pooled) {
  struct rng r;
  rng_seed(&r, 1515);
  for (int round = 0; round < 6; round++) {
    struct conf k;
    conf_begin(&k, _i);
    pooled_cluster(k.c, round & 1);
    conf_attach(&k);
    struct snap s0;
    snap_take(k.c, &s0);
    lsched_totals t0;
    lsched_cluster_totals(k.c, &t0);
    REQ_EQ(t0.gpus, 8 + 2 + 4 + 4 + 1 + 16);
    int64_t gpu = 0;
    int misses = 0, placed = 0;
    lsched_placement live[2000];
    for (int step = 0; step < 2000 && misses < 40; step++) {
      lsched_request q = random_request(&r);
      lsched_placement p;
      if (placed > 0 && rng_below(&r, 4) == 0) {
        int j = (int)rng_below(&r, (uint64_t)placed);
        gpu -= (int64_t)live[j].gpu_count * live[j].gpu_milli;
        REQ_EQ(lsched_release(k.c, &live[j]), LSCHED_OK);
        live[j] = live[--placed];
        continue;
      }
      if (place_alloc(&k, &q, &p) != LSCHED_OK) {
        misses++;
        continue;
      }
      misses = 0;
      live[placed++] = p;
      gpu += (int64_t)p.gpu_count * p.gpu_milli;
      lsched_totals t;
      lsched_cluster_totals(k.c, &t);
      REQ_EQ(t.gpu_milli_free, t0.gpu_milli_free - gpu);
    }
    while (placed > 0)
      REQ_EQ(lsched_release(k.c, &live[--placed]), LSCHED_OK);
    for (int i = 0; i < lsched_cluster_node_count(k.c); i++)
      lsched_pool_detach(k.c, i, ~UINT64_C(0));
    struct snap s1;
    snap_take(k.c, &s1);
    snap_assert_equal(&s0, &s1);
    REQ_EQ(lsched_cluster_check(k.c), LSCHED_OK);
    conf_end(&k);
  }
}
END_TEST

/* ---------------------------------------------------------------------- */
/* MIG (<libsched/mig.h>): every policy, MIG and plain requests mixed       */

static int mig_node(lsched_cluster *c, int gpus, int model, int dynamic,
                    const lsched_mig_instance *layout, int n) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 64000;
  s.memory_mib = 524288;
  s.gpu_count = gpus;
  s.gpu_model = model;
  s.gpu_mode = LSCHED_GPU_MIG;
  s.mig_dynamic = dynamic;
  s.mig_layout = layout;
  s.mig_layout_count = n;
  int id = -1;
  int rc = lsched_cluster_add_node(c, &s, &id);
  REQ_MSG(rc == LSCHED_OK, "add_node: %s", lsched_err_name(rc));
  return id;
}

/* Dynamic and static MIG nodes of two models beside shared and exclusive
 * ones. */
static void mig_cluster(lsched_cluster *c) {
  static const lsched_mig_instance balanced[] = {
      {LSCHED_MIG_2G, 0}, {LSCHED_MIG_1G, 2}, {LSCHED_MIG_1G, 3},
      {LSCHED_MIG_3G, 4}};
  static const lsched_mig_instance all1g[] = {
      {1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {1, 6}};
  node(c, 64000, 524288, 4, 0, LSCHED_GPU_SHARED);    /* 0 */
  mig_node(c, 4, 0, 1, NULL, 0);                      /* 1 dynamic */
  mig_node(c, 2, 1, 0, balanced, 4);                  /* 2 static */
  node(c, 64000, 524288, 2, 1, LSCHED_GPU_EXCLUSIVE); /* 3 */
  mig_node(c, 2, 2, 0, all1g, 7);                     /* 4 static */
  mig_node(c, 8, 1, 1, NULL, 0);                      /* 5 dynamic */
}

static lsched_request mig_request(struct rng *r) {
  lsched_request q = mkreq((int64_t)rng_below(r, 8000),
                           (int64_t)rng_below(r, 65536),
                           rng_below(r, 10) ? 1 : 2, 0, 0);
  q.mig_kind = 1 + (int)rng_below(r, 6);
  if (rng_below(r, 4) == 0) {
    q.mig_kind = LSCHED_MIG_ANY;
    q.mig_compute_milli = (int)rng_below(r, 1001);
  }
  if (rng_below(r, 5) == 0)
    q.model_mask = 1 + rng_below(r, 7);
  return q;
}

START_TEST(conf_mig_mixed) {
  struct rng r;
  rng_seed(&r, 404);
  for (int round = 0; round < 4; round++) {
    struct conf k;
    conf_begin(&k, _i);
    mig_cluster(k.c);
    conf_attach(&k);
    int mig_ok = 0, plain_ok = 0;
    lsched_placement live[400];
    int nlive = 0;
    for (int step = 0; step < 300; step++) {
      if (nlive > 0 && rng_below(&r, 4) == 0) {
        int j = (int)rng_below(&r, (uint64_t)nlive);
        REQ_EQ(lsched_release(k.c, &live[j]), LSCHED_OK);
        live[j] = live[--nlive];
        continue;
      }
      lsched_request q =
          rng_below(&r, 3) ? mig_request(&r) : random_request(&r);
      lsched_placement p;
      /* place() checks purity, validity and ENOFIT-only-when-nothing-fits. */
      if (place_alloc(&k, &q, &p) != LSCHED_OK)
        continue;
      if (q.mig_kind)
        mig_ok++;
      else if (q.gpu_count)
        plain_ok++;
      live[nlive++] = p;
    }
    REQ(mig_ok > 10 && plain_ok > 5);
    while (nlive > 0)
      REQ_EQ(lsched_release(k.c, &live[--nlive]), LSCHED_OK);
    lsched_totals t;
    lsched_cluster_totals(k.c, &t);
    REQ_EQ(t.gpu_milli_free, t.gpu_milli);
    conf_end(&k);
  }
}
END_TEST

START_TEST(conf_mig_modes_apart) {
  struct conf k;
  lsched_placement p;
  /* Only MIG nodes: plain GPU requests never fit, CPU-only ones do. */
  conf_begin(&k, _i);
  mig_node(k.c, 2, 0, 1, NULL, 0);
  mig_node(k.c, 2, 0, 1, NULL, 0);
  conf_attach(&k);
  lsched_request q = mkreq(0, 0, 1, 100, 0);
  ck_assert_int_eq(lsched_can_ever_fit(k.c, &q), 0);
  ck_assert_int_eq(place(&k, &q, &p), LSCHED_ENEVER);
  q = mkreq(0, 0, 1, 1000, 0);
  ck_assert_int_eq(place(&k, &q, &p), LSCHED_ENEVER);
  q = mkreq(100, 100, 0, 0, 0);
  ck_assert_int_eq(place_alloc(&k, &q, &p), LSCHED_OK);
  /* Fill with 1g instances: 7 per GPU, then nothing. */
  int got = 0;
  q = mkreq(0, 0, 1, 0, 0);
  q.mig_kind = LSCHED_MIG_1G;
  while (got < 40 && place_alloc(&k, &q, &p) == LSCHED_OK)
    got++;
  ck_assert_int_eq(got, 28);
  conf_end(&k);
  /* No MIG node: MIG requests never fit. */
  conf_begin(&k, _i);
  mixed_cluster(k.c);
  conf_attach(&k);
  q = mkreq(0, 0, 1, 0, 0);
  q.mig_kind = LSCHED_MIG_7G;
  ck_assert_int_eq(lsched_can_ever_fit(k.c, &q), 0);
  ck_assert_int_eq(place(&k, &q, &p), LSCHED_ENEVER);
  conf_end(&k);
}
END_TEST

/* ---------------------------------------------------------------------- */

START_TEST(conf_registry_complete) {
  /* Every registered policy has a name, a description and a place hook,
   * and is found under its own name. */
  lsched_registry *r = NULL;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  const lsched_policy_ops *ops = lsched_registry_at(r, (size_t)_i);
  ck_assert_ptr_nonnull(ops);
  ck_assert_ptr_nonnull(ops->name);
  ck_assert_ptr_nonnull(ops->description);
  ck_assert_ptr_nonnull(ops->place);
  ck_assert_uint_ge(ops->version, 1);
  ck_assert_uint_le(ops->version, LSCHED_POLICY_OPS_VERSION);
  ck_assert_ptr_eq(lsched_registry_find(r, ops->name), ops);
  lsched_registry_destroy(r);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("conformance");
  int n = policy_count();
  TCase *tc = tcase_create("policies");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, conf_registry_complete, 0, n);
  tcase_add_loop_test(tc, conf_placement_accepted, 0, n);
  tcase_add_loop_test(tc, conf_enofit_unchanged, 0, n);
  tcase_add_loop_test(tc, conf_model_mask, 0, n);
  tcase_add_loop_test(tc, conf_exclusive_whole, 0, n);
  tcase_add_loop_test(tc, conf_gpu_count_exact, 0, n);
  tcase_add_loop_test(tc, conf_cpu_only, 0, n);
  tcase_add_loop_test(tc, conf_fits_one_node, 0, n);
  tcase_add_loop_test(tc, conf_place_pure, 0, n);
  tcase_add_loop_test(tc, conf_deterministic, 0, n);
  tcase_add_loop_test(tc, conf_random_fill, 0, n);
  tcase_add_loop_test(tc, conf_pooled, 0, n);
  tcase_add_loop_test(tc, conf_mig_mixed, 0, n);
  tcase_add_loop_test(tc, conf_mig_modes_apart, 0, n);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  if (policy_count() < 3) {
    fprintf(stderr, "conformance: the registry lost its built-in policies\n");
    return EXIT_FAILURE;
  }
  return testutil_run(make_suite());
}
