/*
 * Fill mode (sim/fill/fill.c): the Go-compatible generator, binning rules, an
 * exactly hand-computed run, tuning, seed lists, determinism, and fidelity
 * against the FGD authors' own results on the default trace.
 */
#include "testutil.h"

#include "fill.h"
#include "gorand.h"
#include "typical.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static gpu_catalog cat;

static void load_catalog(void) {
  char err[512];
  ck_assert_msg(catalog_load_default(&cat, err, sizeof err) == 0, "%s", err);
}

static void free_catalog(void) { catalog_free(&cat); }

/* ------------------------------------------------------------- gorand */

START_TEST(gorand_matches_go) {
  static uint64_t ck[GORAND_LEN];
  ck_assert_int_eq(gorand_cook(ck), 0);
  /* Go's rngCooked table (math/rand/rng.go): first, second and last. */
  ck_assert_int_eq((int64_t)ck[0], INT64_C(-4181792142133755926));
  ck_assert_int_eq((int64_t)ck[1], INT64_C(-4576982950128230565));
  ck_assert_int_eq((int64_t)ck[606], INT64_C(4152330101494654406));
  gorand r;
  /* rand.Seed(1); rand.Int63() twice. */
  gorand_seed(&r, ck, 1);
  ck_assert_int_eq(gorand_int63(&r), INT64_C(5577006791947779410));
  ck_assert_int_eq(gorand_int63(&r), INT64_C(8674665223082153551));
  /* rand.Seed(1); rand.Intn(100) x 10: the Go tour's sequence. */
  static const int64_t want[] = {81, 87, 47, 59, 81, 18, 25, 40, 56, 0};
  gorand_seed(&r, ck, 1);
  for (int i = 0; i < 10; i++)
    ck_assert_int_eq(gorand_intn(&r, 100), want[i]);
  /* Seed 0 means 89482311, like Go; Perm is a permutation. */
  gorand s2;
  gorand_seed(&r, ck, 0);
  gorand_seed(&s2, ck, 89482311);
  ck_assert_int_eq(gorand_int63(&r), gorand_int63(&s2));
  int perm[50], seen[50] = {0};
  gorand_perm(&r, perm, 50);
  for (int i = 0; i < 50; i++) {
    ck_assert(perm[i] >= 0 && perm[i] < 50);
    ck_assert_int_eq(seen[perm[i]]++, 0);
  }
  uint32_t a[20];
  for (uint32_t i = 0; i < 20; i++)
    a[i] = i;
  gorand_shuffle_u32(&r, a, 20);
  int moved = 0;
  for (uint32_t i = 0; i < 20; i++)
    moved += a[i] != i;
  ck_assert_int_gt(moved, 0);
}
END_TEST

/* --------------------------------------------------------------- bins */

static fill_record rec(int64_t arrived, int64_t alloc, int64_t fragw,
                       int64_t idle) {
  fill_record r = {arrived, alloc, fragw, idle};
  return r;
}

/*
 * cap 2000 milli: arrived % = arrived / 20. 10 -> 0.5 -> 0 (half to even),
 * 30 -> 1.5 -> 2, 50 -> 2.5 -> 2, 70 -> 3.5 -> 4, 100 -> 5. Bin 2 has two
 * records (mean), bins 1 and 3 are empty and take the mean over their
 * neighbours (bin 1: bins 0 and 2, three records), bin 6 takes bin 5 (7
 * is empty), bins 7.. have nothing within +-1.
 */
