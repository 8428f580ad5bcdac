/*
 * Reader for the Alibaba 2023 node lists (openb_node_list_gpu_node.csv,
 * openb_node_list_all_node.csv): one row per machine,
 *
 *   sn,cpu_milli,memory_mib,gpu,model
 *
 * CPU-only machines have gpu 0 and an empty model. Names must be unique
 * (the simulator keys nodes by name), found with a hash set so a large
 * list loads in linear time.
 */
#include "trace_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const node_list_columns[5] = {"sn", "cpu_milli", "memory_mib",
                                          "gpu", "model"};

enum { COL_SN, COL_CPU, COL_MEM, COL_GPU, COL_MODEL };

void node_list_init(node_list *nl) { memset(nl, 0, sizeof *nl); }

void node_list_free(node_list *nl) {
  if (!nl)
    return;
  for (size_t i = 0; i < nl->n; i++) {
    free(nl->rows[i].name);
    free(nl->rows[i].model);
  }
  free(nl->rows);
  node_list_init(nl);
}

/* Open-addressing hash set of row indexes, keyed by node name. Kept at
 * most half full, so probes stay short. */
typedef struct name_set {
  size_t *slot; /* row index + 1; 0 = empty */
  size_t cap;   /* power of two */
} name_set;

static uint64_t hash_name(const char *s) {
  uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
  return h;
}

/* Index of the row holding name, or (size_t)-1; inserts idx when absent.
 * Sets *oom on allocation failure. */
static size_t set_find_or_add(name_set *set, const node_list *nl,
                              const char *name, size_t idx, int *oom) {
  if (2 * (nl->n + 1) > set->cap) {
    size_t cap = set->cap ? set->cap * 2 : 1024;
    size_t *ns = calloc(cap, sizeof *ns);
    if (!ns) {
      *oom = 1;
      return (size_t)-1;
    }
    for (size_t i = 0; i < set->cap; i++)
      if (set->slot[i]) {
        size_t h = hash_name(nl->rows[set->slot[i] - 1].name) & (cap - 1);
        while (ns[h])
          h = (h + 1) & (cap - 1);
        ns[h] = set->slot[i];
      }
    free(set->slot);
    set->slot = ns;
    set->cap = cap;
  }
  size_t h = hash_name(name) & (set->cap - 1);
  while (set->slot[h]) {
    if (strcmp(nl->rows[set->slot[h] - 1].name, name) == 0)
      return set->slot[h] - 1;
    h = (h + 1) & (set->cap - 1);
  }
  set->slot[h] = idx + 1;
  return (size_t)-1;
}

typedef struct node_state {
  node_list *nl;
  const char *path;
  name_set names;
  int header_seen;
} node_state;

static int bad(const csvrow *row, int col, const char *path, const char *why,
               trace_error *err) {
  trace_field_error(err, path, row->line, node_list_columns[col], why,
                    row->field[col], row->len[col]);
  return -1;
}

