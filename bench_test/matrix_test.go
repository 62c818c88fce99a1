package bench

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/benchname"
	"github.com/rdmabench/rdmabench/rdmatest/scenario"
	"github.com/rdmabench/rdmabench/verbs"
)

var (
	flagSizes = flag.String("rdma.sizes", os.Getenv("RDMA_SIZES"), "message sizes for every size axis, e.g. 64,4K or 2-1M or all [RDMA_SIZES]")
	flagQD    = flag.String("rdma.qd", os.Getenv("RDMA_QD"), "queue depths for every qd axis of the streaming families, e.g. 16,64 [RDMA_QD]")
	flagFull  = flag.Bool("rdma.full", envFull, "run the full sweeps of the rdma_bench (ATC'16) and control-path benchmarks [RDMA_FULL=1]")
)

// envFull is RDMA_FULL as a boolean (1, true, 0, false, …); errFull says
// when it is none.
var envFull, errFull = func() (bool, error) {
	v, ok := os.LookupEnv("RDMA_FULL")
	if !ok || v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("RDMA_FULL=%q is not a boolean (1, true, 0 or false)", v)
	}
	return b, nil
}()

// matrixFlags reads -rdma.sizes and -rdma.qd (nil: each axis keeps its
// own values) and checks RDMA_FULL; TestMain refuses a bad one before any
// benchmark runs.
func matrixFlags() (sizes, qds []int, err error) {
	if errFull != nil {
		return nil, nil, errFull
	}
	if *flagSizes != "" {
		if sizes, err = scenario.ParseSizes(*flagSizes); err != nil {
			return nil, nil, fmt.Errorf("-rdma.sizes: %w", err)
		}
	}
	if *flagQD != "" {
		for _, f := range strings.Split(*flagQD, ",") {
			var q int
			if _, err := fmt.Sscan(f, &q); err != nil || q < 1 || fmt.Sprint(q) != strings.TrimSpace(f) {
				return nil, nil, fmt.Errorf("-rdma.qd %q: %q is not a queue depth (a whole number ≥ 1)", *flagQD, f)
			}
			qds = append(qds, q)
		}
	}
	return sizes, qds, nil
}

// full returns the full sweep under -rdma.full and the default one
// otherwise.
func full[T any](def, all []T) []T {
	if *flagFull {
		return all
	}
	return def
}

