/* net/: the reason phrases of HTTP status codes, for the answers net/
 * writes (RFC 9110 section 15). */
#include "net_conn.h"

#include <stddef.h>

const char *polite__net_reason_of(int status) {
  static const struct {
    int status;
    const char *text;
  } table[] = {
      {100, "Continue"},
      {200, "OK"},
      {201, "Created"},
      {202, "Accepted"},
      {204, "No Content"},
      {206, "Partial Content"},
      {301, "Moved Permanently"},
      {302, "Found"},
      {304, "Not Modified"},
      {400, "Bad Request"},
      {401, "Unauthorized"},
      {403, "Forbidden"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {408, "Request Timeout"},
      {409, "Conflict"},
      {413, "Content Too Large"},
      {417, "Expectation Failed"},
      {418, "I'm a teapot"},
      {422, "Unprocessable Content"},
      {429, "Too Many Requests"},
      {431, "Request Header Fields Too Large"},
      {451, "Unavailable For Legal Reasons"},
      {500, "Internal Server Error"},
      {501, "Not Implemented"},
      {502, "Bad Gateway"},
      {503, "Service Unavailable"},
      {504, "Gateway Timeout"},
      {505, "HTTP Version Not Supported"},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (table[i].status == status)
      return table[i].text;
  return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error";
}
