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

/*
 * cJSON reports neither a failed allocation while parsing (it says "syntax
 * error") nor one while building (the member is silently left out, so a
 * summary.json would be written without it). json_hooks_install() makes
 * cJSON allocate through malloc/free wrappers that remember a failure
 * (process-wide; idempotent); json_alloc_failed() returns 1 if an
 * allocation failed since the previous call, and clears the flag. Call
 * both before building a document, and json_alloc_failed() again before
 * writing it. json_parse_located() does this itself.
 */
void json_hooks_install(void);
int json_alloc_failed(void);
/* cJSON_AddItemToObject / cJSON_AddItemToArray that free item when it
 * cannot be added (out of memory, or a NULL container): cJSON leaves it to
 * the caller, and the writers that pass a freshly made item leaked it. */
void json_add_item(cJSON *obj, const char *key, cJSON *item);
void json_add_to_array(cJSON *arr, cJSON *item);

#endif
