#include "catalog.h"
#include "jsonutil.h"

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

int catalog_parse(gpu_catalog *cat, const char *text, const char *origin,
                  char *err, size_t errlen) {
  memset(cat, 0, sizeof *cat);
  cJSON *root = json_parse_located(text, origin, err, errlen);
  if (!root)
    return -1;
  static const char *const top_keys[] = {"about", "models", NULL};
  static const char *const model_keys[] = {
      "name",  "aliases", "memory_gib",         "bf16_tflops",  "tdp_w",
      "mig",   "price_per_gpu_hour", "price_source", "price_date", NULL};
  int rc = -1;
  const cJSON *models = cJSON_GetObjectItemCaseSensitive(root, "models");
  if (!cJSON_IsObject(root) ||
      json_check_keys(root, top_keys, origin, "top level", err, errlen))
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
    if (!cJSON_IsObject(m) ||
        json_check_keys(m, model_keys, origin, where, err, errlen))
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
    const cJSON *a;
    if (al)
      cJSON_ArrayForEach(a, al) {
        if (!cJSON_IsString(a)) {
          snprintf(err, errlen, "%s: %s: aliases must be strings", origin,
                   where);
          goto out;
        }
        g->aliases[g->naliases++] = json_strdup(a->valuestring);
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
    g->has_price = hp > 0;
    g->price_per_gpu_hour = price;
    g->mig = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "mig"));
    g->price_source = opt_string(m, "price_source");
    g->price_date = opt_string(m, "price_date");
    if (!g->name || !g->price_source || !g->price_date) {
      snprintf(err, errlen, "%s: out of memory", origin);
      goto out;
    }
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
  if (len >= sizeof model)
    len = sizeof model - 1;
  memcpy(model, assignment, len);
  model[len] = 0;
  char *end;
  double v = strtod(eq + 1, &end);
  if (end == eq + 1 || *end || !isfinite(v) || v < 0) {
    snprintf(err, errlen, "--price '%s': price must be a non-negative number",
             assignment);
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
