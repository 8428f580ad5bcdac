/*
 * The built-in policies' on_node_change hooks (policy SDK v5) against the
 * refresh they replace. A policy without the hook is re-initialised on
 * every node change (policy.c: fini, init, parameters and workload
 * replayed); with it, a pool's compose (other hosts' slots blocked or
 * reopened: LSCHED_NODE_UPDATED for them) costs an update of that node
 * (lsched_node_watch), a real update, an added or a removed node a rebuild.
 * Every built-in with a hook is run twice on two identical pooled clusters
 * under the same random operations (placements, releases, pool detaches,
 * cordons, node updates, added and removed nodes): once as registered and
 * once through a copy of its ops table without the hook. Every answer must
 * be the same, and the fragmentation meter (which has the hook too) must
 * read what a one-shot lsched_frag_cluster() computes.
 *
 * A mutation this catches: in policies/fgd.c fgd_node_change, drop the
 * lsched_frag_cache_update() of the changed node (its cached F then lags
 * the composes); or in libsched/src/scoreidx.c six_on_node_change, do
 * nothing on a free-only change instead of six_touch() (the trees then miss
 * the compose).
 */
#include "libtest.h"

#include <libsched/policy_sdk.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static lsched_node_spec host_spec(int gpus, int model, int64_t cpu) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = cpu;
  s.memory_mib = 512 * 1024;
  s.gpu_count = gpus;
  s.gpu_model = gpus > 0 ? model : -1;
  s.gpu_mode = LSCHED_GPU_SHARED;
  return s;
}

static int add_host(lsched_cluster *c, int gpus, int model) {
  lsched_node_spec s = host_spec(gpus, model, 64000);
  int id = -1;
  OK(lsched_cluster_add_node(c, &s, &id));
  return id;
}

static void add_pool(lsched_cluster *c, int gpus, int cap, const int *hosts,
                     int n) {
  lsched_pool_spec ps = LSCHED_POOL_SPEC_INIT;
  ps.gpus = gpus;
  ps.max_per_host = cap;
  ps.hosts = hosts;
  ps.nhosts = n;
  int id = -1;
  OK(lsched_cluster_add_pool(c, &ps, &id));
}

/* Fixed nodes (ids 0, 6, 7, 8) and hosts 1..5 on two chassis: one of 6
 * GPUs, at most 4 per host, reachable from three hosts; one of 8, at most
 * 6 per host, from two. */
static lsched_cluster *pooled(void) {
  lsched_cluster *c = lt_new_cluster();
  add_host(c, 8, A100);
  int h[5];
  h[0] = add_host(c, 4 + 4, A100);
  h[1] = add_host(c, 0 + 4, A100);
  h[2] = add_host(c, 4 + 4, A100);
  h[3] = add_host(c, 0 + 6, A100);
  h[4] = add_host(c, 2 + 6, A100);
  add_host(c, 8, A100);
  add_host(c, 4, V100);
  add_host(c, 2, V100);
  add_pool(c, 6, 4, h, 3);
  add_pool(c, 8, 6, h + 3, 2);
  return c;
}

/* A workload of a few task types (fgd and the meter read it). */
static lsched_workload *workload(void) {
  lsched_workload *w = NULL;
  OK(lsched_workload_create(&w, NULL));
  static const int shapes[][3] = {{0, 0, 3}, {1, 300, 5}, {1, 500, 2},
                                  {1, 1000, 4}, {2, 1000, 2}, {4, 1000, 1}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    lsched_task_type t = LSCHED_TASK_TYPE_INIT;
    t.cpu_milli = 2000 + 1000 * (int64_t)i;
    t.gpu_count = shapes[i][0];
    t.gpu_milli = shapes[i][1];
    t.weight = (uint64_t)shapes[i][2];
    OK(lsched_workload_add(w, &t));
  }
  return w;
}

struct side {
  lsched_cluster *c;
  lsched_policy *p;
  lsched_fragmeter *m;
};

static void side_open(struct side *s, const lsched_policy_ops *ops,
                      const lsched_workload *w) {
  s->c = pooled();
  OK(lsched_policy_create(&s->p, s->c, ops));
  int rc = lsched_policy_set_param(s->p, "seed", "7");
  MT_ASSERT(rc == LSCHED_OK || rc == LSCHED_ENOENT || rc == LSCHED_EINVAL);
  rc = lsched_policy_set_workload(s->p, w);
  MT_ASSERT(rc == LSCHED_OK || rc == LSCHED_ENOENT);
  OK(lsched_fragmeter_create(&s->m, s->c, w));
}

static void side_close(struct side *s) {
  lsched_fragmeter_destroy(s->m);
  lsched_policy_destroy(s->p);
  lsched_cluster_destroy(s->c);
}

