/*
 * Policy registry (per instance, no global table) and policy instances
 * attached to a cluster.
 */
#include "internal.h"
#include "mig_internal.h"

#include <libsched/migrate.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct lsched_registry {
  lsched_allocator a;
  const lsched_policy_ops **ops;
  size_t n, cap;
};

int lsched_registry_create(lsched_registry **out,
                           const lsched_allocator *allocator) {
  if (!out)
    return LSCHED_EINVAL;
  lsched_allocator a;
  lsched__default_allocator(&a, allocator);
  lsched_registry *r = lsched__calloc(&a, 1, sizeof *r);
  *out = r;
  if (!r)
    return LSCHED_ENOMEM;
  r->a = a;
  return LSCHED_OK;
}

void lsched_registry_destroy(lsched_registry *r) {
  if (!r)
    return;
  lsched_allocator a = r->a;
  lsched__free(&a, r->ops);
  lsched__free(&a, r);
}

static int ops_valid(const lsched_policy_ops *ops) {
  if (!ops)
    return LSCHED_EINVAL;
  if (ops->version == 0 || ops->version > LSCHED_POLICY_OPS_VERSION)
    return LSCHED_EVERSION;
  if (!ops->name || !ops->name[0] || !ops->place)
    return LSCHED_EINVAL;
  return LSCHED_OK;
}

int lsched_registry_add(lsched_registry *r, const lsched_policy_ops *ops) {
  if (!r)
    return LSCHED_EINVAL;
  int rc = ops_valid(ops);
  if (rc)
    return rc;
  if (lsched_registry_find(r, ops->name))
    return LSCHED_EEXIST;
  if (r->n == r->cap) {
    size_t nc = r->cap ? r->cap * 2 : 16;
    const lsched_policy_ops **no =
        lsched__realloc(&r->a, r->ops, nc * sizeof *no);
    if (!no)
      return LSCHED_ENOMEM;
    r->ops = no;
    r->cap = nc;
  }
  r->ops[r->n++] = ops;
  return LSCHED_OK;
}

/* lsched_registry_add_builtins() is defined with the built-in policies
 * (policies/builtins.c): they register through lsched_registry_add() as
 * any outside policy does. */

const lsched_policy_ops *lsched_registry_find(const lsched_registry *r,
                                              const char *name) {
  if (!r || !name)
    return NULL;
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->ops[i]->name, name) == 0)
      return r->ops[i];
  return NULL;
}

size_t lsched_registry_count(const lsched_registry *r) { return r ? r->n : 0; }

const lsched_policy_ops *lsched_registry_at(const lsched_registry *r,
                                            size_t i) {
  return r && i < r->n ? r->ops[i] : NULL;
}

int lsched_policy_create(lsched_policy **out, lsched_cluster *c,
                         const lsched_policy_ops *ops) {
  if (!out)
    return LSCHED_EINVAL;
  *out = NULL;
  if (!c)
    return LSCHED_EINVAL;
  int rc = ops_valid(ops);
  if (rc)
    return rc;
  if (c->nattached == c->attached_cap) {
    int nc = c->attached_cap ? c->attached_cap * 2 : 4;
    lsched_policy **na =
        lsched__realloc(&c->a, c->attached, (size_t)nc * sizeof *na);
    if (!na)
      return LSCHED_ENOMEM;
    c->attached = na;
    /* hooked is a subset of attached: the same capacity. On failure here
     * attached keeps its larger block and the next call grows both. */
    lsched_policy **nh =
        lsched__realloc(&c->a, c->hooked, (size_t)nc * sizeof *nh);
    if (!nh)
      return LSCHED_ENOMEM;
    c->hooked = nh;
    c->attached_cap = nc;
  }
  lsched_policy *p = lsched__calloc(&c->a, 1, sizeof *p);
  if (!p)
    return LSCHED_ENOMEM;
  p->ops = ops;
  p->c = c;
  if (ops->state_size) {
    p->state = lsched__calloc(&c->a, 1, ops->state_size);
    if (!p->state) {
      lsched__free(&c->a, p);
      return LSCHED_ENOMEM;
    }
  }
  if (ops->init && (rc = ops->init(p->state, c)) != LSCHED_OK) {
    lsched__free(&c->a, p->state);
    lsched__free(&c->a, p);
    return rc;
  }
  c->attached[c->nattached++] = p;
  if (ops->on_alloc || ops->on_release)
    c->hooked[c->nhooked++] = p;
  *out = p;
  return LSCHED_OK;
}

