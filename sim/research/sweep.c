/*
 * schedsim sweep MANIFEST.json: a grid of replays (traces x clusters x
 * queues x policies x seeds x parameters) from a JSON manifest, run in
 * parallel by forked workers, resumable, merged into DIR/sweep.csv.
 *
 * Manifest (README "schedsim sweep" is the reference; every other key is
 * an error naming it and the file):
 *   {"name": "...", "description": "...",
 *    "traces":   ["builtin:default", "a.csv",
 *                 {"path": "x.swf.gz", "format": "swf", "label": "nasa"}],
 *    "clusters": ["builtin:default", {"path": "c.json", "label": "c"}],
 *    "policies": ["first-fit", "best-fit"],
 *    "queues":   ["fifo", "skip"],            (default ["fifo"])
 *    "seeds":    [1, 2, 3],                   (default [1])
 *    "parameters": {"unknown_duration": [60, 600],
 *                   "swf_gpus_per_proc": [0.125, 1]},
 *    "catalog": "file.json", "prices": {"G2": 2.0}, "check": false}
 * Relative paths are relative to the manifest's directory.
 *
 * Runs are numbered in that nesting order (traces outermost, parameters
 * innermost) and named
 *   <trace>_<cluster>_<queue>_<policy>_s<seed>[_ud<secs>][_gpp<rate>]
 * from the labels (base names without extension unless given). A run
 * writes into DIR/runs/.<id>.tmp.<pid>/ and renames that to
 * DIR/runs/<id>/ when complete, so a run directory exists only complete;
 * a rerun skips runs whose DIR/runs/<id>/summary.json exists and removes
 * leftover temporary directories of killed runs. sweep.csv is rebuilt
 * from every run's summary.json, in run order, once all runs are done:
 * the same manifest gives the same sweep.csv however often it was
 * interrupted.
 */
#include "cli.h"
#include "jsonutil.h"
#include "research.h"
#include "sweep_slurm.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERRLEN 1024
#define MAX_ITEMS 4096
/* Most runs one manifest may describe (see manifest_load). */
#define SWEEP_MAX_RUNS 1000000

typedef struct sw_input {
  char *path; /* resolved */
  char label[128];
  enum trace_format format; /* traces only */
} sw_input;

typedef struct manifest {
  const char *file;
  sw_input *traces, *clusters;
  int ntraces, nclusters;
  char **policies, **queues;
  int npolicies, nqueues;
  uint64_t *seeds;
  int nseeds;
  double *ud, *gpp; /* parameter values; NULL when not given */
  int nud, ngpp;
  char *catalog;
  char **prices; /* "MODEL=USD" */
  int nprices;
  int check;
} manifest;

typedef struct sw_run {
  int ti, ci, qi, pi, si, ui, gi; /* ui, gi: -1 when not swept */
  char id[1024];
} sw_run;

typedef struct sw_ctx {
  const manifest *m;
  const sw_run *runs;
  size_t *todo; /* task index -> run index */
  const char *outdir;
  const gpu_catalog *cat;
  sim_cluster *clusters; /* loaded once, shared copy-on-write */
  trace *traces;         /* [ti * max(1, ngpp) + gi]; builtin: not loaded */
} sw_ctx;

static void sweep_usage(FILE *f) {
  fputs("usage: schedsim sweep MANIFEST.json [--out DIR] [--jobs N] "
        "[--dry-run] [--quiet]\n"
        "       schedsim sweep MANIFEST.json [--out DIR] --emit-slurm SDIR "
        "[--slurm-max-running K]\n"
        "\n"
        "Runs every combination of the manifest's traces, clusters, queues,\n"
        "policies, seeds and parameters in parallel, each into\n"
        "DIR/runs/<run-id>/ (as 'schedsim run --out'), and merges them into\n"
        "DIR/sweep.csv, one row per run. Finished runs are skipped, so an\n"
        "interrupted sweep resumes where it stopped. The manifest schema is\n"
        "in the README ('schedsim sweep').\n"
        "\n"
        "  --out DIR     output directory (default out/sweep)\n"
        "  --jobs N      parallel workers (default: the number of CPUs)\n"
        "  --dry-run     list the runs (done or to do) and write nothing\n"
        "  --quiet       no progress display\n"
        "  --task I      run only run I (1-based, manifest order) and do not\n"
        "                merge (one Slurm array task; README 'Sweeps on Slurm')\n"
        "  --emit-slurm SDIR  write SDIR/sweep.sbatch (a job array, one task\n"
        "                per run), SDIR/merge.sbatch and SDIR/submit.sh; run\n"
        "                nothing\n"
        "  --slurm-max-running K  array tasks at once (default 4; 0 = all)\n",
        f);
}

/* ------------------------------------------------------------ manifest */

