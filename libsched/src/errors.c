/* Error codes, messages and the library version. */
#include "internal.h"

const char *lsched_strerror(int code) {
  switch (code) {
  case LSCHED_OK:
    return "success";
#define LSCHED_ERR_MSG_(name, val, msg)                                        \
  case val:                                                                    \
    return msg;
    LSCHED_ERRNO_MAP(LSCHED_ERR_MSG_)
#undef LSCHED_ERR_MSG_
  default:
    return "unknown error";
  }
}

const char *lsched_err_name(int code) {
  switch (code) {
  case LSCHED_OK:
    return "LSCHED_OK";
#define LSCHED_ERR_NAME_(name, val, msg)                                       \
  case val:                                                                    \
    return "LSCHED_E" #name;
    LSCHED_ERRNO_MAP(LSCHED_ERR_NAME_)
#undef LSCHED_ERR_NAME_
  default:
    return "LSCHED_EUNKNOWN";
  }
}

unsigned lsched_version_number(void) { return LSCHED_VERSION_NUMBER; }

const char *lsched_version_string(void) { return LSCHED_VERSION_STRING; }

int lsched_version_check(unsigned header_version) {
  unsigned major = header_version / 10000, minor = header_version / 100 % 100;
  if (major != LSCHED_VERSION_MAJOR)
    return LSCHED_EVERSION;
  /* 0.x: every minor release may change the ABI (and gets a new SONAME);
   * from 1.0 a minor release only adds, so an older header is served. */
  if (major == 0 ? minor != LSCHED_VERSION_MINOR : minor > LSCHED_VERSION_MINOR)
    return LSCHED_EVERSION;
  return LSCHED_OK;
}
