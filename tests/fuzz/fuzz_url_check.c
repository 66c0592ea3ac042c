/* libFuzzer target: the URL check of the input format (lib/request.c), as
 * a bare line and as a JSON "url". A URL it accepts is short enough, has no
 * space or control byte, and libcurl parses it with a host; an error names
 * the field and stays short whatever the URL. */
#include <polite/batch.h>

#include <curl/curl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_accepted(const char *url) {
  if (strlen(url) > 65536)
    abort();
  for (const unsigned char *p = (const unsigned char *)url; *p; p++)
    if (*p <= 0x20 || *p == 0x7f)
      abort();
  CURLU *h = curl_url();
  if (h == NULL)
    return;
  char *host = NULL;
  if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK ||
      curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK || host == NULL ||
      host[0] == '\0')
    abort();
  curl_free(host);
  curl_url_cleanup(h);
}

static void one(const char *line, size_t len, const char *field) {
  polite_request *r = NULL;
  if (polite_request_parse_line(line, len, 1, NULL, &r) != 1 || r == NULL) {
    polite_request_free(r);
    return;
  }
  if (r->error == NULL && r->url != NULL)
    check_accepted(r->url);
  if (r->error != NULL && strncmp(r->error, field, strlen(field)) == 0 &&
      strlen(r->error) > 400)
    abort(); /* URLs are quoted cut to 200 bytes */
  polite_request_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* "http://" + the input, so most inputs reach libcurl's parser. */
  char *line = malloc(size + 8);
  if (line == NULL)
    return 0;
  memcpy(line, "http://", 7);
  memcpy(line + 7, data, size);
  line[size + 7] = '\0';
  one(line, size + 7, "url ");
  /* The same as a JSON "url" (jansson escapes what needs escaping). */
  json_t *o = json_pack("{s:s%}", "url", line, size + 7);
  char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
  if (js != NULL)
    one(js, strlen(js), "field \"url\"");
  free(js);
  json_decref(o);
  free(line);
  return 0;
}
