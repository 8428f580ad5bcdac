/*
 * The MIG model of libsched (<libsched/mig.h>): the placement table and its
 * enumeration figures, known dead ends, request mapping per GPU model,
 * static and dynamic GPUs, exact alloc/release, the three MIG policies on
 * hand-computed cases, cluster totals, and a property test of random MIG
 * sequences with the invariant check after every step.
 */
#include "testutil.h"

#include <libsched/libsched.h>
#include <libsched/migrate.h>

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQ(cond)                                                              \
  do {                                                                         \
    if (!(cond))                                                               \
      ck_abort_msg("requirement failed: %s (line %d)", #cond, __LINE__);       \
  } while (0)
#define REQ_EQ(x, y)                                                           \
  do {                                                                         \
    intmax_t req_x_ = (intmax_t)(x), req_y_ = (intmax_t)(y);                   \
    if (req_x_ != req_y_)                                                      \
      ck_abort_msg("%s == %s failed: %jd vs %jd (line %d)", #x, #y, req_x_,    \
                   req_y_, __LINE__);                                          \
  } while (0)

enum { K1 = LSCHED_MIG_1G, K1X = LSCHED_MIG_1G_2X, K2 = LSCHED_MIG_2G,
       K3 = LSCHED_MIG_3G, K4 = LSCHED_MIG_4G, K7 = LSCHED_MIG_7G };

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */

static lsched_cluster *c;
static lsched_registry *reg;

static void setup(void) {
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.check_invariants = 1;
  ck_assert_int_eq(lsched_cluster_create(&c, &o), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_model_id(c, "A100-80", 1), 0);
  ck_assert_int_eq(lsched_cluster_model_id(c, "A100-40", 1), 1);
  ck_assert_int_eq(lsched_registry_create(&reg, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(reg), LSCHED_OK);
}

static void teardown(void) {
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
  reg = NULL;
  c = NULL;
}

/* A MIG node of `gpus` GPUs of `model`; dynamic, or static with a layout. */
static int mig_node(int gpus, int model, int dynamic,
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
  ck_assert_msg(rc == LSCHED_OK, "add_node: %s (%s)", lsched_err_name(rc),
                lsched_cluster_errmsg(c));
  return id;
}

static int plain_node(int gpus, lsched_gpu_mode mode) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 64000;
  s.memory_mib = 524288;
  s.gpu_count = gpus;
  s.gpu_model = 0;
  s.gpu_mode = mode;
  int id = -1;
  ck_assert_int_eq(lsched_cluster_add_node(c, &s, &id), LSCHED_OK);
  return id;
}

static lsched_request mig_req(int kind, int gpus) {
  lsched_request r = LSCHED_REQUEST_INIT;
  r.cpu_milli = 1000;
  r.memory_mib = 1024;
  r.gpu_count = gpus;
  r.mig_kind = kind;
  return r;
}

static lsched_placement mig_pl(int node, int gpu, int kind, int start) {
  lsched_placement p;
  memset(&p, 0, sizeof p);
  p.node = node;
  p.gpu_count = 1;
  p.gpu_mask = UINT64_C(1) << gpu;
  p.gpu_milli = lsched_mig_kind_milli(kind);
  p.mig_kind = kind;
  p.mig_start = start;
  return p;
}

static lsched_policy *policy(const char *name) {
  lsched_policy *p = NULL;
  const lsched_policy_ops *ops = lsched_registry_find(reg, name);
  ck_assert_ptr_nonnull(ops);
  ck_assert_int_eq(lsched_policy_create(&p, c, ops), LSCHED_OK);
  return p;
}

static lsched_mig_gpu_state gpu_state(int node, int gpu) {
  lsched_mig_gpu_state st = LSCHED_MIG_GPU_STATE_INIT;
  ck_assert_int_eq(lsched_mig_gpu_get(c, node, gpu, &st), LSCHED_OK);
  return st;
}

/* ---------------------------------------------------------------------- */
/* The placement table                                                     */

START_TEST(table_facts) {
  static const int cs[7] = {0, 1, 1, 2, 3, 4, 7};
  static const int size[7] = {0, 1, 2, 2, 4, 4, 8};
  static const unsigned starts[7] = {0, 0x7F, 0x55, 0x15, 0x11, 0x01, 0x01};
  static const int milli[7] = {0, 142, 142, 285, 428, 571, 1000};
  static const char *const names[7] = {"none", "1g", "1g-2x", "2g",
                                       "3g",   "4g", "7g"};
  for (int k = 1; k <= 6; k++) {
    ck_assert_int_eq(lsched_mig_kind_slices(k), cs[k]);
    ck_assert_int_eq(lsched_mig_kind_size(k), size[k]);
    ck_assert_uint_eq(lsched_mig_kind_starts(k), starts[k]);
    ck_assert_int_eq(lsched_mig_kind_milli(k), milli[k]);
    ck_assert_str_eq(lsched_mig_kind_name(k), names[k]);
    ck_assert_int_eq(lsched_mig_kind_from_name(names[k]), k);
    /* Each profile only at its valid starts. */
    for (int s = -1; s <= 8; s++) {
      unsigned m = lsched_mig_slot_mask(k, s);
      int valid = s >= 0 && s < 8 && ((starts[k] >> s) & 1);
      ck_assert_msg((m != 0) == valid, "kind %d start %d", k, s);
      if (valid)
        ck_assert_uint_eq(m, ((1u << size[k]) - 1) << s);
    }
  }
  ck_assert_int_eq(lsched_mig_kind_slices(0), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_mig_kind_slices(7), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_mig_kind_from_name("5g"), LSCHED_ENOENT);
  ck_assert_str_eq(lsched_mig_kind_name(42), "?");
  /* Dominance chain: every kind has at least the slices and slots of the
   * one before it. */
  for (int k = 2; k <= 6; k++) {
    ck_assert_int_ge(cs[k], cs[k - 1]);
    ck_assert_int_ge(size[k], size[k - 1]);
  }
}
END_TEST

/* All (kind, start) pairs of the table. */
static int npairs;
static int pk[32], ps[32];
static unsigned pm[32];

static void list_pairs(void) {
  npairs = 0;
  for (int k = 1; k <= 6; k++)
    for (int s = 0; s < 8; s++)
      if (lsched_mig_slot_mask(k, s)) {
        pk[npairs] = k;
        ps[npairs] = s;
        pm[npairs] = lsched_mig_slot_mask(k, s);
        npairs++;
      }
}

/* Enumeration state. */
static int nlayouts;
static uint32_t multisets[1024], maximal_sets[1024];
static int nmultisets, nmaximal;

static void add_unique(uint32_t *set, int *n, uint32_t v) {
  for (int i = 0; i < *n; i++)
    if (set[i] == v)
      return;
  set[(*n)++] = v;
}

static void enumerate(int i, unsigned used, int *count, int depth) {
  if (i == npairs) {
    if (depth == 0)
      return;
    nlayouts++;
    uint32_t key = 0; /* 3 bits per kind */
    for (int k = 1; k <= 6; k++)
      key |= (uint32_t)count[k] << (3 * (k - 1));
    add_unique(multisets, &nmultisets, key);
    int maximal = 1;
    for (int j = 0; j < npairs && maximal; j++)
      if (!(pm[j] & used))
        maximal = 0;
    if (maximal)
      add_unique(maximal_sets, &nmaximal, key);
    return;
  }
  enumerate(i + 1, used, count, depth);
  if (!(pm[i] & used)) {
    count[pk[i]]++;
    enumerate(i + 1, used | pm[i], count, depth + 1);
    count[pk[i]]--;
  }
}

START_TEST(enumeration_722_77_38) {
  list_pairs();
  ck_assert_int_eq(npairs, 7 + 4 + 3 + 2 + 1 + 1);
  int count[7] = {0};
  nlayouts = nmultisets = nmaximal = 0;
  enumerate(0, 0, count, 0);
  ck_assert_int_eq(nlayouts, 722);
  ck_assert_int_eq(nmultisets, 77);
  ck_assert_int_eq(nmaximal, 38);
  /* Every enumerated layout passes the library's own check, and a layout
   * with one pair added twice does not. */
  lsched_mig_instance v[2] = {{K3, 0}, {K3, 0}};
  int bad = -5;
  ck_assert_int_eq(lsched_mig_layout_check(v, 1, &bad), LSCHED_OK);
  ck_assert_int_eq(bad, -1);
  ck_assert_int_eq(lsched_mig_layout_check(v, 2, &bad), LSCHED_ERANGE);
  ck_assert_int_eq(bad, 1);
  v[1].kind = K2;
  v[1].start = 6; /* 2g may not start at 6 */
  ck_assert_int_eq(lsched_mig_layout_check(v, 2, &bad), LSCHED_EINVAL);
  ck_assert_int_eq(bad, 1);
}
END_TEST

/* The enumeration seen through the library: every layout is accepted by
 * lsched_mig_set_layout on a static GPU, and then a request of kind k fits
 * exactly when some instance of kind >= k is in the layout. */
START_TEST(every_layout_through_the_library) {
  list_pairs();
  /* A static node starts with a layout (add_node refuses one without);
   * every layout below then replaces it. */
  static const lsched_mig_instance whole[] = {{LSCHED_MIG_7G, 0}};
  int n = mig_node(1, 0, 0, whole, 1);
  int checked = 0;
  for (uint32_t sub = 1; sub < (1u << 18) && checked < 800; sub++) {
    unsigned used = 0;
    lsched_mig_instance v[8];
    int nv = 0, ok = 1;
    for (int i = 0; i < npairs && ok; i++)
      if ((sub >> i) & 1) {
        if (pm[i] & used || nv == 8)
          ok = 0;
        else {
          used |= pm[i];
          v[nv].kind = pk[i];
          v[nv].start = ps[i];
          nv++;
        }
      }
    if (!ok)
      continue;
    checked++;
    REQ_EQ(lsched_mig_set_layout(c, n, 0, v, nv), LSCHED_OK);
    for (int k = 1; k <= 6; k++) {
      int want = 0;
      for (int i = 0; i < nv; i++)
        want |= v[i].kind >= k;
      lsched_request r = mig_req(k, 1);
      REQ_EQ(lsched_fits(c, n, &r), want);
    }
  }
  ck_assert_int_eq(checked, 722);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Dead ends and creation on dynamic GPUs                                  */

static void alloc_ok(lsched_placement p) {
  int rc = lsched_alloc(c, &p);
  ck_assert_msg(rc == LSCHED_OK, "alloc %s@%d: %s (%s)",
                lsched_mig_kind_name(p.mig_kind), p.mig_start,
                lsched_err_name(rc), lsched_cluster_errmsg(c));
}

START_TEST(dead_end_3g0_1g456) {
  int n = mig_node(1, 0, 1, NULL, 0);
  alloc_ok(mig_pl(n, 0, K3, 0));
  alloc_ok(mig_pl(n, 0, K1, 4));
  alloc_ok(mig_pl(n, 0, K1, 5));
  alloc_ok(mig_pl(n, 0, K1, 6));
  /* 6 of 7 slices used; slice 3 and slot 7 are stranded: nothing fits. */
  for (int k = 1; k <= 6; k++) {
    lsched_request r = mig_req(k, 1);
    ck_assert_int_eq(lsched_fits(c, n, &r), 0);
  }
  for (int k = 1; k <= 6; k++)
    for (int s = 0; s < 8; s++)
      if (lsched_mig_slot_mask(k, s)) {
        lsched_placement p = mig_pl(n, 0, k, s);
        ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_ERANGE);
      }
  lsched_mig_totals t = LSCHED_MIG_TOTALS_INIT;
  lsched_mig_totals_get(c, &t);
  ck_assert_int_eq(t.slices_used, 6);
  ck_assert_int_eq(t.unusable[K1 - 1], 1); /* slice 3 */
  ck_assert_int_eq(t.in_use[K1 - 1], 3);
  ck_assert_int_eq(t.in_use[K3 - 1], 1);
}
END_TEST

START_TEST(dead_end_3g4_1g012_takes_fourth) {
  int n = mig_node(1, 0, 1, NULL, 0);
  alloc_ok(mig_pl(n, 0, K3, 4));
  alloc_ok(mig_pl(n, 0, K1, 0));
  alloc_ok(mig_pl(n, 0, K1, 1));
  alloc_ok(mig_pl(n, 0, K1, 2));
  lsched_request r = mig_req(K1, 1);
  ck_assert_int_eq(lsched_fits(c, n, &r), 1);
  for (int k = 2; k <= 6; k++) {
    r = mig_req(k, 1);
    ck_assert_int_eq(lsched_fits(c, n, &r), 0);
  }
  /* Only at slot 3. */
  lsched_placement p;
  r = mig_req(K1, 1);
  ck_assert_int_eq(lsched_pick_gpus(c, n, &r, LSCHED_PICK_LOWEST, &p),
                   LSCHED_OK);
  ck_assert_int_eq(p.mig_kind, K1);
  ck_assert_int_eq(p.mig_start, 3);
  alloc_ok(p);
  lsched_mig_totals t = LSCHED_MIG_TOTALS_INIT;
  lsched_mig_totals_get(c, &t);
  ck_assert_int_eq(t.slices_used, 7);
  for (int k = 0; k < 6; k++)
    ck_assert_int_eq(t.unusable[k], 0);
  lsched_node_info ni = LSCHED_NODE_INFO_INIT;
  lsched_cluster_node_info(c, n, &ni);
  ck_assert_int_eq(ni.gpu_milli_free, 1000 - 428 - 4 * 142);
}
END_TEST

START_TEST(dynamic_replaces_idle_instances) {
  int n = mig_node(1, 0, 1, NULL, 0);
  lsched_placement a = mig_pl(n, 0, K2, 2);
  alloc_ok(a);
  uint64_t first = lsched_mig_creations(c);
  ck_assert_uint_eq(first, 1);
  ck_assert_int_eq(lsched_release(c, &a), LSCHED_OK);
  /* The instance stays, idle, and is reused without a new creation. */
  lsched_mig_gpu_state st = gpu_state(n, 0);
  ck_assert_int_eq(st.ninstances, 1);
  ck_assert_int_eq(st.instances[0].kind, K2);
  ck_assert_int_eq(st.in_use[0], 0);
  ck_assert_uint_eq(st.created[0], 1);
  alloc_ok(a);
  ck_assert_uint_eq(lsched_mig_creations(c), 1);
  ck_assert_int_eq(lsched_release(c, &a), LSCHED_OK);
  /* A 3g at 0 replaces the idle 2g@2. */
  lsched_placement b = mig_pl(n, 0, K3, 0);
  alloc_ok(b);
  st = gpu_state(n, 0);
  ck_assert_int_eq(st.ninstances, 1);
  ck_assert_int_eq(st.instances[0].kind, K3);
  ck_assert_uint_eq(st.created[0], 2);
  lsched_mig_totals t = LSCHED_MIG_TOTALS_INIT;
  lsched_mig_totals_get(c, &t);
  ck_assert_uint_eq(t.created, 2);
  ck_assert_uint_eq(t.destroyed, 1);
  /* Instances in use are never replaced. */
  lsched_placement d = mig_pl(n, 0, K1, 3);
  ck_assert_int_eq(lsched_alloc(c, &d), LSCHED_ERANGE);
  /* A release without its alloc is refused. */
  lsched_placement e = mig_pl(n, 0, K3, 4);
  ck_assert_int_eq(lsched_release(c, &e), LSCHED_ERANGE);
  ck_assert_int_eq(lsched_release(c, &b), LSCHED_OK);
  ck_assert_int_eq(lsched_release(c, &b), LSCHED_ERANGE);
}
END_TEST

START_TEST(static_takes_free_instances_only) {
  static const lsched_mig_instance balanced[] = {
      {K2, 0}, {K1, 2}, {K1, 3}, {K3, 4}};
  int n = mig_node(2, 0, 0, balanced, 4);
  /* Instances that are not in the layout cannot be allocated. */
  lsched_placement p = mig_pl(n, 0, K1, 5);
  ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_ERANGE);
  p = mig_pl(n, 0, K7, 0);
  ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_ERANGE);
  lsched_request r = mig_req(K4, 1);
  ck_assert_int_eq(lsched_fits(c, n, &r), 0);
  ck_assert_int_eq(lsched_can_ever_fit(c, &r), 0);
  r = mig_req(K3, 1);
  ck_assert_int_eq(lsched_can_ever_fit(c, &r), 1);
  /* A wrong milli or start is malformed. */
  p = mig_pl(n, 0, K1, 2);
  p.gpu_milli = 100;
  ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_EINVAL);
  p = mig_pl(n, 0, K2, 1);
  ck_assert_int_eq(lsched_alloc(c, &p), LSCHED_EINVAL);
  /* Two 1g requests take the two 1g instances of GPU 0, the third the 1g of
   * GPU 1; with every 1g taken, a 1g request gets a 2g (smallest kind). */
  lsched_placement got[5];
  for (int i = 0; i < 5; i++) {
    r = mig_req(K1, 1);
    ck_assert_int_eq(lsched_pick_gpus(c, n, &r, LSCHED_PICK_LOWEST, &got[i]),
                     LSCHED_OK);
    alloc_ok(got[i]);
  }
  ck_assert_int_eq(got[0].mig_start, 2);
  ck_assert_int_eq(got[1].mig_start, 3);
  ck_assert_uint_eq(got[2].gpu_mask, 2);
  ck_assert_int_eq(got[2].mig_start, 2);
  ck_assert_int_eq(got[4].mig_kind, K2);
  ck_assert_int_eq(got[4].mig_start, 0);
  ck_assert_int_eq(got[4].gpu_milli, 285);
  /* Static: alloc then release restores everything, partition included. */
  lsched_mig_gpu_state before = gpu_state(n, 0);
  for (int i = 4; i >= 0; i--)
    ck_assert_int_eq(lsched_release(c, &got[i]), LSCHED_OK);
  lsched_mig_gpu_state after = gpu_state(n, 0);
  ck_assert_int_eq(after.ninstances, 4);
  ck_assert_int_eq(after.slices_used, 0);
  ck_assert_int_eq(before.ninstances, 4);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(after.instances[i].kind, before.instances[i].kind);
    ck_assert_int_eq(after.instances[i].start, before.instances[i].start);
  }
  ck_assert_uint_eq(lsched_mig_creations(c), 0);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Requests: modes, mapping per model                                       */

