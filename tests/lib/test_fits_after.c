/*
 * lsched_fits_after(), lsched_place_splits() and lsched_policy_flags()
 * (issue #19: EASY reservations answered per node, sim/engine/
 * reserve_nodes.c).
 *
 * test_random replays random allocations, releases and cordons on nodes of
 * every kind the call answers (shared and exclusive, 0 to 64 GPUs, two
 * models, features) and, for random requests (feature and model
 * restrictions included) and a random order of a node's live placements
 * (with placements of other nodes mixed in, which it must skip), compares
 * the answer with the reference: release the prefix on the cluster one
 * placement at a time, lsched_fits() after each, then allocate everything
 * back. test_hand: a case worked by hand, the errors (MIG node, pool host,
 * a release the node does not hold, bad arguments), and the cluster left
 * unchanged. test_flags_splits: the built-in policies' promise and when a
 * whole-GPU request is cut into parts. test_promise: the promise kept
 * (placed exactly when some node fits; random's calls that do not place
 * draw nothing). test_gang_first: lsched_gang_fits_first() by hand and
 * against first-fit's lsched_place_gang() (the same rule), the cluster
 * unchanged.
 *
 * Mutations this catches: counting GPUs with free > d instead of >= d;
 * testing the request before the first release only (no m = 0 answer);
 * not skipping other nodes' placements.
 */
#include "libtest.h"

#include <libsched/mig.h>
#include <libsched/policy_sdk.h>
#include <math.h>
#include <string.h>

/* The reference: the least m such that req fits once rel[0 .. m) are
 * released (each released on the cluster in turn), or LSCHED_ENOFIT;
 * everything allocated back after. */
static int reference(lsched_cluster *c, int node, const lsched_request *q,
                     const lsched_placement *rel, int n) {
  int ans = LSCHED_ENOFIT, done = 0;
  for (int m = 0; m <= n; m++) {
    if (lsched_fits(c, node, q)) {
      ans = m;
      break;
    }
    if (m == n)
      break;
    OK(lsched_release(c, &rel[m]));
    done = m + 1;
  }
  for (int m = done; m-- > 0;)
    OK(lsched_alloc(c, &rel[m]));
  return ans;
}