static void manifest_free(manifest *m) {
  for (int i = 0; i < m->ntraces; i++)
    free(m->traces[i].path);
  for (int i = 0; i < m->nclusters; i++)
    free(m->clusters[i].path);
  for (int i = 0; i < m->npolicies; i++)
    free(m->policies[i]);
  for (int i = 0; i < m->nqueues; i++)
    free(m->queues[i]);
  for (int i = 0; i < m->nprices; i++)
    free(m->prices[i]);
  free(m->traces);
  free(m->clusters);
  free(m->policies);
  free(m->queues);
  free(m->seeds);
  free(m->ud);
  free(m->gpp);
  free(m->catalog);
  free(m->prices);
  memset(m, 0, sizeof *m);
}

/* path relative to the manifest's directory (builtin: names untouched). */
static char *resolve(const char *file, const char *path) {
  if (path[0] == '/' || strncmp(path, "builtin:", 8) == 0)
    return json_strdup(path);
  const char *slash = strrchr(file, '/');
  if (!slash)
    return json_strdup(path);
  size_t dl = (size_t)(slash - file);
  char *out = malloc(dl + strlen(path) + 2);
  if (out)
    sprintf(out, "%.*s/%s", (int)dl, file, path);
  return out;
}

/* A non-empty array at key (or NULL when absent and optional). */
static const cJSON *get_array(const cJSON *root, const char *key, int required,
                              const manifest *m, char *err, size_t errlen) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!a) {
    if (required)
      snprintf(err, errlen, "%s: missing key '%s' (a non-empty list)", m->file,
               key);
    return NULL;
  }
  if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) == 0) {
    snprintf(err, errlen, "%s: '%s' must be a non-empty list", m->file, key);
    return NULL;
  }
  if (cJSON_GetArraySize(a) > MAX_ITEMS) {
    snprintf(err, errlen, "%s: '%s' has more than %d items", m->file, key,
             MAX_ITEMS);
    return NULL;
  }
  return a;
}

/* traces or clusters: strings or {"path", "label"[, "format"]}. */
static int parse_inputs(const cJSON *a, const char *key, int is_trace,
                        manifest *m, sw_input **out, int *n, char *err,
                        size_t errlen) {
  int cnt = cJSON_GetArraySize(a);
  *out = calloc((size_t)cnt, sizeof **out);
  if (!*out) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  static const char *const tkeys[] = {"path", "label", "format", NULL};
  static const char *const ckeys[] = {"path", "label", NULL};
  for (int i = 0; i < cnt; i++) {
    const cJSON *e = cJSON_GetArrayItem(a, i);
    char where[64];
    snprintf(where, sizeof where, "%s[%d]", key, i);
    sw_input *in = &(*out)[i];
    const char *path = NULL, *label = NULL;
    if (cJSON_IsString(e)) {
      path = e->valuestring;
    } else if (cJSON_IsObject(e)) {
      if (json_check_keys(e, is_trace ? tkeys : ckeys, m->file, where, err,
                          errlen))
        return -1;
      const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "path");
      const cJSON *l = cJSON_GetObjectItemCaseSensitive(e, "label");
      const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "format");
      if (!cJSON_IsString(p)) {
        snprintf(err, errlen, "%s: %s: 'path' must be a string", m->file,
                 where);
        return -1;
      }
      path = p->valuestring;
      if (l && (!cJSON_IsString(l) || !l->valuestring[0])) {
        snprintf(err, errlen, "%s: %s: 'label' must be a non-empty string",
                 m->file, where);
        return -1;
      }
      label = l ? l->valuestring : NULL;
      if (f) {
        in->format = cJSON_IsString(f) ? trace_format_from_name(f->valuestring)
                                       : TRACE_FMT_UNKNOWN;
        if (in->format == TRACE_FMT_UNKNOWN) {
          snprintf(err, errlen,
                   "%s: %s: 'format' must be one of " TRACE_FORMAT_NAMES,
                   m->file, where);
          return -1;
        }
      }
    } else {
      snprintf(err, errlen,
               "%s: %s: expected a path string or an object with \"path\"",
               m->file, where);
      return -1;
    }
    if (!path[0]) {
      snprintf(err, errlen, "%s: %s: empty path", m->file, where);
      return -1;
    }
    in->path = resolve(m->file, path);
    (*n)++;
    if (!in->path) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    research_label(in->label, sizeof in->label, label ? label : path);
    for (int k = 0; k < i; k++)
      if (strcmp((*out)[k].label, in->label) == 0) {
        snprintf(err, errlen,
                 "%s: %s[%d] and %s[%d] have the same label '%s': give one "
                 "a \"label\"",
                 m->file, key, k, key, i, in->label);
        return -1;
      }
  }
  return 0;
}

