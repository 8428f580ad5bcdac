/*
 * Scale benchmark (issue #8): peak memory of a streamed replay against the
 * trace length.
 *
 *   bench_stream [--jobs N[,N...]] [--dir DIR] [--keep]
 *
 * For each N (default 1000000,3000000,10000000) it writes a synthetic
 * trace of N jobs (the built-in default mix, `schedsim generate`'s
 * generator, seed 1) to DIR (default $TMPDIR or /tmp) and replays it from
 * the file as `schedsim run` does (trace_stream + sim_run_stream, first-fit,
 * fifo, jobs.csv rows formatted to /dev/null) on 32 nodes x 8 A100-80GB
 * shared (256 GPUs: the mix's arrival rate loads 192 GPUs to ~90%, so here
 * the queue stays short and the running set is what remains). Each replay
 * runs in a forked process; its peak RSS (ru_maxrss) is printed with the
 * largest number of jobs that were running or queued at once, so a reader
 * sees peak memory follow the jobs in flight and not N. The trace files
 * are removed afterwards unless --keep.
 */
#define _DEFAULT_SOURCE /* wait4 */
#include "bench_args.h"
#include "catalog.h"
#include "clock.h"
#include "cluster_spec.h"
#include "engine.h"
#include "output.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct msg {
  int ok;
  double wall;
  unsigned long long jobs, events, max_inflight;
} msg;

typedef struct sink {
  FILE *devnull;
  const sim_cluster *sc;
} sink;

static int put_row(void *user, const sim_job_out *o) {
  sink *k = user;
  write_job_row(k->devnull, k->sc, o);
  return 0;
}

/* Most jobs running or queued at once, sampled at every progress call
 * (every 65,536 events) and at the end. */
static unsigned long long max_inflight;
static void progress(int64_t now_us, uint64_t events, size_t done,
                     size_t total, void *user) {
  (void)now_us;
  (void)total;
  (void)user;
  /* events = arrivals + completions; arrivals - completions in flight. */
  unsigned long long arrived = events - done;
  unsigned long long inflight = arrived > done ? arrived - done : 0;
  if (inflight > max_inflight)
    max_inflight = inflight;
}

static int write_trace(const char *path, size_t jobs, char *err,
                       size_t errlen) {
  synth_params p;
  synth_default_params(&p);
  p.jobs = jobs;
  p.seed = 1;
  trace_error te;
  synth_gen *g;
  trace_writer *w;
  if (synth_gen_open(&g, &p, &te)) {
    snprintf(err, errlen, "%s", te.msg);
    return -1;
  }
  if (trace_writer_open(&w, path, &te)) {
    synth_gen_close(g);
    snprintf(err, errlen, "%s", te.msg);
    return -1;
  }
  job_record j;
  const char *name;
  int r;
  while ((r = synth_gen_next(g, &j, &name, &te)) == 1)
    if (trace_writer_put(w, &j, name, NULL, &te)) {
      r = -1;
      break;
    }
  synth_gen_close(g);
  if (r < 0) {
    trace_writer_abort(w);
    snprintf(err, errlen, "%s", te.msg);
    return -1;
  }
  if (trace_writer_commit(w, &te)) {
    snprintf(err, errlen, "%s", te.msg);
    return -1;
  }
  return 0;
}

