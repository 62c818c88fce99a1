package engine

// Threads: the rdma_bench (ATC'16) multi-queue scenario.

import (
	"errors"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/verbs"
)

// threadRun is one thread of a threads run: its own pair, C stream,
// passive side and share of the messages.
type threadRun struct {
	p    *Pair
	loop *verbs.Loop
	run  *loopRun
	resp *responder
	n    int64
}

// streamThreads measures s with s.Threads C loops, each on its own OS
// thread with its own pair (s.QPs QPs), CQs, passive side and histogram.
// Thread i sends ⌊N/T⌋ messages, plus one for i < N mod T (a thread with
// no message does not run). The loops start together: thread 0 opens the
// start when it posts its first message, the others wait for it. The
// time runs from that first post to the last completion of the slowest
// thread. msgs/s = b.N / elapsed; msgs/s/thread is the slowest thread's
// rate, n_i / (its last completion − the common start); the latency
// percentiles merge all threads' samples.
//
// Unlike the other runs, threads runs are not refused when their busy
// loops (each thread, and each thread's passive side for verbs that
// consume a receive) outnumber GOMAXPROCS or the CPUs, and they are not
// pinned: how the rate holds up when threads share CPUs is part of what
// the scaling curve shows (on the 2-vCPU loopback VM, threads=2 with
// SEND already runs 4 spinners).
func streamThreads(b *testing.B, d *Dev, s Spec) {
	b.ReportAllocs()
	ws := make([]*threadRun, 0, s.Threads)
	defer func() {
		for i := len(ws) - 1; i >= 0; i-- {
			ws[i].resp.Stop()
			ws[i].loop.Close()
			ws[i].p.close()
		}
	}()
	for i := range s.Threads {
		n := int64(b.N / s.Threads)
		if i < b.N%s.Threads {
			n++
		}
		if n == 0 {
			break
		}
		w := &threadRun{p: NewPair(b, d, s.streamPairConfig(d.Attr())), n: n}
		ws = append(ws, w)
		w.p.fillPatterns(&s)
		var err error
		if w.loop, err = newStreamLoop(w.p, w.p.A, &s, n, 0); err == nil && i > 0 {
			err = w.loop.Follow(ws[0].loop)
		}
		if err == nil {
			w.resp, err = w.p.startPassive(&s, -1)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	// The followers start first, on threads of their own (they wait in C
	// for thread 0's first post): creating their threads is not part of
	// the measurement. Thread 0 runs on this goroutine's thread.
	for _, w := range ws[1:] {
		w.run = readyLoop(w.loop, -1)
		w.run.begin()
	}
	before := beforeRun(b, d)
	res0, err0 := timedRun(ws[0].loop, -1, b.ResetTimer)
	errs := []error{err0}
	for _, w := range ws[1:] {
		errs = append(errs, w.run.wait(d.Opts.Timeout+time.Minute))
	}
	b.StopTimer()
	before.end()
	results := []verbs.LoopResult{res0}
	for _, w := range ws[1:] {
		results = append(results, w.run.res)
	}
	rec := hist.NewRecorder()
	start, last, slowest := res0.First, int64(0), 0.0
	for i, w := range ws {
		sink, err := w.p.stopSink(w.resp, &s, 0, w.n)
		if err = errors.Join(errs[i], err); err == nil {
			err = importLoop(rec, w.loop, results[i])
		}
		if err == nil {
			err = w.p.verifyStream(&s, w.n)
		}
		if err != nil {
			b.Fatalf("thread %d: %v", i, err)
		}
		sink.checkRC(b, &s)
		res := results[i]
		last = max(last, res.Last)
		if r := float64(w.n) / time.Duration(res.Last-start).Seconds(); slowest == 0 || r < slowest {
			slowest = r
		}
	}
	if rec.Count() == 0 && noSignaledWR(&s, ws[0].n) { // see Stream
		rec = nil
	}
	hist.ReportLatencyHeld(b, rec)
	elapsed := time.Duration(last - start)
	reportLoopRate(b, "msgs/s", int64(b.N), elapsed)
	b.ReportMetric(float64(int64(b.N)*int64(s.Size))/1e6/elapsed.Seconds(), "MB/s")
	b.ReportMetric(slowest, "msgs/s/thread")
	before.report(b, d, int64(b.N))
}
