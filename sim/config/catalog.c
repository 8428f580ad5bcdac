#include "catalog.h"
#include "jsonutil.h"

#include <libsched/libsched.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern const unsigned char schedsim_catalog_json[];
extern const unsigned long schedsim_catalog_json_len;

void catalog_free(gpu_catalog *cat) {
  for (int i = 0; i < cat->n; i++) {
    gpu_model_info *m = &cat->models[i];
    free(m->name);
    for (int k = 0; k < m->naliases; k++)
      free(m->aliases[k]);
    free(m->aliases);
    free(m->price_source);
    free(m->price_date);
    for (int k = 0; k < m->nmig; k++)
      free(m->mig_profiles[k].name);
    free(m->mig_profiles);
  }
  free(cat->models);
  cat->models = NULL;
  cat->n = 0;
}

/* A number or null (0 then). -1 for another type. */
static int opt_number(const cJSON *o, const char *key, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  *out = 0;
  if (!v || cJSON_IsNull(v))
    return 0;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
    return -1;
  *out = v->valuedouble;
  return 1;
}

static char *opt_string(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return json_strdup(cJSON_IsString(v) ? v->valuestring : "");
}

/* An integer in [lo, hi]; -1 for anything else. */
static int int_in(const cJSON *v, int lo, int hi, int *out) {
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
      v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
      v->valuedouble > hi)
    return -1;
  *out = (int)v->valuedouble;
  return 0;
}

/*
 * "mig_profiles": [{"name", "kind", "profile_id", "compute_slices",
 * "memory_slots", "starts", "memory_gib", "sm_count", "verified", "note"}].
 * The slices, slots and starts of a kind are libsched's placement table
 * (docs/DESIGN.md section 4, normative): a catalog that disagrees is an error.
 * One profile per kind and model, names unique within the model.
 */
