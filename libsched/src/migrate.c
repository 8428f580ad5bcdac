/*
 * The running index (libsched/migrate.h): a host's running jobs by
 * position, each one-part job also in its node's bucket, kept sorted by
 * (move cost x GPUs held, position), so that a migration planner reaches a
 * node's cheapest jobs in O(1) per job instead of bucketing every running
 * job on every attempt. An update costs O(jobs on the node) (a sorted
 * insert or delete in its bucket). Also lsched_policy_plan_migrations_
 * indexed(), the call that hands an index to a policy.
 * Every bucket change is also appended to a change log (a ring of the
 * last max(1024, 2 x nodes) changed nodes, by sequence number), so that a
 * planner that keeps per-node conclusions refreshes only the nodes that
 * changed since it last looked (O(changes), not O(nodes)).
 */
#include "internal.h"

#include <libsched/migrate.h>
#include <libsched/policy_sdk.h>

#include <math.h>
#include <string.h>

typedef struct bucket {
  size_t *pos; /* positions, sorted by (cost, position) */
  size_t len, cap;
} bucket;
/* Per node beside the buckets: a counter of the bucket's changes. */

struct lsched_running_index {
  lsched_allocator a;
  const lsched_cluster *c;
  lsched_running *ents;   /* [cap]; empty: nparts 0, parts NULL */
  lsched_placement *part; /* [cap]: a one-part entry's part */
  double *cost;           /* [cap]: a bucketed entry's sort key */
  int *node;              /* [cap]: its bucket's node, or -1 */
  size_t cap, n;          /* n: one past the last non-empty position */
  bucket *b;              /* [nb] */
  uint64_t *stamp;        /* [nb]: changes of each bucket */
  int nb;
  int *ring;       /* [rcap]: node of change number q at q & (rcap - 1) */
  size_t rcap;     /* a power of two, 0 before the first bucket */
  uint64_t seq;    /* changes so far (every stamp increment) */
  uint64_t kept;   /* the oldest change still in the ring */
};

/* Node nd's bucket changed: its stamp and the log. */
static void changed(lsched_running_index *ix, int nd) {
  ix->stamp[nd]++;
  if (ix->rcap > 0)
    ix->ring[ix->seq & (ix->rcap - 1)] = nd;
  ix->seq++;
  if (ix->seq - ix->kept > ix->rcap)
    ix->kept = ix->seq - ix->rcap;
}

int lsched_running_index_create(lsched_running_index **out,
                                const lsched_cluster *c) {
  if (!out)
    return LSCHED_EINVAL;
  *out = NULL;
  if (!c)
    return LSCHED_EINVAL;
  lsched_allocator a;
  lsched_cluster_allocator(c, &a);
  lsched_running_index *ix = lsched_mem_calloc(&a, 1, sizeof *ix);
  if (!ix)
    return LSCHED_ENOMEM;
  ix->a = a;
  ix->c = c;
  *out = ix;
  return LSCHED_OK;
}

/* Frees what entry i owns beyond the arrays (a gang's parts). */
static void drop_parts(lsched_running_index *ix, size_t i) {
  lsched_running *r = &ix->ents[i];
  if (r->parts && r->parts != &ix->part[i])
    lsched_mem_free(&ix->a, (void *)r->parts);
  r->parts = NULL;
}

void lsched_running_index_destroy(lsched_running_index *ix) {
  if (!ix)
    return;
  for (size_t i = 0; i < ix->n; i++)
    drop_parts(ix, i);
  for (int k = 0; k < ix->nb; k++)
    lsched_mem_free(&ix->a, ix->b[k].pos);
  lsched_mem_free(&ix->a, ix->b);
  lsched_mem_free(&ix->a, ix->stamp);
  lsched_mem_free(&ix->a, ix->ring);
  lsched_mem_free(&ix->a, ix->ents);
  lsched_mem_free(&ix->a, ix->part);
  lsched_mem_free(&ix->a, ix->cost);
  lsched_mem_free(&ix->a, ix->node);
  lsched_mem_free(&ix->a, ix);
}

/* Grows one array to `cap` elements of `size` bytes (old ones kept). */
static int grow(const lsched_allocator *a, void **p, size_t cap, size_t size) {
  void *q = lsched_mem_realloc(a, *p, cap * size);
  if (!q)
    return LSCHED_ENOMEM;
  *p = q;
  return LSCHED_OK;
}

