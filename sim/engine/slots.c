/*
 * Per-job state (slots, recycled), the per-pass memo of request shapes that
 * did not fit, and placing, starting and re-timing jobs.
 */
#include "engine_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int grow_array(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return 0;
  size_t nc = *cap ? *cap : 256;
  while (nc < need)
    nc *= 2;
  void *np = realloc(*p, nc * elem);
  if (!np)
    return -1;
  *p = np;
  *cap = nc;
  return 0;
}

/* ---- slots ---- */

/* realloc (the allocator tests hook it), aligned by hand. realloc, not
 * malloc + memcpy: a large block is moved by remapping its pages
 * (mremap), where the copy of a 100,000-GPU replay's slots (10 MB) was a
 * third of its last-level cache write misses. The entries move only when
 * the new block's alignment slack differs (not for mmap'd blocks, which
 * keep their offset in the page). */
int grow_aligned(void **raw, void **at, size_t n, size_t cap, size_t elem,
                 size_t align) {
  size_t off_old = *at ? (size_t)((char *)*at - (char *)*raw) : 0;
  void *nraw = realloc(*raw, cap * elem + align);
  if (!nraw)
    return -1;
  char *na = (char *)(((uintptr_t)nraw + align - 1) & ~(uintptr_t)(align - 1));
  size_t off_new = (size_t)(na - (char *)nraw);
  if (n && off_new != off_old)
    memmove(na, (char *)nraw + off_old, n * elem);
  *raw = nraw;
  *at = na;
  return 0;
}

/* engine.slotx for cap slots (the first e->nslots kept): 0 or -1. Only
 * for runs that use it (a run that plans, or a first gang: slot_x_need),
 * and then grown with the slots. Allocated beside the slots in every run,
 * it moved them at each doubling (neither block could grow in place):
 * 10k@1.2 first-fit backfill's simulated last-level read misses rose from
 * 49 k to 78 k. */
static int slotx_grow(engine *e, size_t cap) {
  void *at = e->slotx;
  if (grow_aligned(&e->slotx_raw, &at, e->slotx ? e->nslots : 0, cap,
                   sizeof(slot_x), SLOT_ALIGN))
    return -1;
  e->slotx = at;
  return 0;
}

int slot_x_need(engine *e) {
  return e->slotx ? 0 : slotx_grow(e, e->slots_cap);
}

uint32_t slot_new(engine *e) {
  if (e->nslots == UINT32_MAX - 1)
    return UINT32_MAX;
  if (e->nslots == e->slots_cap) {
    size_t cap = e->slots_cap ? 2 * e->slots_cap : 256;
    void *at = e->slots;
    if (grow_aligned(&e->slots_raw, &at, e->nslots, cap, sizeof(slot),
                     SLOT_BASE_ALIGN))
      return UINT32_MAX;
    e->slots = at;
    if ((e->slotx || (e->slot_ext & SLOT_EXT_PLAN)) && slotx_grow(e, cap))
      return UINT32_MAX;
    size_t fcap = e->slots_cap, ncap = e->slots_cap;
    if (grow_array((void **)&e->free_slots, &fcap, cap, sizeof(uint32_t)) ||
        grow_array((void **)&e->run_list, &e->run_cap, cap, sizeof(uint32_t)))
      return UINT32_MAX;
    /* Name copies for a stream only: a loaded trace's names are read in
     * place (arrive), and the array (16 bytes a slot, cleared) was 1.5 MB
     * of first touches at 100,000 GPUs for nothing. */
    if (!e->src.t) {
      if (grow_array((void **)&e->names, &ncap, cap, sizeof *e->names))
        return UINT32_MAX;
      memset(e->names + e->slots_cap, 0,
             (cap - e->slots_cap) * sizeof *e->names);
    }
    e->slots_cap = cap;
  }
  e->slots[e->nslots].gen = 0;
  return (uint32_t)e->nslots++;
}



/* ---- the memo of shapes that failed in this pass ---- */

static int32_t memo_mig(const lsched_request *r) {
  return r->mig_kind | r->mig_compute_milli << 3;
}

