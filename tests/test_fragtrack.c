/*
 * The incremental stranded-capacity meter (sim/engine/fragtrack.c) against
 * the computation it replaced, kept here as the reference: at every update
 * with a non-empty queue, every node recomputed when the set of queued
 * shapes changed since the last update (or the queue was empty at it), else
 * the nodes allocated on or released from since then; each node's value the
 * free milli of its GPUs below the share of the first queued shape (ascending
 * share, then shape id) that fits it, all its free milli when none does, 0
 * for MIG nodes and nodes without GPUs (fragtrack.h). Random clusters of
 * shared, exclusive and MIG nodes and random sequences of allocations,
 * releases, queue entries and exits and node state changes (cordon, drain,
 * uncordon: reported to the meter as node changes, which the reference sees
 * only at its next full recomputation); after every update the stranded
 * figure must be the reference's, exactly, and the fragmentation amount and
 * rate those of lsched_frag_cluster over the whole cluster (the meter is
 * read only after a node changed). By hand: a node alone in its class
 * whose class takes its new states in place, then joins another class.
 * At the replays' updates the release log's fit test read from the node
 * records (rlog.h sim_rlog_fits_node) against lsched_fits on every node.
 */
#include "cluster_spec.h"
#include "fragtrack.h"
#include "request.h"
#include "rlog.h"
#include "testutil.h"
#include "trace.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 160
#define NSHAPES 14
#define MAXLIVE 400

struct rng {
  uint64_t s;
};

static uint64_t rnext(struct rng *r) {
  uint64_t x = r->s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  r->s = x;
  return x * UINT64_C(0x2545F4914F6CDD1D);
}

static int rbelow(struct rng *r, int n) {
  return n > 0 ? (int)((rnext(r) >> 11) % (uint64_t)n) : 0;
}

/* The reference (the per-node computation before the meter was
 * incremental). */
struct ref {
  lsched_cluster *c;
  int n;
  const lsched_request *req; /* per shape id */
  const uint32_t *queued;    /* per shape id */
  int nshapes;
  int64_t str[MAXN];
  int valid;
};

static int64_t ref_node(const struct ref *r, int i) {
  lsched_node_info ni = LSCHED_NODE_INFO_INIT;
  if (lsched_cluster_node_info(r->c, i, &ni) || ni.gpu_count == 0 ||
      ni.gpu_milli_free == 0)
    return 0;
  if (ni.gpu_mode != LSCHED_GPU_SHARED && ni.gpu_mode != LSCHED_GPU_EXCLUSIVE)
    return 0;
  int dmin = -1, best = -1;
  for (int k = 0; k < r->nshapes; k++) {
    if (!r->queued[k] || !lsched_fits(r->c, i, &r->req[k]))
      continue;
    if (best < 0 || r->req[k].gpu_milli < r->req[best].gpu_milli)
      best = k; /* ascending share, then id */
  }
  if (best >= 0)
    dmin = lsched_effective_milli(r->c, i, &r->req[best]);
  if (dmin < 0)
    return ni.gpu_milli_free;
  int fm[LSCHED_MAX_GPUS_PER_NODE];
  int ng = lsched_cluster_gpus_free(r->c, i, fm, LSCHED_MAX_GPUS_PER_NODE);
  int64_t s = 0;
  for (int g = 0; g < ng; g++)
    if (fm[g] > 0 && fm[g] < dmin)
      s += fm[g];
  return s;
}

static int64_t ref_update(struct ref *r, size_t queued, int set_changed,
                          const uint8_t *dirty) {
  int64_t S = 0;
  if (queued == 0) {
    r->valid = 0;
    return 0;
  }
  for (int i = 0; i < r->n; i++) {
    if (set_changed || !r->valid || dirty[i])
      r->str[i] = ref_node(r, i);
    S += r->str[i];
  }
  r->valid = 1;
  return S;
}

static lsched_request shape_req(struct rng *r, job_record *jr) {
  static const int shares[] = {100, 200, 250, 500, 700, 1000};
  memset(jr, 0, sizeof *jr);
  jr->cpu_milli = 1000 * rbelow(r, 9);
  jr->memory_mib = 1024 * rbelow(r, 9);
  jr->num_gpu = 1 + (rbelow(r, 4) == 0 ? rbelow(r, 4) : 0);
  jr->gpu_milli = jr->num_gpu > 1 ? 1000 : shares[rbelow(r, 6)];
  jr->gpu_spec = rbelow(r, 5) == 0 ? 0 : -1;
  lsched_request q;
  sim_job_request(jr, jr->gpu_spec >= 0 ? UINT64_C(1) << rbelow(r, 2) : 0,
                  &q);
  return q;
}

/* lsched_cluster_node_free (the meter's one accessor) against the calls it
 * replaces, on every node of a replay's cluster. */
