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


/* ------------------------------------------------- the time range (#17) */

/* Hand-computed: the range is [0, TRACE_MAX_TIME_US]; jobs must fit run
 * one after another from the latest submit. */
START_TEST(horizon_hand_computed) {
  trace_horizon h = {0};
  trace_error err;
  job_record j;
  memset(&j, 0, sizeof j);
  j.line = 2;
  j.submit_us = 10;
  j.duration_us = TRACE_MAX_TIME_US - 20; /* ends at MAX - 10 */
  ck_assert_int_eq(trace_horizon_add(&h, &j, "f.csv", &err), 0);
  ck_assert_int_eq(h.end_us, TRACE_MAX_TIME_US - 10);
  j.line = 3;
  j.submit_us = 0;
  j.duration_us = 10; /* after the first: MAX - 10 + 10 = MAX, inside */
  ck_assert_int_eq(trace_horizon_add(&h, &j, "f.csv", &err), 0);
  j.line = 4;
  j.duration_us = 1; /* one microsecond more: outside */
  ck_assert_int_eq(trace_horizon_add(&h, &j, "f.csv", &err), -1);
  ck_assert_str_eq(err.msg,
                   "f.csv:4: field 'duration': the jobs so far, run one "
                   "after another in file order, would end past the time "
                   "range (9223372036854 s)");
  ck_assert_int_eq(h.end_us, TRACE_MAX_TIME_US); /* unchanged */
  /* a later submit starts the chain again from there: a job at MAX - 5
   * of 5 s fits after jobs that ended earlier */
  trace_horizon k = {0};
  j.submit_us = 0;
  j.duration_us = 100;
  ck_assert_int_eq(trace_horizon_add(&k, &j, "f.csv", &err), 0);
  j.submit_us = TRACE_MAX_TIME_US - 5;
  j.duration_us = 5;
  ck_assert_int_eq(trace_horizon_add(&k, &j, "f.csv", &err), 0);
  ck_assert_int_eq(k.end_us, TRACE_MAX_TIME_US);
  /* a single job whose own end wraps */
  trace_horizon g = {0};
  j.submit_us = INT64_C(9007199254740992);
  j.duration_us = TRACE_MAX_TIME_US;
  ck_assert_int_eq(trace_horizon_add(&g, &j, "f.csv", &err), -1);
  ck_assert_ptr_nonnull(strstr(err.msg, "f.csv:4: field 'duration': submit "
                                        "+ duration ends past"));
  /* unknown durations (-1) count as 0 */
  trace_horizon u = {0};
  j.submit_us = TRACE_MAX_TIME_US;
  j.duration_us = -1;
  ck_assert_int_eq(trace_horizon_add(&u, &j, "f.csv", &err), 0);
}
END_TEST

/* Every format: a trace whose jobs each fit alone but not together (or
 * whose one job's end wraps) is refused naming file, line and field. */
START_TEST(every_reader_checks_the_range) {
  static const struct {
    const char *name, *text, *want;
  } cases[] = {
      {"g1.csv",
       "id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model\n"
       "a,9007199254.740992,9223372036854,1,1000,1000,1024,\n",
       "g1.csv:2: field 'duration': submit + duration ends past"},
      {"g2.csv",
       "id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model\n"
       "a,0,5000000000000,1,1000,1000,1024,\n"
       "b,1,5000000000000,1,1000,1000,1024,\n",
       "g2.csv:3: field 'duration': the jobs so far"},
      {"ph.csv",
       "timestamp,duration,num_gpus,gpu_time,cluster\n"
       "1970-01-01 00:00:00,10,1,10,c\n"
       "9999-12-31 23:59:59,9223372036854,1,1,c\n",
       "ph.csv:3: field 'duration': submit + duration ends past"},
      {"s.swf",
       "; swf\n"
       "1 0 0 9000000000000 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
       "2 10 0 9000000000000 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n",
       "s.swf:3: field 'duration': the jobs so far"},
      {"al.csv",
       "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
       "creation_time,deletion_time,scheduled_time\n"
       "p1,1000,100,1,1000,,LS,Running,0,9000000000000,0\n"
       "p2,1000,100,1,1000,,LS,Running,0,9000000000000,0\n",
       "al.csv:3: field 'duration': the jobs so far"},
      {"pai.csv", /* one task of two instances: the second overflows */
       "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,"
       "plan_mem,plan_gpu,gpu_type\n"
       "j1,w,2,Terminated,0,9000000000000,600,29.296875,50,V100\n",
       "pai.csv:2: field 'duration': the jobs so far"},
      {"tir.csv",
       "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
       "1,1,0,10,m,9000000000000,1\n"
       "2,1,0,10,m,9000000000000,1\n",
       "tir.csv:3: field 'duration': the jobs so far"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[4096];
    put_text(path, sizeof path, cases[i].name, cases[i].text);
    trace t;
    trace_init(&t);
    trace_error err;
    ck_assert_msg(trace_load(&t, path, &err) == -1, "%s loaded",
                  cases[i].name);
    ck_assert_msg(strstr(err.msg, cases[i].want) != NULL, "%s: %s",
                  cases[i].name, err.msg);
    ck_assert_int_eq((long)t.n, 0);
    trace_free(&t);
  }
}
END_TEST

/* A load so small that arrivals pass the range is refused (was: submit
 * times of INT64_MIN); durations drawn that overflow together too. */
START_TEST(synthetic_times_stay_in_range) {
  trace t, from;
  make(&t, 50, 1, -1);
  make(&from, 1, 1, 10);
  from.jobs[0].duration_us = INT64_C(1000000000000) * TRACE_US_PER_S / 1000;
  trace_error err;
  /* 50 jobs of 1e9 s on 1 GPU at the smallest rate: arrivals ~1e12 s
   * apart, 50 of them pass 9.2e12 s */
  ck_assert_int_eq(trace_synthetic_times(&t, &from, 1e-300, 1, 1, &err), -1);
  ck_assert_ptr_nonnull(strstr(err.msg, "past the time range"));
  for (size_t i = 0; i < t.n; i++)
    ck_assert_int_ge(t.jobs[i].submit_us, 0);
  trace_free(&t);
  make(&t, 3, 1, -1);
  from.jobs[0].duration_us = TRACE_MAX_TIME_US; /* alone it fits */
  ck_assert_int_eq(trace_synthetic_times(&t, &from, 1, 100, 1, &err), -1);
  ck_assert_ptr_nonnull(strstr(err.msg, "field 'duration'"));
  ck_assert_ptr_nonnull(strstr(err.msg, "synthetic times"));
  trace_free(&t);
  trace_free(&from);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("times");
  TCase *tc = tcase_create("synthetic");
  tcase_add_test(tc, durations_drawn_and_rate_matches_load);
  tcase_add_test(tc, window_caps_long_jobs);
  tcase_add_test(tc, bad_inputs);
  tcase_add_test(tc, horizon_hand_computed);
  tcase_add_test(tc, every_reader_checks_the_range);
  tcase_add_test(tc, synthetic_times_stay_in_range);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
