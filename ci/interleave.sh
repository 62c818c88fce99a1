#!/usr/bin/env bash
# interleave.sh BIN_OLD BIN_NEW OUTDIR COUNT BENCH_REGEX
#
# Runs two prebuilt benchmark binaries (go test -c) against each other,
# one benchmark at a time: both binaries are started on the benchmark
# with -test.count COUNT, and their runs take turns, one run at a time,
# in ABBA order by blocks of BLOCK runs (old new, new old, old new, ...),
# before the next benchmark starts. The process whose turn it is not
# waits, idle, on a FIFO (RDMA_TURN, rdmatest/internal/engine/turn.go):
# a run of one side never overlaps one of the other, and no process
# start lies between them. The output is appended to OUTDIR/old.txt and
# OUTDIR/new.txt, each benchmark's runs in the order they were made, so
# that OLD's i-th run of a benchmark and NEW's i-th were made next to
# each other: the gate's -paired reads them as pairs.
#
# Why this grain (docs/compare.md has the measurements): in the TCG
# guest the machine's speed switches between two states about 1.45x
# apart that last seconds, so runs of the two sides must be seconds
# apart, never a whole suite (about a minute) apart, or each side gets
# minutes of drift as noise; and a side's runs must not come in blocks
# (blocks of 4 runs in one process made 9 of 16 reassignments of one
# build's runs "fail" the gate). Alternating single runs of two
# processes that stay ready puts each pair of runs about a second apart
# and costs no process start per run (about 2 s each in the guest).
#
# The benchmarks are the ones BENCH_REGEX selects in either binary,
# listed first by one pilot pass of each at BENCHTIME (OUTDIR/list.txt,
# with each benchmark's count), and each is then run alone through an
# exact -test.bench pattern (each name element quoted and anchored) at a
# fixed count, the same on both sides: -test.benchtime Nx, N the smaller
# of the two pilots' b.N. The same work on both sides, and one setup per
# run instead of one per call of testing's b.N ramp (about three). When
# BENCHTIME is itself a count (Nx), it is used as is. Either binary may
# be "-" to run only the other side (comparison against a stored results
# file).
#
# Meant to run inside the RDMA runner in ONE boot:
#   go run ./loopback/cmd/rxevm -- bash ci/interleave.sh A B OUTDIR COUNT REGEX
# so OUTDIR and the binaries must be under the shared (read-write) repo
# directory, not /tmp.
#
# The gate's self-check (SLOW, set by ci/compare.sh): NEW's processes get
# RDMA_SELFCHECK_SLOW (go doc ./rdmatest/internal/engine, SlowEnv), which
# makes the benchmarks it names worse in a binary built with the tag
# rdmaslow. SLOW is "PCT:REGEX" as given, or "PCT:randomK[:SEED]": K of
# the listed benchmarks drawn at random after the pilots, by SEED (a
# number; default: the clock's nanoseconds, printed), each name ranked by
# sha256 of SEED and the name, so that a seed replays its draw. The spec
# used is written to OUTDIR/slow.txt.
#
# PROCS (default 1) processes per side and benchmark: all of a
# benchmark's processes are started, and made ready, before its first run,
# and run k of a side comes from its process k mod PROCS, so that the
# gate can tell a process's offset (buffer placement, QP numbers, which
# vCPU got which thread: fixed for a process's life) from a change of the
# build (go doc ./ci/gate: -paired with processes). Every run's lines in
# old.txt and new.txt follow a configuration line "rdma-process: LABEL"
# (old1, new2, ...) naming its process.
#
# Environment: BLOCK (runs per turn, default 1), BENCHTIME (the pilot's
# -test.benchtime, default 1s, or a fixed count Nx for every run),
# BENCHARGS (extra test binary flags, e.g. "-test.benchmem"), TURN_WAIT
# (seconds to wait for a process's next message, default 600; a process
# that sends none is stopped). The benchmarks run with the working
# directory bench_test/ when it exists, as `go test` would.
# A binary whose benchmarks do not take turns (built before RDMA_TURN, or
# a benchmark that skips or fails) ends the comparison with an error.
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
benchtime=${BENCHTIME:-1s}
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

