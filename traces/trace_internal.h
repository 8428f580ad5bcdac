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
void trace_field_error(trace_error *err, const char *path, int64_t line,
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
  int64_t line;   /* 1-based physical line where the record starts */
  size_t nfields; /* fields in the record, may exceed CSVROW_MAX_FIELDS */
  const char *field[CSVROW_MAX_FIELDS]; /* NUL-terminated copies */
  size_t len[CSVROW_MAX_FIELDS];        /* lengths */
} csvrow;

/* Called once per record: 0 continues, 1 stops (success), -1 stops with
 * err set. */
typedef int (*csvrow_fn)(const csvrow *row, void *user, trace_error *err);

/*
 * A CSV file read one piece at a time (traces/csvrows.c), skipping a UTF-8
 * BOM and blank lines. Errors, all "PATH: ..." or "PATH:LINE: ...":
 * cannot open, read errors, out of memory, a NUL byte anywhere ("NUL byte
 * (binary data?)"), malformed quoting, a record over 16 MiB, an
 * unterminated quoted field.
 *
 * csvsrc_open: 0, or -1 with err set (*out is then NULL).
 * csvsrc_pump feeds the next piece of the file (at most one physical line
 *   and at most 64 KiB) to libcsv and calls fn for each record that piece
 *   completes (zero, one, or several when records end in bare CRs).
 *   1: more to come; 0: the end (every record delivered, or fn returned
 *   1); -1: error (err set; every later call returns -1 again without a
 *   message).
 * csvsrc_records: records delivered so far.
 * csvsrc_rewind: back to the first byte, counters reset. 0 or -1.
 * csvsrc_close frees everything; NULL is a no-op.
 * Memory is bounded by the read buffer and the longest record.
 */
typedef struct csvsrc csvsrc;
int csvsrc_open(csvsrc **out, const char *path, trace_error *err);
int csvsrc_pump(csvsrc *s, csvrow_fn fn, void *user, trace_error *err);
int64_t csvsrc_records(const csvsrc *s);
/* Bytes held by s (its buffers; not libcsv's copy of the current field). */
size_t csvsrc_footprint(const csvsrc *s);
int csvsrc_rewind(csvsrc *s, trace_error *err);
void csvsrc_close(csvsrc *s);

/*
 * Reads path with a csvsrc and calls fn for every record. Returns the
 * number of records delivered (the one that returned 1 included), or -1
 * with err set.
 */
int64_t csvrows_read(const char *path, csvrow_fn fn, void *user,
                     trace_error *err);

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

/*
 * Where a reader puts the jobs of the records it is given
 * (traces/stream.c): a small window that the stream hands out one job at
 * a time and empties before it reads on. A reader never sees the jobs of
 * earlier records, so nothing it does can depend on the trace length.
 */
typedef struct trace_sink {
  trace *meta;        /* specs are interned here, skips counted here */
  job_record *jobs;   /* the window, in file order */
  int64_t *instances; /* per window job: 0, or N (see add_instances) */
  size_t n, cap;
  char *names;        /* window names, NUL-terminated, back to back */
  size_t names_len, names_cap;
  uint64_t produced;  /* jobs added in this pass, instances counted */
  int64_t origin_us;  /* subtracted by readers with shift_origin */
} trace_sink;

/* Appends a job (name copied; spec NULL or "" = any model, else interned
 * into k->meta). 0, or -1 with "PATH:LINE: out of memory". */
int trace_sink_add(trace_sink *k, const job_record *j, const char *name,
                   const char *spec, const char *path, trace_error *err);
/* Appends count (1..) jobs equal to j named "JOB/TASK/i", i = 0..count-1,
 * generated one at a time as the stream hands them out (a PAI task may
 * have 100,000 instances). 0, or -1 as trace_sink_add. */
int trace_sink_add_instances(trace_sink *k, const job_record *j,
                             const char *job, const char *task, int64_t count,
                             const char *spec, const char *path,
                             trace_error *err);
/* Counts a record skipped by the reader's documented rules; note is a
 * static text saying which (trace.skip_note). */
void trace_sink_skip(trace_sink *k, const char *note);

