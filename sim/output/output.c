#include "output.h"
#include "jsonutil.h"
#include "metrics.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int out_mkdir(const char *dir, char *err, size_t errlen) {
  char buf[4096];
  size_t len = strlen(dir);
  if (len == 0 || len >= sizeof buf) {
    snprintf(err, errlen, "%s: bad output directory name", dir);
    return -1;
  }
  memcpy(buf, dir, len + 1);
  for (size_t i = 1; i <= len; i++) {
    if (buf[i] != '/' && buf[i] != 0)
      continue;
    char c = buf[i];
    buf[i] = 0;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
      snprintf(err, errlen, "%s: cannot create directory: %s", buf,
               strerror(errno));
      return -1;
    }
    buf[i] = c;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "%s: not a directory", dir);
    return -1;
  }
  return 0;
}

/* ------------------------------------------ results all old or all new */

int out_mark_incomplete(const char *dir, char *err, size_t errlen) {
  char path[4096];
  snprintf(path, sizeof path, "%s/" OUT_INCOMPLETE, dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return -1;
  }
  close(fd);
  return 0;
}

int out_mark_complete(const char *dir, char *err, size_t errlen) {
  char path[4096];
  snprintf(path, sizeof path, "%s/" OUT_INCOMPLETE, dir);
  if (unlink(path) != 0 && errno != ENOENT) {
    snprintf(err, errlen, "%s: cannot remove: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

int out_dir_complete(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/" OUT_INCOMPLETE, dir);
  struct stat st;
  return lstat(path, &st) != 0;
}

/* 1 when name is "BASE.tmp.PID" or "BASE.tmp.PID.N" for one of the
 * output files and process PID no longer exists. */
static int stale_tmp(const char *name) {
  static const char *const bases[] = {"summary.json", "jobs.csv",
                                      "timeline.csv"};
  for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++) {
    size_t n = strlen(bases[b]);
    if (strncmp(name, bases[b], n) != 0 || strncmp(name + n, ".tmp.", 5) != 0)
      continue;
    char *end;
    errno = 0;
    long pid = strtol(name + n + 5, &end, 10);
    if (errno || end == name + n + 5 || pid <= 0 || (*end && *end != '.'))
      return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
  }
  return 0;
}

void out_clean_stale(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  char path[4096];
  for (struct dirent *e; (e = readdir(d));)
    if (stale_tmp(e->d_name)) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  closedir(d);
}

int out_open(out_file *o, const char *path, char *err, size_t errlen) {
  int rc = atomic_file_open(o, path, "w");
  if (rc == -1)
    snprintf(err, errlen, "%s: out of memory", path);
  else if (rc)
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
  if (rc) /* zeroed, so that a later out_abort frees nothing twice */
    atomic_file_abort(o);
  return rc ? -1 : 0;
}

void out_abort(out_file *o) { atomic_file_abort(o); }

int out_commit(out_file *o, char *err, size_t errlen) {
  int rc = atomic_file_commit(o);
  if (rc)
    snprintf(err, errlen, "%s: write failed: %s", o->path, strerror(errno));
  atomic_file_abort(o);
  return rc ? -1 : 0;
}

int write_summary_json(const char *path, const run_meta *m,
                       const sim_result *r, char *err, size_t errlen) {
  /* A member cJSON could not allocate is left out silently: such a
   * summary is not written (json_alloc_failed below). */
  json_hooks_install();
  json_alloc_failed();
  metric_values v;
  metrics_from_result(&v, m, r);
  return out_write_json(path, metrics_to_json(&v), err, errlen);
}

int out_write_json(const char *path, cJSON *o, char *err, size_t errlen) {
  char *text = o ? cJSON_Print(o) : NULL;
  cJSON_Delete(o);
  if (!text || json_alloc_failed()) {
    cJSON_free(text);
    snprintf(err, errlen, "%.900s: out of memory", path);
    return -1;
  }
  out_file f;
  int rc = out_open(&f, path, err, errlen);
  if (rc == 0) {
    fputs(text, f.f);
    fputc('\n', f.f);
    rc = out_commit(&f, err, errlen);
  }
  cJSON_free(text);
  return rc;
}

void print_summary(FILE *f, const run_meta *m, const sim_result *r) {
  metric_values v;
  metrics_from_result(&v, m, r);
  metrics_print_summary(f, &v);
}

static const char *status_name(int st) {
  switch (st) {
  case JOB_DONE:
    return "completed";
  case JOB_KILLED:
    return "killed";
  case JOB_NEVER_NO_NODE:
    return "never_started:no_node_fits";
  case JOB_NEVER_MODEL:
    return "never_started:gpu_model_not_in_cluster";
  default:
    return "never_started:still_queued";
  }
}

void write_jobs_header(FILE *f, int cloud) {
  fputs("id,submit,start,finish,node,gpus,gpu_milli,queue_time,jct,status,"
        "migrations,preemptions,lost_gpu_seconds,mig_instance,mig_reconfig_s,"
        "class,gpu_model,work_gpu_s,cost_usd",
        f);
  fputs(cloud ? ",site,cloud_cost_usd\n" : "\n", f);
}

/* The cloud columns (runs with the cloud part): the site, or "onprem" for
 * a job that ran on the cluster (empty for one that never ran), and its
 * cloud cost. */
static void cloud_cols(FILE *f, const sim_job_out *o) {
  if (!o->cloud_cols)
    return;
  fputc(',', f);
  if (o->site)
    csv_write_field(f, o->site, 0);
  else if (o->st->status == JOB_DONE || o->st->status == JOB_KILLED)
    fputs("onprem", f);
  fprintf(f, ",%.6f", o->cloud_cost_usd);
}

void write_job_row(FILE *f, const sim_cluster *sc, const sim_job_out *o) {
  const job_record *jr = o->rec;
  const job_state *s = o->st;
  char a[32], b[32], c[32], d[32], e[32];
  csv_write_field(f, o->name, 0);
  sim_fmt_seconds(a, sizeof a, jr->submit_us);
  if (s->status == JOB_DONE || s->status == JOB_KILLED) {
    sim_fmt_seconds(b, sizeof b, s->start_us);
    sim_fmt_seconds(c, sizeof c, s->finish_us);
    sim_fmt_seconds(d, sizeof d, s->start_us - jr->submit_us);
    sim_fmt_seconds(e, sizeof e, s->finish_us - jr->submit_us);
    /* A gang job lists its nodes and their GPU sets joined by '+'. */
    fprintf(f, ",%s,%s,%s,", a, b, c);
    for (int k = 0; k < o->nparts; k++) {
      lsched_node_info ni;
      lsched_cluster_node_info(sc->c, o->parts[k].node, &ni);
      if (k)
        fputc('+', f);
      csv_write_field(f, ni.name, 0);
    }
    fputc(',', f);
    for (int k = 0; k < o->nparts; k++) {
      if (k)
        fputc('+', f);
      int first = 1;
      for (int g = 0; g < 64; g++)
        if ((o->parts[k].gpu_mask >> g) & 1) {
          fprintf(f, first ? "%d" : ";%d", g);
          first = 0;
        }
    }
    fprintf(f, ",%d,%s,%s,%s", jr->num_gpu ? s->gpu_milli : 0, d, e,
            status_name(s->status));
  } else {
    fprintf(f, ",%s,,,,,%d,,,%s", a, jr->gpu_milli, status_name(s->status));
  }
  /* Migration columns (zeros without migration). */
  if (!o->planned)
    fputs(",0,0,0", f);
  else
    fprintf(f, ",%u,%u,%.6f", o->migrations, o->preemptions, o->lost_gpu_s);
  /* MIG: "kind@start" of the job's instance and its reconfiguration wait;
   * empty for jobs without an instance. */
  if (o->mig_kind && (s->status == JOB_DONE || s->status == JOB_KILLED)) {
    char w[32];
    sim_fmt_seconds(w, sizeof w, o->mig_wait_us);
    fprintf(f, ",%s@%d,%s", lsched_mig_kind_name(o->mig_kind), o->mig_start,
            w);
  } else {
    fputs(",,", f);
  }
  /* schedsim rightsize's columns: class, the GPU model(s) it ran on (a
   * gang's distinct models joined by '+'), its work and allocated cost
   * (the last three empty for a job that did not run). */
  fputc(',', f);
  if (o->jclass)
    csv_write_field(f, o->jclass, 0);
  fputc(',', f);
  if (s->status == JOB_DONE || s->status == JOB_KILLED) {
    int seen[SIM_MAX_PARTS], nseen = 0;
    for (int k = 0; k < o->nparts; k++) {
      lsched_node_info ni = LSCHED_NODE_INFO_INIT;
      lsched_cluster_node_info(sc->c, o->parts[k].node, &ni);
      int dup = 0;
      for (int q = 0; q < nseen; q++)
        dup |= seen[q] == ni.gpu_model;
      if (dup)
        continue;
      const char *mn = lsched_cluster_model_name(sc->c, ni.gpu_model);
      if (nseen)
        fputc('+', f);
      seen[nseen++] = ni.gpu_model;
      csv_write_field(f, mn ? mn : "", 0);
    }
    if (o->site_model)
      csv_write_field(f, o->site_model, 0);
    fprintf(f, ",%.6f,%.6f", o->work_ref_s, o->cost_usd);
  } else {
    fputs(",,", f);
  }
  cloud_cols(f, o);
  fputc('\n', f);
}
