/*
 * EASY reservations answered per node (issue #19), for reserve.c.
 *
 * The reference (reserve.c's walk) releases running jobs on the cluster in
 * order of estimated end, ties together, asks the policy to place the head
 * after each group and allocates everything back: T is the end of the
 * first group after which it places. For a policy that promises
 * LSCHED_POLICY_ANY_FIT (it places a one-part request exactly when some
 * node fits it, and a call changes nothing) or LSCHED_POLICY_ANY_FIT_DRAWS
 * (the same, but a placement draws: the walk then tests fits too, so that
 * a what-if draws nothing; policy_fit_answers) and a request placed as one
 * part, "it places" is "some node fits", and a node's fit depends only on
 * what is released on that node. Fit is monotone in what is released, so
 * per node n the walk's answer is t_n, the estimated end of the first job
 * in n's own order of ends after whose release (with all before it) the
 * head fits n (lsched_fits_after() over n's parts in that order),
 * and T = max(min over n of t_n, now): clamping ends to now (overdue jobs
 * under --overrun extend end "now" in the walk) commutes with the minimum.
 * A node where the head fits with nothing released (not met in practice:
 * the head was just tried) makes T the first group's end, as in the walk.
 *
 * Kept incrementally: per node its running jobs by (estimated end, trace
 * position); per request shape a min-tree of t_n over nodes; a log of
 * nodes changed (allocations and releases seen as a cluster observer, the
 * running jobs' ends and moves through ends_changed/ends_remove, node
 * states) that each tree replays when asked, recomputing only the logged
 * nodes (an entry is appended only when some tree has already passed the
 * node's last one, else merged into it; a tree replays a node's entries
 * but those a later "may be earlier" entry makes moot). A completion or
 * preemption of a node's first job in its order of ends (the usual case
 * with exact estimates) is logged with that job's end b (touch_fr): a tree
 * whose t_n is above b keeps it without a fit test. A backfill candidate
 * marked running joins its nodes' lists for the question and leaves them
 * after. So a reservation costs the nodes changed since the tree of its
 * shape was last asked, each one walk of lsched_fits_after over the
 * node's jobs (O(jobs on the node)), plus O(log nodes) per leaf. A shape
 * is given a tree the first time it is asked (a fit test per node; at
 * most RX_TREES, least recently used out). Whenever this cannot answer
 * (MIG nodes, GPU pools, node restrictions by list or callback, gangs
 * cut into parts, a policy without the promise), reserve.c walks. A
 * candidate that would re-time co-runners under the speed model is
 * answered here too, with their ends moved in the lists for its question
 * (reserve.c slowed_reservation).
 * sim_options.reserve_verify (tests; always on in a -DRESERVE_VERIFY
 * build) checks every answer against the walk. As an observer this also
 * counts what may move a head's reservation, for reserve.c's
 * reservation_kept (rx_moves_of); and a node found to reach T
 * answers the next candidates elsewhere while its log shows no change
 * (rx_within_note, rx_within_seen).
 */
#include "engine_internal.h"
#include "reserve.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define RX_TREES 16
#define RX_NONE UINT32_MAX
/* Log entry flags (see touch()); the node is the entry's low bits. */
#define RX_DEC 0x80000000u /* t_n may be earlier: recompute */
#define RX_FR 0x40000000u  /* the node's first job left: see touch_fr() */
#define RX_INC 0x20000000u /* t_n may be later: a lower bound */
#define RX_NODE 0x1FFFFFFFu
#define RX_ONE 0x80000000u /* where_of: the only node of a one-part job */
#define RX_PEND 4 /* releases held back for the drop that may follow */
#define RX_NOW INT64_MIN /* the head fits the node with nothing released */

/* One running job's part on a node in the node's order: its estimated
 * end (not clamped), slot and the index of its part in the node's parts
 * (16 bytes, four to a cache line: the order's searches and moves touch
 * these only; the tie-break by trace position reads the slot, for the
 * rare equal ends). */
typedef struct rx_ent {
  int64_t end;
  uint32_t job, part;
} rx_ent;

/* A part as a fit test reads it (lsched_fits_after_held: amounts and GPUs;
 * the node is the list's, and a node answered per node is not MIG, whose
 * fields are then zero), in one of two forms, the same for every list of
 * a run (struct rx's wide):
 * - narrow (rx_part_n, 16 bytes, four to a cache line): CPU and memory in
 *   31 bits, GPUs 0..31; the form parts are kept in while every part of
 *   the run fits it, as every part does on real nodes;
 * - wide (rx_part, 32 bytes, two to a line): the placement's fields from
 *   gpu_count to memory_mib as they lie there (copied as one). The first
 *   part that does not fit the narrow form turns every list wide (widen),
 *   for the rest of the run.
 * Narrow, a block of 8 entries is 4 lines instead of 6: at 100k@1.2
 * first-fit backfill the lists took 7 MB for ~147,000 entries' room. */
typedef struct rx_part_n {
  int32_t cpu_milli, memory_mib;
  uint32_t gpu_mask;
  uint16_t gpu_milli;
  uint8_t gpu_count, unused;
} rx_part_n;
_Static_assert(sizeof(rx_part_n) == 16, "four narrow parts to a line");
typedef struct rx_part {
  int gpu_count;
  int gpu_milli;
  uint64_t gpu_mask;
  int64_t cpu_milli;
  int64_t memory_mib;
} rx_part;
#define RX_PART_AT offsetof(lsched_placement, gpu_count)
#define RX_MIRRORS(f)                                                          \
  (offsetof(lsched_placement, f) - RX_PART_AT == offsetof(rx_part, f))
_Static_assert(RX_MIRRORS(gpu_milli) && RX_MIRRORS(gpu_mask) &&
                   RX_MIRRORS(cpu_milli) && RX_MIRRORS(memory_mib) &&
                   offsetof(lsched_placement, mig_kind) - RX_PART_AT ==
                       sizeof(rx_part) &&
                   offsetof(lsched_placement, mig_start) + sizeof(int) ==
                       sizeof(lsched_placement),
               "rx_part mirrors lsched_placement, and part_out sets every "
               "member");

