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
  free(sc->mig_reconfig_us);
  free(sc->mig_scope_node);
  free(sc->node_idle_mw);
  free(sc->node_busy_mw);
  for (int i = 0; i < sc->ncloud; i++) {
    free(sc->cloud[i].name);
    free(sc->cloud[i].gpu_model);
  }
  free(sc->cloud);
  free(sc->pools);
  free(sc->node_slots);
  memset(sc, 0, sizeof *sc);
}

static int begin(sim_cluster *sc, int check_invariants, char *err,
                 size_t errlen) {
  memset(sc, 0, sizeof *sc);
  sc->pue = 1.0;
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.check_invariants = check_invariants;
  int rc = lsched_cluster_create(&sc->c, &o);
  if (rc) {
    snprintf(err, errlen, "cannot create cluster: %s", lsched_strerror(rc));
    return -1;
  }
  return 0;
}

/* The MIG settings of a node group. */
typedef struct mig_group {
  int dynamic;
  lsched_mig_instance layout[LSCHED_MIG_MAX_INSTANCES];
  int nlayout;
  int64_t reconfig_us;
  int scope_node;
} mig_group;

/* Gives libsched the instance memory of each kind of a MIG model (once). */
static int set_mig_memory(sim_cluster *sc, const gpu_model_info *gm, int model,
                          const char *origin, const char *where, char *err,
                          size_t errlen) {
  int64_t mem[LSCHED_MIG_KINDS] = {0};
  for (int i = 0; i < gm->nmig; i++)
    mem[gm->mig_profiles[i].kind - 1] =
        llround(gm->mig_profiles[i].memory_gib * 1024.0);
  int rc = lsched_mig_set_model_memory(sc->c, model, mem);
  if (rc) {
    snprintf(err, errlen, "%s: %s: MIG profiles of %s: %s", origin, where,
             gm->name, lsched_strerror(rc));
    return -1;
  }
  return 0;
}

/* Adds n nodes of one kind; grows the price arrays. mg: MIG settings, NULL
 * for other modes. */
