/*
 * A C implementation of Go's math/rand generator (the additive lagged
 * Fibonacci generator x[n] = x[n-607] + x[n-273] mod 2^64 by D. P. Mitchell
 * and J. A. Reeds, as Go 1.x's rngSource, with its Seed, Int63, Int31n,
 * Intn, Shuffle and Perm), written from the algorithm's definition. The FGD
 * authors' simulator draws its pod shuffle and workload tuning from Go's
 * global math/rand seeded with the run's seed, so this reproduces their pod
 * sequence for a given seed exactly (see README, Fidelity).
 *
 * Go seeds rngSource by XOR-ing a Park-Miller sequence with a table of 607
 * constants, defined as the generator's state after 7.8e12 steps from
 * srand(1). gorand_cook() computes that table itself: the recurrence is
 * linear, so the state after N steps is x^N modulo the characteristic
 * polynomial x^607 - x^334 - 1 over Z/2^64, applied to the initial state
 * (43 polynomial squarings, a few milliseconds).
 */
#ifndef SCHEDSIM_GORAND_H
#define SCHEDSIM_GORAND_H

#include <stddef.h>
#include <stdint.h>

#define GORAND_LEN 607

typedef struct gorand {
  uint64_t vec[GORAND_LEN];
  int tap, feed;
} gorand;

/* Computes the seeding table (Go's rngCooked). 0, or -1 out of memory. */
int gorand_cook(uint64_t cooked[GORAND_LEN]);
/* rand.Seed(seed) */
void gorand_seed(gorand *r, const uint64_t cooked[GORAND_LEN], int64_t seed);
/* Source.Uint64 / Int63 */
uint64_t gorand_uint64(gorand *r);
int64_t gorand_int63(gorand *r);
/* rand.Intn(n), n >= 1 (Int31n for n < 2^31, Int63n beyond) */
int64_t gorand_intn(gorand *r, int64_t n);
/* rand.Shuffle(n, swap) on an array of uint32 (n < 2^31) */
void gorand_shuffle_u32(gorand *r, uint32_t *a, size_t n);
/* rand.Perm(n) into out[0..n) */
void gorand_perm(gorand *r, int *out, int n);

#endif
