/*
 * Fuzz target: libsched through its public API only, as a scheduler would
 * drive it. The input is read as a program: a cluster shape (models, MIG
 * memory per kind, nodes of every GPU mode with static or dynamic MIG
 * layouts, some malformed), a visit order, policies from the registry with
 * parameters and a target workload, a fragmentation meter, then a sequence
 * of operations: place + alloc, release, pick_gpus, hand-made placements,
 * gang placement, set_order, migration plans (defrag) and their
 * application, release/re-alloc round trips, and fit queries. Optionally
 * the cluster's allocator fails its N-th allocation.
 *
 * Checks after every step: lsched_cluster_check passes; a failed call
 * changes nothing (free CPU, memory, GPU milli and MIG instances in use);
 * what a policy places can be allocated; release after alloc restores the
 * state exactly; a migration plan leaves the cluster as it was and, applied,
 * makes the waiting job fit; lsched_next_fit agrees with lsched_fits over
 * the visit order; the fragmentation meter equals lsched_frag_cluster; the
 * MIG totals equal the sum over the GPUs. At the end every job is released,
 * the cluster is back to full capacity and nothing allocated is leaked.
 */
#include "fuzz.h"

#include <libsched/libsched.h>
#include <libsched/migrate.h>
#include <libsched/policy_sdk.h>
#include <string.h>

#define MAX_NODES 12
#define MAX_JOBS 48
#define MAX_PARTS 8
#define MAX_POL 3

/* FUZZ_VERBOSE set in the environment: print the program. */
static int verbose;

/* ------------------------------------------------------------ input */

typedef struct src {
  const uint8_t *p;
  size_t n;
} src;

static unsigned u8(src *s) {
  if (!s->n)
    return 0;
  s->n--;
  return *s->p++;
}
static unsigned u16(src *s) { return u8(s) | u8(s) << 8; }
static uint64_t u64(src *s) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)u8(s) << (8 * i);
  return v;
}
static unsigned pick(src *s, unsigned n) { return n ? u8(s) % n : 0; }

/* ------------------------------------------------- failing allocator */

typedef struct fail_alloc {
  long calls, fail_at, live;
} fail_alloc;

static void *fa_alloc(size_t n, void *user) {
  fail_alloc *a = user;
  if (++a->calls == a->fail_at)
    return NULL;
  void *p = malloc(n);
  a->live += p != NULL;
  return p;
}
static void *fa_realloc(void *p, size_t n, void *user) {
  fail_alloc *a = user;
  if (!p)
    return fa_alloc(n, user);
  if (++a->calls == a->fail_at)
    return NULL;
  return realloc(p, n);
}
static void fa_free(void *p, void *user) {
  fail_alloc *a = user;
  if (p) {
    a->live--;
    free(p);
  }
}

/* ---------------------------------------------------------- snapshot */

typedef struct snap {
  int n;
  int64_t cpu[MAX_NODES], mem[MAX_NODES];
  int gpu[MAX_NODES][LSCHED_MAX_GPUS_PER_NODE];
  /* MIG GPUs: the slots of the instances in use and their kinds. */
  unsigned slots_used[MAX_NODES][LSCHED_MAX_GPUS_PER_NODE];
  int used_kinds[MAX_NODES][LSCHED_MAX_GPUS_PER_NODE];
} snap;

static void take(const lsched_cluster *c, snap *s) {
  memset(s, 0, sizeof *s);
  s->n = lsched_cluster_node_count(c);
  for (int i = 0; i < s->n; i++) {
    lsched_node_info ni;
    FUZZ_CHECK(lsched_cluster_node_info(c, i, &ni) == LSCHED_OK, "info");
    s->cpu[i] = ni.cpu_free;
    s->mem[i] = ni.memory_free;
    /* The bulk read agrees with the per-GPU one (checked below). */
    int bulk[LSCHED_MAX_GPUS_PER_NODE];
    FUZZ_CHECK(lsched_cluster_gpus_free(c, i, bulk, LSCHED_MAX_GPUS_PER_NODE) ==
                   ni.gpu_count,
               "gpus_free count");
    for (int g = 0; g < ni.gpu_count; g++) {
      s->gpu[i][g] = lsched_cluster_gpu_free(c, i, g);
      FUZZ_CHECK(s->gpu[i][g] >= 0 && s->gpu[i][g] <= 1000, "gpu free %d",
                 s->gpu[i][g]);
      FUZZ_CHECK(bulk[g] == s->gpu[i][g], "gpus_free %d vs %d", bulk[g],
                 s->gpu[i][g]);
      lsched_mig_gpu_state ms;
      if (ni.gpu_mode == LSCHED_GPU_MIG &&
          lsched_mig_gpu_get(c, i, g, &ms) == LSCHED_OK) {
        s->slots_used[i][g] = ms.slots_used;
        for (int k = 0; k < ms.ninstances; k++)
          if (ms.in_use[k])
            s->used_kinds[i][g] =
                s->used_kinds[i][g] * 7 + ms.instances[k].kind;
      }
    }
  }
}

