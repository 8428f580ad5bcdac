/*
 * The replay engine's parts, as they see each other (not for the rest of
 * sim/: engine.h is the public surface). The engine is one struct, below,
 * and a set of files that each own a part of it:
 *
 *   loop.c            time, the event heap, arrivals, completions, one
 *                     scheduling pass per event time, the step API
 *   setup.c           opening a run: policy, first pass, parts; closing it
 *   source.c          where jobs come from (a loaded trace or a stream)
 *   slots.c           per-job state, the per-pass request memo, placing,
 *                     starting and re-timing jobs
 *   queue.c, queue.h  the waiting queue and the table of disciplines;
 *                     queue_{fifo,skip,backfill,priority}.c one each
 *   rlog.c, rlog.h    the nodes released on since a mark (attempts known
 *                     to fail: queue_index.c, queue_fifo.c)
 *   reserve.c         EASY reservations
 *   estimate.c        runtime estimates (--estimates, --overrun) and the
 *                     estimate-model part; estimate_model.c the models
 *   migrate.c         migration and preemption of running jobs (a part)
 *   preempt.c         preemption by priority (--preemptible) and the
 *                     per-class figures (--slo, by_class), a part
 *   metrics.c         the reported numbers (docs/DESIGN.md section 6)
 *   outcome.c         a job's final outcome: on_job or the per-job arrays
 *   mig_hooks.c       MIG bookkeeping, as a part behind the hooks below
 *   energy.c          GPU and facility energy, a part in every run
 *   speed.c           work and speed (run time on a placement, sharing
 *                     interference, re-timing co-runners), a part
 *   cloud.c           cloud sites, bursting and spot, a part (wake-ups in
 *                     the event heap, queue_remove)
 *
 * Hooks. Everything that adjusts or observes jobs without being the loop
 * is a part (sim_part_ops): it is asked at setup whether it takes part in
 * the run (the list in setup.c) and then called at fixed points (a job
 * arrives, its request is built, it is queued, placed, started, completes,
 * is handed out; after each scheduling pass; time advances; a timeline
 * row; the results). MIG and migration/preemption are parts; capacity
 * models (cloud sites, pools), estimate models, preemption by priority and
 * per-job speed (on_start/on_finish of co-runners, then slot_retime) plug
 * in the same way without the loop changing. The built-in metrics are called
 * directly at the same points (hook_* below), before the registered parts:
 * every run has them, and the hot path (arrival, completion, a pass over
 * the queue) keeps a direct call where it had one. A run without parts
 * pays one bit test per hook point (engine.hooks), as the former
 * `if (mig)` branches cost one compare.
 */
#ifndef SCHEDSIM_ENGINE_INTERNAL_H
#define SCHEDSIM_ENGINE_INTERNAL_H

#include "engine.h"
#include "fragtrack.h"
#include "heap.h"
#include "pctl.h"
#include "queue.h"
#include "request.h"
#include "rlog.h"

#include <libsched/migrate.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef __int128 sim_i128;

#define US_PER_HOUR 3600000000.0

typedef struct sim_engine engine;

/* ---------------------------------------------------------------- source */

/* Jobs in arrival order: a loaded trace (sorted on the fly when it is not
 * in submit order) or a trace stream read twice. */
typedef struct job_src {
  const trace *t;         /* loaded trace, or NULL */
  uint32_t *order;        /* t's jobs by (submit, index); NULL: file order */
  size_t pos;
  struct trace_stream *s; /* stream, or NULL */
  uint64_t count;         /* jobs handed out in this pass */
  int64_t last_submit;
  int64_t last_line;
} job_src;

/* The trace-wide facts (path, specs) of a source. */
const trace *src_meta(const job_src *src);
/* Next job in arrival order: 1 with *jr, *name and *idx (position in the
 * file) set, 0 at the end, -1 (input) or -2 (out of memory) with err set.
 * A stream must be in submit order: -3 when it is not. */
int src_next(job_src *src, job_record *jr, const char **name, uint64_t *idx,
             char *err, size_t errlen);
/* Back to the first job. 0, or -1/-2 with err set. */
int src_rewind(job_src *src, char *err, size_t errlen);
/* A loaded trace out of submit order gets its arrival order (by submit
 * time, ties in file order). 0, or -1 when out of memory. */
int src_sort(job_src *src);

/* ----------------------------------------------------------------- slots */

/*
 * The state of a job between its arrival and its final outcome. Slots are
 * recycled, so the engine's memory follows the running and queued jobs, not
 * the trace. Events and queues name slots; `gen` changes whenever a slot's
 * pending completion event becomes stale (a move, a preemption, a new
 * occupant), so a stale event is recognised by its tag.
 */
/* Slots are 64-byte aligned (128: SLOT_BASE_ALIGN), and their size a
 * multiple of 64 bytes, so that each part below is one cache line (a
 * million-job replay holds ~13,000 slots, more than the L2 cache; 100,000
 * GPUs ~93,000); what only gangs, moves and preemptions use is apart, in
 * struct slot_x (until session 36 the slot's third line). At 176
 * bytes (the parts' own size) three slots in four started inside a line,
 * and completing a job read three lines instead of two. Completing a job
 * reads the first two lines only, unless the run plans migrations or
 * preemptions (SLOT_EXT_PLAN): a discipline that reserves keeps the first
 * reservation (an outcome) in the first line, in the place of the name,
 * which messages and the outcome then take from the record or the stream's
 * copy (out_name). A backfill completion reads two lines where it read
 * three (100k@1.2 first-fit backfill: last-level read misses 6.56 M ->
 * 6.13 M). The name was first kept in the third line, written at every
 * arrival: at 100k backfill that write missed the cache once a job (377 k
 * write misses of an 8 MiB cache); dropping it and hinting the arrival's
 * queue-index link (loop.c) gave x1.06 in medians over 12 alternated
 * rounds. */
#define SLOT_ALIGN 64

typedef struct slot {
  /* First cache line: what placing and completing a job touch. */
  _Alignas(SLOT_ALIGN) job_state st; /* 32 bytes */
  uint32_t gen;          /* tag of its live completion event */
  uint32_t run_pos;      /* index in run_list while running */
  uint32_t shape;        /* fragtrack shape */
  uint8_t ngang;         /* parts when on several nodes (else 0) */
  uint8_t name_far;      /* no name here: the discipline reserves */
  union {
    /* !name_far. Loaded traces: the trace's; streams: names[slot]. */
    const char *name;
    /* name_far: the first reservation as head (backfill), or -1. */
    int64_t reserved_us;
  };
  uint64_t idx;          /* position in the trace file */
  /* Second: the job's record. */
  job_record rec;
} slot;
_Static_assert(offsetof(slot, rec) == SLOT_ALIGN &&
                   sizeof(slot) == 2 * SLOT_ALIGN,
               "a slot's parts are one cache line each");
/* The slot array's alignment: a slot's two lines are one 128-byte pair,
 * which the L2 cache's spatial prefetcher fetches together. */
#define SLOT_BASE_ALIGN (2 * SLOT_ALIGN)

