package verbs

import "fmt"

// QPConfig holds the parameters of PD.NewQP.
type QPConfig struct {
	Transport      Transport
	SendCQ, RecvCQ *CQ
	// SRQ, when set, supplies receive buffers; MaxRecvWR and MaxRecvSGE are then ignored.
	SRQ *SRQ
	// MaxSendWR and MaxRecvWR are the queue depths (MaxSendWR ≥ 1; MaxRecvWR
	// may be 0 for a send-only QP).
	MaxSendWR, MaxRecvWR int
	// MaxSendSGE and MaxRecvSGE are SGEs per WR; 0 means 1.
	MaxSendSGE, MaxRecvSGE int
	// MaxInline is the inline payload size to reserve (≤ DeviceAttr.MaxInline).
	MaxInline int
	// SignalAll makes every send WR generate a completion (sq_sig_all);
	// otherwise only WRs with FlagSignaled do.
	SignalAll bool
}

// withDefaults returns c with MaxSendSGE/MaxRecvSGE defaulted to 1.
func (c QPConfig) withDefaults() QPConfig {
	if c.MaxSendSGE == 0 {
		c.MaxSendSGE = 1
	}
	if c.MaxRecvSGE == 0 {
		c.MaxRecvSGE = 1
	}
	return c
}

// Validate checks c against the device limits in a (after applying the
// defaults documented on QPConfig). It makes no library call.
func (c QPConfig) Validate(a DeviceAttr) error {
	c = c.withDefaults()
	if c.Transport < TransportRC || c.Transport > TransportUD {
		return fmt.Errorf("verbs: invalid transport %d (valid: %d=RC, %d=UC, %d=UD)", int(c.Transport), int(TransportRC), int(TransportUC), int(TransportUD))
	}
	if c.SendCQ == nil || c.RecvCQ == nil {
		return fmt.Errorf("verbs: QPConfig needs both SendCQ and RecvCQ (send %t, recv %t)", c.SendCQ != nil, c.RecvCQ != nil)
	}
	checks := []error{
		checkMin("send queue depth", int64(c.MaxSendWR), 1, "QPConfig.MaxSendWR"),
		checkMax("send queue depth", int64(c.MaxSendWR), int64(a.MaxQPWR), "max_qp_wr"),
		checkMin("send SGEs per WR", int64(c.MaxSendSGE), 1, "QPConfig.MaxSendSGE"),
		checkMax("send SGEs per WR", int64(c.MaxSendSGE), int64(a.MaxSGE), "max_sge"),
		checkMin("max inline data", int64(c.MaxInline), 0, "QPConfig.MaxInline"),
		checkMax("max inline data", int64(c.MaxInline), int64(a.MaxInline), "probed max_inline_data"),
	}
	if c.SRQ == nil {
		checks = append(checks,
			checkMin("receive queue depth", int64(c.MaxRecvWR), 0, "QPConfig.MaxRecvWR"),
			checkMax("receive queue depth", int64(c.MaxRecvWR), int64(a.MaxQPWR), "max_qp_wr"),
			checkMin("receive SGEs per WR", int64(c.MaxRecvSGE), 1, "QPConfig.MaxRecvSGE"),
			checkMax("receive SGEs per WR", int64(c.MaxRecvSGE), int64(a.MaxSGE), "max_sge"))
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

// validateCQDepth checks a CQ depth against max_cqe.
func validateCQDepth(depth int, a DeviceAttr) error {
	if err := checkMin("CQ depth", int64(depth), 1, "NewCQ depth"); err != nil {
		return err
	}
	return checkMax("CQ depth", int64(depth), int64(a.MaxCQE), "max_cqe")
}

// validateSRQ checks SRQ sizes against the device limits.
func validateSRQ(maxWR, maxSGE int, a DeviceAttr) error {
	for _, err := range []error{
		checkMin("SRQ depth", int64(maxWR), 1, "NewSRQ maxWR"),
		checkMax("SRQ depth", int64(maxWR), int64(a.MaxSRQWR), "max_srq_wr"),
		checkMin("SRQ SGEs per WR", int64(maxSGE), 1, "NewSRQ maxSGE"),
		checkMax("SRQ SGEs per WR", int64(maxSGE), int64(a.MaxSRQSGE), "max_srq_sge"),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// validateSendWR is the hot-path check of one send WR against the QP's
// transport and actual caps. It does not allocate unless it fails.
func validateSendWR(wr *SendWR, t Transport, caps *QPCaps) error {
	if wr.Op > OpCmpSwap {
		return fmt.Errorf("verbs: send WR %d: invalid opcode %d", wr.ID, wr.Op)
	}
	if err := validateNumSGE(int(wr.NumSGE), caps.MaxSendSGE, "QP max_send_sge"); err != nil {
		return err
	}
	switch {
	case t == TransportUD && wr.Op != OpSend && wr.Op != OpSendImm:
		return fmt.Errorf("verbs: send WR %d: %s is not allowed on a UD QP (SEND and SEND_WITH_IMM only)", wr.ID, wr.Op)
	case t == TransportUD && wr.UD.ah == 0:
		return fmt.Errorf("verbs: send WR %d: UD send without a destination (SendWR.UD is zero)", wr.ID)
	case t == TransportUC && (wr.Op == OpRead || wr.Op.isAtomic()):
		return fmt.Errorf("verbs: send WR %d: %s is not allowed on a UC QP", wr.ID, wr.Op)
	}
	if wr.Op.isAtomic() {
		if wr.RemoteAddr%8 != 0 {
			return fmt.Errorf("verbs: send WR %d: atomic remote address %#x is not 8-byte aligned", wr.ID, wr.RemoteAddr)
		}
		if wr.NumSGE != 1 || wr.SGE[0].Length != 8 {
			return fmt.Errorf("verbs: send WR %d: atomic needs exactly one 8-byte SGE (have %d SGEs, first %d bytes)",
				wr.ID, wr.NumSGE, wr.SGE[0].Length)
		}
	}
	if wr.Flags&FlagInline != 0 {
		var n int64
		for i := 0; i < int(wr.NumSGE); i++ {
			n += int64(wr.SGE[i].Length)
		}
		if err := checkMax("inline payload bytes", n, int64(caps.MaxInline), "QP max_inline_data"); err != nil {
			return err
		}
	}
	return nil
}

// validateNumSGE checks a WR's SGE count against MaxWRSGE and the queue's cap.
func validateNumSGE(n, queueMax int, source string) error {
	if err := checkMax("SGEs in one work request", int64(n), MaxWRSGE, "verbs.MaxWRSGE"); err != nil {
		return err
	}
	return checkMax("SGEs in one work request", int64(n), int64(queueMax), source)
}

// connectParams are the resolved, validated values QP.Connect programs.
type connectParams struct {
	cfg         ConnectConfig
	mtuCode     int
	rdAtomic    int // max_rd_atomic (initiator)
	destAtomic  int // max_dest_rd_atomic (responder)
	useGRH      bool
	accessFlags Access
}

// resolveConnect validates cfg against the device and port and fills in
// defaults. It makes no library call.
func resolveConnect(cfg ConnectConfig, t Transport, a DeviceAttr, p PortAttr) (connectParams, error) {
	cfg = cfg.withDefaults()
	r := connectParams{cfg: cfg}
	if err := checkMin("port number", int64(cfg.Port), 1, "ports are 1-based"); err != nil {
		return r, err
	}
	if err := checkMax("port number", int64(cfg.Port), int64(a.PhysPortCnt), "phys_port_cnt"); err != nil {
		return r, err
	}
	mtu := cfg.MTU
	if mtu == 0 {
		mtu = p.ActiveMTU
	}
	r.mtuCode = mtuCode(mtu)
	if r.mtuCode == 0 {
		return r, fmt.Errorf("verbs: MTU %d is not one of 256, 512, 1024, 2048, 4096", mtu)
	}
	if err := checkMax("path MTU", int64(mtu), int64(p.MaxMTU), "port max_mtu"); err != nil {
		return r, err
	}
	if t == TransportRC {
		r.rdAtomic, r.destAtomic = a.MaxQPInitRdAtom, a.MaxQPRdAtom
		if cfg.MaxRdAtomic != 0 {
			for _, err := range []error{
				checkMin("outstanding RDMA reads/atomics", int64(cfg.MaxRdAtomic), 0, "ConnectConfig.MaxRdAtomic"),
				checkMax("outstanding RDMA reads/atomics", int64(cfg.MaxRdAtomic), int64(a.MaxQPInitRdAtom), "max_qp_init_rd_atom"),
				checkMax("outstanding RDMA reads/atomics", int64(cfg.MaxRdAtomic), int64(a.MaxQPRdAtom), "max_qp_rd_atom"),
			} {
				if err != nil {
					return r, err
				}
			}
			r.rdAtomic, r.destAtomic = cfg.MaxRdAtomic, cfg.MaxRdAtomic
		}
	}
	if t != TransportUD {
		r.accessFlags = cfg.Access
	}
	r.useGRH = p.LinkLayer == LinkLayerEthernet || !cfg.Remote.GID.IsZero()
	if p.LinkLayer == LinkLayerEthernet && cfg.Remote.GID.IsZero() && t != TransportUD {
		return r, fmt.Errorf("verbs: remote GID is zero but the link layer is Ethernet (RoCE needs a GRH)")
	}
	if err := checkMin("GID index", int64(cfg.GIDIndex), 0, "ConnectConfig.GIDIndex"); err != nil {
		return r, err
	}
	if err := checkMax("GID index", int64(cfg.GIDIndex), int64(p.GIDTableLen-1), "gid_tbl_len-1"); err != nil {
		return r, err
	}
	return r, nil
}
