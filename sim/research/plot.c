/*
 * Plots of a set of runs through gnuplot (see research.h), small multiples
 * with one panel per group (cluster, and queue when several):
 *   bars         per panel, horizontal bars by policy of utilization (the
 *                table's util%), queue time p50 and p95 and cost per
 *                job-hour (values of the metric table);
 *   queue_cdf    the CDF of queue time over completed jobs (jobs.csv);
 *   utilization  GPU allocation over time (timeline.csv) as hourly means
 *                (bins of a whole number of hours, at most UTIL_POINTS;
 *                runs shorter than a day: about 48 bins of whole minutes);
 *   cost         each run's cost split into allocated and idle.
 * The CDF and utilization panels draw at most MAX_LINES runs of the panel:
 * first-fit (mig-first-fit where first-fit did not run), the runs with the
 * least and the most mean queue time, and the best (least mean queue time)
 * of each policy family (packing: first-fit, best-fit, worst-fit, random;
 * FGD-paper scores: dot-product, gpu-clustering, gpu-packing, fgd; MIG:
 * mig-*; any other policy, defrag too, is a family of its own), in that
 * order of priority, drawn in run order. Each policy has one colour in
 * every plot (a fixed table for the built-in policies, a hash otherwise).
 *
 * The C side reduces each run's outputs to small whitespace-separated data
 * files, so that gnuplot never parses quoted CSV and a million-job run
 * still plots in a second (the allocation is a step function of time, so
 * the mean over a bin is exact; the CDF keeps at most CDF_POINTS order
 * statistics). The script, plots.gp, is written beside the data so that a
 * user can edit it and run `gnuplot plots.gp` in that directory again.
 */
#include "metrics.h"
#include "output.h"
#include "research.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define UTIL_POINTS 400
#define CDF_POINTS 1000
#define MAX_LINES 6
#define UTIL_SHORT_BINS 48

/* ---------------------------------------------------------- CSV records */

/* Reads one CSV record (quoted fields may span lines) into *buf. 1, 0 at
 * end of file, -1 out of memory. */
static int read_record(FILE *f, char **buf, size_t *cap) {
  size_t len = 0;
  int quoted = 0, got = 0, c;
  while ((c = getc(f)) != EOF) {
    got = 1;
    if (len + 2 > *cap) {
      size_t nc = *cap ? *cap * 2 : 256;
      char *nb = realloc(*buf, nc);
      if (!nb)
        return -1;
      *buf = nb;
      *cap = nc;
    }
    if (c == '"')
      quoted = !quoted;
    if (c == '\n' && !quoted)
      break;
    (*buf)[len++] = (char)c;
  }
  if (!got)
    return 0;
  if (len > 0 && (*buf)[len - 1] == '\r')
    len--;
  if (!*buf) {
    *buf = malloc(1);
    if (!*buf)
      return -1;
    *cap = 1;
  }
  (*buf)[len] = '\0';
  return 1;
}

/* Copies field number k (0-based) of the record into out, unquoted. 0, or
 * -1 when the record has fewer fields. */
static int csv_get(const char *rec, int k, char *out, size_t size) {
  int field = 0;
  size_t o = 0;
  const char *p = rec;
  for (;;) {
    int in_q = 0;
    o = 0;
    if (*p == '"') {
      in_q = 1;
      p++;
    }
    while (*p) {
      if (in_q) {
        if (*p == '"' && p[1] == '"') {
          if (field == k && o + 1 < size)
            out[o++] = '"';
          p += 2;
          continue;
        }
        if (*p == '"') {
          in_q = 0;
          p++;
          continue;
        }
      } else if (*p == ',') {
        break;
      }
      if (field == k && o + 1 < size)
        out[o++] = *p;
      p++;
    }
    if (field == k) {
      out[o] = '\0';
      return 0;
    }
    if (*p != ',')
      return -1;
    p++;
    field++;
  }
}

