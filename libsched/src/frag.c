/*
 * Fragmentation measure of the FGD paper (docs/DESIGN.md section 6) and the
 * incremental meter.
 *
 * Definition (follows NodeGpuShareFragAmount in the authors' simulator,
 * pkg/utils/frag.go): for node n and task type m, f(n,m) is every idle GPU
 * milli of n when m cannot run on n (a CPU-only type; a model the type does
 * not allow; fewer than k GPUs with >= d free; less CPU free than the type
 * needs), else the free milli of the GPUs whose free share is below d. F(n)
 * = sum_m p_m f(n,m). With integer weights w_m (p_m = w_m / W) we keep
 * F(n) x W, an exact integer.
 *
 * Evaluation: the GPU types' shares d are collected into ascending
 * thresholds thr[0..D). For a node we keep, per threshold j, cnt[j] = GPUs
 * with free >= thr[j] and small[j] = free milli of the others; then f(n,m)
 * is small[j(m)] when the type can run and idle otherwise, so
 *   F x W = sum_{m runs} w_m small[j(m)] + (W - sum_{m runs} w_m) x idle,
 * O(types allowed on the node's model). The aggregates cost O(G x D).
 */
#include "abi.h"
#include "internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

void lsched_frag_types_free(lsched_frag_types *fw, const lsched_allocator *a) {
  lsched__free(a, fw->thr);
  lsched__free(a, fw->ft);
  memset(fw, 0, sizeof *fw);
}

int lsched_frag_types_build(lsched_frag_types *fw, const lsched_allocator *a,
                        const lsched_cluster *c, const lsched_workload *w) {
  memset(fw, 0, sizeof *fw);
  fw->version = LSCHED_FRAG_TYPES_VERSION;
  size_t nt = lsched_workload_count(w);
  if (nt == 0)
    return LSCHED_OK;
  fw->W = (int64_t)lsched_workload_weight(w);
  /* Distinct GPU shares, ascending. */
  int *thr = lsched__calloc(a, nt, sizeof *thr);
  if (!thr)
    return LSCHED_ENOMEM;
  int nthr = 0;
  for (size_t i = 0; i < nt; i++) {
    const lsched_task_type *t = lsched_workload_at(w, i);
    if (t->gpu_count > 0)
      thr[nthr++] = t->gpu_milli;
  }
  qsort(thr, (size_t)nthr, sizeof *thr, cmp_int);
  int d = 0;
  for (int i = 0; i < nthr; i++)
    if (d == 0 || thr[d - 1] != thr[i])
      thr[d++] = thr[i];
  fw->thr = thr;
  fw->nthr = d;
  /* Per-model lists of the GPU types allowed on that model. */
  int nmodels = c->nmodels;
  size_t total = 0;
  for (int m = 0; m < nmodels; m++)
    for (size_t i = 0; i < nt; i++) {
      const lsched_task_type *t = lsched_workload_at(w, i);
      if (t->gpu_count > 0 &&
          (!t->model_mask || (t->model_mask >> m) & 1))
        total++;
    }
  fw->ft = lsched__calloc(a, total ? total : 1, sizeof *fw->ft);
  if (!fw->ft) {
    lsched_frag_types_free(fw, a);
    return LSCHED_ENOMEM;
  }
  size_t k = 0;
  for (int m = 0; m < LSCHED_MAX_MODELS; m++) {
    fw->moff[m] = (int)k;
    if (m >= nmodels)
      continue;
    for (size_t i = 0; i < nt; i++) {
      const lsched_task_type *t = lsched_workload_at(w, i);
      if (t->gpu_count == 0 || (t->model_mask && !((t->model_mask >> m) & 1)))
        continue;
      lsched_frag_type *e = &fw->ft[k++];
      e->cpu = t->cpu_milli;
      e->w = (int64_t)t->weight;
      e->k = t->gpu_count;
      const int *p = bsearch(&t->gpu_milli, fw->thr, (size_t)fw->nthr,
                             sizeof *fw->thr, cmp_int);
      e->ti = (int32_t)(p - fw->thr);
    }
  }
  fw->moff[LSCHED_MAX_MODELS] = (int)k;
  return LSCHED_OK;
}

