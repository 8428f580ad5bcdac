#include "heap.h"

#include <stdlib.h>
#include <string.h>

/* The bucket of key k while the last popped key is last: 0 when equal,
 * else 1 + HEAP_DIGITS x (the highest digit in which they differ) + (k's
 * digit there). */
static inline unsigned bucket_of(uint64_t k, uint64_t last) {
  return k == last ? 0 : heap_bucket_above(k, last);
}

static inline int any(const event_heap *h) { return h->summary != 0; }

/* Arrays of more events than this are freed when their bucket empties. */
#ifndef HEAP_KEEP
#define HEAP_KEEP 256
#endif

void heap_init(event_heap *h) { memset(h, 0, sizeof *h); }

void heap_free(event_heap *h) {
  for (int i = 0; i < HEAP_BUCKETS; i++)
    free(h->b[i].a);
  heap_init(h);
}

/* Room for `need` events in all in bucket k. 0, or -1 when out of
 * memory. */
static int reserve_to(heap_bucket *k, size_t need) {
  if (need <= k->cap)
    return 0;
  if (need > UINT32_MAX)
    return -1;
  size_t nc = k->cap ? (size_t)k->cap * 2 : 8;
  while (nc < need)
    nc *= 2;
  if (nc > UINT32_MAX)
    nc = UINT32_MAX;
  sim_event *na = realloc(k->a, nc * sizeof *na);
  if (!na)
    return -1;
  k->a = na;
  k->cap = (uint32_t)nc;
  return 0;
}

/* Room for `more` events in bucket k beyond its own. */
static int reserve(heap_bucket *k, size_t more) {
  return reserve_to(k, (size_t)k->n + more);
}

/* Bucket 0 (all at time `last`): a binary min-heap on the job number. */
static void b0_push(heap_bucket *k, sim_event e) {
  uint32_t i = k->n++;
  while (i > 0) {
    uint32_t parent = (i - 1) / 2;
    if (k->a[parent].job <= e.job)
      break;
    k->a[i] = k->a[parent];
    i = parent;
  }
  k->a[i] = e;
}

static void b0_pop(heap_bucket *k) {
  sim_event e = k->a[--k->n];
  uint32_t n = k->n, i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && k->a[c + 1].job < k->a[c].job)
      c++;
    if (e.job <= k->a[c].job)
      break;
    k->a[i] = k->a[c];
    i = c;
  }
  if (n > 0)
    k->a[i] = e;
}

/* Appends e to bucket bi >= 1, keeping its minimum. 0, or -1 when out of
 * memory. */
static inline int append(event_heap *h, unsigned bi, sim_event e) {
  heap_bucket *k = &h->b[bi];
  if (__builtin_expect(k->n == k->cap, 0) && reserve(k, 1))
    return -1;
  heap_bucket_put(h, bi, e);
  return 0;
}

/* The smallest event (heap_top), after every change. */
static inline void set_top(event_heap *h) {
  if (h->b[0].n) {
    h->top = &h->b[0].a[0];
  } else if (any(h)) {
    const heap_bucket *k = &h->b[heap_lowest(h)];
    h->top = &k->a[k->min];
  } else {
    h->top = NULL;
  }
}

/* A push before `last`: every event is re-bucketed from the new time. 0,
 * or -1 when out of memory (the heap is then unchanged). */
static int rebase(event_heap *h, int64_t time) {
  sim_event *all = malloc((h->n ? h->n : 1) * sizeof *all);
  if (!all)
    return -1;
  size_t m = 0;
  for (int i = 0; i < HEAP_BUCKETS; i++)
    if (h->b[i].n) { /* a bucket never used has no array */
      memcpy(all + m, h->b[i].a, (size_t)h->b[i].n * sizeof *all);
      m += h->b[i].n;
    }
  uint64_t last = heap_key(time);
  /* Room first, so that nothing can fail once events move. */
  uint32_t cnt[HEAP_BUCKETS] = {0};
  for (size_t j = 0; j < m; j++)
    cnt[bucket_of(heap_key(all[j].time), last)]++;
  for (int i = 0; i < HEAP_BUCKETS; i++)
    if (reserve_to(&h->b[i], cnt[i])) {
      free(all);
      return -1;
    }
  for (int i = 0; i < HEAP_BUCKETS; i++)
    h->b[i].n = 0;
  memset(h->mask, 0, sizeof h->mask);
  h->summary = 0;
  h->last = last;
  for (size_t j = 0; j < m; j++) {
    unsigned bi = bucket_of(heap_key(all[j].time), last);
    if (bi == 0)
      b0_push(&h->b[0], all[j]);
    else
      (void)append(h, bi, all[j]); /* cannot fail: room reserved */
  }
  free(all);
  set_top(h);
  return 0;
}

