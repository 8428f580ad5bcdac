/* The option table, its parser and its help generator (see options.h). */
#include "options.h"
#include "cli.h"
#include "estimate_model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- table */

/* The value-type columns of options.def, as designated initializers. */
#define FLAG(f) .kind = K_FLAG, .off = offsetof(run_config, f)
#define UINT(f, l, h, e)                                                       \
  .kind = K_UINT, .off = offsetof(run_config, f), .lo = (double)(l),           \
  .hi = (double)(h), .expect = e
#define NUM(f, l, h, e)                                                        \
  .kind = K_NUM, .off = offsetof(run_config, f), .lo = l, .hi = h, .expect = e
#define SECS(f)                                                                \
  .kind = K_SECS, .off = offsetof(run_config, f), .expect = "seconds >= 0 and <= 9.2e12"
#define SECS_US(f)                                                             \
  .kind = K_SECS_US, .off = offsetof(run_config, f), .expect = "seconds >= 0 and <= 9.2e12"
#define STR(f) .kind = K_STR, .off = offsetof(run_config, f)
#define ENUM(f, p, e)                                                          \
  .kind = K_ENUM, .off = offsetof(run_config, f), .parse = p, .expect = e
#define LIST(f, n, c, chk, e)                                                  \
  .kind = K_LIST, .off = offsetof(run_config, f),                              \
  .count_off = offsetof(run_config, n), .cap = c, .check = chk, .expect = e
#define HELP .kind = K_HELP, .off = offsetof(run_config, help)

static const cli_option table[] = {
#define OPT(id_, name_, value_, cmds_, lcmds_, flags_, mkey_, tag_, meta_,     \
            help_)                                                             \
  {.id = OPT_##id_,                                                            \
   .name = name_,                                                              \
   value_,                                                                     \
   .cmds = cmds_,                                                              \
   .list_cmds = lcmds_,                                                        \
   .flags = flags_,                                                            \
   .mkey = mkey_,                                                              \
   .idtag = tag_,                                                              \
   .metavar = meta_,                                                           \
   .help = help_},
#include "options.def"
#undef OPT
};

const cli_option *cli_options(size_t *n) {
  *n = sizeof table / sizeof table[0];
  return table;
}

const cli_option *cli_option_by_mkey(const char *key) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (table[i].mkey && strcmp(table[i].mkey, key) == 0)
      return &table[i];
  return NULL;
}

/* Per command: its name, synopsis and what it does (the options follow,
 * generated from the table). */
