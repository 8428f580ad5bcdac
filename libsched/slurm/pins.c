/*
 * Which pins are the advisor's own (libc and POSIX fsync; no libslurm).
 *
 * A pin is the required node (ReqNodeList) the advisor set on a pending
 * job. Two records say it is ours, and a pin counts as ours only when both
 * agree with the job's ReqNodeList:
 *   - the state file STATE_DIR/pins, one "JOBID NODE" line per pin the
 *     advisor set (written before each update, atomically by rename);
 *   - a marker "[lsched-slurm-advisor: POLICY placed on NODE]" that the
 *     advisor appends to the job's AdminComment, keeping whatever text was
 *     there (someone else's comment stays intact; removing a pin removes
 *     only the marker).
 * A marker without a state entry (a comment copied from another job, a
 * state file lost) or a state entry without a marker (someone rewrote the
 * comment), or a ReqNodeList that differs from both (a user or operator
 * re-pinned the job), makes the pin someone else's: the advisor then leaves
 * the job alone and forgets its entry.
 */
#include "advisor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MARK_OPEN "[" ADV_MARKER " "
#define MARK_ON " placed on "

/* Finds our marker in comment: its start and length (including one space
 * before it when it is not at the start), and the node it names. */
static int marker_find(const char *comment, size_t *start, size_t *len,
                       char *node, size_t nodelen) {
  if (!comment)
    return 0;
  for (const char *p = strstr(comment, MARK_OPEN); p;
       p = strstr(p + 1, MARK_OPEN)) {
    const char *close = strchr(p, ']');
    if (!close)
      return 0;
    const char *on = strstr(p, MARK_ON);
    if (!on || on > close)
      continue;
    const char *n = on + strlen(MARK_ON);
    size_t nl = (size_t)(close - n);
    if (nl == 0 || memchr(n, ' ', nl))
      continue;
    size_t s = (size_t)(p - comment);
    if (s > 0 && comment[s - 1] == ' ')
      s--;
    if (start)
      *start = s;
    if (len)
      *len = (size_t)(close + 1 - comment) - s;
    if (node && nodelen) {
      if (nl >= nodelen)
        nl = nodelen - 1;
      memcpy(node, n, nl);
      node[nl] = '\0';
    }
    return 1;
  }
  return 0;
}

int adv_marker_node(const char *comment, char *node, size_t nodelen) {
  return marker_find(comment, NULL, NULL, node, nodelen);
}

char *adv_comment_without_marker(const char *comment) {
  size_t st, ln;
  const char *c = comment ? comment : "";
  size_t n = strlen(c);
  char *out = malloc(n + 1);
  if (!out)
    return NULL;
  if (marker_find(c, &st, &ln, NULL, 0)) {
    memcpy(out, c, st);
    memcpy(out + st, c + st + ln, n - st - ln + 1);
  } else {
    memcpy(out, c, n + 1);
  }
  return out;
}

char *adv_comment_with_marker(const char *comment, const char *policy,
                              const char *node) {
  char *base = adv_comment_without_marker(comment);
  if (!base)
    return NULL;
  size_t n = strlen(base) + strlen(MARK_OPEN) + strlen(policy) +
             strlen(MARK_ON) + strlen(node) + 3;
  char *out = malloc(n);
  if (out)
    snprintf(out, n, "%s%s%s%s%s%s]", base, *base ? " " : "", MARK_OPEN,
             policy, MARK_ON, node);
  free(base);
  return out;
}

/* ------------------------------------------------------------ state file */

static int pin_cmp(const void *a, const void *b) {
  const adv_pin *x = a, *y = b;
  return x->job < y->job ? -1 : x->job > y->job;
}

static adv_pin *pins_find(const adv_pins *p, uint32_t job) {
  adv_pin key;
  key.job = job;
  return p->n ? bsearch(&key, p->v, (size_t)p->n, sizeof key, pin_cmp) : NULL;
}

int adv_pins_index(const adv_pins *p, uint32_t job) {
  const adv_pin *e = pins_find(p, job);
  return e ? (int)(e - p->v) : -1;
}