/* The meter against a one-shot computation of the same cluster. */
static void meter_matches(const struct side *s, const lsched_workload *w,
                          const char *name, int step) {
  lsched_frag a = {0}, b = {0};
  lsched_fragmeter_get(s->m, &a);
  OK(lsched_frag_cluster(s->c, w, &b));
  MT_ASSERT_MSG(a.amount_weighted == b.amount_weighted &&
                    a.idle_gpu_milli == b.idle_gpu_milli,
                "%s step %d: meter %lld / %lld idle, one-shot %lld / %lld",
                name, step, (long long)a.amount_weighted,
                (long long)a.idle_gpu_milli, (long long)b.amount_weighted,
                (long long)b.idle_gpu_milli);
}

/* Applies one random node change to both sides (the same on each). */
static void change_nodes(struct side *sd, uint64_t *s, int *changes) {
  int n = lsched_cluster_node_count(sd[0].c);
  int what = (int)(rng_next(s) % 4);
  int node = (int)(rng_next(s) % (uint64_t)n);
  if (lsched_cluster_node_state(sd[0].c, node) == LSCHED_NODE_REMOVED)
    return;
  if (what == 0) { /* cordon or uncordon */
    lsched_node_state st = rng_next(s) % 2 ? LSCHED_NODE_CORDONED
                                           : LSCHED_NODE_UP;
    for (int k = 0; k < 2; k++)
      OK(lsched_cluster_set_node_state(sd[k].c, node, st));
  } else if (what == 1) { /* a new node, of either model */
    int gpus = 1 + (int)(rng_next(s) % 8);
    int model = rng_next(s) % 2 ? A100 : V100;
    for (int k = 0; k < 2; k++)
      add_host(sd[k].c, gpus, model);
  } else {
    /* Update (CPU; GPUs too when idle) or remove; a pool's host or a busy
     * node refuses some of these on both sides alike. */
    lsched_node_info ni = LSCHED_NODE_INFO_INIT;
    OK(lsched_cluster_node_info(sd[0].c, node, &ni));
    int idle = lsched_cluster_node_idle(sd[0].c, node) == 1;
    int rc[2];
    if (what == 2) {
      int gpus = idle ? 1 + (int)(rng_next(s) % 8) : ni.gpu_count;
      lsched_node_spec sp =
          host_spec(gpus, ni.gpu_count ? ni.gpu_model : A100,
                    ni.cpu_milli + 1000 * (int64_t)(rng_next(s) % 8));
      for (int k = 0; k < 2; k++)
        rc[k] = lsched_cluster_update_node(sd[k].c, node, &sp);
    } else {
      for (int k = 0; k < 2; k++)
        rc[k] = lsched_cluster_remove_node(sd[k].c, node);
    }
    MT_EQ(rc[0], rc[1]);
  }
  ++*changes;
}

static void replay(const lsched_policy_ops *ops, lsched_policy_ops *copy,
                   const lsched_workload *w, uint64_t seed, int *composes) {
  *copy = *ops;
  copy->on_node_change = NULL; /* re-initialised on every node change */
  struct side sd[2];
  side_open(&sd[0], ops, w);
  side_open(&sd[1], copy, w);
  lsched_placement live[128];
  int nlive = 0, changes = 0;
  uint64_t s = seed;
  for (int step = 0; step < 400; step++) {
    int r = (int)(rng_next(&s) % 10);
    if (r == 0) {
      change_nodes(sd, &s, &changes);
    } else if (nlive > 0 && (r <= 3 || nlive == 128)) {
      int j = (int)(rng_next(&s) % (uint64_t)nlive);
      for (int k = 0; k < 2; k++)
        OK(lsched_release(sd[k].c, &live[j]));
      if (rng_next(&s) % 2)
        for (int k = 0; k < 2; k++)
          lsched_pool_detach(sd[k].c, live[j].node, ~UINT64_C(0));
      live[j] = live[--nlive];
    } else {
      int g = (int)(rng_next(&s) % 7);
      lsched_request q = LSCHED_REQUEST_INIT;
      q.cpu_milli = 1000 + 1000 * (int64_t)(rng_next(&s) % 6);
      q.memory_mib = 1024;
      q.gpu_count = g;
      q.gpu_milli = g == 0 ? 0 : g > 1 || rng_next(&s) % 2 ? 1000 : 500;
      lsched_placement pa, pb;
      int ra = lsched_policy_place(sd[0].p, &q, &pa);
      int rb = lsched_policy_place(sd[1].p, &q, &pb);
      MT_ASSERT_MSG(ra == rb, "%s step %d: hook %s, refresh %s", ops->name,
                    step, lsched_err_name(ra), lsched_err_name(rb));
      if (ra == LSCHED_OK) {
        MT_ASSERT_MSG(pa.node == pb.node && pa.gpu_mask == pb.gpu_mask &&
                          pa.gpu_milli == pb.gpu_milli,
                      "%s step %d: hook node %d mask %llx, refresh node %d "
                      "mask %llx",
                      ops->name, step, pa.node,
                      (unsigned long long)pa.gpu_mask, pb.node,
                      (unsigned long long)pb.gpu_mask);
        uint64_t slots = 0, att = 0;
        if (lsched_pool_of_node(sd[0].c, pa.node, &slots, &att) >= 0 &&
            (pa.gpu_mask & slots & ~att))
          ++*composes;
        for (int k = 0; k < 2; k++)
          OK(lsched_alloc(sd[k].c, &pa));
        live[nlive++] = pa;
      }
    }
    meter_matches(&sd[0], w, ops->name, step);
  }
  MT_GE(changes, 10);
  side_close(&sd[0]);
  side_close(&sd[1]);
}

