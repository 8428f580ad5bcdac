/*
 * The metric table (metrics.def) and everything generated from it: the
 * summary.json object, the printed summary of a replay, the columns of
 * compare.csv and sweep.csv, and the rows of the compare table.
 *
 * A run's figures travel as a metric_values: filled from a finished replay
 * (metrics_from_result) or read back from its summary.json
 * (metrics_from_json), and written by the same functions either way.
 */
#ifndef SCHEDSIM_METRICS_H
#define SCHEDSIM_METRICS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

#include "engine.h"

struct run_meta;

typedef enum metric_id {
#define METRIC(ID, ...) METRIC_##ID,
#include "metrics.def"
#undef METRIC
  METRIC_COUNT
} metric_id;

/* Where a row's value lives (metrics.def BASE). */
typedef enum metric_base {
  MB_META,
  MB_RESULT,
  MB_MIG,
  MB_CLOUD,
  MB_POOL,
  MB_CLASS
} metric_base;

/* The C type of a row's source field (metrics.def TYPE). */
typedef enum metric_type {
  MT_STR, /* const char * */
  MT_SIZE,
  MT_INT,
  MT_ULL, /* unsigned long long */
  MT_U64,
  MT_I64,
  MT_DBL,
  MT_US /* int64_t microseconds, reported in seconds */
} metric_type;

/* metrics.def FLAGS. */
enum {
  MF_RUN = 1,     /* identifies the run; compare/sweep write its column */
  MF_OPTIONAL = 2 /* may be absent from a summary.json */
};

/* Value transforms for display. */
typedef enum metric_xf {
  X_NONE,
  X_PERCENT, /* 100 x value */
  X_PER_1000 /* value / 1000 */
} metric_xf;

/* metric_show.prec: print the text before alone, when the value is not 0. */
#define SHOW_IF_NONZERO (-1)

/* A row's place in the printed summary (order 0: not shown). */
typedef struct metric_show {
  int order;
  const char *pre;
  int prec;
  metric_xf xf;
  const char *post;
} metric_show;

/* A row's column in the compare table (order 0: not shown). */
typedef struct metric_col {
  int order;
  const char *head;
  int width, prec;
  metric_xf xf;
} metric_col;

typedef struct metric_def {
  const char *json;  /* path in summary.json ("cost_usd.total") */
  const char *csv;   /* compare.csv/sweep.csv column; "" for none */
  int legacy_col;    /* 1..24: position among the original columns */
  metric_base base;
  metric_type type;
  size_t offset;     /* of the source field in its base struct */
  const char *unit;
  int csv_prec;      /* decimals in compare.csv and sweep.csv */
  unsigned flags;    /* MF_* */
  metric_show sum;
  metric_col tab;
  const char *doc;   /* one-line definition, as README lists it */
} metric_def;

extern const metric_def metric_table[METRIC_COUNT];

/* The row with that summary.json path, or NULL. */
const metric_def *metric_find_json(const char *path);

/* One run's figures. has[i] = 0 when row i is absent (MIG rows without MIG
 * GPUs; an optional key missing from a summary.json read back). str[i] is
 * set for MT_STR rows filled from a result (it points into the run_meta or
 * sim_result given); read back from JSON, only numbers are kept. */
typedef struct metric_values {
  double num[METRIC_COUNT];
  /* Unsigned 64-bit rows (seeds) exactly: a double keeps 53 bits, and
   * summary.json writes these integers digit for digit (issue #17). */
  unsigned long long exact[METRIC_COUNT];
  const char *str[METRIC_COUNT];
  unsigned char has[METRIC_COUNT];
} metric_values;

/* Fills v from a finished replay. */
void metrics_from_result(metric_values *v, const struct run_meta *m,
                         const sim_result *r);
/* Fills v's numbers from a parsed summary.json (origin names it in err);
 * MF_RUN rows are left absent. 0, or -1 with "ORIGIN: key 'PATH' missing or
 * not a number" in err when a required key is missing. */
int metrics_from_json(metric_values *v, const cJSON *root, const char *origin,
                      char *err, size_t errlen);

/* The summary.json object of v (every present row, in table order); NULL
 * when out of memory. */
cJSON *metrics_to_json(const metric_values *v);

/* The printed summary of a replay (the lines `schedsim run` prints). */
void metrics_print_summary(FILE *f, const metric_values *v);

/* compare.csv/sweep.csv: the metric columns (comma-separated, no newline,
 * no leading comma) and one run's fields. */
void metrics_csv_header(FILE *f);
void metrics_csv_row(FILE *f, const metric_values *v);
/* The columns in CSV order: fills out (METRIC_COUNT entries) with the ids
 * of the rows that have a metric column and returns how many. */
size_t metrics_csv_columns(metric_id *out);

/* The compare table: the header line and the line of one run, with the
 * run label left-aligned in label_width characters. */
void metrics_table_header(FILE *f, int label_width);
void metrics_table_row(FILE *f, int label_width, const char *label,
                       const metric_values *v);

#endif
