/*
 * gpu-clustering (the FGD simulator's GpuClusteringScore, after Gandiva's
 * affinity clustering). Requests are tagged no-GPU, share-GPU (one GPU, a
 * fraction of it) or k-GPU (k whole GPUs); a node's tag set is the tags of
 * the GPU requests it holds now. CPU-only requests score 0. For a GPU
 * request, base = floor(25 x (B - free GPU milli) / B) with B the largest
 * node's GPU capacity in milli (8000 on the Alibaba cluster, the authors'
 * constant), plus
 *   +75 if the node holds only this tag, +50 this tag and others,
 *   +25 no GPU request at all, +0 only other tags.
 * The highest score wins, ties to the earliest node in the visit order; no
 * normalisation. GPUs: the least free share that fits; whole GPUs: the
 * lowest-index free ones.
 *
 * Tags follow the placement's effective share: a fractional request on an
 * exclusive node takes a whole GPU and counts as 1-GPU there (the authors'
 * cluster has no exclusive nodes). A fractional request over several GPUs
 * (which their simulator rejects) counts as k-GPU.
 *
 * Per-node tag counts are kept in on_alloc/on_release: node i has slots
 * [gpu_off + i, gpu_off + i + G] (slot 0 = share, slot k = k-GPU), so the
 * index costs (GPUs + nodes) counters. The node comes from the score
 * index (lsched_score_index, O(log n) per node changed): the tags of node x
 * change only in on_alloc/on_release of x, which run before the index
 * re-scores x. Parameter index=off scans the m candidates, O(m).
 */
#include "builtin.h"

#include <string.h>

struct clu_state {
  lsched_allocator a;
  lsched_view v;
  int *scratch;
  uint32_t *tags;     /* per-node tag counters, see above */
  uint16_t *distinct; /* per node: tags with a non-zero count */
  size_t n_cap, tags_cap; /* entries held by scratch and distinct; tags */
  lsched_score_index *ix;
  int use_index;
};

static int64_t clu_score(const lsched_view *v, int node,
                         const lsched_request *req, void *ctx);

static int clu_init(void *state, const lsched_cluster *c) {
  struct clu_state *s = state;
  lsched_cluster_allocator(c, &s->a);
  s->v = (lsched_view)LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &s->v) != LSCHED_OK)
    return LSCHED_EINVAL;
  size_t n = s->v.n ? (size_t)s->v.n : 1;
  s->n_cap = n;
  s->tags_cap = (size_t)s->v.ngpus + n;
  s->scratch = lsched_mem_calloc(&s->a, n, sizeof(int));
  s->tags = lsched_mem_calloc(&s->a, s->tags_cap, sizeof *s->tags);
  s->distinct = lsched_mem_calloc(&s->a, n, sizeof *s->distinct);
  s->use_index = 1;
  int rc = s->scratch && s->tags && s->distinct
               ? lsched_score_index_create(&s->ix, c, clu_score, s)
               : LSCHED_ENOMEM;
  if (rc == LSCHED_OK) /* an idle node holds no GPU request: no tags */
    rc = lsched_score_index_idle(s->ix);
  if (rc == LSCHED_OK)
    return LSCHED_OK;
  /* No fini after a failed init: free here. */
  lsched_score_index_destroy(s->ix);
  lsched_mem_free(&s->a, s->scratch);
  lsched_mem_free(&s->a, s->tags);
  lsched_mem_free(&s->a, s->distinct);
  return rc;
}

static void clu_fini(void *state) {
  struct clu_state *s = state;
  lsched_score_index_destroy(s->ix);
  lsched_mem_free(&s->a, s->scratch);
  lsched_mem_free(&s->a, s->tags);
  lsched_mem_free(&s->a, s->distinct);
}

static int clu_set_param(void *state, const char *key, const char *value) {
  struct clu_state *s = state;
  return lsched_builtin_index_param(&s->use_index, key, value);
}

/* A node change (not a state change): the view is taken again, the arrays
 * follow the node and GPU counts, and every tag count starts again from
 * zero, as the refresh that followed every node change before this hook
 * did (so a run's placements, pooled clusters' included, stay what they
 * were); every score may then have changed: the index is reset. O(nodes +
 * GPUs) of zeroing instead of a new state and index. */
