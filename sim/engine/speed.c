/*
 * Work and speed as a part of the run (engine_internal.h; definitions in
 * sim/README.md "Work and speed" and docs/DESIGN.md): a job carries work
 * = its trace duration x the speed of the GPU type it was measured on
 * (reference-GPU-seconds, V100 = 1); on a placement it runs for work /
 * speed, the speed being its class's on the node's model for its GPU
 * count (unconsolidated when spread over nodes or, on a pool host, when
 * a multi-GPU job has a composed GPU: pools_composed), times its MIG share,
 * times the fabric factor of composed pool GPUs (pools_fabric), times the
 * interference of its co-runners on a shared GPU. When the
 * co-runners of a running job change, its remaining time is re-timed:
 * at time t a job ending at E at speed s goes on at s' and ends at
 * t + round((E - t) x s / s') (round half away from zero, whole us).
 *
 * Co-runners are found through per-GPU lists of the running jobs on each
 * shared GPU (O(co-runners) per start or finish of a job on a shared GPU;
 * exclusive and MIG placements cost nothing), taken in the order of the
 * engine's running list as a scan of it would (the interference product
 * is a floating-point product: its order is kept). Per slot: its class,
 * measured speed, current speed and where it is listed.
 *
 * Moves and preemptions (migrate.c): a moved job's run time left is
 * converted to its new placement through run_time (the work it has done
 * carries: done = work - work left at every start), and the co-runners it
 * leaves on a shared GPU are re-timed (speed_left). Estimates
 * (estimate.c) read a job's segment through speed_view.
 */
#include "engine_internal.h"
#include "speed_table.h"
#include "jsonutil.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct speed_slot {
  double meas;    /* speed of the measured type (reference work per us) */
  double cur;     /* speed now (0: not started) */
  double from_us; /* when cur began (for the work integral) */
  double done;    /* reference-us done before from_us */
  int64_t end;    /* its end at speed cur (no moves: without can_plan) */
  int cls;        /* class index in the table */
  int same;       /* measured on "same": the GPU type does not matter */
  int lnode;      /* node whose GPU lists hold it (listed), else -1 */
  uint64_t lmask; /* its GPUs there */
} speed_slot;

/* The running jobs on one shared GPU (unordered). */
typedef struct gpu_list {
  uint32_t *a;
  uint32_t n, cap;
} gpu_list;

struct sim_speed {
  speed_table tab;
  int *node_model;     /* per node: table model, -1 without GPUs */
  uint8_t *node_shared; /* per node: fractional GPU sharing */
  uint8_t *node_mig;   /* per node: MIG GPUs */
  int oom;             /* a slot table could not grow */
  int pools;           /* the cluster has composable pools */
  int meas_model;      /* trace-wide measured type, -1 = "same" */
  int by_spec;         /* single-model specs name the measured type */
  int *spec_model;     /* per trace spec: table model, or -2 (not one) */
  int nspecs;
  double *mix;         /* cumulative class weights (nclasses) */
  int *cmap;           /* trace class -> table class, -1 none, -2 unseen */
  int ncmap;
  int def_class;       /* "default", or -1 (drawn from mix) */
  uint64_t seed;
  speed_slot *ss;
  size_t cap;
  /* Per slot, the user pointer of its requests' speed callback (engine,
   * slot): pages of SPEED_CALL_PAGE, so a pointer handed to libsched stays
   * valid while the slot table grows. */
  struct speed_call **calls;
  size_t ncall_pages;
  double done_ref, work_ref; /* completed jobs (reference-us) */
  uint64_t retimes;    /* running jobs re-timed so far (reserve.c) */
  /* Per GPU of a shared node (gpu_base[node] + GPU index): the running
   * jobs holding a share of it, so that finding a job's co-runners costs
   * O(its co-runners), not O(running jobs). */
  size_t *gpu_base;
  gpu_list *gl;
  size_t ngl;
  uint32_t *co;        /* scratch: a job's co-runners */
  size_t co_cap;
  int *models;         /* the table models of the GPU nodes, each once */
  int nmodels;
};

static const int mig_slices[7] = {0, 1, 1, 2, 3, 4, 7};

static void list_remove(struct sim_speed *sp, uint32_t sl);

static speed_slot *sslot(struct sim_speed *sp, uint32_t sl) {
  return &sp->ss[sl];
}

struct speed_call {
  const engine *e;
  uint32_t sl;
};
#define SPEED_CALL_PAGE 4096u

/* Call contexts for slots 0 .. need-1 (pages allocated here, never in
 * the request path). */
static int grow_calls(struct sim_speed *sp, const engine *e, size_t need) {
  size_t pages = (need + SPEED_CALL_PAGE - 1) / SPEED_CALL_PAGE;
  if (pages <= sp->ncall_pages)
    return 0;
  struct speed_call **np = realloc(sp->calls, pages * sizeof *np);
  if (!np)
    return -1;
  sp->calls = np;
  while (sp->ncall_pages < pages) {
    struct speed_call *pg = malloc(SPEED_CALL_PAGE * sizeof *pg);
    if (!pg)
      return -1;
    for (uint32_t i = 0; i < SPEED_CALL_PAGE; i++) {
      pg[i].e = e;
      pg[i].sl = (uint32_t)(sp->ncall_pages * SPEED_CALL_PAGE + i);
    }
    sp->calls[sp->ncall_pages++] = pg;
  }
  return 0;
}

