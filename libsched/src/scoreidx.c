/*
 * Score index (lsched_score_index, <libsched/policy_sdk.h>): the best node
 * of a scoring policy without scanning every node.
 *
 * For every request shape it tracks (everything of a request that decides
 * where it fits: CPU, memory, GPU count and share, model mask, MIG fields,
 * features), the index keeps a tree over the visit positions: leaf p
 * holds the policy's score of node order[p] for that shape (SIX_NONE when
 * the node does not fit it), and every inner entry the highest score
 * below it. The scan's answer (the highest score, ties to the earliest
 * node in the visit order) is found by a descent that goes left whenever
 * the left child holds the maximum, O(log n), kept until a leaf changes.
 *
 * The index follows the cluster as an observer (lsched_cluster_add_observer):
 * an allocation or release on node x (trial ones included) or a change of
 * x's state appends x's visit position to a log, O(1). A tree is brought
 * up to date when its shape is asked for: the log entries since it was
 * last synchronised are replayed (each position once, at its latest
 * entry: the leaf recomputed and its path climbed until an entry's
 * maximum does not change; a node whose leaf is empty and that has only
 * been allocated on since, grow[], still does not fit and is skipped; one
 * whose leaf holds a score and that has only been released on since,
 * shrink[], still fits and is scored without a fit test, and on a
 * counting index not yet asked for a best node is not replayed at all:
 * its count cannot move), or the tree is
 * rebuilt when more than n/2 distinct positions wait (read from the log,
 * or from last[] when more than n entries wait). So a
 * shape asked at every decision costs O(changes since the last decision x
 * (score + log n)), and a rare shape costs nothing until it is asked.
 * Observers are told after the policies, and trees are read only in
 * place(), so a score that reads state the policy keeps in its own
 * on_alloc/on_release hooks (gpu-clustering's tags, fgd's fragmentation
 * cache) is read up to date. A node added, updated or removed (but an
 * update that moved only the node's free shares, a pool's compose:
 * lsched_node_watch, logged as an alloc is), or a new visit order
 * (order_gen), makes every tree stale; stale trees are rebuilt, O(n)
 * scores each, when next asked. The log holds at most max(4096, 4n)
 * entries: when it is full, entries every tree has replayed are dropped,
 * and trees still further behind (rarely asked shapes) are marked for a
 * rebuild.
 *
 * Shapes: at most max_shapes trees (256, fewer when 32 MiB of trees would
 * not hold them), found through a small hash table. A shape seen for the
 * first time while the table is full is answered by a scan
 * (lsched_best_raw_score) and remembered in a table of hashes; seen again,
 * it replaces the least recently used tracked shape. So a trace of many
 * distinct shapes costs at most one scan per decision, as before.
 *
 * Idle classes (lsched_score_index_idle, the policy's promise that an
 * idle node's score depends on its class alone): nodes are grouped at a
 * refresh by (CPU and memory capacity, GPU count, model, mode, features),
 * MIG nodes excluded; idle_at[p] holds the class of the node at position
 * p while it is idle (kept at every log entry). A leaf of an idle node
 * takes its class's answer for the shape (cst/cval), computed by the
 * first idle node of the class met and forgotten at the next refresh. So
 * a tree built on a mostly idle cluster (fill mode's first tree of each
 * shape in each seed, whose visit order is new) costs a table read per
 * idle node instead of a fit test and a score.
 *
 * State scores (lsched_score_index_state, the stronger promise that a
 * node's score depends on its class, free CPU and per-GPU free shares
 * alone): every node's state is taken at its log entries (nst[x], with a
 * hash), and a leaf whose node passed the CPU/memory pre-test reads the
 * answer of (state, shape tag) from a direct-mapped memo before fitting
 * and scoring (memory, no part of the state, is in the pre-test). A tag
 * is unique per key a shape slot ever held, so an evicted shape's answers
 * never match; the memo is forgotten (a generation) at every refresh and
 * at lsched_score_index_touch.
 *
 * Requests restricted by node_allowed or node_filter (per call, not a
 * shape) and requests of a version this file does not know are answered by
 * the scan. The answer is always the scan's: the tests
 * (tests/lib/test_score_index.c) replay random workloads through both.
 */
#include "internal.h"

#include <string.h>

/* A new request version may add fields that decide where a request fits:
 * they must go into the shape key (shape_of) before the index takes such
 * requests; until then they are answered by the scan (test_score_index's
 * hand case then fails: it requires no scan). Version 4 (on main beside
 * this branch) adds only `speed`, which decides no fit and which no indexed
 * score reads (the representative request of a shape has none): taken.
 * Version 5 adds only `speed_scope` (about the callback): taken too. */
#define SIX_REQ_VERSION 5

#define SIX_GHOSTS 1024u
#define SIX_MAX_SHAPES 256
#define SIX_MAP 1024u /* hash slots for the shapes: 4 x SIX_MAX_SHAPES */
#define SIX_BUDGET ((size_t)32 << 20) /* bytes of trees per index */
#define SIX_CLASSES 256 /* node classes memoised (lsched_score_index_idle) */
#define SIX_CMAP 1024u  /* hash slots for the classes */
#define SIX_SGPUS 8     /* GPUs of a node with a state (lsched_score_index_state) */
#define SIX_SMEMO 65536u /* most (state, shape) memo entries (direct-mapped) */
#define SIX_NONE INT64_MIN /* no fitting node (scores are never INT64_MIN) */

/* A node class: what decides an idle node's fit and (by the contract of
 * lsched_score_index_idle) its score. */
struct six_cls {
  int64_t cpu_cap, mem_cap;
  uint64_t features;
  int32_t gpu_count, model, mode;
};

/* A node state (lsched_score_index_state): its class and its free CPU,
 * memory and per-GPU shares (in GPU order, unused GPUs 0; packed four
 * 16-bit shares a word), with its hash; cls -1: no state (no class, not
 * up, more than SIX_SGPUS GPUs). */
struct six_state {
  int64_t cpu;
  uint64_t g0, g1;
  uint64_t h;
  int32_t cls;
};

/* The answer of a node state for a shape (tag): fits (and scores val) or
 * not; valid while gen == the index's sgen. */
struct six_smemo {
  int64_t cpu, val;
  uint64_t g0, g1;
  uint32_t gen, tag;
  int32_t cls, fits;
};

struct six_key {
  int64_t cpu, mem, mig_mem;
  uint64_t model_mask, features;
  int32_t k, milli, mig_kind, mig_compute;
};

