/*
 * Composable GPU pools (libsched.h "Composable GPU pools", pool.c): the
 * hand cases of issue #15, the bit-for-bit property and every built-in
 * policy on pooled clusters, with the invariant checker on every change.
 */
#include "libtest.h"

#include <string.h>

static int add_host(lsched_cluster *c, int gpus) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 64000;
  s.memory_mib = 512 * 1024;
  s.gpu_count = gpus;
  s.gpu_model = gpus > 0 ? A100 : -1;
  s.gpu_mode = LSCHED_GPU_SHARED;
  int id = -1;
  OK(lsched_cluster_add_node(c, &s, &id));
  return id;
}

static int add_pool(lsched_cluster *c, int gpus, int cap, const int *hosts,
                    int n, int keep) {
  lsched_pool_spec ps = LSCHED_POOL_SPEC_INIT;
  ps.gpus = gpus;
  ps.max_per_host = cap;
  ps.hosts = hosts;
  ps.nhosts = n;
  ps.keep_attached = keep;
  int id = -1;
  OK(lsched_cluster_add_pool(c, &ps, &id));
  return id;
}

static lsched_request req(int k, int milli) {
  lsched_request r = LSCHED_REQUEST_INIT;
  r.cpu_milli = 1000;
  r.memory_mib = 1024;
  r.gpu_count = k;
  r.gpu_milli = k ? milli : 0;
  return r;
}

static lsched_policy *policy(lsched_cluster *c, lsched_registry **reg,
                             const char *name) {
  if (!*reg) {
    OK(lsched_registry_create(reg, NULL));
    OK(lsched_registry_add_builtins(*reg));
  }
  lsched_policy *p = NULL;
  OK(lsched_policy_create_from(&p, c, *reg, name));
  return p;
}

static int pool_free(const lsched_cluster *c, int pool) {
  lsched_pool_info pi = LSCHED_POOL_INFO_INIT;
  OK(lsched_cluster_pool_info(c, pool, &pi));
  return pi.free;
}

/* A 6-GPU request on a host with 2 local GPUs composes 4 (the local ones
 * first); the release detaches them. */
static void test_compose_four(void) {
  lsched_cluster *c = lt_new_cluster();
  int h = add_host(c, 2 + 8); /* 2 local + 8 slots (min(16, 8)) */
  int pool = add_pool(c, 16, 8, &h, 1, 0);
  uint64_t slots, att;
  MT_EQ(lsched_pool_of_node(c, h, &slots, &att), pool);
  MT_EQ_U(slots, 0x3FCu); /* GPUs 2..9 */
  MT_EQ_U(att, 0);
  lsched_totals t = LSCHED_TOTALS_INIT;
  lsched_cluster_totals(c, &t);
  MT_EQ(t.gpus, 18); /* 2 local + 16 in the chassis */
  MT_EQ(t.gpu_milli_free, 18000);
  lsched_registry *reg = NULL;
  lsched_policy *p = policy(c, &reg, "best-fit");
  lsched_request r = req(6, 1000);
  lsched_placement pl;
  OK(lsched_policy_place(p, &r, &pl));
  MT_EQ_U(pl.gpu_mask, 0x3Fu); /* GPUs 0..5: local 0,1 + slots 2..5 */
  MT_EQ_U(pl.gpu_mask & slots & ~att, 0x3Cu); /* composes 4 */
  OK(lsched_alloc(c, &pl));
  MT_EQ(lsched_pool_of_node(c, h, NULL, &att), pool);
  MT_EQ_U(att, 0x3Cu);
  MT_EQ(pool_free(c, pool), 12);
  lsched_cluster_totals(c, &t);
  MT_EQ(t.gpu_milli_free, 12000); /* 18 - 6 */
  OK(lsched_release(c, &pl));
  MT_EQ(lsched_pool_of_node(c, h, NULL, &att), pool);
  MT_EQ_U(att, 0);
  MT_EQ(pool_free(c, pool), 16);
  OK(lsched_cluster_check(c));
  lsched_policy_destroy(p);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}

