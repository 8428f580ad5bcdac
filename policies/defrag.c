/*
 * defrag: wraps a base placement policy (parameter "base", default
 * best-fit). The base is looked up by name in the registry the instance
 * was created from (lsched_policy_create_from(): any policy the caller
 * registered, built-in or not), else among the built-in policies; never
 * defrag itself. Placement is the base's.
 * When a waiting job cannot be placed, plan_migrations looks for a small-cost
 * set of running jobs to move so that it fits:
 *
 *   for every node n that could hold the waiting job when empty, release
 *   the movable jobs on n cheapest first (cost = move_cost_s x GPUs held)
 *   until the waiting job fits on n, at most max_moves of them; reserve the
 *   waiting job's GPUs on n; place each released job anew with the base
 *   policy (anywhere, including leftover room on n). The cheapest node whose
 *   plan succeeds wins (ties: earliest node in the visit order), and only if
 *   its cost in lost GPU-seconds is below the waiting job's expected wait x
 *   its GPUs. Everything is tried on the real cluster and undone exactly.
 *
 * This frees a whole node for a multi-GPU job and consolidates shared GPUs
 * for a fractional one with the same mechanism. Jobs on several nodes
 * (gangs) are never moved, and gang waiting jobs get no plan.
 * The default planner (plan_bucketed) buckets the candidates by node and
 * tries on the cluster only the nodes that pass exact necessary tests
 * (fit after the releases, cost, room to re-place; with a base that
 * promises LSCHED_POLICY_ANY_FIT, room for the first two released jobs
 * when they compete for the one node they fit: must_fail), so it finds
 * the plan of the reference scan (plan_scan, parameter plan_index=off) in
 * O(running jobs + nodes) plus one trial (moves x base place) per node
 * worth trying, instead of O(nodes x running jobs) plus a trial on every
 * node with candidates.
 */
#include "builtin.h"

#include <libsched/migrate.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct defrag_state {
  lsched_allocator a;
  lsched_view v;
  const lsched_policy_ops *base;
  void *base_state;
  const lsched_cluster *c;
  const lsched_registry *reg; /* set_registry's; NULL: built-ins only */
  int use_index;    /* "plan_index": 1 (default) bucketed + bounded, 0 scan */
  int base_builtin; /* the base is a built-in (places only where it fits) */
  /* The bucketed planner's scratch (grown, never shrunk): candidates by
   * node, and where each node's bucket starts (n + 1 entries). */
  struct cand *cs;
  size_t cs_cap;
  size_t *start;
  int start_cap;
  /* The indexed planner's per-node conclusions (see plan_indexed): for
   * the key of generation `built`, the nodes that may hold a plan, in a
   * binary heap by (lower bound of their plan's cost, visit position);
   * the others are ruled out until they change. Nodes whose allocations
   * (on_alloc / on_release) or jobs (the index's change log, read up to
   * ix_seen) changed since are in `dirty`, refreshed at the next plan. */
  struct node_memo *memo; /* [nmemo] */
  int nmemo;
  int *heap, nheap; /* [nmemo]: node ids */
  size_t *walk;     /* [nmemo]: plan_indexed's traversal of the heap */
  int *dirty, ndirty; /* [nmemo]: nodes changed since the last plan */
  int *topark;        /* [nmemo]: plan_indexed's nodes to park */
  uint64_t ix_seen;   /* the index's log read up to here */
  /* Nodes parked by may_replace, per shape id: while every shape of a
   * node's list fits no node, the node stays out of the heap. An entry is
   * live while its node's park count is the one it was parked with. */
  struct park *parks; /* [SHAPE_SLOTS] */
  int16_t *pshapes;   /* [SHAPE_SLOTS]: shapes with a non-empty list */
  int npshapes;
  uint64_t built;     /* the generation the heap is for (0: none) */
  uint64_t log_seen;  /* this planner's log (below) read up to here */
  /* The fields above from memo on are those of the current key; the keys
   * of the last KEY_SLOTS decisions keep theirs in slots (the current one
   * is copied there when another key comes: slot_switch), so that a
   * returning key refreshes only the nodes changed since it was last
   * used, not every node. */
  struct key_slot *slots; /* [KEY_SLOTS] */
  int cur;                /* the current key's slot */
  uint64_t gen;           /* generations handed out (0: none yet) */
  uint64_t stamp;         /* counts key look-ups: slots' last use */
  /* Nodes allocated or released (on_alloc / on_release), a ring of the
   * last log_cap: a slot reads it from its log_seen on (an overrun: every
   * node). */
  int *log;
  uint64_t log_seq;
  size_t log_cap;
  int in_trial; /* try_node's changes, all undone: not logged */
  uint64_t *touched; /* [nmemo]: log_seq after each node's last change */
  /* Request shapes seen as candidates (open addressing, SHAPE_SLOTS), and
   * per shape whether it fits some node, known for decision `decision`. */
  struct shape *shapes;
  int nshapes;
  uint64_t decision; /* counts decisions (plan_begin) */
};

/* A shape: the members of a request that decide where it fits (only
 * requests without node_allowed or node_filter get one). */
#define SHAPE_SLOTS 1024
#define SHAPE_MAX 512
#define MEMO_IDS 4
#define FIT_NODES 3
typedef struct shape_key {
  int64_t cpu, mem, mig_memory;
  int gpu_count, gpu_milli, mig_kind, mig_compute;
  uint64_t model_mask, features;
} shape_key;
typedef struct shape {
  shape_key k;
  int used;
  int fits;          /* some node fits it now (lsched_next_fit) */
  uint64_t decision; /* fits is known for this decision */
  int nfirst;        /* the first nodes that fit it now (fit_nodes) */
  int first[FIT_NODES];
  uint64_t first_at; /* first is known for this decision */
} shape;

/* What decides, with a node's state and jobs, whether plan_indexed's
 * screens rule the node out: the waiting job's shape, the budget's move
 * limits, the index. */
typedef struct plan_key {
  int64_t cpu, mem;
  int gpu_count, gpu_milli, mig_kind, max_moves, per_job, screen;
  int filtered; /* features or node filters: fit_prefix not exact */
  uint64_t model_mask;
  uint64_t order; /* lsched_cluster_order_stamp: heap keys use positions */
  const lsched_running_index *ix;
} plan_key;

/* A key's conclusions (the per-key fields of defrag_state). */
#define KEY_SLOTS 8
typedef struct key_slot {
  plan_key key;
  uint64_t gen;  /* 0: no key yet */
  uint64_t used; /* stamp of its last use (least recently used goes) */
  struct node_memo *memo;
  int *heap, nheap;
  struct park *parks;
  int16_t *pshapes;
  int npshapes;
  uint64_t ix_seen, log_seen, built;
} key_slot;

typedef struct park_ent {
  int node;
  uint32_t count;
} park_ent;
typedef struct park {
  park_ent *e;
  size_t len, cap, live_at; /* live_at: len after the last compaction */
} park;

/* Candidates a node's memo keeps (classify's, reused by the walk). */
#define MEMO_CANDS 4

typedef struct node_memo {
  double lb;  /* in the heap: its plan costs at least this (-inf: unknown) */
  int pos;    /* its visit position when put in the heap */
  int at;     /* its heap slot, or -1 (ruled out) */
  uint8_t dirty;
  uint32_t parked; /* park count: bumped when parked or refreshed */
  /* In the heap: its first movable candidates (nc of them, kept when at
   * most MEMO_CANDS, else nc = UINT8_MAX: the walk reads them again) and
   * fit_room's prefix j over them, valid while the node is unchanged. */
  uint8_t nc, j;
  size_t cidx[MEMO_CANDS];
  double ccost[MEMO_CANDS];
  /* Ruled out by may_replace (nids > 0): while the shapes ids[0 .. nids)
   * of the candidates that fit no node then still fit none, it still is
   * (more candidates fitting nowhere only leave less room). */
  uint8_t nids;
  int16_t ids[MEMO_IDS];
  /* Ruled out by must_fail (mf) at log position mf_at: its first two
   * candidates, of shapes mid[0], mid[1], fitted then no node but n and
   * mo[0], mo[1] others (at most 1: node mm). Kept while the node is
   * unchanged (classify clears it) and still so (mf_holds). */
  uint8_t mf, mo[2];
  int16_t mid[2];
  int mm;
  uint64_t mf_at;
} node_memo;

/* The policy `name`: from the instance's registry when it has one, else
 * the built-in one (through a temporary registry on the cluster's
 * allocator). LSCHED_OK, LSCHED_EINVAL (no such policy), LSCHED_ENOMEM. */
