/*
 * fgd: Fragmentation Gradient Descent (Weng et al., USENIX ATC 2023). The
 * placement (node, GPU) is the one that increases the node's fragmentation
 * F(n) least under the target workload (set_workload; docs/DESIGN.md section 6,
 * libsched.h lsched_frag). Node score = floor(100 x sigmoid(-increase /
 * 1000)) with the increase in milli-GPU, as the authors' FGDScore plugin
 * (pkg/simulator/plugin/fgd_score.go); the highest score wins, ties to the
 * earliest node in the visit order; no normalisation.
 *
 * GPU choice on the chosen node:
 *   - a fraction of one GPU: the GPU with the least increase (ties: lowest
 *     index). This is the definition. The authors' code keeps the
 *     GPU with the highest *truncated* score (ties: lowest index), which
 *     can prefer a lower index over a slightly smaller increase; see
 *     README "Fidelity" for the comparison.
 *   - whole GPUs: the lowest-index fully free ones (AllocateExclusiveGpuId);
 *     the increase does not depend on which free GPUs are taken.
 *   - a fraction of several GPUs (not in the authors' traces): the tightest
 *     GPUs, as their NodeResource.Sub packs.
 *   - CPU only: no GPU; the increase comes from CPU that some task types
 *     lose.
 * Without a workload F is 0 everywhere: every node scores 50 and the
 * earliest node that fits wins.
 *
 * Speed. F(n) and per-threshold aggregates of every node are cached
 * (frag.c) and recomputed for a node changed since (fs_ver) when a score
 * reads them: with the score index's state memo most changed nodes are
 * not scored by this policy before their next change. The
 * increase for a candidate GPU is then O(types) from the aggregates: only
 * the one GPU's share changes. Results are memoised per (node, request
 * shape): an entry stays valid until that node changes (a per-node version
 * from a global clock), so after a placement only the changed node is
 * re-evaluated for each shape, and place() costs O(m) lookups for m
 * candidate nodes. The memo holds S slots per node (shape id mod S, S = 256
 * up to 16384 nodes, fewer beyond so that it stays under ~48 MiB). An idle
 * node (all CPU and every GPU free) scores for a shape what every idle node
 * of its class (CPU capacity, GPU count, model, mode) scores: a second memo
 * per (class, shape) answers those (in fill mode three in four scores were
 * of idle nodes, each shape's first tree scoring every node). Generally a
 * node's score is a function of its state (class, free CPU, multiset of
 * free shares): a third memo per (state, shape) answers the nodes of a
 * state met before (state_score; at 100,000 GPUs nearly every re-score of
 * a node a placement changed). eval=types, the reference, does without
 * the last two.
 *
 * Evaluation of F (lsched_frag_eval walks every task type allowed on the
 * node's model: O(types), so a trace of many distinct shapes made every
 * score cost that many steps): the types of each model are grouped by
 * (GPU share, GPU count), and within a group sorted by CPU with prefix
 * sums of the weights. A type runs on a node when the node has k GPUs
 * with the share free (one test per group) and enough CPU (the types of a
 * group that run are a prefix: one binary search), so
 *   F x W = sum_{groups that fit} small[share] x (weight of the prefix)
 *         + (W - weight of every running type) x idle,
 * O(groups x log types) and the same integer as the per-type sum (integer
 * arithmetic: the order of the additions does not matter). Parameter
 * eval=types keeps lsched_frag_eval, the reference of the tests.
 *
 * That scan is the reference (parameter index=off). By default the node
 * comes from the score index (lsched_score_index): the score of node x
 * depends on x's state and its cache entry, which on_alloc/on_release
 * update before the index re-scores x, and on the workload (set_workload
 * resets the index). A placement then costs O(types + log n) per node
 * changed since its shape was last placed, plus one node_score for its GPU.
 */
#include "builtin.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct memo_entry {
  uint32_t ver;   /* node version the entry was computed at; 0 = empty */
  uint32_t shape; /* request shape id */
  int16_t score;
  int8_t gpu; /* chosen GPU for a fraction of one GPU, else -1 */
  int8_t pad_;
};

/* The score of an idle node of one class for one shape (valid = 1). */
struct idle_entry {
  int16_t score;
  int8_t gpu;
  uint8_t valid;
};
#define FGD_CLASSES 16

/* Node states (node_state): a node's class, free CPU and the free shares of
 * its GPUs in ascending order, interned in an open-addressed table whose
 * slot is the state's id (emptied when 3/4 full); used = 1 in a taken slot.
 * Both tables have 1 << sbits entries, the least power of two >= 2 x nodes
 * within [2^FGD_SBITS_MIN, 2^FGD_SBITS_MAX] (3 MiB at most).
 * The score of a state for a shape (state_score): a direct-mapped table
 * keyed by (state id, shape id), gen = the generation it was computed under
 * (0 = empty; a new generation on a new workload or a new state table). */
#define FGD_SGPUS 8
#define FGD_SBITS_MIN 10
#define FGD_SBITS_MAX 16
struct node_state {
  int64_t cpu;
  int16_t g[FGD_SGPUS];
  int16_t cls;
  uint16_t used;
  uint32_t pad_;
};
struct state_entry {
  uint32_t st, sid, gen;
  int16_t score;
  uint8_t ties; /* bit j: g[j] is a share of least increase (one GPU) */
  uint8_t pad_;
};

struct shape_key {
  int64_t cpu;
  int32_t k, milli;
};

#define SHAPE_MAX (1u << 20)
#define SHAPE_NONE UINT32_MAX

/* Task types of one model with the same (share index ti, GPU count k):
 * cpu[off .. off + n) ascending, pw[off + i] = weight of the first i + 1. */
struct fgd_group {
  int32_t ti, k;
  uint32_t off, n;
};

struct fgd_groups {
  struct fgd_group *g;
  int64_t *cpu, *pw;
  uint32_t goff[LSCHED_MAX_MODELS + 1]; /* groups of model m */
};

