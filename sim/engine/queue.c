/*
 * The waiting queue (an array of slots with a moving head) and the list of
 * disciplines (queue.h).
 */
#include "engine_internal.h"

#include <string.h>

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

/* Makes room for one more queue entry at the end: moves the live entries
 * to the front when the head has advanced, else grows. 0 or -1. */
static int queue_room(engine *e) {
  if (e->qhead + e->qlen < e->qcap)
    return 0;
  if (e->qhead > 0 && e->qhead >= e->qlen / 2) {
    memmove(e->queue, e->queue + e->qhead, e->qlen * sizeof *e->queue);
    e->qhead = 0;
    return 0;
  }
  return grow_array((void **)&e->queue, &e->qcap, e->qhead + e->qlen + 1,
                    sizeof *e->queue);
}

/* Inserts sl at offset pos from the head. */
static int queue_insert(engine *e, uint32_t sl, size_t pos) {
  if (queue_room(e))
    return -1;
  if (pos < e->qlen)
    memmove(&e->queue[e->qhead + pos + 1], &e->queue[e->qhead + pos],
            (e->qlen - pos) * sizeof *e->queue);
  e->queue[e->qhead + pos] = sl;
  e->qlen++;
  hook_queued(e, &e->slots[sl], 1);
  return 0;
}

int queue_add(engine *e, uint32_t sl) {
  size_t pos =
      e->q->insert_pos ? e->q->insert_pos(e, &e->slots[sl]) : e->qlen;
  return queue_insert(e, sl, pos);
}

int queue_add_behind_head(engine *e, uint32_t sl) {
  return queue_insert(e, sl, e->qlen > 0 ? 1 : 0);
}
