/*
 * The waiting queue indexed by request shape, for the disciplines that pass
 * over the whole queue (skip, backfill): a pass costs one placement attempt
 * per distinct shape that can newly fit plus the jobs it starts, not a
 * visit of every waiting job.
 *
 * Why it gives the same decisions as the plain pass (queue_skip.c,
 * queue_backfill.c, kept as the reference; sim_options.queue_plain): a
 * placement attempt depends on the job only through its request, and an
 * attempt that does not fit changes nothing (no policy draws or records
 * anything on LSCHED_ENOFIT). Between two releases of resources (an
 * "epoch": it begins at a pass with e->freed) the cluster only loses
 * capacity, so a request that failed once in the epoch fails again; the
 * plain pass relies on the same fact (its per-pass memo of failed shapes,
 * and retrying only unseen arrivals when nothing was released). So the
 * index keeps, per shape, its queued jobs in queue order, whether it failed
 * in this epoch, and a cursor at its first job not yet tried in the epoch;
 * a pass merges the shapes that have untried jobs and did not fail, in
 * queue order (a heap keyed by the position of each shape's cursor), and
 * drops a shape at its first failure. That is exactly the sequence of
 * attempts of the plain pass minus attempts that would fail.
 *
 * The queue array stays the order of record (migration reads its head, the
 * timeline its length): a started job leaves a tombstone at its position,
 * the head is kept on a live job, and the array is compacted when
 * tombstones outnumber live jobs (amortised O(1) per job). e->qlen counts
 * live jobs; the array holds qx->span entries from e->qhead. An insertion
 * anywhere but at the end (a preempted job behind the head) compacts and
 * rebuilds the index: O(queue), and only after a preemption, which
 * released resources anyway.
 *
 * Across epochs, for a policy that promises LSCHED_POLICY_ANY_FIT or
 * LSCHED_POLICY_ANY_FIT_DRAWS (it places a one-part request exactly when
 * some node fits it; a call that does not place draws nothing) on a cluster
 * without GPU pools: a shape that failed (no node fit it) is known not to
 * fit while no node released on since fits it (the others only lost
 * room), so its attempt is answered by lsched_fits() on those nodes (the
 * engine's release log, rlog.h) instead of the policy (known_nofit; a
 * node change forgets it all). Same attempts' outcomes. skip and backfill
 * ask it of every queued shape when a release opens the epoch
 * (open_merge), before any start of the merge: a shape it answers
 * fails in the epoch without entering the merge (its turn would come
 * after starts only, which take room), so the merge holds the shapes that
 * may fit, usually none or one.
 *
 * Under backfill, within a pass and until a candidate starts, a shape
 * whose job was placed in trial and kept waiting (it would delay the
 * head) keeps that placement and the job's estimated end: a later job of
 * the shape whose estimated end is no earlier is kept waiting without a
 * trial (rejected_before: for a policy that promises LSCHED_POLICY_ANY_FIT
 * the same request on the unchanged cluster places the same, and a later
 * end can only make the head's reservation later). Same decisions. Such
 * a job's shape is not asked known_nofit: it was placed on the cluster as
 * it is. A shape with many such jobs in a pass jumps over them to its
 * next job with a shorter estimated run time (kept_next, O(log jobs);
 * see "backfill's jumps over kept jobs" below), so a pass over a queue
 * of millions costs its trials, not its length. A pass after no release,
 * with no shape pending and a head that failed before and holds its
 * reservation, returns at once (it would try nothing); so does one after
 * a release with nothing queued (skip's too), once the epoch has begun.
 *
 * Used when the run has no part that rewrites requests or acts before a
 * placement (the MIG part: its requests depend on its state), else the
 * plain pass runs. Memory: 24 bytes per slot, about 300 per distinct
 * shape ever queued and 4 per fragtrack shape id queued (slot_shape);
 * for backfill's jumps, 4 bytes more per slot and, per shape that jumps,
 * 20-80 bytes per queued job of it (qx_durs).
 */
#include "engine_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QX_NONE UINT32_MAX
#define QX_TOMB UINT32_MAX /* a started job's place in e->queue */

/* What a placement attempt sees of a job: its request (sim_job_request;
 * priority included, finer than the memo's key, which is safe). */
typedef struct qx_key {
  int64_t cpu, mem, mig_mem;
  uint64_t mask;
  /* The request's priority (the job's QoS, 0..255), plus 256 x (1 + its
   * speed class) under by_class. */
  int32_t k, milli, mig, prio;
} qx_key;

typedef struct qx_shape {
  qx_key key;
  uint32_t first, last; /* its queued jobs (slots), in queue order */
  uint32_t cursor;      /* its first job not tried in this epoch, or NONE */
  uint32_t failed;      /* the epoch in which it last failed to fit */
  uint32_t fit_pass;    /* the pass whose opening found it may fit */
  uint32_t live_pos;    /* index in qx->live while it has queued jobs */
  uint32_t hnext;       /* hash chain */
  uint32_t count;       /* queued jobs */
  uint8_t pending;      /* on qx->pend */
  uint8_t gang;         /* may be placed on several nodes: see below */
  /* No node fit it at this mark of the engine's release log (gen 0: not
   * known); see known_nofit. */
  sim_rlog_mark nf;
  /* Backfill: in generation rj_gen (see queue_index.rj_gen) a job of this
   * shape was placed on rj_part in trial and kept waiting, its estimated
   * end rj_end delaying the head; see rejected_before. */
  uint64_t rj_gen;
  int64_t rj_end;
  lsched_placement rj_part;
  /* The request of its first job: what decides a fit is the key, so any
   * of its jobs' requests answers lsched_fits() alike (known_nofit). */
  lsched_request req;
} qx_shape;

/* A shape's state for backfill's jumps over kept jobs (kept_next), apart
 * from qx_shape (qx->jx, by shape): 16 bytes more there made every
 * &x->shape[s] one instruction dearer (a stride of 296 bytes against
 * 280), +0.5% of 100k@1.2 first-fit skip's instructions. jumped: 1 its
 * cursor jumped in this generation and has not been reached since
 * (rewound when the generation ends), 2 reached since, 0 neither (only 1
 * and 2 are on qx->jumped, once); dur its jobs' estimated run times, once
 * rejected_before has kept QX_JUMP_AFTER of them in a pass (NULL before;
 * nrej of them in pass rej_pass). */
typedef struct qx_jump {
  struct qx_durs *dur;
  uint32_t nrej, rej_pass;
  uint8_t jumped;
} qx_jump;

/* 16 bytes, four to a cache line (an arrival writes its slot's, a start
 * reads it and its neighbours'): positions in e->queue are below 2^32
 * (queue_index_insert compacts the array before one would not be; with
 * size_t positions the 24-byte links were 2.2 MB at 100,000 GPUs and
 * three in eight of them straddled two lines). */