/* The per-host cap: 2 local + at most 8 composed; 11 never fits, and with
 * two hosts on a 16-GPU chassis each still gets its 8. */
static void test_cap(void) {
  lsched_cluster *c = lt_new_cluster();
  int hs[2] = {add_host(c, 2 + 8), add_host(c, 0 + 8)};
  int pool = add_pool(c, 16, 8, hs, 2, 0);
  lsched_registry *reg = NULL;
  lsched_policy *p = policy(c, &reg, "first-fit");
  lsched_request r = req(11, 1000);
  lsched_placement a, b;
  MT_EQ(lsched_policy_place(p, &r, &a), LSCHED_ENEVER);
  r = req(10, 1000);
  OK(lsched_policy_place(p, &r, &a));
  MT_EQ(a.node, hs[0]);
  OK(lsched_alloc(c, &a));
  MT_EQ(pool_free(c, pool), 8);
  r = req(8, 1000);
  OK(lsched_policy_place(p, &r, &b));
  MT_EQ(b.node, hs[1]);
  OK(lsched_alloc(c, &b));
  MT_EQ(pool_free(c, pool), 0);
  r = req(1, 1000);
  MT_EQ(lsched_policy_place(p, &r, &b), LSCHED_ENOFIT);
  lsched_policy_destroy(p);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}

/* A 4-GPU pool reachable from two GPU-less hosts serves one at a time;
 * with keep_attached the GPUs stay with the first host after the release
 * (sticky reuse) until lsched_pool_detach(). */
static void test_one_at_a_time(void) {
  for (int keep = 0; keep <= 1; keep++) {
    lsched_cluster *c = lt_new_cluster();
    int hs[2] = {add_host(c, 4), add_host(c, 4)};
    int pool = add_pool(c, 4, 4, hs, 2, keep);
    lsched_registry *reg = NULL;
    lsched_policy *p = policy(c, &reg, "first-fit");
    lsched_request r4 = req(4, 1000), r1 = req(1, 1000);
    lsched_placement a, b;
    OK(lsched_policy_place(p, &r4, &a));
    MT_EQ(a.node, hs[0]);
    OK(lsched_alloc(c, &a));
    MT_EQ(lsched_fits(c, hs[1], &r1), 0); /* host 2 sees every slot taken */
    int g[4];
    MT_EQ(lsched_cluster_gpus_free(c, hs[1], g, 4), 4);
    MT_EQ(g[0] + g[1] + g[2] + g[3], 0);
    MT_EQ(lsched_policy_place(p, &r1, &b), LSCHED_ENOFIT);
    OK(lsched_release(c, &a));
    uint64_t att;
    lsched_pool_of_node(c, hs[0], NULL, &att);
    if (keep) {
      MT_EQ_U(att, 0xFu); /* attached idle */
      MT_EQ(pool_free(c, pool), 0);
      MT_EQ(lsched_fits(c, hs[1], &r1), 0);
      MT_EQ(lsched_fits(c, hs[0], &r4), 1); /* sticky reuse */
      lsched_totals t = LSCHED_TOTALS_INIT;
      lsched_cluster_totals(c, &t);
      MT_EQ(t.gpus, 4);
      MT_EQ(t.gpu_milli_free, 4000);
      MT_EQ(lsched_pool_detach(c, hs[0], 0x3), 2);
      MT_EQ(pool_free(c, pool), 2);
      MT_EQ(lsched_fits(c, hs[1], &r1), 1);
      lsched_request r3 = req(3, 1000);
      MT_EQ(lsched_fits(c, hs[1], &r3), 0); /* 2 free in the chassis */
      MT_EQ(lsched_pool_detach(c, hs[0], ~UINT64_C(0)), 2);
      MT_EQ(lsched_pool_detach(c, hs[0], ~UINT64_C(0)), 0);
    } else {
      MT_EQ_U(att, 0);
    }
    MT_EQ(pool_free(c, pool), 4);
    OK(lsched_policy_place(p, &r4, &b));
    OK(lsched_alloc(c, &b));
    OK(lsched_release(c, &b));
    lsched_policy_destroy(p);
    lsched_registry_destroy(reg);
    lsched_cluster_destroy(c);
  }
}

