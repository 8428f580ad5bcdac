/*
 * mig-aware: places a MIG request where the capacity left stays most
 * usable for the workload's mix of instance kinds (an FGD-style measure,
 * Weng et al., USENIX ATC'23, moved from milli-GPU shares to MIG slots).
 *
 * The measure. For a dynamic GPU whose busy instances hold the memory-slot
 * bitmap b and leave f compute slices free, the slices that a request of
 * kind k cannot use are f - slices(k) x n(b, k), n(b, k) being how many
 * kind-k instances still fit (all f when none fits; this is FGD's f(n, m)
 * with a MIG GPU as the "node"). Weighting kinds by the mix w_k gives the
 * GPU's expected unusable slices F = f x W - G[b], with
 *
 *   G[b] = sum over k of w_k x slices(k) x n(b, k)
 *
 * the expected usable slices of its free slots. Placing an instance of kind
 * K at start s lowers f by slices(K) wherever it goes, so the increase of F
 * differs between candidates only by the loss G[b] - G[b | slots(K, s)].
 * The policy takes the candidate with the smallest loss. G, and for every
 * bitmap b and kind K the smallest loss over the valid free starts (with
 * the set of starts reaching it), are tables over the 256 bitmaps, rebuilt
 * when the mix changes (256 x 6 x 7 steps); a decision is then one table
 * lookup per GPU, O(GPUs of the fitting nodes).
 *
 * Why this measure: it is exact for NVIDIA's placement rules (it sees that
 * 1g@3 keeps 3g@4 possible while 1g@4 does not, and that 3g@0 strands
 * slice 3 for 1g but not for 2g), it weighs each kind by how often the
 * workload asks for it, it reduces to FGD's definition when a kind cannot
 * run at all, and the table makes it as cheap as best-fit. An alternative
 * was tried and dropped: the expected slices a GPU would still receive if
 * mix requests kept arriving until it is full (a value iteration over the
 * 256 states). It counts overlapping options only once, but it almost
 * never ties, so it lost the packing tie-break and spread small instances
 * over empty GPUs: on a 64-GPU dynamic cluster with a mixed 1g..7g load
 * its mean queue time was 3-15x that of this measure.
 *
 * Ties (equal loss) go, in order, to a start where an idle instance of the
 * kind already exists (no reconfiguration), to fewer idle instances
 * destroyed, to the node with the least CPU and GPU left after placing
 * (best-fit's node score; it keeps whole nodes free and matters where CPU
 * binds, as in the Alibaba trace: 95.0% of the GPUs allocated at
 * saturation against 92.4% when the GPU's free slices came first), to the
 * GPU with the fewest free slices, to the earliest node in the visit
 * order, the lowest GPU, the lowest start.
 * Static nodes offer only their idle instances: all candidates of one kind
 * there lose the same (the instance's slices), so they are ranked by the
 * tie rules; as in the other MIG policies, candidates of the exact kind come
 * before larger static instances.
 *
 * The mix: set_param("mix", "1g:70,3g:30") fixes it (kind names of
 * <libsched/mig.h>, non-negative integer weights); "mix" = "online" (the
 * default) learns it from the kinds of the MIG allocations on the cluster,
 * starting from weight 1 for every kind, and rebuilds the tables after 1,
 * 2, 4, ... 1024 allocations and then every 1024.
 *
 * Multi-GPU MIG requests and non-MIG requests are placed as mig-best-fit
 * and best-fit do.
 *
 * Speed: the key above, minimised over one node's GPUs, depends on that
 * node's state alone (kind excess and leftover are per node), so the node
 * comes from a score index (lsched_score_index, one tree per request
 * shape, updated for the nodes an alloc, release or layout change
 * touched): the key is packed into one int64 (maw_score), the loss as its
 * rank among the distinct losses of the tables, and the index starts
 * afresh whenever a rebuild changes the tables. When the packed fields
 * would pass 62 bits (largest node CPU milli x 1000 x largest GPU count
 * past 10^10 to 10^12, by the number of distinct losses) the scan
 * places. index=off: the scan (maw_scan), the reference the tests
 * replay against.
 */
#include "builtin.h"

#include <stdlib.h>
#include <string.h>

#define NK LSCHED_MIG_KINDS

