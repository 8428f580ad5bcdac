/*
 * Fuzz target: sim_cluster_load, the `--cluster FILE` path: a JSON cluster
 * spec (node groups, modes, MIG layouts, prices) or an Alibaba node list,
 * resolved against the built-in GPU catalog and built into a libsched
 * cluster.
 *
 * Checks: a load either gives a cluster that passes lsched_cluster_check,
 * whose node and GPU counts match libsched's, whose node names are unique
 * and whose prices are finite and non-negative, and on which a policy can
 * place, allocate and release requests; or it fails with a message that
 * starts with the path. A UTF-8 BOM changes nothing.
 *
 * Specs asking for more than 512 nodes in total are skipped: a count of up
 * to 1,000,000 per group is valid, and building such clusters would only
 * make the fuzzer slow.
 */
#include "cluster_spec.h"
#include "fuzz.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#define MAX_NODES 512

static gpu_catalog cat;
static int have_cat;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when the text is JSON asking for more than MAX_NODES nodes. */
static int too_big(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text)
    abort();
  memcpy(text, data, size);
  text[size] = '\0';
  const char *s = text;
  if (size >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
    s += 3;
  cJSON *root = cJSON_Parse(s);
  free(text);
  double nodes = 0;
  const cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, "node_groups");
  const cJSON *g;
  if (cJSON_IsArray(groups))
    cJSON_ArrayForEach(g, groups) {
      const cJSON *c = cJSON_GetObjectItemCaseSensitive(g, "count");
      if (cJSON_IsNumber(c) && c->valuedouble > 0)
        nodes += c->valuedouble;
    }
  cJSON_Delete(root);
  return !(nodes <= MAX_NODES);
}

static void exercise(sim_cluster *sc) {
  lsched_registry *reg = NULL;
  FUZZ_CHECK(lsched_registry_create(&reg, NULL) == LSCHED_OK, "registry");
  FUZZ_CHECK(lsched_registry_add_builtins(reg) == LSCHED_OK, "builtins");
  static const char *const names[] = {"first-fit", "best-fit", "mig-first-fit"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    const lsched_policy_ops *ops = lsched_registry_find(reg, names[k]);
    if (!ops)
      continue;
    lsched_policy *pol = NULL;
    FUZZ_CHECK(lsched_policy_create(&pol, sc->c, ops) == LSCHED_OK, "%s",
               names[k]);
    lsched_request reqs[4];
    for (int i = 0; i < 4; i++) {
      lsched_request r = LSCHED_REQUEST_INIT;
      reqs[i] = r;
    }
    reqs[0].cpu_milli = 1000, reqs[0].gpu_count = 1, reqs[0].gpu_milli = 500;
    reqs[1].cpu_milli = 1, reqs[1].memory_mib = 1;
    reqs[2].gpu_count = 2, reqs[2].gpu_milli = 1000;
    reqs[3].gpu_count = 1, reqs[3].mig_kind = LSCHED_MIG_ANY,
    reqs[3].mig_compute_milli = 300;
    lsched_placement pl[4];
    int ok[4];
    for (int i = 0; i < 4; i++) {
      ok[i] = lsched_policy_place(pol, &reqs[i], &pl[i]) == LSCHED_OK;
      if (ok[i])
        FUZZ_CHECK(lsched_alloc(sc->c, &pl[i]) == LSCHED_OK,
                   "%s placed request %d where it cannot be allocated: %s",
                   names[k], i, lsched_cluster_errmsg(sc->c));
      FUZZ_CHECK(lsched_cluster_check(sc->c) == LSCHED_OK, "check: %s",
                 lsched_cluster_errmsg(sc->c));
    }
    for (int i = 3; i >= 0; i--)
      if (ok[i])
        FUZZ_CHECK(lsched_release(sc->c, &pl[i]) == LSCHED_OK, "release");
    lsched_totals tot;
    lsched_cluster_totals(sc->c, &tot);
    FUZZ_CHECK(tot.cpu_free == tot.cpu_milli &&
                   tot.memory_free == tot.memory_mib &&
                   tot.gpu_milli_free == tot.gpu_milli,
               "release did not restore the totals");
    lsched_policy_destroy(pol);
  }
  lsched_registry_destroy(reg);
}

