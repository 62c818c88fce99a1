package rdmatest

import (
	"fmt"
	"testing"

	"github.com/rdmabench/rdmabench/verbs"
)

// PairConfig describes two connected sides on one device.
type PairConfig struct {
	Transport verbs.Transport
	// QPs is the number of QPs per side (default 1); QP i of A is connected
	// to QP i of B.
	QPs int
	// SlotSize is the bytes of message memory per QP per direction
	// (default 64). Each QP owns an "out" slot (source of what it sends)
	// and an "in" slot (target of what it receives or what the peer
	// writes, reads or updates atomically), both 64-byte aligned.
	SlotSize int
	// SendDepth and RecvDepth are the queue depths per QP (defaults 128
	// and 512, perftest's tx and rx depth).
	SendDepth, RecvDepth int
	// Inline is the inline size to reserve on the send queues (0 = none).
	Inline int
	// SRQ gives side B a shared receive queue instead of per-QP receive
	// queues.
	SRQ bool
	// Event gives each side's CQ a completion channel (event mode).
	Event bool
}

func (c *PairConfig) defaults() {
	if c.QPs == 0 {
		c.QPs = 1
	}
	if c.SlotSize == 0 {
		c.SlotSize = 64
	}
	if c.SendDepth == 0 {
		c.SendDepth = 128
	}
	if c.RecvDepth == 0 {
		c.RecvDepth = 512
	}
}

// grhBytes is the Global Routing Header that lands in front of every UD
// receive.
const grhBytes = 40

// Side is one end of a Pair.
type Side struct {
	QPs     []*verbs.QP
	CQ      *verbs.CQ // send and receive completions of all the side's QPs
	Channel *verbs.Channel
	SRQ     *verbs.SRQ
	Buf     *verbs.Buffer
	MR      *verbs.MR
	// Peer describes the other side's QP i, as a remote host would
	// publish it.
	Peer []Target

	slot  int // bytes per slot, 64-aligned (including a UD GRH)
	depth int
}

// Target is what a side knows of one remote QP: where its "in" slot is,
// how to address it.
type Target struct {
	QPN  uint32
	Addr uint64 // the remote "in" slot
	RKey uint32
	Dest verbs.UDDest // UD only
}

// Out returns the SGE of QP i's outgoing slot, n bytes.
func (s *Side) Out(i, n int) verbs.SGE { return s.MR.SGE(2*i*s.slot, n) }

// In returns the SGE of QP i's incoming slot, n bytes.
func (s *Side) In(i, n int) verbs.SGE { return s.MR.SGE((2*i+1)*s.slot, n) }

// InBytes returns QP i's incoming slot as bytes.
func (s *Side) InBytes(i int) []byte {
	off := (2*i + 1) * s.slot
	return s.Buf.Bytes()[off : off+s.slot]
}

// OutBytes returns QP i's outgoing slot as bytes.
func (s *Side) OutBytes(i int) []byte {
	off := 2 * i * s.slot
	return s.Buf.Bytes()[off : off+s.slot]
}

// Pair is two sides connected QP to QP on one device: A, the requester
// the benchmark drives, and B, the passive side.
type Pair struct {
	Dev  *Dev
	PD   *verbs.PD
	A, B *Side
	Cfg  PairConfig
}

// allAccess is what the sides' memory and QPs allow: the passive side is
// the target of every verb.
const allAccess = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic

// NewPair creates and connects a pair; everything is released when tb
// ends. Errors fail tb.
func NewPair(tb testing.TB, d *Dev, cfg PairConfig) *Pair {
	tb.Helper()
	p, err := newPair(tb, d, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func newPair(tb testing.TB, d *Dev, cfg PairConfig) (*Pair, error) {
	cfg.defaults()
	p := &Pair{Dev: d, Cfg: cfg}
	var err error
	if p.PD, err = d.AllocPD(); err != nil {
		return nil, fmt.Errorf("rdmatest: %w", err)
	}
	Close(tb, p.PD)
	if p.A, err = p.newSide(tb, false); err != nil {
		return nil, err
	}
	if p.B, err = p.newSide(tb, cfg.SRQ); err != nil {
		return nil, err
	}
	if err := p.connect(tb); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Pair) newSide(tb testing.TB, srq bool) (*Side, error) {
	c := p.Cfg
	s := &Side{depth: c.SendDepth}
	s.slot = c.SlotSize
	if c.Transport == verbs.TransportUD {
		s.slot += grhBytes
	}
	s.slot = (s.slot + 63) &^ 63
	var err error
	wrap := func(what string, err error) error { return fmt.Errorf("rdmatest: %s: %w", what, err) }
	if c.Event {
		if s.Channel, err = p.Dev.NewChannel(); err != nil {
			return nil, wrap("completion channel", err)
		}
		Close(tb, s.Channel)
	}
	cqDepth := c.QPs * (c.SendDepth + c.RecvDepth)
	if max := p.Dev.Attr().MaxCQE; cqDepth > max {
		cqDepth = max
	}
	if s.CQ, err = p.Dev.NewCQ(cqDepth, s.Channel); err != nil {
		return nil, wrap("completion queue", err)
	}
	Close(tb, s.CQ)
	if s.Buf, err = verbs.AllocBuffer(2*c.QPs*s.slot, false); err != nil {
		return nil, wrap("buffer", err)
	}
	Close(tb, s.Buf)
	if s.MR, err = p.PD.RegMR(s.Buf, allAccess); err != nil {
		return nil, wrap("memory region", err)
	}
	Close(tb, s.MR)
	if srq {
		if s.SRQ, err = p.PD.NewSRQ(c.RecvDepth, 1); err != nil {
			return nil, wrap("shared receive queue", err)
		}
		Close(tb, s.SRQ)
	}
	for range c.QPs {
		qp, err := p.PD.NewQP(verbs.QPConfig{
			Transport: c.Transport, SendCQ: s.CQ, RecvCQ: s.CQ, SRQ: s.SRQ,
			MaxSendWR: c.SendDepth, MaxRecvWR: c.RecvDepth, MaxInline: c.Inline,
		})
		if err != nil {
			return nil, wrap("queue pair", err)
		}
		Close(tb, qp)
		s.QPs = append(s.QPs, qp)
	}
	return s, nil
}

// connect moves every QP to RTS, QP i of A facing QP i of B, and fills
// in each side's view of the other.
func (p *Pair) connect(tb testing.TB) error {
	d := p.Dev
	for i := range p.A.QPs {
		a, b := p.A.QPs[i], p.B.QPs[i]
		epA, err := a.Endpoint(d.Port, d.GID.Index, psn(i, 0))
		if err != nil {
			return fmt.Errorf("rdmatest: %w", err)
		}
		epB, err := b.Endpoint(d.Port, d.GID.Index, psn(i, 1))
		if err != nil {
			return fmt.Errorf("rdmatest: %w", err)
		}
		for _, c := range []struct {
			qp            *verbs.QP
			local, remote verbs.Endpoint
		}{{a, epA, epB}, {b, epB, epA}} {
			err := c.qp.Connect(verbs.ConnectConfig{
				Port: d.Port, GIDIndex: d.GID.Index, LocalPSN: c.local.PSN, Remote: c.remote, Access: allAccess,
			})
			if err != nil {
				return fmt.Errorf("rdmatest: connecting QP %#x to %#x: %w", c.local.QPN, c.remote.QPN, err)
			}
		}
	}
	for _, s := range []struct{ from, to *Side }{{p.A, p.B}, {p.B, p.A}} {
		for i, qp := range s.to.QPs {
			t := Target{QPN: qp.QPN(), Addr: s.to.In(i, 1).Addr, RKey: s.to.MR.RKey()}
			if p.Cfg.Transport == verbs.TransportUD {
				ah, err := p.PD.NewAH(verbs.AHConfig{Port: d.Port, GIDIndex: d.GID.Index, GID: d.GID.GID})
				if err != nil {
					return fmt.Errorf("rdmatest: address handle: %w", err)
				}
				Close(tb, ah)
				t.Dest = ah.Dest(qp.QPN(), verbs.DefaultQKey)
			}
			s.from.Peer = append(s.from.Peer, t)
		}
	}
	return nil
}

// psn gives each QP of each side its own starting packet sequence number.
func psn(i, side int) uint32 { return uint32(0x1000*(i+1) + side*0x800) }
