package blame

import (
	"maps"
	"slices"
)

// Pair is a directed pair of nodes for the second pass to run.
type Pair = Link

// Retests lists the second pass for the suspects of rep: each suspect
// node against perSuspect (at least 1) nodes of healthy in both
// directions; each suspect link re-run as is, and each of its ends
// against a healthy third node in both directions. Suspects are left
// out of healthy; the healthy nodes are taken in turn, so that the
// retests spread over them. The pairs come in that order, each once.
func Retests(rep Report, healthy []string, perSuspect int) []Pair {
	suspect := make(map[string]bool)
	for _, v := range rep.Nodes {
		suspect[v.Node] = true
	}
	for _, v := range rep.Links {
		suspect[v.Src], suspect[v.Dst] = true, true
	}
	var pool []string
	for _, h := range healthy {
		if !suspect[h] && !slices.Contains(pool, h) {
			pool = append(pool, h)
		}
	}
	r := retester{pool: pool, seen: make(map[Pair]bool)}
	for _, v := range rep.Nodes {
		for range min(max(perSuspect, 1), len(pool)) {
			r.both(v.Node, r.next())
		}
	}
	for _, v := range rep.Links {
		r.add(v.Link())
		for _, end := range []string{v.Src, v.Dst} {
			if len(pool) > 0 {
				r.both(end, r.next())
			}
		}
	}
	return r.out
}

// retester builds the second pass's pairs.
type retester struct {
	pool []string
	turn int
	seen map[Pair]bool
	out  []Pair
}

// next is the healthy node whose turn it is.
func (r *retester) next() string {
	h := r.pool[r.turn%len(r.pool)]
	r.turn++
	return h
}

// both adds a → b and b → a.
func (r *retester) both(a, b string) {
	r.add(Pair{a, b})
	r.add(Pair{b, a})
}

// add adds a pair once.
func (r *retester) add(p Pair) {
	if p.Src != p.Dst && !r.seen[p] {
		r.seen[p] = true
		r.out = append(r.out, p)
	}
}

// Confirm judges first as Judge does, takes what it names as suspects,
// and names only those that second, the second pass run from Retests,
// shows again (see the package documentation for the rule). The
// verdicts keep the first pass's findings and add the second's (Pass 2);
// the suspects not shown again are listed in Report.Unconfirmed.
func Confirm(first, second *Fabric, o Options) Report {
	o.Confirm = false
	j := judge(first, o)
	c := confirmer{j: j, second: second, suspect: j.nodes, rates: linkRates(first)}
	for n, r := range linkRates(second) {
		c.rates[n] = r
	}
	nodes, links := make(map[string][]Finding), make(map[Link][]Finding)
	var unconfirmed []string
	for _, n := range slices.Sorted(maps.Keys(j.nodes)) {
		if again := c.node(n); len(again) > 0 {
			nodes[n] = append(slices.Clone(j.nodes[n]), again...)
		} else {
			unconfirmed = append(unconfirmed, n)
		}
	}
	for _, l := range sortedLinks(j.links) {
		if again := c.link(l); len(again) > 0 {
			links[l] = append(slices.Clone(j.links[l]), again...)
		} else {
			unconfirmed = append(unconfirmed, l.String())
		}
	}
	j.nodes, j.links = nodes, links
	rep := j.report(first)
	rep.Unconfirmed = unconfirmed
	return rep
}

// sortedLinks returns the keys of m in order.
func sortedLinks(m map[Link][]Finding) []Link {
	out := make([]Link, 0, len(m))
	for l := range m {
		out = append(out, l)
	}
	slices.SortFunc(out, compareLinks)
	return out
}

// confirmer checks the suspects of a first-pass judgement on a second
// pass.
type confirmer struct {
	j       *judgement
	second  *Fabric
	suspect map[string][]Finding // the first pass's node suspects
	rates   map[string]float64
}

// analysis returns the first pass's analysis of a metric.
func (c *confirmer) analysis(scenario, unit string) *analysis {
	for _, a := range c.j.analyses {
		if a.Scenario == scenario && a.Unit == unit {
			return a
		}
	}
	return nil
}

