/*
 * Fuzz target: the GPU catalog JSON (catalog_parse, `--catalog FILE` and
 * the built-in sim/config/gpu_catalog.json), then cluster specs resolved against
 * the parsed catalog (aliases, prices, MIG profiles).
 *
 * Checks: a parse either gives models with non-empty unique names that
 * catalog_find resolves, non-negative finite figures and MIG profiles of
 * distinct valid kinds, or fails with an empty catalog and a message that
 * starts with the origin. Price overrides and cluster specs on a parsed
 * catalog either work or fail with a message; built clusters pass
 * lsched_cluster_check.
 */
#include "cluster_spec.h"
#include "fuzz.h"

#include <math.h>
#include <string.h>

#define ORIGIN "fuzz-catalog.json"

static const char *const specs[] = {
    NULL, /* sim_default_cluster_json */
    "{\"node_groups\": [{\"name\": \"s\", \"count\": 2, \"gpu_model\": "
    "\"A100\", \"gpus_per_node\": 2, \"cpu_milli\": 1000, \"memory_mib\": "
    "1000, \"gpu_mode\": \"mig-static\", \"mig_layout\": \"all-1g\"}, "
    "{\"name\": \"d\", \"count\": 1, \"gpu_model\": \"H100-SXM5-80GB\", "
    "\"gpus_per_node\": 1, \"cpu_milli\": 1000, \"memory_mib\": 1000, "
    "\"gpu_mode\": \"mig-dynamic\"}, {\"name\": \"t\", \"count\": 1, "
    "\"gpu_model\": \"T4\", \"gpus_per_node\": 4, \"cpu_milli\": 1, "
    "\"memory_mib\": 1}]}",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text)
    abort();
  memcpy(text, data, size);
  text[size] = '\0';
  gpu_catalog cat;
  char err[1024] = "";
  int rc = catalog_parse(&cat, text, ORIGIN, err, sizeof err);
  free(text);
  if (rc != 0) {
    FUZZ_CHECK(rc == -1, "rc %d", rc);
    FUZZ_CHECK(strncmp(err, ORIGIN ":", strlen(ORIGIN) + 1) == 0,
               "message does not start with the origin: '%s'", err);
    FUZZ_CHECK(cat.n == 0 && cat.models == NULL, "failed parse left models");
    return 0;
  }
  for (int i = 0; i < cat.n; i++) {
    const gpu_model_info *m = &cat.models[i];
    FUZZ_CHECK(m->name && m->name[0], "model %d name", i);
    FUZZ_CHECK(catalog_find(&cat, m->name) == m, "model %d not found", i);
    for (int k = 0; k < m->naliases; k++)
      FUZZ_CHECK(m->aliases[k] && catalog_find(&cat, m->aliases[k]),
                 "alias %d of model %d", k, i);
    FUZZ_CHECK(isfinite(m->memory_gib) && m->memory_gib >= 0 &&
                   isfinite(m->bf16_tflops) && m->bf16_tflops >= 0 &&
                   isfinite(m->tdp_w) && m->tdp_w >= 0 &&
                   isfinite(m->price_per_gpu_hour) &&
                   m->price_per_gpu_hour >= 0,
               "model %d figures", i);
    FUZZ_CHECK(m->price_source && m->price_date, "model %d strings", i);
    FUZZ_CHECK(m->nmig == 0 || m->mig, "profiles without mig");
    unsigned kinds = 0;
    for (int k = 0; k < m->nmig; k++) {
      const gpu_mig_profile *p = &m->mig_profiles[k];
      FUZZ_CHECK(p->kind >= 1 && p->kind <= LSCHED_MIG_KINDS &&
                     !((kinds >> p->kind) & 1),
                 "model %d profile %d kind %d", i, k, p->kind);
      kinds |= 1u << p->kind;
      FUZZ_CHECK(p->name && catalog_mig_profile(m, p->name) == p &&
                     catalog_mig_kind(m, p->kind) == p,
                 "profile lookup");
      FUZZ_CHECK(isfinite(p->memory_gib) && p->memory_gib > 0, "memory");
    }
  }
  if (cat.n > 0) {
    char assign[256];
    snprintf(assign, sizeof assign, "%.200s=1.5", cat.models[0].name);
    int prc = catalog_override_price(&cat, assign, err, sizeof err);
    /* A name of 200+ bytes, or holding '=', cannot be named this way. */
    if (prc == 0)
      FUZZ_CHECK(cat.models[0].has_price, "override");
  }
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
    sim_cluster sc;
    memset(&sc, 0, sizeof sc);
    err[0] = '\0';
    const char *json = specs[s] ? specs[s] : sim_default_cluster_json;
    int crc =
        sim_cluster_from_json(&sc, json, "spec", &cat, 1, err, sizeof err);
    if (crc != 0) {
      FUZZ_CHECK(strncmp(err, "spec:", 5) == 0, "cluster message: '%s'", err);
      continue;
    }
    FUZZ_CHECK(lsched_cluster_check(sc.c) == LSCHED_OK, "check: %s",
               lsched_cluster_errmsg(sc.c));
    for (int i = 0; i < sc.nodes; i++)
      FUZZ_CHECK(isfinite(sc.node_price[i]) && sc.node_price[i] >= 0,
                 "node price");
    sim_cluster_free(&sc);
  }
  catalog_free(&cat);
  return 0;
}
