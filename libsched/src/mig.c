/*
 * The MIG model: NVIDIA's placement table, per-GPU instance state, the
 * kind a request maps to, exact alloc/release of instances, cluster totals
 * and their invariants. See <libsched/mig.h> for the rules.
 *
 * Every GPU keeps, per start slot, the kind of the instance starting there
 * and a busy bit; the slot bitmaps, the slices in use and the kinds it can
 * serve are derived from that list after every change (O(8)), and the
 * checker re-derives them all. Cluster totals are kept by subtracting a
 * GPU's contribution before a change and adding it back after.
 */
#include "abi.h"
#include "mig_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------------- */
/* The placement table (docs/DESIGN.md section 4)                          */

/* The placement table is public (<libsched/policy_sdk.h>), so that the
 * policies' inline reads and these arrays are one table. */
const uint8_t lsched__mig_cs[7] = LSCHED_MIG_SLICES_TABLE;
const uint8_t lsched__mig_size[7] = LSCHED_MIG_SIZE_TABLE;
const uint8_t lsched__mig_starts[7] = LSCHED_MIG_STARTS_TABLE;
const uint16_t lsched__mig_milli[7] = LSCHED_MIG_MILLI_TABLE;

static const char *const kind_names[7] = {"none", "1g", "1g-2x", "2g",
                                          "3g",   "4g", "7g"};

static int kind_ok(int k) { return k >= 1 && k <= LSCHED_MIG_KINDS; }

int lsched_mig_kind_slices(int kind) {
  return kind_ok(kind) ? lsched__mig_cs[kind] : LSCHED_EINVAL;
}

int lsched_mig_kind_size(int kind) {
  return kind_ok(kind) ? lsched__mig_size[kind] : LSCHED_EINVAL;
}

unsigned lsched_mig_kind_starts(int kind) {
  return kind_ok(kind) ? lsched__mig_starts[kind] : 0;
}

int lsched_mig_kind_milli(int kind) {
  return kind_ok(kind) ? lsched__mig_milli[kind] : LSCHED_EINVAL;
}

const char *lsched_mig_kind_name(int kind) {
  return kind >= 0 && kind <= LSCHED_MIG_KINDS ? kind_names[kind] : "?";
}

int lsched_mig_kind_from_name(const char *name) {
  if (!name)
    return LSCHED_EINVAL;
  for (int k = 1; k <= LSCHED_MIG_KINDS; k++)
    if (strcasecmp(name, kind_names[k]) == 0)
      return k;
  /* A profile name "<n>g.<m>gb": for n = 2, 3, 4, 7 the compute slices
   * alone give the kind; a 1g profile may be 1g or 1g-2x depending on the
   * model (lsched_mig_profile_from_name()). */
  static const int by_slices[8] = {0, 0, LSCHED_MIG_2G, LSCHED_MIG_3G,
                                   LSCHED_MIG_4G, 0, 0, LSCHED_MIG_7G};
  const char *s = name;
  if (*s < '1' || *s > '7' || (s[1] != 'g' && s[1] != 'G') || s[2] != '.')
    return LSCHED_ENOENT;
  int k = by_slices[*s - '0'];
  s += 3;
  if (*s < '1' || *s > '9')
    return LSCHED_ENOENT;
  while (*s >= '0' && *s <= '9')
    s++;
  if (!k || strcasecmp(s, "gb") != 0)
    return LSCHED_ENOENT;
  return k;
}

unsigned lsched_mig_slot_mask(int kind, int start) {
  if (!kind_ok(kind) || start < 0 || start >= LSCHED_MIG_SLOTS ||
      !((lsched__mig_starts[kind] >> start) & 1))
    return 0;
  return lsched__mig_mask(kind, start);
}

int lsched_mig_layout_check(const lsched_mig_instance *v, int n, int *bad) {
  if (bad)
    *bad = -1;
  if (n < 0 || (n > 0 && !v))
    return LSCHED_EINVAL;
  unsigned used = 0;
  for (int i = 0; i < n; i++) {
    unsigned m = lsched_mig_slot_mask(v[i].kind, v[i].start);
    if (!m) {
      if (bad)
        *bad = i;
      return LSCHED_EINVAL;
    }
    if (used & m) {
      if (bad)
        *bad = i;
      return LSCHED_ERANGE;
    }
    used |= m;
  }
  return LSCHED_OK;
}

