/*
 * Speed tables (speed_table.h): schedsim's own JSON format (the built-in
 * speed_default.json) and Gavel's simulation_throughputs.json, read
 * unchanged. Every error names the origin and the key that is wrong.
 */
#include "speed_table.h"
#include "jsonutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern const unsigned char schedsim_speed_json[];
extern const unsigned long schedsim_speed_json_len;

static const int scale_gpus[SPEED_SCALES] = {1, 2, 4, 8};

void speed_table_free(speed_table *t) {
  if (!t)
    return;
  free(t->origin);
  for (int i = 0; i < t->nclasses; i++)
    free(t->classes[i]);
  free(t->classes);
  free(t->models);
  free(t->e);
  free(t->pair);
  memset(t, 0, sizeof *t);
}

int speed_table_class(const speed_table *t, const char *name) {
  for (int i = 0; i < t->nclasses; i++)
    if (strcmp(t->classes[i], name) == 0)
      return i;
  return -1;
}

int speed_table_model(const speed_table *t, const gpu_model_info *m) {
  for (int i = 0; i < t->nmodels; i++)
    if (t->models[i] == m)
      return i;
  return -1;
}

static int scale_index(int k) {
  for (int i = 0; i < SPEED_SCALES; i++)
    if (scale_gpus[i] == k)
      return i;
  return -1;
}

double speed_table_speed(const speed_table *t, int c, int m, int k,
                         int spread) {
  if (c < 0 || m < 0 || k < 1)
    return 0;
  const speed_entry *e = &t->e[(size_t)c * (size_t)t->nmodels + (size_t)m];
  for (int i = SPEED_SCALES - 1; i >= 0; i--) {
    if (scale_gpus[i] > k)
      continue;
    double v = spread && e->uncons[i] > 0 ? e->uncons[i] : e->cons[i];
    if (v > 0)
      return v * (double)k / (double)scale_gpus[i];
  }
  return 0;
}

double speed_table_pair(const speed_table *t, int a, int b, int m) {
  if (t->pair && a >= 0 && b >= 0 && m >= 0) {
    double p = t->pair[((size_t)a * (size_t)t->nclasses + (size_t)b) *
                           (size_t)t->nmodels +
                       (size_t)m];
    if (p > 0)
      return p < 1 ? p : 1;
  }
  return t->interference;
}

/* ---- building a table ---- */

static int add_class(speed_table *t, const char *name) {
  int c = speed_table_class(t, name);
  if (c >= 0)
    return c;
  char **nc = realloc(t->classes, (size_t)(t->nclasses + 1) * sizeof *nc);
  if (!nc)
    return -1;
  t->classes = nc;
  if (!(nc[t->nclasses] = json_strdup(name)))
    return -1;
  return t->nclasses++;
}

static int add_model(speed_table *t, const gpu_model_info *m) {
  int i = speed_table_model(t, m);
  if (i >= 0)
    return i;
  const gpu_model_info **nm =
      realloc(t->models, (size_t)(t->nmodels + 1) * sizeof *nm);
  if (!nm)
    return -1;
  t->models = nm;
  nm[t->nmodels] = m;
  return t->nmodels++;
}

/* The entries laid out for the final class and model counts. */
static int alloc_entries(speed_table *t, int pairs) {
  size_t n = (size_t)t->nclasses * (size_t)t->nmodels;
  t->e = calloc(n ? n : 1, sizeof *t->e);
  if (pairs)
    t->pair = calloc(n * (size_t)(t->nclasses ? t->nclasses : 1) + 1,
                     sizeof *t->pair);
  return !t->e || (pairs && !t->pair) ? -1 : 0;
}

static speed_entry *entry(speed_table *t, int c, int m) {
  return &t->e[(size_t)c * (size_t)t->nmodels + (size_t)m];
}

static int positive(const cJSON *v, double *out) {
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0)
    return -1;
  *out = v->valuedouble;
  return 0;
}

#define FAIL(...)                                                              \
  do {                                                                         \
    snprintf(err, errlen, __VA_ARGS__);                                        \
    return -1;                                                                 \
  } while (0)

