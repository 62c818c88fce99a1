package verbs

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"time"
	"unsafe"
)

// # Timed loops
//
// The loops that measure run in C (loop.c): Go describes a loop (a
// PingConfig, ServeConfig or StreamConfig), NewPing/NewServe/NewStream
// check it and build it in C memory, and one Run call runs the whole
// measured region — no cgo call, Go code or allocation per operation.
// Samples go straight into a counts array laid out as hdrhistogram-go's
// (see HistGeometry), which the caller imports after the run. Each loop
// is bounded by a stop flag (Stop, safe from any goroutine) and by the
// deadline of every single wait (Timeout, checked every 1024 empty polls
// or spins rather than by reading the clock on every poll; a wait's clock
// starts at its first check, so a wait that ends sooner reads no clock:
// the waits outside a sample cost no clock read). Close waits
// until Run has returned before it frees anything.
//
// Design: four hand-written loops with parameters (ping, serve, stream,
// rpc), each a few dozen lines of C in rdma-core's style, for the
// built-in families, and one interpreter of a side's steps (NewProgram:
// post these WRs, await these completions, spin on this byte, record
// from step i to step j) for a pattern of one's own at C speed. The
// interpreter adds a dispatch per step; docs/performance.md compares an
// interpreted WriteLat with the hand-written one.
//
// Clock: one read per sample point, of the CPU's counter where it is
// trusted, else of CLOCK_MONOTONIC; either in ns on CLOCK_MONOTONIC's
// scale (see "The loops' clock" in clock.go, and SetClock).

// HistGeometry is the geometry of an HDR histogram (hdrhistogram-go's New
// arguments) and the bucket arithmetic derived from it.
type HistGeometry struct {
	Lowest, Highest int64
	SigFigs         int

	unitMagnitude, halfCountMagnitude int32
	halfCount, subBucketMask          int64
	countsLen                         int
}

// NewHistGeometry computes the counts layout of hdrhistogram-go's
// New(lowest, highest, sigfigs) (hdr.go: geometryMagnitudes,
// newExactGeometry). lowest must be ≥ 1, sigfigs 1..5, highest ≥ 2·lowest.
func NewHistGeometry(lowest, highest int64, sigfigs int) (HistGeometry, error) {
	if lowest < 1 || sigfigs < 1 || sigfigs > 5 || highest < 2*lowest {
		return HistGeometry{}, fmt.Errorf("verbs: histogram geometry lowest %d, highest %d, %d significant figures: need lowest ≥ 1, highest ≥ 2·lowest, 1..5 figures", lowest, highest, sigfigs)
	}
	g := HistGeometry{Lowest: lowest, Highest: highest, SigFigs: sigfigs}
	largest := 2 * math.Pow10(sigfigs)
	subBucketCountMagnitude := int32(math.Ceil(math.Log2(largest)))
	g.halfCountMagnitude = max(subBucketCountMagnitude, 1) - 1
	g.unitMagnitude = int32(bits.Len64(uint64(lowest))) - 1
	subBucketCount := int64(1) << (g.halfCountMagnitude + 1)
	g.halfCount = subBucketCount / 2
	g.subBucketMask = (subBucketCount - 1) << g.unitMagnitude
	smallestUntrackable := subBucketCount << g.unitMagnitude
	buckets := 1
	for smallestUntrackable < highest {
		if smallestUntrackable > math.MaxInt64/2 {
			buckets++
			break
		}
		smallestUntrackable <<= 1
		buckets++
	}
	g.countsLen = (buckets + 1) * int(g.halfCount)
	return g, nil
}

// CountsLen is the length of the counts array.
func (g HistGeometry) CountsLen() int { return g.countsLen }

// CmpSwapStep is the factor of a compare-and-swap stream's counter
// values (an odd constant, so that k ↦ k·CmpSwapStep is a bijection).
const CmpSwapStep = 0x9E3779B97F4A7C15

// LoopStatus is how a loop ended.
type LoopStatus int32

