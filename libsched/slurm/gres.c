/*
 * Parsers for the GRES and TRES strings Slurm 22.05 hands out (the formats
 * are documented by example in README "lsched-slurm-advisor"):
 *   node gres        gpu:a100:8(S:0-1),shard:a100:32
 *   node gres_used   gpu:a100:4(IDX:2-5),shard:a100:2(IDX:0-1)
 *   job gres_detail  gpu:a100:2(IDX:0-1)      shard:3(IDX:0)
 *   job tres_per_*   gres:gpu:a100:2   gres:gpu:2   gres:shard:4
 *                    (newer Slurm: gres/gpu:a100=2)
 * Lists are split on commas outside parentheses, because an index list such
 * as IDX:0,2-3 carries commas of its own. Every parser is linear in the
 * length of its input and never allocates.
 */
#include "advisor.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Calls fn on each top-level comma separated item of s (items may be
 * empty). */
typedef void (*item_fn)(const char *item, size_t len, void *ctx);

static void for_each_item(const char *s, item_fn fn, void *ctx) {
  if (!s)
    return;
  int depth = 0;
  const char *start = s;
  for (const char *p = s;; p++) {
    if (*p == '(')
      depth++;
    else if (*p == ')' && depth > 0)
      depth--;
    if (*p == '\0' || (*p == ',' && depth == 0)) {
      if (p > start)
        fn(start, (size_t)(p - start), ctx);
      if (*p == '\0')
        return;
      start = p + 1;
    }
  }
}

/* One item "name[:type][:count][(detail)]" split into its parts. */
typedef struct gres_item {
  char name[ADV_NAME];
  char type[ADV_NAME];
  long count;        /* 1 when absent */
  int has_count;
  const char *paren; /* inside the parentheses, or NULL */
  size_t paren_len;
} gres_item;

static int all_digits(const char *s, size_t n) {
  if (n == 0)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!isdigit((unsigned char)s[i]))
      return 0;
  return 1;
}

static void copy_tok(char *dst, size_t cap, const char *s, size_t n) {
  if (n >= cap)
    n = cap - 1;
  memcpy(dst, s, n);
  dst[n] = '\0';
}

/* Splits an item at ':' and '=' (and strips a "gres:"/"gres/" prefix when
 * strip_gres is set). Returns the number of tokens seen. */
static int parse_item(const char *item, size_t len, int strip_gres,
                      gres_item *out) {
  memset(out, 0, sizeof *out);
  out->count = 1;
  const char *end = item + len;
  const char *lp = memchr(item, '(', len);
  if (lp) {
    const char *rp = memchr(lp, ')', (size_t)(end - lp));
    out->paren = lp + 1;
    out->paren_len = (size_t)((rp ? rp : end) - (lp + 1));
    end = lp;
  }
  if (strip_gres && end - item > 5 &&
      (strncmp(item, "gres:", 5) == 0 || strncmp(item, "gres/", 5) == 0))
    item += 5;
  const char *tok[4];
  size_t tlen[4];
  int nt = 0;
  const char *start = item;
  for (const char *p = item;; p++) {
    if (p == end || *p == ':' || *p == '=') {
      if (nt < 4) {
        tok[nt] = start;
        tlen[nt] = (size_t)(p - start);
      }
      nt++;
      if (p == end)
        break;
      start = p + 1;
    }
  }
  if (nt > 4)
    return nt;
  copy_tok(out->name, sizeof out->name, tok[0], tlen[0]);
  int last = nt - 1;
  if (last >= 1 && all_digits(tok[last], tlen[last])) {
    char num[24];
    copy_tok(num, sizeof num, tok[last], tlen[last]);
    out->count = strtol(num, NULL, 10);
    out->has_count = 1;
    last--;
  }
  if (last >= 1)
    copy_tok(out->type, sizeof out->type, tok[1], tlen[1]);
  if (last >= 2)
    return 99; /* name:type:extra:count is not a form we know */
  return nt;
}

uint64_t adv_parse_idx(const char *s, size_t len) {
  uint64_t mask = 0;
  const char *end = s + len;
  const char *p = s;
  while (p < end) {
    if (!isdigit((unsigned char)*p)) {
      p++;
      continue;
    }
    long a = 0, b;
    while (p < end && isdigit((unsigned char)*p) && a < 100000)
      a = a * 10 + (*p++ - '0');
    b = a;
    if (p < end && *p == '-') {
      p++;
      b = 0;
      while (p < end && isdigit((unsigned char)*p) && b < 100000)
        b = b * 10 + (*p++ - '0');
    }
    for (long i = a; i <= b && i < 64; i++)
      mask |= UINT64_C(1) << i;
  }
  return mask;
}

