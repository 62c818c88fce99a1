package oob

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rdmabench/rdmabench/rdmatest/internal/prog"
	"github.com/rdmabench/rdmabench/verbs"
)

// Limits on what a client may ask of a peer; the peer may enforce lower
// ones of its own. MaxQPs is what one frame (MaxPayload) carries with
// room to spare: a Setup or SetupOK of MaxQPs endpoints and targets with
// every field at its largest (TestMaxQPsFitAFrame).
const (
	MaxQPs     = 256
	MaxDepth   = 1 << 16
	MaxSize    = 1 << 30
	MaxNameLen = 64
	MaxMsgLen  = 1024
	MaxInline  = 4096
	// MaxQKey is the largest Q_Key a session may use: the top bit marks
	// a "controlled" Q_Key, which a QP cannot send with.
	MaxQKey = 0x7fffffff
	// NonceLen and ProofLen are the byte lengths of the handshake's
	// nonces and proofs (HMAC-SHA256).
	NonceLen = 32
	ProofLen = 32
	// MaxProgramQPs, MaxProgramSteps and MaxProgramWRs bound a Setup of
	// role "program" (its QPs, its program's steps and the WRs of all its
	// posts), below prog.Spec.Check's own bounds, so that the largest
	// such Setup fits a frame with room to spare
	// (TestMaxProgramFitsAFrame).
	MaxProgramQPs   = 16
	MaxProgramSteps = 64
	MaxProgramWRs   = 64
)

// The remote accesses a client's own pattern may ask of the peer's
// memory (Setup.Access).
const (
	AccessRemoteWrite  = "remote-write"
	AccessRemoteRead   = "remote-read"
	AccessRemoteAtomic = "remote-atomic"
)

// Hello opens a conversation.
type Hello struct {
	Version int    `json:"version"`
	Client  string `json:"client"` // free text for the peer's log
	// Nonce is the client's challenge to the peer (NonceLen random
	// bytes): the peer's HelloOK proves with it that the peer knows the
	// token too.
	Nonce []byte `json:"nonce"`
}

// Validate checks the bounds.
func (m *Hello) Validate() error {
	var errs []error
	if m.Version != Version {
		errs = append(errs, fmt.Errorf("version %d, this side speaks %d", m.Version, Version))
	}
	errs = append(errs, maxLen("client", m.Client, MaxNameLen), exactLen("nonce", m.Nonce, NonceLen))
	return errors.Join(errs...)
}

// Challenge is the peer's answer to Hello: a fresh nonce for this
// connection, which the client's Auth must cover.
type Challenge struct {
	Nonce []byte `json:"nonce"`
	// TokenRequired tells whether the peer checks the proof (a peer
	// without a token, on loopback or a trusted network, accepts any).
	TokenRequired bool `json:"token_required"`
}

// Validate checks the bounds.
func (m *Challenge) Validate() error { return exactLen("nonce", m.Nonce, NonceLen) }

// Auth proves that the client knows the peer's token without sending it:
// Proof is ClientProof(token, the peer's nonce, the client's nonce).
type Auth struct {
	Proof []byte `json:"proof"`
}

// Validate checks the bounds.
func (m *Auth) Validate() error { return exactLen("proof", m.Proof, ProofLen) }

// HelloOK describes the peer's device, for the client's configuration
// lines.
type HelloOK struct {
	Device   string `json:"device"`
	Provider string `json:"provider"`
	FW       string `json:"fw"`
	MTU      int    `json:"mtu"`
	// Proof is PeerProof(token, the client's nonce, the peer's nonce)
	// when the peer requires a token; empty otherwise.
	Proof []byte `json:"proof,omitempty"`
}

// Validate checks the bounds.
func (m *HelloOK) Validate() error {
	errs := []error{maxLen("device", m.Device, MaxNameLen), maxLen("provider", m.Provider, MaxNameLen),
		maxLen("fw", m.FW, MaxNameLen), oneOf("mtu", m.MTU, 256, 512, 1024, 2048, 4096)}
	if len(m.Proof) > 0 {
		errs = append(errs, exactLen("proof", m.Proof, ProofLen))
	}
	return errors.Join(errs...)
}

