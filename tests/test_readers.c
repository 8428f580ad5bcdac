/*
 * Check suite for the trace readers of the research workflow: SWF (plain
 * and gzip), Alibaba PAI 2020 task table, Tiresias, Philly and the generic
 * CSV. Real files from ../shared/data with exact counts and field values
 * (checked independently with awk and Python when the tests were written),
 * hand-made files for every mapping rule, and bad inputs whose messages
 * must name FILE:LINE and the field.
 */
#include "testutil.h"
#include "trace.h"
#include "trace_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define US TRACE_US_PER_S

/* ------------------------------------------------------------ helpers */

static void put_gz(char *out, size_t size, const char *name, const char *text) {
  snprintf(out, size, "%s/%s", tmpdir(), name);
  gzFile g = gzopen(out, "wb");
  ck_assert_ptr_nonnull(g);
  ck_assert_int_eq(gzwrite(g, text, (unsigned)strlen(text)), (int)strlen(text));
  ck_assert_int_eq(gzclose(g), Z_OK);
}

static void load_ok(trace *t, const char *path, const trace_load_opts *o) {
  trace_error err;
  err.msg[0] = 0;
  ck_assert_msg(trace_load_ex(t, path, o, &err) == 0, "%s", err.msg);
}

/* The load fails and the message holds "PATH:LINE: " and want. */
static void load_fails(const char *path, const trace_load_opts *o, int line,
                       const char *want) {
  trace t;
  trace_init(&t);
  trace_error err;
  err.msg[0] = 0;
  ck_assert_int_eq(trace_load_ex(&t, path, o, &err), -1);
  char where[600];
  if (line > 0)
    snprintf(where, sizeof where, "%s:%d: ", path, line);
  else if (line == 0)
    snprintf(where, sizeof where, "%s: ", path);
  else /* any line */
    snprintf(where, sizeof where, "%s:", path);
  ck_assert_msg(strstr(err.msg, where) != NULL, "'%s' lacks '%s'", err.msg,
                where);
  if (want)
    ck_assert_msg(strstr(err.msg, want) != NULL, "'%s' lacks '%s'", err.msg,
                  want);
  ck_assert_uint_eq(t.n, 0);
  ck_assert_ptr_null(t.jobs);
}

static void assert_job(const trace *t, size_t i, const char *name,
                       int64_t submit_us, int64_t dur_us, int32_t ngpu,
                       int32_t milli, int64_t cpu, int64_t mem,
                       const char *spec) {
  ck_assert_uint_lt(i, t->n);
  const job_record *j = &t->jobs[i];
  ck_assert_str_eq(trace_job_name(t, i), name);
  ck_assert_int_eq(j->submit_us, submit_us);
  ck_assert_int_eq(j->duration_us, dur_us);
  ck_assert_int_eq(j->num_gpu, ngpu);
  ck_assert_int_eq(j->gpu_milli, milli);
  ck_assert_int_eq(j->cpu_milli, cpu);
  ck_assert_int_eq(j->memory_mib, mem);
  if (spec)
    ck_assert_str_eq(t->specs[j->gpu_spec], spec);
  else
    ck_assert_int_eq(j->gpu_spec, -1);
}

static trace_load_opts forced(enum trace_format f) {
  trace_load_opts o = TRACE_LOAD_OPTS_INIT;
  o.format = f;
  return o;
}

/* ---------------------------------------------------------------- SWF */

