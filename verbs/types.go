package verbs

import (
	"fmt"
	"net/netip"
	"strings"
)

// DeviceInfo describes one RDMA device as listed by ibv_get_device_list.
type DeviceInfo struct {
	Name     string
	NodeGUID uint64 // host byte order
}

// AtomicCap is the device's atomic operation support (enum ibv_atomic_cap).
type AtomicCap int

// Atomic capability levels.
const (
	AtomicNone   AtomicCap = iota // no atomics
	AtomicHCA                     // atomic within this HCA only
	AtomicGlobal                  // atomic with respect to all agents (CPU too)
)

// String returns "none", "hca" or "global".
func (a AtomicCap) String() string {
	return enumString(int(a), []string{"none", "hca", "global"})
}

// DeviceAttr is the result of ibv_query_device plus a few facts found
// elsewhere (Name, Provider, MaxInline), gathered once by Open (MaxInline:
// on first use, see Device.MaxInline).
type DeviceAttr struct {
	Name      string
	Provider  string // kernel driver, see Open for the rule
	FWVersion string
	// NodeGUID and SysImageGUID are in host byte order.
	NodeGUID, SysImageGUID                uint64
	VendorID, VendorPartID, HWVer         uint32
	MaxQP, MaxQPWR, MaxSGE, MaxCQ, MaxCQE int
	MaxMR, MaxPD, MaxAH, MaxSRQ, MaxSRQWR int
	MaxSRQSGE                             int
	MaxQPRdAtom, MaxQPInitRdAtom          int
	MaxMRSize                             uint64
	AtomicCap                             AtomicCap
	PhysPortCnt                           int
	// NodeTransport is the device's transport (ibv_device.transport_type):
	// InfiniBand (also RoCE) or iWARP, whose QPs only rdma_cm can connect.
	NodeTransport NodeTransport
	// MaxInline is the largest max_inline_data an RC QP could be created with,
	// probed on first use (Device.MaxInline: libibverbs has no query for
	// it); 0 if inline is unsupported.
	MaxInline int
}

// NodeTransport is a device's transport type (enum ibv_transport_type).
type NodeTransport int

// Node transports (the values of enum ibv_transport_type).
const (
	NodeTransportUnknown     NodeTransport = -1
	NodeTransportIB          NodeTransport = 0 // InfiniBand and RoCE
	NodeTransportIWARP       NodeTransport = 1 // iWARP: QPs are connected by the kernel's iw_cm (rdma_cm)
	NodeTransportUSNIC       NodeTransport = 2
	NodeTransportUSNICUDP    NodeTransport = 3
	NodeTransportUnspecified NodeTransport = 4
)

// String returns "IB", "iWARP", "usNIC", "usNIC/UDP", "unspecified" or "unknown".
func (t NodeTransport) String() string {
	if t == NodeTransportUnknown {
		return "unknown"
	}
	return enumString(int(t), []string{"IB", "iWARP", "usNIC", "usNIC/UDP", "unspecified"})
}

// PortState is a port's logical state (enum ibv_port_state).
type PortState int

// Port states.
const (
	PortNOP PortState = iota
	PortDown
	PortInit
	PortArmed
	PortActive
	PortActiveDefer
)

