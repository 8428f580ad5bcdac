/*
 * Exact percentiles in bounded memory (pctl.h).
 *
 * Order: a non-negative double (sign bit clear) orders like its IEEE bit
 * pattern read as an unsigned integer, so sorting and selecting work on
 * uint64 digits. -0 is stored as +0 and NaN, negative values and
 * infinities are refused, so equal values have equal bits and the sorted
 * sequence (hence every statistic) is unique.
 *
 * Spilled selection: the needed ranks (lhs and lhs + 1 of each of the three
 * percentiles, at most six) are found together, 16 bits at a time from the
 * top: pass d counts, for every distinct prefix of 16 d bits still being
 * refined, how many values with that prefix have each next digit, and each
 * rank moves into the digit holding it. Four passes, O(n) time each.
 */
#include "pctl.h"
#include "fileout.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Values per read or write of the temporary file (64 KiB). */
#define IO_VALUES 8192
#define DIGITS 65536
/* Top 16-bit digits a stored value can have: its sign bit is 0 (half the
 * counts to clear for select_gather: ~80,000 instructions a finish). */
#define TOP_DIGITS 32768

#if defined(__GNUC__)
static void fail(pctl *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#endif

static void fail(pctl *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err, sizeof p->err, fmt, ap);
  va_end(ap);
  p->failed = 1;
  p->cap = 0; /* pctl_add's fast path is closed: every add fails */
}

void pctl_init(pctl *p, size_t mem_limit) {
  memset(p, 0, sizeof *p);
  p->limit = mem_limit ? mem_limit : PCTL_DEFAULT_MEM_LIMIT;
}

void pctl_free(pctl *p) {
  if (!p)
    return;
  free(p->buf);
  if (p->spill)
    fclose(p->spill);
  size_t limit = p->limit;
  memset(p, 0, sizeof *p);
  p->limit = limit;
}

const char *pctl_error(const pctl *p) { return p->err; }

