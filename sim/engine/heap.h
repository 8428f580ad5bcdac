/*
 * Event queue: a 4-ary min-heap in one array (libev style), keyed by
 * (time, job): events at equal times come out in ascending job order, so
 * the order never depends on when an event was pushed. push and pop are
 * O(log_4 n).
 *
 * Layout: an event is 16 bytes and the array is 64-byte aligned with the
 * root at index 3, so the four children of any entry (4k + 4 .. 4k + 7 in
 * array terms) share one cache line: a pop touches one line per level
 * (24-byte events with (time, sequence) keys took 3x the time per pop on a
 * million-job replay).
 */
#ifndef SCHEDSIM_HEAP_H
#define SCHEDSIM_HEAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_event {
  int64_t time; /* microseconds */
  uint32_t job; /* job (slot) index: the tie-break */
  uint32_t tag; /* the engine's: event kind and generation */
} sim_event;

typedef struct event_heap {
  sim_event *a; /* a[HEAP_BASE ..  HEAP_BASE + n), inside raw */
  void *raw;    /* the malloc'd block a is aligned in */
  size_t n, cap;
} event_heap;

#define HEAP_BASE 3

void heap_init(event_heap *h);
void heap_free(event_heap *h);
/* Pushes an event. 0, or -1 when out of memory. */
int heap_push(event_heap *h, int64_t time, uint32_t job, uint32_t tag);
/* The smallest event, or NULL if empty. */
static inline const sim_event *heap_top(const event_heap *h) {
  return h->n ? &h->a[HEAP_BASE] : NULL;
}
/* Removes the smallest event into *out. 0, or -1 if empty. */
int heap_pop(event_heap *h, sim_event *out);
/* 1 if the heap property holds everywhere, 0 otherwise (tests). */
int heap_verify(const event_heap *h);

#endif
