/*
 * Hostile inputs for every trace reader and the node list (issue #8, part
 * 2), one table of formats run through the same cases:
 *
 *   - CRLF line ends, a UTF-8 BOM and a missing final newline give the same
 *     records as the clean file;
 *   - a quoted field holding commas and a doubled quote is one field;
 *   - an empty file and a file with only its header are errors naming the
 *     file;
 *   - binary garbage (with NUL bytes and quotes), alone or after a header,
 *     is an error naming the file (and the line after a header);
 *   - a 10 MB line without a newline is an error naming the file; a 10 MB
 *     name in a valid record is read whole; a 17 MB record is refused;
 *   - NaN, infinities, negative, huge and beyond-2^53 values in every
 *     numeric field are errors naming the file, the line and the field,
 *     except where the format documents a meaning (PAI "nan" plan = 0, a
 *     PAI task without times is skipped, SWF fields we do not use);
 *   - a time of 2^53 + 1 microseconds is read exactly.
 *
 * Never a crash, a hang, or a silently different result. Cases that
 * tests/test_traces.c and tests/test_readers.c check for one format in
 * detail are run here for all of them; the CLI side (exit status 2, jobs
 * that no node can hold, JSON cluster specs) is tests/cli_hostile.sh.
 */
#include "testutil.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ------------------------------------------------------------ formats */

typedef struct fmt {
  const char *name;
  enum trace_format forced; /* forced format (node list: unused) */
  const char *header;       /* first line (SWF: a comment) */
  const char *rows[2];      /* two good records */
  int text_col;             /* a free-text column, -1 none */
  int gz, nodes;
} fmt;

static const fmt FMTS[] = {
    {"alibaba",
     TRACE_FMT_ALIBABA_POD,
     "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
     "creation_time,deletion_time,scheduled_time",
     {"a,1000,2048,1,500,V100M16|V100M32,LS,Running,0,100,5",
      "b,0,0,0,0,,BE,Pending,10,20,"},
     0,
     0,
     0},
    {"alibaba-multi",
     TRACE_FMT_ALIBABA_POD_MULTI,
     "name,cpu_milli,memory_mib,num_gpu,gpu_milli",
     {"a,1000,2048,1,500", "b,0,0,2,1000"},
     0,
     0,
     0},
    {"pai",
     TRACE_FMT_PAI,
     "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,"
     "plan_mem,plan_gpu,gpu_type",
     {"j1,worker,1,Terminated,100,200,600,29.296875,50,V100",
      "j2,ps,2,Failed,150.5,160,50,2,200,T4"},
     0,
     0,
     0},
    {"tiresias",
     TRACE_FMT_TIRESIAS,
     "job_id,num_gpu,submit_time,iterations,model_name,duration,interval",
     {"0,1,0,1000,resnet50,164,1", "1,8,30,500,vgg16,147,10"},
     0,
     0,
     0},
    {"tiresias-tf",
     TRACE_FMT_TIRESIAS,
     "job_id,num_gpu,submit_time,start_time,duration,model_size,"
     "aggr_interval,model_name,model_scale",
     {"9,4,5,6,20,100,1,bert,2", "10,12,11,12,20,10,1,gpt,1"},
     0,
     0,
     0},
    {"philly",
     TRACE_FMT_PHILLY,
     "timestamp,duration,num_gpus,gpu_time,cluster",
     {"2017-10-09 07:01:55,66,1,66,a", "2017-10-08 07:01:55,1,8,8,b"},
     4,
     0,
     0},
    {"generic",
     TRACE_FMT_GENERIC,
     "id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model",
     {"a,0,60,1,250,4000,16384,V100M16|V100M32", "b,1.5,,2,1000,0,0,"},
     0,
     0,
     0},
    {"swf",
     TRACE_FMT_SWF,
     "; Version: 2.2",
     {"1 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1",
      "2 10 3 -1 -1 -1 -1 16 3600 -1 0 1 1 -1 -1 -1 -1 -1"},
     -1,
     0,
     0},
    {"swf.gz",
     TRACE_FMT_SWF,
     "; Version: 2.2",
     {"1 0 -1 5 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1",
      "2 10 3 -1 -1 -1 -1 16 3600 -1 0 1 1 -1 -1 -1 -1 -1"},
     -1,
     1,
     0},
    {"nodes",
     TRACE_FMT_UNKNOWN,
     "sn,cpu_milli,memory_mib,gpu,model",
     {"n0,32000,262144,0,", "n1,96000,786432,8,V100M32"},
     0,
     0,
     1},
};
#define NFMTS ((int)(sizeof FMTS / sizeof FMTS[0]))

