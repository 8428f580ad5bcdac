/*
 * Job traces: one job-record type for every trace format, the readers, and
 * the synthetic workload generator.
 *
 * Times are int64 microseconds from the trace's origin (the formats we read
 * give decimal seconds, read exactly to the microsecond; microseconds keep
 * all event ordering exact). Every reader reports the first bad input as
 * "FILE:LINE: field 'NAME': what is wrong" in a trace_error and returns -1;
 * nothing is half-loaded on error (the trace is left empty). Line numbers
 * and job counts are 64-bit throughout.
 *
 * A trace file can be loaded whole (trace_load_ex, a trace in memory) or
 * read one job at a time in bounded memory (trace_stream_*); the load is
 * the stream read to its end, so both give the same jobs and messages.
 */
#ifndef SCHEDSIM_TRACE_H
#define SCHEDSIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_US_PER_S INT64_C(1000000)
/* Largest time a reader accepts, in whole seconds: floor(INT64_MAX / 1e6),
 * so that every accepted time fits int64 microseconds (about 292,000
 * years). Larger values are reported as errors, never wrapped. */
#define TRACE_MAX_TIME_S INT64_C(9223372036854)
#define TRACE_MAX_TIME_US (TRACE_MAX_TIME_S * TRACE_US_PER_S)

/* The time range (README "Time range"): every time of a replay, submit,
 * start, finish, reservation, lies in [0, TRACE_MAX_TIME_US]. A trace is
 * accepted only if its jobs fit even when run one after another in file
 * order, each starting at its submit or when the one before ends,
 * whichever is later: that end is at most TRACE_MAX_TIME_US
 * (trace_horizon_add, checked by every reader). */
typedef struct trace_horizon {
  int64_t end_us; /* when the jobs so far would end, run one by one */
} trace_horizon;

/** A job (pod) as read from a trace. 64 bytes, no implicit padding. */
typedef struct job_record {
  int64_t submit_us;   /* submit (creation) time */
  int64_t duration_us; /* run time once started; -1 = unknown */
  int64_t cpu_milli;
  int64_t memory_mib;
  /* 1-based physical line in the source file (where the record starts);
   * 0 = generated. 64-bit: a trace may have more than 2^31 lines. */
  int64_t line;
  int32_t num_gpu;     /* GPUs per job */
  int32_t gpu_milli;   /* share of each GPU, 1..1000; 0 when num_gpu is 0 */
  int32_t gpu_spec;    /* index into trace.specs; -1 = any model */
  uint32_t name_off;   /* offset of the job's name in trace.names */
  uint8_t qos;         /* enum trace_qos */
  uint8_t flags;       /* TRACE_JOB_* bits */
  /* The job's class (its model name, Tiresias): 1 + an index into
   * trace.classes; 0 = none. Read by the speed model. */
  uint16_t jclass;
  /* The job's own requested time (run-time limit) in whole seconds, rounded
   * up, where its format has one (SWF field 9; longer limits are held as
   * UINT32_MAX); 0 = none. Read by --estimates trace (sim/engine/estimate.c). */
  uint32_t req_s;
} job_record;

enum trace_qos {
  TRACE_QOS_UNKNOWN = 0,
  TRACE_QOS_LS = 1,        /* latency sensitive */
  TRACE_QOS_BE = 2,        /* best effort */
  TRACE_QOS_BURSTABLE = 3,
  TRACE_QOS_GUARANTEED = 4
};

enum {
  /* The trace says the job was never scheduled (empty scheduled_time): its
   * duration is deletion - creation. */
  TRACE_JOB_NEVER_SCHEDULED = 1,
  /* The duration was not in the trace. */
  TRACE_JOB_NO_DURATION = 2,
  /* The duration is an estimate (SWF: requested time, run time missing). */
  TRACE_JOB_ESTIMATED_DURATION = 4,
  /* A spot job (generic CSV's `spot` column): job class `spot`, ranked
   * below every other class (sim/engine/preempt.c). */
  TRACE_JOB_SPOT = 8
  /* 0x80 is the engine's (sim/engine/estimate.c), never set by a reader. */
};

enum trace_format {
  TRACE_FMT_UNKNOWN = 0,
  TRACE_FMT_ALIBABA_POD = 1,      /* 11-column openb_pod_list */
  TRACE_FMT_ALIBABA_POD_MULTI = 2, /* 5-column multigpu variant, no times */
  TRACE_FMT_SWF = 3,      /* Standard Workload Format (traces/swf.c) */
  TRACE_FMT_PAI = 4,      /* Alibaba PAI 2020 task table (traces/pai.c) */
  TRACE_FMT_TIRESIAS = 5, /* Tiresias job CSV (traces/tiresias.c) */
  TRACE_FMT_PHILLY = 6,   /* Philly jobs, adaptdl layout (traces/philly.c) */
  TRACE_FMT_GENERIC = 7   /* the documented generic CSV (traces/generic.c) */
};

