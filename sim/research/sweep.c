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
 *                   "swf_gpus_per_proc": [0.125, 1],
 *                   "migration_cost": [0, 30]},  (every option of the
 *                   table with a manifest key: sim/cli/options.def)
 *    "catalog": "file.json", "prices": {"G2": 2.0}, "check": false}
 * Relative paths are relative to the manifest's directory.
 *
 * Runs are numbered in that nesting order (traces outermost, parameters
 * innermost, in option table order) and named
 *   <trace>_<cluster>_<queue>_<policy>_s<seed>[_ud<secs>][_gpp<rate>]...
 * (one _<tag><value> per parameter; see expand)
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
#include "output.h"
#include "options.h"
#include "report.h"
#include "research.h"
#include "sweep_slurm.h"

#include <dirent.h>
#include <errno.h>
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

/* Most "parameters" keys: the rows of the option table with a manifest
 * key (options.def). */
#define SW_MAX_PARAMS 32

/* One "parameters" key: the option it sets and its values (a grid axis).
 * args[i] is what the option's parser reads (numbers as %.17g, paths
 * resolved beside the manifest), show[i] what dry runs print (numbers as
 * %.15g), ids[i] the value in run ids (no bytes outside [A-Za-z0-9._-]). */
typedef struct sw_param {
  const cli_option *o;
  int n;
  char **args, **show, **ids;
} sw_param;

typedef struct manifest {
  const char *file;
  sw_input *traces, *clusters;
  int ntraces, nclusters;
  char **policies, **queues;
  int npolicies, nqueues;
  uint64_t *seeds;
  int nseeds;
  /* The "parameters" keys given, in option table order. */
  sw_param params[SW_MAX_PARAMS];
  int nparams;
  /* unknown_duration and swf_gpus_per_proc values as numbers (the
   * sweep.csv columns and the trace loads use them); NULL when not
   * given. */
  double *ud, *gpp;
  int nud, ngpp;
  int synthetic; /* synthetic_load (and durations_from) given */
  char *catalog;
  char **prices; /* "MODEL=USD" */
  int nprices;
  int check;
} manifest;

