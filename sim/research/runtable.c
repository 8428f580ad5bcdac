/*
 * The per-run metrics row that compare.csv and sweep.csv share, read back
 * from each run's summary.json: merging from the files (not from memory)
 * is what lets a resumed sweep merge runs finished by an earlier
 * invocation, and cJSON prints numbers that read back to the same double,
 * so a row is the same whichever process made the run.
 */
#include "jsonutil.h"
#include "research.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int get_num(const cJSON *o, const char *key, const char *sub,
                   double *out, const char *path, char *err, size_t errlen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (sub && cJSON_IsObject(v))
    v = cJSON_GetObjectItemCaseSensitive(v, sub);
  if (!cJSON_IsNumber(v)) {
    snprintf(err, errlen, "%s: key '%s%s%s' missing or not a number", path, key,
             sub ? "." : "", sub ? sub : "");
    return -1;
  }
  *out = v->valuedouble;
  return 0;
}

int run_metrics_read(const char *run_dir, run_metrics *m, char *err,
                     size_t errlen) {
  char path[4096];
  snprintf(path, sizeof path, "%s/summary.json", run_dir);
  char *text = json_read_file(path, err, errlen);
  if (!text)
    return -1;
  cJSON *o = json_parse_located(text, path, err, errlen);
  free(text);
  if (!o)
    return -1;
  static const char *const stat_keys[5] = {"mean", "p50", "p95", "p99", "max"};
  int rc =
      get_num(o, "jobs", NULL, &m->jobs, path, err, errlen) ||
      get_num(o, "jobs_completed", NULL, &m->completed, path, err, errlen) ||
      get_num(o, "jobs_never_started", NULL, &m->never_started, path, err,
              errlen) ||
      get_num(o, "gpu_alloc_ratio_mean", NULL, &m->alloc_ratio, path, err,
              errlen) ||
      get_num(o, "makespan_s", NULL, &m->makespan_s, path, err, errlen) ||
      get_num(o, "allocated_gpu_hours", NULL, &m->gpu_hours, path, err,
              errlen) ||
      get_num(o, "cost_usd", "total", &m->cost_total, path, err, errlen) ||
      get_num(o, "cost_usd", "per_allocated_gpu_hour", &m->cost_per_gpu_hour,
              path, err, errlen) ||
      get_num(o, "cost_usd", "idle", &m->cost_idle, path, err, errlen) ||
      get_num(o, "cost_usd", "unpriced_gpus", &m->unpriced_gpus, path, err,
              errlen) ||
      get_num(o, "events", NULL, &m->events, path, err, errlen);
  for (int k = 0; k < 5 && !rc; k++)
    rc = get_num(o, "queue_time_s", stat_keys[k], &m->queue[k], path, err,
                 errlen) ||
         get_num(o, "jct_s", stat_keys[k], &m->jct[k], path, err, errlen);
  /* Optional: older summaries (and engines) have no fragmentation. */
  const char *const fk[3] = {"frag_amount_mean", "frag_rate_mean",
                             "stranded_gpu_milli_mean"};
  double *fv[3] = {&m->frag_amount, &m->frag_rate, &m->stranded_milli};
  m->has_frag = 1;
  for (int k = 0; k < 3; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, fk[k]);
    if (cJSON_IsNumber(v))
      *fv[k] = v->valuedouble;
    else
      m->has_frag = 0;
  }
  cJSON_Delete(o);
  return rc ? -1 : 0;
}

void run_metrics_header(FILE *f) {
  fputs("jobs,jobs_completed,jobs_never_started,gpu_alloc_ratio_mean,"
        "queue_mean_s,queue_p50_s,queue_p95_s,queue_p99_s,queue_max_s,"
        "jct_mean_s,jct_p50_s,jct_p95_s,jct_p99_s,jct_max_s,makespan_s,"
        "allocated_gpu_hours,cost_total_usd,cost_per_allocated_gpu_hour_usd,"
        "cost_idle_usd,unpriced_gpus,events,frag_amount_mean_milli,"
        "frag_rate_mean,stranded_gpu_milli_mean",
        f);
}

void run_metrics_row(FILE *f, const run_metrics *m) {
  fprintf(f, "%.0f,%.0f,%.0f,%.6f", m->jobs, m->completed, m->never_started,
          m->alloc_ratio);
  for (int k = 0; k < 5; k++)
    fprintf(f, ",%.3f", m->queue[k]);
  for (int k = 0; k < 5; k++)
    fprintf(f, ",%.3f", m->jct[k]);
  fprintf(f, ",%.3f,%.4f,%.4f,%.4f,%.4f,%.0f,%.0f", m->makespan_s, m->gpu_hours,
          m->cost_total, m->cost_per_gpu_hour, m->cost_idle, m->unpriced_gpus,
          m->events);
  if (m->has_frag)
    fprintf(f, ",%.3f,%.6f,%.3f", m->frag_amount, m->frag_rate,
            m->stranded_milli);
  else
    fputs(",,,", f);
}

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