/* A scale object {"1": s, "2": s, ...} into v[]. */
static int read_scales(const cJSON *o, double *v, const char *origin,
                       const char *cls, const char *model, int allow_uncons,
                       char *err, size_t errlen) {
  const cJSON *it;
  cJSON_ArrayForEach(it, o) {
    if (allow_uncons && strcmp(it->string, "unconsolidated") == 0)
      continue;
    char *end;
    long k = strtol(it->string, &end, 10);
    int si = *end || end == it->string ? -1 : scale_index((int)k);
    if (si < 0)
      FAIL("%s: classes.%s.%s: key '%s': expected a GPU count 1, 2, 4 or 8%s",
           origin, cls, model, it->string,
           allow_uncons ? " or \"unconsolidated\"" : "");
    if (positive(it, &v[si]))
      FAIL("%s: classes.%s.%s.%s: expected a speed > 0", origin, cls, model,
           it->string);
  }
  return 0;
}

/* lenient (the built-in table): models the catalog (--catalog) lacks are
 * left out instead of refused. */
static int parse_own(speed_table *t, const cJSON *root, const char *origin,
                     const gpu_catalog *cat, int lenient, char *err,
                     size_t errlen) {
  static const char *const keys[] = {"about", "reference", "classes",
                                     "interference", "sources", NULL};
  if (json_check_keys(root, keys, origin, "top level", err, errlen))
    return -1;
  const cJSON *ref = cJSON_GetObjectItemCaseSensitive(root, "reference");
  if (ref && (!cJSON_IsString(ref) ||
              (!lenient && !catalog_find(cat, ref->valuestring))))
    FAIL("%s: key 'reference': expected a GPU model of the catalog", origin);
  const cJSON *classes = cJSON_GetObjectItemCaseSensitive(root, "classes");
  if (!cJSON_IsObject(classes) || !classes->child)
    FAIL("%s: key 'classes': expected an object of job classes", origin);
  t->interference = SPEED_DEFAULT_INTERFERENCE;
  const cJSON *inf = cJSON_GetObjectItemCaseSensitive(root, "interference");
  if (inf) {
    static const char *const ik[] = {"default", NULL};
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(inf, "default");
    if (!cJSON_IsObject(inf) ||
        json_check_keys(inf, ik, origin, "interference", err, errlen))
      return -1;
    if (d && (positive(d, &t->interference) || t->interference > 1))
      FAIL("%s: interference.default: expected a factor in (0, 1]", origin);
  }
  /* First the names (classes, models), then the values. */
  const cJSON *c, *m;
  cJSON_ArrayForEach(c, classes) {
    if (!cJSON_IsObject(c) || !c->child)
      FAIL("%s: classes.%s: expected an object of GPU models", origin,
           c->string);
    if (add_class(t, c->string) < 0)
      FAIL("out of memory");
    cJSON_ArrayForEach(m, c) {
      const gpu_model_info *gm = catalog_find(cat, m->string);
      if (!gm && lenient)
        continue;
      if (!gm)
        FAIL("%s: classes.%s.%s: unknown GPU model '%s' (not in the catalog)",
             origin, c->string, m->string, m->string);
      if (add_model(t, gm) < 0)
        FAIL("out of memory");
    }
  }
  if (alloc_entries(t, 0))
    FAIL("out of memory");
  cJSON_ArrayForEach(c, classes) {
    int ci = speed_table_class(t, c->string);
    cJSON_ArrayForEach(m, c) {
      if (!catalog_find(cat, m->string))
        continue; /* lenient: left out */
      speed_entry *e =
          entry(t, ci, speed_table_model(t, catalog_find(cat, m->string)));
      if (cJSON_IsNumber(m)) {
        if (positive(m, &e->cons[0]))
          FAIL("%s: classes.%s.%s: expected a speed > 0", origin, c->string,
               m->string);
        continue;
      }
      if (!cJSON_IsObject(m))
        FAIL("%s: classes.%s.%s: expected a speed > 0 or an object of GPU "
             "counts",
             origin, c->string, m->string);
      if (read_scales(m, e->cons, origin, c->string, m->string, 1, err,
                      errlen))
        return -1;
      const cJSON *u = cJSON_GetObjectItemCaseSensitive(m, "unconsolidated");
      if (u && (!cJSON_IsObject(u) ||
                read_scales(u, e->uncons, origin, c->string, m->string, 0,
                            err, errlen))) {
        if (!cJSON_IsObject(u))
          snprintf(err, errlen, "%s: classes.%s.%s.unconsolidated: expected "
                   "an object of GPU counts", origin, c->string, m->string);
        return -1;
      }
      if (e->cons[0] <= 0)
        FAIL("%s: classes.%s.%s: key '1' (the 1-GPU speed) is missing",
             origin, c->string, m->string);
    }
  }
  return 0;
}

/* ---- Gavel's simulation_throughputs.json ---- */