// String returns "NOP", "DOWN", "INIT", "ARMED", "ACTIVE" or "ACTIVE_DEFER".
func (s PortState) String() string {
	return enumString(int(s), []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"})
}

// PortAttr is the result of ibv_query_port, converted to plain units.
type PortAttr struct {
	Num               int
	State             PortState
	MaxMTU, ActiveMTU int    // bytes: 256, 512, 1024, 2048 or 4096
	LID               uint16 // 0 on Ethernet
	LinkLayer         string // "InfiniBand" or "Ethernet" ("Unspecified" for old providers)
	// ActiveSpeed is the per-lane signalling rate, e.g. "25 Gb/s"
	// (or "code N" for a code this package does not know).
	ActiveSpeed string
	ActiveWidth int // number of lanes: 1, 2, 4, 8 or 12 (0 if unknown)
	GIDTableLen int
	MaxMsgSize  uint32 // bytes
}

// LinkLayer names.
const (
	LinkLayerInfiniBand = "InfiniBand"
	LinkLayerEthernet   = "Ethernet"
)

// ibv_port_attr.link_layer codes (IBV_LINK_LAYER_*).
const (
	linkLayerInfiniBandCode = 1
	linkLayerEthernetCode   = 2
)

func linkLayerName(code int) string {
	switch code {
	case linkLayerInfiniBandCode:
		return LinkLayerInfiniBand
	case linkLayerEthernetCode:
		return LinkLayerEthernet
	}
	return "Unspecified"
}

// speedName converts ibv_port_attr.active_speed (enum ib_port_speed) to a per-lane rate.
func speedName(code int) string {
	switch code {
	case 1:
		return "2.5 Gb/s"
	case 2:
		return "5 Gb/s"
	case 4, 8:
		return "10 Gb/s"
	case 16:
		return "14 Gb/s"
	case 32:
		return "25 Gb/s"
	case 64:
		return "50 Gb/s"
	case 128:
		return "100 Gb/s"
	}
	return fmt.Sprintf("code %d", code)
}

// widthLanes converts ibv_port_attr.active_width to a lane count (0 if unknown).
func widthLanes(code int) int {
	switch code {
	case 1:
		return 1
	case 2:
		return 4
	case 4:
		return 8
	case 8:
		return 12
	case 16:
		return 2
	}
	return 0
}

// mtuBytes converts enum ibv_mtu (1..5) to bytes (0 if unknown).
func mtuBytes(code int) int {
	if code < 1 || code > 5 {
		return 0
	}
	return 128 << code
}

// mtuCode converts a byte MTU to enum ibv_mtu, or 0 if it is not one of 256..4096.
func mtuCode(bytes int) int {
	for c := 1; c <= 5; c++ {
		if mtuBytes(c) == bytes {
			return c
		}
	}
	return 0
}

// GID is a 128-bit global identifier (union ibv_gid, network byte order).
type GID [16]byte

// String returns the IPv6 text form, e.g. "fe80::5054:ff:fe12:3456" or "::ffff:10.0.2.15".
func (g GID) String() string { return netip.AddrFrom16(g).String() }

// IsZero reports whether all bytes are zero (an unused GID table slot).
func (g GID) IsZero() bool { return g == GID{} }

// GIDType is the RoCE version / IB type of a GID table entry.
type GIDType int

// GID types (values of enum ibv_gid_type).
const (
	GIDTypeIB GIDType = iota
	GIDTypeRoCEv1
	GIDTypeRoCEv2
)

// String returns "IB", "RoCE v1" or "RoCE v2".
func (t GIDType) String() string {
	return enumString(int(t), []string{"IB", "RoCE v1", "RoCE v2"})
}

// parseGIDType parses the sysfs gid_attrs/types text ("IB/RoCE v1", "RoCE v2").
func parseGIDType(s string) (GIDType, error) {
	switch strings.TrimSpace(s) {
	case "IB/RoCE v1", "RoCE v1":
		return GIDTypeRoCEv1, nil
	case "RoCE v2":
		return GIDTypeRoCEv2, nil
	case "IB":
		return GIDTypeIB, nil
	}
	return 0, fmt.Errorf("verbs: unknown GID type %q", s)
}

// GIDEntry is one non-empty slot of a port's GID table.
type GIDEntry struct {
	Index int
	GID   GID
	Type  GIDType
}

// Access is a set of memory/QP access rights (enum ibv_access_flags).
type Access uint32

// Access flags; values equal IBV_ACCESS_*.
const (
	AccessLocalWrite   Access = 1 << 0
	AccessRemoteWrite  Access = 1 << 1
	AccessRemoteRead   Access = 1 << 2
	AccessRemoteAtomic Access = 1 << 3
)

// String returns e.g. "LOCAL_WRITE|REMOTE_READ" ("0" for none).
func (a Access) String() string {
	return flagString(uint32(a), []string{"LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ", "REMOTE_ATOMIC"})
}

// WCOpcode is the operation a work completion reports (enum ibv_wc_opcode).
type WCOpcode uint32

// Completion opcodes; values equal IBV_WC_*.
const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCCompSwap        WCOpcode = 3
	WCFetchAdd        WCOpcode = 4
	WCRecv            WCOpcode = 1 << 7
	WCRecvRDMAWithImm WCOpcode = WCRecv + 1
)

