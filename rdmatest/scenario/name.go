package scenario

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/benchname"
	"github.com/rdmabench/rdmabench/verbs"
)

// Runner measures a Spec on a device: Latency or Stream.
type Runner func(b *testing.B, d *rdmatest.Dev, s Spec)

// Named is a scenario of the bench_test matrix chosen by its name: the
// family and the Spec of one point. Spec.Kind is the family's runner
// (KindLatency: Latency, KindStream: Stream).
type Named struct {
	// Family is the family's base, e.g. "WriteBW".
	Family string
	// Spec is the point: Kind, the family's verb, SignalRules for the
	// ATC'16 stream families, the values the name gave and the zero
	// value (the runner's default) for every other field, as in the
	// matrix.
	Spec Spec

	keys []string // the keys the name gave, in the order of Axes
}

// Runner returns the family's runner.
func (n Named) Runner() Runner {
	if n.Spec.Kind == KindLatency {
		return Latency
	}
	return Stream
}

// Run measures n.Spec with the family's runner.
func (n Named) Run(b *testing.B, d *rdmatest.Dev) { n.Runner()(b, d, n.Spec) }

// String returns the canonical name: the family and the parts the name
// gave, in the matrix's order, each value as Axis.Format writes it,
// without "Benchmark" and the -GOMAXPROCS suffix. For a name of the
// matrix it is that name.
func (n Named) String() string {
	name := benchname.Name{Base: n.Family}
	for _, k := range n.keys {
		a, _ := axisOf(k)
		name.Parts = append(name.Parts, benchname.Part{Key: k, Value: a.Format(n.Spec)})
	}
	return name.String()
}

// family is what Parse knows of a bench_test family.
type family struct {
	kind   Kind
	op     verbs.Opcode // the verb, unless atomic
	atomic bool         // op=fadd or op=cas is required and names the verb
	rules  bool         // Spec.SignalRules (the ATC'16 stream families)
	keys   []string     // the family's axes, in name order
}

// lat is a family of Latency runs of verb op with axes keys.
func lat(op verbs.Opcode, keys ...string) family {
	return family{kind: KindLatency, op: op, keys: keys}
}

// bw is a family of Stream runs of verb op with axes keys.
func bw(op verbs.Opcode, keys ...string) family {
	return family{kind: KindStream, op: op, keys: keys}
}

// atomic makes f a family whose op= axis names its atomic verb.
func atomic(f family) family { f.atomic = true; return f }

// atc16 makes f a family of rdma_bench's (ATC'16) streams, which
// enforce the selective-signalling invariants (Spec.SignalRules).
func atc16(f family) family { f.rules = true; return f }

// families are the bench_test families that Parse takes: those whose
// runner is Latency or Stream, which run against a remote peer
// (bench_test's parse_test.go checks this table against the matrix).
var families = map[string]family{
	// perftest_test.go
	"SendLat":     lat(verbs.OpSend, "transport", "size", "inline", "mode"),
	"WriteLat":    lat(verbs.OpWrite, "transport", "size", "inline"),
	"WriteLatGap": lat(verbs.OpWrite, "transport", "size", "gap"),
	"WriteLatMTU": lat(verbs.OpWrite, "transport", "size", "mtu"),
	"ReadLat":     lat(verbs.OpRead, "transport", "size", "mode"),
	"AtomicLat":   atomic(lat(0, "op", "transport")),
	"SendBW":      bw(verbs.OpSend, "transport", "size", "qd", "batch", "signal", "mode", "srq", "bidir"),
	"WriteBW":     bw(verbs.OpWrite, "transport", "size", "qd", "qps", "inline", "batch", "signal", "bidir"),
	"ReadBW":      bw(verbs.OpRead, "transport", "size", "qd"),
	"AtomicBW":    atomic(bw(0, "op", "transport", "qd")),
	// load_test.go
	"SendLoad":  bw(verbs.OpSend, "transport", "size", "qd", "rate"),
	"WriteLoad": bw(verbs.OpWrite, "transport", "size", "qd", "rate"),
	// atc16_test.go
	"DoorbellWrite":    atc16(bw(verbs.OpWrite, "transport", "size", "qd", "inline", "batch", "signal")),
	"DoorbellRead":     atc16(bw(verbs.OpRead, "transport", "size", "qd", "batch", "signal")),
	"DoorbellSend":     atc16(bw(verbs.OpSend, "transport", "size", "qd", "inline", "batch", "signal")),
	"Threads":          atc16(bw(verbs.OpSend, "transport", "size", "qd", "qps", "inline", "batch", "signal", "threads")),
	"InboundSend":      atc16(bw(verbs.OpSend, "transport", "size", "qd", "side")),
	"InboundWrite":     atc16(bw(verbs.OpWriteImm, "transport", "size", "qd", "side")),
	"HeaderOnly":       atc16(bw(verbs.OpSendImm, "transport", "size", "qd", "hdr", "side")),
	"AtomicContention": atomic(atc16(bw(0, "op", "transport", "qd", "counters", "stride"))),
	"ReadWindow":       bw(verbs.OpRead, "transport", "size", "qd"),
}