START_TEST(swf_nasa_real) {
  char path[4096];
  if (!data_path(path, sizeof path, "swf/NASA-iPSC-1993-3.1-cln.swf.gz"))
    return;
  trace t;
  trace_init(&t);
  load_ok(&t, path, NULL); /* detected, read through gzip */
  ck_assert_int_eq(t.format, TRACE_FMT_SWF);
  ck_assert_int_eq(t.has_times, 1);
  ck_assert_uint_eq(t.n, 18239);
  ck_assert_uint_eq(t.skipped, 0);
  assert_job(&t, 0, "1", 0, 1451 * US, 128, 1000, 0, 0, NULL);
  ck_assert_int_eq(t.jobs[0].line, 33); /* after 32 header lines */
  assert_job(&t, t.n - 1, "42264", 7948936 * US, 86 * US, 128, 1000, 0, 0,
             NULL);
  ck_assert_int_eq(t.jobs[t.n - 1].line, 18271);
  int64_t dur = 0, gpus = 0;
  for (size_t i = 0; i < t.n; i++) {
    dur += t.jobs[i].duration_us;
    gpus += t.jobs[i].num_gpu;
    ck_assert_int_eq(t.jobs[i].flags, 0);
  }
  ck_assert_int_eq(dur, INT64_C(13950781) * US); /* awk: sum of field 4 */
  ck_assert_int_eq(gpus, 309953);                /* sum of field 5 */

  /* 16 processors per GPU: ceil(procs / 16), awk: 28450. */
  trace_load_opts o = forced(TRACE_FMT_SWF);
  o.swf_gpus_per_proc = 0.0625;
  load_ok(&t, path, &o);
  gpus = 0;
  for (size_t i = 0; i < t.n; i++)
    gpus += t.jobs[i].num_gpu;
  ck_assert_int_eq(gpus, 28450);
  ck_assert_int_eq(t.jobs[0].num_gpu, 8);
  trace_free(&t);
}
END_TEST

/* Every rule, with a BOM, CRLF line ends, blank lines and remarks. */
static const char SWF_SMALL[] =
    "\xEF\xBB\xBF; Version: 2.2\r\n"
    "; MaxProcs: 64\r\n"
    "\r\n"
    "1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\r\n"
    "2 10 -1 -1 -1 -1 -1 8 300 -1 0 1 1 -1 -1 -1 -1 -1\r\n" /* req procs, req
                                                               time */
    "3 20 -1 -1 4 -1 -1 4 -1 -1 5 1 1 -1 -1 -1 -1 -1\r\n"   /* cancelled before
                                                               start */
    "4 30 -1 30 3 -1 -1 4 -1 -1 5 1 1 -1 -1 -1 -1 -1\r\n" /* cancelled after 30
                                                             s */
    "5 40 -1 10 2 -1 -1 2 -1 -1 3 1 1 -1 -1 -1 -1 -1\r\n" /* partial execution
                                                           */
    "6 50 -1 -1 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\r\n" /* no run time */
    "7 60 -1 10 -1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\r\n" /* no processors */
    "; a remark between records\r\n"
    "\t8  70.5 -1 0 1 1.5 -1 1 -1 -1 -1 1 1 -1 -1 -1 -1 -1";

START_TEST(swf_small_rules) {
  char path[4096], gz[4096];
  put_text(path, sizeof path, "small.swf", SWF_SMALL);
  put_gz(gz, sizeof gz, "small.swf.gz", SWF_SMALL);
  for (int k = 0; k < 2; k++) {
    trace t;
    trace_init(&t);
    load_ok(&t, k ? gz : path, NULL);
    ck_assert_int_eq(t.format, TRACE_FMT_SWF);
    ck_assert_uint_eq(t.n, 4);
    ck_assert_uint_eq(t.skipped, 4);
    ck_assert_ptr_nonnull(strstr(t.skip_note, "cancelled before"));
    assert_job(&t, 0, "1", 0, 100 * US, 4, 1000, 0, 0, NULL);
    ck_assert_int_eq(t.jobs[0].line, 4);
    assert_job(&t, 1, "2", 10 * US, 300 * US, 8, 1000, 0, 0, NULL);
    ck_assert_int_eq(t.jobs[1].flags, TRACE_JOB_ESTIMATED_DURATION);
    assert_job(&t, 2, "4", 30 * US, 30 * US, 3, 1000, 0, 0, NULL);
    assert_job(&t, 3, "8", 70500000, 0, 1, 1000, 0, 0, NULL);
    ck_assert_int_eq(t.jobs[3].line, 12);
    trace_free(&t);
  }
  /* ceil(procs x rate), at least 1: 4 x 0.3 = 1.2 -> 2; 1 x 0.3 -> 1. */
  trace_load_opts o = TRACE_LOAD_OPTS_INIT;
  o.swf_gpus_per_proc = 0.3;
  trace t;
  trace_init(&t);
  load_ok(&t, path, &o);
  ck_assert_int_eq(t.jobs[0].num_gpu, 2);
  ck_assert_int_eq(t.jobs[1].num_gpu, 3);
  ck_assert_int_eq(t.jobs[3].num_gpu, 1);
  /* 8 x 0.125 is exactly 1 GPU despite binary rounding. */
  put_text(path, sizeof path, "eight.swf",
           "1 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n");
  o.swf_gpus_per_proc = 0.125;
  load_ok(&t, path, &o); /* detected without any ';' line */
  ck_assert_int_eq(t.jobs[0].num_gpu, 1);
  trace_free(&t);
}
END_TEST

