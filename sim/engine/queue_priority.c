/*
 * priority: QoS classes, FIFO within a class, and the head blocks (as
 * fifo). An arrival goes behind every queued job of its class or higher.
 */
#include "engine_internal.h"

/* Priority class of a job: Guaranteed 3, LS 2, Burstable 1, BE and unknown
 * 0. Higher runs first. */
static int job_priority(const job_record *jr) {
  switch (jr->qos) {
  case TRACE_QOS_GUARANTEED:
    return 3;
  case TRACE_QOS_LS:
    return 2;
  case TRACE_QOS_BURSTABLE:
    return 1;
  default:
    return 0;
  }
}

/* Scans back from the tail past the jobs of a lower class: O(queue) per
 * arrival in the worst case, O(1) when classes arrive in order. */
static size_t priority_insert_pos(const engine *e, const slot *s) {
  int p = job_priority(&s->rec);
  size_t pos = e->qlen;
  while (pos > 0 &&
         job_priority(&e->slots[e->queue[e->qhead + pos - 1]].rec) < p)
    pos--;
  return pos;
}

const sim_queue_ops sim_queue_priority = {
    .name = "priority",
    .kind = SIM_QUEUE_PRIORITY,
    .flags = 0,
    .insert_pos = priority_insert_pos,
    .pass = sim_queue_pass_head,
};
