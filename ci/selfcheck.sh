#!/usr/bin/env bash
# ci/selfcheck.sh — the regression gate caught in the act, end to end, as
# make test runs it: make compare's own machinery (ci/compare.sh: two
# builds of HEAD, each benchmark run alone, the two builds' processes
# taking turns run by run, ABBA, the gate with -paired) on two benchmarks of the default matrix, NEW built
# with the self-check slowdown (tag rdmaslow) of one of them. The
# gate must exit 1, name the slowed benchmark and not the other.
#
# This checks the machinery end to end, not the gate's power (that was
# measured on the whole matrix: docs/compare.md, items 9-14), so it must
# not fail by chance: the slowed benchmark's loop takes 3x as long
# (SLOW=200%), beyond the up to 2x its runs spread in the guest, so
# OLD's and NEW's runs barely overlap and the test's p is near its
# smallest, below the level of 5e-4 whichever test the gate picks: 16
# runs a side, because where the adjacent runs are correlated the gate
# tests the pairs (signed-rank, smallest p 2^-16 x 7 units = 1.1e-4),
# and at 12 runs that could not go below 1.7e-3 (a CI run at 639c3d0:
# rho 0.67, "too few runs", exit 3); the U test's smallest is 1.7e-9. 50%
# was not enough: a CI run at d46ae06 saw msgs/s -42.7% with the
# medians' 95% intervals at +-32-37%, p = 0.001 (two-sided), and the
# gate passed. 25% (one process a
# run) was missed before that. The slowed benchmark is the steadier
# 4 KiB one; -alpha 0.001 keeps the other benchmark's chance of being
# flagged small; -detect off: two benchmarks at 16 runs are not the
# default matrix.
set -euo pipefail
cd "$(dirname "$0")/.."
slowed='SendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=false'
other='SendBW/transport=RC/size=64/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=false'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
BENCH='^BenchmarkSendBW$/^transport=RC$/^size=(64|4096)$/^qd=128$/^batch=1$/^signal=1$/^mode=poll$/^srq=false$/^bidir=false$' \
	COUNT=16 BLOCK=1 BENCHTIME=0.1s SLOW="200%:^Benchmark$slowed\$" \
	GATEFLAGS='-alpha 0.001 -detect off' RUNNER="${RUNNER-.cache/rxevm -timeout 10m --}" \
	bash ci/compare.sh HEAD HEAD >"$out" || rc=$?
grep -E '^(REGRESSION|result|decidable|  SendBW)' "$out" || true
fail() { echo "selfcheck: $*; the gate's report:" >&2; cat "$out" >&2; exit 1; }
((rc == 1)) || fail "the gate exited $rc, want 1 (a regression)"
grep -q "^REGRESSION: $slowed-[0-9]* " "$out" || fail "the slowed benchmark $slowed is not named"
! grep -q "^REGRESSION: $other-[0-9]* " "$out" || fail "$other is named although it was not slowed"
echo "selfcheck: the gate named the benchmark slowed 3x (SLOW=200%: $slowed), and only it"
