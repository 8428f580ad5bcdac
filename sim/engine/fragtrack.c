/* Replay-mode fragmentation and stranded capacity (see fragtrack.h). */
#include "fragtrack.h"
#include "request.h"

#include <libsched/policy_sdk.h>

#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_SHAPE FRAGTRACK_NO_SHAPE

/* A distinct GPU request shape of the trace (CPU-only jobs have none). */
typedef struct shape {
  lsched_request req;
  uint32_t rank;   /* index in calc[] while in_calc */
  int32_t cneed, mneed; /* a node fits it only if its cpur, memr are >= */
  uint8_t plain;   /* valid, GPUs, no MIG kind, no node restriction: a
                    * class's key tells lsched_fits's answer (may_fit) */
  int32_t head;    /* first class of the bucket of this shape, -1 none */
  uint8_t in_calc; /* in the set the per-node values are computed for */
} shape;

/* A first fitting shape besides the shape ids: none of the computed set
 * fits, or (a node in no class) it strands nothing whatever the set (no
 * GPU milli free, no GPUs, MIG, removed). */
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

/* A class of nodes in the same free state (see "stranded" below); its GPU
 * free milli, descending, are cg[id x LSCHED_MAX_GPUS_PER_NODE ..). */
typedef struct cls {
  int64_t cpu, mem;   /* free CPU and memory of the node that opened it */
  int64_t milli;      /* free GPU milli of each node */
  int64_t str;        /* stranded milli of each node for calc[] */
  uint32_t hash;
  int32_t hnext;      /* hash chain */
  int32_t count;      /* nodes */
  int32_t mhead;      /* first node (the list: mnxt/mprv) */
  uint32_t first;     /* first fitting shape of calc[], or FIRST_NONE */
  int32_t bnxt, bprv; /* bucket of first */
  int32_t cpur, memr; /* ranks of cpu and mem among the shapes' needs */
  int16_t model;
  uint8_t mode, up, ng;
} cls;

/* What rekey reads and writes of a node, side by side: one cache line
 * per node moved instead of three arrays' (the dirty marks stay a byte
 * array: the observer's, a tenth of the size, stays cached; with them in
 * here the observer's miss on this line cancelled rekey's saving on a
 * 1 MB last level, 100k GPUs). */
typedef struct nslot {
  int32_t cid;        /* class of the node's state, -1 none */
  int32_t mnxt, mprv; /* the nodes of its class */
  uint8_t nchg;       /* changed by lsched_node_change since the sync */
} nslot;

/* A node's free state as a class key. */
typedef struct nkey {
  int64_t cpu, mem, milli;
  int32_t cpur, memr;
  uint32_t hash;
  int16_t model;
  uint8_t mode, up, ng;
  int16_t g[LSCHED_MAX_GPUS_PER_NODE]; /* descending */
} nkey;

typedef struct sslot sslot; /* the shapes' hash table (below) */