/* What speed_call's answer for the job in slot sl depends on
 * (lsched_request.speed_scope), from place_speed's rule with one part:
 * - a CPU job: its measured speed anywhere: LSCHED_SPEED_CONSTANT;
 * - on a cluster with composable pools: the placement's pool GPUs
 *   (composed or not, fabric factor): LSCHED_SPEED_ANY;
 * - measured on "same": its measured speed (the MIG share applies on MIG
 *   nodes only, where a plain request never goes; libsched counts a MIG
 *   request as LSCHED_SPEED_ANY whatever it declares):
 *   LSCHED_SPEED_CONSTANT;
 * - otherwise its class's speed on the node's model for its GPU count,
 *   consolidated (or its measured speed where the table has none):
 *   LSCHED_SPEED_BY_MODEL.
 * Interference is not part of the answer (the callback rates the
 * placement alone: sim_speed_on), so shared GPUs do not change it. */
static int speed_scope_of(const struct sim_speed *sp, const engine *e,
                          uint32_t sl) {
  if (sl >= sp->cap)
    return LSCHED_SPEED_ANY; /* after a failed allocation (oom) */
  if (e->slots[sl].rec.num_gpu <= 0)
    return LSCHED_SPEED_CONSTANT;
  if (sp->pools)
    return LSCHED_SPEED_ANY;
  return sp->ss[sl].same ? LSCHED_SPEED_CONSTANT : LSCHED_SPEED_BY_MODEL;
}

void speed_prefetch(const engine *e, uint32_t sl) {
  const struct sim_speed *sp = e->speed;
  if (sl < sp->cap)
    __builtin_prefetch(&sp->ss[sl], 0, 3);
}

static void *speed_call_user(const engine *e, uint32_t sl, int *scope) {
  const struct sim_speed *sp = e->speed;
  *scope = LSCHED_SPEED_ANY;
  if (sl / SPEED_CALL_PAGE >= sp->ncall_pages)
    return NULL; /* after a failed allocation: the run fails (oom) */
  *scope = speed_scope_of(sp, e, sl);
  return &sp->calls[sl / SPEED_CALL_PAGE][sl % SPEED_CALL_PAGE];
}

/* lsched_request.speed: the job's speed on a candidate placement. */
static double speed_call(void *user, const lsched_cluster *c,
                         const lsched_placement *pl) {
  (void)c;
  const struct speed_call *x = user;
  return x ? sim_speed_on(x->e, x->sl, pl) : 1;
}

static int grow_slots(struct sim_speed *sp, size_t need) {
  if (need <= sp->cap)
    return 0;
  size_t nc = sp->cap ? sp->cap : 256;
  while (nc < need)
    nc *= 2;
  speed_slot *n = realloc(sp->ss, nc * sizeof *n);
  if (!n)
    return -1;
  memset(n + sp->cap, 0, (nc - sp->cap) * sizeof *n);
  for (size_t i = sp->cap; i < nc; i++)
    n[i].lnode = -1;
  sp->ss = n;
  sp->cap = nc;
  return 0;
}

/* splitmix64: a job's class draw depends on the seed and its trace
 * position only (not on the order of events). */
static uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static int draw_class(const struct sim_speed *sp, uint64_t idx) {
  if (sp->def_class >= 0)
    return sp->def_class;
  double total = sp->mix[sp->tab.nclasses - 1];
  double u = (double)(mix64(sp->seed ^ mix64(idx)) >> 11) * 0x1p-53 * total;
  for (int c = 0; c < sp->tab.nclasses; c++)
    if (u < sp->mix[c])
      return c;
  return sp->tab.nclasses - 1;
}

/* The speed of class c on table model m with k GPUs (1 for "same", m <
 * 0); 0 when the table does not measure it. */
static double type_speed(const struct sim_speed *sp, int c, int m, int k,
                         int spread) {
  if (m < 0)
    return k > 0 ? k : 1; /* "same": k reference GPUs */
  return speed_table_speed(&sp->tab, c, m, k > 0 ? k : 1, spread);
}

/* The table class of trace class jc (1-based; 0 none): -1 when none. */
static int trace_class(struct sim_speed *sp, const trace *t, int jc) {
  if (jc <= 0 || jc > t->nclasses)
    return -1;
  if (jc > sp->ncmap) { /* a stream meets new classes as it reads */
    int *n = realloc(sp->cmap, (size_t)t->nclasses * sizeof *n);
    if (!n) {
      sp->oom = 1;
      return -1;
    }
    for (int i = sp->ncmap; i < t->nclasses; i++)
      n[i] = -2;
    sp->cmap = n;
    sp->ncmap = t->nclasses;
  }
  if (sp->cmap[jc - 1] == -2)
    sp->cmap[jc - 1] = speed_table_class(&sp->tab, t->classes[jc - 1]);
  return sp->cmap[jc - 1];
}