void lsched_policy_destroy(lsched_policy *p) {
  if (!p)
    return;
  lsched_cluster *c = p->c;
  for (int i = 0; i < c->nattached; i++)
    if (c->attached[i] == p) {
      memmove(&c->attached[i], &c->attached[i + 1],
              (size_t)(c->nattached - i - 1) * sizeof *c->attached);
      c->nattached--;
      break;
    }
  for (int i = 0; i < c->nhooked; i++)
    if (c->hooked[i] == p) {
      memmove(&c->hooked[i], &c->hooked[i + 1],
              (size_t)(c->nhooked - i - 1) * sizeof *c->hooked);
      c->nhooked--;
      break;
    }
  if (p->ops->fini)
    p->ops->fini(p->state);
  for (int i = 0; i < p->nparams; i++)
    lsched__free(&c->a, p->params[i]);
  lsched__free(&c->a, p->params);
  lsched_workload_destroy(p->workload);
  lsched__free(&c->a, p->state);
  lsched__free(&c->a, p);
}

static char *str_copy(const lsched_allocator *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = lsched__alloc(a, n);
  if (d)
    memcpy(d, s, n);
  return d;
}

/* Records key=value for the refresh (a later value of the same key
 * replaces the earlier one in place, keeping the order of first setting). */
static int record_param(lsched_policy *p, const char *key, const char *value) {
  const lsched_allocator *a = &p->c->a;
  char *v = str_copy(a, value);
  if (!v)
    return LSCHED_ENOMEM;
  for (int i = 0; i < p->nparams; i += 2)
    if (strcmp(p->params[i], key) == 0) {
      lsched__free(a, p->params[i + 1]);
      p->params[i + 1] = v;
      return LSCHED_OK;
    }
  char *k = str_copy(a, key);
  if (!k) {
    lsched__free(a, v);
    return LSCHED_ENOMEM;
  }
  if (p->nparams + 2 > p->params_cap) {
    int nc = p->params_cap ? 2 * p->params_cap : 8;
    char **np = lsched__realloc(a, p->params, (size_t)nc * sizeof *np);
    if (!np) {
      lsched__free(a, k);
      lsched__free(a, v);
      return LSCHED_ENOMEM;
    }
    p->params = np;
    p->params_cap = nc;
  }
  p->params[p->nparams++] = k;
  p->params[p->nparams++] = v;
  return LSCHED_OK;
}

static int has_node_hook(const lsched_policy_ops *ops) {
  return ops->version >= 5 && ops->on_node_change;
}

int lsched_policy_set_param(lsched_policy *p, const char *key,
                            const char *value) {
  if (!p || !key || !value)
    return LSCHED_EINVAL;
  if (!p->ops->set_param)
    return LSCHED_ENOENT;
  int rc = p->ops->set_param(p->state, key, value);
  if (rc == LSCHED_OK && !has_node_hook(p->ops))
    rc = record_param(p, key, value);
  return rc;
}

int lsched_policy_place(lsched_policy *p, const lsched_request *req,
                        lsched_placement *out) {
  if (!p || !out)
    return LSCHED_EINVAL;
  lsched_cluster *c = p->c;
  if (!lsched__req_valid(c, req)) {
    snprintf(c->errmsg, sizeof c->errmsg, "place: malformed request");
    return LSCHED_EINVAL;
  }
  /* Validated once: the fit and pick calls of the policy skip it. */
  const lsched_request *outer = c->valid_req;
  c->valid_req = req;
  int rc = lsched__policy_place_valid(p, req, out);
  c->valid_req = outer;
  return rc;
}