static void check(int rc, sim_cluster *sc, const char *err, const char *path) {
  if (rc != 0) {
    size_t pl = strlen(path);
    FUZZ_CHECK(strncmp(err, path, pl) == 0 && err[pl] == ':',
               "message does not start with the path: '%s'", err);
    return;
  }
  FUZZ_CHECK(sc->c && sc->name, "cluster or name missing");
  FUZZ_CHECK(lsched_cluster_check(sc->c) == LSCHED_OK, "check: %s",
             lsched_cluster_errmsg(sc->c));
  FUZZ_CHECK(lsched_cluster_node_count(sc->c) == sc->nodes && sc->nodes > 0,
             "%d nodes vs %d", sc->nodes, lsched_cluster_node_count(sc->c));
  lsched_totals tot;
  lsched_cluster_totals(sc->c, &tot);
  FUZZ_CHECK(tot.gpus == sc->gpus && sc->mig_gpus + sc->plain_gpus == sc->gpus,
             "GPU counts %d %d %d %d", tot.gpus, sc->gpus, sc->mig_gpus,
             sc->plain_gpus);
  FUZZ_CHECK(sc->unpriced_gpus >= 0 && sc->unpriced_gpus <= sc->gpus,
             "unpriced GPUs");
  char **names = malloc((size_t)sc->nodes * sizeof *names);
  if (!names)
    abort();
  for (int i = 0; i < sc->nodes; i++) {
    lsched_node_info ni;
    FUZZ_CHECK(lsched_cluster_node_info(sc->c, i, &ni) == LSCHED_OK, "info");
    names[i] = (char *)ni.name;
    FUZZ_CHECK(isfinite(sc->node_price[i]) && sc->node_price[i] >= 0,
               "node %d price %g", i, sc->node_price[i]);
    FUZZ_CHECK(sc->mig_reconfig_us[i] >= 0, "node %d reconfiguration", i);
  }
  qsort(names, (size_t)sc->nodes, sizeof *names, cmp_str);
  for (int i = 1; i < sc->nodes; i++)
    FUZZ_CHECK(strcmp(names[i - 1], names[i]) != 0, "duplicate node '%s'",
               names[i]);
  free(names);
  uint64_t mask;
  char e[256];
  static const char *const specs[] = {"A100-SXM4-80GB|H100", "T4", "V100M16",
                                      "no-such-gpu", "|"};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    int r = sim_cluster_spec_mask(sc, &cat, specs[i], &mask, e, sizeof e);
    FUZZ_CHECK(r >= -1 && r <= 1, "spec mask");
  }
  exercise(sc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[1024];
  if (!have_cat) {
    FUZZ_CHECK(catalog_load_default(&cat, err, sizeof err) == 0, "%s", err);
    have_cat = 1;
  }
  if (too_big(data, size))
    return 0;
  char path[512];
  fuzz_path(path, sizeof path, "cluster.json");
  fuzz_write(path, data, size);
  sim_cluster sc;
  memset(&sc, 0, sizeof sc);
  err[0] = '\0';
  int rc = sim_cluster_load(&sc, path, &cat, 1, err, sizeof err);
  FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
  check(rc, &sc, err, path);
  if (!(size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)) {
    uint8_t *v = malloc(size + 3);
    if (!v)
      abort();
    memcpy(v, "\xEF\xBB\xBF", 3);
    memcpy(v + 3, data, size);
    fuzz_write(path, v, size + 3);
    free(v);
    sim_cluster sb;
    memset(&sb, 0, sizeof sb);
    char err2[1024] = "";
    int rc2 = sim_cluster_load(&sb, path, &cat, 1, err2, sizeof err2);
    check(rc2, &sb, err2, path);
    FUZZ_CHECK(rc == rc2, "a UTF-8 BOM changes the result: '%s' vs '%s'", err,
               err2);
    if (rc == 0)
      FUZZ_CHECK(sc.nodes == sb.nodes && sc.gpus == sb.gpus &&
                     strcmp(sc.name, sb.name) == 0,
                 "a UTF-8 BOM changes the cluster");
    if (rc == 0)
      sim_cluster_free(&sb);
  }
  if (rc == 0)
    sim_cluster_free(&sc);
  return 0;
}
