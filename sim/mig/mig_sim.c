/* MIG in the simulator: see mig_sim.h. */
#include "mig_sim.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One job's MIG request: the smallest kind, and the compute (milli) and
 * memory (MiB) it needs at least. kind 0: not a MIG job (no GPU). */
typedef struct mig_req {
  int64_t mem_mib;
  uint16_t compute_milli;
  uint8_t kind;
  uint8_t explicit_; /* from --mig-requests */
  uint8_t pad_[4];
} mig_req;

struct sim_mig {
  const sim_cluster *sc;
  int mixed;         /* MIG and plain GPUs: jobs try both */
  mig_req *req;      /* per job */
  uint8_t *ok;       /* per job: 1 if some MIG profile satisfies it */
  uint8_t *kind_lb;  /* per job: the kind on its easiest model (metrics) */
  uint8_t *pl_kind, *pl_start;
  int64_t *wait_us;
  int *gpu_off;          /* per node: first index in gpu_ready */
  /* The latest reconfiguration round of each GPU (node scope: of each
   * node): when it starts and when its instances become usable. */
  int64_t *gpu_round, *gpu_ready;
  int64_t *node_round, *node_ready;
  uint64_t seq_before;
  int64_t queued[LSCHED_MIG_KINDS];
  /* time integrals (value x us) */
  double slices_area, frag_area, frag_ratio_area;
  double in_use_area[LSCHED_MIG_KINDS];
  int64_t in_use_max[LSCHED_MIG_KINDS];
  double frag_max;
  sim_mig_result res;
};

/* ---------------------------------------------------------------- maps */

int sim_mig_map_parse(const char *name, sim_mig_map *out) {
  static const char *const names[] = {"both", "compute", "memory"};
  for (int i = 0; i < 3; i++)
    if (strcmp(name, names[i]) == 0) {
      *out = (sim_mig_map)i;
      return 0;
    }
  return -1;
}

const char *sim_mig_map_name(sim_mig_map m) {
  return m == SIM_MIG_MAP_COMPUTE ? "compute"
         : m == SIM_MIG_MAP_MEMORY ? "memory"
                                   : "both";
}

int sim_mig_map_kind(sim_mig_map m, int gpu_milli) {
  if (gpu_milli >= 1000)
    return LSCHED_MIG_7G;
  int kc = lsched_mig_kind_for(LSCHED_MIG_ANY, gpu_milli, 0, NULL);
  /* Memory: the smallest kind with 1000 x slots >= 8 x milli. */
  int slots = (8 * gpu_milli + 999) / 1000, km = LSCHED_MIG_7G;
  for (int k = LSCHED_MIG_1G; k <= LSCHED_MIG_7G; k++)
    if (lsched_mig_kind_size(k) >= slots) {
      km = k;
      break;
    }
  if (m == SIM_MIG_MAP_COMPUTE)
    return kc;
  if (m == SIM_MIG_MAP_MEMORY)
    return km;
  return kc > km ? kc : km;
}

void sim_mig_result_free(sim_mig_result *r) {
  if (!r)
    return;
  free(r->kind);
  free(r->start);
  free(r->wait_us);
  free(r);
}

void sim_mig_free(sim_mig *m) {
  if (!m)
    return;
  free(m->req);
  free(m->ok);
  free(m->kind_lb);
  free(m->pl_kind);
  free(m->pl_start);
  free(m->wait_us);
  free(m->gpu_off);
  free(m->gpu_round);
  free(m->gpu_ready);
  free(m->node_round);
  free(m->node_ready);
  free(m);
}

