/* Replay-mode fragmentation and stranded capacity (see fragtrack.h). */
#include "fragtrack.h"
#include "request.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef __int128 i128;

#define NO_SHAPE FRAGTRACK_NO_SHAPE

/* A distinct GPU request shape of the trace (CPU-only jobs have none). */
typedef struct shape {
  lsched_request req;
  uint32_t queued; /* jobs of this shape in the queue */
  uint32_t pos;    /* index in active[] while queued > 0 */
} shape;

struct sim_fragtrack {
  lsched_cluster *c;
  int n;
  lsched_workload *wl;
  lsched_fragmeter *meter;
  int observing; /* obs_ops is registered on c with this tracker */
  /* shapes */
  shape *shapes;
  uint32_t nshapes, shapes_cap, shapes_cap_counted;
  uint32_t *slot;
  uint32_t nslot;
  uint64_t *count;     /* jobs per shape while counting */
  uint64_t present;    /* bits of the cluster's models */
  uint32_t *active;    /* shapes with queued > 0, sorted by gpu_milli */
  uint32_t nactive;
  int set_changed;
  size_t queued;       /* jobs in the queue (CPU-only included) */
  /* per node */
  uint8_t *dirty;
  int *dirty_list;
  int ndirty;
  int64_t *str;
  int64_t S;
  int valid; /* str[] matches the active set */
  /* current values and integrals */
  lsched_frag fr;
  int64_t stranded;
  i128 amount_area, stranded_area; /* amount_weighted x us, milli x us */
  double rate_area;
  i128 amount_done, stranded_done;
  double rate_done;
};

/* ---------------------------------------------------------------- observer
 * A cluster observer (lsched_cluster_add_observer) that marks the nodes
 * that change. Trial changes (a migration planner's tries, a gang's parts
 * before it is kept) are undone before the call that makes them returns,
 * so they leave no node changed and are skipped; a kept gang's parts are
 * reported again as ordinary allocations. */

static void obs_changed(void *user, const lsched_cluster *c,
                        const lsched_placement *p, int trial) {
  (void)c;
  sim_fragtrack *f = user;
  if (!trial && p->node >= 0 && p->node < f->n && !f->dirty[p->node]) {
    f->dirty[p->node] = 1;
    f->dirty_list[f->ndirty++] = p->node;
  }
}

static const lsched_observer obs_ops = {
    .version = LSCHED_OBSERVER_VERSION,
    .on_alloc = obs_changed,
    .on_release = obs_changed,
};

/* ------------------------------------------------------------------ shapes */

static uint32_t shape_hash(const lsched_request *r) {
  uint64_t h = (uint64_t)r->cpu_milli * UINT64_C(0x9E3779B97F4A7C15);
  h ^= (uint64_t)r->memory_mib * UINT64_C(0xC2B2AE3D27D4EB4F);
  h ^= ((uint64_t)(uint32_t)r->gpu_count << 32 | (uint32_t)r->gpu_milli) *
       UINT64_C(0x165667B19E3779F9);
  h ^= r->model_mask * UINT64_C(0x27D4EB2F165667C5);
  h ^= h >> 29;
  return (uint32_t)h;
}

static int same(const lsched_request *a, const lsched_request *b) {
  return a->cpu_milli == b->cpu_milli && a->memory_mib == b->memory_mib &&
         a->gpu_count == b->gpu_count && a->gpu_milli == b->gpu_milli &&
         a->model_mask == b->model_mask;
}

static int rehash(sim_fragtrack *f, uint32_t nn) {
  uint32_t *s = calloc(nn, sizeof *s);
  if (!s)
    return -2;
  for (uint32_t i = 0; i < f->nshapes; i++) {
    uint32_t j = shape_hash(&f->shapes[i].req) & (nn - 1);
    while (s[j])
      j = (j + 1) & (nn - 1);
    s[j] = i + 1;
  }
  free(f->slot);
  f->slot = s;
  f->nslot = nn;
  return 0;
}

