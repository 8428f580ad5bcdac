/*
 * Fragmentation in replay mode: the FGD fragmentation amount and rate of the
 * cluster (docs/DESIGN.md section 6, libsched's lsched_fragmeter, with the task
 * types of the trace being replayed as the workload) and the stranded GPU
 * capacity, kept incrementally, plus their time-weighted integrals.
 *
 * Stranded GPU milli (definition): 0 while the queue is empty; otherwise
 * the free milli of every GPU (on shared and exclusive nodes) that no job
 * in the queue could use now, where GPU g of node n is usable by queued job
 * j when j fits n in the current state (CPU, memory, allowed model, enough
 * GPUs with its share free; lsched_fits) and g has at least j's share (1000
 * on exclusive nodes) free. CPU-only jobs use no GPU. So a node that no
 * queued job fits strands all its idle GPU milli, and a node that some do
 * strands the slivers below the smallest share among them. MIG nodes are
 * left out.
 *
 * Cost: the FGD meter updates the changed node on every alloc/release
 * (O(GPUs x shares crossed + types whose CPU need the node holds)).
 * Stranded is kept per class of nodes in the same free state (as
 * lsched_fits and the value see it: up or not, mode, model, the ranks of
 * free CPU and memory among the shapes' needs, the GPUs' free milli
 * sorted), with the class's first fitting queued shape (a bucket per
 * shape): at a timeline point with a queue, each node changed since the
 * last such point moves to the class of its state (a hash look-up; a new
 * class is evaluated: O(queued shapes until the first that fits + log
 * nodes)); with an empty queue nothing is done (the value is 0). When the
 * set of queued shapes changed, a shape that left re-evaluates the
 * classes of its bucket only, and a shape that joined visits only the
 * classes it may fit, found through a tree of per-subtree maxima (free
 * CPU, memory, k-th largest free GPU share, models), so a shape that fits
 * nowhere costs about log nodes and one that fits thousands of identical
 * nodes costs one class. The tree is brought up to date only before a
 * shape joins (the classes that changed since then mark their leaves
 * stale); a node alone in its class takes its class to its new state in
 * place; a queued shape's fit on a class is read from the class's key
 * (lsched_fits only for shapes with node restrictions or MIG kinds); the
 * FGD meter is read only after a node changed, and an update with a
 * queue after no change of a node or of the set does nothing. The values
 * are exactly those of recomputing every node at every change of the set
 * (tests/test_fragtrack.c; build with -DFRAGTRACK_VERIFY to check every
 * node after every update of a run).
 */
#ifndef SCHEDSIM_FRAGTRACK_H
#define SCHEDSIM_FRAGTRACK_H

#include <stdint.h>

#include <libsched/libsched.h>

#include "cluster_spec.h"
#include "trace.h"

typedef struct sim_fragtrack sim_fragtrack;

/* Starts tracking on sc's (idle) cluster: fragtrack_add every job of the
 * trace (one pass, any order), then fragtrack_ready builds the typical
 * workload and the meter. Memory: one entry per distinct request shape,
 * not per job, so a streamed trace needs no per-job state here. Spec
 * masks as the engine resolved them (absent: no allowed model is in the
 * cluster). 0, or -2 out of memory. */
int fragtrack_begin(sim_fragtrack **out, sim_cluster *sc);
int fragtrack_add(sim_fragtrack *f, const job_record *jr, uint64_t spec_mask,
                  int spec_absent);
int fragtrack_ready(sim_fragtrack *f);
void fragtrack_free(sim_fragtrack *f);

/* The shape id of a job added before (FRAGTRACK_NO_SHAPE for CPU-only
 * jobs), for fragtrack_queued. */
#define FRAGTRACK_NO_SHAPE UINT32_MAX
uint32_t fragtrack_shape(const sim_fragtrack *f, const job_record *jr,
                         uint64_t spec_mask, int spec_absent);

/* Whether a job of shape id can ever fit the cluster
 * (lsched_can_ever_fit_gang on its request as sim_job_request builds it),
 * as the caller found it and told fragtrack_set_ever since the last
 * change of any node (the observer sees every add, update, removal and
 * state change; the answer depends only on the request's shape fields and
 * the nodes): 1 or 0, or -1 when not known (no answer yet, a node changed
 * since, NO_SHAPE, or no tracking). The engine asks once per shape instead
 * of once per arriving job (2% of a first-fit replay's instructions).
 * fragtrack_ever is inline, below (once per arriving job). */
void fragtrack_set_ever(sim_fragtrack *f, uint32_t id, int ever);

/* The trace's typical workload (owned by f), for policies such as fgd. */
const lsched_workload *fragtrack_workload(const sim_fragtrack *f);

/* A job of shape id (fragtrack_shape) entered (+1) or left (-1) the
 * queue: inline, below. */

/* Brings the current values up to date (at a point where all events of a
 * time are done); they hold until the next call. 0, or -2 out of memory. */
int fragtrack_update(sim_fragtrack *f);
/* A hint: node is about to change (an allocation or release): its
 * cluster record, the FGD meter's figures of it and its class slot here
 * (read by the next fragtrack_update) are asked of the memory system
 * (addresses only: nothing is read). */
