package oob

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/prog"
	"github.com/rdmabench/rdmabench/verbs"
)

// programSetup is a valid Setup of role program: B acknowledges every
// message with 8 bytes (the commit example's side B).
func programSetup() *Setup {
	s := validSetup()
	s.Scenario.Op, s.Scenario.Size, s.Scenario.Role, s.Scenario.RecvDepth = "", 0, "program", 512
	s.Program = &prog.Spec{Recvs: true, RecvBytes: 8, Steps: []prog.Step{
		{Kind: verbs.StepAwait, Recvs: 1},
		{Kind: verbs.StepPost, WRs: []prog.WR{{Op: verbs.OpSend, Local: prog.Mem{Len: 8}}}, Every: 64},
	}}
	s.Access = []string{AccessRemoteWrite}
	return s
}

// TestSetupProgramValidate: a program only with role program, and there
// always; its static bounds checked before anything is created, each
// error naming the step.
func TestSetupProgramValidate(t *testing.T) {
	require.NoError(t, programSetup().Validate())
	post := func(n int) prog.Step {
		st := prog.Step{Kind: verbs.StepPost}
		for range n {
			st.WRs = append(st.WRs, prog.WR{Op: verbs.OpSend, Local: prog.Mem{Len: 8}})
		}
		return st
	}
	for _, tc := range []struct {
		name string
		mod  func(*Setup)
		want string
		step int // the step a *verbs.StepError names; -2: no StepError
	}{
		{"role program without a program", func(s *Setup) { s.Program = nil }, "role program without a program", -2},
		{"a program with another role", func(s *Setup) { s.Scenario.Role, s.Scenario.Op = "target", "RDMA_WRITE" }, `program: role "target" runs no program`, -2},
		{"role program with an op", func(s *Setup) { s.Scenario.Op = "SEND" }, `role program: op "SEND" and size 0`, -2},
		{"unknown step kind", func(s *Setup) { s.Program.Steps[1].Kind = 99 }, "unknown step kind 99", 1},
		{"unknown opcode", func(s *Setup) { s.Program.Steps[1].WRs[0].Op = 42 }, "WR 0: unknown opcode 42", 1},
		{"unknown flags", func(s *Setup) { s.Program.Steps[1].WRs[0].Flags = 0x80 }, "unknown send flags 0x80", 1},
		{"range out of the slot", func(s *Setup) { s.Program.Steps[1].WRs[0].Local.Off = 4090 }, "out of range: a slot holds 4096 bytes", 1},
		{"remote out of the slot", func(s *Setup) {
			s.Program.Steps[1].WRs[0] = prog.WR{Op: verbs.OpWrite, Local: prog.Mem{Len: 8}, Remote: prog.Remote{Off: 4092}}
		}, "the peer's bytes 4092..4100 of QP 0's in slot: out of range", 1},
		{"QP out of range", func(s *Setup) { s.Program.Steps[1].QP = 2 }, "QP 2 out of range: the side has 2 QPs", 1},
		{"memory step's QP", func(s *Setup) {
			s.Program.Steps[0] = prog.Step{Kind: verbs.StepSpinGen, At: prog.Mem{QP: -1, Len: 1}}
		}, "QP -1 out of range", 0},
		{"receives beyond the slot", func(s *Setup) { s.Program.RecvBytes = 5000 }, "receives of 5000 bytes out of range 0..4096", -1},
		{"every unbounded", func(s *Setup) { s.Program.Steps[1].Every = 1 << 20 }, "signal every 1048576 iterations", 1},
		{"await unbounded", func(s *Setup) { s.Program.Steps[0].Recvs = 1 << 30 }, "each count 0..65536", 0},
		{"too many WRs in a post", func(s *Setup) { s.Program.Steps[1] = post(verbs.MaxPostWRs + 1) }, "17 WRs: a post chains 1 to 16", 1},
		{"WRs on an await", func(s *Setup) { s.Program.Steps[0].WRs = post(1).WRs }, "only a post has WRs", 0},
		{"no steps", func(s *Setup) { s.Program.Steps = nil }, "0 steps: a program has 1 to 256", -1},
		{"a program too long", func(s *Setup) {
			for len(s.Program.Steps) <= MaxProgramSteps {
				s.Program.Steps = append(s.Program.Steps, prog.Step{Kind: verbs.StepRepost})
			}
		}, "65 steps: a program sent to a peer has at most 64", -1},
		{"too many WRs in all", func(s *Setup) {
			for range MaxProgramWRs / verbs.MaxPostWRs {
				s.Program.Steps = append(s.Program.Steps, post(verbs.MaxPostWRs))
			}
		}, "the program's WRs exceed 64 by this step", 5},
		{"too many QPs", func(s *Setup) { s.Scenario.QPs = MaxProgramQPs + 1 }, "role program: qps 17 exceeds 16", -2},
		{"unknown access", func(s *Setup) { s.Access = []string{"remote-everything"} }, `access "remote-everything" is not one of`, -2},
		{"access twice", func(s *Setup) { s.Access = []string{AccessRemoteRead, AccessRemoteRead} }, `access "remote-read" listed twice`, -2},
		{"access for a built-in role", func(s *Setup) {
			s.Scenario.Role, s.Scenario.Op, s.Program = "sink", "SEND", nil
		}, `access: role "sink" takes no access list`, -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := programSetup()
			tc.mod(s)
			err := s.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var se *verbs.StepError
			if tc.step == -2 {
				assert.False(t, errors.As(err, &se), "no step to name: %v", err)
				return
			}
			require.True(t, errors.As(err, &se), "a *verbs.StepError: %v", err)
			assert.Equal(t, tc.step, se.Step)
		})
	}
}

