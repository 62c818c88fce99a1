package verbs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Device is an open RDMA device context (ibv_open_device).
type Device struct {
	attr DeviceAttr // MaxInline is not set here: see maxInline
	id   uint64
	c    cDevice

	// maxInline is DeviceAttr.MaxInline, probed on first use (MaxInline).
	inlineMu   sync.Mutex
	inlineDone bool
	maxInline  int

	loops loopSet // the loops in a C call on its objects (StopLoops)
}

// loopSet is a device's loops in a C call, and whether StopLoops was
// called. The loops are a list through their own links (Loop.runNext,
// runPrev): entering and leaving one, inside a benchmark's timer,
// allocates nothing.
type loopSet struct {
	mu      sync.Mutex
	stopped bool
	head    *Loop
}

// PD is a protection domain.
type PD struct {
	dev *Device
	id  uint64
	c   cPD
}

// MR is a registered memory region.
type MR struct {
	addr       uint64
	length     int
	lkey, rkey uint32
	id         uint64
	c          cMR
}

// Channel is a completion event channel; CQs created with it deliver
// events that Wait returns.
type Channel struct {
	dev *Device
	cqs map[uintptr]*CQ // by C CQ pointer
	id  uint64
	c   cChannel
}

// CQ is a completion queue.
type CQ struct {
	ch    *Channel
	depth int
	key   uintptr // C CQ pointer, the key in ch.cqs
	id    uint64
	c     cCQ
}

// QP is a queue pair.
type QP struct {
	pd        *PD
	transport Transport
	caps      QPCaps
	qpn       uint32
	srq       bool // receives come from an SRQ
	id        uint64
	c         cQP
}

// device is the device q was created on (nil for a nil QP).
func (q *QP) device() *Device {
	if q == nil || q.pd == nil {
		return nil
	}
	return q.pd.dev
}

// AH is a UD address handle.
type AH struct {
	ptr uintptr // C ibv_ah pointer, copied into UDDest
	id  uint64
	c   cAH
}

// SRQ is a shared receive queue.
type SRQ struct {
	maxWR, maxSGE int
	id            uint64
	c             cSRQ
}

var (
	errQPClosed  = fmt.Errorf("verbs: QP: %w", ErrClosed)
	errCQClosed  = fmt.Errorf("verbs: CQ: %w", ErrClosed)
	errSRQClosed = fmt.Errorf("verbs: SRQ: %w", ErrClosed)
)

func closedErr(what string) error { return fmt.Errorf("verbs: %s: %w", what, ErrClosed) }

// Open opens the named device and gathers its DeviceAttr: ibv_query_device
// and the Provider: the basename of the sysfs
// link /sys/class/infiniband/<name>/device/driver with a "_core" suffix
// removed (mlx5_core → mlx5); for software devices without that link, the
// device name without its trailing digits (rxe0 → rxe, siw0 → siw).
// MaxInline is not probed by Open but on first use (see Device.MaxInline).
func Open(name string) (*Device, error) {
	devs, err := Devices()
	if err != nil {
		return nil, err
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("verbs: opening %q: %w", name, ErrNoDevice)
	}
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = d.Name
	}
	found := false
	for _, n := range names {
		found = found || n == name
	}
	if !found {
		return nil, fmt.Errorf("verbs: device %q not found (present: %s)", name, strings.Join(names, ", "))
	}
	c, attr, err := openDevice(name)
	if err != nil {
		return nil, err
	}
	attr.Name = name
	attr.Provider = providerName(sysfsInfiniband, name)
	return &Device{attr: attr, c: c, id: track(KindDevice)}, nil
}

const sysfsInfiniband = "/sys/class/infiniband"

// providerName implements the Provider rule documented on Open.
func providerName(root, dev string) string {
	if target, err := os.Readlink(filepath.Join(root, dev, "device", "driver")); err == nil {
		return strings.TrimSuffix(filepath.Base(target), "_core")
	}
	return strings.TrimRight(dev, "0123456789")
}

// Name returns the device name, e.g. "rxe0".
func (d *Device) Name() string { return d.attr.Name }

// Attr returns the attributes gathered by Open, and MaxInline (probed by
// the first call of Attr or MaxInline; 0 if that probe fails: MaxInline
// returns its error).
func (d *Device) Attr() DeviceAttr {
	a := d.attr
	a.MaxInline, _ = d.MaxInline()
	return a
}

