/*
 * The score index (lsched_score_index, <libsched/policy_sdk.h>) against
 * the scan it replaces, on the minitest harness (runs in the library-only
 * build too).
 *
 * - A hand-computed case: best-fit's scores on three nodes, ties to the
 *   earliest node in the visit order, under set_order and a cordon.
 * - The plain fit test and its pre-test at their edges (shares a GPU holds
 *   exactly or one milli short, whole GPUs, an exclusive node, a model
 *   mask, a cordon), the node id as the score.
 * - Equivalence replays: every scoring built-in (best-fit, worst-fit,
 *   dot-product, gpu-packing, gpu-clustering, fgd; mig-best-fit and
 *   mig-aware for their non-MIG requests; defrag over best-fit; random,
 *   whose draw among the fitting nodes reads a counting index) runs twice
 *   on two identical random clusters, once through its index (default) and
 *   once with parameter index=off (the scan, the reference), through the
 *   same random operations: placements of requests from a pool of shapes
 *   (model masks, features, CPU-only, whole and fractional GPUs, MIG on the
 *   clusters with MIG nodes, and requests restricted by node_allowed or a
 *   node_filter), releases, cordon/drain/uncordon, new visit orders, nodes
 *   added, updated and removed, new workloads. Every answer (return code,
 *   node, GPUs) must be the same; the clusters check their invariants
 *   after every change. One configuration uses more shapes than the index
 *   tracks, so eviction and the scan of untracked shapes are covered.
 * - MIG replays: mig-best-fit and mig-aware (their MIG requests go through
 *   an index of their own) against index=off on clusters of static,
 *   dynamic and plain nodes of two models, through MIG requests of one to
 *   three GPUs (kind, compute and memory needs), plain ones, releases,
 *   lsched_mig_set_layout and lsched_mig_set_model_memory mid-run, states,
 *   orders and added nodes; and a hand case: a layout change is told to an
 *   observer and followed by an indexed mig-best-fit. Along the way the
 *   three MIG policies' LSCHED_POLICY_ANY_FIT promise: the scan (for
 *   mig-first-fit, a second instance) places a one-part request exactly
 *   when lsched_next_fit finds a node.
 * - The log of touched nodes past its capacity: trees replayed, rebuilt,
 *   and rebuilt after the log dropped entries they had not seen.
 * - Invariants at scale: 12,500 nodes x 8 GPUs (100,000 GPUs), two indexes
 *   (a CPU/GPU-sum score and a per-GPU one); after every operation the
 *   index's answer equals lsched_best_raw_score()'s, and every 200
 *   operations every tree is recomputed in full (lsched_score_index_check).
 */
#include "libtest.h"

#include <libsched/libsched.h>
#include <libsched/mig.h>
#include <libsched/policy_sdk.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static lsched_cluster *new_cluster(int check) {
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.check_invariants = check;
  lsched_cluster *c = NULL;
  OK(lsched_cluster_create(&c, &o));
  MT_EQ(lsched_cluster_model_id(c, "A100", 1), 0);
  MT_EQ(lsched_cluster_model_id(c, "V100", 1), 1);
  return c;
}

static int add_node(lsched_cluster *c, int64_t cpu, int64_t mem, int gpus,
                    int model, lsched_gpu_mode mode, uint64_t features) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = cpu;
  s.memory_mib = mem;
  s.gpu_count = gpus;
  s.gpu_model = model;
  s.gpu_mode = mode;
  s.mig_dynamic = mode == LSCHED_GPU_MIG;
  s.features = features;
  int id = -1;
  int rc = lsched_cluster_add_node(c, &s, &id);
  MT_ASSERT_MSG(rc == LSCHED_OK, "add_node: %s (%s)", lsched_err_name(rc),
                lsched_cluster_errmsg(c));
  return id;
}

static lsched_policy *attach(lsched_cluster *c, const char *name,
                             const char *index) {
  lsched_registry *r = NULL;
  OK(lsched_registry_create(&r, NULL));
  OK(lsched_registry_add_builtins(r));
  lsched_policy *p = NULL;
  OK(lsched_policy_create(&p, c, lsched_registry_find(r, name)));
  lsched_registry_destroy(r); /* created without a registry: not kept */
  if (index)
    OK(lsched_policy_set_param(p, "index", index));
  return p;
}

/* The leaf pre-test and the plain fit test (scoreidx.c: whole GPUs, one
 * GPU with the share, k GPUs with it; exclusive nodes, models, states) at
 * their edges: the node id as the score (the highest fitting id wins, so
 * every fit decision shows), the index against lsched_best_raw_score()
 * after every change, for requests of shares a GPU holds exactly or one
 * milli short. */
static int64_t by_id(const lsched_view *v, int node, const lsched_request *req,
                     void *ctx) {
  (void)v;
  (void)req;
  (void)ctx;
  return node;
}

static void plain_same(lsched_cluster *c, lsched_score_index *ix) {
  static const int shape[][3] = {{1, 500, 0},  {2, 500, 0}, {2, 1000, 0},
                                 {1, 1000, 0}, {3, 499, 0}, {1, 500, 2},
                                 {2, 499, 2},  {0, 0, 0}};
  int scratch[4];
  for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
    lsched_request q = lt_req(1000, 0, shape[i][0], shape[i][1]);
    q.model_mask = (uint64_t)shape[i][2];
    int a = -2, b = -2;
    int ra = lsched_score_index_best(ix, &q, &a);
    int rb = lsched_best_raw_score(c, &q, by_id, NULL, scratch, &b);
    MT_ASSERT_MSG(ra == rb && a == b,
                  "shape %zu: index %d node %d, scan %d node %d", i, ra, a, rb,
                  b);
  }
}

static void test_plain_fits(void) {
  lsched_cluster *c = new_cluster(1);
  add_node(c, 8000, 65536, 4, 0, LSCHED_GPU_SHARED, 0);
  add_node(c, 8000, 65536, 4, 0, LSCHED_GPU_SHARED, 0);
  add_node(c, 8000, 65536, 4, 0, LSCHED_GPU_EXCLUSIVE, 0);
  add_node(c, 8000, 65536, 4, 1, LSCHED_GPU_SHARED, 0);
  lsched_score_index *ix = NULL;
  OK(lsched_score_index_create(&ix, c, by_id, NULL));
  plain_same(c, ix);
  /* node, GPU mask, milli per GPU: node 3's GPUs go to 500 500 499 0 free,
   * then 499 500 499 0; node 2 (exclusive) loses a GPU, node 1 two
   * halves. */
  static const int step[][3] = {{3, 3, 500}, {3, 4, 501},  {3, 8, 1000},
                                {3, 1, 1},   {2, 1, 1000}, {1, 3, 500},
                                {1, 1, 1}};
  lsched_placement p[7];
  for (int i = 0; i < 7; i++) {
    memset(&p[i], 0, sizeof p[i]);
    p[i].node = step[i][0];
    p[i].gpu_mask = (uint64_t)step[i][1];
    p[i].gpu_count = __builtin_popcountll(p[i].gpu_mask);
    p[i].gpu_milli = step[i][2];
    OK(lsched_alloc(c, &p[i]));
    plain_same(c, ix);
  }
  OK(lsched_cluster_set_node_state(c, 3, LSCHED_NODE_CORDONED));
  plain_same(c, ix);
  OK(lsched_cluster_set_node_state(c, 3, LSCHED_NODE_UP));
  plain_same(c, ix);
  for (int i = 6; i >= 0; i--) {
    OK(lsched_release(c, &p[i]));
    plain_same(c, ix);
  }
  OK(lsched_score_index_check(ix));
  lsched_score_index_stats st;
  OK(lsched_score_index_stats_get(ix, &st));
  MT_EQ((int)st.scanned, 0);
  lsched_score_index_destroy(ix);
  lsched_cluster_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Hand-computed                                                           */

static int64_t fit_best(const lsched_view *v, int node,
                        const lsched_request *req, void *ctx) {
  (void)ctx;
  return lsched_fit_score(v, node, req, 0);
}

static void test_hand(void) {
  /* Three nodes of 32 cores and 4 GPUs; A = 32000, B = 4000.
   * Node 0: 16 cores and 2 GPUs in use; node 1: the same; node 2: idle.
   * A request of 8 cores and 1 GPU leaves (8000, 1000) on nodes 0 and 1:
   * 100 x leftover = (50 x 8000 x 4000 + 50 x 1000 x 32000) / (32000 x
   * 4000) = 25, score 75; on node 2 (24000, 3000): 75, score 25. Nodes 0
   * and 1 tie at 75: the earliest in the visit order wins. */
  lsched_cluster *c = new_cluster(1);
  for (int i = 0; i < 3; i++)
    add_node(c, 32000, 65536, 4, 0, LSCHED_GPU_SHARED, 0);
  lsched_score_index *ix = NULL;
  OK(lsched_score_index_create(&ix, c, fit_best, NULL));
  lsched_placement p = {0};
  p.cpu_milli = 16000;
  p.gpu_count = 2;
  p.gpu_milli = 1000;
  p.gpu_mask = 3;
  for (int i = 0; i < 2; i++) {
    p.node = i;
    OK(lsched_alloc(c, &p));
  }
  lsched_request q = lt_req(8000, 0, 1, 1000);
  lsched_view v = LSCHED_VIEW_INIT;
  OK(lsched_cluster_view(c, &v));
  MT_EQ(lsched_fit_score(&v, 0, &q, 0), 75);
  MT_EQ(lsched_fit_score(&v, 2, &q, 0), 25);
  int node = -2;
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 0);
  int order[3] = {2, 1, 0};
  OK(lsched_cluster_set_order(c, order, 3));
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 1); /* visit order 2, 1, 0: node 1 is the earlier of the tie */
  OK(lsched_cluster_set_node_state(c, 1, LSCHED_NODE_CORDONED));
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 0);
  p.node = 0;
  OK(lsched_release(c, &p)); /* node 0 idle again: 25, node 2 wins (first) */
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 2);
  /* Nothing fits 33 cores: ENOFIT and -1. */
  lsched_request big = lt_req(33000, 0, 0, 0);
  MT_EQ(lsched_score_index_best(ix, &big, &node), LSCHED_ENOFIT);
  MT_EQ(node, -1);
  OK(lsched_score_index_check(ix));
  lsched_score_index_stats st;
  OK(lsched_score_index_stats_get(ix, &st));
  MT_EQ(st.shapes, 2);
  MT_EQ((int)st.scanned, 0);
  lsched_score_index_destroy(ix);
  lsched_cluster_destroy(c);
}

