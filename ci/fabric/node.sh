#!/usr/bin/env bash
# ci/fabric/node.sh — what every guest of ci/fabric/cluster.sh runs (as
# root, in a qemu guest whose root file system is the host's, read-only).
# Every guest: tmpfs on /run, munged with the cluster's key, slurmd.
# node1 (RDMA_NODE_INDEX 0) starts slurmctld first, waits until the
# cluster's nodes are idle, runs the srun jobs, checks them and writes
# $FABRIC_RUN/done; the others keep their slurmd up until that file (or
# $FABRIC_RUN/failed) appears. Every wait has a deadline; any failure
# prints the daemons' log tails and exits non-zero (which stops the
# other guests).
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# It mounts over /run and /sys/fs/cgroup: never on the host.
[[ ${RDMA_IN_VM:-} == 1 ]] || { echo "ci/fabric/node.sh runs only in a guest of rxevm -cluster (ci/fabric/cluster.sh)" >&2; exit 2; }
: "${RDMA_NODE_INDEX:?}" "${RDMA_NODE_NAME:?}" "${SLURM_CONF:?}" "${FABRIC_KEY:?}" "${FABRIC_RUN:?}" "${FABRIC_NODES:?}"
me=$RDMA_NODE_NAME

# log prints a line with the guest's uptime (seconds since its kernel
# started): the guests boot at the same time, so the uptimes line up.
log() { printf '[%7ss] %s\n' "$(cut -d' ' -f1 /proc/uptime)" "$*"; }
dump() {
	local f
	for f in /run/munge/munged.log /run/slurm/slurmctld.log /run/slurm/slurmd.log; do
		[[ -s $f ]] || continue
		echo "--- $me: last lines of $f"
		tail -n 25 "$f"
	done
}
fail() {
	log "FAIL: $*"
	dump
	[[ $RDMA_NODE_INDEX == 0 ]] && touch "$FABRIC_RUN/failed"
	exit 1
}
# wait_for SECONDS WHAT CMD...: runs CMD every second until it succeeds,
# for at most SECONDS.
wait_for() {
	local limit=$1 what=$2 t0=$SECONDS
	shift 2
	until "$@" >/dev/null 2>&1; do
		((SECONDS - t0 < limit)) || fail "$what: not after ${limit}s"
		sleep 1
	done
	log "$what (after $((SECONDS - t0))s)"
}

log "$me up: $(ibv_devinfo -d rxe0 | awk '/state:/ {print $2}') rxe0 on $RDMA_NETDEV ($RDMA_LOCAL_ADDR), $(nproc) CPU, $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) MiB"

# Writable places: the host root is read-only here; /run becomes a tmpfs
# (munge's socket, Slurm's state, spool, pid and log files).
mount -t tmpfs -o mode=0755 tmpfs /run || fail "cannot mount a tmpfs on /run"
mkdir -p /run/munge /run/slurm/ctld /run/slurm/d || fail "mkdir in /run"
# slurmd wants a file system on /sys/fs/cgroup (see cgroup.conf).
mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup || fail "cannot mount a tmpfs on /sys/fs/cgroup"

# munged refuses a key that its user does not own or that others may
# read; the share shows the host's owner (not root when CI runs as a
# user), so the key is copied to the tmpfs, root's and 0400.
install -m 0400 -o root -g root "$FABRIC_KEY" /run/munge/munge.key || fail "cannot copy the munge key"
munged --key-file=/run/munge/munge.key --log-file=/run/munge/munged.log \
	--pid-file=/run/munge/munged.pid --seed-file=/run/munge/munged.seed || fail "munged did not start"
munge -n | unmunge >/dev/null || fail "munge does not round-trip a credential locally"
log "munged up"

if [[ $RDMA_NODE_INDEX == 0 ]]; then
	slurmctld -i || fail "slurmctld did not start"
fi
# slurmd registers with slurmctld when it starts: wait until slurmctld
# answers, so that the registration is not lost to a timeout.
wait_for 120 "slurmctld answers" sh -c 'scontrol ping | grep -q "is UP"'
slurmd || fail "slurmd did not start"
log "slurmd started"

# The nodes' names, for the agents and the coordinator (Slurm has them
# from slurm.conf): /etc/hosts is the host's, read-only, so a file on
# the tmpfs is bound over it.
{
	echo "127.0.0.1 localhost"
	for ((i = 1; i <= FABRIC_NODES; i++)); do echo "192.0.2.$i node$i"; done
} >/run/hosts && mount --bind /run/hosts /etc/hosts || fail "cannot bind a hosts file over /etc/hosts"

