/*
 * schedsim: the command-line simulator. A plain consumer of libsched, the
 * trace readers and the engine. Exit status: 0 success, 2 bad usage or bad
 * input, 1 other failure (docs/DESIGN.md section 7).
 */
#include "cli.h"
#include "fill.h"
#include "options.h"
#include "research.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
  fputs("usage: schedsim COMMAND [OPTIONS]\n"
        "\n"
        "commands:\n"
        "  run        replay a trace on a cluster with one policy\n"
        "  compare    several policies/queues/clusters on one trace, in\n"
        "             parallel: one table, compare.csv and plots\n"
        "  rightsize  one trace on several clusters: cost per unit of work\n"
        "             per cluster and job class, the cheapest within a\n"
        "             queue-time bound\n"
        "  sweep      a grid of runs from a JSON manifest, resumable,\n"
        "             merged into sweep.csv\n"
        "  fill       the FGD paper's fill mode: unallocated GPU % vs arrived %\n"
        "  demo       compare every policy on the built-in default workload\n"
        "  generate   write a synthetic trace (Alibaba pod-list format)\n"
        "  policies   list the placement policies\n"
        "  models     list the GPU catalog (prices with sources)\n"
        "  options    list every option: its commands and sweep manifest key\n"
        "\n"
        "'schedsim COMMAND --help' describes each command's options.\n"
        "'schedsim --version' prints the version.\n",
        f);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
      strcmp(cmd, "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("schedsim (libsched %s)\n", lsched_version_string());
    return 0;
  }
  if (strcmp(cmd, "run") == 0)
    return cmd_run(argc - 1, argv + 1);
  if (strcmp(cmd, "compare") == 0)
    return cmd_compare(argc - 1, argv + 1);
  if (strcmp(cmd, "rightsize") == 0)
    return cmd_rightsize(argc - 1, argv + 1);
  if (strcmp(cmd, "sweep") == 0)
    return cmd_sweep(argc - 1, argv + 1);
  if (strcmp(cmd, "fill") == 0)
    return cmd_fill(argc - 1, argv + 1);
  if (strcmp(cmd, "demo") == 0)
    return cmd_demo(argc - 1, argv + 1);
  if (strcmp(cmd, "generate") == 0)
    return cmd_generate(argc - 1, argv + 1);
  if (strcmp(cmd, "policies") == 0)
    return cmd_policies(argc - 1, argv + 1);
  if (strcmp(cmd, "models") == 0)
    return cmd_models(argc - 1, argv + 1);
  if (strcmp(cmd, "options") == 0)
    return cmd_options(argc - 1, argv + 1);
  fprintf(stderr, "schedsim: unknown command '%s'\n", cmd);
  usage(stderr);
  return 2;
}