static const struct command_doc {
  unsigned cmd;
  const char *name, *text;
} docs[] = {
    {C_RUN, "run",
     "usage: schedsim run --cluster FILE --trace FILE --policy NAME "
     "[OPTIONS]\n"
     "\n"
     "Replays TRACE on CLUSTER: jobs arrive at their submit time, wait in\n"
     "the queue, run for their duration where POLICY places them. With --out\n"
     "DIR it writes DIR/summary.json, jobs.csv and timeline.csv.\n"},
    {C_COMPARE, "compare",
     "usage: schedsim compare [--trace FILE] [--cluster FILE]...\n"
     "                        [--policy NAME[,NAME...]]... "
     "[--queue NAME[,NAME...]]...\n"
     "                        [--out DIR] [--workers N] [OPTIONS]\n"
     "\n"
     "Replays one trace with every combination of cluster x queue x policy,\n"
     "in parallel, and prints one table and the answer (the best run per\n"
     "metric and its margin over first-fit). Each run writes DIR/<run>/\n"
     "(summary.json, jobs.csv, timeline.csv, as 'schedsim run' with the same\n"
     "options); the table goes to DIR/compare.csv, the plots (bars, queue-time\n"
     "CDF, hourly utilization, cost; one panel per cluster; PNG and SVG) to\n"
     "DIR/plots/, and all of it on one page to DIR/report.html.\n"
     "The trace and the cluster default to builtin:default (also\n"
     "builtin:exclusive, builtin:mig-static, builtin:mig-dynamic), the\n"
     "policies to those that apply to each cluster, the output directory to\n"
     "out/compare. Every option that changes a run applies to every run.\n"},
    {C_RIGHTSIZE, "rightsize",
     "usage: schedsim rightsize [--trace FILE] [--cluster FILE]...\n"
     "                          [--policy NAME] [--max-queue-p95 S] "
     "[--out DIR] [OPTIONS]\n"
     "\n"
     "The right-sizing answer: replays one trace on every cluster (in\n"
     "parallel, one policy, default best-fit; the clusters default to\n"
     "builtin:default, builtin:exclusive, builtin:mig-static and\n"
     "builtin:mig-dynamic) and prints per cluster the cost per unit of work,\n"
     "work per dollar, JCT, queue time and energy per unit of work, then the\n"
     "cluster with the lowest cost per work hour whose queue-time p95 is\n"
     "within --max-queue-p95. Writes DIR/rightsize.csv (one row per\n"
     "cluster), DIR/rightsize_by_class.csv (per cluster, job class, GPU\n"
     "model and share), DIR/<cluster>/ (as 'schedsim run --out') and\n"
     "DIR/plots/rightsize.{png,svg}; DIR defaults to out/rightsize.\n"},
    {C_SWEEP, "sweep",
     "usage: schedsim sweep MANIFEST.json [--out DIR] [--workers N] "
     "[--dry-run] [--quiet]\n"
     "       schedsim sweep MANIFEST.json [--out DIR] --emit-slurm SDIR "
     "[--slurm-max-running K]\n"
     "\n"
     "Runs every combination of the manifest's traces, clusters, queues,\n"
     "policies, seeds and parameters in parallel, each into\n"
     "DIR/runs/<run-id>/ (as 'schedsim run --out'), and merges them into\n"
     "DIR/sweep.csv, one row per run. Finished runs are skipped, so an\n"
     "interrupted sweep resumes where it stopped. The output directory\n"
     "defaults to out/sweep; DIR/report.html shows the answer and the table.\n"
     "The manifest schema is in sim/README.md ('schedsim sweep'); its\n"
     "\"parameters\" keys are the options listed by 'schedsim options' with\n"
     "a manifest key.\n"},
    {C_FILL, "fill",
     "usage: schedsim fill --cluster FILE --trace FILE --policy NAME\n"
     "                     --seeds 42-51 [--tune 1.3] [--out DIR]\n"
     "                     [--workers N] [OPTIONS]\n"
     "\n"
     "Fill mode, the FGD paper's methodology: per seed the pods of TRACE are\n"
     "shuffled, extended (or cut) to TUNE x the cluster's GPU capacity, and\n"
     "placed once each (or failed) in that order by POLICY, with no\n"
     "departures; nodes are visited in a seed-fixed random order. Prints the\n"
     "median over seeds of the unallocated GPU % at 100% and 130% arrived.\n"
     "With --out DIR it writes DIR/fill.csv and DIR/summary.json.\n"},
    {C_DEMO, "demo",
     "usage: schedsim demo [--out DIR] [--seed N] [--queue NAME] [OPTIONS]\n"
     "\n"
     "Compares the policies on the built-in default workload and nodes\n"
     "(16 x 8 A100-SXM4-80GB + 8 x 8 H100-SXM5-80GB) with GPUs shared by\n"
     "milli, whole, static MIG and dynamic MIG (builtin:default,\n"
     "builtin:exclusive, builtin:mig-static, builtin:mig-dynamic), each mode\n"
     "with the policies that apply to it, and prints the answer under the\n"
     "table. Outputs go to DIR (default out/demo):\n"
     "DIR/<mode>-<policy>/{summary.json,jobs.csv,timeline.csv} and\n"
     "DIR/comparison.csv.\n"},
    {C_GENERATE, "generate",
     "usage: schedsim generate --out FILE [--jobs N] [--seed N] "
     "[--mix FILE]\n"
     "\n"
     "Writes the synthetic default workload (Poisson arrivals, lognormal\n"
     "durations, a mix of whole- and fractional-GPU shapes; see\n"
     "traces/synth.c) as an Alibaba pod list.\n"},
    {C_POLICIES, "policies",
     "usage: schedsim policies\n\nLists the placement policies.\n"},
    {C_MODELS, "models",
     "usage: schedsim models\n\nLists the built-in GPU catalog.\n"},
};

static const struct command_doc *doc_of(unsigned cmd) {
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++)
    if (docs[i].cmd == cmd)
      return &docs[i];
  return &docs[0];
}

const char *cli_command_name(unsigned cmd) { return doc_of(cmd)->name; }

