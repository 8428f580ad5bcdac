/*
 * Exact mean, maximum and percentiles of a stream of non-negative values
 * (queue times, JCTs in seconds) in bounded memory.
 *
 * Values are kept in memory up to a limit; beyond it they go to an
 * anonymous temporary file (tmpfile()), and pctl_finish finds the order
 * statistics it needs there with a radix select: four sequential passes
 * over the file, at most six 65536-entry histograms in memory. The
 * results are the ones of sorting every value and calling GSL's
 * gsl_stats_quantile_from_sorted_data: linear interpolation between the
 * order statistics around index (n - 1) p), bit for bit, whichever path
 * is taken:
 *   - in memory the needed order statistics are selected in place
 *     (quickselect; from 4096 values on, only among the values whose top
 *     16 bits are those of a needed rank, found by one counting pass,
 *     less those equal to their digit's smallest value, such as 0 or 1,
 *     which are only counted) and combined as below;
 *   - spilled, the two order statistics around (n - 1) p are selected
 *     exactly and combined with GSL's own expression,
 *     (1 - delta) x[lhs] + delta x[lhs + 1]. (GSL converts lhs through
 *     int, which breaks beyond 2^31 values; here it is a size_t, which
 *     gives the same result below that and the right one above.)
 * The mean is the exact sum of the values (a 2176-bit fixed-point
 * accumulator: every non-negative double is an integer multiple of
 * 2^-1074), rounded once to a double and divided by n. It does not depend
 * on the order in which values were added; it may differ in the last bit
 * from a plain left-to-right sum.
 *
 * Not thread-safe; independent accumulators share nothing.
 */
#ifndef SCHEDSIM_PCTL_H
#define SCHEDSIM_PCTL_H

#include "engine.h" /* sim_stats */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Values kept in memory by default before spilling (8 MiB of doubles). */
#define PCTL_DEFAULT_MEM_LIMIT ((size_t)1 << 20)
/* 64-bit words of the exact-sum accumulator: bit positions 0..2097 of a
 * non-negative double scaled by 2^1074, plus 64 bits of carry room. */
#define PCTL_ACC_WORDS 34

/** An accumulator. Fields are private: use the functions below. */
typedef struct pctl {
  size_t limit;   /* values kept in memory before spilling */
  double *buf;    /* values in memory, or the spill write buffer */
  size_t nbuf, cap; /* cap is 0 once failed (pctl_add's fast path) */
  FILE *spill;    /* NULL until the first spill */
  size_t spilled; /* values written to it (added: spilled + nbuf) */
  double max;     /* and acc: of the values no longer in buf (spilled) */
  uint64_t acc[PCTL_ACC_WORDS];
  int failed;     /* an error was reported: every later call fails */
  char err[160];
} pctl;

/** Initialises an empty accumulator keeping up to mem_limit values in
 * memory (0 = PCTL_DEFAULT_MEM_LIMIT). Allocates nothing. */
void pctl_init(pctl *p, size_t mem_limit);

/** Room in memory for n values (at most the limit) when their count is
 * known up front: the buffer is not copied as it grows. 0, or -1 when out
 * of memory (nothing changes: it grows as values come). */
int pctl_reserve(pctl *p, size_t n);

/**
 * Adds a value. v must be finite and >= 0 (-0 counts as 0). 0, or -1 with
 * pctl_error set: a negative, NaN or infinite value, out of memory, or the
 * temporary file cannot be created or written. After an error every later
 * pctl_add and pctl_finish fails too: a statistic is never silently
 * computed over part of the values.
 */
int pctl_add_slow(pctl *p, double v);
/* Inline: several accumulators are fed per job. A value that goes into
 * room left in the buffer is only stored; the maximum and the exact sum
 * are taken when values leave the buffer (a spill, pctl_finish). A
 * finite value >= +0 is one whose bits, read as an unsigned integer, are
 * at most DBL_MAX's (a sign bit, an infinity or a NaN is above: one
 * compare). Everything else (a full buffer, -0 or a refused value, an
 * earlier error) takes pctl_add_slow. */
static inline int pctl_add(pctl *p, double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  if (p->nbuf < p->cap && b <= UINT64_C(0x7FEFFFFFFFFFFFFF)) {
    p->buf[p->nbuf++] = v;
    return 0;
  }
  return pctl_add_slow(p, v);
}

/**
 * Computes n, mean, p50, p95, p99 and max of every value added (all zero
 * when none was). 0, or -1 with pctl_error set (an earlier error, out of
 * memory, a read error on the temporary file); *out is then zeroed. Call
 * once; afterwards only pctl_error and pctl_free.
 */
int pctl_finish(pctl *p, sim_stats *out);

/** The last error ("" when none); owned by p. */
const char *pctl_error(const pctl *p);

/** Frees the memory and the temporary file. NULL is a no-op; p may then
 * be initialised again. */
void pctl_free(pctl *p);

#endif
