/*
 * A cluster that changes under its policies (issue #16 items 1 and 2):
 * adding, removing and updating nodes while policies are attached and
 * jobs run; cordon and drain; lookup by name; per-request node
 * restrictions; honest errors (ENEVER, the per-cluster message, ENOENT for
 * unknown names). The property test drives random sequences of all of it
 * with the invariant checker on, every built-in policy attached and a
 * fragmentation meter compared with its from-scratch recomputation.
 */
#include "testutil.h"

#include <libsched/policy_sdk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lsched_cluster *mk(int check) {
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.check_invariants = check;
  lsched_cluster *c = NULL;
  ck_assert_int_eq(lsched_cluster_create(&c, &o), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_model_id(c, "A100", 1), 0);
  ck_assert_int_eq(lsched_cluster_model_id(c, "V100", 1), 1);
  return c;
}

static int add(lsched_cluster *c, const char *name, int gpus, int model,
               uint64_t features) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.name = name;
  s.cpu_milli = 32000;
  s.memory_mib = 65536;
  s.gpu_count = gpus;
  s.gpu_model = model;
  s.features = features;
  int id = -1;
  ck_assert_int_eq(lsched_cluster_add_node(c, &s, &id), LSCHED_OK);
  ck_assert_str_eq(lsched_cluster_errmsg(c), "");
  return id;
}

/* An observer that counts what it is told. */
struct counts {
  int alloc, release, added, updated, state, deleted, last_node;
};
static void ob_alloc(void *u, const lsched_cluster *c,
                     const lsched_placement *p, int trial) {
  (void)c, (void)p, (void)trial;
  ((struct counts *)u)->alloc++;
}
static void ob_node(void *u, const lsched_cluster *c, int node, int change) {
  (void)c;
  struct counts *k = u;
  k->last_node = node;
  k->added += change == LSCHED_NODE_ADDED;
  k->updated += change == LSCHED_NODE_UPDATED;
  k->state += change == LSCHED_NODE_STATE;
  k->deleted += change == LSCHED_NODE_DELETED;
}

START_TEST(add_while_running) {
  lsched_cluster *c = mk(1);
  add(c, "a", 2, 0, 0);
  lsched_registry *r;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  lsched_policy *ff, *bf;
  ck_assert_int_eq(lsched_policy_create_from(&ff, c, r, "first-fit"), 0);
  ck_assert_int_eq(lsched_policy_create_from(&bf, c, r, "best-fit"), 0);
  struct counts k = {0};
  lsched_observer ob = LSCHED_OBSERVER_INIT;
  ob.on_alloc = ob_alloc;
  ob.on_node_change = ob_node;
  ck_assert_int_eq(lsched_cluster_add_observer(c, &ob, &k), LSCHED_OK);
  lsched_request two = mkreq(1000, 1024, 2, 1000, 0);
  lsched_placement p;
  ck_assert_int_eq(lsched_policy_place(ff, &two, &p), LSCHED_OK);
  ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_OK);
  /* Node a is full: a second 2-GPU job fits nowhere now, but could. */
  lsched_placement q;
  ck_assert_int_eq(lsched_policy_place(ff, &two, &q), LSCHED_ENOFIT);
  ck_assert_str_ne(lsched_cluster_errmsg(c), "");
  /* Adding a node while a job runs and policies are attached. */
  int b = add(c, "b", 4, 1, 0);
  ck_assert_int_eq(b, 1);
  ck_assert_int_eq(k.added, 1);
  ck_assert_int_eq(k.last_node, 1);
  ck_assert_int_eq(lsched_policy_place(ff, &two, &q), LSCHED_OK);
  ck_assert_str_eq(lsched_cluster_errmsg(c), "");
  ck_assert_int_eq(q.node, b);
  ck_assert_int_eq(lsched_policy_place(bf, &two, &q), LSCHED_OK);
  ck_assert_int_eq(q.node, b);
  ck_assert_int_eq(lsched_alloc(c, &q), LSCHED_OK);
  ck_assert_int_eq(k.alloc, 2);
  ck_assert_int_eq(lsched_release(c, &p), LSCHED_OK);
  ck_assert_int_eq(lsched_release(c, &q), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  lsched_policy_destroy(ff);
  lsched_policy_destroy(bf);
  lsched_registry_destroy(r);
  lsched_cluster_destroy(c);
}
END_TEST