typedef struct qx_link {
  uint32_t apos;       /* index in e->queue (the order of the queue) */
  uint32_t prev, next; /* in its shape's list */
  uint32_t shape;
} qx_link;

typedef struct qx_hent {
  uint32_t apos; /* the shape's cursor's position */
  uint32_t shape;
} qx_hent;

struct queue_index {
  qx_link *link; /* per slot */
  size_t link_cap;
  qx_shape *shape;
  size_t nshape, shape_cap;
  uint32_t *bucket; /* hash of keys -> shape, chained; power of 2 */
  size_t nbucket;
  uint32_t *live; /* shapes with queued jobs */
  size_t nlive, live_cap;
  uint32_t *pend; /* shapes with untried jobs (maybe failed since) */
  size_t npend, pend_cap;
  qx_hent *heap; /* the pass's merge of shapes by cursor position */
  size_t nheap, heap_cap;
  size_t span; /* e->queue[qhead .. qhead + span): live and tombstones */
  size_t dead; /* tombstones in it */
  uint32_t epoch;
  uint32_t pass;      /* passes so far */
  /* Backfill's memo of rejected candidates: on for a policy that promises
   * LSCHED_POLICY_ANY_FIT (the same request on the same cluster places
   * the same; off, no shape is stamped: its rj_gen 0 is no generation);
   * rj_gen moves at every pass and whenever a candidate's outcome may
   * have changed the cluster (a start). */
  int rj_on;
  uint64_t rj_gen;
  /* Backfill's rejection memo is on and the speed table has several
   * classes: a job's class is part of its shape's key. The memo reuses a
   * rejected job's placement and reads its end there, which differ by
   * class: a policy may place by the request's speed (fastest-fit,
   * cheapest-work), and the co-runners a job slows are slowed by a
   * factor of the two classes. (The other memos read fits alone: skip
   * keys by request only.) */
  int by_class;
  int min_node_gpus;  /* fewest GPUs of a node with GPUs */
  /* The shape last found for a job of each fragtrack shape id (QX_NONE:
   * none yet), and for a CPU-only job: see slot_shape. */
  uint32_t *ft;
  size_t nft;
  uint32_t cpu_only;
  /* Backfill's jumps (kept_next): per shape its qx_jump; per slot its
   * entry in its shape's qx_durs while the shape has one; the shapes with
   * entries; the shapes whose cursor jumped in this generation (room for
   * every shape: shape_of). */
  qx_jump *jx;
  size_t jx_cap;
  uint32_t *sidx;
  size_t sidx_cap;
  size_t ndurs;
  uint32_t *jumped;
  size_t njumped, jumped_cap;
};

/* ---- shapes ---- */

static qx_key key_of(const lsched_request *r) {
  qx_key k;
  memset(&k, 0, sizeof k);
  k.cpu = r->cpu_milli;
  k.mem = r->memory_mib;
  k.mig_mem = r->mig_memory_mib;
  k.mask = r->model_mask;
  k.k = r->gpu_count;
  k.milli = r->gpu_milli;
  k.mig = r->mig_kind | r->mig_compute_milli << 3;
  k.prio = r->priority;
  return k;
}

static int key_eq(const qx_key *a, const qx_key *b) {
  return a->cpu == b->cpu && a->mem == b->mem && a->mig_mem == b->mig_mem &&
         a->mask == b->mask && a->k == b->k && a->milli == b->milli &&
         a->mig == b->mig && a->prio == b->prio;
}

static uint64_t key_hash(const qx_key *k) {
  uint64_t h = (uint64_t)k->cpu * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t)k->mem * 0xC2B2AE3D27D4EB4Full;
  h ^= ((uint64_t)(uint32_t)k->k << 32 | (uint32_t)k->milli) *
       0x165667B19E3779F9ull;
  h ^= k->mask * 0x27D4EB2F165667C5ull;
  h ^= ((uint64_t)(uint32_t)k->mig << 32 | (uint32_t)k->prio) *
       0x9E3779B97F4A7C15ull;
  h ^= (uint64_t)k->mig_mem;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

/* Doubles the hash table (load factor <= 1). 0, or -1 out of memory. */
static int rehash(struct queue_index *x) {
  size_t nb = x->nbucket ? 2 * x->nbucket : 64;
  uint32_t *b = malloc(nb * sizeof *b);
  if (!b)
    return -1;
  for (size_t i = 0; i < nb; i++)
    b[i] = QX_NONE;
  for (size_t s = 0; s < x->nshape; s++) {
    size_t i = key_hash(&x->shape[s].key) & (nb - 1);
    x->shape[s].hnext = b[i];
    b[i] = (uint32_t)s;
  }
  free(x->bucket);
  x->bucket = b;
  x->nbucket = nb;
  return 0;
}

/* The shape of key k (request r), added when new; QX_NONE when out of
 * memory. */
static uint32_t shape_of(struct queue_index *x, const qx_key *k,
                         const lsched_request *r) {
  uint64_t h = key_hash(k);
  if (x->nbucket)
    for (uint32_t s = x->bucket[h & (x->nbucket - 1)]; s != QX_NONE;
         s = x->shape[s].hnext)
      if (key_eq(&x->shape[s].key, k))
        return s;
  /* The live and pending lists and the merge hold distinct shapes: room
   * for every shape is made here, not at each push. */
  size_t n = x->nshape + 1;
  if (x->nshape >= UINT32_MAX - 1 ||
      grow_array((void **)&x->shape, &x->shape_cap, n, sizeof *x->shape) ||
      grow_array((void **)&x->live, &x->live_cap, n, sizeof *x->live) ||
      grow_array((void **)&x->pend, &x->pend_cap, n, sizeof *x->pend) ||
      grow_array((void **)&x->heap, &x->heap_cap, n, sizeof *x->heap) ||
      grow_array((void **)&x->jumped, &x->jumped_cap, n,
                 sizeof *x->jumped) ||
      grow_array((void **)&x->jx, &x->jx_cap, n, sizeof *x->jx) ||
      (n > x->nbucket && rehash(x)))
    return QX_NONE;
  uint32_t s = (uint32_t)x->nshape++;
  qx_shape *sh = &x->shape[s];
  memset(sh, 0, sizeof *sh);
  memset(&x->jx[s], 0, sizeof x->jx[s]);
  sh->key = *k;
  sh->req = *r;
  /* A gang attempt that fails may have drawn random numbers for the parts
   * it placed before (the random policy): such shapes are memoised for the
   * pass only, as the plain pass does, and their new arrivals are tried in
   * every pass. Any request of more whole GPUs than the smallest GPU node
   * holds may be one (lsched_place_gang splits beyond the widest node of
   * its models, which holds at least that many). */
  sh->gang = k->milli >= 1000 && k->k > x->min_node_gpus;
  sh->first = sh->last = sh->cursor = QX_NONE;
  sh->live_pos = QX_NONE;
  size_t i = h & (x->nbucket - 1);
  sh->hnext = x->bucket[i];
  x->bucket[i] = s;
  return s;
}

