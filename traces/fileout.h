/*
 * Output helpers shared by every writer of traces/ and sim/: the one CSV
 * field quoting rule, and the one way a result file reaches its final name
 * (written under a temporary name beside it, renamed when complete).
 *
 * traces/ is the lowest layer that both the trace writer and the simulator
 * link, so these live here; sim/output/output.h wraps the atomic file with
 * the simulator's error messages (out_open, out_commit, out_abort).
 */
#ifndef SCHEDSIM_FILEOUT_H
#define SCHEDSIM_FILEOUT_H

#include <stdio.h>

/* csv_write_field flags. */
enum {
  /* Also quote a field with a leading or trailing blank (space or tab):
   * the trace readers trim unquoted fields, so the pod-list writer needs
   * this to read its names back unchanged. */
  CSV_QUOTE_BLANKS = 1
};

/*
 * Writes s as one CSV field: as is, or in double quotes with every quote
 * doubled when it holds a comma, a quote, CR or LF (or, with
 * CSV_QUOTE_BLANKS, starts or ends with a blank).
 */
void csv_write_field(FILE *f, const char *s, int flags);

/*
 * A file being written atomically: f is open on tmp, "PATH.tmp.PID" (or
 * "PATH.tmp.PID.N" when that name exists), created exclusively, so
 * concurrent writers of one path never share a temporary file, and is renamed over path by atomic_file_commit only when every byte
 * was written and closed without error. Readers of path therefore see the
 * old file or the complete new one, never a truncated one. No fsync: a
 * crash of the machine (not of the process) may still lose the file, as
 * before these helpers existed.
 */
typedef struct atomic_file {
  FILE *f;
  char *path, *tmp;
} atomic_file;

/* Where atomic_file_commit failed. */
enum { ATOMIC_FILE_WRITE = 1, ATOMIC_FILE_RENAME = 2 };

/*
 * Opens PATH.tmp.PID for writing (mode as fopen, "w" or "wb"). 0; -1 when
 * out of memory (*a zeroed); -2 when fopen failed (errno says why; path and
 * tmp are set for a message, and atomic_file_abort frees them). So
 * atomic_file_abort after any open is right, and harmless after -1.
 */
int atomic_file_open(atomic_file *a, const char *path, const char *mode);
/*
 * Flushes and closes f; if that succeeded, renames tmp over path. 0; or
 * ATOMIC_FILE_WRITE (a write, flush or close failed) or ATOMIC_FILE_RENAME,
 * with errno set (EIO when the stream failed without one), and tmp removed.
 * f is closed either way; path and tmp stay valid (for messages) until
 * atomic_file_abort, which the caller calls after a commit too.
 */
int atomic_file_commit(atomic_file *a);
/* Closes and removes the temporary file if still open; frees path and tmp
 * and zeroes *a. A zeroed *a is a no-op. */
void atomic_file_abort(atomic_file *a);

/*
 * An anonymous temporary file for reading and writing ("w+b") in $TMPDIR
 * (/tmp when unset or empty; tmpfile() ignores $TMPDIR), already unlinked,
 * so nothing is left behind even by a killed process. NULL with errno.
 */
FILE *fileout_tmpfile(void);

/*
 * Inputs from pipes (issue #17): readers open a file more than once
 * (format sniffing, a second pass), which a pipe or FIFO cannot give. Such
 * an input is read once into a fileout_tmpfile() (the spool) and read
 * from there, under the name fileout_spool_path gives; messages name the
 * original (fileout_rename_in).
 */
/* 1 when path is "-" (standard input) or a FIFO or socket, else 0. */
int fileout_is_pipe(const char *path);
/* Copies all of path ("-" = standard input) into a new spool, rewound.
 * NULL with errno. The caller fcloses it when done. */
FILE *fileout_spool(const char *path);
/* A path that opens the spool again ("/dev/fd/N"), into buf. */
void fileout_spool_path(FILE *spool, char *buf, size_t size);
/* Replaces every occurrence of from by to in msg (size bytes), cut at
 * size - 1 bytes. */
void fileout_rename_in(char *msg, size_t size, const char *from,
                       const char *to);

#endif
