/*
 * Runtime estimates and EASY reservations: when could a blocked job start
 * if nothing else started? Used by backfilling (queue_backfill.c) and by
 * migration planning (migrate.c: the head's expected wait).
 */
#include "engine_internal.h"

#include <math.h>
#include <stdlib.h>

struct run_end {
  int64_t end;
  uint64_t idx; /* trace position: the tie-break */
  uint32_t job; /* slot */
};
typedef struct run_end run_end;

/* The estimated end of the job in slot sl if it started at start: its
 * runtime estimate (estimate.c) after start. */
int64_t est_end(const engine *e, uint32_t sl, int64_t start) {
  const slot *s = &e->slots[sl];
  int64_t d = est_left(e, s, job_duration(e, &s->rec));
  if (d > INT64_MAX - start)
    return INT64_MAX;
  return start + d;
}

/* Estimated end of a running job: its current segment's start plus the
 * estimate of the work it had left then (migrations and preemptions move
 * segments). */
static int64_t running_est_end(const engine *e, uint32_t sl) {
  const slot *s = &e->slots[sl];
  if (!e->can_plan)
    return est_end(e, sl, s->st.start_us);
  int64_t d = est_left(e, s, s->rem_us);
  if (d > INT64_MAX - s->seg_us)
    return INT64_MAX;
  return s->seg_us + d;
}

/* Running jobs by estimated end; ties by trace position (not by slot, so
 * that the order does not depend on slot recycling). */
static int cmp_run_end(const void *a, const void *b) {
  const run_end *x = a, *y = b;
  if (x->end != y->end)
    return x->end < y->end ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/*
 * Running jobs are released on the real cluster in order of estimated end
 * (ties released together) and h is tried after each group; then
 * everything is allocated back, which restores the state exactly.
 * O(R log R + R x place) for R running jobs.
 */
int64_t reservation(engine *e, uint32_t h, int *fail) {
  size_t r = e->nrun;
  if (grow_array((void **)&e->scratch_ends, &e->scratch_cap, r + 1,
                 sizeof *e->scratch_ends)) {
    *fail = 1;
    return INT64_MAX;
  }
  run_end *ends = e->scratch_ends;
  for (size_t i = 0; i < r; i++) {
    uint32_t j = e->run_list[i];
    ends[i].job = j;
    ends[i].idx = e->slots[j].idx;
    ends[i].end = running_est_end(e, j);
    if (ends[i].end < e->now)
      ends[i].end = e->now; /* overdue (--overrun extend): it may end at
                               any moment; queue_backfill.c recomputes */
  }
  qsort(ends, r, sizeof *ends, cmp_run_end);
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
  return t;
}
