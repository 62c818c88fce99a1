//go:build linux && cgo

package verbs

/*
#cgo CFLAGS: -O2 -Wall -Wextra -Werror
#cgo LDFLAGS: -lrdmacm -libverbs

#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#define RB_CM_PDATA 64

// rb_cm_event is the part of a struct rdma_cm_event rdmabench uses, copied
// out before the event is acknowledged (an acknowledged event's memory,
// private data included, belongs to librdmacm again).
typedef struct {
	int event, status;
	struct rdma_cm_id *id;
	uint32_t qp_num, qkey;               // UD: the peer's QPN and Q_Key
	uint8_t responder_resources, initiator_depth, port_num, is_global, sgid_index, pad[3];
	uint16_t dlid;
	uint8_t dgid[16];
	uint8_t pdata[RB_CM_PDATA];
	int pdata_len;
} rb_cm_event;

static int rb_errno(void) { return errno ? errno : EIO; }

// rb_create_event_channel creates an event channel with a non-blocking fd
// (so that every wait is a poll() with a deadline).
static struct rdma_event_channel *rb_create_event_channel(int *err) {
	errno = 0;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	if (!ch) {
		*err = rb_errno();
		return NULL;
	}
	int fl = fcntl(ch->fd, F_GETFL);
	if (fl < 0 || fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		*err = rb_errno();
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	return ch;
}

static struct rdma_cm_id *rb_create_id(struct rdma_event_channel *ch, int ps, int *err) {
	struct rdma_cm_id *id = NULL;
	if (rdma_create_id(ch, &id, NULL, (enum rdma_port_space)ps)) {
		*err = rb_errno();
		return NULL;
	}
	return id;
}

// rb_get_cm_event gets one event without blocking (EAGAIN when there is
// none), copies it into out and acknowledges it. Returns 0 or an errno.
static int rb_get_cm_event(struct rdma_event_channel *ch, int ud, rb_cm_event *out) {
	struct rdma_cm_event *e = NULL;
	if (rdma_get_cm_event(ch, &e))
		return rb_errno();
	memset(out, 0, sizeof *out);
	out->event = e->event;
	out->status = e->status;
	out->id = e->id;
	const void *pd;
	int pl;
	if (ud) {
		const struct rdma_ud_param *u = &e->param.ud;
		out->qp_num = u->qp_num;
		out->qkey = u->qkey;
		out->port_num = u->ah_attr.port_num;
		out->is_global = u->ah_attr.is_global;
		out->sgid_index = u->ah_attr.grh.sgid_index;
		out->dlid = u->ah_attr.dlid;
		memcpy(out->dgid, u->ah_attr.grh.dgid.raw, 16);
		pd = u->private_data;
		pl = u->private_data_len;
	} else {
		const struct rdma_conn_param *c = &e->param.conn;
		out->qp_num = c->qp_num;
		out->responder_resources = c->responder_resources;
		out->initiator_depth = c->initiator_depth;
		pd = c->private_data;
		pl = c->private_data_len;
	}
	if (pd && pl > 0) {
		if (pl > RB_CM_PDATA)
			pl = RB_CM_PDATA;
		memcpy(out->pdata, pd, pl);
		out->pdata_len = pl;
	}
	return rdma_ack_cm_event(e) ? rb_errno() : 0;
}

static void rb_sockaddr(struct sockaddr_storage *ss, const uint8_t *ip, int is4, int port) {
	memset(ss, 0, sizeof *ss);
	if (is4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		s->sin_port = htons((uint16_t)port);
		memcpy(&s->sin_addr, ip, 4);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
		s->sin6_family = AF_INET6;
		s->sin6_port = htons((uint16_t)port);
		memcpy(&s->sin6_addr, ip, 16);
	}
}

// rb_addr_of reads an IPv4 or IPv6 socket address: 4 or 16 bytes into
// ip, the port in host order. Returns the address length (0: another family).
static int rb_addr_of(const struct sockaddr *sa, uint8_t *ip, int *port) {
	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
		memcpy(ip, &s->sin_addr, 4);
		*port = ntohs(s->sin_port);
		return 4;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
		memcpy(ip, &s->sin6_addr, 16);
		*port = ntohs(s->sin6_port);
		return 16;
	}
	return 0;
}

static int rb_local_addr(struct rdma_cm_id *id, uint8_t *ip, int *port) { return rb_addr_of(rdma_get_local_addr(id), ip, port); }
static int rb_peer_addr(struct rdma_cm_id *id, uint8_t *ip, int *port) { return rb_addr_of(rdma_get_peer_addr(id), ip, port); }

static int rb_bind_addr(struct rdma_cm_id *id, const uint8_t *ip, int is4, int port) {
	struct sockaddr_storage ss;
	rb_sockaddr(&ss, ip, is4, port);
	return rdma_bind_addr(id, (struct sockaddr *)&ss) ? rb_errno() : 0;
}

static int rb_resolve_addr(struct rdma_cm_id *id, const uint8_t *ip, int is4, int port, int ms) {
	struct sockaddr_storage ss;
	rb_sockaddr(&ss, ip, is4, port);
	return rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, ms) ? rb_errno() : 0;
}

// rb_cm_device reads the device rdma_cm bound id to: name (up to n-1
// bytes), node GUID (network order), transport type and port. Returns 0
// when the id is bound to no device yet.
static int rb_cm_device(struct rdma_cm_id *id, char *name, int n, uint64_t *guid, int *transport, int *port) {
	if (!id->verbs)
		return 0;
	strncpy(name, ibv_get_device_name(id->verbs->device), n - 1);
	name[n - 1] = 0;
	*guid = ibv_get_device_guid(id->verbs->device);
	*transport = id->verbs->device->transport_type;
	*port = id->port_num;
	return 1;
}

// rb_cm_gids copies the id's source and destination GIDs (for RoCE the
// kernel derives them from the IP addresses).
static void rb_cm_gids(struct rdma_cm_id *id, uint8_t *sgid, uint8_t *dgid) {
	memcpy(sgid, id->route.addr.addr.ibaddr.sgid.raw, 16);
	memcpy(dgid, id->route.addr.addr.ibaddr.dgid.raw, 16);
}

// rb_cm_modify_qp moves qp (ours, on our own device context) to state
// with the attributes rdma_init_qp_attr gives for id: at INIT, access is
// ORed into the CM's access flags; at RTR, min_rnr (when > 0) replaces
// the CM's min_rnr_timer and the responder depth is capped at
// max_dest_rd; at RTS the initiator depth is capped at max_rd. Bits 21-23
// of the mask are cleared as librdmacm's ucma_modify_qp_rtr does (old
// kernels leak RoCE-only bits there). Returns 0, or the failing call
// (1 rdma_init_qp_attr, 2 ibv_modify_qp) with *err set.
static int rb_cm_modify_qp(struct rdma_cm_id *id, struct ibv_qp *qp, int state, unsigned int access, int min_rnr,
		int max_rd, int max_dest_rd, int *err) {
	struct ibv_qp_attr a;
	int mask = 0;
	memset(&a, 0, sizeof a);
	a.qp_state = (enum ibv_qp_state)state;
	if (rdma_init_qp_attr(id, &a, &mask)) {
		*err = rb_errno();
		return 1;
	}
	mask &= ~0xe00000;
	if (state == IBV_QPS_INIT && (mask & IBV_QP_ACCESS_FLAGS))
		a.qp_access_flags |= access;
	if (state == IBV_QPS_RTR) {
		if ((mask & IBV_QP_MIN_RNR_TIMER) && min_rnr > 0)
			a.min_rnr_timer = (uint8_t)min_rnr;
		if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a.max_dest_rd_atomic > max_dest_rd)
			a.max_dest_rd_atomic = (uint8_t)max_dest_rd;
	}
	if (state == IBV_QPS_RTS && (mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.max_rd_atomic > max_rd)
		a.max_rd_atomic = (uint8_t)max_rd;
	int rc = ibv_modify_qp(qp, &a, mask);
	if (rc) {
		*err = rc < 0 ? -rc : rc;
		return 2;
	}
	return 0;
}

// rb_ud_rtr_rts moves a UD QP from INIT to RTS as librdmacm's
// ucma_init_ud_qp does (the CM has no RTR/RTS attributes for UD).
static int rb_ud_rtr_rts(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (rc)
		return rc < 0 ? -rc : rc;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return rc < 0 ? -rc : rc;
}

// rb_block_signals blocks every asynchronous signal on the calling thread
// (the synchronous ones, a fault's, stay deliverable) and saves the old
// mask in old; rb_restore_signals puts it back. Returns 0 or an errno.
static int rb_block_signals(sigset_t *old) {
	sigset_t all;
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSYS);
	return pthread_sigmask(SIG_BLOCK, &all, old);
}

static void rb_restore_signals(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

// rb_connect calls rdma_connect (accept 0) or rdma_accept (accept 1) for
// our QP number. Private data is copied by librdmacm during the call.
//
// rdma_connect runs with the thread's asynchronous signals blocked. On
// iWARP the kernel's driver may connect its TCP socket inside the call,
// blocking (siw: kernel_bindconnect, a blocking connect() bound to the
// rdma_cm id's port). A signal arriving meanwhile (the Go runtime's
// SIGURG, which asks a goroutine to yield, reaches a thread that has just
// entered this call) ends that connect with ERESTARTSYS; the half-made
// TCP connection is dropped, and since Go installs its handlers with
// SA_RESTART the write() under rdma_connect is restarted and connects
// again from the same port. That second try fails: with EADDRNOTAVAIL
// when the first handshake had completed (its 4-tuple is in TIME_WAIT),
// or with ECONNREFUSED because siw's listener died of the first one (the
// aborted child socket reports its close to the listener's endpoint,
// which siw then releases: the rdma_cm listener stays, its TCP socket is
// gone, and its Accept waits in vain). Seen on siw0 under TCG in about
// one connect in 400 to 600 (issue #42); with GODEBUG=asyncpreemptoff=1,
// or with the signals blocked here, in none of 3000. No retry could mend
// it: the listener is broken by then. A blocked signal stays pending and
// is delivered when the mask is restored. The price: on siw the TCP
// handshake inside rdma_connect cannot be cut short by DialCM's deadline
// (it could not before either: the restart went on); address resolution
// has reached the peer's host by then, which answers a SYN at once unless
// a firewall drops it.
static int rb_connect(struct rdma_cm_id *id, int accept, uint32_t qpn, int srq, int resp, int init,
		const uint8_t *pdata, int plen) {
	struct rdma_conn_param p;
	memset(&p, 0, sizeof p);
	p.qp_num = qpn;
	p.srq = (uint8_t)srq;
	p.responder_resources = (uint8_t)resp;
	p.initiator_depth = (uint8_t)init;
	p.flow_control = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	p.private_data = plen > 0 ? pdata : NULL;
	p.private_data_len = (uint8_t)plen;
	if (accept) {
		return rdma_accept(id, &p) ? rb_errno() : 0;
	}
	sigset_t old;
	int err = rb_block_signals(&old);
	if (err)
		return err;
	int rc = rdma_connect(id, &p) ? rb_errno() : 0;
	rb_restore_signals(&old);
	return rc;
}

static int rb_call(int rc) { return rc ? rb_errno() : 0; }
*/
import "C"

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmChannel is one tracked rdma_cm event channel with at most one
// tracked id on it (a listener's or a connection's).
type cmChannel struct {
	ch   *C.struct_rdma_event_channel
	id   *C.struct_rdma_cm_id
	chID uint64 // registry IDs (0: not open)
	idID uint64
	ud   bool // the id's events carry UD parameters
	// stop, when set (a listener's accept), ends a wait at once when
	// true: CMListener.Interrupt.
	stop *atomic.Bool
}