int lsched__policy_place_failed(lsched_policy *p, const lsched_request *req,
                                int rc) {
  lsched_cluster *c = p->c;
  if (rc == LSCHED_ESTATE && p->broken) {
    snprintf(c->errmsg, sizeof c->errmsg,
             "place: policy '%s' could not follow a node change", p->ops->name);
    return LSCHED_ESTATE;
  }
  if (rc == LSCHED_ENOFIT && !lsched__can_ever_fit(c, req)) {
    if (lsched__mig_never_reason(c, req, c->errmsg, sizeof c->errmsg))
      return LSCHED_ENEVER;
    snprintf(c->errmsg, sizeof c->errmsg,
             "place: no node could ever hold %d GPU(s) x %d milli, %lld CPU "
             "milli, %lld MiB",
             req->gpu_count, req->gpu_milli, (long long)req->cpu_milli,
             (long long)req->memory_mib);
    return LSCHED_ENEVER;
  }
  if (rc == LSCHED_ENOFIT) { /* the common failure: no formatting */
    static const char nofit[] = "place: no node can take the request now";
    memcpy(c->errmsg, nofit, sizeof nofit);
    return rc;
  }
  snprintf(c->errmsg, sizeof c->errmsg, "place: policy '%s': %s",
           p->ops->name, lsched_strerror(rc));
  return rc;
}

/* A policy without an on_node_change hook follows a node change by a
 * refresh: a new zeroed state, init, then the registry, the recorded
 * parameters and the workload copy replayed; the old state is finalised
 * only once the new one stands. */
static int refresh(lsched_policy *p) {
  lsched_cluster *c = p->c;
  const lsched_policy_ops *ops = p->ops;
  void *st = NULL;
  if (ops->state_size && !(st = lsched__calloc(&c->a, 1, ops->state_size)))
    return LSCHED_ENOMEM;
  int rc = ops->init ? ops->init(st, c) : LSCHED_OK;
  if (rc) {
    lsched__free(&c->a, st);
    return rc;
  }
  if (ops->version >= 4 && ops->set_registry && p->registry)
    rc = ops->set_registry(st, p->registry);
  for (int i = 0; rc == LSCHED_OK && i < p->nparams; i += 2)
    rc = ops->set_param(st, p->params[i], p->params[i + 1]);
  if (rc == LSCHED_OK && p->workload && ops->version >= 2 && ops->set_workload)
    rc = ops->set_workload(st, c, p->workload);
  if (rc) {
    if (ops->fini)
      ops->fini(st);
    lsched__free(&c->a, st);
    return rc;
  }
  if (ops->fini)
    ops->fini(p->state);
  lsched__free(&c->a, p->state);
  p->state = st;
  return LSCHED_OK;
}

int lsched__node_changed_notify(lsched_cluster *c, int node, int change) {
  int first = LSCHED_OK;
  for (int i = 0; i < c->nattached; i++) {
    lsched_policy *p = c->attached[i];
    int rc = LSCHED_OK;
    if (has_node_hook(p->ops))
      rc = p->ops->on_node_change(p->state, c, node, change);
    else if (change != LSCHED_NODE_STATE)
      rc = refresh(p);
    if (rc) {
      p->broken = 1;
      if (first == LSCHED_OK) {
        first = rc;
        snprintf(c->errmsg, sizeof c->errmsg,
                 "node %d changed but policy '%s' could not follow (%s); it "
                 "reports LSCHED_ESTATE until destroyed",
                 node, p->ops->name, lsched_strerror(rc));
      }
    }
  }
  for (int i = 0; i < c->nobservers; i++) {
    const struct lsched__observer *o = &c->observers[i];
    if (o->ops.on_node_change)
      o->ops.on_node_change(o->user, c, node, change);
  }
  return first;
}

const char *lsched_policy_name(const lsched_policy *p) {
  return p ? p->ops->name : NULL;
}

unsigned lsched_policy_flags(const lsched_policy *p) {
  if (!p || p->ops->version < 7 || p->broken)
    return 0u; /* a broken instance's place answers LSCHED_ESTATE */
  return p->ops->flags_of ? p->ops->flags_of(p->state) : p->ops->flags;
}