/* What a slot keeps beyond its state and record, in an array of its own
 * (engine.slotx, by slot index: slot_x_of; allocated only in a run that
 * plans and at a first gang): gang parts, and the state of migrations and
 * preemptions, set up at each arrival only when the run plans
 * (engine.slot_ext); gang is read only when the slot's ngang is. It was
 * the slot's third line: apart, the slots of a 100,000-GPU replay (~93,000
 * of them, most queued) take 12 MB instead of 18 (about 1,500 page faults
 * fewer), and a slot's two lines share a 128-byte pair. */
typedef struct slot_x {
  _Alignas(SLOT_ALIGN) lsched_placement *gang; /* parts on several nodes */
  int64_t rem_us;        /* work left when the current segment started */
  int64_t seg_us;        /* start of the current run segment */
  double lost_gpu_s;     /* GPU-seconds of progress lost */
  uint16_t nmig, npre;
} slot_x;
_Static_assert(sizeof(slot_x) == SLOT_ALIGN, "one cache line a slot");
_Static_assert(SIM_MAX_PARTS <= UINT8_MAX, "ngang holds a part count");
enum { SLOT_EXT_PLAN = 1, SLOT_EXT_NAME = 2 }; /* engine.slot_ext */

/* Failed request shapes within one queue pass: a job whose shape already
 * failed in this pass cannot fit either (allocations in the pass only take
 * resources away). Open addressing, cleared by bumping a generation. */
#define MEMO_SIZE 4096
typedef struct memo_entry {
  int64_t cpu, mem;
  uint64_t mask;
  int32_t k, milli;
  uint32_t gen;
  int32_t mig; /* MIG kind | compute << 3 (memory: in mem's place below) */
  int64_t mig_mem;
} memo_entry;

/* ----------------------------------------------------------------- parts */

/*
 * A part of the run behind the hooks (see the top of this file). Every
 * hook may be NULL. `self` is what the part's open function registered.
 * Jobs are passed as their slot (s->idx is the trace position).
 */
typedef struct sim_part_ops {
  const char *name;
  /* s arrived (its slot is set up; it is queued or refused next). */
  void (*on_arrival)(void *self, engine *e, const slot *s);
  /* The request of s as first tried: *r holds the plain one. */
  void (*request)(void *self, const slot *s, lsched_request *r);
  /* Turns *r into s's other variant to try when the first does not fit
   * (MIG <-> plain on mixed clusters); 0 when there is none. */
  int (*alt_request)(void *self, const slot *s, lsched_request *r);
  /* Before every placement attempt. */
  void (*before_place)(void *self);
  /* s's queue membership changed by delta (+1 queued, -1 left). */
  void (*on_queued)(void *self, const slot *s, int delta);
  /* s now holds parts: placed (under backfill possibly only to test a
   * candidate, which then goes back to the queue: on_queued +1), or moved
   * by a migration. */
  void (*on_placed)(void *self, const slot *s, const lsched_placement *parts,
                    int n);
  /* s starts on parts at now: returns how long it waits before it runs
   * (it holds its resources meanwhile); the largest wait of all parts. */
  int64_t (*on_start)(void *self, const slot *s,
                      const lsched_placement *parts, int n, int64_t now);
  /* s completed and released parts (its outcome is handed out next). */
  void (*on_finish)(void *self, engine *e, const slot *s,
                    const lsched_placement *parts, int n);
  /* After a scheduling pass: may change the cluster (move or preempt
   * running jobs, add capacity). 1 if it did (the loop passes again), 0 if
   * not, -1 with e->err set. */
  int (*after_pass)(void *self, engine *e);
  /* Completes parts[0] of a single-node job s from the part's state. */
  void (*fill_part)(void *self, const slot *s, lsched_placement *p);
  /* s's outcome is final: the part's fields of o. */
  void (*on_output)(void *self, const slot *s, sim_job_out *o);
  /* Time advances by dt > 0 with the current state (integrals). */
  void (*on_advance)(void *self, int64_t dt);
  /* Timeline: extra header columns (",a,b") and a row's values. */
  const char *timeline_columns;
  void (*timeline)(void *self, FILE *f);
  /* The run completed: the part's results into out. 0, or -1 when out of
   * memory. */
  int (*results)(void *self, const engine *e, sim_result *out);
  /* Frees self (also after a failed run). */
  void (*close)(void *self);
  /* The job in slot sl runs on parts from `begin` with `work` us of its
   * own time left (its trace duration at its first start; after a
   * preemption what is left, in run time on its last placement): returns
   * its run time there (a speed model). It may re-time other running jobs
   * (slot_retime). < 0 with e->err set on failure. */
  int64_t (*run_time)(void *self, engine *e, uint32_t sl,
                      const lsched_placement *parts, int n, int64_t begin,
                      int64_t work);
} sim_part_ops;

typedef struct sim_part {
  const sim_part_ops *ops;
  void *self;
} sim_part;

/* Which per-job hooks any registered part has (engine.hooks): a run
 * without such a part pays one bit test per hook point. */
enum {
  SIM_HOOK_ARRIVAL = 1u << 0,
  SIM_HOOK_REQUEST = 1u << 1,
  SIM_HOOK_ALT_REQUEST = 1u << 2,
  SIM_HOOK_BEFORE_PLACE = 1u << 3,
  SIM_HOOK_QUEUED = 1u << 4,
  SIM_HOOK_PLACED = 1u << 5,
  SIM_HOOK_START = 1u << 6,
  SIM_HOOK_FINISH = 1u << 7,
  SIM_HOOK_FILL_PART = 1u << 8,
  SIM_HOOK_OUTPUT = 1u << 9,
  SIM_HOOK_ADVANCE = 1u << 10,
  SIM_HOOK_AFTER_PASS = 1u << 11,
  SIM_HOOK_RUN_TIME = 1u << 12
};

/* Most parts one run registers. */
#define SIM_MAX_ENGINE_PARTS 8

/*
 * A part's open function: registers it with engine_add_part when it takes
 * part in the run (t: the loaded trace, NULL for streams). 0; -1 (input) or
 * -2 (out of memory) with err set. The list is in setup.c.
 */
typedef int (*sim_part_open_fn)(engine *e, const gpu_catalog *cat,
                                const trace *t);
int engine_add_part(engine *e, const sim_part_ops *ops, void *self);

/* setup.c: everything before the first step (0, -1 input, -2 internal,
 * with err set), and the release of everything (the cluster idle again). */
int engine_setup(engine *e, const gpu_catalog *cat, const trace *t);
void engine_teardown(engine *e);

/* The MIG part (mig_hooks.c). */
int mig_part_open(engine *e, const gpu_catalog *cat, const trace *t);
/* Work and speed (speed.c), a part unless --speed none. */
int speed_part_open(engine *e, const gpu_catalog *cat, const trace *t);
/* The reference work of the job in slot sl per us of its trace duration:
 * the speed of its GPUs on the type it was measured on, relative to one
 * reference GPU (num_gpu for "same"). */
double speed_measured(const engine *e, uint32_t sl);
/* The speed-table class of the job in slot sl (NULL without speed). */
const char *speed_class_name(const engine *e, uint32_t sl);
/* The speed table's classes (0 without a speed model), and the class
 * index of the job in slot sl (-1 without one). */
