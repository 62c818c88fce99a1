package engine

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/prog"
	"github.com/rdmabench/rdmabench/rdmatest/internal/units"
	"github.com/rdmabench/rdmabench/verbs"
)

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

// Device tests of programs (the own-pattern API).

// commitSpecs are the commit pattern's programs: A WRITEs 4 KiB and SENDs
// an 8-byte commit, B answers each with an 8-byte SEND.
func commitSpecs() (a, b prog.Spec) {
	out := func(off, n int) prog.Mem { return prog.Mem{Off: off, Len: n} }
	b = prog.Spec{Recvs: true, RecvBytes: 8, Steps: []prog.Step{
		{Kind: verbs.StepAwait, Recvs: 1},
		{Kind: verbs.StepPost, WRs: []prog.WR{{Op: verbs.OpSend, Local: out(0, 8)}}, Every: 64},
	}}
	a = prog.Spec{Recvs: true, RecvBytes: 8, Steps: []prog.Step{
		{Kind: verbs.StepPost, WRs: []prog.WR{{Op: verbs.OpWrite, Local: out(8, 4096), Remote: prog.Remote{Off: 8}},
			{Op: verbs.OpSend, Local: out(0, 8), Flags: verbs.FlagSignaled}}},
		{Kind: verbs.StepAwait, Recvs: 1, Sends: 1},
	}}
	return a, b
}

// progRun runs side A's program a as a MeasureProgram benchmark on a
// fresh RC pair whose side B runs b (none when b has no steps), every
// wait bounded by timeout; it returns the result and why it failed (""
// if it did not).
func progRun(t *testing.T, d *Dev, a, b prog.Spec, timeout time.Duration) (testing.BenchmarkResult, string) {
	t.Helper()
	var failed []string
	res := testing.Benchmark(func(tb *testing.B) {
		notes.Store(tb, &failed)
		tb.Cleanup(func() { notes.Delete(tb) })
		p := NewPair(tb, d, PairConfig{SlotSize: 4096 + 8})
		p.Dev = &Dev{Device: d.Device, PortNum: d.PortNum, PortAttr: d.PortAttr, GIDEntry: d.GIDEntry, Opts: d.Opts, cpus: d.cpus}
		p.Dev.Opts.Timeout = timeout
		if len(b.Steps) > 0 {
			ServeProgram(tb, p, b)
		}
		MeasureProgram(tb, p, MeasureOpts{Rate: "commits/s", Warmup: 4}, a)
	})
	return res, strings.Join(failed, "; ")
}

func TestMeasureProgram(t *testing.T) {
	d := Device(t)
	a, b := commitSpecs()
	res, failed := progRun(t, d, a, b, d.Opts.Timeout)
	require.Empty(t, failed)
	require.Positive(t, res.N)
	for _, u := range []string{"p50-ns", "p99-ns", "max-ns", "commits/s", "cpu-ns/op"} {
		assert.Positive(t, res.Extra[u], u)
	}
	assert.LessOrEqual(t, res.Extra["p50-ns"], res.Extra["p99-ns"])
	assert.Zero(t, res.AllocsPerOp(), "nothing allocates in the timed region")
}