static void test_random(void) {
  lsched_cluster *c = lt_new_cluster();
  static const int gpus[] = {0, 1, 2, 4, 8, 8, 8, 64};
  struct rng r = {0xF175AF7E5};
  const int n = 24;
  for (int i = 0; i < n; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = 16000;
    s.memory_mib = 65536;
    s.gpu_count = gpus[rbelow(&r, 8)];
    s.gpu_model = s.gpu_count > 0 ? rbelow(&r, 2) : -1;
    s.gpu_mode = rbelow(&r, 3) ? LSCHED_GPU_SHARED : LSCHED_GPU_EXCLUSIVE;
    s.features = (uint64_t)rbelow(&r, 4);
    OK(lsched_cluster_add_node(c, &s, NULL));
  }
  lsched_placement live[600];
  int nlive = 0, checked = 0, fits_now = 0, fits_later = 0, never = 0;
  int nheld = 0;
  for (int step = 0; step < 30000; step++) {
    int op = rbelow(&r, 16);
    if (op == 0) {
      OK(lsched_cluster_set_node_state(
          c, rbelow(&r, n),
          rbelow(&r, 3) ? LSCHED_NODE_UP : LSCHED_NODE_CORDONED));
    } else if (op < 5 && nlive > 0) {
      int i = rbelow(&r, nlive);
      OK(lsched_release(c, &live[i]));
      live[i] = live[--nlive];
    } else if (op < 11 && nlive < 600) { /* an allocation somewhere */
      int k = rbelow(&r, 3);
      lsched_request q = lt_req(500 * (1 + rbelow(&r, 6)),
                                4096 * (1 + rbelow(&r, 4)), k,
                                k == 0 ? 0 : rbelow(&r, 2) ? 1000
                                                           : 100 * (1 + rbelow(&r, 9)));
      int node = rbelow(&r, n);
      if (lsched_fits(c, node, &q) &&
          lsched_pick_gpus(c, node, &q, LSCHED_PICK_LOWEST, &live[nlive]) ==
              LSCHED_OK) {
        OK(lsched_alloc(c, &live[nlive]));
        nlive++;
      }
    } else { /* the question, on a random node */
      int node = rbelow(&r, n);
      lsched_placement rel[601];
      int m = 0;
      for (int i = 0; i < nlive; i++)
        if (live[i].node == node || rbelow(&r, 8) == 0)
          rel[m++] = live[i];
      for (int i = m - 1; i > 0; i--) { /* a random order */
        int j = rbelow(&r, i + 1);
        lsched_placement t = rel[i];
        rel[i] = rel[j];
        rel[j] = t;
      }
      int k = rbelow(&r, 10);
      lsched_request q = lt_req(1000 * rbelow(&r, 17),
                                8192 * rbelow(&r, 9), k,
                                k == 0 ? 0 : rbelow(&r, 2) ? 1000
                                                           : 1 + rbelow(&r, 1000));
      if (rbelow(&r, 4) == 0) {
        q.version = LSCHED_REQUEST_VERSION;
        q.features = (uint64_t)rbelow(&r, 4);
      }
      if (k > 0 && rbelow(&r, 4) == 0)
        q.model_mask = UINT64_C(1) << rbelow(&r, 2);
      /* Half the time a placement under consideration (held): the
       * reference allocates it, and it is released at a random place. */
      lsched_placement h;
      int held = 0;
      lsched_request hq = lt_req(500, 1024, 1 + rbelow(&r, 2),
                                 rbelow(&r, 2) ? 1000 : 300);
      if (rbelow(&r, 2) && lsched_fits(c, node, &hq) &&
          lsched_pick_gpus(c, node, &hq, LSCHED_PICK_LOWEST, &h) ==
              LSCHED_OK) {
        held = 1;
        int at = rbelow(&r, m + 1);
        memmove(&rel[at + 1], &rel[at], (size_t)(m - at) * sizeof *rel);
        rel[at] = h;
        m++;
        OK(lsched_alloc(c, &h));
      }
      int want = reference(c, node, &q, rel, m);
      if (held)
        OK(lsched_release(c, &h));
      int got = held ? lsched_fits_after_held(c, node, &q, &h, rel, m)
                     : lsched_fits_after(c, node, &q, rel, m);
      MT_ASSERT_MSG(got == want, "step %d node %d held %d: got %d want %d",
                    step, node, held, got, want);
      nheld += held;
      checked++;
      fits_now += got == 0;
      fits_later += got > 0;
      never += got == LSCHED_ENOFIT;
    }
  }
  /* Every kind of answer was met often. */
  MT_ASSERT(checked > 5000);
  MT_ASSERT(fits_now > 500 && fits_later > 500 && never > 500);
  MT_ASSERT(nheld > 1000);
  while (nlive > 0)
    OK(lsched_release(c, &live[--nlive]));
  lsched_cluster_destroy(c);
}

static lsched_placement pl(int node, int64_t cpu, int64_t mem, int k,
                           int milli, uint64_t mask) {
  lsched_placement p;
  memset(&p, 0, sizeof p);
  p.version = LSCHED_PLACEMENT_VERSION;
  p.node = node;
  p.cpu_milli = cpu;
  p.memory_mib = mem;
  p.gpu_count = k;
  p.gpu_milli = milli;
  p.gpu_mask = mask;
  return p;
}