struct six_shape {
  struct six_key key;
  uint64_t hash;
  uint64_t last_use;
  lsched_request req; /* the shape as a request: no node restriction */
  uint64_t synced; /* log entries before this sequence number replayed */
  int built;
  /* 2 x size: the highest score under entry i (leaf size + p: the score
   * of the node at position p), SIX_NONE when nothing under it fits;
   * val[0] (no entry: the root's parent and sibling) INT64_MAX, which
   * stops a climb at the root without a test of the index. */
  int64_t *val;
  int32_t *cnt;  /* counting index: size, fitting leaves under entry i */
  int32_t ans;   /* the root's position when ans_ok (the last descent) */
  uint32_t tag;  /* this key's id in the state memo (unique per key set) */
  int ans_ok;
  int plain_k;   /* GPU count of a plain (not MIG) request, else 0 */
  int full_k;    /* plain_k of whole GPUs (1000 milli each), else 0 */
  int min_milli; /* a plain request's share when plain_k > 0, else 0 */
  int plain;     /* no MIG kind, no features: leaf_fits tests it itself */
  /* Idle classes (lsched_score_index_idle): per class, 0 = not known yet,
   * 1 = an idle node of it does not fit, 2 = fits and scores cval. */
  uint8_t *cst;
  int64_t *cval;
};

struct lsched_score_index {
  lsched_allocator a;
  lsched_cluster *c;
  lsched_score_fn score;
  void *ctx;
  lsched_view v;
  int n, size;     /* nodes; tree width (power of two >= n) */
  int stale;       /* nodes added/updated/removed: re-view, rebuild all */
  uint64_t order_gen;
  int enabled;
  int max_shapes, nsh;
  int counting; /* lsched_score_index_enable_counts */
  /* A counting index not asked for a best node yet: only whether a leaf
   * fits is read (draws), so a fitting leaf holds 0 (no score call) and
   * one known to still fit is not replayed; the first
   * lsched_score_index_best clears it and rebuilds every tree, the idle
   * classes' answers forgotten (see replay, leaf_value). */
  int counts_only;
  struct six_shape *sh;
  uint64_t tick;
  uint64_t ghost[SIX_GHOSTS];
  uint16_t map[SIX_MAP]; /* shape index + 1 by hash, linear probing */
  /* The log of touched nodes, by visit position (a new order clears
   * it): entry with sequence number q is log[q - log_lo], q < seq;
   * last[p] = 1 + the sequence number of position p's latest entry (0:
   * none since the log was cleared). */
  int32_t *log;
  int log_len, log_cap;
  uint64_t log_lo, seq;
  uint64_t *last;
  /* grow[p] (shrink[p]) = 1 + the sequence number of p's latest entry
   * that may have let it fit more (a release, a pool's compose, a touch)
   * (less: an allocation, a compose, a touch), 0: none since the log was
   * cleared. An allocation only takes resources, a release only gives
   * them back: a node that did not fit a shape and has only been
   * allocated on since that tree's sync still does not fit it (its leaf
   * stays empty, no replay); one that fitted and has only been released
   * on since still fits it (scored without a fit test). */
  uint64_t *grow, *shrink;
  int *scratch; /* n ints for the scan */
  int scratch_n, last_n;
  lsched_score_index_stats st;
  lsched_node_watch *watch; /* a pool's compose: one node, not stale */
  /* Idle classes (lsched_score_index_idle): cls_of[x] = node x's class or
   * -1 (MIG nodes, classes past SIX_CLASSES); idle_at[p] = the class of
   * the node at position p while it is idle (up, everything free), else
   * -1. Kept at every log entry and refresh. */
  int idle_on;
  int ncls;
  struct six_cls *cls;
  int16_t *cls_of, *idle_at;
  int cls_n, idle_n; /* entries held */
  /* Node states (lsched_score_index_state): nst[x] = node x's state
   * (taken at every log entry and refresh); smemo[hash(state, shape tag)]
   * the answer of a state for a shape, direct-mapped. */
  int st_on;
  struct six_state *nst;
  int st_n;
  struct six_smemo *smemo;
  uint32_t sm_mask; /* smemo holds sm_mask + 1 entries */
  uint32_t sgen, tagc;
};

/* ---------------------------------------------------------------------- */
/* Shapes                                                                  */

static int shape_of(const lsched_request *req, struct six_key *k) {
  memset(k, 0, sizeof *k);
  if (req->version > SIX_REQ_VERSION)
    return 0;
  if (req->version >= 3 && (req->node_allowed || req->node_filter))
    return 0;
  k->cpu = req->cpu_milli;
  k->mem = req->memory_mib;
  k->k = req->gpu_count;
  k->milli = req->gpu_milli;
  k->model_mask = req->model_mask;
  if (req->version >= 2) {
    k->mig_kind = req->mig_kind;
    k->mig_compute = req->mig_compute_milli;
    k->mig_mem = req->mig_memory_mib;
  }
  if (req->version >= 3)
    k->features = req->features;
  return 1;
}

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + UINT64_C(0x9E3779B97F4A7C15) + (h << 6) + (h >> 2);
  return h * UINT64_C(0xBF58476D1CE4E5B9);
}

/* Every field times its own odd constant, summed, then one finishing mix:
 * seven independent multiplies instead of a chain (asked at every
 * decision). */
static uint64_t key_hash(const struct six_key *k) {
  uint64_t h =
      (uint64_t)k->cpu * UINT64_C(0x9E3779B97F4A7C15) +
      (uint64_t)k->mem * UINT64_C(0xC2B2AE3D27D4EB4F) +
      (uint64_t)k->mig_mem * UINT64_C(0x165667B19E3779F9) +
      k->model_mask * UINT64_C(0xD6E8FEB86659FD93) +
      k->features * UINT64_C(0xFF51AFD7ED558CCD) +
      ((uint64_t)(uint32_t)k->k << 32 | (uint32_t)k->milli) *
          UINT64_C(0xC4CEB9FE1A85EC53) +
      ((uint64_t)(uint32_t)k->mig_kind << 32 | (uint32_t)k->mig_compute) *
          UINT64_C(0x94D049BB133111EB);
  h ^= h >> 31;
  h *= UINT64_C(0xBF58476D1CE4E5B9);
  h ^= h >> 29;
  return h ? h : 1;
}

static int key_eq(const struct six_key *a, const struct six_key *b) {
  return a->cpu == b->cpu && a->mem == b->mem && a->mig_mem == b->mig_mem &&
         a->model_mask == b->model_mask && a->features == b->features &&
         a->k == b->k && a->milli == b->milli && a->mig_kind == b->mig_kind &&
         a->mig_compute == b->mig_compute;
}

/* ---------------------------------------------------------------------- */
/* Trees                                                                   */

static inline int64_t max64(int64_t a, int64_t b) { return b > a ? b : a; }

/* lsched__node_fits(ix->c, nd, &s->req) once leaf_value's pre-test
 * passed. A plain shape (s->plain) is tested here, without what that
 * pre-test settled (CPU and memory, k GPUs with some share free so at
 * least k GPUs, k whole GPUs free for whole GPUs, one GPU with the
 * request's share free) nor the tests of features, node restrictions
 * and MIG kinds; the GPU rule is the fit test's own (lsched__gpus_fit).
 * Out of line: inlined in the replay loops it cost more than it saved. */
