/*
 * Small helpers shared by the readers added for the research workflow
 * (SWF, PAI, Tiresias, Philly, generic CSV): exact decimal parsing into
 * millionths and gzip detection.
 */
#include "trace_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int trace_parse_fixed6(const char *s, size_t len, int64_t *out,
                       char why[TRACE_WHY_MAX]) {
  if (trace_parse_time_us(s, len, out, why) == 0)
    return 0;
  /* Same grammar as a time; only the words differ. */
  if (strstr(why, "time is required"))
    snprintf(why, TRACE_WHY_MAX, "empty, a number is required");
  else if (strstr(why, "not a number of seconds"))
    snprintf(why, TRACE_WHY_MAX, "not a number");
  else if (strstr(why, "too many digits"))
    snprintf(why, TRACE_WHY_MAX, "too many digits");
  else if (strstr(why, "beyond the maximum"))
    snprintf(why, TRACE_WHY_MAX, "too large (above %lld)",
             (long long)TRACE_MAX_TIME_S);
  return -1;
}

int trace_is_gzip(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  unsigned char m[2];
  size_t n = fread(m, 1, 2, f);
  fclose(f);
  return n == 2 && m[0] == 0x1f && m[1] == 0x8b;
}
