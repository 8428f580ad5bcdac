/*
 * Reader for the generic job CSV, the format to convert any other trace
 * into:
 *
 *   id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model
 *
 * id          job name, non-empty
 * submit      seconds (decimal allowed, exact to the microsecond)
 * duration    seconds; empty = unknown (then `run` needs
 *             --unknown-duration)
 * num_gpu     GPUs per job, 0..1000000
 * gpu_milli   share of each GPU, 1..1000 (1000 = whole GPU); 0 iff
 *             num_gpu is 0
 * cpu_milli   CPU in milli-cores, >= 0
 * memory_mib  memory in MiB, >= 0
 * gpu_model   allowed GPU models separated by '|' (catalog names or
 *             aliases); empty = any
 *
 * A second layout adds a ninth column (issue #14 item 4):
 *
 * spot        1: the job is a spot job (job_record flag TRACE_JOB_SPOT,
 *             class `spot` for --preemptible); 0 or empty: not
 */
#include "trace_internal.h"

#include <string.h>

static const char *const generic_columns[9] = {
    "id",        "submit",    "duration",   "num_gpu", "gpu_milli",
    "cpu_milli", "memory_mib", "gpu_model", "spot"};

#define MAX_NUM_GPU 1000000

static int bad(const csvrow *row, const char *path, trace_error *err, int col,
               const char *why) {
  trace_field_error(err, path, row->line, generic_columns[col], why,
                    row->field[col], row->len[col]);
  return -1;
}

/* ncols: 8, or 9 with the spot column. */
static int generic_read(trace_sink *k, const csvrow *row, const char *path,
                        trace_error *err, size_t ncols) {
  if (csvrow_check_shape(row, generic_columns, ncols, path, err))
    return -1;
  char why[TRACE_WHY_MAX];
  if (row->len[0] == 0)
    return bad(row, path, err, 0, "empty, every job needs an id");
  job_record j = {0};
  j.line = row->line;
  if (trace_parse_time_us(row->field[1], row->len[1], &j.submit_us, why))
    return bad(row, path, err, 1, why);
  if (row->len[2] == 0) {
    j.duration_us = -1;
    j.flags |= TRACE_JOB_NO_DURATION;
  } else if (trace_parse_time_us(row->field[2], row->len[2], &j.duration_us,
                                 why)) {
    return bad(row, path, err, 2, why);
  }
  int64_t ngpu, milli, cpu, mem;
  if (trace_parse_int(row->field[3], row->len[3], MAX_NUM_GPU, &ngpu, why))
    return bad(row, path, err, 3, why);
  if (trace_parse_int(row->field[4], row->len[4], 1000, &milli, why))
    return bad(row, path, err, 4,
               strstr(why, "above") ? "outside 0..1000 (milli-GPU per GPU)"
                                    : why);
  if (trace_parse_int(row->field[5], row->len[5], INT64_MAX, &cpu, why))
    return bad(row, path, err, 5, why);
  if (trace_parse_int(row->field[6], row->len[6], INT64_MAX, &mem, why))
    return bad(row, path, err, 6, why);
  if (ngpu > 0 && milli == 0)
    return bad(row, path, err, 4,
               "0 although num_gpu > 0 (a GPU job needs a share of 1..1000 "
               "per GPU)");
  if (ngpu == 0 && milli > 0)
    return bad(row, path, err, 4, "above 0 although num_gpu is 0");
  j.num_gpu = (int32_t)ngpu;
  j.gpu_milli = (int32_t)milli;
  j.cpu_milli = cpu;
  j.memory_mib = mem;
  if (ncols == 9 && row->len[8] > 0) {
    if (row->len[8] != 1 || (row->field[8][0] != '0' && row->field[8][0] != '1'))
      return bad(row, path, err, 8, "expected 0, 1 or empty");
    if (row->field[8][0] == '1')
      j.flags |= TRACE_JOB_SPOT;
  }
  return trace_sink_add(k, &j, row->field[0], row->field[7], path, err);
}

static int generic_row(trace_sink *k, const csvrow *row, const char *path,
                       trace_error *err) {
  return generic_read(k, row, path, err, 8);
}

static int generic_spot_row(trace_sink *k, const csvrow *row, const char *path,
                            trace_error *err) {
  return generic_read(k, row, path, err, 9);
}

const trace_reader trace_generic_reader = {.format = TRACE_FMT_GENERIC,
                                           .what = "generic job CSV",
                                           .columns = generic_columns,
                                           .ncolumns = 8,
                                           .has_times = 1,
                                           .row = generic_row};

const trace_reader trace_generic_spot_reader = {
    .format = TRACE_FMT_GENERIC,
    .what = "generic job CSV with spot",
    .columns = generic_columns,
    .ncolumns = 9,
    .has_times = 1,
    .row = generic_spot_row};