/* The id of shape r, or NO_SHAPE if it was never interned. */
static uint32_t lookup(const sim_fragtrack *f, const lsched_request *r) {
  if (f->nslot == 0)
    return NO_SHAPE;
  uint32_t j = shape_hash(r) & (f->nslot - 1);
  for (; f->slot[j]; j = (j + 1) & (f->nslot - 1))
    if (same(&f->shapes[f->slot[j] - 1].req, r))
      return f->slot[j] - 1;
  return NO_SHAPE;
}

static uint32_t intern(sim_fragtrack *f, const lsched_request *r) {
  if (2 * (f->nshapes + 1) >= f->nslot &&
      rehash(f, f->nslot ? 2 * f->nslot : 1024))
    return NO_SHAPE - 1;
  uint32_t j = shape_hash(r) & (f->nslot - 1);
  for (; f->slot[j]; j = (j + 1) & (f->nslot - 1))
    if (same(&f->shapes[f->slot[j] - 1].req, r))
      return f->slot[j] - 1;
  if (f->nshapes == f->shapes_cap) {
    uint32_t nc = f->shapes_cap ? 2 * f->shapes_cap : 256;
    shape *ns = realloc(f->shapes, (size_t)nc * sizeof *ns);
    if (!ns)
      return NO_SHAPE - 1;
    f->shapes = ns;
    f->shapes_cap = nc;
  }
  shape *s = &f->shapes[f->nshapes];
  memset(s, 0, sizeof *s);
  s->req = *r;
  f->slot[j] = ++f->nshapes;
  return f->nshapes - 1;
}

/* ------------------------------------------------------------------ setup */

void fragtrack_free(sim_fragtrack *f) {
  if (!f)
    return;
  if (f->observing)
    lsched_cluster_remove_observer(f->c, &obs_ops, f);
  lsched_fragmeter_destroy(f->meter);
  lsched_workload_destroy(f->wl);
  free(f->shapes);
  free(f->slot);
  free(f->count);
  free(f->active);
  free(f->dirty);
  free(f->dirty_list);
  free(f->str);
  free(f);
}

int fragtrack_begin(sim_fragtrack **out, sim_cluster *sc) {
  *out = NULL;
  sim_fragtrack *f = calloc(1, sizeof *f);
  if (!f)
    return -2;
  f->c = sc->c;
  f->n = lsched_cluster_node_count(sc->c);
  size_t nz = f->n ? (size_t)f->n : 1;
  /* Masks as sim_typical_workload: a spec the cluster lacks names only
   * absent models (such jobs never queue: the engine sets them aside). */
  int nm = lsched_cluster_model_count(sc->c);
  f->present = nm >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << nm) - 1;
  f->dirty = calloc(nz, 1);
  f->dirty_list = malloc(nz * sizeof *f->dirty_list);
  f->str = calloc(nz, sizeof *f->str);
  if (!f->dirty || !f->dirty_list || !f->str) {
    fragtrack_free(f);
    return -2;
  }
  *out = f;
  return 0;
}

/* A job's request shape as the engine builds it (CPU-only jobs too, for
 * the workload). */
static void job_shape_req(const sim_fragtrack *f, const job_record *jr,
                          uint64_t spec_mask, int spec_absent,
                          lsched_request *r) {
  sim_job_request(jr, spec_absent ? ~f->present : spec_mask, r);
}

int fragtrack_add(sim_fragtrack *f, const job_record *jr, uint64_t spec_mask,
                  int spec_absent) {
  lsched_request r;
  job_shape_req(f, jr, spec_mask, spec_absent, &r);
  uint32_t id = intern(f, &r);
  if (id == NO_SHAPE - 1)
    return -2;
  if (f->nshapes > f->shapes_cap_counted) {
    uint64_t *nc = realloc(f->count, (size_t)f->shapes_cap * sizeof *nc);
    if (!nc)
      return -2;
    memset(nc + f->shapes_cap_counted, 0,
           (size_t)(f->shapes_cap - f->shapes_cap_counted) * sizeof *nc);
    f->count = nc;
    f->shapes_cap_counted = f->shapes_cap;
  }
  f->count[id]++;
  return 0;
}