/* In the child: replays path streamed, reports through fd. */
static void child(int fd, const char *path) {
  msg m;
  memset(&m, 0, sizeof m);
  char err[1024] = "";
  gpu_catalog cat;
  sim_cluster sc;
  trace_stream *ts = NULL;
  if (catalog_load_default(&cat, err, sizeof err))
    goto fail;
  static const char json[] =
      "{\"name\": \"bench-stream\", \"node_groups\": [{\"name\": \"a100\", "
      "\"count\": 32, \"gpu_model\": \"A100-SXM4-80GB\", \"gpus_per_node\": "
      "8, \"cpu_milli\": 256000, \"memory_mib\": 2097152, \"gpu_mode\": "
      "\"shared\"}]}";
  if (sim_cluster_from_json(&sc, json, "bench", &cat, 0, err, sizeof err))
    goto fail;
  trace_error te;
  if (trace_stream_open(&ts, path, NULL, &te)) {
    snprintf(err, sizeof err, "%s", te.msg);
    goto fail;
  }
  sink k = {fopen("/dev/null", "w"), &sc};
  if (!k.devnull) {
    snprintf(err, sizeof err, "cannot open /dev/null");
    goto fail;
  }
  sim_options o;
  memset(&o, 0, sizeof o);
  o.policy = "first-fit";
  o.queue = SIM_QUEUE_FIFO;
  o.seed = 1;
  o.unknown_duration_us = -1;
  o.on_job = put_row;
  o.on_job_user = &k;
  o.progress = progress;
  sim_result r;
  double t0 = sim_now_s();
  if (sim_run_stream(&sc, &cat, ts, &o, &r, err, sizeof err))
    goto fail;
  m.wall = sim_now_s() - t0;
  m.jobs = r.jobs;
  m.events = r.events;
  m.max_inflight = max_inflight;
  m.ok = 1;
  sim_result_free(&r);
  fclose(k.devnull);
fail:
  if (!m.ok)
    fprintf(stderr, "bench_stream: %s\n", err);
  trace_stream_close(ts);
  if (write(fd, &m, sizeof m) != (ssize_t)sizeof m)
    _exit(3);
  _exit(m.ok ? 0 : 1);
}

int main(int argc, char **argv) {
  const char *list = "1000000,3000000,10000000";
  const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  int keep = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
      list = argv[++i];
    else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
      dir = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0)
      keep = 1;
    else {
      fprintf(stderr,
              "usage: bench_stream [--jobs N[,N...]] [--dir DIR] [--keep]\n");
      return 2;
    }
  }
  /* Every count of the list read (and checked) before any is run. */
  size_t ncounts = 1, *counts;
  for (const char *p = list; (p = strchr(p, ',')); p++)
    ncounts++;
  if (!(counts = malloc(ncounts * sizeof *counts))) {
    fprintf(stderr, "bench_stream: out of memory\n");
    return 1;
  }
  const char *p = list;
  for (size_t k = 0; k < ncounts; k++) {
    const char *e = strchr(p, ',');
    char item[24]; /* longer than any count in range: refused as such */
    size_t len = e ? (size_t)(e - p) : strlen(p);
    snprintf(item, sizeof item, "%.*s%s", (int)(len < 20 ? len : 20), p,
             len > 20 ? "..." : "");
    if (bench_count("bench_stream", "--jobs", item, 1, BENCH_MAX_JOBS,
                    &counts[k])) {
      free(counts);
      return 2;
    }
    if (e)
      p = e + 1;
  }
  printf("%12s %10s %10s %12s %10s %14s %12s\n", "jobs", "file_MiB",
         "replay_s", "events/s", "peak_MiB", "max_in_flight", "bytes/job");
  int fails = 0;
  for (size_t k = 0; k < ncounts; k++) {
    size_t n = counts[k];
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/bench-stream-%zu-%d.csv", dir, n,
             (int)getpid());
    if (write_trace(path, n, err, sizeof err)) {
      fprintf(stderr, "bench_stream: %s\n", err);
      fails++;
      continue;
    }
    struct stat st;
    if (stat(path, &st))
      st.st_size = 0;
    int fds[2];
    if (pipe(fds)) {
      fails++;
      break;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      child(fds[1], path);
    }
    close(fds[1]);
    msg m;
    memset(&m, 0, sizeof m);
    ssize_t got = pid > 0 ? read(fds[0], &m, sizeof m) : -1;
    close(fds[0]);
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 ||
        got != (ssize_t)sizeof m || !m.ok) {
      printf("%12zu FAILED\n", n);
      fails++;
    } else {
      double rss = (double)ru.ru_maxrss * 1024.0;
      printf("%12llu %10.1f %10.2f %12.0f %10.1f %14llu %12.1f\n", m.jobs,
             (double)st.st_size / 1048576.0, m.wall,
             (double)m.events / m.wall, rss / 1048576.0, m.max_inflight,
             rss / (double)m.jobs);
    }
    if (!keep)
      unlink(path);
  }
  free(counts);
  printf("target (issue #8): peak memory follows the jobs in flight, not the "
         "trace length\n");
  return fails ? 1 : 0;
}
