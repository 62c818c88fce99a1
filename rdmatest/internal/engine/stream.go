package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// Stream measures spec s as a stream: QD WRs outstanding per QP, posted
// Batch at a time round-robin over the QPs, one in Signal signaled. The
// loop runs in C, on a thread pinned to its own CPU (so does the
// in-process passive side), with b.N messages. It reports MB/s (payload
// bytes per second, 1 MB = 10^6 B) and msgs/s, both from the loop's own
// clock: from just before the first post to the poll that returned the
// last completion (perftest's BW average); and latency under load
// (p50-ns … max-ns: from just before the post call that carried a
// signaled WR until the poll that returned its completion). ns/op is the
// testing timer around the one call divided by b.N. After the run the
// results are verified (see verifyStream; SEND streams count delivered
// messages, see sinkReport). Unsupported combinations are skipped,
// invalid ones fail.
//
// Variants, by Spec field:
//
//   - Bidir: side B streams the mirror of A's stream to A at the same
//     time (B's QP i to A's QP i, same verb, size and knobs): two C loops
//     on two pinned threads, B's starting when A posts its first message,
//     b.N messages each. The time runs from A's first post until the
//     later of the two loops' last completions (each side keeps its own
//     receives stocked until the other's messages have all arrived).
//     MB/s counts the payload of both directions, msgs/s = 2·b.N /
//     elapsed, and the latency percentiles merge both sides' samples.
//     Against a remote peer (-rdma.peer) B's stream is the peer's (role
//     bidir), started by the session's Start; A starts when it hears
//     Started, so the two starts are at most that round trip apart
//     (start-skew-ns). Each side times its own stream on its own clock,
//     and the time is the longer of the two; the latency percentiles
//     are A's; A checks B's payload in its own buffer, the peer counts
//     A's messages (RC: all of them).
//   - Inbound: msgs/s is the passive side's rate: R / (t_last − t_post),
//     where R receives completed at B, t_last is when B's poll last
//     returned receive completions and t_post the requester's first post
//     (one clock: both loops run in this process). No MB/s is reported;
//     ns/op and the latency percentiles stay the requester's.
//   - Threads ≥ 1: see streamThreads.
//   - Load: see scenario.Stream, whose doc is the public one of all
//     these variants.
//   - Counters, Stride (atomics): WR k of a QP targets counter k mod
//     Counters, at Stride·(k mod Counters) bytes into the passive side's
//     slot of that QP.
func Stream(b *testing.B, d *Dev, s Spec) {
	b.Helper()
	takeTurn(b)
	// Every check that can skip runs before the probe: testing reports
	// only the first call's skip (probe.go).
	skipCM(b, d, &s)
	s.begin(b, d, KindStream)
	busy := s.busyGoroutines(d)
	if s.Threads == 0 {
		if err := checkProcs(busy); err != nil {
			b.Skip(err)
		}
	}
	if probeCall(b) {
		return // testing discards this call (probe.go)
	}
	if s.Threads > 0 { // may oversubscribe on purpose: see streamThreads
		streamThreads(b, d, s)
		return
	}
	b.ReportAllocs()
	cfg := s.streamPairConfig(d.Attr())
	cfg.msgs = int64(b.N) // a remote peer's bidir stream back
	p := NewPair(b, d, cfg)
	defer p.close()
	p.fillPatterns(&s)
	cpus := d.cpus.ForLoops(busy)
	n := int64(b.N)
	var resp *responder
	var err error
	var skew time.Duration // a remote bidir's Start → Started
	if !s.Bidir || p.remote != nil {
		t0 := time.Now()
		if resp, err = p.startPassive(&s, cpus[1]); err != nil {
			b.Fatal(err)
		}
		skew = time.Since(t0)
	}
	defer resp.Stop()
	var offered float64
	var interval time.Duration
	if s.Load > 0 {
		peak, err := p.peakRate(&s, cpus[0])
		if err != nil {
			resp.fatal(b, err)
		}
		offered = s.Load * peak
		interval = time.Duration(float64(time.Second) / offered)
	}
	var recvsBefore int64
	switch {
	case s.Load > 0 && resp != nil && resp.remote != nil && s.consumesRecv():
		// A peer's sink is counted only when stopped: the peak run's
		// receives cannot be told from the stream's.
		recvsBefore = -1
	case s.Load > 0 && resp != nil && s.consumesRecv():
		recvsBefore = p.settle(resp, &s, peakMsgs+int64(len(p.A.QPs))) // the peak run's messages and markers
		resp.markRecvs(recvsBefore)                                    // recv-MB/s times this stream's receives only
	}
	a, err := newStreamLoop(p, p.A, &s, n, interval)
	if err != nil {
		resp.fatal(b, err)
	}
	defer a.Close()
	var mirror *loopRun
	if s.Bidir && p.remote == nil {
		m, err := newStreamLoop(p, p.B, &s, n, 0)
		if err == nil {
			err = m.Follow(a)
		}
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		mirror = readyLoop(m, cpus[1])
		if bidirCounts(&s) {
			mirror.settleWant = recvsOf(&s, n, len(p.A.QPs), false) // A's messages (and markers)
		}
		defer m.Stop()
	}

	slowdown(b, a)
	if mirror != nil {
		slowdown(b, mirror.loop)
		mirror.begin() // it waits (in C) for A's first post
	}
	before := beforeRun(b, d)
	res, err := timedRun(a, cpus[0], b.ResetTimer)
	var mres verbs.LoopResult
	if err == nil && mirror != nil {
		err = mirror.waitRun(d.Opts.Timeout)
		mres = mirror.res
	}
	b.StopTimer()
	before.end()
	if err != nil {
		resp.fatal(b, err)
	}
	gotA := int64(-1) // UC, UD bidir: side A's receives once its last arrivals settled
	if bidirCounts(&s) {
		// At once, before anything else: A's receives are reposted
		// again only here (the other side settles on its own thread).
		if gotA, err = a.SettleRecvs(recvsOf(&s, n, len(p.A.QPs), false), bidirSettle); err != nil {
			b.Fatal(fmt.Errorf("rdmatest: bidir: side A's last receives: %w", err))
		}
	}
	var back *oob.Stopped // a remote peer's bidir stream
	if s.Bidir && p.remote != nil {
		st, err := resp.stopRemote(oob.Stop{}) // the peer's stream back runs to its end, and settles, first
		if err != nil {
			b.Fatal(err)
		}
		back = &st
	}
	var both *bidirDelivery
	if gotA >= 0 {
		if both, err = bidirDelivered(gotA, mirror, back, n, d.Opts.Timeout); err != nil {
			b.Fatal(err)
		}
	}
	sink := &sinkReport{} // a bidir stream counts its receives in its own loop
	if back == nil {
		if sink, err = p.stopSink(resp, &s, recvsBefore, n); err != nil {
			b.Fatal(err)
		}
	}
	rec := hist.NewRecorder()
	if err := importLoop(rec, a, res); err != nil {
		b.Fatal(err)
	}
	elapsed, msgs := res.Elapsed(), n
	if mirror != nil {
		if err := importLoop(rec, mirror.loop, mres); err != nil {
			b.Fatal(err)
		}
		elapsed, msgs = time.Duration(max(res.Last, mres.Last)-res.First), 2*n
	}
	if back != nil {
		if err := p.checkBidirBack(&s, back, n); err != nil {
			b.Fatal(err)
		}
		elapsed, msgs = max(elapsed, time.Duration(back.StreamNs)), 2*n
		b.ReportMetric(float64(skew.Nanoseconds()), "start-skew-ns")
	}
	if rec.Count() == 0 && noSignaledWR(&s, n) {
		// The testing package's first, one-iteration call of a b.N
		// benchmark can end before any signaled WR (only the uncounted
		// end markers): no latency to report, which is not an error.
		rec = nil
	}
	if err := p.verifyStream(&s, n); err != nil {
		b.Fatal(err)
	}
	hist.ReportLatencyHeld(b, rec)
	switch {
	case s.Inbound:
		sink.reportInbound(b, res.First)
	default:
		reportLoopRate(b, "msgs/s", msgs, elapsed)
		b.ReportMetric(float64(msgs*int64(s.Size))/1e6/elapsed.Seconds(), "MB/s")
	}
	if s.Load > 0 {
		b.ReportMetric(offered, "offered-msgs/s")
		if achieved := float64(n) / elapsed.Seconds(); n >= minLoadMsgs && achieved < 0.95*offered {
			// Kept, not skipped: a row skipped after its runs prints
			// "0 NaN ns/op"; msgs/s next to offered-msgs/s shows it.
			b.Logf("rdmatest: offered %.0f msgs/s (%.0f%% of the peak measured just before), achieved %.0f msgs/s: the device did not sustain this load", offered, 100*s.Load, achieved)
		}
	}
	sink.reportDelivery(b, &s, n, elapsed)
	both.report(b, n, elapsed)
	before.report(b, d, int64(b.N))
}

