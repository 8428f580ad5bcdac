/*
 * bench_memlat: what a dependent load costs on this machine, by working-set
 * size (issue #19, session 34). A random cyclic permutation of 64-byte
 * lines is chased (each load's address is the previous load's value, so
 * nothing overlaps): the figure is nanoseconds per load, the latency a
 * replay pays for every miss it cannot hide. Where the figure jumps is the
 * cache this process really gets (on a shared VM, less than the CPU's
 * nominal last level). bench/README.md, "Session 34", reads the results
 * against bench_scale's 10k and 100k cells.
 *
 *   bench_memlat [--max-mib N]   (sizes 256 KiB .. N MiB, default 256)
 *
 * Then two more tables (session 35):
 * - chains: the same chase over 64 MiB with k independent chains walked
 *   in turn, k = 1 .. 32: ns per load falls while the core keeps k misses
 *   in flight, and stops falling at the number of misses it can have
 *   outstanding (the line-fill buffers): what hints can overlap at most.
 * - faults: microseconds per 4 KiB page to first-touch 64 MiB of fresh
 *   anonymous memory, faulted page by page, populated in advance
 *   (MAP_POPULATE), and in 2 MiB pages (madvise(MADV_HUGEPAGE); the first
 *   pass may pay for the host backing the memory): what a replay's first
 *   touches of its growing arrays cost.
 *
 * Deterministic permutation (a fixed xorshift seed); the times are wall
 * clock (CLOCK_MONOTONIC; the faults' CPU time, CLOCK_PROCESS_CPUTIME_ID)
 * and vary with the host's load.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

#define LINE_WORDS 8 /* 64 bytes of size_t */

/* n lines (n >= min) linked into one random cycle: *a the lines (each
 * line's first word the index of the next line's), *perm the cycle's
 * order. 0, or -1 when out of memory (nothing allocated). */
static int make_cycle(size_t n, size_t min, size_t **a_out, size_t **perm_out) {
  size_t *a = malloc(n * LINE_WORDS * sizeof *a);
  size_t *perm = malloc(n * sizeof *perm);
  if (!a || !perm || n < min) {
    free(a);
    free(perm);
    return -1;
  }
  memset(a, 0, n * LINE_WORDS * sizeof *a);
  for (size_t i = 0; i < n; i++)
    perm[i] = i;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
    size_t j = (size_t)(xorshift(&x) % (i + 1));
    size_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (size_t i = 0; i < n; i++) /* one cycle through every line */
    a[perm[i] * LINE_WORDS] = perm[(i + 1) % n] * LINE_WORDS;
  *a_out = a;
  *perm_out = perm;
  return 0;
}

/* ns per dependent load over `bytes` of memory, or -1 when out of memory. */
static double chase(size_t bytes, size_t loads) {
  size_t n = bytes / (LINE_WORDS * sizeof(size_t));
  size_t *a, *perm;
  if (make_cycle(n, 2, &a, &perm))
    return -1;
  size_t p = 0;
  for (size_t i = 0; i < n; i++) /* touch every line once first */
    p = a[p];
  double t0 = now_s();
  for (size_t i = 0; i < loads; i++)
    p = a[p];
  double t1 = now_s();
  volatile size_t sink = p; /* the chase is not optimised away */
  (void)sink;
  free(a);
  free(perm);
  return (t1 - t0) / (double)loads * 1e9;
}

/* ns per load over 64 MiB walked as k independent chains in turn (the
 * same cycle entered at k evenly spaced points), or -1 when out of
 * memory. */
#define CHAINS_MAX 32
static double chains(size_t bytes, int k, size_t loads) {
  size_t n = bytes / (LINE_WORDS * sizeof(size_t));
  size_t *a, *perm;
  if (make_cycle(n, (size_t)k * 2, &a, &perm))
    return -1;
  size_t p[CHAINS_MAX];
  for (int c = 0; c < k; c++)
    p[c] = perm[n / (size_t)k * (size_t)c] * LINE_WORDS;
  size_t rounds = loads / (size_t)k;
  double t0 = now_s();
  for (size_t i = 0; i < rounds; i++)
    for (int c = 0; c < k; c++)
      p[c] = a[p[c]];
  double t1 = now_s();
  size_t sum = 0;
  for (int c = 0; c < k; c++)
    sum += p[c];
  volatile size_t sink = sum;
  (void)sink;
  free(a);
  free(perm);
  return (t1 - t0) / (double)(rounds * (size_t)k) * 1e9;
}

static double cpu_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU microseconds per 4 KiB page to map and first-touch `bytes` of
 * anonymous memory: mode 0 page by page, 1 MAP_POPULATE, 2 in 2 MiB
 * pages where the kernel gives them. -1 when the mapping fails. */
static double faults(size_t bytes, int mode) {
  const size_t huge = (size_t)2 << 20;
  size_t len = bytes + (mode == 2 ? huge : 0);
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (mode == 1 ? MAP_POPULATE : 0);
  double t0 = cpu_now_s();
  char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (raw == MAP_FAILED)
    return -1;
  char *a = raw;
  if (mode == 2) {
    a = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
#ifdef MADV_HUGEPAGE
    (void)madvise(a, bytes, MADV_HUGEPAGE);
#endif
  }
  for (size_t i = 0; i < bytes; i += 4096)
    a[i] = 1;
  double t1 = cpu_now_s();
  munmap(raw, len);
  return (t1 - t0) / (double)(bytes / 4096) * 1e6;
}

int main(int argc, char **argv) {
  size_t max_mib = 256;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--max-mib") == 0 && i + 1 < argc) {
      char *end = NULL;
      long v = strtol(argv[++i], &end, 10);
      if (!end || *end || v < 1 || v > 65536) {
        fprintf(stderr, "bench_memlat: --max-mib: a number of MiB from 1 "
                        "to 65536, not '%s'\n",
                argv[i]);
        return 2;
      }
      max_mib = (size_t)v;
    } else {
      fprintf(stderr, "usage: bench_memlat [--max-mib N]\n");
      return 2;
    }
  }
  printf("%-12s %12s\n", "working_set", "ns_per_load");
  for (size_t kib = 256; kib <= max_mib * 1024; kib *= 2) {
    double ns = chase(kib * 1024, 4000000);
    if (ns < 0) {
      fprintf(stderr, "bench_memlat: out of memory at %zu KiB\n", kib);
      return 1;
    }
    if (kib < 1024)
      printf("%8zu KiB %12.1f\n", kib, ns);
    else
      printf("%8zu MiB %12.1f\n", kib / 1024, ns);
  }
  printf("\n%-12s %12s\n", "chains_64MiB", "ns_per_load");
  for (int k = 1; k <= CHAINS_MAX; k *= 2) {
    double ns = chains((size_t)64 << 20, k, 4000000);
    if (ns < 0) {
      fprintf(stderr, "bench_memlat: out of memory\n");
      return 1;
    }
    printf("%12d %12.1f\n", k, ns);
  }
  printf("\n%-12s %12s %12s %12s\n", "faults_64MiB", "4k_pages", "populated",
         "2m_pages");
  for (int pass = 1; pass <= 2; pass++) {
    double f[3];
    for (int m = 0; m < 3; m++)
      if ((f[m] = faults((size_t)64 << 20, m)) < 0) {
        fprintf(stderr, "bench_memlat: mmap failed\n");
        return 1;
      }
    printf("%7s %d us %12.2f %12.2f %12.2f\n", "pass", pass, f[0], f[1], f[2]);
  }
  return 0;
}