struct sim_fragtrack {
  fragtrack_now now; /* first: fragtrack.h's inline calls read it */
  lsched_cluster *c;
  /* The cluster's nodes and GPU shares, read in place by node_key: taken
   * at fragtrack_ready and again after every node change (obs_node), as
   * the view's lifetime asks (lsched_node_free copied them: a call and ~35
   * instructions per changed node). */
  lsched_view v;
  int n;
  lsched_workload *wl;
  lsched_fragmeter *meter;
  int observing; /* obs_ops is registered on c with this tracker */
  int mstale;    /* a node changed since the meter was last read */
  /* shapes */
  shape *shapes;
  uint32_t nshapes, shapes_cap, shapes_cap_counted;
  sslot *slot; /* the shapes by key */
  uint32_t nslot;
  uint64_t *count;     /* jobs per shape while counting */
  uint64_t present;    /* bits of the cluster's models */
  uint32_t *calc;      /* the computed set, sorted by (gpu_milli, id) */
  uint32_t ncalc;
  /* calc[]'s loosest GPU needs (calc_env): the least GPU count of its
   * shapes (0: one asks none) and the least share */
  int env_k, env_milli;
  /* per node: ns[], the marks and their lists */
  uint8_t *dirty; /* allocated on or released from since the sync */
  int *dirty_list;
  int ndirty;
  int *nchg_list;
  int nnchg;
  nslot *ns;
  /* classes (at most one per node) */
  cls *cls;
  int16_t *cg;         /* their GPUs' free milli */
  int32_t *htab;       /* hash heads */
  uint32_t hmask;
  int32_t *cfree;      /* unused class ids */
  int ncfree;
  int64_t *cthr, *mthr; /* the shapes' CPU and memory needs, ascending */
  int ncthr, nmthr;
  sumry *tree;         /* 2 x size entries, leaves at size + class */
  uint8_t *lstale;     /* class's leaf not yet brought up to date */
  int32_t *lstale_list;
  int nlstale;
  int size;
  int64_t S;
  int valid; /* the last update had a non-empty queue */
  int inited; /* strand_init ran */
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
  if (trial)
    return;
  f->mstale = 1;
  if ((unsigned)p->node < (unsigned)f->n && !f->dirty[p->node]) {
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
  (void)change;
  sim_fragtrack *f = user;
  (void)lsched_cluster_view(c, &f->v); /* cannot fail: c and v are set */
  f->mstale = 1;
  /* every remembered fragtrack_ever answer is void (0 is never a
   * generation) */
  if (++f->now.node_gen == 0)
    f->now.node_gen = 1;
  if (node >= 0 && node < f->n && !f->ns[node].nchg) {
    f->ns[node].nchg = 1;
    f->nchg_list[f->nnchg++] = node;
  }
}

void fragtrack_prefetch(const sim_fragtrack *f, int node) {
  if (!f || node < 0 || node >= f->v.n)
    return;
  const char *nd = (const char *)lsched_view_node(&f->v, node);
  __builtin_prefetch(nd, 1, 3);
  __builtin_prefetch(nd + f->v.node_size - 1, 1, 3);
  lsched_fragmeter_prefetch(f->meter, node);
  if (node < f->n) /* its class slot, which the next update reads */
    __builtin_prefetch(&f->ns[node], 1, 3);
}

static const lsched_observer obs_ops = {
    .version = LSCHED_OBSERVER_VERSION,
    .on_alloc = obs_changed,
    .on_release = obs_changed,
    .on_node_change = obs_node,
};

/* ------------------------------------------------------------------ shapes */

/* What tells shapes apart (the request's other fields are the same for
 * every job, or, as the priority, matter to no fit). The GPU count and
 * share share a word, built in registers (as two ints, fragtrack_add
 * stored them apart and loaded them as one word, which stalls the store
 * forwarding). */
typedef struct skey {
  int64_t cpu, mem;
  uint64_t g; /* GPU share << 32 | count (both as unsigned 32-bit) */
  uint64_t mask;
} skey;

/* One entry of the shapes' hash table (open addressing): the key in
 * place, so that a look-up (twice per job: fragtrack_add, fragtrack_shape)
 * compares it without reading the shape. */
struct sslot {
  skey k;
  uint32_t id1; /* shape id + 1; 0: empty */
};

/* The fields folded into one word (memory MiB shifted past the usual
 * CPU milli, the GPU word spread by a multiply), then one multiply, whose
 * high half mixes every bit: collisions only cost a probe (keys are
 * compared whole). */
static inline uint32_t key_hash(const skey *k) {
  uint64_t w = (uint64_t)k->cpu ^ (uint64_t)k->mem << 20 ^
               k->g * UINT64_C(0xC2B2AE3D27D4EB4F) ^ k->mask;
  return (uint32_t)((w * UINT64_C(0x9E3779B97F4A7C15)) >> 32);
}

static inline int key_eq(const skey *a, const skey *b) {
  return a->cpu == b->cpu && a->mem == b->mem && a->g == b->g &&
         a->mask == b->mask;
}

static skey req_key(const lsched_request *r) {
  skey k = {r->cpu_milli, r->memory_mib,
            (uint64_t)(uint32_t)r->gpu_milli << 32 | (uint32_t)r->gpu_count,
            r->model_mask};
  return k;
}

static int rehash(sim_fragtrack *f, uint32_t nn) {
  sslot *s = calloc(nn, sizeof *s);
  if (!s)
    return -2;
  for (uint32_t i = 0; i < f->nshapes; i++) {
    skey k = req_key(&f->shapes[i].req);
    uint32_t j = key_hash(&k) & (nn - 1);
    while (s[j].id1)
      j = (j + 1) & (nn - 1);
    s[j].k = k;
    s[j].id1 = i + 1;
  }
  free(f->slot);
  f->slot = s;
  f->nslot = nn;
  return 0;
}

/* The id of shape k, or NO_SHAPE if it was never interned (the table
 * exists from fragtrack_begin on). */
static inline uint32_t lookup(const sim_fragtrack *f, const skey *k) {
  uint32_t j = key_hash(k) & (f->nslot - 1);
  for (; f->slot[j].id1; j = (j + 1) & (f->nslot - 1))
    if (key_eq(&f->slot[j].k, k))
      return f->slot[j].id1 - 1;
  return NO_SHAPE;
}

static uint32_t intern(sim_fragtrack *f, const lsched_request *r) {
  if (2 * (f->nshapes + 1) >= f->nslot && rehash(f, 2 * f->nslot))
    return NO_SHAPE - 1;
  skey k = req_key(r);
  uint32_t j = key_hash(&k) & (f->nslot - 1);
  for (; f->slot[j].id1; j = (j + 1) & (f->nslot - 1))
    if (key_eq(&f->slot[j].k, &k))
      return f->slot[j].id1 - 1;
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
  f->slot[j].k = k;
  f->slot[j].id1 = ++f->nshapes;
  return f->nshapes - 1;
}

/* ------------------------------------------------------------------ setup */

static void strand_init(sim_fragtrack *f);
static int32_t rank_of(const int64_t *v, int n, int64_t x);

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The distinct CPU and memory needs of the shapes, ascending: a node's
 * free CPU (memory) matters to lsched_fits of every shape only through its
 * rank among them. */
static int thresholds(sim_fragtrack *f) {
  size_t ns = f->nshapes ? f->nshapes : 1;
  f->cthr = malloc(ns * sizeof *f->cthr);
  f->mthr = malloc(ns * sizeof *f->mthr);
  if (!f->cthr || !f->mthr)
    return -2;
  for (uint32_t i = 0; i < f->nshapes; i++) {
    f->cthr[i] = f->shapes[i].req.cpu_milli;
    f->mthr[i] = f->shapes[i].req.memory_mib;
  }
  int64_t *v[2] = {f->cthr, f->mthr};
  int *nv[2] = {&f->ncthr, &f->nmthr};
  for (int j = 0; j < 2; j++) {
    qsort(v[j], f->nshapes, sizeof *v[j], cmp_i64);
    int d = 0;
    for (uint32_t i = 0; i < f->nshapes; i++)
      if (d == 0 || v[j][d - 1] != v[j][i])
        v[j][d++] = v[j][i];
    *nv[j] = d;
  }
  for (uint32_t i = 0; i < f->nshapes; i++) {
    shape *sh = &f->shapes[i];
    sh->cneed = rank_of(f->cthr, f->ncthr, sh->req.cpu_milli);
    sh->mneed = rank_of(f->mthr, f->nmthr, sh->req.memory_mib);
    const lsched_request *r = &sh->req;
    sh->plain = r->gpu_count > 0 && lsched_request_validate(r) == LSCHED_OK &&
                (r->version < 2 || r->mig_kind == 0) &&
                (r->version < 3 || (!r->features && !r->node_allowed &&
                                    !r->node_filter));
  }
  return 0;
}

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
  free(f->now.touched);
  free(f->now.tmark);
  free(f->now.qcount);
  free(f->now.ever);
  free(f->ns);
  free(f->dirty);
  free(f->dirty_list);
  free(f->nchg_list);
  free(f->cls);
  free(f->cg);
  free(f->htab);
  free(f->cfree);
  free(f->cthr);
  free(f->mthr);
  free(f->tree);
  free(f->lstale);
  free(f->lstale_list);
  free(f);
}

int fragtrack_begin(sim_fragtrack **out, sim_cluster *sc) {
  *out = NULL;
  sim_fragtrack *f = calloc(1, sizeof *f);
  if (!f)
    return -2;
  f->c = sc->c;
  f->now.node_gen = 1;
  f->n = lsched_cluster_node_count(sc->c);
  size_t nz = f->n ? (size_t)f->n : 1;
  /* Masks as sim_typical_workload: a spec the cluster lacks names only
   * absent models (such jobs never queue: the engine sets them aside). */
  int nm = lsched_cluster_model_count(sc->c);
  f->present = nm >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << nm) - 1;
  f->ns = calloc(nz, sizeof *f->ns);
  f->dirty = calloc(nz, 1);
  f->dirty_list = malloc(nz * sizeof *f->dirty_list);
  f->nchg_list = malloc(nz * sizeof *f->nchg_list);
  f->cls = malloc(nz * sizeof *f->cls);
  f->cg = malloc(nz * LSCHED_MAX_GPUS_PER_NODE * sizeof *f->cg);
  f->cfree = malloc(nz * sizeof *f->cfree);
  f->size = 1;
  while (f->size < f->n)
    f->size *= 2;
  f->tree = malloc(2 * (size_t)f->size * sizeof *f->tree);
  f->lstale = calloc(nz, 1);
  f->lstale_list = malloc(nz * sizeof *f->lstale_list);
  f->hmask = 1;
  while (f->hmask < 2 * nz)
    f->hmask *= 2;
  f->htab = malloc(f->hmask * sizeof *f->htab);
  f->hmask--;
  if (!f->ns || !f->dirty || !f->dirty_list || !f->nchg_list || !f->cls ||
      !f->cg || !f->cfree || !f->tree || !f->htab || !f->lstale ||
      !f->lstale_list || rehash(f, 1024)) {
    fragtrack_free(f);
    return -2;
  }
  *out = f;
  return 0;
}