static void on_arrival(void *self, engine *e, const slot *s) {
  struct sim_speed *sp = self;
  uint32_t sl = (uint32_t)(s - e->slots);
  if (grow_slots(sp, e->nslots) ||
      grow_calls(sp, e, e->nslots)) { /* reported by run_time */
    sp->oom = 1;
    return;
  }
  speed_slot *x = sslot(sp, sl);
  list_remove(sp, sl); /* (a slot's last occupant has finished) */
  memset(x, 0, sizeof *x);
  x->lnode = -1;
  /* The trace's class where the table has it, else the default or a
   * draw. */
  x->cls = trace_class(sp, src_meta(&e->src), s->rec.jclass);
  if (x->cls < 0)
    x->cls = draw_class(sp, s->idx);
  int m = sp->meas_model;
  const job_record *j = &s->rec;
  if (sp->by_spec && j->gpu_spec >= 0 && j->gpu_spec < sp->nspecs &&
      sp->spec_model[j->gpu_spec] != -2)
    m = sp->spec_model[j->gpu_spec];
  x->same = m < 0;
  x->meas = type_speed(sp, x->cls, m, j->num_gpu, 0);
  if (!(x->meas > 0)) {
    x->meas = j->num_gpu > 0 ? j->num_gpu : 1; /* not measured: "same" */
    x->same = 1;
  }
}

/* Speed of the job in slot sl on parts before interference; meas when
 * the table does not measure the placement's type. */
static double place_speed(const struct sim_speed *sp, const engine *e,
                          uint32_t sl, const lsched_placement *parts, int n) {
  const speed_slot *x = &sp->ss[sl];
  const job_record *j = &e->slots[sl].rec;
  if (j->num_gpu <= 0)
    return x->meas; /* a CPU job: its duration holds anywhere */
  double v = 0;
  if (x->same) {
    v = x->meas; /* "same": the type does not matter */
  } else {
    /* Not all on one host's NVLink: spread over nodes, or a multi-GPU
     * job on one pool host with a composed GPU (pool GPUs sit on
     * PCIe/CXL, not on the host's NVLink, even all from one chassis). */
    int spread = n > 1;
    if (__builtin_expect(sp->pools, 0) && !spread && j->num_gpu >= 2)
      spread = pools_composed(e, &parts[0]) > 0;
    for (int i = 0; i < n; i++) {
      double s = type_speed(sp, x->cls, sp->node_model[parts[i].node],
                            j->num_gpu, spread);
      if (i == 0 || s < v)
        v = s; /* a gang runs at its slowest part's pace */
    }
    if (!(v > 0))
      v = x->meas; /* not measured there: its duration holds */
  }
  /* A MIG instance of k slices: min(1, (k / 7) / the job's need). Only
   * MIG nodes' placements carry a kind (job_parts leaves it unset
   * elsewhere). */
  int kind = sp->node_mig[parts[0].node] ? parts[0].mig_kind : 0;
  if (kind > 0 && kind < 7) {
    double need = j->num_gpu > 1 ? 1.0 : j->gpu_milli / 1000.0;
    double share = mig_slices[kind] / 7.0;
    if (share < need)
      v *= share / need;
  }
  /* Composed pool GPUs: times the fabric factor (1 elsewhere). */
  if (__builtin_expect(sp->pools, 0))
    v *= pools_fabric(e, parts, n); /* (x 1 exact) */
  return v;
}

/* A placement shared with other jobs: a fraction of a GPU of a shared
 * node (exclusive nodes give 1000, MIG nodes instances). */
static int is_shared(const struct sim_speed *sp, const slot *s) {
  return s->rec.num_gpu > 0 && s->ngang <= 1 && s->st.node >= 0 &&
         sp->node_shared[s->st.node] && s->st.gpu_milli < 1000;
}

/* The GPU list of GPU g of node (a shared node). */
static gpu_list *glist(const struct sim_speed *sp, int node, int g) {
  return &sp->gl[sp->gpu_base[node] + (size_t)g];
}

/* Lists the running job sl on its shared placement (node, mask). 0, or -1
 * when out of memory. */
static int list_add(struct sim_speed *sp, uint32_t sl, int node,
                    uint64_t mask) {
  speed_slot *x = &sp->ss[sl];
  for (uint64_t m = mask; m; m &= m - 1) {
    gpu_list *l = glist(sp, node, __builtin_ctzll(m));
    if (l->n == l->cap) {
      uint32_t nc = l->cap ? 2 * l->cap : 4;
      uint32_t *na = realloc(l->a, nc * sizeof *na);
      if (!na)
        return -1;
      l->a = na;
      l->cap = nc;
    }
    l->a[l->n++] = sl;
  }
  x->lnode = node;
  x->lmask = mask;
  return 0;
}

/* Takes sl off the GPU lists it is on (if any). */
static void list_remove(struct sim_speed *sp, uint32_t sl) {
  speed_slot *x = &sp->ss[sl];
  if (x->lnode < 0)
    return;
  for (uint64_t m = x->lmask; m; m &= m - 1) {
    gpu_list *l = glist(sp, x->lnode, __builtin_ctzll(m));
    for (uint32_t i = 0; i < l->n; i++)
      if (l->a[i] == sl) {
        l->a[i] = l->a[--l->n];
        break;
      }
  }
  x->lnode = -1;
  x->lmask = 0;
}

/*
 * The running jobs sharing a GPU of (node, mask) with slot a, into sp->co
 * in the order of the running list (run_pos: the order of a scan of the
 * running jobs, which the interference product and the re-timings keep,
 * so that outputs do not depend on the lists). Returns their count, or
 * (size_t)-1 when out of memory.
 */
