#!/usr/bin/env bash
# ci/bringup.sh — the bring-up check (cmd/rdmacheck) on two guests, with
# the failures it must name. One script for both guests of `rxevm -pair`
# (make test):
#   guest b (RDMA_ROLE=b) is the far end: rdmacheck -listen, and on guest
#     a's request it drops its incoming UDP port 4791 with tc (and undoes
#     it);
#   guest a is the near end and runs the cases, each asserting the exit
#     status, the failed step and its cause:
#     (a) all good: every step ok;
#     (b) port down: a's netdev down → step 1 names the port's state;
#     (d) a wrong GID index (-x 7) → step 2 lists the set entries;
#     (c) UDP 4791 blocked at b → step 4 names UDP 4791 while TCP worked;
#     and all good again, once every fault is undone.
# Needs .cache/rdmacheck (go build -o .cache/rdmacheck ./cmd/rdmacheck).
# The guests sync through files .cache/bringup.*: a flag counts only when
# it is younger than this script's start (minus a minute), so one a killed
# run left behind is not taken for this run's; remove them before a run
# all the same (rm -f .cache/bringup.*).
# Exit status: 0 every case as expected (in both guests), 1 otherwise.
set -uo pipefail
root=$(pwd)
bin=$root/.cache/rdmacheck
flags=$root/.cache/bringup
netdev=${RDMA_NETDEV:-eth0}
dev=${RDMA_DEVICE:-rxe0}
started=$(date +%s)

# flag NAME: raise a flag for the other guest.
flag() { touch "$flags.$1"; }
# await NAME SECONDS: wait for the other guest's flag, fresh from this run.
await() {
	local f=$flags.$1 i
	for ((i = 0; i < $2 * 10; i++)); do
		[[ -e $f && $(stat -c %Y "$f") -ge $((started - 60)) ]] && return 0
		sleep 0.1
	done
	echo "bringup: no flag $1 from the other guest within $2 s" >&2
	return 1
}
# port_state WANT SECONDS: wait until $dev port 1's state reads WANT
# (DOWN, ACTIVE).
port_state() {
	local i s
	for ((i = 0; i < $2 * 10; i++)); do
		s=$(cat "/sys/class/infiniband/$dev/ports/1/state" 2>/dev/null)
		[[ $s == *": $1" ]] && return 0
		sleep 0.1
	done
	echo "bringup: $dev port 1 is '$s', not $1, after $2 s" >&2
	return 1
}

case ${RDMA_ROLE:-} in
b)
	[[ -x $bin ]] || {
		echo "bringup: no $bin (go build -o .cache/rdmacheck ./cmd/rdmacheck)" >&2
		exit 1
	}
	log=$root/.cache/bringup-far.log
	"$bin" -listen -timeout 3s >"$log" 2>&1 &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q '^rdmacheck: listening on' "$log" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	grep -q '^rdmacheck: listening on' "$log" || {
		echo "bringup: the far end did not start:" >&2
		cat "$log" >&2
		exit 1
	}
	flag ready
	rc=0
	# Guest a asks for UDP 4791 to be dropped, then for it to pass again.
	if await block-udp 300; then
		tc qdisc add dev "$netdev" ingress &&
			tc filter add dev "$netdev" parent ffff: protocol ip prio 1 u32 \
				match ip protocol 17 0xff match ip dport 4791 0xffff action drop || {
			echo "bringup: cannot drop UDP 4791 on $netdev with tc" >&2
			rc=1
		}
		flag udp-blocked
		if await unblock-udp 120; then
			tc -s filter show dev "$netdev" parent ffff: | grep -E 'dropped|Sent' | sed 's/^/bringup: tc ingress: /'
			tc qdisc del dev "$netdev" ingress || rc=1
			flag udp-unblocked
		else
			rc=1
		fi
	else
		rc=1
	fi
	await done 300 || rc=1
	kill -TERM "$pid"
	wait "$pid"
	frc=$?
	echo "=== the far end's output (guest b)"
	cat "$log"
	if ((frc != 0)); then
		echo "FAIL: the far end exited $frc (it must stop with status 0, nothing left open)"
		rc=1
	fi
	grep -q 'LEAK' "$log" && {
		echo "FAIL: the far end left objects open after a session"
		rc=1
	}
	rm -f "$flags".*
	exit $rc
	;;
a)
	peer=${RDMA_PEER_ADDR:?}
	rc=0
	# check NAME WANT_STATUS ARGS... -- LINE...: run rdmacheck against
	# the far end and require its exit status and every LINE (a fixed
	# string) in its output.
	check() {
		local name=$1 want=$2 args=() lines=() out st l
		shift 2
		while (($# > 0)) && [[ $1 != -- ]]; do
			args+=("$1")
			shift
		done
		shift
		lines=("$@")
		echo "=== bring-up case: $name"
		out=$("$bin" -connect "$peer" "${args[@]}" 2>&1)
		st=$?
		echo "$out"
		local bad=0
		if ((st != want)); then
			echo "FAIL: $name: exit status $st, want $want"
			bad=1
		fi
		for l in "${lines[@]}"; do
			if ! grep -qF -- "$l" <<<"$out"; then
				echo "FAIL: $name: no line with: $l"
				bad=1
			fi
		done
		if ((bad == 0)); then
			echo "PASS: $name"
		else
			rc=1
		fi
	}
	allok=("ok   device and port: $dev port 1 ACTIVE" "ok   gid: index" "ok   control channel: TCP to $peer:18517"
		"ok   udp 4791: a RoCE v2 datagram" "ok   rdma_cm connect: RC QP" "ok   ping-pong: 200 × 64 B SEND/RECV round trips, every payload checked on both ends"
		"ok   disconnect: disconnected; every verbs object released here (verbs.Live: 0 open) and at the far end (0 open)")
	if ! await ready 120; then
		flag done
		exit 1
	fi

	check "(a) all good" 0 -n 200 -- "${allok[@]}"

	echo "=== $netdev down"
	ip link set "$netdev" down
	port_state DOWN 10 || rc=1
	check "(b) port down" 1 -- "FAIL device and port: $dev port 1 is DOWN (physical state Disabled) — the link under it is down: netdev $netdev is down"
	ip link set "$netdev" up
	port_state ACTIVE 30 || rc=1

	check "(d) wrong GID index" 1 -x 7 -- "ok   device and port:" "FAIL gid: GID index 7 of $dev port 1 is empty; set entries: 0 (" "::ffff:$RDMA_LOCAL_ADDR, RoCE v2)" "— a wrong GID index"

	flag block-udp
	if await udp-blocked 60; then
		check "(c) UDP 4791 blocked" 1 -timeout 2s -- "ok   control channel: TCP to $peer:18517" \
			"FAIL udp 4791: TCP reached $peer:18517 but no RoCE v2 datagram (UDP port 4791) arrived there in 2s — a firewall passing TCP but dropping UDP, a switch port without RoCE, or a wrong GID index/type"
	else
		rc=1
	fi
	flag unblock-udp
	await udp-unblocked 60 || rc=1

	check "all good again, every fault undone" 0 -n 200 -- "${allok[@]}"
	flag done
	exit $rc
	;;
*)
	echo "bringup: RDMA_ROLE must be a or b (run it under rxevm -pair)" >&2
	exit 2
	;;
esac
