#!/usr/bin/env bash
# ci/owngate.sh RESULTS — the own-pattern example's runs (rdmatest's
# Example_commit, run once per test process 14 times in the device pass,
# its benchmark lines on stderr) through benchstat and the regression gate, as a user
# would run their own benchmark: the runs are dealt alternately to OLD
# and NEW (one build against itself, interleaved, so drift lands on both
# sides), the file must carry the units the example reports with their
# directions, and the gate must pass (exit 0; at -alpha 0.01, so that a
# same-build comparison fails at most 1% of the time; -detect off: 7 runs
# a side of one example check the pipeline and that one build passes
# against itself, not that a 25% slowdown would be seen — make compare's
# runs are for that).
set -euo pipefail
[[ $# -eq 1 && -s $1 ]] || { echo "usage: ci/owngate.sh RESULTS (a non-empty file)" >&2; exit 2; }
in=$1 dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk -v old="$dir/old.txt" -v new="$dir/new.txt" '
	/^Benchmark/ { print > ((n++ % 2) ? new : old); next }
	{ print > old; print > new }' "$in"
for want in 'Unit commits/s better=higher' 'Unit p99-ns better=lower' 'Unit cpu-ns/op better=lower'; do
	grep -qxF "$want" "$in" || { echo "owngate: '$want' missing in $in" >&2; exit 1; }
done
runs=$(grep '^BenchmarkCommit/size=4096-[0-9]*[[:space:]]' "$in" | grep ' p50-ns' | grep ' p99-ns' | grep -c ' commits/s' || true)
((runs >= 10)) || { echo "owngate: $runs runs with p50-ns, p99-ns and commits/s in $in, want at least 10:" >&2; cat "$in" >&2; exit 1; }
go run golang.org/x/perf/cmd/benchstat "$dir/old.txt" "$dir/new.txt"
go run ./ci/gate -alpha 0.01 -detect off "$dir/old.txt" "$dir/new.txt"
