package engine

import (
	"flag"
	"strconv"
	"strings"
	"testing"
)

// The probe call of a fixed count.
//
// testing always calls a benchmark function with b.N = 1 first. With
// -test.benchtime Nx and N > 1 it then calls it once more with b.N = N
// and throws the first call's result away (testing's launch: "We
// already ran a single iteration in run1"). Latency, Stream and EchoRPC
// return from that first call at once, after the turn (takeTurn) and
// before any setup, so that a run at a fixed count costs one setup of
// its QPs instead of two — but after every check that can skip it:
// testing prints a benchmark's SKIP line only for that first call, so a
// skip in the second shows as nothing but a 0-iteration "NaN ns/op"
// result line (ci/skips.sh fails a pass on such a line). make compare runs every benchmark at one fixed
// count on both sides (ci/interleave.sh), so this is most of what a run
// costs besides the timed loop itself. ControlPath times with b.Loop,
// which testing calls once, and Measure's pattern is set up by its
// caller before it, so neither needs this.

// probeCall reports whether this call of b is the b.N = 1 call whose
// result testing discards: b.N is 1 and -test.benchtime is a count above
// 1.
func probeCall(b *testing.B) bool {
	return b.N == 1 && fixedCount(flag.Lookup("test.benchtime")) > 1
}

// fixedCount is the N of a -test.benchtime flag set to Nx, or 0 when the
// flag is missing or a duration.
func fixedCount(f *flag.Flag) int {
	if f == nil {
		return 0
	}
	s, ok := strings.CutSuffix(f.Value.String(), "x")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
