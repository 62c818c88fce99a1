package rdmatest

import "github.com/rdmabench/rdmabench/verbs"

// sendQueue posts one-WR messages on a QP with only every "every"-th WR
// signaled, and tracks which WRs are known complete, so that a loop can
// post without a completion to wait for each time (as perftest's latency
// loops do) and never overruns the send queue.
type sendQueue struct {
	qp      *verbs.QP
	wr      []verbs.SendWR // one WR, reused
	depth   uint64         // send queue depth
	every   uint64         // one WR in every is signaled
	posted  uint64         // WRs posted
	covered uint64         // WRs known complete
}

func newSendQueue(qp *verbs.QP, wr verbs.SendWR, depth int) *sendQueue {
	every := uint64(max(1, depth/2))
	return &sendQueue{qp: qp, wr: []verbs.SendWR{wr}, depth: uint64(depth), every: every}
}

// full tells whether the next post must first see a completion.
func (q *sendQueue) full() bool { return q.posted-q.covered >= q.depth }

// post posts the WR; the caller has made sure the queue is not full.
func (q *sendQueue) post() error {
	wr := &q.wr[0]
	wr.ID = q.posted
	if (q.posted+1)%q.every == 0 {
		wr.Flags |= verbs.FlagSignaled
	} else {
		wr.Flags &^= verbs.FlagSignaled
	}
	if err := q.qp.PostSend(q.wr); err != nil {
		return err
	}
	q.posted++
	return nil
}

// completed notes a send completion of this queue: every WR up to the
// signaled one it reports is done.
func (q *sendQueue) completed(wc *verbs.WC) { q.covered = wc.ID + 1 }

// outstanding is the number of WRs not known complete.
func (q *sendQueue) outstanding() int { return int(q.posted - q.covered) }

// handle dispatches completions: send ones update the queue, receive
// ones go to onRecv (which may be nil when none can arrive).
func (q *sendQueue) handle(wcs []verbs.WC, onRecv func(*verbs.WC)) {
	for i := range wcs {
		if isRecv(&wcs[i]) {
			if onRecv != nil {
				onRecv(&wcs[i])
			}
		} else {
			q.completed(&wcs[i])
		}
	}
}

// makeRoom returns at once when the queue has room; otherwise it waits
// (with the poller's deadline) for completions until it has.
func (q *sendQueue) makeRoom(p *Poller, onRecv func(*verbs.WC)) error {
	for q.full() {
		wcs, err := p.Wait("send completions (the send queue is full)", q.outstanding())
		if err != nil {
			return err
		}
		q.handle(wcs, onRecv)
	}
	return nil
}
