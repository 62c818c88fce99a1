package verbs

// The connection manager (librdmacm) in "no id->qp" mode: our QPs stay
// ours (made by PD.NewQP on our own device context); rdma_cm only resolves
// the address and route and exchanges the connection messages, and the QP
// is moved through INIT, RTR and RTS with ibv_modify_qp on the attributes
// rdma_init_qp_attr gives. See ListenCM and DialCM.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// PortSpace is an rdma_cm port space (enum rdma_port_space): which
// transport the connections of a listener or a dial carry.
type PortSpace int

// Port spaces.
const (
	// PortSpaceTCP (RDMA_PS_TCP) connects RC QPs (the IB CM's REQ/REP/RTU,
	// or iWARP's MPA exchange).
	PortSpaceTCP PortSpace = 0x0106
	// PortSpaceUDP (RDMA_PS_UDP) resolves UD QPs (the IB CM's SIDR
	// exchange); the Q_Key is rdma_cm's, CMQKey.
	PortSpaceUDP PortSpace = 0x0111
)

// CMQKey is the Q_Key rdma_cm gives every UD QP of the UDP port space
// (RDMA_UDP_QKEY): a QP connected through the CM has it, and a peer's
// UDPeer.QKey is normally it.
const CMQKey = 0x01234567

// String returns "TCP", "UDP" or the number.
func (ps PortSpace) String() string {
	switch ps {
	case PortSpaceTCP:
		return "TCP"
	case PortSpaceUDP:
		return "UDP"
	}
	return fmt.Sprintf("port space %#x", int(ps))
}

// PortSpaceFor returns the port space that connects QPs of transport t:
// TCP for RC, UDP for UD. UC has none (rdma_cm cannot connect UC QPs):
// the error wraps ErrCMUC.
func PortSpaceFor(t Transport) (PortSpace, error) {
	switch t {
	case TransportRC:
		return PortSpaceTCP, nil
	case TransportUD:
		return PortSpaceUDP, nil
	case TransportUC:
		return 0, ErrCMUC
	}
	return 0, fmt.Errorf("verbs: rdma_cm: invalid transport %d", int(t))
}

func (ps PortSpace) valid() bool { return ps == PortSpaceTCP || ps == PortSpaceUDP }

// CM sentinel errors; a *CMError matches them with errors.Is.
var (
	// ErrCMRejected: the peer's CM rejected the connection
	// (RDMA_CM_EVENT_REJECTED), e.g. nobody listens on that port. On
	// iWARP a connection to a port nobody listens on can also fail in
	// rdma_connect itself with ECONNREFUSED (the MPA exchange runs over
	// TCP, whose connect the peer's kernel refused at once: siw does
	// this); that is the same answer, so it is ErrCMRejected too.
	ErrCMRejected = errors.New("verbs: rdma_cm: connection rejected")
	// ErrCMUnreachable: the address, the route or the peer could not be
	// reached (ADDR_ERROR, ROUTE_ERROR, UNREACHABLE, CONNECT_ERROR).
	ErrCMUnreachable = errors.New("verbs: rdma_cm: peer unreachable")
	// ErrCMTimedOut: a step did not finish before its deadline (ours, or
	// the CM's own: a status of ETIMEDOUT). Such an error also matches
	// os.ErrDeadlineExceeded when the deadline was ours.
	ErrCMTimedOut = errors.New("verbs: rdma_cm: timed out")
	// ErrCMWrongDevice: rdma_cm bound the address to another device (or
	// port) than the QP's: the QP cannot be connected there.
	ErrCMWrongDevice = errors.New("verbs: rdma_cm: address is on another device than the QP")
	// ErrCMUC: UC QPs cannot be connected through rdma_cm (it has no port
	// space for them).
	ErrCMUC = errors.New("verbs: UC cannot be connected through rdma_cm")
	// ErrCMInterrupted: a listener's wait for a request was ended by its
	// Interrupt.
	ErrCMInterrupted = errors.New("verbs: rdma_cm: accept interrupted")
)

