package verbs

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// # Programs
//
// A program is a side's own pattern as data: steps that one C loop
// (loop.c's rb_run_prog) interprets once per iteration, with no cgo call,
// Go code or allocation per operation — the built-in loops' fidelity for a
// pattern they do not know. NewProgram checks the whole program before
// anything is created or posted; every error is a *StepError naming the
// step.
//
// The loop around the steps is implicit: the requester runs Warm's and
// Run's iterations, a passive program iterates until Stop.

// StepKind is what one step of a program does (loop.h's RB_STEP_*).
type StepKind int32

// Step kinds.
const (
	// StepPost posts WRs[First:First+N] on QPs[QP] as one chain (one
	// doorbell), after waiting for room in the QP's send queue.
	StepPost StepKind = iota + 1
	// StepAwait waits for Recvs receive completions and Sends
	// completions of WRs marked Signaled (completions seen earlier, by
	// an earlier wait, count).
	StepAwait
	// StepNextGen moves the side's generation byte to its next value
	// (1 … 255, then 1 again; it starts at 0, as memory does).
	StepNextGen
	// StepPutGen stores the generation byte at Off.
	StepPutGen
	// StepSpinGen spins until the byte at Off equals the generation.
	StepSpinGen
	// StepSpinChange spins until the byte at Off differs from the
	// generation, and makes that byte the generation.
	StepSpinChange
	// StepSpinEqual spins until the Width-byte word at Off equals Value.
	StepSpinEqual
	// StepRepost posts the consumed receives again now (otherwise they
	// are reposted 64 at a time, when that many are consumed).
	StepRepost
	// StepCopyImm stores the last receive completion's immediate data
	// (0 without) as a host-order uint32 at Off.
	StepCopyImm
	// StepCopyLen stores the last receive completion's byte_len as a
	// host-order uint32 at Off.
	StepCopyLen
	// StepExpect checks that the Width-byte word at Off (host order)
	// equals Value; the loop fails otherwise (a *LoopError, LoopCheck).
	StepExpect
	// StepSampleStart starts the latency sample.
	StepSampleStart
	// StepSampleEnd ends it and records it (half of it with Halve).
	StepSampleEnd
)

var stepNames = []string{"", "post", "await", "next-gen", "put-gen", "spin-gen", "spin-change", "spin-equal",
	"repost", "copy-imm", "copy-len", "expect", "sample-start", "sample-end"}

func (k StepKind) String() string {
	if k > 0 && int(k) < len(stepNames) {
		return stepNames[k]
	}
	return fmt.Sprintf("step-kind(%d)", int32(k))
}

// isWait tells whether the step waits for the network.
func (k StepKind) isWait() bool {
	return k == StepAwait || k == StepSpinGen || k == StepSpinChange || k == StepSpinEqual
}

// Step is one step of a program (see StepKind for the fields each kind
// uses; the others are ignored).
type Step struct {
	Kind StepKind
	// StepPost: the QP (index into ProgramConfig.QPs) and the WRs.
	QP, First, N int
	// StepPost: when positive, the chain's last WR is signaled once
	// every Every iterations (the first time in iteration Every−1), and
	// its completion only frees the send queue: an Await does not count
	// it. The chain's WRs must then not be marked Signaled themselves.
	Every int
	// StepAwait: the completions to wait for.
	Recvs, Sends int
	// The memory steps' offset into ProgramConfig.Mem, and the word's
	// width (1, 4 or 8 bytes, aligned to it) and value.
	Off   int
	Width int
	Value uint64
	// StepSampleEnd: record half the sample (a round trip's half).
	Halve bool
}

// MaxSteps bounds a program's length, and MaxPostWRs the WRs of one post.
const (
	MaxSteps   = 256
	MaxPostWRs = 16
	// maxSignalCycle bounds the least common multiple of a program's
	// Every values (the accounting check simulates two such cycles).
	maxSignalCycle = 1 << 12
)

