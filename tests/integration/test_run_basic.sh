#!/usr/bin/env bash
# polite run against a scripted local server: input, output, redaction,
# retries, idempotency keys, account pause, deadlines, exit codes, SIGINT.
. "$(dirname "$0")/lib.sh"
start_pyserver
B=http://127.0.0.1:$PY_PORT
R=$PY_REC
P=$POLITE

# count of recorded requests whose path starts with $1
sent() { jq -r --arg p "$1" 'select(.path|startswith($p)) | .path' "$R" | wc -l; }

# --- all ok, exit 0, output fields -----------------------------------------
printf '%s/ok/1\n\n# comment\n%s/ok/2\n' "$B" "$B" >"$TMP/in.txt"
"$P" run --no-progress -q --out "$TMP/out.jsonl" "$TMP/in.txt"
check "all ok exits 0" [ $? -eq 0 ]
check "one result per request" [ "$(wc -l <"$TMP/out.jsonl")" -eq 2 ]
check "result fields" jq -e -s 'map(select(.id=="line-1"))[0] | .method=="GET" and .status==200 and .outcome=="ok" and .attempts==1 and .body=="ok /ok/1" and .line==1 and (.elapsed_ms|type=="number")' "$TMP/out.jsonl"
check "ids from line numbers" jq -e -s 'map(select(.id=="line-4"))[0] | .line==4' "$TMP/out.jsonl"

# --- stdin, global -X/-d/-H ---------------------------------------------------
echo "$B/echo/x" | "$P" run --no-progress -q -d 'a=1' -H 'X-Test: yes' - >"$TMP/o2"
check "-d makes a POST with that body" jq -e '.method=="POST" and .body=="a=1" and .outcome=="ok"' "$TMP/o2"
echo "{\"url\":\"$B/echo/x\",\"method\":\"PUT\",\"body\":{\"k\":[1,2]}}" | "$P" run --no-progress -q >"$TMP/o3"
check "JSON line with object body" jq -e '.method=="PUT" and .body=="{\"k\":[1,2]}"' "$TMP/o3"

# --- usage errors exit 2 and name the argument --------------------------------
"$P" run --rate fast "$TMP/in.txt" >/dev/null 2>"$TMP/err"
check "bad --rate exits 2" [ $? -eq 2 ]
check "bad --rate is named" grep -q -- "--rate" "$TMP/err"
"$P" run --bogus >/dev/null 2>&1
check "unknown option exits 2" [ $? -eq 2 ]
"$P" run -H 'no colon' "$TMP/in.txt" >/dev/null 2>&1
check "bad -H exits 2" [ $? -eq 2 ]
"$P" run --help | grep -q "max-attempts N"
check "--help states the maximum attempts" [ $? -eq 0 ]