type cCMListener struct {
	cmChannel
	op   string
	addr netip.AddrPort
}

type cCMConn struct {
	cmChannel
	iwarp          bool
	disconnectSent bool
	disconnected   bool
	disconnectErr  error
}

func (l *cCMListener) closed() bool { return l.ch == nil }

// openChannel creates the event channel (tracked).
func (c *cmChannel) openChannel(op string, addr netip.AddrPort) error {
	var n C.int
	ch := C.rb_create_event_channel(&n)
	if ch == nil {
		return cmCallError(op, addr, "rdma_create_event_channel", syscall.Errno(n))
	}
	c.ch, c.chID = ch, track(KindCMChannel)
	return nil
}

// adopt makes id the channel's tracked id (using qp, when given: the QP
// then refuses to close before the id).
func (c *cmChannel) adopt(id *C.struct_rdma_cm_id, qp *QP) {
	var uses []uint64
	if qp != nil {
		uses = []uint64{qp.id}
	}
	c.id, c.idID = id, trackUses(KindCMID, uses)
}

// destroy releases the id and the channel (each once; never fails in a
// way that leaves them tracked: librdmacm frees what it can).
func (c *cmChannel) destroy() {
	if c.id != nil {
		C.rdma_destroy_id(c.id)
		untrack(c.idID)
		c.id, c.idID = nil, 0
	}
	if c.ch != nil {
		C.rdma_destroy_event_channel(c.ch)
		untrack(c.chID)
		c.ch, c.chID = nil, 0
	}
}