static void same_state(const lsched_cluster *c, const snap *before,
                       const char *what) {
  snap now;
  take(c, &now);
  FUZZ_CHECK(memcmp(before, &now, sizeof now) == 0,
             "%s changed the cluster's state", what);
}

static void check_cluster(const lsched_cluster *c) {
  FUZZ_CHECK(lsched_cluster_check(c) == LSCHED_OK, "invariants: %s",
             lsched_cluster_errmsg(c));
  /* The MIG totals are kept incrementally: recount them. */
  lsched_mig_totals mt;
  lsched_mig_totals_get(c, &mt);
  int64_t in_use[LSCHED_MIG_KINDS] = {0}, idle[LSCHED_MIG_KINDS] = {0};
  int64_t slices = 0;
  int gpus = 0;
  for (int i = 0; i < lsched_cluster_node_count(c); i++) {
    lsched_node_info ni;
    lsched_cluster_node_info(c, i, &ni);
    if (ni.gpu_mode != LSCHED_GPU_MIG)
      continue;
    for (int g = 0; g < ni.gpu_count; g++) {
      lsched_mig_gpu_state ms;
      FUZZ_CHECK(lsched_mig_gpu_get(c, i, g, &ms) == LSCHED_OK, "mig get");
      gpus++;
      slices += ms.slices_used;
      for (int k = 0; k < ms.ninstances; k++) {
        int kind = ms.instances[k].kind;
        FUZZ_CHECK(kind >= 1 && kind <= LSCHED_MIG_KINDS, "kind %d", kind);
        if (ms.in_use[k])
          in_use[kind - 1]++;
        else
          idle[kind - 1]++;
      }
    }
  }
  FUZZ_CHECK(mt.gpus == gpus && mt.slices_used == slices &&
                 memcmp(mt.in_use, in_use, sizeof in_use) == 0 &&
                 memcmp(mt.idle, idle, sizeof idle) == 0,
             "MIG totals differ from the GPUs' states");
}

/* ------------------------------------------------------- generators */

static int64_t amount(src *s, int64_t unit) {
  switch (pick(s, 8)) {
  case 0:
    return 0;
  case 1:
    return unit;
  case 2:
    return 8 * unit;
  case 3:
    return 64 * unit;
  case 4:
    return (int64_t)u16(s) * unit / 16;
  case 5:
    return INT64_C(1) << 40; /* the node limit */
  case 6:
    return (int64_t)(u64(s) >> 1); /* anything, often over the limit */
  default:
    return -(int64_t)u8(s); /* negative: malformed */
  }
}

static lsched_request gen_request(src *s, int nmodels) {
  lsched_request r = LSCHED_REQUEST_INIT;
  unsigned v = pick(s, 16);
  r.version = v == 0 ? 1 : v == 1 ? 0 : v == 2 ? 3 : 2;
  r.cpu_milli = amount(s, 1000);
  r.memory_mib = amount(s, 1024);
  static const int counts[] = {0, 1, 1, 1, 2, 2, 4, 8, 16, 3, 64, -1};
  r.gpu_count = counts[pick(s, sizeof counts / sizeof counts[0])];
  static const int milli[] = {1000, 1000, 500, 250, 1, 999, 0, 1001};
  r.gpu_milli = r.gpu_count ? milli[pick(s, sizeof milli / sizeof milli[0])]
                            : (pick(s, 8) == 0 ? 5 : 0);
  if (pick(s, 3) == 0)
    r.model_mask = u64(s) & ((UINT64_C(1) << (nmodels + 1)) - 1);
  r.priority = (int)pick(s, 4);
  if (pick(s, 4) == 0) {
    r.mig_kind = (int)pick(s, 8); /* 7: malformed */
    r.mig_compute_milli = (int)(u16(s) % 1100);
    r.mig_memory_mib = pick(s, 2) ? 0 : (int64_t)u16(s) * 4;
    if (r.mig_kind == 0 && pick(s, 2))
      r.mig_compute_milli = 0, r.mig_memory_mib = 0;
  }
  return r;
}

