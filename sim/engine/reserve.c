/*
 * Runtime estimates and EASY reservations: when could a blocked job start
 * if nothing else started? Used by backfilling (queue_backfill.c) and by
 * migration planning (migrate.c: the head's expected wait).
 *
 * The running jobs are kept ordered by estimated end across completions
 * (issue #19): an indexed binary min-heap keyed by (estimated end, trace
 * position), built by the first reservation of a run and then updated
 * where an end is made or moves: a start (start_running), a completion or
 * a preemption (run_list_remove), a re-timing or a move (slot_retime). A
 * reservation walks the heap in key order without changing it (a
 * best-first walk over the heap's tree with a small heap of positions), so
 * it costs O(k log k) for the k running jobs it releases before the head
 * fits, instead of sorting all running jobs after every completion. A
 * head's reservation is kept across completions that cannot move it
 * (reservation_kept, at the end).
 */
#include "reserve.h"
#include "engine_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct run_end {
  int64_t end;
  uint64_t idx; /* trace position: the tie-break */
  uint32_t job; /* slot */
};
typedef struct run_end run_end;

/* The index of running jobs by estimated end (unclamped: a job overdue
 * under --overrun extend keeps its key; the walk takes every key <= now
 * as ending now). */
struct ends_index {
  run_end *h;     /* heap, h[0] the least */
  size_t n, cap;
  uint32_t *pos;  /* per slot: its position in h, or UINT32_MAX */
  size_t npos;
  size_t *walk;   /* the walk's frontier: positions in h, a heap */
  size_t walk_cap;
  run_end *grp;   /* the walk's overdue group */
  size_t grp_cap;
  uint32_t *rel;  /* released jobs, in release order */
  size_t rel_cap;
  struct rx *rx;  /* the same jobs per node (reserve_nodes.c), or NULL */
  /* With rx: the heap is not filled (stale) until a walk needs it (a
   * question the node lists cannot answer: a gang head, the speed model's
   * many co-runners), then kept as without rx while walks come: after
   * more than n / 16 + 64 changes without one (since) it goes stale
   * again, so keeping it costs at most about what a refill would.
   * (Refilling it for every walk cost O(running jobs) a question, each
   * end a speed view under a speed model: gang heads on 4-GPU nodes, most
   * of a run; keeping it for a rare walk cost every change O(log n).) */
  int stale;
  size_t since;
  /* Kept reservations (reservation_kept): allowed in this run; whether
   * the head keep_h (trace position keep_idx) is answered by "some node
   * fits", when keep_known. */
  int stamp_ok, trial_ok, keep_ok, keep_known, keep_fits;
  uint32_t keep_h;
  uint64_t keep_idx;
  /* The reservation noted: of the head at trace position kept_hidx, with
   * rx's counts then (kept_mv; mv: rx's, read live). */
  const rx_moves *mv;
  rx_moves kept_mv;
  uint64_t kept_hidx;
  int64_t kept_t;
  int kept_on;
  /* ends_expect: slot expect_sl starts at expect_now, estimated to end at
   * expect_end (UINT32_MAX: none). */
  uint32_t expect_sl;
  int64_t expect_now, expect_end;
};

/* Running jobs by estimated end; ties by trace position (not by slot, so
 * that the order does not depend on slot recycling). */
static int cmp_run_end(const void *a, const void *b) {
  const run_end *x = a, *y = b;
  if (x->end != y->end)
    return x->end < y->end ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

static int less(const run_end *x, const run_end *y) {
  return x->end != y->end ? x->end < y->end : x->idx < y->idx;
}

/* committed: j runs (else it is a candidate only marked running). The
 * estimated end, not clamped to now. */
static run_end raw_end_of(const engine *e, uint32_t j, int committed) {
  run_end x;
  x.job = j;
  x.idx = e->slots[j].idx;
  x.end = est_running_end(e, j, committed);
  return x;
}

static run_end end_of(const engine *e, uint32_t j, int committed) {
  run_end x = raw_end_of(e, j, committed);
  if (x.end < e->now)
    x.end = e->now; /* overdue (--overrun extend): it may end at any
                       moment; queue_backfill.c recomputes */
  return x;
}

/* Per-node answers stop (out of memory): reservations walk from now on. */
static void rx_off(struct ends_index *ix) {
  rx_close(ix->rx);
  ix->rx = NULL;
}

/* Every per-node answer also walked and compared (tests). */
static int verify_on(const engine *e) {
#ifdef RESERVE_VERIFY
  (void)e;
  return 1;
#else
  return e->opt->reserve_verify;
#endif
}

/* ------------------------------------------------------- the heap */

static void put(struct ends_index *ix, size_t i, run_end x) {
  ix->h[i] = x;
  ix->pos[x.job] = (uint32_t)i;
}

static void sift_up(struct ends_index *ix, size_t i) {
  run_end x = ix->h[i];
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!less(&x, &ix->h[p]))
      break;
    put(ix, i, ix->h[p]);
    i = p;
  }
  put(ix, i, x);
}

