//go:build linux && cgo

package verbs

/*
#cgo CFLAGS: -O2 -Wall -Wextra -Werror
#include <stdlib.h>
#include "loop.h"

static void rb_prog_set_wr(rb_prog *p, int i, const rb_send_wr *w, struct ibv_sge *sges) { rb_fill_send_wr(&p->wrs[i], &sges[4 * i], w); }
static void rb_prog_chain(rb_prog *p, int i, int next) { p->wrs[i].next = next < 0 ? NULL : &p->wrs[next]; }
*/
import "C"

import (
	"unsafe"
)

// NewProgram builds a side's program loop (see ProgramConfig) after
// checking all of it, and posts its receives. The requester runs it with
// Warm and Run; a passive program with Run, on a thread of its own, until
// Stop.
func NewProgram(cfg ProgramConfig) (*Loop, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	l := &Loop{}
	p := (*C.rb_prog)(l.alloc(1, int(C.sizeof_rb_prog)))
	l.prog, l.ctl = p, &p.ctl
	if !cfg.Passive {
		l.setHist(&p.hist, cfg.Hist)
	}
	p.cq = cfg.CQ.c.cq
	p.nqp = C.int32_t(len(cfg.QPs))
	p.qps = (*C.rb_pq)(l.alloc(len(cfg.QPs), int(C.sizeof_rb_pq)))
	pqs := unsafe.Slice(p.qps, len(cfg.QPs))
	for i, qp := range cfg.QPs {
		pqs[i].qp = qp.c.qp
	}
	if n := len(cfg.WRs); n > 0 {
		p.wrs = (*C.struct_ibv_send_wr)(l.alloc(n, int(C.sizeof_struct_ibv_send_wr)))
		sges := (*C.struct_ibv_sge)(l.alloc(4*n, int(C.sizeof_struct_ibv_sge)))
		for i := range cfg.WRs {
			wr := cfg.WRs[i]
			C.rb_prog_set_wr(p, C.int(i), cSendWR(&wr), sges)
		}
	}
	p.nstep = C.int32_t(len(cfg.Steps))
	p.steps = (*C.rb_step)(l.alloc(len(cfg.Steps), int(C.sizeof_rb_step)))
	steps := unsafe.Slice(p.steps, len(cfg.Steps))
	whole := true
	for i := range cfg.Steps {
		st, cs := &cfg.Steps[i], &steps[i]
		cs.kind = C.int32_t(st.Kind)
		cs.qp, cs.first, cs.n = C.int32_t(st.QP), C.int32_t(st.First), C.int32_t(st.N)
		cs.recvs, cs.sends, cs.every = C.int32_t(st.Recvs), C.int32_t(st.Sends), C.int32_t(st.Every)
		if st.Every > 0 {
			cs.due = C.int32_t(st.Every - 1) // iteration every−1 signals first
		}
		cs.width, cs.off, cs.value = C.int32_t(st.Width), C.int64_t(st.Off), C.uint64_t(st.Value)
		if st.Halve {
			cs.halve = 1
		}
		switch st.Kind {
		case StepPost:
			cs.consumes = C.int32_t(consumes(cfg.WRs[st.First : st.First+st.N]))
			for j := st.First; j < st.First+st.N; j++ {
				next := j + 1
				if next == st.First+st.N {
					next = -1
				}
				C.rb_prog_chain(p, C.int(j), C.int(next))
			}
		case StepSampleStart, StepSampleEnd:
			whole = false
		}
	}
	if whole && !cfg.Passive {
		p.whole = 1
	}
	p.mem = (*C.uint8_t)(unsafe.Pointer(&cfg.Mem.Bytes()[0]))
	p.send_depth = C.int32_t(cfg.SendDepth)
	p.iters, p.idle_ns, p.step = C.int64_t(cfg.Iters), C.int64_t(cfg.Idle.Nanoseconds()), -1
	if cfg.Passive {
		p.passive = 1
	}
	uses := []uint64{cfg.QPs[0].id, cfg.CQ.id, cfg.Mem.id}
	for _, qp := range cfg.QPs[1:] {
		uses = append(uses, qp.id)
	}
	if cfg.SRQ != nil {
		uses = append(uses, cfg.SRQ.id)
	}
	if cfg.RecvDepth > 0 {
		var err error
		if p.rq, p.nrq, err = l.newRQ(cfg.QPs, cfg.SRQ, cfg.Recv, cfg.RecvDepth); err != nil {
			l.free()
			return nil, err
		}
	}
	l.start(cfg.QPs[0].device(), "program", cfg.Timeout, uses...)
	l.steps = append([]Step(nil), cfg.Steps...)
	return l, nil
}

// progErr names the failing step of a program loop's error.
func (l *Loop) progErr(err error) error {
	if err == nil || l.prog == nil || l.prog.step < 0 || int(l.prog.step) >= len(l.steps) {
		return err
	}
	i := int(l.prog.step)
	return &StepError{Step: i, Kind: l.steps[i].Kind, Err: err}
}

// Consumed is how many WRs a program loop has posted that consume a
// receive at the peer (SEND, SEND_WITH_IMM, WRITE_WITH_IMM), warm-up
// included; 0 for other loops.
func (l *Loop) Consumed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prog == nil {
		return 0
	}
	return int64(l.prog.consumed)
}
