package oob

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"
)

// Bounds of the agent messages (rdmapeer -agent).
const (
	// MaxRuns is the most runs one Run may ask for.
	MaxRuns = 100
	// MaxIters is the largest fixed iteration count of one run.
	MaxIters = 1 << 30
	// MaxScenarioLen is the longest scenario name.
	MaxScenarioLen = 512
	// MaxNodeLen is the longest node name, a DNS name's limit.
	MaxNodeLen = 253
	// MaxFactLines and MaxFactLineLen bound a FactsOK.
	MaxFactLines   = 256
	MaxFactLineLen = 512
	// MaxResultEntries bounds each map of a RunResult.
	MaxResultEntries = 128
	// MaxRegionNs bounds a RunResult's timed region (End − Start): a
	// day.
	MaxRegionNs = 24 * 3600 * 1e9
)

// Facts asks an agent for its node's name and configuration lines.
type Facts struct{}

// Validate accepts.
func (*Facts) Validate() error { return nil }

// FactsOK is an agent's node: its name and its configuration lines
// ("fabric.node.<name>.<fact>: <value>", package cmd/internal/facts).
type FactsOK struct {
	Node  string   `json:"node"`
	Lines []string `json:"lines"`
}

// Validate checks the bounds: a node name, at most MaxFactLines lines of
// at most MaxFactLineLen bytes, without control characters.
func (m *FactsOK) Validate() error {
	errs := []error{checkNode("node", m.Node)}
	if len(m.Lines) > MaxFactLines {
		errs = append(errs, fmt.Errorf("%d lines exceed %d", len(m.Lines), MaxFactLines))
	}
	for i, l := range m.Lines {
		if err := checkText(fmt.Sprintf("line %d", i), l, MaxFactLineLen); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run asks an agent to run Scenario (a benchmark name of package
// rdmatest/scenario, e.g. "WriteBW/size=65536") Runs times as the
// requester, with node Dst's rdmapeer as the passive side, each run at
// the fixed count Iters.
type Run struct {
	Dst      string `json:"dst"`
	Scenario string `json:"scenario"`
	Runs     int    `json:"runs"`
	Iters    int    `json:"iters"`
}

// Validate checks the bounds.
func (m *Run) Validate() error {
	return errors.Join(checkNode("dst", m.Dst), checkText("scenario", m.Scenario, MaxScenarioLen),
		between("runs", m.Runs, 1, MaxRuns), between("iters", m.Iters, 1, MaxIters))
}

// RunResult is one run's result, as the agent measured it.
type RunResult struct {
	// Iters is the run's iteration count.
	Iters int64 `json:"iters"`
	// Values maps unit → value ("ns/op", "MB/s", "p50-ns", …), finite.
	Values map[string]float64 `json:"values"`
	// Units maps a custom unit to "higher" or "lower" (is better).
	Units map[string]string `json:"units"`
	// Counters are the agent's port counter deltas over the run.
	Counters map[string]uint64 `json:"counters"`
	// Start and End are the run's timed region on the agent's system
	// clock, Unix ns (rdmatest's Dev.LastRegion): with ClockOK, the
	// coordinator places several nodes' runs on its own clock. Both 0:
	// not known (an older agent).
	Start int64 `json:"start,omitempty"`
	End   int64 `json:"end,omitempty"`
}

// Validate checks the bounds: Iters ≥ 1, at least one value, each map
// at most MaxResultEntries entries keyed by a name of at most
// MaxNameLen bytes without white space, values finite, directions
// "higher" or "lower".
func (m *RunResult) Validate() error {
	var errs []error
	if m.Iters < 1 || m.Iters > MaxIters {
		errs = append(errs, fmt.Errorf("iters %d out of range 1..%d", m.Iters, MaxIters))
	}
	if len(m.Values) == 0 {
		errs = append(errs, errors.New("no values"))
	}
	errs = append(errs, checkKeys("values", len(m.Values), slices.Collect(maps.Keys(m.Values))), checkKeys("units", len(m.Units), slices.Collect(maps.Keys(m.Units))),
		checkKeys("counters", len(m.Counters), slices.Collect(maps.Keys(m.Counters))))
	for k, v := range m.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("value of %q is %v", Sanitize(k), v))
		}
	}
	for k, v := range m.Units {
		if v != "higher" && v != "lower" {
			errs = append(errs, fmt.Errorf("unit %q: better=%q, want higher or lower", Sanitize(k), Sanitize(v)))
		}
	}
	if m.Start != 0 || m.End != 0 {
		if m.Start <= 0 || m.End < m.Start || m.End-m.Start > MaxRegionNs {
			errs = append(errs, fmt.Errorf("timed region start %d, end %d: want 0 < start ≤ end ≤ start + %d ns", m.Start, m.End, int64(MaxRegionNs)))
		}
	}
	return errors.Join(errs...)
}

