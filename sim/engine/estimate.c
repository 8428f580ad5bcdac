/*
 * Runtime estimates: the one place every reader of a job's estimate uses
 * (EASY reservations and backfill decisions in reserve.c and
 * queue_backfill.c, migration planning through reserve.c, and the overrun
 * rule at arrival in loop.c). Sources (sim_options.estimates, README
 * "Runtime estimates"):
 *   exact   the true duration (x --estimate-factor when given)
 *   factor  the true duration x F, rounded up to a microsecond
 *   trace   the job's requested time (job_record.req_s; SWF field 9), the
 *           true duration for a job whose trace has none
 *   model   drawn per job by a model of user estimates (estimate_model.h)
 *           once per run, before the first arrival, by a part of the run
 *           (est_model_part_open); at arrival the slot's copy of the
 *           record gets it as its requested time, so from there on a
 *           model's estimate is read exactly as a trace's
 * An overrun (the estimate is shorter than the true duration) is either
 * killed at the estimate (--overrun kill: the slot's copy of the record is
 * cut to the estimate at arrival and flagged SIM_REC_KILLED, so the rest
 * of the engine, migrations and preemptions included, simply sees a
 * shorter job) or extended (the job runs on; a reservation takes an
 * overdue job as ending at any moment, reserve.c).
 */
#include "engine_internal.h"
#include "estimate_model.h"

#include <math.h>

/* The integers a double holds exactly go at least this far. */
#define EXACT_DOUBLE (INT64_C(1) << 53)

/* us x f rounded up; x 1 is the identity where a double holds us exactly
 * (|us| <= 2^53), without the ceil (1% of a first-fit backfill replay). */
static inline int64_t mul_up(int64_t us, double f) {
  /* |us| <= 2^53 (exact as a double) in one unsigned compare. */
  if (f == 1.0 &&
      (uint64_t)us + (uint64_t)EXACT_DOUBLE <= 2 * (uint64_t)EXACT_DOUBLE)
    return us;
  double d = ceil((double)us * f);
  return d > 9.2e18 ? INT64_MAX : (int64_t)d;
}

sim_overrun est_overrun(const sim_options *o) {
  if (o->overrun != SIM_OVERRUN_DEFAULT)
    return o->overrun;
  return o->estimates == SIM_EST_TRACE || o->estimates == SIM_EST_MODEL
             ? SIM_OVERRUN_KILL
             : SIM_OVERRUN_EXTEND;
}

/* ------------------------------------------------------- the model part */

/* The estimates a model drew for the run, by trace position. */
typedef struct est_model_run {
  uint32_t *est_s;
  size_t n;
} est_model_run;

static void est_model_close(void *self) {
  est_model_run *m = self;
  if (m)
    free(m->est_s);
  free(m);
}

static const sim_part_ops est_model_ops = {.name = "estimate-model",
                                           .close = est_model_close};

/* Every job's run time by trace position (the engine rewinds the source
 * after the parts are open). 0, or -1/-2 with err set. */
static int run_times(engine *e, const trace *t, int64_t **out, size_t *n) {
  size_t cap = t ? t->n : 1024;
  int64_t *run = malloc((cap ? cap : 1) * sizeof *run);
  if (!run)
    goto oom;
  *n = 0;
  if (t) {
    for (size_t i = 0; i < t->n; i++)
      run[i] = job_duration(e, &t->jobs[i]);
    *n = t->n;
  } else {
    int rc = src_rewind(&e->src, e->err, e->errlen);
    job_record jr;
    const char *name;
    uint64_t idx;
    while (!rc &&
           (rc = src_next(&e->src, &jr, &name, &idx, e->err, e->errlen)) == 1) {
      if (*n == cap) {
        int64_t *g = realloc(run, 2 * cap * sizeof *run);
        if (!g)
          goto oom;
        run = g;
        cap *= 2;
      }
      run[(*n)++] = job_duration(e, &jr);
      rc = 0;
    }
    if (rc < 0) { /* (out of submit order, -3, stopped the first pass) */
      free(run);
      return rc;
    }
  }
  *out = run;
  return 0;
oom:
  free(run);
  snprintf(e->err, e->errlen, "out of memory");
  return -2;
}