int fragtrack_ready(sim_fragtrack *f) {
  if (lsched_workload_create(&f->wl, NULL))
    return -2;
  for (uint32_t i = 0; i < f->nshapes; i++) {
    const lsched_request *r = &f->shapes[i].req;
    lsched_task_type tt;
    tt.cpu_milli = r->cpu_milli;
    tt.gpu_count = r->gpu_count;
    tt.gpu_milli = r->gpu_milli;
    tt.model_mask = r->model_mask;
    tt.weight = f->count[i]; /* jobs of this shape */
    int wrc = lsched_workload_add(f->wl, &tt);
    if (wrc && wrc != LSCHED_ERANGE)
      return -2;
  }
  free(f->count);
  f->count = NULL;
  f->shapes_cap_counted = 0;
  if (lsched_workload_keep_popular(f->wl, 95))
    return -2;
  if (lsched_fragmeter_create(&f->meter, f->c, f->wl))
    return -2;
  if (lsched_cluster_add_observer(f->c, &obs_ops, f))
    return -2;
  f->observing = 1;
  f->active = malloc((f->nshapes ? f->nshapes : 1) * sizeof *f->active);
  if (!f->active)
    return -2;
  lsched_fragmeter_get(f->meter, &f->fr);
  return 0;
}

uint32_t fragtrack_shape(const sim_fragtrack *f, const job_record *jr,
                         uint64_t spec_mask, int spec_absent) {
  if (!f || jr->num_gpu <= 0)
    return FRAGTRACK_NO_SHAPE;
  lsched_request r;
  job_shape_req(f, jr, spec_mask, spec_absent, &r);
  /* Every job was added before; an unknown shape here would be an engine
   * bug: it then counts in no shape. */
  return lookup(f, &r);
}

const lsched_workload *fragtrack_workload(const sim_fragtrack *f) {
  return f ? f->wl : NULL;
}

void fragtrack_queued(sim_fragtrack *f, uint32_t id, int delta) {
  if (!f)
    return;
  if (delta > 0)
    f->queued++;
  else if (f->queued > 0)
    f->queued--;
  if (id == FRAGTRACK_NO_SHAPE || id >= f->nshapes)
    return;
  shape *s = &f->shapes[id];
  if (delta > 0) {
    if (s->queued++ == 0) {
      s->pos = f->nactive;
      f->active[f->nactive++] = id;
      f->set_changed = 1;
    }
  } else if (s->queued > 0 && --s->queued == 0) {
    uint32_t last = f->active[--f->nactive];
    f->active[s->pos] = last;
    f->shapes[last].pos = s->pos;
    f->set_changed = 1;
  }
}

/* ---------------------------------------------------------------- stranded */

static int cmp_active(const void *a, const void *b, void *ctx);

/* qsort has no context argument in C11: sort by insertion (the active set
 * is small and changes rarely). */
static void sort_active(sim_fragtrack *f) {
  for (uint32_t i = 1; i < f->nactive; i++) {
    uint32_t x = f->active[i];
    uint32_t k = i;
    while (k > 0 && cmp_active(&f->active[k - 1], &x, f) > 0) {
      f->active[k] = f->active[k - 1];
      k--;
    }
    f->active[k] = x;
  }
  for (uint32_t i = 0; i < f->nactive; i++)
    f->shapes[f->active[i]].pos = i;
}

static int cmp_active(const void *a, const void *b, void *ctx) {
  const sim_fragtrack *f = ctx;
  const lsched_request *x = &f->shapes[*(const uint32_t *)a].req;
  const lsched_request *y = &f->shapes[*(const uint32_t *)b].req;
  if (x->gpu_milli != y->gpu_milli)
    return x->gpu_milli < y->gpu_milli ? -1 : 1;
  uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
  return (ia > ib) - (ia < ib);
}

