/* lsched-slurm-advisor: reading Slurm and applying decisions (libslurm). */
#ifndef LSCHED_SLURM_IO_H
#define LSCHED_SLURM_IO_H

#include "advisor.h"

/* Start of the admin_comment the advisor writes on a job it pinned; a later
 * cycle revises only pins that carry it. */
#define ADV_MARKER "lsched-slurm-advisor:"

/* Reads nodes, partitions and jobs into *s (pending jobs sorted into Slurm's
 * priority order). 0, or -1 with err set (slurmctld unreachable, ...). */
int adv_slurm_read(adv_snapshot *s, char *err, size_t errlen);
/* Applies the plan's decisions (PLACE: set req_nodes; NOFIT/REJECT of a job
 * the advisor pinned earlier: clear it). Sets each decision's applied flag
 * and note. With dry_run nothing is sent. Returns the number of failed
 * updates (a job that stopped pending meanwhile is not a failure). */
int adv_slurm_apply(adv_plan *pl, int dry_run);
/* slurm_strerror of the last libslurm error. */
const char *adv_slurm_error(void);

#endif