/* A trace format recognised from its header, read one record at a time. */
typedef struct trace_reader {
  enum trace_format format;
  const char *what;           /* human name for messages */
  const char *const *columns; /* the exact header */
  size_t ncolumns;
  int has_times;
  /* Puts the job(s) of one data record into k; 0 or -1 with err set. */
  int (*row)(trace_sink *k, const csvrow *row, const char *path,
             trace_error *err);
  /* 1: submit times are shifted so that the earliest one is 0 (Philly):
   * the stream first reads the whole file with k->origin_us = 0 to find
   * the earliest submit, then reads it again with k->origin_us set, which
   * row subtracts. */
  int shift_origin;
} trace_reader;

extern const trace_reader trace_alibaba_pod_reader;
extern const trace_reader trace_alibaba_multi_reader;
extern const trace_reader trace_pai_reader;
extern const trace_reader trace_tiresias_reader;
extern const trace_reader trace_tiresias_tf_reader;
extern const trace_reader trace_philly_reader;
extern const trace_reader trace_generic_reader;
extern const trace_reader trace_generic_spot_reader;

/*
 * SWF (traces/swf.c), which is not CSV, read line by line through zlib.
 * trace_swf_sniff: 1 if the file (plain or gzip) looks like SWF, 0 if not,
 * -1 when it cannot be read, -2 when out of memory.
 * trace_swf_open: checks opts->swf_gpus_per_proc and opens; 0 or -1.
 * trace_swf_pump reads one line and puts its job (if any) into k: 1 read,
 *   0 end of file, -1 error with err set (later calls return -1 again).
 * trace_swf_end: at the end of the file with no job produced, sets the
 *   SWF "no jobs" message and returns -1; else 0.
 * trace_swf_rewind: back to the first line. 0 or -1.
 * trace_swf_close: NULL is a no-op.
 */
typedef struct swf_src swf_src;
int trace_swf_sniff(const char *path);
int trace_swf_open(swf_src **out, const char *path,
                   const trace_load_opts *opts, trace_error *err);
int trace_swf_pump(swf_src *s, trace_sink *k, trace_error *err);
int trace_swf_end(const swf_src *s, const trace_sink *k, trace_error *err);
int trace_swf_rewind(swf_src *s, trace_error *err);
void trace_swf_close(swf_src *s);
size_t trace_swf_footprint(const swf_src *s); /* bytes held by s */
/* 1 if the file starts with the gzip magic bytes, 0 if not, -1 on I/O. */
int trace_is_gzip(const char *path);

/* Bytes held by an open stream (buffers, window, spec table), for the
 * tests that check it does not grow with the file. */
size_t trace_stream_footprint(const trace_stream *s);

/* Moves the stream's path, format, has_times, specs and skip count into
 * t (whose own are unset), for trace_load_ex at the end of a stream. */
void trace_stream_take_meta(trace_stream *s, trace *t);

/* ------------------------------------------------------- the container */

/* Index of spec in t->specs, adding a copy if new; -1 when out of
 * memory. Linear search: traces have a few dozen distinct specs. */
int trace_intern_spec(trace *t, const char *spec);
/* Appends a job keeping its gpu_spec (an index into t->specs the caller
 * guarantees); name copied. 0, or -1 when out of memory or the name arena
 * would pass 4 GiB. */
int trace_append_job(trace *t, const job_record *job, const char *name);

/*
 * Parses a non-negative decimal number ("12", "12.5", "1.5e3") exactly into
 * millionths (*out = value x 10^6, rounded half up), at most
 * TRACE_MAX_TIME_S units. Same syntax as trace_parse_time_us, with
 * messages that speak of a number rather than a time. 0, or -1 with a
 * reason in why (traces/readutil.c).
 */
int trace_parse_fixed6(const char *s, size_t len, int64_t *out,
                       char why[TRACE_WHY_MAX]);

/* The node-list header, so trace_load can say "that is a node list". */
extern const char *const node_list_columns[5];

/* Joins columns with commas into buf (cut if too small). */
void trace_join_columns(char *buf, size_t size, const char *const *cols,
                        size_t n);

#endif