struct maw_state {
  struct lsched_builtin_mig_fb fb; /* scratch, index, best-fit for others */
  int64_t w[NK];
  int fixed;
  int dirty;
  uint64_t allocs, next_rebuild;
  int64_t G[256];
  int64_t loss[256][NK];   /* INT64_MAX: kind cannot be created on b */
  uint8_t starts[256][NK]; /* starts reaching that loss */
  /* The index's score packs the scan's order into one int64: the rank of
   * a loss among the distinct losses of the tables (0 included: static
   * GPUs lose 0) takes lbits bits, the node's leftover wbits. */
  uint16_t rank[256][NK];
  uint16_t rank0;
  int lbits, wbits;
};

static void reset_online(struct maw_state *s) {
  for (int k = 0; k < NK; k++)
    s->w[k] = 1;
  s->fixed = 0;
  s->allocs = 0;
  s->next_rebuild = 1;
  s->dirty = 1;
}

static int bits_for(uint64_t x) { /* bits to hold 0..x */
  int b = 0;
  while (x) {
    b++;
    x >>= 1;
  }
  return b;
}

static int64_t maw_score(const lsched_view *v, int node,
                         const lsched_request *req, void *ctx);

static int maw_init(void *state, const lsched_cluster *c) {
  struct maw_state *s = state;
  reset_online(s);
  int rc = lsched_builtin_mig_fb_init(&s->fb, c, maw_score, s);
  if (rc == LSCHED_OK) {
    /* The leftover is at most 100 A B (A, B as in maw_place). */
    const lsched_view *v = &s->fb.v;
    uint64_t A = v->max_cpu_cap > 0 ? (uint64_t)v->max_cpu_cap : 1;
    uint64_t B = (uint64_t)(v->max_gpu_count > 0 ? v->max_gpu_count : 1) *
                 LSCHED_GPU_MILLI;
    s->wbits = bits_for(100 * A * B);
  }
  return rc;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Ranks of the losses (ascending, equal losses one rank) and their bits. */
static void rank_losses(struct maw_state *s) {
  int64_t vals[256 * NK + 1];
  int n = 0;
  vals[n++] = 0;
  for (unsigned b = 0; b < 256; b++)
    for (int k = 0; k < NK; k++)
      if (s->loss[b][k] != INT64_MAX)
        vals[n++] = s->loss[b][k];
  qsort(vals, (size_t)n, sizeof vals[0], cmp_i64);
  int u = 1;
  for (int i = 1; i < n; i++)
    if (vals[i] != vals[u - 1])
      vals[u++] = vals[i];
  for (unsigned b = 0; b < 256; b++)
    for (int k = 0; k < NK; k++) {
      int64_t l = s->loss[b][k];
      int lo = 0, hi = u - 1;
      if (l == INT64_MAX) {
        s->rank[b][k] = (uint16_t)(u - 1); /* never read */
        continue;
      }
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (vals[mid] < l)
          lo = mid + 1;
        else
          hi = mid;
      }
      s->rank[b][k] = (uint16_t)lo;
    }
  s->rank0 = 0; /* 0 is the smallest loss: losses are never negative */
  s->lbits = bits_for((uint64_t)(u - 1));
}

static void maw_fini(void *state) {
  lsched_builtin_mig_fb_fini(&((struct maw_state *)state)->fb);
}

/* Rebuilds G and the loss tables for the current mix; when the tables
 * moved, every indexed score may have: the index starts afresh. */
static void rebuild(struct maw_state *s) {
  int64_t old_loss[256][NK];
  uint8_t old_starts[256][NK];
  memcpy(old_loss, s->loss, sizeof old_loss);
  memcpy(old_starts, s->starts, sizeof old_starts);
  for (unsigned b = 0; b < 256; b++) {
    int64_t g = 0;
    for (int k = 1; k <= NK; k++)
      g += s->w[k - 1] * lsched_mig_slices_of(k) * lsched_mig_pack_count(b, k);
    s->G[b] = g;
  }
  for (unsigned b = 0; b < 256; b++)
    for (int k = 1; k <= NK; k++) {
      int64_t best = INT64_MAX;
      unsigned set = 0;
      for (int st = 0; st < LSCHED_MIG_SLOTS; st++) {
        if (!((lsched_mig_starts_of(k) >> st) & 1))
          continue;
        unsigned mk = lsched_mig_mask_at(k, st);
        if (mk & b)
          continue;
        int64_t l = s->G[b] - s->G[b | mk];
        if (l < best) {
          best = l;
          set = 1u << st;
        } else if (l == best) {
          set |= 1u << st;
        }
      }
      s->loss[b][k - 1] = best;
      s->starts[b][k - 1] = (uint8_t)set;
    }
  s->dirty = 0;
  if (memcmp(old_loss, s->loss, sizeof old_loss) ||
      memcmp(old_starts, s->starts, sizeof old_starts)) {
    rank_losses(s);
    lsched_score_index_reset(s->fb.ix);
  }
}