/* The IDX mask of an item's parentheses ("IDX:0-1", "S:0-1" is not one). */
static uint64_t item_idx(const gres_item *it) {
  if (!it->paren)
    return 0;
  const char *p = it->paren;
  size_t n = it->paren_len;
  for (size_t i = 0; i + 4 <= n; i++)
    if (strncmp(p + i, "IDX:", 4) == 0)
      return adv_parse_idx(p + i + 4, n - i - 4);
  return 0;
}

int adv_is_mig_like(const char *type) {
  const char *p = type;
  if (!isdigit((unsigned char)*p))
    return 0;
  while (isdigit((unsigned char)*p))
    p++;
  if (tolower((unsigned char)*p) != 'g' || p[1] != '.')
    return 0;
  p += 2;
  if (!isdigit((unsigned char)*p))
    return 0;
  while (isdigit((unsigned char)*p))
    p++;
  return strncasecmp(p, "gb", 2) == 0;
}

/* Slurm names MIG GRES types after NVIDIA's profiles, "<slices>g.<memory>gb"
 * ("1g.10gb", "3g.40gb"). The kind follows from the compute slices; 1g.*
 * is taken as LSCHED_MIG_1G (1G_2X differs only in memory, and every
 * instance is mirrored on a GPU of its own, so it does not matter here).
 * libsched is getting its own profile-name parser (issue #16 items 3-4);
 * this small table can then give way to it. */
int adv_mig_kind_of(const char *type) {
  if (!type || !adv_is_mig_like(type))
    return -1;
  switch (atoi(type)) {
  case 1: return LSCHED_MIG_1G;
  case 2: return LSCHED_MIG_2G;
  case 3: return LSCHED_MIG_3G;
  case 4: return LSCHED_MIG_4G;
  case 7: return LSCHED_MIG_7G;
  default: return -1;
  }
}

int adv_list_has(const char *list, const char *word) {
  if (!list || !word)
    return 0;
  size_t wl = strlen(word);
  const char *p = list;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == wl && strncmp(p, word, n) == 0)
      return 1;
    if (!e)
      break;
    p = e + 1;
  }
  return 0;
}

/* ------------------------------------------------------------ node gres */

typedef struct node_ctx {
  adv_node *n;
  int next_index;
  int bad;
} node_ctx;

static void node_item(const char *item, size_t len, void *vctx) {
  node_ctx *ctx = vctx;
  adv_node *n = ctx->n;
  gres_item it;
  if (parse_item(item, len, 0, &it) > 3) {
    ctx->bad = 1;
    return;
  }
  if (strcmp(it.name, "shard") == 0) {
    n->shards += (int)it.count;
  } else if (strcmp(it.name, "gpu") == 0) {
    if (n->ntypes == ADV_MAX_TYPES) {
      ctx->bad = 1;
      return;
    }
    adv_gpu_type *t = &n->types[n->ntypes++];
    snprintf(t->name, sizeof t->name, "%s", it.type);
    t->count = (int)it.count;
    t->first = ctx->next_index;
    t->mig_like = adv_is_mig_like(it.type);
    ctx->next_index += t->count;
  }
}

int adv_node_parse_gres(adv_node *n, const char *gres, char *err,
                        size_t errlen) {
  node_ctx ctx = {n, 0, 0};
  n->ntypes = 0;
  n->shards = 0;
  n->mirror_type = -1;
  n->gpu_count = 0;
  n->shards_per_gpu = 0;
  if (gres && strcmp(gres, "(null)") != 0)
    for_each_item(gres, node_item, &ctx);
  if (ctx.bad) {
    snprintf(err, errlen, "node %s: GRES '%s' not understood", n->name,
             gres);
    return -1;
  }
  int nonmig = 0;
  for (int i = 0; i < n->ntypes; i++) {
    if (n->types[i].mig_like)
      continue;
    if (n->mirror_type < 0)
      n->mirror_type = i;
    nonmig++;
  }
  if (n->mirror_type >= 0) {
    n->gpu_count = n->types[n->mirror_type].count;
    if (n->gpu_count > LSCHED_MAX_GPUS_PER_NODE)
      n->gpu_count = LSCHED_MAX_GPUS_PER_NODE;
  }
  /* Shards are spread evenly over the GPUs in 22.05 (gres.conf gives them
   * the GPUs' files). The mirror needs whole shards per GPU dividing 1000
   * to turn shards into exact milli. */
  if (n->shards > 0 && nonmig == 1 && n->ntypes == 1 && n->gpu_count > 0 &&
      n->shards % n->gpu_count == 0) {
    int spg = n->shards / n->gpu_count;
    if (spg > 0 && LSCHED_GPU_MILLI % spg == 0)
      n->shards_per_gpu = spg;
  }
  return 0;
}