/* ------------------------------------------------------------ helpers */

/* Writes n bytes to DIR/name (gzip-compressed for .gz formats). */
static void put(char *path, size_t size, const fmt *f, const char *name,
                const char *text, size_t n) {
  snprintf(path, size, "%s/%s-%s", tmpdir(), f->name, name);
  if (f->gz) {
    gzFile g = gzopen(path, "wb");
    ck_assert_ptr_nonnull(g);
    if (n)
      ck_assert_int_eq(gzwrite(g, text, (unsigned)n), (int)n);
    ck_assert_int_eq(gzclose(g), Z_OK);
    return;
  }
  FILE *fp = fopen(path, "wb");
  ck_assert_ptr_nonnull(fp);
  if (n)
    ck_assert_uint_eq(fwrite(text, 1, n, fp), n);
  ck_assert_int_eq(fclose(fp), 0);
}

/* A growable text buffer. */
typedef struct buf {
  char *s;
  size_t n, cap;
} buf;

static void add(buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = 2 * (b->n + n + 1);
    b->s = realloc(b->s, b->cap);
    ck_assert_ptr_nonnull(b->s);
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = '\0';
}
static void adds(buf *b, const char *s) { add(b, s, strlen(s)); }

/* The file: optional BOM, header, rows, with `eol` after each line but the
 * last, which gets it only when final_eol. rows may replace FMTS' rows. */
static void text_of(buf *b, const fmt *f, const char *const *rows, int bom,
                    const char *eol, int final_eol) {
  b->n = 0;
  adds(b, "");
  if (bom)
    adds(b, "\xEF\xBB\xBF");
  adds(b, f->header);
  for (int i = 0; i < 2; i++) {
    adds(b, eol);
    adds(b, rows ? rows[i] : f->rows[i]);
  }
  if (final_eol)
    adds(b, eol);
}

typedef struct loaded {
  int rc;
  trace t;
  node_list nl;
  trace_error err;
} loaded;

/* Loads path as format f (forced, or detected when detect is set). */
static void load(const fmt *f, const char *path, int detect, loaded *out) {
  trace_init(&out->t);
  node_list_init(&out->nl);
  out->err.msg[0] = '\0';
  if (f->nodes) {
    out->rc = node_list_load(&out->nl, path, &out->err);
    return;
  }
  trace_load_opts o = TRACE_LOAD_OPTS_INIT;
  if (!detect)
    o.format = f->forced;
  out->rc = trace_load_ex(&out->t, path, &o, &out->err);
}

static void unload(loaded *l) {
  trace_free(&l->t);
  node_list_free(&l->nl);
}

static size_t count(const loaded *l) { return l->t.n + l->nl.n; }

/* The load failed, left nothing, and the message starts with the path,
 * then ":LINE:" when line > 0, and contains want (when not NULL). */
static void assert_fails(const loaded *l, const char *path, int line,
                         const char *want) {
  ck_assert_msg(l->rc == -1, "%s loaded (%zu records)", path, count(l));
  ck_assert_uint_eq(count(l), 0);
  char where[4200];
  snprintf(where, sizeof where, line > 0 ? "%s:%d:" : "%s:", path, line);
  ck_assert_msg(strncmp(l->err.msg, where, strlen(where)) == 0,
                "'%s' does not start with '%s'", l->err.msg, where);
  if (want)
    ck_assert_msg(strstr(l->err.msg, want) != NULL, "'%s' lacks '%s'",
                  l->err.msg, want);
}

static void assert_same(const loaded *a, const loaded *b, const char *what) {
  ck_assert_msg(a->rc == 0 && b->rc == 0, "%s: '%s' / '%s'", what, a->err.msg,
                b->err.msg);
  ck_assert_uint_eq(count(a), count(b));
  if (a->nl.n) {
    for (size_t i = 0; i < a->nl.n; i++) {
      const node_row *x = &a->nl.rows[i], *y = &b->nl.rows[i];
      ck_assert_str_eq(x->name, y->name);
      ck_assert_str_eq(x->model, y->model);
      ck_assert(x->cpu_milli == y->cpu_milli &&
                x->memory_mib == y->memory_mib && x->gpus == y->gpus &&
                x->line == y->line);
    }
    return;
  }
  ck_assert_msg(memcmp(a->t.jobs, b->t.jobs, a->t.n * sizeof *a->t.jobs) == 0,
                "%s: records differ", what);
  ck_assert_uint_eq(a->t.names_len, b->t.names_len);
  ck_assert(memcmp(a->t.names, b->t.names, a->t.names_len) == 0);
  ck_assert_int_eq(a->t.nspecs, b->t.nspecs);
  for (int s = 0; s < a->t.nspecs; s++)
    ck_assert_str_eq(a->t.specs[s], b->t.specs[s]);
}