static const lsched_mig_instance layouts[][LSCHED_MIG_MAX_INSTANCES] = {
    {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {1, 6}},
    {{3, 0}, {1, 2}, {1, 3}, {4, 4}},
    {{6, 0}},
    {{5, 0}, {2, 4}, {1, 6}},
    {{4, 0}, {4, 4}},
};
static const int layout_n[] = {7, 4, 1, 3, 2};

/* ------------------------------------------------------------- jobs */

typedef struct job {
  lsched_request req;
  lsched_placement parts[MAX_PARTS];
  int nparts, moves;
  int hand; /* a hand-made placement: no request to move it with */
} job;

/* What a cluster observer saw: per node, the CPU taken by the changes
 * that stay (trial 0) and the net CPU of the trial ones. Between
 * operations the first must equal what the node has in use and the second
 * must be 0 (every trial change is undone before its call returns). */
typedef struct tally {
  int64_t cpu[MAX_NODES], trial_cpu[MAX_NODES];
  int bad_node;
} tally;

static void tally_change(void *user, const lsched_placement *p, int trial,
                         int sign) {
  tally *t = user;
  if (p->node < 0 || p->node >= MAX_NODES) {
    t->bad_node = 1;
    return;
  }
  if (trial)
    t->trial_cpu[p->node] += sign * p->cpu_milli;
  else
    t->cpu[p->node] += sign * p->cpu_milli;
}
static void tally_alloc(void *user, const lsched_cluster *c,
                        const lsched_placement *p, int trial) {
  (void)c;
  tally_change(user, p, trial, 1);
}
static void tally_release(void *user, const lsched_cluster *c,
                          const lsched_placement *p, int trial) {
  (void)c;
  tally_change(user, p, trial, -1);
}
static const lsched_observer tally_ops = {1 /* version-1 table */,
                                          tally_alloc, tally_release, NULL};

/* The observer's tally and the SDK's view against the node reads. */
static void check_tally(const lsched_cluster *c, const tally *t) {
  FUZZ_CHECK(!t->bad_node, "observer saw a placement on a bad node");
  lsched_view v = LSCHED_VIEW_INIT;
  FUZZ_CHECK(lsched_cluster_view(c, &v) == LSCHED_OK, "view");
  for (int i = 0; i < lsched_cluster_node_count(c) && i < MAX_NODES; i++) {
    lsched_node_info ni;
    FUZZ_CHECK(lsched_cluster_node_info(c, i, &ni) == LSCHED_OK, "info");
    FUZZ_CHECK(t->cpu[i] == ni.cpu_milli - ni.cpu_free,
               "observer: node %d has %lld CPU in use, observer saw %lld", i,
               (long long)(ni.cpu_milli - ni.cpu_free), (long long)t->cpu[i]);
    FUZZ_CHECK(t->trial_cpu[i] == 0, "observer: trial changes on node %d "
               "not undone (%lld)", i, (long long)t->trial_cpu[i]);
    const lsched_node *nd = lsched_view_node(&v, i);
    FUZZ_CHECK(nd->cpu_free == ni.cpu_free && nd->mem_free == ni.memory_free &&
                   nd->gpu_free_sum == ni.gpu_milli_free &&
                   nd->gpus_full_free == ni.gpus_fully_free,
               "view of node %d differs from node_info", i);
  }
}

typedef struct world {
  lsched_cluster *c;
  tally seen;
  int observing; /* tally_ops is registered with &seen */
  lsched_policy *pol[MAX_POL];
  int npol;
  int defrag; /* index of a defrag policy, -1 none */
  lsched_fragmeter *meter;
  const lsched_workload *wl;
  job jobs[MAX_JOBS];
  int njobs;
  int nmodels;
} world;

static void release_job(world *w, int j) {
  job *jb = &w->jobs[j];
  for (int k = jb->nparts - 1; k >= 0; k--)
    FUZZ_CHECK(lsched_release(w->c, &jb->parts[k]) == LSCHED_OK,
               "release of an allocated part failed: %s",
               lsched_cluster_errmsg(w->c));
  w->jobs[j] = w->jobs[--w->njobs];
}

