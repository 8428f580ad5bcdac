/*
 * compose-aware: placement on clusters with composable GPU pools
 * (libsched.h "Composable GPU pools"; policies/README.md). Over every node
 * that fits, it takes the one with the smallest
 *
 *   (composed, pool GPUs used, stranded, chassis GPUs left, position)
 *
 * where, for a request of k GPUs of d milli each (d = 1000 on exclusive
 * nodes), the node gives its local GPUs first, then its attached idle pool
 * GPUs, and composes the rest from its chassis: composed = the GPUs it
 * would attach, pool GPUs used = attached + composed ones, stranded = what
 * the placement leaves bound to this host, weighed as best-fit weighs
 * leftovers: 1/2 x CPU left / largest node CPU + 1/2 x free milli left on
 * its local and attached GPUs / (1000 x largest node GPU count) (a
 * chassis' unattached GPUs are bound to no host and not counted), chassis
 * GPUs left = the chassis' unattached GPUs after composing (0 when nothing
 * is composed: the fullest chassis is composed from first, keeping the
 * others whole). On the node, the GPUs taken are the tightest local ones
 * that fit, then the tightest attached ones, then the lowest open slots.
 * MIG requests and requests without GPUs go to the first node that fits
 * (first-fit). O(fitting nodes x GPUs per node).
 */
#include "builtin.h"

#include <stdint.h>

struct ca_state {
  lsched_view v;
};

static int ca_init(void *state, const lsched_cluster *c) {
  struct ca_state *s = state;
  s->v = (lsched_view)LSCHED_VIEW_INIT;
  return lsched_cluster_view(c, &s->v);
}

/* A node change: the view is taken again (all that init keeps). */
static int ca_node_change(void *state, const lsched_cluster *c, int node,
                          int change) {
  (void)node;
  (void)change;
  return ca_init(state, c);
}

typedef struct ca_eval {
  int64_t composed, pooled, left;
  double stranded;
  uint64_t mask;
} ca_eval;

/* The k best GPUs of mask m on g that fit d, tightest first (ties: lower
 * index), into *out; returns how many it took (<= k). */
static int take(const int *g, uint64_t m, int d, int k, uint64_t *out) {
  int got = 0;
  while (got < k) {
    int best = -1;
    for (uint64_t r = m & ~*out; r; r &= r - 1) {
      int i = __builtin_ctzll(r);
      if (g[i] >= d && (best < 0 || g[i] < g[best]))
        best = i;
    }
    if (best < 0)
      break;
    *out |= UINT64_C(1) << best;
    got++;
  }
  return got;
}

static int eval(const lsched_cluster *c, const lsched_view *v, int node,
                const lsched_request *req, ca_eval *e) {
  const lsched_node *nd = lsched_view_node(v, node);
  const int *g = lsched_view_gpus(v, nd);
  const int k = req->gpu_count;
  const int d = lsched_effective_milli(c, node, req);
  uint64_t slots = 0, att = 0;
  int pool = lsched_pool_of_node(c, node, &slots, &att);
  uint64_t all = nd->gpu_count >= 64 ? ~UINT64_C(0)
                                     : (UINT64_C(1) << nd->gpu_count) - 1;
  uint64_t local = all & ~slots, open = slots & ~att;
  e->mask = 0;
  int got = take(g, local, d, k, &e->mask);
  int from_att = take(g, att, d, k - got, &e->mask);
  int composed = 0;
  for (uint64_t r = open; r && got + from_att + composed < k; r &= r - 1) {
    int i = __builtin_ctzll(r);
    if (g[i] >= d) {
      e->mask |= UINT64_C(1) << i;
      composed++;
    }
  }
  if (got + from_att + composed < k)
    return 0; /* cannot happen when the node fits */
  e->composed = composed;
  e->pooled = from_att + composed;
  int64_t free_bound = 0;
  for (uint64_t r = local | att; r; r &= r - 1)
    free_bound += g[__builtin_ctzll(r)];
  free_bound -= (int64_t)d * (got + from_att);
  /* What the placement leaves bound to this host, CPU and GPU as best-fit
   * weighs them: a chassis' unattached GPUs are nobody's. */
  double cpu_left = (double)(nd->cpu_free - req->cpu_milli);
  e->stranded =
      0.5 * (v->max_cpu_cap > 0 ? cpu_left / (double)v->max_cpu_cap : 0) +
      0.5 * (v->max_gpu_count > 0
                 ? (double)free_bound / (1000.0 * v->max_gpu_count)
                 : 0);
  e->left = 0;
  if (composed > 0 && pool >= 0) {
    lsched_pool_info pi = LSCHED_POOL_INFO_INIT;
    if (lsched_cluster_pool_info(c, pool, &pi) == LSCHED_OK)
      e->left = pi.free - composed;
  }
  return 1;
}

static int better(const ca_eval *a, const ca_eval *b) {
  if (a->composed != b->composed)
    return a->composed < b->composed;
  if (a->pooled != b->pooled)
    return a->pooled < b->pooled;
  if (a->stranded != b->stranded)
    return a->stranded < b->stranded;
  return a->left < b->left;
}

static int ca_place(void *state, const lsched_cluster *c,
                    const lsched_request *req, lsched_placement *out) {
  const struct ca_state *s = state;
  int p = lsched_next_fit(c, req, 0);
  if (p < 0)
    return LSCHED_ENOFIT;
  if (req->gpu_count == 0 || (req->version >= 2 && req->mig_kind != 0))
    return lsched_pick_gpus(c, s->v.order[p], req, LSCHED_PICK_LOWEST, out);
  int best = -1;
  ca_eval be = {0, 0, 0, 0, 0}, e;
  for (; p >= 0; p = lsched_next_fit(c, req, p + 1)) {
    int node = s->v.order[p];
    if (eval(c, &s->v, node, req, &e) && (best < 0 || better(&e, &be))) {
      best = node;
      be = e;
    }
  }
  if (best < 0)
    return LSCHED_ENOFIT;
  /* The shape and share from the library, the GPUs chosen here. */
  int rc = lsched_pick_gpus(c, best, req, LSCHED_PICK_LOWEST, out);
  if (rc == LSCHED_OK)
    out->gpu_mask = be.mask;
  return rc;
}

const lsched_policy_ops lsched_builtin_compose_aware = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "compose-aware",
    .description = "composable pools: local GPUs first, compose only what is "
                   "missing, fewest stranded GPUs",
    .state_size = sizeof(struct ca_state),
    .init = ca_init,
    .place = ca_place,
    .on_node_change = ca_node_change,
};
