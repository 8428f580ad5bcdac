/*
 * Runtime estimates and EASY reservations: when could a blocked job start
 * if nothing else started? Used by backfilling (queue_backfill.c) and by
 * migration planning (migrate.c: the head's expected wait).
 */
#include "engine_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct run_end {
  int64_t end;
  uint64_t idx; /* trace position: the tie-break */
  uint32_t job; /* slot */
};
typedef struct run_end run_end;

/* Running jobs by estimated end; ties by trace position (not by slot, so
 * that the order does not depend on slot recycling). */
static int cmp_run_end(const void *a, const void *b) {
  const run_end *x = a, *y = b;
  if (x->end != y->end)
    return x->end < y->end ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/* committed: j runs (else it is a candidate only marked running). */
static run_end end_of(const engine *e, uint32_t j, int committed) {
  run_end x;
  x.job = j;
  x.idx = e->slots[j].idx;
  x.end = est_running_end(e, j, committed);
  if (x.end < e->now)
    x.end = e->now; /* overdue (--overrun extend): it may end at any
                       moment; queue_backfill.c recomputes */
  return x;
}

/* Inserts x into ends[0 .. n), sorted; returns its position. */
static size_t insert_end(run_end *ends, size_t n, run_end x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_run_end(&ends[mid], &x) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  memmove(&ends[lo + 1], &ends[lo], (n - lo) * sizeof *ends);
  ends[lo] = x;
  return lo;
}

/*
 * Running jobs are released on the real cluster in order of estimated end
 * (ties released together) and h is tried after each group; then
 * everything is allocated back, which restores the state exactly.
 * O(R log R + R x place) for R running jobs. The order of the started jobs
 * is kept for the next call at the same time while no job completed, moved
 * or was preempted: a backfill pass asks again for each candidate that
 * fits but ends after the reservation, with that candidate marked running
 * (appended to run_list), and jobs it started since are appended too; each
 * is inserted in O(log R) plus a move instead of sorting all again.
 */
int64_t reservation(engine *e, uint32_t h, int *fail) {
  size_t r = e->nrun;
  if (grow_array((void **)&e->scratch_ends, &e->scratch_cap, r + 1,
                 sizeof *e->scratch_ends)) {
    *fail = 1;
    return INT64_MAX;
  }
  run_end *ends = e->scratch_ends;
  /* Ends move with migrations, preemptions and re-timings (speed.c). */
  uint64_t moves = e->migrations + e->preemptions + speed_retimes(e);
  /* run_list holds the started jobs first and then at most one candidate
   * marked running for this question (queue_backfill.c), not counted in
   * e->running. */
  size_t base = e->running < r ? e->running : r;
  /* A candidate that would slow co-runners (speed model, shared GPU)
   * moves their ends: all sorted anew for it, not kept. */
  int fresh = r - base > 1;
  if (r - base == 1 && e->speed) {
    lsched_placement cp[SIM_MAX_PARTS];
    int cn = job_parts(e, e->run_list[base], cp);
    fresh = speed_slows(e, e->run_list[base], cp, cn);
  }
  size_t added = r; /* the candidate's position, or r */
  if (fresh) { /* all sorted anew, not kept */
    e->ends_ok = 0;
    for (size_t i = 0; i < r; i++)
      ends[i] = end_of(e, e->run_list[i], i < base);
    qsort(ends, r, sizeof *ends, cmp_run_end);
  } else {
    if (!e->ends_ok || e->ends_now != e->now || e->ends_done != e->done ||
        e->ends_moves != moves || e->ends_n > base) {
      for (size_t i = 0; i < base; i++)
        ends[i] = end_of(e, e->run_list[i], 1);
      qsort(ends, base, sizeof *ends, cmp_run_end);
      e->ends_n = base;
      e->ends_now = e->now;
      e->ends_done = e->done;
      e->ends_moves = moves;
      e->ends_ok = 1;
    }
    /* Jobs started since: appended to run_list in order. */
    while (e->ends_n < base) {
      run_end x = end_of(e, e->run_list[e->ends_n], 1);
      insert_end(ends, e->ends_n, x);
      e->ends_n++;
    }
    if (r > base)
      added = insert_end(ends, base, end_of(e, e->run_list[base], 0));
  }
  lsched_request req;
  build_request(e, &e->slots[h], &req);
  lsched_placement parts[SIM_MAX_PARTS], hp[SIM_MAX_PARTS];
  int64_t t = INT64_MAX;
  size_t released = 0;
  while (released < r) {
    int64_t te = ends[released].end;
    while (released < r && ends[released].end == te) {
      int n = job_parts(e, ends[released].job, parts);
      for (int k = n - 1; k >= 0; k--)
        if (lsched_release(e->sc->c, &parts[k]))
          *fail = 1;
      released++;
    }
    int hn = 0;
    if (lsched_place_gang(e->pol, &req, hp, SIM_MAX_PARTS, &hn) ==
        LSCHED_OK) {
      unplace(e, hp, hn);
      t = te;
      break;
    }
  }
  while (released-- > 0) {
    int n = job_parts(e, ends[released].job, parts);
    for (int k = 0; k < n; k++)
      if (lsched_alloc(e->sc->c, &parts[k]))
        *fail = 1;
  }
  if (added < r) /* back to the order without the candidate */
    memmove(&ends[added], &ends[added + 1], (r - 1 - added) * sizeof *ends);
  return t;
}