static int maw_set_param(void *state, const char *key, const char *value) {
  struct maw_state *s = state;
  if (strcmp(key, "index") == 0) /* the MIG index and best-fit's */
    return lsched_builtin_mig_fb_param(&s->fb, key, value);
  if (strcmp(key, "mix") != 0)
    return LSCHED_ENOENT;
  if (strcmp(value, "online") == 0) {
    reset_online(s);
    return LSCHED_OK;
  }
  int64_t w[NK] = {0}, sum = 0;
  const char *p = value;
  while (*p) {
    char name[16];
    size_t n = strcspn(p, ":=");
    if (n == 0 || n >= sizeof name || !p[n])
      return LSCHED_EINVAL;
    memcpy(name, p, n);
    name[n] = 0;
    int k = lsched_mig_kind_from_name(name);
    if (k < 1)
      return LSCHED_EINVAL;
    p += n + 1;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || v > (INT64_C(1) << 40) ||
        (*end && *end != ','))
      return LSCHED_EINVAL;
    w[k - 1] += v;
    sum += v;
    p = *end ? end + 1 : end;
  }
  if (sum <= 0 || sum > (INT64_C(1) << 40))
    return LSCHED_EINVAL;
  memcpy(s->w, w, sizeof w);
  s->fixed = 1;
  s->dirty = 1;
  return LSCHED_OK;
}

static void maw_on_alloc(void *state, const lsched_cluster *c,
                         const lsched_placement *p) {
  (void)c;
  struct maw_state *s = state;
  if (s->fixed || p->gpu_count == 0 || p->mig_kind < 1 || p->mig_kind > NK ||
      lsched_view_node(&s->fb.v, p->node)->mode != LSCHED_GPU_MIG)
    return;
  if (s->w[p->mig_kind - 1] < (INT64_C(1) << 40))
    s->w[p->mig_kind - 1]++;
  if (++s->allocs >= s->next_rebuild) {
    s->dirty = 1;
    s->next_rebuild =
        s->allocs < 1024 ? 2 * s->allocs : s->allocs + 1024;
  }
}

/* The best start for kind K on dynamic GPU g among `set`: an idle instance
 * of K first, then fewest idle instances destroyed, then lowest start.
 * *create = 0 when reused; *destroyed = idle instances in the way. */
static int best_start(const lsched_mig_gpu_view *g, int K, unsigned set,
                      int *create, int *destroyed) {
  /* Fast paths: an idle instance of K in the set (reuse), or no idle
   * instance on the GPU at all (nothing destroyed anywhere). */
  unsigned idle = (unsigned)g->occ & ~(unsigned)g->occ_busy;
  for (unsigned m = set; m; m &= m - 1) {
    int st = __builtin_ctz(m);
    if (g->kind_at[st] == K && !((g->busy >> st) & 1)) {
      *create = 0;
      *destroyed = 0;
      return st;
    }
  }
  if (!idle) {
    *create = 1;
    *destroyed = 0;
    return set ? __builtin_ctz(set) : -1;
  }
  int bs = -1, bc = 2, bd = 9;
  for (int st = 0; st < LSCHED_MIG_SLOTS; st++) {
    if (!((set >> st) & 1))
      continue;
    int cr = 1, de = 0;
    if (g->kind_at[st] == K && !((g->busy >> st) & 1)) {
      cr = 0;
    } else {
      unsigned mk = lsched_mig_mask_at(K, st);
      for (int t = 0; t < LSCHED_MIG_SLOTS; t++)
        de += g->kind_at[t] && (lsched_mig_mask_at(g->kind_at[t], t) & mk);
    }
    if (cr < bc || (cr == bc && de < bd)) {
      bs = st;
      bc = cr;
      bd = de;
    }
  }
  *create = bc;
  *destroyed = bd;
  return bs;
}

/* The best (GPU, start) of fitting node `node` for one-GPU MIG request
 * req, compared as in maw_scan; its key in key[6]; *gpu -1 when none
 * (not reached for a fitting node). */