/* Shared GPUs: a composed GPU shared by two jobs stays attached until the
 * last leaves; blocked slots reject an allocation. */
static void test_shared_and_errors(void) {
  lsched_cluster *c = lt_new_cluster();
  int hs[2] = {add_host(c, 2), add_host(c, 2)};
  int pool = add_pool(c, 2, 2, hs, 2, 0);
  lsched_placement a;
  memset(&a, 0, sizeof a);
  a.version = LSCHED_PLACEMENT_VERSION;
  a.node = hs[0];
  a.cpu_milli = 100;
  a.memory_mib = 10;
  a.gpu_count = 1;
  a.gpu_milli = 500;
  a.gpu_mask = 0x1;
  lsched_placement b = a;
  OK(lsched_alloc(c, &a));
  OK(lsched_alloc(c, &b));
  MT_EQ(pool_free(c, pool), 1);
  OK(lsched_release(c, &a));
  MT_EQ(pool_free(c, pool), 1); /* b still holds half of it */
  lsched_placement x = a;
  x.node = hs[1];
  x.gpu_mask = 0x2; /* host 2's second slot is blocked (1 GPU left) */
  MT_EQ(lsched_alloc(c, &x), LSCHED_ERANGE);
  x.gpu_mask = 0x1;
  OK(lsched_alloc(c, &x));
  MT_EQ(pool_free(c, pool), 0);
  OK(lsched_release(c, &x));
  OK(lsched_release(c, &b));
  MT_EQ(pool_free(c, pool), 2);
  /* Bad specs. */
  lsched_pool_spec ps = LSCHED_POOL_SPEC_INIT;
  ps.gpus = 4;
  ps.max_per_host = 4;
  ps.hosts = hs;
  ps.nhosts = 1;
  MT_EQ(lsched_cluster_add_pool(c, &ps, NULL), LSCHED_ESTATE); /* 2 GPUs */
  int nh = add_host(c, 4);
  ps.hosts = &nh;
  ps.gpus = 0;
  MT_EQ(lsched_cluster_add_pool(c, &ps, NULL), LSCHED_EINVAL);
  ps.gpus = 4;
  OK(lsched_cluster_add_pool(c, &ps, NULL));
  MT_EQ(lsched_cluster_add_pool(c, &ps, NULL), LSCHED_ESTATE); /* again */
  MT_EQ(lsched_cluster_remove_node(c, nh), LSCHED_ESTATE);
  MT_EQ(lsched_pool_detach(c, 99, 1), LSCHED_ENOENT);
  MT_EQ(lsched_cluster_pool_count(c), 2);
  lsched_cluster_destroy(c);
}

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* A pooled cluster: fixed 8-GPU nodes, hosts with 4 or 0 local GPUs on
 * two chassis, one of them reachable from three hosts. */
static lsched_cluster *pooled(int keep, int *hosts, int *nhosts) {
  lsched_cluster *c = lt_new_cluster();
  add_host(c, 8);
  int h[5];
  h[0] = add_host(c, 4 + 4);
  h[1] = add_host(c, 0 + 4);
  h[2] = add_host(c, 4 + 4);
  h[3] = add_host(c, 0 + 6);
  h[4] = add_host(c, 2 + 6);
  add_host(c, 8);
  add_pool(c, 6, 4, h, 3, keep);
  add_pool(c, 8, 6, h + 3, 2, keep);
  if (hosts)
    memcpy(hosts, h, sizeof h);
  if (nhosts)
    *nhosts = 5;
  return c;
}