int research_csv_record(FILE *f, char **buf, size_t *cap) {
  return read_record(f, buf, cap);
}

int research_csv_field(const char *rec, int k, char *out, size_t size) {
  return csv_get(rec, k, out, size);
}

/* --------------------------------------------------------- data files */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* data/<label>.util from the run's timeline.csv: "hours alloc_ratio", the
 * time-weighted mean over bins of a whole number of hours (one hour, or
 * more so that there are at most UTIL_POINTS bins), each at its start; a
 * run shorter than a day gets bins of whole minutes instead, about
 * UTIL_SHORT_BINS of them. */
static int write_util(const char *plotdir, const plot_run *r, char *err,
                      size_t errlen) {
  char path[4608];
  snprintf(path, sizeof path, "%s/timeline.csv", r->dir);
  FILE *in = fopen(path, "r");
  if (!in) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  double *t = NULL, *v = NULL;
  size_t n = 0, cap = 0;
  char *rec = NULL;
  size_t rcap = 0;
  int rc = 0, first = 1;
  char a[64], b[64];
  while ((rc = read_record(in, &rec, &rcap)) == 1) {
    if (first) { /* header */
      first = 0;
      continue;
    }
    if (csv_get(rec, 0, a, sizeof a) || csv_get(rec, 2, b, sizeof b))
      continue;
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 1024;
      double *nt = realloc(t, nc * sizeof *t);
      if (!nt) {
        rc = -1;
        break;
      }
      t = nt;
      double *nv = realloc(v, nc * sizeof *v);
      if (!nv) {
        rc = -1;
        break;
      }
      v = nv;
      cap = nc;
    }
    t[n] = strtod(a, NULL) / 3600.0;
    v[n] = strtod(b, NULL);
    n++;
  }
  fclose(in);
  free(rec);
  out_file o = {0};
  snprintf(path, sizeof path, "%s/data/%s.util", plotdir, r->label);
  if (rc < 0) {
    snprintf(err, errlen, "%s: out of memory", path);
  } else if (out_open(&o, path, err, errlen) == 0) {
    fputs("# hours mean_alloc_ratio (time-weighted, per bin from here)\n",
          o.f);
    if (n < 2 || t[n - 1] <= t[0]) {
      for (size_t i = 0; i < n; i++)
        fprintf(o.f, "%.6f %.6f\n", t[i], v[i]);
    } else {
      /* Hours from a day on; shorter runs: about UTIL_SHORT_BINS bins of
       * whole minutes. */
      double t0, span, w;
      if (t[n - 1] - t[0] >= 24) {
        t0 = floor(t[0]);
        span = t[n - 1] - t0;
        w = ceil(span / UTIL_POINTS);
        if (w < 1)
          w = 1;
      } else {
        t0 = floor(t[0] * 60) / 60;
        span = t[n - 1] - t0;
        w = ceil(span * 60 / UTIL_SHORT_BINS) / 60;
        if (w < 1.0 / 60)
          w = 1.0 / 60;
      }
      int bins = (int)ceil(span / w);
      if (bins < 1)
        bins = 1;
      size_t i = 0;
      for (int bin = 0; bin < bins; bin++) {
        double lo = t0 + bin * w, hi = lo + w, area = 0, covered = 0;
        while (i + 1 < n && t[i + 1] <= lo)
          i++;
        for (size_t k = i; k + 1 < n && t[k] < hi; k++) {
          double s = t[k] > lo ? t[k] : lo;
          double e = t[k + 1] < hi ? t[k + 1] : hi;
          if (e > s) {
            area += v[k] * (e - s);
            covered += e - s;
          }
        }
        /* The mean over the part of the bin the timeline covers (the
         * first and last bins may be partial). */
        fprintf(o.f, "%.6f %.6f\n", lo, covered > 0 ? area / covered : 0.0);
      }
      fprintf(o.f, "%.6f %.6f\n", t0 + bins * w, v[n - 1]);
    }
    rc = out_commit(&o, err, errlen);
  } else {
    rc = -1;
  }
  free(t);
  free(v);
  return rc;
}

