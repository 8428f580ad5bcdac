/*
 * Cloud sites and bursting, a part of the run (engine_internal.h;
 * definitions in sim/README.md "Cloud bursting" and docs/DESIGN.md).
 *
 * A queued job gets a burst deadline when it arrives (--burst: no-wait =
 * its arrival, so it leaves after the first pass it did not start in;
 * constant:T = arrival + T; compute-wait:K = arrival + K x its GPU-hours
 * (K hours per GPU-hour); star-wait:K = arrival + K x its GPUs hours). A
 * wake-up in the event heap (SIM_TAG_WAKE) makes the loop pass at that
 * time; this part's after_pass then takes every job whose deadline has
 * come, that is still queued and never started, in deadline order (ties
 * in trace order), and sends it to the cheapest site with room for its
 * GPUs (price x run time there per unit of work: the spot price under
 * --spot-rate where the site has one, else on-demand; ties in spec order;
 * a job whose trace names GPU models only goes to sites of those models).
 * A job for which no site has room waits on-prem and is retried whenever
 * a site's GPUs are released, until it starts on-prem or leaves. With
 * --queue-cap N the newest waiting jobs beyond N leave after each pass
 * (Starburst's max_queue_length).
 *
 * In the cloud a job's whole future is known when it leaves: it asks for
 * instances at time t0, they run (and are billed) from t0 + startup_s, it
 * works from then + transfer_s for its trace duration x (its measured speed
 * / its speed on the site's model) (speed.c). On spot, its instances are
 * interrupted by a Poisson process of g x --spot-rate per hour (g = its
 * GPUs, one instance each), drawn from a generator seeded by --seed and
 * the job's trace position (so it does not depend on event order); an
 * interrupted job keeps the work of whole --checkpoint-interval intervals
 * (0: none), and restarts at once on new instances billed from the
 * interruption, working again after --restart-overhead. At its start and
 * at each interruption it takes spot only while it could still absorb one
 * more interruption (a restart overhead plus the work of at most one
 * checkpoint interval, or all of its work left without checkpoints) and
 * then finish on on-demand before its deadline (submit + --deadline-slack
 * x its run time there; no deadline without a slack): Can't Be Late's
 * greedy rule; else it finishes on on-demand. Its outcome is then handed
 * out at once (jobs.csv rows of cloud jobs come when they leave the
 * queue); the site's GPUs stay taken until its end.
 */
#include "engine_internal.h"
#include "cluster_spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An interrupted job falls back to on-demand after this many spot
 * interruptions (a guard: at absurd rates it would never finish). */
#define CLOUD_MAX_INTERRUPTIONS 10000

typedef struct cl_due {
  int64_t t;    /* burst deadline */
  uint64_t idx; /* trace position: the job, and the tie-break */
  uint32_t sl;
} cl_due;

typedef struct cl_run {
  int64_t end;
  int64_t gpus;
  int site;
} cl_run;

typedef struct cl_site {
  const sim_cloud_site *cs;
  const gpu_model_info *gm;
  int64_t used; /* GPUs taken now */
} cl_site;

typedef struct cloud {
  const gpu_catalog *cat;
  cl_site *site;
  int nsite;
  cl_due *due; /* a min-heap by (t, idx) */
  size_t ndue, due_cap;
  cl_due *over; /* deadline passed, still waiting: in deadline order */
  size_t nover, over_cap;
  int retry;   /* a site released GPUs since the last scan */
  uint32_t *tail; /* --queue-cap: the newest queued jobs to send */
  size_t tail_cap;
  cl_run *run; /* a min-heap by end: jobs holding GPUs of limited sites */
  size_t nrun, run_cap;
  /* the job being handed out (on_output) */
  int em_on;
  uint32_t em_sl;
  int em_site;
  double em_cost;
  /* --spot-trace: n instances available from t on (a step function; the
   * first row at 0) */
  struct cl_avail {
    int64_t t, n;
  } *tr;
  size_t ntr;
  /* totals */
  double gpu_h, cost_od, cost_spot, lost_gpu_h;
  size_t jobs, misses;
  uint64_t intr;
} cloud;

/* ---- small heaps ---- */