/* The catalog entries of the cluster's MIG models (by model id). */
static int mig_models(const sim_cluster *sc, const gpu_catalog *cat,
                      const gpu_model_info **gm, int *ids) {
  int n = 0;
  uint64_t seen = 0;
  for (int i = 0; i < sc->nodes; i++) {
    lsched_node_info ni;
    lsched_cluster_node_info(sc->c, i, &ni);
    if (ni.gpu_mode != LSCHED_GPU_MIG || ni.gpu_count == 0 ||
        ((seen >> ni.gpu_model) & 1))
      continue;
    seen |= UINT64_C(1) << ni.gpu_model;
    const gpu_model_info *g =
        catalog_find(cat, lsched_cluster_model_name(sc->c, ni.gpu_model));
    if (g) {
      gm[n] = g;
      ids[n++] = ni.gpu_model;
    }
  }
  return n;
}

/* A request as libsched sees it. */
static void to_request(const mig_req *q, lsched_request *r) {
  r->mig_kind = q->kind;
  r->mig_compute_milli = q->compute_milli;
  r->mig_memory_mib = q->mem_mib;
}

/* ------------------------------------------------------ requests file */

/* Splits a CSV line (no quoting) into at most max fields; returns count. */
static int split(char *line, char **f, int max) {
  int n = 0;
  char *p = line;
  for (;;) {
    if (n == max)
      return max + 1;
    f[n++] = p;
    char *c = strchr(p, ',');
    if (!c)
      break;
    *c = 0;
    p = c + 1;
  }
  return n;
}

/* Finds job `name` in t (linear, once per file line; names are unique in
 * the traces we read, the first match wins). */
static long find_job(const trace *t, const char *name) {
  for (size_t j = 0; j < t->n; j++)
    if (strcmp(trace_job_name(t, j), name) == 0)
      return (long)j;
  return -1;
}

/*
 * --mig-requests FILE: CSV with the header job,profile,gpu_memory_gib,
 * compute_fraction; per line either a profile name (of one of the
 * cluster's MIG models) or a memory and/or compute need.
 */
static int load_requests(sim_mig *m, const trace *t, const char *path,
                         const gpu_model_info *const *gm, int ngm, char *err,
                         size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  char line[1024];
  int ln = 0, rc = -1;
  while (fgets(line, sizeof line, f)) {
    ln++;
    size_t len = strcspn(line, "\r\n");
    line[len] = 0;
    if (ln == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0)
      memmove(line, line + 3, strlen(line + 3) + 1);
    if (ln == 1) {
      if (strcmp(line, "job,profile,gpu_memory_gib,compute_fraction") != 0) {
        snprintf(err, errlen, "%s:1: expected the header "
                 "'job,profile,gpu_memory_gib,compute_fraction'", path);
        goto out;
      }
      continue;
    }
    if (!line[0])
      continue;
    char *fld[4];
    if (split(line, fld, 4) != 4) {
      snprintf(err, errlen, "%s:%d: expected 4 fields", path, ln);
      goto out;
    }
    long j = find_job(t, fld[0]);
    if (j < 0) {
      snprintf(err, errlen, "%s:%d: field 'job': no job '%s' in %s", path, ln,
               fld[0], t->path);
      goto out;
    }
    const job_record *jr = &t->jobs[j];
    if (jr->num_gpu == 0) {
      snprintf(err, errlen, "%s:%d: job %s (%s:%" PRId64 ") asks for no GPU",
               path, ln, fld[0], t->path, jr->line);
      goto out;
    }
    mig_req q;
    memset(&q, 0, sizeof q);
    q.kind = LSCHED_MIG_ANY;
    if (fld[1][0]) {
      if (fld[2][0] || fld[3][0]) {
        snprintf(err, errlen, "%s:%d: give a profile or a memory/compute "
                 "need, not both", path, ln);
        goto out;
      }
      /* The profile's kind and memory on the models that have it. */
      int found = 0;
      for (int i = 0; i < ngm; i++) {
        const gpu_mig_profile *p = catalog_mig_profile(gm[i], fld[1]);
        if (!p)
          continue;
        int64_t mib = llround(p->memory_gib * 1024.0);
        if (!found || p->kind < q.kind)
          q.kind = (uint8_t)p->kind;
        if (!found || mib < q.mem_mib)
          q.mem_mib = mib;
        found = 1;
      }
      if (!found) {
        int n = snprintf(err, errlen, "%s:%d: field 'profile': job %s (%s:%"
                         PRId64 "): '%s' is not a MIG profile of the "
                         "cluster's models (", path, ln, fld[0], t->path,
                         jr->line, fld[1]);
        for (int i = 0; i < ngm && n > 0 && (size_t)n < errlen; i++)
          for (int k = 0; k < gm[i]->nmig && n > 0 && (size_t)n < errlen; k++)
            n += snprintf(err + n, errlen - (size_t)n, "%s%s", i || k ? " " : "",
                          gm[i]->mig_profiles[k].name);
        if (n > 0 && (size_t)n < errlen)
          snprintf(err + n, errlen - (size_t)n, ")");
        goto out;
      }
    } else {
      char *end;
      if (fld[2][0]) {
        double g = strtod(fld[2], &end);
        if (*end || !isfinite(g) || g < 0 || g > 1e6) {
          snprintf(err, errlen, "%s:%d: field 'gpu_memory_gib': '%s' is not "
                   "a number of GiB", path, ln, fld[2]);
          goto out;
        }
        q.mem_mib = (int64_t)ceil(g * 1024.0);
      }
      if (fld[3][0]) {
        double c = strtod(fld[3], &end);
        if (*end || !isfinite(c) || c < 0 || c > 1) {
          snprintf(err, errlen, "%s:%d: field 'compute_fraction': '%s' is not "
                   "in 0..1", path, ln, fld[3]);
          goto out;
        }
        q.compute_milli = (uint16_t)llround(c * 1000.0);
      }
      if (!fld[2][0] && !fld[3][0]) {
        snprintf(err, errlen, "%s:%d: job %s: no profile and no need given",
                 path, ln, fld[0]);
        goto out;
      }
    }
    q.explicit_ = 1; /* checked against the models below */
    m->req[j] = q;
  }
  rc = 0;
out:
  fclose(f);
  return rc;
}

