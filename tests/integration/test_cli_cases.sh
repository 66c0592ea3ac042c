#!/usr/bin/env bash
# Runs every declarative CLI case in tests/cases/*.case (curl's tests/data
# model): each file names the server behaviour, the command, its input and
# the expected exit status, stdout and stderr. Format (tests/cases/README.md):
#   --- name            one line: what the case shows
#   --- server          none (default), py (tests/integration/upstream.py),
#                       or proxy ARGS... (py behind a polite proxy ARGS...,
#                       started for the case and stopped after it)
#   --- args            the polite arguments, shell-quoted, one line
#   --- stdin           lines fed to standard input (default: none)
#   --- file NAME       a file created in the case's directory first
#   --- exit            the expected exit status
#   --- stdout          the exact standard output
#   --- stdout-match    regular expressions (grep -E), each must match a line
#   --- stderr-match    the same for standard error
#   --- stderr-not      regular expressions no line of stderr (or stdout) may match
#   --- expect-file NAME     regular expressions, each must match a line of
#                            the case directory's file NAME after the command
#   --- expect-file-not NAME regular expressions no line of NAME may match
#   --- before / --- after   shell lines run in the case's directory before
#                       the command / after it while the servers still run
#                       (curl, jq, a second polite); each must exit 0
# A case with steps may leave out --- args: its steps are the case.
# In every section %URL% is the server's http://127.0.0.1:PORT, %PX% the
# proxy's ADDR:PORT, %PXLOG% its log file and %DIR% the case's own directory.
. "$(dirname "$0")/lib.sh"
CASES=${POLITE_CASES:-$POLITE_SRC/tests/cases}

# section FILE NAME: prints the body of "--- NAME" (up to the next ---).
section() {
  awk -v want="$2" '
    /^--- / { cur = substr($0, 5); next }
    cur == want { print }' "$1"
}
has_section() { grep -qx -- "--- $2" "$1"; }
subst() {
  sed -e "s#%URL%#${URL:-}#g" -e "s#%DIR%#$DIR#g" -e "s#%PX%#${PX:-}#g" \
    -e "s#%PXLOG%#$DIR/proxy.log#g"
}

# case_proxy ARGS...: a polite proxy in front of the py server for this case
# (its log in $DIR/proxy.log); sets PX and CASE_PX_PID.
case_proxy() {
  rm -f "$DIR/px.addr"
  "$POLITE" proxy --listen 127.0.0.1:0 --ready-file "$DIR/px.addr" \
    --upstream "$URL" --log "$DIR/proxy.log" "$@" >"$DIR/proxy.err" 2>&1 &
  CASE_PX_PID=$!
  for _ in $(seq 100); do
    [ -s "$DIR/px.addr" ] && break
    sleep 0.05
  done
  PX=$(cat "$DIR/px.addr" 2>/dev/null)
  [ -n "$PX" ] || sed 's/^/#   /' "$DIR/proxy.err"
}
case_proxy_stop() {
  [ -n "${CASE_PX_PID:-}" ] || return 0
  kill "$CASE_PX_PID" 2>/dev/null
  wait "$CASE_PX_PID" 2>/dev/null
  CASE_PX_PID='' PX=''
}
on_exit case_proxy_stop

# run_steps FILE SECTION: runs each line of the section as a shell command in
# the case's directory (a minute at most each); a line that exits non-zero is
# a failed check that names it, with its stderr.
run_steps() {
  local line k=0
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    k=$((k + 1))
    if (cd "$DIR" && POLITE=$POLITE timeout 60 bash -c "$line") \
      >"$DIR/step.out" 2>"$DIR/step.err"; then
      ok "$c: $2 step $k"
    else
      bad "$c: $2 step $k failed: $line"
      cat "$DIR/step.out" "$DIR/step.err" | sed 's/^/#   /' | head -10
    fi
  done <<<"$(section "$1" "$2" | subst)"
}

