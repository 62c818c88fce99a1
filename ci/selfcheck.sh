#!/usr/bin/env bash
# ci/selfcheck.sh — the regression gate caught in the act, end to end, as
# make test runs it: make compare's own machinery (ci/compare.sh: two
# builds of HEAD, each benchmark run alone, the two builds' processes
# taking turns run by run, ABBA, the gate with -paired) on two benchmarks of the default matrix, NEW built
# with the self-check slowdown (tag rdmaslow) of one of them. The
# gate must exit 1, name the slowed benchmark and not the other.
#
# This checks the machinery end to end, not the gate's power (that was
# measured on the whole matrix: docs/compare.md, items 9 and 10): the
# slowdown is 50% (SLOW takes any percentage), because in the guest a
# benchmark's runs can spread 2x, and the first CI run of this script
# with a 25% slowdown of SendBW RC 64 B, one process a run, missed it
# (p = 0.022 at 12 runs a side, against a level of 0.005). The slowed benchmark is the
# steadier 4 KiB one; -alpha 0.001 keeps the other benchmark's chance of
# being flagged small; -detect off: two benchmarks at 12 runs are not the
# default matrix.
set -euo pipefail
cd "$(dirname "$0")/.."
slowed='SendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=false'
other='SendBW/transport=RC/size=64/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=false'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
BENCH='^BenchmarkSendBW$/^transport=RC$/^size=(64|4096)$/^qd=128$/^batch=1$/^signal=1$/^mode=poll$/^srq=false$/^bidir=false$' \
	COUNT=12 BLOCK=1 BENCHTIME=0.1s SLOW="50%:^Benchmark$slowed\$" \
	GATEFLAGS='-alpha 0.001 -detect off' RUNNER="${RUNNER-.cache/rxevm -timeout 10m --}" \
	bash ci/compare.sh HEAD HEAD >"$out" || rc=$?
grep -E '^(REGRESSION|result|decidable|  SendBW)' "$out" || true
fail() { echo "selfcheck: $*; the gate's report:" >&2; cat "$out" >&2; exit 1; }
((rc == 1)) || fail "the gate exited $rc, want 1 (a regression)"
grep -q "^REGRESSION: $slowed-[0-9]* " "$out" || fail "the slowed benchmark $slowed is not named"
! grep -q "^REGRESSION: $other-[0-9]* " "$out" || fail "$other is named although it was not slowed"
echo "selfcheck: the gate named the benchmark slowed by 50% ($slowed), and only it"
