package engine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/units"
	"github.com/rdmabench/rdmabench/verbs"
)

func TestSlotBounds(t *testing.T) {
	s := &Side{QPs: make([]*verbs.QP, 2), slot: 128}
	for _, tt := range []struct {
		qp, off, n int
		want       string
	}{
		{2, 0, 8, "rdmatest: OutAt: QP 2 out of range: the side has 2 QPs"},
		{-1, 0, 8, "rdmatest: OutAt: QP -1 out of range: the side has 2 QPs"},
		{0, 64, 65, "rdmatest: OutAt: bytes 64..129 out of range: a slot holds 128 bytes (PairConfig.SlotSize, rounded up to 64)"},
		{0, -1, 8, "rdmatest: OutAt: bytes -1..7 out of range: a slot holds 128 bytes (PairConfig.SlotSize, rounded up to 64)"},
	} {
		assert.PanicsWithValue(t, tt.want, func() { s.OutAt(tt.qp, tt.off, tt.n) })
		assert.PanicsWithValue(t, strings.Replace(tt.want, "OutAt", "InAt", 1), func() { s.InAt(tt.qp, tt.off, tt.n) })
	}
}

// A skipped run (on the host: no device, none required — the host's pass
// of Example_commit) makes Benchmark write why and return a zero result;
// a failed one makes it panic with the reasons rdmatest kept.
func TestBenchmarkSkipsAndFails(t *testing.T) {
	var buf bytes.Buffer
	saved := BenchmarkOutput
	BenchmarkOutput = &buf
	t.Cleanup(func() { BenchmarkOutput = saved })
	res := Benchmark("Skip", func(b *testing.B) { skip(b, "no device here") })
	assert.Zero(t, res.N)
	assert.Equal(t, "rdmatest: BenchmarkSkip skipped: no device here\n", buf.String())
	assert.PanicsWithValue(t, "rdmatest: BenchmarkFail: broken; twice", func() {
		Benchmark("Fail", func(b *testing.B) { keepNote(b, []any{"broken"}); fatal(b, "twice") })
	})
	assert.Panics(t, func() {
		Benchmark("FailInCleanup", func(b *testing.B) {
			b.Cleanup(func() { fatal(b, "a leak found at the end") })
		})
	}, "a failure in a cleanup (the leak check) fails the run")
	assert.Panics(t, func() { Benchmark("BenchmarkX-2", func(b *testing.B) {}) }, "a name with the prefix and a -N suffix")

	// Units registered by later runs get their Unit lines with them
	// (acks/s and naks/s are this test's own: they stay registered for
	// the rest of the binary, as Measure's commits/s does).
	printedMu.Lock()
	savedPrinted := printedUnits
	printedMu.Unlock()
	t.Cleanup(func() {
		printedMu.Lock()
		printedUnits = savedPrinted
		printedMu.Unlock()
	})
	buf.Reset()
	for _, u := range []string{"acks/s", "naks/s"} {
		Benchmark("Units/unit="+strings.TrimSuffix(u, "/s"), func(b *testing.B) {
			require.NoError(t, units.Register(u, "higher"))
			b.ReportMetric(1, u)
		})
		assert.Equal(t, 1, strings.Count(buf.String(), "Unit "+u+" better=higher\n"), "%s's Unit line, once:\n%s", u, buf.String())
	}
	assert.Contains(t, buf.String(), "BenchmarkUnits/unit=naks-")
}

// Device tests of the own-pattern API.

// ownRun runs op as a Measure benchmark on a fresh RC pair whose side B
// echoes 8-byte SENDs, and returns the result and why it failed ("" if
// it did not).
func ownRun(t *testing.T, d *Dev, op func(p *Pair) func() error) (testing.BenchmarkResult, string) {
	t.Helper()
	var failed []string
	res := testing.Benchmark(func(b *testing.B) {
		notes.Store(b, &failed)
		b.Cleanup(func() { notes.Delete(b) })
		p := NewPair(b, d, PairConfig{SlotSize: 4096 + 8})
		Serve(b, p, EchoSends(8))
		Measure(b, p, MeasureOpts{Rate: "commits/s", Warmup: 4}, op(p))
	})
	return res, strings.Join(failed, "; ")
}

func commitOp(p *Pair) func() error {
	write := p.A.Peer[0].Write(p.A.OutAt(0, 0, 4096))
	commit := p.A.Peer[0].Send(p.A.OutAt(0, 4096, 8)).Signaled()
	return func() error {
		if err := p.A.Post(0, write, commit); err != nil {
			return err
		}
		return p.A.Await(Recvs(1), Sends(1))
	}
}

func TestMeasureOwnPattern(t *testing.T) {
	d := Device(t)
	res, failed := ownRun(t, d, commitOp)
	require.Empty(t, failed)
	require.Positive(t, res.N)
	for _, u := range []string{"p50-ns", "p99-ns", "max-ns", "commits/s", "cpu-ns/op"} {
		assert.Positive(t, res.Extra[u], u)
	}
	assert.LessOrEqual(t, res.Extra["p50-ns"], res.Extra["p99-ns"])
	assert.Zero(t, res.AllocsPerOp(), "Post and Await allocate nothing in the timed region")
}

func TestMeasureOwnPatternFails(t *testing.T) {
	d := Device(t)
	for _, tt := range []struct {
		name string
		op   func(p *Pair) func() error
		want string
	}{
		{"an operation's error", func(p *Pair) func() error {
			n := 0
			return func() error {
				if n++; n == 10 {
					return verbs.ErrClosed
				}
				return commitOp(p)()
			}
		}, "operation 6 of"}, // 4 warm-up calls, then the 6th timed: the 10th call
		{"an overfilled send queue", func(p *Pair) func() error {
			w := p.A.Peer[0].Write(p.A.OutAt(0, 0, 64)) // never signaled
			return func() error { return p.A.Post(0, w) }
		}, "send queue of QP"},
		{"a message the passive side never received", func(p *Pair) func() error {
			return func() error {
				p.A.ownState().sends++ // claims one more SEND than it posts
				return commitOp(p)()
			}
		}, "that consume a receive, but the passive side received"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, failed := ownRun(t, d, tt.op)
			assert.Contains(t, failed, tt.want)
		})
	}
}