// MaxInline returns the largest max_inline_data an RC QP can be created
// with (DeviceAttr.MaxInline). libibverbs has no query for it: the first
// call probes it (throw-away RC QPs are created asking for 4096 bytes,
// halving until creation succeeds; the cap read back from that QP is
// reported, 0 if none succeeds) and later calls return the cached value.
// A failed probe is not cached. MaxInline is safe for concurrent use.
func (d *Device) MaxInline() (int, error) {
	d.inlineMu.Lock()
	defer d.inlineMu.Unlock()
	if d.inlineDone {
		return d.maxInline, nil
	}
	if d.id == 0 {
		return 0, closedErr("device")
	}
	n, err := d.c.probeMaxInline()
	if err != nil {
		return 0, fmt.Errorf("verbs: %s: %w", d.attr.Name, err)
	}
	d.maxInline, d.inlineDone = n, true
	return n, nil
}

// Close closes the device. It fails, naming them, while PDs, CQs or
// Channels created from it are open.
func (d *Device) Close() error {
	return release(&d.id, fmt.Sprintf("device %q", d.attr.Name), d.c.close)
}

// Port queries a port (ports are numbered from 1).
func (d *Device) Port(port int) (PortAttr, error) {
	if d.id == 0 {
		return PortAttr{}, closedErr("device")
	}
	if err := d.checkPort(port); err != nil {
		return PortAttr{}, err
	}
	return d.c.queryPort(port)
}

func (d *Device) checkPort(port int) error {
	if err := checkMin("port number", int64(port), 1, "ports are 1-based"); err != nil {
		return err
	}
	return checkMax("port number", int64(port), int64(d.attr.PhysPortCnt), "phys_port_cnt")
}

// GIDs returns the non-zero entries of a port's GID table with their types.
func (d *Device) GIDs(port int) ([]GIDEntry, error) {
	p, err := d.Port(port)
	if err != nil {
		return nil, err
	}
	return d.c.queryGIDs(d.attr.Name, port, p.GIDTableLen)
}

// BestGID picks the port's GID with PickBestGID (perftest's rule).
func (d *Device) BestGID(port int) (GIDEntry, error) {
	p, err := d.Port(port)
	if err != nil {
		return GIDEntry{}, err
	}
	gids, err := d.c.queryGIDs(d.attr.Name, port, p.GIDTableLen)
	if err != nil {
		return GIDEntry{}, err
	}
	e, err := PickBestGID(gids, p.LinkLayer)
	if err != nil {
		return GIDEntry{}, fmt.Errorf("%s port %d: %w", d.attr.Name, port, err)
	}
	return e, nil
}

// GID returns one GID table entry; the index must be below the table
// length and the entry must be non-zero.
func (d *Device) GID(port, index int) (GIDEntry, error) {
	p, err := d.Port(port)
	if err != nil {
		return GIDEntry{}, err
	}
	if err := checkMin("GID index", int64(index), 0, "GID indexes start at 0"); err != nil {
		return GIDEntry{}, err
	}
	if err := checkMax("GID index", int64(index), int64(p.GIDTableLen-1), "gid_tbl_len-1"); err != nil {
		return GIDEntry{}, err
	}
	gids, err := d.c.queryGIDs(d.attr.Name, port, p.GIDTableLen)
	if err != nil {
		return GIDEntry{}, err
	}
	for _, g := range gids {
		if g.Index == index {
			return g, nil
		}
	}
	return GIDEntry{}, fmt.Errorf("verbs: %s port %d GID index %d is empty", d.attr.Name, port, index)
}

// AllocPD allocates a protection domain.
func (d *Device) AllocPD() (*PD, error) {
	if d.id == 0 {
		return nil, closedErr("device")
	}
	c, err := d.c.allocPD()
	if err != nil {
		return nil, err
	}
	return &PD{dev: d, c: c, id: track(KindPD, d.id)}, nil
}

// NewChannel creates a completion event channel (its fd is non-blocking).
func (d *Device) NewChannel() (*Channel, error) {
	if d.id == 0 {
		return nil, closedErr("device")
	}
	c, err := d.c.createChannel()
	if err != nil {
		return nil, err
	}
	return &Channel{dev: d, c: c, cqs: map[uintptr]*CQ{}, id: track(KindChannel, d.id)}, nil
}