/* data/<label>.qcdf from the run's jobs.csv: "queue_time_s fraction" over
 * completed jobs. Sets *count to the number of completed jobs and *max to
 * the largest queue time. */
static int write_qcdf(const char *plotdir, const plot_run *r, size_t *count,
                      double *max, char *err, size_t errlen) {
  char path[4608];
  snprintf(path, sizeof path, "%s/jobs.csv", r->dir);
  FILE *in = fopen(path, "r");
  if (!in) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  double *q = NULL;
  size_t n = 0, cap = 0;
  char *rec = NULL;
  size_t rcap = 0;
  int rc, first = 1;
  char qt[64], st[64];
  while ((rc = read_record(in, &rec, &rcap)) == 1) {
    if (first) {
      first = 0;
      continue;
    }
    if (csv_get(rec, 7, qt, sizeof qt) || csv_get(rec, 9, st, sizeof st) ||
        (strcmp(st, "completed") != 0 && strcmp(st, "killed") != 0))
      continue;
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 1024;
      double *nq = realloc(q, nc * sizeof *q);
      if (!nq) {
        rc = -1;
        break;
      }
      q = nq;
      cap = nc;
    }
    q[n++] = strtod(qt, NULL);
  }
  fclose(in);
  free(rec);
  snprintf(path, sizeof path, "%s/data/%s.qcdf", plotdir, r->label);
  if (rc < 0) {
    free(q);
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  if (n > 0)
    qsort(q, n, sizeof *q, cmp_double);
  *count = n;
  *max = n ? q[n - 1] : 0;
  out_file o;
  if (out_open(&o, path, err, errlen)) {
    free(q);
    return -1;
  }
  fputs("# queue_time_s fraction_of_completed_jobs\n", o.f);
  size_t points = n < CDF_POINTS ? n : CDF_POINTS;
  for (size_t k = 0; k < points; k++) {
    /* The (k+1)/points quantile's order statistic. */
    size_t idx = ((k + 1) * n + points - 1) / points - 1;
    if (idx >= n)
      idx = n - 1;
    fprintf(o.f, "%.3f %.6f\n", q[idx], (double)(idx + 1) / (double)n);
  }
  free(q);
  return out_commit(&o, err, errlen);
}

static int write_cost(const char *plotdir, const plot_run *runs, size_t n,
                      char *err, size_t errlen) {
  char path[4608];
  snprintf(path, sizeof path, "%s/data/cost.dat", plotdir);
  out_file o;
  if (out_open(&o, path, err, errlen))
    return -1;
  fputs("# run allocated_usd idle_usd\n", o.f);
  for (size_t i = 0; i < n; i++)
    fprintf(o.f, "%s %.4f %.4f\n", runs[i].label,
            runs[i].cost_total - runs[i].cost_idle, runs[i].cost_idle);
  return out_commit(&o, err, errlen);
}

/* ------------------------------------------------- colours, selection */

static const struct {
  const char *policy;
  unsigned rgb;
} policy_colours[] = {
    {"first-fit", 0x000000},      {"best-fit", 0x1f77b4},
    {"worst-fit", 0x8c564b},      {"random", 0x7f7f7f},
    {"dot-product", 0xbcbd22},    {"gpu-clustering", 0x17becf},
    {"gpu-packing", 0x9467bd},    {"fgd", 0x2ca02c},
    {"defrag", 0xd62728},         {"mig-first-fit", 0x555555},
    {"mig-best-fit", 0xff7f0e},   {"mig-aware", 0xe377c2},
};
static const unsigned other_colours[] = {0x393b79, 0x637939, 0x8c6d31,
                                         0x843c39, 0x7b4173, 0x3182bd};

