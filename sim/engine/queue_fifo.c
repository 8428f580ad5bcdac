/*
 * fifo: jobs start in arrival order, and a head that does not fit blocks
 * every job behind it (head-of-line blocking).
 */
#include "engine_internal.h"

#ifdef FRAGTRACK_VERIFY
#include <stdio.h>
#include <stdlib.h>
#endif

/* Whether the head in slot sl, which failed at its last try, still fails
 * now, told without asking the policy (the queue index's known_nofit for
 * one head): where the engine keeps a release log (engine_rlog: the
 * policy places a one-part request exactly when some node fits it and a
 * try that places nothing changes nothing, no part rewrites the request
 * or acts before placing, no GPU pools), for a one-part request, when no
 * node released on since that try fits it (the others only lost room).
 * The try is then a fit test per released node (usually one) instead of
 * a failed placement: on 100,000 GPUs at load 1.2 with first-fit a third
 * of the head's tries failed, ~300 instructions each against ~190 for the
 * test (2.4% of the replay's instructions went). 0: try it. */
static int head_fails_still(engine *e, uint32_t sl) {
  if (!e->rlog)
    return 0;
  lsched_request req;
  build_request(e, &e->slots[sl], &req);
  /* Whether it is one part, found once per failed try (the answer changes
   * only with the nodes, and the head is tried then). */
  if (e->head_parts >> 1 != (uint64_t)sl + 1)
    e->head_parts = ((uint64_t)sl + 1) << 1 |
                    (uint64_t)(lsched_place_splits(e->sc->c, &req) != 0);
  if (e->head_parts & 1) /* parts, or malformed */
    return 0;
  /* No node fits it now: as after a failed try, releases count from
   * here (sim_rlog_none_fits moves the mark). */
  return sim_rlog_none_fits(e->rlog, &e->head_mark, e->sc->c, &req);
}

/* The head is only retried after a release or when it changed: without a
 * release a head that failed still fails. Shared by priority and by
 * backfill's head. */
int sim_queue_pass_head(engine *e) {
  if (e->qlen > 0 && e->queue[e->qhead] == e->head_tried &&
      (!e->freed || head_fails_still(e, e->head_tried))) {
#ifdef FRAGTRACK_VERIFY
    /* The debug build tries the head anyway (a failed try changes
     * nothing): it must fail. */
    if (e->freed && try_start(e, e->head_tried) != 0) {
      fprintf(stderr, "queue_fifo: head %u was passed over but fits\n",
              e->head_tried);
      abort();
    }
#endif
    return 0;
  }
  while (e->qlen > 0) {
    uint32_t j = e->queue[e->qhead];
    int r = try_start(e, j);
    if (r < 0)
      return -1;
    if (r == 0) {
      e->head_tried = j;
      e->head_parts = 0;
      e->head_mark = sim_rlog_now(engine_rlog(e)); /* head_fails_still */
      break;
    }
    e->qhead++;
    e->qlen--;
  }
  return 0;
}

const sim_queue_ops sim_queue_fifo = {
    .name = "fifo",
    .kind = SIM_QUEUE_FIFO,
    .flags = 0,
    .insert_pos = NULL,
    .pass = sim_queue_pass_head,
};
