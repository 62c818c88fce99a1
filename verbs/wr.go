package verbs

// Builders of the common send work requests, for a benchmark's own
// pattern: each returns a SendWR with one SGE, unsignaled; chain
// Signaled, Inline or WithImm to change that. They do not allocate.
//
//	write := verbs.Write(block, remoteAddr, rkey)
//	commit := verbs.Send(msg).Signaled()

// Write returns an RDMA WRITE of sge to the remote memory at addr (rkey).
func Write(sge SGE, addr uint64, rkey uint32) SendWR {
	return SendWR{Op: OpWrite, NumSGE: 1, SGE: [MaxWRSGE]SGE{sge}, RemoteAddr: addr, RKey: rkey}
}

// Read returns an RDMA READ of the remote memory at addr (rkey) into sge.
func Read(sge SGE, addr uint64, rkey uint32) SendWR {
	return SendWR{Op: OpRead, NumSGE: 1, SGE: [MaxWRSGE]SGE{sge}, RemoteAddr: addr, RKey: rkey}
}

// Send returns a SEND of sge (on UD, set the destination with To).
func Send(sge SGE) SendWR {
	return SendWR{Op: OpSend, NumSGE: 1, SGE: [MaxWRSGE]SGE{sge}}
}

// Signaled returns w asking for a completion.
func (w SendWR) Signaled() SendWR { w.Flags |= FlagSignaled; return w }

// Inline returns w with its payload copied into the WQE (at most the QP's
// MaxInline bytes; PostSend checks).
func (w SendWR) Inline() SendWR { w.Flags |= FlagInline; return w }

// WithImm returns w with immediate data imm: SEND becomes SEND_WITH_IMM,
// WRITE becomes RDMA_WRITE_WITH_IMM (which consumes a receive at the
// target); other opcodes are returned unchanged.
func (w SendWR) WithImm(imm uint32) SendWR {
	switch w.Op {
	case OpSend:
		w.Op = OpSendImm
	case OpWrite:
		w.Op = OpWriteImm
	default:
		return w
	}
	w.Imm = imm
	return w
}

// To returns w addressed to the UD destination d (UD QPs only).
func (w SendWR) To(d UDDest) SendWR { w.UD = d; return w }