// ProgramConfig describes a side's program.
type ProgramConfig struct {
	CQ  *CQ   // every completion of the QPs (send and receive)
	QPs []*QP // the QPs the posts use; receive WR IDs are their indexes
	SRQ *SRQ  // with an SRQ, receives are kept posted there
	// Mem is the side's memory: the memory steps' offsets are into it,
	// and every local SGE of the WRs must lie in it.
	Mem *Buffer
	// WRs are the posts' WRs (their IDs and, with Every, the last one's
	// signaled flag are the loop's).
	WRs   []SendWR
	Steps []Step
	// Recv (one SGE per QP; with an SRQ only Recv[0]) and RecvDepth:
	// receives kept posted; RecvDepth 0 posts none.
	Recv      []SGE
	RecvDepth int
	// SendDepth is the QPs' send queue depth: the accounting check
	// makes sure no post can wait for room that never comes.
	SendDepth int
	// Passive programs iterate until Stop and record nothing; the first
	// wait of each iteration may last Idle (a request may be long in
	// coming), every other wait Timeout.
	Passive bool
	Idle    time.Duration
	// Iters is Run's iterations (the requester).
	Iters   int64
	Timeout time.Duration
	// Hist is the samples' geometry (the requester).
	Hist HistGeometry
}

// StepError is a program refused by NewProgram, or a program loop that
// failed while it ran (Err then is the *LoopError): step Step (counted
// from 0; −1 for the program as a whole) and why.
type StepError struct {
	Step int
	Kind StepKind
	Err  error
}

// Error returns e.g. "verbs: program step 2 (expect): program loop:
// iteration 3 (from 0, warm-up included) read 0, expected 1": the step
// first, and the "verbs: " prefix once (not again before Err's text).
func (e *StepError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "verbs: ")
	if e.Step < 0 {
		return "verbs: program: " + msg
	}
	return fmt.Sprintf("verbs: program step %d (%s): %s", e.Step, e.Kind, msg)
}

func (e *StepError) Unwrap() error { return e.Err }

// ErrNeverAwaited is a signaled WR, or a READ's or atomic's result, that
// the program never awaits (errors.Is on a *StepError).
var ErrNeverAwaited = errors.New("never awaited")

// ErrSendQueue is a program whose posts could overfill a send queue, or
// fill it with nothing signaled to free it (errors.Is on a *StepError).
var ErrSendQueue = errors.New("send queue")

func stepErr(i int, st *Step, format string, args ...any) *StepError {
	return &StepError{Step: i, Kind: st.Kind, Err: fmt.Errorf(format, args...)}
}

// check refuses a program that could not run as written: every step's
// fields, the memory it touches, the WRs of its posts, the send-queue
// accounting, and its waits.
func (c *ProgramConfig) check() error {
	if err := checkLoopCommon("program", c.CQ, c.Timeout); err != nil {
		return err
	}
	switch {
	case len(c.QPs) == 0:
		return errors.New("verbs: program loop: no QPs")
	case c.Mem == nil || c.Mem.Len() == 0:
		return errors.New("verbs: program loop: no memory")
	case len(c.Steps) == 0 || len(c.Steps) > MaxSteps:
		return &StepError{Step: -1, Err: fmt.Errorf("%d steps: a program has 1 to %d", len(c.Steps), MaxSteps)}
	case c.SendDepth < 2:
		return fmt.Errorf("verbs: program loop: send depth %d must be at least 2", c.SendDepth)
	case c.Passive && c.Idle <= 0:
		return fmt.Errorf("verbs: program loop: a passive program's idle limit %v must be positive", c.Idle)
	case !c.Passive && (c.Iters < 1 || c.Hist.countsLen == 0):
		return fmt.Errorf("verbs: program loop: %d iterations (≥ 1) and a histogram geometry needed", c.Iters)
	case c.RecvDepth < 0:
		return fmt.Errorf("verbs: program loop: receive depth %d must not be negative", c.RecvDepth)
	}
	for i, qp := range c.QPs {
		if qp == nil || qp.id == 0 {
			return fmt.Errorf("verbs: program loop: QP %d is not open", i)
		}
	}
	if c.RecvDepth > 0 {
		want := len(c.QPs)
		if c.SRQ != nil {
			want = 1
		}
		if len(c.Recv) < want {
			return fmt.Errorf("verbs: program loop: %d receive SGEs, need %d", len(c.Recv), want)
		}
		if c.RecvDepth < recvBatch || (c.SRQ == nil && c.RecvDepth > c.QPs[0].caps.MaxRecvWR) {
			return fmt.Errorf("verbs: program loop: receive depth %d must be %d (receives are reposted in batches) … %d (max_recv_wr)", c.RecvDepth, recvBatch, c.QPs[0].caps.MaxRecvWR)
		}
		for i := range want {
			if err := c.inMem(c.Recv[i]); err != nil {
				return fmt.Errorf("verbs: program loop: receive SGE %d: %w", i, err)
			}
		}
	}
	for i := range c.Steps {
		if err := c.checkStep(i); err != nil {
			return err
		}
	}
	if err := c.checkSamples(); err != nil {
		return err
	}
	if err := c.checkAwaits(); err != nil {
		return err
	}
	return c.checkSendQueues()
}