/* Stranded milli of node i for the active shapes. */
static int64_t node_stranded(const sim_fragtrack *f, int i) {
  lsched_node_info ni;
  if (lsched_cluster_node_info(f->c, i, &ni) || ni.gpu_count == 0 ||
      ni.gpu_milli_free == 0)
    return 0;
  if (ni.gpu_mode != LSCHED_GPU_SHARED && ni.gpu_mode != LSCHED_GPU_EXCLUSIVE)
    return 0;
  int dmin = -1;
  for (uint32_t k = 0; k < f->nactive; k++) {
    const lsched_request *r = &f->shapes[f->active[k]].req;
    if (lsched_fits(f->c, i, r)) {
      /* ascending share: the first that fits has the smallest */
      dmin = lsched_effective_milli(f->c, i, r);
      break;
    }
  }
  if (dmin < 0)
    return ni.gpu_milli_free;
  int free_milli[LSCHED_MAX_GPUS_PER_NODE];
  int ng = lsched_cluster_gpus_free(f->c, i, free_milli,
                                    LSCHED_MAX_GPUS_PER_NODE);
  int64_t s = 0;
  for (int g = 0; g < ng && g < LSCHED_MAX_GPUS_PER_NODE; g++) {
    int x = free_milli[g];
    if (x > 0 && x < dmin)
      s += x;
  }
  return s;
}

int fragtrack_update(sim_fragtrack *f) {
  if (!f)
    return 0;
  lsched_fragmeter_get(f->meter, &f->fr);
  if (f->queued == 0) {
    f->stranded = 0;
  } else if (f->set_changed || !f->valid) {
    sort_active(f);
    f->S = 0;
    for (int i = 0; i < f->n; i++) {
      f->str[i] = node_stranded(f, i);
      f->S += f->str[i];
    }
    f->valid = 1;
    f->set_changed = 0;
    f->stranded = f->S;
  } else {
    for (int k = 0; k < f->ndirty; k++) {
      int i = f->dirty_list[k];
      int64_t v = node_stranded(f, i);
      f->S += v - f->str[i];
      f->str[i] = v;
    }
    f->stranded = f->S;
  }
  /* An empty queue keeps no per-node values: the next non-empty one
   * recomputes them all. */
  if (f->queued == 0)
    f->valid = 0;
  for (int k = 0; k < f->ndirty; k++)
    f->dirty[f->dirty_list[k]] = 0;
  f->ndirty = 0;
  return 0;
}

void fragtrack_get(const sim_fragtrack *f, fragtrack_values *out) {
  memset(out, 0, sizeof *out);
  if (!f)
    return;
  out->frag_amount = f->fr.amount;
  out->frag_rate = f->fr.rate;
  out->stranded_gpu_milli = f->stranded;
}

void fragtrack_advance(sim_fragtrack *f, int64_t dt) {
  if (!f || dt <= 0)
    return;
  f->amount_area += (i128)f->fr.amount_weighted * dt;
  f->stranded_area += (i128)f->stranded * dt;
  f->rate_area += f->fr.rate * (double)dt;
}

void fragtrack_completed(sim_fragtrack *f) {
  if (!f)
    return;
  f->amount_done = f->amount_area;
  f->stranded_done = f->stranded_area;
  f->rate_done = f->rate_area;
}

void fragtrack_means(const sim_fragtrack *f, double span_us,
                     double *frag_amount_mean, double *frag_rate_mean,
                     double *stranded_mean) {
  *frag_amount_mean = *frag_rate_mean = *stranded_mean = 0;
  if (!f || span_us <= 0)
    return;
  double W = (double)f->fr.weight_total;
  *frag_amount_mean = W > 0 ? (double)f->amount_done / W / span_us : 0;
  *frag_rate_mean = f->rate_done / span_us;
  *stranded_mean = (double)f->stranded_done / span_us;
}