// String returns "SEND", "RDMA_WRITE", "RDMA_READ", "COMP_SWAP", "FETCH_ADD",
// "RECV" or "RECV_RDMA_WITH_IMM" ("WC_OPCODE(n)" otherwise).
func (o WCOpcode) String() string {
	switch o {
	case WCRecv:
		return "RECV"
	case WCRecvRDMAWithImm:
		return "RECV_RDMA_WITH_IMM"
	}
	if o <= WCFetchAdd {
		return [...]string{"SEND", "RDMA_WRITE", "RDMA_READ", "COMP_SWAP", "FETCH_ADD"}[o]
	}
	return fmt.Sprintf("WC_OPCODE(%d)", uint32(o))
}

// WCFlags are work completion flags (enum ibv_wc_flags).
type WCFlags uint32

// Completion flags; values equal IBV_WC_*.
const (
	WCGRH     WCFlags = 1 << 0 // a GRH is present in the first 40 bytes of the receive buffer (UD)
	WCWithImm WCFlags = 1 << 1 // Imm is valid
)

// String returns e.g. "GRH|WITH_IMM" ("0" for none).
func (f WCFlags) String() string {
	return flagString(uint32(f), []string{"GRH", "WITH_IMM"})
}

// WC is one work completion. Its layout is shared with the C shim (rb_wc in
// rb.h, checked at compile time by layout_cgo.go): do not reorder fields.
type WC struct {
	ID      uint64
	Status  WCStatus
	Opcode  WCOpcode // only valid when Status is WCSuccess
	ByteLen uint32   // received bytes (receive completions), including a UD GRH
	Imm     uint32   // immediate data in host byte order, valid when Flags has WCWithImm
	Flags   WCFlags
	QPN     uint32 // local QP number
	SrcQP   uint32 // remote QP number (UD receives)
	// VendorErr is the provider's error detail for a failed completion.
	VendorErr uint32
}

// Err returns nil for a successful completion and a *WCError otherwise.
func (wc *WC) Err() error {
	if wc.Status == WCSuccess {
		return nil
	}
	return &WCError{Status: wc.Status, WRID: wc.ID, VendorErr: wc.VendorErr, QPN: wc.QPN, Opcode: wc.Opcode}
}

// Transport is a QP transport type.
type Transport int

// Transports.
const (
	TransportRC Transport = iota // reliable connected
	TransportUC                  // unreliable connected
	TransportUD                  // unreliable datagram
)

var transportNames = []string{"RC", "UC", "UD"}

// String returns "RC", "UC" or "UD".
func (t Transport) String() string { return enumString(int(t), transportNames) }

// ParseTransport parses "RC", "UC" or "UD" (case-insensitive).
func ParseTransport(s string) (Transport, error) {
	for i, n := range transportNames {
		if strings.EqualFold(s, n) {
			return Transport(i), nil
		}
	}
	return 0, fmt.Errorf("verbs: unknown transport %q (want RC, UC or UD)", s)
}

// QPState is a queue pair state (enum ibv_qp_state).
type QPState int

// QP states.
const (
	QPSReset QPState = iota
	QPSInit
	QPSRTR
	QPSRTS
	QPSSQD
	QPSSQE
	QPSErr
	QPSUnknown
)