// inMem tells whether sge lies in the program's memory.
func (c *ProgramConfig) inMem(sge SGE) error {
	base, n := c.Mem.Addr(), uint64(c.Mem.Len())
	if sge.Addr < base || sge.Addr-base > n || uint64(sge.Length) > n-(sge.Addr-base) {
		return fmt.Errorf("bytes %#x..%#x are outside the program's memory %#x..%#x", sge.Addr, sge.Addr+uint64(sge.Length), base, base+n)
	}
	return nil
}

func (c *ProgramConfig) checkStep(i int) error {
	st := &c.Steps[i]
	mem := func(width int) error {
		if st.Off < 0 || st.Off > c.Mem.Len()-width {
			return stepErr(i, st, "bytes %d..%d are outside the side's memory of %d bytes", st.Off, st.Off+width, c.Mem.Len())
		}
		if st.Off%width != 0 {
			return stepErr(i, st, "offset %d is not aligned to the word's %d bytes", st.Off, width)
		}
		return nil
	}
	switch st.Kind {
	case StepPost:
		return c.checkPost(i)
	case StepAwait:
		switch {
		case st.Recvs < 0 || st.Sends < 0 || st.Recvs+st.Sends == 0:
			return stepErr(i, st, "awaits %d receives and %d sends: want counts ≥ 0, not both 0", st.Recvs, st.Sends)
		case st.Recvs > 0 && c.RecvDepth == 0:
			return stepErr(i, st, "awaits %d receives, but the program keeps no receives posted", st.Recvs)
		case st.Recvs > c.RecvDepth-recvBatch && st.Recvs > 0:
			return stepErr(i, st, "awaits %d receives: at most the receive depth %d less a repost batch of %d", st.Recvs, c.RecvDepth, recvBatch)
		}
	case StepNextGen, StepRepost, StepSampleStart, StepSampleEnd:
	case StepPutGen, StepSpinGen, StepSpinChange:
		return mem(1)
	case StepCopyImm, StepCopyLen:
		return mem(4)
	case StepSpinEqual, StepExpect:
		switch st.Width {
		case 1, 4, 8:
		default:
			return stepErr(i, st, "a word of %d bytes: 1, 4 or 8", st.Width)
		}
		if st.Width < 8 && st.Value>>(8*st.Width) != 0 {
			return stepErr(i, st, "value %#x does not fit in %d bytes", st.Value, st.Width)
		}
		return mem(st.Width)
	default:
		return stepErr(i, st, "unknown step kind %d", int32(st.Kind))
	}
	return nil
}