int speed_classes(const engine *e);
int speed_class_of(const engine *e, uint32_t sl);
/*
 * For type-aware policies: the speed of the job in slot sl on a candidate
 * placement pl (one node), relative to the reference (V100 = 1) and
 * including its MIG share, without sharing interference; 1 with --speed
 * none or for a GPU type the table does not measure.
 */
double sim_speed_on(const engine *e, uint32_t sl, const lsched_placement *pl);
/* The run time of the job in slot sl on whole GPUs of catalog model gm
 * (one node, no sharing) per us of its trace duration: its measured speed
 * / its speed on gm; 1 with --speed none, for "same" or a type the table
 * does not measure (cloud sites: cloud.c). */
double speed_time_factor_on(const engine *e, uint32_t sl,
                            const gpu_model_info *gm);
/* Cloud sites and bursting (cloud.c), a part when the cluster spec has
 * cloud sites or --burst is not never. */
int cloud_part_open(engine *e, const gpu_catalog *cat, const trace *t);
/* A part's wake-up in the event heap (job = a slot, tag = this): never a
 * completion, since a slot's gen stays far below 2^31; the loop skips it
 * as stale and passes at its time, when the part's after_pass acts. */
#define SIM_TAG_WAKE 0x80000000u
/* The speed part's view of a job, for estimates (estimate.c): reference
 * work `total` (duration x meas) and `done` before `from`, from which it
 * runs at `speed` and ends at `end`. parts NULL: the running job in slot
 * sl (its current segment); else the job started now on parts (a
 * candidate; end = now + round(work left / speed there, co-runners'
 * interference included)). 1 with *v set, 0 without a speed part. */
typedef struct speed_est_view {
  double meas, total, done, speed;
  int64_t from, end;
} speed_est_view;
int speed_view(const engine *e, uint32_t sl, const lsched_placement *parts,
               int n, speed_est_view *v);
/* The view of the queued job in slot sl started now as speed_view's with
 * parts, but at the fastest speed any placement on the cluster can give
 * it (speed.c fastest): no placement's view ends earlier. 1 with *v set,
 * 0 without a speed part. */
int speed_view_fastest(const engine *e, uint32_t sl, speed_est_view *v);
/* The job in slot sl left `from` at t (moved or preempted): re-times the
 * co-runners it leaves on a shared GPU. 0, or -1 with e->err set. */
int speed_left(engine *e, uint32_t sl, const lsched_placement *from,
               int64_t t);
/* 1 if the job in slot sl started on parts now would re-time running
 * jobs (co-runners on a shared GPU): its estimated end alone does not
 * tell whether it delays a reservation. */
int speed_slows(const engine *e, uint32_t sl, const lsched_placement *parts,
                int n);
/* The running jobs whose estimated ends move while the job in slot sl is
 * marked running on parts (speed_view: the jobs listed on its shared
 * GPUs, which it would re-time), each once, for a job speed_slows says
 * slows others: their count with them in out, or cap + 1 when there are
 * more than cap. */
size_t speed_slowed(const engine *e, uint32_t sl,
                    const lsched_placement *parts, int n, uint32_t *out,
                    size_t cap);
/* A hint: the speed part's state of the job in slot sl (read by every
 * request built for it, speed_call_user) is asked of the memory system. */
void speed_prefetch(const engine *e, uint32_t sl);
/* How many times running jobs were re-timed (their ends moved). */
uint64_t speed_retimes(const engine *e);
/* Migration and preemption (migrate.c), a part when the policy plans
 * migrations: after a pass that left the head blocked it may move or
 * preempt running jobs. */
int migrate_part_open(engine *e, const gpu_catalog *cat, const trace *t);
/* Of the current segment of the job in slot s, the microseconds a stop
 * now keeps (whole checkpoint intervals, at most its run time left; the
 * one rule of stop_requeue and of preempt.c's victim cost); *elapsed =
 * how long the segment has run. */
int64_t stop_kept_us(const engine *e, const slot *s, int64_t *elapsed);
/* Stops the running single-node job in slot j (its resources `from`
 * already released): keeps the progress of whole checkpoint intervals,
 * counts the rest as lost, and requeues it behind the head, or with
 * at_tail where the discipline puts an arrival (migrate.c). 0, or -1 with
 * err set. */
int stop_requeue(engine *e, uint32_t j, const lsched_placement *from,
                 int at_tail);
/* Preemption by priority (preempt.c), a part under --preemptible or
 * --slo: after a pass, a queued job of a higher QoS class that does not
 * fit evicts running preemptible jobs (the least lost work) and starts. */
int preempt_part_open(engine *e, const gpu_catalog *cat, const trace *t);
/* Estimate models (estimate.c), a part under --estimates model:NAME: draws
 * every job's estimate before the first arrival. */
int est_model_part_open(engine *e, const gpu_catalog *cat, const trace *t);
/* Energy (energy.c), in every run: GPU draw by what jobs hold. */
int energy_part_open(engine *e, const gpu_catalog *cat, const trace *t);
/* Composable GPU pools (pools.c): attach latency, detach after detach_s
 * with sticky reuse, fabric speed, summary "pools"; clusters with pools. */
int pools_part_open(engine *e, const gpu_catalog *cat, const trace *t);
/* The composed GPUs of part p (GPU indices in its pool host's composable
 * slots), 0 off pool hosts: the one test of "a pool GPU" (pools.c's fabric
 * speed, speed.c's unconsolidated rule). */
int pools_composed(const engine *e, const lsched_placement *p);
/* The fabric factor of parts: the lowest fabric_speed of the pools whose
 * GPUs they compose, 1 without any (pools.c; speed.c applies it under a
 * speed model, the pools part's run_time with --speed none). */
double pools_fabric(const engine *e, const lsched_placement *parts, int n);
/* A migration moved a job onto `to` (allocated): the attach wait of the
 * GPUs it composes there (counted as attaches and attach wait), 0 when it
 * composes none or the run has no pools. */
int64_t pools_move_attach(engine *e, const lsched_placement *to);

/* ---------------------------------------------------------------- engine */

