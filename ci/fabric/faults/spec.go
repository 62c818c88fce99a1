package main

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Kind is what a fault does to the packets it applies to.
type Kind string

// The kinds of fault, all netem (sch_netem) on the sender's egress.
const (
	Delay Kind = "delay" // a fixed added delay, in ms
	Loss  Kind = "loss"  // a random loss, in percent of packets
	Rate  Kind = "rate"  // a rate limit, in percent of the healthy pass's median MB/s
)

// Limits of a fault's value, checked by Parse.
var limits = map[Kind][2]float64{
	Delay: {1, 1000}, // ms
	Loss:  {0.1, 50}, // %
	Rate:  {5, 95},   // % of the reference MB/s
}

// Ranges of a drawn fault's value (issue #44): delay 20-50 ms, loss
// 2-5%, a rate limit to 30-50%.
var drawn = map[Kind][2]float64{
	Delay: {20, 50},
	Loss:  {2, 5},
	Rate:  {30, 50},
}

// Dir is the side a fault is on. For a node: Egress (what it sends),
// Ingress (what the others send it) or Both. For a link A-B: OneWay
// (what A sends B) or Both.
type Dir string

// The directions.
const (
	Egress  Dir = "egress"
	Ingress Dir = "ingress"
	OneWay  Dir = "oneway"
	Both    Dir = "both"
)

// Fault is one fault: on a node (B empty) or on the link A-B.
type Fault struct {
	A, B  string
	Kind  Kind
	Value float64 // ms for Delay, percent for Loss and Rate
	Dir   Dir
}

// IsLink reports whether f is a link's fault.
func (f Fault) IsLink() bool { return f.B != "" }

// String is f in the syntax Parse reads.
func (f Fault) String() string {
	var s string
	if f.IsLink() {
		s = "link=" + f.A + "-" + f.B
	} else {
		s = "node=" + f.A
	}
	v := strconv.FormatFloat(f.Value, 'f', -1, 64)
	if f.Kind == Delay {
		v += "ms"
	} else {
		v += "%"
	}
	return s + ":" + string(f.Kind) + "=" + v + ":" + string(f.Dir)
}

// Spec is a set of faults: at most one bad node and one bad link.
type Spec []Fault

// String is s in the syntax Parse reads.
func (s Spec) String() string {
	parts := make([]string, len(s))
	for i, f := range s {
		parts[i] = f.String()
	}
	return strings.Join(parts, " ")
}

// nodeName is a node name as the guests have them.
var nodeName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// Parse reads a spec: space-separated faults, each
//
//	node=NAME:KIND=VALUE[:egress|:ingress|:both]
//	link=A-B:KIND=VALUE[:oneway|:both]
//
// KIND=VALUE is delay=Nms, loss=N% or rate=N% (of the healthy pass's
// median MB/s); the direction defaults to both. nodes lists the names a
// fault may use. At most one node fault and one link fault; the link's
// ends are two nodes other than the bad node.
func Parse(text string, nodes []string) (Spec, error) {
	var s Spec
	for _, item := range strings.Fields(text) {
		f, err := parseFault(item, nodes)
		if err != nil {
			return nil, err
		}
		s = append(s, f)
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("fault spec %q: no fault (want node=NAME:KIND=VALUE and/or link=A-B:KIND=VALUE)", text)
	}
	return s, s.check()
}