struct fgd_state {
  lsched_allocator a;
  struct fgd_groups gr;
  int use_types; /* eval=types: lsched_frag_eval, the reference */
  lsched_view v;
  lsched_frag_types fw;
  lsched_frag_cache fs;
  int n;
  int *scratch;
  uint8_t *tcnt;   /* nthr scratch */
  int32_t *tsmall; /* nthr scratch */
  uint32_t *ver;   /* per node */
  uint32_t *fs_ver; /* per node: fs holds the node at version fs_ver */
  uint32_t clock;
  struct memo_entry *memo; /* n x S */
  uint32_t S;              /* power of two */
  struct shape_key *shapes;
  uint32_t nshapes, shapes_cap;
  uint32_t *shape_slot; /* id + 1 per hash slot */
  uint32_t shape_nslot;
  const lsched_cluster *c;
  lsched_score_index *ix;
  int use_index;
  lsched_workload *wl;      /* a copy of the last set_workload's */
  lsched_node_watch *watch; /* on_node_change: one node or a rebuild */
  struct shape_key last_key; /* fgd_index_score's last shape and its id */
  uint32_t last_sid;
  int last_sid_ok;
  /* Idle nodes of one class score alike (idle_score). */
  int16_t *cls; /* per node: its class, -1 none */
  struct fgd_class {
    int64_t cpu_cap;
    int gpu_count, model, mode;
  } classes[FGD_CLASSES];
  int ncls;
  struct idle_entry *imemo; /* [sid x FGD_CLASSES + class], icap sids */
  uint32_t icap;
  int sbits;                 /* table_bits(n) */
  struct node_state *stab;   /* 1 << sbits */
  uint32_t nst;              /* taken slots of stab */
  uint32_t *st_ver, *st_id;  /* per node: its state id at version st_ver */
  struct state_entry *smemo; /* 1 << sbits, direct-mapped */
  uint32_t sgen;             /* bumped when the scores change meaning */
};

static int64_t fgd_index_score(const lsched_view *v, int node,
                               const lsched_request *req, void *ctx);
static int fgd_finish(struct fgd_state *s, const lsched_cluster *c,
                      const lsched_request *req, int best, int8_t best_gpu,
                      lsched_placement *out);

static void groups_free(struct fgd_groups *gr, const lsched_allocator *a) {
  lsched_mem_free(a, gr->g);
  lsched_mem_free(a, gr->cpu);
  lsched_mem_free(a, gr->pw);
  memset(gr, 0, sizeof *gr);
}

static int cmp_type(const void *pa, const void *pb) {
  const lsched_frag_type *a = pa, *b = pb;
  if (a->ti != b->ti)
    return a->ti < b->ti ? -1 : 1;
  if (a->k != b->k)
    return a->k < b->k ? -1 : 1;
  return (a->cpu > b->cpu) - (a->cpu < b->cpu);
}

/* The groups of fw's types (see the top of the file). */
static int groups_build(struct fgd_groups *gr, const lsched_allocator *a,
                        const lsched_frag_types *fw) {
  memset(gr, 0, sizeof *gr);
  size_t total = (size_t)fw->moff[LSCHED_MAX_MODELS];
  size_t nz = total ? total : 1;
  lsched_frag_type *t = lsched_mem_calloc(a, nz, sizeof *t);
  gr->g = lsched_mem_calloc(a, nz, sizeof *gr->g);
  gr->cpu = lsched_mem_calloc(a, nz, sizeof *gr->cpu);
  gr->pw = lsched_mem_calloc(a, nz, sizeof *gr->pw);
  if (!t || !gr->g || !gr->cpu || !gr->pw) {
    lsched_mem_free(a, t);
    groups_free(gr, a);
    return LSCHED_ENOMEM;
  }
  if (total)
    memcpy(t, fw->ft, total * sizeof *t);
  uint32_t ng = 0;
  for (int m = 0; m < LSCHED_MAX_MODELS; m++) {
    gr->goff[m] = ng;
    size_t lo = (size_t)fw->moff[m], hi = (size_t)fw->moff[m + 1];
    if (hi > lo)
      qsort(t + lo, hi - lo, sizeof *t, cmp_type);
    for (size_t i = lo; i < hi; i++) {
      if (i == lo || t[i].ti != t[i - 1].ti || t[i].k != t[i - 1].k) {
        struct fgd_group *e = &gr->g[ng++];
        e->ti = t[i].ti;
        e->k = t[i].k;
        e->off = (uint32_t)i;
        e->n = 0;
      }
      struct fgd_group *e = &gr->g[ng - 1];
      gr->cpu[i] = t[i].cpu;
      gr->pw[i] = (e->n ? gr->pw[i - 1] : 0) + t[i].w;
      e->n++;
    }
  }
  gr->goff[LSCHED_MAX_MODELS] = ng;
  lsched_mem_free(a, t);
  return LSCHED_OK;
}

/* lsched_frag_eval through the groups: the same value. */
static int64_t fgd_eval(const struct fgd_state *s, int model,
                        int64_t cpu_free, const uint8_t *cnt,
                        const int32_t *small, int64_t idle) {
  const lsched_frag_types *fw = &s->fw;
  if (s->use_types || model < 0 || model >= LSCHED_MAX_MODELS)
    return lsched_frag_eval(fw, model, cpu_free, cnt, small, idle);
  if (idle <= 0 || fw->W == 0)
    return 0;
  int64_t okw = 0, acc = 0;
  const struct fgd_group *g = s->gr.g + s->gr.goff[model];
  const struct fgd_group *end = s->gr.g + s->gr.goff[model + 1];
  for (; g < end; g++) {
    if (cnt[g->ti] < g->k)
      continue;
    /* the types of the group with cpu <= cpu_free: a prefix */
    const int64_t *c = s->gr.cpu + g->off;
    uint32_t lo = 0, hi = g->n;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (c[mid] <= cpu_free)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == 0)
      continue;
    int64_t w = s->gr.pw[g->off + lo - 1];
    okw += w;
    acc += w * small[g->ti];
  }
  return acc + (fw->W - okw) * idle;
}

