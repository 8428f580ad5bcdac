/*
 * The advisor's decisions, with libsched only: mirror a Slurm snapshot into
 * a libsched cluster, then walk the pending jobs in Slurm's priority order,
 * ask the policy for each, check the answer against what Slurm would accept,
 * and allocate it into the mirror so the next job sees it.
 *
 * Nodes a given job may not use in Slurm (another partition, --exclude, a
 * missing feature, no shards, a different shard size, ...) are hidden from
 * the policy for that job only: their free resources are allocated to a
 * temporary "blocker" before the policy is asked and released right after.
 * Accounting in libsched is exact, so this restores the mirror bit for bit;
 * it costs O(GPUs of the blocked nodes) per job.
 */
#include "advisor.h"

#include <stdlib.h>
#include <string.h>

void adv_json_str(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    default:
      if (*p < 0x20)
        fprintf(f, "\\u%04x", *p);
      else
        fputc(*p, f);
    }
  }
  fputc('"', f);
}

/* ------------------------------------------------------------- snapshot */

void adv_snapshot_free(adv_snapshot *s) {
  for (int i = 0; i < s->nnodes; i++) {
    free(s->nodes[i].name);
    free(s->nodes[i].features);
  }
  for (int i = 0; i < s->nparts; i++) {
    free(s->parts[i].name);
    free(s->parts[i].member);
  }
  for (int i = 0; i < s->njobs; i++) {
    adv_job *j = &s->jobs[i];
    free(j->name);
    free(j->partition);
    free(j->req_nodes);
    free(j->exc_nodes);
    free(j->excluded);
    free(j->features);
    free(j->admin_comment);
    free(j->ours_node);
  }
  free(s->nodes);
  free(s->shapes);
  free(s->by_name);
  free(s->parts);
  free(s->jobs);
  memset(s, 0, sizeof *s);
}

static int job_order(const void *a, const void *b) {
  const adv_job *x = a, *y = b;
  if (x->priority != y->priority)
    return x->priority > y->priority ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

void adv_snapshot_sort_jobs(adv_snapshot *s) {
  if (s->njobs > 1)
    qsort(s->jobs, (size_t)s->njobs, sizeof *s->jobs, job_order);
}

static int by_name_cmp(const void *a, const void *b) {
  return strcmp(((const adv_name_idx *)a)->name,
                ((const adv_name_idx *)b)->name);
}

int adv_snapshot_index(adv_snapshot *s) {
  free(s->by_name);
  s->by_name = malloc((size_t)(s->nnodes ? s->nnodes : 1) * sizeof *s->by_name);
  if (!s->by_name)
    return -1;
  for (int i = 0; i < s->nnodes; i++) {
    s->by_name[i].name = s->nodes[i].name;
    s->by_name[i].idx = i;
  }
  qsort(s->by_name, (size_t)s->nnodes, sizeof *s->by_name, by_name_cmp);
  return 0;
}

int adv_snapshot_find_node(const adv_snapshot *s, const char *name) {
  if (s->by_name) {
    adv_name_idx key = {name, -1};
    const adv_name_idx *hit = bsearch(&key, s->by_name, (size_t)s->nnodes,
                                      sizeof key, by_name_cmp);
    return hit ? hit->idx : -1;
  }
  for (int i = 0; i < s->nnodes; i++)
    if (strcmp(s->nodes[i].name, name) == 0)
      return i;
  return -1;
}

/* ----------------------------------------------------------------- guard */

const char *adv_model_name(const adv_config *cfg, const char *slurm_type) {
  const char *t = slurm_type && *slurm_type ? slurm_type : "gpu";
  /* The last mapping wins: the command line's come after the config's. */
  for (int i = cfg->nmodels; i-- > 0;)
    if (strcmp(cfg->models[i].slurm_type, t) == 0)
      return cfg->models[i].model;
  return t;
}

/* node is in one of the job's partitions whose jobs Slurm starts. */
static int in_partition(const adv_snapshot *s, int node, const char *list) {
  if (!list || !*list)
    return 1;
  for (int p = 0; p < s->nparts; p++)
    if (s->parts[p].sched && adv_list_has(list, s->parts[p].name) &&
        s->parts[p].member[node])
      return 1;
  return 0;
}

/* None of the job's partitions starts jobs (DOWN, INACTIVE): the state of
 * the first one, else NULL. A partition the snapshot does not know counts
 * as starting jobs (Slurm would have refused the job otherwise). */
static const char *partition_closed(const adv_snapshot *s, const char *list) {
  if (!list || !*list)
    return NULL;
  const char *state = NULL;
  int known = 0;
  for (int p = 0; p < s->nparts; p++) {
    if (!adv_list_has(list, s->parts[p].name))
      continue;
    known++;
    if (s->parts[p].sched)
      return NULL;
    if (!state)
      state = s->parts[p].state;
  }
  return known ? state : NULL;
}

/* Index of GPU type `name` on node n, or -1. */
static int adv_node_type(const adv_node *n, const char *name) {
  for (int t = 0; t < n->ntypes; t++)
    if (strcmp(n->types[t].name, name) == 0)
      return t;
  return -1;
}

/* adv_node_can_take, with the node's state checked or not. */
static int can_take(const adv_snapshot *s, int node, const adv_job *j,
                    int check_state, const char **why) {
  const adv_node *n = &s->nodes[node];
  *why = NULL;
  if (check_state && !n->usable)
    *why = "node state does not take jobs";
  else if (!in_partition(s, node, j->partition))
    *why = "node is not in an open partition of the job";
  else if (j->excluded && j->excluded[node])
    *why = "node is excluded by the job";
  else if (j->features && *j->features &&
           !adv_list_has(n->features, j->features))
    *why = "node lacks the job's feature";
  else if (j->cpus > n->cpus)
    *why = "node has fewer CPUs than the job asks";
  else if (j->mem_mib > n->mem_mib)
    *why = "node has less memory than the job asks";
  else if (j->mig) {
    int t = adv_node_type(n, j->gpu_type);
    if (t < 0 || !n->types[t].mig_like)
      *why = "node has no GPUs of the job's type";
    else if (j->gpus > n->types[t].count)
      *why = "node has fewer GPUs than the job asks";
  } else if (j->gpus > 0 || j->shards > 0) {
    const adv_gpu_type *t = n->mirror_type >= 0 ? &n->types[n->mirror_type]
                                                : NULL;
    if (!t || (j->gpu_type[0] && strcmp(t->name, j->gpu_type) != 0))
      *why = "node has no GPUs of the job's type";
    else if (j->gpus > n->gpu_count)
      *why = "node has fewer GPUs than the job asks";
    else if (j->shards > 0 && n->shards_per_gpu == 0)
      *why = "node has no shards the advisor can mirror";
    else if (j->shards > n->shards_per_gpu)
      *why = "job asks more shards than one GPU of the node has";
  }
  return *why == NULL;
}

int adv_node_can_take(const adv_snapshot *s, int node, const adv_job *j,
                      const adv_config *cfg, const char **why) {
  (void)cfg;
  return can_take(s, node, j, 1, why);
}

/* ----------------------------------------------------------------- mirror */

/* A placement of gpu_count GPUs (mask) at milli each plus CPU and memory;
 * every other member (appended by later header versions) zero. */
static lsched_placement mkplace(int node, uint64_t mask, int milli, int64_t cpu,
                                int64_t mem) {
  lsched_placement p;
  memset(&p, 0, sizeof p);
  p.node = node;
  p.gpu_count = __builtin_popcountll(mask);
  p.gpu_milli = mask ? milli : 0;
  p.gpu_mask = mask;
  p.cpu_milli = cpu;
  p.memory_mib = mem;
  return p;
}

static int push_base(adv_plan *pl, const lsched_placement *p) {
  if (pl->nbase == pl->capbase) {
    size_t cap = pl->capbase ? 2 * pl->capbase : 64;
    adv_alloc *b = realloc(pl->base, cap * sizeof *b);
    if (!b)
      return -1;
    pl->base = b;
    pl->capbase = cap;
  }
  pl->base[pl->nbase++].p = *p;
  return 0;
}

/* Allocates p (p->node a mirror id) and records it, so that adv_plan_free()
 * can release it. */
static int take(adv_plan *pl, const lsched_placement *p, const char *name,
                char *err, size_t errlen) {
  int rc = lsched_alloc(pl->c, p);
  if (rc) {
    snprintf(err, errlen, "mirror of node %s: %s (%s)", name,
             lsched_strerror(rc), lsched_cluster_errmsg(pl->c));
    return -1;
  }
  if (push_base(pl, p)) {
    lsched_release(pl->c, p);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 0;
}

static void list_policies(const lsched_registry *r, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < lsched_registry_count(r) && off < len; i++) {
    int k = snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
                     lsched_registry_at(r, i)->name);
    if (k < 0)
      break;
    off += (size_t)k;
  }
}

