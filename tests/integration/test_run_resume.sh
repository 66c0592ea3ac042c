#!/usr/bin/env bash
# polite run --journal/--resume: SIGKILL in the middle of a batch of POSTs
# with --idempotency-key auto, then --resume; torn journal and results
# tails; --requeue; a changed input; a full disk. Every case checks that
# each id ends ok exactly once in the results, that each logical write
# reached the server with one and only one key, and that the results file
# parses line by line (tests/integration/resume/check.py).
. "$(dirname "$0")/lib.sh"
HERE=$IT/resume
MNT=""
at_exit() { [ -n "$MNT" ] && umount "$MNT" 2>/dev/null; }
on_exit at_exit
# verify DESC ARGS...: runs check.py and shows its complaints on failure.
verify() {
  local d=$1
  shift
  if python3 "$HERE/check.py" "$@" >"$TMP/check.out" 2>&1; then
    ok "$d"
    sed 's/^/#   /' "$TMP/check.out"
  else
    bad "$d"
    sed 's/^/    /' "$TMP/check.out"
  fi
}

# The test server: 200 after 50 ms, records method, path and key.
start_api main --delay-ms 50
REC=$API_REC
B=$API
N=60

# mk_input CASE [N]: N POST lines with ids CASE-op1..N.
mk_input() {
  local c=$1 n=${2:-$N}
  for i in $(seq 1 "$n"); do
    printf '{"id":"%s-op%d","method":"POST","url":"%s/%s/op%d?token=SECRET","body":"v%d"}\n' \
      "$c" "$i" "$B" "$c" "$i" "$i"
  done >"$TMP/$c.in"
}

COMMON=(--no-progress -q --idempotency-key auto --concurrency 4)
run() { "$POLITE" run "${COMMON[@]}" "$@"; }

lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# kill_mid OUT ARGS...: starts a run, SIGKILLs it once it has added 8
# lines to OUT; succeeds when the kill landed before the run ended.
kill_mid() {
  local out=$1
  shift
  # Not through run(): $! must be polite itself, not a subshell.
  "$POLITE" run "${COMMON[@]}" "$@" 2>>"$TMP/stderr" &
  local pid=$! want=$(($(lines "$out") + 8))
  for _ in $(seq 400); do
    [ "$(lines "$out")" -ge $want ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  local st=$?
  [ $st -eq 137 ] && [ "$(lines "$out")" -lt $N ]
}

# --- 1. SIGKILL mid-batch, then --resume ----------------------------------
mk_input k
J=$TMP/k.journal
O=$TMP/k.out
check "killed mid-run (SIGKILL)" kill_mid "$O" --journal "$J" --out "$O" "$TMP/k.in"
check "the kill left a WAL behind" test -s "$J-wal"
run --journal "$J" --out "$O" --resume "$TMP/k.in" 2>"$TMP/err"
check "resume exits 0" [ $? -eq 0 ]
verify "kill+resume: each id ok once, one key per write, journal = server; in-flight writes re-sent with their key" \
  "$O" "$REC" k $N "$J" --resent
run --journal "$J" --out "$O" --resume "$TMP/k.in" 2>"$TMP/err"
check "a second resume runs nothing and exits 0" [ $? -eq 0 ]
check "... and adds no line" [ "$(lines "$O")" -eq $N ]
check "secrets never reach the journal" bash -c "! grep -q SECRET '$J'*"

# --- 1b. a second run on a journal in use is refused ----------------------
mk_input c
J=$TMP/c.journal
O=$TMP/c.out
"$POLITE" run "${COMMON[@]}" --journal "$J" --out "$O" "$TMP/c.in" 2>/dev/null &
pid=$!
for _ in $(seq 400); do
  [ "$(lines "$O")" -ge 2 ] && break
  sleep 0.01
done
run --journal "$J" --out "$O" --resume "$TMP/c.in" 2>"$TMP/err"
check "a resume while the journal is in use exits 2" [ $? -eq 2 ]
check "... saying it is in use" grep -q "in use by another polite run" "$TMP/err"
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
run --journal "$J" --out "$O" --resume "$TMP/c.in" 2>"$TMP/err"
check "once it is free, the resume exits 0" [ $? -eq 0 ]
verify "in use, then resumed: each id ok once, one key per write" \
  "$O" "$REC" c $N "$J"

# --- 2. killed twice, torn results tail -----------------------------------
mk_input t
J=$TMP/t.journal
O=$TMP/t.out
check "torn results: first kill" kill_mid "$O" --journal "$J" --out "$O" "$TMP/t.in"
printf '{"id":"t-op1","method":"PO' >>"$O"
: >"$TMP/stderr"
check "torn results: second kill" kill_mid "$O" --journal "$J" --out "$O" --resume "$TMP/t.in"
check "the second run repaired the torn line" grep -q "torn last result line removed" "$TMP/stderr"
printf '{"id":"t-op2","outc' >>"$O"
run --journal "$J" --out "$O" --resume "$TMP/t.in" 2>"$TMP/err"
check "resume after a torn line exits 0" [ $? -eq 0 ]
check "it says it removed the torn line" grep -q "torn" "$TMP/err"
verify "torn results tail: each id ok once, one key per write" \
  "$O" "$REC" t $N "$J"

# --- 3. garbage after the WAL ---------------------------------------------
mk_input g
J=$TMP/g.journal
O=$TMP/g.out
check "garbage WAL: killed mid-run" kill_mid "$O" --journal "$J" --out "$O" "$TMP/g.in"
head -c 5000 /dev/urandom >>"$J-wal"
run --journal "$J" --out "$O" --resume "$TMP/g.in" 2>"$TMP/err"
check "resume after garbage in the WAL exits 0" [ $? -eq 0 ]
verify "garbage WAL tail: each id ok once, one key per write, journal = server" \
  "$O" "$REC" g $N "$J"

# --- 4. torn WAL (the last commit cut) ------------------------------------
# A torn last commit is one that never completed, so whatever it recorded
# may be lost; at most one write may then go out with a second key.
mk_input w
J=$TMP/w.journal
O=$TMP/w.out
check "torn WAL: killed mid-run" kill_mid "$O" --journal "$J" --out "$O" "$TMP/w.in"
sz=$(stat -c %s "$J-wal")
truncate -s $((sz - 100)) "$J-wal"
run --journal "$J" --out "$O" --resume "$TMP/w.in" 2>"$TMP/err"
check "resume after a torn WAL exits 0" [ $? -eq 0 ]
verify "torn WAL tail: each id ok once, at most the last commit's write re-keyed" \
  "$O" "$REC" w $N "$J" --extra-keys 1

# --- 5. --requeue cancelled -------------------------------------------------
mk_input q
J=$TMP/q.journal
O=$TMP/q.out
"$POLITE" run "${COMMON[@]}" --journal "$J" --out "$O" "$TMP/q.in" 2>/dev/null &
pid=$!
for _ in $(seq 400); do
  [ "$(lines "$O")" -ge 8 ] && break
  sleep 0.01
done
kill -INT $pid
wait $pid
check "SIGINT exits 130" [ $? -eq 130 ]
ncan=$(jq -r 'select(.outcome=="cancelled") | .id' "$O" | wc -l)
check "SIGINT left cancelled results ($ncan)" [ "$ncan" -gt 0 ]
# A plain --resume finishes the batch: what the interrupt cancelled runs
# again without --requeue (issue #21 item 4).
run --journal "$J" --out "$O" --resume "$TMP/q.in" 2>"$TMP/err"
check "a plain resume after SIGINT exits 0" [ $? -eq 0 ]
check "it says how many run again" grep -q "$ncan run again (cancelled or never started)" "$TMP/err"
verify "plain resume: each id ok once (old cancelled lines gone), one key per write" \
  "$O" "$REC" q $N "$J"
check "the journal recorded the reruns as requeues" \
  [ "$(python3 -c "import sqlite3;print(sqlite3.connect('$J').execute('select count(*) from requeue').fetchone()[0])")" -eq "$ncan" ]
run --journal "$J" --out "$O" --resume --requeue cancelled "$TMP/q.in" 2>"$TMP/err"
check "--requeue cancelled on a finished batch exits 0" [ $? -eq 0 ]
check "... and requeues nothing" grep -q "0 run again (cancelled or never started), 0 requeued" "$TMP/err"
run --journal "$J" --out "$O" --requeue bogus --resume "$TMP/q.in" 2>"$TMP/err"
check "--requeue with an unknown outcome exits 2" [ $? -eq 2 ]
check "... and names it" grep -q "bogus" "$TMP/err"

# --requeue deadline: a server that answered 503 + Retry-After: 30 beyond
# the deadline has recovered; the requeued writes go out with the keys
# recorded the first time.
for i in 1 2 3 4 5; do
  printf '{"id":"y-op%d","method":"POST","url":"%s/y/heals/op%d","body":"v"}\n' "$i" "$B" "$i"
done >"$TMP/y.in"
J=$TMP/y.journal
O=$TMP/y.out
run --journal "$J" --out "$O" --deadline 1s --run-deadline 2s "$TMP/y.in" 2>/dev/null
check "a server pause beyond --deadline exits 1" [ $? -eq 1 ]
check "... with 5 deadline results" [ "$(jq -r 'select(.outcome=="deadline") | .id' "$O" | sort -u | wc -l)" -eq 5 ]
touch "$API_PORTFILE.healed"
run --journal "$J" --out "$O" --resume --requeue deadline,cancelled "$TMP/y.in" 2>"$TMP/err"
check "resume --requeue deadline,cancelled exits 0" [ $? -eq 0 ]
check "... 5 ok, one line each" [ "$(jq -r 'select(.outcome=="ok") | .id' "$O" | sort -u | wc -l)" -eq 5 -a "$(lines "$O")" -eq 5 ]
check "... each write with the same key before and after" python3 -c "
import json
k = {}
for l in open('$REC'):
    r = json.loads(l)
    if '/y/heals/' in r['path']:
        k.setdefault(r['path'], set()).add(r['key'])
assert len(k) == 5 and all(len(v) == 1 and None not in v for v in k.values()), k"

# --- 6. changed input, --force, usage ----------------------------------------
mk_input f 10
J=$TMP/f.journal
O=$TMP/f.out
run --journal "$J" --out "$O" "$TMP/f.in" 2>/dev/null
check "a small journaled run exits 0" [ $? -eq 0 ]
mk_input f 11
run --journal "$J" --out "$O" --resume "$TMP/f.in" 2>"$TMP/err"
check "a changed input is refused (exit 2)" [ $? -eq 2 ]
check "... with a clear message" grep -q "changed since the journal" "$TMP/err"
check "... and nothing was sent" [ "$(grep -c '/f/op11' "$REC")" -eq 0 ]
run --journal "$J" --out "$O" --resume --force "$TMP/f.in" 2>"$TMP/err"
check "--force resumes a changed input" [ $? -eq 0 ]
verify "--force: only the new request ran, each id ok once" "$O" "$REC" f 11 "$J"
run --journal "$J" --out "$O" "$TMP/f.in" 2>"$TMP/err"
check "an existing journal without --resume is refused (exit 2)" [ $? -eq 2 ]
check "... saying it exists" grep -q "already exists" "$TMP/err"
run --journal "$TMP/none.journal" --out "$O" --resume "$TMP/f.in" 2>"$TMP/err"
check "--resume of a missing journal exits 2" [ $? -eq 2 ]
run --journal "$J" --out "$TMP/other.out" --resume "$TMP/f.in" 2>"$TMP/err"
check "--resume with another --out exits 2" [ $? -eq 2 ]
run --resume --out "$O" "$TMP/f.in" 2>"$TMP/err"
check "--resume without --journal exits 2" [ $? -eq 2 ]
run --journal "$TMP/x.journal" "$TMP/f.in" >/dev/null 2>"$TMP/err"
check "--journal without --out exits 2" [ $? -eq 2 ]
run --journal "$TMP/x.journal" --out "$TMP/x.out" - <"$TMP/f.in" 2>"$TMP/err"
check "--journal with stdin input exits 2" [ $? -eq 2 ]
check "... naming stdin" grep -q "stdin" "$TMP/err"
run --journal "$TMP/x.journal" --out "$TMP/nodir/x.out" "$TMP/f.in" 2>"$TMP/err"
check "an --out that cannot be created exits 2" [ $? -eq 2 ]
check "... and leaves no journal behind" [ ! -e "$TMP/x.journal" ]

cp "$O" "$TMP/f.saved"
sed -i '3s/.*/not a result/' "$O"
run --journal "$J" --out "$O" --resume "$TMP/f.in" 2>"$TMP/err"
check "a results file with a broken middle line is refused (exit 2)" [ $? -eq 2 ]
check "... naming the line" grep -q "line 3 of the results file" "$TMP/err"
cp "$TMP/f.saved" "$O"

# ids without "id": stable across resumes.
printf '%s/s/a\n%s/s/b\n' "$B" "$B" >"$TMP/s.in"
run --journal "$TMP/s.journal" --out "$TMP/s.out" "$TMP/s.in" 2>/dev/null
check "ids without an id become line-N-HASH" \
  jq -e -s 'map(.id|test("^line-[12]-[0-9a-f]{8}$"))|all and length==2' "$TMP/s.out"
run --journal "$TMP/s.journal" --out "$TMP/s.out" --resume "$TMP/s.in" 2>/dev/null
check "... and a resume matches them (no new line)" [ "$(lines "$TMP/s.out")" -eq 2 ]

# --- 7. a lost results file, duplicate ids ---------------------------------
mk_input l
J=$TMP/l.journal
O=$TMP/l.out
check "lost results file: killed mid-run" kill_mid "$O" --journal "$J" --out "$O" "$TMP/l.in"
rm -f "$O"
run --journal "$J" --out "$O" --resume "$TMP/l.in" 2>"$TMP/err"
check "resume without the results file exits 0" [ $? -eq 0 ]
check "... saying which results run again" grep -q "have no line in" "$TMP/err"
verify "lost results file: each id ok once, reruns reuse the recorded keys" \
  "$O" "$REC" l $N "$J"
printf '{"id":"same","url":"%s/u/1"}\n{"id":"same","url":"%s/u/2"}\n' "$B" "$B" >"$TMP/u.in"
run --journal "$TMP/u.journal" --out "$TMP/u.out" "$TMP/u.in" 2>"$TMP/err"
check "a repeated id stops a journaled run (exit 1)" [ $? -eq 1 ]
check "... naming the id and both lines" grep -q "input line 2: id 'same' was already used on line 1" "$TMP/err"
check "... after writing the first result only" [ "$(lines "$TMP/u.out")" -eq 1 ]

# files removed while the run writes them
mk_input r
J=$TMP/r.journal
O=$TMP/r.out
"$POLITE" run "${COMMON[@]}" --journal "$J" --out "$O" "$TMP/r.in" 2>"$TMP/err" &
pid=$!
for _ in $(seq 400); do
  [ "$(lines "$O")" -ge 4 ] && break
  sleep 0.01
done
rm -f "$O"
wait $pid
check "a results file removed mid-run stops the run (exit 1)" [ $? -eq 1 ]
check "... saying which file is gone" grep -q "results file '$O' is gone" "$TMP/err"
run --journal "$J" --out "$O" --resume "$TMP/r.in" 2>"$TMP/err"
check "... and a resume recreates it (exit 0)" [ $? -eq 0 ]
verify "removed results file: each id ok once, one key per write" \
  "$O" "$REC" r $N "$J"
mk_input r2
"$POLITE" run "${COMMON[@]}" --journal "$TMP/r2.journal" --out "$TMP/r2.out" "$TMP/r2.in" 2>"$TMP/err" &
pid=$!
for _ in $(seq 400); do
  [ "$(lines "$TMP/r2.out")" -ge 4 ] && break
  sleep 0.01
done
rm -f "$TMP/r2.journal"
wait $pid
check "a journal removed mid-run stops the run (exit 1)" [ $? -eq 1 ]
check "... saying so" grep -q "journal '$TMP/r2.journal' is gone" "$TMP/err"
check "... before sending everything" [ "$(grep -c '"/r2/' "$REC")" -lt $N ]

# --- 7b. attempt starts: a write in flight at a SIGKILL has its start -------
# recorded (before it was sent, fsync'd), and no end record.
start_api second
B2=$API
printf '{"id":"slow-w","method":"POST","url":"%s/slow?ms=8000","body":"x"}\n{"id":"fast-r","url":"%s/ok/r"}\n' \
  "$B2" "$B2" >"$TMP/a.in"
"$POLITE" run "${COMMON[@]}" --journal "$TMP/a.journal" --out "$TMP/a.out" "$TMP/a.in" 2>/dev/null &
pid=$!
for _ in $(seq 400); do
  [ "$(lines "$TMP/a.out")" -ge 1 ] && grep -q '"/slow' "$TMP/second.rec.jsonl" 2>/dev/null && break
  sleep 0.01
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
check "a slow POST in flight: killed (SIGKILL) before it ended" [ $? -eq 137 ]
check "... its attempt start is in the journal, its end is not; the finished read has both" \
  python3 -c "
import sqlite3
db = sqlite3.connect('$TMP/a.journal')
q = lambda sql: db.execute(sql).fetchall()
assert q(\"select n from attempt_start where id='slow-w'\") == [(1,)], q('select * from attempt_start')
assert q(\"select count(*) from attempt where id='slow-w'\") == [(0,)]
assert q(\"select count(*) from attempt_start where id='fast-r'\") == [(1,)]
assert q(\"select count(*) from attempt where id='fast-r'\") == [(1,)]
# the start row comes after the request row that holds the key
(k,) = q(\"select idempotency_key from request where id='slow-w'\")[0]
assert k
"

# --- 8. full disk -----------------------------------------------------------
D=$TMP/small
mkdir -p "$D"
mk_input d 200
if mount -t tmpfs -o size=192k tmpfs "$D" 2>/dev/null; then
  MNT=$D
  run --journal "$D/j" --out "$D/o" "$TMP/d.in" 2>"$TMP/err"
  st=$?
  check "full disk: the run stops with exit 1 (got $st)" [ $st -eq 1 ]
  check "... saying which file and why" grep -Eq "'$D/(j|o)'.*No space left on device|No space left on device.*'$D/(j|o)'" "$TMP/err"
  check "... and that it stopped" grep -q "stopped" "$TMP/err"
  check "... leaving the results file parseable up to a torn line" \
    python3 -c "import json,sys;d=open('$D/o','rb').read();[json.loads(l) for l in d.split(b'\n')[:-1]]"
  nres1=$(lines "$D/o")
  echo "# the full disk stopped the run after $nres1 result line(s)"
  sent1=$(grep -c '"/d/' "$REC")
  check "... having stopped early ($sent1 of 200 sent)" [ "$sent1" -lt 200 ]
  mount -o remount,size=8m "$D"
  run --journal "$D/j" --out "$D/o" --resume "$TMP/d.in" 2>"$TMP/err"
  check "resume after the disk got space exits 0" [ $? -eq 0 ]
  verify "full disk: each id ok once, one key per write, journal = server" \
    "$D/o" "$REC" d 200 "$D/j"
  umount "$D" && MNT=""
else
  echo "# tmpfs mount not permitted here: full disk simulated with ulimit -f"
  (ulimit -f 192; run --journal "$D/j" --out "$D/o" "$TMP/d.in" 2>"$TMP/err")
  st=$?
  check "file size limit: the run stops with exit 1 (got $st)" [ $st -eq 1 ]
  check "... saying which file and why" grep -q "File too large" "$TMP/err"
  run --journal "$D/j" --out "$D/o" --resume "$TMP/d.in" 2>"$TMP/err"
  check "resume without the limit exits 0" [ $? -eq 0 ]
  verify "file size limit: each id ok once, one key per write" \
    "$D/o" "$REC" d 200 "$D/j"
fi

finish