static uint64_t bits_of(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

static double double_of(uint64_t b) {
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

/* ------------------------------------------------------------ exact sum */

/* Adds w at word i of the accumulator, carrying upwards. The accumulator
 * has 64 bits of room above the largest value, so n < 2^64 additions never
 * carry out of it. */
static void acc_add_word(uint64_t *acc, size_t i, uint64_t w) {
  while (w != 0 && i < PCTL_ACC_WORDS) {
    uint64_t s = acc[i] + w;
    w = s < w; /* carry */
    acc[i] = s;
    i++;
  }
}

/* Adds m x 2^s (scaled by 2^1074 as the accumulator) for any 64-bit m. */
static void acc_add_shifted(uint64_t *acc, uint64_t m, unsigned s) {
  size_t w = s / 64;
  unsigned sh = s % 64;
  acc_add_word(acc, w, m << sh);
  if (sh != 0)
    acc_add_word(acc, w + 1, m >> (64 - sh));
}

/* A non-negative finite double is M x 2^(s - 1074) with M < 2^53 and
 * s = max(exponent field, 1) - 1: M shifted left by s bits. */
static void acc_add(uint64_t *acc, uint64_t b) {
  uint64_t e = b >> 52, m = b & ((UINT64_C(1) << 52) - 1);
  if (e != 0)
    m |= UINT64_C(1) << 52;
  acc_add_shifted(acc, m, e != 0 ? (unsigned)e - 1 : 0);
}

/* Index of the highest set bit of x != 0. */
static unsigned top_bit(uint64_t x) {
  unsigned r = 0;
  while (x >>= 1)
    r++;
  return r;
}

/* The accumulated sum divided by n: the sum is rounded once to 64
 * significant bits with a sticky bit, once to a double (round to nearest
 * even: exactly the correctly rounded sum), then divided by n and scaled
 * by a power of two (exact unless the mean is subnormal). */
static double acc_mean(const uint64_t *acc, size_t n) {
  int t = PCTL_ACC_WORDS - 1;
  while (t >= 0 && acc[t] == 0)
    t--;
  if (t < 0)
    return 0;
  unsigned bp = top_bit(acc[t]);
  uint64_t top;
  int exp2; /* sum = top x 2^exp2 (before rounding top to a double) */
  if (t == 0) {
    top = acc[0];
    exp2 = -1074;
  } else {
    int sticky = 0;
    if (bp == 63) {
      top = acc[t];
      sticky = acc[t - 1] != 0;
    } else {
      top = acc[t] << (63 - bp) | acc[t - 1] >> (bp + 1);
      sticky = (acc[t - 1] & ((UINT64_C(1) << (bp + 1)) - 1)) != 0;
    }
    for (int i = t - 2; i >= 0 && !sticky; i--)
      sticky = acc[i] != 0;
    top |= (uint64_t)sticky;
    exp2 = 64 * t + (int)bp - 63 - 1074;
  }
  return ldexp((double)top / (double)n, exp2);
}

/* ---------------------------------------------------------------- adding */

/* Exponent fields of a double, and how many significands (< 2^53) one
 * 64-bit word per exponent can sum without overflow (twice as many stored
 * 52 bits, < 2^52). */
#define EXPONENTS 2048
#define FOLD_CHUNK 2048

/* esum[e] = the values counted in h (by their top 16 bits) of exponent e,
 * for e = 0 .. top. */
static void count_exponents(const uint32_t *h, unsigned top, size_t *esum) {
  for (unsigned e = 0; e <= top; e++) {
    size_t c = 0;
    for (unsigned d = 0; d < 16; d++)
      c += h[e << 4 | d];
    esum[e] = c;
  }
}

/* The values in buf into the maximum and the exact sum (before a spill,
 * and at pctl_finish). Many values at once are summed per exponent first
 * (their significands, up to FOLD_CHUNK into one word: exact), and those
 * partial sums go into the accumulator once per chunk, for the exponents
 * up to the maximum's (no value has a larger one). With h, the values
 * are also counted by their top 16 bits into it (select_gather's first
 * pass, in the same one), and only their stored 52 bits are summed per
 * exponent: the implicit bits (2^52 for each value of exponent e >= 1)
 * are added once at the end from h, whose 16 counts from e << 4 on are
 * the values of exponent e (the same exact sum); the chunks are then
 * twice as long, so the partial sums are swept into the accumulator half
 * as often (each sweep visits every exponent up to the maximum's: ~1,040
 * for times of days in seconds, ~2 instructions per value at 2048). With
 * h, esum[e] is then the count of values of exponent e, for e up to the
 * maximum's (select_gather's coarse steps). */
static void fold(pctl *p, uint32_t *h, size_t *esum) {
  uint64_t mx = bits_of(p->max);
  const double *v = p->buf;
  size_t n = p->nbuf;
  if (n < 4 * FOLD_CHUNK / 8) {
    for (size_t i = 0; i < n; i++) {
      uint64_t b = bits_of(v[i]);
      mx = b > mx ? b : mx; /* non-negative doubles order as their bits */
      acc_add(p->acc, b);
      if (h)
        h[b >> 48]++;
    }
    p->max = double_of(mx);
    if (h)
      count_exponents(h, (unsigned)(mx >> 52), esum);
    return;
  }
  uint64_t part[EXPONENTS];
  memset(part, 0, sizeof part);
  const size_t chunk = h ? 2 * FOLD_CHUNK : FOLD_CHUNK;
  for (size_t i0 = 0; i0 < n; i0 += chunk) {
    size_t end = n - i0 < chunk ? n : i0 + chunk;
    if (h) {
      /* Unrolled (GCC does not by itself at -O3): ~2 instructions less
       * per value of the loop's own. */
#pragma GCC unroll 4
      for (size_t i = i0; i < end; i++) {
        uint64_t b = bits_of(v[i]);
        mx = b > mx ? b : mx;
        part[b >> 52] += b & ((UINT64_C(1) << 52) - 1);
        h[b >> 48]++;
      }
    } else {
      for (size_t i = i0; i < end; i++) {
        uint64_t b = bits_of(v[i]);
        mx = b > mx ? b : mx;
        uint64_t e = b >> 52, m = b & ((UINT64_C(1) << 52) - 1);
        part[e] += e != 0 ? m | UINT64_C(1) << 52 : m;
      }
    }
    for (unsigned e = 0; e <= (unsigned)(mx >> 52); e++)
      if (part[e] != 0) {
        acc_add_shifted(p->acc, part[e], e != 0 ? e - 1 : 0);
        part[e] = 0;
      }
  }
  if (h) {
    count_exponents(h, (unsigned)(mx >> 52), esum);
    for (unsigned e = 1; e <= (unsigned)(mx >> 52); e++)
      if (esum[e] != 0)
        acc_add_shifted(p->acc, esum[e], e - 1 + 52);
  }
  p->max = double_of(mx);
}

/* Writes the buffer to the temporary file (created on first use). */
static int spill(pctl *p) {
  if (!p->spill) {
    errno = 0;
    p->spill = fileout_tmpfile(); /* in $TMPDIR */
    if (!p->spill) {
      fail(p, "cannot create a temporary file for percentiles: %s",
           errno ? strerror(errno) : "unknown error");
      return -1;
    }
  }
  fold(p, NULL, NULL);
  /* The buffer holds doubles; their bytes are their bit patterns. */
  if (fwrite(p->buf, sizeof *p->buf, p->nbuf, p->spill) != p->nbuf) {
    fail(p, "cannot write the percentile temporary file: %s",
         strerror(errno));
    return -1;
  }
  p->spilled += p->nbuf;
  p->nbuf = 0;
  return 0;
}

int pctl_reserve(pctl *p, size_t n) {
  if (n > p->limit)
    n = p->limit;
  if (p->failed || n <= p->cap)
    return 0;
  double *nb = realloc(p->buf, n * sizeof *nb);
  if (!nb)
    return -1;
  p->buf = nb;
  p->cap = n;
  return 0;
}

int pctl_add_slow(pctl *p, double v) {
  if (p->failed)
    return -1;
  if (!(v >= 0) || isinf(v)) {
    fail(p, "value %g is not a finite number >= 0", v);
    return -1;
  }
  if (v == 0)
    v = 0; /* -0 -> +0 */
  if (p->nbuf == p->cap) {
    if (p->nbuf >= p->limit) {
      if (spill(p) != 0)
        return -1;
    } else {
      size_t cap = p->cap ? 2 * p->cap : 1024;
      if (cap > p->limit)
        cap = p->limit;
      double *nb = realloc(p->buf, cap * sizeof *nb);
      if (!nb) {
        fail(p, "out of memory");
        return -1;
      }
      p->buf = nb;
      p->cap = cap;
    }
  }
  p->buf[p->nbuf++] = v;
  return 0;
}

/* -------------------------------------------------------------- in memory */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v (non-negative, no -0): LSD radix on 16-bit digits of the bit
 * patterns when a scratch buffer can be had, else qsort. Either gives the
 * one sorted order. */
static void sort_values(double *v, size_t n) {
  uint64_t *a = NULL, *b = NULL;
  size_t *count = NULL;
  if (n >= 4096) {
    a = malloc(n * sizeof *a);
    b = malloc(n * sizeof *b);
    count = malloc(DIGITS * sizeof *count);
  }
  if (!a || !b || !count) {
    free(a);
    free(b);
    free(count);
    qsort(v, n, sizeof *v, cmp_double);
    return;
  }
  for (size_t i = 0; i < n; i++)
    a[i] = bits_of(v[i]);
  for (int shift = 0; shift < 64; shift += 16) {
    memset(count, 0, DIGITS * sizeof *count);
    for (size_t i = 0; i < n; i++)
      count[(a[i] >> shift) & 0xFFFF]++;
    size_t sum = 0;
    for (size_t d = 0; d < DIGITS; d++) {
      size_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++)
      b[count[(a[i] >> shift) & 0xFFFF]++] = a[i];
    uint64_t *tmp = a;
    a = b;
    b = tmp;
  }
  for (size_t i = 0; i < n; i++)
    v[i] = double_of(a[i]);
  free(a);
  free(b);
  free(count);
}

/* ---------------------------------------------------------------- spilled */

static const double quantiles[3] = {0.50, 0.95, 0.99};

/* The value at each of the nr ranks (ascending, distinct, < p->spilled) among
 * every value in the temporary file. 0 or -1. */
static int select_ranks(pctl *p, const size_t *rank, size_t nr,
                        uint64_t *value) {
  uint64_t prefix[6];
  size_t k[6]; /* rank within the values sharing prefix */
  size_t *hist[6] = {NULL};
  uint64_t *io = malloc(IO_VALUES * sizeof *io);
  int rc = -1;
  if (!io) {
    fail(p, "out of memory");
    goto out;
  }
  for (size_t r = 0; r < nr; r++) {
    prefix[r] = 0;
    k[r] = rank[r];
  }
  for (int pass = 0; pass < 4; pass++) {
    unsigned shift = 48 - 16 * (unsigned)pass;
    /* Distinct prefixes; group[r] is the histogram of rank r. */
    size_t ng = 0, group[6];
    uint64_t gprefix[6];
    for (size_t r = 0; r < nr; r++) {
      size_t g = 0;
      while (g < ng && gprefix[g] != prefix[r])
        g++;
      if (g == ng) {
        gprefix[ng] = prefix[r];
        if (!hist[ng] && !(hist[ng] = malloc(DIGITS * sizeof *hist[ng]))) {
          fail(p, "out of memory");
          goto out;
        }
        memset(hist[ng], 0, DIGITS * sizeof *hist[ng]);
        ng++;
      }
      group[r] = g;
    }
    if (fseek(p->spill, 0, SEEK_SET) != 0) {
      fail(p, "cannot rewind the percentile temporary file: %s",
           strerror(errno));
      goto out;
    }
    size_t seen = 0, got;
    while ((got = fread(io, sizeof *io, IO_VALUES, p->spill)) > 0) {
      seen += got;
      for (size_t i = 0; i < got; i++) {
        uint64_t x = io[i];
        uint64_t hi = pass == 0 ? 0 : x >> (shift + 16);
        for (size_t g = 0; g < ng; g++)
          if (gprefix[g] == hi) {
            hist[g][(x >> shift) & 0xFFFF]++;
            break;
          }
      }
    }
    if (ferror(p->spill) || seen != p->spilled) {
      fail(p,
           "cannot read the percentile temporary file back (%zu of %zu "
           "values): %s",
           seen, p->spilled, ferror(p->spill) ? strerror(errno) : "short file");
      goto out;
    }
    for (size_t r = 0; r < nr; r++) {
      const size_t *h = hist[group[r]];
      size_t below = 0, d = 0;
      while (d < DIGITS - 1 && below + h[d] <= k[r])
        below += h[d++];
      k[r] -= below;
      prefix[r] = prefix[r] << 16 | d;
    }
  }
  for (size_t r = 0; r < nr; r++)
    value[r] = prefix[r];
  rc = 0;
out:
  for (int g = 0; g < 6; g++)
    free(hist[g]);
  free(io);
  return rc;
}

/* GSL's gsl_stats_quantile_from_sorted_data, given the two order
 * statistics it reads (below and above index (n - 1) f). */
static double gsl_interp(size_t n, double f, double lo, double hi) {
  const double index = f * (double)(n - 1);
  const size_t lhs = (size_t)index;
  const double delta = index - (double)lhs;
  if (lhs == n - 1)
    return lo;
  return (1 - delta) * lo + delta * hi;
}

/* The ranks GSL's quantile reads for p50, p95 and p99 of n values (lhs
 * and lhs + 1 of each, below n), ascending and distinct, into want[6].
 * Returns their count. */
static size_t wanted_ranks(size_t n, size_t *want) {
  size_t nw = 0;
  for (int q = 0; q < 3; q++) {
    size_t lhs = (size_t)(quantiles[q] * (double)(n - 1));
    for (size_t r = lhs; r <= lhs + 1 && r < n; r++) {
      size_t i = 0;
      while (i < nw && want[i] < r)
        i++;
      if (i < nw && want[i] == r)
        continue;
      memmove(want + i + 1, want + i, (nw - i) * sizeof *want);
      want[i] = r;
      nw++;
    }
  }
  return nw;
}

/* p50, p95 and p99 from the values at the wanted ranks. */
static void quantiles_from(size_t n, const size_t *want, size_t nw,
                           const double *at, sim_stats *out) {
  double *pq[3] = {&out->p50, &out->p95, &out->p99};
  for (int q = 0; q < 3; q++) {
    size_t lhs = (size_t)(quantiles[q] * (double)(n - 1));
    double lo = 0, hi = 0;
    for (size_t i = 0; i < nw; i++) {
      if (want[i] == lhs)
        lo = at[i];
      if (want[i] == lhs + 1)
        hi = at[i];
    }
    *pq[q] = gsl_interp(n, quantiles[q], lo, hi);
  }
}

static int finish_spilled(pctl *p, sim_stats *out) {
  if (p->nbuf > 0 && spill(p) != 0)
    return -1;
  if (fflush(p->spill) != 0) {
    fail(p, "cannot write the percentile temporary file: %s",
         strerror(errno));
    return -1;
  }
  free(p->buf); /* the write buffer is no longer needed */
  p->buf = NULL;
  p->cap = 0;
  size_t want[6];
  size_t nw = wanted_ranks(p->spilled, want);
  uint64_t got[6];
  if (select_ranks(p, want, nw, got) != 0)
    return -1;
  double at[6];
  for (size_t i = 0; i < nw; i++)
    at[i] = double_of(got[i]);
  quantiles_from(p->spilled, want, nw, at, out);
  return 0;
}

/* Puts the value of rank k (0-based, ascending) of v[lo .. hi) at v[k],
 * values <= it before and >= it after: quickselect with median-of-three
 * pivots and three-way partitions (queue times repeat: zeros above all).
 * Expected O(hi - lo); after 64 rounds (an input that defeats the pivots)
 * the rest of the range is sorted instead, so it stays O(n log n) at
 * worst. */
static void select_rank(double *v, size_t lo, size_t hi, size_t k) {
  for (int round = 0; hi - lo > 1; round++) {
    if (round == 64) {
      sort_values(v + lo, hi - lo);
      return;
    }
    double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
    double piv = a < b ? (b < c ? b : (a < c ? c : a))
                       : (a < c ? a : (b < c ? c : b));
    size_t lt = lo, i = lo, gt = hi; /* < piv | == piv | unseen | > piv */
    while (i < gt) {
      double x = v[i];
      if (x < piv) {
        v[i++] = v[lt];
        v[lt++] = x;
      } else if (x > piv) {
        v[i] = v[--gt];
        v[gt] = x;
      } else {
        i++;
      }
    }
    if (k < lt)
      hi = lt;
    else if (k >= gt)
      lo = gt;
    else
      return;
  }
}

/* The values of ranks rank[0 .. nr) (ascending, distinct, < n) of
 * v[0 .. n) into at, by selection in place, one after the other (each
 * one's range starts past the one before: quickselect leaves values >= it
 * after it). */
static void select_chain(double *v, size_t n, const size_t *rank, size_t nr,
                         double *at) {
  size_t lo = 0;
  for (size_t i = 0; i < nr; i++) {
    select_rank(v, lo, n, rank[i]);
    at[i] = v[rank[i]];
    lo = rank[i] + 1;
  }
}

/* Below this many values the chain of quickselects runs on all of them. */
#define GATHER_MIN 4096
#define GATHER_MARK UINT32_C(0x80000000)

/* The same over many values, cheaper: h counts the values by their top 16
 * bits (sign, exponent and 4 mantissa bits: 1/16 of an octave per digit;
 * counted by fold), which names the digit holding each wanted rank and
 * how many values lie below it; a second pass moves the values of those
 * digits to the front of v, and the chain of quickselects runs on them
 * with the ranks shifted accordingly (values of a lower digit are smaller
 * than any of a higher one). A wanted digit's smallest possible value
 * (its low 48 bits 0: 0, 1, a power of two...) is only counted, not
 * moved: it is where values pile up (queue times of 0, slowdowns of 1:
 * half of a replay's values, which the quickselects then partitioned
 * again), and the ranks among a digit's first `base` values are that
 * value. 0, or -1 when the wanted digits hold more than 7/8 of the values
 * (the caller selects on all values). n < GATHER_MARK; h is changed. */
static int select_gather(double *v, size_t n, const size_t *rank, size_t nr,
                         double *at, uint32_t *h, const size_t *esum) {
  /* The digit of each rank, its rank within the digit, and the digits'
   * counts (ascending). The exponent first (esum: 16 digits a step; the
   * walk digit by digit cost ~40,000 instructions per rank), then the
   * digit within it. */
  size_t local[6], below = 0, gathered = 0, total[6], below_x = 0;
  uint32_t d = 0, x = 0, dig[6];
  size_t nd = 0, of[6];
  for (size_t r = 0; r < nr; r++) {
    while (below_x + esum[x] <= rank[r]) /* rank[r] < n */
      below_x += esum[x++];
    if (d < x << 4) { /* else d is in exponent x, past the rank before */
      d = x << 4;
      below = below_x;
    }
    while (below + (h[d] & ~GATHER_MARK) <= rank[r])
      below += h[d++] & ~GATHER_MARK;
    if (nd == 0 || dig[nd - 1] != d) { /* a new wanted digit */
      dig[nd] = d;
      total[nd++] = h[d];
      gathered += h[d];
      h[d] |= GATHER_MARK;
    }
    of[r] = nd - 1;
    local[r] = rank[r] - below;
  }
  if (gathered > n - n / 8) /* mostly one digit (zeros): no gain in moving */
    return -1;
  /* A wanted digit's base value leaves its count in h (minus one each). */
  const uint64_t low = (UINT64_C(1) << 48) - 1;
  size_t w = 0;
#pragma GCC unroll 4 /* as fold's loop */
  for (size_t i = 0; i < n; i++) {
    uint64_t b;
    memcpy(&b, &v[i], sizeof b); /* its bits, read as such: no move */
    uint32_t c = h[b >> 48];
    if (c & GATHER_MARK) {
      if (b & low) {
        v[i] = v[w];
        v[w++] = double_of(b);
      } else {
        h[b >> 48] = c - 1;
      }
    }
  }
  /* Ranks among the moved values, in order: a digit's moved values follow
   * those of the lower wanted digits. */
  size_t base[6], first[6], sub[6] = {0}, nsub = 0, moved = 0;
  for (size_t k = 0; k < nd; k++) {
    size_t left = h[dig[k]] & ~GATHER_MARK;
    base[k] = total[k] - left;
    first[k] = moved;
    moved += left;
  }
  double got[6];
  for (size_t r = 0; r < nr; r++)
    if (local[r] >= base[of[r]])
      sub[nsub++] = first[of[r]] + local[r] - base[of[r]];
  select_chain(v, w, sub, nsub, got);
  for (size_t r = 0, g = 0; r < nr; r++)
    at[r] = local[r] < base[of[r]] ? double_of((uint64_t)dig[of[r]] << 48)
                                   : got[g++];
  return 0;
}

/* In memory: the wanted order statistics by selection (a full sort took
 * 4% of a million-job replay). Same values as sorting, so the same
 * quantiles. */
static void finish_in_memory(pctl *p, sim_stats *out) {
  size_t n = p->nbuf; /* nothing spilled */
  uint32_t *h = n >= GATHER_MIN && n < GATHER_MARK
                    ? calloc(TOP_DIGITS, sizeof *h) /* NULL: plain selection */
                    : NULL;
  size_t esum[EXPONENTS];
  fold(p, h, esum);
  size_t want[6];
  size_t nw = wanted_ranks(n, want);
  double at[6];
  if (!h || select_gather(p->buf, n, want, nw, at, h, esum) != 0)
    select_chain(p->buf, n, want, nw, at);
  free(h);
  quantiles_from(n, want, nw, at, out);
}

int pctl_finish(pctl *p, sim_stats *out) {
  memset(out, 0, sizeof *out);
  if (p->failed)
    return -1;
  size_t n = p->spilled + p->nbuf;
  if (n == 0)
    return 0;
  sim_stats s;
  memset(&s, 0, sizeof s);
  s.n = n;
  if (p->spill) {
    if (finish_spilled(p, &s) != 0) /* folds the rest as it spills it */
      return -1;
  } else {
    finish_in_memory(p, &s); /* folds the buffer */
  }
  s.max = p->max;
  s.mean = acc_mean(p->acc, n);
  *out = s;
  return 0;
}