static int64_t tight_gpu(const lsched_view *v, int node,
                         const lsched_request *req, void *ctx);
static int64_t tight_gpu_fwd(const lsched_view *v, int node,
                             const lsched_request *req, void *ctx) {
  return tight_gpu(v, node, req, ctx);
}

/* ---------------------------------------------------------------------- */
/* Equivalence replays                                                     */

#define MAXN 80
#define MAXLIVE 512

struct pair {
  lsched_cluster *c[2];
  lsched_policy *p[2];
  lsched_placement live[MAXLIVE];
  int nlive;
  unsigned char allowed[MAXN + 8];
  /* count_only: a different answer is counted (and not placed), not a
   * failure (the mutation check). */
  int count_only, mismatches;
};

/* The same random visit order on both clusters of the pair. */
static void random_order(struct rng *r, struct pair *pr, int nn) {
  int perm[MAXN + 8];
  for (int i = 0; i < nn; i++)
    perm[i] = i;
  for (int i = nn - 1; i > 0; i--) {
    int j = rbelow(r, i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  OK(lsched_cluster_set_order(pr->c[0], perm, nn));
  OK(lsched_cluster_set_order(pr->c[1], perm, nn));
}

static int odd_filter(void *user, const lsched_cluster *c, int node) {
  (void)c;
  return ((node + *(const int *)user) & 1) == 0;
}

static void random_node(struct rng *r, lsched_cluster *c0, lsched_cluster *c1,
                        int mig_ok) {
  int64_t cpu = 8000 * (1 + rbelow(r, 8));
  int64_t mem = 16384 * (1 + rbelow(r, 8));
  int gpus = rbelow(r, 5) == 0 ? 0 : 1 + rbelow(r, 8);
  int model = rbelow(r, 2);
  lsched_gpu_mode mode = rbelow(r, 4) == 0 ? LSCHED_GPU_EXCLUSIVE
                                           : LSCHED_GPU_SHARED;
  if (mig_ok && gpus > 0 && rbelow(r, 4) == 0) {
    mode = LSCHED_GPU_MIG;
    model = 0;
  }
  uint64_t feat = (uint64_t)rbelow(r, 4);
  int a = add_node(c0, cpu, mem, gpus, model, mode, feat);
  int b = add_node(c1, cpu, mem, gpus, model, mode, feat);
  MT_EQ(a, b);
}

static lsched_request random_shape(struct rng *r, int mig_ok) {
  static const int shares[] = {100, 250, 300, 500, 700, 1000};
  int64_t cpu = 1000 * rbelow(r, 17);
  int64_t mem = 2048 * rbelow(r, 20);
  int k = rbelow(r, 4) == 0 ? 0 : 1 + rbelow(r, 3) * rbelow(r, 3);
  int milli = k == 0 ? 0 : k > 1 ? 1000 : shares[rbelow(r, 6)];
  lsched_request q = lt_req(cpu, mem, k, milli);
  if (k > 0 && rbelow(r, 5) == 0)
    q.model_mask = UINT64_C(1) << rbelow(r, 2);
  if (rbelow(r, 6) == 0)
    q.features = (uint64_t)(1 + rbelow(r, 3));
  if (mig_ok && k > 0 && rbelow(r, 4) == 0) {
    q.gpu_count = 1;
    q.gpu_milli = 0;
    q.model_mask = 0;
    q.mig_kind = 1 + rbelow(r, 5);
  }
  return q;
}

static void same_answer(struct pair *pr, const lsched_request *q,
                        const char *policy, int step) {
  lsched_placement out[2];
  memset(out, 0, sizeof out);
  int rc0 = lsched_policy_place(pr->p[0], q, &out[0]);
  int rc1 = lsched_policy_place(pr->p[1], q, &out[1]);
  if (pr->count_only &&
      (rc0 != rc1 || (rc0 == LSCHED_OK && (out[0].node != out[1].node ||
                                           out[0].gpu_mask != out[1].gpu_mask)))) {
    pr->mismatches++;
    return;
  }
  MT_ASSERT_MSG(rc0 == rc1, "%s step %d: index %s, scan %s", policy, step,
                lsched_err_name(rc0), lsched_err_name(rc1));
  if (rc0 != LSCHED_OK)
    return;
  MT_ASSERT_MSG(out[0].node == out[1].node && out[0].gpu_mask ==
                    out[1].gpu_mask && out[0].gpu_milli == out[1].gpu_milli &&
                    out[0].mig_kind == out[1].mig_kind &&
                    out[0].mig_start == out[1].mig_start,
                "%s step %d: index node %d mask %#llx, scan node %d mask "
                "%#llx",
                policy, step, out[0].node,
                (unsigned long long)out[0].gpu_mask, out[1].node,
                (unsigned long long)out[1].gpu_mask);
  if (pr->nlive == MAXLIVE)
    return;
  OK(lsched_alloc(pr->c[0], &out[0]));
  OK(lsched_alloc(pr->c[1], &out[1]));
  pr->live[pr->nlive++] = out[0];
}

/* A random workload; `many`: up to 60 types, most of them sharing a
 * (share, GPU count) with others and differing in CPU (fgd's groups, CPU
 * ties included). */
static void set_workload(struct rng *r, struct pair *pr, int many) {
  lsched_workload *w = NULL;
  OK(lsched_workload_create(&w, NULL));
  int n = many ? 1 + rbelow(r, 60) : 1 + rbelow(r, 6);
  for (int i = 0; i < n; i++) {
    lsched_request q = random_shape(r, 0);
    if (many && q.gpu_count > 0 && rbelow(r, 4)) {
      q.gpu_count = 1 + rbelow(r, 2);
      q.gpu_milli = q.gpu_count > 1 ? 1000 : 500;
      q.cpu_milli = 500 * rbelow(r, 33);
    }
    lsched_task_type t = LSCHED_TASK_TYPE_INIT;
    t.cpu_milli = q.cpu_milli;
    t.gpu_count = q.gpu_count;
    t.gpu_milli = q.gpu_milli;
    t.model_mask = q.model_mask;
    t.weight = (uint64_t)(1 + rbelow(r, 50));
    OK(lsched_workload_add(w, &t));
  }
  for (int i = 0; i < 2; i++) { /* ENOENT: a policy without workloads */
    int rc = lsched_policy_set_workload(pr->p[i], w);
    MT_ASSERT_MSG(rc == LSCHED_OK || rc == LSCHED_ENOENT, "set_workload: %s",
                  lsched_err_name(rc));
  }
  lsched_workload_destroy(w);
}

/* One replay: `policy` on a random cluster of about n nodes, `ops`
 * operations, shapes drawn from a pool of `npool` (plus fresh ones). */
/* The type-aware policies' prices: unknown, 0, or one of two values (so
 * that models tie on cost), per model. */
static void random_prices(struct rng *r, struct pair *pr) {
  static const double prices[] = {NAN, 0.0, 1.5, 4.0, 4.0};
  for (int m = 0; m < 3; m++) {
    double p = prices[rbelow(r, 5)];
    OK(lsched_cluster_set_model_price(pr->c[0], m, p));
    OK(lsched_cluster_set_model_price(pr->c[1], m, p));
  }
}

/* A speed callback for the type-aware replays: by model and GPU count,
 * slower on odd nodes (it may read the whole placement), 0 for V100 x 3+. */
static double model_speed(void *user, const lsched_cluster *c,
                          const lsched_placement *pl) {
  (void)user;
  const lsched_node *nd = NULL;
  lsched_view v = LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &v) != LSCHED_OK)
    return 1;
  nd = lsched_view_node(&v, pl->node);
  double s = nd->model == 0 ? 2.0 : nd->model == 2 ? 3.0 : 1.0;
  if (nd->model == 1 && pl->gpu_count >= 3)
    return 0;
  return (pl->node & 1) ? s / 2 : s;
}

