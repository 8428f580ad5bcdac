/*
 * The GPU hardware catalog: models with memory, TFLOPS, TDP, MIG capability
 * and an on-demand price with its source and date. The default catalog is
 * sim/config/gpu_catalog.json, compiled into the binary; --catalog loads another.
 */
#ifndef SCHEDSIM_CATALOG_H
#define SCHEDSIM_CATALOG_H

#include <stddef.h>

/* One MIG profile of a model (sim/config/gpu_catalog.json "mig_profiles"). */
typedef struct gpu_mig_profile {
  char *name;        /* "3g.40gb" */
  int kind;          /* lsched_mig_kind (1..6) */
  int profile_id;    /* nvidia-smi profile ID, -1 unknown */
  double memory_gib; /* instance memory */
  int sm_count;      /* SMs of the instance, 0 unknown */
  int verified;      /* 0: inferred or unverified values (see the note) */
} gpu_mig_profile;

typedef struct gpu_model_info {
  char *name;         /* canonical name */
  char **aliases;
  int naliases;
  double memory_gib;  /* 0 = unknown */
  double bf16_tflops; /* 0 = unknown */
  double tdp_w;       /* 0 = unknown */
  int mig;
  int has_price;
  double price_per_gpu_hour;
  char *price_source;
  char *price_date;
  gpu_mig_profile *mig_profiles; /* at most one per kind, catalog order */
  int nmig;
  /* Power draw (energy, sim/README.md): idle (no job holds any of it) and
   * busy (a job holds all of it), in watts; has_power 0 = unknown (both
   * null or absent), then its GPUs are left out of energy figures. */
  int has_power;
  double idle_w, busy_w;
  char *power_source;
} gpu_model_info;

/* Largest idle_w / busy_w accepted (far above any GPU; keeps the energy
 * integrals, in integer milliwatt x milli-GPU x microseconds, exact). */
#define CATALOG_MAX_WATTS 100000.0

typedef struct gpu_catalog {
  gpu_model_info *models;
  int n;
} gpu_catalog;

/* Largest price per GPU-hour accepted anywhere (catalog, cluster spec,
 * --price): far above any real price, and small enough that every cost
 * figure stays finite (1e308 used to print "$inf" and write null into
 * summary.json; tests/cli_hostile.sh). */
#define CATALOG_MAX_PRICE 1e6

/* Loads the built-in catalog. 0, or -1 with err set. */
int catalog_load_default(gpu_catalog *cat, char *err, size_t errlen);
/* Loads a catalog file. 0, or -1 with "FILE: ..." in err. */
int catalog_load_file(gpu_catalog *cat, const char *path, char *err,
                      size_t errlen);
/* Parses catalog JSON text; origin names it in errors. */
int catalog_parse(gpu_catalog *cat, const char *text, const char *origin,
                  char *err, size_t errlen);
void catalog_free(gpu_catalog *cat);
/* Finds a model by canonical name or alias (case-insensitive), or NULL. */
const gpu_model_info *catalog_find(const gpu_catalog *cat, const char *name);
/* The profile of model m named `name` (case-insensitive), or NULL. */
const gpu_mig_profile *catalog_mig_profile(const gpu_model_info *m,
                                           const char *name);
/* The profile of model m of kind k, or NULL. */
const gpu_mig_profile *catalog_mig_kind(const gpu_model_info *m, int kind);
/* Applies "MODEL=USD" (from --price). 0, or -1 with err set. */
int catalog_override_price(gpu_catalog *cat, const char *assignment, char *err,
                           size_t errlen);

#endif
