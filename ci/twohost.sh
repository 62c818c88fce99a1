#!/usr/bin/env bash
# ci/twohost.sh — one script for both guests of `rxevm -pair` (make test):
#   guest a (RDMA_ROLE=a) runs the peer daemon until guest b is done;
#   guest b runs the perftest families (-short) with -rdma.peer pointing at a,
#   so every benchmark's passive side is on the other host, across the wire.
# Needs .cache/rdmapeer and .cache/testbin/bench_test.test (ci/test.sh builds them).
set -uo pipefail
root=$(pwd)
done_flag=$root/.cache/twohost.done
port=18515
case ${RDMA_ROLE:-} in
a)
	.cache/rdmapeer -listen ":$port" -rdma.timeout 20s &
	pid=$!
	# Serve until b says it is done (or the peer dies).
	while [[ ! -e $done_flag ]] && kill -0 "$pid" 2>/dev/null; do sleep 0.5; done
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid"
		echo "twohost: the peer daemon died (exit $?)"
		exit 1
	fi
	kill -TERM "$pid"
	wait "$pid"
	;;
b)
	cd bench_test || exit 1
	../.cache/testbin/bench_test.test -test.run '^$' -test.short -test.benchtime 100x \
		-test.bench "${TWOHOST_BENCH:-^Benchmark(Send|Write|Read|Atomic)(Lat|BW)\$}" \
		-rdma.peer "${RDMA_PEER_ADDR:?}:$port" -rdma.timeout 20s 2>&1
	rc=$?
	touch "$done_flag"
	exit $rc
	;;
*)
	echo "twohost: RDMA_ROLE must be a or b (run it under rxevm -pair)" >&2
	exit 2
	;;
esac
