/* The shared CSV field writer and atomic output file (fileout.h). */
#include "fileout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void csv_write_field(FILE *f, const char *s, int flags) {
  size_t n = strlen(s);
  int quote = strpbrk(s, ",\"\r\n") != NULL;
  if (!quote && (flags & CSV_QUOTE_BLANKS) && n > 0)
    quote = s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t';
  if (!quote) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

int atomic_file_open(atomic_file *a, const char *path, const char *mode) {
  memset(a, 0, sizeof *a);
  size_t len = strlen(path), n = len + 32;
  a->path = malloc(len + 1);
  a->tmp = malloc(n);
  if (!a->path || !a->tmp) {
    free(a->path);
    free(a->tmp);
    /* Cleared, so that an abort after a failed open frees nothing twice
     * (a double free found by tests/test_faults.c). */
    memset(a, 0, sizeof *a);
    errno = ENOMEM;
    return -1;
  }
  memcpy(a->path, path, len + 1);
  snprintf(a->tmp, n, "%s.tmp.%ld", path, (long)getpid());
  a->f = fopen(a->tmp, mode);
  if (!a->f)
    return -2; /* path and tmp kept for the caller's message */
  return 0;
}

void atomic_file_abort(atomic_file *a) {
  if (a->f) {
    fclose(a->f);
    remove(a->tmp);
  }
  free(a->path);
  free(a->tmp);
  memset(a, 0, sizeof *a);
}

int atomic_file_commit(atomic_file *a) {
  /* fclose flushes: its failure is a write error too (disk full). errno is
   * not cleared first: a write that failed earlier left its errno, and
   * that is the one worth reporting when the flush has nothing left. */
  int step = fflush(a->f) != 0 || ferror(a->f) ? ATOMIC_FILE_WRITE : 0;
  int saved = errno;
  if (fclose(a->f) != 0 && !step) {
    step = ATOMIC_FILE_WRITE;
    saved = errno;
  }
  a->f = NULL;
  if (!step && rename(a->tmp, a->path) != 0) {
    step = ATOMIC_FILE_RENAME;
    saved = errno;
  }
  if (step) {
    remove(a->tmp);
    errno = saved ? saved : EIO;
  }
  return step;
}