// CM events (enum rdma_cm_event_type) as they appear in CMError.Event.
var cmEventNames = [...]string{
	"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR", "CONNECT_REQUEST",
	"CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED",
	"DISCONNECTED", "DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE",
	"TIMEWAIT_EXIT",
}

const (
	cmEvAddrResolved = iota
	cmEvAddrError
	cmEvRouteResolved
	cmEvRouteError
	cmEvConnectRequest
	cmEvConnectResponse
	cmEvConnectError
	cmEvUnreachable
	cmEvRejected
	cmEvEstablished
	cmEvDisconnected
	cmEvDeviceRemoval
	cmEvMulticastJoin
	cmEvMulticastError
	cmEvAddrChange
	cmEvTimewaitExit
)

// cmEventName returns "RDMA_CM_EVENT_<NAME>" (the C enum's name).
func cmEventName(ev int) string {
	if ev >= 0 && ev < len(cmEventNames) {
		return "RDMA_CM_EVENT_" + cmEventNames[ev]
	}
	return fmt.Sprintf("RDMA_CM_EVENT %d", ev)
}

// ibRejectReasons are the IB CM's reject reasons (enum ib_cm_rej_reason),
// the status of a REJECTED event on InfiniBand and RoCE.
var ibRejectReasons = map[int]string{
	1: "no QP", 2: "no EEC", 3: "no resources", 4: "timeout", 5: "unsupported request",
	6: "invalid communication ID", 7: "invalid communication instance",
	8: "invalid service ID: nobody listens on that port", 9: "invalid transport type",
	10: "stale connection", 11: "RDC does not exist", 12: "invalid GID", 13: "invalid LID",
	14: "invalid SL", 15: "invalid traffic class", 16: "invalid hop limit", 17: "invalid packet rate",
	24: "port CM redirect", 25: "port redirect", 26: "invalid MTU",
	27: "insufficient responder resources", 28: "rejected by the peer's application",
	29: "invalid RNR retry", 30: "duplicate local communication ID", 31: "invalid class version",
	32: "invalid flow label", 33: "invalid alternate flow label",
}

// CMError is a failed connection-manager step: a librdmacm call that
// failed (Event empty, Errno set), an error event, an unexpected event, or
// a deadline that passed. Match its kind with errors.Is: ErrCMRejected,
// ErrCMUnreachable, ErrCMTimedOut, ErrCMWrongDevice, or the errno.
type CMError struct {
	Op     string         // the step, e.g. "resolve address", "connect", "accept"
	Addr   netip.AddrPort // the remote address (the local one for listen)
	Event  string         // the event, e.g. "RDMA_CM_EVENT_REJECTED"; empty when a call failed
	Status int            // the event's status: an IB CM reject reason for REJECTED on IB/RoCE, else a negative errno
	Call   string         // the librdmacm or libibverbs call that failed, e.g. "rdma_resolve_addr"
	Errno  syscall.Errno  // its errno
	Kind   error          // the sentinel it matches (ErrCMRejected, ...), or nil
	Detail string         // more words, e.g. the device names of ErrCMWrongDevice
}

// Error returns e.g. "verbs: rdma_cm connect to 192.0.2.1:7471:
// RDMA_CM_EVENT_REJECTED (status 8: invalid service ID: nobody listens on
// that port)".
func (e *CMError) Error() string {
	s := fmt.Sprintf("verbs: rdma_cm %s %s %s: ", e.Op, e.preposition(), e.Addr)
	switch {
	case e.Event != "" && e.Status != 0:
		s += fmt.Sprintf("%s (status %d: %s)", e.Event, e.Status, e.statusText())
	case e.Event != "":
		s += e.Event
	case e.Call != "":
		s += fmt.Sprintf("%s: %s (%s)", e.Call, e.Errno.Error(), errnoName(e.Errno))
	case e.Kind != nil:
		s += e.Kind.Error()
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *CMError) preposition() string {
	switch e.Op {
	case "listen", "accept":
		return "on"
	}
	return "to"
}

// statusText explains Status: an IB CM reject reason or an errno.
func (e *CMError) statusText() string {
	if e.Event == cmEventName(cmEvRejected) && e.Status > 0 {
		if s, ok := ibRejectReasons[e.Status]; ok {
			return "IB CM reason: " + s
		}
		return "IB CM reason"
	}
	n := syscall.Errno(-e.Status)
	if e.Status > 0 {
		n = syscall.Errno(e.Status)
	}
	return fmt.Sprintf("%s (%s)", n.Error(), errnoName(n))
}

// Unwrap returns the sentinel and the errno (when set).
func (e *CMError) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
		if e.Kind == ErrCMTimedOut && e.Event == "" && e.Call == "" {
			out = append(out, os.ErrDeadlineExceeded)
		}
	}
	if e.Errno != 0 {
		out = append(out, e.Errno)
	}
	return out
}