int lsched_mig_kind_for(int min_kind, int compute_milli, int64_t memory_mib,
                        const int64_t *memory_by_kind) {
  if (!kind_ok(min_kind) || compute_milli < 0 ||
      compute_milli > LSCHED_GPU_MILLI || memory_mib < 0)
    return LSCHED_EINVAL;
  int lb = lsched__mig_kind_for_compute(compute_milli);
  if (lb < min_kind)
    lb = min_kind;
  for (int k = lb; k <= LSCHED_MIG_KINDS; k++) {
    if (memory_by_kind && memory_by_kind[k - 1] <= 0)
      continue; /* not offered */
    if (memory_mib > 0 &&
        (!memory_by_kind || memory_by_kind[k - 1] < memory_mib))
      continue;
    return k;
  }
  return LSCHED_ENOENT;
}

/* ---------------------------------------------------------------------- */
/* Cluster-level state                                                     */

int lsched__mig_ensure(lsched_cluster *c) {
  if (c->mig)
    return LSCHED_OK;
  struct lsched__mig *m = lsched__calloc(&c->a, 1, sizeof *m);
  if (!m)
    return LSCHED_ENOMEM;
  for (int i = 0; i < LSCHED_MAX_MODELS; i++)
    m->offered[i] = LSCHED__MIG_ALL_KINDS;
  for (unsigned b = 0; b < 256; b++)
    for (int k = 1; k <= LSCHED_MIG_KINDS; k++) {
      int n = 0;
      for (int s = 0; s < LSCHED_MIG_SLOTS; s++)
        if ((lsched__mig_starts[k] >> s) & 1 && !(lsched__mig_mask(k, s) & b))
          n++;
      m->pack[b][k - 1] = (uint8_t)n;
      if (n)
        m->can[b] |= (uint8_t)(1u << (k - 1));
    }
  c->mig = m;
  return LSCHED_OK;
}

void lsched__mig_free(lsched_cluster *c) {
  if (!c->mig)
    return;
  lsched__free(&c->a, c->mig->gpu);
  lsched__free(&c->a, c->mig->created);
  lsched__free(&c->a, c->mig);
  c->mig = NULL;
}

/* Re-derives a GPU's cached fields from its instance list. */
static void gpu_refresh(const struct lsched__mig *m, lsched_mig_gpu_view *g) {
  unsigned occ = 0, ob = 0, fit = 0;
  int bcs = 0, fcs = 0;
  for (int s = 0; s < LSCHED_MIG_SLOTS; s++) {
    int k = g->kind_at[s];
    if (!k)
      continue;
    unsigned mk = lsched__mig_mask(k, s);
    occ |= mk;
    if ((g->busy >> s) & 1) {
      ob |= mk;
      bcs += lsched__mig_cs[k];
    } else {
      fit |= 1u << (k - 1);
      fcs += lsched__mig_cs[k];
    }
  }
  g->occ = (uint8_t)occ;
  g->occ_busy = (uint8_t)ob;
  g->busy_cs = (uint8_t)bcs;
  if (g->dynamic) {
    g->fit = (uint8_t)(m->can[ob] & g->offered);
    g->free_cs = (uint8_t)(LSCHED_MIG_SLICES - bcs);
  } else {
    g->fit = (uint8_t)fit;
    g->free_cs = (uint8_t)fcs;
  }
}

/* Adds sign x the GPU's contribution to the cluster totals. */
static void totals_add(struct lsched__mig *m, const lsched_mig_gpu_view *g,
                       int sign) {
  int all_cs = 0;
  int idle_cs_below[LSCHED_MIG_KINDS + 1] = {0};
  m->slices_used += sign * g->busy_cs;
  for (int s = 0; s < LSCHED_MIG_SLOTS; s++) {
    int k = g->kind_at[s];
    if (!k)
      continue;
    all_cs += lsched__mig_cs[k];
    if ((g->busy >> s) & 1) {
      m->in_use[k - 1] += sign;
    } else {
      m->idle[k - 1] += sign;
      idle_cs_below[k] += lsched__mig_cs[k];
    }
  }
  if (g->dynamic) {
    int f = LSCHED_MIG_SLICES - g->busy_cs;
    for (int k = 1; k <= LSCHED_MIG_KINDS; k++)
      m->unusable[k - 1] +=
          sign * (f - lsched__mig_cs[k] * m->pack[g->occ_busy][k - 1]);
  } else {
    /* Slices no instance covers, plus idle instances smaller than k. */
    int acc = LSCHED_MIG_SLICES - all_cs;
    for (int k = 1; k <= LSCHED_MIG_KINDS; k++) {
      m->unusable[k - 1] += sign * acc;
      acc += idle_cs_below[k];
    }
  }
}

static uint8_t model_offered(const lsched_cluster *c, int model) {
  return c->mig && model >= 0 ? c->mig->offered[model]
                              : LSCHED__MIG_ALL_KINDS;
}

