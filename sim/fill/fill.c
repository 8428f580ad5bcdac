/*
 * Fill mode and `schedsim fill` (see fill.h). Definitions follow the issue
 * text and docs/DESIGN.md section 5; where the authors' simulator
 * (hkust-adsl/kubernetes-scheduler-simulator) differs, the comments say so.
 */
#include "fill.h"
#include "request.h"
#include "clock.h"
#include "cli.h"
#include "gorand.h"
#include "jsonutil.h"
#include "options.h"
#include "output.h"
#include "research.h"
#include "typical.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ERRLEN 1024
#define MAX_SEEDS 4096
/* Draws of the shared generator between the tuning and the node order in
 * the authors' simulator (see fill_run_seed, step 3). */
#define PERM_SKIP 10

/* ------------------------------------------------------------ ordering */

/* The authors sort pods and nodes by name before drawing (sort.Slice on
 * unique names): the random draws index that order. */
typedef struct named {
  const char *name;
  uint32_t idx;
} named;

static int cmp_named(const void *a, const void *b) {
  return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

/* out[i] = index of the i-th name in byte order. 0 or -1 (out of memory). */
static int order_by_name(const char *const *names, size_t n, uint32_t *out) {
  named *v = malloc((n ? n : 1) * sizeof *v);
  if (!v)
    return -1;
  for (size_t i = 0; i < n; i++) {
    v[i].name = names[i];
    v[i].idx = (uint32_t)i;
  }
  qsort(v, n, sizeof *v, cmp_named);
  for (size_t i = 0; i < n; i++)
    out[i] = v[i].idx;
  free(v);
  return 0;
}

static int pods_by_name(const trace *t, uint32_t *out) {
  size_t n = t->n;
  const char **names = malloc((n ? n : 1) * sizeof *names);
  if (!names)
    return -1;
  for (size_t i = 0; i < n; i++)
    names[i] = trace_job_name(t, i);
  int rc = order_by_name(names, n, out);
  free(names);
  return rc;
}

static int nodes_by_name(lsched_cluster *c, uint32_t *out) {
  int nn = lsched_cluster_node_count(c);
  const char **names = malloc((nn ? (size_t)nn : 1) * sizeof *names);
  if (!names)
    return -1;
  for (int i = 0; i < nn; i++) {
    lsched_node_info ni;
    lsched_cluster_node_info(c, i, &ni);
    names[i] = ni.name;
  }
  int rc = order_by_name(names, (size_t)nn, out);
  free(names);
  return rc;
}

int fill_name_orders(const fill_setup *fs, uint32_t **pods_byname,
                     uint32_t **nodes_byname) {
  size_t n = fs->t->n;
  int nn = lsched_cluster_node_count(fs->sc->c);
  *pods_byname = malloc((n ? n : 1) * sizeof **pods_byname);
  *nodes_byname = malloc((nn ? (size_t)nn : 1) * sizeof **nodes_byname);
  if (*pods_byname && *nodes_byname &&
      pods_by_name(fs->t, *pods_byname) == 0 &&
      nodes_by_name(fs->sc->c, *nodes_byname) == 0)
    return 0;
  free(*pods_byname);
  free(*nodes_byname);
  *pods_byname = *nodes_byname = NULL;
  return -1;
}

/* ------------------------------------------------------------- one seed */

static int64_t demand(const job_record *j) {
  return j->num_gpu > 0 ? (int64_t)j->num_gpu * j->gpu_milli : 0;
}

int fill_run_seed(const fill_setup *fs, uint64_t seed, fill_seed_result *out,
                  fill_record **rows_out, size_t *nrows_out, char *err,
                  size_t errlen) {
  const trace *t = fs->t;
  lsched_cluster *c = fs->sc->c;
  memset(out, 0, sizeof *out);
  out->seed = seed;
  if (rows_out) {
    *rows_out = NULL;
    *nrows_out = 0;
  }
  int rc = -2, lrc = 0;
  uint32_t *pods = NULL, *byname_own = NULL;
  const uint32_t *byname = fs->pods_byname;
  int *order = NULL;
  fill_record *rows = NULL;
  lsched_placement *pl = NULL;
  uint8_t *placed = NULL;
  lsched_registry *reg = NULL;
  lsched_policy *pol = NULL;
  lsched_fragmeter *meter = NULL;
  size_t n0 = t->n, n = n0, cap = n0 + 16;
  lsched_totals tot;
  lsched_cluster_totals(c, &tot);
  const int64_t cap_milli = tot.gpu_milli;

  if (n0 == 0 || n0 > UINT32_MAX) {
    snprintf(err, errlen, "%s: the trace has no jobs", t->path);
    return -1;
  }
  /* The pod list sorted by name; tuning draws index it too. */
  pods = malloc(cap * sizeof *pods);
  if (!pods)
    goto oom;
  if (!byname) {
    byname_own = malloc(n0 * sizeof *byname_own);
    if (!byname_own || pods_by_name(t, byname_own))
      goto oom;
    byname = byname_own;
  }
  memcpy(pods, byname, n0 * sizeof *pods);
  /* Every draw comes from Go's math/rand seeded with the seed, in the
   * authors' order (core.go Simulate): one rand.Int() (a debug log's
   * argument), the shuffle, the tuning draws, then rand.Perm over the
   * nodes. So a seed gives exactly their pod sequence. */
  uint64_t cooked_local[GORAND_LEN];
  const uint64_t *cooked = fs->go_cooked;
  if (!cooked) {
    if (gorand_cook(cooked_local))
      goto oom;
    cooked = cooked_local;
  }
  gorand *g = malloc(sizeof *g);
  if (!g)
    goto oom;
  gorand_seed(g, cooked, (int64_t)seed);
  (void)gorand_int63(g);
  /* 1. Shuffle (rand.Shuffle). */
  gorand_shuffle_u32(g, pods, n0);
  /* 2. Tune to tune x capacity. Below it: append pods drawn uniformly with
   * replacement from the original list (rand.Intn over the name order)
   * until the next one would exceed it (the rule; the authors'
   * tuneUpPods tests the pod's per-GPU milli instead of its total, which
   * lets a last multi-GPU pod overshoot by at most 7 GPUs, 0.1% of this
   * cluster, and may draw a few more pods after it). Above it (multigpu30
   * asks 130.2%): the issue does not say; we follow their tuneDownPods and
   * remove uniformly drawn pods while the total exceeds it. */
  int64_t total = 0;
  int any_gpu = 0;
  for (size_t i = 0; i < n0; i++) {
    total += demand(&t->jobs[i]);
    any_gpu |= demand(&t->jobs[i]) > 0;
  }
  double target = fs->tune * (double)cap_milli;
  if (any_gpu && (double)total < target) {
    for (;;) {
      uint32_t idx = byname[gorand_intn(g, (int64_t)n0)];
      int64_t d = demand(&t->jobs[idx]);
      if ((double)(total + d) > target) {
        /* Their test, on the per-GPU milli, would still take a multi-GPU
         * pod that overshoots and then stop at the next draw (the total is
         * above the target by then). We stop here, as the issue says, but
         * make that draw so the generator is where theirs is when the node
         * order is drawn (step 3). */
        int64_t per_gpu = t->jobs[idx].num_gpu > 0 ? t->jobs[idx].gpu_milli : 0;
        if ((double)(total + per_gpu) <= target)
          (void)gorand_intn(g, (int64_t)n0);
        break;
      }
      if (n == cap) {
        cap *= 2;
        uint32_t *np = realloc(pods, cap * sizeof *np);
        if (!np) {
          free(g);
          goto oom;
        }
        pods = np;
      }
      pods[n++] = idx;
      total += d;
    }
  } else if ((double)total > target) {
    while ((double)total > target && n > 0) {
      size_t idx = (size_t)gorand_intn(g, (int64_t)n);
      total -= demand(&t->jobs[pods[idx]]);
      memmove(&pods[idx], &pods[idx + 1], (n - idx - 1) * sizeof *pods);
      n--;
    }
  }
  /* 3. A seed-fixed random node order: the authors' rand.Perm over the
   * nodes sorted by name gives node i the name prefix perm[i]
   * (simulator.go syncClusterResourceList, "%04d-" + name); we visit the
   * nodes in that prefix order, and ties go to the earliest node in it, as
   * their patched kube-scheduler's selectHost keeps the lexicographically
   * smallest name among equal scores (vendor/.../core/generic_scheduler.go).
   *
   * Their Perm is not drawn right after the tuning: RunCluster first starts
   * the scheduler's informers, and each informer's reflector draws
   * rand.Float64() from the same global generator for its watch timeout
   * (client-go Reflector.ListAndWatch) before the nodes are created. So the
   * permutation comes PERM_SKIP draws later (10: we take it to be one per
   * informer the scheduler starts there). With 10, dot-product,
   * gpu-clustering, gpu-packing and best-fit, whose ties make the node
   * order visible, reproduce their published per-seed allocation curves
   * (every bin 0..130, to their 2 decimals) for all 8 traces x seeds
   * 42..51, and their fragmentation curves too except on gpuspec10 (whose
   * target workload differs slightly, see README); with the draw taken
   * right after the tuning (0) no seed matched, and of 0..20 only 10 did. */
  int nn = lsched_cluster_node_count(c);
  size_t nz = nn ? (size_t)nn : 1;
  order = malloc(nz * sizeof *order);
  int *perm = malloc(nz * sizeof *perm);
  uint32_t *nodes_own = NULL;
  const uint32_t *nodes_byname = fs->nodes_byname;
  if (!nodes_byname) {
    nodes_own = malloc(nz * sizeof *nodes_own);
    if (nodes_own && nodes_by_name(c, nodes_own) == 0)
      nodes_byname = nodes_own;
  }
  int okn = order && perm && nodes_byname;
  if (okn) {
    for (int k = 0; k < PERM_SKIP; k++)
      (void)gorand_int63(g); /* rand.Float64 is one Int63 (see above) */
    gorand_perm(g, perm, nn);
    for (int i = 0; i < nn; i++)
      order[perm[i]] = (int)nodes_byname[i];
  }
  free(perm);
  free(nodes_own);
  free(g);
  if (!okn)
    goto oom;
  if ((lrc = lsched_cluster_set_order(c, order, nn)))
    goto internal;
  /* 4. The policy (seeded with the same seed) and the meter. */
  if ((lrc = lsched_registry_create(&reg, NULL)) ||
      (lrc = lsched_registry_add_builtins(reg)))
    goto internal;
  const lsched_policy_ops *ops = lsched_registry_find(reg, fs->policy);
  if (!ops) {
    int len = snprintf(err, errlen, "unknown policy '%s' (available:",
                       fs->policy);
    for (size_t i = 0; i < lsched_registry_count(reg) && len > 0 &&
                       (size_t)len < errlen;
         i++)
      len += snprintf(err + len, errlen - (size_t)len, " %s",
                      lsched_registry_at(reg, i)->name);
    if (len > 0 && (size_t)len < errlen)
      snprintf(err + len, errlen - (size_t)len, ")");
    rc = -1;
    goto out;
  }
  if ((lrc = lsched_policy_create(&pol, c, ops)))
    goto internal;
  char seedbuf[32];
  snprintf(seedbuf, sizeof seedbuf, "%" PRIu64, seed);
  lrc = lsched_policy_set_param(pol, "seed", seedbuf);
  if (lrc != LSCHED_OK && lrc != LSCHED_ENOENT)
    goto internal;
  lrc = lsched_policy_set_workload(pol, fs->wl);
  if (lrc != LSCHED_OK && lrc != LSCHED_ENOENT)
    goto internal;
  if ((lrc = lsched_fragmeter_create(&meter, c, fs->wl)))
    goto internal;
  /* 5. Each pod once: placed or failed; a record after each. */
  rows = malloc(n * sizeof *rows);
  pl = malloc(n * sizeof *pl);
  placed = calloc(n, 1);
  if (!rows || !pl || !placed)
    goto oom;
  int64_t arrived = 0, alloc = 0;
  for (size_t i = 0; i < n; i++) {
    const job_record *jr = &t->jobs[pods[i]];
    arrived += demand(jr);
    int absent = jr->gpu_spec >= 0 && jr->num_gpu > 0 &&
                 fs->spec_absent[jr->gpu_spec];
    if (!absent) {
      lsched_request q;
      sim_job_request(jr, jr->gpu_spec >= 0 ? fs->spec_mask[jr->gpu_spec] : 0,
                      &q);
      lrc = lsched_policy_place(pol, &q, &pl[i]);
      if (lrc == LSCHED_OK) {
        if ((lrc = lsched_alloc(c, &pl[i]))) {
          snprintf(err, errlen, "pod %s: policy %s: %s (%s)",
                   trace_job_name(t, pods[i]), fs->policy, lsched_strerror(lrc),
                   lsched_cluster_errmsg(c));
          goto out;
        }
        placed[i] = 1;
        alloc += (int64_t)pl[i].gpu_count * pl[i].gpu_milli;
      } else if (lrc != LSCHED_ENOFIT && lrc != LSCHED_ENEVER) {
        goto internal;
      }
    }
    if (!placed[i])
      out->failed++;
    lsched_frag f;
    lsched_fragmeter_get(meter, &f);
    rows[i].arrived_milli = arrived;
    rows[i].alloc_milli = alloc;
    rows[i].frag_weighted = f.amount_weighted;
    rows[i].idle_milli = f.idle_gpu_milli;
  }
  out->pods = n;
  fill_bin(rows, n, cap_milli, lsched_workload_weight(fs->wl), &out->bins);
  if (rows_out) {
    *rows_out = rows;
    *nrows_out = n;
    rows = NULL;
  }
  rc = 0;
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
  rc = -2;
  goto out;
internal:
  snprintf(err, errlen, "policy %s: %s (%s)", fs->policy,
           lsched_strerror(lrc), lsched_cluster_errmsg(c));
  rc = -2;
out:
  /* The policy and the meter go first: the releases below need not be
   * followed by their hooks and indexes (their state dies with them). */
  lsched_fragmeter_destroy(meter);
  lsched_policy_destroy(pol);
  /* Release everything (in reverse), so the cluster is idle again. */
  if (placed)
    for (size_t i = n; i-- > 0;)
      if (placed[i] && lsched_release(c, &pl[i]) && rc == 0) {
        snprintf(err, errlen, "release failed: %s", lsched_cluster_errmsg(c));
        rc = -2;
      }
  /* Composable pools: GPUs the releases left attached go back to their
   * chassis (fill mode has no detach time), so every seed starts alike. */
  for (int i = 0; lsched_cluster_pool_count(c) > 0 &&
                  i < lsched_cluster_node_count(c);
       i++)
    lsched_pool_detach(c, i, ~UINT64_C(0));
  lsched_registry_destroy(reg);
  free(placed);
  free(pl);
  free(rows);
  free(order);
  free(pods);
  free(byname_own);
  return rc;
}

/* ---------------------------------------------------------------- bins */

/* Round half to even of num / den (num >= 0, den > 0), as Python's round(),
 * which the authors' scripts apply to the arrived ratio. */
static int64_t round_half_even(int64_t num, int64_t den) {
  int64_t q = num / den, r = num % den;
  if (2 * r > den || (2 * r == den && (q & 1)))
    q++;
  return q;
}

void fill_bin(const fill_record *rows, size_t n, int64_t cap_milli,
              uint64_t W, fill_bins *out) {
  double sa[FILL_BINS] = {0}, sf[FILL_BINS] = {0}, sr[FILL_BINS] = {0};
  size_t cnt[FILL_BINS] = {0};
  memset(out, 0, sizeof *out);
  if (cap_milli <= 0)
    return;
  for (size_t i = 0; i < n; i++) {
    const fill_record *x = &rows[i];
    int64_t b = round_half_even(100 * x->arrived_milli, cap_milli);
    if (b < 0 || b >= FILL_BINS)
      continue;
    double frag = W ? (double)x->frag_weighted / (double)W : 0.0;
    sa[b] += 100.0 * (double)x->alloc_milli / (double)cap_milli;
    sf[b] += 100.0 * frag / (double)cap_milli;
    sr[b] += x->idle_milli > 0 ? 100.0 * frag / (double)x->idle_milli : 0.0;
    cnt[b]++;
  }
  for (int b = 0; b < FILL_BINS; b++) {
    double a = sa[b], f = sf[b], q = sr[b];
    size_t k = cnt[b];
    if (k == 0) { /* the mean over the neighbours within +-1 */
      for (int d = -1; d <= 1; d += 2) {
        int nb = b + d;
        if (nb < 0 || nb >= FILL_BINS)
          continue;
        a += sa[nb];
        f += sf[nb];
        q += sr[nb];
        k += cnt[nb];
      }
    }
    if (k == 0)
      continue;
    out->has[b] = 1;
    out->alloc_pct[b] = a / (double)k;
    out->frag_amount_pct[b] = f / (double)k;
    out->frag_rate_pct[b] = q / (double)k;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* which: 0 unalloc, 1 frag amount, 2 frag rate */
static double median_of(const fill_seed_result *r, size_t n, int b,
                        int which) {
  if (b < 0 || b >= FILL_BINS || n == 0)
    return NAN;
  /* Up to MAX_SEEDS values on the stack: a failed malloc returned NAN,
   * which summary.json then showed as a missing median (null) without
   * any error (tests/test_faults.c). */
  double stack[MAX_SEEDS];
  double *v = n <= MAX_SEEDS ? stack : malloc(n * sizeof *v);
  if (!v)
    return NAN;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const fill_bins *x = &r[i].bins;
    if (!x->has[b])
      continue;
    v[k++] = which == 0   ? 100.0 - x->alloc_pct[b]
             : which == 1 ? x->frag_amount_pct[b]
                          : x->frag_rate_pct[b];
  }
  double m = NAN;
  if (k > 0) {
    qsort(v, k, sizeof *v, cmp_double);
    m = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
  }
  if (v != stack)
    free(v);
  return m;
}

double fill_median_unalloc(const fill_seed_result *r, size_t n, int b) {
  return median_of(r, n, b, 0);
}
double fill_median_frag_amount(const fill_seed_result *r, size_t n, int b) {
  return median_of(r, n, b, 1);
}
double fill_median_frag_rate(const fill_seed_result *r, size_t n, int b) {
  return median_of(r, n, b, 2);
}

/* ---------------------------------------------------------------- seeds */

static int parse_u64_strict(const char *s, const char *end, uint64_t *out) {
  if (s == end)
    return -1;
  uint64_t v = 0;
  for (const char *p = s; p < end; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
      return -1;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  *out = v;
  return 0;
}

int fill_parse_seeds(const char *s, uint64_t *seeds, size_t max, size_t *n,
                     char *err, size_t errlen) {
  *n = 0;
  if (!s || !*s) {
    snprintf(err, errlen, "empty seed list");
    return -1;
  }
  const char *p = s;
  for (;;) {
    const char *comma = strchr(p, ',');
    const char *end = comma ? comma : p + strlen(p);
    const char *dash = memchr(p, '-', (size_t)(end - p));
    uint64_t a, b;
    if (dash ? parse_u64_strict(p, dash, &a) || parse_u64_strict(dash + 1, end, &b)
             : parse_u64_strict(p, end, &a)) {
      snprintf(err, errlen,
               "bad seed list '%s': expected N, A-B or a comma-separated "
               "list of them",
               s);
      return -1;
    }
    if (!dash)
      b = a;
    if (b < a) {
      snprintf(err, errlen, "bad seed range in '%s': %" PRIu64 " > %" PRIu64,
               s, a, b);
      return -1;
    }
    for (uint64_t v = a;; v++) {
      if (*n == max) {
        snprintf(err, errlen, "more than %zu seeds in '%s'", max, s);
        return -1;
      }
      seeds[(*n)++] = v;
      if (v == b)
        break;
    }
    if (!comma)
      break;
    p = comma + 1;
  }
  return 0;
}

/* --------------------------------------------------------------- output */

static void csv_num(FILE *f, double v) { fprintf(f, ",%.4f", v); }

int fill_write_csv(const char *path, const fill_seed_result *r, size_t n,
                   char *err, size_t errlen) {
  out_file o;
  if (out_open(&o, path, err, errlen))
    return -1;
  fputs("seed,arrived_pct,alloc_pct,unalloc_pct,frag_amount_pct,"
        "frag_rate_pct\n",
        o.f);
  for (size_t i = 0; i < n; i++) {
    const fill_bins *b = &r[i].bins;
    for (int k = 0; k < FILL_BINS; k++) {
      fprintf(o.f, "%" PRIu64 ",%d", r[i].seed, k);
      if (b->has[k]) {
        csv_num(o.f, b->alloc_pct[k]);
        csv_num(o.f, 100.0 - b->alloc_pct[k]);
        csv_num(o.f, b->frag_amount_pct[k]);
        csv_num(o.f, b->frag_rate_pct[k]);
      } else {
        fputs(",,,,", o.f);
      }
      fputc('\n', o.f);
    }
  }
  return out_commit(&o, err, errlen);
}

static cJSON *num_or_null(double v) {
  return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

static int write_fill_summary(const char *path, const fill_setup *fs,
                              const char *trace_path, const char *seeds_arg,
                              const fill_seed_result *r, size_t n, char *err,
                              size_t errlen) {
  /* A member cJSON could not allocate is left out silently: such a
   * summary is not written (json_alloc_failed below). */
  json_hooks_install();
  json_alloc_failed();
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "mode", "fill");
  cJSON_AddStringToObject(o, "policy", fs->policy);
  cJSON_AddStringToObject(o, "trace", trace_path);
  cJSON_AddStringToObject(o, "cluster", fs->sc->name);
  cJSON_AddNumberToObject(o, "nodes", fs->sc->nodes);
  cJSON_AddNumberToObject(o, "gpus", fs->sc->gpus);
  cJSON_AddNumberToObject(o, "tune", fs->tune);
  cJSON_AddStringToObject(o, "seeds", seeds_arg);
  cJSON_AddNumberToObject(o, "typical_task_types",
                          (double)lsched_workload_count(fs->wl));
  cJSON *per = cJSON_AddArrayToObject(o, "per_seed");
  for (size_t i = 0; i < n; i++) {
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "seed", (double)r[i].seed);
    cJSON_AddNumberToObject(s, "pods", (double)r[i].pods);
    cJSON_AddNumberToObject(s, "failed", (double)r[i].failed);
    json_add_to_array(per, s);
  }
  static const int at[] = {100, 130};
  for (int k = 0; k < 2; k++) {
    char key[64];
    snprintf(key, sizeof key, "median_at_%d", at[k]);
    cJSON *m = cJSON_AddObjectToObject(o, key);
    json_add_item(m, "unalloc_pct",
                          num_or_null(fill_median_unalloc(r, n, at[k])));
    json_add_item(m, "frag_amount_pct",
                          num_or_null(fill_median_frag_amount(r, n, at[k])));
    json_add_item(m, "frag_rate_pct",
                          num_or_null(fill_median_frag_rate(r, n, at[k])));
  }
  return out_write_json(path, o, err, errlen);
}

/* -------------------------------------------------------------- workers */

/* What a seed's worker leaves in its pool result. */
typedef struct seed_msg {
  int rc;
  char err[512];
  fill_seed_result res;
} seed_msg;

typedef struct seed_job {
  const fill_setup *fs;
  const uint64_t *seeds;
} seed_job;

/* One seed in a worker of the pool (its own copy of the cluster). */
static int seed_task(size_t i, pool_slot *slot, void *user) {
  const seed_job *j = user;
  seed_msg *m = slot->result;
  m->rc = fill_run_seed(j->fs, j->seeds[i], &m->res, NULL, NULL, m->err,
                        sizeof m->err);
  return m->rc == 0 ? 0 : m->rc == -1 ? 2 : 1;
}

/* Runs seeds[0..n) into res[]: in this process with one worker, else in
 * the forked workers of pool.c (compare's and sweep's pool). Results come
 * back in seed order and do not depend on the number of workers. 0, or
 * the first failing seed's code with err. */
static int run_seeds(const fill_setup *fs, const uint64_t *seeds, size_t n,
                     int workers, fill_seed_result *res, char *err,
                     size_t errlen) {
  if (workers <= 1 || n <= 1) {
    for (size_t i = 0; i < n; i++) {
      int rc = fill_run_seed(fs, seeds[i], &res[i], NULL, NULL, err, errlen);
      if (rc)
        return rc;
    }
    return 0;
  }
  seed_msg *msgs = calloc(n, sizeof *msgs);
  int *st = calloc(n, sizeof *st);
  if (!msgs || !st) {
    free(msgs);
    free(st);
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  seed_job job = {fs, seeds};
  int rc = 0;
  if (pool_run_results(n, workers, seed_task, &job, st, 0, "fill", msgs,
                       sizeof *msgs)) {
    snprintf(err, errlen, "cannot start the workers");
    rc = -2;
  }
  for (size_t i = 0; i < n && !rc; i++) {
    if (msgs[i].rc) {
      snprintf(err, errlen, "%s", msgs[i].err);
      rc = msgs[i].rc;
    } else if (st[i]) { /* killed, or failed before it could report */
      snprintf(err, errlen, "the worker of seed %" PRIu64 " failed (status "
               "%d)", seeds[i], st[i]);
      rc = -2;
    } else {
      res[i] = msgs[i].res;
    }
  }
  free(msgs);
  free(st);
  return rc;
}

/* --------------------------------------------------------------- command */

static void print_num(double v) {
  if (isnan(v))
    printf(" %8s", "-");
  else
    printf(" %8.2f", v);
}

int cmd_fill(int argc, char **argv) {
  run_config o;
  int npos;
  int pst = cli_parse(C_FILL, argc, argv, &o, NULL, 0, &npos);
  if (pst >= 0)
    return pst;
  const char *cluster = o.ncluster ? o.cluster[0] : NULL, *trace_path = o.trace,
             *policy = o.npolicy ? o.policy[0] : NULL, *seeds_arg = o.seeds,
             *outdir = o.out, *catalog = o.catalog;
  double tune = o.tune;
  long workers = o.workers ? (long)o.workers : 1;
  char err[ERRLEN] = "";
  if (!cluster || !trace_path || !policy || !seeds_arg) {
    fprintf(stderr, "schedsim fill: --cluster, --trace, --policy and --seeds "
                    "are required\n");
    cli_help(C_FILL, stderr);
    return 2;
  }
  uint64_t *seeds = malloc(MAX_SEEDS * sizeof *seeds);
  size_t nseeds = 0;
  if (!seeds) {
    fprintf(stderr, "schedsim: out of memory\n");
    return 1;
  }
  if (fill_parse_seeds(seeds_arg, seeds, MAX_SEEDS, &nseeds, err,
                       sizeof err)) {
    fprintf(stderr, "schedsim fill: --seeds: %s\n", err);
    free(seeds);
    return 2;
  }
  gpu_catalog cat;
  sim_cluster sc;
  trace t;
  trace_init(&t);
  int status = 2;
  uint64_t *masks = NULL;
  uint8_t *absent = NULL;
  lsched_workload *wl = NULL;
  fill_seed_result *res = NULL;
  uint32_t *pods_byname = NULL, *nodes_byname = NULL;
  if (cli_load_catalog(&cat, catalog, NULL, 0, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    free(seeds);
    return cli_load_status(err);
  }
  if (cli_load_cluster(&sc, cluster, &cat, 0, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    catalog_free(&cat);
    free(seeds);
    return cli_load_status(err);
  }
  if (cli_load_trace_as(&t, trace_path, 1, &o.load, err, sizeof err)) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = cli_load_status(err);
    goto out;
  }
  int rc = sim_resolve_specs(&sc, &cat, &t, &masks, &absent, err, sizeof err);
  if (rc) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = rc == -1 ? 2 : 1;
    goto out;
  }
  if (sim_typical_workload(&wl, &t, masks, 95)) {
    fprintf(stderr, "schedsim: out of memory\n");
    status = 1;
    goto out;
  }
  /* The table is the same every time: made once per process (the fault
   * tests run the command hundreds of times; it costs ~60M instructions). */
  static uint64_t cooked[GORAND_LEN];
  static int have_cooked;
  if (!have_cooked && gorand_cook(cooked) == 0)
    have_cooked = 1;
  if (!have_cooked) {
    fprintf(stderr, "schedsim: out of memory\n");
    status = 1;
    goto out;
  }
  fill_setup fs = {&sc, &t, policy, tune, wl, masks, absent, cooked, NULL, NULL};
  if (fill_name_orders(&fs, &pods_byname, &nodes_byname)) {
    fprintf(stderr, "schedsim: out of memory\n");
    status = 1;
    goto out;
  }
  fs.pods_byname = pods_byname;
  fs.nodes_byname = nodes_byname;
  res = calloc(nseeds, sizeof *res);
  if (!res) {
    fprintf(stderr, "schedsim: out of memory\n");
    status = 1;
    goto out;
  }
  double t0 = sim_now_s();
  rc = run_seeds(&fs, seeds, nseeds, (int)workers, res, err, sizeof err);
  double wall = sim_now_s() - t0;
  if (rc) {
    fprintf(stderr, "schedsim: %s\n", err);
    status = rc == -1 ? 2 : 1;
    goto out;
  }
  if (outdir) {
    char path[4096];
    status = 1;
    if (out_mkdir(outdir, err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      goto out;
    }
    int len = snprintf(path, sizeof path, "%s/fill.csv", outdir);
    if (len < 0 || (size_t)len >= sizeof path) {
      fprintf(stderr, "schedsim: %s: output directory name too long\n",
              outdir);
      goto out;
    }
    if (fill_write_csv(path, res, nseeds, err, sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      goto out;
    }
    len = snprintf(path, sizeof path, "%s/summary.json", outdir);
    if (len < 0 || (size_t)len >= sizeof path)
      goto out;
    if (write_fill_summary(path, &fs, trace_path, seeds_arg, res, nseeds, err,
                           sizeof err)) {
      fprintf(stderr, "schedsim: %s\n", err);
      goto out;
    }
  }
  printf("fill: policy %s, cluster %s (%d nodes, %d GPUs), trace %s (%zu "
         "pods, %zu typical task types), tune %g\n",
         policy, sc.name, sc.nodes, sc.gpus, t.path, t.n,
         lsched_workload_count(wl), tune);
  printf("  %8s %7s %7s %8s %8s %8s %8s\n", "seed", "pods", "failed",
         "unal@100", "unal@130", "frag@100", "frag@130");
  for (size_t i = 0; i < nseeds; i++) {
    const fill_bins *b = &res[i].bins;
    printf("  %8" PRIu64 " %7zu %7zu", res[i].seed, res[i].pods,
           res[i].failed);
    print_num(b->has[100] ? 100 - b->alloc_pct[100] : NAN);
    print_num(b->has[130] ? 100 - b->alloc_pct[130] : NAN);
    print_num(b->has[100] ? b->frag_rate_pct[100] : NAN);
    print_num(b->has[130] ? b->frag_rate_pct[130] : NAN);
    putchar('\n');
  }
  printf("  median unallocated GPU %%: %.2f at 100%% arrived, %.2f at 130%% "
         "(frag rate %.2f%%, %.2f%%)\n",
         fill_median_unalloc(res, nseeds, 100),
         fill_median_unalloc(res, nseeds, 130),
         fill_median_frag_rate(res, nseeds, 100),
         fill_median_frag_rate(res, nseeds, 130));
  printf("  wall time %.3f s (%.3f s per seed)\n", wall,
         wall / (double)nseeds);
  if (outdir)
    printf("  outputs in %s/ (fill.csv, summary.json)\n", outdir);
  status = 0;
out:
  free(res);
  free(pods_byname);
  free(nodes_byname);
  lsched_workload_destroy(wl);
  free(masks);
  free(absent);
  trace_free(&t);
  sim_cluster_free(&sc);
  catalog_free(&cat);
  free(seeds);
  return status;
}
