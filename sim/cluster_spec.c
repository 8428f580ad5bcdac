#include "cluster_spec.h"
#include "jsonutil.h"
#include "trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sim_default_cluster_json =
    "{\"name\": \"default-a100-h100\", \"node_groups\": ["
    "{\"name\": \"dgx-a100\", \"count\": 16, \"gpu_model\": "
    "\"A100-SXM4-80GB\", \"gpus_per_node\": 8, \"cpu_milli\": 256000, "
    "\"memory_mib\": 2097152, \"gpu_mode\": \"shared\"},"
    "{\"name\": \"hgx-h100\", \"count\": 8, \"gpu_model\": "
    "\"H100-SXM5-80GB\", \"gpus_per_node\": 8, \"cpu_milli\": 224000, "
    "\"memory_mib\": 2097152, \"gpu_mode\": \"shared\"}]}";

void sim_cluster_free(sim_cluster *sc) {
  lsched_cluster_destroy(sc->c);
  free(sc->name);
  free(sc->node_price);
  free(sc->node_priced);
  memset(sc, 0, sizeof *sc);
}

static int begin(sim_cluster *sc, int check_invariants, char *err,
                 size_t errlen) {
  memset(sc, 0, sizeof *sc);
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.check_invariants = check_invariants;
  int rc = lsched_cluster_create(&sc->c, &o);
  if (rc) {
    snprintf(err, errlen, "cannot create cluster: %s", lsched_strerror(rc));
    return -1;
  }
  return 0;
}

/* Adds n nodes of one kind; grows the price arrays. */
static int add_nodes(sim_cluster *sc, const char *origin, const char *where,
                     const char *prefix, int count, const gpu_model_info *gm,
                     int gpus, int64_t cpu, int64_t mem, lsched_gpu_mode mode,
                     int priced, double price, char *err, size_t errlen) {
  int model = -1;
  if (gpus > 0) {
    model = lsched_cluster_model_id(sc->c, gm->name, 1);
    if (model < 0) {
      snprintf(err, errlen, "%s: %s: %s", origin, where,
               lsched_strerror(model));
      return -1;
    }
  }
  size_t nn = (size_t)sc->nodes + (size_t)count;
  double *np = realloc(sc->node_price, nn * sizeof *np);
  if (np)
    sc->node_price = np;
  uint8_t *nq = realloc(sc->node_priced, nn);
  if (nq)
    sc->node_priced = nq;
  if (!np || !nq) {
    snprintf(err, errlen, "%s: out of memory", origin);
    return -1;
  }
  char name[256];
  for (int i = 0; i < count; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    if (count > 1)
      snprintf(name, sizeof name, "%s-%d", prefix, i);
    else
      snprintf(name, sizeof name, "%s", prefix);
    s.name = name;
    s.cpu_milli = cpu;
    s.memory_mib = mem;
    s.gpu_count = gpus;
    s.gpu_model = model;
    s.gpu_mode = mode;
    int id, rc = lsched_cluster_add_node(sc->c, &s, &id);
    if (rc) {
      snprintf(err, errlen, "%s: %s: %s (%s)", origin, where,
               lsched_strerror(rc), lsched_cluster_errmsg(sc->c));
      return -1;
    }
    sc->node_price[id] = priced ? price : 0;
    sc->node_priced[id] = (uint8_t)(priced || gpus == 0);
    if (!priced)
      sc->unpriced_gpus += gpus;
    sc->nodes++;
    sc->gpus += gpus;
  }
  return 0;
}

/* An integral JSON number in [lo, hi]. */
static int get_int(const cJSON *g, const char *key, int64_t lo, int64_t hi,
                   int required, int64_t *out, const char *origin,
                   const char *where, char *err, size_t errlen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(g, key);
  if (!v) {
    if (!required)
      return 0;
    snprintf(err, errlen, "%s: %s: missing key '%s'", origin, where, key);
    return -1;
  }
  double d = v->valuedouble;
  if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d) || d < (double)lo ||
      d > (double)hi) {
    snprintf(err, errlen,
             "%s: %s: '%s' must be an integer in %lld..%lld", origin, where,
             key, (long long)lo, (long long)hi);
    return -1;
  }
  *out = (int64_t)d;
  return 1;
}