static __attribute__((noinline)) int
leaf_fits(const struct lsched_score_index *ix, const struct lsched_node *nd,
          const struct six_shape *s) {
  if (!s->plain)
    return lsched__node_fits(ix->c, nd, &s->req);
  int k = s->plain_k;
  if (__builtin_expect(nd->state != LSCHED_NODE_UP, 0))
    return 0;
  if (k == 0)
    return 1;
  if (nd->mode == LSCHED_GPU_MIG)
    return 0;
  uint64_t mm = s->req.model_mask;
  if (mm && !(mm & (UINT64_C(1) << nd->model)))
    return 0;
  return lsched__gpus_fit(ix->c, nd, k,
                          nd->mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI
                                                           : s->min_milli);
}

/* The answer for shape s of node (nd) through the state memo
 * (lsched_score_index_state); fits: the node is known to fit s. */
static inline int64_t leaf_memo(struct lsched_score_index *ix,
                                struct six_shape *s, int node,
                                const struct lsched_node *nd, int fits) {
  const struct six_state *ns = &ix->nst[node];
  struct six_smemo *e = NULL;
  if (ns->cls >= 0) {
    uint64_t h = (ns->h ^ s->tag) * UINT64_C(0x9E3779B97F4A7C15);
    e = &ix->smemo[(h >> 32) & ix->sm_mask];
    if (e->gen == ix->sgen && e->tag == s->tag && e->cpu == ns->cpu &&
        e->g0 == ns->g0 && e->g1 == ns->g1 && e->cls == ns->cls)
      return e->fits ? e->val : SIX_NONE;
  }
  int64_t v = fits || leaf_fits(ix, nd, s)
                  ? ix->score(&ix->v, node, &s->req, ix->ctx)
                  : SIX_NONE;
  if (e) {
    e->gen = ix->sgen;
    e->tag = s->tag;
    e->cpu = ns->cpu;
    e->g0 = ns->g0;
    e->g1 = ns->g1;
    e->cls = ns->cls;
    e->fits = v != SIX_NONE;
    e->val = v;
  }
  return v;
}

/* The leaf of position pos for shape s: the node's score, SIX_NONE when it
 * does not fit. fits: the node is known to fit s (it did at the tree's
 * last sync and has only been released on since), no fit test. */
static inline int64_t leaf_value(struct lsched_score_index *ix,
                                 struct six_shape *s, int pos, int fits) {
  int k = ix->idle_on ? ix->idle_at[pos] : -1;
  if (k >= 0 && s->cst[k]) /* an idle node of a class met before */
    return s->cst[k] == 2 ? s->cval[k] : SIX_NONE;
  int node = ix->c->order[pos];
  const struct lsched_node *nd = &ix->c->nodes[node];
  int64_t v;
  /* What every fit needs (lsched__node_fits tests it first), without the
   * call: CPU and memory; a plain GPU request k GPUs with some share
   * free (a MIG node never holds a plain request), k whole GPUs free when
   * it takes whole GPUs, and one GPU with its share free (a node's
   * effective share is the request's or 1000, and 1000 needs whole GPUs
   * free). */
  if (!fits &&
      (nd->cpu_free < s->req.cpu_milli || nd->mem_free < s->req.memory_mib ||
       nd->gpus_nonzero_free < s->plain_k || nd->gpus_full_free < s->full_k ||
       nd->max_gpu_free < s->min_milli))
    v = SIX_NONE;
  else if (ix->st_on)
    v = leaf_memo(ix, s, node, nd, fits);
  else if (fits || leaf_fits(ix, nd, s))
    v = ix->counts_only ? 0 : ix->score(&ix->v, node, &s->req, ix->ctx);
  else
    v = SIX_NONE;
  if (k >= 0) {
    s->cst[k] = v != SIX_NONE ? 2 : 1;
    s->cval[k] = v;
  }
  return v;
}

/* Fitting leaves under entry i (a counting tree). */
static inline int32_t count_at(const struct lsched_score_index *ix,
                               const struct six_shape *s, int i) {
  return i >= ix->size ? s->val[i] != SIX_NONE : s->cnt[i];
}

/* Level by level from the leaves; an entry whose subtree holds only
 * positions >= n (the padding up to the power of two) is SIX_NONE without
 * a compare. */
static void tree_build(struct lsched_score_index *ix, struct six_shape *s) {
  int size = ix->size, n = ix->n;
  int64_t *val = s->val;
  val[0] = INT64_MAX;
  for (int p = 0; p < n; p++)
    val[size + p] = leaf_value(ix, s, p, 0);
  for (int p = n; p < size; p++)
    val[size + p] = SIX_NONE;
  for (int lo = size / 2, m = n; lo >= 1; lo /= 2) {
    m = (m + 1) / 2; /* entries of this level over real positions */
    for (int i = lo; i < lo + m; i++)
      val[i] = max64(val[2 * i], val[2 * i + 1]);
    for (int i = lo + m; i < 2 * lo; i++)
      val[i] = SIX_NONE;
  }
  if (s->cnt) {
    int32_t *cnt = s->cnt;
    for (int lo = size / 2, m = n; lo >= 1; lo /= 2) {
      m = (m + 1) / 2;
      if (2 * lo == size)
        for (int i = lo; i < lo + m; i++)
          cnt[i] = (val[2 * i] != SIX_NONE) + (val[2 * i + 1] != SIX_NONE);
      else
        for (int i = lo; i < lo + m; i++)
          cnt[i] = cnt[2 * i] + cnt[2 * i + 1];
      for (int i = lo + m; i < 2 * lo; i++)
        cnt[i] = 0;
    }
  }
  s->built = 1;
  s->ans_ok = 0;
  s->synced = ix->seq;
}

/* Re-computes leaf pos (holding old; fits: see leaf_value) and replays
 * its path. Every entry holds the maximum of its two children. A leaf
 * that grew to now raises the entries below now on its path and stops at
 * the first that holds at least now (one load a level). A leaf that
 * shrank from old: while the entry on the path held old, its parent held
 * max(old, sibling); so a sibling holding at least old keeps the parent's
 * maximum (stop), else the parent, which held old, drops to the maximum
 * of the new child and the sibling and the climb goes on (one sibling
 * load a level, the parent not read). Both stop at the root on val[0].
 * Inlined in tree_sync's two replay loops (a call per replay measured
 * +1.4% instructions in worst-fit's run). */
static inline __attribute__((always_inline)) void
tree_touch(struct lsched_score_index *ix, struct six_shape *s, int pos,
           int64_t old, int fits) {
  int64_t *val = s->val;
  /* Unsigned: halving is one shift (a signed i / 2 costs three). */
  size_t i = (size_t)ix->size + (size_t)pos;
  int64_t now = leaf_value(ix, s, pos, fits);
  if (now == old)
    return; /* the same leaf: nothing above it changes */
  val[i] = now;
  s->ans_ok = 0;
  if (s->cnt && (now == SIX_NONE) != (old == SIX_NONE)) {
    int d = now == SIX_NONE ? -1 : 1; /* a count changes on the whole path */
    for (size_t j = i >> 1; j >= 1; j >>= 1)
      s->cnt[j] += d;
  }
  if (now > old) {
    for (i >>= 1; val[i] < now; i >>= 1)
      val[i] = now;
    return;
  }
  for (;; i >>= 1) {
    int64_t sib = val[i ^ 1];
    if (sib >= old)
      break;
    now = max64(now, sib);
    val[i >> 1] = now;
  }
}