static int find_base(const struct defrag_state *s, const char *name,
                     const lsched_policy_ops **out) {
  const lsched_allocator *a = &s->a;
  lsched_registry *r;
  *out = NULL;
  if (s->reg) {
    *out = lsched_registry_find(s->reg, name);
    return *out ? LSCHED_OK : LSCHED_EINVAL;
  }
  int rc = lsched_registry_create(&r, a);
  if (rc)
    return rc;
  rc = lsched_registry_add_builtins(r);
  if (rc == LSCHED_OK) {
    *out = lsched_registry_find(r, name);
    if (!*out)
      rc = LSCHED_EINVAL;
  }
  lsched_registry_destroy(r);
  return rc;
}

/* *yes: is ops one of the built-in policies (not merely one of the same
 * name)? LSCHED_OK or LSCHED_ENOMEM. */
static int is_builtin(const struct defrag_state *s,
                      const lsched_policy_ops *ops, int *yes) {
  lsched_registry *r;
  *yes = 0;
  int rc = lsched_registry_create(&r, &s->a);
  if (rc)
    return rc;
  rc = lsched_registry_add_builtins(r);
  if (rc == LSCHED_OK)
    *yes = lsched_registry_find(r, ops->name) == ops;
  lsched_registry_destroy(r);
  return rc;
}

static void drop_base(struct defrag_state *s) {
  if (s->base && s->base->fini)
    s->base->fini(s->base_state);
  lsched_mem_free(&s->a, s->base_state);
  s->base = NULL;
  s->base_state = NULL;
}

static int set_base(struct defrag_state *s, const char *name) {
  const lsched_policy_ops *ops;
  int rc = find_base(s, name, &ops);
  if (rc)
    return rc;
  if (strcmp(ops->name, "defrag") == 0 || ops == &lsched_builtin_defrag)
    return LSCHED_EINVAL;
  int builtin;
  if ((rc = is_builtin(s, ops, &builtin)) != LSCHED_OK)
    return rc;
  void *st = NULL;
  if (ops->state_size) {
    st = lsched_mem_calloc(&s->a, 1, ops->state_size);
    if (!st)
      return LSCHED_ENOMEM;
  }
  rc = ops->init ? ops->init(st, s->c) : LSCHED_OK;
  /* A base that itself wraps policies looks them up in the same registry. */
  if (rc == LSCHED_OK && s->reg && ops->version >= 4 && ops->set_registry &&
      (rc = ops->set_registry(st, s->reg)) != LSCHED_OK && ops->fini)
    ops->fini(st);
  if (rc) {
    lsched_mem_free(&s->a, st);
    return rc;
  }
  drop_base(s);
  s->base = ops;
  s->base_state = st;
  s->base_builtin = builtin;
  return LSCHED_OK;
}

/* The current key's fields into its slot, and slot i's out of it. */
static void slot_save(struct defrag_state *s) {
  key_slot *k = &s->slots[s->cur];
  k->memo = s->memo;
  k->heap = s->heap;
  k->nheap = s->nheap;
  k->parks = s->parks;
  k->pshapes = s->pshapes;
  k->npshapes = s->npshapes;
  k->ix_seen = s->ix_seen;
  k->log_seen = s->log_seen;
  k->built = s->built;
}

static void slot_load(struct defrag_state *s, int i) {
  const key_slot *k = &s->slots[i];
  s->cur = i;
  s->memo = k->memo;
  s->heap = k->heap;
  s->nheap = k->nheap;
  s->parks = k->parks;
  s->pshapes = k->pshapes;
  s->npshapes = k->npshapes;
  s->ix_seen = k->ix_seen;
  s->log_seen = k->log_seen;
  s->built = k->built;
}

static void slot_free(struct defrag_state *s, key_slot *k) {
  for (int i = 0; k->parks && i < SHAPE_SLOTS; i++)
    lsched_mem_free(&s->a, k->parks[i].e);
  lsched_mem_free(&s->a, k->parks);
  lsched_mem_free(&s->a, k->pshapes);
  lsched_mem_free(&s->a, k->memo);
  lsched_mem_free(&s->a, k->heap);
  memset(k, 0, sizeof *k);
}

/* Slot k's arrays, for the n nodes of the view: no key, nothing built.
 * LSCHED_OK or LSCHED_ENOMEM (k then empty). */
static int slot_alloc(struct defrag_state *s, key_slot *k, int n) {
  memset(k, 0, sizeof *k);
  size_t nn = (size_t)n + 1;
  k->memo = lsched_mem_calloc(&s->a, nn, sizeof *k->memo);
  k->heap = lsched_mem_calloc(&s->a, nn, sizeof *k->heap);
  k->parks = lsched_mem_calloc(&s->a, SHAPE_SLOTS, sizeof *k->parks);
  k->pshapes = lsched_mem_calloc(&s->a, SHAPE_SLOTS, sizeof *k->pshapes);
  if (!k->memo || !k->heap || !k->parks || !k->pshapes) {
    slot_free(s, k);
    return LSCHED_ENOMEM;
  }
  for (int i = 0; i < n; i++)
    k->memo[i].at = -1;
  return LSCHED_OK;
}

static void free_memo(struct defrag_state *s) {
  if (s->slots) {
    slot_save(s);
    for (int i = 0; i < KEY_SLOTS; i++)
      slot_free(s, &s->slots[i]);
  }
  lsched_mem_free(&s->a, s->slots);
  s->slots = NULL;
  s->cur = 0;
  s->memo = NULL;
  s->heap = NULL;
  s->nheap = 0;
  s->parks = NULL;
  s->pshapes = NULL;
  s->npshapes = 0;
  lsched_mem_free(&s->a, s->walk);
  lsched_mem_free(&s->a, s->dirty);
  lsched_mem_free(&s->a, s->topark);
  lsched_mem_free(&s->a, s->log);
  lsched_mem_free(&s->a, s->touched);
  s->dirty = s->topark = s->log = NULL;
  s->touched = NULL;
  s->walk = NULL;
  lsched_mem_free(&s->a, s->shapes);
  s->shapes = NULL;
  s->nshapes = 0;
  s->nmemo = 0;
}

static int defrag_init(void *state, const lsched_cluster *c) {
  struct defrag_state *s = state;
  lsched_cluster_allocator(c, &s->a);
  s->c = c;
  s->v = (lsched_view)LSCHED_VIEW_INIT;
  s->use_index = 1;
  if (lsched_cluster_view(c, &s->v) != LSCHED_OK)
    return LSCHED_EINVAL;
  /* The memo covers the nodes of this view (a node change refreshes the
   * instance: no on_node_change hook). More key slots come when needed. */
  size_t nn = (size_t)s->v.n + 1;
  s->slots = lsched_mem_calloc(&s->a, KEY_SLOTS, sizeof *s->slots);
  int rc = s->slots ? slot_alloc(s, &s->slots[0], s->v.n) : LSCHED_ENOMEM;
  if (rc == LSCHED_OK)
    slot_load(s, 0);
  s->walk = lsched_mem_calloc(&s->a, nn, sizeof *s->walk);
  s->dirty = lsched_mem_calloc(&s->a, nn, sizeof *s->dirty);
  s->topark = lsched_mem_calloc(&s->a, nn, sizeof *s->topark);
  s->log_cap = 2 * nn > 1024 ? 2 * nn : 1024;
  s->log = lsched_mem_calloc(&s->a, s->log_cap, sizeof *s->log);
  s->touched = lsched_mem_calloc(&s->a, nn, sizeof *s->touched);
  s->shapes = lsched_mem_calloc(&s->a, SHAPE_SLOTS, sizeof *s->shapes);
  s->nmemo = s->v.n;
  if (rc == LSCHED_OK)
    rc = s->walk && s->dirty && s->topark && s->log && s->touched && s->shapes
             ? set_base(s, "best-fit")
             : LSCHED_ENOMEM;
  if (rc)
    free_memo(s);
  return rc;
}

/* The default base stays the built-in best-fit: the registry only serves
 * later "base" parameters. */
static int defrag_set_registry(void *state, const lsched_registry *r) {
  struct defrag_state *s = state;
  s->reg = r;
  return LSCHED_OK;
}

static void defrag_fini(void *state) {
  struct defrag_state *s = state;
  drop_base(s);
  free_memo(s);
  lsched_mem_free(&s->a, s->cs);
  lsched_mem_free(&s->a, s->start);
  s->cs = NULL;
  s->start = NULL;
}

static int defrag_set_param(void *state, const char *key, const char *value) {
  struct defrag_state *s = state;
  if (strcmp(key, "base") == 0)
    return set_base(s, value);
  if (strcmp(key, "plan_index") == 0) {
    if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
      return LSCHED_EINVAL;
    s->use_index = value[1] == 'n';
    return LSCHED_OK;
  }
  if (s->base->set_param)
    return s->base->set_param(s->base_state, key, value);
  return LSCHED_ENOENT;
}

static int defrag_place(void *state, const lsched_cluster *c,
                        const lsched_request *req, lsched_placement *out) {
  struct defrag_state *s = state;
  return s->base->place(s->base_state, c, req, out);
}