/* A node's running jobs' parts on it, by (end, trace position); a job
 * with several parts there holds adjacent entries. The entries are
 * j[0 .. n), at offset off in a block of cap entries: the job that
 * leaves is most often the first (it ends first), and leaves by moving
 * the offset, not the others; an entry joins by moving the fewer of those
 * before it (into the room in front) and those after it. The parts (read
 * by fit tests and first_left only) are p[0 .. cap), in the same
 * allocation before the entries (its start rounded up by shift bytes to a
 * cache line, so that no part straddles two), and never move: every slot of
 * the entry block names a part, the unused slots the unused parts, so an
 * entry that joins takes the part its slot names and one that leaves
 * leaves its part with its slot (moves carry the names along). */
typedef struct rx_list {
  rx_ent *j;
  union {
    rx_part_n *n; /* narrow */
    rx_part *w;   /* wide */
  } p;
  uint32_t n, off, cap, shift;
} rx_list;

typedef struct rx_where {
  int32_t node;
  uint32_t next;
} rx_where;

/* What a fit reads of a request (node lists and callbacks excluded). */
typedef struct rx_key {
  int64_t cpu, mem;
  uint64_t mask, features;
  int32_t k, milli;
} rx_key;

typedef struct rx_tree {
  rx_key key;
  int64_t *t;    /* t[1] the root; leaf of node i at t[P + i] */
  uint8_t *dirty; /* per node: its leaf is a lower bound (see resolve) */
  size_t cursor; /* log entries replayed */
  uint64_t used; /* clock of the last question */
  int built;
  int amin; /* the root's leaf (node) while no leaf changed, else -1 */
} rx_tree;

struct rx {
  engine *e;
  lsched_placement *scr; /* a node's parts with a candidate's */
  size_t scrcap;
  lsched_cluster *c;
  int n;     /* nodes */
  size_t P;  /* leaves: a power of two >= n */
  rx_list *node;      /* 64-byte aligned in node_raw: a header is never
                         split over two cache lines */
  void *node_raw;
  int wide;           /* every list's parts are rx_part, else rx_part_n */
  uint32_t *where_of; /* per slot: RX_ONE | its node (one part), its
                         first rx_where, or RX_NONE */
  size_t nwhere_of;
  rx_where *wp;
  size_t nwp, wpcap;
  uint32_t wfree;
  uint32_t *log;
  int64_t *log_b; /* per RX_FR entry: the latest end of the jobs that left */
  size_t nlog, logcap;
  /* Releases seen but not logged yet (rx_job_drop may find each was the
   * node's first job's part leaving): node and part, logged as RX_DEC by
   * flush() before anything else is logged or asked. */
  lsched_placement pend[RX_PEND];
  int npend;
  uint32_t *logpos; /* per node: 1 + its last log entry, 0 for none */
  size_t hi;        /* the highest cursor of a built tree */
  rx_tree tree[RX_TREES];
  int ntree;
  uint64_t clock;
  rx_tree *last;          /* the tree last answered, for last_req */
  lsched_request last_req; /* its request, which passed tree_of's tests */
  int stale; /* a node was added, updated or removed */
  int off;   /* this cluster cannot be answered per node */
  rx_moves mv; /* for reservation_kept (reserve.h) */
  /* A node whose t_n for the head (trace position hidx) was exact and <=
   * T when the log held hi entries (rx_within_note); log_gen moves when
   * the log restarts (compact, refresh). */
  struct {
    uint64_t hidx;
    int64_t T;
    size_t hi;
    uint64_t log_gen;
    int node, on;
  } wit;
  uint64_t log_gen;
};

/* ------------------------------------------------------------ the log */

static void compact(struct rx *x) {
  x->log_gen++;
  x->hi = 0;
  for (int i = 0; i < x->ntree; i++) {
    rx_tree *t = &x->tree[i];
    if (t->built && t->cursor == x->nlog)
      t->cursor = 0;
    else
      t->built = 0; /* rebuilt when asked */
  }
  x->nlog = 0;
  memset(x->logpos, 0, (size_t)x->n * sizeof *x->logpos);
}

/* Appends (or merges into the node's last entry, when no tree has passed
 * it) flags f for node, with b for RX_FR (merged: the later end). */
/* Inlined: every allocation, start and completion logs its nodes. */
static inline __attribute__((always_inline)) void
log_entry(struct rx *x, int node, uint32_t f, int64_t b) {
  if (node < 0 || node >= x->n)
    return;
  uint32_t lp = x->logpos[node];
  if (lp && lp - 1 >= x->hi) { /* every tree will replay its last entry */
    uint32_t *e = &x->log[lp - 1];
    if ((f & RX_FR) && (!(*e & RX_FR) || x->log_b[lp - 1] < b))
      x->log_b[lp - 1] = b;
    *e |= f;
    return;
  }
  if (x->nlog == x->logcap)
    compact(x);
  x->log_b[x->nlog] = b;
  x->log[x->nlog++] = (uint32_t)node | f;
  x->logpos[node] = (uint32_t)x->nlog;
}

/* Node `node` changed. dec: the change may have made its t_n earlier (a
 * release, a job's end moved, a state change); else only later or the
 * same (an allocation; a start: its allocation and its entry at its end),
 * so a tree may keep the old t_n as a lower bound until it matters. */
static inline __attribute__((always_inline)) void
touch(struct rx *x, int node, int dec) {
  log_entry(x, node, dec ? RX_DEC : RX_INC, 0);
}

/* The first job of node's order (its only part there) left and its part
 * was released (a completion, a preemption): with L' the order without it
 * and its part free, releasing the first k jobs of L' is releasing the
 * first k + 1 of L, so the first fit moves one job earlier and t_n (the
 * end of that job) stays, unless the head fit after that job alone (t_n
 * was its end; now RX_NOW). So a tree whose t_n is above the job's end b
 * keeps it, exact or lower bound, and recomputes it otherwise; several
 * such entries merged: above the latest b (each keeps t_n or makes it
 * RX_NOW, below every b). With exact estimates the job that completes is
 * its node's first, and t_n of a shape still waiting is later: most
 * completions then cost no fit test. */
static inline __attribute__((always_inline)) void
touch_fr(struct rx *x, int node, int64_t b) {
  log_entry(x, node, RX_FR, b);
}