static void test_hand(void) {
  lsched_cluster *c = lt_new_cluster();
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 8000;
  s.memory_mib = 1000;
  s.gpu_count = 4;
  s.gpu_model = A100;
  s.gpu_mode = LSCHED_GPU_SHARED;
  OK(lsched_cluster_add_node(c, &s, NULL)); /* node 0 */
  OK(lsched_cluster_add_node(c, &s, NULL)); /* node 1 */
  /* Node 0: a holds GPUs 0-1 whole, b 600 of GPU 2, d 500 of GPU 3 and
   * 6000 CPU; free then: CPU 1000, GPUs 0, 0, 400, 500. */
  lsched_placement a = pl(0, 500, 100, 2, 1000, 0x3);
  lsched_placement b = pl(0, 500, 100, 1, 600, 0x4);
  lsched_placement d = pl(0, 6000, 100, 1, 500, 0x8);
  lsched_placement other = pl(1, 100, 10, 1, 1000, 0x1);
  OK(lsched_alloc(c, &a));
  OK(lsched_alloc(c, &b));
  OK(lsched_alloc(c, &d));
  OK(lsched_alloc(c, &other));
  /* Two GPUs of 500 and 1500 CPU: GPU 3 has 500 but only one GPU does
   * (GPU 2 has 400) and CPU 1000 < 1500. Released in the order other
   * (skipped), b (GPU 2 to 1000: two GPUs with 500, CPU 1500): m = 2. */
  lsched_placement rel[] = {other, b, a, d};
  lsched_request q = lt_req(1500, 100, 2, 500);
  MT_EQ(lsched_fits_after(c, 0, &q, rel, 4), 2);
  /* Four whole GPUs: after b and a GPUs 0-2 are whole, GPU 3 at 500:
   * only after d too (m = 4). */
  lsched_request all = lt_req(0, 0, 4, 1000);
  MT_EQ(lsched_fits_after(c, 0, &all, rel, 4), 4);
  MT_EQ(lsched_fits_after(c, 0, &all, rel, 3), LSCHED_ENOFIT);
  /* Fits now: 0, whatever follows. */
  lsched_request small = lt_req(100, 10, 1, 400);
  MT_EQ(lsched_fits_after(c, 0, &small, rel, 4), 0);
  MT_EQ(lsched_fits_after(c, 0, &small, NULL, 0), 0);
  /* More than the node holds: never. */
  lsched_request huge = lt_req(9000, 10, 0, 0);
  MT_EQ(lsched_fits_after(c, 0, &huge, rel, 4), LSCHED_ENOFIT);
  /* Cordoned: never; up again: as before. */
  OK(lsched_cluster_set_node_state(c, 0, LSCHED_NODE_CORDONED));
  MT_EQ(lsched_fits_after(c, 0, &small, rel, 4), LSCHED_ENOFIT);
  OK(lsched_cluster_set_node_state(c, 0, LSCHED_NODE_UP));
  /* Errors: a release the node does not hold (GPU 0 past 1000), a
   * malformed request, bad node, n < 0, NULL with n > 0. */
  lsched_placement twice[] = {a, a};
  MT_EQ(lsched_fits_after(c, 0, &all, twice, 2), LSCHED_EINVAL);
  lsched_request bad = lt_req(0, 0, 1, 0);
  MT_EQ(lsched_fits_after(c, 0, &bad, rel, 4), LSCHED_EINVAL);
  MT_EQ(lsched_fits_after(c, 7, &q, rel, 4), LSCHED_EINVAL);
  MT_EQ(lsched_fits_after(c, 0, &q, rel, -1), LSCHED_EINVAL);
  MT_EQ(lsched_fits_after(c, 0, &q, NULL, 1), LSCHED_EINVAL);
  MT_EQ(lsched_fits_after(NULL, 0, &q, rel, 4), LSCHED_EINVAL);
  /* Held: a placement of GPU 2's last 400 and 1000 CPU counted as
   * allocated: small (400 of one GPU) then fits only after b's release
   * (m = 2: other, b), or at once if it is released first. */
  lsched_placement h = pl(0, 100, 10, 1, 400, 0x4);
  MT_EQ(lsched_fits_after_held(c, 0, &small, &h, rel, 4), 0); /* GPU 3 */
  lsched_placement relh[] = {other, b, h};
  lsched_request four = lt_req(100, 10, 1, 600);
  MT_EQ(lsched_fits_after_held(c, 0, &four, &h, relh, 3), 2);
  lsched_placement relh2[] = {h, b};
  MT_EQ(lsched_fits_after_held(c, 0, &four, &h, relh2, 2), 2);
  MT_EQ(lsched_fits_after_held(c, 0, &four, NULL, relh2 + 1, 1), 1);
  /* More than the node holds now: not a placement it could hold. */
  lsched_placement too = pl(0, 100, 10, 1, 600, 0x8);
  MT_EQ(lsched_fits_after_held(c, 0, &four, &too, rel, 4), LSCHED_EINVAL);
  /* Nothing changed: the node's free state as allocated. */
  lsched_node_free f = LSCHED_NODE_FREE_INIT;
  int g[4];
  MT_EQ(lsched_cluster_node_free(c, 0, &f, g, 4), 4);
  MT_EQ(f.cpu_free, 1000);
  MT_EQ(g[0], 0);
  MT_EQ(g[2], 400);
  MT_EQ(g[3], 500);
  /* A MIG node: not answered. */
  lsched_node_spec ms = s;
  ms.gpu_mode = LSCHED_GPU_MIG;
  int mig = -1;
  if (lsched_cluster_add_node(c, &ms, &mig) == LSCHED_OK)
    MT_EQ(lsched_fits_after(c, mig, &q, NULL, 0), LSCHED_ENOTSUP);
  lsched_release(c, &other);
  lsched_release(c, &d);
  lsched_release(c, &b);
  lsched_release(c, &a);
  lsched_cluster_destroy(c);
}

