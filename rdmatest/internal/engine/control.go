package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/verbs"
)

// ControlOp is a control-path operation measured by Control.
type ControlOp string

// The control-path operations.
const (
	// OpRegMR is ibv_reg_mr of a Size-byte buffer (Huge: on huge pages).
	OpRegMR ControlOp = "reg"
	// OpDeregMR is ibv_dereg_mr of such a region.
	OpDeregMR ControlOp = "dereg"
	// OpConnect creates two QPs of Transport on one CQ and connects them
	// to each other (RESET → INIT → RTR → RTS both): one connection set up.
	OpConnect ControlOp = "connect"
	// OpCreateCQ is ibv_create_cq with Depth entries.
	OpCreateCQ ControlOp = "cq"
	// OpCreateQP is ibv_create_qp of an RC QP with Depth send and Depth
	// receive WRs.
	OpCreateQP ControlOp = "qp"
)

// Control is one control-path measurement.
type Control struct {
	Op        ControlOp
	Size      int  // OpRegMR, OpDeregMR: region bytes
	Huge      bool // OpRegMR, OpDeregMR: the buffer is on huge pages
	Depth     int  // OpCreateCQ, OpCreateQP
	Transport verbs.Transport
}

// SkipIWARPConnect is why OpConnect skips on an iWARP device.
const SkipIWARPConnect = "transport iWARP: a QP reaches RTS only through rdma_cm (iw_cm); connecting it by hand (ibv_modify_qp to RTS) is EINVAL"

// controlStep is one sample's work: pre and post run around the timed op
// and are not in the sample.
type controlStep struct{ pre, op, post func() error }

// ControlPath measures c: each iteration runs the operation once, and one
// sample is the time of that operation alone (from just before the call
// to just after it returns; the setup it needs and the teardown after it,
// such as the registration before a deregistration or the destruction of
// a created QP, are not in the sample). It reports p50-ns … max-ns and
// ops/s = samples / the sum of the samples (back-to-back rate of the
// operation alone). ns/op is the whole iteration, setup and teardown
// included. Huge pages that are not available skip the benchmark.
func ControlPath(b *testing.B, d *Dev, c Control) {
	b.Helper()
	takeTurn(b)
	step, err := c.step(b, d)
	if err != nil {
		skipOrFail(b, err)
	}
	rec := hist.NewRecorder()
	var total int64
	b.ReportAllocs()
	before := beforeRun(b, d)
	before.noLoop = true // the operations run on the benchmark's goroutine
	for b.Loop() {
		if step.pre != nil {
			if err := step.pre(); err != nil {
				b.Fatal(err)
			}
		}
		t0 := time.Now()
		err := step.op()
		ns := time.Since(t0).Nanoseconds()
		if err != nil {
			b.Fatal(err)
		}
		rec.Record(ns)
		total += ns
		if step.post != nil {
			if err := step.post(); err != nil {
				b.Fatal(err)
			}
		}
	}
	before.end() // b.Loop has stopped the timer
	hist.ReportLatency(b, rec)
	if total > 0 {
		b.ReportMetric(float64(rec.Count())/(float64(total)/1e9), "ops/s")
	}
	before.report(b, d, int64(b.N))
}

// checkDevice refuses what the device cannot do before anything is
// made: connecting QPs by hand on an iWARP device.
func (c Control) checkDevice(l Limits) error {
	if c.Op == OpConnect && l.Attr.NodeTransport == verbs.NodeTransportIWARP {
		return unsupported("%s: %s", l.Device, SkipIWARPConnect)
	}
	return nil
}