int lsched__mig_add_node(lsched_cluster *c, struct lsched_node *nd,
                         const lsched_node_spec *spec) {
  int n = spec->mig_layout_count;
  const lsched_mig_instance *v = spec->mig_layout;
  int bad;
  int rc = lsched_mig_layout_check(v, n, &bad);
  if (rc)
    return rc;
  uint8_t offered = model_offered(c, nd->model);
  for (int i = 0; i < n; i++)
    if (!((offered >> (v[i].kind - 1)) & 1))
      return LSCHED_EINVAL;
  if ((rc = lsched__mig_ensure(c)))
    return rc;
  struct lsched__mig *m = c->mig;
  int need = m->ngpus + nd->gpu_count;
  if (need > m->cap) {
    int nc = m->cap ? m->cap : 64;
    while (nc < need)
      nc *= 2;
    lsched_mig_gpu_view *ng =
        lsched__realloc(&c->a, m->gpu, (size_t)nc * sizeof *ng);
    if (!ng)
      return LSCHED_ENOMEM;
    m->gpu = ng;
    uint64_t *nr = lsched__realloc(&c->a, m->created,
                                   (size_t)nc * LSCHED_MIG_SLOTS * sizeof *nr);
    if (!nr)
      return LSCHED_ENOMEM; /* m->gpu grew: harmless, cap unchanged */
    m->created = nr;
    m->cap = nc;
  }
  nd->mig_off = m->ngpus;
  for (int i = 0; i < nd->gpu_count; i++) {
    lsched_mig_gpu_view *g = &m->gpu[m->ngpus + i];
    memset(g, 0, sizeof *g);
    memset(&m->created[(size_t)(m->ngpus + i) * LSCHED_MIG_SLOTS], 0,
           LSCHED_MIG_SLOTS * sizeof *m->created);
    g->dynamic = spec->mig_dynamic ? 1 : 0;
    g->offered = offered;
    for (int j = 0; j < n; j++)
      g->kind_at[v[j].start] = (uint8_t)v[j].kind;
    gpu_refresh(m, g);
    totals_add(m, g, 1);
  }
  m->ngpus += nd->gpu_count;
  m->gpus += nd->gpu_count;
  return LSCHED_OK;
}

void lsched__mig_drop_node(lsched_cluster *c, const struct lsched_node *nd) {
  struct lsched__mig *m = c->mig;
  for (int i = 0; i < nd->gpu_count; i++)
    totals_add(m, &m->gpu[nd->mig_off + i], -1);
  m->ngpus -= nd->gpu_count;
  m->gpus -= nd->gpu_count;
}

uint8_t lsched__mig_node_fit(const lsched_cluster *c,
                             const struct lsched_node *nd) {
  const lsched_mig_gpu_view *g = lsched__mig_gpus(c, nd);
  unsigned f = 0;
  for (int i = 0; i < nd->gpu_count; i++)
    f |= g[i].fit;
  return (uint8_t)f;
}

/* Node `node`'s MIG instances or offered kinds changed outside an alloc or
 * release: its aggregates and fit index follow, and policies and observers
 * are told LSCHED_NODE_UPDATED, as for a pool's open slots (pool.c), so
 * that what they keep about MIG state (a score index's trees, a policy's
 * cache) is brought up to date. A policy that cannot follow reports
 * LSCHED_ESTATE from place (lsched__node_changed_notify). */
static void mig_node_changed(lsched_cluster *c, int node) {
  lsched__node_changed(c, node);
  if (c->nattached > 0 || c->nobservers > 0)
    (void)lsched__node_changed_notify(c, node, LSCHED_NODE_UPDATED);
}

/* ---------------------------------------------------------------------- */
/* Per-model profiles and request mapping                                  */

int lsched_mig_set_model_memory(lsched_cluster *c, int model,
                                const int64_t *memory_mib) {
  if (!c || !memory_mib)
    return LSCHED_EINVAL;
  if (model < 0 || model >= c->nmodels)
    return LSCHED_ENOENT;
  unsigned offered = 0;
  for (int k = 0; k < LSCHED_MIG_KINDS; k++) {
    if (memory_mib[k] < 0)
      return LSCHED_EINVAL;
    if (memory_mib[k] > 0)
      offered |= 1u << k;
  }
  if (!offered)
    return LSCHED_EINVAL;
  int rc = lsched__mig_ensure(c);
  if (rc)
    return rc;
  struct lsched__mig *m = c->mig;
  memcpy(m->mem[model], memory_mib, sizeof m->mem[model]);
  m->has_mem[model] = 1;
  m->offered[model] = (uint8_t)offered;
  /* GPUs of that model already in the cluster follow. */
  for (int i = 0; i < c->n; i++) {
    struct lsched_node *nd = &c->nodes[i];
    if (nd->mode != LSCHED_GPU_MIG || nd->model != model || !nd->gpu_count)
      continue;
    for (int j = 0; j < nd->gpu_count; j++) {
      lsched_mig_gpu_view *g = &m->gpu[nd->mig_off + j];
      totals_add(m, g, -1);
      g->offered = (uint8_t)offered;
      gpu_refresh(m, g);
      totals_add(m, g, 1);
    }
    mig_node_changed(c, i);
  }
  return LSCHED_OK;
}