void lsched_frag_aggregate(const lsched_frag_types *fw, const int *g, int G,
                            uint8_t *cnt, int32_t *small) {
  int D = fw->nthr;
  for (int j = 0; j < D; j++) {
    cnt[j] = 0;
    small[j] = 0;
  }
  for (int i = 0; i < G; i++) {
    int x = g[i];
    int j = 0;
    for (; j < D && fw->thr[j] <= x; j++)
      cnt[j]++;
    for (; j < D; j++)
      small[j] += x;
  }
}

void lsched_frag_cache_free(lsched_frag_cache *fs,
                            const lsched_allocator *a) {
  lsched__free(a, fs->F);
  lsched__free(a, fs->cnt);
  lsched__free(a, fs->small);
  lsched__free(a, fs->idle);
  memset(fs, 0, sizeof *fs);
}

void lsched_frag_cache_update(lsched_frag_cache *fs,
                              const lsched_cluster *c,
                              const lsched_frag_types *fw, int node) {
  const struct lsched_node *nd = &c->nodes[node];
  uint8_t *cnt = fs->cnt + (size_t)node * (size_t)fs->nthr;
  int32_t *small = fs->small + (size_t)node * (size_t)fs->nthr;
  lsched_frag_aggregate(fw, c->gpu_free + nd->gpu_off, nd->gpu_count, cnt,
                         small);
  int64_t F = lsched_frag_eval(fw, nd->model, nd->cpu_free, cnt, small,
                                nd->gpu_free_sum);
  fs->sum += F - fs->F[node];
  fs->F[node] = F;
  fs->idle_sum += nd->gpu_free_sum - fs->idle[node];
  fs->idle[node] = nd->gpu_free_sum;
}

static int cmp_type_cpu(const void *a, const void *b) {
  const lsched_frag_type *x = a, *y = b;
  if (x->cpu != y->cpu)
    return x->cpu < y->cpu ? -1 : 1;
  if (x->ti != y->ti)
    return x->ti < y->ti ? -1 : 1;
  if (x->k != y->k)
    return x->k < y->k ? -1 : 1;
  return (x->w > y->w) - (x->w < y->w);
}

static void frag_sort_by_cpu(lsched_frag_types *fw) {
  for (int m = 0; m < LSCHED_MAX_MODELS; m++)
    if (fw->moff[m + 1] > fw->moff[m])
      qsort(fw->ft + fw->moff[m], (size_t)(fw->moff[m + 1] - fw->moff[m]),
            sizeof *fw->ft, cmp_type_cpu);
}

void lsched_frag_cache_apply(lsched_frag_cache *fs,
                             const lsched_cluster *c,
                             const lsched_frag_types *fw,
                             const lsched_placement *p, int sign) {
  const struct lsched_node *nd = &c->nodes[p->node];
  if (nd->mode != LSCHED_GPU_SHARED && nd->mode != LSCHED_GPU_EXCLUSIVE) {
    /* MIG: GPU shares do not move by gpu_milli there; recompute. */
    lsched_frag_cache_update(fs, c, fw, p->node);
    return;
  }
  if (p->gpu_count > 0 && fw->nthr > 0) {
    uint8_t *cnt = fs->cnt + (size_t)p->node * (size_t)fs->nthr;
    int32_t *small = fs->small + (size_t)p->node * (size_t)fs->nthr;
    const int *g = c->gpu_free + nd->gpu_off;
    const int D = fw->nthr;
    const int *thr = fw->thr;
    for (uint64_t m = p->gpu_mask; m; m &= m - 1) {
      int i = __builtin_ctzll(m);
      /* the GPU's free milli now and before this change */
      int now = g[i], prev = now + sign * p->gpu_milli;
      int lo = now < prev ? now : prev, hi = now < prev ? prev : now;
      int up = now > prev ? 1 : -1;
      /* thresholds up to lo: both at or above, nothing moves; up to hi:
       * the GPU crossed it (counted on one side, lo small on the other);
       * above hi: below it both times, small moves by now - prev */
      int j = 0;
      while (j < D && thr[j] <= lo)
        j++;
      for (; j < D && thr[j] <= hi; j++) {
        cnt[j] = (uint8_t)(cnt[j] + up);
        small[j] -= up * lo;
      }
      for (; j < D; j++)
        small[j] += now - prev;
    }
  }
  const uint8_t *cnt = fs->cnt + (size_t)p->node * (size_t)fs->nthr;
  const int32_t *small = fs->small + (size_t)p->node * (size_t)fs->nthr;
  int64_t F = lsched_frag_eval(fw, nd->model, nd->cpu_free, cnt, small,
                               nd->gpu_free_sum);
  fs->sum += F - fs->F[p->node];
  fs->F[p->node] = F;
  fs->idle_sum += nd->gpu_free_sum - fs->idle[p->node];
  fs->idle[p->node] = nd->gpu_free_sum;
}

