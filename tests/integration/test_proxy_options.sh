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
