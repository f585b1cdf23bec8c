#!/usr/bin/env bash
# model/trails.sh: regenerate model/trails/*.txt, the counterexample of every
# ci run that must fail (the seed model, the findings, the mutants), printed
# as the model's event log (spin -t). Runs `check.sh ci` (a few minutes).
set -u
here=$(cd "$(dirname "$0")" && pwd)
keep=$(mktemp -d)
trap 'rm -rf "$keep"' EXIT
KEEP=$keep "$here/check.sh" ci
status=$?
mkdir -p "$here/trails"
for d in "$keep"/*/; do
  n=$(basename "$d")
  [ -f "$d/trail.txt" ] && cp "$d/trail.txt" "$here/trails/$n.txt"
done
ls -l "$here/trails"
exit $status