int lsched__mig_kind_lb(const lsched_request *req) {
  int lb = lsched__mig_kind_for_compute(req->mig_compute_milli);
  return lb > req->mig_kind ? lb : req->mig_kind;
}

int lsched__mig_milli_lb(const lsched_request *req) {
  return lsched__mig_milli[lsched__mig_kind_lb(req)];
}

int lsched__mig_never_reason(const lsched_cluster *c, const lsched_request *req,
                             char *buf, size_t n) {
  if (!lsched__req_mig(req))
    return 0;
  int nmig = 0;
  const char *nomem = NULL;
  for (int i = 0; i < c->n; i++) {
    const struct lsched_node *nd = &c->nodes[i];
    if (nd->mode != LSCHED_GPU_MIG || nd->gpu_count == 0 ||
        nd->state == LSCHED_NODE_REMOVED)
      continue;
    nmig++;
    if (req->mig_memory_mib > 0 && !(c->mig && c->mig->has_mem[nd->model]) &&
        (!req->model_mask || (req->model_mask >> nd->model) & 1))
      nomem = c->model_names[nd->model];
  }
  if (!nmig) {
    snprintf(buf, n, "place: a MIG request, but no node of this cluster is "
             "in MIG mode");
    return 1;
  }
  if (nomem) {
    snprintf(buf, n, "place: the MIG request needs %lld MiB per instance but "
             "GPU model '%s' has no MIG memory table (lsched_mig_use_builtin "
             "or lsched_mig_set_model_memory)", (long long)req->mig_memory_mib,
             nomem);
    return 1;
  }
  return 0;
}

int lsched_mig_model_kind(const lsched_cluster *c, int model,
                           const lsched_request *req) {
  int lb = lsched__mig_kind_lb(req);
  const struct lsched__mig *m = c->mig;
  uint8_t offered = model_offered(c, model);
  int has_mem = m && model >= 0 && m->has_mem[model];
  for (int k = lb; k <= LSCHED_MIG_KINDS; k++) {
    if (!((offered >> (k - 1)) & 1))
      continue;
    if (req->mig_memory_mib > 0 &&
        (!has_mem || m->mem[model][k - 1] < req->mig_memory_mib))
      continue;
    return k;
  }
  return -1;
}

int lsched_mig_request_kind(const lsched_cluster *c, int model,
                            const lsched_request *req) {
  if (!c || lsched_request_validate(req) != LSCHED_OK ||
      !lsched__req_mig(req))
    return LSCHED_EINVAL;
  if (model < 0 || model >= c->nmodels)
    return LSCHED_ENOENT;
  int k = lsched_mig_model_kind(c, model, req);
  return k > 0 ? k : LSCHED_ENOENT;
}

/* ---------------------------------------------------------------------- */
/* Choosing instances on one node                                          */

#define gpu_hosts lsched__mig_gpu_hosts