static int parse_mig_profiles(gpu_model_info *g, const cJSON *arr,
                              const char *origin, const char *model_where,
                              char *err, size_t errlen) {
  static const char *const keys[] = {
      "name",         "kind",   "profile_id", "compute_slices",
      "memory_slots", "starts", "memory_gib", "sm_count",
      "verified",     "note",   NULL};
  if (!arr)
    return 0;
  if (!cJSON_IsArray(arr)) {
    snprintf(err, errlen, "%s: %s: 'mig_profiles' must be an array", origin,
             model_where);
    return -1;
  }
  int n = cJSON_GetArraySize(arr);
  g->mig_profiles = calloc(n ? (size_t)n : 1, sizeof *g->mig_profiles);
  if (!g->mig_profiles) {
    snprintf(err, errlen, "%s: out of memory", origin);
    return -1;
  }
  const cJSON *p;
  int j = 0;
  cJSON_ArrayForEach(p, arr) {
    char where[128];
    snprintf(where, sizeof where, "%s.mig_profiles[%d]", model_where, j++);
    if (!cJSON_IsObject(p)) {
      snprintf(err, errlen, "%s: %s: must be an object", origin, where);
      return -1;
    }
    if (json_check_keys(p, keys, origin, where, err, errlen))
      return -1;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(p, "kind");
    if (!cJSON_IsString(name) || !name->valuestring[0]) {
      snprintf(err, errlen, "%s: %s: 'name' must be a non-empty string",
               origin, where);
      return -1;
    }
    int k = cJSON_IsString(kind) ? lsched_mig_kind_from_name(kind->valuestring)
                                 : LSCHED_ENOENT;
    if (k < 1) {
      snprintf(err, errlen, "%s: %s: 'kind' must be one of 1g, 1g-2x, 2g, "
               "3g, 4g, 7g", origin, where);
      return -1;
    }
    if (catalog_mig_profile(g, name->valuestring) || catalog_mig_kind(g, k)) {
      snprintf(err, errlen, "%s: %s: profile '%s' or kind %s listed twice "
               "for %s", origin, where, name->valuestring,
               lsched_mig_kind_name(k), g->name);
      return -1;
    }
    int cs, slots;
    if (int_in(cJSON_GetObjectItemCaseSensitive(p, "compute_slices"), 0, 99,
               &cs) || cs != lsched_mig_kind_slices(k) ||
        int_in(cJSON_GetObjectItemCaseSensitive(p, "memory_slots"), 0, 99,
               &slots) || slots != lsched_mig_kind_size(k)) {
      snprintf(err, errlen, "%s: %s: a %s profile has %d compute slices and "
               "%d memory slots (the placement table of docs/DESIGN.md "
               "section 4)",
               origin, where, lsched_mig_kind_name(k),
               lsched_mig_kind_slices(k), lsched_mig_kind_size(k));
      return -1;
    }
    const cJSON *starts = cJSON_GetObjectItemCaseSensitive(p, "starts");
    unsigned mask = 0;
    const cJSON *sv;
    int bad = !cJSON_IsArray(starts);
    if (!bad)
      cJSON_ArrayForEach(sv, starts) {
        int st;
        if (int_in(sv, 0, 7, &st) || (mask >> st) & 1)
          bad = 1;
        else
          mask |= 1u << st;
      }
    if (bad || mask != lsched_mig_kind_starts(k)) {
      snprintf(err, errlen, "%s: %s: 'starts' of a %s profile must be the "
               "valid starts of the placement table", origin, where,
               lsched_mig_kind_name(k));
      return -1;
    }
    gpu_mig_profile *mp = &g->mig_profiles[g->nmig];
    double mem;
    if (opt_number(p, "memory_gib", &mem) <= 0 || !(mem > 0)) {
      snprintf(err, errlen, "%s: %s: 'memory_gib' must be a number > 0 "
               "(mark an estimate with \"verified\": false)", origin, where);
      return -1;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, "profile_id");
    mp->profile_id = -1;
    if (v && !cJSON_IsNull(v) && int_in(v, 0, 1000, &mp->profile_id)) {
      snprintf(err, errlen, "%s: %s: 'profile_id' must be an integer >= 0",
               origin, where);
      return -1;
    }
    v = cJSON_GetObjectItemCaseSensitive(p, "sm_count");
    if (v && !cJSON_IsNull(v) && int_in(v, 0, 100000, &mp->sm_count)) {
      snprintf(err, errlen, "%s: %s: 'sm_count' must be an integer >= 0",
               origin, where);
      return -1;
    }
    v = cJSON_GetObjectItemCaseSensitive(p, "verified");
    if (v && !cJSON_IsBool(v)) {
      snprintf(err, errlen, "%s: %s: 'verified' must be true or false",
               origin, where);
      return -1;
    }
    v = cJSON_GetObjectItemCaseSensitive(p, "note");
    if (v && !cJSON_IsString(v)) {
      snprintf(err, errlen, "%s: %s: 'note' must be a string", origin, where);
      return -1;
    }
    mp->verified = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(p, "verified"));
    mp->kind = k;
    mp->memory_gib = mem;
    mp->name = json_strdup(name->valuestring);
    if (!mp->name) {
      snprintf(err, errlen, "%s: out of memory", origin);
      return -1;
    }
    g->nmig++;
  }
  if (g->nmig && !g->mig) {
    snprintf(err, errlen, "%s: %s: 'mig_profiles' given but 'mig' is not "
             "true", origin, model_where);
    return -1;
  }
  return 0;
}

const gpu_mig_profile *catalog_mig_profile(const gpu_model_info *m,
                                           const char *name) {
  for (int i = 0; i < m->nmig; i++)
    if (strcasecmp(m->mig_profiles[i].name, name) == 0)
      return &m->mig_profiles[i];
  return NULL;
}

const gpu_mig_profile *catalog_mig_kind(const gpu_model_info *m, int kind) {
  for (int i = 0; i < m->nmig; i++)
    if (m->mig_profiles[i].kind == kind)
      return &m->mig_profiles[i];
  return NULL;
}

