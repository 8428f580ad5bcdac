/*
 * Composable GPU pools (<libsched/libsched.h>, "Composable GPU pools").
 *
 * A host's composable slots are its last S GPU indices. Each slot is
 * attached (its free milli is the pool GPU's), open (free 1000: the pool
 * could attach a GPU there now) or blocked (free 0). The open slots of
 * host h are always the lowest-indexed min(pool free, S - attached(h))
 * non-attached ones: the state is a function of the attached masks and
 * the attached GPUs' shares, so an alloc that composes followed by its
 * release (which detaches) restores every byte. The fit tests, the index
 * and every policy read gpu_free only, so they see composable capacity
 * without knowing about pools.
 */
#include "abi.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

static int popc(uint64_t x) {
  int n = 0;
  for (; x; x &= x - 1)
    n++;
  return n;
}

/* The canonical open mask of host ph in pool pl. */
static uint64_t want_open(const struct lsched__pool *pl,
                          const struct lsched__pool_host *ph) {
  int left = pl->slots - popc(ph->attached);
  int t = pl->free < left ? pl->free : left;
  uint64_t avail = ph->slots & ~ph->attached, open = 0;
  for (; t > 0 && avail; t--) {
    uint64_t low = avail & (~avail + 1);
    open |= low;
    avail &= ~low;
  }
  return open;
}

/* Brings host node h's open slots to the canonical mask; refreshes and
 * tells when anything moved. */
static void set_open(lsched_cluster *c, int h) {
  struct lsched__pool_host *ph = &c->phost[h];
  const struct lsched__pool *pl = &c->pools[ph->pool];
  uint64_t w = want_open(pl, ph);
  if (w == ph->open)
    return;
  int *g = c->gpu_free + c->nodes[h].gpu_off;
  for (uint64_t m = ph->open & ~w; m; m &= m - 1)
    g[__builtin_ctzll(m)] = 0; /* open -> blocked */
  for (uint64_t m = w & ~ph->open; m; m &= m - 1)
    g[__builtin_ctzll(m)] = LSCHED_GPU_MILLI; /* blocked -> open */
  ph->open = w;
  lsched__node_changed(c, h);
  if (c->nattached > 0 || c->nobservers > 0)
    (void)lsched__node_changed_notify(c, h, LSCHED_NODE_UPDATED);
}

static void reopen_pool(lsched_cluster *c, int pool) {
  const struct lsched__pool *pl = &c->pools[pool];
  for (int i = 0; i < pl->nhosts; i++)
    set_open(c, pl->hosts[i]);
}

void lsched__pool_after_alloc(lsched_cluster *c, const lsched_placement *p) {
  struct lsched__pool_host *ph = &c->phost[p->node];
  uint64_t taken = p->gpu_mask & ph->open;
  if (!taken)
    return;
  ph->attached |= taken;
  ph->open &= ~taken;
  c->pools[ph->pool].free -= popc(taken);
  reopen_pool(c, ph->pool);
}

/* Detaches the fully free attached slots of d on host h. */
static int detach(lsched_cluster *c, int h, uint64_t d) {
  struct lsched__pool_host *ph = &c->phost[h];
  const int *g = c->gpu_free + c->nodes[h].gpu_off;
  uint64_t go = 0;
  for (uint64_t m = d & ph->attached; m; m &= m - 1) {
    int i = __builtin_ctzll(m);
    if (g[i] == LSCHED_GPU_MILLI)
      go |= UINT64_C(1) << i;
  }
  if (!go)
    return 0;
  /* A detached slot reads as open (1000) until set_open says otherwise. */
  ph->attached &= ~go;
  ph->open |= go;
  c->pools[ph->pool].free += popc(go);
  reopen_pool(c, ph->pool);
  return popc(go);
}

void lsched__pool_after_release(lsched_cluster *c, const lsched_placement *p) {
  struct lsched__pool_host *ph = &c->phost[p->node];
  if (!(p->gpu_mask & ph->attached))
    return;
  if (c->pools[ph->pool].keep_attached && c->trial_depth == 0)
    return;
  (void)detach(c, p->node, p->gpu_mask);
}

int lsched_pool_detach(lsched_cluster *c, int node, uint64_t mask) {
  if (!c)
    return LSCHED_EINVAL;
  if (node < 0 || node >= c->n || lsched__pool_host_of(c, node) < 0)
    return LSCHED_ENOENT;
  return detach(c, node, mask);
}