// Loop outcomes (loop.h).
const (
	LoopOK         LoopStatus = iota
	LoopStopped               // the stop flag was set before the work was done
	LoopStalled               // a wait passed its deadline
	LoopPostSend              // ibv_post_send failed
	LoopPostRecv              // ibv_post_recv failed
	LoopPoll                  // ibv_poll_cq failed
	LoopWC                    // a completion with an error status
	LoopUnexpected            // a completion the loop cannot place
	LoopCheck                 // a returned value differs from the expected one
	LoopEvent                 // the completion channel failed
	LoopIdle                  // a passive loop saw no request within its timeout
)

// ErrStopped is the error of a loop that was stopped before its work was
// done.
var ErrStopped = errors.New("verbs: loop stopped")

// waitNames are loop.h's RB_WAIT_* in words.
var waitNames = []string{
	"nothing",
	"the peer's RDMA WRITE to change the last byte of our buffer",
	"the answer of the passive side (a receive completion)",
	"the completion of our own READ or atomic operation",
	"completions of our own sends (room in the send queue)",
	"the start of the stream we start together with",
	"the other side's messages (receive completions)",
	"a byte or word of our memory (a program's spin step)",
	"the completions a program's await step counts",
}

// LoopError is a loop that ended without doing its work.
type LoopError struct {
	Loop        string // "ping", "serve", "stream"
	Status      LoopStatus
	Waiting     string        // LoopStalled: what the loop waited for
	Timeout     time.Duration // LoopStalled, LoopIdle
	Outstanding int64         // WRs outstanding when it failed
	Errno       error         // LoopPostSend/Recv: the *PostError; LoopEvent: the errno
	WC          WC            // LoopWC, LoopUnexpected
	Want, Got   uint64        // LoopCheck
	At          uint64        // LoopCheck: the operation's index
}

func (e *LoopError) Error() string {
	p := "verbs: " + e.Loop + " loop: "
	switch e.Status {
	case LoopStopped:
		return p + "stopped before its work was done"
	case LoopStalled:
		return fmt.Sprintf("%sdeadline %v exceeded waiting for %s; %d WRs outstanding", p, e.Timeout, e.Waiting, e.Outstanding)
	case LoopIdle:
		return fmt.Sprintf("%sno request from the requester within %v", p, e.Timeout)
	case LoopPostSend, LoopPostRecv, LoopEvent:
		return p + e.Errno.Error()
	case LoopPoll:
		return p + "ibv_poll_cq failed"
	case LoopWC:
		return p + e.WC.Err().Error()
	case LoopUnexpected:
		return fmt.Sprintf("%sunexpected completion wr_id=%d opcode=%s qpn=%#x", p, e.WC.ID, e.WC.Opcode, e.WC.QPN)
	case LoopCheck:
		if e.Loop == "program" {
			return fmt.Sprintf("%siteration %d (from 0, warm-up included) read %d, expected %d", p, e.At, e.Got, e.Want)
		}
		return fmt.Sprintf("%soperation %d returned %d, expected %d", p, e.At, e.Got, e.Want)
	}
	return fmt.Sprintf("%sstatus %d", p, e.Status)
}

// Unwrap gives ErrStopped, os.ErrDeadlineExceeded (stalled or idle), the
// *PostError, or the *WCError behind the loop's failure.
func (e *LoopError) Unwrap() error {
	switch e.Status {
	case LoopStopped:
		return ErrStopped
	case LoopStalled, LoopIdle:
		return os.ErrDeadlineExceeded
	case LoopPostSend, LoopPostRecv, LoopEvent:
		return e.Errno
	case LoopWC:
		return e.WC.Err()
	}
	return nil
}