// TestMain refuses bad matrix flags (-rdma.sizes, -rdma.qd, RDMA_FULL)
// with exit status 2 before anything runs, then runs rdmatest.Main, which
// does the same for the -rdma.* flags it registers.
func TestMain(m *testing.M) {
	rdmatest.RegisterFlags(flag.CommandLine)
	flag.Parse()
	if _, _, err := matrixFlags(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	rdmatest.Main(m)
}

// axes is one variant of a benchmark family: the cartesian product of its
// values. A nil axis keeps the default and does not appear in the name;
// every variant of a family declares the same axes, so names line up
// (TestMatrixNames checks).
type axes struct {
	transport []verbs.Transport
	op        []verbs.Opcode // atomics: fadd or cas
	size      []int
	qd        []int
	qps       []int
	inline    []bool
	batch     []int
	signal    []int
	event     []bool
	srq       []bool
	bidir     []bool
	hdr       []bool // header-only (Spec.HeaderOnly)
	counters  []int  // atomics: counters the WRs rotate over
	stride    []int  // atomics: bytes between counters
	threads   []int
	side      []bool // true: the rate seen at the responder (Spec.Inbound)
	rate      []int  // offered load, percent of the measured peak (Spec.Load)
	gap       []time.Duration
	mtu       []int // path MTU in bytes (Spec.MTU)
}

var (
	rc       = []verbs.Transport{verbs.TransportRC}
	rcUC     = []verbs.Transport{verbs.TransportRC, verbs.TransportUC}
	rcUCUD   = []verbs.Transport{verbs.TransportRC, verbs.TransportUC, verbs.TransportUD}
	no       = []bool{false}
	yes      = []bool{true}
	one      = []int{1}
	atomicOp = []verbs.Opcode{verbs.OpFetchAdd, verbs.OpCmpSwap}
)

// case_ is one point of a matrix: its name (the sub-benchmark's parts)
// and its spec.
type case_ struct {
	name benchname.Name
	spec scenario.Spec
}

// expand lists the points of the variants. In -short mode only the first
// point of each variant runs.
func expand(tb testing.TB, op verbs.Opcode, variants []axes) []case_ {
	sizes, qds, err := matrixFlags()
	if err != nil {
		tb.Fatal(err)
	}
	var out []case_
	for _, v := range variants {
		if sizes != nil && v.size != nil && !slices.Contains(v.hdr, true) { // header-only is size 0
			v.size = sizes
		}
		if qds != nil && v.qd != nil {
			v.qd = qds
		}
		pts := points(op, v)
		if testing.Short() {
			pts = pts[:1]
		}
		out = append(out, pts...)
	}
	return out
}

// points is the cartesian product of one variant's axes.
func points(op verbs.Opcode, v axes) []case_ {
	pts := []case_{{spec: scenario.Spec{Op: op}}}
	dim := func(key string, n int, apply func(c *case_, i int) string) {
		if n == 0 {
			return
		}
		var next []case_
		for _, c := range pts {
			for i := range n {
				c2 := c
				c2.name = c2.name.With(key, apply(&c2, i))
				next = append(next, c2)
			}
		}
		pts = next
	}
	dim("op", len(v.op), func(c *case_, i int) string {
		c.spec.Op = v.op[i]
		return map[verbs.Opcode]string{verbs.OpFetchAdd: "fadd", verbs.OpCmpSwap: "cas", verbs.OpWrite: "write", verbs.OpSendImm: "send"}[v.op[i]]
	})
	dim("transport", len(v.transport), func(c *case_, i int) string { c.spec.Transport = v.transport[i]; return v.transport[i].String() })
	dim("size", len(v.size), func(c *case_, i int) string { c.spec.Size = v.size[i]; return fmt.Sprint(v.size[i]) })
	dim("qd", len(v.qd), func(c *case_, i int) string { c.spec.QD = v.qd[i]; return fmt.Sprint(v.qd[i]) })
	dim("qps", len(v.qps), func(c *case_, i int) string { c.spec.QPs = v.qps[i]; return fmt.Sprint(v.qps[i]) })
	dim("inline", len(v.inline), func(c *case_, i int) string { c.spec.Inline = v.inline[i]; return fmt.Sprint(v.inline[i]) })
	dim("batch", len(v.batch), func(c *case_, i int) string { c.spec.Batch = v.batch[i]; return fmt.Sprint(v.batch[i]) })
	dim("signal", len(v.signal), func(c *case_, i int) string { c.spec.Signal = v.signal[i]; return fmt.Sprint(v.signal[i]) })
	dim("mode", len(v.event), func(c *case_, i int) string {
		c.spec.Event = v.event[i]
		return map[bool]string{false: "poll", true: "event"}[v.event[i]]
	})
	dim("srq", len(v.srq), func(c *case_, i int) string { c.spec.SRQ = v.srq[i]; return fmt.Sprint(v.srq[i]) })
	dim("bidir", len(v.bidir), func(c *case_, i int) string { c.spec.Bidir = v.bidir[i]; return fmt.Sprint(v.bidir[i]) })
	dim("hdr", len(v.hdr), func(c *case_, i int) string { c.spec.HeaderOnly = v.hdr[i]; return fmt.Sprint(v.hdr[i]) })
	dim("counters", len(v.counters), func(c *case_, i int) string { c.spec.Counters = v.counters[i]; return fmt.Sprint(v.counters[i]) })
	dim("stride", len(v.stride), func(c *case_, i int) string { c.spec.Stride = v.stride[i]; return fmt.Sprint(v.stride[i]) })
	dim("threads", len(v.threads), func(c *case_, i int) string { c.spec.Threads = v.threads[i]; return fmt.Sprint(v.threads[i]) })
	dim("side", len(v.side), func(c *case_, i int) string {
		c.spec.Inbound = v.side[i]
		return map[bool]string{false: "requester", true: "responder"}[v.side[i]]
	})
	dim("gap", len(v.gap), func(c *case_, i int) string { c.spec.Gap = v.gap[i]; return v.gap[i].String() })
	dim("mtu", len(v.mtu), func(c *case_, i int) string { c.spec.MTU = v.mtu[i]; return fmt.Sprint(v.mtu[i]) })
	dim("rate", len(v.rate), func(c *case_, i int) string {
		c.spec.Load = float64(v.rate[i]) / 100
		return fmt.Sprint(v.rate[i]) + "%"
	})
	return pts
}

// latency runs a latency family.
func latency(b *testing.B, op verbs.Opcode, variants ...axes) {
	run(b, op, variants, scenario.Latency)
}

// stream runs a streaming (bandwidth) family.
func stream(b *testing.B, op verbs.Opcode, variants ...axes) {
	run(b, op, variants, scenario.Stream)
}

// atc16 runs a streaming family of the rdma_bench scenarios, with
// rdma_bench's selective-signalling invariants enforced (Spec.SignalRules).
func atc16(b *testing.B, op verbs.Opcode, variants ...axes) {
	run(b, op, variants, func(b *testing.B, d *rdmatest.Dev, s scenario.Spec) {
		s.SignalRules = true
		scenario.Stream(b, d, s)
	})
}

// listing, when not nil, makes run and control append the names of
// their families' default points to it and return, before they touch
// their *testing.B (listFamilies calls the benchmark functions with a
// nil one): no device, no -short, no -rdma.sizes or -rdma.qd.
var listing *[]benchname.Name

func run(b *testing.B, op verbs.Opcode, variants []axes, measure func(*testing.B, *rdmatest.Dev, scenario.Spec)) {
	if listing != nil {
		for _, v := range variants {
			for _, c := range points(op, v) {
				*listing = append(*listing, c.name)
			}
		}
		return
	}
	d := rdmatest.Device(b)
	for _, c := range expand(b, op, variants) {
		b.Run(c.name.Sub(), func(b *testing.B) {
			rdmatest.CheckLeaks(b)
			measure(b, d, c.spec)
		})
	}
}
