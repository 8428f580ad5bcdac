/*
 * libsched migration planning: which running jobs to move so that a waiting
 * job fits. Part of the libsched public interface (see libsched.h for the
 * conventions: errors, ownership, thread safety).
 */
#ifndef LIBSCHED_MIGRATE_H
#define LIBSCHED_MIGRATE_H

#include <libsched/libsched.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A running job as the host sees it, offered to the planner. Only jobs with
 * exactly one part (placed on one node) can be moved.
 * - id: the host's identifier, returned unchanged in plans.
 * - request: what the job asked for; a move places it anew with it.
 * - parts/nparts: where it runs now (owned by the host).
 * - move_cost_s: what moving it costs in seconds of its own progress
 *   (checkpoint + transfer + restart), from the host's cost model.
 * - moves: how often it has been moved already (for the per-job budget).
 * Start from LSCHED_RUNNING_INIT (a version outside 1..current is read as
 * 1; every element of one array has the same layout).
 */
#define LSCHED_RUNNING_VERSION 1
typedef struct lsched_running {
  unsigned version;
  uint64_t id;
  lsched_request request; /* what it asked for (models, shares) */
  const lsched_placement *parts;
  int nparts;
  double move_cost_s;
  int moves;
} lsched_running;
#define LSCHED_RUNNING_INIT                                                    \
  {LSCHED_RUNNING_VERSION, 0, LSCHED_REQUEST_INIT, NULL, 0, 0.0, 0}

#define LSCHED_DEFRAG_BUDGET_VERSION 1
/**
 * Limits of one planning decision. Append-only; zero means default.
 * - max_moves: at most this many jobs moved (default 2).
 * - max_moves_per_job: a job already moved this often is never moved again
 *   (default 1).
 * - expected_wait_s: how long the waiting job would wait without any move
 *   (the host's estimate; a plan is only made when the moved jobs' lost
 *   GPU-seconds, sum of move_cost_s x GPUs, are below expected_wait_s x the
 *   waiting job's GPUs). Negative = unknown: no plan.
 */
typedef struct lsched_defrag_budget {
  unsigned version;
  int max_moves;
  int max_moves_per_job;
  double expected_wait_s;
} lsched_defrag_budget;
#define LSCHED_DEFRAG_BUDGET_INIT {LSCHED_DEFRAG_BUDGET_VERSION, 0, 0, -1.0}

#define LSCHED_MOVE_VERSION 1
/** One planned move: running[index] goes from `from` to `to`. The planner
 * sets version (LSCHED_MOVE_VERSION) on every move it writes. */
typedef struct lsched_move {
  unsigned version;
  size_t index;
  lsched_placement from;
  lsched_placement to;
} lsched_move;
#define LSCHED_MOVE_INIT                                                       \
  {LSCHED_MOVE_VERSION, 0, LSCHED_PLACEMENT_INIT, LSCHED_PLACEMENT_INIT}

/**
 * Asks policy p for a plan that makes room for `waiting`. Apply it by
 * releasing every move's `from`, then allocating every move's `to` (a
 * target may use room another moved job frees; releasing first never
 * over-commits, and the targets were planned with the waiting job's room
 * held back, so every allocation succeeds); afterwards `waiting` fits. The cluster is unchanged on
 * return (planning may allocate and release internally and restores the
 * state exactly). Returns LSCHED_OK with *nout moves (0 when waiting
 * already fits), LSCHED_ENOFIT when no plan within the budget exists,
 * LSCHED_ENOENT when the policy does not plan migrations, LSCHED_EINVAL.
 */
LSCHED_API int lsched_policy_plan_migrations(
    lsched_policy *p, const lsched_request *waiting,
    const lsched_running *running, size_t nrunning,
    const lsched_defrag_budget *budget, lsched_move *out, size_t max_out,
    size_t *nout);

/**
 * A running index: the host's running jobs kept by position, updated as
 * jobs start, finish and move, and bucketed by node so that a planner
 * reaches a node's jobs without a pass over all of them
 * (lsched_policy_plan_migrations_indexed()). Position i holds what
 * running[i] would hold in the array given to
 * lsched_policy_plan_migrations(); an empty position holds a job that is
 * never moved (nparts 0). Not thread-safe; one index per host.
 */
