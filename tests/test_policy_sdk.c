/* The policy SDK (<libsched/policy_sdk.h>): the README's example policy
 * (kept verbatim between the markers below; tests/cli_policy_headers.sh
 * checks that README.md shows exactly this text), and the SDK's reads
 * against the plain public interface on random cluster states. Public
 * headers only, as an outside policy author has them. */
#include "testutil.h"

#include <libsched/libsched.h>
#include <libsched/policy_sdk.h>
#include <stdint.h>
#include <string.h>

/* README example begin */
/* "least-cpu-left": the node that fits with the least CPU left after
 * placing (ties: the earliest in the visit order); the tightest GPUs. */
#include <libsched/policy_sdk.h>

struct lcl_state {
  lsched_allocator a; /* the cluster's, for fini */
  int *scratch;       /* node-count ints for lsched_best_raw_score */
};

static int lcl_init(void *state, const lsched_cluster *c) {
  struct lcl_state *s = state;
  int n = lsched_cluster_node_count(c);
  lsched_cluster_allocator(c, &s->a);
  s->scratch = lsched_mem_calloc(&s->a, n > 0 ? (size_t)n : 1, sizeof(int));
  return s->scratch ? LSCHED_OK : LSCHED_ENOMEM;
}

static void lcl_fini(void *state) {
  struct lcl_state *s = state;
  lsched_mem_free(&s->a, s->scratch);
}

/* Higher is better: minus the CPU the node would have left. */
static int64_t lcl_score(const lsched_view *v, int node,
                         const lsched_request *req, void *ctx) {
  (void)ctx;
  const lsched_node *nd = lsched_view_node(v, node);
  return -(nd->cpu_free - req->cpu_milli);
}

static int lcl_place(void *state, const lsched_cluster *c,
                     const lsched_request *req, lsched_placement *out) {
  struct lcl_state *s = state;
  int node;
  int rc = lsched_best_raw_score(c, req, lcl_score, NULL, s->scratch, &node);
  if (rc != LSCHED_OK)
    return rc;
  return lsched_pick_gpus(c, node, req, LSCHED_PICK_TIGHTEST, out);
}

static const lsched_policy_ops least_cpu_left = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "least-cpu-left",
    .description = "the node left with the least CPU; tightest GPUs",
    .state_size = sizeof(struct lcl_state),
    .init = lcl_init,
    .fini = lcl_fini,
    .place = lcl_place,
};
/* README example end */

