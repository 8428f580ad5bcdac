/*
 * Event queue: a 4-ary min-heap in one array (libev style), keyed by
 * (time, insertion sequence) so that events at equal times come out in the
 * order they were pushed (libuv's start_id tie-break). push and pop are
 * O(log_4 n).
 */
#ifndef SCHEDSIM_HEAP_H
#define SCHEDSIM_HEAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_event {
  int64_t time;  /* microseconds */
  uint64_t seq;  /* insertion sequence, assigned by heap_push */
  uint32_t job;  /* job index */
  uint32_t kind; /* enum sim_event_kind */
} sim_event;

typedef struct event_heap {
  sim_event *a;
  size_t n, cap;
  uint64_t next_seq;
} event_heap;

void heap_init(event_heap *h);
void heap_free(event_heap *h);
/* Pushes an event (its seq is assigned here). 0, or -1 when out of memory. */
int heap_push(event_heap *h, int64_t time, uint32_t job, uint32_t kind);
/* The smallest event, or NULL if empty. */
static inline const sim_event *heap_top(const event_heap *h) {
  return h->n ? &h->a[0] : NULL;
}
/* Removes the smallest event into *out. 0, or -1 if empty. */
int heap_pop(event_heap *h, sim_event *out);
/* 1 if the heap property holds everywhere, 0 otherwise (tests). */
int heap_verify(const event_heap *h);

#endif
