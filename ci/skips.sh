#!/usr/bin/env bash
# ci/skips.sh LOG PASS WHAT — the skips of one pass of make test: how many
# tests and benchmarks LOG (go test -v output) skipped, and which ("skips
# in WHAT: N", then one line per skip), each checked against the pass's
# entries in ci/skips.allow (PASS is its key there). A skip no entry
# allows is unexpected: the script prints it with the lines the log has
# about it and exits 1. Every pass that runs with RDMA_REQUIRE=1 calls
# this, so a regression that turns a run into a skip fails CI. (The host
# pass runs without a device by design, RDMA_REQUIRE=0: its device tests
# skip there and run in the device pass.)
#
# Benchmarks print their skips only under -test.v, so the passes that
# call this run with it, and testing prints a benchmark's SKIP line only
# for its first (b.N = 1) call: a skip in a later call leaves nothing but
# a result line of 0 iterations and NaN ns/op, which counts here as a
# skip of that benchmark too (rdmatest skips before its probe call, so
# such a line means a skip or failure in the measured call). SKIPS_ALLOW
# overrides the list's path (tests).
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: ci/skips.sh LOG PASS WHAT" >&2; exit 2; }
log=$1 pass=$2 what=$3
allow=${SKIPS_ALLOW:-$(dirname "$0")/skips.allow}
[[ -r $log ]] || { echo "ci/skips.sh: cannot read $log" >&2; exit 2; }
[[ -r $allow ]] || { echo "ci/skips.sh: cannot read the allowlist $allow" >&2; exit 2; }
# No process substitution: the qemu guest's initramfs has no /dev/fd.
names=$(sed -nE 's/^[[:space:]]*--- SKIP: ([^ ]+).*/\1/p' "$log")
# 0-iteration result lines (name without its -GOMAXPROCS suffix).
hidden=$(awk '$1 ~ /^Benchmark/ && $2 == "0" && $3 == "NaN" && $4 == "ns/op" { n = $1; sub(/-[0-9]+$/, "", n); print n }' "$log")
if [[ -n $hidden ]]; then
	names=$(printf '%s\n%s' "$names" "$hidden" | sed '/^$/d')
fi
entries=$(grep -vE '^[[:space:]]*(#|$)' "$allow" || true)
n=0 bad=0
[[ -z $names ]] || n=$(wc -l <<<"$names")
echo "skips in $what: $n"
while IFS= read -r name; do
	[[ -n $name ]] || continue
	why=
	while IFS=$'\t' read -r p re reason; do
		[[ -n $p ]] || continue
		if [[ -z $re || -z $reason ]]; then
			echo "ci/skips.sh: $allow: an entry needs three tab-separated fields (PASS, NAME, WHY): '$p'" >&2
			exit 2
		fi
		if [[ $p == "$pass" && $name =~ ^($re)$ ]]; then
			why=$reason
			break
		fi
	done <<<"$entries"
	if [[ -n $why ]]; then
		echo "  skipped: $name (allowed: $why)"
	else
		echo "  UNEXPECTED skip: $name"
		# What the log says around it (a test logs its reason before its
		# SKIP line, a benchmark after it).
		awk -v name="$name" '{ line[NR] = $0 }
			$1 == "---" && $2 == "SKIP:" && $3 == name { hit[NR] = 1 }
			($1 == name || index($1, name "-") == 1) && $2 == "0" && $3 == "NaN" { hit[NR] = 1 }
			END { for (i = 1; i <= NR; i++) for (j = i - 2; j <= i + 2; j++) if (j in hit) { print "    | " line[i]; break } }' "$log"
		bad=$((bad + 1))
	fi
done <<<"$names"
if ((bad > 0)); then
	echo "FAIL: $bad unexpected skips in $what (none of ci/skips.allow's $pass entries allows them)"
	exit 1
fi