/* Placement is the base's, so are its promises (LSCHED_POLICY_ANY_FIT:
 * an EASY host may then answer a reservation by fit tests). */
static unsigned defrag_flags_of(const void *state) {
  const struct defrag_state *s = state;
  if (!s->base || s->base->version < 7)
    return 0u;
  return s->base->flags_of ? s->base->flags_of(s->base_state)
                           : s->base->flags;
}

/* Node n changed: its conclusions are refreshed at the next plan. O(1). */
static void mark_dirty(struct defrag_state *s, int n) {
  if (n >= 0 && n < s->nmemo && !s->memo[n].dirty) {
    s->memo[n].dirty = 1;
    s->dirty[s->ndirty++] = n;
  }
}

/* Node p->node changed: logged for every key's slot (refresh). O(1).
 * Not while try_node tries a plan: it leaves every node as it was. */
static void touch(struct defrag_state *s, const lsched_placement *p) {
  if (!s->in_trial && p->node >= 0 && p->node < s->nmemo && s->log) {
    s->log[s->log_seq++ % s->log_cap] = p->node;
    s->touched[p->node] = s->log_seq;
  }
}

static void defrag_on_alloc(void *state, const lsched_cluster *c,
                            const lsched_placement *p) {
  struct defrag_state *s = state;
  touch(s, p);
  if (s->base->on_alloc)
    s->base->on_alloc(s->base_state, c, p);
}

static void defrag_on_release(void *state, const lsched_cluster *c,
                              const lsched_placement *p) {
  struct defrag_state *s = state;
  touch(s, p);
  if (s->base->on_release)
    s->base->on_release(s->base_state, c, p);
}

static int defrag_set_workload(void *state, const lsched_cluster *c,
                               const lsched_workload *w) {
  struct defrag_state *s = state;
  if (s->base->version < 2 || !s->base->set_workload)
    return LSCHED_OK; /* the base does not use a workload */
  return s->base->set_workload(s->base_state, c, w);
}

/* GPUs a placement holds (milli / 1000). */
static double held_gpus(const lsched_placement *p) {
  return (double)p->gpu_count * p->gpu_milli / 1000.0;
}

/* Could node nd hold req when empty? */
static int could_hold(const lsched_node *nd, const lsched_request *r) {
  if (nd->cpu_cap < r->cpu_milli || nd->mem_cap < r->memory_mib)
    return 0;
  if (r->gpu_count == 0)
    return 1;
  return nd->gpu_count >= r->gpu_count &&
         (!r->model_mask || (r->model_mask >> nd->model) & 1);
}

typedef struct cand {
  size_t idx;
  int node;
  double cost;
} cand;

/* With no negative cost among the candidates, a plan releasing a prefix
 * of at least j of them costs no less than the first j: worth trying only
 * when those cost less than the best plan so far. */
static int prefix_beats(const cand *b, size_t j, double best) {
  double lb = 0;
  for (size_t i = 0; i < j; i++)
    lb += b[i].cost;
  return lb < best;
}

static int cmp_cand(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->node != y->node)
    return x->node < y->node ? -1 : 1;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The plan's budgets and the best plan so far (shared by both planners). */
typedef struct plan_ctx {
  const lsched_request *w;
  const lsched_running *run;
  int max_moves;
  double best; /* cost to beat: starts at the expected wait x GPUs */
  int best_pos, best_n;
  lsched_move best_moves[64], moves[64];
} plan_ctx;

/* Node n (visit position pos), its candidates cs[0 .. k) cheapest first:
 * releases them one by one until the waiting job fits (at most max_moves),
 * and if the plan beats the best (a lower cost, or the same cost on an
 * earlier node: planners that meet nodes out of visit order get the visit
 * order's answer), reserves the job's GPUs there and
 * re-places the released jobs with the base policy; keeps the plan if all
 * placed; undoes everything. LSCHED_OK or LSCHED_ESTATE. */
static int try_node(struct defrag_state *s, lsched_cluster *c, plan_ctx *p,
                    int pos, int n, const cand *cs, size_t k) {
  const lsched_request *w = p->w;
  lsched_move *moves = p->moves;
  int released = 0, fits = 0, rc = LSCHED_OK;
  double cost = 0;
  s->in_trial = 1;
  for (size_t i = 0; i < k && released < p->max_moves; i++) {
    const lsched_running *r = &p->run[cs[i].idx];
    if (lsched_release(c, &r->parts[0]) != LSCHED_OK) {
      rc = LSCHED_ESTATE;
      break;
    }
    moves[released].version = LSCHED_MOVE_VERSION;
    moves[released].index = cs[i].idx;
    moves[released].from = r->parts[0];
    released++;
    cost += cs[i].cost;
    if (lsched_fits(c, n, w)) {
      fits = 1;
      break;
    }
  }
  int placed = 0;
  lsched_placement wp;
  int reserved = 0;
  if (fits && rc == LSCHED_OK &&
      (cost < p->best ||
       (cost == p->best && p->best_pos >= 0 && pos < p->best_pos)) &&
      lsched_pick_gpus(c, n, w, LSCHED_PICK_TIGHTEST, &wp) == LSCHED_OK &&
      lsched_alloc(c, &wp) == LSCHED_OK) {
    reserved = 1;
    for (; placed < released; placed++) {
      const lsched_running *r = &p->run[moves[placed].index];
      if (s->base->place(s->base_state, c, &r->request, &moves[placed].to) !=
              LSCHED_OK ||
          lsched_alloc(c, &moves[placed].to) != LSCHED_OK)
        break;
    }
    if (placed == released) {
      p->best = cost;
      p->best_pos = pos;
      p->best_n = released;
      memcpy(p->best_moves, moves, (size_t)released * sizeof *moves);
    }
  }
  /* Undo: targets, the reservation, then the sources. */
  int undone = 1;
  while (placed > 0)
    undone &= lsched_release(c, &moves[--placed].to) == LSCHED_OK;
  if (reserved)
    undone &= lsched_release(c, &wp) == LSCHED_OK;
  while (released > 0)
    if (lsched_alloc(c, &moves[--released].from) != LSCHED_OK)
      rc = LSCHED_ESTATE;
  s->in_trial = 0;
  if (rc != LSCHED_OK || !undone) /* every key's slot then refreshes all */
    s->log_seq += s->log_cap + 1;
  return rc;
}

/* Is run[i] a candidate (one part on a known node, moves left)? */
static int movable(const struct defrag_state *s, const lsched_running *r,
                   int per_job) {
  return r->nparts == 1 && r->moves < per_job && r->parts[0].node >= 0 &&
         r->parts[0].node < s->v.n;
}

/* The reference planner (plan_index=off): every candidate sorted by
 * (node, cost, index), each node's run found by a scan from the start.
 * O(nodes x candidates) per decision. */
static int plan_scan(struct defrag_state *s, lsched_cluster *c, plan_ctx *p,
                     size_t nrun, int per_job) {
  const lsched_running *run = p->run;
  cand *cs = lsched_mem_alloc(&s->a, (nrun ? nrun : 1) * sizeof *cs);
  if (!cs)
    return LSCHED_ENOMEM;
  size_t nc = 0;
  for (size_t i = 0; i < nrun; i++) {
    const lsched_running *r = &run[i];
    if (!movable(s, r, per_job))
      continue;
    cs[nc].idx = i;
    cs[nc].node = r->parts[0].node;
    cs[nc].cost = r->move_cost_s * held_gpus(&r->parts[0]);
    nc++;
  }
  qsort(cs, nc, sizeof *cs, cmp_cand);
  int rc = LSCHED_OK;
  for (int pos = 0; pos < s->v.n && rc == LSCHED_OK; pos++) {
    int n = s->v.order[pos];
    if (!could_hold(lsched_view_node(&s->v, n), p->w))
      continue;
    size_t lo = 0;
    while (lo < nc && cs[lo].node < n)
      lo++;
    size_t hi = lo;
    while (hi < nc && cs[hi].node == n)
      hi++;
    if (hi > lo)
      rc = try_node(s, c, p, pos, n, cs + lo, hi - lo);
  }
  lsched_mem_free(&s->a, cs);
  return rc;
}

/* Grows the bucketed planner's scratch to nc candidates and n nodes. */
static int grow_scratch(struct defrag_state *s, size_t nc, int n) {
  if (nc > s->cs_cap) {
    size_t cap = s->cs_cap ? s->cs_cap : 256;
    while (cap < nc)
      cap *= 2;
    cand *cs = lsched_mem_alloc(&s->a, cap * sizeof *cs);
    if (!cs)
      return LSCHED_ENOMEM;
    lsched_mem_free(&s->a, s->cs);
    s->cs = cs;
    s->cs_cap = cap;
  }
  if (n + 1 > s->start_cap) {
    size_t *st = lsched_mem_alloc(&s->a, (size_t)(n + 1) * sizeof *st);
    if (!st)
      return LSCHED_ENOMEM;
    lsched_mem_free(&s->a, s->start);
    s->start = st;
    s->start_cap = n + 1;
  }
  return LSCHED_OK;
}