static int parse_strings(const cJSON *a, const char *key, manifest *m,
                         char ***out, int *n, char *err, size_t errlen) {
  int cnt = cJSON_GetArraySize(a);
  *out = calloc((size_t)cnt, sizeof **out);
  if (!*out) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (int i = 0; i < cnt; i++) {
    const cJSON *e = cJSON_GetArrayItem(a, i);
    if (!cJSON_IsString(e) || !e->valuestring[0]) {
      snprintf(err, errlen, "%s: %s[%d]: expected a non-empty string", m->file,
               key, i);
      return -1;
    }
    for (int k = 0; k < i; k++)
      if (strcmp((*out)[k], e->valuestring) == 0) {
        snprintf(err, errlen, "%s: %s: '%s' listed twice", m->file, key,
                 e->valuestring);
        return -1;
      }
    (*out)[i] = json_strdup(e->valuestring);
    (*n)++;
    if (!(*out)[i]) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
  }
  return 0;
}

/* A list of numbers (a single number counts as a list of one) in
 * [lo, hi]; lo_open: lo itself excluded. */
static int parse_numbers(const cJSON *v, const char *where, manifest *m,
                         double lo, int lo_open, double hi, int integer,
                         double **out, int *n, char *err, size_t errlen) {
  int single = cJSON_IsNumber(v);
  if (!single && (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0 ||
                  cJSON_GetArraySize(v) > MAX_ITEMS)) {
    snprintf(err, errlen,
             "%s: %s: expected a number or a non-empty list of "
             "numbers",
             m->file, where);
    return -1;
  }
  int cnt = single ? 1 : cJSON_GetArraySize(v);
  *out = calloc((size_t)cnt, sizeof **out);
  if (!*out) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (int i = 0; i < cnt; i++) {
    const cJSON *e = single ? v : cJSON_GetArrayItem(v, i);
    double x = cJSON_IsNumber(e) ? e->valuedouble : NAN;
    if (!isfinite(x) || x < lo || (lo_open && x == lo) || x > hi ||
        (integer && x != floor(x))) {
      snprintf(err, errlen, "%s: %s[%d]: expected %s in %s%g, %g]", m->file,
               where, i, integer ? "an integer" : "a number",
               lo_open ? "(" : "[", lo, hi);
      return -1;
    }
    for (int k = 0; k < i; k++)
      if ((*out)[k] == x) {
        snprintf(err, errlen, "%s: %s: %g listed twice", m->file, where, x);
        return -1;
      }
    (*out)[i] = x;
    (*n)++;
  }
  return 0;
}

