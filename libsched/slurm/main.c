/*
 * lsched-slurm-advisor: places Slurm's pending jobs with a libsched policy.
 *
 * Each cycle reads Slurm's nodes, partitions and jobs through libslurm,
 * mirrors them into a libsched cluster, asks the policy where each pending
 * job should go (in Slurm's priority order, allocating each answer into the
 * mirror so later jobs see it), and pins the job there with slurm_update_job
 * (required nodes). Running jobs are never touched. Decisions are printed as
 * JSON lines on stdout (README "lsched-slurm-advisor" lists the keys).
 *
 * The mirror (one libsched cluster and policy) lives as long as the process
 * and is brought up to date each cycle; the pins the advisor set are known
 * by its state file and its AdminComment marker (pins.c). Options come from
 * one table (conf.c) for the command line and --config files.
 *
 * Exit status: 0 success, 1 Slurm unreachable or an update failed, 2 bad
 * usage.
 */
#include "advisor.h"
#include "slurm_io.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <slurm/slurm_version.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "lsched-slurm-advisor"

static volatile sig_atomic_t stop_requested;

#if defined(__SANITIZE_ADDRESS__)
/* libslurm 22.05.8 leaks 61 bytes per running job inside slurm_load_jobs()
 * (memory unpacked for the opaque job_resources, which
 * slurm_free_job_info_msg() does not free; reproduced with a program that
 * only loads and frees the job list). LeakSanitizer reads this hook; the
 * suppression names only that call, so leaks of our own still count. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:slurm_load_jobs\n";
}
#endif

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static void usage(FILE *f) {
  fputs("usage: " PROG " [--config FILE] [--once | --interval SECONDS]\n"
        "       [--policy NAME] [--dry-run] [--dump FILE] [--partition NAME]\n"
        "       [--conf FILE] [--model SLURM_TYPE=MODEL]... [--param KEY=VALUE]...\n"
        "       [--state-dir DIR] [--retries N|forever] [--max-backoff S] [--quiet]\n"
        "       " PROG " --unpin-all [--dry-run] [--state-dir DIR] [--conf FILE]\n"
        "\n"
        "Places Slurm's pending jobs with a libsched placement policy and pins\n"
        "each to its node (slurm_update_job, required nodes). Running jobs are\n"
        "never changed. One JSON line per pending job on stdout.\n"
        "\n",
        f);
  for (const adv_option *o = adv_options; o->name; o++) {
    char head[40];
    snprintf(head, sizeof head, "--%s%s%s", o->name, o->arg ? " " : "",
             o->arg ? o->arg : "");
    fprintf(f, "  %-19s", head);
    for (const char *h = o->help; *h;) {
      const char *nl = strchr(h, '\n');
      int n = nl ? (int)(nl - h) : (int)strlen(h);
      fprintf(f, "%.*s\n", n, h);
      h += n;
      if (*h == '\n') {
        h++;
        fprintf(f, "  %-19s", "");
      }
    }
  }
  fputs("\nEvery option but --config, --unpin-all, --list-policies, --version\n"
        "and --help is also a configuration key (README: lsched-slurm-advisor).\n",
        f);
}

/* The policy exists? (Checked before Slurm is contacted.) */
static int check_policy(const char *name, int list) {
  lsched_registry *r;
  if (lsched_registry_create(&r, NULL) || lsched_registry_add_builtins(r)) {
    fprintf(stderr, PROG ": cannot create the policy registry\n");
    return 1;
  }
  int rc = 0;
  if (list) {
    for (size_t i = 0; i < lsched_registry_count(r); i++) {
      const lsched_policy_ops *o = lsched_registry_at(r, i);
      printf("%-16s %s\n", o->name, o->description ? o->description : "");
    }
  } else if (!lsched_registry_find(r, name)) {
    fprintf(stderr, PROG ": unknown policy '%s'; known:", name);
    for (size_t i = 0; i < lsched_registry_count(r); i++)
      fprintf(stderr, " %s", lsched_registry_at(r, i)->name);
    fputc('\n', stderr);
    rc = 2;
  }
  lsched_registry_destroy(r);
  return rc;
}

/* Sleeps up to s seconds, waking early on SIGINT/SIGTERM. */
static void nap(double s) {
  while (s > 0 && !stop_requested) {
    double step = s < 0.1 ? s : 0.1;
    struct timespec ts = {0, (long)(step * 1e9)};
    nanosleep(&ts, NULL);
    s -= step;
  }
}

typedef struct counts {
  int place, applied, nofit, skip, reject;
} counts;

/* One cycle. Returns 0, 1 (Slurm failed or an update failed) or 2 (bad
 * configuration, e.g. a policy parameter the policy refuses). */
