/*
 * Reader for the job CSVs of the Tiresias simulator (SymbioticLab/Tiresias,
 * NSDI'19, simulator/), in its two layouts:
 *
 *   job_id,num_gpu,submit_time,iterations,model_name,duration,interval
 *   job_id,num_gpu,submit_time,start_time,duration,model_size,
 *     aggr_interval,model_name,model_scale            (tf_job.csv)
 *
 * Mapping (README "Traces"): name = job_id; submit = submit_time and
 * duration = duration (seconds); num_gpu whole GPUs (gpu_milli 1000, 0 for
 * a job without GPUs); cpu_milli = memory_mib = 0 (the files give none);
 * any GPU model; model_name is the job's class (job_record.jclass, for
 * the speed model). Other columns (iterations, intervals, the tf_job
 * start_time) are not read. The cluster CSVs beside them (num_switch,...) are not traces.
 */
#include "trace_internal.h"

#include <inttypes.h>
#include <string.h>

static const char *const tiresias_columns[7] = {
    "job_id",     "num_gpu",  "submit_time", "iterations",
    "model_name", "duration", "interval"};
static const char *const tiresias_tf_columns[9] = {
    "job_id",     "num_gpu",       "submit_time", "start_time", "duration",
    "model_size", "aggr_interval", "model_name",  "model_scale"};

#define MAX_NUM_GPU 1000000

static int read_job(trace_sink *k, const csvrow *row, const char *path,
                    trace_error *err, const char *const *cols, size_t ncols,
                    int c_submit, int c_duration, int c_model) {
  if (csvrow_check_shape(row, cols, ncols, path, err))
    return -1;
  char why[TRACE_WHY_MAX];
  if (row->len[0] == 0) {
    trace_field_error(err, path, row->line, cols[0],
                      "empty, every job needs an id", "", 0);
    return -1;
  }
  int64_t ngpu;
  if (trace_parse_int(row->field[1], row->len[1], MAX_NUM_GPU, &ngpu, why)) {
    trace_field_error(err, path, row->line, cols[1], why, row->field[1],
                      row->len[1]);
    return -1;
  }
  job_record j = {0};
  j.line = row->line;
  if (trace_parse_time_us(row->field[c_submit], row->len[c_submit],
                          &j.submit_us, why)) {
    trace_field_error(err, path, row->line, cols[c_submit], why,
                      row->field[c_submit], row->len[c_submit]);
    return -1;
  }
  if (trace_parse_time_us(row->field[c_duration], row->len[c_duration],
                          &j.duration_us, why)) {
    trace_field_error(err, path, row->line, cols[c_duration], why,
                      row->field[c_duration], row->len[c_duration]);
    return -1;
  }
  j.num_gpu = (int32_t)ngpu;
  j.gpu_milli = ngpu > 0 ? 1000 : 0;
  /* The model name is the job's class (the speed model's). */
  char model[256];
  size_t ml = row->len[c_model] < sizeof model ? row->len[c_model]
                                               : sizeof model - 1;
  memcpy(model, row->field[c_model], ml);
  model[ml] = 0;
  int jc = trace_intern_class(k->meta, model);
  if (jc < 0) {
    trace_seterr(err, "%s:%" PRId64 ": out of memory (or more than 65535 "
                 "model names)", path, row->line);
    return -1;
  }
  j.jclass = (uint16_t)jc;
  return trace_sink_add(k, &j, row->field[0], NULL, path, err);
}

static int tiresias_row(trace_sink *k, const csvrow *row, const char *path,
                        trace_error *err) {
  return read_job(k, row, path, err, tiresias_columns, 7, 2, 5, 4);
}

static int tiresias_tf_row(trace_sink *k, const csvrow *row, const char *path,
                           trace_error *err) {
  return read_job(k, row, path, err, tiresias_tf_columns, 9, 2, 4, 7);
}

const trace_reader trace_tiresias_reader = {.format = TRACE_FMT_TIRESIAS,
                                            .what = "Tiresias job CSV",
                                            .columns = tiresias_columns,
                                            .ncolumns = 7,
                                            .has_times = 1,
                                            .row = tiresias_row};

const trace_reader trace_tiresias_tf_reader = {.format = TRACE_FMT_TIRESIAS,
                                               .what = "Tiresias tf_job CSV",
                                               .columns = tiresias_tf_columns,
                                               .ncolumns = 9,
                                               .has_times = 1,
                                               .row = tiresias_tf_row};