int lsched_mig_choose(const lsched_cluster *c, int node, int kmin, int k,
                       lsched_gpu_pick rule, lsched_placement *out) {
  const struct lsched_node *nd = &c->nodes[node];
  const lsched_mig_gpu_view *gs = lsched__mig_gpus(c, nd);
  const int G = nd->gpu_count;
  if (k < 1 || k > G || !(nd->mig_fit >> (kmin - 1)))
    return LSCHED_ENOFIT;
  int dyn = G > 0 && gs[0].dynamic;
  int kmax = dyn ? kmin : LSCHED_MIG_KINDS;
  for (int K = kmin; K <= kmax; K++) {
    if (!((nd->mig_fit >> (K - 1)) & 1))
      continue;
    int64_t best = INT64_MAX;
    int best_s = -1;
    uint64_t best_mask = 0;
    for (int s = 0; s < LSCHED_MIG_SLOTS; s++) {
      if (!((lsched__mig_starts[K] >> s) & 1))
        continue;
      uint64_t hosts = 0;
      int nh = 0;
      for (int i = 0; i < G; i++)
        if (gpu_hosts(&gs[i], K, s)) {
          hosts |= UINT64_C(1) << i;
          nh++;
        }
      if (nh < k)
        continue;
      /* k picks of the best remaining host: O(k x G), G <= 64. */
      uint64_t pick = 0;
      int64_t sum_free = 0, sum_idx = 0;
      for (int got = 0; got < k; got++) {
        int b = -1;
        for (int i = 0; i < G; i++) {
          if (!((hosts >> i) & 1) || ((pick >> i) & 1))
            continue;
          if (b < 0 ||
              (rule == LSCHED_PICK_TIGHTEST && gs[i].free_cs < gs[b].free_cs) ||
              (rule == LSCHED_PICK_LOOSEST && gs[i].free_cs > gs[b].free_cs))
            b = i;
        }
        pick |= UINT64_C(1) << b;
        sum_free += gs[b].free_cs;
        sum_idx += b;
      }
      int64_t score = sum_idx;
      if (rule == LSCHED_PICK_TIGHTEST)
        score += sum_free * 4096;
      else if (rule == LSCHED_PICK_LOOSEST)
        score += (LSCHED_MIG_SLICES * 64 - sum_free) * 4096;
      if (score < best) {
        best = score;
        best_s = s;
        best_mask = pick;
      }
    }
    if (best_s >= 0) {
      out->version = LSCHED_PLACEMENT_VERSION;
      out->gpu_count = k;
      out->gpu_mask = best_mask;
      out->gpu_milli = lsched__mig_milli[K];
      out->mig_kind = K;
      out->mig_start = best_s;
      return LSCHED_OK;
    }
  }
  return LSCHED_ENOFIT;
}

int lsched__mig_node_fits(const lsched_cluster *c,
                          const struct lsched_node *nd,
                          const lsched_request *req) {
  if (nd->mode != LSCHED_GPU_MIG || nd->gpu_count < req->gpu_count ||
      nd->cpu_free < req->cpu_milli || nd->mem_free < req->memory_mib)
    return 0;
  if (req->model_mask && !((req->model_mask >> nd->model) & 1))
    return 0;
  int kmin = lsched_mig_model_kind(c, nd->model, req);
  if (kmin < 0 || !(nd->mig_fit >> (kmin - 1)))
    return 0;
  if (req->gpu_count == 1)
    return 1;
  lsched_placement tmp;
  return lsched_mig_choose(c, (int)(nd - c->nodes), kmin, req->gpu_count,
                            LSCHED_PICK_LOWEST, &tmp) == LSCHED_OK;
}

int lsched__mig_node_ever(const lsched_cluster *c,
                          const struct lsched_node *nd,
                          const lsched_request *req) {
  if (nd->mode != LSCHED_GPU_MIG || nd->gpu_count < req->gpu_count ||
      nd->cpu_cap < req->cpu_milli || nd->mem_cap < req->memory_mib)
    return 0;
  if (req->model_mask && !((req->model_mask >> nd->model) & 1))
    return 0;
  int kmin = lsched_mig_model_kind(c, nd->model, req);
  if (kmin < 0)
    return 0;
  const lsched_mig_gpu_view *gs = lsched__mig_gpus(c, nd);
  if (gs[0].dynamic)
    return 1; /* kmin is offered and creatable on an idle GPU */
  for (int K = kmin; K <= LSCHED_MIG_KINDS; K++)
    for (int s = 0; s < LSCHED_MIG_SLOTS; s++) {
      int cnt = 0;
      for (int i = 0; i < nd->gpu_count; i++)
        cnt += gs[i].kind_at[s] == K;
      if (cnt >= req->gpu_count)
        return 1;
    }
  return 0;
}

/* ---------------------------------------------------------------------- */
/* Alloc and release                                                       */

static int check_shape(lsched_cluster *c, const lsched_placement *p,
                       char *why, size_t len) {
  int k = p->mig_kind, s = p->mig_start;
  if (!kind_ok(k) || s < 0 || s >= LSCHED_MIG_SLOTS ||
      !((lsched__mig_starts[k] >> s) & 1)) {
    snprintf(why, len, "MIG instance kind %d at slot %d is not valid", k, s);
    return LSCHED_EINVAL;
  }
  if (p->gpu_milli != lsched__mig_milli[k]) {
    snprintf(why, len, "a %s instance takes %d milli, not %d",
             kind_names[k], lsched__mig_milli[k], p->gpu_milli);
    return LSCHED_EINVAL;
  }
  (void)c;
  return LSCHED_OK;
}