int est_model_part_open(engine *e, const gpu_catalog *cat, const trace *t) {
  (void)cat;
  const sim_options *o = e->opt;
  if (o->estimates != SIM_EST_MODEL)
    return 0;
  if (!o->estimate_model) {
    snprintf(e->err, e->errlen, "--estimates model: no model given");
    return -1;
  }
  int64_t *run = NULL;
  size_t n = 0;
  int rc = run_times(e, t, &run, &n);
  if (rc)
    return rc;
  est_model_run *m = calloc(1, sizeof *m);
  if (m)
    m->est_s = malloc((n ? n : 1) * sizeof *m->est_s);
  if (!m || !m->est_s) {
    free(run);
    est_model_close(m);
    snprintf(e->err, e->errlen, "out of memory");
    return -2;
  }
  m->n = n;
  sim_est_model_params mp = {o->estimate_model_max_s, o->estimate_model_max_pct,
                             o->seed};
  rc = o->estimate_model->fn(m->est_s, run, n, &mp, e->err, e->errlen);
  free(run);
  if (!rc && engine_add_part(e, &est_model_ops, m))
    rc = -2, snprintf(e->err, e->errlen, "too many parts in one run");
  if (rc) {
    if (rc == -2 && !e->err[0])
      snprintf(e->err, e->errlen, "out of memory");
    est_model_close(m);
  }
  return rc;
}

/* The model's estimate of the job at trace position idx (seconds). */
static uint32_t model_estimate(const engine *e, uint64_t idx) {
  FOR_PARTS(e, p)
  if (p->ops == &est_model_ops) {
    const est_model_run *m = p->self;
    return idx < m->n ? m->est_s[idx] : 0;
  }
  return 0;
}

/* ------------------------------------------------------------ estimates */

/* The estimate of the whole job, from its (uncut) record. */
static int64_t est_whole(const engine *e, const job_record *jr) {
  int64_t d = job_duration(e, jr);
  switch (e->opt->estimates) {
  case SIM_EST_TRACE:
  case SIM_EST_MODEL:
    return jr->req_s ? (int64_t)jr->req_s * 1000000 : d;
  case SIM_EST_FACTOR:
  case SIM_EST_EXACT:
  default:
    return e->est_f == 1.0 ? d : mul_up(d, e->est_f);
  }
}

int est_cut_on_arrival(const engine *e, job_record *jr, uint64_t idx) {
  if (e->opt->estimates == SIM_EST_MODEL)
    jr->req_s = model_estimate(e, idx); /* read as a requested time */
  if (est_overrun(e->opt) != SIM_OVERRUN_KILL)
    return 0;
  int64_t d = job_duration(e, jr);
  int64_t est = est_whole(e, jr);
  if (est >= d)
    return 0;
  jr->duration_us = est;
  jr->flags |= SIM_REC_KILLED;
  return 1;
}

int64_t est_left(const engine *e, const slot *s, int64_t work) {
  const job_record *jr = &s->rec;
  if (jr->flags & SIM_REC_KILLED)
    return work; /* cut to its estimate: the estimate is the truth now */
  switch (e->opt->estimates) {
  case SIM_EST_TRACE:
  case SIM_EST_MODEL: {
    if (!jr->req_s)
      return work;
    /* The requested time less the work already done. */
    int64_t done = job_duration(e, jr) - work;
    int64_t est = (int64_t)jr->req_s * 1000000 - done;
    return est > 0 ? est : 0;
  }
  case SIM_EST_FACTOR:
  case SIM_EST_EXACT:
  default:
    return mul_up(work, e->est_f);
  }
}

/*
 * Under a speed model (speed.c) estimates are in run time on the job's
 * placement. A job's view v: reference work done before v->from, from
 * which it runs at v->speed and ends at v->end (its known end, after any
 * re-timing). exact: v->end; factor F: from + (end - from) x F, rounded
 * up; a requested time (trace, model) counts as measured on the job's
 * measured-on type: its reference work (req x meas) less the work done,
 * at the speed now, from + round(that / speed); a job cut to its estimate
 * (--overrun kill): v->end.
 */
static int64_t est_speed_end(const engine *e, const slot *s,
                             const speed_est_view *v) {
  const job_record *jr = &s->rec;
  if (v->end == INT64_MAX || (jr->flags & SIM_REC_KILLED))
    return v->end;
  switch (e->opt->estimates) {
  case SIM_EST_TRACE:
  case SIM_EST_MODEL: {
    if (!jr->req_s)
      return v->end;
    double left = (double)jr->req_s * 1e6 * v->meas - v->done;
    if (!(left > 0))
      return v->from;
    double d = left / v->speed;
    if (!(d < 9.2e18 - (double)v->from))
      return INT64_MAX;
    return v->from + llround(d);
  }
  case SIM_EST_FACTOR:
  case SIM_EST_EXACT:
  default: {
    double f = e->est_f;
    if (f == 1.0)
      return v->end;
    int64_t d = mul_up(v->end - v->from, f);
    return d > INT64_MAX - v->from ? INT64_MAX : v->from + d;
  }
  }
}