/* Every built-in policy on a pooled cluster: each placement it returns
 * allocates (the invariant checker runs on every change), it answers
 * ENOFIT only when no node fits, and releasing everything restores every
 * GPU share and every pool bit for bit. */
static void test_policies_property(void) {
  lsched_registry *reg = lt_builtins();
  size_t np = lsched_registry_count(reg);
  int tested = 0;
  for (size_t pi = 0; pi < np; pi++) {
    const lsched_policy_ops *ops = lsched_registry_at(reg, pi);
    if (strncmp(ops->name, "mig", 3) == 0)
      continue; /* MIG policies place MIG requests only */
    for (int keep = 0; keep <= 1; keep++) {
      lsched_cluster *c = pooled(keep, NULL, NULL);
      int n = lsched_cluster_node_count(c);
      int before[64];
      int ng = 0;
      for (int i = 0; i < n; i++)
        ng += lsched_cluster_gpus_free(c, i, before + ng, 64 - ng);
      lsched_policy *p = NULL;
      OK(lsched_policy_create_from(&p, c, reg, ops->name));
      lsched_workload *w = NULL;
      OK(lsched_workload_create(&w, NULL));
      for (int k = 0; k <= 4; k++) {
        lsched_task_type tt = LSCHED_TASK_TYPE_INIT;
        tt.cpu_milli = 1000;
        tt.gpu_count = k;
        tt.gpu_milli = k ? 1000 : 0;
        tt.weight = 1;
        OK(lsched_workload_add(w, &tt));
      }
      int wr = lsched_policy_set_workload(p, w);
      MT_ASSERT(wr == LSCHED_OK || wr == LSCHED_ENOENT);
      lsched_placement live[256];
      int nlive = 0;
      uint64_t s = 0x9E3779B97F4A7C15ull + pi * 7 + (uint64_t)keep;
      for (int step = 0; step < 600; step++) {
        if (nlive > 0 && (rng_next(&s) % 3 == 0 || nlive == 256)) {
          int j = (int)(rng_next(&s) % (uint64_t)nlive);
          OK(lsched_release(c, &live[j]));
          live[j] = live[--nlive];
          if (keep && rng_next(&s) % 2)
            for (int i = 0; i < n; i++)
              MT_GE(lsched_pool_detach(c, i, ~UINT64_C(0)),
                    lsched_pool_of_node(c, i, NULL, NULL) >= 0 ? 0 : -99);
          continue;
        }
        int k = (int)(rng_next(&s) % 9);
        int milli = rng_next(&s) % 2 ? 1000 : 100 * (1 + (int)(rng_next(&s) % 9));
        if (k > 1)
          milli = 1000;
        lsched_request r = req(k, milli);
        lsched_placement out;
        int rc = lsched_policy_place(p, &r, &out);
        if (rc == LSCHED_OK) {
          MT_ASSERT_MSG(lsched_alloc(c, &out) == LSCHED_OK, "%s: %s",
                        ops->name, lsched_cluster_errmsg(c));
          live[nlive++] = out;
        } else {
          MT_ASSERT_MSG(rc == LSCHED_ENOFIT || rc == LSCHED_ENEVER,
                        "%s: %s", ops->name, lsched_err_name(rc));
          for (int i = 0; i < n; i++)
            MT_ASSERT_MSG(!lsched_fits(c, i, &r),
                          "%s said %s but node %d fits %d x %d", ops->name,
                          lsched_err_name(rc), i, k, milli);
        }
      }
      while (nlive > 0)
        OK(lsched_release(c, &live[--nlive]));
      for (int i = 0; i < n; i++)
        lsched_pool_detach(c, i, ~UINT64_C(0));
      int after[64];
      int ng2 = 0;
      for (int i = 0; i < n; i++)
        ng2 += lsched_cluster_gpus_free(c, i, after + ng2, 64 - ng2);
      MT_EQ(ng2, ng);
      MT_ASSERT(memcmp(before, after, (size_t)ng * sizeof *after) == 0);
      MT_EQ(pool_free(c, 0), 6);
      MT_EQ(pool_free(c, 1), 8);
      OK(lsched_cluster_check(c));
      lsched_policy_destroy(p);
      lsched_workload_destroy(w);
      lsched_cluster_destroy(c);
      tested++;
    }
  }
  MT_GE(tested, 20);
  lsched_registry_destroy(reg);
}