/* Shape s failed in this epoch (a gang shape: in this pass). */
static int has_failed(const struct queue_index *x, uint32_t s) {
  const qx_shape *sh = &x->shape[s];
  return sh->failed == (sh->gang ? x->pass : x->epoch);
}

/* Shape s (untried jobs) onto the pending list, once (its room was made
 * by shape_of). */
static void pend_push(struct queue_index *x, uint32_t s) {
  if (x->shape[s].pending)
    return;
  x->pend[x->npend++] = s;
  x->shape[s].pending = 1;
}

/* slot_shape's look-up by key, remembered for the job's fragtrack shape
 * id. Out of line: most arrivals take the memo. */
static __attribute__((noinline)) uint32_t slot_shape_new(engine *e,
                                                         uint32_t sl) {
  struct queue_index *x = e->qx;
  const slot *sp = &e->slots[sl];
  lsched_request r;
  build_request(e, sp, &r);
  qx_key k = key_of(&r);
  if (x->by_class) { /* sim_job_request: priority = QoS, 0..255; the
                        memos below compare the QoS alone */
    k.prio += 256 * (1 + speed_class_of(e, sl));
    return shape_of(x, &k, &r);
  }
  uint32_t s = shape_of(x, &k, &r);
  uint32_t f = sp->shape;
  if (s != QX_NONE && sp->rec.num_gpu <= 0)
    x->cpu_only = s;
  if (s == QX_NONE || f == FRAGTRACK_NO_SHAPE)
    return s;
  if (f >= x->nft) {
    size_t n = x->nft;
    if (grow_array((void **)&x->ft, &n, (size_t)f + 1, sizeof *x->ft))
      return QX_NONE;
    for (size_t i = x->nft; i < n; i++)
      x->ft[i] = QX_NONE;
    x->nft = n;
  }
  x->ft[f] = s;
  return s;
}

/* The shape of the job in slot sl (QX_NONE when out of memory), without
 * building its request when a job of its fragtrack shape came before
 * (2% of 100k@1.2 first-fit skip): the fragtrack shape id (s->shape) is
 * interned from the request fields CPU, memory, GPU count and share and
 * model mask as sim_job_request fills them (the engine's mask of the
 * job's spec: a queued job's spec is present), and the index runs only
 * without request hooks (no MIG fields, queue_index_on), so jobs of one
 * fragtrack shape have keys that differ at most in the priority, which is
 * compared. A CPU-only job (no fragtrack shape) has the key of its CPU,
 * memory and priority (no GPUs, no model mask): the last CPU-only job's
 * shape is kept and compared on those. Keys with a class (by_class) take
 * the look-up every time: neither memo is filled. */
static inline uint32_t slot_shape(engine *e, uint32_t sl) {
  const struct queue_index *x = e->qx;
  const slot *sp = &e->slots[sl];
  if (sp->shape < x->nft) {
    uint32_t s = x->ft[sp->shape];
    if (s != QX_NONE && x->shape[s].key.prio == (int32_t)sp->rec.qos)
      return s;
  } else if (sp->rec.num_gpu <= 0 && x->cpu_only != QX_NONE) {
    const qx_key *k = &x->shape[x->cpu_only].key;
    if (k->cpu == sp->rec.cpu_milli && k->mem == sp->rec.memory_mib &&
        k->prio == (int32_t)sp->rec.qos)
      return x->cpu_only;
  }
  return slot_shape_new(e, sl);
}

/* ---- backfill's jumps over kept jobs ---- */

/*
 * Within a backfill pass a shape's jobs that rejected_before keeps waiting
 * are visited one by one: on a queue of millions (a month of a busy
 * 100,000-GPU cluster, 10 M jobs, mean queue time 6 h) each pass walked
 * most of the queue, reading every kept job's slot for its estimated end
 * (first-fit backfill 143.6 s against 15.6 s under skip). Without a speed
 * model a queued job's estimated end started now is now plus its estimated
 * run time, a constant of the job (est_run), so the jobs
 * rejected_before keeps are exactly those whose run time is at least the
 * shape's rj_end - now. A shape that had QX_JUMP_AFTER jobs kept so in one
 * pass gets its queued jobs' run times in queue order in a min-tree
 * (qx_durs), kept up to date at every arrival and start from then on (the
 * grid's 400,000-job replays rarely walk so far: a tree's upkeep would
 * cost them ~1% of their instructions for jumps they do not need), and its
 * cursor jumps from a kept job to its next job with a shorter run time
 * (kept_next), O(log jobs). The jobs jumped over are those the walk would
 * have kept, as long as the generation (rj_gen) does not move: when it
 * moves (a trial that was not kept, at queue position p), every shape
 * that jumped in it is rewound to its first job after p (rewind_jumped),
 * which the walk would have tried anew. Under a speed model a job's
 * estimated end depends on the placement's speed, so the tree holds a
 * lower bound instead (est_run_least: its run time at the fastest speed
 * the cluster can give it): the jobs jumped over (bound >= rj_end - now)
 * are kept all the same, and a job jumped to is asked rejected_before
 * as every visited job is (it may be kept too). Same decisions as the
 * walk (tests/test_queue_index.c: indexed_equals_plain_kept, with and
 * without a speed model).
 */
#define QX_JUMP_AFTER 64

typedef struct qx_durs {
  uint32_t n;    /* entries in use, left jobs' included */
  uint32_t cap;  /* room: a power of two */
  uint32_t live; /* entries of queued jobs */
  uint32_t *slot; /* per entry: its job, QX_NONE once it left */
  /* t[cap + i]: entry i's estimated run time (INT64_MAX once it left),
   * t[k] the least of t[2k] and t[2k + 1] */
  int64_t *t;
} qx_durs;

static void durs_free(qx_durs *d) {
  if (!d)
    return;
  free(d->slot);
  free(d->t);
  free(d);
}

/* Job sl's least estimated run time started now (est_run_least: its
 * estimated end on any placement is at least now plus this; without a
 * speed model exactly that), below INT64_MAX (the mark of a left job):
 * never above the exact figure, which is what kept_next needs. */
static int64_t durs_of(const engine *e, uint32_t sl) {
  int64_t d = est_run_least(e, sl);
  return d == INT64_MAX ? INT64_MAX - 1 : d;
}

/* The inner entries from the leaves. */
static void durs_tree(qx_durs *d) {
  for (uint32_t i = d->n; i < d->cap; i++)
    d->t[d->cap + i] = INT64_MAX;
  for (uint32_t k = d->cap - 1; k >= 1; k--)
    d->t[k] = d->t[2 * k] < d->t[2 * k + 1] ? d->t[2 * k] : d->t[2 * k + 1];
}

