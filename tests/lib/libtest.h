/*
 * Helpers shared by the Check-free libsched tests (tests/lib/): a call
 * that must succeed, and a cluster with two GPU models that checks its
 * invariants on every change. Header-only, libc and libsched alone.
 */
#ifndef LSCHED_TESTS_LIBTEST_H
#define LSCHED_TESTS_LIBTEST_H

#include "minitest.h"

#include <libsched/libsched.h>

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

#endif