typedef struct lsched_running_index lsched_running_index;

/** Creates an empty index for cluster c (its allocator, its nodes at each
 * update: nodes added later are reached too). LSCHED_OK, LSCHED_EINVAL,
 * LSCHED_ENOMEM. */
LSCHED_API int lsched_running_index_create(lsched_running_index **out,
                                           const lsched_cluster *c);
LSCHED_API void lsched_running_index_destroy(lsched_running_index *ix);
/**
 * Position i now holds a copy of *r (its request and its parts: r->parts
 * may be NULL when r->nparts != 1, as for a job the host never moves).
 * LSCHED_EINVAL when nparts < 0, nparts == 1 without parts, or a NaN
 * move_cost_s; LSCHED_ENOMEM (the position is then empty).
 */
LSCHED_API int lsched_running_index_set(lsched_running_index *ix, size_t i,
                                        const lsched_running *r);
/** Position i is empty again (LSCHED_OK also when it was). */
LSCHED_API int lsched_running_index_clear(lsched_running_index *ix, size_t i);
/**
 * The positions as an array of *n records (n: one past the last non-empty
 * position; empty ones have nparts 0): what the array call would be given.
 * Valid until the next change of the index.
 */
LSCHED_API const lsched_running *
lsched_running_index_entries(const lsched_running_index *ix, size_t *n);
/**
 * The positions of the one-part jobs on node `node` (*k of them), cheapest
 * to move first: by move_cost_s x GPUs held (gpu_count x gpu_milli /
 * 1000), then by position. NULL with *k = 0 when there are none. Valid
 * until the next change of the index.
 */
LSCHED_API const size_t *
lsched_running_index_node(const lsched_running_index *ix, int node, size_t *k);

/**
 * Per node, a counter that changes whenever the node's jobs in ix change
 * (a position on it set or cleared, also to change its moves or its
 * position), for a planner that keeps what it learnt about a node until
 * then: *n counters; a node >= *n has never held a job. Valid until the
 * next change of the index.
 */
LSCHED_API const uint64_t *
lsched_running_index_stamps(const lsched_running_index *ix, int *n);

/**
 * The index's change log, for a planner that keeps what it learnt about
 * each node and refreshes only the nodes whose jobs changed since it last
 * looked. Every change that moves a node's counter
 * (lsched_running_index_stamps()) is one entry, numbered from 0:
 * lsched_running_index_seq() is the number of entries so far, and
 * lsched_running_index_changed_node(ix, q) the node of entry q, or -1 when
 * q is not kept: q >= seq, or q older than the last max(1024, 2 x nodes)
 * entries, or made before the log last grew with the node count (a reader
 * then looks at every node once). Setting a position to what it already
 * holds changes nothing (no entry). O(1) each; 0 and -1 for NULL.
 */
LSCHED_API uint64_t lsched_running_index_seq(const lsched_running_index *ix);
LSCHED_API int lsched_running_index_changed_node(const lsched_running_index *ix,
                                                 uint64_t q);

/**
 * A counter of c's visit-order changes (lsched_cluster_set_order()), for a
 * planner that keeps nodes sorted by visit position between calls: when it
 * moved, every position may have. 0 for NULL. O(1).
 */
LSCHED_API uint64_t lsched_cluster_order_stamp(const lsched_cluster *c);

/**
 * lsched_policy_plan_migrations() over the jobs of ix: the same plan as
 * the array call given lsched_running_index_entries() (a move's index is
 * a position of ix), found by a policy whose table has
 * plan_migrations_indexed (version 6; defrag's costs what the nodes it
 * tries hold, not all running jobs), else by its plan_migrations over
 * that array. Same return codes.
 */
LSCHED_API int lsched_policy_plan_migrations_indexed(
    lsched_policy *p, const lsched_request *waiting,
    const lsched_running_index *ix, const lsched_defrag_budget *budget,
    lsched_move *out, size_t max_out, size_t *nout);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCHED_MIGRATE_H */