/* Room for position i. */
static int room_for(lsched_running_index *ix, size_t i) {
  if (i < ix->cap)
    return LSCHED_OK;
  if (i > SIZE_MAX / 2 / sizeof(lsched_running))
    return LSCHED_ENOMEM;
  size_t cap = ix->cap ? ix->cap : 256;
  while (cap <= i)
    cap *= 2;
  /* Each array keeps its new size when a later one fails; the one-part
   * entries are re-aimed at `part` as soon as it moved. */
  if (grow(&ix->a, (void **)&ix->ents, cap, sizeof *ix->ents) ||
      grow(&ix->a, (void **)&ix->part, cap, sizeof *ix->part))
    return LSCHED_ENOMEM;
  for (size_t k = 0; k < ix->n; k++)
    if (ix->ents[k].nparts == 1)
      ix->ents[k].parts = &ix->part[k];
  if (grow(&ix->a, (void **)&ix->cost, cap, sizeof *ix->cost) ||
      grow(&ix->a, (void **)&ix->node, cap, sizeof *ix->node))
    return LSCHED_ENOMEM;
  for (size_t k = ix->cap; k < cap; k++) {
    ix->ents[k] = (lsched_running)LSCHED_RUNNING_INIT;
    ix->node[k] = -1;
  }
  ix->cap = cap;
  return LSCHED_OK;
}

/* Entry i's bucket order: (cost, position). */
static int before(const lsched_running_index *ix, size_t x, size_t y) {
  if (ix->cost[x] != ix->cost[y])
    return ix->cost[x] < ix->cost[y];
  return x < y;
}

