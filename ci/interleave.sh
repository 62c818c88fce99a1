#!/usr/bin/env bash
# interleave.sh BIN_OLD BIN_NEW OUTDIR COUNT BENCH_REGEX
#
# Runs two prebuilt benchmark binaries (go test -c) alternately in ABBA
# order, COUNT rounds: old new, new old, old new, ... (odd rounds old
# first, even rounds new first), each invocation with -test.count 1, and
# appends their output to OUTDIR/old.txt and OUTDIR/new.txt. Interleaving
# spreads slow drift of the machine (thermal, other load, a VM's host,
# whose speed can change by 2x over tens of seconds) over both sides, and
# the ABBA order cancels a linear drift that would otherwise always favour
# the side that runs first. The order is logged before the first run.
# Either binary may be "-" to run only the other side (comparison against
# a stored results file).
#
# Meant to run inside the RDMA runner in ONE boot:
#   go run ./loopback/cmd/rxevm -- bash ci/interleave.sh A B OUTDIR COUNT REGEX
# so OUTDIR and the binaries must be under the shared (read-write) repo
# directory, not /tmp.
#
# Environment: BENCHTIME (-test.benchtime, default 1s), BENCHARGS (extra
# test binary flags, e.g. "-test.benchmem"). The benchmarks run with the
# working directory bench_test/ when it exists, as `go test` would.
# Exit: 0 all runs succeeded; 1 a run failed (its output is kept and the
# remaining rounds are not run); 2 usage error.
set -euo pipefail

usage() {
	echo "usage: interleave.sh BIN_OLD BIN_NEW OUTDIR COUNT BENCH_REGEX (BIN may be -)" >&2
	exit 2
}
[[ $# -eq 5 ]] || usage
old_bin=$1 new_bin=$2 outdir=$3 count=$4 bench=$5
[[ $count =~ ^[1-9][0-9]*$ ]] || { echo "interleave.sh: COUNT must be a positive integer, got '$count'" >&2; exit 2; }
[[ $old_bin != - || $new_bin != - ]] || { echo "interleave.sh: both binaries are -" >&2; exit 2; }
for bin in "$old_bin" "$new_bin"; do
	[[ $bin == - || -x $bin ]] || { echo "interleave.sh: not an executable: $bin" >&2; exit 2; }
done
mkdir -p "$outdir"
touch "$outdir/old.txt" "$outdir/new.txt" ||
	{ echo "interleave.sh: cannot write to $outdir (must be under the runner's read-write share)" >&2; exit 2; }

rundir=.
[[ -d bench_test ]] && rundir=bench_test

# run_one LABEL BIN ROUND: one -test.count 1 invocation appended to LABEL.txt.
run_one() {
	local label=$1 bin=$2 round=$3 start rc
	if [[ $bin == - ]]; then return 0; fi
	start=$SECONDS
	rc=0
	# shellcheck disable=SC2086 # BENCHARGS is a list of flags.
	(cd "$rundir" && "$bin" -test.run '^$' -test.bench "$bench" -test.count 1 \
		-test.benchtime "${BENCHTIME:-1s}" ${BENCHARGS:-}) >>"$outdir/$label.txt" 2>>"$outdir/$label.stderr" || rc=$?
	echo "interleave.sh: round $round/$count $label: exit $rc after $((SECONDS - start)) s" >&2
	if [[ $rc -ne 0 ]]; then
		echo "interleave.sh: $label run failed; last lines of $outdir/$label.txt and $label.stderr:" >&2
		tail -n 20 "$outdir/$label.txt" "$outdir/$label.stderr" >&2
		exit 1
	fi
}

abs() { [[ $1 == - || $1 == /* ]] && echo "$1" || echo "$PWD/$1"; }
old_bin=$(abs "$old_bin") new_bin=$(abs "$new_bin")
# ABBA: round r runs old first when r is odd, new first when r is even.
order=()
for ((round = 1; round <= count; round++)); do
	if ((round % 2)); then order+=(old new); else order+=(new old); fi
done
echo "interleave.sh: ABBA order over $count rounds: ${order[*]}" >&2
for ((i = 0; i < ${#order[@]}; i++)); do
	label=${order[i]}
	bin=$old_bin
	[[ $label == new ]] && bin=$new_bin
	run_one "$label" "$bin" $((i / 2 + 1))
done