static unsigned policy_colour(const char *policy) {
  size_t nc = sizeof policy_colours / sizeof policy_colours[0];
  for (size_t i = 0; i < nc; i++)
    if (strcmp(policy, policy_colours[i].policy) == 0)
      return policy_colours[i].rgb;
  unsigned long h = 5381;
  for (const char *p = policy; *p; p++)
    h = h * 33 + (unsigned char)*p;
  return other_colours[h % (sizeof other_colours / sizeof other_colours[0])];
}

static const char *run_policy(const plot_run *r) {
  return r->policy ? r->policy : r->label;
}

/* A policy's family (see the top of the file); unknown policies are their
 * own family, named by themselves. */
static const char *policy_family(const char *policy) {
  static const char *const packing[] = {"first-fit", "best-fit", "worst-fit",
                                        "random"};
  static const char *const fgd[] = {"dot-product", "gpu-clustering",
                                    "gpu-packing", "fgd"};
  for (int i = 0; i < 4; i++) {
    if (strcmp(policy, packing[i]) == 0)
      return "packing";
    if (strcmp(policy, fgd[i]) == 0)
      return "fgd-paper";
  }
  if (strncmp(policy, "mig-", 4) == 0)
    return "mig";
  return policy;
}

/* The runs of panel g: idx gets their indices in run order; returns the
 * count. */
static size_t panel_runs(const plot_run *runs, size_t n, const char *g,
                         size_t *idx) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const char *rg = runs[i].group ? runs[i].group : "";
    if (strcmp(rg, g) == 0)
      idx[k++] = i;
  }
  return k;
}

static double queue_mean(const plot_run *r) {
  return r->m && r->m->has[METRIC_QUEUE_MEAN] ? r->m->num[METRIC_QUEUE_MEAN]
                                              : 0;
}

static void pick(int *sel, size_t i) { sel[i] = 1; }

static size_t count_sel(const int *sel, const size_t *idx, size_t k) {
  size_t c = 0;
  for (size_t j = 0; j < k; j++)
    c += sel[idx[j]] != 0;
  return c;
}

/* Marks in sel the lines drawn for the panel of runs idx[0..k). */
static void select_lines(const plot_run *runs, const size_t *idx, size_t k,
                         int *sel) {
  int have_m = 1;
  for (size_t j = 0; j < k; j++)
    if (!runs[idx[j]].m)
      have_m = 0;
  if (!have_m || k <= MAX_LINES) {
    for (size_t j = 0; j < k && j < MAX_LINES; j++)
      pick(sel, idx[j]);
    return;
  }
  size_t cand[4 + 64], nc = 0;
  /* first-fit, else mig-first-fit */
  for (int pass = 0; pass < 2 && nc == 0; pass++)
    for (size_t j = 0; j < k; j++)
      if (strcmp(run_policy(&runs[idx[j]]),
                 pass ? "mig-first-fit" : "first-fit") == 0) {
        cand[nc++] = idx[j];
        break;
      }
  size_t best = idx[0], worst = idx[0];
  for (size_t j = 1; j < k; j++) {
    if (queue_mean(&runs[idx[j]]) < queue_mean(&runs[best]))
      best = idx[j];
    if (queue_mean(&runs[idx[j]]) > queue_mean(&runs[worst]))
      worst = idx[j];
  }
  cand[nc++] = best;
  cand[nc++] = worst;
  /* each family's best, families in run order of first appearance */
  for (size_t j = 0; j < k && nc < sizeof cand / sizeof cand[0]; j++) {
    const char *fam = policy_family(run_policy(&runs[idx[j]]));
    int seen = 0;
    for (size_t q = 0; q < j; q++)
      if (strcmp(policy_family(run_policy(&runs[idx[q]])), fam) == 0)
        seen = 1;
    if (seen)
      continue;
    size_t fb = idx[j];
    for (size_t q = j + 1; q < k; q++)
      if (strcmp(policy_family(run_policy(&runs[idx[q]])), fam) == 0 &&
          queue_mean(&runs[idx[q]]) < queue_mean(&runs[fb]))
        fb = idx[q];
    cand[nc++] = fb;
  }
  for (size_t c = 0; c < nc && count_sel(sel, idx, k) < MAX_LINES; c++)
    pick(sel, cand[c]);
}

