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
 *
 * The indexed planner's heap and change log (session 26): test_index_log
 * (the log by hand), test_log_refresh (changes only the index sees, and a
 * log that lost them), and the big replays (60-99 nodes, a key kept for
 * many plans, bursts of index-only changes). Mutations, each failing the
 * test: in policies/defrag.c refresh ignoring the log's nodes
 * (`mark_dirty(s, n)` dropped) or its lost entries (`all = 1` dropped),
 * touch() marking nothing, unpark never unparking, may_beat or try_node
 * without the tie on position (`pos < p->best_pos`), classify keeping a
 * prefix one shorter or costs one higher than it computed, a full
 * refresh without its heapify.
 *
 * The key slots and defrag's own log (session 27): test_replay_keys (heads
 * drawn from a pool of keys, so keys return after changes; more keys than
 * slots; bursts that overrun the log). Mutations, each failing it: refresh
 * not replaying the log (`mark_dirty(s, s->log[...])` dropped), ignoring
 * its overrun, try_node leaving in_trial set (changes never logged again),
 * slot_switch without slot_save.
 *
 * The proof that two released jobs cannot both be re-placed (must_fail,
 * session 30): test_compete (its edges: the second job fits after the
 * first exactly, by CPU and by GPU share) and the replays. Mutations,
 * each failing one of them: may_fit_after's `reach - lost >= ` -> `>`,
 * its CPU test `<` -> `<=`, a GPU kept for the second job only when
 * strictly more than its share is left (`>= d` -> `> d`), every GPU the
 * first job takes lost (`lost = t->gpu_count`); must_fail not asking
 * whether the second job fits the planned node's room, nor the first, nor
 * whether both fit the same other node; fit_nodes' cache never expiring.
 * Its verdict kept across decisions (mf_holds): test_compete_kept (the
 * other node's room changes; the jobs come to fit a third node) and the
 * replays. Mutations, each failing one of them: mf_holds not asking
 * whether node mm changed (touched; test_compete_kept), nor whether r2's
 * nodes are the same, or always holding; classify not clearing the
 * verdict (the replays).
 */
#include "libtest.h"

#include <libsched/libsched.h>
#include <libsched/migrate.h>
#include <libsched/policy_sdk.h>

#include <math.h>
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

/* Running record k: request r on its one part *part, moved at cost. */
static lsched_running one_part(size_t k, lsched_request r,
                               lsched_placement *part, double cost) {
  lsched_running x = LSCHED_RUNNING_INIT;
  x.id = (uint64_t)k;
  x.request = r;
  x.parts = part;
  x.nparts = 1;
  x.move_cost_s = cost;
  return x;
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
  lsched_registry *reg = lt_builtins();
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
      run[k] = one_part((size_t)k, r, &held[k], cost[k]);
    }
    lsched_request w = lt_req(4000, 4000, 4, 1000);
    lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
    b.max_moves = 2;
    b.expected_wait_s = 100; /* budget: 100 s x 4 GPUs = 400 GPU-s */
    lsched_move mv[8];
    size_t n = 0;
    lsched_running_index *ix = NULL;
    OK(lsched_running_index_create(&ix, c));
    for (int k = 0; k < 6; k++)
      OK(lsched_running_index_set(ix, (size_t)k, &run[k]));
    OK(lsched_policy_plan_migrations_indexed(p, &w, ix, &b, mv, 8, &n));
    MT_EQ(n, 2);
    MT_EQ(mv[0].index, 0);
    MT_EQ(mv[1].index, 1);
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
    OK(lsched_running_index_set(ix, 0, &run[0]));
    OK(lsched_running_index_set(ix, 1, &run[1]));
    OK(lsched_policy_plan_migrations_indexed(p, &w, ix, &b, mv, 8, &n));
    MT_EQ(n, 2);
    MT_EQ(mv[0].index, 2);
    MT_EQ(mv[1].index, 3);
    lsched_running_index_destroy(ix);
    for (int k = 0; k < 6; k++)
      OK(lsched_release(c, &held[k]));
    lsched_policy_destroy(p);
    lsched_cluster_destroy(c);
  }
  lsched_registry_destroy(reg);
}

/* Two jobs that compete for the one node they fit (must_fail's case):
 * node 0 holds jobs 0 and 1 (half a GPU each, on GPU 0) and a dear
 * 3-GPU job; node 1 a dear 3-GPU job taking f1cpu of its 8,000 CPU milli,
 * and GPU 3 free. A 1-GPU job asking 4,000 CPU milli fits neither. Node
 * 0's plan moves jobs 0 and 1 (the waiting job then leaves node 0 no
 * GPU), both to node 1's GPU 3 if its CPU holds both. The plan of every
 * planner (scan, bucketed, indexed), or ENOFIT when want_plan is 0. */
static void compete_case(lsched_registry *reg, int64_t f1cpu, int want_plan) {
  for (int planner = 0; planner < 3; planner++) {
    lsched_cluster *c = lt_new_cluster();
    for (int i = 0; i < 2; i++)
      add_node(c, 8000, 65536, 4, A100, LSCHED_GPU_SHARED);
    lsched_policy *p = new_defrag(c, reg, "best-fit", planner > 0);
    const lsched_request rq[4] = {
        lt_req(1000, 1000, 1, 500), lt_req(1000, 1000, 1, 500),
        lt_req(2000, 1000, 3, 1000), lt_req(f1cpu, 1000, 3, 1000)};
    static const double cost[4] = {1, 1, 1000, 1000};
    lsched_placement held[4];
    lsched_running run[4];
    lsched_running_index *ix = NULL;
    OK(lsched_running_index_create(&ix, c));
    for (int k = 0; k < 4; k++) {
      OK(lsched_pick_gpus(c, k < 3 ? 0 : 1, &rq[k], LSCHED_PICK_LOWEST,
                          &held[k]));
      OK(lsched_alloc(c, &held[k]));
      run[k] = one_part((size_t)k, rq[k], &held[k], cost[k]);
      OK(lsched_running_index_set(ix, (size_t)k, &run[k]));
    }
    MT_EQ_U(held[0].gpu_mask | held[1].gpu_mask, 1);
    MT_EQ_U(held[3].gpu_mask, 7);
    lsched_request w = lt_req(4000, 1000, 1, 1000);
    lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
    b.max_moves = 2;
    b.expected_wait_s = 100;
    lsched_move mv[4];
    size_t n = 0;
    int rc =
        planner == 2
            ? lsched_policy_plan_migrations_indexed(p, &w, ix, &b, mv, 4, &n)
            : lsched_policy_plan_migrations(p, &w, run, 4, &b, mv, 4, &n);
    if (want_plan) {
      OK(rc);
      MT_EQ(n, 2);
      for (size_t k = 0; k < 2; k++) {
        MT_EQ(mv[k].index, k);
        MT_EQ(mv[k].to.node, 1);
        MT_EQ_U(mv[k].to.gpu_mask, 8);
      }
    } else {
      MT_EQ(rc, LSCHED_ENOFIT);
    }
    lsched_running_index_destroy(ix);
    for (int k = 0; k < 4; k++)
      OK(lsched_release(c, &held[k]));
    lsched_policy_destroy(p);
    lsched_cluster_destroy(c);
  }
}