static void test_flags_splits(void) {
  lsched_cluster *c = lt_new_cluster();
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 8000;
  s.memory_mib = 1000;
  s.gpu_count = 8;
  s.gpu_model = A100;
  OK(lsched_cluster_add_node(c, &s, NULL));
  s.gpu_count = 4;
  s.gpu_model = V100;
  OK(lsched_cluster_add_node(c, &s, NULL));
  lsched_request q = lt_req(0, 0, 8, 1000);
  MT_EQ(lsched_place_splits(c, &q), 0);
  q.gpu_count = 9;
  MT_EQ(lsched_place_splits(c, &q), 1);
  q.gpu_count = 8;
  q.model_mask = UINT64_C(1) << V100; /* the widest V100 node holds 4 */
  MT_EQ(lsched_place_splits(c, &q), 1);
  q.gpu_count = 4;
  MT_EQ(lsched_place_splits(c, &q), 0);
  lsched_request frac = lt_req(0, 0, 9, 500); /* never cut */
  MT_EQ(lsched_place_splits(c, &frac), 0);
  lsched_request bad = lt_req(0, 0, 1, 0);
  MT_EQ(lsched_place_splits(c, &bad), LSCHED_EINVAL);
  MT_EQ(lsched_place_splits(NULL, &q), LSCHED_EINVAL);

  lsched_registry *reg = lt_builtins();
  static const struct {
    const char *name;
    unsigned flags;
  } want[] = {{"first-fit", LSCHED_POLICY_ANY_FIT},
              {"best-fit", LSCHED_POLICY_ANY_FIT},
              {"worst-fit", LSCHED_POLICY_ANY_FIT},
              {"dot-product", LSCHED_POLICY_ANY_FIT},
              {"gpu-packing", LSCHED_POLICY_ANY_FIT},
              {"gpu-clustering", LSCHED_POLICY_ANY_FIT},
              {"fgd", LSCHED_POLICY_ANY_FIT},
              {"fastest-fit", LSCHED_POLICY_ANY_FIT},
              {"mig-first-fit", LSCHED_POLICY_ANY_FIT},
              {"mig-best-fit", LSCHED_POLICY_ANY_FIT},
              {"mig-aware", LSCHED_POLICY_ANY_FIT},
              {"cheapest-work", LSCHED_POLICY_ANY_FIT},
              {"random", LSCHED_POLICY_ANY_FIT_DRAWS}, /* a place draws */
              {"defrag", LSCHED_POLICY_ANY_FIT}}; /* its base best-fit's */
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    lsched_policy *p = NULL;
    OK(lsched_policy_create_from(&p, c, reg, want[i].name));
    MT_ASSERT_MSG(lsched_policy_flags(p) == want[i].flags, "%s",
                  want[i].name);
    lsched_policy_destroy(p);
  }
  MT_EQ_U(lsched_policy_flags(NULL), 0u);
  /* defrag's promise is its base's, as the base changes. */
  lsched_policy *d = NULL;
  OK(lsched_policy_create_from(&d, c, reg, "defrag"));
  OK(lsched_policy_set_param(d, "base", "random"));
  MT_EQ_U(lsched_policy_flags(d), LSCHED_POLICY_ANY_FIT_DRAWS);
  OK(lsched_policy_set_param(d, "base", "first-fit"));
  MT_EQ_U(lsched_policy_flags(d), LSCHED_POLICY_ANY_FIT);
  lsched_policy_destroy(d);
  /* A version-6 table has no flags member to read. */
  lsched_policy_ops old = *lsched_registry_find(reg, "first-fit");
  old.version = 6;
  old.flags = LSCHED_POLICY_ANY_FIT;
  lsched_policy *p = NULL;
  OK(lsched_policy_create(&p, c, &old));
  MT_EQ_U(lsched_policy_flags(p), 0u);
  lsched_policy_destroy(p);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}