struct sim_engine {
  sim_cluster *sc;
  const sim_options *opt;
  const sim_queue_ops *q; /* the queue discipline */
  job_src src;
  lsched_policy *pol;
  lsched_registry *reg;
  /* slots (slots.c) */
  slot *slots;           /* inside slots_raw, SLOT_BASE_ALIGN-aligned */
  void *slots_raw;
  slot_x *slotx;         /* by slot index, inside slotx_raw; NULL until
                          * needed (slot_x_of) */
  void *slotx_raw;
  size_t nslots, slots_cap;
  /* Streams: per slot, a name buffer kept across its occupants (no
   * allocation per arrival once it is long enough). NULL with a loaded
   * trace (slots.c). */
  struct name_buf {
    char *buf;
    size_t cap;
  } *names;
  uint32_t *free_slots;  /* recycled slot indexes (a stack) */
  size_t nfree;
  /* What slots keep beyond their state and record (0 nothing: one test
   * per arrival): SLOT_EXT_PLAN the state of moves and preemptions (plans,
   * struct slot_x), SLOT_EXT_NAME the first reservation in the name's
   * place (the discipline reserves: struct slot). */
  unsigned slot_ext;
  /* Per-run answers for each arrival (setup.c, once the parts are open):
   * the slot's copy of the record is cut by an estimate (--estimates not
   * exact, or --overrun), and whether the shape's can-ever-fit answer is
   * remembered (no speed model, no part rewriting requests: loop.c). */
  int est_cut, ever_memo;
  /* Prefetch hints for the nodes of the next completion and of a starting
   * backfill candidate (loop.c prefetch_release): under a discipline that
   * reserves (backfill: the per-node end lists too) on clusters of
   * SIM_PREFETCH_NODES nodes and more, whose per-node state outgrows the
   * cache. Elsewhere they only cost: ~65 instructions an event on 1,250
   * nodes; on 12,500 under fifo and skip ~55 for no measured gain
   * (alternated runs x0.93-1.02 fifo, x0.97-0.99 skip; backfill
   * x1.02-1.05). */
  int prefetch;
  /* loop.c: the completion (job and tag) whose hints were last given,
   * and whose prefetch_release was (UINT64_MAX: none) */
  uint64_t hinted, released;
  double est_f; /* the estimate factor (estimate.c): 1 when none is set */
  memo_entry *memo;
  uint32_t memo_gen;
  uint64_t *spec_mask;   /* per trace spec */
  uint8_t *spec_absent;  /* per trace spec: no allowed model in cluster */
  int nspecs_resolved, specs_cap;
  /* the loop (loop.c) */
  event_heap heap;
  job_record nj;         /* a stream's next arrival */
  const job_record *njp; /* the next arrival, when have > 0: in the
                            loaded trace, or nj */
  const char *nname;
  uint64_t nidx;
  int64_t next_us; /* njp->submit_us when have > 0, else INT64_MAX: the
                      loop reads it three times per event time, and as a
                      field of e it is one load where njp's was two */
  int have;
  int rc;                /* sticky: the error a step returned */
  int finished;          /* the last step ran: results are final */
  size_t njobs;
  uint64_t next_progress; /* UINT64_MAX without a progress callback */
  /* the queue (queue.c) */
  uint32_t *queue;       /* slots, in the discipline's order */
  size_t qhead, qlen, qcap; /* live entries queue[qhead .. qhead+qlen) */
  size_t new_from;       /* queue offset (from qhead) of unseen arrivals */
  /* Set apart (head_tried between them): a completion sets freed and an
   * arrival queue_changed, each a 4-byte store, and a pass reads both;
   * side by side, GCC read them as one 8-byte word, which no single
   * pending store can forward, so the pass's first instructions waited
   * for the store buffer to drain (100k@1.2 first-fit backfill: ~2% of
   * the time profile on pass_backfill's entry). */
  int freed;             /* resources released since the last pass */
  uint32_t head_tried;   /* head slot that last failed (head-of-line modes) */
  int queue_changed;     /* arrivals since the last pass */
  uint64_t head_parts;   /* (head_tried + 1) << 1 | it may not be passed
                            over by fit tests (queue_fifo.c); 0 unknown */
  sim_rlog_mark head_mark; /* the release log when head_tried failed */
  sim_rlog *rlog;        /* engine_rlog(): the release log, or NULL */
  int rlog_state;        /* 0 not asked yet, 1 open, -1 none */
  struct queue_index *qx; /* skip, backfill: the queue by shape, or NULL
                             (queue_index.c; then qlen counts live jobs) */
  uint32_t *run_list;    /* running slots (any order) */
  size_t nrun, run_cap;
  /* reservations (reserve.c) */
  struct run_end *scratch_ends; /* running jobs by estimated end */
  size_t scratch_cap;
  /* The running jobs ordered by estimated end, from the first
   * reservation on (NULL before; reserve.c). */
  struct ends_index *ends_ix;
  int reservation_valid;
  int64_t reservation_t;
  uint64_t res_per_node, res_walked; /* reservations answered each way */
  uint64_t bf_jumps; /* sim_result.backfill_jumps */
  uint64_t res_slowed; /* sim_result.reservations_slowed */
  /* Set by backfill's candidate() when it kept the candidate waiting
   * after a one-part placement (a trial, not allocated, or allocated and
   * asked in full) that would delay the head: that placement and the
   * candidate's estimated end marked there (est_marked_end; queue_index.c's
   * memo of rejected candidates, per shape and, under by_class, class);
   * cleared by every other outcome. */
  int bf_rejected;
  int64_t bf_rej_end;
  lsched_placement bf_rej_part;
  /* migration and preemption (migrate.c) */
  int can_plan;          /* running jobs may be moved or stopped: the
                            policy plans migrations, or --preemptible
                            (slots track their work left) */
  double *node_gpu_gib;  /* GPU memory of each node's model, GiB */
  uint64_t migrations, preemptions;
  double lost_gpu_s_total;
  uint32_t plan_failed;  /* head whose last plan failed */
  /* registered parts (MIG, ...) */
  sim_part parts[SIM_MAX_ENGINE_PARTS];
  int nparts;
  struct sim_speed *speed; /* the speed part's state, or NULL */
  double work_ref_us;    /* completed jobs: work x GPUs asked (ref-us) */
  unsigned hooks;        /* SIM_HOOK_* of the registered parts */
  /* A job's speed on a placement, for type-aware policies (request.h:
   * every request the engine builds carries it, with speed_user(e, slot,
   * &scope) as its user pointer and scope as its speed_scope); NULL =
   * speed 1. The speed part sets both when it opens (speed.c). */
  sim_speed_fn speed_fn;
  void *(*speed_user)(const engine *e, uint32_t sl, int *scope);
  /* metrics (metrics.c): time-weighted state and the sums of outcomes */
  int64_t now;
  int64_t total_milli;   /* the cluster's GPU milli */
  int64_t alloc_milli;   /* allocated GPU milli now */
  size_t running;
  sim_i128 alloc_area;   /* integral of alloc_milli dt (milli x us) */
  uint64_t events;
  size_t done;
  sim_fragtrack *ft;     /* fragmentation and stranded capacity */
  pctl qt, jct, qt_multi, bsld;
  double run_us, used_milli_us, cost_alloc;
  sim_result res;        /* what close hands out */
  sim_result *fill;      /* &res, or NULL with on_job: per-job arrays */
  size_t gangs_cap;
  char *err;
  size_t errlen;
  int time_error; /* time_add failed: an input error (exit 2), not internal */
};

/* The next arrival into njp, nname, nidx (its time into next_us):
 * src_next, with a loaded trace's job inline and read in place (once per
 * job in the loop). 1, 0 at the end, or src_next's error. */
