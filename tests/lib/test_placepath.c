/*
 * The placement path (issue #19, session 25): the fit index in lanes and
 * the request validated once per placement.
 *
 * The fit index (cluster.c) keeps CPU and memory maxima in 16-bit lanes
 * through a monotone rounding map (session 28; 32-bit lanes capped at
 * 2^31 - 1 before) and the GPU maxima in 16-bit lanes capped below 2^15,
 * a necessary test that the exact per-node test completes. test_index_wide
 * replays random
 * placements, releases, cordons and order changes on nodes whose CPU and
 * memory go past the caps (and requests past them, and GPU counts past 64)
 * and checks every lsched_next_fit() against a scan of the visit order
 * with lsched_fits(), lsched_collect_fits() against the same scan, and
 * first-fit's placement (it picks its GPUs itself) against
 * lsched_pick_gpus(LOWEST) on the node found.
 *
 * A request is validated once per placement: lsched_place_gang() and
 * lsched_policy_place() mark the request they validated, and the fit and
 * pick calls skip their own check for that request only, while the
 * policy's place runs. test_validate_once checks that every entry point
 * still rejects a malformed request with its former answer and message,
 * that a policy's other (malformed) requests are still rejected during a
 * placement, and that the mark ends with the call: the same request object
 * made malformed afterwards is rejected again.
 *
 * test_index_rounding does what test_index_wide does with free amounts
 * and requests within a rounding step of each other and around the powers
 * of two where the step changes.
 *
 * lsched_fits() itself rules some nodes out before it validates the
 * request (session 28): both index tests compare it, on every node at
 * every step, with lsched_fits_after() and check that malformed requests
 * still fit nowhere.
 *
 * Mutations this catches: in cluster.c lane_amount, 510 s instead of
 * 512 s (the lane drops by one at each power of two: a release there
 * lowers its leaf, which the release climb, a maximum with the old entry,
 * does not follow; lsched_cluster_check() reports the stale path), or the
 * cap of lane15 at 0xFFFF (the guard bit borrows); in lsched_fits, >=
 * for > in the GPU count's early answer, or the whole and the nonzero
 * counts swapped; in
 * seg_update_alloc, skip the climb on release; in lsched__req_valid,
 * accept any request while c->valid_req is set.
 */
#include "libtest.h"

#include <libsched/policy_sdk.h>
#include <stdlib.h>
#include <string.h>

#define BIG LSCHED_MAX_CPU_MILLI /* past the 2^31 - 1 lane cap */

static int scan_first(const lsched_cluster *c, const lsched_request *q) {
  const int *order = lsched_cluster_order(c);
  for (int p = 0; p < lsched_cluster_node_count(c); p++)
    if (lsched_fits(c, order[p], q))
      return p;
  return -1;
}

/* lsched_fits() answers some "no" before validating the request (free
 * CPU, memory or GPUs short); lsched_fits_after() with nothing released
 * decides the same question on its own path (0: fits now). Every node of
 * these tests is shared or exclusive (fits_after does not take MIG). A
 * malformed request fits nowhere. */
static void check_fits(const lsched_cluster *c, int node,
                       const lsched_request *q) {
  int want = lsched_fits_after(c, node, q, NULL, 0) == 0;
  MT_EQ(lsched_fits(c, node, q), want);
  lsched_request bad = *q;
  bad.cpu_milli = -1 - bad.cpu_milli;
  MT_EQ(lsched_fits(c, node, &bad), 0);
  bad = *q;
  bad.gpu_milli = bad.gpu_count > 0 ? LSCHED_GPU_MILLI + 1 : 1;
  MT_EQ(lsched_fits(c, node, &bad), 0);
}

/* check_fits on every node, and lsched_collect_fits() into all against
 * lsched_fits() in the visit order; the count collected. */
static int check_collect(const lsched_cluster *c, const lsched_request *q,
                         int *all) {
  const int n = lsched_cluster_node_count(c);
  const int *order = lsched_cluster_order(c);
  int m = lsched_collect_fits(c, q, all), want_m = 0;
  for (int p = 0; p < n; p++)
    check_fits(c, p, q);
  for (int p = 0; p < n; p++)
    if (lsched_fits(c, order[p], q)) {
      MT_ASSERT(want_m < m && all[want_m] == order[p]);
      want_m++;
    }
  MT_EQ(m, want_m);
  return m;
}

