/*
 * Reader for the Alibaba PAI 2020 task table (alibaba/clusterdata,
 * cluster-trace-gpu-v2020, pai_task_table):
 *
 *   job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,
 *     plan_mem,plan_gpu,gpu_type
 *
 * Upstream ships the file without its header (the column names are in a
 * separate header file): give --trace-format pai, or prepend the line.
 *
 * Mapping (README "Traces" says the same):
 *   one job per instance: a task with inst_num N becomes N jobs named
 *     "job_name/task_name/i" (i = 0..N-1), all with the task's times and
 *     per-instance plan (PAI's plan_* are per instance); inst_num may be
 *     written "2.0" (pandas), must be a whole number 1..100000
 *   submit   = start_time, duration = end_time - start_time (seconds; the
 *     task table has no submit time, so the real queueing before
 *     start_time is not in the replay)
 *   tasks with no start_time or no end_time (Waiting, Running at the end
 *     of the trace) are skipped and counted; status is otherwise ignored
 *     (Failed tasks held their resources too)
 *   cpu_milli  = round(plan_cpu x 10)   (plan_cpu is percent of a core)
 *   memory_mib = round(plan_mem x 1024) (plan_mem is GB)
 *   plan_gpu p (percent of one GPU): 0 or empty = no GPU; otherwise
 *     num_gpu k = ceil(p / 100) and gpu_milli = ceil(10 p / k), the demand
 *     spread evenly over k GPUs: 50 -> 1 x 500, 100 -> 1 x 1000,
 *     150 -> 2 x 750, 200 -> 2 x 1000, 250 -> 3 x 834
 *   gpu_type: empty, "nan" or "MISC" (PAI's bucket of assorted older
 *     models) = any model; "V100" = V100M16 (PAI's 16 GB V100); any other
 *     name (T4, P100, V100M32) is passed to the GPU catalog as is
 *   empty or "nan" plan_cpu / plan_mem / plan_gpu count as 0.
 * All arithmetic is exact: numbers are parsed as decimal millionths.
 */
#include "trace_internal.h"

#include <string.h>

static const char *const pai_columns[10] = {
    "job_name", "task_name", "inst_num", "status",   "start_time",
    "end_time", "plan_cpu",  "plan_mem", "plan_gpu", "gpu_type"};

enum {
  C_JOB,
  C_TASK,
  C_INST,
  C_STATUS,
  C_START,
  C_END,
  C_CPU,
  C_MEM,
  C_GPU,
  C_TYPE
};

#define PAI_MAX_INST 100000
#define MICRO INT64_C(1000000)

typedef struct rec {
  const csvrow *row;
  const char *path;
  trace_error *err;
} rec;

static int bad(const rec *r, int col, const char *why) {
  trace_field_error(r->err, r->path, r->row->line, pai_columns[col], why,
                    r->row->field[col], r->row->len[col]);
  return -1;
}

static int is_missing(const rec *r, int col) {
  return r->row->len[col] == 0 || strcmp(r->row->field[col], "nan") == 0 ||
         strcmp(r->row->field[col], "NaN") == 0;
}

/* A decimal in millionths; missing = 0. */
static int get_fixed(const rec *r, int col, int64_t *out) {
  if (is_missing(r, col)) {
    *out = 0;
    return 0;
  }
  char why[TRACE_WHY_MAX];
  if (trace_parse_fixed6(r->row->field[col], r->row->len[col], out, why))
    return bad(r, col, why);
  return 0;
}

static int get_time(const rec *r, int col, int64_t *out) {
  char why[TRACE_WHY_MAX];
  if (trace_parse_time_us(r->row->field[col], r->row->len[col], out, why))
    return bad(r, col, why);
  return 0;
}

static int pai_row(trace_sink *k, const csvrow *row, const char *path,
                   trace_error *err) {
  if (csvrow_check_shape(row, pai_columns, 10, path, err))
    return -1;
  rec r = {row, path, err};
  if (row->len[C_JOB] == 0)
    return bad(&r, C_JOB, "empty, every task needs its job's name");
  int64_t inst;
  char why[TRACE_WHY_MAX];
  if (trace_parse_fixed6(row->field[C_INST], row->len[C_INST], &inst, why))
    return bad(&r, C_INST, why);
  if (inst % MICRO != 0)
    return bad(&r, C_INST, "not a whole number of instances");
  inst /= MICRO;
  if (inst < 1 || inst > PAI_MAX_INST)
    return bad(&r, C_INST, "outside 1..100000");

  int64_t cpu, mem, gpu;
  if (get_fixed(&r, C_CPU, &cpu) || get_fixed(&r, C_MEM, &mem) ||
      get_fixed(&r, C_GPU, &gpu))
    return -1;
  job_record j = {0};
  j.line = row->line;
  j.cpu_milli = (cpu + 50000) / 100000; /* percent x 10, rounded */
  int64_t q = mem / MICRO, rem = mem % MICRO;
  if (q > INT64_MAX / 1024 - 1)
    return bad(&r, C_MEM, "too large");
  j.memory_mib = q * 1024 + (rem * 1024 + MICRO / 2) / MICRO;
  if (gpu > 0) {
    /* Ceilings as q + (remainder != 0): gpu may be close to INT64_MAX,
     * where gpu + divisor - 1 overflowed (tests/fuzz/fuzz_trace.c). */
    int64_t hundred = 100 * MICRO;
    int64_t ng = gpu / hundred + (gpu % hundred != 0);
    if (ng > 1000000)
      return bad(&r, C_GPU, "above 100000000 percent (1000000 GPUs)");
    int64_t per = ng * (MICRO / 10); /* millionths of a percent per milli */
    j.num_gpu = (int32_t)ng;
    j.gpu_milli = (int32_t)(gpu / per + (gpu % per != 0));
  }

  /* Times last, so that a malformed resource field is reported even for a
   * task that is then skipped. */
  if (is_missing(&r, C_START) || is_missing(&r, C_END)) {
    trace_sink_skip(k, "PAI tasks without start_time or end_time (never "
                       "started, or still running when the trace ended)");
    return 0;
  }
  int64_t start, end;
  if (get_time(&r, C_START, &start) || get_time(&r, C_END, &end))
    return -1;
  if (end < start)
    return bad(&r, C_END, "before start_time");
  j.submit_us = start;
  j.duration_us = end - start;

  const char *spec = NULL;
  if (j.num_gpu > 0 && !is_missing(&r, C_TYPE) &&
      strcmp(row->field[C_TYPE], "MISC") != 0)
    spec = strcmp(row->field[C_TYPE], "V100") == 0 ? "V100M16"
                                                   : row->field[C_TYPE];
  /* The instances are named as the stream hands them out, so a task of
   * 100,000 instances costs one window entry, not 100,000. */
  return trace_sink_add_instances(k, &j, row->field[C_JOB], row->field[C_TASK],
                                  inst, spec, path, err);
}

const trace_reader trace_pai_reader = {.format = TRACE_FMT_PAI,
                                       .what = "Alibaba PAI 2020 task table",
                                       .columns = pai_columns,
                                       .ncolumns = 10,
                                       .has_times = 1,
                                       .row = pai_row};