int lsched__mig_check_alloc(lsched_cluster *c, const lsched_placement *p,
                            char *why, size_t len) {
  int rc = check_shape(c, p, why, len);
  if (rc)
    return rc;
  const struct lsched_node *nd = &c->nodes[p->node];
  const lsched_mig_gpu_view *gs = lsched__mig_gpus(c, nd);
  for (int i = 0; i < nd->gpu_count; i++) {
    if (!((p->gpu_mask >> i) & 1))
      continue;
    const lsched_mig_gpu_view *g = &gs[i];
    if (g->dynamic && !((g->offered >> (p->mig_kind - 1)) & 1)) {
      snprintf(why, len, "GPU %d of node %d: its model offers no %s", i,
               p->node, kind_names[p->mig_kind]);
      return LSCHED_EINVAL;
    }
    if (!gpu_hosts(g, p->mig_kind, p->mig_start)) {
      snprintf(why, len,
               g->dynamic ? "GPU %d of node %d: slots of %s@%d are in use"
                          : "GPU %d of node %d: no free %s instance at slot %d",
               i, p->node, kind_names[p->mig_kind], p->mig_start);
      return LSCHED_ERANGE;
    }
  }
  return LSCHED_OK;
}

int lsched__mig_check_release(lsched_cluster *c, const lsched_placement *p,
                              char *why, size_t len) {
  int rc = check_shape(c, p, why, len);
  if (rc)
    return rc;
  const struct lsched_node *nd = &c->nodes[p->node];
  const lsched_mig_gpu_view *gs = lsched__mig_gpus(c, nd);
  for (int i = 0; i < nd->gpu_count; i++)
    if ((p->gpu_mask >> i) & 1 &&
        (gs[i].kind_at[p->mig_start] != p->mig_kind ||
         !((gs[i].busy >> p->mig_start) & 1))) {
      snprintf(why, len, "GPU %d of node %d: no %s instance in use at slot %d",
               i, p->node, kind_names[p->mig_kind], p->mig_start);
      return LSCHED_ERANGE;
    }
  return LSCHED_OK;
}

void lsched__mig_apply(lsched_cluster *c, const lsched_placement *p,
                       int alloc) {
  struct lsched__mig *m = c->mig;
  const struct lsched_node *nd = &c->nodes[p->node];
  int k = p->mig_kind, s = p->mig_start;
  unsigned mk = lsched__mig_mask(k, s);
  for (int i = 0; i < nd->gpu_count; i++) {
    if (!((p->gpu_mask >> i) & 1))
      continue;
    int gi = nd->mig_off + i;
    lsched_mig_gpu_view *g = &m->gpu[gi];
    totals_add(m, g, -1);
    if (!alloc) {
      g->busy &= (uint8_t)~(1u << s);
    } else {
      if (g->kind_at[s] != k) {
        /* Dynamic: replace the idle instances in the way, create k@s. */
        for (int t = 0; t < LSCHED_MIG_SLOTS; t++)
          if (g->kind_at[t] && (lsched__mig_mask(g->kind_at[t], t) & mk)) {
            g->kind_at[t] = 0;
            m->destroyed++;
          }
        g->kind_at[s] = (uint8_t)k;
        m->created[(size_t)gi * LSCHED_MIG_SLOTS + s] = ++m->seq;
      }
      g->busy |= (uint8_t)(1u << s);
    }
    gpu_refresh(m, g);
    totals_add(m, g, 1);
  }
}

/* ---------------------------------------------------------------------- */
/* Queries                                                                 */

int lsched_mig_gpu_get(const lsched_cluster *c, int node, int gpu,
                       lsched_mig_gpu_state *out) {
  if (!c || !out)
    return LSCHED_EINVAL;
  if (node < 0 || node >= c->n || gpu < 0 || gpu >= c->nodes[node].gpu_count)
    return LSCHED_ENOENT;
  const struct lsched_node *nd = &c->nodes[node];
  if (nd->mode != LSCHED_GPU_MIG)
    return LSCHED_EINVAL;
  /* Filled up to the caller's version (abi.h). */
  static const size_t sizes[] = {0, sizeof(lsched_mig_gpu_state)};
  lsched_mig_gpu_state f;
  memset(&f, 0, sizeof f);
  int gi = nd->mig_off + gpu;
  const lsched_mig_gpu_view *g = &c->mig->gpu[gi];
  f.dynamic = g->dynamic;
  for (int s = 0; s < LSCHED_MIG_SLOTS; s++) {
    if (!g->kind_at[s])
      continue;
    int i = f.ninstances++;
    f.instances[i].kind = g->kind_at[s];
    f.instances[i].start = s;
    f.in_use[i] = (g->busy >> s) & 1;
    f.created[i] = c->mig->created[(size_t)gi * LSCHED_MIG_SLOTS + s];
  }
  f.slots = g->occ;
  f.slots_used = g->occ_busy;
  f.slices_used = g->busy_cs;
  lsched__fill_out(out, &f, sizes, 2);
  return LSCHED_OK;
}