START_TEST(mig_and_plain_requests_stay_apart) {
  int shared = plain_node(2, LSCHED_GPU_SHARED);
  int mig = mig_node(2, 0, 1, NULL, 0);
  int excl = plain_node(2, LSCHED_GPU_EXCLUSIVE);
  lsched_request plain = LSCHED_REQUEST_INIT;
  plain.gpu_count = 1;
  plain.gpu_milli = 100;
  lsched_request m = mig_req(K1, 1);
  ck_assert_int_eq(lsched_fits(c, shared, &plain), 1);
  ck_assert_int_eq(lsched_fits(c, excl, &plain), 1);
  ck_assert_int_eq(lsched_fits(c, mig, &plain), 0);
  ck_assert_int_eq(lsched_fits(c, shared, &m), 0);
  ck_assert_int_eq(lsched_fits(c, excl, &m), 0);
  ck_assert_int_eq(lsched_fits(c, mig, &m), 1);
  /* The fit index agrees. */
  ck_assert_int_eq(lsched_next_fit(c, &m, 0), mig);
  ck_assert_int_eq(lsched_next_fit(c, &plain, mig), excl);
  /* A whole-GPU plain request never lands on MIG GPUs either. */
  plain.gpu_milli = 1000;
  plain.gpu_count = 2;
  ck_assert_int_eq(lsched_fits(c, mig, &plain), 0);
  /* CPU-only requests fit any node. */
  lsched_request cpu = LSCHED_REQUEST_INIT;
  cpu.cpu_milli = 1000;
  ck_assert_int_eq(lsched_fits(c, mig, &cpu), 1);
  /* A version-1 request is never a MIG request. */
  lsched_request v1 = mig_req(K3, 1);
  v1.version = 1;
  v1.gpu_milli = 500;
  ck_assert_int_eq(lsched_fits(c, mig, &v1), 0);
  ck_assert_int_eq(lsched_fits(c, shared, &v1), 1);
  /* A plain request on a cluster of only MIG nodes can never fit. */
  lsched_request only = LSCHED_REQUEST_INIT;
  only.gpu_count = 1;
  only.gpu_milli = 10;
  only.model_mask = 2; /* model 1: no node */
  ck_assert_int_eq(lsched_can_ever_fit(c, &only), 0);
  /* Malformed MIG requests. */
  lsched_request bad = mig_req(7, 1);
  ck_assert_int_eq(lsched_request_validate(&bad), LSCHED_EINVAL);
  bad = mig_req(K1, 0);
  ck_assert_int_eq(lsched_request_validate(&bad), LSCHED_EINVAL);
  bad = mig_req(0, 1);
  bad.gpu_milli = 100;
  bad.mig_compute_milli = 10;
  ck_assert_int_eq(lsched_request_validate(&bad), LSCHED_EINVAL);
  bad = mig_req(K1, 1);
  bad.mig_compute_milli = 1001;
  ck_assert_int_eq(lsched_request_validate(&bad), LSCHED_EINVAL);
  bad = mig_req(K1, 1);
  bad.mig_memory_mib = -1;
  ck_assert_int_eq(lsched_request_validate(&bad), LSCHED_EINVAL);
}
END_TEST