/* The releases held back are logged as they are (RX_DEC). */
static __attribute__((noinline)) void flush_pend(struct rx *x) {
  for (int i = 0; i < x->npend; i++)
    touch(x, x->pend[i].node, 1);
  x->npend = 0;
}

/* Inlined: most calls (every start, allocation and drop) find none held. */
static inline __attribute__((always_inline)) void flush(struct rx *x) {
  if (x->npend)
    flush_pend(x);
}

static void obs_alloc(void *user, const lsched_cluster *c,
                      const lsched_placement *p, int trial) {
  (void)c;
  (void)trial;
  struct rx *x = user;
  x->mv.moves++;
  flush(x);
  touch(x, p->node, 0);
}

/* A release is held back (pend) for rx_job_drop, which follows it when a
 * job completes or is preempted; anything else logs it first (flush). */
static void obs_release(void *user, const lsched_cluster *c,
                        const lsched_placement *p, int trial) {
  (void)c;
  struct rx *x = user;
  x->mv.open_rel++;
  if (trial || x->npend == RX_PEND) {
    flush(x);
    touch(x, p->node, 1);
    return;
  }
  x->pend[x->npend++] = *p;
}

static void obs_node(void *user, const lsched_cluster *c, int node,
                     int change) {
  (void)c;
  struct rx *x = user;
  x->mv.moves++;
  flush(x);
  if (change == LSCHED_NODE_STATE)
    touch(x, node, 1);
  else
    x->stale = 1;
}

static const lsched_observer rx_obs = {
    .version = LSCHED_OBSERVER_VERSION,
    .on_alloc = obs_alloc,
    .on_release = obs_release,
    .on_node_change = obs_node,
};

/* ------------------------------------------------- the jobs per node */

static void list_free(rx_list *L) {
  if (L->p.n)
    free((char *)L->p.n - L->shift);
}

/* Bytes of a part in x's lists. */
static inline size_t part_size(const struct rx *x) {
  return x->wide ? sizeof(rx_part) : sizeof(rx_part_n);
}

/* A block for cap entries and their parts of ps bytes, parts first, at a
 * cache line (*shift: bytes skipped); NULL when out of memory. */
static char *block_new(uint32_t cap, size_t ps, uint32_t *shift) {
  /* Rounded up by hand: aligned_alloc costs 3x as much. */
  char *raw = malloc(cap * (ps + sizeof(rx_ent)) + 63);
  if (!raw)
    return NULL;
  *shift = (uint32_t)(-(uintptr_t)raw & 63);
  return raw + *shift;
}

/* list_room without room at the end (out of line: rare). */
static __attribute__((noinline)) int list_make_room(const struct rx *x,
                                                    rx_list *L) {
  rx_ent *b = L->j - L->off;
  if (L->off > 0) {
    /* Room in front: entries back to 0 (a block grows only when full,
     * as big as the most it held, rounded to a power of two; an
     * entry moves once per the free entries at the end, at most once
     * per removal). Each move leaves the name of the part it covers
     * where the entry was: the unused slots end up at the end, naming
     * the unused parts. */
    for (uint32_t i = 0; i < L->n; i++) {
      uint32_t free_part = b[i].part;
      b[i] = L->j[i];
      L->j[i].part = free_part;
    }
  } else {
    /* Full: every part in use, the new slots name the new parts. A
     * first block of 8 (an 8-GPU node's whole-GPU jobs; 100k@1.2
     * first-fit backfill holds ~6 a node): 16 took 10 MB of fresh pages
     * for 12,500 nodes' lists, two thirds of them never used (x1.03 over
     * 16 alternated rounds, 10 bytes a job less). */
    uint32_t nc = L->cap ? 2 * L->cap : 8, shift;
    const size_t ps = part_size(x);
    char *np = block_new(nc, ps, &shift);
    if (!np)
      return -1;
    b = (rx_ent *)(void *)(np + nc * ps);
    if (L->cap) {
      memcpy(np, L->p.n, L->cap * ps);
      memcpy(b, L->j, L->n * sizeof *b);
    }
    for (uint32_t i = L->cap; i < nc; i++)
      b[i].part = i;
    list_free(L);
    L->p.n = (rx_part_n *)(void *)np;
    L->shift = shift;
    L->cap = nc;
  }
  L->off = 0;
  L->j = b;
  return 0;
}

/* Room for one more entry at the end of L; -1 when out of memory. */
static inline int list_room(const struct rx *x, rx_list *L) {
  return L->off + L->n < L->cap ? 0 : list_make_room(x, L);
}

/* Whether a part (amounts checked by the cluster: >= 0) fits the narrow
 * form. */
static inline int fits_narrow(const lsched_placement *a) {
  return ((uint64_t)a->cpu_milli | (uint64_t)a->memory_mib) <= INT32_MAX &&
         (a->gpu_mask >> 32) == 0 && (unsigned)a->gpu_count <= UINT8_MAX &&
         (unsigned)a->gpu_milli <= UINT16_MAX;
}

/* Part q of node's list L as a placement. */
static inline void part_out(const struct rx *x, lsched_placement *d,
                            const rx_list *L, uint32_t q, int node) {
  d->version = LSCHED_PLACEMENT_VERSION;
  d->node = node;
  if (__builtin_expect(!x->wide, 1)) {
    const rx_part_n *a = &L->p.n[q];
    d->gpu_count = a->gpu_count;
    d->gpu_milli = a->gpu_milli;
    d->gpu_mask = a->gpu_mask;
    d->cpu_milli = a->cpu_milli;
    d->memory_mib = a->memory_mib;
  } else {
    memcpy((char *)d + RX_PART_AT, &L->p.w[q], sizeof(rx_part));
  }
  d->mig_kind = 0;
  d->mig_start = 0;
}

/* Every list's parts in the wide form from now on (a part came that the
 * narrow one cannot hold): each block copied into a new one, its entries
 * as they are (unused slots name unused parts, whose contents are never
 * read). 0, or -1 when out of memory (x unchanged). */
