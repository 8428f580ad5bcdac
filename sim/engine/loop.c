/*
 * The event loop: time, the event heap, arrivals and completions, and one
 * scheduling pass per event time, steppable (engine.h: sim_engine_step).
 * Everything that decides or measures is a part behind a table or a hook
 * (engine_internal.h); the loop reads in one sitting.
 *
 * Order within one event time, which every output depends on: completions
 * first (they only free resources; equal times by slot, heap.h), then
 * arrivals in submit order (ties in file order), then one pass of the
 * queue discipline (and another after each part's after_pass that changed
 * the cluster: a migration plan for a blocked head), then one timeline
 * row.
 */
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

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
  if (e->est_cut)
    est_cut_on_arrival(e, &s->rec, idx); /* model, --overrun kill */
  s->idx = idx;
  s->st.start_us = s->st.finish_us = -1;
  s->st.node = -1;
  /* A loaded trace's name is taken as a pointer now, while the job's
   * record is in cache (looked up at completion it cost a cache miss per
   * job: 5% of a million-job replay); a stream's is copied. */
  const char *nm = name;
  if (!e->src.t) {
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
    nm = nb->buf;
  }
  s->name = nm;
  if (e->slot_ext) {
    if (e->slot_ext & SLOT_EXT_PLAN) { /* its part apart (struct slot_x) */
      slot_x *x = slot_x_of(e, s);
      memset(x, 0, sizeof *x);
      x->rem_us = job_duration(e, &s->rec);
    }
    if (e->slot_ext & SLOT_EXT_NAME) { /* see struct slot */
      s->name_far = 1;
      s->reserved_us = -1; /* in the name's place */
    }
  }
  e->events++;
  int absent = jr->gpu_spec >= 0 && e->spec_absent[jr->gpu_spec];
  uint64_t mask = jr->gpu_spec >= 0 ? e->spec_mask[jr->gpu_spec] : 0;
  s->shape = fragtrack_shape(e->ft, jr, mask, absent);
  hook_arrival(e, s);
  /* Whether the job can ever fit is remembered per shape while no node
   * changes (fragtrack_ever), unless a part rewrites requests or a speed
   * model adds its fields (the answer would then not be the shape's).
   * The request is then built only to be asked about (without those
   * parts building it has no effect); else for every arrival, as a part's
   * request hook expects. */
  const int ever_memo = e->ever_memo;
  lsched_request req;
  if (!ever_memo)
    build_request(e, s, &req);
  if (absent && jr->num_gpu > 0) {
    s->st.status = JOB_NEVER_MODEL;
    return emit(e, sl) ? -2 : 0;
  }
  int ever = ever_memo ? fragtrack_ever(e->ft, s->shape) : -1;
  if (ever_memo && ever != 1)
    build_request(e, s, &req);
  if (ever < 0) {
    ever = lsched_can_ever_fit_gang(e->sc->c, &req);
    if (ever_memo)
      fragtrack_set_ever(e->ft, s->shape, ever);
  }
  if (!ever &&
      !(hook_alt_request(e, s, &req) &&
        lsched_can_ever_fit_gang(e->sc->c, &req))) {
    s->st.status = JOB_NEVER_NO_NODE;
    return emit(e, sl) ? -2 : 0;
  }
  s->st.status = JOB_QUEUED;
  if (queue_add(e, sl)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -2;
  }
  e->queue_changed = 1;
  return 0;
}

