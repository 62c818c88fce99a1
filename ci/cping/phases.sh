#!/bin/bash
# phases.sh DIR ROUNDS CONTROL...: make calibrate-phases' rotation, run in
# the guest (issue #27, docs/performance.md "Phases"). Each round runs
# ib_write_lat -s 8 -I 0 -U (every sample) and each CONTROL (cping
# builds) with -S, in an order that rotates from round to round (round r
# starts with the r-th of them, as make calibrate's pairs), 5000 round
# trips each, requester on CPU 0 and passive
# side on CPU 1 as make calibrate pins them, and keeps every output as
# DIR/<tool>.<round>.txt for calibrate -phases. The device is the first
# RDMA device (RDMA_DEV to choose), the GID the first IPv4-mapped one.
set -euo pipefail
dir=$1 rounds=$2
shift 2
dev=${RDMA_DEV:-$(ls /sys/class/infiniband | head -1)}
[ -n "$dev" ] || { echo "phases.sh: no RDMA device" >&2; exit 1; }
gid=
for f in /sys/class/infiniband/$dev/ports/1/gids/*; do
	case $(cat "$f") in 0000:0000:0000:0000:0000:ffff:*) gid=$(basename "$f"); break ;; esac
done
[ -n "$gid" ] || { echo "phases.sh: $dev port 1 has no IPv4-mapped GID" >&2; exit 1; }
n=5000
perftest() { # round
	timeout 120 taskset -c 1 ib_write_lat -d "$dev" -x "$gid" -F -n $n -s 8 -I 0 > "$dir/server.txt" 2>&1 &
	local srv=$! ok=
	for try in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.3
		if timeout 120 taskset -c 0 ib_write_lat -d "$dev" -x "$gid" -F -n $n -s 8 -I 0 -U 127.0.0.1 > "$dir/perftest.$1.txt" 2>&1; then
			ok=1
			break
		fi
	done
	wait $srv || true
	[ -n "$ok" ] || { echo "phases.sh: round $1: ib_write_lat failed:" >&2; cat "$dir/perftest.$1.txt" >&2; exit 1; }
}
contestants=(perftest "$@")
for r in $(seq 1 "$rounds"); do
	k=${#contestants[@]}
	for ((j = 0; j < k; j++)); do
		c=${contestants[(r - 1 + j) % k]}
		if [ "$c" = perftest ]; then
			perftest "$r"
		else
			timeout 120 "$c" -d "$dev" -i 1 -x "$gid" -s 8 -n $n -a 0 -b 1 -S > "$dir/$(basename "$c").$r.txt"
		fi
	done
done
rm -f "$dir/server.txt"