static void sift_down(struct ends_index *ix, size_t i) {
  run_end x = ix->h[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= ix->n)
      break;
    if (c + 1 < ix->n && less(&ix->h[c + 1], &ix->h[c]))
      c++;
    if (!less(&ix->h[c], &x))
      break;
    put(ix, i, ix->h[c]);
    i = c;
  }
  put(ix, i, x);
}

void ends_free(engine *e) {
  struct ends_index *ix = e->ends_ix;
  if (!ix)
    return;
  free(ix->h);
  free(ix->pos);
  free(ix->walk);
  free(ix->grp);
  free(ix->rel);
  rx_close(ix->rx);
  free(ix);
  e->ends_ix = NULL;
}

void ends_prefetch(const engine *e, uint32_t sl, int node, int starts) {
  const struct ends_index *ix = e->ends_ix;
  if (ix && ix->rx)
    rx_prefetch(ix->rx, sl, node, starts);
}

int ends_prefetch_node_of(const engine *e, uint32_t sl) {
  const struct ends_index *ix = e->ends_ix;
  return ix && ix->rx ? rx_prefetch_node_of(ix->rx, sl) : -1;
}

/* With rx, a change to the kept heap: 1 when it goes stale instead. */
static int heap_lapse(struct ends_index *ix) {
  if (++ix->since <= ix->n / 16 + 64)
    return 0;
  ix->stale = 1;
  return 1;
}

void ends_remove(engine *e, uint32_t sl) {
  struct ends_index *ix = e->ends_ix;
  if (ix->rx)
    rx_job_drop(ix->rx, sl);
  if (ix->stale || (ix->rx && heap_lapse(ix)))
    return;
  if (sl >= ix->npos || ix->pos[sl] == UINT32_MAX)
    return; /* a candidate only marked running */
  size_t i = ix->pos[sl];
  ix->pos[sl] = UINT32_MAX;
  if (i == --ix->n)
    return;
  run_end last = ix->h[ix->n];
  put(ix, i, last);
  sift_up(ix, i);
  sift_down(ix, ix->pos[last.job]);
}

/* Room for slot sl and one more entry; -1 when out of memory. */
static int room(struct ends_index *ix, uint32_t sl) {
  if (sl >= ix->npos) {
    size_t nc = ix->npos ? ix->npos : 256;
    while (nc <= sl)
      nc *= 2;
    uint32_t *np = realloc(ix->pos, nc * sizeof *np);
    if (!np)
      return -1;
    for (size_t i = ix->npos; i < nc; i++)
      np[i] = UINT32_MAX;
    ix->pos = np;
    ix->npos = nc;
  }
  return grow_array((void **)&ix->h, &ix->cap, ix->n + 1, sizeof *ix->h);
}

void ends_expect(engine *e, uint32_t sl, int64_t end) {
  struct ends_index *ix = e->ends_ix;
  if (!ix)
    return;
  ix->expect_sl = sl;
  ix->expect_now = e->now;
  ix->expect_end = end;
}

/* The key of running job sl is end now (it moved, or a question moves it
 * for a while: slowed_reservation). */
static inline __attribute__((always_inline)) void
ends_set(engine *e, uint32_t sl, int64_t end) {
  struct ends_index *ix = e->ends_ix;
  if (ix->rx && rx_job_set(ix->rx, sl, end, -1))
    rx_off(ix);
  if (ix->stale || (ix->rx && heap_lapse(ix)))
    return; /* rebuilt by the next reservation */
  if (room(ix, sl)) {
    ends_free(e); /* the next reservation builds it again (or fails) */
    return;
  }
  run_end x = {end, e->slots[sl].idx, sl};
  size_t i = ix->pos[sl];
  if (i == UINT32_MAX) {
    i = ix->n++;
    put(ix, i, x);
    sift_up(ix, i);
    return;
  }
  put(ix, i, x);
  sift_up(ix, i);
  sift_down(ix, ix->pos[sl]);
}