/* A speed for the type-aware policies in test_promise that ranks nodes
 * by id and is 0, NaN or infinite on some: such placements rank last,
 * they are still candidates. */
static double odd_speed(void *user, const lsched_cluster *c,
                        const lsched_placement *pl) {
  (void)user;
  (void)c;
  static const double s[5] = {1.5, 0, 2.0, NAN, INFINITY};
  return s[pl->node % 5];
}

/* The promises themselves, on random states of a small cluster: a policy
 * that promises LSCHED_POLICY_ANY_FIT or LSCHED_POLICY_ANY_FIT_DRAWS
 * places exactly when lsched_next_fit() finds a node (the type-aware ones
 * with and without a speed callback, declared by model or of any kind,
 * one model priced and the other not); and a call that does
 * not place draws nothing: a twin instance of random (same seed) that is
 * asked only the requests that placed makes every placement the same. */
static void test_promise(void) {
  lsched_cluster *c = lt_new_cluster();
  struct rng r = {0xA11F17};
  for (int i = 0; i < 12; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = 16000;
    s.memory_mib = 65536;
    s.gpu_count = 1 + rbelow(&r, 8);
    s.gpu_model = rbelow(&r, 2);
    s.gpu_mode = rbelow(&r, 3) ? LSCHED_GPU_SHARED : LSCHED_GPU_EXCLUSIVE;
    OK(lsched_cluster_add_node(c, &s, NULL));
  }
  lsched_registry *reg = lt_builtins();
  static const char *const names[] = {"first-fit",   "best-fit",
                                      "worst-fit",   "dot-product",
                                      "gpu-packing", "gpu-clustering",
                                      "fgd",         "fastest-fit",
                                      "cheapest-work", "random",
                                      "random"};
  OK(lsched_cluster_set_model_price(c, 0, 2.5));
  int placed_total = 0, failed_total = 0;
  for (size_t pi = 0; pi < sizeof names / sizeof names[0]; pi++) {
    int twin = strcmp(names[pi], "random") == 0;
    int scan = twin && pi == sizeof names / sizeof names[0] - 1;
    lsched_policy *p = NULL, *q = NULL;
    OK(lsched_policy_create_from(&p, c, reg, names[pi]));
    MT_ASSERT_MSG(lsched_policy_flags(p) &
                      (LSCHED_POLICY_ANY_FIT | LSCHED_POLICY_ANY_FIT_DRAWS),
                  "%s", names[pi]);
    if (twin) {
      OK(lsched_policy_create_from(&q, c, reg, names[pi]));
      if (scan) { /* the reference draw, without the counting index */
        OK(lsched_policy_set_param(p, "index", "off"));
        OK(lsched_policy_set_param(q, "index", "off"));
      }
    }
    lsched_placement held[64];
    int nheld = 0;
    for (int step = 0; step < 400; step++) {
      if (nheld == 64 || (nheld > 0 && rbelow(&r, 3) == 0)) {
        int k = rbelow(&r, nheld);
        OK(lsched_release(c, &held[k]));
        held[k] = held[--nheld];
        continue;
      }
      int whole = rbelow(&r, 3) == 0;
      lsched_request req = lt_req(1000 * (1 + rbelow(&r, 6)), 1024,
                                  1 + rbelow(&r, whole ? 4 : 2),
                                  whole ? 1000 : 100 * (1 + rbelow(&r, 9)));
      if (rbelow(&r, 4) == 0)
        req.model_mask = UINT64_C(1) << rbelow(&r, 2);
      if (rbelow(&r, 2)) { /* read by the type-aware policies only */
        req.speed = odd_speed;
        req.speed_scope =
            rbelow(&r, 2) ? LSCHED_SPEED_ANY : LSCHED_SPEED_CONSTANT;
      }
      lsched_placement pl = LSCHED_PLACEMENT_INIT;
      int rc = lsched_policy_place(p, &req, &pl);
      int fits = lsched_next_fit(c, &req, 0) >= 0;
      MT_ASSERT_MSG((rc == LSCHED_OK) == fits, "%s: place %s, fits %d",
                    names[pi], lsched_err_name(rc), fits);
      if (rc != LSCHED_OK) {
        failed_total++;
        continue;
      }
      if (q) {
        lsched_placement tw = LSCHED_PLACEMENT_INIT;
        OK(lsched_policy_place(q, &req, &tw));
        MT_ASSERT_MSG(tw.node == pl.node && tw.gpu_mask == pl.gpu_mask,
                      "random twin: node %d mask %llx, asked every "
                      "request: node %d mask %llx",
                      tw.node, (unsigned long long)tw.gpu_mask, pl.node,
                      (unsigned long long)pl.gpu_mask);
      }
      OK(lsched_alloc(c, &pl));
      held[nheld++] = pl;
      placed_total++;
    }
    while (nheld > 0)
      OK(lsched_release(c, &held[--nheld]));
    lsched_policy_destroy(q);
    lsched_policy_destroy(p);
  }
  /* Both answers were met often. */
  MT_ASSERT_MSG(placed_total > 500 && failed_total > 100, "%d placed, %d not",
                placed_total, failed_total);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}