/* The shape fields of a job's request as the engine builds it
 * (sim_job_request with the spec's mask: ~present when the spec names no
 * model of the cluster), without building the request. */
static inline skey job_key(const sim_fragtrack *f, const job_record *jr,
                           uint64_t spec_mask, int spec_absent) {
  int g = jr->num_gpu > 0;
  /* the key's GPU word, both halves 0 for a CPU-only job */
  uint64_t gw = (uint64_t)(uint32_t)jr->gpu_milli << 32 | (uint32_t)jr->num_gpu;
  skey k = {jr->cpu_milli, jr->memory_mib, g ? gw : 0,
            g && jr->gpu_spec >= 0 ? (spec_absent ? ~f->present : spec_mask)
                                   : 0};
  return k;
}

/* fragtrack_add of a job whose shape is new: interned, and counted (the
 * counts grow with the shapes). Its request is the engine's (CPU-only
 * jobs too, for the workload): k.mask is the mask sim_job_request keeps
 * (it drops any other). Out of line, given the key (which the common
 * path has built) instead of the spec: a trace has few shapes, and the
 * common path then keeps fewer values live and saves no register. */
static __attribute__((noinline)) int
add_new(sim_fragtrack *f, const job_record *jr, uint64_t mask) {
  lsched_request r;
  sim_job_request(jr, mask, &r);
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

int fragtrack_add(sim_fragtrack *f, const job_record *jr, uint64_t spec_mask,
                  int spec_absent) {
  skey k = job_key(f, jr, spec_mask, spec_absent);
  uint32_t id = lookup(f, &k);
  if (id == NO_SHAPE)
    return add_new(f, jr, k.mask);
  f->count[id]++; /* counted since add_new interned it */
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
  f->now.touched = malloc(ns * sizeof *f->now.touched);
  f->now.tmark = calloc(ns, sizeof *f->now.tmark);
  f->now.qcount = calloc(ns, sizeof *f->now.qcount);
  f->now.ever = calloc(ns, sizeof *f->now.ever);
  if (!f->calc || !f->now.touched || !f->now.tmark || !f->now.qcount ||
      !f->now.ever)
    return -2;
  f->now.nq = f->nshapes;
  for (uint32_t i = 0; i < f->nshapes; i++)
    f->shapes[i].head = -1;
  if (thresholds(f))
    return -2;
  f->v = (lsched_view)LSCHED_VIEW_INIT;
  if (lsched_cluster_view(f->c, &f->v))
    return -2;
  strand_init(f);
  f->inited = 1;
  lsched_fragmeter_get(f->meter, &f->now.fr);
  return 0;
}

uint32_t fragtrack_shape(const sim_fragtrack *f, const job_record *jr,
                         uint64_t spec_mask, int spec_absent) {
  if (!f || jr->num_gpu <= 0)
    return FRAGTRACK_NO_SHAPE;
  skey k = job_key(f, jr, spec_mask, spec_absent);
  /* Every job was added before; an unknown shape here would be an engine
   * bug: it then counts in no shape. */
  return lookup(f, &k);
}

const lsched_workload *fragtrack_workload(const sim_fragtrack *f) {
  return f ? f->wl : NULL;
}

void fragtrack_set_ever(sim_fragtrack *f, uint32_t id, int ever) {
  if (!f || id >= f->now.nq)
    return;
  f->now.ever[id] = (uint64_t)f->now.node_gen << 1 | (ever != 0);
}

/* ---------------------------------------------------------------- stranded
 * A node's value depends only on its free state and on the computed set
 * calc[] (the shapes in the queue at the last sync, sorted by share then
 * id): its first fitting shape there and the free milli of its GPUs below
 * that shape's share. Nodes are therefore grouped into classes of equal
 * free state as lsched_fits and the value see it (state up or not, mode,
 * model, the rank of free CPU and of free memory among the shapes' needs,
 * the free milli of each GPU in descending order); a class holds the value
 * of each of its nodes, its first fitting shape (its bucket) and a summary
 * leaf. So
 * - an allocation or release moves the node to the class of its new state
 *   (a hash look-up; only a class that is new is evaluated);
 * - a shape leaving the set re-evaluates the classes of its bucket only;
 * - a shape joining it moves the classes it fits whose first fitting shape
 *   comes later (or that none fitted): they are found by a descent of a
 *   summary tree over the classes (sumry), which skips every subtree that
 *   cannot hold the shape; so a shape that fits nowhere, the usual reason
 *   to wait, costs about one root-to-leaf path, and one that fits
 *   thousands of identical nodes costs one class.
 * Nodes with no GPU milli free, no GPUs, MIG or removed strand nothing and
 * are in no class. The values are those of recomputing every node at each
 * change of the set (tests/test_fragtrack.c; -DFRAGTRACK_VERIFY). */

static int cmp_calc(const sim_fragtrack *f, uint32_t a, uint32_t b) {
  const lsched_request *x = &f->shapes[a].req;
  const lsched_request *y = &f->shapes[b].req;
  if (x->gpu_milli != y->gpu_milli)
    return x->gpu_milli < y->gpu_milli ? -1 : 1;
  return (a > b) - (a < b);
}

static void bucket_out(sim_fragtrack *f, int32_t c) {
  cls *e = &f->cls[c];
  uint32_t b = e->first;
  if (b >= f->nshapes)
    return;
  if (e->bprv >= 0)
    f->cls[e->bprv].bnxt = e->bnxt;
  else
    f->shapes[b].head = e->bnxt;
  if (e->bnxt >= 0)
    f->cls[e->bnxt].bprv = e->bprv;
}

static void bucket_in(sim_fragtrack *f, int32_t c, uint32_t b) {
  cls *e = &f->cls[c];
  e->first = b;
  if (b >= f->nshapes)
    return;
  int32_t h = f->shapes[b].head;
  e->bprv = -1;
  e->bnxt = h;
  if (h >= 0)
    f->cls[h].bprv = c;
  f->shapes[b].head = c;
}

static void sum_merge(sumry *t, const sumry *a, const sumry *b) {
  t->cpu = a->cpu > b->cpu ? a->cpu : b->cpu;
  t->mem = a->mem > b->mem ? a->mem : b->mem;
  t->models = a->models | b->models;
  for (int k = 0; k < CAPK; k++)
    t->cap[k] = a->cap[k] > b->cap[k] ? a->cap[k] : b->cap[k];
}

static int sum_eq(const sumry *a, const sumry *b) {
  if (a->cpu != b->cpu || a->mem != b->mem || a->models != b->models)
    return 0;
  for (int k = 0; k < CAPK; k++)
    if (a->cap[k] != b->cap[k])
      return 0;
  return 1;
}

static void sum_empty(sumry *t) {
  t->cpu = t->mem = INT64_MIN;
  t->models = 0;
  for (int k = 0; k < CAPK; k++)
    t->cap[k] = -1;
}

/* Leaf c changed: its ancestors up to the first that stays the same. */
static void sum_pull(sim_fragtrack *f, int32_t c);

/* The summary tree is read only when a shape joins the set (shape_joined,
 * rare next to allocations): a class whose state changed only marks its
 * leaf stale, and tree_fresh brings the stale leaves and their ancestors
 * up to date before a join. */
static void leaf_stale(sim_fragtrack *f, int32_t c) {
  if (!f->lstale[c]) {
    f->lstale[c] = 1;
    f->lstale_list[f->nlstale++] = c;
  }
}

/* Class c's leaf from its key (empty for a class with no node): an upper
 * bound of what its nodes fit (the CPU and memory of one of them rank
 * alike against every shape). */
static void leaf_fill(sim_fragtrack *f, int32_t c) {
  const cls *e = &f->cls[c];
  sumry *lf = &f->tree[f->size + c];
  if (e->count == 0) {
    sum_empty(lf);
    return;
  }
  const int16_t *g = f->cg + (size_t)c * LSCHED_MAX_GPUS_PER_NODE;
  lf->cpu = e->cpu;
  lf->mem = e->mem;
  lf->models = e->model >= 0 && e->model < 64 ? UINT64_C(1) << e->model
                                              : ~UINT64_C(0);
  for (int j = 0; j < CAPK; j++) {
    int x = j < e->ng ? g[j] : -1;
    if (x >= 0 && e->mode == LSCHED_GPU_EXCLUSIVE)
      x = x == 1000 ? 1000 : 0;
    lf->cap[j] = (int16_t)x;
  }
}

static void tree_fresh(sim_fragtrack *f) {
  if (f->nlstale == 0)
    return;
  int depth = 0;
  for (int t = f->size; t > 1; t /= 2)
    depth++;
  int all = (int64_t)f->nlstale * depth > f->size;
  for (int k = 0; k < f->nlstale; k++) {
    int32_t c = f->lstale_list[k];
    f->lstale[c] = 0;
    leaf_fill(f, c);
    if (!all)
      sum_pull(f, c);
  }
  f->nlstale = 0;
  if (all) /* many leaves: every inner entry once, bottom-up */
    for (int t = f->size - 1; t >= 1; t--)
      sum_merge(&f->tree[t], &f->tree[2 * t], &f->tree[2 * t + 1]);
}

static void sum_pull(sim_fragtrack *f, int32_t c) {
  for (int t = (f->size + c) / 2; t >= 1; t /= 2) {
    sumry m;
    sum_merge(&m, &f->tree[2 * t], &f->tree[2 * t + 1]);
    if (sum_eq(&m, &f->tree[t]))
      break;
    f->tree[t] = m;
  }
}

/* Free milli of the GPUs g[0..ng) below dmin (and above 0). */
static int64_t below(const int16_t *g, int ng, int dmin) {
  int64_t s = 0;
  for (int k = 0; k < ng; k++)
    if (g[k] > 0 && g[k] < dmin)
      s += g[k];
  return s;
}

/* How many of the ascending values v[0..n) are <= x. */
static int32_t rank_of(const int64_t *v, int n, int64_t x) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (v[mid] <= x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* rank_of(v, n, x) where r is likely it or next to it (a node's rank
 * before its change: CPU and memory often stay between the same two
 * needs, or cross one; a binary search for that cost ~30 instructions
 * per changed node). */
static inline int32_t rank_near(const int64_t *v, int n, int64_t x,
                                int32_t r) {
  if (r < 0 || r > n)
    return rank_of(v, n, x);
  if (r > 0 && v[r - 1] > x) { /* below: r - 1 if v[r - 2] <= x */
    if (r == 1 || v[r - 2] <= x)
      return r - 1;
  } else if (r < n && v[r] <= x) { /* above: r + 1 if v[r + 1] > x */
    if (r + 1 == n || v[r + 1] > x)
      return r + 1;
  } else {
    return r;
  }
  return rank_of(v, n, x);
}

#define CSWAP(a, b)                                                            \
  do {                                                                         \
    int lo_ = (a) < (b) ? (a) : (b), hi_ = (a) < (b) ? (b) : (a);              \
    (a) = hi_;                                                                 \
    (b) = lo_;                                                                 \
  } while (0)

#if defined(__SSE2__)
/* 8 values (0..1000) into g, descending: a bitonic network on the 8
 * 16-bit lanes of one SSE2 register, 6 stages of a min and a select of
 * the lanes that take the max, lo ^ (v ^ p) there (v and its partner p
 * are the pair {lo, hi}: ~18 instructions per sort fewer than a max and
 * an and/and-not blend per stage; a third of the scalar network's
 * instructions); tests/test_fragtrack.c checks sort_desc against qsort
 * through fragtrack_sort_gpus, every 0/1 input among them, which by the
 * 0-1 principle covers every input of the network). */
static inline void sort8_desc(const int *fm, int16_t *g) {
  __m128i v = _mm_packs_epi32(_mm_loadu_si128((const __m128i *)fm),
                              _mm_loadu_si128((const __m128i *)(fm + 4)));
#define STAGE(P, m0, m1, m2, m3, m4, m5, m6, m7)                               \
  do {                                                                         \
    __m128i p_ = (P), lo_ = _mm_min_epi16(v, p_);                              \
    __m128i m_ = _mm_set_epi16(m7, m6, m5, m4, m3, m2, m1, m0);                \
    v = _mm_xor_si128(lo_, _mm_and_si128(m_, _mm_xor_si128(v, p_)));          \
  } while (0)
/* each lane with its partner at distance 1, 2, 4 */
#define SW1(x) _mm_shufflehi_epi16(_mm_shufflelo_epi16((x), 0xB1), 0xB1)
#define SW2(x) _mm_shuffle_epi32((x), 0xB1)
#define SW4(x) _mm_shuffle_epi32((x), 0x4E)
  /* pairs alternately descending and ascending, then the two halves
   * descending and ascending, then the whole descending */
  STAGE(SW1(v), -1, 0, 0, -1, -1, 0, 0, -1);
  STAGE(SW2(v), -1, -1, 0, 0, 0, 0, -1, -1);
  STAGE(SW1(v), -1, 0, -1, 0, 0, -1, 0, -1);
  STAGE(SW4(v), -1, -1, -1, -1, 0, 0, 0, 0);
  STAGE(SW2(v), -1, -1, 0, 0, -1, -1, 0, 0);
  STAGE(SW1(v), -1, 0, -1, 0, -1, 0, -1, 0);
#undef STAGE
#undef SW1
#undef SW2
#undef SW4
  _mm_storeu_si128((__m128i *)g, v);
}
#endif

/* fm[0..ng) into g, descending: 8 GPUs (the usual node) by sort8_desc
 * where SSE2 is, up to 8 by a branch-free sorting network (19
 * compare-exchanges), more by insertion. */
static inline __attribute__((always_inline)) void
sort_desc(const int *fm, int ng, int16_t *g) {
#if defined(__SSE2__)
  if (ng == 8) {
    sort8_desc(fm, g);
    return;
  }
#endif
  if (ng <= 8) {
    int v[8];
    for (int j = 0; j < 8; j++)
      v[j] = j < ng ? fm[j] : -1;
    CSWAP(v[0], v[2]); CSWAP(v[1], v[3]); CSWAP(v[4], v[6]); CSWAP(v[5], v[7]);
    CSWAP(v[0], v[4]); CSWAP(v[1], v[5]); CSWAP(v[2], v[6]); CSWAP(v[3], v[7]);
    CSWAP(v[0], v[1]); CSWAP(v[2], v[3]); CSWAP(v[4], v[5]); CSWAP(v[6], v[7]);
    CSWAP(v[2], v[4]); CSWAP(v[3], v[5]);
    CSWAP(v[1], v[4]); CSWAP(v[3], v[6]);
    CSWAP(v[1], v[2]); CSWAP(v[3], v[4]); CSWAP(v[5], v[6]);
    /* the unused tail as zeros: keys of up to 8 GPUs are compared and
     * hashed as two 64-bit words */
    for (int j = 0; j < 8; j++)
      g[j] = (int16_t)(j < ng ? v[j] : 0);
    return;
  }
  for (int n = 0; n < ng; n++) {
    int x = fm[n], p = n;
    while (p > 0 && g[p - 1] < x) {
      g[p] = g[p - 1];
      p--;
    }
    g[p] = (int16_t)x;
  }
}

void fragtrack_sort_gpus(const int *fm, int ng, int16_t *g) {
  sort_desc(fm, ng, g);
}

/* Whether node nd strands nothing whatever the queue (no GPU milli free,
 * no GPUs, MIG, removed): such a node is in no class. */
static inline int node_inelig(const lsched_node *nd) {
  return nd->state == LSCHED_NODE_REMOVED || nd->gpu_count <= 0 ||
         nd->gpu_free_sum <= 0 ||
         (nd->mode != LSCHED_GPU_SHARED && nd->mode != LSCHED_GPU_EXCLUSIVE);
}

/* The free state of node nd (f's view's) as the value sees it (the free
 * milli of its GPUs sorted descending, up to 8 padded with zeros); 0 if
 * it strands nothing whatever the queue (node_inelig). was: the class of
 * its state before (a hint for the ranks), or -1. */
static int node_key(const sim_fragtrack *f, const lsched_node *nd, nkey *k,
                    int32_t was) {
  if (node_inelig(nd))
    return 0;
  int ng = nd->gpu_count;
  if (ng > LSCHED_MAX_GPUS_PER_NODE)
    ng = LSCHED_MAX_GPUS_PER_NODE;
  sort_desc(f->v.gpu_free + nd->gpu_off, ng, k->g);
  k->cpu = nd->cpu_free;
  k->mem = nd->mem_free;
  k->milli = nd->gpu_free_sum;
  /* with no class before (e.g. no GPU milli was free), the top ranks as
   * the hint: one test each when the free CPU and memory are at least
   * every shape's need, as on the nodes of 10k@1.2 first-fit backfill
   * (4965 such moves, two binary searches each before) */
  k->cpur = rank_near(f->cthr, f->ncthr, nd->cpu_free,
                      was >= 0 ? f->cls[was].cpur : f->ncthr);
  k->memr = rank_near(f->mthr, f->nmthr, nd->mem_free,
                      was >= 0 ? f->cls[was].memr : f->nmthr);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* model, mode and up as one 4-byte store: key_is's compare reads the
   * three as one word (GCC), which a 2-byte and two 1-byte stores could
   * not forward to: it waited for them to reach the cache (19% of
   * rekey_node's time samples, 100k@1.2 first-fit backfill). */
  _Static_assert(offsetof(nkey, mode) == offsetof(nkey, model) + 2 &&
                     offsetof(nkey, up) == offsetof(nkey, model) + 3,
                 "model, mode and up are one 4-byte word");
  const uint32_t mmu = (uint32_t)(uint16_t)(int16_t)nd->model |
                       (uint32_t)(uint8_t)nd->mode << 16 |
                       (uint32_t)(nd->state == LSCHED_NODE_UP) << 24;
  memcpy(&k->model, &mmu, sizeof mmu);
#else
  k->model = (int16_t)nd->model;
  k->mode = (uint8_t)nd->mode;
  k->up = nd->state == LSCHED_NODE_UP;
#endif
  k->ng = (uint8_t)ng;
  uint64_t h = (uint64_t)(uint32_t)k->cpur * UINT64_C(0x9E3779B97F4A7C15) ^
               (uint64_t)(uint32_t)k->memr * UINT64_C(0xC2B2AE3D27D4EB4F) ^
               ((uint64_t)(uint16_t)k->model << 24 | (uint64_t)k->mode << 16 |
                (uint64_t)k->up << 8 | k->ng) *
                   UINT64_C(0x165667B19E3779F9);
  /* the free milli four at a time (the tail padded with zeros); 8 GPUs
   * or fewer (zero-padded to 8) as one or two words without the loop's
   * tests (~10 instructions per changed node of 8 GPUs) */
  if (ng <= 8) {
    uint64_t w[2];
    memcpy(w, k->g, sizeof w);
    h = (h ^ w[0]) * UINT64_C(0x100000001B3);
    h ^= h >> 29;
    if (ng > 4) {
      h = (h ^ w[1]) * UINT64_C(0x100000001B3);
      h ^= h >> 29;
    }
  } else {
    for (int n = 0; n < ng; n += 4) {
      uint64_t w = 0;
      if (n + 4 <= ng) {
        memcpy(&w, k->g + n, sizeof w);
      } else {
        for (int j = 0; j < 4 && n + j < ng; j++)
          w |= (uint64_t)(uint16_t)k->g[n + j] << (16 * j);
      }
      h = (h ^ w) * UINT64_C(0x100000001B3);
      h ^= h >> 29;
    }
  }
  h ^= h >> 31;
  k->hash = (uint32_t)h;
  return 1;
}

static const int16_t *cls_gpus(const sim_fragtrack *f, int32_t c) {
  return f->cg + (size_t)c * LSCHED_MAX_GPUS_PER_NODE;
}

static inline __attribute__((always_inline)) int
key_is(const sim_fragtrack *f, int32_t c, const nkey *k) {
  const cls *e = &f->cls[c];
  if (e->hash != k->hash || e->cpur != k->cpur || e->memr != k->memr ||
      e->model != k->model || e->mode != k->mode || e->up != k->up ||
      e->ng != k->ng)
    return 0;
  const int16_t *g = cls_gpus(f, c);
  if (k->ng <= 8) { /* both zero-padded to 8 */
    uint64_t a[2], b[2];
    memcpy(a, g, sizeof a);
    memcpy(b, k->g, sizeof b);
    return a[0] == b[0] && a[1] == b[1];
  }
  return !memcmp(g, k->g, (size_t)k->ng * sizeof *k->g);
}

static int32_t cls_find(const sim_fragtrack *f, const nkey *k) {
  int32_t c = f->htab[k->hash & f->hmask];
  while (c >= 0 && !key_is(f, c, k))
    c = f->cls[c].hnext;
  return c;
}

/* Class c (hashed nowhere) takes state k: its key, its hash entry and its
 * summary leaf; its nodes, value and bucket are left as they are. */
static void cls_set_key(sim_fragtrack *f, int32_t c, const nkey *k) {
  cls *e = &f->cls[c];
  e->cpu = k->cpu;
  e->mem = k->mem;
  e->milli = k->milli;
  e->hash = k->hash;
  e->cpur = k->cpur;
  e->memr = k->memr;
  e->model = k->model;
  e->mode = k->mode;
  e->up = k->up;
  e->ng = k->ng;
  int16_t *g = f->cg + (size_t)c * LSCHED_MAX_GPUS_PER_NODE;
  if (k->ng <= 8) /* zero-padded to 8: a copy of fixed size, inline */
    memcpy(g, k->g, 8 * sizeof *k->g);
  else
    memcpy(g, k->g, (size_t)k->ng * sizeof *k->g);
  e->hnext = f->htab[k->hash & f->hmask];
  f->htab[k->hash & f->hmask] = c;
  leaf_stale(f, c);
}

/* Takes class c out of the hash table (its key is about to change). */
static void cls_unhash(sim_fragtrack *f, int32_t c) {
  int32_t *pp = &f->htab[f->cls[c].hash & f->hmask];
  while (*pp != c)
    pp = &f->cls[*pp].hnext;
  *pp = f->cls[c].hnext;
}

/* A new class of state k, empty, its value not yet evaluated. */
static int32_t cls_new(sim_fragtrack *f, const nkey *k) {
  int32_t c = f->cfree[--f->ncfree];
  cls *e = &f->cls[c];
  memset(e, 0, sizeof *e);
  e->mhead = -1;
  e->first = FIRST_NONE;
  cls_set_key(f, c, k);
  return c;
}

static void cls_del(sim_fragtrack *f, int32_t c) {
  cls *e = &f->cls[c];
  bucket_out(f, c);
  e->first = FIRST_NONE;
  cls_unhash(f, c);
  leaf_stale(f, c); /* count 0: an empty leaf */
  f->cfree[f->ncfree++] = c;
}

/* Whether shape s fits the nodes of class c (shared or exclusive, in the
 * state of its key), read from the key: lsched_fits's tests of CPU,
 * memory, state, GPU count, model and k GPUs with the share free (1000 on
 * exclusive nodes). For a plain shape on a model id below 64 that is
 * lsched_fits's answer; otherwise 0 means it does not fit and 1 asks
 * lsched_fits on a node of c. (-DFRAGTRACK_VERIFY checks every node
 * against lsched_fits.) */
static inline int fits_cls(const sim_fragtrack *f, int32_t c, const shape *s) {
  const cls *e = &f->cls[c];
  const lsched_request *r = &s->req;
  if (e->cpur < s->cneed || e->memr < s->mneed || !e->up)
    return 0;
  int k = r->gpu_count;
  int exact = s->plain && e->model >= 0 && e->model < 64;
  if (k <= 0)
    return exact || lsched_fits(f->c, e->mhead, r);
  if (k > e->ng)
    return 0;
  if (r->model_mask && e->model >= 0 && e->model < 64 &&
      !(r->model_mask >> e->model & 1))
    return 0;
  int d = e->mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI : r->gpu_milli;
  if (cls_gpus(f, c)[k - 1] < d)
    return 0;
  return exact || lsched_fits(f->c, e->mhead, r);
}

/* The share shape s takes of each GPU on the nodes of class c (what
 * lsched_effective_milli says for a plain shape: 1000 on exclusive
 * nodes). */
static inline int eff_cls(const sim_fragtrack *f, int32_t c, const shape *s) {
  const cls *e = &f->cls[c];
  if (!s->plain)
    return lsched_effective_milli(f->c, e->mhead, &s->req);
  return e->mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI : s->req.gpu_milli;
}

/* calc[]'s loosest GPU needs, after a change of the set. */
static void calc_env(sim_fragtrack *f) {
  f->env_k = f->env_milli = INT_MAX;
  for (uint32_t k = 0; k < f->ncalc; k++) {
    const shape *s = &f->shapes[f->calc[k]];
    int gc = s->req.gpu_count < 0 ? 0 : s->req.gpu_count;
    f->env_k = gc < f->env_k ? gc : f->env_k;
    f->env_milli =
        s->req.gpu_milli < f->env_milli ? s->req.gpu_milli : f->env_milli;
  }
}

/* Whether no shape of calc[] fits the nodes of class c, by the set's
 * loosest GPU needs (most classes cls_eval meets fit none of the queued
 * shapes: a 10k worst-fit backfill replay, 96%; the loop over the set
 * then tests every shape). fits_cls fails shape s (k_s GPUs of share
 * d_s, 1000 on exclusive nodes) when k_s > ng or the k_s-th largest free
 * share is below d_s; with every k_s >= k (the least count) and d_s >= d
 * (the least share), k > ng or a k-th largest share below d fails every
 * shape. (The set's least CPU and memory ranks tested too filtered
 * almost nothing more and cost ~6 instructions a call on 10k worst-fit
 * fifo.) */
static inline int calc_none(const sim_fragtrack *f, int32_t c) {
  const cls *e = &f->cls[c];
  int k = f->env_k;
  if (k <= 0) /* a shape without GPUs: fits_cls asks lsched_fits */
    return 0;
  if (k > e->ng)
    return 1;
  int d = e->mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI : f->env_milli;
  return cls_gpus(f, c)[k - 1] < d;
}

/* Class c's value and first fitting shape from scratch (every node of it
 * in the state of its key). */
static __attribute__((noinline)) void cls_eval_full(sim_fragtrack *f,
                                                    int32_t c) {
  cls *e = &f->cls[c];
  uint32_t first = FIRST_NONE;
  int64_t v = e->milli;
  uint32_t n = calc_none(f, c) ? 0 : f->ncalc;
  for (uint32_t k = 0; k < n; k++) {
    const shape *s = &f->shapes[f->calc[k]];
    if (fits_cls(f, c, s)) {
      /* ascending share: the first that fits has the smallest */
      first = f->calc[k];
      v = below(cls_gpus(f, c), e->ng, eff_cls(f, c, s));
      break;
    }
  }
  bucket_out(f, c);
  bucket_in(f, c, first);
  f->S += (int64_t)e->count * (v - e->str);
  e->str = v;
}

/* cls_eval_full, inline where a class in no bucket fits none of calc[] by
 * its loosest GPU needs (calc_none: 95% of the classes evaluated on
 * 10k@1.2 first-fit backfill): its value is its free milli, its first
 * fitting shape stays none. */
static inline void cls_eval(sim_fragtrack *f, int32_t c) {
  cls *e = &f->cls[c];
  if (e->first == FIRST_NONE && calc_none(f, c)) {
    f->S += (int64_t)e->count * (e->milli - e->str);
    e->str = e->milli;
    return;
  }
  cls_eval_full(f, c);
}

/* Node i (nd, in class old or -1) into the class of its current state. */
static __attribute__((noinline)) void
rekey_node(sim_fragtrack *f, int i, const lsched_node *nd, int32_t old) {
  nkey k;
  int32_t nc = -1;
  int elig = node_key(f, nd, &k, old);
  if (elig) {
    if (old >= 0 && key_is(f, old, &k))
      return;
    nc = cls_find(f, &k);
    if (nc < 0 && old >= 0 && f->cls[old].count == 1) {
      /* The node was alone in its class and its new state has none: the
       * class takes the new state in place (what deleting it and opening
       * a new one would come to, with one summary update instead of two;
       * the node stays its only member). */
      cls_unhash(f, old);
      cls_set_key(f, old, &k);
      cls_eval(f, old);
      return;
    }
  } else if (old < 0) {
    return;
  }
  if (old >= 0) {
    cls *e = &f->cls[old];
    if (f->ns[i].mprv >= 0)
      f->ns[f->ns[i].mprv].mnxt = f->ns[i].mnxt;
    else
      e->mhead = f->ns[i].mnxt;
    if (f->ns[i].mnxt >= 0)
      f->ns[f->ns[i].mnxt].mprv = f->ns[i].mprv;
    f->S -= e->str;
    if (--e->count == 0)
      cls_del(f, old);
  }
  f->ns[i].cid = nc;
  if (!elig)
    return;
  int fresh = nc < 0;
  if (fresh)
    nc = f->ns[i].cid = cls_new(f, &k);
  cls *e = &f->cls[nc];
  f->ns[i].mprv = -1;
  f->ns[i].mnxt = e->mhead;
  if (e->mhead >= 0)
    f->ns[e->mhead].mprv = i;
  e->mhead = i;
  e->count++;
  f->S += e->str;
  if (fresh)
    cls_eval(f, nc);
}

/* Node i into the class of its current state. Inline: a node in no class
 * whose state still strands nothing (filled again since it was last
 * moved: a third of the moves on 10k@1.2 first-fit backfill) stays
 * without a call. */
static inline void rekey(sim_fragtrack *f, int i) {
  const lsched_node *nd = lsched_view_node(&f->v, i); /* i < f->n <= v.n */
  int32_t old = f->ns[i].cid;
  if (old < 0 && node_inelig(nd))
    return;
  rekey_node(f, i, nd, old);
}

static void strand_init(sim_fragtrack *f) {
  for (int t = 0; t < 2 * f->size; t++)
    sum_empty(&f->tree[t]);
  for (uint32_t h = 0; h <= f->hmask; h++)
    f->htab[h] = -1;
  f->ncfree = 0;
  for (int c = f->n - 1; c >= 0; c--)
    f->cfree[f->ncfree++] = c;
  f->S = 0;
  for (int i = 0; i < f->n; i++) {
    f->ns[i].cid = -1;
    rekey(f, i);
  }
}

/* Shape a joined calc[]: the classes it fits whose first fitting shape
 * comes after it (or that none fitted) now have it first. */
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
    int32_t c = t - f->size;
    cls *x = &f->cls[c];
    uint32_t cur = x->first;
    if (cur != FIRST_NONE && f->shapes[cur].rank <= ra)
      continue;
    if (!fits_cls(f, c, &f->shapes[a]))
      continue;
    int64_t v = below(cls_gpus(f, c), x->ng, eff_cls(f, c, &f->shapes[a]));
    bucket_out(f, c);
    bucket_in(f, c, a);
    f->S += (int64_t)x->count * (v - x->str);
    x->str = v;
  }
}

/* The queue's shape set changed since the last sync: brings calc[] and
 * every class's value to the new set. Out of line: inlined, its registers
 * were saved at every update_queued, 86% of which only move the changed
 * nodes (10k@1.2 first-fit skip: ~20 instructions an update). */
__attribute__((noinline)) static void sync_set(sim_fragtrack *f) {
  uint32_t nrem = 0, nadd = 0;
  /* touched[] is split in place: removed shapes first, then added ones */
  for (uint32_t k = 0; k < f->now.ntouched; k++) {
    uint32_t id = f->now.touched[k];
    shape *s = &f->shapes[id];
    f->now.tmark[id] = 0;
    if (f->now.qcount[id] > 0 && !s->in_calc)
      f->now.touched[nrem + nadd++] = id;
    else if (f->now.qcount[id] == 0 && s->in_calc) {
      f->now.touched[nrem + nadd] = f->now.touched[nrem];
      f->now.touched[nrem++] = id;
    }
  }
  f->now.ntouched = 0;
  if (nrem + nadd > 0) {
    uint32_t m = 0;
    for (uint32_t k = 0; k < nrem; k++)
      f->shapes[f->now.touched[k]].in_calc = 0;
    for (uint32_t k = 0; k < f->ncalc; k++)
      if (f->shapes[f->calc[k]].in_calc)
        f->calc[m++] = f->calc[k];
    for (uint32_t k = 0; k < nadd; k++) {
      uint32_t id = f->now.touched[nrem + k];
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
    calc_env(f);
  }
  /* First every changed node into the class of its state (a new class is
   * evaluated for the new set), so that every node of a class is in the
   * state of its key when the classes are re-evaluated below. */
  for (int k = 0; k < f->nnchg; k++) {
    f->ns[f->nchg_list[k]].nchg = 0;
    rekey(f, f->nchg_list[k]);
  }
  f->nnchg = 0;
  for (int k = 0; k < f->ndirty; k++) {
    f->dirty[f->dirty_list[k]] = 0;
    rekey(f, f->dirty_list[k]);
  }
  f->ndirty = 0;
  for (uint32_t k = 0; k < nrem; k++) {
    shape *s = &f->shapes[f->now.touched[k]];
    while (s->head >= 0)
      cls_eval(f, s->head);
  }
  if (nadd > 0)
    tree_fresh(f);
  for (uint32_t k = 0; k < nadd; k++)
    shape_joined(f, f->now.touched[nrem + k]);
}

#ifdef FRAGTRACK_VERIFY
/* Node i's value and first fitting shape computed on its own (as before
 * the classes). */
static void node_ref(const sim_fragtrack *f, int i, int64_t *v,
                     uint32_t *first) {
  lsched_node_info ni = LSCHED_NODE_INFO_INIT;
  *v = 0;
  *first = FIRST_INELIG;
  if (lsched_cluster_node_info(f->c, i, &ni) || ni.gpu_count <= 0 ||
      ni.gpu_milli_free <= 0 ||
      (ni.gpu_mode != LSCHED_GPU_SHARED && ni.gpu_mode != LSCHED_GPU_EXCLUSIVE))
    return;
  int fm[LSCHED_MAX_GPUS_PER_NODE];
  int16_t g[LSCHED_MAX_GPUS_PER_NODE];
  int ng = lsched_cluster_gpus_free(f->c, i, fm, LSCHED_MAX_GPUS_PER_NODE);
  ng = ng < 0 ? 0 : ng > LSCHED_MAX_GPUS_PER_NODE ? LSCHED_MAX_GPUS_PER_NODE : ng;
  for (int k = 0; k < ng; k++)
    g[k] = (int16_t)fm[k];
  *first = FIRST_NONE;
  *v = ni.gpu_milli_free;
  for (uint32_t k = 0; k < f->ncalc; k++) {
    const lsched_request *r = &f->shapes[f->calc[k]].req;
    if (lsched_fits(f->c, i, r)) {
      *first = f->calc[k];
      *v = below(g, ng, lsched_effective_milli(f->c, i, r));
      return;
    }
  }
}

/* Debug build (-DFRAGTRACK_VERIFY): every node against its own
 * computation (the nodes changed by lsched_node_change wait for the next
 * change of the set, as documented), the classes' counts and the sum. */
static void verify(const sim_fragtrack *f) {
  int64_t S = 0;
  int32_t *cnt = calloc(f->n ? (size_t)f->n : 1, sizeof *cnt);
  if (!cnt)
    abort();
  for (int i = 0; i < f->n; i++) {
    int32_t c = f->ns[i].cid;
    int64_t have = c >= 0 ? f->cls[c].str : 0;
    uint32_t hf = c >= 0 ? f->cls[c].first : FIRST_INELIG;
    S += have;
    if (c >= 0)
      cnt[c]++;
    if (f->ns[i].nchg)
      continue;
    int64_t v;
    uint32_t first;
    node_ref(f, i, &v, &first);
    nkey k;
    if (v != have || first != hf ||
        (c >= 0 && (!node_key(f, lsched_view_node(&f->v, i), &k, -1) ||
                    !key_is(f, c, &k)))) {
      fprintf(stderr, "fragtrack: node %d: %" PRId64 " != %" PRId64 "\n", i,
              have, v);
      abort();
    }
  }
  for (int c = 0; c < f->n; c++)
    if (cnt[c] && cnt[c] != f->cls[c].count) {
      fprintf(stderr, "fragtrack: class %d: %d nodes, counted %d\n", c,
              (int)cnt[c], (int)f->cls[c].count);
      abort();
    }
  free(cnt);
  if (S != f->S) {
    fprintf(stderr, "fragtrack: sum %" PRId64 " != %" PRId64 "\n", f->S, S);
    abort();
  }
}
#endif

/* fragtrack_update with a queue: the changed nodes to their classes (out
 * of line: the update without a queue, most of them at 100k GPUs, then
 * saves nothing it does not use). */
__attribute__((noinline)) static void update_queued(sim_fragtrack *f) {
  if (f->now.set_changed || !f->valid) {
    sync_set(f);
    f->now.set_changed = 0;
  } else {
    for (int k = 0; k < f->ndirty; k++) {
      f->dirty[f->dirty_list[k]] = 0; /* rekey reads no mark */
      rekey(f, f->dirty_list[k]);
    }
    f->ndirty = 0;
  }
  f->valid = 1;
  f->now.stranded = f->S;
#ifdef FRAGTRACK_VERIFY
  verify(f);
#endif
}

int fragtrack_update(sim_fragtrack *f) {
  if (!f)
    return 0;
  /* The meter moves only with the cluster's allocations, releases and
   * node changes, which the observer sees: read it after one of them. */
  if (f->mstale) {
    lsched_fragmeter_get(f->meter, &f->now.fr);
    f->mstale = 0;
  } else if (f->valid && !f->now.set_changed && f->now.queued > 0) {
    /* No node changed (every allocation, release and node change marks
     * the meter stale) and the set of queued shapes is the same since the
     * last update, which had a queue: its value holds (update_queued would
     * find no node to move; 10k@1.2 first-fit backfill, 29% of the
     * updates with a queue). */
#ifdef FRAGTRACK_VERIFY
    if (f->ndirty || f->nnchg || f->now.stranded != f->S)
      abort();
    verify(f);
#endif
    return 0;
  }
  if (f->now.queued == 0) {
    /* Stranded is 0 with an empty queue. The changed nodes wait in
     * dirty_list: the next update with a queue syncs (valid is 0 then) and
     * moves each to the class of its state then, which is what moving it
     * at every update in between would have come to. */
    f->valid = 0;
    f->now.stranded = 0;
    return 0;
  }
  update_queued(f);
  return 0;
}

void fragtrack_get(const sim_fragtrack *f, fragtrack_values *out) {
  memset(out, 0, sizeof *out);
  if (!f)
    return;
  out->frag_amount = f->now.fr.amount;
  out->frag_rate = f->now.fr.rate;
  out->stranded_gpu_milli = f->now.stranded;
}

void fragtrack_classes(const sim_fragtrack *f, int *classes, int *nodes) {
  *classes = *nodes = 0;
  if (!f || !f->inited) /* before fragtrack_ready */
    return;
  *classes = f->n - f->ncfree;
  for (int i = 0; i < f->n; i++)
    *nodes += f->ns[i].cid >= 0;
}

void fragtrack_means(const sim_fragtrack *f, double span_us,
                     double *frag_amount_mean, double *frag_rate_mean,
                     double *stranded_mean) {
  *frag_amount_mean = *frag_rate_mean = *stranded_mean = 0;
  if (!f || span_us <= 0)
    return;
  double W = (double)f->now.fr.weight_total;
  *frag_amount_mean = W > 0 ? (double)f->now.amount_done / W / span_us : 0;
  *frag_rate_mean = f->now.rate_done / span_us;
  *stranded_mean = (double)f->now.stranded_done / span_us;
}