# match_all DESC FILE PATTERNS: every pattern must match a line of FILE.
match_all() {
  local desc=$1 file=$2 pats=$3 re miss=
  while IFS= read -r re; do
    [ -z "$re" ] && continue
    grep -qE -- "$re" "$file" || miss="$miss [$re]"
  done <<<"$pats"
  if [ -z "$miss" ]; then ok "$desc"; else
    bad "$desc: no line matches$miss in:"
    sed 's/^/#   /' "$file" | head -15
  fi
}

URL=
n=0
for f in "$CASES"/*.case; do
  n=$((n + 1))
  c=$(basename "$f" .case)
  DIR=$TMP/$c
  mkdir -p "$DIR"
  name=$(section "$f" name | head -1)
  server=$(section "$f" server | head -1)
  if [ -n "$server" ] && [ "$server" != none ] && [ -z "$URL" ]; then
    start_pyserver
    URL=http://127.0.0.1:$PY_PORT
  fi
  case $server in
  "proxy "*)
    pxargv=()
    eval "pxargv=(${server#proxy } )"
    case_proxy "${pxargv[@]}"
    check "$c: the case's proxy listens" [ -n "$PX" ]
    ;;
  esac
  # Files first (several "--- file NAME" sections).
  grep -E '^--- file ' "$f" | while read -r _ _ fname; do
    section "$f" "file $fname" | subst >"$DIR/$fname"
  done
  args=$(section "$f" args | head -1 | subst)
  argv=()
  eval "argv=($args)"
  if has_section "$f" stdin; then
    section "$f" stdin | subst >"$DIR/stdin"
  else
    : >"$DIR/stdin"
  fi
  has_section "$f" before && run_steps "$f" before
  if [ ${#argv[@]} -gt 0 ]; then
    (cd "$DIR" && timeout 60 "$POLITE" "${argv[@]}" <"$DIR/stdin" >"$DIR/stdout" 2>"$DIR/stderr")
    rc=$?
    want=$(section "$f" exit | head -1)
    check_eq "$c: $name: exit status" "$rc" "${want:-0}"
  else
    : >"$DIR/stdout"
    : >"$DIR/stderr"
    if has_section "$f" before || has_section "$f" after; then
      ok "$c: $name: steps only"
    else
      bad "$c: $name: no --- args and no steps"
    fi
  fi
  has_section "$f" after && run_steps "$f" after
  if has_section "$f" stdout; then
    section "$f" stdout | subst >"$DIR/want"
    if cmp -s "$DIR/want" "$DIR/stdout"; then ok "$c: stdout"; else
      bad "$c: stdout differs:"
      diff "$DIR/want" "$DIR/stdout" | head -10 | sed 's/^/#   /'
    fi
  fi
  has_section "$f" stdout-match &&
    match_all "$c: stdout matches" "$DIR/stdout" "$(section "$f" stdout-match | subst)"
  has_section "$f" stderr-match &&
    match_all "$c: stderr matches" "$DIR/stderr" "$(section "$f" stderr-match | subst)"
  if has_section "$f" stderr-not; then
    leaked=
    while IFS= read -r re; do
      [ -z "$re" ] && continue
      grep -qE -- "$re" "$DIR/stderr" "$DIR/stdout" && leaked="$leaked [$re]"
    done <<<"$(section "$f" stderr-not | subst)"
    check_eq "$c: nothing forbidden in the output" "$leaked" ""
  fi
  case_proxy_stop # its log is complete once it has stopped
  # (Read from a process substitution, not a pipe: the counts must stay.)
  while read -r _ _ fname; do
    match_all "$c: $fname matches" "$DIR/$fname" "$(section "$f" "expect-file $fname" | subst)"
  done < <(grep -E '^--- expect-file ' "$f")
  while read -r _ _ fname; do
    leaked=
    while IFS= read -r re; do
      [ -z "$re" ] && continue
      grep -qE -- "$re" "$DIR/$fname" && leaked="$leaked [$re]"
    done <<<"$(section "$f" "expect-file-not $fname" | subst)"
    check_eq "$c: nothing forbidden in $fname" "$leaked" ""
  done < <(grep -E '^--- expect-file-not ' "$f")
done
check "the cases directory has cases ($n)" [ "$n" -gt 0 ]
finish