// Scenario is what the passive side must provide.
type Scenario struct {
	Op        string `json:"op"`        // SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ, ATOMIC_FETCH_AND_ADD, ATOMIC_CMP_AND_SWP
	Transport string `json:"transport"` // RC, UC, UD
	// Role is sink, echo, write-echo or target for the built-in
	// families, or program: Setup.Program runs on the peer (an own
	// pattern's side B; Op is then empty and Size 0).
	Role      string `json:"role"`
	Size      int    `json:"size"`
	QPs       int    `json:"qps"`
	SendDepth int    `json:"send_depth"`
	RecvDepth int    `json:"recv_depth"`
	SlotSize  int    `json:"slot_size"`
	Inline    int    `json:"inline"` // bytes of inline data to reserve (the peer's answers are inlined when > 0)
	SRQ       bool   `json:"srq"`
	// SignalAll (echo roles) makes the peer signal every answer and
	// await its completion, and repost receives after every message:
	// perftest's latency work (the client's -rdma.signal-all).
	SignalAll bool `json:"signal_all,omitempty"`
	// Stream (role bidir, and only there) is the peer's own stream
	// toward the client, started by Start: Msgs messages of Size with
	// Op, QD outstanding, posted Batch at a time, one WR in Signal
	// signaled (the client's bidir run's other direction). Omitted
	// otherwise, so that older peers still decode every other Setup.
	Stream *Stream `json:"stream,omitempty"`
	// RPC (role write-rpc, and only there) is the echo RPC server's
	// window: the client WRITEs each request into one of Window slots of
	// Stride bytes of the peer's request slot; the peer answers each over
	// UD (Setup.Resp). Omitted otherwise, as Stream is.
	RPC *RPC `json:"rpc,omitempty"`
}

// MaxRPCWindow bounds an echo RPC's window (Scenario.RPC.Window), as the
// client's own check does: every outstanding request needs a posted
// receive for its response.
const MaxRPCWindow = 256

// RPC is a write-rpc peer's request window (Scenario.RPC).
type RPC struct {
	Window int `json:"window"`
	Stride int `json:"stride"`
}

// validate checks the window against the request's size and the
// session's slot: stride at least the size and a multiple of 64 (the
// requests' alignment), every slot inside slot_size (the server sweeps
// and answers from Window × Stride bytes), one QP of RDMA_WRITE over RC
// or UC, and the client's response endpoint present.
func (m *RPC) validate(s *Scenario, resp *Endpoint) error {
	errs := []error{between("rpc.window", m.Window, 1, MaxRPCWindow), between("rpc.stride", m.Stride, 1, MaxSize)}
	if m.Stride < s.Size || m.Stride%64 != 0 {
		errs = append(errs, fmt.Errorf("rpc.stride %d must be a multiple of 64 and at least the size %d", m.Stride, s.Size))
	}
	if s.Size < 1 {
		errs = append(errs, fmt.Errorf("role write-rpc: size %d: a request has at least its generation byte", s.Size))
	}
	if int64(m.Window)*int64(m.Stride) > int64(s.SlotSize) {
		errs = append(errs, fmt.Errorf("rpc: window %d × stride %d exceed slot_size %d", m.Window, m.Stride, s.SlotSize))
	}
	if s.Op != "RDMA_WRITE" || (s.Transport != "RC" && s.Transport != "UC") || s.QPs != 1 {
		errs = append(errs, fmt.Errorf("role write-rpc serves RDMA_WRITE over RC or UC on 1 QP, not %s over %s on %d", trimS(s.Op), trimS(s.Transport), s.QPs))
	}
	if resp == nil {
		errs = append(errs, errors.New("role write-rpc needs the client's UD response endpoint (resp)"))
	} else {
		errs = append(errs, resp.validateAs("resp"))
	}
	return errors.Join(errs...)
}

// Stream is a bidir peer's stream (Scenario.Stream).
type Stream struct {
	Msgs   int64 `json:"msgs"`
	QD     int   `json:"qd"`
	Batch  int   `json:"batch"`
	Signal int   `json:"signal"`
}

