#!/usr/bin/env bash
# ci/calibrate.sh — runs perftest and the matching rdmabench benchmarks on
# the same device in one session and prints them side by side. Run it
# through the runner so both see the same device (one VM boot):
#   .cache/rxevm -- bash ci/calibrate.sh      (make calibrate does this)
# Needs .cache/bench.test (go test -c -o .cache/bench.test ./bench_test).
#
# Scenarios and how their definitions line up:
#   write_lat 8 B   perftest ib_write_lat t_typical (median of RTT/2, µs;
#                   samples are post-to-post deltas, two largest dropped)
#                   vs WriteLat/transport=RC/size=8/inline=false p50-ns
#                   (median of RTT/2 over every sample).
#   send_bw 4 KiB   perftest ib_send_bw "BW average" (MiB/s = 2^20 B/s,
#                   measured at the receiver, -Q 1: every send signaled)
#                   vs SendBW/transport=RC/size=4096/…/signal=1 MB/s
#                   (10^6 B/s, measured at the requester, first post to
#                   last completion); converted to MB/s for the ratio.
#   read_lat 8 B    ib_read_lat t_typical (full round trip) vs ReadLat p50-ns.
set -uo pipefail
dev=${RDMA_DEVICE:-rxe0}
iters=${ITERS:-5000}
out=$(mktemp -d)

# perftest NAME ARGS...: server and client on the same device; the client
# retries until the server listens (perftest itself does not retry).
perftest() {
	local name=$1; shift
	timeout 120 "$name" -d "$dev" -F "$@" >"$out/$name.server" 2>&1 &
	local srv=$! ok=0
	for _ in $(seq 1 30); do
		sleep 1
		if timeout 120 "$name" -d "$dev" -F "$@" 127.0.0.1 >"$out/$name.client" 2>&1; then ok=1; break; fi
		grep -q "Couldn't connect" "$out/$name.client" || break
	done
	wait $srv
	((ok)) || { echo "calibrate: $name failed:" >&2; cat "$out/$name.client" >&2; return 1; }
}

# row LABEL FILE: the first data row of a perftest report (a line that
# starts with the message size); columns vary by version and mode, so
# fields are picked by header name.
col() { # col FILE HEADER-REGEX: value of the column whose header matches
	# Header names may contain one space ("BW average[MiB/sec]", "99%
	# percentile[usec]"): a word without '[' that does not start with '#'
	# is joined to the next one.
	awk -v re="$2" '
		/^ *#bytes/ {
			n = 0
			for (i = 1; i <= NF; i++) {
				w = $i
				while (w !~ /\[/ && w !~ /^#/ && i < NF) { i++; w = w " " $i }
				h[++n] = w
			}
			hdr = 1; next
		}
		hdr && $1 ~ /^[0-9]+$/ { for (i = 1; i <= n; i++) if (h[i] ~ re) { print $i; exit } }
	' "$1"
}

perftest ib_write_lat -s 8 -n "$iters" || exit 1
perftest ib_read_lat -s 8 -n "$iters" || exit 1
perftest ib_send_bw -s 4096 -n "$iters" -Q 1 || exit 1

bench=$(cd bench_test && ../.cache/bench.test -test.run '^$' -test.count 3 -test.benchtime "${iters}x" \
	-test.bench 'WriteLat/transport=RC/size=8/inline=false$|ReadLat/transport=RC/size=8/mode=poll$|SendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false$' 2>&1)
echo "$bench" | grep -E '^Benchmark' >"$out/bench.txt"

# median of the runs' values of UNIT for benchmarks matching RE
bmed() {
	grep -E "$1" "$out/bench.txt" | awk -v u="$2" '{ for (i = 3; i < NF; i++) if ($(i+1) == u) print $i }' |
		sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2) }'
}

wl_pt=$(col "$out/ib_write_lat.client" 't_typical'); wl_rb=$(bmed WriteLat p50-ns)
rl_pt=$(col "$out/ib_read_lat.client" 't_typical'); rl_rb=$(bmed ReadLat p50-ns)
sb_pt=$(col "$out/ib_send_bw.server" '^BW average'); sb_rb=$(bmed SendBW MB/s)

printf '\n%-28s %16s %16s %8s\n' scenario perftest rdmabench ratio
line() { awk -v s="$1" -v a="$2" -v b="$3" -v u="$4" 'BEGIN { if (a == "" || b == "") { printf "%-28s %16s %16s %8s\n", s, a, b, "n/a"; exit }
	printf "%-28s %13.2f %s %13.2f %s %8.2f\n", s, a, u, b, u, b / a }'; }
line "write_lat 8 B p50 (RTT/2)" "$wl_pt" "$(awk -v v="$wl_rb" 'BEGIN{ if (v != "") print v/1000 }')" µs
line "read_lat 8 B p50 (RTT)" "$rl_pt" "$(awk -v v="$rl_rb" 'BEGIN{ if (v != "") print v/1000 }')" µs
line "send_bw 4 KiB (MB/s)" "$(awk -v v="$sb_pt" 'BEGIN{ if (v != "") print v*1.048576 }')" "$sb_rb" MB
echo
echo "perftest reports in $out; rdmabench rows:"
cat "$out/bench.txt"