/* Speeds that honour a declared scope (lsched_request.speed_scope, version
 * 5): per model (index model + 1; 0 = no GPU), halved for 3+ GPUs (by
 * model and GPU count), or `constant` everywhere. Drawn from few values
 * (ties across models), 0, NaN and infinity included, and redrawn during
 * the replay. `mutate`: also depends on the node id (odd nodes slower), a
 * false BY_MODEL declaration. */
struct scoped_speeds {
  double by_model[4];
  double constant;
  int mutate;
};

static void random_speeds(struct rng *r, struct scoped_speeds *sp) {
  static const double v[] = {1.0, 1.0, 2.0, 2.0, 0.5, 3.0, 0.0, NAN, INFINITY};
  for (int m = 0; m < 4; m++)
    sp->by_model[m] = v[rbelow(r, 9)];
  sp->constant = v[rbelow(r, 9)];
}

static double scoped_speed(void *user, const lsched_cluster *c,
                           const lsched_placement *pl) {
  const struct scoped_speeds *sp = user;
  lsched_node_info ni = LSCHED_NODE_INFO_INIT;
  if (lsched_cluster_node_info(c, pl->node, &ni) != LSCHED_OK)
    return 1;
  double s = sp->by_model[ni.gpu_model + 1];
  if (pl->gpu_count >= 3)
    s /= 2;
  if (sp->mutate && (pl->node & 1))
    s /= 4;
  return s;
}

static double constant_speed(void *user, const lsched_cluster *c,
                             const lsched_placement *pl) {
  (void)c;
  (void)pl;
  return ((const struct scoped_speeds *)user)->constant;
}

/* Idle classes (lsched_score_index_idle): best-fit's score, counting the
 * score calls in *ctx. */
static int64_t fit_best_counted(const lsched_view *v, int node,
                                const lsched_request *req, void *ctx) {
  ++*(int *)ctx;
  return lsched_fit_score(v, node, req, 0);
}

static void test_idle_classes(void) {
  /* Six nodes of two classes, in turn: 32 cores / 4 GPUs (class X, ids
   * 0, 2, 4) and 64 cores / 8 GPUs (class Y, ids 1, 3, 5). A = 64000,
   * B = 8000. A request of 8 cores and 1 GPU on an idle X leaves (24000,
   * 3000): 100 x leftover = 50 x 24000 / 64000 + 50 x 3000 / 8000 = 18.75
   * + 18.75 = 37.5, score floor(100 - 37.5) = 62; on an idle Y (56000,
   * 7000): 43.75 + 43.75 = 87.5, score 12. So node 0 (the earliest X) wins,
   * and the first tree scores one node per class: 2 calls, not 6. */
  lsched_cluster *c = new_cluster(1);
  for (int i = 0; i < 6; i++)
    add_node(c, i % 2 ? 64000 : 32000, 65536, i % 2 ? 8 : 4, 0,
             LSCHED_GPU_SHARED, 0);
  int calls = 0;
  lsched_score_index *ix = NULL;
  OK(lsched_score_index_create(&ix, c, fit_best_counted, &calls));
  OK(lsched_score_index_idle(ix));
  lsched_request q = lt_req(8000, 0, 1, 1000);
  lsched_view v = LSCHED_VIEW_INIT;
  OK(lsched_cluster_view(c, &v));
  int n0 = 0;
  MT_EQ(fit_best_counted(&v, 0, &q, &n0), 62);
  MT_EQ(fit_best_counted(&v, 1, &q, &n0), 12);
  int node = -2;
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 0);
  MT_EQ(calls, 2);
  MT_EQ(lsched_score_index_idle(ix), LSCHED_ESTATE); /* after an answer */
  /* 16 cores on node 0 (busy now: scored on its own): (8000, 3000) left
   * after q, 100 x leftover = 6.25 + 18.75 = 25, score 75; it still
   * wins. Node 2, idle, keeps its class's 62 without a call. */
  lsched_placement p = {0};
  p.node = 0;
  p.cpu_milli = 16000;
  OK(lsched_alloc(c, &p));
  calls = 0;
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 0);
  MT_EQ(calls, 1);
  MT_EQ(fit_best_counted(&v, 0, &q, &n0), 75);
  /* Released: idle again, its class's answer (no call); the tie at 62
   * goes to node 0, the earliest. */
  OK(lsched_release(c, &p));
  calls = 0;
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 0);
  MT_EQ(calls, 0);
  /* Cordoned: not idle (not up), no fit; node 2 wins. A new visit order
   * (4 first) rebuilds with the classes forgotten: 2 calls again. */
  OK(lsched_cluster_set_node_state(c, 0, LSCHED_NODE_CORDONED));
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 2);
  int order[6] = {4, 5, 3, 2, 1, 0};
  OK(lsched_cluster_set_order(c, order, 6));
  calls = 0;
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 4);
  MT_EQ(calls, 2);
  OK(lsched_score_index_check(ix));
  MT_EQ(lsched_score_index_idle(NULL), LSCHED_EINVAL);
  lsched_score_index_destroy(ix);
  lsched_cluster_destroy(c);
}

/* State scores (lsched_score_index_state): one fit test and score per
 * (node state, shape), counted by hand. */