// validate checks the stream's bounds against the session's send depth
// (its QD outstanding and the completion marker must fit), and its window
// as the stream loop will (verbs.CheckStreamWindow), so that a window
// that could stall is refused before anything is built.
func (m *Stream) validate(sendDepth int) error {
	bounds := errors.Join(
		between("stream.qd", m.QD, 1, MaxDepth-1),
		between("stream.batch", m.Batch, 1, MaxDepth),
		between("stream.signal", m.Signal, 1, MaxDepth),
	)
	errs := []error{bounds}
	if m.Msgs < 1 || m.Msgs > MaxIters {
		errs = append(errs, fmt.Errorf("stream.msgs %d out of range 1..%d", m.Msgs, MaxIters))
	}
	if m.QD+1 > sendDepth {
		errs = append(errs, fmt.Errorf("stream.qd %d needs a send_depth of at least %d, not %d", m.QD, m.QD+1, sendDepth))
	}
	if bounds == nil {
		if err := verbs.CheckStreamWindow(m.QD, m.Batch, m.Signal); err != nil {
			errs = append(errs, fmt.Errorf("stream: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Endpoint is one QP's addressing, as verbs.Endpoint.
type Endpoint struct {
	QPN uint32 `json:"qpn"`
	PSN uint32 `json:"psn"`
	GID string `json:"gid"` // IPv6 text form
	LID uint16 `json:"lid"`
}

// Target is one QP's memory on the peer (its "in" slot).
type Target struct {
	Addr uint64 `json:"addr"`
	RKey uint32 `json:"rkey"`
}

// Setup asks the peer to create the passive side of a scenario and
// connect it to the client's QPs.
type Setup struct {
	Scenario  Scenario   `json:"scenario"`
	Endpoints []Endpoint `json:"endpoints"`
	// Targets are the client's "in" slots, one per QP: where the peer's
	// answers go (write-echo writes there).
	Targets []Target `json:"targets"`
	MTU     int      `json:"mtu"`
	// QKey is the UD queue key of the session (random, chosen by the
	// client): both sides' QPs take it and their datagrams carry it.
	// Through rdma_cm both sides take the CM's instead.
	QKey uint32 `json:"qkey"`
	// CM asks the peer to connect through rdma_cm (the client's
	// -rdma.cm): it listens on its device's IPv4 address, tells the port
	// in SetupOK.CMAddr and accepts exactly the session's QPs (each
	// endpoint's QPN), in order, each within the peer's timeout. RC and
	// UD only.
	CM bool `json:"cm,omitempty"`
	// Program is side B's program of a pattern of one's own (role
	// "program" only, and required there): steps as data, never code,
	// side-relative (prog.Spec), checked statically here (prog.Spec.Check
	// and the MaxProgram* bounds) and by verbs when the peer builds it.
	Program *prog.Spec `json:"program,omitempty"`
	// Access is, for a pattern of one's own (role "program", or "target"
	// when side B has no program), the remote accesses the client's side
	// A uses on the peer's memory (AccessRemoteWrite, AccessRemoteRead,
	// AccessRemoteAtomic, each at most once): the peer's memory and QPs
	// allow exactly these and local write, and start zeroed.
	Access []string `json:"access,omitempty"`
	// Resp is, for role write-rpc only, the client's UD QP that takes
	// the responses (its QPN and GID; the QKey is the session's): the
	// peer answers on a UD QP of its own (SetupOK.Resp).
	Resp *Endpoint `json:"resp,omitempty"`
}

// Validate checks the bounds.
func (m *Setup) Validate() error {
	s := m.Scenario
	op := oneOfS("op", s.Op, "SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "RDMA_READ", "ATOMIC_FETCH_AND_ADD", "ATOMIC_CMP_AND_SWP")
	if s.Role == "program" {
		op = nil
		if s.Op != "" || s.Size != 0 {
			op = fmt.Errorf("role program: op %q and size %d: a program has no single verb (want op \"\" and size 0)", trimS(s.Op), s.Size)
		}
	}
	errs := []error{
		op,
		oneOfS("transport", s.Transport, "RC", "UC", "UD"),
		oneOfS("role", s.Role, "sink", "echo", "write-echo", "target", "program", "bidir", "write-rpc"),
		between("size", s.Size, 0, MaxSize),
		between("qps", s.QPs, 1, MaxQPs),
		between("send_depth", s.SendDepth, 1, MaxDepth),
		between("recv_depth", s.RecvDepth, 1, MaxDepth),
		between("slot_size", s.SlotSize, 1, MaxSize),
		between("inline", s.Inline, 0, MaxInline),
		oneOf("mtu", m.MTU, 256, 512, 1024, 2048, 4096),
	}
	if m.QKey == 0 || m.QKey > MaxQKey {
		errs = append(errs, fmt.Errorf("qkey %#x out of range 0x1..%#x", m.QKey, MaxQKey))
	}
	switch {
	case s.Role == "bidir" && s.Stream == nil:
		errs = append(errs, errors.New("role bidir needs its stream (stream)"))
	case s.Role == "bidir":
		errs = append(errs, s.Stream.validate(s.SendDepth))
	case s.Stream != nil:
		errs = append(errs, fmt.Errorf("stream is for role bidir, not %s", s.Role))
	}
	switch {
	case s.Role == "write-rpc" && s.RPC == nil:
		errs = append(errs, errors.New("role write-rpc needs its window (rpc)"))
	case s.Role == "write-rpc":
		errs = append(errs, s.RPC.validate(&s, m.Resp))
	case s.RPC != nil || m.Resp != nil:
		errs = append(errs, fmt.Errorf("rpc and resp are for role write-rpc, not %s", trimS(s.Role)))
	}
	if s.SignalAll && (s.Role == "sink" || s.Role == "target" || s.Role == "bidir" || s.Role == "write-rpc") {
		errs = append(errs, fmt.Errorf("signal_all needs role echo or write-echo, not %s", s.Role))
	}
	if m.CM && s.Transport == "UC" {
		errs = append(errs, errors.New("cm: UC cannot be connected through rdma_cm"))
	}
	if len(m.Endpoints) != s.QPs {
		errs = append(errs, fmt.Errorf("%d endpoints for qps %d", len(m.Endpoints), s.QPs))
	}
	if len(m.Targets) != s.QPs {
		errs = append(errs, fmt.Errorf("%d targets for qps %d", len(m.Targets), s.QPs))
	}
	for i, e := range m.Endpoints {
		errs = append(errs, e.validate(i))
	}
	errs = append(errs, m.validateProgram(), m.validateAccess())
	return errors.Join(errs...)
}

// validateProgram: a program with role "program" only, and there always,
// within the MaxProgram* bounds and prog.Spec.Check for the session's
// QPs and slots.
func (m *Setup) validateProgram() error {
	s := m.Scenario
	switch {
	case s.Role != "program" && m.Program != nil:
		return fmt.Errorf("program: role %q runs no program (only role program does)", trimS(s.Role))
	case s.Role != "program":
		return nil
	case m.Program == nil:
		return errors.New("role program without a program")
	case s.QPs > MaxProgramQPs:
		return fmt.Errorf("role program: qps %d exceeds %d", s.QPs, MaxProgramQPs)
	case len(m.Program.Steps) > MaxProgramSteps:
		return &verbs.StepError{Step: -1, Err: fmt.Errorf("%d steps: a program sent to a peer has at most %d", len(m.Program.Steps), MaxProgramSteps)}
	}
	wrs := 0
	for i := range m.Program.Steps {
		st := &m.Program.Steps[i]
		if wrs += len(st.WRs); wrs > MaxProgramWRs {
			return &verbs.StepError{Step: i, Kind: st.Kind, Err: fmt.Errorf("the program's WRs exceed %d by this step (a program sent to a peer has at most %d)", MaxProgramWRs, MaxProgramWRs)}
		}
	}
	if s.QPs < 1 || s.SlotSize < 1 || s.SlotSize > MaxSize {
		return nil // reported above; the slots are unknown
	}
	if err := m.Program.Check(s.QPs, prog.SlotBytes(s.SlotSize, s.Transport == "UD")); err != nil {
		return fmt.Errorf("program: %w", err)
	}
	return nil
}

// validateAccess: known accesses, each once, for an own pattern's roles.
func (m *Setup) validateAccess() error {
	if len(m.Access) == 0 {
		return nil
	}
	if r := m.Scenario.Role; r != "program" && r != "target" {
		return fmt.Errorf("access: role %q takes no access list (roles program and target do)", trimS(r))
	}
	if len(m.Access) > 3 {
		return fmt.Errorf("access: %d entries, at most 3", len(m.Access))
	}
	seen := map[string]bool{}
	for _, a := range m.Access {
		if err := oneOfS("access", a, AccessRemoteWrite, AccessRemoteRead, AccessRemoteAtomic); err != nil {
			return err
		}
		if seen[a] {
			return fmt.Errorf("access %q listed twice", a)
		}
		seen[a] = true
	}
	return nil
}

// AccessNames lists a's remote accesses as Setup.Access names.
func AccessNames(a verbs.Access) []string {
	var out []string
	for _, x := range []struct {
		bit  verbs.Access
		name string
	}{{verbs.AccessRemoteWrite, AccessRemoteWrite}, {verbs.AccessRemoteRead, AccessRemoteRead}, {verbs.AccessRemoteAtomic, AccessRemoteAtomic}} {
		if a&x.bit != 0 {
			out = append(out, x.name)
		}
	}
	return out
}

// ParseAccess is the access a validated Setup.Access names, plus local
// write.
func ParseAccess(names []string) verbs.Access {
	a := verbs.AccessLocalWrite
	for _, n := range names {
		switch n {
		case AccessRemoteWrite:
			a |= verbs.AccessRemoteWrite
		case AccessRemoteRead:
			a |= verbs.AccessRemoteRead
		case AccessRemoteAtomic:
			a |= verbs.AccessRemoteAtomic
		}
	}
	return a
}

func trimS(v string) string {
	if len(v) > MaxNameLen {
		return v[:MaxNameLen] + "…"
	}
	return v
}

func (e *Endpoint) validate(i int) error { return e.validateAs(fmt.Sprintf("endpoint %d", i)) }

// validateAs checks the bounds of the endpoint the errors call name.
func (e *Endpoint) validateAs(name string) error {
	var errs []error
	if e.QPN == 0 || e.QPN > 0xffffff {
		errs = append(errs, fmt.Errorf("%s: qpn %#x out of range 0x1..0xffffff", name, e.QPN))
	}
	if e.PSN > 0xffffff {
		errs = append(errs, fmt.Errorf("%s: psn %#x out of range 0..0xffffff", name, e.PSN))
	}
	if len(e.GID) > 39 {
		errs = append(errs, fmt.Errorf("%s: gid of %d characters exceeds 39", name, len(e.GID)))
	} else if net.ParseIP(e.GID) == nil {
		errs = append(errs, fmt.Errorf("%s: gid %q is not an IP address", name, e.GID))
	}
	return errors.Join(errs...)
}

// SetupOK returns the peer's QPs and memory, one per client QP.
type SetupOK struct {
	Endpoints []Endpoint `json:"endpoints"`
	Targets   []Target   `json:"targets"`
	MTU       int        `json:"mtu"` // the path MTU both sides use: the smaller of theirs
	// CMAddr is, for a Setup with CM, the peer's rdma_cm listener
	// (IPv4:port) the client dials, once per QP in order.
	CMAddr string `json:"cm_addr,omitempty"`
	// Resp is, for role write-rpc, the peer's UD QP that sends the
	// responses (Setup.Resp's counterpart).
	Resp *Endpoint `json:"resp,omitempty"`
}

// Validate checks the bounds.
func (m *SetupOK) Validate() error {
	var errs []error
	if n := len(m.Endpoints); n < 1 || n > MaxQPs {
		errs = append(errs, fmt.Errorf("%d endpoints, want 1..%d", n, MaxQPs))
	}
	if len(m.Targets) != len(m.Endpoints) {
		errs = append(errs, fmt.Errorf("%d targets for %d endpoints", len(m.Targets), len(m.Endpoints)))
	}
	for i, e := range m.Endpoints {
		errs = append(errs, e.validate(i))
	}
	errs = append(errs, oneOf("mtu", m.MTU, 256, 512, 1024, 2048, 4096))
	if m.Resp != nil {
		errs = append(errs, m.Resp.validateAs("resp"))
	}
	if m.CMAddr != "" {
		if len(m.CMAddr) > 47 {
			errs = append(errs, fmt.Errorf("cm_addr of %d characters exceeds 47", len(m.CMAddr)))
		} else if a, err := netip.ParseAddrPort(m.CMAddr); err != nil || a.Port() == 0 || a.Addr().IsUnspecified() || a.Addr().Zone() != "" {
			errs = append(errs, fmt.Errorf("cm_addr %q is not an address and port 1..65535", m.CMAddr))
		}
	}
	return errors.Join(errs...)
}

// Start and Started carry nothing.
type (
	Start   struct{}
	Started struct{}
)

// Stop ends the passive side's role.
type Stop struct {
	// Expect is, for role "program", the receives the client's side A
	// sent that consume one on the peer: the peer waits for its program
	// to see that many (within its timeout) before it stops, so that
	// Stopped.Received is complete (0: stop at once). (A bidir side on UC
	// or UD counts the client's messages itself: it knows their number.)
	Expect uint64 `json:"expect,omitempty"`
	// Times asks a sink for its receive interval (Stopped.RecvSpanNs):
	// side=responder's rate. Sent only then, so that an older peer's
	// strict decoding still takes every other Stop.
	Times bool `json:"times,omitempty"`
}

// Validate accepts.
func (*Started) Validate() error { return nil }

// Validate accepts.
func (*Start) Validate() error { return nil }

// Validate accepts.
func (*Stop) Validate() error { return nil }

// Stopped reports what the passive side saw.
type Stopped struct {
	Received uint64 `json:"received"` // receive completions (roles sink and program)
	Sent     uint64 `json:"sent"`     // answers posted; for role program its iterations
	// RecvSpanNs (asked with Stop.Times, role sink) is the sink's own
	// interval, on the peer's clock: from the poll return that gave it
	// its first receive to the end of the last poll that gave it
	// receives; 0 with fewer than two receives. Omitted unless asked.
	RecvSpanNs int64 `json:"recv_span_ns,omitempty"`
	// StreamOps and StreamNs (role bidir) are the peer's own stream:
	// messages completed, and its elapsed time on the peer's clock (first
	// post to last completion).
	StreamOps uint64 `json:"stream_ops,omitempty"`
	StreamNs  int64  `json:"stream_ns,omitempty"`
}

// MaxRecvSpanNs bounds Stopped.RecvSpanNs: a day.
const MaxRecvSpanNs = int64(24 * 3600 * 1e9)

// Validate checks the bounds.
func (m *Stopped) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{{"recv_span_ns", m.RecvSpanNs}, {"stream_ns", m.StreamNs}} {
		if f.v < 0 || f.v > MaxRecvSpanNs {
			errs = append(errs, fmt.Errorf("%s %d out of range 0..%d", f.name, f.v, MaxRecvSpanNs))
		}
	}
	if m.StreamOps > MaxIters {
		errs = append(errs, fmt.Errorf("stream_ops %d out of range 0..%d", m.StreamOps, MaxIters))
	}
	return errors.Join(errs...)
}

// Error is a refusal, with the reason.
type Error struct {
	Msg string `json:"msg"`
}

// Validate checks the bounds.
func (m *Error) Validate() error { return maxLen("msg", m.Msg, MaxMsgLen) }

// Sanitize returns s fit for a log line or an error message: at most
// MaxMsgLen bytes (cut on a rune boundary, marked with "…"), with
// control characters and invalid UTF-8 replaced by "?", so that what a
// remote side sends cannot forge log lines or flood a terminal.
func Sanitize(s string) string {
	const ellipsis = "…"
	limit := MaxMsgLen
	if len(s) > MaxMsgLen {
		limit -= len(ellipsis)
	}
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			r = '?'
		}
		if b.Len()+utf8.RuneLen(r) > limit {
			b.WriteString(ellipsis)
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

func maxLen(name, s string, n int) error {
	if len(s) > n {
		return fmt.Errorf("%s of %d bytes exceeds %d", name, len(s), n)
	}
	return nil
}

func exactLen(name string, b []byte, n int) error {
	if len(b) != n {
		return fmt.Errorf("%s of %d bytes, want %d", name, len(b), n)
	}
	return nil
}

func between(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s %d out of range %d..%d", name, v, lo, hi)
	}
	return nil
}

func oneOf(name string, v int, allowed ...int) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%s %d is not one of %v", name, v, allowed)
}

func oneOfS(name, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	if len(v) > MaxNameLen {
		v = v[:MaxNameLen] + "…"
	}
	return fmt.Errorf("%s %q is not one of %v", name, v, allowed)
}