/* ---------------------------------------------------------------- begin */

int sim_mig_begin(sim_mig **out, const sim_cluster *sc,
                  const gpu_catalog *cat, const trace *t, sim_mig_map map,
                  const char *requests_path, lsched_policy *pol,
                  int user_sets_mix, char *err, size_t errlen) {
  *out = NULL;
  if (sc->mig_gpus == 0) {
    if (requests_path) {
      snprintf(err, errlen, "--mig-requests %s: the cluster has no MIG GPUs",
               requests_path);
      return -1;
    }
    return 0;
  }
  sim_mig *m = calloc(1, sizeof *m);
  if (!m)
    return -2;
  size_t n = t->n;
  m->sc = sc;
  m->mixed = sc->plain_gpus > 0;
  m->req = calloc(n, sizeof *m->req);
  m->ok = calloc(n, 1);
  m->kind_lb = calloc(n, 1);
  m->pl_kind = calloc(n, 1);
  m->pl_start = calloc(n, 1);
  m->wait_us = calloc(n, sizeof *m->wait_us);
  m->gpu_off = calloc((size_t)sc->nodes + 1, sizeof *m->gpu_off);
  m->node_round = malloc(((size_t)sc->nodes + 1) * sizeof *m->node_round);
  m->node_ready = calloc((size_t)sc->nodes + 1, sizeof *m->node_ready);
  m->gpu_round = malloc(((size_t)sc->gpus + 1) * sizeof *m->gpu_round);
  m->gpu_ready = calloc((size_t)sc->gpus + 1, sizeof *m->gpu_ready);
  if (!m->req || !m->ok || !m->kind_lb || !m->pl_kind || !m->pl_start ||
      !m->wait_us || !m->gpu_off || !m->node_round || !m->node_ready ||
      !m->gpu_round || !m->gpu_ready) {
    sim_mig_free(m);
    return -2;
  }
  for (int i = 0; i <= sc->nodes; i++)
    m->node_round[i] = INT64_MIN;
  for (int i = 0; i <= sc->gpus; i++)
    m->gpu_round[i] = INT64_MIN;
  int off = 0;
  for (int i = 0; i < sc->nodes; i++) {
    lsched_node_info ni;
    lsched_cluster_node_info(sc->c, i, &ni);
    m->gpu_off[i] = off;
    off += ni.gpu_count;
  }
  const gpu_model_info *gm[LSCHED_MAX_MODELS];
  int ids[LSCHED_MAX_MODELS];
  int ngm = mig_models(sc, cat, gm, ids);
  for (size_t j = 0; j < n; j++) {
    const job_record *jr = &t->jobs[j];
    if (jr->num_gpu == 0)
      continue;
    m->req[j].kind = (uint8_t)(jr->num_gpu > 1
                                   ? LSCHED_MIG_7G
                                   : sim_mig_map_kind(map, jr->gpu_milli));
  }
  if (requests_path &&
      load_requests(m, t, requests_path, gm, ngm, err, errlen)) {
    sim_mig_free(m);
    return -1;
  }
  /* Which jobs some MIG model can serve; the mix for mig-aware. */
  uint64_t mix[LSCHED_MIG_KINDS] = {0};
  for (size_t j = 0; j < n; j++) {
    const job_record *jr = &t->jobs[j];
    if (jr->num_gpu == 0)
      continue;
    lsched_request r = LSCHED_REQUEST_INIT;
    r.gpu_count = jr->num_gpu;
    r.gpu_milli = jr->gpu_milli;
    to_request(&m->req[j], &r);
    int best = 0;
    for (int i = 0; i < ngm; i++) {
      int k = lsched_mig_request_kind(sc->c, ids[i], &r);
      if (k > 0 && (best == 0 || k < best))
        best = k;
    }
    m->ok[j] = best > 0;
    m->kind_lb[j] = (uint8_t)best;
    if (best) {
      mix[best - 1]++;
      continue;
    }
    if (m->mixed && !m->req[j].explicit_)
      continue; /* it runs on the plain GPUs */
    char need[128];
    if (m->req[j].explicit_)
      snprintf(need, sizeof need, "at least %s, GPU memory %.2f GiB, "
               "compute %.3f (--mig-requests)",
               lsched_mig_kind_name(m->req[j].kind),
               (double)m->req[j].mem_mib / 1024.0,
               m->req[j].compute_milli / 1000.0);
    else
      snprintf(need, sizeof need, "num_gpu=%d gpu_milli=%d, --mig-map %s: "
               "%s", (int)jr->num_gpu, (int)jr->gpu_milli,
               sim_mig_map_name(map), lsched_mig_kind_name(m->req[j].kind));
    int len = snprintf(err, errlen, "%s:%" PRId64 ": job %s: no MIG profile "
                       "of the cluster's models satisfies its request (%s; "
                       "models:", t->path, jr->line, trace_job_name(t, j),
                       need);
    for (int i = 0; i < ngm && len > 0 && (size_t)len < errlen; i++)
      len += snprintf(err + len, errlen - (size_t)len, " %s", gm[i]->name);
    if (len > 0 && (size_t)len < errlen)
      snprintf(err + len, errlen - (size_t)len, ")");
    sim_mig_free(m);
    return -1;
  }
  for (int k = 0; k < LSCHED_MIG_KINDS; k++)
    m->res.requested[k] = mix[k];
  if (!user_sets_mix) {
    char buf[256];
    int len = 0;
    for (int k = 0; k < LSCHED_MIG_KINDS; k++)
      if (mix[k] && len >= 0 && (size_t)len < sizeof buf)
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%s:%" PRIu64,
                        len ? "," : "", lsched_mig_kind_name(k + 1), mix[k]);
    if (len > 0)
      lsched_policy_set_param(pol, "mix", buf); /* ENOENT: policy has none */
  }
  m->res.gpus = sc->mig_gpus;
  m->res.map = sim_mig_map_name(map);
  lsched_mig_totals tot;
  lsched_mig_totals_get(sc->c, &tot);
  m->res.created = tot.created;
  m->res.destroyed = tot.destroyed;
  *out = m;
  return 0;
}

