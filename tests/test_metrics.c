/*
 * The metric table (sim/output/metrics.def): its rows are consistent,
 * sim/README.md
 * documents every row with its definition, every key of real runs'
 * summary.json files has a row and reaches compare.csv with its value, and
 * newly exposed columns hold hand-computed values.
 */
#include "jsonutil.h"
#include "metrics.h"
#include "output.h"
#include "research.h"
#include "testutil.h"

#include <libsched/mig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- table */

START_TEST(table_is_consistent) {
  int legacy = 0, sum_seen[METRIC_COUNT + 1] = {0};
  int tab_seen[METRIC_COUNT + 1] = {0};
  for (int i = 0; i < METRIC_COUNT; i++) {
    const metric_def *d = &metric_table[i];
    ck_assert_msg(metric_find_json(d->json) == d, "JSON path %s twice",
                  d->json);
    for (int k = 0; k < i; k++)
      ck_assert_msg(!d->csv[0] || strcmp(d->csv, metric_table[k].csv) != 0,
                    "CSV column %s twice", d->csv);
    ck_assert_msg(d->doc[0] && d->unit[0], "%s: no definition or unit",
                  d->json);
    if (d->legacy_col)
      legacy++;
    /* Run identities have no metric column of their own; every other row
     * but the two constant strings (mode, mig.map) and the per-class rows
     * (summary.json only) has one. */
    if (!(d->flags & MF_RUN) && d->type != MT_STR && d->base != MB_CLASS)
      ck_assert_msg(d->csv[0], "%s: numeric row without a column", d->json);
    ck_assert_int_le(d->sum.order, METRIC_COUNT);
    ck_assert_int_le(d->tab.order, METRIC_COUNT);
    ck_assert_msg(!sum_seen[d->sum.order] || !d->sum.order,
                  "summary order %d twice", d->sum.order);
    ck_assert_msg(!tab_seen[d->tab.order] || !d->tab.order,
                  "table order %d twice", d->tab.order);
    sum_seen[d->sum.order] = tab_seen[d->tab.order] = 1;
  }
  /* The 24 columns compare.csv had before the table, each once. */
  ck_assert_int_eq(legacy, 24);
  metric_id ids[METRIC_COUNT];
  size_t n = metrics_csv_columns(ids);
  for (size_t k = 0; k < 24; k++)
    ck_assert_int_eq(metric_table[ids[k]].legacy_col, (int)k + 1);
  for (size_t k = 24; k < n; k++) /* appended ones are named by path */
    ck_assert_str_eq(metric_table[ids[k]].csv, metric_table[ids[k]].json);
  /* The per-kind MIG rows use libsched's kind names. */
  for (int k = 1; k <= LSCHED_MIG_KINDS; k++) {
    char path[128];
    snprintf(path, sizeof path, "mig.jobs_placed.%s", lsched_mig_kind_name(k));
    ck_assert_msg(metric_find_json(path), "no row %s", path);
    snprintf(path, sizeof path, "mig.instances_in_use_max.%s",
             lsched_mig_kind_name(k));
    ck_assert_msg(metric_find_json(path), "no row %s", path);
  }
}
END_TEST

/* ---------------------------------------------------------------- README */

