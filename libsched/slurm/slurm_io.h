/* lsched-slurm-advisor: reading Slurm and applying decisions (libslurm). */
#ifndef LSCHED_SLURM_IO_H
#define LSCHED_SLURM_IO_H

#include "advisor.h"

/* The pins the advisor set and where they are kept (path NULL: nowhere,
 * as in --dry-run). */
typedef struct adv_state {
  adv_pins pins;
  const char *path;
} adv_state;

/* Reads nodes, partitions and jobs into *s (pending jobs sorted into Slurm's
 * priority order; a job's pin is ours per adv_pin_classify with pins). 0, or
 * -1 with err set (slurmctld unreachable, ...). */
int adv_slurm_read(adv_snapshot *s, const adv_pins *pins, char *err,
                   size_t errlen);
/* Forgets pins of jobs that are not pending in s or whose pin is not ours. */
void adv_pins_prune(adv_pins *pins, const adv_snapshot *s);
/* Applies the plan's decisions (PLACE: set req_nodes and our marker; any
 * other decision on a job the advisor pinned: clear both) and keeps the
 * state file in step. Sets each decision's applied flag and note. With
 * dry_run nothing is sent or written. Returns the number of failed updates
 * (a job that stopped pending meanwhile is not a failure), or -1 with err
 * when the state file cannot be written. */
int adv_slurm_apply(adv_plan *pl, adv_state *st, int dry_run, char *err,
                    size_t errlen);
/* Removes every pin of s that is ours (ReqNodeList cleared, our marker
 * removed, others' comment text kept). *unpinned counts them. Returns the
 * number of failed updates, or -1 with err (state file). */
int adv_slurm_unpin_all(const adv_snapshot *s, adv_state *st, int dry_run,
                        int quiet, int *unpinned, char *err, size_t errlen);
/* slurm_strerror of the last libslurm error. */
const char *adv_slurm_error(void);

#endif