/* Effective GPU share of a non-MIG request on non-MIG node nd. */
static int eff_milli(const lsched_node *nd, const lsched_request *r) {
  if (r->gpu_count == 0)
    return 0;
  return nd->mode == LSCHED_GPU_EXCLUSIVE ? 1000 : r->gpu_milli;
}

static int is_mig(const lsched_request *r) {
  return r->version >= 2 && r->mig_kind != LSCHED_MIG_NONE;
}

/* The shortest prefix cs[0 .. j) (1 <= j <= m) of node nd's candidates
 * whose release could let w fit there, or 0 if none: a necessary condition
 * for try_node's fit test after the same releases. It replays the releases
 * on a copy of the node's free amounts: node up, CPU and memory, and, for a
 * non-MIG request on a non-MIG node, w's GPU count of GPUs each with its
 * effective share free (a whole GPU on an exclusive node); exact there but
 * for the request's node filters (features, allowed nodes), which only
 * make a fit less likely. MIG requests and MIG nodes: CPU and memory only.
 * fit_room is the same but for the node's state (what an up node would
 * answer): a state change alone leaves it as it is. */
static size_t fit_room(const lsched_view *v, const lsched_node *nd,
                       const lsched_request *w, const lsched_running *run,
                       const cand *cs, size_t m) {
  int gpus = w->gpu_count > 0 && !is_mig(w) && nd->mode != LSCHED_GPU_MIG;
  int g[LSCHED_MAX_GPUS_PER_NODE], d = 0;
  if (gpus) {
    memcpy(g, lsched_view_gpus(v, nd), (size_t)nd->gpu_count * sizeof *g);
    d = eff_milli(nd, w);
  }
  int64_t cpu = nd->cpu_free, mem = nd->mem_free;
  /* Early out: even releasing all m cannot make room (more CPU, memory,
   * free milli, or GPUs that reach d than the node would then have). */
  int64_t cpu_all = cpu, mem_all = mem, milli_all = nd->gpu_free_sum;
  int reach = d >= 1000 ? nd->gpus_full_free : nd->gpus_nonzero_free;
  for (size_t j = 0; j < m; j++) {
    const lsched_placement *q = &run[cs[j].idx].parts[0];
    int k = __builtin_popcountll(q->gpu_mask);
    cpu_all += q->cpu_milli;
    mem_all += q->memory_mib;
    milli_all += (int64_t)k * q->gpu_milli;
    reach += k;
  }
  if (cpu_all < w->cpu_milli || mem_all < w->memory_mib ||
      (gpus && (milli_all < (int64_t)w->gpu_count * d ||
                (d > 0 && reach < w->gpu_count))))
    return 0;
  for (size_t j = 0; j < m; j++) {
    const lsched_placement *q = &run[cs[j].idx].parts[0];
    cpu += q->cpu_milli;
    mem += q->memory_mib;
    if (gpus)
      for (uint64_t mk = q->gpu_mask; mk; mk &= mk - 1)
        g[__builtin_ctzll(mk)] += q->gpu_milli;
    if (cpu < w->cpu_milli || mem < w->memory_mib)
      continue;
    if (!gpus)
      return j + 1;
    int cnt = 0;
    for (int i = 0; i < nd->gpu_count; i++)
      cnt += g[i] >= d;
    if (cnt >= w->gpu_count)
      return j + 1;
  }
  return 0;
}

static size_t fit_prefix(const lsched_view *v, const lsched_node *nd,
                         const lsched_request *w, const lsched_running *run,
                         const cand *cs, size_t m) {
  return nd->state == LSCHED_NODE_UP ? fit_room(v, nd, w, run, cs, m) : 0;
}

/* Is fit_prefix exact for w on nd (up to the releases)? */
static int exact_fit(const lsched_node *nd, const lsched_request *w) {
  return !is_mig(w) && nd->mode != LSCHED_GPU_MIG &&
         !(w->version >= 3 &&
           (w->features || w->node_allowed || w->node_filter));
}

/* Could try_node re-place the released jobs cs[0 .. jc) once w holds node
 * nd (n) and at most cs[0 .. jroom) are released there? A necessary
 * condition, used only with a built-in base (it places a job only where
 * lsched_fits says it fits) and no composable pools (so node n's releases
 * leave every other node as it is): a job that fits no node now can only
 * go to node n, and all such jobs must fit together in what is left there
 * (CPU, memory and, off MIG, GPU milli in all). */
/* The shape id of r (its slot in s->shapes), or -1: a request with
 * node_allowed or node_filter, or the table is full. */
static int shape_of(struct defrag_state *s, const lsched_request *r) {
  if (r->version >= 3 && (r->node_allowed || r->node_filter))
    return -1;
  shape_key k;
  memset(&k, 0, sizeof k); /* padding too: compared with memcmp */
  k.cpu = r->cpu_milli;
  k.mem = r->memory_mib;
  k.gpu_count = r->gpu_count;
  k.gpu_milli = r->gpu_milli;
  k.model_mask = r->model_mask;
  if (r->version >= 2) {
    k.mig_kind = r->mig_kind;
    k.mig_compute = r->mig_compute_milli;
    k.mig_memory = r->mig_memory_mib;
  }
  if (r->version >= 3)
    k.features = r->features;
  uint64_t h = (uint64_t)k.cpu * 0x9E3779B97F4A7C15u ^
               (uint64_t)k.mem * 0xC2B2AE3D27D4EB4Fu ^
               ((uint64_t)k.gpu_count << 32 | (uint32_t)k.gpu_milli) *
                   0x165667B19E3779F9u ^
               k.model_mask ^ (uint64_t)k.mig_kind << 48 ^ k.features;
  h ^= h >> 29;
  for (size_t i = (size_t)(h % SHAPE_SLOTS), t = 0; t < SHAPE_SLOTS;
       i = (i + 1) % SHAPE_SLOTS, t++) {
    shape *x = &s->shapes[i];
    if (x->used && memcmp(&x->k, &k, sizeof k) == 0)
      return (int)i;
    if (!x->used) {
      if (s->nshapes >= SHAPE_MAX)
        return -1;
      x->used = 1;
      x->k = k;
      x->decision = x->first_at = 0;
      s->nshapes++;
      return (int)i;
    }
  }
  return -1;
}

/* Does r fit some node now? lsched_next_fit, remembered per shape for the
 * current decision (the cluster is the same throughout it: try_node
 * restores it). *id gets r's shape id (-1: none). */
static int fits_somewhere(struct defrag_state *s, const lsched_cluster *c,
                          const lsched_request *r, int *id) {
  *id = shape_of(s, r);
  if (*id < 0)
    return lsched_next_fit(c, r, 0) >= 0;
  shape *x = &s->shapes[*id];
  if (x->decision != s->decision) {
    x->fits = lsched_next_fit(c, r, 0) >= 0;
    x->decision = s->decision;
  }
  return x->fits;
}

/* Does shape id fit some node now (as fits_somewhere)? */
static int shape_fits(struct defrag_state *s, const lsched_cluster *c,
                      int id) {
  shape *x = &s->shapes[id];
  if (x->decision != s->decision) {
    lsched_request r = LSCHED_REQUEST_INIT;
    r.cpu_milli = x->k.cpu;
    r.memory_mib = x->k.mem;
    r.gpu_count = x->k.gpu_count;
    r.gpu_milli = x->k.gpu_milli;
    r.model_mask = x->k.model_mask;
    r.mig_kind = x->k.mig_kind;
    r.mig_compute_milli = x->k.mig_compute;
    r.mig_memory_mib = x->k.mig_memory;
    r.features = x->k.features;
    x->fits = lsched_next_fit(c, &r, 0) >= 0;
    x->decision = s->decision;
  }
  return x->fits;
}

/* Could try_node re-place the released jobs cs[0 .. jc) once w holds node
 * nd (n) and at most cs[0 .. jroom) are released there? A necessary
 * condition, used only with a built-in base (it places a job only where
 * lsched_fits says it fits) and no composable pools (so node n's releases
 * leave every other node as it is): a job that fits no node now can only
 * go to node n, and all such jobs must fit together in what is left there
 * (CPU, memory and, off MIG, GPU milli in all). When not, ids[0 .. *nids)
 * get the shapes of the jobs that fit no node, each once (*nids = 0 when
 * one has no shape id or there are more than MEMO_IDS). When it may,
 * first[0 .. 2) get the shape ids of cs[0], cs[1] (as far as jc goes;
 * must_fail's, not hashed again). */
