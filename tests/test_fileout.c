/* traces/fileout.c under issue #17: temporary names created exclusively
 * (an existing one is never reused or truncated), the spool of a pipe,
 * message renaming, and the results-directory marker (sim/output). */
#include "fileout.h"
#include "output.h"
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  static char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

START_TEST(temporary_names_are_exclusive) {
  char path[4096], taken[4200];
  snprintf(path, sizeof path, "%s/excl.csv", tmpdir());
  /* Another writer (or a killed process whose PID came back) holds the
   * name this process would use first. */
  snprintf(taken, sizeof taken, "%s.tmp.%ld", path, (long)getpid());
  FILE *o = fopen(taken, "w");
  ck_assert_ptr_nonnull(o);
  fputs("theirs\n", o);
  fclose(o);
  atomic_file a, b;
  ck_assert_int_eq(atomic_file_open(&a, path, "w"), 0);
  ck_assert_int_eq(atomic_file_open(&b, path, "w"), 0);
  ck_assert_str_ne(a.tmp, taken);
  ck_assert_str_ne(b.tmp, taken);
  ck_assert_str_ne(a.tmp, b.tmp);
  fputs("a\n", a.f);
  fputs("b\n", b.f);
  ck_assert_int_eq(atomic_file_commit(&a), 0);
  atomic_file_abort(&a);
  ck_assert_str_eq(slurp(path), "a\n");
  ck_assert_int_eq(atomic_file_commit(&b), 0);
  atomic_file_abort(&b);
  ck_assert_str_eq(slurp(path), "b\n");          /* whole, never mixed */
  ck_assert_str_eq(slurp(taken), "theirs\n");    /* untouched */
}
END_TEST

START_TEST(spool_and_rename) {
  char path[4096];
  put_text(path, sizeof path, "plain.txt", "x");
  ck_assert_int_eq(fileout_is_pipe(path), 0);
  ck_assert_int_eq(fileout_is_pipe("-"), 1);
  char fifo[4096];
  snprintf(fifo, sizeof fifo, "%s/a.fifo", tmpdir());
  unlink(fifo);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  ck_assert_int_eq(fileout_is_pipe(fifo), 1);
  unlink(fifo);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  ck_assert_int_eq(write(fds[1], "hello\n", 6), 6);
  close(fds[1]);
  int saved = dup(0);
  dup2(fds[0], 0);
  close(fds[0]);
  FILE *sp = fileout_spool("-");
  dup2(saved, 0);
  close(saved);
  ck_assert_ptr_nonnull(sp);
  char name[32];
  fileout_spool_path(sp, name, sizeof name);
  /* read twice through its name: the same bytes both times */
  for (int pass = 0; pass < 2; pass++)
    ck_assert_str_eq(slurp(name), "hello\n");
  fclose(sp);
  char msg[64] = "/dev/fd/7:3: field 'x': bad (/dev/fd/7)";
  fileout_rename_in(msg, sizeof msg, "/dev/fd/7", "-");
  ck_assert_str_eq(msg, "-:3: field 'x': bad (-)");
}
END_TEST

START_TEST(results_marker_and_stale_files) {
  char dir[4096], p[4200], err[512];
  snprintf(dir, sizeof dir, "%s/res", tmpdir());
  mkdir(dir, 0777);
  ck_assert_int_eq(out_dir_complete(dir), 1);
  ck_assert_int_eq(out_mark_incomplete(dir, err, sizeof err), 0);
  ck_assert_int_eq(out_dir_complete(dir), 0);
  ck_assert_int_eq(out_mark_complete(dir, err, sizeof err), 0);
  ck_assert_int_eq(out_dir_complete(dir), 1);
  /* a dead process's temporary file goes, a live one's stays */
  long dead = 0;
  for (long pid = 4194000; pid > 300000 && !dead; pid -= 7919)
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
      dead = pid;
  ck_assert_int_ne(dead, 0);
  snprintf(p, sizeof p, "%s/jobs.csv.tmp.%ld", dir, dead);
  fclose(fopen(p, "w"));
  char live[4200];
  snprintf(live, sizeof live, "%s/jobs.csv.tmp.%ld", dir, (long)getpid());
  fclose(fopen(live, "w"));
  char other[4200];
  snprintf(other, sizeof other, "%s/notes.tmp.%ld", dir, dead);
  fclose(fopen(other, "w"));
  out_clean_stale(dir);
  struct stat st;
  ck_assert_int_ne(stat(p, &st), 0);
  ck_assert_int_eq(stat(live, &st), 0);
  ck_assert_int_eq(stat(other, &st), 0); /* not ours: kept */
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("fileout");
  TCase *tc = tcase_create("fileout");
  tcase_add_test(tc, temporary_names_are_exclusive);
  tcase_add_test(tc, spool_and_rename);
  tcase_add_test(tc, results_marker_and_stale_files);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
