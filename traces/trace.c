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

/* Every CSV format trace_load knows, tried in order against the header
 * (SWF is not CSV: trace_load_ex sniffs it first). */
static const trace_reader *const readers[] = {
    &trace_alibaba_pod_reader,   &trace_alibaba_multi_reader,
    &trace_pai_reader,           &trace_tiresias_reader,
    &trace_tiresias_tf_reader,   &trace_philly_reader,
    &trace_generic_reader,
};
#define NREADERS (sizeof readers / sizeof readers[0])

typedef struct load_state {
  trace *t;
  const char *path;
  const trace_reader *reader; /* NULL until the header is read */
  enum trace_format forced;   /* TRACE_FMT_UNKNOWN: detect */
  int headerless;             /* forced format, first record was data */
} load_state;

static void unknown_header(const load_state *st, const csvrow *row,
                           trace_error *err) {
  char got[80];
  csvrow_quote_joined(row, got, sizeof got);
  /* Every header we accept, so the user can fix the file. */
  char want[600], cols[200];
  size_t w = 0;
  want[0] = '\0';
  /* The header sharing most column names with the row, then the two
   * Alibaba headers (the message stays short; it may be cut at its end,
   * so the closest header comes first). */
  size_t best = 0, best_hits = 0;
  for (size_t r = 0; r < NREADERS; r++) {
    size_t hits = 0;
    for (size_t i = 0; i < row->nfields && i < CSVROW_MAX_FIELDS; i++)
      for (size_t c = 0; c < readers[r]->ncolumns; c++)
        if (strcmp(row->field[i], readers[r]->columns[c]) == 0)
          hits++;
    if (hits > best_hits)
      best = r, best_hits = hits;
  }
  size_t order[3] = {best, 0, 1};
  for (size_t k = 0; k < 3 && w < sizeof want; k++) {
    size_t r = order[k];
    if (k > 0 && r == best)
      continue;
    trace_join_columns(cols, sizeof cols, readers[r]->columns,
                       readers[r]->ncolumns);
    int len = snprintf(want + w, sizeof want - w, "%s'%s' (%s)",
                       w == 0 ? "" : " or ", cols, readers[r]->what);
    if (len < 0)
      break;
    w += (size_t)len;
  }
  const char *hint = csvrow_is_header(row, node_list_columns, 5)
                         ? " (this is a node list, not a job trace)"
                         : "";
  trace_seterr(err,
               "%s:%d: unrecognised header '%s'%s; formats: "
               TRACE_FORMAT_NAMES " (README 'Traces'; --trace-format NAME "
               "forces one); expected %s",
               st->path, row->line, got, hint, want);
}

static int load_row(const csvrow *row, void *user, trace_error *err) {
  load_state *st = user;
  if (st->reader)
    return st->reader->row(st->t, row, st->path, err);
  for (size_t r = 0; r < NREADERS; r++)
    if ((!st->forced || readers[r]->format == st->forced) &&
        csvrow_is_header(row, readers[r]->columns, readers[r]->ncolumns)) {
      st->reader = readers[r];
      return 0;
    }
  if (st->forced) {
    /* A forced format may come without its header line (the upstream PAI
     * files have none): the first record is data. A format with several
     * layouts (Tiresias) then reads its first one. */
    for (size_t r = 0; r < NREADERS && !st->reader; r++)
      if (readers[r]->format == st->forced)
        st->reader = readers[r];
    if (st->reader) {
      st->headerless = 1;
      return st->reader->row(st->t, row, st->path, err);
    }
  }
  unknown_header(st, row, err);
  return -1;
}

static const struct {
  const char *name;
  enum trace_format format;
} format_names[] = {{"alibaba", TRACE_FMT_ALIBABA_POD},
                    {"alibaba-multi", TRACE_FMT_ALIBABA_POD_MULTI},
                    {"swf", TRACE_FMT_SWF},
                    {"pai", TRACE_FMT_PAI},
                    {"tiresias", TRACE_FMT_TIRESIAS},
                    {"philly", TRACE_FMT_PHILLY},
                    {"generic", TRACE_FMT_GENERIC}};
#define NFORMAT_NAMES (sizeof format_names / sizeof format_names[0])

enum trace_format trace_format_from_name(const char *name) {
  for (size_t i = 0; name && i < NFORMAT_NAMES; i++)
    if (strcmp(name, format_names[i].name) == 0)
      return format_names[i].format;
  return TRACE_FMT_UNKNOWN;
}

const char *trace_format_name(enum trace_format f) {
  for (size_t i = 0; i < NFORMAT_NAMES; i++)
    if (format_names[i].format == f)
      return format_names[i].name;
  return "unknown";
}

int trace_load(trace *t, const char *path, trace_error *err) {
  return trace_load_ex(t, path, NULL, err);
}

int trace_load_ex(trace *t, const char *path, const trace_load_opts *opts,
                  trace_error *err) {
  trace_free(t);
  trace_load_opts o = TRACE_LOAD_OPTS_INIT;
  if (opts)
    o = *opts;
  if (o.format != TRACE_FMT_UNKNOWN &&
      strcmp(trace_format_name(o.format), "unknown") == 0) {
    trace_seterr(err, "%s: unknown trace format %d", path, (int)o.format);
    return -1;
  }
  trace fresh;
  trace_init(&fresh);
  int swf = o.format == TRACE_FMT_SWF;
  if (o.format == TRACE_FMT_UNKNOWN) {
    swf = trace_swf_sniff(path);
    if (swf == -2) {
      trace_seterr(err, "%s: out of memory", path);
      return -1;
    }
    if (swf < 0) /* unreadable: let the CSV path name the error */
      swf = 0;
  }
  if (swf) {
    if (trace_swf_load(&fresh, path, &o, err) != 0) {
      trace_free(&fresh);
      return -1;
    }
    fresh.path = strdup(path);
    if (!fresh.path) {
      trace_seterr(err, "%s: out of memory", path);
      trace_free(&fresh);
      return -1;
    }
    fresh.format = TRACE_FMT_SWF;
    fresh.has_times = 1;
    *t = fresh;
    return 0;
  }
  if (trace_is_gzip(path) == 1) {
    trace_seterr(err,
                 "%s: gzip-compressed, but not SWF (only SWF is read "
                 "compressed; gunzip other formats first)",
                 path);
    return -1;
  }
  load_state st = {
      .t = &fresh, .path = path, .reader = NULL, .forced = o.format};
  long rows = csvrows_read(path, load_row, &st, err);
  if (rows >= 1 && st.headerless)
    rows++; /* every record was data: count a header for the checks */
  if (rows >= 2 && fresh.n == 0) {
    trace_seterr(err, "%s: no jobs (%zu records skipped: %s)", path,
                 fresh.skipped, fresh.skip_note ? fresh.skip_note : "");
    rows = -1;
  }
  if (rows >= 2 && st.reader->finish &&
      st.reader->finish(&fresh, path, err) != 0)
    rows = -1;
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
