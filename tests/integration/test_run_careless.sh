#!/usr/bin/env bash
# polite run against a careless command line (issue 15, items 3 and 7):
# outputs that are the input, the journal or each other are refused before
# anything is truncated; -d @/dev/zero is bounded; --max-body is a flag;
# every output failure (--log /dev/full, --summary-json, a body file) exits
# non-zero naming the file; --bodies-dir names never collide; --timeout 0 is
# refused; -H 'Bearer sk-...' is not echoed.
. "$(dirname "$0")/lib.sh"
P=$POLITE
start_pyserver
B=http://127.0.0.1:$PY_PORT
run() { "$P" run --no-progress -q "$@"; }
printf '%s/ok/1\n%s/ok/2\n' "$B" "$B" >"$TMP/jobs.txt"
cp "$TMP/jobs.txt" "$TMP/jobs.orig"
same_input() { cmp -s "$TMP/jobs.txt" "$TMP/jobs.orig"; }

# ---- outputs that destroy inputs (item 3) ------------------------------------
for opt in -o --log --summary-json; do
  run "$opt" "$TMP/jobs.txt" "$TMP/jobs.txt" >/dev/null 2>"$TMP/err"
  rc=$?
  check "$opt INPUT INPUT exits 2" [ $rc -eq 2 ]
  check "... the input is intact" same_input
  check_grep "... saying they are the same file" "same file" "$TMP/err"
done
ln -s "$TMP/jobs.txt" "$TMP/link.txt"
run -o "$TMP/link.txt" "$TMP/jobs.txt" >/dev/null 2>&1
check "a symlink to the input is the same file too" [ $? -eq 2 ]
ln "$TMP/jobs.txt" "$TMP/hard.txt"
run --log "$TMP/hard.txt" "$TMP/jobs.txt" >/dev/null 2>&1
check "so is a hard link (device and inode compared)" [ $? -eq 2 ]
check "... and the input is still intact" same_input
run -o "$TMP/x.out" < "$TMP/jobs.txt" >/dev/null 2>&1
check "stdin from a file with another --out runs (exit 0)" [ $? -eq 0 ]
# shellcheck disable=SC2094 # reading and writing one file is the case polite must refuse
run -o "$TMP/jobs.txt" - < "$TMP/jobs.txt" >/dev/null 2>&1
check "stdin redirected from the --out file is refused" [ $? -eq 2 ]
check "... intact" same_input
run --journal "$TMP/o.jsonl" -o "$TMP/o.jsonl" "$TMP/jobs.txt" >/dev/null 2>"$TMP/err"
check "--journal o -o o (neither exists yet) exits 2" [ $? -eq 2 ]
check "... and creates neither" [ ! -e "$TMP/o.jsonl" ]
mkdir -p "$TMP/sub"
run --log "$TMP/sub/../a.log" --summary-json "$TMP/a.log" "$TMP/jobs.txt" >/dev/null 2>&1
check "two outputs that resolve to one new file are refused" [ $? -eq 2 ]
mkdir -p "$TMP/sub"
(cd "$TMP/sub" && run --log ../b.log --summary-json "$TMP/b.log" "$TMP/jobs.txt" >/dev/null 2>"$TMP/err.rel")
check "... also through a relative path" [ $? -eq 2 ]
run --log /dev/null --summary-json /dev/null -o /dev/null "$TMP/jobs.txt" 2>/dev/null
check "/dev/null may be several outputs (not a regular file)" [ $? -eq 0 ]

# ---- -d @FILE is bounded (item 7) -----------------------------------------------
echo "$B/echo/x" | timeout 10 "$P" run --no-progress -q -d @/dev/zero >/dev/null 2>"$TMP/err"
rc=$?
check "-d @/dev/zero exits 2 at once" [ $rc -eq 2 ]
check_grep "... naming the file and the cap" "'/dev/zero' is larger than --max-data" "$TMP/err"
head -c 5000 /dev/urandom | base64 -w0 >"$TMP/body.txt"
echo "$B/echo/x" | run -d @"$TMP/body.txt" --max-data 8k >"$TMP/d.out"
# shellcheck disable=SC2016 # $b: jq's variable, not the shell's
check "a file under --max-data is sent whole" jq -e --rawfile b "$TMP/body.txt" '.body==$b' "$TMP/d.out"
echo "$B/echo/x" | run -d @"$TMP/body.txt" --max-data 4k >/dev/null 2>&1
check "the same file over --max-data 4k is refused" [ $? -eq 2 ]