static uint32_t memo_hash(const lsched_request *r) {
  uint64_t h = (uint64_t)r->cpu_milli * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t)r->memory_mib * 0xC2B2AE3D27D4EB4Full;
  h ^= ((uint64_t)r->gpu_count << 32 | (uint32_t)r->gpu_milli) *
       0x165667B19E3779F9ull;
  h ^= r->model_mask * 0x27D4EB2F165667C5ull;
  h ^= (uint64_t)memo_mig(r) * 0x9E3779B97F4A7C15ull ^ (uint64_t)r->mig_memory_mib;
  h ^= h >> 29;
  return (uint32_t)(h % MEMO_SIZE);
}

/* The entry of r's shape: *found if it failed in this pass; else a free
 * entry to record a failure in, or NULL when the table is crowded there
 * (the shape is then not memoised). */
static memo_entry *memo_slot(engine *e, const lsched_request *r, int *found) {
  uint32_t i = memo_hash(r);
  for (int probe = 0; probe < 8; probe++, i = (i + 1) % MEMO_SIZE) {
    memo_entry *m = &e->memo[i];
    if (m->gen != e->memo_gen) {
      *found = 0;
      return m;
    }
    if (m->cpu == r->cpu_milli && m->mem == r->memory_mib &&
        m->k == r->gpu_count && m->milli == r->gpu_milli &&
        m->mask == r->model_mask && m->mig == memo_mig(r) &&
        m->mig_mem == r->mig_memory_mib) {
      *found = 1;
      return m;
    }
  }
  *found = 0;
  return NULL;
}

static void memo_store(engine *e, memo_entry *m, const lsched_request *r) {
  m->cpu = r->cpu_milli;
  m->mem = r->memory_mib;
  m->k = r->gpu_count;
  m->milli = r->gpu_milli;
  m->mask = r->model_mask;
  m->mig = memo_mig(r);
  m->mig_mem = r->mig_memory_mib;
  m->gen = e->memo_gen;
}

/* ---- placing, starting and finishing jobs ---- */



/* The bodies of place_job, mark_running and start_running are static
 * inline so that try_start, the per-job path of every discipline, has them
 * in one piece (as calls they cost 4% more instructions per job on the
 * first-fit replay; place_now and commit_now are forced: left to itself
 * GCC 12 kept them calls, 0.5% of the 100,000-GPU first-fit replay for
 * place_now, ~40 instructions per job for commit_now with heap_push's
 * inline part in it); the queue files call
 * the extern versions below. */
/* Whether the memo can save an attempt: not in a pass that stops at its
 * first failure (fifo, priority: a shape fails once per pass there) nor
 * over the queue index (it tries a failed shape no more in the epoch),
 * unless a part rewrites requests or acts before placing. Elsewhere an
 * attempt the memo would have saved fails again and changes nothing
 * (queue_index.c), so either way gives the same decisions; the memo's
 * hash and probe were 1% of a first-fit replay's instructions. */
static inline int memo_useful(const engine *e) {
  if (e->hooks &
      (SIM_HOOK_REQUEST | SIM_HOOK_ALT_REQUEST | SIM_HOOK_BEFORE_PLACE))
    return 1;
  return !e->qx && e->q->kind != SIM_QUEUE_FIFO &&
         e->q->kind != SIM_QUEUE_PRIORITY;
}

/* The policy or the cluster refused the job in slot sl with rc: err set,
 * -1. */
static int policy_failed(engine *e, uint32_t sl, int rc) {
  snprintf(e->err, e->errlen, "job %s: policy %s: %s (%s)",
           slot_name(e, &e->slots[sl]), e->opt->policy, lsched_strerror(rc),
           lsched_cluster_errmsg(e->sc->c));
  return -1;
}