/* Drops the left jobs' entries. */
static void durs_compact(struct queue_index *x, qx_durs *d) {
  uint32_t w = 0;
  for (uint32_t i = 0; i < d->n; i++) {
    uint32_t sl = d->slot[i];
    if (sl == QX_NONE)
      continue;
    d->slot[w] = sl;
    d->t[d->cap + w] = d->t[d->cap + i];
    x->sidx[sl] = w++;
  }
  d->n = w;
  durs_tree(d);
}

/* Job sl (queued, of the shape whose entries d are, at the end of its
 * list) as a new entry. 0, or -1 when out of memory (d unchanged). */
static __attribute__((noinline)) int durs_push(const engine *e, qx_durs *d,
                                               uint32_t sl) {
  struct queue_index *x = e->qx;
  if (sl >= x->sidx_cap && grow_array((void **)&x->sidx, &x->sidx_cap,
                                      (size_t)sl + 1, sizeof *x->sidx))
    return -1;
  if (d->n == d->cap && d->live < d->n / 2)
    durs_compact(x, d);
  if (d->n == d->cap) {
    if (d->cap >= UINT32_MAX / 2)
      return -1;
    uint32_t nc = 2 * d->cap;
    uint32_t *ns = realloc(d->slot, nc * sizeof *ns);
    if (!ns)
      return -1;
    d->slot = ns;
    int64_t *nt = malloc(2 * (size_t)nc * sizeof *nt);
    if (!nt)
      return -1;
    memcpy(nt + nc, d->t + d->cap, d->n * sizeof *nt);
    free(d->t);
    d->t = nt;
    d->cap = nc;
    durs_tree(d);
  }
  uint32_t i = d->n++;
  int64_t v = durs_of(e, sl);
  d->slot[i] = sl;
  d->live++;
  x->sidx[sl] = i;
  size_t k = d->cap + (size_t)i;
  d->t[k] = v;
  for (k >>= 1; k >= 1 && d->t[k] > v; k >>= 1)
    d->t[k] = v;
  return 0;
}

/* Job sl's entry: it left. */
static void durs_pop(struct queue_index *x, qx_durs *d, uint32_t sl) {
  uint32_t i = x->sidx[sl];
  d->slot[i] = QX_NONE;
  d->live--;
  size_t k = d->cap + (size_t)i;
  d->t[k] = INT64_MAX;
  for (k >>= 1; k >= 1; k >>= 1) {
    int64_t v = d->t[2 * k] < d->t[2 * k + 1] ? d->t[2 * k] : d->t[2 * k + 1];
    if (d->t[k] == v)
      break;
    d->t[k] = v;
  }
}

/* Shape s's entries from its queued jobs (their slots read once). 0, or -1
 * when out of memory (then none). */
static int durs_build(const engine *e, uint32_t s) {
  struct queue_index *x = e->qx;
  qx_shape *sh = &x->shape[s];
  qx_jump *q = &x->jx[s];
  qx_durs *d = calloc(1, sizeof *d);
  uint32_t cap = 16;
  while (cap < sh->count && cap < UINT32_MAX / 2)
    cap *= 2;
  if (d) {
    d->cap = cap;
    d->slot = malloc(cap * sizeof *d->slot);
    d->t = malloc(2 * (size_t)cap * sizeof *d->t);
  }
  if (!d || !d->slot || !d->t) {
    durs_free(d);
    return -1;
  }
  durs_tree(d); /* (empty: every entry INT64_MAX) */
  for (uint32_t sl = sh->first; sl != QX_NONE; sl = x->link[sl].next)
    if (durs_push(e, d, sl)) {
      durs_free(d);
      return -1;
    }
  q->dur = d;
  x->ndurs++;
  return 0;
}

/* Job sl, queued at the end of shape s's list, into its entries; out of
 * memory, the shape's entries are dropped (its kept jobs walked). 0. */
static __attribute__((noinline)) int durs_add(const engine *e, uint32_t s,
                                              uint32_t sl) {
  qx_jump *q = &e->qx->jx[s];
  if (durs_push(e, q->dur, sl)) {
    durs_free(q->dur);
    q->dur = NULL;
    e->qx->ndurs--;
  }
  return 0;
}

/* Job sl (unlinked from its shape's list) leaves its shape's entries, if
 * the shape has them. */
static __attribute__((noinline)) void durs_left(struct queue_index *x,
                                                uint32_t sl) {
  qx_durs *d = x->jx[x->link[sl].shape].dur;
  if (d)
    durs_pop(x, d, sl);
}

/* The first entry from `from` on whose run time is below b, or -1. */
static int64_t durs_first(const qx_durs *d, uint32_t from, int64_t b) {
  if (from >= d->n)
    return -1;
  size_t k = d->cap + (size_t)from;
  for (;;) {
    if (d->t[k] < b) {
      while (k < d->cap)
        k = d->t[2 * k] < b ? 2 * k : 2 * k + 1;
      return k - d->cap < d->n && d->t[k] < b ? (int64_t)(k - d->cap) : -1;
    }
    /* the next subtree to the right: up while a right child */
    while (k & 1)
      k >>= 1;
    if (k == 0)
      return -1;
    k++;
  }
}

/* Every shape's entries forgotten (a rebuild of the index). */
static void durs_reset_all(struct queue_index *x) {
  for (size_t s = 0; s < x->nshape && x->ndurs; s++)
    if (x->jx[s].dur) {
      durs_free(x->jx[s].dur);
      x->jx[s].dur = NULL;
      x->ndurs--;
    }
}

/* Slot sl, at position apos of the queue array, joins the end of its
 * shape's list. 0, or -1 when out of memory. Inline: once per arrival
 * (queue_index_insert). */
static inline __attribute__((always_inline)) int
index_append(engine *e, uint32_t sl, size_t apos) {
  struct queue_index *x = e->qx;
  if (apos >= UINT32_MAX) /* (a queue array of 16 GiB) */
    return -1;
  if (sl >= x->link_cap && grow_array((void **)&x->link, &x->link_cap,
                                      (size_t)sl + 1, sizeof *x->link))
    return -1;
  uint32_t s = slot_shape(e, sl);
  if (s == QX_NONE)
    return -1;
  qx_shape *sh = &x->shape[s];
  if (sh->count == 0) {
    sh->live_pos = (uint32_t)x->nlive;
    x->live[x->nlive++] = s;
  }
  qx_link *l = &x->link[sl];
  l->apos = (uint32_t)apos;
  l->shape = s;
  l->next = QX_NONE;
  l->prev = sh->last;
  if (sh->last != QX_NONE)
    x->link[sh->last].next = sl;
  else
    sh->first = sl;
  sh->last = sl;
  sh->count++;
  if (sh->cursor == QX_NONE)
    sh->cursor = sl;
  /* Untried, unless the shape already failed in this epoch (a gang shape
   * is tried in the next pass whatever happened in the last one). */
  if (sh->gang || !has_failed(x, s))
    pend_push(x, s);
  /* Last, a tail call: the arrivals of shapes without a tree save no
   * registers for it (~12 instructions an arrival). */
  return x->ndurs && x->jx[s].dur ? durs_add(e, s, sl) : 0;
}