START_TEST(bins_round_mean_neighbours) {
  fill_record r[] = {
      rec(10, 10, 0, 1990),     /* bin 0: alloc 0.5%         */
      rec(30, 20, 200, 1980),   /* bin 2: alloc 1%, frag 200 */
      rec(50, 40, 400, 1960),   /* bin 2: alloc 2%, frag 400 */
      rec(70, 60, 0, 0),        /* bin 4: alloc 3%, idle 0   */
      rec(100, 100, 1000, 1000) /* bin 5: alloc 5%           */
  };
  fill_bins b;
  fill_bin(r, 5, 2000, 2, &b); /* W = 2: frag milli = fragw / 2 */
  ck_assert(b.has[0] && b.has[1] && b.has[2] && b.has[3] && b.has[4] &&
            b.has[5] && b.has[6]);
  ck_assert(!b.has[7] && !b.has[130]);
  ck_assert_double_eq_tol(b.alloc_pct[0], 0.5, 1e-12);
  ck_assert_double_eq_tol(b.alloc_pct[2], 1.5, 1e-12);
  ck_assert_double_eq_tol(b.alloc_pct[1], (0.5 + 1 + 2) / 3, 1e-12);
  ck_assert_double_eq_tol(b.alloc_pct[3], (1 + 2 + 3) / 3.0, 1e-12);
  ck_assert_double_eq_tol(b.alloc_pct[4], 3, 1e-12);
  ck_assert_double_eq_tol(b.alloc_pct[6], 5, 1e-12);
  /* frag amount % = 100 x (fragw / W) / cap; rate % = 100 x frag / idle
   * (0 when nothing is idle). */
  ck_assert_double_eq_tol(b.frag_amount_pct[2], (5.0 + 10.0) / 2, 1e-12);
  ck_assert_double_eq_tol(b.frag_rate_pct[2],
                          (100.0 * 100 / 1980 + 100.0 * 200 / 1960) / 2,
                          1e-12);
  ck_assert_double_eq_tol(b.frag_rate_pct[4], 0, 1e-12);
  ck_assert_double_eq_tol(b.frag_amount_pct[5], 25, 1e-12);
  ck_assert_double_eq_tol(b.frag_rate_pct[5], 50, 1e-12);
  /* Past 130% is ignored; a zero capacity gives nothing. */
  fill_record far = rec(2000 * 131 / 100 + 20, 0, 0, 0);
  fill_bin(&far, 1, 2000, 1, &b);
  for (int i = 0; i < FILL_BINS; i++)
    ck_assert(!b.has[i]);
  fill_bin(r, 5, 0, 1, &b);
  ck_assert(!b.has[0]);
}
END_TEST

