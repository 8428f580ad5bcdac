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
 * Exit status: 0 success, 1 Slurm unreachable or an update failed, 2 bad
 * usage.
 */
#include "advisor.h"
#include "slurm_io.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <slurm/slurm_version.h>
#include <stdlib.h>
#include <string.h>
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
  fputs("usage: " PROG " [--once | --interval SECONDS] [--policy NAME]\n"
        "       [--dry-run] [--dump FILE] [--partition NAME] [--conf FILE]\n"
        "       [--model SLURM_TYPE=MODEL]... [--param KEY=VALUE]...\n"
        "       [--retries N] [--quiet]\n"
        "\n"
        "Places Slurm's pending jobs with a libsched placement policy and pins\n"
        "each to its node (slurm_update_job, required nodes). Running jobs are\n"
        "never changed. One JSON line per pending job on stdout.\n"
        "\n"
        "  --once             one cycle, then exit\n"
        "  --interval S       seconds between cycles (default 10)\n"
        "  --policy NAME      libsched policy (default best-fit; --list-policies)\n"
        "  --dry-run          decide and print, change nothing in Slurm\n"
        "  --dump FILE        write the mirrored state and the decisions of\n"
        "                     the last cycle (input of lsched-slurm-replay)\n"
        "  --partition NAME   only jobs submitted to this partition\n"
        "  --conf FILE        Slurm configuration (default: $SLURM_CONF, then\n"
        "                     /etc/slurm/slurm.conf)\n"
        "  --model T=M        name Slurm GPU type T as libsched model M\n"
        "                     (untyped GPUs are type 'gpu')\n"
        "  --param K=V        policy parameter (lsched_policy_set_param)\n"
        "  --retries N        loop mode: exit after N+1 failed cycles in a\n"
        "                     row (default 3)\n"
        "  --quiet            no per-cycle summary on stderr\n"
        "  --list-policies    print the policies and exit\n"
        "  --version          print the versions and exit\n",
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
static int cycle(const adv_config *cfg, long n, int dry_run, const char *dump,
                 int quiet) {
  char err[1024];
  adv_snapshot s;
  if (adv_slurm_read(&s, err, sizeof err)) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  adv_plan pl;
  int rc = adv_plan_build(&pl, &s, cfg, err, sizeof err);
  if (rc == 0)
    rc = adv_plan_decide(&pl, err, sizeof err);
  if (rc) {
    fprintf(stderr, PROG ": %s\n", err);
    adv_plan_free(&pl);
    adv_snapshot_free(&s);
    return rc == -2 ? 2 : 1;
  }
  int failures = adv_slurm_apply(&pl, dry_run);
  adv_print_decisions(stdout, &pl, n, (long)time(NULL), dry_run);
  if (dump && adv_write_dump(&pl, dump, err, sizeof err)) {
    fprintf(stderr, PROG ": %s\n", err);
    failures++;
  }
  if (!quiet) {
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
                 "(%d %s), %d nofit, %d skipped, %d rejected%s\n",
            n, s.nnodes, s.running, s.njobs, c.place, c.applied,
            dry_run ? "already pinned" : "pinned", c.nofit, c.skip, c.reject,
            dry_run ? " [dry run]" : "");
  }
  adv_plan_free(&pl);
  adv_snapshot_free(&s);
  return failures ? 1 : 0;
}

static int add_model(adv_config *cfg, const char *arg) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg || !eq[1])
    return -1;
  adv_model_map *m = realloc(cfg->models, (size_t)(cfg->nmodels + 1) * sizeof *m);
  if (!m)
    return -1;
  cfg->models = m;
  m[cfg->nmodels].slurm_type = strndup(arg, (size_t)(eq - arg));
  m[cfg->nmodels].model = strdup(eq + 1);
  if (!m[cfg->nmodels].slurm_type || !m[cfg->nmodels].model)
    return -1;
  cfg->nmodels++;
  return 0;
}