/* Slot sl leaves its shape's list (it started). */
static void index_unlink(struct queue_index *x, uint32_t sl) {
  qx_link *l = &x->link[sl];
  qx_shape *sh = &x->shape[l->shape];
  if (sh->cursor == sl)
    sh->cursor = l->next;
  if (l->prev != QX_NONE)
    x->link[l->prev].next = l->next;
  else
    sh->first = l->next;
  if (l->next != QX_NONE)
    x->link[l->next].prev = l->prev;
  else
    sh->last = l->prev;
  if (--sh->count == 0) {
    uint32_t last = x->live[--x->nlive];
    x->live[sh->live_pos] = last;
    x->shape[last].live_pos = sh->live_pos;
    sh->live_pos = QX_NONE;
    sh->cursor = QX_NONE;
  }
}

/* ---- the queue array ---- */

/* Moves the live entries to the front of the array, in order (links: and
 * their positions in the index). */
static void compact_links(engine *e, int links) {
  struct queue_index *x = e->qx;
  size_t w = 0, end = e->qhead + x->span;
  for (size_t i = e->qhead; i < end; i++) {
    uint32_t sl = e->queue[i];
    if (sl == QX_TOMB)
      continue;
    e->queue[w] = sl;
    if (links)
      x->link[sl].apos = (uint32_t)w;
    w++;
  }
  e->qhead = 0;
  x->span = w;
  x->dead = 0;
}

static void compact(engine *e) { compact_links(e, 1); }

/* Keeps the head on a live job; compacts when tombstones outnumber live
 * jobs. */
static void tidy(engine *e) {
  struct queue_index *x = e->qx;
  while (x->span > 0 && e->queue[e->qhead] == QX_TOMB) {
    e->qhead++;
    x->span--;
    x->dead--;
  }
  if (x->dead > 64 && x->dead > e->qlen)
    compact(e);
}

/* index_remove without the shape's entries. */
static inline __attribute__((always_inline)) void
index_drop_plain(engine *e, uint32_t sl) {
  struct queue_index *x = e->qx;
  index_unlink(x, sl);
  e->queue[x->link[sl].apos] = QX_TOMB;
  x->dead++;
  e->qlen--;
}

/* The job in slot sl started: it leaves the index and the queue (and its
 * shape's entries: see the jumps). skip's pass, which never builds
 * entries (only backfill's kept_next does), takes index_drop_plain: the
 * test and call cost its loop ~10 instructions a start in registers. */
static void index_remove(engine *e, uint32_t sl) {
  struct queue_index *x = e->qx;
  index_drop_plain(e, sl);
  if (x->ndurs) /* last, a tail call (as in index_append) */
    durs_left(x, sl);
}

size_t queue_index_span(const engine *e) { return e->qx->span; }

void queue_index_prefetch(const engine *e, uint32_t sl) {
  const struct queue_index *x = e->qx;
  if (x && sl < x->link_cap)
    __builtin_prefetch(&x->link[sl], 1, 3);
}

void queue_index_remove(engine *e, uint32_t sl) {
  index_remove(e, sl);
  tidy(e);
  hook_queued(e, &e->slots[sl], -1);
}

/* Every shape reset from the queue array (compacted first); a new epoch,
 * so that every job is untried. 0, or -1 when out of memory. */
static int rebuild(engine *e) {
  struct queue_index *x = e->qx;
  compact_links(e, 0); /* index_append sets the positions */
  durs_reset_all(x);
  for (size_t s = 0; s < x->nshape; s++) {
    qx_shape *sh = &x->shape[s];
    sh->first = sh->last = sh->cursor = QX_NONE;
    sh->count = 0;
    sh->live_pos = QX_NONE;
    sh->pending = 0;
  }
  x->nlive = x->npend = 0;
  x->epoch++;
  for (size_t i = 0; i < x->span; i++)
    if (index_append(e, e->queue[i], i))
      return -1;
  return 0;
}

int queue_index_insert(engine *e, uint32_t sl, size_t pos) {
  struct queue_index *x = e->qx;
  if (pos < e->qlen) {
    /* Not at the end: the plain insertion, then the index anew. */
    compact(e);
    if (x->span >= e->qcap &&
        grow_array((void **)&e->queue, &e->qcap, x->span + 1,
                   sizeof *e->queue))
      return -1;
    memmove(&e->queue[pos + 1], &e->queue[pos],
            (x->span - pos) * sizeof *e->queue);
    e->queue[pos] = sl;
    x->span++;
    e->qlen++;
    hook_queued(e, &e->slots[sl], 1);
    return rebuild(e);
  }
  /* (past_32: the position would not fit a link; compacting frees it) */
  const int past_32 = e->qhead + x->span >= UINT32_MAX;
  if (e->qhead + x->span >= e->qcap || past_32) {
    if (e->qhead + x->dead > 0 &&
        (past_32 || e->qhead + x->dead >= e->qlen / 2))
      compact(e);
    else if (grow_array((void **)&e->queue, &e->qcap,
                        e->qhead + x->span + 1, sizeof *e->queue))
      return -1;
  }
  size_t apos = e->qhead + x->span;
  e->queue[apos] = sl;
  x->span++;
  e->qlen++;
  hook_queued(e, &e->slots[sl], 1);
  return index_append(e, sl, apos);
}

/* ---- failed shapes across releases ---- */

/* The next job of shape s (tried in queue order) cannot fit now: the
 * shape did not fit at its mark and no node released on since fits it
 * (tested with the shape's request: no request built per call). */
static int known_nofit(engine *e, uint32_t s) {
  qx_shape *sh = &e->qx->shape[s];
  return !sh->gang && sim_rlog_none_fits(e->rlog, &sh->nf, e->sc->c, &sh->req);
}

/* Shape s did not fit now (no node fit it, for a one-part shape). */
static void note_nofit(engine *e, uint32_t s) {
  e->qx->shape[s].nf = sim_rlog_now(e->rlog);
}

/* ---- opening ---- */

int queue_index_on(engine *e) {
  if (e->qx)
    return 1;
  if (e->opt->queue_plain ||
      (e->hooks &
       (SIM_HOOK_REQUEST | SIM_HOOK_ALT_REQUEST | SIM_HOOK_BEFORE_PLACE)))
    return 0;

  e->qx = calloc(1, sizeof *e->qx);
  if (e->qx) {
    int m = 0;
    for (int i = 0; i < e->sc->nodes; i++) {
      lsched_node_info ni;
      if (lsched_cluster_node_info(e->sc->c, i, &ni) == LSCHED_OK &&
          ni.gpu_count > 0 && (m == 0 || ni.gpu_count < m))
        m = ni.gpu_count;
    }
    e->qx->min_node_gpus = m;
    e->qx->cpu_only = QX_NONE;
    e->qx->pass = 1; /* a shape's failed stamp 0 is no pass */
    e->qx->rj_on =
        (lsched_policy_flags(e->pol) & LSCHED_POLICY_ANY_FIT) != 0;
    e->qx->by_class = e->qx->rj_on && e->opt->queue == SIM_QUEUE_BACKFILL &&
                      speed_classes(e) > 1;
    engine_rlog(e); /* known_nofit's log, where it can serve */
  }
  if (!e->qx || (e->qx->span = e->qlen, rebuild(e))) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  return 1;
}