/* ------------------------------------------------------------- cases */

/* CRLF, BOM and a missing final newline change nothing, detected or
 * forced. */
START_TEST(line_ends_and_bom) {
  const fmt *f = &FMTS[_i];
  char path[4200];
  buf b = {0};
  loaded clean, v;
  text_of(&b, f, NULL, 0, "\n", 1);
  put(path, sizeof path, f, "clean", b.s, b.n);
  load(f, path, 1, &clean);
  ck_assert_msg(clean.rc == 0, "%s", clean.err.msg);
  ck_assert_uint_ge(count(&clean), 2);
  static const struct {
    int bom;
    const char *eol;
    int final_eol;
  } variants[] = {{1, "\r\n", 1},
                  {0, "\n", 0},
                  {1, "\r\n", 0},
                  {0, "\r\n", 1},
                  {1, "\n", 1}};
  for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++) {
    text_of(&b, f, NULL, variants[k].bom, variants[k].eol,
            variants[k].final_eol);
    put(path, sizeof path, f, "variant", b.s, b.n);
    for (int detect = 0; detect < 2; detect++) {
      load(f, path, detect, &v);
      assert_same(&clean, &v, path);
      unload(&v);
    }
  }
  unload(&clean);
  free(b.s);
}
END_TEST

/* "x,y""z" is one field holding x,y"z. */
START_TEST(quoted_commas) {
  const fmt *f = &FMTS[_i];
  if (f->text_col < 0)
    return; /* SWF is not CSV: a quote is no number */
  char row[512], path[4200];
  /* Replace field text_col of the first row. */
  const char *r = f->rows[0];
  size_t o = 0;
  int col = 0;
  for (const char *p = r;; p++) {
    if (col == f->text_col && (p == r || p[-1] == ',') && col >= 0) {
      o += (size_t)snprintf(row + o, sizeof row - o, "\"x,y\"\"z\"");
      while (*p && *p != ',')
        p++;
      col = -1000;
    }
    if (!*p)
      break;
    if (*p == ',')
      col++;
    row[o++] = *p;
  }
  row[o] = '\0';
  const char *rows[2] = {row, f->rows[1]};
  buf b = {0};
  text_of(&b, f, rows, 0, "\r\n", 1);
  put(path, sizeof path, f, "quoted", b.s, b.n);
  loaded l;
  load(f, path, 1, &l);
  ck_assert_msg(l.rc == 0, "%s: %s", row, l.err.msg);
  if (f->nodes)
    ck_assert_str_eq(l.nl.rows[0].name, "x,y\"z");
  else if (f->forced == TRACE_FMT_PAI)
    ck_assert_str_eq(trace_job_name(&l.t, 0), "x,y\"z/worker/0");
  else if (f->forced != TRACE_FMT_PHILLY) /* philly: cluster is not kept */
    ck_assert_str_eq(trace_job_name(&l.t, 0), "x,y\"z");
  ck_assert_uint_ge(count(&l), 2);
  unload(&l);
  free(b.s);
}
END_TEST

START_TEST(empty_and_header_only) {
  const fmt *f = &FMTS[_i];
  char path[4200];
  loaded l;
  put(path, sizeof path, f, "empty", "", 0);
  for (int detect = 0; detect < 2; detect++) {
    load(f, path, detect, &l);
    /* An empty gzip stream is not recognised as SWF, so detection sees
     * a gzip file of another format. */
    assert_fails(&l, path, 0,
                 f->forced == TRACE_FMT_SWF && !detect ? "no jobs"
                 : f->gz ? "gzip-compressed, but not SWF"
                         : "empty file");
    unload(&l);
  }
  const char *want = f->nodes                     ? "no nodes after the header"
                     : f->forced == TRACE_FMT_SWF ? "no jobs"
                                                  : "no jobs after the header";
  for (int eol = 0; eol < 2; eol++) {
    buf b = {0};
    adds(&b, f->header);
    if (eol)
      adds(&b, "\r\n\r\n");
    put(path, sizeof path, f, "header", b.s, b.n);
    for (int detect = 0; detect < 2; detect++) {
      load(f, path, detect, &l);
      assert_fails(&l, path, 0, want);
      unload(&l);
    }
    free(b.s);
  }
}
END_TEST

