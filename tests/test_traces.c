/*
 * Check suite for traces/: the Alibaba 2023 pod-list and node-list readers
 * (real files from ../shared/data and hand-made ones), their error
 * messages, trace streams (the same jobs and messages as a whole load, in
 * bounded memory), hostile NUL bytes, the synthetic generator and the
 * pod-list writer.
 */
#include "testutil.h"
#include "trace.h"
#include "trace_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DATA "alibaba-gpu-v2023/"

/* ------------------------------------------------------------ helpers */

static void assert_empty(const trace *t) {
  ck_assert_uint_eq(t->n, 0);
  ck_assert_ptr_null(t->jobs);
  ck_assert_ptr_null(t->names);
  ck_assert_int_eq(t->nspecs, 0);
}

/* Message must contain "PATH:LINE:" (LINE 0 = "PATH:") and, if given,
 * the text want. */
static void assert_msg(const trace_error *err, const char *path, int line,
                       const char *want) {
  char where[600];
  if (line > 0)
    snprintf(where, sizeof where, "%s:%d: ", path, line);
  else
    snprintf(where, sizeof where, "%s: ", path);
  ck_assert_msg(strstr(err->msg, where) != NULL, "'%s' lacks '%s'", err->msg,
                where);
  if (want)
    ck_assert_msg(strstr(err->msg, want) != NULL, "'%s' lacks '%s'", err->msg,
                  want);
}

/* Same jobs (all fields but the source line), names and specs. */
static void assert_same_jobs(const trace *a, const trace *b) {
  ck_assert_uint_eq(a->n, b->n);
  for (size_t i = 0; i < a->n; i++) {
    job_record x = a->jobs[i], y = b->jobs[i];
    x.line = y.line = 0;
    ck_assert_msg(memcmp(&x, &y, sizeof x) == 0, "job %zu differs", i);
    ck_assert_str_eq(trace_job_name(a, i), trace_job_name(b, i));
  }
  ck_assert_uint_eq(a->names_len, b->names_len);
  ck_assert_int_eq(a->nspecs, b->nspecs);
  for (int s = 0; s < a->nspecs; s++)
    ck_assert_str_eq(a->specs[s], b->specs[s]);
}

static const char *const POD_HEADER =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time";
static const char *const MULTI_HEADER =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli";
static const char *const NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model";

/* A small hand-made pod list covering every column feature: quoted name
 * with commas, fractional and exponent times, a never-scheduled pod,
 * shared specs, every QoS and an unknown one. Lines are joined with EOL. */
static const char *const SMALL_ROWS[] = {
    ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
     "creation_time,deletion_time,scheduled_time"),
    "pod-a,12000,16384,1,1000,,LS,Running,0,100,0",
    "\"pod,b\",4000,8192,1,250,V100M16|V100M32,BE,Running,10.5,110.25,12",
    "pod-c,1000,1024,0,0,,Burstable,Pending,20,50,",
    "pod-d,88000,327680,8,1000,G3,Guaranteed,Succeeded,30,1e3,30.000001",
    "pod-e,1,1,2,500,V100M16|V100M32,weird,Failed,40,41,40",
};
#define NSMALL (sizeof SMALL_ROWS / sizeof SMALL_ROWS[0])

/* SMALL_ROWS as one file text: optional BOM, line ending eol, and the
 * final line ending only when final_eol. */
static void small_text(char *buf, size_t size, int bom, const char *eol,
                       int final_eol) {
  size_t o = 0;
  buf[0] = '\0';
  if (bom)
    o += (size_t)snprintf(buf, size, "\xEF\xBB\xBF");
  for (size_t i = 0; i < NSMALL; i++)
    o += (size_t)snprintf(buf + o, size - o, "%s%s", SMALL_ROWS[i],
                          i + 1 < NSMALL || final_eol ? eol : "");
  ck_assert_uint_lt(o, size);
}

static void load_ok(trace *t, const char *path) {
  trace_error err = {{0}};
  int rc = trace_load(t, path, &err);
  ck_assert_msg(rc == 0, "load %s failed: %s", path, err.msg);
}

/* ------------------------------------------------------ real pod lists */

START_TEST(default_trace_facts) {
  char path[4096];
  if (!data_path(path, sizeof path, DATA "openb_pod_list_default.csv"))
    return;
  trace t;
  trace_init(&t);
  load_ok(&t, path);
  ck_assert_uint_eq(t.n, 8152);
  ck_assert_int_eq(t.format, TRACE_FMT_ALIBABA_POD);
  ck_assert_int_eq(t.has_times, 1);
  ck_assert_str_eq(t.path, path);
  size_t never = 0, gpu8 = 0;
  for (size_t i = 0; i < t.n; i++) {
    never += (t.jobs[i].flags & TRACE_JOB_NEVER_SCHEDULED) != 0;
    gpu8 += t.jobs[i].num_gpu == 8;
    ck_assert_int_eq(t.jobs[i].line, (int)i + 2);
    ck_assert_int_ge(t.jobs[i].duration_us, 0);
  }
  ck_assert_uint_eq(never, 897);
  ck_assert_uint_eq(gpu8, 44); /* awk -F, 'NR>1 && $4==8' | wc -l */
  /* Line 2: openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0 */
  const job_record *j = &t.jobs[0];
  ck_assert_str_eq(trace_job_name(&t, 0), "openb-pod-0000");
  ck_assert_int_eq(j->cpu_milli, 12000);
  ck_assert_int_eq(j->memory_mib, 16384);
  ck_assert_int_eq(j->num_gpu, 1);
  ck_assert_int_eq(j->gpu_milli, 1000);
  ck_assert_int_eq(j->gpu_spec, -1);
  ck_assert_int_eq(j->qos, TRACE_QOS_LS);
  ck_assert_int_eq(j->flags, 0);
  ck_assert_int_eq(j->submit_us, 0);
  ck_assert_int_eq(j->duration_us, INT64_C(12537496) * TRACE_US_PER_S);
  ck_assert_int_eq(j->line, 2);
  /* Line 63, never scheduled:
   * openb-pod-0061,11908,47104,1,1000,,BE,Pending,10001278,10001403, */
  j = &t.jobs[61];
  ck_assert_str_eq(trace_job_name(&t, 61), "openb-pod-0061");
  ck_assert_int_eq(j->flags, TRACE_JOB_NEVER_SCHEDULED);
  ck_assert_int_eq(j->qos, TRACE_QOS_BE);
  ck_assert_int_eq(j->submit_us, INT64_C(10001278) * TRACE_US_PER_S);
  ck_assert_int_eq(j->duration_us, INT64_C(125) * TRACE_US_PER_S);
  ck_assert_int_eq(j->line, 63);
  /* Last line: openb-pod-8151,...,12901761,12901792,12901762 */
  j = &t.jobs[8151];
  ck_assert_str_eq(trace_job_name(&t, 8151), "openb-pod-8151");
  ck_assert_int_eq(j->duration_us, INT64_C(30) * TRACE_US_PER_S);
  ck_assert_int_eq(j->gpu_milli, 590);
  ck_assert_int_eq(t.nspecs, 0);
  ck_assert_ptr_null(trace_job_name(&t, 8152));
  trace_free(&t);
  assert_empty(&t);
}
END_TEST

START_TEST(gpuspec_trace_specs) {
  char path[4096];
  if (!data_path(path, sizeof path, DATA "openb_pod_list_gpuspec10.csv"))
    return;
  trace t;
  trace_init(&t);
  load_ok(&t, path);
  ck_assert_uint_eq(t.n, 8152);
  size_t with_spec = 0;
  for (size_t i = 0; i < t.n; i++) {
    ck_assert_int_lt(t.jobs[i].gpu_spec, t.nspecs);
    with_spec += t.jobs[i].gpu_spec >= 0;
  }
  ck_assert_uint_eq(with_spec, 732); /* non-empty $6 */
  ck_assert_int_eq(t.nspecs, 16);    /* distinct non-empty $6 */
  int found = 0;
  for (int s = 0; s < t.nspecs; s++)
    found += strcmp(t.specs[s], "V100M16|V100M32") == 0;
  ck_assert_int_eq(found, 1);
  trace_free(&t);
}
END_TEST

