/* Scratch files for the fuzz targets (see fuzz.h). */
#include "fuzz.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define MAX_NAMES 16

static char dir[256];
static char names[MAX_NAMES][64];
static int nnames;

static void cleanup(void) {
  char p[512];
  for (int i = 0; i < nnames; i++) {
    /* The precision tells GCC a name fits its 64 bytes (Release builds
     * warned of a truncation). */
    snprintf(p, sizeof p, "%s/%.*s", dir, (int)sizeof names[i] - 1, names[i]);
    unlink(p);
  }
  rmdir(dir);
}

void fuzz_path(char *out, size_t size, const char *name) {
  if (!dir[0]) {
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NULL;
    if (!base)
      base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/schedsim-fuzz-XXXXXX", base);
    if (!mkdtemp(dir)) {
      perror("mkdtemp");
      abort();
    }
    atexit(cleanup);
  }
  int known = 0;
  for (int i = 0; i < nnames; i++)
    known |= strcmp(names[i], name) == 0;
  if (!known && nnames < MAX_NAMES && strlen(name) < sizeof names[0])
    strcpy(names[nnames++], name);
  snprintf(out, size, "%s/%s", dir, name);
}

void fuzz_write(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

void fuzz_write_gz(const char *path, const void *data, size_t n) {
  gzFile g = gzopen(path, "wb");
  if (!g || (n && gzwrite(g, data, (unsigned)n) != (int)n) ||
      gzclose(g) != Z_OK) {
    fprintf(stderr, "%s: gzip write failed\n", path);
    abort();
  }
}
