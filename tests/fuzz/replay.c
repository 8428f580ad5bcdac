/*
 * Replay driver: runs every corpus file given (files, or directories whose
 * regular files are taken in name order) through LLVMFuzzerTestOneInput
 * once. Built in the normal (gcc) build so that ctest checks each target's
 * corpus, crash reproducers included, under the sanitizers of the test
 * build; with libFuzzer the same files are the seed corpus.
 */
#include "fuzz.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

static long run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *nb = realloc(buf, cap * 2);
      if (!nb)
        free(buf);
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (!buf) {
    fprintf(stderr, "%s: out of memory\n", path);
    exit(1);
  }
  /* libFuzzer hands over exactly the bytes of the input: copy them into a
   * buffer of that size so that ASan sees any read past the end. */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) {
    fprintf(stderr, "%s: out of memory\n", path);
    exit(1);
  }
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 1;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static long run_dir(const char *path) {
  DIR *d = opendir(path);
  if (!d) {
    perror(path);
    exit(1);
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn)
        exit(1);
      names = nn;
    }
    names[n] = malloc(strlen(path) + strlen(e->d_name) + 2);
    if (!names[n])
      exit(1);
    sprintf(names[n], "%s/%s", path, e->d_name);
    n++;
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp_names);
  long count = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
      count += run_file(names[i]);
    free(names[i]);
  }
  free(names);
  return count;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  long total = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      return 1;
    }
    total += S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
  }
  printf("%s: %ld inputs replayed, all checks passed\n", argv[0], total);
  if (total == 0) {
    fprintf(stderr, "%s: empty corpus\n", argv[0]);
    return 1;
  }
  return 0;
}