int lsched_frag_cache_init(lsched_frag_cache *fs,
                           const lsched_allocator *a, const lsched_cluster *c,
                           const lsched_frag_types *fw) {
  memset(fs, 0, sizeof *fs);
  fs->version = LSCHED_FRAG_CACHE_VERSION;
  size_t n = c->n ? (size_t)c->n : 1;
  size_t D = fw->nthr ? (size_t)fw->nthr : 1;
  fs->F = lsched__calloc(a, n, sizeof *fs->F);
  fs->cnt = lsched__calloc(a, n * D, sizeof *fs->cnt);
  fs->small = lsched__calloc(a, n * D, sizeof *fs->small);
  fs->idle = lsched__calloc(a, n, sizeof *fs->idle);
  if (!fs->F || !fs->cnt || !fs->small || !fs->idle) {
    lsched_frag_cache_free(fs, a);
    return LSCHED_ENOMEM;
  }
  fs->n = c->n;
  fs->nthr = fw->nthr;
  for (int i = 0; i < c->n; i++)
    lsched_frag_cache_update(fs, c, fw, i);
  return LSCHED_OK;
}

int lsched_cluster_node_free(const lsched_cluster *c, int node,
                             lsched_node_free *out, int *gpu_free, int n) {
  if (!c || !out || (!gpu_free && n > 0) || n < 0)
    return LSCHED_EINVAL;
  if (node < 0 || node >= c->n || c->nodes[node].state == LSCHED_NODE_REMOVED)
    return LSCHED_ENOENT;
  const struct lsched_node *nd = &c->nodes[node];
  /* One version so far: filled in place (as lsched__fill_out would copy
   * the whole struct; this runs on every allocation of a replay). */
  out->version = LSCHED_NODE_FREE_VERSION;
  out->state = (int)nd->state;
  out->gpu_count = nd->gpu_count;
  out->gpu_model = nd->model;
  out->gpu_mode = nd->mode;
  out->cpu_free = nd->cpu_free;
  out->memory_free = nd->mem_free;
  out->gpu_milli_free = nd->gpu_free_sum;
  int k = nd->gpu_count < n ? nd->gpu_count : n;
  const int *src = c->gpu_free + nd->gpu_off;
  if (k == 8) /* the usual node: a fixed-size copy, no libc call */
    memcpy(gpu_free, src, 8 * sizeof *gpu_free);
  else if (k > 0)
    memcpy(gpu_free, src, (size_t)k * sizeof *gpu_free);
  return nd->gpu_count;
}

/* ---------------------------------------------------------------------- */
/* One-shot public calls                                                   */