int catalog_parse(gpu_catalog *cat, const char *text, const char *origin,
                  char *err, size_t errlen) {
  memset(cat, 0, sizeof *cat);
  cJSON *root = json_parse_located(text, origin, err, errlen);
  if (!root)
    return -1;
  static const char *const top_keys[] = {"about", "models", NULL};
  static const char *const model_keys[] = {
      "name",  "aliases", "memory_gib",         "bf16_tflops",  "tdp_w",
      "mig",   "price_per_gpu_hour", "price_source", "price_date",
      "mig_profiles", "idle_w", "busy_w", NULL}; /* power: read by the energy model */
  int rc = -1;
  const cJSON *models = cJSON_GetObjectItemCaseSensitive(root, "models");
  /* A root or model that is not an object used to fail with no message
   * at all (found by tests/fuzz/fuzz_catalog.c): say what is wrong. */
  if (!cJSON_IsObject(root)) {
    snprintf(err, errlen, "%s: the catalog must be a JSON object", origin);
    goto out;
  }
  if (json_check_keys(root, top_keys, origin, "top level", err, errlen))
    goto out;
  if (!cJSON_IsArray(models)) {
    snprintf(err, errlen, "%s: 'models' must be an array", origin);
    goto out;
  }
  int n = cJSON_GetArraySize(models);
  cat->models = calloc(n ? (size_t)n : 1, sizeof *cat->models);
  if (!cat->models) {
    snprintf(err, errlen, "%s: out of memory", origin);
    goto out;
  }
  const cJSON *m;
  int i = 0;
  cJSON_ArrayForEach(m, models) {
    char where[64];
    snprintf(where, sizeof where, "models[%d]", i);
    if (!cJSON_IsObject(m)) {
      snprintf(err, errlen, "%s: %s: must be an object", origin, where);
      goto out;
    }
    if (json_check_keys(m, model_keys, origin, where, err, errlen))
      goto out;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
    if (!cJSON_IsString(name) || !name->valuestring[0]) {
      snprintf(err, errlen, "%s: %s: 'name' must be a non-empty string",
               origin, where);
      goto out;
    }
    if (catalog_find(cat, name->valuestring)) {
      snprintf(err, errlen, "%s: %s: model '%s' defined twice", origin, where,
               name->valuestring);
      goto out;
    }
    gpu_model_info *g = &cat->models[cat->n++];
    g->name = json_strdup(name->valuestring);
    const cJSON *al = cJSON_GetObjectItemCaseSensitive(m, "aliases");
    if (al && !cJSON_IsArray(al)) {
      snprintf(err, errlen, "%s: %s: 'aliases' must be an array", origin,
               where);
      goto out;
    }
    int na = al ? cJSON_GetArraySize(al) : 0;
    g->aliases = calloc(na ? (size_t)na : 1, sizeof *g->aliases);
    /* Out of memory is checked before the names are used (a NULL name or
     * alias would crash catalog_find; found by tests/test_faults.c). */
    if (!g->aliases || !g->name) {
      snprintf(err, errlen, "%s: out of memory", origin);
      goto out;
    }
    const cJSON *a;
    if (al)
      cJSON_ArrayForEach(a, al) {
        if (!cJSON_IsString(a)) {
          snprintf(err, errlen, "%s: %s: aliases must be strings", origin,
                   where);
          goto out;
        }
        /* An alias already naming another model (its name or one of its
         * aliases) would make lookups pick whichever comes first. */
        const gpu_model_info *other = catalog_find(cat, a->valuestring);
        if (other && other != g) {
          snprintf(err, errlen,
                   "%s: %s: alias '%.100s' already names model '%.100s'",
                   origin, where, a->valuestring, other->name);
          goto out;
        }
        if (!(g->aliases[g->naliases] = json_strdup(a->valuestring))) {
          snprintf(err, errlen, "%s: out of memory", origin);
          goto out;
        }
        g->naliases++;
      }
    double price;
    int hp;
    if (opt_number(m, "memory_gib", &g->memory_gib) < 0 ||
        opt_number(m, "bf16_tflops", &g->bf16_tflops) < 0 ||
        opt_number(m, "tdp_w", &g->tdp_w) < 0 ||
        (hp = opt_number(m, "price_per_gpu_hour", &price)) < 0) {
      snprintf(err, errlen,
               "%s: %s: memory_gib, bf16_tflops, tdp_w and "
               "price_per_gpu_hour must be non-negative numbers or null",
               origin, where);
      goto out;
    }
    if (hp > 0 && price > CATALOG_MAX_PRICE) {
      snprintf(err, errlen, "%s: %s: price_per_gpu_hour must be at most %g",
               origin, where, CATALOG_MAX_PRICE);
      goto out;
    }
    g->has_price = hp > 0;
    g->price_per_gpu_hour = price;
    g->mig = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "mig"));
    g->price_source = opt_string(m, "price_source");
    g->price_date = opt_string(m, "price_date");
    if (!g->name || !g->price_source || !g->price_date) {
      snprintf(err, errlen, "%s: out of memory", origin);
      goto out;
    }
    if (parse_mig_profiles(g, cJSON_GetObjectItemCaseSensitive(m, "mig_profiles"),
                           origin, where, err, errlen))
      goto out;
    i++;
  }
  rc = 0;