/* Where entry i belongs in bucket b (binary search on the order). */
static size_t find_slot(const lsched_running_index *ix, const bucket *b,
                        size_t i) {
  size_t lo = 0, hi = b->len;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (before(ix, b->pos[mid], i))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void unbucket(lsched_running_index *ix, size_t i) {
  int nd = ix->node[i];
  if (nd < 0)
    return;
  bucket *b = &ix->b[nd];
  size_t k = find_slot(ix, b, i);
  /* Costs are never NaN (set refuses them): the order is total. */
  memmove(&b->pos[k], &b->pos[k + 1], (b->len - k - 1) * sizeof *b->pos);
  b->len--;
  changed(ix, nd);
  ix->node[i] = -1;
}

static int bucket_in(lsched_running_index *ix, size_t i, int nd) {
  if (nd >= ix->nb) {
    int nb = lsched_cluster_node_count(ix->c);
    if (nd >= nb)
      return LSCHED_OK; /* not a node of the cluster: never moved */
    if (grow(&ix->a, (void **)&ix->b, (size_t)nb, sizeof *ix->b) ||
        grow(&ix->a, (void **)&ix->stamp, (size_t)nb, sizeof *ix->stamp))
      return LSCHED_ENOMEM; /* zeroed once both grew */
    memset(&ix->b[ix->nb], 0, (size_t)(nb - ix->nb) * sizeof *ix->b);
    memset(&ix->stamp[ix->nb], 0, (size_t)(nb - ix->nb) * sizeof *ix->stamp);
    ix->nb = nb;
    /* The log keeps at least two changes per node; a new ring starts
     * empty (a reader then finds its changes lost and looks at every
     * node once). */
    size_t rc = ix->rcap ? ix->rcap : 1024;
    while (rc < 2 * (size_t)nb)
      rc *= 2;
    if (rc != ix->rcap) {
      int *ring = lsched_mem_alloc(&ix->a, rc * sizeof *ring);
      if (!ring)
        return LSCHED_ENOMEM;
      lsched_mem_free(&ix->a, ix->ring);
      ix->ring = ring;
      ix->rcap = rc;
      ix->kept = ix->seq;
    }
  }
  bucket *b = &ix->b[nd];
  if (b->len == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 8;
    if (grow(&ix->a, (void **)&b->pos, cap, sizeof *b->pos))
      return LSCHED_ENOMEM;
    b->cap = cap;
  }
  size_t k = find_slot(ix, b, i);
  memmove(&b->pos[k + 1], &b->pos[k], (b->len - k) * sizeof *b->pos);
  b->pos[k] = i;
  b->len++;
  changed(ix, nd);
  ix->node[i] = nd;
  return LSCHED_OK;
}

int lsched_running_index_clear(lsched_running_index *ix, size_t i) {
  if (!ix)
    return LSCHED_EINVAL;
  if (i >= ix->n)
    return LSCHED_OK;
  unbucket(ix, i);
  drop_parts(ix, i);
  ix->ents[i] = (lsched_running)LSCHED_RUNNING_INIT;
  while (ix->n > 0 && ix->ents[ix->n - 1].nparts == 0 &&
         !ix->ents[ix->n - 1].parts)
    ix->n--;
  return LSCHED_OK;
}

/* Does position i hold a bucketed one-part entry equal to r (all the
 * version-1 members, cost included)? Then setting it changes nothing. */
static int same_entry(const lsched_running_index *ix, size_t i,
                      const lsched_running *r, double cost) {
  const lsched_running *e = &ix->ents[i];
  if (i >= ix->n || r->nparts != 1 || e->nparts != 1 || ix->node[i] < 0)
    return 0;
  const lsched_placement *a = &ix->part[i], *b = &r->parts[0];
  return e->id == r->id && e->moves == r->moves &&
         e->move_cost_s == r->move_cost_s && ix->cost[i] == cost &&
         a->node == b->node && a->gpu_count == b->gpu_count &&
         a->gpu_milli == b->gpu_milli && a->gpu_mask == b->gpu_mask &&
         a->cpu_milli == b->cpu_milli && a->memory_mib == b->memory_mib &&
         a->mig_kind == b->mig_kind && a->mig_start == b->mig_start &&
         memcmp(&e->request, &r->request, sizeof r->request) == 0;
}

int lsched_running_index_set(lsched_running_index *ix, size_t i,
                             const lsched_running *r) {
  if (!ix || !r || r->nparts < 0 || (r->nparts == 1 && !r->parts) ||
      isnan(r->move_cost_s))
    return LSCHED_EINVAL;
  double cost = 0;
  if (r->nparts == 1) {
    const lsched_placement *q = &r->parts[0];
    cost = r->move_cost_s * ((double)q->gpu_count * q->gpu_milli / 1000.0);
    if (isnan(cost)) /* 0 x infinity */
      return LSCHED_EINVAL;
  }
  int rc = room_for(ix, i);
  if (rc)
    return rc;
  if (same_entry(ix, i, r, cost))
    return LSCHED_OK; /* nothing changes: no stamp, no log entry */
  lsched_running_index_clear(ix, i);
  lsched_running *e = &ix->ents[i];
  const lsched_placement *parts = NULL;
  if (r->nparts == 1) {
    ix->part[i] = r->parts[0];
    parts = &ix->part[i];
  } else if (r->nparts > 1 && r->parts) {
    lsched_placement *g =
        lsched_mem_alloc(&ix->a, (size_t)r->nparts * sizeof *g);
    if (!g)
      return LSCHED_ENOMEM;
    memcpy(g, r->parts, (size_t)r->nparts * sizeof *g);
    parts = g;
  }
  /* Only the version-1 members are read (every version has them). */
  e->version = LSCHED_RUNNING_VERSION;
  e->id = r->id;
  e->request = r->request;
  e->parts = parts;
  e->nparts = r->nparts;
  e->move_cost_s = r->move_cost_s;
  e->moves = r->moves;
  ix->cost[i] = cost;
  if (i >= ix->n)
    ix->n = i + 1;
  if (r->nparts == 1 && parts[0].node >= 0 &&
      (rc = bucket_in(ix, i, parts[0].node)) != LSCHED_OK)
    lsched_running_index_clear(ix, i);
  return rc;
}

const lsched_running *
lsched_running_index_entries(const lsched_running_index *ix, size_t *n) {
  if (n)
    *n = ix ? ix->n : 0;
  return ix ? ix->ents : NULL;
}

const size_t *lsched_running_index_node(const lsched_running_index *ix,
                                        int node, size_t *k) {
  if (k)
    *k = 0;
  if (!ix || node < 0 || node >= ix->nb || ix->b[node].len == 0)
    return NULL;
  if (k)
    *k = ix->b[node].len;
  return ix->b[node].pos;
}

const uint64_t *lsched_running_index_stamps(const lsched_running_index *ix,
                                            int *n) {
  if (n)
    *n = ix ? ix->nb : 0;
  return ix ? ix->stamp : NULL;
}

uint64_t lsched_running_index_seq(const lsched_running_index *ix) {
  return ix ? ix->seq : 0;
}

int lsched_running_index_changed_node(const lsched_running_index *ix,
                                      uint64_t q) {
  if (!ix || q < ix->kept || q >= ix->seq || ix->rcap == 0)
    return -1;
  return ix->ring[q & (ix->rcap - 1)];
}

uint64_t lsched_cluster_order_stamp(const lsched_cluster *c) {
  return c ? c->order_gen : 0;
}

int lsched_policy_plan_migrations_indexed(lsched_policy *p,
                                          const lsched_request *waiting,
                                          const lsched_running_index *ix,
                                          const lsched_defrag_budget *budget,
                                          lsched_move *out, size_t max_out,
                                          size_t *nout) {
  if (!p || !ix)
    return LSCHED_EINVAL;
  if (p->ops->version < 6 || !p->ops->plan_migrations_indexed)
    return lsched_policy_plan_migrations(p, waiting, ix->ents, ix->n, budget,
                                         out, max_out, nout);
  if (!out || !nout || lsched_request_validate(waiting) != LSCHED_OK)
    return LSCHED_EINVAL;
  if (budget &&
      (budget->version == 0 || budget->version > LSCHED_DEFRAG_BUDGET_VERSION))
    return LSCHED_EVERSION;
  /* As lsched_policy_plan_migrations: the planner's changes are trials. */
  lsched__trial_begin(p->c);
  int rc = p->ops->plan_migrations_indexed(p->state, p->c, waiting, ix, budget,
                                           out, max_out, nout);
  lsched__trial_end(p->c);
  for (size_t i = 0; rc == LSCHED_OK && i < *nout && i < max_out; i++) {
    out[i].version = LSCHED_MOVE_VERSION;
    out[i].from.version = out[i].to.version = LSCHED_PLACEMENT_VERSION;
  }
  return rc;
}