// bidirDelivery is what each side of a UC or UD bidir stream received
// of the other's n messages (markers that consume a receive counted, as
// a sink counts them, and each side capped at n).
type bidirDelivery struct{ a, b int64 }

// bidirSettle bounds the wait for a bidir side's last receives once none
// arrive (messages may be lost): as a local sink settles.
const bidirSettle = 20 * time.Millisecond

// bidirCounts tells whether a bidir run of s counts what each side
// received: UC and UD streams of a verb that consumes receives (on RC
// every message arrives, or the run fails).
func bidirCounts(s *Spec) bool {
	return s.Bidir && s.Transport != verbs.TransportRC && s.consumesRecv()
}

// bidirDelivered is what each side of a UC or UD bidir run received:
// gotA side A's settled count, and the other side's, the mirror's (it
// settles on its own thread right after its run: waited for here, at
// most timeout) or the peer's (its Stopped.Received, settled the same
// way before it answered).
func bidirDelivered(gotA int64, mirror *loopRun, back *oob.Stopped, n int64, timeout time.Duration) (*bidirDelivery, error) {
	var gotB int64
	switch {
	case mirror != nil:
		select {
		case <-mirror.done:
		case <-time.After(timeout + time.Second):
			return nil, fmt.Errorf("rdmatest: bidir: side B's last receives not taken within %v", timeout)
		}
		gotB = mirror.settled
	case back != nil:
		gotB = int64(min(back.Received, uint64(n)))
	}
	return &bidirDelivery{a: min(gotA, n), b: min(max(gotB, 0), n)}, nil
}