/* The earliest position holding the root's score (the scan's answer: the
 * highest score, ties to the earliest node), -1 when nothing fits: a
 * descent to the left child whenever it holds the maximum (else the right
 * one does). Kept until a leaf changes. */
static int32_t tree_answer(const struct lsched_score_index *ix,
                           struct six_shape *s) {
  if (s->ans_ok)
    return s->ans;
  const int64_t *val = s->val;
  int64_t top = val[1];
  int32_t pos = -1;
  if (top != SIX_NONE) {
    size_t i = 1, size = (size_t)ix->size;
    while (i < size)
      i = 2 * i + (val[2 * i] != top);
    pos = (int32_t)(i - size);
  }
  s->ans = pos;
  s->ans_ok = 1;
  return pos;
}

static void shape_free(struct lsched_score_index *ix, struct six_shape *s) {
  lsched__free(&ix->a, s->val);
  lsched__free(&ix->a, s->cnt);
  lsched__free(&ix->a, s->cst);
  lsched__free(&ix->a, s->cval);
  s->val = NULL;
  s->cnt = NULL;
  s->cst = NULL;
  s->cval = NULL;
  s->built = 0;
}

/* ---------------------------------------------------------------------- */
/* Idle classes                                                            */

static void cls_key(const struct lsched_node *nd, struct six_cls *k) {
  memset(k, 0, sizeof *k);
  k->cpu_cap = nd->cpu_cap;
  k->mem_cap = nd->mem_cap;
  k->features = nd->features;
  k->gpu_count = nd->gpu_count;
  k->model = nd->model;
  k->mode = (int32_t)nd->mode;
}

static int cls_eq(const struct six_cls *a, const struct six_cls *b) {
  return a->cpu_cap == b->cpu_cap && a->mem_cap == b->mem_cap &&
         a->features == b->features && a->gpu_count == b->gpu_count &&
         a->model == b->model && a->mode == b->mode;
}

/* Node x's class id while it is idle (up, all CPU, memory and every GPU
 * free, and still of the class it had at the refresh), else -1. */
static int16_t idle_class(const struct lsched_score_index *ix, int x) {
  int16_t k = ix->cls_of[x];
  if (k < 0)
    return -1;
  const struct lsched_node *nd = &ix->c->nodes[x];
  const struct six_cls *e = &ix->cls[k];
  if (nd->state != LSCHED_NODE_UP || nd->cpu_free != nd->cpu_cap ||
      nd->mem_free != nd->mem_cap || nd->gpus_full_free != nd->gpu_count ||
      nd->cpu_cap != e->cpu_cap || nd->mem_cap != e->mem_cap ||
      nd->gpu_count != e->gpu_count || nd->model != e->model ||
      (int32_t)nd->mode != e->mode || nd->features != e->features)
    return -1;
  return k;
}

/* ---------------------------------------------------------------------- */
/* Node states                                                             */

/* Forgets every memoised (state, shape) answer. */
static void smemo_forget(struct lsched_score_index *ix) {
  if (++ix->sgen == 0) { /* wrapped: entries of generation 0 are empty */
    memset(ix->smemo, 0, ((size_t)ix->sm_mask + 1) * sizeof *ix->smemo);
    ix->sgen = 1;
  }
}

/* Shares g[0 .. m) (m <= 4) as four 16-bit fields, the unused ones 0. */
static inline uint64_t st_pack(const int *g, int m) {
  uint64_t w = 0;
  for (int j = 0; j < m; j++)
    w |= (uint64_t)(uint16_t)g[j] << (16 * j);
  return w;
}

/* Node x's state (cls -1: none, every other field 0). Taken at every log
 * entry: a node of SIX_SGPUS GPUs (the common one) is packed unrolled. */
static void st_take(const struct lsched_score_index *ix, int x,
                    struct six_state *k) {
  static const struct six_state none = {.cls = -1};
  int16_t cl = ix->cls_of[x];
  const struct lsched_node *nd = &ix->c->nodes[x];
  const struct six_cls *e = cl >= 0 ? &ix->cls[cl] : NULL;
  if (!e || nd->state != LSCHED_NODE_UP || nd->gpu_count > SIX_SGPUS ||
      nd->cpu_cap != e->cpu_cap || nd->mem_cap != e->mem_cap ||
      nd->gpu_count != e->gpu_count || nd->model != e->model ||
      (int32_t)nd->mode != e->mode || nd->features != e->features) {
    *k = none;
    return;
  }
  const int *g = ix->c->gpu_free + nd->gpu_off;
  int gn = nd->gpu_count;
  uint64_t w0, w1;
  if (gn == SIX_SGPUS) {
    w0 = st_pack(g, 4);
    w1 = st_pack(g + 4, 4);
  } else {
    w0 = st_pack(g, gn < 4 ? gn : 4);
    w1 = gn > 4 ? st_pack(g + 4, gn - 4) : 0;
  }
  k->cpu = nd->cpu_free;
  k->g0 = w0;
  k->g1 = w1;
  k->cls = cl;
  uint64_t h = (uint64_t)k->cpu * UINT64_C(0x9E3779B97F4A7C15) +
               (uint64_t)(uint32_t)cl * UINT64_C(0x165667B19E3779F9) +
               w0 * UINT64_C(0xD6E8FEB86659FD93) +
               w1 * UINT64_C(0xFF51AFD7ED558CCD);
  h ^= h >> 31;
  h *= UINT64_C(0xBF58476D1CE4E5B9);
  k->h = h ^ (h >> 29);
}

static int st_eq(const struct six_state *a, const struct six_state *b) {
  return a->cls == b->cls && (a->cls < 0 || (a->cpu == b->cpu &&
         a->g0 == b->g0 && a->g1 == b->g1 && a->h == b->h));
}

/* Sizes the states and the memo for n nodes and takes every node's state
 * (at a refresh, after the classes); the memo is forgotten. */
static int st_refresh(struct lsched_score_index *ix) {
  if (!ix->st_on)
    return LSCHED_OK;
  int n = ix->n;
  if (n > ix->st_n) {
    struct six_state *ns =
        lsched__realloc(&ix->a, ix->nst, (size_t)n * sizeof *ns);
    if (!ns)
      return LSCHED_ENOMEM;
    ix->nst = ns;
    ix->st_n = n;
  }
  uint32_t mc = 256; /* 8 entries a node, 256 to SIX_SMEMO */
  while (mc < 8u * (uint32_t)n && mc < SIX_SMEMO)
    mc *= 2;
  if (mc != ix->sm_mask + 1 || !ix->smemo) {
    struct six_smemo *nm = lsched__calloc(&ix->a, mc, sizeof *nm);
    if (!nm)
      return LSCHED_ENOMEM;
    lsched__free(&ix->a, ix->smemo);
    ix->smemo = nm;
    ix->sm_mask = mc - 1;
  }
  smemo_forget(ix);
  for (int x = 0; x < n; x++)
    st_take(ix, x, &ix->nst[x]);
  return LSCHED_OK;
}

