/*
 * backfill: EASY backfilling. The head starts as soon as it fits; while it
 * does not, it holds a reservation at its earliest estimated start time T
 * (reserve.c), and a later job may start now only if it fits now and
 * either its estimated end is <= T or, started, it leaves the head's
 * reservation at or before T (checked by recomputing the reservation with
 * it running). Estimates come from estimate.c (--estimates).
 */
#include "engine_internal.h"
#include "reserve.h"

#include <stdio.h>

static int inconsistent(engine *e) {
  snprintf(e->err, e->errlen, "backfill: inconsistent release/allocation");
  return -1;
}

/* The head's reservation T, recomputed when it may have moved (not after
 * completions that cannot move it: reserve.c reservation_kept). 0, or -1
 * with err set. */
static int prepare(engine *e) {
  uint32_t h = e->queue[e->qhead];
  int fail = 0;
  /* T in the past: a running job is overdue (--overrun extend) and taken
   * as ending now, so T must be recomputed at every pass, or a decision
   * would test candidates against a stale T. */
  if (e->reservation_valid && e->reservation_t < e->now)
    e->reservation_valid = 0;
  if (!e->reservation_valid) {
    if (!reservation_kept(e, h, &e->reservation_t)) {
      e->reservation_t = reservation(e, h, &fail);
      if (!fail)
        reservation_note(e, h, e->reservation_t);
    }
    e->reservation_valid = 1;
    if (e->slots[h].reserved_us < 0)
      e->slots[h].reserved_us = e->reservation_t;
  }
  return fail ? inconsistent(e) : 0;
}

/* j started (marked running and committed) with the head's reservation
 * at keep_t: 2, or -1 with err set. */
static inline __attribute__((always_inline)) int
started(engine *e, uint32_t h, uint32_t j, int64_t keep_t) {
  int fail = 0;
  /* With check_reservations: the head's recomputed reservation, with j
   * running, is no later than T (the consistency of the decision, overdue
   * jobs included). */
  if (e->opt->check_reservations) {
    int64_t t2 = reservation(e, h, &fail);
    if (fail)
      return inconsistent(e);
    if (t2 > keep_t) {
      snprintf(e->err, e->errlen,
               "backfill: starting job %s delays the head's reservation "
               "from %lld to %lld us",
               slot_name(e, &e->slots[j]), (long long)keep_t, (long long)t2);
      return -1;
    }
  }
  /* A backfilled job never moves T later; keep it to protect the head
   * against later candidates in this pass (and after, reserve.c
   * reservation_note). */
  e->reservation_t = keep_t;
  e->reservation_valid = 1;
  reservation_note(e, h, keep_t);
  return 2;
}

/* j, placed on parts (n of them, allocated), starts now: 2, or -1 with
 * err set. */
static inline __attribute__((always_inline)) int
start_job(engine *e, uint32_t h, uint32_t j, const lsched_placement *parts,
          int n) {
  int64_t keep_t = e->reservation_t;
  if (start_running(e, j, parts, n))
    return -1;
  return started(e, h, j, keep_t);
}

/* j, placed on parts (n of them, allocated): started when it ends by T
 * or, started, leaves the head's reservation at or before T (asked in
 * full, with j marked running); else unplaced. 2, 1, or -1. */
static __attribute__((noinline)) int decide(engine *e, uint32_t h, uint32_t j,
                                            lsched_placement *parts, int n) {
  int fail = 0, start;
  if (e->reservation_t == INT64_MAX ||
      (est_end(e, j, parts, n) <= e->reservation_t &&
       !speed_slows(e, j, parts, n))) {
    start = 1;
  } else {
    if (mark_running(e, j, parts, n)) {
      snprintf(e->err, e->errlen, "out of memory");
      return -1;
    }
    start = reservation_within(e, h, e->reservation_t, &fail);
    unmark_running(e, j);
    if (fail)
      return inconsistent(e);
  }
  if (!start) {
    /* Kept waiting: stamped as a trial's rejection would be (the
     * allocation, marking and release changed nothing). Where it slows
     * co-runners, their ends with it marked depend on its class and
     * placement, not on its own end (the interference factor holds for
     * the rest of their run): a later job of the shape, which is of its
     * class (queue_index.c by_class), placed the same and ending no
     * earlier, leaves the head no earlier. */
    if (n == 1 && reserve_stamp_ok(e)) {
      e->bf_rejected = 1;
      e->bf_rej_end = est_marked_end(e, j, parts, 1);
      e->bf_rej_part = parts[0];
    }
    unplace(e, parts, n);
    return 1;
  }
  return start_job(e, h, j, parts, n);
}