static inline __attribute__((always_inline)) int
place_now(engine *e, uint32_t sl, lsched_placement *parts, int *n) {
  lsched_request req;
  build_request(e, &e->slots[sl], &req);
  const int memo = memo_useful(e);
  /* A part may offer a second variant of the request when the first does
   * not fit (MIG and plain GPUs on one cluster: mig_sim.h). */
  int rc = LSCHED_ENOFIT;
  for (int v = 0; v < 2 && rc == LSCHED_ENOFIT; v++) {
    if (v == 1 && !hook_alt_request(e, &e->slots[sl], &req))
      break;
    int found = 0;
    memo_entry *m = memo ? memo_slot(e, &req, &found) : NULL;
    if (found)
      continue;
    hook_before_place(e);
    rc = lsched_place_gang(e->pol, &req, parts, SIM_MAX_PARTS, n);
    if (rc == LSCHED_ENOFIT || rc == LSCHED_ELIMIT) {
      if (m)
        memo_store(e, m, &req);
      rc = LSCHED_ENOFIT;
    }
  }
  if (rc == LSCHED_ENOFIT)
    return 0;
  if (rc != LSCHED_OK) {
    return policy_failed(e, sl, rc);
  }
  return 1;
}

int place_trial(engine *e, uint32_t sl, lsched_placement *p) {
  if (memo_useful(e))
    return 2;
  lsched_request req;
  build_request(e, &e->slots[sl], &req);
  if (lsched_place_splits(e->sc->c, &req) != 0)
    return 2; /* cut into parts, or malformed: place_job tells */
  int rc = lsched_policy_place(e->pol, &req, p);
  if (rc == LSCHED_ENOFIT || rc == LSCHED_ENEVER)
    return 0; /* as lsched_place_gang's one-part path */
  if (rc != LSCHED_OK) {
    return policy_failed(e, sl, rc);
  }
  return 1;
}

int place_alloc(engine *e, uint32_t sl, const lsched_placement *p) {
  int rc = lsched_alloc(e->sc->c, p);
  if (rc == LSCHED_OK)
    return 0;
  return policy_failed(e, sl, rc);
}

void unplace(engine *e, const lsched_placement *parts, int n) {
  while (n-- > 0)
    lsched_release(e->sc->c, &parts[n]);
}

static inline int mark_now(engine *e, uint32_t sl,
                           const lsched_placement *parts, int n) {
  slot *s = &e->slots[sl];
  if (s->st.start_us < 0)
    s->st.start_us = e->now; /* queue time counts to the first start */
  /* Its segment starts now (commit_now adds a start-up wait) whenever
   * segments are tracked (--preemptible, a policy that plans migrations):
   * a backfill trial (marked, not committed) must not be read at a past
   * segment's start by the reservation (estimate.c est_running_end), or it
   * would look ended and backfill could delay the head. */
  if (e->can_plan)
    slot_x_of(e, s)->seg_us = e->now;
  s->st.status = JOB_RUNNING;
  s->st.node = parts[0].node;
  s->st.gpu_milli = (int16_t)parts[0].gpu_milli;
  if (n == 1) {
    s->st.gpu_mask = parts[0].gpu_mask;
  } else {
    if (slot_x_need(e))
      return -1;
    slot_x *x = slot_x_of(e, s);
    x->gang = malloc((size_t)n * sizeof *parts);
    if (!x->gang)
      return -1;
    memcpy(x->gang, parts, (size_t)n * sizeof *parts);
    s->ngang = n;
    s->st.gpu_mask = 0;
  }
  s->run_pos = (uint32_t)e->nrun;
  e->run_list[e->nrun++] = sl;
  hook_placed(e, s, parts, n);
  hook_queued(e, s, -1);
  return 0;
}


void unmark_running(engine *e, uint32_t sl) {
  slot *s = &e->slots[sl];
  slot_gang_drop(e, s);
  run_list_remove(e, sl);
  if (!e->can_plan || slot_x_of(e, s)->npre == 0)
    s->st.start_us = -1;
  s->st.node = -1;
  s->st.gpu_mask = 0;
  s->st.gpu_milli = 0;
  s->st.status = JOB_QUEUED;
  hook_queued(e, s, 1);
}

