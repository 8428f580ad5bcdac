/*
 * What a set of runs answers (compare, sweep, demo): which policies apply
 * to a cluster by default, the winner per metric with its margin over
 * first-fit (the sentences under the compare table, one a line), and
 * report.html.
 * Metric values are read through the metric table (run_metrics).
 */
#ifndef SIM_REPORT_H
#define SIM_REPORT_H

#include "cluster_spec.h"
#include "research.h"

#include <stdio.h>

/* One run of the set: labels and its metrics (read back from its
 * summary.json, or filled from its result). group names the cluster (and
 * queue, when several) the run belongs to: the margin of a winner is taken
 * over first-fit of the same group. dir is the run's folder relative to the
 * report (NULL: no links). */
typedef struct report_run {
  const char *label;
  const char *group;
  const char *policy;
  const char *dir;
  const run_metrics *m;
} report_run;

/* The default policy set of compare and demo: MIG policies (named mig-*)
 * only on clusters with MIG GPUs, and only they on clusters whose GPUs are
 * all MIG (there every other policy places as mig-first-fit does). */
int report_policy_applies(const char *policy, const sim_cluster *sc);

/* The answer: three sentences (useful utilization, mean queue time, cost
 * per job-hour), each naming the best run and its margin over first-fit
 * (mig-first-fit on all-MIG groups) of its group. Among the runs that
 * completed the most jobs; ties go to the earliest run. */
void report_answer(FILE *f, const report_run *runs, size_t n);

/* OUTDIR/report.html: one self-contained page (title, the setup lines,
 * the answer, the table of the compare-table columns, every
 * OUTDIR/plots/NAME.svg of plot_names inlined, links to each run's files).
 * 0, or -1 with err set. */
int report_write_html(const char *outdir, const char *title,
                      const char *const *setup, size_t nsetup,
                      const report_run *runs, size_t n, char *err,
                      size_t errlen);

#endif