/* -------------------------------------------------------------- GPU use */

static int mirror_range(const adv_node *n, int *first) {
  if (n->mirror_type < 0)
    return 0;
  *first = n->types[n->mirror_type].first;
  return n->gpu_count;
}

typedef struct use_ctx {
  adv_node *n;
  int from_node; /* gres_used rather than a job's detail */
} use_ctx;

static void use_item(const char *item, size_t len, void *vctx) {
  use_ctx *ctx = vctx;
  adv_node *n = ctx->n;
  gres_item it;
  if (parse_item(item, len, 0, &it) > 3)
    return;
  int first = 0, cnt = mirror_range(n, &first);
  uint64_t idx = item_idx(&it);
  int is_gpu = strcmp(it.name, "gpu") == 0;
  int is_shard = strcmp(it.name, "shard") == 0;
  if (is_gpu)
    n->idx_used |= idx; /* MIG instances are read from this */
  if (cnt == 0 || idx == 0 || (!is_gpu && !is_shard))
    return;
  int bits = 0, only = -1;
  for (int i = 0; i < 64; i++)
    if (idx >> i & 1) {
      bits++;
      only = i;
    }
  for (int i = 0; i < 64; i++) {
    if (!(idx >> i & 1) || i < first || i >= first + cnt)
      continue;
    int g = i - first;
    if (is_gpu) {
      n->whole[g] = 1;
    } else if (ctx->from_node) {
      /* gres_used counts GPUs with shards, not shards: only a GPU that no
       * job detail accounted for is taken whole (conservative). */
      if (n->shard_used[g] == 0)
        n->shard_unknown[g] = 1;
    } else if (bits == 1 && i == only && it.has_count) {
      n->shard_used[g] += (int)it.count;
    } else {
      n->shard_unknown[g] = 1; /* shards over several GPUs: split unknown */
    }
  }
}

void adv_node_apply_job_detail(adv_node *n, const char *detail) {
  use_ctx ctx = {n, 0};
  for_each_item(detail, use_item, &ctx);
}

void adv_node_apply_gres_used(adv_node *n, const char *gres_used) {
  use_ctx ctx = {n, 1};
  for_each_item(gres_used, use_item, &ctx);
}

int adv_shard_milli(const adv_node *n, int k) {
  if (n->shards_per_gpu <= 0)
    return LSCHED_GPU_MILLI;
  int64_t m = (int64_t)k * (LSCHED_GPU_MILLI / n->shards_per_gpu);
  return m > LSCHED_GPU_MILLI ? LSCHED_GPU_MILLI : (int)m;
}

int adv_node_gpu_used_milli(const adv_node *n, int g) {
  if (n->whole[g] || n->shard_unknown[g])
    return LSCHED_GPU_MILLI;
  if (n->shard_used[g] > 0)
    return adv_shard_milli(n, n->shard_used[g]);
  return 0;
}

/* ------------------------------------------------------------ job TRES */

typedef struct tres_ctx {
  char *type;
  size_t typelen;
  int *count, *shard;
  int found, bad;
} tres_ctx;

static void tres_item(const char *item, size_t len, void *vctx) {
  tres_ctx *ctx = vctx;
  gres_item it;
  /* TRES lists may also be separated by ';'. */
  const char *semi = memchr(item, ';', len);
  if (semi) {
    tres_item(item, (size_t)(semi - item), vctx);
    tres_item(semi + 1, len - (size_t)(semi - item) - 1, vctx);
    return;
  }
  if (len == 0)
    return;
  if (parse_item(item, len, 1, &it) > 3) {
    ctx->bad = 1;
    return;
  }
  int is_gpu = strcmp(it.name, "gpu") == 0;
  int is_shard = strcmp(it.name, "shard") == 0;
  if (!is_gpu && !is_shard) {
    ctx->bad = 1;
    return;
  }
  if (ctx->found) {
    ctx->bad = 1; /* gpu and shard, or two GPU types */
    return;
  }
  ctx->found = 1;
  snprintf(ctx->type, ctx->typelen, "%s", it.type);
  *ctx->count = (int)it.count;
  *ctx->shard = is_shard;
}

int adv_parse_tres_gpu(const char *tres, char *type, size_t typelen,
                       int *count, int *shard) {
  tres_ctx ctx = {type, typelen, count, shard, 0, 0};
  type[0] = '\0';
  *count = 0;
  *shard = 0;
  if (!tres || !*tres)
    return 1;
  for_each_item(tres, tres_item, &ctx);
  if (ctx.bad)
    return -1;
  return ctx.found ? 0 : 1;
}
