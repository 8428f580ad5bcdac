/* A scheduler that links libsched: mirror two 8-GPU nodes, ask best-fit
 * where four jobs go (4, 6, 2 and 4 GPUs), take and give back resources. */
#include <libsched/libsched.h>
#include <stdio.h>

int main(void) {
  /* The library must serve this header's ABI: same major, and while the
   * major is 0 the same minor (any patch level); from 1.0 a newer minor. */
  if (lsched_version_check(LSCHED_VERSION_NUMBER) != LSCHED_OK) {
    fprintf(stderr, "built against libsched %s, cannot use %s\n",
            LSCHED_VERSION_STRING, lsched_version_string());
    return 1;
  }
  lsched_cluster *c;
  if (lsched_cluster_create(&c, NULL) != LSCHED_OK)
    return 1;
  int a100 = lsched_cluster_model_id(c, "A100-SXM4-80GB", 1);
  for (int i = 0; i < 2; i++) {
    lsched_node_spec n = LSCHED_NODE_SPEC_INIT;
    n.name = i ? "gn2" : "gn1";
    n.cpu_milli = 16000; n.memory_mib = 64000;
    n.gpu_count = 8; n.gpu_model = a100; n.gpu_mode = LSCHED_GPU_SHARED;
    if (lsched_cluster_add_node(c, &n, NULL) != LSCHED_OK)
      return 1;
  }
  lsched_registry *reg;
  lsched_policy *pol;
  if (lsched_registry_create(&reg, NULL) || lsched_registry_add_builtins(reg) ||
      lsched_policy_create(&pol, c, lsched_registry_find(reg, "best-fit")))
    return 1;

  /* Best-fit puts the 2-GPU job on gn2 beside the 6-GPU one (first-fit would
   * take gn1), which keeps room on gn1 for the last 4-GPU job. */
  const int gpus[4] = {4, 6, 2, 4}, want[4] = {0, 1, 1, 0};
  lsched_placement p[4];
  for (int j = 0; j < 4; j++) {
    lsched_request r = LSCHED_REQUEST_INIT;
    r.cpu_milli = 1000; r.memory_mib = 1000;
    r.gpu_count = gpus[j]; r.gpu_milli = 1000;
    int rc = lsched_policy_place(pol, &r, &p[j]);
    if (rc != LSCHED_OK || p[j].node != want[j] || lsched_alloc(c, &p[j])) {
      fprintf(stderr, "job %d: %s, node %d (want %d): %s\n", j,
              lsched_err_name(rc), p[j].node, want[j], lsched_cluster_errmsg(c));
      return 1;
    }
    lsched_node_info ni = LSCHED_NODE_INFO_INIT;
    lsched_cluster_node_info(c, p[j].node, &ni);
    printf("job %d: %d GPUs on %s\n", j, gpus[j], ni.name);
  }
  for (int j = 3; j >= 0; j--)
    lsched_release(c, &p[j]);
  lsched_totals t = LSCHED_TOTALS_INIT;
  lsched_cluster_totals(c, &t);
  int ok = t.gpu_milli_free == 16000 && t.cpu_free == 32000 &&
           lsched_cluster_check(c) == LSCHED_OK;
  printf("libsched %s: %s\n", lsched_version_string(), ok ? "ok" : "FAILED");
  lsched_policy_destroy(pol);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
  return ok ? 0 : 1;
}