/* Classes of every node (at a refresh; the memos are then forgotten). */
static int cls_refresh(struct lsched_score_index *ix) {
  if (!ix->idle_on && !ix->st_on)
    return LSCHED_OK;
  int n = ix->n, size = ix->size;
  if (n > ix->cls_n) {
    int16_t *nc = lsched__realloc(&ix->a, ix->cls_of, (size_t)n * sizeof *nc);
    if (!nc)
      return LSCHED_ENOMEM;
    ix->cls_of = nc;
    ix->cls_n = n;
  }
  if (size > ix->idle_n) {
    int16_t *ni =
        lsched__realloc(&ix->a, ix->idle_at, (size_t)size * sizeof *ni);
    if (!ni)
      return LSCHED_ENOMEM;
    ix->idle_at = ni;
    ix->idle_n = size;
  }
  if (!ix->cls) {
    ix->cls = lsched__alloc(&ix->a, SIX_CLASSES * sizeof *ix->cls);
    if (!ix->cls)
      return LSCHED_ENOMEM;
  }
  uint16_t map[SIX_CMAP]; /* class id + 1 by hash, linear probing */
  memset(map, 0, sizeof map);
  ix->ncls = 0;
  for (int x = 0; x < n; x++) {
    const struct lsched_node *nd = &ix->c->nodes[x];
    ix->cls_of[x] = -1;
    if (nd->mode == LSCHED_GPU_MIG || nd->state == LSCHED_NODE_REMOVED)
      continue;
    struct six_cls k;
    cls_key(nd, &k);
    uint64_t h = 0;
    h = mix(h, (uint64_t)k.cpu_cap);
    h = mix(h, (uint64_t)k.mem_cap);
    h = mix(h, k.features);
    h = mix(h, (uint64_t)(uint32_t)k.gpu_count << 32 | (uint32_t)k.model);
    h = mix(h, (uint64_t)(uint32_t)k.mode);
    uint32_t j = (uint32_t)h & (SIX_CMAP - 1);
    while (map[j] && !cls_eq(&ix->cls[map[j] - 1], &k))
      j = (j + 1) & (SIX_CMAP - 1);
    if (!map[j]) {
      if (ix->ncls == SIX_CLASSES)
        continue; /* too many classes: this one is scored node by node */
      ix->cls[ix->ncls] = k;
      map[j] = (uint16_t)++ix->ncls;
    }
    ix->cls_of[x] = (int16_t)(map[j] - 1);
  }
  for (int p = 0; p < size; p++)
    ix->idle_at[p] = p < n ? idle_class(ix, ix->c->order[p]) : -1;
  for (int i = 0; i < ix->nsh; i++)
    if (ix->sh[i].cst)
      memset(ix->sh[i].cst, 0, SIX_CLASSES);
  return LSCHED_OK;
}

/* Re-takes the view and sizes everything for the present node count;
 * every tree becomes stale. LSCHED_OK or LSCHED_ENOMEM (then the index
 * answers by scanning until a later call succeeds). */
static int six_refresh(struct lsched_score_index *ix) {
  lsched_view v = LSCHED_VIEW_INIT;
  lsched_cluster_view(ix->c, &v);
  ix->v = v;
  int size = 1;
  while (size < v.n)
    size *= 2;
  if (v.n > ix->scratch_n) {
    int *ns = lsched__realloc(&ix->a, ix->scratch, (size_t)v.n * sizeof *ns);
    if (!ns)
      return LSCHED_ENOMEM;
    ix->scratch = ns;
    ix->scratch_n = v.n;
  }
  if (v.n > ix->last_n) {
    uint64_t *nl = lsched__realloc(&ix->a, ix->last, (size_t)v.n * sizeof *nl);
    if (!nl)
      return LSCHED_ENOMEM;
    ix->last = nl;
    uint64_t *ng = lsched__realloc(&ix->a, ix->grow, (size_t)v.n * sizeof *ng);
    if (!ng)
      return LSCHED_ENOMEM;
    ix->grow = ng;
    uint64_t *nk =
        lsched__realloc(&ix->a, ix->shrink, (size_t)v.n * sizeof *nk);
    if (!nk)
      return LSCHED_ENOMEM;
    ix->shrink = nk;
    ix->last_n = v.n;
  }
  size_t cap = (size_t)v.n * 4 > 4096 ? (size_t)v.n * 4 : 4096;
  if ((int)cap > ix->log_cap) {
    int32_t *nlog = lsched__realloc(&ix->a, ix->log, cap * sizeof *nlog);
    if (!nlog)
      return LSCHED_ENOMEM;
    ix->log = nlog;
    ix->log_cap = (int)cap;
  }
  if (v.n > 0) {
    memset(ix->last, 0, (size_t)v.n * sizeof *ix->last);
    memset(ix->grow, 0, (size_t)v.n * sizeof *ix->grow);
    memset(ix->shrink, 0, (size_t)v.n * sizeof *ix->shrink);
  }
  ix->log_len = 0;
  ix->log_lo = ix->seq;
  if (size != ix->size) {
    for (int i = 0; i < ix->nsh; i++)
      shape_free(ix, &ix->sh[i]);
    ix->size = size;
  }
  for (int i = 0; i < ix->nsh; i++)
    ix->sh[i].built = 0;
  ix->n = v.n;
  int rc = cls_refresh(ix);
  if (rc == LSCHED_OK)
    rc = st_refresh(ix);
  if (rc)
    return rc;
  ix->order_gen = ix->c->order_gen;
  ix->stale = 0;
  return LSCHED_OK;
}

/* ---------------------------------------------------------------------- */
/* Observer                                                                */

/* The log is full: drop what every built tree has replayed; if that frees
 * less than half, the trees that hold it back are rebuilt when next asked
 * (they are then more than 2n entries behind) and the log is cleared. */
static void log_compact(struct lsched_score_index *ix) {
  uint64_t m = ix->seq;
  for (int i = 0; i < ix->nsh; i++)
    if (ix->sh[i].built && ix->sh[i].synced < m)
      m = ix->sh[i].synced;
  int drop = (int)(m - ix->log_lo);
  if (drop < ix->log_cap / 2) {
    for (int i = 0; i < ix->nsh; i++)
      if (ix->sh[i].built && ix->sh[i].synced < ix->seq)
        ix->sh[i].built = 0;
    drop = ix->log_len;
  }
  memmove(ix->log, ix->log + drop,
          (size_t)(ix->log_len - drop) * sizeof *ix->log);
  ix->log_len -= drop;
  ix->log_lo += (uint64_t)drop;
}