/* Instance memory (MiB) per kind, from sim/config/gpu_catalog.json (GiB x 1024,
 * rounded). */
static const int64_t mem_a100_40[6] = {4864, 9851, 9851, 19968, 19968, 40192};
static const int64_t mem_a100_80[6] = {9728, 19968, 19968, 40192, 40192,
                                       80640};
static const int64_t mem_h100_80[6] = {9984, 20091, 20091, 40448, 40448,
                                       81152};
static const int64_t mem_h100_94[6] = {11008, 22139, 22139, 47493, 47493,
                                       95355};
static const int64_t mem_h200[6] = {16384, 33280, 33280, 66560, 66560, 143360};

/* ---------------------------------------------------------------------- */
/* Built-in profile tables (issue #16 item 3)                              */

START_TEST(builtin_tables) {
  static const struct {
    const char *name;
    const int64_t *mem;
    const char *p3g; /* the 3g profile's name */
  } want[] = {{"A100-SXM4-40GB", mem_a100_40, "3g.20gb"},
              {"A100-SXM4-80GB", mem_a100_80, "3g.40gb"},
              {"H100-SXM5-80GB", mem_h100_80, "3g.40gb"},
              {"H100-PCIE-80GB", mem_h100_80, "3g.40gb"},
              {"H100-NVL-94GB", mem_h100_94, "3g.47gb"},
              {"H200-SXM-141GB", mem_h200, "3g.71gb"}};
  REQ_EQ(lsched_mig_builtin_count(), 6);
  ck_assert_ptr_null(lsched_mig_builtin_at(6));
  ck_assert_ptr_null(lsched_mig_builtin_at(-1));
  for (int i = 0; i < 6; i++) {
    const lsched_mig_model *m = lsched_mig_builtin_at(i);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m->name, want[i].name);
    REQ_EQ(m->version, LSCHED_MIG_MODEL_VERSION);
    REQ_EQ(m->nprofiles, 6);
    ck_assert_ptr_eq(lsched_mig_builtin_model(m->name), m);
    for (const char *const *a = m->aliases; *a; a++)
      ck_assert_ptr_eq(lsched_mig_builtin_model(*a), m);
    for (int k = 1; k <= 6; k++) {
      const lsched_mig_profile *p = lsched_mig_model_profile(m, k);
      ck_assert_ptr_nonnull(p);
      REQ_EQ(p->kind, k);
      REQ_EQ(p->memory_mib, want[i].mem[k - 1]);
      /* The accounting value is the listed GiB x 1024, rounded. */
      REQ_EQ(p->memory_mib, (int64_t)(p->memory_gib * 1024.0 + 0.5));
      /* "<slices>g.<GB>gb", and its name parses back to it. */
      char head[8];
      snprintf(head, sizeof head, "%dg.", lsched_mig_kind_slices(k));
      ck_assert_msg(strncmp(p->name, head, strlen(head)) == 0, "%s", p->name);
      ck_assert_ptr_eq(lsched_mig_profile_from_name(m->name, p->name), p);
      ck_assert_ptr_eq(
          lsched_mig_profile_from_name(m->name, lsched_mig_kind_name(k)), p);
      if (k != K1 && k != K1X)
        REQ_EQ(lsched_mig_kind_from_name(p->name), k);
      /* NVIDIA's profile IDs per kind. */
      static const int ids[7] = {-1, 19, 15, 14, 9, 5, 0};
      REQ_EQ(p->profile_id, ids[k]);
      /* Dominance: a larger kind never has less memory. */
      if (k > 1)
        REQ(p->memory_mib >= lsched_mig_model_profile(m, k - 1)->memory_mib);
    }
    ck_assert_str_eq(lsched_mig_model_profile(m, K3)->name, want[i].p3g);
  }
  /* Hand-picked facts; names and aliases are case-insensitive. */
  const lsched_mig_profile *p = lsched_mig_profile_from_name("a100", "3G.40GB");
  ck_assert_ptr_nonnull(p);
  REQ_EQ(p->kind, K3);
  REQ_EQ(p->memory_mib, 40192);
  REQ_EQ(p->sm_count, 42);
  /* 1g.10gb is 1g-2x on A100-40GB but 1g on an 80 GB part. */
  REQ_EQ(lsched_mig_profile_from_name("A100-40GB", "1g.10gb")->kind, K1X);
  REQ_EQ(lsched_mig_profile_from_name("A100-80GB", "1g.10gb")->kind, K1);
  REQ_EQ(lsched_mig_profile_from_name("H200", "7g.141gb")->memory_mib, 143360);
  REQ_EQ(lsched_mig_profile_from_name("H200", "1g.35gb")->verified, 0);
  REQ_EQ(lsched_mig_profile_from_name("H100", "1g.20gb")->verified, 1);
  ck_assert_ptr_null(lsched_mig_profile_from_name("A100-80GB", "3g.20gb"));
  ck_assert_ptr_null(lsched_mig_profile_from_name("V100M16", "1g.5gb"));
  ck_assert_ptr_null(lsched_mig_profile_from_name(NULL, "1g.5gb"));
  ck_assert_ptr_null(lsched_mig_profile_from_name("A100", NULL));
  ck_assert_ptr_null(lsched_mig_builtin_model("T4"));
  ck_assert_ptr_null(lsched_mig_model_profile(lsched_mig_builtin_at(0), 0));
  ck_assert_ptr_null(lsched_mig_model_profile(lsched_mig_builtin_at(0), 7));
}
END_TEST