// local are the bench_test families Parse refuses, and why: the control
// path has no side B; EchoRPC runs against a peer under go test, but not
// in the fabric agent.
var local = map[string]string{
	"EchoRPC":     "the fabric agent does not run echo RPCs yet (go test -rdma.peer does)",
	"RegMR":       "it is the control path, with no side B",
	"Connect":     "it is the control path, with no side B",
	"CreateQueue": "it is the control path, with no side B",
}

// Families lists the families Parse takes, sorted.
func Families() []string {
	out := make([]string, 0, len(families))
	for f := range families {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// Parse reads a benchmark name as go test prints it, with or without
// "Benchmark" and the -GOMAXPROCS suffix, e.g.
// "BenchmarkWriteBW/transport=RC/size=65536/qd=128-8", or a short form
// such as "WriteBW/size=65536": a key the name does not give keeps the
// Spec's zero value (the runner's default), as in the matrix. The parts
// may come in any order.
//
// It fails, naming what it refuses and listing what it takes, on an
// unknown family, a family it does not take (the control path, which
// has no side B, and EchoRPC, which the fabric agent does not run), a key that is not one of the family's
// axes, a key given twice, a value Axis.Set refuses, and an atomic
// family without op=fadd or op=cas. A point that is valid by name may
// still be unsupported on a device: its runner skips it with the reason.
func Parse(name string) (Named, error) {
	n, err := benchname.Parse(name)
	if err != nil {
		return Named{}, fmt.Errorf("scenario: %w", err)
	}
	f, err := familyOf(n.Base)
	if err != nil {
		return Named{}, fmt.Errorf("scenario: benchmark name %q: %w", name, err)
	}
	named, err := f.parse(n)
	if err != nil {
		return Named{}, fmt.Errorf("scenario: benchmark name %q: %w", name, err)
	}
	return named, nil
}

// familyOf returns the family of base.
func familyOf(base string) (family, error) {
	if f, ok := families[base]; ok {
		return f, nil
	}
	known := strings.Join(Families(), ", ")
	if why, ok := local[base]; ok {
		return family{}, fmt.Errorf("family %s is not one Parse takes: %s (the families it takes: %s)", base, why, known)
	}
	return family{}, fmt.Errorf("unknown family %q (known: %s)", base, known)
}

// parse reads n's parts into a Named of the family.
func (f family) parse(n benchname.Name) (Named, error) {
	named := Named{Family: n.Base, Spec: Spec{Kind: f.kind, Op: f.op, SignalRules: f.rules}}
	for _, p := range n.Parts {
		a, err := f.axis(n.Base, p.Key)
		if err != nil {
			return Named{}, err
		}
		if slices.Contains(named.keys, p.Key) {
			return Named{}, fmt.Errorf("key %q given twice", p.Key)
		}
		if err := a.Set(&named.Spec, p.Value); err != nil {
			return Named{}, err
		}
		named.keys = append(named.keys, p.Key)
	}
	if err := f.checkOp(n.Base, named); err != nil {
		return Named{}, err
	}
	slices.SortFunc(named.keys, func(a, b string) int { return axisIndex(a) - axisIndex(b) })
	return named, nil
}

// axisIndex is the place of key in the order of Axes.
func axisIndex(key string) int {
	return slices.IndexFunc(axes, func(a Axis) bool { return a.Key == key })
}

// axis returns the axis of key if it is one of the family's.
func (f family) axis(base, key string) (Axis, error) {
	a, ok := axisOf(key)
	switch {
	case !ok:
		known := make([]string, len(axes))
		for i, a := range axes {
			known[i] = a.Key
		}
		return Axis{}, fmt.Errorf("unknown key %q (known: %s)", key, strings.Join(known, ", "))
	case !slices.Contains(f.keys, key):
		return Axis{}, fmt.Errorf("%s has no key %q (its keys: %s)", base, key, strings.Join(f.keys, ", "))
	}
	return a, nil
}

// checkOp requires an atomic verb of an atomic family.
func (f family) checkOp(base string, n Named) error {
	switch {
	case !f.atomic:
		return nil
	case !slices.Contains(n.keys, "op"):
		return fmt.Errorf("%s needs op=fadd or op=cas", base)
	case n.Spec.Op != verbs.OpFetchAdd && n.Spec.Op != verbs.OpCmpSwap:
		return fmt.Errorf("%s needs op=fadd or op=cas, not op=%s", base, opAxis().Format(n.Spec))
	}
	return nil
}