func (c *ProgramConfig) checkPost(i int) error {
	st := &c.Steps[i]
	switch {
	case st.QP < 0 || st.QP >= len(c.QPs):
		return stepErr(i, st, "QP %d out of range: the program has %d QPs", st.QP, len(c.QPs))
	case st.N < 1 || st.N > MaxPostWRs:
		return stepErr(i, st, "%d WRs: a post chains 1 to %d", st.N, MaxPostWRs)
	case st.N > c.SendDepth:
		return &StepError{Step: i, Kind: st.Kind, Err: fmt.Errorf("%w: %d WRs in one post exceed the send queue depth %d", ErrSendQueue, st.N, c.SendDepth)}
	case st.First < 0 || st.First > len(c.WRs)-st.N:
		return stepErr(i, st, "WRs %d..%d out of range: the program has %d", st.First, st.First+st.N, len(c.WRs))
	case st.Every < 0 || st.Every > maxSignalCycle:
		return stepErr(i, st, "signal every %d iterations: want 0 (the WRs' own flags) … %d", st.Every, maxSignalCycle)
	}
	qp := c.QPs[st.QP]
	for j := st.First; j < st.First+st.N; j++ {
		wr := &c.WRs[j]
		if err := validateSendWR(wr, qp.transport, &qp.caps); err != nil {
			return stepErr(i, st, "WR %d: %w", j-st.First, err)
		}
		for k := range int(wr.NumSGE) {
			if err := c.inMem(wr.SGE[k]); err != nil {
				return stepErr(i, st, "WR %d's SGE %d: %w", j-st.First, k, err)
			}
		}
		if st.Every > 0 && wr.Flags&FlagSignaled != 0 {
			return stepErr(i, st, "WR %d is Signaled and the post signals every %d iterations: use one or the other", j-st.First, st.Every)
		}
	}
	last := &c.WRs[st.First+st.N-1]
	for j := st.First; j < st.First+st.N; j++ {
		if op := c.WRs[j].Op; (op == OpRead || op.isAtomic()) && last.Flags&FlagSignaled == 0 {
			return &StepError{Step: i, Kind: st.Kind, Err: fmt.Errorf("%w: WR %d is a %s whose result lands in local memory, but the post's last WR is not Signaled: mark it Signaled and Await its completion before the result is used",
				ErrNeverAwaited, j-st.First, op)}
		}
	}
	return nil
}

// checkSamples: at most one sample per iteration, started before it ends;
// a passive program records none.
func (c *ProgramConfig) checkSamples() error {
	start, end := -1, -1
	for i := range c.Steps {
		st := &c.Steps[i]
		switch st.Kind {
		case StepSampleStart, StepSampleEnd:
			if c.Passive {
				return stepErr(i, st, "a passive program records no samples")
			}
			p := &start
			if st.Kind == StepSampleEnd {
				p = &end
			}
			if *p >= 0 {
				return stepErr(i, st, "a second %s (the first is step %d): one sample per iteration", st.Kind, *p)
			}
			*p = i
		}
	}
	switch {
	case end >= 0 && start < 0:
		return stepErr(end, &c.Steps[end], "the sample ends, but no sample-start step starts it")
	case start >= 0 && end < 0:
		return stepErr(start, &c.Steps[start], "the sample starts, but no sample-end step ends it")
	case start > end:
		return stepErr(end, &c.Steps[end], "the sample ends before it starts (step %d)", start)
	}
	return nil
}