START_TEST(kind_from_profile_names) {
  REQ_EQ(lsched_mig_kind_from_name("3g"), K3);
  REQ_EQ(lsched_mig_kind_from_name("1G-2X"), K1X);
  REQ_EQ(lsched_mig_kind_from_name("3g.40gb"), K3);
  REQ_EQ(lsched_mig_kind_from_name("2g.35gb"), K2);
  REQ_EQ(lsched_mig_kind_from_name("4G.47GB"), K4);
  REQ_EQ(lsched_mig_kind_from_name("7g.141gb"), K7);
  /* 1g profiles depend on the model; malformed names are unknown. */
  static const char *const no[] = {"1g.10gb", "1g.5gb", "5g.50gb", "6g.1gb",
                                   "8g.1gb",  "3g.",    "3g.40",   "3g.40gbx",
                                   "3g.0gb",  "3g40gb", "",        "g.40gb"};
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    ck_assert_msg(lsched_mig_kind_from_name(no[i]) == LSCHED_ENOENT, "'%s'",
                  no[i]);
  REQ_EQ(lsched_mig_kind_from_name(NULL), LSCHED_EINVAL);
}
END_TEST

/* One call gives a cluster model the library's table: the same mapping as
 * the hand-given table. */
START_TEST(use_builtin_sets_memory) {
  REQ_EQ(lsched_mig_use_builtin(c, 0, "A100-SXM4-80GB"), LSCHED_OK);
  int h = lsched_cluster_model_id(c, "H100-80GB", 1); /* an alias */
  REQ(h >= 0);
  REQ_EQ(lsched_mig_use_builtin(c, h, NULL), LSCHED_OK);
  lsched_cluster *ref;
  REQ_EQ(lsched_cluster_create(&ref, NULL), LSCHED_OK);
  REQ_EQ(lsched_cluster_model_id(ref, "a", 1), 0);
  REQ_EQ(lsched_cluster_model_id(ref, "h", 1), 1);
  REQ_EQ(lsched_mig_set_model_memory(ref, 0, mem_a100_80), LSCHED_OK);
  REQ_EQ(lsched_mig_set_model_memory(ref, 1, mem_h100_80), LSCHED_OK);
  for (int64_t mib = 0; mib <= 90000; mib += 1500)
    for (int milli = 0; milli <= 1000; milli += 125) {
      lsched_request r = mig_req(K1, 1);
      r.mig_memory_mib = mib;
      r.mig_compute_milli = milli;
      REQ_EQ(lsched_mig_request_kind(c, 0, &r),
             lsched_mig_request_kind(ref, 0, &r));
      REQ_EQ(lsched_mig_request_kind(c, h, &r),
             lsched_mig_request_kind(ref, 1, &r));
    }
  lsched_cluster_destroy(ref);
  /* 40 GB on an A100-80GB: 3g.40gb (40192 MiB). */
  lsched_request r = mig_req(K1, 1);
  r.mig_memory_mib = 40000;
  REQ_EQ(lsched_mig_request_kind(c, 0, &r), K3);
  /* Model 1 is "A100-40": not a name the library knows. */
  REQ_EQ(lsched_mig_use_builtin(c, 1, NULL), LSCHED_ENOENT);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "'A100-40'"));
  REQ_EQ(lsched_mig_use_builtin(c, 9, NULL), LSCHED_ENOENT);
  REQ_EQ(lsched_mig_use_builtin(NULL, 0, NULL), LSCHED_EINVAL);
}
END_TEST

/* A static MIG node without a layout could never serve a request: add_node
 * and update_node refuse it; a dynamic one needs none. */
START_TEST(static_node_needs_layout) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.name = "m0";
  s.cpu_milli = 1000;
  s.gpu_count = 2;
  s.gpu_model = 0;
  s.gpu_mode = LSCHED_GPU_MIG;
  REQ_EQ(lsched_cluster_add_node(c, &s, NULL), LSCHED_EINVAL);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "node 'm0'"));
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "needs a layout"));
  REQ_EQ(lsched_cluster_node_count(c), 0);
  s.mig_dynamic = 1;
  int id;
  REQ_EQ(lsched_cluster_add_node(c, &s, &id), LSCHED_OK);
  /* Turning the idle node static without a layout is refused too. */
  s.mig_dynamic = 0;
  REQ_EQ(lsched_cluster_update_node(c, id, &s), LSCHED_EINVAL);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "needs a layout"));
  static const lsched_mig_instance halves[] = {{K3, 0}, {K3, 4}};
  s.mig_layout = halves;
  s.mig_layout_count = 2;
  REQ_EQ(lsched_cluster_update_node(c, id, &s), LSCHED_OK);
  REQ_EQ(gpu_state(id, 1).ninstances, 2);
  /* A MIG-mode node without GPUs has nothing to lay out. */
  s.gpu_count = 0;
  s.mig_layout_count = 0;
  REQ_EQ(lsched_cluster_add_node(c, &s, NULL), LSCHED_OK);
  REQ_EQ(lsched_cluster_check(c), LSCHED_OK);
}
END_TEST