// String returns "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" or "UNKNOWN".
func (s QPState) String() string {
	return enumString(int(s), []string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "UNKNOWN"})
}

// QPCaps are a QP's actual capacities after creation (ibv_qp_cap); the
// provider may round the requested values up.
type QPCaps struct {
	MaxSendWR, MaxRecvWR, MaxSendSGE, MaxRecvSGE, MaxInline int
}

// Endpoint is what one side of a connection publishes to the other.
type Endpoint struct {
	QPN, PSN uint32
	GID      GID
	LID      uint16
}

// Connection defaults used when the corresponding ConnectConfig field is 0.
const (
	DefaultTimeout     = 14         // local ACK timeout: 4.096 µs * 2^14 ≈ 67 ms
	DefaultRetryCount  = 7          // transport retries
	DefaultRNRRetry    = 7          // 7 = retry forever on receiver-not-ready
	DefaultMinRNRTimer = 12         // encoded 12 = 0.64 ms
	DefaultQKey        = 0x11111111 // UD queue key (same as perftest)
	DefaultHopLimit    = 64         // GRH hop limit used for every GRH this package builds
)

// ConnectConfig holds the parameters of QP.Connect.
type ConnectConfig struct {
	Port     int    // local port number (1-based)
	GIDIndex int    // local GID table index used as the GRH source
	MTU      int    // path MTU in bytes; 0 = the port's active MTU
	LocalPSN uint32 // first PSN this side sends with
	Remote   Endpoint
	// Access is the remote access allowed on the QP (RC/UC; ignored for UD).
	Access Access
	// MaxRdAtomic is the number of outstanding RDMA reads/atomics as initiator
	// and as responder (RC only); 0 = the device maximum.
	MaxRdAtomic int
	// Timeout, RetryCount, RNRRetry and MinRNRTimer are the RC transport
	// timers in their IB encodings; 0 = DefaultTimeout, DefaultRetryCount,
	// DefaultRNRRetry, DefaultMinRNRTimer.
	Timeout, RetryCount, RNRRetry, MinRNRTimer uint8
	// QKey is the UD queue key; 0 = DefaultQKey.
	QKey uint32
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c ConnectConfig) withDefaults() ConnectConfig {
	def := func(v *uint8, d uint8) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Timeout, DefaultTimeout)
	def(&c.RetryCount, DefaultRetryCount)
	def(&c.RNRRetry, DefaultRNRRetry)
	def(&c.MinRNRTimer, DefaultMinRNRTimer)
	if c.QKey == 0 {
		c.QKey = DefaultQKey
	}
	return c
}

// AHConfig describes the destination of a UD address handle.
type AHConfig struct {
	Port     int // local port
	GIDIndex int // local GID index (GRH source)
	GID      GID // destination GID
	LID      uint16
}

// UDDest addresses a UD send: an address handle plus the remote QPN and
// Q_Key. It holds the C pointer as an integer, so a SendWR containing it has
// no Go pointers. The AH must stay open while WRs using it are outstanding.
type UDDest struct {
	ah   uintptr
	QPN  uint32
	QKey uint32
}

// SGE is a scatter/gather element (struct ibv_sge).
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// MaxWRSGE is the number of SGEs a SendWR or RecvWR can carry.
const MaxWRSGE = 4

// Opcode is a send work request opcode.
type Opcode uint8

// Send opcodes (RB_OP_* in rb.h; the shim maps them to IBV_WR_*).
const (
	OpSend Opcode = iota
	OpSendImm
	OpWrite
	OpWriteImm
	OpRead
	OpFetchAdd
	OpCmpSwap
)

// String returns "SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM",
// "RDMA_READ", "ATOMIC_FETCH_AND_ADD" or "ATOMIC_CMP_AND_SWP".
func (o Opcode) String() string {
	return enumString(int(o), []string{"SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM",
		"RDMA_READ", "ATOMIC_FETCH_AND_ADD", "ATOMIC_CMP_AND_SWP"})
}