// cmEventError builds the error of an event that ends a step: its kind
// follows the event (and a status of ETIMEDOUT).
func cmEventError(op string, addr netip.AddrPort, ev, status int) *CMError {
	e := &CMError{Op: op, Addr: addr, Event: cmEventName(ev), Status: status}
	switch ev {
	case cmEvRejected:
		e.Kind = ErrCMRejected
	case cmEvAddrError, cmEvRouteError, cmEvUnreachable, cmEvConnectError:
		e.Kind = ErrCMUnreachable
	}
	if status == -int(syscall.ETIMEDOUT) {
		e.Kind = ErrCMTimedOut
	}
	return e
}

// cmCallError is a failed librdmacm/libibverbs call within a step.
func cmCallError(op string, addr netip.AddrPort, call string, n syscall.Errno) *CMError {
	if n == 0 {
		n = syscall.EIO
	}
	e := &CMError{Op: op, Addr: addr, Call: call, Errno: n}
	if call == "rdma_connect" && n == syscall.ECONNREFUSED {
		// iWARP: the peer's TCP stack refused the connection, which is
		// the peer's answer that nobody listens on that port.
		e.Kind, e.Detail = ErrCMRejected, "nobody listens on that port (iWARP: the TCP connect was refused)"
		return e
	}
	switch n {
	case syscall.ENETUNREACH, syscall.EHOSTUNREACH, syscall.EADDRNOTAVAIL, syscall.ENODEV, syscall.ECONNREFUSED:
		e.Kind = ErrCMUnreachable
	case syscall.ETIMEDOUT:
		e.Kind = ErrCMTimedOut
	}
	return e
}

// cmTimeout is our own deadline passing during a step.
func cmTimeout(op string, addr netip.AddrPort, waitingFor string) *CMError {
	return &CMError{Op: op, Addr: addr, Kind: ErrCMTimedOut, Detail: "deadline passed waiting for " + waitingFor}
}

// DefaultCMCloseTimeout bounds CMConn.Close's wait for the peer's side of
// the disconnect.
const DefaultCMCloseTimeout = 5 * time.Second

// UDPeer is the remote end of a UD "connection" as rdma_cm resolved it:
// enough for PD.NewAH(AH) and then AH.Dest(QPN, QKey).
type UDPeer struct {
	AH   AHConfig
	QPN  uint32
	QKey uint32
}

// CMListener listens for connection requests through rdma_cm (ListenCM).
type CMListener struct {
	ps        PortSpace
	addr      netip.AddrPort // with the bound port
	c         cCMListener
	interrupt atomic.Bool // Interrupt was called
}

// CMConn is one QP's connection made through rdma_cm (DialCM,
// CMListener.Accept). It owns an rdma_cm id and its event channel, not the
// QP: close it before the QP (the QP refuses to close while it is open).
type CMConn struct {
	qp     *QP
	ps     PortSpace
	local  netip.AddrPort
	remote netip.AddrPort
	peer   UDPeer // UD only
	c      cCMConn
}