// NewCQ creates a completion queue of at least depth entries, delivering
// events to ch when ch is non-nil (arm it with Notify).
func (d *Device) NewCQ(depth int, ch *Channel) (*CQ, error) {
	if d.id == 0 {
		return nil, closedErr("device")
	}
	if err := validateCQDepth(depth, d.attr); err != nil {
		return nil, err
	}
	var cch *cChannel
	owners := []uint64{d.id}
	if ch != nil {
		if ch.id == 0 {
			return nil, closedErr("channel")
		}
		cch = &ch.c
		owners = append(owners, ch.id)
	}
	c, key, err := d.c.createCQ(depth, cch)
	if err != nil {
		return nil, err
	}
	cq := &CQ{ch: ch, depth: depth, key: key, c: c, id: track(KindCQ, owners...)}
	if ch != nil {
		ch.cqs[key] = cq
	}
	return cq, nil
}

// Close destroys the channel. It fails while CQs using it are open.
func (ch *Channel) Close() error {
	return release(&ch.id, "completion channel", ch.c.close)
}

// Wait blocks until one of the channel's CQs has a completion event or the
// deadline passes (the error then wraps os.ErrDeadlineExceeded). It gets and
// acknowledges the event and returns the CQ, which must be re-armed with
// Notify (and polled) by the caller.
func (ch *Channel) Wait(deadline time.Time) (*CQ, error) {
	if ch.id == 0 {
		return nil, closedErr("channel")
	}
	key, err := ch.c.wait(deadline)
	if err != nil {
		return nil, err
	}
	cq, ok := ch.cqs[key]
	if !ok {
		return nil, fmt.Errorf("verbs: completion event for an unknown CQ %#x", key)
	}
	return cq, nil
}

// Depth returns the depth the CQ was created with.
func (cq *CQ) Depth() int { return cq.depth }

// Poll moves up to len(wcs) completions into wcs and returns how many. It
// crosses into C once and does not allocate.
func (cq *CQ) Poll(wcs []WC) (int, error) {
	if cq.id == 0 {
		return 0, errCQClosed
	}
	if len(wcs) == 0 {
		return 0, nil
	}
	return cq.c.poll(wcs)
}

// Notify arms the CQ so its channel gets an event for the next completion
// (only solicited ones when solicitedOnly).
func (cq *CQ) Notify(solicitedOnly bool) error {
	if cq.id == 0 {
		return errCQClosed
	}
	return cq.c.notify(solicitedOnly)
}

// Close destroys the CQ (libibverbs fails with EBUSY while QPs use it).
func (cq *CQ) Close() error {
	return release(&cq.id, "", func() error {
		if err := cq.c.close(); err != nil {
			return err
		}
		if cq.ch != nil {
			delete(cq.ch.cqs, cq.key)
		}
		return nil
	})
}

// Device returns the device the PD belongs to.
func (pd *PD) Device() *Device { return pd.dev }

// Close deallocates the PD. It fails, naming them, while MRs, QPs, AHs or
// SRQs created from it are open.
func (pd *PD) Close() error {
	return release(&pd.id, "protection domain", pd.c.close)
}

// RegMR registers the whole buffer.
func (pd *PD) RegMR(b *Buffer, access Access) (*MR, error) {
	return pd.RegMRRange(b, 0, b.Len(), access)
}

// RegMRRange registers n bytes of b starting at offset off.
func (pd *PD) RegMRRange(b *Buffer, off, n int, access Access) (*MR, error) {
	if pd.id == 0 {
		return nil, closedErr("protection domain")
	}
	mem, err := b.slice(off, n)
	if err != nil {
		return nil, err
	}
	if err := checkMax("memory region bytes", int64(n), int64(min(pd.dev.attr.MaxMRSize, 1<<62)), "max_mr_size"); err != nil {
		return nil, err
	}
	c, lkey, rkey, err := pd.c.regMR(mem, access)
	if err != nil {
		return nil, err
	}
	return &MR{addr: b.Addr() + uint64(off), length: n, lkey: lkey, rkey: rkey, c: c, id: track(KindMR, pd.id, b.id)}, nil
}

// LKey returns the local key.
func (mr *MR) LKey() uint32 { return mr.lkey }

// RKey returns the remote key.
func (mr *MR) RKey() uint32 { return mr.rkey }

// Addr returns the registered start address.
func (mr *MR) Addr() uint64 { return mr.addr }

// Len returns the registered length in bytes.
func (mr *MR) Len() int { return mr.length }