int64_t est_run(const engine *e, uint32_t sl) {
  const slot *s = &e->slots[sl];
  return est_left(e, s, job_duration(e, &s->rec));
}

/* With segments: the estimate of the work left of the queued job in slot
 * sl, which a marked candidate runs for (est_planned_end). */
static int64_t planned_run(const engine *e, uint32_t sl) {
  const slot *s = &e->slots[sl];
  return est_left(e, s, slot_x_of(e, s)->rem_us);
}

/* est_run_least's cap: no placement's end is earlier than now plus it
 * when the fastest one's is the end of time. */
#define RUN_LEAST_CAP (INT64_C(1) << 62)

/*
 * With segments and without a speed model a marked candidate's end is
 * now plus the estimate of its work left (est_planned_end): that.
 * Under a speed model est_end_speed's end on parts is est_speed_end of
 * speed_view's view there; at the fastest speed (speed_view_fastest) the
 * view differs in its speed alone, and every form of est_speed_end is
 * non-increasing in the speed (a run time ref / speed or left / speed,
 * rounded by llround; a factor's mul_up of it), so no placement ends
 * earlier. The end minus now does not change while the job waits (its
 * work, done and speeds are the job's), but past the range its forms
 * saturate at INT64_MAX: capped at RUN_LEAST_CAP, which lies below.
 */
int64_t est_run_least_slow(const engine *e, uint32_t sl) {
  speed_est_view v;
  if (!e->speed)
    return planned_run(e, sl); /* segments: est_planned_end's run time */
  if (!speed_view_fastest(e, sl, &v))
    return est_run(e, sl); /* (est_end_speed without a view: est_end_at) */
  int64_t end = est_speed_end(e, &e->slots[sl], &v);
  if (end == INT64_MAX || end - e->now > RUN_LEAST_CAP)
    return RUN_LEAST_CAP;
  return end > e->now ? end - e->now : 0;
}

/* Estimated end of the job in slot sl started at start, in trace time. */
static int64_t est_end_at(const engine *e, uint32_t sl, int64_t start) {
  int64_t d = est_run(e, sl);
  if (d > INT64_MAX - start)
    return INT64_MAX;
  return start + d;
}

int64_t est_planned_end(const engine *e, uint32_t sl) {
  int64_t d = planned_run(e, sl);
  return d > INT64_MAX - e->now ? INT64_MAX : e->now + d;
}

/* Under a speed model: the estimated end on parts, or the end started now
 * without a view. Out of line: its view and parts would give every call
 * a stack frame (est_end is asked for every job a backfill pass keeps). */
static __attribute__((noinline)) int64_t
est_end_speed(const engine *e, uint32_t sl, const lsched_placement *parts,
              int n) {
  speed_est_view v;
  if (speed_view(e, sl, parts, n, &v))
    return est_speed_end(e, &e->slots[sl], &v);
  return est_end_at(e, sl, e->now);
}

int64_t est_end(const engine *e, uint32_t sl, const lsched_placement *parts,
                int n) {
  if (e->speed)
    return est_end_speed(e, sl, parts, n);
  return est_end_at(e, sl, e->now);
}

/* Under a speed model: 1 and *end from the job's view, else 0. Out of line
 * as est_end_speed. */
static __attribute__((noinline)) int
est_running_speed(const engine *e, uint32_t sl, int committed, int64_t *end) {
  speed_est_view v;
  lsched_placement parts[SIM_MAX_PARTS];
  int n = committed ? 0 : job_parts(e, sl, parts);
  if (!speed_view(e, sl, committed ? NULL : parts, n, &v))
    return 0;
  *end = est_speed_end(e, &e->slots[sl], &v);
  return 1;
}

/* Without a speed model: its current segment's start plus the estimate of
 * the work it had left then (migrations and preemptions move segments). */
int64_t est_running_end(const engine *e, uint32_t sl, int committed) {
  const slot *s = &e->slots[sl];
  int64_t end;
  if (e->speed && est_running_speed(e, sl, committed, &end))
    return end;
  if (!e->can_plan)
    return est_end_at(e, sl, s->st.start_us);
  const slot_x *x = slot_x_of(e, s);
  int64_t d = est_left(e, s, x->rem_us);
  if (d > INT64_MAX - x->seg_us)
    return INT64_MAX;
  return x->seg_us + d;
}
