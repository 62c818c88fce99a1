package verbs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// progFixture is a program's setting without a device: objects that
// look open, and real memory.
func progFixture(t *testing.T) (ProgramConfig, *Buffer) {
	t.Helper()
	buf, err := AllocBuffer(4096, false)
	require.NoError(t, err)
	t.Cleanup(func() { _ = buf.Close() })
	qp := &QP{id: 1, transport: TransportRC, caps: QPCaps{MaxSendWR: 8, MaxRecvWR: 512, MaxSendSGE: 4, MaxRecvSGE: 4}}
	g, err := NewHistGeometry(1, 100e9, 3)
	require.NoError(t, err)
	return ProgramConfig{CQ: &CQ{id: 2}, QPs: []*QP{qp}, Mem: buf, SendDepth: 8, Iters: 10, Timeout: 1e9, Hist: g,
		Recv: []SGE{{Addr: buf.Addr() + 2048, Length: 64}}, RecvDepth: 512}, buf
}

func TestProgramCheck(t *testing.T) {
	cfg0, buf := progFixture(t)
	base := buf.Addr()
	write := SendWR{Op: OpWrite, NumSGE: 1, SGE: [MaxWRSGE]SGE{{Addr: base, Length: 8}}, RemoteAddr: 0x1000, RKey: 1}
	send := SendWR{Op: OpSend, NumSGE: 1, SGE: [MaxWRSGE]SGE{{Addr: base, Length: 8}}}
	read := SendWR{Op: OpRead, NumSGE: 1, SGE: [MaxWRSGE]SGE{{Addr: base + 64, Length: 8}}, RemoteAddr: 0x1000, RKey: 1}
	sig := func(w SendWR) SendWR { return w.Signaled() }
	post := func(first, n int) Step { return Step{Kind: StepPost, First: first, N: n} }
	await := func(recvs, sends int) Step { return Step{Kind: StepAwait, Recvs: recvs, Sends: sends} }
	for _, tt := range []struct {
		name  string
		wrs   []SendWR
		steps []Step
		edit  func(*ProgramConfig)
		step  int // the step the error names (−1: the program)
		want  string
		is    error
	}{
		{"a ping-pong by WRITE", []SendWR{write}, []Step{{Kind: StepNextGen}, {Kind: StepPutGen, Off: 7}, {Kind: StepSampleStart},
			{Kind: StepPost, N: 1, Every: 4}, {Kind: StepSpinGen, Off: 64 + 7}, {Kind: StepSampleEnd, Halve: true}}, nil, 0, "", nil},
		{"a SEND and its answer", []SendWR{sig(send)}, []Step{post(0, 1), await(1, 1)}, nil, 0, "", nil},
		{"an unknown step", []SendWR{write}, []Step{{Kind: StepKind(99)}}, nil, 0, "program step 0 (step-kind(99)): unknown step kind 99", nil},
		{"an offset out of bounds", []SendWR{sig(send)}, []Step{post(0, 1), await(0, 1), {Kind: StepExpect, Off: 4092, Width: 8}}, nil,
			2, "program step 2 (expect): bytes 4092..4100 are outside the side's memory of 4096 bytes", nil},
		{"an unaligned word", []SendWR{sig(send)}, []Step{post(0, 1), await(0, 1), {Kind: StepSpinEqual, Off: 3, Width: 4}}, nil,
			2, "offset 3 is not aligned", nil},
		{"an SGE outside the memory", []SendWR{{Op: OpSend, NumSGE: 1, SGE: [MaxWRSGE]SGE{{Addr: base + 4090, Length: 8}}, Flags: FlagSignaled}},
			[]Step{post(0, 1), await(0, 1)}, nil, 0, "WR 0's SGE 0: bytes", nil},
		{"nothing ever signaled", []SendWR{write}, []Step{post(0, 1), {Kind: StepSpinGen, Off: 8}}, nil,
			0, "no WR posted on QP 0 is ever signaled", ErrSendQueue},
		{"a send queue overfilled", []SendWR{write, write, write, write, write, write, write, write, write, write, write, sig(write)},
			[]Step{post(0, 6), post(6, 6), await(0, 1)}, nil,
			1, "QP 0 could hold 6 WRs without a signaled one when this post adds 6 (depth 8)", ErrSendQueue},
		{"a post longer than the queue", []SendWR{write, write, write, write, write, write, write, write, sig(write)},
			[]Step{post(0, 9), await(0, 1)}, nil, 0, "9 WRs in one post exceed the send queue depth 8", ErrSendQueue},
		{"a signal too rare", []SendWR{write}, []Step{{Kind: StepPost, N: 1, Every: 9}, {Kind: StepSpinGen, Off: 8}}, nil,
			0, "could hold 8 WRs without a signaled one", ErrSendQueue},
		{"a missing await", []SendWR{sig(send)}, []Step{post(0, 1), {Kind: StepSpinGen, Off: 8}}, nil,
			0, "1 Signaled WRs per iteration, from this post on, have no Await", ErrNeverAwaited},
		{"an await of more than was signaled", []SendWR{sig(send)}, []Step{post(0, 1), await(0, 2)}, nil,
			1, "awaits 2 send completions, but only 1 Signaled WRs are posted before it", nil},
		{"a READ whose result is never awaited", []SendWR{read, write}, []Step{post(0, 2), {Kind: StepSpinGen, Off: 8}}, nil,
			0, "WR 0 is a RDMA_READ whose result lands in local memory, but the post's last WR is not Signaled", ErrNeverAwaited},
		{"no wait at all", []SendWR{write}, []Step{{Kind: StepPost, N: 1, Every: 2}}, nil,
			-1, "the program never waits", ErrNeverAwaited},
		{"receives awaited but none kept", []SendWR{sig(send)}, []Step{post(0, 1), await(1, 1)}, func(c *ProgramConfig) { c.RecvDepth = 0 },
			1, "awaits 1 receives, but the program keeps no receives posted", nil},
		{"a sample that ends before it starts", []SendWR{sig(send)}, []Step{{Kind: StepSampleEnd}, post(0, 1), await(0, 1), {Kind: StepSampleStart}}, nil,
			0, "the sample ends before it starts (step 3)", nil},
		{"a passive program's sample", []SendWR{sig(send)}, []Step{{Kind: StepSampleStart}, post(0, 1), await(0, 1), {Kind: StepSampleEnd}},
			func(c *ProgramConfig) { c.Passive, c.Idle = true, 1e9 }, 0, "a passive program records no samples", nil},
		{"both Signaled and SignalEvery", []SendWR{sig(write)}, []Step{{Kind: StepPost, N: 1, Every: 2}, await(0, 1)}, nil,
			0, "use one or the other", nil},
		{"a WR of the wrong QP", []SendWR{sig(send)}, []Step{{Kind: StepPost, QP: 1, N: 1}, await(0, 1)}, nil,
			0, "QP 1 out of range: the program has 1 QPs", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := cfg0
			cfg.WRs, cfg.Steps = tt.wrs, tt.steps
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			err := cfg.check()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			var se *StepError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.step, se.Step, "the step named")
			assert.Contains(t, err.Error(), tt.want)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
}

func TestStepKindString(t *testing.T) {
	assert.Equal(t, "post", StepPost.String())
	assert.Equal(t, "sample-end", StepSampleEnd.String())
	assert.Equal(t, "step-kind(0)", StepKind(0).String())
}

// A step's error names the step first and says "verbs: " once, also
// when what it wraps (a loop's error) has the prefix of its own; errors.As
// still reaches that error.
func TestStepErrorOnePrefix(t *testing.T) {
	err := error(&StepError{Step: 2, Kind: StepExpect, Err: &LoopError{Loop: "program", Status: LoopCheck, Want: 1, At: 3}})
	assert.Equal(t, "verbs: program step 2 (expect): program loop: iteration 3 (from 0, warm-up included) read 0, expected 1", err.Error())
	var le *LoopError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, LoopCheck, le.Status)
	assert.Equal(t, "verbs: program: object is closed", (&StepError{Step: -1, Err: ErrClosed}).Error())
}
