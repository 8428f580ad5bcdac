/*
 * The trace container (jobs, name arena, interned GPU specs) and
 * trace_load, which reads a trace stream (traces/stream.c) to its end.
 */
#include "trace_internal.h"

#include <inttypes.h>
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
  for (int i = 0; i < t->nclasses; i++)
    free(t->classes[i]);
  free(t->classes);
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

int trace_intern_spec(trace *t, const char *spec) {
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

int trace_intern_class(trace *t, const char *name) {
  if (!name || !name[0])
    return 0;
  for (int i = 0; i < t->nclasses; i++)
    if (strcmp(t->classes[i], name) == 0)
      return i + 1;
  if (t->nclasses >= UINT16_MAX)
    return -1;
  if (t->nclasses == t->classes_cap) {
    int cap = t->classes_cap ? 2 * t->classes_cap : 8;
    char **nc = realloc(t->classes, (size_t)cap * sizeof *nc);
    if (!nc)
      return -1;
    t->classes = nc;
    t->classes_cap = cap;
  }
  char *copy = strdup(name);
  if (!copy)
    return -1;
  t->classes[t->nclasses++] = copy;
  return t->nclasses;
}

int trace_append_job(trace *t, const job_record *job, const char *name) {
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
  job_record *j = &t->jobs[t->n];
  *j = *job;
  j->name_off = (uint32_t)t->names_len;
  memcpy(t->names + t->names_len, name, len);
  t->names_len += len;
  t->n++;
  return 0;
}

int trace_add_job(trace *t, const job_record *job, const char *name,
                  const char *spec) {
  int spec_idx = -1;
  if (spec && spec[0] != '\0' && (spec_idx = trace_intern_spec(t, spec)) < 0)
    return -1;
  job_record j = *job;
  j.gpu_spec = spec_idx;
  return trace_append_job(t, &j, name);
}

/* ------------------------------------------------------------ loading */

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

void trace_measurement(enum trace_format f, const char **model,
                       int *by_spec) {
  /* README "Work and speed" gives the reasons. */
  *by_spec = 0;
  *model = NULL;
  switch (f) {
  case TRACE_FMT_ALIBABA_POD:
  case TRACE_FMT_ALIBABA_POD_MULTI:
    *model = "G2"; /* the trace cluster's most common model */
    *by_spec = 1;
    break;
  case TRACE_FMT_PAI:
  case TRACE_FMT_GENERIC:
    *by_spec = 1;
    break;
  case TRACE_FMT_TIRESIAS:
    *model = "P100"; /* the Tiresias testbed */
    break;
  case TRACE_FMT_PHILLY:
    *model = "V100M16";
    break;
  default: /* SWF (a CPU log), hand-built traces */
    break;
  }
}

const char *trace_gpu_field(enum trace_format f) {
  return f == TRACE_FMT_PAI       ? "gpu_type"
         : f == TRACE_FMT_GENERIC ? "gpu_model"
                                  : "gpu_spec";
}

int trace_load(trace *t, const char *path, trace_error *err) {
  return trace_load_ex(t, path, NULL, err);
}

int trace_load_ex(trace *t, const char *path, const trace_load_opts *opts,
                  trace_error *err) {
  trace_free(t);
  /* The whole-file load is the stream read to its end, so that every
   * test and the fuzz target run the streaming code. */
  trace_stream *s;
  if (trace_stream_open(&s, path, opts, err) != 0)
    return -1;
  trace fresh;
  trace_init(&fresh);
  job_record j;
  const char *name;
  int rc;
  while ((rc = trace_stream_next(s, &j, &name, err)) == 1)
    if (trace_append_job(&fresh, &j, name) != 0) {
      trace_seterr(err, "%s:%" PRId64 ": out of memory", path, j.line);
      rc = -1;
      break;
    }
  if (rc == 0)
    trace_stream_take_meta(s, &fresh);
  trace_stream_close(s);
  if (rc != 0) {
    trace_free(&fresh);
    return -1;
  }
  *t = fresh;
  return 0;
}
