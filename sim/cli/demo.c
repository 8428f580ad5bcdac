/*
 * schedsim demo: the main job in one command. Generates the built-in
 * synthetic workload and replays it on the built-in A100/H100 nodes in four
 * GPU modes (builtin:default shared by milli, builtin:exclusive whole GPUs,
 * builtin:mig-static, builtin:mig-dynamic), each with the policies that
 * apply to it (report_policy_applies: MIG policies on the MIG clusters, the
 * others elsewhere), prints one comparison table and the answer (which
 * policy and mode win, by how much over first-fit), and writes each run's
 * outputs plus DIR/comparison.csv.
 */
#include "builtin_clusters.h"
#include "cli.h"
#include "options.h"
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
  run_metrics *met = NULL;
  report_run *rr = NULL;
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
         "16x8 A100-80GB + 8x8 H100-80GB, GPUs shared, whole, static and "
         "dynamic MIG\n\n",
         t.n, seed, queue_name);
  printf("%-11s %-14s %7s %9s %9s %9s %9s %10s %9s\n", "gpu_mode", "policy",
         "util%", "queue_p50", "queue_p95", "queue_p99", "jct_mean",
         "cost_usd", "$/alloc_h");
  static const char *const modes[] = {"shared", "exclusive", "mig-static",
                                      "mig-dynamic"};
  static const char *const specs[] = {"builtin:default", "builtin:exclusive",
                                      "builtin:mig-static",
                                      "builtin:mig-dynamic"};
  static const char *const groups[] = {"shared GPUs", "whole GPUs",
                                       "static MIG", "dynamic MIG"};
  size_t npol = lsched_registry_count(reg), nrun = 0;
  met = calloc(4 * npol, sizeof *met);
  rr = calloc(4 * npol, sizeof *rr);
  if (!met || !rr) {
    fprintf(stderr, "schedsim: out of memory\n");
    status = 1;
  }
  for (int mi = 0; mi < 4 && status == 0; mi++) {
    for (size_t pi = 0; pi < npol; pi++) {
      const char *pol = lsched_registry_at(reg, pi)->name;
      /* A fresh cluster per run: a dynamic MIG replay leaves idle
       * instances behind, which the next run must not inherit. */
      sim_cluster sc;
      if (cli_load_cluster(&sc, specs[mi], &cat, 0, err, sizeof err)) {
        fprintf(stderr, "schedsim: %s\n", err);
        status = 1;
        break;
      }
      if (!report_policy_applies(pol, &sc)) {
        sim_cluster_free(&sc);
        continue;
      }
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
        sim_cluster_free(&sc);
        break;
      }
      metrics_from_result(&met[nrun], &meta, &r);
      rr[nrun].label = pol;
      rr[nrun].group = groups[mi];
      rr[nrun].policy = pol;
      rr[nrun].dir = NULL;
      rr[nrun].m = &met[nrun];
      nrun++;
      printf("%-11s %-14s %7.2f %9.0f %9.0f %9.0f %9.0f %10.0f %9.3f\n",
             modes[mi], pol, 100 * r.gpu_alloc_ratio_mean, r.queue_time_s.p50,
             r.queue_time_s.p95, r.queue_time_s.p99, r.jct_s.mean,
             r.cost_total, r.cost_per_allocated_gpu_hour);
      fprintf(cmp.f, "%s,%s,%zu,%.6f,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f,%.4f,%.2f\n",
              modes[mi], pol, r.completed, r.gpu_alloc_ratio_mean,
              r.queue_time_s.p50, r.queue_time_s.p95, r.queue_time_s.p99,
              r.jct_s.mean, (double)r.makespan_us / 1e6, r.cost_total,
              r.cost_per_allocated_gpu_hour, r.cost_idle);
      sim_result_free(&r);
      sim_cluster_free(&sc);
    }
  }
  if (status == 0) {
    if (out_commit(&cmp, err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      status = 1;
    } else {
      printf("\n");
      report_answer(stdout, rr, nrun);
      printf("\nutil%% = time-weighted mean GPU allocation; queue times in "
             "seconds; cost at the catalog's on-demand prices.\n"
             "outputs: %s/comparison.csv and %s/<mode>-<policy>/\n",
             outdir, outdir);
    }
  } else {
    out_abort(&cmp);
  }
done:
  free(met);
  free(rr);
  lsched_registry_destroy(reg);
  trace_free(&t);
  catalog_free(&cat);
  return status;
}