static __attribute__((noinline)) int widen(struct rx *x) {
  char **nb = calloc((size_t)x->n, sizeof *nb);
  uint32_t *ns = malloc((size_t)x->n * sizeof *ns);
  int fail = !nb || !ns;
  for (int i = 0; i < x->n && !fail; i++)
    if (x->node[i].cap &&
        !(nb[i] = block_new(x->node[i].cap, sizeof(rx_part), &ns[i])))
      fail = 1;
  if (fail) {
    for (int i = 0; nb && i < x->n; i++)
      if (nb[i])
        free(nb[i] - ns[i]);
    free(nb);
    free(ns);
    return -1;
  }
  for (int i = 0; i < x->n; i++) {
    rx_list *L = &x->node[i];
    if (!L->cap)
      continue;
    rx_part *w = (rx_part *)(void *)nb[i];
    rx_ent *b = (rx_ent *)(void *)(w + L->cap);
    memcpy(b, L->j - L->off, L->cap * sizeof *b);
    for (uint32_t k = 0; k < L->n; k++) {
      lsched_placement a;
      part_out(x, &a, L, L->j[k].part, i); /* (x still narrow) */
      memcpy(&w[L->j[k].part], (const char *)&a + RX_PART_AT,
             sizeof(rx_part));
    }
    list_free(L);
    L->p.w = w;
    L->j = b + L->off;
    L->shift = ns[i];
  }
  x->wide = 1;
  free(nb);
  free(ns);
  return 0;
}

/* Whether entry a comes after slot job ending at end, in the order of
 * ends (trace positions read only for equal ends: rare). */
static inline int ent_after(const engine *e, const rx_ent *a, int64_t end,
                            uint32_t job) {
  return a->end > end ||
         (a->end == end && e->slots[a->job].idx > e->slots[job].idx);
}

/* Inlined: every start (10k@1.2 first-fit backfill: 0.9 M instructions
 * of calls). */
static inline __attribute__((always_inline)) int
list_insert(struct rx *x, rx_list *L, int64_t end, uint32_t job,
            const lsched_placement *part) {
  const engine *e = x->e;
  if (__builtin_expect(!x->wide && !fits_narrow(part), 0) && widen(x))
    return -1;
  /* The first entry after the new one, by halving; the later ones move
   * up one slot, or the earlier ones down (fewer, and room in front).
   * The new entry takes the part named by the slot that comes into
   * use. */
  uint32_t i = 0, hi = L->n, q;
  while (i < hi) {
    uint32_t mid = (i + hi) / 2;
    if (ent_after(e, &L->j[mid], end, job))
      hi = mid;
    else
      i = mid + 1;
  }
  if (L->off > 0 && i < L->n - i) {
    L->off--;
    L->j--;
    q = L->j[0].part;
    for (uint32_t k = 0; k < i; k++)
      L->j[k] = L->j[k + 1];
  } else {
    if (list_room(x, L))
      return -1;
    q = L->j[L->n].part;
    for (uint32_t k = L->n; k > i; k--)
      L->j[k] = L->j[k - 1];
  }
  rx_ent *d = &L->j[i];
  d->end = end;
  d->job = job;
  d->part = q;
  if (__builtin_expect(!x->wide, 1)) {
    rx_part_n *o = &L->p.n[q];
    o->cpu_milli = (int32_t)part->cpu_milli;
    o->memory_mib = (int32_t)part->memory_mib;
    o->gpu_mask = (uint32_t)part->gpu_mask;
    o->gpu_milli = (uint16_t)part->gpu_milli;
    o->gpu_count = (uint8_t)part->gpu_count;
  } else {
    memcpy(&L->p.w[q], (const char *)part + RX_PART_AT, sizeof(rx_part));
  }
  L->n++;
  return 0;
}

/* Its entries are adjacent; how many left (*end: their end, when some
 * did). Their slots, naming their parts, become unused. Inlined: every
 * completion removes its job. */
static inline __attribute__((always_inline)) uint32_t
list_remove(rx_list *L, uint32_t job, int64_t *end) {
  uint32_t i = 0, k;
  while (i < L->n && L->j[i].job != job)
    i++;
  for (k = i; k < L->n && L->j[k].job == job; k++)
    ;
  if (k == i)
    return 0;
  *end = L->j[i].end;
  if (i == 0) { /* the first: the offset moves */
    L->off += k;
    L->j += k;
  } else {
    /* The later ones down; the names of the parts left go up with the
     * slots that become unused (as in list_room). */
    for (uint32_t a = i; a + (k - i) < L->n; a++) {
      uint32_t free_part = L->j[a].part;
      L->j[a] = L->j[a + (k - i)];
      L->j[a + (k - i)].part = free_part;
    }
  }
  L->n -= k - i;
  return k - i;
}

/* Room in x->scr for L's parts and one more; -1 when out of memory. The
 * test inline: every fit test asks (a call per leaf). */
static inline int scr_room(struct rx *x, const rx_list *L) {
  return (size_t)L->n + 1 <= x->scrcap
             ? 0
             : grow_array((void **)&x->scr, &x->scrcap, (size_t)L->n + 1,
                          sizeof *x->scr);
}

/* L's parts in order into x->scr (room for one more); -1 when out of
 * memory. */
static int list_parts(struct rx *x, const rx_list *L, int node) {
  if (scr_room(x, L))
    return -1;
  lsched_placement *d = x->scr;
  const rx_ent *j = L->j;
  for (uint32_t i = 0, n = L->n; i < n; i++)
    part_out(x, &d[i], L, j[i].part, node);
  return 0;
}

/* The held-back release of L's first entry, when it is sl's only part on
 * the node and was released as it is held: taken out of pend, 1. For a
 * job on one node (one: where_of says so) the part is read from its slot,
 * not from L: the entry's part is the job's allocation (every change of
 * it is set again, rx_job_set), the slot was just read to release it, and
 * the entry's part would be one more cache line per completion (100k@1.2
 * first-fit backfill: 0.4 M of 6.0 M last-level read misses). Inlined:
 * every completion (10k@1.2 first-fit backfill: 0.9 M instructions). */