/* Fills the caller's *out up to its version (abi.h). */
static void frag_fill(lsched_frag *out, int64_t amount_w, int64_t W,
                      int64_t idle) {
  static const size_t sizes[] = {0, sizeof(lsched_frag)};
  lsched_frag f;
  memset(&f, 0, sizeof f);
  f.amount_weighted = amount_w;
  f.weight_total = (uint64_t)W;
  f.idle_gpu_milli = idle;
  f.amount = W ? (double)amount_w / (double)W : 0.0;
  f.rate = idle > 0 ? f.amount / (double)idle : 0.0;
  lsched__fill_out(out, &f, sizes, 2);
}

int lsched_frag_node(const lsched_cluster *c, const lsched_workload *w,
                     int node, double *out) {
  if (!c || !out)
    return LSCHED_EINVAL;
  if (node < 0 || node >= c->n)
    return LSCHED_ENOENT;
  lsched_frag_types fw;
  int rc = lsched_frag_types_build(&fw, &c->a, c, w);
  if (rc)
    return rc;
  size_t D = fw.nthr ? (size_t)fw.nthr : 1;
  uint8_t *cnt = lsched__calloc(&c->a, D, sizeof *cnt);
  int32_t *small = lsched__calloc(&c->a, D, sizeof *small);
  if (!cnt || !small) {
    rc = LSCHED_ENOMEM;
  } else {
    const struct lsched_node *nd = &c->nodes[node];
    lsched_frag_aggregate(&fw, c->gpu_free + nd->gpu_off, nd->gpu_count, cnt,
                           small);
    int64_t F = lsched_frag_eval(&fw, nd->model, nd->cpu_free, cnt, small,
                                  nd->gpu_free_sum);
    *out = fw.W ? (double)F / (double)fw.W : 0.0;
  }
  lsched__free(&c->a, cnt);
  lsched__free(&c->a, small);
  lsched_frag_types_free(&fw, &c->a);
  return rc;
}

int lsched_frag_cluster(const lsched_cluster *c, const lsched_workload *w,
                        lsched_frag *out) {
  if (!c || !out)
    return LSCHED_EINVAL;
  lsched_frag_types fw;
  int rc = lsched_frag_types_build(&fw, &c->a, c, w);
  if (rc)
    return rc;
  lsched_frag_cache fs;
  rc = lsched_frag_cache_init(&fs, &c->a, c, &fw);
  if (rc == LSCHED_OK) {
    int64_t idle = 0;
    for (int i = 0; i < c->n; i++)
      idle += c->nodes[i].gpu_free_sum;
    frag_fill(out, fs.sum, fw.W, idle);
    lsched_frag_cache_free(&fs, &c->a);
  }
  lsched_frag_types_free(&fw, &c->a);
  return rc;
}

/* ---------------------------------------------------------------------- */
/* The meter: a hidden policy instance, so that the cluster's existing
 * attach/notify machinery tells it about every alloc and release. */

/* The meter's per-node figures: the fields of lsched_frag_cache (F x W,
 * idle milli, cnt[], small[]) of one node side by side in one record of
 * 1 << shift bytes (at least 32; aligned to it up to 64): a release on a node
 * whose figures were evicted then misses one cache line instead of four (the
 * cache's four arrays; 100k-GPU replays release on nodes all over the cluster).
 * Record: F (int64), idle (int64), cnt (croom bytes: nthr rounded up to 8, so
 * meter_apply's 8-byte word of counts stays inside it), small (nthr int32). */
typedef struct meter_recs {
  unsigned char *mem; /* the allocation; rec is mem aligned up */
  unsigned char *rec;
  unsigned shift;
  size_t croom;
  int64_t sum;      /* of F */
  int64_t idle_sum; /* of idle */
} meter_recs;

/* A node's record, and its parts. (The callers take the record once: a
 * store through cnt, a character type, may alias r's fields for the
 * compiler, which then computes the address again for each part.) */
static inline unsigned char *rec_at(const meter_recs *r, int node) {
  return r->rec + ((size_t)node << r->shift);
}

static inline uint8_t *rec_cnt(unsigned char *rb) {
  return rb + 2 * sizeof(int64_t);
}

