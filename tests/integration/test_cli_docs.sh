#!/usr/bin/env bash
# One source per option: --help, the option tables in docs/ and the man
# pages are generated from the tables in src/, and this test fails when they
# drift apart. Also: --opt=value and --opt value work for every command, and
# errors name the option and the value.
. "$(dirname "$0")/lib.sh"
P=$POLITE
GEN=$POLITE_SRC/tools/polite_docs.py

# ---- docs/*.md tables are exactly what the tables print ----------------------
python3 "$GEN" docs "$P" "$POLITE_SRC/docs" --check 2>"$TMP/drift"
check "docs/ option tables match 'polite help --markdown'" [ $? -eq 0 ]
[ -s "$TMP/drift" ] && sed 's/^/#   /' "$TMP/drift"
# The check can fail: a changed row in a copy of docs/ is found.
cp -r "$POLITE_SRC/docs" "$TMP/docs"
# shellcheck disable=SC2016 # the backquotes are the page's Markdown, not a command
sed -i 's/| `--burst N` | 1 (1..1000000) |/| `--burst N` | 2 |/' "$TMP/docs/run.md"
python3 "$GEN" docs "$P" "$TMP/docs" --check 2>"$TMP/drift2"
check "a drifted row is caught" [ $? -eq 1 ]
check_grep "... naming the page" "run.md" "$TMP/drift2"
python3 "$GEN" docs "$P" "$TMP/docs" >/dev/null
cmp -s "$TMP/docs/run.md" "$POLITE_SRC/docs/run.md"
check "regenerating restores the page" [ $? -eq 0 ]

# Rows of another command's table (queue.md shows polite run's queue rows)
# drift too.
# shellcheck disable=SC2016 # the backquotes are the page's Markdown, not a command
sed -i 's/| `--lease DURATION` | 30s |/| `--lease DURATION` | 60s |/' "$TMP/docs/queue.md"
python3 "$GEN" docs "$P" "$TMP/docs" --check 2>"$TMP/drift4"
check "a drifted row of run's table in queue.md is caught" [ $? -eq 1 ]
check_grep "... naming queue.md" "queue.md" "$TMP/drift4"

# ---- man pages: generated, readable with man -l, one entry per option -------
# Every command and subcommand, from the tree the binary prints: a command
# added anywhere is checked without editing this test.
"$P" help --json >"$TMP/tree.json"
jq -r '.. | objects | select(has("subcommands")) | .name | select(. != "")' \
  "$TMP/tree.json" >"$TMP/commands"
check "the tree lists every command and subcommand ($(wc -l <"$TMP/commands"))" \
  grep -qx "proxy ca" "$TMP/commands"