/* How a change may have moved what node x fits (six_touch's how). */
#define SIX_GROW 1   /* more: a release, a compose, a touch */
#define SIX_SHRINK 2 /* less: an allocation, a compose, a touch */

static void six_touch(struct lsched_score_index *ix, int node, int how) {
  if (ix->stale || ix->order_gen != ix->c->order_gen || node < 0 ||
      node >= ix->n)
    return; /* rebuilt before the next answer anyway */
  if (ix->log_len == ix->log_cap)
    log_compact(ix);
  int pos = ix->c->pos_of[node];
  ix->log[ix->log_len++] = pos;
  ix->last[pos] = ++ix->seq; /* entry seq - 1, stored + 1 */
  if (how & SIX_GROW)
    ix->grow[pos] = ix->seq;
  if (how & SIX_SHRINK)
    ix->shrink[pos] = ix->seq;
  if (ix->st_on) {
    /* A node with a state is up and of its class (idle_class's other
     * tests, not repeated): idle when everything is free. */
    struct six_state *ns = &ix->nst[node];
    st_take(ix, node, ns);
    const struct lsched_node *nd = &ix->c->nodes[node];
    if (ns->cls < 0)
      ix->idle_at[pos] = idle_class(ix, node);
    else
      ix->idle_at[pos] = nd->cpu_free == nd->cpu_cap &&
                                 nd->mem_free == nd->mem_cap &&
                                 nd->gpus_full_free == nd->gpu_count
                             ? (int16_t)ns->cls
                             : -1;
  } else if (ix->idle_on) {
    ix->idle_at[pos] = idle_class(ix, node);
  }
}

/* Position p's latest entry, seen by a tree synchronised before from,
 * needs a replay: not when its leaf is empty and it has only been
 * allocated on since (it still does not fit). */
static inline int replay_due(const struct lsched_score_index *ix,
                             const int64_t *leaf, int p, uint64_t from) {
  return leaf[p] != SIX_NONE ? !ix->counts_only || ix->shrink[p] > from
                             : ix->grow[p] > from;
}

/* Replays position p on tree s synchronised before from, when due (see
 * replay_due): a node whose leaf held a score and that has only been
 * released on since still fits (no fit test, its score only; on a
 * counts-only index nothing: it fits, so no count moves). */
static inline __attribute__((always_inline)) void
replay(struct lsched_score_index *ix, struct six_shape *s, int p,
       uint64_t from) {
  int64_t old = s->val[ix->size + p];
  int fits = old != SIX_NONE && ix->shrink[p] <= from;
  if (old == SIX_NONE ? ix->grow[p] > from : !fits || !ix->counts_only)
    tree_touch(ix, s, p, old, fits);
}

/* Brings tree s up to date with the log. */
static void tree_sync(struct lsched_score_index *ix, struct six_shape *s) {
  uint64_t from = s->synced, pending = ix->seq - from;
  if (pending == 0)
    return;
  /* Each position once, at its latest entry. Entries repeat nodes (fill
   * mode packs one node for a while): what a replay costs is the distinct
   * positions, collected first (scratch holds n); more than n/2: rebuild
   * (measured in fill mode: n/4 rebuilt more often than it saved). They
   * are the positions whose latest entry is not yet replayed: read from
   * the log, or from last[] when more than n entries wait. Fewer entries
   * than that bound are replayed as they are read (no rebuild possible):
   * the leaves of distinct positions are independent, and a tree's
   * contents do not depend on the order of the replays. */
  const int64_t *leaf = s->val + ix->size;
  int *todo = ix->scratch, m = 0, most = ix->n / 2 + 1;
  if (most > ix->scratch_n)
    most = ix->scratch_n;
  s->synced = ix->seq;
  if (pending <= (uint64_t)most) {
    /* Read once: a replay's calls (fit test, score) may write any
     * memory as far as the compiler knows. */
    const int32_t *log = ix->log + (from - ix->log_lo);
    const uint64_t *last = ix->last;
    for (uint64_t j = 0; j < pending; j++) {
      int p = log[j];
      if (last[p] == from + j + 1)
        replay(ix, s, p, from);
    }
    return;
  }
  if (pending > (uint64_t)ix->n) {
    for (int p = 0; p < ix->n; p++) {
      if (ix->last[p] <= from || !replay_due(ix, leaf, p, from))
        continue; /* unchanged, or allocated on and still not fitting */
      if (m == most) {
        tree_build(ix, s);
        ix->st.builds++;
        return;
      }
      todo[m++] = p;
    }
  } else {
    for (uint64_t q = from; q < ix->seq; q++) {
      int p = ix->log[q - ix->log_lo];
      if (ix->last[p] != q + 1 || !replay_due(ix, leaf, p, from))
        continue;
      if (m == most) {
        tree_build(ix, s);
        ix->st.builds++;
        return;
      }
      todo[m++] = p;
    }
  }
  for (int i = 0; i < m; i++)
    replay(ix, s, todo[i], from);
}

static void six_on_alloc(void *user, const lsched_cluster *c,
                         const lsched_placement *p, int trial) {
  (void)c;
  (void)trial;
  six_touch(user, p->node, SIX_SHRINK);
}

static void six_on_release(void *user, const lsched_cluster *c,
                           const lsched_placement *p, int trial) {
  (void)c;
  (void)trial;
  six_touch(user, p->node, SIX_GROW);
}

static void six_on_node_change(void *user, const lsched_cluster *c, int node,
                               int change) {
  struct lsched_score_index *ix = user;
  if (lsched_node_watch_free_only(ix->watch, c, node, change) > 0)
    six_touch(ix, node, SIX_GROW | SIX_SHRINK);
  else
    ix->stale = 1;
}

static const lsched_observer six_observer_ops = {
    .version = LSCHED_OBSERVER_VERSION,
    .on_alloc = six_on_alloc,
    .on_release = six_on_release,
    .on_node_change = six_on_node_change,
};

/* ---------------------------------------------------------------------- */
/* API                                                                     */

int lsched_score_index_create(lsched_score_index **out,
                              const lsched_cluster *cc, lsched_score_fn score,
                              void *ctx) {
  if (!out)
    return LSCHED_EINVAL;
  *out = NULL;
  if (!cc || !score)
    return LSCHED_EINVAL;
  /* The index registers itself as an observer: the cluster's observer list
   * is bookkeeping beside its state, which nothing here changes. */
  lsched_cluster *c = (lsched_cluster *)cc;
  struct lsched_score_index *ix = lsched__calloc(&c->a, 1, sizeof *ix);
  if (!ix)
    return LSCHED_ENOMEM;
  ix->a = c->a;
  ix->c = c;
  ix->score = score;
  ix->ctx = ctx;
  ix->enabled = 1;
  int rc = six_refresh(ix);
  if (rc == LSCHED_OK) {
    size_t per = (size_t)ix->size * 2 * sizeof(int64_t);
    size_t m = SIX_BUDGET / (per ? per : 1);
    ix->max_shapes = m < 4 ? 4 : m > SIX_MAX_SHAPES ? SIX_MAX_SHAPES : (int)m;
    ix->sh = lsched__calloc(&c->a, (size_t)ix->max_shapes, sizeof *ix->sh);
    rc = ix->sh ? LSCHED_OK : LSCHED_ENOMEM;
  }
  if (rc == LSCHED_OK)
    rc = lsched_node_watch_create(&ix->watch, c);
  if (rc == LSCHED_OK)
    rc = lsched_cluster_add_observer(c, &six_observer_ops, ix);
  if (rc) {
    lsched_node_watch_destroy(ix->watch);
    lsched__free(&ix->a, ix->sh);
    lsched__free(&ix->a, ix->scratch);
    lsched__free(&ix->a, ix->log);
    lsched__free(&ix->a, ix->last);
    lsched__free(&ix->a, ix->grow);
    lsched__free(&ix->a, ix->shrink);
    lsched__free(&ix->a, ix);
    return rc;
  }
  *out = ix;
  return LSCHED_OK;
}