// LoopResult is what a loop measured.
type LoopResult struct {
	// Ops is the operations completed: round trips (ping), messages posted
	// (stream), answers sent (serve echo modes).
	Ops int64
	// First and Last are the loops' clock's times (ns, on
	// CLOCK_MONOTONIC's scale) of the first measured post and of the
	// last completion (stream) or answer (ping).
	First, Last int64
	// Recvs counts receive completions (passive side; bidir streams);
	// RecvLast is when the last poll with receives returned (sink; 0:
	// none did), RecvFirst when the poll returned whose receives took
	// Recvs past the mark (Loop.MarkRecvs; 0 from the start): the
	// receiver's interval, perftest's ib_send_bw server row's (0: no
	// receive came past the mark).
	Recvs               int64
	RecvFirst, RecvLast int64
	// Samples and Overflow count the recorded samples and those above the
	// histogram's highest value (recorded as the highest).
	Samples, Overflow int64
	// CycleSamples and CycleOverflow count the ping's cycle samples
	// (Loop.CycleCounts): one fewer than Samples a run.
	CycleSamples, CycleOverflow int64
	// ClockMHz is the CPU counter's frequency measured over this run
	// itself (see "The loops' clock" in clock.go): 0 with the
	// monotonic clock or for a run shorter than 10 ms.
	ClockMHz float64
}

// Elapsed is Last − First: the loop's own measured time.
func (r LoopResult) Elapsed() time.Duration { return time.Duration(r.Last - r.First) }

// ByteAt names one byte of a Buffer.
type ByteAt struct {
	Buf *Buffer
	Off int
}

func (b ByteAt) addr(what string, n int) (unsafe.Pointer, error) {
	if b.Buf == nil {
		return nil, fmt.Errorf("verbs: %s: no buffer", what)
	}
	m, err := b.Buf.slice(b.Off, n)
	if err != nil {
		return nil, fmt.Errorf("verbs: %s: %w", what, err)
	}
	return unsafe.Pointer(&m[0]), nil
}

// PingMode is what the requester of a latency loop waits for.
type PingMode int32

// Ping modes.
const (
	// PingWrite: RDMA WRITE, then spin until the peer's WRITE changes the
	// last byte of our buffer (perftest ib_write_lat).
	PingWrite PingMode = iota + 1
	// PingRecv: SEND (or WRITE_WITH_IMM), then wait for the answer's
	// receive completion (ib_send_lat).
	PingRecv
	// PingRound: READ or atomic, then wait for its own completion
	// (ib_read_lat, ib_atomic_lat).
	PingRound
)

// PingConfig describes the requester of a latency loop.
type PingConfig struct {
	QP   *QP
	CQ   *CQ
	Mode PingMode
	// WR is the operation (its ID and signaled flag are the loop's).
	WR SendWR
	// SendDepth is the QP's send queue depth: in PingWrite and PingRecv
	// one send in SendDepth/2 is signaled, as in perftest.
	SendDepth int
	// Halve records half of each round trip (SEND and WRITE ping-pong).
	Halve bool
	// Recv (PingRecv) is where answers land; RecvDepth receives are kept
	// posted on QP.
	Recv      SGE
	RecvDepth int
	// InLast and OutLast (PingWrite) are the byte the answer changes and
	// the byte our message carries.
	InLast, OutLast ByteAt
	// Result (atomics) is where the returned 8 bytes land: every returned
	// value is checked (fetch-and-add of 1, or compare-and-swap from v to
	// v+1, each returning start + k for operation k).
	Result ByteAt
	// Iters is the measured operations; Warmup runs first, unrecorded.
	Iters, Warmup int64
	// Gap is idle time after each round trip (perftest --latency_gap).
	Gap time.Duration
	// SignalAll is perftest's latency work (its latency tests run with
	// tx_depth 1, which forces cq_mod 1): every WR is signaled and each
	// iteration waits for its own send completion right after the post,
	// before the answer (perftest's order), and PingRecv reposts its
	// receive after every message instead of once half a batch is
	// consumed, after the answer. The completion's wait is inside the
	// post → answer sample (on rxe and on a NIC the completion comes
	// first, so it costs a poll), the repost inside the cycle sample only.
	// PingRound always signals and awaits every WR.
	//
	// In every mode an iteration's samples enter the histograms after the
	// next post, while that message is in flight, so nothing but the
	// clock read lies between seeing an answer and the next post.
	// (make calibrate-phases measured why that matters on rxe:
	// docs/performance.md, "Phases".)
	SignalAll bool
	Timeout   time.Duration
	// Hist is the geometry of both histograms: the samples (post →
	// answer) and the cycles (see Loop.CycleCounts).
	Hist HistGeometry
}

// ServeMode is the passive side's role.
type ServeMode int32