/* 64 KiB of bytes from a fixed LCG: NULs, quotes, CRs, high bytes. */
static void garbage(buf *b, unsigned seed) {
  uint32_t x = seed;
  for (int i = 0; i < 65536; i++) {
    x = x * 1664525u + 1013904223u;
    char c = (char)(x >> 24);
    add(b, &c, 1);
  }
}

START_TEST(binary_garbage) {
  const fmt *f = &FMTS[_i];
  char path[4200];
  for (unsigned seed = 1; seed <= 3; seed++) {
    buf b = {0};
    garbage(&b, seed);
    put(path, sizeof path, f, "garbage", b.s, b.n);
    loaded l;
    for (int detect = 0; detect < 2; detect++) {
      load(f, path, detect, &l);
      assert_fails(&l, path, 0, NULL);
      unload(&l);
    }
    /* After a valid header and record the error names a later line. */
    buf h = {0};
    adds(&h, f->header);
    adds(&h, "\n");
    adds(&h, f->rows[0]);
    adds(&h, "\n");
    add(&h, b.s, b.n);
    put(path, sizeof path, f, "garbage2", h.s, h.n);
    load(f, path, 0, &l);
    assert_fails(&l, path, 0, NULL);
    const char *p = l.err.msg + strlen(path);
    ck_assert_msg(p[0] == ':' && atoi(p + 1) >= 3, "'%s' names no line >= 3",
                  l.err.msg);
    unload(&l);
    free(b.s);
    free(h.s);
  }
}
END_TEST

#define BIG ((size_t)10 << 20)

START_TEST(long_lines) {
  const fmt *f = &FMTS[_i];
  char path[4200];
  loaded l;
  /* 10 MB, no newline at all. */
  buf b = {0};
  char chunk[4096];
  memset(chunk, 'x', sizeof chunk);
  while (b.n < BIG)
    add(&b, chunk, sizeof chunk);
  put(path, sizeof path, f, "longline", b.s, b.n);
  for (int detect = 0; detect < 2; detect++) {
    load(f, path, detect, &l);
    assert_fails(&l, path, 0, NULL);
    unload(&l);
  }
  /* A 10 MB name in a valid record is read whole. */
  if (f->text_col == 0) {
    buf row = {0};
    add(&row, b.s, b.n);
    const char *rest = strchr(f->rows[0], ',');
    adds(&row, rest);
    const char *rows[2] = {row.s, f->rows[1]};
    buf t = {0};
    text_of(&t, f, rows, 0, "\n", 1);
    put(path, sizeof path, f, "longname", t.s, t.n);
    load(f, path, 1, &l);
    ck_assert_msg(l.rc == 0, "%s", l.err.msg);
    const char *name = f->nodes ? l.nl.rows[0].name : trace_job_name(&l.t, 0);
    size_t want = BIG + (f->forced == TRACE_FMT_PAI ? strlen("/worker/0") : 0);
    ck_assert_uint_eq(strlen(name), want);
    unload(&l);
    free(row.s);
    free(t.s);
  }
  /* A record beyond the readers' 16 MiB bound is refused, not truncated
   * (one CSV format: the bound is the shared record reader's); SWF
   * refuses lines above 1 MiB. */
  if (f->forced == TRACE_FMT_ALIBABA_POD ||
      (f->forced == TRACE_FMT_SWF && !f->gz)) {
    while (b.n < ((size_t)17 << 20))
      add(&b, chunk, sizeof chunk);
    buf t = {0};
    adds(&t, f->header);
    adds(&t, "\n");
    add(&t, b.s, b.n);
    adds(&t, "\n");
    put(path, sizeof path, f, "huge", t.s, t.n);
    load(f, path, 0, &l);
    assert_fails(&l, path, 2, "longer than");
    unload(&l);
    free(t.s);
  }
  free(b.s);
}
END_TEST

/* -------------------------------------------------- numeric fields */