# ---- --max-body is a flag ----------------------------------------------------------
echo "{\"url\":\"$B/echo/x\",\"body\":\"$(printf 'x%.0s' $(seq 300))\"}" | run --max-body 100 >"$TMP/mb.out"
check "--max-body 100 keeps 100 bytes and says body_truncated" jq -e '(.body|length)==100 and .body_truncated' "$TMP/mb.out"
run --max-body 0 - </dev/null 2>"$TMP/err"
check_grep "--max-body 0 is refused with its range" "--max-body: expected a size from 1" "$TMP/err"

# ---- every output failure exits non-zero and names the file --------------------
run --log /dev/full "$TMP/jobs.txt" >"$TMP/full.out" 2>"$TMP/err"
check "--log /dev/full exits 1" [ $? -eq 1 ]
check_grep "... naming the log" "--log: cannot write the attempt log '/dev/full'" "$TMP/err"
check "... the results are still written" [ "$(wc -l <"$TMP/full.out")" -eq 2 ]
run --summary-json /dev/full "$TMP/jobs.txt" >/dev/null 2>"$TMP/err"
check "--summary-json /dev/full exits 1" [ $? -eq 1 ]
check_grep "... naming the file" "--summary-json: cannot write '/dev/full'" "$TMP/err"
run --summary-json "$TMP/nodir/s.json" "$TMP/jobs.txt" >/dev/null 2>"$TMP/err"
check "--summary-json into a missing directory exits 1" [ $? -eq 1 ]
mkdir -p "$TMP/bodies"
printf '{"id":"ok1","url":"%s/ok/1"}\n' "$B" >"$TMP/b1.txt"
mkdir "$TMP/bodies/ok1" # a directory where the body file should go
run --bodies-dir "$TMP/bodies" "$TMP/b1.txt" >/dev/null 2>"$TMP/err"
check "a body file that cannot be written exits 1" [ $? -eq 1 ]
check_grep "... naming it" "cannot write body file .*bodies/ok1" "$TMP/err"
run -o /dev/full "$TMP/jobs.txt" 2>"$TMP/err"
check "-o /dev/full exits 1" [ $? -eq 1 ]

# ---- --bodies-dir names are unique (and reversible) ----------------------------
printf '{"id":"order!&/@/'"'"'?!","url":"%s/ok/A"}\n{"id":"order),:@&{<:","url":"%s/ok/B"}\n{"id":"..","url":"%s/ok/C"}\n' "$B" "$B" "$B" >"$TMP/ids.txt"
rm -rf "$TMP/bd"
run --bodies-dir "$TMP/bd" "$TMP/ids.txt" >"$TMP/ids.out"
check "three ids, three body files" [ "$(find "$TMP/bd" -mindepth 1 -maxdepth 1 | wc -l)" -eq 3 ]
check "each body in its own file" jq -e -s 'map(.body_file)|unique|length==3' "$TMP/ids.out"
ok_files=1
while read -r line; do
  f=$(jq -r .body_file <<<"$line"); id=$(jq -r .id <<<"$line")
  dec=$(python3 -c 'import sys,urllib.parse,os; print(urllib.parse.unquote(os.path.basename(sys.argv[1])))' "$f")
  [ "$dec" = "$id" ] || ok_files=0
  grep -q "ok /ok/" "$f" || ok_files=0
done <"$TMP/ids.out"
check "each file name %-decodes to its id and holds its body" [ $ok_files -eq 1 ]

# ---- --timeout 0 and friends ------------------------------------------------------
run --timeout 0 "$TMP/jobs.txt" 2>"$TMP/err"
check "--timeout 0 exits 2" [ $? -eq 2 ]
check_grep "... saying it must be above zero" "--timeout: invalid duration '0' \(it must be above zero\)" "$TMP/err"
run --connect-timeout 0 "$TMP/jobs.txt" 2>/dev/null
check "--connect-timeout 0 exits 2" [ $? -eq 2 ]

# ---- a header without a colon is not echoed --------------------------------------
run -H 'Bearer sk-THESECRET123' "$TMP/jobs.txt" 2>"$TMP/err"
check "-H 'Bearer sk-...' exits 2" [ $? -eq 2 ]
check_no_grep "... and the value is not in the message" "THESECRET|sk-" "$TMP/err"
check_grep "... which names -H" "^polite run: -H: " "$TMP/err"
run -H 'X Bad: sk-THESECRET123' "$TMP/jobs.txt" 2>"$TMP/err"
check_no_grep "a bad header name does not echo the value either" "THESECRET" "$TMP/err"
finish
