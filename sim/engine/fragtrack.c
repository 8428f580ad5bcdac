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
  uint32_t rank;   /* index in calc[] while in_calc */
  int32_t head;    /* first node of the bucket of this shape, -1 none */
  uint8_t in_calc; /* in the set the per-node values are computed for */
  uint8_t touched; /* in touched[]: queued crossed 0 since the last sync */
} shape;

/* A node's first fitting shape besides the shape ids: none of the computed
 * set fits it, or it strands nothing whatever the set (no GPU milli free,
 * no GPUs, MIG, removed). */
#define FIRST_NONE (UINT32_MAX - 1)
#define FIRST_INELIG UINT32_MAX
#define CAPK 8 /* summary: the 8 largest usable free milli of a node */

/* One entry of the summary tree: over the nodes below it, the largest free
 * CPU and memory, for k = 1..8 the largest k-th largest usable free GPU
 * milli (exclusive nodes: 1000 if k GPUs are whole, else 0), the models.
 * An upper bound of what any node below can fit: a request that fails it
 * fits none of them (lsched_fits: CPU, memory, model, k GPUs with the
 * share free). */
typedef struct sumry {
  int64_t cpu, mem;
  uint64_t models;
  int16_t cap[CAPK];
} sumry;

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
  uint32_t *calc;      /* the computed set, sorted by (gpu_milli, id) */
  uint32_t ncalc;
  uint32_t *touched;   /* shapes whose queued crossed 0 since the sync */
  uint32_t ntouched;
  int set_changed;
  size_t queued;       /* jobs in the queue (CPU-only included) */
  /* per node */
  uint8_t *dirty;
  int *dirty_list;
  int ndirty;
  uint8_t *nchg;       /* changed by lsched_node_change since the last sync */
  int *nchg_list;
  int nnchg;
  int64_t *str;        /* stranded milli for the computed set */
  uint32_t *first;     /* first fitting shape of calc[], FIRST_NONE/INELIG */
  int32_t *nxt, *prv;  /* bucket lists (per first fitting shape) */
  sumry *tree;         /* 2 x size entries, leaves at size + node */
  int size;
  int64_t S;
  int valid; /* the last update had a non-empty queue */
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

/* A node added, updated or removed: the values before this tracker was
 * incremental recomputed every node at the next change of the queue's
 * shape set (and only the nodes allocated on or released from in
 * between), so a changed node is recomputed then (nchg), which keeps the
 * reported figures exactly those of that full recomputation. Nodes added
 * after the start are not counted, as before. */
static void obs_node(void *user, const lsched_cluster *c, int node,
                     int change) {
  (void)c;
  (void)change;
  sim_fragtrack *f = user;
  if (node >= 0 && node < f->n && !f->nchg[node]) {
    f->nchg[node] = 1;
    f->nchg_list[f->nnchg++] = node;
  }
}

