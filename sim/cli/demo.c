/*
 * schedsim demo: the README's main job. Generates the built-in synthetic
 * workload, replays it with every registered policy on the built-in
 * A100/H100 cluster twice (GPUs shared by milli, and whole-GPU exclusive
 * allocation), prints one comparison table and writes each run's outputs
 * plus DIR/comparison.csv.
 */
#include "cli.h"
#include "options.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The built-in cluster with every group's gpu_mode replaced. */
static char *cluster_json_with_mode(const char *mode) {
  const char *src = sim_default_cluster_json;
  size_t n = strlen(src) + 64;
  char *out = malloc(n);
  if (!out)
    return NULL;
  /* The built-in spec spells "gpu_mode": "shared" for every group. */
  const char *key = "\"gpu_mode\": \"shared\"";
  size_t w = 0;
  for (const char *p = src; *p;) {
    if (strncmp(p, key, strlen(key)) == 0) {
      w += (size_t)snprintf(out + w, n - w, "\"gpu_mode\": \"%s\"", mode);
      p += strlen(key);
    } else {
      out[w++] = *p++;
    }
  }
  out[w] = 0;
  return out;
}

int cmd_demo(int argc, char **argv) {
  run_config o;
  int npos;
  int st = cli_parse(C_DEMO, argc, argv, &o, NULL, 0, &npos);
  if (st >= 0)
    return st;
  const char *outdir = o.out ? o.out : "out/demo";
  uint64_t seed = o.seed;
  const char *queue_name = run_config_queue(&o);
  char err[1024];
  gpu_catalog cat;
  if (catalog_load_default(&cat, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    return 1;
  }
  trace t;
  trace_init(&t);
  if (cli_load_trace(&t, "builtin:default", seed, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    catalog_free(&cat);
    return 1;
  }
  lsched_registry *reg = NULL;
  if (lsched_registry_create(&reg, NULL) || lsched_registry_add_builtins(reg)) {
    fprintf(stderr, "schedsim: cannot create the policy registry\n");
    trace_free(&t);
    catalog_free(&cat);
    return 1;
  }
  int status = 0;
  char path[4096];
  out_file cmp = {0};
  if (out_mkdir(outdir, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = 1;
    goto done;
  }
  snprintf(path, sizeof path, "%s/comparison.csv", outdir);
  if (out_open(&cmp, path, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = 1;
    goto done;
  }
  fputs("gpu_mode,policy,jobs_completed,gpu_alloc_ratio_mean,queue_p50_s,"
        "queue_p95_s,queue_p99_s,jct_mean_s,makespan_s,cost_total_usd,"
        "cost_per_allocated_gpu_hour_usd,cost_idle_usd\n",
        cmp.f);
  printf("schedsim demo: %zu synthetic jobs (seed %" PRIu64 "), queue %s, "
         "cluster 16x8 A100-80GB + 8x8 H100-80GB\n\n",
         t.n, seed, queue_name);
  printf("%-9s %-10s %7s %9s %9s %9s %9s %10s %9s\n", "gpu_mode", "policy",
         "util%", "queue_p50", "queue_p95", "queue_p99", "jct_mean",
         "cost_usd", "$/alloc_h");
  static const char *const modes[] = {"shared", "exclusive"};
  for (int mi = 0; mi < 2 && status == 0; mi++) {
    char *json = cluster_json_with_mode(modes[mi]);
    sim_cluster sc;
    if (!json || sim_cluster_from_json(&sc, json, "builtin:default", &cat, 0,
                                       err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", json ? err : "out of memory");
      free(json);
      status = 1;
      break;
    }
    free(json);
    for (size_t pi = 0; pi < lsched_registry_count(reg); pi++) {
      const char *pol = lsched_registry_at(reg, pi)->name;
      /* Every option of the table that demo takes (queue, seed and the
       * engine's migration and estimate options), the policy aside. */
      sim_options opt;
      run_config_sim_options(&o, &opt);
      opt.policy = pol;
      run_meta meta = {"replay", pol, queue_name, seed, "builtin:default",
                       sc.name, sc.nodes, sc.gpus};
      char dir[4096];
      snprintf(dir, sizeof dir, "%s/%s-%s", outdir, modes[mi], pol);
      sim_result r;
      memset(&r, 0, sizeof r);
      status = cli_replay(&sc, &cat, &t, &opt, dir, &meta, &r, 0);
      if (status) {
        sim_result_free(&r);
        break;
      }
      printf("%-9s %-10s %7.2f %9.0f %9.0f %9.0f %9.0f %10.0f %9.3f\n",
             modes[mi], pol, 100 * r.gpu_alloc_ratio_mean, r.queue_time_s.p50,
             r.queue_time_s.p95, r.queue_time_s.p99, r.jct_s.mean,
             r.cost_total, r.cost_per_allocated_gpu_hour);
      fprintf(cmp.f, "%s,%s,%zu,%.6f,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f,%.4f,%.2f\n",
              modes[mi], pol, r.completed, r.gpu_alloc_ratio_mean,
              r.queue_time_s.p50, r.queue_time_s.p95, r.queue_time_s.p99,
              r.jct_s.mean, (double)r.makespan_us / 1e6, r.cost_total,
              r.cost_per_allocated_gpu_hour, r.cost_idle);
      sim_result_free(&r);
    }
    sim_cluster_free(&sc);
  }
  if (status == 0) {
    if (out_commit(&cmp, err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      status = 1;
    } else {
      printf("\nutil%% = time-weighted mean GPU allocation; queue times in "
             "seconds; cost at the catalog's on-demand prices.\n"
             "outputs: %s/comparison.csv and %s/<mode>-<policy>/\n",
             outdir, outdir);
    }
  } else {
    out_abort(&cmp);
  }
done:
  lsched_registry_destroy(reg);
  trace_free(&t);
  catalog_free(&cat);
  return status;
}