/* A small deterministic generator (SplitMix64). */
static uint64_t rng_s = 7;
static uint64_t rng_next(void) {
  uint64_t z = (rng_s += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}
static int rng_below(int n) { return (int)(rng_next() % (uint64_t)n); }

/* A cluster of n nodes with varied shapes and modes, nodes in a shuffled
 * visit order. */
static lsched_cluster *make_cluster(int n) {
  lsched_cluster *c = NULL;
  ck_assert_int_eq(lsched_cluster_create(&c, NULL), LSCHED_OK);
  int m0 = lsched_cluster_model_id(c, "A100", 1);
  int m1 = lsched_cluster_model_id(c, "V100", 1);
  for (int i = 0; i < n; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = 8000 * (1 + rng_below(8));
    s.memory_mib = 16384 * (1 + rng_below(8));
    s.gpu_count = rng_below(4) == 0 ? 0 : 1 + rng_below(8);
    s.gpu_model = rng_below(2) ? m0 : m1;
    s.gpu_mode = rng_below(4) == 0 ? LSCHED_GPU_EXCLUSIVE : LSCHED_GPU_SHARED;
    ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), LSCHED_OK);
  }
  int order[64];
  for (int i = 0; i < n; i++)
    order[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = rng_below(i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  ck_assert_int_eq(lsched_cluster_set_order(c, order, n), LSCHED_OK);
  return c;
}

static lsched_request random_request(void) {
  lsched_request r = LSCHED_REQUEST_INIT;
  r.cpu_milli = 1000 * rng_below(16);
  r.memory_mib = 1024 * rng_below(32);
  r.gpu_count = rng_below(3) == 0 ? 0 : 1 + rng_below(3);
  r.gpu_milli = r.gpu_count ? (rng_below(2) ? 1000 : 1 + rng_below(999)) : 0;
  return r;
}

/* The view agrees with lsched_cluster_node_info / gpus_free / order, and
 * lsched_collect_fits with lsched_fits, through random allocations. */
START_TEST(view_matches_public_reads) {
  ck_assert_uint_eq(lsched_sdk_version(), LSCHED_SDK_VERSION);
  enum { N = 40 };
  lsched_cluster *c = make_cluster(N);
  lsched_view v = LSCHED_VIEW_INIT;
  ck_assert_int_eq(lsched_cluster_view(NULL, &v), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_view(c, NULL), LSCHED_EINVAL);
  v.version = 0;
  ck_assert_int_eq(lsched_cluster_view(c, &v), LSCHED_EVERSION);
  v.version = LSCHED_VIEW_VERSION + 1;
  ck_assert_int_eq(lsched_cluster_view(c, &v), LSCHED_EVERSION);
  v.version = LSCHED_VIEW_VERSION;
  ck_assert_int_eq(lsched_cluster_view(c, &v), LSCHED_OK);
  ck_assert_int_eq(v.n, N);
  ck_assert_int_eq(v.mig_ngpus, 0);
  ck_assert_ptr_null(v.mig_gpus);
  lsched_placement held[200];
  int nheld = 0;
  for (int step = 0; step < 400; step++) {
    /* the view stays valid and current: taken once, read after changes */
    lsched_totals t;
    lsched_cluster_totals(c, &t);
    ck_assert_int_eq(v.ngpus, t.gpus);
    int64_t maxcpu = 0;
    int maxg = 0;
    const int *order = lsched_cluster_order(c);
    for (int id = 0; id < N; id++) {
      lsched_node_info ni;
      ck_assert_int_eq(lsched_cluster_node_info(c, id, &ni), LSCHED_OK);
      const lsched_node *nd = lsched_view_node(&v, id);
      ck_assert_int_eq(nd->cpu_cap, ni.cpu_milli);
      ck_assert_int_eq(nd->mem_cap, ni.memory_mib);
      ck_assert_int_eq(nd->cpu_free, ni.cpu_free);
      ck_assert_int_eq(nd->mem_free, ni.memory_free);
      ck_assert_int_eq(nd->gpu_count, ni.gpu_count);
      ck_assert_int_eq(nd->model, ni.gpu_model);
      ck_assert_int_eq((int)nd->mode, (int)ni.gpu_mode);
      ck_assert_int_eq(nd->gpus_full_free, ni.gpus_fully_free);
      ck_assert_int_eq(nd->gpu_free_sum, ni.gpu_milli_free);
      ck_assert_int_eq(v.order[v.pos_of[id]], id);
      ck_assert_int_eq(v.order[id], order[id]);
      int g[64], mx = 0, nz = 0;
      ck_assert_int_eq(lsched_cluster_gpus_free(c, id, g, 64), nd->gpu_count);
      const int *vg = lsched_view_gpus(&v, nd);
      for (int k = 0; k < nd->gpu_count; k++) {
        ck_assert_int_eq(vg[k], g[k]);
        mx = g[k] > mx ? g[k] : mx;
        nz += g[k] > 0;
      }
      ck_assert_int_eq(nd->max_gpu_free, mx);
      ck_assert_int_eq(nd->gpus_nonzero_free, nz);
      maxcpu = nd->cpu_cap > maxcpu ? nd->cpu_cap : maxcpu;
      maxg = nd->gpu_count > maxg ? nd->gpu_count : maxg;
    }
    ck_assert_int_eq(v.max_cpu_cap, maxcpu);
    ck_assert_int_eq(v.max_gpu_count, maxg);
    /* collect_fits: every fitting node, in visit order */
    lsched_request r = random_request();
    int fits[N], m = lsched_collect_fits(c, &r, fits), k = 0;
    for (int p = 0; p < N; p++)
      if (lsched_fits(c, order[p], &r)) {
        ck_assert_int_lt(k, m);
        ck_assert_int_eq(fits[k], order[p]);
        ck_assert_int_eq(lsched_node_eff_milli(lsched_view_node(&v, order[p]), &r),
                         lsched_effective_milli(c, order[p], &r));
        k++;
      }
    ck_assert_int_eq(k, m);
    /* change the state: place r somewhere or release something */
    if (m > 0 && nheld < 200 && rng_below(3) != 0) {
      ck_assert_int_eq(lsched_pick_gpus(c, fits[rng_below(m)], &r,
                                        LSCHED_PICK_LOWEST, &held[nheld]),
                       LSCHED_OK);
      ck_assert_int_eq(lsched_alloc(c, &held[nheld]), LSCHED_OK);
      nheld++;
    } else if (nheld > 0) {
      int i = rng_below(nheld);
      ck_assert_int_eq(lsched_release(c, &held[i]), LSCHED_OK);
      held[i] = held[--nheld];
    }
  }
  lsched_cluster_destroy(c);
}
END_TEST

/* The README's example policy places as its definition says (checked by
 * brute force over lsched_fits), registered and used like a built-in, and
 * a defrag instance made from the same registry can wrap it. */
START_TEST(readme_example_policy) {
  lsched_cluster *c = make_cluster(24);
  lsched_registry *r = NULL;
  ck_assert_int_eq(lsched_registry_create(&r, NULL), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add_builtins(r), LSCHED_OK);
  ck_assert_int_eq(lsched_registry_add(r, &least_cpu_left), LSCHED_OK);
  lsched_policy *p = NULL, *d = NULL;
  ck_assert_int_eq(lsched_policy_create_from(&p, c, r, "least-cpu-left"),
                   LSCHED_OK);
  ck_assert_int_eq(lsched_policy_create_from(&d, c, r, "defrag"), LSCHED_OK);
  ck_assert_int_eq(lsched_policy_set_param(d, "base", "least-cpu-left"),
                   LSCHED_OK);
  const int *order = lsched_cluster_order(c);
  int n = lsched_cluster_node_count(c), placed = 0;
  for (int step = 0; step < 300; step++) {
    lsched_request q = random_request();
    int best = -1;
    int64_t best_left = 0;
    for (int i = 0; i < n; i++) {
      lsched_node_info ni;
      if (!lsched_fits(c, order[i], &q))
        continue;
      lsched_cluster_node_info(c, order[i], &ni);
      if (best < 0 || ni.cpu_free - q.cpu_milli < best_left) {
        best = order[i];
        best_left = ni.cpu_free - q.cpu_milli;
      }
    }
    lsched_placement a, b, t;
    int rc = lsched_policy_place(p, &q, &a);
    ck_assert_int_eq(lsched_policy_place(d, &q, &b), rc);
    if (best < 0) {
      ck_assert_int_eq(rc, LSCHED_ENOFIT);
      continue;
    }
    ck_assert_int_eq(rc, LSCHED_OK);
    ck_assert_int_eq(a.node, best);
    ck_assert_int_eq(b.node, best);
    ck_assert_int_eq(lsched_pick_gpus(c, best, &q, LSCHED_PICK_TIGHTEST, &t),
                     LSCHED_OK);
    ck_assert_uint_eq(a.gpu_mask, t.gpu_mask);
    ck_assert_uint_eq(b.gpu_mask, t.gpu_mask);
    ck_assert_int_eq(lsched_alloc(c, &a), LSCHED_OK);
    placed++;
  }
  ck_assert_int_gt(placed, 20);
  ck_assert_int_eq(lsched_cluster_check(c), LSCHED_OK);
  lsched_policy_destroy(d);
  lsched_policy_destroy(p);
  lsched_registry_destroy(r);
  lsched_cluster_destroy(c);
}
END_TEST

/* The scoring helpers: lsched_place_best_score normalises and breaks ties
 * to the earliest node; lsched_fit_score is best-fit's score. */
static int64_t by_gpu_free(const lsched_view *v, int node,
                           const lsched_request *req, void *ctx) {
  (void)req;
  (void)ctx;
  return lsched_view_node(v, node)->gpu_free_sum;
}

START_TEST(scoring_helpers) {
  lsched_cluster *c = NULL;
  ck_assert_int_eq(lsched_cluster_create(&c, NULL), LSCHED_OK);
  int m = lsched_cluster_model_id(c, "A100", 1);
  for (int i = 0; i < 4; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = 32000;
    s.memory_mib = 65536;
    s.gpu_count = i == 3 ? 2 : 4;
    s.gpu_model = m;
    ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), LSCHED_OK);
  }
  lsched_view v = LSCHED_VIEW_INIT;
  ck_assert_int_eq(lsched_cluster_view(c, &v), LSCHED_OK);
  lsched_request q = LSCHED_REQUEST_INIT;
  q.cpu_milli = 8000;
  q.gpu_count = 1;
  q.gpu_milli = 500;
  int scratch[8], node = -7;
  lsched_placement out;
  /* Nodes 0..2 tie on 4000 free milli (the highest): node 0 wins. */
  ck_assert_int_eq(lsched_place_best_score(c, &q, by_gpu_free, NULL, scratch,
                                           LSCHED_PICK_LOWEST, &out),
                   LSCHED_OK);
  ck_assert_int_eq(out.node, 0);
  ck_assert_int_eq(lsched_best_raw_score(c, &q, by_gpu_free, NULL, scratch,
                                         &node),
                   LSCHED_OK);
  ck_assert_int_eq(node, 0);
  /* best-fit score on an empty node: leftover = 1/2 x 24/32 + 1/2 x
   * 3500/4000 = 0.8125 -> floor(100 x 0.1875) = 18; worst-fit: 81. On the
   * 2-GPU node: 1/2 x 0.75 + 1/2 x 1500/4000 = 0.5625 -> 43 and 56. */
  ck_assert_int_eq(lsched_fit_score(&v, 0, &q, 0), 18);
  ck_assert_int_eq(lsched_fit_score(&v, 0, &q, 1), 81);
  ck_assert_int_eq(lsched_fit_score(&v, 3, &q, 0), 43);
  ck_assert_int_eq(lsched_fit_score(&v, 3, &q, 1), 56);
  /* Nothing fits: ENOFIT, node -1. */
  q.gpu_count = 5;
  ck_assert_int_eq(lsched_place_best_score(c, &q, by_gpu_free, NULL, scratch,
                                           LSCHED_PICK_LOWEST, &out),
                   LSCHED_ENOFIT);
  ck_assert_int_eq(lsched_best_raw_score(c, &q, by_gpu_free, NULL, scratch,
                                         &node),
                   LSCHED_ENOFIT);
  ck_assert_int_eq(node, -1);
  /* The allocator helpers. */
  lsched_allocator a;
  ck_assert_int_eq(lsched_cluster_allocator(NULL, &a), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_allocator(c, &a), LSCHED_OK);
  ck_assert_ptr_nonnull(a.alloc);
  ck_assert_ptr_nonnull(a.realloc);
  ck_assert_ptr_nonnull(a.free);
  int *z = lsched_mem_calloc(&a, 16, sizeof *z);
  ck_assert_ptr_nonnull(z);
  for (int i = 0; i < 16; i++)
    ck_assert_int_eq(z[i], 0);
  ck_assert_ptr_null(lsched_mem_calloc(&a, SIZE_MAX, 2));
  z = lsched_mem_realloc(&a, z, 64 * sizeof *z);
  ck_assert_ptr_nonnull(z);
  lsched_mem_free(&a, z);
  lsched_mem_free(&a, NULL);
  lsched_cluster_destroy(c);
}
END_TEST