static void test_state_memo(void) {
  /* Four nodes of 32 cores, 4 GPUs, 65536 MiB: A = 32000, B = 4000. A
   * request q of 8 cores and 1 GPU leaves on an idle node (24000, 3000):
   * 100 x leftover = 50 x 24000 / 32000 + 50 x 3000 / 4000 = 75, best-fit
   * score 25; on a node with 16 cores and GPU 0 in use (8000, 2000 left):
   * 12.5 + 25 = 37.5, score floor(62.5) = 62. */
  lsched_cluster *c = new_cluster(1);
  for (int i = 0; i < 4; i++)
    add_node(c, 32000, 65536, 4, 0, LSCHED_GPU_SHARED, 0);
  int calls = 0;
  lsched_score_index *ix = NULL;
  OK(lsched_score_index_create(&ix, c, fit_best_counted, &calls));
  OK(lsched_score_index_state(ix));
  lsched_request q = lt_req(8000, 0, 1, 1000);
  int node = -2;
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 0);
  MT_EQ(calls, 1); /* one class, all idle */
  MT_EQ(lsched_score_index_state(ix), LSCHED_ESTATE); /* after an answer */
  MT_EQ(lsched_score_index_idle(ix), LSCHED_ESTATE);
  /* 16 cores and GPU 0 on nodes 0, 1 and 2 (node 2 also 1000 MiB: memory
   * is no part of the state): one state, scored once (node 0), 62. */
  lsched_placement p[3];
  for (int i = 0; i < 3; i++) {
    p[i] = (lsched_placement)LSCHED_PLACEMENT_INIT;
    p[i].node = i;
    p[i].cpu_milli = 16000;
    p[i].gpu_count = 1;
    p[i].gpu_milli = 1000;
    p[i].gpu_mask = 1;
    p[i].memory_mib = i == 2 ? 1000 : 0;
    OK(lsched_alloc(c, &p[i]));
  }
  calls = 0;
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 0);
  MT_EQ(calls, 1);
  lsched_view v = LSCHED_VIEW_INIT;
  OK(lsched_cluster_view(c, &v));
  int n0 = 0;
  MT_EQ(fit_best_counted(&v, 2, &q, &n0), 62);
  MT_EQ(fit_best_counted(&v, 3, &q, &n0), 25);
  /* A new shape with 65000 MiB: node 2 (64536 MiB free) fails on memory
   * before the memo is read; node 0 scores (62), node 1 is its state's,
   * node 3 its class's (25): 2 calls, node 0. */
  lsched_request q2 = lt_req(8000, 65000, 1, 1000);
  calls = 0;
  OK(lsched_score_index_best(ix, &q2, &node));
  MT_EQ(node, 0);
  MT_EQ(calls, 2);
  /* Node 0 released, idle again (its class's 25, no call): node 1 (62,
   * its state's) wins q without a call. */
  OK(lsched_release(c, &p[0]));
  calls = 0;
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 1);
  MT_EQ(calls, 0);
  /* Node 1 released and taken again as it was: back to a state met
   * before, no call. */
  OK(lsched_release(c, &p[1]));
  OK(lsched_alloc(c, &p[1]));
  calls = 0;
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 1);
  MT_EQ(calls, 0);
  /* A touch: scores moved outside the state; everything is forgotten, the
   * touched node is scored again (1 call; node 2 is not replayed). */
  lsched_score_index_touch(ix, 1);
  calls = 0;
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 1);
  MT_EQ(calls, 1);
  /* A GPU taken on node 3, no CPU nor memory: not idle any more (its
   * class's 25 would be wrong), its own state: (24000, 2000) left after
   * q, 37.5 + 25 = 62.5, score 37, 1 call; node 1 (62) still wins. */
  lsched_placement g = LSCHED_PLACEMENT_INIT;
  g.node = 3;
  g.gpu_count = 1;
  g.gpu_milli = 1000;
  g.gpu_mask = 1;
  OK(lsched_alloc(c, &g));
  calls = 0;
  OK(lsched_score_index_best(ix, &q, &node));
  MT_EQ(node, 1);
  MT_EQ(calls, 1);
  MT_EQ(fit_best_counted(&v, 3, &q, &n0), 37);
  OK(lsched_score_index_check(ix));
  MT_EQ(lsched_score_index_state(NULL), LSCHED_EINVAL);
  lsched_score_index_destroy(ix);
  lsched_cluster_destroy(c);
}

static int is_typed(const char *policy) {
  return strcmp(policy, "fastest-fit") == 0 ||
         strcmp(policy, "cheapest-work") == 0;
}

/* Returns the answers that differed (0 unless `mutate`: then they are
 * counted, not failed). */
static int replay_eval(const char *policy, uint64_t seed, int n, int ops,
                       int npool, int mig, int fgd_types, int mutate) {
  struct rng r = {seed * UINT64_C(0x9E3779B97F4A7C15) + 7};
  struct pair pr;
  memset(&pr, 0, sizeof pr);
  pr.count_only = mutate;
  struct scoped_speeds sps;
  memset(&sps, 0, sizeof sps);
  sps.mutate = mutate;
  int typed = is_typed(policy);
  for (int i = 0; i < 2; i++) {
    pr.c[i] = new_cluster(1);
    if (typed) /* a third model, priced with the others */
      MT_EQ(lsched_cluster_model_id(pr.c[i], "H100", 1), 2);
  }
  for (int i = 0; i < n; i++)
    random_node(&r, pr.c[0], pr.c[1], mig);
  if (typed) {
    random_prices(&r, &pr);
    random_speeds(&r, &sps);
    for (int i = 0; i < n / 3; i++) { /* H100 nodes, exclusive or shared */
      lsched_gpu_mode mode = rbelow(&r, 3) == 0 ? LSCHED_GPU_EXCLUSIVE
                                                : LSCHED_GPU_SHARED;
      int gpus = 1 + rbelow(&r, 8);
      int a = add_node(pr.c[0], 64000, 262144, gpus, 2, mode, 0);
      int b = add_node(pr.c[1], 64000, 262144, gpus, 2, mode, 0);
      MT_EQ(a, b);
    }
  }
  pr.p[0] = attach(pr.c[0], policy, NULL);
  pr.p[1] = attach(pr.c[1], policy, "off");
  if (fgd_types) /* the reference evaluates F type by type */
    OK(lsched_policy_set_param(pr.p[1], "eval", "types"));
  set_workload(&r, &pr, fgd_types);
  lsched_request pool[400];
  for (int i = 0; i < npool; i++)
    pool[i] = random_shape(&r, mig);
  int shift = 0;
  for (int step = 0; step < ops; step++) {
    int what = rbelow(&r, 100);
    int nn = lsched_cluster_node_count(pr.c[0]);
    if (what < 55) { /* place */
      lsched_request q = rbelow(&r, 10) == 0 ? random_shape(&r, mig)
                                             : pool[rbelow(&r, npool)];
      int restrict_ = rbelow(&r, 12);
      if (restrict_ == 0) {
        for (int i = 0; i < nn; i++)
          pr.allowed[i] = (unsigned char)(rbelow(&r, 3) != 0);
        q.node_allowed = pr.allowed;
        q.node_allowed_count = nn;
      } else if (restrict_ == 1) {
        shift = rbelow(&r, 2);
        q.node_filter = odd_filter;
        q.node_filter_user = &shift;
      }
      int cb = typed ? rbelow(&r, 8) : 8;
      if (mutate && cb < 6)
        cb = 2;
      if (cb < 2) { /* version 4: any scope, answered by the scan */
        q.version = 4;
        q.speed = model_speed;
      } else if (cb < 5) { /* by model and GPU count (index per model) */
        q.speed = scoped_speed;
        q.speed_user = &sps;
        q.speed_scope = LSCHED_SPEED_BY_MODEL;
      } else if (cb < 6) { /* the same everywhere */
        q.speed = constant_speed;
        q.speed_user = &sps;
        q.speed_scope = LSCHED_SPEED_CONSTANT;
      }
      same_answer(&pr, &q, policy, step);
    } else if (typed && what < 58) { /* new prices and speeds */
      random_prices(&r, &pr);
      random_speeds(&r, &sps);
    } else if (what < 85) { /* release */
      if (pr.nlive == 0)
        continue;
      int i = rbelow(&r, pr.nlive);
      OK(lsched_release(pr.c[0], &pr.live[i]));
      OK(lsched_release(pr.c[1], &pr.live[i]));
      pr.live[i] = pr.live[--pr.nlive];
    } else if (what < 92) { /* node state */
      int node = rbelow(&r, nn);
      int st = lsched_cluster_node_state(pr.c[0], node);
      if (st == LSCHED_NODE_REMOVED)
        continue;
      lsched_node_state to = (lsched_node_state)rbelow(&r, 3);
      OK(lsched_cluster_set_node_state(pr.c[0], node, to));
      OK(lsched_cluster_set_node_state(pr.c[1], node, to));
    } else if (what < 95) { /* visit order */
      random_order(&r, &pr, nn);
    } else if (what < 97) { /* add a node */
      if (nn < MAXN)
        random_node(&r, pr.c[0], pr.c[1], mig);
    } else if (what < 99) { /* update or remove an idle node */
      int node = rbelow(&r, nn);
      if (lsched_cluster_node_state(pr.c[0], node) == LSCHED_NODE_REMOVED ||
          lsched_cluster_node_idle(pr.c[0], node) != 1)
        continue;
      if (rbelow(&r, 2)) {
        OK(lsched_cluster_remove_node(pr.c[0], node));
        OK(lsched_cluster_remove_node(pr.c[1], node));
      } else {
        lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
        s.cpu_milli = 8000 * (1 + rbelow(&r, 8));
        s.memory_mib = 65536;
        s.gpu_count = rbelow(&r, 9);
        s.gpu_model = rbelow(&r, 2);
        s.features = (uint64_t)rbelow(&r, 4);
        OK(lsched_cluster_update_node(pr.c[0], node, &s));
        OK(lsched_cluster_update_node(pr.c[1], node, &s));
      }
    } else { /* a new workload (fgd; the others ignore it) */
      set_workload(&r, &pr, fgd_types);
    }
  }
  for (int i = 0; i < 2; i++) {
    OK(lsched_cluster_check(pr.c[i]));
    lsched_policy_destroy(pr.p[i]);
    lsched_cluster_destroy(pr.c[i]);
  }
  return pr.mismatches;
}

