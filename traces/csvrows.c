/*
 * Record reader on top of libcsv that knows physical line numbers.
 *
 * libcsv reports fields and rows but not where they are in the file, and
 * our error messages must say "FILE:LINE". So the file is fed to
 * csv_parse one physical line at a time (pieces ending at '\n', cut at the
 * end of the read buffer), and the line counter advances after each
 * piece. A record starts on the first non-blank line after the previous
 * record ended; a quoted field holding newlines makes a record span
 * several lines, and the next record's line is still right because the
 * counter follows the bytes, not the records.
 *
 * The reader is pulled (csvsrc_pump feeds one piece per call) so that the
 * trace stream can stop as soon as a record has given it a job; the
 * push form csvrows_read is a loop over csvsrc_pump.
 *
 * A NUL byte anywhere in the text is an error naming its line: a text
 * trace never holds one, and letting it through made field values and
 * header matching depend on where a C string happened to end (the fuzzer
 * found a file whose result changed when a BOM was put in front).
 *
 * Memory: one 64 KiB read buffer, one growable buffer holding the fields
 * of the current record, and libcsv's copy of the field being parsed,
 * together at most RECORD_MAX_BYTES (plus one piece and one libcsv
 * block); never the whole file.
 */
#include "trace_internal.h"

#include <csv.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A record longer than this is rejected: no trace line is anywhere near
 * it, and it bounds memory on a malformed file (say, one unterminated
 * quote at the top of a large file). */
#define RECORD_MAX_BYTES ((size_t)16 << 20)
#define CHUNK_BYTES ((size_t)64 << 10)

struct csvsrc {
  FILE *f;
  char *path;
  struct csv_parser p;
  int parser_ready;
  /* The callback of the current csvsrc_pump call. */
  csvrow_fn fn;
  void *user;
  trace_error *err;
  int64_t line;     /* physical line being fed, 1-based */
  int64_t row_line; /* line where the current record started */
  int row_pending;  /* no record in progress: the next one starts later */
  int stop;         /* 1: callback asked to stop; -1: error */
  int done;         /* every record has been delivered */
  int first;        /* the next read is the first one (BOM check) */
  int64_t rows;     /* records delivered */
  char *chunk;      /* read buffer: bytes [pos, n) not yet fed */
  size_t pos, n;
  char *buf;        /* fields of the current record, NUL-separated */
  size_t used, cap;
  size_t nfields;
  size_t off[CSVROW_MAX_FIELDS];
  size_t len[CSVROW_MAX_FIELDS];
};

