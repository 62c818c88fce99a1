package prog

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/verbs"
)

func TestSlotBytes(t *testing.T) {
	assert.Equal(t, 64, SlotBytes(1, false))
	assert.Equal(t, 64, SlotBytes(64, false))
	assert.Equal(t, 128, SlotBytes(64, true), "the GRH in front of a UD receive")
	assert.Equal(t, 4160, SlotBytes(8+4096, false))
}

// echo is B's side of a ping-pong: await a message, answer it.
func echo() Spec {
	return Spec{Recvs: true, RecvBytes: 8, Steps: []Step{
		{Kind: verbs.StepAwait, Recvs: 1},
		{Kind: verbs.StepPost, WRs: []WR{{Op: verbs.OpSend, Local: Mem{Len: 8}}}, Every: 64},
	}}
}

// TestCheck: every static bound, each error a *verbs.StepError naming
// the step (−1: the program as a whole).
func TestCheck(t *testing.T) {
	const qps, slot = 2, 128
	require.NoError(t, new(echo()).Check(qps, slot))
	for _, tc := range []struct {
		name string
		mod  func(*Spec)
		step int
		want string
	}{
		{"no steps", func(s *Spec) { s.Steps = nil }, -1, "0 steps: a program has 1 to 256"},
		{"too many steps", func(s *Spec) { s.Steps = make([]Step, verbs.MaxSteps+1) }, -1, "257 steps"},
		{"receives beyond the slot", func(s *Spec) { s.RecvBytes = slot + 1 }, -1, "receives of 129 bytes out of range 0..128"},
		{"negative receives", func(s *Spec) { s.RecvBytes = -1 }, -1, "receives of -1 bytes"},
		{"unknown kind", func(s *Spec) { s.Steps[0].Kind = 0 }, 0, "unknown step kind 0"},
		{"WRs outside a post", func(s *Spec) { s.Steps[0].WRs = s.Steps[1].WRs }, 0, "only a post has WRs"},
		{"post's QP", func(s *Spec) { s.Steps[1].QP = qps }, 1, "QP 2 out of range: the side has 2 QPs"},
		{"empty post", func(s *Spec) { s.Steps[1].WRs = nil }, 1, "0 WRs: a post chains 1 to 16"},
		{"every", func(s *Spec) { s.Steps[1].Every = -1 }, 1, "signal every -1 iterations"},
		{"opcode", func(s *Spec) { s.Steps[1].WRs[0].Op = 99 }, 1, "WR 0: unknown opcode 99"},
		{"flags", func(s *Spec) { s.Steps[1].WRs[0].Flags = 1 << 5 }, 1, "unknown send flags 0x20"},
		{"local beyond the slot", func(s *Spec) { s.Steps[1].WRs[0].Local = Mem{Off: 121, Len: 8} }, 1, "bytes 121..129 of QP 0's out slot: out of range"},
		{"local overflowing", func(s *Spec) { s.Steps[1].WRs[0].Local = Mem{Off: 1 << 62, Len: 1 << 62} }, 1, "out of range: a slot holds 128 bytes"},
		{"remote QP", func(s *Spec) {
			s.Steps[1].WRs[0] = WR{Op: verbs.OpWrite, Local: Mem{Len: 8}, Remote: Remote{QP: 5}}
		}, 1, "the peer's QP 5 out of range"},
		{"atomic beyond the slot", func(s *Spec) {
			s.Steps[1].WRs[0] = WR{Op: verbs.OpCmpSwap, Local: Mem{Len: 8}, Remote: Remote{Off: 124}}
		}, 1, "the peer's bytes 124..132 of QP 0's in slot"},
		{"await counts", func(s *Spec) { s.Steps[0].Recvs = -1 }, 0, "awaits -1 receives"},
		{"memory step width", func(s *Spec) { s.Steps[0] = Step{Kind: verbs.StepCopyImm, At: Mem{Len: 8}} }, 0, "the step takes 4 bytes, not 8"},
		{"memory step range", func(s *Spec) { s.Steps[0] = Step{Kind: verbs.StepExpect, At: Mem{In: true, Off: 128, Len: 8}} }, 0, "bytes 128..136 of QP 0's in slot: out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := echo()
			s.Steps[1].WRs = append([]WR(nil), s.Steps[1].WRs...)
			tc.mod(&s)
			err := s.Check(qps, slot)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var se *verbs.StepError
			require.True(t, errors.As(err, &se), "%T", err)
			assert.Equal(t, tc.step, se.Step)
		})
	}
}

func TestRemoteAccess(t *testing.T) {
	post := func(ops ...verbs.Opcode) Spec {
		st := Step{Kind: verbs.StepPost}
		for _, op := range ops {
			st.WRs = append(st.WRs, WR{Op: op})
		}
		return Spec{Steps: []Step{st}}
	}
	for _, tc := range []struct {
		spec Spec
		want verbs.Access
	}{
		{post(verbs.OpSend, verbs.OpSendImm), 0},
		{post(verbs.OpWriteImm), verbs.AccessRemoteWrite},
		{post(verbs.OpRead, verbs.OpWrite), verbs.AccessRemoteRead | verbs.AccessRemoteWrite},
		{post(verbs.OpCmpSwap), verbs.AccessRemoteAtomic},
		{post(verbs.OpFetchAdd, verbs.OpRead), verbs.AccessRemoteAtomic | verbs.AccessRemoteRead},
	} {
		assert.Equal(t, tc.want, tc.spec.RemoteAccess(), "%v", tc.spec.Steps[0].WRs)
	}
}
