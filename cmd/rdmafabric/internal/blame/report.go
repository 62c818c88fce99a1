package blame

import (
	"cmp"
	"maps"
	"math"
	"slices"
)

// Finding is one number behind a verdict.
type Finding struct {
	Code string `json:"code"`
	// Direction is, for slow-with-all, the side of the node's links that
	// is slow: "sending" (it is the source) or "receiving".
	Direction string `json:"direction,omitempty"`
	// Pass is 1 for the judged run, 2 for the retest that confirmed it.
	Pass     int    `json:"pass"`
	Scenario string `json:"scenario,omitempty"`
	Unit     string `json:"unit,omitempty"`
	// Score is, for slow-with-all, the node's goodness with its best
	// partner in Direction over the other nodes' median (1 is typical,
	// 0.6 is 40% worse); for slow-link, the link's goodness over the
	// other links'; for below-floor, the median share of the link rate.
	Score float64 `json:"score"`
	// Threshold is the score below which the node or link is bad.
	Threshold float64 `json:"threshold"`
	// Median is, in Unit, the median over the node's links of their
	// medians over runs, or the link's median over its runs.
	Median float64 `json:"median"`
	// FabricMedian is, in Unit, the median of the healthy links (every
	// link when none is).
	FabricMedian float64 `json:"fabric_median"`
	// LinkRate is the node's link-rate-mbps, for below-floor.
	LinkRate float64 `json:"link_rate_mbps,omitempty"`
	// Links is how many links the numbers are over.
	Links int `json:"links"`
}

// NodeVerdict names a bad node (or a suspect).
type NodeVerdict struct {
	Node string `json:"node"`
	// Code is the first finding's: no-results, slow-with-all or
	// below-floor, in that order.
	Code     string     `json:"code"`
	Findings []Finding  `json:"findings"`
	Evidence []Evidence `json:"evidence"`
}

// LinkVerdict names a bad directed link (or a suspect).
type LinkVerdict struct {
	Src      string     `json:"src"`
	Dst      string     `json:"dst"`
	Code     string     `json:"code"`
	Findings []Finding  `json:"findings"`
	Evidence []Evidence `json:"evidence"` // about either end
}

// Link returns the verdict's link.
func (v LinkVerdict) Link() Link { return Link{v.Src, v.Dst} }

// Counts counts nodes and directed links.
type Counts struct {
	Nodes int `json:"nodes"`
	Links int `json:"links"`
}

// Metric is one scenario's unit that was judged.
type Metric struct {
	Scenario string `json:"scenario"`
	Unit     string `json:"unit"`
	Better   string `json:"better"` // "higher" or "lower"
	// FabricMedian is the median of the healthy links.
	FabricMedian float64 `json:"fabric_median"`
	Links        int     `json:"links"`
	// Baseline is the worst link of Options.Baseline (its median over
	// its runs), the bound a verdict on this metric must pass (each run
	// of it, the baseline's worst single run); 0 with no baseline.
	Baseline float64 `json:"baseline,omitempty"`
}

// Report is what Judge or Confirm found.
type Report struct {
	// Suspects is set when the names are suspects to retest (Judge with
	// Options.Confirm), not verdicts.
	Suspects bool          `json:"suspects"`
	Nodes    []NodeVerdict `json:"bad_nodes"`
	Links    []LinkVerdict `json:"bad_links"`
	// Unconfirmed lists the suspects the second pass did not show
	// again (Confirm): nodes, and links as "src -> dst".
	Unconfirmed []string `json:"unconfirmed,omitempty"`
	// Healthy counts the nodes not named and the links neither named
	// nor touching a named node.
	Healthy Counts   `json:"healthy"`
	Total   Counts   `json:"total"`
	Metrics []Metric `json:"metrics"`
	Options Options  `json:"options"`
	// Mismatches are the facts of the nodes not named that differ from
	// the majority (fw, kernel, MTU, link speed and width, GID type, RoCE
	// ECN, trust, PFC), in node order: a configuration to look at, never
	// a verdict (a named node's are in its Evidence).
	Mismatches []Evidence `json:"mismatches,omitempty"`
}

// Exit is the process exit code for r: 0 healthy, 1 a node or link
// named (suspects included).
func (r Report) Exit() int {
	if len(r.Nodes)+len(r.Links) > 0 {
		return 1
	}
	return 0
}

