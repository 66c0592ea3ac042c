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

# Starts the proxy with "$@"; sets PORT. The mock answers 200.
start_proxy() {
  PORT=$(free_port)
  bg "$P" proxy --listen "127.0.0.1:$PORT" --log "$TMP/log" "$@" 2>>"$TMP/err"
  wait_port "$PORT"
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

# ---- errors name the option and the value; the file and the key ------------
"$P" proxy --max-head=0 2>"$TMP/e1"
check "--max-head=0 exits 2" [ $? -eq 2 ]
check_grep "... naming the option and the value" "--max-head: .*'0'" "$TMP/e1"
"$P" proxy --header-timeout soon 2>"$TMP/e2"
check_grep "--header-timeout soon is refused by name" "--header-timeout: .*'soon'" "$TMP/e2"
printf '{\n  "listen": "127.0.0.1:0",\n  "idle_timeout": "never"\n}\n' >"$TMP/bad.json"
"$P" proxy --config "$TMP/bad.json" 2>"$TMP/e3"
check "a bad key value exits 2" [ $? -eq 2 ]
check_grep "... naming the file, line and key" "bad.json:3: field 'idle_timeout': --idle-timeout: .*'never'" "$TMP/e3"
printf '{"allowHost": ["*.example.com", 7]}\n' >"$TMP/bad2.json"
"$P" proxy --config "$TMP/bad2.json" 2>"$TMP/e4"
check_grep "a repeatable key's bad item is named" "bad2.json:1: field 'allowHost'\[1\]" "$TMP/e4"
"$P" proxy --maxHeaders 5 2>"$TMP/e5"
check_grep "flags are exact (camelCase is for the file)" "unknown option '--maxHeaders'" "$TMP/e5"

# ---- files are read with a size limit (issue 15 item 6) --------------------
# --mocks-file /dev/zero read 5 GB in 5 s: now it stops at 16 MiB + 1 byte.
timeout 10 "$P" proxy --mocks-file /dev/zero 2>"$TMP/z1"
check "--mocks-file /dev/zero exits 2 at once" [ $? -eq 2 ]
check_grep "... naming the file and the default limit" "/dev/zero: larger than the limit of 16777216 bytes \(--max-file-size\)" "$TMP/z1"
timeout 10 "$P" proxy --errors-file /dev/zero 2>"$TMP/z2"
check_grep "--errors-file /dev/zero too" "/dev/zero: larger than the limit" "$TMP/z2"
timeout 10 "$P" proxy --config /dev/zero 2>"$TMP/z3"
check_grep "--config /dev/zero too" "/dev/zero: larger than the limit" "$TMP/z3"
timeout 10 "$P" proxy --devproxy-config /dev/zero 2>"$TMP/z4"
check_grep "--devproxy-config /dev/zero too" "/dev/zero: larger than the limit" "$TMP/z4"
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