int heap_push_slow(event_heap *h, int64_t time, uint32_t job, uint32_t tag) {
  uint64_t k = heap_key(time);
  if (k < h->last && rebase(h, time))
    return -1;
  unsigned bi = bucket_of(k, h->last);
  sim_event e = {time, job, tag};
  heap_bucket *b = &h->b[bi];
  const sim_event *a = b->a;
  if (bi == 0) {
    if (reserve(b, 1))
      return -1;
    b0_push(b, e);
  } else if (append(h, bi, e)) { /* grows its bucket itself */
    return -1;
  }
  h->n++;
  /* The top moves only to the new event, or with the array it is in. */
  if (!h->top || b->a != a || heap_less(&e, h->top))
    set_top(h);
  return 0;
}

/* What heap_pop leaves: bucket 0 not empty, an empty heap, or a bucket of
 * at least HEAP_SMALL events left (moved down). */
int heap_pop_slow(event_heap *h, sim_event *out) {
  if (h->b[0].n) {
    *out = h->b[0].a[0];
    b0_pop(&h->b[0]);
  } else if (any(h)) {
    /* The smallest event of the lowest bucket (not a small one: heap_pop
     * takes those); its time becomes last, and the bucket's other events
     * move down (to lower digits: they share the bucket's digit and every
     * digit above it with the new last). */
    unsigned bi = heap_lowest(h);
    heap_bucket *k = &h->b[bi];
    uint32_t n = k->n - 1;
    *out = k->a[k->min];
    k->a[k->min] = k->a[n];
    uint64_t last = heap_key(out->time);
    h->last = last;
    k->n = 0;
    heap_unmark(h, bi);
    for (uint32_t j = 0; j < n; j++) {
      sim_event e = k->a[j];
      unsigned to = bucket_of(heap_key(e.time), last);
      if (to != 0) {
        if (append(h, to, e))
          return -2;
      } else {
        if (reserve(&h->b[0], 1))
          return -2;
        b0_push(&h->b[0], e);
      }
    }
    /* A large array left empty is given back: buckets take turns at
     * being large, and kept at their peaks they held several times the
     * events at once. */
    if (k->cap > HEAP_KEEP) {
      free(k->a);
      k->a = NULL;
      k->cap = 0;
    }
  } else {
    return -1;
  }
  h->n--;
  set_top(h);
  return 0;
}

int heap_verify(const event_heap *h) {
  size_t total = 0;
  for (unsigned i = 0; i < HEAP_BUCKETS; i++) {
    const heap_bucket *k = &h->b[i];
    total += k->n;
    if (i > 0 && !!(h->mask[(i - 1) / 64] >> ((i - 1) % 64) & 1) != (k->n > 0))
      return 0;
    if (i > 0 && (i - 1) % 64 == 0 &&
        !!(h->summary >> ((i - 1) / 64) & 1) != (h->mask[(i - 1) / 64] != 0))
      return 0;
    for (uint32_t j = 0; j < k->n; j++) {
      if (bucket_of(heap_key(k->a[j].time), h->last) != i)
        return 0;
      if (i == 0 && j > 0 && k->a[j].job < k->a[(j - 1) / 2].job)
        return 0;
      if (i > 0 && heap_less(&k->a[j], &k->a[k->min]))
        return 0;
    }
    if (i > 0 && k->n > 0 && k->min >= k->n)
      return 0;
  }
  const sim_event *want = NULL;
  if (h->b[0].n)
    want = &h->b[0].a[0];
  else if (any(h))
    want = &h->b[heap_lowest(h)].a[h->b[heap_lowest(h)].min];
  return total == h->n && h->top == want;
}
