#!/usr/bin/env bash
# Journal, budget and output paths (issue #21 item 7): a journal in a
# directory that cannot hold it is refused with the real cause; a symbolic
# link at any path polite writes (journal, file: budget, --out, --log,
# --summary-json, --report, a body file) is refused the same way, dangling
# or not, and its target is left untouched; a link to a stream
# (/dev/stdout, /dev/null) is written like the stream.
. "$(dirname "$0")/lib.sh"
start_pyserver
echo "http://127.0.0.1:$PY_PORT/ok/p1" >"$TMP/in.txt"
run() { "$POLITE" run --no-progress -q "$@"; }
cd "$TMP" || exit 1

# --- a journal whose directory cannot hold it ---------------------------------
MNT=""
at_exit() { [ -n "$MNT" ] && umount "$MNT" 2>/dev/null; }
on_exit at_exit
mkdir -p ro
if mount -t tmpfs -o ro,size=64k tmpfs ro 2>/dev/null; then
  MNT=$TMP/ro
  run --journal ro/j --out o.jsonl in.txt 2>err
  check_eq "a journal on a read-only file system is refused (exit 1)" "$?" 1
  check_grep "... naming the directory and the real cause" \
    "journal 'ro/j': cannot create files in its directory 'ro': Read-only file system" err
  check_no_grep "... not 'No such file or directory'" "No such file or directory" err
else
  echo "# tmpfs mount not permitted here: the read-only case is skipped"
fi
run --journal missing/dir/j --out o.jsonl in.txt 2>err
check_eq "a journal in a missing directory is a usage error (exit 2)" "$?" 2
check_grep "... saying the directory does not exist" \
  "cannot create files in its directory 'missing/dir': No such file or directory" err

# --- symbolic links at every path polite writes --------------------------------
echo precious >target.txt
ln -s target.txt link_to_file
ln -s nowhere.txt dangling
# refused WHAT ARGS...: the run exits 2 naming WHAT and the link, writes
# nothing through it, and creates no dangling target.
refused() {
  local what=$1
  shift
  run "$@" in.txt >/dev/null 2>err
  local st=$?
  check_eq "$what through a symbolic link is refused (exit 2)" "$st" 2
  check_grep "... naming it as a link" "symbolic link" err
}
for l in link_to_file dangling; do
  refused "--journal ($l)" --journal "$l" --out o.jsonl
  refused "--out ($l)" --out "$l"
  refused "--log ($l)" --log "$l"
  refused "--summary-json ($l)" --summary-json "$l"
  refused "--report ($l)" --report "$l"
  refused "--budget file: ($l)" --budget "file:$TMP/$l"
done
check_eq "the link's target is untouched" "$(cat target.txt)" precious
check "no file was made at the dangling link's target" [ ! -e nowhere.txt ]
check "... and the links are still there" [ -L dangling ] && [ -L link_to_file ]

# A body file planted as a link inside --bodies-dir is refused too.
mkdir bodies
printf '{"id":"b1","url":"http://127.0.0.1:%s/ok/b1"}\n' "$PY_PORT" >b.jsonl
ln -s ../target.txt bodies/b1
run --bodies-dir bodies --out b.out b.jsonl 2>err
check_eq "a planted body-file link: exit 1" "$?" 1
check_grep "... the body file is not written through it" "cannot write body file bodies/b1" err
check_eq "... the target is untouched" "$(cat target.txt)" precious

# --- links to streams are written like the stream --------------------------------
check "-o /dev/stdout works" run -o /dev/stdout in.txt
check "--log /dev/stderr works" run --log /dev/stderr in.txt
ln -s /dev/null to_null
check "--log through a link to /dev/null works" run --log to_null in.txt
finish