// Serve modes.
const (
	// ServeWriteEcho spins on the last byte of InLast's buffer and writes
	// each new value back with WR.
	ServeWriteEcho ServeMode = iota + 1
	// ServeRecvEcho answers every receive with WR, carrying back the
	// receive's immediate data.
	ServeRecvEcho
	// ServeSink reposts every receive and counts them.
	ServeSink
	// ServeWriteRPC is HERD's server: it sweeps Window request slots
	// (Stride bytes apart from Req) for a nonzero last byte (a request's
	// generation; the request arrived by RDMA WRITE), copies the request
	// to the same slot of Resp, clears that byte and answers with WR (a
	// SEND_WITH_IMM whose SGE is Resp's slot 0 and is moved to the
	// slot; immediate = slot | generation << 16).
	ServeWriteRPC
)

// ServeConfig describes a passive side.
type ServeConfig struct {
	Mode ServeMode
	CQ   *CQ
	// QPs are the side's QPs (receive WR IDs are their indexes); with
	// SRQ, receives are posted there instead.
	QPs []*QP
	SRQ *SRQ
	// Recv is where the receives of each QP land (one SGE per QP; with
	// an SRQ only Recv[0] is used); RecvDepth receives are kept posted
	// per QP (or on the SRQ).
	Recv      []SGE
	RecvDepth int
	// WR is the answer (echo modes), posted on QPs[0]; SendDepth its
	// send queue depth.
	WR        SendWR
	SendDepth int
	// InLast, OutLast: ServeWriteEcho's bytes.
	InLast, OutLast ByteAt
	// Idle ends the loop with a *LoopError (os.ErrDeadlineExceeded) after
	// that long without a request; 0 = never.
	Idle time.Duration
	// SignalAll (echo modes) is perftest's latency work on this side
	// too: every answer is signaled and its completion awaited before
	// the next request is looked at, and receives are reposted after
	// every message. Otherwise one answer in SendDepth/2 is signaled.
	SignalAll bool
	// Timeout is the deadline of every single wait (room to answer).
	Timeout time.Duration
	// Req, Resp, Window, Stride, Size: ServeWriteRPC's slots.
	Req, Resp            ByteAt
	Window, Stride, Size int
}

// RPCConfig describes the client of an echo RPC loop: Window requests
// outstanding, each in its slot of Stride bytes; a request carries the tag
// slot | generation << 16 (generations 1 … 255): in its immediate data
// (SEND_WITH_IMM) or as its last byte (RDMA WRITE into the server's slot);
// the response (a receive completion carrying the tag as immediate data)
// frees the slot, which takes the next request. Warm fills the window,
// completes RPCs and takes the window's responses, all unrecorded, so
// that none is outstanding; Run fills the window again and completes
// RPCs recording each round trip (from just before the request's post
// call to the poll that returned its response), so every sample is of a
// request Run posted; Drain takes the window's last responses. RecvDepth
// must cover the window plus one batch of receives waiting to be
// reposted.
type RPCConfig struct {
	QP             *QP // requests go out here
	ReqCQ, RespCQ  *CQ // the same CQ when requests and responses share a QP
	WR             SendWR
	Out            ByteAt // the client's slot 0 (WR's SGE starts there)
	Window, Stride int
	Size           int
	// Recv is where responses land; RecvDepth receives are kept posted
	// on the QP that RespCQ serves (RecvQP).
	RecvQP    *QP
	Recv      SGE
	RecvDepth int
	SendDepth int
	RPCs      int64 // Run's RPCs
	Timeout   time.Duration
	Hist      HistGeometry
}