static int may_replace(struct defrag_state *s, const lsched_cluster *c,
                       const lsched_node *nd, const lsched_request *w,
                       const lsched_running *run, const cand *cs, size_t jc,
                       size_t jroom, int16_t *ids, uint8_t *nids, int *first) {
  int gpus = !is_mig(w) && nd->mode != LSCHED_GPU_MIG;
  int64_t cpu = nd->cpu_free - w->cpu_milli;
  int64_t mem = nd->mem_free - w->memory_mib;
  int64_t milli =
      gpus ? nd->gpu_free_sum - (int64_t)w->gpu_count * eff_milli(nd, w) : 0;
  int memo = 1;
  *nids = 0;
  for (size_t i = 0; i < jroom; i++) {
    const lsched_placement *q = &run[cs[i].idx].parts[0];
    cpu += q->cpu_milli;
    mem += q->memory_mib;
    milli += (int64_t)q->gpu_count * q->gpu_milli;
  }
  for (size_t i = 0; i < jc; i++) {
    const lsched_request *r = &run[cs[i].idx].request;
    int id, fits = fits_somewhere(s, c, r, &id);
    if (i < 2)
      first[i] = id;
    if (fits)
      continue;
    int seen = 0; /* each shape once: park_node makes room for one entry
                     per shape */
    for (int k = 0; k < *nids && id >= 0; k++)
      seen |= ids[k] == id;
    if (id < 0 || (!seen && *nids == MEMO_IDS))
      memo = 0;
    else if (!seen)
      ids[(*nids)++] = (int16_t)id;
    cpu -= r->cpu_milli;
    mem -= r->memory_mib;
    if (gpus && !is_mig(r))
      milli -= (int64_t)r->gpu_count * eff_milli(nd, r);
    if (cpu < 0 || mem < 0 || milli < 0) {
      if (!memo)
        *nids = 0;
      return 0;
    }
  }
  *nids = 0;
  return 1;
}

/* The first nodes (at most FIT_NODES, in the visit order) that fit r
 * (shape id, or -1) now into out: their count. Remembered per shape for
 * the current decision, as fits_somewhere. */
static int fit_nodes(struct defrag_state *s, const lsched_cluster *c,
                     const lsched_request *r, int id, int *out) {
  shape *x = id >= 0 ? &s->shapes[id] : NULL;
  if (!x || x->first_at != s->decision) {
    int k = 0;
    for (int q = lsched_next_fit(c, r, 0); q >= 0;
         q = lsched_next_fit(c, r, q + 1)) {
      out[k++] = s->v.order[q];
      if (k == FIT_NODES)
        break;
    }
    if (!x)
      return k;
    x->nfirst = k;
    memcpy(x->first, out, (size_t)k * sizeof *out);
    x->first_at = s->decision;
  }
  memcpy(out, x->first, (size_t)x->nfirst * sizeof *out);
  return x->nfirst;
}

/* The nodes but n that fit r (shape id) now: 0, 1 (*m gets it) or 2 (two
 * or more). */
static int fit_others(struct defrag_state *s, const lsched_cluster *c,
                      const lsched_request *r, int id, int n, int *m) {
  int f[FIT_NODES], k, o = 0;
  const int *l = f;
  const shape *x = id >= 0 ? &s->shapes[id] : NULL;
  if (x && x->first_at == s->decision) { /* read in place: no copy */
    l = x->first;
    k = x->nfirst;
  } else {
    k = fit_nodes(s, c, r, id, f);
  }
  for (int i = 0; i < k && o < 2; i++)
    if (l[i] != n) {
      *m = l[i];
      o++;
    }
  return o; /* FIT_NODES nodes hold two but n */
}

/* Some node's free CPU, memory and per-GPU shares (g[0 .. ng), each
 * request's share on it d). */
typedef struct room {
  int64_t cpu, mem;
  int g[LSCHED_MAX_GPUS_PER_NODE];
  int ng;
  lsched_gpu_mode mode;
} room;

/* Node nd's free CPU, memory and GPU shares now. */
static void room_of(const struct defrag_state *s, const lsched_node *nd,
                    room *o) {
  o->cpu = nd->cpu_free;
  o->mem = nd->mem_free;
  o->ng = nd->gpu_count;
  o->mode = nd->mode;
  if (o->ng > 0)
    memcpy(o->g, lsched_view_gpus(&s->v, nd), (size_t)o->ng * sizeof *o->g);
}

static int room_milli(const room *o, const lsched_request *r) {
  if (r->gpu_count == 0)
    return 0;
  return o->mode == LSCHED_GPU_EXCLUSIVE ? 1000 : r->gpu_milli;
}

/* Could r (not MIG) fit room o once t (not MIG) is placed there, on any
 * GPUs t could take? A necessary condition for lsched_fits on the node
 * after t's placement (its resources; not the node's other tests): t
 * takes t->gpu_count GPUs with its share free, and spares at best the
 * GPUs r could use when it can: those that cannot hold r's share anyway or
 * still hold it after t's. */
static int may_fit_after(const room *o, const lsched_request *t,
                         const lsched_request *r) {
  if (o->cpu - t->cpu_milli < r->cpu_milli ||
      o->mem - t->memory_mib < r->memory_mib)
    return 0;
  if (r->gpu_count == 0)
    return 1;
  int dt = room_milli(o, t), d = room_milli(o, r), reach = 0, spare = 0;
  for (int i = 0; i < o->ng; i++) {
    reach += o->g[i] >= d;
    spare += o->g[i] >= dt && (o->g[i] < d || o->g[i] - dt >= d);
  }
  int lost = t->gpu_count > spare ? t->gpu_count - spare : 0;
  return reach - lost >= r->gpu_count;
}

/* Would try_node surely fail to re-place the first two of node nd's (n)
 * released jobs cs[0], cs[1] once w holds nd and at most cs[0 .. jroom)
 * are released there (jroom >= 2)? Used only where may_replace is (a
 * built-in base, no pools) and the base promises LSCHED_POLICY_ANY_FIT
 * (it places exactly when some node fits, and a place() that is skipped
 * changes nothing). Other nodes are as now during the trial, so cs[1]
 * (r2) fails when it fits no node but n now and cannot fit in what w
 * leaves on n; or when it fits one node m but n now, and cs[0] (r1),
 * placed first, fits no node but m (nothing, or m) and not n, and on m
 * would leave no room for r2 on any GPUs it may take. Non-MIG requests
 * on non-MIG nodes only. The cases of nearly every failed trial under
 * fifo: two released jobs that compete for the one node they fit.
 * id[0], id[1]: their shape ids (may_replace's). When it fails them,
 * mo[1] gets how many nodes but n fit r2 (0 or 1: *mm), and when 1,
 * mo[0] how many fit r1 (0 or 1: *mm too), for mf_holds. */
static int must_fail(struct defrag_state *s, const lsched_cluster *c,
                     const lsched_node *nd, int n, const lsched_request *w,
                     const lsched_running *run, const cand *cs, size_t jroom,
                     const int *id, uint8_t *mo, int *mm) {
  const lsched_request *r1 = &run[cs[0].idx].request;
  const lsched_request *r2 = &run[cs[1].idx].request;
  if (is_mig(w) || is_mig(r1) || is_mig(r2) || nd->mode == LSCHED_GPU_MIG)
    return 0;
  int m = -1, m1 = -1;
  int o2 = fit_others(s, c, r2, id[1], n, &m);
  if (o2 > 1)
    return 0;
  room o; /* n's room once cs[0 .. jroom) are released */
  room_of(s, nd, &o);
  for (size_t i = 0; i < jroom; i++) {
    const lsched_placement *q = &run[cs[i].idx].parts[0];
    o.cpu += q->cpu_milli;
    o.mem += q->memory_mib;
    for (uint64_t mk = q->gpu_mask; mk; mk &= mk - 1)
      o.g[__builtin_ctzll(mk)] += q->gpu_milli;
  }
  if (may_fit_after(&o, w, r2))
    return 0;
  mo[1] = (uint8_t)o2;
  *mm = m;
  if (o2 == 0)
    return 1;
  int o1 = fit_others(s, c, r1, id[0], n, &m1);
  if (o1 > 1 || (o1 == 1 && m1 != m) || may_fit_after(&o, w, r1))
    return 0;
  mo[0] = (uint8_t)o1;
  if (o1 == 0)
    return 1; /* r1 fits nowhere */
  const lsched_node *mn = lsched_view_node(&s->v, m);
  if (mn->mode == LSCHED_GPU_MIG)
    return 0;
  room q;
  room_of(s, mn, &q);
  return !may_fit_after(&q, r1, r2);
}

