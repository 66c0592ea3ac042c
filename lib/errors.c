/* Error strings and the version string. */
#include <polite/polite.h>

const char *polite_strerror(int err) {
  switch (err) {
  case POLITE_OK: return "success";
  case POLITE_EINVAL: return "invalid argument";
  case POLITE_ENOMEM: return "out of memory";
  case POLITE_ERANGE: return "value out of range";
  case POLITE_EIO: return "input/output error";
  case POLITE_EBUDGET: return "shared budget unavailable";
  case POLITE_ECURL: return "HTTP transfer failed";
  case POLITE_ECANCELED: return "cancelled";
  case POLITE_EAGAIN: return "nothing available yet";
  default: return "unknown error";
  }
}

const char *polite_version(void) {
  return POLITE_VERSION_STR;
}