static inline int32_t *rec_small(const meter_recs *r, unsigned char *rb) {
  return (int32_t *)(void *)(rb + 2 * sizeof(int64_t) + r->croom);
}

/* Record rb's F and idle are now F and idle: the sums follow. */
static inline void rec_set(meter_recs *r, unsigned char *rb, int64_t F,
                           int64_t idle) {
  int64_t *fi = (int64_t *)(void *)rb;
  r->sum += F - fi[0];
  fi[0] = F;
  r->idle_sum += idle - fi[1];
  fi[1] = idle;
}

/* Node's record from scratch (as lsched_frag_cache_update). */
static void rec_update(meter_recs *r, const lsched_cluster *c,
                       const lsched_frag_types *fw, int node) {
  const struct lsched_node *nd = &c->nodes[node];
  unsigned char *rb = rec_at(r, node);
  uint8_t *cnt = rec_cnt(rb);
  int32_t *small = rec_small(r, rb);
  lsched_frag_aggregate(fw, c->gpu_free + nd->gpu_off, nd->gpu_count, cnt,
                        small);
  rec_set(r, rb,
          lsched_frag_eval(fw, nd->model, nd->cpu_free, cnt, small,
                           nd->gpu_free_sum),
          nd->gpu_free_sum);
}

static void recs_free(meter_recs *r, const lsched_allocator *a) {
  lsched__free(a, r->mem);
  memset(r, 0, sizeof *r);
}

/* The records of every node of c for fw (as lsched_frag_cache_init). */
static int recs_init(meter_recs *r, const lsched_allocator *a,
                     const lsched_cluster *c, const lsched_frag_types *fw) {
  memset(r, 0, sizeof *r);
  size_t D = fw->nthr > 0 ? (size_t)fw->nthr : 0;
  r->croom = D <= 8 ? 8 : (D + 7) / 8 * 8;
  size_t raw = 2 * sizeof(int64_t) + r->croom + D * sizeof(int32_t);
  r->shift = 5;
  while (((size_t)1 << r->shift) < raw)
    r->shift++;
  size_t align = r->shift < 6 ? 32 : 64;
  size_t n = c->n ? (size_t)c->n : 1;
  r->mem = lsched__calloc(a, (n << r->shift) + align, 1);
  if (!r->mem)
    return LSCHED_ENOMEM;
  uintptr_t at = (uintptr_t)r->mem;
  r->rec = r->mem + ((align - at % align) % align);
  for (int i = 0; i < c->n; i++)
    rec_update(r, c, fw, i);
  return LSCHED_OK;
}

struct meter_state {
  lsched_allocator a;
  lsched_frag_types fw;
  meter_recs r;
  /* fw's per-model types again, each list ending in a sentinel (a CPU
   * need above any value), so that the meter's loop tests one bound:
   * mft[m] (= ft + the list's offset, one load in meter_apply) */
  /* jidx[v] = thresholds <= v, for v = 0..1000: where a GPU whose free
   * share moved between lo and hi stops counting (jidx[lo]) and starts
   * counting as small (jidx[hi]), in two loads instead of a walk up the
   * thresholds for each of them (meter_apply). */
  uint16_t *jidx;
  /* a byte 1 in each of the low nthr bytes of a word, for nthr 1..8 (the
   * counts' word moved by whole GPUs in meter_apply) */
  uint64_t ones;
  lsched_frag_type *ft;
  const lsched_frag_type *mft[LSCHED_MAX_MODELS];
  lsched_workload *wl;      /* copy of the workload, for a rebuild */
  lsched_node_watch *watch; /* meter_node_change */
  double Wd;                /* (double)fw.W, for lsched_fragmeter_get */
};

static int meter_init(void *state, const lsched_cluster *c) {
  struct meter_state *s = state;
  s->a = c->a;
  int rc = lsched_node_watch_create(&s->watch, c);
  if (rc == LSCHED_OK && (rc = recs_init(&s->r, &s->a, c, &s->fw)))
    lsched_node_watch_destroy(s->watch);
  return rc;
}

