//go:build ignore

// gen writes the gate's fixture files: go run gen.go (in testdata/).
// Values are synthetic, drawn with fixed seeds around plausible Soft-RoCE
// numbers; only their statistical relations matter to the tests.
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
)

const header = `goos: linux
goarch: amd64
pkg: github.com/rdmabench/rdmabench/bench_test
cpu: QEMU Virtual CPU version 2.5+
rdma-device: rxe0
rdma-provider: rxe
rdma-fw: %s
rdma-node-guid: 5054:00ff:fe12:3456
rdma-link-layer: Ethernet
rdma-mtu: 1024
kernel: 6.1.0-57-amd64
Unit p50-ns better=lower
Unit p90-ns better=lower
Unit p99-ns better=lower
Unit p99.9-ns better=lower
Unit p99.99-ns better=lower
Unit max-ns better=lower
Unit msgs/s better=higher
`

type bench struct {
	name  string
	size  float64 // bytes per op; 0: no MB/s
	nsop  float64 // mean latency
	iters int
}

var benches = []bench{
	{"WriteLat/transport=RC/size=8-2", 0, 31234, 2000},
	{"WriteLat/transport=RC/size=4096-2", 0, 45000, 2000},
	{"WriteBW/transport=RC/size=4096/qd=64/batch=1/signal=1-2", 4096, 89000, 20000},
	{"SendLat/transport=UD/size=64-2", 0, 33000, 2000},
}

// scale multiplies one benchmark's latency (ns) by a factor.
type scale map[string]float64

type file struct {
	name      string
	seed      uint64
	runs      int
	fw        string
	factor    scale
	skip      string // benchmark left out
	extra     bool   // add a benchmark only in this file
	perRunHdr bool   // repeat the header per run, as ci/interleave.sh output does
}

func main() {
	files := []file{
		{name: "base.txt", seed: 1, runs: 8, fw: "0.0.0"},
		{name: "noise.txt", seed: 2, runs: 8, fw: "0.0.0", perRunHdr: true},
		{name: "regress.txt", seed: 3, runs: 8, fw: "0.0.0", factor: scale{benches[0].name: 1.20}},
		{name: "improve.txt", seed: 4, runs: 8, fw: "0.0.0", factor: scale{benches[2].name: 1 / 1.25}},
		{name: "missing.txt", seed: 5, runs: 8, fw: "0.0.0", skip: benches[3].name, extra: true},
		{name: "few.txt", seed: 6, runs: 3, fw: "0.0.0"},
		{name: "few_regress.txt", seed: 8, runs: 3, fw: "0.0.0", factor: scale{benches[0].name: 1.20}},
		{name: "fw2.txt", seed: 7, runs: 8, fw: "2.0.0"},
	}
	for _, f := range files {
		if err := os.WriteFile(f.name, []byte(render(f)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func render(f file) string {
	rng := rand.New(rand.NewPCG(f.seed, 42))
	var sb strings.Builder
	bs := benches
	if f.extra {
		bs = append(bs[:len(bs):len(bs)], bench{"ReadLat/transport=RC/size=8-2", 0, 40000, 2000})
	}
	for run := 0; run < f.runs; run++ {
		if run == 0 || f.perRunHdr {
			fmt.Fprintf(&sb, header, f.fw)
		}
		for _, b := range bs {
			if b.name == f.skip {
				continue
			}
			fmt.Fprintln(&sb, line(rng, b, f.factor[b.name]))
		}
		if f.perRunHdr {
			fmt.Fprintln(&sb, "PASS")
		}
	}
	return sb.String()
}

func line(rng *rand.Rand, b bench, factor float64) string {
	if factor == 0 {
		factor = 1
	}
	jit := func(rel float64) float64 { return 1 + rel*rng.NormFloat64() }
	ns := b.nsop * factor * jit(0.01)
	p50 := 0.97 * b.nsop * factor * jit(0.01)
	rate := 1e9 / ns
	s := fmt.Sprintf("Benchmark%s %d %.0f ns/op", b.name, b.iters, ns)
	if b.size > 0 {
		s += fmt.Sprintf(" %.2f MB/s", rate*b.size/1e6)
	}
	s += fmt.Sprintf(" %.0f p50-ns %.0f p90-ns %.0f p99-ns %.0f p99.9-ns %.0f p99.99-ns %.0f max-ns %.0f msgs/s %.3f cqes/poll 0 B/op 0 allocs/op",
		p50, 1.12*p50*jit(0.015), 1.45*p50*jit(0.02), 2.7*p50*jit(0.05), 3.4*p50*jit(0.12),
		4*p50*(1+math.Abs(rng.NormFloat64())), rate, 1+0.05*rng.Float64())
	return s
}
