/*
 * Error messages and exact number parsing for the trace readers.
 *
 * Numbers are parsed by hand rather than with strtoll/strtod: strtoll
 * accepts leading spaces, signs and hex-ish prefixes that a trace must not
 * contain, and strtod would round decimal seconds through binary floating
 * point, so "0.000001" might not become exactly 1 microsecond.
 */
#include "trace_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void trace_seterr(trace_error *err, const char *fmt, ...) {
  if (!err)
    return;
  /* Formatted whole first: a long path (up to PATH_MAX) would otherwise
   * cut the message before its line, field and reason (issue #17). A
   * message that does not fit loses the middle of a path longer than 200
   * bytes (the text up to the first ':' followed by a digit or a blank),
   * keeping 40 bytes on each side; only what still does not fit is cut at
   * the end (as every message was, and still is under a shorter path). */
  char full[8192];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(full, sizeof full, fmt, ap);
  va_end(ap);
  if (n < 0) {
    snprintf(err->msg, sizeof err->msg, "error message could not be made");
    return;
  }
  size_t len = strlen(full), room = sizeof err->msg - 1, keep = 40;
  size_t path = 0;
  while (full[path] && !(full[path] == ':' &&
                         ((full[path + 1] >= '0' && full[path + 1] <= '9') ||
                          full[path + 1] == ' ')))
    path++;
  if (len > room && full[path] && path > 200) {
    size_t cut = len - room + 3; /* bytes to drop, "..." included */
    if (cut > path - 2 * keep)
      cut = path - 2 * keep;
    memcpy(full + keep, "...", 3);
    memmove(full + keep + 3, full + keep + cut, len - keep - cut + 1);
    len = strlen(full);
  }
  if (len > room)
    full[room] = '\0';
  memcpy(err->msg, full, (len > room ? room : len) + 1);
}

void trace_quote_value(char *out, size_t size, const char *v, size_t len) {
  const size_t limit = 60;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    /* Keep room for one escape, "..." and the NUL. */
    if (o >= limit || o + 8 > size) {
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    unsigned char c = (unsigned char)v[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out[o++] = (char)c;
    } else {
      snprintf(out + o, size - o, "\\x%02x", c);
      o += 4;
    }
  }
  out[o] = '\0';
}

void trace_field_error(trace_error *err, const char *path, int64_t line,
                       const char *field, const char *why, const char *value,
                       size_t len) {
  char shown[80];
  trace_quote_value(shown, sizeof shown, value ? value : "", value ? len : 0);
  trace_seterr(err, "%s:%" PRId64 ": field '%s': %s (got '%s')", path, line,
               field, why, shown);
}

/* Case-insensitive "nan", "inf", "infinity" after an optional sign: these
 * get their own message because a pandas export writes them for missing
 * values, and "not a finite number" tells the user what happened. */
static int is_nonfinite_word(const char *s, size_t len) {
  if (len > 0 && (s[0] == '-' || s[0] == '+'))
    s++, len--;
  static const char *const words[] = {"nan", "inf", "infinity"};
  for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
    size_t wl = strlen(words[w]);
    if (len != wl)
      continue;
    size_t i = 0;
    while (i < wl && (s[i] | 0x20) == words[w][i])
      i++;
    if (i == wl)
      return 1;
  }
  return 0;
}

int trace_parse_int(const char *s, size_t len, int64_t max, int64_t *out,
                    char why[TRACE_WHY_MAX]) {
  if (len == 0) {
    snprintf(why, TRACE_WHY_MAX, "empty, a number is required");
    return -1;
  }
  if (is_nonfinite_word(s, len)) {
    snprintf(why, TRACE_WHY_MAX, "not a finite number");
    return -1;
  }
  size_t i = 0;
  int neg = s[0] == '-';
  if (neg)
    i = 1;
  if (i == len) {
    snprintf(why, TRACE_WHY_MAX, "not an integer");
    return -1;
  }
  uint64_t v = 0;
  int overflow = 0;
  for (; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') {
      snprintf(why, TRACE_WHY_MAX, "not an integer");
      return -1;
    }
    unsigned d = (unsigned)(s[i] - '0');
    /* Saturate instead of wrapping; INT64_MAX fits in uint64 with room. */
    if (v > ((uint64_t)INT64_MAX - d) / 10)
      overflow = 1;
    else
      v = v * 10 + d;
  }
  if (neg && (v != 0 || overflow)) {
    snprintf(why, TRACE_WHY_MAX, "must not be negative");
    return -1;
  }
  if (overflow) {
    snprintf(why, TRACE_WHY_MAX, "integer overflow (above %lld)",
             (long long)INT64_MAX);
    return -1;
  }
  if ((int64_t)v > max) {
    snprintf(why, TRACE_WHY_MAX, "above the limit of %lld", (long long)max);
    return -1;
  }
  *out = (int64_t)v;
  return 0;
}