/* ------------------------------------------------------------- requests */

void sim_mig_request(const sim_mig *m, uint32_t j, lsched_request *r) {
  if (r->gpu_count == 0 || m->mixed || !m->ok[j])
    return;
  to_request(&m->req[j], r);
}

int sim_mig_other(const sim_mig *m, uint32_t j, lsched_request *r) {
  if (!m->mixed || r->gpu_count == 0 || !m->ok[j])
    return 0;
  if (r->mig_kind) {
    r->mig_kind = 0;
    r->mig_compute_milli = 0;
    r->mig_memory_mib = 0;
  } else {
    to_request(&m->req[j], r);
  }
  return 1;
}

void sim_mig_before_place(sim_mig *m) {
  m->seq_before = lsched_mig_creations(m->sc->c);
}

void sim_mig_placed(sim_mig *m, uint32_t j, const lsched_placement *parts,
                    int n) {
  const lsched_placement *p = &parts[0];
  lsched_node_info ni;
  int mig = n == 1 && p->gpu_count > 0 &&
            lsched_cluster_node_info(m->sc->c, p->node, &ni) == LSCHED_OK &&
            ni.gpu_mode == LSCHED_GPU_MIG;
  m->pl_kind[j] = (uint8_t)(mig ? p->mig_kind : 0);
  m->pl_start[j] = (uint8_t)(mig ? p->mig_start : 0);
}