static int grow_phost(lsched_cluster *c) {
  if (c->npool_nodes >= c->n)
    return LSCHED_OK;
  struct lsched__pool_host *nh =
      lsched__realloc(&c->a, c->phost, (size_t)c->n * sizeof *nh);
  if (!nh)
    return LSCHED_ENOMEM;
  for (int i = c->npool_nodes; i < c->n; i++) {
    memset(&nh[i], 0, sizeof nh[i]);
    nh[i].pool = -1;
  }
  c->phost = nh;
  c->npool_nodes = c->n;
  return LSCHED_OK;
}

#define POOL_ERR(code, ...)                                                  \
  do {                                                                       \
    snprintf(c->errmsg, sizeof c->errmsg, __VA_ARGS__);                      \
    return (code);                                                           \
  } while (0)

int lsched_cluster_add_pool(lsched_cluster *c, const lsched_pool_spec *spec,
                            int *pool_out) {
  if (!c || !spec)
    return LSCHED_EINVAL;
  if (spec->version == 0 || spec->version > LSCHED_POOL_SPEC_VERSION)
    return LSCHED_EVERSION;
  if (spec->gpus < 1 || spec->gpus > 1000000)
    POOL_ERR(LSCHED_EINVAL, "add_pool: gpus %d outside 1..1000000",
             spec->gpus);
  if (spec->max_per_host < 1)
    POOL_ERR(LSCHED_EINVAL, "add_pool: max_per_host %d below 1",
             spec->max_per_host);
  if (spec->nhosts < 1 || !spec->hosts)
    POOL_ERR(LSCHED_EINVAL, "add_pool: no hosts");
  const int S =
      spec->gpus < spec->max_per_host ? spec->gpus : spec->max_per_host;
  if (S > LSCHED_MAX_GPUS_PER_NODE)
    POOL_ERR(LSCHED_EINVAL, "add_pool: %d slots per host, at most %d", S,
             LSCHED_MAX_GPUS_PER_NODE);
  for (int i = 0; i < spec->nhosts; i++) {
    int h = spec->hosts[i];
    if (h < 0 || h >= c->n || c->nodes[h].state == LSCHED_NODE_REMOVED)
      POOL_ERR(LSCHED_ENOENT, "add_pool: host %d does not exist", h);
    const struct lsched_node *nd = &c->nodes[h];
    if (nd->gpu_count < S || nd->mode == LSCHED_GPU_MIG)
      POOL_ERR(LSCHED_ESTATE,
               "add_pool: host %d has %d GPUs%s; it needs its %d composable "
               "slots as its last GPUs, not MIG",
               h, nd->gpu_count, nd->mode == LSCHED_GPU_MIG ? " (MIG)" : "",
               S);
    if (nd->cpu_free != nd->cpu_cap || nd->mem_free != nd->mem_cap ||
        nd->gpu_free_sum != (int64_t)nd->gpu_count * LSCHED_GPU_MILLI)
      POOL_ERR(LSCHED_ESTATE, "add_pool: host %d is not idle", h);
    if (lsched__pool_host_of(c, h) >= 0)
      POOL_ERR(LSCHED_ESTATE, "add_pool: host %d is already in pool %d", h,
               c->phost[h].pool);
    for (int j = 0; j < i; j++)
      if (spec->hosts[j] == h)
        POOL_ERR(LSCHED_EINVAL, "add_pool: host %d listed twice", h);
  }
  int rc = grow_phost(c);
  if (rc)
    return rc;
  if (c->npools == c->pools_cap) {
    int nc = c->pools_cap ? 2 * c->pools_cap : 4;
    struct lsched__pool *np =
        lsched__realloc(&c->a, c->pools, (size_t)nc * sizeof *np);
    if (!np)
      return LSCHED_ENOMEM;
    c->pools = np;
    c->pools_cap = nc;
  }
  int *hosts = lsched__alloc(&c->a, (size_t)spec->nhosts * sizeof *hosts);
  if (!hosts)
    return LSCHED_ENOMEM;
  memcpy(hosts, spec->hosts, (size_t)spec->nhosts * sizeof *hosts);
  int id = c->npools++;
  struct lsched__pool *pl = &c->pools[id];
  pl->gpus = pl->free = spec->gpus;
  pl->slots = S;
  pl->max_per_host = spec->max_per_host;
  pl->keep_attached = spec->keep_attached != 0;
  pl->hosts = hosts;
  pl->nhosts = spec->nhosts;
  for (int i = 0; i < spec->nhosts; i++) {
    struct lsched__pool_host *ph = &c->phost[hosts[i]];
    int k = c->nodes[hosts[i]].gpu_count;
    ph->pool = id;
    ph->slots = (S == 64 ? ~UINT64_C(0) : ((UINT64_C(1) << S) - 1))
                << (k - S);
    ph->attached = 0;
    ph->open = ph->slots; /* idle: every slot reads 1000 */
    set_open(c, hosts[i]); /* no change: S <= gpus */
  }
  c->errmsg[0] = '\0';
  if (pool_out)
    *pool_out = id;
  return LSCHED_OK;
}

