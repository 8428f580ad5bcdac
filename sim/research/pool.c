/*
 * A pool of forked workers for compare, sweep and fill (see research.h).
 *
 * Why processes rather than threads: a run is an ordinary single-threaded
 * replay whose inputs (trace, cluster) the parent may already hold; fork
 * shares them copy-on-write, every run owns its cluster state without
 * locking, cJSON's and GSL's process-global hooks are never shared between
 * runs, and a crashing run cannot take the others down. Progress counters
 * live in one anonymous shared mapping, one slot per task, written by the
 * worker with relaxed atomics and read by the parent for the aggregate
 * line.
 */
/* MAP_ANONYMOUS is not POSIX 2008; glibc shows it with _DEFAULT_SOURCE. */
#define _DEFAULT_SOURCE
#include "research.h"
#include "clock.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int pool_default_workers(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n >= 1 && n < 4096 ? (int)n : 1;
}

void pool_progress_cb(int64_t now_us, uint64_t events, size_t done,
                      size_t total, void *user) {
  pool_slot *s = user;
  atomic_store_explicit(&s->now_us, now_us, memory_order_relaxed);
  atomic_store_explicit(&s->events, events, memory_order_relaxed);
  atomic_store_explicit(&s->done, (uint64_t)done, memory_order_relaxed);
  atomic_store_explicit(&s->total, (uint64_t)total, memory_order_relaxed);
}

enum { T_PENDING = 0, T_RUNNING = 1, T_DONE = 2 };

typedef struct view {
  int show;
  const char *what;
  double t0, last;
  int drawn;
} view;

/* The aggregate line: runs done and running, events and jobs finished in
 * the running ones, and an ETA from the fraction of work done (a finished
 * run counts 1, a running one its share of jobs done). */
static void draw(view *v, size_t n, const pool_slot *slots, const int *state,
                 size_t finished, size_t running) {
  double t = sim_now_s();
  if (!v->show || t - v->t0 < 1.0 || t - v->last < 0.2)
    return;
  v->last = t;
  double frac = (double)finished;
  uint64_t events = 0, jobs = 0;
  for (size_t i = 0; i < n; i++) {
    if (state[i] != T_RUNNING)
      continue;
    uint64_t d = atomic_load_explicit(&slots[i].done, memory_order_relaxed);
    uint64_t tot = atomic_load_explicit(&slots[i].total, memory_order_relaxed);
    events += atomic_load_explicit(&slots[i].events, memory_order_relaxed);
    jobs += d;
    if (tot > 0)
      frac += (double)d / (double)tot;
  }
  frac /= (double)n;
  double el = t - v->t0;
  char eta[32] = "?";
  if (frac > 0)
    snprintf(eta, sizeof eta, "%.0f s", el * (1 - frac) / frac);
  fprintf(stderr,
          "\r%s: runs %zu/%zu done, %zu running (events %llu, jobs done "
          "%llu in running runs)  elapsed %.0f s  ETA %s   ",
          v->what, finished, n, running, (unsigned long long)events,
          (unsigned long long)jobs, el, eta);
  fflush(stderr);
  v->drawn = 1;
}

int pool_run(size_t n, int workers, pool_task_fn fn, void *user, int *status,
             int show, const char *what) {
  return pool_run_results(n, workers, fn, user, status, show, what, NULL, 0);
}

int pool_run_results(size_t n, int workers, pool_task_fn fn, void *user,
                     int *status, int show, const char *what, void *results,
                     size_t result_size) {
  if (n == 0)
    return 0;
  if (workers < 1)
    workers = 1;
  /* One shared mapping: the progress slots, then the results (each
   * rounded up to 16 bytes so that every result is aligned for any
   * member). */
  size_t rsz = results ? (result_size + 15) / 16 * 16 : 0;
  size_t slots_len = (n * sizeof(pool_slot) + 15) / 16 * 16;
  size_t map_len = slots_len + n * rsz;
  pool_slot *slots = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pid_t *pids = calloc(n, sizeof *pids);
  int *state = calloc(n, sizeof *state);
  if (slots == MAP_FAILED || !pids || !state) {
    fprintf(stderr, "schedsim %s: out of memory\n", what);
    if (slots != MAP_FAILED)
      munmap(slots, map_len);
    free(pids);
    free(state);
    for (size_t i = 0; i < n; i++)
      status[i] = 1;
    return -1;
  }
  memset(slots, 0, map_len);
  for (size_t i = 0; i < n && results; i++)
    slots[i].result = (char *)slots + slots_len + i * rsz;
  for (size_t i = 0; i < n; i++)
    status[i] = 1; /* until the task's worker reports */
  view v = {show && isatty(2), what, sim_now_s(), 0, 0};
  size_t next = 0, running = 0, finished = 0;
  int fork_failed = 0;
  /* Buffered output would otherwise be written again by every child. */
  fflush(stdout);
  fflush(stderr);
  while (finished < n) {
    while (!fork_failed && running < (size_t)workers && next < n) {
      pid_t pid = fork();
      if (pid == 0) {
        int st = fn(next, &slots[next], user);
        fflush(stdout);
        fflush(stderr);
        _exit(st);
      }
      if (pid < 0) {
        fprintf(stderr, "schedsim %s: cannot start a worker: %s\n", what,
                strerror(errno));
        fork_failed = 1;
        break;
      }
      pids[next] = pid;
      state[next] = T_RUNNING;
      next++;
      running++;
    }
    if (running == 0)
      break; /* only after a failed fork: the rest keep status 1 */
    int wst;
    pid_t p = waitpid(-1, &wst, v.show ? WNOHANG : 0);
    if (p == 0) {
      draw(&v, n, slots, state, finished, running);
      struct timespec ts = {0, 50 * 1000 * 1000};
      nanosleep(&ts, NULL);
      continue;
    }
    if (p < 0) {
      if (errno == EINTR)
        continue;
      fprintf(stderr, "schedsim %s: waitpid: %s\n", what, strerror(errno));
      break;
    }
    size_t i = 0;
    while (i < n && !(state[i] == T_RUNNING && pids[i] == p))
      i++;
    if (i == n)
      continue; /* not one of ours */
    state[i] = T_DONE;
    running--;
    finished++;
    if (WIFEXITED(wst)) {
      status[i] = WEXITSTATUS(wst);
    } else {
      int sig = WIFSIGNALED(wst) ? WTERMSIG(wst) : 0;
      status[i] = 128 + sig;
      if (v.drawn)
        fputc('\n', stderr), v.drawn = 0;
      fprintf(stderr, "schedsim %s: run %zu was killed by signal %d (%s)\n",
              what, i + 1, sig, strsignal(sig));
    }
  }
  if (v.drawn)
    fputc('\n', stderr);
  for (size_t i = 0; i < n && results; i++)
    memcpy((char *)results + i * result_size, slots[i].result, result_size);
  munmap(slots, map_len);
  free(pids);
  free(state);
  return fork_failed && finished < n ? -1 : 0;
}