static void check_node_free(lsched_cluster *c, int n) {
  for (int i = 0; i < n; i++) {
    lsched_node_free nf = LSCHED_NODE_FREE_INIT;
    lsched_node_info ni = LSCHED_NODE_INFO_INIT;
    int fm[LSCHED_MAX_GPUS_PER_NODE], fw[LSCHED_MAX_GPUS_PER_NODE];
    int ng = lsched_cluster_node_free(c, i, &nf, fm, LSCHED_MAX_GPUS_PER_NODE);
    ck_assert_int_eq(lsched_cluster_node_info(c, i, &ni), 0);
    ck_assert_int_eq(ng, ni.gpu_count);
    ck_assert_int_eq(lsched_cluster_gpus_free(c, i, fw, LSCHED_MAX_GPUS_PER_NODE),
                     ng);
    ck_assert_int_eq(nf.state, lsched_cluster_node_state(c, i));
    ck_assert_int_eq(nf.gpu_model, ni.gpu_model);
    ck_assert_int_eq(nf.gpu_mode, ni.gpu_mode);
    ck_assert(nf.cpu_free == ni.cpu_free && nf.memory_free == ni.memory_free &&
              nf.gpu_milli_free == ni.gpu_milli_free);
    ck_assert(ng == 0 || !memcmp(fm, fw, (size_t)ng * sizeof *fm));
  }
}

/* The node where req fits with the most free GPU milli (lowest id among
 * equals), -1 if none: worst-fit, which spreads jobs over identical nodes
 * and so leaves many nodes in the same state. */
static int worst_node(lsched_cluster *c, int n, const lsched_request *req) {
  int best = -1;
  int64_t bf = -1;
  for (int i = 0; i < n; i++) {
    lsched_node_info ni = LSCHED_NODE_INFO_INIT;
    if (!lsched_fits(c, i, req) || lsched_cluster_node_info(c, i, &ni))
      continue;
    if (ni.gpu_milli_free > bf) {
      bf = ni.gpu_milli_free;
      best = i;
    }
  }
  return best;
}

/* homog 0: random clusters of up to 48 nodes of every kind, jobs placed
 * on random nodes. homog 1: clusters of 64..159 nodes, nearly all of two
 * identical kinds (8 shared GPUs; 8 exclusive GPUs) and a few others,
 * jobs placed worst-fit, and a queue like fifo's behind a blocked head: a
 * whole-node shape that waits nearly always while the smaller shapes,
 * which fit many nodes, come and go. Most nodes then share their state
 * with others (the meter's classes hold many nodes; checked). */
/* The fragmentation figures of an update: those of the whole cluster
 * computed from scratch, exactly (the same integers and divisions). */
static void check_frag(lsched_cluster *c, const sim_fragtrack *f,
                       const fragtrack_values *v) {
  lsched_frag fr;
  ck_assert_int_eq(lsched_frag_cluster(c, fragtrack_workload(f), &fr), 0);
  ck_assert_msg(v->frag_amount == fr.amount && v->frag_rate == fr.rate,
                "frag %.17g/%.17g, from scratch %.17g/%.17g", v->frag_amount,
                v->frag_rate, fr.amount, fr.rate);
}

/* The release log's fit test read from a node's record
 * (rlog.h sim_rlog_fits_node, through the log's view of c) against
 * lsched_fits on every node, for random requests of up to 4 GPUs at any
 * share, CPU-only ones, model masks and MIG kinds: 0 only where
 * lsched_fits says 0; 1 only where it says 1, for plain requests (for a
 * MIG kind 1 means "not known"); -1 only on MIG nodes. */
static void check_fits_node(struct rng *r, lsched_cluster *c, int n,
                            sim_rlog *l) {
  static const int shares[] = {1, 100, 250, 500, 700, 999, 1000};
  sim_rlog_view v = sim_rlog_look(l);
  for (int q = 0; q < 8; q++) {
    lsched_request req = LSCHED_REQUEST_INIT;
    req.cpu_milli = 1000 * rbelow(r, 9);
    req.memory_mib = 1024 * rbelow(r, 9);
    req.gpu_count = rbelow(r, 5);
    req.gpu_milli = req.gpu_count ? shares[rbelow(r, 7)] : 0;
    int m = rbelow(r, 4);
    req.model_mask = m == 0 ? 0 : m == 3 ? 3 : UINT64_C(1) << (m - 1);
    if (req.gpu_count && rbelow(r, 8) == 0) {
      req.mig_kind = 1 + rbelow(r, 3);
      req.gpu_milli = 0;
    }
    for (int i = 0; i < n; i++) {
      int f = sim_rlog_fits_node(v.cv, i, &req), fit = lsched_fits(c, i, &req);
      lsched_node_info ni = LSCHED_NODE_INFO_INIT;
      ck_assert_int_eq(lsched_cluster_node_info(c, i, &ni), 0);
      ck_assert_msg(f < 0    ? ni.gpu_mode == LSCHED_GPU_MIG
                    : f == 0 ? !fit
                             : fit || req.mig_kind,
                    "node %d: %d GPUs x %d (MIG %d), model mask %llu: "
                    "record %d, lsched_fits %d",
                    i, req.gpu_count, req.gpu_milli, req.mig_kind,
                    (unsigned long long)req.model_mask, f, fit);
    }
  }
}

