/*
 * The advisor's options, declared once (adv_options[]): the command line
 * (getopt_long table and --help in main.c) and the configuration file
 * (--config FILE, "key = value" lines; the keys are the long option names)
 * both come from this table and both go through adv_opts_set(). libc only.
 */
#include "advisor.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const adv_option adv_options[] = {
    {"config", 1, 0, "FILE", "read options from FILE (key = value; the\n"
                             "command line overrides it)"},
    {"once", 0, 1, NULL, "one cycle, then exit"},
    {"interval", 1, 1, "S", "seconds between cycles (default 10)"},
    {"policy", 1, 1, "NAME", "libsched policy (default best-fit;\n"
                             "--list-policies)"},
    {"dry-run", 0, 1, NULL, "decide and print, change nothing in Slurm"},
    {"dump", 1, 1, "FILE", "write the mirrored state and the decisions of\n"
                           "the last cycle (input of lsched-slurm-replay)"},
    {"partition", 1, 1, "NAME", "only jobs submitted to this partition"},
    {"conf", 1, 1, "FILE", "Slurm configuration (default: $SLURM_CONF,\n"
                           "then /etc/slurm/slurm.conf)"},
    {"model", 1, 1, "T=M", "name Slurm GPU type T as libsched model M\n"
                           "(untyped GPUs are type 'gpu'; repeatable)"},
    {"param", 1, 1, "K=V", "policy parameter (lsched_policy_set_param;\n"
                           "repeatable)"},
    {"state-dir", 1, 1, "DIR", "where the advisor keeps the pins it set\n"
                               "(default " ADV_STATE_DIR ")"},
    {"retries", 1, 1, "N", "loop mode: exit after N+1 failed cycles in a\n"
                           "row (default 3; 'forever' never gives up)"},
    {"max-backoff", 1, 1, "S", "loop mode: longest wait after failed cycles\n"
                               "(doubling from --interval; default 300)"},
    {"quiet", 0, 1, NULL, "no per-cycle summary on stderr"},
    {"unpin-all", 0, 0, NULL, "remove every pin this advisor set, print the\n"
                              "count, and exit"},
    {"list-policies", 0, 0, NULL, "print the policies and exit"},
    {"version", 0, 0, NULL, "print the versions and exit"},
    {"help", 0, 0, NULL, "this text"},
    {NULL, 0, 0, NULL, NULL}};

const adv_option *adv_option_find(const char *name) {
  for (const adv_option *o = adv_options; o->name; o++)
    if (strcmp(o->name, name) == 0)
      return o;
  return NULL;
}

void adv_opts_init(adv_opts *o) {
  memset(o, 0, sizeof *o);
  o->cfg.policy = "best-fit";
  o->interval = 10;
  o->retries = 3;
  o->max_backoff = 300;
  o->state_dir = ADV_STATE_DIR;
}

static char *keep(adv_opts *o, const char *s) {
  char **v = realloc(o->owned, (size_t)(o->nowned + 1) * sizeof *v);
  if (!v)
    return NULL;
  o->owned = v;
  char *d = strdup(s);
  if (d)
    o->owned[o->nowned++] = d;
  return d;
}

void adv_opts_free(adv_opts *o) {
  for (int i = 0; i < o->cfg.nmodels; i++) {
    free(o->cfg.models[i].slurm_type);
    free(o->cfg.models[i].model);
  }
  free(o->cfg.models);
  free(o->cfg.params);
  for (int i = 0; i < o->nowned; i++)
    free(o->owned[i]);
  free(o->owned);
  memset(o, 0, sizeof *o);
}

static int parse_bool(const char *v, int *out) {
  if (!v || !*v || !strcasecmp(v, "yes") || !strcasecmp(v, "true") ||
      !strcmp(v, "1") || !strcasecmp(v, "on"))
    *out = 1;
  else if (!strcasecmp(v, "no") || !strcasecmp(v, "false") ||
           !strcmp(v, "0") || !strcasecmp(v, "off"))
    *out = 0;
  else
    return -1;
  return 0;
}

static int parse_seconds(const char *v, double max, double *out) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (errno || *end || end == v || !isfinite(d) || d < 0 || d > max)
    return -1;
  *out = d;
  return 0;
}