void ends_changed(engine *e, uint32_t sl) {
  struct ends_index *ix = e->ends_ix;
  int64_t end;
  /* The candidate's estimated end started now is its running end started
   * now (estimate.c: est_end and est_running_end without a speed model or
   * segments): not asked again. */
  if (ix->expect_sl == sl && ix->expect_now == e->now &&
      e->slots[sl].st.start_us == e->now && !e->speed && !e->can_plan)
    end = ix->expect_end;
  else
    end = raw_end_of(e, sl, 1).end;
  ix->expect_sl = UINT32_MAX;
  ends_set(e, sl, end);
}

/* The passes over every running job below read each one's slot, in no
 * order of memory: the slot this many jobs ahead is asked for meanwhile
 * (at the first reservation of 100k@1.2 first-fit backfill, ~72,000
 * slots read one cache miss after another). */
#define RUN_AHEAD 8

/* The heap of the committed jobs run_list[0 .. base), from scratch. 0, or
 * -1 when out of memory. */
static int heap_fill(engine *e, struct ends_index *ix, size_t base) {
  for (size_t i = 0; i < ix->n; i++)
    ix->pos[ix->h[i].job] = UINT32_MAX;
  ix->n = 0;
  if (grow_array((void **)&ix->h, &ix->cap, base + 1, sizeof *ix->h))
    return -1;
  for (size_t i = 0; i < base; i++) {
    uint32_t sl = e->run_list[i];
    if (i + RUN_AHEAD < base)
      slot_prefetch(e, e->run_list[i + RUN_AHEAD], 0);
    if (room(ix, sl))
      return -1;
    ix->h[ix->n] = raw_end_of(e, sl, 1);
    ix->pos[sl] = (uint32_t)ix->n++;
  }
  for (size_t i = ix->n / 2; i-- > 0;)
    sift_down(ix, i);
  ix->stale = 0;
  return 0;
}

/* The index of the committed jobs run_list[0 .. base). 0, or -1 when out
 * of memory. With the per-node lists the heap is left stale, filled by
 * the first walk that needs it (a shape the lists cannot answer). */
