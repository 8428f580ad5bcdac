/*
 * The release log: the nodes released on since a mark, kept as a cluster
 * observer. A policy that places a one-part request exactly when some node
 * fits it (policy_fit_answers) cannot place a request that found no node
 * while no node released on since fits it (the others only lost room), so
 * an attempt known to fail is answered by fit tests on those nodes instead
 * of a placement: the queue index's failed shapes (queue_index.c
 * known_nofit) and the blocked head of fifo and priority (queue_fifo.c).
 *
 * Kept releases only (a trial's, undone before the call that made it
 * returns, gains no room); the same node again with no mark taken since its
 * last entry is one entry. A node added, updated, removed or changing state
 * may gain room without a release: every mark taken before is void. The log
 * is cleared (marks void) past SIM_RLOG_MAX entries.
 */
#ifndef SIM_RLOG_H
#define SIM_RLOG_H

#include <libsched/policy_sdk.h>

#include <stdint.h>

/* More releases since a mark than this: not known (ask the policy). */
#define SIM_RLOG_TEST 16

typedef struct sim_rlog sim_rlog;

/* A position in the log; gen 0 is no mark. */
typedef struct sim_rlog_mark {
  uint32_t gen, at;
} sim_rlog_mark;

/* A log observing c: 0, or -1 when out of memory or the observer was
 * refused (*out NULL). */
int sim_rlog_open(sim_rlog **out, lsched_cluster *c);
/* Removes the observer and frees the log (NULL: nothing). */
void sim_rlog_close(sim_rlog *l);
/* Now (no mark when l is NULL): inline, below. */
/* The nodes released on since m, in order: their count with *nodes
 * pointing at them (valid until the next release), or -1 when not known
 * (no mark, a node changed since, more than SIM_RLOG_TEST, NULL l). */
int sim_rlog_since(const sim_rlog *l, sim_rlog_mark m, const uint32_t **nodes);
/* sim_rlog_none_fits(l, m, c, req), inline below: 1 when m is known and
 * no node released on since fits req (then *m moves to now: what was
 * tested need not be tested again), else 0. */

/* The log as it is at one time, to ask sim_rlog_none_fits of many marks
 * with no release in between (skip asks it of every queued shape when a
 * release opens an epoch: queue_index.c open_merge), without a call per
 * mark. */
typedef struct sim_rlog_view {
  const uint32_t *node; /* the log's entries, valid until a release */
  const lsched_view *cv; /* the cluster's nodes */
  sim_rlog_mark now;    /* gen 0: no log */
} sim_rlog_view;

/* sim_rlog_look(l), inline below: the log now; its mark is taken (as
 * sim_rlog_now). */

/* Whether req fits node `node` of view cv, read from the node's record
 * without a call: 0 when lsched_fits answers 0, as it requires
 * (cluster.c node_admits) the node up, its free CPU and memory, and for
 * a request of k GPUs on a node that is not MIG its model allowed and the
 * fit test's GPU rule (lsched_node_gpus_fit with the effective share).
 * 1 when these tests pass: lsched_fits's
 * answer for a well-formed plain request (no MIG kind, no node
 * restrictions: the requests the engine builds without request hooks),
 * else only "not known" (the policy is then asked, and refuses). -1 on a
 * MIG node (lsched_fits tells). The nodes known_nofit tests mostly lack a
 * GPU with the share free or fit: lsched_fits validated the request to
 * say so (~70 and ~130 instructions a call on 100k@1.2 first-fit skip).
 * tests/test_queue_index.c compares the runs with the plain pass, which
 * never asks. */
static inline int sim_rlog_fits_node(const lsched_view *cv, int node,
                                     const lsched_request *req) {
  const lsched_node *nd = lsched_view_node(cv, node);
  if (nd->cpu_free < req->cpu_milli || nd->mem_free < req->memory_mib ||
      nd->state != LSCHED_NODE_UP)
    return 0;
  int k = req->gpu_count;
  if (k <= 0)
    return 1;
  if (nd->mode == LSCHED_GPU_MIG)
    return -1;
  /* (model -1: a node without GPUs, ruled out by the counts below) */
  if (req->model_mask && (unsigned)nd->model < 64 &&
      !(req->model_mask >> nd->model & 1))
    return 0;
  /* The fit test's own GPU rule, with the effective share of a plain
   * node (lsched_node_eff_milli's answer there, without its MIG test). */
  return lsched_node_gpus_fit(
      nd, cv->gpu_free + nd->gpu_off, k,
      nd->mode == LSCHED_GPU_EXCLUSIVE ? LSCHED_GPU_MILLI : req->gpu_milli);
}

/* sim_rlog_none_fits(l, m, c, req), the same answer and mark, while
 * nothing was released since v = sim_rlog_look(l). Inline: a call per
 * shape cost 2% of 100k@1.2 first-fit skip. */
static inline int sim_rlog_view_none_fits(const sim_rlog_view *v,
                                          sim_rlog_mark *m,
                                          const lsched_cluster *c,
                                          const lsched_request *req) {
  if (m->gen != v->now.gen || m->gen == 0 ||
      v->now.at - m->at > SIM_RLOG_TEST)
    return 0;
  if (m->at + 1 == v->now.at) {
    /* One node since m, the usual case (99.99% of 100k@1.2 first-fit
     * skip's): its test without the loop's setup. */
    int n = (int)v->node[m->at], f = sim_rlog_fits_node(v->cv, n, req);
    if (f > 0 || (f < 0 && lsched_fits(c, n, req)))
      return 0;
  } else {
    for (uint32_t i = m->at; i < v->now.at; i++) {
      int n = (int)v->node[i], f = sim_rlog_fits_node(v->cv, n, req);
      if (f > 0 || (f < 0 && lsched_fits(c, n, req)))
        return 0;
    }
  }
  m->at = v->now.at; /* (the generation is the same) */
  return 1;
}

/* The log: private to rlog.c and the inline calls below (sim_rlog_now,
 * sim_rlog_look and sim_rlog_none_fits run at every failed attempt of a
 * skip pass: as calls they cost 1.4% of 100k@1.2 first-fit skip). */
struct sim_rlog {
  lsched_cluster *c;
  lsched_view v; /* c's nodes (sim_rlog_fits_node), taken again on a change */
  uint32_t *node;
  uint32_t n, cap;
  uint32_t noted; /* n at the last mark taken or moved */
  uint32_t gen;   /* marks of another generation are void; never 0 */
};

static inline sim_rlog_mark sim_rlog_now(sim_rlog *l) {
  sim_rlog_mark m = {0, 0};
  if (l) {
    m.gen = l->gen;
    m.at = l->noted = l->n;
  }
  return m;
}

static inline sim_rlog_view sim_rlog_look(sim_rlog *l) {
  sim_rlog_view v = {l ? l->node : NULL, l ? &l->v : NULL, sim_rlog_now(l)};
  return v;
}

static inline int sim_rlog_none_fits(sim_rlog *l, sim_rlog_mark *m,
                                     const lsched_cluster *c,
                                     const lsched_request *req) {
  if (!l)
    return 0;
  /* A view without taking a mark: one is taken only when *m moves. */
  sim_rlog_view v = {l->node, &l->v, {l->gen, l->n}};
  if (!sim_rlog_view_none_fits(&v, m, c, req))
    return 0;
  l->noted = l->n;
  return 1;
}

#endif
