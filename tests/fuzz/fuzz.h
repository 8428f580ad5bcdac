/*
 * Shared declarations of the libFuzzer targets in tests/fuzz/.
 *
 * Every target defines LLVMFuzzerTestOneInput. With clang and LSCHED_FUZZ=ON
 * it is linked with -fsanitize=fuzzer (libFuzzer's main); in the normal
 * build it is linked with replay.c, a plain main() that runs every file of
 * the target's corpus once, under ctest (tests/fuzz/CMakeLists.txt).
 *
 * A target checks the properties of its code under test and calls
 * FUZZ_CHECK for each; a failed check prints what went wrong and aborts,
 * which libFuzzer reports as a crash and the replay driver as a failure.
 */
#ifndef SCHEDSIM_FUZZ_H
#define SCHEDSIM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                  \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/*
 * The path of file `name` in this process's scratch directory (created on
 * first use under /dev/shm when it is writable, else $TMPDIR or /tmp, and
 * removed with its files at exit). The readers under test read files, so
 * each input is written there first.
 */
void fuzz_path(char *out, size_t size, const char *name);
/* Writes data to path (truncating). Aborts on I/O failure. */
void fuzz_write(const char *path, const void *data, size_t n);
/* Writes data gzip-compressed to path. Aborts on failure. */
void fuzz_write_gz(const char *path, const void *data, size_t n);

#endif
