package engine

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/peerclient"
	"github.com/rdmabench/rdmabench/rdmatest/internal/prog"
	"github.com/rdmabench/rdmabench/rdmatest/internal/sizes"
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
	// MTU is the path MTU in bytes (0: the port's active MTU).
	MTU int
	// Spec describes the measurement, for a remote peer (-rdma.peer),
	// which must know which passive role to play.
	Spec *Spec
	// Own describes a pattern of one's own instead, for a remote peer:
	// side B's program and the access side A's program needs.
	Own *Own
	// msgs is a bidir stream's message count, for a remote peer's stream
	// back (oob.Stream.Msgs; Stream sets it per run).
	msgs int64
}

// Own is what a remote peer (-rdma.peer) must know of a pair of one's
// own pattern: side B's program (nil: none, the NIC serves A's WRITE,
// READ and atomics), sent to the peer with role "program", and the
// remote accesses side A's program uses on B's memory
// (prog.Spec.RemoteAccess), all the peer's memory allows.
type Own struct {
	B      *prog.Spec
	Access verbs.Access
}

func (c *PairConfig) defaults() {
	c.QPs = cmp.Or(c.QPs, 1)
	c.SlotSize = cmp.Or(c.SlotSize, 64)
	c.SendDepth = cmp.Or(c.SendDepth, 128)
	c.RecvDepth = cmp.Or(c.RecvDepth, 512)
}

// maxPairQPs bounds a pair's QPs per side (each with two slots), and
// maxPairDepth its queue depths, far above any device's: the device's own
// limits are checked by the verbs layer, naming them.
const (
	maxPairQPs   = 1 << 16
	maxPairDepth = 1 << 24
)

// check refuses a configuration (after its defaults) that could not be
// built, before anything is created: negative counts and sizes, and a
// buffer (two slots per QP) above sizes.MaxSize — the product cannot
// wrap, each factor being bounded first. The device's own limits are the verbs
// layer's to check, naming them.
func (c *PairConfig) check() error {
	var errs []error
	for _, v := range []struct {
		name   string
		v, max int
	}{
		{"QPs", c.QPs, maxPairQPs}, {"SlotSize", c.SlotSize, sizes.MaxSize}, {"SendDepth", c.SendDepth, maxPairDepth},
		{"RecvDepth", c.RecvDepth, maxPairDepth},
	} {
		if v.v < 1 || v.v > v.max {
			errs = append(errs, fmt.Errorf("rdmatest: PairConfig.%s %d is out of range 1..%d", v.name, v.v, v.max))
		}
	}
	if c.Inline < 0 || c.MTU < 0 {
		errs = append(errs, fmt.Errorf("rdmatest: PairConfig.Inline %d and MTU %d must not be negative", c.Inline, c.MTU))
	}
	if len(errs) == 0 && int64(c.QPs)*2*int64(c.SlotSize+grhBytes+63) > sizes.MaxSize {
		errs = append(errs, fmt.Errorf("rdmatest: PairConfig: %d QPs × 2 slots of %d bytes exceed %d bytes", c.QPs, c.SlotSize, sizes.MaxSize))
	}
	return errors.Join(errs...)
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
	// QKey is the UD queue key of the side's QPs and of the datagrams it
	// sends: random per pair (NewSide draws one; both sides of a pair,
	// local or remote, use the same), as perftest and rc_pingpong do, so a
	// stranger cannot guess it.
	QKey uint32

	slot      int           // bytes per slot, 64-aligned (including a UD GRH)
	depth     int           // send queue depth per QP
	recvDepth int           // receive queue depth per QP (of the SRQ with one)
	timeout   time.Duration // every wait's deadline (-rdma.timeout)
}

// Resources collects verbs objects and closes them in reverse order of
// creation.
type Resources struct{ objs []interface{ Close() error } }

// Add registers c to be closed by Close.
func (r *Resources) Add(c interface{ Close() error }) { r.objs = append(r.objs, c) }

// Close closes everything added, newest first, and returns every error.
// Calling it again does nothing.
func (r *Resources) Close() error {
	var errs []error
	for i := len(r.objs) - 1; i >= 0; i-- {
		if err := r.objs[i].Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing %T: %w", r.objs[i], err))
		}
	}
	r.objs = nil
	return errors.Join(errs...)
}

// Target is what a side knows of one remote QP: where its "in" slot is,
// how to address it.
type Target struct {
	QPN  uint32
	Addr uint64 // the remote "in" slot
	RKey uint32
	Dest verbs.UDDest // UD only
}

