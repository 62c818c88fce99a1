#!/usr/bin/env bash
# ci/twohost.sh — one script for both guests of `rxevm -pair` (make test):
#   guest a (RDMA_ROLE=a) runs the peer daemon until guest b is done, and
#     kills and restarts it when b asks (the peer-killed fault test);
#   guest b runs every benchmark (-short) with -rdma.peer pointing at
#     a, so every benchmark's passive side is on the other host, then the
#     wire fault tests (loss, delay, link down, peer killed).
# Needs .cache/rdmapeer and .cache/testbin/{bench_test,rdmatest}.test
# (ci/test.sh builds them).
set -uo pipefail
root=$(pwd)
done_flag=$root/.cache/twohost.done
kill_flag=$root/.cache/twohost.kill
port=18515
case ${RDMA_ROLE:-} in
a)
	start_peer() {
		.cache/rdmapeer -listen ":$port" -rdma.timeout 20s &
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
	(cd bench_test && ../.cache/testbin/bench_test.test -test.run '^$' -test.short -test.benchtime 100x \
		-test.bench "${TWOHOST_BENCH:-.}" \
		-rdma.peer "$peer" -rdma.timeout 20s 2>&1)
	rc=$?
	if ((rc == 0)); then
		echo "=== faults over the wire"
		(cd rdmatest && RDMA_WIRE_FAULTS=1 RDMA_PEER_KILL_FILE=$kill_flag ../.cache/testbin/rdmatest.test \
			-test.run '^TestWire' -test.v -test.count 1 -rdma.peer "$peer" -rdma.timeout 5s 2>&1)
		rc=$?
	fi
	touch "$done_flag"
	exit $rc
	;;
*)
	echo "twohost: RDMA_ROLE must be a or b (run it under rxevm -pair)" >&2
	exit 2
	;;
esac
