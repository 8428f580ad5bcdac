/*
 * Fill mode (docs/DESIGN.md section 5): the methodology of the FGD paper. No
 * time
 * and no departures: per seed the trace's pods are shuffled, the list is
 * extended (or cut) to tune x the cluster's GPU capacity, the nodes are
 * visited in a seed-fixed random order, and each pod is placed once or
 * fails. After every pod a record of arrived, allocated and fragmented GPU
 * milli is kept; the records are binned by arrived % (0..130) as the
 * authors' analysis scripts do.
 */
#ifndef SCHEDSIM_FILL_H
#define SCHEDSIM_FILL_H

#include <stddef.h>
#include <stdint.h>

#include <libsched/libsched.h>

#include "catalog.h"
#include "cluster_spec.h"
#include "gorand.h"
#include "trace.h"

#define FILL_BINS 131 /* arrived_pct 0..130 */

/* The state after one pod. */
typedef struct fill_record {
  int64_t arrived_milli; /* GPU milli of every pod so far, failed included */
  int64_t alloc_milli;   /* allocated GPU milli */
  int64_t frag_weighted; /* fragmentation amount x workload weight */
  int64_t idle_milli;    /* idle GPU milli */
} fill_record;

/* Binned values of one seed, in percent. has[b] = 0: no record in b-1..b+1
 * (the fields are then written empty). */
typedef struct fill_bins {
  double alloc_pct[FILL_BINS];
  double frag_amount_pct[FILL_BINS];
  double frag_rate_pct[FILL_BINS];
  uint8_t has[FILL_BINS];
} fill_bins;

/* What one seed did. */
typedef struct fill_seed_result {
  uint64_t seed;
  size_t pods;   /* pods submitted after tuning */
  size_t failed; /* pods that found no node */
  fill_bins bins;
} fill_seed_result;

/* Everything a seed needs; built once per (cluster, trace). */
typedef struct fill_setup {
  sim_cluster *sc;
  const trace *t;
  const char *policy;
  double tune;                /* > 0; 1.3 in the paper */
  const lsched_workload *wl;  /* typical workload of t (may be NULL) */
  const uint64_t *spec_mask;  /* per trace spec */
  const uint8_t *spec_absent; /* per trace spec */
  const uint64_t *go_cooked;  /* gorand_cook() table; NULL: computed */
  /* The trace's pods and the cluster's nodes by name (fill_name_orders:
   * the same for every seed); NULL: sorted in each seed. */
  const uint32_t *pods_byname;
  const uint32_t *nodes_byname;
} fill_setup;

/*
 * The pod indices of fs->t and the node indices of fs->sc in byte order of
 * their names, as fill_run_seed draws over them (malloc'd; free both),
 * for fs->pods_byname / nodes_byname. 0, or -1 (out of memory).
 */
int fill_name_orders(const fill_setup *fs, uint32_t **pods_byname,
                     uint32_t **nodes_byname);

/*
 * Runs one seed. rows (may be NULL) receives one record per pod, *nrows
 * their count (malloc'd; free it). The cluster must be idle and is idle
 * again afterwards (its visit order is left at the seed's order).
 * 0; -1 with err for bad input (unknown policy); -2 internal failure.
 */
int fill_run_seed(const fill_setup *fs, uint64_t seed, fill_seed_result *out,
                  fill_record **rows, size_t *nrows, char *err, size_t errlen);

/*
 * Bins records as the authors' merge_*_discrete.py do: bin = arrived % =
 * 100 x arrived / cap_milli rounded to the nearest integer (halves to even,
 * as Python's round()); a bin's value is the mean over its records; an
 * empty bin takes the mean over the records of bins b-1 and b+1. W is the
 * workload weight (frag_weighted / W = milli). O(n + 131).
 */
void fill_bin(const fill_record *rows, size_t n, int64_t cap_milli,
              uint64_t W, fill_bins *out);

/* Median over the seeds that have bin b of the unallocated % (100 - alloc);
 * NAN when none has it. Same for the other two columns. */
double fill_median_unalloc(const fill_seed_result *r, size_t n, int b);
double fill_median_frag_amount(const fill_seed_result *r, size_t n, int b);
double fill_median_frag_rate(const fill_seed_result *r, size_t n, int b);

/*
 * Parses a seed list: "42-51", "42,43,50", "7", or a mix ("1-3,9").
 * At most max seeds. 0, or -1 with err set.
 */
int fill_parse_seeds(const char *s, uint64_t *seeds, size_t max, size_t *n,
                     char *err, size_t errlen);

/* Writes fill.csv (header + 131 rows per seed, in the given seed order). */
int fill_write_csv(const char *path, const fill_seed_result *r, size_t n,
                   char *err, size_t errlen);

/* The `schedsim fill` command. */
int cmd_fill(int argc, char **argv);

#endif
