/*
 * lsched-slurm-replay DUMP: the simulator's answer for the state the advisor
 * mirrored from Slurm ("one library, two hosts").
 *
 * The advisor's --dump holds its mirrored libsched state as a schedsim
 * cluster spec plus the allocations of the running jobs, and, in decision
 * order, every request it asked the policy about, the nodes it hid for that
 * request, and its decision. This program rebuilds that state the way
 * schedsim builds a cluster (sim_cluster_from_json with the GPU catalog, the
 * same code path as `schedsim run --cluster`), applies the allocations with
 * lsched_alloc, asks the same policy through its own registry for each
 * request, allocates each answer in turn, and compares node and GPUs with
 * the advisor's decision. It shares no code with the advisor's mirror.
 *
 * Output: one JSON line per request
 *   {"job_id":N,"advisor":{"decision":..,"node":..,"gpus":[..]},
 *    "simulator":{...},"match":true|false}
 * and a summary on stderr. Exit status: 0 all equal, 1 a difference, 2 bad
 * input.
 */
#include "catalog.h"
#include "cluster_spec.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "lsched-slurm-replay"

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t k = fread(buf + n, 1, cap - n - 1, f);
    n += k;
    if (k == 0)
      break;
    if (n + 1 == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
      }
      buf = nb;
    }
  }
  if (buf)
    buf[n] = '\0';
  fclose(f);
  return buf;
}

/* A placement of gpu_count GPUs (mask) at milli each plus CPU and memory;
 * every other member (appended by later header versions) zero. */
static lsched_placement mkplace(int node, uint64_t mask, int milli, int64_t cpu,
                                int64_t mem) {
  lsched_placement p;
  memset(&p, 0, sizeof p);
  p.node = node;
  p.gpu_count = __builtin_popcountll(mask);
  p.gpu_milli = mask ? milli : 0;
  p.gpu_mask = mask;
  p.cpu_milli = cpu;
  p.memory_mib = mem;
  return p;
}

static int node_id(const lsched_cluster *c, const char *name) {
  for (int i = 0; i < lsched_cluster_node_count(c); i++) {
    lsched_node_info ni;
    if (lsched_cluster_node_info(c, i, &ni) == LSCHED_OK &&
        strcmp(ni.name, name) == 0)
      return i;
  }
  return -1;
}

static uint64_t gpu_mask(const cJSON *arr) {
  uint64_t m = 0;
  const cJSON *g;
  cJSON_ArrayForEach(g, arr) {
    if (cJSON_IsNumber(g) && g->valueint >= 0 && g->valueint < 64)
      m |= UINT64_C(1) << g->valueint;
  }
  return m;
}

static int64_t num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void print_side(const char *decision, const char *node, uint64_t mask) {
  printf("{\"decision\":\"%s\",\"node\":", decision);
  if (node)
    printf("\"%s\"", node);
  else
    fputs("null", stdout);
  fputs(",\"gpus\":[", stdout);
  int first = 1;
  for (int g = 0; g < 64; g++)
    if (mask >> g & 1) {
      printf("%s%d", first ? "" : ",", g);
      first = 0;
    }
  fputs("]}", stdout);
}