static const struct {
  const char *line;
  const char *want;
} SWF_BAD[] = {
    {"1 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1",
     "field 'think_time': missing"},
    {"1 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1 7", "too many fields"},
    {"1 0 abc 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1",
     "field 'wait_time': not a number (got 'abc')"},
    {"1 -5 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1",
     "field 'submit_time': must not be negative"},
    {"1 0 -1 -7 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1",
     "field 'run_time': must not be negative"},
    {"1 0 -1 5 1.5 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1",
     "field 'allocated_processors': not an integer"},
    {"1 0 -1 5 8 -1 -1 8 -1 -1 9 -1 -1 -1 -1 -1 -1 -1",
     "field 'status': above the limit of 5"},
    {"1 0 -1 5 2000000 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1",
     "field 'allocated_processors': times --swf-gpus-per-proc"},
    {"1 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 1,2",
     "field 'think_time': not a number"},
};
#define NSWF_BAD (sizeof SWF_BAD / sizeof SWF_BAD[0])

START_TEST(swf_bad_record) {
  char text[512], path[4096];
  snprintf(text, sizeof text,
           "; header\n1 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n%s\n",
           SWF_BAD[_i].line);
  put_text(path, sizeof path, "bad.swf", text);
  load_fails(path, NULL, 3, SWF_BAD[_i].want);
}
END_TEST

START_TEST(swf_bad_files) {
  char path[4096];
  put_text(path, sizeof path, "comments.swf", "; only\n; comments\n");
  load_fails(path, NULL, 0, "no jobs");
  put_text(path, sizeof path, "allskipped.swf",
           "; x\n1 0 -1 -1 4 -1 -1 4 -1 -1 5 -1 -1 -1 -1 -1 -1 -1\n");
  load_fails(path, NULL, 0, "1 records skipped");
  trace_load_opts o = forced(TRACE_FMT_SWF);
  o.swf_gpus_per_proc = -1;
  put_text(path, sizeof path, "rate.swf",
           "1 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n");
  load_fails(path, &o, 0, "--swf-gpus-per-proc");
  /* A truncated gzip stream is a read error, not a short trace. */
  char gz[4096];
  char big[20000];
  size_t o2 = 0;
  for (int i = 0; i < 300; i++)
    o2 += (size_t)snprintf(big + o2, sizeof big - o2,
                           "%d %d -1 5 8 -1 -1 8 -1 -1 1 %d -1 -1 -1 -1 -1 "
                           "-1\n",
                           i + 1, i * 7, i * 13);
  put_gz(gz, sizeof gz, "trunc.swf.gz", big);
  FILE *f = fopen(gz, "rb");
  unsigned char buf[20000];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  f = fopen(gz, "wb");
  fwrite(buf, 1, n / 2, f);
  fclose(f);
  load_fails(gz, NULL, -1, "read error");
  /* A gzip file that is not SWF is refused with a reason. */
  put_gz(gz, sizeof gz, "generic.csv.gz",
         "id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,"
         "gpu_model\na,0,1,0,0,1,1,\n");
  load_fails(gz, NULL, 0, "gzip-compressed, but not SWF");
  snprintf(path, sizeof path, "%s/missing.swf", tmpdir());
  o.swf_gpus_per_proc = 0;
  load_fails(path, &o, 0, "cannot open");
}
END_TEST

/* ---------------------------------------------------------------- PAI */

#define PAI_HEADER                                                             \
  "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,"           \
  "plan_mem,plan_gpu,gpu_type\n"
static const char PAI_ROWS[] =
    "j1,worker,1.0,Terminated,100,200,600,29.296875,50,V100\n"
    "j2,ps,2,Failed,150.5,160,50,2,200,T4\n"
    "j3,w,1,Terminated,0,10,100,1,150,MISC\n"
    "j4,w,1,Terminated,0,10,100,1,250,\n"
    "j5,w,1,Terminated,0,10,100,1,,T4\n"
    "j6,w,1,Waiting,,,100,1,100,T4\n"
    "j7,w,1,Running,5,,100,1,100,T4\n"
    "j8,w,1,Terminated,0,10,nan,nan,0.5,V100M32\n";

