/* polite version: the one place the version number lives. */
#ifndef POLITE_VERSION_H
#define POLITE_VERSION_H

#define POLITE_VERSION_MAJOR 0
#define POLITE_VERSION_MINOR 1
#define POLITE_VERSION_PATCH 0
#define POLITE_VERSION_STR "0.1.0"

/* 0xXXYYZZ: major, minor, patch, as curl's LIBCURL_VERSION_NUM. */
#define POLITE_VERSION_NUM                                                     \
  ((POLITE_VERSION_MAJOR << 16) | (POLITE_VERSION_MINOR << 8) |                \
   POLITE_VERSION_PATCH)

#define POLITE_VERSION_AT_LEAST(x, y, z)                                       \
  (POLITE_VERSION_NUM >= (((x) << 16) | ((y) << 8) | (z)))

#endif
