/*
 * minitest: the assertion harness of libsched's own tests (tests/lib/).
 *
 * libsched builds and tests with a C compiler and libc only
 * (cmake -DLSCHED_BUILD_SIM=OFF), so its tests cannot use Check. This header
 * is the whole harness: a test is a `static void name(void)` function, run
 * with MT_RUN(name); a failed assertion prints FILE:LINE and the values,
 * and abandons that test (longjmp back to MT_RUN), so one broken case does
 * not hide the others. main() ends with `return mt_finish();`, which prints
 * "SUITE: N passed, N failed" as the closing line (N counts tests, not
 * assertions) and returns the exit status: 0 only when every test passed
 * and at least one ran.
 *
 * One test program is one translation unit, so the state below is static.
 */
#ifndef LSCHED_MINITEST_H
#define LSCHED_MINITEST_H

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct mt_state {
  const char *suite;   /* name printed in the closing line */
  const char *current; /* the test being run */
  int passed, failed;
  long checks; /* assertions evaluated, for the closing line's detail */
  jmp_buf on_fail;
};

static struct mt_state mt_;

/* Records the failure of the current test and leaves it. */
#define MT_FAIL(...)                                                           \
  do {                                                                         \
    fprintf(stderr, "FAIL %s: %s:%d: ", mt_.current, __FILE__, __LINE__);      \
    fprintf(stderr, __VA_ARGS__);                                              \
    fputc('\n', stderr);                                                       \
    longjmp(mt_.on_fail, 1);                                                   \
  } while (0)

#define MT_ASSERT(cond)                                                        \
  do {                                                                         \
    mt_.checks++;                                                              \
    if (!(cond))                                                               \
      MT_FAIL("%s", #cond);                                                    \
  } while (0)

#define MT_ASSERT_MSG(cond, ...)                                               \
  do {                                                                         \
    mt_.checks++;                                                              \
    if (!(cond))                                                               \
      MT_FAIL(__VA_ARGS__);                                                    \
  } while (0)

/* Integer comparison that prints both sides (any integer type up to
 * intmax_t; unsigned 64-bit masks compare through MT_EQ_U). */
#define MT_CMP_(x, op, y)                                                      \
  do {                                                                         \
    intmax_t mt_x_ = (intmax_t)(x), mt_y_ = (intmax_t)(y);                     \
    mt_.checks++;                                                              \
    if (!(mt_x_ op mt_y_))                                                     \
      MT_FAIL("%s %s %s: %jd vs %jd", #x, #op, #y, mt_x_, mt_y_);              \
  } while (0)
#define MT_EQ(x, y) MT_CMP_(x, ==, y)
#define MT_NE(x, y) MT_CMP_(x, !=, y)
#define MT_GE(x, y) MT_CMP_(x, >=, y)
#define MT_LE(x, y) MT_CMP_(x, <=, y)

#define MT_EQ_U(x, y)                                                          \
  do {                                                                         \
    uintmax_t mt_x_ = (uintmax_t)(x), mt_y_ = (uintmax_t)(y);                  \
    mt_.checks++;                                                              \
    if (mt_x_ != mt_y_)                                                        \
      MT_FAIL("%s == %s: %#jx vs %#jx", #x, #y, mt_x_, mt_y_);                 \
  } while (0)

#define MT_RUN(fn) mt_run_(#fn, fn)

static inline void mt_begin(const char *suite) { mt_.suite = suite; }

static inline void mt_run_(const char *name, void (*fn)(void)) {
  mt_.current = name;
  if (setjmp(mt_.on_fail) == 0) {
    fn();
    mt_.passed++;
    printf("ok   %s\n", name);
  } else {
    mt_.failed++;
    printf("FAIL %s\n", name);
  }
  fflush(stdout);
}

static inline int mt_finish(void) {
  if (mt_.passed + mt_.failed == 0) {
    fprintf(stderr, "%s: no test ran\n", mt_.suite ? mt_.suite : "minitest");
    mt_.failed = 1;
  }
  printf("(%ld assertions)\n", mt_.checks);
  printf("%s: %d passed, %d failed\n", mt_.suite ? mt_.suite : "minitest",
         mt_.passed, mt_.failed);
  return mt_.failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
