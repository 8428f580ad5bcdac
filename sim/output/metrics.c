/*
 * The metric table (metrics.def expanded) and the writers generated from
 * it. Every writer walks the table, so a row added to metrics.def reaches
 * summary.json, compare.csv and sweep.csv (and, when it says so, the
 * printed summary and the compare table) with no other edit.
 */
#include "metrics.h"
#include "output.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The struct each metrics.def BASE names. */
#define METRIC_BASE_META run_meta
#define METRIC_BASE_RESULT sim_result
#define METRIC_BASE_MIG sim_mig_result
#define METRIC_BASE_CLOUD sim_cloud_result
#define METRIC_BASE_POOL sim_pool_result
#define METRIC_BASE_CLASS sim_class_result

#define SUM(order, pre, prec, xf, post) {order, pre, prec, xf, post}
#define NO_SUM {0, NULL, 0, X_NONE, NULL}
#define TAB(order, head, width, prec, xf) {order, head, width, prec, xf}
#define NO_TAB {0, NULL, 0, 0, X_NONE}

const metric_def metric_table[METRIC_COUNT] = {
#define METRIC(ID, JSON, CSV, COL, BASE, TYPE, FIELD, UNIT, PREC, FLAGS, S,  \
               T, DOC)                                                       \
  {JSON, CSV, COL, MB_##BASE, MT_##TYPE,                                     \
   offsetof(METRIC_BASE_##BASE, FIELD), UNIT, PREC, FLAGS, S, T, DOC},
#include "metrics.def"
#undef METRIC
};

const metric_def *metric_find_json(const char *path) {
  for (int i = 0; i < METRIC_COUNT; i++)
    if (strcmp(metric_table[i].json, path) == 0)
      return &metric_table[i];
  return NULL;
}

/* Row i's value in base (a run_meta, sim_result or sim_mig_result). Each
 * field is copied out by its declared type, so no row reads through a
 * pointer of the wrong type. */
static double field_num(const metric_def *d, const void *base) {
  const char *p = (const char *)base + d->offset;
  switch (d->type) {
  case MT_SIZE: {
    size_t x;
    memcpy(&x, p, sizeof x);
    return (double)x;
  }
  case MT_INT: {
    int x;
    memcpy(&x, p, sizeof x);
    return (double)x;
  }
  case MT_ULL: {
    unsigned long long x;
    memcpy(&x, p, sizeof x);
    return (double)x;
  }
  case MT_U64: {
    uint64_t x;
    memcpy(&x, p, sizeof x);
    return (double)x;
  }
  case MT_I64: {
    int64_t x;
    memcpy(&x, p, sizeof x);
    return (double)x;
  }
  case MT_US: {
    int64_t x;
    memcpy(&x, p, sizeof x);
    return (double)x / 1e6;
  }
  case MT_DBL: {
    double x;
    memcpy(&x, p, sizeof x);
    return x;
  }
  case MT_STR:
    break;
  }
  return 0;
}

void metrics_from_result(metric_values *v, const run_meta *m,
                         const sim_result *r) {
  memset(v, 0, sizeof *v);
  for (int i = 0; i < METRIC_COUNT; i++) {
    const metric_def *d = &metric_table[i];
    const void *base = d->base == MB_META     ? (const void *)m
                       : d->base == MB_RESULT ? (const void *)r
                       : d->base == MB_MIG    ? (const void *)r->mig
                       : d->base == MB_POOL   ? (const void *)r->pools
                       : d->base == MB_CLASS  ? (const void *)r->by_class
                                              : (const void *)r->cloud;
    if (!base)
      continue; /* MIG rows without MIG GPUs, cloud rows without cloud,
                 * pool rows without pools, class rows without by_class */
    /* A class's rows only when the trace has jobs of it (cls[] is the
     * first member: the offset names the class). */
    if (d->base == MB_CLASS &&
        !r->by_class->present[d->offset / sizeof(sim_class_stat)])
      continue;
    v->has[i] = 1;
    if (d->type == MT_STR)
      memcpy(&v->str[i], (const char *)base + d->offset, sizeof v->str[i]);
    else
      v->num[i] = field_num(d, base);
    if (d->type == MT_ULL || d->type == MT_U64) {
      uint64_t x;
      memcpy(&x, (const char *)base + d->offset, sizeof x);
      v->exact[i] = x;
    }
  }
}

/* Copies the first component of the dotted path p into part (size 128)
 * and returns its length, or -1 when it does not fit. */
static int path_part(const char *p, char part[128]) {
  size_t n = strcspn(p, ".");
  if (n >= 128)
    return -1;
  memcpy(part, p, n);
  part[n] = '\0';
  return (int)n;
}

/* The member at a dotted path, or NULL. */
static const cJSON *json_at(const cJSON *root, const char *path) {
  char part[128];
  const cJSON *o = root;
  for (;;) {
    int n = path_part(path, part);
    if (n < 0 || !cJSON_IsObject(o))
      return NULL;
    o = cJSON_GetObjectItemCaseSensitive(o, part);
    if (path[n] != '.')
      return o;
    path += n + 1;
  }
}

int metrics_from_json(metric_values *v, const cJSON *root, const char *origin,
                      char *err, size_t errlen) {
  memset(v, 0, sizeof *v);
  for (int i = 0; i < METRIC_COUNT; i++) {
    const metric_def *d = &metric_table[i];
    if ((d->flags & MF_RUN) || d->type == MT_STR)
      continue;
    const cJSON *x = json_at(root, d->json);
    if (cJSON_IsNumber(x)) {
      v->num[i] = x->valuedouble;
      v->has[i] = 1;
    } else if (!(d->flags & MF_OPTIONAL)) {
      snprintf(err, errlen, "%s: key '%s' missing or not a number", origin,
               d->json);
      return -1;
    }
  }
  return 0;
}

cJSON *metrics_to_json(const metric_values *v) {
  cJSON *root = cJSON_CreateObject();
  if (!root)
    return NULL;
  for (int i = 0; i < METRIC_COUNT; i++) {
    const metric_def *d = &metric_table[i];
    if (!v->has[i])
      continue;
    /* Walk (and open on first use) the objects of the path; an object
     * cJSON could not allocate drops its members, which the caller sees
     * through json_alloc_failed(). */
    cJSON *o = root;
    const char *key = d->json;
    char part[128];
    int n = 0;
    while (o && (n = path_part(key, part)) >= 0 && key[n] == '.') {
      cJSON *sub = cJSON_GetObjectItemCaseSensitive(o, part);
      o = cJSON_IsObject(sub) ? sub : cJSON_AddObjectToObject(o, part);
      key += n + 1;
    }
    if (!o || n < 0)
      continue;
    if (d->type == MT_STR) {
      cJSON_AddStringToObject(o, key, v->str[i] ? v->str[i] : "");
    } else if ((d->type == MT_ULL || d->type == MT_U64) &&
               v->exact[i] >= 1000000000000000ull) {
      /* From 10^15 cJSON would print "%1.15g" (an exponent, digits lost):
       * the integer's digits instead (below, the output is unchanged). */
      char digits[24];
      snprintf(digits, sizeof digits, "%llu", v->exact[i]);
      cJSON_AddRawToObject(o, key, digits);
    } else {
      cJSON_AddNumberToObject(o, key, v->num[i]);
    }
  }
  return root;
}

static double transform(metric_xf xf, double x) {
  switch (xf) {
  case X_PERCENT:
    return 100 * x;
  case X_PER_1000:
    return x / 1000;
  case X_NONE:
    break;
  }
  return x;
}

/* Row ids with a nonzero order (of the summary or of the table), sorted by
 * it. Returns how many. */
static int by_order(metric_id *out, int table) {
  int n = 0;
  for (int i = 0; i < METRIC_COUNT; i++) {
    int o = table ? metric_table[i].tab.order : metric_table[i].sum.order;
    if (o <= 0)
      continue;
    int k = n++;
    for (; k > 0; k--) {
      const metric_def *prev = &metric_table[out[k - 1]];
      if ((table ? prev->tab.order : prev->sum.order) <= o)
        break;
      out[k] = out[k - 1];
    }
    out[k] = (metric_id)i;
  }
  return n;
}

void metrics_print_summary(FILE *f, const metric_values *v) {
  metric_id ids[METRIC_COUNT];
  int n = by_order(ids, 0);
  for (int k = 0; k < n; k++) {
    const metric_def *d = &metric_table[ids[k]];
    const metric_show *s = &d->sum;
    if (!v->has[ids[k]])
      continue;
    if (d->type == MT_STR)
      fprintf(f, "%s%s", s->pre, v->str[ids[k]] ? v->str[ids[k]] : "");
    else if (s->prec == SHOW_IF_NONZERO)
      fputs(v->num[ids[k]] != 0 ? s->pre : "", f);
    else
      fprintf(f, "%s%.*f", s->pre, s->prec, transform(s->xf, v->num[ids[k]]));
    fputs(s->post, f);
  }
}

size_t metrics_csv_columns(metric_id *out) {
  size_t n = 0;
  /* The original 24 columns first, in their order, then every other
   * column in table order: a new metric only ever appends a column. */
  for (int col = 1;; col++) {
    size_t before = n;
    for (int i = 0; i < METRIC_COUNT; i++)
      if (metric_table[i].legacy_col == col)
        out[n++] = (metric_id)i;
    if (n == before)
      break;
  }
  for (int i = 0; i < METRIC_COUNT; i++) {
    const metric_def *d = &metric_table[i];
    if (d->legacy_col == 0 && !(d->flags & MF_RUN) && d->csv[0])
      out[n++] = (metric_id)i;
  }
  return n;
}

void metrics_csv_header(FILE *f) {
  metric_id ids[METRIC_COUNT];
  size_t n = metrics_csv_columns(ids);
  for (size_t k = 0; k < n; k++) {
    if (k)
      fputc(',', f);
    fputs(metric_table[ids[k]].csv, f);
  }
}

void metrics_csv_row(FILE *f, const metric_values *v) {
  metric_id ids[METRIC_COUNT];
  size_t n = metrics_csv_columns(ids);
  for (size_t k = 0; k < n; k++) {
    if (k)
      fputc(',', f);
    if (v->has[ids[k]])
      fprintf(f, "%.*f", metric_table[ids[k]].csv_prec, v->num[ids[k]]);
  }
}

void metrics_table_header(FILE *f, int label_width) {
  metric_id ids[METRIC_COUNT];
  int n = by_order(ids, 1);
  fprintf(f, "%-*s", label_width, "run");
  for (int k = 0; k < n; k++) {
    const metric_col *c = &metric_table[ids[k]].tab;
    fprintf(f, " %*s", c->width, c->head);
  }
  fputc('\n', f);
}

void metrics_table_row(FILE *f, int label_width, const char *label,
                       const metric_values *v) {
  metric_id ids[METRIC_COUNT];
  int n = by_order(ids, 1);
  fprintf(f, "%-*s", label_width, label);
  for (int k = 0; k < n; k++) {
    const metric_col *c = &metric_table[ids[k]].tab;
    if (v->has[ids[k]])
      fprintf(f, " %*.*f", c->width, c->prec,
              transform(c->xf, v->num[ids[k]]));
    else
      fprintf(f, " %*s", c->width, "-");
  }
  fputc('\n', f);
}