/* Parses "('NAME', K)" into name (NUL-terminated, at most cap bytes) and
 * k. 0, or -1. */
static int gavel_key(const char *s, char *name, size_t cap, int *k) {
  size_t n = strlen(s);
  if (n < 8 || strncmp(s, "('", 2) != 0 || s[n - 1] != ')')
    return -1;
  const char *q = strstr(s + 2, "', ");
  if (!q || (size_t)(q - (s + 2)) >= cap || q == s + 2)
    return -1;
  memcpy(name, s + 2, (size_t)(q - (s + 2)));
  name[q - (s + 2)] = 0;
  char *end;
  long v = strtol(q + 3, &end, 10);
  if (end != s + n - 1 || v < 1)
    return -1;
  *k = (int)v;
  return 0;
}

/* Gavel's type keys and the catalog models each stands for. */
static int gavel_models(const char *type, const char **names, int *uncons) {
  size_t n = strlen(type);
  static const char sfx[] = "_unconsolidated";
  *uncons = n > sizeof sfx - 1 &&
            strcmp(type + n - (sizeof sfx - 1), sfx) == 0;
  size_t base = *uncons ? n - (sizeof sfx - 1) : n;
  if (base == 3 && strncmp(type, "k80", 3) == 0) {
    names[0] = "K80";
    return 1;
  }
  if (base == 4 && strncmp(type, "p100", 4) == 0) {
    names[0] = "P100";
    return 1;
  }
  if (base == 4 && strncmp(type, "v100", 4) == 0) {
    names[0] = "V100M16";
    names[1] = "V100M32";
    return 2;
  }
  return 0;
}

static int parse_gavel(speed_table *t, const cJSON *root, const char *origin,
                       const gpu_catalog *cat, char *err, size_t errlen) {
  const cJSON *ty, *job;
  char name[256];
  int k;
  t->interference = SPEED_DEFAULT_INTERFERENCE;
  /* Pass 1: every type, class and scale is well formed; names. */
  cJSON_ArrayForEach(ty, root) {
    const char *mn[2];
    int unc;
    int nm = gavel_models(ty->string, mn, &unc);
    if (nm == 0)
      FAIL("%s: key '%s': not a Gavel GPU type (k80, p100, v100, each "
           "optionally _unconsolidated)",
           origin, ty->string);
    if (!cJSON_IsObject(ty))
      FAIL("%s: key '%s': expected an object of jobs", origin, ty->string);
    for (int i = 0; i < nm; i++) {
      const gpu_model_info *gm = catalog_find(cat, mn[i]);
      if (!gm)
        FAIL("%s: key '%s': GPU model %s is not in the catalog", origin,
             ty->string, mn[i]);
      if (add_model(t, gm) < 0)
        FAIL("out of memory");
    }
    cJSON_ArrayForEach(job, ty) {
      if (gavel_key(job->string, name, sizeof name, &k) || scale_index(k) < 0)
        FAIL("%s: %s.\"%s\": expected a key ('CLASS', K) with K 1, 2, 4 or 8",
             origin, ty->string, job->string);
      const cJSON *iso = cJSON_GetObjectItemCaseSensitive(job, "null");
      if (!cJSON_IsObject(job) || !cJSON_IsNumber(iso) ||
          !isfinite(iso->valuedouble) || iso->valuedouble < 0)
        FAIL("%s: %s.\"%s\": expected an object with \"null\": the isolated "
             "throughput (a number >= 0)",
             origin, ty->string, job->string);
      if (add_class(t, name) < 0)
        FAIL("out of memory");
    }
  }
  if (t->nclasses == 0)
    FAIL("%s: no jobs", origin);
  if (alloc_entries(t, 1))
    FAIL("out of memory");
  /* Pass 2: isolated throughputs (0: not measured). */
  cJSON_ArrayForEach(ty, root) {
    const char *mn[2];
    int unc;
    int nm = gavel_models(ty->string, mn, &unc);
    cJSON_ArrayForEach(job, ty) {
      gavel_key(job->string, name, sizeof name, &k);
      int c = speed_table_class(t, name), si = scale_index(k);
      double v = cJSON_GetObjectItemCaseSensitive(job, "null")->valuedouble;
      for (int i = 0; i < nm; i++) {
        speed_entry *e =
            entry(t, c, speed_table_model(t, catalog_find(cat, mn[i])));
        (unc ? e->uncons : e->cons)[si] = v;
      }
    }
  }
  /* Pass 3: single-GPU co-location pairs on consolidated types. */
  cJSON_ArrayForEach(ty, root) {
    const char *mn[2];
    int unc;
    int nm = gavel_models(ty->string, mn, &unc);
    cJSON_ArrayForEach(job, ty) {
      gavel_key(job->string, name, sizeof name, &k);
      int a = speed_table_class(t, name);
      const cJSON *p;
      cJSON_ArrayForEach(p, job) {
        if (strcmp(p->string, "null") == 0)
          continue;
        char other[256];
        int k2;
        const cJSON *own = cJSON_GetArrayItem(p, 0),
                    *oth = cJSON_GetArrayItem(p, 1);
        if (gavel_key(p->string, other, sizeof other, &k2) ||
            !cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 ||
            !cJSON_IsNumber(own) || !cJSON_IsNumber(oth) ||
            !isfinite(own->valuedouble) || !isfinite(oth->valuedouble) ||
            own->valuedouble < 0 || oth->valuedouble < 0)
          FAIL("%s: %s.\"%s\".\"%s\": expected a co-location key ('CLASS', "
               "K) with [own, other] throughputs >= 0",
               origin, ty->string, job->string, p->string);
        int b = speed_table_class(t, other);
        if (unc || k != 1 || k2 != 1 || b < 0)
          continue;
        for (int i = 0; i < nm; i++) {
          int m = speed_table_model(t, catalog_find(cat, mn[i]));
          double ia = entry(t, a, m)->cons[0], ib = entry(t, b, m)->cons[0];
          if (ia > 0 && ib > 0 && own->valuedouble > 0 &&
              oth->valuedouble > 0)
            t->pair[((size_t)a * (size_t)t->nclasses + (size_t)b) *
                        (size_t)t->nmodels +
                    (size_t)m] =
                own->valuedouble / ia + oth->valuedouble / ib;
        }
      }
    }
  }
  return 0;
}

