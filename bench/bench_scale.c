/*
 * The benchmark at scale (issue #19): replays with queues formed on 10,000
 * and 100,000 GPUs, every policy and queue discipline, plus the cases that
 * used to fall off a cliff.
 *
 *   bench_scale [--only grid,shapes,long,big] [--policy A,B] [--queue A,B]
 *               [--jobs-10k N] [--jobs-100k N] [--load A,B] [--gpus A,B]
 *               [--shapes-jobs N] [--long-jobs N] [--big N]
 *               [--big-policy A,B] [--big-queue A,B] [--big-speed A,B]
 *
 * A list names only parts, policies, queues, sizes and loads this table
 * has, and a count is a whole number (at least 1; --big at least 0, 0 for
 * off): anything else is refused with a message naming the option, exit 2.
 *
 * grid   cluster (1,250 or 12,500 nodes x 8 A100-80GB: 10,000 or 100,000
 *        GPUs) x offered load (0.9, 1.2) x policy x queue discipline, the
 *        synthetic default mix (traces/synth.c) with its arrival rate scaled
 *        to the load and the cluster: rate = load x GPUs / (E[D] x E[G]),
 *        E[D] = 2967.7 s, E[G] = 1.361 GPUs. 50,000 jobs on 10,000 GPUs
 *        and 400,000 on 100,000 by default (a 100,000-GPU cluster needs
 *        about 100,000 jobs to fill before queues form).
 * shapes fgd on 10,000 GPUs at load 1.2 (skip), 5,000 jobs of 32,000
 *        distinct request shapes (CPU 1,000 + i milli, i = job mod 32,000,
 *        on top of the default mix's shape) against the same jobs with one
 *        CPU request each.
 * long   1,000,000 identical jobs (1 GPU, durations of the default mix)
 *        submitted at time 0 on 10,000 GPUs: skip against fifo (first-fit).
 * big    --big N jobs (the 10,000,000: a month of the busy
 *        100,000-GPU cluster at load 1.2), first-fit and best-fit, skip
 *        and backfill (whose passes walked the queue of millions there
 *        until session 39: bench/README.md); off by default (it takes
 *        minutes and about 1.2 GiB). --big-speed none,catalog adds the
 *        same month under the speed model (label big-speed@1.2: the
 *        built-in speed table, durations measured on the cluster's
 *        A100-SXM4-80GB, so the offered load is the same and only the
 *        co-runners' interference on shared GPUs changes run times;
 *        whose backfill sorted every running job's end for each candidate
 *        beside co-runners until session 40); none by default.
 *
 * Each case runs in a forked child: it generates the trace, then times
 * sim_run alone (outcomes go to a counting sink, as `schedsim run` streams
 * them to jobs.csv). Columns: events, CPU seconds of sim_run (user +
 * system: on a loaded machine wall time also counts waiting for a core),
 * events per CPU second, instructions per event (user mode, counted by
 * perf_event_open around sim_run; "-" where the kernel does not allow it:
 * the figure to compare across machines and loads), peak RSS per job
 * (trace included) and the engine's part of it (peak RSS minus the RSS
 * before sim_run, per job), the mean queue time (that queues formed) and
 * runs: a case whose first run took less than SHORT_CPU_S CPU seconds is
 * run RUNS_SHORT times in all, each in a fresh child, and cpu_s (hence
 * events/s) is the median of the runs; the other columns are the first
 * run's (every run replays the same jobs: the same events, instructions
 * within noise and mean queue time), but the last two: events per CPU
 * second of the slowest and of the fastest run (equal to events/s for a
 * case run once). On a shared VM identical runs differ by up to 40%
 * (bench/README.md, "Session 39"): the two show by how much this time.
 */
#define _GNU_SOURCE /* syscall, wait4 */
#include "bench_args.h"
#include "catalog.h"
#include "cluster_spec.h"
#include "engine.h"
#include "trace.h"