# --- bad input lines: invalid_input with line number, run goes on ----------
cat >"$TMP/bad.txt" <<IN
$B/ok/a
{"url": "$B/ok/b", "method": "GE T"}
{not json
{"id":"x","url":"$B/ok/c","colour":"red"}
{"id":"y"}
ftp://example.invalid/file
{"id":"z","url":"$B/ok/d","headers":{"Bad Name":"v"}}
$B/ok/e
IN
"$P" run --no-progress -q "$TMP/bad.txt" >"$TMP/bad.out"
check "bad lines exit 1" [ $? -eq 1 ]
check "8 results for 8 lines" [ "$(wc -l <"$TMP/bad.out")" -eq 8 ]
check "6 invalid_input" [ "$(jq -r 'select(.outcome=="invalid_input")|.line' "$TMP/bad.out" | sort -n | tr '\n' ' ')" = "2 3 4 5 6 7 " ]
check "method error names field" jq -e -s 'map(select(.line==2))[0] | .error|test("method")' "$TMP/bad.out"
check "unknown field named" jq -e -s 'map(select(.line==4))[0] | .error|test("colour")' "$TMP/bad.out"
check "missing url named" jq -e -s 'map(select(.line==5))[0] | .error|test("url")' "$TMP/bad.out"
check "JSON error has column" jq -e -s 'map(select(.line==3))[0] | .error|test("column")' "$TMP/bad.out"
check "valid lines still ok" [ "$(jq -r 'select(.outcome=="ok")|.line' "$TMP/bad.out" | sort -n | tr '\n' ' ')" = "1 8 " ]

# --- redaction ---------------------------------------------------------------
cat >"$TMP/sec.txt" <<IN
$B/ok/s?api_key=SECRETQ1&page=2
{"url":"$B/status/500?token=SECRETQ2","headers":{"Authorization":"Bearer SECRETH1","Cookie":"c=SECRETH2"}}
{"url":"ftp://h/?client_secret=SECRETQ3"}
{"url":"$B/ok/x","headers":{"Api-Key":"SECRET\nH3"}}
IN
"$P" run --no-progress --max-attempts 2 -H 'X-Api-Key: SECRETH4' --log "$TMP/sec.log" \
  --summary-json "$TMP/sec.sum" --out "$TMP/sec.out" "$TMP/sec.txt" 2>"$TMP/sec.err"
check "secrets were sent to the server" grep -q "Bearer SECRETH1" "$R"
check "no secret in results, log, summary, stderr" bash -c "! grep -l SECRET '$TMP/sec.out' '$TMP/sec.log' '$TMP/sec.sum' '$TMP/sec.err'"
check "query secret shown as REDACTED" jq -e -s 'map(select(.line==1))[0] | .url|test("api_key=REDACTED&page=2")' "$TMP/sec.out"
check "invalid URL message redacted" jq -e -s 'map(select(.line==3))[0] | .error|test("client_secret=REDACTED")' "$TMP/sec.out"

# --- writes: POST without key is not retried ----------------------------------
echo "{\"method\":\"POST\",\"url\":\"$B/always503/nokey\",\"body\":\"x\"}" | "$P" run --no-progress -q >"$TMP/post.out"
check "POST without key: 1 attempt, not_retried_unsafe" jq -e '.attempts==1 and .outcome=="not_retried_unsafe" and .status==503' "$TMP/post.out"
check "server saw exactly one POST" [ "$(sent /always503/nokey)" -eq 1 ]

# --- one idempotency key across all attempts ----------------------------------
echo "{\"method\":\"POST\",\"url\":\"$B/fail503x2/auto\",\"body\":\"x\"}" |
  "$P" run --no-progress -q --idempotency-key auto --spread 10ms >"$TMP/idem.out"
check "auto key: ok after 3 attempts" jq -e '.attempts==3 and .outcome=="ok"' "$TMP/idem.out"
check "3 requests, one key" [ "$(jq -r 'select(.path=="/fail503x2/auto")|.idem' "$R" | sort -u | grep -c -E '^[0-9a-f-]{36}$')" -eq 1 ] 
check "3 requests sent" [ "$(sent /fail503x2/auto)" -eq 3 ]
echo "{\"method\":\"POST\",\"url\":\"$B/fail503x2/given\",\"idempotency_key\":\"k-42\"}" |
  "$P" run --no-progress -q --spread 10ms >"$TMP/idem2.out"
check "line key reused on every attempt" [ "$(jq -r 'select(.path=="/fail503x2/given")|.idem' "$R" | sort | uniq -c | awk '{print $1" "$2}')" = "3 k-42" ]

# --- max attempts never exceeded -----------------------------------------------
echo "$B/always503/get" | "$P" run --no-progress -q --max-attempts 3 --spread 10ms >"$TMP/ma.out"
check "retries_exhausted after 3" jq -e '.attempts==3 and .outcome=="retries_exhausted"' "$TMP/ma.out"
check "server saw 3" [ "$(sent /always503/get)" -eq 3 ]

# --- Retry-After pauses the whole budget ---------------------------------------
for i in $(seq 1 20); do echo "$B/once429/$i"; done >"$TMP/pause.txt"
"$P" run --no-progress -q --rate 20/s --concurrency 4 --log "$TMP/pause.log" "$TMP/pause.txt" >"$TMP/pause.out"
check "pause run: all ok" [ "$(jq -r .outcome "$TMP/pause.out" | sort -u)" = "ok" ]
check "pause run: 21 requests sent" [ "$(sent /once429)" -eq 21 ]
python3 - "$R" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if '"/once429' in l]
t429 = recs[0]["t"]                      # the first one got the 429
early = [r["t"] - t429 for r in recs[1:] if 0.15 < r["t"] - t429 < 0.99]
print("arrivals in the paused window:", early)
sys.exit(1 if early else 0)
PY
check "no request arrives during the server's pause" [ $? -eq 0 ]
check "log records Retry-After and account pause" jq -e -s 'map(select(.status==429)) | length==1 and .[0].retry_after=="1" and .[0].account_pause==true and .[0].action=="retry" and (.[0].why|length>0)' "$TMP/pause.log"
check "log has the server's request id" jq -e -s 'map(select(.request_id!=null)) | length>=20' "$TMP/pause.log"