static void replay(uint64_t seed, int homog) {
  struct rng r = {seed * UINT64_C(0x9E3779B97F4A7C15) + 3 + (uint64_t)homog};
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  lsched_cluster *c = NULL;
  ck_assert_int_eq(lsched_cluster_create(&c, &o), 0);
  ck_assert_int_eq(lsched_cluster_model_id(c, "A100", 1), 0);
  ck_assert_int_eq(lsched_cluster_model_id(c, "V100", 1), 1);
  int n = homog ? 64 + rbelow(&r, MAXN - 64) : 8 + rbelow(&r, 40);
  for (int i = 0; i < n; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = 8000 * (1 + rbelow(&r, 4));
    s.memory_mib = 16384 * (1 + rbelow(&r, 2));
    s.gpu_count = rbelow(&r, 6) == 0 ? 0 : 1 + rbelow(&r, 8);
    s.gpu_model = rbelow(&r, 2);
    int m = rbelow(&r, 8);
    s.gpu_mode = m < 5 ? LSCHED_GPU_SHARED
                 : m < 7 ? LSCHED_GPU_EXCLUSIVE
                         : LSCHED_GPU_MIG;
    if (homog && rbelow(&r, 16) != 0) { /* one of the two common kinds */
      s.cpu_milli = 64000;
      s.memory_mib = 262144;
      s.gpu_count = 8;
      s.gpu_model = 0;
      s.gpu_mode =
          rbelow(&r, 4) ? LSCHED_GPU_SHARED : LSCHED_GPU_EXCLUSIVE;
    }
    if (s.gpu_mode == LSCHED_GPU_MIG) {
      s.gpu_model = 0;
      s.mig_dynamic = 1;
    }
    int id = -1;
    ck_assert_int_eq(lsched_cluster_add_node(c, &s, &id), 0);
  }
  sim_cluster sc;
  memset(&sc, 0, sizeof sc);
  sc.c = c;
  sim_fragtrack *f = NULL;
  ck_assert_int_eq(fragtrack_begin(&f, &sc), 0);
  sim_rlog *l = NULL;
  ck_assert_int_eq(sim_rlog_open(&l, c), 0);
  struct rng rq = {seed * UINT64_C(0xD1B54A32D192ED03) + 7}; /* r's draws
                                                                 stay */
  job_record jobs[NSHAPES];
  lsched_request req[NSHAPES];
  for (int k = 0; k < NSHAPES; k++) {
    req[k] = shape_req(&r, &jobs[k]);
    if (homog && k == 0) { /* the head: a whole node */
      jobs[k].num_gpu = 8;
      jobs[k].gpu_milli = 1000;
      jobs[k].cpu_milli = 64000;
      jobs[k].gpu_spec = -1;
      sim_job_request(&jobs[k], 0, &req[k]);
    }
    ck_assert_int_eq(fragtrack_add(f, &jobs[k], req[k].model_mask, 0), 0);
  }
  ck_assert_int_eq(fragtrack_ready(f), 0);
  /* fragtrack's shape ids, and the reference's requests in that order */
  lsched_request byid[NSHAPES];
  uint32_t sid[NSHAPES], queued[NSHAPES] = {0};
  int nids = 0;
  for (int k = 0; k < NSHAPES; k++) {
    sid[k] = fragtrack_shape(f, &jobs[k], req[k].model_mask, 0);
    ck_assert(sid[k] != FRAGTRACK_NO_SHAPE && sid[k] < NSHAPES);
    byid[sid[k]] = req[k];
    if ((int)sid[k] + 1 > nids)
      nids = (int)sid[k] + 1;
  }
  struct ref ref = {c, n, byid, queued, nids, {0}, 0};
  lsched_placement live[MAXLIVE];
  int nlive = 0;
  uint8_t dirty[MAXN] = {0};
  int set_changed = 0;
  size_t nqueued = 0;
  int shared_seen = 0; /* a class held several nodes at an update */
  int nupd = 0;
  for (int step = 0; step < 3000; step++) {
    int what = rbelow(&r, 100);
    if (homog && what >= 60 && what < 90 && rbelow(&r, 8) == 0) {
      /* keep the head queued nearly always */
      uint32_t id = sid[0];
      int delta = queued[id] > 0 && rbelow(&r, 4) == 0 ? -1 : 1;
      if (delta > 0 && queued[id] > 0)
        continue;
      fragtrack_queued(f, id, delta);
      nqueued += (size_t)delta;
      set_changed |= delta > 0 ? queued[id]++ == 0 : --queued[id] == 0;
      continue;
    }
    if (what < 35) { /* place a random shape on a random node it fits */
      int k = rbelow(&r, NSHAPES), node = rbelow(&r, n);
      if (homog) {
        k = 1 + rbelow(&r, NSHAPES - 1);
        node = worst_node(c, n, &req[k]);
        if (node < 0)
          continue;
      }
      lsched_placement p;
      if (nlive < MAXLIVE && lsched_fits(c, node, &req[k]) &&
          lsched_pick_gpus(c, node, &req[k], LSCHED_PICK_TIGHTEST, &p) ==
              LSCHED_OK &&
          lsched_alloc(c, &p) == LSCHED_OK) {
        live[nlive++] = p;
        dirty[node] = 1;
      }
    } else if (what < 60) { /* release */
      if (nlive > 0) {
        int i = rbelow(&r, nlive);
        ck_assert_int_eq(lsched_release(c, &live[i]), 0);
        dirty[live[i].node] = 1;
        live[i] = live[--nlive];
      }
    } else if (what < 90) { /* a job enters or leaves the queue */
      int k = rbelow(&r, NSHAPES);
      uint32_t id = sid[k];
      int delta = queued[id] > 0 && rbelow(&r, 2) ? -1 : 1;
      if (queued[id] == 0 && delta < 0)
        continue;
      fragtrack_queued(f, id, delta);
      if (delta > 0) {
        nqueued++;
        set_changed |= queued[id]++ == 0;
      } else {
        nqueued--;
        set_changed |= --queued[id] == 0;
      }
    } else if (what < 93) { /* node state change (idle or not) */
      int node = rbelow(&r, n);
      static const lsched_node_state st[] = {
          LSCHED_NODE_UP, LSCHED_NODE_CORDONED, LSCHED_NODE_DRAINING};
      ck_assert_int_eq(
          lsched_cluster_set_node_state(c, node, st[rbelow(&r, 3)]), 0);
    } else { /* an update (a timeline point) */
      ck_assert_int_eq(fragtrack_update(f), 0);
      int64_t want = ref_update(&ref, nqueued, set_changed, dirty);
      fragtrack_values v;
      fragtrack_get(f, &v);
      ck_assert_msg(v.stranded_gpu_milli == want,
                    "seed %llu step %d: stranded %lld, reference %lld",
                    (unsigned long long)seed, step,
                    (long long)v.stranded_gpu_milli, (long long)want);
      if (!homog || ++nupd % 16 == 0) /* from scratch: every 16th on big */
        check_frag(c, f, &v);
      if (nqueued > 0)
        set_changed = 0;
      memset(dirty, 0, sizeof dirty);
      if (!homog)
        check_node_free(c, n);
      int ncls = 0, nin = 0;
      fragtrack_classes(f, &ncls, &nin);
      shared_seen |= nin > ncls;
      if (!homog || nupd % 16 == 0)
        check_fits_node(&rq, c, n, l);
    }
  }
  if (homog)
    ck_assert_msg(shared_seen, "seed %llu: no class held two nodes",
                  (unsigned long long)seed);
  sim_rlog_close(l);
  fragtrack_free(f);
  lsched_cluster_destroy(c);
}

