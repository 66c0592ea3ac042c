#!/usr/bin/env bash
# polite proxy's options are one table (proxy/px_config.c): every flag is a
# key of --config, --opt=value and --opt value both work, flags override the
# file, and errors name the option, the value and (for the file) the file
# and the key. Issue 16 item 1: the bounds were flags only and --help missed
# options.
. "$(dirname "$0")/lib.sh"
P=$POLITE

# A request with N header fields; prints the status code.
status_with_headers() {
  local port=$1 n=$2 h=() i
  for i in $(seq "$n"); do h+=(-H "X-F$i: v"); done
  curl -s -o /dev/null -w '%{http_code}' "${h[@]}" "http://127.0.0.1:$port/x"
}

# Starts the proxy with "$@"; sets PORT. The mock answers 200. It binds
# port 0 and says which port it got (--ready-file): no free port to race for.
start_proxy() {
  rm -f "$TMP/ready"
  bg "$P" proxy --listen 127.0.0.1:0 --ready-file "$TMP/ready" --log "$TMP/log" \
    "$@" 2>>"$TMP/err"
  for _ in $(seq 200); do
    [ -s "$TMP/ready" ] && break
    sleep 0.05
  done
  PORT=$(cat "$TMP/ready" 2>/dev/null)
  PORT=${PORT##*:}
}
stop_proxy() {
  kill "${PIDS[-1]}" 2>/dev/null
  wait "${PIDS[-1]}" 2>/dev/null
  unset 'PIDS[-1]'
}

# ---- a bound from the config file (it was a flag only) ----------------------
printf '{"maxHeaders": 8}\n' >"$TMP/c.json"
start_proxy --config "$TMP/c.json"
check_eq "config maxHeaders 8: 4 fields pass" "$(status_with_headers "$PORT" 4)" 200
check_eq "config maxHeaders 8: 20 fields get 431" "$(status_with_headers "$PORT" 20)" 431
stop_proxy

# ---- a flag overrides the file, wherever it stands; --opt=value ------------
start_proxy --max-headers=40 --config "$TMP/c.json"
check_eq "--max-headers=40 before --config still wins" "$(status_with_headers "$PORT" 20)" 200
stop_proxy
start_proxy --config="$TMP/c.json" --max-headers 40
check_eq "--config=FILE and --max-headers 40" "$(status_with_headers "$PORT" 20)" 200
stop_proxy

# The errors that name the option, the value, the file and the key, and the
# size limit on /dev/zero for every file option, are case files now:
# tests/cases/proxy_bad_*.case, proxy_config_*.case, proxy_flags_exact.case,
# proxy_size_limit_*.case.

# ---- files are read with a size limit (issue 15 item 6) --------------------
head -c 3000 /dev/zero | tr '\0' ' ' >"$TMP/big.json"
echo '{"mocks":[]}' >>"$TMP/big.json"
"$P" proxy --errors-file "$TMP/big.json" --max-file-size=2k 2>"$TMP/z5"
check_grep "an oversize file names the file and --max-file-size's value" "big.json: larger than the limit of 2048 bytes" "$TMP/z5"
printf '{"maxFileSize": "2k", "mocksFile": "big.json"}' >"$TMP/mf.json"
"$P" proxy --config "$TMP/mf.json" 2>"$TMP/z6"
check_grep "maxFileSize as a config key" "big.json: larger than the limit of 2048 bytes" "$TMP/z6"
printf '{"mocks":[{"request":{"url":"*"},"response":{"body":"@big.json"}}]}' >"$TMP/m.json"
"$P" proxy --mocks-file "$TMP/m.json" --max-file-size 2k 2>"$TMP/z7"
check_grep "an @file body over the limit is named" "body file .*big.json: larger than the limit of 2048" "$TMP/z7"
# Under the limit the same file loads and is served.
start_proxy --mocks-file "$TMP/big.json" --max-file-size 4k
check_eq "under --max-file-size the file loads" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/x")" 200
stop_proxy

# ---- every row is in --help, the docs page and the man page ----------------
"$P" help --json proxy | jq -r '.options[].name' >"$TMP/names"
check "the table has the bounds and the mode" grep -qx max-connections "$TMP/names"
"$P" proxy --help >"$TMP/help"
missing=
while read -r name; do
  grep -qF -- "--$name" "$TMP/help" || missing="$missing $name"
done <"$TMP/names"
check_eq "every row is in polite proxy --help" "$missing" ""
finish