/* Allocates p as a new one-part job; failures must change nothing. */
static void alloc_new(world *w, const lsched_request *req,
                      const lsched_placement *p, int must, int hand) {
  snap before;
  take(w->c, &before);
  int rc = lsched_alloc(w->c, p);
  if (rc != LSCHED_OK) {
    FUZZ_CHECK(!must || rc == LSCHED_ENOMEM,
               "a placement the library chose cannot be allocated: %s (%s)",
               lsched_err_name(rc), lsched_cluster_errmsg(w->c));
    same_state(w->c, &before, "a failed alloc");
    return;
  }
  if (w->njobs == MAX_JOBS) { /* no room to remember it: undo */
    FUZZ_CHECK(lsched_release(w->c, p) == LSCHED_OK, "undo");
    same_state(w->c, &before, "alloc then release");
    return;
  }
  job *jb = &w->jobs[w->njobs++];
  memset(jb, 0, sizeof *jb);
  jb->req = *req;
  jb->parts[0] = *p;
  jb->nparts = 1;
  jb->hand = hand;
}

static void op_place(world *w, src *s) {
  lsched_request req = gen_request(s, w->nmodels);
  lsched_policy *p = w->pol[pick(s, (unsigned)w->npol)];
  lsched_placement pl;
  snap before;
  take(w->c, &before);
  int rc = lsched_policy_place(p, &req, &pl);
  same_state(w->c, &before, "lsched_policy_place");
  if (rc != LSCHED_OK) {
    FUZZ_CHECK(rc == LSCHED_ENOFIT || rc == LSCHED_ENEVER ||
                   rc == LSCHED_EINVAL || rc == LSCHED_ENOMEM,
               "place: %s", lsched_err_name(rc));
    /* ENEVER exactly when no node could ever hold it (issue #16). */
    if (rc == LSCHED_ENOFIT || rc == LSCHED_ENEVER)
      FUZZ_CHECK((rc == LSCHED_ENEVER) == !lsched_can_ever_fit(w->c, &req),
                 "place: %s but can_ever_fit %d", lsched_err_name(rc),
                 lsched_can_ever_fit(w->c, &req));
    if (rc == LSCHED_EINVAL)
      FUZZ_CHECK(lsched_request_validate(&req) != LSCHED_OK,
                 "EINVAL for a valid request");
    return;
  }
  FUZZ_CHECK(lsched_request_validate(&req) == LSCHED_OK,
             "a malformed request was placed");
  FUZZ_CHECK(pl.node >= 0 && pl.node < lsched_cluster_node_count(w->c),
             "node %d", pl.node);
  FUZZ_CHECK(lsched_fits(w->c, pl.node, &req),
             "placed on a node that does "
             "not fit (%s)",
             lsched_policy_name(p));
  alloc_new(w, &req, &pl, 1, 0);
}

static void op_pick(world *w, src *s) {
  lsched_request req = gen_request(s, w->nmodels);
  int n = lsched_cluster_node_count(w->c);
  int node = (int)pick(s, (unsigned)n + 1) - (pick(s, 8) == 0);
  lsched_placement pl;
  int rc = lsched_pick_gpus(w->c, node, &req, (lsched_gpu_pick)pick(s, 4), &pl);
  if (rc == LSCHED_OK) {
    FUZZ_CHECK(node >= 0 && node < n, "pick on node %d", node);
    FUZZ_CHECK(lsched_fits(w->c, node, &req), "pick_gpus on a node that "
                                              "does not fit");
    alloc_new(w, &req, &pl, 1, 0);
  }
}

static void op_hand(world *w, src *s) {
  lsched_placement p;
  memset(&p, 0, sizeof p);
  int n = lsched_cluster_node_count(w->c);
  p.node = (int)pick(s, (unsigned)n + 2) - 1;
  p.gpu_count = (int)pick(s, 5);
  static const int milli[] = {1000, 500, 142, 285, 428, 571, 0, 1001};
  p.gpu_milli = milli[pick(s, 8)];
  p.gpu_mask = pick(s, 2) ? (uint64_t)pick(s, 16) : u64(s);
  p.cpu_milli = amount(s, 1000);
  p.memory_mib = amount(s, 1024);
  p.mig_kind = (int)pick(s, 8);
  p.mig_start = (int)pick(s, 9);
  lsched_request req = LSCHED_REQUEST_INIT;
  alloc_new(w, &req, &p, 0, 1);
}

