/* The release log (rlog.h). */
#include "rlog.h"

#include <stdlib.h>

#define SIM_RLOG_MAX 65536 /* a longer log is cleared */

/* Forgets everything: marks taken before are void. */
static void clear(sim_rlog *l) {
  if (++l->gen == 0)
    l->gen = 1;
  l->n = l->noted = 0;
}

static void on_release(void *user, const lsched_cluster *c,
                       const lsched_placement *p, int trial) {
  (void)c;
  sim_rlog *l = user;
  if (trial)
    return;
  if (l->n == SIM_RLOG_MAX)
    clear(l);
  /* The same node again, with no mark taken since its last entry. */
  if (l->n > l->noted && l->node[l->n - 1] == (uint32_t)p->node)
    return;
  if (l->n == l->cap) {
    uint32_t nc = l->cap ? 2 * l->cap : 256;
    uint32_t *nn = realloc(l->node, (size_t)nc * sizeof *nn);
    if (!nn) {
      clear(l); /* what is not logged is not known */
      return;
    }
    l->node = nn;
    l->cap = nc;
  }
  l->node[l->n++] = (uint32_t)p->node;
}

/* A node that may have gained room without a release. */
static void on_node_change(void *user, const lsched_cluster *c, int node,
                           int change) {
  (void)node;
  (void)change;
  sim_rlog *l = user;
  (void)lsched_cluster_view(c, &l->v); /* cannot fail: c and v are set */
  clear(l);
}

static const lsched_observer rlog_obs = {
    .version = LSCHED_OBSERVER_VERSION,
    .on_release = on_release,
    .on_node_change = on_node_change,
};

int sim_rlog_open(sim_rlog **out, lsched_cluster *c) {
  sim_rlog *l = calloc(1, sizeof *l);
  *out = NULL;
  if (!l)
    return -1;
  l->c = c;
  l->gen = 1;
  l->v = (lsched_view)LSCHED_VIEW_INIT;
  if (lsched_cluster_view(c, &l->v) != LSCHED_OK ||
      lsched_cluster_add_observer(c, &rlog_obs, l) != LSCHED_OK) {
    free(l);
    return -1;
  }
  *out = l;
  return 0;
}

void sim_rlog_close(sim_rlog *l) {
  if (!l)
    return;
  lsched_cluster_remove_observer(l->c, &rlog_obs, l);
  free(l->node);
  free(l);
}

int sim_rlog_since(const sim_rlog *l, sim_rlog_mark m, const uint32_t **nodes) {
  if (!l || m.gen != l->gen || l->n - m.at > SIM_RLOG_TEST)
    return -1;
  *nodes = l->node + m.at;
  return (int)(l->n - m.at);
}
