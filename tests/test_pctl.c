/*
 * Exact percentiles in bounded memory (sim/output/pctl.h): every statistic equals,
 * bit for bit, sorting all values and asking GSL
 * (gsl_stats_quantile_from_sorted_data), both with the values kept in
 * memory and spilled to a temporary file (a tiny memory limit); the mean
 * is the correctly rounded sum divided by n, whatever the order of the
 * values.
 */
#include "pctl.h"
#include "testutil.h"

#include <dirent.h>
#include <float.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The reference: sort a copy and ask GSL, as sim_stats_compute does. */
static void reference(const double *v, size_t n, sim_stats *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  if (n == 0)
    return;
  double *s = malloc(n * sizeof *s);
  ck_assert_ptr_nonnull(s);
  memcpy(s, v, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp);
  out->p50 = gsl_stats_quantile_from_sorted_data(s, 1, n, 0.50);
  out->p95 = gsl_stats_quantile_from_sorted_data(s, 1, n, 0.95);
  out->p99 = gsl_stats_quantile_from_sorted_data(s, 1, n, 0.99);
  out->max = s[n - 1];
  long double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += s[i];
  out->mean = (double)(sum / (long double)n);
  free(s);
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Runs v through an accumulator keeping `limit` values in memory. */
static void run(const double *v, size_t n, size_t limit, int reversed,
                sim_stats *out) {
  pctl p;
  pctl_init(&p, limit);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(pctl_add(&p, v[reversed ? n - 1 - i : i]) == 0, "add: %s",
                  pctl_error(&p));
  ck_assert_msg(pctl_finish(&p, out) == 0, "finish: %s", pctl_error(&p));
  if (limit < n)
    ck_assert_ptr_nonnull(p.spill);
  else
    ck_assert_ptr_null(p.spill);
  pctl_free(&p);
}

/* Percentiles and max bit-identical to the reference; the mean within a
 * few ulps of a long double sum, and bit-identical between limits and
 * orders. */
static void check(const double *v, size_t n, const char *what) {
  sim_stats want, mem, spilled, rev;
  reference(v, n, &want);
  run(v, n, n + 1, 0, &mem);
  run(v, n, n > 3 ? n / 3 : 1, 0, &spilled);
  run(v, n, 1, 1, &rev);
  const sim_stats *got[3] = {&mem, &spilled, &rev};
  for (int k = 0; k < 3; k++) {
    const sim_stats *g = got[k];
    ck_assert_msg(g->n == n, "%s: n", what);
    ck_assert_msg(same_bits(g->p50, want.p50), "%s/%d: p50 %.17g vs %.17g",
                  what, k, g->p50, want.p50);
    ck_assert_msg(same_bits(g->p95, want.p95), "%s/%d: p95 %.17g vs %.17g",
                  what, k, g->p95, want.p95);
    ck_assert_msg(same_bits(g->p99, want.p99), "%s/%d: p99 %.17g vs %.17g",
                  what, k, g->p99, want.p99);
    ck_assert_msg(same_bits(g->max, want.max), "%s/%d: max", what, k);
    ck_assert_msg(same_bits(g->mean, mem.mean), "%s/%d: mean depends on the "
                  "path or order", what, k);
    ck_assert_msg(fabs(g->mean - want.mean) <= 4 * DBL_EPSILON * want.mean,
                  "%s/%d: mean %.17g vs %.17g", what, k, g->mean, want.mean);
  }
}

static uint64_t rng_state = 88172645463325252u;
static uint64_t next_u64(void) { /* xorshift64 */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static double uniform(void) { return (double)(next_u64() >> 11) * 0x1p-53; }

START_TEST(tiny_sizes) {
  sim_stats s;
  pctl p;
  pctl_init(&p, 0);
  ck_assert_int_eq(pctl_finish(&p, &s), 0); /* n = 0: all zero */
  ck_assert(s.n == 0 && s.mean == 0 && s.p50 == 0 && s.p99 == 0 && s.max == 0);
  pctl_free(&p);
  const double one[1] = {7.25};
  check(one, 1, "n=1");
  const double two[2] = {3, 1};
  check(two, 2, "n=2");
  const double zeros[3] = {0, -0.0, 0};
  check(zeros, 3, "zeros");
  run(zeros, 3, 1, 0, &s);
  ck_assert(!signbit(s.p50) && !signbit(s.max) && s.mean == 0);
  const double three[3] = {1, 2, 4};
  run(three, 3, 1, 0, &s);
  ck_assert(s.p50 == 2 && s.max == 4);
  ck_assert(s.mean == 7.0 / 3);
}
END_TEST

START_TEST(random_sizes) {
  static const size_t sizes[] = {3, 4, 5, 7, 10, 99, 100, 101, 1000, 4095,
                                 4096, 5000, 65537, 100003};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    double *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    char what[64];
    /* Spread over many magnitudes (queue times from 0 to days). */
    for (size_t i = 0; i < n; i++)
      v[i] = next_u64() % 7 == 0 ? 0 : exp(uniform() * 30 - 10);
    snprintf(what, sizeof what, "lognormal-ish n=%zu", n);
    check(v, n, what);
    /* Heavy duplicates: whole seconds from a small set. */
    for (size_t i = 0; i < n; i++)
      v[i] = (double)(next_u64() % 5) * 60;
    snprintf(what, sizeof what, "duplicates n=%zu", n);
    check(v, n, what);
    /* Values sharing their top 48 bits: the last radix pass decides. */
    for (size_t i = 0; i < n; i++)
      v[i] = 1000.0 + (double)(next_u64() % 1000) * 0x1p-40;
    snprintf(what, sizeof what, "close values n=%zu", n);
    check(v, n, what);
    /* Orders that trouble quickselect pivots: ascending, descending,
     * organ pipe, and a median-of-three killer-like sawtooth. */
    for (int pat = 0; pat < 4; pat++) {
      for (size_t i = 0; i < n; i++) {
        size_t x = pat == 0   ? i
                   : pat == 1 ? n - i
                   : pat == 2 ? (i < n / 2 ? i : n - i)
                              : (i % 2 ? i : n + i / 2);
        v[i] = (double)x;
      }
      snprintf(what, sizeof what, "pattern %d n=%zu", pat, n);
      check(v, n, what);
    }
    free(v);
  }
}
END_TEST

START_TEST(exact_mean) {
  /* Integers: the plain sum is exact, so the mean must be sum / n. */
  size_t n = 100000;
  double *v = malloc(n * sizeof *v);
  ck_assert_ptr_nonnull(v);
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    v[i] = (double)(next_u64() % 1000000);
    sum += v[i];
  }
  sim_stats s;
  run(v, n, 777, 0, &s);
  ck_assert(same_bits(s.mean, sum / (double)n));
  /* 1e16 then 1023 ones: a left-to-right double sum loses every one (the
   * ulp of 1e16 is 2); the exact sum keeps them. */
  for (size_t i = 0; i < 1024; i++)
    v[i] = i == 0 ? 1e16 : 1;
  run(v, 1024, 2000, 0, &s);
  ck_assert(same_bits(s.mean, (1e16 + 1023) / 1024));
  /* Huge values do not overflow the mean; subnormals are exact. */
  const double huge[2] = {DBL_MAX, DBL_MAX};
  run(huge, 2, 1, 0, &s);
  ck_assert(s.mean == DBL_MAX && s.p50 == DBL_MAX);
  const double tiny[3] = {0x1p-1074, 0x1p-1074, 0x1p-1074};
  run(tiny, 3, 1, 0, &s);
  ck_assert(s.mean == 0x1p-1074);
  free(v);
}
END_TEST