/* The re-placement proof at its edges: jobs 0 and 1 fit only node 1, and
 * fit together there exactly (CPU 2,000 free; GPU 3's 1,000 milli hold
 * both halves): a plan; with 1,999 free, or 1,000 (one job only), none. */
static void test_compete(void) {
  lsched_registry *reg = lt_builtins();
  compete_case(reg, 6000, 1);
  compete_case(reg, 6001, 0);
  compete_case(reg, 7000, 0);
  lsched_registry_destroy(reg);
}

/* Running job k (held[k]) anew with cpu CPU milli, on the same GPUs. */
static void set_cpu(lsched_cluster *c, lsched_running_index *ix,
                    lsched_running *run, lsched_placement *held, size_t k,
                    int64_t cpu) {
  OK(lsched_release(c, &held[k]));
  held[k].cpu_milli = run[k].request.cpu_milli = cpu;
  OK(lsched_alloc(c, &held[k]));
  OK(lsched_running_index_set(ix, k, &run[k]));
}

/* must_fail's verdict kept across decisions (mf_holds): compete_case's
 * nodes 0 and 1 (node 1's dear job on 6,001 CPU milli: no plan, the
 * verdict kept for node 0) and a node 2 whose free GPU 3 a filler holds.
 * The verdict must go when node 1's room changes with the nodes the jobs
 * fit (its dear job on 6,000: a plan), and when the jobs come to fit
 * another node (node 2's filler released: a plan). */
static void test_compete_kept(void) {
  lsched_registry *reg = lt_builtins();
  lsched_cluster *c = lt_new_cluster();
  for (int i = 0; i < 3; i++)
    add_node(c, 8000, 65536, 4, A100, LSCHED_GPU_SHARED);
  lsched_policy *p = new_defrag(c, reg, "best-fit", 1);
  lsched_request rq[6] = {
      lt_req(1000, 1000, 1, 500),  lt_req(1000, 1000, 1, 500),
      lt_req(2000, 1000, 3, 1000), lt_req(6001, 1000, 3, 1000),
      lt_req(6500, 1000, 3, 1000), lt_req(500, 1000, 1, 1000)};
  static const double cost[4] = {1, 1, 1000, 1000};
  static const int node_of[6] = {0, 0, 0, 1, 2, 2};
  lsched_placement held[6];
  lsched_running run[4];
  lsched_running_index *ix = NULL;
  OK(lsched_running_index_create(&ix, c));
  for (int k = 0; k < 6; k++) {
    OK(lsched_pick_gpus(c, node_of[k], &rq[k], LSCHED_PICK_LOWEST, &held[k]));
    OK(lsched_alloc(c, &held[k]));
    if (k >= 4) /* node 2's fillers: not movable */
      continue;
    run[k] = one_part((size_t)k, rq[k], &held[k], cost[k]);
    OK(lsched_running_index_set(ix, (size_t)k, &run[k]));
  }
  MT_EQ_U(held[5].gpu_mask, 8);
  lsched_request w = lt_req(4000, 1000, 1, 1000);
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  b.max_moves = 2;
  b.expected_wait_s = 100;
  lsched_move mv[4];
  size_t n = 0;
  for (int phase = 0; phase < 2; phase++) {
    for (int t = 0; t < 2; t++) /* proven, then kept */
      MT_EQ(lsched_policy_plan_migrations_indexed(p, &w, ix, &b, mv, 4, &n),
            LSCHED_ENOFIT);
    if (phase == 0) /* node 1's dear job on 6,000, on the same GPUs */
      set_cpu(c, ix, run, held, 3, 6000);
    else /* node 2's GPU 3 free: jobs 0 and 1 fit there too */
      OK(lsched_release(c, &held[5]));
    OK(lsched_policy_plan_migrations_indexed(p, &w, ix, &b, mv, 4, &n));
    MT_EQ(n, 2);
    MT_EQ(mv[0].index, 0);
    MT_EQ(mv[1].index, 1);
    if (phase == 0) {
      MT_EQ(mv[0].to.node, 1);
      MT_EQ(mv[1].to.node, 1);
      set_cpu(c, ix, run, held, 3, 6001); /* no plan again */
    } else {
      MT_ASSERT(mv[0].to.node != mv[1].to.node);
    }
  }
  lsched_running_index_destroy(ix);
  for (int k = 0; k < 5; k++)
    OK(lsched_release(c, &held[k]));
  lsched_policy_destroy(p);
  lsched_cluster_destroy(c);
  lsched_registry_destroy(reg);
}

/* A version-3 planner (no indexed hook): records what it was given. */
static const lsched_running *seen_run;
static size_t seen_n;
static int record_plan(void *state, lsched_cluster *c, const lsched_request *w,
                       const lsched_running *run, size_t nrun,
                       const lsched_defrag_budget *b, lsched_move *out,
                       size_t max_out, size_t *nout) {
  (void)state, (void)c, (void)w, (void)b, (void)out, (void)max_out;
  seen_run = run;
  seen_n = nrun;
  *nout = 0;
  return LSCHED_OK;
}

static const lsched_policy_ops plan3_ops = {
    .version = 3,
    .name = "plan3",
    .description = "test policy: a version-3 planner",
    .place = last_place,
    .plan_migrations = record_plan,
};

/* The running index by hand: positions, buckets by (cost x GPUs,
 * position), clearing, refused records, and the call on a policy without
 * the indexed hook (the array of entries). */
