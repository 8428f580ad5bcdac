/*
 * `schedsim sweep MANIFEST --emit-slurm DIR`: the sweep as a Slurm job array
 * (README "Sweeps on Slurm"). Array task i runs the manifest's run i with
 * `schedsim sweep MANIFEST --out OUT --task i`, writing OUT/runs/<run-id>/
 * exactly as a local sweep does; a merge job that waits for the whole array
 * (afterany) reruns `schedsim sweep MANIFEST --out OUT`, which runs any run a
 * failed task left missing and merges every run into OUT/sweep.csv. The same
 * manifest therefore gives the same sweep.csv locally and on Slurm.
 */
#ifndef SCHEDSIM_SWEEP_SLURM_H
#define SCHEDSIM_SWEEP_SLURM_H

#include <stddef.h>

typedef struct sweep_slurm_opts {
  const char *dir;      /* where sweep.sbatch, merge.sbatch, submit.sh go */
  const char *manifest; /* the manifest as given */
  const char *outdir;   /* the sweep's --out */
  size_t runs;          /* runs in the manifest (array 1..runs) */
  int max_running;      /* array tasks at once (%K); 0 = no limit */
} sweep_slurm_opts;

/*
 * Writes DIR/sweep.sbatch, DIR/merge.sbatch and DIR/submit.sh (creating DIR,
 * DIR/logs and OUT), with absolute paths to this schedsim binary, the
 * manifest and OUT. 0, or -1 with err set.
 */
int sweep_emit_slurm(const sweep_slurm_opts *o, char *err, size_t errlen);

#endif
