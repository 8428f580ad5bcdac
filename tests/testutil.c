#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *testutil_data(const char *relpath) {
  static char buf[4096];
  const char *dir = getenv("SCHEDSIM_SHARED_DATA");
  if (!dir)
    dir = "../shared/data";
  snprintf(buf, sizeof buf, "%s/%s", dir, relpath);
  if (access(buf, R_OK) == 0)
    return buf;
  const char *ci = getenv("CI");
  if (ci && strcmp(ci, "true") == 0)
    ck_abort_msg("CI=true but shared data file %s is missing", buf);
  fprintf(stderr, "SKIP: shared data %s not found; test skipped\n", buf);
  return NULL;
}

const char *testutil_tmpdir(void) {
  static char buf[256];
  const char *base = getenv("TMPDIR");
  snprintf(buf, sizeof buf, "%s/schedsim-test-XXXXXX", base ? base : "/tmp");
  if (!mkdtemp(buf))
    ck_abort_msg("mkdtemp failed");
  return buf;
}

int testutil_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

const char *tmpdir(void) {
  static const char *dir;
  if (!dir)
    dir = testutil_tmpdir();
  return dir;
}

int data_path(char *out, size_t size, const char *rel) {
  const char *p = testutil_data(rel);
  if (!p)
    return 0;
  snprintf(out, size, "%s", p);
  return 1;
}

void put_file(char *out, size_t size, const char *name, const char *content,
              size_t len) {
  snprintf(out, size, "%s/%s", tmpdir(), name);
  FILE *f = fopen(out, "wb");
  ck_assert_msg(f != NULL, "cannot create %s", out);
  ck_assert_uint_eq(fwrite(content, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

void put_text(char *out, size_t size, const char *name, const char *text) {
  put_file(out, size, name, text, strlen(text));
}

lsched_request mkreq(int64_t cpu, int64_t mem, int k, int milli,
                     uint64_t mask) {
  lsched_request r = LSCHED_REQUEST_INIT;
  r.cpu_milli = cpu;
  r.memory_mib = mem;
  r.gpu_count = k;
  r.gpu_milli = milli;
  r.model_mask = mask;
  return r;
}

lsched_placement mkpl(int node, int64_t cpu, int64_t mem, int k, int milli,
                      uint64_t mask) {
  lsched_placement p;
  memset(&p, 0, sizeof p);
  p.node = node;
  p.cpu_milli = cpu;
  p.memory_mib = mem;
  p.gpu_count = k;
  p.gpu_milli = milli;
  p.gpu_mask = mask;
  return p;
}

void tu_add_job(trace *t, const char *name, int64_t submit_s, int64_t dur_s,
                int gpus, int milli, const char *spec) {
  job_record j;
  memset(&j, 0, sizeof j);
  j.submit_us = submit_s * TRACE_US_PER_S;
  j.duration_us = dur_s * TRACE_US_PER_S;
  j.cpu_milli = 1000;
  j.memory_mib = 1000;
  j.num_gpu = gpus;
  j.gpu_milli = milli;
  j.line = (int32_t)t->n + 2;
  ck_assert_int_eq(trace_add_job(t, &j, name, spec), 0);
}