static void replay(const char *policy, uint64_t seed, int n, int ops,
                   int npool, int mig) {
  replay_eval(policy, seed, n, ops, npool, mig, 0, 0);
}

static const char *const scoring[] = {
    "best-fit",     "worst-fit",  "dot-product", "gpu-packing", "gpu-clustering",
    "fgd",          "mig-best-fit", "mig-aware", "defrag",      "random"};
#define NSCORING (sizeof scoring / sizeof scoring[0])

static void test_replay_small(void) {
  for (size_t p = 0; p < NSCORING; p++)
    for (uint64_t seed = 1; seed <= 3; seed++)
      replay(scoring[p], seed, 3 + (int)(seed * 7 % 20), 500, 12, 0);
}

static void test_replay_mig(void) {
  for (size_t p = 0; p < NSCORING; p++)
    for (uint64_t seed = 11; seed <= 12; seed++)
      replay(scoring[p], seed, 24, 400, 10, 1);
}

/* fastest-fit and cheapest-work (best-fit's score index, per model
 * where speeds or costs differ by model) on three-model clusters with
 * random prices (unknown, 0, equal across models), exclusive and shared
 * nodes (MIG ones in the second loop), prices and speeds changed during
 * the replay. Requests: a quarter with a version-4 speed callback that
 * reads the node id (the scan), three eighths with a callback by model
 * and GPU count declared LSCHED_SPEED_BY_MODEL (tie-heavy speeds, 0, NaN,
 * infinity), an eighth with a constant one declared
 * LSCHED_SPEED_CONSTANT, a quarter without one. The mutation check: the
 * same replays with a callback that also reads the node id but still
 * declares BY_MODEL must give some different answer (so the comparison
 * sees a false contract). */
static void test_replay_typed(void) {
  static const char *const typed[] = {"fastest-fit", "cheapest-work"};
  for (size_t p = 0; p < 2; p++) {
    for (uint64_t seed = 41; seed <= 46; seed++)
      replay(typed[p], seed, 6 + (int)(seed * 7 % 30), 800, 14, 0);
    for (uint64_t seed = 51; seed <= 52; seed++)
      replay(typed[p], seed, 30, 600, 12, 1);
    int differ = 0;
    for (uint64_t seed = 41; seed <= 43; seed++)
      differ += replay_eval(typed[p], seed, 30, 400, 14, 0, 0, 1);
    MT_ASSERT_MSG(differ > 0, "%s: a speed by node id declared by model "
                  "went unnoticed", typed[p]);
  }
}

/* More shapes than an index tracks (256): evictions and scans of
 * untracked shapes (the same code for every policy: three of them); and a
 * larger cluster. */
static void test_replay_many_shapes(void) {
  static const char *const some[] = {"best-fit", "gpu-clustering", "fgd"};
  for (size_t p = 0; p < 3; p++)
    replay(some[p], 21 + p, 70, 1500, 400, 0);
}

/* fgd's grouped evaluation of F (the default) against lsched_frag_eval's
 * walk over every task type (eval=types) on the scan: workloads of up to
 * 60 types in few (share, count) groups, CPU ties included. A bad value
 * of the parameter is refused. */
static void test_fgd_grouped(void) {
  for (uint64_t seed = 31; seed <= 36; seed++)
    replay_eval("fgd", seed, 12 + (int)(seed % 5) * 9, 800, 30, seed == 36,
                1, 0);
  lsched_cluster *c = new_cluster(0);
  add_node(c, 8000, 65536, 8, 0, LSCHED_GPU_SHARED, 0);
  lsched_policy *p = attach(c, "fgd", NULL);
  MT_EQ(lsched_policy_set_param(p, "eval", "fast"), LSCHED_EINVAL);
  OK(lsched_policy_set_param(p, "eval", "grouped"));
  lsched_policy_destroy(p);
  lsched_cluster_destroy(c);
}

/* fgd's memo of scores by node state (class, free CPU, sorted free shares,
 * shape): 72 nodes of three classes (8-GPU shared, 4-GPU shared, 2-GPU
 * exclusive) and a few shapes (fractions of one GPU with several CPU
 * sizes, whole GPUs, a fraction of two GPUs, CPU only), so that many nodes
 * are in equal states with their shares in different GPU orders, and new
 * workloads mid-run. The index (default) and the scan (index=off), both
 * through the memo, against the scan with eval=types (no memo). The
 * mutation check (by hand, see policies/README.md): a memo key without the
 * free CPU, a hit naming the first tied share's GPU in sorted order
 * instead of the lowest index, or a new workload that keeps the state
 * scores, fails here. */
static void test_fgd_state_memo(void) {
  static const int64_t cpus[] = {0, 1000, 2000, 4000, 6000};
  static const int shares[] = {250, 300, 500, 700};
  for (int side = 0; side < 2; side++) {
    for (uint64_t seed = 61; seed <= 64; seed++) {
      struct rng r = {seed * UINT64_C(0x9E3779B97F4A7C15) + 11};
      struct pair pr;
      memset(&pr, 0, sizeof pr);
      for (int i = 0; i < 2; i++) {
        pr.c[i] = new_cluster(1);
        for (int n = 0; n < 72; n++) {
          int cls = n % 6 < 4 ? 0 : n % 6 == 4 ? 1 : 2;
          add_node(pr.c[i], cls == 0 ? 64000 : 32000, 262144,
                   cls == 0 ? 8 : cls == 1 ? 4 : 2, cls == 1,
                   cls == 2 ? LSCHED_GPU_EXCLUSIVE : LSCHED_GPU_SHARED, 0);
        }
      }
      pr.p[0] = attach(pr.c[0], "fgd", side ? "off" : NULL);
      pr.p[1] = attach(pr.c[1], "fgd", "off");
      OK(lsched_policy_set_param(pr.p[1], "eval", "types"));
      set_workload(&r, &pr, 1);
      for (int step = 0; step < 3000; step++) {
        int what = rbelow(&r, 100);
        if (what < 60) {
          int kind = rbelow(&r, 10);
          int64_t cpu = cpus[rbelow(&r, 5)];
          lsched_request q =
              kind < 6   ? lt_req(cpu, 1024, 1, shares[rbelow(&r, 4)])
              : kind < 8 ? lt_req(cpu, 1024, 1 + rbelow(&r, 2), 1000)
              : kind < 9 ? lt_req(cpu, 1024, 2, 500)
                         : lt_req(cpu, 1024, 0, 0);
          same_answer(&pr, &q, "fgd", step);
        } else if (what < 97) {
          if (pr.nlive == 0)
            continue;
          int i = rbelow(&r, pr.nlive);
          OK(lsched_release(pr.c[0], &pr.live[i]));
          OK(lsched_release(pr.c[1], &pr.live[i]));
          pr.live[i] = pr.live[--pr.nlive];
        } else {
          set_workload(&r, &pr, rbelow(&r, 2));
        }
      }
      for (int i = 0; i < 2; i++) {
        OK(lsched_cluster_check(pr.c[i]));
        lsched_policy_destroy(pr.p[i]);
        lsched_cluster_destroy(pr.c[i]);
      }
    }
  }
}