int lsched_policy_create_from(lsched_policy **out, lsched_cluster *c,
                              const lsched_registry *r, const char *name) {
  if (!out)
    return LSCHED_EINVAL;
  *out = NULL;
  if (!c || !r || !name)
    return LSCHED_EINVAL;
  const lsched_policy_ops *ops = lsched_registry_find(r, name);
  if (!ops) {
    snprintf(c->errmsg, sizeof c->errmsg, "no policy named '%s'", name);
    return LSCHED_ENOENT;
  }
  lsched_policy *p;
  int rc = lsched_policy_create(&p, c, ops);
  if (rc)
    return rc;
  p->registry = r;
  if (ops->version >= 4 && ops->set_registry &&
      (rc = ops->set_registry(p->state, r)) != LSCHED_OK) {
    lsched_policy_destroy(p);
    return rc;
  }
  *out = p;
  return LSCHED_OK;
}

int lsched_policy_plan_migrations(lsched_policy *p,
                                  const lsched_request *waiting,
                                  const lsched_running *running,
                                  size_t nrunning,
                                  const lsched_defrag_budget *budget,
                                  lsched_move *out, size_t max_out,
                                  size_t *nout) {
  if (!p || !out || !nout || (nrunning && !running) ||
      lsched_request_validate(waiting) != LSCHED_OK)
    return LSCHED_EINVAL;
  if (budget && (budget->version == 0 ||
                 budget->version > LSCHED_DEFRAG_BUDGET_VERSION))
    return LSCHED_EVERSION;
  if (p->ops->version < 3 || !p->ops->plan_migrations)
    return LSCHED_ENOENT;
  /* The hook must leave the cluster as it found it: every change it makes
   * is a trial for the observers. */
  lsched__trial_begin(p->c);
  int rc = p->ops->plan_migrations(p->state, p->c, waiting, running, nrunning,
                                   budget, out, max_out, nout);
  lsched__trial_end(p->c);
  for (size_t i = 0; rc == LSCHED_OK && i < *nout && i < max_out; i++) {
    out[i].version = LSCHED_MOVE_VERSION;
    out[i].from.version = out[i].to.version = LSCHED_PLACEMENT_VERSION;
  }
  return rc;
}

/* ---------------------------------------------------------------------- */
/* Observers                                                               */

int lsched_cluster_add_observer(lsched_cluster *c, const lsched_observer *obs,
                                void *user) {
  if (!c || !obs)
    return LSCHED_EINVAL;
  if (obs->version == 0 || obs->version > LSCHED_OBSERVER_VERSION)
    return LSCHED_EVERSION;
  for (int i = 0; i < c->nobservers; i++)
    if (c->observers[i].key == obs && c->observers[i].user == user)
      return LSCHED_EEXIST;
  if (c->nobservers == c->observers_cap) {
    int nc = c->observers_cap ? c->observers_cap * 2 : 4;
    struct lsched__observer *no =
        lsched__realloc(&c->a, c->observers, (size_t)nc * sizeof *no);
    if (!no)
      return LSCHED_ENOMEM;
    c->observers = no;
    c->observers_cap = nc;
  }
  struct lsched__observer *o = &c->observers[c->nobservers++];
  /* Version 1 has every member; a later version copies only the members
   * its table has, by version, and zeroes the rest. */
  memset(&o->ops, 0, sizeof o->ops);
  if (obs->version >= 2)
    o->ops = *obs;
  else
    memcpy(&o->ops, obs, offsetof(lsched_observer, on_node_change));
  o->ops.version = LSCHED_OBSERVER_VERSION;
  o->key = obs;
  o->user = user;
  if (lsched__observers_index(c)) { /* its calls (cluster.c) */
    c->nobservers--;
    return LSCHED_ENOMEM;
  }
  return LSCHED_OK;
}