START_TEST(node_free_by_hand) {
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  lsched_cluster *c = NULL;
  ck_assert_int_eq(lsched_cluster_create(&c, &o), 0);
  ck_assert_int_eq(lsched_cluster_model_id(c, "A100", 1), 0);
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  s.cpu_milli = 16000;
  s.memory_mib = 65536;
  s.gpu_count = 4;
  s.gpu_model = 0;
  s.gpu_mode = LSCHED_GPU_SHARED;
  int id = -1;
  ck_assert_int_eq(lsched_cluster_add_node(c, &s, &id), 0);
  lsched_placement p = LSCHED_PLACEMENT_INIT;
  p.node = 0;
  p.cpu_milli = 4000;
  p.memory_mib = 1024;
  p.gpu_count = 2;
  p.gpu_milli = 300;
  p.gpu_mask = 0x5; /* GPUs 0 and 2 */
  ck_assert_int_eq(lsched_alloc(c, &p), 0);
  ck_assert_int_eq(lsched_cluster_set_node_state(c, 0, LSCHED_NODE_CORDONED),
                   0);
  lsched_node_free nf = LSCHED_NODE_FREE_INIT;
  int g[4] = {0};
  ck_assert_int_eq(lsched_cluster_node_free(c, 0, &nf, g, 4), 4);
  ck_assert_int_eq(nf.state, LSCHED_NODE_CORDONED);
  ck_assert_int_eq(nf.gpu_count, 4);
  ck_assert_int_eq(nf.gpu_model, 0);
  ck_assert_int_eq(nf.gpu_mode, LSCHED_GPU_SHARED);
  ck_assert(nf.cpu_free == 12000 && nf.memory_free == 64512);
  ck_assert(nf.gpu_milli_free == 700 + 1000 + 700 + 1000);
  ck_assert(g[0] == 700 && g[1] == 1000 && g[2] == 700 && g[3] == 1000);
  /* a short buffer gets the first GPUs; the count is still all of them */
  int g1[1] = {0};
  ck_assert_int_eq(lsched_cluster_node_free(c, 0, &nf, g1, 1), 4);
  ck_assert_int_eq(g1[0], 700);
  ck_assert_int_eq(lsched_cluster_node_free(c, 0, &nf, NULL, 0), 4);
  ck_assert_int_eq(lsched_cluster_node_free(c, 1, &nf, g, 4), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_node_free(c, -1, &nf, g, 4), LSCHED_ENOENT);
  ck_assert_int_eq(lsched_cluster_node_free(c, 0, NULL, g, 4), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_cluster_node_free(c, 0, &nf, NULL, 4), LSCHED_EINVAL);
  ck_assert_int_eq(lsched_release(c, &p), 0);
  ck_assert_int_eq(lsched_cluster_remove_node(c, 0), 0);
  ck_assert_int_eq(lsched_cluster_node_free(c, 0, &nf, g, 4), LSCHED_ENOENT);
  lsched_cluster_destroy(c);
}
END_TEST