void sim_mig_fill(const sim_mig *m, uint32_t j, lsched_placement *p) {
  p->mig_kind = m ? m->pl_kind[j] : 0;
  p->mig_start = m ? m->pl_start[j] : 0;
}

/* A change requested at `now` on a GPU or node whose latest round starts
 * at *round and ends at *ready: it joins that round if the round has not
 * started yet (changes of one scheduling pass are applied together),
 * otherwise it opens a new round after the current one. Returns when the
 * change is usable. */
static int64_t join_round(int64_t *round, int64_t *ready, int64_t now,
                          int64_t delay) {
  if (now <= *round)
    return *ready;
  *round = *ready > now ? *ready : now;
  *ready = *round + delay;
  return *ready;
}

int64_t sim_mig_commit(sim_mig *m, uint32_t j, const lsched_placement *parts,
                       int n, int64_t now) {
  int64_t ready = now;
  for (int i = 0; i < n; i++) {
    const lsched_placement *p = &parts[i];
    lsched_node_info ni;
    if (p->gpu_count == 0 ||
        lsched_cluster_node_info(m->sc->c, p->node, &ni) != LSCHED_OK ||
        ni.gpu_mode != LSCHED_GPU_MIG)
      continue;
    int64_t delay = m->sc->mig_reconfig_us[p->node];
    int node_scope = m->sc->mig_scope_node[p->node];
    int created = 0;
    int64_t gpu_ready = now;
    for (int g = 0; g < ni.gpu_count; g++) {
      if (!((p->gpu_mask >> g) & 1))
        continue;
      lsched_mig_gpu_state st;
      if (lsched_mig_gpu_get(m->sc->c, p->node, g, &st) != LSCHED_OK)
        continue;
      int fresh = 0;
      for (int k = 0; k < st.ninstances; k++)
        if (st.instances[k].start == p->mig_start &&
            st.created[k] > m->seq_before)
          fresh = 1;
      if (!fresh)
        continue;
      created = 1;
      if (!node_scope) {
        int gi = m->gpu_off[p->node] + g;
        int64_t t = join_round(&m->gpu_round[gi], &m->gpu_ready[gi], now,
                               delay);
        if (t > gpu_ready)
          gpu_ready = t;
      }
    }
    if (node_scope) {
      /* Any change stalls every new placement on the node until its
       * round is done. */
      if (created)
        join_round(&m->node_round[p->node], &m->node_ready[p->node], now,
                   delay);
      if (m->node_ready[p->node] > gpu_ready)
        gpu_ready = m->node_ready[p->node];
    }
    if (gpu_ready > ready)
      ready = gpu_ready;
  }
  int64_t wait = ready - now;
  m->wait_us[j] = wait;
  if (wait > 0) {
    m->res.reconfig_jobs++;
    m->res.reconfig_wait_s += (double)wait / 1e6;
  }
  if (n == 1 && m->pl_kind[j])
    m->res.placed[m->pl_kind[j] - 1]++;
  return wait;
}

