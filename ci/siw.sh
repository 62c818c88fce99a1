#!/usr/bin/env bash
# ci/siw.sh — Soft-iWARP (siw) for the qemu guest (docs/siw.md, issue #30).
#
#   bash ci/siw.sh build [RELEASE]
#       Prints the path of a siw.ko for the guest kernel RELEASE (default:
#       the kernel rxevm boots, the newest /boot/vmlinuz-* whose modules
#       include rdma_rxe), building it when the cache has none. Debian's
#       kernel is built without siw (# CONFIG_RDMA_SIW is not set): the
#       build takes drivers/infiniband/sw/siw from Debian's linux-source
#       package of the kernel's exact version (apt-get download, ~140 MB,
#       not installed) and compiles it against linux-headers-RELEASE
#       (make deps installs linux-headers-<arch>). The module is cached as
#       .cache/siw/RELEASE/siw.ko beside a stamp with the kernel package's
#       version, so a second run costs nothing and a new kernel of the
#       same release rebuilds. A kernel whose module tree has a plain
#       siw.ko needs no build: its path is printed. Progress goes to
#       stderr, the path alone to stdout.
#
#   bash ci/siw.sh pass
#       The siw device pass, run in the guest:
#         .cache/rxevm -timeout 15m -siw "$(bash ci/siw.sh build)" -- bash ci/siw.sh pass
#       It checks that RDMA_DEVICE (siw0) is an iWARP device with an
#       ACTIVE port, prints what siw reports (ibv_devinfo -v), runs rping
#       over it (siw moving data without rdmabench's code), then the
#       whole benchmark suite (-short, plus the perftest families' UD and UC points) and
#       verbs' rdma_cm device tests, from the test binaries
#       .cache/testbin/{bench_test,verbs}.test that make test's device
#       step builds (or those in SIW_TESTBIN). Every skip is checked
#       against ci/skips.allow's "siw" entries. Logs:
#       .cache/siw-bench.log, .cache/siw-verbs.log.
#
#   RXEVM=.cache/rxevm bash ci/siw.sh run
#       Both, as make test runs them: build, then the pass in a guest
#       booted with rxevm -siw (deadline SIW_TIMEOUT, default 15m). Run
#       it after make test's device step, which builds the test binaries.
#
# Every step has a deadline (timeout); any failure exits non-zero with a
# line that names it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

die() {
	echo "ci/siw.sh: $*" >&2
	exit 1
}
say() { echo "ci/siw.sh: $*" >&2; }