/* The line README's metric reference has for row d. */
static void doc_line(char *buf, size_t size, const metric_def *d) {
  if (d->csv[0])
    snprintf(buf, size, "| `%s` | `%s` | %s | %s |", d->json, d->csv, d->unit,
             d->doc);
  else
    snprintf(buf, size, "| `%s` | (none) | %s | %s |", d->json, d->unit,
             d->doc);
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(buf);
  ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

START_TEST(readme_lists_every_row) {
  const char *src = getenv("SCHEDSIM_SOURCE_DIR");
  ck_assert_msg(src != NULL, "SCHEDSIM_SOURCE_DIR is not set");
  char path[4096];
  snprintf(path, sizeof path, "%s/sim/README.md", src);
  char *readme = read_all(path);
  int missing = 0;
  char line[1024];
  for (int i = 0; i < METRIC_COUNT; i++) {
    doc_line(line, sizeof line, &metric_table[i]);
    /* A whole line of README: the row's key, column, unit and definition
     * exactly as the table has them. */
    const char *p = readme;
    int found = 0;
    size_t len = strlen(line);
    while ((p = strstr(p, line)) != NULL) {
      if ((p == readme || p[-1] == '\n') && (p[len] == '\n' || !p[len])) {
        found = 1;
        break;
      }
      p += len;
    }
    if (!found) {
      fprintf(stderr, "sim/README.md lacks the line:\n%s\n", line);
      missing++;
    }
  }
  free(readme);
  ck_assert_msg(missing == 0, "sim/README.md lacks %d metric rows (see stderr)",
                missing);
}
END_TEST

/* ------------------------------------------------------- real summaries */

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

/* Splits one CSV line (no quoted commas in these files) into fields. */
static int split(char *line, char **field, int max) {
  int n = 0;
  line[strcspn(line, "\r\n")] = '\0';
  for (char *p = line;; p++) {
    if (n == max)
      return n;
    field[n++] = p;
    p = strchr(p, ',');
    if (!p)
      return n;
    *p = '\0';
  }
}

#define MAX_COLS 256

typedef struct csv_table {
  char header[8192], row[2][8192];
  char *head[MAX_COLS], *cell[2][MAX_COLS];
  int ncols, nrows;
} csv_table;

static void read_csv(csv_table *t, const char *path) {
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  ck_assert(fgets(t->header, sizeof t->header, f) != NULL);
  t->ncols = split(t->header, t->head, MAX_COLS);
  t->nrows = 0;
  while (t->nrows < 2 && fgets(t->row[t->nrows], sizeof t->row[0], f)) {
    int n = split(t->row[t->nrows], t->cell[t->nrows], MAX_COLS);
    ck_assert_int_eq(n, t->ncols);
    t->nrows++;
  }
  fclose(f);
}

static int col_of(const csv_table *t, const char *name) {
  for (int k = 0; k < t->ncols; k++)
    if (strcmp(t->head[k], name) == 0)
      return k;
  return -1;
}

static int row_of(const csv_table *t, const char *run) {
  for (int r = 0; r < t->nrows; r++)
    if (strcmp(t->cell[r][0], run) == 0)
      return r;
  return -1;
}

/* Walks every leaf of a summary.json: each has a table row and, but for
 * mode and mig.map (constant in compare and sweep, documented), a column of
 * compare.csv; a number's field in the run's row is its value at the row's
 * decimals. Returns the number of leaves. */
static int walk(const cJSON *o, const char *prefix, const csv_table *t, int r,
                int *mig_leaves) {
  int n = 0;
  for (const cJSON *c = o->child; c; c = c->next) {
    char path[256];
    snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "",
             c->string);
    if (cJSON_IsObject(c)) {
      n += walk(c, path, t, r, mig_leaves);
      continue;
    }
    n++;
    if (strncmp(path, "mig.", 4) == 0)
      (*mig_leaves)++;
    const metric_def *d = metric_find_json(path);
    ck_assert_msg(d != NULL, "summary.json key %s has no metric row", path);
    if (!d->csv[0]) {
      ck_assert_msg(strcmp(path, "mode") == 0 || strcmp(path, "mig.map") == 0,
                    "%s has no column", path);
      continue;
    }
    int k = col_of(t, d->csv);
    ck_assert_msg(k >= 0, "compare.csv has no column %s for key %s", d->csv,
                  path);
    if (d->flags & MF_RUN)
      continue; /* written by compare from its own run list */
    ck_assert_msg(cJSON_IsNumber(c), "%s is not a number", path);
    char want[64];
    snprintf(want, sizeof want, "%.*f", d->csv_prec, c->valuedouble);
    ck_assert_msg(strcmp(t->cell[r][k], want) == 0,
                  "compare.csv %s = '%s', summary.json %s = %s", d->csv,
                  t->cell[r][k], path, want);
  }
  return n;
}

static cJSON *load_json(const char *path) {
  char err[512];
  char *text = json_read_file(path, err, sizeof err);
  ck_assert_msg(text != NULL, "%s", err);
  cJSON *o = json_parse_located(text, path, err, sizeof err);
  free(text);
  ck_assert_msg(o != NULL, "%s", err);
  return o;
}

