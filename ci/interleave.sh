#!/usr/bin/env bash
# interleave.sh BIN_OLD BIN_NEW OUTDIR COUNT BENCH_REGEX
#
# Runs two prebuilt benchmark binaries (go test -c) against each other,
# one benchmark at a time: COUNT runs per side of each benchmark, made
# in blocks of BLOCK runs (one invocation with -test.count BLOCK) that
# alternate in ABBA order within the benchmark (old new, new old, old new,
# ...), before the next benchmark starts. The output is appended to
# OUTDIR/old.txt and OUTDIR/new.txt, each benchmark's runs in the order
# they were made, so that OLD's i-th run of a benchmark and NEW's i-th
# were made a block apart: the gate's -paired reads them as pairs.
#
# Why this grain (docs/compare.md has the measurements): in the TCG
# guest the machine's speed switches between two states about 1.45x
# apart that last seconds, so runs of the two sides must be seconds
# apart, never a whole suite (about a minute) apart, or each side gets
# minutes of drift as noise. Runs in one process share its state: with
# blocks of 4 runs the runs were not independent, and 9 of 16
# reassignments of one build's runs to the two sides "failed" the gate.
# One run per process (BLOCK=1, the default) makes neighbouring runs of
# the two sides share the state instead, which the gate's paired test
# uses. BLOCK>1 saves process starts (about 2 s each in the guest) where
# processes do not carry state of their own.
#
# The benchmarks are the ones BENCH_REGEX selects in either binary,
# listed first by one -test.benchtime 1x pass of each (OUTDIR/list.txt),
# and each is then run alone through an exact -test.bench pattern (each
# name element quoted and anchored). Either binary may be "-" to run only
# the other side (comparison against a stored results file).
#
# Meant to run inside the RDMA runner in ONE boot:
#   go run ./loopback/cmd/rxevm -- bash ci/interleave.sh A B OUTDIR COUNT REGEX
# so OUTDIR and the binaries must be under the shared (read-write) repo
# directory, not /tmp.
#
# Environment: BLOCK (runs per invocation, default 1), BENCHTIME
# (-test.benchtime, default 1s), BENCHARGS (extra test binary flags, e.g.
# "-test.benchmem"). The benchmarks run with the working directory
# bench_test/ when it exists, as `go test` would.
# Exit: 0 all runs succeeded; 1 a run failed (its output is kept and the
# remaining runs are not made); 2 usage error.
set -euo pipefail

