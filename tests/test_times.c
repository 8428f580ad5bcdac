/* Synthetic arrival times and durations for traces without times. */
#include "testutil.h"
#include "trace.h"

#include <math.h>
#include <string.h>

static void make(trace *t, size_t n, int gpus, int64_t dur_s) {
  trace_init(t);
  for (size_t i = 0; i < n; i++) {
    job_record j;
    memset(&j, 0, sizeof j);
    j.num_gpu = gpus;
    j.gpu_milli = gpus ? 1000 : 0;
    j.duration_us = dur_s < 0 ? -1 : dur_s * TRACE_US_PER_S;
    j.flags = dur_s < 0 ? TRACE_JOB_NO_DURATION : 0;
    ck_assert_int_eq(trace_add_job(t, &j, "j", NULL), 0);
  }
}

START_TEST(durations_drawn_and_rate_matches_load) {
  trace t, from;
  make(&t, 20000, 2, -1);
  make(&from, 2, 1, 10);
  from.jobs[1].duration_us = 30 * TRACE_US_PER_S; /* durations 10 and 30 */
  trace_error err;
  ck_assert_int_eq(trace_synthetic_times(&t, &from, 0.5, 100, 7, &err), 0);
  ck_assert_int_eq(t.has_times, 1);
  double sum = 0;
  for (size_t i = 0; i < t.n; i++) {
    int64_t d = t.jobs[i].duration_us;
    ck_assert(d == 10 * TRACE_US_PER_S || d == 30 * TRACE_US_PER_S);
    ck_assert(!(t.jobs[i].flags & TRACE_JOB_NO_DURATION));
    if (i)
      ck_assert_int_ge(t.jobs[i].submit_us, t.jobs[i - 1].submit_us);
    sum += (double)d / 1e6;
  }
  /* The window (20000 jobs) is far longer than any duration, so
   * min(d, W) = d: rate = 0.5 x 100 GPUs / (mean duration x 2 GPUs). */
  double mean_d = sum / (double)t.n;
  ck_assert(fabs(mean_d - 20) < 1); /* uniform over {10, 30} */
  double rate = 0.5 * 100 / (mean_d * 2);
  double mean_gap = (double)t.jobs[t.n - 1].submit_us / 1e6 / (double)t.n;
  ck_assert_msg(fabs(mean_gap * rate - 1) < 0.05, "gap %f rate %f", mean_gap,
                rate);
  /* same seed, same times; another seed, others */
  trace u;
  make(&u, 20000, 2, -1);
  ck_assert_int_eq(trace_synthetic_times(&u, &from, 0.5, 100, 7, &err), 0);
  ck_assert(memcmp(t.jobs, u.jobs, t.n * sizeof *t.jobs) == 0);
  trace_free(&u);
  make(&u, 20000, 2, -1);
  ck_assert_int_eq(trace_synthetic_times(&u, &from, 0.5, 100, 8, &err), 0);
  ck_assert(memcmp(t.jobs, u.jobs, t.n * sizeof *t.jobs) != 0);
  trace_free(&u);
  trace_free(&t);
  trace_free(&from);
}
END_TEST

/* Heavy tail: 1 job in 100 runs 10^6 s, the others 100 s. The window must
 * count the long ones only for its own length. */
START_TEST(window_caps_long_jobs) {
  trace t, from;
  make(&t, 5000, 1, -1);
  make(&from, 100, 1, 100);
  from.jobs[0].duration_us = 1000000 * TRACE_US_PER_S;
  trace_error err;
  ck_assert_int_eq(trace_synthetic_times(&t, &from, 1.0, 50, 3, &err), 0);
  double w = (double)t.jobs[t.n - 1].submit_us / 1e6, acc = 0;
  for (size_t i = 0; i < t.n; i++) {
    double d = (double)t.jobs[i].duration_us / 1e6;
    acc += d < w ? d : w;
  }
  /* offered demand over the window ~ 50 GPUs (Poisson noise: 5%) */
  ck_assert_msg(fabs(acc / w / 50 - 1) < 0.05, "demand %f", acc / w);
  trace_free(&t);
  trace_free(&from);
}
END_TEST

START_TEST(bad_inputs) {
  trace t, from, nodur;
  make(&t, 10, 1, -1);
  make(&from, 3, 1, 5);
  make(&nodur, 3, 1, -1);
  trace_error err;
  ck_assert_int_eq(trace_synthetic_times(&t, &from, 0, 10, 1, &err), -1);
  ck_assert_int_eq(trace_synthetic_times(&t, &from, 1, 0, 1, &err), -1);
  ck_assert_int_eq(trace_synthetic_times(&t, &nodur, 1, 10, 1, &err), -1);
  ck_assert_ptr_nonnull(strstr(err.msg, "no job has a duration"));
  trace cpu;
  make(&cpu, 3, 0, -1);
  ck_assert_int_eq(trace_synthetic_times(&cpu, &from, 1, 10, 1, &err), -1);
  ck_assert_ptr_nonnull(strstr(err.msg, "no GPU demand"));
  trace_free(&cpu);
  trace_free(&t);
  trace_free(&from);
  trace_free(&nodur);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("times");
  TCase *tc = tcase_create("synthetic");
  tcase_add_test(tc, durations_drawn_and_rate_matches_load);
  tcase_add_test(tc, window_caps_long_jobs);
  tcase_add_test(tc, bad_inputs);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
