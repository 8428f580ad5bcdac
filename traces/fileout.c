/* The shared CSV field writer and atomic output file (fileout.h). */
#include "fileout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
  /* Created exclusively: a name another writer holds (a thread of this
   * process, or a leftover of a killed process whose PID came back) is
   * never shared; the next suffix is tried instead. */
  int fd = -1;
  for (unsigned k = 0; fd < 0 && k < 1000; k++) {
    if (k == 0)
      snprintf(a->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    else
      snprintf(a->tmp, n, "%s.tmp.%ld.%u", path, (long)getpid(), k);
    fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd >= 0 && !(a->f = fdopen(fd, mode))) {
    int e = errno;
    close(fd);
    remove(a->tmp);
    errno = e;
  }
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

FILE *fileout_tmpfile(void) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !dir[0])
    dir = "/tmp";
  size_t n = strlen(dir) + 32;
  char *name = malloc(n);
  if (!name) {
    errno = ENOMEM;
    return NULL;
  }
  snprintf(name, n, "%s/schedsim-XXXXXX", dir);
  int fd = mkstemp(name);
  if (fd < 0) {
    int e = errno;
    free(name);
    errno = e;
    return NULL;
  }
  unlink(name); /* gone when closed, or when the process dies */
  free(name);
  FILE *f = fdopen(fd, "w+b");
  if (!f) {
    int e = errno;
    close(fd);
    errno = e;
  }
  return f;
}

int fileout_is_pipe(const char *path) {
  if (strcmp(path, "-") == 0)
    return 1;
  struct stat st;
  if (stat(path, &st) != 0)
    return 0; /* the reader reports it */
  return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

FILE *fileout_spool(const char *path) {
  int in = strcmp(path, "-") == 0 ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return NULL;
  FILE *out = fileout_tmpfile();
  if (!out) {
    int e = errno;
    close(in);
    errno = e;
    return NULL;
  }
  char buf[65536];
  for (;;) {
    ssize_t got = read(in, buf, sizeof buf);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0 || (got > 0 && fwrite(buf, 1, (size_t)got, out) != (size_t)got)) {
      int e = errno ? errno : EIO;
      close(in);
      fclose(out);
      errno = e;
      return NULL;
    }
    if (got == 0)
      break;
  }
  close(in);
  if (fflush(out) != 0 || fseek(out, 0, SEEK_SET) != 0) {
    int e = errno ? errno : EIO;
    fclose(out);
    errno = e;
    return NULL;
  }
  return out;
}

void fileout_spool_path(FILE *spool, char *buf, size_t size) {
  snprintf(buf, size, "/dev/fd/%d", fileno(spool));
}

void fileout_rename_in(char *msg, size_t size, const char *from,
                       const char *to) {
  size_t lf = strlen(from), lt = strlen(to);
  if (lf == 0 || size == 0)
    return;
  char *out = malloc(size);
  if (!out)
    return;
  size_t o = 0;
  for (const char *p = msg; *p && o + 1 < size;) {
    if (strncmp(p, from, lf) == 0) {
      size_t k = lt < size - 1 - o ? lt : size - 1 - o;
      memcpy(out + o, to, k);
      o += k;
      p += lf;
    } else {
      out[o++] = *p++;
    }
  }
  out[o] = '\0';
  memcpy(msg, out, o + 1);
  free(out);
}
