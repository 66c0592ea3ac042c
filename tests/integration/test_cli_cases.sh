#!/usr/bin/env bash
# Runs every declarative CLI case in tests/cases/*.case (curl's tests/data
# model): each file names the server behaviour, the command, its input and
# the expected exit status, stdout and stderr. Format (tests/cases/README.md):
#   --- name            one line: what the case shows
#   --- server          none (default) or py (tests/integration/run/server.py)
#   --- args            the polite arguments, shell-quoted, one line
#   --- stdin           lines fed to standard input (default: none)
#   --- file NAME       a file created in the case's directory first
#   --- exit            the expected exit status
#   --- stdout          the exact standard output
#   --- stdout-match    regular expressions (grep -E), each must match a line
#   --- stderr-match    the same for standard error
#   --- stderr-not      regular expressions no line of stderr (or stdout) may match
# In every section %URL% is the server's http://127.0.0.1:PORT and %DIR% the
# case's own directory.
. "$(dirname "$0")/lib.sh"
CASES=${POLITE_CASES:-$POLITE_SRC/tests/cases}

# section FILE NAME: prints the body of "--- NAME" (up to the next ---).
section() {
  awk -v want="$2" '
    /^--- / { cur = substr($0, 5); next }
    cur == want { print }' "$1"
}
has_section() { grep -qx -- "--- $2" "$1"; }
subst() { sed -e "s#%URL%#${URL:-}#g" -e "s#%DIR%#$DIR#g"; }

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
  if [ "$server" = py ] && [ -z "$URL" ]; then
    start_pyserver
    URL=http://127.0.0.1:$PY_PORT
  fi
  # Files first (several "--- file NAME" sections).
  grep -E '^--- file ' "$f" | while read -r _ _ fname; do
    section "$f" "file $fname" | subst >"$DIR/$fname"
  done
  args=$(section "$f" args | head -1 | subst)
  eval "argv=($args)"
  if has_section "$f" stdin; then
    section "$f" stdin | subst >"$DIR/stdin"
  else
    : >"$DIR/stdin"
  fi
  (cd "$DIR" && timeout 60 "$POLITE" "${argv[@]}" <"$DIR/stdin" >"$DIR/stdout" 2>"$DIR/stderr")
  rc=$?
  want=$(section "$f" exit | head -1)
  check_eq "$c: $name: exit status" "$rc" "${want:-0}"
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
done
check "the cases directory has cases ($n)" [ "$n" -gt 0 ]
finish