/* Speeds relative to one GPU of the reference model, per class (a class
 * the reference does not measure keeps its values). */
static void normalise(speed_table *t, const gpu_model_info *ref) {
  int r = ref ? speed_table_model(t, ref) : -1;
  if (r < 0)
    return;
  for (int c = 0; c < t->nclasses; c++) {
    double v = entry(t, c, r)->cons[0];
    if (!(v > 0))
      continue;
    for (int m = 0; m < t->nmodels; m++)
      for (int i = 0; i < SPEED_SCALES; i++) {
        entry(t, c, m)->cons[i] /= v;
        entry(t, c, m)->uncons[i] /= v;
      }
  }
}

static int parse(speed_table *t, const char *text, const char *origin,
                 const gpu_catalog *cat, int lenient, char *err,
                 size_t errlen) {
  memset(t, 0, sizeof *t);
  cJSON *root = json_parse_located(text, origin, err, errlen);
  if (!root)
    return -1;
  int rc;
  if (!cJSON_IsObject(root)) {
    snprintf(err, errlen, "%s: expected a JSON object", origin);
    rc = -1;
  } else if (cJSON_GetObjectItemCaseSensitive(root, "classes")) {
    rc = parse_own(t, root, origin, cat, lenient, err, errlen);
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(root, "reference");
    if (rc == 0)
      normalise(t, catalog_find(cat, cJSON_IsString(ref) ? ref->valuestring
                                                          : "V100M16"));
  } else {
    rc = parse_gavel(t, root, origin, cat, err, errlen);
    if (rc == 0)
      normalise(t, catalog_find(cat, "V100M16"));
  }
  cJSON_Delete(root);
  if (rc == 0 && !(t->origin = json_strdup(origin))) {
    snprintf(err, errlen, "out of memory");
    rc = -1;
  }
  if (rc)
    speed_table_free(t);
  return rc;
}

int speed_table_parse(speed_table *t, const char *text, const char *origin,
                      const gpu_catalog *cat, char *err, size_t errlen) {
  return parse(t, text, origin, cat, 0, err, errlen);
}

int speed_table_load_default(speed_table *t, const gpu_catalog *cat,
                             char *err, size_t errlen) {
  (void)schedsim_speed_json_len;
  return parse(t, (const char *)schedsim_speed_json,
               "built-in speed_default.json", cat, 1, err, errlen);
}

int speed_table_load_file(speed_table *t, const char *path,
                          const gpu_catalog *cat, char *err, size_t errlen) {
  char *text = json_read_file(path, err, errlen);
  if (!text)
    return -1;
  int rc = speed_table_parse(t, text, path, cat, err, errlen);
  free(text);
  return rc;
}