static const lsched_observer obs_ops = {
    .version = LSCHED_OBSERVER_VERSION,
    .on_alloc = obs_changed,
    .on_release = obs_changed,
    .on_node_change = obs_node,
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

static void strand_init(sim_fragtrack *f);

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
  free(f->calc);
  free(f->touched);
  free(f->dirty);
  free(f->dirty_list);
  free(f->nchg);
  free(f->nchg_list);
  free(f->str);
  free(f->first);
  free(f->nxt);
  free(f->prv);
  free(f->tree);
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
  f->nchg = calloc(nz, 1);
  f->nchg_list = malloc(nz * sizeof *f->nchg_list);
  f->first = malloc(nz * sizeof *f->first);
  f->nxt = malloc(nz * sizeof *f->nxt);
  f->prv = malloc(nz * sizeof *f->prv);
  f->size = 1;
  while (f->size < f->n)
    f->size *= 2;
  f->tree = malloc(2 * (size_t)f->size * sizeof *f->tree);
  if (!f->dirty || !f->dirty_list || !f->str || !f->nchg || !f->nchg_list ||
      !f->first || !f->nxt || !f->prv || !f->tree) {
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
  size_t ns = f->nshapes ? f->nshapes : 1;
  f->calc = malloc(ns * sizeof *f->calc);
  f->touched = malloc(ns * sizeof *f->touched);
  if (!f->calc || !f->touched)
    return -2;
  for (uint32_t i = 0; i < f->nshapes; i++)
    f->shapes[i].head = -1;
  strand_init(f);
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
  int crossed = 0;
  if (delta > 0)
    crossed = s->queued++ == 0;
  else if (s->queued > 0)
    crossed = --s->queued == 0;
  if (crossed) {
    f->set_changed = 1;
    if (!s->touched) {
      s->touched = 1;
      f->touched[f->ntouched++] = id;
    }
  }
}

/* ---------------------------------------------------------------- stranded
 * Per node: str[i], its stranded milli for the computed set calc[] (the
 * shapes in the queue at the last sync, sorted by share then id), and
 * first[i], the first shape of calc[] that fits it (its bucket). A node's
 * value depends only on its own state and on that first fitting shape, so
 * - an allocation or release recomputes the node (dirty);
 * - a shape leaving the set recomputes the nodes of its bucket only;
 * - a shape joining it moves the nodes it fits whose first fitting shape
 *   comes later (or that none fitted): they are found by a descent of a
 *   summary tree (sumry), which skips every subtree that cannot hold the
 *   shape; so a shape that fits nowhere, the usual reason to wait, costs
 *   about one root-to-leaf path.
 * The values are those of recomputing every node at each change of the
 * set (tests/cli_golden.sh: the replay outputs are byte-identical). */

static int cmp_calc(const sim_fragtrack *f, uint32_t a, uint32_t b) {
  const lsched_request *x = &f->shapes[a].req;
  const lsched_request *y = &f->shapes[b].req;
  if (x->gpu_milli != y->gpu_milli)
    return x->gpu_milli < y->gpu_milli ? -1 : 1;
  return (a > b) - (a < b);
}

static void bucket_out(sim_fragtrack *f, int i) {
  uint32_t b = f->first[i];
  if (b >= f->nshapes)
    return;
  if (f->prv[i] >= 0)
    f->nxt[f->prv[i]] = f->nxt[i];
  else
    f->shapes[b].head = f->nxt[i];
  if (f->nxt[i] >= 0)
    f->prv[f->nxt[i]] = f->prv[i];
}

static void bucket_in(sim_fragtrack *f, int i, uint32_t b) {
  f->first[i] = b;
  if (b >= f->nshapes)
    return;
  int h = f->shapes[b].head;
  f->prv[i] = -1;
  f->nxt[i] = h;
  if (h >= 0)
    f->prv[h] = i;
  f->shapes[b].head = i;
}

static void sum_merge(sumry *t, const sumry *a, const sumry *b) {
  t->cpu = a->cpu > b->cpu ? a->cpu : b->cpu;
  t->mem = a->mem > b->mem ? a->mem : b->mem;
  t->models = a->models | b->models;
  for (int k = 0; k < CAPK; k++)
    t->cap[k] = a->cap[k] > b->cap[k] ? a->cap[k] : b->cap[k];
}

static void sum_empty(sumry *t) {
  t->cpu = t->mem = INT64_MIN;
  t->models = 0;
  for (int k = 0; k < CAPK; k++)
    t->cap[k] = -1;
}

static void sum_pull(sim_fragtrack *f, int i) {
  for (int t = (f->size + i) / 2; t >= 1; t /= 2)
    sum_merge(&f->tree[t], &f->tree[2 * t], &f->tree[2 * t + 1]);
}

/* Free milli of the GPUs of node i below dmin (and above 0). */
static int64_t below(const int *fm, int ng, int dmin) {
  int64_t s = 0;
  for (int g = 0; g < ng; g++)
    if (fm[g] > 0 && fm[g] < dmin)
      s += fm[g];
  return s;
}

static int gpus_free(const sim_fragtrack *f, int i, int *fm) {
  int ng = lsched_cluster_gpus_free(f->c, i, fm, LSCHED_MAX_GPUS_PER_NODE);
  if (ng < 0)
    return 0;
  return ng < LSCHED_MAX_GPUS_PER_NODE ? ng : LSCHED_MAX_GPUS_PER_NODE;
}

/* Sets node i's value, first fitting shape and summary leaf from scratch
 * (without pulling the summary up). */
static void node_set(sim_fragtrack *f, int i) {
  lsched_node_info ni = LSCHED_NODE_INFO_INIT;
  sumry *lf = &f->tree[f->size + i];
  sum_empty(lf);
  bucket_out(f, i);
  int64_t v = 0;
  uint32_t first = FIRST_INELIG;
  if (!lsched_cluster_node_info(f->c, i, &ni) && ni.gpu_count > 0 &&
      (ni.gpu_mode == LSCHED_GPU_SHARED ||
       ni.gpu_mode == LSCHED_GPU_EXCLUSIVE)) {
    int fm[LSCHED_MAX_GPUS_PER_NODE];
    int ng = gpus_free(f, i, fm);
    /* the CAPK largest, descending */
    int top[CAPK];
    int nt = 0;
    for (int g = 0; g < ng; g++) {
      int x = fm[g];
      if (ni.gpu_mode == LSCHED_GPU_EXCLUSIVE)
        x = x == 1000 ? 1000 : 0;
      int p = nt < CAPK ? nt++ : CAPK;
      while (p > 0 && top[p - 1] < x) {
        if (p < CAPK)
          top[p] = top[p - 1];
        p--;
      }
      if (p < CAPK)
        top[p] = x;
    }
    for (int k = 0; k < CAPK; k++)
      lf->cap[k] = (int16_t)(k < nt ? top[k] : -1);
    lf->cpu = ni.cpu_free;
    lf->mem = ni.memory_free;
    lf->models = ni.gpu_model >= 0 && ni.gpu_model < 64
                     ? UINT64_C(1) << ni.gpu_model
                     : ~UINT64_C(0);
    if (ni.gpu_milli_free > 0) {
      int dmin = -1;
      first = FIRST_NONE;
      for (uint32_t k = 0; k < f->ncalc; k++) {
        const lsched_request *r = &f->shapes[f->calc[k]].req;
        if (lsched_fits(f->c, i, r)) {
          /* ascending share: the first that fits has the smallest */
          dmin = lsched_effective_milli(f->c, i, r);
          first = f->calc[k];
          break;
        }
      }
      v = dmin < 0 ? ni.gpu_milli_free : below(fm, ng, dmin);
    }
  }
  bucket_in(f, i, first);
  f->S += v - f->str[i];
  f->str[i] = v;
}

static void node_recompute(sim_fragtrack *f, int i) {
  node_set(f, i);
  sum_pull(f, i);
}

static void strand_init(sim_fragtrack *f) {
  for (int t = 0; t < 2 * f->size; t++)
    sum_empty(&f->tree[t]);
  f->S = 0;
  for (int i = 0; i < f->n; i++) {
    f->first[i] = FIRST_INELIG;
    f->str[i] = 0;
    node_set(f, i);
  }
  for (int t = f->size - 1; t >= 1; t--)
    sum_merge(&f->tree[t], &f->tree[2 * t], &f->tree[2 * t + 1]);
}

/* Shape a joined calc[]: the nodes it fits whose first fitting shape comes
 * after it (or that none fitted) now have it first. */
static void shape_joined(sim_fragtrack *f, uint32_t a) {
  const lsched_request *r = &f->shapes[a].req;
  int kk = r->gpu_count < 1 ? 1 : r->gpu_count > CAPK ? CAPK : r->gpu_count;
  int need = r->gpu_milli > 1000 ? 1000 : r->gpu_milli;
  uint64_t mm = r->model_mask;
  uint32_t ra = f->shapes[a].rank;
  int stack[64];
  int sp = 0;
  stack[sp++] = 1;
  while (sp > 0) {
    int t = stack[--sp];
    const sumry *e = &f->tree[t];
    if (e->cpu < r->cpu_milli || e->mem < r->memory_mib ||
        e->cap[kk - 1] < need || (mm && !(mm & e->models)))
      continue;
    if (t < f->size) {
      stack[sp++] = 2 * t + 1;
      stack[sp++] = 2 * t;
      continue;
    }
    int i = t - f->size;
    uint32_t cur = f->first[i];
    if (i >= f->n || cur == FIRST_INELIG ||
        (cur != FIRST_NONE && f->shapes[cur].rank <= ra))
      continue;
    if (!lsched_fits(f->c, i, r))
      continue;
    int fm[LSCHED_MAX_GPUS_PER_NODE];
    int ng = gpus_free(f, i, fm);
    int64_t v = below(fm, ng, lsched_effective_milli(f->c, i, r));
    bucket_out(f, i);
    bucket_in(f, i, a);
    f->S += v - f->str[i];
    f->str[i] = v;
  }
}

/* The queue's shape set changed since the last sync: brings calc[] and
 * every node's value to the new set. */
static void sync_set(sim_fragtrack *f) {
  uint32_t nrem = 0, nadd = 0;
  /* touched[] is split in place: removed shapes first, then added ones */
  for (uint32_t k = 0; k < f->ntouched; k++) {
    uint32_t id = f->touched[k];
    shape *s = &f->shapes[id];
    s->touched = 0;
    if (s->queued > 0 && !s->in_calc)
      f->touched[nrem + nadd++] = id;
    else if (s->queued == 0 && s->in_calc) {
      f->touched[nrem + nadd] = f->touched[nrem];
      f->touched[nrem++] = id;
    }
  }
  f->ntouched = 0;
  if (nrem + nadd > 0) {
    uint32_t m = 0;
    for (uint32_t k = 0; k < nrem; k++)
      f->shapes[f->touched[k]].in_calc = 0;
    for (uint32_t k = 0; k < f->ncalc; k++)
      if (f->shapes[f->calc[k]].in_calc)
        f->calc[m++] = f->calc[k];
    for (uint32_t k = 0; k < nadd; k++) {
      uint32_t id = f->touched[nrem + k];
      f->shapes[id].in_calc = 1;
      uint32_t p = m++;
      while (p > 0 && cmp_calc(f, f->calc[p - 1], id) > 0) {
        f->calc[p] = f->calc[p - 1];
        p--;
      }
      f->calc[p] = id;
    }
    f->ncalc = m;
    for (uint32_t k = 0; k < m; k++)
      f->shapes[f->calc[k]].rank = k;
  }
  /* A left shape's nodes did not change: their summary leaves stay (the
   * changed ones among them are pulled up with the dirty nodes below). */
  for (uint32_t k = 0; k < nrem; k++) {
    shape *s = &f->shapes[f->touched[k]];
    while (s->head >= 0)
      node_set(f, s->head);
  }
  for (int k = 0; k < f->nnchg; k++) {
    f->nchg[f->nchg_list[k]] = 0;
    node_recompute(f, f->nchg_list[k]);
  }
  f->nnchg = 0;
  for (int k = 0; k < f->ndirty; k++)
    node_recompute(f, f->dirty_list[k]);
  for (uint32_t k = 0; k < nadd; k++)
    shape_joined(f, f->touched[nrem + k]);
}

int fragtrack_update(sim_fragtrack *f) {
  if (!f)
    return 0;
  lsched_fragmeter_get(f->meter, &f->fr);
  if (f->queued > 0 && (f->set_changed || !f->valid)) {
    sync_set(f);
    f->set_changed = 0;
  } else {
    for (int k = 0; k < f->ndirty; k++)
      node_recompute(f, f->dirty_list[k]);
  }
  f->valid = f->queued > 0;
  f->stranded = f->queued > 0 ? f->S : 0;
  for (int k = 0; k < f->ndirty; k++)
    f->dirty[f->dirty_list[k]] = 0;
  f->ndirty = 0;
#ifdef FRAGTRACK_VERIFY
  /* Debug build (-DFRAGTRACK_VERIFY): every value against a scan. */
  if (f->queued > 0)
    for (int i = 0; i < f->n; i++) {
      if (f->nchg[i])
        continue;
      int64_t old = f->str[i], oldS = f->S;
      uint32_t of = f->first[i];
      node_recompute(f, i);
      if (f->str[i] != old || f->first[i] != of || f->S != oldS) {
        fprintf(stderr, "fragtrack: node %d: %" PRId64 " != %" PRId64 "\n",
                i, old, f->str[i]);
        abort();
      }
    }
#endif
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
