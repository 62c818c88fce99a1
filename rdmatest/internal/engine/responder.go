package engine

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/peerclient"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// responder is the passive side of a run: a C serve loop on a thread of
// its own, or (stopFn) a role without one: a remote peer's (remote) or
// none.
type responder struct {
	run     *loopRun
	timeout time.Duration
	stopFn  func() error
	remote  *peerclient.Session // a remote peer's role: stopRemote asks it for what it saw
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
	if r.err != nil { // the thread could not be pinned: the loop would not run
		r.begin()
		<-r.done
		return nil, errors.Join(fmt.Errorf("rdmatest: passive side: %w", r.err), l.Close())
	}
	r.begin()
	return &responder{run: r, timeout: cfg.Timeout}, nil
}

// ended tells whether the passive loop has returned (a role without a
// loop has nothing to return): only then is its CPU free again.
func (r *responder) ended() bool {
	if r.run == nil {
		return true
	}
	select {
	case <-r.run.done:
		return true
	default:
		return false
	}
}

// recvs is how many receives the passive loop has seen so far.
func (r *responder) recvs() int64 {
	if r == nil || r.run == nil {
		return 0
	}
	return r.run.loop.Recvs()
}

// markRecvs makes a running sink time its receiver interval from the
// first receive past n (verbs.Loop.MarkRecvs).
func (r *responder) markRecvs(n int64) {
	if r != nil && r.run != nil {
		r.run.loop.MarkRecvs(n)
	}
}

// fatal ends benchmark b with err, after stopping the responder and
// adding its error, if any (the passive side often knows why).
func (r *responder) fatal(tb testing.TB, err error) {
	tb.Helper()
	if rerr := r.Stop(); rerr != nil {
		err = fmt.Errorf("%w (passive side: %v)", err, rerr)
	}
	fatal(tb, err)
}

// stopRemote ends a remote peer's role with req (oob.Stop: receives to
// wait for, the sink's receive interval) and returns what the peer
// reports; res.Recvs keeps its count. A role stopped already returns the
// first stop's error and nothing reported.
func (r *responder) stopRemote(req oob.Stop) (oob.Stopped, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return oob.Stopped{}, r.err
	}
	r.stopped = true
	st, err := r.remote.StopWith(req)
	r.res.Recvs, r.err = int64(st.Received), err
	return st, err
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

// isRecv tells receive completions from send-side ones.
func isRecv(wc *verbs.WC) bool { return wc.Opcode&verbs.WCRecv != 0 }
