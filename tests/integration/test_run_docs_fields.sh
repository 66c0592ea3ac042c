#!/usr/bin/env bash
# docs/run.md names every field polite run writes: each key of the result
# lines ("Output: one JSON line per request") and of the attempt log ("The
# attempt log (--log)") that a run with an ok, a retried 429, an HTTP error,
# a transport error and an invalid line produces is in its
# section of the page, as a `code` word. A field added to the output without
# its line in the page fails here; the check is shown to fail on a copy of
# the page without one field.
. "$(dirname "$0")/lib.sh"
start_pyserver
closed_port
cat >"$TMP/in.txt" <<IN
$API/ok/1
$API/429?ra=1
$API/status/404
http://127.0.0.1:$CLOSED_PORT/x
{"url": 5}
IN
"$POLITE" run --no-progress --rate 20/s --max-attempts 2 --log "$TMP/log.jsonl" \
  --out "$TMP/out.jsonl" "$TMP/in.txt" 2>"$TMP/err" || true
check_eq "five result lines" "$(wc -l <"$TMP/out.jsonl")" 5

# fields KIND PAGE: the keys of $TMP/KIND.jsonl missing from PAGE's
# section for KIND (empty: all documented).
fields() {
  python3 - "$TMP/$1.jsonl" "$2" "$1" <<'PY'
import json, re, sys
lines, page, kind = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(page).read()
head = {"out": "## Output: one JSON line per request",
        "log": "## The attempt log (`--log`)"}[kind]
sec = text[text.index(head) + len(head):]
sec = sec[:sec.find("\n## ")] if "\n## " in sec else sec
named = set(re.findall(r"`([a-z_]+)`", sec)) | set(re.findall(r'"([a-z_]+)":', sec))
keys = set()
for l in open(lines):
    keys |= set(json.loads(l))
print(" ".join(sorted(keys - named)))
PY
}
check_eq "every result field is in docs/run.md" "$(fields out "$POLITE_SRC/docs/run.md")" ""
check_eq "every attempt-log field is in docs/run.md" "$(fields log "$POLITE_SRC/docs/run.md")" ""

# The check can fail: without `error` in the page, it is named.
# shellcheck disable=SC2016 # the backquotes are the page's, not a command
sed 's/^| `error` |/| error |/' "$POLITE_SRC/docs/run.md" >"$TMP/run.md"
check_eq "... and names a field the page lacks" "$(fields out "$TMP/run.md")" error
finish