int adv_mirror_init(adv_mirror *m, const adv_config *cfg, char *err,
                    size_t errlen) {
  memset(m, 0, sizeof *m);
  m->cfg = cfg;
  int rc = lsched_cluster_create(&m->c, NULL);
  if (rc) {
    snprintf(err, errlen, "lsched_cluster_create: %s", lsched_strerror(rc));
    return -1;
  }
  if (lsched_registry_create(&m->reg, NULL) ||
      lsched_registry_add_builtins(m->reg)) {
    snprintf(err, errlen, "cannot create the policy registry");
    return -1;
  }
  const lsched_policy_ops *ops = lsched_registry_find(m->reg, cfg->policy);
  if (!ops) {
    char names[512];
    list_policies(m->reg, names, sizeof names);
    snprintf(err, errlen, "unknown policy '%s' (libsched %s has: %s)",
             cfg->policy, lsched_version_string(), names);
    return -2;
  }
  rc = lsched_policy_create(&m->pol, m->c, ops);
  if (rc) {
    snprintf(err, errlen, "policy %s: %s", cfg->policy, lsched_strerror(rc));
    return -1;
  }
  for (int i = 0; i < cfg->nparams; i++) {
    char kv[256];
    snprintf(kv, sizeof kv, "%s", cfg->params[i]);
    char *eq = strchr(kv, '=');
    if (!eq) {
      snprintf(err, errlen, "--param %s: want KEY=VALUE", cfg->params[i]);
      return -2;
    }
    *eq = '\0';
    rc = lsched_policy_set_param(m->pol, kv, eq + 1);
    if (rc) {
      snprintf(err, errlen, "--param %s: policy %s says %s", cfg->params[i],
               cfg->policy, lsched_strerror(rc));
      return -2;
    }
  }
  /* Does the policy take a target workload? (An empty one is harmless.) */
  m->takes_workload = lsched_policy_set_workload(m->pol, NULL) != LSCHED_ENOENT;
  return 0;
}

void adv_mirror_free(adv_mirror *m) {
  for (int i = 0; i < m->nnodes; i++)
    free(m->nodes[i].name);
  free(m->nodes);
  lsched_policy_destroy(m->pol);
  lsched_registry_destroy(m->reg);
  lsched_cluster_destroy(m->c);
  memset(m, 0, sizeof *m);
}