/* data/bars_<p>.dat: one row per run of panel p, in run order. */
static int write_bars(const char *plotdir, int p, const plot_run *runs,
                      const size_t *idx, size_t k, double *mx, char *err,
                      size_t errlen) {
  char path[4608];
  snprintf(path, sizeof path, "%s/data/bars_%d.dat", plotdir, p);
  out_file o;
  if (out_open(&o, path, err, errlen))
    return -1;
  fputs("# policy colour util_pct queue_p50_s queue_p95_s "
        "usd_per_job_hour allocated_usd idle_usd\n",
        o.f);
  static const metric_id ids[4] = {METRIC_ALLOC_RATIO, METRIC_QUEUE_P50,
                                   METRIC_QUEUE_P95,
                                   METRIC_COST_PER_JOB_HOUR};
  for (size_t j = 0; j < k; j++) {
    const plot_run *r = &runs[idx[j]];
    fprintf(o.f, "\"%s\" %u", run_policy(r), policy_colour(run_policy(r)));
    for (int c = 0; c < 4; c++) {
      double v = r->m && r->m->has[ids[c]] ? r->m->num[ids[c]] : 0;
      if (c == 0)
        v *= 100;
      if (v > mx[c])
        mx[c] = v;
      fprintf(o.f, " %.4f", v);
    }
    double alloc = r->cost_total - r->cost_idle;
    if (r->cost_total > mx[4])
      mx[4] = r->cost_total;
    fprintf(o.f, " %.4f %.4f\n", alloc, r->cost_idle);
  }
  return out_commit(&o, err, errlen);
}

/* ------------------------------------------------------------- script */

/* A gnuplot double-quoted string. */
static void gp_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

typedef struct panel {
  const char *name;
  size_t *idx; /* its runs */
  size_t k;
  double mx[5]; /* util, p50, p95, $/job-hour, cost total */
} panel;

static void gp_terminal(FILE *f, int w, int h) {
  fprintf(f,
          "  if (fmt eq \"png\") {\n"
          "    if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
          "      set terminal pngcairo size %d,%d noenhanced font \",10\"\n"
          "    } else {\n"
          "      set terminal png size %d,%d noenhanced\n"
          "    }\n"
          "  } else {\n"
          "    set terminal svg size %d,%d noenhanced font \",10\"\n"
          "  }\n",
          w, h, w, h, w, h);
}