func (o Opcode) isAtomic() bool { return o == OpFetchAdd || o == OpCmpSwap }

// RemoteAccess is the access a WR of this opcode needs to its target's
// memory region: remote write for RDMA_WRITE (with or without
// immediate), remote read for RDMA_READ, remote atomic for the atomics,
// none for SEND (its receiver's own receive buffers take the data).
func (o Opcode) RemoteAccess() Access {
	switch o {
	case OpWrite, OpWriteImm:
		return AccessRemoteWrite
	case OpRead:
		return AccessRemoteRead
	case OpFetchAdd, OpCmpSwap:
		return AccessRemoteAtomic
	}
	return 0
}

// SendFlags are send work request flags.
type SendFlags uint8

// Send flags (this package's bits, RB_FLAG_* in rb.h; the shim maps them to
// IBV_SEND_*).
const (
	FlagSignaled  SendFlags = 1 << 0 // generate a completion (implied when the QP has SignalAll)
	FlagInline    SendFlags = 1 << 1 // copy the payload into the WQE (≤ QP caps MaxInline)
	FlagSolicited SendFlags = 1 << 2 // set the solicited event bit
	FlagFence     SendFlags = 1 << 3 // wait for prior reads/atomics to finish
)

// String returns e.g. "SIGNALED|INLINE" ("0" for none).
func (f SendFlags) String() string {
	return flagString(uint32(f), []string{"SIGNALED", "INLINE", "SOLICITED", "FENCE"})
}

// SendWR is a flat send work request with no Go pointers, so a []SendWR is
// handed to C as is. Its layout is shared with the C shim (rb_send_wr in
// rb.h, checked at compile time by layout_cgo.go): do not reorder fields.
//
// For OpWrite/OpWriteImm/OpRead, RemoteAddr and RKey name the remote memory.
// For OpFetchAdd, CompareAdd is the addend; for OpCmpSwap, CompareAdd is the
// compare value and Swap the new value; the old remote value is written to
// the (single, 8-byte) local SGE. Imm is in host byte order (the shim
// converts it). UD is used on UD QPs only.
type SendWR struct {
	ID         uint64
	Op         Opcode
	Flags      SendFlags
	NumSGE     uint8
	SGE        [MaxWRSGE]SGE
	RemoteAddr uint64
	RKey       uint32
	Imm        uint32
	CompareAdd uint64
	Swap       uint64
	UD         UDDest
}

// RecvWR is a flat receive work request (layout shared with the C shim:
// rb_recv_wr in rb.h, checked at compile time by layout_cgo.go).
type RecvWR struct {
	ID     uint64
	NumSGE uint8
	SGE    [MaxWRSGE]SGE
}

// enumString returns names[v] or "TYPE(v)" style text when out of range.
func enumString(v int, names []string) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%d", v)
}

// flagString joins the names of the set bits (bit i = names[i]); unknown bits
// are shown in hex.
func flagString(v uint32, names []string) string {
	if v == 0 {
		return "0"
	}
	var parts []string
	for i, n := range names {
		if v&(1<<i) != 0 {
			parts = append(parts, n)
			v &^= 1 << i
		}
	}
	if v != 0 {
		parts = append(parts, fmt.Sprintf("%#x", v))
	}
	return strings.Join(parts, "|")
}

// ParseOpcode reads an opcode by its String name ("SEND", "RDMA_WRITE", …).
func ParseOpcode(name string) (Opcode, error) {
	for op := OpSend; op <= OpCmpSwap; op++ {
		if op.String() == name {
			return op, nil
		}
	}
	return 0, fmt.Errorf("verbs: unknown opcode %q (known: SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ, ATOMIC_FETCH_AND_ADD, ATOMIC_CMP_AND_SWP)", name)
}
