/*
 * A full disk for one file, for tests/cli_faults.sh (LD_PRELOAD): an open()
 * of exactly the path in $SCHEDSIM_FULL_AT creates that file as asked
 * (temporary names are created exclusively, so a symbolic link to
 * /dev/full can no longer stand in for one) and then writes go to
 * /dev/full, failing with ENOSPC. Every other open is untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/types.h>
#include <stdlib.h>
#include <unistd.h>

typedef int (*open_fn)(const char *, int, ...);

static int full_open(const char *name, const char *path, int flags,
                     mode_t mode) {
  open_fn real = (open_fn)dlsym(RTLD_NEXT, name);
  int fd = real(path, flags, mode);
  const char *at = getenv("SCHEDSIM_FULL_AT");
  if (fd >= 0 && at && strcmp(path, at) == 0) {
    int full = real("/dev/full", O_WRONLY);
    if (full >= 0) {
      dup2(full, fd);
      close(full);
    }
  }
  return fd;
}

int open(const char *path, int flags, ...) {
  mode_t mode = 0;
  if (flags & O_CREAT) {
    va_list ap;
    va_start(ap, flags);
    mode = (mode_t)va_arg(ap, int);
    va_end(ap);
  }
  return full_open("open", path, flags, mode);
}

int open64(const char *path, int flags, ...) {
  mode_t mode = 0;
  if (flags & O_CREAT) {
    va_list ap;
    va_start(ap, flags);
    mode = (mode_t)va_arg(ap, int);
    va_end(ap);
  }
  return full_open("open64", path, flags, mode);
}
