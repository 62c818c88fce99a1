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
source "$(dirname "$0")/lib.sh"
rb_device_gid
n=5000
contestants=(perftest "$@")
for r in $(seq 1 "$rounds"); do
	k=${#contestants[@]}
	for ((j = 0; j < k; j++)); do
		c=${contestants[(r - 1 + j) % k]}
		if [ "$c" = perftest ]; then
			rb_perftest "$dir/perftest.$r.txt" ib_write_lat -s 8 -I 0
		else
			timeout 120 "$c" -d "$dev" -i 1 -x "$gid" -s 8 -n $n -a 0 -b 1 -S > "$dir/$(basename "$c").$r.txt"
		fi
	done
done