static inline int next_arrival(engine *e) {
  job_src *src = &e->src;
  const trace *t = src->t;
  if (t && src->pos < t->n) {
    size_t j = src->order ? src->order[src->pos] : src->pos;
    src->pos++;
    /* The job 8 arrivals ahead asked for: a replay of 100,000 GPUs
     * stalled on each trace record despite the sequential order. */
    if (src->pos + 8 < t->n)
      __builtin_prefetch(
          &t->jobs[src->order ? src->order[src->pos + 8] : src->pos + 8], 0, 3);
    e->njp = &t->jobs[j];
    e->nname = t->names + t->jobs[j].name_off; /* trace_job_name, j < n */
    e->nidx = j;
    e->next_us = e->njp->submit_us;
    return 1;
  }
  e->njp = &e->nj;
  int rc = src_next(src, &e->nj, &e->nname, &e->nidx, e->err, e->errlen);
  e->next_us = rc > 0 ? e->nj.submit_us : INT64_MAX;
  return rc;
}

/* Grows an array of elem-sized entries to hold need; 0 or -1. */
int grow_array(void **p, size_t *cap, size_t need, size_t elem);
/* Grows the block *raw, which holds n entries of elem bytes at *at (NULL:
 * none yet) aligned to align (a power of two), to room for cap entries at
 * a new *at so aligned; the n entries kept. 0, or -1 (nothing changed). */
int grow_aligned(void **raw, void **at, size_t n, size_t cap, size_t elem,
                 size_t align);

static inline int64_t job_duration(const engine *e, const job_record *j) {
  return j->duration_us >= 0 ? j->duration_us : e->opt->unknown_duration_us;
}

/* Bounded slowdown of a job that waited and ran resp_us in all, run_us of
 * it running: resp / max(run, 10 s), at least 1 (Feitelson et al. 1997;
 * the 10 s threshold keeps very short jobs from dominating). */
#define SIM_BSLD_THRESHOLD_US INT64_C(10000000)
static inline double bounded_slowdown(int64_t resp_us, int64_t run_us) {
  double b = (double)resp_us /
             (double)(run_us > SIM_BSLD_THRESHOLD_US ? run_us
                                                     : SIM_BSLD_THRESHOLD_US);
  return b > 1 ? b : 1;
}

/* estimate.c: runtime estimates, for every reader. */
/* In a slot's copy of a job record (never in a trace): the duration was
 * cut to the job's estimate, where it is killed (--overrun kill). */
#define SIM_REC_KILLED 0x80u
/* The overrun rule in effect (the default resolved). */
sim_overrun est_overrun(const sim_options *o);
/* At arrival, on the slot's copy of the job at trace position idx: under
 * a model, sets its estimate (as req_s); under kill, cuts a job whose
 * estimate is shorter than its duration to the estimate and flags it. 1
 * if cut. */
int est_cut_on_arrival(const engine *e, job_record *jr, uint64_t idx);
/* The estimate of the work left of a job that has `work` us of true work
 * left (all of it before its first start). */
int64_t est_left(const engine *e, const struct slot *s, int64_t work);
/* The estimated run time of the job in slot sl from its first start (its
 * whole work): without a speed model its estimated end started at t is t
 * plus this (INT64_MAX past the end of time). */
int64_t est_run(const engine *e, uint32_t sl);
/* For the queued job in slot sl, a run time r in [0, 2^62] such that its
 * estimated end marked running now on any placement (est_marked_end) is
 * at least now + r, constant while it waits: est_run without a speed
 * model or segments, its work left's estimate with segments, else from
 * the fastest speed the cluster can give it (speed_view_fastest). */
int64_t est_run_least_slow(const engine *e, uint32_t sl);
static inline int64_t est_run_least(const engine *e, uint32_t sl) {
  return e->speed || e->can_plan ? est_run_least_slow(e, sl) : est_run(e, sl);
}
/* Estimated end of the job in slot sl started now on parts (a backfill
 * candidate; under a speed model its run time there). */
int64_t est_end(const engine *e, uint32_t sl, const lsched_placement *parts,
                int n);
/* The estimated end of the queued job in slot sl marked running now on
 * parts, as est_running_end reads a marked candidate: est_end, but with
 * segments (a policy that plans migrations, --preemptible) and without a
 * speed model now plus the estimate of its work left (a job preempted
 * and queued again has done some). */
int64_t est_planned_end(const engine *e, uint32_t sl);
static inline int64_t est_marked_end(const engine *e, uint32_t sl,
                                     const lsched_placement *parts, int n) {
  return e->can_plan && !e->speed ? est_planned_end(e, sl)
                                  : est_end(e, sl, parts, n);
}
/* Estimated end of the job in slot sl in run_list: committed (running) or
 * only marked running (a candidate, on its slot's placement). Under a
 * speed model a running job's end includes the re-timing a candidate
 * marked running beside it would cause (speed_view). */
int64_t est_running_end(const engine *e, uint32_t sl, int committed);

/* The name of the job in s, for messages: out_name (below), or "". */
static inline const char *out_name(const engine *e, const slot *s);
static inline const char *slot_name(const engine *e, const slot *s) {
  const char *n = out_name(e, s);
  return n ? n : "";
}

/* The part of slot s kept apart (struct slot_x): engine.slotx exists in a
 * run that plans (SLOT_EXT_PLAN) and once a job ran on several nodes
 * (slot_x_need, slots.c: 0, or -1 out of memory). */
int slot_x_need(engine *e);
static inline slot_x *slot_x_of(const engine *e, const slot *s) {
  return &e->slotx[s - e->slots];
}

/* A hint: the first two lines of slot sl (its state and its record, what
 * placing, completing or estimating the job reads) are about to be read,
 * or written (write: a constant, for the builtin's). */
static inline __attribute__((always_inline)) void
slot_prefetch(const engine *e, uint32_t sl, const int write) {
  const char *p = (const char *)&e->slots[sl];
  if (write) {
    __builtin_prefetch(p, 1, 3);
    __builtin_prefetch(p + SLOT_ALIGN, 1, 3);
  } else {
    __builtin_prefetch(p, 0, 3);
    __builtin_prefetch(p + SLOT_ALIGN, 0, 3);
  }
}

/* slots.c */
/* The sum a + b of two times (or a time and a span), checked: 0 with *out,
 * or -1 with e->err naming the job's trace line when it would leave the
 * time range [0, TRACE_MAX_TIME_US] (README "Time range"; the readers'
 * check keeps trace times inside it, this catches the run's own overheads:
 * reconfiguration waits, migration costs, restarts). */
int time_add(engine *e, const slot *s, int64_t a, int64_t b, int64_t *out);
/* A slot never used before (the slots array may move); UINT32_MAX when
 * out of memory. */
uint32_t slot_new(engine *e);
/* Places and allocates the job in slot sl now (gang jobs all-or-nothing).
 * 1 placed, 0 no fit (memoised per pass), -1 internal error. */
int place_job(engine *e, uint32_t sl, lsched_placement *parts, int *n);
void unplace(engine *e, const lsched_placement *parts, int n);
/* The policy's one-part placement of the job in slot sl without
 * allocating it (backfill candidates answered per node: queue_backfill.c):
 * 1 placed into *p, 0 no fit, 2 not a one-part request or the memo is in
 * use (take place_job), -1 error (err as place_job's). place_alloc then
 * allocates it (0, or -1 with err set). */
int place_trial(engine *e, uint32_t sl, lsched_placement *p);
int place_alloc(engine *e, uint32_t sl, const lsched_placement *p);
/* place_alloc and start_running of one part in one call. 0, or -1 with
 * err set. */