/* Does node n's kept must_fail verdict (x->mf) still hold, its first two
 * candidates b[0], b[1]? What it read of n (its state and jobs) and of
 * the waiting job (the key) is as then while x->mf is set (classify
 * clears it); the rest must be: the nodes but n that fit r2 (and, when
 * one, r1) now, and node mm's room (read when r1 may go there), which
 * only its allocations and releases change. must_fail would then answer
 * the same. fit_others only: remembered per shape for the decision. */
static int mf_holds(struct defrag_state *s, const lsched_cluster *c,
                    const node_memo *x, int n, const lsched_running *run,
                    const cand *b) {
  if (x->mo[1] == 1 && x->mo[0] == 1 && s->touched[x->mm] > x->mf_at)
    return 0; /* mm's room, read, changed since */
  int m = -1;
  int o = fit_others(s, c, &run[b[1].idx].request, x->mid[1], n, &m);
  if (o != x->mo[1] || (o == 1 && m != x->mm))
    return 0;
  if (o == 0)
    return 1;
  o = fit_others(s, c, &run[b[0].idx].request, x->mid[0], n, &m);
  return o == x->mo[0] && (o == 0 || m == x->mm);
}

/* The bucketed planner (plan_index=on, the default): the same nodes in the
 * same order with the same candidates, so the same plan; what differs is
 * the work. Candidates are bucketed by node (a counting sort, then each
 * bucket sorted by cost: O(candidates)); a node is tried on the cluster
 * only if the job may fit there once some prefix of its cheapest
 * max_moves candidates is released (fit_prefix) and, when no cost is
 * negative, that prefix's cost is below the best plan's (try_node stops
 * at a prefix no shorter, which costs no less), and neither may_replace
 * nor must_fail rules it out. */
static int plan_bucketed(struct defrag_state *s, lsched_cluster *c, plan_ctx *p,
                         size_t nrun, int per_job) {
  const lsched_running *run = p->run;
  int nn = s->v.n;
  int rc = grow_scratch(s, nrun, nn);
  if (rc)
    return rc;
  size_t *start = s->start;
  memset(start, 0, (size_t)(nn + 1) * sizeof *start);
  int negative = 0;
  for (size_t i = 0; i < nrun; i++)
    if (movable(s, &run[i], per_job))
      start[run[i].parts[0].node + 1]++;
  for (int n = 0; n < nn; n++)
    start[n + 1] += start[n];
  for (size_t i = 0; i < nrun; i++) {
    const lsched_running *r = &run[i];
    if (!movable(s, r, per_job))
      continue;
    /* start[n] walks node n's bucket; rewound below. */
    cand *x = &s->cs[start[r->parts[0].node]++];
    x->idx = i;
    x->node = r->parts[0].node;
    x->cost = r->move_cost_s * held_gpus(&r->parts[0]);
    negative |= !(x->cost >= 0);
  }
  for (int n = nn; n > 0; n--)
    start[n] = start[n - 1];
  start[0] = 0;
  int screen = s->base_builtin && lsched_cluster_pool_count(c) == 0;
  int anyfit = screen && (defrag_flags_of(s) & LSCHED_POLICY_ANY_FIT);
  for (int pos = 0; pos < nn && rc == LSCHED_OK; pos++) {
    int n = s->v.order[pos];
    size_t lo = start[n], hi = start[n + 1];
    const lsched_node *nd = lsched_view_node(&s->v, n);
    if (hi == lo || !could_hold(nd, p->w))
      continue;
    /* Sort the bucket by (cost, index): insertion, buckets are short and
     * filled in index order. */
    cand *b = s->cs + lo;
    size_t k = hi - lo;
    for (size_t i = 1; i < k; i++) {
      cand t = b[i];
      size_t j = i;
      while (j > 0 && cmp_cand(&b[j - 1], &t) > 0) {
        b[j] = b[j - 1];
        j--;
      }
      b[j] = t;
    }
    size_t m = k < (size_t)p->max_moves ? k : (size_t)p->max_moves;
    size_t j = fit_prefix(&s->v, nd, p->w, run, b, m);
    if (j == 0)
      continue;
    if (!negative && !prefix_beats(b, j, p->best))
      continue;
    /* fit_prefix is exact for a non-MIG request without node filters on a
     * non-MIG node: try_node then releases exactly j jobs. */
    size_t jroom = exact_fit(nd, p->w) ? j : m;
    int16_t ids[MEMO_IDS];
    uint8_t nids, mo[2];
    int first[2], mm;
    if (screen &&
        !may_replace(s, c, nd, p->w, run, b, j, jroom, ids, &nids, first))
      continue;
    if (anyfit && j >= 2 &&
        must_fail(s, c, nd, n, p->w, run, b, jroom, first, mo, &mm))
      continue;
    rc = try_node(s, c, p, pos, n, b, k);
  }
  return rc;
}

/* Makes key k's slot the current one: the slot that has it, else a slot
 * with no key, a new one (memory permitting), or the least recently used
 * one, which then gets k and a new generation (every memo entry stale). */
static void slot_switch(struct defrag_state *s, const plan_key *k) {
  slot_save(s);
  int pick = -1, lru = -1;
  for (int i = 0; i < KEY_SLOTS && pick < 0; i++) {
    const key_slot *x = &s->slots[i];
    if (x->gen != 0 && memcmp(&x->key, k, sizeof *k) == 0)
      pick = i;
  }
  if (pick >= 0) {
    slot_load(s, pick);
    return;
  }
  for (int i = 0; i < KEY_SLOTS && pick < 0; i++)
    if (s->slots[i].memo && s->slots[i].gen == 0)
      pick = i;
  for (int i = 0; i < KEY_SLOTS && pick < 0; i++)
    if (!s->slots[i].memo && slot_alloc(s, &s->slots[i], s->nmemo) == LSCHED_OK)
      pick = i;
  for (int i = 0; i < KEY_SLOTS && pick < 0; i++)
    if (s->slots[i].memo &&
        (lru < 0 || s->slots[i].used < s->slots[lru].used))
      lru = i;
  if (pick < 0)
    pick = lru; /* slot 0 always has its arrays */
  s->slots[pick].key = *k;
  s->slots[pick].gen = ++s->gen;
  slot_load(s, pick);
}

/* The generation of the key of this decision: its slot's (slot_switch
 * when the key is not the last one's). */
static uint64_t key_gen(struct defrag_state *s, const plan_ctx *p,
                        int per_job, const lsched_running_index *ix,
                        int screen) {
  const lsched_request *w = p->w;
  plan_key k;
  memset(&k, 0, sizeof k); /* padding too: compared with memcmp */
  k.cpu = w->cpu_milli;
  k.mem = w->memory_mib;
  k.gpu_count = w->gpu_count;
  k.gpu_milli = w->gpu_milli;
  k.mig_kind = is_mig(w) ? w->mig_kind : 0;
  k.model_mask = w->model_mask;
  k.max_moves = p->max_moves;
  k.per_job = per_job;
  k.screen = screen;
  k.filtered = w->version >= 3 &&
               (w->features || w->node_allowed || w->node_filter);
  k.order = lsched_cluster_order_stamp(s->c);
  k.ix = ix;
  key_slot *cur = &s->slots[s->cur];
  if (cur->gen == 0 || memcmp(&k, &cur->key, sizeof k) != 0)
    slot_switch(s, &k);
  s->slots[s->cur].used = ++s->stamp;
  return s->slots[s->cur].gen;
}

/* The heap of nodes that may hold a plan: ordered by (lb, pos), so that
 * the planner meets them cheapest bound first, ties in visit order. */
static int heap_less(const struct defrag_state *s, int x, int y) {
  const node_memo *a = &s->memo[x], *b = &s->memo[y];
  if (a->lb != b->lb)
    return a->lb < b->lb;
  return a->pos < b->pos;
}

static void heap_set(struct defrag_state *s, int i, int n) {
  s->heap[i] = n;
  s->memo[n].at = i;
}

/* Moves slot i's node down to its place. O(log n). */
static void heap_down(struct defrag_state *s, int i) {
  int n = s->heap[i];
  for (;;) {
    int l = 2 * i + 1, m = l;
    if (l >= s->nheap)
      break;
    if (l + 1 < s->nheap && heap_less(s, s->heap[l + 1], s->heap[l]))
      m = l + 1;
    if (!heap_less(s, s->heap[m], n))
      break;
    heap_set(s, i, s->heap[m]);
    i = m;
  }
  heap_set(s, i, n);
}