static int manifest_load(manifest *m, const char *file, char *err,
                         size_t errlen) {
  memset(m, 0, sizeof *m);
  m->file = file;
  char *text = json_read_file(file, err, errlen);
  if (!text)
    return -1;
  cJSON *root = json_parse_located(text, file, err, errlen);
  free(text);
  if (!root)
    return -1;
  int rc = -1;
  static const char *const keys[] = {
      "name",  "description", "traces",  "clusters", "policies", "queues",
      "seeds", "parameters",  "catalog", "prices",   "check",    NULL};
  if (!cJSON_IsObject(root)) {
    snprintf(err, errlen, "%s: expected a JSON object", file);
    goto out;
  }
  if (json_check_keys(root, keys, file, "manifest", err, errlen))
    goto out;
  for (int k = 0; k < 2; k++) {
    const char *key = k ? "description" : "name";
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (v && !cJSON_IsString(v)) {
      snprintf(err, errlen, "%s: '%s' must be a string", file, key);
      goto out;
    }
  }
  const cJSON *a;
  if (!(a = get_array(root, "traces", 1, m, err, errlen)) ||
      parse_inputs(a, "traces", 1, m, &m->traces, &m->ntraces, err, errlen))
    goto out;
  if (!(a = get_array(root, "clusters", 1, m, err, errlen)) ||
      parse_inputs(a, "clusters", 0, m, &m->clusters, &m->nclusters, err,
                   errlen))
    goto out;
  if (!(a = get_array(root, "policies", 1, m, err, errlen)) ||
      parse_strings(a, "policies", m, &m->policies, &m->npolicies, err, errlen))
    goto out;
  err[0] = '\0';
  a = get_array(root, "queues", 0, m, err, errlen);
  if (err[0])
    goto out;
  if (a) {
    if (parse_strings(a, "queues", m, &m->queues, &m->nqueues, err, errlen))
      goto out;
    for (int i = 0; i < m->nqueues; i++) {
      sim_queue_kind k;
      if (sim_queue_parse(m->queues[i], &k)) {
        snprintf(err, errlen,
                 "%s: queues[%d]: '%s': expected fifo, skip, backfill or "
                 "priority",
                 file, i, m->queues[i]);
        goto out;
      }
    }
  } else {
    m->queues = calloc(1, sizeof *m->queues);
    if (!m->queues || !(m->queues[0] = json_strdup("fifo"))) {
      snprintf(err, errlen, "out of memory");
      goto out;
    }
    m->nqueues = 1;
  }
  const cJSON *seeds = cJSON_GetObjectItemCaseSensitive(root, "seeds");
  double *sd = NULL;
  int nsd = 0;
  if (seeds) {
    if (!cJSON_IsArray(seeds)) {
      snprintf(err, errlen, "%s: 'seeds' must be a non-empty list", file);
      goto out;
    }
    if (parse_numbers(seeds, "seeds", m, 0, 0, 9007199254740992.0, 1, &sd, &nsd,
                      err, errlen)) {
      free(sd);
      goto out;
    }
  }
  m->seeds = calloc(nsd ? (size_t)nsd : 1, sizeof *m->seeds);
  if (!m->seeds) {
    free(sd);
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  m->nseeds = nsd ? nsd : 1;
  m->seeds[0] = 1;
  for (int i = 0; i < nsd; i++)
    m->seeds[i] = (uint64_t)sd[i];
  free(sd);
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "parameters");
  if (params) {
    static const char *const pkeys[] = {"unknown_duration", "swf_gpus_per_proc",
                                        NULL};
    if (!cJSON_IsObject(params)) {
      snprintf(err, errlen, "%s: 'parameters' must be an object", file);
      goto out;
    }
    if (json_check_keys(params, pkeys, file, "parameters", err, errlen))
      goto out;
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(params, "unknown_duration");
    if (v && parse_numbers(v, "parameters.unknown_duration", m, 0, 0, 9.2e12, 0,
                           &m->ud, &m->nud, err, errlen))
      goto out;
    v = cJSON_GetObjectItemCaseSensitive(params, "swf_gpus_per_proc");
    if (v && parse_numbers(v, "parameters.swf_gpus_per_proc", m, 0, 1, 1e6, 0,
                           &m->gpp, &m->ngpp, err, errlen))
      goto out;
  }
  const cJSON *cat = cJSON_GetObjectItemCaseSensitive(root, "catalog");
  if (cat) {
    if (!cJSON_IsString(cat) || !cat->valuestring[0]) {
      snprintf(err, errlen, "%s: 'catalog' must be a path string", file);
      goto out;
    }
    if (!(m->catalog = resolve(file, cat->valuestring))) {
      snprintf(err, errlen, "out of memory");
      goto out;
    }
  }
  const cJSON *prices = cJSON_GetObjectItemCaseSensitive(root, "prices");
  if (prices) {
    if (!cJSON_IsObject(prices)) {
      snprintf(err, errlen, "%s: 'prices' must be an object MODEL: USD", file);
      goto out;
    }
    int np = cJSON_GetArraySize(prices);
    m->prices = calloc(np ? (size_t)np : 1, sizeof *m->prices);
    if (!m->prices) {
      snprintf(err, errlen, "out of memory");
      goto out;
    }
    const cJSON *p;
    cJSON_ArrayForEach(p, prices) {
      if (!cJSON_IsNumber(p) || !(p->valuedouble >= 0)) {
        snprintf(err, errlen, "%s: prices.%s: expected a number >= 0", file,
                 p->string);
        goto out;
      }
      char buf[300];
      snprintf(buf, sizeof buf, "%s=%.17g", p->string, p->valuedouble);
      if (!(m->prices[m->nprices] = json_strdup(buf))) {
        snprintf(err, errlen, "out of memory");
        goto out;
      }
      m->nprices++;
    }
  }
  const cJSON *check = cJSON_GetObjectItemCaseSensitive(root, "check");
  if (check) {
    if (!cJSON_IsBool(check)) {
      snprintf(err, errlen, "%s: 'check' must be true or false", file);
      goto out;
    }
    m->check = cJSON_IsTrue(check);
  }
  /* The grid size, checked here so that expand() cannot overflow size_t
   * (each list may have MAX_ITEMS entries: 4096^7 wraps around) and a
   * hostile manifest cannot ask for terabytes of run records. */
  double runs = (double)m->ntraces * m->nclusters * m->nqueues *
                m->npolicies * m->nseeds * (m->nud ? m->nud : 1) *
                (m->ngpp ? m->ngpp : 1);
  if (runs > SWEEP_MAX_RUNS) {
    snprintf(err, errlen,
             "%s: the grid has %.0f runs (traces x clusters x queues x "
             "policies x seeds x parameters); at most %d are allowed",
             file, runs, SWEEP_MAX_RUNS);
    goto out;
  }
  rc = 0;
out:
  cJSON_Delete(root);
  if (rc)
    manifest_free(m);
  return rc;
}

/* ---------------------------------------------------------------- runs */

static void fmt_num(char *buf, size_t len, double v) {
  snprintf(buf, len, "%.15g", v);
}