static void fgd_fini(void *state) {
  struct fgd_state *s = state;
  groups_free(&s->gr, &s->a);
  lsched_score_index_destroy(s->ix);
  lsched_frag_cache_free(&s->fs, &s->a);
  lsched_frag_types_free(&s->fw, &s->a);
  lsched_mem_free(&s->a, s->scratch);
  lsched_mem_free(&s->a, s->tcnt);
  lsched_mem_free(&s->a, s->tsmall);
  lsched_mem_free(&s->a, s->ver);
  lsched_mem_free(&s->a, s->fs_ver);
  lsched_mem_free(&s->a, s->memo);
  lsched_mem_free(&s->a, s->shapes);
  lsched_mem_free(&s->a, s->shape_slot);
  lsched_workload_destroy(s->wl);
  lsched_node_watch_destroy(s->watch);
  lsched_mem_free(&s->a, s->cls);
  lsched_mem_free(&s->a, s->imemo);
  lsched_mem_free(&s->a, s->smemo);
  lsched_mem_free(&s->a, s->stab);
  lsched_mem_free(&s->a, s->st_ver);
  lsched_mem_free(&s->a, s->st_id);
}

/* Every memo entry becomes stale: a fresh version for every node. */
static void memo_invalidate(struct fgd_state *s) {
  if (s->clock > UINT32_MAX - (uint32_t)s->n - 2) {
    memset(s->memo, 0, (size_t)s->n * s->S * sizeof *s->memo);
    if (s->st_ver) /* the versions start again: no node's state is known */
      memset(s->st_ver, 0, (size_t)s->n * sizeof *s->st_ver);
    s->clock = 0;
  }
  for (int i = 0; i < s->n; i++) {
    int fresh = s->fs_ver[i] == s->ver[i];
    s->ver[i] = ++s->clock;
    if (fresh) /* (a cache entry up to date stays so) */
      s->fs_ver[i] = s->ver[i];
  }
}

/* fs was just computed for every node. */
static void cache_fresh(struct fgd_state *s) {
  for (int i = 0; i < s->n; i++)
    s->fs_ver[i] = s->ver[i];
}

/* The size of the state tables for n nodes (log2). */
static int table_bits(size_t n) {
  int b = FGD_SBITS_MIN;
  while (b < FGD_SBITS_MAX && ((size_t)1 << b) < 2 * n)
    b++;
  return b;
}

/* Every state score becomes stale (a new generation). */
static void state_memo_clear(struct fgd_state *s) {
  if (++s->sgen == 0) { /* wrapped: empty the table, start again */
    if (s->smemo)
      memset(s->smemo, 0, ((size_t)1 << s->sbits) * sizeof *s->smemo);
    s->sgen = 1;
  }
}

/* The state table emptied: no node's state known, no score valid. */
static void state_table_clear(struct fgd_state *s) {
  if (s->nst && s->stab) /* (empty: nothing to clear) */
    memset(s->stab, 0, ((size_t)1 << s->sbits) * sizeof *s->stab);
  if (s->nst && s->st_ver)
    memset(s->st_ver, 0, (size_t)s->n * sizeof *s->st_ver);
  s->nst = 0;
  state_memo_clear(s);
}

/* Idle nodes (every CPU milli and every GPU free) of one class (CPU
 * capacity, GPU count, model, mode) score alike for a shape: node_score
 * reads nothing else of the node (memory only decides where it fits, and
 * only nodes that fit are scored). The first FGD_CLASSES classes of the
 * cluster are kept; nodes of other classes and MIG nodes have none. cls:
 * s->n entries (at least 1), taken over. */
static void classes_build(struct fgd_state *s, int16_t *cls) {
  lsched_mem_free(&s->a, s->cls);
  s->cls = cls;
  s->ncls = 0;
  if (s->imemo)
    memset(s->imemo, 0, (size_t)s->icap * FGD_CLASSES * sizeof *s->imemo);
  state_table_clear(s); /* class ids are part of the states */
  for (int i = 0; s->cls && i < s->n; i++) {
    const lsched_node *nd = lsched_view_node(&s->v, i);
    s->cls[i] = -1;
    if (nd->mode != LSCHED_GPU_SHARED && nd->mode != LSCHED_GPU_EXCLUSIVE)
      continue;
    int k = 0;
    for (; k < s->ncls; k++) {
      const struct fgd_class *e = &s->classes[k];
      if (e->cpu_cap == nd->cpu_cap && e->gpu_count == nd->gpu_count &&
          e->model == nd->model && e->mode == (int)nd->mode)
        break;
    }
    if (k == s->ncls) {
      if (k == FGD_CLASSES)
        continue;
      s->classes[k].cpu_cap = nd->cpu_cap;
      s->classes[k].gpu_count = nd->gpu_count;
      s->classes[k].model = nd->model;
      s->classes[k].mode = (int)nd->mode;
      s->ncls++;
    }
    s->cls[i] = (int16_t)k;
  }
}

/* Scratch arrays of one entry per threshold for D thresholds. */
static int scratch_alloc(const lsched_allocator *a, int nthr, uint8_t **cnt,
                         int32_t **small) {
  size_t D = nthr ? (size_t)nthr : 1;
  *cnt = lsched_mem_calloc(a, D, sizeof **cnt);
  *small = lsched_mem_calloc(a, D, sizeof **small);
  if (*cnt && *small)
    return LSCHED_OK;
  lsched_mem_free(a, *cnt);
  lsched_mem_free(a, *small);
  *cnt = NULL;
  *small = NULL;
  return LSCHED_ENOMEM;
}