static void check_pai(const trace *t) {
  ck_assert_int_eq(t->format, TRACE_FMT_PAI);
  ck_assert_uint_eq(t->n, 7);
  ck_assert_uint_eq(t->skipped, 2);
  /* 600% CPU = 6000 milli; 29.296875 GB = 30000 MiB; 50% GPU = 1 x 500. */
  assert_job(t, 0, "j1/worker/0", 100 * US, 100 * US, 1, 500, 6000, 30000,
             "V100M16");
  /* inst_num 2: two jobs; 200% = 2 x 1000. */
  assert_job(t, 1, "j2/ps/0", 150500000, 9500000, 2, 1000, 500, 2048, "T4");
  assert_job(t, 2, "j2/ps/1", 150500000, 9500000, 2, 1000, 500, 2048, "T4");
  ck_assert_int_eq(t->jobs[2].line, t->jobs[1].line);
  assert_job(t, 3, "j3/w/0", 0, 10 * US, 2, 750, 1000, 1024, NULL); /* MISC */
  assert_job(t, 4, "j4/w/0", 0, 10 * US, 3, 834, 1000, 1024, NULL);
  assert_job(t, 5, "j5/w/0", 0, 10 * US, 0, 0, 1000, 1024, NULL); /* CPU */
  assert_job(t, 6, "j8/w/0", 0, 10 * US, 1, 5, 0, 0, "V100M32");
}

START_TEST(pai_small_rules) {
  char path[4096];
  char text[2048];
  snprintf(text, sizeof text, "%s%s", PAI_HEADER, PAI_ROWS);
  put_text(path, sizeof path, "pai.csv", text);
  trace t;
  trace_init(&t);
  load_ok(&t, path, NULL);
  check_pai(&t);
  /* Upstream files have no header: --trace-format pai reads them. */
  put_text(path, sizeof path, "pai_noheader.csv", PAI_ROWS);
  trace_load_opts o = forced(TRACE_FMT_PAI);
  load_ok(&t, path, &o);
  check_pai(&t);
  ck_assert_int_eq(t.jobs[0].line, 1);
  /* ... and without the option the first row is an unknown header. */
  load_fails(path, NULL, 1, "unrecognised header");
  /* A forced format with its header works too. */
  snprintf(text, sizeof text, "%s%s", PAI_HEADER, PAI_ROWS);
  put_text(path, sizeof path, "pai2.csv", text);
  load_ok(&t, path, &o);
  check_pai(&t);
  trace_free(&t);
}
END_TEST

static const struct {
  const char *row;
  const char *want;
} PAI_BAD[] = {
    {"j,t,1.5,Terminated,0,1,1,1,1,T4", "field 'inst_num': not a whole"},
    {"j,t,0,Terminated,0,1,1,1,1,T4", "field 'inst_num': outside 1..100000"},
    {"j,t,,Terminated,0,1,1,1,1,T4", "field 'inst_num': empty"},
    {"j,t,1,Terminated,10,5,1,1,1,T4", "field 'end_time': before start_time"},
    {"j,t,1,Terminated,0,5,1,1,x,T4",
     "field 'plan_gpu': not a number (got 'x')"},
    {"j,t,1,Terminated,0,5,-1,1,1,T4", "field 'plan_cpu': must not be"},
    {"j,t,1,Terminated,abc,5,1,1,1,T4", "field 'start_time'"},
    {"j,t,1,Terminated,0,5,1,1,1", "field 'gpu_type': missing"},
    {",t,1,Terminated,0,5,1,1,1,T4", "field 'job_name': empty"},
};
#define NPAI_BAD (sizeof PAI_BAD / sizeof PAI_BAD[0])

START_TEST(pai_bad_record) {
  char text[1024], path[4096];
  snprintf(text, sizeof text, "%sj0,t,1,Terminated,0,1,1,1,1,T4\r\n%s\r\n",
           PAI_HEADER, PAI_BAD[_i].row);
  put_text(path, sizeof path, "paibad.csv", text);
  load_fails(path, NULL, 3, PAI_BAD[_i].want);
}
END_TEST