static size_t corunners(struct sim_speed *sp, const engine *e, uint32_t a,
                        int node, uint64_t mask) {
  size_t n = 0;
  for (uint64_t m = mask; m; m &= m - 1) {
    const gpu_list *l = glist(sp, node, __builtin_ctzll(m));
    if (n + l->n > sp->co_cap) {
      size_t nc = sp->co_cap ? sp->co_cap : 16;
      while (nc < n + l->n)
        nc *= 2;
      uint32_t *na = realloc(sp->co, nc * sizeof *na);
      if (!na)
        return (size_t)-1;
      sp->co = na;
      sp->co_cap = nc;
    }
    for (uint32_t i = 0; i < l->n; i++) {
      uint32_t b = l->a[i];
      const slot *sb = &e->slots[b];
      if (b == a || sb->st.node != node || !(sb->st.gpu_mask & mask) ||
          !is_shared(sp, sb) || !(sp->ss[b].cur > 0))
        continue;
      /* insertion by run_pos; a job on two of the GPUs counts once */
      uint32_t pos = sb->run_pos;
      size_t k = n;
      int dup = 0;
      while (k > 0 && e->slots[sp->co[k - 1]].run_pos >= pos) {
        if (sp->co[k - 1] == b) {
          dup = 1;
          break;
        }
        k--;
      }
      if (dup)
        continue;
      memmove(&sp->co[k + 1], &sp->co[k], (n - k) * sizeof *sp->co);
      sp->co[k] = b;
      n++;
    }
  }
  return n;
}

/* The interference factor of slot a (running or starting on node/mask)
 * from the running jobs sharing a GPU with it. */
static double interference_at(struct sim_speed *sp, const engine *e,
                              uint32_t a, int node, uint64_t mask) {
  double f = 1;
  int m = sp->node_model[node];
  size_t n = corunners(sp, e, a, node, mask);
  if (n == (size_t)-1) {
    sp->oom = 1; /* the run fails at the next run_time or its results */
    return 1;
  }
  for (size_t i = 0; i < n; i++)
    f *= speed_table_pair(&sp->tab, sp->ss[a].cls, sp->ss[sp->co[i]].cls, m);
  return f;
}

static double interference(struct sim_speed *sp, const engine *e,
                           uint32_t a) {
  const slot *sa = &e->slots[a];
  return interference_at(sp, e, a, sa->st.node, sa->st.gpu_mask);
}