int lsched_mig_set_layout(lsched_cluster *c, int node, int gpu,
                          const lsched_mig_instance *v, int n) {
  if (!c)
    return LSCHED_EINVAL;
  if (node < 0 || node >= c->n || gpu < 0 || gpu >= c->nodes[node].gpu_count)
    return LSCHED_ENOENT;
  struct lsched_node *nd = &c->nodes[node];
  if (nd->mode != LSCHED_GPU_MIG)
    return LSCHED_EINVAL;
  int bad, rc = lsched_mig_layout_check(v, n, &bad);
  if (rc)
    return rc;
  struct lsched__mig *m = c->mig;
  int gi = nd->mig_off + gpu;
  lsched_mig_gpu_view *g = &m->gpu[gi];
  if (g->busy)
    return LSCHED_ESTATE;
  for (int i = 0; i < n; i++)
    if (!((g->offered >> (v[i].kind - 1)) & 1))
      return LSCHED_EINVAL;
  totals_add(m, g, -1);
  memset(g->kind_at, 0, sizeof g->kind_at);
  memset(&m->created[(size_t)gi * LSCHED_MIG_SLOTS], 0,
         LSCHED_MIG_SLOTS * sizeof *m->created);
  for (int i = 0; i < n; i++)
    g->kind_at[v[i].start] = (uint8_t)v[i].kind;
  gpu_refresh(m, g);
  totals_add(m, g, 1);
  mig_node_changed(c, node);
  return LSCHED_OK;
}

uint64_t lsched_mig_creations(const lsched_cluster *c) {
  return c && c->mig ? c->mig->seq : 0;
}

void lsched_mig_totals_get(const lsched_cluster *c, lsched_mig_totals *out) {
  if (!out)
    return;
  /* Filled up to the caller's version (abi.h). */
  static const size_t sizes[] = {0, sizeof(lsched_mig_totals)};
  lsched_mig_totals t;
  memset(&t, 0, sizeof t);
  const struct lsched__mig *m = c ? c->mig : NULL;
  if (m) {
    t.gpus = m->gpus;
    t.slices = (int64_t)m->gpus * LSCHED_MIG_SLICES;
    t.slices_used = m->slices_used;
    for (int k = 0; k < LSCHED_MIG_KINDS; k++) {
      t.in_use[k] = m->in_use[k];
      t.idle[k] = m->idle[k];
      t.unusable[k] = m->unusable[k];
    }
    t.created = m->seq;
    t.destroyed = m->destroyed;
  }
  lsched__fill_out(out, &t, sizes, 2);
}

/* ---------------------------------------------------------------------- */
/* Invariants                                                              */

