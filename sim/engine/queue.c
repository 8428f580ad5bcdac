/*
 * The waiting queue (an array of slots with a moving head) and the list of
 * disciplines (queue.h).
 */
#include "engine_internal.h"

#include <string.h>

sim_rlog *engine_rlog(engine *e) {
  if (e->rlog_state == 0) {
    e->rlog_state = -1;
    if (!(e->hooks &
          (SIM_HOOK_REQUEST | SIM_HOOK_ALT_REQUEST | SIM_HOOK_BEFORE_PLACE)) &&
        policy_fit_answers(e->pol) &&
        lsched_cluster_pool_count(e->sc->c) == 0 &&
        sim_rlog_open(&e->rlog, e->sc->c) == 0)
      e->rlog_state = 1;
  }
  return e->rlog;
}

/* Every discipline once, in sim_queue_kind order. */
static const sim_queue_ops *const disciplines[] = {
    &sim_queue_fifo, &sim_queue_skip, &sim_queue_backfill,
    &sim_queue_priority};

#define NDISCIPLINES (sizeof disciplines / sizeof disciplines[0])

size_t sim_queue_count(void) { return NDISCIPLINES; }

const sim_queue_ops *sim_queue_at(size_t i) {
  return i < NDISCIPLINES ? disciplines[i] : NULL;
}

const sim_queue_ops *sim_queue_find(const char *name) {
  for (size_t i = 0; i < NDISCIPLINES; i++)
    if (strcmp(name, disciplines[i]->name) == 0)
      return disciplines[i];
  return NULL;
}

const sim_queue_ops *sim_queue_of(sim_queue_kind kind) {
  for (size_t i = 0; i < NDISCIPLINES; i++)
    if (disciplines[i]->kind == kind)
      return disciplines[i];
  return NULL;
}

int sim_queue_parse(const char *name, sim_queue_kind *out) {
  const sim_queue_ops *q = sim_queue_find(name);
  if (!q)
    return -1;
  *out = q->kind;
  return 0;
}

int queue_room(engine *e) {
  if (e->qhead > 0 && e->qhead >= e->qlen / 2) {
    memmove(e->queue, e->queue + e->qhead, e->qlen * sizeof *e->queue);
    e->qhead = 0;
    return 0;
  }
  return grow_array((void **)&e->queue, &e->qcap, e->qhead + e->qlen + 1,
                    sizeof *e->queue);
}

int queue_add_behind_head(engine *e, uint32_t sl) {
  return queue_insert(e, sl, e->qlen > 0 ? 1 : 0);
}

size_t queue_span(const engine *e) {
  return e->qx ? queue_index_span(e) : e->qlen;
}

void queue_remove(engine *e, uint32_t sl) {
  if (e->qx) {
    queue_index_remove(e, sl);
  } else {
    uint32_t *q = e->queue + e->qhead;
    size_t i = 0;
    while (i < e->qlen && q[i] != sl)
      i++;
    if (i == e->qlen)
      return;
    memmove(&q[i], &q[i + 1], (e->qlen - i - 1) * sizeof *q);
    e->qlen--;
    if (i < e->new_from)
      e->new_from--;
    hook_queued(e, &e->slots[sl], -1);
  }
  /* The head and its reservation may have changed: a full pass next. */
  e->reservation_valid = 0;
  e->freed = 1;
}