static int fgd_init(void *state, const lsched_cluster *c) {
  struct fgd_state *s = state;
  lsched_cluster_allocator(c, &s->a);
  s->v = (lsched_view)LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &s->v) != LSCHED_OK)
    return LSCHED_EINVAL;
  s->n = s->v.n;
  size_t n = s->n ? (size_t)s->n : 1;
  s->S = 256;
  while (s->S > 1 && n * s->S > ((size_t)4 << 20))
    s->S /= 2;
  s->sbits = table_bits(n);
  s->scratch = lsched_mem_calloc(&s->a, n, sizeof *s->scratch);
  s->ver = lsched_mem_calloc(&s->a, n, sizeof *s->ver);
  s->fs_ver = lsched_mem_calloc(&s->a, n, sizeof *s->fs_ver);
  s->memo = lsched_mem_calloc(&s->a, n * s->S, sizeof *s->memo);
  int rc = s->scratch && s->ver && s->fs_ver && s->memo ? LSCHED_OK
                                                        : LSCHED_ENOMEM;
  if (rc == LSCHED_OK)
    rc = lsched_frag_cache_init(&s->fs, &s->a, c, &s->fw);
  if (rc == LSCHED_OK)
    rc = scratch_alloc(&s->a, s->fw.nthr, &s->tcnt, &s->tsmall);
  if (rc == LSCHED_OK)
    rc = groups_build(&s->gr, &s->a, &s->fw);
  s->c = c;
  s->use_index = 1;
  if (rc == LSCHED_OK)
    rc = lsched_score_index_create(&s->ix, c, fgd_index_score, s);
  /* A node's score is a function of its class, free CPU and free shares
   * (state_score above): memoised per state by the index as well. */
  if (rc == LSCHED_OK)
    rc = lsched_score_index_state(s->ix);
  if (rc == LSCHED_OK)
    rc = lsched_node_watch_create(&s->watch, c);
  int16_t *cls = NULL;
  if (rc == LSCHED_OK &&
      !(cls = lsched_mem_calloc(&s->a, n, sizeof *cls)))
    rc = LSCHED_ENOMEM;
  if (rc == LSCHED_OK &&
      (!(s->smemo = lsched_mem_calloc(&s->a, (size_t)1 << s->sbits,
                                      sizeof *s->smemo)) ||
       !(s->stab = lsched_mem_calloc(&s->a, (size_t)1 << s->sbits,
                                     sizeof *s->stab)) ||
       !(s->st_ver = lsched_mem_calloc(&s->a, n, sizeof *s->st_ver)) ||
       !(s->st_id = lsched_mem_calloc(&s->a, n, sizeof *s->st_id))))
    rc = LSCHED_ENOMEM;
  if (rc) {
    /* The library frees the state but does not call fini after a failed
     * init: release what was acquired here. */
    lsched_mem_free(&s->a, cls);
    fgd_fini(s);
    return rc;
  }
  memo_invalidate(s);
  cache_fresh(s);
  classes_build(s, cls);
  return LSCHED_OK;
}

static int fgd_set_workload(void *state, const lsched_cluster *c,
                            const lsched_workload *w) {
  struct fgd_state *s = state;
  lsched_frag_types fw;
  lsched_frag_cache fs;
  uint8_t *tcnt;
  int32_t *tsmall;
  lsched_workload *wl;
  int rc = lsched_workload_copy(&wl, w, &s->a);
  if (rc)
    return rc;
  if ((rc = lsched_frag_types_build(&fw, &s->a, c, w))) {
    lsched_workload_destroy(wl);
    return rc;
  }
  if ((rc = lsched_frag_cache_init(&fs, &s->a, c, &fw))) {
    lsched_frag_types_free(&fw, &s->a);
    lsched_workload_destroy(wl);
    return rc;
  }
  struct fgd_groups gr;
  if ((rc = scratch_alloc(&s->a, fw.nthr, &tcnt, &tsmall))) {
    lsched_frag_cache_free(&fs, &s->a);
    lsched_frag_types_free(&fw, &s->a);
    lsched_workload_destroy(wl);
    return rc;
  }
  if ((rc = groups_build(&gr, &s->a, &fw))) {
    lsched_mem_free(&s->a, tcnt);
    lsched_mem_free(&s->a, tsmall);
    lsched_frag_cache_free(&fs, &s->a);
    lsched_frag_types_free(&fw, &s->a);
    lsched_workload_destroy(wl);
    return rc;
  }
  lsched_workload_destroy(s->wl);
  s->wl = wl;
  groups_free(&s->gr, &s->a);
  s->gr = gr;
  lsched_frag_cache_free(&s->fs, &s->a);
  lsched_frag_types_free(&s->fw, &s->a);
  lsched_mem_free(&s->a, s->tcnt);
  lsched_mem_free(&s->a, s->tsmall);
  s->fw = fw;
  s->fs = fs;
  s->tcnt = tcnt;
  s->tsmall = tsmall;
  memo_invalidate(s);
  cache_fresh(s);
  if (s->imemo) /* the scores of idle nodes too */
    memset(s->imemo, 0, (size_t)s->icap * FGD_CLASSES * sizeof *s->imemo);
  state_memo_clear(s); /* and of every state */
  lsched_score_index_reset(s->ix);
  return LSCHED_OK;
}

/* After a change of the node set or of a node's capacity, GPUs or model:
 * what init and set_workload (with the copy of its workload) would build,
 * built anew (the score index follows the change itself; its trees are
 * rebuilt). Everything is allocated before anything is replaced. */
