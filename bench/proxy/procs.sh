# bench/proxy/procs.sh: what cpu.sh and instr.sh share (sourced, not run): the polite builds given are
# checked, a temporary directory, the processes to stop on exit, and a free port. BINS is set by the caller.
for b in "${BINS[@]}"; do [ -x "$b" ] || { echo "no polite binary at $b" >&2; exit 2; }; done
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