typedef struct sw_run {
  int ti, ci, qi, pi, si, ui, gi; /* ui, gi: -1 when not swept */
  int pv[SW_MAX_PARAMS]; /* value index of each manifest parameter */
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
  for (int k = 0; k < m->nparams; k++) {
    sw_param *p = &m->params[k];
    for (int i = 0; i < p->n; i++) {
      free(p->args[i]);
      free(p->show[i]);
      free(p->ids[i]);
    }
    free(p->args);
    free(p->show);
    free(p->ids);
  }
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

/* A run id part from a parameter value: every byte outside
 * [A-Za-z0-9._-] becomes '-' (paths: research_label, the base name). */
static void param_id(char *out, size_t size, const char *v, int path) {
  if (path) {
    research_label(out, size, v);
    return;
  }
  size_t o = 0;
  for (; *v && o + 1 < size; v++) {
    char c = *v;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out[o++] = ok ? c : '-';
  }
  out[o] = '\0';
}

/*
 * "parameters": every key is an option of the table with a manifest key
 * (options.def); its value is a list of values (a single value counts as
 * a list of one), each checked by the option's own parser, so a value is
 * valid in a manifest exactly when it is valid on the command line.
 */
static int parse_params(const cJSON *params, manifest *m, char *err,
                        size_t errlen) {
  if (!cJSON_IsObject(params)) {
    snprintf(err, errlen, "%s: 'parameters' must be an object", m->file);
    return -1;
  }
  size_t nopt;
  const cli_option *opts = cli_options(&nopt);
  const char *keys[SW_MAX_PARAMS + 1];
  int nk = 0;
  for (size_t i = 0; i < nopt; i++)
    if (opts[i].mkey && nk < SW_MAX_PARAMS)
      keys[nk++] = opts[i].mkey;
  keys[nk] = NULL;
  if (json_check_keys(params, keys, m->file, "parameters", err, errlen))
    return -1;
  for (size_t oi = 0; oi < nopt; oi++) {
    const cli_option *o = &opts[oi];
    const cJSON *v = o->mkey ? cJSON_GetObjectItemCaseSensitive(params, o->mkey)
                             : NULL;
    if (!v)
      continue;
    int single = !cJSON_IsArray(v);
    int cnt = single ? 1 : cJSON_GetArraySize(v);
    if (cnt == 0 || cnt > MAX_ITEMS) {
      snprintf(err, errlen,
               "%s: parameters.%s: expected a value or a list of 1..%d "
               "values",
               m->file, o->mkey, MAX_ITEMS);
      return -1;
    }
    sw_param *p = &m->params[m->nparams++];
    p->o = o;
    p->args = calloc((size_t)cnt, sizeof *p->args);
    p->show = calloc((size_t)cnt, sizeof *p->show);
    p->ids = calloc((size_t)cnt, sizeof *p->ids);
    if (!p->args || !p->show || !p->ids) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    double *nums = NULL;
    if (o->id == OPT_UNKNOWN || o->id == OPT_SWF_GPP) {
      nums = calloc((size_t)cnt, sizeof *nums);
      if (!nums) {
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      if (o->id == OPT_UNKNOWN)
        m->ud = nums;
      else
        m->gpp = nums;
    }
    for (int i = 0; i < cnt; i++) {
      const cJSON *e = single ? v : cJSON_GetArrayItem(v, i);
      char arg[64], show[64], id[160], perr[512];
      const char *a = arg, *sh = show;
      if (cJSON_IsNumber(e)) {
        snprintf(arg, sizeof arg, "%.17g", e->valuedouble);
        snprintf(show, sizeof show, "%.15g", e->valuedouble);
      } else if (cJSON_IsBool(e)) {
        a = sh = cJSON_IsTrue(e) ? "true" : "false";
      } else if (cJSON_IsString(e)) {
        a = sh = e->valuestring;
      } else {
        snprintf(err, errlen,
                 "%s: parameters.%s[%d]: expected a number, a string or "
                 "true/false",
                 m->file, o->mkey, i);
        return -1;
      }
      p->show[i] = json_strdup(sh);
      p->args[i] = (o->flags & OF_PATH) && cJSON_IsString(e) && a[0]
                       ? resolve(m->file, a)
                       : json_strdup(a);
      if (cJSON_IsBool(e))
        snprintf(id, sizeof id, "%d", cJSON_IsTrue(e));
      else
        param_id(id, sizeof id, sh, (o->flags & OF_PATH) != 0);
      p->ids[i] = json_strdup(id);
      p->n++;
      if (!p->args[i] || !p->show[i] || !p->ids[i]) {
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      /* The option's own parser on a scratch configuration. */
      run_config scratch;
      run_config_init(&scratch);
      if (cli_option_set(o, C_SWEEP, p->args[i], &scratch, perr,
                         sizeof perr)) {
        snprintf(err, errlen, "%s: parameters.%s[%d]: %s", m->file, o->mkey,
                 i, perr);
        return -1;
      }
      for (int k = 0; k < i; k++)
        if (strcmp(p->ids[k], p->ids[i]) == 0) {
          snprintf(err, errlen, "%s: parameters.%s: %s listed twice%s",
                   m->file, o->mkey, p->show[i],
                   strcmp(p->show[k], p->show[i])
                       ? " (as a run id part: give values that differ in "
                         "[A-Za-z0-9._-])"
                       : "");
          return -1;
        }
      if (nums)
        nums[i] = strtod(p->args[i], NULL);
    }
    if (o->id == OPT_UNKNOWN)
      m->nud = cnt;
    else if (o->id == OPT_SWF_GPP)
      m->ngpp = cnt;
  }
  int sl = cJSON_GetObjectItemCaseSensitive(params, "synthetic_load") != NULL;
  int df = cJSON_GetObjectItemCaseSensitive(params, "durations_from") != NULL;
  if (sl != df) {
    snprintf(err, errlen,
             "%s: parameters: synthetic_load and durations_from go together",
             m->file);
    return -1;
  }
  m->synthetic = sl;
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
  if (params && parse_params(params, m, err, errlen))
    goto out;
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
                m->npolicies * m->nseeds;
  for (int k = 0; k < m->nparams; k++)
    runs *= m->params[k].n;
  /* The longest run id (expand): it must fit sw_run.id whole, since a cut
   * id could name two runs alike. */
  size_t idlen = 2 + 20 + 4, longest;
  sw_input *ins[2] = {m->traces, m->clusters};
  int nins[2] = {m->ntraces, m->nclusters};
  for (int k = 0; k < 2; k++) {
    longest = 0;
    for (int i = 0; i < nins[k]; i++)
      if (strlen(ins[k][i].label) > longest)
        longest = strlen(ins[k][i].label);
    idlen += longest;
  }
  char **strs[2] = {m->queues, m->policies};
  int nstrs[2] = {m->nqueues, m->npolicies};
  for (int k = 0; k < 2; k++) {
    longest = 0;
    for (int i = 0; i < nstrs[k]; i++)
      if (strlen(strs[k][i]) > longest)
        longest = strlen(strs[k][i]);
    idlen += longest;
  }
  for (int k = 0; k < m->nparams; k++) {
    const sw_param *p = &m->params[k];
    longest = 0;
    for (int i = 0; i < p->n; i++)
      if (strlen(p->ids[i]) > longest)
        longest = strlen(p->ids[i]);
    idlen += 1 + strlen(p->o->idtag ? p->o->idtag : p->o->mkey) + longest;
  }
  if (idlen >= sizeof(((sw_run *)0)->id)) {
    snprintf(err, errlen,
             "%s: run ids would be up to %zu bytes long (at most %zu): "
             "give shorter labels or parameter values",
             file, idlen, sizeof(((sw_run *)0)->id) - 1);
    goto out;
  }
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

/* Writes one id component: as is, or (escaped) with every '_' written
 * "%5F", so that the '_' joining the components is unambiguous (labels
 * and values are made of [A-Za-z0-9._-], never '%'). */
static int put_part(char *buf, size_t size, int len, const char *sep,
                    const char *a, const char *b, int escaped) {
  if (len < 0 || (size_t)len >= size)
    return -1;
  len += snprintf(buf + len, size - (size_t)len, "%s%s", sep, a);
  for (const char *q = b; q && *q && len >= 0 && (size_t)len < size; q++)
    len += escaped && *q == '_'
               ? snprintf(buf + len, size - (size_t)len, "%%5F")
               : snprintf(buf + len, size - (size_t)len, "%c", *q);
  return len;
}

/* Run r's id (see expand); -1 when it does not fit. */
static int make_id(const manifest *m, sw_run *x, int escaped) {
  char pol[128], seed[32];
  research_label(pol, sizeof pol, m->policies[x->pi]);
  snprintf(seed, sizeof seed, "%" PRIu64, m->seeds[x->si]);
  size_t sz = sizeof x->id;
  int len = put_part(x->id, sz, 0, "", "", m->traces[x->ti].label, escaped);
  len = put_part(x->id, sz, len, "_", "", m->clusters[x->ci].label, escaped);
  len = put_part(x->id, sz, len, "_", "", m->queues[x->qi], escaped);
  len = put_part(x->id, sz, len, "_", "", pol, escaped);
  len = put_part(x->id, sz, len, "_", "s", seed, escaped);
  for (int k = 0; k < m->nparams; k++) {
    const sw_param *p = &m->params[k];
    len = put_part(x->id, sz, len, "_", p->o->idtag ? p->o->idtag : p->o->mkey,
                   p->ids[x->pv[k]], escaped);
  }
  return len < 0 || (size_t)len >= sz ? -1 : 0;
}

static int cmp_id(const void *a, const void *b) {
  const sw_run *const *x = a, *const *y = b;
  return strcmp((*x)->id, (*y)->id);
}

/* 0 when every id is distinct; else 1 with the first two runs sharing
 * one in *a, *b (indices in manifest order); -1 out of memory. */
static int find_shared_id(const sw_run *runs, size_t n, size_t *a, size_t *b) {
  const sw_run **v = malloc((n ? n : 1) * sizeof *v);
  if (!v)
    return -1;
  for (size_t i = 0; i < n; i++)
    v[i] = &runs[i];
  qsort(v, n, sizeof *v, cmp_id);
  int found = 0;
  for (size_t i = 1; i < n && !found; i++)
    if (strcmp(v[i - 1]->id, v[i]->id) == 0) {
      size_t p = (size_t)(v[i - 1] - runs), q = (size_t)(v[i] - runs);
      *a = p < q ? p : q;
      *b = p < q ? q : p;
      found = 1;
    }
  free(v);
  return found;
}

/* Runs in manifest order: traces outermost, then clusters, queues,
 * policies, seeds and the parameters in option table order (the last
 * varies fastest). Ids: <trace>_<cluster>_<queue>_<policy>_s<seed>, then
 * _<tag><value> per parameter (tags "ud" and "gpp" for unknown_duration
 * and swf_gpus_per_proc, as before the table; else the manifest key).
 * Labels may contain '_', so two runs could join to the same id (trace
 * labels a and a_b, cluster labels b_c and c): when any two would, every
 * '_' inside a component is written "%5F" in all of the sweep's ids,
 * which makes them distinct (manifests without such a clash keep the ids
 * they always had, so their sweeps resume). A manifest whose runs would
 * still share an id is refused. NULL with err set (out of memory, an id
 * too long, a shared id). */
static sw_run *expand(const manifest *m, size_t *count, char *err,
                      size_t errlen) {
  size_t np = 1;
  for (int k = 0; k < m->nparams; k++)
    np *= (size_t)m->params[k].n;
  size_t n = (size_t)m->ntraces * (size_t)m->nclusters * (size_t)m->nqueues *
             (size_t)m->npolicies * (size_t)m->nseeds * np;
  sw_run *runs = calloc(n ? n : 1, sizeof *runs);
  if (!runs) {
    snprintf(err, errlen, "%s: out of memory", m->file);
    return NULL;
  }
  size_t r = 0;
  for (int ti = 0; ti < m->ntraces; ti++)
    for (int ci = 0; ci < m->nclusters; ci++)
      for (int qi = 0; qi < m->nqueues; qi++)
        for (int pi = 0; pi < m->npolicies; pi++)
          for (int si = 0; si < m->nseeds; si++)
            for (size_t c = 0; c < np; c++, r++) {
              sw_run *x = &runs[r];
              x->ti = ti, x->ci = ci, x->qi = qi, x->pi = pi, x->si = si;
              x->ui = x->gi = -1;
              size_t rest = c;
              for (int k = m->nparams - 1; k >= 0; k--) {
                x->pv[k] = (int)(rest % (size_t)m->params[k].n);
                rest /= (size_t)m->params[k].n;
                if (m->params[k].o->id == OPT_UNKNOWN)
                  x->ui = x->pv[k];
                else if (m->params[k].o->id == OPT_SWF_GPP)
                  x->gi = x->pv[k];
              }
            }
  size_t a = 0, b = 0;
  int shared = 0;
  for (int escaped = 0; escaped < 2; escaped++) {
    for (size_t i = 0; i < n; i++)
      if (make_id(m, &runs[i], escaped)) {
        snprintf(err, errlen,
                 "%s: run %zu's id is longer than %zu bytes: give shorter "
                 "labels or parameter values",
                 m->file, i + 1, sizeof runs[i].id - 1);
        free(runs);
        return NULL;
      }
    shared = find_shared_id(runs, n, &a, &b);
    if (shared <= 0)
      break;
  }
  if (shared != 0) {
    if (shared < 0)
      snprintf(err, errlen, "%s: out of memory", m->file);
    else
      snprintf(err, errlen,
               "%s: runs %zu and %zu would share the run id '%s' (and its "
               "directory): give the traces, clusters or parameter values "
               "distinct labels",
               m->file, a + 1, b + 1, runs[a].id);
    free(runs);
    return NULL;
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
  sw_run *runs = expand(&m, &n, err, errlen);
  int rc = runs ? 0 : -1;
  if (!rc)
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
  if (!research_exists(p))
    return 0;
  snprintf(p, sizeof p, "%s/runs/%s", outdir, r->id);
  return out_dir_complete(p); /* a run stopped while writing is redone */
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
  /* The run's options: its grid point of the manifest's parameters, each
   * through the option table as on the command line (checked on load). */
  run_config rc;
  run_config_init(&rc);
  rc.seed = m->seeds[r->si];
  for (int k = 0; k < m->nparams; k++) {
    const sw_param *p = &m->params[k];
    if (cli_option_set(p->o, C_SWEEP, p->args[r->pv[k]], &rc, err,
                       sizeof err)) {
      fprintf(stderr, "schedsim sweep: run %s: %s: %s\n", r->id, p->o->mkey,
              err);
      trace_free(&own);
      return 2;
    }
  }
  /* Synthetic times depend on the cluster and the seed: the run rewrites
   * its trace, its own copy since the fork (or the one it generated). */
  int sst = run_config_synthetic_times(&rc, (trace *)t, NULL, sc->gpus, err,
                                       sizeof err);
  if (sst) {
    fprintf(stderr, "schedsim sweep: run %s: %s\n", r->id, err);
    trace_free(&own);
    return sst;
  }
  sim_options opt;
  run_config_sim_options(&rc, &opt);
  opt.policy = m->policies[r->pi];
  sim_queue_parse(m->queues[r->qi], &opt.queue); /* checked on load */
  opt.seed = m->seeds[r->si];
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

/* unknown_duration and swf_gpus_per_proc have had their own sweep.csv
 * columns (unknown_duration_s, swf_gpus_per_proc) since before the option
 * table. */
static int own_column(const cli_option *o) {
  return !strcmp(o->mkey, "unknown_duration") ||
         !strcmp(o->mkey, "swf_gpus_per_proc");
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
  /* Every other swept parameter gets a column of its own, named by its
   * manifest key, after the metric columns (so the columns before them
   * keep their places whatever a manifest sweeps). */
  for (int k = 0; k < m->nparams; k++)
    if (!own_column(m->params[k].o))
      fprintf(o.f, ",%s", m->params[k].o->mkey);
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
    for (int k = 0; k < m->nparams; k++)
      if (!own_column(m->params[k].o)) {
        fputc(',', o.f);
        csv_write_field(o.f, m->params[k].show[r->pv[k]], 0);
      }
    fputc('\n', o.f);
  }
  if (out_commit(&o, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    return 1;
  }
  return 0;
}

/* DIR/report.html of a complete sweep: the answer (a run's baseline is
 * first-fit of the run id with its policy taken out: same trace, cluster,
 * queue, seed and parameters), the table, links to runs/<id>/. */
static int write_sweep_report(const char *outdir, const manifest *m,
                              const sw_run *runs, size_t n) {
  char err[ERRLEN];
  run_metrics *met = calloc(n ? n : 1, sizeof *met);
  report_run *rr = calloc(n ? n : 1, sizeof *rr);
  char(*group)[1024] = calloc(n ? n : 1, sizeof *group);
  char(*dir)[1100] = calloc(n ? n : 1, sizeof *dir);
  int status = 0;
  if (!met || !rr || !group || !dir) {
    fprintf(stderr, "schedsim: out of memory\n");
    status = 1;
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    const sw_run *r = &runs[i];
    char path[4096], pol[160];
    run_dir(path, sizeof path, outdir, r);
    if (run_metrics_read(path, &met[i], err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      status = 1;
      goto out;
    }
    research_label(pol, sizeof pol, m->policies[r->pi]);
    snprintf(pol + strlen(pol), sizeof pol - strlen(pol), "_s");
    const char *at = strstr(r->id, pol);
    size_t head = at ? (size_t)(at - r->id) : strlen(r->id);
    snprintf(group[i], sizeof group[i], "%.*s%s", (int)head, r->id,
             at ? at + strlen(pol) - 1 : "");
    snprintf(dir[i], sizeof dir[i], "runs/%s", r->id);
    rr[i].label = r->id;
    rr[i].group = group[i];
    rr[i].policy = m->policies[r->pi];
    rr[i].dir = dir[i];
    rr[i].m = &met[i];
  }
  char l0[4200], l1[200];
  snprintf(l0, sizeof l0, "manifest %s", m->file);
  snprintf(l1, sizeof l1, "%zu runs: %d trace%s x %d cluster%s x %d queue%s "
           "x %d polic%s x %d seed%s, and the parameters; outputs: sweep.csv "
           "and runs/<id>/", n, m->ntraces, m->ntraces > 1 ? "s" : "",
           m->nclusters, m->nclusters > 1 ? "s" : "", m->nqueues,
           m->nqueues > 1 ? "s" : "", m->npolicies,
           m->npolicies > 1 ? "ies" : "y", m->nseeds, m->nseeds > 1 ? "s" : "");
  const char *setup[2] = {l0, l1};
  if (report_write_html(outdir, "schedsim sweep", setup, 2, rr, n, err,
                        sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = 1;
  }
out:
  free(met);
  free(rr);
  free(group);
  free(dir);
  return status;
}

int cmd_sweep(int argc, char **argv) {
  run_config o;
  char *pos[8];
  int npos;
  int pst = cli_parse(C_SWEEP, argc, argv, &o, pos, 8, &npos);
  if (pst >= 0)
    return pst;
  const char *outdir = o.out ? o.out : "out/sweep";
  int dry = o.dry_run, quiet = o.quiet;
  long workers = (long)o.workers;
  /* --task (0: all runs), --slurm-max-running, --emit-slurm */
  long task = (long)o.task, slurm_max = (long)o.slurm_max;
  const char *emit = o.emit_slurm;
  if (npos != 1) {
    fprintf(stderr, "schedsim sweep: expected one MANIFEST.json\n");
    cli_help(C_SWEEP, stderr);
    return 2;
  }
  const char *file = pos[0];
  char err[ERRLEN] = "";
  manifest m;
  if (manifest_load(&m, file, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    return cli_load_status(err);
  }
  int status = 2;
  size_t n = 0, ntodo = 0;
  sw_run *runs = expand(&m, &n, err, sizeof err);
  if (!runs) {
    fprintf(stderr, "schedsim: %s\n", err);
    manifest_free(&m);
    return strstr(err, "out of memory") ? 1 : 2;
  }
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
      for (int k = 0; k < m.nparams; k++)
        printf(" %s=%s", m.params[k].o->mkey,
               m.params[k].show[r->pv[k]]);
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
    /* The durations_from traces are read by each run (its synthetic
     * times depend on its cluster and seed); read here once each, so that
     * a bad one stops the sweep before any run. */
    for (int k = 0; k < m.nparams; k++)
      for (int i = 0; m.params[k].o->id == OPT_DUR_FROM && i < m.params[k].n;
           i++) {
        trace from;
        trace_init(&from);
        trace_error te;
        te.msg[0] = 0;
        int bad = trace_load(&from, m.params[k].args[i], &te);
        trace_free(&from);
        if (bad) {
          fprintf(stderr, "schedsim: %s: parameters.durations_from[%d]: %s\n",
                  file, i, te.msg);
          status = cli_load_status(te.msg);
          goto done;
        }
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
      if (!m.nud && !m.synthetic)
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
    status = write_sweep_report(outdir, &m, runs, n);
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