func (c *RPCConfig) check() error {
	if err := checkLoopCommon("rpc", c.RespCQ, c.Timeout); err != nil {
		return err
	}
	switch {
	case c.QP == nil || c.QP.id == 0 || c.RecvQP == nil || c.RecvQP.id == 0 || c.ReqCQ == nil || c.ReqCQ.id == 0:
		return errors.New("verbs: rpc loop: QPs and CQs must be open")
	case c.WR.Op != OpWrite && c.WR.Op != OpSendImm:
		return fmt.Errorf("verbs: rpc loop: requests are RDMA WRITE or SEND_WITH_IMM, not %s", c.WR.Op)
	case c.Window < 1 || c.Window > 1<<16 || c.Size < 1 || c.Stride < c.Size:
		return fmt.Errorf("verbs: rpc loop: window %d (1 … 65536), size %d (≥ 1) and stride %d (≥ size)", c.Window, c.Size, c.Stride)
	case c.RecvDepth < c.Window+recvBatch || c.RecvDepth > c.RecvQP.caps.MaxRecvWR:
		return fmt.Errorf("verbs: rpc loop: receive depth %d must be %d (the window + %d, receives are reposted in batches) … %d (max_recv_wr)", c.RecvDepth, c.Window+recvBatch, recvBatch, c.RecvQP.caps.MaxRecvWR)
	case c.SendDepth < 2 || c.RPCs < 1:
		return fmt.Errorf("verbs: rpc loop: send depth %d (≥ 2), RPCs %d (≥ 1)", c.SendDepth, c.RPCs)
	}
	if c.Hist.countsLen == 0 {
		return errors.New("verbs: rpc loop: no histogram geometry (NewHistGeometry)")
	}
	if err := checkLoopWR("rpc", "the request", &c.WR); err != nil {
		return err
	}
	return validateSendWR(&c.WR, c.QP.transport, &c.QP.caps)
}

// StreamQP is one QP of a stream.
type StreamQP struct {
	QP *QP
	// WR is the template of every message (flags other than signaled and
	// inline are kept; ID and signaled are the loop's).
	WR SendWR
	// Marker is the signaled WR posted after the last message when that
	// one is not signaled, so that a completion covers the whole stream.
	Marker SendWR
}

