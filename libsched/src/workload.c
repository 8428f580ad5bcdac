/*
 * Target workloads for fragmentation-aware scheduling: a set of task types
 * (request shapes with integer weights), merged by shape through an
 * open-addressing index, and the "most popular types covering P%" cut that
 * the FGD paper uses for its typical pods. Also lsched_policy_set_workload().
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Total weight bound: keeps F(n) x W and the cluster sums inside int64 for
 * clusters up to about four million GPUs (64000 x 2^31 per node). */
#define WEIGHT_MAX (UINT64_C(1) << 31)

struct lsched_workload {
  lsched_allocator a;
  lsched_task_type *t;
  size_t n, cap;
  size_t *slot; /* index + 1 of the type in each hash slot; 0 = empty */
  size_t nslot; /* power of two, > 2 n */
  uint64_t total;
};

int lsched_workload_create(lsched_workload **out,
                           const lsched_allocator *allocator) {
  if (!out)
    return LSCHED_EINVAL;
  lsched_allocator a;
  lsched__default_allocator(&a, allocator);
  lsched_workload *w = lsched__calloc(&a, 1, sizeof *w);
  *out = w;
  if (!w)
    return LSCHED_ENOMEM;
  w->a = a;
  return LSCHED_OK;
}

void lsched_workload_destroy(lsched_workload *w) {
  if (!w)
    return;
  lsched_allocator a = w->a;
  lsched__free(&a, w->t);
  lsched__free(&a, w->slot);
  lsched__free(&a, w);
}

static int same_shape(const lsched_task_type *x, const lsched_task_type *y) {
  return x->cpu_milli == y->cpu_milli && x->gpu_count == y->gpu_count &&
         x->gpu_milli == y->gpu_milli && x->model_mask == y->model_mask;
}

static size_t shape_hash(const lsched_task_type *t) {
  uint64_t h = (uint64_t)t->cpu_milli * UINT64_C(0x9E3779B97F4A7C15);
  h ^= ((uint64_t)(uint32_t)t->gpu_count << 32 | (uint32_t)t->gpu_milli) *
       UINT64_C(0xC2B2AE3D27D4EB4F);
  h ^= t->model_mask * UINT64_C(0x165667B19E3779F9);
  h ^= h >> 31;
  return (size_t)h;
}

/* Rebuilds the index for the current types with room for `need` of them. */
static int reindex(lsched_workload *w, size_t need) {
  size_t ns = 16;
  while (ns <= 2 * need)
    ns *= 2;
  size_t *s = lsched__calloc(&w->a, ns, sizeof *s);
  if (!s)
    return LSCHED_ENOMEM;
  for (size_t i = 0; i < w->n; i++) {
    size_t j = shape_hash(&w->t[i]) & (ns - 1);
    while (s[j])
      j = (j + 1) & (ns - 1);
    s[j] = i + 1;
  }
  lsched__free(&w->a, w->slot);
  w->slot = s;
  w->nslot = ns;
  return LSCHED_OK;
}

static int type_valid(const lsched_task_type *t) {
  /* gpu_count may exceed what one node holds (a type that runs nowhere,
   * e.g. a gang job's total): f is then all idle milli of every node. So
   * may cpu_milli: a trace job asking for more CPU than any node has
   * (above LSCHED_MAX_CPU_MILLI) used to make the simulator's workload
   * fail as "out of memory" (tests/cli_hostile.sh); cpu_milli is only
   * ever compared, never computed with. */
  if (!t || t->cpu_milli < 0 || t->gpu_count < 0 || t->weight == 0)
    return 0;
  if (t->gpu_count == 0)
    return t->gpu_milli == 0;
  return t->gpu_milli >= 1 && t->gpu_milli <= LSCHED_GPU_MILLI;
}