static int write_script(const char *plotdir, const plot_run *runs,
                        const panel *pn, int np, const int *sel,
                        const int *has_cdf, double qmax, char *err,
                        size_t errlen) {
  char path[4608];
  snprintf(path, sizeof path, "%s/plots.gp", plotdir);
  out_file o;
  if (out_open(&o, path, err, errlen))
    return -1;
  FILE *f = o.f;
  fputs("# Written by schedsim; run again with 'gnuplot plots.gp' in this "
        "directory.\n# Makes bars, utilization, queue_cdf and cost as PNG "
        "and SVG from data/:\n# one panel per cluster (and queue), one "
        "colour per policy.\n",
        f);
  /* Log axis from 1 s: shorter waits (most are 0) are drawn at 1 s. */
  double hi = qmax * 1.5 > 10 ? qmax * 1.5 : 10;
  fprintf(f, "qmax = %.3f\n", hi);
  int cols = np > 1 ? 2 : 1, rows = (np + cols - 1) / cols;
  static const char *const bar_title[4] = {
      "utilization (% GPU allocated)", "queue time p50 (s)",
      "queue time p95 (s)", "cost per job-hour (USD)"};
  /* The group names the row (the first column's title); each panel's
   * metric is its x label. */
  static const char *const bar_fmt[4] = {"%.1f", "%.0f", "%.0f", "%.2f"};
  fputs("set grid\nset style fill solid 0.85 border -1\n"
        "do for [fmt in \"png svg\"] {\n",
        f);
  /* ---- bars: rows = panels, columns = the four metrics */
  size_t kmax = 1;
  for (int p = 0; p < np; p++)
    if (pn[p].k > kmax)
      kmax = pn[p].k;
  gp_terminal(f, 1500, 90 + np * (int)(85 + 22 * kmax));
  fputs("  set output \"bars.\".fmt\n"
        "  set multiplot layout ",
        f);
  fprintf(f, "%d,4 title \"By policy, one row per cluster (higher utilization "
             "and lower queue time and cost are better)\"\n",
          np);
  fputs("  unset key\n  unset logscale x\n  set xtics norotate\n"
        "  set grid xtics noytics\n",
        f);
  for (int p = 0; p < np; p++)
    for (int c = 0; c < 4; c++) {
      double top = pn[p].mx[c] > 0 ? pn[p].mx[c] * 1.3 : 1;
      fprintf(f, "  set title ");
      gp_str(f, c == 0 ? pn[p].name : " "); /* " ": the same space */
      fputs("\n  set xlabel ", f);
      gp_str(f, bar_title[c]);
      fprintf(f, "\n  set xrange [0:%.4f]\n  set yrange [%.1f:-0.6]\n", top,
              (double)pn[p].k - 0.4);
      fprintf(f, "  set lmargin %d\n  set format x \"%s\"\n", c == 0 ? 18 : 3,
              (c == 1 || c == 2) && pn[p].mx[c] >= 10000 ? "%.0s%c" : "%g");
      fprintf(f, "  plot \"data/bars_%d.dat\" using ($%d/2):0:(0):($%d):"
                 "($0-0.38):($0+0.38):2%s with boxxyerror lc rgb variable, "
                 "\"\" using %d:0:(sprintf(\" %s\", $%d)) with labels left "
                 "font \",8\"\n",
              p + 1, c + 3, c + 3, c == 0 ? ":ytic(1)" : "", c + 3,
              bar_fmt[c], c + 3);
      if (c == 0)
        fputs("  set ytics\n", f);
      else
        fputs("", f);
      if (c == 0)
        fputs("  set format y \"\"\n", f);
    }
  fputs("  unset multiplot\n  set xlabel \"\"\n"
        "  set format y \"%g\"\n"
        "  set format x \"%g\"\n"
        "  set lmargin -1\n"
        "  set grid xtics ytics\n",
        f);
  /* ---- queue-time CDF and utilization: a panel per group */
  for (int which = 0; which < 2; which++) {
    gp_terminal(f, 1400, 60 + rows * 380);
    if (which == 0)
      fputs("  set output \"queue_cdf.\".fmt\n"
            "  set multiplot layout ",
            f);
    else
      fputs("  set output \"utilization.\".fmt\n"
            "  set multiplot layout ",
            f);
    fprintf(f, "%d,%d title %s\n", rows, cols,
            which == 0 ? "\"Queue time CDF over completed jobs (first-fit, "
                         "best, worst and each family's best)\""
                       : "\"GPU allocation over time, hourly means (runs "
                         "shorter than a day: about 48 bins of whole "
                         "minutes); the same runs\"");
    if (which == 0)
      fputs("  set key right bottom noenhanced font \",9\"\n"
            "  set logscale x\n  set xrange [1:qmax]\n  set yrange [0:1]\n"
            "  set xlabel \"queue time (s, log scale; waits under 1 s at "
            "1 s)\"\n  set ylabel \"fraction of completed jobs\"\n",
            f);
    else
      fputs("  set key right top noenhanced font \",9\"\n"
            "  unset logscale x\n  set xrange [*:*]\n  set yrange [0:100]\n"
            "  set xlabel \"simulated time (h)\"\n"
            "  set ylabel \"GPU allocated (% of the cluster)\"\n",
            f);
    for (int p = 0; p < np; p++) {
      fputs("  set title ", f);
      gp_str(f, pn[p].name);
      fputs("\n  plot ", f);
      int any = 0;
      for (size_t j = 0; j < pn[p].k; j++) {
        size_t i = pn[p].idx[j];
        if (!sel[i] || (which == 0 && !has_cdf[i]))
          continue;
        fprintf(f, "%s\"data/%s.%s\" using %s with steps lw 2 lc rgb "
                   "\"#%06x\" title ",
                any ? ", \\\n    " : "", runs[i].label,
                which == 0 ? "qcdf" : "util",
                which == 0 ? "($1 < 1 ? 1 : $1):2" : "1:(100*$2)",
                policy_colour(run_policy(&runs[i])));
        gp_str(f, run_policy(&runs[i]));
        any = 1;
      }
      if (!any)
        fputs("1/0 title \"no completed jobs\"", f);
      fputc('\n', f);
    }
    fputs("  unset multiplot\n  unset logscale x\n"
          "  set xlabel \"\"\n  set ylabel \"\"\n",
          f);
  }
  /* ---- cost: allocated (policy colour) and idle (grey) per run */
  gp_terminal(f, 1400, 60 + rows * (int)(70 + 24 * kmax));
  fprintf(f, "  set output \"cost.\".fmt\n  set multiplot layout %d,%d "
             "title \"Cost per run (USD): allocated GPU time (colour) and "
             "idle (grey)\"\n  unset key\n  set grid xtics noytics\n",
          rows, cols);
  for (int p = 0; p < np; p++) {
    double top = pn[p].mx[4] > 0 ? pn[p].mx[4] * 1.25 : 1;
    fputs("  set title ", f);
    gp_str(f, pn[p].name);
    fprintf(f, "\n  set xrange [0:%.4f]\n  set yrange [%.1f:-0.6]\n", top,
            (double)pn[p].k - 0.4);
    fprintf(f, "  plot \"data/bars_%d.dat\" using ($7/2):0:(0):($7):"
               "($0-0.38):($0+0.38):2:ytic(1) with boxxyerror lc rgb "
               "variable, \"\" using ($7+$8/2):0:($7):($7+$8):($0-0.38):"
               "($0+0.38) with boxxyerror lc rgb \"#cccccc\", \"\" using "
               "($7+$8):0:(sprintf(\" %%.0f\", $7+$8)) with labels left "
               "font \",8\"\n",
            p + 1);
  }
  fputs("  unset multiplot\n  set output\n}\n", f);
  return out_commit(&o, err, errlen);
}

