/*
 * Cluster state and exact allocation accounting.
 *
 * Every node keeps its free CPU, memory and per-GPU shares plus a few
 * aggregates (fully free GPUs, largest free share, ...). A segment tree over
 * the visit order keeps per-subtree maxima of those aggregates so that
 * lsched_next_fit() can skip whole ranges of nodes that cannot fit a request,
 * and per request shape a bound before which no node fits ("The first-fit
 * memo") lets a search start where that shape's last one ended.
 * alloc and release update one node and O(log n) tree entries.
 */
#include "abi.h"
#include "internal.h"
#include "mig_internal.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static void set_err(lsched_cluster *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int node_change_done(lsched_cluster *c, int id, int change);
static int check_after(lsched_cluster *c, int id);

static void set_err(lsched_cluster *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
  va_end(ap);
}

int lsched_cluster_opts_init(lsched_cluster_opts *opts, unsigned version) {
  if (!opts)
    return LSCHED_EINVAL;
  if (version == 0 || version > LSCHED_CLUSTER_OPTS_VERSION)
    return LSCHED_EVERSION;
  lsched_cluster_opts d = LSCHED_CLUSTER_OPTS_INIT;
  *opts = d;
  return LSCHED_OK;
}

int lsched_cluster_create(lsched_cluster **out,
                          const lsched_cluster_opts *opts) {
  if (!out)
    return LSCHED_EINVAL;
  *out = NULL;
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  if (opts) {
    if (opts->version == 0 || opts->version > LSCHED_CLUSTER_OPTS_VERSION)
      return LSCHED_EVERSION;
    o = *opts;
  }
  lsched_allocator a;
  lsched__default_allocator(&a, o.allocator);
  lsched_cluster *c = lsched__calloc(&a, 1, sizeof *c);
  if (!c)
    return LSCHED_ENOMEM;
  c->a = a;
  c->check_invariants = o.check_invariants;
  c->order_id = 1; /* no node: the identity */
  *out = c;
  return LSCHED_OK;
}

void lsched_cluster_destroy(lsched_cluster *c) {
  if (!c)
    return;
  const lsched_allocator a = c->a;
  for (int i = 0; i < c->nmodels; i++)
    lsched__free(&a, c->model_names[i]);
  for (int i = 0; i < c->n; i++)
    lsched__free(&a, c->nodes[i].name);
  lsched__free(&a, c->nodes);
  lsched__free(&a, c->gpu_free);
  lsched__free(&a, c->order);
  lsched__free(&a, c->pos_of);
  lsched__free(&a, c->seg);
  lsched__free(&a, c->segc);
  lsched__free(&a, c->shapes);
  lsched__free(&a, c->attached);
  lsched__free(&a, c->hooked);
  lsched__free(&a, c->observers);
  lsched__free(&a, c->obs_alloc);
  lsched__free(&a, c->obs_release);
  lsched__mig_free(c);
  lsched__pool_free_all(c);
  lsched__free(&a, c);
}

const char *lsched_cluster_errmsg(const lsched_cluster *c) {
  return c ? c->errmsg : "";
}

/* ---------------------------------------------------------------------- */
/* Models                                                                  */

int lsched_cluster_find_model(const lsched_cluster *c, const char *name) {
  if (!c || !name)
    return LSCHED_EINVAL;
  for (int i = 0; i < c->nmodels; i++)
    if (strcmp(c->model_names[i], name) == 0)
      return i;
  return LSCHED_ENOENT;
}

int lsched_cluster_model_id(lsched_cluster *c, const char *name, int create) {
  int id = lsched_cluster_find_model(c, name);
  if (id != LSCHED_ENOENT || !create)
    return id;
  if (c->nmodels >= LSCHED_MAX_MODELS) {
    set_err(c, "more than %d GPU models", LSCHED_MAX_MODELS);
    return LSCHED_ELIMIT;
  }
  size_t len = strlen(name);
  char *copy = lsched__alloc(&c->a, len + 1);
  if (!copy) {
    set_err(c, "out of memory adding GPU model '%s'", name);
    return LSCHED_ENOMEM;
  }
  memcpy(copy, name, len + 1);
  c->model_names[c->nmodels] = copy;
  return c->nmodels++;
}

const char *lsched_cluster_model_name(const lsched_cluster *c, int id) {
  if (!c || id < 0 || id >= c->nmodels)
    return NULL;
  return c->model_names[id];
}

int lsched_cluster_model_count(const lsched_cluster *c) {
  return c ? c->nmodels : 0;
}

int lsched_cluster_set_model_price(lsched_cluster *c, int model,
                                   double usd_per_gpu_hour) {
  if (!c || model < 0 || model >= c->nmodels)
    return LSCHED_EINVAL;
  /* NaN, negative or infinite: unknown (x >= 0 is false for NaN). */
  int known = usd_per_gpu_hour >= 0 && usd_per_gpu_hour <= DBL_MAX;
  c->model_price[model] = known ? usd_per_gpu_hour : 0;
  c->model_priced[model] = (unsigned char)known;
  return LSCHED_OK;
}

double lsched_cluster_model_price(const lsched_cluster *c, int model) {
  if (!c || model < 0 || model >= c->nmodels || !c->model_priced[model])
    return NAN;
  return c->model_price[model];
}

/* ---------------------------------------------------------------------- */
/* Node aggregates and the segment tree                                    */

static void node_refresh(const lsched_cluster *c, struct lsched_node *nd) {
  int full = 0, nonzero = 0, mx = 0;
  int64_t sum = 0;
  const int *g = c->gpu_free + nd->gpu_off;
  for (int i = 0; i < nd->gpu_count; i++) {
    int f = g[i];
    full += f == LSCHED_GPU_MILLI;
    nonzero += f > 0;
    if (f > mx)
      mx = f;
    sum += f;
  }
  nd->gpus_full_free = full;
  nd->gpus_nonzero_free = nonzero;
  nd->max_gpu_free = mx;
  nd->gpu_free_sum = sum;
  nd->mig_fit = nd->mode == LSCHED_GPU_MIG && nd->gpu_count > 0
                    ? lsched__mig_node_fit(c, nd)
                    : 0;
}

/* The largest of the n free shares g (0 if none). The usual 8-GPU node
 * with SSE2: the shares (0..1000) packed to 16 bits and reduced in three
 * steps (the loop cost 30 to 45 instructions, a fifth of the allocations
 * of a first-fit replay run it). */