// checkCMAddr validates an address for Listen (port 0 allowed) or Dial.
func checkCMAddr(op string, a netip.AddrPort, dial bool) error {
	if !a.Addr().IsValid() {
		return fmt.Errorf("verbs: rdma_cm %s: no IP address given (%q)", op, a.String())
	}
	if a.Addr().Zone() != "" {
		return fmt.Errorf("verbs: rdma_cm %s: address %s has a zone: give a global address", op, a)
	}
	if dial {
		if a.Port() == 0 {
			return fmt.Errorf("verbs: rdma_cm %s: port 0 of %s: dial a listener's port (1-65535)", op, a)
		}
		if a.Addr().IsUnspecified() {
			return fmt.Errorf("verbs: rdma_cm %s: cannot dial the unspecified address %s", op, a)
		}
	}
	return nil
}

// checkCMQP checks that q can be connected in port space ps, before any
// library call.
func checkCMQP(op string, q *QP, ps PortSpace) error {
	if q == nil {
		return fmt.Errorf("verbs: rdma_cm %s: no QP given", op)
	}
	if q.id == 0 {
		return errQPClosed
	}
	want, err := PortSpaceFor(q.transport)
	if err != nil {
		return fmt.Errorf("verbs: rdma_cm %s: QP %#x: %w", op, q.qpn, err)
	}
	if ps != 0 && want != ps {
		return fmt.Errorf("verbs: rdma_cm %s: a %s QP needs the %s port space, the listener has %s", op, q.transport, want, ps)
	}
	return nil
}

// ListenCM listens on addr in port space ps (PortSpaceTCP for RC QPs,
// PortSpaceUDP for UD). Port 0 binds an ephemeral port (Port tells it).
// An address of one RDMA device's netdev binds to that device; the
// unspecified address listens on all, and Accept then checks the device.
func ListenCM(addr netip.AddrPort, ps PortSpace) (*CMListener, error) {
	if !ps.valid() {
		return nil, fmt.Errorf("verbs: rdma_cm listen: invalid port space %#x (want %#x TCP or %#x UDP)", int(ps), int(PortSpaceTCP), int(PortSpaceUDP))
	}
	if err := checkCMAddr("listen", addr, false); err != nil {
		return nil, err
	}
	c, bound, err := cmListen(addr, ps)
	if err != nil {
		return nil, err
	}
	return &CMListener{ps: ps, addr: bound, c: c}, nil
}

// Addr returns the listening address with its bound port.
func (l *CMListener) Addr() netip.AddrPort { return l.addr }

// Port returns the bound port (the ephemeral one for port 0).
func (l *CMListener) Port() uint16 { return l.addr.Port() }

// PortSpace returns the listener's port space.
func (l *CMListener) PortSpace() PortSpace { return l.ps }

// Accept waits until deadline for the next connection request and
// connects qp to it: the request is rejected, and an error returned, when
// it arrived on another device than qp's (ErrCMWrongDevice) or qp's
// transport does not fit the port space. RC: qp is moved to RTS, the
// request accepted, and Accept returns once the CM reports the connection
// ESTABLISHED. UD: qp is moved to RTS with the CM's Q_Key (CMQKey) and
// the request answered; the requester's QPN and Q_Key come from its
// private data (DialCM sends them), its address from the request.
func (l *CMListener) Accept(qp *QP, deadline time.Time) (*CMConn, error) {
	return l.AcceptFrom(qp, 0, deadline)
}

// AcceptFrom is Accept for the request of one remote QP: requests from
// other QPs are rejected and the wait goes on until deadline. The
// requester's QPN is the one in the request's private data, which DialCM
// sends on every transport (an iWARP request carries no QPN of its own);
// an IB or RoCE RC request without it is matched by the QPN it carries,
// and one whose private data names another QPN than it carries is
// rejected. remoteQPN 0 accepts any, as Accept does.
func (l *CMListener) AcceptFrom(qp *QP, remoteQPN uint32, deadline time.Time) (*CMConn, error) {
	if err := checkCMQP("accept", qp, l.ps); err != nil {
		return nil, err
	}
	if l.c.closed() {
		return nil, closedErr("rdma_cm listener")
	}
	conn := &CMConn{qp: qp, ps: l.ps, local: l.addr}
	if err := l.c.accept(conn, remoteQPN, deadline, &l.interrupt); err != nil {
		return nil, err
	}
	return conn, nil
}

