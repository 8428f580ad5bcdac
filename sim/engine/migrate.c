/*
 * Migration and preemption: when the head of the queue is blocked although
 * the cluster's free GPU capacity would hold it, a policy that plans
 * migrations (libsched/migrate.h; e.g. defrag) may move running jobs to
 * make room, or, with sim_options.preempt, stop and requeue them.
 */
#include "engine_internal.h"

#include <libsched/migrate.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * The running jobs as the planner sees them are kept in a running index
 * (libsched/migrate.h), position i = run_list[i] (the order that breaks
 * ties between equally cheap moves, as in the array the engine gave the
 * planner before). The hooks only mark positions dirty (a job placed or
 * moved: its position; a job that left run_list: its old position and the
 * old last one, which run_list_remove moved into it); defragment rebuilds
 * the dirty ones first, and those whose job was still inside its move
 * (not movable yet, which changes with time alone). An attempt so costs
 * what changed since the last one. -DMIGRATE_VERIFY checks the index
 * against the whole array on every attempt.
 */
typedef struct migrate_self {
  engine *e;
  lsched_running_index *ix;
  size_t *dirty, ndirty, dcap;
  unsigned char *mark; /* [mcap]: position in dirty */
  size_t mcap;
  size_t *pending, npending, pcap; /* positions rebuilt inside a move */
  int oom;                         /* a mark could not be recorded */
} migrate_self;

static int migrate_after_pass(void *self, engine *e);
static void migrate_placed(void *self, const slot *s,
                           const lsched_placement *parts, int n);
static void migrate_queued(void *self, const slot *s, int delta);
static void migrate_finish(void *self, engine *e, const slot *s,
                           const lsched_placement *parts, int n);
static void migrate_close(void *self);

static const sim_part_ops migrate_part = {
    .name = "migrate",
    .after_pass = migrate_after_pass,
    .on_placed = migrate_placed,
    .on_queued = migrate_queued,
    .on_finish = migrate_finish,
    .close = migrate_close,
};

static int push_pos(size_t **a, size_t *n, size_t *cap, size_t pos) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 256;
    size_t *q = realloc(*a, nc * sizeof *q);
    if (!q)
      return -1;
    *a = q;
    *cap = nc;
  }
  (*a)[(*n)++] = pos;
  return 0;
}

static void mark_dirty(migrate_self *m, size_t pos) {
  if (pos >= m->mcap) {
    size_t nc = m->mcap ? m->mcap : 1024;
    while (nc <= pos)
      nc *= 2;
    unsigned char *q = realloc(m->mark, nc);
    if (!q) {
      m->oom = 1;
      return;
    }
    memset(q + m->mcap, 0, nc - m->mcap);
    m->mark = q;
    m->mcap = nc;
  }
  if (m->mark[pos])
    return;
  if (push_pos(&m->dirty, &m->ndirty, &m->dcap, pos)) {
    m->oom = 1;
    return;
  }
  m->mark[pos] = 1;
}

static void migrate_placed(void *self, const slot *s,
                           const lsched_placement *parts, int n) {
  (void)parts;
  (void)n;
  mark_dirty(self, s->run_pos);
}

/* A job that left run_list (run_list_remove: its position now holds the
 * former last job; the last position is gone). A queued arrival marks two
 * positions for nothing (a rebuild is idempotent). */
static void left_run_list(migrate_self *m, const slot *s) {
  mark_dirty(m, s->run_pos);
  mark_dirty(m, m->e->nrun);
}

static void migrate_queued(void *self, const slot *s, int delta) {
  if (delta > 0)
    left_run_list(self, s);
}

static void migrate_finish(void *self, engine *e, const slot *s,
                           const lsched_placement *parts, int n) {
  (void)e;
  (void)parts;
  (void)n;
  left_run_list(self, s);
}

static void migrate_close(void *self) {
  migrate_self *m = self;
  if (!m)
    return;
  lsched_running_index_destroy(m->ix);
  free(m->dirty);
  free(m->mark);
  free(m->pending);
  free(m);
}

