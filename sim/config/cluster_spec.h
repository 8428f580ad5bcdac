/*
 * A simulated cluster: the libsched cluster plus what only the simulator
 * needs (prices, node groups). Loaded from a JSON cluster spec (docs/DESIGN.md
 * section 7) or from an Alibaba node list CSV.
 */
#ifndef SCHEDSIM_CLUSTER_SPEC_H
#define SCHEDSIM_CLUSTER_SPEC_H

#include <libsched/libsched.h>
#include <stdint.h>

#include "catalog.h"

/* A cloud site of a cluster spec ("cloud": [...]; sim/README.md "Cloud
 * bursting"): one GPU type rented per GPU-hour. */
typedef struct sim_cloud_site {
  char *name;
  char *gpu_model;       /* the catalog's canonical name */
  double on_demand;      /* USD per GPU-hour */
  double spot;           /* USD per GPU-hour; < 0: no spot market here */
  int64_t capacity_gpus; /* -1: unlimited */
  double startup_s, transfer_s;
} sim_cloud_site;

typedef struct sim_cluster {
  lsched_cluster *c;
  char *name;
  int nodes, gpus;
  double *node_price;    /* USD per GPU-hour of each node's GPUs (0 unpriced) */
  uint8_t *node_priced;  /* 1 if node_price is known */
  int unpriced_gpus;     /* GPUs without a price: left out of costs */
  /* MIG (gpu_mode mig-static / mig-dynamic): per node, the reconfiguration
   * delay of a new instance (us) and its scope (1 = the whole node stalls,
   * 0 = per GPU); 0 for other nodes. */
  int64_t *mig_reconfig_us;
  uint8_t *mig_scope_node;
  int mig_gpus;          /* GPUs in MIG mode */
  int plain_gpus;        /* GPUs in exclusive or shared mode */
  /* Energy (sim/README.md "Energy"): per node, the idle and busy draw of
   * one of its GPUs in milliwatts (the catalog's idle_w / busy_w; -1 when
   * its model has none: its GPUs are left out and counted in
   * unpowered_gpus); the sum over nodes of node_overhead_w (milliwatts);
   * the facility's power usage effectiveness (>= 1, default 1). */
  int64_t *node_idle_mw, *node_busy_mw;
  int unpowered_gpus;
  int64_t overhead_mw;
  double pue;
  /* Cloud sites (the spec's "cloud" key; none for node CSVs). */
  sim_cloud_site *cloud;
  int ncloud;
  /* Composable GPU pools (spec key "pools"; sim/README.md "Composable GPU
   * pools"): the entries, each `count` chassis that are libsched pools
   * first_pool .. first_pool + count - 1; per node its composable slots
   * (NULL without pools; they are no GPUs of their own: sim_cluster.gpus
   * counts each chassis' GPUs once); the chassis' price per hour (USD)
   * and idle draw (mW) summed, for the cost and energy totals. */
  struct sim_pool_spec *pools;
  int npools;
  int pool_gpus;
  int *node_slots;
  double pool_price_sum;
  int64_t pool_idle_mw;
} sim_cluster;

/* Largest startup_s / transfer_s of a cloud site (30 days). */
#define SIM_MAX_CLOUD_DELAY_S 2592000.0

typedef struct sim_pool_spec {
  char name[104];
  int count, gpus, hosts_per_pool, max_per_host, first_pool;
  int64_t attach_us, detach_us;
  double fabric_speed;
} sim_pool_spec;

/* Defaults of a pool entry (../shared/data/pools/README.md). */
#define SIM_POOL_GPUS 16
#define SIM_POOL_HOSTS 4
#define SIM_POOL_MAX_PER_HOST 8
#define SIM_POOL_ATTACH_S 30.0
#define SIM_POOL_DETACH_S 10.0
#define SIM_POOL_FABRIC_SPEED 0.95

/* Composable slots of node i (0 for nodes that reach no pool). */
static inline int sim_node_slots(const sim_cluster *sc, int i) {
  return sc->node_slots ? sc->node_slots[i] : 0;
}

/* Largest pue and node_overhead_w accepted in a cluster spec. */
#define SIM_MAX_PUE 10.0
#define SIM_MAX_NODE_OVERHEAD_W 1000000.0

/* Default reconfiguration delays: 5 s per GPU; 120 s for the whole node
 * (a Kubernetes operator restarting the device plugin). */
#define SIM_MIG_RECONFIG_GPU_S 5.0
#define SIM_MIG_RECONFIG_NODE_S 120.0

/*
 * Loads a cluster from a JSON spec or an Alibaba node CSV (detected from the
 * first line). GPU models resolve through the catalog (aliases allowed); the
 * cluster's model names are the catalog's canonical names. 0, or -1 with a
 * message naming the file, line or key in err.
 */
int sim_cluster_load(sim_cluster *sc, const char *path,
                     const gpu_catalog *cat, int check_invariants, char *err,
                     size_t errlen);
/* Builds a cluster from JSON text (origin names it in errors). */
int sim_cluster_from_json(sim_cluster *sc, const char *text,
                          const char *origin, const gpu_catalog *cat,
                          int check_invariants, char *err, size_t errlen);
void sim_cluster_free(sim_cluster *sc);

/*
 * Resolves a trace's gpu_spec ("V100M16|V100M32") to a libsched model mask.
 * Returns 0 with *mask set (0 = any model when spec is empty), 1 when every
 * named model is a catalog model absent from this cluster (the job can never
 * run here), -1 with err set for a name the catalog does not know.
 */
int sim_cluster_spec_mask(const sim_cluster *sc, const gpu_catalog *cat,
                          const char *spec, uint64_t *mask, char *err,
                          size_t errlen);

/* The built-in default cluster: 16 x 8 A100-SXM4-80GB + 8 x 8 H100-SXM5-80GB
 * (the same as sim/examples/a100-h100.json). */
extern const char *const sim_default_cluster_json;

#endif