/* ------------------------------------------------------------- checkers */

int cli_check_queue(const char *s) {
  sim_queue_kind k;
  return sim_queue_parse(s, &k);
}

int cli_parse_trace_format(const char *s, void *field) {
  enum trace_format f = trace_format_from_name(s);
  if (f == TRACE_FMT_UNKNOWN)
    return -1;
  *(enum trace_format *)field = f;
  return 0;
}

int cli_parse_estimates(const char *s, void *field) {
  cli_estimates *o = field;
  cli_estimates v = {0};
  if (strcmp(s, "exact") == 0) {
    v.kind = SIM_EST_EXACT;
  } else if (strcmp(s, "trace") == 0) {
    v.kind = SIM_EST_TRACE;
  } else if (strncmp(s, "factor:", 7) == 0) {
    char *end;
    errno = 0;
    double f = strtod(s + 7, &end);
    if (end == s + 7 || *end || errno || !(f > 0) || f > 1e6)
      return -1;
    v.kind = SIM_EST_FACTOR;
    v.factor = f;
  } else if (strncmp(s, "model:", 6) == 0) {
    /* model:NAME[:MAX_S[:P]]: MAX_S whole seconds, P a percentage. */
    const char *name = s + 6, *colon = strchr(name, ':');
    size_t len = colon ? (size_t)(colon - name) : strlen(name);
    v.kind = SIM_EST_MODEL;
    v.model = sim_est_model_find(name, len);
    if (!v.model)
      return -1;
    if (colon) {
      char num[32];
      const char *pc = strchr(colon + 1, ':');
      size_t ml = pc ? (size_t)(pc - colon - 1) : strlen(colon + 1);
      uint64_t m;
      if (ml >= sizeof num)
        return -1;
      memcpy(num, colon + 1, ml);
      num[ml] = 0;
      if (cli_parse_u64(num, &m) || m < SIM_EST_MODEL_MAX_S_MIN ||
          m > SIM_EST_MODEL_MAX_S_MAX)
        return -1;
      v.max_s = (int64_t)m;
      if (pc) {
        char *end;
        errno = 0;
        double pct = strtod(pc + 1, &end);
        if (end == pc + 1 || *end || errno || !(pct > 0) || pct > 100)
          return -1;
        v.max_pct = pct;
      }
    }
  } else {
    return -1;
  }
  *o = v;
  return 0;
}

int cli_parse_overrun(const char *s, void *field) {
  if (strcmp(s, "kill") == 0)
    *(sim_overrun *)field = SIM_OVERRUN_KILL;
  else if (strcmp(s, "extend") == 0)
    *(sim_overrun *)field = SIM_OVERRUN_EXTEND;
  else
    return -1;
  return 0;
}

int cli_parse_mig_map(const char *s, void *field) {
  return sim_mig_map_parse(s, (sim_mig_map *)field);
}

int cli_parse_speed(const char *s, void *field) {
  if (strcmp(s, "catalog") == 0)
    *(int *)field = SIM_SPEED_CATALOG;
  else if (strcmp(s, "none") == 0)
    *(int *)field = SIM_SPEED_NONE;
  else
    return -1;
  return 0;
}

int cli_parse_burst(const char *s, void *field) {
  cli_burst *b = field;
  static const struct {
    const char *name;
    int kind;
  } kinds[] = {{"never", SIM_BURST_NEVER},
               {"no-wait", SIM_BURST_NO_WAIT},
               {"constant", SIM_BURST_CONSTANT},
               {"compute-wait", SIM_BURST_COMPUTE_WAIT},
               {"star-wait", SIM_BURST_STAR_WAIT}};
  size_t n = strcspn(s, ":");
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    if (strlen(kinds[i].name) != n || strncmp(s, kinds[i].name, n) != 0)
      continue;
    int wants = kinds[i].kind >= SIM_BURST_CONSTANT;
    if (wants != (s[n] == ':'))
      return -1;
    double v = 0;
    if (wants) {
      char *end;
      errno = 0;
      v = strtod(s + n + 1, &end);
      /* T seconds up to the time range; K up to 1e6. */
      double hi = kinds[i].kind == SIM_BURST_CONSTANT ? (double)TRACE_MAX_TIME_S
                                                      : 1e6;
      if (errno || end == s + n + 1 || *end || !isfinite(v) || v < 0 ||
          v > hi)
        return -1;
    }
    b->kind = kinds[i].kind;
    b->param = v;
    return 0;
  }
  return -1;
}

