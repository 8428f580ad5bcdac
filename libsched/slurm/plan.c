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
  for (int i = 0; i < cfg->nmodels; i++)
    if (strcmp(cfg->models[i].slurm_type, t) == 0)
      return cfg->models[i].model;
  return t;
}

static int in_partition(const adv_snapshot *s, int node, const char *list) {
  if (!list || !*list)
    return 1;
  for (int p = 0; p < s->nparts; p++)
    if (adv_list_has(list, s->parts[p].name) && s->parts[p].member[node])
      return 1;
  return 0;
}

int adv_node_can_take(const adv_snapshot *s, int node, const adv_job *j,
                      const adv_config *cfg, const char **why) {
  (void)cfg;
  const adv_node *n = &s->nodes[node];
  *why = NULL;
  if (!n->usable)
    *why = "node state does not take jobs";
  else if (!in_partition(s, node, j->partition))
    *why = "node is not in the job's partition";
  else if (j->excluded && j->excluded[node])
    *why = "node is excluded by the job";
  else if (j->features && *j->features &&
           !adv_list_has(n->features, j->features))
    *why = "node lacks the job's feature";
  else if (j->cpus > n->cpus)
    *why = "node has fewer CPUs than the job asks";
  else if (j->mem_mib > n->mem_mib)
    *why = "node has less memory than the job asks";
  else if (j->gpus > 0 || j->shards > 0) {
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

/* Allocates p into the mirror; base != 0 records it for the dump. */
static int take(adv_plan *pl, const lsched_placement *p, int base, char *err,
                size_t errlen) {
  int rc = lsched_alloc(pl->c, p);
  if (rc) {
    snprintf(err, errlen, "mirror of node %s: %s (%s)",
             pl->s->nodes[p->node].name, lsched_strerror(rc),
             lsched_cluster_errmsg(pl->c));
    return -1;
  }
  if (base && push_base(pl, p)) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 0;
}

/* Takes everything still free on node (blocker or unusable node). Appends
 * the placements to out (capacity LSCHED_MAX_GPUS_PER_NODE + 1). */
static int fill_node(adv_plan *pl, int node, lsched_placement *out, int *nout,
                     int base, char *err, size_t errlen) {
  lsched_node_info ni;
  *nout = 0;
  if (lsched_cluster_node_info(pl->c, node, &ni))
    return -1;
  if (ni.cpu_free > 0 || ni.memory_free > 0) {
    lsched_placement p = mkplace(node, 0, 0, ni.cpu_free, ni.memory_free);
    if (take(pl, &p, base, err, errlen))
      return -1;
    out[(*nout)++] = p;
  }
  for (int g = 0; g < ni.gpu_count; g++) {
    int f = lsched_cluster_gpu_free(pl->c, node, g);
    if (f <= 0)
      continue;
    lsched_placement p = mkplace(node, UINT64_C(1) << g, f, 0, 0);
    if (take(pl, &p, base, err, errlen))
      return -1;
    out[(*nout)++] = p;
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

int adv_plan_build(adv_plan *pl, const adv_snapshot *s, const adv_config *cfg,
                   char *err, size_t errlen) {
  memset(pl, 0, sizeof *pl);
  pl->s = s;
  pl->cfg = cfg;
  int rc = lsched_cluster_create(&pl->c, NULL);
  if (rc) {
    snprintf(err, errlen, "lsched_cluster_create: %s", lsched_strerror(rc));
    return -1;
  }
  for (int i = 0; i < s->nnodes; i++) {
    const adv_node *n = &s->nodes[i];
    lsched_node_spec spec = LSCHED_NODE_SPEC_INIT;
    spec.name = n->name;
    spec.cpu_milli = n->cpus * 1000;
    spec.memory_mib = n->mem_mib;
    spec.gpu_count = n->gpu_count;
    spec.gpu_mode = LSCHED_GPU_SHARED;
    if (n->gpu_count > 0) {
      const char *model =
          adv_model_name(cfg, n->types[n->mirror_type].name);
      spec.gpu_model = lsched_cluster_model_id(pl->c, model, 1);
      if (spec.gpu_model < 0) {
        snprintf(err, errlen, "GPU model %s: %s", model,
                 lsched_strerror(spec.gpu_model));
        return -1;
      }
    }
    rc = lsched_cluster_add_node(pl->c, &spec, NULL);
    if (rc) {
      snprintf(err, errlen, "node %s: %s (%s)", n->name, lsched_strerror(rc),
               lsched_cluster_errmsg(pl->c));
      return -1;
    }
  }
  if (lsched_registry_create(&pl->reg, NULL) ||
      lsched_registry_add_builtins(pl->reg)) {
    snprintf(err, errlen, "cannot create the policy registry");
    return -1;
  }
  const lsched_policy_ops *ops = lsched_registry_find(pl->reg, cfg->policy);
  if (!ops) {
    char names[512];
    list_policies(pl->reg, names, sizeof names);
    snprintf(err, errlen, "unknown policy '%s' (libsched %s has: %s)",
             cfg->policy, lsched_version_string(), names);
    return -2;
  }
  rc = lsched_policy_create(&pl->pol, pl->c, ops);
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
    rc = lsched_policy_set_param(pl->pol, kv, eq + 1);
    if (rc) {
      snprintf(err, errlen, "--param %s: policy %s says %s", cfg->params[i],
               cfg->policy, lsched_strerror(rc));
      return -2;
    }
  }
  /* What running jobs use: CPUs and memory from the node totals, GPUs one
   * placement per GPU (the milli of each GPU differs). */
  for (int i = 0; i < s->nnodes; i++) {
    const adv_node *n = &s->nodes[i];
    int64_t cpu = n->cpus_alloc * 1000, mem = n->mem_alloc;
    if (cpu > n->cpus * 1000)
      cpu = n->cpus * 1000;
    if (mem > n->mem_mib)
      mem = n->mem_mib;
    if (cpu > 0 || mem > 0) {
      lsched_placement p = mkplace(i, 0, 0, cpu, mem);
      if (take(pl, &p, 1, err, errlen))
        return -1;
    }
    for (int g = 0; g < n->gpu_count; g++) {
      int u = adv_node_gpu_used_milli(n, g);
      if (u <= 0)
        continue;
      lsched_placement p = mkplace(i, UINT64_C(1) << g, u, 0, 0);
      if (take(pl, &p, 1, err, errlen))
        return -1;
    }
    if (!n->usable) {
      lsched_placement tmp[LSCHED_MAX_GPUS_PER_NODE + 1];
      int nt;
      if (fill_node(pl, i, tmp, &nt, 1, err, errlen))
        return -1;
    }
  }
  pl->d = calloc((size_t)(s->njobs ? s->njobs : 1), sizeof *pl->d);
  if (!pl->d) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  pl->nd = s->njobs;
  return 0;
}

void adv_plan_free(adv_plan *pl) {
  for (int i = 0; i < pl->nd; i++)
    free(pl->d[i].blocked);
  free(pl->d);
  free(pl->base);
  free(pl->blk);
  lsched_policy_destroy(pl->pol);
  lsched_registry_destroy(pl->reg);
  lsched_cluster_destroy(pl->c);
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
  if (j->gpus > 0) {
    r->gpu_count = j->gpus;
    r->gpu_milli = LSCHED_GPU_MILLI;
  } else if (j->shards > 0) {
    /* k shards are k x 1000 / S milli of one GPU. S must be the same on all
     * nodes the job may use: take it from the first node that can take the
     * job; nodes with another S are blocked for this job. */
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

static int decide_one(adv_plan *pl, adv_decision *d, char *err,
                      size_t errlen) {
  const adv_snapshot *s = pl->s;
  const adv_job *j = d->job;
  int spg = 0;
  if (build_request(pl, j, &spg, &d->req, d->note, sizeof d->note)) {
    d->kind = ADV_NOFIT;
    return 0;
  }
  /* Hide the nodes this job may not use in Slurm. */
  d->blocked = malloc((size_t)(s->nnodes ? s->nnodes : 1) * sizeof(int));
  if (!d->blocked) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  size_t nb = 0;
  int rc = 0;
  for (int i = 0; i < s->nnodes && !rc; i++) {
    const char *why;
    int ok = adv_node_can_take(s, i, j, pl->cfg, &why);
    if (ok && j->shards > 0 && s->nodes[i].shards_per_gpu != spg)
      ok = 0;
    if (ok || !s->nodes[i].usable) /* unusable nodes are already full */
      continue;
    if (nb + LSCHED_MAX_GPUS_PER_NODE + 1 > pl->capblk) {
      size_t cap = 2 * pl->capblk + LSCHED_MAX_GPUS_PER_NODE + 1;
      lsched_placement *nbk = realloc(pl->blk, cap * sizeof *nbk);
      if (!nbk) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
        break;
      }
      pl->blk = nbk;
      pl->capblk = cap;
    }
    int n;
    if (fill_node(pl, i, pl->blk + nb, &n, 0, err, errlen)) {
      rc = -1;
      break;
    }
    nb += (size_t)n;
    d->blocked[d->nblocked++] = i;
  }
  d->asked = !rc;
  int prc = rc ? LSCHED_OK : lsched_policy_place(pl->pol, &d->req, &d->place);
  for (size_t b = nb; b-- > 0;)
    if (lsched_release(pl->c, &pl->blk[b]) && !rc) {
      snprintf(err, errlen, "releasing a blocker: %s",
               lsched_cluster_errmsg(pl->c));
      rc = -1;
    }
  if (rc)
    return -1;
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
  d->node = d->place.node;
  const char *why;
  if (!adv_node_can_take(s, d->node, j, pl->cfg, &why)) {
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
  d->kind = ADV_PLACE;
  return 0;
}

int adv_plan_decide(adv_plan *pl, char *err, size_t errlen) {
  for (int i = 0; i < pl->nd; i++) {
    adv_decision *d = &pl->d[i];
    const adv_job *j = &pl->s->jobs[i];
    memset(d, 0, sizeof *d);
    d->job = j;
    d->node = -1;
    if (j->skip) {
      d->kind = ADV_SKIP;
      snprintf(d->note, sizeof d->note, "%s", j->skip);
      continue;
    }
    if (pl->cfg->partition && !adv_list_has(j->partition, pl->cfg->partition)) {
      d->kind = ADV_SKIP;
      snprintf(d->note, sizeof d->note, "other_partition");
      continue;
    }
    if (decide_one(pl, d, err, errlen))
      return -1;
  }
  return 0;
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
    int first = n && n->mirror_type >= 0 ? n->types[n->mirror_type].first : 0;
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
  for (int i = 0; i < s->nnodes; i++) {
    const adv_node *n = &s->nodes[i];
    fputs(i ? ",\n    " : "\n    ", f);
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
  for (size_t i = 0; i < pl->nbase; i++) {
    const lsched_placement *p = &pl->base[i].p;
    fputs(i ? ",\n    " : "\n    ", f);
    fputs("{\"node\": ", f);
    adv_json_str(f, s->nodes[p->node].name);
    fprintf(f, ", \"cpu_milli\": %lld, \"memory_mib\": %lld, "
               "\"gpu_milli\": %d, \"gpus\": ",
            (long long)p->cpu_milli, (long long)p->memory_mib, p->gpu_milli);
    print_gpus(f, p->gpu_mask, 0);
    fputc('}', f);
  }
  fputs("],\n  \"jobs\": [", f);
  int first = 1;
  for (int i = 0; i < pl->nd; i++) {
    const adv_decision *d = &pl->d[i];
    if (!d->asked)
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