static int fgd_rebuild(struct fgd_state *s, const lsched_cluster *c) {
  lsched_view v = LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &v) != LSCHED_OK)
    return LSCHED_EINVAL;
  size_t n = v.n ? (size_t)v.n : 1;
  uint32_t S = 256;
  while (S > 1 && n * S > ((size_t)4 << 20))
    S /= 2;
  lsched_frag_types fw;
  lsched_frag_cache fs;
  struct fgd_groups gr;
  uint8_t *tcnt = NULL;
  int32_t *tsmall = NULL;
  int *scratch = lsched_mem_calloc(&s->a, n, sizeof *scratch);
  uint32_t *ver = lsched_mem_calloc(&s->a, n, sizeof *ver);
  uint32_t *fs_ver = lsched_mem_calloc(&s->a, n, sizeof *fs_ver);
  struct memo_entry *memo = lsched_mem_calloc(&s->a, n * S, sizeof *memo);
  int16_t *cls = lsched_mem_calloc(&s->a, n, sizeof *cls);
  uint32_t *st_ver = lsched_mem_calloc(&s->a, n, sizeof *st_ver);
  uint32_t *st_id = lsched_mem_calloc(&s->a, n, sizeof *st_id);
  int sbits = table_bits(n);
  struct node_state *stab = NULL;
  struct state_entry *smemo = NULL;
  if (sbits != s->sbits) {
    stab = lsched_mem_calloc(&s->a, (size_t)1 << sbits, sizeof *stab);
    smemo = lsched_mem_calloc(&s->a, (size_t)1 << sbits, sizeof *smemo);
  }
  int rc = scratch && ver && fs_ver && memo && cls && st_ver && st_id &&
                   (sbits == s->sbits || (stab && smemo))
               ? LSCHED_OK
               : LSCHED_ENOMEM;
  int have_fw = 0, have_fs = 0, have_gr = 0;
  if (rc == LSCHED_OK) {
    if (s->wl) {
      rc = lsched_frag_types_build(&fw, &s->a, c, s->wl);
    } else { /* no workload: as init leaves it */
      memset(&fw, 0, sizeof fw);
      fw.version = s->fw.version;
    }
    have_fw = rc == LSCHED_OK;
  }
  if (rc == LSCHED_OK)
    have_fs = (rc = lsched_frag_cache_init(&fs, &s->a, c, &fw)) == LSCHED_OK;
  if (rc == LSCHED_OK)
    rc = scratch_alloc(&s->a, fw.nthr, &tcnt, &tsmall);
  if (rc == LSCHED_OK)
    have_gr = (rc = groups_build(&gr, &s->a, &fw)) == LSCHED_OK;
  if (rc) {
    if (have_gr)
      groups_free(&gr, &s->a);
    if (have_fs)
      lsched_frag_cache_free(&fs, &s->a);
    if (have_fw)
      lsched_frag_types_free(&fw, &s->a);
    lsched_mem_free(&s->a, tcnt);
    lsched_mem_free(&s->a, tsmall);
    lsched_mem_free(&s->a, scratch);
    lsched_mem_free(&s->a, ver);
    lsched_mem_free(&s->a, fs_ver);
    lsched_mem_free(&s->a, memo);
    lsched_mem_free(&s->a, cls);
    lsched_mem_free(&s->a, st_ver);
    lsched_mem_free(&s->a, st_id);
    lsched_mem_free(&s->a, stab);
    lsched_mem_free(&s->a, smemo);
    return rc;
  }
  groups_free(&s->gr, &s->a);
  lsched_frag_cache_free(&s->fs, &s->a);
  lsched_frag_types_free(&s->fw, &s->a);
  lsched_mem_free(&s->a, s->tcnt);
  lsched_mem_free(&s->a, s->tsmall);
  lsched_mem_free(&s->a, s->scratch);
  lsched_mem_free(&s->a, s->ver);
  lsched_mem_free(&s->a, s->fs_ver);
  lsched_mem_free(&s->a, s->memo);
  lsched_mem_free(&s->a, s->st_ver);
  lsched_mem_free(&s->a, s->st_id);
  s->st_ver = st_ver;
  s->st_id = st_id;
  if (sbits != s->sbits) { /* fresh tables: empty (gen 0 is no entry) */
    lsched_mem_free(&s->a, s->stab);
    lsched_mem_free(&s->a, s->smemo);
    s->stab = stab;
    s->smemo = smemo;
    s->sbits = sbits;
    s->nst = 0;
  }
  s->v = v;
  s->n = v.n;
  s->S = S;
  s->gr = gr;
  s->fw = fw;
  s->fs = fs;
  s->tcnt = tcnt;
  s->tsmall = tsmall;
  s->scratch = scratch;
  s->ver = ver;
  s->fs_ver = fs_ver;
  s->memo = memo;
  s->clock = 0;
  memo_invalidate(s);
  cache_fresh(s);
  classes_build(s, cls);
  lsched_score_index_reset(s->ix);
  return LSCHED_OK;
}

/* A node change. A state change moves no score input; a pool's compose
 * or detach (lsched_node_watch: only node's free shares moved) is followed
 * as an alloc on that node is, in O(types); anything else rebuilds. The
 * placements are those of the refresh that followed every node change
 * before this hook (tests/lib/test_node_hook.c). */
static int fgd_node_change(void *state, const lsched_cluster *c, int node,
                           int change) {
  struct fgd_state *s = state;
  if (change == LSCHED_NODE_STATE)
    return LSCHED_OK;
  int free_only = lsched_node_watch_free_only(s->watch, c, node, change);
  if (free_only < 0)
    return free_only;
  if (!free_only)
    return fgd_rebuild(s, c);
  if (s->clock == UINT32_MAX)
    memo_invalidate(s);
  else
    s->ver[node] = ++s->clock; /* fs: brought up to date when next read */
  return LSCHED_OK;
}

/* An allocation or release on p's node: a new version of the node (its
 * memo entries stale); its fs entry is recomputed when a score next reads
 * it (fs_cur), not here: with the score index's state memo most changed
 * nodes are never scored by this policy again before they change again. */
static void fgd_changed(struct fgd_state *s, const lsched_cluster *c,
                        const lsched_placement *p, int sign) {
  (void)c;
  (void)sign;
  if (s->clock == UINT32_MAX)
    memo_invalidate(s);
  else
    s->ver[p->node] = ++s->clock;
}

static void fgd_alloc(void *state, const lsched_cluster *c,
                      const lsched_placement *p) {
  fgd_changed(state, c, p, 1);
}

static void fgd_release(void *state, const lsched_cluster *c,
                        const lsched_placement *p) {
  fgd_changed(state, c, p, -1);
}

/* Interned id of a request shape (CPU, GPU count, share): the score does
 * not depend on memory or the model mask, which only decide feasibility.
 * SHAPE_NONE when the table is full or out of memory (no memo then). */