static inline __attribute__((always_inline)) int
first_left(struct rx *x, const rx_list *L, uint32_t sl, int node, int one) {
  if (L->n == 0 || L->j[0].job != sl || (L->n > 1 && L->j[1].job == sl))
    return 0;
  const engine *e = x->e;
  lsched_placement own;
  const lsched_placement *a = &own;
  if (one && e->slots[sl].ngang <= 1 && !(e->hooks & SIM_HOOK_FILL_PART))
    job_parts(e, sl, &own);
  else
    part_out(x, &own, L, L->j[0].part, node);
  for (int i = 0; i < x->npend; i++) {
    const lsched_placement *b = &x->pend[i];
    if (b->node == a->node && b->cpu_milli == a->cpu_milli &&
        b->memory_mib == a->memory_mib && b->gpu_milli == a->gpu_milli &&
        b->gpu_mask == a->gpu_mask) {
      if (i != --x->npend) /* usually the only one held */
        x->pend[i] = x->pend[x->npend];
      return 1;
    }
  }
  return 0;
}

/* sl's entries on node taken out. Inlined: every completion. */
static inline __attribute__((always_inline)) void
drop_on(struct rx *x, uint32_t sl, int node, int one) {
  rx_list *L = &x->node[node];
  int64_t end = 0;
  uint32_t k;
  if (x->npend && first_left(x, L, sl, node, one)) {
    k = list_remove(L, sl, &end);
    touch_fr(x, node, end);
  } else {
    k = list_remove(L, sl, &end);
    touch(x, node, 1);
  }
  /* Left at or after its estimated end: its parts' releases explained
   * (reservation_kept); before it, a change. */
  if (end <= x->e->now)
    x->mv.open_rel -= k;
  else
    x->mv.moves++;
}

int rx_prefetch_node_of(const struct rx *x, uint32_t sl) {
  if (sl >= x->nwhere_of)
    return -1;
  uint32_t w = x->where_of[sl];
  if (w == RX_NONE || !(w & RX_ONE))
    return -1;
  int node = (int)(w & RX_NODE);
  if (node >= x->n)
    return -1;
  __builtin_prefetch(&x->node[node], 0, 3);
  return node;
}

void rx_prefetch(const struct rx *x, uint32_t sl, int node, int joins) {
  if (sl < x->nwhere_of)
    __builtin_prefetch(&x->where_of[sl], 1, 3);
  if (node < 0 || node >= x->n)
    return;
  const rx_list *L = &x->node[node];
  if (!joins) {
    __builtin_prefetch(L->j, 1, 3); /* its first entry: the usual leaver */
    return;
  }
  /* A joining entry is put by halving and moves those on one side: the
   * entries' lines from the one in front (at most 8: 32 entries). */
  const char *a = (const char *)(L->off > 0 ? L->j - 1 : L->j);
  const char *b = (const char *)(L->j + L->n);
  for (int k = 0; a <= b && k < 8; a += 64, k++)
    __builtin_prefetch(a, 1, 3);
}

void rx_job_drop(struct rx *x, uint32_t sl) {
  if (sl >= x->nwhere_of) {
    flush(x);
    return;
  }
  uint32_t w = x->where_of[sl];
  if (w != RX_NONE && (w & RX_ONE)) {
    drop_on(x, sl, (int)(w & RX_NODE), 1);
    w = RX_NONE;
  }
  while (w != RX_NONE) {
    rx_where *r = &x->wp[w];
    drop_on(x, sl, r->node, 0);
    uint32_t nx = r->next;
    r->next = x->wfree;
    x->wfree = w;
    w = nx;
  }
  x->where_of[sl] = RX_NONE;
  flush(x);
}

int rx_job_set(struct rx *x, uint32_t sl, int64_t end, int start) {
  int running = sl < x->nwhere_of && x->where_of[sl] != RX_NONE;
  if (start < 0) /* a start if it was not running */
    start = !running;
  x->mv.moves++;
  flush(x);
  if (running)
    rx_job_drop(x, sl);
  if (sl >= x->nwhere_of) {
    size_t nc = x->nwhere_of ? x->nwhere_of : 256;
    while (nc <= sl)
      nc *= 2;
    uint32_t *nw = realloc(x->where_of, nc * sizeof *nw);
    if (!nw)
      return -1;
    for (size_t i = x->nwhere_of; i < nc; i++)
      nw[i] = RX_NONE;
    x->where_of = nw;
    x->nwhere_of = nc;
  }
  lsched_placement parts[SIM_MAX_PARTS];
  int np = job_parts(x->e, sl, parts);
  if (np == 1) { /* nearly every job: its node in where_of */
    int node = parts[0].node;
    if (node < 0 || node >= x->n)
      return 0;
    if (list_insert(x, &x->node[node], end, sl, &parts[0]))
      return -1;
    x->where_of[sl] = RX_ONE | (uint32_t)node;
    touch(x, node, !start);
    return 0;
  }
  for (int q = 0; q < np; q++) {
    int node = parts[q].node, dup = 0;
    for (int r = 0; r < q; r++)
      dup |= parts[r].node == node;
    if (node < 0 || node >= x->n)
      continue;
    if (dup) { /* a second part on a node it is on already */
      if (list_insert(x, &x->node[node], end, sl, &parts[q]))
        return -1;
      continue;
    }
    if (x->wfree == RX_NONE) {
      if (x->nwp >= RX_ONE ||
          grow_array((void **)&x->wp, &x->wpcap, x->nwp + 1, sizeof *x->wp))
        return -1;
      x->wp[x->nwp].next = RX_NONE;
      x->wfree = (uint32_t)x->nwp++;
    }
    if (list_insert(x, &x->node[node], end, sl, &parts[q]))
      return -1;
    uint32_t w = x->wfree;
    x->wfree = x->wp[w].next;
    x->wp[w].node = node;
    x->wp[w].next = x->where_of[sl];
    x->where_of[sl] = w;
    touch(x, node, !start);
  }
  return 0;
}

/* ------------------------------------------------------- t_n of a node */

/* t_n of node for req (see the top); *err set when the node cannot be
 * answered (an inconsistent state). */
static int64_t leaf(struct rx *x, int node, const lsched_request *req,
                    int *err) {
  rx_list *L = &x->node[node];
  if (list_parts(x, L, node)) {
    *err = 1;
    return INT64_MAX;
  }
  int m = lsched_fits_after_held(x->c, node, req, NULL, x->scr, (int)L->n);
  if (m == LSCHED_ENOFIT)
    return INT64_MAX;
  if (m < 0) {
    *err = 1;
    return INT64_MAX;
  }
  return m == 0 ? RX_NOW : L->j[m - 1].end;
}

