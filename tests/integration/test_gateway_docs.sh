#!/usr/bin/env bash
# docs/gateway.md says what the gateway's policy code does, and its metrics
# are valid Prometheus text:
#  - the safety table and the honest-answer table between their markers are
#    exactly what the code's rows give (tests/tools/gateway_docs.c);
#  - every metric family the gateway writes is in the page's table;
#  - promtool (Debian package prometheus) accepts the metrics text with
#    every kind of series filled in and hostile account names (quotes,
#    backslashes, line feeds; more accounts than get series of their own).
# Each check can fail: a drifted copy of the page and a broken copy of the
# text are refused.
. "$(dirname "$0")/lib.sh"
TOOL=$POLITE_BUILD/tools/gateway_docs
PAGE=$POLITE_SRC/docs/gateway.md

# The text between <!-- NAME:begin --> and <!-- NAME:end --> of a page.
section() {
  sed -n "/<!-- $1:begin -->/,/<!-- $1:end -->/p" "$2" | sed '1d;$d'
}
for t in retry answer; do
  "$TOOL" $t-table >"$TMP/$t.md"
  section gateway-$t "$PAGE" >"$TMP/$t.page"
  check "docs/gateway.md's $t table is what the code's rows give" cmp -s "$TMP/$t.md" "$TMP/$t.page"
  cmp -s "$TMP/$t.md" "$TMP/$t.page" || diff "$TMP/$t.page" "$TMP/$t.md" | head -10 | sed 's/^/#   /'
done
sed 's/| POST, PATCH, any other | no | on | 429 | \*\*yes\*\*/| POST, PATCH, any other | no | on | 429 | no/' "$PAGE" >"$TMP/drift.md"
section gateway-retry "$TMP/drift.md" >"$TMP/drift.page"
if cmp -s "$TMP/retry.md" "$TMP/drift.page"; then bad "a drifted row is caught"; else ok "a drifted row is caught"; fi

PROMTOOL=$(command -v promtool)
check "promtool is installed (Debian package prometheus)" test -n "$PROMTOOL"
check "the sample tool is built" test -x "$TOOL"
"$TOOL" metrics >"$TMP/metrics.txt"
check "the tool prints the text" test -s "$TMP/metrics.txt"
if [ -n "$PROMTOOL" ]; then
  "$PROMTOOL" check metrics <"$TMP/metrics.txt" >"$TMP/promtool.out" 2>&1
  check "promtool check metrics accepts it" [ $? -eq 0 ]
  sed 's/^/#   /' "$TMP/promtool.out" | head -20
  # A counter without the _total suffix, and the hostile name unescaped:
  # promtool must object, or the check above proves nothing.
  sed -e 's/polite_gateway_pauses_total/polite_gateway_pauses/g' \
    "$TMP/metrics.txt" >"$TMP/bad1.txt"
  "$PROMTOOL" check metrics <"$TMP/bad1.txt" >/dev/null 2>&1
  check "... and refuses a counter named without _total" [ $? -ne 0 ]
  sed -e 's/we\\"ird/we"ird/' "$TMP/metrics.txt" >"$TMP/bad2.txt"
  if cmp -s "$TMP/metrics.txt" "$TMP/bad2.txt"; then bad "the broken copy differs"; else ok "the broken copy differs"; fi
  "$PROMTOOL" check metrics <"$TMP/bad2.txt" >/dev/null 2>&1
  check "... and a label value with an unescaped quote" [ $? -ne 0 ]
fi
missing=
while read -r m; do
  grep -qF "| \`$m\` |" "$PAGE" || missing="$missing $m"
done < <(sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' "$TMP/metrics.txt")
check_eq "every metric family is in docs/gateway.md" "$missing" ""
check_grep "hostile names are escaped" 'account="we\\"ird\\\\host\\nname"' "$TMP/metrics.txt"
check_grep "accounts beyond the bound count as other" 'account="other"' "$TMP/metrics.txt"
finish