START_TEST(cordon_drain_remove) {
  lsched_cluster *c = mk(1);
  int a = add(c, "a", 4, 0, 0), b = add(c, "b", 4, 0, 0);
  lsched_registry *r;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  lsched_policy *ff;
  ck_assert_int_eq(lsched_policy_create_from(&ff, c, r, "first-fit"), 0);
  lsched_request one = mkreq(1000, 1024, 1, 1000, 0);
  lsched_placement p, q;
  ck_assert_int_eq(lsched_policy_place(ff, &one, &p), LSCHED_OK);
  ck_assert_int_eq(p.node, a);
  ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_OK);
  /* Cordon a: new work goes to b; what runs on a stays. */
  ck_assert_int_eq(lsched_cluster_set_node_state(c, a, LSCHED_NODE_CORDONED),
                   LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_node_state(c, a), LSCHED_NODE_CORDONED);
  ck_assert_int_eq(lsched_fits(c, a, &one), 0);
  ck_assert_int_eq(lsched_policy_place(ff, &one, &q), LSCHED_OK);
  ck_assert_int_eq(q.node, b);
  /* Cordoned nodes still count for "ever": 3 GPUs more than b has free
   * now is ENOFIT, not ENEVER. */
  ck_assert_int_eq(lsched_cluster_set_node_state(c, b, LSCHED_NODE_DRAINING),
                   LSCHED_OK);
  ck_assert_int_eq(lsched_policy_place(ff, &one, &q), LSCHED_ENOFIT);
  ck_assert_int_eq(lsched_cluster_node_idle(c, a), 0);
  ck_assert_int_eq(lsched_cluster_node_idle(c, b), 1);
  /* A busy node cannot be removed; an idle one can. */
  ck_assert_int_eq(lsched_cluster_remove_node(c, a), LSCHED_ESTATE);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "drain"));
  ck_assert_int_eq(lsched_cluster_remove_node(c, b), LSCHED_OK);
  ck_assert_str_eq(lsched_cluster_errmsg(c), "");
  ck_assert_int_eq(lsched_cluster_node_state(c, b), LSCHED_NODE_REMOVED);
  lsched_node_info ni;
  ck_assert_int_eq(lsched_cluster_node_info(c, b, &ni), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_remove_node(c, b), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_find_node(c, "b"), LSCHED_ENOENT);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "'b'"));
  ck_assert_int_eq(lsched_cluster_find_node(c, "a"), a);
  lsched_totals t;
  lsched_cluster_totals(c, &t);
  ck_assert_int_eq(t.nodes, 1);
  ck_assert_int_eq(t.gpus, 4);
  ck_assert_int_eq(t.gpu_milli_free, 3000);
  /* Only a is left and it is cordoned: ENOFIT (it may come back). A
   * 5-GPU request now fits no node ever. */
  ck_assert_int_eq(lsched_policy_place(ff, &one, &q), LSCHED_ENOFIT);
  lsched_request five = mkreq(1000, 1024, 5, 1000, 0);
  ck_assert_int_eq(lsched_policy_place(ff, &five, &q), LSCHED_ENEVER);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "ever"));
  ck_assert_int_eq(lsched_cluster_set_node_state(c, a, LSCHED_NODE_UP), 0);
  ck_assert_int_eq(lsched_policy_place(ff, &one, &q), LSCHED_OK);
  ck_assert_int_eq(q.node, a);
  ck_assert_int_eq(lsched_cluster_set_node_state(c, a, LSCHED_NODE_REMOVED),
                   LSCHED_EINVAL);
  /* The name of a removed node is free again; ids are never reused. */
  ck_assert_int_eq(add(c, "b", 8, 0, 0), 2);
  ck_assert_int_eq(lsched_cluster_find_node(c, "b"), 2);
  ck_assert_int_eq(lsched_release(c, &p), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  lsched_policy_destroy(ff);
  lsched_registry_destroy(r);
  lsched_cluster_destroy(c);
}
END_TEST