static int clu_node_change(void *state, const lsched_cluster *c, int node,
                           int change) {
  struct clu_state *s = state;
  (void)node;
  if (change == LSCHED_NODE_STATE)
    return LSCHED_OK;
  if (lsched_cluster_view(c, &s->v) != LSCHED_OK)
    return LSCHED_EINVAL;
  size_t n = s->v.n ? (size_t)s->v.n : 1, nt = (size_t)s->v.ngpus + n;
  if (n > s->n_cap) {
    int *ns = lsched_mem_realloc(&s->a, s->scratch, n * sizeof *ns);
    if (!ns)
      return LSCHED_ENOMEM;
    s->scratch = ns;
    uint16_t *nd = lsched_mem_realloc(&s->a, s->distinct, n * sizeof *nd);
    if (!nd)
      return LSCHED_ENOMEM;
    s->distinct = nd;
    s->n_cap = n;
  }
  if (nt > s->tags_cap) {
    uint32_t *nt_ = lsched_mem_realloc(&s->a, s->tags, nt * sizeof *nt_);
    if (!nt_)
      return LSCHED_ENOMEM;
    s->tags = nt_;
    s->tags_cap = nt;
  }
  memset(s->tags, 0, nt * sizeof *s->tags);
  memset(s->distinct, 0, n * sizeof *s->distinct);
  lsched_score_index_reset(s->ix);
  return LSCHED_OK;
}

/* Tag slot of a GPU share on a node: 0 = share-GPU, k = k-GPU. */
static int tag_of(int k, int milli) {
  return k == 1 && milli < LSCHED_GPU_MILLI ? 0 : k;
}

static uint32_t *node_tags(const struct clu_state *s, int node) {
  return s->tags + lsched_view_node(&s->v, node)->gpu_off + node;
}

static void clu_change(void *state, const lsched_cluster *c,
                       const lsched_placement *p, int delta) {
  (void)c;
  struct clu_state *s = state;
  if (p->gpu_count == 0)
    return;
  uint32_t *t = &node_tags(s, p->node)[tag_of(p->gpu_count, p->gpu_milli)];
  if (delta > 0) {
    if ((*t)++ == 0)
      s->distinct[p->node]++;
  } else if (*t > 0 && --(*t) == 0) {
    s->distinct[p->node]--;
  }
}

static void clu_alloc(void *state, const lsched_cluster *c,
                      const lsched_placement *p) {
  clu_change(state, c, p, 1);
}

static void clu_release(void *state, const lsched_cluster *c,
                        const lsched_placement *p) {
  clu_change(state, c, p, -1);
}

static int64_t clu_score(const lsched_view *v, int node,
                         const lsched_request *req, void *ctx) {
  const struct clu_state *s = ctx;
  if (req->gpu_count == 0)
    return 0;
  const lsched_node *nd = lsched_view_node(v, node);
  int64_t B = (int64_t)(v->max_gpu_count > 0 ? v->max_gpu_count : 1) *
              LSCHED_GPU_MILLI;
  int64_t base = 25 * (B - nd->gpu_free_sum) / B;
  int tag = tag_of(req->gpu_count, lsched_node_eff_milli(nd, req));
  int has = node_tags(s, node)[tag] > 0;
  int distinct = s->distinct[node];
  if (has)
    return base + (distinct == 1 ? 75 : 50);
  return base + (distinct == 0 ? 25 : 0);
}

static int clu_place(void *state, const lsched_cluster *c,
                     const lsched_request *req, lsched_placement *out) {
  struct clu_state *s = state;
  int node;
  int rc = s->use_index
               ? lsched_score_index_best(s->ix, req, &node)
               : lsched_best_raw_score(c, req, clu_score, s, s->scratch, &node);
  if (rc)
    return rc;
  return lsched_pick_gpus(c, node, req, LSCHED_PICK_TIGHTEST, out);
}

const lsched_policy_ops lsched_builtin_gpu_clustering = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "gpu-clustering",
    .description = "nodes holding the same kind of GPU request (share, "
                   "k-GPU) first; tightest GPU",
    .state_size = sizeof(struct clu_state),
    .init = clu_init,
    .fini = clu_fini,
    .place = clu_place,
    .flags = LSCHED_POLICY_ANY_FIT,
    .on_alloc = clu_alloc,
    .on_release = clu_release,
    .set_param = clu_set_param,
    .on_node_change = clu_node_change,
};