// SGE returns an SGE for n bytes at offset off of the region (unchecked).
func (mr *MR) SGE(off, n int) SGE {
	return SGE{Addr: mr.addr + uint64(off), Length: uint32(n), LKey: mr.lkey}
}

// Close deregisters the region.
func (mr *MR) Close() error {
	return release(&mr.id, "", mr.c.close)
}

// NewQP validates cfg with QPConfig.Validate and creates the QP (in RESET).
func (pd *PD) NewQP(cfg QPConfig) (*QP, error) {
	if pd.id == 0 {
		return nil, closedErr("protection domain")
	}
	attr := pd.dev.attr
	if cfg.MaxInline > 0 { // only then does Validate read MaxInline
		n, err := pd.dev.MaxInline()
		if err != nil {
			return nil, err
		}
		attr.MaxInline = n
	}
	if err := cfg.Validate(attr); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	for _, cq := range []*CQ{cfg.SendCQ, cfg.RecvCQ} {
		if cq.id == 0 {
			return nil, errCQClosed
		}
	}
	if cfg.SRQ != nil && cfg.SRQ.id == 0 {
		return nil, errSRQClosed
	}
	c, caps, qpn, err := pd.c.createQP(cfg)
	if err != nil {
		return nil, err
	}
	return &QP{pd: pd, transport: cfg.Transport, caps: caps, qpn: qpn, srq: cfg.SRQ != nil, c: c, id: track(KindQP, pd.id)}, nil
}

// QPN returns the QP number.
func (q *QP) QPN() uint32 { return q.qpn }

// Transport returns the QP's transport.
func (q *QP) Transport() Transport { return q.transport }

// Caps returns the actual capacities reported at creation.
func (q *QP) Caps() QPCaps { return q.caps }

// State queries the QP's current state (ibv_query_qp).
func (q *QP) State() (QPState, error) {
	if q.id == 0 {
		return QPSUnknown, errQPClosed
	}
	return q.c.state()
}

// Endpoint returns what this QP publishes to its peer: its QPN, the given
// PSN, the GID at gidIndex of the port and the port's LID.
func (q *QP) Endpoint(port, gidIndex int, psn uint32) (Endpoint, error) {
	if q.id == 0 {
		return Endpoint{}, errQPClosed
	}
	p, err := q.pd.dev.Port(port)
	if err != nil {
		return Endpoint{}, err
	}
	g, err := q.pd.dev.GID(port, gidIndex)
	if err != nil {
		return Endpoint{}, err
	}
	return Endpoint{QPN: q.qpn, PSN: psn, GID: g.GID, LID: p.LID}, nil
}

// Connect moves the QP RESET→INIT→RTR→RTS. RC and UC QPs are connected to
// cfg.Remote; UD QPs only get their port and Q_Key. A GRH (hop limit
// DefaultHopLimit, source GID index cfg.GIDIndex) is used when the link layer
// is Ethernet or the remote GID is non-zero.
func (q *QP) Connect(cfg ConnectConfig) error {
	if q.id == 0 {
		return errQPClosed
	}
	p, err := q.pd.dev.Port(cfg.Port)
	if err != nil {
		return err
	}
	r, err := resolveConnect(cfg, q.transport, q.pd.dev.attr, p)
	if err != nil {
		return err
	}
	return q.c.connect(q.transport, r)
}

// ToError moves the QP to the ERR state; outstanding WRs complete with WCWRFlushErr.
func (q *QP) ToError() error {
	if q.id == 0 {
		return errQPClosed
	}
	return q.c.toError()
}

// PostSend posts the WRs as one chain with one ibv_post_send call. Each WR
// is first checked (SGE count, inline size, atomic rules; see SendWR) and a
// batch longer than the send queue is refused, each with an error naming the
// value and the limit. A provider failure is a *PostError. It does not
// allocate on success.
func (q *QP) PostSend(wrs []SendWR) error {
	if q.id == 0 {
		return errQPClosed
	}
	if len(wrs) == 0 {
		return nil
	}
	if err := checkMax("send WRs in one post", int64(len(wrs)), int64(q.caps.MaxSendWR), "QP max_send_wr"); err != nil {
		return err
	}
	for i := range wrs {
		if err := validateSendWR(&wrs[i], q.transport, &q.caps); err != nil {
			return err
		}
	}
	return q.c.postSend(wrs)
}

