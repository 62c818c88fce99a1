#!/bin/bash
# families.sh DIR ROUNDS BENCH [CPING…]: make calibrate-phases' rotation
# for the latency families other than write_lat (issue #43), run in the
# guest. Each round runs, per family, perftest's latency program with -U
# (every sample), the matching benchmark of BENCH (bench_test's binary)
# like for like (-rdma.signal-all -rdma.warmup 0) and, for read_lat and
# the atomics, each CPING build (the C-only control, -S -o read, fadd or
# cas), for send_lat (RC) cping, cping-ptloop and cping-pt2cq (-S -o
# send: the builds that take it), in an order that rotates from round to round, 5000
# iterations each, requester on CPU 0 and passive side on CPU 1 as make
# calibrate pins them. It keeps DIR/FAMILY/perftest.ROUND.txt,
# DIR/FAMILY/bench.ROUND.hlog (the benchmark's cycle histogram:
# perftest's sample) and DIR/FAMILY/CPING.ROUND.txt for calibrate
# -phases. The device is the first RDMA device (RDMA_DEV to choose), the
# GID the first IPv4-mapped one; FAMILIES (names, space-separated)
# limits the families run. BENCH_ENVS adds the benchmark again under
# other environments, as contestants of their own: space-separated
# NAME:VAR=VALUE[,VAR=VALUE…] (NAME starting with bench-), e.g.
# "bench-gogc:GOGC=off" keeps DIR/FAMILY/bench-gogc.ROUND.hlog.
set -euo pipefail
dir=$(realpath -m "$1") rounds=$2 bench=$(realpath "$3")
shift 3
cpings=()
for c in "$@"; do cpings+=("$(realpath "$c")"); done
source "$(dirname "$0")/lib.sh"
rb_device_gid
n=5000
# family, perftest program and options, the benchmark's -test.bench
# pattern (every level anchored: one benchmark)
families=(
	"read_lat|ib_read_lat -s 8|^BenchmarkReadLat\$/^transport=RC\$/^size=8\$/^mode=poll\$"
	"send_lat|ib_send_lat -s 8 -I 0|^BenchmarkSendLat\$/^transport=RC\$/^size=8\$/^inline=false\$/^mode=poll\$"
	"send_lat_ud|ib_send_lat -c UD -s 8 -I 0|^BenchmarkSendLat\$/^transport=UD\$/^size=8\$/^inline=false\$/^mode=poll\$"
	"atomic_lat_fadd|ib_atomic_lat -A FETCH_AND_ADD|^BenchmarkAtomicLat\$/^op=fadd\$/^transport=RC\$"
	"atomic_lat_cas|ib_atomic_lat -A CMP_AND_SWAP|^BenchmarkAtomicLat\$/^op=cas\$/^transport=RC\$"
)
declare -A benv=([bench]=)
for v in ${BENCH_ENVS:-}; do
	[[ $v == bench-*:*=* ]] || { echo "families.sh: BENCH_ENVS entry $v: want bench-NAME:VAR=VALUE[,VAR=VALUE…]" >&2; exit 2; }
	benv[${v%%:*}]=${v#*:}
done
ours() { # family-dir round pattern name
	local tmp=$1/hlog.tmp e=()
	[ -n "${benv[$4]}" ] && IFS=, read -ra e <<<"${benv[$4]}"
	rm -rf "$tmp"
	(cd "$(dirname "$bench")" && env "${e[@]}" timeout 120 "$bench" -test.run '^$' -test.bench "$3" -test.count 1 \
		-test.benchtime ${n}x -rdma.dev "$dev" -rdma.cpus 0,1 -rdma.signal-all -rdma.warmup 0 \
		-rdma.hlog "$tmp" > "$1/$4.$2.out" 2>&1) ||
		{ echo "families.sh: $1 round $2: $4 failed:" >&2; tail -20 "$1/$4.$2.out" >&2; exit 1; }
	local f=("$tmp"/cycles/*.hlog)
	[ ${#f[@]} = 1 ] && [ -f "${f[0]}" ] ||
		{ echo "families.sh: $1 round $2: $4: want one cycle histogram, got: ${f[*]}" >&2; tail -20 "$1/$4.$2.out" >&2; exit 1; }
	mv "${f[0]}" "$1/$4.$2.hlog"
	rm -rf "$tmp" "$1/$4.$2.out"
}
cping_op() { # family: the C-only control's -o, or nothing
	case $1 in read_lat) echo read ;; atomic_lat_fadd) echo fadd ;; atomic_lat_cas) echo cas ;; send_lat) echo send ;; esac
}
cping_takes() { # build op: whether the build runs that round trip
	[[ $2 != send || $(basename "$1") =~ ^cping(-ptloop|-pt2cq)?$ ]]
}
for r in $(seq 1 "$rounds"); do
	for fam in "${families[@]}"; do
		IFS='|' read -r name prog pattern <<<"$fam"
		[[ -z ${FAMILIES:-} || " $FAMILIES " == *" $name "* ]] || continue
		mkdir -p "$dir/$name"
		op=$(cping_op "$name")
		contestants=(perftest "${!benv[@]}")
		for c in "${cpings[@]}"; do
			[ -n "$op" ] && cping_takes "$c" "$op" && contestants+=("$c")
		done
		k=${#contestants[@]}
		for ((j = 0; j < k; j++)); do
			c=${contestants[(r - 1 + j) % k]}
			case $c in
			perftest) rb_perftest "$dir/$name/perftest.$r.txt" $prog ;;
			bench*) ours "$dir/$name" "$r" "$pattern" "$c" ;;
			*) timeout 120 "$c" -d "$dev" -i 1 -x "$gid" -s 8 -n $n -a 0 -b 1 -S -o "$op" > "$dir/$name/$(basename "$c").$r.txt" ||
				{ echo "families.sh: $name round $r: $c -o $op failed" >&2; exit 1; } ;;
			esac
		done
	done
done