// Clock asks an agent for its system clock (ClockOK), so that the
// coordinator can measure the agent's clock against its own: it notes
// its clock before (t1) and after (t3) the answer (t2), and the agent's
// offset is t2 − (t1 + t3)/2, known within (t3 − t1)/2.
type Clock struct{}

// Validate accepts.
func (*Clock) Validate() error { return nil }

// ClockOK is an agent's system clock, Unix ns, when it answered.
type ClockOK struct {
	Now int64 `json:"now"`
}

// Validate checks that Now is after 1970.
func (m *ClockOK) Validate() error {
	if m.Now <= 0 {
		return fmt.Errorf("now %d: want a positive Unix time in ns", m.Now)
	}
	return nil
}

// RunDone ends an agent's answer to Run.
type RunDone struct{}

// Validate accepts.
func (*RunDone) Validate() error { return nil }

// checkKeys bounds a map of n entries and its keys.
func checkKeys(name string, n int, ks []string) error {
	if n > MaxResultEntries {
		return fmt.Errorf("%s: %d entries exceed %d", name, n, MaxResultEntries)
	}
	for _, k := range ks {
		if k == "" || len(k) > MaxNameLen || strings.IndexFunc(k, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return fmt.Errorf("%s: key %q is not a name (1..%d bytes, no white space)", name, Sanitize(k), MaxNameLen)
		}
	}
	return nil
}

// NodeNameChars are the characters a node name may hold besides ASCII
// letters and digits: enough for host names, IPv4 and IPv6 addresses,
// and none that would break a benchmark name (src=NAME/dst=NAME), a
// configuration key, an .hlog file name or a shell command.
const NodeNameChars = ".-_:"

// CheckNodeName tells why name cannot name a node: empty, longer than
// MaxNodeLen bytes, or holding other than ASCII letters, digits and
// NodeNameChars. It is the one rule for node names, on the wire and in
// rdmafabric's lists, streams and reports.
func CheckNodeName(name string) error {
	if name == "" || len(name) > MaxNodeLen {
		return fmt.Errorf("node name %.20q: %d characters, want 1 to %d", name, len(name), MaxNodeLen)
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(NodeNameChars, c)
		if !ok {
			return fmt.Errorf("node name %q holds %q: a name holds ASCII letters, digits and %q only", Sanitize(name), c, NodeNameChars)
		}
	}
	return nil
}

// checkNode is CheckNodeName for field name.
func checkNode(name, s string) error {
	if err := CheckNodeName(s); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// checkText bounds s and refuses control characters and invalid UTF-8.
func checkText(name, s string, n int) error {
	if s == "" || len(s) > n {
		return fmt.Errorf("%s of %d bytes, want 1..%d", name, len(s), n)
	}
	if Sanitize(s) != s {
		return fmt.Errorf("%s %q holds a control character or invalid UTF-8", name, Sanitize(s))
	}
	return nil
}
