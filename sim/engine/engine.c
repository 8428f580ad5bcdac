/*
 * The replay engine. See engine.h for the model; the definitions of every
 * reported number are in DESIGN.md section 6 and restated next to the code
 * that computes them.
 */
#include "engine.h"
#include "request.h"
#include "fragtrack.h"
#include "heap.h"
#include "pctl.h"

#include <libsched/migrate.h>

#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { EV_FINISH = 1 };

__extension__ typedef __int128 i128;

#define US_PER_HOUR 3600000000.0

void sim_fmt_seconds(char *buf, size_t len, int64_t us) {
  const char *sign = us < 0 ? "-" : "";
  uint64_t a = us < 0 ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
  uint64_t s = a / 1000000u, f = a % 1000000u;
  if (f == 0) {
    snprintf(buf, len, "%s%" PRIu64, sign, s);
    return;
  }
  char frac[8];
  snprintf(frac, sizeof frac, "%06" PRIu64, f);
  for (int i = 5; i > 0 && frac[i] == '0'; i--)
    frac[i] = 0;
  snprintf(buf, len, "%s%" PRIu64 ".%s", sign, s, frac);
}

int sim_queue_parse(const char *name, sim_queue_kind *out) {
  static const char *const names[] = {"fifo", "skip", "backfill", "priority"};
  for (int i = 0; i < 4; i++)
    if (strcmp(name, names[i]) == 0) {
      *out = (sim_queue_kind)i;
      return 0;
    }
  return -1;
}

