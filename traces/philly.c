/*
 * Reader for the Philly job list in the layout of petuum/adaptdl
 * (osdi21-artifact, simulator/traces/philly.csv), derived from
 * msr-fiddle/philly-traces:
 *
 *   timestamp,duration,num_gpus,gpu_time,cluster
 *
 * Mapping (README "Traces"): timestamp is "YYYY-MM-DD HH:MM:SS" (a 'T'
 * between date and time is accepted), read as UTC; submit = timestamp -
 * the earliest timestamp in the file, so the trace starts at 0 (the rows
 * are not in time order; the engine sorts arrivals). Finding the earliest
 * timestamp takes a first pass over the file: a Philly stream reads the
 * file twice at open and once per rewind, in bounded memory. duration in seconds;
 * num_gpus whole GPUs (gpu_milli 1000); cpu_milli = memory_mib = 0 (Philly
 * publishes no CPU or memory requests); any GPU model. gpu_time
 * (duration x num_gpus) and cluster (the virtual cluster) are not used.
 * Jobs are named "philly-N", N = 1-based record number. Jobs wider than a
 * node (16..128 GPUs) cannot start on a cluster of 8-GPU nodes: the
 * engine counts them as never started (no_node_fits).
 */
#include "trace_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const philly_columns[5] = {
    "timestamp", "duration", "num_gpus", "gpu_time", "cluster"};

#define MAX_NUM_GPU 1000000

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int digits(const char *s, int n, int64_t *out) {
  int64_t v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 0;
}

/* "YYYY-MM-DD HH:MM:SS" -> seconds since the epoch (UTC). 0 or -1. */
static int parse_stamp(const char *s, size_t len, int64_t *out) {
  int64_t y, mo, d, h, mi, se;
  if (len != 19 || s[4] != '-' || s[7] != '-' ||
      (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':' ||
      digits(s, 4, &y) || digits(s + 5, 2, &mo) || digits(s + 8, 2, &d) ||
      digits(s + 11, 2, &h) || digits(s + 14, 2, &mi) || digits(s + 17, 2, &se))
    return -1;
  static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
      mi > 59 || se > 60)
    return -1;
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo == 2 && d == 29 && !leap)
    return -1;
  *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
  return 0;
}

static int philly_row(trace_sink *k, const csvrow *row, const char *path,
                      trace_error *err) {
  if (csvrow_check_shape(row, philly_columns, 5, path, err))
    return -1;
  char why[TRACE_WHY_MAX];
  job_record j = {0};
  j.line = row->line;
  int64_t stamp, ngpu;
  if (parse_stamp(row->field[0], row->len[0], &stamp)) {
    trace_field_error(err, path, row->line, "timestamp",
                      "not a date and time 'YYYY-MM-DD HH:MM:SS' "
                      "(1970 or later)",
                      row->field[0], row->len[0]);
    return -1;
  }
  if (trace_parse_time_us(row->field[1], row->len[1], &j.duration_us, why)) {
    trace_field_error(err, path, row->line, "duration", why, row->field[1],
                      row->len[1]);
    return -1;
  }
  if (trace_parse_int(row->field[2], row->len[2], MAX_NUM_GPU, &ngpu, why)) {
    trace_field_error(err, path, row->line, "num_gpus", why, row->field[2],
                      row->len[2]);
    return -1;
  }
  /* Epoch seconds less the earliest timestamp of the file, which the
   * stream finds in a first pass (origin_us is 0 during that pass). */
  j.submit_us = stamp * TRACE_US_PER_S - k->origin_us;
  j.num_gpu = (int32_t)ngpu;
  j.gpu_milli = ngpu > 0 ? 1000 : 0;
  char name[32];
  snprintf(name, sizeof name, "philly-%" PRIu64, k->produced + 1);
  return trace_sink_add(k, &j, name, NULL, path, err);
}

const trace_reader trace_philly_reader = {
    .format = TRACE_FMT_PHILLY,
    .what = "Philly job list (adaptdl layout)",
    .columns = philly_columns,
    .ncolumns = 5,
    .has_times = 1,
    .row = philly_row,
    .shift_origin = 1};