typedef struct trace {
  char *path;             /* copy of the file path ("<synthetic>" if made) */
  enum trace_format format;
  int has_times;          /* 0: every job arrives at 0, durations unknown */
  job_record *jobs;       /* in file order */
  size_t n, cap;
  char *names;            /* NUL-terminated names, back to back */
  size_t names_len, names_cap;
  char **specs;           /* distinct gpu_spec strings ("V100M16|V100M32") */
  int nspecs, specs_cap;
  /* Records a reader skipped by its documented rules (SWF: cancelled
   * before start, partial-execution lines, no processors, no run time;
   * PAI: tasks without start or end time); skip_note says which. */
  size_t skipped;
  const char *skip_note; /* static text, NULL when nothing was skipped */
  /* Where the durations were measured (README "Work and speed"): a GPU
   * model of the catalog (static text), or NULL for "same" (the durations
   * hold on any GPU type); measured_by_spec: a job whose GPU spec names
   * exactly one model was measured on that model instead. Set from the
   * format (trace_measurement) and by the generator. */
  const char *measured_on;
  int measured_by_spec;
  /* Distinct job class names (job_record.jclass), at most 65535. */
  char **classes;
  int nclasses, classes_cap;
} trace;

typedef struct trace_error {
  char msg[512];
} trace_error;

/** Adds job j to h: 0, or -1 with "PATH:LINE: field 'duration': ..." in
 * err (err may be NULL) when the job would leave the time range. */
int trace_horizon_add(trace_horizon *h, const job_record *j, const char *path,
                      trace_error *err);

/** Initialises an empty trace (all zero; a zeroed struct is also valid). */
void trace_init(trace *t);
/** Frees everything the trace holds and leaves it empty. NULL is a no-op. */
void trace_free(trace *t);
/** Name of job i (owned by t, valid until t changes); NULL if i >= t->n. */
const char *trace_job_name(const trace *t, size_t i);

/**
 * Reads a trace file, detecting the format from the header line (an
 * Alibaba 2023 pod list with 11 or 5 columns, or any other format
 * trace_load_ex detects). 0 on success, -1 with
 * err->msg set. An empty file or a header without jobs is an error.
 * t must be initialised; its previous contents are freed. On error t is
 * left empty. err may be NULL.
 *
 * Accepted input: UTF-8 BOM, CRLF or LF line endings, a missing final
 * newline, blank lines (skipped), RFC 4180 quoting. Times are decimal
 * seconds (a fraction and an exponent are allowed; rounded to the nearest
 * microsecond), at most TRACE_MAX_TIME_S. A gpu_spec of "" or "nan" (the
 * upstream README's spelling of "no constraint") means any model. A NUL
 * byte anywhere in the text is an error, "FILE:LINE: NUL byte (binary
 * data?)".
 */
int trace_load(trace *t, const char *path, trace_error *err);

/** Options of trace_load_ex; zero (or TRACE_LOAD_OPTS_INIT) = defaults. */
typedef struct trace_load_opts {
  /* TRACE_FMT_UNKNOWN: detect from the header (or SWF from its content).
   * Any other value forces that reader; a CSV file may then omit its
   * header line (the first record is data unless it is the header). */
  enum trace_format format;
  /* SWF: GPUs per processor; a job gets ceil(processors x rate) whole
   * GPUs. 0 means the default, 1. */
  double swf_gpus_per_proc;
} trace_load_opts;
#define TRACE_LOAD_OPTS_INIT {TRACE_FMT_UNKNOWN, 0}

/**
 * trace_load with options (opts NULL = defaults). Detects, besides the
 * Alibaba pod lists: SWF (first non-blank line a ';' comment, or 18
 * whitespace-separated numbers; gzip-compressed files are read directly),
 * the PAI 2020 task table, Tiresias, Philly and the generic CSV by their
 * exact headers (README "Traces" documents each mapping).
 */
int trace_load_ex(trace *t, const char *path, const trace_load_opts *opts,
                  trace_error *err);

/* ------------------------------------------------------------- stream */

/** A trace file read one job at a time (traces/stream.c). One stream is
 * used by one thread at a time; separate streams share nothing. */
typedef struct trace_stream trace_stream;

/**
 * Opens path like trace_load_ex: the same format detection, options and
 * messages. Reads up to the first job, so that everything a load reports
 * before its first job (cannot open, unrecognised header, "empty file",
 * "no jobs after the header", "no jobs (N records skipped: ...)", a bad
 * first record) is reported here; a Philly list is read whole once here
 * (its times are shifted to its earliest timestamp), so any error in it
 * is. 0 with *out set, or -1 with err set (err may be NULL) and *out NULL.
 *
 * Memory held by an open stream is bounded independently of the file's
 * length: a 64 KiB read buffer, the current record (at most 16 MiB, the
 * longest record a reader accepts; an SWF line at most 1 MiB), the jobs
 * of one piece of input (one line or 64 KiB; a PAI task of N instances is
 * one entry), and the table of distinct GPU specs.
 */
