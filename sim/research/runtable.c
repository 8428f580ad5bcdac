/*
 * The per-run metrics row that compare.csv and sweep.csv share, read back
 * from each run's summary.json: merging from the files (not from memory)
 * is what lets a resumed sweep merge runs finished by an earlier
 * invocation, and cJSON prints numbers that read back to the same double,
 * so a row is the same whichever process made the run.
 */
#include "jsonutil.h"
#include "output.h"
#include "research.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int run_metrics_read(const char *run_dir, run_metrics *m, char *err,
                     size_t errlen) {
  char path[4096];
  if (!out_dir_complete(run_dir)) {
    snprintf(err, errlen,
             "%s: incomplete results (holds " OUT_INCOMPLETE ": a run "
             "writing them was stopped); run it again",
             run_dir);
    return -1;
  }
  snprintf(path, sizeof path, "%s/summary.json", run_dir);
  char *text = json_read_file(path, err, errlen);
  if (!text)
    return -1;
  cJSON *o = json_parse_located(text, path, err, errlen);
  free(text);
  if (!o)
    return -1;
  /* Every metric row of the table; the optional ones (fragmentation,
   * migration, MIG, ... which older engines did not write) are left empty
   * when missing, a missing required one is an error. */
  int rc = metrics_from_json(m, o, path, err, errlen);
  cJSON_Delete(o);
  return rc;
}

void run_metrics_header(FILE *f) { metrics_csv_header(f); }

void run_metrics_row(FILE *f, const run_metrics *m) { metrics_csv_row(f, m); }

void research_label(char *out, size_t size, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t len = strlen(base);
  if (len > 3 && strcmp(base + len - 3, ".gz") == 0)
    len -= 3;
  for (size_t i = len; i > 1; i--)
    if (base[i - 1] == '.') {
      len = i - 1;
      break;
    }
  if (len == 0) {
    base = "x";
    len = 1;
  }
  size_t o = 0;
  for (size_t i = 0; i < len && o + 1 < size; i++) {
    char c = base[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out[o++] = ok ? c : '-';
  }
  out[o] = '\0';
}

int research_rmdir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return errno == ENOENT ? 0 : -1;
  struct dirent *e;
  char p[4096];
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
  return rmdir(dir);
}

int research_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}