static inline int gpus_max_free(const int *g, int n) {
#if defined(__SSE2__)
  if (n == 8) {
    const __m128i *v = (const __m128i *)(const void *)g;
    __m128i m = _mm_packs_epi32(_mm_loadu_si128(v), _mm_loadu_si128(v + 1));
    m = _mm_max_epi16(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm_max_epi16(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
    m = _mm_max_epi16(m, _mm_shufflelo_epi16(m, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_extract_epi16(m, 0);
  }
#endif
  int mx = 0;
  for (int i = 0; i < n; i++)
    if (g[i] > mx)
      mx = g[i];
  return mx;
}

#if defined(__SSE2__)
/* For the usual 8-GPU node: the shares of the GPUs of mask (bits 0..7)
 * set to `to` (set) or moved by `to` (else) with two 16-byte loads and
 * stores. The next readers of the shares load them as 16-byte words
 * (gpus_max_free above, first-fit's pick, the FGD meter), which a store
 * per GPU could not forward to: they waited for those stores to reach the
 * cache (39% of first-fit's placement samples on a node just released,
 * 100k@1.2 first-fit backfill). */
static inline void gpus8_apply(int *g, uint64_t mask, int to, int set) {
  const __m128i m = _mm_set1_epi32((int)(mask & 0xFF));
  const __m128i blo = _mm_set_epi32(8, 4, 2, 1),
                bhi = _mm_set_epi32(128, 64, 32, 16);
  const __m128i slo = _mm_cmpeq_epi32(_mm_and_si128(m, blo), blo),
                shi = _mm_cmpeq_epi32(_mm_and_si128(m, bhi), bhi);
  __m128i *v = (__m128i *)(void *)g;
  const __m128i t = _mm_set1_epi32(to);
  __m128i lo = _mm_loadu_si128(v), hi = _mm_loadu_si128(v + 1);
  if (set) {
    lo = _mm_or_si128(_mm_andnot_si128(slo, lo), _mm_and_si128(slo, t));
    hi = _mm_or_si128(_mm_andnot_si128(shi, hi), _mm_and_si128(shi, t));
  } else {
    lo = _mm_add_epi32(lo, _mm_and_si128(slo, t));
    hi = _mm_add_epi32(hi, _mm_and_si128(shi, t));
  }
  _mm_storeu_si128(v, lo);
  _mm_storeu_si128(v + 1, hi);
}
#endif

/* The shares of the GPUs of mask among a node's n set to `to` (set) or
 * moved by `to` (else): on an 8-GPU node as two vector stores
 * (gpus8_apply), else one store per GPU. */
static inline __attribute__((always_inline)) void
gpus_apply(int *g, int n, uint64_t mask, int to, int set) {
#if defined(__SSE2__)
  if (n == 8) {
    gpus8_apply(g, mask, to, set);
    return;
  }
#else
  (void)n;
#endif
  for (uint64_t m = mask; m; m &= m - 1) {
    int i = __builtin_ctzll(m);
    g[i] = set ? to : g[i] + to;
  }
}

/* node_refresh after placement p's share was taken from (sign -1) or
 * given back to (sign 1) its GPUs on a shared or exclusive node: only the
 * GPUs of its mask are visited, and the maximum is recomputed only when an
 * allocation took from a GPU that held it (node_refresh visited every GPU
 * of the node on every allocation and release). The aggregates are
 * counted from the shares before, then the shares written (gpus_apply).
 * Inlined into alloc and release with sign a constant, as
 * seg_update_alloc with grew: the two calls and the sign and grew tests
 * cost 33 M of a 100k first-fit replay's 1,875 M instructions. */
static inline __attribute__((always_inline)) void
node_apply(const lsched_cluster *c, struct lsched_node *nd,
           const lsched_placement *p, int sign) {
  int *g = c->gpu_free + nd->gpu_off;
  const int n = nd->gpu_count;
  if (p->gpu_milli == LSCHED_GPU_MILLI) {
    /* Whole GPUs (the callers checked the shares): each goes from 1000
     * to 0 or back, and the largest share is 1000 while a GPU is whole. */
    const int k = sign * p->gpu_count;
    gpus_apply(g, n, p->gpu_mask, sign > 0 ? LSCHED_GPU_MILLI : 0, 1);
    nd->gpus_full_free += k;
    nd->gpus_nonzero_free += k;
    nd->gpu_free_sum += (int64_t)k * LSCHED_GPU_MILLI;
    nd->max_gpu_free =
        nd->gpus_full_free > 0 ? LSCHED_GPU_MILLI : gpus_max_free(g, n);
    return;
  }
  const int d = sign * p->gpu_milli;
  int full = 0, nonzero = 0, rescan = 0, mx = nd->max_gpu_free;
  for (uint64_t m = p->gpu_mask; m; m &= m - 1) {
    int before = g[__builtin_ctzll(m)], after = before + d;
    full += (after == LSCHED_GPU_MILLI) - (before == LSCHED_GPU_MILLI);
    nonzero += (after > 0) - (before > 0);
    if (sign > 0) {
      if (after > mx)
        mx = after;
    } else if (before == mx) {
      rescan = 1;
    }
  }
  gpus_apply(g, n, p->gpu_mask, d, 0);
  nd->gpus_full_free += full;
  nd->gpus_nonzero_free += nonzero;
  nd->gpu_free_sum += (int64_t)d * p->gpu_count;
  /* A whole free GPU holds the largest share. */
  nd->max_gpu_free = !rescan                  ? mx
                     : nd->gpus_full_free > 0 ? LSCHED_GPU_MILLI
                                              : gpus_max_free(g, n);
}

/*
 * Lanes. Every lane of an entry is 16 bits with its top bit 0. A word of
 * such lanes is compared with another lane by lane in one subtraction:
 * with the guard bits G set in a, lane a - b cannot borrow from its
 * neighbour, and its guard bit stays set exactly where a >= b. The same
 * test gives the lane-wise maximum.
 */
#define G16 UINT64_C(0x8000800080008000)

static inline uint64_t lanes_max16(uint64_t a, uint64_t b) {
  uint64_t m = ((((a | G16) - b) & G16) >> 15) * UINT64_C(0xFFFF);
  return (a & m) | (b & ~m);
}

/* Entry-wide operations: with SSE2 (every x86-64) an entry is one
 * register of eight 16-bit lanes whose top bits are 0, so the signed
 * compare and maximum are the lane order: one instruction each (the
 * 32-bit CPU and memory lanes this replaced needed five more for the
 * maximum, SSE2 having no 32-bit one, and a shuffle for each test).
 * Elsewhere the guard-bit words. */
#if defined(__SSE2__)
static inline __m128i seg_load(const struct lsched_seg *s) {
  return _mm_loadu_si128((const __m128i *)(const void *)s);
}

/* *a = the maximum of x and y; 0 if *a already held it. */
static inline int seg_set_max(struct lsched_seg *a, __m128i x, __m128i y) {
  __m128i v = _mm_max_epi16(x, y);
  if (_mm_movemask_epi8(_mm_cmpeq_epi16(v, seg_load(a))) == 0xFFFF)
    return 0;
  _mm_storeu_si128((__m128i *)(void *)a, v);
  return 1;
}

static inline struct lsched_seg seg_max(const struct lsched_seg *a,
                                        const struct lsched_seg *b) {
  struct lsched_seg out;
  _mm_storeu_si128((__m128i *)(void *)&out,
                   _mm_max_epi16(seg_load(a), seg_load(b)));
  return out;
}

/* Some lane of s below the same lane of need. */
static inline int seg_below(const struct lsched_seg *s,
                            const struct lsched_seg *need) {
  return _mm_movemask_epi8(_mm_cmpgt_epi16(seg_load(need), seg_load(s))) != 0;
}
#else
static inline struct lsched_seg seg_max(const struct lsched_seg *a,
                                        const struct lsched_seg *b) {
  struct lsched_seg out = {lanes_max16(a->res, b->res),
                           lanes_max16(a->gpu, b->gpu)};
  return out;
}

static inline int seg_set_max2(struct lsched_seg *a, struct lsched_seg v) {
  if (v.res == a->res && v.gpu == a->gpu)
    return 0;
  *a = v;
  return 1;
}

/* Both words at once: a guard bit cleared in either difference is a lane
 * below the need. */
static inline int seg_below(const struct lsched_seg *s,
                            const struct lsched_seg *need) {
  return ((~((s->res | G16) - need->res) & G16) |
          (~((s->gpu | G16) - need->gpu) & G16)) != 0;
}
#endif

/*
 * A CPU or memory amount v >= -1 as a 16-bit lane: a monotone map (v <= w
 * gives lane(v) <= lane(w)), so an entry's lane is still the lane of its
 * largest amount and a node that fits passes every entry above it. u = v
 * + 1 (-1, the closed node, is 0; an amount >= 0 is >= 1) is kept exactly
 * below 1024; above, as a float with a 10-bit mantissa: s = bit length -
 * 10, lane = 512 s + (u >> s), continuous at each power of two and below
 * 28,161 for any int64_t (u < 2^63 + 1). A request whose need rounds to
 * the lane of a node's smaller free amount (within 0.2%) only descends to
 * be refused by the leaf's exact test; the found node is the same.
 */
static inline uint64_t lane_amount(int64_t v) {
  uint64_t u = (uint64_t)v + 1;
  if (u < 1024)
    return u;
  int s = 54 - __builtin_clzll(u);
  return ((uint64_t)s << 9) + (u >> s);
}

/* 0..2^15 - 1 (larger counts are capped): a 16-bit lane. */
static inline uint64_t lane15(int64_t v) {
  return v >= 0x7FFF ? 0x7FFF : (uint64_t)v;
}

static inline uint64_t res_lanes(int64_t cpu, int64_t mem) {
  return lane_amount(cpu) | lane_amount(mem) << 16;
}

/* In the order of the node's fields gpus_full_free, gpus_nonzero_free and
 * max_gpu_free, then gpu_count: seg_leaf_hot packs the three at once. */
static inline uint64_t gpu_lanes(int64_t mx, int64_t full, int64_t nonzero,
                                 int64_t count) {
  return lane15(full) | lane15(nonzero) << 16 | lane15(mx) << 32 |
         lane15(count) << 48;
}

/* An entry with its cold fields, for the full (re)computations. */
struct seg_pair {
  struct lsched_seg h;
  struct lsched_segc k;
};

static void seg_leaf(struct seg_pair *s, const struct lsched_node *nd) {
  s->k.models = nd->gpu_count > 0 ? (UINT64_C(1) << nd->model) : 0;
  if (__builtin_expect(nd->state != LSCHED_NODE_UP, 0)) {
    /* Cordoned, draining or removed: no request may descend here. */
    s->h.res = res_lanes(-1, -1);
    s->h.gpu = gpu_lanes(0, 0, 0, nd->gpu_count);
    s->k.mig_fit = 0;
    return;
  }
  s->h.res = res_lanes(nd->cpu_free, nd->mem_free);
  s->k.mig_fit = nd->mig_fit;
  /* MIG GPUs serve MIG requests only: hide them from the others. */
  s->h.gpu = nd->mode == LSCHED_GPU_MIG
                 ? gpu_lanes(0, 0, 0, nd->gpu_count)
                 : gpu_lanes(nd->max_gpu_free, nd->gpus_full_free,
                             nd->gpus_nonzero_free, nd->gpu_count);
}

/* seg_leaf's hot half on an UP non-MIG node (an allocation or release
 * there leaves the cold half as it was). */
static inline void seg_leaf_hot(struct lsched_seg *s,
                                const struct lsched_node *nd) {
  const uint64_t res = res_lanes(nd->cpu_free, nd->mem_free);
  /* The aggregates one by one (LSCHED__IN_REG): node_apply has just
   * written them so, and one 16-byte load of the three (seven
   * instructions fewer) waited for those stores to reach the cache.
   * Bounded (1000 milli, 64 GPUs): no cap needed (gpu_lanes less its). */
  int full = nd->gpus_full_free, nonzero = nd->gpus_nonzero_free,
      mx = nd->max_gpu_free;
  LSCHED__IN_REG(full);
  LSCHED__IN_REG(nonzero);
  LSCHED__IN_REG(mx);
  const uint64_t gpu = (uint64_t)full | (uint64_t)nonzero << 16 |
                       (uint64_t)mx << 32 | (uint64_t)nd->gpu_count << 48;
#if defined(__SSE2__)
  /* One 16-byte store: the entry is then read back as one word. */
  _mm_storeu_si128((__m128i *)(void *)s,
                   _mm_set_epi64x((long long)gpu, (long long)res));
#else
  s->res = res;
  s->gpu = gpu;
#endif
}

static void seg_combine(struct seg_pair *out, const lsched_cluster *c,
                        int i) {
  const struct lsched_seg *l = &c->seg[2 * i], *r = &c->seg[2 * i + 1];
  const struct lsched_segc *lk = &c->segc[2 * i], *rk = &c->segc[2 * i + 1];
  out->h = seg_max(l, r);
  out->k.models = lk->models | rk->models;
  out->k.mig_fit = (uint8_t)(lk->mig_fit | rk->mig_fit);
}

static int seg_equal(const struct seg_pair *a, const lsched_cluster *c,
                     int i) {
  return a->h.res == c->seg[i].res && a->h.gpu == c->seg[i].gpu &&
         a->k.models == c->segc[i].models && a->k.mig_fit == c->segc[i].mig_fit;
}

static void seg_store(lsched_cluster *c, int i, const struct seg_pair *v) {
  c->seg[i] = v->h;
  c->segc[i] = v->k;
}

#if defined(__SSE2__)
/* Bit j set where 32-bit lane j of the four compare results q0..q3 (lanes
 * 0..15 in order, each 0 or -1) is set: narrowed to bytes (signed
 * saturation keeps 0 and -1) and read by one movemask, not four and their
 * shifts and ors. */
static inline uint32_t lanes16_mask(__m128i q0, __m128i q1, __m128i q2,
                                    __m128i q3) {
  return (uint32_t)_mm_movemask_epi8(
      _mm_packs_epi16(_mm_packs_epi32(q0, q1), _mm_packs_epi32(q2, q3)));
}
#endif

/* The first-fit memo (lsched_next_fit, below): a new visit order or node
 * set forgets every shape. */
static void memo_reset(struct lsched__memo *m) {
  memset(m->tag, 0, sizeof m->tag);
  m->filled = 0;
}

/* The node at position pos, leaf entry i of the index now `leaf`, may have
 * gained room: every shape whose bound lies beyond pos and that the leaf
 * could hold (the index's own necessary test) starts there again. A leaf
 * that fails the test holds no node that fits the shape, so the bound
 * stays true. */
static inline __attribute__((always_inline)) void
memo_gained(lsched_cluster *c, int pos, const struct lsched_seg *leaf,
            size_t i) {
  struct lsched__memo *m = &c->memo;
  if (!m->filled) /* no shape asked: a policy that does not search */
    return;
  uint32_t f = 0; /* the filled ways whose bound lies beyond pos */
#if defined(__SSE2__) && LSCHED__MEMO_WAYS == 16
  const __m128i pv = _mm_set1_epi32(pos);
  const __m128i *lb = (const __m128i *)(const void *)m->lb;
  f = lanes16_mask(_mm_cmpgt_epi32(_mm_loadu_si128(lb), pv),
                   _mm_cmpgt_epi32(_mm_loadu_si128(lb + 1), pv),
                   _mm_cmpgt_epi32(_mm_loadu_si128(lb + 2), pv),
                   _mm_cmpgt_epi32(_mm_loadu_si128(lb + 3), pv));
#else
  for (int w = 0; w < LSCHED__MEMO_WAYS; w++)
    f |= (uint32_t)(m->lb[w] > pos) << w;
#endif
  for (f &= m->filled; f; f &= f - 1) {
    int w = __builtin_ctz(f);
    const struct lsched__seg_need *n = &m->need[w];
    if (!seg_below(leaf, &n->lanes) &&
        (!n->models || (n->models & c->segc[i].models)))
      m->lb[w] = pos;
  }
}

/* (Re)builds the tree over the current order: O(n). */
static int seg_build(lsched_cluster *c) {
  int size = 1;
  while (size < c->n)
    size *= 2;
  if (size != c->seg_size) {
    struct lsched_seg *s = lsched__calloc(&c->a, 2 * (size_t)size, sizeof *s);
    struct lsched_segc *k =
        s ? lsched__calloc(&c->a, 2 * (size_t)size, sizeof *k) : NULL;
    if (!k) {
      lsched__free(&c->a, s);
      return LSCHED_ENOMEM;
    }
    lsched__free(&c->a, c->seg);
    lsched__free(&c->a, c->segc);
    c->seg = s;
    c->segc = k;
    c->seg_size = size;
  } else {
    memset(c->seg, 0, 2 * (size_t)size * sizeof *c->seg);
    memset(c->segc, 0, 2 * (size_t)size * sizeof *c->segc);
  }
  memo_reset(&c->memo);
  struct seg_pair v;
  for (int p = 0; p < c->n; p++) {
    seg_leaf(&v, &c->nodes[c->order[p]]);
    seg_store(c, size + p, &v);
  }
  for (int i = size - 1; i >= 1; i--) {
    seg_combine(&v, c, i);
    seg_store(c, i, &v);
  }
  return LSCHED_OK;
}

/* Refreshes a leaf and its ancestors, stopping at the first ancestor whose
 * maxima do not change (its own ancestors then cannot change either). */
static void seg_update(lsched_cluster *c, int node) {
  int pos = lsched__node_pos(c, node), i = c->seg_size + pos;
  struct seg_pair v;
  seg_leaf(&v, &c->nodes[node]);
  seg_store(c, i, &v);
  memo_gained(c, pos, &v.h, (size_t)i);
  for (i /= 2; i >= 1; i /= 2) {
    seg_combine(&v, c, i);
    if (seg_equal(&v, c, i))
      break;
    seg_store(c, i, &v);
  }
}

/*
 * seg_update after an allocation (grew 0) or a release (grew 1) on a
 * non-MIG node: only the hot lanes move, all in one direction. After a
 * release every lane of the leaf went up or stayed, so an ancestor's new
 * maximum is the larger of its old one and the leaf's, with no look at
 * the sibling; the climb stops at the first ancestor that already held it.
 * After an allocation the ancestors are recombined from both children, as
 * seg_update does, over the hot words only. (seg_update took 10% of a
 * million-job first-fit replay; the lane words halved what was left.)
 */
static inline __attribute__((always_inline)) void
seg_update_alloc(lsched_cluster *c, int node, int grew) {
  const struct lsched_node *nd = &c->nodes[node];
  struct lsched_seg *seg = c->seg;
  /* Unsigned: halving is one shift (a signed i / 2 costs three). */
  const int pos = lsched__node_pos(c, node);
  size_t i = (size_t)c->seg_size + (size_t)pos;
  struct lsched_seg leaf;
  if (__builtin_expect(nd->state == LSCHED_NODE_UP &&
                           nd->mode != LSCHED_GPU_MIG, 1)) {
    seg_leaf_hot(&leaf, nd);
  } else { /* closed, or CPU only on a MIG node: its GPU lanes stay hidden */
    struct seg_pair v;
    seg_leaf(&v, nd);
    leaf = v.h;
  }
  seg[i] = leaf;
  if (grew)
    memo_gained(c, pos, &leaf, i);
#if defined(__SSE2__)
  /* By byte offset o of an entry (16 bytes, o = 16 i): the parent is at
   * (o >> 1) & ~15 and its children at 2 o and 2 o + 16, which address
   * modes reach (an index needs a shift for its scale of 16): a level costs
   * one instruction fewer after a release, two after an allocation. The
   * root's offset is 16, its parent's 0. */
  _Static_assert(sizeof(struct lsched_seg) == 16, "one 16-byte entry");
  unsigned char *const base = (unsigned char *)seg;
  const __m128i lv = seg_load(&leaf);
  for (size_t o = i * sizeof *seg; (o = (o >> 1) & ~(size_t)15) != 0;) {
    struct lsched_seg *a = (struct lsched_seg *)(void *)(base + o);
    const struct lsched_seg *l =
        (const struct lsched_seg *)(void *)(base + 2 * o);
    if (!(grew ? seg_set_max(a, seg_load(a), lv)
               : seg_set_max(a, seg_load(l), seg_load(l + 1))))
      break;
  }
#else
  for (i >>= 1; i >= 1; i >>= 1) {
    struct lsched_seg *a = &seg[i];
    if (!seg_set_max2(a, grew ? seg_max(a, &leaf)
                              : seg_max(&seg[2 * i], &seg[2 * i + 1])))
      break;
  }
#endif
}

void lsched__node_changed(lsched_cluster *c, int node) {
  node_refresh(c, &c->nodes[node]);
  if (c->seg_size > 0)
    seg_update(c, node);
}

/* ---------------------------------------------------------------------- */
/* Nodes                                                                   */

static int grow(const lsched_allocator *a, void **p, int *cap, int need,
                size_t elem) {
  if (need <= *cap)
    return LSCHED_OK;
  int nc = *cap ? *cap : 16;
  while (nc < need)
    nc *= 2;
  void *np = lsched__realloc(a, *p, (size_t)nc * elem);
  if (!np)
    return LSCHED_ENOMEM;
  *p = np;
  *cap = nc;
  return LSCHED_OK;
}

static int add_shape(lsched_cluster *c, const struct lsched_node *nd) {
  for (int i = 0; i < c->nshapes; i++) {
    const struct lsched_shape *s = &c->shapes[i];
    if (s->cpu_cap == nd->cpu_cap && s->mem_cap == nd->mem_cap &&
        s->gpu_count == nd->gpu_count && s->model == nd->model &&
        s->mode == nd->mode)
      return LSCHED_OK;
  }
  int r = grow(&c->a, (void **)&c->shapes, &c->shape_cap, c->nshapes + 1,
               sizeof *c->shapes);
  if (r)
    return r;
  struct lsched_shape *s = &c->shapes[c->nshapes++];
  s->cpu_cap = nd->cpu_cap;
  s->mem_cap = nd->mem_cap;
  s->gpu_count = nd->gpu_count;
  s->model = nd->model;
  s->mode = nd->mode;
  return LSCHED_OK;
}

/* The id of the present node named name other than `except`, or -1. */
static int find_name(const lsched_cluster *c, const char *name, int except) {
  for (int i = 0; i < c->n; i++)
    if (i != except && c->nodes[i].name && c->nodes[i].state !=
        LSCHED_NODE_REMOVED && strcmp(c->nodes[i].name, name) == 0)
      return i;
  return -1;
}

/* Every check of a spec that add_node and update_node share; `self` is the
 * id being updated (-1 when adding). Sets the message. */
static int check_spec(lsched_cluster *c, const lsched_node_spec *spec,
                      int self) {
  if (spec->version == 0 || spec->version > LSCHED_NODE_SPEC_VERSION) {
    set_err(c, "node spec version %u not supported (1..%d)", spec->version,
            LSCHED_NODE_SPEC_VERSION);
    return LSCHED_EVERSION;
  }
  (void)self;
  if (spec->cpu_milli < 0 || spec->memory_mib < 0) {
    set_err(c, "node '%s': negative CPU or memory",
            spec->name ? spec->name : "");
    return LSCHED_EINVAL;
  }
  /* Bounds that keep every score product of the policies inside int64. */
  if (spec->cpu_milli > LSCHED_MAX_CPU_MILLI ||
      spec->memory_mib > LSCHED_MAX_MEMORY_MIB) {
    set_err(c, "node '%s': CPU or memory beyond the library's limits",
            spec->name ? spec->name : "");
    return LSCHED_ERANGE;
  }
  if (spec->gpu_count < 0 || spec->gpu_count > LSCHED_MAX_GPUS_PER_NODE) {
    set_err(c, "node '%s': gpu_count %d outside 0..%d",
            spec->name ? spec->name : "", spec->gpu_count,
            LSCHED_MAX_GPUS_PER_NODE);
    return spec->gpu_count < 0 ? LSCHED_EINVAL : LSCHED_ELIMIT;
  }
  if (spec->gpu_count > 0 &&
      (spec->gpu_model < 0 || spec->gpu_model >= c->nmodels)) {
    set_err(c, "node '%s': GPU model id %d is not a model of this cluster",
            spec->name ? spec->name : "", spec->gpu_model);
    return LSCHED_ENOENT;
  }
  if (spec->gpu_mode != LSCHED_GPU_EXCLUSIVE &&
      spec->gpu_mode != LSCHED_GPU_SHARED && spec->gpu_mode != LSCHED_GPU_MIG) {
    set_err(c, "node '%s': unknown GPU mode %d", spec->name ? spec->name : "",
            (int)spec->gpu_mode);
    return LSCHED_EINVAL;
  }
  /* MIG: the layout is checked before anything changes. */
  const int is_mig = spec->gpu_mode == LSCHED_GPU_MIG && spec->gpu_count > 0;
  if (spec->gpu_mode == LSCHED_GPU_MIG && spec->version < 2) {
    set_err(c, "node '%s': GPU mode MIG needs node spec version 2",
            spec->name ? spec->name : "");
    return LSCHED_EINVAL;
  }
  if (is_mig && !spec->mig_dynamic && spec->mig_layout_count <= 0) {
    /* No instance would ever exist: every MIG request would fail. */
    set_err(c, "node '%s': a static MIG node needs a layout (mig_layout, "
            "mig_layout_count > 0), or mig_dynamic 1",
            spec->name ? spec->name : "");
    return LSCHED_EINVAL;
  }
  if (is_mig) {
    int bad;
    int lr =
        lsched_mig_layout_check(spec->mig_layout, spec->mig_layout_count, &bad);
    if (lr) {
      set_err(c, "node '%s': MIG layout entry %d %s",
              spec->name ? spec->name : "", bad,
              lr == LSCHED_ERANGE ? "overlaps an earlier one"
                                  : "is not a valid kind and start");
      return lr;
    }
  }
  return LSCHED_OK;
}

int lsched_cluster_add_node(lsched_cluster *c, const lsched_node_spec *spec,
                            int *out_id) {
  if (!c || !spec)
    return LSCHED_EINVAL;
  int r = check_spec(c, spec, -1);
  if (r)
    return r;
  const int is_mig = spec->gpu_mode == LSCHED_GPU_MIG && spec->gpu_count > 0;
  if (c->n == INT32_MAX / 2 || c->ngpus > INT32_MAX / 2)
    return LSCHED_ELIMIT;
  if ((r = grow(&c->a, (void **)&c->nodes, &c->node_cap, c->n + 1,
                sizeof *c->nodes)))
    return r;
  int order_cap = c->node_cap; /* order and pos_of track node_cap */
  int *no = lsched__realloc(&c->a, c->order, (size_t)order_cap * sizeof(int));
  if (!no)
    return LSCHED_ENOMEM;
  c->order = no;
  int *np = lsched__realloc(&c->a, c->pos_of, (size_t)order_cap * sizeof(int));
  if (!np)
    return LSCHED_ENOMEM;
  c->pos_of = np;
  /* One spare entry keeps gpu_free non-NULL once a node exists, so that
   * gpu_free + gpu_off is defined for nodes without GPUs too (NULL + 0 is
   * undefined behaviour: clang's UBSan, tests/fuzz/fuzz_libsched.c). */
  if ((r = grow(&c->a, (void **)&c->gpu_free, &c->gpu_pool_cap,
                c->ngpus + spec->gpu_count + 1, sizeof *c->gpu_free)))
    return r;
  char *name = NULL;
  if (spec->name) {
    size_t len = strlen(spec->name);
    name = lsched__alloc(&c->a, len + 1);
    if (!name)
      return LSCHED_ENOMEM;
    memcpy(name, spec->name, len + 1);
  }
  struct lsched_node nd;
  memset(&nd, 0, sizeof nd);
  nd.name = name;
  nd.cpu_cap = nd.cpu_free = spec->cpu_milli;
  nd.mem_cap = nd.mem_free = spec->memory_mib;
  nd.gpu_count = spec->gpu_count;
  nd.model = spec->gpu_count > 0 ? spec->gpu_model : -1;
  nd.mode = spec->gpu_mode;
  nd.features = spec->version >= 3 ? spec->features : 0;
  nd.gpu_off = c->ngpus;
  if (is_mig && (r = lsched__mig_add_node(c, &nd, spec))) {
    set_err(c, "node '%s': %s", spec->name ? spec->name : "",
            r == LSCHED_EINVAL ? "its MIG layout uses a kind the model does "
                                 "not offer"
                               : lsched_strerror(r));
    lsched__free(&c->a, name);
    return r;
  }
  /* Saved so that a failing seg_build() below can undo everything this
   * call changed (test_libsched: alloc-failure loop). */
  const int old_nshapes = c->nshapes;
  const int64_t old_max_cpu_cap = c->max_cpu_cap;
  const int old_max_gpu_count = c->max_gpu_count;
  if ((r = add_shape(c, &nd))) {
    if (is_mig)
      lsched__mig_drop_node(c, &nd);
    lsched__free(&c->a, name);
    return r;
  }
  for (int i = 0; i < nd.gpu_count; i++)
    c->gpu_free[c->ngpus + i] = LSCHED_GPU_MILLI;
  c->ngpus += nd.gpu_count;
  int id = c->n;
  c->nodes[id] = nd;
  node_refresh(c, &c->nodes[id]);
  c->order[id] = id;
  c->pos_of[id] = id;
  c->n++;
  if (nd.cpu_cap > c->max_cpu_cap)
    c->max_cpu_cap = nd.cpu_cap;
  if (nd.gpu_count > c->max_gpu_count)
    c->max_gpu_count = nd.gpu_count;
  int old_model_max = nd.model >= 0 ? c->model_max_gpus[nd.model] : 0;
  if (nd.model >= 0 && nd.gpu_count > old_model_max)
    c->model_max_gpus[nd.model] = nd.gpu_count;
  /* Appending at the end of the order keeps the tree valid if it has room;
   * otherwise it is rebuilt (amortised O(1) per node). */
  if (c->n > c->seg_size) {
    if ((r = seg_build(c))) {
      c->n--; /* roll back so the cluster stays consistent */
      c->ngpus -= nd.gpu_count;
      /* Fix: also drop the shape and the maxima of the node that was not
       * added; before, lsched_can_ever_fit() kept accepting requests only
       * that node could hold and best/worst-fit scored against its CPU. */
      c->nshapes = old_nshapes;
      c->max_cpu_cap = old_max_cpu_cap;
      c->max_gpu_count = old_max_gpu_count;
      if (nd.model >= 0)
        c->model_max_gpus[nd.model] = old_model_max;
      if (is_mig)
        lsched__mig_drop_node(c, &nd);
      lsched__free(&c->a, name);
      return r;
    }
  } else {
    seg_update(c, id);
  }
  if (out_id)
    *out_id = id;
  c->errmsg[0] = '\0';
  return node_change_done(c, id, LSCHED_NODE_ADDED);
}

/* ---------------------------------------------------------------------- */
/* A cluster that changes: remove, update, states, lookup                  */

/* Shapes and the capacity maxima from the present nodes: O(nodes x
 * shapes). On ENOMEM the old shape list stays (a superset: can_ever_fit
 * may then answer 1 for a removed shape, never 0 wrongly). */
static int recompute_shapes(lsched_cluster *c) {
  c->nshapes = 0;
  c->max_cpu_cap = 0;
  c->max_gpu_count = 0;
  memset(c->model_max_gpus, 0, sizeof c->model_max_gpus);
  int rc = LSCHED_OK;
  for (int i = 0; i < c->n; i++) {
    const struct lsched_node *nd = &c->nodes[i];
    if (nd->state == LSCHED_NODE_REMOVED)
      continue;
    if (rc == LSCHED_OK)
      rc = add_shape(c, nd);
    if (nd->cpu_cap > c->max_cpu_cap)
      c->max_cpu_cap = nd->cpu_cap;
    if (nd->gpu_count > c->max_gpu_count)
      c->max_gpu_count = nd->gpu_count;
    if (nd->model >= 0 && nd->gpu_count > c->model_max_gpus[nd->model])
      c->model_max_gpus[nd->model] = nd->gpu_count;
  }
  return rc;
}

static int node_is_idle(const struct lsched_node *nd) {
  return nd->cpu_free == nd->cpu_cap && nd->mem_free == nd->mem_cap &&
         nd->gpu_free_sum == (int64_t)nd->gpu_count * LSCHED_GPU_MILLI;
}

static int present(lsched_cluster *c, int node, const char *what) {
  if (node < 0 || node >= c->n ||
      c->nodes[node].state == LSCHED_NODE_REMOVED) {
    set_err(c, "%s: node %d does not exist", what, node);
    return LSCHED_ENOENT;
  }
  return LSCHED_OK;
}

/*
 * Replaces the GPUs of node id by those of spec (none when spec is NULL):
 * the GPU pool and the MIG pool are spliced at the node's offsets and the
 * later nodes' offsets moved. The node must be idle. Every allocation is
 * made before anything changes, so a failure leaves the cluster as it was.
 * Fills nd_new's gpu_count, model, mode, gpu_off and mig_off.
 */
static int splice_gpus(lsched_cluster *c, int id, const lsched_node_spec *spec,
                       struct lsched_node *nd_new) {
  const struct lsched_node old = c->nodes[id];
  const int k_old = old.gpu_count, k_new = spec ? spec->gpu_count : 0;
  const int old_mig = old.mode == LSCHED_GPU_MIG && k_old > 0;
  const int new_mig = spec && spec->gpu_mode == LSCHED_GPU_MIG && k_new > 0;
  int r = grow(&c->a, (void **)&c->gpu_free, &c->gpu_pool_cap,
               c->ngpus - k_old + k_new + 1, sizeof *c->gpu_free);
  if (r)
    return r;
  nd_new->gpu_count = k_new;
  nd_new->model = k_new > 0 ? spec->gpu_model : -1;
  nd_new->mode = spec ? spec->gpu_mode : LSCHED_GPU_SHARED;
  nd_new->mig_off = 0;
  if (new_mig && (r = lsched__mig_add_node(c, nd_new, spec))) {
    set_err(c, "node %d: %s", id,
            r == LSCHED_EINVAL ? "its MIG layout uses a kind the model does "
                                 "not offer"
                               : lsched_strerror(r));
    return r;
  }
  /* Nothing fails from here. MIG pool: cut the old GPUs, then move the
   * new ones (appended at the end) to the node's place in id order. */
  if (old_mig) {
    lsched__mig_cut(c, old.mig_off, k_old);
    for (int i = 0; i < c->n; i++)
      if (i != id && c->nodes[i].mode == LSCHED_GPU_MIG &&
          c->nodes[i].gpu_count > 0 && c->nodes[i].mig_off > old.mig_off)
        c->nodes[i].mig_off -= k_old;
    if (new_mig)
      nd_new->mig_off -= k_old;
  }
  if (new_mig) {
    int to = 0;
    for (int i = 0; i < id; i++)
      if (c->nodes[i].mode == LSCHED_GPU_MIG && c->nodes[i].gpu_count > 0 &&
          c->nodes[i].state != LSCHED_NODE_REMOVED)
        to += c->nodes[i].gpu_count;
    lsched__mig_move_last(c, k_new, to);
    for (int i = id + 1; i < c->n; i++)
      if (c->nodes[i].mode == LSCHED_GPU_MIG && c->nodes[i].gpu_count > 0)
        c->nodes[i].mig_off += k_new;
    nd_new->mig_off = to;
  }
  /* The GPU pool. */
  int tail = c->ngpus - old.gpu_off - k_old;
  if (k_new != k_old && tail > 0)
    memmove(c->gpu_free + old.gpu_off + k_new,
            c->gpu_free + old.gpu_off + k_old, (size_t)tail * sizeof(int));
  for (int i = 0; i < k_new; i++)
    c->gpu_free[old.gpu_off + i] = LSCHED_GPU_MILLI;
  for (int i = id + 1; i < c->n; i++)
    c->nodes[i].gpu_off += k_new - k_old;
  c->ngpus += k_new - k_old;
  nd_new->gpu_off = old.gpu_off;
  return LSCHED_OK;
}

/* Tells policies and observers; with check_invariants, then checks the
 * whole cluster (node changes are rare). */
static int node_change_done(lsched_cluster *c, int id, int change) {
  int rc = LSCHED_OK;
  if (c->nattached > 0 || c->nobservers > 0)
    rc = lsched__node_changed_notify(c, id, change);
  /* An add or a state change touches one node and its index path; an
   * update or removal moves pool offsets: the whole cluster. */
  if (rc == LSCHED_OK && c->check_invariants)
    rc = change == LSCHED_NODE_ADDED || change == LSCHED_NODE_STATE
             ? check_after(c, id)
             : lsched_cluster_check(c);
  return rc;
}

/* After node id's record changed: aggregates, index, shapes, and the
 * others' refresh (their GPU pool offsets may have moved, which their
 * cached aggregates do not depend on). */
static int node_record_changed(lsched_cluster *c, int id, int change) {
  node_refresh(c, &c->nodes[id]);
  seg_update(c, id);
  recompute_shapes(c);
  c->errmsg[0] = '\0';
  return node_change_done(c, id, change);
}

int lsched_cluster_remove_node(lsched_cluster *c, int node) {
  if (!c)
    return LSCHED_EINVAL;
  int r = present(c, node, "remove_node");
  if (r)
    return r;
  if (lsched__pool_host_of(c, node) >= 0) {
    set_err(c, "remove_node: node %d is a pool's host", node);
    return LSCHED_ESTATE;
  }
  struct lsched_node *nd = &c->nodes[node];
  if (!node_is_idle(nd)) {
    set_err(c, "remove_node: node %d ('%s') has allocations; drain it first",
            node, nd->name ? nd->name : "");
    return LSCHED_ESTATE;
  }
  struct lsched_node nn;
  memset(&nn, 0, sizeof nn);
  if ((r = splice_gpus(c, node, NULL, &nn)))
    return r;
  nd = &c->nodes[node];
  lsched__free(&c->a, nd->name);
  nd->name = NULL;
  nd->cpu_cap = nd->cpu_free = 0;
  nd->mem_cap = nd->mem_free = 0;
  nd->gpu_count = 0;
  nd->model = -1;
  nd->mode = LSCHED_GPU_SHARED;
  nd->gpu_off = nn.gpu_off;
  nd->mig_off = 0;
  nd->features = 0;
  nd->state = LSCHED_NODE_REMOVED;
  return node_record_changed(c, node, LSCHED_NODE_DELETED);
}

int lsched_cluster_update_node(lsched_cluster *c, int node,
                               const lsched_node_spec *spec) {
  if (!c || !spec)
    return LSCHED_EINVAL;
  int r = present(c, node, "update_node");
  if (r)
    return r;
  if (lsched__pool_host_of(c, node) >= 0) {
    set_err(c, "update_node: node %d is a pool's host", node);
    return LSCHED_ESTATE;
  }
  if ((r = check_spec(c, spec, node)))
    return r;
  struct lsched_node *nd = &c->nodes[node];
  const int idle = node_is_idle(nd);
  if (!idle) {
    int same_gpus = spec->gpu_count == nd->gpu_count &&
                    (nd->gpu_count == 0 ||
                     (spec->gpu_model == nd->model && spec->gpu_mode == nd->mode));
    if (!same_gpus || spec->cpu_milli < nd->cpu_cap - nd->cpu_free ||
        spec->memory_mib < nd->mem_cap - nd->mem_free) {
      set_err(c,
              "update_node: node %d has allocations: only its name, "
              "features and CPU/memory not below what is allocated may "
              "change",
              node);
      return LSCHED_ESTATE;
    }
  }
  char *name = NULL;
  if (spec->name && !(name = lsched__alloc(&c->a, strlen(spec->name) + 1)))
    return LSCHED_ENOMEM;
  if (name)
    memcpy(name, spec->name, strlen(spec->name) + 1);
  if (idle) {
    struct lsched_node nn;
    memset(&nn, 0, sizeof nn);
    if ((r = splice_gpus(c, node, spec, &nn))) {
      lsched__free(&c->a, name);
      return r;
    }
    nd = &c->nodes[node];
    nd->gpu_count = nn.gpu_count;
    nd->model = nn.model;
    nd->mode = nn.mode;
    nd->gpu_off = nn.gpu_off;
    nd->mig_off = nn.mig_off;
  }
  int64_t cpu_used = nd->cpu_cap - nd->cpu_free;
  int64_t mem_used = nd->mem_cap - nd->mem_free;
  nd->cpu_cap = spec->cpu_milli;
  nd->cpu_free = spec->cpu_milli - cpu_used;
  nd->mem_cap = spec->memory_mib;
  nd->mem_free = spec->memory_mib - mem_used;
  nd->features = spec->version >= 3 ? spec->features : 0;
  lsched__free(&c->a, nd->name);
  nd->name = name;
  return node_record_changed(c, node, LSCHED_NODE_UPDATED);
}

int lsched_cluster_set_node_state(lsched_cluster *c, int node,
                                  lsched_node_state state) {
  if (!c)
    return LSCHED_EINVAL;
  int r = present(c, node, "set_node_state");
  if (r)
    return r;
  if (state != LSCHED_NODE_UP && state != LSCHED_NODE_CORDONED &&
      state != LSCHED_NODE_DRAINING) {
    set_err(c, "set_node_state: state %d is not UP, CORDONED or DRAINING",
            (int)state);
    return LSCHED_EINVAL;
  }
  c->errmsg[0] = '\0';
  struct lsched_node *nd = &c->nodes[node];
  if (nd->state == (uint8_t)state)
    return LSCHED_OK;
  nd->state = (uint8_t)state;
  seg_update(c, node);
  return node_change_done(c, node, LSCHED_NODE_STATE);
}

int lsched_cluster_node_state(const lsched_cluster *c, int node) {
  if (!c)
    return LSCHED_EINVAL;
  if (node < 0 || node >= c->n)
    return LSCHED_ENOENT;
  return c->nodes[node].state;
}

int lsched_cluster_node_idle(const lsched_cluster *c, int node) {
  if (!c)
    return LSCHED_EINVAL;
  if (node < 0 || node >= c->n)
    return LSCHED_ENOENT;
  return node_is_idle(&c->nodes[node]);
}

uint64_t lsched_cluster_node_features(const lsched_cluster *c, int node) {
  if (!c || node < 0 || node >= c->n)
    return 0;
  return c->nodes[node].features;
}

int lsched_cluster_find_node(lsched_cluster *c, const char *name) {
  if (!c || !name)
    return LSCHED_EINVAL;
  int id = find_name(c, name, -1);
  if (id < 0) {
    set_err(c, "no node named '%s'", name);
    return LSCHED_ENOENT;
  }
  return id;
}

int lsched_cluster_node_count(const lsched_cluster *c) { return c ? c->n : 0; }

int lsched_cluster_node_info(const lsched_cluster *c, int node,
                             lsched_node_info *out) {
  if (!c || !out)
    return LSCHED_EINVAL;
  if (node < 0 || node >= c->n ||
      c->nodes[node].state == LSCHED_NODE_REMOVED)
    return LSCHED_ENOENT;
  const struct lsched_node *nd = &c->nodes[node];
  /* Filled up to the caller's version (abi.h). */
  static const size_t sizes[] = {0, sizeof(lsched_node_info)};
  lsched_node_info f;
  memset(&f, 0, sizeof f);
  f.name = nd->name ? nd->name : "";
  f.cpu_milli = nd->cpu_cap;
  f.memory_mib = nd->mem_cap;
  f.cpu_free = nd->cpu_free;
  f.memory_free = nd->mem_free;
  f.gpu_count = nd->gpu_count;
  f.gpu_model = nd->model;
  f.gpu_mode = nd->mode;
  f.gpus_fully_free = nd->gpus_full_free;
  f.gpu_milli_free = nd->gpu_free_sum;
  lsched__fill_out(out, &f, sizes, 2);
  return LSCHED_OK;
}

int lsched_cluster_gpu_free(const lsched_cluster *c, int node, int gpu) {
  if (!c)
    return LSCHED_EINVAL;
  if (node < 0 || node >= c->n)
    return LSCHED_ENOENT;
  if (gpu < 0 || gpu >= c->nodes[node].gpu_count)
    return LSCHED_ENOENT;
  return c->gpu_free[c->nodes[node].gpu_off + gpu];
}

int lsched_cluster_gpus_free(const lsched_cluster *c, int node, int *out,
                             int n) {
  if (!c || (!out && n > 0) || n < 0)
    return LSCHED_EINVAL;
  if (node < 0 || node >= c->n)
    return LSCHED_ENOENT;
  const struct lsched_node *nd = &c->nodes[node];
  int k = nd->gpu_count < n ? nd->gpu_count : n;
  if (k > 0)
    memcpy(out, c->gpu_free + nd->gpu_off, (size_t)k * sizeof *out);
  return nd->gpu_count;
}

void lsched_cluster_totals(const lsched_cluster *c, lsched_totals *out) {
  if (!out)
    return;
  /* Filled up to the caller's version (abi.h). */
  static const size_t sizes[] = {0, sizeof(lsched_totals)};
  lsched_totals t;
  memset(&t, 0, sizeof t);
  if (c) {
    t.gpus = c->ngpus;
    for (int i = 0; i < c->n; i++) {
      const struct lsched_node *nd = &c->nodes[i];
      t.nodes += nd->state != LSCHED_NODE_REMOVED;
      t.cpu_milli += nd->cpu_cap;
      t.cpu_free += nd->cpu_free;
      t.memory_mib += nd->mem_cap;
      t.memory_free += nd->mem_free;
      t.gpu_milli_free += nd->gpu_free_sum;
    }
    if (c->npools > 0) /* pool GPUs once, not once per host */
      lsched__pool_totals(c, &t.gpus, &t.gpu_milli_free);
    t.gpu_milli = (int64_t)t.gpus * LSCHED_GPU_MILLI;
  }
  lsched__fill_out(out, &t, sizes, 2);
}

int lsched_cluster_set_order(lsched_cluster *c, const int *order, int n) {
  if (!c || (!order && n > 0) || n != c->n) {
    if (c)
      set_err(c, "order has %d entries, cluster has %d nodes", n, c->n);
    return LSCHED_EINVAL;
  }
  /* Validate it is a permutation, using pos_of as scratch after a copy. */
  for (int i = 0; i < n; i++)
    c->pos_of[i] = -1;
  for (int p = 0; p < n; p++) {
    int id = order[p];
    if (id < 0 || id >= n || c->pos_of[id] != -1) {
      for (int q = 0; q < n; q++) /* restore the old mapping */
        c->pos_of[c->order[q]] = q;
      set_err(c, "order is not a permutation (entry %d = %d)", p, id);
      return LSCHED_EINVAL;
    }
    c->pos_of[id] = p;
  }
  /* Fix: memcpy with a NULL pointer is undefined even for 0 bytes, and an
   * empty cluster passes order == NULL with n == 0 (UBSan nonnull). */
  if (n > 0)
    memcpy(c->order, order, (size_t)n * sizeof *order);
  c->order_id = 1;
  for (int p = 0; p < n && c->order_id; p++)
    c->order_id = order[p] == p;
  c->order_gen++;
  return seg_build(c);
}

const int *lsched_cluster_order(const lsched_cluster *c) {
  return c ? c->order : NULL;
}

/* ---------------------------------------------------------------------- */
/* Fit tests                                                               */

int lsched_request_validate(const lsched_request *req) {
  return lsched__request_validate(req);
}

/* lsched__node_fits, inlined in this file's hot callers (seg_find and
 * lsched_pick_gpus: a call each per placement). */
static inline int node_fits(const lsched_cluster *c,
                            const struct lsched_node *nd,
                            const lsched_request *req);

int lsched__node_fits(const lsched_cluster *c, const struct lsched_node *nd,
                      const lsched_request *req) {
  return node_fits(c, nd, req);
}

/* What a fit test decides before the GPUs' free shares, given the node's
 * free CPU and memory: 0 or 1 (decided), -1 (the GPUs decide). */
static inline int node_admits(const lsched_cluster *c,
                              const struct lsched_node *nd,
                              const lsched_request *req, int64_t cpu_free,
                              int64_t mem_free) {
  if (cpu_free < req->cpu_milli || mem_free < req->memory_mib)
    return 0;
  if (__builtin_expect(nd->state != LSCHED_NODE_UP, 0))
    return 0;
  if (req->version >= 3 &&
      (req->features || req->node_allowed || req->node_filter) &&
      !lsched__node_allowed(c, nd, req))
    return 0;
  int k = req->gpu_count;
  if (k == 0)
    return 1;
  /* MIG requests fit MIG GPUs only, and the others never fit them. */
  if (lsched__req_mig(req))
    return nd->mode == LSCHED_GPU_MIG && lsched__mig_node_fits(c, nd, req);
  if (nd->mode == LSCHED_GPU_MIG)
    return 0;
  if (nd->gpu_count < k)
    return 0;
  if (req->model_mask && !(req->model_mask & (UINT64_C(1) << nd->model)))
    return 0;
  return -1;
}

static inline int node_fits(const lsched_cluster *c,
                            const struct lsched_node *nd,
                            const lsched_request *req) {
  int a = node_admits(c, nd, req, nd->cpu_free, nd->mem_free);
  if (a >= 0)
    return a;
  return lsched__gpus_fit(c, nd, req->gpu_count, lsched__eff_milli(nd, req));
}

/* The GPUs of the n shares g with at least d free (d >= 1). The usual
 * 8-GPU node with SSE2: two compares and a sum of the -1 lanes. */
static inline int gpus_holding(const int *g, int n, int d) {
#if defined(__SSE2__)
  if (n == 8) {
    const __m128i *v = (const __m128i *)(const void *)g;
    const __m128i dv = _mm_set1_epi32(d - 1);
    __m128i s = _mm_add_epi32(_mm_cmpgt_epi32(_mm_loadu_si128(v), dv),
                              _mm_cmpgt_epi32(_mm_loadu_si128(v + 1), dv));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return -_mm_cvtsi128_si32(s);
  }
#endif
  int cnt = 0;
  for (int i = 0; i < n; i++)
    cnt += g[i] >= d;
  return cnt;
}

int lsched_fits_after(const lsched_cluster *c, int node,
                      const lsched_request *req,
                      const lsched_placement *released, int n) {
  return lsched_fits_after_held(c, node, req, NULL, released, n);
}

/* A part no node of ng GPUs could hold (negative amounts, a share above
 * a GPU, GPUs past the node's). */
static int bad_part(const lsched_placement *p, int ng) {
  return p->cpu_milli < 0 || p->memory_mib < 0 || p->gpu_milli < 0 ||
         p->gpu_milli > LSCHED_GPU_MILLI ||
         (ng < 64 && (p->gpu_mask >> ng) != 0);
}

int lsched_fits_after_held(const lsched_cluster *c, int node,
                           const lsched_request *req,
                           const lsched_placement *held,
                           const lsched_placement *released, int n) {
  if (!c || node < 0 || node >= c->n || n < 0 || (n > 0 && !released) ||
      !lsched__req_valid(c, req))
    return LSCHED_EINVAL;
  const struct lsched_node *nd = &c->nodes[node];
  if (nd->mode == LSCHED_GPU_MIG ||
      (c->npools > 0 && lsched__pool_host_of(c, node) >= 0))
    return LSCHED_ENOTSUP;
  /* What no release changes: state, restrictions, model, GPU count. */
  int a = node_admits(c, nd, req, INT64_MAX, INT64_MAX);
  if (a == 0)
    return LSCHED_ENOFIT;
  int64_t cpu = nd->cpu_free, mem = nd->mem_free;
  const int ng = nd->gpu_count, k = req->gpu_count;
  const int d = a < 0 ? lsched__eff_milli(nd, req) : 0;
  int g[LSCHED_MAX_GPUS_PER_NODE];
  if (ng == 8) /* the usual node: a fixed-size copy, no libc call */
    memcpy(g, c->gpu_free + nd->gpu_off, 8 * sizeof *g);
  else
    memcpy(g, c->gpu_free + nd->gpu_off, (size_t)ng * sizeof *g);
  if (held && held->node == node) { /* taken as if allocated */
    if (bad_part(held, ng) || (cpu -= held->cpu_milli) < 0 ||
        (mem -= held->memory_mib) < 0)
      return LSCHED_EINVAL;
    for (uint64_t b = held->gpu_mask; b; b &= b - 1)
      if ((g[__builtin_ctzll(b)] -= held->gpu_milli) < 0)
        return LSCHED_EINVAL;
  }
  /* GPUs with the share (as node_fits: whole ones for a whole share,
   * which implies its maximum and nonzero tests). */
  int cnt = 0;
  if (a < 0)
    cnt = gpus_holding(g, ng, d);
  for (int m = 0;; m++) {
    if (cpu >= req->cpu_milli && mem >= req->memory_mib && cnt >= k)
      return m;
    if (m == n)
      return LSCHED_ENOFIT;
    const lsched_placement *p = &released[m];
    if (p->node != node)
      continue;
    if (bad_part(p, ng))
      return LSCHED_EINVAL;
    cpu += p->cpu_milli;
    mem += p->memory_mib;
    if (cpu > nd->cpu_cap || mem > nd->mem_cap)
      return LSCHED_EINVAL;
    if (p->gpu_milli == LSCHED_GPU_MILLI) {
      /* Whole GPUs (the loop below, folded): each share is >= 0, so one
       * not empty would pass 1000; an empty one becomes whole, which
       * holds any share d > 0 it did not hold. */
      for (uint64_t b = p->gpu_mask; b; b &= b - 1) {
        int i = __builtin_ctzll(b);
        if (g[i] != 0)
          return LSCHED_EINVAL;
        g[i] = LSCHED_GPU_MILLI;
        cnt += d > 0;
      }
      continue;
    }
    for (uint64_t b = p->gpu_mask; b; b &= b - 1) {
      int i = __builtin_ctzll(b);
      int was = g[i] >= d;
      if ((g[i] += p->gpu_milli) > LSCHED_GPU_MILLI)
        return LSCHED_EINVAL;
      cnt += !was && g[i] >= d;
    }
  }
}

int lsched_effective_milli(const lsched_cluster *c, int node,
                           const lsched_request *req) {
  if (!c || !req || node < 0 || node >= c->n)
    return LSCHED_EINVAL;
  const struct lsched_node *nd = &c->nodes[node];
  if (nd->mode == LSCHED_GPU_MIG && req->gpu_count > 0 &&
      lsched__req_mig(req)) {
    int k = lsched_mig_model_kind(c, nd->model, req);
    return k > 0 ? lsched__mig_milli[k] : LSCHED_ENOENT;
  }
  return lsched__eff_milli(nd, req);
}

int lsched_fits(const lsched_cluster *c, int node, const lsched_request *req) {
  if (!c || node < 0 || node >= c->n || !req)
    return 0;
  /* The answer is 0 for a malformed request too, so what rules the node
   * out for any well-formed one (free CPU or memory short; on a shared or
   * exclusive node, fewer GPUs with a share, or whole, than asked: a MIG
   * request never fits there) is answered before the validation, reading
   * integers only. Most calls of a skip pass ask a node that still does
   * not fit (sim/engine/queue_index.c known_nofit): 1.4 M of them cost
   * 47 M instructions of validation on 100k@1.2 first-fit skip. */
  const struct lsched_node *nd = &c->nodes[node];
  if (nd->cpu_free < req->cpu_milli || nd->mem_free < req->memory_mib)
    return 0;
  if (nd->mode != LSCHED_GPU_MIG &&
      req->gpu_count > (nd->mode == LSCHED_GPU_EXCLUSIVE ||
                                req->gpu_milli >= LSCHED_GPU_MILLI
                            ? nd->gpus_full_free
                            : nd->gpus_nonzero_free))
    return 0;
  if (req != c->valid_req && lsched__request_validate(req) != LSCHED_OK)
    return 0;
  /* node_fits less its CPU and memory test, passed above. */
  int a = node_admits(c, nd, req, INT64_MAX, INT64_MAX);
  if (a >= 0)
    return a;
  return lsched__gpus_fit(c, nd, req->gpu_count, lsched__eff_milli(nd, req));
}

int lsched__node_allowed(const lsched_cluster *c,
                         const struct lsched_node *nd,
                         const lsched_request *req) {
  if ((nd->features & req->features) != req->features)
    return 0;
  int id = (int)(nd - c->nodes);
  if (req->node_allowed &&
      (id >= req->node_allowed_count || !req->node_allowed[id]))
    return 0;
  if (req->node_filter &&
      !req->node_filter(req->node_filter_user, c, id))
    return 0;
  return 1;
}

/* Could an empty node nd ever hold the plain (non-MIG) request req? */
static int node_ever_plain(const struct lsched_node *nd,
                           const lsched_request *req) {
  if (nd->cpu_cap < req->cpu_milli || nd->mem_cap < req->memory_mib)
    return 0;
  if (req->gpu_count == 0)
    return 1;
  if (nd->gpu_count < req->gpu_count || nd->mode == LSCHED_GPU_MIG)
    return 0;
  return !req->model_mask || (req->model_mask & (UINT64_C(1) << nd->model));
}

int lsched_can_ever_fit(const lsched_cluster *c, const lsched_request *req) {
  if (!c || !lsched__req_valid(c, req))
    return 0;
  return lsched__can_ever_fit(c, req);
}

/* lsched__can_ever_fit for a restricted or a MIG request: O(nodes). Out
 * of line, so that the common case's shape loop runs without saving
 * registers (it is called on every arrival and every failed placement). */
static __attribute__((noinline)) int
can_ever_fit_scan(const lsched_cluster *c, const lsched_request *req) {
  if (req->version >= 3 &&
      (req->features || req->node_allowed || req->node_filter)) {
    /* Restricted to some nodes: one pass over them, O(nodes). */
    for (int i = 0; i < c->n; i++) {
      const struct lsched_node *nd = &c->nodes[i];
      if (nd->state == LSCHED_NODE_REMOVED || !lsched__node_allowed(c, nd, req))
        continue;
      if (lsched__req_mig(req) ? lsched__mig_node_ever(c, nd, req)
                               : node_ever_plain(nd, req))
        return 1;
    }
    return 0;
  }
  /* A MIG request. Static layouts differ per GPU: one pass over the
   * nodes, O(nodes). */
  for (int i = 0; i < c->n; i++)
    if (c->nodes[i].state != LSCHED_NODE_REMOVED &&
        lsched__mig_node_ever(c, &c->nodes[i], req))
      return 1;
  return 0;
}

int lsched__can_ever_fit(const lsched_cluster *c, const lsched_request *req) {
  if (__builtin_expect(
          (req->version >= 3 &&
           (req->features || req->node_allowed || req->node_filter)) ||
              lsched__req_mig(req),
          0))
    return can_ever_fit_scan(c, req);
  for (int i = 0; i < c->nshapes; i++) {
    const struct lsched_shape *s = &c->shapes[i];
    if (s->cpu_cap < req->cpu_milli || s->mem_cap < req->memory_mib)
      continue;
    if (req->gpu_count == 0)
      return 1;
    if (s->gpu_count < req->gpu_count || s->mode == LSCHED_GPU_MIG)
      continue;
    if (req->model_mask && !(req->model_mask & (UINT64_C(1) << s->model)))
      continue;
    return 1;
  }
  return 0;
}

/*
 * A request turned once into the minimum each subtree maximum must reach
 * (a zero lane where a field does not matter; every lane of an entry is
 * >= 0), tested per entry as two lane comparisons: could some node under
 * the entry fit? Necessary, not sufficient. The cold fields are read only
 * for a model-restricted or a MIG request. (Re-deriving the request's case
 * at each of the ~28 entries a descent on 12,500 nodes visits cost 17%
 * more instructions in lsched_next_fit; the lane words halved the rest.)
 * struct lsched__seg_need is in internal.h: the memo keeps one per shape.
 */
static void seg_need_of(struct lsched__seg_need *n, const lsched_request *req) {
  int k = req->gpu_count;
  n->lanes.res = res_lanes(req->cpu_milli, req->memory_mib);
  n->models = k > 0 ? req->model_mask : 0;
  n->mig_shift = -1;
  if (k > 0 && lsched__req_mig(req)) {
    n->lanes.gpu = gpu_lanes(0, 0, 0, k);
    n->mig_shift = lsched__mig_kind_lb(req) - 1;
  } else {
    int whole = k > 0 && req->gpu_milli == LSCHED_GPU_MILLI;
    int part = k > 0 && !whole;
    /* On exclusive nodes a fractional request needs whole free GPUs,
     * which still implies max_gpu_free >= gpu_milli and nonzero >= k. */
    n->lanes.gpu = gpu_lanes(part ? req->gpu_milli : 0, whole ? k : 0,
                       part ? k : 0, k);
  }
  n->cold = n->models != 0 || n->mig_shift >= 0;
}

/* seg_fits_at's test of the cold fields (n->cold set). */
static inline int seg_fits_cold(const lsched_cluster *c, size_t i,
                                const struct lsched__seg_need *n) {
  const struct lsched_segc *k = &c->segc[i];
  if (n->models && !(n->models & k->models))
    return 0;
  return n->mig_shift < 0 || (k->mig_fit >> n->mig_shift) != 0;
}

/* cold: n->cold, a constant where the caller is specialised on it. */
static inline int seg_fits_at(const lsched_cluster *c, size_t i,
                              const struct lsched__seg_need *n, int cold) {
  if (seg_below(&c->seg[i], &n->lanes))
    return 0;
  return !cold || seg_fits_cold(c, i, n);
}

/* The first position >= from whose node fits req, or -1. Iterative: from
 * the largest subtree starting at `from`, a subtree that cannot fit is
 * skipped by moving to the next subtree on the right (up while a right
 * child, then to the sibling); one that may fit is entered at its left
 * child. (Testing both children and selecting without a branch was
 * measured: 50% more instructions, 15% fewer mispredictions.) */
static inline int seg_find_in(const lsched_cluster *c, int from,
                              const lsched_request *req,
                              const struct lsched__seg_need *need,
                              const int cold) {
  /* Entry i by its byte offset o = 16 i, which an address mode reaches
   * (an index needs a shift for its scale). The tree and the need in
   * locals: the leaf's fit test may call out, after which the compiler
   * reloaded both at each step. */
  const unsigned char *const base = (const unsigned char *)c->seg;
  const size_t leaves = (size_t)c->seg_size * sizeof *c->seg;
  size_t o = leaves + (size_t)from * sizeof *c->seg;
  o >>= __builtin_ctzll(o) - 4; /* the largest subtree starting at from */
#if defined(__SSE2__)
  /* The lanes tested as entry > need - 1 (a need's lanes are 0..2^15 - 1):
   * the compare overwrites the loaded entry, not a copy of the need. */
  const __m128i floor =
      _mm_sub_epi16(seg_load(&need->lanes), _mm_set1_epi16(1));
#endif
  for (;;) {
    const struct lsched_seg *e =
        (const struct lsched_seg *)(const void *)(base + o);
#if defined(__SSE2__)
    const int lanes_fit =
        _mm_movemask_epi8(_mm_cmpgt_epi16(seg_load(e), floor)) == 0xFFFF;
#else
    const int lanes_fit = !seg_below(e, &need->lanes);
#endif
    if (lanes_fit && (!cold || seg_fits_cold(c, o / sizeof *c->seg, need))) {
      if (o < leaves) {
        o *= 2;
        continue;
      }
      int pos = (int)((o - leaves) / sizeof *c->seg);
      if (pos >= c->n)
        return -1; /* padding leaves: nothing further right */
      if (node_fits(c, &c->nodes[lsched__pos_node(c, pos)], req))
        return pos;
    }
    /* Up while a right child, then to the sibling: index i ends in t one
     * bits, and (i + 1) >> t is the sibling of the ancestor t levels up,
     * found at once (the loop cost three instructions a level and a
     * branch mispredicted at its end). The root (offset 16): i was the
     * rightmost entry of its level, nothing lies further right. */
    o += sizeof *c->seg;
    o >>= __builtin_ctzll(o) - 4;
    if (o == sizeof *c->seg)
      return -1;
  }
}

static int seg_find_need(const lsched_cluster *c, int from,
                         const lsched_request *req,
                         const struct lsched__seg_need *need) {
  return need->cold ? seg_find_in(c, from, req, need, 1)
                    : seg_find_in(c, from, req, need, 0);
}

static int seg_find(const lsched_cluster *c, int from,
                    const lsched_request *req) {
  struct lsched__seg_need need;
  seg_need_of(&need, req);
  return seg_find_need(c, from, req, &need);
}

/*
 * The first-fit memo. Per request shape (CPU, memory, GPU count and share,
 * models, features: all a plain fit test reads of a request), a position
 * lb such that no node before lb fits it: the search for the first fit
 * starts there, and lb = n says that no node fits. The bound stays true
 * while nodes only lose room (allocations); every change that may give a
 * node room passes seg_update or a release's seg_update_alloc, which
 * bring the bound of every shape that node's new leaf could hold down to
 * its position (memo_gained), and a new order or node set (seg_build)
 * forgets them. A search from 0 then answers the node it answered
 * without the memo, ties included. Requests a fit test answers per call
 * (node_allowed, node_filter) or that MIG state decides are not memoised.
 * (A queue of a few shapes on a full cluster: a shape's search starts
 * where its last one ended, or where a release made room for it.)
 */
static inline int memo_eligible(const lsched_request *req) {
  return !lsched__req_mig(req) &&
         (req->version < 3 || (!req->node_allowed && !req->node_filter));
}

/* The key of req: its fields from cpu_milli to model_mask, then its
 * features; the padding 0. Field by field (LSCHED__IN_REG): copied as
 * two 16-byte words, the key's read was the stall of 15% of
 * lsched_next_fit's time samples (100k@1.2 first-fit backfill). */
static inline void memo_key_of(struct lsched__memo_key *k,
                               const lsched_request *req) {
  int64_t cpu = req->cpu_milli, mem = req->memory_mib;
  int gpus = req->gpu_count, milli = req->gpu_milli;
  uint64_t models = req->model_mask;
  LSCHED__IN_REG(cpu);
  LSCHED__IN_REG(mem);
  LSCHED__IN_REG(gpus);
  LSCHED__IN_REG(milli);
  LSCHED__IN_REG(models);
  k->cpu = cpu;
  k->mem = mem;
  k->gpus = gpus;
  k->milli = milli;
  k->models = models;
  k->features = req->version >= 3 ? req->features : 0;
  k->pad = 0;
}

/* gpus and milli as one word (as they lie in the key, little-endian). */
static inline uint64_t memo_gm(const struct lsched__memo_key *k) {
  return (uint64_t)(uint32_t)k->gpus | (uint64_t)(uint32_t)k->milli << 32;
}

/* Never 0 (an empty way). */
static inline uint32_t memo_tag(const struct lsched__memo_key *k) {
  uint64_t x = (uint64_t)k->cpu ^ (uint64_t)k->mem * 31 ^ memo_gm(k) * 5 ^
               k->models ^ k->features * 7;
  return (uint32_t)((x * UINT64_C(0x9E3779B97F4A7C15)) >> 32) | 1u;
}

/* The way holding key k (tag t), or -1. */
static inline int memo_way(const struct lsched__memo *m, uint32_t t,
                           const struct lsched__memo_key *k) {
  unsigned hit = 0;
#if defined(__SSE2__) && LSCHED__MEMO_WAYS == 16 &&                          \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  _Static_assert(offsetof(struct lsched__memo_key, mem) == 8 &&
                     offsetof(struct lsched__memo_key, gpus) == 16 &&
                     offsetof(struct lsched__memo_key, models) == 24 &&
                     offsetof(struct lsched__memo_key, pad) == 40 &&
                     sizeof(struct lsched__memo_key) == 48,
                 "memo_way compares the key as three 16-byte words");
  const __m128i tv = _mm_set1_epi32((int)t);
  const __m128i *tg = (const __m128i *)(const void *)m->tag;
  hit = lanes16_mask(_mm_cmpeq_epi32(_mm_loadu_si128(tg), tv),
                     _mm_cmpeq_epi32(_mm_loadu_si128(tg + 1), tv),
                     _mm_cmpeq_epi32(_mm_loadu_si128(tg + 2), tv),
                     _mm_cmpeq_epi32(_mm_loadu_si128(tg + 3), tv));
  /* The key's words from its fields (memo_key_of), not loaded whole. */
  const __m128i k0 = _mm_set_epi64x(k->mem, k->cpu),
                k1 = _mm_set_epi64x((long long)k->models,
                                    (long long)memo_gm(k)),
                k2 = _mm_set_epi64x((long long)k->pad,
                                    (long long)k->features);
  for (; hit; hit &= hit - 1) {
    int w = __builtin_ctz(hit);
    const __m128i *mv = (const __m128i *)(const void *)&m->key[w];
    __m128i eq = _mm_and_si128(
        _mm_and_si128(_mm_cmpeq_epi32(k0, _mm_loadu_si128(mv)),
                      _mm_cmpeq_epi32(k1, _mm_loadu_si128(mv + 1))),
        _mm_cmpeq_epi32(k2, _mm_loadu_si128(mv + 2)));
    if (_mm_movemask_epi8(eq) == 0xFFFF)
      return w;
  }
#else
  for (int w = 0; w < LSCHED__MEMO_WAYS; w++)
    hit |= (unsigned)(m->tag[w] == t) << w;
  for (; hit; hit &= hit - 1) {
    int w = __builtin_ctz(hit);
    const struct lsched__memo_key *q = &m->key[w];
    if (q->cpu == k->cpu && q->mem == k->mem && q->gpus == k->gpus &&
        q->milli == k->milli && q->models == k->models &&
        q->features == k->features)
      return w;
  }
#endif
  return -1;
}

/* seg_find(c, from, req) through the memo (req eligible, from >= 0). */
static int memo_find(lsched_cluster *c, int from, const lsched_request *req) {
  struct lsched__memo *m = &c->memo;
  struct lsched__memo_key k;
  memo_key_of(&k, req);
  const uint32_t t = memo_tag(&k);
  int w = memo_way(m, t, &k);
  if (w < 0) { /* a new shape: nothing known yet */
    w = (int)(m->next++ % LSCHED__MEMO_WAYS);
    m->key[w] = k;
    seg_need_of(&m->need[w], req);
    m->tag[w] = t;
    m->lb[w] = 0;
    m->filled |= 1u << w;
  }
  const struct lsched__seg_need *need = &m->need[w];
  const int lb = m->lb[w];
  if (from > lb) /* nothing learnt of the nodes before from */
    return seg_find_need(c, from, req, need);
  if (lb >= c->n)
    return -1;
  const int p = need->cold ? seg_find_in(c, lb, req, need, 1)
                           : seg_find_in(c, lb, req, need, 0);
  m->lb[w] = p < 0 ? c->n : p;
  return p;
}

/* Appends every fitting position under segment entry i, in order. */
static void seg_collect(const lsched_cluster *c, int i, int lo, int hi,
                        const lsched_request *req,
                        const struct lsched__seg_need *n, int *out, int *m) {
  if (lo >= c->n || !seg_fits_at(c, i, n, n->cold))
    return;
  if (hi - lo == 1) {
    if (lsched__node_fits(c, &c->nodes[c->order[lo]], req))
      out[(*m)++] = c->order[lo];
    return;
  }
  int mid = lo + (hi - lo) / 2;
  seg_collect(c, 2 * i, lo, mid, req, n, out, m);
  seg_collect(c, 2 * i + 1, mid, hi, req, n, out, m);
}

int lsched_collect_fits(const lsched_cluster *c, const lsched_request *req,
                         int *out) {
  int m = 0;
  if (c->n > 0) {
    struct lsched__seg_need need;
    seg_need_of(&need, req);
    seg_collect(c, 1, 0, c->seg_size, req, &need, out, &m);
  }
  return m;
}

int lsched_next_fit(const lsched_cluster *c, const lsched_request *req,
                    int from) {
  /* A malformed request fits nowhere, as lsched_fits() says; before, a
   * negative CPU or memory ask was found a node (tests/fuzz/
   * fuzz_libsched.c). O(1). */
  if (!c || c->n == 0 || from >= c->n || !lsched__req_valid(c, req))
    return -1;
  if (from < 0)
    from = 0;
  if (memo_eligible(req)) /* a cache, not state (struct lsched_cluster) */
    return memo_find((lsched_cluster *)c, from, req);
  return seg_find(c, from, req);
}

/* ---------------------------------------------------------------------- */
/* GPU choice                                                              */

int lsched_pick_gpus(const lsched_cluster *c, int node,
                     const lsched_request *req, lsched_gpu_pick rule,
                     lsched_placement *out) {
  if (!c || !req || !out)
    return LSCHED_EINVAL;
  if (node < 0 || node >= c->n)
    return LSCHED_ENOENT;
  if (!lsched__req_valid(c, req))
    return LSCHED_EINVAL;
  const struct lsched_node *nd = &c->nodes[node];
  if (!node_fits(c, nd, req))
    return LSCHED_ENOFIT;
  out->version = LSCHED_PLACEMENT_VERSION;
  out->node = node;
  out->cpu_milli = req->cpu_milli;
  out->memory_mib = req->memory_mib;
  out->gpu_count = req->gpu_count;
  out->gpu_milli = lsched__eff_milli(nd, req);
  out->gpu_mask = 0;
  out->mig_kind = 0;
  out->mig_start = 0;
  int k = req->gpu_count, d = out->gpu_milli;
  if (k == 0) {
    out->gpu_milli = 0;
    return LSCHED_OK;
  }
  if (nd->mode == LSCHED_GPU_MIG) /* a MIG request (node_fits said so) */
    return lsched_mig_choose(
        c, node, lsched_mig_model_kind(c, nd->model, req), k, rule, out);
  const int *g = c->gpu_free + nd->gpu_off;
  /* Whole GPUs: only fully free GPUs qualify, all with the same share,
   * so every rule takes the lowest k (ties go to the lowest index). */
  if (rule == LSCHED_PICK_LOWEST || d == LSCHED_GPU_MILLI) {
    int got = 0;
    for (int i = 0; i < nd->gpu_count && got < k; i++)
      if (g[i] >= d) {
        out->gpu_mask |= UINT64_C(1) << i;
        got++;
      }
    return LSCHED_OK;
  }
  /* k selections of the best remaining GPU: O(k x G), G <= 64. */
  for (int got = 0; got < k; got++) {
    int best = -1;
    for (int i = 0; i < nd->gpu_count; i++) {
      if (g[i] < d || (out->gpu_mask >> i) & 1)
        continue;
      if (best < 0 ||
          (rule == LSCHED_PICK_TIGHTEST ? g[i] < g[best] : g[i] > g[best]))
        best = i;
    }
    out->gpu_mask |= UINT64_C(1) << best;
  }
  return LSCHED_OK;
}

/* ---------------------------------------------------------------------- */
/* Alloc and release                                                       */

/* Portable SWAR popcount: without -mpopcnt __builtin_popcountll is a
 * libgcc call (2% of a replay's instructions). */
static int popcount64(uint64_t x) {
  x -= (x >> 1) & UINT64_C(0x5555555555555555);
  x = (x & UINT64_C(0x3333333333333333)) +
      ((x >> 2) & UINT64_C(0x3333333333333333));
  x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
  return (int)((x * UINT64_C(0x0101010101010101)) >> 56);
}

/* popcount64(m) == n, by clearing m's lowest bit n times: a placement
 * names a GPU or two, and this loop (five instructions a bit) costs
 * less than popcount64's twenty. */
static inline int mask_bits_are(uint64_t m, int n) {
  for (; m && n > 0; n--)
    m &= m - 1;
  return m == 0 && n == 0;
}

/* Shape checks common to alloc and release. */
static inline __attribute__((always_inline)) int
check_placement(lsched_cluster *c, const lsched_placement *p,
                const char *what) {
  if (!p) {
    set_err(c, "%s: NULL placement", what);
    return LSCHED_EINVAL;
  }
  if (p->node < 0 || p->node >= c->n) {
    set_err(c, "%s: node %d does not exist", what, p->node);
    return LSCHED_ENOENT;
  }
  const struct lsched_node *nd = &c->nodes[p->node];
  /* Some amount negative: the sign of the three or'ed (one test). */
  int64_t cpu = p->cpu_milli, mem = p->memory_mib;
  LSCHED__IN_REG(cpu);
  LSCHED__IN_REG(mem);
  if ((cpu | mem | (int64_t)p->gpu_count) < 0) {
    set_err(c, "%s: negative amount in placement", what);
    return LSCHED_EINVAL;
  }
  if (!mask_bits_are(p->gpu_mask, p->gpu_count)) {
    set_err(c, "%s: gpu_count %d but %d GPUs in mask", what, p->gpu_count,
            popcount64(p->gpu_mask));
    return LSCHED_EINVAL;
  }
  if (p->gpu_count == 0) {
    if (p->gpu_milli != 0) {
      set_err(c, "%s: gpu_milli without GPUs", what);
      return LSCHED_EINVAL;
    }
    return LSCHED_OK;
  }
  if (p->gpu_milli < 1 || p->gpu_milli > LSCHED_GPU_MILLI) {
    set_err(c, "%s: gpu_milli %d outside 1..1000", what, p->gpu_milli);
    return LSCHED_EINVAL;
  }
  if (nd->gpu_count < LSCHED_MAX_GPUS_PER_NODE &&
      (p->gpu_mask >> nd->gpu_count) != 0) {
    set_err(c, "%s: GPU mask names GPUs beyond node %d's %d", what, p->node,
            nd->gpu_count);
    return LSCHED_EINVAL;
  }
  if (nd->mode == LSCHED_GPU_EXCLUSIVE && p->gpu_milli != LSCHED_GPU_MILLI) {
    set_err(c, "%s: node %d is exclusive but placement takes %d milli", what,
            p->node, p->gpu_milli);
    return LSCHED_EINVAL;
  }
  return LSCHED_OK;
}

static int check_after(lsched_cluster *c, int id);

int lsched__observers_index(lsched_cluster *c) {
  if (c->nobservers > c->obs_calls_cap) {
    const size_t cap = (size_t)c->observers_cap; /* >= nobservers */
    struct lsched__obs_call *a =
        lsched__realloc(&c->a, c->obs_alloc, cap * sizeof *a);
    if (!a)
      return LSCHED_ENOMEM;
    c->obs_alloc = a;
    struct lsched__obs_call *r =
        lsched__realloc(&c->a, c->obs_release, cap * sizeof *r);
    if (!r)
      return LSCHED_ENOMEM;
    c->obs_release = r;
    c->obs_calls_cap = c->observers_cap;
  }
  int na = 0, nr = 0;
  for (int i = 0; i < c->nobservers; i++) {
    const struct lsched__observer *o = &c->observers[i];
    if (o->ops.on_alloc)
      c->obs_alloc[na++] = (struct lsched__obs_call){o->ops.on_alloc, o->user};
    if (o->ops.on_release)
      c->obs_release[nr++] =
          (struct lsched__obs_call){o->ops.on_release, o->user};
  }
  c->nobs_alloc = na;
  c->nobs_release = nr;
  return LSCHED_OK;
}

/* Tells the observers about a change (after the policies): their calls for
 * that kind (lsched__observers_index), inlined with alloc a constant (out
 * of line, its call, saved registers and loop cost more than the loop
 * inline). A callback may change neither the cluster nor the observers
 * (lsched_observer), so the list and its end are read once, not again
 * after each call. */
static inline __attribute__((always_inline)) void
observers_told(lsched_cluster *c, const lsched_placement *p, int alloc) {
  const int n = alloc ? c->nobs_alloc : c->nobs_release;
  if (n == 0)
    return;
  const int trial = c->trial_depth > 0;
  const struct lsched__obs_call *o = alloc ? c->obs_alloc : c->obs_release;
  for (const struct lsched__obs_call *end = o + n; o < end; o++)
    o->fn(o->user, c, p, trial);
}

/* Tells the attached policies that have hooks, then the observers, about a
 * change that just happened. (gang.c re-reports kept parts to the
 * observers only by hiding the policies for that while: confirm_parts.)
 * A hook sees the cluster const: the hooked list and its end are read
 * once. */
static inline __attribute__((always_inline)) void
notify(lsched_cluster *c, const lsched_placement *p, int alloc) {
  lsched_policy *const *h = c->hooked;
  for (lsched_policy *const *end = h + c->nhooked; h < end; h++) {
    lsched_policy *pol = *h;
    if (alloc && pol->ops->on_alloc)
      pol->ops->on_alloc(pol->state, c, p);
    else if (!alloc && pol->ops->on_release)
      pol->ops->on_release(pol->state, c, p);
  }
  observers_told(c, p, alloc);
}

int lsched_alloc(lsched_cluster *c, const lsched_placement *p) {
  if (!c)
    return LSCHED_EINVAL;
  int r = check_placement(c, p, "alloc");
  if (r)
    return r;
  struct lsched_node *nd = &c->nodes[p->node];
  if (p->cpu_milli > nd->cpu_free || p->memory_mib > nd->mem_free) {
    set_err(c, "alloc: node %d has %lld CPU milli and %lld MiB free", p->node,
            (long long)nd->cpu_free, (long long)nd->mem_free);
    return LSCHED_ERANGE;
  }
  const int mig = nd->mode == LSCHED_GPU_MIG && p->gpu_count > 0;
  if (mig) {
    char why[160];
    if ((r = lsched__mig_check_alloc(c, p, why, sizeof why))) {
      set_err(c, "alloc: %s", why);
      return r;
    }
  }
  int *g = c->gpu_free + nd->gpu_off;
  for (uint64_t m = p->gpu_mask; m; m &= m - 1) {
    int i = __builtin_ctzll(m);
    if (g[i] < p->gpu_milli) {
      set_err(c, "alloc: GPU %d of node %d has %d milli free, %d asked", i,
              p->node, g[i], p->gpu_milli);
      return LSCHED_ERANGE;
    }
  }
  nd->cpu_free -= p->cpu_milli;
  nd->mem_free -= p->memory_mib;
  if (mig) {
    for (uint64_t m = p->gpu_mask; m; m &= m - 1)
      g[__builtin_ctzll(m)] -= p->gpu_milli;
    lsched__mig_apply(c, p, 1);
    node_refresh(c, nd);
    seg_update(c, p->node);
  } else {
    node_apply(c, nd, p, -1);
    seg_update_alloc(c, p->node, 0);
  }
  c->live_allocs++;
  notify(c, p, 1);
  if (__builtin_expect(c->npools > 0, 0) &&
      lsched__pool_host_of(c, p->node) >= 0)
    lsched__pool_after_alloc(c, p);
  if (c->check_invariants)
    return check_after(c, p->node);
  return LSCHED_OK;
}

void lsched_prefetch_node(const lsched_cluster *c, int node) {
  if (!c || node < 0 || node >= c->n)
    return;
  const struct lsched_node *nd = &c->nodes[node];
  __builtin_prefetch(nd, 1, 3);
  __builtin_prefetch((const char *)(nd + 1) - 1, 1, 3);
  /* (reads the record's GPU offset: the only load, its miss overlapped
   * with the caller's work) */
  __builtin_prefetch(c->gpu_free + nd->gpu_off, 1, 3);
  if (c->seg_size) /* its leaf of the fit index */
    __builtin_prefetch(
        &c->seg[(size_t)c->seg_size + (size_t)lsched__node_pos(c, node)], 1,
        3);
}

int lsched_release(lsched_cluster *c, const lsched_placement *p) {
  if (!c)
    return LSCHED_EINVAL;
  int r = check_placement(c, p, "release");
  if (r)
    return r;
  /* Fix: with no live allocation every release is one without its alloc.
   * An empty placement passed the capacity checks below and drove
   * live_allocs negative, which let lsched_cluster_add_node() accept nodes
   * while an allocation was live. */
  if (c->live_allocs <= 0) {
    set_err(c, "release: nothing is allocated");
    return LSCHED_ERANGE;
  }
  struct lsched_node *nd = &c->nodes[p->node];
  if (p->cpu_milli > nd->cpu_cap - nd->cpu_free ||
      p->memory_mib > nd->mem_cap - nd->mem_free) {
    set_err(c, "release: node %d would have more CPU or memory than it holds",
            p->node);
    return LSCHED_ERANGE;
  }
  const int mig = nd->mode == LSCHED_GPU_MIG && p->gpu_count > 0;
  if (mig) {
    char why[160];
    if ((r = lsched__mig_check_release(c, p, why, sizeof why))) {
      set_err(c, "release: %s", why);
      return r;
    }
  }
  int *g = c->gpu_free + nd->gpu_off;
  for (uint64_t m = p->gpu_mask; m; m &= m - 1) {
    int i = __builtin_ctzll(m);
    if (g[i] + p->gpu_milli > LSCHED_GPU_MILLI) {
      set_err(c, "release: GPU %d of node %d would exceed 1000 milli", i,
              p->node);
      return LSCHED_ERANGE;
    }
  }
  nd->cpu_free += p->cpu_milli;
  nd->mem_free += p->memory_mib;
  if (mig) {
    for (uint64_t m = p->gpu_mask; m; m &= m - 1)
      g[__builtin_ctzll(m)] += p->gpu_milli;
    lsched__mig_apply(c, p, 0);
    node_refresh(c, nd);
    seg_update(c, p->node);
  } else {
    node_apply(c, nd, p, 1);
    seg_update_alloc(c, p->node, 1);
  }
  c->live_allocs--;
  notify(c, p, 0);
  if (__builtin_expect(c->npools > 0, 0) &&
      lsched__pool_host_of(c, p->node) >= 0)
    lsched__pool_after_release(c, p);
  if (c->check_invariants)
    return check_after(c, p->node);
  return LSCHED_OK;
}

/* ---------------------------------------------------------------------- */
/* Invariants                                                              */

/* Every invariant of node id alone: ranges, exclusive shares, cached
 * aggregates, order and its index leaf. O(GPUs of the node). */
static int check_node(lsched_cluster *c, int id) {
  const struct lsched_node *nd = &c->nodes[id];
  if (nd->cpu_free < 0 || nd->cpu_free > nd->cpu_cap || nd->mem_free < 0 ||
      nd->mem_free > nd->mem_cap) {
    set_err(c, "node %d: CPU %lld/%lld or memory %lld/%lld out of range", id,
            (long long)nd->cpu_free, (long long)nd->cpu_cap,
            (long long)nd->mem_free, (long long)nd->mem_cap);
    return LSCHED_ESTATE;
  }
  const int *g = c->gpu_free + nd->gpu_off;
  for (int i = 0; i < nd->gpu_count; i++) {
    if (g[i] < 0 || g[i] > LSCHED_GPU_MILLI ||
        (nd->mode == LSCHED_GPU_EXCLUSIVE && g[i] != 0 &&
         g[i] != LSCHED_GPU_MILLI)) {
      set_err(c, "node %d GPU %d: free share %d invalid", id, i, g[i]);
      return LSCHED_ESTATE;
    }
  }
  struct lsched_node copy = *nd;
  node_refresh(c, &copy);
  if (copy.gpus_full_free != nd->gpus_full_free ||
      copy.gpus_nonzero_free != nd->gpus_nonzero_free ||
      copy.max_gpu_free != nd->max_gpu_free ||
      copy.gpu_free_sum != nd->gpu_free_sum || copy.mig_fit != nd->mig_fit) {
    set_err(c, "node %d: cached GPU aggregates differ from the pool", id);
    return LSCHED_ESTATE;
  }
  if (c->order[c->pos_of[id]] != id ||
      (c->order_id && c->pos_of[id] != id)) {
    set_err(c, "node %d: order and position disagree", id);
    return LSCHED_ESTATE;
  }
  struct seg_pair leaf;
  seg_leaf(&leaf, nd);
  if (!seg_equal(&leaf, c, c->seg_size + c->pos_of[id])) {
    set_err(c, "node %d: index leaf is stale", id);
    return LSCHED_ESTATE;
  }
  return LSCHED_OK;
}

/* The index entries above node id's leaf equal their children's
 * combination. O(log n). */
static int check_path(lsched_cluster *c, int id) {
  for (int i = (c->seg_size + c->pos_of[id]) / 2; i >= 1; i /= 2) {
    struct seg_pair want;
    seg_combine(&want, c, i);
    if (!seg_equal(&want, c, i)) {
      set_err(c, "index entry %d is stale", i);
      return LSCHED_ESTATE;
    }
  }
  return LSCHED_OK;
}

/* The first-fit memo: every shape's tag and need are its key's, and no
 * node before its bound fits it. O(ways x n). */
static int check_memo(lsched_cluster *c) {
  const struct lsched__memo *m = &c->memo;
  for (int w = 0; w < LSCHED__MEMO_WAYS; w++) {
    if (!((m->filled >> w) & 1))
      continue;
    const struct lsched__memo_key *k = &m->key[w];
    lsched_request q = LSCHED_REQUEST_INIT;
    q.cpu_milli = k->cpu;
    q.memory_mib = k->mem;
    q.gpu_count = k->gpus;
    q.gpu_milli = k->milli;
    q.model_mask = k->models;
    q.features = k->features;
    struct lsched__seg_need need;
    seg_need_of(&need, &q);
    struct lsched__memo_key qk;
    memo_key_of(&qk, &q);
    if (m->tag[w] != memo_tag(&qk) || memcmp(&qk, k, sizeof qk) != 0 ||
        m->lb[w] < 0 || m->lb[w] > c->n ||
        memcmp(&need, &m->need[w], sizeof need) != 0) {
      set_err(c, "first-fit memo way %d is not its shape's", w);
      return LSCHED_ESTATE;
    }
    for (int p = 0; p < m->lb[w]; p++)
      if (node_fits(c, &c->nodes[c->order[p]], &q)) {
        set_err(c, "first-fit memo way %d: position %d fits, bound %d", w, p,
                m->lb[w]);
        return LSCHED_ESTATE;
      }
  }
  return LSCHED_OK;
}

/* The check_invariants option, after an alloc or release on node id: only
 * that node and its index path can have changed, so they are checked every
 * time (O(GPUs + log n)); the whole cluster every 1024th operation. */
static int check_after(lsched_cluster *c, int id) {
  if (++c->check_ops % 1024 == 0 || c->npools > 0)
    return lsched_cluster_check(c);
  int rc = check_node(c, id);
  return rc ? rc : check_path(c, id);
}

int lsched_cluster_check(const lsched_cluster *cc) {
  if (!cc)
    return LSCHED_EINVAL;
  lsched_cluster *c = (lsched_cluster *)cc; /* errmsg is a cache, not state */
  int gpus = 0;
  for (int id = 0; id < c->n; id++) {
    const struct lsched_node *nd = &c->nodes[id];
    if (nd->gpu_off != gpus) {
      set_err(c, "node %d: GPU pool offset %d, expected %d", id, nd->gpu_off,
              gpus);
      return LSCHED_ESTATE;
    }
    int rc = check_node(c, id);
    if (rc)
      return rc;
    gpus += nd->gpu_count;
  }
  if (gpus != c->ngpus) {
    set_err(c, "GPU pool holds %d GPUs, nodes %d", c->ngpus, gpus);
    return LSCHED_ESTATE;
  }
  {
    char why[200];
    if (lsched__mig_check(c, why, sizeof why) != LSCHED_OK ||
        lsched__pool_check(c, why, sizeof why) != LSCHED_OK) {
      set_err(c, "%s", why);
      return LSCHED_ESTATE;
    }
  }
  for (int i = c->seg_size - 1; i >= 1; i--) {
    struct seg_pair want;
    seg_combine(&want, c, i);
    if (!seg_equal(&want, c, i)) {
      set_err(c, "index entry %d is stale", i);
      return LSCHED_ESTATE;
    }
  }
  return check_memo(c);
}