/* A MIG request that needs memory on a model without a memory table is
 * LSCHED_ENEVER with a message naming the model, not a silent no-fit. */
START_TEST(never_without_memory_table) {
  lsched_policy *p = policy("mig-first-fit");
  lsched_request r = mig_req(K1, 1);
  r.mig_memory_mib = 20000;
  lsched_placement pl;
  /* No MIG node at all. */
  plain_node(8, LSCHED_GPU_SHARED);
  REQ_EQ(lsched_policy_place(p, &r, &pl), LSCHED_ENEVER);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "MIG mode"));
  lsched_policy_destroy(p);
  int n = mig_node(1, 0, 1, NULL, 0);
  p = policy("mig-first-fit");
  REQ_EQ(lsched_policy_place(p, &r, &pl), LSCHED_ENEVER);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "'A100-80'"));
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "memory table"));
  /* Without a memory need it fits. */
  r.mig_memory_mib = 0;
  REQ_EQ(lsched_policy_place(p, &r, &pl), LSCHED_OK);
  REQ_EQ(pl.mig_kind, K1);
  /* With the library's A100-80GB table 20000 MiB needs a 3g.40gb (1g.20gb
   * and 2g.20gb hold 19968 MiB). */
  REQ_EQ(lsched_mig_use_builtin(c, 0, "A100-SXM4-80GB"), LSCHED_OK);
  r.mig_memory_mib = 20000;
  REQ_EQ(lsched_policy_place(p, &r, &pl), LSCHED_OK);
  REQ_EQ(pl.node, n);
  REQ_EQ(pl.mig_kind, K3);
  /* Beyond every kind of the table: never, with the generic message. */
  r.mig_memory_mib = 90000;
  REQ_EQ(lsched_policy_place(p, &r, &pl), LSCHED_ENEVER);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "could ever hold"));
  lsched_policy_destroy(p);
}
END_TEST

START_TEST(kind_for_compute_and_memory) {
  /* Compute: 1000 x slices >= 7 x milli. */
  static const struct {
    int milli, kind;
  } comp[] = {{0, K1},   {1, K1},   {142, K1}, {143, K2}, {285, K2},
              {286, K3}, {428, K3}, {429, K4}, {571, K4}, {572, K7},
              {1000, K7}};
  for (size_t i = 0; i < sizeof comp / sizeof comp[0]; i++)
    ck_assert_msg(lsched_mig_kind_for(K1, comp[i].milli, 0, NULL) ==
                      comp[i].kind,
                  "milli %d", comp[i].milli);
  /* The minimum kind wins when larger. */
  ck_assert_int_eq(lsched_mig_kind_for(K3, 100, 0, NULL), K3);
  ck_assert_int_eq(lsched_mig_kind_for(K1X, 0, 0, NULL), K1X);
  /* Memory needs a table. */
  ck_assert_int_eq(lsched_mig_kind_for(K1, 0, 1, NULL), LSCHED_ENOENT);
  /* Per model: 8 GiB; 20 GiB; 45 GiB; 100 GiB. */
  const int64_t *tables[5] = {mem_a100_40, mem_a100_80, mem_h100_80,
                              mem_h100_94, mem_h200};
  static const int want8[5] = {K1X, K1, K1, K1, K1};
  static const int want20[5] = {K7, K3, K3, K1X, K1X};
  static const int want45[5] = {LSCHED_ENOENT, K7, K7, K3, K3};
  static const int want100[5] = {LSCHED_ENOENT, LSCHED_ENOENT, LSCHED_ENOENT,
                                 LSCHED_ENOENT, K7};
  for (int m = 0; m < 5; m++) {
    ck_assert_int_eq(lsched_mig_kind_for(K1, 0, 8192, tables[m]), want8[m]);
    ck_assert_int_eq(lsched_mig_kind_for(K1, 0, 20480, tables[m]), want20[m]);
    ck_assert_int_eq(lsched_mig_kind_for(K1, 0, 46080, tables[m]), want45[m]);
    ck_assert_int_eq(lsched_mig_kind_for(K1, 0, 102400, tables[m]),
                     want100[m]);
  }
  /* Both: 20 GiB and half the compute on an H100-80GB: 4g.40gb. */
  ck_assert_int_eq(lsched_mig_kind_for(K1, 500, 20480, mem_h100_80), K4);
  /* Kinds a model does not offer are skipped (no 1g-2x: 2g). */
  int64_t no1x[6];
  memcpy(no1x, mem_a100_80, sizeof no1x);
  no1x[K1X - 1] = 0;
  ck_assert_int_eq(lsched_mig_kind_for(K1, 0, 12000, no1x), K2);
  ck_assert_int_eq(lsched_mig_kind_for(0, 0, 0, NULL), LSCHED_EINVAL);
}
END_TEST

START_TEST(request_kind_per_model) {
  ck_assert_int_eq(lsched_mig_set_model_memory(c, 0, mem_a100_80), LSCHED_OK);
  ck_assert_int_eq(lsched_mig_set_model_memory(c, 1, mem_a100_40), LSCHED_OK);
  int n80 = mig_node(1, 0, 1, NULL, 0);
  int n40 = mig_node(1, 1, 1, NULL, 0);
  /* "1g.10gb" asked by memory: 9.5 GiB and one slice. */
  lsched_request r = mig_req(LSCHED_MIG_ANY, 1);
  r.mig_memory_mib = 9728;
  ck_assert_int_eq(lsched_mig_request_kind(c, 0, &r), K1);
  ck_assert_int_eq(lsched_mig_request_kind(c, 1, &r), K1X);
  lsched_placement p;
  ck_assert_int_eq(lsched_pick_gpus(c, n40, &r, LSCHED_PICK_LOWEST, &p),
                   LSCHED_OK);
  ck_assert_int_eq(p.mig_kind, K1X);
  ck_assert_int_eq(lsched_effective_milli(c, n80, &r), 142);
  /* 60 GiB: only the 80 GB model, as a 7g. */
  r.mig_memory_mib = 61440;
  ck_assert_int_eq(lsched_mig_request_kind(c, 0, &r), K7);
  ck_assert_int_eq(lsched_mig_request_kind(c, 1, &r), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_fits(c, n40, &r), 0);
  ck_assert_int_eq(lsched_fits(c, n80, &r), 1);
  ck_assert_int_eq(lsched_effective_milli(c, n40, &r), LSCHED_ENOENT);
  /* 90 GiB: nothing; the request can never fit. */
  r.mig_memory_mib = 92160;
  ck_assert_int_eq(lsched_can_ever_fit(c, &r), 0);
  /* A model without a table has unknown memory: memory requests miss it. */
  ck_assert_int_eq(lsched_cluster_model_id(c, "X", 1), 2);
  r.mig_memory_mib = 1;
  ck_assert_int_eq(lsched_mig_request_kind(c, 2, &r), LSCHED_ENOENT);
  r.mig_memory_mib = 0;
  r.mig_compute_milli = 300;
  ck_assert_int_eq(lsched_mig_request_kind(c, 2, &r), K3);
  /* Bad tables. */
  int64_t zero[6] = {0};
  ck_assert_int_eq(lsched_mig_set_model_memory(c, 0, zero), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_mig_set_model_memory(c, 9, mem_a100_80),
                   LSCHED_ENOENT);
}
END_TEST