// codeRank orders findings: the first gives a verdict its code.
func codeRank(code string) int {
	return slices.Index([]string{CodeNoResults, CodeSlowWithAll, CodeBelowFloor, CodeSlowLink, CodeErrorRate}, code)
}

// sortFindings orders findings by code, then pass, keeping the metric
// order.
func sortFindings(fds []Finding) {
	slices.SortStableFunc(fds, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(codeRank(a.Code), codeRank(b.Code)), cmp.Compare(a.Pass, b.Pass))
	})
}

// report turns a judgement into a Report.
func (j *judgement) report(f *Fabric) Report {
	rep := Report{Suspects: j.o.Confirm, Options: j.o, Nodes: []NodeVerdict{}, Links: []LinkVerdict{}, Metrics: []Metric{}}
	med := j.fabricMedians(f)
	major := majorities(f)
	for _, e := range mismatches(f, major) {
		if _, named := j.nodes[e.Node]; !named {
			rep.Mismatches = append(rep.Mismatches, e)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(j.nodes)) {
		fds := withMedians(j.nodes[n], med)
		rep.Nodes = append(rep.Nodes, NodeVerdict{
			Node: n, Code: fds[0].Code, Findings: fds, Evidence: nonNil(evidenceFor(f, n, major)),
		})
	}
	links := make([]Link, 0, len(j.links))
	for l := range j.links {
		links = append(links, l)
	}
	slices.SortFunc(links, compareLinks)
	for _, l := range links {
		fds := withMedians(j.links[l], med)
		ev := append(evidenceFor(f, l.Src, major), evidenceFor(f, l.Dst, major)...)
		rep.Links = append(rep.Links, LinkVerdict{Src: l.Src, Dst: l.Dst, Code: fds[0].Code, Findings: fds, Evidence: nonNil(ev)})
	}
	for _, a := range j.analyses {
		better := "higher"
		if a.better < 0 {
			better = "lower"
		}
		base := a.baseWorst
		if math.IsNaN(base) {
			base = 0
		}
		rep.Metrics = append(rep.Metrics, Metric{a.Scenario, a.Unit, better, med(a.Scenario, a.Unit), len(a.links), base})
	}
	rep.Total = Counts{len(f.Nodes), len(f.Links)}
	rep.Healthy.Nodes = len(f.Nodes) - len(j.nodes)
	for _, l := range f.Links {
		if j.healthy(l) {
			rep.Healthy.Links++
		}
	}
	return rep
}

// healthy reports whether neither l nor its ends are named.
func (j *judgement) healthy(l Link) bool {
	return j.nodes[l.Src] == nil && j.nodes[l.Dst] == nil && j.links[l] == nil
}

// fabricMedians returns a function giving the median over the healthy
// links (all links when none is healthy) of a scenario's unit, 0 when
// no link has it; it remembers what it computed.
func (j *judgement) fabricMedians(f *Fabric) func(scenario, unit string) float64 {
	memo := make(map[[2]string]float64)
	return func(scenario, unit string) float64 {
		key := [2]string{scenario, unit}
		if v, ok := memo[key]; ok {
			return v
		}
		var all, ok []float64
		for _, l := range f.Links {
			if runs := f.Runs[scenario][unit][l]; len(runs) > 0 {
				v := median(runs)
				all = append(all, v)
				if j.healthy(l) {
					ok = append(ok, v)
				}
			}
		}
		if len(ok) == 0 {
			ok = all
		}
		v := 0.0
		if len(ok) > 0 {
			v = median(ok)
		}
		memo[key] = v
		return v
	}
}

// withMedians sorts findings and fills their fabric medians.
func withMedians(fds []Finding, med func(scenario, unit string) float64) []Finding {
	fds = slices.Clone(fds)
	sortFindings(fds)
	for i := range fds {
		if fds[i].Scenario != "" && fds[i].Code != CodeErrorRate { // its own: the typical rate
			fds[i].FabricMedian = med(fds[i].Scenario, fds[i].Unit)
		}
	}
	return fds
}

// nonNil returns ev, or an empty slice for nil (JSON [] rather than
// null).
func nonNil(ev []Evidence) []Evidence {
	if ev == nil {
		return []Evidence{}
	}
	return ev
}
