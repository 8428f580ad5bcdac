/*
 * The benchmarks' checks of their arguments (one place for every
 * bench_*.c): a list option names only what the program has, a count is a
 * whole number in range. Anything else gets a message naming the program,
 * the option and the value, and the caller exits 2 (the programs' usage
 * status). Before, an unknown name selected nothing and the program exited
 * 0 with an empty table, and a malformed count read as 0 or as its digits
 * up to the first other character.
 */
#ifndef SCHEDSIM_BENCH_ARGS_H
#define SCHEDSIM_BENCH_ARGS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every item of the comma-separated list v (option opt of program prog) is
 * one of the n names in known: 0, else a message naming the option and
 * the unknown (or empty) item, and -1. */
static inline int bench_names(const char *prog, const char *opt,
                              const char *v, const char *const *known,
                              size_t n) {
  for (const char *p = v;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p), k = 0;
    while (k < n &&
           !(strlen(known[k]) == len && strncmp(p, known[k], len) == 0))
      k++;
    if (k == n) {
      fprintf(stderr, "%s: %s: '%.*s' is not one of", prog, opt, (int)len,
              p);
      for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s %s", i ? "," : "", known[i]);
      fprintf(stderr, "\n");
      return -1;
    }
    if (!e)
      return 0;
    p = e + 1;
  }
}

/* v (option opt of program prog) is one of the n names in known, alone
 * (not a list): 0, else a message and -1. */
static inline int bench_name(const char *prog, const char *opt,
                             const char *v, const char *const *known,
                             size_t n) {
  if (strchr(v, ',')) {
    fprintf(stderr, "%s: %s: one name, not the list '%s'\n", prog, opt, v);
    return -1;
  }
  return bench_names(prog, opt, v, known, n);
}

/* The most jobs a benchmark's option may ask for (a billion: 64 GB of
 * trace records, beyond any machine these run on). */
#define BENCH_MAX_JOBS ((size_t)1000000000)

/* v (option opt of program prog) as a whole number from min to max,
 * decimal digits only: 0 with *out set, else a message and -1. */
static inline int bench_count(const char *prog, const char *opt,
                              const char *v, size_t min, size_t max,
                              size_t *out) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (!*v || *end || errno || strspn(v, "0123456789") != strlen(v) ||
      x < min || x > max) {
    fprintf(stderr, "%s: %s: '%s' is not a whole number from %zu to %zu\n",
            prog, opt, v, min, max);
    return -1;
  }
  *out = (size_t)x;
  return 0;
}

#endif
