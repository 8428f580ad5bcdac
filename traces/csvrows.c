/*
 * Record reader on top of libcsv that knows physical line numbers.
 *
 * libcsv reports fields and rows but not where they are in the file, and
 * our error messages must say "FILE:LINE". So the file is fed to
 * csv_parse one physical line at a time (pieces ending at '\n'), and the
 * line counter advances after each piece. A record starts on the first
 * non-blank line after the previous record ended; a quoted field holding
 * newlines makes a record span several lines, and the next record's line
 * is still right because the counter follows the bytes, not the records.
 *
 * Memory: one read buffer and one growable buffer holding the fields of
 * the current record; the whole file is never held in memory.
 */
#include "trace_internal.h"

#include <csv.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A record longer than this is rejected: no trace line is anywhere near
 * it, and it bounds memory on a malformed file (say, one unterminated
 * quote at the top of a large file). */
#define RECORD_MAX_BYTES ((size_t)16 << 20)

typedef struct reader {
  const char *path;
  csvrow_fn fn;
  void *user;
  trace_error *err;
  long line;       /* physical line being fed, 1-based */
  long row_line;   /* line where the current record started */
  int row_pending; /* no record in progress: the next one starts later */
  int stop;        /* 1: callback asked to stop; -1: error */
  long rows;       /* records delivered */
  char *buf;       /* fields of the current record, NUL-separated */
  size_t used, cap;
  size_t nfields;
  size_t off[CSVROW_MAX_FIELDS];
  size_t len[CSVROW_MAX_FIELDS];
} reader;

static void on_field(void *data, size_t len, void *user) {
  reader *r = user;
  if (r->stop)
    return;
  if (r->row_pending) { /* a record that began in the middle of a piece */
    r->row_line = r->line;
    r->row_pending = 0;
  }
  if (r->used + len + 1 > RECORD_MAX_BYTES) {
    trace_seterr(r->err, "%s:%ld: record longer than %zu bytes", r->path,
                 r->row_line, RECORD_MAX_BYTES);
    r->stop = -1;
    return;
  }
  if (r->used + len + 1 > r->cap) {
    size_t cap = r->cap ? r->cap : 256;
    while (cap < r->used + len + 1)
      cap *= 2;
    char *nb = realloc(r->buf, cap);
    if (!nb) {
      trace_seterr(r->err, "%s:%ld: out of memory", r->path, r->row_line);
      r->stop = -1;
      return;
    }
    r->buf = nb;
    r->cap = cap;
  }
  if (r->nfields < CSVROW_MAX_FIELDS) {
    r->off[r->nfields] = r->used;
    r->len[r->nfields] = len;
  }
  if (len > 0) /* libcsv may pass NULL for an empty field */
    memcpy(r->buf + r->used, data, len);
  r->used += len;
  r->buf[r->used++] = '\0';
  r->nfields++;
}

static void on_row(int term, void *user) {
  (void)term;
  reader *r = user;
  if (r->stop)
    return;
  if (r->row_line > INT_MAX) {
    trace_seterr(r->err, "%s: more than %d lines", r->path, INT_MAX);
    r->stop = -1;
    return;
  }
  csvrow row;
  row.line = (int)r->row_line;
  row.nfields = r->nfields;
  size_t kept = r->nfields < CSVROW_MAX_FIELDS ? r->nfields : CSVROW_MAX_FIELDS;
  for (size_t i = 0; i < kept; i++) {
    row.field[i] = r->buf + r->off[i];
    row.len[i] = r->len[i];
  }
  r->rows++;
  int rc = r->fn(&row, r->user, r->err);
  if (rc != 0)
    r->stop = rc > 0 ? 1 : -1;
  r->used = 0;
  r->nfields = 0;
  r->row_pending = 1;
}

static int is_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
      return 0;
  return 1;
}

/* Feeds one piece (part of one physical line) to libcsv. 0 or -1. */
static int feed(reader *r, struct csv_parser *p, const char *s, size_t n) {
  if (r->row_pending && !is_blank(s, n)) {
    r->row_line = r->line;
    r->row_pending = 0;
  }
  if (csv_parse(p, s, n, on_field, on_row, r) != n) {
    if (csv_error(p) == CSV_EPARSE)
      trace_seterr(r->err,
                   "%s:%ld: malformed quoting (a quote inside an unquoted "
                   "field, or text after a closing quote)",
                   r->path, r->line);
    else
      trace_seterr(r->err, "%s:%ld: %s", r->path, r->line,
                   csv_strerror(csv_error(p)));
    r->stop = -1;
    return -1;
  }
  return r->stop ? -1 : 0;
}

