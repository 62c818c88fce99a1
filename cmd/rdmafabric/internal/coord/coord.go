package coord

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// MaxRuns is the most runs per link and scenario: each run is a whole
// benchmark on the agent, and benchstat needs about ten.
const MaxRuns = 100

// MaxScenarios is the most scenarios a run may have.
const MaxScenarios = 1000

// MaxNameLen is the longest node name, a DNS name's limit.
const MaxNameLen = oob.MaxNodeLen

// Scenario is one benchmark an agent can run over a link.
type Scenario struct {
	// Name is the scenario in the benchmark-name grammar: key=value
	// parts joined by '/', e.g. "op=write/size=65536". It holds no
	// space and no src= or dst= part (the coordinator adds those).
	Name string
}

// String returns s.Name.
func (s Scenario) String() string { return s.Name }

// Check tells why s cannot be a scenario: an empty name, a space or
// control character, a part that is not key=value with a non-empty key,
// a src= or dst= part.
func (s Scenario) Check() error {
	if s.Name == "" {
		return fmt.Errorf("coord: scenario: empty name: want key=value parts joined by '/'")
	}
	if !utf8.ValidString(s.Name) {
		return fmt.Errorf("coord: scenario %q: not UTF-8", s.Name)
	}
	for _, c := range s.Name {
		if unicode.IsSpace(c) || unicode.IsControl(c) {
			return fmt.Errorf("coord: scenario %q holds %q: a benchmark name holds no space or control character", s.Name, c)
		}
	}
	for _, part := range strings.Split(s.Name, "/") {
		k, _, ok := strings.Cut(part, "=")
		if !ok || k == "" {
			return fmt.Errorf("coord: scenario %q: part %q is not key=value", s.Name, part)
		}
		if k == "src" || k == "dst" {
			return fmt.Errorf("coord: scenario %q: part %q: src= and dst= name the link and are added by the coordinator", s.Name, part)
		}
	}
	return nil
}

// Result is one run of a scenario, as the source node's agent measured
// it.
type Result struct {
	// Iters is the benchmark's iteration count, at least 1.
	Iters int64
	// Values maps unit → value ("ns/op", "MB/s", "p50-ns", …): at least
	// one, each finite, units without white space.
	Values map[string]float64
	// Units maps a custom unit to its direction, "higher" or "lower"
	// (is better).
	Units map[string]string
	// Counters are the source node's counter deltas during the run.
	Counters map[string]uint64
	// Start and End are the run's timed region on the source node's
	// system clock; zero: not known. RunIncast places them on its own
	// clock with the node's measured offset (Clocked).
	Start, End time.Time
}

// Clocked is an Agent that tells its node's system clock. RunIncast
// measures each node's clock offset with it (the exchange of
// oob.Clock), so that runs on several nodes are compared on one clock.
type Clocked interface {
	Clock(ctx context.Context) (ClockSample, error)
}

// ClockSample is one clock exchange with an agent: our clock when the
// request went out (Sent) and when the answer came back (Back), and the
// agent's clock in its answer (Agent). Sent and Back bracket the
// exchange alone, not the connection's setup, so that half their
// difference bounds the offset's error tightly.
type ClockSample struct {
	Sent, Agent, Back time.Time
}

// Agent is the coordinator's handle on one node's agent.
type Agent interface {
	// Facts returns the node's configuration lines,
	// "fabric.node.<lower-case node>.<fact>: <value>" (facts.ConfigLines).
	Facts(ctx context.Context) ([]string, error)
	// Run runs scenario sc runs times with this node as the requester
	// and node dst as the passive side, and returns one Result per run.
	// It must return when ctx is done.
	Run(ctx context.Context, dst string, sc Scenario, runs int) ([]Result, error)
}

// Dialer returns the Agent of a node. Run calls it once per node, from
// several goroutines at once when Options.Concurrency is set.
type Dialer func(node string) (Agent, error)