/* Significant digits kept by the time parser. 40 is far more than the 19
 * digits an int64 can hold; a time with more digits than that is rejected
 * as malformed rather than silently rounded. */
#define TIME_MAX_DIGITS 40

int trace_parse_time_us(const char *s, size_t len, int64_t *out_us,
                        char why[TRACE_WHY_MAX]) {
  if (len == 0) {
    snprintf(why, TRACE_WHY_MAX, "empty, a time is required");
    return -1;
  }
  if (is_nonfinite_word(s, len)) {
    snprintf(why, TRACE_WHY_MAX, "not a finite number");
    return -1;
  }
  size_t i = 0;
  int neg = 0;
  if (s[0] == '-' || s[0] == '+')
    neg = s[0] == '-', i = 1;

  /* Mantissa: significant digits (leading zeros dropped) and the number of
   * them that came after the decimal point. */
  char dig[TIME_MAX_DIGITS];
  int ndig = 0, nfrac = 0, seen_digit = 0, seen_dot = 0;
  for (; i < len; i++) {
    char c = s[i];
    if (c == '.' && !seen_dot) {
      seen_dot = 1;
    } else if (c >= '0' && c <= '9') {
      seen_digit = 1;
      if (ndig == 0 && c == '0') {
        if (seen_dot)
          nfrac++;
        continue;
      }
      if (ndig == TIME_MAX_DIGITS) {
        snprintf(why, TRACE_WHY_MAX, "too many digits for a time");
        return -1;
      }
      dig[ndig++] = c;
      if (seen_dot)
        nfrac++;
    } else {
      break;
    }
  }
  if (!seen_digit) {
    snprintf(why, TRACE_WHY_MAX, "not a number of seconds");
    return -1;
  }
  /* Optional exponent, saturated at +-100000 (enough to tell "too large"
   * from "rounds to zero"; no overflow in the arithmetic below). */
  long exp10 = 0;
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    int eneg = 0;
    if (i < len && (s[i] == '-' || s[i] == '+'))
      eneg = s[i] == '-', i++;
    if (i == len) {
      snprintf(why, TRACE_WHY_MAX, "not a number of seconds");
      return -1;
    }
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
      if (exp10 < 100000)
        exp10 = exp10 * 10 + (s[i] - '0');
    if (eneg)
      exp10 = -exp10;
  }
  if (i != len) {
    snprintf(why, TRACE_WHY_MAX, "not a number of seconds");
    return -1;
  }

  /* value in microseconds = digits x 10^k. */
  long k = exp10 - nfrac + 6;
  uint64_t v = 0;
  int too_big = 0;
  if (ndig > 0) {
    long keep = ndig + k; /* number of digits of v before rounding */
    if (keep > 19) {
      too_big = 1; /* v >= 10^19 > INT64_MAX */
    } else if (keep > 0) {
      long take = keep < ndig ? keep : ndig;
      for (long d = 0; d < take; d++)
        v = v * 10 + (uint64_t)(dig[d] - '0');
      for (long d = take; d < keep; d++)
        v *= 10;
      if (keep < ndig && dig[keep] >= '5')
        v++; /* round half up at the microsecond */
    } else if (keep == 0 && dig[0] >= '5') {
      v = 1;
    }
  }
  if (neg && (v != 0 || too_big)) {
    snprintf(why, TRACE_WHY_MAX, "must not be negative");
    return -1;
  }
  if (too_big || v > (uint64_t)TRACE_MAX_TIME_US) {
    snprintf(why, TRACE_WHY_MAX, "beyond the maximum of %lld s",
             (long long)TRACE_MAX_TIME_S);
    return -1;
  }
  *out_us = (int64_t)v;
  return 0;
}

void trace_join_columns(char *buf, size_t size, const char *const *cols,
                        size_t n) {
  size_t o = 0;
  buf[0] = '\0';
  for (size_t c = 0; c < n && o < size; c++) {
    int w = snprintf(buf + o, size - o, "%s%s", c ? "," : "", cols[c]);
    if (w < 0)
      break;
    o += (size_t)w;
  }
}