/* The job in slot sl completes now. 0, or -1 with err set. */
/* Always inlined into the loop: once per job. */
__attribute__((always_inline)) static inline int complete(engine *e,
                                                          uint32_t sl) {
  slot *s = &e->slots[sl];
  lsched_placement parts[SIM_MAX_PARTS];
  int n = job_parts(e, sl, parts);
  /* Gang parts in reverse order; one part (nearly every job) without the
   * loop (~8 instructions per job less). */
  int rc = lsched_release(e->sc->c, &parts[n - 1]);
  for (int i = n - 2; i >= 0 && !rc; i--)
    rc = lsched_release(e->sc->c, &parts[i]);
  if (rc) {
    snprintf(e->err, e->errlen, "job %s: release failed: %s (%s)",
             slot_name(e, s), lsched_strerror(rc),
             lsched_cluster_errmsg(e->sc->c));
    return -1;
  }
  e->alloc_milli -= parts_milli(parts, n);
  e->running--;
  e->done++;
  fragtrack_completed(e->ft);
  run_list_remove(e, sl);
  s->st.finish_us = e->now;
  s->st.status = s->rec.flags & SIM_REC_KILLED ? JOB_KILLED : JOB_DONE;
  e->freed = 1;
  e->reservation_valid = 0;
  hook_finish(e, s, parts, n);
  /* The parts just released are the ones emit would rebuild, unless a
   * part fills them in from its own state (MIG), which on_finish may have
   * changed. */
  if (e->hooks & SIM_HOOK_FILL_PART)
    return emit(e, sl);
  return emit_parts(e, sl, parts, n);
}

/* One scheduling pass over the queue, and another one after each part
 * that changed the cluster after it (a migration plan that made room for
 * a blocked head). 0, or -1 on internal error. */
static int schedule(engine *e) {
  e->memo_gen++;
  int rc = e->q->pass(e);
  if (e->hooks & SIM_HOOK_AFTER_PASS) {
    FOR_PARTS(e, p)
    if (rc == 0 && p->ops->after_pass) {
      int d = p->ops->after_pass(p->self, e);
      if (d < 0)
        return -1;
      if (d > 0) {
        e->memo_gen++;
        rc = e->q->pass(e);
      }
    }
  }
  e->new_from = e->qlen;
  e->freed = 0;
  e->queue_changed = 0;
  return rc;
}

/* The run is over: jobs still queued (cannot happen: an idle cluster fits
 * every queued job), then the totals. */
static int finish_run(engine *e) {
  while (e->qlen > 0) {
    uint32_t sl = e->queue[e->qhead++];
    e->qlen--;
    if (emit(e, sl))
      return -2;
  }
  if (e->src.count != e->njobs && !e->src.t) {
    snprintf(e->err, e->errlen, "%s: the file changed during the replay",
             src_meta(&e->src)->path);
    return -1;
  }
  return metrics_results(e) ? -2 : 0;
}

/* An event's job and tag as one word: a slot taken by a new job since
 * (its tag changes) is another event. */
static inline uint64_t event_key(const sim_event *ev) {
  return (uint64_t)ev->tag << 32 | ev->job;
}

/* Asks for the first two lines of the slot of the next completion, top
 * (its state and its record, both read by complete()) while the present
 * event is processed: on 100,000 GPUs the running jobs' slots far exceed
 * the cache and each completion otherwise waited for two misses. With the
 * prefetch hints on, also the first step of prefetch_release (below): the
 * node as the per-node end lists know it (one read) and, from it alone,
 * the node's cluster record, FGD meter figures and end-list record, so
 * that prefetch_release's reads of them (the GPU offset, the list's
 * entries) find them in cache instead of stalling (time profile, 100k@1.2
 * first-fit backfill: lsched_prefetch_node 5.97% -> 4.05% of the samples,
 * about -2.5% net). Hints only: nothing is written. */
static inline void prefetch_completion(const engine *e, const sim_event *top) {
  if (top && top->job < e->nslots) {
    slot_prefetch(e, top->job, 0);
    if (e->prefetch) {
      int node = ends_prefetch_node_of(e, top->job);
      if (node >= 0) {
        fragtrack_prefetch(e->ft, node);
        __builtin_prefetch(&e->sc->node_price[node], 0, 3); /* (emit) */
      }
    }
  }
}

/* Before the next event time, for its first event: a completion (it
 * comes first at equal times) reads its slot (as above) and moves the
 * last running job's slot into its place in run_list (run_pos); an
 * arrival writes both lines of the free slot it takes. Only the first
 * event's: the other kind's turn comes with its own step (asking for
 * both each time cost ~15 instructions per event time). A completion's
 * hints are not given again while it stays the next one (hinted: the job
 * they were last given for, when the last completion was taken or at an
 * earlier step's end; the same for prefetch_release, before the pass):
 * the same lines, ~60 instructions an event time in all (100k@1.2
 * first-fit backfill: 2,048 -> 1,999 M in sim_run). 1 when it gave them
 * (the caller notes the event), else 0. */