// next returns the next event, waiting until deadline (poll() on the
// non-blocking fd). what names the awaited event in a timeout error.
func (c *cmChannel) next(op string, addr netip.AddrPort, deadline time.Time, what string) (C.rb_cm_event, error) {
	var ev C.rb_cm_event
	for {
		rc := C.rb_get_cm_event(c.ch, boolInt(c.ud), &ev)
		if rc == 0 {
			return ev, nil
		}
		if n := syscall.Errno(rc); n != syscall.EAGAIN && n != syscall.EINTR {
			return ev, cmCallError(op, addr, "rdma_get_cm_event", n)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return ev, cmTimeout(op, addr, what)
		}
		wait := msUntil(deadline)
		if c.stop != nil {
			if c.stop.Load() {
				return ev, fmt.Errorf("verbs: rdma_cm %s on %s: waiting for %s: %w", op, addr, what, ErrCMInterrupted)
			}
			wait = min(wait, int(cmInterruptEvery.Milliseconds()))
		}
		fds := []unix.PollFd{{Fd: int32(c.ch.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, wait); err != nil && err != unix.EINTR {
			return ev, cmCallError(op, addr, "poll", err.(syscall.Errno))
		}
	}
}

// expect waits for the event want; any other event ends the step with
// an error naming it.
func (c *cmChannel) expect(op string, addr netip.AddrPort, deadline time.Time, want int) (C.rb_cm_event, error) {
	ev, err := c.next(op, addr, deadline, cmEventName(want))
	if err != nil {
		return ev, err
	}
	if int(ev.event) != want {
		e := cmEventError(op, addr, int(ev.event), int(ev.status))
		if e.Kind == nil {
			e.Detail = "expected " + cmEventName(want)
		}
		return ev, e
	}
	return ev, nil
}

// ipArgs returns the C arguments of an address.
func ipArgs(a netip.Addr) (*C.uint8_t, C.int, *[16]byte) {
	var b [16]byte
	if a.Is4() {
		v := a.As4()
		copy(b[:], v[:])
		return (*C.uint8_t)(unsafe.Pointer(&b[0])), 1, &b
	}
	b = a.As16()
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), 0, &b
}

// addrOf reads the id's local (peer false) or peer address.
func addrOf(id *C.struct_rdma_cm_id, peer bool) netip.AddrPort {
	var ip [16]byte
	var port C.int
	var n C.int
	if peer {
		n = C.rb_peer_addr(id, (*C.uint8_t)(unsafe.Pointer(&ip[0])), &port)
	} else {
		n = C.rb_local_addr(id, (*C.uint8_t)(unsafe.Pointer(&ip[0])), &port)
	}
	switch n {
	case 4:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[:4])), uint16(port))
	case 16:
		return netip.AddrPortFrom(netip.AddrFrom16(ip).Unmap(), uint16(port))
	}
	return netip.AddrPort{}
}

