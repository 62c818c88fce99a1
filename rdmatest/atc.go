package rdmatest

// Stream variants for the rdma_bench (ATC'16) scenarios: the bidir
// mirror stream, the passive side's inbound rate, and threads.

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// mirrorStream is side B's stream of a bidir run: it follows the count of
// messages A has posted (target) and drains when told the count is
// final.
type mirrorStream struct {
	st     *stream
	resp   *responder
	target atomic.Int64 // messages A has posted
	final  atomic.Bool  // target is A's final count
	done   atomic.Bool  // B's stream has drained, or failed
}

// startMirror starts B's mirror of stream a (B's QP i streams to A's QP i
// with a's spec) in a goroutine of its own. For verbs that
// consume a receive, both streams get receivers for the peer's messages.
func startMirror(a *stream) (*mirrorStream, error) {
	p := a.p
	timeout := a.poll.timeout
	mp := &Pair{Dev: p.Dev, PD: p.PD, A: p.B, B: p.A, Cfg: p.Cfg}
	m := &mirrorStream{st: newStream(a.s, mp, timeout)}
	if a.s.consumesRecv() {
		n := recvBytes(a.s)
		a.recv, m.st.recv = newReceiver(p.A, n), newReceiver(p.B, n)
		for _, r := range []*receiver{a.recv, m.st.recv} {
			if err := r.fill(p.Cfg.RecvDepth); err != nil {
				return nil, fmt.Errorf("rdmatest: posting receives for the bidir stream: %w", err)
			}
		}
	}
	m.resp = startResponder(timeout, m.run)
	return m, nil
}

func (m *mirrorStream) run(stop *atomic.Bool) error {
	err := m.follow(stop)
	m.done.Store(true)
	if err != nil {
		return fmt.Errorf("rdmatest: side B's mirror stream: %w", err)
	}
	// A may still have messages in flight towards B: keep reposting B's
	// receives until the run is over.
	for !stop.Load() {
		if err := m.st.reap(false); err != nil {
			return fmt.Errorf("rdmatest: side B's mirror stream: %w", err)
		}
	}
	return nil
}

// follow posts as many messages as A has posted, until A's count is final
// and B's stream has drained.
func (m *mirrorStream) follow(stop *atomic.Bool) error {
	st := m.st
	st.start = time.Now()
	for !stop.Load() {
		final := m.final.Load() // before target: a final target is stored first
		t := m.target.Load()
		idle := true
		for st.msgs+int64(st.pending) < t {
			if err := st.add(); err != nil {
				return err
			}
			idle = false
		}
		if final {
			return st.finish(st.rr, st.pending)
		}
		if idle {
			if err := st.reap(false); err != nil {
				return err
			}
		}
	}
	return nil
}

// drain tells B that A's count is n and keeps A's completions (and
// receives) serviced until B's stream has drained.
func (m *mirrorStream) drain(a *stream, n int64) error {
	m.target.Store(n)
	m.final.Store(true)
	for !m.done.Load() {
		if err := a.reap(false); err != nil {
			return err
		}
	}
	return nil
}

// report reports msgs/s as the passive side saw it (call after the
// responder stopped): see Stream's Inbound.
func (in *sinkSide) report(b *testing.B) {
	b.Helper()
	span := in.t1.Sub(in.t0).Seconds()
	if in.recvs-in.first < 1 || span <= 0 {
		b.Logf("rdmatest: no inbound rate: the passive side saw all %d receives in one poll (run more iterations)", in.recvs)
		return
	}
	b.ReportMetric(float64(in.recvs-in.first)/span, "msgs/s")
}

// threadRun is one goroutine of a threads run: its own pair, stream,
// passive side and share of the messages.
type threadRun struct {
	st      *stream
	resp    *responder
	n       int
	elapsed time.Duration
	err     error
}

// streamThreads measures s with s.Threads goroutines, each locked to its
// own OS thread, with its own pair (s.QPs QPs), CQs, passive side and
// recorder. Thread i sends ⌊N/T⌋ messages, plus one for i < N mod T. The
// timer runs from the release of all threads to the last completion of
// the slowest. msgs/s = b.N / elapsed; msgs/s/thread is the slowest
// thread's rate, n_i / (its own time from release to its last
// completion); the latency percentiles merge all threads' samples.
//
// Unlike the other runs, threads runs are not refused when their busy
// goroutines (each thread, and each thread's passive side for verbs that
// consume a receive) outnumber GOMAXPROCS or the CPUs: how the rate holds
// up when threads share CPUs is part of what the scaling curve shows (on
// the 2-vCPU loopback VM, threads=2 with SEND already runs 4 spinners).
func streamThreads(b *testing.B, d *Dev, s Spec) {
	timeout := d.Opts.Timeout
	ws := make([]*threadRun, s.Threads)
	defer func() {
		for _, w := range ws {
			if w != nil {
				w.resp.Stop()
			}
		}
	}()
	for i := range ws {
		p := NewPair(b, d, s.pairConfig(true))
		w := &threadRun{st: newStream(&s, p, timeout)}
		if s.consumesRecv() {
			var err error
			sk, err := sink(p, recvBytes(&s), timeout)
			if err != nil {
				b.Fatal(err)
			}
			w.resp = sk.resp
		}
		ws[i] = w
	}
	before := beforeRun(b, d)
	b.SetBytes(int64(s.Size))
	b.ReportAllocs()
	release := make(chan struct{})
	var ready, wg sync.WaitGroup
	for i, w := range ws {
		w.n = b.N / len(ws)
		if i < b.N%len(ws) {
			w.n++
		}
		ready.Add(1)
		wg.Add(1)
		go w.run(&ready, release, &wg)
	}
	// Every thread is started and locked before the timer: creating an
	// OS thread is not part of the measurement (and allocates).
	ready.Wait()
	b.ResetTimer()
	close(release)
	wg.Wait()
	b.StopTimer()
	rec := NewRecorder()
	slowest := 0.0
	for i, w := range ws {
		if err := errors.Join(w.err, w.resp.Stop()); err != nil {
			b.Fatalf("thread %d: %v", i, err)
		}
		rec.Merge(w.st.rec)
		if w.n > 0 {
			r := float64(w.n) / w.elapsed.Seconds()
			if slowest == 0 || r < slowest {
				slowest = r
			}
		}
	}
	// The testing package's first, one-iteration call of a b.N benchmark
	// can end before any signaled WR (only the uncounted end markers):
	// then there is no latency to report, which is not an error.
	if rec.Count() == 0 && b.N < len(ws)*s.Signal {
		rec = nil
	}
	reportLatencyHeld(b, rec)
	ReportRate(b, b.N)
	b.ReportMetric(slowest, "msgs/s/thread")
	reportCounters(b, d, before)
}

func (w *threadRun) run(ready *sync.WaitGroup, release chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ready.Done()
	<-release
	st := w.st
	st.start = time.Now()
	for range w.n {
		if w.err = st.add(); w.err != nil {
			return
		}
	}
	w.err = st.finish(st.rr, st.pending)
	w.elapsed = time.Since(st.start)
}
