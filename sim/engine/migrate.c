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

static int migrate_after_pass(void *self, engine *e);

static const sim_part_ops migrate_part = {
    .name = "migrate",
    .after_pass = migrate_after_pass,
};

int migrate_part_open(engine *e, const gpu_catalog *cat, const trace *t) {
  (void)t;
  if (!e->can_plan)
    return 0;
  sim_cluster *sc = e->sc;
  e->node_gpu_gib = calloc((size_t)sc->nodes + 1, sizeof *e->node_gpu_gib);
  if (!e->node_gpu_gib || engine_add_part(e, &migrate_part, NULL)) {
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
  if (time_add(e, s, s->seg_us, s->rem_us, &end))
    return -1;
  /* The cost is bounded before llround (undefined past int64); too large
   * a cost fails the sum below. */
  int64_t cost_us =
      cost * 1e6 <= (double)TRACE_MAX_TIME_US ? llround(cost * 1e6) : INT64_MAX;
  if (time_add(e, s, e->now, cost_us, &seg))
    return -1;
  if (lsched_alloc(e->sc->c, to)) {
    snprintf(e->err, e->errlen, "defrag: move of %s failed: %s", slot_name(s),
             lsched_cluster_errmsg(e->sc->c));
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
  s->rem_us = left;
  s->seg_us = seg;
  if (slot_retime(e, j, fin)) {
    snprintf(e->err, e->errlen, "out of memory");
    return -1;
  }
  s->nmig++;
  s->lost_gpu_s += cost * gpus;
  e->migrations++;
  return 0;
}

int64_t stop_kept_us(const engine *e, const slot *s, int64_t *elapsed) {
  *elapsed = e->now > s->seg_us ? e->now - s->seg_us : 0;
  int64_t ck = llround(e->opt->checkpoint_s * 1e6);
  int64_t kept = ck > 0 ? *elapsed / ck * ck : 0;
  return kept > s->rem_us ? s->rem_us : kept;
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
  s->rem_us -= kept;
  s->lost_gpu_s += (double)(elapsed - kept) / 1e6 * gpus;
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
  s->npre++;
  e->preemptions++;
  return 0;
}

/*
 * The head h is blocked. If the cluster's free GPU capacity would hold it,
 * asks the policy for a plan (budget: max_moves, max_moves_per_job, and the
 * head's expected wait = its EASY reservation - now) and applies it. 1 if
 * anything moved, 0 if not, -1 on error.
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
    if (e->opt->preempt ? stop_requeue(e, j, &moves[m].from, 0)
                        : apply_move(e, j, &moves[m].from, &moves[m].to))
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
  (void)self;
  if (e->qlen == 0)
    return 0;
  uint32_t h = e->queue[e->qhead];
  if (e->slots[h].st.status != JOB_QUEUED || (!e->freed && h == e->plan_failed))
    return 0;
  int d = defragment(e, h);
  if (d == 0)
    e->plan_failed = h;
  return d;
}