static void test_index_api(void) {
  lsched_cluster *c = lt_new_cluster();
  add_node(c, 32000, 65536, 4, A100, LSCHED_GPU_SHARED);
  add_node(c, 32000, 65536, 4, A100, LSCHED_GPU_SHARED);
  lsched_running_index *ix = NULL;
  OK(lsched_running_index_create(&ix, c));
  lsched_request r1 = lt_req(1000, 1000, 1, 1000);
  lsched_placement p[4];
  for (int k = 0; k < 4; k++) {
    p[k] = (lsched_placement)LSCHED_PLACEMENT_INIT;
    p[k].node = k < 2 ? 0 : 1;
    p[k].gpu_count = k == 2 ? 2 : 1;
    p[k].gpu_milli = 1000;
    p[k].gpu_mask = UINT64_C(1) << k;
  }
  /* Costs x GPUs: pos 0: 20 x 1 = 20, pos 1: 10 x 1 = 10 (node 0);
   * pos 2: 5 x 2 = 10 (node 1); pos 3: a gang (two parts, no bucket). */
  static const double cost[3] = {20, 10, 5};
  for (int k = 0; k < 3; k++) {
    lsched_running r = LSCHED_RUNNING_INIT;
    r.id = 100 + (uint64_t)k;
    r.request = r1;
    r.parts = &p[k];
    r.nparts = 1;
    r.move_cost_s = cost[k];
    OK(lsched_running_index_set(ix, (size_t)k, &r));
  }
  lsched_running gang = LSCHED_RUNNING_INIT;
  gang.id = 103;
  gang.parts = &p[2];
  gang.nparts = 2;
  OK(lsched_running_index_set(ix, 3, &gang));
  size_t n = 0, k = 0;
  const lsched_running *e = lsched_running_index_entries(ix, &n);
  MT_EQ(n, 4);
  MT_EQ_U(e[3].id, 103);
  MT_EQ(e[3].nparts, 2);
  MT_ASSERT(e[3].parts != &p[2] && same_placement(&e[3].parts[1], &p[3]));
  const size_t *b = lsched_running_index_node(ix, 0, &k);
  MT_EQ(k, 2);
  MT_EQ(b[0], 1); /* 10 before 20 */
  MT_EQ(b[1], 0);
  b = lsched_running_index_node(ix, 1, &k);
  MT_EQ(k, 1);
  MT_EQ(b[0], 2);
  /* Position 1 now costs 20 as well: ties go by position. */
  lsched_running r = LSCHED_RUNNING_INIT;
  r.id = 101;
  r.request = r1;
  r.parts = &p[1];
  r.nparts = 1;
  r.move_cost_s = 20;
  OK(lsched_running_index_set(ix, 1, &r));
  b = lsched_running_index_node(ix, 0, &k);
  MT_EQ(k, 2);
  MT_EQ(b[0], 0);
  MT_EQ(b[1], 1);
  /* Refused records leave the position as it was. */
  r.move_cost_s = NAN;
  MT_EQ(lsched_running_index_set(ix, 1, &r), LSCHED_EINVAL);
  r.move_cost_s = INFINITY;
  r.parts = &p[1];
  lsched_placement zero = p[1];
  zero.gpu_count = 0;
  zero.gpu_milli = 0;
  r.parts = &zero; /* infinity x 0 GPUs */
  MT_EQ(lsched_running_index_set(ix, 1, &r), LSCHED_EINVAL);
  r.move_cost_s = 1;
  r.parts = NULL;
  MT_EQ(lsched_running_index_set(ix, 1, &r), LSCHED_EINVAL);
  r.nparts = -1;
  MT_EQ(lsched_running_index_set(ix, 1, &r), LSCHED_EINVAL);
  MT_EQ_U(lsched_running_index_entries(ix, &n)[1].id, 101);
  /* A node the cluster does not have: kept, in no bucket. */
  lsched_placement far = p[0];
  far.node = 7;
  r.nparts = 1;
  r.parts = &far;
  r.id = 9;
  OK(lsched_running_index_set(ix, 1000, &r));
  e = lsched_running_index_entries(ix, &n);
  MT_EQ(n, 1001);
  MT_EQ(e[500].nparts, 0);
  MT_EQ(e[1000].parts[0].node, 7);
  MT_EQ_U(e[0].id, 100); /* kept across the growth */
  MT_ASSERT(same_placement(e[0].parts, &p[0]));
  MT_ASSERT(lsched_running_index_node(ix, 7, &k) == NULL && k == 0);
  /* Clearing the last positions shortens the array. */
  OK(lsched_running_index_clear(ix, 1000));
  OK(lsched_running_index_clear(ix, 3));
  lsched_running_index_entries(ix, &n);
  MT_EQ(n, 3);
  OK(lsched_running_index_clear(ix, 2));
  MT_ASSERT(lsched_running_index_node(ix, 1, &k) == NULL && k == 0);
  OK(lsched_running_index_clear(ix, 2)); /* already empty */
  MT_EQ(lsched_running_index_set(NULL, 0, &r), LSCHED_EINVAL);
  MT_EQ(lsched_running_index_create(NULL, c), LSCHED_EINVAL);
  /* A planner without the indexed hook gets the entries as an array; a
   * policy that does not plan says so. */
  lsched_registry *reg = lt_builtins();
  OK(lsched_registry_add(reg, &plan3_ops));
  lsched_policy *pol = NULL;
  OK(lsched_policy_create_from(&pol, c, reg, "plan3"));
  lsched_request w = lt_req(1000, 1000, 4, 1000);
  lsched_defrag_budget bud = LSCHED_DEFRAG_BUDGET_INIT;
  bud.expected_wait_s = 10;
  lsched_move mv[4];
  size_t nm = 9;
  OK(lsched_policy_plan_migrations_indexed(pol, &w, ix, &bud, mv, 4, &nm));
  MT_EQ(nm, 0);
  MT_ASSERT(seen_run == lsched_running_index_entries(ix, &n));
  MT_EQ(seen_n, 2);
  lsched_policy_destroy(pol);
  OK(lsched_policy_create_from(&pol, c, reg, "best-fit"));
  MT_EQ(lsched_policy_plan_migrations_indexed(pol, &w, ix, &bud, mv, 4, &nm),
        LSCHED_ENOENT);
  lsched_policy_destroy(pol);
  OK(lsched_policy_create_from(&pol, c, reg, "defrag"));
  bud.version = 99;
  MT_EQ(lsched_policy_plan_migrations_indexed(pol, &w, ix, &bud, mv, 4, &nm),
        LSCHED_EVERSION);
  MT_EQ(lsched_policy_plan_migrations_indexed(pol, &w, NULL, &bud, mv, 4, &nm),
        LSCHED_EINVAL);
  lsched_policy_destroy(pol);
  lsched_registry_destroy(reg);
  lsched_running_index_destroy(ix);
  lsched_cluster_destroy(c);
}