/* One mirror node wanted by the snapshot: a Slurm node (type -1), or one
 * MIG type of it (a sub-node "NODE/TYPE"). */
typedef struct adv_entry {
  char *name;
  int node, type;
  int id; /* mirror id, -1 until matched or added */
} adv_entry;

static int entry_cmp(const void *a, const void *b) {
  return strcmp(((const adv_entry *)a)->name, ((const adv_entry *)b)->name);
}

/* The libsched spec of entry e. MIG sub-node: one GPU per instance, MIG
 * static, each GPU holding one instance of the type's kind at slot 0, so
 * that a request of k instances takes k GPUs as Slurm's k devices; the GPU
 * model is the type name (or its --model name). */
static int node_spec(adv_mirror *m, const adv_snapshot *s, const adv_entry *e,
                     lsched_node_spec *spec, lsched_mig_instance *inst,
                     char *err, size_t errlen) {
  const adv_node *n = &s->nodes[e->node];
  *spec = (lsched_node_spec)LSCHED_NODE_SPEC_INIT;
  spec->name = e->name;
  spec->cpu_milli = n->cpus * 1000;
  spec->memory_mib = n->mem_mib;
  spec->gpu_mode = LSCHED_GPU_SHARED;
  const char *type = NULL;
  if (e->type >= 0) {
    const adv_gpu_type *t = &n->types[e->type];
    type = t->name;
    spec->gpu_count = t->count < LSCHED_MAX_GPUS_PER_NODE
                          ? t->count : LSCHED_MAX_GPUS_PER_NODE;
    spec->gpu_mode = LSCHED_GPU_MIG;
    spec->mig_dynamic = 0;
    inst->kind = adv_mig_kind_of(t->name);
    inst->start = 0;
    spec->mig_layout = inst;
    spec->mig_layout_count = 1;
  } else {
    spec->gpu_count = n->gpu_count;
    if (n->gpu_count > 0)
      type = n->types[n->mirror_type].name;
  }
  if (spec->gpu_count > 0) {
    const char *model = adv_model_name(m->cfg, type);
    spec->gpu_model = lsched_cluster_model_id(m->c, model, 1);
    if (spec->gpu_model < 0) {
      snprintf(err, errlen, "GPU model %s: %s", model,
               lsched_strerror(spec->gpu_model));
      return -1;
    }
  }
  return 0;
}

static int same_spec(const adv_mnode *a, const lsched_node_spec *b) {
  int kind = b->gpu_mode == LSCHED_GPU_MIG ? b->mig_layout[0].kind : 0;
  return a->cpu_milli == b->cpu_milli && a->memory_mib == b->memory_mib &&
         a->gpu_count == b->gpu_count && a->mig_kind == kind &&
         (a->gpu_count == 0 || a->gpu_model == b->gpu_model);
}

static void remember(adv_mnode *mn, const lsched_node_spec *spec) {
  mn->cpu_milli = spec->cpu_milli;
  mn->memory_mib = spec->memory_mib;
  mn->gpu_count = spec->gpu_count;
  mn->gpu_model = spec->gpu_model;
  mn->mig_kind = spec->gpu_mode == LSCHED_GPU_MIG ? spec->mig_layout[0].kind
                                                  : 0;
}

static void free_entries(adv_entry *v, int n) {
  for (int i = 0; i < n; i++)
    free(v[i].name);
  free(v);
}

/* The mirror nodes s wants, sorted by name; NULL when out of memory. */
static adv_entry *wanted(const adv_snapshot *s, int *out_n) {
  int n = 0;
  for (int i = 0; i < s->nnodes; i++) {
    n++;
    for (int t = 0; t < s->nodes[i].ntypes; t++)
      n += s->nodes[i].types[t].mig_like && s->nodes[i].types[t].count > 0 &&
           adv_mig_kind_of(s->nodes[i].types[t].name) > 0;
  }
  adv_entry *v = calloc((size_t)(n ? n : 1), sizeof *v);
  if (!v)
    return NULL;
  int k = 0;
  for (int i = 0; i < s->nnodes; i++) {
    const adv_node *nd = &s->nodes[i];
    v[k] = (adv_entry){strdup(nd->name), i, -1, -1};
    if (!v[k++].name)
      goto oom;
    for (int t = 0; t < nd->ntypes; t++) {
      const adv_gpu_type *ty = &nd->types[t];
      if (!ty->mig_like || ty->count <= 0 || adv_mig_kind_of(ty->name) <= 0)
        continue;
      size_t len = strlen(nd->name) + strlen(ty->name) + 2;
      v[k] = (adv_entry){malloc(len), i, t, -1};
      if (!v[k].name)
        goto oom;
      snprintf(v[k++].name, len, "%s/%s", nd->name, ty->name);
    }
  }
  qsort(v, (size_t)n, sizeof *v, entry_cmp);
  *out_n = n;
  return v;
oom:
  free_entries(v, k);
  return NULL;
}

/* Brings the mirror's node set up to date with s (the mirror is idle: the
 * previous cycle's allocations were released) and fills the plan's maps.
 * O((nodes + MIG types) log) lookups plus the libsched calls for what
 * changed. */
