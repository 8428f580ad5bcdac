/*
 * defrag's bucketed planner (the default, parameter plan_index=on) against
 * the reference scan it replaces (plan_index=off), on the minitest harness
 * (runs in the library-only build too).
 *
 * - A hand-computed case: three nodes of 4 GPUs, each with two 1-GPU jobs;
 *   a 4-GPU job waits; the cheapest node's two jobs move (into the other
 *   nodes' free GPUs), under both planners; with a budget below that cost
 *   the next node's plan is too dear as well: no plan.
 * - Equivalence replays: two identical random clusters (shared and
 *   exclusive A100/V100 nodes, CPU-only nodes, cordons, new visit orders),
 *   one defrag instance on each (plan_index on / off), through the same
 *   random operations: placements by the base policy, releases, and plan
 *   requests for random waiting jobs (whole and fractional GPUs, several
 *   GPUs, model masks, node_allowed lists, CPU-only) with random budgets
 *   (max_moves 1-4, max_moves_per_job 1-2, expected waits from 0 to
 *   unbounded), random move counts and move costs with many ties (zero,
 *   and in one configuration negative costs); most plans found are then
 *   applied. Every answer (return code, number of moves, each move's index,
 *   source and target) must be the same and the clusters (which check their
 *   invariants after every change) must stay identical. Bases: best-fit,
 *   first-fit (built-ins: the re-placement screen applies) and a policy the
 *   test registers itself (not a built-in: no screen). The replays count
 *   plans found and refused, so a replay that planned nothing fails.
 *
 * Mutation check: in policies/defrag.c fit_prefix, `cnt >= w->gpu_count`
 * -> `cnt > w->gpu_count` (nodes where the job fits exactly are skipped)
 * fails every test; leaving a node's first candidate out of the room that
 * may_replace counts (its first loop from i = 1) fails the replays over
 * the built-in bases (the custom base is not screened).
 */
#include "libtest.h"

#include <libsched/libsched.h>
#include <libsched/migrate.h>
#include <libsched/policy_sdk.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* "last-node": the last node in the visit order that fits, lowest GPUs (a
 * base that is not a built-in). */
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

static int same_placement(const lsched_placement *a,
                          const lsched_placement *b) {
  return a->node == b->node && a->gpu_count == b->gpu_count &&
         a->gpu_milli == b->gpu_milli && a->gpu_mask == b->gpu_mask &&
         a->cpu_milli == b->cpu_milli && a->memory_mib == b->memory_mib;
}

/* Both clusters in the same state: every node's CPU, memory and GPUs. */
static void same_clusters(const lsched_cluster *a, const lsched_cluster *b) {
  int n = lsched_cluster_node_count(a);
  MT_EQ(lsched_cluster_node_count(b), n);
  for (int i = 0; i < n; i++) {
    lsched_node_info x = LSCHED_NODE_INFO_INIT, y = LSCHED_NODE_INFO_INIT;
    OK(lsched_cluster_node_info(a, i, &x));
    OK(lsched_cluster_node_info(b, i, &y));
    MT_EQ(x.cpu_free, y.cpu_free);
    MT_EQ(x.memory_free, y.memory_free);
    for (int g = 0; g < x.gpu_count; g++)
      MT_EQ(lsched_cluster_gpu_free(a, i, g), lsched_cluster_gpu_free(b, i, g));
  }
}

static void add_node(lsched_cluster *c, int64_t cpu, int64_t mem, int gpus,
                     int model, lsched_gpu_mode mode) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = cpu;
  s.memory_mib = mem;
  s.gpu_count = gpus;
  s.gpu_model = gpus > 0 ? model : -1;
  s.gpu_mode = mode;
  OK(lsched_cluster_add_node(c, &s, NULL));
}

/* One defrag instance over base `base` on c, planner on or off. */
static lsched_policy *new_defrag(lsched_cluster *c, lsched_registry *reg,
                                 const char *base, int index) {
  lsched_policy *p = NULL;
  OK(lsched_policy_create_from(&p, c, reg, "defrag"));
  OK(lsched_policy_set_param(p, "base", base));
  OK(lsched_policy_set_param(p, "plan_index", index ? "on" : "off"));
  return p;
}