/* A digest of everything an allocation changes (free CPU, memory, GPU
 * shares of every node). */
static uint64_t free_digest(const lsched_cluster *c) {
  lsched_view v = LSCHED_VIEW_INIT;
  OK(lsched_cluster_view(c, &v));
  uint64_t h = 1469598103934665603u;
  for (int x = 0; x < v.n; x++) {
    const lsched_node *nd = lsched_view_node(&v, x);
    h = (h ^ (uint64_t)nd->cpu_free) * 1099511628211u;
    h = (h ^ (uint64_t)nd->mem_free) * 1099511628211u;
  }
  for (int g = 0; g < v.ngpus; g++)
    h = (h ^ (uint64_t)(uint32_t)v.gpu_free[g]) * 1099511628211u;
  return h;
}

/* lsched_gang_fits_first: a case worked by hand (a gang cut 8 + 4, a
 * model restriction, too few parts allowed, the errors), then random
 * requests (cut ones included) against first-fit's lsched_place_gang,
 * which places each part by the same rule (the first node in the visit
 * order that fits it, its lowest GPUs); the cluster is left unchanged
 * every time. */
static void test_gang_first(void) {
  lsched_cluster *c = lt_new_cluster();
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 16000;
  s.memory_mib = 4096;
  s.gpu_count = 8;
  s.gpu_model = A100;
  OK(lsched_cluster_add_node(c, &s, NULL)); /* 0 */
  OK(lsched_cluster_add_node(c, &s, NULL)); /* 1 */
  s.gpu_count = 4;
  s.gpu_model = V100;
  OK(lsched_cluster_add_node(c, &s, NULL)); /* 2 */
  lsched_placement scratch[8];
  lsched_request g12 = lt_req(12000, 1200, 12, 1000); /* parts 8 + 4 */
  MT_EQ(lsched_place_splits(c, &g12), 1);
  MT_EQ(lsched_gang_fits_first(c, &g12, scratch, 8), 1);
  lsched_placement five = pl(0, 1000, 100, 5, 1000, 0x1f);
  OK(lsched_alloc(c, &five));
  uint64_t before = free_digest(c);
  /* 8 on node 1; node 0 has 3 GPUs free, so the 4 go to node 2. */
  MT_EQ(lsched_gang_fits_first(c, &g12, scratch, 8), 1);
  MT_EQ(lsched_gang_fits_first(c, &g12, scratch, 1), 0); /* needs 2 */
  lsched_request a12 = g12;
  a12.model_mask = UINT64_C(1) << A100; /* node 2 is no A100 */
  MT_EQ(lsched_gang_fits_first(c, &a12, scratch, 8), 0);
  lsched_request g3 = lt_req(1000, 100, 3, 1000); /* one part: node 0 */
  MT_EQ(lsched_gang_fits_first(c, &g3, scratch, 8), 1);
  lsched_request g9 = lt_req(1000, 100, 4, 1000);
  g9.model_mask = UINT64_C(1) << V100;
  MT_EQ(lsched_gang_fits_first(c, &g9, scratch, 8), 1);
  g9.gpu_count = 5; /* cut 4 + 1 over V100 nodes: only one holds 4 */
  MT_EQ(lsched_gang_fits_first(c, &g9, scratch, 8), 0);
  MT_ASSERT(free_digest(c) == before);
  lsched_request bad = lt_req(0, 0, 1, 0);
  MT_EQ(lsched_gang_fits_first(c, &bad, scratch, 8), LSCHED_EINVAL);
  MT_EQ(lsched_gang_fits_first(NULL, &g12, scratch, 8), LSCHED_EINVAL);
  MT_EQ(lsched_gang_fits_first(c, &g12, NULL, 8), LSCHED_EINVAL);
  MT_EQ(lsched_gang_fits_first(c, &g12, scratch, 0), LSCHED_EINVAL);
  OK(lsched_release(c, &five));
  lsched_cluster_destroy(c);

  /* Random: nodes of 2 to 8 GPUs of two models, random holdings. */
  c = lt_new_cluster();
  struct rng r = {0x6A46F1};
  for (int i = 0; i < 10; i++) {
    s = (lsched_node_spec)LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = 8000 + 4000 * rbelow(&r, 3);
    s.memory_mib = 65536;
    s.gpu_count = 2 + 2 * rbelow(&r, 4);
    s.gpu_model = rbelow(&r, 2);
    OK(lsched_cluster_add_node(c, &s, NULL));
  }
  lsched_registry *reg = lt_builtins();
  lsched_policy *ff = NULL;
  OK(lsched_policy_create_from(&ff, c, reg, "first-fit"));
  lsched_placement held[64], parts[8];
  int nheld = 0, yes = 0, no = 0, cut = 0;
  for (int step = 0; step < 3000; step++) {
    if (nheld == 64 || (nheld > 0 && rbelow(&r, 2) == 0)) {
      int k = rbelow(&r, nheld);
      OK(lsched_release(c, &held[k]));
      held[k] = held[--nheld];
      continue;
    }
    lsched_request req = lt_req(500 * (1 + rbelow(&r, 12)), 1024,
                                1 + rbelow(&r, 20), 1000);
    if (rbelow(&r, 3) == 0)
      req.model_mask = UINT64_C(1) << rbelow(&r, 2);
    int max = 1 + rbelow(&r, 8);
    uint64_t d = free_digest(c);
    int got = lsched_gang_fits_first(c, &req, scratch, max);
    MT_ASSERT(free_digest(c) == d);
    int n = 0;
    int rc = lsched_place_gang(ff, &req, parts, max, &n);
    MT_ASSERT_MSG(got == (rc == LSCHED_OK), "step %d: %d GPUs, fits_first "
                  "%d, first-fit's gang %s", step, (int)req.gpu_count, got,
                  lsched_err_name(rc));
    cut += lsched_place_splits(c, &req) == 1;
    if (rc != LSCHED_OK) {
      no++;
      continue;
    }
    yes++;
    /* Keep a one-part placement (a cut gang is released at once). */
    if (n == 1 && nheld < 64)
      held[nheld++] = parts[0];
    else
      while (n > 0)
        OK(lsched_release(c, &parts[--n]));
  }
  MT_ASSERT_MSG(yes > 300 && no > 150 && cut > 500, "%d yes, %d no, %d cut",
                yes, no, cut);
  while (nheld > 0)
    OK(lsched_release(c, &held[--nheld]));
  lsched_policy_destroy(ff);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}

int main(void) {
  mt_begin("test_fits_after");
  MT_RUN(test_random);
  MT_RUN(test_hand);
  MT_RUN(test_flags_splits);
  MT_RUN(test_promise);
  MT_RUN(test_gang_first);
  return mt_finish();
}
