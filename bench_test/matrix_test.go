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

// points is the cartesian product of one variant's axes, in the order
// of scenario.Axes: each point sets its values in the Spec, and its
// name's parts are the axes' formats of them (scenario.Parse reads the
// same grammar back).
func points(op verbs.Opcode, v axes) []case_ {
	pts := []case_{{spec: scenario.Spec{Op: op}}}
	values := setters(v)
	for _, a := range scenario.Axes() {
		pts = dim(pts, a, values[a.Key])
	}
	return pts
}

// dim multiplies pts by the values of axis a (none: pts unchanged).
func dim(pts []case_, a scenario.Axis, values []func(*scenario.Spec)) []case_ {
	if len(values) == 0 {
		return pts
	}
	var next []case_
	for _, c := range pts {
		for _, set := range values {
			c2 := c
			set(&c2.spec)
			c2.name = c2.name.With(a.Key, a.Format(c2.spec))
			next = append(next, c2)
		}
	}
	return next
}

// setters returns, by axis key, one setter of the Spec per value of v's
// axis; every key of scenario.Axes has an entry (TestMatrixAxes checks).
func setters(v axes) map[string][]func(*scenario.Spec) {
	return map[string][]func(*scenario.Spec){
		"op":        each(v.op, func(s *scenario.Spec, x verbs.Opcode) { s.Op = x }),
		"transport": each(v.transport, func(s *scenario.Spec, x verbs.Transport) { s.Transport = x }),
		"size":      each(v.size, func(s *scenario.Spec, x int) { s.Size = x }),
		"qd":        each(v.qd, func(s *scenario.Spec, x int) { s.QD = x }),
		"qps":       each(v.qps, func(s *scenario.Spec, x int) { s.QPs = x }),
		"inline":    each(v.inline, func(s *scenario.Spec, x bool) { s.Inline = x }),
		"batch":     each(v.batch, func(s *scenario.Spec, x int) { s.Batch = x }),
		"signal":    each(v.signal, func(s *scenario.Spec, x int) { s.Signal = x }),
		"mode":      each(v.event, func(s *scenario.Spec, x bool) { s.Event = x }),
		"srq":       each(v.srq, func(s *scenario.Spec, x bool) { s.SRQ = x }),
		"bidir":     each(v.bidir, func(s *scenario.Spec, x bool) { s.Bidir = x }),
		"hdr":       each(v.hdr, func(s *scenario.Spec, x bool) { s.HeaderOnly = x }),
		"counters":  each(v.counters, func(s *scenario.Spec, x int) { s.Counters = x }),
		"stride":    each(v.stride, func(s *scenario.Spec, x int) { s.Stride = x }),
		"threads":   each(v.threads, func(s *scenario.Spec, x int) { s.Threads = x }),
		"side":      each(v.side, func(s *scenario.Spec, x bool) { s.Inbound = x }),
		"gap":       each(v.gap, func(s *scenario.Spec, x time.Duration) { s.Gap = x }),
		"mtu":       each(v.mtu, func(s *scenario.Spec, x int) { s.MTU = x }),
		"rate":      each(v.rate, func(s *scenario.Spec, x int) { s.Load = float64(x) / 100 }),
	}
}

// each binds set to every value of vals, in order.
func each[T any](vals []T, set func(*scenario.Spec, T)) []func(*scenario.Spec) {
	out := make([]func(*scenario.Spec), len(vals))
	for i, x := range vals {
		out[i] = func(s *scenario.Spec) { set(s, x) }
	}
	return out
}

// measurer is how a family's points are measured: the runner, its kind
// (scenario.Parse's runner for the family; 0 when Parse does not take
// it) and whether the specs enforce rdma_bench's selective-signalling
// invariants (Spec.SignalRules).
type measurer struct {
	measure func(*testing.B, *rdmatest.Dev, scenario.Spec)
	kind    scenario.Kind
	rules   bool
}

// latency runs a latency family.
func latency(b *testing.B, op verbs.Opcode, variants ...axes) {
	measured(b, op, variants, measurer{scenario.Latency, scenario.KindLatency, false})
}

// stream runs a streaming (bandwidth) family.
func stream(b *testing.B, op verbs.Opcode, variants ...axes) {
	measured(b, op, variants, measurer{scenario.Stream, scenario.KindStream, false})
}

// atc16 runs a streaming family of the rdma_bench scenarios, with
// rdma_bench's selective-signalling invariants enforced (Spec.SignalRules).
func atc16(b *testing.B, op verbs.Opcode, variants ...axes) {
	measured(b, op, variants, measurer{scenario.Stream, scenario.KindStream, true})
}

// listing, when not nil, makes run and control append the names of
// their families' default points to it and return, before they touch
// their *testing.B (listFamilies calls the benchmark functions with a
// nil one): no device, no -short, no -rdma.sizes or -rdma.qd.
var listing *[]benchname.Name

// listingCases, when not nil as well as listing, makes measured append
// its families' default points to it too, with their specs and runner kinds
// (control appends nothing).
var listingCases *[]listedCase

// listedCase is a point of the default matrix with the kind of its
// family's runner (0: neither Latency nor Stream).
type listedCase struct {
	case_
	kind scenario.Kind
}

// run runs a family whose runner is measure (not one scenario.Parse
// takes).
func run(b *testing.B, op verbs.Opcode, variants []axes, measure func(*testing.B, *rdmatest.Dev, scenario.Spec)) {
	measured(b, op, variants, measurer{measure: measure})
}

// measured runs the points of variants with m, or lists them (see
// listing).
func measured(b *testing.B, op verbs.Opcode, variants []axes, m measurer) {
	if listing != nil {
		list(op, variants, m)
		return
	}
	d := rdmatest.Device(b)
	for _, c := range expand(b, op, variants) {
		c.spec.SignalRules = m.rules
		b.Run(c.name.Sub(), func(b *testing.B) {
			rdmatest.CheckLeaks(b)
			m.measure(b, d, c.spec)
		})
	}
}

// list appends the default points of variants to listing (and
// listingCases).
func list(op verbs.Opcode, variants []axes, m measurer) {
	for _, v := range variants {
		for _, c := range points(op, v) {
			c.spec.SignalRules = m.rules
			*listing = append(*listing, c.name)
			if listingCases != nil {
				*listingCases = append(*listingCases, listedCase{c, m.kind})
			}
		}
	}
}