/* One job of the memo cases: held on node `node`, GPUs `mask`. */
static lsched_running memo_job(lsched_cluster *c, lsched_placement *p,
                               int node, uint64_t mask, int moves) {
  lsched_request r = lt_req(1000, 1000, __builtin_popcountll(mask), 1000);
  *p = (lsched_placement)LSCHED_PLACEMENT_INIT;
  p->node = node;
  p->gpu_count = r.gpu_count;
  p->gpu_milli = 1000;
  p->gpu_mask = mask;
  p->cpu_milli = r.cpu_milli;
  p->memory_mib = r.memory_mib;
  OK(lsched_alloc(c, p));
  lsched_running x = LSCHED_RUNNING_INIT;
  x.request = r;
  x.parts = p;
  x.nparts = 1;
  x.move_cost_s = 1;
  x.moves = moves;
  return x;
}

/* The indexed planner's memory of ruled-out nodes, by hand: node 0 has 4
 * A100s held by movable 2-GPU jobs A and B (GPUs 0-1, 2-3), node 1 8 V100s
 * held by unmovable jobs C (7 GPUs) and D (1 GPU); a 4-GPU job that only
 * takes A100s waits.
 * - Node 0 cordoned: no plan. Uncordoned (a state change alone: no
 *   allocation, no change of the index): A and B could go nowhere (node 1
 *   is full): no plan, node 0 ruled out because 2-GPU jobs fit no node;
 *   asked again, the same answer (from the memory).
 * - C ends (node 1 changes, node 0 does not): a 2-GPU job fits node 1
 *   now, so node 0 is tried again: A and B move to node 1. */
static void test_memo(void) {
  lsched_registry *reg = lt_builtins();
  lsched_cluster *c = lt_new_cluster();
  add_node(c, 32000, 65536, 4, A100, LSCHED_GPU_SHARED);
  add_node(c, 32000, 65536, 8, V100, LSCHED_GPU_SHARED);
  lsched_policy *p = new_defrag(c, reg, "best-fit", 1);
  lsched_placement held[4];
  lsched_running run[4];
  run[0] = memo_job(c, &held[0], 0, 0x3, 0);  /* A */
  run[1] = memo_job(c, &held[1], 0, 0xC, 0);  /* B */
  run[2] = memo_job(c, &held[2], 1, 0x7F, 1); /* C */
  run[3] = memo_job(c, &held[3], 1, 0x80, 1); /* D */
  lsched_running_index *ix = NULL;
  OK(lsched_running_index_create(&ix, c));
  for (int k = 0; k < 4; k++)
    OK(lsched_running_index_set(ix, (size_t)k, &run[k]));
  lsched_request w = lt_req(1000, 1000, 4, 1000);
  w.model_mask = UINT64_C(1) << A100;
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  b.expected_wait_s = 100;
  lsched_move mv[4];
  size_t n = 0;
  OK(lsched_cluster_set_node_state(c, 0, LSCHED_NODE_CORDONED));
  MT_EQ(lsched_policy_plan_migrations_indexed(p, &w, ix, &b, mv, 4, &n),
        LSCHED_ENOFIT);
  OK(lsched_cluster_set_node_state(c, 0, LSCHED_NODE_UP));
  MT_EQ(lsched_policy_plan_migrations_indexed(p, &w, ix, &b, mv, 4, &n),
        LSCHED_ENOFIT);
  /* No plan again (node 0 now from the memory). */
  MT_EQ(lsched_policy_plan_migrations_indexed(p, &w, ix, &b, mv, 4, &n),
        LSCHED_ENOFIT);
  /* C ends: the last position takes its place, as in the engine. */
  OK(lsched_release(c, &held[2]));
  held[2] = held[3];
  run[2] = run[3];
  run[2].parts = &held[2];
  OK(lsched_running_index_set(ix, 2, &run[2]));
  OK(lsched_running_index_clear(ix, 3));
  OK(lsched_policy_plan_migrations_indexed(p, &w, ix, &b, mv, 4, &n));
  MT_EQ(n, 2);
  MT_EQ(mv[0].index, 0);
  MT_EQ(mv[1].index, 1);
  MT_EQ(mv[0].to.node, 1);
  MT_EQ(mv[1].to.node, 1);
  /* The reference planner over the same jobs agrees. */
  lsched_policy *ref = new_defrag(c, reg, "best-fit", 0);
  lsched_move rv[4];
  size_t rn = 0;
  OK(lsched_policy_plan_migrations(ref, &w, run, 3, &b, rv, 4, &rn));
  MT_EQ(rn, 2);
  MT_EQ(rv[0].index, 0);
  MT_EQ(rv[1].index, 1);
  for (int k = 0; k < 3; k++)
    OK(lsched_release(c, &held[k]));
  lsched_policy_destroy(ref);
  lsched_policy_destroy(p);
  lsched_running_index_destroy(ix);
  lsched_cluster_destroy(c);
  lsched_registry_destroy(reg);
}

/* The index's change log and the order stamp, by hand: two nodes, jobs
 * set, set again unchanged (no entry), changed (two entries: out of the
 * bucket and in again), cleared; entries beyond the ring's 1024 lost; a
 * ring that grows with the node count loses what it held. */
