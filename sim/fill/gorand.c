/* Go-compatible math/rand (see gorand.h). */
#include "gorand.h"

#include <stdlib.h>
#include <string.h>

#define LEN GORAND_LEN
#define TAP 273
#define INT32MAX 2147483647

/* Park-Miller minimal standard step, as Go's seedrand (x in 1..2^31-2). */
static int32_t seedrand(int32_t x) {
  const int32_t A = 48271, Q = 44488, R = 3399;
  int32_t hi = x / Q, lo = x % Q;
  x = A * lo - R * hi;
  if (x < 0)
    x += INT32MAX;
  return x;
}

/* c = a * b mod (x^607 - x^334 - 1) over Z/2^64; t has room for 2 LEN. */
static void polymul(uint64_t *c, const uint64_t *a, const uint64_t *b,
                    uint64_t *t) {
  memset(t, 0, 2 * LEN * sizeof *t);
  for (int i = 0; i < LEN; i++) {
    uint64_t ai = a[i];
    if (!ai)
      continue;
    for (int j = 0; j < LEN; j++)
      t[i + j] += ai * b[j];
  }
  /* x^d = x^(d-607) (x^334 + 1) = x^(d-273) + x^(d-607), from the top. */
  for (int d = 2 * LEN - 2; d >= LEN; d--) {
    t[d - TAP] += t[d];
    t[d - LEN] += t[d];
    t[d] = 0;
  }
  memcpy(c, t, LEN * sizeof *c);
}

/* p = x * p mod the polynomial. */
static void polyshift(uint64_t *p) {
  uint64_t top = p[LEN - 1];
  memmove(p + 1, p, (LEN - 1) * sizeof *p);
  p[0] = top;            /* x^607 = ... + 1 */
  p[LEN - TAP] += top;   /* ... + x^334 */
}

int gorand_cook(uint64_t cooked[GORAND_LEN]) {
  /* Initial state: srand(1) of Go's generator program (gen_cooked.go),
   * which packs three seedrand steps as x<<20 ^ x<<10 ^ x. */
  uint64_t init[LEN];
  int32_t x = 1;
  for (int i = -20; i < LEN; i++) {
    x = seedrand(x);
    if (i >= 0) {
      uint64_t u = (uint64_t)(int64_t)x << 20;
      x = seedrand(x);
      u ^= (uint64_t)(int64_t)x << 10;
      x = seedrand(x);
      u ^= (uint64_t)(int64_t)x;
      init[i] = u;
    }
  }
  /* Step k (from 1) writes position p_k = (334 - k) mod 607 with
   * z_k = z_(k-607) + z_(k-273); the initial array holds z_k for
   * k = -606..0 at p_k. With z0[i] = z_(i-606) and x^m = sum a_i x^i mod
   * the characteristic polynomial, z_(m-606) = sum a_i z0[i]. */
  uint64_t *z0 = malloc(LEN * sizeof *z0);
  uint64_t *pw = malloc(LEN * sizeof *pw), *base = malloc(LEN * sizeof *base);
  uint64_t *tmp = malloc(2 * LEN * sizeof *tmp);
  if (!z0 || !pw || !base || !tmp) {
    free(z0);
    free(pw);
    free(base);
    free(tmp);
    return -1;
  }
  for (int i = 0; i < LEN; i++)
    z0[i] = init[(940 - i) % LEN];
  const uint64_t N = UINT64_C(7800000000000); /* 7.8e12 steps */
  /* pw = x^N by square-and-multiply (multiplying by x is a shift). */
  memset(pw, 0, LEN * sizeof *pw);
  pw[0] = 1;
  for (int bit = 63; bit >= 0; bit--) {
    polymul(pw, pw, pw, tmp);
    if ((N >> bit) & 1)
      polyshift(pw);
  }
  /* z_(N-606+i) uses x^(N+i): i = 0..606. Position of step k = N-606+i. */
  for (int i = 0; i < LEN; i++) {
    uint64_t v = 0;
    for (int j = 0; j < LEN; j++)
      v += pw[j] * z0[j];
    uint64_t k = N - 606 + (uint64_t)i;
    int pos = (int)((334 + (uint64_t)LEN * 20000000000ull - k) % LEN);
    cooked[pos] = v;
    polyshift(pw);
  }
  (void)base;
  free(z0);
  free(pw);
  free(base);
  free(tmp);
  return 0;
}