/* ------------------------------------------------------------ gnuplot */

static int have_gnuplot(void) {
  const char *path = getenv("PATH");
  if (!path)
    return 0;
  char dir[4096];
  while (*path) {
    size_t len = strcspn(path, ":");
    snprintf(dir, sizeof dir, "%.*s/gnuplot", (int)len, len ? path : ".");
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISREG(st.st_mode) && access(dir, X_OK) == 0)
      return 1;
    path += len;
    if (*path == ':')
      path++;
  }
  return 0;
}

static int run_gnuplot_script(const char *plotdir, const char *script,
                              const char *const *outs, int nouts, char *err,
                              size_t errlen) {
  char log[4608];
  snprintf(log, sizeof log, "%s/gnuplot.log", plotdir);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, errlen, "cannot run gnuplot: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    FILE *lf = fopen(log, "w");
    if (!lf || chdir(plotdir) != 0)
      _exit(126);
    dup2(fileno(lf), 1);
    dup2(fileno(lf), 2);
    execlp("gnuplot", "gnuplot", script, (char *)NULL);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) {
      snprintf(err, errlen, "waitpid: %s", strerror(errno));
      return -1;
    }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    snprintf(err, errlen, "gnuplot failed (status %d): see %s", st, log);
    return -1;
  }
  for (int i = 0; i < nouts; i++)
    for (int k = 0; k < 2; k++) {
      char p[4608];
      snprintf(p, sizeof p, "%s/%s.%s", plotdir, outs[i], k ? "svg" : "png");
      struct stat sb;
      if (stat(p, &sb) != 0 || sb.st_size == 0) {
        snprintf(err, errlen, "gnuplot did not write %s: see %s", p, log);
        return -1;
      }
    }
  return 0;
}