/* From 4096 values on, in memory, the order statistics are selected among
 * the values whose top 16 bits are those of a wanted rank (pctl.h): every
 * value in one digit, ties across the ranks, ranks in adjacent digits
 * (powers of two and the doubles just below them differ in their top
 * bits), the wanted pair straddling two digits. */
START_TEST(digit_selection_edges) {
  size_t n = 10001;
  double *v = malloc((n + 1) * sizeof *v);
  ck_assert_ptr_nonnull(v);
  for (size_t i = 0; i < n; i++) /* one value */
    v[i] = 3600;
  check(v, n, "all equal");
  for (size_t i = 0; i < n; i++) /* one digit, many values */
    v[i] = 1024.0 + (double)(next_u64() % 1000) * 0x1p-30;
  check(v, n, "one digit");
  for (size_t i = 0; i < n; i++) /* ties at every wanted rank */
    v[i] = i < n / 2 ? 0 : i < n - n / 50 ? 1 : 2;
  check(v, n, "ties");
  for (size_t i = 0; i < n; i++) { /* neighbours across digits */
    double p = ldexp(1, (int)(next_u64() % 8));
    v[i] = next_u64() % 2 ? p : nextafter(p, 0);
  }
  check(v, n, "digit boundaries");
  /* A digit's smallest value (low 48 bits 0) is counted, not moved: ranks
   * on both sides of the end of such a pile, at 0 (digit 0 holds the
   * subnormals too) and at 1 (then values just above 1, in its digit),
   * shuffled; and a wanted digit holding only its base value. */
  for (size_t i = 0; i < n; i++)
    v[i] = i < 5000    ? 0
           : i < 5002  ? 0x1p-1074 * (double)(i - 4999)
           : i <= 9500 ? 1
                       : 1 + (double)(i - 9500) * 0x1p-40;
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = (size_t)(next_u64() % (i + 1));
    double t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
  check(v, n, "piles at digit bases");
  for (size_t i = 0; i < n; i++)
    v[i] = i % 3 ? 2 : 1.5 + (double)(i % 7) * 0x1p-20;
  check(v, n, "only the base value in a wanted digit");
  /* The median pair in two digits: ranks 5000 and 5001 of 10002. */
  n = 10002;
  for (size_t i = 0; i < n; i++)
    v[i] = i <= 5000 ? nextafter(8.0, 0) : 8.0;
  check(v, n, "pair across digits");
  /* Largest significands at one exponent, 2048 per partial sum and
   * more (the in-memory sum adds significands per exponent first), and
   * the largest doubles: the same mean, bit for bit, as adding them one
   * at a time (a memory limit of one value). */
  static const double big[2] = {0x1.fffffffffffffp+0, DBL_MAX};
  for (int b = 0; b < 2; b++) {
    for (size_t i = 0; i < n; i++)
      v[i] = big[b];
    sim_stats mem, one;
    run(v, n, n + 1, 0, &mem);
    run(v, n, 1, 0, &one);
    ck_assert(same_bits(mem.mean, one.mean) && same_bits(mem.max, big[b]));
    ck_assert(fabs(mem.mean - big[b]) <= 2 * DBL_EPSILON * big[b]);
  }
  free(v);
}
END_TEST

