/* Gang placement: all-or-nothing, fewest nodes, exact CPU/memory split. */
#include "testutil.h"

#include <libsched/libsched.h>
#include <stdlib.h>
#include <string.h>

static lsched_cluster *c;
static lsched_registry *reg;

/* n nodes x gpus GPUs (shared), 64 cores and 512 GiB each. */
static void build(int n, int gpus) {
  ck_assert_int_eq(lsched_cluster_create(&c, NULL), LSCHED_OK);
  int m = lsched_cluster_model_id(c, "A100", 1);
  for (int i = 0; i < n; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = 64000;
    s.memory_mib = 524288;
    s.gpu_count = gpus;
    s.gpu_model = m;
    ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), LSCHED_OK);
  }
  ck_assert_int_eq(lsched_registry_create(&reg, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(reg), LSCHED_OK);
}

static void teardown(void) {
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
  c = NULL;
  reg = NULL;
}

static lsched_policy *policy(const char *name) {
  lsched_policy *p;
  ck_assert_int_eq(lsched_policy_create(&p, c, lsched_registry_find(reg, name)),
                   LSCHED_OK);
  return p;
}

static lsched_request gang(int gpus, int64_t cpu, int64_t mem) {
  lsched_request r = LSCHED_REQUEST_INIT;
  r.gpu_count = gpus;
  r.gpu_milli = 1000;
  r.cpu_milli = cpu;
  r.memory_mib = mem;
  return r;
}

static void snapshot(int64_t *out) {
  int n = lsched_cluster_node_count(c), k = 0;
  for (int i = 0; i < n; i++) {
    lsched_node_info ni;
    lsched_cluster_node_info(c, i, &ni);
    out[k++] = ni.cpu_free;
    out[k++] = ni.memory_free;
    for (int g = 0; g < ni.gpu_count; g++)
      out[k++] = lsched_cluster_gpu_free(c, i, g);
  }
}

START_TEST(sixteen_gpus_on_two_nodes) {
  build(4, 8);
  lsched_policy *p = policy("first-fit");
  lsched_request r = gang(16, 16001, 1000);
  lsched_placement out[8];
  int n;
  ck_assert_int_eq(lsched_place_gang(p, &r, out, 8, &n), LSCHED_OK);
  ck_assert_int_eq(n, 2);
  ck_assert_int_eq(out[0].node, 0);
  ck_assert_int_eq(out[1].node, 1);
  ck_assert_uint_eq(out[0].gpu_mask, 0xFF);
  ck_assert_uint_eq(out[1].gpu_mask, 0xFF);
  /* 16001 / 16 = 1000 per GPU, remainder 1 on the first part. */
  ck_assert_int_eq(out[0].cpu_milli, 8001);
  ck_assert_int_eq(out[1].cpu_milli, 8000);
  ck_assert_int_eq(out[0].memory_mib + out[1].memory_mib, 1000);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  for (int i = 0; i < n; i++)
    ck_assert_int_eq(lsched_release(c, &out[i]), LSCHED_OK);
  lsched_totals t;
  lsched_cluster_totals(c, &t);
  ck_assert_int_eq(t.gpu_milli_free, t.gpu_milli);
  ck_assert_int_eq(t.cpu_free, t.cpu_milli);
  lsched_policy_destroy(p);
}
END_TEST

