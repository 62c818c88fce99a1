#!/usr/bin/env bash
# compare.sh OLD NEW
#
# Benchmarks two versions of rdmabench and runs the regression gate
# (ci/gate) on the results. OLD and NEW are each either a results file
# (Go benchmark format, used as is) or a git ref (a path that is an
# existing file wins over a ref of the same name).
#
# For each ref: `git worktree add` it under .cache/compare/<run>/, build
# `go test -c ./bench_test` there on the host, then run both binaries
# against each other one benchmark at a time, both processes ready and
# taking turns run by run, ABBA within the benchmark (ci/interleave.sh;
# the log shows it), in ONE runner boot:
#   $RUNNER bash ci/interleave.sh BIN_OLD BIN_NEW OUTDIR COUNT BENCH
# and gate the result with -paired (runs of the two sides made next to
# each other are pairs; go doc ./ci/gate). With a results file on either side
# the runs are not paired.
# Everything lives under the repo's .cache/compare/<run>/ (the runner's
# read-write share; /tmp is a fresh tmpfs inside the VM): old.txt,
# new.txt, *.stderr, meta.txt (resolved commits, settings) and gate.txt.
#
# Environment:
#   BENCH       -test.bench regex              (default .)
#   COUNT       runs per side of each benchmark (default 30)
#   BLOCK       runs per turn (default 1: see ci/interleave.sh)
#   PROCS       processes per side and benchmark (default 1; make compare
#               passes COMPARE_PROCS): run k of a side comes from process
#               k mod PROCS, and the gate checks that the processes agree
#               (go doc ./ci/gate, "Processes")
#   BENCHTIME   -test.benchtime of the pilot run that fixes each
#               benchmark's count, N, then run as Nx on both sides
#               (default 0.1s; a count Nx is used as is)
#   BENCHARGS   extra test binary flags        (default none)
#   GATEFLAGS   flags for ci/gate, e.g. "-threshold 10% -allow-missing"
#   RUNNER      command prefix that provides the RDMA device
#               (default "go run ./loopback/cmd/rxevm $RXEVM_FLAGS --";
#               set it empty to run on this host directly)
#   RXEVM_FLAGS flags for rxevm                (default "-timeout 3h")
#   SLOW        the gate's self-check: both sides (git refs) are built
#               with the test-only tag rdmaslow, and NEW's processes
#               report the benchmarks SLOW names PCT worse: "PCT:REGEX"
#               (e.g. "25%:^BenchmarkWriteLat/transport=RC/size=8/inline=false$")
#               or "PCT:randomK[:SEED]", K benchmarks drawn at random
#               (seeded, printed; ci/interleave.sh; go doc
#               ./rdmatest/internal/engine SlowEnv). The gate then runs
#               with -expect-slow: it exits 0 only if every pick is named
#               or UNDECIDED and no other benchmark is named, 1 otherwise.
#   KEEP_WORKTREES=1 keeps the worktrees for inspection.
#
# Exit status: the gate's (0 pass, 1 regression or missing, 2 bad input,
# 3 too few runs to decide); 2 for usage or build errors; 4 when the
# benchmark runs fail (a benchmark binary failed, or the runner did: the
# message gives its status, rxevm uses 125 for VM/setup failures).
set -euo pipefail

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}
[[ $# -eq 2 ]] || usage
[[ $1 != -h && $1 != --help ]] || usage

# Results files are named relative to the caller's directory.
args=()
for a in "$1" "$2"; do
	if [[ -f $a && $a != /* ]]; then a=$PWD/$a; fi
	args+=("$a")
done
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
BENCH=${BENCH:-.}
COUNT=${COUNT:-30}
BENCHTIME=${BENCHTIME:-0.1s}
SLOW=${SLOW:-}
export BLOCK=${BLOCK:-1} PROCS=${PROCS:-1}
GATEFLAGS=${GATEFLAGS:-}
RXEVM_FLAGS=${RXEVM_FLAGS:--timeout 3h}
RUNNER=${RUNNER-go run ./loopback/cmd/rxevm $RXEVM_FLAGS --}
export BENCHTIME BENCHARGS="${BENCHARGS:-}"

work=$repo/.cache/compare/$(date -u +%Y%m%dT%H%M%SZ)-$$
mkdir -p "$work"
worktrees=()
cleanup() {
	if [[ ${KEEP_WORKTREES:-} != 1 ]]; then
		for wt in "${worktrees[@]}"; do
			git worktree remove --force "$wt" >/dev/null 2>&1 || true
		done
	fi
}
trap cleanup EXIT

log() { echo "compare.sh: $*" >&2; }

# prepare LABEL ARG: sets bin_LABEL (test binary or -) and res_LABEL
# (results file to gate).
prepare() {
	local label=$1 arg=$2 commit
	if [[ -f $arg ]]; then
		printf -v "bin_$label" '%s' -
		printf -v "res_$label" '%s' "$arg"
		echo "$label: results file $arg" >>"$work/meta.txt"
		return
	fi
	if ! commit=$(git rev-parse --verify --quiet "$arg^{commit}"); then
		log "$label: '$arg' is neither a file nor a git commit"
		exit 2
	fi
	log "$label: building $arg ($commit)"
	git worktree add --detach "$work/src-$label" "$commit" >/dev/null
	worktrees+=("$work/src-$label")
	local build=(go test -c -o "$work/$label.test")
	if [[ -n $SLOW ]]; then
		# Both sides: the same code, the slowdown only in NEW's processes.
		build+=(-tags rdmaslow)
		[[ $label == new ]] && log "new: the self-check: ${SLOW#*:} reported ${SLOW%%:*} worse"
	fi
	if ! (cd "$work/src-$label" && "${build[@]}" ./bench_test); then
		log "$label: go test -c ./bench_test failed at $arg"
		exit 2
	fi
	printf -v "bin_$label" '%s' "$work/$label.test"
	printf -v "res_$label" '%s' "$work/$label.txt"
	local note=
	[[ -n $SLOW ]] && note=" (self-check build, tag rdmaslow)"
	[[ $label == new && -n $SLOW ]] && note=" (self-check build, tag rdmaslow: $SLOW worse)"
	echo "$label: git $arg = $commit$note" >>"$work/meta.txt"
}

if [[ -n $SLOW && ! $SLOW =~ ^[0-9.]+%?:.+ ]]; then
	log "SLOW='$SLOW': want PCT:REGEX, e.g. 25%:^BenchmarkWriteLat/"
	exit 2
fi
prepare old "${args[0]}"
prepare new "${args[1]}"
if [[ -n $SLOW && ($bin_new == - || $bin_old == -) ]]; then
	log "SLOW needs OLD and NEW to be git refs (built with the self-check tag), not results files"
	exit 2
fi
{
	echo "go: $(go version)"
	echo "BENCH=$BENCH COUNT=$COUNT BLOCK=$BLOCK PROCS=$PROCS BENCHTIME=$BENCHTIME BENCHARGS=$BENCHARGS GATEFLAGS=$GATEFLAGS SLOW=$SLOW"
	echo "RUNNER=$RUNNER"
} >>"$work/meta.txt"

log "building the gate"
go build -o "$work/gate" ./ci/gate # a binary: `go run` turns every failure into exit 1

if [[ $bin_old != - || $bin_new != - ]]; then
	log "running $COUNT runs per side of each benchmark of -test.bench '$BENCH' from $PROCS processes a side, taking turns by $BLOCK, ABBA within the benchmark (results in $work)"
	rc=0
	# shellcheck disable=SC2086 # RUNNER is a command prefix.
	SLOW=$SLOW $RUNNER bash ci/interleave.sh "$bin_old" "$bin_new" "$work" "$COUNT" "$BENCH" || rc=$?
	if [[ $rc -ne 0 ]]; then
		log "benchmark runs failed (runner exit $rc); partial results in $work"
		exit 4
	fi
fi

# Paired runs only when both sides ran here; the self-check build's
# results carry a configuration line of their own.
pre=()
[[ $bin_old != - && $bin_new != - ]] && pre+=(-paired)
if [[ -n $SLOW ]]; then
	pre+=(-ignore-config cpu,rdma-node-guid,rdma-selfcheck-slowdown)
	spec=$(cat "$work/slow.txt")
	pre+=(-expect-slow "${spec#*:}")
	echo "self-check: $spec" >>"$work/meta.txt"
fi
rc=0
# shellcheck disable=SC2086 # GATEFLAGS is a list of flags.
"$work/gate" "${pre[@]}" $GATEFLAGS "$res_old" "$res_new" >"$work/gate.txt" || rc=$?
cat "$work/gate.txt"
log "results, gate report and meta.txt in $work"
exit "$rc"