# --- deadlines ----------------------------------------------------------------
echo "$B/wait429/d" | "$P" run --no-progress -q --deadline 2s >"$TMP/dl.out"
check "server wait beyond deadline: outcome deadline at once" jq -e '.outcome=="deadline" and .attempts==1 and .elapsed_ms < 1500' "$TMP/dl.out"
echo "$B/slow?ms=3000" | "$P" run --no-progress -q --deadline 700ms >"$TMP/dl2.out"
check "slow transfer cut at the deadline" jq -e '.outcome=="deadline" and .elapsed_ms >= 600 and .elapsed_ms < 2000' "$TMP/dl2.out"
printf '%s/slow?ms=3000\n%s/ok/rd\n' "$B" "$B" | "$P" run --no-progress -q --concurrency 1 --run-deadline 500ms >"$TMP/dl3.out"
dl3=$(jq -r .outcome "$TMP/dl3.out" | sort | tr '\n' ' ')
check "run deadline: every line gets deadline (got: $dl3)" [ "$dl3" = "deadline deadline " ]

# --- quota spent: exit 3 --------------------------------------------------------
printf '%s/quota\n%s/ok/q1\n%s/ok/q2\n' "$B" "$B" "$B" | "$P" run --no-progress -q --concurrency 1 >"$TMP/q.out"
check "quota exhausted exits 3" [ $? -eq 3 ]
check "quota result" jq -e -s 'map(select(.line==1))[0] | .outcome=="quota_exhausted" and .attempts==1' "$TMP/q.out"
check "nothing new started after the quota" [ "$(sent /ok/q)" -eq 0 ]

# --- --first, --bodies-dir, --progress ----------------------------------------
for i in $(seq 1 10); do echo "$B/ok/f$i"; done >"$TMP/first.txt"
"$P" run --progress --first 3 --rate 50/s --bodies-dir "$TMP/bodies" "$TMP/first.txt" >"$TMP/first.out" 2>"$TMP/first.err"
check "--first 3 runs 3" [ "$(wc -l <"$TMP/first.out")" -eq 3 ]
check "--first summary compares with the plan" grep -q "trial (--first 3)" "$TMP/first.err"
check "--progress draws with \\r when not a terminal" grep -q $'\r' "$TMP/first.err"
check "body_file written" jq -e -r '.body_file' "$TMP/first.out" >/dev/null
check "body file content" [ "$(cat "$TMP/bodies/line-1")" = "ok /ok/f1" ]

# --- SIGINT: exit 130, cancelled results, flushed ---------------------------------
for i in $(seq 1 6); do echo "$B/slow?ms=8000&i=$i"; done >"$TMP/int.txt"
"$P" run --no-progress -q --concurrency 2 --out "$TMP/int.out" "$TMP/int.txt" &
pid=$!
# Interrupted once both are in flight (the server has them), not after a
# guess of how long that takes.
wait_count 2 '"path": "/slow\?ms=8000&i=' "$R"
kill -INT $pid
start=$(date +%s%N)
wait $pid
rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
check "SIGINT exits 130" [ $rc -eq 130 ]
check "SIGINT ends within the grace (${took_ms} ms)" [ "$took_ms" -lt 4500 ]
check "cancelled results for requests read" [ "$(jq -r .outcome "$TMP/int.out" | sort -u)" = "cancelled" ]
check "at least the in-flight ones reported" [ "$(wc -l <"$TMP/int.out")" -ge 2 ]

