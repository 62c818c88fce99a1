package engine

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/cpus"
	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/verbs"
)

// histGeometry is the C loops' view of every recorder's geometry.
var histGeometry = func() verbs.HistGeometry {
	g, err := verbs.NewHistGeometry(hist.Lowest, hist.Highest, hist.SigFigs)
	if err != nil {
		panic(err)
	}
	return g
}()

// importLoop adds the samples the C loop l recorded to r: its counts
// array, laid out as hdrhistogram-go's for the same geometry, is
// imported and merged (outside the timed region).
func importLoop(r *hist.Recorder, l *verbs.Loop, res verbs.LoopResult) error {
	return importCounts(r, l, l.Counts, res.Samples, res.Overflow)
}

// importCounts adds to r the counts array read copies out of a C loop
// (samples of them, overflow above the histogram's range).
// The self-check build scales them by l's slowdown (slowCounts).
func importCounts(r *hist.Recorder, l *verbs.Loop, read func([]int64) error, samples, overflow int64) error {
	counts := make([]int64, histGeometry.CountsLen())
	if err := read(counts); err != nil {
		return err
	}
	return r.AddCounts(slowCounts(l, counts), samples, overflow)
}

// importCycles returns the cycle samples of the ping loop l (perftest's
// sample: from one post to the next; see verbs.Loop.CycleCounts),
// checked: a run of n round trips records n-1 of them.
func importCycles(l *verbs.Loop, res verbs.LoopResult) (*hist.Recorder, error) {
	if want := max(res.Samples-1, 0); res.CycleSamples != want {
		return nil, fmt.Errorf("rdmatest: verification: the loop recorded %d cycle samples for %d round trips, expected %d", res.CycleSamples, res.Samples, want)
	}
	r := hist.NewRecorder()
	if err := importCounts(r, l, l.CycleCounts, res.CycleSamples, res.CycleOverflow); err != nil {
		return nil, err
	}
	return r, nil
}

// loopRun is one C loop on an OS thread of its own (locked, and pinned to
// a CPU when one is given).
type loopRun struct {
	loop  *verbs.Loop
	start chan struct{}
	ran   chan struct{} // closed when the loop's Run returned
	done  chan struct{} // closed when the goroutine is done (after any settle)
	res   verbs.LoopResult
	err   error
	// settleWant > 0 (set before begin): after its Run, on the same
	// thread and with no gap, the goroutine takes the receives still
	// arriving, up to settleWant in all (a UC or UD bidir side:
	// Loop.SettleRecvs); settled is then the loop's receive count (read
	// after done).
	settleWant, settled int64
}

// readyLoop starts the goroutine that will run l on a new OS thread
// pinned to cpu (< 0: not pinned) and returns once the thread is ready;
// go starts the loop. Everything that allocates (the goroutine, its
// thread) happens here, before a timer starts. The goroutine ends still
// locked, so the thread and its affinity end with it.
func readyLoop(l *verbs.Loop, cpu int) *loopRun {
	r := &loopRun{loop: l, start: make(chan struct{}), ran: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(r.done)
		ran := false
		defer func() {
			// A panic here (the C loop cannot panic; the Go around it
			// could) ends this run with an error, not the process: a
			// peer daemon serves other clients.
			if p := recover(); p != nil {
				r.err = fmt.Errorf("rdmatest: loop goroutine panicked: %v", p)
			}
			if !ran {
				close(r.ran)
			}
		}()
		runtime.LockOSThread()
		r.err = cpus.PinThread(cpu)
		close(ready)
		<-r.start
		if r.err == nil {
			s0 := cpus.ThreadPreemptions()
			r.res, r.err = l.Run()
			loopPreemptions.Add(cpus.ThreadPreemptions() - s0)
		}
		ran = true
		close(r.ran)
		if r.err == nil && r.settleWant > 0 {
			// A stop or the deadline ends it early; the count is what
			// arrived by then.
			r.settled, _ = l.SettleRecvs(r.settleWant, bidirSettle)
		}
	}()
	<-ready
	return r
}