int lsched_workload_add(lsched_workload *w, const lsched_task_type *t) {
  if (!w || !type_valid(t))
    return LSCHED_EINVAL;
  if (t->weight > WEIGHT_MAX || w->total + t->weight > WEIGHT_MAX)
    return LSCHED_ERANGE;
  if (w->nslot <= 2 * (w->n + 1)) {
    int rc = reindex(w, w->n + 1);
    if (rc)
      return rc;
  }
  size_t j = shape_hash(t) & (w->nslot - 1);
  for (; w->slot[j]; j = (j + 1) & (w->nslot - 1)) {
    lsched_task_type *e = &w->t[w->slot[j] - 1];
    if (same_shape(e, t)) {
      e->weight += t->weight;
      w->total += t->weight;
      return LSCHED_OK;
    }
  }
  if (w->n == w->cap) {
    size_t nc = w->cap ? 2 * w->cap : 16;
    lsched_task_type *nt = lsched__realloc(&w->a, w->t, nc * sizeof *nt);
    if (!nt)
      return LSCHED_ENOMEM;
    w->t = nt;
    w->cap = nc;
  }
  w->t[w->n] = *t; /* version 1 is the only layout so far */
  w->t[w->n].version = LSCHED_TASK_TYPE_VERSION;
  w->slot[j] = ++w->n;
  w->total += t->weight;
  return LSCHED_OK;
}

/* Popularity order: weight, then cpu, gpu_milli, gpu_count, model_mask, all
 * descending. This mirrors the FGD simulator's sort.Reverse over (count,
 * MilliCpu, MilliGpu, GpuNumber, GpuType); the last key (the GPU type
 * string there, the mask here) only orders types that differ in nothing
 * else. */
static int cmp_popular(const void *pa, const void *pb) {
  const lsched_task_type *a = pa, *b = pb;
  if (a->weight != b->weight)
    return a->weight > b->weight ? -1 : 1;
  if (a->cpu_milli != b->cpu_milli)
    return a->cpu_milli > b->cpu_milli ? -1 : 1;
  if (a->gpu_milli != b->gpu_milli)
    return a->gpu_milli > b->gpu_milli ? -1 : 1;
  if (a->gpu_count != b->gpu_count)
    return a->gpu_count > b->gpu_count ? -1 : 1;
  if (a->model_mask != b->model_mask)
    return a->model_mask > b->model_mask ? -1 : 1;
  return 0;
}

int lsched_workload_keep_popular(lsched_workload *w, unsigned percent) {
  if (!w || percent < 1 || percent > 100)
    return LSCHED_EINVAL;
  if (w->n == 0)
    return LSCHED_OK;
  qsort(w->t, w->n, sizeof *w->t, cmp_popular);
  /* The shortest prefix with cum >= percent% of the total (exact). */
  uint64_t cum = 0;
  size_t keep = 0;
  while (keep < w->n && cum * 100 < (uint64_t)percent * w->total)
    cum += w->t[keep++].weight;
  w->n = keep;
  w->total = cum;
  int rc = reindex(w, w->n);
  if (rc) {
    /* The cut stands; the stale index is dropped and rebuilt by the next
     * lsched_workload_add(). */
    lsched__free(&w->a, w->slot);
    w->slot = NULL;
    w->nslot = 0;
  }
  return rc;
}

size_t lsched_workload_count(const lsched_workload *w) { return w ? w->n : 0; }

const lsched_task_type *lsched_workload_at(const lsched_workload *w,
                                           size_t i) {
  return w && i < w->n ? &w->t[i] : NULL;
}

uint64_t lsched_workload_weight(const lsched_workload *w) {
  return w ? w->total : 0;
}

int lsched_workload_copy(lsched_workload **out, const lsched_workload *w,
                         const lsched_allocator *a) {
  if (!out)
    return LSCHED_EINVAL;
  *out = NULL;
  if (!w)
    return LSCHED_OK;
  lsched_workload *cp;
  int rc = lsched_workload_create(&cp, a);
  for (size_t i = 0; rc == LSCHED_OK && i < w->n; i++)
    rc = lsched_workload_add(cp, &w->t[i]);
  if (rc) {
    lsched_workload_destroy(cp);
    return rc;
  }
  *out = cp;
  return LSCHED_OK;
}

int lsched_policy_set_workload(lsched_policy *p, const lsched_workload *w) {
  if (!p)
    return LSCHED_EINVAL;
  if (p->ops->version < 2 || !p->ops->set_workload)
    return LSCHED_ENOENT;
  /* A copy is kept for the refresh after a node change (policy.c) of a
   * policy without an on_node_change hook. */
  lsched_workload *cp = NULL;
  int rc;
  if ((p->ops->version < 5 || !p->ops->on_node_change) &&
      (rc = lsched_workload_copy(&cp, w, &p->c->a)))
    return rc;
  rc = p->ops->set_workload(p->state, p->c, w);
  if (rc) {
    lsched_workload_destroy(cp);
    return rc;
  }
  lsched_workload_destroy(p->workload);
  p->workload = cp;
  return LSCHED_OK;
}