int migrate_part_open(engine *e, const gpu_catalog *cat, const trace *t) {
  (void)t;
  if (!e->can_plan)
    return 0;
  sim_cluster *sc = e->sc;
  migrate_self *m = calloc(1, sizeof *m);
  e->node_gpu_gib = calloc((size_t)sc->nodes + 1, sizeof *e->node_gpu_gib);
  if (m) {
    m->e = e;
    if (lsched_running_index_create(&m->ix, sc->c) != LSCHED_OK) {
      free(m);
      m = NULL;
    }
  }
  if (!m || !e->node_gpu_gib || engine_add_part(e, &migrate_part, m)) {
    migrate_close(m);
    snprintf(e->err, e->errlen, "out of memory");
    return -2;
  }
  for (int i = 0; i < sc->nodes; i++) {
    lsched_node_info ni;
    lsched_cluster_node_info(sc->c, i, &ni);
    const char *mname = lsched_cluster_model_name(sc->c, ni.gpu_model);
    const gpu_model_info *gm = mname ? catalog_find(cat, mname) : NULL;
    e->node_gpu_gib[i] = gm ? gm->memory_gib : 0;
  }
  return 0;
}

/* What moving the job on p costs: fixed + per GiB of GPU memory it holds
 * (GPUs x share x the node model's memory). */
static double move_cost_s(const engine *e, const lsched_placement *p) {
  double gib = (double)p->gpu_count * p->gpu_milli / 1000.0 *
               e->node_gpu_gib[p->node];
  return e->opt->migration_fixed_s + e->opt->migration_per_gib_s * gib;
}

/* The planner's record of the job in slot j (parts: room for its
 * placements, where r->parts points for a one-part job). */
static void running_record(const engine *e, uint32_t j, lsched_running *r,
                           lsched_placement *parts) {
  const slot *s = &e->slots[j];
  int n = job_parts(e, j, parts);
  *r = (lsched_running)LSCHED_RUNNING_INIT;
  r->id = j;
  build_request(e, s, &r->request);
  r->parts = n == 1 ? parts : NULL;
  r->nparts = n;
  r->move_cost_s = move_cost_s(e, &parts[0]);
  /* A job still inside its move (segment not started) is not moved. */
  const slot_x *x = slot_x_of(e, s);
  r->moves = x->seg_us > e->now ? 1 << 20 : x->nmig + x->npre;
}

/* Brings the index up to date: the dirty positions and those last seen
 * inside a move. 0, or -1 with e->err set. */
static int sync_index(migrate_self *m) {
  engine *e = m->e;
  size_t np = m->npending;
  m->npending = 0;
  for (size_t i = 0; i < np; i++)
    mark_dirty(m, m->pending[i]);
  if (m->oom) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  for (size_t d = 0; d < m->ndirty; d++) {
    size_t pos = m->dirty[d];
    m->mark[pos] = 0;
    if (pos >= e->nrun) {
      lsched_running_index_clear(m->ix, pos);
      continue;
    }
    lsched_running r;
    lsched_placement parts[SIM_MAX_PARTS];
    running_record(e, e->run_list[pos], &r, parts);
    int rc = lsched_running_index_set(m->ix, pos, &r);
    if (rc == LSCHED_OK && r.moves == 1 << 20 &&
        push_pos(&m->pending, &m->npending, &m->pcap, pos))
      rc = LSCHED_ENOMEM;
    if (rc != LSCHED_OK) {
      snprintf(e->err, e->errlen, "defrag: %s", lsched_strerror(rc));
      return -1;
    }
  }
  m->ndirty = 0;
  return 0;
}

#ifdef MIGRATE_VERIFY
static int same_part(const lsched_placement *a, const lsched_placement *b) {
  return a->node == b->node && a->gpu_count == b->gpu_count &&
         a->gpu_milli == b->gpu_milli && a->gpu_mask == b->gpu_mask &&
         a->cpu_milli == b->cpu_milli && a->memory_mib == b->memory_mib;
}

/* The index holds exactly the array the engine would build (abort if
 * not). */