python3 "$GEN" man "$P" "$POLITE_SRC/docs" "$TMP/man" >"$TMP/pages"
check "the generator writes the man pages" [ $? -eq 0 ]
# A page per command with a docs page of its own; a subcommand without one
# (budget show) is a section of its parent's page.
missing_page=
while read -r name; do
  page=polite-${name// /-}
  if [ -f "$POLITE_SRC/docs/${name// /-}.md" ]; then
    grep -qx "$page" "$TMP/pages" || missing_page="$missing_page $page"
  else
    parent=${name% *}
    [ "$parent" != "$name" ] && [ -f "$POLITE_SRC/docs/${parent// /-}.md" ] ||
      missing_page="$missing_page $page(no docs page, nor its parent's)"
  fi
done <"$TMP/commands"
check_eq "no command without a man page" "$missing_page" ""
cmake_pages=$(sed -n '/set(POLITE_MAN_PAGES/,/)/p' "$POLITE_SRC/CMakeLists.txt" |
  tr -s ' ()\n' '\n' | grep '^polite' | sort | tr '\n' ' ')
check_eq "CMakeLists.txt's POLITE_MAN_PAGES lists every page" "$cmake_pages" \
  "$(sort "$TMP/pages" | tr '\n' ' ')"
while read -r page; do
  f=$TMP/man/$page.1
  check "$page.1 exists" test -s "$f"
  MANWIDTH=100 man -l "$f" >"$TMP/$page.txt" 2>"$TMP/$page.err"
  check "man -l $page.1 renders" [ $? -eq 0 -a -s "$TMP/$page.txt" ]
  groff -man -Tutf8 -ww -z "$f" 2>"$TMP/$page.warn"
  check "$page.1 has no roff warnings" [ ! -s "$TMP/$page.warn" ]
  [ -s "$TMP/$page.warn" ] && head -5 "$TMP/$page.warn" | sed 's/^/#   /'
  [ -n "${POLITE_BUILD:-}" ] && [ -f "$POLITE_BUILD/man/$page.1" ] &&
    check "the build's $page.1 is up to date" cmp -s "$f" "$POLITE_BUILD/man/$page.1"
done <"$TMP/pages"
while read -r page; do
  [ "$page" = polite ] ||
    check_grep "polite(1) lists $page" "${page//-/.}\(1\)" "$TMP/polite.txt"
done <"$TMP/pages"
# Every option of every command: in its --help, its man page and its docs
# page (the page of its own, else its parent's).
while read -r name; do
  jq -r --arg n "$name" '.. | objects | select(.name? == $n and has("subcommands")) |
    .options[].name' "$TMP/tree.json" >"$TMP/names"
  [ -s "$TMP/names" ] || continue
  md=$POLITE_SRC/docs/${name// /-}.md man=$TMP/polite-${name// /-}.txt
  if [ ! -f "$md" ]; then
    md=$POLITE_SRC/docs/${name%% *}.md man=$TMP/polite-${name%% *}.txt
  fi
  missing_help='' missing_man='' missing_md=''
  # shellcheck disable=SC2086 # the words of the name are its argv
  "$P" $name --help >"$TMP/help.txt"
  while read -r opt; do
    grep -qF -- "--$opt" "$TMP/help.txt" || missing_help="$missing_help $opt"
    grep -qF -- "--$opt" "$man" || missing_man="$missing_man $opt"
    grep -qF -- "\`--$opt" "$md" || grep -qF -- ", --$opt" "$md" ||
      missing_md="$missing_md $opt"
  done <"$TMP/names"
  check_eq "every '$name' option is in --help ($(wc -l <"$TMP/names"))" "$missing_help" ""
  check_eq "every '$name' option is in its man page" "$missing_man" ""
  check_eq "every '$name' option is in its docs page" "$missing_md" ""
done <"$TMP/commands"
for page in polite-run polite-plan polite-delay polite-diagnose polite-proxy \
  polite-report polite-budget polite-proxy-ca polite-help; do
  check_grep "$page(1) has the docs page's prose" "EXIT STATUS|OUTPUT|UNITS|WHAT|INPUT|BOUNDS" "$TMP/$page.txt"
done
check_grep "polite-budget(1) has both subcommands' synopses" "polite budget clear \[OPTIONS\] URI" "$TMP/polite-budget.txt"
check_grep "polite-proxy(1) lists polite proxy ca" "polite proxy ca" "$TMP/polite-proxy.txt"
# The proxy's table can drift too: a changed row of docs/proxy.md is found.
# shellcheck disable=SC2016 # the backquotes are the page's Markdown, not a command
sed -i 's/| `--max-headers N` | 100 (1..100000) |/| `--max-headers N` | 200 |/' "$TMP/docs/proxy.md"
python3 "$GEN" docs "$P" "$TMP/docs" --check 2>"$TMP/drift3"
check "a drifted proxy row is caught" [ $? -eq 1 ]
check_grep "... naming proxy.md" "proxy.md" "$TMP/drift3"
# So can a subcommand's table in its parent's page.
python3 "$GEN" docs "$P" "$TMP/docs" >/dev/null
# shellcheck disable=SC2016 # the backquotes are the page's Markdown, not a command
sed -i 's/| `--json` | off | print one JSON object |/| `--json` | on | print one JSON object |/' "$TMP/docs/budget.md"
python3 "$GEN" docs "$P" "$TMP/docs" --check 2>"$TMP/drift4"
check "a drifted 'budget show' row is caught" [ $? -eq 1 ]
check_grep "... naming budget.md" "budget.md" "$TMP/drift4"

# ---- installed by cmake --install into share/man/man1 ----------------------
if [ -f "$POLITE_BUILD/cmake_install.cmake" ]; then
  cmake --install "$POLITE_BUILD" --prefix "$TMP/inst" >/dev/null
  check "cmake --install puts polite-run.1 in share/man/man1" test -s "$TMP/inst/share/man/man1/polite-run.1"
  MANWIDTH=80 man -l "$TMP/inst/share/man/man1/polite-run.1" 2>/dev/null | grep -q -- "--cacert"
  check "the installed page reads with man -l" [ $? -eq 0 ]
fi

# ---- --opt=value and --opt value everywhere; errors name option and value ----
# Every row that takes a value, of every command and subcommand, given both
# ways before --help: the two must end alike (same exit status, same
# message), and neither may call the option unknown or valueless. A sample
# value per kind (an invalid one for a row that checks more is refused the
# same way both times).
jq -r '.. | objects | select(has("subcommands") and .name != "") | .name as $c |
  .options[] | select(.takes_value) | [$c, .name, .kind] | @tsv' "$TMP/tree.json" \
  >"$TMP/valued"
declare -A sample=([uint]=1 [int]=1 [duration]=1s [rate]=1/s [size]=1k
  [string]=x [enum]=x [list]='X-A: b' [custom]='X-A: b')
differ='' refused='' accepted=0 n=0
while IFS=$'\t' read -r cmd opt kind; do
  v=${sample[$kind]:-x}
  # shellcheck disable=SC2086 # the words of the name are its argv
  (cd "$TMP" && "$P" $cmd "--$opt=$v" --help >/dev/null 2>"$TMP/eq.err"); a=$?
  # shellcheck disable=SC2086
  (cd "$TMP" && "$P" $cmd "--$opt" "$v" --help >/dev/null 2>"$TMP/sp.err"); b=$?
  n=$((n + 1))
  [ "$a" -eq 0 ] && accepted=$((accepted + 1))
  if [ "$a" -ne "$b" ] || ! cmp -s "$TMP/eq.err" "$TMP/sp.err"; then
    differ="$differ $cmd:--$opt"
  fi
  grep -qE "unknown option|takes no value|needs a value" "$TMP/eq.err" &&
    refused="$refused $cmd:--$opt"
done <"$TMP/valued"
check_eq "--opt=value ends as --opt value for all $n rows that take a value" "$differ" ""
check_eq "... and no row refuses the = form" "$refused" ""
check "... most sample values are accepted ($accepted of $n)" [ "$accepted" -gt $((n / 2)) ]
check "polite proxy ca --dir=X --path (issue 25: refused as unknown)" \
  "$P" proxy ca --dir="$TMP/ca-eq" --path
check_eq "... and --dir=X is the directory used" "$("$P" proxy ca --dir="$TMP/ca-eq" --path)" "$TMP/ca-eq/ca.pem"
"$P" report --out="$TMP/eq.html" - </dev/null 2>/dev/null
check "polite report --out=FILE writes FILE" test -s "$TMP/eq.html"

printf 'HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\n\r\n' >"$TMP/r.txt"
a=$("$P" delay --json --now=0 12) && b=$("$P" delay --json --now 0 12)
check_eq "delay --now=0 and --now 0 agree" "$a" "$b"
a=$("$P" diagnose --json --now=0 "$TMP/r.txt") && b=$("$P" diagnose --json --now 0 "$TMP/r.txt")
check_eq "diagnose --now=0 and --now 0 agree (issue 16: exited 2)" "$a" "$b"
a=$("$P" plan --json --allowance=120/min --requests=600) && b=$("$P" plan --json --allowance 120/min --requests 600)
check_eq "plan --allowance=V and --allowance V agree" "$a" "$b"
"$P" run --concurrency=abc x >/dev/null 2>"$TMP/e1"
check "run --concurrency=abc exits 2" [ $? -eq 2 ]
check_grep "... naming the option and the value" "--concurrency: .*'abc'" "$TMP/e1"
"$P" run --rate >/dev/null 2>"$TMP/e2"
check_grep "a missing value names the option" "--rate needs a value" "$TMP/e2"
"$P" run --quiet=yes >/dev/null 2>"$TMP/e3"
check_grep "a flag with a value is refused" "--quiet takes no value" "$TMP/e3"
"$P" run -qk --no-progress --help >/dev/null
check "bundled short flags (-qk) parse" [ $? -eq 0 ]
"$P" run --budget-scope=planet x >/dev/null 2>"$TMP/e4"
check_grep "an enum lists its choices" "run\|host.*'planet'" "$TMP/e4"
"$P" run --max-body 2Q x >/dev/null 2>"$TMP/e5"
check_grep "a size names the option" "--max-body: expected a size" "$TMP/e5"
finish
