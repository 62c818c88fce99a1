package bench

import (
	"fmt"
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/benchname"
	"github.com/rdmabench/rdmabench/rdmatest/scenario"
	"github.com/rdmabench/rdmabench/verbs"
)

// The control path, which neither perftest nor rdma_bench measures:
// memory registration, connection setup, CQ and QP creation. One sample
// is one operation (see scenario.ControlPath); p50-ns … are per-operation
// latencies, ops/s the back-to-back rate of the operation alone.

// ctl is one variant of a control-path family: the product of its
// values, named op=…/size=…/page=…/depth=…/transport=… (nil axes are
// left out; every variant of a family declares the same axes, which
// TestMatrixNames checks).
type ctl struct {
	op        []scenario.ControlOp
	size      []int
	huge      []bool
	depth     []int
	transport []verbs.Transport
}

func (v ctl) points() (names []benchname.Name, cs []scenario.Control) {
	names, cs = []benchname.Name{{}}, []scenario.Control{{}}
	dim := func(key string, n int, apply func(c *scenario.Control, i int) string) {
		if n == 0 {
			return
		}
		var nn []benchname.Name
		var nc []scenario.Control
		for k, c := range cs {
			for i := range n {
				c2 := c
				nn = append(nn, names[k].With(key, apply(&c2, i)))
				nc = append(nc, c2)
			}
		}
		names, cs = nn, nc
	}
	dim("op", len(v.op), func(c *scenario.Control, i int) string { c.Op = v.op[i]; return string(v.op[i]) })
	dim("transport", len(v.transport), func(c *scenario.Control, i int) string { c.Transport = v.transport[i]; return v.transport[i].String() })
	dim("size", len(v.size), func(c *scenario.Control, i int) string { c.Size = v.size[i]; return fmt.Sprint(v.size[i]) })
	dim("page", len(v.huge), func(c *scenario.Control, i int) string {
		c.Huge = v.huge[i]
		return map[bool]string{false: "4K", true: "huge"}[v.huge[i]]
	})
	dim("depth", len(v.depth), func(c *scenario.Control, i int) string { c.Depth = v.depth[i]; return fmt.Sprint(v.depth[i]) })
	return names, cs
}

// control runs a control-path family; -short runs the first point of
// each variant.
func control(b *testing.B, variants ...ctl) {
	if listing != nil { // see run
		for _, v := range variants {
			names, _ := v.points()
			*listing = append(*listing, names...)
		}
		return
	}
	d := rdmatest.Device(b)
	for _, v := range variants {
		names, cs := v.points()
		if testing.Short() {
			names, cs = names[:1], cs[:1]
		}
		for i, c := range cs {
			b.Run(names[i].Sub(), func(b *testing.B) {
				rdmatest.CheckLeaks(b)
				scenario.ControlPath(b, d, c)
			})
		}
	}
}

// BenchmarkRegMR: ibv_reg_mr and ibv_dereg_mr vs region size and page
// size (4 KiB pages vs huge pages, rdma_bench's hugepage advice, paper
// §3.5 "address translation"). Huge pages that are not reserved skip.
func BenchmarkRegMR(b *testing.B) {
	sizes := full([]int{4 << 10, 1 << 20}, []int{4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20})
	var vs []ctl
	for _, op := range []scenario.ControlOp{scenario.OpRegMR, scenario.OpDeregMR} {
		for _, huge := range noYes {
			vs = append(vs, ctl{op: []scenario.ControlOp{op}, size: sizes, huge: []bool{huge}})
		}
	}
	control(b, vs...)
}

// BenchmarkConnect: creating two QPs and connecting them to each other
// (RESET → RTS both): connection setup rate.
func BenchmarkConnect(b *testing.B) {
	control(b, ctl{op: []scenario.ControlOp{scenario.OpConnect}, transport: full(rc, rcUCUD), depth: []int{128}})
}

// BenchmarkCreateQueue: ibv_create_cq and ibv_create_qp with small and
// large depths (depths above the device's limits skip).
func BenchmarkCreateQueue(b *testing.B) {
	depths := full([]int{128, 16384}, []int{128, 1024, 16384, 32767})
	control(b,
		ctl{op: []scenario.ControlOp{scenario.OpCreateCQ}, transport: rc, depth: depths},
		ctl{op: []scenario.ControlOp{scenario.OpCreateQP}, transport: rc, depth: depths})
}