int cli_parse_spot_rate(const char *s, void *field) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e6)
    return -1;
  *(double *)field = v;
  return 0;
}

/* --------------------------------------------------------------- values */

void run_config_init(run_config *rc) {
  memset(rc, 0, sizeof *rc);
  rc->seed = 1;
  rc->unknown_us = -1;
  rc->tune = 1.3;
  rc->slurm_max = 4;
  rc->speed = SIM_SPEED_CATALOG;
  rc->spot_rate = -1; /* on-demand only */
  trace_load_opts lo = TRACE_LOAD_OPTS_INIT;
  rc->load = lo;
}

/* Strict number in (lo, hi]. */
static int parse_num(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || !(v > lo) || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* One item of a list option. */
static int list_add(const cli_option *o, char *item, char **list, int *n,
                    char *err, size_t errlen) {
  if (o->check && o->check(item)) {
    snprintf(err, errlen, "'%s': expected %s", item, o->expect);
    return -1;
  }
  if (o->flags & OF_UNIQUE)
    for (int i = 0; i < *n; i++)
      if (strcmp(list[i], item) == 0) {
        snprintf(err, errlen, "'%s' given twice", item);
        return -1;
      }
  if (*n == o->cap) {
    snprintf(err, errlen, "'%s': too many values (at most %d)", item, o->cap);
    return -1;
  }
  list[(*n)++] = item;
  return 0;
}

int cli_option_set(const cli_option *o, unsigned cmd, const char *arg,
                   run_config *rc, char *err, size_t errlen) {
  char *field = (char *)rc + o->off;
  rc->given[o->id] = 1;
  switch (o->kind) {
  case K_HELP:
  case K_FLAG:
    if (!arg || !strcmp(arg, "1") || !strcmp(arg, "true"))
      *(int *)field = 1;
    else if (!strcmp(arg, "0") || !strcmp(arg, "false"))
      *(int *)field = 0;
    else
      goto bad;
    return 0;
  case K_UINT: {
    uint64_t v;
    if (cli_parse_u64(arg, &v) || (double)v < o->lo || (double)v > o->hi)
      goto bad;
    *(uint64_t *)field = v;
    return 0;
  }
  case K_NUM:
    if (parse_num(arg, o->lo, o->hi, (double *)field))
      goto bad;
    return 0;
  case K_SECS: {
    int64_t us;
    if (cli_parse_seconds_us(arg, &us))
      goto bad;
    *(double *)field = (double)us / 1e6;
    return 0;
  }
  case K_SECS_US:
    if (cli_parse_seconds_us(arg, (int64_t *)field))
      goto bad;
    return 0;
  case K_STR:
    *(const char **)field = arg;
    return 0;
  case K_ENUM:
    if (o->parse(arg, field))
      goto bad;
    return 0;
  case K_LIST: {
    char **list = (char **)field;
    int *n = (int *)((char *)rc + o->count_off);
    if (!(cmd & o->list_cmds)) { /* a single value: the last one wins */
      *n = 0;
      return list_add(o, (char *)arg, list, n, err, errlen);
    }
    if (!(o->flags & OF_SPLIT))
      return list_add(o, (char *)arg, list, n, err, errlen);
    /* Comma-separated items; argv is split in place, as the items stay
     * pointers into it. */
    char shown[64]; /* for the message: strtok_r cuts arg */
    snprintf(shown, sizeof shown, "%s", arg);
    char *save = NULL;
    int any = 0;
    for (char *tok = strtok_r((char *)arg, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
      any = 1;
      if (list_add(o, tok, list, n, err, errlen))
        return -1;
    }
    if (!any) {
      snprintf(err, errlen, "'%s': an empty list", shown);
      return -1;
    }
    return 0;
  }
  }
bad:
  snprintf(err, errlen, "'%s': expected %s", arg ? arg : "",
           o->kind == K_FLAG ? "true or false" : o->expect);
  return -1;
}

/* --------------------------------------------------------------- parser */

/* The command's row for a long name: an exact match, else the one row
 * whose name starts with it (abbreviations, as getopt_long allowed). */
static const cli_option *find(unsigned cmd, const char *name, size_t len,
                              int *ambiguous) {
  const cli_option *hit = NULL;
  int nhit = 0;
  *ambiguous = 0;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const cli_option *o = &table[i];
    if (!(o->cmds & cmd) || strncmp(o->name, name, len) != 0)
      continue;
    if (o->name[len] == '\0')
      return o;
    if (!hit || strcmp(hit->name, o->name) != 0)
      nhit++;
    hit = o;
  }
  *ambiguous = nhit > 1;
  return nhit == 1 ? hit : NULL;
}

int cli_parse(unsigned cmd, int argc, char **argv, run_config *rc,
              char **pos, int maxpos, int *npos) {
  const char *cname = cli_command_name(cmd);
  char err[512];
  run_config_init(rc);
  *npos = 0;
  int only_pos = 0;
  for (int i = 1; i < argc; i++) {
    char *a = argv[i];
    if (!only_pos && strcmp(a, "--") == 0) {
      only_pos = 1;
      continue;
    }
    if (!only_pos && strcmp(a, "-h") == 0) {
      cli_help(cmd, stdout);
      return 0;
    }
    if (only_pos || a[0] != '-' || a[1] == '\0') {
      if (*npos == maxpos) {
        fprintf(stderr, "schedsim %s: unexpected argument '%s'\n", cname, a);
        cli_help(cmd, stderr);
        return 2;
      }
      pos[(*npos)++] = a;
      continue;
    }
    if (a[1] != '-') {
      fprintf(stderr, "schedsim %s: unknown option '%s'\n", cname, a);
      cli_help(cmd, stderr);
      return 2;
    }
    const char *name = a + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    int amb;
    const cli_option *o = find(cmd, name, len, &amb);
    if (!o) {
      fprintf(stderr, "schedsim %s: %s option '%.*s'\n", cname,
              amb ? "ambiguous" : "unknown", (int)(len + 2), a);
      cli_help(cmd, stderr);
      return 2;
    }
    const char *val = NULL;
    if (o->kind == K_FLAG || o->kind == K_HELP) {
      if (eq) {
        fprintf(stderr, "schedsim %s: option '--%s' takes no value\n", cname,
                o->name);
        cli_help(cmd, stderr);
        return 2;
      }
    } else if (eq) {
      val = eq + 1;
    } else if (i + 1 < argc) {
      val = argv[++i];
    } else {
      fprintf(stderr, "schedsim %s: option '--%s' needs a value\n", cname,
              o->name);
      cli_help(cmd, stderr);
      return 2;
    }
    if (o->kind == K_HELP) {
      cli_help(cmd, stdout);
      return 0;
    }
    if (cli_option_set(o, cmd, val, rc, err, sizeof err)) {
      fprintf(stderr, "schedsim %s: --%s %s\n", cname, o->name, err);
      return 2;
    }
  }
  /* --estimate-factor F means --estimates factor:F; both only if equal. */
  if (rc->given[OPT_ESTIMATES] && rc->given[OPT_ESTIMATE] &&
      !(rc->estimates.kind == SIM_EST_FACTOR &&
        rc->estimates.factor == rc->estimate_factor)) {
    fprintf(stderr,
            "schedsim %s: --estimates and --estimate-factor contradict each "
            "other (--estimate-factor F is --estimates factor:F; give one)\n",
            cname);
    return 2;
  }
  return -1;
}

/* ----------------------------------------------------------------- help */

void cli_help(unsigned cmd, FILE *f) {
  fputs(doc_of(cmd)->text, f);
  fputs("\noptions:\n", f);
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const cli_option *o = &table[i];
    if (!(o->cmds & cmd))
      continue;
    char head[80];
    int w = snprintf(head, sizeof head, "  --%s%s%s%s", o->name,
                     o->metavar ? " " : "", o->metavar ? o->metavar : "",
                     o->kind == K_LIST && (o->list_cmds & cmd) ? "..." : "");
    fputs(head, f);
    /* The help text in a column; its lines continue under it. */
    int col = 28;
    if (w >= col - 1) {
      fputc('\n', f);
      w = 0;
    }
    fprintf(f, "%*s", col - w, "");
    /* Words wrapped at 79 columns. */
    int x = col;
    for (const char *p = o->help; *p;) {
      size_t wl = strcspn(p, " ");
      if (x > col && x + 1 + (int)wl > 79) {
        fprintf(f, "\n%*s", col, "");
        x = col;
      } else if (x > col) {
        fputc(' ', f);
        x++;
      }
      fwrite(p, 1, wl, f);
      x += (int)wl;
      p += wl;
      while (*p == ' ')
        p++;
    }
    fputc('\n', f);
  }
}