static int due_less(const cl_due *a, const cl_due *b) {
  return a->t < b->t || (a->t == b->t && a->idx < b->idx);
}

static int due_push(cloud *c, cl_due d) {
  if (grow_array((void **)&c->due, &c->due_cap, c->ndue + 1, sizeof d))
    return -1;
  size_t i = c->ndue++;
  while (i > 0 && due_less(&d, &c->due[(i - 1) / 2])) {
    c->due[i] = c->due[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  c->due[i] = d;
  return 0;
}

static cl_due due_pop(cloud *c) {
  cl_due top = c->due[0], x = c->due[--c->ndue];
  size_t i = 0, n = c->ndue;
  for (;;) {
    size_t k = 2 * i + 1;
    if (k >= n)
      break;
    if (k + 1 < n && due_less(&c->due[k + 1], &c->due[k]))
      k++;
    if (!due_less(&c->due[k], &x))
      break;
    c->due[i] = c->due[k];
    i = k;
  }
  if (n > 0)
    c->due[i] = x;
  return top;
}

static int run_push(cloud *c, cl_run r) {
  if (grow_array((void **)&c->run, &c->run_cap, c->nrun + 1, sizeof r))
    return -1;
  size_t i = c->nrun++;
  while (i > 0 && r.end < c->run[(i - 1) / 2].end) {
    c->run[i] = c->run[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  c->run[i] = r;
  return 0;
}

static cl_run run_pop(cloud *c) {
  cl_run top = c->run[0], x = c->run[--c->nrun];
  size_t i = 0, n = c->nrun;
  for (;;) {
    size_t k = 2 * i + 1;
    if (k >= n)
      break;
    if (k + 1 < n && c->run[k + 1].end < c->run[k].end)
      k++;
    if (c->run[k].end >= x.end)
      break;
    c->run[i] = c->run[k];
    i = k;
  }
  if (n > 0)
    c->run[i] = x;
  return top;
}

/* ---- the job's random stream (splitmix64) ---- */

static uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* A uniform draw in (0, 1) from *st. */
static double draw_u(uint64_t *st) {
  *st += 0x9E3779B97F4A7C15ull;
  return ((double)(mix64(*st) >> 11) + 0.5) * 0x1p-53;
}

/* ---- the spot availability trace ---- */

/* Loads --spot-trace: "time_s,instances_available", rows by increasing
 * time from 0. 0, or -1 with err naming the file, line and field. */
static int load_spot_trace(cloud *c, const char *path, char *err,
                           size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open the spot trace", path);
    return -1;
  }
  char line[512];
  long ln = 0;
  int rc = -1;
  size_t cap = 0;
  while (fgets(line, sizeof line, f)) {
    ln++;
    size_t len = strcspn(line, "\r\n");
    if (line[len] == 0 && !feof(f)) {
      snprintf(err, errlen, "%s:%ld: line too long", path, ln);
      goto out;
    }
    line[len] = 0;
    if (ln == 1) {
      if (strcmp(line, "time_s,instances_available") != 0) {
        snprintf(err, errlen, "%s:1: expected the header "
                 "'time_s,instances_available'", path);
        goto out;
      }
      continue;
    }
    if (len == 0)
      continue;
    char *comma = strchr(line, ',');
    char *end;
    double ts = comma ? (*comma = 0, strtod(line, &end)) : 0;
    if (!comma || end == line || *end || !isfinite(ts) || ts < 0 ||
        ts > (double)TRACE_MAX_TIME_S) {
      snprintf(err, errlen, "%s:%ld: field 'time_s': expected seconds in "
               "0..%lld", path, ln, (long long)TRACE_MAX_TIME_S);
      goto out;
    }
    int64_t t = llround(ts * 1e6);
    if ((c->ntr == 0 && t != 0) || (c->ntr > 0 && t <= c->tr[c->ntr - 1].t)) {
      snprintf(err, errlen, "%s:%ld: field 'time_s': %s", path, ln,
               c->ntr == 0 ? "the first row must be at time 0"
                           : "times must increase");
      goto out;
    }
    const char *v = comma + 1;
    long long n = strtoll(v, &end, 10);
    if (end == v || *end || n < 0 || n > 1000000000) {
      snprintf(err, errlen, "%s:%ld: field 'instances_available': expected "
               "a whole number in 0..1e9", path, ln);
      goto out;
    }
    if (grow_array((void **)&c->tr, &cap, c->ntr + 1, sizeof *c->tr)) {
      snprintf(err, errlen, "out of memory");
      goto out;
    }
    c->tr[c->ntr].t = t;
    c->tr[c->ntr++].n = n;
  }
  if (ferror(f)) {
    snprintf(err, errlen, "%s: read error", path);
    goto out;
  }
  if (c->ntr == 0) {
    snprintf(err, errlen, "%s: the spot trace has no rows", path);
    goto out;
  }
  rc = 0;
out:
  fclose(f);
  return rc;
}

/* The row in force at t. */
static size_t tr_row(const cloud *c, int64_t t) {
  size_t lo = 0, hi = c->ntr; /* last row with t <= the time: in [lo, hi) */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->tr[mid].t <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* The first time after t at which fewer (up = 0) or at least (up = 1) g
 * instances are available; INT64_MAX if none. */
static int64_t tr_next(const cloud *c, int64_t t, int64_t g, int up) {
  for (size_t i = tr_row(c, t) + 1; i < c->ntr; i++)
    if ((c->tr[i].n >= g) == up)
      return c->tr[i].t;
  return INT64_MAX;
}

/* ---- deadlines ---- */

/* The burst deadline of a job arriving now (INT64_MAX: never). */
static int64_t burst_deadline(const engine *e, const slot *s) {
  const sim_options *o = e->opt;
  const job_record *j = &s->rec;
  if (j->num_gpu <= 0 || o->burst == SIM_BURST_NEVER)
    return INT64_MAX;
  double wait_us = 0;
  switch (o->burst) {
  case SIM_BURST_CONSTANT:
    wait_us = o->burst_param * 1e6;
    break;
  case SIM_BURST_COMPUTE_WAIT: /* K x GPUs x duration (GPU-hours x K h) */
    wait_us = o->burst_param * j->num_gpu * (j->gpu_milli / 1000.0) *
              (double)job_duration(e, j);
    break;
  case SIM_BURST_STAR_WAIT: /* K hours per GPU */
    wait_us = o->burst_param * j->num_gpu * US_PER_HOUR;
    break;
  default: /* no-wait */
    break;
  }
  double t = (double)e->now + floor(wait_us + 0.5);
  return t >= (double)TRACE_MAX_TIME_US ? INT64_MAX : (int64_t)t;
}

static void on_arrival(void *self, engine *e, const slot *s) {
  cloud *c = self;
  int64_t t = burst_deadline(e, s);
  if (t == INT64_MAX)
    return;
  uint32_t sl = (uint32_t)(s - e->slots);
  cl_due d = {t, s->idx, sl};
  /* Out of memory here is rare; the part then stops bursting and the
   * run fails at its next after_pass. */
  if (due_push(c, d) ||
      (t > e->now && heap_push(&e->heap, t, sl, SIM_TAG_WAKE)))
    c->em_on = -1;
}

/* The job (slot sl, trace position idx) is still waiting, never started. */
static int still_waiting(const engine *e, uint32_t sl, uint64_t idx) {
  const slot *s = &e->slots[sl];
  return sl < e->nslots && s->idx == idx && s->st.status == JOB_QUEUED &&
         s->st.start_us < 0;
}

/* A job whose trace names GPU models only goes to sites of those models. */
static int site_allowed(const cloud *c, const engine *e, const slot *s,
                        const cl_site *st) {
  int spec = s->rec.gpu_spec;
  const trace *t = src_meta(&e->src);
  if (spec < 0 || !t || spec >= t->nspecs || !t->specs[spec][0])
    return 1;
  const char *p = t->specs[spec];
  while (*p) {
    size_t n = strcspn(p, "|");
    char name[128];
    if (n < sizeof name) {
      memcpy(name, p, n);
      name[n] = 0;
      const gpu_model_info *gm = catalog_find(c->cat, name);
      if (gm && strcmp(gm->name, st->gm->name) == 0)
        return 1;
    }
    p += n;
    if (*p == '|')
      p++;
  }
  return 0;
}

/* The cheapest site with room for the job in slot sl, or -1. */
static int pick_site(const cloud *c, const engine *e, uint32_t sl) {
  const slot *s = &e->slots[sl];
  int64_t g = s->rec.num_gpu;
  int best = -1;
  double best_cost = 0;
  for (int i = 0; i < c->nsite; i++) {
    const cl_site *st = &c->site[i];
    if (st->cs->capacity_gpus >= 0 && st->used + g > st->cs->capacity_gpus)
      continue;
    if (!site_allowed(c, e, s, st))
      continue;
    double price = (e->opt->spot_rate >= 0 || c->ntr > 0) && st->cs->spot >= 0
                       ? st->cs->spot
                       : st->cs->on_demand;
    double cost = price * speed_time_factor_on(e, sl, st->gm);
    if (best < 0 || cost < best_cost) {
      best = i;
      best_cost = cost;
    }
  }
  return best;
}

/* us -> hours x GPUs */
static double gpu_hours(int64_t g, int64_t us) {
  return (double)g * (double)us / US_PER_HOUR;
}

/* The job in slot sl leaves the queue for site k now: its future there,
 * its outcome handed out. 0, or -1 with err set. */
static int burst(cloud *c, engine *e, uint32_t sl, int k) {
  const sim_options *o = e->opt;
  const sim_cloud_site *cs = c->site[k].cs;
  slot *s = &e->slots[sl];
  int64_t g = s->rec.num_gpu;
  queue_remove(e, sl);
  int64_t r0 = llround((double)job_duration(e, &s->rec) *
                       speed_time_factor_on(e, sl, c->site[k].gm));
  int64_t start_us = llround(cs->startup_s * 1e6);
  int64_t xfer_us = llround(cs->transfer_s * 1e6);
  int64_t ro_us = llround(o->restart_overhead_s * 1e6);
  int64_t ck = llround(o->checkpoint_s * 1e6);
  int64_t deadline =
      o->deadline_slack > 0
          ? (int64_t)fmin((double)s->rec.submit_us +
                              floor(o->deadline_slack * (double)r0 + 0.5),
                          (double)INT64_MAX / 2)
          : INT64_MAX;
  int spot = (o->spot_rate >= 0 || c->ntr > 0) && cs->spot >= 0;
  uint64_t rng = mix64(o->seed ^ mix64(s->idx ^ 0xC10D5EEDull));
  double cost = 0;
  int64_t t, end, r = r0, ovh = xfer_us;
  if (time_add(e, s, e->now, start_us, &t))
    return -1;
  /* The first work starts after the instance's start-up and transfer. */
  int64_t first;
  if (time_add(e, s, t, xfer_us, &first))
    return -1;
  unsigned nint = 0;
  for (;;) {
    int64_t lmax = ck > 0 && ck < r ? ck : r;
    /* Can't Be Late: spot only while one more interruption would still
     * leave time to finish on on-demand. */
#define SPOT_OK(at)                                                            \
  (deadline == INT64_MAX ||                                                    \
   (double)(at) + (double)ovh + (double)r + (double)ro_us + (double)lmax <=    \
       (double)deadline)
    int use_spot = spot && nint < CLOUD_MAX_INTERRUPTIONS && SPOT_OK(t);
    if (use_spot && c->ntr > 0 && c->tr[tr_row(c, t)].n < g) {
      /* No spot now: wait (unbilled) for it while the rule allows. */
      int64_t ta = tr_next(c, t, g, 1);
      if (ta != INT64_MAX && SPOT_OK(ta))
        t = ta;
      else
        use_spot = 0;
    }
#undef SPOT_OK
    if (time_add(e, s, t, ovh, &end) || time_add(e, s, end, r, &end))
      return -1;
    if (!use_spot) {
      double c_od = gpu_hours(g, end - t) * cs->on_demand;
      c->cost_od += c_od;
      cost += c_od;
      c->gpu_h += gpu_hours(g, end - t);
      break;
    }
    /* Time to the next interruption of any of its g instances. */
    double x;
    if (c->ntr > 0) { /* the trace: when fewer than g are left */
      int64_t td = tr_next(c, t, g, 0);
      x = td == INT64_MAX ? INFINITY : (double)(td - t);
    } else {
      x = o->spot_rate > 0 ? -log(draw_u(&rng)) /
                                 ((double)g * o->spot_rate) * US_PER_HOUR
                           : INFINITY;
    }
    if ((double)t + x >= (double)end) { /* it finishes first */
      double c_sp = gpu_hours(g, end - t) * cs->spot;
      c->cost_spot += c_sp;
      cost += c_sp;
      c->gpu_h += gpu_hours(g, end - t);
      break;
    }
    int64_t ti = t + (int64_t)floor(x);
    int64_t done = ti - (t + ovh);
    if (done < 0)
      done = 0;
    int64_t kept = ck > 0 ? done / ck * ck : 0;
    c->lost_gpu_h += gpu_hours(g, done - kept);
    double c_sp = gpu_hours(g, ti - t) * cs->spot;
    c->cost_spot += c_sp;
    cost += c_sp;
    c->gpu_h += gpu_hours(g, ti - t);
    c->intr++;
    nint++;
    r -= kept;
    t = ti;
    ovh = ro_us;
  }
  if (deadline != INT64_MAX && end > deadline)
    c->misses++;
  c->jobs++;
  if (cs->capacity_gpus >= 0) {
    c->site[k].used += g;
    cl_run rr = {end, g, k};
    if (run_push(c, rr) || heap_push(&e->heap, end, sl, SIM_TAG_WAKE)) {
      snprintf(e->err, e->errlen, "out of memory");
      return -1;
    }
  }
  s->st.start_us = first;
  s->st.finish_us = end;
  s->st.status = JOB_DONE;
  s->st.node = -1;
  s->st.gpu_mask = 0;
  s->st.gpu_milli = (int16_t)s->rec.gpu_milli;
  e->done++;
  c->em_on = 1;
  c->em_sl = sl;
  c->em_site = k;
  c->em_cost = cost;
  int rc = emit(e, sl);
  c->em_on = 0;
  return rc;
}

/* --queue-cap N: the newest queued jobs beyond N (jobs with GPUs that
 * never started, from the tail of the queue) leave for a site now, while
 * one has room. 1 if any left, 0 if none, -1 with err set. */
static int cap_queue(cloud *c, engine *e) {
  size_t need = e->qlen - e->opt->queue_cap, n = 0;
  if (grow_array((void **)&c->tail, &c->tail_cap, need, sizeof *c->tail)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  for (size_t i = queue_span(e); i-- > 0 && n < need;) {
    uint32_t sl = e->queue[e->qhead + i];
    if (sl == UINT32_MAX) /* a tombstone of the queue index */
      continue;
    const slot *s = &e->slots[sl];
    if (s->rec.num_gpu > 0 && s->st.start_us < 0)
      c->tail[n++] = sl;
  }
  int changed = 0;
  for (size_t k = 0; k < n; k++) {
    int site = pick_site(c, e, c->tail[k]);
    if (site < 0)
      break;
    if (burst(c, e, c->tail[k], site))
      return -1;
    changed = 1;
  }
  return changed;
}

static int after_pass(void *self, engine *e) {
  cloud *c = self;
  if (c->em_on < 0) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  while (c->nrun > 0 && c->run[0].end <= e->now) {
    cl_run r = run_pop(c);
    c->site[r.site].used -= r.gpus;
    c->retry = 1;
  }
  int fresh = 0;
  while (c->ndue > 0 && c->due[0].t <= e->now) {
    cl_due d = due_pop(c);
    if (!still_waiting(e, d.sl, d.idx))
      continue;
    if (grow_array((void **)&c->over, &c->over_cap, c->nover + 1, sizeof d)) {
      snprintf(e->err, e->errlen, "out of memory");
      return -1;
    }
    c->over[c->nover++] = d;
    fresh = 1;
  }
  int changed = 0;
  size_t w = 0;
  int scan = c->nover > 0 && (fresh || c->retry);
  if (scan)
    c->retry = 0;
  else
    w = c->nover; /* nothing new: the waiting jobs stay as they are */
  for (size_t i = 0; scan && i < c->nover; i++) {
    cl_due d = c->over[i];
    if (!still_waiting(e, d.sl, d.idx))
      continue;
    int k = pick_site(c, e, d.sl);
    if (k < 0) {
      c->over[w++] = d;
      continue;
    }
    if (burst(c, e, d.sl, k))
      return -1;
    changed = 1;
  }
  c->nover = w;
  if (e->opt->queue_cap > 0 && e->qlen > e->opt->queue_cap) {
    int d = cap_queue(c, e);
    if (d < 0)
      return -1;
    changed |= d;
  }
  return changed;
}

static void on_output(void *self, const slot *s, sim_job_out *o) {
  cloud *c = self;
  (void)s;
  o->cloud_cols = 1;
  if (c->em_on > 0 && o->index == s->idx && o->st == &s->st &&
      s->st.node == -1 && s->st.status == JOB_DONE) {
    o->site = c->site[c->em_site].cs->name;
    o->site_model = c->site[c->em_site].cs->gpu_model;
    o->cloud_cost_usd = c->em_cost;
  }
}

static int results(void *self, const engine *e, sim_result *out) {
  cloud *c = self;
  sim_cloud_result *r = calloc(1, sizeof *r);
  if (!r)
    return -1;
  double span = (double)out->makespan_us;
  double gpus = (double)e->total_milli / 1000.0;
  r->system_utilization_mean =
      span > 0 && gpus > 0
          ? (out->allocated_gpu_hours + c->gpu_h) / (gpus * span / US_PER_HOUR)
          : 0;
  r->gpu_hours = c->gpu_h;
  r->cost_on_demand = c->cost_od;
  r->cost_spot = c->cost_spot;
  r->jobs = c->jobs;
  r->interruptions = c->intr;
  r->lost_gpu_hours = c->lost_gpu_h;
  r->deadline_misses = c->misses;
  free(out->cloud);
  out->cloud = r;
  return 0;
}

static void cloud_close(void *self) {
  cloud *c = self;
  free(c->site);
  free(c->due);
  free(c->over);
  free(c->run);
  free(c->tail);
  free(c->tr);
  free(c);
}

static const sim_part_ops cloud_ops = {
    .name = "cloud",
    .on_arrival = on_arrival,
    .after_pass = after_pass,
    .on_output = on_output,
    .results = results,
    .close = cloud_close,
};

int cloud_part_open(engine *e, const gpu_catalog *cat, const trace *t) {
  (void)t;
  const sim_cluster *sc = e->sc;
  if (sc->ncloud == 0 && e->opt->burst == SIM_BURST_NEVER &&
      e->opt->queue_cap == 0)
    return 0;
  if (sc->ncloud == 0) {
    snprintf(e->err, e->errlen, "--%s needs a cluster spec with cloud sites "
             "(the \"cloud\" key; %s has none)",
             e->opt->burst != SIM_BURST_NEVER ? "burst" : "queue-cap",
             sc->name);
    return -1;
  }
  cloud *c = calloc(1, sizeof *c);
  if (!c || !(c->site = calloc((size_t)sc->ncloud, sizeof *c->site))) {
    free(c);
    snprintf(e->err, e->errlen, "out of memory");
    return -2;
  }
  c->cat = cat;
  c->nsite = sc->ncloud;
  for (int i = 0; i < sc->ncloud; i++) {
    c->site[i].cs = &sc->cloud[i];
    c->site[i].gm = catalog_find(cat, sc->cloud[i].gpu_model);
    if (!c->site[i].gm) { /* the spec was loaded with another catalog */
      snprintf(e->err, e->errlen, "cloud site %s: unknown GPU model '%s'",
               sc->cloud[i].name, sc->cloud[i].gpu_model);
      cloud_close(c);
      return -1;
    }
  }
  if (e->opt->spot_trace) {
    if (e->opt->spot_rate >= 0) {
      snprintf(e->err, e->errlen, "--spot-rate and --spot-trace exclude each "
               "other");
      cloud_close(c);
      return -1;
    }
    if (load_spot_trace(c, e->opt->spot_trace, e->err, e->errlen)) {
      cloud_close(c);
      return -1;
    }
  }
  if (engine_add_part(e, &cloud_ops, c)) {
    cloud_close(c);
    snprintf(e->err, e->errlen, "too many parts");
    return -2;
  }
  return 0;
}