static void verify_index(const migrate_self *m) {
  const engine *e = m->e;
  size_t n;
  const lsched_running *x = lsched_running_index_entries(m->ix, &n);
  if (n > e->nrun)
    abort();
  for (size_t i = 0; i < e->nrun; i++) {
    lsched_running r;
    lsched_placement parts[SIM_MAX_PARTS];
    running_record(e, e->run_list[i], &r, parts);
    const lsched_running *y = &x[i];
    if (i >= n || y->id != r.id || y->nparts != r.nparts ||
        y->moves != r.moves || y->move_cost_s != r.move_cost_s ||
        memcmp(&y->request, &r.request, sizeof r.request) != 0 ||
        (r.nparts == 1 && !same_part(y->parts, r.parts)))
      abort();
  }
}
#endif

/* Moves the job in slot j from `from` to `to` (already released): it
 * resumes on the target after its move cost with its remaining work, in
 * run time on the target under a speed model (hook_run_time: the speed
 * part converts what is left at the speed it ran, carries the work done
 * and re-times the co-runners on a shared target GPU from the resumption;
 * speed_left re-times those it leaves on a shared source GPU now). */
static int apply_move(engine *e, uint32_t j, const lsched_placement *from,
                      const lsched_placement *to) {
  slot *s = &e->slots[j];
  double gpus = (double)from->gpu_count * from->gpu_milli / 1000.0;
  int64_t end, seg, fin;
  double cost = move_cost_s(e, from);
  slot_x *sx = slot_x_of(e, s);
  if (time_add(e, s, sx->seg_us, sx->rem_us, &end))
    return -1;
  /* The cost is bounded before llround (undefined past int64); too large
   * a cost fails the sum below. */
  int64_t cost_us =
      cost * 1e6 <= (double)TRACE_MAX_TIME_US ? llround(cost * 1e6) : INT64_MAX;
  if (time_add(e, s, e->now, cost_us, &seg))
    return -1;
  if (lsched_alloc(e->sc->c, to)) {
    snprintf(e->err, e->errlen, "defrag: move of %s failed: %s",
             slot_name(e, s), lsched_cluster_errmsg(e->sc->c));
    return -1;
  }
  /* A target that composes pool GPUs: the job resumes once they are
   * attached, after its move cost (its state is restored onto them). */
  int64_t att = pools_move_attach(e, to);
  if (att > 0) {
    if (time_add(e, s, seg, att, &seg))
      return -1;
    cost += (double)att / 1e6;
  }
  e->alloc_milli += parts_milli(to, 1) - parts_milli(from, 1);
  s->st.node = to->node;
  s->st.gpu_mask = to->gpu_mask;
  s->st.gpu_milli = (int16_t)to->gpu_milli;
  hook_placed(e, s, to, 1);
  s->st.epoch++;
  int64_t left = hook_run_time(e, j, to, 1, seg, end - e->now);
  if (left < 0 || time_add(e, s, seg, left, &fin) ||
      speed_left(e, j, from, e->now))
    return -1;
  sx->rem_us = left;
  sx->seg_us = seg;
  if (slot_retime(e, j, fin)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  sx->nmig++;
  sx->lost_gpu_s += cost * gpus;
  e->migrations++;
  return 0;
}

int64_t stop_kept_us(const engine *e, const slot *s, int64_t *elapsed) {
  const slot_x *sx = slot_x_of(e, s);
  *elapsed = e->now > sx->seg_us ? e->now - sx->seg_us : 0;
  int64_t ck = llround(e->opt->checkpoint_s * 1e6);
  int64_t kept = ck > 0 ? *elapsed / ck * ck : 0;
  return kept > sx->rem_us ? sx->rem_us : kept;
}

/* Stops the job in slot j (its resources `from` already released), keeps
 * the progress of whole checkpoint intervals, and requeues it behind the
 * head (at_tail: where the discipline puts an arrival; preempt.c). */
int stop_requeue(engine *e, uint32_t j, const lsched_placement *from,
                 int at_tail) {
  slot *s = &e->slots[j];
  double gpus = (double)from->gpu_count * from->gpu_milli / 1000.0;
  int64_t elapsed;
  int64_t kept = stop_kept_us(e, s, &elapsed);
  slot_x *sx = slot_x_of(e, s);
  sx->rem_us -= kept;
  sx->lost_gpu_s += (double)(elapsed - kept) / 1e6 * gpus;
  e->alloc_milli -= parts_milli(from, 1);
  e->running--;
  run_list_remove(e, j);
  s->st.epoch++;
  s->gen++; /* its completion event is now stale */
  s->st.status = JOB_QUEUED;
  s->st.node = -1;
  /* Under a speed model its co-runners on a shared GPU run on without it
   * (its restart converts what is left at the speed it last ran). */
  if (speed_left(e, j, from, e->now))
    return -1;
  if (at_tail ? queue_add(e, j) : queue_add_behind_head(e, j)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  sx->npre++;
  e->preemptions++;
  return 0;
}

/*
 * The head h is blocked. If the cluster's free GPU capacity would hold it,
 * asks the policy for a plan (budget: max_moves, max_moves_per_job, and the
 * head's expected wait = its EASY reservation - now) and applies it. 1 if
 * anything moved, 0 if not, -1 on error.
 */
static int defragment(migrate_self *m, uint32_t h) {
  engine *e = m->e;
  lsched_request req;
  build_request(e, &e->slots[h], &req);
  if ((int64_t)req.gpu_count * req.gpu_milli > e->total_milli - e->alloc_milli)
    return 0; /* not a fragmentation problem: capacity is short */
  int fail = 0;
  int64_t t = reservation(e, h, &fail);
  if (fail) {
    snprintf(e->err, e->errlen, "defrag: inconsistent state");
    return -1;
  }
  if (sync_index(m))
    return -1;
#ifdef MIGRATE_VERIFY
  verify_index(m);
#endif
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  b.max_moves = e->opt->max_moves;
  b.max_moves_per_job = e->opt->max_moves_per_job;
  b.expected_wait_s = t == INT64_MAX ? 1e18 : (double)(t - e->now) / 1e6;
  lsched_move moves[64];
  size_t nm = 0;
  int rc = lsched_policy_plan_migrations_indexed(e->pol, &req, m->ix, &b,
                                                 moves, 64, &nm);
  if (rc == LSCHED_ENOFIT || (rc == LSCHED_OK && nm == 0))
    return 0;
  if (rc != LSCHED_OK) {
    snprintf(e->err, e->errlen, "defrag: %s", lsched_strerror(rc));
    return -1;
  }
  /* The moved jobs' slots, read before any change (the index is brought
   * up to date only at the next attempt, so positions still hold). */
  const lsched_running *run = lsched_running_index_entries(m->ix, NULL);
  /* Every source is released first, then every target allocated (a
   * target may use room another moved job frees; see migrate.h). */
  for (size_t k = 0; k < nm; k++)
    if (lsched_release(e->sc->c, &moves[k].from)) {
      snprintf(e->err, e->errlen, "defrag: release of %s failed: %s",
               slot_name(e, &e->slots[run[moves[k].index].id]),
               lsched_cluster_errmsg(e->sc->c));
      return -1;
    }
  for (size_t k = 0; k < nm; k++) {
    uint32_t j = (uint32_t)run[moves[k].index].id;
    if (e->opt->preempt ? stop_requeue(e, j, &moves[k].from, 0)
                        : apply_move(e, j, &moves[k].from, &moves[k].to))
      return -1;
  }
  e->freed = 1;
  e->reservation_valid = 0;
  e->head_tried = UINT32_MAX;
  return 1;
}

/* A plan that failed is not retried for the same head until something was
 * released. */
static int migrate_after_pass(void *self, engine *e) {
  if (e->qlen == 0)
    return 0;
  uint32_t h = e->queue[e->qhead];
  if (e->slots[h].st.status != JOB_QUEUED || (!e->freed && h == e->plan_failed))
    return 0;
  int d = defragment(self, h);
  if (d == 0)
    e->plan_failed = h;
  return d;
}