/* fragtrack_update, then stranded, classes and nodes in classes as
 * expected (and the fragmentation figures, check_frag). */
static void expect(lsched_cluster *c, sim_fragtrack *f, int64_t stranded,
                   int classes, int nodes) {
  ck_assert_int_eq(fragtrack_update(f), 0);
  fragtrack_values v;
  fragtrack_get(f, &v);
  ck_assert_int_eq(v.stranded_gpu_milli, stranded);
  check_frag(c, f, &v);
  int nc = 0, nn = 0;
  fragtrack_classes(f, &nc, &nn);
  ck_assert_int_eq(nc, classes);
  ck_assert_int_eq(nn, nodes);
}

/* A cluster of n shared nodes of 4 A100 GPUs (cpu milli CPU, 64 GiB) in
 * sc, and a stranded meter begun on it in f. */
static void shared_nodes(int n, int64_t cpu, lsched_cluster **c,
                         sim_cluster *sc, sim_fragtrack **f) {
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  *c = NULL;
  ck_assert_int_eq(lsched_cluster_create(c, &o), 0);
  ck_assert_int_eq(lsched_cluster_model_id(*c, "A100", 1), 0);
  for (int i = 0; i < n; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = cpu;
    s.memory_mib = 65536;
    s.gpu_count = 4;
    s.gpu_model = 0;
    s.gpu_mode = LSCHED_GPU_SHARED;
    int id = -1;
    ck_assert_int_eq(lsched_cluster_add_node(*c, &s, &id), 0);
  }
  memset(sc, 0, sizeof *sc);
  sc->c = *c;
  *f = NULL;
  ck_assert_int_eq(fragtrack_begin(f, sc), 0);
}

/* A job of 1 CPU, 1 GiB and one GPU share of milli, any model. */
static job_record one_gpu_job(int milli) {
  job_record j;
  memset(&j, 0, sizeof j);
  j.cpu_milli = 1000;
  j.memory_mib = 1024;
  j.num_gpu = 1;
  j.gpu_milli = milli;
  j.gpu_spec = -1;
  return j;
}

/* Two shared nodes of 4 GPUs; shapes a (1 GPU x 600) and b (2 GPUs x
 * 1000). Node 0 leaves the class of the idle nodes, changes state three
 * times alone in its class (which takes each new state in place), then
 * returns to the idle class. */