// TestAccessNames: the names round-trip to the access bits.
func TestAccessNames(t *testing.T) {
	all := verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
	assert.Equal(t, []string{AccessRemoteWrite, AccessRemoteRead, AccessRemoteAtomic}, AccessNames(all))
	assert.Equal(t, all|verbs.AccessLocalWrite, ParseAccess(AccessNames(all)))
	assert.Equal(t, verbs.AccessLocalWrite, ParseAccess(nil))
	assert.Empty(t, AccessNames(verbs.AccessLocalWrite))
}

// TestMaxProgramFitsAFrame: a Setup of role program with MaxProgramQPs
// QPs and a program of MaxProgramSteps steps and MaxProgramWRs WRs,
// every field at its largest, fits a frame with room to spare.
func TestMaxProgramFitsAFrame(t *testing.T) {
	s := programSetup()
	s.Scenario.QPs = MaxProgramQPs
	s.Scenario.SlotSize = MaxSize
	s.Endpoints, s.Targets = nil, nil
	for range MaxProgramQPs {
		s.Endpoints = append(s.Endpoints, Endpoint{QPN: 1<<24 - 1, PSN: 1<<24 - 1, GID: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", LID: 0xffff})
		s.Targets = append(s.Targets, Target{Addr: ^uint64(0), RKey: ^uint32(0)})
	}
	s.Access = []string{AccessRemoteWrite, AccessRemoteRead, AccessRemoteAtomic}
	big := prog.Mem{QP: MaxProgramQPs - 1, In: true, Off: MaxSize - 1, Len: MaxSize - 1}
	wr := prog.WR{Op: verbs.OpCmpSwap, Local: big, Remote: prog.Remote{QP: MaxProgramQPs - 1, Off: MaxSize - 1},
		Imm: ^uint32(0), Compare: ^uint64(0), Swap: ^uint64(0), Flags: 0xff}
	step := func(wrs int) prog.Step {
		st := prog.Step{Kind: 1 << 30, QP: MaxProgramQPs - 1, Every: prog.MaxEvery, Recvs: prog.MaxAwait, Sends: prog.MaxAwait,
			At: big, Value: ^uint64(0), Halve: true}
		for range wrs {
			st.WRs = append(st.WRs, wr)
		}
		return st
	}
	s.Program = &prog.Spec{Recvs: true, RecvBytes: MaxSize}
	for i := range MaxProgramSteps {
		n := 0
		if i < MaxProgramWRs/verbs.MaxPostWRs {
			n = verbs.MaxPostWRs
		}
		s.Program.Steps = append(s.Program.Steps, step(n))
	}
	var buf bytes.Buffer
	require.NoError(t, WriteFrame(&buf, MsgSetup, s), "the largest program")
	assert.Less(t, buf.Len(), MaxPayload*3/4, "room to spare")
	t.Logf("the largest Setup of role program: %d bytes of %d", buf.Len(), MaxPayload)
}
