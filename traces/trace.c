/*
 * The trace container (jobs, name arena, interned GPU specs) and
 * trace_load, which picks a reader from the header line.
 */
#include "trace_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void trace_init(trace *t) { memset(t, 0, sizeof *t); }

void trace_free(trace *t) {
  if (!t)
    return;
  for (int i = 0; i < t->nspecs; i++)
    free(t->specs[i]);
  free(t->specs);
  free(t->jobs);
  free(t->names);
  free(t->path);
  trace_init(t);
}

const char *trace_job_name(const trace *t, size_t i) {
  return i < t->n ? t->names + t->jobs[i].name_off : NULL;
}

/* Returns buf (of elem-sized items) grown so that it holds at least need
 * items, doubling to keep appends amortised O(1), or NULL (buf is then
 * untouched). Returning the pointer avoids writing a job_record * through
 * a void **, which strict aliasing does not allow. */
static void *grow(void *buf, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return buf;
  size_t c = *cap ? *cap : 64;
  while (c < need) {
    if (c > SIZE_MAX / 2 / elem)
      return NULL;
    c *= 2;
  }
  void *nb = realloc(buf, c * elem);
  if (nb)
    *cap = c;
  return nb;
}

/* Index of spec in t->specs, adding it if new. A linear search: traces
 * have a few dozen distinct specs (16 in the Alibaba gpuspec files), so
 * this costs less than hashing. -1 when out of memory. */
static int intern_spec(trace *t, const char *spec) {
  for (int i = 0; i < t->nspecs; i++)
    if (strcmp(t->specs[i], spec) == 0)
      return i;
  if (t->nspecs == t->specs_cap) {
    if (t->specs_cap > (1 << 28))
      return -1;
    int cap = t->specs_cap ? 2 * t->specs_cap : 8;
    char **ns = realloc(t->specs, (size_t)cap * sizeof *ns);
    if (!ns)
      return -1;
    t->specs = ns;
    t->specs_cap = cap;
  }
  char *copy = strdup(spec);
  if (!copy)
    return -1;
  t->specs[t->nspecs] = copy;
  return t->nspecs++;
}

int trace_add_job(trace *t, const job_record *job, const char *name,
                  const char *spec) {
  if (!name)
    name = "";
  size_t len = strlen(name) + 1;
  /* name_off is 32-bit: the arena may not start a name past 4 GiB. */
  if (t->names_len > UINT32_MAX)
    return -1;
  job_record *jobs = grow(t->jobs, &t->cap, t->n + 1, sizeof *t->jobs);
  if (!jobs)
    return -1;
  t->jobs = jobs;
  char *names = grow(t->names, &t->names_cap, t->names_len + len, 1);
  if (!names)
    return -1;
  t->names = names;
  int spec_idx = -1;
  if (spec && spec[0] != '\0' && (spec_idx = intern_spec(t, spec)) < 0)
    return -1;
  job_record *j = &t->jobs[t->n];
  *j = *job;
  j->name_off = (uint32_t)t->names_len;
  j->gpu_spec = spec_idx;
  memcpy(t->names + t->names_len, name, len);
  t->names_len += len;
  t->n++;
  return 0;
}

/* ------------------------------------------------------------ loading */

/* Every format trace_load knows, tried in order against the header. */
static const trace_reader *const readers[] = {
    &trace_alibaba_pod_reader,
    &trace_alibaba_multi_reader,
};
#define NREADERS (sizeof readers / sizeof readers[0])

typedef struct load_state {
  trace *t;
  const char *path;
  const trace_reader *reader; /* NULL until the header is read */
} load_state;

static void unknown_header(const load_state *st, const csvrow *row,
                           trace_error *err) {
  char got[80];
  csvrow_quote_joined(row, got, sizeof got);
  /* Every header we accept, so the user can fix the file. */
  char want[400], cols[200];
  size_t w = 0;
  want[0] = '\0';
  for (size_t r = 0; r < NREADERS && w < sizeof want; r++) {
    trace_join_columns(cols, sizeof cols, readers[r]->columns,
                       readers[r]->ncolumns);
    int k = snprintf(want + w, sizeof want - w, "%s'%s' (%s)",
                     r == 0 ? "" : " or ", cols, readers[r]->what);
    if (k < 0)
      break;
    w += (size_t)k;
  }
  const char *hint = csvrow_is_header(row, node_list_columns, 5)
                         ? " (this is a node list, not a job trace)"
                         : "";
  trace_seterr(err, "%s:%d: unrecognised header '%s'%s; expected %s", st->path,
               row->line, got, hint, want);
}

static int load_row(const csvrow *row, void *user, trace_error *err) {
  load_state *st = user;
  if (st->reader)
    return st->reader->row(st->t, row, st->path, err);
  for (size_t r = 0; r < NREADERS; r++)
    if (csvrow_is_header(row, readers[r]->columns, readers[r]->ncolumns)) {
      st->reader = readers[r];
      return 0;
    }
  unknown_header(st, row, err);
  return -1;
}

int trace_load(trace *t, const char *path, trace_error *err) {
  trace_free(t);
  trace fresh;
  trace_init(&fresh);
  load_state st = {.t = &fresh, .path = path, .reader = NULL};
  long rows = csvrows_read(path, load_row, &st, err);
  if (rows == 0)
    trace_seterr(err, "%s: empty file", path);
  else if (rows == 1)
    trace_seterr(err, "%s: no jobs after the header", path);
  if (rows >= 2) {
    fresh.path = strdup(path);
    if (!fresh.path) {
      trace_seterr(err, "%s: out of memory", path);
      rows = -1;
    }
  }
  if (rows < 2) {
    trace_free(&fresh);
    return -1;
  }
  fresh.format = st.reader->format;
  fresh.has_times = st.reader->has_times;
  *t = fresh;
  return 0;
}