int sim_cluster_from_json(sim_cluster *sc, const char *text,
                          const char *origin, const gpu_catalog *cat,
                          int check_invariants, char *err, size_t errlen) {
  cJSON *root = json_parse_located(text, origin, err, errlen);
  if (!root)
    return -1;
  if (begin(sc, check_invariants, err, errlen)) {
    cJSON_Delete(root);
    return -1;
  }
  static const char *const top_keys[] = {"name", "description", "node_groups",
                                         NULL};
  static const char *const group_keys[] = {
      "name",     "count",      "gpu_model",          "gpus_per_node",
      "cpu_milli", "memory_mib", "gpu_mode", "price_per_gpu_hour",
      "mig_layout", NULL};
  int rc = -1;
  if (!cJSON_IsObject(root)) {
    snprintf(err, errlen, "%s: the cluster spec must be a JSON object",
             origin);
    goto out;
  }
  if (json_check_keys(root, top_keys, origin, "top level", err, errlen))
    goto out;
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
  sc->name = json_strdup(cJSON_IsString(name) ? name->valuestring : origin);
  const cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, "node_groups");
  if (!cJSON_IsArray(groups) || cJSON_GetArraySize(groups) == 0) {
    snprintf(err, errlen, "%s: 'node_groups' must be a non-empty array",
             origin);
    goto out;
  }
  const cJSON *g;
  int gi = 0;
  cJSON_ArrayForEach(g, groups) {
    char where[96];
    snprintf(where, sizeof where, "node_groups[%d]", gi);
    if (!cJSON_IsObject(g)) {
      snprintf(err, errlen, "%s: %s: must be an object", origin, where);
      goto out;
    }
    if (json_check_keys(g, group_keys, origin, where, err, errlen))
      goto out;
    const cJSON *gname = cJSON_GetObjectItemCaseSensitive(g, "name");
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s",
             cJSON_IsString(gname) ? gname->valuestring : where);
    int64_t count, gpus = 0, cpu, mem;
    if (get_int(g, "count", 1, 1000000, 1, &count, origin, where, err,
                errlen) < 0 ||
        get_int(g, "gpus_per_node", 0, LSCHED_MAX_GPUS_PER_NODE, 1, &gpus,
                origin, where, err, errlen) < 0 ||
        get_int(g, "cpu_milli", 0, LSCHED_MAX_CPU_MILLI, 1, &cpu, origin,
                where, err, errlen) < 0 ||
        get_int(g, "memory_mib", 0, LSCHED_MAX_MEMORY_MIB, 1, &mem, origin,
                where, err, errlen) < 0)
      goto out;
    const gpu_model_info *gm = NULL;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(g, "gpu_model");
    if (gpus > 0) {
      if (!cJSON_IsString(model)) {
        snprintf(err, errlen, "%s: %s: 'gpu_model' is required when "
                 "gpus_per_node > 0", origin, where);
        goto out;
      }
      gm = catalog_find(cat, model->valuestring);
      if (!gm) {
        snprintf(err, errlen, "%s: %s: unknown GPU model '%s' (see "
                 "'schedsim models' for the catalog)", origin, where,
                 model->valuestring);
        goto out;
      }
    }
    lsched_gpu_mode mode = LSCHED_GPU_SHARED;
    const cJSON *gmode = cJSON_GetObjectItemCaseSensitive(g, "gpu_mode");
    if (gmode) {
      const char *m = cJSON_IsString(gmode) ? gmode->valuestring : "";
      if (strcmp(m, "exclusive") == 0)
        mode = LSCHED_GPU_EXCLUSIVE;
      else if (strcmp(m, "shared") == 0)
        mode = LSCHED_GPU_SHARED;
      else if (strcmp(m, "mig-static") == 0 || strcmp(m, "mig-dynamic") == 0) {
        snprintf(err, errlen, "%s: %s: gpu_mode '%s' is not implemented in "
                 "this version (exclusive or shared)", origin, where, m);
        goto out;
      } else {
        snprintf(err, errlen, "%s: %s: unknown gpu_mode '%s' (exclusive, "
                 "shared, mig-static, mig-dynamic)", origin, where, m);
        goto out;
      }
    }
    if (cJSON_GetObjectItemCaseSensitive(g, "mig_layout")) {
      snprintf(err, errlen, "%s: %s: 'mig_layout' needs gpu_mode mig-static",
               origin, where);
      goto out;
    }
    int priced = gm ? gm->has_price : 1;
    double price = gm ? gm->price_per_gpu_hour : 0;
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(g, "price_per_gpu_hour");
    if (pv) {
      if (!cJSON_IsNumber(pv) || !isfinite(pv->valuedouble) ||
          pv->valuedouble < 0) {
        snprintf(err, errlen, "%s: %s: 'price_per_gpu_hour' must be a "
                 "non-negative number", origin, where);
        goto out;
      }
      priced = 1;
      price = pv->valuedouble;
    }
    if (add_nodes(sc, origin, where, prefix, (int)count, gm, (int)gpus, cpu,
                  mem, mode, priced, price, err, errlen))
      goto out;
    gi++;
  }
  rc = 0;