static inline int prefetch_next(const engine *e, const sim_event *top,
                                uint64_t hinted) {
  if (top && top->time <= e->next_us) {
    if (e->nrun > 0)
      __builtin_prefetch(&e->slots[e->run_list[e->nrun - 1]], 1, 3);
    if (event_key(top) == hinted) /* asked for since it became the next */
      return 0;
    prefetch_completion(e, top);
    return 1;
  }
  if (e->nfree > 0) {
    uint32_t sl = e->free_slots[e->nfree - 1];
    slot_prefetch(e, sl, 1);
    if (e->prefetch)
      queue_index_prefetch(e, sl);
  }
  return 0;
}

/* Before the pass, the node of the next completion, top, whose slot (and
 * node records) were asked for when the last event was taken
 * (prefetch_completion) and have had this event's work to arrive: its
 * GPU shares, fit-index leaf and per-node end list (backfill), which the
 * completion releases and drops, asked for while the pass runs. On
 * 100,000 GPUs these miss the cache at nearly every completion. Hints
 * only. */
static inline void prefetch_release(const engine *e, const sim_event *top) {
  if (!top || top->job >= e->nslots)
    return;
  const slot *s = &e->slots[top->job];
  if (top->tag != s->gen || s->st.status != JOB_RUNNING || s->ngang)
    return;
  lsched_prefetch_node(e->sc->c, s->st.node);
  ends_prefetch(e, top->job, s->st.node, 0);
}

/* One event time (see the top of this file). 1 if events remain, 0 when
 * the run is complete, -1/-2 on error. */
__attribute__((always_inline)) static inline int step(engine *e) {
  const sim_options *opt = e->opt;
  int64_t tnext = e->next_us;
  const sim_event *top = heap_top(&e->heap);
  if (top && top->time < tnext)
    tnext = top->time;
  hook_advance(e, tnext);
  while ((top = heap_top(&e->heap)) && top->time == tnext) {
    sim_event ev;
    if (heap_pop(&e->heap, &ev)) { /* -2: out of memory */
      snprintf(e->err, e->errlen, "out of memory");
      return -2;
    }
    top = heap_top(&e->heap);
    prefetch_completion(e, top);
    e->hinted = top ? event_key(top) : UINT64_MAX;
    /* Migrated and preempted jobs leave stale completion events. */
    const slot *s = &e->slots[ev.job];
    if (ev.tag != s->gen || s->st.status != JOB_RUNNING)
      continue;
    e->events++;
    if (complete(e, ev.job))
      return -2;
  }
  while (e->next_us == tnext && e->have > 0) {
    int ar = arrive(e, e->njp, e->nname, e->nidx);
    if (ar)
      return ar;
    e->have = next_arrival(e);
    if (e->have < 0) /* a stream that changed since the first pass */
      return e->have == -3 ? -1 : e->have;
  }
  if (e->prefetch) {
    /* Once per next completion: an arrival's step leaves it the next. */
    top = heap_top(&e->heap);
    if (top && event_key(top) != e->released) {
      prefetch_release(e, top);
      e->released = event_key(top);
    }
  }
  if (schedule(e))
    return -2;
  /* One timeline row per distinct time, after everything at that time:
   * every arrival at tnext is in (the loop above stops at the first
   * later one), so only the pass can have added an event now (a
   * completion at its start). */
  top = heap_top(&e->heap);
  int more_now = top && top->time == tnext;
  if (!more_now && fragtrack_update(e->ft))
    return -2;
  if (opt->timeline && !more_now)
    metrics_timeline_row(e);
  if (e->events >= e->next_progress) { /* only with a callback */
    e->next_progress = e->events + 65536;
    opt->progress(e->now, e->events, e->done, e->njobs, opt->progress_user);
  }
  if (e->have > 0 || e->heap.n > 0) {
    /* (the pass may have pushed a new top) */
    if (prefetch_next(e, top, e->hinted))
      e->hinted = event_key(top);
    return 1;
  }
  return finish_run(e);
}

/* Steps until the run is complete (or only once): 1, 0 or an error as
 * sim_engine_step. The loop of sim_run is here rather than around the
 * public call so that its steps are inlined (20 instructions per event
 * time less). */