/* ----------------------------------------------------------- Tiresias */

START_TEST(tiresias_real) {
  char path[4096];
  if (!data_path(path, sizeof path, "tiresias/60_job.csv"))
    return;
  trace t;
  trace_init(&t);
  load_ok(&t, path, NULL); /* CRLF line ends */
  ck_assert_int_eq(t.format, TRACE_FMT_TIRESIAS);
  ck_assert_uint_eq(t.n, 60);
  assert_job(&t, 0, "0", 0, 164 * US, 1, 1000, 0, 0, NULL);
  assert_job(&t, 1, "1", 30 * US, 147 * US, 8, 1000, 0, 0, NULL);
  assert_job(&t, 59, "59", 1779 * US, 122 * US, 1, 1000, 0, 0, NULL);
  ck_assert_int_eq(t.jobs[59].line, 61);
  int64_t gpus = 0, dur = 0;
  for (size_t i = 0; i < t.n; i++)
    gpus += t.jobs[i].num_gpu, dur += t.jobs[i].duration_us;
  ck_assert_int_eq(gpus, 170);       /* awk: sum of num_gpu */
  ck_assert_int_eq(dur, 10705 * US); /* awk: sum of duration */

  ck_assert(data_path(path, sizeof path, "tiresias/tf_job.csv"));
  load_ok(&t, path, NULL); /* the tf_job layout, no final newline */
  ck_assert_int_eq(t.format, TRACE_FMT_TIRESIAS);
  ck_assert_uint_eq(t.n, 2);
  assert_job(&t, 1, "10", 11 * US, 20 * US, 12, 1000, 0, 0, NULL);

  /* The cluster CSVs beside them are not traces. */
  ck_assert(data_path(path, sizeof path, "tiresias/n32g4.csv"));
  load_fails(path, NULL, 1, "unrecognised header");
  trace_free(&t);
}
END_TEST

START_TEST(tiresias_bad) {
  char path[4096];
  const char *h = "job_id,num_gpu,submit_time,iterations,model_name,"
                  "duration,interval\n";
  char text[512];
  snprintf(text, sizeof text, "%s0,1,0,5,m,10,1\n1,-1,0,5,m,10,1\n", h);
  put_text(path, sizeof path, "tb1.csv", text);
  load_fails(path, NULL, 3, "field 'num_gpu': must not be negative");
  snprintf(text, sizeof text, "%s0,1,0,5,m,ten,1\n", h);
  put_text(path, sizeof path, "tb2.csv", text);
  load_fails(path, NULL, 2, "field 'duration': not a number of seconds");
  snprintf(text, sizeof text, "%s,1,0,5,m,1,1\n", h);
  put_text(path, sizeof path, "tb3.csv", text);
  load_fails(path, NULL, 2, "field 'job_id': empty");
}
END_TEST

/* ------------------------------------------------------------- Philly */

START_TEST(philly_real) {
  char path[4096];
  if (!data_path(path, sizeof path, "philly/philly.csv"))
    return;
  trace t;
  trace_init(&t);
  load_ok(&t, path, NULL);
  ck_assert_int_eq(t.format, TRACE_FMT_PHILLY);
  ck_assert_uint_eq(t.n, 82247);
  /* Python: earliest timestamp 2017-09-04 10:30:41 on line 31568; the
   * first row 2017-10-09 07:01:55 is 3011474 s later. */
  assert_job(&t, 0, "philly-1", INT64_C(3011474) * US, 66 * US, 1, 1000, 0, 0,
             NULL);
  assert_job(&t, 31566, "philly-31567", 0, INT64_C(2240194) * US, 8, 1000, 0, 0,
             NULL);
  ck_assert_int_eq(t.jobs[31566].line, 31568);
  assert_job(&t, 82246, "philly-82247", INT64_C(5605349) * US, 1896 * US, 1,
             1000, 0, 0, NULL);
  int64_t gpus = 0, dur = 0, maxsub = 0;
  for (size_t i = 0; i < t.n; i++) {
    gpus += t.jobs[i].num_gpu;
    dur += t.jobs[i].duration_us;
    if (t.jobs[i].submit_us > maxsub)
      maxsub = t.jobs[i].submit_us;
  }
  ck_assert_int_eq(gpus, 107235);
  ck_assert_int_eq(dur, INT64_C(1080390950) * US);
  ck_assert_int_eq(maxsub, INT64_C(9408690) * US);
  trace_free(&t);
}
END_TEST

