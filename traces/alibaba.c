/*
 * Reader for the Alibaba GPU cluster trace 2023 pod lists (openb_pod_list_*
 * from the FGD paper, USENIX ATC'23), in its two layouts:
 *
 *   name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
 *     creation_time,deletion_time,scheduled_time          (11 columns)
 *   name,cpu_milli,memory_mib,num_gpu,gpu_milli           (multigpu*, 5)
 *
 * Meaning of the times (seconds from the trace origin): a pod is created,
 * then scheduled (bound to a node), then deleted. We take submit =
 * creation and run time = deletion - scheduled. A pod whose
 * scheduled_time is empty stayed Pending for its whole life in the trace:
 * it gets deletion - creation and TRACE_JOB_NEVER_SCHEDULED so that the
 * simulator can decide what to do with it (replaying it as a job that
 * runs that long is what the FGD simulator does).
 *
 * Every field is validated; the first bad one stops the load with
 * "FILE:LINE: field 'NAME': what is wrong (got 'VALUE')".
 */
#include "trace_internal.h"

#include <string.h>

static const char *const pod_columns[11] = {
    "name",          "cpu_milli",     "memory_mib",    "num_gpu",
    "gpu_milli",     "gpu_spec",      "qos",           "pod_phase",
    "creation_time", "deletion_time", "scheduled_time"};

enum {
  COL_NAME,
  COL_CPU,
  COL_MEM,
  COL_NGPU,
  COL_MILLI,
  COL_SPEC,
  COL_QOS,
  COL_PHASE,
  COL_CREATE,
  COL_DELETE,
  COL_SCHED
};

/* A job may ask for at most this many GPUs. Far above any real node or
 * gang (the trace has at most 8) but small enough that num_gpu x
 * gpu_milli stays well inside int32/int64 arithmetic downstream. */
#define MAX_NUM_GPU 1000000

/* Per-record context so the field parsers can report errors briefly. */
typedef struct rec {
  const csvrow *row;
  const char *path;
  trace_error *err;
} rec;

static int bad(const rec *r, int col, const char *why) {
  trace_field_error(r->err, r->path, r->row->line, pod_columns[col], why,
                    r->row->field[col], r->row->len[col]);
  return -1;
}

static int get_int(const rec *r, int col, int64_t max, int64_t *out) {
  char why[TRACE_WHY_MAX];
  if (trace_parse_int(r->row->field[col], r->row->len[col], max, out, why))
    return bad(r, col, why);
  return 0;
}

static int get_time(const rec *r, int col, int64_t *out) {
  char why[TRACE_WHY_MAX];
  if (trace_parse_time_us(r->row->field[col], r->row->len[col], out, why))
    return bad(r, col, why);
  return 0;
}

/* Case-sensitive, as written in the trace. Unknown classes are kept as
 * TRACE_QOS_UNKNOWN rather than rejected: QoS only steers priority. */
static uint8_t parse_qos(const char *s) {
  static const struct {
    const char *name;
    enum trace_qos qos;
  } names[] = {{"LS", TRACE_QOS_LS},
               {"BE", TRACE_QOS_BE},
               {"Burstable", TRACE_QOS_BURSTABLE},
               {"Guaranteed", TRACE_QOS_GUARANTEED}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(s, names[i].name) == 0)
      return (uint8_t)names[i].qos;
  return TRACE_QOS_UNKNOWN;
}

/* The resource columns shared by both layouts. */
static int parse_resources(const rec *r, job_record *j) {
  int64_t cpu, mem, ngpu, milli;
  if (r->row->len[COL_NAME] == 0)
    return bad(r, COL_NAME, "empty, every pod needs a name");
  if (get_int(r, COL_CPU, INT64_MAX, &cpu) ||
      get_int(r, COL_MEM, INT64_MAX, &mem) ||
      get_int(r, COL_NGPU, MAX_NUM_GPU, &ngpu) ||
      get_int(r, COL_MILLI, INT64_MAX, &milli))
    return -1;
  if (milli > 1000)
    return bad(r, COL_MILLI, "outside 0..1000 (milli-GPU per GPU)");
  if (ngpu > 0 && milli == 0)
    return bad(r, COL_MILLI,
               "0 although num_gpu > 0 (a GPU job needs a "
               "share of 1..1000 per GPU)");
  if (ngpu == 0 && milli > 0)
    return bad(r, COL_MILLI, "above 0 although num_gpu is 0");
  j->cpu_milli = cpu;
  j->memory_mib = mem;
  j->num_gpu = (int32_t)ngpu;
  j->gpu_milli = (int32_t)milli;
  return 0;
}

/* creation, deletion and scheduled times -> submit and duration. */
static int parse_times(const rec *r, job_record *j) {
  int64_t create, del, sched = 0;
  if (get_time(r, COL_CREATE, &create) || get_time(r, COL_DELETE, &del))
    return -1;
  int scheduled = r->row->len[COL_SCHED] > 0;
  if (scheduled && get_time(r, COL_SCHED, &sched))
    return -1;
  if (scheduled && sched < create)
    return bad(r, COL_SCHED, "before creation_time");
  if (scheduled && del < sched)
    return bad(r, COL_DELETE, "before scheduled_time");
  if (!scheduled && del < create)
    return bad(r, COL_DELETE, "before creation_time");
  j->submit_us = create;
  j->duration_us = del - (scheduled ? sched : create);
  if (!scheduled)
    j->flags |= TRACE_JOB_NEVER_SCHEDULED;
  return 0;
}

static int add(trace_sink *k, const rec *r, const job_record *j,
               const char *spec) {
  return trace_sink_add(k, j, r->row->field[COL_NAME], spec, r->path, r->err);
}

static int pod_row(trace_sink *k, const csvrow *row, const char *path,
                   trace_error *err) {
  if (csvrow_check_shape(row, pod_columns, 11, path, err))
    return -1;
  rec r = {row, path, err};
  job_record j = {0};
  j.line = row->line;
  if (parse_resources(&r, &j) || parse_times(&r, &j))
    return -1;
  j.qos = parse_qos(row->field[COL_QOS]);
  /* pod_phase is informative only (the times say everything we use). The
   * upstream README writes a missing gpu_spec as "nan" (pandas); the
   * files leave it empty. Both mean "any model". */
  const char *spec = row->field[COL_SPEC];
  if (strcmp(spec, "nan") == 0)
    spec = "";
  return add(k, &r, &j, spec);
}

static int multi_row(trace_sink *k, const csvrow *row, const char *path,
                     trace_error *err) {
  if (csvrow_check_shape(row, pod_columns, 5, path, err))
    return -1;
  rec r = {row, path, err};
  job_record j = {0};
  j.line = row->line;
  if (parse_resources(&r, &j))
    return -1;
  /* No times in this layout: everything arrives at 0 (the FGD "fill"
   * methodology ignores time anyway). */
  j.submit_us = 0;
  j.duration_us = -1;
  j.flags = TRACE_JOB_NO_DURATION;
  return add(k, &r, &j, NULL);
}

const trace_reader trace_alibaba_pod_reader = {
    .format = TRACE_FMT_ALIBABA_POD,
    .what = "Alibaba GPU trace 2023 pod list",
    .columns = pod_columns,
    .ncolumns = 11,
    .has_times = 1,
    .row = pod_row};

const trace_reader trace_alibaba_multi_reader = {
    .format = TRACE_FMT_ALIBABA_POD_MULTI,
    .what = "Alibaba GPU trace 2023 multigpu pod list, no times",
    .columns = pod_columns, /* its first 5 columns */
    .ncolumns = 5,
    .has_times = 0,
    .row = multi_row};