static int build(engine *e, size_t base) {
  struct ends_index *ix = calloc(1, sizeof *ix);
  if (!ix)
    return -1;
  ix->expect_sl = UINT32_MAX;
  e->ends_ix = ix;
  ix->stamp_ok = !e->opt->queue_plain &&
                 !(e->hooks & (SIM_HOOK_REQUEST | SIM_HOOK_ALT_REQUEST |
                               SIM_HOOK_BEFORE_PLACE));
  ix->trial_ok = ix->stamp_ok && !e->can_plan;
  ix->keep_ok = ix->trial_ok && !e->speed;
  if (!e->opt->reserve_walk && (ix->rx = rx_open(e))) {
    ix->mv = rx_moves_of(ix->rx);
    ix->stale = 1;
    for (size_t i = 0; i < base && ix->rx; i++) {
      uint32_t sl = e->run_list[i];
      if (i + RUN_AHEAD < base)
        slot_prefetch(e, e->run_list[i + RUN_AHEAD], 0);
      if (rx_job_set(ix->rx, sl, raw_end_of(e, sl, 1).end, 0))
        rx_off(ix);
    }
    if (ix->rx)
      return 0;
  }
  if (heap_fill(e, ix, base)) {
    ends_free(e);
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------- the walk */

/* The heap's entries in key order, without changing it, merged with the
 * marked candidate (if any), clamped to now as end_of: every entry <= now
 * first, as one group sorted by trace position (the order of a sort of
 * clamped keys), then the others in order. */
typedef struct walk {
  engine *e;
  struct ends_index *ix;
  size_t nf;         /* frontier size */
  size_t g, ng;      /* next of the overdue group, its size */
  int have_cand;
  run_end cand;
} walk;

static int wless(const struct ends_index *ix, size_t a, size_t b) {
  return less(&ix->h[a], &ix->h[b]);
}

static int frontier_push(walk *w, size_t i) {
  struct ends_index *ix = w->ix;
  if (grow_array((void **)&ix->walk, &ix->walk_cap, w->nf + 1,
                 sizeof *ix->walk))
    return -1;
  size_t k = w->nf++;
  while (k > 0 && wless(ix, i, ix->walk[(k - 1) / 2])) {
    ix->walk[k] = ix->walk[(k - 1) / 2];
    k = (k - 1) / 2;
  }
  ix->walk[k] = i;
  return 0;
}

/* The least heap entry not yet walked (its position), or SIZE_MAX. */
static size_t frontier_pop(walk *w) {
  struct ends_index *ix = w->ix;
  if (w->nf == 0)
    return SIZE_MAX;
  size_t top = ix->walk[0], last = ix->walk[--w->nf];
  size_t k = 0;
  for (;;) {
    size_t c = 2 * k + 1;
    if (c >= w->nf)
      break;
    if (c + 1 < w->nf && wless(ix, ix->walk[c + 1], ix->walk[c]))
      c++;
    if (!wless(ix, ix->walk[c], last))
      break;
    ix->walk[k] = ix->walk[c];
    k = c;
  }
  if (w->nf > 0)
    ix->walk[k] = last;
  if (2 * top + 1 < ix->n && frontier_push(w, 2 * top + 1))
    return SIZE_MAX - 1;
  if (2 * top + 2 < ix->n && frontier_push(w, 2 * top + 2))
    return SIZE_MAX - 1;
  return top;
}

static size_t frontier_peek(const walk *w) {
  return w->nf ? w->ix->walk[0] : SIZE_MAX;
}

/* Starts the walk: the overdue group gathered and sorted. 0, or -1 when
 * out of memory. */
static int walk_start(walk *w, engine *e, const run_end *cand) {
  struct ends_index *ix = e->ends_ix;
  w->e = e;
  w->ix = ix;
  w->nf = 0;
  w->g = w->ng = 0;
  w->have_cand = cand != NULL;
  if (cand)
    w->cand = *cand;
  if (ix->n && frontier_push(w, 0))
    return -1;
  for (;;) {
    size_t i = frontier_peek(w);
    if (i == SIZE_MAX || ix->h[i].end > e->now)
      break;
    if (frontier_pop(w) == SIZE_MAX - 1 ||
        grow_array((void **)&ix->grp, &ix->grp_cap, w->ng + 2,
                   sizeof *ix->grp))
      return -1;
    run_end x = ix->h[i];
    x.end = e->now;
    ix->grp[w->ng++] = x;
  }
  if (w->have_cand && w->cand.end <= e->now) {
    if (grow_array((void **)&ix->grp, &ix->grp_cap, w->ng + 1,
                   sizeof *ix->grp))
      return -1;
    w->cand.end = e->now;
    ix->grp[w->ng++] = w->cand;
    w->have_cand = 0;
  }
  if (w->ng > 1)
    qsort(ix->grp, w->ng, sizeof *ix->grp, cmp_run_end);
  return 0;
}

/* The next entry into *x: 1, 0 at the end, -1 when out of memory. */
static int walk_next(walk *w, run_end *x) {
  if (w->g < w->ng) {
    *x = w->ix->grp[w->g++];
    return 1;
  }
  size_t i = frontier_peek(w);
  if (w->have_cand && (i == SIZE_MAX || less(&w->cand, &w->ix->h[i]))) {
    *x = w->cand;
    w->have_cand = 0;
    return 1;
  }
  if (i == SIZE_MAX)
    return 0;
  if (frontier_pop(w) == SIZE_MAX - 1)
    return -1;
  *x = w->ix->h[i];
  return 1;
}

/* -------------------------------------------------- the reservation */

int policy_fit_answers(const lsched_policy *p) {
  return (lsched_policy_flags(p) &
          (LSCHED_POLICY_ANY_FIT | LSCHED_POLICY_ANY_FIT_DRAWS)) != 0;
}

/* How a reservation asks whether the head would be placed now. */
enum head_ask {
  HEAD_BY_FITS, /* a one-part request of a policy_fit_answers policy: some
                   node fits, which is its answer */
  HEAD_FIRST,   /* a cut request (a gang wider than a node) of a policy
                   that draws (LSCHED_POLICY_ANY_FIT_DRAWS): its parts on
                   the first nodes that fit (lsched_gang_fits_first) */
  HEAD_POLICY   /* otherwise: the policy is asked, its placement undone */
};

static enum head_ask head_ask_of(engine *e, const lsched_request *req) {
  unsigned f = lsched_policy_flags(e->pol);
  if (!(f & (LSCHED_POLICY_ANY_FIT | LSCHED_POLICY_ANY_FIT_DRAWS)))
    return HEAD_POLICY;
  if (lsched_place_splits(e->sc->c, req) == 0)
    return HEAD_BY_FITS;
  return f & LSCHED_POLICY_ANY_FIT_DRAWS ? HEAD_FIRST : HEAD_POLICY;
}

/* Whether the policy would place req now, asked as `how` says: a question
 * that never draws (random: a run's placements do not depend on how many
 * reservations were asked) and leaves the cluster as it was. */
static int head_places(engine *e, const lsched_request *req,
                       enum head_ask how) {
  if (how == HEAD_BY_FITS)
    return lsched_next_fit(e->sc->c, req, 0) >= 0;
  lsched_placement hp[SIM_MAX_PARTS];
  if (how == HEAD_FIRST)
    return lsched_gang_fits_first(e->sc->c, req, hp, SIM_MAX_PARTS) > 0;
  int hn = 0;
  if (lsched_place_gang(e->pol, req, hp, SIM_MAX_PARTS, &hn) != LSCHED_OK)
    return 0;
  unplace(e, hp, hn);
  return 1;
}

/* Releases running jobs in order of estimated end from `next` on (ties
 * released together) and tries h after each group; everything is
 * allocated back, which restores the state exactly. A group ending after
 * limit is not released: INT64_MAX then (a question "by limit?" has its
 * answer there, and a gang head's walk asks the policy at every group). */
static int64_t release_walk(engine *e, const lsched_request *req, walk *w,
                            const run_end *ends, size_t r, int64_t limit,
                            int *fail) {
  struct ends_index *ix = e->ends_ix;
  lsched_placement parts[SIM_MAX_PARTS];
  int64_t t = INT64_MAX;
  size_t released = 0, k = 0;
  const enum head_ask how = head_ask_of(e, req);
  e->res_walked++;
  run_end x;
  int have = ends ? (r > 0 ? (x = ends[0], 1) : 0) : walk_next(w, &x);
  while (have > 0) {
    int64_t te = x.end;
    if (te > limit)
      break;
    while (have > 0 && x.end == te) {
      if (!ends && grow_array((void **)&ix->rel, &ix->rel_cap, released + 1,
                              sizeof *ix->rel)) {
        have = -1;
        break;
      }
      int n = job_parts(e, x.job, parts);
      for (int q = n - 1; q >= 0; q--)
        if (lsched_release(e->sc->c, &parts[q]))
          *fail = 1;
      if (!ends)
        ix->rel[released] = x.job;
      released++;
      if (ends)
        have = ++k < r ? (x = ends[k], 1) : 0;
      else
        have = walk_next(w, &x);
    }
    if (have < 0)
      break;
    if (head_places(e, req, how)) {
      t = te;
      break;
    }
  }
  if (have < 0)
    *fail = 1;
  while (released-- > 0) {
    int n = job_parts(e, ends ? ends[released].job : ix->rel[released],
                      parts);
    for (int q = 0; q < n; q++)
      if (lsched_alloc(e->sc->c, &parts[q]))
        *fail = 1;
  }
  return t;
}

/* The reservation of h (request req) from the index of the committed
 * jobs run_list[0 .. base), the candidate run_list[base] merged into the
 * walk when r > base (r <= base + 1). */
static int64_t reservation_indexed(engine *e, const lsched_request *req,
                                   size_t base, size_t r, int64_t limit,
                                   int *fail) {
  if (!e->ends_ix && build(e, base)) {
    *fail = 1;
    return INT64_MAX;
  }
  run_end cand;
  if (r > base)
    cand = end_of(e, e->run_list[base], 0);
  struct ends_index *ix = e->ends_ix;
  if (ix->rx) {
    uint32_t cs = r > base ? e->run_list[base] : UINT32_MAX;
    int64_t t, ce = r > base ? raw_end_of(e, cs, 0).end : 0;
    int a = rx_answer(ix->rx, req, cs, ce, &t);
    if (a < 0) {
      rx_off(ix);
    } else if (a > 0) {
      if (t == INT64_MIN) {
        /* It fits now: the walk's first group, the least end (rare: the
         * head was just tried). */
        t = INT64_MAX;
        for (size_t i = 0; i < r; i++) {
          int64_t x = raw_end_of(e, e->run_list[i], i < base).end;
          if (x < t)
            t = x;
        }
      }
      if (t != INT64_MAX && t < e->now)
        t = e->now;
      e->res_per_node++;
      if (verify_on(e)) {
        if (ix->stale && heap_fill(e, ix, base))
          abort();
        walk vw;
        if (walk_start(&vw, e, r > base ? &cand : NULL))
          abort();
        int64_t vt = release_walk(e, req, &vw, NULL, 0, INT64_MAX, fail);
        if (vt != t) {
          fprintf(stderr,
                  "reserve_verify: per node %lld, walk %lld (now %lld)\n",
                  (long long)t, (long long)vt, (long long)e->now);
          abort();
        }
      }
      return t;
    }
  }
  if (ix->stale && heap_fill(e, ix, base)) {
    *fail = 1;
    return INT64_MAX;
  }
  ix->since = 0;
  walk w;
  if (walk_start(&w, e, r > base ? &cand : NULL)) {
    *fail = 1;
    return INT64_MAX;
  }
  return release_walk(e, req, &w, NULL, 0, limit, fail);
}

/* Co-runners a slowing candidate may re-time and still be answered from
 * the index (slowed_reservation); more are sorted in full. */
#define SLOWED_MAX 64

/*
 * The reservation of h under a speed model with the candidate
 * run_list[base] slowing co-runners (speed_slows): their ends move for
 * this question only (speed_view). The index is asked with those few
 * keys moved to their ends with the candidate (ends_set) and put back
 * after, instead of computing and sorting every running job's end
 * (O(R log R) a question: on a month of a busy 100,000-GPU cluster with
 * shared GPUs, most of the run). The keys kept are the ends without the
 * candidate (raw_end_of with it unmarked), which the index is built
 * from too. The candidate is on cp (cn parts). 0 with *t, or 1 when
 * there are more than SLOWED_MAX of them.
 */
static int slowed_reservation(engine *e, const lsched_request *req,
                              size_t base, const lsched_placement *cp,
                              int cn, int64_t limit, int *fail, int64_t *t) {
  uint32_t cs = e->run_list[base];
  uint32_t co[SLOWED_MAX];
  int64_t with[SLOWED_MAX], was[SLOWED_MAX];
  size_t k = speed_slowed(e, cs, cp, cn, co, SLOWED_MAX);
  if (k > SLOWED_MAX)
    return 1;
  for (size_t i = 0; i < k; i++)
    with[i] = raw_end_of(e, co[i], 1).end;
  e->nrun = base; /* the candidate unmarked for a moment */
  int bad = !e->ends_ix && build(e, base);
  for (size_t i = 0; i < k; i++)
    was[i] = raw_end_of(e, co[i], 1).end;
  e->nrun = base + 1;
  if (bad) {
    *fail = 1;
    *t = INT64_MAX;
    return 0;
  }
  e->res_slowed++;
  for (size_t i = 0; i < k; i++)
    if (e->ends_ix)
      ends_set(e, co[i], with[i]);
  *t = reservation_indexed(e, req, base, base + 1, limit, fail);
  for (size_t i = k; i-- > 0;)
    if (e->ends_ix)
      ends_set(e, co[i], was[i]);
  return 0;
}

static int64_t reservation_by(engine *e, uint32_t h, int64_t limit,
                              int *fail);

/*
 * EASY reservation of h. run_list holds the started jobs first and then
 * at most one candidate marked running for this question
 * (queue_backfill.c), not counted in e->running. The started jobs come
 * from the index; the candidate is merged into the walk. Under a speed
 * model a candidate that would slow co-runners moves their ends for this
 * question only (speed_view): slowed_reservation moves their keys in the
 * index for the question. In the unexpected case of several marked jobs
 * every end is computed and sorted anew (O(R log R)), which is also the
 * reference the tests compare the index against (sim_options.queue_plain,
 * tests/test_queue_index.c).
 */
int64_t reservation(engine *e, uint32_t h, int *fail) {
  return reservation_by(e, h, INT64_MAX, fail);
}

/* reservation(), but a reservation after limit may be answered INT64_MAX
 * (the walk stops there). */
static int64_t reservation_by(engine *e, uint32_t h, int64_t limit,
                              int *fail) {
  size_t r = e->nrun;
  size_t base = e->running < r ? e->running : r;
  /* queue_plain (tests: the reference run) sorts every time too, and
   * walks to the end. */
  int fresh = r - base > 1 || e->opt->queue_plain;
  if (e->opt->queue_plain)
    limit = INT64_MAX;
  lsched_request req;
  build_request(e, &e->slots[h], &req);
  if (!fresh && r - base == 1 && e->speed) {
    lsched_placement cp[SIM_MAX_PARTS];
    int cn = job_parts(e, e->run_list[base], cp);
    int64_t t;
    if (speed_slows(e, e->run_list[base], cp, cn) &&
        (fresh = slowed_reservation(e, &req, base, cp, cn, limit, fail,
                                    &t)) == 0)
      return t;
  }
  if (fresh) {
    if (grow_array((void **)&e->scratch_ends, &e->scratch_cap, r + 1,
                   sizeof *e->scratch_ends)) {
      *fail = 1;
      return INT64_MAX;
    }
    run_end *ends = e->scratch_ends;
    for (size_t i = 0; i < r; i++)
      ends[i] = end_of(e, e->run_list[i], i < base);
    qsort(ends, r, sizeof *ends, cmp_run_end);
    return release_walk(e, &req, NULL, ends, r, limit, fail);
  }
  return reservation_indexed(e, &req, base, r, limit, fail);
}

/*
 * Whether the reservation of h, with the one candidate marked running
 * (queue_backfill.c), is at or before T (the head's current reservation,
 * T >= now): reservation(e, h, fail) <= T. Answered per node when it can:
 * T is the least t_n before the candidate, so when a node the candidate
 * is not on still reaches T the answer is yes without the candidate's
 * node (reserve_nodes.c rx_within).
 */
int reservation_within(engine *e, uint32_t h, int64_t T, int *fail) {
  size_t r = e->nrun;
  size_t base = e->running < r ? e->running : r;
  struct ends_index *ix = e->ends_ix;
  if (ix && ix->rx && r == base + 1 && T >= e->now &&
      T != INT64_MAX && !e->opt->queue_plain) {
    uint32_t cs = e->run_list[base];
    lsched_placement cp[SIM_MAX_PARTS];
    int cn = job_parts(e, cs, cp);
    if (!e->speed || !speed_slows(e, cs, cp, cn)) {
      lsched_request req;
      build_request(e, &e->slots[h], &req);
      int a = rx_within(ix->rx, &req, cs, raw_end_of(e, cs, 0).end, T);
      if (a < 0) {
        rx_off(ix);
      } else if (a <= 1) {
        e->res_per_node++;
        if (verify_on(e) && a != (reservation(e, h, fail) <= T)) {
          fprintf(stderr, "reserve_verify: within %d at %lld\n", a,
                  (long long)T);
          abort();
        }
        return a;
      }
    }
  }
  return reservation_by(e, h, T, fail) <= T;
}

/* trial_ok holds the conditions of the run: no plans (segments), no
 * reference pass, no hooks that rewrite requests or act before a
 * placement. A speed model is allowed: a candidate that would slow
 * co-runners is asked in full (queue_backfill.c candidate), and one that
 * slows none moves no other job's end, so the per-node answer with its
 * part held holds. */
int reserve_trial_ok(const engine *e) {
  const struct ends_index *ix = e->ends_ix;
  return ix && ix->rx && ix->trial_ok && e->nrun == e->running;
}

/* stamp_ok: trial_ok's conditions but segments, which a rejection in full
 * may stamp (est_marked_end reads them). */
int reserve_stamp_ok(const engine *e) {
  const struct ends_index *ix = e->ends_ix;
  return ix && ix->stamp_ok;
}

int reservation_within_trial(engine *e, uint32_t h, uint32_t j,
                             const lsched_placement *p, int64_t cand_end,
                             int64_t T) {
  struct ends_index *ix = e->ends_ix;
  if (T < e->now || T == INT64_MAX)
    return 2;
  uint64_t hidx = e->slots[h].idx;
  int a;
  if (rx_within_seen(ix->rx, hidx, p->node, T)) {
    a = 1;
  } else {
    lsched_request req;
    build_request(e, &e->slots[h], &req);
    a = rx_within_held(ix->rx, &req, p, j, cand_end, T);
    if (a < 0) {
      rx_off(ix);
      return 2;
    }
    if (a <= 1)
      rx_within_note(ix->rx, hidx, T);
  }
  if (a <= 1)
    e->res_per_node++;
  if (verify_on(e) && a <= 1) {
    int fail = 0;
    if (lsched_alloc(e->sc->c, p) || mark_running(e, j, p, 1))
      abort();
    int want = reservation(e, h, &fail) <= T;
    unmark_running(e, j);
    unplace(e, p, 1);
    if (fail || want != a) {
      fprintf(stderr, "reserve_verify: trial %d, walk %d at %lld\n", a,
              want, (long long)T);
      abort();
    }
  }
  return a;
}

/* ------------------------------------------- kept across completions */

/*
 * The head's reservation T, once exact, stays exact while the only changes
 * are running jobs that leave at or after their estimated end (a
 * completion with exact estimates, or an overdue job under --overrun
 * extend), the head is the same and T > now, for a head answered by "some
 * node fits" (one part, a policy_fit_answers policy): the walk releases
 * every job whose end is <= now first, as one group, and the jobs that
 * left were in it (or in an earlier group of the walk that gave T); so
 * the walk releases the same sets as before, minus what is already free:
 * the same cluster at each group, the head fits at the same T (not before:
 * T > now). A backfilled start leaves T exact for such a head (a node's
 * fit is monotone in what is released: T is no earlier with the job
 * running, and no later by the candidate's test), so it is noted again.
 * Any allocation, node change, end set or earlier leave (reserve_nodes.c
 * counts them) asks again. Not with the speed model (ends re-timed),
 * plans (segments), hooks that rewrite requests, or the reference pass.
 */
/* Finds out whether head h is answered by "some node fits" (out of line:
 * once per head). */
static __attribute__((noinline)) void keep_learn(engine *e, uint32_t h,
                                                 uint64_t idx) {
  struct ends_index *ix = e->ends_ix;
  lsched_request req;
  build_request(e, &e->slots[h], &req);
  ix->keep_fits = head_ask_of(e, &req) == HEAD_BY_FITS;
  ix->keep_known = 1;
  ix->keep_h = h;
  ix->keep_idx = idx;
}

/* Whether a kept reservation of h may be noted or used now: head h
 * answered by "some node fits". */
static int keep_allowed(engine *e, uint32_t h) {
  struct ends_index *ix = e->ends_ix;
  if (!ix || !ix->rx || !ix->keep_ok || e->nrun != e->running)
    return 0;
  uint64_t idx = e->slots[h].idx;
  if (!ix->keep_known || ix->keep_h != h || ix->keep_idx != idx)
    keep_learn(e, h, idx);
  return ix->keep_fits;
}

void reservation_note(engine *e, uint32_t h, int64_t T) {
  if (!keep_allowed(e, h))
    return;
  struct ends_index *ix = e->ends_ix;
  ix->kept_on = 1;
  ix->kept_hidx = ix->keep_idx; /* h's trace position (keep_allowed) */
  ix->kept_t = T;
  ix->kept_mv = *ix->mv;
}

int reservation_kept(engine *e, uint32_t h, int64_t *T) {
  if (!keep_allowed(e, h))
    return 0;
  struct ends_index *ix = e->ends_ix;
  if (!ix->kept_on || ix->kept_hidx != ix->keep_idx ||
      ix->kept_mv.moves != ix->mv->moves ||
      ix->kept_mv.open_rel != ix->mv->open_rel || ix->kept_t <= e->now)
    return 0;
  *T = ix->kept_t;
  if (verify_on(e)) {
    int fail = 0;
    int64_t t = reservation(e, h, &fail);
    if (fail || t != *T) {
      fprintf(stderr, "reserve_verify: kept %lld, asked %lld (now %lld)\n",
              (long long)*T, (long long)t, (long long)e->now);
      abort();
    }
  }
  return 1;
}