// CheckStreamWindow checks a stream's window before anything is built:
// at most qd WRs outstanding on a QP, batch WRs a post, WR k (from 1)
// signaled when signal divides k. Each must be at least 1, batch and
// signal at most qd. The loop posts whole batches, so a QP has posted a
// multiple of batch WRs when it waits for room; once every signaled WR
// has completed, the unsignaled ones after the last are that multiple
// modulo signal, at most signal − gcd(batch, signal). That plus a batch
// must fit in qd, or the loop could wait for room with no completion
// coming (TestCheckStreamWindow plays the loop's accounting to show the
// rule exact).
func CheckStreamWindow(qd, batch, signal int) error {
	switch {
	case qd < 1 || batch < 1 || signal < 1:
		return fmt.Errorf("qd %d, batch %d, signal %d: each must be at least 1", qd, batch, signal)
	case batch > qd:
		return fmt.Errorf("batch %d exceeds qd %d (WRs per post cannot exceed the outstanding WRs allowed)", batch, qd)
	case signal > qd:
		return fmt.Errorf("signal interval %d exceeds qd %d (the send queue would fill before a completion is asked for)", signal, qd)
	case signal-gcd(batch, signal)+batch > qd:
		return fmt.Errorf("qd %d, batch %d, signal interval %d: the stream could wait for room with no signaled WR outstanding (need signal − gcd(batch, signal) + batch ≤ qd: %d)",
			qd, batch, signal, signal-gcd(batch, signal)+batch)
	}
	return nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// StreamConfig describes the requester of a streaming loop.
type StreamConfig struct {
	CQ      *CQ
	QPs     []StreamQP
	Msgs    int64
	QD      int // outstanding WRs per QP
	Batch   int // WRs per post
	Signal  int // one signaled WR in Signal
	SendDep int // the QPs' send queue depth (room for the marker)
	// Counters and Stride (atomics) rotate the remote address of WR k
	// over Counters 8-byte counters Stride bytes apart.
	Counters, Stride int
	// CmpSwap makes WR k of a counter a compare-and-swap from
	// k·CmpSwapStep to (k+1)·CmpSwapStep (mod 2^64; counters start at 0),
	// so that every swap really swaps, and once one fails no later one
	// matches again: the final value is CmpSwapStep times the successful
	// swaps in a row from the start.
	CmpSwap bool
	// Recv (one SGE per QP), RecvDepth: bidir streams of verbs that
	// consume a receive repost the side's own receives (WR IDs = QP
	// indexes) as their completions arrive on CQ; after its own messages
	// the loop goes on until ExpectRecvs receives have arrived.
	Recv        []SGE
	RecvDepth   int
	ExpectRecvs int64
	// Interval, when positive, makes the stream open-loop (Batch must be
	// 1): message k is due at start + k·Interval (posted then, or as soon
	// after as the queue allows), and each signaled message's sample runs
	// from its due time, not its post: waiting for room is charged (no
	// coordinated omission, as in wrk2).
	Interval time.Duration
	Timeout  time.Duration
	Hist     HistGeometry
}

// recvBatch is how many consumed receives the loops repost at a time at
// most (loop.h's RB_RBATCH): a loop that waits for receives needs this
// many posted beyond what it has outstanding.
const recvBatch = 64

// checkLoopWR refuses a WR with more than one SGE where a loop keeps room
// for one (the ping's, a passive side's answer, an RPC request, a
// stream's marker).
func checkLoopWR(what, which string, wr *SendWR) error {
	if wr.NumSGE > 1 {
		return fmt.Errorf("verbs: %s loop: %s has %d SGEs; the loop takes at most 1", what, which, wr.NumSGE)
	}
	return nil
}

func checkLoopCommon(what string, cq *CQ, timeout time.Duration) error {
	if cq == nil || cq.id == 0 {
		return fmt.Errorf("verbs: %s loop: no open CQ", what)
	}
	if timeout <= 0 {
		return fmt.Errorf("verbs: %s loop: timeout %v must be positive", what, timeout)
	}
	return nil
}

func (c *PingConfig) check() error {
	if err := checkLoopCommon("ping", c.CQ, c.Timeout); err != nil {
		return err
	}
	switch {
	case c.QP == nil || c.QP.id == 0:
		return errors.New("verbs: ping loop: no open QP")
	case c.Mode < PingWrite || c.Mode > PingRound:
		return fmt.Errorf("verbs: ping loop: mode %d is not PingWrite, PingRecv or PingRound", c.Mode)
	case c.Iters < 1 || c.Warmup < 0:
		return fmt.Errorf("verbs: ping loop: %d iterations (must be ≥ 1), %d warm-up (must be ≥ 0)", c.Iters, c.Warmup)
	case c.Mode != PingRound && c.SendDepth < 2:
		return fmt.Errorf("verbs: ping loop: send depth %d must be at least 2", c.SendDepth)
	case c.Mode == PingRecv && (c.RecvDepth < recvBatch || c.RecvDepth > c.QP.caps.MaxRecvWR):
		return fmt.Errorf("verbs: ping loop: receive depth %d must be %d (receives are reposted in batches) … %d (the QP's max_recv_wr)", c.RecvDepth, recvBatch, c.QP.caps.MaxRecvWR)
	case c.Gap < 0:
		return fmt.Errorf("verbs: ping loop: gap %v must not be negative", c.Gap)
	}
	if c.Hist.countsLen == 0 {
		return errors.New("verbs: ping loop: no histogram geometry (NewHistGeometry)")
	}
	if err := checkLoopWR("ping", "the WR", &c.WR); err != nil {
		return err
	}
	return validateSendWR(&c.WR, c.QP.transport, &c.QP.caps)
}

func (c *ServeConfig) check() error {
	if err := checkLoopCommon("serve", c.CQ, c.Timeout); err != nil {
		return err
	}
	if len(c.QPs) == 0 {
		return errors.New("verbs: serve loop: no QPs")
	}
	for i, qp := range c.QPs {
		if qp == nil || qp.id == 0 {
			return fmt.Errorf("verbs: serve loop: QP %d is not open", i)
		}
	}
	switch c.Mode {
	case ServeWriteEcho:
	case ServeWriteRPC:
		if c.Window < 1 || c.Size < 1 || c.Stride < c.Size {
			return fmt.Errorf("verbs: serve loop: window %d, size %d, stride %d: need window ≥ 1, size ≥ 1, stride ≥ size", c.Window, c.Size, c.Stride)
		}
	case ServeRecvEcho, ServeSink:
		if c.RecvDepth < 1 {
			return fmt.Errorf("verbs: serve loop: receive depth %d must be at least 1", c.RecvDepth)
		}
		if len(c.Recv) != len(c.QPs) {
			return fmt.Errorf("verbs: serve loop: %d receive SGEs for %d QPs", len(c.Recv), len(c.QPs))
		}
	default:
		return fmt.Errorf("verbs: serve loop: mode %d is not ServeWriteEcho, ServeRecvEcho, ServeSink or ServeWriteRPC", c.Mode)
	}
	if c.SignalAll && c.Mode != ServeWriteEcho && c.Mode != ServeRecvEcho {
		return fmt.Errorf("verbs: serve loop: SignalAll needs an echo mode (ServeWriteEcho or ServeRecvEcho), not mode %d", c.Mode)
	}
	if c.Mode != ServeSink {
		if c.SendDepth < 2 {
			return fmt.Errorf("verbs: serve loop: send depth %d must be at least 2", c.SendDepth)
		}
		if err := checkLoopWR("serve", "the answer", &c.WR); err != nil {
			return err
		}
		return validateSendWR(&c.WR, c.QPs[0].transport, &c.QPs[0].caps)
	}
	return nil
}

func (c *StreamConfig) check() error {
	if err := checkLoopCommon("stream", c.CQ, c.Timeout); err != nil {
		return err
	}
	if len(c.QPs) == 0 {
		return errors.New("verbs: stream loop: no QPs")
	}
	if err := CheckStreamWindow(c.QD, c.Batch, c.Signal); err != nil {
		return fmt.Errorf("verbs: stream loop: %w", err)
	}
	switch {
	case c.Msgs < 1:
		return fmt.Errorf("verbs: stream loop: %d messages (must be ≥ 1)", c.Msgs)
	case c.SendDep <= c.QD:
		return fmt.Errorf("verbs: stream loop: send depth %d must exceed qd %d (room for the marker)", c.SendDep, c.QD)
	case c.Counters < 0 || (c.Counters > 1 && c.Stride < 8):
		return fmt.Errorf("verbs: stream loop: %d counters with stride %d: need stride ≥ 8", c.Counters, c.Stride)
	case c.Interval < 0:
		return fmt.Errorf("verbs: stream loop: interval %v must not be negative", c.Interval)
	case c.Interval > 0 && c.Batch > 1:
		return fmt.Errorf("verbs: stream loop: an open-loop stream (interval %v) posts one message at its due time, not batches of %d", c.Interval, c.Batch)
	case c.RecvDepth < 0 || c.ExpectRecvs < 0:
		return fmt.Errorf("verbs: stream loop: receive depth %d and expected receives %d must not be negative", c.RecvDepth, c.ExpectRecvs)
	case c.RecvDepth > 0 && len(c.Recv) != len(c.QPs):
		return fmt.Errorf("verbs: stream loop: %d receive SGEs for %d QPs", len(c.Recv), len(c.QPs))
	}
	if c.Hist.countsLen == 0 {
		return errors.New("verbs: stream loop: no histogram geometry (NewHistGeometry)")
	}
	for i, q := range c.QPs {
		if q.QP == nil || q.QP.id == 0 {
			return fmt.Errorf("verbs: stream loop: QP %d is not open", i)
		}
		if c.Batch > q.QP.caps.MaxSendWR {
			return fmt.Errorf("verbs: stream loop: batch %d exceeds QP %d's max_send_wr %d", c.Batch, i, q.QP.caps.MaxSendWR)
		}
		if err := validateSendWR(&c.QPs[i].WR, q.QP.transport, &q.QP.caps); err != nil {
			return fmt.Errorf("verbs: stream loop: QP %d: %w", i, err)
		}
		if err := checkLoopWR("stream", fmt.Sprintf("QP %d's marker", i), &c.QPs[i].Marker); err != nil {
			return err
		}
		if err := validateSendWR(&c.QPs[i].Marker, q.QP.transport, &q.QP.caps); err != nil {
			return fmt.Errorf("verbs: stream loop: QP %d's marker: %w", i, err)
		}
	}
	return nil
}