func (c Control) step(tb testing.TB, d *Dev) (controlStep, error) {
	if err := c.checkDevice(d.Limits()); err != nil {
		return controlStep{}, err
	}
	pd, err := d.AllocPD()
	if err != nil {
		return controlStep{}, fmt.Errorf("rdmatest: %w", err)
	}
	Close(tb, pd)
	switch c.Op {
	case OpRegMR, OpDeregMR:
		if c.Size < 1 {
			return controlStep{}, fmt.Errorf("rdmatest: region size %d must be at least 1 byte", c.Size)
		}
		buf, err := verbs.AllocBuffer(c.Size, c.Huge)
		if err != nil {
			if c.Huge {
				return controlStep{}, unsupported("huge pages are not available (reserve some in /proc/sys/vm/nr_hugepages): %v", err)
			}
			return controlStep{}, fmt.Errorf("rdmatest: %w", err)
		}
		Close(tb, buf)
		// Touch every page, so that registration pins memory that exists
		// (as an application's buffers do), not fresh zero-page mappings.
		mem := buf.Bytes()
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1
		}
		var mr *verbs.MR
		reg := func() (err error) { mr, err = pd.RegMRRange(buf, 0, c.Size, allAccess); return err }
		dereg := func() error { return mr.Close() }
		if c.Op == OpRegMR {
			return controlStep{op: reg, post: dereg}, nil
		}
		return controlStep{pre: reg, op: dereg}, nil
	case OpCreateCQ:
		if max := d.Attr().MaxCQE; c.Depth > max {
			return controlStep{}, unsupported("CQ depth %d exceeds %s's max_cqe %d", c.Depth, d.Name(), max)
		}
		var cq *verbs.CQ
		return controlStep{
			op:   func() (err error) { cq, err = d.NewCQ(c.Depth, nil); return err },
			post: func() error { return cq.Close() },
		}, nil
	case OpCreateQP, OpConnect:
		if max := d.Attr().MaxQPWR; c.Depth > max {
			return controlStep{}, unsupported("QP depth %d exceeds %s's max_qp_wr %d", c.Depth, d.Name(), max)
		}
		cq, err := d.NewCQ(max(c.Depth, 1), nil)
		if err != nil {
			return controlStep{}, fmt.Errorf("rdmatest: %w", err)
		}
		Close(tb, cq)
		cfg := verbs.QPConfig{Transport: c.Transport, SendCQ: cq, RecvCQ: cq, MaxSendWR: max(c.Depth, 1), MaxRecvWR: max(c.Depth, 1)}
		var qps [2]*verbs.QP
		closeAll := func() error {
			for i, qp := range qps {
				if qp != nil {
					if err := qp.Close(); err != nil {
						return err
					}
					qps[i] = nil
				}
			}
			return nil
		}
		tb.Cleanup(func() { closeAll() })
		if c.Op == OpCreateQP {
			return controlStep{op: func() (err error) { qps[0], err = pd.NewQP(cfg); return err }, post: closeAll}, nil
		}
		return controlStep{op: func() error { return connectTwo(d, pd, cfg, &qps) }, post: closeAll}, nil
	}
	return controlStep{}, fmt.Errorf("rdmatest: unknown control-path operation %q", c.Op)
}

// connectTwo creates two QPs of cfg and connects them to each other.
func connectTwo(d *Dev, pd *verbs.PD, cfg verbs.QPConfig, qps *[2]*verbs.QP) error {
	var eps [2]verbs.Endpoint
	for i := range qps {
		qp, err := pd.NewQP(cfg)
		if err != nil {
			return fmt.Errorf("rdmatest: %w", err)
		}
		qps[i] = qp
		if eps[i], err = qp.Endpoint(d.PortNum, d.GIDEntry.Index, psn(0, i)); err != nil {
			return fmt.Errorf("rdmatest: %w", err)
		}
	}
	for i, qp := range qps {
		err := qp.Connect(verbs.ConnectConfig{Port: d.PortNum, GIDIndex: d.GIDEntry.Index, LocalPSN: eps[i].PSN, Remote: eps[1-i], Access: allAccess})
		if err != nil {
			return fmt.Errorf("rdmatest: connecting QP %#x: %w", eps[i].QPN, err)
		}
	}
	return nil
}