int adv_opts_set(adv_opts *o, const char *key, const char *value, char *why,
                 size_t whylen) {
  const char *v = value ? value : "";
  char *end;
  if (!strcmp(key, "once") || !strcmp(key, "dry-run") ||
      !strcmp(key, "quiet") || !strcmp(key, "unpin-all")) {
    int b;
    if (parse_bool(value, &b)) {
      snprintf(why, whylen, "want yes or no, got '%s'", v);
      return -1;
    }
    *(!strcmp(key, "once")      ? &o->once
      : !strcmp(key, "dry-run") ? &o->dry_run
      : !strcmp(key, "quiet")   ? &o->quiet
                                : &o->unpin_all) = b;
    return 0;
  }
  if (!strcmp(key, "interval") || !strcmp(key, "max-backoff")) {
    if (parse_seconds(v, 86400, !strcmp(key, "interval") ? &o->interval
                                                         : &o->max_backoff)) {
      snprintf(why, whylen, "want seconds in 0..86400, got '%s'", v);
      return -1;
    }
    return 0;
  }
  if (!strcmp(key, "retries")) {
    if (!strcmp(v, "forever")) {
      o->retries = -1;
      return 0;
    }
    errno = 0;
    long r = strtol(v, &end, 10);
    if (errno || *end || end == v || r < 0 || r > 1000000) {
      snprintf(why, whylen, "want a count or 'forever', got '%s'", v);
      return -1;
    }
    o->retries = (int)r;
    return 0;
  }
  if (!strcmp(key, "model") || !strcmp(key, "param")) {
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || (!strcmp(key, "model") && !eq[1])) {
      snprintf(why, whylen, "want %s, got '%s'",
               !strcmp(key, "model") ? "SLURM_TYPE=MODEL" : "KEY=VALUE", v);
      return -1;
    }
    if (!strcmp(key, "param")) {
      char *s = keep(o, v);
      char **p = s ? realloc(o->cfg.params,
                             (size_t)(o->cfg.nparams + 1) * sizeof *p)
                   : NULL;
      if (!p)
        goto oom;
      o->cfg.params = p;
      p[o->cfg.nparams++] = s;
      return 0;
    }
    adv_model_map *m = realloc(o->cfg.models,
                               (size_t)(o->cfg.nmodels + 1) * sizeof *m);
    if (!m)
      goto oom;
    o->cfg.models = m;
    m[o->cfg.nmodels].slurm_type = strndup(v, (size_t)(eq - v));
    m[o->cfg.nmodels].model = strdup(eq + 1);
    o->cfg.nmodels++;
    if (!m[o->cfg.nmodels - 1].slurm_type || !m[o->cfg.nmodels - 1].model)
      goto oom;
    return 0;
  }
  const char **slot = !strcmp(key, "policy")      ? &o->cfg.policy
                      : !strcmp(key, "dump")      ? &o->dump
                      : !strcmp(key, "partition") ? &o->cfg.partition
                      : !strcmp(key, "conf")      ? &o->slurm_conf
                      : !strcmp(key, "state-dir") ? &o->state_dir
                                                  : NULL;
  if (slot) {
    if (!*v) {
      snprintf(why, whylen, "want a value");
      return -1;
    }
    if (!(*slot = keep(o, v)))
      goto oom;
    return 0;
  }
  snprintf(why, whylen, "unknown option");
  return -1;
oom:
  snprintf(why, whylen, "out of memory");
  return -1;
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s))
    s++;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1]))
    s[--n] = '\0';
  return s;
}

int adv_conf_read(adv_opts *o, const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "--config %s: cannot read: %s", path,
             strerror(errno));
    return -1;
  }
  char line[4096], why[256];
  long ln = 0;
  int rc = 0;
  while (!rc && fgets(line, sizeof line, f)) {
    ln++;
    size_t n = strlen(line);
    if (n == sizeof line - 1 && line[n - 1] != '\n') {
      snprintf(err, errlen, "%s:%ld: line longer than %zu characters", path,
               ln, sizeof line - 2);
      rc = -1;
      break;
    }
    char *s = trim(line);
    if (!*s || *s == '#')
      continue;
    char *eq = strchr(s, '=');
    if (!eq) {
      snprintf(err, errlen, "%s:%ld: want 'key = value', got '%.200s'", path,
               ln, s);
      rc = -1;
      break;
    }
    *eq = '\0';
    char *key = trim(s), *val = trim(eq + 1);
    for (char *p = key; *p; p++)
      if (*p == '_')
        *p = '-';
    const adv_option *opt = adv_option_find(key);
    if (!opt || !opt->in_config) {
      snprintf(err, errlen, "%s:%ld: key '%.100s': unknown (known:", path, ln,
               key);
      for (const adv_option *q = adv_options; q->name; q++)
        if (q->in_config) {
          size_t l = strlen(err);
          snprintf(err + l, errlen - l, " %s", q->name);
        }
      size_t l = strlen(err);
      snprintf(err + l, errlen - l, ")");
      rc = -1;
    } else if (adv_opts_set(o, key, val, why, sizeof why)) {
      snprintf(err, errlen, "%s:%ld: key '%s': %s", path, ln, key, why);
      rc = -1;
    }
  }
  fclose(f);
  return rc;
}