int lsched_cluster_remove_observer(lsched_cluster *c,
                                   const lsched_observer *obs, void *user) {
  if (!c || !obs)
    return LSCHED_EINVAL;
  for (int i = 0; i < c->nobservers; i++)
    if (c->observers[i].key == obs && c->observers[i].user == user) {
      memmove(&c->observers[i], &c->observers[i + 1],
              (size_t)(c->nobservers - i - 1) * sizeof *c->observers);
      c->nobservers--;
      return lsched__observers_index(c); /* fewer: cannot fail */
    }
  return LSCHED_ENOENT;
}

/* ---------------------------------------------------------------------- */
/* Node watch (policy_sdk.h): did a notice move only a node's free state?  */

struct watch_rec {
  int64_t cpu_cap, mem_cap;
  uint64_t features;
  int gpu_count, model, mode, gpu_off, mig_off, removed;
};

struct lsched_node_watch {
  lsched_allocator a;
  lsched_view v; /* as at the last call; valid when r != NULL */
  struct watch_rec *r;
  int cap;
};

static void watch_rec_of(const struct lsched_node *nd, struct watch_rec *r) {
  memset(r, 0, sizeof *r);
  r->cpu_cap = nd->cpu_cap;
  r->mem_cap = nd->mem_cap;
  r->features = nd->features;
  r->gpu_count = nd->gpu_count;
  r->model = nd->model;
  r->mode = (int)nd->mode;
  r->gpu_off = nd->gpu_off;
  r->mig_off = nd->mig_off;
  r->removed = nd->state == LSCHED_NODE_REMOVED;
}

static int view_same(const lsched_view *a, const lsched_view *b) {
  return a->n == b->n && a->ngpus == b->ngpus && a->nodes == b->nodes &&
         a->gpu_free == b->gpu_free && a->order == b->order &&
         a->pos_of == b->pos_of && a->max_cpu_cap == b->max_cpu_cap &&
         a->max_gpu_count == b->max_gpu_count &&
         a->mig_ngpus == b->mig_ngpus && a->mig_gpus == b->mig_gpus;
}

int lsched_node_watch_create(lsched_node_watch **out, const lsched_cluster *c) {
  if (!out)
    return LSCHED_EINVAL;
  *out = NULL;
  if (!c)
    return LSCHED_EINVAL;
  lsched_node_watch *w = lsched__calloc(&c->a, 1, sizeof *w);
  if (!w)
    return LSCHED_ENOMEM;
  w->a = c->a;
  *out = w;
  return LSCHED_OK;
}

void lsched_node_watch_destroy(lsched_node_watch *w) {
  if (!w)
    return;
  lsched_allocator a = w->a;
  lsched__free(&a, w->r);
  lsched__free(&a, w);
}

int lsched_node_watch_free_only(lsched_node_watch *w, const lsched_cluster *c,
                                int node, int change) {
  if (!w || !c)
    return 0;
  if (change == LSCHED_NODE_STATE)
    return 1;
  lsched_view v = LSCHED_VIEW_INIT;
  (void)lsched_cluster_view(c, &v);
  if (change == LSCHED_NODE_UPDATED && w->r && node >= 0 && node < c->n &&
      view_same(&v, &w->v)) {
    struct watch_rec now;
    watch_rec_of(&c->nodes[node], &now);
    if (memcmp(&now, &w->r[node], sizeof now) == 0)
      return 1;
  }
  /* Something else moved: take the whole snapshot again. */
  if (c->n > w->cap) {
    struct watch_rec *nr =
        lsched__realloc(&w->a, w->r, (size_t)c->n * sizeof *nr);
    if (!nr) {
      lsched__free(&w->a, w->r);
      w->r = NULL;
      w->cap = 0;
      return LSCHED_ENOMEM;
    }
    w->r = nr;
    w->cap = c->n;
  }
  if (!w->r) { /* no node at all yet */
    w->r = lsched__calloc(&w->a, 1, sizeof *w->r);
    if (!w->r)
      return LSCHED_ENOMEM;
    w->cap = 1;
  }
  for (int i = 0; i < c->n; i++)
    watch_rec_of(&c->nodes[i], &w->r[i]);
  w->v = v;
  return 0;
}