/*
 * One compare over two tiny clusters: "two", one node with 2 exclusive
 * A100-SXM4-80GB at $3 per GPU-hour, and a 20-GPU dynamic MIG cluster from
 * sim/examples. The trace has two 1-GPU jobs submitted at 0, running 3600 s
 * and 1800 s. On "two", by hand: makespan 3600 s; cost 2 GPUs x $3 x 1 h =
 * $6; job_hours 1 + 0.5 = 1.5; cost_usd.per_job_hour = 6 / 1.5 = 4;
 * running_jobs_mean (2 x 1800 + 1 x 1800) / 3600 = 1.5; gpu_used_ratio_mean
 * (2000 x 1800 + 1000 x 1800) / (2000 x 3600) = 0.75; no migrations.
 */
START_TEST(summary_keys_reach_compare_csv) {
  const char *src = getenv("SCHEDSIM_SOURCE_DIR");
  ck_assert_msg(src != NULL, "SCHEDSIM_SOURCE_DIR is not set");
  const char *dir = testutil_tmpdir();
  char trace_path[512], cluster_path[512], mig_path[4200], out[512];
  snprintf(trace_path, sizeof trace_path, "%s/two-jobs.csv", dir);
  snprintf(cluster_path, sizeof cluster_path, "%s/two.json", dir);
  snprintf(mig_path, sizeof mig_path,
           "%s/sim/examples/mig/a100-20-mig-dynamic.json", src);
  snprintf(out, sizeof out, "%s/cmp", dir);
  write_text(trace_path,
             "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,"
             "pod_phase,creation_time,deletion_time,scheduled_time\n"
             "a,1000,1024,1,1000,,LS,Running,0,3600,0\n"
             "b,1000,1024,1,1000,,LS,Running,0,1800,0\n");
  write_text(cluster_path,
             "{\"name\": \"two\", \"node_groups\": [{\"name\": \"n\", "
             "\"count\": 1, \"gpu_model\": \"A100-SXM4-80GB\", "
             "\"gpus_per_node\": 2, \"cpu_milli\": 8000, \"memory_mib\": "
             "65536, \"gpu_mode\": \"exclusive\"}]}\n");
  char *argv[] = {"compare",    "--quiet",     "--no-plots",
                  "--jobs",     "1",           "--trace",
                  trace_path,   "--cluster",   cluster_path,
                  "--cluster",  mig_path,      "--policy",
                  "mig-best-fit", "--price", "A100-SXM4-80GB=3",
                  "--speed",    "none",        "--out",
                  out,          NULL};
  int argc = (int)(sizeof argv / sizeof argv[0]) - 1;
  fflush(stdout);
  ck_assert_int_eq(cmd_compare(argc, argv), 0);

  char path[1024];
  snprintf(path, sizeof path, "%s/compare.csv", out);
  csv_table t;
  read_csv(&t, path);
  ck_assert_int_eq(t.nrows, 2);
  /* The header is run columns + the table's metric columns. */
  metric_id ids[METRIC_COUNT];
  size_t n = metrics_csv_columns(ids);
  ck_assert_int_eq(t.ncols, 6 + (int)n);

  int mig_leaves = 0;
  const char *runs[2] = {"two_mig-best-fit", "a100-20-mig-dynamic_mig-best-fit"};
  for (int i = 0; i < 2; i++) {
    int r = row_of(&t, runs[i]);
    ck_assert_msg(r >= 0, "no compare.csv row %s", runs[i]);
    snprintf(path, sizeof path, "%s/%s/summary.json", out, runs[i]);
    cJSON *o = load_json(path);
    int before = mig_leaves;
    int leaves = walk(o, "", &t, r, &mig_leaves);
    ck_assert_int_gt(leaves, 40);
    cJSON_Delete(o);
    if (i == 0) {
      /* No MIG GPUs: no mig keys, and their columns are empty. */
      ck_assert_int_eq(mig_leaves, before);
      ck_assert_str_eq(t.cell[r][col_of(&t, "mig.gpus")], "");
      ck_assert_str_eq(t.cell[r][col_of(&t, "mig.jobs_placed.7g")], "");
    } else {
      ck_assert_int_gt(mig_leaves, before + 20);
      ck_assert_str_eq(t.cell[r][col_of(&t, "mig.gpus")], "20");
      ck_assert_str_eq(t.cell[r][col_of(&t, "mig.jobs_placed.7g")], "2");
    }
  }
  /* The hand-computed figures of run "two". */
  int r = row_of(&t, "two_mig-best-fit");
  ck_assert_str_eq(t.cell[r][col_of(&t, "makespan_s")], "3600.000");
  ck_assert_str_eq(t.cell[r][col_of(&t, "cost_total_usd")], "6.0000");
  ck_assert_str_eq(t.cell[r][col_of(&t, "job_hours")], "1.5000");
  ck_assert_str_eq(t.cell[r][col_of(&t, "cost_usd.per_job_hour")], "4.0000");
  /* --speed none: work = 3600 + 1800 GPU-seconds = 1.5 GPU-hours. */
  ck_assert_str_eq(t.cell[r][col_of(&t, "work_gpu_hours")], "1.500");
  ck_assert_str_eq(t.cell[r][col_of(&t, "cost_usd.per_work_hour")], "4.0000");
  ck_assert_str_eq(t.cell[r][col_of(&t, "running_jobs_mean")], "1.500");
  ck_assert_str_eq(t.cell[r][col_of(&t, "gpu_used_ratio_mean")], "0.750000");
  ck_assert_str_eq(t.cell[r][col_of(&t, "migrations")], "0");
  ck_assert_str_eq(t.cell[r][col_of(&t, "nodes")], "1");
  ck_assert_str_eq(t.cell[r][col_of(&t, "gpus")], "2");
  ck_assert_str_eq(t.cell[r][col_of(&t, "never_started_reasons.still_queued")],
                   "0");
}
END_TEST