// cmDevice is the device rdma_cm bound an id to.
type cmDevice struct {
	name      string
	guid      uint64 // host order
	transport NodeTransport
	port      int
}

func deviceOf(id *C.struct_rdma_cm_id) (cmDevice, bool) {
	var name [64]C.char
	var guid C.uint64_t
	var transport, port C.int
	if C.rb_cm_device(id, &name[0], C.int(len(name)), &guid, &transport, &port) == 0 {
		return cmDevice{}, false
	}
	return cmDevice{name: C.GoString(&name[0]), guid: be64(C.__be64(guid)), transport: NodeTransport(transport), port: int(port)}, true
}

// checkDevice fails with ErrCMWrongDevice unless rdma_cm bound id to
// qp's device.
func checkDevice(op string, addr netip.AddrPort, id *C.struct_rdma_cm_id, qp *QP) (cmDevice, error) {
	d, ok := deviceOf(id)
	qd := qp.pd.dev.attr
	if !ok {
		return d, &CMError{Op: op, Addr: addr, Kind: ErrCMWrongDevice, Detail: "rdma_cm bound it to no device"}
	}
	if d.name != qd.Name || d.guid != qd.NodeGUID {
		return d, &CMError{Op: op, Addr: addr, Kind: ErrCMWrongDevice,
			Detail: fmt.Sprintf("rdma_cm chose device %s (node GUID %#016x) port %d, the QP is on %s (node GUID %#016x)",
				d.name, d.guid, d.port, qd.Name, qd.NodeGUID)}
	}
	return d, nil
}