static int node_row_fn(const csvrow *row, void *user, trace_error *err) {
  node_state *st = user;
  const char *path = st->path;
  if (!st->header_seen) {
    if (!csvrow_is_header(row, node_list_columns, 5)) {
      char want[100];
      trace_join_columns(want, sizeof want, node_list_columns, 5);
      char got[80];
      csvrow_quote_joined(row, got, sizeof got);
      trace_seterr(err,
                   "%s:%" PRId64 ": unrecognised header '%s'; "
                   "expected '%s' (Alibaba 2023 node list)",
                   path, row->line, got, want);
      return -1;
    }
    st->header_seen = 1;
    return 0;
  }
  if (csvrow_check_shape(row, node_list_columns, 5, path, err))
    return -1;
  /* node_row.line is 32-bit: a node list is a few thousand lines. */
  if (row->line > INT32_MAX) {
    trace_seterr(err, "%s:%" PRId64 ": more than %d lines in a node list",
                 path, row->line, INT32_MAX);
    return -1;
  }
  if (row->len[COL_SN] == 0)
    return bad(row, COL_SN, path, "empty, every node needs a name", err);
  int64_t cpu, mem, gpus;
  char why[TRACE_WHY_MAX];
  if (trace_parse_int(row->field[COL_CPU], row->len[COL_CPU], INT64_MAX, &cpu,
                      why))
    return bad(row, COL_CPU, path, why, err);
  if (trace_parse_int(row->field[COL_MEM], row->len[COL_MEM], INT64_MAX, &mem,
                      why))
    return bad(row, COL_MEM, path, why, err);
  if (trace_parse_int(row->field[COL_GPU], row->len[COL_GPU], INT64_MAX, &gpus,
                      why))
    return bad(row, COL_GPU, path, why, err);
  if (gpus > NODE_LIST_MAX_GPUS) {
    snprintf(why, sizeof why, "more than %d GPUs per node is not supported",
             NODE_LIST_MAX_GPUS);
    return bad(row, COL_GPU, path, why, err);
  }
  /* pandas writes a missing model as "nan" (see the upstream README). */
  const char *model = row->field[COL_MODEL];
  if (strcmp(model, "nan") == 0)
    model = "";
  if (gpus > 0 && model[0] == '\0')
    return bad(row, COL_MODEL, path, "empty, but the node has GPUs", err);
  if (gpus == 0)
    model = ""; /* a model without GPUs carries no information */

  node_list *nl = st->nl;
  if (nl->n == nl->cap) {
    size_t cap = nl->cap ? nl->cap * 2 : 256;
    node_row *nr = realloc(nl->rows, cap * sizeof *nr);
    if (!nr)
      goto oom;
    nl->rows = nr;
    nl->cap = cap;
  }
  node_row *r = &nl->rows[nl->n];
  r->name = strdup(row->field[COL_SN]);
  r->model = strdup(model);
  if (!r->name || !r->model) {
    free(r->name);
    free(r->model);
    goto oom;
  }
  r->cpu_milli = cpu;
  r->memory_mib = mem;
  r->gpus = (int32_t)gpus;
  r->line = (int32_t)row->line;
  int oom = 0;
  size_t dup = set_find_or_add(&st->names, nl, r->name, nl->n, &oom);
  if (oom) {
    free(r->name);
    free(r->model);
    goto oom;
  }
  if (dup != (size_t)-1) {
    snprintf(why, sizeof why, "duplicate node name, first on line %d",
             (int)nl->rows[dup].line);
    free(r->name);
    free(r->model);
    return bad(row, COL_SN, path, why, err);
  }
  nl->n++;
  return 0;
oom:
  trace_seterr(err, "%s:%" PRId64 ": out of memory", path, row->line);
  return -1;
}

int node_list_load(node_list *nl, const char *path, trace_error *err) {
  node_list_free(nl);
  node_state st = {.nl = nl, .path = path};
  int64_t rows = csvrows_read(path, node_row_fn, &st, err);
  free(st.names.slot);
  if (rows == 0)
    trace_seterr(err, "%s: empty file", path);
  else if (rows == 1)
    trace_seterr(err, "%s: no nodes after the header", path);
  if (rows < 2) {
    node_list_free(nl);
    return -1;
  }
  return 0;
}

static int sniff_fn(const csvrow *row, void *user, trace_error *err) {
  (void)err;
  *(int *)user = csvrow_is_header(row, node_list_columns, 5);
  return 1; /* the first record is all we need */
}

int node_list_sniff(const char *path) {
  int is_nodes = 0;
  trace_error err;
  if (csvrows_read(path, sniff_fn, &is_nodes, &err) < 0) {
    /* A first record libcsv cannot parse (malformed quoting) is no
     * node-list header: 0. Only a file that cannot be read is -1, as
     * documented (found by tests/fuzz/fuzz_nodes.c). */
    FILE *f = fopen(path, "rb");
    if (!f)
      return -1;
    fclose(f);
    return 0;
  }
  return is_nodes;
}