/* compose-aware (policies/compose_aware.c): a local fit before a composing
 * one, the fewest composed GPUs, an attached idle GPU before a new one, the
 * fullest chassis; first-fit takes the first node that fits instead. */
static void test_compose_aware(void) {
  lsched_cluster *c = lt_new_cluster();
  int h0 = add_host(c, 2 + 4), h1 = add_host(c, 4 + 4);
  int ha = add_host(c, 0 + 2), hb = add_host(c, 0 + 6);
  int hx = add_host(c, 0 + 1), hy = add_host(c, 0 + 1);
  int p01[2] = {h0, h1}, pxy[2] = {hx, hy};
  add_pool(c, 4, 4, p01, 2, 0);
  add_pool(c, 2, 2, &ha, 1, 0);
  add_pool(c, 6, 6, &hb, 1, 0);
  add_pool(c, 2, 1, pxy, 2, 1);
  lsched_registry *reg = NULL;
  lsched_policy *ca = policy(c, &reg, "compose-aware");
  lsched_policy *ff = policy(c, &reg, "first-fit");
  lsched_request r = req(3, 1000);
  lsched_placement a, b, x;
  OK(lsched_policy_place(ff, &r, &a));
  MT_EQ(a.node, h0); /* 2 local + 1 composed */
  OK(lsched_policy_place(ca, &r, &a));
  MT_EQ(a.node, h1); /* 3 local */
  MT_EQ_U(a.gpu_mask, 0x7u);
  OK(lsched_alloc(c, &a));
  r = req(2, 1000);
  OK(lsched_policy_place(ca, &r, &b));
  MT_EQ(b.node, h0); /* 2 local, nothing stranded (h1: 1 local + 1 pool) */
  MT_EQ_U(b.gpu_mask, 0x3u);
  OK(lsched_alloc(c, &b));
  /* 2 composed anywhere now (h1 would use its last local GPU + 1
   * composed: 1 composed wins). */
  OK(lsched_policy_place(ca, &r, &x));
  MT_EQ(x.node, h1);
  MT_EQ_U(x.gpu_mask, 0x18u); /* local GPU 3 + slot 4 */
  OK(lsched_release(c, &a));
  OK(lsched_release(c, &b));
  /* Sticky: hy holds an attached idle GPU; hx (earlier) would compose. */
  r = req(1, 1000);
  lsched_placement y = {0};
  y.version = LSCHED_PLACEMENT_VERSION;
  y.node = hy;
  y.gpu_count = 1;
  y.gpu_milli = 1000;
  y.gpu_mask = 1;
  OK(lsched_alloc(c, &y));
  OK(lsched_release(c, &y)); /* keep_attached: stays with hy */
  OK(lsched_policy_place(ff, &r, &x));
  MT_EQ(x.node, h0); /* first-fit: h0's local GPU */
  OK(lsched_policy_place(ca, &r, &x));
  MT_EQ(x.node, h0); /* a local GPU still first */
  /* Fill every local GPU: then hy's attached idle GPU beats composing. */
  lsched_placement l0 = {0}, l1 = {0};
  l0.version = l1.version = LSCHED_PLACEMENT_VERSION;
  l0.node = h0;
  l0.gpu_count = 2;
  l0.gpu_milli = 1000;
  l0.gpu_mask = 0x3;
  l1.node = h1;
  l1.gpu_count = 4;
  l1.gpu_milli = 1000;
  l1.gpu_mask = 0xF;
  OK(lsched_alloc(c, &l0));
  OK(lsched_alloc(c, &l1));
  OK(lsched_policy_place(ca, &r, &x));
  MT_EQ(x.node, hy);
  OK(lsched_policy_place(ff, &r, &x));
  MT_EQ(x.node, h0); /* first-fit composes on h0 */
  /* 2 GPUs: every candidate composes 2 and strands nothing; the chassis
   * left: h0 / h1's 2, ha's 0, hb's 4: ha (the fullest chassis first). */
  r = req(2, 1000);
  OK(lsched_policy_place(ca, &r, &x));
  MT_EQ(x.node, ha);
  lsched_policy_destroy(ca);
  lsched_policy_destroy(ff);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}

