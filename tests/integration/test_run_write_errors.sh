#!/usr/bin/env bash
# polite run --out FILE without --journal: a result line that cannot be
# written (file size limit, full device, the file removed) stops the run at
# once with a message naming the file, the operation and the cause, keeps
# the complete lines already written, and exits 1.
. "$(dirname "$0")/lib.sh"
start_api main
REC=$API_REC
B=$API
N=60
for i in $(seq 1 $N); do echo "$B/ok/$i"; done >"$TMP/in.txt"
# sent PREFIX: requests the server received whose path starts with PREFIX.
sent() { grep -c "\"path\": \"$1" "$REC"; }
# whole_lines FILE: every line is a complete JSON result (no torn tail).
whole_lines() {
  python3 -c "
import json, sys
d = open(sys.argv[1], 'rb').read()
assert d == b'' or d.endswith(b'\n'), 'torn last line'
for l in d.split(b'\n')[:-1]:
    assert 'id' in json.loads(l)
" "$1"
}
# 60 requests at 40/s: about 1.5 s when nothing stops them.
ARGS=(--no-progress -q --rate 40/s --concurrency 2)

# --- 1. file size limit (ulimit -f): EFBIG -----------------------------------
for i in $(seq 1 $N); do echo "$B/ok/a$i"; done >"$TMP/a.txt"
(
  trap '' XFSZ
  ulimit -f 1 # 1 KiB: a few result lines fit
  exec "$POLITE" run "${ARGS[@]}" --out "$TMP/a.out" "$TMP/a.txt"
) 2>"$TMP/err"
st=$?
check_quiet "file size limit: exit 1 (got $st)" [ $st -eq 1 ]
check_quiet "... naming the file and the cause" grep -q "results file '$TMP/a.out' (\(write\|flush\)): File too large" "$TMP/err"
check_quiet "... saying it stopped and how many have no line" grep -Eq "stopped: .* [0-9]+ request\(s\) read have no result line" "$TMP/err"
n=$(wc -l <"$TMP/a.out")
check_quiet "... the lines written before are kept ($n) and intact JSON, no torn tail" \
  bash -c "[ $n -ge 2 ] && [ $n -lt $N ]"
check_quiet "... (every line parses)" whole_lines "$TMP/a.out"
s=$(sent /ok/a)
check_quiet "... and it stopped early ($s of $N sent)" [ "$s" -lt $((N / 2)) ]
sed 's/^/#   /' "$TMP/err" | head -3

# polite ignores SIGXFSZ itself: without the trap it still gets EFBIG and
# says so instead of dying of the signal.
for i in $(seq 1 $N); do echo "$B/ok/b$i"; done >"$TMP/b.txt"
(
  ulimit -f 1
  exec "$POLITE" run "${ARGS[@]}" --out "$TMP/b.out" "$TMP/b.txt"
) 2>"$TMP/err"
st=$?
check_quiet "file size limit without trap '' XFSZ: exit 1, not killed (got $st)" [ $st -eq 1 ]
check_quiet "... saying File too large" grep -q "File too large" "$TMP/err"
check_quiet "... lines intact" whole_lines "$TMP/b.out"

# --- 2. a full device ----------------------------------------------------------
for i in $(seq 1 $N); do echo "$B/ok/c$i"; done >"$TMP/c.txt"
"$POLITE" run "${ARGS[@]}" --out /dev/full "$TMP/c.txt" 2>"$TMP/err"
st=$?
check_quiet "--out /dev/full: exit 1 (got $st)" [ $st -eq 1 ]
check_quiet "... naming the file and the cause" grep -q "results file '/dev/full' (\(write\|flush\)): No space left on device" "$TMP/err"
s=$(sent /ok/c)
check_quiet "... and it stopped at once ($s of $N sent)" [ "$s" -le 4 ]
sed 's/^/#   /' "$TMP/err" | head -2

# --- 3. the results file removed mid-run ---------------------------------------
for i in $(seq 1 $N); do echo "$B/ok/d$i"; done >"$TMP/d.txt"
"$POLITE" run "${ARGS[@]}" --out "$TMP/d.out" "$TMP/d.txt" 2>"$TMP/err" &
pid=$!
for _ in $(seq 400); do
  [ -f "$TMP/d.out" ] && [ "$(wc -l <"$TMP/d.out")" -ge 3 ] && break
  sleep 0.01
done
rm -f "$TMP/d.out"
wait $pid
st=$?
check_quiet "results file removed mid-run: exit 1 (got $st)" [ $st -eq 1 ]
check_quiet "... saying the file is gone" grep -q "results file '$TMP/d.out' is gone (No such file or directory)" "$TMP/err"
s=$(sent /ok/d)
check_quiet "... and it stopped early ($s of $N sent)" [ "$s" -lt $((N / 2)) ]

# --- 4. the same run with room succeeds (the test can tell) --------------------
for i in $(seq 1 10); do echo "$B/ok/e$i"; done >"$TMP/e.txt"
"$POLITE" run "${ARGS[@]}" --out "$TMP/e.out" "$TMP/e.txt" 2>"$TMP/err"
check_quiet "without a write error: exit 0 and 10 lines" \
  bash -c "[ $? -eq 0 ] && [ \$(wc -l <'$TMP/e.out') -eq 10 ]"

finish