int main(int argc, char **argv) {
  enum { OPT_LIST = 256, OPT_VERSION };
  static const struct option opts[] = {
      {"once", no_argument, NULL, '1'},
      {"interval", required_argument, NULL, 'i'},
      {"policy", required_argument, NULL, 'p'},
      {"dry-run", no_argument, NULL, 'n'},
      {"dump", required_argument, NULL, 'd'},
      {"partition", required_argument, NULL, 'P'},
      {"conf", required_argument, NULL, 'c'},
      {"model", required_argument, NULL, 'm'},
      {"param", required_argument, NULL, 'k'},
      {"retries", required_argument, NULL, 'r'},
      {"quiet", no_argument, NULL, 'q'},
      {"list-policies", no_argument, NULL, OPT_LIST},
      {"version", no_argument, NULL, OPT_VERSION},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  adv_config cfg = {"best-fit", NULL, 0, NULL, 0, NULL};
  int once = 0, dry_run = 0, quiet = 0, retries = 3, c;
  double interval = 10;
  const char *dump = NULL, *conf = NULL;
  char *end;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case '1': once = 1; break;
    case 'i':
      errno = 0;
      interval = strtod(optarg, &end);
      if (errno || *end || end == optarg || !isfinite(interval) ||
          interval < 0 || interval > 86400) {
        fprintf(stderr, PROG ": --interval: want seconds in 0..86400, got "
                        "'%s'\n", optarg);
        return 2;
      }
      break;
    case 'p': cfg.policy = optarg; break;
    case 'n': dry_run = 1; break;
    case 'd': dump = optarg; break;
    case 'P': cfg.partition = optarg; break;
    case 'c': conf = optarg; break;
    case 'm':
      if (add_model(&cfg, optarg)) {
        fprintf(stderr, PROG ": --model: want SLURM_TYPE=MODEL, got '%s'\n",
                optarg);
        return 2;
      }
      break;
    case 'k': {
      if (!strchr(optarg, '=')) {
        fprintf(stderr, PROG ": --param: want KEY=VALUE, got '%s'\n", optarg);
        return 2;
      }
      char **p = realloc(cfg.params, (size_t)(cfg.nparams + 1) * sizeof *p);
      if (!p)
        return 1;
      cfg.params = p;
      cfg.params[cfg.nparams++] = optarg;
      break;
    }
    case 'r':
      errno = 0;
      retries = (int)strtol(optarg, &end, 10);
      if (errno || *end || end == optarg || retries < 0) {
        fprintf(stderr, PROG ": --retries: want a count, got '%s'\n", optarg);
        return 2;
      }
      break;
    case 'q': quiet = 1; break;
    case OPT_LIST: return check_policy(NULL, 1);
    case OPT_VERSION:
      printf(PROG " (libsched %s, built against Slurm %d.%02d.%d)\n",
             lsched_version_string(), SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
             SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
             SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
      return 0;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 2;
  }
  int rc = check_policy(cfg.policy, 0);
  if (rc)
    return rc;

  /* slurm_init() ends the process on an unreadable configuration with a
   * terse "fatal:"; say what is missing first. */
  if (conf && setenv("SLURM_CONF", conf, 1)) {
    perror(PROG ": setenv");
    return 1;
  }
  const char *path = getenv("SLURM_CONF");
  if (!path || !*path)
    path = "/etc/slurm/slurm.conf";
  if (access(path, R_OK) != 0) {
    fprintf(stderr, PROG ": cannot read the Slurm configuration %s (%s); "
                    "set SLURM_CONF or use --conf\n", path, strerror(errno));
    return 1;
  }
  slurm_init(NULL);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  int failed_in_row = 0;
  for (long n = 1;; n++) {
    rc = cycle(&cfg, n, dry_run, dump, quiet);
    if (rc == 2 || once)
      break;
    failed_in_row = rc ? failed_in_row + 1 : 0;
    if (failed_in_row > retries) {
      fprintf(stderr, PROG ": giving up after %d failed cycles in a row\n",
              failed_in_row);
      rc = 1;
      break;
    }
    nap(interval);
    if (stop_requested) {
      rc = 0;
      break;
    }
  }
  slurm_fini();
  for (int i = 0; i < cfg.nmodels; i++) {
    free(cfg.models[i].slurm_type);
    free(cfg.models[i].model);
  }
  free(cfg.models);
  free(cfg.params);
  return rc;
}