void gorand_seed(gorand *r, const uint64_t cooked[GORAND_LEN], int64_t seed) {
  r->tap = 0;
  r->feed = LEN - TAP;
  seed %= INT32MAX;
  if (seed < 0)
    seed += INT32MAX;
  if (seed == 0)
    seed = 89482311;
  int32_t x = (int32_t)seed;
  for (int i = -20; i < LEN; i++) {
    x = seedrand(x);
    if (i >= 0) {
      uint64_t u = (uint64_t)(int64_t)x << 40;
      x = seedrand(x);
      u ^= (uint64_t)(int64_t)x << 20;
      x = seedrand(x);
      u ^= (uint64_t)(int64_t)x;
      u ^= cooked[i];
      r->vec[i] = u;
    }
  }
}

uint64_t gorand_uint64(gorand *r) {
  if (--r->tap < 0)
    r->tap += LEN;
  if (--r->feed < 0)
    r->feed += LEN;
  uint64_t x = r->vec[r->feed] + r->vec[r->tap];
  r->vec[r->feed] = x;
  return x;
}

int64_t gorand_int63(gorand *r) {
  return (int64_t)(gorand_uint64(r) & ~(UINT64_C(1) << 63));
}

static int32_t int31(gorand *r) { return (int32_t)(gorand_int63(r) >> 32); }

/* rand.Int31n: a mask for powers of two, else rejection above the largest
 * multiple of n. */
static int32_t int31n(gorand *r, int32_t n) {
  if ((n & (n - 1)) == 0)
    return int31(r) & (n - 1);
  int32_t max = (int32_t)(INT32MAX - (int32_t)((UINT32_C(1) << 31) % (uint32_t)n));
  int32_t v = int31(r);
  while (v > max)
    v = int31(r);
  return v % n;
}

static int64_t int63n(gorand *r, int64_t n) {
  if ((n & (n - 1)) == 0)
    return gorand_int63(r) & (n - 1);
  int64_t max = (int64_t)((UINT64_C(1) << 63) - 1 -
                          (UINT64_C(1) << 63) % (uint64_t)n);
  int64_t v = gorand_int63(r);
  while (v > max)
    v = gorand_int63(r);
  return v % n;
}

int64_t gorand_intn(gorand *r, int64_t n) {
  if (n <= INT32MAX)
    return int31n(r, (int32_t)n);
  return int63n(r, n);
}

/* The unexported int31n that Shuffle uses: Lemire's multiply-shift with a
 * rejection threshold, on Uint32 = Int63 >> 31. */
static int32_t int31n_lemire(gorand *r, int32_t n) {
  uint32_t v = (uint32_t)(gorand_int63(r) >> 31);
  uint64_t prod = (uint64_t)v * (uint64_t)n;
  uint32_t low = (uint32_t)prod;
  if (low < (uint32_t)n) {
    uint32_t thresh = (uint32_t)(-(uint32_t)n) % (uint32_t)n;
    while (low < thresh) {
      v = (uint32_t)(gorand_int63(r) >> 31);
      prod = (uint64_t)v * (uint64_t)n;
      low = (uint32_t)prod;
    }
  }
  return (int32_t)(prod >> 32);
}

void gorand_shuffle_u32(gorand *r, uint32_t *a, size_t n) {
  for (size_t i = n; i-- > 1;) {
    size_t j = (size_t)int31n_lemire(r, (int32_t)(i + 1));
    uint32_t t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

void gorand_perm(gorand *r, int *out, int n) {
  for (int i = 0; i < n; i++) {
    int j = (int)gorand_intn(r, (int64_t)i + 1);
    out[i] = out[j];
    out[j] = i;
  }
}