// checkAwaits: the program waits for something, and within one iteration
// every Signaled WR is awaited after its post, and no Await counts more
// send completions than Signaled WRs were posted before it.
func (c *ProgramConfig) checkAwaits() error {
	waits := false
	signaled := 0   // Signaled WRs posted and not yet awaited
	firstOpen := -1 // the first post step with a Signaled WR not yet awaited
	for i := range c.Steps {
		st := &c.Steps[i]
		waits = waits || st.Kind.isWait()
		switch st.Kind {
		case StepPost:
			for j := st.First; j < st.First+st.N; j++ {
				if c.WRs[j].Flags&FlagSignaled != 0 {
					signaled++
					if firstOpen < 0 {
						firstOpen = i
					}
				}
			}
		case StepAwait:
			if st.Sends > signaled {
				return stepErr(i, st, "awaits %d send completions, but only %d Signaled WRs are posted before it in the iteration and not yet awaited (a SignalEvery completion is not counted)", st.Sends, signaled)
			}
			signaled -= st.Sends
			if signaled == 0 {
				firstOpen = -1
			}
		}
	}
	if signaled > 0 {
		return &StepError{Step: firstOpen, Kind: StepPost, Err: fmt.Errorf("%w: %d Signaled WRs per iteration, from this post on, have no Await of their completion: add an Await with Sends after them", ErrNeverAwaited, signaled)}
	}
	if !waits {
		return &StepError{Step: -1, Err: fmt.Errorf("%w: the program never waits (no await or spin step): nothing it posts is known to have arrived", ErrNeverAwaited)}
	}
	return nil
}

// checkSendQueues simulates each QP's send queue over two cycles of the
// posts' Every values: before each post, the WRs posted since the last
// signaled one (the least a full queue can hold, every completion taken)
// plus the post's own must fit in the send queue depth, or the post would
// wait for room that no completion can free.
func (c *ProgramConfig) checkSendQueues() error {
	cycle := 1
	for i := range c.Steps {
		if e := c.Steps[i].Every; c.Steps[i].Kind == StepPost && e > 0 {
			cycle = lcm(cycle, e)
			if cycle > maxSignalCycle {
				return stepErr(i, &c.Steps[i], "the posts' signal intervals repeat only every %d iterations: at most %d", cycle, maxSignalCycle)
			}
		}
	}
	unsig := make([]int, len(c.QPs))     // per QP: WRs posted since its last signaled one
	firstPost := make([]int, len(c.QPs)) // per QP: its first post step (−1: none)
	signaled := make([]bool, len(c.QPs)) // per QP: a WR signaled in the second cycle
	for q := range firstPost {
		firstPost[q] = -1
	}
	for i := range c.Steps {
		if st := &c.Steps[i]; st.Kind == StepPost && firstPost[st.QP] < 0 {
			firstPost[st.QP] = i
		}
	}
	for iter := range 2 * cycle {
		for i := range c.Steps {
			st := &c.Steps[i]
			if st.Kind != StepPost {
				continue
			}
			if unsig[st.QP]+st.N > c.SendDepth {
				return &StepError{Step: i, Kind: st.Kind, Err: fmt.Errorf("%w: QP %d could hold %d WRs without a signaled one when this post adds %d (depth %d): signal more often",
					ErrSendQueue, st.QP, unsig[st.QP], st.N, c.SendDepth)}
			}
			last := -1 // the chain's last signaled WR
			for j := range st.N {
				if c.WRs[st.First+j].Flags&FlagSignaled != 0 {
					last = j
				}
			}
			if st.Every > 0 && iter%st.Every == st.Every-1 {
				last = st.N - 1
			}
			if last >= 0 {
				unsig[st.QP] = st.N - 1 - last
				signaled[st.QP] = signaled[st.QP] || iter >= cycle
			} else {
				unsig[st.QP] += st.N
			}
		}
	}
	for q, i := range firstPost {
		if i >= 0 && !signaled[q] {
			return &StepError{Step: i, Kind: StepPost, Err: fmt.Errorf("%w: no WR posted on QP %d is ever signaled, so its send queue (depth %d) fills and nothing frees it: mark a WR Signaled or signal every few iterations",
				ErrSendQueue, q, c.SendDepth)}
		}
	}
	return nil
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// consumes counts the WRs of a post that consume a receive at the peer.
func consumes(wrs []SendWR) int {
	n := 0
	for i := range wrs {
		switch wrs[i].Op {
		case OpSend, OpSendImm, OpWriteImm:
			n++
		}
	}
	return n
}
