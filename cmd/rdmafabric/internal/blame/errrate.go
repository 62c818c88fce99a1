package blame

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/internal/stats"
)

// CodeErrorRate is a node's or a link's verdict from its error counters:
// retransmissions, retries and sequence errors per operation far above
// the fabric's, whatever its timing (issue #44).
const CodeErrorRate = "error-rate"

// unitErrors is the unit of an error-rate finding: the watched counter
// deltas of a link's source node, summed over its runs, per iteration.
const unitErrors = "errors/op"

// Error rates: how far above the reference a rate must be, the fewest
// events a run that counts, and the least rate that can name anything.
// Error counters come in bursts (one timeout retries a window): in
// rxe's TCG guests, healthy links erred up to 0.3 times an operation
// (14 of 50, in both runs of a pass) while a node losing 5% of what it
// sent erred 6 times, and a link delaying 40 ms twice.
const (
	errFactor    = 4.0
	errMinEvents = 5.0
	errMinRate   = 0.5 // errors per operation
)

// counterUnit reports whether unit is a counter's per-run delta,
// "<counter>/run" (rdmafabric writes the source node's watched counters
// that moved during a run so, lower is better), and not traffic or the
// preempted/run noise diagnostic.
func counterUnit(unit string) bool {
	c, ok := strings.CutSuffix(unit, "/run")
	return ok && c != "" && c != "preempted" && !isTraffic(c)
}

// errRates is one scenario's error counts per link: over all its runs
// (view 0) and over each run alone (views 1…r).
type errRates struct {
	scenario string
	links    []Link
	events   [][]float64      // view → link → counter deltas
	ops      [][]float64      // view → link → iterations
	of       map[string][]int // node → indices of its links
}

// errRatesOf gathers the error counts of every scenario whose rows
// have a counter unit (none in a stream without them, such as one
// written before the counters were per row). Run k of every link is
// pass k.
func errRatesOf(f *Fabric) []*errRates {
	var out []*errRates
	for _, sc := range f.Scenarios {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(f.Runs[sc])), counterUnit) {
			continue
		}
		r := 0
		for _, l := range f.Links {
			if n := len(f.Iters[sc][l]); n > 0 && (r == 0 || n < r) {
				r = n
			}
		}
		views := 1
		if r >= 2 {
			views += r
		}
		e := &errRates{scenario: sc, of: make(map[string][]int), events: make([][]float64, views), ops: make([][]float64, views)}
		for _, l := range f.Links {
			iters, errs := f.Iters[sc][l], f.Errors[sc][l]
			if len(iters) == 0 {
				continue
			}
			i := len(e.links)
			e.links = append(e.links, l)
			e.of[l.Src], e.of[l.Dst] = append(e.of[l.Src], i), append(e.of[l.Dst], i)
			var all, ops float64
			for k, n := range iters {
				all, ops = all+errs[k], ops+float64(n)
			}
			e.events[0], e.ops[0] = append(e.events[0], all), append(e.ops[0], ops)
			for v := 1; v < views; v++ {
				e.events[v] = append(e.events[v], errs[v-1])
				e.ops[v] = append(e.ops[v], float64(iters[v-1]))
			}
		}
		out = append(out, e)
	}
	return out
}

func (e *errRates) rate(view, i int) float64 { return e.events[view][i] / e.ops[view][i] }

// reference is the level the others' rates reach: their upper quartile
// (bursts make a healthy link err when its peers do not).
func reference(others []float64) float64 {
	s := slices.Clone(others)
	slices.Sort(s)
	return stats.QuantileSorted(s, 0.75)
}

// exceeds reports whether a rate over ops operations is bad against the
// reference: above errFactor times it, at least errMinRate, and at least
// errMinEvents events.
func exceeds(rate, ops, ref float64) bool {
	return rate > errFactor*ref && rate >= errMinRate && rate*ops >= errMinEvents
}

// linksOf lists node's links in direction d but those to nodes in skip.
func (e *errRates) linksOf(node string, d direction, skip map[string][]Finding) []int {
	var out []int
	for _, i := range e.of[node] {
		l := e.links[i]
		peer, dir := l.Dst, sending
		if l.Dst == node {
			peer, dir = l.Src, receiving
		}
		if dir == d && skip[peer] == nil {
			out = append(out, i)
		}
	}
	return out
}