void lsched_score_index_destroy(lsched_score_index *ix) {
  if (!ix)
    return;
  lsched_cluster_remove_observer(ix->c, &six_observer_ops, ix);
  for (int i = 0; i < ix->nsh; i++)
    shape_free(ix, &ix->sh[i]);
  lsched_allocator a = ix->a;
  lsched_node_watch_destroy(ix->watch);
  lsched__free(&a, ix->cls);
  lsched__free(&a, ix->nst);
  lsched__free(&a, ix->smemo);
  lsched__free(&a, ix->cls_of);
  lsched__free(&a, ix->idle_at);
  lsched__free(&a, ix->sh);
  lsched__free(&a, ix->scratch);
  lsched__free(&a, ix->log);
  lsched__free(&a, ix->last);
  lsched__free(&a, ix->grow);
  lsched__free(&a, ix->shrink);
  lsched__free(&a, ix);
}

void lsched_score_index_reset(lsched_score_index *ix) {
  if (ix)
    ix->stale = 1;
}

void lsched_score_index_touch(lsched_score_index *ix, int node) {
  if (!ix)
    return;
  if (ix->st_on && ix->smemo) /* scores moved outside the node's state */
    smemo_forget(ix);
  six_touch(ix, node, SIX_GROW | SIX_SHRINK);
}

int lsched_score_index_enable(lsched_score_index *ix, int on) {
  if (!ix)
    return LSCHED_EINVAL;
  ix->enabled = on != 0;
  return LSCHED_OK;
}

static void map_put(struct lsched_score_index *ix, uint64_t h, int idx) {
  uint32_t j = (uint32_t)h & (SIX_MAP - 1);
  while (ix->map[j])
    j = (j + 1) & (SIX_MAP - 1);
  ix->map[j] = (uint16_t)(idx + 1);
}

/* *out: the tree for key brought up to date, or NULL (the caller scans:
 * also when no tree could be allocated; the trees are a cache, and a
 * failed allocation costs one scan, never an answer). LSCHED_OK. */
static int shape_get(struct lsched_score_index *ix, const struct six_key *k,
                     const lsched_request *req, struct six_shape **out) {
  *out = NULL;
  uint64_t h = key_hash(k);
  struct six_shape *s = NULL;
  for (uint32_t j = (uint32_t)h & (SIX_MAP - 1); ix->map[j];
       j = (j + 1) & (SIX_MAP - 1)) {
    struct six_shape *e = &ix->sh[ix->map[j] - 1];
    if (e->hash == h && key_eq(&e->key, k)) {
      s = e;
      break;
    }
  }
  if (!s) {
    if (ix->nsh < ix->max_shapes) {
      s = &ix->sh[ix->nsh];
      map_put(ix, h, ix->nsh++);
    } else {
      uint64_t *g = &ix->ghost[h % SIX_GHOSTS];
      if (*g != h) { /* first miss while full: remember, scan */
        *g = h;
        return LSCHED_OK;
      }
      *g = 0;
      s = &ix->sh[0];
      for (int i = 1; i < ix->nsh; i++)
        if (ix->sh[i].last_use < s->last_use)
          s = &ix->sh[i];
      ix->st.evictions++;
      s->hash = h; /* the table is rebuilt for the new key */
      memset(ix->map, 0, sizeof ix->map);
      for (int i = 0; i < ix->nsh; i++)
        map_put(ix, ix->sh[i].hash, i);
    }
    s->key = *k;
    s->hash = h;
    s->built = 0;
    if (++ix->tagc == 0) { /* wrapped: no memoised answer may match */
      ix->tagc = 1;
      if (ix->smemo)
        smemo_forget(ix);
    }
    s->tag = ix->tagc;
    if (s->cst)
      memset(s->cst, 0, SIX_CLASSES);
    lsched_request r = LSCHED_REQUEST_INIT;
    r.cpu_milli = req->cpu_milli;
    r.memory_mib = req->memory_mib;
    r.gpu_count = req->gpu_count;
    r.gpu_milli = req->gpu_milli;
    r.model_mask = req->model_mask;
    r.mig_kind = k->mig_kind;
    r.mig_compute_milli = k->mig_compute;
    r.mig_memory_mib = k->mig_mem;
    r.features = k->features;
    s->req = r;
    s->plain_k = k->mig_kind ? 0 : k->k;
    s->full_k = k->milli == LSCHED_GPU_MILLI ? s->plain_k : 0;
    s->min_milli = s->plain_k > 0 ? k->milli : 0;
    s->plain = !k->mig_kind && !k->features;
  }
  s->last_use = ++ix->tick;
  if (!s->built) {
    if (!s->val) {
      s->val = lsched__alloc(&ix->a, 2 * (size_t)ix->size * sizeof *s->val);
      if (ix->counting)
        s->cnt = lsched__alloc(&ix->a, (size_t)ix->size * sizeof *s->cnt);
      if (ix->idle_on) {
        s->cst = lsched__calloc(&ix->a, SIX_CLASSES, 1);
        s->cval = lsched__alloc(&ix->a, SIX_CLASSES * sizeof *s->cval);
      }
      if (!s->val || (ix->counting && !s->cnt) ||
          (ix->idle_on && (!s->cst || !s->cval))) {
        shape_free(ix, s);
        return LSCHED_OK;
      }
    }
    tree_build(ix, s);
    ix->st.builds++;
  } else if (s->synced != ix->seq) {
    tree_sync(ix, s);
  }
  *out = s;
  return LSCHED_OK;
}

/* The up-to-date tree of req's shape in *s, or NULL (answer by a scan). */
static int tree_for(struct lsched_score_index *ix, const lsched_request *req,
                    struct six_shape **s) {
  struct six_key k;
  *s = NULL;
  if (ix->stale || ix->order_gen != ix->c->order_gen)
    six_refresh(ix); /* ENOMEM: stays stale (scan), tried again next call */
  if (ix->enabled && !ix->stale && ix->order_gen == ix->c->order_gen &&
      shape_of(req, &k) && shape_get(ix, &k, req, s))
    return LSCHED_ENOMEM;
  return LSCHED_OK;
}