START_TEST(node_spec_validation) {
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 1000;
  s.gpu_count = 1;
  s.gpu_model = 0;
  s.gpu_mode = LSCHED_GPU_MIG;
  lsched_mig_instance bad[2] = {{K3, 0}, {K2, 2}};
  s.mig_layout = bad;
  s.mig_layout_count = 2;
  ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), LSCHED_ERANGE);
  ck_assert_ptr_nonnull(strstr(lsched_cluster_errmsg(c), "overlaps"));
  bad[1].start = 5;
  ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), LSCHED_EINVAL);
  s.version = 1;
  s.mig_layout_count = 0;
  ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_node_count(c), 0);
  /* A version-1 spec never has its MIG fields read (they may be garbage). */
  lsched_node_spec v1 = s;
  v1.gpu_mode = LSCHED_GPU_SHARED;
  v1.mig_layout = (const lsched_mig_instance *)(uintptr_t)0x1;
  v1.mig_layout_count = -7;
  v1.mig_dynamic = 99;
  int v1id;
  ck_assert_int_eq(lsched_cluster_add_node(c, &v1, &v1id), LSCHED_OK);
  lsched_mig_gpu_state none = LSCHED_MIG_GPU_STATE_INIT;
  ck_assert_int_eq(lsched_mig_gpu_get(c, v1id, 0, &none), LSCHED_EINVAL);
  /* A kind the model does not offer. */
  int64_t no7[6];
  memcpy(no7, mem_a100_80, sizeof no7);
  no7[K7 - 1] = 0;
  ck_assert_int_eq(lsched_mig_set_model_memory(c, 0, no7), LSCHED_OK);
  s.version = LSCHED_NODE_SPEC_VERSION;
  lsched_mig_instance all7 = {K7, 0};
  s.mig_layout = &all7;
  s.mig_layout_count = 1;
  ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_node_count(c), 1); /* the v1 node */
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  /* A dynamic node with an initial idle layout. */
  lsched_mig_instance init[2] = {{K3, 0}, {K3, 4}};
  s.mig_layout = init;
  s.mig_layout_count = 2;
  s.mig_dynamic = 1;
  int id;
  ck_assert_int_eq(lsched_cluster_add_node(c, &s, &id), LSCHED_OK);
  lsched_mig_totals t = LSCHED_MIG_TOTALS_INIT;
  lsched_mig_totals_get(c, &t);
  ck_assert_int_eq(t.gpus, 1);
  ck_assert_int_eq(t.idle[K3 - 1], 2);
  /* set_layout: refused while an instance is in use. */
  lsched_placement p = mig_pl(id, 0, K3, 0);
  alloc_ok(p);
  lsched_mig_instance one = {K1, 6};
  ck_assert_int_eq(lsched_mig_set_layout(c, id, 0, &one, 1), LSCHED_ESTATE);
  ck_assert_int_eq(lsched_release(c, &p), LSCHED_OK);
  ck_assert_int_eq(lsched_mig_set_layout(c, id, 0, &one, 1), LSCHED_OK);
  ck_assert_int_eq(lsched_mig_set_layout(c, id, 0, &all7, 1), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_mig_set_layout(c, id, 1, &one, 1), LSCHED_ENOENT);
  lsched_mig_gpu_state st = gpu_state(id, 0);
  ck_assert_int_eq(st.ninstances, 1);
  ck_assert_int_eq(st.instances[0].kind, K1);
  ck_assert_int_eq(st.instances[0].start, 6);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Policies, hand-computed                                                 */

static lsched_placement place_ok(lsched_policy *p, lsched_request r) {
  lsched_placement out;
  memset(&out, 0x5A, sizeof out);
  int rc = lsched_policy_place(p, &r, &out);
  ck_assert_msg(rc == LSCHED_OK, "%s: %s", lsched_policy_name(p),
                lsched_err_name(rc));
  return out;
}

START_TEST(policy_first_fit_hand) {
  int n0 = mig_node(2, 0, 1, NULL, 0);
  lsched_policy *p = policy("mig-first-fit");
  lsched_placement a = place_ok(p, mig_req(K1, 1));
  ck_assert_int_eq(a.node, n0);
  ck_assert_uint_eq(a.gpu_mask, 1);
  ck_assert_int_eq(a.mig_start, 0);
  alloc_ok(a);
  /* 3g: slot 0 is taken, so 3g@4 on GPU 0. */
  lsched_placement b = place_ok(p, mig_req(K3, 1));
  ck_assert_uint_eq(b.gpu_mask, 1);
  ck_assert_int_eq(b.mig_start, 4);
  alloc_ok(b);
  /* 2g: GPU 0 has slots 1..3 free; 2g@2 is its lowest valid start. */
  lsched_placement d = place_ok(p, mig_req(K2, 1));
  ck_assert_uint_eq(d.gpu_mask, 1);
  ck_assert_int_eq(d.mig_start, 2);
  alloc_ok(d);
  /* 4g: GPU 1. */
  lsched_placement e = place_ok(p, mig_req(K4, 1));
  ck_assert_uint_eq(e.gpu_mask, 2);
  ck_assert_int_eq(e.mig_start, 0);
  lsched_policy_destroy(p);
}
END_TEST

START_TEST(policy_exact_kind_first) {
  static const lsched_mig_instance all2g[] = {{K2, 0}, {K2, 2}, {K2, 4}};
  static const lsched_mig_instance all1g[] = {
      {K1, 0}, {K1, 1}, {K1, 2}, {K1, 3}, {K1, 4}, {K1, 5}, {K1, 6}};
  int n0 = mig_node(1, 0, 0, all2g, 3);
  int n1 = mig_node(1, 0, 0, all1g, 7);
  static const char *const names[] = {"mig-first-fit", "mig-best-fit",
                                      "mig-aware"};
  for (int i = 0; i < 3; i++) {
    lsched_policy *p = policy(names[i]);
    lsched_placement a = place_ok(p, mig_req(K1, 1));
    ck_assert_msg(a.node == n1 && a.mig_kind == K1, "%s", names[i]);
    /* A 2g request: only node 0 has 2g instances. */
    lsched_placement b = place_ok(p, mig_req(K2, 1));
    ck_assert_int_eq(b.node, n0);
    ck_assert_int_eq(b.mig_kind, K2);
    lsched_policy_destroy(p);
  }
  (void)n0;
}
END_TEST

START_TEST(policy_best_fit_hand) {
  int n = mig_node(2, 0, 1, NULL, 0);
  alloc_ok(mig_pl(n, 1, K1, 0)); /* GPU 1: 6 slices free */
  lsched_policy *p = policy("mig-best-fit");
  lsched_placement a = place_ok(p, mig_req(K2, 1));
  ck_assert_uint_eq(a.gpu_mask, 2);
  ck_assert_int_eq(a.mig_start, 2);
  alloc_ok(a); /* GPU 1: 4 free */
  /* A 4g cannot go to GPU 1 (slot 0 taken): GPU 0. */
  lsched_placement b = place_ok(p, mig_req(K4, 1));
  ck_assert_uint_eq(b.gpu_mask, 1);
  /* first-fit would take GPU 0 for a 1g; best-fit the tighter GPU 1. */
  lsched_placement d = place_ok(p, mig_req(K1, 1));
  ck_assert_uint_eq(d.gpu_mask, 2);
  ck_assert_int_eq(d.mig_start, 1);
  lsched_policy *f = policy("mig-first-fit");
  lsched_placement e = place_ok(f, mig_req(K1, 1));
  ck_assert_uint_eq(e.gpu_mask, 1);
  lsched_policy_destroy(f);
  lsched_policy_destroy(p);
}
END_TEST

START_TEST(policy_aware_hand) {
  int n = mig_node(1, 0, 1, NULL, 0);
  lsched_policy *p = policy("mig-aware");
  ck_assert_int_eq(lsched_policy_set_param(p, "mix", "3g:1"), LSCHED_OK);
  alloc_ok(mig_pl(n, 0, K1, 4));
  /* Only 3g matters: 1g@0..3 would kill 3g@0, 1g@5 or 6 keeps it. */
  lsched_placement a = place_ok(p, mig_req(K1, 1));
  ck_assert_int_eq(a.mig_start, 5);
  lsched_policy *f = policy("mig-first-fit");
  ck_assert_int_eq(place_ok(f, mig_req(K1, 1)).mig_start, 0);
  lsched_policy_destroy(f);
  lsched_policy_destroy(p);
}
END_TEST

