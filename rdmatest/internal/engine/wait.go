package engine

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// Poller polls a side's CQ into a reused array, busy-polling or, in event
// mode, sleeping on the completion channel. Every wait has a deadline.
type Poller struct {
	side    *Side
	wcs     []verbs.WC
	timeout time.Duration
	// Last is the most recent completion seen (for diagnostics).
	Last    verbs.WC
	hasLast bool
	spin    spinner
}

// yieldPeriod is how often a busy loop yields its P (see spinner).
const yieldPeriod = 2 * time.Millisecond

// spinner is in every busy loop of the measured paths: it yields the P
// (runtime.Gosched) once per yieldPeriod. Without it, a goroutine that
// spins for 10 ms without passing through the scheduler is
// force-preempted by the runtime's sysmon thread; when that catches it
// inside a cgo call (ibv_post_send is a system call on rxe), sysmon takes
// its P and hands it off, then goes back to waking every 20 µs — and on a
// machine with as many CPUs as spinning goroutines every wakeup preempts
// one of them. A yield moves the scheduler tick on, so the forced
// preemption never comes; with nothing else to run, the goroutine
// continues at once.
//
// Reading the clock on every turn would cost more than a turn of a tight
// poll loop, so the spinner reads it every "every" turns and adapts that
// count to the loop's speed: about 8 to 16 clock reads per yieldPeriod,
// whether a turn takes 50 ns (a poll) or 300 µs (a post doing a whole
// 4 KiB send in the kernel, as on rxe).
type spinner struct {
	n, every  uint32
	last, due time.Time
}

// spin counts one turn of a busy loop.
func (s *spinner) spin() {
	s.n++
	if s.n < s.every {
		return
	}
	s.n = 0
	now := time.Now()
	if s.every == 0 { // first turn
		s.every, s.last, s.due = 1, now, now.Add(yieldPeriod)
		return
	}
	switch d := now.Sub(s.last); {
	case d < yieldPeriod/16 && s.every < 1<<20:
		s.every *= 2
	case d > yieldPeriod/8 && s.every > 1:
		s.every /= 2
	}
	s.last = now
	if now.After(s.due) {
		runtime.Gosched()
		s.due = now.Add(yieldPeriod)
	}
}

// NewPoller returns a poller for s with room for n completions per poll.
func NewPoller(s *Side, n int, timeout time.Duration) *Poller {
	return &Poller{side: s, wcs: make([]verbs.WC, n), timeout: timeout}
}

// Poll returns the completions available now (possibly none). A failed
// completion is returned as an error (a *verbs.WCError).
func (p *Poller) Poll() ([]verbs.WC, error) {
	p.spin.spin()
	n, err := p.side.CQ.Poll(p.wcs)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	p.Last, p.hasLast = p.wcs[n-1], true
	for i := range p.wcs[:n] {
		if err := p.wcs[i].Err(); err != nil {
			p.Last = p.wcs[i]
			return nil, err
		}
	}
	return p.wcs[:n], nil
}

// Wait returns at least one completion, waiting at most the poller's
// timeout; what the caller waits for is named in the deadline error
// together with the QPs' states. It does not allocate unless it fails.
func (p *Poller) Wait(what string, outstanding int) ([]verbs.WC, error) {
	wcs, err := p.Poll()
	if len(wcs) > 0 || err != nil {
		return wcs, err
	}
	deadline := time.Now().Add(p.timeout)
	for spins := 1; ; spins++ {
		if p.side.Channel != nil {
			if err := p.side.CQ.Notify(false); err != nil {
				return nil, err
			}
			if wcs, err := p.Poll(); len(wcs) > 0 || err != nil {
				return wcs, err
			}
			if _, err := p.side.Channel.Wait(deadline); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					return nil, p.Stalled(what, outstanding)
				}
				return nil, err
			}
		}
		if wcs, err := p.Poll(); len(wcs) > 0 || err != nil {
			return wcs, err
		}
		// Reading the clock costs more than a poll: check the deadline
		// every 64 busy polls (every wakeup in event mode).
		if (p.side.Channel != nil || spins%64 == 0) && time.Now().After(deadline) {
			return nil, p.Stalled(what, outstanding)
		}
	}
}

// StallError is a wait that reached its deadline (see Poller.Stalled). It
// unwraps to os.ErrDeadlineExceeded, so errors.Is(err,
// os.ErrDeadlineExceeded) tells a stall from a failure, as for a
// *verbs.LoopError.
type StallError struct {
	Timeout     time.Duration // the poller's timeout
	What        string        // what was awaited
	Outstanding int           // WRs outstanding
	States      []string      // each QP's state, e.g. "QP 0x11 RTS"
	Last        string        // the last completion seen, in words
}

// Error returns e.g. "rdmatest: deadline 2s exceeded waiting for B's
// answer; 2 WRs outstanding; QP 0x11 RTS; no completion seen yet".
func (e *StallError) Error() string {
	return fmt.Sprintf("rdmatest: deadline %v exceeded waiting for %s; %d WRs outstanding; %s; %s",
		e.Timeout, e.What, e.Outstanding, strings.Join(e.States, ", "), e.Last)
}

// Unwrap returns os.ErrDeadlineExceeded.
func (e *StallError) Unwrap() error { return os.ErrDeadlineExceeded }

// Stalled builds the error for a wait that reached its deadline, a
// *StallError: what was awaited, the outstanding WR count, the QPs' states
// and the last completion status seen.
func (p *Poller) Stalled(what string, outstanding int) error {
	var states []string
	for _, qp := range p.side.QPs {
		st, err := qp.State()
		if err != nil {
			states = append(states, fmt.Sprintf("QP %#x: state unknown (%v)", qp.QPN(), err))
			continue
		}
		states = append(states, fmt.Sprintf("QP %#x %s", qp.QPN(), st))
	}
	last := "no completion seen yet"
	if p.hasLast {
		last = fmt.Sprintf("last completion: wr_id=%d %s %s", p.Last.ID, p.Last.Opcode, p.Last.Status)
	}
	return &StallError{Timeout: p.timeout, What: what, Outstanding: outstanding, States: states, Last: last}
}
