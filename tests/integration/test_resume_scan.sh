#!/usr/bin/env bash
# polite run --resume accepts every line polite writes (#15.2): a result
# whose body holds a NUL byte, and a results file whose last line a full
# disk or a crash cut short (with or without a newline, or NUL-filled) is
# repaired, not fatal. A bad line that is not polite's is still refused and
# left as it is.
. "$(dirname "$0")/lib.sh"
start_pyserver
B=http://127.0.0.1:$PY_PORT
IN=$TMP/in.jsonl
for i in 1 2 3 4; do
  printf '{"id":"n%d","method":"POST","url":"%s/echo/x","body":"a\\u0000b%d","idempotency_key":"k%d"}\n' \
    "$i" "$B" "$i" "$i"
done >"$IN"
run() { "$POLITE" run --no-progress -q --concurrency 2 "$@"; }
sent() { grep -c '"/echo/x"' "$PY_REC"; }
# once_each OUT: every id n1..n4 has exactly one line, and it is ok.
once_each() {
  jq -e -s '(map(.id) | sort) == ["n1","n2","n3","n4"] and all(.outcome == "ok")' "$1"  2>/dev/null
}

# --- 1. a body with a NUL byte ---------------------------------------------
run --journal "$TMP/j" --out "$TMP/o" "$IN" 2>"$TMP/err"
check "a first run with NUL bodies exits 0" [ $? -eq 0 ]
check "... and writes the NUL as \\u0000" grep -q 'a\\u0000b1' "$TMP/o"
n0=$(sent)
run --journal "$TMP/j" --out "$TMP/o" --resume "$IN" 2>"$TMP/err"
st=$?
check "--resume reads those lines (exit $st)" [ $st -eq 0 ]
check "... and finds all 4 done" grep -q "4 already done" "$TMP/err"
check "... sending nothing again" [ "$(sent)" -eq "$n0" ]

# tear LINE_BYTES: replaces the last line of o by its first LINE_BYTES bytes
# plus a newline, as a write cut short and then followed by a newline does.
tear() {
  local last
  last=$(tail -n 1 "$TMP/o")
  head -n -1 "$TMP/o" >"$TMP/o.new"
  printf '%s\n' "${last:0:$1}" >>"$TMP/o.new"
  mv "$TMP/o.new" "$TMP/o"
}

# --- 2. a torn last line that ends in a newline ----------------------------
tear 25
run --journal "$TMP/j" --out "$TMP/o" --resume "$IN" 2>"$TMP/err"
st=$?
check "a torn last line with a newline is repaired (exit $st)" [ $st -eq 0 ]
check "... saying so" grep -q "torn last result line removed" "$TMP/err"
check "... each id ok exactly once" once_each "$TMP/o"

# --- 3. a NUL-filled tail (blocks allocated, never written) ----------------
head -c 4096 /dev/zero >>"$TMP/o"
printf '\n' >>"$TMP/o"
run --journal "$TMP/j" --out "$TMP/o" --resume "$IN" 2>"$TMP/err"
st=$?
check "a NUL-filled last line is repaired (exit $st)" [ $st -eq 0 ]
check "... each id ok exactly once" once_each "$TMP/o"
check "... and no NUL byte is left" bash -c "! tr -d '\\n' <'$TMP/o' | grep -qaP '\\x00'"

# --- 4. a torn line without a newline (the old repair still holds) ---------
tail -n 1 "$TMP/o" | head -c 30 >"$TMP/cut"
head -n -1 "$TMP/o" >"$TMP/o.new" && cat "$TMP/cut" >>"$TMP/o.new" && mv "$TMP/o.new" "$TMP/o"
run --journal "$TMP/j" --out "$TMP/o" --resume "$IN" 2>"$TMP/err"
check "a torn line without a newline is repaired" [ $? -eq 0 ]
check "... each id ok exactly once" once_each "$TMP/o"

# --- 5. lines that are not polite's are refused, and kept ------------------
cp "$TMP/o" "$TMP/o.good"
echo "my notes" >>"$TMP/o"
size=$(stat -c %s "$TMP/o")
run --journal "$TMP/j" --out "$TMP/o" --resume "$IN" 2>"$TMP/err"
st=$?
check "a foreign last line is refused (exit $st)" [ $st -eq 2 ]
check "... naming its line" grep -q "line 5 of the results file" "$TMP/err"
check "... and the file is untouched" [ "$(stat -c %s "$TMP/o")" -eq "$size" ]
{ head -n 2 "$TMP/o.good"; echo '{"id":"n9","outc'; tail -n +3 "$TMP/o.good"; } >"$TMP/o"
run --journal "$TMP/j" --out "$TMP/o" --resume "$IN" 2>"$TMP/err"
st=$?
check "a torn line in the middle is refused (exit $st)" [ $st -eq 2 ]
check "... naming line 3" grep -q "line 3 of the results file" "$TMP/err"
finish
