/* libFuzzer target: a raw response (`curl -si` output) through the
 * diagnose parser and classifier, checking the invariants of the result. */
#include <polite/diagnose.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int nul_terminated(const char *s, size_t size) {
  return memchr(s, '\0', size) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  polite_diagnosis d;
  polite_diag_error err;
  memset(&err, 0, sizeof err);
  int rc = polite_diagnose_response(&d, s, size, 1796014800000, &err);
  if (rc != 0) {
    if (rc != POLITE_EINVAL || err.line < 1 || err.message[0] == '\0' ||
        !nul_terminated(err.message, sizeof err.message))
      abort();
    return 0;
  }
  if (d.status < 100 || d.status > 999)
    abort();
  if (d.n_ids > POLITE_DIAG_MAX_IDS ||
      d.n_evidence > POLITE_DIAG_MAX_EVIDENCE || d.n_evidence == 0 ||
      d.n_through > POLITE_DIAG_MAX_THROUGH)
    abort();
  for (size_t i = 0; i < d.n_ids; i++)
    if (!nul_terminated(d.ids[i].name, sizeof d.ids[i].name) ||
        !nul_terminated(d.ids[i].value, sizeof d.ids[i].value))
      abort();
  for (size_t i = 0; i < d.n_evidence; i++)
    if (!nul_terminated(d.evidence[i], sizeof d.evidence[i]))
      abort();
  /* The component names a kind and a vendor together, or neither. */
  const char *c = polite_diagnosis_component(&d);
  if ((d.kind == POLITE_COMP_UNKNOWN) != (strcmp(c, "unknown") == 0) ||
      (d.kind == POLITE_COMP_UNKNOWN) != (d.vendor[0] == '\0'))
    abort();
  if (d.limit == POLITE_LIMIT_QUOTA && d.retry_helps)
    abort();
  if (d.wait_ms < -1 || d.wait_ms > POLITE_RA_MAX_SECONDS * 1000)
    abort();
  if (polite_diagnosis_advice(&d) == NULL ||
      strcmp(polite_limit_name(d.limit), "") == 0)
    abort();
  return 0;
}
