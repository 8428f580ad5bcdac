/*
 * The advisor's view of Slurm through libslurm (22.05): one snapshot of the
 * nodes, the partitions and the jobs, and slurm_update_job to apply
 * decisions. Calls verified on the local test bed (scripts/slurm_testbed.sh).
 */
#include "advisor.h"
#include "slurm_io.h"

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exported by libslurm but not declared in slurm.h (22.05). */
extern char *slurm_node_state_string(uint32_t inx);
extern void slurm_xfree(void **item);

static char *dup_or_null(const char *s) {
  if (!s || !*s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

const char *adv_slurm_error(void) { return slurm_strerror(slurm_get_errno()); }

/* A node takes new jobs when its base state is IDLE, MIXED or ALLOCATED and
 * no flag forbids it (drain, fail, no response, power saving, maintenance,
 * reservation, pending reboot, invalid registration). */
static int node_usable(uint32_t st) {
  uint32_t base = st & NODE_STATE_BASE;
  if (base != NODE_STATE_IDLE && base != NODE_STATE_MIXED &&
      base != NODE_STATE_ALLOCATED)
    return 0;
  const uint32_t bad = NODE_STATE_DRAIN | NODE_STATE_FAIL |
                       NODE_STATE_NO_RESPOND | NODE_STATE_POWERED_DOWN |
                       NODE_STATE_POWERING_DOWN | NODE_STATE_POWERING_UP |
                       NODE_STATE_MAINT | NODE_STATE_RES |
                       NODE_STATE_REBOOT_REQUESTED | NODE_STATE_INVALID_REG |
                       NODE_STATE_POWER_DOWN;
  return (st & bad) == 0;
}

static int read_nodes(adv_snapshot *s, node_info_msg_t *nm, char *err,
                      size_t errlen) {
  s->nodes = calloc(nm->record_count ? nm->record_count : 1, sizeof *s->nodes);
  if (!s->nodes)
    goto oom;
  for (uint32_t i = 0; i < nm->record_count; i++) {
    node_info_t *ni = &nm->node_array[i];
    if (!ni->name)
      continue;
    adv_node *n = &s->nodes[s->nnodes++];
    n->name = dup_or_null(ni->name);
    if (!n->name)
      goto oom;
    n->cpus = ni->cpus_efctv > 0 && ni->cpus_efctv < ni->cpus ? ni->cpus_efctv
                                                              : ni->cpus;
    n->mem_mib = (int64_t)ni->real_memory;
    if (ni->mem_spec_limit < ni->real_memory)
      n->mem_mib -= (int64_t)ni->mem_spec_limit;
    uint16_t alloc_cpus = 0;
    uint64_t alloc_mem = 0;
    slurm_get_select_nodeinfo(ni->select_nodeinfo, SELECT_NODEDATA_SUBCNT,
                              NODE_STATE_ALLOCATED, &alloc_cpus);
    slurm_get_select_nodeinfo(ni->select_nodeinfo, SELECT_NODEDATA_MEM_ALLOC,
                              NODE_STATE_ALLOCATED, &alloc_mem);
    n->cpus_alloc = alloc_cpus;
    n->mem_alloc = (int64_t)alloc_mem;
    n->usable = node_usable(ni->node_state);
    const char *st = slurm_node_state_string(ni->node_state);
    snprintf(n->state, sizeof n->state, "%s", st ? st : "?");
    const char *feat = ni->features_act ? ni->features_act : ni->features;
    if (feat && *feat && !(n->features = dup_or_null(feat)))
      goto oom;
    if (adv_node_parse_gres(n, ni->gres, err, errlen)) {
      /* Never place on a node the advisor does not understand. */
      fprintf(stderr, "lsched-slurm-advisor: warning: %s; node left out\n",
              err);
      n->usable = 0;
      n->ntypes = n->gpu_count = n->shards = n->shards_per_gpu = 0;
      n->mirror_type = -1;
      err[0] = '\0';
    }
  }
  return 0;
oom:
  snprintf(err, errlen, "out of memory");
  return -1;
}

static int read_partitions(adv_snapshot *s, partition_info_msg_t *pm,
                           char *err, size_t errlen) {
  s->parts = calloc(pm->record_count ? pm->record_count : 1, sizeof *s->parts);
  if (!s->parts)
    goto oom;
  for (uint32_t p = 0; p < pm->record_count; p++) {
    partition_info_t *pi = &pm->partition_array[p];
    if (!pi->name)
      continue;
    adv_partition *ap = &s->parts[s->nparts++];
    ap->name = dup_or_null(pi->name);
    /* PARTITION_SCHED: Slurm starts the partition's queued jobs (UP and
     * DRAIN do; DOWN and INACTIVE do not). */
    ap->sched = (pi->state_up & PARTITION_SCHED) != 0;
    snprintf(ap->state, sizeof ap->state, "%s",
             pi->state_up == PARTITION_UP     ? "UP"
             : pi->state_up == PARTITION_DOWN ? "DOWN"
             : pi->state_up == PARTITION_DRAIN ? "DRAIN"
                                               : "INACTIVE");
    ap->member = calloc((size_t)(s->nnodes ? s->nnodes : 1), 1);
    if (!ap->name || !ap->member)
      goto oom;
    if (!pi->nodes || !*pi->nodes)
      continue;
    hostlist_t hl = slurm_hostlist_create(pi->nodes);
    if (!hl)
      goto oom;
    for (int i = 0; i < s->nnodes; i++)
      ap->member[i] = slurm_hostlist_find(hl, s->nodes[i].name) >= 0;
    slurm_hostlist_destroy(hl);
  }
  return 0;
oom:
  snprintf(err, errlen, "out of memory");
  return -1;
}

/* GRES details of a running job, node by node of its node list. */
static void apply_running(adv_snapshot *s, const slurm_job_info_t *j) {
  if (!j->nodes || !j->gres_detail_cnt)
    return;
  hostlist_t hl = slurm_hostlist_create(j->nodes);
  if (!hl)
    return;
  char *host;
  uint32_t k = 0;
  while ((host = slurm_hostlist_shift(hl))) {
    int ni = adv_snapshot_find_node(s, host);
    if (ni >= 0 && k < j->gres_detail_cnt && j->gres_detail_str[k])
      adv_node_apply_job_detail(&s->nodes[ni], j->gres_detail_str[k]);
    free(host);
    k++;
  }
  slurm_hostlist_destroy(hl);
}

/* "gres:gpu:4" (--cpus-per-gpu 4): CPUs per GPU, or 0. */
static long cpus_per_gpu(const char *cpt) {
  if (!cpt || !strstr(cpt, "gpu"))
    return 0;
  const char *p = cpt + strlen(cpt);
  while (p > cpt && p[-1] >= '0' && p[-1] <= '9')
    p--;
  return strtol(p, NULL, 10);
}

static int simple_word(const char *s) {
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
      return 0;
  return 1;
}

/* The request shape of a running single-node job, for fgd's workload. */
static void read_shape(adv_snapshot *s, const slurm_job_info_t *ji) {
  if (ji->num_nodes != 1 || !ji->nodes)
    return;
  adv_shape *sh = &s->shapes[s->nshapes];
  memset(sh, 0, sizeof *sh);
  sh->cpus = ji->num_cpus;
  sh->node = adv_snapshot_find_node(s, ji->nodes);
  int count = 0, shard = 0;
  int rc = adv_parse_tres_gpu(ji->tres_per_node, sh->gpu_type,
                              sizeof sh->gpu_type, &count, &shard);
  if (rc == 1)
    rc = adv_parse_tres_gpu(ji->tres_per_job, sh->gpu_type,
                            sizeof sh->gpu_type, &count, &shard);
  if (rc < 0 || (sh->gpu_type[0] && adv_is_mig_like(sh->gpu_type)))
    return;
  if (rc == 0) {
    if (shard)
      sh->shards = count;
    else
      sh->gpus = count;
  }
  s->nshapes++;
}

/* Fills a pending job; sets j->skip when the advisor leaves it to Slurm. */
static int read_pending(adv_snapshot *s, adv_job *j,
                        const slurm_job_info_t *ji, const adv_pins *pins) {
  j->id = ji->job_id;
  j->priority = ji->priority;
  j->name = dup_or_null(ji->name);
  j->partition = dup_or_null(ji->partition);
  j->req_nodes = dup_or_null(ji->req_nodes);
  j->exc_nodes = dup_or_null(ji->exc_nodes);
  j->features = dup_or_null(ji->features);
  j->admin_comment = dup_or_null(ji->admin_comment);
  if ((ji->name && !j->name) || (ji->partition && !j->partition))
    return -1;
  j->cpus = ji->num_cpus > ji->pn_min_cpus ? ji->num_cpus : ji->pn_min_cpus;
  uint64_t mem = ji->pn_min_memory;
  if (mem & MEM_PER_CPU)
    j->mem_mib = (int64_t)(mem & ~MEM_PER_CPU) * j->cpus;
  else
    j->mem_mib = (int64_t)mem;

  if (ji->het_job_id && ji->het_job_id != NO_VAL)
    j->skip = "hetjob";
  else if (ji->array_task_str && *ji->array_task_str)
    j->skip = "array"; /* the record of an array's pending tasks */
  else if (ji->priority == 0 || ji->state_reason == WAIT_HELD ||
           ji->state_reason == WAIT_HELD_USER)
    j->skip = "held";
  else if (ji->state_reason == WAIT_DEPENDENCY ||
           ji->state_reason == WAIT_DEP_INVALID)
    j->skip = "dependency";
  else if (ji->state_reason == WAIT_TIME)
    j->skip = "begin_time";
  else if (ji->state_reason == WAIT_RESERVATION ||
           (ji->resv_name && *ji->resv_name))
    j->skip = "reservation";
  else if (ji->num_nodes > 1 || (ji->max_nodes > 1 && ji->max_nodes != NO_VAL))
    j->skip = "multi_node";
  else if (ji->shared == 0 || ji->shared == 2 || ji->shared == 3)
    j->skip = "exclusive";
  else if (ji->pn_min_memory == 0)
    j->skip = "whole_node_memory";
  else if (ji->mem_per_tres && *ji->mem_per_tres)
    j->skip = "mem_per_gpu";
  else if ((ji->tres_per_task && *ji->tres_per_task) ||
           (ji->tres_per_socket && *ji->tres_per_socket))
    j->skip = "gres_per_task";
  else if (j->features && !simple_word(j->features))
    j->skip = "constraint";
  if (j->req_nodes) {
    /* Ours only if the state file and our AdminComment marker both name
     * this node (pins.c); someone else's -w or update otherwise. */
    if (adv_pin_classify(pins, j->id, j->req_nodes, j->admin_comment) ==
        ADV_PIN_OURS) {
      j->ours = 1;
      j->ours_node = dup_or_null(j->req_nodes);
      if (!j->ours_node)
        return -1;
    } else if (!j->skip) {
      j->skip = "user_nodelist";
    }
  }
  if (j->skip)
    return 0;

  int count = 0, shard = 0;
  int rc = adv_parse_tres_gpu(ji->tres_per_node, j->gpu_type,
                              sizeof j->gpu_type, &count, &shard);
  if (rc == 1) /* --gpus on a one-node job is per node too */
    rc = adv_parse_tres_gpu(ji->tres_per_job, j->gpu_type, sizeof j->gpu_type,
                            &count, &shard);
  if (rc < 0) {
    j->skip = "unsupported_gres";
  } else if (rc == 0) {
    if (j->gpu_type[0] && adv_is_mig_like(j->gpu_type)) {
      if (shard || adv_mig_kind_of(j->gpu_type) < 0)
        j->skip = "mig_type";
      j->mig = 1;
      j->gpus = count;
    } else if (shard)
      j->shards = count;
    else
      j->gpus = count;
    long cpg = cpus_per_gpu(ji->cpus_per_tres);
    if (cpg > 0 && j->gpus > 0 && cpg * j->gpus > j->cpus)
      j->cpus = cpg * j->gpus;
  }
  if (!j->skip && j->exc_nodes) {
    j->excluded = calloc((size_t)(s->nnodes ? s->nnodes : 1), 1);
    hostlist_t hl = slurm_hostlist_create(j->exc_nodes);
    if (!j->excluded || !hl) {
      if (hl)
        slurm_hostlist_destroy(hl);
      return -1;
    }
    for (int i = 0; i < s->nnodes; i++)
      j->excluded[i] = slurm_hostlist_find(hl, s->nodes[i].name) >= 0;
    slurm_hostlist_destroy(hl);
  }
  return 0;
}

int adv_slurm_read(adv_snapshot *s, const adv_pins *pins, char *err,
                   size_t errlen) {
  node_info_msg_t *nm = NULL;
  partition_info_msg_t *pm = NULL;
  job_info_msg_t *jm = NULL;
  int rc = -1;
  memset(s, 0, sizeof *s);
  if (slurm_load_node((time_t)0, &nm, SHOW_ALL | SHOW_DETAIL) !=
      SLURM_SUCCESS) {
    const char *conf = getenv("SLURM_CONF");
    snprintf(err, errlen, "cannot read the nodes from slurmctld "
             "(configuration %s): %s", conf ? conf : "/etc/slurm/slurm.conf",
             adv_slurm_error());
    return -1;
  }
  if (slurm_load_partitions((time_t)0, &pm, SHOW_ALL) != SLURM_SUCCESS) {
    snprintf(err, errlen, "cannot read the partitions from slurmctld: %s",
             adv_slurm_error());
    goto out;
  }
  if (slurm_load_jobs((time_t)0, &jm, SHOW_ALL | SHOW_DETAIL) !=
      SLURM_SUCCESS) {
    snprintf(err, errlen, "cannot read the jobs from slurmctld: %s",
             adv_slurm_error());
    goto out;
  }
  if (read_nodes(s, nm, err, errlen) || read_partitions(s, pm, err, errlen))
    goto out;
  if (adv_snapshot_index(s)) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  s->jobs = calloc(jm->record_count ? jm->record_count : 1, sizeof *s->jobs);
  s->shapes = calloc(jm->record_count ? jm->record_count : 1,
                     sizeof *s->shapes);
  if (!s->jobs || !s->shapes) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  for (uint32_t k = 0; k < jm->record_count; k++) {
    const slurm_job_info_t *ji = &jm->job_array[k];
    uint32_t base = ji->job_state & JOB_STATE_BASE;
    if (base == JOB_RUNNING || base == JOB_SUSPENDED ||
        (ji->job_state & JOB_COMPLETING)) {
      apply_running(s, ji);
      s->running += base == JOB_RUNNING;
      if (base == JOB_RUNNING)
        read_shape(s, ji);
    } else if (base == JOB_PENDING) {
      if (read_pending(s, &s->jobs[s->njobs++], ji, pins)) {
        snprintf(err, errlen, "out of memory");
        goto out;
      }
    }
  }
  /* gres_used last: it only adds what the job details did not explain. */
  for (uint32_t i = 0, k = 0; i < nm->record_count; i++) {
    if (!nm->node_array[i].name)
      continue;
    adv_node_apply_gres_used(&s->nodes[k++], nm->node_array[i].gres_used);
  }
  adv_snapshot_sort_jobs(s);
  rc = 0;
out:
  if (rc)
    adv_snapshot_free(s);
  slurm_free_node_info_msg(nm);
  slurm_free_partition_info_msg(pm);
  slurm_free_job_info_msg(jm);
  return rc;
}

/* ------------------------------------------------------------------ apply */

/* Sets (node != NULL) or clears the required node of a pending job, and
 * adds or removes our marker in its AdminComment (others' text is kept).
 * Returns 0, 1 when the job is no longer pending (not an error: it started
 * or ended since the snapshot), -1 with note set otherwise. */
static int set_req_nodes(const adv_job *j, const char *node,
                         const char *policy, char *note, size_t notelen) {
  job_desc_msg_t d;
  slurm_init_job_desc_msg(&d);
  d.job_id = j->id;
  d.req_nodes = (char *)(node ? node : "");
  char *comment = node ? adv_comment_with_marker(j->admin_comment, policy, node)
                       : adv_comment_without_marker(j->admin_comment);
  if (!comment) {
    snprintf(note, notelen, "out of memory");
    return -1;
  }
  /* Leave the comment alone when it does not change (no marker to remove). */
  if (node || strcmp(comment, j->admin_comment ? j->admin_comment : "") != 0)
    d.admin_comment = comment;
  int rc = slurm_update_job(&d);
  free(comment);
  if (rc == SLURM_SUCCESS)
    return 0;
  int e = slurm_get_errno();
  if (e == ESLURM_JOB_NOT_PENDING || e == ESLURM_ALREADY_DONE ||
      e == ESLURM_INVALID_JOB_ID || e == ESLURM_TRANSITION_STATE_NO_UPDATE) {
    snprintf(note, notelen, "not changed: job no longer pending (%s)",
             slurm_strerror(e));
    return 1;
  }
  snprintf(note, notelen, "slurm_update_job: %s", slurm_strerror(e));
  return -1;
}

/* Forgets pins of jobs that are no longer pending or no longer ours:
 * O((jobs + pins) log pins). */
void adv_pins_prune(adv_pins *pins, const adv_snapshot *s) {
  uint8_t *keep = calloc((size_t)(pins->n ? pins->n : 1), 1);
  if (!keep)
    return; /* keeping a stale entry is harmless: the marker must agree */
  for (int k = 0; k < s->njobs; k++) {
    int i = s->jobs[k].ours ? adv_pins_index(pins, s->jobs[k].id) : -1;
    if (i >= 0)
      keep[i] = 1;
  }
  int w = 0;
  for (int i = 0; i < pins->n; i++)
    if (keep[i])
      pins->v[w++] = pins->v[i];
  if (w != pins->n)
    pins->dirty = 1;
  pins->n = w;
  free(keep);
}

static int pinned_node_unknown(const adv_snapshot *s, const adv_job *j) {
  int i = j->ours_node ? adv_snapshot_find_node(s, j->ours_node) : -1;
  return i >= 0 && strncmp(s->nodes[i].state, "UNKNOWN", 7) == 0;
}

static int save(adv_state *st, char *err, size_t errlen) {
  if (!st->path || !st->pins.dirty)
    return 0;
  return adv_pins_save(&st->pins, st->path, err, errlen);
}

int adv_slurm_apply(adv_plan *pl, adv_state *st, int dry_run, char *err,
                    size_t errlen) {
  int failures = 0;
  /* The state file learns a pin before Slurm does: after a crash in
   * between, the entry without a marker is disowned, never the reverse (a
   * marker without an entry would look like someone else's pin forever). */
  if (!dry_run) {
    for (int i = 0; i < pl->nd; i++) {
      const adv_decision *d = &pl->d[i];
      if (d->kind == ADV_PLACE &&
          adv_pins_set(&st->pins, d->job->id, pl->s->nodes[d->node].name)) {
        snprintf(err, errlen, "out of memory");
        return -1;
      }
    }
    if (save(st, err, errlen))
      return -1;
  }
  for (int i = 0; i < pl->nd; i++) {
    adv_decision *d = &pl->d[i];
    const adv_job *j = d->job;
    if (d->kind == ADV_PLACE) {
      const char *node = pl->s->nodes[d->node].name;
      if (j->ours && j->ours_node && strcmp(j->ours_node, node) == 0) {
        d->applied = 1;
        snprintf(d->note, sizeof d->note, "already pinned to %s", node);
      } else if (!dry_run) {
        int rc = set_req_nodes(j, node, pl->cfg->policy, d->note,
                               sizeof d->note);
        d->applied = rc == 0;
        failures += rc < 0;
        if (rc == 0 && j->ours) {
          size_t len = strlen(d->note);
          snprintf(d->note + len, sizeof d->note - len, "moved from %s",
                   j->ours_node);
        }
        if (rc != 0) {
          /* Not pinned now: the old pin (if any) is still what Slurm has. */
          if (j->ours && j->ours_node && rc < 0)
            adv_pins_set(&st->pins, j->id, j->ours_node);
          else
            adv_pins_del(&st->pins, j->id);
        }
      }
    } else if (j->ours && (d->kind == ADV_NOFIT || d->kind == ADV_REJECT) &&
               pinned_node_unknown(pl->s, j)) {
      /* Right after a slurmctld restart nodes are UNKNOWN until their
       * slurmd registers again: keep the pin rather than drop it for a few
       * seconds (a node that stays away becomes DOWN, and the pin goes). */
      size_t len = strlen(d->note);
      snprintf(d->note + len, sizeof d->note - len,
               "%skept pin on %s (node state UNKNOWN)", len ? "; " : "",
               j->ours_node);
    } else if (j->ours) {
      /* Our earlier pin no longer holds (no node fits, the guard refused,
       * or the job is left to Slurm now: held, its partition closed, ...):
       * give the job back to Slurm. */
      size_t len = strlen(d->note);
      if (dry_run) {
        snprintf(d->note + len, sizeof d->note - len, "%swould unpin from %s",
                 len ? "; " : "", j->ours_node ? j->ours_node : "?");
      } else {
        char note[200] = "";
        int rc = set_req_nodes(j, NULL, pl->cfg->policy, note, sizeof note);
        snprintf(d->note + len, sizeof d->note - len, "%s%s",
                 len ? "; " : "", rc == 0 ? "unpinned" : note);
        failures += rc < 0;
        if (rc >= 0)
          adv_pins_del(&st->pins, j->id);
      }
    }
  }
  if (!dry_run && save(st, err, errlen))
    return -1;
  return failures;
}

int adv_slurm_unpin_all(const adv_snapshot *s, adv_state *st, int dry_run,
                        int quiet, int *unpinned, char *err, size_t errlen) {
  int failures = 0;
  *unpinned = 0;
  for (int k = 0; k < s->njobs; k++) {
    const adv_job *j = &s->jobs[k];
    if (!j->ours)
      continue;
    char note[200] = "";
    int rc = dry_run ? 0 : set_req_nodes(j, NULL, "", note, sizeof note);
    if (rc == 0)
      (*unpinned)++;
    if (rc >= 0 && !dry_run)
      adv_pins_del(&st->pins, j->id);
    failures += rc < 0;
    if (!quiet)
      fprintf(stderr, "lsched-slurm-advisor: job %lu: %s %s%s%s\n",
              (unsigned long)j->id,
              dry_run ? "would unpin from" : rc == 0 ? "unpinned from"
                                                      : "not unpinned from",
              j->ours_node, *note ? ": " : "", note);
  }
  if (!dry_run && save(st, err, errlen))
    return -1;
  return failures;
}