// best is node's least error rate in direction d in a view, over its
// links but those to nodes in skip, and the index of that link (−1 for
// none).
func (e *errRates) best(view int, node string, d direction, skip map[string][]Finding) (float64, int) {
	at, r := -1, math.Inf(1)
	for _, i := range e.linksOf(node, d, skip) {
		if x := e.rate(view, i); x < r {
			at, r = i, x
		}
	}
	return r, at
}

// badNode judges node's best rate in direction d in a view against the
// other nodes' best rates there; it returns the rate and the reference.
func (e *errRates) badNode(view int, node string, d direction, nodes []string, skip map[string][]Finding) (bad bool, rate, ref float64) {
	rate, at := e.best(view, node, d, skip)
	if at < 0 {
		return false, 0, 0
	}
	var others []float64
	for _, n := range nodes {
		if n == node {
			continue
		}
		if x, i := e.best(view, n, d, skip); i >= 0 {
			others = append(others, x)
		}
	}
	if len(others) < minOthers {
		return false, rate, 0
	}
	ref = reference(others)
	return exceeds(rate, e.ops[view][at], ref), rate, ref
}

// errorNodes names the nodes whose error rate with their best partner,
// in a direction, is far above the other nodes', over all runs and in
// every run alone: a lossy transmitter or port errs on every link, a
// lossy cable only on its own.
func (j *judgement) errorNodes(rates []*errRates) {
	for _, e := range rates {
		nodes := slices.Sorted(maps.Keys(e.of))
		skip := maps.Clone(j.nodes)
		for _, n := range nodes {
			for _, d := range directions {
				bad, rate, ref := e.badNode(0, n, d, nodes, skip)
				for v := 1; bad && v < len(e.events); v++ {
					bad, _, _ = e.badNode(v, n, d, nodes, skip)
				}
				if bad {
					j.nodes[n] = append(j.nodes[n], errFinding(e.scenario, d.String(), rate, ref, len(e.linksOf(n, d, skip))))
				}
			}
		}
	}
}

// errorLinks names the links between nodes not named whose error rate
// is far above the other such links' (the link's reverse left out: one
// cable errs both ways), over all runs and in every run alone.
func (j *judgement) errorLinks(rates []*errRates) {
	for _, e := range rates {
		var cand []int
		for i, l := range e.links {
			if j.nodes[l.Src] == nil && j.nodes[l.Dst] == nil {
				cand = append(cand, i)
			}
		}
		badIn := func(view, i int) (bool, float64) {
			l := e.links[i]
			var others []float64
			for _, k := range cand {
				if k != i && e.links[k] != (Link{l.Dst, l.Src}) {
					others = append(others, e.rate(view, k))
				}
			}
			if len(others) < minOthers {
				return false, 0
			}
			ref := reference(others)
			return exceeds(e.rate(view, i), e.ops[view][i], ref), ref
		}
		for _, i := range cand {
			bad, ref := badIn(0, i)
			for v := 1; bad && v < len(e.events); v++ {
				bad, _ = badIn(v, i)
			}
			if bad {
				l := e.links[i]
				j.links[l] = append(j.links[l], errFinding(e.scenario, "", e.rate(0, i), ref, 1))
			}
		}
	}
}

// errFinding is an error-rate finding: Median the rate, FabricMedian
// the reference (the others' upper quartile), Score and Threshold the
// rate and errFactor over the reference (above 1 is worse; the rate
// itself when the reference is 0).
func errFinding(scenario, dir string, rate, ref float64, links int) Finding {
	score := rate
	if ref > 0 {
		score = rate / ref
	}
	return Finding{
		Code: CodeErrorRate, Direction: dir, Pass: 1, Scenario: scenario, Unit: unitErrors,
		Score: score, Threshold: errFactor, Median: rate, FabricMedian: ref, Links: links,
	}
}

// errAgain reports whether a suspect's error-rate finding fd shows again
// in the second pass: the pooled rate of the suspect's retest links
// there (keep picks them) exceeds the first pass's reference. It
// returns the second pass's finding.
func errAgain(second *Fabric, fd Finding, keep func(l Link) bool) (Finding, bool) {
	var ev, ops float64
	links := 0
	for _, e := range errRatesOf(second) {
		if e.scenario != fd.Scenario {
			continue
		}
		for i, l := range e.links {
			if keep(l) {
				ev, ops, links = ev+e.events[0][i], ops+e.ops[0][i], links+1
			}
		}
	}
	if links == 0 {
		return Finding{}, false
	}
	got := errFinding(fd.Scenario, fd.Direction, ev/ops, fd.FabricMedian, links)
	got.Pass = 2
	return got, exceeds(ev/ops, ops, fd.FabricMedian)
}