START_TEST(seed_lists) {
  uint64_t s[16];
  size_t n;
  char err[256];
  ck_assert_int_eq(fill_parse_seeds("42-51", s, 16, &n, err, sizeof err), 0);
  ck_assert_uint_eq(n, 10);
  ck_assert_uint_eq(s[0], 42);
  ck_assert_uint_eq(s[9], 51);
  ck_assert_int_eq(fill_parse_seeds("42,43,50", s, 16, &n, err, sizeof err), 0);
  ck_assert_uint_eq(n, 3);
  ck_assert_uint_eq(s[2], 50);
  ck_assert_int_eq(fill_parse_seeds("7", s, 16, &n, err, sizeof err), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(s[0], 7);
  ck_assert_int_eq(fill_parse_seeds("1-3,9", s, 16, &n, err, sizeof err), 0);
  ck_assert_uint_eq(n, 4);
  ck_assert_uint_eq(s[3], 9);
  static const char *const bad[] = {"", "a", "5-3", "1-", "-1", ",", "1,,2",
                                    "1-2-3", "4x", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_msg(fill_parse_seeds(bad[i], s, 16, &n, err, sizeof err) == -1,
                  "'%s' accepted", bad[i]);
  ck_assert_int_eq(fill_parse_seeds("1-17", s, 16, &n, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "more than 16"));
}
END_TEST

/* ---------------------------------------------------------- tiny runs */

/* Two nodes of one shared 1-GPU A100, and pods of 1 x `milli`. */
static void tiny(sim_cluster *sc, trace *t, int pods, int milli) {
  char err[512];
  const char *json =
      "{\"name\": \"tiny\", \"node_groups\": [{\"name\": \"n\", \"count\": 2, "
      "\"gpu_model\": \"A100-80GB\", \"gpus_per_node\": 1, \"cpu_milli\": "
      "64000, \"memory_mib\": 65536, \"gpu_mode\": \"shared\"}]}";
  ck_assert_msg(
      sim_cluster_from_json(sc, json, "tiny", &cat, 1, err, sizeof err) == 0,
      "%s", err);
  trace_init(t);
  t->path = strdup("tiny.csv");
  for (int i = 0; i < pods; i++) {
    job_record j;
    memset(&j, 0, sizeof j);
    j.cpu_milli = 1000;
    j.memory_mib = 1000;
    j.num_gpu = 1;
    j.gpu_milli = milli;
    j.duration_us = -1;
    j.line = i + 2;
    char name[32];
    snprintf(name, sizeof name, "p%02d", i);
    ck_assert_int_eq(trace_add_job(t, &j, name, NULL), 0);
  }
}

/*
 * Two 1-GPU nodes (capacity 2000 milli), two pods of 1 x 600, tune 1.0:
 * 1200 < 2000, so pods are appended while the next keeps the total <= 2000:
 * one (1800); the next would make 2400. All pods are equal, so the order
 * does not matter. Pod 1 takes 600 of a GPU (400 left), pod 2 the other
 * GPU, pod 3 fails. The workload is the one shape (weight 2); F of a GPU
 * with 400 free is 400 (the type cannot run), of a free one 0.
 *   after 1: arrived 600 (30%), alloc 600, frag 400 (x W = 800), idle 1400
 *   after 2: arrived 1200 (60%), alloc 1200, frag 800 (1600), idle 800
 *   after 3: arrived 1800 (90%), alloc 1200 (failed), frag 800, idle 800
 * The same for first-fit and fgd (which scores both empty nodes 40).
 */
START_TEST(tiny_fill_exact) {
  static const char *const pols[] = {"first-fit", "fgd", "best-fit",
                                     "gpu-packing", "random"};
  sim_cluster sc;
  trace t;
  tiny(&sc, &t, 2, 600);
  uint64_t *masks, absent_dummy = 0;
  uint8_t *absent;
  char err[512];
  ck_assert_int_eq(sim_resolve_specs(&sc, &cat, &t, &masks, &absent, err,
                                     sizeof err),
                   0);
  lsched_workload *wl;
  ck_assert_int_eq(sim_typical_workload(&wl, &t, masks, 95), 0);
  ck_assert_uint_eq(lsched_workload_count(wl), 1);
  ck_assert_uint_eq(lsched_workload_weight(wl), 2);
  (void)absent_dummy;
  for (size_t p = 0; p < sizeof pols / sizeof pols[0]; p++) {
    fill_setup fs = {&sc, &t, pols[p], 1.0, wl, masks, absent, NULL, NULL,
                     NULL};
    fill_seed_result res;
    fill_record *rows;
    size_t n;
    ck_assert_msg(fill_run_seed(&fs, 42, &res, &rows, &n, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(res.pods, 3);
    ck_assert_uint_eq(res.failed, 1);
    const fill_record want[] = {rec(600, 600, 800, 1400),
                                rec(1200, 1200, 1600, 800),
                                rec(1800, 1200, 1600, 800)};
    for (int i = 0; i < 3; i++)
      ck_assert_msg(memcmp(&rows[i], &want[i], sizeof want[i]) == 0,
                    "%s row %d: %lld %lld %lld %lld", pols[p], i,
                    (long long)rows[i].arrived_milli,
                    (long long)rows[i].alloc_milli,
                    (long long)rows[i].frag_weighted,
                    (long long)rows[i].idle_milli);
    const fill_bins *b = &res.bins;
    for (int k = 0; k < FILL_BINS; k++) {
      int near30 = k >= 29 && k <= 31, near60 = k >= 59 && k <= 61,
          near90 = k >= 89 && k <= 91;
      ck_assert_int_eq(b->has[k], near30 || near60 || near90);
    }
    ck_assert_double_eq_tol(b->alloc_pct[30], 30, 1e-12);
    ck_assert_double_eq_tol(b->frag_amount_pct[29], 20, 1e-12);
    ck_assert_double_eq_tol(b->frag_rate_pct[31], 100.0 * 400 / 1400, 1e-12);
    ck_assert_double_eq_tol(b->alloc_pct[60], 60, 1e-12);
    ck_assert_double_eq_tol(b->frag_amount_pct[61], 40, 1e-12);
    ck_assert_double_eq_tol(b->frag_rate_pct[60], 100, 1e-12);
    ck_assert_double_eq_tol(b->alloc_pct[90], 60, 1e-12);
    ck_assert_double_eq_tol(100 - b->alloc_pct[91], 40, 1e-12);
    free(rows);
    /* The cluster is idle again. */
    lsched_totals tot;
    lsched_cluster_totals(sc.c, &tot);
    ck_assert_int_eq(tot.gpu_milli_free, tot.gpu_milli);
  }
  /* Too much demand: 5 x 600 = 3000 > 2000, pods are removed until the
   * total is at most 2000: three remain. */
  trace_free(&t);
  sim_cluster_free(&sc);
  tiny(&sc, &t, 5, 600);
  fill_setup fs = {&sc,   &t,     "first-fit", 1.0,  wl,
                   masks, absent, NULL,        NULL, NULL};
  fill_seed_result res;
  ck_assert_int_eq(fill_run_seed(&fs, 7, &res, NULL, NULL, err, sizeof err), 0);
  ck_assert_uint_eq(res.pods, 3);
  ck_assert_uint_eq(res.failed, 1);
  /* An unknown policy is bad input. */
  fs.policy = "no-such";
  ck_assert_int_eq(fill_run_seed(&fs, 7, &res, NULL, NULL, err, sizeof err),
                   -1);
  ck_assert_ptr_nonnull(strstr(err, "no-such"));
  ck_assert_ptr_nonnull(strstr(err, "fgd"));
  lsched_workload_destroy(wl);
  free(masks);
  free(absent);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* Same seeds, byte-identical fill.csv; another seed differs. */
START_TEST(deterministic_csv) {
  sim_cluster sc;
  trace t;
  char err[512];
  tiny(&sc, &t, 0, 0);
  /* A mixed trace: shares, whole GPUs and CPU-only pods. */
  static const int shapes[][3] = {{1, 300, 4000}, {1, 1000, 8000},
                                  {0, 0, 2000},   {1, 700, 1000},
                                  {1, 500, 30000}, {1, 250, 2000}};
  for (int i = 0; i < 30; i++) {
    job_record j;
    memset(&j, 0, sizeof j);
    j.num_gpu = shapes[i % 6][0];
    j.gpu_milli = shapes[i % 6][1];
    j.cpu_milli = shapes[i % 6][2];
    j.memory_mib = 100;
    j.duration_us = -1;
    char name[32];
    snprintf(name, sizeof name, "m%02d", i);
    ck_assert_int_eq(trace_add_job(&t, &j, name, NULL), 0);
  }
  uint64_t *masks;
  uint8_t *absent;
  ck_assert_int_eq(sim_resolve_specs(&sc, &cat, &t, &masks, &absent, err,
                                     sizeof err),
                   0);
  lsched_workload *wl;
  ck_assert_int_eq(sim_typical_workload(&wl, &t, masks, 95), 0);
  const char *dir = testutil_tmpdir();
  char p1[512], p2[512], p3[512];
  snprintf(p1, sizeof p1, "%s/a.csv", dir);
  snprintf(p2, sizeof p2, "%s/b.csv", dir);
  snprintf(p3, sizeof p3, "%s/c.csv", dir);
  static const char *const pols[] = {"fgd", "random", "gpu-clustering",
                                     "dot-product"};
  for (size_t p = 0; p < 4; p++) {
    fill_setup fs = {&sc, &t, pols[p], 1.3, wl, masks, absent, NULL, NULL,
                     NULL};
    /* The third run (seed 42 again) with the name orders taken once
     * (fill_name_orders, as schedsim fill and bench_fill do): the same
     * result as the first, which sorted them itself. */
    fill_setup once = fs;
    uint32_t *pods_byname, *nodes_byname;
    ck_assert_int_eq(fill_name_orders(&fs, &pods_byname, &nodes_byname), 0);
    once.pods_byname = pods_byname;
    once.nodes_byname = nodes_byname;
    fill_seed_result r[3];
    const uint64_t seeds[] = {42, 43, 42};
    for (int k = 0; k < 3; k++)
      ck_assert_int_eq(fill_run_seed(k == 2 ? &once : &fs, seeds[k], &r[k],
                                     NULL, NULL, err, sizeof err),
                       0);
    free(pods_byname);
    free(nodes_byname);
    ck_assert(memcmp(&r[0].bins, &r[2].bins, sizeof r[0].bins) == 0);
    ck_assert_int_eq(fill_write_csv(p1, &r[0], 1, err, sizeof err), 0);
    ck_assert_int_eq(fill_write_csv(p2, &r[2], 1, err, sizeof err), 0);
    ck_assert_int_eq(fill_write_csv(p3, &r[1], 1, err, sizeof err), 0);
    FILE *a = fopen(p1, "r"), *b = fopen(p2, "r"), *c = fopen(p3, "r");
    ck_assert(a && b && c);
    char la[256], lb[256];
    int lines = 0;
    ck_assert_ptr_nonnull(fgets(la, sizeof la, a));
    ck_assert_str_eq(la, "seed,arrived_pct,alloc_pct,unalloc_pct,"
                         "frag_amount_pct,frag_rate_pct\n");
    rewind(a);
    while (fgets(la, sizeof la, a)) {
      ck_assert_ptr_nonnull(fgets(lb, sizeof lb, b));
      ck_assert_str_eq(la, lb);
      lines++;
    }
    ck_assert_ptr_null(fgets(lb, sizeof lb, b));
    ck_assert_int_eq(lines, 1 + FILL_BINS);
    fclose(a);
    fclose(b);
    fclose(c);
  }
  lsched_workload_destroy(wl);
  free(masks);
  free(absent);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* ------------------------------------------------------------- fidelity */

/* One row of an authors' result file: the values of bins 0..130 for
 * (workload, policy, seed). 0, or -1 when the file or the row is missing. */
static int authors_row(const char *csv, const char *workload,
                       const char *policy, uint64_t seed,
                       double out[FILL_BINS]) {
  FILE *f = fopen(csv, "r");
  if (!f)
    return -1;
  static char line[8192];
  int cseed = -1, cbin0 = -1, found = 0, first = 1;
  while (!found && fgets(line, sizeof line, f)) {
    char *save = NULL, *tok;
    int col = 0, match = 0;
    for (tok = strtok_r(line, ",\n", &save); tok;
         tok = strtok_r(NULL, ",\n", &save), col++) {
      if (first) {
        if (strcmp(tok, "seed") == 0)
          cseed = col;
        else if (strcmp(tok, "0") == 0)
          cbin0 = col;
        continue;
      }
      if (col == 0)
        match = strcmp(tok, workload) == 0;
      else if (col == 1)
        match = match && strcmp(tok, policy) == 0;
      else if (col == cseed)
        match = match && strtoull(tok, NULL, 10) == seed;
      else if (match && cbin0 >= 0 && col >= cbin0 &&
               col - cbin0 < FILL_BINS) {
        out[col - cbin0] = strtod(tok, NULL);
        found = col - cbin0 == FILL_BINS - 1;
      }
    }
    first = 0;
  }
  fclose(f);
  return found ? 0 : -1;
}

/* The median of v[0 .. n), n >= 1 (v is sorted in place). */
static double median(double *v, size_t n) {
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double x = v[j];
      v[j] = v[j - 1];
      v[j - 1] = x;
    }
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The authors' median over `seeds` of 100 - alloc at arrived 100% and
 * 130% for one (workload, policy) of analysis_allo_discrete.csv. 0, or -1
 * when a seed's row is missing. */
static int authors_medians(const char *csv, const char *workload,
                           const char *policy, const uint64_t *seeds,
                           size_t nseeds, double *m100, double *m130) {
  double v100[64], v130[64];
  static double bins[FILL_BINS];
  if (nseeds == 0 || nseeds > 64)
    return -1;
  for (size_t k = 0; k < nseeds; k++) {
    if (authors_row(csv, workload, policy, seeds[k], bins))
      return -1;
    v100[k] = 100 - bins[100];
    v130[k] = 100 - bins[130];
  }
  *m100 = median(v100, nseeds);
  *m130 = median(v130, nseeds);
  return 0;
}

/* The default trace on its 1,213-node cluster, ready for fill_run_seed. */
typedef struct default_setup {
  sim_cluster sc;
  trace t;
  uint64_t *masks;
  uint8_t *absent;
  lsched_workload *wl;
  uint64_t *cooked; /* Go's seed table */
} default_setup;

static int default_setup_load(default_setup *d) {
  char pods[4096], nodes[4096], err[1024];
  if (!data_path(pods, sizeof pods,
                 "alibaba-gpu-v2023/openb_pod_list_default.csv") ||
      !data_path(nodes, sizeof nodes,
                 "alibaba-gpu-v2023/openb_node_list_gpu_node.csv"))
    return -1;
  ck_assert_msg(sim_cluster_load(&d->sc, nodes, &cat, 0, err, sizeof err) == 0,
                "%s", err);
  trace_init(&d->t);
  trace_error te;
  ck_assert_msg(trace_load(&d->t, pods, &te) == 0, "%s", te.msg);
  ck_assert_int_eq(sim_resolve_specs(&d->sc, &cat, &d->t, &d->masks,
                                     &d->absent, err, sizeof err),
                   0);
  ck_assert_int_eq(sim_typical_workload(&d->wl, &d->t, d->masks, 95), 0);
  static uint64_t cooked[GORAND_LEN];
  ck_assert_int_eq(gorand_cook(cooked), 0);
  d->cooked = cooked;
  return 0;
}

static void default_setup_free(default_setup *d) {
  lsched_workload_destroy(d->wl);
  free(d->masks);
  free(d->absent);
  trace_free(&d->t);
  sim_cluster_free(&d->sc);
}

/*
 * The default trace on its 1,213-node cluster, all six policies: our median
 * unallocated % at 100% and 130% arrived is within 1.0 point of the
 * authors' over the same seeds (we draw their exact pod sequences, so the
 * seeds pair up), and with all ten seeds the policies come in the authors'
 * order. Under AddressSanitizer (about ten times slower) two seeds are
 * used; scripts/fgd_compare.sh checks all traces with all seeds.
 */
START_TEST(fidelity_default_trace) {
  default_setup d;
  char expected[4096];
  if (!data_path(expected, sizeof expected,
                 "alibaba-gpu-v2023/fgd-expected/analysis_allo_discrete.csv") ||
      default_setup_load(&d))
    return;
#if defined(__SANITIZE_ADDRESS__)
  const uint64_t seeds[] = {42, 43};
#else
  const uint64_t seeds[] = {42, 43, 44, 45, 46, 47, 48, 49, 50, 51};
#endif
  const size_t nseeds = sizeof seeds / sizeof seeds[0];
  static const char *const pols[] = {"random",      "dot-product",
                                     "gpu-clustering", "gpu-packing",
                                     "best-fit",    "fgd"};
  static const char *const theirs[] = {"01-Random",        "02-DotProd",
                                       "03-GpuClustering", "04-GpuPacking",
                                       "05-BestFit",       "06-FGD"};
  char err[1024];
  ck_assert_uint_eq(lsched_workload_count(d.wl), 35);
  double ours[6][2], auth[6][2];
  fill_seed_result *res = calloc(nseeds, sizeof *res);
  ck_assert_ptr_nonnull(res);
  for (int k = 0; k < 6; k++) {
    fill_setup fs = {&d.sc,    &d.t,     pols[k],  1.3,  d.wl,
                     d.masks,  d.absent, d.cooked, NULL, NULL};
    for (size_t s = 0; s < nseeds; s++)
      ck_assert_msg(fill_run_seed(&fs, seeds[s], &res[s], NULL, NULL, err,
                                  sizeof err) == 0,
                    "%s", err);
    ours[k][0] = fill_median_unalloc(res, nseeds, 100);
    ours[k][1] = fill_median_unalloc(res, nseeds, 130);
    ck_assert_int_eq(authors_medians(expected, "openb_pod_list_default",
                                     theirs[k], seeds, nseeds, &auth[k][0],
                                     &auth[k][1]),
                     0);
    fprintf(stderr,
            "fidelity %-15s ours %6.2f %6.2f  authors %6.2f %6.2f (%zu seeds)\n",
            pols[k], ours[k][0], ours[k][1], auth[k][0], auth[k][1], nseeds);
    for (int a = 0; a < 2; a++)
      ck_assert_msg(fabs(ours[k][a] - auth[k][a]) <= 1.0,
                    "%s at %d%%: ours %.2f, authors %.2f", pols[k],
                    a ? 130 : 100, ours[k][a], auth[k][a]);
  }
  if (nseeds == 10)
    for (int a = 0; a < 2; a++)
      for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
          if (auth[i][a] < auth[j][a])
            ck_assert_msg(ours[i][a] < ours[j][a],
                          "order at %d%%: authors %s < %s, ours %.2f vs %.2f",
                          a ? 130 : 100, pols[i], pols[j], ours[i][a],
                          ours[j][a]);
  free(res);
  default_setup_free(&d);
}
END_TEST

/*
 * With ties everywhere (every CPU-only pod scores 0 on every node), the
 * placements of gpu-packing depend on the node order, so matching the
 * authors' published curves seed by seed checks that we draw their node
 * order: rand.Perm after the informers' draws (fill.c, PERM_SKIP), and
 * after the extra draw their tuning makes on seed 45. Allocation and
 * fragmentation at every arrived % agree to their 2 decimals.
 */
START_TEST(per_seed_curves_match_authors) {
  default_setup d;
  char alloc_csv[4096], frag_csv[4096], err[1024];
  if (!data_path(alloc_csv, sizeof alloc_csv,
                 "alibaba-gpu-v2023/fgd-expected/analysis_allo_discrete.csv") ||
      !data_path(frag_csv, sizeof frag_csv,
                 "alibaba-gpu-v2023/fgd-expected/analysis_frag_discrete.csv") ||
      default_setup_load(&d))
    return;
  fill_setup fs = {&d.sc,    &d.t,     "gpu-packing", 1.3,  d.wl,
                   d.masks,  d.absent, d.cooked,      NULL, NULL};
  const uint64_t seeds[] = {42, 45};
  for (size_t s = 0; s < 2; s++) {
    fill_seed_result r;
    ck_assert_msg(fill_run_seed(&fs, seeds[s], &r, NULL, NULL, err,
                                sizeof err) == 0,
                  "%s", err);
    static double alloc[FILL_BINS], frag[FILL_BINS];
    ck_assert_int_eq(authors_row(alloc_csv, "openb_pod_list_default",
                                 "04-GpuPacking", seeds[s], alloc),
                     0);
    ck_assert_int_eq(authors_row(frag_csv, "openb_pod_list_default",
                                 "04-GpuPacking", seeds[s], frag),
                     0);
    for (int b = 0; b < FILL_BINS; b++) {
      ck_assert_msg(r.bins.has[b], "seed %d: bin %d empty", (int)seeds[s], b);
      /* One unit of their last decimal: their alloc values are rounded
       * sums of the same rows, which can land on either side. */
      ck_assert_msg(fabs(r.bins.alloc_pct[b] - alloc[b]) <= 0.0105,
                    "seed %d, %d%% arrived: alloc ours %.4f, authors %.2f",
                    (int)seeds[s], b, r.bins.alloc_pct[b], alloc[b]);
      ck_assert_msg(fabs(r.bins.frag_amount_pct[b] - frag[b]) <= 0.0105,
                    "seed %d, %d%% arrived: frag ours %.4f, authors %.2f",
                    (int)seeds[s], b, r.bins.frag_amount_pct[b], frag[b]);
    }
  }
  default_setup_free(&d);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("fill");
  TCase *tc = tcase_create("fill");
  tcase_add_unchecked_fixture(tc, load_catalog, free_catalog);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, gorand_matches_go);
  tcase_add_test(tc, bins_round_mean_neighbours);
  tcase_add_test(tc, seed_lists);
  tcase_add_test(tc, tiny_fill_exact);
  tcase_add_test(tc, deterministic_csv);
  tcase_add_test(tc, fidelity_default_trace);
  tcase_add_test(tc, per_seed_curves_match_authors);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