START_TEST(update_node) {
  lsched_cluster *c = mk(1);
  int a = add(c, "a", 2, 0, 0), b = add(c, "b", 2, 0, 0);
  add(c, "c", 2, 0, 0);
  lsched_placement p = mkpl(a, 30000, 1024, 1, 1000, 1);
  ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_OK);
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.name = "a2";
  s.cpu_milli = 20000; /* below the 30000 allocated */
  s.memory_mib = 65536;
  s.gpu_count = 2;
  s.gpu_model = 0;
  ck_assert_int_eq(lsched_cluster_update_node(c, a, &s), LSCHED_ESTATE);
  s.cpu_milli = 64000;
  s.gpu_count = 4; /* GPUs of a busy node cannot change */
  ck_assert_int_eq(lsched_cluster_update_node(c, a, &s), LSCHED_ESTATE);
  s.gpu_count = 2;
  ck_assert_int_eq(lsched_cluster_update_node(c, a, &s), LSCHED_OK);
  lsched_node_info ni;
  ck_assert_int_eq(lsched_cluster_node_info(c, a, &ni), LSCHED_OK);
  ck_assert_str_eq(ni.name, "a2");
  ck_assert_int_eq(ni.cpu_milli, 64000);
  ck_assert_int_eq(ni.cpu_free, 34000);
  /* An idle node may change its GPUs: the pool is spliced. */
  s.name = "b";
  s.gpu_count = 8;
  s.gpu_model = 1;
  s.gpu_mode = LSCHED_GPU_EXCLUSIVE;
  ck_assert_int_eq(lsched_cluster_update_node(c, b, &s), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_node_info(c, b, &ni), LSCHED_OK);
  ck_assert_int_eq(ni.gpu_count, 8);
  ck_assert_int_eq(ni.gpu_model, 1);
  ck_assert_int_eq(ni.gpus_fully_free, 8);
  lsched_totals t;
  lsched_cluster_totals(c, &t);
  ck_assert_int_eq(t.gpus, 12);
  ck_assert_int_eq(t.gpu_milli_free, 11000);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  lsched_request eight = mkreq(0, 0, 8, 1000, UINT64_C(1) << 1);
  ck_assert_int_eq(lsched_can_ever_fit(c, &eight), 1);
  ck_assert_int_eq(lsched_release(c, &p), LSCHED_OK);
  lsched_cluster_destroy(c);
}
END_TEST

static int only_odd(void *user, const lsched_cluster *c, int node) {
  (void)c;
  ++*(int *)user;
  return node % 2 == 1;
}