static int run_gnuplot(const char *plotdir, char *err, size_t errlen) {
  static const char *const outs[] = {"bars", "utilization", "queue_cdf",
                                     "cost"};
  return run_gnuplot_script(plotdir, "plots.gp", outs, 4, err, errlen);
}

void plot_gp_str(FILE *f, const char *s) { gp_str(f, s); }

void plot_gp_terminal(FILE *f, int w, int h) { gp_terminal(f, w, h); }

int plot_run_script(const char *plotdir, const char *script,
                    const char *const *outs, int nouts, char *err,
                    size_t errlen) {
  if (!have_gnuplot()) {
    fprintf(stderr,
            "warning: gnuplot not found: plots skipped (data and script are "
            "in %s/; install gnuplot and run 'gnuplot %s' there)\n",
            plotdir, script);
    return 1;
  }
  return run_gnuplot_script(plotdir, script, outs, nouts, err, errlen);
}

int plot_runs(const char *outdir, const plot_run *runs, size_t n, char *err,
              size_t errlen) {
  char plotdir[4096], datadir[4200];
  snprintf(plotdir, sizeof plotdir, "%s/plots", outdir);
  snprintf(datadir, sizeof datadir, "%s/data", plotdir);
  if (out_mkdir(datadir, err, errlen))
    return -1;
  size_t m = n ? n : 1;
  int *has_cdf = calloc(m, sizeof *has_cdf);
  int *sel = calloc(m, sizeof *sel);
  size_t *idx = calloc(m, sizeof *idx);
  panel *pn = calloc(m, sizeof *pn);
  if (!has_cdf || !sel || !idx || !pn) {
    free(has_cdf);
    free(sel);
    free(idx);
    free(pn);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  /* Panels in order of their first run; idx holds each panel's runs in
   * one stretch. */
  int np = 0;
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    const char *g = runs[i].group ? runs[i].group : "";
    int seen = 0;
    for (int p = 0; p < np; p++)
      if (strcmp(pn[p].name, g) == 0)
        seen = 1;
    if (seen)
      continue;
    pn[np].name = g;
    pn[np].idx = idx + used;
    pn[np].k = panel_runs(runs, n, g, idx + used);
    used += pn[np].k;
    np++;
  }
  double qmax = 0;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    size_t cnt = 0;
    double mx = 0;
    rc = write_util(plotdir, &runs[i], err, errlen);
    if (rc == 0)
      rc = write_qcdf(plotdir, &runs[i], &cnt, &mx, err, errlen);
    has_cdf[i] = cnt > 0;
    if (mx > qmax)
      qmax = mx;
  }
  for (int p = 0; p < np && rc == 0; p++) {
    select_lines(runs, pn[p].idx, pn[p].k, sel);
    rc = write_bars(plotdir, p + 1, runs, pn[p].idx, pn[p].k, pn[p].mx, err,
                    errlen);
  }
  if (rc == 0)
    rc = write_cost(plotdir, runs, n, err, errlen);
  if (rc == 0)
    rc = write_script(plotdir, runs, pn, np, sel, has_cdf, qmax, err,
                      errlen);
  free(has_cdf);
  free(sel);
  free(idx);
  free(pn);
  if (rc)
    return -1;
  if (!have_gnuplot()) {
    fprintf(stderr,
            "warning: gnuplot not found: plots skipped (data and script are "
            "in %s/; install gnuplot and run 'gnuplot plots.gp' there)\n",
            plotdir);
    return 1;
  }
  return run_gnuplot(plotdir, err, errlen);
}
