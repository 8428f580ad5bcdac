#include "heap.h"

#include <stdlib.h>

#define D 4

static inline int ev_less(const sim_event *x, const sim_event *y) {
  return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

void heap_init(event_heap *h) {
  h->a = NULL;
  h->n = h->cap = 0;
  h->next_seq = 0;
}

void heap_free(event_heap *h) {
  free(h->a);
  heap_init(h);
}

int heap_push(event_heap *h, int64_t time, uint32_t job, uint32_t kind) {
  if (h->n == h->cap) {
    size_t nc = h->cap ? h->cap * 2 : 1024;
    sim_event *na = realloc(h->a, nc * sizeof *na);
    if (!na)
      return -1;
    h->a = na;
    h->cap = nc;
  }
  sim_event e = {time, h->next_seq++, job, kind};
  size_t i = h->n++;
  /* Sift up, moving parents down instead of swapping. */
  while (i > 0) {
    size_t parent = (i - 1) / D;
    if (!ev_less(&e, &h->a[parent]))
      break;
    h->a[i] = h->a[parent];
    i = parent;
  }
  h->a[i] = e;
  return 0;
}

int heap_pop(event_heap *h, sim_event *out) {
  if (h->n == 0)
    return -1;
  *out = h->a[0];
  sim_event last = h->a[--h->n];
  size_t n = h->n, i = 0;
  if (n == 0)
    return 0;
  for (;;) {
    size_t first = D * i + 1;
    if (first >= n)
      break;
    size_t best = first, end = first + D < n ? first + D : n;
    for (size_t c = first + 1; c < end; c++)
      if (ev_less(&h->a[c], &h->a[best]))
        best = c;
    if (!ev_less(&h->a[best], &last))
      break;
    h->a[i] = h->a[best];
    i = best;
  }
  h->a[i] = last;
  return 0;
}

int heap_verify(const event_heap *h) {
  for (size_t i = 1; i < h->n; i++)
    if (ev_less(&h->a[i], &h->a[(i - 1) / D]))
      return 0;
  return 1;
}