/* ------------------------------------------------------------ into runs */

const char *run_config_queue(const run_config *rc) {
  return rc->nqueue ? rc->queue[0] : "fifo";
}

void run_config_sim_options(const run_config *rc, sim_options *opt) {
  memset(opt, 0, sizeof *opt);
  opt->policy = rc->npolicy ? rc->policy[0] : NULL;
  sim_queue_parse(run_config_queue(rc), &opt->queue); /* checked on parse */
  opt->seed = rc->seed;
  opt->unknown_duration_us = rc->unknown_us;
  opt->estimate_factor = rc->estimate_factor;
  opt->estimates = rc->estimates.kind;
  if (rc->estimates.kind == SIM_EST_FACTOR)
    opt->estimate_factor = rc->estimates.factor;
  opt->estimate_model = rc->estimates.model;
  opt->estimate_model_max_s = rc->estimates.max_s;
  opt->estimate_model_max_pct = rc->estimates.max_pct;
  opt->overrun = rc->overrun;
  opt->check_reservations = rc->check;
  opt->migration_fixed_s = rc->mig_fixed;
  opt->migration_per_gib_s = rc->mig_gib;
  opt->max_moves = (int)rc->max_moves;
  opt->max_moves_per_job = (int)rc->max_moves_job;
  opt->preempt = rc->preempt;
  opt->checkpoint_s = rc->checkpoint;
  opt->policy_params = rc->pparams;
  opt->npolicy_params = rc->npparams;
  opt->mig_map = rc->mig_map;
  opt->mig_requests = rc->mig_requests;
  opt->energy_price = rc->energy_price;
  opt->speed = rc->speed;
  opt->speed_table = rc->speed_table;
  opt->measured_on = rc->measured_on;
  opt->class_mix = rc->class_mix;
  opt->burst = rc->burst.kind;
  opt->burst_param = rc->burst.param;
  opt->spot_rate = rc->spot_rate;
  opt->spot_trace = rc->spot_trace;
  opt->restart_overhead_s = rc->restart_overhead;
  opt->deadline_slack = rc->deadline_slack;
  opt->queue_cap = rc->queue_cap;
  opt->preemptible = rc->preemptible;
  opt->max_preemptions = (int)rc->max_preemptions;
  opt->slo = rc->slo;
}

