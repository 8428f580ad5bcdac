/*
 * Fuzz target: the Alibaba node-list reader (node_list_load, the cluster
 * side of `--cluster nodes.csv`) and its header sniffer.
 *
 * Checks: a load either gives rows inside every documented range (names
 * non-empty and unique, 0..64 GPUs, a model exactly when there are GPUs,
 * lines increasing inside the file) or fails with an empty list and a
 * message starting with the path (and a line inside the file when it names
 * one). A UTF-8 BOM and CRLF line ends change nothing.
 */
#include "fuzz.h"
#include "trace.h"

#include <string.h>

typedef struct outcome {
  int rc;
  node_list nl;
  trace_error err;
} outcome;

static void load(outcome *o, const char *path) {
  node_list_init(&o->nl);
  o->err.msg[0] = '\0';
  o->rc = node_list_load(&o->nl, path, &o->err);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check(const outcome *o, const char *path, size_t lines) {
  const node_list *nl = &o->nl;
  if (o->rc != 0) {
    FUZZ_CHECK(o->rc == -1, "rc %d", o->rc);
    FUZZ_CHECK(nl->n == 0 && nl->rows == NULL, "failed load left rows");
    size_t pl = strlen(path);
    FUZZ_CHECK(strncmp(o->err.msg, path, pl) == 0 && o->err.msg[pl] == ':',
               "message does not start with the path: '%s'", o->err.msg);
    const char *p = o->err.msg + pl + 1;
    if (*p >= '0' && *p <= '9') {
      unsigned long line = strtoul(p, NULL, 10);
      FUZZ_CHECK(line >= 1 && line <= lines, "line %lu of %zu", line, lines);
    }
    return;
  }
  FUZZ_CHECK(nl->n >= 1, "no rows");
  char **names = malloc(nl->n * sizeof *names);
  if (!names)
    abort();
  for (size_t i = 0; i < nl->n; i++) {
    const node_row *r = &nl->rows[i];
    FUZZ_CHECK(r->name && r->name[0], "row %zu: empty name", i);
    FUZZ_CHECK(r->model, "row %zu: NULL model", i);
    FUZZ_CHECK(r->gpus >= 0 && r->gpus <= NODE_LIST_MAX_GPUS, "row %zu gpus",
               i);
    FUZZ_CHECK((r->gpus > 0) == (r->model[0] != '\0'),
               "row %zu: %d GPUs, model '%s'", i, (int)r->gpus, r->model);
    FUZZ_CHECK(r->cpu_milli >= 0 && r->memory_mib >= 0, "row %zu", i);
    /* Lines count LF: a lone CR ends a record (libcsv) but not a line,
     * so two records may share one. */
    FUZZ_CHECK(r->line >= 1 && (size_t)r->line <= lines &&
                   (i == 0 || r->line >= nl->rows[i - 1].line),
               "row %zu line %d", i, (int)r->line);
    names[i] = r->name;
  }
  qsort(names, nl->n, sizeof *names, cmp_str);
  for (size_t i = 1; i < nl->n; i++)
    FUZZ_CHECK(strcmp(names[i - 1], names[i]) != 0, "duplicate name '%s'",
               names[i]);
  free(names);
}

static void same(const outcome *a, const outcome *b, const char *what) {
  FUZZ_CHECK(a->rc == b->rc, "%s changes the result: '%s' vs '%s'", what,
             a->err.msg, b->err.msg);
  if (a->rc) {
    FUZZ_CHECK(strcmp(a->err.msg, b->err.msg) == 0,
               "%s changes the message: '%s' vs '%s'", what, a->err.msg,
               b->err.msg);
    return;
  }
  FUZZ_CHECK(a->nl.n == b->nl.n, "%s changes the row count", what);
  for (size_t i = 0; i < a->nl.n; i++) {
    const node_row *x = &a->nl.rows[i], *y = &b->nl.rows[i];
    FUZZ_CHECK(
        strcmp(x->name, y->name) == 0 && strcmp(x->model, y->model) == 0 &&
            x->cpu_milli == y->cpu_milli && x->memory_mib == y->memory_mib &&
            x->gpus == y->gpus && x->line == y->line,
        "%s changes row %zu", what, i);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[512];
  fuzz_path(path, sizeof path, "nodes.csv");
  fuzz_write(path, data, size);
  size_t lines = 1;
  for (size_t i = 0; i < size; i++)
    lines += data[i] == '\n';
  int sniff = node_list_sniff(path);
  FUZZ_CHECK(sniff == 0 || sniff == 1, "sniff %d", sniff);
  outcome a;
  load(&a, path);
  check(&a, path, lines);
  if (a.rc == 0)
    FUZZ_CHECK(sniff == 1, "a node list whose header the sniffer missed");

  if (!(size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)) {
    uint8_t *v = malloc(size + 3);
    if (!v)
      abort();
    memcpy(v, "\xEF\xBB\xBF", 3);
    memcpy(v + 3, data, size);
    fuzz_write(path, v, size + 3);
    free(v);
    outcome b;
    load(&b, path);
    check(&b, path, lines);
    same(&a, &b, "a UTF-8 BOM");
    node_list_free(&b.nl);
  }
  if (!memchr(data, '"', size) && !memchr(data, '\r', size) &&
      memchr(data, '\n', size)) {
    uint8_t *v = malloc(2 * size);
    if (!v)
      abort();
    size_t m = 0;
    for (size_t i = 0; i < size; i++) {
      if (data[i] == '\n')
        v[m++] = '\r';
      v[m++] = data[i];
    }
    fuzz_write(path, v, m);
    free(v);
    outcome b;
    load(&b, path);
    check(&b, path, lines);
    same(&a, &b, "CRLF line ends");
    node_list_free(&b.nl);
  }
  node_list_free(&a.nl);
  return 0;
}