# list LABEL BIN: the benchmarks BENCH_REGEX selects in BIN, one a line:
# its full name (without the -GOMAXPROCS suffix) and the b.N testing's
# ramp chose for it in one pilot run at BENCHTIME (1 when BENCHTIME is
# already a count: the pilot is then -test.benchtime 1x).
list() {
	local label=$1 bin=$2 out=$outdir/list-$1.out pilot=$benchtime
	[[ $bin == - ]] && return 0
	[[ $pilot == *x ]] && pilot=1x
	# shellcheck disable=SC2086 # BENCHARGS is a list of flags.
	(cd "$rundir" && "$bin" -test.run '^$' -test.bench "$bench" -test.count 1 -test.benchtime "$pilot" ${BENCHARGS:-}) >"$out" 2>&1 ||
		fail "$label" "pilot pass (-test.benchtime $pilot)" "$out"
	awk '/^Benchmark/ && $2 ~ /^[0-9]+$/ { n = $1; sub(/-[0-9]+$/, "", n); print n, $2 }' "$out"
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

# The two processes of a benchmark take turns through FIFOs (RDMA_TURN;
# go doc ./rdmatest/internal/engine, turn.go): each says "ready NAME"
# before a run and waits for "go", and "exit" after its tests; the shell
# that started it adds "status RC" when it has ended, so that every read
# here ends with a message (or the TURN_WAIT deadline, seconds).
tdir=$(mktemp -d)
declare -A pid fd_in fd_out next rcs rd part
# stop PID: end a benchmark process started by start (the binary is the
# child of the shell PID names).
stop() { pkill -P "$1" 2>/dev/null || true; kill "$1" 2>/dev/null || true; }
trap 'for p in "${pid[@]}"; do stop "$p"; done; rm -rf "$tdir"' EXIT

# start LABEL BIN PATTERN N: start BIN on PATTERN with -test.count N,
# taking turns; LABEL is the side and the process's number (old1, new2),
# its output kept in the process's own file until flush copies it.
start() {
	local label=$1 bin=$2 pattern=$3 n=$4 fin fout fres
	rm -f "$tdir/$label.in" "$tdir/$label.out"
	: >"$tdir/$label.res"
	mkfifo "$tdir/$label.in" "$tdir/$label.out"
	exec {fin}<>"$tdir/$label.in" {fout}<>"$tdir/$label.out" {fres}<"$tdir/$label.res"
	fd_in[$label]=$fin fd_out[$label]=$fout rd[$label]=$fres next[$label]= rcs[$label]= part[$label]=
	(
		rc=0
		[[ $label == new* && -n $slow_spec ]] && export RDMA_SELFCHECK_SLOW=$slow_spec
		# shellcheck disable=SC2086 # BENCHARGS is a list of flags.
		(cd "$rundir" && RDMA_TURN=$tdir/$label.in,$tdir/$label.out exec "$bin" -test.run '^$' -test.bench "$pattern" \
			-test.count "$n" -test.benchtime "$fixed" ${BENCHARGS:-}) \
			>>"$tdir/$label.res" 2>>"$outdir/${label%%[0-9]*}.stderr" || rc=$?
		echo "status $rc" >&"$fout"
	) &
	pid[$label]=$!
}

# flush LABEL: append the whole lines LABEL's process wrote since the
# last flush to its side's file (old.txt, new.txt), after a configuration
# line "rdma-process: LABEL" that ties the runs to their process (the gate
# reads it; it is no part of a benchmark's configuration). A line still
# being written waits for the next flush: testing prints a benchmark's
# name when its run starts and the figures when it ends. Builtins only,
# through a read descriptor kept open on the process's file: a command
# started per turn costs tens of milliseconds in the TCG guest (stat,
# tail and head per turn made a turn 0.7 s instead of 0.3 s).
flush() {
	local label=$1 line out=
	while IFS= read -r -u "${rd[$label]}" line; do
		out+=${part[$label]}$line$'\n'
		part[$label]=
	done
	part[$label]+=$line
	[[ -z $out ]] || printf 'rdma-process: %s\n%s' "$label" "$out" >>"$outdir/${label%%[0-9]*}.txt"
}

# message LABEL: the process's next message into msg: "ready NAME",
# "exit" or "status RC" (it has ended). Waits at most TURN_WAIT seconds.
message() {
	local label=$1
	msg=${next[$label]}
	next[$label]=
	[[ -n $msg ]] && return 0
	if ! read -r -t "${TURN_WAIT:-600}" -u "${fd_out[$label]}" msg; then
		echo "interleave.sh: $label: no message in ${TURN_WAIT:-600} s (TURN_WAIT); stopping it" >&2
		stop "${pid[$label]}"
		msg="status timeout"
	fi
	if [[ $msg == "status "* ]]; then
		rcs[$label]=${msg#status }
		wait "${pid[$label]}" || true
	fi
}

# finish LABEL: wait for the process to end; fail unless it said exit and
# exited 0.
finish() {
	local label=$1 said
	message "$label"
	said=$msg
	while [[ -z ${rcs[$label]} ]]; do message "$label"; done
	exec {fd_in[$label]}>&- {fd_out[$label]}>&-
	flush "$label"
	[[ -z ${part[$label]} ]] || printf 'rdma-process: %s\n%s\n' "$label" "${part[$label]}" >>"$outdir/${label%%[0-9]*}.txt"
	exec {rd[$label]}<&-
	if [[ $said != exit || ${rcs[$label]} != 0 ]]; then
		echo "interleave.sh: $label: ended with '$said' where exit was due" >&2
		fail "$label" "run (exit ${rcs[$label]})" "$tdir/$label.res" "$outdir/${label%%[0-9]*}.stderr"
	fi
}

# turn LABEL WHERE: one run of LABEL's process, waited for to its end:
# its next message, kept for its next turn, and after its last run the
# end of the process, so that its exit does not overlap the other side's
# run.
turn() {
	local label=$1 where=$2 t0=$SECONDS
	message "$label"
	if [[ $msg != "ready "* ]]; then
		echo "interleave.sh: $where $label: got '$msg' where a run was due (a benchmark that does not take turns, or one that failed or skipped)" >&2
		next[$label]=$msg
		finish "$label"
		exit 1
	fi
	echo go >&"${fd_in[$label]}"
	message "$label"
	if [[ $msg == exit ]]; then
		message "$label" # its status: the process has ended
		msg=exit
	fi
	next[$label]=$msg
	flush "$label"
	echo "interleave.sh: $where $label: ${msg%% *} after $((SECONDS - t0)) s" >&2
}

# Every benchmark runs at one fixed count on both sides: the smaller of
# the two pilots' b.N (or BENCHTIME itself when it is a count), so that
# both sides do the same work, and a run costs one setup (the engine
# skips the b.N = 1 call testing discards: probe.go).
{ list old "$old_bin"; list new "$new_bin"; } |
	awk '!($1 in n) { order[++k] = $1; n[$1] = $2 } $2 < n[$1] { n[$1] = $2 } END { for (i = 1; i <= k; i++) print order[i], n[order[i]] }' >"$outdir/list.txt"
names=() counts=()
while read -r name n; do names+=("$name") counts+=("$n"); done <"$outdir/list.txt"
((${#names[@]} > 0)) || { echo "interleave.sh: -test.bench '$bench' selects no benchmark in either binary" >&2; exit 1; }

# The self-check's slowdown of NEW (see above): as given, or drawn.
slow_spec=
if [[ -n ${SLOW:-} ]]; then
	pct=${SLOW%%:*} what=${SLOW#*:}
	if [[ $what =~ ^random([1-9][0-9]*)(:([0-9]+))?$ ]]; then
		k=${BASH_REMATCH[1]} seed=${BASH_REMATCH[3]:-$(date +%s%N)}
		((k <= ${#names[@]})) || { echo "interleave.sh: SLOW=$SLOW: draws $k of only ${#names[@]} benchmarks" >&2; exit 2; }
		# (no process substitution: the guest has no /dev/fd)
		ranked=$(for n in "${names[@]}"; do printf '%s %s\n' "$(printf '%s:%s' "$seed" "$n" | sha256sum | cut -c1-16)" "$n"; done | sort)
		mapfile -t drawn <<<"$(head -n "$k" <<<"$ranked" | cut -d' ' -f2)"
		alts=()
		for n in "${drawn[@]}"; do alts+=("$(sed -e 's/[][\\.*^$+?(){}|]/\\&/g' <<<"$n")"); done
		slow_spec="$pct:^($(IFS='|'; echo "${alts[*]}"))\$"
		echo "interleave.sh: self-check: seed $seed drew $k of ${#names[@]} benchmarks to run $pct worse in NEW (replay: SLOW=$pct:random$k:$seed):" >&2
		printf '  %s\n' "${drawn[@]}" >&2
	else
		slow_spec=$SLOW
	fi
	printf '%s\n' "$slow_spec" >"$outdir/slow.txt"
fi
procs=${PROCS:-1}
[[ $procs =~ ^[1-9][0-9]*$ && $procs -le $count ]] || { echo "interleave.sh: PROCS must be a whole number from 1 to COUNT ($count), got '$procs'" >&2; exit 2; }
((procs == 1 || block == 1)) || { echo "interleave.sh: PROCS=$procs takes turns run by run: BLOCK must be 1, got $block" >&2; exit 2; }
blocks=$(((count + block - 1) / block))
if ((procs == 1)); then
	echo "interleave.sh: ${#names[@]} benchmarks (list in $outdir/list.txt), each $count runs per side in $blocks blocks of ≤ $block runs, ABBA by block: old new, new old, ..." >&2
else
	echo "interleave.sh: ${#names[@]} benchmarks (list in $outdir/list.txt), each $count runs per side from $procs processes per side, one run a turn, ABBA: old1 new1, new2 old2, old3 new3, ..." >&2
fi
start_all=$SECONDS
for ((b = 0; b < ${#names[@]}; b++)); do
	name=${names[b]} pattern=$(exact "${names[b]}") fixed=${counts[b]}x
	[[ $benchtime == *x ]] && fixed=$benchtime
	sides=() labels=()
	for side in old new; do
		bin=${side}_bin
		[[ ${!bin} == - ]] && continue
		sides+=("$side")
		for ((p = 1; p <= procs; p++)); do
			# Process p makes runs p-1, p-1+procs, ... of its side.
			start "$side$p" "${!bin}" "$pattern" $(((count - p + procs) / procs))
			labels+=("$side$p")
		done
	done
	# Every process started and waiting before the first run.
	for label in "${labels[@]}"; do
		message "$label"
		next[$label]=$msg
	done
	where="[$((b + 1))/${#names[@]} $name"
	if ((procs == 1)); then
		for ((j = 0; j < blocks; j++)); do
			runs=$((count - j * block))
			((runs > block)) && runs=$block
			order=("${sides[@]}")
			((j % 2)) && ((${#sides[@]} == 2)) && order=(new old)
			for side in "${order[@]}"; do
				for ((k = 0; k < runs; k++)); do
					turn "${side}1" "$where block $((j + 1))/$blocks]"
				done
			done
		done
	else
		for ((j = 0; j < count; j++)); do
			p=$((j % procs + 1))
			# ABBA: the order flips from one pair of runs to the next,
			# and, with an even number of processes, from one round of
			# the processes to the next, so that no process always goes
			# first.
			parity=$((j % 2))
			((procs % 2 == 0)) && parity=$(((j + j / procs) % 2))
			order=("${sides[@]}")
			((parity)) && ((${#sides[@]} == 2)) && order=(new old)
			for side in "${order[@]}"; do
				turn "$side$p" "$where run $((j + 1))/$count]"
			done
		done
	fi
	for label in "${labels[@]}"; do finish "$label"; done
done
echo "interleave.sh: done in $((SECONDS - start_all)) s" >&2