static uint32_t shape_id(struct fgd_state *s, const lsched_request *req) {
  struct shape_key key = {req->cpu_milli, req->gpu_count, req->gpu_milli};
  uint64_t h = (uint64_t)key.cpu * UINT64_C(0x9E3779B97F4A7C15) ^
               ((uint64_t)(uint32_t)key.k << 32 | (uint32_t)key.milli) *
                   UINT64_C(0xC2B2AE3D27D4EB4F);
  h ^= h >> 29;
  if (s->shape_nslot) {
    for (uint32_t j = (uint32_t)h & (s->shape_nslot - 1);;
         j = (j + 1) & (s->shape_nslot - 1)) {
      uint32_t id = s->shape_slot[j];
      if (!id)
        break;
      const struct shape_key *e = &s->shapes[id - 1];
      if (e->cpu == key.cpu && e->k == key.k && e->milli == key.milli)
        return id - 1;
    }
  }
  if (s->nshapes >= SHAPE_MAX)
    return SHAPE_NONE;
  if (s->nshapes == s->shapes_cap) {
    uint32_t nc = s->shapes_cap ? 2 * s->shapes_cap : 64;
    struct shape_key *ns =
        lsched_mem_realloc(&s->a, s->shapes, (size_t)nc * sizeof *ns);
    if (!ns)
      return SHAPE_NONE;
    s->shapes = ns;
    s->shapes_cap = nc;
  }
  if (2 * (s->nshapes + 1) >= s->shape_nslot) {
    uint32_t nn = s->shape_nslot ? 2 * s->shape_nslot : 256;
    uint32_t *sl = lsched_mem_calloc(&s->a, nn, sizeof *sl);
    if (!sl)
      return SHAPE_NONE;
    for (uint32_t i = 0; i < s->nshapes; i++) {
      const struct shape_key *e = &s->shapes[i];
      uint64_t hh = (uint64_t)e->cpu * UINT64_C(0x9E3779B97F4A7C15) ^
                    ((uint64_t)(uint32_t)e->k << 32 | (uint32_t)e->milli) *
                        UINT64_C(0xC2B2AE3D27D4EB4F);
      hh ^= hh >> 29;
      uint32_t j = (uint32_t)hh & (nn - 1);
      while (sl[j])
        j = (j + 1) & (nn - 1);
      sl[j] = i + 1;
    }
    lsched_mem_free(&s->a, s->shape_slot);
    s->shape_slot = sl;
    s->shape_nslot = nn;
  }
  uint32_t id = s->nshapes++;
  s->shapes[id] = key;
  uint32_t j = (uint32_t)h & (s->shape_nslot - 1);
  while (s->shape_slot[j])
    j = (j + 1) & (s->shape_nslot - 1);
  s->shape_slot[j] = id + 1;
  return id;
}

/* F x W of node `node` after taking GPU share x -> x - d on one GPU and
 * r CPU: the aggregates change only at thresholds between x - d and x. */
static int64_t eval_one_gpu(struct fgd_state *s, const lsched_node *nd,
                            const uint8_t *cnt, const int32_t *small,
                            int64_t cpu_after, int x, int d) {
  const int *thr = s->fw.thr;
  int D = s->fw.nthr, y = x - d;
  for (int j = 0; j < D; j++) {
    int t = thr[j];
    s->tcnt[j] = (uint8_t)(cnt[j] - (x >= t) + (y >= t));
    s->tsmall[j] = small[j] - (x < t ? x : 0) + (y < t ? y : 0);
  }
  return fgd_eval(s, nd->model, cpu_after, s->tcnt, s->tsmall,
                           nd->gpu_free_sum - d);
}

/* The FGD score of a node for req and the GPU it would take (fraction of
 * one GPU), from the cached aggregates. For a fraction of one GPU on a
 * shared node, ties[0 .. *nties) = the distinct free shares whose GPUs
 * give the least increase (the GPU is the lowest-index one with any of
 * them); else *nties = 0. */
static int16_t node_score_ties(struct fgd_state *s, const lsched_cluster *c,
                               int node, const lsched_request *req,
                               int8_t *gpu, int *ties, int *nties) {
  const lsched_node *nd = lsched_view_node(&s->v, node);
  *gpu = -1;
  /* MIG nodes are outside the FGD model (instances, not shares): neutral. */
  if (nd->mode != LSCHED_GPU_SHARED && nd->mode != LSCHED_GPU_EXCLUSIVE)
    return 50;
  if (s->fs_ver[node] != s->ver[node]) { /* changed since fs last held it */
    lsched_frag_cache_update(&s->fs, c, &s->fw, node);
    s->fs_ver[node] = s->ver[node];
  }
  size_t off = (size_t)node * (size_t)s->fs.nthr;
  const uint8_t *cnt = s->fs.cnt + off;
  const int32_t *small = s->fs.small + off;
  int64_t F0 = s->fs.F[node];
  int64_t cpu_after = nd->cpu_free - req->cpu_milli;
  int k = req->gpu_count, d = lsched_node_eff_milli(nd, req);
  int64_t F1;
  *gpu = -1;
  *nties = 0;
  if (k == 0) {
    F1 = fgd_eval(s, nd->model, cpu_after, cnt, small,
                           nd->gpu_free_sum);
  } else if (d == LSCHED_GPU_MILLI) {
    /* k fully free GPUs go to 0: they counted for every threshold. */
    for (int j = 0; j < s->fw.nthr; j++)
      s->tcnt[j] = (uint8_t)(cnt[j] - k);
    F1 = fgd_eval(s, nd->model, cpu_after, s->tcnt, small,
                           nd->gpu_free_sum - (int64_t)k * LSCHED_GPU_MILLI);
  } else if (k == 1 && nd->mode == LSCHED_GPU_SHARED) {
    const int *g = lsched_view_gpus(&s->v, nd);
    int seen[LSCHED_MAX_GPUS_PER_NODE], nseen = 0;
    F1 = INT64_MAX;
    for (int i = 0; i < nd->gpu_count; i++) {
      if (g[i] < d)
        continue;
      int dup = 0;
      for (int q = 0; q < nseen && !dup; q++)
        dup = seen[q] == g[i];
      if (dup) /* same share as a lower-index GPU: same increase */
        continue;
      seen[nseen++] = g[i];
      int64_t f = eval_one_gpu(s, nd, cnt, small, cpu_after, g[i], d);
      if (f < F1) {
        F1 = f;
        *gpu = (int8_t)i;
        *nties = 0;
      }
      if (f == F1)
        ties[(*nties)++] = g[i];
    }
  } else {
    lsched_placement p;
    int gg[LSCHED_MAX_GPUS_PER_NODE];
    if (lsched_pick_gpus(c, node, req, LSCHED_PICK_TIGHTEST, &p) != LSCHED_OK)
      return 0; /* cannot happen: the node fits */
    const int *g = lsched_view_gpus(&s->v, nd);
    for (int i = 0; i < nd->gpu_count; i++)
      gg[i] = g[i] - ((p.gpu_mask >> i) & 1 ? d : 0);
    lsched_frag_aggregate(&s->fw, gg, nd->gpu_count, s->tcnt, s->tsmall);
    F1 = fgd_eval(s, nd->model, cpu_after, s->tcnt, s->tsmall,
                           nd->gpu_free_sum - (int64_t)k * d);
  }
  if (s->fw.W == 0)
    return 50;
  /* sigmoid((F_before - F_after) / 1000) x 100, truncated, as the
   * authors compute it (F in milli-GPU). */
  double x = (double)(F0 - F1) / (double)s->fw.W / 1000.0;
  double sc = 1.0 / (1.0 + exp(-x)) * 100.0;
  return (int16_t)sc;
}

