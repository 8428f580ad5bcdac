#include "heap.h"

#include <stdlib.h>
#include <string.h>

/* Entry k (0-based) lives at a[k + HEAP_BASE]; its children are entries
 * 4k+1 .. 4k+4, at a[4(k+1) + 3 ..], i.e. array slots 4m .. 4m+3 for
 * m = k + 1: one aligned 64-byte line. */
#define D 4
#define AT(h, k) ((h)->a[(k) + HEAP_BASE])

/* Without branches (bitwise, not short-circuit): which of four children
 * is the smallest is a coin toss the branch predictor lost once per level
 * of every pop. */
static inline int ev_less(const sim_event *x, const sim_event *y) {
  return (x->time < y->time) | ((x->time == y->time) & (x->job < y->job));
}

/* The smaller of c[a] and c[b] (a on equal keys), as an index, by a mask;
 * equal times (rare: microseconds) take a predictable branch to the job
 * compare. */
static inline size_t ev_min(const sim_event *c, size_t a, size_t b) {
  int64_t ta = c[a].time, tb = c[b].time;
  size_t lt = tb < ta;
  if (__builtin_expect(ta == tb, 0))
    lt = c[b].job < c[a].job;
  return a ^ ((a ^ b) & ((size_t)0 - lt));
}

void heap_init(event_heap *h) {
  h->a = NULL;
  h->raw = NULL;
  h->n = h->cap = 0;
}

void heap_free(event_heap *h) {
  free(h->raw);
  heap_init(h);
}

static int grow(event_heap *h) {
  size_t nc = h->cap ? h->cap * 2 : 1024;
  /* Plain malloc (the allocator tests hook it), aligned by hand: 64 bytes
   * of slack for the alignment, HEAP_BASE entries in front of the root. */
  void *raw = malloc((nc + HEAP_BASE) * sizeof(sim_event) + 64);
  if (!raw)
    return -1;
  sim_event *na = (sim_event *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
  if (h->n)
    memcpy(na + HEAP_BASE, h->a + HEAP_BASE, h->n * sizeof *na);
  free(h->raw);
  h->raw = raw;
  h->a = na;
  h->cap = nc;
  return 0;
}

int heap_push(event_heap *h, int64_t time, uint32_t job, uint32_t tag) {
  if (h->n == h->cap && grow(h))
    return -1;
  sim_event e = {time, job, tag};
  size_t i = h->n++;
  /* Sift up, moving parents down instead of swapping. */
  while (i > 0) {
    size_t parent = (i - 1) / D;
    if (!ev_less(&e, &AT(h, parent)))
      break;
    AT(h, i) = AT(h, parent);
    i = parent;
  }
  AT(h, i) = e;
  return 0;
}

/* Bottom-up (Floyd): the hole left by the root moves down to a leaf along
 * the smallest children, with no comparison against the last entry, which
 * then climbs from there (it came from the bottom: usually zero or one
 * step). A pop is ~log_4 n tournaments of four children without branches,
 * instead of the same plus a compare against the last entry per level. */
int heap_pop(event_heap *h, sim_event *out) {
  if (h->n == 0)
    return -1;
  *out = AT(h, 0);
  size_t n = --h->n, i = 0;
  if (n == 0)
    return 0;
  sim_event last = AT(h, n);
  for (;;) {
    size_t first = D * i + 1;
    if (first + D > n)
      break;
    const sim_event *c = &AT(h, first); /* all four children: one line */
    size_t best = ev_min(c, ev_min(c, 0, 1), ev_min(c, 2, 3));
    AT(h, i) = c[best];
    i = first + best;
  }
  size_t first = D * i + 1;
  if (first < n) { /* one to three children, at the end of the array */
    const sim_event *c = &AT(h, first);
    size_t best = 0;
    for (size_t k = 1; first + k < n; k++)
      best = ev_min(c, best, k);
    AT(h, i) = c[best];
    i = first + best; /* a leaf: its children would start past n */
  }
  while (i > 0) {
    size_t parent = (i - 1) / D;
    if (!ev_less(&last, &AT(h, parent)))
      break;
    AT(h, i) = AT(h, parent);
    i = parent;
  }
  AT(h, i) = last;
  return 0;
}

int heap_verify(const event_heap *h) {
  for (size_t i = 1; i < h->n; i++)
    if (ev_less(&AT(h, i), &AT(h, (i - 1) / D)))
      return 0;
  return 1;
}