/* Room reserved up front: the same statistics whether the values stay in
 * it, outgrow it or spill; capped at the limit. */
START_TEST(reserved_room) {
  double v[3000];
  for (size_t i = 0; i < 3000; i++)
    v[i] = (double)(next_u64() % 100000) / 7;
  sim_stats want, got;
  run(v, 3000, 5000, 0, &want);
  static const size_t room[] = {0, 1, 2999, 3000, 3001, 100000};
  for (size_t k = 0; k < sizeof room / sizeof room[0]; k++) {
    for (int spilled = 0; spilled < 2; spilled++) {
      pctl p;
      size_t limit = spilled ? 1000 : 5000;
      pctl_init(&p, limit);
      ck_assert_int_eq(pctl_reserve(&p, room[k]), 0);
      ck_assert_uint_le(p.cap, limit);
      for (size_t i = 0; i < 3000; i++)
        ck_assert_int_eq(pctl_add(&p, v[i]), 0);
      ck_assert_int_eq(pctl_finish(&p, &got), 0);
      ck_assert(spilled ? p.spill != NULL : p.spill == NULL);
      ck_assert(same_bits(got.p50, want.p50) && same_bits(got.p95, want.p95) &&
                same_bits(got.p99, want.p99) && same_bits(got.max, want.max) &&
                same_bits(got.mean, want.mean));
      pctl_free(&p);
    }
  }
}
END_TEST

