/*
 * skip: every waiting job in arrival order, starting each that fits (a job
 * that does not fit blocks nobody).
 */
#include "engine_internal.h"

/* The plain pass (the reference; runs with the queue index take
 * queue_index_pass_skip, same decisions): without a release, jobs that
 * failed before still fail, so only unseen arrivals need a try. Started
 * jobs are compacted out. O(queue) per pass after a release. */
static int pass_skip(engine *e) {
  if (e->qx) /* the index is open (no call per pass to ask) */
    return queue_index_pass_skip(e);
  int on = queue_index_on(e);
  if (on)
    return on < 0 ? -1 : queue_index_pass_skip(e);
  size_t from = e->freed ? 0 : e->new_from;
  size_t w = e->qhead + from;
  for (size_t i = from; i < e->qlen; i++) {
    uint32_t j = e->queue[e->qhead + i];
    int r = try_start(e, j);
    if (r < 0)
      return -1;
    if (r == 0)
      e->queue[w++] = j;
  }
  e->qlen = w - e->qhead;
  return 0;
}

const sim_queue_ops sim_queue_skip = {
    .name = "skip",
    .kind = SIM_QUEUE_SKIP,
    .flags = 0,
    .insert_pos = NULL,
    .pass = pass_skip,
};
