/*
 * Speed tables: the relative speed of a job class on a GPU model, per GPU
 * count (1, 2, 4, 8; consolidated on one node, and unconsolidated, spread
 * over nodes, where measured) and, optionally, how much two classes slow
 * each other when they share a GPU (sim/README.md "Work and speed").
 *
 * Two file formats are read, told apart by their top-level keys:
 * - schedsim's own ({"about", "reference", "classes": {CLASS: {MODEL:
 *   speed | {"1": s, "2": s, "4": s, "8": s, "unconsolidated": {...}}}},
 *   "interference": {"default": f}}), the format of the built-in table
 *   sim/config/speed_default.json;
 * - Gavel's simulation_throughputs.json, unchanged ({"k80": {"('CLASS',
 *   K)": {"null": steps/s, "('OTHER', K)": [own, other], ...}}, "k80_
 *   unconsolidated": ..., "p100": ..., "v100": ...}): k80 = K80, p100 =
 *   P100, v100 = V100M16 and V100M32.
 * Models are catalog models (canonical names after loading); a speed is a
 * throughput in any unit shared by the whole table (only ratios are used).
 */
#ifndef SCHEDSIM_SPEED_TABLE_H
#define SCHEDSIM_SPEED_TABLE_H

#include "catalog.h"

#include <stddef.h>

/* The interference factor per co-runner of a table that gives none
 * (Gavel's file; schedsim's without "interference"): the mean over
 * Gavel's 1,881 measured single-GPU pairs of min(1, own/isolated +
 * other/isolated), the value of the built-in table (test_speed checks
 * that they agree). */
#define SPEED_DEFAULT_INTERFERENCE 0.973

/* GPU counts with their own entries: 1, 2, 4, 8. */
#define SPEED_SCALES 4

typedef struct speed_entry {
  double cons[SPEED_SCALES];   /* consolidated, 0 = not measured */
  double uncons[SPEED_SCALES]; /* spread over nodes, 0 = not measured */
} speed_entry;

typedef struct speed_table {
  char *origin;      /* file path, or "built-in speed_default.json" */
  char **classes;
  int nclasses;
  const gpu_model_info **models; /* catalog entries */
  int nmodels;
  speed_entry *e;    /* [class * nmodels + model] */
  /* Pairwise co-location (Gavel): pair[(a * nclasses + b) * nmodels + m]
   * = the combined normalised throughput of a and b sharing one GPU of m
   * (own/isolated + other/isolated), 0 = not measured; NULL when the
   * table has none. */
  double *pair;
  double interference; /* factor per co-runner without a pair entry */
} speed_table;

/* The built-in table (catalog cat resolves its model names; models a
 * --catalog file lacks are left out). 0, or -1 with err set. */
int speed_table_load_default(speed_table *t, const gpu_catalog *cat,
                             char *err, size_t errlen);
/* A table file in either format. 0, or -1 with "FILE: key ...: what" in
 * err. */
int speed_table_load_file(speed_table *t, const char *path,
                          const gpu_catalog *cat, char *err, size_t errlen);
/* Parses table text (origin names it in errors). */
int speed_table_parse(speed_table *t, const char *text, const char *origin,
                      const gpu_catalog *cat, char *err, size_t errlen);
void speed_table_free(speed_table *t);

/* Index of a class (exact name), or -1. */
int speed_table_class(const speed_table *t, const char *name);
/* Index of a catalog model, or -1 when the table has no entry for it. */
int speed_table_model(const speed_table *t, const gpu_model_info *m);

/*
 * Speed of class c on model m with k >= 1 GPUs, consolidated (spread 0)
 * or spread over several nodes (1: the unconsolidated entry where the
 * table has one, else the consolidated one). A count without its own
 * entry takes the largest measured count below it, scaled linearly
 * (k / that count); 0 when the table has nothing for (c, m).
 */
double speed_table_speed(const speed_table *t, int c, int m, int k,
                         int spread);

/* Factor applied to class a's speed on model m for one co-runner of
 * class b on the same shared GPU: min(1, pair) where measured, else the
 * table's default. */
double speed_table_pair(const speed_table *t, int a, int b, int m);

#endif