static void test_hand(void) {
  lsched_registry *reg = NULL;
  OK(lsched_registry_create(&reg, NULL));
  OK(lsched_registry_add_builtins(reg));
  for (int index = 0; index < 2; index++) {
    lsched_cluster *c = lt_new_cluster();
    for (int i = 0; i < 3; i++)
      add_node(c, 32000, 65536, 4, A100, LSCHED_GPU_SHARED);
    lsched_policy *p = new_defrag(c, reg, "best-fit", index);
    /* Two 1-GPU jobs on GPUs 0 and 1 of every node; move costs (s) 5 and
     * 5, 20 and 20, 30 and 30. */
    static const double cost[6] = {5, 5, 20, 20, 30, 30};
    lsched_placement held[6];
    lsched_running run[6];
    for (int k = 0; k < 6; k++) {
      lsched_request r = lt_req(1000, 1000, 1, 1000);
      OK(lsched_pick_gpus(c, k / 2, &r, LSCHED_PICK_LOWEST, &held[k]));
      OK(lsched_alloc(c, &held[k]));
      run[k] = (lsched_running)LSCHED_RUNNING_INIT;
      run[k].id = (uint64_t)k;
      run[k].request = r;
      run[k].parts = &held[k];
      run[k].nparts = 1;
      run[k].move_cost_s = cost[k];
    }
    lsched_request w = lt_req(4000, 4000, 4, 1000);
    lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
    b.max_moves = 2;
    b.expected_wait_s = 100; /* budget: 100 s x 4 GPUs = 400 GPU-s */
    lsched_move mv[8];
    size_t n = 0;
    OK(lsched_policy_plan_migrations(p, &w, run, 6, &b, mv, 8, &n));
    /* Node 0 (cost 5 + 5 = 10 GPU-s); best-fit puts each job on the
     * fullest node that fits: node 1's GPUs 2 and 3. */
    MT_EQ(n, 2);
    MT_EQ(mv[0].index, 0);
    MT_EQ(mv[1].index, 1);
    MT_EQ(mv[0].to.node, 1);
    MT_EQ(mv[1].to.node, 1);
    MT_EQ_U(mv[0].to.gpu_mask | mv[1].to.gpu_mask, 0xC);
    /* Budget 2 s x 4 GPUs = 8 GPU-s: every plan (10, 40, 60) is too dear. */
    b.expected_wait_s = 2;
    MT_EQ(lsched_policy_plan_migrations(p, &w, run, 6, &b, mv, 8, &n),
          LSCHED_ENOFIT);
    /* Node 0's jobs moved already (moves = max_moves_per_job): node 1. */
    b.expected_wait_s = 100;
    run[0].moves = run[1].moves = 1;
    OK(lsched_policy_plan_migrations(p, &w, run, 6, &b, mv, 8, &n));
    MT_EQ(n, 2);
    MT_EQ(mv[0].index, 2);
    MT_EQ(mv[1].index, 3);
    for (int k = 0; k < 6; k++)
      OK(lsched_release(c, &held[k]));
    lsched_policy_destroy(p);
    lsched_cluster_destroy(c);
  }
  lsched_registry_destroy(reg);
}

struct job {
  lsched_request r;
  lsched_placement p;
  double cost;
  int moves;
};

struct replay_cfg {
  uint64_t seed;
  const char *base;
  int steps;
  int negative_costs;
};

static const lsched_request *shape(struct rng *g, lsched_request *q) {
  static const int fr[] = {100, 250, 500, 700, 1000};
  switch (rbelow(g, 6)) {
  case 0:
    *q = lt_req(1000 + 500 * rbelow(g, 4), 2048, 1, 1000);
    break;
  case 1:
    *q = lt_req(1000, 1024 * (1 + rbelow(g, 4)), 1, fr[rbelow(g, 5)]);
    break;
  case 2:
    *q = lt_req(2000 * (1 + rbelow(g, 3)), 4096, 2 + rbelow(g, 3), 1000);
    break;
  case 3:
    *q = lt_req(4000, 8192, 1 + rbelow(g, 4), fr[rbelow(g, 5)]);
    break;
  case 4:
    *q = lt_req(2000 * (1 + rbelow(g, 4)), 4096, 0, 0);
    break;
  default:
    *q = lt_req(1000, 2048, 1 + rbelow(g, 8), 1000);
    break;
  }
  if (q->gpu_count > 0 && rbelow(g, 6) == 0)
    q->model_mask = UINT64_C(1) << rbelow(g, 2);
  return q;
}