START_TEST(node_restrictions) {
  lsched_cluster *c = mk(1);
  for (int i = 0; i < 4; i++) {
    char name[8];
    snprintf(name, sizeof name, "n%d", i);
    add(c, name, 2, 0, i == 2 ? 0x5 : 0x1);
  }
  lsched_registry *r;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  lsched_policy *ff;
  ck_assert_int_eq(lsched_policy_create_from(&ff, c, r, "first-fit"), 0);
  lsched_request q = mkreq(1000, 1024, 1, 500, 0);
  lsched_placement p;
  /* Features: only n2 has bit 2. */
  q.features = 0x4;
  ck_assert_int_eq(lsched_policy_place(ff, &q, &p), LSCHED_OK);
  ck_assert_int_eq(p.node, 2);
  q.features = 0x8; /* no node has it: never */
  ck_assert_int_eq(lsched_can_ever_fit(c, &q), 0);
  ck_assert_int_eq(lsched_policy_place(ff, &q, &p), LSCHED_ENEVER);
  q.features = 0;
  /* Allowed set: only n3. */
  unsigned char allow[4] = {0, 0, 0, 1};
  q.node_allowed = allow;
  q.node_allowed_count = 4;
  ck_assert_int_eq(lsched_policy_place(ff, &q, &p), LSCHED_OK);
  ck_assert_int_eq(p.node, 3);
  q.node_allowed_count = 3; /* n3 beyond the set: nothing allowed */
  ck_assert_int_eq(lsched_policy_place(ff, &q, &p), LSCHED_ENEVER);
  q.node_allowed = NULL;
  q.node_allowed_count = 0;
  /* Callback: odd ids. */
  int calls = 0;
  q.node_filter = only_odd;
  q.node_filter_user = &calls;
  ck_assert_int_eq(lsched_policy_place(ff, &q, &p), LSCHED_OK);
  ck_assert_int_eq(p.node, 1);
  ck_assert_int_gt(calls, 0);
  ck_assert_int_eq(lsched_fits(c, 0, &q), 0);
  ck_assert_int_eq(lsched_fits(c, 3, &q), 1);
  /* Every built-in policy honours the restriction. */
  for (size_t i = 0; i < lsched_registry_count(r); i++) {
    const lsched_policy_ops *ops = lsched_registry_at(r, i);
    lsched_policy *pol;
    ck_assert_int_eq(lsched_policy_create_from(&pol, c, r, ops->name), 0);
    int rc = lsched_policy_place(pol, &q, &p);
    if (rc == LSCHED_OK)
      ck_assert_msg(p.node % 2 == 1, "%s chose node %d", ops->name, p.node);
    else
      ck_assert_int_eq(rc, LSCHED_ENOFIT); /* a MIG-only policy */
    lsched_policy_destroy(pol);
  }
  lsched_policy_destroy(ff);
  lsched_registry_destroy(r);
  lsched_cluster_destroy(c);
}
END_TEST

START_TEST(honest_errors) {
  lsched_cluster *c = mk(0);
  add(c, "a", 8, 0, 0);
  add(c, "b", 8, 0, 0);
  lsched_registry *r;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  lsched_policy *pol;
  ck_assert_int_eq(lsched_policy_create_from(&pol, c, r, "no-such-policy"),
                   LSCHED_ENOENT);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "'no-such-policy'"));
  ck_assert_int_eq(lsched_policy_create_from(&pol, c, r, "best-fit"), 0);
  /* 16 GPUs on 8-GPU nodes: never, with a message; a later success
   * clears it. */
  lsched_request big = mkreq(1000, 1024, 16, 1000, 0);
  lsched_placement p;
  ck_assert_int_eq(lsched_policy_place(pol, &big, &p), LSCHED_ENEVER);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "16 GPU"));
  lsched_request one = mkreq(1000, 1024, 1, 1000, 0);
  ck_assert_int_eq(lsched_policy_place(pol, &one, &p), LSCHED_OK);
  ck_assert_str_eq(lsched_cluster_errmsg(c), "");
  /* A malformed request sets the message too. */
  lsched_request bad = mkreq(-1, 0, 0, 0, 0);
  ck_assert_int_eq(lsched_policy_place(pol, &bad, &p), LSCHED_EINVAL);
  ck_assert_str_ne(lsched_cluster_errmsg(c), "");
  ck_assert_int_eq(lsched_cluster_set_node_state(c, 7, LSCHED_NODE_UP),
                   LSCHED_ENOENT);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "node 7"));
  lsched_policy_destroy(pol);
  lsched_registry_destroy(r);
  lsched_cluster_destroy(c);
}
END_TEST