int start_placed(engine *e, uint32_t sl, const lsched_placement *p);
/* Records the job in slot sl as running on parts (not yet in the event
 * heap). 0, or -1 when out of memory. */
int mark_running(engine *e, uint32_t sl, const lsched_placement *parts,
                 int n);
/* Undoes mark_running (the job goes back to the queue). */
void unmark_running(engine *e, uint32_t sl);
/* The job in slot sl, placed on parts (allocated), runs from now: marked
 * running and committed (its completion event, the allocation sums). 0,
 * or -1 with err set. */
int start_running(engine *e, uint32_t sl, const lsched_placement *parts,
                  int n);
/* Tries to start the job in slot sl now. 1 started, 0 no fit, -1 error. */
int try_start(engine *e, uint32_t sl);
/* The running job in slot sl now ends at `end`: its pending completion
 * event becomes stale and a new one is pushed (migration; any model that
 * re-times running jobs). 0, or -1 when out of memory. */
int slot_retime(engine *e, uint32_t sl, int64_t end);

/* reserve.c */
/* The index of running jobs by estimated end (when e->ends_ix is set):
 * the job in slot sl started or its end moved (commit, slot_retime), or it
 * stopped running (run_list_remove); and its release (teardown). */
void ends_changed(engine *e, uint32_t sl);
void ends_remove(engine *e, uint32_t sl);
#define SIM_PREFETCH_NODES 4096
/* A hint: slot sl, running on node, may complete next, or (starts) is
 * about to start there: its entries in the per-node lists, or where it
 * joins, asked of the memory system; nothing changes. */
void ends_prefetch(const engine *e, uint32_t sl, int node, int starts);
/* The first step of ends_prefetch for a completion, before its slot is
 * read: the node of running job sl as the per-node lists know it (-1 when
 * they do not: then nothing), with its list's record asked for. */
int ends_prefetch_node_of(const engine *e, uint32_t sl);
void ends_free(engine *e);
/* The policy places a one-part request exactly when some node fits it,
 * and a call that does not place changes nothing: it promises
 * LSCHED_POLICY_ANY_FIT or LSCHED_POLICY_ANY_FIT_DRAWS (random: a
 * placement draws). Its what-ifs (reservations) are then answered by fit
 * tests, and attempts known to fail may be skipped (queue_index.c). */
int policy_fit_answers(const lsched_policy *p);
/* The release log (rlog.h) for attempts known to fail, opened at the
 * first call when the policy promises policy_fit_answers, no part
 * rewrites requests or acts before a placement and the cluster has no GPU
 * pools (whose GPUs open and close with other hosts' changes); else (or
 * out of memory) NULL, and nothing is known. */
sim_rlog *engine_rlog(engine *e);
/* EASY reservations answered per node (reserve_nodes.c: when, and why
 * they equal the walk's). rx_open: NULL when the policy does not promise
 * policy_fit_answers (or out of memory). rx_job_set: running job sl
 * with estimated end `end` (not clamped) on its current parts (0, or -1
 * out of memory); start 1: it has just started there (its allocation
 * and entry can only make its nodes' answers later), 0: anything else,
 * -1: a start if it was not in the index; rx_job_drop: it ends, moves or
 * stops. rx_answer: for req with candidate slot cand (UINT32_MAX: none;
 * its end cand_end) marked running, 1 with *t the least over nodes of the
 * estimated end after which req fits (not clamped to now; INT64_MIN: it
 * fits now, INT64_MAX: never), 0 when the caller must walk, -1 when out of
 * memory (then close it). */
struct rx;
struct rx *rx_open(engine *e);
void rx_close(struct rx *x);
int rx_job_set(struct rx *x, uint32_t sl, int64_t end, int start);
void rx_job_drop(struct rx *x, uint32_t sl);
void rx_prefetch(const struct rx *x, uint32_t sl, int node, int joins);
/* The node of running one-node job sl (-1: none or several), read from
 * the index, with its list's record asked for (a hint). */
int rx_prefetch_node_of(const struct rx *x, uint32_t sl);
int rx_answer(struct rx *x, const lsched_request *req, uint32_t cand,
              int64_t cand_end, int64_t *t);
/* For candidate cand (one node) marked running: 1 if the reservation of
 * req is at or before T (T >= now, T < INT64_MAX), 0 if later, 2 when the
 * caller must compute it in full, -1 when out of memory (then close). */
int rx_within(struct rx *x, const lsched_request *req, uint32_t cand,
              int64_t cand_end, int64_t T);
/* rx_within for candidate cand placed on p but not allocated (estimated
 * end cand_end). */
int rx_within_held(struct rx *x, const lsched_request *req,
                   const lsched_placement *p, uint32_t cand, int64_t cand_end,
                   int64_t T);
/* EASY reservation of the queued job h: the earliest estimated time it
 * could start if nothing else started (INT64_MAX: never); *fail set when
 * releasing or re-allocating running jobs failed. */
int64_t reservation(engine *e, uint32_t h, int *fail);
/* reservation(e, h, fail) <= T for T the head's reservation (>= now) with
 * one candidate marked running; cheaper when another node reaches T. */
int reservation_within(engine *e, uint32_t h, int64_t T, int *fail);
/* Whether backfill may try candidates without allocating them: the
 * reservations are answered per node, no moves, no part that rewrites
 * requests or acts before a placement, nothing marked. */
int reserve_trial_ok(const engine *e);
/* Whether a candidate kept waiting after a question in full may stamp its
 * shape for rejected_before: no part that rewrites requests or acts
 * before a placement, not the reference pass (moves allowed). */
int reserve_stamp_ok(const engine *e);
/* As reservation_within for candidate j placed (not allocated) on p with
 * estimated end cand_end: 1, 0, or 2 when it cannot tell (then allocate
 * and ask reservation_within), -1 when out of memory. */
int reservation_within_trial(engine *e, uint32_t h, uint32_t j,
                             const lsched_placement *p, int64_t cand_end,
                             int64_t T);


/* outcome.c */
/* The final outcome of the job in slot sl: adds it to the results, hands
 * it to on_job or to the per-job arrays, and frees the slot. 0, or -1 with
 * err set. */
int emit(engine *e, uint32_t sl);
/* (emit_parts, the same for a job that completed on parts, is inline
 * below.) Keeps slot s's outcome in the per-job arrays of sim_run without
 * on_job; a gang's parts move into the result. 0, or -1 with err set. */
int outcome_keep(engine *e, slot *s);
/* Allocates the per-job result arrays of sim_run without on_job. */
int outcome_alloc(engine *e, size_t n);

/* metrics.c */
/* The percentile accumulators keep mem_values values in memory each; the
 * run has `jobs` jobs, `multi` of them asking for more than one GPU. */
void metrics_open(engine *e, size_t mem_values, size_t jobs, size_t multi);
void metrics_close(engine *e);
/* err for a failed percentile accumulator. */
void metrics_pctl_fail(engine *e);
/* The totals of a finished run into e->res. 0, or -1 with err set. */
int metrics_results(engine *e);
void metrics_timeline_header(engine *e);
void metrics_timeline_row(engine *e);