int trace_stream_open(trace_stream **out, const char *path,
                      const trace_load_opts *opts, trace_error *err);

/**
 * Next job in file order (never sorted: the engine checks submit order).
 * 1: *job and *name set; the name is owned by s and valid until the next
 * call on s; job->gpu_spec indexes trace_stream_meta(s)->specs (-1 = any
 * model), job->name_off is 0 and job->line is the physical line the
 * record starts on. 0: end of the file. -1: error in err (err may be
 * NULL), the same "FILE:LINE: ..." message trace_load_ex gives; jobs
 * read before the error were handed out first, and every later call
 * returns -1 with the same message.
 */
int trace_stream_next(trace_stream *s, job_record *job, const char **name,
                      trace_error *err);

/**
 * The stream's trace-wide facts: path, format, has_times, specs/nspecs,
 * and skipped/skip_note counted so far in this pass (final once next has
 * returned 0). n, jobs and names are not used (0 / NULL). The pointer is
 * valid until close; specs only grows (existing indexes and strings stay
 * valid until close, but the specs array may move: read it through the
 * pointer after each next).
 */
const trace *trace_stream_meta(const trace_stream *s);

/**
 * Starts again at the first job (the engine reads a file twice: a
 * validation pass, then the replay). The skip count restarts at 0; spec
 * indexes stay the same. 0, or -1 with err set (a file that changed
 * underneath may now fail before its first job).
 */
int trace_stream_rewind(trace_stream *s, trace_error *err);

/** Closes the file and frees everything. NULL is a no-op. */
void trace_stream_close(trace_stream *s);

/** Format by CLI name (alibaba, alibaba-multi, swf, pai, tiresias, philly,
 * generic); TRACE_FMT_UNKNOWN for anything else. */
enum trace_format trace_format_from_name(const char *name);
/** CLI name of a format ("unknown" for TRACE_FMT_UNKNOWN). */
const char *trace_format_name(enum trace_format f);
/** The column that holds a job's GPU model in format f, for messages:
 * "gpu_type" (PAI), "gpu_model" (generic), else "gpu_spec". */
const char *trace_gpu_field(enum trace_format f);
/** The GPU type the durations of format f were measured on (NULL =
 * "same": any type), and whether a job's single-model GPU spec names its
 * own (README "Work and speed"). */
void trace_measurement(enum trace_format f, const char **model, int *by_spec);
/** The accepted names, comma-separated, for messages. */
#define TRACE_FORMAT_NAMES \
  "alibaba, alibaba-multi, swf, pai, tiresias, philly, generic"

/** Index + 1 of class name in t->classes (added if new): the value of a
 * job_record's jclass; 0 for NULL or "" (no class); -1 when out of memory
 * or past 65535 classes. */
int trace_intern_class(trace *t, const char *name);

/**
 * Appends a job; name is copied; spec NULL or "" = any model, otherwise it
 * is interned in t->specs. job->name_off and job->gpu_spec are ignored and
 * set by this call. 0, or -1 when out of memory or the name arena would
 * exceed 4 GiB.
 */
int trace_add_job(trace *t, const job_record *job, const char *name,
                  const char *spec);

/** A node of a node list file (Alibaba openb_node_list_*.csv). */
typedef struct node_row {
  char *name;
  int64_t cpu_milli;
  int64_t memory_mib;
  int32_t gpus;
  char *model; /* "" when gpus is 0 */
  int32_t line;
} node_row;

typedef struct node_list {
  node_row *rows;
  size_t n, cap;
} node_list;

/** Most GPUs a node-list row may declare. */
#define NODE_LIST_MAX_GPUS 64

/** Initialises an empty node list (a zeroed struct is also valid). */
void node_list_init(node_list *nl);
/**
 * Reads `sn,cpu_milli,memory_mib,gpu,model`. 0 or -1 with err set (err may
 * be NULL). nl must be initialised; previous contents are freed; on error
 * it is left empty. gpu must be 0..NODE_LIST_MAX_GPUS and needs a model
 * when > 0; a model of "nan" counts as empty; the model of a node without
 * GPUs is stored as "". Node names must be unique.
 */
int node_list_load(node_list *nl, const char *path, trace_error *err);
/** Frees the rows and leaves nl empty. NULL is a no-op. */
void node_list_free(node_list *nl);

/** 1 if the file's first line is a node-list header, 0 if not, -1 on I/O. */
int node_list_sniff(const char *path);

/* ---------------------------------------------------------------- synth */