/* --------------------------------------------------------- the trees */

static void set_leaf(struct rx *x, rx_tree *t, int node, int64_t v) {
  size_t i = x->P + (size_t)node;
  if (t->t[i] == v)
    return;
  t->t[i] = v;
  t->amin = -1;
  for (i /= 2; i >= 1; i /= 2) {
    int64_t a = t->t[2 * i], b = t->t[2 * i + 1], m = a < b ? a : b;
    if (t->t[i] == m)
      break;
    t->t[i] = m;
  }
}

static void note_cursor(struct rx *x, size_t cursor) {
  if (cursor > x->hi)
    x->hi = cursor;
}

/* 0, or -1 (*err: cannot answer). */
static int build_tree(struct rx *x, rx_tree *t, const lsched_request *req) {
  if (!t->t && !(t->t = malloc(2 * x->P * sizeof *t->t)))
    return -1;
  if (!t->dirty && !(t->dirty = malloc(x->P)))
    return -1;
  memset(t->dirty, 0, x->P);
  int err = 0;
  for (size_t i = 0; i < x->P; i++)
    t->t[x->P + i] = i < (size_t)x->n ? leaf(x, (int)i, req, &err) : INT64_MAX;
  for (size_t i = x->P; i-- > 1;) {
    int64_t a = t->t[2 * i], b = t->t[2 * i + 1];
    t->t[i] = a < b ? a : b;
  }
  if (err)
    return -1;
  t->amin = -1;
  t->built = 1;
  t->cursor = x->nlog;
  note_cursor(x, t->cursor);
  return 0;
}

/* Replays the log: a node that may have become earlier is recomputed (an
 * RX_FR entry: only when its leaf is not above the entry's b), one that
 * can only have become later is marked dirty (its old t_n a lower bound:
 * resolve() recomputes it when it decides a minimum). A recomputed leaf
 * is exact in the present state, whatever the node's other entries. */
static int sync_tree(struct rx *x, rx_tree *t, const lsched_request *req,
                     int skip) {
  int err = 0;
  for (size_t p = t->cursor; p < x->nlog; p++) {
    uint32_t f = x->log[p], node = f & RX_NODE;
    if (node == (uint32_t)skip)
      continue;
    uint32_t last = x->logpos[node];
    /* Not its last entry (the node was logged again after another tree
     * replayed this one; this tree has not): replayed as well, unless the
     * last one recomputes the leaf anyway. */
    if (last != p + 1 && (x->log[last - 1] & RX_DEC))
      continue;
    if ((f & RX_DEC) ||
        ((f & RX_FR) && t->t[x->P + node] <= x->log_b[p])) {
      set_leaf(x, t, (int)node, leaf(x, (int)node, req, &err));
      t->dirty[node] = 0;
    } else if (f & RX_INC) {
      t->dirty[node] = 1;
    }
  }
  t->cursor = x->nlog;
  note_cursor(x, t->cursor);
  return err ? -1 : 0;
}

/* The exact least t_n in the subtree of tree entry i: while a dirty leaf
 * holds it, that leaf is recomputed. For the root, its leaf is kept
 * (amin): a clean leaf that holds the least of all leaves (exact or
 * lower bounds) is the exact least, until a leaf changes (set_leaf). */
static int64_t resolve(struct rx *x, rx_tree *t, size_t i,
                       const lsched_request *req, int *err) {
  if (i == 1 && t->amin >= 0 && !t->dirty[t->amin])
    return t->t[1];
  for (;;) {
    size_t j = i;
    while (j < x->P)
      j = t->t[2 * j] == t->t[j] ? 2 * j : 2 * j + 1;
    int node = (int)(j - x->P);
    if (t->t[i] == INT64_MAX || !t->dirty[node]) {
      if (i == 1)
        t->amin = t->t[1] == INT64_MAX ? -1 : node;
      return t->t[i];
    }
    t->dirty[node] = 0;
    set_leaf(x, t, node, leaf(x, node, req, err));
  }
}

/* The exact least t_n over every node but m. */
static int64_t min_but(struct rx *x, rx_tree *t, int m,
                       const lsched_request *req, int *err) {
  for (;;) {
    int64_t other = INT64_MAX;
    size_t at = 0;
    for (size_t i = x->P + (size_t)m; i > 1; i /= 2)
      if (t->t[i ^ 1] < other) {
        other = t->t[i ^ 1];
        at = i ^ 1;
      }
    if (other == INT64_MAX || resolve(x, t, at, req, err) == other)
      return other;
  }
}

static int key_eq(const rx_key *a, const rx_key *b) {
  return a->cpu == b->cpu && a->mem == b->mem && a->mask == b->mask &&
         a->features == b->features && a->k == b->k && a->milli == b->milli;
}

/* The tree of key (not yet in sync; not built the first time a shape is
 * asked). Built at the first question, not at the second after a walk:
 * with the per-node lists kept the walk's heap is not (reserve.c), and
 * rebuilding it costs a key per running job, more than a fit test per
 * node when nodes hold several jobs (100k@1.2 first-fit backfill: a new
 * shape's walk 12 M instructions, its tree 6 M). */
static rx_tree *tree_pick(struct rx *x, const rx_key *k) {
  for (int i = 0; i < x->ntree; i++)
    if (key_eq(&x->tree[i].key, k)) {
      x->tree[i].used = x->clock;
      return &x->tree[i];
    }
  rx_tree *t;
  if (x->ntree < RX_TREES) {
    t = &x->tree[x->ntree++];
    t->t = NULL;
    t->dirty = NULL;
  } else {
    t = &x->tree[0];
    for (int i = 1; i < x->ntree; i++)
      if (x->tree[i].used < t->used)
        t = &x->tree[i];
  }
  t->key = *k;
  t->built = 0;
  t->used = x->clock;
  return t;
}

/* ------------------------------------------------------------- set-up */

/* Whether this cluster can be answered per node, and arrays sized to its
 * nodes (after a node was added, updated or removed). 0, or -1 when out
 * of memory. */