int time_add(engine *e, const slot *s, int64_t a, int64_t b, int64_t *out) {
  if (!__builtin_add_overflow(a, b, out) && *out >= 0 &&
      *out <= TRACE_MAX_TIME_US)
    return 0;
  const trace *t = src_meta(&e->src);
  e->time_error = 1;
  snprintf(e->err, e->errlen,
           "%s:%" PRId64 ": field 'duration': job %s would end past the "
           "time range (%" PRId64 " s) with its run time (--unknown-duration "
           "included) and this run's overheads",
           t && t->path ? t->path : "trace", s->rec.line, slot_name(e, s),
           TRACE_MAX_TIME_S);
  return -1;
}

static inline __attribute__((always_inline)) int
commit_now(engine *e, uint32_t sl, const lsched_placement *parts, int n) {
  slot *s = &e->slots[sl];
  e->alloc_milli += parts_milli(parts, n);
  e->running++;
  e->reservation_valid = 0;
  int64_t work = job_duration(e, &s->rec);
  /* A part may delay the real start (a new MIG instance is usable after
   * its reconfiguration): the job holds its resources from now and runs
   * from now + wait. */
  int64_t wait = hook_start(e, s, parts, n);
  /* Without a wait (nearly always) begin is now, unchecked: a now past
   * the time range fails the check of end below alike (same error). */
  int64_t begin = e->now, end;
  if (wait > 0) {
    if (s->st.start_us == e->now)
      s->st.start_us += wait;
    if (time_add(e, s, e->now, wait, &begin))
      return -1;
  }
  if (e->can_plan) {
    slot_x *sx = slot_x_of(e, s);
    sx->seg_us = begin;
    work = sx->rem_us;
  }
  if (e->hooks & SIM_HOOK_RUN_TIME) {
    /* A speed model: the run time on this placement. */
    work = hook_run_time(e, sl, parts, n, begin, work);
    if (work < 0)
      return -1;
    if (e->can_plan)
      slot_x_of(e, s)->rem_us = work;
  }
  if (time_add(e, s, begin, work, &end))
    return -1;
  if (e->ends_ix)
    ends_changed(e, sl);
  return heap_push(&e->heap, end, sl, s->gen);
}

int place_job(engine *e, uint32_t sl, lsched_placement *parts, int *n) {
  return place_now(e, sl, parts, n);
}

int mark_running(engine *e, uint32_t sl, const lsched_placement *parts,
                 int n) {
  return mark_now(e, sl, parts, n);
}

/* The job in slot sl, placed on parts (allocated), runs from now
 * (mark_now, commit_now). 0, or -1 with err set: time_add's message, else
 * out of memory. */
static inline __attribute__((always_inline)) int
run_now(engine *e, uint32_t sl, const lsched_placement *parts, int n) {
  if (mark_now(e, sl, parts, n) || commit_now(e, sl, parts, n)) {
    if (!e->err[0])
      snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  return 0;
}

int start_running(engine *e, uint32_t sl, const lsched_placement *parts,
                  int n) {
  return run_now(e, sl, parts, n);
}

/* (run_now inline, for one part: a backfill candidate's start made three
 * calls.) */
int start_placed(engine *e, uint32_t sl, const lsched_placement *p) {
  int rc = lsched_alloc(e->sc->c, p);
  if (rc != LSCHED_OK)
    return policy_failed(e, sl, rc);
  return run_now(e, sl, p, 1);
}

int try_start(engine *e, uint32_t sl) {
  lsched_placement parts[SIM_MAX_PARTS];
  int n = 0;
  int r = place_now(e, sl, parts, &n);
  if (r <= 0)
    return r;
  return run_now(e, sl, parts, n) ? -1 : 1;
}

int slot_retime(engine *e, uint32_t sl, int64_t end) {
  slot *s = &e->slots[sl];
  s->gen++; /* its old completion event is now stale */
  if (e->ends_ix)
    ends_changed(e, sl); /* its estimated end may have moved */
  return heap_push(&e->heap, end, sl, s->gen);
}