func parseFault(item string, nodes []string) (Fault, error) {
	var f Fault
	parts := strings.Split(item, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return f, fmt.Errorf("fault %q: want node=NAME:KIND=VALUE[:DIR] or link=A-B:KIND=VALUE[:DIR]", item)
	}
	where, what := parts[0], parts[1]
	known := func(n string) error {
		if !nodeName.MatchString(n) || !slices.Contains(nodes, n) {
			return fmt.Errorf("fault %q: node %q is not one of %s", item, n, strings.Join(nodes, ","))
		}
		return nil
	}
	switch {
	case strings.HasPrefix(where, "node="):
		f.A = strings.TrimPrefix(where, "node=")
		if err := known(f.A); err != nil {
			return f, err
		}
	case strings.HasPrefix(where, "link="):
		a, b, ok := strings.Cut(strings.TrimPrefix(where, "link="), "-")
		if !ok {
			return f, fmt.Errorf("fault %q: link %q: want A-B, two node names", item, where)
		}
		for _, n := range []string{a, b} {
			if err := known(n); err != nil {
				return f, err
			}
		}
		if a == b {
			return f, fmt.Errorf("fault %q: a link from %s to itself", item, a)
		}
		f.A, f.B = a, b
	default:
		return f, fmt.Errorf("fault %q: %q: want node=NAME or link=A-B", item, where)
	}
	k, v, ok := strings.Cut(what, "=")
	f.Kind = Kind(k)
	lim, known2 := limits[f.Kind]
	if !ok || !known2 {
		return f, fmt.Errorf("fault %q: %q: want delay=Nms, loss=N%% or rate=N%%", item, what)
	}
	suffix := "%"
	if f.Kind == Delay {
		suffix = "ms"
	}
	num, ok := strings.CutSuffix(v, suffix)
	x, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || !(x >= lim[0] && x <= lim[1]) {
		return f, fmt.Errorf("fault %q: %s=%q: want a number %g-%g followed by %s", item, k, v, lim[0], lim[1], suffix)
	}
	f.Value = x
	f.Dir = Both
	if len(parts) == 3 {
		f.Dir = Dir(parts[2])
		ok := f.Dir == Both || (f.IsLink() && f.Dir == OneWay) || (!f.IsLink() && (f.Dir == Egress || f.Dir == Ingress))
		if !ok {
			want := "egress, ingress or both"
			if f.IsLink() {
				want = "oneway or both"
			}
			return f, fmt.Errorf("fault %q: direction %q: want %s", item, parts[2], want)
		}
	}
	return f, nil
}

// check enforces at most one node and one link fault, the link away
// from the node.
func (s Spec) check() error {
	node, link := s.Node(), s.Link()
	var nn, nl int
	for _, f := range s {
		if f.IsLink() {
			nl++
		} else {
			nn++
		}
	}
	switch {
	case nn > 1:
		return fmt.Errorf("fault spec %q: %d node faults, want at most 1", s, nn)
	case nl > 1:
		return fmt.Errorf("fault spec %q: %d link faults, want at most 1", s, nl)
	case node != nil && link != nil && (link.A == node.A || link.B == node.A):
		return fmt.Errorf("fault spec %q: the link %s-%s touches the bad node %s: a link's ends must be healthy nodes", s, link.A, link.B, node.A)
	}
	return nil
}

// Node is the node fault, nil for none.
func (s Spec) Node() *Fault {
	for i := range s {
		if !s[i].IsLink() {
			return &s[i]
		}
	}
	return nil
}

// Link is the link fault, nil for none.
func (s Spec) Link() *Fault {
	for i := range s {
		if s[i].IsLink() {
			return &s[i]
		}
	}
	return nil
}

// Draw draws a bad node and a bad link away from it from nodes (at
// least 4), each with a kind, a value in its drawn range (rounded to a
// whole ms or percent) and a direction, one-way or both with even odds
// (a one-way node fault is on its egress; a one-way link fault goes
// from a drawn end to the other).
func Draw(seed uint64, nodes []string) (Spec, error) {
	if len(nodes) < 4 {
		return nil, fmt.Errorf("draw faults: %d nodes, want at least 4 (a bad node and a link between two others, judged against a healthy fourth)", len(nodes))
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	kinds := []Kind{Delay, Loss, Rate}
	value := func(k Kind) float64 {
		lo, hi := drawn[k][0], drawn[k][1]
		return lo + float64(r.IntN(int(hi-lo)+1))
	}
	bad := nodes[r.IntN(len(nodes))]
	var rest []string
	for _, n := range nodes {
		if n != bad {
			rest = append(rest, n)
		}
	}
	i := r.IntN(len(rest))
	j := r.IntN(len(rest) - 1)
	if j >= i {
		j++
	}
	nk, lk := kinds[r.IntN(len(kinds))], kinds[r.IntN(len(kinds))]
	nf := Fault{A: bad, Kind: nk, Value: value(nk), Dir: Both}
	if r.IntN(2) == 0 {
		nf.Dir = Egress
	}
	lf := Fault{A: rest[i], B: rest[j], Kind: lk, Value: value(lk), Dir: Both}
	if r.IntN(2) == 0 {
		lf.Dir = OneWay
	}
	return Spec{nf, lf}, nil
}