// begin starts the loop.
func (r *loopRun) begin() { close(r.start) }

// waitRun waits for the loop's Run to return (not for a settle after
// it), at most timeout.
func (r *loopRun) waitRun(timeout time.Duration) error { return r.waitFor(r.ran, timeout) }

// wait waits for the loop to return, at most timeout.
func (r *loopRun) wait(timeout time.Duration) error { return r.waitFor(r.done, timeout) }

// waitFor waits until ch is closed, at most timeout, and returns the
// loop's error.
func (r *loopRun) waitFor(ch <-chan struct{}, timeout time.Duration) error {
	select {
	case <-ch:
		return r.err
	case <-time.After(timeout):
		return fmt.Errorf("rdmatest: the loop did not return within %v of its stop", timeout)
	}
}

// result starts a ready loop and waits until it returns (its own waits
// have deadlines: it does).
func (r *loopRun) result() (verbs.LoopResult, error) {
	r.begin()
	<-r.done
	return r.res, r.err
}

// inByte and outByte name byte off of QP i's incoming and outgoing slots.
func (s *Side) inByte(i, off int) verbs.ByteAt {
	return verbs.ByteAt{Buf: s.Buf, Off: (2*i+1)*s.slot + off}
}

func (s *Side) outByte(i, off int) verbs.ByteAt {
	return verbs.ByteAt{Buf: s.Buf, Off: 2*i*s.slot + off}
}

// timedRun runs l on the calling goroutine's own thread, locked and
// pinned to cpu (< 0: not pinned) for the call and restored after it:
// the measured loops run this way, inside the timer, because handing a
// run to another thread there would wake the scheduler (and could make
// the runtime create a thread, which allocates). pinned is called once
// the thread is ready, just before the loop: the caller starts its timer
// there.
func timedRun(l *verbs.Loop, cpu int, pinned func()) (verbs.LoopResult, error) {
	var res verbs.LoopResult
	err := onPinnedThread(cpu, func() (err error) {
		pinned()
		res, err = l.Run()
		return err
	})
	return res, err
}

// onPinnedThread calls run on the calling goroutine's thread, locked and
// pinned to cpu (< 0: see cpus.PinThread) for the call and restored after it,
// and adds the thread's preemptions during run to loopPreemptions: the
// frame of every timed loop that runs on the benchmark goroutine (the C
// loops' timedRun, Measure's timedOps).
func onPinnedThread(cpu int, run func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, err := cpus.PinSelf(cpu)
	if err != nil {
		return err
	}
	defer restore()
	s0 := cpus.ThreadPreemptions()
	defer func() { loopPreemptions.Add(cpus.ThreadPreemptions() - s0) }()
	return run()
}

// loopPreemptions counts how often the timed loops' threads were
// preempted — involuntary context switches (cpus.ThreadPreemptions) —
// over their runs: each loop's thread adds its own when its run ends. A
// spinning loop gives its CPU away only when the kernel takes it: every
// count is a time the loop stopped for another thread (a Go
// runtime thread, another process, a kernel thread), which lands in the
// samples of that moment.
var loopPreemptions atomic.Int64

// measure runs l as b's timed region (see timedRun; the region's start,
// beforeRun, just before it), then, untimed, runs after (if any), stops
// the passive side resp and imports the loop's samples. Any failure ends
// b, with the passive side's error added.
func measure(b *testing.B, d *Dev, l *verbs.Loop, cpu int, resp *responder, after func() error) (verbs.LoopResult, *hist.Recorder, *region) {
	b.Helper()
	slowdown(b, l)
	before := beforeRun(b, d)
	res, err := timedRun(l, cpu, b.ResetTimer)
	b.StopTimer()
	before.end()
	if err == nil && after != nil {
		err = after()
	}
	if err != nil {
		resp.fatal(b, err)
	}
	if err := resp.Stop(); err != nil {
		b.Fatal(err)
	}
	rec := hist.NewRecorder()
	if err := importLoop(rec, l, res); err != nil {
		b.Fatal(err)
	}
	return res, rec, before
}