void queue_index_free(engine *e) {
  struct queue_index *x = e->qx;
  if (!x)
    return;
  for (size_t s = 0; s < x->nshape; s++)
    durs_free(x->jx[s].dur);
  free(x->link);
  free(x->shape);
  free(x->bucket);
  free(x->live);
  free(x->pend);
  free(x->heap);
  free(x->ft);
  free(x->jx);
  free(x->sidx);
  free(x->jumped);
  free(x);
  e->qx = NULL;
}

/* ---- a pass ---- */

/* A release since the last pass begins a new epoch: every queued job is
 * untried again (open_merge opens every live shape at its first job,
 * after backfill's head's turn). */
static void begin_epoch(engine *e) {
  struct queue_index *x = e->qx;
  x->pass++;
  if (!e->freed)
    return;
  x->epoch++;
  for (size_t i = 0; i < x->npend; i++)
    x->shape[x->pend[i]].pending = 0;
  x->npend = 0;
}

static void heap_up(qx_hent *h, size_t i) {
  qx_hent v = h[i];
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (h[p].apos <= v.apos)
      break;
    h[i] = h[p];
    i = p;
  }
  h[i] = v;
}

static void heap_down(qx_hent *h, size_t n, size_t i) {
  qx_hent v = h[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && h[c + 1].apos < h[c].apos)
      c++;
    if (v.apos <= h[c].apos)
      break;
    h[i] = h[c];
    i = c;
  }
  h[i] = v;
}

/* Shape s goes (back) into the merge at its cursor, if it has one.
 * Inline: ~2 calls a pass after a release (as a call, 0.4% of 100k@1.2
 * first-fit skip). */
static inline __attribute__((always_inline)) void
merge_push(struct queue_index *x, uint32_t s) {
  uint32_t c = x->shape[s].cursor;
  if (c == QX_NONE)
    return;
  x->heap[x->nheap].apos = x->link[c].apos;
  x->heap[x->nheap].shape = s;
  heap_up(x->heap, x->nheap++);
}

/* The pending shapes that did not fail in this epoch go into the merge
 * (it has room for them); the pending list is emptied (each is tried
 * until it fails or runs out). */
static inline void push_pending(struct queue_index *x) {
  for (size_t i = 0; i < x->npend; i++) {
    uint32_t s = x->pend[i];
    x->shape[s].pending = 0;
    if (!has_failed(x, s))
      merge_push(x, s);
  }
  x->npend = 0;
}

/* Every live shape from its first job, known_nofit asked of each at once
 * through one view of the log (nothing is released in between): a shape
 * it answers fails in the epoch without entering the merge (at its turn
 * only starts, which take room, would have come before), one found to
 * fit is not asked again until a start (fit_pass). head: backfill's,
 * whose head's turn came first in the epoch: a pass with a release tries
 * the head until one fails or none is left, so the head's shape is the
 * one shape that failed yet in the epoch (compared by number: ~4
 * instructions a shape less than has_failed); under skip no shape failed
 * yet in an epoch that begins (its failed stamp is of an earlier one).
 * Inline: a copy per discipline, head a constant in each. */
static inline __attribute__((always_inline)) void
push_live_known(engine *e, int head) {
  struct queue_index *x = e->qx;
  sim_rlog_view v = sim_rlog_look(e->rlog);
  const lsched_cluster *c = e->sc->c; /* (read once, not per shape) */
  /* (live shapes: the queue has a job) */
  uint32_t hs = head ? x->link[e->queue[e->qhead]].shape : QX_NONE;
  for (size_t i = 0; i < x->nlive; i++) {
    uint32_t s = x->live[i];
    qx_shape *sh = &x->shape[s];
    sh->cursor = sh->first;
    if (head && s == hs)
      continue;
    if (!sh->gang &&
        sim_rlog_view_none_fits(&v, &sh->nf, c, &sh->req)) {
      sh->failed = x->epoch;
      continue;
    }
    sh->fit_pass = x->pass;
    merge_push(x, s);
  }
}

/* A pass's merge (its room was made as shapes were added, shape_of):
 * after a release every live shape, known_nofit asked at once
 * (push_live_known); without one, the pending shapes that did not fail in
 * the epoch (new arrivals'). With no live shape (43% of the releases of
 * 100k@1.2 first-fit skip) only the log's mark is taken, as
 * push_live_known's look would. head: as push_live_known's. */
static inline __attribute__((always_inline)) void open_merge(engine *e,
                                                             int head) {
  e->qx->nheap = 0;
  if (!e->freed)
    push_pending(e->qx);
  else if (e->qx->nlive > 0)
    push_live_known(e, head);
  else
    (void)sim_rlog_now(e->rlog);
}

/* The next job to try in queue order (its shape in *s), or QX_NONE. */
static inline __attribute__((always_inline)) uint32_t
merge_next(struct queue_index *x, uint32_t *s) {
  if (x->nheap == 0)
    return QX_NONE;
  *s = x->heap[0].shape;
  x->heap[0] = x->heap[--x->nheap];
  if (x->nheap)
    heap_down(x->heap, x->nheap, 0);
  return x->shape[*s].cursor;
}

/* Job sl of shape *s was tried: started (it leaves the queue) or kept (it
 * fit but waits: backfill); *s goes on with its next job to try, c (sl's
 * next one, or a later one: kept_next). The next job to try (its shape in
 * *s), or QX_NONE: c itself when it comes before every other shape's (what
 * a push of *s and a pop would give; positions are distinct), without the
 * push and pop (a backfill pass walks a shape's kept jobs,
 * rejected_before, 1.3 a pass of 100k@1.2 first-fit). */
static inline __attribute__((always_inline)) uint32_t
merge_on(engine *e, uint32_t *s, uint32_t sl, int started, uint32_t c) {
  struct queue_index *x = e->qx;
  x->shape[*s].cursor = c;
  if (started)
    index_remove(e, sl);
  if (c != QX_NONE && (x->nheap == 0 || x->link[c].apos < x->heap[0].apos))
    return c;
  merge_push(x, *s);
  return merge_next(x, s);
}

/* merge_on at sl's next job. */
static inline __attribute__((always_inline)) uint32_t
merge_went_on(engine *e, uint32_t *s, uint32_t sl, int started) {
  return merge_on(e, s, sl, started, e->qx->link[sl].next);
}

/* Shape s did not fit: none of its jobs is tried again in this epoch (a
 * gang shape: in this pass; its jobs so far count as tried, as the plain
 * pass tries only later arrivals in the next pass without a release). */