// Interrupt ends an Accept waiting for a request, within
// cmInterruptEvery, and every later one at once, with ErrCMInterrupted:
// the owner of a listener whose client left need not wait out the
// deadline. A request already being accepted finishes that step by its
// deadline. Safe from any goroutine, while an Accept runs; Close is
// still the owner's, after Accept returned.
func (l *CMListener) Interrupt() { l.interrupt.Store(true) }

// cmInterruptEvery is how often a listener's wait looks at Interrupt.
const cmInterruptEvery = 100 * time.Millisecond

// Close stops listening: requests not yet accepted are rejected, and the
// rdma_cm id and event channel are released.
func (l *CMListener) Close() error { return l.c.close() }

// DialCM connects qp to the listener at dst, every step bounded by
// deadline: address and route resolution, then for RC a connection
// (qp is moved to INIT before the request, to RTR and RTS on the reply;
// on iWARP the kernel moves it past INIT itself) and for UD a service ID
// resolution (qp is moved to RTS with the CM's Q_Key; the peer's QPN,
// Q_Key and address handle come from the reply, see UDPeer). The
// request's private data names qp's QPN (8 bytes for RC, 30 for UD), for
// AcceptFrom. A refused connection is ErrCMRejected: a REJECTED event, or
// on iWARP rdma_connect failing with ECONNREFUSED. The source
// address is chosen by the kernel's routing; it must be on qp's device
// (else ErrCMWrongDevice, before any request is sent). UC QPs are refused
// (ErrCMUC). On iWARP (siw) rdma_connect makes the TCP connection under
// MPA itself, blocking, with the calling thread's signals blocked so that
// no signal restarts it half done (issue #42): the deadline bounds the
// steps around that handshake, not the handshake.
func DialCM(dst netip.AddrPort, qp *QP, deadline time.Time) (*CMConn, error) {
	if err := checkCMAddr("connect", dst, true); err != nil {
		return nil, err
	}
	if err := checkCMQP("connect", qp, 0); err != nil {
		return nil, err
	}
	ps, _ := PortSpaceFor(qp.transport)
	conn := &CMConn{qp: qp, ps: ps, remote: dst}
	if err := cmDial(conn, deadline); err != nil {
		return nil, err
	}
	return conn, nil
}

// QP returns the connected QP.
func (c *CMConn) QP() *QP { return c.qp }

// LocalAddr returns this end's address and port.
func (c *CMConn) LocalAddr() netip.AddrPort { return c.local }

// RemoteAddr returns the other end's address and port.
func (c *CMConn) RemoteAddr() netip.AddrPort { return c.remote }

// UDPeer returns the remote UD QP (ok is false for RC).
func (c *CMConn) UDPeer() (UDPeer, bool) { return c.peer, c.ps == PortSpaceUDP }

// Disconnect starts the disconnect (rdma_disconnect) without waiting; Close
// waits for it. When both ends live in one process, call Disconnect on
// both before closing either: each end's DISCONNECTED event needs the
// other end to answer. UD has nothing to disconnect.
func (c *CMConn) Disconnect() error { return c.c.disconnect(c) }

// Close disconnects (if Disconnect was not called), waits up to
// DefaultCMCloseTimeout for the CM's DISCONNECTED event and releases the
// rdma_cm id and its event channel (also when the wait fails: the error
// then says so). The QP is left as it is (move it to ERR or close it).
func (c *CMConn) Close() error { return c.CloseDeadline(time.Now().Add(DefaultCMCloseTimeout)) }

// CloseDeadline is Close with the wait bounded by deadline.
func (c *CMConn) CloseDeadline(deadline time.Time) error { return c.c.close(c, deadline) }

// rcHello is the private data DialCM sends with an RC request: the
// requester's QPN. An InfiniBand or RoCE REQ carries the QPN, but an
// iWARP connect request (MPA) does not, so AcceptFrom matches on this on
// every transport. rdma_cm may pad private data with zeros (IB/RoCE
// deliver 56 bytes), so a longer slice is fine.
const rcHelloMagic = "rbRC"