out:
  cJSON_Delete(root);
  if (rc)
    sim_cluster_free(sc);
  return rc;
}

static int from_node_csv(sim_cluster *sc, const char *path,
                         const gpu_catalog *cat, int check_invariants,
                         char *err, size_t errlen) {
  node_list nl = {0};
  trace_error te;
  if (node_list_load(&nl, path, &te)) {
    snprintf(err, errlen, "%s", te.msg);
    return -1;
  }
  if (begin(sc, check_invariants, err, errlen)) {
    node_list_free(&nl);
    return -1;
  }
  int rc = -1;
  const char *base = strrchr(path, '/');
  sc->name = json_strdup(base ? base + 1 : path);
  for (size_t i = 0; i < nl.n; i++) {
    const node_row *r = &nl.rows[i];
    char where[64];
    snprintf(where, sizeof where, "line %d", (int)r->line);
    const gpu_model_info *gm = NULL;
    if (r->gpus > 0) {
      gm = catalog_find(cat, r->model);
      if (!gm) {
        snprintf(err, errlen, "%s:%d: field 'model': unknown GPU model '%s'",
                 path, (int)r->line, r->model);
        goto out;
      }
    }
    /* The Alibaba cluster shares GPUs by milli: nodes are "shared". */
    if (add_nodes(sc, path, where, r->name, 1, gm, r->gpus, r->cpu_milli,
                  r->memory_mib, LSCHED_GPU_SHARED, gm ? gm->has_price : 1,
                  gm ? gm->price_per_gpu_hour : 0, err, errlen))
      goto out;
  }
  rc = 0;
out:
  node_list_free(&nl);
  if (rc)
    sim_cluster_free(sc);
  return rc;
}

int sim_cluster_load(sim_cluster *sc, const char *path,
                     const gpu_catalog *cat, int check_invariants, char *err,
                     size_t errlen) {
  /* A JSON spec starts with '{' (after white space or a UTF-8 BOM);
   * anything else is read as a node list CSV, whose reader reports a
   * header it does not know. */
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  int ch, pos = 0;
  static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
  while ((ch = fgetc(f)) != EOF) {
    if (pos < 3 && ch == bom[pos]) {
      pos++;
      continue;
    }
    if (ch != ' ' && ch != '\t' && ch != '\r' && ch != '\n')
      break;
  }
  fclose(f);
  if (ch != '{')
    return from_node_csv(sc, path, cat, check_invariants, err, errlen);
  char *text = json_read_file(path, err, errlen);
  if (!text)
    return -1;
  int rc = sim_cluster_from_json(sc, text, path, cat, check_invariants, err,
                                 errlen);
  free(text);
  return rc;
}

int sim_cluster_spec_mask(const sim_cluster *sc, const gpu_catalog *cat,
                          const char *spec, uint64_t *mask, char *err,
                          size_t errlen) {
  *mask = 0;
  if (!spec || !spec[0])
    return 0;
  char buf[256];
  const char *p = spec;
  while (*p) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len >= sizeof buf)
      len = sizeof buf - 1;
    memcpy(buf, p, len);
    buf[len] = 0;
    if (len > 0) {
      const gpu_model_info *gm = catalog_find(cat, buf);
      if (!gm) {
        snprintf(err, errlen, "unknown GPU model '%s'", buf);
        return -1;
      }
      int id = lsched_cluster_find_model(sc->c, gm->name);
      if (id >= 0)
        *mask |= UINT64_C(1) << id;
    }
    p += len;
    if (*p == '|')
      p++;
  }
  return *mask ? 0 : 1;
}
