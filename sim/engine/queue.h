/*
 * Queue disciplines: which waiting job the engine tries next, and what a
 * blocked job does to the others. Each discipline is one table of
 * operations in its own file (queue_fifo.c, queue_skip.c,
 * queue_backfill.c, queue_priority.c), listed once in queue.c; the loop
 * calls ops->pass once per event time and knows no discipline by name.
 *
 * A new discipline: a sim_queue_kind value (engine.h), a file with its
 * table, and one line in queue.c's list.
 */
#ifndef SCHEDSIM_QUEUE_H
#define SCHEDSIM_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

struct sim_engine;
struct slot;

/* Jobs keep their first reservation (slot.reserved_us; sim_result and
 * sim_job_out report it). */
#define SIM_QUEUE_RESERVES 1u

typedef struct sim_queue_ops {
  const char *name;    /* as --queue takes it */
  sim_queue_kind kind; /* sim_options.queue */
  unsigned flags;      /* SIM_QUEUE_* */
  /* Where an arrival goes: an offset in [0, qlen] from the head. NULL: at
   * the end (arrival order). */
  size_t (*insert_pos)(const struct sim_engine *e, const struct slot *s);
  /* One scheduling pass: starts the queued jobs the discipline lets start
   * now (try_start, or place_job + start_running), removing them
   * from the queue. 0, or -1 with the engine's err set. */
  int (*pass)(struct sim_engine *e);
} sim_queue_ops;

extern const sim_queue_ops sim_queue_fifo, sim_queue_skip, sim_queue_backfill,
    sim_queue_priority;

/* Every discipline, in sim_queue_kind order. */
size_t sim_queue_count(void);
const sim_queue_ops *sim_queue_at(size_t i);
/* By name or kind; NULL if there is none. */
const sim_queue_ops *sim_queue_find(const char *name);
const sim_queue_ops *sim_queue_of(sim_queue_kind kind);

/* Head-of-line blocking (fifo, priority, and backfill's head): starts jobs
 * from the head while they fit. */
int sim_queue_pass_head(struct sim_engine *e);

/* The queue storage (queue.c; the inline insertion is in
 * engine_internal.h). Makes room for one more entry at the end when the
 * array is full: moves the live entries to the front when the head has
 * advanced, else grows. 0, or -1 when out of memory. */
int queue_room(struct sim_engine *e);
/* A preempted job goes right behind the head (it resumes before later
 * arrivals). 0, or -1 when out of memory. */
int queue_add_behind_head(struct sim_engine *e, uint32_t sl);

/* The queued job in slot sl leaves the queue without starting (it went
 * to a cloud site: cloud.c); the next pass retries every job. */
void queue_remove(struct sim_engine *e, uint32_t sl);

/* The queue indexed by request shape (queue_index.c: why it decides as
 * the plain pass, and its costs), for skip and backfill. */
struct queue_index;
/* 1 if the run uses the index (opened on the first call), 0 if it takes
 * the plain pass (sim_options.queue_plain, or a part that rewrites
 * requests), -1 when out of memory (err set). */
int queue_index_on(struct sim_engine *e);
void queue_index_free(struct sim_engine *e);
/* queue_insert with the index on. 0, or -1 when out of memory. */
/* A hint: slot sl is about to be queued (the next arrival takes it): its
 * link in the index, written then, is asked of the memory system. */
void queue_index_prefetch(const struct sim_engine *e, uint32_t sl);
int queue_index_insert(struct sim_engine *e, uint32_t sl, size_t pos);
/* Entries of e->queue from e->qhead: e->qlen, or more with the index on,
 * whose started jobs leave tombstones (UINT32_MAX) in the array. */
size_t queue_span(const struct sim_engine *e);
size_t queue_index_span(const struct sim_engine *e);
/* queue_remove with the index on. */
void queue_index_remove(struct sim_engine *e, uint32_t sl);
/* The queued job in slot sl started outside a pass (preempt.c): it
 * leaves the index and the queue (a tombstone; positions stay; unlike
 * queue_index_remove no tidy and no queued hook: starting ran that).
 * Then queue_index_tidy once, to keep the head on a live job. */
void queue_index_drop(struct sim_engine *e, uint32_t sl);
void queue_index_tidy(struct sim_engine *e);
/* skip's pass over the index. 0, or -1 with err set. */
int queue_index_pass_skip(struct sim_engine *e);
/* A backfill candidate j behind head h: 2 started, 1 fits now but may not
 * start (it would delay the head), 0 does not fit, -1 error (err set). */
typedef int (*queue_candidate_fn)(struct sim_engine *e, uint32_t h,
                                  uint32_t j);
/* backfill's pass over the index: the head as sim_queue_pass_head, then
 * (when the queue changed and holds a candidate) prepare (the head's
 * reservation) and each candidate in queue order. 0, or -1 with err set. */
int queue_index_pass_backfill(struct sim_engine *e, queue_candidate_fn try_candidate,
                              int (*prepare)(struct sim_engine *e));

#endif