static int refresh(struct rx *x) {
  x->stale = 0;
  lsched_cluster *c = x->c;
  int n = lsched_cluster_node_count(c);
  x->off = lsched_cluster_pool_count(c) > 0 || (uint32_t)n > RX_NODE;
  for (int i = 0; i < n && !x->off; i++) {
    lsched_node_free nf = LSCHED_NODE_FREE_INIT;
    if (lsched_cluster_node_free(c, i, &nf, NULL, 0) >= 0 &&
        nf.gpu_mode == LSCHED_GPU_MIG)
      x->off = 1;
  }
  if (n > x->n) {
    /* 64-byte aligned: 32-byte headers at malloc's 16-byte alignment
     * straddled two lines one in two. */
    void *at = x->node;
    if (grow_aligned(&x->node_raw, &at, (size_t)x->n, (size_t)n,
                     sizeof(rx_list), 64))
      return -1;
    rx_list *nl = at;
    memset(nl + x->n, 0, (size_t)(n - x->n) * sizeof *nl);
    x->node = nl;
    uint32_t *lp = realloc(x->logpos, (size_t)n * sizeof *lp);
    if (!lp)
      return -1;
    x->logpos = lp;
  }
  size_t P = 1;
  while (P < (size_t)n)
    P *= 2;
  /* A full log restarts, and a tree that has not replayed all of it is
   * built again (a fit test per node): 16 entries per node (12 bytes
   * each) leave that rare with candidates answered without replays
   * (rx_within_seen); 4 per node rebuilt a tree every few thousand
   * events (random backfill 10k@1.2: 17.8 k fit tests, now 9.0 k). */
  size_t cap = 16 * (size_t)n + 1024;
  if (cap > x->logcap) {
    uint32_t *nlg = realloc(x->log, cap * sizeof *nlg);
    if (!nlg)
      return -1;
    x->log = nlg;
    int64_t *nb = realloc(x->log_b, cap * sizeof *nb);
    if (!nb)
      return -1;
    x->log_b = nb;
    x->logcap = cap;
  }
  x->n = n;
  if (P != x->P) {
    for (int i = 0; i < x->ntree; i++) {
      free(x->tree[i].t);
      free(x->tree[i].dirty);
      x->tree[i].t = NULL;
      x->tree[i].dirty = NULL;
    }
    x->P = P;
  }
  for (int i = 0; i < x->ntree; i++)
    x->tree[i].built = 0;
  x->log_gen++;
  x->nlog = 0;
  x->hi = 0;
  memset(x->logpos, 0, (size_t)n * sizeof *x->logpos);
  return 0;
}

void rx_close(struct rx *x) {
  if (!x)
    return;
  lsched_cluster_remove_observer(x->c, &rx_obs, x);
  for (int i = 0; i < x->n; i++) {
    list_free(&x->node[i]);
  }
  free(x->node_raw);
  for (int i = 0; i < x->ntree; i++) {
    free(x->tree[i].t);
    free(x->tree[i].dirty);
  }
  free(x->where_of);
  free(x->wp);
  free(x->log);
  free(x->log_b);
  free(x->logpos);
  free(x->scr);
  free(x);
}

struct rx *rx_open(engine *e) {
  if (!policy_fit_answers(e->pol))
    return NULL;
  struct rx *x = calloc(1, sizeof *x);
  if (!x)
    return NULL;
  x->e = e;
  x->c = e->sc->c;
  x->wfree = RX_NONE;
  if (refresh(x) || lsched_cluster_add_observer(x->c, &rx_obs, x)) {
    rx_close(x); /* removes the observer if it was added */
    return NULL;
  }
  return x;
}

/* ------------------------------------------------------------ answers */

/* What tree_of's tests and key read of two requests is the same. */
static int same_req(const lsched_request *a, const lsched_request *b) {
  return a->cpu_milli == b->cpu_milli && a->memory_mib == b->memory_mib &&
         a->gpu_count == b->gpu_count && a->gpu_milli == b->gpu_milli &&
         a->model_mask == b->model_mask && a->version == b->version &&
         a->mig_kind == b->mig_kind &&
         a->mig_compute_milli == b->mig_compute_milli &&
         a->mig_memory_mib == b->mig_memory_mib &&
         a->features == b->features && a->node_allowed == b->node_allowed &&
         a->node_filter == b->node_filter &&
         a->speed_scope == b->speed_scope;
}

/* The tree for req (not yet in sync, or not built): NULL when req is not
 * answered per node; *err on out of memory. */
static rx_tree *tree_of(struct rx *x, const lsched_request *req, int *err) {
  flush(x);
  if (x->stale) {
    x->last = NULL;
    if (refresh(x)) {
      *err = 1;
      return NULL;
    }
  }
  if (x->off)
    return NULL;
  if (x->last && same_req(&x->last_req, req)) {
    x->last->used = ++x->clock;
    return x->last;
  }
  if (lsched_request_validate(req) != LSCHED_OK ||
      (req->version >= 2 && req->mig_kind != 0) ||
      (req->version >= 3 && (req->node_allowed || req->node_filter)) ||
      lsched_place_splits(x->c, req) != 0)
    return NULL;
  rx_key k;
  memset(&k, 0, sizeof k);
  k.cpu = req->cpu_milli;
  k.mem = req->memory_mib;
  k.mask = req->model_mask;
  k.features = req->version >= 3 ? req->features : 0;
  k.k = req->gpu_count;
  k.milli = req->gpu_milli;
  x->clock++;
  rx_tree *t = tree_pick(x, &k);
  x->last = t;
  if (t)
    x->last_req = *req;
  return t;
}

int rx_answer(struct rx *x, const lsched_request *req, uint32_t cand,
              int64_t cand_end, int64_t *out) {
  int err = 0;
  rx_tree *t = tree_of(x, req, &err);
  if (!t)
    return err ? -1 : 0;
  if (cand != RX_NONE && rx_job_set(x, cand, cand_end, 0))
    return -1;
  int rc = !t->built ? build_tree(x, t, req) : sync_tree(x, t, req, -1);
  int64_t m = 0;
  if (!rc) {
    m = resolve(x, t, 1, req, &err);
    rc = err ? -1 : 0;
  }
  if (cand != RX_NONE)
    rx_job_drop(x, cand);
  if (rc) {
    t->built = 0;
    return -1;
  }
  *out = m;
  return 1;
}

