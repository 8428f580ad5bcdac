/*
 * Fuzz target: sums of times (issue #17) in every trace format. Each value
 * is range-checked alone by the readers; this target builds traces whose
 * values are each valid but whose sums may leave the time range.
 *
 * Input: one selector byte (format: generic, swf, philly, alibaba, pai,
 * tiresias; bits 3-4: 1..4 jobs), then per job 16 bytes: submit and
 * duration, each a little-endian uint64 scaled into seconds by its top
 * bits (so tiny and huge values are both common).
 *
 * Checks: the load succeeds exactly when the documented time range holds
 * (the jobs run one after another in file order, each from its submit
 * or the previous end, end by TRACE_MAX_TIME_US); a failure names the file, a line
 * of it and field 'duration' (or the field of a single bad value).
 */
#include "fuzz.h"
#include "trace.h"

#include <inttypes.h>
#include <string.h>

static uint64_t u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* Seconds with up to 6 decimals, from 0 to about 1.8e13 (past the range
 * on purpose). */
static void secs(char *out, size_t size, uint64_t v, int whole) {
  int shift = (int)(v >> 58); /* 0..63 */
  uint64_t us = (v & ((UINT64_C(1) << 58) - 1)) >> (shift % 40);
  if (whole)
    snprintf(out, size, "%" PRIu64, us / 10);
  else
    snprintf(out, size, "%" PRIu64 ".%06" PRIu64, us / 1000000, us % 1000000);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int fmt = data[0] % 6, njobs = 1 + ((data[0] >> 3) & 3);
  if (size < 1 + (size_t)njobs * 16)
    return 0;
  char path[512];
  fuzz_path(path, sizeof path, fmt == 1 ? "t.swf" : "t.csv");
  static const char *const headers[6] = {
      "id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model\n",
      "; swf\n",
      "timestamp,duration,num_gpus,gpu_time,cluster\n",
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
      "creation_time,deletion_time,scheduled_time\n",
      "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,"
      "plan_mem,plan_gpu,gpu_type\n",
      "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"};
  char text[4096];
  size_t o = (size_t)snprintf(text, sizeof text, "%s", headers[fmt]);
  for (int i = 0; i < njobs; i++) {
    const uint8_t *p = data + 1 + 16 * i;
    char sub[48], dur[48];
    /* SWF, Philly, Alibaba, PAI and Tiresias take whole seconds here */
    secs(sub, sizeof sub, u64(p), fmt != 0);
    secs(dur, sizeof dur, u64(p + 8), fmt != 0);
    switch (fmt) {
    case 0:
      o += (size_t)snprintf(text + o, sizeof text - o,
                            "j%d,%s,%s,1,1000,1,1,\n", i, sub, dur);
      break;
    case 1:
      o += (size_t)snprintf(text + o, sizeof text - o,
                            "%d %s 0 %s 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n",
                            i + 1, sub, dur);
      break;
    case 2: /* a date from the submit's low bits: 1970 .. 9999 */
      o += (size_t)snprintf(text + o, sizeof text - o,
                            "%04d-01-01 00:00:00,%s,1,1,c\n",
                            1970 + (int)(u64(p) % 8030), dur);
      break;
    case 3: { /* deletion = creation + duration, as text */
      o += (size_t)snprintf(text + o, sizeof text - o,
                            "p%d,1,1,1,1000,,LS,Running,%s,", i, sub);
      uint64_t a = strtoull(sub, NULL, 10), b = strtoull(dur, NULL, 10);
      o += (size_t)snprintf(text + o, sizeof text - o, "%" PRIu64 ",%s\n",
                            a + b, sub);
      break;
    }
    case 4: {
      uint64_t a = strtoull(sub, NULL, 10), b = strtoull(dur, NULL, 10);
      o += (size_t)snprintf(text + o, sizeof text - o,
                            "j%d,w,%d,Terminated,%s,%" PRIu64 ",100,1,100,\n",
                            i, 1 + (int)(p[0] & 1), sub, a + b);
      break;
    }
    default:
      o += (size_t)snprintf(text + o, sizeof text - o, "%d,1,%s,1,m,%s,1\n",
                            i + 1, sub, dur);
      break;
    }
    if (o >= sizeof text)
      return 0;
  }
  fuzz_write(path, (const uint8_t *)text, o);
  trace t;
  trace_init(&t);
  trace_error err;
  err.msg[0] = 0;
  int rc = trace_load(&t, path, &err);
  if (rc == 0) {
    int64_t chain = 0; /* the jobs run one after another, in file order */
    for (size_t i = 0; i < t.n; i++) {
      const job_record *j = &t.jobs[i];
      int64_t d = j->duration_us > 0 ? j->duration_us : 0, end;
      FUZZ_CHECK(j->submit_us >= 0 &&
                     !__builtin_add_overflow(j->submit_us, d, &end) &&
                     end <= TRACE_MAX_TIME_US,
                 "job %zu ends past the range", i);
      int64_t from = j->submit_us > chain ? j->submit_us : chain;
      FUZZ_CHECK(!__builtin_add_overflow(from, d, &chain) &&
                     chain <= TRACE_MAX_TIME_US,
                 "jobs up to %zu end past the range: %s", i, text);
    }
  } else {
    size_t pl = strlen(path);
    FUZZ_CHECK(strncmp(err.msg, path, pl) == 0 && err.msg[pl] == ':',
               "message does not start with the path: '%s'", err.msg);
    FUZZ_CHECK(strstr(err.msg, "field '") != NULL ||
                   strstr(err.msg, "no jobs") != NULL,
               "no field named: '%s'", err.msg);
  }
  trace_free(&t);
  return 0;
}
