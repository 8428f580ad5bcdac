/*
 * Event queue: a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan 1990) on
 * 8-bit digits, keyed by (time, job): events at equal times come out in
 * ascending job order, so the order never depends on when an event was
 * pushed.
 *
 * Times only move forward in a replay: every push is at or after the time
 * of the last pop (`last`). An event lives in bucket 0 when its time is
 * `last`, else in the bucket of the highest 8-bit digit in which its time
 * differs from `last` and its own digit there; buckets are numbered so
 * that every time in a bucket is below every time in a higher one. A pop
 * takes the smallest event of the lowest non-empty bucket (each bucket
 * keeps the position of its smallest event up to date as events are
 * appended), makes its time `last` and moves the bucket's other events
 * down to the buckets they now belong to, each at a lower digit. An event
 * thus moves a few times on its way down (each move a sequential append)
 * instead of climbing and sinking through log n levels of a heap. A
 * bucket left with fewer than HEAP_SMALL events is not moved: `last`
 * stays and the next smallest is found by a scan. Bucket 0 holds the
 * events at time `last`, by job: a binary heap on the job number
 * (usually one event).
 *
 * On a replay of 50,000 jobs on 10,000 GPUs (bench/README.md) a pop and a
 * push take ~220 instructions together, against ~380 in the 4-ary heap
 * this replaced (~220 against ~430 on 100,000 GPUs); 8-bit digits move
 * an event ~3 times, 4-bit ones ~5.5 (~260 instructions), single bits
 * ~7 (~390).
 *
 * A push before `last` (no caller does that: completions, wake-ups and
 * re-timings are at or after now) is still correct: every event is
 * re-bucketed from that time (O(n)).
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

/* Buckets: 0 (time == last) and 1 + 256 l + d for the highest 8-bit
 * digit l (0 .. 7) in which a time (as an order-preserving unsigned key)
 * differs from last and its digit d there. */
#ifndef HEAP_DIGIT_BITS
#define HEAP_DIGIT_BITS 8
#endif
#define HEAP_DIGITS (1 << HEAP_DIGIT_BITS)
#define HEAP_BUCKETS (1 + (64 / HEAP_DIGIT_BITS) * HEAP_DIGITS)

typedef struct heap_bucket {
  sim_event *a;
  uint32_t n, cap;
  uint32_t min; /* position of the smallest event (buckets >= 1, n > 0) */
} heap_bucket;

typedef struct event_heap {
  heap_bucket b[HEAP_BUCKETS];
  uint64_t mask[(HEAP_BUCKETS - 1) / 64]; /* bit b - 1: bucket b not empty */
  uint64_t summary; /* bit w: mask[w] is not 0 */
  uint64_t last;  /* key of the last popped time (time ^ 2^63) */
  size_t n;       /* events */
  const sim_event *top; /* the smallest event, NULL when empty */
} event_heap;

void heap_init(event_heap *h);
void heap_free(event_heap *h);
/* Pushes an event. 0, or -1 when out of memory. */
int heap_push(event_heap *h, int64_t time, uint32_t job, uint32_t tag);
/* The smallest event, or NULL if empty. */
static inline const sim_event *heap_top(const event_heap *h) {
  return h->top;
}
/* Removes the smallest event into *out. 0; -1 if empty; -2 when out of
 * memory moving events down (the run fails: the heap then only holds part
 * of its events and is only good for heap_free). */
int heap_pop(event_heap *h, sim_event *out);
/* 1 if every invariant holds (buckets, positions of minima, counts), 0
 * otherwise (tests). */
int heap_verify(const event_heap *h);

#endif
