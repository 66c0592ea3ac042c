#!/usr/bin/env bash
# Shell check: shellcheck over every shell script the repository tracks,
# the *.sh files and the ones without the suffix whose first line is a
# bash or sh shebang (.ci/run). Sourced files are followed as .shellcheckrc
# says; a finding of any severity fails. Fixes go in the script; a disable
# only where the code is right as written, with its reason on the same line.
# Usage: scripts/checkshell.sh (from anywhere inside the repository)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
files=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue # deleted in the worktree, not yet in the index
  case $f in
  *.sh) files+=("$f") ;;
  *)
    IFS= read -r first <"$f" || true
    if [[ $first =~ ^#!.*[/[:space:]](ba)?sh([[:space:]]|$) ]]; then
      files+=("$f")
    fi
    ;;
  esac
done < <(git ls-files -z)
if [ ${#files[@]} -eq 0 ]; then
  echo "shellcheck: no shell scripts found" >&2
  exit 1
fi
if ! shellcheck --severity=style "${files[@]}"; then
  echo "shellcheck: findings above"
  exit 1
fi
echo "shellcheck: clean (${#files[@]} files)"
