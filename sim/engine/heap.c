#include "heap.h"

#include <stdlib.h>
#include <string.h>

/* Entry k (0-based) lives at a[k + HEAP_BASE]; its children are entries
 * 4k+1 .. 4k+4, at a[4(k+1) + 3 ..], i.e. array slots 4m .. 4m+3 for
 * m = k + 1: one aligned 64-byte line. */
#define D 4
#define AT(h, k) ((h)->a[(k) + HEAP_BASE])

static inline int ev_less(const sim_event *x, const sim_event *y) {
  return x->time < y->time || (x->time == y->time && x->job < y->job);
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

int heap_pop(event_heap *h, sim_event *out) {
  if (h->n == 0)
    return -1;
  *out = AT(h, 0);
  sim_event last = AT(h, --h->n);
  size_t n = h->n, i = 0;
  if (n == 0)
    return 0;
  for (;;) {
    size_t first = D * i + 1;
    if (first >= n)
      break;
    const sim_event *c = &AT(h, first);
    size_t best = 0;
    if (first + D <= n) { /* all four children: the common case */
      if (ev_less(&c[1], &c[best]))
        best = 1;
      if (ev_less(&c[2], &c[best]))
        best = 2;
      if (ev_less(&c[3], &c[best]))
        best = 3;
    } else {
      for (size_t k = 1; first + k < n; k++)
        if (ev_less(&c[k], &c[best]))
          best = k;
    }
    if (!ev_less(&c[best], &last))
      break;
    AT(h, i) = c[best];
    i = first + best;
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