static int cycle(const adv_opts *o, adv_mirror *m, adv_state *st, long n) {
  char err[1024];
  adv_snapshot s;
  if (adv_slurm_read(&s, &st->pins, err, sizeof err)) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  if (!o->dry_run)
    adv_pins_prune(&st->pins, &s);
  adv_plan pl;
  int rc = adv_plan_build(&pl, m, &s, &o->cfg, err, sizeof err);
  if (rc == 0)
    rc = adv_plan_decide(&pl, err, sizeof err);
  if (rc) {
    fprintf(stderr, PROG ": %s\n", err);
    adv_plan_free(&pl);
    adv_snapshot_free(&s);
    return rc == -2 ? 2 : 1;
  }
  int failures = adv_slurm_apply(&pl, st, o->dry_run, err, sizeof err);
  if (failures < 0) {
    fprintf(stderr, PROG ": %s\n", err);
    failures = 1;
  }
  adv_print_decisions(stdout, &pl, n, (long)time(NULL), o->dry_run);
  if (o->dump && adv_write_dump(&pl, o->dump, err, sizeof err)) {
    fprintf(stderr, PROG ": %s\n", err);
    failures++;
  }
  if (!o->quiet) {
    counts c = {0, 0, 0, 0, 0};
    for (int i = 0; i < pl.nd; i++) {
      switch (pl.d[i].kind) {
      case ADV_PLACE: c.place++; break;
      case ADV_NOFIT: c.nofit++; break;
      case ADV_SKIP: c.skip++; break;
      case ADV_REJECT: c.reject++; break;
      }
      c.applied += pl.d[i].applied;
    }
    fprintf(stderr,
            PROG ": cycle %ld: %d nodes, %d running, %d pending: %d placed "
                 "(%d %s), %d nofit, %d skipped, %d rejected; mirror +%ld "
                 "-%ld ~%ld nodes, %ld state changes",
            n, s.nnodes, s.running, s.njobs, c.place, c.applied,
            o->dry_run ? "already pinned" : "pinned", c.nofit, c.skip,
            c.reject, m->added, m->removed, m->updated, m->restated);
    if (m->takes_workload)
      fprintf(stderr, "; workload %llu types of %llu jobs",
              (unsigned long long)m->workload_types,
              (unsigned long long)m->workload_weight);
    fprintf(stderr, "; %d pins%s\n", st->pins.n,
            o->dry_run ? " [dry run]" : "");
  }
  adv_plan_free(&pl);
  adv_snapshot_free(&s);
  return failures ? 1 : 0;
}

/* The state directory exists (created when missing) and no other advisor
 * uses it: an exclusive flock on DIR/lock, held until exit. */
static int lock_state(const char *dir) {
  if (mkdir(dir, 0755) && errno != EEXIST) {
    fprintf(stderr, PROG ": --state-dir %s: cannot create: %s\n", dir,
            strerror(errno));
    return -1;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/lock", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, PROG ": %s: cannot open: %s\n", path, strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB)) {
    fprintf(stderr, PROG ": %s: another advisor uses this state directory\n",
            path);
    close(fd);
    return -1;
  }
  return fd; /* kept open: the lock lasts as long as the process */
}