/* The MIG view: the inline kind tables agree with <libsched/mig.h>'s
 * functions, and pack counts with a direct count. */
START_TEST(mig_tables) {
  for (int k = 1; k <= LSCHED_MIG_KINDS; k++) {
    ck_assert_int_eq(lsched_mig_slices_of(k), lsched_mig_kind_slices(k));
    ck_assert_int_eq(lsched_mig_milli_of(k), lsched_mig_kind_milli(k));
    ck_assert_uint_eq(lsched_mig_starts_of(k), lsched_mig_kind_starts(k));
    for (int s = 0; s < LSCHED_MIG_SLOTS; s++)
      if ((lsched_mig_kind_starts(k) >> s) & 1)
        ck_assert_uint_eq(lsched_mig_mask_at(k, s), lsched_mig_slot_mask(k, s));
    for (unsigned b = 0; b < 256; b++) {
      int n = 0;
      for (int s = 0; s < LSCHED_MIG_SLOTS; s++)
        n += (lsched_mig_kind_starts(k) >> s) & 1 &&
             !(lsched_mig_slot_mask(k, s) & b);
      ck_assert_int_eq(lsched_mig_pack_count(b, k), n);
    }
  }
  ck_assert_int_eq(lsched_mig_slices_of(0), 0);
  ck_assert_int_eq(lsched_mig_milli_of(0), 0);
  ck_assert_uint_eq(lsched_mig_starts_of(0), 0);
  ck_assert_int_eq(lsched_mig_pack_count(256, 1), 0);
  ck_assert_int_eq(lsched_mig_pack_count(0, 0), 0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("policy_sdk");
  TCase *tc = tcase_create("sdk");
  tcase_add_test(tc, view_matches_public_reads);
  tcase_add_test(tc, readme_example_policy);
  tcase_add_test(tc, scoring_helpers);
  tcase_add_test(tc, mig_tables);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