# --- --budget-scope host: a pause on one host does not stop another --------
: >"$R"
for i in $(seq 1 8); do echo "$B/once429/h$i"; echo "http://localhost:$PY_PORT/ok/h$i"; done >"$TMP/hosts.txt"
"$P" run --no-progress -q --rate 10/s --budget-scope host "$TMP/hosts.txt" >"$TMP/hosts.out"
check "host scope: all ok" [ "$(jq -r .outcome "$TMP/hosts.out" | sort -u)" = "ok" ]
python3 - "$R" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
t429 = [r["t"] for r in recs if r["path"].startswith("/once429")][0]
win = lambda r: 0.15 < r["t"] - t429 < 0.99
paused = [r["path"] for r in recs if win(r) and r["path"].startswith("/once429")]
other = [r["path"] for r in recs if win(r) and r["path"].startswith("/ok/h")]
print("paused host in window:", paused, "other host in window:", other)
sys.exit(0 if not paused and other else 1)
PY
check "host scope: the other host keeps going during the pause" [ $? -eq 0 ]

# --- a 429 pauses the budget even when that request gives up -------------------
: >"$R"
printf '%s/once429/m1\n%s/ok/m2\n' "$B" "$B" | "$P" run --no-progress -q --max-attempts 1 --concurrency 1 >"$TMP/stop.out"
check "429 on the last attempt: retries_exhausted" jq -e -s 'map(select(.line==1))[0] | .outcome=="retries_exhausted" and .attempts==1' "$TMP/stop.out"
python3 - "$R" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
t = {r["path"]: r["t"] for r in recs}
gap = t["/ok/m2"] - t["/once429/m1"]
print("gap after the 429: %.3f s" % gap)
sys.exit(0 if gap >= 0.99 else 1)
PY
check "the next request waits for the server's time" [ $? -eq 0 ]

# --- more methods and keys ---------------------------------------------------------
echo "$B/ok/head" | "$P" run --no-progress -q -X HEAD >"$TMP/head.out"
check "-X HEAD: no body" jq -e '.method=="HEAD" and .status==200 and .body==null' "$TMP/head.out"
echo "{\"method\":\"PATCH\",\"url\":\"$B/fail503x2/hdr\",\"headers\":{\"Idempotency-Key\":\"h-1\"}}" |
  "$P" run --no-progress -q --spread 10ms >"$TMP/hk.out"
check "Idempotency-Key header allows PATCH retries" jq -e '.attempts==3 and .outcome=="ok"' "$TMP/hk.out"
echo "{\"method\":\"POST\",\"url\":\"$B/fail503x2/unsafe\"}" |
  "$P" run --no-progress -q --spread 10ms --retry-unsafe >"$TMP/ru.out"
check "--retry-unsafe retries a POST without key" jq -e '.attempts==3 and .outcome=="ok"' "$TMP/ru.out"
check "--retry-unsafe sends no key" [ "$(jq -r 'select(.path=="/fail503x2/unsafe")|.idem' "$R" | sort -u)" = "null" ]

# --- SIGTERM behaves like SIGINT --------------------------------------------------
printf '%s/slow?ms=8000&t=1\n' "$B" | "$P" run --no-progress -q --out "$TMP/term.out" &
pid=$!
wait_count 1 '"path": "/slow\?ms=8000&t=1"' "$R"
kill -TERM $pid
wait $pid
check "SIGTERM exits 130" [ $? -eq 130 ]
check "SIGTERM: cancelled result written" jq -e '.outcome=="cancelled" and .attempts==1' "$TMP/term.out"

finish
