/* Small helpers around cJSON for strict, well-located error messages. */
#ifndef SCHEDSIM_JSONUTIL_H
#define SCHEDSIM_JSONUTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Parses text; on failure writes "ORIGIN:LINE: JSON syntax error near ..."
 * into err and returns NULL. */
cJSON *json_parse_located(const char *text, const char *origin, char *err,
                          size_t errlen);
/* Reads a whole file into a NUL-terminated buffer (caller frees). NULL with
 * "PATH: cannot open: ..." in err on failure. */
char *json_read_file(const char *path, char *err, size_t errlen);
/* 0 if every key of object obj is in the NULL-terminated list allowed;
 * otherwise -1 and "ORIGIN: WHERE: unknown key 'K'" in err. */
int json_check_keys(const cJSON *obj, const char *const *allowed,
                    const char *origin, const char *where, char *err,
                    size_t errlen);
/* Duplicates a string (NULL on out of memory). */
char *json_strdup(const char *s);

#endif