void sim_mig_job(const sim_mig *m, uint32_t j, int *kind, int *start,
                 int64_t *wait_us) {
  *kind = m->pl_kind[j];
  *start = m->pl_start[j];
  *wait_us = m->wait_us[j];
}

void sim_mig_queued(sim_mig *m, uint32_t j, int delta) {
  if (m->kind_lb[j])
    m->queued[m->kind_lb[j] - 1] += delta;
}

/* Free slices unusable by the smallest kind in the queue, and free slices. */
static void frag_now(const sim_mig *m, const lsched_mig_totals *t,
                     double *frag, double *free_slices) {
  *frag = 0;
  *free_slices = (double)(t->slices - t->slices_used);
  for (int k = 0; k < LSCHED_MIG_KINDS; k++)
    if (m->queued[k] > 0) {
      *frag = (double)t->unusable[k];
      return;
    }
}

void sim_mig_advance(sim_mig *m, int64_t dt) {
  if (dt <= 0)
    return;
  lsched_mig_totals t;
  lsched_mig_totals_get(m->sc->c, &t);
  double fr, fs;
  frag_now(m, &t, &fr, &fs);
  double d = (double)dt;
  m->slices_area += (double)t.slices_used * d;
  m->frag_area += fr * d;
  if (fs > 0)
    m->frag_ratio_area += fr / fs * d;
  if (fr > m->frag_max)
    m->frag_max = fr;
  for (int k = 0; k < LSCHED_MIG_KINDS; k++) {
    m->in_use_area[k] += (double)t.in_use[k] * d;
    if (t.in_use[k] > m->in_use_max[k])
      m->in_use_max[k] = t.in_use[k];
  }
}

void sim_mig_timeline(const sim_mig *m, FILE *f) {
  lsched_mig_totals t;
  lsched_mig_totals_get(m->sc->c, &t);
  double fr, fs;
  frag_now(m, &t, &fr, &fs);
  fprintf(f, ",%" PRId64 ",%.0f", t.slices_used, fr);
}

sim_mig_result *sim_mig_finish(sim_mig *m, int64_t span_us) {
  sim_mig_result *r = malloc(sizeof *r);
  if (!r)
    return NULL;
  *r = m->res;
  lsched_mig_totals t;
  lsched_mig_totals_get(m->sc->c, &t);
  r->created = t.created - m->res.created;
  r->destroyed = t.destroyed - m->res.destroyed;
  double span = (double)span_us;
  if (span > 0) {
    r->slice_util_mean =
        t.slices > 0 ? m->slices_area / span / (double)t.slices : 0;
    r->frag_slices_mean = m->frag_area / span;
    r->frag_ratio_mean = m->frag_ratio_area / span;
    for (int k = 0; k < LSCHED_MIG_KINDS; k++)
      r->in_use_mean[k] = m->in_use_area[k] / span;
  }
  r->frag_slices_max = m->frag_max;
  for (int k = 0; k < LSCHED_MIG_KINDS; k++)
    r->in_use_max[k] = m->in_use_max[k];
  r->kind = m->pl_kind;
  r->start = m->pl_start;
  r->wait_us = m->wait_us;
  m->pl_kind = m->pl_start = NULL;
  m->wait_us = NULL;
  return r;
}
