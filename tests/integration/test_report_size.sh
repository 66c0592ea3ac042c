#!/usr/bin/env bash
# polite report on a synthetic log of 1,000,000 requests (made here, piped on
# stdin): the page stays under 300 KB, the reader's memory stays bounded, and
# the counts on the page are the generator's.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
N=${REPORT_SIZE_N:-1000000}
LIMIT=$((300 * 1024))

# Runs the pipe under a Python parent so the report's peak RSS (its own
# child) can be read from getrusage.
python3 - "$here/../report/gen_log.py" "$N" "$TMP/expect.json" "$POLITE" \
  "$TMP/big.html" "$TMP/rss" 2>"$TMP/report.err" <<'PY'
import resource, subprocess, sys
gen, n, expect, polite, page, rss = sys.argv[1:]
g = subprocess.Popen([sys.executable, gen, n, expect], stdout=subprocess.PIPE)
r = subprocess.Popen([polite, "report", "-", "-o", page], stdin=g.stdout)
g.stdout.close()
rc = r.wait()
g.wait()
open(rss, "w").write("%d %d\n" % (rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
PY
read -r rc rss_kb <"$TMP/rss"
size=$(stat -c %s "$TMP/big.html")
echo "page: $size bytes for $N requests; peak RSS of the largest child: $rss_kb KiB"
check "polite report exits 0" test "$rc" -eq 0
check "the page is under 300 KB" test "$size" -lt "$LIMIT"
check "memory stays bounded (< 64 MiB)" test "$rss_kb" -lt 65536
for k in requests first_attempts retries network_attempts status_429 status_503 retry_wait_ms ok; do
  want=$(jq ".$k" "$TMP/expect.json")
  got=$(python3 "$here/../report/page_check.py" value "$TMP/big.html" "$k")
  check "$k on the page = $want (got $got)" python3 -c "import sys; sys.exit(float('$got') != float('$want'))"
done
bad=$(jq .bad_lines "$TMP/expect.json")
check "the $bad malformed lines are counted" grep -q "Malformed lines: $bad<" "$TMP/big.html"
check "each is named on stderr" test "$(grep -c 'stdin):[0-9]*: not JSON' "$TMP/report.err")" -eq "$bad"
check "senders beyond the marked six share 'other senders'" grep -q 'other senders' "$TMP/big.html"
check "the learned rate is drawn" grep -q 'class="learned"' "$TMP/big.html"
if python3 "$here/../report/page_check.py" static "$TMP/big.html"; then ok "self-contained and accessible"; else bad "static checks"; fi
finish