static void op_gang(world *w, src *s) {
  if (w->njobs == MAX_JOBS)
    return;
  lsched_request req = gen_request(s, w->nmodels);
  if (pick(s, 2))
    req.gpu_count = 8 + (int)pick(s, 40), req.gpu_milli = 1000;
  lsched_policy *p = w->pol[pick(s, (unsigned)w->npol)];
  job *jb = &w->jobs[w->njobs];
  memset(jb, 0, sizeof *jb);
  int max_out = 1 + (int)pick(s, MAX_PARTS);
  snap before;
  take(w->c, &before);
  int rc = lsched_place_gang(p, &req, jb->parts, max_out, &jb->nparts);
  if (rc != LSCHED_OK) {
    same_state(w->c, &before, "a failed gang placement");
    return;
  }
  FUZZ_CHECK(jb->nparts >= 1 && jb->nparts <= max_out, "%d parts", jb->nparts);
  int gpus = 0;
  for (int k = 0; k < jb->nparts; k++)
    gpus += jb->parts[k].gpu_count;
  if (req.gpu_count > 0 && jb->nparts > 1)
    FUZZ_CHECK(gpus == req.gpu_count, "gang parts hold %d of %d GPUs", gpus,
               req.gpu_count);
  jb->req = req;
  w->njobs++;
}

