package blame

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ErrBaselineNotHealthy is returned (wrapped) by CheckBaseline for a
// baseline in which the rules name a node or a link.
var ErrBaselineNotHealthy = errors.New("the baseline is not healthy")

// CheckBaseline tells why base cannot be the healthy baseline of
// Options.Baseline: judged alone with o (its own Baseline ignored), it
// names a node or a link. A faulty baseline would widen every metric's
// bound to its fault and hide the same fault later.
func CheckBaseline(base *Fabric, o Options) error {
	o.Baseline, o.Confirm = nil, false
	rep := Judge(base, o)
	if rep.Exit() == 0 {
		return nil
	}
	var named []string
	for _, v := range rep.Nodes {
		named = append(named, fmt.Sprintf("node %s (%s)", v.Node, v.Code))
	}
	for _, v := range rep.Links {
		named = append(named, fmt.Sprintf("link %s (%s)", v.Link(), v.Code))
	}
	return fmt.Errorf("%w: it names %s", ErrBaselineNotHealthy, strings.Join(named, ", "))
}

// worstRun is the worst value of base in m: of any run of any link
// (one run) or of any link's median over its runs (!one), the lowest
// for a higher-is-better unit, the highest for a lower one; NaN with no
// baseline or no run of m in it. Medians are held to medians, one run
// to single runs.
func worstRun(base *Fabric, m metric, one bool) float64 {
	worst := math.NaN()
	if base == nil {
		return worst
	}
	for _, runs := range base.Runs[m.Scenario][m.Unit] {
		vs := []float64{median(runs)}
		if one {
			vs = runs
		}
		for _, v := range vs {
			if math.IsNaN(worst) || float64(m.better)*(v-worst) < 0 {
				worst = v
			}
		}
	}
	return worst
}