static void merge_failed(struct queue_index *x, uint32_t s) {
  qx_shape *sh = &x->shape[s];
  if (sh->gang) {
    sh->failed = x->pass;
    sh->cursor = QX_NONE;
  } else {
    sh->failed = x->epoch;
  }
}

/* queue_index_pass_skip's pass when it has anything to do. Out of line:
 * its frame would cost every pass that has not. */
static __attribute__((noinline)) int pass_skip(engine *e) {
  struct queue_index *x = e->qx;
  begin_epoch(e);
  uint32_t s, j;
  if (!e->freed && x->npend == 1) {
    /* One shape pending (an arrival's, 60% of the passes without a
     * release of 100k@1.2 first-fit skip): the merge would hold it
     * alone, so its next job is taken without the merge (push_pending's
     * push and merge_next's pop). */
    s = x->pend[0];
    x->shape[s].pending = 0;
    x->npend = 0;
    x->nheap = 0;
    j = has_failed(x, s) ? QX_NONE : x->shape[s].cursor;
  } else {
    open_merge(e, 0);
    j = merge_next(x, &s);
  }
  int started = 0;
  while (j != QX_NONE) {
    /* Until the first start the cluster is as open_merge saw it: a shape
     * it found may fit is not asked known_nofit again. */
    int asked = !started && x->shape[s].fit_pass == x->pass;
    int known = !asked && known_nofit(e, s);
    int r = known ? 0 : try_start(e, j);
    if (r < 0)
      return -1;
    if (r == 0) {
      merge_failed(x, s);
      if (!known) /* (known_nofit moved the mark to now) */
        note_nofit(e, s);
      j = merge_next(x, &s);
      continue;
    }
    started = 1;
    uint32_t c = x->link[j].next;
    x->shape[s].cursor = c;
    index_drop_plain(e, j); /* (skip builds no entries) */
    /* Its next job, when it comes before every other shape's (as
     * merge_went_on, written out: with merge_went_on this loop cost 150 k
     * instructions more in 10k@1.2 first-fit skip). */
    if (c != QX_NONE &&
        (x->nheap == 0 || x->link[c].apos < x->heap[0].apos)) {
      j = c;
    } else {
      merge_push(x, s);
      j = merge_next(x, &s);
    }
  }
  if (started) /* else no tombstone came */
    tidy(e);
  return 0;
}

/* A release with nothing queued (22% of the passes of 100k@1.2 first-fit
 * backfill): the epoch begins, no head, no live shape (open_merge would
 * take the log's mark only), done here, 1; else 0. Before the passes'
 * frames (skip and backfill). */
static inline __attribute__((always_inline)) int released_to_none(engine *e) {
  if (!e->freed || e->qlen != 0)
    return 0;
  begin_epoch(e);
  e->qx->nheap = 0;
  (void)sim_rlog_now(e->rlog);
  return 1;
}

int queue_index_pass_skip(engine *e) {
  struct queue_index *x = e->qx;
  if (!e->freed && x->npend == 0) { /* nothing released, none pending */
    x->pass++;
    return 0;
  }
  if (released_to_none(e))
    return 0;
  return pass_skip(e);
}

/* sim_queue_pass_head over the index: a head that fails marks its shape
 * failed (the plain pass's memo does the same within the pass). */
static int pass_head(engine *e) {
  struct queue_index *x = e->qx;
  if (!e->freed && e->qlen > 0 && e->queue[e->qhead] == e->head_tried)
    return 0;
  while (e->qlen > 0) {
    uint32_t j = e->queue[e->qhead];
    uint32_t s = x->link[j].shape;
    int known = known_nofit(e, s);
    int r = known ? 0 : try_start(e, j);
    if (r < 0)
      return -1;
    if (r == 0) {
      e->head_tried = j;
      merge_failed(x, s);
      if (!known) /* (known_nofit moved the mark to now) */
        note_nofit(e, s);
      break;
    }
    index_remove(e, j);
    tidy(e);
  }
  return 0;
}

/* Job j of shape s would be kept waiting as a job of its shape was in this
 * generation: same request, same cluster, same head reservation T, so the
 * same trial placement (LSCHED_POLICY_ANY_FIT, and trial placements change
 * nothing), and an estimated end no earlier, which can only leave the
 * head's reservation later (a node's fit is monotone in what is released
 * by each time). So candidate() would answer 1 without starting it. */
static int rejected_before(engine *e, uint32_t s, uint32_t j) {
  const struct queue_index *x = e->qx;
  const qx_shape *sh = &x->shape[s];
  return sh->rj_gen == x->rj_gen &&
         est_marked_end(e, j, &sh->rj_part, 1) >= sh->rj_end;
}

/* Job j of shape s was kept waiting by rejected_before: s's next job to
 * visit, its next one (c), or (see the section on jumps) its first later
 * job whose estimated run time is below rj_end - now, the jobs in between
 * being kept as well in this generation. */
static __attribute__((noinline)) uint32_t kept_jump(engine *e, uint32_t s,
                                                    uint32_t j, uint32_t c) {
  struct queue_index *x = e->qx;
  qx_shape *sh = &x->shape[s];
  qx_jump *q = &x->jx[s];
  if (!q->dur && durs_build(e, s))
    return c; /* out of memory: walk */
  int64_t b;
  if (__builtin_sub_overflow(sh->rj_end, e->now, &b))
    b = INT64_MAX;
  int64_t k = durs_first(q->dur, x->sidx[j] + 1, b);
  uint32_t to = k < 0 ? QX_NONE : q->dur->slot[k];
  if (to != c) {
    e->bf_jumps++;
    if (!q->jumped)
      x->jumped[x->njumped++] = s;
    q->jumped = 1;
  }
  return to;
}

/* kept_jump's tests inline: most kept jobs are walked (no tree). */
static inline uint32_t kept_next(engine *e, uint32_t s, uint32_t j) {
  struct queue_index *x = e->qx;
  qx_jump *q = &x->jx[s];
  uint32_t c = x->link[j].next;
  if (c == QX_NONE)
    return c;
  if (!q->dur) {
    if (q->rej_pass != x->pass) {
      q->rej_pass = x->pass;
      q->nrej = 0;
    }
    if (++q->nrej < QX_JUMP_AFTER)
      return c;
  }
  return kept_jump(e, s, j, c);
}

/* The first queued job of d whose position in the queue array is after p,
 * or QX_NONE: a binary search over the entries of queued jobs, whose
 * positions increase with the entries' order (within a pass: the array is
 * compacted only between passes), each probe taking the first such entry
 * from the middle on (durs_first: left jobs' entries are INT64_MAX). */