START_TEST(lone_node_class_in_place) {
  lsched_cluster *c = NULL;
  sim_cluster sc;
  sim_fragtrack *f = NULL;
  shared_nodes(2, 16000, &c, &sc, &f);
  job_record ja, jb;
  ja = one_gpu_job(600);
  jb = ja;
  jb.num_gpu = 2;
  jb.gpu_milli = 1000;
  ck_assert_int_eq(fragtrack_add(f, &ja, 0, 0), 0);
  ck_assert_int_eq(fragtrack_add(f, &jb, 0, 0), 0);
  ck_assert_int_eq(fragtrack_ready(f), 0);
  uint32_t a = fragtrack_shape(f, &ja, 0, 0), b = fragtrack_shape(f, &jb, 0, 0);
  ck_assert(a != FRAGTRACK_NO_SHAPE && b != FRAGTRACK_NO_SHAPE && a != b);
  fragtrack_queued(f, b, 1);
  expect(c, f, 0, 1, 2); /* idle nodes: b fits, nothing below 1000 */
  lsched_placement p[3];
  for (int k = 0; k < 3; k++) {
    p[k] = (lsched_placement)LSCHED_PLACEMENT_INIT;
    p[k].node = 0;
    p[k].cpu_milli = 1000;
    p[k].memory_mib = 1024;
    p[k].gpu_count = 1;
    p[k].gpu_milli = 700;
    p[k].gpu_mask = UINT64_C(1) << k;
  }
  ck_assert_int_eq(lsched_alloc(c, &p[0]), 0);
  expect(c, f, 300, 2, 2); /* 1000 1000 1000 300: b fits, 300 below */
  expect(c, f, 300, 2, 2); /* nothing changed: the same figures */
  ck_assert_int_eq(lsched_alloc(c, &p[1]), 0);
  expect(c, f, 600, 2, 2); /* 1000 1000 300 300: in place */
  ck_assert_int_eq(lsched_alloc(c, &p[2]), 0);
  expect(c, f, 1900, 2, 2); /* 1000 300 300 300: b fits no more */
  fragtrack_queued(f, a, 1);
  /* a (share 600) first: node 0 strands 900 below 600, node 1 none */
  expect(c, f, 900, 2, 2);
  /* two releases on node 0 between updates, then the last one: back in
   * the class of node 1, its own deleted */
  ck_assert_int_eq(lsched_release(c, &p[2]), 0);
  ck_assert_int_eq(lsched_release(c, &p[0]), 0);
  expect(c, f, 300, 2, 2); /* 1000 1000 1000 300: a fits, 300 below */
  ck_assert_int_eq(lsched_release(c, &p[1]), 0);
  expect(c, f, 0, 1, 2);
  fragtrack_queued(f, a, -1);
  fragtrack_queued(f, b, -1);
  expect(c, f, 0, 1, 2); /* empty queue: 0 */
  /* a CPU-only job queued: no queued job uses a GPU, every idle milli
   * strands; then queued again after an update with the queue empty,
   * with no node changed and no shape crossed since (the update must not
   * keep the empty queue's 0) */
  fragtrack_queued(f, FRAGTRACK_NO_SHAPE, 1);
  expect(c, f, 8000, 1, 2);
  expect(c, f, 8000, 1, 2); /* nothing changed: the same figures */
  fragtrack_queued(f, FRAGTRACK_NO_SHAPE, -1);
  expect(c, f, 0, 1, 2);
  fragtrack_queued(f, FRAGTRACK_NO_SHAPE, 1);
  expect(c, f, 8000, 1, 2);
  fragtrack_queued(f, FRAGTRACK_NO_SHAPE, -1);
  fragtrack_free(f);
  lsched_cluster_destroy(c);
}
END_TEST

/* The tracker and the release log read the nodes in place through a view
 * of the cluster (node_key, sim_rlog_fits_node), which they take again
 * after every node change: nodes added
 * while it tracks move the cluster's node and GPU arrays (a view kept from
 * before would read freed memory: AddressSanitizer), and the figures after
 * an allocation are still those expected (added nodes are not counted). */
START_TEST(view_after_nodes_added) {
  lsched_cluster *c = NULL;
  sim_cluster sc;
  sim_fragtrack *f = NULL;
  shared_nodes(2, 16000, &c, &sc, &f);
  sim_rlog *l = NULL;
  ck_assert_int_eq(sim_rlog_open(&l, c), 0);
  job_record ja;
  ja = one_gpu_job(600);
  ck_assert_int_eq(fragtrack_add(f, &ja, 0, 0), 0);
  ck_assert_int_eq(fragtrack_ready(f), 0);
  fragtrack_queued(f, fragtrack_shape(f, &ja, 0, 0), 1);
  expect(c, f, 0, 1, 2);
  for (int i = 0; i < 300; i++) {
    lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
    s.cpu_milli = 16000;
    s.memory_mib = 65536;
    s.gpu_count = 8;
    s.gpu_model = 0;
    s.gpu_mode = LSCHED_GPU_SHARED;
    ck_assert_int_eq(lsched_cluster_add_node(c, &s, NULL), 0);
  }
  lsched_placement p = LSCHED_PLACEMENT_INIT;
  p.node = 0;
  p.cpu_milli = 1000;
  p.memory_mib = 1024;
  p.gpu_count = 1;
  p.gpu_milli = 700;
  p.gpu_mask = 0x1;
  ck_assert_int_eq(lsched_alloc(c, &p), 0);
  expect(c, f, 300, 2, 2); /* 300 1000 1000 1000: 300 below 600 */
  p.node = 1;
  ck_assert_int_eq(lsched_alloc(c, &p), 0);
  expect(c, f, 600, 1, 2); /* both nodes in one class */
  /* the release log's view too (sim_rlog_fits_node reads the records) */
  struct rng r = {5};
  check_fits_node(&r, c, 302, l);
  sim_rlog_close(l);
  fragtrack_free(f);
  lsched_cluster_destroy(c);
}
END_TEST

static int cmp_desc(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (y > x) - (y < x);
}