// Options configure a fabric run. Check tells what is wrong with them.
type Options struct {
	// Nodes are the node names the plan's indexes refer to: 1 to
	// MaxNameLen ASCII letters, digits or ".-_:", distinct ignoring case.
	Nodes []string
	// Plan is the schedule; its Nodes must be len(Nodes).
	Plan schedule.Plan
	// Scenarios run on every pair, in order; at least one, at most
	// MaxScenarios, no name twice.
	Scenarios []Scenario
	// Runs is the number of runs per link and scenario, 1..MaxRuns: the
	// plan is run that many times over, one run each time (see Rows in
	// the package documentation).
	Runs int
	// PairTimeout bounds each pair's turn in a round (one run of each
	// of its scenarios), and each node's dial and facts; it must be
	// positive.
	PairTimeout time.Duration
	// Concurrency runs the pairs of a round at the same time; false
	// runs them one at a time. DefaultOptions sets it.
	Concurrency bool
}

// DefaultOptions returns the defaults: 5 runs, a 10-minute pair timeout
// and concurrent pairs. Nodes, Plan and Scenarios are left to the
// caller.
func DefaultOptions() Options {
	return Options{Runs: 5, PairTimeout: 10 * time.Minute, Concurrency: true}
}

// Check reports the first thing wrong with o, naming the value and the
// limit.
func (o Options) Check() error {
	lower := make(map[string]int, len(o.Nodes))
	for i, n := range o.Nodes {
		if err := checkName(n); err != nil {
			return fmt.Errorf("coord: node %d: %w", i, err)
		}
		k := strings.ToLower(n)
		if j, ok := lower[k]; ok {
			return fmt.Errorf("coord: nodes %d (%q) and %d (%q) are the same name ignoring case", j, o.Nodes[j], i, n)
		}
		lower[k] = i
	}
	if err := o.Plan.Check(); err != nil {
		return fmt.Errorf("coord: plan: %w", err)
	}
	if o.Plan.Nodes != len(o.Nodes) {
		return fmt.Errorf("coord: plan %s is for %d nodes, the node list has %d", o.Plan.Kind, o.Plan.Nodes, len(o.Nodes))
	}
	if o.Plan.Pairs() == 0 {
		return fmt.Errorf("coord: plan %s has no pair", o.Plan.Kind)
	}
	switch n := len(o.Scenarios); {
	case n == 0:
		return fmt.Errorf("coord: no scenario: at least 1 is needed")
	case n > MaxScenarios:
		return fmt.Errorf("coord: %d scenarios: at most %d are accepted", n, MaxScenarios)
	}
	seen := make(map[string]int, len(o.Scenarios))
	for i, sc := range o.Scenarios {
		if err := sc.Check(); err != nil {
			return err
		}
		if j, ok := seen[sc.Name]; ok {
			return fmt.Errorf("coord: scenario %q is listed twice (%d and %d)", sc.Name, j, i)
		}
		seen[sc.Name] = i
	}
	if o.Runs < 1 || o.Runs > MaxRuns {
		return fmt.Errorf("coord: runs %d: must be within 1..%d", o.Runs, MaxRuns)
	}
	if o.PairTimeout <= 0 {
		return fmt.Errorf("coord: pair timeout %v: must be positive", o.PairTimeout)
	}
	return nil
}

// checkName tells why name cannot name a node (oob.CheckNodeName).
func checkName(name string) error { return oob.CheckNodeName(name) }

// Failure is a link and scenario that was not measured.
type Failure struct {
	Src, Dst string
	Scenario string
	Err      error
}

// NodeFailure is a node whose dial or facts failed.
type NodeFailure struct {
	Node string
	Err  error
}

// Summary tells what a run did.
type Summary struct {
	// Rounds is the number of rounds run to the end, over all passes.
	Rounds int
	// Links is the number of directed links with at least one scenario
	// measured.
	Links int
	// Measured is the number of link and scenario combinations
	// measured, each with Options.Runs rows.
	Measured int
	// Rows is the number of rows written.
	Rows int
	// Failures are the link and scenario combinations not measured, in
	// stream order.
	Failures []Failure
	// NodeFailures are the nodes whose dial or facts failed, in node
	// order.
	NodeFailures []NodeFailure
}