static int16_t node_score(struct fgd_state *s, const lsched_cluster *c,
                          int node, const lsched_request *req, int8_t *gpu) {
  int ties[LSCHED_MAX_GPUS_PER_NODE], nties;
  return node_score_ties(s, c, node, req, gpu, ties, &nties);
}

/* The idle memo's entry for node and shape id sid when the node is idle
 * and has a class (classes_build), else NULL. */
static struct idle_entry *idle_entry(struct fgd_state *s, int node,
                                     uint32_t sid) {
  if (!s->cls || sid == SHAPE_NONE || s->cls[node] < 0 || s->use_types)
    return NULL; /* eval=types, the reference, scores every node itself */
  const lsched_node *nd = lsched_view_node(&s->v, node);
  if (nd->cpu_free != nd->cpu_cap ||
      nd->gpu_free_sum != (int64_t)nd->gpu_count * LSCHED_GPU_MILLI)
    return NULL;
  if (sid >= s->icap) {
    uint32_t nc = s->icap ? s->icap : 64;
    while (nc <= sid)
      nc *= 2;
    struct idle_entry *ni = lsched_mem_realloc(
        &s->a, s->imemo, (size_t)nc * FGD_CLASSES * sizeof *ni);
    if (!ni)
      return NULL;
    memset(ni + (size_t)s->icap * FGD_CLASSES, 0,
           (size_t)(nc - s->icap) * FGD_CLASSES * sizeof *ni);
    s->imemo = ni;
    s->icap = nc;
  }
  return &s->imemo[(size_t)sid * FGD_CLASSES + (size_t)s->cls[node]];
}

/* node_score through the state memo: the entry of (class, free CPU, sorted
 * free shares, sid). The score is a function of that key: F before and
 * after (frag.c's aggregates and fgd_eval) read the node's model, free CPU
 * and the multiset of its free shares, never their order; a fraction of one
 * GPU takes the minimum over the distinct shares, a fraction of several
 * the tightest ones (the same multiset after the take, whatever their
 * order), whole GPUs k fully free ones; class holds the model, mode (the
 * effective share) and capacities. The chosen GPU does depend on the order
 * (ties between shares go to the lower index): the entry keeps which of
 * the sorted shares tie for the least increase, and a hit with want_gpu
 * names the lowest-index GPU holding one of them (node_score's choice);
 * without want_gpu a hit reports none (-1) and fgd_place asks winner_gpu. Nodes without a
 * class or with more than FGD_SGPUS GPUs go to node_score. */
static int16_t state_score(struct fgd_state *s, const lsched_cluster *c,
                           int node, const lsched_request *req, uint32_t sid,
                           int want_gpu, int8_t *gpu) {
  const lsched_node *nd = lsched_view_node(&s->v, node);
  int cl = s->cls ? s->cls[node] : -1;
  if (cl < 0 || nd->gpu_count > FGD_SGPUS)
    return node_score(s, c, node, req, gpu);
  const int *gv = lsched_view_gpus(&s->v, nd);
  uint32_t st;
  if (s->st_ver[node] == s->ver[node]) {
    st = s->st_id[node]; /* unchanged since its state was last looked up */
  } else {
    int16_t g[FGD_SGPUS] = {0};
    for (int i = 0; i < nd->gpu_count; i++) { /* insertion sort */
      int x = gv[i], j = i;
      for (; j > 0 && g[j - 1] > x; j--)
        g[j] = g[j - 1];
      g[j] = (int16_t)x;
    }
    uint64_t h = (uint64_t)nd->cpu_free * UINT64_C(0x9E3779B97F4A7C15) ^
                 (uint64_t)cl;
    for (int i = 0; i < FGD_SGPUS; i++)
      h = (h ^ (uint16_t)g[i]) * UINT64_C(0xC2B2AE3D27D4EB4F);
    h ^= h >> 29;
    const uint32_t mask = ((uint32_t)1 << s->sbits) - 1;
    if (s->nst >= mask / 4 * 3)
      state_table_clear(s);
    for (st = (uint32_t)h & mask;; st = (st + 1) & mask) {
      struct node_state *e = &s->stab[st];
      if (!e->used) {
        e->used = 1;
        e->cpu = nd->cpu_free;
        e->cls = (int16_t)cl;
        memcpy(e->g, g, sizeof g);
        s->nst++;
        break;
      }
      if (e->cpu == nd->cpu_free && e->cls == cl &&
          memcmp(e->g, g, sizeof g) == 0)
        break;
    }
    s->st_ver[node] = s->ver[node];
    s->st_id[node] = st;
  }
  const int16_t *g = s->stab[st].g;
  uint64_t h2 = ((uint64_t)st << 32 | sid) * UINT64_C(0x9E3779B97F4A7C15);
  struct state_entry *e = &s->smemo[h2 >> (64 - s->sbits)];
  if (e->gen == s->sgen && e->st == st && e->sid == sid) {
    *gpu = -1;
    if (want_gpu && e->ties) /* the lowest index holding a tied share */
      for (int i = 0; i < nd->gpu_count && *gpu < 0; i++)
        for (int j = 0; j < nd->gpu_count; j++)
          if ((e->ties >> j & 1) && gv[i] == g[j]) {
            *gpu = (int8_t)i;
            break;
          }
    return e->score;
  }
  int ties[LSCHED_MAX_GPUS_PER_NODE], nties;
  int16_t sc = node_score_ties(s, c, node, req, gpu, ties, &nties);
  e->ties = 0;
  for (int q = 0; q < nties; q++)
    for (int j = 0; j < nd->gpu_count; j++)
      if (g[j] == ties[q])
        e->ties |= (uint8_t)(1u << j);
  e->gen = s->sgen;
  e->st = st;
  e->sid = sid;
  e->score = sc;
  return sc;
}