static void meter_fini(void *state) {
  struct meter_state *s = state;
  lsched__free(&s->a, s->jidx);
  lsched__free(&s->a, s->ft);
  recs_free(&s->r, &s->a);
  lsched_frag_types_free(&s->fw, &s->a);
  lsched_workload_destroy(s->wl);
  lsched_node_watch_destroy(s->watch);
}

static int meter_place(void *state, const lsched_cluster *c,
                       const lsched_request *req, lsched_placement *out) {
  (void)state;
  (void)c;
  (void)req;
  (void)out;
  return LSCHED_ENOFIT;
}

/* meter_apply's part for a share below a whole GPU on the GPUs of mask:
 * the thresholds each GPU crossed (found through jidx). Out of line: the
 * hooks' common path (whole GPUs, or none) then saves and restores fewer
 * registers. */
static __attribute__((noinline)) void
meter_shares(const uint16_t *jidx, const int *g, uint64_t mask, int D,
             int delta, uint8_t *cnt, int32_t *small) {
  const int up = delta > 0 ? 1 : -1;
  for (uint64_t m = mask; m; m &= m - 1) {
    int now = g[__builtin_ctzll(m)], prev = now - delta;
    int lo = now < prev ? now : prev, hi = now < prev ? prev : now;
    /* as cache_apply: up to lo nothing moves, up to hi the GPU crossed
     * the threshold, above hi small moves by now - prev */
    int j = jidx[lo];
    const int jh = jidx[hi];
    for (; j < jh; j++) {
      cnt[j] = (uint8_t)(cnt[j] + up);
      small[j] -= up * lo;
    }
    for (; j < D; j++)
      small[j] += delta;
  }
}

/* lsched_frag_cache_apply for the meter, the same integers, on the
 * node's record: the thresholds a GPU crossed (by the count word for whole
 * GPUs, by meter_shares for a share below one), then the types by CPU need
 * over the sentinel-ended lists. Inlined into the two
 * hooks (one call less per allocation and release, sign a constant). */
static inline __attribute__((always_inline)) void
meter_apply(struct meter_state *s, const lsched_cluster *c,
            const lsched_placement *p, int sign) {
  const struct lsched_node *nd = &c->nodes[p->node];
  meter_recs *r = &s->r;
  if (nd->mode != LSCHED_GPU_SHARED && nd->mode != LSCHED_GPU_EXCLUSIVE) {
    /* MIG: GPU shares do not move by gpu_milli there; recompute. */
    rec_update(r, c, &s->fw, p->node);
    return;
  }
  unsigned char *rb = rec_at(r, p->node);
  uint8_t *cnt = rec_cnt(rb);
  int32_t *small = rec_small(r, rb);
  const int D = s->fw.nthr;
  if (p->gpu_count > 0 && D > 0) {
    const int delta = -sign * p->gpu_milli; /* a GPU's free: now - before */
    const int up = delta > 0 ? 1 : -1;
    if (p->gpu_milli == LSCHED_GPU_MILLI) {
      /* Whole GPUs go from 1000 to 0 or back: every threshold (1..1000)
       * is crossed with lo = 0, so only the counts move, by the GPU count
       * (a third of a 100k first-fit replay's meter work went to walking
       * the thresholds per GPU for this). */
      const int k = up * p->gpu_count;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      if (D <= 8) {
        /* The D counts as the low bytes of one word, moved by k at once:
         * no byte carries or borrows into the next (a count stays in
         * 0..64 and a taken GPU was counted at every threshold), so the
         * bytes above D (the record's padding) are written back
         * unchanged. */
        uint64_t w, kk = (uint64_t)p->gpu_count * s->ones;
        memcpy(&w, cnt, sizeof w);
        w = k > 0 ? w + kk : w - kk;
        memcpy(cnt, &w, sizeof w);
      } else
#endif
        for (int j = 0; j < D; j++)
          cnt[j] = (uint8_t)(cnt[j] + k);
    } else {
      meter_shares(s->jidx, c->gpu_free + nd->gpu_off, p->gpu_mask, D, delta,
                   cnt, small);
    }
  }
  /* W = 0 (every weight 0) gives F = 0 without a test of it: okw, acc and
   * W x idle are all 0 then. */
  int64_t F = 0, idle = nd->gpu_free_sum, W = s->fw.W;
  if (idle > 0) {
    if (nd->model < 0) {
      F = W * idle;
    } else {
      int64_t okw = 0, acc = 0, cpu = nd->cpu_free;
      for (const lsched_frag_type *e = s->mft[nd->model]; e->cpu <= cpu; e++)
        if (cnt[e->ti] >= e->k) {
          okw += e->w;
          acc += e->w * small[e->ti];
        }
      F = acc + (W - okw) * idle;
    }
  }
  rec_set(r, rb, F, idle);
}