// report reports delivered-msgs/s, the messages both sides received per
// second of the run's time (2n sent), and lost-msgs/op, the share of
// the 2n that never arrived (nil: nothing to report).
func (d *bidirDelivery) report(b *testing.B, n int64, elapsed time.Duration) {
	b.Helper()
	if d == nil || n <= 0 {
		return
	}
	b.ReportMetric(float64(d.a+d.b)/elapsed.Seconds(), "delivered-msgs/s")
	b.ReportMetric(float64(2*n-d.a-d.b)/float64(2*n), "lost-msgs/op")
}

// recvsOf is how many receives a stream of n messages of s over qps QPs
// makes its receiver see: the messages, and the completion markers that
// are SENDs (see marker: on UD, or toward a remote peer, sendMarker).
func recvsOf(s *Spec, n int64, qps int, sendMarker bool) int64 {
	want := n
	if s.isSend() && (sendMarker || s.Transport == verbs.TransportUD) {
		for i := range qps {
			if ni := msgsPerQP(n, s.Batch, qps, i); ni > 0 && ni%int64(s.Signal) != 0 {
				want++
			}
		}
	}
	return want
}

// newStreamLoop builds the C stream of s from side from (p.A, or p.B for
// a bidir mirror) with n messages, open-loop at one message per interval
// when interval > 0.
func newStreamLoop(p *Pair, from *Side, s *Spec, n int64, interval time.Duration) (*verbs.Loop, error) {
	return newSideStream(from, s, n, interval, streamEnv{sendDepth: p.Cfg.SendDepth, recvDepth: p.Cfg.RecvDepth,
		timeout: p.Dev.Opts.Timeout, sendMarker: p.remote != nil})
}