/* node_score through the memo of (node, shape id sid), then through the
 * idle memo of (class, sid), then through the state memo (state_score). */
static int16_t memo_score(struct fgd_state *s, const lsched_cluster *c,
                          int node, const lsched_request *req, uint32_t sid,
                          int8_t *gpu) {
  struct memo_entry *e =
      sid == SHAPE_NONE ? NULL
                        : &s->memo[(size_t)node * s->S + (sid & (s->S - 1))];
  if (e && e->ver == s->ver[node] && e->shape == sid) {
    *gpu = e->gpu;
    return e->score;
  }
  struct idle_entry *ie = idle_entry(s, node, sid);
  int16_t sc;
  if (ie && ie->valid) {
    sc = ie->score;
    *gpu = ie->gpu;
  } else if (!ie && sid != SHAPE_NONE && !s->use_types) {
    sc = state_score(s, c, node, req, sid, 0, gpu);
  } else {
    sc = node_score(s, c, node, req, gpu);
    if (ie) {
      ie->score = sc;
      ie->gpu = *gpu;
      ie->valid = 1;
    }
  }
  if (e) {
    e->ver = s->ver[node];
    e->shape = sid;
    e->score = sc;
    e->gpu = *gpu;
  }
  return sc;
}

/* The shape id of req, remembered for the index's run of one shape. */
static uint32_t index_sid(struct fgd_state *s, const lsched_request *req) {
  if (!s->last_sid_ok || s->last_key.cpu != req->cpu_milli ||
      s->last_key.k != req->gpu_count || s->last_key.milli != req->gpu_milli) {
    s->last_key.cpu = req->cpu_milli;
    s->last_key.k = req->gpu_count;
    s->last_key.milli = req->gpu_milli;
    s->last_sid = shape_id(s, req);
    s->last_sid_ok = 1;
  }
  return s->last_sid;
}

/* The index's score: the memoised node_score (a tree build right after a
 * scan of the same shape, or after a reset, reuses the scan's scores). */
static int64_t fgd_index_score(const lsched_view *v, int node,
                               const lsched_request *req, void *ctx) {
  (void)v;
  struct fgd_state *s = ctx;
  (void)index_sid(s, req);
  int8_t gpu;
  return memo_score(s, s->c, node, req, s->last_sid, &gpu);
}

/* The GPU node_score chooses on node best for req: -1 unless req is a
 * fraction of one GPU on a shared node; then through the state memo. */
static int8_t winner_gpu(struct fgd_state *s, const lsched_cluster *c,
                         int best, const lsched_request *req, uint32_t sid) {
  const lsched_node *nd = lsched_view_node(&s->v, best);
  int8_t gpu = -1;
  if (req->gpu_count != 1 || nd->mode != LSCHED_GPU_SHARED ||
      lsched_node_eff_milli(nd, req) == LSCHED_GPU_MILLI)
    return -1;
  if (sid != SHAPE_NONE && !s->use_types)
    (void)state_score(s, c, best, req, sid, 1, &gpu);
  else
    (void)node_score(s, c, best, req, &gpu);
  return gpu;
}

static int fgd_set_param(void *state, const char *key, const char *value) {
  struct fgd_state *s = state;
  if (strcmp(key, "eval") == 0) {
    if (strcmp(value, "grouped") && strcmp(value, "types"))
      return LSCHED_EINVAL;
    s->use_types = value[0] == 't'; /* the same values: memo kept */
    return LSCHED_OK;
  }
  return lsched_builtin_index_param(&s->use_index, key, value);
}

static int fgd_place(void *state, const lsched_cluster *c,
                     const lsched_request *req, lsched_placement *out) {
  struct fgd_state *s = state;
  int best = -1;
  int8_t best_gpu = -1;
  if (s->use_index) {
    int rc = lsched_score_index_best(s->ix, req, &best);
    if (rc)
      return rc;
    best_gpu = winner_gpu(s, c, best, req, index_sid(s, req));
    return fgd_finish(s, c, req, best, best_gpu, out);
  }
  int m = lsched_collect_fits(c, req, s->scratch);
  if (m == 0)
    return LSCHED_ENOFIT;
  uint32_t sid = shape_id(s, req);
  int16_t best_score = -1;
  for (int i = 0; i < m; i++) {
    int node = s->scratch[i];
    int8_t gpu;
    int16_t sc = memo_score(s, c, node, req, sid, &gpu);
    if (sc > best_score) { /* strict: ties stay with the earliest node */
      best_score = sc;
      best = node;
      best_gpu = gpu;
    }
  }
  best_gpu = winner_gpu(s, c, best, req, sid);
  return fgd_finish(s, c, req, best, best_gpu, out);
}

/* The placement on node best (GPU best_gpu for a fraction of one GPU). */
static int fgd_finish(struct fgd_state *s, const lsched_cluster *c,
                      const lsched_request *req, int best, int8_t best_gpu,
                      lsched_placement *out) {
  const lsched_node *nd = lsched_view_node(&s->v, best);
  if (req->gpu_count == 1 && best_gpu >= 0 && nd->mode == LSCHED_GPU_SHARED) {
    memset(out, 0, sizeof *out);
    out->node = best;
    out->cpu_milli = req->cpu_milli;
    out->memory_mib = req->memory_mib;
    out->gpu_count = 1;
    out->gpu_milli = lsched_node_eff_milli(nd, req);
    out->gpu_mask = UINT64_C(1) << best_gpu;
    return LSCHED_OK;
  }
  return lsched_pick_gpus(c, best, req, LSCHED_PICK_TIGHTEST, out);
}

const lsched_policy_ops lsched_builtin_fgd = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "fgd",
    .description = "least increase of node fragmentation under the target "
                   "workload (FGD)",
    .state_size = sizeof(struct fgd_state),
    .init = fgd_init,
    .fini = fgd_fini,
    .place = fgd_place,
    .flags = LSCHED_POLICY_ANY_FIT,
    .on_alloc = fgd_alloc,
    .on_release = fgd_release,
    .set_workload = fgd_set_workload,
    .set_param = fgd_set_param,
    .on_node_change = fgd_node_change,
};