if [[ $RDMA_NODE_INDEX != 0 ]]; then
	# Keep slurmd up until node1's jobs are done; then power off. When
	# node1 asks for the faults (the fabric pass), put this node's in.
	wait_for 1500 "node1's jobs done, or its faults asked for" sh -c '[ -e "$FABRIC_RUN/done" ] || [ -e "$FABRIC_RUN/failed" ] || [ -e "$FABRIC_RUN/inject" ]'
	if [[ -e $FABRIC_RUN/inject && ! -e $FABRIC_RUN/failed ]]; then
		source ci/fabric/faults.sh
		inject "$me" || fail "injecting $me's fault"
		touch "$FABRIC_RUN/injected-$me"
		# node1 asks for the faults out again before its incast step
		# (pass.sh, FABRIC_INCAST=1).
		wait_for 1500 "node1's jobs done, or its faults out" sh -c '[ -e "$FABRIC_RUN/done" ] || [ -e "$FABRIC_RUN/failed" ] || [ -e "$FABRIC_RUN/clear" ]'
		if [[ -e $FABRIC_RUN/clear && ! -e $FABRIC_RUN/failed ]]; then
			uninject "$me" || fail "taking $me's fault out"
			touch "$FABRIC_RUN/cleared-$me"
			wait_for 1500 "node1's jobs done" sh -c '[ -e "$FABRIC_RUN/done" ] || [ -e "$FABRIC_RUN/failed" ]'
		fi
	fi
	[[ -e $FABRIC_RUN/failed ]] && fail "node1 failed"
	exit 0
fi

# node1: all nodes idle, then the jobs.
idle() { [[ $(sinfo -h -N -t idle -o '%N' | sort -u | wc -l) -eq $FABRIC_NODES ]]; }
wait_for 240 "sinfo: $FABRIC_NODES nodes idle" idle
sinfo -N -o '%N %P %T %c %O'

log "srun -N$FABRIC_NODES --ntasks-per-node=1 hostname"
out1=$(timeout 120 srun -N"$FABRIC_NODES" --ntasks-per-node=1 hostname 2>&1) || fail "srun hostname: status $?: $out1"
echo "$out1"
want=$(for ((i = 1; i <= FABRIC_NODES; i++)); do echo "node$i"; done)
[[ $(sort <<<"$out1") == "$want" ]] || fail "srun hostname printed $(tr '\n' ' ' <<<"$out1"), not node1..node$FABRIC_NODES once each"

log "srun -N$FABRIC_NODES --ntasks-per-node=1 bash -c 'echo \$SLURM_PROCID \$(hostname) \$SLURM_JOB_NODELIST'"
# shellcheck disable=SC2016 # expanded by the tasks
out2=$(timeout 120 srun -N"$FABRIC_NODES" --ntasks-per-node=1 bash -c 'echo $SLURM_PROCID $(hostname) $SLURM_JOB_NODELIST' 2>&1) || fail "srun bash: status $?: $out2"
sort -n <<<"$out2"
procs=$(awk '{print $1}' <<<"$out2" | sort -n | tr '\n' ' ')
want_procs=$(seq 0 $((FABRIC_NODES - 1)) | tr '\n' ' ')
[[ $procs == "$want_procs" ]] || fail "the tasks' SLURM_PROCIDs are $procs, not $want_procs"
[[ $(awk '{print $2}' <<<"$out2" | sort) == "$want" ]] || fail "the tasks ran on $(awk '{print $2}' <<<"$out2" | tr '\n' ' '), not node1..node$FABRIC_NODES once each"
lists=$(awk '{print $3}' <<<"$out2" | sort -u)
[[ $(wc -l <<<"$lists") -eq 1 ]] || fail "the tasks saw different SLURM_JOB_NODELISTs: $lists"
hosts=$(scontrol show hostnames "$lists") || fail "scontrol show hostnames $lists"
echo "scontrol show hostnames $lists: $(tr '\n' ' ' <<<"$hosts")"
[[ $hosts == "$want" ]] || fail "SLURM_JOB_NODELIST $lists expands to $(tr '\n' ' ' <<<"$hosts"), not node1..node$FABRIC_NODES"

log "node1: both jobs right"

source ci/fabric/faults.sh
source ci/fabric/pass.sh
fabric_pass || fail "the fabric pass"

touch "$FABRIC_RUN/done"
log "node1: done"