static int add_nodes(sim_cluster *sc, const char *origin, const char *where,
                     const char *prefix, int count, const gpu_model_info *gm,
                     int gpus, int64_t cpu, int64_t mem, lsched_gpu_mode mode,
                     int priced, double price, const mig_group *mg,
                     int64_t overhead_mw, char *err, size_t errlen) {
  int model = -1;
  if (gpus > 0) {
    model = lsched_cluster_model_id(sc->c, gm->name, 1);
    if (model < 0) {
      snprintf(err, errlen, "%s: %s: %s", origin, where,
               lsched_strerror(model));
      return -1;
    }
    if (gm->nmig && set_mig_memory(sc, gm, model, origin, where, err, errlen))
      return -1;
    /* The model's price for type-aware policies (cheapest-work): that of
     * its first priced group. */
    if (priced && isnan(lsched_cluster_model_price(sc->c, model)))
      lsched_cluster_set_model_price(sc->c, model, price);
  }
  size_t nn = (size_t)sc->nodes + (size_t)count;
  double *np = realloc(sc->node_price, nn * sizeof *np);
  if (np)
    sc->node_price = np;
  uint8_t *nq = realloc(sc->node_priced, nn);
  if (nq)
    sc->node_priced = nq;
  int64_t *nr = realloc(sc->mig_reconfig_us, nn * sizeof *nr);
  if (nr)
    sc->mig_reconfig_us = nr;
  uint8_t *ns = realloc(sc->mig_scope_node, nn);
  if (ns)
    sc->mig_scope_node = ns;
  int64_t *ni = realloc(sc->node_idle_mw, nn * sizeof *ni);
  if (ni)
    sc->node_idle_mw = ni;
  int64_t *nb = realloc(sc->node_busy_mw, nn * sizeof *nb);
  if (nb)
    sc->node_busy_mw = nb;
  if (!np || !nq || !nr || !ns || !ni || !nb) {
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
    if (mg) {
      s.mig_dynamic = mg->dynamic;
      s.mig_layout = mg->layout;
      s.mig_layout_count = mg->nlayout;
    }
    int id, rc = lsched_cluster_add_node(sc->c, &s, &id);
    if (rc) {
      snprintf(err, errlen, "%s: %s: %s (%s)", origin, where,
               lsched_strerror(rc), lsched_cluster_errmsg(sc->c));
      return -1;
    }
    sc->node_price[id] = priced ? price : 0;
    sc->node_priced[id] = (uint8_t)(priced || gpus == 0);
    sc->mig_reconfig_us[id] = mg ? mg->reconfig_us : 0;
    sc->mig_scope_node[id] = (uint8_t)(mg ? mg->scope_node : 0);
    int powered = gpus > 0 && gm->has_power;
    sc->node_idle_mw[id] = powered ? llround(gm->idle_w * 1000.0) : -1;
    sc->node_busy_mw[id] = powered ? llround(gm->busy_w * 1000.0) : -1;
    if (gpus > 0 && !powered)
      sc->unpowered_gpus += gpus;
    sc->overhead_mw += overhead_mw;
    if (mode == LSCHED_GPU_MIG)
      sc->mig_gpus += gpus;
    else
      sc->plain_gpus += gpus;
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

/* Named layouts (every GPU of the group gets the same instances). */
static const struct {
  const char *name;
  int n;
  lsched_mig_instance v[LSCHED_MIG_MAX_INSTANCES];
} named_layouts[] = {
    {"all-1g", 7, {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {1, 6}}},
    {"all-1g-2x", 4, {{2, 0}, {2, 2}, {2, 4}, {2, 6}}},
    {"all-2g", 3, {{3, 0}, {3, 2}, {3, 4}}},
    {"all-3g", 2, {{4, 0}, {4, 4}}},
    {"all-7g", 1, {{6, 0}}},
    /* 3g + 2g + 1g + 1g: all 7 slices and 8 slots. */
    {"balanced", 4, {{3, 0}, {1, 2}, {1, 3}, {4, 4}}},
};
#define NAMED_LAYOUTS \
  "all-1g, all-1g-2x, all-2g, all-3g, all-7g, balanced"

/* The instance text of layout entry v for messages ("2g.20gb@4"). */
static void inst_text(char *buf, size_t len, const gpu_model_info *gm,
                      const lsched_mig_instance *v) {
  const gpu_mig_profile *p = catalog_mig_kind(gm, v->kind);
  snprintf(buf, len, "%s@%d", p ? p->name : lsched_mig_kind_name(v->kind),
           v->start);
}

/* One "profile@start" entry of an explicit layout. */
static int parse_instance(const char *text, const gpu_model_info *gm,
                          lsched_mig_instance *out, const char *origin,
                          const char *where, char *err, size_t errlen) {
  const char *at = strrchr(text, '@');
  char name[64];
  size_t len = at ? (size_t)(at - text) : 0;
  if (!at || len == 0 || len >= sizeof name || !at[1]) {
    snprintf(err, errlen, "%s: %s: '%s': expected PROFILE@START, e.g. "
             "\"%s@0\"", origin, where, text,
             gm->nmig ? gm->mig_profiles[gm->nmig - 1].name : "7g.80gb");
    return -1;
  }
  memcpy(name, text, len);
  name[len] = 0;
  const gpu_mig_profile *p = catalog_mig_profile(gm, name);
  if (!p) {
    int n = snprintf(err, errlen, "%s: %s: unknown MIG profile '%s' for %s "
                     "(profiles:", origin, where, name, gm->name);
    for (int i = 0; i < gm->nmig && n > 0 && (size_t)n < errlen; i++)
      n += snprintf(err + n, errlen - (size_t)n, " %s",
                    gm->mig_profiles[i].name);
    if (n > 0 && (size_t)n < errlen)
      snprintf(err + n, errlen - (size_t)n, ")");
    return -1;
  }
  char *end;
  errno = 0;
  long st = strtol(at + 1, &end, 10);
  if (errno || *end || end == at + 1 || st < 0 || st > 7 ||
      !lsched_mig_slot_mask(p->kind, (int)st)) {
    char valid[64] = "";
    unsigned m = lsched_mig_kind_starts(p->kind);
    for (int s = 0, n = 0; s < 8; s++)
      if ((m >> s) & 1)
        n += snprintf(valid + n, sizeof valid - (size_t)n, "%s%d",
                      n ? ", " : "", s);
    snprintf(err, errlen, "%s: %s: '%s': %s cannot start at slot %s "
             "(valid starts: %s)", origin, where, text, p->name, at + 1,
             valid);
    return -1;
  }
  out->kind = p->kind;
  out->start = (int)st;
  return 0;
}

/* The MIG keys of a node group: mig_layout, mig_reconfig_s,
 * mig_reconfig_scope. Checks them against the mode and the model's
 * profiles; errors name the file and the key. */
static int parse_mig_group(const cJSON *g, lsched_gpu_mode mode,
                           const gpu_model_info *gm, int gpus, mig_group *mg,
                           const char *origin, const char *where, char *err,
                           size_t errlen) {
  const cJSON *lay = cJSON_GetObjectItemCaseSensitive(g, "mig_layout");
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(g, "mig_reconfig_s");
  const cJSON *sc = cJSON_GetObjectItemCaseSensitive(g, "mig_reconfig_scope");
  if (mode != LSCHED_GPU_MIG) {
    const char *k = lay ? "mig_layout" : rs ? "mig_reconfig_s"
                                     : sc ? "mig_reconfig_scope" : NULL;
    if (k) {
      snprintf(err, errlen, "%s: %s: '%s' needs gpu_mode mig-static or "
               "mig-dynamic", origin, where, k);
      return -1;
    }
    return 0;
  }
  if (gpus > 0 && (!gm->mig || gm->nmig == 0)) {
    snprintf(err, errlen, "%s: %s.gpu_mode: GPU model %s has no MIG "
             "profiles in the catalog (MIG models: A100-SXM4-40GB, "
             "A100-SXM4-80GB, H100-SXM5-80GB, H100-PCIE-80GB, H100-NVL-94GB, "
             "H200-SXM-141GB)", origin, where, gm->name);
    return -1;
  }
  if (!mg->dynamic && !lay) {
    snprintf(err, errlen, "%s: %s: gpu_mode mig-static needs 'mig_layout' "
             "(%s, or a list of \"profile@start\")", origin, where,
             NAMED_LAYOUTS);
    return -1;
  }
  if (!mg->dynamic && (rs || sc)) {
    snprintf(err, errlen, "%s: %s: '%s' needs gpu_mode mig-dynamic (a "
             "static layout is never reconfigured)", origin, where,
             rs ? "mig_reconfig_s" : "mig_reconfig_scope");
    return -1;
  }
  char key[160];
  if (lay && cJSON_IsString(lay)) {
    size_t i = 0, n = sizeof named_layouts / sizeof named_layouts[0];
    while (i < n && strcmp(named_layouts[i].name, lay->valuestring) != 0)
      i++;
    if (i == n) {
      snprintf(err, errlen, "%s: %s.mig_layout: unknown layout '%s' (%s, or "
               "a list of \"profile@start\")", origin, where,
               lay->valuestring, NAMED_LAYOUTS);
      return -1;
    }
    mg->nlayout = named_layouts[i].n;
    memcpy(mg->layout, named_layouts[i].v, sizeof mg->layout);
    for (int j = 0; j < mg->nlayout && gpus > 0; j++)
      if (!catalog_mig_kind(gm, mg->layout[j].kind)) {
        snprintf(err, errlen, "%s: %s.mig_layout: '%s' uses a %s profile, "
                 "which %s does not offer", origin, where, lay->valuestring,
                 lsched_mig_kind_name(mg->layout[j].kind), gm->name);
        return -1;
      }
  } else if (lay && cJSON_IsArray(lay)) {
    const cJSON *e;
    int j = 0;
    unsigned used = 0;
    cJSON_ArrayForEach(e, lay) {
      snprintf(key, sizeof key, "%s.mig_layout[%d]", where, j);
      if (!cJSON_IsString(e)) {
        snprintf(err, errlen, "%s: %s: must be a string \"profile@start\"",
                 origin, key);
        return -1;
      }
      if (j == LSCHED_MIG_MAX_INSTANCES) {
        snprintf(err, errlen, "%s: %s: more than %d instances on one GPU",
                 origin, key, LSCHED_MIG_MAX_INSTANCES);
        return -1;
      }
      lsched_mig_instance v;
      if (gpus == 0 || !gm) {
        snprintf(err, errlen, "%s: %s: a node group without GPUs has no "
                 "MIG layout", origin, key);
        return -1;
      }
      if (parse_instance(e->valuestring, gm, &v, origin, key, err, errlen))
        return -1;
      unsigned m = lsched_mig_slot_mask(v.kind, v.start);
      if (used & m) {
        for (int o = 0; o < j; o++)
          if (lsched_mig_slot_mask(mg->layout[o].kind, mg->layout[o].start) &
              m) {
            char other[64];
            inst_text(other, sizeof other, gm, &mg->layout[o]);
            snprintf(err, errlen, "%s: %s: '%s' overlaps '%s' (memory slots "
                     "may hold one instance each)", origin, key,
                     e->valuestring, other);
            return -1;
          }
      }
      used |= m;
      mg->layout[j] = v;
      mg->nlayout = ++j;
    }
    if (j == 0 && !mg->dynamic) {
      snprintf(err, errlen, "%s: %s.mig_layout: empty (a static layout "
               "needs at least one instance)", origin, where);
      return -1;
    }
  } else if (lay) {
    snprintf(err, errlen, "%s: %s.mig_layout: must be a layout name (%s) or "
             "a list of \"profile@start\"", origin, where, NAMED_LAYOUTS);
    return -1;
  }
  mg->scope_node = 0;
  if (sc) {
    if (!cJSON_IsString(sc) || (strcmp(sc->valuestring, "gpu") != 0 &&
                                strcmp(sc->valuestring, "node") != 0)) {
      snprintf(err, errlen, "%s: %s.mig_reconfig_scope: must be \"gpu\" "
               "(a new instance waits for its GPU) or \"node\" (every "
               "change stalls the node's new placements)", origin, where);
      return -1;
    }
    mg->scope_node = sc->valuestring[0] == 'n';
  }
  double secs = mg->scope_node ? SIM_MIG_RECONFIG_NODE_S
                               : SIM_MIG_RECONFIG_GPU_S;
  if (rs) {
    if (!cJSON_IsNumber(rs) || !isfinite(rs->valuedouble) ||
        rs->valuedouble < 0 || rs->valuedouble > 1e7) {
      snprintf(err, errlen, "%s: %s.mig_reconfig_s: must be a number of "
               "seconds in 0..1e7", origin, where);
      return -1;
    }
    secs = rs->valuedouble;
  }
  mg->reconfig_us = llround(secs * 1e6);
  return 0;
}

/* Node names must be unique (jobs.csv and the MIG and migration reports
 * name nodes): two groups with the same name, or a name such as "a-1" next
 * to a group "a" of two nodes, would make one name stand for two nodes.
 * O(n log n). Found by tests/fuzz/fuzz_cluster.c. */
typedef struct named_node {
  const char *name;
  int id;
} named_node;

static int cmp_named(const void *a, const void *b) {
  const named_node *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* The index of the node group that made node `id`. */
static int group_of(const cJSON *groups, int id) {
  const cJSON *g;
  int gi = 0;
  double end = 0;
  cJSON_ArrayForEach(g, groups) {
    end += cJSON_GetObjectItemCaseSensitive(g, "count")->valuedouble;
    if (id < end)
      return gi;
    gi++;
  }
  return gi - 1;
}

static int unique_node_names(const sim_cluster *sc, const cJSON *groups,
                             const char *origin, char *err, size_t errlen) {
  named_node *v = malloc((size_t)(sc->nodes ? sc->nodes : 1) * sizeof *v);
  if (!v) {
    snprintf(err, errlen, "%s: out of memory", origin);
    return -1;
  }
  for (int i = 0; i < sc->nodes; i++) {
    lsched_node_info ni;
    lsched_cluster_node_info(sc->c, i, &ni);
    v[i].name = ni.name;
    v[i].id = i;
  }
  qsort(v, (size_t)sc->nodes, sizeof *v, cmp_named);
  int rc = 0;
  for (int i = 1; i < sc->nodes && rc == 0; i++)
    if (strcmp(v[i - 1].name, v[i].name) == 0) {
      snprintf(err, errlen,
               "%s: node_groups[%d].name: node name '%s' is also made by "
               "node_groups[%d] (node names must be unique: give the groups "
               "distinct names)",
               origin, group_of(groups, v[i].id), v[i].name,
               group_of(groups, v[i - 1].id));
      rc = -1;
    }
  free(v);
  return rc;
}

/* An optional number `key` of object o in [lo, hi] into *out (left as is
 * when absent). 0, or -1 with err naming the file and the key. */
static int spec_number(const cJSON *o, const char *key, double lo, double hi,
                       double *out, const char *origin, const char *name,
                       char *err, size_t errlen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v)
    return 0;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
      v->valuedouble > hi) {
    snprintf(err, errlen, "%s: '%s' must be a number in %g..%g", origin,
             name, lo, hi);
    return -1;
  }
  *out = v->valuedouble;
  return 0;
}

/* ---------------------------------------------------------------- pools */

/* An optional number of a pool entry in [lo, hi] (*out keeps its default
 * when absent). */
static int pool_number(const cJSON *o, const char *key, double lo, double hi,
                       double *out, const char *origin, const char *where,
                       char *err, size_t errlen) {
  char name[128];
  snprintf(name, sizeof name, "%s.%s", where, key);
  return spec_number(o, key, lo, hi, out, origin, name, err, errlen);
}

/* One pool entry: its chassis become libsched pools over hosts of group
 * hosts_group, whose nodes get the entry's composable slots. */
static int add_pool_entry(sim_cluster *sc, const cJSON *pe, int pi,
                          const cJSON *groups, const gpu_catalog *cat,
                          const char *origin, char *err, size_t errlen) {
  static const char *const keys[] = {
      "name",     "count",        "gpu_model", "gpus",     "hosts_group",
      "hosts_per_pool", "max_per_host", "attach_s",  "detach_s", "fabric_speed",
      NULL};
  char where[64];
  snprintf(where, sizeof where, "pools[%d]", pi);
  if (!cJSON_IsObject(pe)) {
    snprintf(err, errlen, "%s: %s: must be an object", origin, where);
    return -1;
  }
  if (json_check_keys(pe, keys, origin, where, err, errlen))
    return -1;
  sim_pool_spec *ps = &sc->pools[pi];
  memset(ps, 0, sizeof *ps);
  const cJSON *nm = cJSON_GetObjectItemCaseSensitive(pe, "name");
  if (nm && (!cJSON_IsString(nm) || strlen(nm->valuestring) > 100)) {
    snprintf(err, errlen, "%s: %s.name: must be a string of at most 100 bytes",
             origin, where);
    return -1;
  }
  snprintf(ps->name, sizeof ps->name, "%s", nm ? nm->valuestring : where);
  int64_t count, gpus = SIM_POOL_GPUS, hpp = SIM_POOL_HOSTS,
                 cap = SIM_POOL_MAX_PER_HOST;
  if (get_int(pe, "count", 1, 1000000, 1, &count, origin, where, err,
              errlen) < 0 ||
      get_int(pe, "gpus", 1, 1000000, 0, &gpus, origin, where, err, errlen) <
          0 ||
      get_int(pe, "hosts_per_pool", 1, 1000000, 0, &hpp, origin, where, err,
              errlen) < 0 ||
      get_int(pe, "max_per_host", 1, LSCHED_MAX_GPUS_PER_NODE, 0, &cap,
              origin, where, err, errlen) < 0)
    return -1;
  double attach = SIM_POOL_ATTACH_S, detach = SIM_POOL_DETACH_S,
         fabric = SIM_POOL_FABRIC_SPEED;
  if (pool_number(pe, "attach_s", 0, 86400, &attach, origin, where, err,
                  errlen) ||
      pool_number(pe, "detach_s", 0, 86400, &detach, origin, where, err,
                  errlen) ||
      pool_number(pe, "fabric_speed", 0.01, 1.0, &fabric, origin, where, err,
                  errlen))
    return -1;
  /* The host group: by name. */
  const cJSON *hg = cJSON_GetObjectItemCaseSensitive(pe, "hosts_group");
  if (!cJSON_IsString(hg)) {
    snprintf(err, errlen, "%s: %s: 'hosts_group' (a node group's name) is "
             "required", origin, where);
    return -1;
  }
  const cJSON *g;
  int first = 0, found = 0;
  int64_t gcount = 0;
  cJSON_ArrayForEach(g, groups) {
    const cJSON *gn = cJSON_GetObjectItemCaseSensitive(g, "name");
    int64_t c = (int64_t)cJSON_GetObjectItemCaseSensitive(g, "count")
                    ->valuedouble;
    if (cJSON_IsString(gn) && strcmp(gn->valuestring, hg->valuestring) == 0) {
      found = 1;
      gcount = c;
      break;
    }
    first += (int)c;
  }
  if (!found) {
    snprintf(err, errlen, "%s: %s.hosts_group: no node group named '%s'",
             origin, where, hg->valuestring);
    return -1;
  }
  if (count * hpp > gcount) {
    snprintf(err, errlen,
             "%s: %s: %lld chassis x %lld hosts_per_pool need %lld hosts, "
             "node group '%s' has %lld",
             origin, where, (long long)count, (long long)hpp,
             (long long)(count * hpp), hg->valuestring, (long long)gcount);
    return -1;
  }
  lsched_node_info ni = LSCHED_NODE_INFO_INIT;
  lsched_cluster_node_info(sc->c, first, &ni);
  /* The model: the group's when it has local GPUs (a pool's model must
   * equal it), else required. */
  const cJSON *mv = cJSON_GetObjectItemCaseSensitive(pe, "gpu_model");
  const gpu_model_info *gm = NULL;
  if (mv) {
    if (!cJSON_IsString(mv) || !(gm = catalog_find(cat, mv->valuestring))) {
      snprintf(err, errlen, "%s: %s: unknown GPU model '%s' (see 'schedsim "
               "models' for the catalog)", origin, where,
               cJSON_IsString(mv) ? mv->valuestring : "");
      return -1;
    }
  }
  const char *gmodel =
      ni.gpu_count > 0 ? lsched_cluster_model_name(sc->c, ni.gpu_model) : NULL;
  if (gm && gmodel && strcmp(gm->name, gmodel) != 0) {
    snprintf(err, errlen,
             "%s: %s.gpu_model: '%s' differs from node group '%s''s %s (a "
             "host's local and composed GPUs are one model)",
             origin, where, gm->name, hg->valuestring, gmodel);
    return -1;
  }
  if (!gm && gmodel)
    gm = catalog_find(cat, gmodel);
  if (!gm) {
    snprintf(err, errlen, "%s: %s: 'gpu_model' is required when node group "
             "'%s' has no GPUs", origin, where, hg->valuestring);
    return -1;
  }
  if (ni.gpu_mode == LSCHED_GPU_MIG) {
    snprintf(err, errlen, "%s: %s.hosts_group: node group '%s' is MIG (pools "
             "serve exclusive or shared GPUs)", origin, where,
             hg->valuestring);
    return -1;
  }
  const int S = (int)(gpus < cap ? gpus : cap);
  if (ni.gpu_count + S > LSCHED_MAX_GPUS_PER_NODE) {
    snprintf(err, errlen,
             "%s: %s: %d local GPUs + %d composable slots exceed %d per host",
             origin, where, ni.gpu_count, S, LSCHED_MAX_GPUS_PER_NODE);
    return -1;
  }
  int model = lsched_cluster_model_id(sc->c, gm->name, 1);
  if (model < 0) {
    snprintf(err, errlen, "%s: %s: %s", origin, where, lsched_strerror(model));
    return -1;
  }
  if (gm->has_price && isnan(lsched_cluster_model_price(sc->c, model)))
    lsched_cluster_set_model_price(sc->c, model, gm->price_per_gpu_hour);
  ps->count = (int)count;
  ps->gpus = (int)gpus;
  ps->hosts_per_pool = (int)hpp;
  ps->max_per_host = (int)cap;
  ps->attach_us = llround(attach * 1e6);
  ps->detach_us = llround(detach * 1e6);
  ps->fabric_speed = fabric;
  ps->first_pool = lsched_cluster_pool_count(sc->c);
  int *hosts = malloc((size_t)hpp * sizeof *hosts);
  if (!hosts) {
    snprintf(err, errlen, "%s: out of memory", origin);
    return -1;
  }
  int rc = 0;
  for (int64_t k = 0; k < count && rc == 0; k++) {
    for (int64_t j = 0; j < hpp && rc == 0; j++) {
      int h = first + (int)(k * hpp + j);
      hosts[j] = h;
      if (sc->node_slots[h]) {
        snprintf(err, errlen, "%s: %s: node %d already reaches a pool (one "
                 "pool per host)", origin, where, h);
        rc = -1;
        break;
      }
      lsched_node_info hi = LSCHED_NODE_INFO_INIT;
      lsched_cluster_node_info(sc->c, h, &hi);
      lsched_node_spec ns = LSCHED_NODE_SPEC_INIT;
      ns.name = hi.name;
      ns.cpu_milli = hi.cpu_milli;
      ns.memory_mib = hi.memory_mib;
      ns.gpu_count = hi.gpu_count + S;
      ns.gpu_model = model;
      ns.gpu_mode = hi.gpu_mode;
      int lrc = lsched_cluster_update_node(sc->c, h, &ns);
      if (lrc) {
        snprintf(err, errlen, "%s: %s: host %d: %s (%s)", origin, where, h,
                 lsched_strerror(lrc), lsched_cluster_errmsg(sc->c));
        rc = -1;
        break;
      }
      sc->node_slots[h] = S;
      if (hi.gpu_count == 0) { /* its price and power are the pool's */
        sc->node_price[h] = gm->has_price ? gm->price_per_gpu_hour : 0;
        sc->node_priced[h] = (uint8_t)gm->has_price;
        sc->node_idle_mw[h] = gm->has_power ? llround(gm->idle_w * 1000.0) : -1;
        sc->node_busy_mw[h] = gm->has_power ? llround(gm->busy_w * 1000.0) : -1;
      }
    }
    if (rc)
      break;
    lsched_pool_spec sp = LSCHED_POOL_SPEC_INIT;
    sp.gpus = (int)gpus;
    sp.max_per_host = (int)cap;
    sp.hosts = hosts;
    sp.nhosts = (int)hpp;
    /* The replay detaches after detach_s (sim/engine/pools.c). */
    sp.keep_attached = ps->detach_us > 0;
    int lrc = lsched_cluster_add_pool(sc->c, &sp, NULL);
    if (lrc) {
      snprintf(err, errlen, "%s: %s: chassis %lld: %s (%s)", origin, where,
               (long long)k, lsched_strerror(lrc),
               lsched_cluster_errmsg(sc->c));
      rc = -1;
    }
  }
  free(hosts);
  if (rc)
    return -1;
  const int total = (int)(count * gpus);
  sc->gpus += total;
  sc->plain_gpus += total;
  sc->pool_gpus += total;
  if (gm->has_price)
    sc->pool_price_sum += gm->price_per_gpu_hour * total;
  else
    sc->unpriced_gpus += total;
  if (gm->has_power)
    sc->pool_idle_mw += llround(gm->idle_w * 1000.0) * total;
  else
    sc->unpowered_gpus += total;
  return 0;
}

/* The spec's "pools" (absent: none). */
static int parse_pools(sim_cluster *sc, const cJSON *root,
                       const cJSON *groups, const gpu_catalog *cat,
                       const char *origin, char *err, size_t errlen) {
  const cJSON *pools = cJSON_GetObjectItemCaseSensitive(root, "pools");
  if (!pools)
    return 0;
  if (!cJSON_IsArray(pools)) {
    snprintf(err, errlen, "%s: 'pools' must be an array", origin);
    return -1;
  }
  int n = cJSON_GetArraySize(pools);
  if (n == 0)
    return 0;
  sc->pools = calloc((size_t)n, sizeof *sc->pools);
  sc->node_slots = calloc((size_t)(sc->nodes ? sc->nodes : 1), sizeof(int));
  if (!sc->pools || !sc->node_slots) {
    snprintf(err, errlen, "%s: out of memory", origin);
    return -1;
  }
  const cJSON *pe;
  int pi = 0;
  cJSON_ArrayForEach(pe, pools) {
    if (add_pool_entry(sc, pe, pi, groups, cat, origin, err, errlen))
      return -1;
    sc->npools = ++pi;
  }
  return 0;
}

/* The spec's "cloud" key (sim/README.md "Cloud bursting"): an array of
 * sites {name, gpu_model, on_demand_per_gpu_hour, spot_per_gpu_hour,
 * capacity_gpus, startup_s, transfer_s}; prices default to the catalog's
 * (on-demand; a site without a spot price has no spot market). 0, or -1
 * with err naming the file and the key. */
static int parse_cloud(sim_cluster *sc, const cJSON *arr, const char *origin,
                       const gpu_catalog *cat, char *err, size_t errlen) {
  static const char *const site_keys[] = {
      "name", "gpu_model", "on_demand_per_gpu_hour", "spot_per_gpu_hour",
      "capacity_gpus", "startup_s", "transfer_s", NULL};
  if (!arr)
    return 0;
  if (!cJSON_IsArray(arr)) {
    snprintf(err, errlen, "%s: 'cloud' must be an array of sites", origin);
    return -1;
  }
  int n = cJSON_GetArraySize(arr);
  if (n == 0)
    return 0;
  sc->cloud = calloc((size_t)n, sizeof *sc->cloud);
  if (!sc->cloud) {
    snprintf(err, errlen, "%s: out of memory", origin);
    return -1;
  }
  const cJSON *o;
  cJSON_ArrayForEach(o, arr) {
    int i = sc->ncloud;
    char where[64], key[128];
    snprintf(where, sizeof where, "cloud[%d]", i);
    if (!cJSON_IsObject(o)) {
      snprintf(err, errlen, "%s: %s: must be an object", origin, where);
      return -1;
    }
    if (json_check_keys(o, site_keys, origin, where, err, errlen))
      return -1;
    sim_cloud_site *cs = &sc->cloud[i];
    sc->ncloud++;
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
    if (!cJSON_IsString(nm) || !nm->valuestring[0] ||
        strlen(nm->valuestring) > 100 || strpbrk(nm->valuestring, ",\"\n\r")) {
      snprintf(err, errlen, "%s: %s.name: required, a string of 1..100 "
               "bytes without commas, quotes or line breaks", origin, where);
      return -1;
    }
    for (int j = 0; j < i; j++)
      if (strcmp(sc->cloud[j].name, nm->valuestring) == 0) {
        snprintf(err, errlen, "%s: %s.name: '%s' is also cloud[%d]'s",
                 origin, where, nm->valuestring, j);
        return -1;
      }
    const cJSON *mv = cJSON_GetObjectItemCaseSensitive(o, "gpu_model");
    if (!cJSON_IsString(mv)) {
      snprintf(err, errlen, "%s: %s.gpu_model: required, a catalog GPU "
               "model", origin, where);
      return -1;
    }
    const gpu_model_info *gm = catalog_find(cat, mv->valuestring);
    if (!gm) {
      snprintf(err, errlen, "%s: %s.gpu_model: unknown GPU model '%s' (see "
               "'schedsim models' for the catalog)", origin, where,
               mv->valuestring);
      return -1;
    }
    cs->name = json_strdup(nm->valuestring);
    cs->gpu_model = json_strdup(gm->name);
    if (!cs->name || !cs->gpu_model) {
      snprintf(err, errlen, "%s: out of memory", origin);
      return -1;
    }
    cs->on_demand = gm->has_price ? gm->price_per_gpu_hour : -1;
    cs->spot = -1;
    double cap = -1;
    cs->startup_s = cs->transfer_s = 0;
    const char *nkeys[] = {"on_demand_per_gpu_hour", "spot_per_gpu_hour",
                           "capacity_gpus", "startup_s", "transfer_s"};
    double *dst[] = {&cs->on_demand, &cs->spot, &cap, &cs->startup_s,
                     &cs->transfer_s};
    double hi[] = {CATALOG_MAX_PRICE, CATALOG_MAX_PRICE, 1e9,
                   SIM_MAX_CLOUD_DELAY_S, SIM_MAX_CLOUD_DELAY_S};
    for (int k = 0; k < 5; k++) {
      snprintf(key, sizeof key, "%s.%s", where, nkeys[k]);
      if (spec_number(o, nkeys[k], k == 2 ? 1 : 0, hi[k], dst[k], origin, key,
                      err, errlen))
        return -1;
    }
    if (cap >= 0 && cap != floor(cap)) {
      snprintf(err, errlen, "%s: %s.capacity_gpus: must be a whole number",
               origin, where);
      return -1;
    }
    cs->capacity_gpus = (int64_t)cap;
    if (cs->on_demand < 0) {
      snprintf(err, errlen, "%s: %s.on_demand_per_gpu_hour: required (the "
               "catalog has no price for %s)", origin, where, gm->name);
      return -1;
    }
  }
  return 0;
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
                                         "pue", "node_overhead_w", "cloud", "pools",
                                         NULL};
  static const char *const group_keys[] = {
      "name",     "count",      "gpu_model",          "gpus_per_node",
      "cpu_milli", "memory_mib", "gpu_mode", "price_per_gpu_hour",
      "mig_layout", "mig_reconfig_s", "mig_reconfig_scope", "node_overhead_w",
      NULL};
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
  /* Unchecked, a NULL name left "cluster" out of summary.json
   * (tests/test_faults.c). */
  if (!sc->name) {
    snprintf(err, errlen, "%s: out of memory", origin);
    goto out;
  }
  /* Energy: pue (top level), node_overhead_w (top level: every group's
   * default; per group). */
  double overhead_w = 0;
  if (spec_number(root, "pue", 1.0, SIM_MAX_PUE, &sc->pue, origin, "pue",
                  err, errlen) ||
      spec_number(root, "node_overhead_w", 0, SIM_MAX_NODE_OVERHEAD_W,
                  &overhead_w, origin, "node_overhead_w", err, errlen))
    goto out;
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
    /* Node names are made from the group name: one that is not a string
     * was ignored, and one too long for prefix was cut, silently
     * (tests/cli_hostile.sh). */
    if (gname && (!cJSON_IsString(gname) || strlen(gname->valuestring) > 100)) {
      snprintf(err, errlen, "%s: %s.name: must be a string of at most 100 "
               "bytes", origin, where);
      goto out;
    }
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
    mig_group mg;
    memset(&mg, 0, sizeof mg);
    const cJSON *gmode = cJSON_GetObjectItemCaseSensitive(g, "gpu_mode");
    if (gmode) {
      const char *m = cJSON_IsString(gmode) ? gmode->valuestring : "";
      if (strcmp(m, "exclusive") == 0)
        mode = LSCHED_GPU_EXCLUSIVE;
      else if (strcmp(m, "shared") == 0)
        mode = LSCHED_GPU_SHARED;
      else if (strcmp(m, "mig-static") == 0 || strcmp(m, "mig-dynamic") == 0) {
        mode = LSCHED_GPU_MIG;
        mg.dynamic = m[4] == 'd';
      } else {
        snprintf(err, errlen, "%s: %s: unknown gpu_mode '%s' (exclusive, "
                 "shared, mig-static, mig-dynamic)", origin, where, m);
        goto out;
      }
    }
    if (parse_mig_group(g, mode, gm, (int)gpus, &mg, origin, where, err,
                        errlen))
      goto out;
    int priced = gm ? gm->has_price : 1;
    double price = gm ? gm->price_per_gpu_hour : 0;
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(g, "price_per_gpu_hour");
    if (pv) {
      /* At most CATALOG_MAX_PRICE, so that costs stay finite. */
      if (!cJSON_IsNumber(pv) || !isfinite(pv->valuedouble) ||
          pv->valuedouble < 0 || pv->valuedouble > CATALOG_MAX_PRICE) {
        snprintf(err, errlen, "%s: %s: 'price_per_gpu_hour' must be a "
                 "number in 0..%g", origin, where, CATALOG_MAX_PRICE);
        goto out;
      }
      priced = 1;
      price = pv->valuedouble;
    }
    double group_overhead_w = overhead_w;
    char okey[128];
    snprintf(okey, sizeof okey, "%s.node_overhead_w", where);
    if (spec_number(g, "node_overhead_w", 0, SIM_MAX_NODE_OVERHEAD_W,
                    &group_overhead_w, origin, okey, err, errlen))
      goto out;
    if (add_nodes(sc, origin, where, prefix, (int)count, gm, (int)gpus, cpu,
                  mem, mode, priced, price,
                  mode == LSCHED_GPU_MIG ? &mg : NULL,
                  llround(group_overhead_w * 1000.0), err, errlen))
      goto out;
    gi++;
  }
  if (unique_node_names(sc, groups, origin, err, errlen) ||
      parse_cloud(sc, cJSON_GetObjectItemCaseSensitive(root, "cloud"), origin,
                  cat, err, errlen))
    goto out;
  if (parse_pools(sc, root, groups, cat, origin, err, errlen))
    goto out;
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
  if (!sc->name) {
    snprintf(err, errlen, "%s: out of memory", path);
    goto out;
  }
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
    /* libsched's per-node limits, reported with the field (before, the
     * message named the line only: tests/cli_hostile.sh). */
    const char *over = r->cpu_milli > LSCHED_MAX_CPU_MILLI ? "cpu_milli"
                       : r->memory_mib > LSCHED_MAX_MEMORY_MIB ? "memory_mib"
                                                               : NULL;
    if (over) {
      snprintf(err, errlen, "%s:%d: field '%s': above the limit of %lld per "
               "node (got '%lld')", path, (int)r->line, over,
               (long long)(over[0] == 'c' ? LSCHED_MAX_CPU_MILLI
                                          : LSCHED_MAX_MEMORY_MIB),
               (long long)(over[0] == 'c' ? r->cpu_milli : r->memory_mib));
      goto out;
    }
    /* The Alibaba cluster shares GPUs by milli: nodes are "shared". */
    if (add_nodes(sc, path, where, r->name, 1, gm, r->gpus, r->cpu_milli,
                  r->memory_mib, LSCHED_GPU_SHARED, gm ? gm->has_price : 1,
                  gm ? gm->price_per_gpu_hour : 0, NULL, 0, err, errlen))
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