# guest_release: the kernel rxevm boots (loopback.FindKernel's rule).
guest_release() {
	local img rel
	for img in $(ls /boot/vmlinuz-* 2>/dev/null | sort -rV); do
		rel=${img#/boot/vmlinuz-}
		if [[ -n $(find "/lib/modules/$rel" -name 'rdma_rxe.ko*' -print -quit 2>/dev/null) ]]; then
			echo "$rel"
			return 0
		fi
	done
	die "no kernel in /boot ships rdma_rxe (make deps installs linux-image-<arch>)"
}

# pkg_version PKG: the installed version of PKG, or nothing.
pkg_version() {
	dpkg-query -W -f '${db:Status-Status} ${Version}\n' "$1" 2>/dev/null | awk '$1 == "installed" { print $2 }'
}

build() {
	local rel=${1:-$(guest_release)}
	[[ $rel =~ ^[0-9]+\.[0-9]+[A-Za-z0-9.+_-]*$ ]] || die "kernel release '$rel' is not one (e.g. 6.1.0-57-amd64)"
	local tree=/lib/modules/$rel
	[[ -d $tree ]] || die "no module tree $tree: kernel $rel is not installed"
	# A kernel that ships siw needs no build (busybox insmod needs a plain .ko).
	local shipped
	shipped=$(find "$tree" -name siw.ko -print -quit 2>/dev/null)
	if [[ -n $shipped ]]; then
		say "kernel $rel ships siw: $shipped"
		echo "$shipped"
		return 0
	fi
	command -v dpkg-query >/dev/null || die "kernel $rel ships no siw.ko and this is no Debian system (dpkg-query missing): build siw.ko for it by hand (docs/siw.md)"
	local image
	image=$(dpkg-query -S "/boot/vmlinuz-$rel" 2>/dev/null | cut -d: -f1) || true
	[[ -n $image ]] || die "no package owns /boot/vmlinuz-$rel: cannot tell which linux-source matches it"
	local version
	version=$(pkg_version "$image")
	[[ -n $version ]] || die "$image (the package of /boot/vmlinuz-$rel) is not installed"
	local dir=$root/.cache/siw/$rel ko stamp
	ko=$dir/siw.ko
	stamp="$image $version"
	if [[ -f $ko && -f $dir/stamp && $(cat "$dir/stamp") == "$stamp" ]]; then
		say "cached: $ko ($stamp)"
		echo "$ko"
		return 0
	fi
	mkdir -p "$dir"
	exec 9>"$dir/lock"
	timeout 900 flock 9 || die "another ci/siw.sh build of $rel held $dir/lock for 15 minutes"
	if [[ -f $ko && -f $dir/stamp && $(cat "$dir/stamp") == "$stamp" ]]; then
		say "cached (built meanwhile): $ko ($stamp)"
		echo "$ko"
		return 0
	fi
	local headers=/usr/src/linux-headers-$rel hversion
	hversion=$(pkg_version "linux-headers-$rel")
	[[ -f $headers/Makefile && -n $hversion ]] ||
		die "no headers for kernel $rel in $headers: run make deps (it installs linux-headers-<arch>), or apt-get install linux-headers-$rel"
	[[ $hversion == "$version" ]] ||
		die "linux-headers-$rel is $hversion but $image is $version: a module built against them may not load (apt-get install $image linux-headers-$rel to make them one version)"
	# linux-source-6.1 for 6.1.0-57-amd64
	local series
	series=$(cut -d. -f1-2 <<<"$rel")
	local src=linux-source-$series
	local t0=$SECONDS
	rm -rf "$dir/work"
	mkdir -p "$dir/work"
	say "downloading $src=$version (apt-get download)"
	(cd "$dir/work" && timeout 600 apt-get download -q -o APT::Sandbox::User=root "$src=$version" >&2) ||
		die "apt-get download $src=$version failed: the apt sources have no source package of the guest kernel's exact version (run apt-get update; if it left the archive, upgrade the kernel: make deps after apt-get install linux-image-<arch> linux-headers-<arch>)"
	local deb
	deb=$(ls "$dir"/work/"${src}"_*.deb)
	say "downloaded $(du -h "$deb" | cut -f1) in $((SECONDS - t0)) s; extracting drivers/infiniband/sw/siw"
	local t1=$SECONDS
	# The .deb holds /usr/src/linux-source-X.Y.tar.xz; only siw's directory is unpacked.
	timeout 600 bash -o pipefail -c 'dpkg-deb --fsys-tarfile "$1" | tar -xOf - "./usr/src/$2.tar.xz" | tar -xJf - -C "$3" --wildcards "$2/drivers/infiniband/sw/siw/*"' \
		_ "$deb" "$src" "$dir/work" || die "extracting drivers/infiniband/sw/siw from $deb failed"
	rm -f "$deb"
	local mdir=$dir/work/$src/drivers/infiniband/sw/siw
	[[ -f $mdir/Makefile && -f $mdir/siw_main.c ]] || die "$deb has no drivers/infiniband/sw/siw"
	say "extracted in $((SECONDS - t1)) s; building against $headers"
	local t2=$SECONDS
	timeout 900 make -s -C "$headers" M="$mdir" CONFIG_RDMA_SIW=m modules >"$dir/build.log" 2>&1 ||
		{ tail -n 30 "$dir/build.log" >&2; die "building siw.ko failed (log: $dir/build.log)"; }
	local magic
	magic=$(modinfo -F vermagic "$mdir/siw.ko" | awk '{ print $1 }')
	[[ $magic == "$rel" ]] || die "the built siw.ko has vermagic '$magic', not $rel"
	cp "$mdir/siw.ko" "$ko.new"
	mv "$ko.new" "$ko"
	echo "$stamp" >"$dir/stamp"
	rm -rf "$dir/work"
	say "built $ko in $((SECONDS - t2)) s ($((SECONDS - t0)) s in all; vermagic $(modinfo -F vermagic "$ko"))"
	echo "$ko"
}

pass() {
	local dev=${RDMA_DEVICE:-}
	[[ -n $dev ]] || die "pass: RDMA_DEVICE is not set: run it as .cache/rxevm -siw \"\$(bash ci/siw.sh build)\" -- bash ci/siw.sh pass"
	local sys=/sys/class/infiniband/$dev
	[[ -d $sys ]] || die "pass: no device $dev (devices: $(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' '))"
	local node state
	node=$(cat "$sys/node_type")
	state=$(cat "$sys/ports/1/state")
	echo "=== siw: $dev: node_type $node, port 1 $state, kernel $(uname -r)"
	[[ $node == *RNIC* ]] || die "pass: $dev is no iWARP device (node_type '$node', want RNIC)"
	[[ $state == *ACTIVE* ]] || die "pass: $dev port 1 is not ACTIVE ($state)"
	local info
	info=$(timeout 30 ibv_devinfo -d "$dev" -v) || die "pass: ibv_devinfo -d $dev -v failed"
	echo "$info" | grep -E '^\s+(transport|max_qp|max_qp_wr|max_sge|max_sge_rd|max_qp_rd_atom|max_qp_init_rd_atom|atomic_cap|max_srq|max_srq_wr|max_ah|max_mcast_grp|max_mr_size|device_cap_flags|state|active_mtu|link_layer|max_msg_sz):'
	grep -Eq '^\s+transport:\s+iWARP' <<<"$info" || die "pass: ibv_devinfo does not report transport iWARP for $dev"

	local addr=${SIW_ADDR:-192.0.2.1}
	echo "=== siw: rping over $dev ($addr), 10 ping-pongs with the payload checked (-V), no rdmabench code"
	command -v rping >/dev/null || die "pass: rping not found (make deps installs rdmacm-utils)"
	local slog
	slog=$(mktemp)
	timeout 60 rping -s -a "$addr" -V -C 10 >"$slog" 2>&1 &
	local spid=$!
	local rc=0 out try
	# The client tries again while the server, slow to start under TCG,
	# may not listen yet (a refused connect leaves the server waiting).
	for try in 1 2 3 4 5; do
		sleep 1
		rc=0
		out=$(timeout 60 rping -c -a "$addr" -V -C 10 2>&1) || rc=$?
		((rc != 0)) && kill -0 "$spid" 2>/dev/null || break
		echo "rping client attempt $try failed (exit $rc), the server still waits: again"
	done
	local src=0
	wait "$spid" || src=$?
	echo "$out" | tail -n 3
	if ((rc != 0 || src != 0)); then
		cat "$slog"
		die "pass: rping over $dev failed (client exit $rc, server exit $src)"
	fi
	rm -f "$slog"
	echo "ok: rping client and server exited 0"

	local bin=${SIW_TESTBIN:-$root/.cache/testbin}
	local status=0
	# Every benchmark (-short) on siw0, connected through rdma_cm (the
	# default on an iWARP device, -rdma.cm=auto: nothing forces it
	# here, and the configuration line must say so), in -short form,
	# then one UD and one UC point each of SendLat, SendBW and WriteLat:
	# siw has RC only, and what it lacks must skip with the capability
	# read from the device, each skip checked against ci/skips.allow's
	# "siw" entries. A result line of 0 iterations (NaN ns/op) is a
	# benchmark that neither ran nor printed a SKIP line that
	# ci/skips.sh could check: it fails the pass.
	local b=$bin/bench_test.test
	[[ -x $b ]] || die "pass: no test binary $b (go test -c -o $b ./bench_test)"
	local blog=$root/.cache/siw-bench.log
	: >"$blog"
	echo "=== siw benchmarks: every benchmark (-short) over rdma_cm on $dev, then the perftest families' UD and UC points"
	bash "$root/ci/hugepages.sh" # RegMR's page=huge points run instead of skipping
	local bench short rc=0
	for bench in . \
		'^BenchmarkSendLat$/^transport=(UD|UC)$/^size=8$/^inline=false$/^mode=poll$' \
		'^BenchmarkSendBW$/^transport=(UD|UC)$/^size=64$/' \
		'^BenchmarkWriteLat$/^transport=UC$/^size=8$/'; do
		short=-test.short
		[[ $bench == *transport=* ]] && short=
		(cd "$root/bench_test" && RDMA_REQUIRE=1 "$b" -test.run '^$' -test.bench "$bench" $short -test.benchtime 100x \
			-test.v -test.timeout 10m -rdma.timeout 10s 2>&1) >>"$blog" || rc=1
	done
	grep -vE '^(Unit |Benchmark[^[:space:]]*$)' "$blog" | grep -v 'no port counters' || true
	if ! grep -q '^rdma-connect: cm$' "$blog"; then
		echo "FAIL: the benchmarks on $dev printed no 'rdma-connect: cm' line: -rdma.cm=auto did not choose rdma_cm on an iWARP device"
		rc=1
	fi
	local nan
	nan=$(grep -E '^Benchmark[^[:space:]]+[[:space:]]+0[[:space:]]+NaN ns/op' "$blog" || true)
	if [[ -n $nan ]]; then
		echo "FAIL: benchmarks that neither ran nor skipped (0 iterations, NaN; a skip after the probe call prints no SKIP line):"
		grep -B1 -E '^Benchmark[^[:space:]]+[[:space:]]+0[[:space:]]+NaN ns/op' "$blog" | sed 's/^/    | /'
		rc=1
	fi
	bash "$root/ci/skips.sh" "$blog" siw "the siw benchmarks" || rc=1
	if ((rc != 0)); then
		echo "FAIL: siw benchmarks (all of the log in $blog)"
		status=1
	else
		echo "ok: siw benchmarks"
	fi

	# verbs' rdma_cm device tests on siw0.
	local v=$bin/verbs.test
	[[ -x $v ]] || die "pass: no test binary $v (go test -c -o $v ./verbs)"
	local vlog=$root/.cache/siw-verbs.log
	echo "=== siw device tests: verbs' rdma_cm tests (-test.run '^TestCM') on $dev"
	rc=0
	(cd "$root/verbs" && RDMA_REQUIRE=1 "$v" -test.count 1 -test.timeout 5m -test.v -test.run '^TestCM' 2>&1) >"$vlog" || rc=$?
	grep -E '^(=== RUN|--- |\s+--- |PASS|FAIL|ok|panic|\s+\S+_test.go)' "$vlog" || true
	bash "$root/ci/skips.sh" "$vlog" siw "verbs' rdma_cm tests on siw" || { ((rc != 0)) || rc=1; }
	if ((rc != 0)); then
		echo "=== the whole output of the failing tests (all of the log in $vlog)"
		bash "$root/ci/failed.sh" "$vlog"
		echo "FAIL: verbs' rdma_cm tests on $dev (exit $rc)"
		status=1
	else
		echo "ok: verbs' rdma_cm tests on $dev"
	fi
	return $status
}

# run: build (or find) siw.ko, then the pass in a siw guest.
run() {
	local rxevm=${RXEVM:-$root/.cache/rxevm} ko
	[[ -x $rxevm ]] || die "run: no rxevm at $rxevm (go build -o .cache/rxevm ./loopback/cmd/rxevm, or set RXEVM)"
	ko=$(build)
	echo "=== siw: the pass in a guest with siw0 ($ko)"
	RDMA_REQUIRE=1 "$rxevm" -timeout "${SIW_TIMEOUT:-15m}" -siw "$ko" -- bash ci/siw.sh pass
}

case ${1:-} in
build)
	shift
	build "$@"
	;;
pass) pass ;;
run) run ;;
*)
	echo "usage: ci/siw.sh build [RELEASE] | pass | run" >&2
	exit 2
	;;
esac