static int unpin_all(const adv_opts *o, adv_state *st) {
  char err[1024];
  adv_snapshot s;
  if (adv_slurm_read(&s, &st->pins, err, sizeof err)) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  if (!o->dry_run)
    adv_pins_prune(&st->pins, &s);
  int n = 0;
  int failures = adv_slurm_unpin_all(&s, st, o->dry_run, o->quiet, &n, err,
                                     sizeof err);
  if (failures < 0)
    fprintf(stderr, PROG ": %s\n", err);
  printf("{\"unpinned\":%d,\"failed\":%d,\"dry_run\":%s}\n", n,
         failures < 0 ? 0 : failures, o->dry_run ? "true" : "false");
  adv_snapshot_free(&s);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  enum { OPT_FIRST = 256 };
  /* getopt_long's table from adv_options: val = OPT_FIRST + index. */
  struct option opts[64];
  int nopt = 0;
  for (const adv_option *o = adv_options; o->name && nopt < 63; o++, nopt++) {
    opts[nopt].name = o->name;
    opts[nopt].has_arg = o->has_arg ? required_argument : no_argument;
    opts[nopt].flag = NULL;
    opts[nopt].val = OPT_FIRST + nopt;
  }
  memset(&opts[nopt], 0, sizeof opts[nopt]);
  adv_opts o;
  adv_opts_init(&o);
  char why[256], err[1024];
  int c, rc = 0;
  /* Pass 1: --config, --help, --version, --list-policies and bad usage. */
  const char *config = NULL;
  int list = 0;
  opterr = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    const char *name = c >= OPT_FIRST ? adv_options[c - OPT_FIRST].name : "";
    if (c == 'h' || !strcmp(name, "help")) {
      usage(stdout);
      adv_opts_free(&o);
      return 0;
    }
    if (c < OPT_FIRST) {
      usage(stderr);
      adv_opts_free(&o);
      return 2;
    }
    if (!strcmp(name, "config"))
      config = optarg;
    else if (!strcmp(name, "list-policies"))
      list = 1;
    else if (!strcmp(name, "version")) {
      printf(PROG " (libsched %s, built against Slurm %d.%02d.%d)\n",
             lsched_version_string(), SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
             SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
             SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
      adv_opts_free(&o);
      return 0;
    }
  }
  if (optind < argc) {
    fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    adv_opts_free(&o);
    return 2;
  }
  if (list) {
    adv_opts_free(&o);
    return check_policy(NULL, 1);
  }
  if (config && adv_conf_read(&o, config, err, sizeof err)) {
    fprintf(stderr, PROG ": %s\n", err);
    adv_opts_free(&o);
    return 2;
  }
  /* Pass 2: the command line over the configuration file. */
  optind = 0; /* glibc: 0 restarts the scan from scratch */
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    const adv_option *opt = &adv_options[c - OPT_FIRST];
    if (!strcmp(opt->name, "config") || !strcmp(opt->name, "list-policies"))
      continue;
    if (adv_opts_set(&o, opt->name, opt->has_arg ? optarg : NULL, why,
                     sizeof why)) {
      fprintf(stderr, PROG ": --%s: %s\n", opt->name, why);
      adv_opts_free(&o);
      return 2;
    }
  }
  rc = check_policy(o.cfg.policy, 0);
  if (rc) {
    adv_opts_free(&o);
    return rc;
  }

  /* slurm_init() ends the process on an unreadable configuration with a
   * terse "fatal:"; say what is missing first. */
  if (o.slurm_conf && setenv("SLURM_CONF", o.slurm_conf, 1)) {
    perror(PROG ": setenv");
    adv_opts_free(&o);
    return 1;
  }
  const char *path = getenv("SLURM_CONF");
  if (!path || !*path)
    path = "/etc/slurm/slurm.conf";
  if (access(path, R_OK) != 0) {
    fprintf(stderr, PROG ": cannot read the Slurm configuration %s (%s); "
                    "set SLURM_CONF or use --conf\n", path, strerror(errno));
    adv_opts_free(&o);
    return 1;
  }

  /* The pins this advisor set. A dry run reads them (to tell its own pins
   * from others') but neither locks nor writes the state directory. */
  adv_state st;
  char pins_path[4096];
  snprintf(pins_path, sizeof pins_path, "%s/pins", o.state_dir);
  int lockfd = -1;
  if (!o.dry_run && (lockfd = lock_state(o.state_dir)) < 0) {
    adv_opts_free(&o);
    return 1;
  }
  rc = adv_pins_load(&st.pins, pins_path, err, sizeof err);
  if (rc) {
    fprintf(stderr, PROG ": %s\n", err);
    if (lockfd >= 0)
      close(lockfd);
    adv_opts_free(&o);
    return rc == -2 ? 2 : 1;
  }
  st.path = o.dry_run ? NULL : pins_path;

  slurm_init(NULL);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  adv_mirror m;
  memset(&m, 0, sizeof m);
  if (o.unpin_all) {
    rc = unpin_all(&o, &st);
  } else if ((rc = adv_mirror_init(&m, &o.cfg, err, sizeof err)) != 0) {
    fprintf(stderr, PROG ": %s\n", err);
    rc = rc == -2 ? 2 : 1;
  } else {
    /* Failed cycles (slurmctld restarting, unreachable, an update refused)
     * are retried after a wait that doubles from --interval up to
     * --max-backoff; the mirror is kept meanwhile. */
    int failed_in_row = 0;
    for (long n = 1;; n++) {
      rc = cycle(&o, &m, &st, n);
      if (rc == 2 || o.once)
        break;
      double wait = o.interval;
      if (rc) {
        failed_in_row++;
        if (o.retries >= 0 && failed_in_row > o.retries) {
          fprintf(stderr, PROG ": giving up after %d failed cycles in a row\n",
                  failed_in_row);
          rc = 1;
          break;
        }
        wait = o.interval > 0.1 ? o.interval : 0.1;
        for (int k = 1; k < failed_in_row && wait < o.max_backoff; k++)
          wait *= 2;
        if (wait > o.max_backoff)
          wait = o.max_backoff;
        fprintf(stderr, PROG ": cycle %ld failed (%d in a row); retrying in "
                        "%.1f s\n", n, failed_in_row, wait);
      } else {
        if (failed_in_row)
          fprintf(stderr, PROG ": cycle %ld: Slurm answers again after %d "
                          "failed cycles\n", n, failed_in_row);
        failed_in_row = 0;
      }
      nap(wait);
      if (stop_requested) {
        rc = 0;
        break;
      }
    }
  }
  adv_mirror_free(&m);
  slurm_fini();
  adv_pins_free(&st.pins);
  if (lockfd >= 0)
    close(lockfd);
  adv_opts_free(&o);
  return rc;
}