START_TEST(multigpu_layout) {
  char path[4096];
  if (!data_path(path, sizeof path, DATA "openb_pod_list_multigpu20.csv"))
    return;
  trace t;
  trace_init(&t);
  load_ok(&t, path);
  ck_assert_int_eq(t.format, TRACE_FMT_ALIBABA_POD_MULTI);
  ck_assert_int_eq(t.has_times, 0);
  ck_assert_uint_eq(t.n, 8324);
  size_t gpu8 = 0;
  for (size_t i = 0; i < t.n; i++) {
    ck_assert_int_eq(t.jobs[i].submit_us, 0);
    ck_assert_int_eq(t.jobs[i].duration_us, -1);
    ck_assert_int_eq(t.jobs[i].flags, TRACE_JOB_NO_DURATION);
    ck_assert_int_eq(t.jobs[i].gpu_spec, -1);
    ck_assert_int_eq(t.jobs[i].qos, TRACE_QOS_UNKNOWN);
    gpu8 += t.jobs[i].num_gpu == 8;
  }
  ck_assert_uint_eq(gpu8, 141);
  ck_assert_int_eq(t.jobs[1].gpu_milli, 460);
  trace_free(&t);
}
END_TEST

/* Every shipped pod list loads, with the job count of wc -l minus 1. */
START_TEST(all_pod_lists_load) {
  static const struct {
    const char *file;
    size_t jobs;
    int has_times;
  } files[] = {
      {"openb_pod_list_cpu050.csv", 7439, 1},
      {"openb_pod_list_cpu100.csv", 7853, 1},
      {"openb_pod_list_default.csv", 8152, 1},
      {"openb_pod_list_gpushare40.csv", 8152, 1},
      {"openb_pod_list_gpushare60.csv", 8152, 1},
      {"openb_pod_list_gpuspec10.csv", 8152, 1},
      {"openb_pod_list_multigpu20.csv", 8324, 0},
      {"openb_pod_list_multigpu30.csv", 8508, 0},
  };
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    char rel[256], path[4096];
    snprintf(rel, sizeof rel, DATA "%s", files[f].file);
    if (!data_path(path, sizeof path, rel))
      return;
    trace t;
    trace_init(&t);
    load_ok(&t, path);
    ck_assert_uint_eq(t.n, files[f].jobs);
    ck_assert_int_eq(t.has_times, files[f].has_times);
    ck_assert_int_eq(node_list_sniff(path), 0);
    trace_free(&t);
  }
}
END_TEST

/* ------------------------------------------------------ real node lists */

