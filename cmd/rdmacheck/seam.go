package main

import (
	"net/netip"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// The seam: everything rdmacheck asks of the kernel goes through Host and
// the interfaces it returns, so that the checks and every failure message
// are tested on any machine with fake facts (fake_test.go). The real Host
// (host_verbs.go) reads verbs and sysfs.

// Host opens devices and keeps the leak accounting.
type Host interface {
	// Devices lists the RDMA devices.
	Devices() ([]string, error)
	// Open opens one device.
	Open(name string) (Device, error)
	// Live lists the verbs objects (and rdma_cm ids and channels) still
	// open, one string each (verbs.Live).
	Live() []string
}

// PortFacts is what step 1 reads of a port.
type PortFacts struct {
	Device    string
	Port      int
	State     verbs.PortState
	PhysState string // sysfs phys_state without its number, e.g. "LinkUp", "Disabled" ("" unknown)
	LinkLayer string // verbs.LinkLayerEthernet or verbs.LinkLayerInfiniBand
	// Transport is the device's: InfiniBand (also RoCE) or iWARP.
	Transport verbs.NodeTransport
	// Netdev is the network interface under a RoCE port (rxe: the one it
	// was added on; "" on InfiniBand or when sysfs does not say), and
	// NetdevState its operstate ("up", "down", "lowerlayerdown", …).
	Netdev, NetdevState string
	// QoS is the netdev's RoCE ECN, trust and PFC settings as sysfs
	// shows them (facts.QoS's text; "" on InfiniBand).
	QoS         string
	ActiveMTU   int
	Speed       string
	Width       int
	GIDTableLen int
}

// GIDFact is one set entry of a port's GID table.
type GIDFact struct {
	Index  int
	GID    verbs.GID
	Type   verbs.GIDType
	Netdev string // sysfs gid_attrs/ndevs/<index> ("" on InfiniBand)
}

// Device is an open RDMA device.
type Device interface {
	Name() string
	// Ports is the device's number of physical ports.
	Ports() int
	Port(port int) (PortFacts, error)
	// GIDs returns the set entries of a port's GID table.
	GIDs(port int) ([]GIDFact, error)
	// Datagram creates a UD QP on the port that sends with the GID at
	// gidIndex as its source and receives payloads of up to size bytes.
	Datagram(port, gidIndex, size int) (Datagram, error)
	// ListenCM listens for rdma_cm connections (RC, RDMA_PS_TCP) on addr.
	ListenCM(addr netip.AddrPort, size int) (CMListener, error)
	// DialCM connects an RC QP through rdma_cm to dst within the
	// deadline.
	DialCM(dst netip.AddrPort, size int, deadline time.Time) (Conn, error)
	// Close releases the device; everything made from it must be closed
	// first.
	Close() error
}

// Datagram is a UD QP with its receives posted.
type Datagram interface {
	QPN() uint32
	QKey() uint32
	// Send sends payload to the UD QP qpn (Q_Key qkey) behind the GID
	// dst and waits, until the deadline, for its send completion (a UD
	// send completes when it left, not when it arrived).
	Send(dst verbs.GID, qpn, qkey uint32, payload []byte, deadline time.Time) error
	// Recv waits until the deadline for the next datagram and copies its
	// payload (the GRH removed) into p; nothing before the deadline is an
	// error wrapping os.ErrDeadlineExceeded.
	Recv(p []byte, deadline time.Time) (int, error)
	Close() error
}

// CMListener is an rdma_cm listener.
type CMListener interface {
	// Accept waits until the deadline for one connection request and
	// accepts it.
	Accept(deadline time.Time) (Conn, error)
	Close() error
}

// Conn is a connected RC QP with receives posted, for SEND/RECV.
type Conn interface {
	// QPN is this end's QP number.
	QPN() uint32
	// Send sends p and waits, until the deadline, for its completion.
	Send(p []byte, deadline time.Time) error
	// Recv waits until the deadline for the next message and copies it
	// into p (an error wrapping os.ErrDeadlineExceeded when none came).
	Recv(p []byte, deadline time.Time) (int, error)
	// Close disconnects and releases everything the connection holds.
	Close() error
}