static int mirror_sync(adv_plan *pl, char *err, size_t errlen) {
  adv_mirror *m = pl->m;
  const adv_snapshot *s = pl->s;
  m->added = m->removed = m->updated = m->restated = 0;
  int ne = 0, rc = -1;
  adv_entry *e = wanted(s, &ne);
  if (!e) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  lsched_node_spec spec;
  lsched_mig_instance inst;
  for (int id = 0; id < m->nnodes; id++) {
    adv_mnode *mn = &m->nodes[id];
    if (!mn->name)
      continue;
    adv_entry key = {mn->name, 0, 0, 0};
    adv_entry *hit = bsearch(&key, e, (size_t)ne, sizeof key, entry_cmp);
    if (!hit || hit->id >= 0) {
      int r = lsched_cluster_remove_node(m->c, id);
      if (r) {
        snprintf(err, errlen, "mirror: removing node %s: %s (%s)", mn->name,
                 lsched_strerror(r), lsched_cluster_errmsg(m->c));
        goto out;
      }
      free(mn->name);
      mn->name = NULL;
      m->removed++;
      continue;
    }
    hit->id = id;
    if (node_spec(m, s, hit, &spec, &inst, err, errlen))
      goto out;
    if (!same_spec(mn, &spec)) {
      int r = lsched_cluster_update_node(m->c, id, &spec);
      if (r) {
        snprintf(err, errlen, "mirror: updating node %s: %s (%s)", mn->name,
                 lsched_strerror(r), lsched_cluster_errmsg(m->c));
        goto out;
      }
      remember(mn, &spec);
      m->updated++;
    }
  }
  /* New nodes in the snapshot's order (Slurm's node order), each followed
   * by its MIG sub-nodes. */
  for (int i = 0; i < s->nnodes; i++) {
    for (int t = -1; t < s->nodes[i].ntypes; t++) {
      adv_entry *hit = NULL;
      char name[2 * ADV_NAME + 256];
      if (t < 0)
        snprintf(name, sizeof name, "%s", s->nodes[i].name);
      else
        snprintf(name, sizeof name, "%s/%s", s->nodes[i].name,
                 s->nodes[i].types[t].name);
      adv_entry key = {name, 0, 0, 0};
      hit = bsearch(&key, e, (size_t)ne, sizeof key, entry_cmp);
      if (!hit || hit->id >= 0 || hit->node != i || hit->type != t)
        continue;
      if (node_spec(m, s, hit, &spec, &inst, err, errlen))
        goto out;
      if (m->nnodes == m->capnodes) {
        int cap = m->capnodes ? 2 * m->capnodes : 64;
        adv_mnode *v = realloc(m->nodes, (size_t)cap * sizeof *v);
        if (!v) {
          snprintf(err, errlen, "out of memory");
          goto out;
        }
        m->nodes = v;
        m->capnodes = cap;
      }
      int id;
      int r = lsched_cluster_add_node(m->c, &spec, &id);
      if (r) {
        snprintf(err, errlen, "node %s: %s (%s)", hit->name,
                 lsched_strerror(r), lsched_cluster_errmsg(m->c));
        goto out;
      }
      /* Ids are given out in order, so id == m->nnodes. */
      adv_mnode *mn = &m->nodes[m->nnodes++];
      memset(mn, 0, sizeof *mn);
      mn->name = strdup(hit->name);
      if (!mn->name) {
        snprintf(err, errlen, "out of memory");
        goto out;
      }
      remember(mn, &spec);
      hit->id = id;
      m->added++;
    }
  }
  int nids = lsched_cluster_node_count(m->c);
  pl->owner = malloc((size_t)(nids ? nids : 1) * sizeof *pl->owner);
  pl->owner_type = malloc((size_t)(nids ? nids : 1) * sizeof *pl->owner_type);
  pl->tsid = malloc((size_t)(s->nnodes ? s->nnodes : 1) * ADV_MAX_TYPES *
                    sizeof *pl->tsid);
  if (!pl->owner || !pl->owner_type || !pl->tsid) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  for (int id = 0; id < nids; id++)
    pl->owner[id] = pl->owner_type[id] = -1;
  for (int i = 0; i < s->nnodes * ADV_MAX_TYPES; i++)
    pl->tsid[i] = -1;
  for (int k = 0; k < ne; k++) {
    pl->owner[e[k].id] = e[k].node;
    pl->owner_type[e[k].id] = e[k].type;
    if (e[k].type < 0)
      pl->sid[e[k].node] = e[k].id;
    else
      pl->tsid[e[k].node * ADV_MAX_TYPES + e[k].type] = e[k].id;
  }
  /* Slurm's node state: a drained or draining node is DRAINING, any other
   * state that takes no jobs (down, failing, not responding, ...) is
   * CORDONED; the policy chooses neither. MIG sub-nodes follow their node. */
  for (int k = 0; k < ne; k++) {
    const adv_node *n = &s->nodes[e[k].node];
    lsched_node_state want =
        n->usable ? LSCHED_NODE_UP
        : strstr(n->state, "DRAIN") ? LSCHED_NODE_DRAINING
                                    : LSCHED_NODE_CORDONED;
    if (lsched_cluster_node_state(m->c, e[k].id) == (int)want)
      continue;
    int r = lsched_cluster_set_node_state(m->c, e[k].id, want);
    if (r) {
      snprintf(err, errlen, "mirror: state of node %s: %s", e[k].name,
               lsched_strerror(r));
      goto out;
    }
    m->restated++;
  }
  rc = 0;
out:
  free_entries(e, ne);
  return rc;
}

static int push_alloc(adv_plan *pl, const lsched_placement *p, int dump,
                      const char *name, char *err, size_t errlen) {
  if (take(pl, p, name, err, errlen))
    return -1;
  pl->base[pl->nbase - 1].dump = dump;
  return 0;
}

/* CPU and memory of a placement on one mirror node of a Slurm node, also
 * taken on its other mirror nodes (the MIG sub-nodes share the node's CPUs
 * and memory). */
