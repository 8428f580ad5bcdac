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
 * Deterministic permutation (a fixed xorshift seed); the times are wall
 * clock (CLOCK_MONOTONIC) and vary with the host's load.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* ns per dependent load over `bytes` of memory, or -1 when out of memory. */
static double chase(size_t bytes, size_t loads) {
  size_t n = bytes / (LINE_WORDS * sizeof(size_t));
  size_t *a = malloc(n * LINE_WORDS * sizeof *a);
  size_t *perm = malloc(n * sizeof *perm);
  if (!a || !perm || n < 2) {
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
  return 0;
}