/* The running job b now runs at speed v from time t. */
static int retime(struct sim_speed *sp, engine *e, uint32_t b, double v,
                  int64_t t) {
  speed_slot *x = sslot(sp, b);
  slot *s = &e->slots[b];
  slot_x *sx = slot_x_of(e, s);
  if (v == x->cur)
    return 0;
  int64_t from = t;
  if (e->can_plan && sx->seg_us > t)
    from = sx->seg_us; /* still inside a move: its segment starts later */
  /* Its current end: a policy that plans migrations keeps it in the
   * slot (moves change it), otherwise the speed part does. */
  int64_t end = e->can_plan ? sx->seg_us + sx->rem_us : x->end;
  int64_t rem = end - from;
  if (rem < 0)
    rem = 0;
  int64_t nrem = llround((double)rem * x->cur / v);
  x->done += x->cur * ((double)from - x->from_us);
  x->from_us = (double)from;
  x->cur = v;
  int64_t nend;
  if (time_add(e, s, from, nrem, &nend))
    return -1;
  x->end = nend;
  sp->retimes++;
  if (e->can_plan) {
    sx->seg_us = from;
    sx->rem_us = nrem;
  }
  if (slot_retime(e, b, nend)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  return 0;
}

/* Re-times the running jobs sharing a GPU with slot a on its node (a
 * started or finished: excluded when it left the running list). */
static int retime_corunners(struct sim_speed *sp, engine *e, uint32_t a,
                            int node, uint64_t mask, int64_t t) {
  size_t nco = corunners(sp, e, a, node, mask);
  if (nco == (size_t)-1) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  /* A copy: re-timing b computes b's co-runners into sp->co. */
  uint32_t cs[16], *co = nco <= 16 ? cs : malloc(nco * sizeof *co);
  if (!co) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  memcpy(co, sp->co, nco * sizeof *co);
  int rc = 0;
  for (size_t i = 0; i < nco && rc == 0; i++) {
    uint32_t b = co[i];
    lsched_placement p[SIM_MAX_PARTS];
    int n = job_parts(e, b, p);
    double v = place_speed(sp, e, b, p, n) * interference(sp, e, b);
    if (sp->oom) {
      snprintf(e->err, e->errlen, "out of memory");
      rc = -1;
    } else {
      rc = retime(sp, e, b, v, t);
    }
  }
  if (co != cs)
    free(co);
  return rc;
}

static int64_t run_time(void *self, engine *e, uint32_t sl,
                        const lsched_placement *parts, int n, int64_t begin,
                        int64_t work) {
  struct sim_speed *sp = self;
  if (sp->oom || grow_slots(sp, e->nslots)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  speed_slot *x = sslot(sp, sl);
  slot *s = &e->slots[sl];
  /* Reference work left: the first start converts the trace duration;
   * a restart (preemption) or a move the run time left on the last
   * placement, at the speed it ran there. */
  double ref = (double)work * (x->cur > 0 ? x->cur : x->meas);
  double v = place_speed(sp, e, sl, parts, n);
  int shared = n == 1 && is_shared(sp, s);
  if (shared)
    v *= interference(sp, e, sl);
  /* The work integral: what the job has done is its work less what is
   * left, so work done before a move or a preemption counts once (work
   * lost to a preemption without a checkpoint is redone, not counted
   * twice) and the total done equals the jobs' work. */
  x->done = (double)job_duration(e, &s->rec) * x->meas - ref;
  x->cur = v;
  x->from_us = (double)begin;
  list_remove(sp, sl); /* a move: off its source GPU */
  if (shared && list_add(sp, sl, parts[0].node, parts[0].gpu_mask)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  int64_t run = llround(ref / v);
  int64_t end;
  if (time_add(e, s, begin, run, &end))
    return -1;
  x->end = end;
  if (shared && retime_corunners(sp, e, sl, parts[0].node, parts[0].gpu_mask,
                                 begin))
    return -1;
  return run;
}

static void on_finish(void *self, engine *e, const slot *s,
                      const lsched_placement *parts, int n) {
  struct sim_speed *sp = self;
  uint32_t sl = (uint32_t)(s - e->slots);
  speed_slot *x = sslot(sp, sl);
  list_remove(sp, sl);
  x->done += x->cur * ((double)e->now - x->from_us);
  sp->done_ref += x->done;
  sp->work_ref += (double)job_duration(e, &s->rec) * x->meas;
  if (n == 1 && s->rec.num_gpu > 0 && sp->node_shared[parts[0].node] &&
      parts[0].gpu_milli < 1000 &&
      retime_corunners(sp, e, sl, parts[0].node, parts[0].gpu_mask, e->now)) {
    /* e->err is set; the loop sees it through the next run_time's error
     * path or the results. */
    sp->done_ref = NAN;
  }
}

static int results(void *self, const engine *e, sim_result *out) {
  struct sim_speed *sp = self;
  if (sp->oom || (isnan(sp->done_ref) && e->err[0]))
    return -1; /* out of memory (metrics_results says so) */
  out->work_done_ref_s = sp->done_ref / 1e6;
  out->work_ref_s = sp->work_ref / 1e6;
  return 0;
}

static void speed_close(void *self) {
  struct sim_speed *sp = self;
  if (!sp)
    return;
  speed_table_free(&sp->tab);
  for (size_t i = 0; i < sp->ncall_pages; i++)
    free(sp->calls[i]);
  free(sp->calls);
  free(sp->node_model);
  free(sp->models);
  free(sp->node_shared);
  free(sp->node_mig);
  free(sp->spec_model);
  free(sp->mix);
  free(sp->cmap);
  free(sp->ss);
  for (size_t i = 0; sp->gl && i < sp->ngl; i++)
    free(sp->gl[i].a);
  free(sp->gl);
  free(sp->gpu_base);
  free(sp->co);
  free(sp);
}

static const sim_part_ops speed_part = {
    .name = "speed",
    .on_arrival = on_arrival,
    .on_finish = on_finish,
    .results = results,
    .close = speed_close,
    .run_time = run_time,
};

int speed_left(engine *e, uint32_t sl, const lsched_placement *from,
               int64_t t) {
  struct sim_speed *sp = e->speed;
  if (sp && e->slots[sl].st.node < 0)
    list_remove(sp, sl); /* preempted: not running */
  if (!sp || e->slots[sl].rec.num_gpu <= 0 || from->node < 0 ||
      !sp->node_shared[from->node] || from->gpu_milli >= 1000)
    return 0;
  return retime_corunners(sp, e, sl, from->node, from->gpu_mask, t);
}

/* The view of the queued job in slot sl started now at speed sp_on: its
 * work left (run_time's rule) from now; v->meas and v->total set. */
static void start_view(const engine *e, uint32_t sl, double sp_on,
                       speed_est_view *v) {
  const speed_slot *x = &e->speed->ss[sl];
  const slot *s = &e->slots[sl];
  int64_t work =
      e->can_plan ? slot_x_of(e, s)->rem_us : job_duration(e, &s->rec);
  double ref = (double)work * (x->cur > 0 ? x->cur : x->meas);
  v->speed = sp_on;
  v->from = e->now;
  v->end = INT64_MAX;
  double run = ref / sp_on;
  if (run < 9.2e18 - (double)e->now)
    v->end = e->now + llround(run);
  v->done = v->total - ref;
}

int speed_view(const engine *e, uint32_t sl, const lsched_placement *parts,
               int n, speed_est_view *v) {
  struct sim_speed *sp = e->speed; /* (its co-runner scratch) */
  if (!sp || sl >= sp->cap)
    return 0;
  const speed_slot *x = &sp->ss[sl];
  const slot *s = &e->slots[sl];
  v->meas = x->meas;
  v->total = (double)job_duration(e, &s->rec) * x->meas;
  if (!parts) { /* running: its segment at speed cur */
    v->speed = x->cur;
    v->from = (int64_t)x->from_us;
    v->end = x->end;
    v->done = x->done;
    /* A candidate marked running beside it (reserve.c asks with at most
     * one, after the started jobs): the re-timing its start would cause,
     * computed as retime() will (its factor last in the product: it
     * would be the last in the running list). */
    if (e->nrun == e->running + 1 && x->lnode >= 0) {
      uint32_t c = e->run_list[e->running];
      const slot *sc = &e->slots[c];
      if (c != sl && sc->st.node == x->lnode && (sc->st.gpu_mask & x->lmask) &&
          is_shared(sp, sc)) {
        lsched_placement p[SIM_MAX_PARTS];
        int np = job_parts(e, sl, p);
        double f = interference(sp, e, sl) *
                   speed_table_pair(&sp->tab, x->cls, sp->ss[c].cls,
                                    sp->node_model[x->lnode]);
        double nv = place_speed(sp, e, sl, p, np) * f;
        if (nv != x->cur) {
          int64_t from = e->now;
          const slot_x *sx = slot_x_of(e, s);
          if (e->can_plan && sx->seg_us > from)
            from = sx->seg_us;
          int64_t end = e->can_plan ? sx->seg_us + sx->rem_us : x->end;
          int64_t rem = end - from;
          if (rem < 0)
            rem = 0;
          v->done = x->done + x->cur * ((double)from - x->from_us);
          v->from = from;
          v->speed = nv;
          v->end = from + llround((double)rem * x->cur / nv);
        }
      }
    }
    return 1;
  }
  /* A candidate on parts from now, at its speed there with the
   * interference of the co-runners now. */
  double sp_on = place_speed(sp, e, sl, parts, n);
  if (n == 1 && s->rec.num_gpu > 0 && parts[0].node >= 0 &&
      sp->node_shared[parts[0].node] && parts[0].gpu_milli < 1000)
    sp_on *= interference_at(sp, e, sl, parts[0].node, parts[0].gpu_mask);
  start_view(e, sl, sp_on, v);
  return 1;
}

/*
 * The fastest a queued job can run anywhere on the cluster: place_speed
 * is its measured speed (CPU jobs, "same", placements the table does not
 * measure) or the least of its parts' type speeds, at most the greatest
 * type speed over the cluster's models, consolidated or not, then times
 * factors of at most 1 (a MIG instance's share, a pool's fabric), and
 * the co-runners' interference is a product of factors in (0, 1]
 * (speed_table_pair: min(1, pair) or a table default checked to be in
 * (0, 1]). So no placement gives it more than this.
 */
static double fastest(const struct sim_speed *sp, const engine *e,
                      uint32_t sl) {
  const speed_slot *x = &sp->ss[sl];
  const job_record *j = &e->slots[sl].rec;
  double v = x->meas;
  if (j->num_gpu <= 0 || x->same)
    return v;
  for (int i = 0; i < sp->nmodels; i++)
    for (int spread = 0; spread < 2; spread++) {
      double s = type_speed(sp, x->cls, sp->models[i], j->num_gpu, spread);
      if (s > v)
        v = s;
    }
  return v;
}

int speed_view_fastest(const engine *e, uint32_t sl, speed_est_view *v) {
  const struct sim_speed *sp = e->speed;
  if (!sp || sl >= sp->cap)
    return 0;
  v->meas = sp->ss[sl].meas;
  v->total = (double)job_duration(e, &e->slots[sl].rec) * v->meas;
  start_view(e, sl, fastest(sp, e, sl), v);
  return 1;
}

int speed_slows(const engine *e, uint32_t sl, const lsched_placement *parts,
                int n) {
  struct sim_speed *sp = e->speed;
  if (!sp || sl >= sp->cap || n != 1 || e->slots[sl].rec.num_gpu <= 0 ||
      parts[0].node < 0 || !sp->node_shared[parts[0].node] ||
      parts[0].gpu_milli >= 1000)
    return 0;
  size_t k = corunners(sp, e, sl, parts[0].node, parts[0].gpu_mask);
  return k == (size_t)-1 || k > 0;
}

size_t speed_slowed(const engine *e, uint32_t sl,
                    const lsched_placement *parts, int n, uint32_t *out,
                    size_t cap) {
  const struct sim_speed *sp = e->speed;
  if (!sp || n != 1 || parts[0].node < 0 || !sp->node_shared[parts[0].node])
    return 0;
  int node = parts[0].node;
  uint64_t mask = parts[0].gpu_mask;
  size_t k = 0;
  for (uint64_t m = mask; m; m &= m - 1) {
    const gpu_list *l = glist(sp, node, __builtin_ctzll(m));
    for (uint32_t i = 0; i < l->n; i++) {
      uint32_t b = l->a[i];
      size_t q = 0;
      while (q < k && out[q] != b)
        q++;
      if (b == sl || q < k)
        continue; /* itself, or on two of the GPUs: once */
      if (k == cap)
        return cap + 1; /* more than cap */
      out[k++] = b;
    }
  }
  return k;
}

uint64_t speed_retimes(const engine *e) {
  return e->speed ? e->speed->retimes : 0;
}

double speed_measured(const engine *e, uint32_t sl) {
  /* Beyond cap only after a failed allocation (the run then fails). */
  return e->speed && sl < e->speed->cap ? e->speed->ss[sl].meas : 1;
}

const char *speed_class_name(const engine *e, uint32_t sl) {
  if (!e->speed || sl >= e->speed->cap)
    return NULL;
  int c = e->speed->ss[sl].cls;
  return c >= 0 && c < e->speed->tab.nclasses ? e->speed->tab.classes[c]
                                              : NULL;
}

int speed_classes(const engine *e) {
  return e->speed ? e->speed->tab.nclasses : 0;
}

int speed_class_of(const engine *e, uint32_t sl) {
  return e->speed && sl < e->speed->cap ? e->speed->ss[sl].cls : -1;
}

double sim_speed_on(const engine *e, uint32_t sl, const lsched_placement *pl) {
  if (!e->speed || sl >= e->speed->cap)
    return 1;
  return place_speed(e->speed, e, sl, pl, 1);
}

/* Resolves a model name to a table model: 0, -1 "same", or an error. */
static int resolve_model(struct sim_speed *sp, const gpu_catalog *cat,
                         const char *name, const char *what, int *out,
                         char *err, size_t errlen) {
  if (!name || strcasecmp(name, "same") == 0) {
    *out = -1;
    return 0;
  }
  const gpu_model_info *gm = catalog_find(cat, name);
  const char *hint = strstr(what, "measurement type")
                         ? "; give --measured-on MODEL (or 'same')"
                         : "";
  if (!gm) {
    snprintf(err, errlen,
             "%s: unknown GPU model '%s' (see 'schedsim models')%s", what,
             name, hint);
    return -1;
  }
  *out = speed_table_model(&sp->tab, gm);
  if (*out < 0) {
    snprintf(err, errlen, "%s: GPU model '%s': speed table %s has no speed "
             "for it%s", what, name, sp->tab.origin, hint);
    return -1;
  }
  return 0;
}

/* --class-mix FILE: {"CLASS": weight, ...}. */
static int load_mix(struct sim_speed *sp, const char *path, char *err,
                    size_t errlen) {
  int nc = sp->tab.nclasses;
  sp->mix = calloc((size_t)nc, sizeof *sp->mix);
  if (!sp->mix) {
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  if (!path) {
    for (int c = 0; c < nc; c++)
      sp->mix[c] = c + 1; /* uniform */
    return 0;
  }
  char *text = json_read_file(path, err, errlen);
  if (!text)
    return -1;
  cJSON *root = json_parse_located(text, path, err, errlen);
  free(text);
  if (!root)
    return -1;
  int rc = 0;
  const cJSON *it;
  if (!cJSON_IsObject(root) || !root->child) {
    snprintf(err, errlen, "%s: expected an object of job class weights",
             path);
    rc = -1;
  }
  cJSON_ArrayForEach(it, root) {
    if (rc)
      break;
    int c = speed_table_class(&sp->tab, it->string);
    if (c < 0) {
      snprintf(err, errlen, "%s: key '%s': not a job class of speed table %s",
               path, it->string, sp->tab.origin);
      rc = -1;
    } else if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
               it->valuedouble < 0) {
      snprintf(err, errlen, "%s: key '%s': expected a weight >= 0", path,
               it->string);
      rc = -1;
    } else {
      sp->mix[c] = it->valuedouble;
    }
  }
  cJSON_Delete(root);
  double acc = 0;
  for (int c = 0; c < nc; c++)
    sp->mix[c] = (acc += sp->mix[c]);
  if (rc == 0 && !(acc > 0)) {
    snprintf(err, errlen, "%s: the weights add up to 0", path);
    rc = -1;
  }
  return rc;
}

/* Model m into sp->models (fastest), once. 0, or -1 out of memory (err
 * set). */
static int add_model(struct sim_speed *sp, int m, engine *e) {
  for (int k = 0; k < sp->nmodels; k++)
    if (sp->models[k] == m)
      return 0;
  int *nm = realloc(sp->models, (size_t)(sp->nmodels + 1) * sizeof *nm);
  if (!nm) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  sp->models = nm;
  sp->models[sp->nmodels++] = m;
  return 0;
}

static int open_speed(struct sim_speed *sp, engine *e, const gpu_catalog *cat) {
  const sim_options *opt = e->opt;
  char *err = e->err;
  size_t errlen = e->errlen;
  int rc = opt->speed_table
               ? speed_table_load_file(&sp->tab, opt->speed_table, cat, err,
                                       errlen)
               : speed_table_load_default(&sp->tab, cat, err, errlen);
  if (rc) /* an input error, unless memory ran out */
    return strstr(err, "out of memory") ? -2 : -1;
  sp->seed = opt->seed;
  sp->pools = e->sc->npools > 0;
  sp->def_class = opt->class_mix ? -1 : speed_table_class(&sp->tab, "default");
  if ((rc = load_mix(sp, opt->class_mix, err, errlen)))
    return rc == -1 && strstr(err, "out of memory") ? -2 : rc;
  /* Every GPU model of the cluster has a speed. */
  sim_cluster *sc = e->sc;
  sp->node_model = calloc((size_t)sc->nodes + 1, sizeof *sp->node_model);
  sp->node_shared = calloc((size_t)sc->nodes + 1, 1);
  sp->node_mig = calloc((size_t)sc->nodes + 1, 1);
  if (!sp->node_model || !sp->node_shared || !sp->node_mig) {
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  sp->gpu_base = calloc((size_t)sc->nodes + 1, sizeof *sp->gpu_base);
  if (!sp->gpu_base) {
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  for (int i = 0; i < sc->nodes; i++) {
    lsched_node_info ni;
    lsched_cluster_node_info(sc->c, i, &ni);
    sp->node_model[i] = -1;
    sp->gpu_base[i] = sp->ngl;
    if (ni.gpu_count <= 0)
      continue;
    sp->node_shared[i] = ni.gpu_mode == LSCHED_GPU_SHARED;
    if (sp->node_shared[i])
      sp->ngl += (size_t)ni.gpu_count;
    sp->node_mig[i] = ni.gpu_mode == LSCHED_GPU_MIG;
    const char *mname = lsched_cluster_model_name(sc->c, ni.gpu_model);
    char what[160];
    snprintf(what, sizeof what, "cluster node %d (%s)", i,
             ni.name && ni.name[0] ? ni.name : "unnamed");
    if (resolve_model(sp, cat, mname, what, &sp->node_model[i], err, errlen))
      return -1;
    if (sp->node_model[i] < 0)
      sp->node_model[i] = -1;
    if (add_model(sp, sp->node_model[i], e))
      return -2;
  }
  /* A pool may compose GPUs onto a host that has none of its own, whose
   * model is then -1 (type_speed's "same"). */
  if (sp->pools && add_model(sp, -1, e))
    return -2;
  sp->gl = calloc(sp->ngl ? sp->ngl : 1, sizeof *sp->gl);
  if (!sp->gl) {
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  /* The measured type: --measured-on, else the trace's rule. */
  const trace *t = src_meta(&e->src);
  if (opt->measured_on) {
    if (resolve_model(sp, cat, opt->measured_on, "--measured-on",
                      &sp->meas_model, err, errlen))
      return -1;
    sp->by_spec = 0;
  } else {
    char what[300];
    snprintf(what, sizeof what, "%s: measurement type of its format",
             t->path ? t->path : "trace");
    if (resolve_model(sp, cat, t->measured_on, what, &sp->meas_model, err,
                      errlen))
      return -1;
    sp->by_spec = t->measured_by_spec;
  }
  if (sp->by_spec && t->nspecs > 0) {
    sp->nspecs = t->nspecs;
    sp->spec_model = malloc((size_t)t->nspecs * sizeof *sp->spec_model);
    if (!sp->spec_model) {
      snprintf(err, errlen, "out of memory");
      return -2;
    }
    for (int i = 0; i < t->nspecs; i++) {
      const char *spec = t->specs[i];
      sp->spec_model[i] = -2;
      if (strchr(spec, '|'))
        continue;
      const gpu_model_info *gm = catalog_find(cat, spec);
      int m = gm ? speed_table_model(&sp->tab, gm) : -1;
      if (m < 0) {
        snprintf(err, errlen, "%s: field '%s': GPU model '%s': speed table "
                 "%s has no speed for it",
                 t->path, trace_gpu_field(t->format), spec, sp->tab.origin);
        return -1;
      }
      sp->spec_model[i] = m;
    }
  }
  return 0;
}

int speed_part_open(engine *e, const gpu_catalog *cat, const trace *t) {
  (void)t;
  if (e->opt->speed != SIM_SPEED_CATALOG)
    return 0;
  struct sim_speed *sp = calloc(1, sizeof *sp);
  if (!sp) {
    snprintf(e->err, e->errlen, "out of memory");
    return -2;
  }
  int rc = open_speed(sp, e, cat);
  if (rc == 0 && grow_slots(sp, e->nslots + 1)) {
    snprintf(e->err, e->errlen, "out of memory");
    rc = -2;
  }
  if (rc == 0 && engine_add_part(e, &speed_part, sp)) {
    snprintf(e->err, e->errlen, "internal error: too many engine parts");
    rc = -2;
  }
  if (rc) {
    speed_close(sp);
    return rc;
  }
  e->speed = sp;
  e->speed_fn = speed_call;
  e->speed_user = speed_call_user;
  return 0;
}

void sim_speed_note(const sim_options *opt, const trace *t, char *buf,
                    size_t len) {
  buf[0] = 0;
  if (opt->speed != SIM_SPEED_CATALOG)
    return;
  const char *table = opt->speed_table ? opt->speed_table : "built-in";
  if (opt->measured_on) {
    snprintf(buf, len, "work: durations count as measured on %s "
             "(--measured-on); speed table %s", opt->measured_on, table);
  } else if (t->measured_by_spec) {
    snprintf(buf, len, "work: durations count as measured on the job's GPU "
             "model where its %s names exactly one, else on %s (%s trace "
             "default); speed table %s",
             trace_gpu_field(t->format),
             t->measured_on ? t->measured_on : "any type (same)",
             trace_format_name(t->format), table);
  } else {
    snprintf(buf, len, "work: durations count as measured on %s (%s); "
             "speed table %s",
             t->measured_on ? t->measured_on : "any type (same)",
             t->measured_on ? "the trace's default" : "a CPU log or a trace "
             "without a measurement type",
             table);
  }
}

double speed_time_factor_on(const engine *e, uint32_t sl,
                            const gpu_model_info *gm) {
  const struct sim_speed *sp = e->speed;
  if (!sp || sl >= sp->cap)
    return 1;
  const speed_slot *x = &sp->ss[sl];
  const job_record *j = &e->slots[sl].rec;
  if (j->num_gpu <= 0 || x->same)
    return 1; /* a CPU job, or measured on "same": its duration holds */
  int m = speed_table_model(&sp->tab, gm);
  double v = m >= 0 ? type_speed(sp, x->cls, m, j->num_gpu, 0) : 0;
  return v > 0 ? x->meas / v : 1; /* not measured there: duration holds */
}