/* A log entry for node whatever the dedupe says (its leaf was left stale
 * in a tree that passed its last entry). */
static void touch_again(struct rx *x, int node) {
  if (x->nlog == x->logcap)
    compact(x);
  x->log[x->nlog++] = (uint32_t)node | RX_DEC;
  x->logpos[node] = (uint32_t)x->nlog;
}

/* The built tree of req for an "at or before T" question, or NULL with
 * *rc the answer to give: 2 (ask in full) or -1 (out of memory). */
static rx_tree *within_tree(struct rx *x, const lsched_request *req,
                            int *rc) {
  int err = 0;
  rx_tree *t = tree_of(x, req, &err);
  *rc = err ? -1 : 2;
  return t && t->built ? t : NULL;
}

/* min(lm, other) clamped to now, at or before T: 1 or 0; 2 (ask in full)
 * when the candidate's node fits with nothing released. */
static int within_answer(const struct rx *x, int64_t lm, int64_t other,
                         int64_t T) {
  if (lm == RX_NOW)
    return 2;
  int64_t v = lm < other ? lm : other;
  return v != INT64_MAX && (v < x->e->now ? x->e->now : v) <= T;
}

int rx_within(struct rx *x, const lsched_request *req, uint32_t cand,
              int64_t cand_end, int64_t T) {
  int err = 0, rc;
  rx_tree *t = within_tree(x, req, &rc);
  if (!t)
    return rc;
  lsched_placement parts[SIM_MAX_PARTS];
  int np = job_parts(x->e, cand, parts);
  int m = parts[0].node;
  for (int q = 1; q < np; q++)
    if (parts[q].node != m)
      return 2;
  if (m < 0 || m >= x->n)
    return 2;
  /* In sync but for m, whose leaf stays as it was and is logged again. */
  err = sync_tree(x, t, req, m) ? 1 : 0;
  touch_again(x, m);
  /* The least t_n over the other nodes. */
  int64_t other = err ? 0 : min_but(x, t, m, req, &err);
  if (err) {
    t->built = 0;
    return -1;
  }
  if (other == RX_NOW)
    return 2; /* the first group's end: in full (rare) */
  if (other <= T)
    return 1; /* max(other, now) <= T as now <= T */
  if (rx_job_set(x, cand, cand_end, 0))
    return -1;
  int64_t lm = leaf(x, m, req, &err);
  rx_job_drop(x, cand);
  return err ? -1 : within_answer(x, lm, other, T);
}

int rx_within_held(struct rx *x, const lsched_request *req,
                   const lsched_placement *p, uint32_t cand, int64_t cand_end,
                   int64_t T) {
  int err = 0, rc;
  rx_tree *t = within_tree(x, req, &rc);
  if (!t)
    return rc;
  int m = p->node;
  if (m < 0 || m >= x->n)
    return 2;
  /* The least over all nodes first: when its leaf is not m's, it is the
   * least over the others (a descent, kept while no leaf changes). */
  int64_t other = 0;
  if (sync_tree(x, t, req, -1)) {
    err = 1;
  } else {
    other = resolve(x, t, 1, req, &err);
    if (!err && t->amin == m)
      other = min_but(x, t, m, req, &err);
  }
  if (err) {
    t->built = 0;
    return -1;
  }
  if (other == RX_NOW)
    return 2;
  if (other <= T)
    return 1;
  /* m's parts with the candidate's at its place in the order of ends. */
  rx_list *L = &x->node[m];
  if (scr_room(x, L))
    return -1;
  uint32_t at = 0;
  for (; at < L->n && !ent_after(x->e, &L->j[at], cand_end, cand); at++)
    part_out(x, &x->scr[at], L, L->j[at].part, m);
  x->scr[at] = *p;
  for (uint32_t i = at; i < L->n; i++)
    part_out(x, &x->scr[i + 1], L, L->j[i].part, m);
  int k = lsched_fits_after_held(x->c, m, req, p, x->scr, (int)L->n + 1);
  if (k < 0 && k != LSCHED_ENOFIT)
    return -1;
  int64_t lm = k == LSCHED_ENOFIT ? INT64_MAX
               : k == 0           ? RX_NOW
               : (uint32_t)(k - 1) == at
                   ? cand_end
                   : L->j[(uint32_t)(k - 1) < at ? k - 1 : k - 2].end;
  return within_answer(x, lm, other, T);
}

/* ------------------------------------------------- kept reservations */

const rx_moves *rx_moves_of(const struct rx *x) { return &x->mv; }

/* ------------------------------------------ witnesses of "within T" */

/*
 * rx_within_held answers 1 when some node other than the candidate's has
 * t_n <= T. Between candidates of a pass only the nodes of the jobs that
 * start change, so a node found with an exact t_n <= T (the tree's least,
 * just resolved) answers the next candidates placed elsewhere while it has
 * no log entry after the ones the tree had replayed: every change of a
 * node (allocation, release, a job's end, its state) logs it, and after a
 * replay a change appends a new entry (log_entry merges only into entries
 * no tree has passed), so logpos moves past hi.
 */
void rx_within_note(struct rx *x, uint64_t hidx, int64_t T) {
  rx_tree *t = x->last;
  x->wit.on = 0;
  if (!t || !t->built || t->amin < 0 || t->dirty[t->amin] ||
      t->t[1] == RX_NOW || t->t[1] > T || t->cursor != x->nlog)
    return;
  x->wit.hidx = hidx;
  x->wit.T = T;
  x->wit.hi = x->nlog;
  x->wit.log_gen = x->log_gen;
  x->wit.node = t->amin;
  x->wit.on = 1;
}

int rx_within_seen(struct rx *x, uint64_t hidx, int m, int64_t T) {
  if (!x->wit.on || x->wit.hidx != hidx || x->wit.T != T || x->wit.node == m)
    return 0;
  flush(x);
  if (x->wit.log_gen != x->log_gen || x->logpos[x->wit.node] > x->wit.hi) {
    x->wit.on = 0;
    return 0;
  }
  return 1;
}