#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* CPU time of this process (user + system), to the nanosecond: getrusage
 * counts in scheduler ticks (10 ms here), a tenth of a 10k cell. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Resident set size now, bytes (/proc/self/statm). */
static double rss_now(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &res) != 2)
      res = 0;
    fclose(f);
  }
  return (double)res * (double)sysconf(_SC_PAGESIZE);
}

/* A user-mode instruction counter for this process, or -1. */
static int instr_open(void) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.type = PERF_TYPE_HARDWARE;
  a.size = sizeof a;
  a.config = PERF_COUNT_HW_INSTRUCTIONS;
  a.disabled = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

typedef struct result_msg {
  double cpu, rss_before, instr, qt_mean;
  unsigned long long events, jobs;
  int ok;
} result_msg;

typedef enum { W_MIX, W_SHAPES, W_ONESHAPE, W_LONG } workload;

typedef struct bench_case {
  const char *label;
  int nodes;
  double load;
  size_t jobs;
  workload w;
  const char *policy;
  sim_queue_kind queue;
  int speed; /* the speed model (big-speed) */
} bench_case;

static int make_cluster(sim_cluster *sc, const gpu_catalog *cat, int nodes,
                        char *err, size_t errlen) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"name\": \"bench-%d\", \"node_groups\": [{\"name\": \"a100\", "
           "\"count\": %d, \"gpu_model\": \"A100-SXM4-80GB\", "
           "\"gpus_per_node\": 8, \"cpu_milli\": 256000, \"memory_mib\": "
           "2097152, \"gpu_mode\": \"shared\"}]}",
           nodes, nodes);
  return sim_cluster_from_json(sc, json, "bench", cat, 0, err, errlen);
}

/* The trace of case c on a cluster of gpus GPUs. */
static int make_trace(trace *t, const bench_case *c, int gpus, char *err,
                      size_t errlen) {
  synth_params p;
  synth_default_params(&p);
  /* The default rate gives load 0.9 on 192 GPUs. */
  p.arrival_rate *= c->load / 0.9 * (double)gpus / 192.0;
  p.jobs = c->jobs;
  p.seed = 1;
  synth_shape one = {1.0, 8000, 65536, 1, 1000};
  if (c->w == W_LONG) {
    p.shapes = &one;
    p.nshapes = 1;
  }
  trace_error te;
  if (synth_generate(t, &p, &te)) {
    snprintf(err, errlen, "%s", te.msg);
    return -1;
  }
  if (c->w == W_LONG)
    for (size_t i = 0; i < t->n; i++)
      t->jobs[i].submit_us = 0;
  if (c->w == W_SHAPES || c->w == W_ONESHAPE)
    for (size_t i = 0; i < t->n; i++)
      t->jobs[i].cpu_milli =
          c->w == W_SHAPES ? 1000 + (int64_t)(i % 32000) : 1000;
  return 0;
}

static int count_job(void *user, const sim_job_out *o) {
  (void)o;
  ++*(unsigned long long *)user;
  return 0;
}

static void child(int fd, const bench_case *c) {
  result_msg m;
  memset(&m, 0, sizeof m);
  char err[1024] = "";
  gpu_catalog cat;
  sim_cluster sc;
  trace t;
  trace_init(&t);
  if (catalog_load_default(&cat, err, sizeof err) ||
      make_cluster(&sc, &cat, c->nodes, err, sizeof err) ||
      make_trace(&t, c, sc.gpus, err, sizeof err))
    goto out;
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = c->policy;
  o.queue = c->queue;
  o.seed = 1;
  o.unknown_duration_us = -1;
  unsigned long long outcomes = 0;
  if (c->speed) {
    o.speed = SIM_SPEED_CATALOG;
    o.measured_on = "A100-SXM4-80GB"; /* the cluster's GPU: same load */
  }
  o.on_job = count_job;
  o.on_job_user = &outcomes;
  sim_result r;
  m.rss_before = rss_now();
  int pfd = instr_open();
  if (pfd >= 0) {
    ioctl(pfd, PERF_EVENT_IOC_RESET, 0);
    ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0);
  }
  double c0 = cpu_s();
  int rc = sim_run(&sc, &cat, &t, &o, &r, err, sizeof err);
  m.cpu = cpu_s() - c0;
  m.instr = -1;
  if (pfd >= 0) {
    long long n = 0;
    ioctl(pfd, PERF_EVENT_IOC_DISABLE, 0);
    if (read(pfd, &n, sizeof n) == (ssize_t)sizeof n)
      m.instr = (double)n;
    close(pfd);
  }
  if (rc == 0) {
    m.events = r.events;
    m.jobs = r.jobs;
    m.qt_mean = r.queue_time_s.mean;
    m.ok = 1;
    sim_result_free(&r);
  }