/* How a column treats the hostile values. */
enum kind {
  K_TIME,      /* seconds: every hostile value is an error */
  K_INT_BIG,   /* an integer up to INT64_MAX: 2^53 + 1 is fine */
  K_INT,       /* a bounded integer: every value is an error */
  K_PLAN,      /* PAI plan_*: "nan" means 0 */
  K_PAI_TIME,  /* PAI start/end: "nan" means missing (task skipped) */
  K_UNUSED,    /* not read: anything goes */
  K_SWF_UNUSED /* not used, but must be a number */
};

typedef struct numcol {
  int fmt, col;
  const char *name;
  enum kind kind;
} numcol;

static const numcol NUMCOLS[] = {
    {0, 1, "cpu_milli", K_INT_BIG},
    {0, 2, "memory_mib", K_INT_BIG},
    {0, 3, "num_gpu", K_INT},
    {0, 4, "gpu_milli", K_INT},
    {0, 8, "creation_time", K_TIME},
    {0, 9, "deletion_time", K_TIME},
    {0, 10, "scheduled_time", K_TIME},
    {1, 1, "cpu_milli", K_INT_BIG},
    {1, 3, "num_gpu", K_INT},
    {1, 4, "gpu_milli", K_INT},
    {2, 2, "inst_num", K_INT},
    {2, 4, "start_time", K_PAI_TIME},
    {2, 5, "end_time", K_PAI_TIME},
    {2, 6, "plan_cpu", K_PLAN},
    {2, 7, "plan_mem", K_PLAN},
    {2, 8, "plan_gpu", K_PLAN},
    {3, 1, "num_gpu", K_INT},
    {3, 2, "submit_time", K_TIME},
    {3, 3, "iterations", K_UNUSED},
    {3, 5, "duration", K_TIME},
    {4, 1, "num_gpu", K_INT},
    {4, 2, "submit_time", K_TIME},
    {4, 3, "start_time", K_UNUSED},
    {4, 4, "duration", K_TIME},
    {5, 1, "duration", K_TIME},
    {5, 2, "num_gpus", K_INT},
    {5, 3, "gpu_time", K_UNUSED},
    {6, 1, "submit", K_TIME},
    {6, 2, "duration", K_TIME},
    {6, 3, "num_gpu", K_INT},
    {6, 4, "gpu_milli", K_INT},
    {6, 5, "cpu_milli", K_INT_BIG},
    {6, 6, "memory_mib", K_INT_BIG},
    {7, 1, "submit_time", K_TIME},
    {7, 2, "wait_time", K_SWF_UNUSED},
    {7, 3, "run_time", K_TIME},
    {7, 4, "allocated_processors", K_INT},
    {7, 10, "status", K_INT},
    {8, 3, "run_time", K_TIME},
    {9, 1, "cpu_milli", K_INT_BIG},
    {9, 2, "memory_mib", K_INT_BIG},
    {9, 3, "gpu", K_INT},
};
#define NNUMCOLS ((int)(sizeof NUMCOLS / sizeof NUMCOLS[0]))

static const char *const HOSTILE[] = {"nan",
                                      "NaN",
                                      "inf",
                                      "-inf",
                                      "-5",
                                      "1e400",
                                      "99999999999999999999",
                                      "9007199254740993",
                                      "0x10",
                                      "1,5"};
#define NHOSTILE (sizeof HOSTILE / sizeof HOSTILE[0])

/* Record `r` with field `col` replaced by v (separator ',' or ' '); a
 * value holding the separator is quoted. */
static void replace_field(char *out, size_t size, const char *r, int col,
                          const char *v, char sep) {
  size_t o = 0;
  int c = 0;
  int quote = strchr(v, sep) != NULL;
  for (const char *p = r;; p++) {
    if (c == col) {
      o += (size_t)snprintf(out + o, size - o, quote ? "\"%s\"" : "%s", v);
      while (*p && *p != sep)
        p++;
      c = -1000;
    }
    if (!*p)
      break;
    if (*p == sep)
      c++;
    out[o++] = *p;
  }
  out[o] = '\0';
}

/* A plain decimal number as SWF accepts it in a field it does not use. */
static int swf_number(const char *v) {
  return strcmp(v, "-5") == 0 || strcmp(v, "1e400") == 0 ||
         strcmp(v, "99999999999999999999") == 0 ||
         strcmp(v, "9007199254740993") == 0;
}

