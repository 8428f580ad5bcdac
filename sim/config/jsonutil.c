#include "jsonutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *json_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

/* See json_hooks_install() in jsonutil.h (tests/test_faults.c fails each
 * allocation in turn to show that every path reports it). */
static int alloc_failed;

static void *hook_malloc(size_t n) {
  void *p = malloc(n);
  if (!p)
    alloc_failed = 1;
  return p;
}

static void hook_free(void *p) { free(p); }

void json_hooks_install(void) {
  static int installed;
  if (installed)
    return;
  cJSON_Hooks h = {hook_malloc, hook_free};
  cJSON_InitHooks(&h);
  installed = 1;
}

void json_add_item(cJSON *obj, const char *key, cJSON *item) {
  if (!cJSON_AddItemToObject(obj, key, item))
    cJSON_Delete(item);
}

void json_add_to_array(cJSON *arr, cJSON *item) {
  if (!cJSON_AddItemToArray(arr, item))
    cJSON_Delete(item);
}

int json_alloc_failed(void) {
  int f = alloc_failed;
  alloc_failed = 0;
  return f;
}

static int cmp_key(const void *a, const void *b) {
  const cJSON *const *x = a, *const *y = b;
  return strcmp((*x)->string ? (*x)->string : "",
                (*y)->string ? (*y)->string : "");
}

/* The first key that some object of the tree holds twice (cJSON would
 * keep the first silently): 0, 1 with the key in err, -1 out of memory. */
static int dup_key(const cJSON *node, const char *origin, char *err,
                   size_t errlen) {
  for (; node; node = node->next) {
    if (cJSON_IsObject(node)) {
      size_t n = 0;
      for (const cJSON *c = node->child; c; c = c->next)
        n++;
      if (n > 1) {
        const cJSON **v = malloc(n * sizeof *v);
        if (!v) {
          snprintf(err, errlen, "%s: out of memory", origin);
          return -1;
        }
        n = 0;
        for (const cJSON *c = node->child; c; c = c->next)
          v[n++] = c;
        qsort(v, n, sizeof *v, cmp_key);
        for (size_t i = 1; i < n; i++)
          if (cmp_key(&v[i - 1], &v[i]) == 0) {
            snprintf(err, errlen,
                     "%s: duplicate key '%.200s' in one object (a JSON "
                     "object holds each key once)",
                     origin, v[i]->string ? v[i]->string : "");
            free(v);
            return 1;
          }
        free(v);
      }
    }
    if (node->child) {
      int r = dup_key(node->child, origin, err, errlen);
      if (r)
        return r;
    }
  }
  return 0;
}

/* A \u0000 escape (a NUL character, which would cut the string) in the
 * text: its line, or 0. Backslashes only occur inside strings, and an
 * escape starts at an odd run of them. */
static int nul_escape_line(const char *text) {
  int line = 1;
  for (const char *p = text; *p; p++) {
    if (*p == '\n') {
      line++;
    } else if (*p == '\\') {
      if (p[1] == 'u' && p[2] == '0' && p[3] == '0' && p[4] == '0' &&
          p[5] == '0')
        return line;
      if (p[1])
        p++; /* the escaped character */
    }
  }
  return 0;
}

cJSON *json_parse_located(const char *text, const char *origin, char *err,
                          size_t errlen) {
  const char *end = NULL;
  json_hooks_install();
  json_alloc_failed();
  cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
  if (root) {
    int line = nul_escape_line(text);
    if (line) {
      snprintf(err, errlen,
               "%s:%d: a string holds \\u0000 (a NUL character; names "
               "cannot contain one)",
               origin, line);
      cJSON_Delete(root);
      return NULL;
    }
    if (dup_key(root, origin, err, errlen)) {
      cJSON_Delete(root);
      return NULL;
    }
    return root;
  }
  if (json_alloc_failed()) {
    snprintf(err, errlen, "%s: out of memory", origin);
    return NULL;
  }
  /* cJSON reports where parsing stopped; turn it into a line number. */
  int line = 1;
  const char *p = text;
  if (end)
    for (; p < end && *p; p++)
      line += *p == '\n';
  char near[32] = "";
  if (end && *end) {
    size_t k = 0;
    for (const char *q = end; *q && *q != '\n' && k < sizeof near - 1; q++)
      near[k++] = *q;
    near[k] = 0;
  }
  snprintf(err, errlen, "%s:%d: JSON syntax error near '%s'", origin, line,
           near[0] ? near : "end of file");
  return NULL;
}

char *json_read_file(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  if (!buf) {
    fclose(f);
    snprintf(err, errlen, "%s: out of memory", path);
    return NULL;
  }
  size_t got;
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (cap - n - 1 == 0) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
      }
      buf = nb;
      cap *= 2;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    snprintf(err, errlen, "%s: read error", path);
    return NULL;
  }
  buf[n] = 0;
  if (strlen(buf) != n) {
    free(buf);
    snprintf(err, errlen, "%s: contains a NUL byte (not a text file)", path);
    return NULL;
  }
  return buf;
}

int json_check_keys(const cJSON *obj, const char *const *allowed,
                    const char *origin, const char *where, char *err,
                    size_t errlen) {
  for (const cJSON *it = obj->child; it; it = it->next) {
    int ok = 0;
    for (const char *const *a = allowed; *a; a++)
      if (it->string && strcmp(it->string, *a) == 0)
        ok = 1;
    if (!ok) {
      snprintf(err, errlen, "%s: %s: unknown key '%s'", origin, where,
               it->string ? it->string : "");
      return -1;
    }
  }
  return 0;
}