// qpAccess is the access DialCM and Accept allow on an RC QP: remote
// write and read, and atomics where the device has them.
func qpAccess(a DeviceAttr) Access {
	acc := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead
	if a.AtomicCap != AtomicNone {
		acc |= AccessRemoteAtomic
	}
	return acc
}

var qpStateNames = map[QPState]string{QPSInit: "INIT", QPSRTR: "RTR", QPSRTS: "RTS"}

// modify moves qp to state with rdma_cm's attributes (rb_cm_modify_qp).
func modifyQP(op string, addr netip.AddrPort, id *C.struct_rdma_cm_id, qp *QP, state QPState) error {
	a := qp.pd.dev.attr
	var n C.int
	step := C.rb_cm_modify_qp(id, qp.c.qp, C.int(state), C.uint(qpAccess(a)), C.int(DefaultMinRNRTimer),
		C.int(min(a.MaxQPInitRdAtom, 255)), C.int(min(a.MaxQPRdAtom, 255)), &n)
	switch step {
	case 1:
		return cmCallError(op, addr, "rdma_init_qp_attr("+qpStateNames[state]+")", syscall.Errno(n))
	case 2:
		return cmCallError(op, addr, "ibv_modify_qp("+qpStateNames[state]+")", syscall.Errno(n))
	}
	return nil
}

func pdataArgs(b []byte) (*C.uint8_t, C.int) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.int(len(b))
}

func cmListen(addr netip.AddrPort, ps PortSpace) (l cCMListener, bound netip.AddrPort, err error) {
	const op = "listen"
	l.op, l.addr, l.ud = op, addr, ps == PortSpaceUDP
	if err := l.openChannel(op, addr); err != nil {
		return l, bound, err
	}
	defer func() {
		if err != nil {
			l.destroy()
		}
	}()
	var n C.int
	id := C.rb_create_id(l.ch, C.int(ps), &n)
	if id == nil {
		return l, bound, cmCallError(op, addr, "rdma_create_id", syscall.Errno(n))
	}
	l.adopt(id, nil)
	ip, is4, keep := ipArgs(addr.Addr())
	if rc := C.rb_bind_addr(id, ip, is4, C.int(addr.Port())); rc != 0 {
		return l, bound, cmCallError(op, addr, "rdma_bind_addr", syscall.Errno(rc))
	}
	_ = keep
	if rc := C.rb_call(C.rdma_listen(id, 64)); rc != 0 {
		return l, bound, cmCallError(op, addr, "rdma_listen", syscall.Errno(rc))
	}
	bound = addrOf(id, false)
	if !bound.IsValid() {
		bound = addr
	}
	bound = netip.AddrPortFrom(addr.Addr(), bound.Port())
	l.addr = bound
	return l, bound, nil
}