/* candidate() placed in trial on p, allocated there and decided in full. */
static __attribute__((noinline)) int in_full(engine *e, uint32_t h, uint32_t j,
                                             lsched_placement *p) {
  if (place_alloc(e, j, p))
    return -1;
  return decide(e, h, j, p, 1);
}

/* candidate() placed by the policy (place_job) and decided in full. */
static __attribute__((noinline)) int placed(engine *e, uint32_t h, uint32_t j) {
  lsched_placement parts[SIM_MAX_PARTS];
  int n = 0;
  int r = place_job(e, j, parts, &n);
  if (r <= 0)
    return r;
  return decide(e, h, j, parts, n);
}

/* Candidate j behind the head h (queue_candidate_fn): 2 started, 1 fits
 * but would delay the head, 0 does not fit, -1 error. When the
 * reservations are answered per node, j is placed without allocating it
 * (place_trial) and allocated only to start (start_placed: allocated,
 * marked and committed in one call): a candidate that would delay the
 * head costs no allocation and release (same decisions: its allocation,
 * marking and undoing changed nothing). Under a speed model a candidate
 * that would slow co-runners there (speed_slows: their ends move) is
 * allocated and asked in full, as decide() would. The other paths are
 * out of line (placed, decide): their frames would cost every
 * candidate. */
static int candidate(engine *e, uint32_t h, uint32_t j) {
  e->bf_rejected = 0;
  if (!reserve_trial_ok(e))
    return placed(e, h, j);
  lsched_placement p;
  int r = place_trial(e, j, &p);
  if (r <= 0)
    return r;
  if (r == 2)
    return placed(e, h, j);
  if (e->speed && e->reservation_t != INT64_MAX && speed_slows(e, j, &p, 1))
    return in_full(e, h, j, &p);
  /* Where it joins the node's end list if it starts (most candidates
   * do), asked for while its end and the head's reservation are found. */
  if (e->prefetch)
    ends_prefetch(e, j, p.node, 1);
  int64_t end = est_end(e, j, &p, 1);
  int a = e->reservation_t == INT64_MAX || end <= e->reservation_t
              ? 1
              : reservation_within_trial(e, h, j, &p, end, e->reservation_t);
  if (a == 0) {
    e->bf_rejected = 1;
    e->bf_rej_end = end;
    e->bf_rej_part = p;
    return 1;
  }
  if (a != 1) /* allocated: ask in full */
    return in_full(e, h, j, &p);
  ends_expect(e, j, end);
  int64_t keep_t = e->reservation_t;
  if (start_placed(e, j, &p))
    return -1;
  return started(e, h, j, keep_t);
}

/* The plain pass (the reference; runs with the queue index take
 * queue_index_pass_backfill, same decisions): O(queue) per pass after a
 * release. Out of line: its frame would cost every indexed pass (1.2 M
 * instructions in 100,000 events). */
static __attribute__((noinline)) int pass_plain(engine *e) {
  int changed = e->freed || e->queue_changed;
  if (sim_queue_pass_head(e))
    return -1;
  if (e->qlen < 2 || !changed)
    return 0;
  uint32_t h = e->queue[e->qhead];
  if (prepare(e))
    return -1;
  /* Without a release only unseen arrivals can newly qualify: the others
   * failed to fit (resources only shrank) or would end after T (their end
   * only moves later). */
  size_t from = e->freed ? 1 : (e->new_from > 1 ? e->new_from : 1);
  size_t w = e->qhead + from;
  for (size_t i = from; i < e->qlen; i++) {
    uint32_t j = e->queue[e->qhead + i];
    int r = candidate(e, h, j);
    if (r < 0)
      return -1;
    if (r != 2)
      e->queue[w++] = j;
  }
  e->qlen = w - e->qhead;
  return 0;
}

static int pass_backfill(engine *e) {
  /* Opened: queue_index_on would answer 1, a call per pass (1.7 M
   * instructions in the 100,000 events of 10k@1.2 first-fit). */
  if (e->qx)
    return queue_index_pass_backfill(e, candidate, prepare);
  int on = queue_index_on(e);
  if (on)
    return on < 0 ? -1 : queue_index_pass_backfill(e, candidate, prepare);
  return pass_plain(e);
}

const sim_queue_ops sim_queue_backfill = {
    .name = "backfill",
    .kind = SIM_QUEUE_BACKFILL,
    .flags = SIM_QUEUE_RESERVES,
    .insert_pos = NULL,
    .pass = pass_backfill,
};