const rcHelloLen = 4 + 4

func rcHello(qpn uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte(rcHelloMagic), qpn)
}

// parseRCHello reads rcHello's QPN; ok is false when b is not one (too
// short, another magic, or a QPN of 0 or above 24 bits).
func parseRCHello(b []byte) (qpn uint32, ok bool) {
	if len(b) < rcHelloLen || !bytes.Equal(b[:4], []byte(rcHelloMagic)) {
		return 0, false
	}
	qpn = binary.BigEndian.Uint32(b[4:])
	if qpn == 0 || qpn > 0xffffff {
		return 0, false
	}
	return qpn, true
}

// requesterQPN is the QPN a connection request names: for UD the one in
// its udHello; for RC the one in its rcHello, which must agree with the
// QPN the request itself carries where it carries one (IB and RoCE:
// reqQPN is not 0); without a hello, reqQPN (0 on iWARP). why says what
// is wrong with a request that names no QPN, a malformed one, or one its
// hello contradicts ("" when qpn is good).
func requesterQPN(ud bool, reqQPN uint32, pdata []byte) (qpn uint32, why string) {
	if ud {
		q, _, _, _, ok := parseUDHello(pdata)
		if !ok {
			return 0, fmt.Sprintf("the UD request carries no %q private data (%d bytes)", udHelloMagic, len(pdata))
		}
		return q, ""
	}
	if len(pdata) >= 4 && bytes.Equal(pdata[:4], []byte(rcHelloMagic)) {
		q, ok := parseRCHello(pdata)
		switch {
		case !ok:
			return 0, fmt.Sprintf("the RC request's %q private data is malformed (%d bytes, want %d with a QPN of 1 … 0xffffff)", rcHelloMagic, len(pdata), rcHelloLen)
		case reqQPN != 0 && q != reqQPN:
			return 0, fmt.Sprintf("the RC request names QPN %#x in its private data but carries QPN %#x", q, reqQPN)
		}
		return q, ""
	}
	if reqQPN == 0 {
		return 0, fmt.Sprintf("the RC request carries no QPN (no %q private data, and an iWARP request has none of its own)", rcHelloMagic)
	}
	return reqQPN, ""
}

// udHello is the private data DialCM sends with a UD request: the
// requester's QPN, Q_Key, LID and GID, which a SIDR request does not
// carry otherwise (Accept needs them to address its answers).
const udHelloMagic = "rbUD"

const udHelloLen = 4 + 4 + 4 + 2 + 16

func udHello(qpn, qkey uint32, lid uint16, gid GID) []byte {
	b := make([]byte, 0, udHelloLen)
	b = append(b, udHelloMagic...)
	b = binary.BigEndian.AppendUint32(b, qpn)
	b = binary.BigEndian.AppendUint32(b, qkey)
	b = binary.BigEndian.AppendUint16(b, lid)
	return append(b, gid[:]...)
}

// parseUDHello reads udHello's fields.
func parseUDHello(b []byte) (qpn, qkey uint32, lid uint16, gid GID, ok bool) {
	if len(b) < udHelloLen || !bytes.Equal(b[:4], []byte(udHelloMagic)) {
		return 0, 0, 0, GID{}, false
	}
	copy(gid[:], b[14:30])
	return binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint32(b[8:]), binary.BigEndian.Uint16(b[12:]), gid, true
}

// msUntil is the time left until deadline in whole milliseconds, at
// least 1 (a timeout argument of librdmacm or poll()).
func msUntil(deadline time.Time) int {
	ms := time.Until(deadline).Milliseconds() + 1
	return int(max(1, min(ms, math.MaxInt32)))
}