const char *adv_pins_get(const adv_pins *p, uint32_t job) {
  const adv_pin *e = pins_find(p, job);
  return e ? e->node : NULL;
}

int adv_pins_set(adv_pins *p, uint32_t job, const char *node) {
  if (!node || !*node || strlen(node) >= ADV_NAME || strchr(node, ' '))
    return -1;
  adv_pin *e = pins_find(p, job);
  if (e) {
    if (strcmp(e->node, node) != 0) {
      snprintf(e->node, sizeof e->node, "%s", node);
      p->dirty = 1;
    }
    return 0;
  }
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 16;
    adv_pin *v = realloc(p->v, (size_t)cap * sizeof *v);
    if (!v)
      return -1;
    p->v = v;
    p->cap = cap;
  }
  /* Insertion keeps the array sorted by job id: O(pins). */
  int i = p->n;
  while (i > 0 && p->v[i - 1].job > job) {
    p->v[i] = p->v[i - 1];
    i--;
  }
  p->v[i].job = job;
  snprintf(p->v[i].node, sizeof p->v[i].node, "%s", node);
  p->n++;
  p->dirty = 1;
  return 0;
}

void adv_pins_del(adv_pins *p, uint32_t job) {
  adv_pin *e = pins_find(p, job);
  if (!e)
    return;
  size_t i = (size_t)(e - p->v);
  memmove(e, e + 1, ((size_t)p->n - i - 1) * sizeof *e);
  p->n--;
  p->dirty = 1;
}

void adv_pins_free(adv_pins *p) {
  free(p->v);
  memset(p, 0, sizeof *p);
}

adv_pin_class adv_pin_classify(const adv_pins *p, uint32_t job,
                               const char *req_nodes, const char *comment) {
  if (!req_nodes || !*req_nodes)
    return ADV_PIN_NONE;
  const char *mine = adv_pins_get(p, job);
  char marked[ADV_NAME];
  if (mine && strcmp(mine, req_nodes) == 0 &&
      adv_marker_node(comment, marked, sizeof marked) &&
      strcmp(marked, req_nodes) == 0)
    return ADV_PIN_OURS;
  return ADV_PIN_OTHER;
}

int adv_pins_load(adv_pins *p, const char *path, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  FILE *f = fopen(path, "r");
  if (!f) {
    if (errno == ENOENT)
      return 0; /* no pins yet */
    snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    return -1;
  }
  char line[256];
  long ln = 0;
  while (fgets(line, sizeof line, f)) {
    ln++;
    size_t n = strlen(line);
    if (n && line[n - 1] == '\n')
      line[--n] = '\0';
    if (n == 0 || line[0] == '#')
      continue;
    char *sp = strchr(line, ' ');
    char *end = NULL;
    errno = 0;
    unsigned long job = sp ? strtoul(line, &end, 10) : 0;
    if (!sp || end != sp || errno || job == 0 || job > UINT32_MAX ||
        line[0] < '0' || line[0] > '9' ||
        adv_pins_set(p, (uint32_t)job, sp + 1)) {
      snprintf(err, errlen, "%s:%ld: want 'JOBID NODE', got '%s'", path, ln,
               line);
      fclose(f);
      adv_pins_free(p);
      return -2;
    }
  }
  fclose(f);
  p->dirty = 0;
  return 0;
}

int adv_pins_save(adv_pins *p, const char *path, char *err, size_t errlen) {
  size_t n = strlen(path) + 8;
  char *tmp = malloc(n);
  if (!tmp) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  snprintf(tmp, n, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
    free(tmp);
    return -1;
  }
  fputs("# lsched-slurm-advisor pins 1: JOBID NODE, one per pin it set\n", f);
  for (int i = 0; i < p->n; i++)
    fprintf(f, "%lu %s\n", (unsigned long)p->v[i].job, p->v[i].node);
  int bad = ferror(f);
  bad |= fflush(f) != 0;
  bad |= fsync(fileno(f)) != 0; /* on disk before it replaces the old file */
  if (fclose(f) || bad || rename(tmp, path)) {
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    remove(tmp);
    free(tmp);
    return -1;
  }
  free(tmp);
  p->dirty = 0;
  return 0;
}