/** One request shape of a synthetic mix. */
typedef struct synth_shape {
  double weight;      /* relative frequency, > 0 */
  int64_t cpu_milli;
  int64_t memory_mib;
  int32_t num_gpu;
  int32_t gpu_milli;  /* per GPU; 1000 for whole GPUs */
} synth_shape;

typedef struct synth_params {
  uint64_t seed;
  size_t jobs;            /* number of jobs */
  double arrival_rate;    /* Poisson arrivals per second */
  double duration_mu;     /* lognormal parameters of duration in seconds */
  double duration_sigma;
  double max_duration_s;  /* durations are capped here (> 0) */
  const synth_shape *shapes;
  int nshapes;            /* 0 = the built-in default mix */
} synth_params;

/** Built-in default mix and parameters (documented in synth.c). */
void synth_default_params(synth_params *p);
/** The built-in default mix (count in *n). */
const synth_shape *synth_default_shapes(int *n);

/**
 * Generates p->jobs jobs into t (emptied first), seeded and deterministic:
 * inter-arrival ~ Exponential(1/rate), duration ~ LogNormal(mu, sigma)
 * rounded to whole seconds (at least 1 s, at most max_duration_s), shape
 * drawn by weight. 0 or -1 with err set for bad parameters.
 */
int synth_generate(trace *t, const synth_params *p, trace_error *err);

/** A generator drawing the jobs of synth_generate one at a time, in the
 * same order and with the same values, in constant memory. */
typedef struct synth_gen synth_gen;
/** Checks p (as synth_generate) and seeds the generator. p is copied;
 * p->shapes must stay valid until close. 0 or -1 with err set. */
int synth_gen_open(synth_gen **out, const synth_params *p, trace_error *err);
/** Job i of p->jobs: 1 with *job (gpu_spec -1, line 0) and *name ("syn-I",
 * owned by g, valid until the next call); 0 after the last job; -1 with
 * err set (a time beyond TRACE_MAX_TIME_S). */
int synth_gen_next(synth_gen *g, job_record *job, const char **name,
                   trace_error *err);
/** Frees g; NULL is a no-op. */
void synth_gen_close(synth_gen *g);

/**
 * Writes t as an 11-column Alibaba pod list. 0 or -1 with err set.
 * creation_time = submit, scheduled_time = submit, deletion_time = submit +
 * duration, pod_phase "Running"; a job flagged TRACE_JOB_NEVER_SCHEDULED is
 * written as "Pending" with an empty scheduled_time, so that loading the
 * file back gives the same records. A job without a duration (-1) cannot
 * be written (error). Times are whole seconds when exact, else up to 6
 * decimals. The file is written to PATH.tmp.PID (fileout.h) and renamed
 * over PATH only when complete.
 */
int trace_write_alibaba(const trace *t, const char *path, trace_error *err);

/**
 * The same file written job by job (constant memory). trace_writer_open
 * creates PATH.tmp.PID and writes the header; trace_writer_put checks and
 * writes one job (spec NULL or "" = any model; the checks and messages of
 * trace_write_alibaba, "job I" counting the jobs put); trace_writer_commit
 * closes and renames PATH.tmp.PID over PATH and frees w; trace_writer_abort
 * removes PATH.tmp.PID and frees w (NULL is a no-op). Each returns 0 or -1 with
 * err set. After a failed put, call abort; commit frees w either way (on
 * failure PATH.tmp.PID is removed and PATH left as it was).
 */
typedef struct trace_writer trace_writer;
int trace_writer_open(trace_writer **out, const char *path, trace_error *err);
int trace_writer_put(trace_writer *w, const job_record *job, const char *name,
                     const char *spec, trace_error *err);
int trace_writer_commit(trace_writer *w, trace_error *err);
void trace_writer_abort(trace_writer *w);

/**
 * Gives every job of t (typically a trace without times, such as the
 * 5-column Alibaba multigpu lists) a synthetic submit time and duration,
 * seeded and deterministic:
 * - durations are drawn uniformly with replacement from the durations of
 *   the jobs of `from` that have one (e.g. the Alibaba default trace);
 * - arrivals are a Poisson process in t's file order whose rate r makes
 *   the GPU demand offered during the arrival window W = n / r (each job
 *   counted for min(duration, W)) equal to `load` x cluster_gpus on
 *   average: r x g x mean(min(d, W)) = load x cluster_gpus, g = mean GPUs
 *   per job (num_gpu x gpu_milli / 1000).
 * has_times becomes 1 and TRACE_JOB_NO_DURATION is cleared. 0, or -1 with
 * err set (no durations in `from`, load or cluster_gpus not positive, no
 * GPU demand in t).
 */
int trace_synthetic_times(trace *t, const trace *from, double load,
                          int cluster_gpus, uint64_t seed, trace_error *err);

#endif