static void test_index_log(void) {
  lsched_cluster *c = lt_new_cluster();
  add_node(c, 32000, 65536, 4, A100, LSCHED_GPU_SHARED);
  add_node(c, 32000, 65536, 4, A100, LSCHED_GPU_SHARED);
  lsched_running_index *ix = NULL;
  OK(lsched_running_index_create(&ix, c));
  MT_EQ_U(lsched_running_index_seq(ix), 0);
  MT_EQ(lsched_running_index_changed_node(ix, 0), -1);
  lsched_placement p[2];
  lsched_running r[2];
  for (int k = 0; k < 2; k++) {
    p[k] = (lsched_placement)LSCHED_PLACEMENT_INIT;
    p[k].node = k;
    p[k].gpu_count = 1;
    p[k].gpu_milli = 1000;
    p[k].gpu_mask = 1;
    r[k] = one_part((size_t)k, lt_req(1000, 1000, 1, 1000), &p[k], 5);
  }
  OK(lsched_running_index_set(ix, 0, &r[0])); /* change 0: node 0 */
  OK(lsched_running_index_set(ix, 1, &r[1])); /* change 1: node 1 */
  MT_EQ_U(lsched_running_index_seq(ix), 2);
  MT_EQ(lsched_running_index_changed_node(ix, 0), 0);
  MT_EQ(lsched_running_index_changed_node(ix, 1), 1);
  MT_EQ(lsched_running_index_changed_node(ix, 2), -1); /* not yet */
  int ns = 0;
  uint64_t st0 = lsched_running_index_stamps(ix, &ns)[0];
  OK(lsched_running_index_set(ix, 0, &r[0])); /* the same: nothing */
  MT_EQ_U(lsched_running_index_seq(ix), 2);
  MT_EQ_U(lsched_running_index_stamps(ix, &ns)[0], st0);
  r[0].moves = 1; /* changes 2 and 3: node 0 out and in */
  OK(lsched_running_index_set(ix, 0, &r[0]));
  MT_EQ_U(lsched_running_index_seq(ix), 4);
  MT_EQ(lsched_running_index_changed_node(ix, 2), 0);
  MT_EQ(lsched_running_index_changed_node(ix, 3), 0);
  MT_EQ_U(lsched_running_index_stamps(ix, &ns)[0], st0 + 2);
  OK(lsched_running_index_clear(ix, 1)); /* change 4: node 1 */
  MT_EQ_U(lsched_running_index_seq(ix), 5);
  MT_EQ(lsched_running_index_changed_node(ix, 4), 1);
  /* Node 1's job set 600 times, its move count alternating: 1 change
   * (into the empty position), then 2 each: 5 + 1 + 599 x 2 = 1,204 in
   * all; the ring keeps the last 1,024 (changes 180 .. 1203). */
  for (int t = 0; t < 600; t++) {
    r[1].moves = t % 2;
    OK(lsched_running_index_set(ix, 1, &r[1]));
  }
  MT_EQ_U(lsched_running_index_seq(ix), 1204);
  MT_EQ(lsched_running_index_changed_node(ix, 0), -1);
  MT_EQ(lsched_running_index_changed_node(ix, 179), -1);
  MT_EQ(lsched_running_index_changed_node(ix, 180), 1);
  MT_EQ(lsched_running_index_changed_node(ix, 1203), 1);
  /* 600 new nodes, and the job moves to the last: change 1204 (out of
   * node 1) goes to the old ring, which then grows to 2,048 (2 x 602
   * nodes) empty, and change 1205 (into node 601) is all it holds. */
  for (int k = 0; k < 600; k++)
    add_node(c, 32000, 65536, 4, A100, LSCHED_GPU_SHARED);
  p[1].node = 601;
  OK(lsched_running_index_set(ix, 1, &r[1]));
  MT_EQ_U(lsched_running_index_seq(ix), 1206);
  MT_EQ(lsched_running_index_changed_node(ix, 1204), -1);
  MT_EQ(lsched_running_index_changed_node(ix, 1205), 601);
  MT_EQ_U(lsched_running_index_seq(NULL), 0);
  MT_EQ(lsched_running_index_changed_node(NULL, 0), -1);
  /* The order stamp moves with every new visit order. */
  uint64_t o = lsched_cluster_order_stamp(c);
  int nn = lsched_cluster_node_count(c);
  int *order = malloc((size_t)nn * sizeof *order);
  MT_ASSERT(order);
  for (int k = 0; k < nn; k++)
    order[k] = nn - 1 - k;
  OK(lsched_cluster_set_order(c, order, nn));
  MT_ASSERT(lsched_cluster_order_stamp(c) != o);
  MT_EQ_U(lsched_cluster_order_stamp(NULL), 0);
  free(order);
  lsched_running_index_destroy(ix);
  lsched_cluster_destroy(c);
}

/* The indexed planner follows changes the cluster does not see (move
 * counts, in the index alone) through the index's log, and looks at every
 * node when the log lost them: node 0 (4 A100s) holds 2-GPU jobs A and B,
 * node 1 (8 V100s) job C on its last GPU; a 4-GPU A100 job waits (budget:
 * one move per job).
 * - A and B moved once already: no plan. Their counts reset (index
 *   only): A and B move to node 1. Moved once again: no plan.
 * - Their counts reset, then C's set 600 times with alternating counts
 *   (1,200 log entries: those of A and B are lost): the plan again. */
static void test_log_refresh(void) {
  lsched_registry *reg = lt_builtins();
  lsched_cluster *c = lt_new_cluster();
  add_node(c, 32000, 65536, 4, A100, LSCHED_GPU_SHARED);
  add_node(c, 32000, 65536, 8, V100, LSCHED_GPU_SHARED);
  lsched_policy *p = new_defrag(c, reg, "best-fit", 1);
  lsched_placement held[3];
  lsched_running run[3];
  run[0] = memo_job(c, &held[0], 0, 0x3, 1);  /* A */
  run[1] = memo_job(c, &held[1], 0, 0xC, 1);  /* B */
  run[2] = memo_job(c, &held[2], 1, 0x80, 0); /* C */
  lsched_running_index *ix = NULL;
  OK(lsched_running_index_create(&ix, c));
  for (int k = 0; k < 3; k++)
    OK(lsched_running_index_set(ix, (size_t)k, &run[k]));
  lsched_request w = lt_req(1000, 1000, 4, 1000);
  w.model_mask = UINT64_C(1) << A100;
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  b.expected_wait_s = 100;
  lsched_move mv[4];
  size_t n = 0;
  for (int phase = 0; phase < 2; phase++) {
    MT_EQ(lsched_policy_plan_migrations_indexed(p, &w, ix, &b, mv, 4, &n),
          LSCHED_ENOFIT);
    for (int k = 0; k < 2; k++) {
      run[k].moves = 0;
      OK(lsched_running_index_set(ix, (size_t)k, &run[k]));
    }
    for (int t = 0; phase == 1 && t < 600; t++) {
      run[2].moves = 1 - t % 2;
      OK(lsched_running_index_set(ix, 2, &run[2]));
    }
    if (phase == 1) /* A's and B's entries are gone */
      MT_EQ(lsched_running_index_changed_node(ix, 7), -1);
    OK(lsched_policy_plan_migrations_indexed(p, &w, ix, &b, mv, 4, &n));
    MT_EQ(n, 2);
    MT_EQ(mv[0].index, 0);
    MT_EQ(mv[1].index, 1);
    MT_EQ(mv[0].to.node, 1);
    MT_EQ(mv[1].to.node, 1);
    for (int k = 0; k < 2; k++) {
      run[k].moves = 1;
      OK(lsched_running_index_set(ix, (size_t)k, &run[k]));
    }
  }
  for (int k = 0; k < 3; k++)
    OK(lsched_release(c, &held[k]));
  lsched_policy_destroy(p);
  lsched_running_index_destroy(ix);
  lsched_cluster_destroy(c);
  lsched_registry_destroy(reg);
}

struct job {
  lsched_request r;
  lsched_placement p[2]; /* p[0] only, or a gang's two parts */
  int nparts;
  double cost;
  int moves;
};