int lsched_cluster_pool_count(const lsched_cluster *c) {
  return c ? c->npools : 0;
}

int lsched_cluster_pool_info(const lsched_cluster *c, int pool,
                             lsched_pool_info *out) {
  if (!c || !out || out->version == 0)
    return LSCHED_EINVAL;
  if (pool < 0 || pool >= c->npools)
    return LSCHED_ENOENT;
  static const size_t sizes[] = {0, sizeof(lsched_pool_info)};
  const struct lsched__pool *pl = &c->pools[pool];
  lsched_pool_info f;
  memset(&f, 0, sizeof f);
  f.version = out->version;
  f.gpus = pl->gpus;
  f.free = pl->free;
  f.slots = pl->slots;
  f.nhosts = pl->nhosts;
  f.attached = pl->gpus - pl->free;
  lsched__fill_out(out, &f, sizes, 2);
  return LSCHED_OK;
}

int lsched_pool_of_node(const lsched_cluster *c, int node, uint64_t *slots,
                        uint64_t *attached) {
  int pool = c && node >= 0 && node < c->n ? lsched__pool_host_of(c, node)
                                           : -1;
  if (slots)
    *slots = pool >= 0 ? c->phost[node].slots : 0;
  if (attached)
    *attached = pool >= 0 ? c->phost[node].attached : 0;
  return pool;
}

void lsched__pool_totals(const lsched_cluster *c, int *gpus,
                         int64_t *milli_free) {
  for (int p = 0; p < c->npools; p++) {
    const struct lsched__pool *pl = &c->pools[p];
    *gpus += pl->gpus - pl->nhosts * pl->slots;
    *milli_free += (int64_t)pl->free * LSCHED_GPU_MILLI;
    for (int i = 0; i < pl->nhosts; i++)
      *milli_free -=
          (int64_t)popc(c->phost[pl->hosts[i]].open) * LSCHED_GPU_MILLI;
  }
}

void lsched__pool_free_all(lsched_cluster *c) {
  for (int p = 0; p < c->npools; p++)
    lsched__free(&c->a, c->pools[p].hosts);
  lsched__free(&c->a, c->pools);
  lsched__free(&c->a, c->phost);
  c->pools = NULL;
  c->phost = NULL;
  c->npools = c->pools_cap = c->npool_nodes = 0;
}

int lsched__pool_check(const lsched_cluster *c, char *why, size_t n) {
  for (int p = 0; p < c->npools; p++) {
    const struct lsched__pool *pl = &c->pools[p];
    int attached = 0;
    for (int i = 0; i < pl->nhosts; i++) {
      int h = pl->hosts[i];
      if (lsched__pool_host_of(c, h) != p) {
        snprintf(why, n, "pool %d: host %d does not name it", p, h);
        return LSCHED_ESTATE;
      }
      const struct lsched__pool_host *ph = &c->phost[h];
      int na = popc(ph->attached);
      if ((ph->attached | ph->open) & ~ph->slots ||
          (ph->attached & ph->open) || popc(ph->slots) != pl->slots ||
          na > pl->max_per_host) {
        snprintf(why, n, "pool %d host %d: slot masks invalid", p, h);
        return LSCHED_ESTATE;
      }
      if (ph->open != want_open(pl, ph)) {
        snprintf(why, n,
                 "pool %d host %d: %d open slots, the pool allows %d", p, h,
                 popc(ph->open), popc(want_open(pl, ph)));
        return LSCHED_ESTATE;
      }
      const int *g = c->gpu_free + c->nodes[h].gpu_off;
      for (uint64_t m = ph->slots & ~ph->attached; m; m &= m - 1) {
        int s = __builtin_ctzll(m);
        int want = (ph->open >> s) & 1 ? LSCHED_GPU_MILLI : 0;
        if (g[s] != want) {
          snprintf(why, n,
                   "pool %d host %d slot %d: %s but %d milli free (an "
                   "allocation on a GPU that is not attached)",
                   p, h, s, want ? "open" : "blocked", g[s]);
          return LSCHED_ESTATE;
        }
      }
      attached += na;
    }
    if (pl->free < 0 || attached + pl->free != pl->gpus) {
      snprintf(why, n, "pool %d: %d attached + %d free != %d GPUs", p,
               attached, pl->free, pl->gpus);
      return LSCHED_ESTATE;
    }
  }
  return LSCHED_OK;
}