out:
  cJSON_Delete(root);
  if (rc)
    catalog_free(cat);
  return rc;
}

int catalog_load_default(gpu_catalog *cat, char *err, size_t errlen) {
  (void)schedsim_catalog_json_len;
  return catalog_parse(cat, (const char *)schedsim_catalog_json,
                       "built-in gpu_catalog.json", err, errlen);
}

int catalog_load_file(gpu_catalog *cat, const char *path, char *err,
                      size_t errlen) {
  char *text = json_read_file(path, err, errlen);
  if (!text)
    return -1;
  int rc = catalog_parse(cat, text, path, err, errlen);
  free(text);
  return rc;
}

const gpu_model_info *catalog_find(const gpu_catalog *cat, const char *name) {
  for (int i = 0; i < cat->n; i++) {
    const gpu_model_info *m = &cat->models[i];
    if (strcasecmp(m->name, name) == 0)
      return m;
    for (int k = 0; k < m->naliases; k++)
      if (strcasecmp(m->aliases[k], name) == 0)
        return m;
  }
  return NULL;
}

int catalog_override_price(gpu_catalog *cat, const char *assignment, char *err,
                           size_t errlen) {
  const char *eq = strchr(assignment, '=');
  if (!eq || eq == assignment) {
    snprintf(err, errlen, "--price '%s': expected MODEL=USD_PER_GPU_HOUR",
             assignment);
    return -1;
  }
  char model[128];
  size_t len = (size_t)(eq - assignment);
  /* A name cut to fit would name another model, or none: refuse it. */
  if (len >= sizeof model) {
    snprintf(err, errlen, "--price '%.160s...': unknown GPU model (name too "
             "long)", assignment);
    return -1;
  }
  memcpy(model, assignment, len);
  model[len] = 0;
  char *end;
  double v = strtod(eq + 1, &end);
  if (end == eq + 1 || *end || !isfinite(v) || v < 0 ||
      v > CATALOG_MAX_PRICE) {
    snprintf(err, errlen, "--price '%s': price must be a number in 0..%g",
             assignment, CATALOG_MAX_PRICE);
    return -1;
  }
  gpu_model_info *m = (gpu_model_info *)catalog_find(cat, model);
  if (!m) {
    snprintf(err, errlen, "--price '%s': unknown GPU model '%s'", assignment,
             model);
    return -1;
  }
  m->has_price = 1;
  m->price_per_gpu_hour = v;
  free(m->price_source);
  m->price_source = json_strdup("--price on the command line");
  return 0;
}