func (l *cCMListener) accept(conn *CMConn, from uint32, deadline time.Time, stop *atomic.Bool) error {
	l.stop = stop
	defer func() { l.stop = nil }()
	for {
		// Only requests come to a listener's channel (each accepted id
		// moves to a channel of its own): anything else ends the wait.
		ev, err := l.expect("accept", l.addr, deadline, cmEvConnectRequest)
		if err != nil {
			return err
		}
		if from != 0 {
			qpn, why := requesterQPN(l.ud, uint32(ev.qp_num), C.GoBytes(unsafe.Pointer(&ev.pdata[0]), ev.pdata_len))
			if why != "" || qpn != from {
				// Not the QP we wait for: turn it away, wait on.
				C.rdma_reject(ev.id, nil, 0)
				C.rdma_destroy_id(ev.id)
				continue
			}
		}
		return l.acceptRequest(conn, ev, deadline)
	}
}

// acceptRequest connects conn.qp to the request ev: it moves the request's
// new id to a channel of its own, checks the device, moves the QP and
// accepts; on every error the request is rejected and everything released.
func (l *cCMListener) acceptRequest(conn *CMConn, ev C.rb_cm_event, deadline time.Time) (err error) {
	const op = "accept"
	qp := conn.qp
	c := &conn.c
	c.ud = l.ud
	remote := addrOf(ev.id, true)
	conn.remote = remote
	conn.local = addrOf(ev.id, false)
	if err := c.openChannel(op, remote); err != nil {
		C.rdma_reject(ev.id, nil, 0)
		C.rdma_destroy_id(ev.id)
		return err
	}
	c.adopt(ev.id, qp)
	accepted := false
	defer func() {
		if err != nil {
			if !accepted {
				C.rdma_reject(c.id, nil, 0)
			}
			c.destroy()
		}
	}()
	if rc := C.rb_call(C.rdma_migrate_id(c.id, c.ch)); rc != 0 {
		return cmCallError(op, remote, "rdma_migrate_id", syscall.Errno(rc))
	}
	d, err := checkDevice(op, remote, c.id, qp)
	if err != nil {
		return err
	}
	c.iwarp = d.transport == NodeTransportIWARP
	if err := modifyQP(op, remote, c.id, qp, QPSInit); err != nil {
		return err
	}
	a := qp.pd.dev.attr
	if l.ud {
		pdata := C.GoBytes(unsafe.Pointer(&ev.pdata[0]), ev.pdata_len)
		qpn, qkey, lid, gid, ok := parseUDHello(pdata)
		if !ok {
			return &CMError{Op: op, Addr: remote, Kind: ErrCMRejected,
				Detail: fmt.Sprintf("the UD request carries no %q private data (%d bytes): only DialCM's requests are accepted", udHelloMagic, len(pdata))}
		}
		if rc := C.rb_ud_rtr_rts(qp.c.qp); rc != 0 {
			return cmCallError(op, remote, "ibv_modify_qp(RTR/RTS)", syscall.Errno(rc))
		}
		var sgid, dgid GID
		C.rb_cm_gids(c.id, (*C.uint8_t)(unsafe.Pointer(&sgid[0])), (*C.uint8_t)(unsafe.Pointer(&dgid[0])))
		idx, err := sgidIndex(qp.pd.dev, d.port, sgid)
		if err != nil {
			return &CMError{Op: op, Addr: remote, Detail: err.Error()}
		}
		conn.peer = UDPeer{AH: AHConfig{Port: d.port, GIDIndex: idx, GID: gid, LID: lid}, QPN: qpn, QKey: qkey}
		if rc := C.rb_connect(c.id, 1, C.uint32_t(qp.qpn), 0, 0, 0, nil, 0); rc != 0 {
			return cmCallError(op, remote, "rdma_accept", syscall.Errno(rc))
		}
		accepted = true
		return nil
	}
	if !c.iwarp {
		for _, st := range []QPState{QPSRTR, QPSRTS} {
			if err := modifyQP(op, remote, c.id, qp, st); err != nil {
				return err
			}
		}
	}
	resp := min(a.MaxQPRdAtom, 255, int(ev.initiator_depth))
	init := min(a.MaxQPInitRdAtom, 255, int(ev.responder_resources))
	if rc := C.rb_connect(c.id, 1, C.uint32_t(qp.qpn), boolInt(qp.srq), C.int(resp), C.int(init), nil, 0); rc != 0 {
		return cmCallError(op, remote, "rdma_accept", syscall.Errno(rc))
	}
	accepted = true
	if _, err := c.expect(op, remote, deadline, cmEvEstablished); err != nil {
		return err
	}
	return nil
}