START_TEST(policy_aware_hand_2g) {
  int n = mig_node(1, 0, 1, NULL, 0);
  alloc_ok(mig_pl(n, 0, K3, 0));
  lsched_policy *p = policy("mig-aware");
  ck_assert_int_eq(lsched_policy_set_param(p, "mix", "2g=1"), LSCHED_OK);
  /* Free slots 4..7; 2g can only go at 4. 1g@4 or 5 kills it, 1g@6 not. */
  lsched_placement a = place_ok(p, mig_req(K1, 1));
  ck_assert_int_eq(a.mig_start, 6);
  alloc_ok(a);
  lsched_placement b = place_ok(p, mig_req(K2, 1));
  ck_assert_int_eq(b.mig_start, 4);
  /* With 1g and 1g-2x weighted instead, free slots 4, 5, 7: 1g@4 and 1g@5
   * both lose one 1g (5) and the 1g-2x at 4 (1); the tie goes to the
   * lowest start. */
  ck_assert_int_eq(lsched_policy_set_param(p, "mix", "1g:5,1g-2x:1"),
                   LSCHED_OK);
  lsched_placement d = place_ok(p, mig_req(K1, 1));
  ck_assert_int_eq(d.mig_start, 4);
  /* Bad mixes. */
  ck_assert_int_eq(lsched_policy_set_param(p, "mix", "5g:1"), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_set_param(p, "mix", "1g:-1"), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_set_param(p, "mix", "1g:0"), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_set_param(p, "mix", "1g"), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_policy_set_param(p, "mix", "online"), LSCHED_OK);
  ck_assert_int_eq(lsched_policy_set_param(p, "seed", "1"), LSCHED_ENOENT);
  lsched_policy_destroy(p);
}
END_TEST

START_TEST(policy_aware_reuses_idle) {
  /* Two empty dynamic GPUs, mix of 1g only: every start loses nothing.
   * GPU 1 holds an idle 1g at slot 3 (from an earlier job): reused. */
  int n = mig_node(2, 0, 1, NULL, 0);
  lsched_placement old = mig_pl(n, 1, K1, 3);
  alloc_ok(old);
  ck_assert_int_eq(lsched_release(c, &old), LSCHED_OK);
  lsched_policy *p = policy("mig-aware");
  ck_assert_int_eq(lsched_policy_set_param(p, "mix", "1g:1"), LSCHED_OK);
  lsched_placement a = place_ok(p, mig_req(K1, 1));
  ck_assert_uint_eq(a.gpu_mask, 2);
  ck_assert_int_eq(a.mig_start, 3);
  uint64_t before = lsched_mig_creations(c);
  alloc_ok(a);
  ck_assert_uint_eq(lsched_mig_creations(c), before);
  lsched_policy_destroy(p);
}
END_TEST

START_TEST(policy_multi_gpu) {
  int n0 = mig_node(2, 0, 1, NULL, 0);
  int n1 = mig_node(4, 0, 1, NULL, 0);
  alloc_ok(mig_pl(n0, 0, K1, 6));
  static const char *const names[] = {"mig-first-fit", "mig-best-fit",
                                      "mig-aware", "first-fit", "best-fit"};
  for (int i = 0; i < 5; i++) {
    lsched_policy *p = policy(names[i]);
    lsched_placement a = place_ok(p, mig_req(K7, 2));
    ck_assert_msg(a.node == n1, "%s", names[i]);
    ck_assert_int_eq(a.gpu_count, 2);
    ck_assert_int_eq(__builtin_popcountll(a.gpu_mask), 2);
    ck_assert_int_eq(a.gpu_milli, 1000);
    alloc_ok(a);
    lsched_placement b = place_ok(p, mig_req(K3, 2));
    ck_assert_int_eq(b.mig_kind, K3);
    alloc_ok(b);
    ck_assert_int_eq(lsched_release(c, &b), LSCHED_OK);
    ck_assert_int_eq(lsched_release(c, &a), LSCHED_OK);
    lsched_policy_destroy(p);
  }
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Property test                                                           */

struct rng {
  uint64_t s;
};
static uint64_t rnd(struct rng *r, uint64_t n) {
  uint64_t x = r->s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  r->s = x;
  return (x * UINT64_C(0x2545F4914F6CDD1D) >> 11) % n;
}

struct snapshot {
  int64_t cpu[8], mem[8];
  int gpu[8][8];
  lsched_mig_totals t;
};

static void take(struct snapshot *s, int nodes) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < nodes; i++) {
    lsched_node_info ni = LSCHED_NODE_INFO_INIT;
    lsched_cluster_node_info(c, i, &ni);
    s->cpu[i] = ni.cpu_free;
    s->mem[i] = ni.memory_free;
    for (int g = 0; g < ni.gpu_count; g++)
      s->gpu[i][g] = lsched_cluster_gpu_free(c, i, g);
  }
  lsched_mig_totals_get(c, &s->t);
}

START_TEST(property_random_sequences) {
  static const lsched_mig_instance balanced[] = {
      {K2, 0}, {K1, 2}, {K1, 3}, {K3, 4}};
  static const lsched_mig_instance halves[] = {{K3, 0}, {K4, 0}};
  mig_node(4, 0, 1, NULL, 0);
  mig_node(2, 0, 0, balanced, 4);
  mig_node(2, 1, 1, NULL, 0);
  mig_node(3, 0, 0, halves, 1);
  plain_node(2, LSCHED_GPU_SHARED);
  const int nodes = 5;
  ck_assert_int_eq(lsched_mig_set_model_memory(c, 1, mem_a100_40), LSCHED_OK);
  size_t np = lsched_registry_count(reg);
  struct rng r = {88172645463325252ull};
  lsched_placement live[256];
  int nlive = 0, placed = 0;
  for (size_t pi = 0; pi < np; pi++) {
    lsched_policy *p = NULL;
    ck_assert_int_eq(
        lsched_policy_create(&p, c, lsched_registry_at(reg, pi)), LSCHED_OK);
    for (int step = 0; step < 400; step++) {
      if (nlive > 0 && rnd(&r, 3) == 0) {
        int j = (int)rnd(&r, (uint64_t)nlive);
        REQ_EQ(lsched_release(c, &live[j]), LSCHED_OK);
        live[j] = live[--nlive];
        continue;
      }
      lsched_request q;
      if (rnd(&r, 5) == 0) {
        lsched_request init = LSCHED_REQUEST_INIT;
        q = init;
        q.gpu_count = 1 + (int)rnd(&r, 2);
        q.gpu_milli = 1 + (int)rnd(&r, 1000);
      } else {
        q = mig_req(1 + (int)rnd(&r, 6), rnd(&r, 8) ? 1 : 2);
        if (rnd(&r, 3) == 0) {
          q.mig_kind = LSCHED_MIG_ANY;
          q.mig_compute_milli = (int)rnd(&r, 1001);
        }
        if (rnd(&r, 4) == 0)
          q.mig_memory_mib = (int64_t)rnd(&r, 45000);
      }
      q.cpu_milli = (int64_t)rnd(&r, 4000);
      lsched_placement out;
      memset(&out, 0x5A, sizeof out);
      struct snapshot before, after;
      take(&before, nodes);
      int rc = lsched_policy_place(p, &q, &out);
      take(&after, nodes);
      REQ(memcmp(&before, &after, sizeof before) == 0);
      if (rc == LSCHED_ENOFIT || rc == LSCHED_ENEVER) {
        REQ_EQ(rc == LSCHED_ENEVER, !lsched_can_ever_fit(c, &q));
        for (int i = 0; i < nodes; i++)
          REQ_EQ(lsched_fits(c, i, &q), 0);
        continue;
      }
      REQ_EQ(rc, LSCHED_OK);
      REQ(lsched_fits(c, out.node, &q));
      lsched_node_info ni = LSCHED_NODE_INFO_INIT;
      lsched_cluster_node_info(c, out.node, &ni);
      REQ_EQ(ni.gpu_mode == LSCHED_GPU_MIG, q.mig_kind != 0);
      if (q.mig_kind) {
        int kmin = lsched_mig_request_kind(c, ni.gpu_model, &q);
        REQ(out.mig_kind >= kmin);
        REQ(lsched_mig_slot_mask(out.mig_kind, out.mig_start) != 0);
        REQ_EQ(out.gpu_milli, lsched_mig_kind_milli(out.mig_kind));
      }
      REQ_EQ(lsched_alloc(c, &out), LSCHED_OK); /* checks invariants too */
      /* Alloc then release restores the allocation state bit for bit. */
      if (rnd(&r, 4) == 0) {
        struct snapshot mid;
        take(&mid, nodes);
        REQ_EQ(lsched_release(c, &out), LSCHED_OK);
        take(&after, nodes);
        for (int i = 0; i < nodes; i++) {
          REQ_EQ(after.cpu[i], before.cpu[i]);
          REQ_EQ(after.mem[i], before.mem[i]);
          for (int g = 0; g < 8; g++)
            REQ_EQ(after.gpu[i][g], before.gpu[i][g]);
        }
        REQ_EQ(after.t.slices_used, before.t.slices_used);
        for (int k = 0; k < 6; k++)
          REQ_EQ(after.t.in_use[k], before.t.in_use[k]);
        (void)mid;
        continue;
      }
      placed++;
      REQ(nlive < 256);
      live[nlive++] = out;
    }
    lsched_policy_destroy(p);
  }
  while (nlive > 0)
    REQ_EQ(lsched_release(c, &live[--nlive]), LSCHED_OK);
  lsched_mig_totals t = LSCHED_MIG_TOTALS_INIT;
  lsched_mig_totals_get(c, &t);
  ck_assert_int_eq(t.slices_used, 0);
  for (int k = 0; k < 6; k++)
    ck_assert_int_eq(t.in_use[k], 0);
  ck_assert_int_gt(placed, 100);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
}
END_TEST