static void maw_node_best(const struct maw_state *st, const lsched_cluster *c,
                          const lsched_view *v, int node,
                          const lsched_request *req, int64_t key[6],
                          int *gpu, int *start, int *kind) {
  const lsched_node *nd = lsched_view_node(v, node);
  int kmin = lsched_mig_model_kind(c, nd->model, req);
  int K = lsched_node_mig_kind(nd, kmin);
  const int64_t A = v->max_cpu_cap > 0 ? v->max_cpu_cap : 1;
  const int64_t B =
      (int64_t)(v->max_gpu_count > 0 ? v->max_gpu_count : 1) * LSCHED_GPU_MILLI;
  const lsched_mig_gpu_view *gs = lsched_view_mig_gpus(v, nd);
  const unsigned bit = 1u << (K - 1);
  int64_t left = 50 * (nd->cpu_free - req->cpu_milli) * B +
                 50 * (nd->gpu_free_sum - lsched_mig_milli_of(K)) * A;
  key[0] = K - kmin;
  key[1] = INT64_MAX;
  key[4] = left;
  *gpu = -1;
  *kind = K;
  for (int g = 0; g < nd->gpu_count; g++) {
    const lsched_mig_gpu_view *gp = &gs[g];
    if (!(gp->fit & bit))
      continue;
    int64_t loss = gp->dynamic ? st->loss[gp->occ_busy][K - 1] : 0;
    if (loss > key[1])
      continue;
    int create = 0, destroyed = 0, at;
    if (gp->dynamic)
      at = best_start(gp, K, st->starts[gp->occ_busy][K - 1], &create,
                      &destroyed);
    else
      at = lsched_mig_gpu_start(gp, K);
    const int64_t k4[4] = {loss, create, destroyed, gp->free_cs};
    const int64_t b4[4] = {key[1], key[2], key[3], key[5]};
    int i = 0;
    if (*gpu >= 0) {
      while (i < 4 && k4[i] == b4[i])
        i++;
      if (i == 4 || k4[i] > b4[i])
        continue;
    }
    key[1] = loss;
    key[2] = create;
    key[3] = destroyed;
    key[5] = gp->free_cs;
    *gpu = g;
    *start = at;
  }
}

/* The index's score: the key of the node's best GPU packed into one
 * number (kind excess 3 bits, loss rank lbits, creation 1, destroyed 4,
 * leftover wbits, free slices 3), negated: higher is better. maw_place
 * uses the index only when the fields fit 62 bits. */
static int64_t maw_score(const lsched_view *v, int node,
                         const lsched_request *req, void *ctx) {
  const struct maw_state *st = ctx;
  if (req->gpu_count > 1)
    return lsched_builtin_mig_multi_score(st->fb.c, v, node, req);
  int64_t key[6];
  int g, at, K;
  maw_node_best(st, st->fb.c, v, node, req, key, &g, &at, &K);
  if (g < 0)
    return INT64_MIN + 1; /* not reached: the node fits req */
  const lsched_node *nd = lsched_view_node(v, node);
  const lsched_mig_gpu_view *gp = lsched_view_mig_gpus(v, nd) + g;
  uint64_t r = gp->dynamic ? st->rank[gp->occ_busy][K - 1] : st->rank0;
  uint64_t x = (uint64_t)key[0];
  x = x << st->lbits | r;
  x = x << 1 | (uint64_t)key[2];
  x = x << 4 | (uint64_t)key[3];
  x = x << st->wbits | (uint64_t)key[4];
  x = x << 3 | (uint64_t)key[5];
  return -(int64_t)x;
}

/* The reference (index=off): one pass over the fitting nodes and their
 * GPUs. */