static sw_run *expand(const manifest *m, size_t *count) {
  size_t nu = m->nud ? (size_t)m->nud : 1, ng = m->ngpp ? (size_t)m->ngpp : 1;
  size_t n = (size_t)m->ntraces * (size_t)m->nclusters * (size_t)m->nqueues *
             (size_t)m->npolicies * (size_t)m->nseeds * nu * ng;
  sw_run *runs = calloc(n ? n : 1, sizeof *runs);
  if (!runs)
    return NULL;
  size_t r = 0;
  for (int ti = 0; ti < m->ntraces; ti++)
    for (int ci = 0; ci < m->nclusters; ci++)
      for (int qi = 0; qi < m->nqueues; qi++)
        for (int pi = 0; pi < m->npolicies; pi++)
          for (int si = 0; si < m->nseeds; si++)
            for (size_t ui = 0; ui < nu; ui++)
              for (size_t gi = 0; gi < ng; gi++, r++) {
                sw_run *x = &runs[r];
                x->ti = ti, x->ci = ci, x->qi = qi, x->pi = pi, x->si = si;
                x->ui = m->nud ? (int)ui : -1;
                x->gi = m->ngpp ? (int)gi : -1;
                char pol[128], ud[64] = "", gpp[64] = "", v[40];
                research_label(pol, sizeof pol, m->policies[pi]);
                if (x->ui >= 0) {
                  fmt_num(v, sizeof v, m->ud[ui]);
                  snprintf(ud, sizeof ud, "_ud%s", v);
                }
                if (x->gi >= 0) {
                  fmt_num(v, sizeof v, m->gpp[gi]);
                  snprintf(gpp, sizeof gpp, "_gpp%s", v);
                }
                snprintf(x->id, sizeof x->id, "%s_%s_%s_%s_s%" PRIu64 "%s%s",
                         m->traces[ti].label, m->clusters[ci].label,
                         m->queues[qi], pol, m->seeds[si], ud, gpp);
              }
  *count = n;
  return runs;
}

int sweep_manifest_check(const char *file, size_t *nruns, char *err,
                         size_t errlen) {
  manifest m;
  *nruns = 0;
  if (manifest_load(&m, file, err, errlen))
    return -1;
  size_t n = 0;
  sw_run *runs = expand(&m, &n);
  int rc = runs ? 0 : -1;
  if (rc)
    snprintf(err, errlen, "%s: out of memory", file);
  else
    *nruns = n;
  free(runs);
  manifest_free(&m);
  return rc;
}

static void run_dir(char *buf, size_t len, const char *outdir,
                    const sw_run *r) {
  snprintf(buf, len, "%s/runs/%s", outdir, r->id);
}

static int run_done(const char *outdir, const sw_run *r) {
  char p[4096];
  snprintf(p, sizeof p, "%s/runs/%s/summary.json", outdir, r->id);
  return research_exists(p);
}

static trace_load_opts load_opts(const manifest *m, const sw_run *r) {
  trace_load_opts lo = TRACE_LOAD_OPTS_INIT;
  lo.format = m->traces[r->ti].format;
  if (r->gi >= 0)
    lo.swf_gpus_per_proc = m->gpp[r->gi];
  return lo;
}

static int is_builtin(const char *path) {
  return strncmp(path, "builtin:", 8) == 0;
}

static int sw_task(size_t i, pool_slot *slot, void *user) {
  sw_ctx *c = user;
  const manifest *m = c->m;
  const sw_run *r = &c->runs[c->todo[i]];
  char err[ERRLEN] = "";
  const sw_input *ti = &m->traces[r->ti];
  trace own;
  trace_init(&own);
  const trace *t;
  if (is_builtin(ti->path)) { /* generated from the run's seed */
    trace_load_opts lo = load_opts(m, r);
    if (cli_load_trace_as(&own, ti->path, m->seeds[r->si], &lo, err,
                          sizeof err)) {
      fprintf(stderr, "schedsim sweep: run %s: %s\n", r->id, err);
      return 2;
    }
    t = &own;
  } else {
    t = &c->traces[(size_t)r->ti * (size_t)(m->ngpp ? m->ngpp : 1) +
                   (size_t)(r->gi >= 0 ? r->gi : 0)];
  }
  sim_cluster *sc = &c->clusters[r->ci];
  sim_options opt = {0};
  opt.policy = m->policies[r->pi];
  sim_queue_parse(m->queues[r->qi], &opt.queue); /* checked on load */
  opt.seed = m->seeds[r->si];
  opt.unknown_duration_us = r->ui >= 0 ? llround(m->ud[r->ui] * 1e6) : -1;
  opt.progress = pool_progress_cb;
  opt.progress_user = slot;
  atomic_store_explicit(&slot->total, (uint64_t)t->n, memory_order_relaxed);
  run_meta meta = {"replay", opt.policy, m->queues[r->qi], opt.seed,
                   ti->path, sc->name,   sc->nodes,        sc->gpus};
  char tmp[4096], final[4096];
  snprintf(tmp, sizeof tmp, "%s/runs/.%s.tmp.%ld", c->outdir, r->id,
           (long)getpid());
  run_dir(final, sizeof final, c->outdir, r);
  research_rmdir(tmp);
  sim_result res;
  memset(&res, 0, sizeof res);
  int st = cli_replay(sc, c->cat, t, &opt, tmp, &meta, &res, 1);
  sim_result_free(&res);
  trace_free(&own);
  if (st == 0) {
    /* An incomplete directory of the same name (from an older layout or
     * a hand edit) makes way for the complete one. */
    research_rmdir(final);
    if (rename(tmp, final) != 0) {
      fprintf(stderr, "schedsim sweep: run %s: cannot rename %s to %s: %s\n",
              r->id, tmp, final, strerror(errno));
      st = 1;
    }
  }
  if (st)
    research_rmdir(tmp);
  else
    atomic_store_explicit(&slot->done, (uint64_t)t->n, memory_order_relaxed);
  return st;
}

