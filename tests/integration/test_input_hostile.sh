#!/usr/bin/env bash
# polite run on hostile input lines (#15.4, #15.7): malformed JSON that holds
# a secret, hostile URLs, a byte order mark. Each bad line is invalid_input
# at once (no attempt, no connection), names the field, and no secret
# reaches the results, the log or stderr.
. "$(dirname "$0")/lib.sh"
IN=$TMP/in.jsonl
big=$(head -c 1048000 /dev/zero | tr '\0' 'a')
{
  printf '\xEF\xBB\xBF# a BOM before a comment on line 1\n'
  printf '{"url":"http://127.0.0.1:9/","headers":{"Authorization":"Bearer SEKRET1\n'
  printf '{"url":"http://127.0.0.1:9/","headers":{"Authorization":"Bearer SEK\\qRET2"}}\n'
  printf '{"url":"http://127.0.0.1:9/","headers":{"Authorization":"Bearer SEK\x01RET3"}}\n'
  printf '{"url":"http://127.0.0.1:9/","headers":{"Authorization":"Bearer SEK\xff\xfeRET4"}}\n'
  printf '{"url":"http://127.0.0.1:9/","headers":{"Authorization":"Bearer SEKRET5"}\n'
  printf 'http://[::1:18080/\n'
  printf 'http://127.0.0.1:99999/?api_key=SEKRET6\n'
  printf 'http://127.0.0.1:-1/\n'
  printf '{"url":"http://user@:80/"}\n'
  printf '{"url":"http:///x?token=SEKRET7"}\n'
  printf 'http://127.0.0.1:9/%s\n' "$big"
  printf '{"url":"http://u:SEK/RET8@127.0.0.1:0/?%%74oken=SEKRET9;x=1"}\n'
} >"$IN"
"$POLITE" run --no-progress --max-attempts 3 --log "$TMP/log" -o "$TMP/out" "$IN" 2>"$TMP/err"
st=$?
check "bad lines make exit status 1 (got $st)" [ $st -eq 1 ]
check "12 results, all invalid_input" jq -e -s 'length == 12 and all(.outcome == "invalid_input")' "$TMP/out"
check "... none attempted" jq -e -s 'all(.attempts == 0)' "$TMP/out"
check "the BOM line is skipped (first result is line 2)" jq -e -s '.[0].line == 2' "$TMP/out"
check "malformed JSON gives line, column and kind" jq -e -s \
  '[.[0:5][] | .error | test("^not valid JSON at line [0-9]+, column [0-9]+: ")] | all' "$TMP/out"
# shellcheck disable=SC2016 # $e: jq's variable, not the shell's
check "... the five kinds" jq -e -s '[.[0:5][] | .error] as $e |
  ($e[0] | test("unterminated string")) and ($e[1] | test("bad escape")) and
  ($e[2] | test("control character")) and ($e[3] | test("invalid UTF-8")) and
  ($e[4] | test("premature end of input"))' "$TMP/out"
check "the bad IPv6 literal is named" jq -e -s '.[5].error | test("^url .*malformed IPv6")' "$TMP/out"
check "port 99999 is named" jq -e -s '.[6].error | test("^url .*port that is not a number from 1 to 65535")' "$TMP/out"
check "port -1 is named" jq -e -s '.[7].error | test("port")' "$TMP/out"
check "user@ with no host is named" jq -e -s '.[8].error | test("^field \"url\" .*has no host")' "$TMP/out"
check "an empty host is named" jq -e -s '.[9].error | test("has no host")' "$TMP/out"
check "a 1 MiB URL is refused by its length" jq -e -s '.[10].error | test("more than the limit of 65536 bytes")' "$TMP/out"
check "... and not quoted whole" jq -e -s '(.[10].error | length) < 200' "$TMP/out"
check "port 0 with a secret password is named" jq -e -s '.[11].error | test("port")' "$TMP/out"
for f in out log err; do
  check "no secret in the $f" bash -c "! grep -aq 'SEK' '$TMP/$f'"
done
finish