static int maw_scan(struct maw_state *st, const lsched_cluster *c,
                    const lsched_request *req, int *b_node, int *b_gpu,
                    int *b_start, int *b_k) {
  const lsched_view *v = &st->fb.v;
  int m = lsched_collect_fits(c, req, st->fb.scratch);
  /* Best so far, compared in this order: kind excess d, loss, creation
   * (0 = reuse), idle instances destroyed, the node's leftover (as in
   * best-fit: CPU and GPU left after placing, half each), the GPU's free
   * slices; then the earlier node and GPU. */
  *b_node = -1;
  int64_t best[6] = {INT64_MAX, 0, 0, 0, 0, 0};
  const int64_t A = v->max_cpu_cap > 0 ? v->max_cpu_cap : 1;
  const int64_t B =
      (int64_t)(v->max_gpu_count > 0 ? v->max_gpu_count : 1) * LSCHED_GPU_MILLI;
  for (int i = 0; i < m; i++) {
    const lsched_node *nd = lsched_view_node(v, st->fb.scratch[i]);
    int kmin = lsched_mig_model_kind(c, nd->model, req);
    int K = lsched_node_mig_kind(nd, kmin);
    int64_t d = K - kmin;
    if (d > best[0])
      continue;
    const lsched_mig_gpu_view *gs = lsched_view_mig_gpus(v, nd);
    const unsigned bit = 1u << (K - 1);
    int64_t left = 50 * (nd->cpu_free - req->cpu_milli) * B +
                   50 * (nd->gpu_free_sum - lsched_mig_milli_of(K)) * A;
    for (int g = 0; g < nd->gpu_count; g++) {
      const lsched_mig_gpu_view *gp = &gs[g];
      if (!(gp->fit & bit))
        continue;
      int64_t loss = gp->dynamic ? st->loss[gp->occ_busy][K - 1] : 0;
      if (d == best[0] && loss > best[1])
        continue;
      /* Cannot beat the best even with a reuse: skip the start search. */
      if (d == best[0] && loss == best[1] && best[2] == 0 && best[3] == 0 &&
          (left > best[4] || (left == best[4] && gp->free_cs >= best[5])))
        continue;
      int create = 0, destroyed = 0, start;
      if (gp->dynamic)
        start = best_start(gp, K, st->starts[gp->occ_busy][K - 1], &create,
                           &destroyed);
      else
        start = lsched_mig_gpu_start(gp, K);
      const int64_t key[6] = {d, loss, create, destroyed, left, gp->free_cs};
      int k = 0;
      while (k < 6 && key[k] == best[k])
        k++;
      if (k == 6 || key[k] > best[k])
        continue;
      memcpy(best, key, sizeof best);
      *b_node = st->fb.scratch[i];
      *b_gpu = g;
      *b_start = start;
      *b_k = K;
    }
  }
  return *b_node < 0 ? LSCHED_ENOFIT : LSCHED_OK;
}

static int maw_place(void *state, const lsched_cluster *c,
                     const lsched_request *req, lsched_placement *out) {
  struct maw_state *st = state;
  if (!lsched_request_mig_kind(req) || req->gpu_count == 0)
    return lsched_builtin_best_fit.place(st->fb.fallback, c, req, out);
  if (req->gpu_count > 1)
    return lsched_builtin_mig_multi(&st->fb, req, out);
  const lsched_view *v = &st->fb.v;
  if (v->mig_ngpus == 0) /* no MIG GPU: nothing can fit */
    return LSCHED_ENOFIT;
  if (st->dirty)
    rebuild(st);
  int b_node = -1, b_gpu = -1, b_start = -1, b_k = 0;
  int rc = LSCHED_ENOENT;
  if (3 + st->lbits + 1 + 4 + st->wbits + 3 <= 62)
    rc = lsched_builtin_mig_fb_best(&st->fb, req, &b_node);
  if (rc == LSCHED_ENOENT) {
    rc = maw_scan(st, c, req, &b_node, &b_gpu, &b_start, &b_k);
  } else if (rc == LSCHED_OK) {
    int64_t key[6];
    maw_node_best(st, c, v, b_node, req, key, &b_gpu, &b_start, &b_k);
    if (b_gpu < 0)
      return LSCHED_ENOFIT; /* not reached: the node fits req */
  }
  if (rc)
    return rc;
  out->node = b_node;
  out->cpu_milli = req->cpu_milli;
  out->memory_mib = req->memory_mib;
  out->gpu_count = 1;
  out->gpu_mask = UINT64_C(1) << b_gpu;
  out->gpu_milli = lsched_mig_milli_of(b_k);
  out->mig_kind = b_k;
  out->mig_start = b_start;
  return LSCHED_OK;
}

const lsched_policy_ops lsched_builtin_mig_aware = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "mig-aware",
    .description = "MIG: the GPU and start that keep the most capacity "
                   "usable for the workload's kind mix (expected unusable "
                   "slices, FGD-style); other requests as best-fit",
    .state_size = sizeof(struct maw_state),
    .init = maw_init,
    .fini = maw_fini,
    .set_param = maw_set_param,
    .place = maw_place,
    .flags = LSCHED_POLICY_ANY_FIT, /* tests/lib/test_score_index.c */
    .on_alloc = maw_on_alloc,
};