static lsched_request random_req(struct rng *r) {
  static const int64_t amounts[] = {0,          1,          500,
                                    4000,       64000,      INT64_C(2147483646),
                                    INT64_C(2147483647), INT64_C(2147483648),
                                    INT64_C(4000000000), BIG, BIG + 1};
  static const int counts[] = {0, 1, 1, 2, 3, 4, 8, 64, 65, 40000};
  int n = (int)(sizeof amounts / sizeof amounts[0]);
  int k = counts[rbelow(r, (int)(sizeof counts / sizeof counts[0]))];
  int milli = k == 0 ? 0 : rbelow(r, 2) ? 1000 : 1 + rbelow(r, 999);
  lsched_request q = lt_req(amounts[rbelow(r, n)], amounts[rbelow(r, n)], k,
                            milli);
  if (k > 0 && rbelow(r, 4) == 0)
    q.model_mask = UINT64_C(1) << rbelow(r, 2);
  return q;
}

/* A uniformly random visit order of c's n nodes (n <= 64). */
static void random_order(lsched_cluster *c, struct rng *r, int n) {
  int order[64];
  for (int i = 0; i < n; i++)
    order[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = rbelow(r, i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  OK(lsched_cluster_set_order(c, order, n));
}

static void test_index_wide(void) {
  lsched_cluster *c = lt_new_cluster();
  static const int64_t caps[] = {8000, INT64_C(3000000000), BIG};
  static const int gpus[] = {0, 1, 2, 4, 8, 64};
  struct rng r = {0x5eed2025};
  int n = 0;
  for (int i = 0; i < 48; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = caps[rbelow(&r, 3)];
    s.memory_mib = caps[rbelow(&r, 3)];
    s.gpu_count = gpus[rbelow(&r, 6)];
    s.gpu_model = s.gpu_count > 0 ? rbelow(&r, 2) : -1;
    s.gpu_mode = rbelow(&r, 3) ? LSCHED_GPU_SHARED : LSCHED_GPU_EXCLUSIVE;
    OK(lsched_cluster_add_node(c, &s, NULL));
    n++;
  }
  lsched_registry *reg = lt_builtins();
  lsched_policy *pol = NULL;
  OK(lsched_policy_create_from(&pol, c, reg, "first-fit"));
  lsched_placement live[512];
  int nlive = 0, found = 0, collected = 0;
  int *all = malloc((size_t)n * sizeof *all);
  MT_ASSERT(all != NULL);
  for (int step = 0; step < 20000; step++) {
    int op = rbelow(&r, 20);
    if (op == 0) { /* a new visit order */
      random_order(c, &r, n);
    } else if (op == 1) { /* cordon or reopen a node */
      int node = rbelow(&r, n);
      OK(lsched_cluster_set_node_state(
          c, node, rbelow(&r, 2) ? LSCHED_NODE_UP : LSCHED_NODE_CORDONED));
    } else if (op < 8 && nlive > 0) { /* a release */
      int i = rbelow(&r, nlive);
      OK(lsched_release(c, &live[i]));
      live[i] = live[--nlive];
    } else { /* a first-fit placement, checked against the scan */
      lsched_request q = random_req(&r);
      int want = scan_first(c, &q);
      int got = lsched_next_fit(c, &q, 0);
      MT_EQ(got, want);
      int from = rbelow(&r, n + 1);
      int want_from = -1;
      const int *order = lsched_cluster_order(c);
      for (int p = from; p < n && want_from < 0; p++)
        if (lsched_fits(c, order[p], &q))
          want_from = p;
      MT_EQ(lsched_next_fit(c, &q, from), want_from);
      collected += check_collect(c, &q, all);
      if (got >= 0 && nlive < 512) {
        found++;
        OK(lsched_pick_gpus(c, order[got], &q, LSCHED_PICK_LOWEST,
                            &live[nlive]));
        /* first-fit picks its GPUs itself: the same placement. */
        lsched_placement ff = LSCHED_PLACEMENT_INIT;
        OK(lsched_policy_place(pol, &q, &ff));
        MT_ASSERT(memcmp(&ff, &live[nlive], sizeof ff) == 0);
        OK(lsched_alloc(c, &live[nlive]));
        nlive++;
      }
    }
  }
  MT_ASSERT(found > 1000); /* the replay placed, and also found no node */
  MT_ASSERT(collected > found);
  OK(lsched_cluster_check(c));
  free(all);
  lsched_policy_destroy(pol);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}

/* A free amount near v: v itself or a few units either side, or v less
 * or more 0.2% (the size of a lane step at that amount), at least 0. */
static int64_t near(struct rng *r, int64_t v) {
  int64_t d = rbelow(r, 3) == 0 ? v / 512 : rbelow(r, 5);
  int64_t x = rbelow(r, 2) ? v + d : v - d;
  return x < 0 ? 0 : x;
}

/* CPU and memory go into 16-bit lanes through a rounding map (exact below
 * 1024, then a 10-bit mantissa): requests within a rounding step of a
 * node's free amounts, on either side, and around the powers of two where
 * the step doubles, checked as test_index_wide does (scan, collect). */
static void test_index_rounding(void) {
  lsched_cluster *c = lt_new_cluster();
  static const int64_t bases[] = {1,       1000,    1023,         1024,
                                  1025,    2047,    2048,         4095,
                                  256000,  2097152, INT64_C(1) << 31,
                                  INT64_C(1) << 40};
  const int nb = (int)(sizeof bases / sizeof bases[0]);
  struct rng r = {0x0dd5eed5};
  int n = 30; /* a tree of odd height (32 leaves; test_index_wide's 64) */
  for (int i = 0; i < n; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = near(&r, bases[rbelow(&r, nb)]) + 1;
    s.memory_mib = near(&r, bases[rbelow(&r, nb)]) + 1;
    if (s.cpu_milli > BIG)
      s.cpu_milli = BIG;
    if (s.memory_mib > LSCHED_MAX_MEMORY_MIB)
      s.memory_mib = LSCHED_MAX_MEMORY_MIB;
    s.gpu_count = rbelow(&r, 3) * 4;
    s.gpu_model = s.gpu_count > 0 ? 0 : -1;
    OK(lsched_cluster_add_node(c, &s, NULL));
  }
  lsched_placement live[256];
  int nlive = 0, found = 0, missed = 0;
  int *all = malloc((size_t)n * sizeof *all);
  MT_ASSERT(all != NULL);
  const int *order = lsched_cluster_order(c);
  for (int step = 0; step < 20000; step++) {
    int op = rbelow(&r, 10);
    if (op < 3 && nlive > 0) {
      int i = rbelow(&r, nlive);
      OK(lsched_release(c, &live[i]));
      live[i] = live[--nlive];
      continue;
    }
    /* An ask near some node's free amounts, or near a base. */
    lsched_node_info info = LSCHED_NODE_INFO_INIT;
    OK(lsched_cluster_node_info(c, rbelow(&r, n), &info));
    int64_t cpu = rbelow(&r, 4) ? near(&r, info.cpu_free)
                                : near(&r, bases[rbelow(&r, nb)]);
    int64_t mem = rbelow(&r, 4) ? near(&r, info.memory_free)
                                : near(&r, bases[rbelow(&r, nb)]);
    if (rbelow(&r, 3) == 0)
      mem = 0;
    int k = rbelow(&r, 3);
    lsched_request q = lt_req(cpu, mem, k, k ? 250 * (1 + rbelow(&r, 4)) : 0);
    int want = scan_first(c, &q);
    MT_EQ(lsched_next_fit(c, &q, 0), want);
    check_collect(c, &q, all);
    if (want < 0) {
      missed++;
    } else if (nlive < 256) {
      found++;
      OK(lsched_pick_gpus(c, order[want], &q, LSCHED_PICK_LOWEST,
                          &live[nlive]));
      OK(lsched_alloc(c, &live[nlive]));
      nlive++;
    }
  }
  MT_ASSERT(found > 1000 && missed > 1000); /* both answers were checked */
  OK(lsched_cluster_check(c));
  free(all);
  lsched_cluster_destroy(c);
}

/* A policy that, while placing, asks the fit and pick calls about a
 * malformed request of its own, then places first-fit. */
struct probe {
  int next_fit, pick, fits, ever;
};

static struct probe probe_seen; /* what the last probe_place saw */

static int probe_place(void *state, const lsched_cluster *c,
                       const lsched_request *req, lsched_placement *out) {
  (void)state;
  struct probe *pr = &probe_seen;
  lsched_request bad = *req;
  bad.gpu_count = 1;
  bad.gpu_milli = 0; /* GPUs without a share: malformed */
  pr->next_fit = lsched_next_fit(c, &bad, 0);
  pr->pick = lsched_pick_gpus(c, 0, &bad, LSCHED_PICK_LOWEST, out);
  pr->fits = lsched_fits(c, 0, &bad);
  pr->ever = lsched_can_ever_fit(c, &bad);
  int p = lsched_next_fit(c, req, 0);
  if (p < 0)
    return LSCHED_ENOFIT;
  return lsched_pick_gpus(c, lsched_cluster_order(c)[p], req,
                          LSCHED_PICK_LOWEST, out);
}

static void test_validate_once(void) {
  lsched_cluster *c = lt_new_cluster();
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 32000;
  s.memory_mib = 65536;
  s.gpu_count = 4;
  s.gpu_model = A100;
  OK(lsched_cluster_add_node(c, &s, NULL));
  lsched_policy_ops ops = LSCHED_POLICY_OPS_INIT;
  ops.name = "probe";
  ops.place = probe_place;
  lsched_policy *p = NULL;
  OK(lsched_policy_create(&p, c, &ops));
  const struct probe *pr = &probe_seen;

  /* A good request: placed; the probe's malformed one rejected inside. */
  lsched_request q = lt_req(1000, 1024, 1, 500);
  lsched_placement out[4];
  int nout = 0;
  OK(lsched_place_gang(p, &q, out, 4, &nout));
  MT_EQ(nout, 1);
  MT_EQ(pr->next_fit, -1);
  MT_EQ(pr->pick, LSCHED_EINVAL);
  MT_EQ(pr->fits, 0);
  MT_EQ(pr->ever, 0);
  lsched_placement one;
  OK(lsched_policy_place(p, &q, &one));
  MT_EQ(pr->next_fit, -1);
  MT_EQ(pr->pick, LSCHED_EINVAL);

  /* The same object made malformed after the calls: rejected everywhere,
   * with the former answers and message. */
  q.gpu_milli = 0;
  MT_EQ(lsched_request_validate(&q), LSCHED_EINVAL);
  MT_EQ(lsched_place_gang(p, &q, out, 4, &nout), LSCHED_EINVAL);
  MT_EQ(lsched_policy_place(p, &q, &one), LSCHED_EINVAL);
  MT_ASSERT(strcmp(lsched_cluster_errmsg(c), "place: malformed request") == 0);
  MT_EQ(lsched_next_fit(c, &q, 0), -1);
  MT_EQ(lsched_pick_gpus(c, 0, &q, LSCHED_PICK_LOWEST, &one), LSCHED_EINVAL);
  MT_EQ(lsched_fits(c, 0, &q), 0);
  MT_EQ(lsched_can_ever_fit(c, &q), 0);
  MT_EQ(lsched_can_ever_fit_gang(c, &q), 0);
  MT_EQ(lsched_next_fit(c, NULL, 0), -1);
  MT_EQ(lsched_place_gang(p, NULL, out, 4, &nout), LSCHED_EINVAL);
  MT_EQ(lsched_policy_place(p, NULL, &one), LSCHED_EINVAL);

  /* The request that never fits is still told apart by the single place,
   * and stays ENOFIT for the gang call. */
  lsched_request never = lt_req(64000, 1024, 1, 500);
  MT_EQ(lsched_policy_place(p, &never, &one), LSCHED_ENEVER);
  MT_EQ(lsched_place_gang(p, &never, out, 4, &nout), LSCHED_ENOFIT);
  OK(lsched_release(c, &out[0]));
  OK(lsched_cluster_check(c));
  lsched_policy_destroy(p);
  lsched_cluster_destroy(c);
}

/* The same request through the plain search: a node_filter that accepts
 * every node keeps lsched_next_fit() off its memo. */
static int accept_all(void *user, const lsched_cluster *c, int node) {
  (void)user;
  (void)c;
  (void)node;
  return 1;
}

static int plain_next_fit(const lsched_cluster *c, const lsched_request *q,
                          int from) {
  lsched_request p = *q;
  p.node_filter = accept_all;
  return lsched_next_fit(c, &p, from);
}

static lsched_node_spec memo_spec(struct rng *r) {
  static const int gpus[] = {0, 1, 2, 4, 8, 8};
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 8000 * (1 + rbelow(r, 8));
  s.memory_mib = 16384 * (1 + rbelow(r, 8));
  s.gpu_count = gpus[rbelow(r, 6)];
  s.gpu_model = s.gpu_count > 0 ? rbelow(r, 2) : -1;
  s.gpu_mode = rbelow(r, 4) ? LSCHED_GPU_SHARED : LSCHED_GPU_EXCLUSIVE;
  s.features = (uint64_t)rbelow(r, 4);
  return s;
}

/* lsched_next_fit()'s first-fit memo (cluster.c): per request shape, the
 * position before which no node fits. Random replays on random clusters
 * with few shapes (so that the memo answers) and more shapes than it holds
 * (so that shapes are evicted): first-fit placements, releases, gang
 * placements and their undoing (lsched_gang_fits_first), cordons, drains
 * and reopenings, node updates, removals and additions, new visit orders.
 * Every placement and every lsched_next_fit() from 0 or from a random
 * position is compared with the plain search and with the scan, and the
 * cluster (check_invariants; lsched_cluster_check() checks every bound)
 * after each step. Mutations this catches: in cluster.c, no memo_gained()
 * in seg_update_alloc (a release), or in seg_update (a reopened node), or
 * no memo_reset() in seg_build (a new order); the features or the model
 * mask left out of the memo's key (memo_key_of: shapes that differ only
 * there share a bound). */
static void test_next_fit_memo(void) {
  struct rng r = {0x3e3f17};
  int placed = 0, nofit = 0, changes = 0;
  for (int round = 0; round < 6; round++) {
    lsched_cluster *c = lt_new_cluster();
    int n = 8 + rbelow(&r, 40);
    for (int i = 0; i < n; i++) {
      lsched_node_spec s = memo_spec(&r);
      OK(lsched_cluster_add_node(c, &s, NULL));
    }
    lsched_registry *reg = lt_builtins();
    lsched_policy *pol = NULL;
    OK(lsched_policy_create_from(&pol, c, reg, "first-fit"));
    /* Shapes: a few in most rounds, more than the memo holds in others. */
    lsched_request shapes[24];
    int nshapes = round % 2 ? 24 : 5;
    for (int i = 0; i < nshapes; i++) {
      int k = rbelow(&r, 5);
      int milli = rbelow(&r, 2) ? 1000 : 250 * (1 + rbelow(&r, 3));
      shapes[i] = lt_req(1000 * (1 + rbelow(&r, 16)),
                         4096 * (1 + rbelow(&r, 8)), k, k ? milli : 0);
      if (k > 0 && rbelow(&r, 5) == 0)
        shapes[i].model_mask = UINT64_C(1) << rbelow(&r, 2);
      if (rbelow(&r, 5) == 0)
        shapes[i].features = (uint64_t)(1 + rbelow(&r, 3));
      if (i > 0 && rbelow(&r, 3) == 0) { /* the last shape, but for this */
        lsched_request q = shapes[i - 1];
        if (q.gpu_count > 0 && rbelow(&r, 2))
          q.model_mask = q.model_mask ? 0 : UINT64_C(1) << rbelow(&r, 2);
        else
          q.features ^= (uint64_t)(1 + rbelow(&r, 3));
        shapes[i] = q;
      }
    }
    lsched_placement live[256];
    int nlive = 0;
    for (int step = 0; step < 3000; step++) {
      int op = rbelow(&r, 40);
      n = lsched_cluster_node_count(c);
      if (op == 0) { /* a new visit order */
        random_order(c, &r, n);
        changes++;
      } else if (op <= 2) { /* cordon, drain or reopen */
        static const lsched_node_state st[] = {LSCHED_NODE_CORDONED,
                                               LSCHED_NODE_DRAINING,
                                               LSCHED_NODE_UP, LSCHED_NODE_UP};
        int node = rbelow(&r, n);
        if (lsched_cluster_node_state(c, node) != LSCHED_NODE_REMOVED) {
          OK(lsched_cluster_set_node_state(c, node, st[rbelow(&r, 4)]));
          changes++;
        }
      } else if (op == 3) { /* an update: CPU and features, or more */
        int node = rbelow(&r, n);
        lsched_node_info info = LSCHED_NODE_INFO_INIT;
        if (lsched_cluster_node_info(c, node, &info) == LSCHED_OK) {
          lsched_node_spec s = memo_spec(&r);
          int64_t used = info.cpu_milli - info.cpu_free;
          if (s.cpu_milli < used)
            s.cpu_milli = used;
          if (!lsched_cluster_node_idle(c, node)) { /* GPUs stay */
            s.memory_mib = info.memory_mib;
            s.gpu_count = info.gpu_count;
            s.gpu_model = info.gpu_model;
            s.gpu_mode = info.gpu_mode;
          }
          OK(lsched_cluster_update_node(c, node, &s));
          changes++;
        }
      } else if (op == 4 && n < 64) { /* a node comes or an idle one goes */
        int node = rbelow(&r, n);
        if (rbelow(&r, 2) &&
            lsched_cluster_node_state(c, node) != LSCHED_NODE_REMOVED &&
            lsched_cluster_node_idle(c, node)) {
          OK(lsched_cluster_remove_node(c, node));
        } else {
          lsched_node_spec s = memo_spec(&r);
          OK(lsched_cluster_add_node(c, &s, NULL));
        }
        changes++;
      } else if (op <= 16 && nlive > 0) { /* a release */
        int i = rbelow(&r, nlive);
        OK(lsched_release(c, &live[i]));
        live[i] = live[--nlive];
      } else if (op == 17) { /* a gang tried and undone */
        lsched_request g = lt_req(2000, 4096, 9 + rbelow(&r, 8), 1000);
        lsched_placement scratch[16];
        int rc = lsched_gang_fits_first(c, &g, scratch, 16);
        MT_ASSERT(rc == 0 || rc == 1);
      } else { /* a first-fit placement of a shape */
        lsched_request q = shapes[rbelow(&r, nshapes)];
        int want = scan_first(c, &q);
        MT_EQ(plain_next_fit(c, &q, 0), want);
        int from = rbelow(&r, n + 1);
        MT_EQ(lsched_next_fit(c, &q, from), plain_next_fit(c, &q, from));
        lsched_placement p = LSCHED_PLACEMENT_INIT;
        int rc = lsched_policy_place(pol, &q, &p);
        if (want < 0) {
          MT_ASSERT(rc == LSCHED_ENOFIT || rc == LSCHED_ENEVER);
          nofit++;
          continue;
        }
        OK(rc);
        const int *order = lsched_cluster_order(c);
        MT_EQ(p.node, order[want]);
        MT_EQ(lsched_next_fit(c, &q, 0), want);
        lsched_placement ref = LSCHED_PLACEMENT_INIT;
        OK(lsched_pick_gpus(c, order[want], &q, LSCHED_PICK_LOWEST, &ref));
        MT_ASSERT(memcmp(&p, &ref, sizeof p) == 0);
        if (nlive < 256) {
          OK(lsched_alloc(c, &p));
          live[nlive++] = p;
          placed++;
        }
      }
    }
    OK(lsched_cluster_check(c));
    lsched_policy_destroy(pol);
    lsched_registry_destroy(reg);
    lsched_cluster_destroy(c);
  }
  MT_ASSERT(placed > 3000 && nofit > 300 && changes > 400);
}

int main(void) {
  mt_begin("test_placepath");
  MT_RUN(test_index_wide);
  MT_RUN(test_index_rounding);
  MT_RUN(test_validate_once);
  MT_RUN(test_next_fit_memo);
  return mt_finish();
}