/* The log of touched nodes past its capacity (4096 entries): a shape asked
 * at every step (replayed), one asked every 1,500 steps (rebuilt: more
 * than n/4 behind), one asked at step 5 and then right after the log
 * dropped what it had not replayed (rebuilt, then replayed). */
static void test_log_compaction(void) {
  enum { N = 64, LIVE = 256 };
  lsched_cluster *c = new_cluster(0);
  for (int i = 0; i < N; i++)
    add_node(c, 64000, 1 << 20, 8, i % 2, LSCHED_GPU_SHARED, 0);
  lsched_score_index *ix = NULL;
  OK(lsched_score_index_create(&ix, c, tight_gpu_fwd, NULL));
  int scratch[N];
  lsched_request q[3] = {lt_req(2000, 0, 1, 250), lt_req(8000, 0, 2, 1000),
                         lt_req(1000, 0, 1, 100)};
  lsched_placement live[LIVE];
  int nlive = 0;
  struct rng r = {99};
  int touches = 0; /* allocations and releases: one log entry each */
  for (int step = 0; step < 9000; step++) {
    /* The log is compacted at the 4,097th entry: shape 2, held back since
     * step 5, must then be rebuilt, not replayed from dropped entries. */
    int which = step == 5 || (touches > 4096 && touches < 4110) ? 2
                : step % 1500 == 0                               ? 1
                                                                 : 0;
    int node = -1, ref = -1;
    int rc = lsched_score_index_best(ix, &q[which], &node);
    MT_EQ(rc, lsched_best_raw_score(c, &q[which], tight_gpu_fwd, NULL,
                                    scratch, &ref));
    MT_EQ(node, ref);
    if (which == 2 && step > 5) /* every leaf of every tree recomputed */
      OK(lsched_score_index_check(ix));
    if (rc == LSCHED_OK && nlive < LIVE && rbelow(&r, 4)) {
      lsched_placement p;
      OK(lsched_pick_gpus(c, node, &q[which], LSCHED_PICK_TIGHTEST, &p));
      OK(lsched_alloc(c, &p));
      live[nlive++] = p;
      touches++;
    } else if (nlive > 0) {
      int i = rbelow(&r, nlive);
      OK(lsched_release(c, &live[i]));
      live[i] = live[--nlive];
      touches++;
    }
  }
  OK(lsched_score_index_check(ix));
  lsched_score_index_stats st;
  OK(lsched_score_index_stats_get(ix, &st));
  MT_EQ(st.shapes, 3);
  MT_EQ((int)st.scanned, 0);
  MT_ASSERT(st.builds > 3); /* rebuilds after the log dropped entries */
  lsched_score_index_destroy(ix);
  lsched_cluster_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* MIG requests through the index (mig-best-fit, mig-aware)                */

/* Instance memory per kind (MiB) of the two models: model 1 offers no
 * 1g-2x. */
static const int64_t mig_mem[2][LSCHED_MIG_KINDS] = {
    {10240, 20480, 20480, 40960, 40960, 81920},
    {5120, 0, 10240, 20480, 20480, 40960}};

/* A random valid layout of kinds in `offered` (kind mask) into v; its
 * length. */
static int random_layout(struct rng *r, unsigned offered,
                         lsched_mig_instance *v) {
  unsigned used = 0;
  int n = 0;
  for (int tries = 0; tries < 6; tries++) {
    int k = 1 + rbelow(r, LSCHED_MIG_KINDS);
    int s = rbelow(r, LSCHED_MIG_SLOTS);
    unsigned m = lsched_mig_slot_mask(k, s);
    if (!((offered >> (k - 1)) & 1) || !m || (m & used))
      continue;
    used |= m;
    v[n].kind = k;
    v[n].start = s;
    n++;
  }
  return n;
}

static unsigned model_offered(int model) {
  unsigned o = 0;
  for (int k = 0; k < LSCHED_MIG_KINDS; k++)
    if (mig_mem[model][k] > 0)
      o |= 1u << k;
  return o;
}

/* A node on both clusters: a third plain (shared or exclusive), the others
 * MIG, static with a random layout or dynamic, model 0 or 1. */
static void random_mig_node(struct rng *r, struct pair *pr) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 8000 * (1 + rbelow(r, 8));
  s.memory_mib = 16384 * (1 + rbelow(r, 8));
  s.gpu_count = 1 + rbelow(r, 8);
  s.gpu_model = rbelow(r, 2);
  lsched_mig_instance lay[8];
  int kind = rbelow(r, 3);
  if (kind == 0) {
    s.gpu_mode = rbelow(r, 2) ? LSCHED_GPU_SHARED : LSCHED_GPU_EXCLUSIVE;
  } else {
    s.gpu_mode = LSCHED_GPU_MIG;
    s.mig_dynamic = kind == 1;
    s.mig_layout_count = random_layout(r, model_offered(s.gpu_model), lay);
    if (s.mig_layout_count == 0) { /* a static node needs a layout */
      lay[0].kind = LSCHED_MIG_7G;
      lay[0].start = 0;
      s.mig_layout_count = 1;
    }
    s.mig_layout = lay;
  }
  int a = -1, b = -1;
  OK(lsched_cluster_add_node(pr->c[0], &s, &a));
  OK(lsched_cluster_add_node(pr->c[1], &s, &b));
  MT_EQ(a, b);
}

/* A MIG request (one to three GPUs; kind, compute and memory needs drawn)
 * or, one time in four, a plain one. */
static lsched_request random_mig_shape(struct rng *r) {
  if (rbelow(r, 4) == 0)
    return random_shape(r, 0);
  static const int compute[] = {0, 0, 100, 300, 500, 800};
  static const int64_t memory[] = {0, 0, 8000, 16000, 30000, 60000};
  lsched_request q = lt_req(1000 * rbelow(r, 9), 2048 * rbelow(r, 10),
                           rbelow(r, 5) ? 1 : 2 + rbelow(r, 2), 0);
  q.mig_kind = 1 + rbelow(r, rbelow(r, 3) ? 3 : LSCHED_MIG_KINDS);
  q.mig_compute_milli = compute[rbelow(r, 6)];
  q.mig_memory_mib = memory[rbelow(r, 6)];
  if (rbelow(r, 6) == 0)
    q.model_mask = UINT64_C(1) << rbelow(r, 2);
  return q;
}

/* The promise checks replay_mig made. */
static int promise_checks;

/* One MIG replay: `policy` indexed against index=off on two identical
 * random clusters (MIG and plain nodes, both models with memory tables),
 * through placements (compared), releases, layout changes of idle GPUs
 * (lsched_mig_set_layout), new memory tables (lsched_mig_set_model_memory),
 * node states, visit orders and added nodes. */