void fragtrack_prefetch(const sim_fragtrack *f, int node);

/* The current values. */
typedef struct fragtrack_values {
  double frag_amount;         /* milli-GPU */
  double frag_rate;           /* 0..1 */
  int64_t stranded_gpu_milli;
} fragtrack_values;
void fragtrack_get(const sim_fragtrack *f, fragtrack_values *out);

/* The classes of nodes in equal free state the stranded value is kept
 * for, and the nodes in them (for tests: nodes > classes when nodes share
 * a state). */
void fragtrack_classes(const sim_fragtrack *f, int *classes, int *nodes);

/* fm[0..ng) (0..1000 each, ng <= 64) sorted descending into g, as a
 * node's class key holds its GPUs (for ng <= 8 g is padded with zeros to
 * 8 entries). Exposed for tests/test_fragtrack.c. */
void fragtrack_sort_gpus(const int *fm, int ng, int16_t *g);

/* The current values and their integrals over time, the queue's counts,
 * the shapes whose count crossed 0 and the fragtrack_ever answers: the
 * first member of the tracker, so that the calls below, per event time
 * and per job, are inline. Private to fragtrack.c and these calls. */
__extension__ typedef __int128 fragtrack_i128;
typedef struct fragtrack_now {
  lsched_frag fr;   /* the meter's figures after the last change */
  int64_t stranded; /* stranded milli at the last update */
  fragtrack_i128 amount_area, stranded_area; /* amount_weighted x us,
                                                milli x us */
  double rate_area;
  fragtrack_i128 amount_done, stranded_done; /* at the last completion */
  double rate_done;
  size_t queued;    /* jobs in the queue (CPU-only included) */
  uint32_t *qcount; /* per shape id: its jobs in the queue */
  uint32_t nq;      /* shape ids counted (0 before fragtrack_ready) */
  uint32_t node_gen; /* bumped by every node change, never 0 */
  uint64_t *ever;    /* per shape id: node_gen << 1 | fragtrack_set_ever's
                      * answer when it was given; 0 never */
  uint8_t *tmark;    /* per shape id: in touched[] */
  uint32_t *touched; /* shapes whose count crossed 0 since the last sync */
  uint32_t ntouched;
  int set_changed; /* some count crossed 0 since the last sync */
} fragtrack_now;

/* fragtrack_ever (above), once per arriving job. */
static inline int fragtrack_ever(const sim_fragtrack *f, uint32_t id) {
  if (!f)
    return -1;
  const fragtrack_now *v = (const fragtrack_now *)(const void *)f;
  if (id >= v->nq) /* FRAGTRACK_NO_SHAPE too; every id before ready */
    return -1;
  uint64_t w = v->ever[id];
  return w >> 1 == v->node_gen ? (int)(w & 1) : -1;
}

/* Time moves on by dt microseconds with the current values. */
static inline void fragtrack_advance(sim_fragtrack *f, int64_t dt) {
  if (!f || dt <= 0)
    return;
  fragtrack_now *v = (fragtrack_now *)(void *)f;
  v->amount_area += (fragtrack_i128)v->fr.amount_weighted * dt;
  v->stranded_area += (fragtrack_i128)v->stranded * dt;
  v->rate_area += v->fr.rate * (double)dt;
}

/* A job completed now: the integrals so far are the ones reported. */
static inline void fragtrack_completed(sim_fragtrack *f) {
  if (!f)
    return;
  fragtrack_now *v = (fragtrack_now *)(void *)f;
  v->amount_done = v->amount_area;
  v->stranded_done = v->stranded_area;
  v->rate_done = v->rate_area;
}
/* Shape id's count of queued jobs crossed 0 (fragtrack_queued): the next
 * update syncs the set. Inline: half the jobs entering or leaving the
 * queue cross (100k@1.2 first-fit backfill). */
static inline void fragtrack_crossed(fragtrack_now *v, uint32_t id) {
  v->set_changed = 1;
  if (!v->tmark[id]) {
    v->tmark[id] = 1;
    v->touched[v->ntouched++] = id;
  }
}

/* Inline: once per job entering and leaving the queue (a call cost 1% of
 * 100k@1.2 first-fit skip). */
static inline void fragtrack_queued(sim_fragtrack *f, uint32_t id, int delta) {
  if (!f)
    return;
  fragtrack_now *v = (fragtrack_now *)(void *)f;
  if (delta > 0)
    v->queued++;
  else if (v->queued > 0)
    v->queued--;
  if (id >= v->nq) /* FRAGTRACK_NO_SHAPE too (never a shape id) */
    return;
  uint32_t *q = &v->qcount[id];
  int crossed = 0;
  if (delta > 0)
    crossed = (*q)++ == 0;
  else if (*q > 0)
    crossed = --*q == 0;
  if (crossed)
    fragtrack_crossed(v, id);
}

/* Time-weighted means over span microseconds (from the first arrival to
 * the last completion); 0 when span is 0. */
void fragtrack_means(const sim_fragtrack *f, double span_us,
                     double *frag_amount_mean, double *frag_rate_mean,
                     double *stranded_mean);

#endif
