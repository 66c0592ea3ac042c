#!/usr/bin/env bash
# rediss:// (issue 24): the queue over TLS to a redis-server with TLS on,
# verification on by default (a server whose CA is not trusted is refused,
# saying so), ?cacert= for a private CA, ?cert=/?key= for the client
# certificate Redis asks for by default, ?insecure=1 to turn verification
# off; AUTH with a password that no message ever shows.
. "$(dirname "$0")/lib.sh"
. "$IT/queue/lib.sh"
make_cert "$TMP/pki" server || { echo "openssl failed"; exit 1; }
K=$TMP/pki
mkdir -p "$TMP/redis"
# start_redis_tls: redis-server with TLS only (RPORT, RPID) on a free port;
# a port taken in between (redis-server exits, or another server answers
# there) is a new try on a new port, five in all, as start_redis does.
start_redis_tls() {
  for _ in 1 2 3 4 5; do
    RPORT=$(free_port)
    (cd "$TMP/redis" && exec redis-server --port 0 --tls-port "$RPORT" \
      --bind 127.0.0.1 --save '' --dir "$TMP/redis" \
      --tls-cert-file "$K/server.pem" --tls-key-file "$K/server.key" \
      --tls-ca-cert-file "$K/ca.pem" --requirepass 's3cr@t/pw' \
      >>"$TMP/redis/log" 2>&1) &
    RPID=$!
    PIDS+=("$RPID")
    redis_ready "$RPID" "$RPORT" --tls --cacert "$K/ca.pem" \
      --cert "$K/client.pem" --key "$K/client.key" -a 's3cr@t/pw' && return 0
    kill -9 "$RPID" 2>/dev/null
    wait "$RPID" 2>/dev/null
  done
  return 1
}
start_redis_tls || { echo "redis-server with TLS did not start"; cat "$TMP/redis/log"; exit 1; }
start_upstream
push_ids 20 ok
# The password holds '@' and '/': written %-encoded, as the redis URI
# scheme says.
PW='s3cr%40t%2Fpw'
TLS="cacert=$K/ca.pem&cert=$K/client.pem&key=$K/client.key"
Q="rediss://:$PW@127.0.0.1:$RPORT/tls?$TLS"
"$POLITE" queue push "$Q" "$TMP/in.txt" >"$TMP/push.out" 2>"$TMP/push.err"
check_grep "push over TLS with a private CA and a client certificate" "20 added" "$TMP/push.out"
worker t1 --queue "$Q" --rate 50/s
wait "${WPID[t1]}"
check_eq "a worker over TLS ends 0" "$?" 0
check_eq "... with the 20 results" "$(grep -c '"outcome":"ok"' "$TMP/t1.jsonl")" 20

"$POLITE" queue status "rediss://:$PW@127.0.0.1:$RPORT/tls?cert=$K/client.pem&key=$K/client.key" \
  >/dev/null 2>"$TMP/untrusted.err"
check_eq "a server whose CA is not trusted is refused (exit 1)" "$?" 1
check_grep "... saying why" "certificate is not trusted" "$TMP/untrusted.err"
"$POLITE" queue status --json "rediss://:$PW@127.0.0.1:$RPORT/tls?insecure=1&cert=$K/client.pem&key=$K/client.key" \
  >"$TMP/insecure.json" 2>&1
check_eq "?insecure=1 turns verification off" "$(jq .done "$TMP/insecure.json")" 20
"$POLITE" queue status "rediss://:$PW@localhost:$RPORT/tls?$TLS" >/dev/null 2>"$TMP/name.err"
check_eq "the certificate's DNS name (localhost) is checked too" "$?" 0
"$POLITE" queue status "rediss://:$PW@127.0.0.1:$RPORT/tls?cacert=$K/ca.pem" \
  >/dev/null 2>"$TMP/nocert.err"
check_eq "without the client certificate Redis asks for: exit 1" "$?" 1
check_grep "... with a hint" "does the server want a client certificate" "$TMP/nocert.err"
"$POLITE" queue status "rediss://:wrong@127.0.0.1:$RPORT/tls?$TLS" >/dev/null 2>"$TMP/auth.err"
check_eq "a wrong password: exit 1" "$?" 1
check_grep "... 'authentication failed', the password masked" \
  "rediss://:REDACTED@127.0.0.1:$RPORT/tls.*authentication failed" "$TMP/auth.err"
"$POLITE" queue status "redis://:$PW@127.0.0.1:$RPORT/tls?timeout=300ms" >/dev/null 2>"$TMP/plain.err"
check_eq "redis:// (no TLS) to a TLS port fails, within the timeout" "$?" 1
check_no_grep "no message shows the password" "s3cr|%40t" "$TMP"/*.err "$TMP"/*.out
"$POLITE" queue status "redis://127.0.0.1:$RPORT/tls?cacert=/x" >/dev/null 2>"$TMP/param.err"
check_eq "cacert= without rediss:// is a usage error (exit 2)" "$?" 2
check_grep "... naming it" "'cacert' needs rediss://" "$TMP/param.err"
finish
