/*
 * The answer of a set of runs and report.html (see report.h).
 *
 * The answer picks, per metric, the best run among those that completed
 * the most jobs (a run that left jobs unstarted would look fast and cheap
 * by not running them), ties to the earliest run, and compares it with
 * first-fit of its own group (same cluster and queue): on a cluster whose
 * GPUs are all MIG that is mig-first-fit, first-fit's MIG counterpart.
 * Every value comes from the metric table's rows (run_metrics), the same
 * values compare.csv holds.
 */
#include "report.h"
#include "output.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int report_policy_applies(const char *policy, const sim_cluster *sc) {
  int mig_policy = strncmp(policy, "mig-", 4) == 0;
  if (sc->mig_gpus == 0)
    return !mig_policy;
  if (sc->plain_gpus == 0)
    return mig_policy;
  return 1;
}

/* ------------------------------------------------------------- answer */

typedef struct answer_metric {
  metric_id id;
  int higher_better;
  const char *what;  /* "useful utilization" */
  const char *how;   /* "is highest" */
} answer_metric;

static const answer_metric answer_metrics[] = {
    {METRIC_USED_RATIO, 1, "Useful utilization (the GPU share running jobs "
                           "asked for)", "is highest"},
    {METRIC_QUEUE_MEAN, 0, "Mean queue time", "is lowest"},
    {METRIC_COST_PER_JOB_HOUR, 0, "Cost per job-hour", "is lowest"},
    {METRIC_COST_PER_WORK_HOUR, 0, "Cost per unit of work (USD per reference "
                                   "GPU-hour done)", "is lowest"},
};

/* The value as the sentence shows it. */
static void show(char *out, size_t size, metric_id id, double v) {
  if (id == METRIC_USED_RATIO)
    snprintf(out, size, "%.1f%%", 100 * v);
  else if (id == METRIC_COST_PER_JOB_HOUR || id == METRIC_COST_PER_WORK_HOUR)
    snprintf(out, size, "$%.3f", v);
  else
    snprintf(out, size, "%.0f s", v);
}

/* The run of policy pol in group g, or -1. */
static long find_run(const report_run *runs, size_t n, const char *g,
                     const char *pol) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(runs[i].group, g) == 0 && strcmp(runs[i].policy, pol) == 0)
      return (long)i;
  return -1;
}

/* One sentence for metric a; 0, or -1 when no run has the metric. */
static int answer_one(FILE *f, const answer_metric *a, const report_run *runs,
                      size_t n, double most_completed) {
  long best = -1;
  for (size_t i = 0; i < n; i++) {
    const run_metrics *m = runs[i].m;
    if (!m->has[a->id] || !m->has[METRIC_COMPLETED] ||
        m->num[METRIC_COMPLETED] < most_completed)
      continue;
    double v = m->num[a->id];
    if (best < 0 || (a->higher_better ? v > runs[best].m->num[a->id]
                                      : v < runs[best].m->num[a->id]))
      best = (long)i;
  }
  if (best < 0)
    return -1;
  const report_run *b = &runs[best];
  double bv = b->m->num[a->id];
  char bs[64], fs[64];
  show(bs, sizeof bs, a->id, bv);
  fprintf(f, "%s %s with %s on %s: %s", a->what, a->how, b->policy, b->group,
          bs);
  long ff = find_run(runs, n, b->group, "first-fit");
  if (ff < 0)
    ff = find_run(runs, n, b->group, "mig-first-fit");
  if (ff == best) {
    fprintf(f, " (%s itself).", b->policy);
    return 0;
  }
  if (ff < 0 || !runs[ff].m->has[a->id]) {
    fprintf(f, ".");
    return 0;
  }
  double fv = runs[ff].m->num[a->id];
  show(fs, sizeof fs, a->id, fv);
  fprintf(f, "; %s there: %s", runs[ff].policy, fs);
  if (a->id == METRIC_USED_RATIO)
    fprintf(f, ", %+.1f points.", 100 * (bv - fv));
  else if (fv > 0 && bv != fv)
    fprintf(f, ", %.0f%% %s.", 100 * fabs(fv - bv) / fv,
            bv < fv ? "less" : "more");
  else
    fprintf(f, ", the same.");
  return 0;
}

void report_answer(FILE *f, const report_run *runs, size_t n) {
  double most = 0;
  for (size_t i = 0; i < n; i++)
    if (runs[i].m->has[METRIC_COMPLETED] &&
        runs[i].m->num[METRIC_COMPLETED] > most)
      most = runs[i].m->num[METRIC_COMPLETED];
  for (size_t k = 0; k < sizeof answer_metrics / sizeof answer_metrics[0];
       k++)
    if (answer_one(f, &answer_metrics[k], runs, n, most) == 0)
      fputc('\n', f);
}

/* --------------------------------------------------------- report.html */

static void html_text(FILE *f, const char *s) {
  for (; *s; s++)
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*s, f);
    }
}

/* A relative link: percent-encodes what is not safe in a URL path. */
static void html_href(FILE *f, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') || strchr("-_.~/", c))
      fputc(c, f);
    else
      fprintf(f, "%%%02X", c);
  }
}

/* The compare-table rows of the metric table, in table order. */
static int table_ids(metric_id *out) {
  int n = 0;
  for (int i = 0; i < METRIC_COUNT; i++) {
    int o = metric_table[i].tab.order;
    if (o <= 0)
      continue;
    int k = n++;
    for (; k > 0 && metric_table[out[k - 1]].tab.order > o; k--)
      out[k] = out[k - 1];
    out[k] = (metric_id)i;
  }
  return n;
}