// PostRecv posts receive WRs as one chain with one ibv_post_recv call (not
// allowed on a QP created with an SRQ). A provider failure is a *PostError.
// It does not allocate on success.
func (q *QP) PostRecv(wrs []RecvWR) error {
	if q.id == 0 {
		return errQPClosed
	}
	if len(wrs) == 0 {
		return nil
	}
	if err := checkRecvs(wrs, q.caps.MaxRecvWR, "QP max_recv_wr", q.caps.MaxRecvSGE, "QP max_recv_sge"); err != nil {
		return err
	}
	return q.c.postRecv(wrs)
}

// Close destroys the QP.
func (q *QP) Close() error {
	return release(&q.id, "", q.c.close)
}

// NewAH creates a UD address handle for the destination in cfg. A GRH is
// used when the port's link layer is Ethernet or cfg.GID is non-zero.
func (pd *PD) NewAH(cfg AHConfig) (*AH, error) {
	if pd.id == 0 {
		return nil, closedErr("protection domain")
	}
	p, err := pd.dev.Port(cfg.Port)
	if err != nil {
		return nil, err
	}
	useGRH := p.LinkLayer == LinkLayerEthernet || !cfg.GID.IsZero()
	if useGRH {
		if err := checkMax("GID index", int64(cfg.GIDIndex), int64(p.GIDTableLen-1), "gid_tbl_len-1"); err != nil {
			return nil, err
		}
	}
	c, ptr, err := pd.c.createAH(cfg, useGRH)
	if err != nil {
		return nil, err
	}
	return &AH{ptr: ptr, c: c, id: track(KindAH, pd.id)}, nil
}

// Dest returns the UD destination (this AH, the remote QPN and Q_Key) to
// put in SendWR.UD. Use it only while the AH is open.
func (ah *AH) Dest(qpn, qkey uint32) UDDest { return UDDest{ah: ah.ptr, QPN: qpn, QKey: qkey} }

// Close destroys the address handle.
func (ah *AH) Close() error {
	return release(&ah.id, "", ah.c.close)
}

// NewSRQ creates a shared receive queue.
func (pd *PD) NewSRQ(maxWR, maxSGE int) (*SRQ, error) {
	if pd.id == 0 {
		return nil, closedErr("protection domain")
	}
	if err := validateSRQ(maxWR, maxSGE, pd.dev.attr); err != nil {
		return nil, err
	}
	c, err := pd.c.createSRQ(maxWR, maxSGE)
	if err != nil {
		return nil, err
	}
	return &SRQ{maxWR: maxWR, maxSGE: maxSGE, c: c, id: track(KindSRQ, pd.id)}, nil
}

// PostRecv posts receive WRs to the SRQ with one ibv_post_srq_recv call.
func (s *SRQ) PostRecv(wrs []RecvWR) error {
	if s.id == 0 {
		return errSRQClosed
	}
	if len(wrs) == 0 {
		return nil
	}
	if err := checkRecvs(wrs, s.maxWR, "SRQ max_wr", s.maxSGE, "SRQ max_sge"); err != nil {
		return err
	}
	return s.c.postRecv(wrs)
}

// Close destroys the SRQ (libibverbs fails with EBUSY while QPs use it).
func (s *SRQ) Close() error {
	return release(&s.id, "", s.c.close)
}

// release closes a tracked object once: it refuses while an open object
// uses it (a loop) and, while parent is named, as long as objects created
// from id are open; then it calls closeC and forgets id. A closed object
// (id 0) is left alone.
func release(id *uint64, parent string, closeC func() error) error {
	if *id == 0 {
		return nil
	}
	if err := usersError(*id); err != nil {
		return err
	}
	if parent != "" {
		if err := childrenError(parent, *id); err != nil {
			return err
		}
	}
	if err := closeC(); err != nil {
		return err
	}
	untrack(*id)
	*id = 0
	return nil
}

// checkRecvs checks a chain of receive WRs against a queue's limits:
// at most maxWR WRs, and maxSGE SGEs each; the limits' names go into
// the errors.
func checkRecvs(wrs []RecvWR, maxWR int, wrLimit string, maxSGE int, sgeLimit string) error {
	if err := checkMax("receive WRs in one post", int64(len(wrs)), int64(maxWR), wrLimit); err != nil {
		return err
	}
	for i := range wrs {
		if err := validateNumSGE(int(wrs[i].NumSGE), maxSGE, sgeLimit); err != nil {
			return err
		}
	}
	return nil
}