START_TEST(numbers) {
  const numcol *nc = &NUMCOLS[_i];
  const fmt *f = &FMTS[nc->fmt];
  char sep = f->forced == TRACE_FMT_SWF ? ' ' : ',';
  for (size_t h = 0; h < NHOSTILE; h++) {
    const char *v = HOSTILE[h];
    int is_nan = strcmp(v, "nan") == 0 || strcmp(v, "NaN") == 0;
    int ok;
    switch (nc->kind) {
    case K_INT_BIG:
      ok = strcmp(v, "9007199254740993") == 0;
      break;
    case K_PLAN:
    case K_PAI_TIME:
      ok = is_nan;
      break;
    case K_UNUSED:
      ok = 1;
      break;
    case K_SWF_UNUSED:
      ok = swf_number(v);
      break;
    default:
      ok = 0;
    }
    if (sep == ' ' && strchr(v, ','))
      ok = nc->kind == K_UNUSED; /* "1,5" is no SWF number */
    char row[512], path[4200];
    replace_field(row, sizeof row, f->rows[0], nc->col, v, sep);
    const char *rows[2] = {row, f->rows[1]};
    buf b = {0};
    text_of(&b, f, rows, 0, "\n", 1);
    put(path, sizeof path, f, "num", b.s, b.n);
    loaded l;
    load(f, path, 0, &l);
    if (ok) {
      ck_assert_msg(l.rc == 0, "'%s' in %s.%s: %s", v, f->name, nc->name,
                    l.err.msg);
      /* A PAI task whose time is "nan" has no time: it is skipped. */
      if (nc->kind == K_PAI_TIME)
        ck_assert_uint_eq(l.t.skipped, 1);
    } else {
      char want[128];
      snprintf(want, sizeof want, "field '%s'", nc->name);
      ck_assert_msg(l.rc == -1, "'%s' in %s.%s loaded", v, f->name, nc->name);
      assert_fails(&l, path, 2, want);
    }
    unload(&l);
    free(b.s);
  }
}
END_TEST

/* 2^53 + 1 microseconds: an int64 holds it, a double would not. */
START_TEST(time_beyond_2_53_exact) {
  static const struct {
    int fmt, col;
    int duration;  /* 1: check duration_us, 0: submit_us */
    int64_t minus; /* what the expected value is offset by */
  } cases[] = {
      {0, 9, 1, 5000000},   /* alibaba deletion - scheduled */
      {2, 5, 1, 100000000}, /* PAI end - start */
      {3, 2, 0, 0},         {4, 2, 0, 0}, {5, 1, 1, 0},
      {6, 1, 0, 0},         {7, 1, 0, 0}, {8, 3, 1, 0},
  };
  const int64_t x = INT64_C(9007199254740993);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const fmt *f = &FMTS[cases[k].fmt];
    char sep = f->forced == TRACE_FMT_SWF ? ' ' : ',';
    char row[512], path[4200];
    replace_field(row, sizeof row, f->rows[0], cases[k].col,
                  "9007199254.740993", sep);
    const char *rows[2] = {row, f->rows[1]};
    buf b = {0};
    text_of(&b, f, rows, 0, "\n", 1);
    put(path, sizeof path, f, "t53", b.s, b.n);
    loaded l;
    load(f, path, 0, &l);
    ck_assert_msg(l.rc == 0, "%s: %s", f->name, l.err.msg);
    const job_record *j = &l.t.jobs[0];
    int64_t got = cases[k].duration ? j->duration_us : j->submit_us;
    /* Philly submit times are shifted to the earliest; SWF durations come
     * from run_time. */
    ck_assert_msg(got == x - cases[k].minus, "%s: %lld", f->name,
                  (long long)got);
    unload(&l);
    free(b.s);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("hostile");
  TCase *tc = tcase_create("files");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, line_ends_and_bom, 0, NFMTS);
  tcase_add_loop_test(tc, quoted_commas, 0, NFMTS);
  tcase_add_loop_test(tc, empty_and_header_only, 0, NFMTS);
  tcase_add_loop_test(tc, binary_garbage, 0, NFMTS);
  tcase_add_loop_test(tc, long_lines, 0, NFMTS);
  suite_add_tcase(s, tc);
  tc = tcase_create("numbers");
  tcase_add_loop_test(tc, numbers, 0, NNUMCOLS);
  tcase_add_test(tc, time_beyond_2_53_exact);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(suite()); }