static int take_siblings(adv_plan *pl, int node, int except, int64_t cpu,
                         int64_t mem, int dump_main, char *err,
                         size_t errlen) {
  if (cpu <= 0 && mem <= 0)
    return 0;
  const adv_node *n = &pl->s->nodes[node];
  for (int t = -1; t < n->ntypes; t++) {
    int id = t < 0 ? pl->sid[node] : pl->tsid[node * ADV_MAX_TYPES + t];
    if (id < 0 || id == except)
      continue;
    lsched_placement p = mkplace(id, 0, 0, cpu, mem);
    if (push_alloc(pl, &p, t < 0 && dump_main, n->name, err, errlen))
      return -1;
  }
  return 0;
}

int adv_plan_build(adv_plan *pl, adv_mirror *m, const adv_snapshot *s,
                   const adv_config *cfg, char *err, size_t errlen) {
  memset(pl, 0, sizeof *pl);
  pl->s = s;
  pl->cfg = cfg;
  if (!m) {
    int rc = adv_mirror_init(&pl->own, cfg, err, errlen);
    pl->m = &pl->own;
    if (rc)
      return rc;
    m = &pl->own;
  }
  pl->m = m;
  pl->c = m->c;
  pl->pol = m->pol;
  pl->sid = malloc((size_t)(s->nnodes ? s->nnodes : 1) * sizeof *pl->sid);
  pl->d = calloc((size_t)(s->njobs ? s->njobs : 1), sizeof *pl->d);
  if (!pl->sid || !pl->d) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (mirror_sync(pl, err, errlen))
    return -1;
  /* What running jobs use: CPUs and memory from the node totals (on each
   * mirror node of the Slurm node), GPUs one placement per GPU (the milli
   * of each GPU differs), MIG instances one placement each. */
  for (int i = 0; i < s->nnodes; i++) {
    const adv_node *n = &s->nodes[i];
    int id = pl->sid[i];
    int64_t cpu = n->cpus_alloc * 1000, mem = n->mem_alloc;
    if (cpu > n->cpus * 1000)
      cpu = n->cpus * 1000;
    if (mem > n->mem_mib)
      mem = n->mem_mib;
    if (take_siblings(pl, i, -1, cpu, mem, 1, err, errlen))
      return -1;
    for (int g = 0; g < n->gpu_count; g++) {
      int u = adv_node_gpu_used_milli(n, g);
      if (u <= 0)
        continue;
      lsched_placement p = mkplace(id, UINT64_C(1) << g, u, 0, 0);
      if (push_alloc(pl, &p, 1, n->name, err, errlen))
        return -1;
    }
    for (int t = 0; t < n->ntypes; t++) {
      int tid = pl->tsid[i * ADV_MAX_TYPES + t];
      if (tid < 0)
        continue;
      int kind = adv_mig_kind_of(n->types[t].name);
      for (int k = 0; k < n->types[t].count && k < LSCHED_MAX_GPUS_PER_NODE;
           k++) {
        int idx = n->types[t].first + k;
        if (idx >= 64 || !(n->idx_used >> idx & 1))
          continue;
        lsched_placement p =
            mkplace(tid, UINT64_C(1) << k, lsched_mig_kind_milli(kind), 0, 0);
        p.mig_kind = kind;
        p.mig_start = 0;
        if (push_alloc(pl, &p, 0, n->name, err, errlen))
          return -1;
      }
    }
  }
  pl->nd = s->njobs;
  return 0;
}

void adv_plan_free(adv_plan *pl) {
  /* Placed decisions were allocated after the base: release in reverse. */
  if (pl->c) {
    for (int i = pl->nd; i-- > 0;)
      if (pl->d[i].kind == ADV_PLACE && pl->d[i].allocated)
        lsched_release(pl->c, &pl->d[i].place);
    for (size_t b = pl->nbase; b-- > 0;)
      lsched_release(pl->c, &pl->base[b].p);
  }
  for (int i = 0; i < pl->nd; i++)
    free(pl->d[i].blocked);
  free(pl->d);
  free(pl->base);
  free(pl->sid);
  free(pl->tsid);
  free(pl->owner);
  free(pl->owner_type);
  free(pl->allowed);
  if (pl->m == &pl->own)
    adv_mirror_free(&pl->own);
  memset(pl, 0, sizeof *pl);
}

/* -------------------------------------------------------------- decisions */

/* The request of job j on the mirror, or a note saying why there is none. */
static int build_request(adv_plan *pl, const adv_job *j, int *spg,
                         lsched_request *r, char *note, size_t notelen) {
  const adv_snapshot *s = pl->s;
  *r = (lsched_request)LSCHED_REQUEST_INIT;
  r->cpu_milli = j->cpus * 1000;
  r->memory_mib = j->mem_mib;
  r->priority = 0;
  *spg = 0;
  if (j->mig) {
    /* k instances of a MIG type: k GPUs of the type's sub-nodes, one
     * instance of the kind on each (plan.c node_spec). */
    r->gpu_count = j->gpus;
    r->gpu_milli = 0;
    r->mig_kind = adv_mig_kind_of(j->gpu_type);
  } else if (j->gpus > 0) {
    r->gpu_count = j->gpus;
    r->gpu_milli = LSCHED_GPU_MILLI;
  } else if (j->shards > 0) {
    /* k shards are k x 1000 / S milli of one GPU. S must be the same on all
     * nodes the job may use: take it from the first node that can take the
     * job; nodes with another S are not allowed for this job. */
    const char *why;
    for (int i = 0; i < s->nnodes && !*spg; i++)
      if (adv_node_can_take(s, i, j, pl->cfg, &why))
        *spg = s->nodes[i].shards_per_gpu;
    if (!*spg) {
      snprintf(note, notelen, "no node has shards the job can use");
      return -1;
    }
    r->gpu_count = 1;
    r->gpu_milli = (int)((int64_t)j->shards * (LSCHED_GPU_MILLI / *spg));
  }
  if (r->gpu_count > 0 && j->gpu_type[0]) {
    const char *model = adv_model_name(pl->cfg, j->gpu_type);
    int id = lsched_cluster_find_model(pl->c, model);
    if (id < 0) {
      snprintf(note, notelen, "no node has GPUs of type %s", j->gpu_type);
      return -1;
    }
    r->model_mask = UINT64_C(1) << id;
  }
  if (lsched_request_validate(r) != LSCHED_OK) {
    snprintf(note, notelen, "request outside libsched's limits");
    return -1;
  }
  return 0;
}