// streamEnv is what a stream needs of the pair its side belongs to: the
// side's queue depths, the waits' deadline, and whether SEND streams
// end with a SEND marker (toward a remote peer, which grants no remote
// write for SEND: see marker).
type streamEnv struct {
	sendDepth, recvDepth int
	timeout              time.Duration
	sendMarker           bool
}

// newSideStream is newStreamLoop for a side without its pair: a remote
// peer's bidir stream (Passive) builds one from its side alone.
func newSideStream(from *Side, s *Spec, n int64, interval time.Duration, env streamEnv) (*verbs.Loop, error) {
	cfg := verbs.StreamConfig{CQ: from.CQ, Msgs: n, QD: s.QD, Batch: s.Batch, Signal: s.Signal, SendDep: env.sendDepth, Interval: interval,
		Counters: s.Counters, Stride: s.Stride, CmpSwap: s.Op == verbs.OpCmpSwap, Timeout: env.timeout, Hist: histGeometry}
	for i, qp := range from.QPs {
		wr := sendWR(s, from, i)
		if s.HeaderOnly {
			wr.NumSGE = 0
		}
		cfg.QPs = append(cfg.QPs, verbs.StreamQP{QP: qp, WR: wr, Marker: marker(from, s, i, env.sendMarker)})
	}
	if s.Bidir && s.consumesRecv() {
		// On RC the other side's messages wait (RNR) for a receive: keep
		// reposting until all have arrived. UC and UD drop a message that
		// finds none, as they drop any: the side stops with its stream.
		cfg.RecvDepth = env.recvDepth
		if s.Transport == verbs.TransportRC {
			cfg.ExpectRecvs = n
		}
		for i := range from.QPs {
			cfg.Recv = append(cfg.Recv, from.In(i, recvBytes(s)))
		}
	}
	l, err := verbs.NewStream(cfg)
	if err != nil {
		return nil, fmt.Errorf("rdmatest: %w", err)
	}
	return l, nil
}

// marker is the completion marker of QP i of side a: a signaled WR of the
// same class as the stream's verb, so that the passive side needs no
// access it does not grant already (a remote peer grants only what the
// scenario needs), and that moves no payload of the stream's: a zero-byte
// SEND (to a remote peer or on UD; otherwise an RDMA WRITE) or RDMA
// WRITE, a one-byte RDMA READ of the stream's first byte into the same
// place as the stream's READs put it, or for atomics a fetch-and-add of
// 0 on the first counter (its 8 bytes come back into the requester's
// "in" slot).
func marker(a *Side, s *Spec, i int, sendMarker bool) verbs.SendWR {
	t := a.Peer[i]
	m := verbs.SendWR{Flags: verbs.FlagSignaled, RemoteAddr: t.Addr, RKey: t.RKey, UD: t.Dest}
	switch {
	case s.isSend() && (sendMarker || s.Transport == verbs.TransportUD):
		// A remote peer grants no remote write for SEND, and UD has
		// nothing else; locally an RDMA WRITE keeps receive counts exact.
		m.Op = verbs.OpSend
	case s.Op == verbs.OpRead:
		// One byte, not zero: siw answers a zero-byte READ posted behind
		// outstanding READs out of order (its ORQ entry of 0 bytes meets a
		// 32-byte response: "rresp len: 32 != 0", TERMINATE, a READ
		// completion of general error). The byte comes from where the
		// stream's READs read and lands where theirs do: the same value.
		m.Op, m.NumSGE, m.SGE[0] = verbs.OpRead, 1, a.In(i, 1)
	case s.isAtomic():
		m.Op, m.NumSGE, m.SGE[0] = verbs.OpFetchAdd, 1, a.In(i, 8)
	default:
		m.Op = verbs.OpWrite
	}
	return m
}