START_TEST(fragmented_cluster_all_or_nothing) {
  build(3, 8);
  lsched_policy *p = policy("best-fit");
  /* One GPU busy on nodes 0 and 1: 7 + 7 + 8 = 22 free, but a 24-GPU job
   * cannot fit and a 16-GPU job needs 8 + 7 + 1 = three nodes. */
  lsched_request one = gang(1, 0, 0);
  lsched_placement a, b;
  a.node = 0;
  ck_assert_int_eq(lsched_pick_gpus(c, 0, &one, LSCHED_PICK_LOWEST, &a), 0);
  ck_assert_int_eq(lsched_alloc(c, &a), LSCHED_OK);
  ck_assert_int_eq(lsched_pick_gpus(c, 1, &one, LSCHED_PICK_LOWEST, &b), 0);
  ck_assert_int_eq(lsched_alloc(c, &b), LSCHED_OK);
  int64_t before[64] = {0}, after[64] = {0};
  snapshot(before);
  lsched_request r = gang(24, 2400, 2400);
  lsched_placement out[8];
  int n = -1;
  ck_assert_int_eq(lsched_place_gang(p, &r, out, 8, &n), LSCHED_ENOFIT);
  ck_assert_int_eq(n, 0);
  snapshot(after);
  ck_assert(memcmp(before, after, sizeof before) == 0);
  r = gang(16, 1600, 1600);
  ck_assert_int_eq(lsched_place_gang(p, &r, out, 8, &n), LSCHED_OK);
  ck_assert_int_eq(n, 2 + 1); /* 8 (node 2) + 7 + 1 */
  ck_assert_int_eq(out[0].node, 2);
  ck_assert_int_eq(out[0].gpu_count, 8);
  ck_assert_int_eq(out[1].gpu_count + out[2].gpu_count, 8);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  /* max_out too small: ELIMIT, cluster unchanged. */
  for (int i = 0; i < n; i++)
    ck_assert_int_eq(lsched_release(c, &out[i]), LSCHED_OK);
  ck_assert_int_eq(lsched_place_gang(p, &r, out, 2, &n), LSCHED_ELIMIT);
  snapshot(after);
  ck_assert(memcmp(before, after, sizeof before) == 0);
  lsched_policy_destroy(p);
}
END_TEST

START_TEST(can_ever_fit_gang) {
  build(4, 8);
  lsched_request r = gang(32, 0, 0);
  ck_assert_int_eq(lsched_can_ever_fit_gang(c, &r), 1);
  r.gpu_count = 33;
  ck_assert_int_eq(lsched_can_ever_fit_gang(c, &r), 0);
  r = gang(16, 64000 * 2 + 1, 0); /* each 8-GPU part needs > 64 cores */
  ck_assert_int_eq(lsched_can_ever_fit_gang(c, &r), 0);
  r = gang(4, 0, 0); /* fits one node: the plain rule */
  ck_assert_int_eq(lsched_can_ever_fit_gang(c, &r), 1);
}
END_TEST

/* Random gang jobs on a random cluster: never a partial placement, and
 * releasing everything restores the exact initial state. */
START_TEST(random_gangs) {
  build(6, 8);
  const char *names[] = {"first-fit", "best-fit", "worst-fit"};
  lsched_policy *p = policy(names[_i % 3]);
  int64_t empty[64] = {0}, now[64] = {0};
  snapshot(empty);
  lsched_placement live[256];
  int nlive = 0;
  uint64_t x = 0x9E3779B97F4A7C15ull + (uint64_t)_i;
  for (int step = 0; step < 400; step++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    if (nlive > 200 || (nlive > 0 && x % 3 == 0)) {
      /* Release a random part. */
      int k = (int)(x % (uint64_t)nlive);
      ck_assert_int_eq(lsched_release(c, &live[k]), LSCHED_OK);
      live[k] = live[--nlive];
    } else {
      lsched_request r = gang(1 + (int)(x % 24), (int64_t)(x % 5000),
                              (int64_t)(x % 7000));
      int64_t before[64] = {0};
      snapshot(before);
      lsched_placement out[8];
      int n;
      int rc = lsched_place_gang(p, &r, out, 8, &n);
      if (rc == LSCHED_OK) {
        int sum = 0;
        int64_t cpu = 0;
        for (int i = 0; i < n; i++) {
          sum += out[i].gpu_count;
          cpu += out[i].cpu_milli;
          live[nlive++] = out[i];
        }
        ck_assert_int_eq(sum, r.gpu_count);
        ck_assert_int_eq(cpu, r.cpu_milli);
      } else {
        ck_assert_int_eq(rc, LSCHED_ENOFIT);
        snapshot(now);
        ck_assert(memcmp(before, now, sizeof now) == 0);
      }
    }
    ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  }
  while (nlive > 0)
    ck_assert_int_eq(lsched_release(c, &live[--nlive]), LSCHED_OK);
  snapshot(now);
  ck_assert(memcmp(empty, now, sizeof now) == 0);
  lsched_policy_destroy(p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("gang");
  TCase *tc = tcase_create("gang");
  tcase_add_checked_fixture(tc, NULL, teardown);
  tcase_add_test(tc, sixteen_gpus_on_two_nodes);
  tcase_add_test(tc, fragmented_cluster_all_or_nothing);
  tcase_add_test(tc, can_ever_fit_gang);
  tcase_add_loop_test(tc, random_gangs, 0, 12);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
