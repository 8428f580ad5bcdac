/*
 * fifo: jobs start in arrival order, and a head that does not fit blocks
 * every job behind it (head-of-line blocking).
 */
#include "engine_internal.h"

/* The head is only retried after a release or when it changed: without a
 * release a head that failed still fails. Shared by priority and by
 * backfill's head. */
int sim_queue_pass_head(engine *e) {
  if (!e->freed && e->qlen > 0 && e->queue[e->qhead] == e->head_tried)
    return 0;
  while (e->qlen > 0) {
    uint32_t j = e->queue[e->qhead];
    int r = try_start(e, j);
    if (r < 0)
      return -1;
    if (r == 0) {
      e->head_tried = j;
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