out:
  if (!m.ok)
    fprintf(stderr, "bench_scale: %s %s: %s\n", c->label, c->policy, err);
  if (write(fd, &m, sizeof m) != (ssize_t)sizeof m)
    _exit(3);
  _exit(m.ok ? 0 : 1);
}

static const char *queue_name(sim_queue_kind q) {
  return q == SIM_QUEUE_FIFO       ? "fifo"
         : q == SIM_QUEUE_SKIP     ? "skip"
         : q == SIM_QUEUE_BACKFILL ? "backfill"
                                   : "priority";
}

/* Cases shorter than this (CPU seconds) are repeated. 1 s, not 0.5 (until
 * session 36): the 100k first-fit cells take 0.4-0.5 s on a quiet host
 * and more on a busy one, where a first run past 0.5 s made the figure
 * that one run's instead of a median (the slowest sample decided it). */
#define SHORT_CPU_S 1.0
#define RUNS_SHORT 5

/* One run of c in a forked child: its message and peak RSS (bytes). 0, or
 * -1 when the child failed. */
static int run_once(const bench_case *c, result_msg *m, double *peak) {
  int fds[2];
  if (pipe(fds))
    return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    child(fds[1], c);
  }
  close(fds[1]);
  memset(m, 0, sizeof *m);
  ssize_t got = pid > 0 ? read(fds[0], m, sizeof *m) : -1;
  close(fds[0]);
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 ||
      got != (ssize_t)sizeof *m || !m->ok)
    return -1;
  *peak = (double)ru.ru_maxrss * 1024.0; /* KiB on Linux */
  return 0;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int run_case(const bench_case *c) {
  result_msg m;
  double peak = 0, cpu[RUNS_SHORT];
  int runs = 0;
  if (run_once(c, &m, &peak) == 0) {
    cpu[runs++] = m.cpu;
    while (m.cpu < SHORT_CPU_S && runs < RUNS_SHORT) {
      result_msg r;
      double pk;
      if (run_once(c, &r, &pk) != 0) {
        runs = 0;
        break;
      }
      cpu[runs++] = r.cpu;
    }
  }
  if (runs == 0) {
    printf("%-14s %-14s %-8s failed\n", c->label, c->policy,
           queue_name(c->queue));
    return -1;
  }
  qsort(cpu, (size_t)runs, sizeof *cpu, cmp_dbl);
  m.cpu = runs % 2 ? cpu[runs / 2] : (cpu[runs / 2 - 1] + cpu[runs / 2]) / 2;
  double eps = m.cpu > 0 ? (double)m.events / m.cpu : 0;
  /* The slowest and the fastest run (the same jobs each time): how far
   * the host's load moved this case's figure. */
  double lo = cpu[runs - 1] > 0 ? (double)m.events / cpu[runs - 1] : 0,
         hi = cpu[0] > 0 ? (double)m.events / cpu[0] : 0;
  char instr[32] = "-";
  if (m.instr >= 0 && m.events > 0)
    snprintf(instr, sizeof instr, "%.0f", m.instr / (double)m.events);
  printf("%-14s %-14s %-8s %10llu %11llu %8.3f %10.0f %8s %7.0f %7.0f %9.1f "
         "%4d %10.0f %10.0f\n",
         c->label, c->policy, queue_name(c->queue), m.jobs, m.events, m.cpu,
         eps, instr, peak / (double)m.jobs,
         (peak - m.rss_before) / (double)m.jobs, m.qt_mean, runs, lo, hi);
  return 0;
}

