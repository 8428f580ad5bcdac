/*
 * Preemptible jobs by priority (--preemptible, sim/engine/preempt.c) and
 * the per-class figures (by_class, --slo): hand-computed cases (the victim
 * that loses the least work, with and without a checkpoint interval; the
 * --max-preemptions cap; by_class and SLO misses), a run without a
 * preemptible class equal to one without the part, and random workloads
 * under every queue discipline and several policies with libsched's
 * invariant checks on after every operation, where the GPU time allocated
 * must equal the jobs' work plus the lost work exactly, every job must
 * finish, and no job may be stopped more than the cap or belong to a class
 * that is not preemptible.
 */
#include "catalog.h"
#include "cluster_spec.h"
#include "engine.h"
#include "testutil.h"
#include "trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gpu_catalog cat;

static void load_catalog(void) {
  char err[512];
  ck_assert_msg(catalog_load_default(&cat, err, sizeof err) == 0, "%s", err);
}

static void free_catalog(void) { catalog_free(&cat); }

/* n nodes of g A100-80GB GPUs, whole GPUs (exclusive) or shared by milli;
 * libsched's invariants checked after every operation. */
static void nodes(sim_cluster *sc, int n, int g, const char *mode) {
  char json[512], err[512];
  snprintf(json, sizeof json,
           "{\"name\": \"t\", \"node_groups\": [{\"name\": \"n\", \"count\": "
           "%d, \"gpu_model\": \"A100-80GB\", \"gpus_per_node\": %d, "
           "\"cpu_milli\": 64000, \"memory_mib\": 640000, \"gpu_mode\": "
           "\"%s\", \"price_per_gpu_hour\": 1}]}",
           n, g, mode);
  ck_assert_msg(sim_cluster_from_json(sc, json, "test", &cat, 1, err,
                                      sizeof err) == 0,
                "%s", err);
}

static void job(trace *t, const char *name, int64_t submit, int64_t dur,
                int gpus, int qos) {
  tu_add_job(t, name, submit, dur, gpus, gpus ? 1000 : 0, NULL);
  t->jobs[t->n - 1].qos = (uint8_t)qos;
}

static void opts(sim_options *o, const char *queue_pre) {
  memset(o, 0, sizeof *o);
  o->policy = "first-fit";
  o->queue = SIM_QUEUE_FIFO;
  o->seed = 1;
  o->unknown_duration_us = -1;
  o->preemptible = queue_pre;
}

static void run(sim_cluster *sc, const trace *t, const sim_options *o,
                sim_result *r) {
  char err[512] = "";
  ck_assert_msg(sim_run(sc, &cat, t, o, r, err, sizeof err) == 0, "%s", err);
}

#define S(x) ((int64_t)(x) * TRACE_US_PER_S)

/*
 * Two nodes of 2 GPUs (first-fit). b1 (BE, 2 GPUs, 1000 s) starts at 0 on
 * node 0, b2 (BE, 1000 s) at 10 on node 1; ls (LS, 2 GPUs, 50 s) arrives
 * at 100 and fits nowhere. Lost work if stopped at 100:
 *   no checkpoint: b1 100 s x 2 = 200 GPU-s, b2 90 x 2 = 180: b2 goes; it
 *     resumes at 150 (ls done) with all 1000 s left, ends at 1150;
 *   checkpoint 50 s: b1 keeps 2 intervals (100 s), loses 0; b2 keeps 1
 *     (50 s), loses 40 x 2 = 80: b1 goes, resumes at 150 with 900 s left
 *     and ends at 1050.
 */