// sinkReport is what the passive side of a stream saw, in this process
// or a remote peer's sink (nil res: no sink: the NIC alone served the
// verb).
type sinkReport struct {
	res    *verbs.LoopResult
	before int64 // receives seen before the measured stream
	want   int64 // receives seen when all its messages (and markers) arrived
	// span is a remote peer's receive interval (asked for side=responder:
	// its clock is not ours, so res has no receive times).
	span   time.Duration
	remote bool // the sink is a remote peer's
}

// stopSink stops the passive side of a stream of n messages, begun when
// it had seen before receives (an earlier run on the same pair: the peak
// of an offered-load run; −1: unknown, nothing is counted). A local sink
// is first given time to poll every receive the stream produced: on RC
// all of them must arrive (within the deadline); on UC and UD it waits
// until the count stops moving for 20 ms (messages may be lost).
func (p *Pair) stopSink(resp *responder, s *Spec, before, n int64) (*sinkReport, error) {
	r := &sinkReport{before: before}
	remote := resp != nil && resp.remote != nil
	if resp == nil || (resp.run == nil && !remote) || !s.consumesRecv() || before < 0 {
		return r, resp.Stop() // before < 0: receives not countable (a peer's, after a peak run)
	}
	r.want = before + recvsOf(s, n, len(p.A.QPs), p.remote != nil)
	if remote {
		// The peer's sink settles the same way before it answers, and
		// counts on its side (no receive times: recv-MB/s is not
		// reported against a peer).
		st, err := resp.stopRemote(oob.Stop{Expect: uint64(max(r.want, 0)), Times: s.Inbound})
		r.res, r.span, r.remote = &resp.res, time.Duration(st.RecvSpanNs), true
		return r, err
	}
	p.settle(resp, s, r.want)
	err := resp.Stop()
	r.res = &resp.res
	return r, err
}

// reportInbound reports msgs/s as the passive side saw it: see Stream's
// Inbound. first is the requester's first post (the same clock: both
// loops run in this process). Against a remote peer the clocks differ:
// msgs/s is then the intervals between the messages received over the
// peer's own receive interval, (received − 1) ÷ (last receive − first
// receive): the same rate without the first message's flight, which
// only the requester's clock sees. Fewer than two receives there give
// no interval and no msgs/s.
func (r *sinkReport) reportInbound(b *testing.B, first int64) {
	b.Helper()
	switch {
	case r.res == nil:
		b.Fatal("rdmatest: side=responder needs the passive side's receive counts")
	case r.remote && r.span > 0:
		reportLoopRate(b, "msgs/s", r.res.Recvs-r.before-1, r.span)
	case r.remote:
		b.Logf("rdmatest: side=responder: the peer's sink saw %d receives, no interval: no msgs/s", r.res.Recvs-r.before)
	default:
		reportLoopRate(b, "msgs/s", r.res.Recvs-r.before, time.Duration(r.res.RecvLast-first))
	}
}

// reportDelivery checks and reports the receives a local sink counted
// for a stream of n messages that took elapsed: on RC every message must
// have arrived; on UC and UD, delivered-msgs/s (messages received per
// second of the sender's time) and lost-msgs/op (the fraction of
// messages sent that never arrived). On every transport it reports
// recv-MB/s: see reportReceiver.
func (r *sinkReport) reportDelivery(b *testing.B, s *Spec, n int64, elapsed time.Duration) {
	b.Helper()
	if r.res == nil {
		return
	}
	r.reportReceiver(b, s, n)
	if s.Transport == verbs.TransportRC {
		r.checkRC(b, s)
		return
	}
	b.ReportMetric(float64(r.delivered(n))/elapsed.Seconds(), "delivered-msgs/s")
	b.ReportMetric(float64(n-r.delivered(n))/float64(n), "lost-msgs/op")
}