static void op_order(world *w, src *s) {
  int n = lsched_cluster_node_count(w->c);
  int order[MAX_NODES + 1];
  for (int i = 0; i < n; i++)
    order[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)pick(s, (unsigned)i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  int bad = n > 0 && pick(s, 6) == 0;
  if (bad)
    order[pick(s, (unsigned)n)] = (int)pick(s, (unsigned)n + 2) - 1;
  if (n == 0)
    return;
  int before[MAX_NODES];
  memcpy(before, lsched_cluster_order(w->c), (size_t)n * sizeof *before);
  int rc = lsched_cluster_set_order(w->c, order, n);
  if (rc != LSCHED_OK) {
    FUZZ_CHECK(memcmp(before, lsched_cluster_order(w->c),
                      (size_t)n * sizeof *before) == 0,
               "a failed set_order changed the order");
    return;
  }
  FUZZ_CHECK(
      memcmp(order, lsched_cluster_order(w->c), (size_t)n * sizeof *order) == 0,
      "set_order did not take the order");
}

/* Field by field: placements may carry padding bytes of any value. */
static int same_placement(const lsched_placement *a,
                          const lsched_placement *b) {
  return a->node == b->node && a->gpu_count == b->gpu_count &&
         a->gpu_milli == b->gpu_milli && a->gpu_mask == b->gpu_mask &&
         a->cpu_milli == b->cpu_milli && a->memory_mib == b->memory_mib &&
         a->mig_kind == b->mig_kind && a->mig_start == b->mig_start;
}

static void op_plan(world *w, src *s) {
  if (w->defrag < 0)
    return;
  lsched_running run[MAX_JOBS];
  int map[MAX_JOBS];
  size_t nrun = 0;
  for (int j = 0; j < w->njobs; j++) {
    job *jb = &w->jobs[j];
    if (jb->hand)
      continue;
    run[nrun].id = (uint64_t)j;
    run[nrun].request = jb->req;
    run[nrun].parts = jb->parts;
    run[nrun].nparts = jb->nparts;
    run[nrun].move_cost_s = (double)pick(s, 100);
    run[nrun].moves = jb->moves;
    map[nrun++] = j;
  }
  lsched_request wait = gen_request(s, w->nmodels);
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  b.max_moves = (int)pick(s, 5);
  b.max_moves_per_job = (int)pick(s, 3);
  b.expected_wait_s = pick(s, 4) ? (double)u16(s) : -1.0;
  lsched_move moves[8];
  size_t nout = 99;
  snap before;
  take(w->c, &before);
  int rc = lsched_policy_plan_migrations(w->pol[w->defrag], &wait, run, nrun,
                                         &b, moves, 1 + pick(s, 8), &nout);
  same_state(w->c, &before, "planning migrations");
  check_cluster(w->c);
  if (rc != LSCHED_OK || nout == 0)
    return;
  /* Apply: every source released, then every target allocated. */
  for (size_t m = 0; m < nout; m++) {
    FUZZ_CHECK(moves[m].index < nrun, "move index");
    job *jb = &w->jobs[map[moves[m].index]];
    FUZZ_CHECK(jb->nparts == 1 && same_placement(&jb->parts[0],
                                                 &moves[m].from),
               "a move's source is not the job's placement");
    FUZZ_CHECK(lsched_release(w->c, &moves[m].from) == LSCHED_OK,
               "releasing a move's source");
  }
  for (size_t m = 0; m < nout; m++) {
    int arc = lsched_alloc(w->c, &moves[m].to);
    FUZZ_CHECK(arc == LSCHED_OK, "a planned target cannot be allocated: %s",
               lsched_err_name(arc));
    job *jb = &w->jobs[map[moves[m].index]];
    jb->parts[0] = moves[m].to;
    jb->moves++;
  }
  check_cluster(w->c);
  if (wait.mig_kind == LSCHED_MIG_NONE)
    FUZZ_CHECK(lsched_next_fit(w->c, &wait, 0) >= 0,
               "the waiting job does not fit after its plan");
}

/* Release every part of a job and allocate them again: the state after
 * must be the state before, and the state in between must be the one
 * without the job (checked through a second round). */
static void op_roundtrip(world *w, src *s) {
  if (!w->njobs)
    return;
  job *jb = &w->jobs[pick(s, (unsigned)w->njobs)];
  snap with, without;
  take(w->c, &with);
  for (int k = jb->nparts - 1; k >= 0; k--)
    FUZZ_CHECK(lsched_release(w->c, &jb->parts[k]) == LSCHED_OK, "release");
  take(w->c, &without);
  for (int k = 0; k < jb->nparts; k++) {
    int rc = lsched_alloc(w->c, &jb->parts[k]);
    FUZZ_CHECK(rc == LSCHED_OK, "re-alloc after release: %s",
               lsched_err_name(rc));
  }
  same_state(w->c, &with, "release then alloc");
  for (int k = jb->nparts - 1; k >= 0; k--)
    FUZZ_CHECK(lsched_release(w->c, &jb->parts[k]) == LSCHED_OK, "release");
  same_state(w->c, &without, "alloc then release");
  for (int k = 0; k < jb->nparts; k++)
    FUZZ_CHECK(lsched_alloc(w->c, &jb->parts[k]) == LSCHED_OK, "re-alloc");
}

static void op_fit(world *w, src *s) {
  lsched_request req = gen_request(s, w->nmodels);
  int n = lsched_cluster_node_count(w->c);
  const int *order = lsched_cluster_order(w->c);
  int from = (int)pick(s, (unsigned)n + 1);
  int first = -1;
  for (int pos = from; pos < n && first < 0; pos++)
    if (lsched_fits(w->c, order[pos], &req))
      first = pos;
  int got = lsched_next_fit(w->c, &req, from);
  FUZZ_CHECK(got == first,
             "next_fit from %d: %d, first fitting position %d (request v%u "
             "cpu %lld mem %lld gpus %d x %d models %llx mig %d/%d/%lld)",
             from, got, first, req.version, (long long)req.cpu_milli,
             (long long)req.memory_mib, req.gpu_count, req.gpu_milli,
             (unsigned long long)req.model_mask, req.mig_kind,
             req.mig_compute_milli, (long long)req.mig_memory_mib);
  if (first >= 0)
    FUZZ_CHECK(lsched_can_ever_fit(w->c, &req), "fits now but never fits");
}

static void op_frag(world *w) {
  if (!w->meter)
    return;
  lsched_frag inc, full;
  lsched_fragmeter_get(w->meter, &inc);
  int rc = lsched_frag_cluster(w->c, w->wl, &full);
  if (rc == LSCHED_ENOMEM)
    return;
  FUZZ_CHECK(rc == LSCHED_OK, "frag_cluster: %s", lsched_err_name(rc));
  FUZZ_CHECK(inc.amount_weighted == full.amount_weighted &&
                 inc.idle_gpu_milli == full.idle_gpu_milli &&
                 inc.weight_total == full.weight_total,
             "fragmentation meter %lld/%lld vs recomputed %lld/%lld",
             (long long)inc.amount_weighted, (long long)inc.idle_gpu_milli,
             (long long)full.amount_weighted, (long long)full.idle_gpu_milli);
}

/* ---------------------------------------------------------- the run */

static void build_nodes(lsched_cluster *c, src *s, int nmodels) {
  int n = 1 + (int)pick(s, MAX_NODES);
  for (int i = 0; i < n; i++) {
    lsched_node_spec sp = LSCHED_NODE_SPEC_INIT;
    char name[16];
    snprintf(name, sizeof name, "n%d", i);
    sp.name = pick(s, 8) ? name : NULL;
    sp.cpu_milli = amount(s, 1000);
    sp.memory_mib = amount(s, 1024);
    static const int gpus[] = {0, 1, 2, 4, 8, 8, 8, 64, 65, 3};
    sp.gpu_count = gpus[pick(s, sizeof gpus / sizeof gpus[0])];
    sp.gpu_model = (int)pick(s, (unsigned)nmodels + 1) - (pick(s, 16) == 0);
    sp.gpu_mode = (lsched_gpu_mode)pick(s, 4); /* 3: malformed */
    if (pick(s, 8) == 0)
      sp.version = 1;
    sp.mig_dynamic = (int)pick(s, 2);
    lsched_mig_instance v[LSCHED_MIG_MAX_INSTANCES];
    unsigned l = pick(s, 7);
    if (l < 5) {
      sp.mig_layout = layouts[l];
      sp.mig_layout_count = layout_n[l];
    } else if (l == 5) {
      int k = (int)pick(s, LSCHED_MIG_MAX_INSTANCES + 1);
      for (int j = 0; j < k; j++)
        v[j].kind = (int)pick(s, 8), v[j].start = (int)pick(s, 9);
      sp.mig_layout = v;
      sp.mig_layout_count = k;
    }
    int id = -7;
    snap before;
    take(c, &before);
    int rc = lsched_cluster_add_node(c, &sp, &id);
    if (verbose) {
      fprintf(stderr,
              "add_node v%u cpu %lld mem %lld gpus %d model %d mode %d "
              "dynamic %d layout",
              sp.version, (long long)sp.cpu_milli, (long long)sp.memory_mib,
              sp.gpu_count, sp.gpu_model, (int)sp.gpu_mode, sp.mig_dynamic);
      for (int j = 0; j < sp.mig_layout_count; j++)
        fprintf(stderr, " %d@%d", sp.mig_layout[j].kind,
                sp.mig_layout[j].start);
      fprintf(stderr, ": %s, id %d\n", lsched_err_name(rc), id);
    }
    if (rc == LSCHED_OK) {
      FUZZ_CHECK(id == before.n, "new node id %d", id);
    } else {
      FUZZ_CHECK(id == -7 || id == -1, "id set on failure");
      same_state(c, &before, "a failed add_node");
    }
    check_cluster(c);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  src s = {data, size};
  verbose = getenv("FUZZ_VERBOSE") != NULL;
  fail_alloc fa = {0, 0, 0};
  if (u8(&s) & 1)
    fa.fail_at = 1 + (long)u16(&s) % 600;
  lsched_allocator al = {fa_alloc, fa_realloc, fa_free, &fa};
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  o.allocator = &al;
  o.check_invariants = (int)pick(&s, 2);
  world w;
  memset(&w, 0, sizeof w);
  w.defrag = -1;
  lsched_registry *reg = NULL;
  lsched_workload *wl = NULL;
  if (lsched_cluster_create(&w.c, &o) != LSCHED_OK)
    goto done;

  w.nmodels = 1 + (int)pick(&s, 4);
  static const char *const models[] = {"A100", "H100", "T4", "V100"};
  for (int m = 0; m < w.nmodels; m++) {
    int id = lsched_cluster_model_id(w.c, models[m], 1);
    if (id < 0) {
      FUZZ_CHECK(id == LSCHED_ENOMEM, "model_id: %s", lsched_err_name(id));
      goto done;
    }
    FUZZ_CHECK(id == m, "model id %d", id);
    if (pick(&s, 2)) {
      int64_t mem[LSCHED_MIG_KINDS];
      static const int64_t gib[] = {0, 4864, 9728, 19968, 40192, 80640};
      for (int k = 0; k < LSCHED_MIG_KINDS; k++)
        mem[k] = pick(&s, 4) ? gib[k] : gib[pick(&s, 6)];
      int rc = lsched_mig_set_model_memory(w.c, id, mem);
      FUZZ_CHECK(rc == LSCHED_OK || rc == LSCHED_EINVAL || rc == LSCHED_ENOMEM,
                 "set_model_memory: %s", lsched_err_name(rc));
    }
  }
  build_nodes(w.c, &s, w.nmodels);
  op_order(&w, &s);
  {
    int orc = lsched_cluster_add_observer(w.c, &tally_ops, &w.seen);
    FUZZ_CHECK(orc == LSCHED_OK || orc == LSCHED_ENOMEM, "add_observer: %s",
               lsched_err_name(orc));
    w.observing = orc == LSCHED_OK;
  }

  if (lsched_registry_create(&reg, &al) != LSCHED_OK ||
      lsched_registry_add_builtins(reg) != LSCHED_OK)
    goto done;
  if (lsched_workload_create(&wl, &al) != LSCHED_OK)
    goto done;
  int ntypes = 1 + (int)pick(&s, 4);
  for (int i = 0; i < ntypes; i++) {
    lsched_task_type t;
    memset(&t, 0, sizeof t);
    t.cpu_milli = (int64_t)pick(&s, 8) * 1000;
    t.gpu_count = (int)pick(&s, 3);
    static const int milli[] = {1000, 500, 250, 100};
    t.gpu_milli = t.gpu_count ? milli[pick(&s, 4)] : 0;
    t.model_mask = pick(&s, 3) ? 0 : (uint64_t)pick(&s, 16);
    t.weight = 1 + pick(&s, 100);
    int rc = lsched_workload_add(wl, &t);
    FUZZ_CHECK(rc == LSCHED_OK || rc == LSCHED_ENOMEM, "workload_add: %s",
               lsched_err_name(rc));
  }
  w.wl = wl;
  w.npol = 1 + (int)pick(&s, MAX_POL);
  size_t nreg = lsched_registry_count(reg);
  for (int i = 0; i < w.npol; i++) {
    const lsched_policy_ops *ops =
        lsched_registry_at(reg, pick(&s, (unsigned)nreg));
    int rc = lsched_policy_create(&w.pol[i], w.c, ops);
    if (rc != LSCHED_OK) {
      FUZZ_CHECK(rc == LSCHED_ENOMEM, "policy_create %s: %s", ops->name,
                 lsched_err_name(rc));
      w.npol = i;
      goto done;
    }
    char seed[24];
    snprintf(seed, sizeof seed, "%u", u16(&s));
    lsched_policy_set_param(w.pol[i], "seed", seed);
    if (strcmp(ops->name, "defrag") == 0) {
      w.defrag = i;
      lsched_policy_set_param(
          w.pol[i], "base",
          lsched_registry_at(reg, pick(&s, (unsigned)nreg))->name);
    }
    lsched_policy_set_workload(w.pol[i], wl);
  }
  if (pick(&s, 2) && lsched_fragmeter_create(&w.meter, w.c, wl) != LSCHED_OK)
    w.meter = NULL;
  check_cluster(w.c);

  /* FUZZ_VERBOSE=1 in the environment prints the operations (to read a
   * crashing input: fuzz_replay_libsched FILE). */
  static const char *const opnames[] = {
      "place", "place", "place", "release",   "pick", "hand",
      "gang",  "order", "plan",  "roundtrip", "fit",  "frag"};
  for (int step = 0; step < 400 && s.n > 0; step++) {
    unsigned op = pick(&s, 12);
    if (verbose)
      fprintf(stderr, "step %d: %s (%d jobs)\n", step, opnames[op], w.njobs);
    switch (op) {
    case 0:
    case 1:
    case 2:
      op_place(&w, &s);
      break;
    case 3:
      if (w.njobs)
        release_job(&w, (int)pick(&s, (unsigned)w.njobs));
      break;
    case 4:
      op_pick(&w, &s);
      break;
    case 5:
      op_hand(&w, &s);
      break;
    case 6:
      op_gang(&w, &s);
      break;
    case 7:
      op_order(&w, &s);
      break;
    case 8:
      op_plan(&w, &s);
      break;
    case 9:
      op_roundtrip(&w, &s);
      break;
    case 10:
      op_fit(&w, &s);
      break;
    default:
      op_frag(&w);
      break;
    }
    check_cluster(w.c);
    if (w.observing)
      check_tally(w.c, &w.seen);
  }
  while (w.njobs)
    release_job(&w, w.njobs - 1);
  check_cluster(w.c);
  op_frag(&w);
  lsched_totals t;
  lsched_cluster_totals(w.c, &t);
  FUZZ_CHECK(t.cpu_free == t.cpu_milli && t.memory_free == t.memory_mib &&
                 t.gpu_milli_free == t.gpu_milli,
             "not back to full capacity after releasing every job");
  if (w.observing) {
    check_tally(w.c, &w.seen);
    FUZZ_CHECK(lsched_cluster_remove_observer(w.c, &tally_ops, &w.seen) ==
                   LSCHED_OK,
               "remove_observer");
  }
done:
  lsched_fragmeter_destroy(w.meter);
  for (int i = 0; i < w.npol; i++)
    lsched_policy_destroy(w.pol[i]);
  lsched_registry_destroy(reg);
  lsched_workload_destroy(wl);
  lsched_cluster_destroy(w.c);
  FUZZ_CHECK(fa.live == 0, "%ld allocations leaked", fa.live);
  return 0;
}
