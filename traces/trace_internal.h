/*
 * Internal helpers shared by the trace readers and writers. Not part of the
 * interface the simulator uses (that is trace.h).
 */
#ifndef SCHEDSIM_TRACE_INTERNAL_H
#define SCHEDSIM_TRACE_INTERNAL_H

#include "trace.h"

#include <stdint.h>

/* ------------------------------------------------------------- errors */

#if defined(__GNUC__)
#define TRACE_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TRACE_PRINTF(a, b)
#endif

/* Formats err->msg (no-op when err is NULL); long messages are cut. */
void trace_seterr(trace_error *err, const char *fmt, ...) TRACE_PRINTF(2, 3);

/*
 * Copies value into out (size >= 8) as printable text: bytes outside
 * 0x20..0x7e and backslashes are escaped as \xNN (so a stray CR or NUL is
 * visible), and values are cut after 60 characters with "..." appended.
 */
void trace_quote_value(char *out, size_t size, const char *v, size_t len);

/*
 * "PATH:LINE: field 'NAME': WHY (got 'VALUE')", the value quoted with
 * trace_quote_value.
 */
void trace_field_error(trace_error *err, const char *path, int line,
                       const char *field, const char *why, const char *value,
                       size_t len);

/* ------------------------------------------------------------- numbers */

/* Room for any message written by the parsers below. */
#define TRACE_WHY_MAX 96

/*
 * Parses a decimal integer in [0, max] (digits only). 0, or -1 with a
 * reason ("empty", "not an integer", "must not be negative", ...) in why.
 */
int trace_parse_int(const char *s, size_t len, int64_t max, int64_t *out,
                    char why[TRACE_WHY_MAX]);

/*
 * Parses a time in decimal seconds ("12", "12.5", "1.25e3") into
 * microseconds, rounding half up past the 6th decimal; exact (no binary
 * floating point). Rejects signs other than "-0", nan/inf, and values
 * above TRACE_MAX_TIME_S. 0, or -1 with a reason in why.
 */
int trace_parse_time_us(const char *s, size_t len, int64_t *out_us,
                        char why[TRACE_WHY_MAX]);

/* ----------------------------------------------------------- csv rows */

/* Fields kept per record; a record may have more (nfields counts all). */
#define CSVROW_MAX_FIELDS 32

/* One CSV record as delivered to a csvrow_fn. */
typedef struct csvrow {
  int line;       /* 1-based physical line where the record starts */
  size_t nfields; /* fields in the record, may exceed CSVROW_MAX_FIELDS */
  const char *field[CSVROW_MAX_FIELDS]; /* NUL-terminated copies */
  size_t len[CSVROW_MAX_FIELDS];        /* lengths (a field may hold NUL) */
} csvrow;

/* Called once per record: 0 continues, 1 stops (success), -1 stops with
 * err set. */
typedef int (*csvrow_fn)(const csvrow *row, void *user, trace_error *err);

/*
 * Reads path with libcsv and calls fn for every record, skipping a UTF-8
 * BOM and blank lines. Returns the number of records delivered (the one
 * that returned 1 included), or -1 with err set: "PATH: cannot open: ...",
 * read errors, out of memory, an unterminated quoted field.
 */
long csvrows_read(const char *path, csvrow_fn fn, void *user, trace_error *err);

/* 1 if row holds exactly the columns names[0..n) in order, else 0. */
int csvrow_is_header(const csvrow *row, const char *const *names, size_t n);

/* The record's fields joined with commas, quoted for a message. */
void csvrow_quote_joined(const csvrow *row, char *out, size_t size);

/*
 * Checks that the record has exactly ncols fields and no NUL bytes in them;
 * otherwise sets err naming the first missing field or the extra ones.
 * 0 or -1.
 */
int csvrow_check_shape(const csvrow *row, const char *const *names,
                       size_t ncols, const char *path, trace_error *err);

/* ------------------------------------------------------------ readers */

/* A trace format recognised from its header, read one record at a time. */
typedef struct trace_reader {
  enum trace_format format;
  const char *what;           /* human name for messages */
  const char *const *columns; /* the exact header */
  size_t ncolumns;
  int has_times;
  /* Appends the job of one data record to t; 0 or -1 with err set. */
  int (*row)(trace *t, const csvrow *row, const char *path, trace_error *err);
  /* Optional: runs once after the last record (Philly shifts times to the
   * earliest submit); 0 or -1 with err set. */
  int (*finish)(trace *t, const char *path, trace_error *err);
} trace_reader;

extern const trace_reader trace_alibaba_pod_reader;
extern const trace_reader trace_alibaba_multi_reader;
extern const trace_reader trace_pai_reader;
extern const trace_reader trace_tiresias_reader;
extern const trace_reader trace_tiresias_tf_reader;
extern const trace_reader trace_philly_reader;
extern const trace_reader trace_generic_reader;

/*
 * SWF (traces/swf.c), which is not CSV. trace_swf_sniff: 1 if the file
 * (plain or gzip) looks like SWF, 0 if not, -1 when it cannot be read,
 * -2 when out of memory.
 * trace_swf_load fills the empty trace t (path, format and has_times are
 * set by the caller); 0 or -1 with err set.
 */
int trace_swf_sniff(const char *path);
int trace_swf_load(trace *t, const char *path, const trace_load_opts *opts,
                   trace_error *err);
/* 1 if the file starts with the gzip magic bytes, 0 if not, -1 on I/O. */
int trace_is_gzip(const char *path);

/*
 * Parses a non-negative decimal number ("12", "12.5", "1.5e3") exactly into
 * millionths (*out = value x 10^6, rounded half up), at most
 * TRACE_MAX_TIME_S units. Same syntax as trace_parse_time_us, with
 * messages that speak of a number rather than a time. 0, or -1 with a
 * reason in why (traces/readutil.c).
 */
int trace_parse_fixed6(const char *s, size_t len, int64_t *out,
                       char why[TRACE_WHY_MAX]);

/* Appends a job, or sets "PATH:LINE: out of memory"; 0 or -1. */
int trace_add_or_oom(trace *t, const job_record *j, const char *name,
                     const char *spec, const char *path, trace_error *err);

/* The node-list header, so trace_load can say "that is a node list". */
extern const char *const node_list_columns[5];

/* Joins columns with commas into buf (cut if too small). */
void trace_join_columns(char *buf, size_t size, const char *const *cols,
                        size_t n);

#endif
