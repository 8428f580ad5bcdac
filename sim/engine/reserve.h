/*
 * A head's reservation kept across completions (reserve.c, reserve_nodes.c;
 * queue_backfill.c asks): T stays exact while the only changes are running
 * jobs that left at or after their estimated end, T is later than now and
 * the head is the same (see reservation_kept).
 */
#ifndef SIM_ENGINE_RESERVE_H
#define SIM_ENGINE_RESERVE_H

#include "engine_internal.h"

/* T is the exact reservation of head h now (just computed, or kept by a
 * backfilled start): remembered when it can be kept. */
void reservation_note(engine *e, uint32_t h, int64_t T);
/* 1 and *T when the reservation last noted for h is still exact, else 0.
 * With reserve_verify the walk is asked too (abort on a difference). */
int reservation_kept(engine *e, uint32_t h, int64_t *T);

/* Slot sl, about to start now (start_running), is estimated to end at
 * end (est_end): ends_changed takes it instead of asking again. */
void ends_expect(engine *e, uint32_t sl, int64_t end);

/* Counted by reserve_nodes.c as the cluster's observer: changes that may
 * move a head's reservation (allocations, node changes, ends set, jobs
 * that left before their estimated end), and releases less the parts of
 * jobs that left at or after it (a completion releases its parts, then
 * leaves). A kept T stays exact while both are as when it was noted. */
typedef struct rx_moves {
  uint64_t moves;
  int64_t open_rel;
} rx_moves;
const rx_moves *rx_moves_of(const struct rx *x);

/* For reservation_within_trial (head at trace position hidx, T): a node
 * other than m known to reach T answers 1 without the tree (rx_within_seen);
 * rx_within_note takes the tree's least as that node after rx_within_held
 * answered from the tree (0 or 1). */
void rx_within_note(struct rx *x, uint64_t hidx, int64_t T);
int rx_within_seen(struct rx *x, uint64_t hidx, int m, int64_t T);

#endif