static long finish(reader *r, struct csv_parser *p, FILE *f) {
  csv_free(p);
  free(r->buf);
  if (f)
    fclose(f);
  return r->stop < 0 ? -1 : r->rows;
}

long csvrows_read(const char *path, csvrow_fn fn, void *user,
                  trace_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    trace_seterr(err, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  reader r = {.path = path,
              .fn = fn,
              .user = user,
              .err = err,
              .line = 1,
              .row_line = 1,
              .row_pending = 1};
  struct csv_parser p;
  /* CSV_STRICT: a quote inside an unquoted field or text after a closing
   * quote is an error (non-strict libcsv would glue the rest of the line,
   * newlines included, into one field). CSV_STRICT_FINI (which needs
   * CSV_STRICT): an unterminated quoted field at the end of the file is an
   * error instead of silently becoming a field. */
  if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
    fclose(f);
    trace_seterr(err, "%s: out of memory", path);
    return -1;
  }
  /* libcsv grows its field buffer by a fixed block (128 bytes by
   * default), which makes a long field quadratic: a 10 MB line took
   * minutes under AddressSanitizer (tests/test_hostile.c). 1 MiB blocks
   * bound a record of RECORD_MAX_BYTES to 16 reallocations. */
  csv_set_blk_size(&p, (size_t)1 << 20);
  char chunk[65536];
  size_t n;
  int first = 1;
  while (!r.stop && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    size_t pos = 0;
    /* A regular file delivers at least 3 bytes in the first read when it
     * has them, so the BOM is never split. */
    if (first && n >= 3 && memcmp(chunk, "\xEF\xBB\xBF", 3) == 0)
      pos = 3;
    first = 0;
    while (pos < n) {
      const char *nl = memchr(chunk + pos, '\n', n - pos);
      size_t end = nl ? (size_t)(nl - chunk) + 1 : n;
      if (feed(&r, &p, chunk + pos, end - pos) != 0)
        break;
      if (nl)
        r.line++;
      pos = end;
    }
  }
  if (r.stop)
    return finish(&r, &p, f);
  if (ferror(f)) {
    trace_seterr(err, "%s: read error: %s", path, strerror(errno));
    r.stop = -1;
    return finish(&r, &p, f);
  }
  /* The last record may lack a final newline: csv_fini delivers it. */
  if (csv_fini(&p, on_field, on_row, &r) != 0 && !r.stop) {
    trace_seterr(err, "%s:%ld: unterminated quoted field", path, r.row_line);
    r.stop = -1;
  }
  return finish(&r, &p, f);
}

int csvrow_is_header(const csvrow *row, const char *const *names, size_t n) {
  if (row->nfields != n || n > CSVROW_MAX_FIELDS)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (row->len[i] != strlen(names[i]) ||
        memcmp(row->field[i], names[i], row->len[i]) != 0)
      return 0;
  return 1;
}

int csvrow_check_shape(const csvrow *row, const char *const *names,
                       size_t ncols, const char *path, trace_error *err) {
  if (row->nfields < ncols) {
    trace_seterr(err,
                 "%s:%d: field '%s': missing (the record has %zu of %zu "
                 "fields: truncated line?)",
                 path, row->line, names[row->nfields], row->nfields, ncols);
    return -1;
  }
  if (row->nfields > ncols) {
    char shown[80];
    trace_quote_value(shown, sizeof shown, row->field[ncols], row->len[ncols]);
    trace_seterr(err,
                 "%s:%d: too many fields: the record has %zu, expected %zu "
                 "(the first extra field, after '%s', is '%s')",
                 path, row->line, row->nfields, ncols, names[ncols - 1], shown);
    return -1;
  }
  for (size_t i = 0; i < ncols; i++)
    if (memchr(row->field[i], '\0', row->len[i])) {
      trace_field_error(err, path, row->line, names[i], "contains a NUL byte",
                        row->field[i], row->len[i]);
      return -1;
    }
  return 0;
}

void csvrow_quote_joined(const csvrow *row, char *out, size_t size) {
  char joined[256];
  size_t o = 0;
  size_t kept =
      row->nfields < CSVROW_MAX_FIELDS ? row->nfields : CSVROW_MAX_FIELDS;
  for (size_t i = 0; i < kept && o + 1 < sizeof joined; i++) {
    if (i)
      joined[o++] = ',';
    size_t l = row->len[i];
    if (l > sizeof joined - 1 - o)
      l = sizeof joined - 1 - o;
    memcpy(joined + o, row->field[i], l);
    o += l;
  }
  trace_quote_value(out, size, joined, o);
}