static void meter_alloc(void *state, const lsched_cluster *c,
                        const lsched_placement *p) {
  meter_apply(state, c, p, 1);
}

static void meter_release(void *state, const lsched_cluster *c,
                          const lsched_placement *p) {
  meter_apply(state, c, p, -1);
}

/* s->jidx, s->ones, s->ft and s->mft from s->fw (sorted by CPU). */
static int meter_lists(struct meter_state *s) {
  const lsched_frag_types *fw = &s->fw;
  uint16_t *jidx =
      lsched__calloc(&s->a, (size_t)LSCHED_GPU_MILLI + 1, sizeof *jidx);
  size_t nt = (size_t)fw->moff[LSCHED_MAX_MODELS];
  lsched_frag_type *ft =
      lsched__calloc(&s->a, nt + LSCHED_MAX_MODELS, sizeof *ft);
  if (!jidx || !ft) {
    lsched__free(&s->a, jidx);
    lsched__free(&s->a, ft);
    return LSCHED_ENOMEM;
  }
  /* Thresholds are distinct shares in 1..1000, so at most 1000 of them. */
  for (int v = 0, j = 0; v <= LSCHED_GPU_MILLI; v++) {
    while (j < fw->nthr && fw->thr[j] <= v)
      j++;
    jidx[v] = (uint16_t)j;
  }
  size_t k = 0;
  for (int m = 0; m < LSCHED_MAX_MODELS; m++) {
    s->mft[m] = ft + k;
    for (int i = fw->moff[m]; i < fw->moff[m + 1]; i++)
      ft[k++] = fw->ft[i];
    ft[k++].cpu = INT64_MAX; /* the sentinel */
  }
  lsched__free(&s->a, s->jidx);
  lsched__free(&s->a, s->ft);
  s->jidx = jidx;
  s->ft = ft;
  s->ones = fw->nthr >= 1 && fw->nthr <= 8
                ? UINT64_C(0x0101010101010101) >> (8 * (8 - fw->nthr))
                : 0;
  return LSCHED_OK;
}

/* Types and records of w on c, then the copy of w kept (copy: 1) or w
 * taken as it is (0, w is s->wl itself). */
static int meter_build(struct meter_state *s, const lsched_cluster *c,
                       const lsched_workload *w, int copy) {
  lsched_frag_types fw;
  meter_recs recs;
  lsched_workload *wl = NULL;
  int rc = LSCHED_OK;
  if (copy)
    rc = lsched_workload_copy(&wl, w, &s->a);
  if (rc == LSCHED_OK &&
      (rc = lsched_frag_types_build(&fw, &s->a, c, w)) == LSCHED_OK) {
    frag_sort_by_cpu(&fw);
    if ((rc = recs_init(&recs, &s->a, c, &fw)))
      lsched_frag_types_free(&fw, &s->a);
  }
  if (rc) {
    lsched_workload_destroy(wl);
    return rc;
  }
  lsched_frag_types old_fw = s->fw;
  s->fw = fw;
  s->Wd = (double)fw.W;
  if ((rc = meter_lists(s))) {
    s->fw = old_fw;
    s->Wd = (double)old_fw.W;
    recs_free(&recs, &s->a);
    lsched_frag_types_free(&fw, &s->a);
    lsched_workload_destroy(wl);
    return rc;
  }
  recs_free(&s->r, &s->a);
  lsched_frag_types_free(&old_fw, &s->a);
  s->r = recs;
  if (copy) {
    lsched_workload_destroy(s->wl);
    s->wl = wl;
  }
  return LSCHED_OK;
}