static void on_field(void *data, size_t len, void *user) {
  csvsrc *r = user;
  if (r->stop)
    return;
  if (r->row_pending) { /* a record that began in the middle of a piece */
    r->row_line = r->line;
    r->row_pending = 0;
  }
  if (r->used + len + 1 > RECORD_MAX_BYTES) {
    trace_seterr(r->err, "%s:%" PRId64 ": record longer than %zu bytes",
                 r->path, r->row_line, RECORD_MAX_BYTES);
    r->stop = -1;
    return;
  }
  if (r->used + len + 1 > r->cap) {
    size_t cap = r->cap ? r->cap : 256;
    while (cap < r->used + len + 1)
      cap *= 2;
    char *nb = realloc(r->buf, cap);
    if (!nb) {
      trace_seterr(r->err, "%s:%" PRId64 ": out of memory", r->path,
                   r->row_line);
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
  csvsrc *r = user;
  if (r->stop)
    return;
  csvrow row;
  row.line = r->row_line;
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
static int feed(csvsrc *r, const char *s, size_t n) {
  if (memchr(s, '\0', n)) {
    trace_seterr(r->err, "%s:%" PRId64 ": NUL byte (binary data?)", r->path,
                 r->line);
    r->stop = -1;
    return -1;
  }
  if (r->row_pending && !is_blank(s, n)) {
    r->row_line = r->line;
    r->row_pending = 0;
  }
  if (csv_parse(&r->p, s, n, on_field, on_row, r) != n) {
    if (csv_error(&r->p) == CSV_EPARSE)
      trace_seterr(r->err,
                   "%s:%" PRId64 ": malformed quoting (a quote inside an "
                   "unquoted field, or text after a closing quote)",
                   r->path, r->line);
    else
      trace_seterr(r->err, "%s:%" PRId64 ": %s", r->path, r->line,
                   csv_strerror(csv_error(&r->p)));
    r->stop = -1;
    return -1;
  }
  /* libcsv keeps the field being parsed in its own buffer and hands it
   * over only when the field ends: without this check one unterminated
   * quote near the top of a large file would have it buffer the rest of
   * the file. */
  if (!r->stop && r->used + r->p.entry_pos > RECORD_MAX_BYTES) {
    trace_seterr(r->err, "%s:%" PRId64 ": record longer than %zu bytes",
                 r->path, r->row_line, RECORD_MAX_BYTES);
    r->stop = -1;
  }
  return r->stop < 0 ? -1 : 0;
}

/* (Re)starts libcsv and the counters at the top of the file. 0 or -1. */
static int start(csvsrc *r, trace_error *err) {
  if (r->parser_ready)
    csv_free(&r->p);
  r->parser_ready = 0;
  /* CSV_STRICT: a quote inside an unquoted field or text after a closing
   * quote is an error (non-strict libcsv would glue the rest of the line,
   * newlines included, into one field). CSV_STRICT_FINI (which needs
   * CSV_STRICT): an unterminated quoted field at the end of the file is an
   * error instead of silently becoming a field. */
  if (csv_init(&r->p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
    trace_seterr(err, "%s: out of memory", r->path);
    return -1;
  }
  r->parser_ready = 1;
  /* libcsv grows its field buffer by a fixed block (128 bytes by
   * default), which makes a long field quadratic: a 10 MB line took
   * minutes under AddressSanitizer (tests/test_hostile.c). 1 MiB blocks
   * bound a record of RECORD_MAX_BYTES to 16 reallocations. */
  csv_set_blk_size(&r->p, (size_t)1 << 20);
  r->line = 1;
  r->row_line = 1;
  r->row_pending = 1;
  r->stop = 0;
  r->done = 0;
  r->first = 1;
  r->rows = 0;
  r->pos = r->n = 0;
  r->used = 0;
  r->nfields = 0;
  return 0;
}

void csvsrc_close(csvsrc *r) {
  if (!r)
    return;
  if (r->parser_ready)
    csv_free(&r->p);
  if (r->f)
    fclose(r->f);
  free(r->chunk);
  free(r->buf);
  free(r->path);
  free(r);
}

int csvsrc_open(csvsrc **out, const char *path, trace_error *err) {
  *out = NULL;
  csvsrc *r = calloc(1, sizeof *r);
  if (!r) {
    trace_seterr(err, "%s: out of memory", path);
    return -1;
  }
  r->f = fopen(path, "rb");
  if (!r->f) {
    trace_seterr(err, "%s: cannot open: %s", path, strerror(errno));
    csvsrc_close(r);
    return -1;
  }
  r->path = strdup(path);
  r->chunk = malloc(CHUNK_BYTES);
  if (!r->path || !r->chunk) {
    trace_seterr(err, "%s: out of memory", path);
    csvsrc_close(r);
    return -1;
  }
  if (start(r, err) != 0) {
    csvsrc_close(r);
    return -1;
  }
  *out = r;
  return 0;
}

int csvsrc_rewind(csvsrc *r, trace_error *err) {
  if (fseek(r->f, 0, SEEK_SET) != 0) {
    trace_seterr(err, "%s: cannot rewind: %s", r->path, strerror(errno));
    return -1;
  }
  clearerr(r->f);
  return start(r, err);
}

int64_t csvsrc_records(const csvsrc *r) { return r->rows; }

size_t csvsrc_footprint(const csvsrc *r) {
  return sizeof *r + CHUNK_BYTES + r->cap + strlen(r->path) + 1;
}

int csvsrc_pump(csvsrc *r, csvrow_fn fn, void *user, trace_error *err) {
  if (r->stop < 0)
    return -1;
  if (r->done)
    return 0;
  r->fn = fn;
  r->user = user;
  r->err = err;
  if (r->pos == r->n) {
    r->pos = 0;
    r->n = fread(r->chunk, 1, CHUNK_BYTES, r->f);
    if (r->n == 0) {
      if (ferror(r->f)) {
        trace_seterr(err, "%s: read error: %s", r->path, strerror(errno));
        r->stop = -1;
        return -1;
      }
      /* The last record may lack a final newline: csv_fini delivers it. */
      if (csv_fini(&r->p, on_field, on_row, r) != 0 && !r->stop) {
        trace_seterr(err, "%s:%" PRId64 ": unterminated quoted field",
                     r->path, r->row_line);
        r->stop = -1;
      }
      r->done = 1;
      return r->stop < 0 ? -1 : 0;
    }
    /* A regular file delivers at least 3 bytes in the first read when it
     * has them, so the BOM is never split. */
    if (r->first && r->n >= 3 && memcmp(r->chunk, "\xEF\xBB\xBF", 3) == 0)
      r->pos = 3;
    r->first = 0;
    if (r->pos == r->n)
      return 1;
  }
  const char *nl = memchr(r->chunk + r->pos, '\n', r->n - r->pos);
  size_t end = nl ? (size_t)(nl - r->chunk) + 1 : r->n;
  if (feed(r, r->chunk + r->pos, end - r->pos) != 0)
    return -1;
  if (nl)
    r->line++;
  r->pos = end;
  if (r->stop > 0) { /* the callback has all it wanted */
    r->done = 1;
    return 0;
  }
  return 1;
}

int64_t csvrows_read(const char *path, csvrow_fn fn, void *user,
                     trace_error *err) {
  csvsrc *r;
  if (csvsrc_open(&r, path, err) != 0)
    return -1;
  int rc;
  while ((rc = csvsrc_pump(r, fn, user, err)) > 0)
    ;
  int64_t rows = rc < 0 ? -1 : r->rows;
  csvsrc_close(r);
  return rows;
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
                 "%s:%" PRId64 ": field '%s': missing (the record has %zu of "
                 "%zu fields: truncated line?)",
                 path, row->line, names[row->nfields], row->nfields, ncols);
    return -1;
  }
  if (row->nfields > ncols) {
    char shown[80];
    trace_quote_value(shown, sizeof shown, row->field[ncols], row->len[ncols]);
    trace_seterr(err,
                 "%s:%" PRId64 ": too many fields: the record has %zu, "
                 "expected %zu (the first extra field, after '%s', is '%s')",
                 path, row->line, row->nfields, ncols, names[ncols - 1], shown);
    return -1;
  }
  /* csvsrc refuses NUL bytes; this guards records made by other means. */
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
