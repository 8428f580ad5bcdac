/*
 * Plots of a set of runs through gnuplot (see research.h): GPU allocation
 * over time (from each run's timeline.csv), the queue-time CDF (from
 * jobs.csv) and the cost of each run split into allocated and idle.
 *
 * The C side reduces each run's outputs to small whitespace-separated data
 * files, so that gnuplot never parses quoted CSV and a million-job run
 * still plots in a second: a timeline of more than UTIL_POINTS rows becomes
 * UTIL_POINTS time-weighted means over equal time bins (the allocation is
 * a step function of time, so the mean over a bin is exact); the CDF keeps
 * at most CDF_POINTS order statistics. The script, plots.gp, is written
 * beside the data so that a user can edit it and run `gnuplot plots.gp`
 * in that directory again.
 */
#include "output.h"
#include "research.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define UTIL_POINTS 400
#define CDF_POINTS 1000

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

/* --------------------------------------------------------- data files */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* data/<label>.util from the run's timeline.csv: "hours alloc_ratio". */
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
    fputs("# hours alloc_ratio\n", o.f);
    if (n <= UTIL_POINTS || t[n - 1] <= t[0]) {
      for (size_t i = 0; i < n; i++)
        fprintf(o.f, "%.6f %.6f\n", t[i], v[i]);
    } else {
      /* Time-weighted mean of the step function over each bin. */
      double t0 = t[0], w = (t[n - 1] - t0) / UTIL_POINTS;
      size_t i = 0;
      for (int bin = 0; bin < UTIL_POINTS; bin++) {
        double lo = t0 + bin * w, hi = lo + w, area = 0;
        while (i + 1 < n && t[i + 1] <= lo)
          i++;
        for (size_t k = i; k + 1 < n && t[k] < hi; k++) {
          double s = t[k] > lo ? t[k] : lo;
          double e = t[k + 1] < hi ? t[k + 1] : hi;
          if (e > s)
            area += v[k] * (e - s);
        }
        fprintf(o.f, "%.6f %.6f\n", lo, area / w);
      }
      fprintf(o.f, "%.6f %.6f\n", t[n - 1], v[n - 1]);
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

/* ------------------------------------------------------------- script */

static int write_script(const char *plotdir, const plot_run *runs, size_t n,
                        const int *has_cdf, double qmax, char *err,
                        size_t errlen) {
  char path[4608];
  snprintf(path, sizeof path, "%s/plots.gp", plotdir);
  out_file o;
  if (out_open(&o, path, err, errlen))
    return -1;
  FILE *f = o.f;
  fputs("# Written by schedsim; run again with 'gnuplot plots.gp' in this "
        "directory.\n# Makes utilization, queue_cdf and cost as PNG and "
        "SVG from data/.\nruns = \"",
        f);
  for (size_t i = 0; i < n; i++)
    fprintf(f, "%s%s", i ? " " : "", runs[i].label);
  fputs("\"\ncdfruns = \"", f);
  int any_cdf = 0;
  for (size_t i = 0; i < n; i++)
    if (has_cdf[i]) {
      fprintf(f, "%s%s", any_cdf ? " " : "", runs[i].label);
      any_cdf = 1;
    }
  /* Log axis from 1 s: shorter waits (most are 0) are drawn at 1 s. */
  double hi = qmax * 1.5 > 10 ? qmax * 1.5 : 10;
  fprintf(f, "\"\nqmax = %.3f\n", hi);
  fputs("set grid\n"
        "set key outside right top noenhanced\n"
        "do for [fmt in \"png svg\"] {\n"
        "  if (fmt eq \"png\") {\n"
        "    if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
        "      set terminal pngcairo size 1100,600 noenhanced\n"
        "    } else {\n"
        "      set terminal png size 1100,600 noenhanced\n"
        "    }\n"
        "  } else {\n"
        "    set terminal svg size 1100,600 noenhanced\n"
        "  }\n"
        "  set output \"utilization.\".fmt\n"
        "  set title \"GPU allocation over time\" noenhanced\n"
        "  set xlabel \"simulated time (h)\"\n"
        "  set ylabel \"allocated GPU (% of the cluster)\"\n"
        "  unset logscale x\n"
        "  set style data lines\n"
        "  set xtics norotate\n"
        "  set xrange [*:*]\n"
        "  set yrange [0:100]\n"
        "  plot for [i=1:words(runs)] \"data/\".word(runs,i).\".util\" using "
        "1:(100*$2) with steps lw 1.5 lc i dt int((i-1)/8)+1 "
        "title word(runs,i)\n"
        "  set output \"queue_cdf.\".fmt\n"
        "  set title \"Queue time CDF (completed jobs)\"\n"
        "  set xlabel \"queue time (s, log scale; waits under 1 s at 1 s)\"\n"
        "  set ylabel \"fraction of completed jobs\"\n"
        "  set logscale x\n"
        "  set xrange [1:qmax]\n"
        "  set yrange [0:1]\n",
        f);
  if (any_cdf)
    fputs("  plot for [i=1:words(cdfruns)] \"data/\".word(cdfruns,i)."
          "\".qcdf\" using ($1 < 1 ? 1 : $1):2 with steps lw 1.5 lc i "
          "dt int((i-1)/8)+1 title word(cdfruns,i)\n",
          f);
  else
    fputs("  set label 1 \"no completed jobs\" at graph 0.5,0.5 center\n"
          "  plot 1/0 notitle\n"
          "  unset label 1\n",
          f);
  fputs("  set output \"cost.\".fmt\n"
        "  set title \"Cost per run (USD): allocated and idle GPU time\"\n"
        "  set xlabel \"\"\n"
        "  set ylabel \"USD\"\n"
        "  unset logscale x\n"
        "  set xrange [*:*]\n"
        "  set yrange [0:*]\n"
        "  set style data histograms\n"
        "  set style histogram rowstacked\n"
        "  set style fill solid 0.8 border -1\n"
        "  set boxwidth 0.7\n"
        "  set xtics rotate by -30\n"
        "  plot \"data/cost.dat\" using 2:xtic(1) title \"allocated\", "
        "\"\" using 3 title \"idle\"\n"
        "  set output\n"
        "}\n",
        f);
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

static int run_gnuplot(const char *plotdir, char *err, size_t errlen) {
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
    execlp("gnuplot", "gnuplot", "plots.gp", (char *)NULL);
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
  static const char *const outs[] = {"utilization", "queue_cdf", "cost"};
  for (int i = 0; i < 3; i++)
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

int plot_runs(const char *outdir, const plot_run *runs, size_t n, char *err,
              size_t errlen) {
  char plotdir[4096], datadir[4200];
  snprintf(plotdir, sizeof plotdir, "%s/plots", outdir);
  snprintf(datadir, sizeof datadir, "%s/data", plotdir);
  if (out_mkdir(datadir, err, errlen))
    return -1;
  int *has_cdf = calloc(n ? n : 1, sizeof *has_cdf);
  if (!has_cdf) {
    snprintf(err, errlen, "out of memory");
    return -1;
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
  if (rc == 0)
    rc = write_cost(plotdir, runs, n, err, errlen);
  if (rc == 0)
    rc = write_script(plotdir, runs, n, has_cdf, qmax, err, errlen);
  free(has_cdf);
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