// reportReceiver reports recv-MB/s, the receiver's bandwidth as
// perftest's ib_send_bw server row measures it: the payload bytes of the
// stream's messages the sink received (size × received; a UD GRH is not
// payload) over the sink's own interval, from the poll return that gave
// it the stream's first receive to the end of the last poll that gave it
// receives; MB = 10^6 bytes. Not reported when fewer than two messages
// arrived (no interval to speak of).
func (r *sinkReport) reportReceiver(b *testing.B, s *Spec, n int64) {
	b.Helper()
	got := r.delivered(n)
	span := time.Duration(r.res.RecvLast - r.res.RecvFirst)
	if r.remote { // the peer's interval, when asked (side=responder)
		span = r.span
	}
	if got < 2 || (!r.remote && r.res.RecvFirst == 0) || span <= 0 {
		return
	}
	b.ReportMetric(float64(got*int64(s.Size))/1e6/span.Seconds(), "recv-MB/s")
}

// delivered is how many of the stream's n messages the sink received (a
// UD completion marker, when one was sent, is not a message).
func (r *sinkReport) delivered(n int64) int64 { return min(r.res.Recvs-r.before, n) }

// checkRC fails b unless a local sink of an RC stream received every
// message.
func (r *sinkReport) checkRC(b *testing.B, s *Spec) {
	b.Helper()
	if r.res != nil && s.Transport == verbs.TransportRC && r.res.Recvs != r.want {
		b.Fatalf("rdmatest: verification: the passive side received %d messages, expected %d (RC delivers every message)", r.res.Recvs, r.want)
	}
}

// peakMsgs is the length of the closed-loop run that measures the peak
// rate of an offered-load run.
const peakMsgs = 5000

// settle waits until a local sink has seen want receives, on RC within
// the deadline (every message arrives), on UC and UD until its count
// stops moving for 20 ms (messages may be lost), and returns its count.
func (p *Pair) settle(resp *responder, s *Spec, want int64) int64 {
	return settleRecvs(resp.recvs, want, s.Transport == verbs.TransportRC, int64(len(p.A.QPs)), p.Dev.Opts.Timeout)
}

// settleRecvs polls a sink's receive count until it reaches want, within
// timeout. It gives up early once the count has not moved for 20 ms:
// at once on UC and UD (messages may be lost), on RC only within slack
// of want (the QPs' completion markers may be short). It returns the
// last count. Pair.settle and a peer's sink (Passive.StopWith) use it.
func settleRecvs(recvs func() int64, want int64, rc bool, slack int64, timeout time.Duration) int64 {
	deadline := time.Now().Add(timeout)
	last, still := recvs(), time.Now()
	for last < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		if got := recvs(); got != last {
			last, still = got, time.Now()
		} else if (!rc || last >= want-slack) && time.Since(still) > 20*time.Millisecond {
			break
		}
	}
	return last
}

// minLoadMsgs is the smallest offered-load run whose achieved rate is
// compared with the offered one (the testing package's first call of a
// benchmark runs one message).
const minLoadMsgs = 1000

// peakRate measures the closed-loop message rate of s on p (untimed
// setup of an offered-load run): a stream of peakMsgs messages.
func (p *Pair) peakRate(s *Spec, cpu int) (float64, error) {
	closed := *s
	closed.Load = 0
	l, err := newStreamLoop(p, p.A, &closed, peakMsgs, 0)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	res, err := readyLoop(l, cpu).result()
	if err != nil {
		return 0, fmt.Errorf("rdmatest: measuring the peak rate: %w", err)
	}
	return float64(res.Ops) / res.Elapsed().Seconds(), nil
}