static double xf(metric_xf x, double v) {
  return x == X_PERCENT ? 100 * v : x == X_PER_1000 ? v / 1000 : v;
}

/* Copies OUTDIR/plots/NAME.svg into f without its XML prolog; 0 when
 * there is no such file. */
static int inline_svg(FILE *f, const char *outdir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/plots/%s.svg", outdir, name);
  FILE *in = fopen(path, "rb");
  if (!in)
    return 0;
  char *buf = NULL;
  size_t len = 0, cap = 0, got;
  char chunk[8192];
  while ((got = fread(chunk, 1, sizeof chunk, in)) > 0) {
    if (len + got + 1 > cap) {
      size_t nc = cap ? cap * 2 : 65536;
      while (nc < len + got + 1)
        nc *= 2;
      char *nb = realloc(buf, nc);
      if (!nb) {
        free(buf);
        fclose(in);
        return -1;
      }
      buf = nb;
      cap = nc;
    }
    memcpy(buf + len, chunk, got);
    len += got;
  }
  fclose(in);
  if (!buf)
    return 0;
  buf[len] = 0;
  const char *svg = strstr(buf, "<svg");
  if (svg) {
    fprintf(f, "<figure id=\"plot-%s\">\n", name);
    fputs(svg, f);
    fprintf(f, "\n<figcaption>%s (<a href=\"plots/%s.svg\">SVG</a>, "
               "<a href=\"plots/%s.png\">PNG</a>)</figcaption></figure>\n",
            name, name, name);
  }
  free(buf);
  return svg ? 1 : 0;
}

int report_write_html(const char *outdir, const char *title,
                      const char *const *setup, size_t nsetup,
                      const report_run *runs, size_t n, char *err,
                      size_t errlen) {
  char path[4096];
  snprintf(path, sizeof path, "%s/report.html", outdir);
  out_file o;
  if (out_open(&o, path, err, errlen))
    return -1;
  FILE *f = o.f;
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<title>", f);
  html_text(f, title);
  fputs("</title>\n<style>\n"
        "body{font-family:sans-serif;margin:1.5em;max-width:90em}\n"
        "table{border-collapse:collapse;font-size:90%}\n"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\n"
        "td:first-child,th:first-child{text-align:left}\n"
        "figure{margin:1em 0}svg{max-width:100%;height:auto}\n"
        ".answer{font-size:110%;background:#f3f6fa;padding:.6em;"
        "white-space:pre-line}\n"
        "</style></head><body>\n<h1>", f);
  html_text(f, title);
  fputs("</h1>\n<h2>Setup</h2>\n<ul>\n", f);
  for (size_t i = 0; i < nsetup; i++) {
    fputs("<li>", f);
    html_text(f, setup[i]);
    fputs("</li>\n", f);
  }
  fputs("</ul>\n<h2>Answer</h2>\n<p class=\"answer\" id=\"answer\">", f);
  char *ans = NULL;
  size_t anslen = 0;
  FILE *mf = open_memstream(&ans, &anslen);
  if (mf) {
    report_answer(mf, runs, n);
    fclose(mf);
  }
  html_text(f, ans ? ans : "");
  free(ans);
  fputs("</p>\n<h2>Runs</h2>\n<table id=\"runs\"><thead><tr><th>run</th>", f);
  metric_id ids[METRIC_COUNT];
  int nc = table_ids(ids);
  for (int k = 0; k < nc; k++) {
    fputs("<th>", f);
    html_text(f, metric_table[ids[k]].tab.head);
    fputs("</th>", f);
  }
  fputs("<th>files</th></tr></thead>\n<tbody>\n", f);
  for (size_t i = 0; i < n; i++) {
    fputs("<tr><td>", f);
    html_text(f, runs[i].label);
    fputs("</td>", f);
    for (int k = 0; k < nc; k++) {
      const metric_col *c = &metric_table[ids[k]].tab;
      if (runs[i].m->has[ids[k]])
        fprintf(f, "<td>%.*f</td>", c->prec, xf(c->xf, runs[i].m->num[ids[k]]));
      else
        fputs("<td>-</td>", f);
    }
    fputs("<td>", f);
    if (runs[i].dir) {
      static const char *const files[] = {"summary.json", "jobs.csv",
                                          "timeline.csv"};
      for (int k = 0; k < 3; k++) {
        fputs(k ? " <a href=\"" : "<a href=\"", f);
        html_href(f, runs[i].dir);
        fprintf(f, "/%s\">%s</a>", files[k], files[k]);
      }
    }
    fputs("</td></tr>\n", f);
  }
  fputs("</tbody></table>\n<h2>Plots</h2>\n", f);
  static const char *const plots[] = {"bars", "queue_cdf", "utilization",
                                      "cost"};
  int nplots = 0;
  for (size_t k = 0; k < sizeof plots / sizeof plots[0]; k++) {
    int r = inline_svg(f, outdir, plots[k]);
    if (r < 0) {
      out_abort(&o);
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    nplots += r;
  }
  if (!nplots)
    fputs("<p>No plots (--no-plots, or gnuplot not found).</p>\n", f);
  fputs("</body></html>\n", f);
  return out_commit(&o, err, errlen) ? -1 : 0;
}