START_TEST(errors_are_sticky) {
  pctl p;
  pctl_init(&p, 4);
  ck_assert_int_eq(pctl_add(&p, 1), 0);
  ck_assert_int_eq(pctl_add(&p, NAN), -1);
  ck_assert_ptr_nonnull(strstr(pctl_error(&p), "finite number >= 0"));
  ck_assert_int_eq(pctl_add(&p, 2), -1); /* the buffer has room: still -1 */
  ck_assert_int_eq(pctl_reserve(&p, 100), 0);
  ck_assert_int_eq(pctl_add(&p, 3), -1);
  sim_stats s;
  s.n = 99;
  ck_assert_int_eq(pctl_finish(&p, &s), -1);
  ck_assert_uint_eq(s.n, 0);
  pctl_free(&p);
  static const double bad[] = {-1,       -1e-300,   -0x1p-1074, -DBL_MAX,
                               INFINITY, -INFINITY, NAN,        -NAN};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    /* Without room (the slow path) and with room (pctl_add's inline
     * test on the bits). */
    for (int room = 0; room < 2; room++) {
      pctl_init(&p, 0);
      ck_assert_int_eq(pctl_reserve(&p, room ? 16 : 0), 0);
      ck_assert_int_eq(pctl_add(&p, bad[i]), -1);
      ck_assert_int_eq(pctl_finish(&p, &s), -1);
      pctl_free(&p);
    }
  }
  /* The edges accepted with room: the largest double, the smallest
   * subnormal, and -0 (kept as +0). */
  pctl_init(&p, 0);
  ck_assert_int_eq(pctl_reserve(&p, 16), 0);
  ck_assert_int_eq(pctl_add(&p, DBL_MAX), 0);
  ck_assert_int_eq(pctl_add(&p, 0x1p-1074), 0);
  ck_assert_int_eq(pctl_add(&p, -0.0), 0);
  ck_assert_int_eq(pctl_finish(&p, &s), 0);
  ck_assert(s.n == 3 && s.max == DBL_MAX && s.p50 == 0x1p-1074);
  pctl_free(&p);
  const double negzero[2] = {-0.0, -0.0};
  pctl_init(&p, 0);
  ck_assert_int_eq(pctl_reserve(&p, 16), 0);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(pctl_add(&p, negzero[i]), 0);
  ck_assert_int_eq(pctl_finish(&p, &s), 0);
  ck_assert(!signbit(s.p50) && !signbit(s.max) && !signbit(s.mean));
  pctl_free(&p);
  pctl_free(NULL);
}
END_TEST

/* The spill file goes to $TMPDIR (#17: tmpfile() ignored it): with
 * TMPDIR naming a missing directory the spill fails with a message, with
 * a real one it works and leaves nothing there. */
START_TEST(spill_uses_tmpdir) {
  const char *old = getenv("TMPDIR");
  char *keep = old ? strdup(old) : NULL;
  char missing[4096], dir[4096];
  snprintf(missing, sizeof missing, "%s/no-such-dir/x", tmpdir());
  setenv("TMPDIR", missing, 1);
  pctl p;
  pctl_init(&p, 2);
  int rc = 0;
  for (int i = 0; i < 10 && rc == 0; i++)
    rc = pctl_add(&p, i);
  ck_assert_int_eq(rc, -1);
  ck_assert_ptr_nonnull(strstr(pctl_error(&p), "temporary file"));
  pctl_free(&p);
  snprintf(dir, sizeof dir, "%s/spill", tmpdir());
  mkdir(dir, 0700);
  setenv("TMPDIR", dir, 1);
  pctl_init(&p, 2);
  for (int i = 0; i < 10; i++)
    ck_assert_int_eq(pctl_add(&p, i), 0);
  sim_stats st;
  ck_assert_int_eq(pctl_finish(&p, &st), 0);
  ck_assert(st.max == 9);
  pctl_free(&p);
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int entries = 0;
  for (struct dirent *e; (e = readdir(d));)
    entries += e->d_name[0] != '.';
  closedir(d);
  ck_assert_int_eq(entries, 0); /* unlinked at once */
  if (keep)
    setenv("TMPDIR", keep, 1);
  else
    unsetenv("TMPDIR");
  free(keep);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("pctl");
  TCase *tc = tcase_create("pctl");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, tiny_sizes);
  tcase_add_test(tc, random_sizes);
  tcase_add_test(tc, exact_mean);
  tcase_add_test(tc, digit_selection_edges);
  tcase_add_test(tc, reserved_room);
  tcase_add_test(tc, errors_are_sticky);
  tcase_add_test(tc, spill_uses_tmpdir);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(suite()); }