void sim_result_free(sim_result *r) {
  free(r->js);
  for (size_t g = 0; g < r->ngangs; g++)
    free(r->gangs[g].parts);
  free(r->gangs);
  free(r->reserved_us);
  free(r->migrations);
  free(r->preemptions);
  free(r->lost_gpu_s);
  sim_mig_result_free(r->mig);
  memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------------- */
/* Job sources: a loaded trace (sorted on the fly when it is not in submit
 * order) or a trace stream read twice. */

typedef struct job_src {
  const trace *t;         /* loaded trace, or NULL */
  uint32_t *order;        /* t's jobs by (submit, index); NULL: file order */
  size_t pos;
  trace_stream *s;        /* stream, or NULL */
  uint64_t count;         /* jobs handed out in this pass */
  int64_t last_submit;
  int64_t last_line;
} job_src;

/* The trace-wide facts (path, specs) of a source. */
static const trace *src_meta(const job_src *src) {
  return src->t ? src->t : trace_stream_meta(src->s);
}

/* Jobs in arrival order: by submit time, ties in trace order. */
typedef struct arrival {
  int64_t submit;
  uint32_t idx;
} arrival;

static int cmp_arrival(const void *a, const void *b) {
  const arrival *x = a, *y = b;
  if (x->submit != y->submit)
    return x->submit < y->submit ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Next job in arrival order: 1 with *jr, *name and *idx (position in the
 * file) set, 0 at the end, -1 with err set. A stream must be in submit
 * order: -3 when it is not. */
static int src_next(job_src *src, job_record *jr, const char **name,
                    uint64_t *idx, char *err, size_t errlen) {
  if (src->t) {
    if (src->pos >= src->t->n)
      return 0;
    size_t j = src->order ? src->order[src->pos] : src->pos;
    src->pos++;
    *jr = src->t->jobs[j];
    *name = trace_job_name(src->t, j);
    *idx = j;
    return 1;
  }
  trace_error te;
  te.msg[0] = 0;
  int r = trace_stream_next(src->s, jr, name, &te);
  if (r < 0) {
    snprintf(err, errlen, "%s", te.msg);
    /* Running out of memory is a failure of the run, not of its input. */
    return strstr(te.msg, "out of memory") ? -2 : -1;
  }
  if (r == 0)
    return 0;
  if (src->count > 0 && jr->submit_us < src->last_submit) {
    snprintf(err, errlen,
             "%s:%" PRId64 ": jobs are not in submit order (this job is "
             "submitted before the one on line %" PRId64 ")",
             trace_stream_meta(src->s)->path, (int64_t)jr->line, src->last_line);
    return -3;
  }
  src->last_submit = jr->submit_us;
  src->last_line = jr->line;
  *idx = src->count++;
  return 1;
}

static int src_rewind(job_src *src, char *err, size_t errlen) {
  src->pos = 0;
  src->count = 0;
  src->last_submit = INT64_MIN;
  if (src->s) {
    trace_error te;
    te.msg[0] = 0;
    if (trace_stream_rewind(src->s, &te)) {
      snprintf(err, errlen, "%s", te.msg);
      return strstr(te.msg, "out of memory") ? -2 : -1;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------------- */

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

typedef struct run_end {
  int64_t end;
  uint64_t idx; /* trace position: the tie-break */
  uint32_t job; /* slot */
} run_end;

/*
 * The state of a job between its arrival and its final outcome. Slots are
 * recycled, so the engine's memory follows the running and queued jobs, not
 * the trace. Events and queues name slots; `gen` changes whenever a slot's
 * pending completion event becomes stale (a move, a preemption, a new
 * occupant), so a stale event is recognised by its tag.
 */
typedef struct slot {
  /* First cache line: what placing and completing a job touch. */
  job_state st;          /* 32 bytes */
  uint32_t gen;          /* tag of its live completion event */
  uint32_t run_pos;      /* index in run_list while running */
  uint32_t shape;        /* fragtrack shape */
  int ngang;             /* parts when on several nodes (else 0) */
  const char *name;      /* loaded traces: the trace's; streams: names[slot] */
  uint64_t idx;          /* position in the trace file */
  /* Second: the job's record. */
  job_record rec;
  /* Third: gang parts, migration / preemption, backfill. */
  lsched_placement *gang; /* parts of a job on several nodes */
  int64_t rem_us;        /* work left when the current segment started */
  int64_t seg_us;        /* start of the current run segment */
  double lost_gpu_s;     /* GPU-seconds of progress lost */
  uint16_t nmig, npre;
  int64_t reserved_us;   /* backfill: first reservation as head, or -1 */
} slot;

/* Slots are 64-byte aligned so that each part above is one cache line
 * (a million-job replay holds ~13,000 slots, more than the L2 cache). */
#define SLOT_ALIGN 64

typedef struct engine {
  sim_cluster *sc;
  const sim_options *opt;
  job_src *src;
  const trace *meta;     /* path and specs */
  lsched_policy *pol;
  slot *slots;           /* inside slots_raw, SLOT_ALIGN-aligned */
  void *slots_raw;
  size_t nslots, slots_cap;
  /* Streams: per slot, a name buffer kept across its occupants (no
   * allocation per arrival once it is long enough). */
  struct name_buf {
    char *buf;
    size_t cap;
  } *names;
  uint32_t *free_slots;  /* recycled slot indexes (a stack) */
  size_t nfree;
  uint64_t *spec_mask;   /* per trace spec */
  uint8_t *spec_absent;  /* per trace spec: no allowed model in cluster */
  int nspecs_resolved, specs_cap;
  event_heap heap;
  uint32_t *queue;       /* slots, FIFO order */
  size_t qhead, qlen, qcap; /* live entries queue[qhead .. qhead+qlen) */
  size_t new_from;       /* queue offset (from qhead) of unseen arrivals */
  int freed;             /* resources released since the last pass */
  int queue_changed;     /* arrivals since the last pass */
  uint32_t head_tried;   /* head slot that last failed (head-of-line modes) */
  uint32_t *run_list;    /* running slots (any order) */
  size_t nrun, run_cap;
  run_end *scratch_ends;
  size_t scratch_cap;
  int can_plan;          /* the policy plans migrations */
  double *node_gpu_gib;  /* GPU memory of each node's model, GiB */
  lsched_running *plan_run;
  lsched_placement *plan_parts;
  size_t plan_cap;
  uint64_t migrations, preemptions;
  double lost_gpu_s_total;
  uint32_t plan_failed;  /* head whose last plan failed */
  int64_t total_milli;
  sim_mig *mig;          /* MIG state; NULL without MIG GPUs */
  sim_fragtrack *ft;     /* fragmentation and stranded capacity */
  int reservation_valid;
  int64_t reservation_t;
  memo_entry *memo;
  uint32_t memo_gen;
  /* time-weighted state */
  int64_t now;
  int64_t alloc_milli;   /* allocated GPU milli now */
  size_t running;
  i128 alloc_area;       /* integral of alloc_milli dt (milli x us) */
  uint64_t events;
  size_t done;
  /* outcomes (DESIGN.md section 6), summed as jobs become final */
  sim_result *out;
  pctl qt, jct, qt_multi;
  double run_us, used_milli_us, cost_alloc;
  sim_result *fill;      /* sim_run without on_job: per-job arrays */
  size_t gangs_cap;
  char *err;
  size_t errlen;
} engine;

static void build_request(const engine *e, const slot *s, lsched_request *r) {
  const job_record *j = &s->rec;
  sim_job_request(j, j->gpu_spec >= 0 ? e->spec_mask[j->gpu_spec] : 0, r);
  if (e->mig)
    sim_mig_request(e->mig, (uint32_t)s->idx, r);
}

static const char *slot_name(const slot *s) {
  return s->name ? s->name : "";
}

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
  return NULL; /* table crowded: do not memoise this shape */
}

/* Advances the time-weighted integrals to time t. */
static void advance(engine *e, int64_t t) {
  int64_t dt = t - e->now;
  if (dt > 0) {
    e->alloc_area += (i128)e->alloc_milli * dt;
    fragtrack_advance(e->ft, dt);
    if (e->mig)
      sim_mig_advance(e->mig, dt);
  }
  e->now = t;
}

static int64_t job_duration(const engine *e, const job_record *j) {
  return j->duration_us >= 0 ? j->duration_us : e->opt->unknown_duration_us;
}

/* Grows an array of elem-sized entries to hold need; 0 or -1. */
static int grow_array(void **p, size_t *cap, size_t need, size_t elem) {
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

/* A slot for an arriving job (the slots array may move). UINT32_MAX when
 * out of memory. */
static uint32_t slot_get(engine *e) {
  if (e->nfree > 0)
    return e->free_slots[--e->nfree];
  if (e->nslots == UINT32_MAX - 1)
    return UINT32_MAX;
  if (e->nslots == e->slots_cap) {
    size_t cap = e->slots_cap ? 2 * e->slots_cap : 256;
    /* malloc (the allocator tests hook it), aligned by hand. */
    void *raw = malloc(cap * sizeof(slot) + SLOT_ALIGN);
    if (!raw)
      return UINT32_MAX;
    slot *ns = (slot *)(((uintptr_t)raw + SLOT_ALIGN - 1) &
                        ~(uintptr_t)(SLOT_ALIGN - 1));
    if (e->nslots)
      memcpy(ns, e->slots, e->nslots * sizeof(slot));
    free(e->slots_raw);
    e->slots_raw = raw;
    e->slots = ns;
    size_t fcap = e->slots_cap, ncap = e->slots_cap;
    if (grow_array((void **)&e->free_slots, &fcap, cap, sizeof(uint32_t)) ||
        grow_array((void **)&e->run_list, &e->run_cap, cap, sizeof(uint32_t)) ||
        grow_array((void **)&e->names, &ncap, cap, sizeof *e->names))
      return UINT32_MAX;
    memset(e->names + e->slots_cap, 0,
           (cap - e->slots_cap) * sizeof *e->names);
    e->slots_cap = cap;
  }
  e->slots[e->nslots].gen = 0;
  return (uint32_t)e->nslots++;
}

static void slot_put(engine *e, uint32_t sl) {
  slot *s = &e->slots[sl];
  s->name = NULL;
  if (s->ngang) {
    free(s->gang);
    s->gang = NULL;
    s->ngang = 0;
  }
  s->gen++; /* any event left for it is stale */
  /* The slot's next occupant is another job. */
  if (e->head_tried == sl)
    e->head_tried = UINT32_MAX;
  if (e->plan_failed == sl)
    e->plan_failed = UINT32_MAX;
  e->free_slots[e->nfree++] = sl;
}

/* ---- placing, starting and finishing jobs ---- */

/* Placements of the job in slot sl (1 part, or its gang parts); returns
 * the count. */
static int job_parts(const engine *e, uint32_t sl, lsched_placement *parts) {
  const slot *s = &e->slots[sl];
  if (s->ngang > 1) {
    memcpy(parts, s->gang, (size_t)s->ngang * sizeof *parts);
    return s->ngang;
  }
  const job_record *jr = &s->rec;
  parts[0].node = s->st.node;
  parts[0].gpu_count = jr->num_gpu;
  parts[0].gpu_milli = jr->num_gpu > 0 ? s->st.gpu_milli : 0;
  parts[0].gpu_mask = s->st.gpu_mask;
  parts[0].cpu_milli = jr->cpu_milli;
  parts[0].memory_mib = jr->memory_mib;
  if (e->mig)
    sim_mig_fill(e->mig, (uint32_t)s->idx, &parts[0]);
  return 1;
}

static int64_t parts_milli(const lsched_placement *parts, int n) {
  int64_t m = 0;
  for (int i = 0; i < n; i++)
    m += (int64_t)parts[i].gpu_count * parts[i].gpu_milli;
  return m;
}

/* err for a failed percentile accumulator (out of memory, or the
 * temporary file it spills to could not be written or read). */
static void pctl_fail(engine *e) {
  const pctl *p[3] = {&e->qt, &e->qt_multi, &e->jct};
  for (int i = 0; i < 3; i++)
    if (pctl_error(p[i])[0]) {
      snprintf(e->err, e->errlen, "queue time / JCT percentiles: %s",
               pctl_error(p[i]));
      return;
    }
  snprintf(e->err, e->errlen, "queue time / JCT percentiles failed");
}

/* The final outcome of the job in slot sl: adds it to the results (the
 * definitions are DESIGN.md section 6), hands it to on_job or to the
 * per-job arrays, and frees the slot. 0, or -1 with err set. */
static int emit(engine *e, uint32_t sl) {
  slot *s = &e->slots[sl];
  const job_record *jr = &s->rec;
  sim_result *out = e->out;
  lsched_placement parts[SIM_MAX_PARTS];
  int np = 0;
  if (s->st.status == JOB_QUEUED) /* cannot happen: see sim_loop() */
    s->st.status = JOB_NEVER_QUEUED;
  switch (s->st.status) {
  case JOB_DONE: {
    out->completed++;
    double q = (double)(s->st.start_us - jr->submit_us) / 1e6;
    if (pctl_add(&e->qt, q) ||
        (jr->num_gpu > 1 && pctl_add(&e->qt_multi, q)) ||
        pctl_add(&e->jct, (double)(s->st.finish_us - jr->submit_us) / 1e6)) {
      pctl_fail(e);
      return -1;
    }
    double run = (double)(s->st.finish_us - s->st.start_us);
    e->run_us += run;
    e->used_milli_us += (double)jr->num_gpu * jr->gpu_milli * run;
    /* Allocated cost = sum over jobs of the node's price x GPUs taken x
     * run time, per job. */
    np = job_parts(e, sl, parts);
    for (int k = 0; k < np; k++)
      e->cost_alloc += e->sc->node_price[parts[k].node] *
                       (double)parts[k].gpu_count *
                       (double)parts[k].gpu_milli / 1000.0 * run /
                       US_PER_HOUR;
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
    e->lost_gpu_s_total += s->lost_gpu_s;
  if (e->opt->on_job) {
    sim_job_out o;
    o.index = s->idx;
    o.rec = jr;
    o.name = slot_name(s);
    o.st = &s->st;
    o.parts = parts;
    o.nparts = np;
    o.planned = e->can_plan;
    /* The third cache line of the slot only when it holds something. */
    o.migrations = e->can_plan ? s->nmig : 0;
    o.preemptions = e->can_plan ? s->npre : 0;
    o.lost_gpu_s = e->can_plan ? s->lost_gpu_s : 0;
    o.reserved_us = e->opt->queue == SIM_QUEUE_BACKFILL ? s->reserved_us : -1;
    o.mig_kind = o.mig_start = 0;
    o.mig_wait_us = 0;
    if (e->mig)
      sim_mig_job(e->mig, (uint32_t)s->idx, &o.mig_kind, &o.mig_start,
                  &o.mig_wait_us);
    if (e->opt->on_job(e->opt->on_job_user, &o)) {
      snprintf(e->err, e->errlen, "job output failed (%s)", o.name);
      return -1;
    }
  } else {
    sim_result *r = e->fill;
    job_state st = s->st;
    if (s->ngang > 1) { /* the parts move into the result */
      if (grow_array((void **)&r->gangs, &e->gangs_cap, r->ngangs + 1,
                     sizeof *r->gangs)) {
        snprintf(e->err, e->errlen, "out of memory");
        return -1;
      }
      r->gangs[r->ngangs].parts = s->gang;
      r->gangs[r->ngangs].n = s->ngang;
      s->gang = NULL;
      st.node = -2 - (int32_t)r->ngangs++;
      st.gpu_mask = 0;
    }
    r->js[s->idx] = st;
    if (r->reserved_us)
      r->reserved_us[s->idx] = s->reserved_us;
    if (r->migrations) {
      r->migrations[s->idx] = s->nmig;
      r->preemptions[s->idx] = s->npre;
      r->lost_gpu_s[s->idx] = s->lost_gpu_s;
    }
  }
  slot_put(e, sl);
  return 0;
}

/* Places and allocates the job in slot sl now (gang jobs all-or-nothing).
 * 1 placed, 0 no fit (memoised per pass), -1 internal error. */
static int place_job(engine *e, uint32_t sl, lsched_placement *parts, int *n) {
  lsched_request req;
  build_request(e, &e->slots[sl], &req);
  /* On a cluster with MIG and plain GPUs a job tries its MIG variant when
   * its plain one does not fit (mig_sim.h). */
  int rc = LSCHED_ENOFIT;
  for (int v = 0; v < 2 && rc == LSCHED_ENOFIT; v++) {
    if (v == 1 &&
        !(e->mig && sim_mig_other(e->mig, (uint32_t)e->slots[sl].idx, &req)))
      break;
    int found = 0;
    memo_entry *m = memo_slot(e, &req, &found);
    if (found)
      continue;
    if (e->mig)
      sim_mig_before_place(e->mig);
    rc = lsched_place_gang(e->pol, &req, parts, SIM_MAX_PARTS, n);
    if (rc == LSCHED_ENOFIT || rc == LSCHED_ELIMIT) {
      if (m) {
        m->cpu = req.cpu_milli;
        m->mem = req.memory_mib;
        m->k = req.gpu_count;
        m->milli = req.gpu_milli;
        m->mask = req.model_mask;
        m->mig = memo_mig(&req);
        m->mig_mem = req.mig_memory_mib;
        m->gen = e->memo_gen;
      }
      rc = LSCHED_ENOFIT;
    }
  }
  if (rc == LSCHED_ENOFIT)
    return 0;
  if (rc != LSCHED_OK) {
    snprintf(e->err, e->errlen, "job %s: policy %s: %s (%s)",
             slot_name(&e->slots[sl]), e->opt->policy, lsched_strerror(rc),
             lsched_cluster_errmsg(e->sc->c));
    return -1;
  }
  return 1;
}

static void unplace(engine *e, const lsched_placement *parts, int n) {
  while (n-- > 0)
    lsched_release(e->sc->c, &parts[n]);
}

/* Records the job in slot sl as running on parts (not yet in the event
 * heap). */
static int mark_running(engine *e, uint32_t sl, const lsched_placement *parts,
                        int n) {
  slot *s = &e->slots[sl];
  if (s->st.start_us < 0)
    s->st.start_us = e->now; /* queue time counts to the first start */
  s->st.status = JOB_RUNNING;
  s->st.node = parts[0].node;
  s->st.gpu_milli = (int16_t)parts[0].gpu_milli;
  if (n == 1) {
    s->st.gpu_mask = parts[0].gpu_mask;
  } else {
    s->gang = malloc((size_t)n * sizeof *parts);
    if (!s->gang)
      return -1;
    memcpy(s->gang, parts, (size_t)n * sizeof *parts);
    s->ngang = n;
    s->st.gpu_mask = 0;
  }
  s->run_pos = (uint32_t)e->nrun;
  e->run_list[e->nrun++] = sl;
  fragtrack_queued(e->ft, s->shape, -1);
  if (e->mig) {
    sim_mig_placed(e->mig, (uint32_t)s->idx, parts, n);
    sim_mig_queued(e->mig, (uint32_t)s->idx, -1);
  }
  return 0;
}

static void run_list_remove(engine *e, uint32_t sl) {
  uint32_t pos = e->slots[sl].run_pos, last = e->run_list[--e->nrun];
  e->run_list[pos] = last;
  e->slots[last].run_pos = pos;
}

/* Undoes mark_running (the job goes back to the queue). */
static void unmark_running(engine *e, uint32_t sl) {
  slot *s = &e->slots[sl];
  if (s->ngang) {
    free(s->gang);
    s->gang = NULL;
    s->ngang = 0;
  }
  run_list_remove(e, sl);
  if (!e->can_plan || s->npre == 0)
    s->st.start_us = -1;
  s->st.node = -1;
  s->st.gpu_mask = 0;
  s->st.gpu_milli = 0;
  s->st.status = JOB_QUEUED;
  fragtrack_queued(e->ft, s->shape, 1);
  if (e->mig)
    sim_mig_queued(e->mig, (uint32_t)s->idx, 1);
}

/* Makes a marked job run: its completion event and the allocation sums. */
static int commit_running(engine *e, uint32_t sl,
                          const lsched_placement *parts, int n) {
  slot *s = &e->slots[sl];
  e->alloc_milli += parts_milli(parts, n);
  e->running++;
  e->reservation_valid = 0;
  int64_t work = job_duration(e, &s->rec);
  /* A new MIG instance is usable after its reconfiguration delay: the job
   * holds its resources from now and runs from now + wait. */
  int64_t wait =
      e->mig ? sim_mig_commit(e->mig, (uint32_t)s->idx, parts, n, e->now) : 0;
  if (wait > 0 && s->st.start_us == e->now)
    s->st.start_us += wait;
  if (e->can_plan) {
    s->seg_us = e->now + wait;
    work = s->rem_us;
  }
  return heap_push(&e->heap, e->now + wait + work, sl, s->gen);
}

/* Tries to start the job in slot sl now. 1 started, 0 no fit, -1 error. */
static int try_start(engine *e, uint32_t sl) {
  lsched_placement parts[SIM_MAX_PARTS];
  int n = 0;
  int r = place_job(e, sl, parts, &n);
  if (r <= 0)
    return r;
  if (mark_running(e, sl, parts, n) || commit_running(e, sl, parts, n)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  return 1;
}

/* The job in slot sl completes now. 0, or -1 with err set. */
static int finish(engine *e, uint32_t sl) {
  slot *s = &e->slots[sl];
  lsched_placement parts[SIM_MAX_PARTS];
  int n = job_parts(e, sl, parts);
  for (int i = n - 1; i >= 0; i--) {
    int rc = lsched_release(e->sc->c, &parts[i]);
    if (rc) {
      snprintf(e->err, e->errlen, "job %s: release failed: %s (%s)",
               slot_name(s), lsched_strerror(rc),
               lsched_cluster_errmsg(e->sc->c));
      return -1;
    }
  }
  e->alloc_milli -= parts_milli(parts, n);
  e->running--;
  e->done++;
  fragtrack_completed(e->ft);
  run_list_remove(e, sl);
  s->st.finish_us = e->now;
  s->st.status = JOB_DONE;
  e->freed = 1;
  e->reservation_valid = 0;
  return emit(e, sl);
}

/* ---- queue order ---- */

/* Priority class of a job for the `priority` discipline: Guaranteed 3,
 * LS 2, Burstable 1, BE and unknown 0. Higher runs first. */
static int job_priority(const job_record *jr) {
  switch (jr->qos) {
  case TRACE_QOS_GUARANTEED:
    return 3;
  case TRACE_QOS_LS:
    return 2;
  case TRACE_QOS_BURSTABLE:
    return 1;
  default:
    return 0;
  }
}

/* Makes room for one more queue entry at the end: moves the live entries
 * to the front when the head has advanced, else grows. 0 or -1. */
static int queue_room(engine *e) {
  if (e->qhead + e->qlen < e->qcap)
    return 0;
  if (e->qhead > 0 && e->qhead >= e->qlen / 2) {
    memmove(e->queue, e->queue + e->qhead, e->qlen * sizeof *e->queue);
    e->qhead = 0;
    return 0;
  }
  return grow_array((void **)&e->queue, &e->qcap, e->qhead + e->qlen + 1,
                    sizeof *e->queue);
}

/* Appends an arrival; under `priority` it goes behind every queued job of
 * its class or higher (FIFO within a class). */
static int enqueue(engine *e, uint32_t sl) {
  if (queue_room(e))
    return -1;
  size_t pos = e->qlen;
  if (e->opt->queue == SIM_QUEUE_PRIORITY) {
    int p = job_priority(&e->slots[sl].rec);
    while (pos > 0 &&
           job_priority(&e->slots[e->queue[e->qhead + pos - 1]].rec) < p)
      pos--;
    memmove(&e->queue[e->qhead + pos + 1], &e->queue[e->qhead + pos],
            (e->qlen - pos) * sizeof *e->queue);
  }
  e->queue[e->qhead + pos] = sl;
  e->qlen++;
  fragtrack_queued(e->ft, e->slots[sl].shape, 1);
  if (e->mig)
    sim_mig_queued(e->mig, (uint32_t)e->slots[sl].idx, 1);
  return 0;
}

/* Estimated end of the job in slot sl if it started at `start`: the
 * runtime estimate is the actual duration x the configured factor (rounded
 * up to a microsecond; EASY backfilling needs estimates, not the truth). */
static int64_t est_end(const engine *e, uint32_t sl, int64_t start) {
  double f = e->opt->estimate_factor > 0 ? e->opt->estimate_factor : 1.0;
  double d = ceil((double)job_duration(e, &e->slots[sl].rec) * f);
  if (d > 9.2e18 - (double)start)
    return INT64_MAX;
  return start + (int64_t)d;
}

/* Estimated end of a running job: its current segment's start plus the
 * estimate of the work it had left then (migrations and preemptions move
 * segments). */
static int64_t running_est_end(const engine *e, uint32_t sl) {
  const slot *s = &e->slots[sl];
  if (!e->can_plan)
    return est_end(e, sl, s->st.start_us);
  double f = e->opt->estimate_factor > 0 ? e->opt->estimate_factor : 1.0;
  double d = ceil((double)s->rem_us * f);
  if (d > 9.2e18 - (double)s->seg_us)
    return INT64_MAX;
  return s->seg_us + (int64_t)d;
}

/* Running jobs by estimated end; ties by trace position (not by slot, so
 * that the order does not depend on slot recycling). */
static int cmp_run_end(const void *a, const void *b) {
  const run_end *x = a, *y = b;
  if (x->end != y->end)
    return x->end < y->end ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/*
 * EASY reservation of the head job h: the earliest estimated time at which
 * h could start if nothing else started. Running jobs are released on the
 * real cluster in order of estimated end (ties released together) and h is
 * tried after each group; then everything is allocated back, which restores
 * the state exactly. INT64_MAX if h cannot start even on the freed cluster.
 * O(R log R + R x place) for R running jobs.
 */
static int64_t reservation(engine *e, uint32_t h, int *fail) {
  size_t r = e->nrun;
  if (grow_array((void **)&e->scratch_ends, &e->scratch_cap, r + 1,
                 sizeof *e->scratch_ends)) {
    *fail = 1;
    return INT64_MAX;
  }
  run_end *ends = e->scratch_ends;
  for (size_t i = 0; i < r; i++) {
    uint32_t j = e->run_list[i];
    ends[i].job = j;
    ends[i].idx = e->slots[j].idx;
    ends[i].end = running_est_end(e, j);
    if (ends[i].end < e->now)
      ends[i].end = e->now; /* overran its estimate: assume it ends now */
  }
  qsort(ends, r, sizeof *ends, cmp_run_end);
  lsched_request req;
  build_request(e, &e->slots[h], &req);
  lsched_placement parts[SIM_MAX_PARTS], hp[SIM_MAX_PARTS];
  int64_t t = INT64_MAX;
  size_t released = 0;
  while (released < r) {
    int64_t te = ends[released].end;
    while (released < r && ends[released].end == te) {
      int n = job_parts(e, ends[released].job, parts);
      for (int k = n - 1; k >= 0; k--)
        if (lsched_release(e->sc->c, &parts[k]))
          *fail = 1;
      released++;
    }
    int hn = 0;
    if (lsched_place_gang(e->pol, &req, hp, SIM_MAX_PARTS, &hn) ==
        LSCHED_OK) {
      unplace(e, hp, hn);
      t = te;
      break;
    }
  }
  while (released-- > 0) {
    int n = job_parts(e, ends[released].job, parts);
    for (int k = 0; k < n; k++)
      if (lsched_alloc(e->sc->c, &parts[k]))
        *fail = 1;
  }
  return t;
}

/* ---- migration and preemption ---- */

/* What moving the job on p costs: fixed + per GiB of GPU memory it holds
 * (GPUs x share x the node model's memory). */
static double move_cost_s(const engine *e, const lsched_placement *p) {
  double gib = (double)p->gpu_count * p->gpu_milli / 1000.0 *
               e->node_gpu_gib[p->node];
  return e->opt->migration_fixed_s + e->opt->migration_per_gib_s * gib;
}

static int grow_plan(engine *e, size_t need) {
  if (need <= e->plan_cap)
    return 0;
  size_t nc = e->plan_cap ? e->plan_cap : 256;
  while (nc < need)
    nc *= 2;
  lsched_running *r = realloc(e->plan_run, nc * sizeof *r);
  if (r)
    e->plan_run = r;
  lsched_placement *p = realloc(e->plan_parts, nc * sizeof *p);
  if (p)
    e->plan_parts = p;
  if (!r || !p)
    return -1;
  e->plan_cap = nc;
  return 0;
}

/* Puts the job in slot sl right behind the head of the queue (a preempted
 * job resumes before later arrivals). */
static int requeue_front(engine *e, uint32_t sl) {
  if (queue_room(e))
    return -1;
  size_t pos = e->qlen > 0 ? 1 : 0;
  memmove(&e->queue[e->qhead + pos + 1], &e->queue[e->qhead + pos],
          (e->qlen - pos) * sizeof *e->queue);
  e->queue[e->qhead + pos] = sl;
  e->qlen++;
  fragtrack_queued(e->ft, e->slots[sl].shape, 1);
  if (e->mig)
    sim_mig_queued(e->mig, (uint32_t)e->slots[sl].idx, 1);
  return 0;
}

/*
 * The head h is blocked. If the cluster's free GPU capacity would hold it,
 * asks the policy for a plan (budget: max_moves, max_moves_per_job, and the
 * head's expected wait = its EASY reservation - now) and applies it:
 * migration reserves the target, frees the source, and the job resumes on
 * the target after its move cost with its remaining work; preemption stops
 * the job, keeps the progress of whole checkpoint intervals, and requeues
 * it behind the head. 1 if anything moved, 0 if not, -1 on error.
 */
static int defragment(engine *e, uint32_t h) {
  lsched_request req;
  build_request(e, &e->slots[h], &req);
  if ((int64_t)req.gpu_count * req.gpu_milli > e->total_milli - e->alloc_milli)
    return 0; /* not a fragmentation problem: capacity is short */
  int fail = 0;
  int64_t t = reservation(e, h, &fail);
  if (fail || grow_plan(e, e->nrun + 1)) {
    snprintf(e->err, e->errlen, "defrag: %s",
             fail ? "inconsistent state" : "out of memory");
    return -1;
  }
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  b.max_moves = e->opt->max_moves;
  b.max_moves_per_job = e->opt->max_moves_per_job;
  b.expected_wait_s = t == INT64_MAX ? 1e18 : (double)(t - e->now) / 1e6;
  for (size_t i = 0; i < e->nrun; i++) {
    uint32_t j = e->run_list[i];
    const slot *s = &e->slots[j];
    lsched_running *r = &e->plan_run[i];
    lsched_placement parts[SIM_MAX_PARTS];
    int n = job_parts(e, j, parts);
    e->plan_parts[i] = parts[0];
    r->id = j;
    build_request(e, s, &r->request);
    r->parts = n == 1 ? &e->plan_parts[i] : NULL;
    r->nparts = n;
    r->move_cost_s = move_cost_s(e, &parts[0]);
    /* A job still inside its move (segment not started) is not moved. */
    r->moves = s->seg_us > e->now ? 1 << 20 : s->nmig + s->npre;
  }
  lsched_move moves[64];
  size_t nm = 0;
  int rc = lsched_policy_plan_migrations(e->pol, &req, e->plan_run, e->nrun,
                                         &b, moves, 64, &nm);
  if (rc == LSCHED_ENOFIT || (rc == LSCHED_OK && nm == 0))
    return 0;
  if (rc != LSCHED_OK) {
    snprintf(e->err, e->errlen, "defrag: %s", lsched_strerror(rc));
    return -1;
  }
  /* Every source is released first, then every target allocated (a
   * target may use room another moved job frees; see migrate.h). */
  for (size_t m = 0; m < nm; m++)
    if (lsched_release(e->sc->c, &moves[m].from)) {
      snprintf(e->err, e->errlen, "defrag: release of %s failed: %s",
               slot_name(&e->slots[e->plan_run[moves[m].index].id]),
               lsched_cluster_errmsg(e->sc->c));
      return -1;
    }
  for (size_t m = 0; m < nm; m++) {
    uint32_t j = (uint32_t)e->plan_run[moves[m].index].id;
    slot *s = &e->slots[j];
    const lsched_placement *from = &moves[m].from;
    double gpus = (double)from->gpu_count * from->gpu_milli / 1000.0;
    int64_t end = s->seg_us + s->rem_us;
    if (!e->opt->preempt) {
      double cost = move_cost_s(e, from);
      if (lsched_alloc(e->sc->c, &moves[m].to)) {
        snprintf(e->err, e->errlen, "defrag: move of %s failed: %s",
                 slot_name(s), lsched_cluster_errmsg(e->sc->c));
        return -1;
      }
      e->alloc_milli += parts_milli(&moves[m].to, 1) - parts_milli(from, 1);
      s->rem_us = end - e->now;
      s->seg_us = e->now + llround(cost * 1e6);
      s->st.node = moves[m].to.node;
      s->st.gpu_mask = moves[m].to.gpu_mask;
      s->st.gpu_milli = (int16_t)moves[m].to.gpu_milli;
      if (e->mig)
        sim_mig_placed(e->mig, (uint32_t)s->idx, &moves[m].to, 1);
      s->st.epoch++;
      s->gen++; /* its old completion event is now stale */
      if (heap_push(&e->heap, s->seg_us + s->rem_us, j, s->gen)) {
        snprintf(e->err, e->errlen, "out of memory");
        return -1;
      }
      s->nmig++;
      s->lost_gpu_s += cost * gpus;
      e->migrations++;
    } else {
      int64_t elapsed = e->now > s->seg_us ? e->now - s->seg_us : 0;
      int64_t ck = llround(e->opt->checkpoint_s * 1e6);
      int64_t kept = ck > 0 ? elapsed / ck * ck : 0;
      if (kept > s->rem_us)
        kept = s->rem_us;
      s->rem_us -= kept;
      s->lost_gpu_s += (double)(elapsed - kept) / 1e6 * gpus;
      e->alloc_milli -= parts_milli(from, 1);
      e->running--;
      run_list_remove(e, j);
      s->st.epoch++;
      s->gen++; /* its completion event is now stale */
      s->st.status = JOB_QUEUED;
      s->st.node = -1;
      if (requeue_front(e, j)) {
        snprintf(e->err, e->errlen, "out of memory");
        return -1;
      }
      s->npre++;
      e->preemptions++;
    }
  }
  e->freed = 1;
  e->reservation_valid = 0;
  e->head_tried = UINT32_MAX;
  return 1;
}

/* ---- scheduling passes ---- */

/* Head-of-line blocking (fifo, priority): start jobs from the head while
 * they fit. The head is only retried after a release or when it changed. */
static int pass_head(engine *e) {
  if (!e->freed && e->qlen > 0 && e->queue[e->qhead] == e->head_tried)
    return 0;
  while (e->qlen > 0) {
    uint32_t j = e->queue[e->qhead];
    int r = try_start(e, j);
    if (r < 0)
      return -1;
    if (r == 0) {
      e->head_tried = j;
      break;
    }
    e->qhead++;
    e->qlen--;
  }
  return 0;
}

/* skip: without a release, jobs that failed before still fail, so only
 * unseen arrivals need a try. Started jobs are compacted out. */
static int pass_skip(engine *e) {
  size_t from = e->freed ? 0 : e->new_from;
  size_t w = e->qhead + from;
  for (size_t i = from; i < e->qlen; i++) {
    uint32_t j = e->queue[e->qhead + i];
    int r = try_start(e, j);
    if (r < 0)
      return -1;
    if (r == 0)
      e->queue[w++] = j;
  }
  e->qlen = w - e->qhead;
  return 0;
}

/*
 * EASY backfilling: the head starts as soon as it fits; while it does not,
 * it holds a reservation at its earliest estimated start time T, and a later
 * job may start now only if it fits now and either its estimated end is
 * <= T or, started, it leaves the head's reservation at or before T
 * (checked by recomputing the reservation with it running).
 */
static int pass_backfill(engine *e) {
  int changed = e->freed || e->queue_changed;
  if (pass_head(e))
    return -1;
  if (e->qlen < 2 || !changed)
    return 0;
  uint32_t h = e->queue[e->qhead];
  int fail = 0;
  if (!e->reservation_valid) {
    e->reservation_t = reservation(e, h, &fail);
    e->reservation_valid = 1;
    if (e->slots[h].reserved_us < 0)
      e->slots[h].reserved_us = e->reservation_t;
  }
  /* Without a release only unseen arrivals can newly qualify: the others
   * failed to fit (resources only shrank) or would end after T (their end
   * only moves later). */
  size_t from = e->freed ? 1 : (e->new_from > 1 ? e->new_from : 1);
  size_t w = e->qhead + from;
  for (size_t i = from; i < e->qlen && !fail; i++) {
    uint32_t j = e->queue[e->qhead + i];
    lsched_placement parts[SIM_MAX_PARTS];
    int n = 0;
    int r = place_job(e, j, parts, &n);
    if (r < 0)
      return -1;
    int start = 0;
    if (r == 1) {
      if (e->reservation_t == INT64_MAX ||
          est_end(e, j, e->now) <= e->reservation_t) {
        start = 1;
      } else {
        if (mark_running(e, j, parts, n)) {
          snprintf(e->err, e->errlen, "out of memory");
          return -1;
        }
        start = reservation(e, h, &fail) <= e->reservation_t;
        unmark_running(e, j);
      }
      if (!start)
        unplace(e, parts, n);
    }
    if (start) {
      int64_t keep_t = e->reservation_t;
      if (mark_running(e, j, parts, n) || commit_running(e, j, parts, n)) {
        snprintf(e->err, e->errlen, "out of memory");
        return -1;
      }
      /* A backfilled job never moves T later; keep it to protect the head
       * against later candidates in this pass. */
      e->reservation_t = keep_t;
      e->reservation_valid = 1;
    } else {
      e->queue[w++] = j;
    }
  }
  if (fail) {
    snprintf(e->err, e->errlen, "backfill: inconsistent release/allocation");
    return -1;
  }
  e->qlen = w - e->qhead;
  return 0;
}

static int pass(engine *e) {
  switch (e->opt->queue) {
  case SIM_QUEUE_SKIP:
    return pass_skip(e);
  case SIM_QUEUE_BACKFILL:
    return pass_backfill(e);
  default:
    return pass_head(e);
  }
}

/* One scheduling pass over the queue. 0, or -1 on internal error. */
static int schedule(engine *e) {
  e->memo_gen++;
  int rc = pass(e);
  /* A blocked head may get room by moving running jobs; a plan that failed
   * is not retried for the same head until something was released. */
  if (rc == 0 && e->can_plan && e->qlen > 0) {
    uint32_t h = e->queue[e->qhead];
    if (e->slots[h].st.status == JOB_QUEUED &&
        (e->freed || h != e->plan_failed)) {
      int d = defragment(e, h);
      if (d < 0)
        return -1;
      if (d == 0) {
        e->plan_failed = h;
      } else {
        e->memo_gen++;
        rc = pass(e);
      }
    }
  }
  e->new_from = e->qlen;
  e->freed = 0;
  e->queue_changed = 0;
  return rc;
}

static void timeline_row(engine *e, int64_t total_milli) {
  char ts[32];
  sim_fmt_seconds(ts, sizeof ts, e->now);
  double ratio = total_milli ? (double)e->alloc_milli / (double)total_milli : 0;
  fragtrack_values fv;
  fragtrack_get(e->ft, &fv);
  fprintf(e->opt->timeline, "%s,%" PRId64 ",%.6f,%zu,%zu,%.3f,%.6f,%" PRId64,
          ts, e->alloc_milli, ratio, e->running, e->qlen, fv.frag_amount,
          fv.frag_rate, fv.stranded_gpu_milli);
  if (e->mig)
    sim_mig_timeline(e->mig, e->opt->timeline);
  fputc('\n', e->opt->timeline);
}

/* Resolves the specs of the trace up to index `upto` (they are met in the
 * first pass; a stream's table grows as it reads). A spec naming an
 * unknown model is an input error at line `line`, the first job using it
 * (the first pass meets jobs in file order). */
static int resolve_specs(engine *e, const gpu_catalog *cat, int upto,
                         int64_t line) {
  const trace *t = src_meta(e->src);
  if (upto < e->nspecs_resolved)
    return 0;
  if (upto >= e->specs_cap) {
    int cap = e->specs_cap ? e->specs_cap : 16;
    while (cap <= upto)
      cap *= 2;
    uint64_t *m = realloc(e->spec_mask, (size_t)cap * sizeof *m);
    if (m)
      e->spec_mask = m;
    uint8_t *a = realloc(e->spec_absent, (size_t)cap);
    if (a)
      e->spec_absent = a;
    if (!m || !a) {
      snprintf(e->err, e->errlen, "out of memory");
      return -2;
    }
    e->specs_cap = cap;
  }
  for (int s = e->nspecs_resolved; s <= upto; s++) {
    char why[256];
    int r = sim_cluster_spec_mask(e->sc, cat, t->specs[s], &e->spec_mask[s],
                                  why, sizeof why);
    if (r < 0) {
      snprintf(e->err, e->errlen, "%s:%" PRId64 ": field 'gpu_spec': %s",
               t->path, line, why);
      return -1;
    }
    e->spec_absent[s] = (uint8_t)(r == 1);
  }
  e->nspecs_resolved = upto + 1;
  return 0;
}

/* The first pass, in file order: every job has a duration (or the run has
 * --unknown-duration), every GPU spec names known models, the request
 * shapes are counted for the typical workload. Sets *n to the job count
 * and *first to the first arrival; a loaded trace out of submit order gets
 * its arrival order in src->order. */
static int first_pass(engine *e, const gpu_catalog *cat, size_t *n,
                      int64_t *first) {
  job_src *src = e->src;
  const trace *t = src->t;
  job_record jr;
  const char *name;
  uint64_t idx;
  int sorted = 1;
  int64_t prev = INT64_MIN;
  *n = 0;
  *first = INT64_MAX;
  for (;;) {
    int r;
    if (t) { /* file order, not arrival order */
      if (*n >= t->n)
        break;
      jr = t->jobs[*n];
      name = trace_job_name(t, *n);
      r = 1;
    } else {
      r = src_next(src, &jr, &name, &idx, e->err, e->errlen);
      if (r <= 0) {
        if (r < 0)
          return r;
        break;
      }
    }
    if (jr.duration_us < 0 && e->opt->unknown_duration_us < 0) {
      snprintf(e->err, e->errlen,
               "%s:%" PRId64 ": job %s has no duration (this trace format "
               "has no times); replay needs --unknown-duration SECONDS",
               src_meta(src)->path, (int64_t)jr.line, name);
      return -1;
    }
    int rc = 0;
    if (jr.gpu_spec >= 0)
      rc = resolve_specs(e, cat, jr.gpu_spec, jr.line);
    if (rc)
      return rc;
    int absent = jr.gpu_spec >= 0 && e->spec_absent[jr.gpu_spec];
    uint64_t mask = jr.gpu_spec >= 0 ? e->spec_mask[jr.gpu_spec] : 0;
    if (fragtrack_add(e->ft, &jr, mask, absent)) {
      snprintf(e->err, e->errlen, "out of memory");
      return -2;
    }
    if (jr.submit_us < prev)
      sorted = 0;
    prev = jr.submit_us;
    if (jr.submit_us < *first)
      *first = jr.submit_us;
    ++*n;
  }
  if (t && !sorted) {
    arrival *arr = malloc(t->n * sizeof *arr);
    src->order = malloc(t->n * sizeof *src->order);
    if (!arr || !src->order) {
      free(arr);
      snprintf(e->err, e->errlen, "out of memory");
      return -2;
    }
    for (size_t j = 0; j < t->n; j++) {
      arr[j].submit = t->jobs[j].submit_us;
      arr[j].idx = (uint32_t)j;
    }
    qsort(arr, t->n, sizeof *arr, cmp_arrival);
    for (size_t j = 0; j < t->n; j++)
      src->order[j] = arr[j].idx;
    free(arr);
  }
  return 0;
}

/* A job arrives: a slot, and either a final outcome (it can never start)
 * or the queue. 0, or -1/-2 with err set. */
static int arrive(engine *e, const job_record *jr, const char *name,
                  uint64_t idx) {
  uint32_t sl = slot_get(e);
  if (sl == UINT32_MAX) {
    snprintf(e->err, e->errlen, "out of memory");
    return -2;
  }
  slot *s = &e->slots[sl];
  uint32_t gen = s->gen;
  memset(s, 0, offsetof(slot, rec));
  s->gen = gen;
  s->rec = *jr;
  s->idx = idx;
  s->st.start_us = s->st.finish_us = -1;
  s->st.node = -1;
  /* The third line only when the run uses it (gang is read only when
   * ngang is set). */
  if (e->can_plan || e->opt->queue == SIM_QUEUE_BACKFILL) {
    memset(&s->gang, 0, sizeof *s - offsetof(slot, gang));
    s->reserved_us = -1;
    s->rem_us = job_duration(e, jr);
  }
  /* A loaded trace's name is taken as a pointer now, while the job's
   * record is in cache (looked up at completion it cost a cache miss per
   * job: 5% of a million-job replay); a stream's is copied. */
  if (e->src->t) {
    s->name = name;
  } else {
    struct name_buf *nb = &e->names[sl];
    size_t len = strlen(name) + 1;
    if (len > nb->cap) {
      size_t cap = len < 32 ? 32 : len;
      char *b = realloc(nb->buf, cap);
      if (!b) {
        slot_put(e, sl);
        snprintf(e->err, e->errlen, "out of memory");
        return -2;
      }
      nb->buf = b;
      nb->cap = cap;
    }
    memcpy(nb->buf, name, len);
    s->name = nb->buf;
  }
  e->events++;
  int absent = jr->gpu_spec >= 0 && e->spec_absent[jr->gpu_spec];
  uint64_t mask = jr->gpu_spec >= 0 ? e->spec_mask[jr->gpu_spec] : 0;
  s->shape = fragtrack_shape(e->ft, jr, mask, absent);
  lsched_request req;
  build_request(e, s, &req);
  if (absent && jr->num_gpu > 0) {
    s->st.status = JOB_NEVER_MODEL;
    return emit(e, sl) ? -2 : 0;
  }
  if (!lsched_can_ever_fit_gang(e->sc->c, &req) &&
      !(e->mig && sim_mig_other(e->mig, (uint32_t)idx, &req) &&
        lsched_can_ever_fit_gang(e->sc->c, &req))) {
    s->st.status = JOB_NEVER_NO_NODE;
    return emit(e, sl) ? -2 : 0;
  }
  s->st.status = JOB_QUEUED;
  if (enqueue(e, sl)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -2;
  }
  e->queue_changed = 1;
  return 0;
}

/* Sets up the policy (parameters, seed). 0, -1 (input) or -2. */
static int setup_policy(engine *e, lsched_registry **reg) {
  const sim_options *opt = e->opt;
  char *err = e->err;
  size_t errlen = e->errlen;
  int rc;
  if ((rc = lsched_registry_create(reg, NULL)) ||
      (rc = lsched_registry_add_builtins(*reg))) {
    snprintf(err, errlen, "registry: %s", lsched_strerror(rc));
    return -2;
  }
  const lsched_policy_ops *ops = lsched_registry_find(*reg, opt->policy);
  if (!ops) {
    int len = snprintf(err, errlen, "unknown policy '%s' (available:",
                       opt->policy);
    for (size_t i = 0; i < lsched_registry_count(*reg) && len > 0 &&
                       (size_t)len < errlen;
         i++)
      len += snprintf(err + len, errlen - (size_t)len, " %s",
                      lsched_registry_at(*reg, i)->name);
    if (len > 0 && (size_t)len < errlen)
      snprintf(err + len, errlen - (size_t)len, ")");
    return -1;
  }
  if ((rc = lsched_policy_create(&e->pol, e->sc->c, ops))) {
    snprintf(err, errlen, "policy %s: %s", opt->policy, lsched_strerror(rc));
    return -2;
  }
  char seedbuf[32];
  snprintf(seedbuf, sizeof seedbuf, "%" PRIu64, opt->seed);
  rc = lsched_policy_set_param(e->pol, "seed", seedbuf);
  if (rc != LSCHED_OK && rc != LSCHED_ENOENT) {
    snprintf(err, errlen, "policy %s: seed: %s", opt->policy,
             lsched_strerror(rc));
    return -2;
  }
  for (int i = 0; i < opt->npolicy_params; i++) {
    char key[128];
    const char *kv = opt->policy_params[i], *eq = strchr(kv, '=');
    size_t kl = eq ? (size_t)(eq - kv) : 0;
    if (!eq || kl == 0 || kl >= sizeof key) {
      snprintf(err, errlen, "--policy-param '%s': expected KEY=VALUE", kv);
      return -1;
    }
    memcpy(key, kv, kl);
    key[kl] = 0;
    rc = lsched_policy_set_param(e->pol, key, eq + 1);
    if (rc != LSCHED_OK) {
      snprintf(err, errlen, "policy %s: parameter '%s' = '%s': %s",
               opt->policy, key, eq + 1,
               rc == LSCHED_ENOENT ? "unknown parameter" : lsched_strerror(rc));
      return -1;
    }
  }
  /* Does the policy plan migrations? (ENOENT: no.) */
  lsched_request probe = LSCHED_REQUEST_INIT;
  lsched_move mv[1];
  size_t nm;
  e->can_plan = lsched_policy_plan_migrations(e->pol, &probe, NULL, 0, NULL,
                                              mv, 1, &nm) != LSCHED_ENOENT;
  return 0;
}

/* Allocates the per-job result arrays of sim_run without on_job. */
static int alloc_fill(engine *e, size_t n) {
  sim_result *r = e->fill;
  size_t nz = n ? n : 1;
  r->js = calloc(nz, sizeof *r->js);
  if (!r->js)
    return -1;
  if (e->opt->queue == SIM_QUEUE_BACKFILL) {
    r->reserved_us = malloc(nz * sizeof *r->reserved_us);
    if (!r->reserved_us)
      return -1;
  }
  if (e->can_plan) {
    r->migrations = calloc(nz, sizeof *r->migrations);
    r->preemptions = calloc(nz, sizeof *r->preemptions);
    r->lost_gpu_s = calloc(nz, sizeof *r->lost_gpu_s);
    if (!r->migrations || !r->preemptions || !r->lost_gpu_s)
      return -1;
  }
  return 0;
}

/*
 * The replay over e->src (see engine.h). t: the loaded trace (MIG needs
 * it), or NULL for a stream.
 */
static int sim_engine(engine *e, const gpu_catalog *cat, const trace *t) {
  sim_cluster *sc = e->sc;
  const sim_options *opt = e->opt;
  sim_result *out = e->out;
  char *err = e->err;
  size_t errlen = e->errlen;
  lsched_registry *reg = NULL;
  int rc = setup_policy(e, &reg);
  if (rc)
    goto done;
  rc = -2;
  if (fragtrack_begin(&e->ft, sc)) {
    snprintf(err, errlen, "out of memory");
    goto done;
  }
  size_t n = 0;
  int64_t first = 0;
  if ((rc = first_pass(e, cat, &n, &first)))
    goto done;
  rc = -2;
  if (n == 0) {
    snprintf(err, errlen, "%s: the trace has no jobs", src_meta(e->src)->path);
    rc = -1;
    goto done;
  }
  if (t) {
    int user_mix = 0;
    for (int i = 0; i < opt->npolicy_params; i++)
      user_mix |= strncmp(opt->policy_params[i], "mix=", 4) == 0;
    rc = sim_mig_begin(&e->mig, sc, cat, t, opt->mig_map, opt->mig_requests,
                       e->pol, user_mix, err, errlen);
    if (rc) {
      if (rc == -2)
        snprintf(err, errlen, "out of memory");
      goto done;
    }
    rc = -2;
  }
  /* Fragmentation: the trace's typical task types are the workload of the
   * meter and of fragmentation-aware policies (fgd). */
  if (fragtrack_ready(e->ft)) {
    snprintf(err, errlen, "out of memory");
    goto done;
  }
  int wrc = lsched_policy_set_workload(e->pol, fragtrack_workload(e->ft));
  if (wrc != LSCHED_OK && wrc != LSCHED_ENOENT) {
    snprintf(err, errlen, "policy %s: workload: %s", opt->policy,
             lsched_strerror(wrc));
    goto done;
  }
  size_t mem_values = opt->pctl_mem_values ? opt->pctl_mem_values
                      : t                  ? n
                                           : (size_t)1 << 18;
  pctl_init(&e->qt, mem_values);
  pctl_init(&e->jct, mem_values);
  pctl_init(&e->qt_multi, mem_values);
  e->memo = calloc(MEMO_SIZE, sizeof *e->memo);
  if (!e->memo || (e->fill && alloc_fill(e, n))) {
    snprintf(err, errlen, "out of memory");
    goto done;
  }
  e->head_tried = UINT32_MAX;
  e->plan_failed = UINT32_MAX;
  lsched_totals tot;
  lsched_cluster_totals(sc->c, &tot);
  e->total_milli = tot.gpu_milli;
  if (e->can_plan) {
    e->node_gpu_gib = calloc((size_t)sc->nodes + 1, sizeof *e->node_gpu_gib);
    if (!e->node_gpu_gib) {
      snprintf(err, errlen, "out of memory");
      goto done;
    }
    for (int i = 0; i < sc->nodes; i++) {
      lsched_node_info ni;
      lsched_cluster_node_info(sc->c, i, &ni);
      const char *mname = lsched_cluster_model_name(sc->c, ni.gpu_model);
      const gpu_model_info *gm = mname ? catalog_find(cat, mname) : NULL;
      e->node_gpu_gib[i] = gm ? gm->memory_gib : 0;
    }
  }
  if (opt->timeline)
    fprintf(opt->timeline,
            "time,alloc_gpu_milli,alloc_ratio,running,queued,frag_amount,"
            "frag_rate,stranded_gpu_milli%s\n",
            e->mig ? ",mig_slices_used,mig_frag_slices" : "");

  /* ---- the replay ---- */
  if ((rc = src_rewind(e->src, err, errlen)))
    goto done;
  rc = -2;
  out->jobs = n;
  out->first_arrival_us = first;
  out->last_completion_us = first;
  job_record nj;
  const char *nname = NULL;
  uint64_t nidx = 0;
  int have = src_next(e->src, &nj, &nname, &nidx, err, errlen);
  if (have < 0) {
    rc = have == -3 ? -1 : have;
    goto done;
  }
  e->now = first;
  uint64_t next_progress = 65536;
  while (have > 0 || e->heap.n > 0) {
    int64_t tnext = INT64_MAX;
    if (have > 0)
      tnext = nj.submit_us;
    const sim_event *top = heap_top(&e->heap);
    if (top && top->time < tnext)
      tnext = top->time;
    advance(e, tnext);
    /* Completions first (they only free resources), then arrivals in
     * submit order; then one scheduling pass. */
    while ((top = heap_top(&e->heap)) && top->time == tnext) {
      sim_event ev;
      heap_pop(&e->heap, &ev);
      /* Migrated and preempted jobs leave stale completion events. */
      const slot *s = &e->slots[ev.job];
      if (ev.tag != s->gen || s->st.status != JOB_RUNNING)
        continue;
      e->events++;
      if (finish(e, ev.job))
        goto done;
    }
    while (have > 0 && nj.submit_us == tnext) {
      int ar = arrive(e, &nj, nname, nidx);
      if (ar) {
        rc = ar;
        goto done;
      }
      have = src_next(e->src, &nj, &nname, &nidx, err, errlen);
      if (have < 0) {
        /* A stream that changed since the first pass. */
        rc = have == -3 ? -1 : have;
        goto done;
      }
    }
    if (schedule(e))
      goto done;
    /* One timeline row per distinct time, after everything at that time. */
    top = heap_top(&e->heap);
    int more_now =
        (have > 0 && nj.submit_us == tnext) || (top && top->time == tnext);
    if (!more_now && fragtrack_update(e->ft))
      goto done;
    if (opt->timeline && !more_now)
      timeline_row(e, tot.gpu_milli);
    if (opt->progress && e->events >= next_progress) {
      next_progress = e->events + 65536;
      opt->progress(e->now, e->events, e->done, n, opt->progress_user);
    }
  }
  /* Jobs still queued (cannot happen: an idle cluster fits every queued
   * job), then the totals. */
  while (e->qlen > 0) {
    uint32_t sl = e->queue[e->qhead++];
    e->qlen--;
    if (emit(e, sl))
      goto done;
  }
  if (e->src->count != n && !t) {
    snprintf(err, errlen, "%s: the file changed during the replay",
             src_meta(e->src)->path);
    rc = -1;
    goto done;
  }

  /* ---- results (definitions: DESIGN.md section 6) ---- */
  out->events = e->events;
  out->unpriced_gpus = sc->unpriced_gpus;
  out->never_started = out->never_no_node + out->never_model + out->never_queued;
  if (pctl_finish(&e->qt, &out->queue_time_s) ||
      pctl_finish(&e->jct, &out->jct_s) ||
      pctl_finish(&e->qt_multi, &out->queue_time_multigpu_s)) {
    pctl_fail(e);
    goto done;
  }
  /* Span [first arrival, last completion]; with no completion it is 0 and
   * the time-weighted means are 0. */
  out->makespan_us = out->last_completion_us - out->first_arrival_us;
  double span = (double)out->makespan_us;
  out->gpu_alloc_ratio_mean =
      span > 0 && tot.gpu_milli > 0
          ? (double)e->alloc_area / (double)tot.gpu_milli / span
          : 0;
  /* GPU-hours allocated = integral of allocated milli / 1000. */
  out->allocated_gpu_hours = (double)e->alloc_area / 1000.0 / US_PER_HOUR;
  /* Cluster cost: every priced GPU for the whole span. */
  double price_sum = 0;
  for (int i = 0; i < sc->nodes; i++) {
    lsched_node_info ni;
    lsched_cluster_node_info(sc->c, i, &ni);
    price_sum += sc->node_price[i] * ni.gpu_count;
  }
  out->cost_total = price_sum * span / US_PER_HOUR;
  out->cost_idle = out->cost_total - e->cost_alloc;
  if (out->cost_idle < 0 && out->cost_idle > -1e-9 * out->cost_total)
    out->cost_idle = 0; /* rounding of the two sums */
  out->cost_per_allocated_gpu_hour =
      out->allocated_gpu_hours > 0 ? out->cost_total / out->allocated_gpu_hours
                                   : 0;
  out->job_hours = e->run_us / US_PER_HOUR;
  out->running_jobs_mean = span > 0 ? e->run_us / span : 0;
  out->cost_per_job_hour =
      out->job_hours > 0 ? out->cost_total / out->job_hours : 0;
  out->gpu_used_ratio_mean =
      span > 0 && tot.gpu_milli > 0
          ? e->used_milli_us / (double)tot.gpu_milli / span
          : 0;
  fragtrack_means(e->ft, span, &out->frag_amount_mean, &out->frag_rate_mean,
                  &out->stranded_gpu_milli_mean);
  if (e->mig && !(out->mig = sim_mig_finish(e->mig, out->makespan_us))) {
    snprintf(err, errlen, "out of memory");
    goto done;
  }
  out->migrations_total = e->migrations;
  out->preemptions_total = e->preemptions;
  out->lost_gpu_s_total = e->lost_gpu_s_total;
  rc = 0;
done:
  /* A failed run leaves the cluster idle again: release what is running. */
  if (rc) {
    for (size_t i = 0; i < e->nrun; i++) {
      lsched_placement parts[SIM_MAX_PARTS];
      int np = job_parts(e, e->run_list[i], parts);
      unplace(e, parts, np);
    }
  }
  for (size_t i = 0; i < e->nslots; i++) {
    if (e->names)
      free(e->names[i].buf);
    if (e->slots[i].ngang)
      free(e->slots[i].gang);
  }
  pctl_free(&e->qt);
  pctl_free(&e->jct);
  pctl_free(&e->qt_multi);
  fragtrack_free(e->ft);
  lsched_policy_destroy(e->pol);
  lsched_registry_destroy(reg);
  heap_free(&e->heap);
  free(e->slots_raw);
  free(e->free_slots);
  free(e->names);
  free(e->queue);
  free(e->run_list);
  free(e->scratch_ends);
  free(e->node_gpu_gib);
  free(e->plan_run);
  free(e->plan_parts);
  free(e->memo);
  free(e->spec_mask);
  free(e->spec_absent);
  sim_mig_free(e->mig);
  free(e->src->order);
  if (rc == -2 && !err[0])
    snprintf(err, errlen, "internal error");
  return rc;
}

static void engine_init(engine *e, sim_cluster *sc, const sim_options *opt,
                        job_src *src, sim_result *out, char *err,
                        size_t errlen) {
  memset(e, 0, sizeof *e);
  e->sc = sc;
  e->opt = opt;
  e->src = src;
  e->out = out;
  e->err = err;
  e->errlen = errlen;
}

int sim_run(sim_cluster *sc, const gpu_catalog *cat, const trace *t,
            const sim_options *opt, sim_result *out, char *err,
            size_t errlen) {
  memset(out, 0, sizeof *out);
  if (err && errlen)
    err[0] = 0;
  if (t->n == 0) {
    snprintf(err, errlen, "%s: the trace has no jobs", t->path);
    return -1;
  }
  if (t->n > UINT32_MAX - 1) {
    snprintf(err, errlen, "%s: more than 2^32-1 jobs", t->path);
    return -1;
  }
  job_src src;
  memset(&src, 0, sizeof src);
  src.t = t;
  engine e;
  engine_init(&e, sc, opt, &src, out, err, errlen);
  e.fill = opt->on_job ? NULL : out;
  int rc = sim_engine(&e, cat, t);
  if (rc) {
    sim_result_free(out);
    memset(out, 0, sizeof *out);
  }
  return rc;
}

int sim_run_stream(sim_cluster *sc, const gpu_catalog *cat,
                   struct trace_stream *s, const sim_options *opt,
                   sim_result *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (err && errlen)
    err[0] = 0;
  if (sc->mig_gpus > 0 || opt->mig_requests) {
    snprintf(err, errlen, "MIG replays load the trace whole");
    return -3;
  }
  job_src src;
  memset(&src, 0, sizeof src);
  src.s = s;
  src.last_submit = INT64_MIN;
  engine e;
  engine_init(&e, sc, opt, &src, out, err, errlen);
  int rc = sim_engine(&e, cat, NULL);
  if (rc)
    memset(out, 0, sizeof *out);
  return rc;
}