/* The score index follows pool changes: every scoring policy with its
 * index (default) and with index=off (the scan) gives the same placement
 * at every step on a pooled cluster (composes block and detaches reopen
 * other hosts' slots: node changes the index must see). */
static void test_score_index_pools(void) {
  lsched_registry *reg = lt_builtins();
  int tested = 0;
  for (size_t pi = 0; pi < lsched_registry_count(reg); pi++) {
    const lsched_policy_ops *ops = lsched_registry_at(reg, pi);
    lsched_cluster *c = pooled(1, NULL, NULL);
    int n = lsched_cluster_node_count(c);
    lsched_policy *a = NULL, *b = NULL;
    OK(lsched_policy_create_from(&a, c, reg, ops->name));
    OK(lsched_policy_create_from(&b, c, reg, ops->name));
    if (lsched_policy_set_param(b, "index", "off") != LSCHED_OK ||
        strncmp(ops->name, "mig", 3) == 0) {
      lsched_policy_destroy(a);
      lsched_policy_destroy(b);
      lsched_cluster_destroy(c);
      continue;
    }
    lsched_placement live[256];
    int nlive = 0;
    uint64_t s = 0xC0FFEEull + pi;
    for (int step = 0; step < 500; step++) {
      if (nlive > 0 && (rng_next(&s) % 3 == 0 || nlive == 256)) {
        int j = (int)(rng_next(&s) % (uint64_t)nlive);
        OK(lsched_release(c, &live[j]));
        live[j] = live[--nlive];
        if (rng_next(&s) % 2)
          for (int i = 0; i < n; i++)
            lsched_pool_detach(c, i, ~UINT64_C(0));
        continue;
      }
      int k = (int)(rng_next(&s) % 7);
      lsched_request r = req(k, k > 1 || rng_next(&s) % 2 ? 1000 : 300);
      lsched_placement pa, pb;
      int ra = lsched_policy_place(a, &r, &pa);
      int rb = lsched_policy_place(b, &r, &pb);
      MT_EQ(ra, rb);
      if (ra != LSCHED_OK)
        continue;
      MT_ASSERT_MSG(pa.node == pb.node && pa.gpu_mask == pb.gpu_mask,
                    "%s step %d: index node %d mask %llx, scan node %d mask "
                    "%llx",
                    ops->name, step, pa.node, (unsigned long long)pa.gpu_mask,
                    pb.node, (unsigned long long)pb.gpu_mask);
      OK(lsched_alloc(c, &pa));
      live[nlive++] = pa;
    }
    lsched_policy_destroy(a);
    lsched_policy_destroy(b);
    lsched_cluster_destroy(c);
    tested++;
  }
  MT_GE(tested, 5);
  lsched_registry_destroy(reg);
}

int main(void) {
  mt_begin("test_pools");
  MT_RUN(test_compose_four);
  MT_RUN(test_cap);
  MT_RUN(test_one_at_a_time);
  MT_RUN(test_shared_and_errors);
  MT_RUN(test_policies_property);
  MT_RUN(test_compose_aware);
  MT_RUN(test_score_index_pools);
  return mt_finish();
}