static int decide_one(adv_plan *pl, adv_decision *d, int spg, char *err,
                      size_t errlen) {
  const adv_snapshot *s = pl->s;
  const adv_job *j = d->job;
  /* Only the nodes this job may use in Slurm are allowed (request version
   * 3). A node whose state takes no jobs now is allowed when it could take
   * the job otherwise: it is cordoned or draining in the mirror, so the
   * policy does not choose it, but it counts for "could ever fit" (no
   * node now: ENOFIT, not ENEVER). Such nodes are not listed as blocked. */
  d->blocked = malloc((size_t)(s->nnodes ? s->nnodes : 1) * sizeof(int));
  if (!d->blocked) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  int nids = lsched_cluster_node_count(pl->c);
  memset(pl->allowed, 0, (size_t)(nids ? nids : 1));
  for (int i = 0; i < s->nnodes; i++) {
    const char *why;
    int ok = can_take(s, i, j, 0, &why);
    if (ok && j->shards > 0 && s->nodes[i].shards_per_gpu != spg)
      ok = 0;
    int id = pl->sid[i];
    if (j->mig) { /* the node's sub-node of the job's MIG type */
      int t = adv_node_type(&s->nodes[i], j->gpu_type);
      id = t >= 0 ? pl->tsid[i * ADV_MAX_TYPES + t] : -1;
      ok = ok && id >= 0;
    }
    if (id >= 0)
      pl->allowed[id] = (unsigned char)ok;
    if (!ok && s->nodes[i].usable)
      d->blocked[d->nblocked++] = i;
  }
  d->req.node_allowed = pl->allowed;
  d->req.node_allowed_count = nids;
  d->asked = 1;
  int prc = lsched_policy_place(pl->pol, &d->req, &d->place);
  d->req.node_allowed = NULL;
  d->req.node_allowed_count = 0;
  if (prc != LSCHED_OK) {
    d->kind = ADV_NOFIT;
    if (prc == LSCHED_ENOFIT)
      snprintf(d->note, sizeof d->note, "no node can take the job now");
    else if (prc == LSCHED_ENEVER)
      snprintf(d->note, sizeof d->note, "no node can ever take the job");
    else
      snprintf(d->note, sizeof d->note, "policy: %s", lsched_strerror(prc));
    return 0;
  }
  d->node = pl->owner[d->place.node];
  d->mig_type = pl->owner_type[d->place.node];
  const char *why = "node is not in Slurm's node list";
  if (d->node < 0 || !adv_node_can_take(s, d->node, j, pl->cfg, &why)) {
    d->kind = ADV_REJECT;
    snprintf(d->note, sizeof d->note, "not applied: %s", why);
    return 0;
  }
  if (lsched_alloc(pl->c, &d->place)) {
    d->kind = ADV_REJECT;
    snprintf(d->note, sizeof d->note, "not applied: %s",
             lsched_cluster_errmsg(pl->c));
    return 0;
  }
  d->allocated = 1;
  d->kind = ADV_PLACE;
  /* The node's other mirror nodes (MIG sub-nodes, or the node itself for
   * a MIG placement) lose the CPUs and memory too. */
  return take_siblings(pl, d->node, d->place.node, d->place.cpu_milli,
                       d->place.memory_mib, 0, err, errlen);
}

/* A task type for the workload; 0 when added, skipped or full. */
static int add_type(lsched_workload *w, const lsched_request *r) {
  lsched_task_type t;
  memset(&t, 0, sizeof t);
  t.cpu_milli = r->cpu_milli;
  t.gpu_count = r->gpu_count;
  t.gpu_milli = r->gpu_count ? r->gpu_milli : 0;
  t.model_mask = r->model_mask;
  t.weight = 1;
  int rc = lsched_workload_add(w, &t);
  return rc == LSCHED_ERANGE || rc == LSCHED_EINVAL ? 0 : rc;
}

/* fgd's target workload: the request shapes of this cycle's jobs, weight 1
 * each: every pending job the advisor asks the policy about and every
 * running single-node job with a known request (a window of one cycle,
 * rebuilt every cycle). */
