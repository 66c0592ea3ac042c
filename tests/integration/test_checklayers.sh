#!/usr/bin/env bash
# scripts/checklayers.sh: the repository keeps its layers (src/ reaches the
# proxy only through proxy/proxy.h, net/ knows nothing of proxy/ or src/,
# proxy/ nothing of src/), and a tree that breaks each rule is named
# FILE:LINE and fails.
. "$(dirname "$0")/lib.sh"
SRC=$POLITE_SRC

if out=$("$SRC/scripts/checklayers.sh" "$SRC" 2>&1); then ok "the repository is clean"; else bad "the repository is clean: $out"; fi

mkdir -p "$TMP/src" "$TMP/proxy" "$TMP/net" "$TMP/common" "$TMP/lib"
touch "$TMP/proxy/proxy.h" "$TMP/proxy/px.h" "$TMP/net/net_server.h" "$TMP/common/cli.h" \
  "$TMP/common/http_syntax.h" "$TMP/src/run_output.h" "$TMP/lib/scheduler.h"
printf '#include "cli.h"\n#include "proxy.h"\n#include <stdio.h>\n' >"$TMP/src/ok.c"
printf '#include "px.h"\n#include "net_server.h"\n#include "cli.h"\n' >"$TMP/proxy/ok.c"
printf '#include "http_syntax.h"\n#include "scheduler.h"\n' >"$TMP/lib/ok.c"
if out=$("$SRC/scripts/checklayers.sh" "$TMP" 2>&1); then ok "allowed includes pass"; else bad "allowed includes pass: $out"; fi

printf '/* x */\n#include "px.h"\n' >"$TMP/src/bad.c"
printf '#include "px.h"\n' >"$TMP/net/bad.c"
printf '#include "run_output.h"\n' >"$TMP/proxy/bad.c"
printf '#include "cli.h"\n' >"$TMP/lib/bad.c"
out=$("$SRC/scripts/checklayers.sh" "$TMP" 2>&1)
rc=$?
if [ $rc -ne 0 ]; then ok "a broken tree fails"; else bad "a broken tree fails (rc $rc)"; fi
for want in "src/bad.c:2: includes proxy/px.h" "net/bad.c:1: includes proxy/px.h" \
  "proxy/bad.c:1: includes src/run_output.h" "lib/bad.c:1: includes common/cli.h" "checklayers: 4 finding"; do
  case $out in *"$want"*) ok "names $want" ;; *) bad "names $want: $out" ;; esac
done
finish