static void replay(const struct replay_cfg *cfg, long *made, long *refused) {
  struct rng g = {cfg->seed};
  lsched_registry *reg = NULL;
  OK(lsched_registry_create(&reg, NULL));
  OK(lsched_registry_add_builtins(reg));
  OK(lsched_registry_add(reg, &last_ops));
  lsched_cluster *c[2];
  lsched_policy *pol[2];
  int nodes = 6 + rbelow(&g, 30);
  c[0] = lt_new_cluster();
  c[1] = lt_new_cluster();
  for (int i = 0; i < nodes; i++) {
    int kind = rbelow(&g, 5);
    int64_t cpu = 16000 + 16000 * rbelow(&g, 3);
    for (int k = 0; k < 2; k++) {
      if (kind == 0)
        add_node(c[k], cpu, 65536, 4, V100, LSCHED_GPU_EXCLUSIVE);
      else if (kind == 1)
        add_node(c[k], cpu, 65536, 8, A100, LSCHED_GPU_EXCLUSIVE);
      else if (kind == 4)
        add_node(c[k], cpu, 32768, 0, -1, LSCHED_GPU_SHARED);
      else
        add_node(c[k], cpu, 65536, 4 + 4 * (kind == 3), A100,
                 LSCHED_GPU_SHARED);
    }
  }
  for (int k = 0; k < 2; k++)
    pol[k] = new_defrag(c[k], reg, cfg->base, k == 0);
  struct job *jobs = calloc(4096, sizeof *jobs);
  lsched_running *run = calloc(4096, sizeof *run);
  unsigned char *allowed = calloc((size_t)nodes, 1);
  MT_ASSERT(jobs && run && allowed);
  int njobs = 0;
  for (int step = 0; step < cfg->steps; step++) {
    int op = rbelow(&g, 100);
    if (op < 50 && njobs < 4096) { /* place a job */
      lsched_request q;
      shape(&g, &q);
      lsched_placement p[2];
      int rc0 = lsched_policy_place(pol[0], &q, &p[0]);
      int rc1 = lsched_policy_place(pol[1], &q, &p[1]);
      MT_EQ(rc0, rc1);
      if (rc0 != LSCHED_OK)
        continue;
      MT_ASSERT(same_placement(&p[0], &p[1]));
      OK(lsched_alloc(c[0], &p[0]));
      OK(lsched_alloc(c[1], &p[1]));
      struct job *j = &jobs[njobs++];
      j->r = q;
      j->p = p[0];
      int cs = rbelow(&g, 5);
      j->cost = cs == 0 ? 0 : 10.0 * cs;
      if (cfg->negative_costs && rbelow(&g, 8) == 0)
        j->cost = -5;
      j->moves = rbelow(&g, 4) == 0 ? 1 : 0;
    } else if (op < 68 && njobs > 0) { /* a job ends */
      int i = rbelow(&g, njobs);
      OK(lsched_release(c[0], &jobs[i].p));
      OK(lsched_release(c[1], &jobs[i].p));
      jobs[i] = jobs[--njobs];
    } else if (op < 96) { /* a job waits: plan */
      lsched_request w;
      shape(&g, &w);
      if (rbelow(&g, 5) == 0) { /* only some nodes allowed */
        for (int i = 0; i < nodes; i++)
          allowed[i] = (unsigned char)(rbelow(&g, 3) != 0);
        w.node_allowed = allowed;
        w.node_allowed_count = nodes;
      }
      for (int i = 0; i < njobs; i++) {
        run[i] = (lsched_running)LSCHED_RUNNING_INIT;
        run[i].id = (uint64_t)i;
        run[i].request = jobs[i].r;
        run[i].parts = &jobs[i].p;
        run[i].nparts = 1;
        run[i].move_cost_s = jobs[i].cost;
        run[i].moves = jobs[i].moves;
      }
      lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
      b.max_moves = 1 + rbelow(&g, 4);
      b.max_moves_per_job = 1 + rbelow(&g, 2);
      int wk = rbelow(&g, 4);
      b.expected_wait_s = wk == 0 ? 1e18 : wk == 1 ? 0 : 5.0 * rbelow(&g, 40);
      lsched_move mv[2][64];
      size_t n[2] = {0, 0};
      int rc[2];
      for (int k = 0; k < 2; k++)
        rc[k] = lsched_policy_plan_migrations(pol[k], &w, run, (size_t)njobs,
                                              &b, mv[k], 64, &n[k]);
      MT_EQ(rc[0], rc[1]);
      MT_EQ(n[0], n[1]);
      for (size_t m = 0; m < n[0]; m++) {
        MT_EQ(mv[0][m].index, mv[1][m].index);
        MT_ASSERT(same_placement(&mv[0][m].from, &mv[1][m].from));
        MT_ASSERT(same_placement(&mv[0][m].to, &mv[1][m].to));
      }
      same_clusters(c[0], c[1]); /* planning restored both */
      if (rc[0] == LSCHED_ENOFIT)
        (*refused)++;
      if (rc[0] != LSCHED_OK || n[0] == 0)
        continue;
      (*made)++;
      if (rbelow(&g, 10) < 3)
        continue;
      for (int k = 0; k < 2; k++) {
        for (size_t m = 0; m < n[k]; m++)
          OK(lsched_release(c[k], &mv[k][m].from));
        for (size_t m = 0; m < n[k]; m++)
          OK(lsched_alloc(c[k], &mv[k][m].to));
      }
      for (size_t m = 0; m < n[0]; m++) {
        struct job *j = &jobs[mv[0][m].index];
        j->p = mv[0][m].to;
        j->moves++;
      }
    } else if (op < 98) { /* a new visit order */
      int *order = malloc((size_t)nodes * sizeof *order);
      MT_ASSERT(order);
      for (int i = 0; i < nodes; i++)
        order[i] = i;
      for (int i = nodes - 1; i > 0; i--) {
        int k = rbelow(&g, i + 1), t = order[i];
        order[i] = order[k];
        order[k] = t;
      }
      OK(lsched_cluster_set_order(c[0], order, nodes));
      OK(lsched_cluster_set_order(c[1], order, nodes));
      free(order);
    } else { /* cordon or uncordon a node */
      int i = rbelow(&g, nodes);
      lsched_node_state st =
          rbelow(&g, 2) ? LSCHED_NODE_UP : LSCHED_NODE_CORDONED;
      OK(lsched_cluster_set_node_state(c[0], i, st));
      OK(lsched_cluster_set_node_state(c[1], i, st));
    }
    same_clusters(c[0], c[1]);
  }
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < njobs; i++)
      OK(lsched_release(c[k], &jobs[i].p));
    lsched_policy_destroy(pol[k]);
    lsched_cluster_destroy(c[k]);
  }
  free(jobs);
  free(run);
  free(allowed);
  lsched_registry_destroy(reg);
}

static void run_replays(const char *base, int negative, uint64_t seed0) {
  long made = 0, refused = 0;
  for (uint64_t s = 0; s < 8; s++) {
    struct replay_cfg cfg = {seed0 + 7919 * s + 1, base, 3000, negative};
    replay(&cfg, &made, &refused);
  }
  fprintf(stderr, "%s: %ld plans made, %ld refused\n", base, made, refused);
  /* Plans were found and refused: the replays compared real decisions. */
  MT_ASSERT_MSG(made >= 100, "only %ld plans made", made);
  MT_ASSERT_MSG(refused >= 100, "only %ld plans refused", refused);
}

static void test_replay_best_fit(void) { run_replays("best-fit", 0, 11); }
static void test_replay_first_fit(void) { run_replays("first-fit", 1, 23); }
static void test_replay_custom_base(void) { run_replays("last-node", 0, 37); }

int main(void) {
  mt_begin("test_defrag_index");
  MT_RUN(test_hand);
  MT_RUN(test_replay_best_fit);
  MT_RUN(test_replay_first_fit);
  MT_RUN(test_replay_custom_base);
  return mt_finish();
}
