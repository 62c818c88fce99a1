package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// The fake seam: two fake hosts (the near and the far end) joined by a
// fakeFabric that carries their datagrams and connections as Go values,
// with the faults a test asks for. No kernel is involved.

// fakeFabric is the network between the fake hosts.
type fakeFabric struct {
	mu        sync.Mutex
	nextQPN   uint32
	ud        map[uint32]chan []byte // UD QPN → its datagrams
	listeners map[uint16]chan *fakeConn

	dropUDP  bool                               // UDP 4791 blocked: datagrams vanish
	dialErr  error                              // DialCM fails with it
	noAccept bool                               // the listener never sees the request
	corrupt  func(dir byte, iter int, p []byte) // changes a message in flight ('a': near → far, 'b': far → near)
	lose     func(dir byte, iter int) bool      // a message that never arrives
	sendErr  func(dir byte, iter int) error     // a send that completes with this error
}

func newFabric() *fakeFabric {
	return &fakeFabric{nextQPN: 0x11, ud: map[uint32]chan []byte{}, listeners: map[uint16]chan *fakeConn{}}
}

func (f *fakeFabric) qpn() uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextQPN++
	return f.nextQPN
}

// fakeHost is one end's host.
type fakeHost struct {
	fab   *fakeFabric
	devs  []string
	port  PortFacts
	gids  []GIDFact
	ports int

	mu   sync.Mutex
	live map[string]int // kind → open count
	leak bool           // Close of a Conn "forgets" its QP
}

func newFakeHost(fab *fakeFabric, addr string) *fakeHost {
	v2 := verbs.GID(netip.MustParseAddr("::ffff:" + addr).As16())
	ll := verbs.GID(netip.MustParseAddr("fe80::5054:ff:fe00:201").As16())
	return &fakeHost{
		fab: fab, devs: []string{"rxe0"}, ports: 1,
		port: PortFacts{Device: "rxe0", Port: 1, State: verbs.PortActive, PhysState: "LinkUp", LinkLayer: verbs.LinkLayerEthernet,
			Netdev: "eth0", NetdevState: "up", ActiveMTU: 1024, Speed: "2.5 Gb/s", Width: 1, GIDTableLen: 1024},
		gids: []GIDFact{
			{Index: 0, GID: ll, Type: verbs.GIDTypeRoCEv1, Netdev: "eth0"},
			{Index: 1, GID: ll, Type: verbs.GIDTypeRoCEv2, Netdev: "eth0"},
			{Index: 2, GID: v2, Type: verbs.GIDTypeRoCEv1, Netdev: "eth0"},
			{Index: 3, GID: v2, Type: verbs.GIDTypeRoCEv2, Netdev: "eth0"},
		},
		live: map[string]int{},
	}
}

func (h *fakeHost) opened(kind string) { h.mu.Lock(); h.live[kind]++; h.mu.Unlock() }
func (h *fakeHost) closed(kind string) { h.mu.Lock(); h.live[kind]--; h.mu.Unlock() }

func (h *fakeHost) Devices() ([]string, error) { return h.devs, nil }

func (h *fakeHost) Open(name string) (Device, error) {
	h.opened("device")
	return &fakeDevice{h: h, name: name}, nil
}

func (h *fakeHost) Live() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for k, n := range h.live {
		for i := range n {
			out = append(out, fmt.Sprintf("%s #%d created at fake", k, i+1))
		}
	}
	slices.Sort(out)
	return out
}

type fakeDevice struct {
	h    *fakeHost
	name string
}

func (d *fakeDevice) Name() string { return d.name }
func (d *fakeDevice) Ports() int   { return d.h.ports }
func (d *fakeDevice) Port(port int) (PortFacts, error) {
	f := d.h.port
	f.Device, f.Port = d.name, port
	return f, nil
}
func (d *fakeDevice) GIDs(int) ([]GIDFact, error) { return d.h.gids, nil }
func (d *fakeDevice) Close() error {
	d.h.closed("device")
	return nil
}

func (d *fakeDevice) Datagram(port, gidIndex, size int) (Datagram, error) {
	q := d.h.fab.qpn()
	ch := make(chan []byte, 64)
	d.h.fab.mu.Lock()
	d.h.fab.ud[q] = ch
	d.h.fab.mu.Unlock()
	d.h.opened("ud qp")
	return &fakeDatagram{d: d, qpn: q, in: ch}, nil
}

type fakeDatagram struct {
	d   *fakeDevice
	qpn uint32
	in  chan []byte
}

