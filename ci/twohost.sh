#!/usr/bin/env bash
# ci/twohost.sh — one script for both guests of `rxevm -pair` (make test):
#   guest a (RDMA_ROLE=a) runs the peer daemon until guest b is done, and
#     kills and restarts it when b asks (the peer-killed fault test);
#   guest b runs every benchmark (-short) with -rdma.peer pointing at
#     a, so every benchmark's passive side is on the other host, then
#     rdmatest's examples of one's own pattern (commit, lockedRead,
#     writeRPC: side B's program, if any, sent to the peer and run
#     there), then the wire fault tests (loss, delay, link down, peer
#     killed).
# Needs .cache/rdmapeer and .cache/testbin/{bench_test,rdmatest,rdmatest_internal_engine}.test
# (ci/test.sh builds them). The peer requires a token, as on a real
# network: guest a makes a fresh one in .cache/twohost.token (mode 600,
# removed at the end) and reads it with -token-file; guest b waits for it
# and passes it in RDMA_PEER_TOKEN — never on a command line.
set -uo pipefail
root=$(pwd)
done_flag=$root/.cache/twohost.done
kill_flag=$root/.cache/twohost.kill
token_file=$root/.cache/twohost.token
port=18515
case ${RDMA_ROLE:-} in
a)
	rm -f "$token_file"
	(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$token_file.tmp") && mv "$token_file.tmp" "$token_file" || {
		echo "twohost: cannot write the token" >&2
		exit 1
	}
	trap 'rm -f "$token_file"' EXIT
	start_peer() {
		.cache/rdmapeer -listen ":$port" -token-file "$token_file" -rdma.timeout 20s &
		pid=$!
	}
	start_peer
	while [[ ! -e $done_flag ]]; do
		if [[ -e $kill_flag ]]; then
			echo "twohost: killing the peer (pid $pid) as asked"
			kill -KILL "$pid"
			wait "$pid" 2>/dev/null
			rm -f "$kill_flag"
			start_peer
		elif ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			echo "twohost: the peer daemon died unasked (exit $?)"
			exit 1
		fi
		sleep 0.2
	done
	kill -TERM "$pid"
	wait "$pid"
	;;
b)
	peer=${RDMA_PEER_ADDR:?}:$port
	# Guest a's token of this run: present and recent (guest a removes it
	# when it ends; ci/test.sh should remove one a killed run left).
	for ((i = 0; i < 600; i++)); do
		[[ -s $token_file && $(stat -c %Y "$token_file") -ge $(($(date +%s) - 600)) ]] && break
		sleep 0.2
	done
	if [[ ! -s $token_file ]]; then
		echo "twohost: guest a wrote no token in $token_file within 120 s" >&2
		touch "$done_flag"
		exit 1
	fi
	RDMA_PEER_TOKEN=$(cat "$token_file")
	export RDMA_PEER_TOKEN
	bash "$root/ci/hugepages.sh" # RegMR's page=huge points run instead of skipping
	# -test.v: a benchmark prints its skip only then (the lines that only
	# name a benchmark are left out of the log).
	blog=$root/.cache/twohost-bench.log
	(cd bench_test && ../.cache/testbin/bench_test.test -test.run '^$' -test.short -test.benchtime 100x \
		-test.bench "${TWOHOST_BENCH:-.}" -test.v \
		-rdma.peer "$peer" -rdma.timeout 20s 2>&1) >"$blog"
	rc=$?
	grep -vE '^Benchmark[^[:space:]]*$' "$blog"
	bash "$root/ci/skips.sh" "$blog" peer-bench "the benchmarks against the peer (-short)" || { ((rc != 0)) || rc=1; }
	# A few families once more with the peer accepting through rdma_cm
	# (-rdma.cm, perftest's -R): the Setup asks for it, b dials a's
	# listener once per QP.
	echo "=== benchmarks against the peer through rdma_cm (-rdma.cm, -short)"
	clog=$root/.cache/twohost-bench-cm.log
	(cd bench_test && ../.cache/testbin/bench_test.test -test.run '^$' -test.short -test.benchtime 100x \
		-test.bench '^Benchmark(SendLat|WriteLat|SendBW)$' -test.v \
		-rdma.peer "$peer" -rdma.timeout 20s -rdma.cm 2>&1) >"$clog"
	rc2=$?
	grep -vE '^Benchmark[^[:space:]]*$' "$clog"
	if ((rc2 == 0)) && ! grep -q '^rdma-connect: cm$' "$clog"; then
		echo "FAIL: the -rdma.cm pass against the peer printed no 'rdma-connect: cm' configuration line"
		rc2=1
	fi
	bash "$root/ci/skips.sh" "$clog" peer-cm "the benchmarks against the peer through rdma_cm (-short)" || { ((rc2 != 0)) || rc2=1; }
	((rc == 0)) && rc=$rc2
	# The examples of one's own pattern against the peer: side B's
	# program goes to rdmapeer in the Setup (role program), or B is a
	# target the NIC serves (lockedRead). Each example must print its
	# result line: rdmatest.Benchmark reports a skip as a "skipped:"
	# line, not as a --- SKIP, so both are checked.
	echo "=== the examples of one's own pattern against the peer"
	olog=$root/.cache/twohost-own.log
	(cd rdmatest && ../.cache/testbin/rdmatest.test -test.run '^Example' -test.v -test.benchtime 100x \
		-rdma.peer "$peer" -rdma.timeout 20s 2>&1) >"$olog"
	rc3=$?
	cat "$olog"
	for name in Commit/size=4096 LockedRead/size=256 WriteRPC/size=1024; do
		if ! grep -q "^Benchmark$name-[0-9]" "$olog"; then
			echo "FAIL: the example Benchmark$name printed no result line against the peer"
			rc3=1
		fi
	done
	if grep -q '^rdmatest: Benchmark.* skipped: ' "$olog"; then
		echo "FAIL: an example of one's own pattern skipped against the peer"
		rc3=1
	fi
	bash "$root/ci/skips.sh" "$olog" peer-own "the examples of one's own pattern against the peer" || { ((rc3 != 0)) || rc3=1; }
	((rc == 0)) && rc=$rc3
	if ((rc == 0)); then
		echo "=== faults over the wire"
		wlog=$root/.cache/twohost-wire.log
		(cd rdmatest/internal/engine && RDMA_WIRE_FAULTS=1 RDMA_PEER_KILL_FILE=$kill_flag "$root"/.cache/testbin/rdmatest_internal_engine.test \
			-test.run '^TestWire' -test.v -test.count 1 -rdma.peer "$peer" -rdma.timeout 5s 2>&1) >"$wlog"
		rc=$?
		cat "$wlog"
		# The wire tests skip without a peer, RDMA_WIRE_FAULTS or the
		# kill file: here they have all three, so a skip fails the pass.
		bash "$root/ci/skips.sh" "$wlog" wire "the wire fault tests" || { ((rc != 0)) || rc=1; }
		grep -q '^--- PASS: TestWire' "$wlog" || { echo "FAIL: no wire fault test ran"; ((rc != 0)) || rc=1; }
	fi
	touch "$done_flag"
	exit $rc
	;;
*)
	echo "twohost: RDMA_ROLE must be a or b (run it under rxevm -pair)" >&2
	exit 2
	;;
esac