static void replay_mig(const char *policy, uint64_t seed, int n, int ops,
                       int huge) {
  struct rng r = {seed * UINT64_C(0x9E3779B97F4A7C15) + 3};
  struct pair pr;
  memset(&pr, 0, sizeof pr);
  for (int i = 0; i < 2; i++) {
    pr.c[i] = new_cluster(1);
    for (int m = 0; m < 2; m++)
      OK(lsched_mig_set_model_memory(pr.c[i], m, mig_mem[m]));
    if (huge) /* 2 x 10^9 milli: mig-aware's packed key would not fit */
      add_node(pr.c[i], 2000000000, 65536, 8, 0, LSCHED_GPU_MIG, 0);
  }
  for (int i = 0; i < n; i++)
    random_mig_node(&r, &pr);
  pr.p[0] = attach(pr.c[0], policy, NULL);
  /* (mig-first-fit has no scan: two of its instances) */
  pr.p[1] = attach(pr.c[1], policy,
                   strcmp(policy, "mig-first-fit") ? "off" : NULL);
  if (rbelow(&r, 2)) { /* mig-aware: a fixed mix (else online) */
    for (int i = 0; i < 2; i++) {
      int rc = lsched_policy_set_param(pr.p[i], "mix", "1g:50,2g:20,3g:30");
      MT_ASSERT(rc == LSCHED_OK || rc == LSCHED_ENOENT);
    }
  }
  lsched_request pool[16];
  for (int i = 0; i < 16; i++)
    pool[i] = random_mig_shape(&r);
  for (int step = 0; step < ops; step++) {
    int what = rbelow(&r, 100);
    int nn = lsched_cluster_node_count(pr.c[0]);
    if (what < 50) { /* place */
      lsched_request q =
          rbelow(&r, 8) == 0 ? random_mig_shape(&r) : pool[rbelow(&r, 16)];
      if (lsched_place_splits(pr.c[1], &q) == 0) {
        /* LSCHED_POLICY_ANY_FIT: the scan places exactly when some node
         * fits (the asking changes nothing: same_answer follows). */
        lsched_placement t;
        int rc = lsched_policy_place(pr.p[1], &q, &t);
        int fits = lsched_next_fit(pr.c[1], &q, 0) >= 0;
        MT_ASSERT_MSG((rc == LSCHED_OK) == fits,
                      "%s step %d: place %s, fits %d", policy, step,
                      lsched_err_name(rc), fits);
        promise_checks++;
      }
      same_answer(&pr, &q, policy, step);
    } else if (what < 75) { /* release */
      if (pr.nlive == 0)
        continue;
      int i = rbelow(&r, pr.nlive);
      OK(lsched_release(pr.c[0], &pr.live[i]));
      OK(lsched_release(pr.c[1], &pr.live[i]));
      pr.live[i] = pr.live[--pr.nlive];
    } else if (what < 88) { /* a new layout on one GPU (idle or not) */
      int node = rbelow(&r, nn);
      lsched_view v = LSCHED_VIEW_INIT;
      OK(lsched_cluster_view(pr.c[0], &v));
      const lsched_node *nd = lsched_view_node(&v, node);
      if (nd->mode != LSCHED_GPU_MIG || nd->gpu_count == 0)
        continue;
      int gpu = rbelow(&r, nd->gpu_count);
      lsched_mig_instance lay[8];
      int k = random_layout(&r, rbelow(&r, 8) ? model_offered(nd->model)
                                              : 0x3Fu, lay);
      int rc0 = lsched_mig_set_layout(pr.c[0], node, gpu, lay, k);
      int rc1 = lsched_mig_set_layout(pr.c[1], node, gpu, lay, k);
      MT_EQ(rc0, rc1);
    } else if (what < 90) { /* a model's memory table */
      int m = rbelow(&r, 2);
      int64_t mem[LSCHED_MIG_KINDS];
      for (int k = 0; k < LSCHED_MIG_KINDS; k++)
        mem[k] = mig_mem[m][k] ? mig_mem[m][k] / (1 + rbelow(&r, 2)) : 0;
      OK(lsched_mig_set_model_memory(pr.c[0], m, mem));
      OK(lsched_mig_set_model_memory(pr.c[1], m, mem));
    } else if (what < 95) { /* node state */
      int node = rbelow(&r, nn);
      lsched_node_state to = (lsched_node_state)rbelow(&r, 3);
      OK(lsched_cluster_set_node_state(pr.c[0], node, to));
      OK(lsched_cluster_set_node_state(pr.c[1], node, to));
    } else if (what < 98) { /* visit order */
      random_order(&r, &pr, nn);
    } else if (nn < MAXN) { /* add a node */
      random_mig_node(&r, &pr);
    }
  }
  for (int i = 0; i < 2; i++) {
    OK(lsched_cluster_check(pr.c[i]));
    lsched_policy_destroy(pr.p[i]);
    lsched_cluster_destroy(pr.c[i]);
  }
}

/* The replays (the last one with a node of 2 x 10^9 CPU milli, where
 * mig-aware falls back to its scan). Mutation check: without the
 * LSCHED_NODE_UPDATED notice of lsched_mig_set_layout (libsched/src/mig.c,
 * mig_node_changed) the indexed instance keeps scores of the old layout,
 * and without mig-aware's index reset when its loss tables change
 * (rebuild()) it keeps scores of the old mix: these fail. */
/* A counting index (lsched_score_index_enable_counts) draws on fit alone:
 * until its first best answer a leaf known to still fit (only released on
 * since) is not replayed, so its score may be old. Here the score is the
 * node's free CPU, which every release raises: draws against
 * lsched_collect_fits, then, from the first best answer on, best answers
 * against lsched_best_raw_score (an index that kept the old scores answers
 * a node that is no longer the freest; with idle classes, one that kept
 * their fit-only answers scores every idle node 0), and
 * lsched_score_index_check after every operation. */
static int64_t free_cpu(const lsched_view *v, int node,
                        const lsched_request *req, void *ctx) {
  (void)req;
  (void)ctx;
  return lsched_view_node(v, node)->cpu_free;
}

static uint64_t draw_of(void *user, uint64_t m) {
  return (uint64_t)rbelow(user, (int)m);
}

static void test_counts_then_best(void) {
  for (uint64_t seed = 1; seed <= 6; seed++) {
    lsched_cluster *c = new_cluster(1);
    int nn = 6 + (int)seed * 3;
    for (int i = 0; i < nn; i++)
      add_node(c, 8000 + 1000 * (i % 5), 65536, 4, 0, LSCHED_GPU_SHARED, 0);
    lsched_score_index *ix = NULL;
    OK(lsched_score_index_create(&ix, c, free_cpu, NULL));
    OK(lsched_score_index_enable_counts(ix));
    if (seed % 2) /* an idle node's free CPU is its class's capacity */
      OK(lsched_score_index_idle(ix));
    struct rng r = {seed * 0x9E3779B97F4A7C15u}, ra = r, rb = r;
    lsched_placement live[256];
    int nlive = 0, scratch[64], fits[64], bests = 0;
    for (int op = 0; op < 600; op++) {
      int k = rbelow(&r, 3);
      lsched_request q = lt_req(500 * (1 + rbelow(&r, 6)), 0, k,
                                k ? 250 + 250 * rbelow(&r, 4) : 0);
      int best = op >= 300;
      /* About one job a node: idle nodes come and go. */
      if (nlive > 0 && (nlive >= nn || rbelow(&r, 2) == 0)) {
        int j = rbelow(&r, nlive);
        OK(lsched_release(c, &live[j]));
        live[j] = live[--nlive];
      } else if (best) {
        int a = -2, b = -2;
        int rca = lsched_score_index_best(ix, &q, &a);
        int rcb = lsched_best_raw_score(c, &q, free_cpu, NULL, scratch, &b);
        MT_ASSERT_MSG(rca == rcb && a == b,
                      "seed %llu op %d: index %d node %d, scan %d node %d",
                      (unsigned long long)seed, op, rca, a, rcb, b);
        if (rca == LSCHED_OK) {
          OK(lsched_pick_gpus(c, a, &q, LSCHED_PICK_LOWEST, &live[nlive]));
          OK(lsched_alloc(c, &live[nlive++]));
          bests++;
        }
      } else {
        int a = -2;
        int rca = lsched_score_index_draw(ix, &q, draw_of, &ra, &a);
        int m = lsched_collect_fits(c, &q, fits);
        if (m == 0) {
          MT_EQ(rca, LSCHED_ENOFIT);
        } else {
          OK(rca);
          MT_EQ(a, fits[rbelow(&rb, m)]);
          OK(lsched_pick_gpus(c, a, &q, LSCHED_PICK_LOWEST, &live[nlive]));
          OK(lsched_alloc(c, &live[nlive++]));
        }
      }
      OK(lsched_score_index_check(ix));
    }
    MT_ASSERT(bests > 20);
    lsched_score_index_destroy(ix);
    lsched_cluster_destroy(c);
  }
}

static void test_replay_mig_index(void) {
  static const char *const mig[] = {"mig-best-fit", "mig-aware",
                                    "mig-first-fit"};
  promise_checks = 0;
  for (size_t p = 0; p < 3; p++)
    for (uint64_t seed = 61; seed <= 69; seed++)
      replay_mig(mig[p], seed, 8 + (int)(seed * 5 % 30), 700, seed == 69);
  MT_ASSERT(promise_checks > 5000);
}