func (u *fakeDatagram) QPN() uint32  { return u.qpn }
func (u *fakeDatagram) QKey() uint32 { return verbs.DefaultQKey }
func (u *fakeDatagram) Send(dst verbs.GID, qpn, qkey uint32, payload []byte, _ time.Time) error {
	fab := u.d.h.fab
	if fab.dropUDP || qkey != verbs.DefaultQKey {
		return nil // it left; nobody will see it
	}
	fab.mu.Lock()
	ch := fab.ud[qpn]
	fab.mu.Unlock()
	if ch != nil {
		select {
		case ch <- slices.Clone(payload):
		default:
		}
	}
	return nil
}

func (u *fakeDatagram) Recv(p []byte, deadline time.Time) (int, error) {
	return recvUntil(u.in, p, deadline)
}

func (u *fakeDatagram) Close() error {
	u.d.h.fab.mu.Lock()
	delete(u.d.h.fab.ud, u.qpn)
	u.d.h.fab.mu.Unlock()
	u.d.h.closed("ud qp")
	return nil
}

func recvUntil(ch chan []byte, p []byte, deadline time.Time) (int, error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case b := <-ch:
		return copy(p, b), nil
	case <-t.C:
		return 0, fmt.Errorf("nothing within the deadline: %w", os.ErrDeadlineExceeded)
	}
}

func (d *fakeDevice) ListenCM(addr netip.AddrPort, size int) (CMListener, error) {
	fab := d.h.fab
	fab.mu.Lock()
	defer fab.mu.Unlock()
	if fab.listeners[addr.Port()] != nil {
		return nil, errors.New("rdma_bind_addr: address in use (EADDRINUSE)")
	}
	ch := make(chan *fakeConn, 1)
	fab.listeners[addr.Port()] = ch
	d.h.opened("cm listener")
	return &fakeListener{d: d, port: addr.Port(), ch: ch}, nil
}

func (d *fakeDevice) DialCM(dst netip.AddrPort, size int, deadline time.Time) (Conn, error) {
	fab := d.h.fab
	if fab.dialErr != nil {
		return nil, fab.dialErr
	}
	fab.mu.Lock()
	ch := fab.listeners[dst.Port()]
	fab.mu.Unlock()
	if ch == nil || fab.noAccept {
		time.Sleep(time.Until(deadline))
		return nil, fmt.Errorf("no answer to the connection request: %w", os.ErrDeadlineExceeded)
	}
	near := &fakeConn{h: d.h, dir: 'a', in: make(chan []byte, 4), local: fab.qpn()}
	far := &fakeConn{dir: 'b', in: make(chan []byte, 4), local: fab.qpn()}
	near.peer, far.peer = far, near
	d.h.opened("rc qp")
	select {
	case ch <- far:
		return near, nil
	case <-time.After(time.Until(deadline)):
		near.Close()
		return nil, fmt.Errorf("no answer to the connection request: %w", os.ErrDeadlineExceeded)
	}
}

type fakeListener struct {
	d    *fakeDevice
	port uint16
	ch   chan *fakeConn
}

func (l *fakeListener) Accept(deadline time.Time) (Conn, error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case c := <-l.ch:
		c.h = l.d.h
		l.d.h.opened("rc qp")
		return c, nil
	case <-t.C:
		return nil, fmt.Errorf("no connection request: %w", os.ErrDeadlineExceeded)
	}
}

func (l *fakeListener) Close() error {
	l.d.h.fab.mu.Lock()
	delete(l.d.h.fab.listeners, l.port)
	l.d.h.fab.mu.Unlock()
	l.d.h.closed("cm listener")
	return nil
}

type fakeConn struct {
	h      *fakeHost
	dir    byte // what this end sends: 'a' near, 'b' far
	in     chan []byte
	peer   *fakeConn
	local  uint32
	sent   int
	closed bool
}

func (c *fakeConn) QPN() uint32 { return c.local }

func (c *fakeConn) Send(p []byte, deadline time.Time) error {
	b := slices.Clone(p)
	fab, i := c.h.fab, c.sent
	c.sent++
	if fab.sendErr != nil {
		if err := fab.sendErr(c.dir, i); err != nil {
			return err
		}
	}
	if fab.lose != nil && fab.lose(c.dir, i) {
		return nil
	}
	if f := fab.corrupt; f != nil {
		f(c.dir, i, b)
	}
	select {
	case c.peer.in <- b:
		return nil
	case <-time.After(time.Until(deadline)):
		return fmt.Errorf("send queue full: %w", os.ErrDeadlineExceeded)
	}
}

func (c *fakeConn) Recv(p []byte, deadline time.Time) (int, error) {
	return recvUntil(c.in, p, deadline)
}

func (c *fakeConn) Close() error {
	if !c.closed && !c.h.leak {
		c.h.closed("rc qp")
	}
	c.closed = true
	return nil
}