usage() {
	echo "usage: interleave.sh BIN_OLD BIN_NEW OUTDIR COUNT BENCH_REGEX (BIN may be -; env BLOCK, BENCHTIME, BENCHARGS)" >&2
	exit 2
}
[[ $# -eq 5 ]] || usage
old_bin=$1 new_bin=$2 outdir=$3 count=$4 bench=$5
block=${BLOCK:-1}
[[ $count =~ ^[1-9][0-9]*$ ]] || { echo "interleave.sh: COUNT must be a positive integer, got '$count'" >&2; exit 2; }
[[ $block =~ ^[1-9][0-9]*$ ]] || { echo "interleave.sh: BLOCK must be a positive integer, got '$block'" >&2; exit 2; }
[[ $old_bin != - || $new_bin != - ]] || { echo "interleave.sh: both binaries are -" >&2; exit 2; }
for bin in "$old_bin" "$new_bin"; do
	[[ $bin == - || -x $bin ]] || { echo "interleave.sh: not an executable: $bin" >&2; exit 2; }
done
mkdir -p "$outdir"
touch "$outdir/old.txt" "$outdir/new.txt" ||
	{ echo "interleave.sh: cannot write to $outdir (must be under the runner's read-write share)" >&2; exit 2; }

rundir=.
[[ -d bench_test ]] && rundir=bench_test
abs() { [[ $1 == - || $1 == /* ]] && echo "$1" || echo "$PWD/$1"; }
old_bin=$(abs "$old_bin") new_bin=$(abs "$new_bin") outdir=$(abs "$outdir")

# fail LABEL WHAT FILE...: report a failed run with the last lines of its output.
fail() {
	local label=$1 what=$2
	shift 2
	echo "interleave.sh: $label $what failed; last lines of its output:" >&2
	tail -n 20 "$@" >&2
	exit 1
}

# list LABEL BIN: the benchmarks BENCH_REGEX selects in BIN, one full name
# a line (without the -GOMAXPROCS suffix), from one -test.benchtime 1x pass.
list() {
	local label=$1 bin=$2 out=$outdir/list-$1.out
	[[ $bin == - ]] && return 0
	# shellcheck disable=SC2086 # BENCHARGS is a list of flags.
	(cd "$rundir" && "$bin" -test.run '^$' -test.bench "$bench" -test.count 1 -test.benchtime 1x ${BENCHARGS:-}) >"$out" 2>&1 ||
		fail "$label" "listing pass (-test.benchtime 1x)" "$out"
	awk '/^Benchmark/ && $2 ~ /^[0-9]+$/ { n = $1; sub(/-[0-9]+$/, "", n); print n }' "$out"
}

# exact NAME: a -test.bench pattern that selects NAME alone: every
# slash-separated element quoted and anchored.
exact() {
	local IFS=/ part out=()
	read -r -a parts <<<"$1"
	for part in "${parts[@]}"; do
		out+=("^$(sed -e 's/[][\\.*^$+?(){}|]/\\&/g' <<<"$part")\$")
	done
	echo "${out[*]}"
}

# run_one LABEL BIN PATTERN RUNS WHERE: one invocation of RUNS runs,
# appended to LABEL.txt.
run_one() {
	local label=$1 bin=$2 pattern=$3 runs=$4 where=$5 start rc
	[[ $bin == - ]] && return 0
	start=$SECONDS
	rc=0
	# shellcheck disable=SC2086 # BENCHARGS is a list of flags.
	(cd "$rundir" && "$bin" -test.run '^$' -test.bench "$pattern" -test.count "$runs" \
		-test.benchtime "${BENCHTIME:-1s}" ${BENCHARGS:-}) >>"$outdir/$label.txt" 2>>"$outdir/$label.stderr" || rc=$?
	echo "interleave.sh: $where $label ×$runs: exit $rc after $((SECONDS - start)) s" >&2
	((rc == 0)) || fail "$label" run "$outdir/$label.txt" "$outdir/$label.stderr"
}

{ list old "$old_bin"; list new "$new_bin"; } | awk '!seen[$0]++' >"$outdir/list.txt"
names=()
while IFS= read -r name; do names+=("$name"); done <"$outdir/list.txt"
((${#names[@]} > 0)) || { echo "interleave.sh: -test.bench '$bench' selects no benchmark in either binary" >&2; exit 1; }
blocks=$(((count + block - 1) / block))
echo "interleave.sh: ${#names[@]} benchmarks (list in $outdir/list.txt), each $count runs per side in $blocks blocks of ≤ $block runs, ABBA by block: old new, new old, ..." >&2
start_all=$SECONDS
for ((b = 0; b < ${#names[@]}; b++)); do
	name=${names[b]} pattern=$(exact "${names[b]}")
	for ((j = 1; j <= blocks; j++)); do
		runs=$((count - (j - 1) * block))
		((runs > block)) && runs=$block
		where="[$((b + 1))/${#names[@]} $name block $j/$blocks]"
		if ((j % 2)); then
			run_one old "$old_bin" "$pattern" "$runs" "$where"
			run_one new "$new_bin" "$pattern" "$runs" "$where"
		else
			run_one new "$new_bin" "$pattern" "$runs" "$where"
			run_one old "$old_bin" "$pattern" "$runs" "$where"
		fi
	done
done
echo "interleave.sh: done in $((SECONDS - start_all)) s" >&2