/* Restores the heap order around slot i (up, then down). O(log n). */
static void heap_fix(struct defrag_state *s, int i) {
  int n = s->heap[i];
  while (i > 0 && heap_less(s, n, s->heap[(i - 1) / 2])) {
    heap_set(s, i, s->heap[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  heap_set(s, i, n);
  heap_down(s, i);
}

static void heap_remove(struct defrag_state *s, int n) {
  int i = s->memo[n].at;
  if (i < 0)
    return;
  s->memo[n].at = -1;
  int last = s->heap[--s->nheap];
  if (i < s->nheap) {
    heap_set(s, i, last);
    heap_fix(s, i);
  }
}

/* Node n's first movable candidates (at most max_moves, cheapest first)
 * into b: their count; *negative when a cost is negative. */
static size_t first_cands(const struct defrag_state *s, const plan_ctx *p,
                          const lsched_running_index *ix, int per_job, int n,
                          cand *b, int *negative) {
  size_t len, k = 0;
  const size_t *bk = lsched_running_index_node(ix, n, &len);
  *negative = 0;
  for (size_t i = 0; i < len && k < (size_t)p->max_moves; i++) {
    const lsched_running *r = &p->run[bk[i]];
    if (!movable(s, r, per_job))
      continue;
    b[k].idx = bk[i];
    b[k].node = n;
    b[k].cost = r->move_cost_s * held_gpus(&r->parts[0]);
    *negative |= !(b[k].cost >= 0);
    k++;
  }
  return k;
}

/* Node n's conclusion for the current key, from its state and jobs alone
 * (not its up/cordoned state: fit_room): ruled out when it could not hold
 * the waiting job empty or no prefix of its first candidates may make
 * room; else in the heap with the cost of that shortest prefix as its
 * bound (-inf with a negative cost: no bound). O(max_moves + log n). */
static void classify(struct defrag_state *s, const plan_ctx *p,
                     const lsched_running_index *ix, int per_job, int n,
                     int bulk) {
  node_memo *x = &s->memo[n];
  if (x->nids > 0)
    x->parked++; /* its park entries die */
  x->nids = 0;
  x->mf = 0;
  const lsched_node *nd = lsched_view_node(&s->v, n);
  cand b[64];
  int negative = 0;
  size_t k = 0, j = 0;
  if (could_hold(nd, p->w)) {
    k = first_cands(s, p, ix, per_job, n, b, &negative);
    if (k > 0)
      j = fit_room(&s->v, nd, p->w, p->run, b, k);
  }
  if (j == 0) {
    heap_remove(s, n);
    return;
  }
  double lb = 0;
  for (size_t i = 0; i < j; i++) /* the sum prefix_beats and try_node make */
    lb += b[i].cost;
  x->lb = negative ? -INFINITY : lb;
  x->pos = s->v.pos_of[n];
  x->j = (uint8_t)j;
  x->nc = k <= MEMO_CANDS ? (uint8_t)k : UINT8_MAX;
  for (size_t i = 0; i < k && k <= MEMO_CANDS; i++) {
    x->cidx[i] = b[i].idx;
    x->ccost[i] = b[i].cost;
  }
  if (x->at < 0) {
    x->at = s->nheap++;
    s->heap[x->at] = n;
  }
  if (!bulk) /* else the caller heapifies */
    heap_fix(s, x->at);
}

/* Parks node n (in the heap, ruled out by may_replace under the shapes
 * x->ids[0 .. x->nids)): out of the heap until one of them fits some
 * node (the caller takes it out: drop_parked). Without memory for the
 * entries it stays in the heap (x->nids = 0: met and screened again next
 * time). */
static void park_node(struct defrag_state *s, int n) {
  node_memo *x = &s->memo[n];
  const int16_t *ids = x->ids;
  int nids = x->nids;
  for (int t = 0; t < nids; t++) { /* room first: all or nothing */
    park *k = &s->parks[ids[t]];
    if (k->len == k->cap) {
      if (k->len > 2 * k->live_at + 64) { /* mostly dead: compact */
        size_t m = 0;
        for (size_t i = 0; i < k->len; i++) {
          const node_memo *y = &s->memo[k->e[i].node];
          if (y->nids > 0 && y->parked == k->e[i].count)
            k->e[m++] = k->e[i];
        }
        k->len = k->live_at = m;
      }
      if (k->len == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 16;
        park_ent *e = lsched_mem_realloc(&s->a, k->e, cap * sizeof *e);
        if (!e) {
          x->nids = 0;
          return;
        }
        k->e = e;
        k->cap = cap;
      }
    }
  }
  x->parked++;
  for (int t = 0; t < nids; t++) {
    park *k = &s->parks[ids[t]];
    if (k->len == 0)
      s->pshapes[s->npshapes++] = ids[t];
    k->e[k->len].node = n;
    k->e[k->len].count = x->parked;
    k->len++;
  }
}

/* Takes the m nodes just parked (nids > 0; in the heap no node else has
 * any) out of the heap: one by one when few, else by one pass that keeps
 * the others and a heapify, O(heap), instead of m removals of O(log). */
static void drop_parked(struct defrag_state *s, int m) {
  if (m * 8 < s->nheap) {
    for (int i = 0; i < m; i++)
      if (s->memo[s->topark[i]].nids > 0)
        heap_remove(s, s->topark[i]);
    return;
  }
  int k = 0;
  for (int i = 0; i < s->nheap; i++) {
    int n = s->heap[i];
    if (s->memo[n].nids > 0)
      s->memo[n].at = -1;
    else
      heap_set(s, k++, n);
  }
  s->nheap = k;
  for (int i = k / 2 - 1; i >= 0; i--)
    heap_down(s, i);
}

/* The parked nodes of every shape that fits some node now: refreshed
 * (back in the heap unless ruled out again). O(parked shapes + their
 * entries). */
static void unpark(struct defrag_state *s, lsched_cluster *c,
                   const plan_ctx *p, const lsched_running_index *ix,
                   int per_job) {
  for (int i = 0; i < s->npshapes;) {
    int id = s->pshapes[i];
    if (!shape_fits(s, c, id)) {
      i++;
      continue;
    }
    park *k = &s->parks[id];
    for (size_t e = 0; e < k->len; e++) {
      int n = k->e[e].node;
      const node_memo *y = &s->memo[n];
      if (y->nids > 0 && y->parked == k->e[e].count)
        classify(s, p, ix, per_job, n, 0);
    }
    k->len = k->live_at = 0;
    s->pshapes[i] = s->pshapes[--s->npshapes];
  }
}

/* Brings the heap up to the current key and state: every node when the
 * key is new to its slot or a log (defrag's, the index's) lost entries,
 * else the nodes changed since the key's last plan. */
static void refresh(struct defrag_state *s, lsched_cluster *c,
                    const plan_ctx *p, const lsched_running_index *ix,
                    int per_job, uint64_t gen) {
  uint64_t now = lsched_running_index_seq(ix);
  /* (A log behind the slot's position: another index at the same
   * address.) */
  int all = gen != s->built || s->log_seq - s->log_seen > s->log_cap ||
            now < s->ix_seen;
  for (uint64_t q = s->log_seen; !all && q < s->log_seq; q++)
    mark_dirty(s, s->log[q % s->log_cap]);
  for (uint64_t q = s->ix_seen; !all && q < now; q++) {
    int n = lsched_running_index_changed_node(ix, q);
    if (n < 0)
      all = 1;
    else
      mark_dirty(s, n);
  }
  for (int i = 0; i < s->ndirty; i++)
    s->memo[s->dirty[i]].dirty = 0;
  if (all) {
    for (int i = 0; i < s->nheap; i++)
      s->memo[s->heap[i]].at = -1;
    s->nheap = 0;
    for (int i = 0; i < s->npshapes; i++)
      s->parks[s->pshapes[i]].len = s->parks[s->pshapes[i]].live_at = 0;
    s->npshapes = 0;
    for (int n = 0; n < s->nmemo; n++)
      classify(s, p, ix, per_job, n, 1);
    for (int i = s->nheap / 2 - 1; i >= 0; i--) /* heapify: O(n) */
      heap_down(s, i);
  } else {
    for (int i = 0; i < s->ndirty; i++)
      classify(s, p, ix, per_job, s->dirty[i], 0);
  }
  s->ndirty = 0;
  s->ix_seen = now;
  s->log_seen = s->log_seq;
  s->built = gen;
  unpark(s, c, p, ix, per_job);
}

/* Could a node with bound lb at position pos still give a plan that
 * beats the best one (cost, then earliest position)? */
static int may_beat(const plan_ctx *p, double lb, int pos) {
  return lb < p->best || (lb == p->best && p->best_pos >= 0 &&
                          pos < p->best_pos);
}

/* The planner over a running index (plan_migrations_indexed, plan_index
 * on). Its answer is plan_bucketed's and plan_scan's: the plan of least
 * cost below the budget, ties to the earliest node in the visit order.
 * It keeps, from one plan to the next, which nodes may hold a plan for
 * the key (the waiting job's shape, the budget's move limits, the index,
 * the visit order; a new key rebuilds, O(nodes); the last KEY_SLOTS keys
 * keep theirs, so a returning key does not), refreshing only the
 * nodes whose allocations or jobs changed since (refresh); those are in a
 * heap by (a lower bound of their plan's cost, position). It meets them
 * in that order (a best-first walk of the heap, O(log) per node met) and
 * stops at the first whose bound cannot beat the best plan found: a plan
 * releases at least fit_room's shortest prefix, which costs no less when
 * no cost is negative. A node met is screened as before (up, may_replace,
 * whose verdict is kept while the shapes it depends on fit no node;
 * must_fail, whose verdict is kept while the node is unchanged and the
 * nodes its two jobs fit, and the room it read of the other one, are the
 * same: mf_holds) and tried on the cluster. A decision so costs O(changed
 * nodes + nodes met) x O(log nodes), not O(nodes). */
static int plan_indexed(struct defrag_state *s, lsched_cluster *c, plan_ctx *p,
                        const lsched_running_index *ix, int per_job) {
  const lsched_running *run = p->run;
  int rc = LSCHED_OK, ntopark = 0;
  int screen = s->base_builtin && lsched_cluster_pool_count(c) == 0;
  int anyfit = screen && (defrag_flags_of(s) & LSCHED_POLICY_ANY_FIT);
  refresh(s, c, p, ix, per_job, key_gen(s, p, per_job, ix, screen));
  /* Best-first walk: walk[] is a heap of heap slots by their nodes'
   * order; a slot's children are met after it. */
  size_t nw = 0;
  if (s->nheap > 0)
    s->walk[nw++] = 0;
  cand b[64];
  while (nw > 0 && rc == LSCHED_OK) {
    size_t i = s->walk[0];
    s->walk[0] = s->walk[--nw];
    for (size_t w = 0;;) { /* sift down */
      size_t l = 2 * w + 1, m = l;
      if (l >= nw)
        break;
      if (l + 1 < nw && heap_less(s, s->heap[s->walk[l + 1]],
                                  s->heap[s->walk[l]]))
        m = l + 1;
      if (!heap_less(s, s->heap[s->walk[m]], s->heap[s->walk[w]]))
        break;
      size_t t = s->walk[m];
      s->walk[m] = s->walk[w];
      s->walk[w] = t;
      w = m;
    }
    int n = s->heap[i];
    node_memo *x = &s->memo[n];
    if (!may_beat(p, x->lb, x->pos))
      break; /* nor can any node after it */
    for (size_t ch = 2 * i + 1; ch <= 2 * i + 2; ch++) {
      if (ch >= (size_t)s->nheap)
        break;
      size_t w = nw++; /* sift up */
      s->walk[w] = ch;
      while (w > 0 && heap_less(s, s->heap[s->walk[w]],
                                s->heap[s->walk[(w - 1) / 2]])) {
        size_t t = s->walk[w];
        s->walk[w] = s->walk[(w - 1) / 2];
        s->walk[(w - 1) / 2] = t;
        w = (w - 1) / 2;
      }
    }
    const lsched_node *nd = lsched_view_node(&s->v, n);
    if (nd->state != LSCHED_NODE_UP)
      continue; /* fit_prefix says no */
    size_t k, j = x->j;
    if (x->nc != UINT8_MAX) { /* classify's, the node unchanged since */
      k = x->nc;
      for (size_t t = 0; t < k; t++) {
        b[t].idx = x->cidx[t];
        b[t].node = n;
        b[t].cost = x->ccost[t];
      }
    } else {
      int negative;
      k = first_cands(s, p, ix, per_job, n, b, &negative);
    }
    if (anyfit && x->mf && mf_holds(s, c, x, n, run, b))
      continue; /* must_fail's answer, kept */
    x->mf = 0;
    size_t jroom = exact_fit(nd, p->w) ? j : k;
    int16_t ids[MEMO_IDS];
    uint8_t nids, mo[2] = {0, 0};
    int first[2], mm;
    if (screen &&
        !may_replace(s, c, nd, p->w, run, b, j, jroom, ids, &nids, first)) {
      if (nids > 0) { /* parked after the walk (it holds heap slots) */
        x->nids = nids;
        memcpy(x->ids, ids, (size_t)nids * sizeof *ids);
        s->topark[ntopark++] = n;
      }
      continue;
    }
    if (anyfit && j >= 2 &&
        must_fail(s, c, nd, n, p->w, run, b, jroom, first, mo, &mm)) {
      if (first[0] >= 0 && first[1] >= 0) { /* kept: mf_holds */
        x->mf = 1;
        memcpy(x->mo, mo, sizeof mo);
        x->mid[0] = (int16_t)first[0];
        x->mid[1] = (int16_t)first[1];
        x->mm = mm;
        x->mf_at = s->log_seq;
      }
      continue;
    }
    rc = try_node(s, c, p, x->pos, n, b, k);
  }
  for (int i = 0; i < ntopark; i++)
    park_node(s, s->topark[i]);
  drop_parked(s, ntopark);
  return rc;
}

/* The budget and the plan context of one decision; 0 and *nout = 0 when
 * w fits already, 1 to plan, else the code to return. */
static int plan_begin(struct defrag_state *s, lsched_cluster *c,
                      const lsched_request *w, const lsched_defrag_budget *b,
                      size_t max_out, size_t *nout, plan_ctx *p,
                      int *per_job) {
  *nout = 0;
  s->decision++;
  if (lsched_next_fit(c, w, 0) >= 0)
    return LSCHED_OK;
  int max_moves = b && b->max_moves > 0 ? b->max_moves : 2;
  *per_job = b && b->max_moves_per_job > 0 ? b->max_moves_per_job : 1;
  double wait = b ? b->expected_wait_s : -1;
  /* GPUs the waiting job would hold (a MIG request: its kind's share). */
  int wmilli = w->version >= 2 && w->mig_kind > 0
                   ? lsched_mig_kind_milli(w->mig_kind)
                   : w->gpu_milli;
  double wgpus = (double)w->gpu_count * wmilli / 1000.0;
  if (wait < 0 || wgpus <= 0 || w->gpu_count > s->v.max_gpu_count)
    return LSCHED_ENOFIT;
  if ((size_t)max_moves > max_out)
    max_moves = (int)max_out;
  if (max_moves > 64)
    max_moves = 64;
  p->w = w;
  p->max_moves = max_moves;
  /* Plans are compared by cost; the budget: cost below the expected
   * waiting GPU-seconds. */
  p->best = wait * wgpus;
  p->best_pos = -1;
  p->best_n = 0;
  return 1;
}

static int plan_end(const plan_ctx *p, lsched_move *out, size_t *nout) {
  if (p->best_pos < 0)
    return LSCHED_ENOFIT;
  memcpy(out, p->best_moves, (size_t)p->best_n * sizeof *out);
  *nout = (size_t)p->best_n;
  return LSCHED_OK;
}

static int defrag_plan_indexed(void *state, lsched_cluster *c,
                               const lsched_request *w,
                               const lsched_running_index *ix,
                               const lsched_defrag_budget *b, lsched_move *out,
                               size_t max_out, size_t *nout) {
  struct defrag_state *s = state;
  plan_ctx p;
  int per_job;
  int rc = plan_begin(s, c, w, b, max_out, nout, &p, &per_job);
  if (rc != 1)
    return rc;
  size_t nrun;
  p.run = lsched_running_index_entries(ix, &nrun);
  rc = s->use_index ? plan_indexed(s, c, &p, ix, per_job)
                    : plan_scan(s, c, &p, nrun, per_job);
  return rc != LSCHED_OK ? rc : plan_end(&p, out, nout);
}

static int defrag_plan(void *state, lsched_cluster *c, const lsched_request *w,
                       const lsched_running *run, size_t nrun,
                       const lsched_defrag_budget *b, lsched_move *out,
                       size_t max_out, size_t *nout) {
  struct defrag_state *s = state;
  plan_ctx p;
  int per_job;
  int rc = plan_begin(s, c, w, b, max_out, nout, &p, &per_job);
  if (rc != 1)
    return rc;
  p.run = run;
  rc = s->use_index ? plan_bucketed(s, c, &p, nrun, per_job)
                    : plan_scan(s, c, &p, nrun, per_job);
  return rc != LSCHED_OK ? rc : plan_end(&p, out, nout);
}

const lsched_policy_ops lsched_builtin_defrag = {
    .version = LSCHED_POLICY_OPS_VERSION,
    .name = "defrag",
    .description = "a base policy (param base, default best-fit) that plans "
                   "migrations to make room for a blocked job",
    .state_size = sizeof(struct defrag_state),
    .init = defrag_init,
    .fini = defrag_fini,
    .set_param = defrag_set_param,
    .place = defrag_place,
    .on_alloc = defrag_on_alloc,
    .on_release = defrag_on_release,
    .set_workload = defrag_set_workload,
    .plan_migrations = defrag_plan,
    .set_registry = defrag_set_registry,
    .plan_migrations_indexed = defrag_plan_indexed,
    .flags_of = defrag_flags_of,
};