func TestMeasureProgramFails(t *testing.T) {
	d := Device(t)
	for _, tt := range []struct {
		name string
		edit func(a, b *prog.Spec)
		want []string
	}{
		{"a bad program of A, refused before it runs", func(a, _ *prog.Spec) {
			a.Steps = a.Steps[:1] // the commit's completion is never awaited
		}, []string{"rdmatest: side A, step 0 (post): never awaited"}},
		{"a bad program of B, refused before it runs", func(_, b *prog.Spec) {
			b.Steps = append(b.Steps, prog.Step{Kind: verbs.StepKind(42)})
		}, []string{"rdmatest: side B, step 2 (step-kind(42)): unknown step kind 42"}},
		{"a memory range out of the slot", func(a, _ *prog.Spec) {
			a.Steps[0].WRs[0].Local.Len = 8192
		}, []string{"rdmatest: side A, step 0 (post): WR 0: bytes 8..8200 of QP 0's out slot: out of range"}},
		{"a check of A that fails", func(a, _ *prog.Spec) {
			a.Steps = append(a.Steps, prog.Step{Kind: verbs.StepExpect, At: prog.Mem{In: true, Off: 0, Len: 8}, Value: 1})
		}, []string{"rdmatest: side A, step 2 (expect), warm-up: program loop: iteration", "read 0, expected 1"}},
		{"a check of B that fails, named with A's stall", func(_, b *prog.Spec) {
			b.Steps = append([]prog.Step{b.Steps[0], {Kind: verbs.StepExpect, At: prog.Mem{In: true, Len: 1}, Value: 9}}, b.Steps[1:]...)
		}, []string{"rdmatest: side A, step 1 (await), warm-up: ", "\nrdmatest: side B, step 1 (expect): program loop: ", "read 0, expected 9"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := commitSpecs()
			tt.edit(&a, &b)
			_, failed := progRun(t, d, a, b, 2*time.Second)
			for _, w := range tt.want {
				assert.Contains(t, failed, w)
			}
			assert.NotContains(t, failed, "verbs: program", "the step named first, one prefix")
		})
	}
}

// A ProgramError names the side and the step first, with one prefix,
// one line per joined error, and errors.As and errors.Is reach the
// step, the loop's error and the sentinels behind it.
func TestProgramError(t *testing.T) {
	check := &verbs.LoopError{Loop: "program", Status: verbs.LoopCheck, Want: 1, Got: 0, At: 3}
	err := error(&ProgramError{Side: "A", Phase: "warm-up", Err: &verbs.StepError{Step: 2, Kind: verbs.StepExpect, Err: check}})
	assert.Equal(t, "rdmatest: side A, step 2 (expect), warm-up: program loop: iteration 3 (from 0, warm-up included) read 0, expected 1", err.Error())
	var se *verbs.StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 2, se.Step)
	var le *verbs.LoopError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, verbs.LoopCheck, le.Status)

	never := &verbs.StepError{Step: 0, Kind: verbs.StepPost, Err: fmt.Errorf("%w: add an Await", verbs.ErrNeverAwaited)}
	whole := &verbs.StepError{Step: -1, Err: errors.New("70 steps: a program has 1 to 64")}
	err = &ProgramError{Side: "B", Err: errors.Join(never, whole)}
	assert.Equal(t, "rdmatest: side B, step 0 (post): never awaited: add an Await\n"+
		"rdmatest: side B's program: 70 steps: a program has 1 to 64", err.Error())
	assert.ErrorIs(t, err, verbs.ErrNeverAwaited)
	require.ErrorAs(t, err, &se)

	// B's error as its responder returns it: the step is found behind
	// the passive side's wrapping.
	err = sideB(fmt.Errorf("rdmatest: passive side: %w", &verbs.StepError{Step: 1, Kind: verbs.StepExpect, Err: check}), nil)
	assert.Equal(t, "rdmatest: side B, step 1 (expect): program loop: iteration 3 (from 0, warm-up included) read 0, expected 1", err.Error())
	assert.ErrorAs(t, err, &le)

	// With the steps' positions, the step's file:line follows its kind.
	err = sideB(&verbs.StepError{Step: 1, Kind: verbs.StepExpect, Err: check}, []string{"b_test.go:10", "b_test.go:11"})
	assert.Equal(t, "rdmatest: side B, step 1 (expect, b_test.go:11): program loop: iteration 3 (from 0, warm-up included) read 0, expected 1", err.Error())
	err = &ProgramError{Side: "A", Err: &verbs.StepError{Step: 5, Kind: verbs.StepPost, Err: errors.New("x")}, Pos: []string{"a.go:1"}}
	assert.Equal(t, "rdmatest: side A, step 5 (post): x", err.Error(), "a step past Pos: no position")
}