/* Takes everything free on node (the advisor hid it from this request). */
static int block_node(lsched_cluster *c, int node, lsched_placement *out,
                      int *n) {
  lsched_node_info ni;
  if (lsched_cluster_node_info(c, node, &ni))
    return -1;
  if (ni.cpu_free > 0 || ni.memory_free > 0) {
    lsched_placement p = mkplace(node, 0, 0, ni.cpu_free, ni.memory_free);
    if (lsched_alloc(c, &p))
      return -1;
    out[(*n)++] = p;
  }
  for (int g = 0; g < ni.gpu_count; g++) {
    int f = lsched_cluster_gpu_free(c, node, g);
    if (f > 0) {
      lsched_placement p = mkplace(node, UINT64_C(1) << g, f, 0, 0);
      if (lsched_alloc(c, &p))
        return -1;
      out[(*n)++] = p;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2 || argv[1][0] == '-') {
    fprintf(stderr, "usage: " PROG " DUMP   (a file from lsched-slurm-advisor "
                    "--dump)\n");
    return 2;
  }
  const char *path = argv[1];
  char err[1024];
  char *text = slurp(path);
  if (!text) {
    fprintf(stderr, PROG ": cannot read %s\n", path);
    return 2;
  }
  cJSON *root = cJSON_Parse(text);
  free(text);
  const cJSON *cluster = cJSON_GetObjectItemCaseSensitive(root, "cluster");
  const char *policy = str(root, "policy");
  const cJSON *allocs = cJSON_GetObjectItemCaseSensitive(root, "allocations");
  const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
  const char *format = str(root, "format");
  if (!root || !cJSON_IsObject(cluster) || !policy || !cJSON_IsArray(allocs) ||
      !cJSON_IsArray(jobs) || !format ||
      strcmp(format, "lsched-slurm-advisor-dump 1") != 0) {
    fprintf(stderr, PROG ": %s: not an lsched-slurm-advisor dump\n", path);
    cJSON_Delete(root);
    return 2;
  }

  gpu_catalog cat;
  sim_cluster sc;
  memset(&sc, 0, sizeof sc);
  if (catalog_load_default(&cat, err, sizeof err)) {
    fprintf(stderr, PROG ": %s\n", err);
    cJSON_Delete(root);
    return 2;
  }
  char *spec = cJSON_PrintUnformatted(cluster);
  snprintf(err, sizeof err, "out of memory");
  int rc = spec ? sim_cluster_from_json(&sc, spec, path, &cat, 1, err,
                                        sizeof err)
                : -1;
  free(spec);
  if (rc) {
    fprintf(stderr, PROG ": %s\n", err);
    catalog_free(&cat);
    cJSON_Delete(root);
    return 2;
  }
  lsched_cluster *c = sc.c;
  lsched_registry *reg = NULL;
  lsched_policy *pol = NULL;
  lsched_placement *blk = NULL;
  int status = 2, n = 0, differ = 0;
  if (lsched_registry_create(&reg, NULL) || lsched_registry_add_builtins(reg) ||
      !lsched_registry_find(reg, policy) ||
      lsched_policy_create(&pol, c, lsched_registry_find(reg, policy))) {
    fprintf(stderr, PROG ": policy '%s' not available\n", policy);
    goto out;
  }
  const cJSON *pv;
  cJSON_ArrayForEach(pv, cJSON_GetObjectItemCaseSensitive(root, "params")) {
    char kv[256];
    snprintf(kv, sizeof kv, "%s", cJSON_IsString(pv) ? pv->valuestring : "");
    char *eq = strchr(kv, '=');
    if (!eq || (*eq = '\0', lsched_policy_set_param(pol, kv, eq + 1))) {
      fprintf(stderr, PROG ": policy parameter '%s' refused\n", kv);
      goto out;
    }
  }

  /* The running jobs, as the advisor mirrored them. */
  const cJSON *a;
  cJSON_ArrayForEach(a, allocs) {
    const char *nn = str(a, "node");
    int id = nn ? node_id(c, nn) : -1;
    uint64_t m = gpu_mask(cJSON_GetObjectItemCaseSensitive(a, "gpus"));
    lsched_placement p = mkplace(id, m, (int)num(a, "gpu_milli"),
                                 num(a, "cpu_milli"), num(a, "memory_mib"));
    if (id < 0 || lsched_alloc(c, &p)) {
      fprintf(stderr, PROG ": %s: allocation on node '%s' refused: %s\n", path,
              nn ? nn : "?", lsched_cluster_errmsg(c));
      goto out;
    }
  }

  int nodes = lsched_cluster_node_count(c);
  blk = malloc((size_t)(nodes ? nodes : 1) * (LSCHED_MAX_GPUS_PER_NODE + 1) *
               sizeof *blk);
  if (!blk)
    goto out;
  const cJSON *j;
  cJSON_ArrayForEach(j, jobs) {
    const cJSON *rq = cJSON_GetObjectItemCaseSensitive(j, "request");
    lsched_request r = LSCHED_REQUEST_INIT;
    r.cpu_milli = num(rq, "cpu_milli");
    r.memory_mib = num(rq, "memory_mib");
    r.gpu_count = (int)num(rq, "gpu_count");
    r.gpu_milli = (int)num(rq, "gpu_milli");
    const char *model = str(rq, "gpu_model");
    if (model) {
      const gpu_model_info *gm = catalog_find(&cat, model);
      int mid = gm ? lsched_cluster_find_model(c, gm->name) : -1;
      if (mid < 0) {
        fprintf(stderr, PROG ": %s: job %lld: GPU model '%s' not in the "
                        "cluster\n", path, (long long)num(j, "job_id"), model);
        goto out;
      }
      r.model_mask = UINT64_C(1) << mid;
    }
    int nb = 0;
    const cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(j, "blocked")) {
      int id = cJSON_IsString(b) ? node_id(c, b->valuestring) : -1;
      if (id < 0 || block_node(c, id, blk, &nb)) {
        fprintf(stderr, PROG ": %s: cannot hide node for job %lld\n", path,
                (long long)num(j, "job_id"));
        goto out;
      }
    }
    lsched_placement p;
    int prc = lsched_policy_place(pol, &r, &p);
    for (int k = nb - 1; k >= 0; k--)
      lsched_release(c, &blk[k]);

    const char *adv = str(j, "decision");
    const char *adv_node = str(j, "node");
    uint64_t adv_mask = gpu_mask(cJSON_GetObjectItemCaseSensitive(j, "gpus"));
    const char *sim_dec = prc == LSCHED_OK ? "place" : "nofit";
    const char *sim_node = NULL;
    lsched_node_info ni;
    if (prc == LSCHED_OK && lsched_cluster_node_info(c, p.node, &ni) == 0)
      sim_node = ni.name;
    /* The advisor's "reject" is a placement its guard refused: the policy
     * chose that node all the same, and neither side allocates it. */
    int adv_placed = adv && (strcmp(adv, "place") == 0 ||
                             strcmp(adv, "reject") == 0);
    int match = adv_placed ? prc == LSCHED_OK && adv_node && sim_node &&
                                 strcmp(adv_node, sim_node) == 0 &&
                                 adv_mask == p.gpu_mask
                           : prc != LSCHED_OK;
    printf("{\"job_id\":%lld,\"advisor\":", (long long)num(j, "job_id"));
    print_side(adv ? adv : "?", adv_node, adv_mask);
    fputs(",\"simulator\":", stdout);
    print_side(sim_dec, sim_node, prc == LSCHED_OK ? p.gpu_mask : 0);
    printf(",\"match\":%s}\n", match ? "true" : "false");
    n++;
    differ += !match;
    if (prc == LSCHED_OK && adv && strcmp(adv, "reject") != 0 &&
        lsched_alloc(c, &p)) {
      fprintf(stderr, PROG ": alloc refused: %s\n", lsched_cluster_errmsg(c));
      goto out;
    }
  }
  fprintf(stderr, PROG ": %d decisions of policy %s on %d nodes: %s\n", n,
          policy, nodes, differ ? "DIFFERENT" : "all equal");
  if (differ)
    fprintf(stderr, PROG ": %d of %d differ\n", differ, n);
  status = differ ? 1 : 0;
out:
  free(blk);
  lsched_policy_destroy(pol);
  lsched_registry_destroy(reg);
  sim_cluster_free(&sc);
  catalog_free(&cat);
  cJSON_Delete(root);
  return status;
}