static int run(engine *e, int once) {
  if (e->rc || e->finished)
    return e->rc;
  int rc;
  do
    rc = step(e);
  while (rc > 0 && !once);
  if (rc < 0) {
    if (e->time_error) /* the time range: an input error (README) */
      rc = -1;
    e->rc = rc;
    if (rc == -2 && !e->err[0])
      snprintf(e->err, e->errlen, "internal error");
  } else if (rc == 0) {
    e->finished = 1;
  }
  return rc;
}

int sim_engine_step(sim_engine *e) { return run(e, 1); }

int64_t sim_engine_now(const sim_engine *e) { return e->now; }

int64_t sim_engine_next_time(const sim_engine *e) {
  int64_t t = e->next_us;
  const sim_event *top = heap_top(&e->heap);
  return top && top->time < t ? top->time : t;
}

static void engine_free(sim_engine *e) {
  engine_teardown(e);
  sim_result_free(&e->res);
  free(e);
}

/* Opens a run over a loaded trace (t) or a stream (s). */
static int engine_open(sim_engine **out, sim_cluster *sc,
                       const gpu_catalog *cat, const trace *t,
                       struct trace_stream *s, const sim_options *opt,
                       char *err, size_t errlen) {
  *out = NULL;
  sim_engine *e = calloc(1, sizeof *e);
  if (!e) {
    snprintf(err, errlen, "out of memory");
    return -2;
  }
  e->sc = sc;
  e->opt = opt;
  e->err = err;
  e->errlen = errlen;
  e->src.t = t;
  e->src.s = s;
  e->src.last_submit = INT64_MIN;
  e->fill = t && !opt->on_job ? &e->res : NULL;
  int rc = -1;
  e->q = sim_queue_of(opt->queue);
  if (!e->q)
    snprintf(err, errlen, "unknown queue discipline %d", (int)opt->queue);
  else
    rc = engine_setup(e, cat, t);
  if (rc) {
    if (rc == -2 && !err[0])
      snprintf(err, errlen, "internal error");
    engine_free(e);
    return rc;
  }
  *out = e;
  return 0;
}

int sim_engine_open(sim_engine **out, sim_cluster *sc, const gpu_catalog *cat,
                    const trace *t, const sim_options *opt, char *err,
                    size_t errlen) {
  *out = NULL;
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
  return engine_open(out, sc, cat, t, NULL, opt, err, errlen);
}

int sim_engine_open_stream(sim_engine **out, sim_cluster *sc,
                           const gpu_catalog *cat, struct trace_stream *s,
                           const sim_options *opt, char *err, size_t errlen) {
  *out = NULL;
  if (err && errlen)
    err[0] = 0;
  if (sc->mig_gpus > 0 || opt->mig_requests) {
    snprintf(err, errlen, "MIG replays load the trace whole");
    return -3;
  }
  return engine_open(out, sc, cat, NULL, s, opt, err, errlen);
}

int sim_engine_close(sim_engine *e, sim_result *out) {
  if (!e) {
    if (out)
      memset(out, 0, sizeof *out);
    return 0;
  }
  if (out)
    run(e, 0);
  int rc = e->rc;
  if (out) {
    if (rc == 0) {
      *out = e->res;
      memset(&e->res, 0, sizeof e->res);
    } else {
      memset(out, 0, sizeof *out);
    }
  }
  engine_free(e);
  return rc;
}

/* sim_run and sim_run_stream: a run stepped to its end. */
int sim_run(sim_cluster *sc, const gpu_catalog *cat, const trace *t,
            const sim_options *opt, sim_result *out, char *err,
            size_t errlen) {
  memset(out, 0, sizeof *out);
  sim_engine *e;
  int rc = sim_engine_open(&e, sc, cat, t, opt, err, errlen);
  return rc ? rc : sim_engine_close(e, out);
}

int sim_run_stream(sim_cluster *sc, const gpu_catalog *cat,
                   struct trace_stream *s, const sim_options *opt,
                   sim_result *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  sim_engine *e;
  int rc = sim_engine_open_stream(&e, sc, cat, s, opt, err, errlen);
  return rc ? rc : sim_engine_close(e, out);
}