// IPv4Addr returns the IPv4 address to listen on or dial for this
// device's port with rdma_cm.
//
// A RoCE port has an IPv4-mapped GID (::ffff:a.b.c.d) for each IPv4
// address of its netdev: the first one (a RoCEv2 entry first) is the
// answer. An iWARP port has none: its GID 0 is its netdev's MAC address
// in the first 6 bytes, then zeros (siw, iw_cxgb4 and irdma all do this),
// so on an iWARP device the answer is the first IPv4 address of the
// interface with that MAC. The MAC is matched only on iWARP: a RoCE GID 0
// is a link-local address made from the MAC (fe80::, EUI-64) and an
// InfiniBand GID is a subnet prefix and a GUID, so their first 6 bytes
// are no MAC. InfiniBand ports have no answer (use the IPoIB
// interface's address).
func (d *Device) IPv4Addr(port int) (netip.Addr, error) {
	gids, err := d.GIDs(port)
	if err != nil {
		return netip.Addr{}, err
	}
	if a, ok := ipv4OfGIDs(gids); ok {
		return a, nil
	}
	if d.attr.NodeTransport != NodeTransportIWARP {
		return netip.Addr{}, fmt.Errorf("verbs: %s port %d has no IPv4-mapped GID (give its netdev an IPv4 address)", d.attr.Name, port)
	}
	ifs, err := netInterfaces()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("verbs: %s port %d: listing network interfaces: %w", d.attr.Name, port, err)
	}
	return iwarpIPv4(d.attr.Name, port, gids, ifs)
}

// netIface is what IPv4Addr reads of a network interface.
type netIface struct {
	Name  string
	MAC   net.HardwareAddr
	Addrs []netip.Prefix
}

// netInterfaces lists the host's interfaces with their addresses; a
// variable so host tests can fake it.
var netInterfaces = func() ([]netIface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]netIface, 0, len(ifs))
	for _, i := range ifs {
		addrs, err := i.Addrs()
		if err != nil {
			return nil, fmt.Errorf("addresses of %s: %w", i.Name, err)
		}
		ni := netIface{Name: i.Name, MAC: i.HardwareAddr}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				ip, ok := netip.AddrFromSlice(n.IP)
				ones, _ := n.Mask.Size()
				if ok {
					ni.Addrs = append(ni.Addrs, netip.PrefixFrom(ip.Unmap(), ones))
				}
			}
		}
		out = append(out, ni)
	}
	return out, nil
}

// iwarpIPv4 finds an iWARP port's address: the first IPv4 address of the
// interface whose MAC is the first 6 bytes of GID 0.
func iwarpIPv4(dev string, port int, gids []GIDEntry, ifs []netIface) (netip.Addr, error) {
	var g0 *GIDEntry
	for i := range gids {
		if gids[i].Index == 0 {
			g0 = &gids[i]
		}
	}
	if g0 == nil {
		return netip.Addr{}, fmt.Errorf("verbs: %s port %d (iWARP) has no GID 0 to find its netdev by", dev, port)
	}
	mac := net.HardwareAddr(g0.GID[:6])
	if bytes.Equal(mac, make([]byte, 6)) {
		return netip.Addr{}, fmt.Errorf("verbs: %s port %d (iWARP): GID 0 %s holds no MAC address to find its netdev by", dev, port, g0.GID)
	}
	for _, i := range ifs {
		if !bytes.Equal(i.MAC, mac) {
			continue
		}
		for _, a := range i.Addrs {
			if a.Addr().Is4() {
				return a.Addr(), nil
			}
		}
		return netip.Addr{}, fmt.Errorf("verbs: %s port %d (iWARP): its netdev %s (MAC %s) has no IPv4 address (give it one)", dev, port, i.Name, mac)
	}
	return netip.Addr{}, fmt.Errorf("verbs: %s port %d (iWARP): no network interface has MAC %s (GID 0's first 6 bytes)", dev, port, mac)
}

// ipv4OfGIDs returns the first IPv4-mapped GID's address, preferring a
// RoCEv2 entry.
func ipv4OfGIDs(gids []GIDEntry) (netip.Addr, bool) {
	var found netip.Addr
	for _, g := range gids {
		a := netip.AddrFrom16(g.GID)
		if !a.Is4In6() {
			continue
		}
		if g.Type == GIDTypeRoCEv2 {
			return a.Unmap(), true
		}
		if !found.IsValid() {
			found = a.Unmap()
		}
	}
	return found, found.IsValid()
}
