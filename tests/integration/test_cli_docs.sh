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
sed -i 's/| `--burst N` | 1 (1..1000000) |/| `--burst N` | 2 |/' "$TMP/docs/run.md"
python3 "$GEN" docs "$P" "$TMP/docs" --check 2>"$TMP/drift2"
check "a drifted row is caught" [ $? -eq 1 ]
check_grep "... naming the page" "run.md" "$TMP/drift2"
python3 "$GEN" docs "$P" "$TMP/docs" >/dev/null
cmp -s "$TMP/docs/run.md" "$POLITE_SRC/docs/run.md"
check "regenerating restores the page" [ $? -eq 0 ]

# ---- man pages: generated, readable with man -l, one entry per option -------
python3 "$GEN" man "$P" "$POLITE_SRC/docs" "$TMP/man"
check "the generator writes the man pages" [ $? -eq 0 ]
for page in polite polite-run polite-plan polite-delay polite-diagnose polite-proxy polite-queue; do
  f=$TMP/man/$page.1
  check "$page.1 exists" test -s "$f"
  MANWIDTH=100 man -l "$f" >"$TMP/$page.txt" 2>"$TMP/$page.err"
  check "man -l $page.1 renders" [ $? -eq 0 -a -s "$TMP/$page.txt" ]
  groff -man -Tutf8 -ww -z "$f" 2>"$TMP/$page.warn"
  check "$page.1 has no roff warnings" [ ! -s "$TMP/$page.warn" ]
  [ -s "$TMP/$page.warn" ] && head -5 "$TMP/$page.warn" | sed 's/^/#   /'
  [ -n "${POLITE_BUILD:-}" ] && [ -f "$POLITE_BUILD/man/$page.1" ] &&
    check "the build's $page.1 is up to date" cmp -s "$f" "$POLITE_BUILD/man/$page.1"
done
for cmd in run plan delay diagnose proxy queue; do
  "$P" help --json "$cmd" | jq -r '.options[].name' >"$TMP/names.$cmd"
  n=$(wc -l <"$TMP/names.$cmd")
  check "$cmd has options in its table ($n)" [ "$n" -gt 0 ]
  missing_help= missing_man= missing_md=
  "$P" "$cmd" --help >"$TMP/help.$cmd"
  while read -r name; do
    grep -qF -- "--$name" "$TMP/help.$cmd" || missing_help="$missing_help $name"
    grep -qF -- "--$name" "$TMP/polite-$cmd.txt" || missing_man="$missing_man $name"
    grep -qF -- "\`--$name" "$POLITE_SRC/docs/$cmd.md" ||
      grep -qF -- ", --$name" "$POLITE_SRC/docs/$cmd.md" || missing_md="$missing_md $name"
  done <"$TMP/names.$cmd"
  check_eq "every $cmd option is in --help" "$missing_help" ""
  check_eq "every $cmd option is in polite-$cmd(1)" "$missing_man" ""
  check_eq "every $cmd option is in docs/$cmd.md" "$missing_md" ""
  check_grep "polite-$cmd(1) has the docs page's prose" "EXIT STATUS|OUTPUT|UNITS|WHAT|INPUT|BOUNDS" "$TMP/polite-$cmd.txt"
done
check_grep "polite(1) lists the commands" "polite-run\(1\)" "$TMP/polite.txt"
check_grep "polite-proxy(1) lists polite proxy ca" "polite proxy ca" "$TMP/polite-proxy.txt"
# The proxy's table can drift too: a changed row of docs/proxy.md is found.
sed -i 's/| `--max-headers N` | 100 (1..100000) |/| `--max-headers N` | 200 |/' "$TMP/docs/proxy.md"
python3 "$GEN" docs "$P" "$TMP/docs" --check 2>"$TMP/drift3"
check "a drifted proxy row is caught" [ $? -eq 1 ]
check_grep "... naming proxy.md" "proxy.md" "$TMP/drift3"
# A table of some rows of another command's (queue.md shows polite run's
# queue rows) drifts too.
sed -i 's/| `--lease DURATION` | 30s |/| `--lease DURATION` | 60s |/' "$TMP/docs/queue.md"
python3 "$GEN" docs "$P" "$TMP/docs" --check 2>"$TMP/drift4"
check "a drifted row of run's table in queue.md is caught" [ $? -eq 1 ]
check_grep "... naming queue.md" "queue.md" "$TMP/drift4"
check_grep "polite-queue(1) lists the worker's options of polite run" "--max-deliveries" "$TMP/polite-queue.txt"

# ---- installed by cmake --install into share/man/man1 ----------------------
if [ -f "$POLITE_BUILD/cmake_install.cmake" ]; then
  cmake --install "$POLITE_BUILD" --prefix "$TMP/inst" >/dev/null
  check "cmake --install puts polite-run.1 in share/man/man1" test -s "$TMP/inst/share/man/man1/polite-run.1"
  MANWIDTH=80 man -l "$TMP/inst/share/man/man1/polite-run.1" 2>/dev/null | grep -q -- "--cacert"
  check "the installed page reads with man -l" [ $? -eq 0 ]
fi

# ---- --opt=value and --opt value everywhere; errors name option and value ----
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