/* A version-5 policy with its own hook: told, never refreshed. */
struct hooked {
  int inits, changes;
};
static int hk_init(void *st, const lsched_cluster *c) {
  (void)c;
  ((struct hooked *)st)->inits++;
  return 0;
}
static int hk_place(void *st, const lsched_cluster *c,
                    const lsched_request *req, lsched_placement *out) {
  (void)st;
  int p = lsched_next_fit(c, req, 0);
  if (p < 0)
    return LSCHED_ENOFIT;
  return lsched_pick_gpus(c, lsched_cluster_order(c)[p], req,
                          LSCHED_PICK_LOWEST, out);
}
static struct hooked *g_hk;
static int hk_change(void *st, const lsched_cluster *c, int node,
                     int change) {
  (void)c, (void)node, (void)change;
  ((struct hooked *)st)->changes++;
  g_hk = st;
  return 0;
}

START_TEST(hook_and_refresh) {
  lsched_cluster *c = mk(1);
  add(c, "a", 4, 0, 0);
  lsched_policy_ops ops = LSCHED_POLICY_OPS_INIT;
  ops.name = "hooked";
  ops.state_size = sizeof(struct hooked);
  ops.init = hk_init;
  ops.place = hk_place;
  ops.on_node_change = hk_change;
  lsched_policy *ph;
  ck_assert_int_eq(lsched_policy_create(&ph, c, &ops), LSCHED_OK);
  /* A random policy with a seed: refreshed with its seed replayed, so it
   * places as a fresh instance with that seed does. */
  lsched_registry *r;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  lsched_policy *rnd;
  ck_assert_int_eq(lsched_policy_create_from(&rnd, c, r, "random"), 0);
  ck_assert_int_eq(lsched_policy_set_param(rnd, "seed", "42"), 0);
  for (int i = 0; i < 7; i++) {
    char name[8];
    snprintf(name, sizeof name, "x%d", i);
    add(c, name, 4, 0, 0);
  }
  lsched_cluster_set_node_state(c, 3, LSCHED_NODE_CORDONED);
  ck_assert_ptr_nonnull(g_hk);
  ck_assert_int_eq(g_hk->inits, 1);
  ck_assert_int_eq(g_hk->changes, 8);
  lsched_policy *fresh;
  ck_assert_int_eq(lsched_policy_create_from(&fresh, c, r, "random"), 0);
  ck_assert_int_eq(lsched_policy_set_param(fresh, "seed", "42"), 0);
  lsched_request one = mkreq(1000, 1024, 1, 1000, 0);
  for (int i = 0; i < 5; i++) {
    lsched_placement a, b;
    ck_assert_int_eq(lsched_policy_place(rnd, &one, &a), LSCHED_OK);
    ck_assert_int_eq(lsched_policy_place(fresh, &one, &b), LSCHED_OK);
    ck_assert_int_eq(a.node, b.node);
    ck_assert_int_ne(a.node, 3);
  }
  lsched_policy_destroy(fresh);
  lsched_policy_destroy(rnd);
  lsched_policy_destroy(ph);
  lsched_registry_destroy(r);
  lsched_cluster_destroy(c);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Property test                                                           */

struct live {
  lsched_placement p;
  int used;
};

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

START_TEST(random_changes) {
  uint64_t seed = 0x9e3779b97f4a7c15ULL + (uint64_t)_i * 7919;
  lsched_cluster *c = mk(1);
  static const int64_t mem80[LSCHED_MIG_KINDS] = {10240, 20480, 20480,
                                                  40960, 40960, 81920};
  ck_assert_int_eq(lsched_mig_set_model_memory(c, 0, mem80), LSCHED_OK);
  for (int i = 0; i < 6; i++)
    add(c, NULL, 1 + i % 4, i % 2, (uint64_t)(i % 3));
  lsched_registry *r;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  size_t np = lsched_registry_count(r);
  lsched_policy **pols = calloc(np, sizeof *pols);
  for (size_t i = 0; i < np; i++)
    ck_assert_int_eq(lsched_policy_create_from(
                         &pols[i], c, r, lsched_registry_at(r, i)->name),
                     LSCHED_OK);
  lsched_workload *w;
  ck_assert_int_eq(lsched_workload_create(&w, NULL), LSCHED_OK);
  lsched_task_type tt[3] = {{LSCHED_TASK_TYPE_VERSION, 1000, 1, 500, 0, 3},
                            {LSCHED_TASK_TYPE_VERSION, 2000, 2, 1000, 0, 2},
                            {LSCHED_TASK_TYPE_VERSION, 500, 1, 250, 1, 1}};
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(lsched_workload_add(w, &tt[i]), LSCHED_OK);
  for (size_t i = 0; i < np; i++)
    lsched_policy_set_workload(pols[i], w); /* ENOENT for most: fine */
  lsched_fragmeter *m;
  ck_assert_int_eq(lsched_fragmeter_create(&m, c, w), LSCHED_OK);
  enum { NLIVE = 64 };
  struct live lv[NLIVE];
  memset(lv, 0, sizeof lv);
  /* What the sequence did, so that the test cannot pass vacuously. */
  int n_mig = 0, n_removed = 0, n_busy_remove = 0, n_updated = 0,
      n_never = 0, n_added = 0;
  for (int step = 0; step < 600; step++) {
    int n = lsched_cluster_node_count(c);
    int op = (int)(rng_next(&seed) % 100);
    int node = (int)(rng_next(&seed) % (uint64_t)n);
    if (op < 40) { /* place through a random policy and allocate */
      int slot = -1;
      for (int i = 0; i < NLIVE; i++)
        if (!lv[i].used) {
          slot = i;
          break;
        }
      if (slot < 0)
        continue;
      lsched_request q = LSCHED_REQUEST_INIT;
      q.cpu_milli = 1000 * (int64_t)(rng_next(&seed) % 4);
      q.memory_mib = 1024;
      int kind = (int)(rng_next(&seed) % 5);
      q.gpu_count = 1 + (int)(rng_next(&seed) % 2);
      if (kind == 4) {
        q.mig_kind = 1 + (int)(rng_next(&seed) % 3);
        q.gpu_count = 1;
      } else {
        q.gpu_milli = kind == 3 ? 1000 : 250 * (kind + 1);
      }
      if (rng_next(&seed) % 4 == 0)
        q.features = 1;
      lsched_policy *pol = pols[rng_next(&seed) % np];
      lsched_placement p;
      int rc = lsched_policy_place(pol, &q, &p);
      ck_assert_msg(rc == LSCHED_OK || rc == LSCHED_ENOFIT ||
                        rc == LSCHED_ENEVER,
                    "%s: %s", lsched_policy_name(pol), lsched_err_name(rc));
      ck_assert_int_eq(rc == LSCHED_ENEVER, !lsched_can_ever_fit(c, &q));
      n_never += rc == LSCHED_ENEVER;
      if (rc == LSCHED_OK) {
        ck_assert_int_eq(lsched_cluster_node_state(c, p.node), LSCHED_NODE_UP);
        ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_OK);
        n_mig += q.mig_kind != 0;
        lv[slot].p = p;
        lv[slot].used = 1;
      }
    } else if (op < 65) { /* release */
      int slot = (int)(rng_next(&seed) % NLIVE);
      if (lv[slot].used) {
        ck_assert_int_eq(lsched_release(c, &lv[slot].p), LSCHED_OK);
        lv[slot].used = 0;
      }
    } else if (op < 75) { /* state */
      int st = (int)(rng_next(&seed) % 3);
      int rc = lsched_cluster_set_node_state(c, node, (lsched_node_state)st);
      ck_assert(rc == LSCHED_OK || rc == LSCHED_ENOENT);
    } else if (op < 83) { /* add */
      lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
      s.cpu_milli = 16000;
      s.memory_mib = 65536;
      s.gpu_count = (int)(rng_next(&seed) % 5);
      s.gpu_model = 0;
      s.features = rng_next(&seed) % 2;
      if (rng_next(&seed) % 3 == 0) {
        s.gpu_mode = LSCHED_GPU_MIG;
        s.mig_dynamic = 1;
        if (s.gpu_count == 0)
          s.gpu_count = 1;
      }
      ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), LSCHED_OK);
      n_added++;
    } else if (op < 92) { /* remove (idle nodes only) */
      int idle = lsched_cluster_node_idle(c, node);
      int rc = lsched_cluster_remove_node(c, node);
      if (lsched_cluster_node_state(c, node) == LSCHED_NODE_REMOVED &&
          rc == LSCHED_ENOENT)
        ;
      else
        ck_assert_int_eq(rc, idle ? LSCHED_OK : LSCHED_ESTATE);
      n_removed += rc == LSCHED_OK;
      n_busy_remove += rc == LSCHED_ESTATE;
    } else { /* update */
      lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
      lsched_node_info ni;
      if (lsched_cluster_node_info(c, node, &ni) != LSCHED_OK)
        continue;
      s.cpu_milli = ni.cpu_milli + 1000;
      s.memory_mib = ni.memory_mib;
      s.gpu_count = ni.gpu_count;
      s.gpu_model = ni.gpu_model;
      s.gpu_mode = ni.gpu_mode;
      s.mig_dynamic = 1;
      s.features = rng_next(&seed) % 4;
      if (lsched_cluster_node_idle(c, node) && rng_next(&seed) % 2) {
        s.gpu_count = 1 + (int)(rng_next(&seed) % 4);
        s.gpu_model = (int)(rng_next(&seed) % 2);
        s.gpu_mode = rng_next(&seed) % 3 == 0 ? LSCHED_GPU_MIG
                                               : LSCHED_GPU_SHARED;
        if (s.gpu_mode == LSCHED_GPU_MIG)
          s.gpu_model = 0;
      }
      ck_assert_int_eq(lsched_cluster_update_node(c, node, &s), LSCHED_OK);
      n_updated++;
    }
    ck_assert_msg(lsched_cluster_check(c) == LSCHED_OK, "step %d: %s", step,
                  lsched_cluster_errmsg(c));
    lsched_frag inc, full;
    lsched_fragmeter_get(m, &inc);
    ck_assert_int_eq(lsched_frag_cluster(c, w, &full), LSCHED_OK);
    ck_assert_int_eq(inc.amount_weighted, full.amount_weighted);
    ck_assert_int_eq(inc.idle_gpu_milli, full.idle_gpu_milli);
    lsched_totals t;
    lsched_cluster_totals(c, &t);
    ck_assert_int_eq(t.gpu_milli_free, full.idle_gpu_milli);
  }
  ck_assert_msg(n_mig > 0 && n_removed > 0 && n_busy_remove > 0 &&
                    n_updated > 0 && n_added > 0,
                "mig %d removed %d busy %d updated %d added %d never %d",
                n_mig, n_removed, n_busy_remove, n_updated, n_added, n_never);
  for (int i = 0; i < NLIVE; i++)
    if (lv[i].used)
      ck_assert_int_eq(lsched_release(c, &lv[i].p), LSCHED_OK);
  lsched_totals t;
  lsched_cluster_totals(c, &t);
  ck_assert_int_eq(t.gpu_milli_free, t.gpu_milli);
  ck_assert_int_eq(t.cpu_free, t.cpu_milli);
  lsched_fragmeter_destroy(m);
  for (size_t i = 0; i < np; i++)
    lsched_policy_destroy(pols[i]);
  free(pols);
  lsched_workload_destroy(w);
  lsched_registry_destroy(r);
  lsched_cluster_destroy(c);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("live");
  TCase *tc = tcase_create("live");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, add_while_running);
  tcase_add_test(tc, cordon_drain_remove);
  tcase_add_test(tc, update_node);
  tcase_add_test(tc, node_restrictions);
  tcase_add_test(tc, honest_errors);
  tcase_add_test(tc, hook_and_refresh);
  tcase_add_loop_test(tc, random_changes, 0, 8);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