/* Comma-separated list: 1 if name is in it (NULL list: everything). */
static int listed(const char *list, const char *name) {
  if (!list)
    return 1;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0)
      return 1;
    if (!e)
      break;
    p = e + 1;
  }
  return 0;
}

/* Every built-in policy but compose-aware (composable pools only); on the
 * grid's shared A100 nodes without a speed model the MIG policies place as
 * best-fit and first-fit do, and the type-aware ones as best-fit (equal
 * speeds), through their own code. */
static const char *const policies[] = {
    "first-fit",     "best-fit",     "worst-fit",   "random",
    "dot-product",   "gpu-packing",  "fgd",         "gpu-clustering",
    "defrag",        "mig-first-fit", "mig-best-fit", "mig-aware",
    "fastest-fit",   "cheapest-work"};
static const sim_queue_kind queues[] = {SIM_QUEUE_FIFO, SIM_QUEUE_SKIP,
                                        SIM_QUEUE_BACKFILL,
                                        SIM_QUEUE_PRIORITY};

static int usage(void) {
  fprintf(stderr,
          "usage: bench_scale [--only grid,shapes,long,big] [--policy A,B] "
          "[--queue A,B] [--gpus 10000,100000] [--load 0.9,1.2] "
          "[--jobs-10k N] [--jobs-100k N] [--shapes-jobs N] [--long-jobs N] "
          "[--big N] [--big-policy A,B] [--big-queue A,B] "
          "[--big-speed A,B]\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *only = NULL, *pol = NULL, *que = NULL, *gpus = NULL,
             *loads = NULL, *big_pol = "first-fit,best-fit",
             *big_que = "skip,backfill", *big_speed = "none";
  size_t jobs10k = 50000, jobs100k = 400000, shapes_jobs = 5000,
         long_jobs = 1000000, big = 0;
  /* What each list option may name (bench_names). */
  static const char *const parts[] = {"grid", "shapes", "long", "big"},
                           *const gpu_sizes[] = {"10000", "100000"},
                           *const lds[] = {"0.9", "1.2"},
                           *const speeds[] = {"none", "catalog"};
  const size_t npol = sizeof policies / sizeof *policies,
               nq = sizeof queues / sizeof *queues;
  const char *qn[sizeof queues / sizeof *queues];
  for (size_t q = 0; q < nq; q++)
    qn[q] = queue_name(queues[q]);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v)
      return usage();
    i++;
    int bad = 0;
    if (strcmp(a, "--only") == 0)
      bad = bench_names("bench_scale", a, only = v, parts, 4);
    else if (strcmp(a, "--policy") == 0)
      bad = bench_names("bench_scale", a, pol = v, policies, npol);
    else if (strcmp(a, "--queue") == 0)
      bad = bench_names("bench_scale", a, que = v, qn, nq);
    else if (strcmp(a, "--gpus") == 0)
      bad = bench_names("bench_scale", a, gpus = v, gpu_sizes, 2);
    else if (strcmp(a, "--load") == 0)
      bad = bench_names("bench_scale", a, loads = v, lds, 2);
    else if (strcmp(a, "--jobs-10k") == 0)
      bad = bench_count("bench_scale", a, v, 1, BENCH_MAX_JOBS, &jobs10k);
    else if (strcmp(a, "--jobs-100k") == 0)
      bad = bench_count("bench_scale", a, v, 1, BENCH_MAX_JOBS, &jobs100k);
    else if (strcmp(a, "--shapes-jobs") == 0)
      bad = bench_count("bench_scale", a, v, 1, BENCH_MAX_JOBS, &shapes_jobs);
    else if (strcmp(a, "--long-jobs") == 0)
      bad = bench_count("bench_scale", a, v, 1, BENCH_MAX_JOBS, &long_jobs);
    else if (strcmp(a, "--big") == 0) /* 0: off */
      bad = bench_count("bench_scale", a, v, 0, BENCH_MAX_JOBS, &big);
    else if (strcmp(a, "--big-policy") == 0)
      bad = bench_names("bench_scale", a, big_pol = v, policies, npol);
    else if (strcmp(a, "--big-queue") == 0)
      bad = bench_names("bench_scale", a, big_que = v, qn, nq);
    else if (strcmp(a, "--big-speed") == 0)
      bad = bench_names("bench_scale", a, big_speed = v, speeds, 2);
    else
      return usage();
    if (bad)
      return 2;
  }
  printf("%-14s %-14s %-8s %10s %11s %8s %10s %8s %7s %7s %9s %4s %10s %10s\n",
         "case", "policy", "queue", "jobs", "events", "cpu_s", "events/s",
         "instr/ev", "B/job", "eng_B/j", "mean_qt_s", "runs", "slowest/s",
         "fastest/s");
  int failed = 0;
  if (listed(only, "grid")) {
    static const int sizes[] = {1250, 12500};
    static const double lv[] = {0.9, 1.2};
    for (int si = 0; si < 2; si++) {
      char g[16];
      snprintf(g, sizeof g, "%d", sizes[si] * 8);
      if (!listed(gpus, g))
        continue;
      for (int li = 0; li < 2; li++) {
        char l[16];
        snprintf(l, sizeof l, "%.1f", lv[li]);
        if (!listed(loads, l))
          continue;
        for (size_t p = 0; p < sizeof policies / sizeof *policies; p++) {
          if (!listed(pol, policies[p]))
            continue;
          for (size_t q = 0; q < sizeof queues / sizeof *queues; q++) {
            if (!listed(que, queue_name(queues[q])))
              continue;
            char label[32];
            snprintf(label, sizeof label, "%sk@%s", si ? "100" : "10", l);
            bench_case c = {label,  sizes[si],   lv[li],   si ? jobs100k : jobs10k,
                            W_MIX,  policies[p], queues[q], 0};
            failed |= run_case(&c) != 0;
          }
        }
      }
    }
  }
  if (listed(only, "shapes")) {
    bench_case c1 = {"shapes-32000", 1250,          1.2, shapes_jobs,
                     W_SHAPES,       "fgd",         SIM_QUEUE_SKIP, 0};
    bench_case c2 = {"shapes-1",     1250,          1.2, shapes_jobs,
                     W_ONESHAPE,     "fgd",         SIM_QUEUE_SKIP, 0};
    failed |= run_case(&c1) != 0;
    failed |= run_case(&c2) != 0;
  }
  if (listed(only, "long")) {
    bench_case c1 = {"long-queue", 1250,        1.2, long_jobs,
                     W_LONG,       "first-fit", SIM_QUEUE_SKIP, 0};
    bench_case c2 = c1, c3 = c1;
    c2.queue = SIM_QUEUE_FIFO;
    c3.queue = SIM_QUEUE_BACKFILL;
    failed |= run_case(&c1) != 0;
    failed |= run_case(&c2) != 0;
    failed |= run_case(&c3) != 0;
  }
  for (int sp = 0; listed(only, "big") && big > 0 && sp < 2; sp++) {
    if (!listed(big_speed, speeds[sp]))
      continue;
    for (size_t p = 0; p < sizeof policies / sizeof *policies; p++) {
      if (!listed(big_pol, policies[p]))
        continue;
      for (size_t q = 0; q < sizeof queues / sizeof *queues; q++) {
        if (!listed(big_que, queue_name(queues[q])))
          continue;
        bench_case c = {sp ? "big-speed@1.2" : "big-100k@1.2",
                        12500,
                        1.2,
                        big,
                        W_MIX,
                        policies[p],
                        queues[q],
                        sp};
        failed |= run_case(&c) != 0;
      }
    }
  }
  return failed ? 1 : 0;
}
