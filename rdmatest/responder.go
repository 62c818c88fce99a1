package rdmatest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// responder runs the passive side's work in a goroutine of its own until
// stopped. The goroutine is not locked to an OS thread: a locked
// goroutine cannot pass through the scheduler (see spinner) without
// handing its P to another thread and waiting to get it back, two futex
// round trips each time.
type responder struct {
	stop    atomic.Bool
	done    chan error
	timeout time.Duration
	// stopFn, when set, replaces the goroutine: the role runs elsewhere
	// (a remote peer) and stopFn ends it.
	stopFn func() error
	// stopped and err keep the first Stop's outcome.
	stopped bool
	err     error
}

func startResponder(timeout time.Duration, work func(stop *atomic.Bool) error) *responder {
	r := &responder{done: make(chan error, 1), timeout: timeout}
	go func() { r.done <- work(&r.stop) }()
	return r
}

// fatal ends benchmark b with err, after stopping the responder and
// adding its error, if any (the passive side often knows why).
func (r *responder) fatal(b testing.TB, err error) {
	b.Helper()
	if rerr := r.Stop(); rerr != nil {
		err = fmt.Errorf("%w (passive side: %v)", err, rerr)
	}
	b.Fatal(err)
}

// Stop asks the responder to finish and returns its error. Only the first
// call waits; later calls return the same result at once (the loops call
// it on their error paths and again, deferred, on the way out).
func (r *responder) Stop() error {
	if r == nil {
		return nil
	}
	if r.stopped {
		return r.err
	}
	r.stopped = true
	if r.stopFn != nil {
		r.err = r.stopFn()
		return r.err
	}
	r.stop.Store(true)
	select {
	case r.err = <-r.done:
	case <-time.After(r.timeout):
		r.err = fmt.Errorf("rdmatest: the passive side did not stop within %v", r.timeout)
	}
	return r.err
}

// receiver keeps receive WRs posted on a side (per QP or on its SRQ) and
// reposts each one as it completes.
type receiver struct {
	side  *Side
	n     int // bytes per receive
	wrs   [][]verbs.RecvWR
	batch []int
}

func newReceiver(s *Side, n int) *receiver {
	r := &receiver{side: s, n: n, wrs: make([][]verbs.RecvWR, len(s.QPs)), batch: make([]int, len(s.QPs))}
	for i := range s.QPs {
		r.wrs[i] = make([]verbs.RecvWR, 64)
		for j := range r.wrs[i] {
			r.wrs[i][j] = verbs.RecvWR{ID: uint64(i), NumSGE: 1, SGE: [verbs.MaxWRSGE]verbs.SGE{s.In(i, n)}}
		}
	}
	return r
}

// fill posts depth receives on every QP (or the SRQ).
func (r *receiver) fill(depth int) error {
	for i := range r.side.QPs {
		for left := depth; left > 0; {
			k := min(left, len(r.wrs[i]))
			if err := r.post(i, k); err != nil {
				return err
			}
			left -= k
		}
		if r.side.SRQ != nil {
			break
		}
	}
	return nil
}

func (r *receiver) post(i, k int) error {
	if r.side.SRQ != nil {
		return r.side.SRQ.PostRecv(r.wrs[i][:k])
	}
	return r.side.QPs[i].PostRecv(r.wrs[i][:k])
}

// consumed notes that a receive of QP i completed; flush reposts them.
func (r *receiver) consumed(i int) error {
	r.batch[i]++
	if r.batch[i] == len(r.wrs[i]) {
		return r.flushQP(i)
	}
	return nil
}

func (r *receiver) flushQP(i int) error {
	k := r.batch[i]
	r.batch[i] = 0
	return r.post(i, k)
}

func (r *receiver) flush() error {
	for i := range r.batch {
		if r.batch[i] > 0 {
			if err := r.flushQP(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// recvIndex is the QP index a receive completion belongs to: receive WRs
// carry it in their ID.
func recvIndex(wc *verbs.WC) int { return int(wc.ID) }

// isRecv tells receive completions from send-side ones.
func isRecv(wc *verbs.WC) bool { return wc.Opcode&verbs.WCRecv != 0 }

// sinkSide is the passive side of a stream: it reposts every receive,
// and counts the receive completions and when it saw them (for Inbound
// runs, see sinkSide.report).
type sinkSide struct {
	resp         *responder
	recvs, first int64     // receives seen; how many the first poll with any returned
	t0, t1       time.Time // when the first and the last poll with receives returned
}

// sink starts the passive side of a stream: on p.B, or on the remote
// peer (which then counts nothing here).
func sink(p *Pair, n int, timeout time.Duration) (*sinkSide, error) {
	if p.remote != nil {
		if err := p.remote.start(); err != nil {
			return nil, err
		}
		return &sinkSide{resp: p.remote.responder()}, nil
	}
	return sinkOn(p.B, p.Cfg.RecvDepth, n, timeout)
}

// sinkOn keeps recvDepth receives of n bytes posted on side b.
func sinkOn(b *Side, recvDepth, n int, timeout time.Duration) (*sinkSide, error) {
	rc := newReceiver(b, n)
	if err := rc.fill(recvDepth); err != nil {
		return nil, fmt.Errorf("rdmatest: posting the passive side's receives: %w", err)
	}
	poll := NewPoller(b, 64, timeout)
	in := &sinkSide{}
	in.resp = startResponder(timeout, func(stop *atomic.Bool) error {
		for !stop.Load() {
			wcs, err := poll.Poll()
			if err != nil {
				return fmt.Errorf("rdmatest: passive side: %w", err)
			}
			if len(wcs) == 0 {
				if err := rc.flush(); err != nil {
					return err
				}
				continue
			}
			got := int64(0)
			for i := range wcs {
				if isRecv(&wcs[i]) {
					if err := rc.consumed(recvIndex(&wcs[i])); err != nil {
						return err
					}
					got++
				}
			}
			if got > 0 {
				now := time.Now()
				if in.recvs == 0 {
					in.t0, in.first = now, got
				}
				in.t1 = now
				in.recvs += got
			}
		}
		return nil
	})
	return in, nil
}