// sgidIndex finds the index of gid in the port's table, preferring a
// RoCEv2 entry (rdma_cm's default type) where the GID appears twice.
func sgidIndex(d *Device, port int, gid GID) (int, error) {
	gids, err := d.GIDs(port)
	if err != nil {
		return 0, err
	}
	best := -1
	for _, g := range gids {
		if g.GID != gid {
			continue
		}
		if best < 0 || g.Type == GIDTypeRoCEv2 {
			best = g.Index
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("the CM's source GID %s is not in %s port %d's GID table", gid, d.attr.Name, port)
	}
	return best, nil
}

func (l *cCMListener) close() error {
	if l.ch == nil {
		return nil
	}
	// Reject the requests nobody accepted, so the requesters hear of it.
	for {
		var ev C.rb_cm_event
		if C.rb_get_cm_event(l.ch, boolInt(l.ud), &ev) != 0 {
			break
		}
		if int(ev.event) == cmEvConnectRequest {
			C.rdma_reject(ev.id, nil, 0)
			C.rdma_destroy_id(ev.id)
		}
	}
	l.destroy()
	return nil
}

func cmDial(conn *CMConn, deadline time.Time) (err error) {
	qp, dst := conn.qp, conn.remote
	c := &conn.c
	c.ud = conn.ps == PortSpaceUDP
	op := "resolve address"
	if err := c.openChannel(op, dst); err != nil {
		return err
	}
	established := false
	defer func() {
		if err != nil {
			if established {
				C.rdma_reject(c.id, nil, 0)
			}
			c.destroy()
		}
	}()
	var n C.int
	id := C.rb_create_id(c.ch, C.int(conn.ps), &n)
	if id == nil {
		return cmCallError(op, dst, "rdma_create_id", syscall.Errno(n))
	}
	c.adopt(id, qp)
	ip, is4, keep := ipArgs(dst.Addr())
	if rc := C.rb_resolve_addr(id, ip, is4, C.int(dst.Port()), C.int(msUntil(deadline))); rc != 0 {
		return cmCallError(op, dst, "rdma_resolve_addr", syscall.Errno(rc))
	}
	_ = keep
	if _, err := c.expect(op, dst, deadline, cmEvAddrResolved); err != nil {
		return err
	}
	d, err := checkDevice(op, dst, id, qp)
	if err != nil {
		return err
	}
	c.iwarp = d.transport == NodeTransportIWARP
	op = "resolve route"
	if rc := C.rb_call(C.rdma_resolve_route(id, C.int(msUntil(deadline)))); rc != 0 {
		return cmCallError(op, dst, "rdma_resolve_route", syscall.Errno(rc))
	}
	if _, err := c.expect(op, dst, deadline, cmEvRouteResolved); err != nil {
		return err
	}
	conn.local = addrOf(id, false)
	op = "connect"
	if err := modifyQP(op, dst, id, qp, QPSInit); err != nil {
		return err
	}
	a := qp.pd.dev.attr
	if c.ud {
		if rc := C.rb_ud_rtr_rts(qp.c.qp); rc != 0 {
			return cmCallError(op, dst, "ibv_modify_qp(RTR/RTS)", syscall.Errno(rc))
		}
		p, err := qp.pd.dev.Port(d.port)
		if err != nil {
			return &CMError{Op: op, Addr: dst, Detail: err.Error()}
		}
		var sgid, dgid GID
		C.rb_cm_gids(id, (*C.uint8_t)(unsafe.Pointer(&sgid[0])), (*C.uint8_t)(unsafe.Pointer(&dgid[0])))
		pd, pl := pdataArgs(udHello(qp.qpn, CMQKey, p.LID, sgid))
		if rc := C.rb_connect(id, 0, C.uint32_t(qp.qpn), 0, 0, 0, pd, pl); rc != 0 {
			return cmCallError(op, dst, "rdma_connect", syscall.Errno(rc))
		}
		ev, err := c.expect(op, dst, deadline, cmEvEstablished)
		if err != nil {
			return err
		}
		var g GID
		copy(g[:], C.GoBytes(unsafe.Pointer(&ev.dgid[0]), 16))
		conn.peer = UDPeer{
			AH:  AHConfig{Port: int(ev.port_num), GIDIndex: int(ev.sgid_index), GID: g, LID: uint16(ev.dlid)},
			QPN: uint32(ev.qp_num), QKey: uint32(ev.qkey),
		}
		if ev.is_global == 0 {
			conn.peer.AH.GID = GID{}
		}
		return nil
	}
	resp, init := min(a.MaxQPRdAtom, 255), min(a.MaxQPInitRdAtom, 255)
	hello := rcHello(qp.qpn)
	pd, pl := pdataArgs(hello)
	if rc := C.rb_connect(id, 0, C.uint32_t(qp.qpn), boolInt(qp.srq), C.int(resp), C.int(init), pd, pl); rc != 0 {
		return cmCallError(op, dst, "rdma_connect", syscall.Errno(rc))
	}
	want := cmEvConnectResponse
	if c.iwarp {
		want = cmEvEstablished // iw_cm moved the QP to RTS itself
	}
	if _, err := c.expect(op, dst, deadline, want); err != nil {
		return err
	}
	if c.iwarp {
		return nil
	}
	established = true // from here on a failure rejects the reply
	for _, st := range []QPState{QPSRTR, QPSRTS} {
		if err := modifyQP(op, dst, id, qp, st); err != nil {
			return err
		}
	}
	if rc := C.rb_call(C.rdma_establish(id)); rc != 0 {
		return cmCallError(op, dst, "rdma_establish", syscall.Errno(rc))
	}
	return nil
}

func (c *cCMConn) disconnect(conn *CMConn) error {
	if c.id == nil {
		return closedErr("rdma_cm connection")
	}
	if conn.ps == PortSpaceUDP || c.disconnectSent {
		return nil
	}
	c.disconnectSent = true
	if rc := C.rb_call(C.rdma_disconnect(c.id)); rc != 0 {
		// The peer may have disconnected first; Close still waits for
		// DISCONNECTED and reports this only when it does not come.
		c.disconnectErr = cmCallError("disconnect", conn.remote, "rdma_disconnect", syscall.Errno(rc))
	}
	return nil
}

func (c *cCMConn) close(conn *CMConn, deadline time.Time) error {
	if c.id == nil {
		return nil
	}
	defer c.destroy()
	if conn.ps == PortSpaceUDP {
		return nil
	}
	_ = c.disconnect(conn)
	for !c.disconnected {
		ev, err := c.next("disconnect", conn.remote, deadline, cmEventName(cmEvDisconnected))
		if err != nil {
			if c.disconnectErr != nil {
				return fmt.Errorf("%w (and %w)", err, c.disconnectErr)
			}
			return err
		}
		c.disconnected = int(ev.event) == cmEvDisconnected
	}
	return nil
}