int lsched_score_index_enable_counts(lsched_score_index *ix) {
  if (!ix)
    return LSCHED_EINVAL;
  if (ix->nsh > 0)
    return LSCHED_ESTATE;
  if (!ix->counting) {
    ix->counting = 1;
    ix->counts_only = 1;
    size_t per = (size_t)ix->size * (sizeof(int32_t) + 2 * sizeof(int64_t));
    size_t m = SIX_BUDGET / (per ? per : 1);
    if (m < (size_t)ix->max_shapes)
      ix->max_shapes = m < 4 ? 4 : (int)m;
  }
  return LSCHED_OK;
}

int lsched_score_index_idle(lsched_score_index *ix) {
  if (!ix)
    return LSCHED_EINVAL;
  if (ix->nsh > 0)
    return LSCHED_ESTATE;
  if (!ix->idle_on) {
    ix->idle_on = 1;
    ix->stale = 1; /* the classes are taken at the refresh */
  }
  return LSCHED_OK;
}

int lsched_score_index_state(lsched_score_index *ix) {
  if (!ix)
    return LSCHED_EINVAL;
  if (ix->nsh > 0)
    return LSCHED_ESTATE;
  if (!ix->st_on) {
    ix->st_on = 1;
    ix->idle_on = 1; /* an idle node's state is its class's */
    ix->stale = 1;   /* the states are taken at the refresh */
  }
  return LSCHED_OK;
}

int lsched_score_index_draw(lsched_score_index *ix, const lsched_request *req,
                            uint64_t (*draw)(void *user, uint64_t m),
                            void *user, int *node) {
  if (!node)
    return LSCHED_EINVAL;
  *node = -1;
  if (!ix || !draw || !lsched__req_valid(ix->c, req))
    return LSCHED_EINVAL;
  struct six_shape *s = NULL;
  if (ix->counting && tree_for(ix, req, &s))
    return LSCHED_ENOMEM;
  if (s && s->cnt) {
    ix->st.indexed++;
    int32_t m = count_at(ix, s, 1);
    if (m == 0)
      return LSCHED_ENOFIT;
    uint64_t r = draw(user, (uint64_t)m);
    if (r >= (uint64_t)m)
      return LSCHED_EINVAL;
    int i = 1;
    while (i < ix->size) {
      int32_t l = count_at(ix, s, 2 * i);
      if (r < (uint64_t)l) {
        i = 2 * i;
      } else {
        r -= (uint64_t)l;
        i = 2 * i + 1;
      }
    }
    *node = ix->c->order[i - ix->size];
    return LSCHED_OK;
  }
  ix->st.scanned++;
  if (ix->scratch_n < ix->c->n)
    return LSCHED_ENOMEM;
  int m = lsched_collect_fits(ix->c, req, ix->scratch);
  if (m == 0)
    return LSCHED_ENOFIT;
  uint64_t r = draw(user, (uint64_t)m);
  if (r >= (uint64_t)m)
    return LSCHED_EINVAL;
  *node = ix->scratch[r];
  return LSCHED_OK;
}

int lsched_score_index_best(lsched_score_index *ix, const lsched_request *req,
                            int *node) {
  if (!node)
    return LSCHED_EINVAL;
  *node = -1;
  if (!ix || !lsched__req_valid(ix->c, req))
    return LSCHED_EINVAL;
  if (ix->counts_only) { /* scores are read from now on: all anew */
    ix->counts_only = 0;
    for (int i = 0; i < ix->nsh; i++) {
      ix->sh[i].built = 0;
      if (ix->sh[i].cst) /* the classes' answers were fits only */
        memset(ix->sh[i].cst, 0, SIX_CLASSES);
    }
  }
  struct six_shape *s = NULL;
  if (tree_for(ix, req, &s))
    return LSCHED_ENOMEM;
  if (s) {
    ix->st.indexed++;
    int32_t pos = tree_answer(ix, s);
    if (pos < 0)
      return LSCHED_ENOFIT;
    *node = ix->c->order[pos];
    return LSCHED_OK;
  }
  ix->st.scanned++;
  if (ix->scratch_n < ix->c->n)
    return LSCHED_ENOMEM; /* the scan's scratch could not grow */
  return lsched_best_raw_score(ix->c, req, ix->score, ix->ctx, ix->scratch,
                               node);
}

int lsched_score_index_stats_get(const lsched_score_index *ix,
                                 lsched_score_index_stats *out) {
  if (!ix || !out)
    return LSCHED_EINVAL;
  *out = ix->st;
  out->shapes = ix->nsh;
  out->max_shapes = ix->max_shapes;
  return LSCHED_OK;
}

int lsched_score_index_check(lsched_score_index *ix) {
  if (!ix)
    return LSCHED_EINVAL;
  if (ix->stale || ix->order_gen != ix->c->order_gen)
    return LSCHED_OK; /* nothing is read before the rebuild */
  if (ix->n != ix->c->n)
    return LSCHED_ESTATE;
  for (int i = 0; i < ix->nsh; i++) {
    struct six_shape *s = &ix->sh[i];
    if (!s->built)
      continue;
    tree_sync(ix, s);
    int32_t want = -1; /* the scan's answer */
    for (int p = 0; p < ix->size; p++) {
      int64_t b = s->val[ix->size + p];
      if (p >= ix->n) {
        if (b != SIX_NONE)
          return LSCHED_ESTATE;
        continue;
      }
      int node = ix->c->order[p];
      if (ix->idle_on && ix->idle_at[p] != idle_class(ix, node))
        return LSCHED_ESTATE;
      if (ix->st_on) {
        struct six_state sk;
        st_take(ix, node, &sk);
        if (!st_eq(&ix->nst[node], &sk))
          return LSCHED_ESTATE; /* a node's state is taken at its changes */
      }
      int fits = lsched__node_fits(ix->c, &ix->c->nodes[node], &s->req);
      if (fits != (b != SIX_NONE))
        return LSCHED_ESTATE;
      if (ix->counts_only)
        continue; /* a fitting leaf's score may be old: never read */
      if (fits && b != ix->score(&ix->v, node, &s->req, ix->ctx))
        return LSCHED_ESTATE;
      if (fits && (want < 0 || b > s->val[ix->size + want]))
        want = p;
    }
    if (s->val[0] != INT64_MAX)
      return LSCHED_ESTATE; /* the climbs' stop */
    for (int j = ix->size - 1; j >= 1; j--)
      if (s->val[j] != max64(s->val[2 * j], s->val[2 * j + 1]) ||
          (s->cnt && s->cnt[j] != count_at(ix, s, 2 * j) +
                                      count_at(ix, s, 2 * j + 1)))
        return LSCHED_ESTATE;
    if (!ix->counts_only && tree_answer(ix, s) != want)
      return LSCHED_ESTATE;
  }
  return LSCHED_OK;
}
