/*
 * The ABI conventions of the public structs (libsched.h, "ABI
 * conventions"; libsched/README.md, "ABI and compatibility"), as helpers
 * for the calls that fill a caller's struct.
 */
#ifndef LIBSCHED_ABI_H
#define LIBSCHED_ABI_H

#include <stddef.h>
#include <string.h>

/*
 * A struct the library fills for the caller: `full` holds every member the
 * library knows; the caller's `out` (whose first member is its unsigned
 * version) gets the members of its own version only, sizes[v] bytes for
 * version v (sizes[0] unused, nver = versions + 1); a version outside
 * 1..nver-1 counts as 1, so an uninitialised struct never receives more
 * than the oldest layout. out's version then says what was filled.
 * O(size of the struct).
 */
static inline void lsched__fill_out(void *out, void *full, const size_t *sizes,
                                    unsigned nver) {
  unsigned v = 1;
  /* With one version every value counts as 1: the caller's is not read
   * (nver is a constant at every call), so a caller that left it
   * uninitialised reads no indeterminate value (Valgrind stays quiet). */
  if (nver > 2) {
    memcpy(&v, out, sizeof v);
    if (v < 1 || v >= nver)
      v = 1;
  }
  memcpy(full, &v, sizeof v);
  memcpy(out, full, sizes[v]);
}

#endif /* LIBSCHED_ABI_H */
