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

#include <libsched/libsched.h>

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
/* Now (no mark when l is NULL). */
sim_rlog_mark sim_rlog_now(sim_rlog *l);
/* The nodes released on since m, in order: their count with *nodes
 * pointing at them (valid until the next release), or -1 when not known
 * (no mark, a node changed since, more than SIM_RLOG_TEST, NULL l). */
int sim_rlog_since(const sim_rlog *l, sim_rlog_mark m, const uint32_t **nodes);
/* 1 when m is known and no node released on since fits req (then *m moves
 * to now: what was tested need not be tested again), else 0. */
int sim_rlog_none_fits(sim_rlog *l, sim_rlog_mark *m, const lsched_cluster *c,
                       const lsched_request *req);

/* The log as it is at one time, to ask sim_rlog_none_fits of many marks
 * with no release in between (skip asks it of every queued shape when a
 * release opens an epoch: queue_index.c open_merge), without a call per
 * mark. */
typedef struct sim_rlog_view {
  const uint32_t *node; /* the log's entries, valid until a release */
  sim_rlog_mark now;    /* gen 0: no log */
} sim_rlog_view;

/* The log now; its mark is taken (as sim_rlog_now). */
sim_rlog_view sim_rlog_look(sim_rlog *l);

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
  for (uint32_t i = m->at; i < v->now.at; i++)
    if (lsched_fits(c, (int)v->node[i], req))
      return 0;
  *m = v->now;
  return 1;
}

#endif