/* The release log (rlog.h): the nodes released on since a mark, in
 * order, unknown before a mark, past 16 entries and after a node change;
 * trial changes are not listed, nor the same node again with no mark
 * since; sim_rlog_none_fits, and through a view. fragtrack_ever: an answer is kept per shape
 * until a node changes. */
START_TEST(released_since_mark) {
  lsched_cluster *c = NULL;
  sim_cluster sc;
  sim_fragtrack *f = NULL;
  shared_nodes(3, 64000, &c, &sc, &f);
  sim_rlog *l = NULL;
  ck_assert_int_eq(sim_rlog_open(&l, c), 0);
  job_record ja;
  ja = one_gpu_job(500);
  ck_assert_int_eq(fragtrack_add(f, &ja, 0, 0), 0);
  ck_assert_int_eq(fragtrack_ready(f), 0);
  uint32_t a = fragtrack_shape(f, &ja, 0, 0);
  const uint32_t *nodes = NULL;
  sim_rlog_mark none = {0, 0};
  ck_assert_int_eq(sim_rlog_since(l, none, &nodes), -1); /* no mark */
  ck_assert_int_eq(sim_rlog_since(NULL, sim_rlog_now(NULL), &nodes), -1);
  ck_assert_int_eq(fragtrack_ever(f, a), -1);
  fragtrack_set_ever(f, a, 1);
  ck_assert_int_eq(fragtrack_ever(f, a), 1);
  ck_assert_int_eq(fragtrack_ever(f, FRAGTRACK_NO_SHAPE), -1);
  lsched_placement p[20];
  for (int k = 0; k < 20; k++) {
    p[k] = (lsched_placement)LSCHED_PLACEMENT_INIT;
    p[k].node = k % 3;
    p[k].cpu_milli = 1000;
    p[k].memory_mib = 1024;
    p[k].gpu_count = 1;
    p[k].gpu_milli = 100;
    p[k].gpu_mask = UINT64_C(1) << (k / 3 % 4);
    ck_assert_int_eq(lsched_alloc(c, &p[k]), 0);
  }
  sim_rlog_mark m = sim_rlog_now(l);
  ck_assert_int_eq(sim_rlog_since(l, m, &nodes), 0);
  ck_assert_int_eq(lsched_release(c, &p[4]), 0); /* node 1 */
  ck_assert_int_eq(lsched_alloc(c, &p[4]), 0);   /* allocations: not listed */
  ck_assert_int_eq(lsched_release(c, &p[2]), 0); /* node 2 */
  ck_assert_int_eq(sim_rlog_since(l, m, &nodes), 2);
  ck_assert_int_eq(nodes[0], 1);
  ck_assert_int_eq(nodes[1], 2);
  /* none_fits: 5 whole GPUs fit no node; 1 x 100 fits node 1 (released
   * on): only the first moves its mark past what it tested */
  lsched_request r5 = LSCHED_REQUEST_INIT, r1 = LSCHED_REQUEST_INIT;
  r5.cpu_milli = r1.cpu_milli = 1000;
  r5.gpu_count = 5;
  r5.gpu_milli = 1000;
  r1.gpu_count = 1;
  r1.gpu_milli = 100;
  sim_rlog_mark m5 = m, m1 = m;
  ck_assert_int_eq(sim_rlog_none_fits(l, &m5, c, &r5), 1);
  ck_assert_int_eq(sim_rlog_since(l, m5, &nodes), 0);
  ck_assert_int_eq(sim_rlog_none_fits(l, &m1, c, &r1), 0);
  ck_assert_int_eq(sim_rlog_since(l, m1, &nodes), 2);
  /* the same answers and marks through a view (nothing released since it
   * was taken); no mark: not known */
  sim_rlog_view v = sim_rlog_look(l);
  sim_rlog_mark v5 = m, v1 = m;
  ck_assert_int_eq(sim_rlog_view_none_fits(&v, &v5, c, &r5), 1);
  ck_assert_int_eq(sim_rlog_since(l, v5, &nodes), 0);
  ck_assert_int_eq(sim_rlog_view_none_fits(&v, &v1, c, &r1), 0);
  ck_assert_int_eq(sim_rlog_since(l, v1, &nodes), 2);
  ck_assert_int_eq(sim_rlog_view_none_fits(&v, &v5, c, &r5), 1);
  ck_assert_int_eq(sim_rlog_view_none_fits(&v, &none, c, &r5), 0);
  v = sim_rlog_look(NULL);
  ck_assert_int_eq(sim_rlog_view_none_fits(&v, &none, c, &r5), 0);
  /* a gang's trial parts, undone: not listed */
  lsched_registry *reg = NULL;
  ck_assert_int_eq(lsched_registry_create(&reg, NULL), 0);
  ck_assert_int_eq(lsched_registry_add_builtins(reg), 0);
  lsched_policy *pol = NULL;
  ck_assert_int_eq(lsched_policy_create_from(&pol, c, reg, "first-fit"), 0);
  lsched_request big = LSCHED_REQUEST_INIT;
  big.cpu_milli = 3000;
  big.gpu_count = 12; /* three whole nodes: no room */
  big.gpu_milli = 1000;
  lsched_placement out[4];
  int nout = 0;
  ck_assert_int_ne(lsched_place_gang(pol, &big, out, 4, &nout), 0);
  ck_assert_int_eq(sim_rlog_since(l, m, &nodes), 2);
  /* past 16 entries: unknown until the next mark (2 + 15; p[5] on node 2
   * right after p[2] is an entry of its own: m5 was moved in between) */
  for (int k = 5; k < 20; k++)
    ck_assert_int_eq(lsched_release(c, &p[k]), 0);
  ck_assert_int_eq(sim_rlog_since(l, m, &nodes), -1);
  v = sim_rlog_look(l);
  ck_assert_int_eq(sim_rlog_view_none_fits(&v, &m, c, &r5), 0);
  m = sim_rlog_now(l);
  ck_assert_int_eq(lsched_release(c, &p[0]), 0);
  ck_assert_int_eq(sim_rlog_since(l, m, &nodes), 1);
  ck_assert_int_eq(nodes[0], 0);
  /* node 0 again with no mark since: the same entry */
  ck_assert_int_eq(lsched_alloc(c, &p[0]), 0);
  ck_assert_int_eq(lsched_release(c, &p[0]), 0);
  ck_assert_int_eq(sim_rlog_since(l, m, &nodes), 1);
  /* a node change: unknown, and every ever answer forgotten */
  ck_assert_int_eq(lsched_cluster_set_node_state(c, 1, LSCHED_NODE_CORDONED),
                   0);
  ck_assert_int_eq(sim_rlog_since(l, m, &nodes), -1);
  ck_assert_int_eq(sim_rlog_none_fits(l, &m, c, &r5), 0);
  v = sim_rlog_look(l);
  ck_assert_int_eq(sim_rlog_view_none_fits(&v, &m, c, &r5), 0);
  ck_assert_int_eq(fragtrack_ever(f, a), -1);
  fragtrack_set_ever(f, a, 0);
  ck_assert_int_eq(fragtrack_ever(f, a), 0);
  lsched_policy_destroy(pol);
  lsched_registry_destroy(reg);
  sim_rlog_close(l);
  fragtrack_free(f);
  lsched_cluster_destroy(c);
}
END_TEST