START_TEST(philly_small_and_bad) {
  char path[4096];
  const char *h = "timestamp,duration,num_gpus,gpu_time,cluster\r\n";
  char text[512];
  /* Times across a leap day and a year end; 'T' accepted. */
  snprintf(text, sizeof text,
           "\xEF\xBB\xBF%s2016-03-01 00:00:00,10.5,2,21,a\r\n"
           "2016-02-28T23:59:59,1,1,1,b\r\n"
           "2017-01-01 00:00:00,0,4,0,c\r\n",
           h);
  put_text(path, sizeof path, "ph.csv", text);
  trace t;
  trace_init(&t);
  load_ok(&t, path, NULL);
  ck_assert_uint_eq(t.n, 3);
  assert_job(&t, 0, "philly-1", (86400 + 1) * US, 10500000, 2, 1000, 0, 0,
             NULL);
  assert_job(&t, 1, "philly-2", 0, 1 * US, 1, 1000, 0, 0, NULL);
  /* 2016-02-28 23:59:59 to 2017-01-01: 307 days and 1 s. */
  assert_job(&t, 2, "philly-3", (307 * INT64_C(86400) + 1) * US, 0, 4, 1000, 0,
             0, NULL);
  trace_free(&t);

  static const struct {
    const char *row, *want;
  } bad[] = {
      {"2017-13-01 00:00:00,1,1,1,a", "field 'timestamp': not a date"},
      {"2017-02-29 00:00:00,1,1,1,a", "field 'timestamp'"},
      {"2017-02-01 24:00:00,1,1,1,a", "field 'timestamp'"},
      {"1969-12-31 23:59:59,1,1,1,a", "field 'timestamp'"},
      {"2017-02-01,1,1,1,a", "field 'timestamp'"},
      {"2017-02-01 00:00:00,-1,1,1,a", "field 'duration': must not be"},
      {"2017-02-01 00:00:00,1,,1,a", "field 'num_gpus': empty"},
      {"2017-02-01 00:00:00,1,1,1", "field 'cluster': missing"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(text, sizeof text, "%s2017-01-01 00:00:00,1,1,1,a\r\n%s\r\n", h,
             bad[i].row);
    put_text(path, sizeof path, "phbad.csv", text);
    load_fails(path, NULL, 3, bad[i].want);
  }
}
END_TEST

/* ------------------------------------------------------------ generic */

START_TEST(generic_small_and_bad) {
  char path[4096];
  const char *h = "id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,"
                  "gpu_model\r\n";
  char text[1024];
  snprintf(text, sizeof text,
           "\xEF\xBB\xBF%s\"job,1\",0,60,1,250,4000,16384,"
           "V100M16|V100M32\r\n"
           "j2,1.5,,2,1000,0,0,\r\n"
           "j3,2,0,0,0,1000,512,\r\n",
           h);
  put_text(path, sizeof path, "gen.csv", text);
  trace t;
  trace_init(&t);
  load_ok(&t, path, NULL);
  ck_assert_int_eq(t.format, TRACE_FMT_GENERIC);
  ck_assert_uint_eq(t.n, 3);
  assert_job(&t, 0, "job,1", 0, 60 * US, 1, 250, 4000, 16384,
             "V100M16|V100M32");
  assert_job(&t, 1, "j2", 1500000, -1, 2, 1000, 0, 0, NULL);
  ck_assert_int_eq(t.jobs[1].flags, TRACE_JOB_NO_DURATION);
  assert_job(&t, 2, "j3", 2 * US, 0, 0, 0, 1000, 512, NULL);
  trace_free(&t);

  static const struct {
    const char *row, *want;
  } bad[] = {
      {"j,0,1,1,1001,1,1,", "field 'gpu_milli': outside 0..1000"},
      {"j,0,1,1,0,1,1,", "field 'gpu_milli': 0 although num_gpu > 0"},
      {"j,0,1,0,5,1,1,", "field 'gpu_milli': above 0 although"},
      {"j,0,1,1,5,-1,1,", "field 'cpu_milli': must not be negative"},
      {"j,0,1,1,5,1,1.5,", "field 'memory_mib': not an integer"},
      {"j,x,1,1,5,1,1,", "field 'submit': not a number of seconds"},
      {"j,0,1,2000000,5,1,1,", "field 'num_gpu': above the limit"},
      {",0,1,1,5,1,1,", "field 'id': empty"},
      {"j,0,1,1,5,1,1,A100,extra", "too many fields"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(text, sizeof text, "%sok,0,1,1,5,1,1,\r\n%s\r\n", h, bad[i].row);
    put_text(path, sizeof path, "genbad.csv", text);
    load_fails(path, NULL, 3, bad[i].want);
  }
}
END_TEST

/* ----------------------------------------------------------- dispatch */

START_TEST(format_names_and_detection) {
  static const char *const names[] = {"alibaba", "alibaba-multi", "swf",
                                      "pai",     "tiresias",      "philly",
                                      "generic"};
  for (size_t i = 0; i < 7; i++) {
    enum trace_format f = trace_format_from_name(names[i]);
    ck_assert_int_ne(f, TRACE_FMT_UNKNOWN);
    ck_assert_str_eq(trace_format_name(f), names[i]);
  }
  ck_assert_int_eq(trace_format_from_name("csv"), TRACE_FMT_UNKNOWN);
  ck_assert_int_eq(trace_format_from_name(NULL), TRACE_FMT_UNKNOWN);
  ck_assert_str_eq(trace_format_name(TRACE_FMT_UNKNOWN), "unknown");

  /* An unknown header names the formats and shows the closest one. */
  char path[4096];
  put_text(path, sizeof path, "near_pai.csv",
           "job_name,task_name,instances,status,start_time,end_time,"
           "plan_cpu,plan_mem,plan_gpu,gpu_type\nj,t,1,T,0,1,1,1,1,T4\n");
  load_fails(path, NULL, 1, "unrecognised header");
  load_fails(path, NULL, 1, "job_name,task_name,inst_num,status");
  load_fails(path, NULL, 1, "swf, pai, tiresias, philly, generic");

  /* A forced CSV format reads a headerless file from line 1, and a file of
   * another format then fails on its first field. */
  put_text(path, sizeof path, "noheader.csv", "a,0,1,1,500,1,1,\n");
  trace_load_opts o = forced(TRACE_FMT_GENERIC);
  trace t;
  trace_init(&t);
  load_ok(&t, path, &o);
  ck_assert_uint_eq(t.n, 1);
  ck_assert_int_eq(t.jobs[0].line, 1);
  put_text(path, sizeof path, "ali.csv",
           "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1000\n");
  load_fails(path, &o, 1, "field 'cpu_milli': missing");
  /* Forcing SWF on a CSV names the problem. */
  o = forced(TRACE_FMT_SWF);
  load_fails(path, &o, 1, "field 'submit_time': missing");
  /* A trace loaded as alibaba through trace_load_ex keeps working. */
  load_ok(&t, path, NULL);
  ck_assert_int_eq(t.format, TRACE_FMT_ALIBABA_POD_MULTI);
  o = forced(TRACE_FMT_ALIBABA_POD_MULTI);
  load_ok(&t, path, &o);
  ck_assert_uint_eq(t.n, 1);
  trace_free(&t);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("readers");
  TCase *tc = tcase_create("swf");
  tcase_add_test(tc, swf_nasa_real);
  tcase_add_test(tc, swf_small_rules);
  tcase_add_loop_test(tc, swf_bad_record, 0, NSWF_BAD);
  tcase_add_test(tc, swf_bad_files);
  suite_add_tcase(s, tc);
  tc = tcase_create("pai");
  tcase_add_test(tc, pai_small_rules);
  tcase_add_loop_test(tc, pai_bad_record, 0, NPAI_BAD);
  suite_add_tcase(s, tc);
  tc = tcase_create("tiresias_philly_generic");
  tcase_add_test(tc, tiresias_real);
  tcase_add_test(tc, tiresias_bad);
  tcase_add_test(tc, philly_real);
  tcase_add_test(tc, philly_small_and_bad);
  tcase_add_test(tc, generic_small_and_bad);
  tcase_add_test(tc, format_names_and_detection);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(suite()); }
