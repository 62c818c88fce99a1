#!/usr/bin/env bash
# ci/devtests.sh PKG... — runs the prebuilt test binaries .cache/testbin/PKG.test
# (PKG with / turned into _)
# on the RDMA device of this session (natively, or inside the qemu guest
# started by rxevm: one boot for all of them). RDMA_REQUIRE=1 makes a test
# that cannot get a device fail instead of skipping.
set -uo pipefail
export RDMA_REQUIRE=1
root=$(pwd)
status=0
bash "$root/ci/hugepages.sh" # RegMR's page=huge points run instead of skipping
# checked RC OUTPUT REGEX WHY — RC, or 1 (with "FAIL: WHY") when a
# command that exited 0 printed no line matching REGEX.
checked() {
	if (($1 == 0)) && ! grep -Eq "$3" <<<"$2"; then
		echo "FAIL: $4"
		return 1
	fi
	return "$1"
}
for p in "$@"; do
	bin=$root/.cache/testbin/${p//\//_}.test
	echo "=== device tests: $p"
	# Tests run in their package directory, as with go test.
	# The wire tests need a peer on another host: they run in the two-host
	# pass (ci/twohost.sh), not here.
	# The log shows each test's name and result; when the package fails,
	# the whole output of its failing tests follows (testify's Error,
	# expected and actual lines included: ci/failed.sh), and all of it
	# stays in .cache/devtests-PKG.log.
	log=$root/.cache/devtests-${p//\//_}.log
	(cd "$root/$p" && "$bin" -test.count 1 -test.timeout 10m -test.v -test.skip '^TestWire' -rdma.timeout 10s 2>&1) >"$log"
	rc=$?
	grep -E '^(=== RUN|--- |\s+--- |PASS|FAIL|ok|panic|\s+\S+_test.go)' "$log"
	bash "$root/ci/skips.sh" "$log" device "the device tests of $p" || { ((rc != 0)) || rc=1; }
	if ((rc != 0)); then
		echo "=== the whole output of $p's failing device tests (all of the log in $log)"
		bash "$root/ci/failed.sh" "$log"
	fi
	if [[ $p == verbs ]]; then
		echo "=== benchmark of the post/poll path (must report 0 allocs/op): $p"
		out=$(cd "$root/$p" && "$bin" -test.run '^$' -test.bench PostPoll -test.benchtime 500x -test.timeout 5m 2>&1)
		rc2=$?
		echo "$out"
		checked $rc2 "$out" '^BenchmarkPostPoll.*[[:space:]]0 B/op[[:space:]]+0 allocs/op' "BenchmarkPostPoll allocates"
		rc2=$?
		((rc == 0)) && rc=$rc2
	fi
	if [[ $p == rdmatest ]]; then
		# The own-pattern example as a user's benchmark: 14 runs whose
		# result lines (on stderr) ci/owngate.sh gates on the host.
		# (-test.count does not repeat an example: one run per process.)
		echo "=== the own-pattern example, 14 runs for benchstat and the gate: $p"
		rc2=0
		for _ in $(seq 14); do
			(cd "$root/$p" && "$bin" -test.run '^Example_commit$' -test.benchtime 2000x \
				-test.timeout 5m -rdma.timeout 10s >/dev/null 2>>"$root/.cache/example-commit.txt") || { rc2=$?; break; }
		done
		grep -c '^BenchmarkCommit' "$root/.cache/example-commit.txt" | sed 's/^/result lines: /'
		((rc2 == 0)) || tail -n 20 "$root/.cache/example-commit.txt"
		((rc == 0)) && rc=$rc2
	fi
	if [[ $p == verbs && -x $root/.cache/bin/cping ]]; then
		dev=$(basename "$(ls -d /sys/class/infiniband/* | head -n 1)")
		# cping_run BUILD PATTERN ARGS…: one run of the C-only control's
		# BUILD (2000 round trips), whose output must hold PATTERN.
		cping_run() {
			local b=$1 want=$2 out rc2
			shift 2
			echo "=== the C-only control $b${*:+ $*}, 2000 round trips"
			out=$("$root/.cache/bin/$b" -d "$dev" -n 2000 -t 10 "$@" 2>&1)
			rc2=$?
			head -n 1 <<<"$out"
			checked $rc2 "$out" "$want" "$b${*:+ $*} printed no such histogram: $want"
			rc2=$?
			((rc2 == 0)) || tail -n 5 <<<"$out"
			((rc == 0)) && rc=$rc2
		}
		# calibrate's C-only control runs the same loops.
		cping_run cping '^cping-counts 1 100000000000 3 2000 [0-9]+$'
		# make calibrate-phases' experiment builds (make cping-builds), each
		# like for like (-S): 1999 cycle samples; the READ and atomic
		# round trips (-o) with our loop, perftest's, and perftest's with
		# our pieces, and SendLat's RC ping-pong with our loops and
		# perftest's (make calibrate-phases' second boot).
		cycles='^cping-cycle-counts 1 100000000000 3 1999 [0-9]+$'
		for b in "$root"/.cache/bin/cping-*; do
			[[ -x $b ]] && cping_run "$(basename "$b")" "$cycles" -S
		done
		for b in cping cping-ptloop cping-ptloop-all; do
			for op in read fadd cas; do
				[[ -x $root/.cache/bin/$b ]] && cping_run "$b" "$cycles" -S -o "$op"
			done
		done
		for b in cping cping-ptloop cping-pt2cq; do
			[[ -x $root/.cache/bin/$b ]] && cping_run "$b" "$cycles" -S -o send
		done
	fi
	if [[ $p == bench_test ]]; then
		echo "=== benchmarks (-short smoke run): $p"
		# -test.v: a benchmark prints its skip only then (the lines that
		# only name a benchmark are left out of the log).
		blog=$root/.cache/devtests-bench.log
		(cd "$root/$p" && "$bin" -test.run '^$' -test.bench . -test.short -test.benchtime 100x \
			-test.v -test.timeout 10m -rdma.timeout 10s 2>&1) >"$blog"
		rc2=$?
		grep -vE '^Benchmark[^[:space:]]*$' "$blog"
		bash "$root/ci/skips.sh" "$blog" bench "the benchmarks (-short)" || { ((rc2 != 0)) || rc2=1; }
		((rc == 0)) && rc=$rc2
		# The perftest families once more with every pair connected
		# through rdma_cm (-rdma.cm, perftest's -R): -short (RC), then
		# UD and UC once each, so the UD path runs and UC's skip (which
		# only the cm pass allows: ci/skips.allow) is seen.
		echo "=== benchmarks through rdma_cm (-rdma.cm, -short; SendLat and SendBW also UD and UC): $p"
		clog=$root/.cache/devtests-bench-cm.log
		rc2=0
		: >"$clog"
		for bench in '^Benchmark(Send|Write|Read|Atomic)(Lat|BW)$' \
			'^BenchmarkSendLat$/^transport=(UD|UC)$/^size=8$/^inline=false$/^mode=poll$' \
			'^BenchmarkSendBW$/^transport=(UD|UC)$/^size=64$/'; do
			short=-test.short
			[[ $bench == *transport=* ]] && short=
			(cd "$root/$p" && "$bin" -test.run '^$' -test.bench "$bench" $short -test.benchtime 100x \
				-test.v -test.timeout 10m -rdma.timeout 10s -rdma.cm 2>&1) >>"$clog" || rc2=1
		done
		grep -vE '^Benchmark[^[:space:]]*$' "$clog"
		checked $rc2 "$(cat "$clog")" '^rdma-connect: cm$' "the -rdma.cm pass printed no 'rdma-connect: cm' configuration line"
		rc2=$?
		checked $rc2 "$(cat "$clog")" '^BenchmarkSendLat/transport=UD/.*[[:space:]]100[[:space:]]' "the -rdma.cm pass ran no UD SendLat"
		rc2=$?
		bash "$root/ci/skips.sh" "$clog" cm "the benchmarks through rdma_cm (-rdma.cm)" || { ((rc2 != 0)) || rc2=1; }
		((rc == 0)) && rc=$rc2
	fi
	if ((rc != 0)); then
		echo "FAIL: device tests of $p (exit $rc)"
		status=1
	else
		echo "ok: device tests of $p"
	fi
done
exit $status
