/*
 * The event queue's radix heap (sim/engine/heap.h) in the cases the
 * replay tests rarely reach: every pop checked against a reference (a
 * sorted multiset) while pushes go below the last pop (the re-bucketing
 * path), land at the last pop's time (bucket 0, ties by job), fill one
 * bucket with thousands of equal times, and span the whole int64 range
 * (negative times, the largest ones); small buckets that are scanned
 * instead of moved, and heap_verify after every fourth operation.
 */
#include "heap.h"
#include "testutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next_u64(void) { /* xorshift64 */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* The reference: the events pushed and not popped, unsorted (small). */
typedef struct ref {
  sim_event *a;
  size_t n, cap;
} ref;

static void ref_push(ref *r, sim_event e) {
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 256;
    r->a = realloc(r->a, r->cap * sizeof *r->a);
    ck_assert_ptr_nonnull(r->a);
  }
  r->a[r->n++] = e;
}

static int less(const sim_event *x, const sim_event *y) {
  return x->time < y->time || (x->time == y->time && x->job < y->job);
}

/* Removes the smallest event of r into *out. */
static void ref_pop(ref *r, sim_event *out) {
  size_t m = 0;
  for (size_t i = 1; i < r->n; i++)
    if (less(&r->a[i], &r->a[m]))
      m = i;
  *out = r->a[m];
  r->a[m] = r->a[--r->n];
}

/* heap_verify (O(buckets + n)) after every fourth operation. */
static unsigned ops;
static int verify_now(void) { return ops++ % 4 == 0; }

/* Pops one event from both and compares them, and the top before. */
static void pop_both(event_heap *h, ref *r) {
  const sim_event *top = heap_top(h);
  sim_event got, want;
  ck_assert_ptr_nonnull(top);
  sim_event t = *top;
  ck_assert_int_eq(heap_pop(h, &got), 0);
  ref_pop(r, &want);
  ck_assert_int_eq(got.time, want.time);
  ck_assert_uint_eq(got.job, want.job);
  ck_assert_uint_eq(got.tag, want.tag);
  ck_assert(memcmp(&t, &got, sizeof t) == 0);
  ck_assert(!verify_now() || heap_verify(h));
  ck_assert_uint_eq(h->n, r->n);
}

static void push_both(event_heap *h, ref *r, int64_t t, uint32_t job) {
  sim_event e = {t, job, (uint32_t)(job ^ 0x5a5a)};
  ck_assert_int_eq(heap_push(h, t, job, e.tag), 0);
  ref_push(r, e);
  ck_assert(!verify_now() || heap_verify(h));
}

START_TEST(empty_and_single) {
  event_heap h;
  heap_init(&h);
  sim_event ev;
  ck_assert_ptr_null(heap_top(&h));
  ck_assert_int_eq(heap_pop(&h, &ev), -1);
  ck_assert_int_eq(heap_push(&h, 5, 7, 9), 0);
  ck_assert_int_eq(heap_top(&h)->job, 7);
  ck_assert_int_eq(heap_pop(&h, &ev), 0);
  ck_assert(ev.time == 5 && ev.job == 7 && ev.tag == 9);
  ck_assert_ptr_null(heap_top(&h));
  ck_assert_int_eq(heap_pop(&h, &ev), -1);
  ck_assert(heap_verify(&h));
  heap_free(&h);
  heap_free(&h); /* freed twice: a no-op */
}
END_TEST

/* A replay's pattern with everything unusual mixed in. */
START_TEST(mixed_against_reference) {
  event_heap h;
  heap_init(&h);
  ref r = {0};
  int64_t now = 0;
  uint32_t job = 0;
  for (int step = 0; step < 10000; step++) {
    uint64_t x = next_u64();
    int pushes = (int)(x % 3);
    for (int k = 0; k < pushes; k++) {
      uint64_t y = next_u64();
      int64_t t;
      switch (y % 8) {
      case 0: /* at the last pop's time: bucket 0 */
        t = now;
        break;
      case 1: /* before it: re-bucketing */
        t = now - (int64_t)(y >> 40);
        break;
      case 2: /* a short job */
        t = now + (int64_t)(y >> 56);
        break;
      default: /* hours, days */
        t = now + (int64_t)(y >> 28);
        break;
      }
      push_both(&h, &r, t, (job++ * 2654435761u) % 1000003u);
    }
    if (r.n > 0 && x % 5 != 0) {
      sim_event ev = *heap_top(&h);
      pop_both(&h, &r);
      now = ev.time;
    }
  }
  while (r.n > 0)
    pop_both(&h, &r);
  ck_assert_ptr_null(heap_top(&h));
  heap_free(&h);
  free(r.a);
}
END_TEST

/* Thousands of completions at one microsecond: out by job, whether
 * they were pushed before (moved down together into bucket 0) or at the
 * last pop's time (bucket 0 directly). */
START_TEST(many_ties) {
  event_heap h;
  heap_init(&h);
  ref r = {0};
  for (uint32_t i = 0; i < 5000; i++)
    push_both(&h, &r, 1000000, (i * 2654435761u) % 5000u);
  push_both(&h, &r, 999999, 77777); /* pops first */
  for (int i = 0; i < 2000; i++)
    pop_both(&h, &r);
  for (uint32_t i = 0; i < 3000; i++) /* at the last pop's time */
    push_both(&h, &r, 1000000, 5000 + (i * 40503u) % 3000u);
  while (r.n > 0)
    pop_both(&h, &r);
  heap_free(&h);
  free(r.a);
}
END_TEST

/* The whole time range, negative times included (the keys flip the sign
 * bit so that they order as unsigned). */
START_TEST(extreme_times) {
  event_heap h;
  heap_init(&h);
  ref r = {0};
  static const int64_t t[] = {INT64_MAX, 0,  -1, INT64_MIN, 1,
                              INT64_MAX, -2, 42, INT64_MIN + 1};
  for (uint32_t i = 0; i < sizeof t / sizeof t[0]; i++)
    push_both(&h, &r, t[i], i);
  for (int i = 0; i < 4; i++)
    pop_both(&h, &r);
  push_both(&h, &r, INT64_MIN, 100); /* far below the last pop */
  push_both(&h, &r, INT64_MAX, 101);
  while (r.n > 0)
    pop_both(&h, &r);
  heap_free(&h);
  free(r.a);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("heap");
  TCase *tc = tcase_create("heap");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, empty_and_single);
  tcase_add_test(tc, mixed_against_reference);
  tcase_add_test(tc, many_ties);
  tcase_add_test(tc, extreme_times);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(suite()); }