int run_config_synthetic_times(const run_config *rc, trace *t,
                               const trace *from, int gpus, char *err,
                               size_t errlen) {
  if (!(rc->synth_load > 0) && !rc->durations_from)
    return 0;
  if (!(rc->synth_load > 0) || !rc->durations_from) {
    snprintf(err, errlen,
             "--synthetic-load and --durations-from go together");
    return 2;
  }
  trace own;
  trace_init(&own);
  trace_error te;
  te.msg[0] = 0;
  int bad = (!from && trace_load(&own, rc->durations_from, &te)) ||
            trace_synthetic_times(t, from ? from : &own, rc->synth_load, gpus,
                                  rc->seed, &te);
  trace_free(&own);
  if (bad) {
    snprintf(err, errlen, "%s", te.msg);
    return cli_load_status(te.msg);
  }
  return 0;
}

/* -------------------------------------------------------------- options */

int cmd_options(int argc, char **argv) {
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    puts("usage: schedsim options\n\nLists the option table: one line per "
         "option, tab-separated:\nname, commands, sweep manifest parameter "
         "key (- for none), metavar.");
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "schedsim options: unexpected argument '%s'\n", argv[1]);
    return 2;
  }
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const cli_option *o = &table[i];
    printf("--%s\t", o->name);
    const char *sep = "";
    for (size_t k = 0; k < sizeof docs / sizeof docs[0]; k++)
      if (o->cmds & docs[k].cmd) {
        printf("%s%s", sep, docs[k].name);
        sep = ",";
      }
    printf("\t%s\t%s\n", o->mkey ? o->mkey : "-",
           o->metavar ? o->metavar : "-");
  }
  return 0;
}
