/*
 * Runtime estimates: the one place every reader of a job's estimate uses
 * (EASY reservations and backfill decisions in reserve.c and
 * queue_backfill.c, migration planning through reserve.c, and the overrun
 * rule at arrival in loop.c). Sources (sim_options.estimates, README
 * "Queue disciplines"):
 *   exact   the true duration (x --estimate-factor when given)
 *   factor  the true duration x F, rounded up to a microsecond
 *   trace   the job's requested time (job_record.req_s; SWF field 9), the
 *           true duration for a job whose trace has none
 * An overrun (the estimate is shorter than the true duration) is either
 * killed at the estimate (--overrun kill: the slot's copy of the record is
 * cut to the estimate at arrival and flagged SIM_REC_KILLED, so the rest
 * of the engine, migrations and preemptions included, simply sees a
 * shorter job) or extended (the job runs on; a reservation takes an
 * overdue job as ending at any moment, reserve.c).
 */
#include "engine_internal.h"

#include <math.h>

static int64_t mul_up(int64_t us, double f) {
  double d = ceil((double)us * f);
  return d > 9.2e18 ? INT64_MAX : (int64_t)d;
}

sim_overrun est_overrun(const sim_options *o) {
  if (o->overrun != SIM_OVERRUN_DEFAULT)
    return o->overrun;
  return o->estimates == SIM_EST_TRACE ? SIM_OVERRUN_KILL
                                       : SIM_OVERRUN_EXTEND;
}

/* The estimate of the whole job, from its (uncut) record. */
static int64_t est_whole(const engine *e, const job_record *jr) {
  int64_t d = job_duration(e, jr);
  switch (e->opt->estimates) {
  case SIM_EST_TRACE:
    return jr->req_s ? (int64_t)jr->req_s * 1000000 : d;
  case SIM_EST_FACTOR:
  case SIM_EST_EXACT:
  default: {
    double f = e->opt->estimate_factor > 0 ? e->opt->estimate_factor : 1.0;
    return f == 1.0 ? d : mul_up(d, f);
  }
  }
}

int est_cut_on_arrival(const engine *e, job_record *jr) {
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
  case SIM_EST_TRACE: {
    if (!jr->req_s)
      return work;
    /* The requested time less the work already done. */
    int64_t done = job_duration(e, jr) - work;
    int64_t est = (int64_t)jr->req_s * 1000000 - done;
    return est > 0 ? est : 0;
  }
  case SIM_EST_FACTOR:
  case SIM_EST_EXACT:
  default: {
    double f = e->opt->estimate_factor > 0 ? e->opt->estimate_factor : 1.0;
    return mul_up(work, f);
  }
  }
}