// Endpoints returns what the side publishes for each QP (its address for
// the connection), with starting PSNs from psnBase.
func (s *Side) Endpoints(d *Dev, psnBase int) ([]verbs.Endpoint, error) {
	var eps []verbs.Endpoint
	for i, qp := range s.QPs {
		ep, err := qp.Endpoint(d.PortNum, d.GIDEntry.Index, psn(i, psnBase))
		if err != nil {
			return nil, fmt.Errorf("rdmatest: %w", err)
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

// Targets returns the side's "in" slots as the other side addresses them.
func (s *Side) Targets() []Target {
	var ts []Target
	for i, qp := range s.QPs {
		ts = append(ts, Target{QPN: qp.QPN(), Addr: s.In(i, 1).Addr, RKey: s.MR.RKey()})
	}
	return ts
}

// Connect moves QP i of the side to RTS facing remote[i] and records
// where the remote "in" slots are (targets[i]; for UD an address handle
// to the remote GID is made). local are the side's own endpoints (for
// their PSNs); access is the remote access the QPs allow; mtu is the path
// MTU in bytes (0: the port's active MTU).
func (s *Side) Connect(d *Dev, pd *verbs.PD, res *Resources, transport verbs.Transport, local, remote []verbs.Endpoint, targets []Target, access verbs.Access, mtu int) error {
	if len(remote) != len(s.QPs) || len(targets) != len(s.QPs) {
		return fmt.Errorf("rdmatest: %d QPs, but %d remote endpoints and %d targets", len(s.QPs), len(remote), len(targets))
	}
	for i, qp := range s.QPs {
		err := qp.Connect(verbs.ConnectConfig{
			Port: d.PortNum, GIDIndex: d.GIDEntry.Index, MTU: mtu, LocalPSN: local[i].PSN, Remote: remote[i], Access: access,
			QKey: s.QKey,
		})
		if err != nil {
			return fmt.Errorf("rdmatest: connecting QP %#x to %#x: %w", local[i].QPN, remote[i].QPN, err)
		}
		t := targets[i]
		if transport == verbs.TransportUD {
			ah, err := pd.NewAH(verbs.AHConfig{Port: d.PortNum, GIDIndex: d.GIDEntry.Index, GID: remote[i].GID, LID: remote[i].LID})
			if err != nil {
				return fmt.Errorf("rdmatest: address handle: %w", err)
			}
			res.Add(ah)
			t.Dest = ah.Dest(remote[i].QPN, s.QKey)
		}
		s.Peer = append(s.Peer, t)
	}
	return nil
}

// NewSide creates one side: a CQ (with a completion channel in event
// mode), the message memory registered with access, an SRQ when srq, and
// the QPs. Everything goes into res.
func NewSide(d *Dev, pd *verbs.PD, res *Resources, c PairConfig, srq bool, access verbs.Access) (*Side, error) {
	c.defaults()
	s := &Side{depth: c.SendDepth, recvDepth: c.RecvDepth, timeout: d.Opts.Timeout, QKey: randomQKey()}
	s.slot = prog.SlotBytes(c.SlotSize, c.Transport == verbs.TransportUD)
	var err error
	wrap := func(what string, err error) error { return fmt.Errorf("rdmatest: %s: %w", what, err) }
	if c.Event {
		if s.Channel, err = d.NewChannel(); err != nil {
			return nil, wrap("completion channel", err)
		}
		res.Add(s.Channel)
	}
	cqDepth := min(c.QPs*(c.SendDepth+c.RecvDepth), d.Attr().MaxCQE)
	if s.CQ, err = d.NewCQ(cqDepth, s.Channel); err != nil {
		return nil, wrap("completion queue", err)
	}
	res.Add(s.CQ)
	if s.Buf, err = verbs.AllocBuffer(2*c.QPs*s.slot, false); err != nil {
		return nil, wrap("buffer", err)
	}
	res.Add(s.Buf)
	if s.MR, err = pd.RegMR(s.Buf, access); err != nil {
		return nil, wrap("memory region", err)
	}
	res.Add(s.MR)
	if srq {
		if s.SRQ, err = pd.NewSRQ(c.RecvDepth, 1); err != nil {
			return nil, wrap("shared receive queue", err)
		}
		res.Add(s.SRQ)
	}
	for range c.QPs {
		qp, err := pd.NewQP(verbs.QPConfig{
			Transport: c.Transport, SendCQ: s.CQ, RecvCQ: s.CQ, SRQ: s.SRQ,
			MaxSendWR: c.SendDepth, MaxRecvWR: c.RecvDepth, MaxInline: c.Inline,
		})
		if err != nil {
			return nil, wrap("queue pair", err)
		}
		res.Add(qp)
		s.QPs = append(s.QPs, qp)
	}
	return s, nil
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

// Pair is two sides connected QP to QP: A, the requester the benchmark
// drives, and B, the passive side — on the same device, or, with
// -rdma.peer, B is made by a remote peer (then B is nil and its role runs
// there).
type Pair struct {
	Dev  *Dev
	PD   *verbs.PD
	A, B *Side
	Cfg  PairConfig

	res    Resources
	remote *peerclient.Session
	served *responder // the passive side Serve started (or, remote, MeasureProgram)
	// peerRecvd is what the remote peer's program received, told by its
	// Stopped (see checkDelivered).
	peerRecvd uint64
	expect    func(uint64) // sets the receives the remote Stop waits for
	// rpcResp is, against a peer serving EchoRPC over RDMA_WRITE (role
	// write-rpc), the UD side that takes the responses: built before
	// the session opens, since the Setup carries its endpoint.
	rpcResp *Side
}

// allAccess is what the requester's memory and QPs allow (a passive side
// in another process gets only what its scenario needs: see PassiveAccess).
const allAccess = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic

// NewPair creates and connects a pair; everything is released when tb
// ends. Errors fail tb. Side B is idle until something serves it: its
// memory and QPs allow every remote access (WRITE, READ, atomics), it
// has no receives posted and no loop running; the built-in families
// start its role themselves, a pattern of one's own with Serve.
func NewPair(tb testing.TB, d *Dev, cfg PairConfig) *Pair {
	tb.Helper()
	cfg.defaults()
	if err := cfg.check(); err != nil {
		fatal(tb, err)
	}
	if r := d.cmSkip(cfg.Transport); r != "" {
		skip(tb, r)
	}
	p := &Pair{Dev: d, Cfg: cfg}
	tb.Cleanup(func() {
		if err := p.close(); err != nil {
			tb.Error(err)
		}
	})
	if err := p.open(); err != nil {
		fatal(tb, err)
	}
	return p
}

func (p *Pair) open() error {
	d, cfg := p.Dev, p.Cfg
	var err error
	if p.PD, err = d.AllocPD(); err != nil {
		return fmt.Errorf("rdmatest: %w", err)
	}
	p.res.Add(p.PD)
	if p.A, err = NewSide(d, p.PD, &p.res, cfg, false, allAccess); err != nil {
		return err
	}
	epA, err := p.A.Endpoints(d, 0)
	if err != nil {
		return err
	}
	if d.Opts.Peer != "" {
		if cfg.Spec != nil && roleFor(cfg.Spec) == roleWriteRPC {
			rc := cfg
			rc.Transport, rc.QPs, rc.SRQ, rc.Event = verbs.TransportUD, 1, false, false
			if p.rpcResp, err = NewSide(d, p.PD, &p.res, rc, false, allAccess); err != nil {
				return err
			}
			p.rpcResp.QKey = p.A.QKey
		}
		return p.openRemote(epA)
	}
	if p.B, err = NewSide(d, p.PD, &p.res, cfg, cfg.SRQ, allAccess); err != nil {
		return err
	}
	p.B.QKey = p.A.QKey
	if d.UseCM() {
		return p.connectCM()
	}
	epB, err := p.B.Endpoints(d, 1)
	if err != nil {
		return err
	}
	if err := p.A.Connect(d, p.PD, &p.res, cfg.Transport, epA, epB, p.B.Targets(), allAccess, cfg.MTU); err != nil {
		return err
	}
	return p.B.Connect(d, p.PD, &p.res, cfg.Transport, epB, epA, p.A.Targets(), allAccess, cfg.MTU)
}

func (p *Pair) close() error {
	var err error
	if p.remote != nil {
		err = p.remote.Close()
	}
	return errors.Join(err, p.res.Close())
}

// psn returns a random starting packet sequence number (24 bits) for QP
// i of a side, new for every connection, as perftest and rc_pingpong do
// (lrand48() & 0xffffff): a stranger on the network cannot predict the
// PSNs of a session. The arguments (QP index, side) only document the
// call.
func psn(_, _ int) uint32 { return rand.Uint32() & 0xffffff }

// randomQKey returns a random UD queue key: non-zero (0 means the default
// to verbs) and without the top bit (a "controlled" Q_Key, which a QP may
// not use in its datagrams).
func randomQKey() uint32 { return rand.Uint32N(0x7fffffff) + 1 }
