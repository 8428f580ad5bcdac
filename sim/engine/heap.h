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
 * ~7 (~390). The usual push (into a bucket >= 1 with room) and pop (bucket
 * 0 empty, the smallest event's bucket left small) are inline, the rest
 * is in heap.c (heap_push_slow, heap_pop_slow): ~60 instructions less
 * per job on the first-fit replays.
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
/* heap_push's every case (below: what its inline part leaves). */
int heap_push_slow(event_heap *h, int64_t time, uint32_t job, uint32_t tag);

/* A time as an unsigned key of the same order. */
static inline uint64_t heap_key(int64_t t) {
  return (uint64_t)t ^ (UINT64_C(1) << 63);
}

/* (time, job) order; job numbers break ties. */
static inline int heap_less(const sim_event *x, const sim_event *y) {
  return x->time < y->time || (x->time == y->time && x->job < y->job);
}

/* The bucket of key k > last (see above). */
static inline unsigned heap_bucket_above(uint64_t k, uint64_t last) {
  unsigned lvl = (63u - (unsigned)__builtin_clzll(k ^ last)) / HEAP_DIGIT_BITS;
  return 1u + (lvl << HEAP_DIGIT_BITS) +
         (unsigned)(k >> (lvl * HEAP_DIGIT_BITS) & (HEAP_DIGITS - 1u));
}

/* Bucket bi >= 1 became non-empty. */
static inline void heap_mark(event_heap *h, unsigned bi) {
  unsigned w = (bi - 1) / 64;
  h->mask[w] |= UINT64_C(1) << ((bi - 1) % 64);
  h->summary |= UINT64_C(1) << w;
}

/* Puts e into bucket bi >= 1, which has room, keeping its minimum: the
 * stored event. */
static inline sim_event *heap_bucket_put(event_heap *h, unsigned bi,
                                         sim_event e) {
  heap_bucket *b = &h->b[bi];
  uint32_t i = b->n;
  sim_event *d = &b->a[i];
  *d = e;
  b->n = i + 1;
  if (i == 0) {
    b->min = 0;
    heap_mark(h, bi);
  } else if (heap_less(d, &b->a[b->min])) {
    b->min = i;
  }
  return d;
}

/* Pushes an event. 0, or -1 when out of memory. Inline for the usual
 * case, once per started job: a time after `last` into a bucket >= 1
 * with room (~25 instructions where the call took ~80); a push at or
 * before `last`, or into a full bucket, takes heap_push_slow. */
static inline int heap_push(event_heap *h, int64_t time, uint32_t job,
                            uint32_t tag) {
  uint64_t k = heap_key(time);
  if (__builtin_expect(k <= h->last, 0))
    return heap_push_slow(h, time, job, tag);
  unsigned bi = heap_bucket_above(k, h->last);
  if (__builtin_expect(h->b[bi].n == h->b[bi].cap, 0))
    return heap_push_slow(h, time, job, tag);
  const sim_event *e = heap_bucket_put(h, bi, (sim_event){time, job, tag});
  h->n++;
  /* The array did not move: the top changes only to the new event. */
  if (!h->top || heap_less(e, h->top))
    h->top = e;
  return 0;
}
/* The smallest event, or NULL if empty. */
static inline const sim_event *heap_top(const event_heap *h) {
  return h->top;
}
/* heap_pop's every case (below: what its inline part leaves). */
int heap_pop_slow(event_heap *h, sim_event *out);

/* Buckets with fewer events than this after a pop are not moved down: the
 * next smallest is found by a scan instead. */
#ifndef HEAP_SMALL
#define HEAP_SMALL 16
#endif

/* The lowest non-empty bucket >= 1 (some bucket not empty). */
static inline unsigned heap_lowest(const event_heap *h) {
  unsigned w = (unsigned)__builtin_ctzll(h->summary);
  return 1u + 64u * w + (unsigned)__builtin_ctzll(h->mask[w]);
}

/* Bucket bi >= 1 became empty. */
static inline void heap_unmark(event_heap *h, unsigned bi) {
  unsigned w = (bi - 1) / 64;
  h->mask[w] &= ~(UINT64_C(1) << ((bi - 1) % 64));
  if (!h->mask[w])
    h->summary &= ~(UINT64_C(1) << w);
}

/* Removes the smallest event into *out. 0; -1 if empty; -2 when out of
 * memory moving events down (the run fails: the heap then only holds part
 * of its events and is only good for heap_free). Inline for the usual
 * case, once per event: bucket 0 empty and the smallest event's bucket
 * left small (it stays: its minimum is found again by a scan; ~30
 * instructions less than the call); the rest takes heap_pop_slow. */
static inline int heap_pop(event_heap *h, sim_event *out) {
  if (h->b[0].n == 0 && h->summary != 0) {
    unsigned bi = heap_lowest(h);
    heap_bucket *k = &h->b[bi];
    uint32_t n = k->n - 1;
    if (n < HEAP_SMALL) {
      *out = k->a[k->min];
      k->a[k->min] = k->a[n];
      k->n = n;
      h->n--;
      if (n == 0) {
        heap_unmark(h, bi);
        if (h->summary != 0) {
          const heap_bucket *l = &h->b[heap_lowest(h)];
          h->top = &l->a[l->min];
        } else {
          h->top = NULL;
        }
      } else {
        uint32_t m = 0;
        for (uint32_t j = 1; j < n; j++)
          if (heap_less(&k->a[j], &k->a[m]))
            m = j;
        k->min = m;
        h->top = &k->a[m];
      }
      return 0;
    }
  }
  return heap_pop_slow(h, out);
}
/* 1 if every invariant holds (buckets, positions of minima, counts), 0
 * otherwise (tests). */
int heap_verify(const event_heap *h);

#endif