struct replay_cfg {
  uint64_t seed;
  const char *base;
  int steps;
  int negative_costs;
  int mig;   /* MIG nodes (dynamic A100) and MIG requests */
  int pools; /* two hosts composing from one pool of 16 GPUs */
  int big;   /* 60-99 nodes, and bursts of index changes that overrun
                the index's change log */
  int keys;  /* heads taken from a pool of `keys` waiting jobs and budgets
                (more than the planner's 8 key slots when 10: evictions),
                so that keys return with changes in between; and bursts
                of placements and releases that overrun defrag's own log */
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

/* A MIG node (dynamic A100s) or a pool host: same spec on both clusters. */
static void add_spec(lsched_cluster *c, int gpus, lsched_gpu_mode mode) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 64000;
  s.memory_mib = 262144;
  s.gpu_count = gpus;
  s.gpu_model = A100;
  s.gpu_mode = mode;
  s.mig_dynamic = mode == LSCHED_GPU_MIG;
  OK(lsched_cluster_add_node(c, &s, NULL));
}

/* The planner's record of job j (its position's). */
static lsched_running record(const struct job *j, uint64_t id) {
  lsched_running r = LSCHED_RUNNING_INIT;
  r.id = id;
  r.request = j->r;
  r.parts = j->p;
  r.nparts = j->nparts;
  r.move_cost_s = j->cost;
  r.moves = j->moves;
  return r;
}

/* Position i of ix now holds job j (ids follow the positions). */
static void index_put(lsched_running_index *ix, size_t i,
                      const struct job *j) {
  lsched_running r = record(j, (uint64_t)i);
  OK(lsched_running_index_set(ix, i, &r));
}

/* The index holds exactly run[0 .. n), and every node's bucket is its
 * one-part jobs by (cost, position). */
static void same_index(const lsched_running_index *ix,
                       const lsched_running *run, size_t n, int nodes) {
  size_t m = 0;
  const lsched_running *x = lsched_running_index_entries(ix, &m);
  MT_EQ(m, n);
  size_t bucketed = 0;
  for (size_t i = 0; i < n; i++) {
    MT_EQ_U(x[i].id, run[i].id);
    MT_EQ(x[i].nparts, run[i].nparts);
    MT_EQ(x[i].moves, run[i].moves);
    MT_ASSERT(x[i].move_cost_s == run[i].move_cost_s);
    for (int k = 0; k < run[i].nparts; k++)
      MT_ASSERT(same_placement(&x[i].parts[k], &run[i].parts[k]));
    bucketed += run[i].nparts == 1;
  }
  size_t seen = 0;
  for (int nd = 0; nd < nodes; nd++) {
    size_t k = 0;
    const size_t *b = lsched_running_index_node(ix, nd, &k);
    for (size_t t = 0; t < k; t++) {
      const lsched_running *r = &run[b[t]];
      MT_EQ(r->nparts, 1);
      MT_EQ(r->parts[0].node, nd);
      if (t > 0) {
        const lsched_running *q = &run[b[t - 1]];
        double cq = q->move_cost_s * q->parts[0].gpu_count *
                    q->parts[0].gpu_milli / 1000.0;
        double cr = r->move_cost_s * r->parts[0].gpu_count *
                    r->parts[0].gpu_milli / 1000.0;
        MT_ASSERT(cq < cr || (cq == cr && b[t - 1] < b[t]));
      }
    }
    seen += k;
  }
  MT_EQ(seen, bucketed);
}

/* Plans for w four ways, which must all agree: pol[0] (bucketed) and
 * pol[1] (reference scan) over the array, pol[0] (indexed planner) and
 * pol[1] (scan over the index's entries) over the index. Returns the
 * common code; mv/n get pol[0]'s indexed answer. */
static int plan4(lsched_policy *pol[2], lsched_cluster *c[2],
                 const lsched_request *w, const lsched_running *run,
                 size_t nrun,
                 const lsched_running_index *ix, const lsched_defrag_budget *b,
                 lsched_move *out, size_t *nout) {
  lsched_move mv[4][64];
  size_t n[4] = {0, 0, 0, 0};
  int rc[4];
  for (int k = 0; k < 2; k++) {
    rc[k] = lsched_policy_plan_migrations(pol[k], w, run, nrun, b, mv[k], 64,
                                          &n[k]);
    rc[2 + k] = lsched_policy_plan_migrations_indexed(pol[k], w, ix, b,
                                                      mv[2 + k], 64, &n[2 + k]);
  }
  for (int k = 1; k < 4; k++) {
    MT_EQ(rc[k], rc[0]);
    MT_EQ(n[k], n[0]);
    for (size_t m = 0; m < n[0]; m++) {
      MT_EQ(mv[k][m].index, mv[0][m].index);
      MT_ASSERT(same_placement(&mv[k][m].from, &mv[0][m].from));
      MT_ASSERT(same_placement(&mv[k][m].to, &mv[0][m].to));
    }
  }
  same_clusters(c[0], c[1]); /* planning restored both */
  memcpy(out, mv[2], n[2] * sizeof *out);
  *nout = n[2];
  return rc[0];
}

/* The replay's waiting job: shape(), or on a MIG cluster sometimes a MIG
 * instance. */
static void waiting_shape(struct rng *g, const struct replay_cfg *cfg,
                          lsched_request *q) {
  shape(g, q);
  if (cfg->mig && rbelow(g, 2) == 0) {
    *q = lt_req(1000, 2048, 1, 0);
    q->mig_kind = 1 + rbelow(g, 5);
  }
}

/* What the replays exercised beyond plans made and refused. */
static long gangs_placed, mig_plans;