static void test_hook_equals_refresh(void) {
  lsched_registry *reg = lt_builtins();
  lsched_workload *w = workload();
  static lsched_policy_ops copies[64];
  int hooked = 0, composes = 0;
  char names[512] = "";
  for (size_t i = 0; i < lsched_registry_count(reg) && i < 64; i++) {
    const lsched_policy_ops *ops = lsched_registry_at(reg, i);
    if (ops->version < 5 || !ops->on_node_change)
      continue;
    for (uint64_t seed = 1; seed <= 3; seed++)
      replay(ops, &copies[i], w, 0x9E3779B9ull * seed + i, &composes);
    hooked++;
    strncat(names, " ", sizeof names - strlen(names) - 1);
    strncat(names, ops->name, sizeof names - strlen(names) - 1);
  }
  /* fgd, best-fit, worst-fit, random, dot-product, gpu-clustering,
   * gpu-packing, compose-aware */
  MT_ASSERT_MSG(hooked >= 8, "only%s have the hook", names);
  MT_GE(composes, 50); /* the pools were exercised */
  lsched_workload_destroy(w);
  lsched_registry_destroy(reg);
}

/* The watch itself, by hand: a state change and a pool's compose are
 * free-only; an update of capacity, an added node are not; the first
 * non-state notice is not (no snapshot yet). */
static lsched_node_watch *g_watch;
static int g_last = -1;
static void watch_obs(void *user, const lsched_cluster *c, int node,
                      int change) {
  (void)user;
  g_last = lsched_node_watch_free_only(g_watch, c, node, change);
}

static void test_watch_hand(void) {
  lsched_cluster *c = lt_new_cluster();
  int h[2];
  h[0] = add_host(c, 0 + 2, A100);
  h[1] = add_host(c, 0 + 2, A100);
  add_pool(c, 2, 2, h, 2); /* 2 chassis GPUs, both hosts reach both */
  OK(lsched_node_watch_create(&g_watch, c));
  lsched_observer o = LSCHED_OBSERVER_INIT;
  o.on_node_change = watch_obs;
  OK(lsched_cluster_add_observer(c, &o, NULL));
  OK(lsched_cluster_set_node_state(c, h[1], LSCHED_NODE_CORDONED));
  MT_EQ(g_last, 1); /* a state change */
  OK(lsched_cluster_set_node_state(c, h[1], LSCHED_NODE_UP));
  lsched_placement p = {0};
  p.version = LSCHED_PLACEMENT_VERSION;
  p.node = h[0];
  p.gpu_count = 1;
  p.gpu_milli = 1000;
  p.gpu_mask = 1;
  g_last = -1;
  OK(lsched_alloc(c, &p)); /* composes 1: h1 has 1 open slot left */
  MT_EQ(g_last, 0);        /* the first non-state notice: no snapshot */
  lsched_placement p2 = p;
  p2.gpu_mask = 2;
  g_last = -1;
  OK(lsched_alloc(c, &p2)); /* the last chassis GPU: h1's slot blocked */
  MT_EQ(g_last, 1);         /* only h1's free shares moved */
  g_last = -1;
  add_host(c, 4, V100);
  MT_EQ(g_last, 0); /* the node set changed */
  g_last = -1;
  OK(lsched_release(c, &p2)); /* detach: h1's slot reopens */
  MT_EQ(g_last, 1);
  lsched_node_spec sp = host_spec(4, V100, 32000);
  OK(lsched_cluster_update_node(c, 2, &sp));
  MT_EQ(g_last, 0); /* capacity changed */
  OK(lsched_cluster_update_node(c, 2, &sp));
  MT_EQ(g_last, 1); /* the same spec again: nothing fixed moved */
  OK(lsched_cluster_remove_observer(c, &o, NULL));
  lsched_node_watch_destroy(g_watch);
  g_watch = NULL;
  OK(lsched_release(c, &p));
  lsched_cluster_destroy(c);
}

int main(void) {
  mt_begin("test_node_hook");
  MT_RUN(test_watch_hand);
  MT_RUN(test_hook_equals_refresh);
  return mt_finish();
}