static int plan_workload(adv_plan *pl, char *err, size_t errlen) {
  adv_mirror *m = pl->m;
  if (!m->takes_workload)
    return 0;
  lsched_workload *w;
  int rc = lsched_workload_create(&w, NULL);
  for (int i = 0; i < pl->nd && !rc; i++)
    if (pl->d[i].kind == ADV_PLACE && !pl->d[i].req.mig_kind) /* asked */
      rc = add_type(w, &pl->d[i].req);
  const adv_snapshot *s = pl->s;
  for (int k = 0; k < s->nshapes && !rc; k++) {
    const adv_shape *sh = &s->shapes[k];
    lsched_request r = LSCHED_REQUEST_INIT;
    r.cpu_milli = sh->cpus * 1000;
    if (sh->gpus > 0) {
      r.gpu_count = sh->gpus;
      r.gpu_milli = LSCHED_GPU_MILLI;
    } else if (sh->shards > 0) {
      const adv_node *n = sh->node >= 0 ? &s->nodes[sh->node] : NULL;
      if (!n || n->shards_per_gpu <= 0)
        continue;
      r.gpu_count = 1;
      r.gpu_milli = adv_shard_milli(n, sh->shards);
    }
    if (r.gpu_count > 0 && sh->gpu_type[0]) {
      int id = lsched_cluster_find_model(pl->c,
                                         adv_model_name(pl->cfg, sh->gpu_type));
      if (id < 0)
        continue;
      r.model_mask = UINT64_C(1) << id;
    }
    rc = add_type(w, &r);
  }
  if (!rc) {
    m->workload_types = lsched_workload_count(w);
    m->workload_weight = lsched_workload_weight(w);
    rc = lsched_policy_set_workload(pl->pol, m->workload_types ? w : NULL);
  }
  lsched_workload_destroy(w);
  if (rc) {
    snprintf(err, errlen, "target workload: %s", lsched_strerror(rc));
    return -1;
  }
  return 0;
}