START_TEST(least_lost_work) {
  sim_cluster sc;
  nodes(&sc, 2, 2, "exclusive");
  trace t;
  trace_init(&t);
  t.path = strdup("hand.csv");
  t.has_times = 1;
  job(&t, "b1", 0, 1000, 2, TRACE_QOS_BE);
  job(&t, "b2", 10, 1000, 2, TRACE_QOS_BE);
  job(&t, "ls", 100, 50, 2, TRACE_QOS_LS);
  for (int ck = 0; ck < 2; ck++) {
    sim_options o;
    opts(&o, "BE");
    o.checkpoint_s = ck ? 50 : 0;
    sim_result r;
    run(&sc, &t, &o, &r);
    int v = ck ? 0 : 1; /* the victim */
    ck_assert_int_eq(r.js[2].start_us, S(100));
    ck_assert_int_eq(r.js[2].finish_us, S(150));
    ck_assert_int_eq(r.js[2].node, v); /* on the victim's node */
    ck_assert_uint_eq(r.preemptions[v], 1);
    ck_assert_uint_eq(r.preemptions[1 - v], 0);
    ck_assert_uint_eq(r.preemptions_total, 1);
    ck_assert_int_eq(r.js[v].start_us, S(v ? 10 : 0)); /* first start */
    ck_assert_int_eq(r.js[v].finish_us, S(ck ? 1050 : 1150));
    ck_assert_int_eq(r.js[1 - v].finish_us, S(ck ? 1010 : 1000));
    ck_assert_double_eq_tol(r.lost_gpu_s[v], ck ? 0 : 180, 1e-9);
    ck_assert_double_eq_tol(r.lost_gpu_s_total, ck ? 0 : 180, 1e-9);
    /* by_class: BE 2 jobs, 1 preemption; LS 1 job, queue 0, JCT 50. */
    ck_assert_ptr_nonnull(r.by_class);
    const sim_class_stat *be = &r.by_class->cls[3], *ls = &r.by_class->cls[1];
    ck_assert(r.by_class->present[3] && r.by_class->present[1]);
    ck_assert(!r.by_class->present[0] && !r.by_class->present[2] &&
              !r.by_class->present[4]);
    ck_assert_uint_eq(be->jobs, 2);
    ck_assert_uint_eq(be->preemptions, 1);
    ck_assert_double_eq_tol(be->lost_gpu_s, ck ? 0 : 180, 1e-9);
    /* BE JCTs: 1000 and 1140 (no checkpoint) or 1050 and 1000. */
    ck_assert_double_eq_tol(be->jct_s.mean, ck ? 1025 : 1070, 1e-9);
    ck_assert_double_eq_tol(be->jct_s.max, ck ? 1050 : 1140, 1e-9);
    ck_assert_uint_eq(ls->jobs, 1);
    ck_assert_uint_eq(ls->preemptions, 0);
    ck_assert_double_eq_tol(ls->queue_time_s.max, 0, 1e-9);
    ck_assert_double_eq_tol(ls->jct_s.mean, 50, 1e-9);
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/*
 * One node of 2 GPUs. b (BE, 2 GPUs, 1000 s) at 0; l1, l2, l3 (LS, 2 GPUs,
 * 10 s) at 100, 200, 300; big (LS, 4 GPUs) never fits. No checkpoint.
 *   --max-preemptions 2: b is stopped at 100 (lost 100 s x 2) and 200
 *     (lost 90 x 2; it resumed at 110), then no more: l3 waits until b
 *     ends at 210 + 1000 = 1210 and runs to 1220. LS queue times 0, 0,
 *     910: mean 303.333, max 910; --slo LS:60 misses l3 and big (never
 *     started): 2. BE: 2 preemptions, 380 GPU-s lost, JCT 1210.
 *   default cap (3): l3 stops b a third time (lost 90 x 2 more), b ends at
 *     310 + 1000 = 1310; LS queue times all 0, SLO misses 1 (big).
 */
START_TEST(cap_and_slo) {
  sim_cluster sc;
  nodes(&sc, 1, 2, "exclusive");
  trace t;
  trace_init(&t);
  t.path = strdup("cap.csv");
  t.has_times = 1;
  job(&t, "b", 0, 1000, 2, TRACE_QOS_BE);
  job(&t, "l1", 100, 10, 2, TRACE_QOS_LS);
  job(&t, "l2", 200, 10, 2, TRACE_QOS_LS);
  job(&t, "l3", 300, 10, 2, TRACE_QOS_LS);
  job(&t, "big", 400, 10, 4, TRACE_QOS_LS);
  for (int cap = 0; cap < 2; cap++) {
    sim_options o;
    opts(&o, "be"); /* class names in any case */
    o.max_preemptions = cap ? 2 : 0;
    o.slo = "LS:60";
    sim_result r;
    run(&sc, &t, &o, &r);
    ck_assert_uint_eq(r.preemptions[0], cap ? 2 : 3);
    ck_assert_int_eq(r.js[0].finish_us, S(cap ? 1210 : 1310));
    ck_assert_int_eq(r.js[3].start_us, S(cap ? 1210 : 300));
    ck_assert_double_eq_tol(r.lost_gpu_s[0], cap ? 380 : 560, 1e-9);
    ck_assert_uint_eq(r.never_no_node, 1);
    const sim_class_stat *be = &r.by_class->cls[3], *ls = &r.by_class->cls[1];
    ck_assert_uint_eq(ls->jobs, 4);
    ck_assert_double_eq_tol(ls->queue_time_s.mean, cap ? 910.0 / 3 : 0, 1e-9);
    ck_assert_double_eq_tol(ls->queue_time_s.max, cap ? 910 : 0, 1e-9);
    ck_assert_uint_eq(ls->slo_misses, cap ? 2 : 1);
    ck_assert_uint_eq(be->slo_misses, 0); /* no target */
    ck_assert_uint_eq(be->preemptions, cap ? 2 : 3);
    ck_assert_double_eq_tol(be->lost_gpu_s, cap ? 380 : 560, 1e-9);
    ck_assert_double_eq_tol(be->jct_s.max, cap ? 1210 : 1310, 1e-9);
    sim_result_free(&r);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* Bad --preemptible and --slo values are input errors naming the item. */
START_TEST(bad_options) {
  sim_cluster sc;
  nodes(&sc, 1, 2, "exclusive");
  trace t;
  trace_init(&t);
  t.path = strdup("one.csv");
  t.has_times = 1;
  job(&t, "a", 0, 10, 1, TRACE_QOS_BE);
  static const struct {
    const char *pre, *slo, *msg;
  } bad[] = {{"BE,cheap", NULL, "unknown class 'cheap'"},
             {"", NULL, "unknown class ''"},
             {NULL, "LS", "bad item 'LS'"},
             {NULL, "LS:-1", "bad item 'LS:-1'"},
             {NULL, "LS:10,XX:5", "bad item 'XX:5'"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sim_options o;
    opts(&o, bad[i].pre);
    o.slo = bad[i].slo;
    sim_result r;
    char err[512] = "";
    ck_assert_int_eq(sim_run(&sc, &cat, &t, &o, &r, err, sizeof err), -1);
    ck_assert_msg(strstr(err, bad[i].msg), "%s", err);
  }
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static uint64_t next(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* n jobs of mixed shapes (gangs included) and QoS classes, in bursts. */
static void workload(trace *t, uint64_t seed, int n) {
  static const struct {
    int gpus, milli;
  } shapes[] = {{1, 1000}, {1, 500}, {2, 1000}, {1, 250},
                {0, 0},    {4, 1000}, {8, 1000}, {16, 1000}};
  static const int qos[] = {TRACE_QOS_BE, TRACE_QOS_LS, TRACE_QOS_BURSTABLE,
                            TRACE_QOS_GUARANTEED, TRACE_QOS_UNKNOWN};
  trace_init(t);
  t->path = strdup("mix.csv");
  t->has_times = 1;
  uint64_t x = 0x9E3779B97F4A7C15ull ^ (seed * 104729 + 1);
  int64_t submit = 0;
  for (int k = 0; k < n; k++) {
    uint64_t r = next(&x);
    if (r % 3 == 0)
      submit += (int64_t)((r >> 8) % 40);
    uint64_t p = (r >> 16) % 100;
    int s = p < 40 ? 0 : p < 55 ? 1 : p < 70 ? 2 : p < 78 ? 3 : p < 84 ? 4
          : p < 92 ? 5 : p < 97 ? 6 : 7;
    int64_t dur = 20 + (int64_t)((r >> 32) % 400);
    char name[16];
    snprintf(name, sizeof name, "j%d", k);
    tu_add_job(t, name, submit, dur, shapes[s].gpus, shapes[s].milli, NULL);
    uint64_t q = (r >> 48) % 10; /* BE 50%, LS 20%, the others 10% */
    t->jobs[t->n - 1].qos = (uint8_t)qos[q < 5 ? 0 : q < 7 ? 1 : q - 6];
    t->jobs[t->n - 1].req_s = (uint32_t)(dur + (int64_t)((r >> 40) % 60));
  }
}

static const char *const policies[] = {"first-fit", "best-fit", "random",
                                       "fgd"};
#define NPOL (int)(sizeof policies / sizeof policies[0])

/* _i: policy x discipline x (BE, or BE and Burstable preemptible) x cap. */
START_TEST(accounting_exact) {
  static const sim_queue_kind queues[] = {SIM_QUEUE_FIFO, SIM_QUEUE_SKIP,
                                          SIM_QUEUE_BACKFILL,
                                          SIM_QUEUE_PRIORITY};
  sim_cluster sc;
  nodes(&sc, 3, 8, "shared");
  trace t;
  workload(&t, 7 + (uint64_t)_i, 300);
  sim_options o;
  opts(&o, _i / (4 * NPOL) % 2 ? "Burstable,BE" : "BE");
  o.policy = policies[_i % NPOL];
  o.queue = queues[_i / NPOL % 4];
  o.max_preemptions = _i / (8 * NPOL) % 2 ? 1 : 0;
  o.checkpoint_s = 30;
  o.check_reservations = 1;
  o.estimates = SIM_EST_TRACE;
  o.overrun = SIM_OVERRUN_EXTEND;
  unsigned mask = _i / (4 * NPOL) % 2 ? (1u << TRACE_QOS_BE) |
                                            (1u << TRACE_QOS_BURSTABLE)
                                      : 1u << TRACE_QOS_BE;
  int cap = o.max_preemptions ? 1 : 3;
  sim_result r;
  run(&sc, &t, &o, &r);
  ck_assert_uint_eq(r.completed, t.n);
  double work = 0, lost = 0;
  uint64_t npre = 0;
  for (size_t j = 0; j < t.n; j++) {
    const job_record *jr = &t.jobs[j];
    work += (double)jr->num_gpu * jr->gpu_milli / 1000.0 *
            (double)jr->duration_us / 1e6;
    lost += r.lost_gpu_s[j];
    npre += r.preemptions[j];
    ck_assert_uint_le(r.preemptions[j], cap);
    if (r.preemptions[j])
      ck_assert_msg(mask >> jr->qos & 1u, "job %zu of class %d preempted", j,
                    jr->qos);
    ck_assert_int_ge(r.js[j].finish_us - r.js[j].start_us, jr->duration_us);
  }
  ck_assert_uint_eq(npre, r.preemptions_total);
  ck_assert_double_eq_tol(lost, r.lost_gpu_s_total, 1e-6);
  /* GPU time allocated = the jobs' work + the work lost to preemption. */
  ck_assert_double_eq_tol(r.allocated_gpu_hours * 3600, work + lost,
                          1e-6 * (work + lost));
  /* The cluster is idle again. */
  lsched_totals tot = LSCHED_TOTALS_INIT;
  lsched_cluster_totals(sc.c, &tot);
  ck_assert_int_eq(tot.gpu_milli_free, tot.gpu_milli);
  /* by_class counts every job and every preemption. */
  size_t jobs = 0;
  uint64_t cpre = 0;
  for (int c = 0; c < SIM_NCLASSES; c++) {
    jobs += r.by_class->cls[c].jobs;
    cpre += r.by_class->cls[c].preemptions;
  }
  ck_assert_uint_eq(jobs, t.n);
  ck_assert_uint_eq(cpre, r.preemptions_total);
  sim_result_free(&r);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

/* Some workload of the loop above preempts at all (else it proves
 * nothing), and a run whose preemptible class has no lower-ranked job
 * waiting (Guaranteed: nobody ranks above it) schedules exactly as a run
 * without --preemptible. */
START_TEST(preempts_and_neutral) {
  sim_cluster sc;
  nodes(&sc, 3, 8, "shared");
  trace t;
  workload(&t, 7, 300);
  sim_options o;
  opts(&o, "BE");
  o.queue = SIM_QUEUE_PRIORITY;
  sim_result a, b, c;
  run(&sc, &t, &o, &a);
  ck_assert_uint_gt(a.preemptions_total, 2);
  o.preemptible = "Guaranteed";
  run(&sc, &t, &o, &b);
  o.preemptible = NULL;
  run(&sc, &t, &o, &c);
  /* --slo alone: by_class, nothing stopped, nothing lost. */
  sim_result d;
  o.slo = "LS:0";
  run(&sc, &t, &o, &d);
  ck_assert_ptr_nonnull(d.by_class);
  for (int k = 0; k < SIM_NCLASSES; k++) {
    ck_assert_uint_eq(d.by_class->cls[k].preemptions, 0);
    ck_assert(d.by_class->cls[k].lost_gpu_s == 0);
  }
  /* LS:0 misses every LS job that waited or never started. */
  size_t waited = 0;
  for (size_t j = 0; j < t.n; j++)
    if (t.jobs[j].qos == TRACE_QOS_LS &&
        (d.js[j].start_us < 0 || d.js[j].start_us > t.jobs[j].submit_us))
      waited++;
  ck_assert_uint_eq(d.by_class->cls[1].slo_misses, waited);
  ck_assert_uint_gt(waited, 0);
  sim_result_free(&d);
  ck_assert_uint_eq(b.preemptions_total, 0);
  ck_assert_ptr_null(c.by_class);
  for (size_t j = 0; j < t.n; j++) {
    ck_assert_int_eq(b.js[j].start_us, c.js[j].start_us);
    ck_assert_int_eq(b.js[j].finish_us, c.js[j].finish_us);
    ck_assert_int_eq(b.js[j].node, c.js[j].node);
  }
  sim_result_free(&a);
  sim_result_free(&b);
  sim_result_free(&c);
  trace_free(&t);
  sim_cluster_free(&sc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("preempt");
  TCase *tc = tcase_create("preempt");
  tcase_set_timeout(tc, 600); /* ASan on a loaded 2-core machine */
  tcase_add_checked_fixture(tc, load_catalog, free_catalog);
  tcase_add_test(tc, least_lost_work);
  tcase_add_test(tc, cap_and_slo);
  tcase_add_test(tc, bad_options);
  tcase_add_loop_test(tc, accounting_exact, 0, 16 * NPOL);
  tcase_add_test(tc, preempts_and_neutral);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(make_suite()); }
