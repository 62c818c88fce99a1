package rdmatest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// responder is the passive side of a run: a C serve loop on a thread of
// its own, or (stopFn) a remote peer's role.
type responder struct {
	run     *loopRun
	timeout time.Duration
	stopFn  func() error
	// stopped, res and err keep the first Stop's outcome.
	stopped bool
	res     verbs.LoopResult
	err     error
	mu      sync.Mutex
}

// startServe builds the passive loop of cfg and starts it on cpu.
func startServe(cfg verbs.ServeConfig, cpu int) (*responder, error) {
	l, err := verbs.NewServe(cfg)
	if err != nil {
		return nil, fmt.Errorf("rdmatest: passive side: %w", err)
	}
	r := readyLoop(l, cpu)
	r.begin()
	return &responder{run: r, timeout: cfg.Timeout}, nil
}

// recvs is how many receives the passive loop has seen so far.
func (r *responder) recvs() int64 {
	if r == nil || r.run == nil {
		return 0
	}
	return r.run.loop.Recvs()
}

// fatal ends benchmark b with err, after stopping the responder and
// adding its error, if any (the passive side often knows why).
func (r *responder) fatal(b interface {
	Helper()
	Fatal(...any)
}, err error) {
	b.Helper()
	if rerr := r.Stop(); rerr != nil {
		err = fmt.Errorf("%w (passive side: %v)", err, rerr)
	}
	b.Fatal(err)
}

// Stop ends the passive side and returns its error: the loop is stopped,
// waited for (within the timeout) and only then freed. Later calls return
// the first call's result at once.
func (r *responder) Stop() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return r.err
	}
	r.stopped = true
	if r.stopFn != nil {
		r.err = r.stopFn()
		return r.err
	}
	r.run.loop.Stop()
	if err := r.run.wait(max(r.timeout, time.Second)); err != nil {
		if errors.Is(err, verbs.ErrStopped) {
			err = nil
		}
		r.err = err
	}
	r.res = r.run.res
	if r.err != nil {
		r.err = fmt.Errorf("rdmatest: passive side: %w", r.err)
	}
	return errors.Join(r.err, r.run.loop.Close())
}

// startResponder runs work in a goroutine until stopped: the passive side
// of the one role that is still a Go loop (the echo RPC's WRITE server,
// see EchoRPC).
func startResponder(timeout time.Duration, work func(stop *atomic.Bool) error) *responder {
	var stop atomic.Bool
	done := make(chan error, 1)
	go func() { done <- work(&stop) }()
	return &responder{timeout: timeout, stopFn: func() error {
		stop.Store(true)
		select {
		case err := <-done:
			return err
		case <-time.After(timeout):
			return fmt.Errorf("rdmatest: the passive side did not stop within %v", timeout)
		}
	}}
}

// receiver keeps receive WRs posted on a side (per QP or on its SRQ) and
// reposts each one as it completes: the echo RPC client's, in Go.
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

// isRecv tells receive completions from send-side ones.
func isRecv(wc *verbs.WC) bool { return wc.Opcode&verbs.WCRecv != 0 }
