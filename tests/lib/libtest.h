/*
 * Helpers shared by the Check-free libsched tests (tests/lib/): a call
 * that must succeed, and a cluster with two GPU models that checks its
 * invariants on every change, a registry of the built-in policies, a
 * generator and plain requests. Header-only, libc and libsched alone.
 */
#ifndef LSCHED_TESTS_LIBTEST_H
#define LSCHED_TESTS_LIBTEST_H

#include "minitest.h"

#include <libsched/libsched.h>

#include <stdint.h>

/* A library call that must succeed; prints the code's name otherwise. */
#define OK(call)                                                               \
  do {                                                                         \
    int ok_rc_ = (call);                                                       \
    MT_ASSERT_MSG(ok_rc_ == LSCHED_OK, "%s: %s", #call,                        \
                  lsched_err_name(ok_rc_));                                    \
  } while (0)

/* The model ids lt_new_cluster() gives. */
enum { A100 = 0, V100 = 1 };

/* A cluster that checks its invariants on every change, with two models. */
static inline lsched_cluster *lt_new_cluster(void) {
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.check_invariants = 1;
  lsched_cluster *c = NULL;
  OK(lsched_cluster_create(&c, &o));
  MT_EQ(lsched_cluster_model_id(c, "A100", 1), A100);
  MT_EQ(lsched_cluster_model_id(c, "V100", 1), V100);
  return c;
}

/* A registry holding the built-in policies (lsched_registry_destroy it). */
static inline lsched_registry *lt_builtins(void) {
  lsched_registry *reg = NULL;
  OK(lsched_registry_create(&reg, NULL));
  OK(lsched_registry_add_builtins(reg));
  return reg;
}

/* A small deterministic generator (xorshift64*) for the random replays. */
struct rng {
  uint64_t s;
};

static inline uint64_t rnext(struct rng *r) {
  uint64_t x = r->s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  r->s = x;
  return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* Uniform in 0..n-1 (0 when n <= 0). */
static inline int rbelow(struct rng *r, int n) {
  return n > 0 ? (int)((rnext(r) >> 11) % (uint64_t)n) : 0;
}

/* A plain request: CPU milli, memory MiB, GPU count, GPU milli. */
static inline lsched_request lt_req(int64_t cpu, int64_t mem, int k,
                                    int milli) {
  lsched_request q = LSCHED_REQUEST_INIT;
  q.cpu_milli = cpu;
  q.memory_mib = mem;
  q.gpu_count = k;
  q.gpu_milli = milli;
  return q;
}

#endif
