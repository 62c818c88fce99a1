#!/usr/bin/env bash
# ci/owngate.sh RESULTS — the own-pattern example's runs (rdmatest's
# Example_commit, run once per test process 14 times in the device pass,
# its benchmark lines on stderr) through benchstat and the regression
# gate, as a user would run their own benchmark. A plumbing check that
# cannot fail by chance:
#   - the file carries the units the example reports, with directions,
#     and at least 10 complete runs;
#   - benchstat reads it;
#   - the gate over the runs against themselves (identical input) exits
#     0: nothing differs, so nothing may fail;
#   - the gate against a doctored copy whose every latency and cpu time
#     is 10x and every rate a tenth (NEW worse than any run of OLD, far
#     beyond the runs' spread) exits 1 and names the benchmark: the
#     smallest possible U-test p then decides, not the noise.
# Whether the gate sees a 25% slowdown in real runs is measured by make
# compare (docs/compare.md), not here.
set -euo pipefail
[[ $# -eq 1 && -s $1 ]] || { echo "usage: ci/owngate.sh RESULTS (a non-empty file)" >&2; exit 2; }
in=$1 dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for want in 'Unit commits/s better=higher' 'Unit p99-ns better=lower' 'Unit cpu-ns/op better=lower'; do
	grep -qxF "$want" "$in" || { echo "owngate: '$want' missing in $in" >&2; exit 1; }
done
runs=$(grep '^BenchmarkCommit/size=4096-[0-9]*[[:space:]]' "$in" | grep ' p50-ns' | grep ' p99-ns' | grep -c ' commits/s' || true)
((runs >= 10)) || { echo "owngate: $runs runs with p50-ns, p99-ns and commits/s in $in, want at least 10:" >&2; cat "$in" >&2; exit 1; }
# Every line but the benchmark lines of other benchmarks, as they are.
grep -v '^Benchmark' "$in" >"$dir/runs.txt" || true
grep '^BenchmarkCommit/size=4096-[0-9]*[[:space:]]' "$in" >>"$dir/runs.txt"
awk '/^Benchmark/ {
		for (i = 3; i < NF; i += 2) {
			u = $(i + 1)
			if (u ~ /ns(\/op)?$/) $i = $i * 10
			else if (u ~ /\/s$/) $i = $i / 10
		}
	}
	{ print }' "$dir/runs.txt" >"$dir/worse.txt"
# 14 processes: each calibrated its own rdma-clock-mhz (docs/flags.md).
go run golang.org/x/perf/cmd/benchstat -ignore rdma-clock-mhz "$dir/runs.txt"
go build -o "$dir/gate" ./ci/gate
rc=0
"$dir/gate" -replicate runs -detect off "$dir/runs.txt" "$dir/runs.txt" >"$dir/same.out" || rc=$?
((rc == 0)) || { cat "$dir/same.out"; echo "owngate: the gate exited $rc on identical input, want 0" >&2; exit 1; }
rc=0
"$dir/gate" -replicate runs -detect off "$dir/runs.txt" "$dir/worse.txt" >"$dir/worse.out" || rc=$?
grep -E '^(REGRESSION|result)' "$dir/worse.out" || true
((rc == 1)) || { cat "$dir/worse.out"; echo "owngate: the gate exited $rc on a copy 10x worse, want 1" >&2; exit 1; }
grep -q '^REGRESSION: Commit/size=4096' "$dir/worse.out" || { cat "$dir/worse.out"; echo "owngate: the gate does not name Commit/size=4096" >&2; exit 1; }
echo "owngate: identical runs pass, a copy 10x worse fails, naming Commit/size=4096"
