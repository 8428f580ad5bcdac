/* Helpers shared by the Check suites. */
#ifndef SCHEDSIM_TESTUTIL_H
#define SCHEDSIM_TESTUTIL_H

#include <check.h>

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

#endif