struct seen {
  int calls, node, change;
};

static void seen_change(void *user, const lsched_cluster *c, int node,
                        int change) {
  (void)c;
  struct seen *s = user;
  s->calls++;
  s->node = node;
  s->change = change;
}

/* A layout change is told to observers (LSCHED_NODE_UPDATED) and followed
 * by an indexed mig-best-fit. Two static nodes of one GPU: node 0 all-1g
 * (7 free slices), node 1 1g@0 + 3g@4 (4 free). A 1g request goes to the
 * GPU with the fewest free slices: node 1. After node 1's GPU becomes
 * all-1g too, both have 7 and the tie goes to node 0; an index that did
 * not hear of the change would still answer node 1. A new memory table is
 * told once per MIG node of the model. */
static void test_mig_layout_notice(void) {
  lsched_cluster *c = new_cluster(1);
  OK(lsched_mig_set_model_memory(c, 0, mig_mem[0]));
  lsched_mig_instance all1[7], mixed[2] = {{LSCHED_MIG_1G, 0},
                                           {LSCHED_MIG_3G, 4}};
  for (int s = 0; s < 7; s++) {
    all1[s].kind = LSCHED_MIG_1G;
    all1[s].start = s;
  }
  for (int i = 0; i < 2; i++) {
    lsched_node_spec sp = LSCHED_NODE_SPEC_INIT;
    sp.cpu_milli = 16000;
    sp.memory_mib = 65536;
    sp.gpu_count = 1;
    sp.gpu_model = 0;
    sp.gpu_mode = LSCHED_GPU_MIG;
    sp.mig_layout = i == 0 ? all1 : mixed;
    sp.mig_layout_count = i == 0 ? 7 : 2;
    OK(lsched_cluster_add_node(c, &sp, NULL));
  }
  add_node(c, 16000, 65536, 2, 1, LSCHED_GPU_SHARED, 0); /* plain, model 1 */
  struct seen seen = {0, -1, 0};
  lsched_observer obs = LSCHED_OBSERVER_INIT;
  obs.on_node_change = seen_change;
  OK(lsched_cluster_add_observer(c, &obs, &seen));
  lsched_policy *p[2] = {attach(c, "mig-best-fit", NULL),
                         attach(c, "mig-best-fit", "off")};
  lsched_request q = lt_req(1000, 1024, 1, 0);
  q.mig_kind = LSCHED_MIG_1G;
  lsched_placement out;
  for (int i = 0; i < 2; i++) {
    OK(lsched_policy_place(p[i], &q, &out));
    MT_EQ(out.node, 1);
    MT_EQ(out.mig_start, 0);
  }
  OK(lsched_mig_set_layout(c, 1, 0, all1, 7));
  for (int i = 0; i < 2; i++) {
    OK(lsched_policy_place(p[i], &q, &out));
    MT_EQ(out.node, 0);
  }
  MT_EQ(seen.calls, 1);
  MT_EQ(seen.node, 1);
  MT_EQ(seen.change, LSCHED_NODE_UPDATED);
  /* Refused changes tell nothing. */
  MT_EQ(lsched_mig_set_layout(c, 2, 0, all1, 7), LSCHED_EINVAL);
  MT_EQ(seen.calls, 1);
  /* A memory table: nodes 0 and 1 (model 0, MIG), not node 2. */
  OK(lsched_mig_set_model_memory(c, 0, mig_mem[1]));
  MT_EQ(seen.calls, 3);
  MT_EQ(seen.node, 1);
  OK(lsched_mig_set_model_memory(c, 1, mig_mem[1]));
  MT_EQ(seen.calls, 3);
  for (int i = 0; i < 2; i++)
    lsched_policy_destroy(p[i]);
  OK(lsched_cluster_remove_observer(c, &obs, &seen));
  lsched_cluster_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Invariants at 100,000 GPUs                                              */

/* A score that reads every GPU: free milli of the tightest GPU that fits
 * one GPU of the request, negated (as a policy preferring tight GPUs). */
static int64_t tight_gpu(const lsched_view *v, int node,
                         const lsched_request *req, void *ctx) {
  (void)ctx;
  const lsched_node *nd = lsched_view_node(v, node);
  const int *g = lsched_view_gpus(v, nd);
  int d = lsched_node_eff_milli(nd, req), best = 2000;
  for (int i = 0; i < nd->gpu_count; i++)
    if (g[i] >= d && g[i] < best)
      best = g[i];
  return -(int64_t)best * 1000 - (nd->cpu_free >> 10);
}

static void test_invariants_100k(void) {
  enum { NODES = 12500, OPS = 800 };
  lsched_cluster *c = new_cluster(0);
  for (int i = 0; i < NODES; i++)
    add_node(c, 128000, 1 << 20, 8, i % 2, LSCHED_GPU_SHARED, 0);
  lsched_score_index *ix[2] = {NULL, NULL};
  lsched_score_fn fn[2] = {fit_best, tight_gpu};
  for (int i = 0; i < 2; i++)
    OK(lsched_score_index_create(&ix[i], c, fn[i], NULL));
  int *scratch = malloc(NODES * sizeof *scratch);
  lsched_placement *live = malloc(OPS * sizeof *live);
  MT_ASSERT(scratch && live);
  int nlive = 0;
  struct rng r = {12345};
  static const int shares[] = {100, 250, 500, 1000};
  for (int step = 0; step < OPS; step++) {
    if (nlive > 0 && rbelow(&r, 3) == 0) {
      int i = rbelow(&r, nlive);
      OK(lsched_release(c, &live[i]));
      live[i] = live[--nlive];
    } else {
      int k = 1 + rbelow(&r, 4) / 3 * rbelow(&r, 4);
      lsched_request q = lt_req(4000 * (1 + rbelow(&r, 8)), 8192 * rbelow(&r, 4),
                               k, k > 1 ? 1000 : shares[rbelow(&r, 4)]);
      if (rbelow(&r, 6) == 0)
        q.model_mask = 1;
      int which = rbelow(&r, 2), node = -1, ref = -1;
      int rc = lsched_score_index_best(ix[which], &q, &node);
      int rrc = lsched_best_raw_score(c, &q, fn[which], NULL, scratch, &ref);
      MT_EQ(rc, rrc);
      MT_EQ(node, ref);
      if (rc == LSCHED_OK) {
        lsched_placement p;
        OK(lsched_pick_gpus(c, node, &q, LSCHED_PICK_TIGHTEST, &p));
        OK(lsched_alloc(c, &p));
        live[nlive++] = p;
      }
    }
    if (step % 200 == 199) {
      OK(lsched_cluster_check(c));
      for (int i = 0; i < 2; i++)
        OK(lsched_score_index_check(ix[i]));
    }
    if (step == OPS / 2) { /* a cordon and a node change mid-way */
      OK(lsched_cluster_set_node_state(c, 17, LSCHED_NODE_CORDONED));
      lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
      s.cpu_milli = 256000;
      s.memory_mib = 1 << 21;
      s.gpu_count = 8;
      s.gpu_model = 0;
      OK(lsched_cluster_add_node(c, &s, NULL));
    }
  }
  for (int i = 0; i < 2; i++) {
    lsched_score_index_stats st;
    OK(lsched_score_index_stats_get(ix[i], &st));
    MT_ASSERT(st.indexed > 0);
    lsched_score_index_destroy(ix[i]);
  }
  free(scratch);
  free(live);
  lsched_cluster_destroy(c);
}

int main(void) {
  mt_begin("test_score_index");
  MT_RUN(test_hand);
  MT_RUN(test_plain_fits);
  MT_RUN(test_idle_classes);
  MT_RUN(test_state_memo);
  MT_RUN(test_replay_small);
  MT_RUN(test_replay_mig);
  MT_RUN(test_replay_typed);
  MT_RUN(test_replay_many_shapes);
  MT_RUN(test_fgd_grouped);
  MT_RUN(test_fgd_state_memo);
  MT_RUN(test_log_compaction);
  MT_RUN(test_mig_layout_notice);
  MT_RUN(test_replay_mig_index);
  MT_RUN(test_counts_then_best);
  MT_RUN(test_invariants_100k);
  return mt_finish();
}