START_TEST(node_lists) {
  char path[4096];
  if (!data_path(path, sizeof path, DATA "openb_node_list_gpu_node.csv"))
    return;
  node_list nl;
  node_list_init(&nl);
  trace_error err = {{0}};
  ck_assert_msg(node_list_load(&nl, path, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(nl.n, 1213);
  int64_t gpus = 0;
  for (size_t i = 0; i < nl.n; i++) {
    gpus += nl.rows[i].gpus;
    ck_assert_int_gt(nl.rows[i].gpus, 0);
    ck_assert_int_gt((int)strlen(nl.rows[i].model), 0);
  }
  ck_assert_int_eq(gpus, 6212);
  /* Line 2: openb-node-0000,64000,262144,2,P100 */
  ck_assert_str_eq(nl.rows[0].name, "openb-node-0000");
  ck_assert_int_eq(nl.rows[0].cpu_milli, 64000);
  ck_assert_int_eq(nl.rows[0].memory_mib, 262144);
  ck_assert_int_eq(nl.rows[0].gpus, 2);
  ck_assert_str_eq(nl.rows[0].model, "P100");
  ck_assert_int_eq(nl.rows[0].line, 2);
  ck_assert_int_eq(node_list_sniff(path), 1);

  if (!data_path(path, sizeof path, DATA "openb_node_list_all_node.csv"))
    return;
  ck_assert_msg(node_list_load(&nl, path, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(nl.n, 1523);
  size_t cpu_only = 0;
  gpus = 0;
  for (size_t i = 0; i < nl.n; i++) {
    gpus += nl.rows[i].gpus;
    if (nl.rows[i].gpus == 0) {
      cpu_only++;
      ck_assert_str_eq(nl.rows[i].model, "");
    }
  }
  ck_assert_uint_eq(cpu_only, 310);
  ck_assert_int_eq(gpus, 6212);
  node_list_free(&nl);
  ck_assert_uint_eq(nl.n, 0);
  ck_assert_ptr_null(nl.rows);

  /* A node list is not a trace: the error says so. */
  if (!data_path(path, sizeof path, DATA "openb_node_list_gpu_node.csv"))
    return;
  trace t;
  trace_init(&t);
  ck_assert_int_eq(trace_load(&t, path, &err), -1);
  assert_msg(&err, path, 1, "unrecognised header");
  assert_msg(&err, path, 1, "node list");
  assert_empty(&t);
}
END_TEST

/* ------------------------------------------------- hand-made pod lists */

START_TEST(small_file_fields) {
  char text[2048], path[600];
  small_text(text, sizeof text, 0, "\n", 1);
  put_text(path, sizeof path, "small.csv", text);
  trace t;
  trace_init(&t);
  load_ok(&t, path);
  ck_assert_uint_eq(t.n, 5);
  ck_assert_int_eq(t.nspecs, 2);
  ck_assert_str_eq(t.specs[0], "V100M16|V100M32");
  ck_assert_str_eq(t.specs[1], "G3");

  ck_assert_str_eq(trace_job_name(&t, 1), "pod,b"); /* quoted commas */
  const job_record *j = &t.jobs[1];
  ck_assert_int_eq(j->line, 3);
  ck_assert_int_eq(j->submit_us, 10500000);
  ck_assert_int_eq(j->duration_us, 98250000); /* 110.25 - 12 */
  ck_assert_int_eq(j->gpu_spec, 0);
  ck_assert_int_eq(j->qos, TRACE_QOS_BE);
  ck_assert_int_eq(j->gpu_milli, 250);

  j = &t.jobs[2];
  ck_assert_int_eq(j->flags, TRACE_JOB_NEVER_SCHEDULED);
  ck_assert_int_eq(j->submit_us, 20000000);
  ck_assert_int_eq(j->duration_us, 30000000); /* 50 - 20 */
  ck_assert_int_eq(j->qos, TRACE_QOS_BURSTABLE);
  ck_assert_int_eq(j->num_gpu, 0);

  j = &t.jobs[3];
  ck_assert_int_eq(j->duration_us, 969999999); /* 1e3 - 30.000001 */
  ck_assert_int_eq(j->gpu_spec, 1);
  ck_assert_int_eq(j->qos, TRACE_QOS_GUARANTEED);

  j = &t.jobs[4];
  ck_assert_int_eq(j->gpu_spec, 0); /* interned once */
  ck_assert_int_eq(j->qos, TRACE_QOS_UNKNOWN);
  ck_assert_int_eq(j->num_gpu, 2);
  ck_assert_int_eq(j->gpu_milli, 500);
  trace_free(&t);
}
END_TEST

/* CRLF + BOM, a missing final newline, and blank lines all give the same
 * records as the clean file (blank lines only move the line numbers). */
START_TEST(small_file_variants) {
  char text[2048], path[600];
  trace clean, v;
  trace_init(&clean);
  trace_init(&v);
  small_text(text, sizeof text, 0, "\n", 1);
  put_text(path, sizeof path, "clean.csv", text);
  load_ok(&clean, path);

  small_text(text, sizeof text, 1, "\r\n", 1);
  put_text(path, sizeof path, "crlf_bom.csv", text);
  load_ok(&v, path);
  ck_assert_uint_eq(v.n, clean.n);
  ck_assert_int_eq(memcmp(v.jobs, clean.jobs, v.n * sizeof *v.jobs), 0);
  ck_assert_int_eq(memcmp(v.names, clean.names, v.names_len), 0);
  assert_same_jobs(&v, &clean);

  small_text(text, sizeof text, 0, "\n", 0);
  put_text(path, sizeof path, "no_final_eol.csv", text);
  load_ok(&v, path);
  ck_assert_int_eq(memcmp(v.jobs, clean.jobs, v.n * sizeof *v.jobs), 0);
  assert_same_jobs(&v, &clean);

  small_text(text, sizeof text, 1, "\r\n", 0);
  put_text(path, sizeof path, "crlf_no_eol.csv", text);
  load_ok(&v, path);
  ck_assert_int_eq(memcmp(v.jobs, clean.jobs, v.n * sizeof *v.jobs), 0);

  small_text(text, sizeof text, 0, "\n\n  \n", 1);
  put_text(path, sizeof path, "blank_lines.csv", text);
  load_ok(&v, path);
  assert_same_jobs(&v, &clean);
  ck_assert_int_eq(v.jobs[0].line, 4); /* header 1, blanks 2-3 */
  ck_assert_int_eq(v.jobs[4].line, 16);
  trace_free(&clean);
  trace_free(&v);
}
END_TEST

/* A quoted name holding a newline spans two physical lines; the records
 * after it still carry their physical line numbers. */
START_TEST(quoted_newline_lines) {
  char path[600], text[1024];
  snprintf(text, sizeof text,
           "%s\n\"two\nlines\",1,1,0,0,,LS,Running,0,1,0\n"
           "next,1,1,0,0,,LS,Running,0,1,0\n"
           "\"say \"\"hi\"\"\",1,1,0,0,,LS,Running,0,1,0\n",
           POD_HEADER);
  put_text(path, sizeof path, "newline.csv", text);
  trace t;
  trace_init(&t);
  load_ok(&t, path);
  ck_assert_uint_eq(t.n, 3);
  ck_assert_str_eq(trace_job_name(&t, 0), "two\nlines");
  ck_assert_int_eq(t.jobs[0].line, 2);
  ck_assert_int_eq(t.jobs[1].line, 4);
  ck_assert_str_eq(trace_job_name(&t, 2), "say \"hi\"");
  ck_assert_int_eq(t.jobs[2].line, 5);

  /* An error after it names line 4. */
  snprintf(text, sizeof text,
           "%s\n\"two\nlines\",1,1,0,0,,LS,Running,0,1,0\n"
           "next,x,1,0,0,,LS,Running,0,1,0\n",
           POD_HEADER);
  put_text(path, sizeof path, "newline_bad.csv", text);
  trace_error err = {{0}};
  ck_assert_int_eq(trace_load(&t, path, &err), -1);
  assert_msg(&err, path, 4, "'cpu_milli'");
  assert_empty(&t);
}
END_TEST

START_TEST(time_boundaries) {
  char path[600], text[1024];
  snprintf(text, sizeof text,
           "%s\nmax,1,1,0,0,,LS,Running,0,9223372036854,0\n"
           "tiny,1,1,0,0,,LS,Running,0.0000005,0.0000014,0.0000005\n",
           POD_HEADER);
  put_text(path, sizeof path, "max.csv", text);
  trace t;
  trace_init(&t);
  load_ok(&t, path);
  ck_assert_int_eq(t.jobs[0].duration_us, TRACE_MAX_TIME_US);
  ck_assert_int_eq(t.jobs[1].submit_us, 1); /* half up */
  ck_assert_int_eq(t.jobs[1].duration_us, 0);
  trace_free(&t);
}
END_TEST

/* ---------------------------------------------- bad pod-list records */

typedef struct bad_case {
  const char *header; /* NULL = the 11-column header */
  const char *body;   /* lines after the header */
  int line;           /* expected line in the message */
  const char *want;   /* expected text: the field name, quoted */
  const char *want2;  /* a second expected text or NULL */
} bad_case;

static const bad_case bad_pods[] = {
    /* truncated line: the first missing field is named */
    {NULL, "p,1,1,1,1000,,LS\n", 2, "'pod_phase'", "missing"},
    {NULL, "p\n", 2, "'cpu_milli'", "missing"},
    {NULL, "p,1,1,1,1000,,LS,Running,0,1,0,extra\n", 2, "too many fields",
     "'extra'"},
    {NULL, "p,abc,1,1,1000,,LS,Running,0,1,0\n", 2, "'cpu_milli'", "'abc'"},
    {NULL, "p,1,,1,1000,,LS,Running,0,1,0\n", 2, "'memory_mib'", "empty"},
    {NULL, "p,-5,1,1,1000,,LS,Running,0,1,0\n", 2, "'cpu_milli'", "negative"},
    {NULL, "p,1,-1,1,1000,,LS,Running,0,1,0\n", 2, "'memory_mib'", "negative"},
    {NULL, "p,1,1,-1,1000,,LS,Running,0,1,0\n", 2, "'num_gpu'", "negative"},
    {NULL, "p,1,1,1,1001,,LS,Running,0,1,0\n", 2, "'gpu_milli'", "'1001'"},
    {NULL, "p,1,1,1,0,,LS,Running,0,1,0\n", 2, "'gpu_milli'", "num_gpu"},
    {NULL, "p,1,1,0,500,,LS,Running,0,1,0\n", 2, "'gpu_milli'", "num_gpu"},
    {NULL, "p,1,1,1000001,1000,,LS,Running,0,1,0\n", 2, "'num_gpu'", "1000000"},
    {NULL, "p,1,1,1.5,1000,,LS,Running,0,1,0\n", 2, "'num_gpu'",
     "not an integer"},
    {NULL, "p,99999999999999999999,1,1,1000,,LS,Running,0,1,0\n", 2,
     "'cpu_milli'", "overflow"},
    {NULL, "p,1,1,1,1000,,LS,Running,nan,1,0\n", 2, "'creation_time'",
     "finite"},
    {NULL, "p,1,1,1,1000,,LS,Running,0,inf,0\n", 2, "'deletion_time'",
     "finite"},
    {NULL, "p,1,1,1,1000,,LS,Running,0,1,-inf\n", 2, "'scheduled_time'",
     "finite"},
    {NULL, "p,1,1,1,1000,,LS,Running,1e300,1e300,1e300\n", 2, "'creation_time'",
     "maximum"},
    {NULL, "p,1,1,1,1000,,LS,Running,0,9223372036854.000001,0\n", 2,
     "'deletion_time'", "maximum"},
    {NULL, "p,1,1,1,1000,,LS,Running,0,99999999999999999999999,0\n", 2,
     "'deletion_time'", "maximum"},
    {NULL, "p,1,1,1,1000,,LS,Running,-1,5,0\n", 2, "'creation_time'",
     "negative"},
    {NULL, "p,1,1,1,1000,,LS,Running,12abc,20,12\n", 2, "'creation_time'",
     "'12abc'"},
    {NULL, "p,1,1,1,1000,,LS,Running,,20,12\n", 2, "'creation_time'", "empty"},
    {NULL, "p,1,1,1,1000,,LS,Running,10,20,\"\"\n", 0, NULL, NULL},
    {NULL, "p,1,1,1,1000,,LS,Running,10,15,16\n", 2, "'deletion_time'",
     "before scheduled_time"},
    {NULL, "p,1,1,1,1000,,LS,Pending,10,5,\n", 2, "'deletion_time'",
     "before creation_time"},
    {NULL, "p,1,1,1,1000,,LS,Running,10,20,5\n", 2, "'scheduled_time'",
     "before creation_time"},
    {NULL, ",1,1,1,1000,,LS,Running,0,1,0\n", 2, "'name'", "empty"},
    /* the line number counts good and blank lines before the bad one */
    {NULL,
     "a,1,1,1,1000,,LS,Running,0,1,0\n\nb,1,1,1,1000,,LS,Running,0,1,0\n"
     "c,1,1,1,1000,,LS,Running,0,1,x\n",
     5, "'scheduled_time'", "'x'"},
    {NULL, "p\"x,1,1,1,1000,,LS,Running,0,1,0\n", 2, "malformed quoting", NULL},
    {NULL, "\"p,1,1,1,1000,,LS,Running,0,1,0\n", 2, "unterminated", NULL},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli", "p,1,1,x,1000\n", 2,
     "'num_gpu'", "'x'"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli", "p,1,1,1\n", 2,
     "'gpu_milli'", "missing"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli", "p,1,1,1,1000,,LS\n", 2,
     "too many fields", NULL},
};
#define NBAD_PODS (int)(sizeof bad_pods / sizeof bad_pods[0])

START_TEST(bad_pod_record) {
  const bad_case *c = &bad_pods[_i];
  char path[600], text[2048], name[64];
  snprintf(text, sizeof text, "%s\n%s", c->header ? c->header : POD_HEADER,
           c->body);
  snprintf(name, sizeof name, "bad%d.csv", _i);
  put_text(path, sizeof path, name, text);
  trace t;
  trace_init(&t);
  trace_error err = {{0}};
  if (c->line == 0) {
    /* A quoted empty field is still empty: "" scheduled_time is allowed. */
    load_ok(&t, path);
    ck_assert_int_eq(t.jobs[0].flags, TRACE_JOB_NEVER_SCHEDULED);
    trace_free(&t);
    return;
  }
  ck_assert_msg(trace_load(&t, path, &err) == -1, "case %d loaded", _i);
  assert_msg(&err, path, c->line, c->want);
  if (c->want2)
    assert_msg(&err, path, c->line, c->want2);
  assert_empty(&t);
}
END_TEST

START_TEST(bad_files) {
  char path[600], text[1024];
  trace t;
  trace_init(&t);
  trace_error err = {{0}};

  put_text(path, sizeof path, "empty.csv", "");
  ck_assert_int_eq(trace_load(&t, path, &err), -1);
  assert_msg(&err, path, 0, "empty file");

  put_text(path, sizeof path, "bom_only.csv", "\xEF\xBB\xBF\r\n\n");
  ck_assert_int_eq(trace_load(&t, path, &err), -1);
  assert_msg(&err, path, 0, "empty file");

  snprintf(text, sizeof text, "%s\n", POD_HEADER);
  put_text(path, sizeof path, "header_only.csv", text);
  ck_assert_int_eq(trace_load(&t, path, &err), -1);
  assert_msg(&err, path, 0, "no jobs after the header");

  snprintf(text, sizeof text, "%s\n\n", MULTI_HEADER);
  put_text(path, sizeof path, "header_only5.csv", text);
  ck_assert_int_eq(trace_load(&t, path, &err), -1);
  assert_msg(&err, path, 0, "no jobs after the header");

  put_text(path, sizeof path, "unknown.csv", "job,cpu,mem\nx,1,2\n");
  ck_assert_int_eq(trace_load(&t, path, &err), -1);
  assert_msg(&err, path, 1, "unrecognised header 'job,cpu,mem'");
  assert_msg(&err, path, 1, POD_HEADER);
  assert_msg(&err, path, 1, MULTI_HEADER);

  /* Column names must match exactly and in order. */
  put_text(path, sizeof path, "swapped.csv",
           "name,memory_mib,cpu_milli,num_gpu,gpu_milli\nx,1,2,0,0\n");
  ck_assert_int_eq(trace_load(&t, path, &err), -1);
  assert_msg(&err, path, 1, "unrecognised header");

  snprintf(path, sizeof path, "%s/does-not-exist.csv", tmpdir());
  ck_assert_int_eq(trace_load(&t, path, &err), -1);
  assert_msg(&err, path, 0, "cannot open: No such file or directory");
  assert_empty(&t);

  /* A failed load empties a trace that held jobs. */
  char text2[2048], good[600];
  small_text(text2, sizeof text2, 0, "\n", 1);
  put_text(good, sizeof good, "good.csv", text2);
  load_ok(&t, good);
  ck_assert_uint_eq(t.n, 5);
  ck_assert_int_eq(trace_load(&t, path, &err), -1);
  assert_empty(&t);
  ck_assert_ptr_null(t.path);
}
END_TEST

/* ------------------------------------------------ hand-made node lists */

START_TEST(node_list_small_and_bad) {
  char path[600], text[1024];
  node_list nl;
  node_list_init(&nl);
  trace_error err = {{0}};

  snprintf(text, sizeof text,
           "\xEF\xBB\xBF%s\r\nn0,32000,262144,0,\r\nn1,96000,786432,8,"
           "V100M32\r\nn2,1000,1000,0,nan\r\nn3,1,1,64,G1",
           NODE_HEADER);
  put_text(path, sizeof path, "nodes.csv", text);
  ck_assert_int_eq(node_list_sniff(path), 1);
  ck_assert_msg(node_list_load(&nl, path, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(nl.n, 4);
  ck_assert_str_eq(nl.rows[0].model, "");
  ck_assert_str_eq(nl.rows[1].model, "V100M32");
  ck_assert_int_eq(nl.rows[1].gpus, 8);
  ck_assert_int_eq(nl.rows[1].line, 3);
  ck_assert_str_eq(nl.rows[2].model, "");
  ck_assert_int_eq(nl.rows[3].gpus, 64);
  node_list_free(&nl);

  static const struct {
    const char *body;
    int line;
    const char *want, *want2;
  } bad[] = {
      {"a,1,1,0,\nb,1,1,0,\na,2,2,0,\n", 4, "'sn'", "first on line 2"},
      {"a,1,1,2,\n", 2, "'model'", "GPUs"},
      {"a,1,1,2,nan\n", 2, "'model'", NULL},
      {"a,1,1,65,G1\n", 2, "'gpu'", "64"},
      {"a,-1,1,0,\n", 2, "'cpu_milli'", "negative"},
      {"a,1,x,0,\n", 2, "'memory_mib'", "'x'"},
      {"a,1,1,0\n", 2, "'model'", "missing"},
      {",1,1,0,\n", 2, "'sn'", "empty"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char name[32];
    snprintf(text, sizeof text, "%s\n%s", NODE_HEADER, bad[i].body);
    snprintf(name, sizeof name, "badnode%zu.csv", i);
    put_text(path, sizeof path, name, text);
    ck_assert_msg(node_list_load(&nl, path, &err) == -1, "case %zu", i);
    assert_msg(&err, path, bad[i].line, bad[i].want);
    if (bad[i].want2)
      assert_msg(&err, path, bad[i].line, bad[i].want2);
    ck_assert_uint_eq(nl.n, 0);
    ck_assert_ptr_null(nl.rows);
  }

  put_text(path, sizeof path, "nodes_empty.csv", "");
  ck_assert_int_eq(node_list_load(&nl, path, &err), -1);
  assert_msg(&err, path, 0, "empty file");
  ck_assert_int_eq(node_list_sniff(path), 0);

  snprintf(text, sizeof text, "%s\n", NODE_HEADER);
  put_text(path, sizeof path, "nodes_header.csv", text);
  ck_assert_int_eq(node_list_load(&nl, path, &err), -1);
  assert_msg(&err, path, 0, "no nodes after the header");

  snprintf(text, sizeof text, "%s\np,1,1,0,0\n", MULTI_HEADER);
  put_text(path, sizeof path, "nodes_wrong.csv", text);
  ck_assert_int_eq(node_list_load(&nl, path, &err), -1);
  assert_msg(&err, path, 1, "unrecognised header");
  assert_msg(&err, path, 1, NODE_HEADER);
  ck_assert_int_eq(node_list_sniff(path), 0);

  snprintf(path, sizeof path, "%s/missing-nodes.csv", tmpdir());
  ck_assert_int_eq(node_list_load(&nl, path, &err), -1);
  assert_msg(&err, path, 0, "cannot open");
  ck_assert_int_eq(node_list_sniff(path), -1);
}
END_TEST

/* ------------------------------------------------- number parsing */

START_TEST(parse_time_cases) {
  static const struct {
    const char *s;
    int64_t us; /* -1: must fail */
  } cases[] = {
      {"0", 0},
      {"12", 12000000},
      {"12.5", 12500000},
      {".5", 500000},
      {"5.", 5000000},
      {"0001", 1000000},
      {"0.000001", 1},
      {"0.0000005", 1},
      {"0.0000004999", 0},
      {"1e3", 1000000000},
      {"1.5E-3", 1500},
      {"1e-400", 0},
      {"-0", 0},
      {"12537496", INT64_C(12537496000000)},
      {"9223372036854", TRACE_MAX_TIME_US},
      {"9223372036854.0000004", TRACE_MAX_TIME_US},
      {"9223372036854.000001", -1},
      {"1e400", -1},
      {"-1", -1},
      {"-0.5", -1},
      {"nan", -1},
      {"NaN", -1},
      {"-inf", -1},
      {"Infinity", -1},
      {"", -1},
      {".", -1},
      {"1e", -1},
      {"1.2.3", -1},
      {" 1", -1},
      {"0x10", -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t us = -7;
    char why[TRACE_WHY_MAX];
    int rc = trace_parse_time_us(cases[i].s, strlen(cases[i].s), &us, why);
    if (cases[i].us < 0) {
      ck_assert_msg(rc == -1, "'%s' accepted as %lld", cases[i].s,
                    (long long)us);
    } else {
      ck_assert_msg(rc == 0, "'%s' rejected: %s", cases[i].s, why);
      ck_assert_msg(us == cases[i].us, "'%s' -> %lld, want %lld", cases[i].s,
                    (long long)us, (long long)cases[i].us);
    }
  }
  int64_t v;
  char why[TRACE_WHY_MAX];
  ck_assert_int_eq(
      trace_parse_int("9223372036854775807", 19, INT64_MAX, &v, why), 0);
  ck_assert_int_eq(v, INT64_MAX);
  ck_assert_int_eq(
      trace_parse_int("9223372036854775808", 19, INT64_MAX, &v, why), -1);
  ck_assert_ptr_nonnull(strstr(why, "overflow"));
  ck_assert_int_eq(trace_parse_int("1.0", 3, INT64_MAX, &v, why), -1);
  ck_assert_int_eq(trace_parse_int("-", 1, INT64_MAX, &v, why), -1);
  ck_assert_int_eq(trace_parse_int("65", 2, 64, &v, why), -1);
  ck_assert_ptr_nonnull(strstr(why, "64"));
}
END_TEST

/* ------------------------------------------------------ trace_add_job */

START_TEST(add_job_specs_and_names) {
  trace t;
  trace_init(&t);
  job_record j = {0};
  j.gpu_spec = 99; /* ignored */
  j.name_off = 99; /* ignored */
  ck_assert_int_eq(trace_add_job(&t, &j, "a", NULL), 0);
  ck_assert_int_eq(trace_add_job(&t, &j, "b", ""), 0);
  ck_assert_int_eq(trace_add_job(&t, &j, "c", "T4"), 0);
  ck_assert_int_eq(trace_add_job(&t, &j, "d", "A10|T4"), 0);
  ck_assert_int_eq(trace_add_job(&t, &j, "e", "T4"), 0);
  for (int i = 0; i < 1000; i++) /* through several reallocations */
    ck_assert_int_eq(trace_add_job(&t, &j, "xxxxxxxxxxxxxxxx", "A10|T4"), 0);
  ck_assert_int_eq(t.jobs[0].gpu_spec, -1);
  ck_assert_int_eq(t.jobs[1].gpu_spec, -1);
  ck_assert_int_eq(t.jobs[2].gpu_spec, 0);
  ck_assert_int_eq(t.jobs[3].gpu_spec, 1);
  ck_assert_int_eq(t.jobs[4].gpu_spec, 0);
  ck_assert_int_eq(t.jobs[1004].gpu_spec, 1);
  ck_assert_int_eq(t.nspecs, 2);
  ck_assert_str_eq(trace_job_name(&t, 0), "a");
  ck_assert_str_eq(trace_job_name(&t, 4), "e");
  ck_assert_str_eq(trace_job_name(&t, 1004), "xxxxxxxxxxxxxxxx");
  ck_assert_uint_eq(t.names_len, 5 * 2 + 1000 * 17);
  trace_free(&t);
  assert_empty(&t);
  trace_free(NULL);
}
END_TEST

/* ------------------------------------------------------------- synth */

START_TEST(synth_deterministic) {
  synth_params p;
  synth_default_params(&p);
  p.seed = 7;
  trace a, b, c;
  trace_init(&a);
  trace_init(&b);
  trace_init(&c);
  trace_error err = {{0}};
  ck_assert_msg(synth_generate(&a, &p, &err) == 0, "%s", err.msg);
  ck_assert_msg(synth_generate(&b, &p, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(a.n, 5000);
  ck_assert_uint_eq(a.n, b.n);
  ck_assert_int_eq(memcmp(a.jobs, b.jobs, a.n * sizeof *a.jobs), 0);
  ck_assert_uint_eq(a.names_len, b.names_len);
  ck_assert_int_eq(memcmp(a.names, b.names, a.names_len), 0);
  p.seed = 8;
  ck_assert_int_eq(synth_generate(&c, &p, &err), 0);
  ck_assert_uint_eq(c.n, a.n);
  ck_assert_int_ne(memcmp(a.jobs, c.jobs, a.n * sizeof *a.jobs), 0);
  /* Regenerating into a used trace replaces it. */
  p.seed = 7;
  ck_assert_int_eq(synth_generate(&c, &p, &err), 0);
  ck_assert_int_eq(memcmp(a.jobs, c.jobs, a.n * sizeof *a.jobs), 0);
  trace_free(&a);
  trace_free(&b);
  trace_free(&c);
}
END_TEST

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

START_TEST(synth_sanity) {
  synth_params p;
  synth_default_params(&p);
  ck_assert_uint_eq(p.jobs, 5000);
  ck_assert_int_eq(p.nshapes, 0);
  int ns = 0;
  const synth_shape *sh = synth_default_shapes(&ns);
  ck_assert_int_ge(ns, 6);
  /* The documented rate: 0.9 x 192 GPUs of offered load. */
  double wsum = 0, milli = 0, cpu_only = 0, frac = 0;
  for (int k = 0; k < ns; k++) {
    wsum += sh[k].weight;
    milli += sh[k].weight * sh[k].num_gpu * sh[k].gpu_milli;
    cpu_only += sh[k].num_gpu == 0;
    frac += sh[k].num_gpu == 1 && sh[k].gpu_milli < 1000;
  }
  ck_assert_double_eq_tol(wsum, 100.0, 1e-9);
  ck_assert_double_eq_tol(milli / wsum, 1361.0, 1e-9);
  ck_assert_double_ge(cpu_only, 1);
  ck_assert_double_ge(frac, 3);
  double mean_dur = 1800.0 * exp(0.5);
  ck_assert_double_eq_tol(p.arrival_rate * mean_dur * 1.361, 0.9 * 192, 1e-6);
  ck_assert_double_eq_tol(p.arrival_rate, 0.04278, 1e-5);

  trace t;
  trace_init(&t);
  trace_error err = {{0}};
  ck_assert_msg(synth_generate(&t, &p, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(t.n, 5000);
  ck_assert_int_eq(t.has_times, 1);
  ck_assert_str_eq(t.path, "<synthetic>");
  size_t per_shape[16] = {0};
  int64_t *dur = malloc(t.n * sizeof *dur);
  ck_assert_ptr_nonnull(dur);
  int64_t prev = 0;
  for (size_t i = 0; i < t.n; i++) {
    const job_record *j = &t.jobs[i];
    ck_assert_int_ge(j->submit_us, prev);
    prev = j->submit_us;
    ck_assert_int_ge(j->duration_us, TRACE_US_PER_S);
    ck_assert_int_le(j->duration_us, INT64_C(604800) * TRACE_US_PER_S);
    ck_assert_int_eq(j->duration_us % TRACE_US_PER_S, 0);
    ck_assert_int_eq(j->gpu_spec, -1);
    ck_assert_int_eq(j->line, 0);
    dur[i] = j->duration_us;
    int match = -1;
    for (int k = 0; k < ns && match < 0; k++)
      if (j->cpu_milli == sh[k].cpu_milli &&
          j->memory_mib == sh[k].memory_mib && j->num_gpu == sh[k].num_gpu &&
          j->gpu_milli == sh[k].gpu_milli)
        match = k;
    ck_assert_msg(match >= 0, "job %zu has no default shape", i);
    per_shape[match]++;
    char name[32];
    snprintf(name, sizeof name, "syn-%zu", i);
    ck_assert_str_eq(trace_job_name(&t, i), name);
  }
  /* Mean inter-arrival (first gap from 0) within 10% of 1/rate. */
  double mean_gap = (double)t.jobs[t.n - 1].submit_us / 1e6 / (double)t.n;
  ck_assert_double_eq_tol(mean_gap, 1.0 / p.arrival_rate, 0.1 / p.arrival_rate);
  /* Median duration within 10% of exp(mu) = 1800 s. */
  qsort(dur, t.n, sizeof *dur, cmp_i64);
  double median = (double)dur[t.n / 2] / 1e6;
  ck_assert_double_eq_tol(median, 1800.0, 180.0);
  /* Shape frequencies within 3 points of their weights (4+ sigma). */
  for (int k = 0; k < ns; k++)
    ck_assert_double_eq_tol(100.0 * (double)per_shape[k] / (double)t.n,
                            sh[k].weight / wsum * 100.0, 3.0);
  free(dur);
  trace_free(&t);
}
END_TEST

START_TEST(synth_custom_and_bad_params) {
  static const synth_shape one[] = {{1.0, 2000, 4096, 2, 1000}};
  synth_params p;
  synth_default_params(&p);
  p.jobs = 50;
  p.shapes = one;
  p.nshapes = 1;
  p.duration_sigma = 0; /* every job runs exp(mu) = 1800 s */
  trace t;
  trace_init(&t);
  trace_error err = {{0}};
  ck_assert_msg(synth_generate(&t, &p, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(t.n, 50);
  for (size_t i = 0; i < t.n; i++) {
    ck_assert_int_eq(t.jobs[i].num_gpu, 2);
    ck_assert_int_eq(t.jobs[i].duration_us, INT64_C(1800) * TRACE_US_PER_S);
  }
  p.max_duration_s = 60.5; /* cap at whole seconds */
  ck_assert_int_eq(synth_generate(&t, &p, &err), 0);
  ck_assert_int_eq(t.jobs[0].duration_us, INT64_C(60) * TRACE_US_PER_S);

  static const synth_shape zero_w[] = {{0.0, 1, 1, 1, 1000}};
  static const synth_shape many_gpu[] = {{1.0, 1, 1, 65, 1000}};
  static const synth_shape no_milli[] = {{1.0, 1, 1, 1, 0}};
  static const synth_shape cpu_milli[] = {{1.0, 1, 1, 0, 500}};
  static const synth_shape neg_cpu[] = {{1.0, -1, 1, 0, 0}};
  static const synth_shape big_milli[] = {{1.0, 1, 1, 1, 1001}};
  static const struct {
    int what;
    const synth_shape *shapes;
    const char *want;
  } bad[] = {
      {0, NULL, "jobs"},           {1, NULL, "arrival_rate"},
      {2, NULL, "arrival_rate"},   {3, NULL, "duration_sigma"},
      {4, NULL, "max_duration_s"}, {5, NULL, "duration_mu"},
      {6, zero_w, "weight"},       {6, many_gpu, "num_gpu"},
      {6, no_milli, "gpu_milli"},  {6, cpu_milli, "gpu_milli"},
      {6, neg_cpu, "cpu_milli"},   {6, big_milli, "gpu_milli"},
      {7, NULL, "nshapes"},        {8, NULL, "maximum time"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    synth_default_params(&p);
    p.jobs = 10;
    switch (bad[i].what) {
    case 0:
      p.jobs = 0;
      break;
    case 1:
      p.arrival_rate = 0;
      break;
    case 2:
      p.arrival_rate = INFINITY;
      break;
    case 3:
      p.duration_sigma = -1;
      break;
    case 4:
      p.max_duration_s = 0;
      break;
    case 5:
      p.duration_mu = NAN;
      break;
    case 6:
      p.shapes = bad[i].shapes, p.nshapes = 1;
      break;
    case 7:
      p.nshapes = -1;
      break;
    case 8:
      p.arrival_rate = 1e-300;
      break;
    }
    ck_assert_int_eq(synth_generate(&t, &p, &err), -1);
    ck_assert_msg(strstr(err.msg, bad[i].want) != NULL, "case %zu: '%s'", i,
                  err.msg);
    assert_empty(&t);
  }
}
END_TEST

/* -------------------------------------------------------------- writer */

START_TEST(write_round_trip_synth) {
  synth_params p;
  synth_default_params(&p);
  p.jobs = 500;
  p.seed = 42;
  trace a, b;
  trace_init(&a);
  trace_init(&b);
  trace_error err = {{0}};
  ck_assert_int_eq(synth_generate(&a, &p, &err), 0);
  char path[600];
  snprintf(path, sizeof path, "%s/synth.csv", tmpdir());
  ck_assert_msg(trace_write_alibaba(&a, path, &err) == 0, "%s", err.msg);
  char tmp[640];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  ck_assert_int_ne(access(tmp, F_OK), 0); /* renamed away */
  load_ok(&b, path);
  ck_assert_int_eq(b.format, TRACE_FMT_ALIBABA_POD);
  ck_assert_int_eq(b.has_times, 1);
  assert_same_jobs(&a, &b);
  for (size_t i = 0; i < b.n; i++)
    ck_assert_int_eq(b.jobs[i].line, (int)i + 2);
  /* Submit times are microsecond-exact, so some are written with
   * decimals: check one line's text directly. */
  FILE *f = fopen(path, "r");
  char line[512];
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  ck_assert_str_eq(line, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,"
                         "gpu_spec,qos,pod_phase,creation_time,"
                         "deletion_time,scheduled_time\n");
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  ck_assert_ptr_nonnull(strstr(line, "syn-0,"));
  ck_assert_ptr_nonnull(strstr(line, ",,,Running,"));
  fclose(f);
  trace_free(&a);
  trace_free(&b);
}
END_TEST

START_TEST(write_round_trip_files) {
  char text[2048], src[600], out[600];
  small_text(text, sizeof text, 1, "\r\n", 0);
  put_text(src, sizeof src, "small_src.csv", text);
  snprintf(out, sizeof out, "%s/small_out.csv", tmpdir());
  trace a, b;
  trace_init(&a);
  trace_init(&b);
  trace_error err = {{0}};
  load_ok(&a, src);
  ck_assert_msg(trace_write_alibaba(&a, out, &err) == 0, "%s", err.msg);
  load_ok(&b, out);
  assert_same_jobs(&a, &b); /* quoted name, specs, qos, never-scheduled */
  ck_assert_int_eq(memcmp(a.jobs, b.jobs, a.n * sizeof *a.jobs), 0);

  char path[4096];
  if (data_path(path, sizeof path, DATA "openb_pod_list_gpuspec10.csv")) {
    load_ok(&a, path);
    ck_assert_msg(trace_write_alibaba(&a, out, &err) == 0, "%s", err.msg);
    load_ok(&b, out);
    assert_same_jobs(&a, &b);
    ck_assert_int_eq(memcmp(a.jobs, b.jobs, a.n * sizeof *a.jobs), 0);
  }
  if (data_path(path, sizeof path, DATA "openb_pod_list_multigpu20.csv")) {
    load_ok(&a, path);
    ck_assert_int_eq(trace_write_alibaba(&a, out, &err), -1);
    assert_msg(&err, out, 0, "no duration");
  }
  snprintf(out, sizeof out, "%s/no/such/dir/x.csv", tmpdir());
  load_ok(&a, src);
  ck_assert_int_eq(trace_write_alibaba(&a, out, &err), -1);
  ck_assert_ptr_nonnull(strstr(err.msg, "cannot open"));
  trace_free(&a);
  trace_free(&b);
}
END_TEST

/* ------------------------------------------------------------ streams */

/* Streams path to its end into a trace (names and spec strings copied, so
 * it compares with trace_load_ex). Returns the stream's last rc (0 end,
 * -1 error) and leaves the message in err. rewinds: how many times the
 * stream is read again from the start after the first pass, each pass
 * checked against the first. */
static int stream_all(const char *path, const trace_load_opts *o, trace *out,
                      trace_error *err, int rewinds) {
  trace_init(out);
  trace_stream *s;
  if (trace_stream_open(&s, path, o, err) != 0)
    return -2;
  int rc = 0;
  for (int pass = 0; pass <= rewinds; pass++) {
    trace t;
    trace_init(&t);
    job_record j;
    const char *name;
    while ((rc = trace_stream_next(s, &j, &name, err)) == 1) {
      const trace *m = trace_stream_meta(s);
      ck_assert_int_lt(j.gpu_spec, m->nspecs);
      ck_assert_int_eq(j.name_off, 0);
      ck_assert_int_eq(
          trace_add_job(&t, &j, name, j.gpu_spec >= 0 ? m->specs[j.gpu_spec]
                                                      : NULL),
          0);
    }
    const trace *m = trace_stream_meta(s);
    t.skipped = m->skipped;
    t.format = m->format;
    t.has_times = m->has_times;
    if (pass == 0) {
      *out = t;
    } else {
      assert_same_jobs(out, &t);
      for (size_t i = 0; i < t.n; i++)
        ck_assert_int_eq(out->jobs[i].line, t.jobs[i].line);
      ck_assert_uint_eq(out->skipped, t.skipped);
      trace_free(&t);
    }
    if (rc < 0 || pass == rewinds)
      break;
    ck_assert_int_eq(trace_stream_rewind(s, err), 0);
  }
  /* After the end (or an error) the stream stays there. */
  job_record j;
  const char *name;
  trace_error again = {{0}};
  ck_assert_int_eq(trace_stream_next(s, &j, &name, &again), rc);
  if (rc < 0)
    ck_assert_str_eq(again.msg, err->msg);
  trace_stream_close(s);
  return rc;
}

/* The stream gives exactly what trace_load_ex gives: the same records
 * (names, specs, lines, skip counts) or the same message. */
static void assert_stream_is_load(const char *path, enum trace_format f) {
  trace_load_opts o = TRACE_LOAD_OPTS_INIT;
  o.format = f;
  trace a, b;
  trace_init(&a);
  trace_error ea = {{0}}, eb = {{0}};
  int ra = trace_load_ex(&a, path, &o, &ea);
  int rb = stream_all(path, &o, &b, &eb, 2);
  if (ra != 0) {
    ck_assert_msg(rb != 0, "%s: load failed ('%s'), stream did not", path,
                  ea.msg);
    ck_assert_str_eq(ea.msg, eb.msg);
    trace_free(&b);
    return;
  }
  ck_assert_msg(rb == 0, "%s: stream failed: %s", path, eb.msg);
  assert_same_jobs(&a, &b);
  for (size_t i = 0; i < a.n; i++)
    ck_assert_int_eq(a.jobs[i].line, b.jobs[i].line);
  ck_assert_uint_eq(a.skipped, b.skipped);
  ck_assert_int_eq(a.format, b.format);
  ck_assert_int_eq(a.has_times, b.has_times);
  trace_free(&a);
  trace_free(&b);
}

static const char *const PAI_TEXT =
    "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,"
    "plan_mem,plan_gpu,gpu_type\n"
    "j1,worker,3,Terminated,100,200,600,29.296875,50,V100\n"
    "j2,ps,1,Running,,,50,2,0,\n"
    "j3,w,2.0,Failed,150.5,160,50,2,250,T4\n";
static const char *const PHILLY_TEXT =
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "2017-10-09 07:01:55,66,1,66,a\n"
    "2017-10-08 07:01:55,1,8,8,b\n"
    "2017-10-10 00:00:00,5,0,0,c\n";
static const char *const SWF_TEXT =
    "; Version: 2.2\n"
    "1 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
    "2 3 -1 5 8 -1 -1 8 -1 -1 3 -1 -1 -1 -1 -1 -1 -1\n"
    "; a remark\n"
    "3 10 3 -1 -1 -1 -1 16 3600 -1 0 1 1 -1 -1 -1 -1 -1\n";

START_TEST(stream_equals_load) {
  char path[600], text[2048];
  small_text(text, sizeof text, 1, "\r\n", 0);
  put_text(path, sizeof path, "small.csv", text);
  assert_stream_is_load(path, TRACE_FMT_UNKNOWN);
  assert_stream_is_load(path, TRACE_FMT_ALIBABA_POD);
  snprintf(text, sizeof text, "%s\na,1,2,1,500\nb,0,0,0,0\n", MULTI_HEADER);
  put_text(path, sizeof path, "multi.csv", text);
  assert_stream_is_load(path, TRACE_FMT_UNKNOWN);
  put_text(path, sizeof path, "pai.csv", PAI_TEXT);
  assert_stream_is_load(path, TRACE_FMT_UNKNOWN);
  /* Headerless (forced) PAI: the first record is data. */
  put_text(path, sizeof path, "pai_nohdr.csv", strchr(PAI_TEXT, '\n') + 1);
  assert_stream_is_load(path, TRACE_FMT_PAI);
  put_text(path, sizeof path, "philly.csv", PHILLY_TEXT);
  assert_stream_is_load(path, TRACE_FMT_UNKNOWN);
  put_text(path, sizeof path, "t.swf", SWF_TEXT);
  assert_stream_is_load(path, TRACE_FMT_UNKNOWN);
  put_text(path, sizeof path, "g.csv",
           "id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,"
           "gpu_model\na,0,60,1,250,4000,16384,V100M16|V100M32\n"
           "b,1.5,,2,1000,0,0,\nc,2,1,1,1000,0,0,A100-SXM4-80GB\n");
  assert_stream_is_load(path, TRACE_FMT_UNKNOWN);
  put_text(path, sizeof path, "ti.csv",
           "job_id,num_gpu,submit_time,iterations,model_name,duration,"
           "interval\n0,1,0,1000,resnet50,164,1\n1,8,30,500,vgg16,147,10\n");
  assert_stream_is_load(path, TRACE_FMT_UNKNOWN);

  /* What the stream hands out: PAI instances by name, Philly shifted to
   * its earliest timestamp, SWF skips counted. */
  trace t;
  trace_error err = {{0}};
  put_text(path, sizeof path, "pai.csv", PAI_TEXT);
  ck_assert_int_eq(stream_all(path, NULL, &t, &err, 0), 0);
  ck_assert_uint_eq(t.n, 5);
  ck_assert_str_eq(trace_job_name(&t, 0), "j1/worker/0");
  ck_assert_str_eq(trace_job_name(&t, 2), "j1/worker/2");
  ck_assert_str_eq(trace_job_name(&t, 4), "j3/w/1");
  ck_assert_int_eq(t.jobs[4].line, 4);
  ck_assert_uint_eq(t.skipped, 1);
  trace_free(&t);
  put_text(path, sizeof path, "philly.csv", PHILLY_TEXT);
  ck_assert_int_eq(stream_all(path, NULL, &t, &err, 1), 0);
  ck_assert_int_eq(t.jobs[0].submit_us, 86400 * TRACE_US_PER_S);
  ck_assert_int_eq(t.jobs[1].submit_us, 0);
  ck_assert_str_eq(trace_job_name(&t, 2), "philly-3");
  trace_free(&t);
  put_text(path, sizeof path, "t.swf", SWF_TEXT);
  ck_assert_int_eq(stream_all(path, NULL, &t, &err, 1), 0);
  ck_assert_uint_eq(t.n, 2);
  ck_assert_uint_eq(t.skipped, 1);
  ck_assert_int_eq(t.jobs[1].line, 5);
  trace_free(&t);
}
END_TEST

/* Errors: before the first job, open reports them; after it, the jobs
 * before the bad record come first, then the load's message, for good. */
START_TEST(stream_errors) {
  char path[600], text[2048];
  trace t;
  trace_error err = {{0}};
  static char dummy;
  trace_stream *s = (trace_stream *)(void *)&dummy; /* set to NULL */
  put_text(path, sizeof path, "empty.csv", "");
  ck_assert_int_eq(trace_stream_open(&s, path, NULL, &err), -1);
  ck_assert_ptr_null(s);
  assert_msg(&err, path, 0, "empty file");
  snprintf(text, sizeof text, "%s\n", POD_HEADER);
  put_text(path, sizeof path, "hdr.csv", text);
  ck_assert_int_eq(trace_stream_open(&s, path, NULL, &err), -1);
  assert_msg(&err, path, 0, "no jobs after the header");
  put_text(path, sizeof path, "bad1.csv", "job,cpu\nx,1\n");
  ck_assert_int_eq(trace_stream_open(&s, path, NULL, NULL), -1);
  snprintf(text, sizeof text, "%s\na,1,1,1,1000,,LS,Running,0,10,0\n"
           "b,1,1,1,1000,,LS,Running,0,10,0\nc,x,1,1,1000,,LS,Running,0,10,0\n",
           POD_HEADER);
  put_text(path, sizeof path, "bad4.csv", text);
  ck_assert_int_eq(stream_all(path, NULL, &t, &err, 0), -1);
  ck_assert_uint_eq(t.n, 2);
  assert_msg(&err, path, 4, "field 'cpu_milli'");
  trace_free(&t);
  assert_stream_is_load(path, TRACE_FMT_UNKNOWN);
  /* A Philly list is read whole at open: its error is open's. */
  snprintf(text, sizeof text, "%s2017-13-01 00:00:00,1,1,1,a\n", PHILLY_TEXT);
  put_text(path, sizeof path, "philly_bad.csv", text);
  ck_assert_int_eq(trace_stream_open(&s, path, NULL, &err), -1);
  assert_msg(&err, path, 5, "field 'timestamp'");
  /* Records ended by bare CRs share one line piece: the job before the
   * bad record still comes first. */
  snprintf(text, sizeof text, "%s\ra,1,1,1,1000,,LS,Running,0,10,0\r"
           "b,1,1,1,1000,,LS,Running,0,1,5\r",
           POD_HEADER);
  put_text(path, sizeof path, "cr.csv", text);
  ck_assert_int_eq(stream_all(path, NULL, &t, &err, 0), -1);
  ck_assert_uint_eq(t.n, 1);
  assert_msg(&err, path, 1, "field 'deletion_time'");
  trace_free(&t);
  assert_stream_is_load(path, TRACE_FMT_UNKNOWN);
  trace_stream_close(NULL);
}
END_TEST

/* The memory an open stream holds does not grow with the file: a PAI task
 * of 100,000 instances is one window entry, and a 200,000-line file holds
 * what its first lines did. */
START_TEST(stream_bounded_memory) {
  char path[600];
  put_text(path, sizeof path, "pai_big.csv",
           "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,"
           "plan_mem,plan_gpu,gpu_type\n"
           "big,w,100000,Terminated,1,2,100,1,100,T4\n");
  trace_stream *s;
  trace_error err = {{0}};
  ck_assert_int_eq(trace_stream_open(&s, path, NULL, &err), 0);
  size_t at_open = trace_stream_footprint(s);
  job_record j;
  const char *name;
  int64_t n = 0;
  char want[64];
  while (trace_stream_next(s, &j, &name, &err) == 1) {
    snprintf(want, sizeof want, "big/w/%" PRId64, n);
    ck_assert_str_eq(name, want);
    n++;
  }
  ck_assert_int_eq(n, 100000);
  ck_assert_uint_le(trace_stream_footprint(s), at_open + 64);
  ck_assert_uint_lt(at_open, 200 << 10);
  trace_stream_close(s);

  /* 200,000 generic jobs (each with a spec of its own among 4). */
  snprintf(path, sizeof path, "%s/long.csv", tmpdir());
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  fputs("id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,"
        "gpu_model\n",
        f);
  for (int i = 0; i < 200000; i++)
    fprintf(f, "job-%d,%d.5,60,1,500,1000,1024,M%d\n", i, i, i % 4);
  ck_assert_int_eq(fclose(f), 0);
  ck_assert_int_eq(trace_stream_open(&s, path, NULL, &err), 0);
  size_t early = 0;
  for (n = 0; trace_stream_next(s, &j, &name, &err) == 1; n++) {
    if (n == 1000)
      early = trace_stream_footprint(s);
    ck_assert_int_eq(j.line, n + 2);
  }
  ck_assert_int_eq(n, 200000);
  ck_assert_uint_eq(trace_stream_footprint(s), early);
  ck_assert_uint_lt(early, 200 << 10);
  ck_assert_int_eq(trace_stream_meta(s)->nspecs, 4);
  trace_stream_close(s);
}
END_TEST

/* An unterminated quote near the top of a large file is refused once the
 * record passes 16 MiB, not buffered to the end of the file. */
START_TEST(unterminated_quote_bounded) {
  char path[600];
  snprintf(path, sizeof path, "%s/quote.csv", tmpdir());
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "%s\n\"a,", POD_HEADER);
  static char line[4096];
  memset(line, 'x', sizeof line - 1);
  line[sizeof line - 2] = '\n';
  for (int i = 0; i < 5000; i++) /* 20 MB */
    fputs(line, f);
  ck_assert_int_eq(fclose(f), 0);
  trace t;
  trace_init(&t);
  trace_error err = {{0}};
  ck_assert_int_eq(trace_load(&t, path, &err), -1);
  assert_msg(&err, path, 2, "record longer than 16777216 bytes");
}
END_TEST

/* A NUL byte in a text trace is "PATH:LINE: NUL byte (binary data?)" at
 * its line, detected or forced, with or without a BOM and CRLF (the
 * fuzzer found a file whose result changed with a BOM in front: SWF's
 * gzgets cut lines at the NUL). */
START_TEST(nul_bytes) {
  static const struct {
    const char *name;
    const char *text;
    size_t len;
    int line;
    enum trace_format forced;
  } cases[] = {
#define TEXT(s) s, sizeof s - 1
      {"fuzz.csv", TEXT("\xEF\xBB\x00\x0B\x96\n\xBF\n\n;"), 1,
       TRACE_FMT_UNKNOWN},
      {"hdr.csv", TEXT("name\0,x\nb\n"), 1, TRACE_FMT_UNKNOWN},
      {"row.csv",
       TEXT("id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,"
            "gpu_model\na,0,1,0,0,0,0,\n\"b\0\",0,1,0,0,0,0,\n"),
       3, TRACE_FMT_GENERIC},
      {"blank.csv", TEXT("\n\n  \0\n"), 3, TRACE_FMT_UNKNOWN},
      {"t.swf",
       TEXT("; c\n1 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
            "2 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 \0 -1\n"),
       3, TRACE_FMT_SWF},
      {"nul_only", TEXT("\0"), 1, TRACE_FMT_UNKNOWN},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    for (int variant = 0; variant < 3; variant++) {
      /* 0 plain, 1 BOM in front, 2 CRLF line ends */
      char text[512], path[600], name[64];
      size_t n = 0;
      if (variant == 1) {
        memcpy(text, "\xEF\xBB\xBF", 3);
        n = 3;
      }
      for (size_t i = 0; i < cases[c].len; i++) {
        if (variant == 2 && cases[c].text[i] == '\n')
          text[n++] = '\r';
        text[n++] = cases[c].text[i];
      }
      ck_assert(memchr(text, '\0', n) != NULL);
      snprintf(name, sizeof name, "v%d-%s", variant, cases[c].name);
      put_file(path, sizeof path, name, text, n);
      for (int forced = 0; forced < 2; forced++) {
        trace_load_opts o = TRACE_LOAD_OPTS_INIT;
        if (forced)
          o.format = cases[c].forced;
        trace t;
        trace_init(&t);
        trace_error err = {{0}};
        ck_assert_msg(trace_load_ex(&t, path, &o, &err) == -1, "%s loaded",
                      path);
        assert_empty(&t);
        char want[700];
        snprintf(want, sizeof want, "%s:%d: NUL byte (binary data?)", path,
                 cases[c].line);
        ck_assert_msg(strcmp(err.msg, want) == 0, "'%s' is not '%s'", err.msg,
                      want);
      }
    }
  }
  /* The node-list reader shares the CSV layer. */
  char path[600];
  put_file(path, sizeof path, "nodes_nul.csv",
           TEXT("sn,cpu_milli,memory_mib,gpu,model\nn\0,1,1,0,\n"));
#undef TEXT
  node_list nl;
  node_list_init(&nl);
  trace_error err = {{0}};
  ck_assert_int_eq(node_list_load(&nl, path, &err), -1);
  assert_msg(&err, path, 2, "NUL byte (binary data?)");
}
END_TEST

/* schedsim generate streams: synth_gen gives synth_generate's jobs, and a
 * trace_writer fed job by job writes trace_write_alibaba's bytes. */
START_TEST(generate_streamed) {
  synth_params p;
  synth_default_params(&p);
  p.jobs = 3000;
  p.seed = 11;
  trace whole;
  trace_init(&whole);
  trace_error err = {{0}};
  ck_assert_int_eq(synth_generate(&whole, &p, &err), 0);
  synth_gen *g;
  ck_assert_int_eq(synth_gen_open(&g, &p, &err), 0);
  char a[600], b[600];
  snprintf(a, sizeof a, "%s/whole.csv", tmpdir());
  snprintf(b, sizeof b, "%s/streamed.csv", tmpdir());
  trace_writer *w;
  ck_assert_int_eq(trace_writer_open(&w, b, &err), 0);
  job_record j;
  const char *name;
  size_t n = 0;
  while (synth_gen_next(g, &j, &name, &err) == 1) {
    ck_assert_uint_lt(n, whole.n);
    ck_assert(memcmp(&j, &whole.jobs[n], offsetof(job_record, name_off)) == 0);
    ck_assert_str_eq(name, trace_job_name(&whole, n));
    ck_assert_int_eq(trace_writer_put(w, &j, name, NULL, &err), 0);
    n++;
  }
  ck_assert_uint_eq(n, 3000);
  synth_gen_close(g);
  ck_assert_int_eq(access(b, F_OK), -1); /* only PATH.tmp.PID until commit */
  ck_assert_int_eq(trace_writer_commit(w, &err), 0);
  ck_assert_int_eq(trace_write_alibaba(&whole, a, &err), 0);
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  ck_assert(fa && fb);
  int ca, cb;
  do {
    ca = fgetc(fa);
    cb = fgetc(fb);
    ck_assert_int_eq(ca, cb);
  } while (ca != EOF);
  fclose(fa);
  fclose(fb);
  /* A job that cannot be written: abort leaves neither file. */
  snprintf(b, sizeof b, "%s/aborted.csv", tmpdir());
  ck_assert_int_eq(trace_writer_open(&w, b, &err), 0);
  j.duration_us = -1;
  ck_assert_int_eq(trace_writer_put(w, &j, "x", NULL, &err), -1);
  ck_assert_ptr_nonnull(strstr(err.msg, "job 0 ('x') has no duration"));
  trace_writer_abort(w);
  char tmp[700];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", b, (long)getpid());
  ck_assert_int_eq(access(b, F_OK), -1);
  ck_assert_int_eq(access(tmp, F_OK), -1);
  trace_free(&whole);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("traces");
  TCase *tc = tcase_create("alibaba");
  tcase_add_test(tc, default_trace_facts);
  tcase_add_test(tc, gpuspec_trace_specs);
  tcase_add_test(tc, multigpu_layout);
  tcase_add_test(tc, all_pod_lists_load);
  tcase_add_test(tc, small_file_fields);
  tcase_add_test(tc, small_file_variants);
  tcase_add_test(tc, quoted_newline_lines);
  tcase_add_test(tc, time_boundaries);
  tcase_add_loop_test(tc, bad_pod_record, 0, NBAD_PODS);
  tcase_add_test(tc, bad_files);
  tcase_add_test(tc, parse_time_cases);
  tcase_add_test(tc, add_job_specs_and_names);
  suite_add_tcase(s, tc);

  tc = tcase_create("stream");
  tcase_add_test(tc, stream_equals_load);
  tcase_add_test(tc, stream_errors);
  tcase_add_test(tc, stream_bounded_memory);
  tcase_add_test(tc, nul_bytes);
  tcase_add_test(tc, unterminated_quote_bounded);
  tcase_add_test(tc, generate_streamed);
  suite_add_tcase(s, tc);

  tc = tcase_create("nodes");
  tcase_add_test(tc, node_lists);
  tcase_add_test(tc, node_list_small_and_bad);
  suite_add_tcase(s, tc);

  tc = tcase_create("synth");
  tcase_add_test(tc, synth_deterministic);
  tcase_add_test(tc, synth_sanity);
  tcase_add_test(tc, synth_custom_and_bad_params);
  suite_add_tcase(s, tc);

  tc = tcase_create("write");
  tcase_add_test(tc, write_round_trip_synth);
  tcase_add_test(tc, write_round_trip_files);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(suite()); }