static uint32_t durs_after(const struct queue_index *x, const qx_durs *d,
                           uint32_t p) {
  uint32_t lo = 0, hi = d->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int64_t k = durs_first(d, mid, INT64_MAX);
    if (k < 0 || k >= hi || x->link[d->slot[k]].apos > p)
      hi = mid;
    else
      lo = (uint32_t)k + 1; /* (mid .. k - 1 are left jobs': as k) */
  }
  int64_t k = durs_first(d, lo, INT64_MAX);
  return k < 0 ? QX_NONE : d->slot[k];
}

/* The generation moves (a trial of job j that was not kept): every shape
 * whose cursor jumped in it and that has not been visited since goes back
 * to its first job after j, which the walk would try anew (the ones
 * before were kept in the generation). Shape s is j's own (its cursor
 * moves past j). */
static __attribute__((noinline)) void rewind_jumped(struct queue_index *x,
                                                    uint32_t s, uint32_t j) {
  uint32_t p = x->link[j].apos;
  for (size_t q = 0; q < x->njumped; q++) {
    uint32_t t = x->jumped[q];
    qx_shape *sh = &x->shape[t];
    int on = x->jx[t].jumped == 1;
    x->jx[t].jumped = 0;
    if (!on || t == s)
      continue;
    uint32_t c = durs_after(x, x->jx[t].dur, p);
    if (c == sh->cursor)
      continue; /* nothing after p was jumped over */
    sh->cursor = c; /* before its jump's target: into the merge there */
    size_t h = 0;
    while (h < x->nheap && x->heap[h].shape != t)
      h++;
    if (h == x->nheap) {
      merge_push(x, t);
    } else {
      x->heap[h].apos = x->link[c].apos;
      heap_up(x->heap, h);
    }
  }
  x->njumped = 0;
}

/* A hint, while candidate j is tried: the next job of its shape, which
 * the pass takes next when it comes first (merge_went_on; most candidates
 * start), has its link and the first two lines of its slot (read to place
 * and start it) asked of the memory system. A queued job's slot was last
 * touched at its arrival: on 100,000 GPUs the candidates' slots missed
 * the cache at nearly every start. */
static inline void prefetch_next_of(const engine *e, uint32_t j) {
  const struct queue_index *x = e->qx;
  uint32_t c = x->link[j].next;
  if (c == QX_NONE)
    return;
  slot_prefetch(e, c, 1); /* (its start writes its state) */
  __builtin_prefetch(&x->link[c], 0, 3);
  if (e->speed) /* (its request reads the speed part's state) */
    speed_prefetch(e, c);
}

/* queue_index_pass_backfill's pass when it has anything to do. Out of
 * line: its frame would cost every pass that has not. */
static __attribute__((noinline)) int
pass_backfill(engine *e, queue_candidate_fn try_candidate,
              int (*prepare)(engine *e)) {
  struct queue_index *x = e->qx;
  int changed = e->freed || e->queue_changed;
  begin_epoch(e);
  if (pass_head(e))
    return -1;
  if (e->qlen < 2 || !changed) {
    /* Every pending shape failed (the head's) or has no job left but the
     * head, or nothing changed (none is pending): the merge is opened (the
     * pending list emptied, after a release the live shapes restarted at
     * their first job) and left empty. */
    open_merge(e, 1);
    x->nheap = 0;
    return 0;
  }
  uint32_t h = e->queue[e->qhead];
  open_merge(e, 1);
  /* No candidate to try: the head's reservation T waits for a pass that
   * has one, unless the head has none yet (its first, reserved_us, is an
   * outcome). Asked later it is the same T for the same cluster, and no
   * reservation moves a policy's state (reserve.c head_places: random
   * draws only at real placements), so when it is asked changes nothing. */
  if (x->nheap == 0 && e->slots[h].reserved_us >= 0)
    return 0;
  if (prepare(e))
    return -1;
  uint32_t s, j;
  int started = 0;
  x->rj_gen++;
  for (size_t q = 0; q < x->njumped; q++) /* (the last pass's, all kept) */
    x->jx[x->jumped[q]].jumped = 0;
  x->njumped = 0;
  j = merge_next(x, &s);
  while (j != QX_NONE) {
    if (x->njumped && x->jx[s].jumped) /* reached: what it jumped over */
      x->jx[s].jumped = 2;               /* was kept */
    if (j == h) { /* the head is not a candidate */
      j = merge_went_on(e, &s, j, 0);
      continue;
    }
    int r, known = 0, kept = 0;
    uint32_t nx = QX_NONE; /* a kept job's shape's next job (kept_next) */
    /* Until the first start the cluster is as the opening saw it. A shape
     * rejected in this generation was placed in trial on the cluster as
     * it is (it fits), so known_nofit cannot answer it: not asked (a
     * shape's walk of kept jobs after a start, 0.7 a pass of 100k@1.2
     * first-fit). */
    int asked = !started && x->shape[s].fit_pass == x->pass;
    if (rejected_before(e, s, j)) {
      r = 1;
      kept = 1;
      nx = kept_next(e, s, j);
    } else if (!asked && known_nofit(e, s)) {
      r = 0;
      known = 1;
    } else {
      if (e->prefetch)
        prefetch_next_of(e, j);
      r = try_candidate(e, h, j);
      if (r == 1 && e->bf_rejected) {
        qx_shape *sh = &x->shape[s];
        if (x->rj_on) {
          sh->rj_gen = x->rj_gen;
          sh->rj_end = e->bf_rej_end;
          sh->rj_part = e->bf_rej_part;
        }
      } else {
        x->rj_gen++; /* a start, or anything that was not a mere trial */
        if (x->njumped)
          rewind_jumped(x, s, j);
      }
    }
    if (r < 0)
      return -1;
    if (r == 0) {
      merge_failed(x, s);
      if (!known) /* (known_nofit moved the mark to now) */
        note_nofit(e, s);
      j = merge_next(x, &s);
    } else {
      started |= r == 2;
      j = merge_on(e, &s, j, r == 2, kept ? nx : x->link[j].next);
    }
  }
  tidy(e);
  return 0;
}

int queue_index_pass_backfill(engine *e, queue_candidate_fn try_candidate,
                              int (*prepare)(engine *e)) {
  struct queue_index *x = e->qx;
  /* Nothing released and no shape pending (every arrival since the last
   * pass is of a shape that failed in the epoch, or started), the head
   * failed before (pass_head does not try it again) and holds its
   * reservation: the pass would try nothing and open an empty merge
   * (20% of the passes of 100k@1.2 first-fit). */
  if (!e->freed && x->npend == 0 && e->qlen > 0) {
    uint32_t h = e->queue[e->qhead];
    if (h == e->head_tried && e->slots[h].reserved_us >= 0) {
      x->pass++;
      return 0;
    }
  }
  if (released_to_none(e))
    return 0;
  return pass_backfill(e, try_candidate, prepare);
}

/* ---- removal by another part (preempt.c) ---- */

void queue_index_drop(engine *e, uint32_t sl) { index_remove(e, sl); }

void queue_index_tidy(engine *e) { tidy(e); }
