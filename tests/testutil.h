/* Helpers shared by the Check suites. */
#ifndef SCHEDSIM_TESTUTIL_H
#define SCHEDSIM_TESTUTIL_H

#include <check.h>
#include <libsched/libsched.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/*
 * Path of a file in ../shared/data (e.g. "alibaba-gpu-v2023/x.csv"), or NULL
 * when the folder is absent. Absent data: the caller skips the test with a
 * visible message; under CI=true testutil_data() itself fails the test.
 */
const char *testutil_data(const char *relpath);

/* A fresh temporary directory for this test (removed by the OS tmp reaper;
 * tests write small files only). */
const char *testutil_tmpdir(void);

/* Runs a suite in fork mode and returns the process exit status. */
int testutil_run(Suite *s);

/*
 * The suites' shared file helpers, under the short names the suites have
 * always called them by (each suite used to carry its own copy).
 */

/* One temporary directory per test process, made on first use by
 * testutil_tmpdir() (tests run in forked children, so each test starts with
 * none). */
const char *tmpdir(void);

/* Copies the path of the shared data file rel into out (testutil_data()
 * returns a static buffer): 1, or 0 when the data is absent (testutil_data()
 * printed SKIP, or failed the test under CI=true). */
int data_path(char *out, size_t size, const char *rel);

/* Writes len bytes of content to tmpdir()/name; the path goes to out. */
void put_file(char *out, size_t size, const char *name, const char *content,
              size_t len);

/* put_file() of a NUL-terminated text. */
void put_text(char *out, size_t size, const char *name, const char *text);

/* A request for k GPUs at milli each (0, 0 for CPU only) of the models in
 * mask (0: any), and the placement of such a request on node with the GPUs
 * in mask; every other member is zero (or its LSCHED_REQUEST_INIT value). */
lsched_request mkreq(int64_t cpu, int64_t mem, int k, int milli,
                     uint64_t mask);
lsched_placement mkpl(int node, int64_t cpu, int64_t mem, int k, int milli,
                      uint64_t mask);

/* Appends job NAME to t (fails the test if it cannot): submitted at
 * submit_s, running dur_s seconds, 1 CPU and 1,000 MiB, gpus GPUs at milli
 * each, allowed models spec (NULL: any); its line is its position + 2 (as
 * below a header line). */
void tu_add_job(trace *t, const char *name, int64_t submit_s, int64_t dur_s,
                int gpus, int milli, const char *spec);

#endif