/* A summary.json without the optional keys (as older engines wrote it)
 * still merges, with their fields empty; a missing required key is an
 * error naming it. */
START_TEST(optional_keys_read_back_empty) {
  const char *dir = testutil_tmpdir();
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  const char *stats = "{\"mean\": 1, \"p50\": 1, \"p95\": 1, \"p99\": 1, "
                      "\"max\": 1}";
  char text[2048];
  snprintf(text, sizeof text,
           "{\"nodes\": 1, \"gpus\": 2, \"jobs\": 3, \"jobs_completed\": 3, "
           "\"jobs_never_started\": 0, \"gpu_alloc_ratio_mean\": 0.5, "
           "\"queue_time_s\": %s, \"jct_s\": %s, \"makespan_s\": 10, "
           "\"allocated_gpu_hours\": 1, \"cost_usd\": {\"total\": 2, "
           "\"per_allocated_gpu_hour\": 2, \"idle\": 0, \"unpriced_gpus\": 0}, "
           "\"events\": 6}\n",
           stats, stats);
  write_text(path, text);
  run_metrics m;
  ck_assert_msg(run_metrics_read(dir, &m, err, sizeof err) == 0, "%s", err);
  ck_assert(!m.has[METRIC_COST_PER_JOB_HOUR] && !m.has[METRIC_FRAG_RATE]);
  ck_assert(m.has[METRIC_COST_TOTAL] && m.num[METRIC_COST_TOTAL] == 2);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  run_metrics_row(f, &m);
  fclose(f);
  /* 21 original numbers, then empty fragmentation and every optional one. */
  ck_assert_msg(strncmp(buf, "3,3,0,0.500000,1.000,", 21) == 0, "%s", buf);
  ck_assert_msg(strstr(buf, ",6,,,,1,2,,,") != NULL, "%s", buf);
  free(buf);
  snprintf(text, sizeof text, "{\"jobs\": 3}\n");
  write_text(path, text);
  ck_assert_int_eq(run_metrics_read(dir, &m, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "summary.json: key 'jobs_completed' missing or "
                            "not a number"),
                "%s", err);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("metrics");
  TCase *tc = tcase_create("metrics");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, table_is_consistent);
  tcase_add_test(tc, readme_lists_every_row);
  tcase_add_test(tc, summary_keys_reach_compare_csv);
  tcase_add_test(tc, optional_keys_read_back_empty);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