/* The class key's sort of a node's GPUs against qsort: for 1..12 GPUs,
 * every input of 0s and 1000s (for 8 GPUs that proves the sorting network
 * by the 0-1 principle) and random values with many repeats. */
START_TEST(gpu_sort_against_qsort) {
  struct rng r = {12345};
  for (int ng = 1; ng <= 12; ng++) {
    int cases = ng <= 12 ? 1 << ng : 0;
    for (int it = 0; it < cases + 20000; it++) {
      int fm[LSCHED_MAX_GPUS_PER_NODE], want[LSCHED_MAX_GPUS_PER_NODE];
      int16_t g[LSCHED_MAX_GPUS_PER_NODE];
      for (int j = 0; j < ng; j++) {
        if (it < cases)
          fm[j] = (it >> j & 1) ? 1000 : 0;
        else
          fm[j] = it % 2 ? rbelow(&r, 1001) : 250 * rbelow(&r, 5);
        want[j] = fm[j];
      }
      for (int j = 0; j < LSCHED_MAX_GPUS_PER_NODE; j++)
        g[j] = 77;
      qsort(want, (size_t)ng, sizeof *want, cmp_desc);
      fragtrack_sort_gpus(fm, ng, g);
      for (int j = 0; j < ng; j++)
        ck_assert_msg(g[j] == want[j], "ng %d case %d: g[%d] %d, want %d", ng,
                      it, j, g[j], want[j]);
      for (int j = ng; j < 8; j++) /* the zero padding */
        ck_assert_int_eq(g[j], 0);
    }
  }
}
END_TEST

START_TEST(random_replays) {
  for (uint64_t seed = 1; seed <= 40; seed++)
    replay(seed, 0);
}
END_TEST

START_TEST(identical_nodes_blocked_head) {
  for (uint64_t seed = 1; seed <= 20; seed++)
    replay(seed, 1);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("fragtrack");
  TCase *tc = tcase_create("fragtrack");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, random_replays);
  tcase_add_test(tc, identical_nodes_blocked_head);
  tcase_add_test(tc, node_free_by_hand);
  tcase_add_test(tc, lone_node_class_in_place);
  tcase_add_test(tc, view_after_nodes_added);
  tcase_add_test(tc, gpu_sort_against_qsort);
  tcase_add_test(tc, released_since_mark);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(suite()); }
