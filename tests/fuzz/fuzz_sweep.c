/*
 * Fuzz target: the `schedsim sweep` manifest (sweep_manifest_check: the
 * JSON schema, relative paths, labels, parameters, the grid of runs),
 * parsed without loading inputs or running anything.
 *
 * Checks: a manifest either loads with a grid of 1..1,000,000 runs, or
 * fails with a message that starts with the manifest's path.
 */
#include "fuzz.h"
#include "research.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[512];
  fuzz_path(path, sizeof path, "manifest.json");
  fuzz_write(path, data, size);
  char err[1024] = "";
  size_t runs = 0;
  int rc = sweep_manifest_check(path, &runs, err, sizeof err);
  if (rc == 0) {
    FUZZ_CHECK(runs >= 1 && runs <= 1000000, "%zu runs", runs);
    return 0;
  }
  FUZZ_CHECK(rc == -1, "rc %d", rc);
  size_t pl = strlen(path);
  FUZZ_CHECK(strncmp(err, path, pl) == 0 && err[pl] == ':',
             "message does not start with the path: '%s'", err);
  return 0;
}