static int meter_set_workload(void *state, const lsched_cluster *c,
                              const lsched_workload *w) {
  return meter_build(state, c, w, 1);
}

/* A node change: a pool's compose moved only node's free shares (the
 * watch): that node's entry is recomputed, O(GPUs x thresholds); any
 * other change (not a state change) rebuilds, as the refresh did. */
static int meter_node_change(void *state, const lsched_cluster *c, int node,
                             int change) {
  struct meter_state *s = state;
  if (change == LSCHED_NODE_STATE)
    return LSCHED_OK;
  int free_only = lsched_node_watch_free_only(s->watch, c, node, change);
  if (free_only < 0)
    return free_only;
  if (!free_only)
    return meter_build(s, c, s->wl, 0);
  rec_update(&s->r, c, &s->fw, node);
  return LSCHED_OK;
}

static const lsched_policy_ops meter_ops = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "(fragmentation meter)",
    .description = "internal: keeps F(n) of every node cached",
    .state_size = sizeof(struct meter_state),
    .init = meter_init,
    .fini = meter_fini,
    .place = meter_place,
    .on_alloc = meter_alloc,
    .on_release = meter_release,
    .set_workload = meter_set_workload,
    .on_node_change = meter_node_change,
};

struct lsched_fragmeter {
  lsched_policy *p;
};

int lsched_fragmeter_create(lsched_fragmeter **out, lsched_cluster *c,
                            const lsched_workload *w) {
  if (!out)
    return LSCHED_EINVAL;
  *out = NULL;
  if (!c)
    return LSCHED_EINVAL;
  lsched_fragmeter *m = lsched__calloc(&c->a, 1, sizeof *m);
  if (!m)
    return LSCHED_ENOMEM;
  int rc = lsched_policy_create(&m->p, c, &meter_ops);
  if (rc == LSCHED_OK && (rc = lsched_policy_set_workload(m->p, w))) {
    lsched_policy_destroy(m->p);
  }
  if (rc) {
    lsched__free(&c->a, m);
    return rc;
  }
  *out = m;
  return LSCHED_OK;
}

void lsched_fragmeter_destroy(lsched_fragmeter *m) {
  if (!m)
    return;
  lsched_allocator a = m->p->c->a;
  lsched_policy_destroy(m->p);
  lsched__free(&a, m);
}

void lsched_fragmeter_prefetch(const lsched_fragmeter *m, int node) {
  if (!m || node < 0 || node >= m->p->c->n)
    return;
  const struct meter_state *s = m->p->state;
  __builtin_prefetch(rec_at(&s->r, node), 1, 3);
}

void lsched_fragmeter_get(const lsched_fragmeter *m, lsched_frag *out) {
  if (!out)
    return;
  if (!m) {
    frag_fill(out, 0, 0, 0);
    return;
  }
  const struct meter_state *s = m->p->state;
  /* frag_fill's figures written in place (lsched_frag has one version so
   * far: every field is the caller's; read once per replay event) */
  int64_t W = s->fw.W, idle = s->r.idle_sum;
  out->version = LSCHED_FRAG_VERSION;
  out->amount_weighted = s->r.sum;
  out->weight_total = (uint64_t)W;
  out->idle_gpu_milli = idle;
  out->amount = W ? (double)s->r.sum / s->Wd : 0.0;
  out->rate = idle > 0 ? out->amount / (double)idle : 0.0;
}