// node returns the second-pass findings that show node again.
func (c *confirmer) node(n string) []Finding {
	var again []Finding
	for _, fd := range c.j.nodes[n] {
		var got Finding
		var ok bool
		switch fd.Code {
		case CodeSlowWithAll:
			got, ok = c.slowNode(n, fd)
		case CodeBelowFloor:
			got, ok = floorFindings(c.second, c.rates, c.j.o.Floor)[n]
		case CodeNoResults:
			got, ok = fd, slices.Contains(silent(c.second), n)
		case CodeErrorRate:
			got, ok = errAgain(c.second, fd, func(l Link) bool {
				peer := l.Dst
				if fd.Direction == receiving.String() {
					peer = l.Src
				}
				return c.suspect[peer] == nil && (fd.Direction == sending.String() && l.Src == n || fd.Direction == receiving.String() && l.Dst == n)
			})
		}
		if ok {
			got.Pass = 2
			again = append(again, got)
		}
	}
	return again
}

// slowNode re-scores a slow node on its second-pass links, in the
// finding's direction, with nodes that are not suspects, against the
// first pass's median and threshold.
func (c *confirmer) slowNode(n string, fd Finding) (Finding, bool) {
	a := c.analysis(fd.Scenario, fd.Unit)
	if a == nil {
		return Finding{}, false
	}
	d := receiving
	if fd.Direction == sending.String() {
		d = sending
	}
	k := nodeDir{n, d}
	gs, vs := c.retestLinks(a, n, d, func(peer string) bool { return c.suspect[peer] == nil })
	if len(gs) == 0 {
		return Finding{}, false
	}
	score := median(gs)
	got := Finding{
		Code: fd.Code, Direction: fd.Direction, Scenario: fd.Scenario, Unit: fd.Unit,
		Score: rel(score, a.nodeTyp[k]), Threshold: rel(a.nodeThr[k], a.nodeTyp[k]),
		Median: median(vs), Links: len(gs),
	}
	return got, score < a.nodeThr[k]
}

// retestLinks returns the goodness (against the first pass's median)
// and the value of node's second-pass links in direction d whose other
// end keep accepts.
func (c *confirmer) retestLinks(a *analysis, node string, d direction, keep func(peer string) bool) (gs, vs []float64) {
	runs := c.second.Runs[a.Scenario][a.Unit]
	for _, l := range c.second.Links {
		peer := l.Dst
		switch {
		case node == l.Src && d == sending:
		case node == l.Dst && d == receiving:
			peer = l.Src
		default:
			continue
		}
		if r := runs[l]; len(r) > 0 && keep(peer) {
			v := median(r)
			gs, vs = append(gs, a.goodness(v)), append(vs, v)
		}
	}
	return gs, vs
}

// link returns the second-pass findings that show link l again: its
// re-run is again an outlier while its ends are healthy with third
// nodes.
func (c *confirmer) link(l Link) []Finding {
	var again []Finding
	for _, fd := range c.j.links[l] {
		if fd.Code == CodeErrorRate {
			if got, ok := errAgain(c.second, fd, func(m Link) bool { return m == l }); ok {
				again = append(again, got)
			}
			continue
		}
		a := c.analysis(fd.Scenario, fd.Unit)
		runs := c.second.Runs[fd.Scenario][fd.Unit][l]
		if a == nil || len(runs) == 0 {
			continue
		}
		v := median(runs)
		g := a.goodness(v)
		if !(g < a.linkThr[l]) || !c.thirdsHealthy(a, l) {
			continue
		}
		again = append(again, Finding{
			Code: fd.Code, Pass: 2, Scenario: fd.Scenario, Unit: fd.Unit,
			Score: rel(g, a.linkTyp[l]), Threshold: rel(a.linkThr[l], a.linkTyp[l]),
			Median: v, Links: 1,
		})
	}
	return again
}

// thirdsHealthy reports whether both ends of l score normally, in the
// second pass and on the sides l runs on (linkEnds), on their links
// with third nodes that are not suspects; an end without such a link is
// not held against l.
func (c *confirmer) thirdsHealthy(a *analysis, l Link) bool {
	third := func(peer string) bool { return peer != l.Src && peer != l.Dst && c.suspect[peer] == nil }
	for _, k := range linkEnds(l) {
		if gs, _ := c.retestLinks(a, k.node, k.dir, third); len(gs) > 0 && median(gs) < a.nodeThr[k] {
			return false
		}
	}
	return true
}