/* Removes DIR/runs/.*.tmp.* left by killed runs. */
static void clean_tmp(const char *outdir) {
  char runs[4096], p[8192];
  snprintf(runs, sizeof runs, "%s/runs", outdir);
  DIR *d = opendir(runs);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] == '.' && strstr(e->d_name, ".tmp.")) {
      snprintf(p, sizeof p, "%s/%s", runs, e->d_name);
      research_rmdir(p);
    }
  closedir(d);
}

static int write_sweep_csv(const char *outdir, const manifest *m,
                           const sw_run *runs, size_t n) {
  char path[4096], err[ERRLEN];
  snprintf(path, sizeof path, "%s/sweep.csv", outdir);
  out_file o;
  if (out_open(&o, path, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    return 1;
  }
  fputs("run_id,trace,trace_format,cluster,queue,policy,seed,"
        "unknown_duration_s,swf_gpus_per_proc,",
        o.f);
  run_metrics_header(o.f);
  fputc('\n', o.f);
  for (size_t i = 0; i < n; i++) {
    const sw_run *r = &runs[i];
    char dir[4096], v[40];
    run_dir(dir, sizeof dir, outdir, r);
    run_metrics met;
    if (run_metrics_read(dir, &met, err, sizeof err)) {
      out_abort(&o);
      fprintf(stderr, "schedsim: %s\n", err);
      return 1;
    }
    csv_write_field(o.f, r->id, 0);
    fputc(',', o.f);
    csv_write_field(o.f, m->traces[r->ti].path, 0);
    fprintf(o.f, ",%s,",
            m->traces[r->ti].format ? trace_format_name(m->traces[r->ti].format)
                                    : "");
    csv_write_field(o.f, m->clusters[r->ci].path, 0);
    fprintf(o.f, ",%s,", m->queues[r->qi]);
    csv_write_field(o.f, m->policies[r->pi], 0);
    fprintf(o.f, ",%" PRIu64 ",", m->seeds[r->si]);
    if (r->ui >= 0) {
      fmt_num(v, sizeof v, m->ud[r->ui]);
      fputs(v, o.f);
    }
    fputc(',', o.f);
    if (r->gi >= 0) {
      fmt_num(v, sizeof v, m->gpp[r->gi]);
      fputs(v, o.f);
    }
    fputc(',', o.f);
    run_metrics_row(o.f, &met);
    fputc('\n', o.f);
  }
  if (out_commit(&o, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    return 1;
  }
  return 0;
}

int cmd_sweep(int argc, char **argv) {
  enum { O_OUT = 1000, O_JOBS, O_DRY, O_QUIET, O_HELP, O_TASK, O_EMIT, O_SMAX };
  static const struct option lo[] = {{"out", required_argument, 0, O_OUT},
                                     {"jobs", required_argument, 0, O_JOBS},
                                     {"dry-run", no_argument, 0, O_DRY},
                                     {"quiet", no_argument, 0, O_QUIET},
                                     {"help", no_argument, 0, O_HELP},
                                     {"task", required_argument, 0, O_TASK},
                                     {"emit-slurm", required_argument, 0, O_EMIT},
                                     {"slurm-max-running", required_argument, 0,
                                      O_SMAX},
                                     {0, 0, 0, 0}};
  const char *outdir = "out/sweep";
  int dry = 0, quiet = 0;
  long workers = 0;
  long task = 0, slurm_max = 4; /* --task (0: all runs), --slurm-max-running */
  const char *emit = NULL;      /* --emit-slurm */
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    char *end;
    switch (c) {
    case O_OUT:
      outdir = optarg;
      break;
    case O_JOBS:
      errno = 0;
      workers = strtol(optarg, &end, 10);
      if (errno || *end || !*optarg || workers < 1 || workers > 4096) {
        fprintf(stderr, "schedsim sweep: --jobs '%s': expected 1..4096\n",
                optarg);
        return 2;
      }
      break;
    case O_DRY:
      dry = 1;
      break;
    case O_QUIET:
      quiet = 1;
      break;
    case O_TASK:
    case O_SMAX: {
      errno = 0;
      long v = strtol(optarg, &end, 10);
      if (errno || *end || !*optarg || v < (c == O_TASK) || v > 1000000) {
        fprintf(stderr, "schedsim sweep: --%s '%s': expected %s\n",
                c == O_TASK ? "task" : "slurm-max-running", optarg,
                c == O_TASK ? "a run number 1.." : "a count 0..");
        return 2;
      }
      *(c == O_TASK ? &task : &slurm_max) = v;
      break;
    }
    case O_EMIT:
      emit = optarg;
      break;
    case 'h':
    case O_HELP:
      sweep_usage(stdout);
      return 0;
    default:
      fprintf(stderr,
              "schedsim sweep: unknown option or missing argument "
              "'%s'\n",
              argv[optind - 1]);
      sweep_usage(stderr);
      return 2;
    }
  }
  if (argc - optind != 1) {
    fprintf(stderr, "schedsim sweep: expected one MANIFEST.json\n");
    sweep_usage(stderr);
    return 2;
  }
  const char *file = argv[optind];
  char err[ERRLEN] = "";
  manifest m;
  if (manifest_load(&m, file, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    return cli_load_status(err);
  }
  int status = 2;
  size_t n = 0, ntodo = 0;
  sw_run *runs = expand(&m, &n);
  size_t *todo = calloc(n ? n : 1, sizeof *todo);
  int *st = calloc(n ? n : 1, sizeof *st);
  gpu_catalog cat;
  int have_cat = 0, ncl = 0;
  size_t ntr = 0;
  sim_cluster *scs = NULL;
  trace *trs = NULL;
  char *need = NULL;
  lsched_registry *reg = NULL;
  if (!runs || !todo || !st) {
    fprintf(stderr, "schedsim: out of memory\n");
    status = 1;
    goto done;
  }
  if (lsched_registry_create(&reg, NULL) || lsched_registry_add_builtins(reg)) {
    fprintf(stderr, "schedsim: cannot create the policy registry\n");
    status = 1;
    goto done;
  }
  for (int i = 0; i < m.npolicies; i++)
    if (!lsched_registry_find(reg, m.policies[i])) {
      fprintf(stderr,
              "schedsim: %s: policies[%d]: unknown policy '%s' "
              "(available:",
              file, i, m.policies[i]);
      for (size_t k = 0; k < lsched_registry_count(reg); k++)
        fprintf(stderr, " %s", lsched_registry_at(reg, k)->name);
      fprintf(stderr, ")\n");
      goto done;
    }
  if (emit) { /* Slurm scripts only (sweep_slurm.c) */
    sweep_slurm_opts so = {emit, file, outdir, n, (int)slurm_max};
    if (sweep_emit_slurm(&so, err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      status = 1;
      goto done;
    }
    printf("schedsim sweep: %s: %zu runs as a Slurm job array in %s "
           "(submit with %s/submit.sh)\n", file, n, emit, emit);
    status = 0;
    goto done;
  }
  if (task > 0 && (size_t)task > n) {
    fprintf(stderr, "schedsim sweep: --task %ld: the manifest has %zu runs\n",
            task, n);
    goto done;
  }
  for (size_t i = 0; i < n; i++)
    if ((!task || i == (size_t)task - 1) && !run_done(outdir, &runs[i]))
      todo[ntodo++] = i;
  if (dry) {
    for (size_t i = 0; i < n; i++) {
      const sw_run *r = &runs[i];
      printf("%s\t%s\ttrace=%s cluster=%s queue=%s policy=%s seed=%" PRIu64,
             r->id, run_done(outdir, r) ? "done" : "todo", m.traces[r->ti].path,
             m.clusters[r->ci].path, m.queues[r->qi], m.policies[r->pi],
             m.seeds[r->si]);
      if (r->ui >= 0)
        printf(" unknown_duration=%.15g", m.ud[r->ui]);
      if (r->gi >= 0)
        printf(" swf_gpus_per_proc=%.15g", m.gpp[r->gi]);
      printf("\n");
    }
    printf("%zu runs: %zu done, %zu to run (dry run: nothing written)\n", n,
           n - ntodo, ntodo);
    status = 0;
    goto done;
  }

  /* Inputs of the runs still to do, loaded once (input errors stop the
   * sweep before any run); the workers share them copy-on-write. */
  if (ntodo > 0) {
    if (cli_load_catalog(&cat, m.catalog, m.prices, m.nprices, err,
                         sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      status = cli_load_status(err);
      goto done;
    }
    have_cat = 1;
    scs = calloc((size_t)m.nclusters, sizeof *scs);
    size_t ng = m.ngpp ? (size_t)m.ngpp : 1;
    trs = calloc((size_t)m.ntraces * ng, sizeof *trs);
    if (!scs || !trs) {
      fprintf(stderr, "schedsim: out of memory\n");
      status = 1;
      goto done;
    }
    for (; ncl < m.nclusters; ncl++)
      if (cli_load_cluster(&scs[ncl], m.clusters[ncl].path, &cat, m.check, err,
                           sizeof err)) {
        fprintf(stderr, "schedsim: %s: clusters[%d]: %s\n", file, ncl, err);
        status = cli_load_status(err);
        goto done;
      }
    ntr = (size_t)m.ntraces * ng;
    /* Only the traces (and SWF rates) of runs still to do. */
    need = calloc(ntr, 1);
    if (!need) {
      fprintf(stderr, "schedsim: out of memory\n");
      status = 1;
      goto done;
    }
    for (size_t i = 0; i < ntodo; i++) {
      const sw_run *r = &runs[todo[i]];
      need[(size_t)r->ti * ng + (size_t)(r->gi >= 0 ? r->gi : 0)] = 1;
    }
    for (size_t k = 0; k < ntr; k++) {
      const sw_input *ti = &m.traces[k / ng];
      if (is_builtin(ti->path) || !need[k])
        continue;
      trace_load_opts tlo = TRACE_LOAD_OPTS_INIT;
      tlo.format = ti->format;
      if (m.ngpp)
        tlo.swf_gpus_per_proc = m.gpp[k % ng];
      if (cli_load_trace_as(&trs[k], ti->path, 1, &tlo, err, sizeof err)) {
        fprintf(stderr, "schedsim: %s: traces[%zu]: %s\n", file, k / ng, err);
        status = cli_load_status(err);
        goto done;
      }
      cli_note_skipped(&trs[k]);
      if (!m.nud)
        for (size_t j = 0; j < trs[k].n; j++)
          if (trs[k].jobs[j].duration_us < 0) {
            fprintf(stderr,
                    "schedsim: %s: traces[%zu]: %s has jobs without a "
                    "duration: give \"parameters\": {\"unknown_duration\": "
                    "[SECONDS]}\n",
                    file, k / ng, ti->path);
            goto done;
          }
    }
  }
  char runsdir[4096];
  snprintf(runsdir, sizeof runsdir, "%s/runs", outdir);
  if (out_mkdir(runsdir, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = 1;
    goto done;
  }
  if (!task) /* other array tasks' runs may be in progress */
    clean_tmp(outdir);
  /* sweep.csv describes a complete sweep only. */
  char csv[4096];
  snprintf(csv, sizeof csv, "%s/sweep.csv", outdir);
  unlink(csv);
  int nw = workers ? (int)workers : pool_default_workers();
  if (ntodo > 0 && (size_t)nw > ntodo)
    nw = (int)ntodo;
  printf("schedsim sweep: %s: %zu runs, %zu already done, %zu to run on %d "
         "worker%s\n",
         file, n, n - ntodo, ntodo, nw, nw > 1 ? "s" : "");
  sw_ctx ctx = {&m, runs, todo, outdir, &cat, scs, trs};
  pool_run(ntodo, nw, sw_task, &ctx, st, !quiet, "sweep");
  status = 0;
  size_t failed = 0;
  for (size_t i = 0; i < ntodo; i++)
    if (st[i]) {
      failed++;
      fprintf(stderr, "schedsim sweep: run %s failed (status %d)\n",
              runs[todo[i]].id, st[i]);
      if (st[i] == 2 || status == 0)
        status = st[i] == 2 ? 2 : 1;
    }
  if (failed) {
    fprintf(stderr,
            "schedsim sweep: %zu of %zu runs failed; sweep.csv not written "
            "(rerun to retry them: finished runs are kept)\n",
            failed, ntodo);
    goto done;
  }
  if (task) /* one array task: the merge step writes sweep.csv */
    goto done;
  status = write_sweep_csv(outdir, &m, runs, n);
  if (status == 0)
    printf("merged %zu runs into %s\n", n, csv);
done:
  for (int i = 0; i < ncl; i++)
    sim_cluster_free(&scs[i]);
  free(scs);
  for (size_t k = 0; k < ntr; k++)
    trace_free(&trs[k]);
  free(trs);
  free(need);
  if (have_cat)
    catalog_free(&cat);
  lsched_registry_destroy(reg);
  free(runs);
  free(todo);
  free(st);
  manifest_free(&m);
  return status;
}
