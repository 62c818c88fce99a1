#!/bin/bash
# lib.sh: what ci/cping/phases.sh and families.sh share, sourced by both
# (in the guest). n, the iterations of a run, is the caller's.

# rb_device_gid sets dev (RDMA_DEV, or the first RDMA device) and gid
# (its port 1's first IPv4-mapped GID index), or exits naming what is
# missing.
rb_device_gid() {
	local me f
	me=$(basename "$0")
	dev=${RDMA_DEV:-$(ls /sys/class/infiniband | head -1)}
	[ -n "$dev" ] || { echo "$me: no RDMA device" >&2; exit 1; }
	gid=
	for f in /sys/class/infiniband/$dev/ports/1/gids/*; do
		case $(cat "$f") in 0000:0000:0000:0000:0000:ffff:*) gid=$(basename "$f"); break ;; esac
	done
	[ -n "$gid" ] || { echo "$me: $dev port 1 has no IPv4-mapped GID" >&2; exit 1; }
}

# rb_perftest OUT PROGRAM [ARGS…] runs one perftest latency run with
# every sample (-U): its server on CPU 1, its client on CPU 0 (retried
# while the server comes up), n iterations; the client's output goes to
# OUT, and a failure exits with it.
rb_perftest() {
	local out=$1 srv ok= try
	shift
	timeout 120 taskset -c 1 "$@" -d "$dev" -x "$gid" -F -n "$n" > "$out.server" 2>&1 &
	srv=$!
	for try in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.3
		if timeout 120 taskset -c 0 "$@" -d "$dev" -x "$gid" -F -n "$n" -U 127.0.0.1 > "$out" 2>&1; then
			ok=1
			break
		fi
	done
	wait "$srv" || true
	rm -f "$out.server"
	[ -n "$ok" ] || { echo "$(basename "$0"): $out: $* failed:" >&2; cat "$out" >&2; exit 1; }
}
