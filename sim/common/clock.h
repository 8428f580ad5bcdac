/* Wall-clock helpers shared by the CLI, the worker pools and the benchmarks. */
#ifndef SCHEDSIM_CLOCK_H
#define SCHEDSIM_CLOCK_H

/* Seconds on the monotonic clock (for durations only). */
double sim_now_s(void);

#endif