static void replay(const struct replay_cfg *cfg, long *made, long *refused) {
  struct rng g = {cfg->seed};
  lsched_registry *reg = lt_builtins();
  OK(lsched_registry_add(reg, &last_ops));
  lsched_cluster *c[2];
  lsched_policy *pol[2];
  int nodes = cfg->big ? 60 + rbelow(&g, 40) : 6 + rbelow(&g, 30);
  c[0] = lt_new_cluster();
  c[1] = lt_new_cluster();
  for (int i = 0; i < nodes; i++) {
    int kind = rbelow(&g, 5 + cfg->mig);
    int64_t cpu = 16000 + 16000 * rbelow(&g, 3);
    for (int k = 0; k < 2; k++) {
      if (kind == 0)
        add_node(c[k], cpu, 65536, 4, V100, LSCHED_GPU_EXCLUSIVE);
      else if (kind == 1)
        add_node(c[k], cpu, 65536, 8, A100, LSCHED_GPU_EXCLUSIVE);
      else if (kind == 4)
        add_node(c[k], cpu, 32768, 0, -1, LSCHED_GPU_SHARED);
      else if (kind == 5)
        add_spec(c[k], 4, LSCHED_GPU_MIG);
      else
        add_node(c[k], cpu, 65536, 4 + 4 * (kind == 3), A100,
                 LSCHED_GPU_SHARED);
    }
  }
  if (cfg->pools) { /* two hosts of 2 local GPUs + 8 pool slots */
    for (int k = 0; k < 2; k++) {
      int hosts[2] = {nodes, nodes + 1};
      add_spec(c[k], 2 + 8, LSCHED_GPU_SHARED);
      add_spec(c[k], 2 + 8, LSCHED_GPU_SHARED);
      lsched_pool_spec ps = LSCHED_POOL_SPEC_INIT;
      ps.gpus = 16;
      ps.max_per_host = 8;
      ps.hosts = hosts;
      ps.nhosts = 2;
      OK(lsched_cluster_add_pool(c[k], &ps, NULL));
    }
    nodes += 2;
  }
  for (int k = 0; k < 2; k++)
    pol[k] = new_defrag(c[k], reg, cfg->base, k == 0);
  lsched_running_index *ix = NULL;
  OK(lsched_running_index_create(&ix, c[0]));
  struct job *jobs = calloc(4096, sizeof *jobs);
  lsched_running *run = calloc(4096, sizeof *run);
  unsigned char *allowed = calloc((size_t)nodes, 1);
  MT_ASSERT(jobs && run && allowed);
  int njobs = 0, sticky = 0;
  lsched_request w = LSCHED_REQUEST_INIT;
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  /* The keys mode's pool of heads (no node_allowed lists: those get no
   * key of their own in the planner's shape table). */
  lsched_request kw[10];
  lsched_defrag_budget kb[10];
  for (int i = 0; i < cfg->keys; i++) {
    waiting_shape(&g, cfg, &kw[i]);
    kb[i] = (lsched_defrag_budget)LSCHED_DEFRAG_BUDGET_INIT;
    kb[i].max_moves = 1 + rbelow(&g, 4);
    kb[i].max_moves_per_job = 1 + rbelow(&g, 2);
  }
  for (int step = 0; step < cfg->steps; step++) {
    int op = rbelow(&g, 100);
    if (cfg->keys && op >= 92 && op < 94 && rbelow(&g, 8) == 0) {
      /* A burst of 600 placements each released at once (1,200 changes:
       * more than defrag's log of 1,024 keeps, so every key but the next
       * one's misses some: each must then look at every node). */
      lsched_request q = lt_req(1000, 1024, 1, 250);
      for (int t = 0; t < 600; t++) {
        lsched_placement pl;
        if (lsched_policy_place(pol[0], &q, &pl) != LSCHED_OK)
          break;
        for (int k = 0; k < 2; k++) {
          OK(lsched_alloc(c[k], &pl));
          OK(lsched_release(c[k], &pl));
        }
      }
      continue;
    }
    if (op < 50 && njobs < 4096) { /* place a job */
      lsched_request q;
      waiting_shape(&g, cfg, &q);
      struct job *j = &jobs[njobs];
      memset(j, 0, sizeof *j);
      j->r = q;
      if (rbelow(&g, 6) == 0 && q.gpu_count > 0 && q.mig_kind == 0) {
        /* A gang: one part on each of two nodes (never moved). */
        int ga = -1, gb = -1;
        for (int t = 0; t < 16 && (ga < 0 || gb < 0); t++) {
          int x = rbelow(&g, nodes);
          if (x == ga || !lsched_fits(c[0], x, &q))
            continue;
          if (ga < 0)
            ga = x;
          else
            gb = x;
        }
        if (gb < 0)
          continue;
        OK(lsched_pick_gpus(c[0], ga, &q, LSCHED_PICK_LOWEST, &j->p[0]));
        OK(lsched_pick_gpus(c[0], gb, &q, LSCHED_PICK_LOWEST, &j->p[1]));
        j->nparts = 2;
        gangs_placed++;
      } else {
        lsched_placement p[2];
        int rc0 = lsched_policy_place(pol[0], &q, &p[0]);
        int rc1 = lsched_policy_place(pol[1], &q, &p[1]);
        MT_EQ(rc0, rc1);
        if (rc0 != LSCHED_OK)
          continue;
        MT_ASSERT(same_placement(&p[0], &p[1]));
        j->p[0] = p[0];
        j->nparts = 1;
      }
      for (int k = 0; k < 2; k++)
        for (int t = 0; t < j->nparts; t++)
          OK(lsched_alloc(c[k], &j->p[t]));
      int cs = rbelow(&g, 5);
      j->cost = cs == 0 ? 0 : 10.0 * cs;
      if (cfg->negative_costs && rbelow(&g, 8) == 0)
        j->cost = -5;
      j->moves = rbelow(&g, 4) == 0 ? 1 : 0;
      index_put(ix, (size_t)njobs, j);
      njobs++;
    } else if (op < 68 && njobs > 0) { /* a job ends: the last one takes
                                          its position (as in the engine) */
      int i = rbelow(&g, njobs);
      for (int k = 0; k < 2; k++)
        for (int t = jobs[i].nparts - 1; t >= 0; t--)
          OK(lsched_release(c[k], &jobs[i].p[t]));
      jobs[i] = jobs[--njobs];
      if (i < njobs)
        index_put(ix, (size_t)i, &jobs[i]);
      OK(lsched_running_index_clear(ix, (size_t)njobs));
    } else if (cfg->big && op >= 86 && op < 92) {
      /* A burst of move-count changes (no allocation changes: only the
       * index's log tells the planner): the first jobs' counts flip, then
       * those at odd positions flip back (the index logs two changes per
       * set), three times. Over all jobs that is more than the log keeps
       * (past 114 jobs): the oldest changes are lost and the planner must
       * look at every node; over the first 8, the log keeps them. */
      int upto = rbelow(&g, 4) == 0 ? njobs : (njobs < 8 ? njobs : 8);
      for (int rep = 0; rep < 3; rep++) { /* 9 log entries per job */
        for (int i = 0; i < upto; i++) {
          jobs[i].moves ^= 1;
          index_put(ix, (size_t)i, &jobs[i]);
        }
        for (int i = 1; i < upto; i += 2) {
          jobs[i].moves ^= 1;
          index_put(ix, (size_t)i, &jobs[i]);
        }
      }
    } else if (op < 92) { /* a job waits: plan */
      /* Mostly the same waiting job and budget as last time (a blocked
       * head retried after every change: the indexed planner's memo of
       * ruled-out nodes is then used), sometimes a new one. */
      /* (The big replays keep a key longer: many plans refreshed from
       * the changes since the last one.) */
      if (cfg->keys) { /* a head from the pool: keys return */
        int i = rbelow(&g, cfg->keys);
        w = kw[i];
        b = kb[i];
      } else if (!sticky || rbelow(&g, cfg->big ? 24 : 4) == 0) {
        waiting_shape(&g, cfg, &w);
        if (rbelow(&g, 5) == 0) { /* only some nodes allowed */
          for (int i = 0; i < nodes; i++)
            allowed[i] = (unsigned char)(rbelow(&g, 3) != 0);
          w.node_allowed = allowed;
          w.node_allowed_count = nodes;
        }
        b = (lsched_defrag_budget)LSCHED_DEFRAG_BUDGET_INIT;
        b.max_moves = 1 + rbelow(&g, 4);
        b.max_moves_per_job = 1 + rbelow(&g, 2);
        sticky = 1;
      } else if (rbelow(&g, cfg->big ? 24 : 4) == 0) {
        /* The same shape with or without a list of allowed nodes (the
         * planner's screens are exact only without). */
        if (w.node_allowed) {
          w.node_allowed = NULL;
          w.node_allowed_count = 0;
        } else {
          for (int i = 0; i < nodes; i++)
            allowed[i] = (unsigned char)(rbelow(&g, 4) != 0);
          w.node_allowed = allowed;
          w.node_allowed_count = nodes;
        }
      }
      for (int i = 0; i < njobs; i++)
        run[i] = record(&jobs[i], (uint64_t)i);
      same_index(ix, run, (size_t)njobs, nodes);
      int wk = rbelow(&g, 4);
      b.expected_wait_s = wk == 0 ? 1e18 : wk == 1 ? 0 : 5.0 * rbelow(&g, 40);
      lsched_move mv[64];
      size_t n = 0;
      int rc = plan4(pol, c, &w, run, (size_t)njobs, ix, &b, mv, &n);
      if (rc == LSCHED_ENOFIT)
        (*refused)++;
      if (rc != LSCHED_OK || n == 0)
        continue;
      (*made)++;
      mig_plans += w.mig_kind > 0;
      if (rbelow(&g, 10) < 3)
        continue;
      for (int k = 0; k < 2; k++) {
        for (size_t m = 0; m < n; m++)
          OK(lsched_release(c[k], &mv[m].from));
        for (size_t m = 0; m < n; m++)
          OK(lsched_alloc(c[k], &mv[m].to));
      }
      for (size_t m = 0; m < n; m++) { /* the moved jobs, in the index too */
        struct job *j = &jobs[mv[m].index];
        j->p[0] = mv[m].to;
        j->moves++;
        index_put(ix, mv[m].index, j);
      }
    } else if (op < 94) { /* a new visit order */
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
      for (int t = jobs[i].nparts - 1; t >= 0; t--)
        OK(lsched_release(c[k], &jobs[i].p[t]));
    lsched_policy_destroy(pol[k]);
    lsched_cluster_destroy(c[k]);
  }
  lsched_running_index_destroy(ix);
  free(jobs);
  free(run);
  free(allowed);
  lsched_registry_destroy(reg);
}

static void run_replays_keys(const char *base, int negative, uint64_t seed0,
                             int mig, int pools, int big, int keys) {
  long made = 0, refused = 0;
  gangs_placed = mig_plans = 0;
  for (uint64_t s = 0; s < 8; s++) {
    struct replay_cfg cfg = {seed0 + 7919 * s + 1, base, 3000,
                             negative, mig, pools, big, keys};
    replay(&cfg, &made, &refused);
  }
  fprintf(stderr, "%s: %ld plans made, %ld refused\n", base, made, refused);
  /* Plans were found and refused: the replays compared real decisions. */
  MT_ASSERT_MSG(made >= 100, "only %ld plans made", made);
  MT_ASSERT_MSG(refused >= 100, "only %ld plans refused", refused);
  fprintf(stderr, "  %ld gangs placed, %ld plans for MIG jobs\n",
          gangs_placed, mig_plans);
  MT_ASSERT_MSG(gangs_placed >= 100, "only %ld gangs", gangs_placed);
  MT_ASSERT(!mig || mig_plans >= 10);
}

static void run_replays(const char *base, int negative, uint64_t seed0,
                        int mig, int pools, int big) {
  run_replays_keys(base, negative, seed0, mig, pools, big, 0);
}

static void test_replay_best_fit(void) {
  run_replays("best-fit", 0, 11, 0, 0, 0);
}
static void test_replay_first_fit(void) {
  run_replays("first-fit", 1, 23, 0, 0, 0);
}
static void test_replay_custom_base(void) {
  run_replays("last-node", 0, 37, 0, 0, 0);
}
static void test_replay_mig(void) {
  run_replays("mig-best-fit", 0, 41, 1, 0, 0);
}
static void test_replay_pools(void) {
  run_replays("best-fit", 0, 53, 0, 1, 0);
}
/* Many nodes (the heap of the indexed planner holds more than a few, and
 * its walk stops early), bursts that overrun the index's log. */
static void test_replay_big(void) {
  run_replays("best-fit", 0, 67, 0, 0, 1);
}
static void test_replay_big_negative(void) {
  run_replays("first-fit", 1, 79, 0, 0, 1);
}
/* Heads alternating among a few keys (3: every key keeps its slot; 10:
 * more keys than slots, the least recently used goes), with changes and
 * bursts that overrun defrag's own log in between. */
static void test_replay_keys(void) {
  run_replays_keys("best-fit", 0, 83, 0, 0, 1, 3);
  run_replays_keys("first-fit", 1, 89, 0, 0, 1, 10);
  run_replays_keys("best-fit", 0, 97, 0, 0, 0, 4);
}

int main(void) {
  mt_begin("test_defrag_index");
  MT_RUN(test_hand);
  MT_RUN(test_index_api);
  MT_RUN(test_compete);
  MT_RUN(test_compete_kept);
  MT_RUN(test_memo);
  MT_RUN(test_index_log);
  MT_RUN(test_log_refresh);
  MT_RUN(test_replay_best_fit);
  MT_RUN(test_replay_first_fit);
  MT_RUN(test_replay_custom_base);
  MT_RUN(test_replay_mig);
  MT_RUN(test_replay_pools);
  MT_RUN(test_replay_big);
  MT_RUN(test_replay_big_negative);
  MT_RUN(test_replay_keys);
  return mt_finish();
}
