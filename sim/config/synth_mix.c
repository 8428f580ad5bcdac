/* Workload mix files for `schedsim generate --mix FILE` (see synth_mix.h). */
#include "synth_mix.h"

#include "jsonutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An optional number in (lo, hi]; 0 absent, 1 set, -1 bad. */
static int num(const cJSON *o, const char *key, double lo, double hi,
               double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v)
    return 0;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
      !(v->valuedouble > lo) || v->valuedouble > hi)
    return -1;
  *out = v->valuedouble;
  return 1;
}

/* An integer in [lo, hi] (required). */
static int intval(const cJSON *o, const char *key, double lo, double hi,
                  int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
      v->valuedouble < lo || v->valuedouble > hi)
    return -1;
  *out = (int64_t)v->valuedouble;
  return 0;
}

int synth_mix_load(const char *path, synth_params *p, synth_shape **shapes,
                   char *err, size_t errlen) {
  static const char *const top_keys[] = {
      "description",   "jobs",          "arrival_rate_per_hour",
      "duration_median_s", "duration_sigma", "max_duration_s",
      "shapes",        NULL};
  static const char *const shape_keys[] = {
      "name", "weight", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli",
      NULL};
  *shapes = NULL;
  char *text = json_read_file(path, err, errlen);
  if (!text)
    return -1;
  cJSON *root = json_parse_located(text, path, err, errlen);
  free(text);
  if (!root)
    return -1;
  int rc = -1;
  synth_shape *v = NULL;
  if (!cJSON_IsObject(root)) {
    snprintf(err, errlen, "%s: a mix file is a JSON object", path);
    goto out;
  }
  if (json_check_keys(root, top_keys, path, "top level", err, errlen))
    goto out;
  double x;
  int r;
  if ((r = num(root, "arrival_rate_per_hour", 0, 1e9, &x)) <= 0) {
    /* absent, or present but out of range: each gets its own reason */
    snprintf(err, errlen, "%s: 'arrival_rate_per_hour' (jobs per hour, > 0 "
             "and <= 1e9) %s", path, r == 0 ? "is required" : "is out of range");
    goto out;
  }
  p->arrival_rate = x / 3600.0;
  if (num(root, "duration_median_s", 0, 1e9, &x) < 0) {
    snprintf(err, errlen, "%s: 'duration_median_s' must be > 0 and <= 1e9", path);
    goto out;
  } else if (num(root, "duration_median_s", 0, 1e9, &x) > 0) {
    p->duration_mu = log(x);
  }
  if ((r = num(root, "duration_sigma", -1e-300, 100, &x)) < 0) {
    snprintf(err, errlen, "%s: 'duration_sigma' must be >= 0 and <= 100", path);
    goto out;
  } else if (r > 0) {
    p->duration_sigma = x;
  }
  if ((r = num(root, "max_duration_s", 1, 1e12, &x)) < 0) {
    snprintf(err, errlen, "%s: 'max_duration_s' must be > 1 and <= 1e12", path);
    goto out;
  } else if (r > 0) {
    p->max_duration_s = x;
  }
  if (cJSON_GetObjectItemCaseSensitive(root, "jobs")) {
    int64_t jobs;
    if (intval(root, "jobs", 1, 4e9, &jobs)) {
      snprintf(err, errlen, "%s: 'jobs' must be an integer >= 1 and <= 4e9", path);
      goto out;
    }
    p->jobs = (size_t)jobs;
  }
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "shapes");
  int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
  if (n == 0) {
    snprintf(err, errlen, "%s: 'shapes' must be a non-empty array", path);
    goto out;
  }
  v = calloc((size_t)n, sizeof *v);
  if (!v) {
    snprintf(err, errlen, "%s: out of memory", path);
    goto out;
  }
  const cJSON *s;
  int i = 0;
  cJSON_ArrayForEach(s, arr) {
    char where[32];
    snprintf(where, sizeof where, "shapes[%d]", i);
    if (!cJSON_IsObject(s)) {
      snprintf(err, errlen, "%s: %s: must be an object", path, where);
      goto out;
    }
    if (json_check_keys(s, shape_keys, path, where, err, errlen))
      goto out;
    int64_t cpu, mem, ng, milli;
    if (num(s, "weight", 0, 1e12, &v[i].weight) <= 0 ||
        intval(s, "cpu_milli", 0, 1e12, &cpu) ||
        intval(s, "memory_mib", 0, 1e12, &mem) ||
        intval(s, "num_gpu", 0, 64, &ng) ||
        intval(s, "gpu_milli", 0, 1000, &milli) || (ng > 0) != (milli > 0)) {
      snprintf(err, errlen, "%s: %s: needs weight in (0, 1e12], cpu_milli and "
               "memory_mib integers in 0..1e12, num_gpu 0..64 and gpu_milli 1..1000 (0 "
               "exactly when num_gpu is 0)", path, where);
      goto out;
    }
    v[i].cpu_milli = cpu;
    v[i].memory_mib = mem;
    v[i].num_gpu = (int32_t)ng;
    v[i].gpu_milli = (int32_t)milli;
    i++;
  }
  p->shapes = v;
  p->nshapes = n;
  *shapes = v;
  v = NULL;
  rc = 0;
out:
  free(v);
  cJSON_Delete(root);
  return rc;
}
