package gate

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// off is the threshold that disables gating of a unit (ParsePercent's
// "off"): no worsening exceeds it.
var off = math.Inf(1)

// defaultUnitThresholds are the per-unit thresholds used unless
// overridden by -unit-threshold. Tail percentiles rest on few samples:
// a quantile q from N operations is decided by the N·(1−q) slowest ones,
// so p99.99-ns of a few thousand operations is essentially the maximum,
// and max-ns is a single operation (one scheduler hiccup moves it).
//
// The memory units B/op and allocs/op are gated by their absolute change
// (see absUnits): the runtime's own allocations move B/op by a few dozen
// bytes from run to run, and a relative threshold on 0 B/op would make
// any byte a "+Inf%" regression.
var defaultUnitThresholds = map[string]float64{
	"p99.9-ns":  0.15,
	"p99.99-ns": off,
	"max-ns":    off,
	"B/op":      64,
	"allocs/op": 0.5,
}

// absUnits are the units whose threshold is an absolute amount in the
// unit (bytes, allocations) rather than a fraction of the median. Their
// rows are not statistical tests: a change counts when the median grew by
// more than the threshold (allocations are counted per operation and do
// not drift like time).
var absUnits = map[string]bool{"B/op": true, "allocs/op": true}

// Options configures a comparison.
type Options struct {
	// Alpha is the significance level: a difference counts only if the
	// Mann-Whitney U test gives p ≤ Alpha.
	Alpha float64
	// Threshold is the relative worsening of the median (0.05 = 5%) that
	// must be exceeded for a regression, for units not in UnitThresholds.
	Threshold float64
	// UnitThresholds overrides Threshold per unit as written
	// (e.g. "p99-ns"); +Inf ("off") disables gating of that unit.
	UnitThresholds map[string]float64
	// NoCorrection tests every benchmark at Alpha on its own. By default
	// the benchmarks' tests are corrected with Holm–Šidák (see Compare),
	// because one comparison tests dozens of benchmarks: at p ≤ 0.05
	// each, two runs of the same build would fail most of the time.
	NoCorrection bool
	// Paired: OLD's and NEW's runs of a benchmark were made in adjacent
	// pairs, in file order (make compare's interleaving): a benchmark
	// whose adjacent runs are correlated (Spearman ρ ≥ PairRho) is tested
	// paired (signed-rank test on the pairs' log ratios).
	Paired bool
	// Detect is the worsening every benchmark must be able to see: one
	// whose Family.Detectable exceeds it is UNDECIDED, not a pass (0 or
	// +Inf: no such requirement).
	Detect float64
	// Replicate is the unit of replication: ByRun ("" too), ByProcess
	// or ByBoot (see Collapse). -replicate.
	Replicate string
	// Decide overrides the deciding unit per family (the benchmark
	// name's first element, e.g. "SendLat": "p99-ns"); see
	// go doc ./ci/gate, Decision). -decide.
	Decide map[string]string
	// Named are the units the user gave thresholds for (-unit-threshold):
	// one that no row has is a warning (a typo has no effect otherwise).
	Named []string
	// skipPower leaves Row.Detectable of the tested rows unset (the
	// simulations do not print it; it costs a bisection per row).
	skipPower bool
}

// NewOptions returns the options of the gate's flags: significance level
// alpha (-alpha), the relative threshold (-threshold, "5%") and the
// per-unit thresholds (-unit-threshold, "p99.9-ns=15%,max-ns=off") over
// the defaults (DefaultUnitText). It fails on a value out of range,
// naming its flag.
func NewOptions(alpha float64, threshold, unitThresholds string) (Options, error) {
	if !(alpha > 0 && alpha < 1) {
		return Options{}, fmt.Errorf("-alpha %g: want 0 < alpha < 1", alpha)
	}
	t, err := ParsePercent(threshold)
	if err != nil {
		return Options{}, fmt.Errorf("-threshold: %w", err)
	}
	user, err := ParseUnitThresholds(unitThresholds)
	if err != nil {
		return Options{}, fmt.Errorf("-unit-threshold: %w", err)
	}
	ut := maps.Clone(defaultUnitThresholds)
	maps.Copy(ut, user)
	return Options{Alpha: alpha, Threshold: t, UnitThresholds: ut, Named: slices.Sorted(maps.Keys(user))}, nil
}

// threshold returns the threshold for unit.
func (o Options) threshold(unit string) float64 {
	if t, ok := o.UnitThresholds[unit]; ok {
		return t
	}
	return o.Threshold
}

// DefaultUnitText is the default per-unit thresholds in
// -unit-threshold's form: "B/op=64,allocs/op=0.5,...".
func DefaultUnitText() string {
	var parts []string
	for _, u := range slices.Sorted(maps.Keys(defaultUnitThresholds)) {
		switch t := defaultUnitThresholds[u]; {
		case t == off:
			parts = append(parts, u+"=off")
		case absUnits[u]:
			parts = append(parts, u+"="+FormatValue(t))
		default:
			parts = append(parts, u+"="+pct(t))
		}
	}
	return strings.Join(parts, ",")
}

// ParsePercent parses a threshold such as "5%", "5" (both 5%) or "off"
// (+Inf).
func ParsePercent(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return off, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("threshold %q: want a non-negative percentage like 5%% or off", s)
	}
	return v / 100, nil
}

// parseThreshold parses a threshold for unit: a percentage, or for an
// absolute unit (absUnits) an amount in the unit, e.g. "128" for B/op.
func parseThreshold(unit, val string) (float64, error) {
	if !absUnits[unit] {
		return ParsePercent(val)
	}
	val = strings.TrimSpace(val)
	if strings.HasSuffix(val, "%") {
		return 0, fmt.Errorf("threshold %q: %s is gated by absolute change: give an amount in %s, e.g. %s=%s", val, unit, unit, unit, FormatValue(defaultUnitThresholds[unit]))
	}
	t, err := ParsePercent(val)
	if err != nil {
		return 0, fmt.Errorf("threshold %q: want a non-negative amount or off", val)
	}
	if t == off {
		return off, nil
	}
	return t * 100, nil // ParsePercent divided by 100
}

// ParseUnitThresholds parses "unit=pct,unit=off,..." into a map; B/op and
// allocs/op take an amount in their unit ("B/op=128").
func ParseUnitThresholds(s string) (map[string]float64, error) {
	m := make(map[string]float64)
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		unit, val, ok := strings.Cut(item, "=")
		if !ok || strings.TrimSpace(unit) == "" {
			return nil, fmt.Errorf("unit threshold %q: want unit=percent", item)
		}
		unit = strings.TrimSpace(unit)
		t, err := parseThreshold(unit, val)
		if err != nil {
			return nil, fmt.Errorf("unit %s: %w", unit, err)
		}
		m[unit] = t
	}
	return m, nil
}