/* ------------------------------------------------------------- the hooks */

#define FOR_PARTS(e, p)                                                        \
  for (const sim_part *p = (e)->parts, *p##_end = p + (e)->nparts;           \
       p < p##_end; p++)

static inline void hook_request(const engine *e, const slot *s,
                                lsched_request *r) {
  if (e->hooks & SIM_HOOK_REQUEST) {
    FOR_PARTS(e, p)
    if (p->ops->request)
      p->ops->request(p->self, s, r);
  }
}

/* 1 if a part turned *r into another variant worth a try. */
static inline int hook_alt_request(const engine *e, const slot *s,
                                   lsched_request *r) {
  if (e->hooks & SIM_HOOK_ALT_REQUEST) {
    FOR_PARTS(e, p)
    if (p->ops->alt_request && p->ops->alt_request(p->self, s, r))
      return 1;
  }
  return 0;
}

static inline void hook_arrival(engine *e, const slot *s) {
  if (e->hooks & SIM_HOOK_ARRIVAL) {
    FOR_PARTS(e, p)
    if (p->ops->on_arrival)
      p->ops->on_arrival(p->self, e, s);
  }
}

static inline void hook_finish(engine *e, const slot *s,
                               const lsched_placement *parts, int n) {
  if (e->hooks & SIM_HOOK_FINISH) {
    FOR_PARTS(e, p)
    if (p->ops->on_finish)
      p->ops->on_finish(p->self, e, s, parts, n);
  }
}

static inline void hook_before_place(const engine *e) {
  if (e->hooks & SIM_HOOK_BEFORE_PLACE) {
    FOR_PARTS(e, p)
    if (p->ops->before_place)
      p->ops->before_place(p->self);
  }
}

static inline void hook_queued(engine *e, const slot *s, int delta) {
  fragtrack_queued(e->ft, s->shape, delta);
  if (e->hooks & SIM_HOOK_QUEUED) {
    FOR_PARTS(e, p)
    if (p->ops->on_queued)
      p->ops->on_queued(p->self, s, delta);
  }
}

static inline void hook_placed(const engine *e, const slot *s,
                               const lsched_placement *parts, int n) {
  if (e->hooks & SIM_HOOK_PLACED) {
    FOR_PARTS(e, p)
    if (p->ops->on_placed)
      p->ops->on_placed(p->self, s, parts, n);
  }
}

static inline int64_t hook_start(const engine *e, const slot *s,
                                 const lsched_placement *parts, int n) {
  int64_t wait = 0;
  if (e->hooks & SIM_HOOK_START) {
    FOR_PARTS(e, p)
    if (p->ops->on_start) {
      int64_t w = p->ops->on_start(p->self, s, parts, n, e->now);
      if (w > wait)
        wait = w;
    }
  }
  return wait;
}

/* The run time of the job in slot sl from begin (work without a speed
 * part); < 0 on failure. */
static inline int64_t hook_run_time(engine *e, uint32_t sl,
                                    const lsched_placement *parts, int n,
                                    int64_t begin, int64_t work) {
  if (e->hooks & SIM_HOOK_RUN_TIME) {
    FOR_PARTS(e, p)
    if (p->ops->run_time && work >= 0)
      work = p->ops->run_time(p->self, e, sl, parts, n, begin, work);
  }
  return work;
}

static inline void hook_fill_part(const engine *e, const slot *s,
                                  lsched_placement *part) {
  if (e->hooks & SIM_HOOK_FILL_PART) {
    FOR_PARTS(e, p)
    if (p->ops->fill_part)
      p->ops->fill_part(p->self, s, part);
  }
}

static inline void hook_output(const engine *e, const slot *s,
                               sim_job_out *o) {
  if (e->hooks & SIM_HOOK_OUTPUT) {
    FOR_PARTS(e, p)
    if (p->ops->on_output)
      p->ops->on_output(p->self, s, o);
  }
}

/* Advances the time-weighted integrals to time t. */
static inline void hook_advance(engine *e, int64_t t) {
  int64_t dt = t - e->now;
  if (dt > 0) {
    e->alloc_area += (sim_i128)e->alloc_milli * dt;
    fragtrack_advance(e->ft, dt);
    if (e->hooks & SIM_HOOK_ADVANCE) {
      FOR_PARTS(e, p)
      if (p->ops->on_advance)
        p->ops->on_advance(p->self, dt);
    }
  }
  e->now = t;
}

/* ---------------------------------------- small hot helpers (slots) */

/* Inline (as the hooks above): they run on every arrival, placement
 * attempt and completion. */

/* A slot for an arriving job: a recycled one, else a new one (the slots
 * array may move). UINT32_MAX when out of memory. */
static inline uint32_t slot_get(engine *e) {
  if (e->nfree > 0)
    return e->free_slots[--e->nfree];
  return slot_new(e);
}

/* s no longer holds gang parts (freed, if it did). */
static inline void slot_gang_drop(const engine *e, slot *s) {
  if (s->ngang) {
    slot_x *sx = slot_x_of(e, s);
    free(sx->gang);
    sx->gang = NULL;
    s->ngang = 0;
  }
}

/* Frees slot sl for the next arrival. */
static inline void slot_put(engine *e, uint32_t sl) {
  slot *s = &e->slots[sl];
  slot_gang_drop(e, s);
  s->gen++; /* any event left for it is stale */
  /* The slot's next occupant is another job. */
  if (e->head_tried == sl)
    e->head_tried = UINT32_MAX;
  if (e->plan_failed == sl)
    e->plan_failed = UINT32_MAX;
  e->free_slots[e->nfree++] = sl;
}

/* s's request as first tried (the parts' request hooks applied). */
static inline void build_request(const engine *e, const slot *s, lsched_request *r) {
  const job_record *j = &s->rec;
  sim_job_request(j, j->gpu_spec >= 0 ? e->spec_mask[j->gpu_spec] : 0, r);
  if (e->speed_fn) {
    int scope;
    void *user = e->speed_user(e, (uint32_t)(s - e->slots), &scope);
    sim_request_speed(r, e->speed_fn, user, scope);
  }
  hook_request(e, s, r);
}

/* Placements of the job in slot sl (1 part, or its gang parts); returns
 * the count. */
static inline int job_parts(const engine *e, uint32_t sl, lsched_placement *parts) {
  const slot *s = &e->slots[sl];
  if (s->ngang > 1) {
    memcpy(parts, slot_x_of(e, s)->gang, (size_t)s->ngang * sizeof *parts);
    return s->ngang;
  }
  const job_record *jr = &s->rec;
  parts[0].node = s->st.node;
  parts[0].gpu_count = jr->num_gpu;
  parts[0].gpu_milli = jr->num_gpu > 0 ? s->st.gpu_milli : 0;
  parts[0].gpu_mask = s->st.gpu_mask;
  parts[0].cpu_milli = jr->cpu_milli;
  parts[0].memory_mib = jr->memory_mib;
  hook_fill_part(e, s, &parts[0]);
  return 1;
}

static inline int64_t parts_milli(const lsched_placement *parts, int n) {
  if (n == 1) /* nearly every job: ~10 instructions less than the loop */
    return (int64_t)parts[0].gpu_count * parts[0].gpu_milli;
  int64_t m = 0;
  for (int i = 0; i < n; i++)
    m += (int64_t)parts[i].gpu_count * parts[i].gpu_milli;
  return m;
}

static inline void run_list_remove(engine *e, uint32_t sl) {
  if (e->ends_ix)
    ends_remove(e, sl);
  uint32_t pos = e->slots[sl].run_pos, last = e->run_list[--e->nrun];
  e->run_list[pos] = last;
  e->slots[last].run_pos = pos;
}

/* Inserts sl at offset pos from the head of the queue. 0, or -1 when out
 * of memory. */
static inline int queue_insert(engine *e, uint32_t sl, size_t pos) {
  if (e->qx)
    return queue_index_insert(e, sl, pos);
  if (e->qhead + e->qlen >= e->qcap && queue_room(e))
    return -1;
  if (pos < e->qlen)
    memmove(&e->queue[e->qhead + pos + 1], &e->queue[e->qhead + pos],
            (e->qlen - pos) * sizeof *e->queue);
  e->queue[e->qhead + pos] = sl;
  e->qlen++;
  hook_queued(e, &e->slots[sl], 1);
  return 0;
}

/* An arrival joins the queue where the discipline puts it (at the end
 * unless it has insert_pos). 0, or -1 when out of memory. */
static inline int queue_add(engine *e, uint32_t sl) {
  size_t pos =
      e->q->insert_pos ? e->q->insert_pos(e, &e->slots[sl]) : e->qlen;
  return queue_insert(e, sl, pos);
}

/* A job's final outcome in the metrics (parts: where it ran, np of them
 * when it completed; the definitions are docs/DESIGN.md section 6). Inline: it
 * runs once per job. Sets *work (reference-GPU-us of work) and *cost (its
 * allocated cost, USD) of a job that ran, 0 for the others: the job's
 * jobs.csv columns, from the same terms the sums add. 0, or -1 with err
 * set. */
static inline int metrics_completed(engine *e, const slot *s,
                                    const lsched_placement *parts, int np,
                                    double *work, double *cost) {
  const job_record *jr = &s->rec;
  sim_result *out = &e->res;
  *work = *cost = 0;
  switch (s->st.status) {
  case JOB_KILLED: /* it ran and finished (at its estimate) */
    out->jobs_killed++;
    /* fall through */
  case JOB_DONE: {
    out->completed++;
    double q = (double)(s->st.start_us - jr->submit_us) / 1e6;
    if (pctl_add(&e->qt, q) ||
        (jr->num_gpu > 1 && pctl_add(&e->qt_multi, q)) ||
        pctl_add(&e->jct, (double)(s->st.finish_us - jr->submit_us) / 1e6) ||
        pctl_add(&e->bsld, bounded_slowdown(s->st.finish_us - jr->submit_us,
                                            s->st.finish_us - s->st.start_us))) {
      metrics_pctl_fail(e);
      return -1;
    }
    double run = (double)(s->st.finish_us - s->st.start_us);
    e->run_us += run;
    /* Work: the trace duration (cut at a kill) x the speed of the job's
     * GPUs on its measured type (num_gpu reference GPUs without a speed
     * model), x the share of each GPU it asked for. */
    *work = (double)job_duration(e, jr) *
            (e->speed ? speed_measured(e, (uint32_t)(s - e->slots))
                      : (double)jr->num_gpu) *
            jr->gpu_milli / 1000.0;
    e->work_ref_us += *work;
    if (np > 0) /* on-prem only (a cloud job has no parts: cloud.c) */
      e->used_milli_us += (double)jr->num_gpu * jr->gpu_milli * run;
    /* Allocated cost = sum over jobs of the node's price x GPUs taken x
     * run time, per job. */
    for (int k = 0; k < np; k++) {
      double c = e->sc->node_price[parts[k].node] *
                 (double)parts[k].gpu_count *
                 (double)parts[k].gpu_milli / 1000.0 * run / US_PER_HOUR;
      e->cost_alloc += c;
      *cost += c;
    }
    if (s->st.finish_us > out->last_completion_us)
      out->last_completion_us = s->st.finish_us;
    break;
  }
  case JOB_NEVER_NO_NODE:
    out->never_no_node++;
    break;
  case JOB_NEVER_MODEL:
    out->never_model++;
    break;
  default:
    out->never_queued++;
    break;
  }
  if (e->can_plan)
    e->lost_gpu_s_total += slot_x_of(e, s)->lost_gpu_s;
  return 0;
}

/* The name of the job in s, from what its outcome reads anyway: without
 * a name in the slot (name_far) the trace's at the record's offset, or the
 * stream's copy (as arrive set it). */
static inline const char *out_name(const engine *e, const slot *s) {
  if (!s->name_far)
    return s->name;
  return e->src.t ? e->src.t->names + s->rec.name_off
                  : e->names[s - e->slots].buf;
}

/* emit (outcome.c) for a job that completed on parts (np of them), as
 * job_parts gives them: the caller had them at hand. Inline: it runs once
 * per job, from the loop (a call cost ~25 instructions per job in saved
 * registers and arguments). 0, or -1 with err set. */
static inline int emit_parts(engine *e, uint32_t sl,
                             const lsched_placement *parts, int np) {
  slot *s = &e->slots[sl];
  double work, cost;
  if (metrics_completed(e, s, parts, np, &work, &cost))
    return -1;
  if (e->opt->on_job) {
    sim_job_out o;
    o.index = s->idx;
    o.rec = &s->rec;
    o.name = out_name(e, s);
    o.st = &s->st;
    o.parts = parts;
    o.nparts = np;
    o.planned = e->can_plan;
    /* The slot's slot_x only when it holds something. */
    o.migrations = e->can_plan ? slot_x_of(e, s)->nmig : 0;
    o.preemptions = e->can_plan ? slot_x_of(e, s)->npre : 0;
    o.lost_gpu_s = e->can_plan ? slot_x_of(e, s)->lost_gpu_s : 0;
    o.reserved_us = e->q->flags & SIM_QUEUE_RESERVES ? s->reserved_us : -1;
    o.mig_kind = o.mig_start = 0;
    o.mig_wait_us = 0;
    /* NULL without a speed part: no call (~14 instructions per job). */
    o.jclass = e->speed ? speed_class_name(e, (uint32_t)(s - e->slots)) : NULL;
    o.cloud_cols = 0;
    o.site = o.site_model = NULL;
    o.cloud_cost_usd = 0;
    /* The job's terms of the sums (metrics_completed); a job without
     * parts (a cloud job, or one that never ran) has no on-prem work or
     * cost here. */
    o.work_ref_s = np > 0 ? work / 1e6 : 0;
    o.cost_usd = cost;
    hook_output(e, s, &o);
    if (e->opt->on_job(e->opt->on_job_user, &o)) {
      snprintf(e->err, e->errlen, "job output failed (%s)", o.name);
      return -1;
    }
  } else if (outcome_keep(e, s)) {
    return -1;
  }
  slot_put(e, sl);
  return 0;
}

#endif
