#!/usr/bin/env bash
# ci/failed.sh LOG — the whole output of every failing top-level test in
# LOG (go test -v output): its lines from "=== RUN   T" to "--- FAIL: T",
# testify's Error, expected and actual lines included; then the log's
# last 30 lines (a panic or a timeout ends a package without a FAIL line).
set -euo pipefail
log=$1
names=$(sed -nE 's/^--- FAIL: ([^ ]+).*/\1/p' "$log" | tr '\n' ' ')
awk -v names="$names" '
BEGIN { n = split(names, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
/^=== RUN   / && ($3 in want) { on = 1 }
on { print }
/^--- FAIL: / && ($3 in want) { on = 0 }
' "$log"
echo "--- the log's last 30 lines:"
grep -Ev '^=== (PAUSE|CONT) ' "$log" | tail -n 30