int lsched__mig_check(const lsched_cluster *c, char *why, size_t len) {
  const struct lsched__mig *m = c->mig;
  if (!m)
    return LSCHED_OK;
  struct lsched__mig t; /* totals recomputed from scratch */
  memset(&t, 0, sizeof t);
  memcpy(t.pack, m->pack, sizeof t.pack);
  int gpus = 0;
  for (int id = 0; id < c->n; id++) {
    const struct lsched_node *nd = &c->nodes[id];
    /* A MIG-mode node without GPUs has no MIG state (add_node gives it no
     * pool offset): nothing to check (tests/fuzz/fuzz_libsched.c). */
    if (nd->mode != LSCHED_GPU_MIG || nd->gpu_count == 0)
      continue;
    if (nd->mig_off != gpus) {
      snprintf(why, len, "node %d: MIG pool offset %d, expected %d", id,
               nd->mig_off, gpus);
      return LSCHED_ESTATE;
    }
    const int *pool = c->gpu_free + nd->gpu_off;
    for (int i = 0; i < nd->gpu_count; i++) {
      const lsched_mig_gpu_view *g = &m->gpu[nd->mig_off + i];
      unsigned occ = 0;
      int milli = 0;
      for (int s = 0; s < LSCHED_MIG_SLOTS; s++) {
        int k = g->kind_at[s];
        if (!k) {
          if ((g->busy >> s) & 1) {
            snprintf(why, len, "node %d GPU %d: busy bit %d without an "
                     "instance", id, i, s);
            return LSCHED_ESTATE;
          }
          continue;
        }
        unsigned mk = lsched_mig_slot_mask(k, s);
        if (!mk || (occ & mk)) {
          snprintf(why, len, "node %d GPU %d: instance %s@%d is %s", id, i,
                   lsched_mig_kind_name(k), s,
                   mk ? "overlapping another" : "not a valid placement");
          return LSCHED_ESTATE;
        }
        occ |= mk;
        if ((g->busy >> s) & 1)
          milli += lsched__mig_milli[k];
      }
      lsched_mig_gpu_view copy = *g;
      gpu_refresh(m, &copy);
      if (memcmp(&copy, g, sizeof copy) != 0 || copy.occ != occ) {
        snprintf(why, len, "node %d GPU %d: MIG slot bitmaps differ from "
                 "its instances", id, i);
        return LSCHED_ESTATE;
      }
      if (pool[i] != LSCHED_GPU_MILLI - milli) {
        snprintf(why, len, "node %d GPU %d: %d milli free, instances in use "
                 "leave %d", id, i, pool[i], LSCHED_GPU_MILLI - milli);
        return LSCHED_ESTATE;
      }
      if (g->dynamic != m->gpu[nd->mig_off].dynamic) {
        snprintf(why, len, "node %d: static and dynamic GPUs mixed", id);
        return LSCHED_ESTATE;
      }
      totals_add(&t, g, 1);
    }
    if (lsched__mig_node_fit(c, nd) != nd->mig_fit) {
      snprintf(why, len, "node %d: cached MIG fit mask is stale", id);
      return LSCHED_ESTATE;
    }
    gpus += nd->gpu_count;
  }
  if (gpus != m->ngpus || gpus != m->gpus) {
    snprintf(why, len, "MIG pool holds %d GPUs, nodes %d", m->ngpus, gpus);
    return LSCHED_ESTATE;
  }
  if (t.slices_used != m->slices_used ||
      memcmp(t.in_use, m->in_use, sizeof t.in_use) ||
      memcmp(t.idle, m->idle, sizeof t.idle) ||
      memcmp(t.unusable, m->unusable, sizeof t.unusable)) {
    snprintf(why, len, "MIG cluster totals differ from their recomputation");
    return LSCHED_ESTATE;
  }
  return LSCHED_OK;
}

/* ---------------------------------------------------------------------- */
/* Node changes (cluster.c: lsched_cluster_update_node / remove_node)      */

void lsched__mig_cut(lsched_cluster *c, int off, int k) {
  struct lsched__mig *m = c->mig;
  if (!m || k <= 0)
    return;
  for (int i = 0; i < k; i++)
    totals_add(m, &m->gpu[off + i], -1);
  int tail = m->ngpus - off - k;
  if (tail > 0) {
    memmove(&m->gpu[off], &m->gpu[off + k], (size_t)tail * sizeof *m->gpu);
    memmove(&m->created[(size_t)off * LSCHED_MIG_SLOTS],
            &m->created[(size_t)(off + k) * LSCHED_MIG_SLOTS],
            (size_t)tail * LSCHED_MIG_SLOTS * sizeof *m->created);
  }
  m->ngpus -= k;
  m->gpus -= k;
}

void lsched__mig_move_last(lsched_cluster *c, int k, int to) {
  struct lsched__mig *m = c->mig;
  if (!m || k <= 0)
    return;
  int from = m->ngpus - k;
  if (from == to)
    return;
  lsched_mig_gpu_view g[LSCHED_MAX_GPUS_PER_NODE];
  uint64_t cr[LSCHED_MAX_GPUS_PER_NODE * LSCHED_MIG_SLOTS];
  memcpy(g, &m->gpu[from], (size_t)k * sizeof *g);
  memcpy(cr, &m->created[(size_t)from * LSCHED_MIG_SLOTS],
         (size_t)k * LSCHED_MIG_SLOTS * sizeof *cr);
  memmove(&m->gpu[to + k], &m->gpu[to], (size_t)(from - to) * sizeof *m->gpu);
  memmove(&m->created[(size_t)(to + k) * LSCHED_MIG_SLOTS],
          &m->created[(size_t)to * LSCHED_MIG_SLOTS],
          (size_t)(from - to) * LSCHED_MIG_SLOTS * sizeof *m->created);
  memcpy(&m->gpu[to], g, (size_t)k * sizeof *g);
  memcpy(&m->created[(size_t)to * LSCHED_MIG_SLOTS], cr,
         (size_t)k * LSCHED_MIG_SLOTS * sizeof *cr);
}