int adv_plan_decide(adv_plan *pl, char *err, size_t errlen) {
  int nids = lsched_cluster_node_count(pl->c);
  pl->allowed = malloc((size_t)(nids ? nids : 1));
  int *spg = calloc((size_t)(pl->nd ? pl->nd : 1), sizeof *spg);
  if (!pl->allowed || !spg) {
    free(spg);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  /* First the requests (they make the target workload), then the
   * decisions in order. kind is ADV_PLACE here for "to be asked". */
  for (int i = 0; i < pl->nd; i++) {
    adv_decision *d = &pl->d[i];
    const adv_job *j = &pl->s->jobs[i];
    const char *closed;
    memset(d, 0, sizeof *d);
    d->job = j;
    d->node = -1;
    d->mig_type = -1;
    if (j->skip) {
      d->kind = ADV_SKIP;
      snprintf(d->note, sizeof d->note, "%s", j->skip);
    } else if (pl->cfg->partition &&
               !adv_list_has(j->partition, pl->cfg->partition)) {
      d->kind = ADV_SKIP;
      snprintf(d->note, sizeof d->note, "other_partition");
    } else if ((closed = partition_closed(pl->s, j->partition))) {
      d->kind = ADV_SKIP;
      snprintf(d->note, sizeof d->note, "partition_%s", closed);
      for (char *p = d->note; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
          *p = (char)(*p - 'A' + 'a');
    } else if (build_request(pl, j, &spg[i], &d->req, d->note,
                             sizeof d->note)) {
      d->kind = ADV_NOFIT;
    } else {
      d->kind = ADV_PLACE;
    }
  }
  int rc = plan_workload(pl, err, errlen);
  for (int i = 0; i < pl->nd && !rc; i++)
    if (pl->d[i].kind == ADV_PLACE)
      rc = decide_one(pl, &pl->d[i], spg[i], err, errlen);
  free(spg);
  return rc;
}

/* ---------------------------------------------------------------- output */

static const char *kind_name(adv_kind k) {
  switch (k) {
  case ADV_PLACE: return "place";
  case ADV_NOFIT: return "nofit";
  case ADV_SKIP: return "skip";
  case ADV_REJECT: return "reject";
  }
  return "?";
}

static void print_gpus(FILE *f, uint64_t mask, int offset) {
  fputc('[', f);
  int first = 1;
  for (int g = 0; g < 64; g++)
    if (mask >> g & 1) {
      fprintf(f, "%s%d", first ? "" : ",", g + offset);
      first = 0;
    }
  fputc(']', f);
}

void adv_print_decisions(FILE *f, const adv_plan *pl, long cycle, long t,
                         int dry_run) {
  for (int i = 0; i < pl->nd; i++) {
    const adv_decision *d = &pl->d[i];
    const adv_job *j = d->job;
    fprintf(f, "{\"time\":%ld,\"cycle\":%ld,\"job_id\":%lu,\"name\":", t,
            cycle, (unsigned long)j->id);
    adv_json_str(f, j->name);
    fprintf(f, ",\"priority\":%lu,\"partition\":", (unsigned long)j->priority);
    adv_json_str(f, j->partition);
    fputs(",\"policy\":", f);
    adv_json_str(f, pl->cfg->policy);
    fprintf(f, ",\"decision\":\"%s\",\"node\":", kind_name(d->kind));
    const adv_node *n = d->node >= 0 ? &pl->s->nodes[d->node] : NULL;
    adv_json_str(f, n ? n->name : NULL);
    fputs(",\"gpus\":", f);
    int first = !n                  ? 0
                : d->mig_type >= 0  ? n->types[d->mig_type].first
                : n->mirror_type >= 0 ? n->types[n->mirror_type].first
                                      : 0;
    print_gpus(f, n ? d->place.gpu_mask : 0, first);
    fprintf(f, ",\"gpu_milli\":%d", n ? d->place.gpu_milli : 0);
    fprintf(f, ",\"request\":{\"cpus\":%lld,\"memory_mib\":%lld,\"gpus\":%d,"
               "\"shards\":%d,\"gpu_type\":",
            (long long)j->cpus, (long long)j->mem_mib, j->gpus, j->shards);
    adv_json_str(f, j->gpu_type[0] ? j->gpu_type : NULL);
    fprintf(f, "},\"applied\":%s,\"dry_run\":%s,\"note\":",
            d->applied ? "true" : "false", dry_run ? "true" : "false");
    adv_json_str(f, d->note);
    fputs("}\n", f);
  }
  fflush(f);
}

static void dump_alloc(FILE *f, const char *node, int64_t cpu, int64_t mem,
                       int milli, uint64_t mask) {
  fputs("{\"node\": ", f);
  adv_json_str(f, node);
  fprintf(f, ", \"cpu_milli\": %lld, \"memory_mib\": %lld, "
             "\"gpu_milli\": %d, \"gpus\": ",
          (long long)cpu, (long long)mem, milli);
  print_gpus(f, mask, 0);
  fputc('}', f);
}

int adv_write_dump(const adv_plan *pl, const char *path, char *err,
                   size_t errlen) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    snprintf(err, errlen, "--dump %s: cannot write", path);
    return -1;
  }
  const adv_snapshot *s = pl->s;
  fputs("{\n  \"format\": \"lsched-slurm-advisor-dump 1\",\n  \"policy\": ",
        f);
  adv_json_str(f, pl->cfg->policy);
  fputs(",\n  \"params\": [", f);
  for (int i = 0; i < pl->cfg->nparams; i++) {
    fputs(i ? ", " : "", f);
    adv_json_str(f, pl->cfg->params[i]);
  }
  fputs("],\n  \"cluster\": {\"name\": \"slurm-mirror\", \"node_groups\": [",
        f);
  /* Nodes in mirror id order (the order policies visit them). */
  const adv_mirror *m = pl->m;
  int first = 1;
  for (int id = 0; id < m->nnodes; id++) {
    if (!m->nodes[id].name || m->nodes[id].mig_kind)
      continue;
    int i = adv_snapshot_find_node(s, m->nodes[id].name);
    if (i < 0)
      continue;
    const adv_node *n = &s->nodes[i];
    fputs(first ? "\n    " : ",\n    ", f);
    first = 0;
    fputs("{\"name\": ", f);
    adv_json_str(f, n->name);
    fprintf(f, ", \"count\": 1, \"gpus_per_node\": %d", n->gpu_count);
    if (n->gpu_count > 0) {
      fputs(", \"gpu_model\": ", f);
      adv_json_str(f, adv_model_name(pl->cfg, n->types[n->mirror_type].name));
    }
    fprintf(f, ", \"cpu_milli\": %lld, \"memory_mib\": %lld, "
               "\"gpu_mode\": \"shared\"}",
            (long long)n->cpus * 1000, (long long)n->mem_mib);
  }
  fputs("]},\n  \"allocations\": [", f);
  first = 1;
  for (size_t i = 0; i < pl->nbase; i++) {
    const lsched_placement *p = &pl->base[i].p;
    if (!pl->base[i].dump)
      continue;
    fputs(first ? "\n    " : ",\n    ", f);
    first = 0;
    dump_alloc(f, m->nodes[p->node].name, p->cpu_milli, p->memory_mib,
               p->gpu_milli, p->gpu_mask);
  }
  /* A node that takes no jobs is cordoned in the mirror; the dump, which has
   * no node states, shows it full instead (what is free on it is taken). */
  for (int id = 0; id < m->nnodes; id++) {
    lsched_node_info ni;
    if (!m->nodes[id].name || m->nodes[id].mig_kind ||
        lsched_cluster_node_state(pl->c, id) == LSCHED_NODE_UP ||
        lsched_cluster_node_info(pl->c, id, &ni))
      continue;
    if (ni.cpu_free > 0 || ni.memory_free > 0) {
      fputs(first ? "\n    " : ",\n    ", f);
      first = 0;
      dump_alloc(f, ni.name, ni.cpu_free, ni.memory_free, 0, 0);
    }
    for (int g = 0; g < ni.gpu_count; g++) {
      int fr = lsched_cluster_gpu_free(pl->c, id, g);
      if (fr <= 0)
        continue;
      fputs(first ? "\n    " : ",\n    ", f);
      first = 0;
      dump_alloc(f, ni.name, 0, 0, fr, UINT64_C(1) << g);
    }
  }
  fputs("],\n  \"jobs\": [", f);
  first = 1;
  for (int i = 0; i < pl->nd; i++) {
    const adv_decision *d = &pl->d[i];
    if (!d->asked || d->job->mig) /* MIG sub-nodes are not in the dump */
      continue;
    fputs(first ? "\n    " : ",\n    ", f);
    first = 0;
    fprintf(f, "{\"job_id\": %lu, \"request\": {\"cpu_milli\": %lld, "
               "\"memory_mib\": %lld, \"gpu_count\": %d, \"gpu_milli\": %d, "
               "\"gpu_model\": ",
            (unsigned long)d->job->id, (long long)d->req.cpu_milli,
            (long long)d->req.memory_mib, d->req.gpu_count, d->req.gpu_milli);
    adv_json_str(f, d->req.model_mask && d->job->gpu_type[0]
                        ? adv_model_name(pl->cfg, d->job->gpu_type)
                        : NULL);
    fputs("}, \"blocked\": [", f);
    for (int b = 0; b < d->nblocked; b++) {
      fputs(b ? ", " : "", f);
      adv_json_str(f, s->nodes[d->blocked[b]].name);
    }
    fprintf(f, "], \"decision\": \"%s\", \"node\": ", kind_name(d->kind));
    adv_json_str(f, d->node >= 0 ? s->nodes[d->node].name : NULL);
    fputs(", \"gpus\": ", f);
    print_gpus(f, d->node >= 0 ? d->place.gpu_mask : 0, 0);
    fputc('}', f);
  }
  fputs("]\n}\n", f);
  int bad = ferror(f);
  if (fclose(f) || bad || rename(tmp, path)) {
    remove(tmp);
    snprintf(err, errlen, "--dump %s: write failed", path);
    return -1;
  }
  return 0;
}