/* Unusable slices, hand-computed on two GPUs. */
START_TEST(totals_unusable_hand) {
  static const lsched_mig_instance all1x[] = {
      {K1X, 0}, {K1X, 2}, {K1X, 4}, {K1X, 6}};
  int d = mig_node(1, 0, 1, NULL, 0);
  mig_node(1, 0, 0, all1x, 4);
  alloc_ok(mig_pl(d, 0, K2, 2)); /* dynamic: slots 2,3 busy; 5 free */
  lsched_mig_totals t = LSCHED_MIG_TOTALS_INIT;
  lsched_mig_totals_get(c, &t);
  /* Dynamic GPU, b = 0x0C, f = 5: 1g fits at 0,1,4,5,6 (5 x 1 = 5 -> 0);
   * 1g-2x at 0,4,6 (3 -> 2); 2g at 0,4 (4 -> 1); 3g at 4 (3 -> 2); 4g none
   * (5); 7g none (5). Static all-1g-2x: 3 uncovered slices; its four idle
   * 1g-2x (1 slice each) are too small for 2g and up: 3 + 4. */
  static const int want[6] = {0 + 3, 2 + 3, 1 + 7, 2 + 7, 5 + 7, 5 + 7};
  for (int k = 0; k < 6; k++)
    ck_assert_msg(t.unusable[k] == want[k], "kind %d: %lld", k + 1,
                  (long long)t.unusable[k]);
  ck_assert_int_eq(t.slices, 14);
  ck_assert_int_eq(t.slices_used, 2);
  ck_assert_int_eq(t.idle[K1X - 1], 4);
  ck_assert_int_eq(t.in_use[K2 - 1], 1);
}
END_TEST

/* ---------------------------------------------------------------------- */


/* Migration planning on MIG (issue #5): 1g instances at slots 0 and 4 of a
 * dynamic GPU leave no valid start for a 3g (starts 0 and 4 both blocked);
 * the defrag policy (base mig-first-fit) moves the cheaper 1g, the one at
 * 4, and the 3g then fits. One move frees the MIG room. */
START_TEST(defrag_one_move_frees_mig_room) {
  int n0 = mig_node(1, 0, 1, NULL, 0);
  lsched_policy *d = policy("defrag");
  ck_assert_int_eq(lsched_policy_set_param(d, "base", "mig-first-fit"),
                   LSCHED_OK);
  lsched_placement a = mig_pl(n0, 0, LSCHED_MIG_1G, 0);
  lsched_placement b = mig_pl(n0, 0, LSCHED_MIG_1G, 4);
  a.cpu_milli = b.cpu_milli = 1000;
  a.memory_mib = b.memory_mib = 1024;
  ck_assert_int_eq(lsched_alloc(c, &a), LSCHED_OK);
  ck_assert_int_eq(lsched_alloc(c, &b), LSCHED_OK);
  lsched_request w = mig_req(LSCHED_MIG_3G, 1);
  lsched_placement tmp;
  ck_assert_int_eq(lsched_policy_place(d, &w, &tmp), LSCHED_ENOFIT);
  lsched_running run[2];
  memset(run, 0, sizeof run);
  run[0].id = 1;
  run[0].request = mig_req(LSCHED_MIG_1G, 1);
  run[0].parts = &a;
  run[0].nparts = 1;
  run[0].move_cost_s = 5;
  run[1] = run[0];
  run[1].id = 2;
  run[1].parts = &b;
  run[1].move_cost_s = 1;
  lsched_defrag_budget bud = LSCHED_DEFRAG_BUDGET_INIT;
  bud.max_moves = 1;
  bud.expected_wait_s = 1000;
  lsched_move mv[4];
  size_t n = 0;
  ck_assert_int_eq(lsched_policy_plan_migrations(d, &w, run, 2, &bud, mv, 4, &n),
                   LSCHED_OK);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(mv[0].index, 1);
  ck_assert_int_eq(mv[0].from.mig_start, 4);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  ck_assert_int_eq(lsched_release(c, &mv[0].from), LSCHED_OK);
  ck_assert_int_eq(lsched_alloc(c, &mv[0].to), LSCHED_OK);
  ck_assert_int_eq(lsched_policy_place(d, &w, &tmp), LSCHED_OK);
  ck_assert_int_eq(tmp.mig_kind, LSCHED_MIG_3G);
  ck_assert_int_eq(lsched_alloc(c, &tmp), LSCHED_OK);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  lsched_policy_destroy(d);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("mig");
  TCase *tc = tcase_create("model");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, table_facts);
  tcase_add_test(tc, defrag_one_move_frees_mig_room);
  tcase_add_test(tc, enumeration_722_77_38);
  tcase_add_test(tc, every_layout_through_the_library);
  tcase_add_test(tc, dead_end_3g0_1g456);
  tcase_add_test(tc, dead_end_3g4_1g012_takes_fourth);
  tcase_add_test(tc, dynamic_replaces_idle_instances);
  tcase_add_test(tc, static_takes_free_instances_only);
  tcase_add_test(tc, mig_and_plain_requests_stay_apart);
  tcase_add_test(tc, kind_for_compute_and_memory);
  tcase_add_test(tc, builtin_tables);
  tcase_add_test(tc, kind_from_profile_names);
  tcase_add_test(tc, use_builtin_sets_memory);
  tcase_add_test(tc, static_node_needs_layout);
  tcase_add_test(tc, never_without_memory_table);
  tcase_add_test(tc, request_kind_per_model);
  tcase_add_test(tc, node_spec_validation);
  tcase_add_test(tc, totals_unusable_hand);
  suite_add_tcase(s, tc);
  TCase *tp = tcase_create("policies");
  tcase_add_checked_fixture(tp, setup, teardown);
  tcase_set_timeout(tp, 120);
  tcase_add_test(tp, policy_first_fit_hand);
  tcase_add_test(tp, policy_exact_kind_first);
  tcase_add_test(tp, policy_best_fit_hand);
  tcase_add_test(tp, policy_aware_hand);
  tcase_add_test(tp, policy_aware_hand_2g);
  tcase_add_test(tp, policy_aware_reuses_idle);
  tcase_add_test(tp, policy_multi_gpu);
  tcase_add_test(tp, property_random_sequences);
  suite_add_tcase(s, tp);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
