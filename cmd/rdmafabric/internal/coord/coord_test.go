package coord_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/blame"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/coord"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
)

var (
	writeSc = coord.Scenario{Name: "op=write/size=65536"}
	sendSc  = coord.Scenario{Name: "op=send/size=64"}
)

// options returns concurrent options for the all plan of n nodes
// node0..node<n−1>, two scenarios, runs runs.
func options(t *testing.T, n, runs int) coord.Options {
	t.Helper()
	p, err := schedule.All(n)
	require.NoError(t, err)
	o := coord.DefaultOptions()
	for i := range n {
		o.Nodes = append(o.Nodes, fmt.Sprintf("node%d", i))
	}
	o.Plan, o.Scenarios, o.Runs, o.PairTimeout = p, []coord.Scenario{writeSc, sendSc}, runs, 10*time.Second
	return o
}

func TestRunAll(t *testing.T) {
	for _, conc := range []bool{true, false} {
		t.Run(fmt.Sprintf("concurrency=%v", conc), func(t *testing.T) {
			o := options(t, 4, 3)
			o.Concurrency = conc
			f := newFake()
			var buf bytes.Buffer
			sum, err := coord.Run(context.Background(), o, f.dial, &buf)
			require.NoError(t, err)
			assert.Equal(t, coord.Summary{Rounds: 18, Links: 12, Measured: 24, Rows: 72}, sum, "3 passes of 6 rounds")
			assert.Empty(t, f.violations)
			out := buf.String()

			// benchfmt: 72 rows, no syntax error, every row with the same
			// configuration (the facts; counters come after the rows).
			rd := benchfmt.NewReader(strings.NewReader(out), "stream")
			rows := 0
			var cfg string
			for rd.Scan() {
				switch rec := rd.Result().(type) {
				case *benchfmt.SyntaxError:
					t.Fatal(rec)
				case *benchfmt.Result:
					rows++
					var b strings.Builder
					for _, c := range rec.Config {
						fmt.Fprintf(&b, "%s=%s;", c.Key, c.Value)
					}
					if rows == 1 {
						cfg = b.String()
						assert.Contains(t, cfg, "fabric.node.node3.fw=28.39.1002")
						assert.Contains(t, cfg, "pkg="+coord.Pkg)
					}
					assert.Equal(t, cfg, b.String(), "row %d configuration", rows)
					assert.Equal(t, 1000, rec.Iters)
				}
			}
			require.NoError(t, rd.Err())
			assert.Equal(t, 72, rows)

			// blame: every link, scenario and run, the facts and counters.
			fab, err := blame.Read(strings.NewReader(out))
			require.NoError(t, err)
			assert.Equal(t, o.Nodes, fab.Nodes)
			assert.Len(t, fab.Links, 12)
			assert.Equal(t, []string{writeSc.Name, sendSc.Name}, fab.Scenarios)
			l := blame.Link{Src: "node2", Dst: "node1"}
			for _, sc := range o.Scenarios {
				want := []float64{mbps(link{"node2", "node1"}, sc, 0), mbps(link{"node2", "node1"}, sc, 1), mbps(link{"node2", "node1"}, sc, 2)}
				assert.Equal(t, want, fab.Runs[sc.Name]["MB/s"][l], sc.Name)
			}
			assert.Len(t, fab.Runs[sendSc.Name]["msgs/s"], 12)
			assert.Equal(t, 1, fab.Better["msgs/s"])
			assert.Equal(t, -1, fab.Better["p50-ns"])
			for _, n := range o.Nodes {
				assert.Equal(t, "12500", fab.Facts[n]["link-rate-mbps"], n)
				// 3 links as source × 2 scenarios × 3 runs, one a run.
				assert.Equal(t, 18.0, fab.Counters[n]["symbol_error"], n)
			}
		})
	}
}

func TestStreamOrder(t *testing.T) {
	o := options(t, 4, 2)
	// The first pair of each round finishes last.
	f := newFake()
	f.delays = map[link]time.Duration{}
	for _, r := range o.Plan.Rounds {
		f.delays[link{o.Nodes[r[0].Src], o.Nodes[r[0].Dst]}] = 20 * time.Millisecond
	}
	var buf bytes.Buffer
	_, err := coord.Run(context.Background(), o, f.dial, &buf)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	assert.Equal(t, "pkg: "+coord.Pkg, lines[0])

	// Rows follow the plan once per run (pass): rounds, the round's pair
	// order, scenarios; a Unit line comes before the first row using
	// the unit.
	var want []string
	for range o.Runs {
		for _, r := range o.Plan.Rounds {
			for _, p := range r {
				for _, sc := range o.Scenarios {
					want = append(want, fmt.Sprintf("BenchmarkFabric/src=node%d/dst=node%d/%s-1", p.Src, p.Dst, sc.Name))
				}
			}
		}
	}
	var got []string
	seenUnit := map[string]int{}
	firstUse := map[string]int{}
	lastRow, firstCounter := 0, len(lines)
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "Unit "):
			seenUnit[strings.Fields(l)[1]] = i
		case strings.HasPrefix(l, "Benchmark"):
			f := strings.Split(l, "\t")
			got = append(got, f[0])
			var units []string
			for _, v := range f[2:] {
				u := strings.Fields(v)[1]
				units = append(units, u)
				if _, ok := firstUse[u]; !ok {
					firstUse[u] = i
				}
			}
			if strings.Contains(l, "op=send") {
				assert.Equal(t, []string{"ns/op", "MB/s", "msgs/s", "p50-ns"}, units)
			} else {
				assert.Equal(t, []string{"ns/op", "MB/s", "p50-ns"}, units)
			}
			lastRow = i
		case strings.Contains(l, ".counter."):
			firstCounter = min(firstCounter, i)
		}
	}
	assert.Equal(t, want, got)
	assert.Equal(t, map[string]int{"p50-ns": firstUse["p50-ns"] - 1, "msgs/s": firstUse["msgs/s"] - 1}, seenUnit)
	assert.Greater(t, firstCounter, lastRow)
	assert.Equal(t, "fabric.node.node0.counter.symbol_error: 12", lines[firstCounter])
}

func TestConcurrency(t *testing.T) {
	for _, tc := range []struct {
		n    int
		conc bool
		want int
	}{
		{4, true, 2}, {5, true, 2}, {8, true, 4}, {4, false, 1}, {8, false, 1},
	} {
		t.Run(fmt.Sprintf("n=%d/concurrency=%v", tc.n, tc.conc), func(t *testing.T) {
			o := options(t, tc.n, 1)
			o.Scenarios = o.Scenarios[:1]
			o.Concurrency = tc.conc
			f := newFake()
			f.delay = 30 * time.Millisecond
			sum, err := coord.Run(context.Background(), o, f.dial, &bytes.Buffer{})
			require.NoError(t, err)
			assert.Equal(t, tc.n*(tc.n-1), sum.Links)
			assert.Equal(t, tc.want, f.max, "most Runs at once")
			assert.Empty(t, f.violations, "a node in two Runs at once")
			assert.Zero(t, f.inFlight())
		})
	}
}

func TestFailures(t *testing.T) {
	boom := errors.New("boom:\nno route")
	o := options(t, 4, 2)
	o.PairTimeout = 100 * time.Millisecond
	f := newFake()
	f.fail = map[link]error{{"node0", "node1"}: boom}
	f.block = map[link]bool{{"node2", "node3"}: true}
	var buf bytes.Buffer
	sum, err := coord.Run(context.Background(), o, f.dial, &buf)
	require.NoError(t, err)
	assert.Equal(t, 12, sum.Rounds, "2 passes of 6 rounds")
	assert.Equal(t, 10, sum.Links)
	assert.Equal(t, 20, sum.Measured)
	require.Len(t, sum.Failures, 4)
	byLink := map[string][]coord.Failure{}
	for _, fl := range sum.Failures {
		byLink[fl.Src+"->"+fl.Dst] = append(byLink[fl.Src+"->"+fl.Dst], fl)
	}
	for _, fl := range byLink["node0->node1"] {
		assert.ErrorIs(t, fl.Err, boom)
	}
	timeout := byLink["node2->node3"]
	require.Len(t, timeout, 2)
	assert.Equal(t, writeSc.Name, timeout[0].Scenario)
	assert.ErrorIs(t, timeout[0].Err, context.DeadlineExceeded)
	assert.Contains(t, timeout[0].Err.Error(), "pair timeout 100ms exceeded")
	assert.Contains(t, timeout[1].Err.Error(), "not run")
	assert.Empty(t, f.violations)

	out := buf.String()
	assert.Contains(t, out, "\nfabric.error.src=node0/dst=node1/op=write/size=65536: boom: no route\n")
	assert.Contains(t, out, "\nfabric.error.src=node2/dst=node3/op=send/size=64: not run:")
	assert.NotContains(t, out, "BenchmarkFabric/src=node0/dst=node1/")
	fab, err := blame.Read(strings.NewReader(out))
	require.NoError(t, err)
	assert.Len(t, fab.Links, 10)
}

// A link scenario that fails in a later pass keeps the rows of the
// passes before, is a failure once, and is not run again.
func TestFailsInALaterPass(t *testing.T) {
	o := options(t, 4, 3)
	o.Scenarios = o.Scenarios[:1]
	f := newFake()
	f.failFrom = map[link]int{{"node1", "node2"}: 2}
	var buf bytes.Buffer
	sum, err := coord.Run(context.Background(), o, f.dial, &buf)
	require.NoError(t, err)
	assert.Equal(t, coord.Summary{Rounds: 18, Links: 11, Measured: 11, Rows: 34, Failures: sum.Failures}, sum)
	require.Len(t, sum.Failures, 1)
	assert.ErrorIs(t, sum.Failures[0].Err, errLater)
	assert.Equal(t, 2, f.calls[link{"node1", "node2"}], "not run again after it failed")
	assert.Equal(t, 1, strings.Count(buf.String(), "BenchmarkFabric/src=node1/dst=node2/"))
}

func TestBadAgents(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(*fakeFabric)
		nodeErr string // the NodeFailure of node1, if any
		fails   int    // link scenarios failed
		errLike string // the first failure's message
	}{
		{"dial", func(f *fakeFabric) { f.dialErr = map[string]error{"node1": errors.New("refused")} }, "dial node1: refused", 6, "could not be dialled"},
		{"facts", func(f *fakeFabric) { f.factsErr = map[string]error{"node1": errors.New("no sysfs")} }, "facts of node1: no sysfs", 0, ""},
		{"foreign fact", func(f *fakeFabric) {
			f.facts = map[string][]string{"node1": {"fabric.node.node2.fw: 1"}}
		}, "want fabric.node.node1.<fact>", 0, ""},
		{"row as fact", func(f *fakeFabric) {
			f.facts = map[string][]string{"node1": {"BenchmarkX 1 1 ns/op"}}
		}, "want fabric.node.node1.<fact>", 0, ""},
		{"few results", func(f *fakeFabric) {
			f.results = func(l link, sc coord.Scenario, runs int) []coord.Result { return defaultResults(l, sc, runs)[:runs-1] }
		}, "", 24, "agent returned 0 results for 1 runs"},
		{"no direction", func(f *fakeFabric) {
			f.results = func(l link, sc coord.Scenario, runs int) []coord.Result {
				res := defaultResults(l, sc, runs)
				for _, r := range res {
					delete(r.Units, "p50-ns")
				}
				return res
			}
		}, "", 24, "unit p50-ns has no direction"},
		{"direction conflict", func(f *fakeFabric) {
			f.results = func(l link, sc coord.Scenario, runs int) []coord.Result {
				res := defaultResults(l, sc, runs)
				if l.src == "node1" {
					res[0].Units["p50-ns"] = "higher"
				}
				return res
			}
		}, "", 6, "unit p50-ns: better=higher contradicts"},
		{"NaN", func(f *fakeFabric) {
			f.results = func(l link, sc coord.Scenario, runs int) []coord.Result {
				res := defaultResults(l, sc, runs)
				if l.src == "node1" {
					res[0].Values["MB/s"] = nan()
				}
				return res
			}
		}, "", 6, "want a finite value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			tc.setup(f)
			var buf bytes.Buffer
			sum, err := coord.Run(context.Background(), options(t, 4, 2), f.dial, &buf)
			if tc.fails == 24 {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "nothing measured")
				assert.Contains(t, err.Error(), tc.errLike)
			} else {
				require.NoError(t, err)
			}
			require.Len(t, sum.Failures, tc.fails)
			if tc.fails > 0 {
				assert.Contains(t, sum.Failures[0].Err.Error(), tc.errLike)
			}
			if tc.nodeErr != "" {
				require.Len(t, sum.NodeFailures, 1)
				assert.Equal(t, "node1", sum.NodeFailures[0].Node)
				assert.Contains(t, sum.NodeFailures[0].Err.Error(), tc.nodeErr)
				assert.Contains(t, buf.String(), "\nfabric.error.node=node1: ")
				assert.NotContains(t, buf.String(), "fabric.node.node1.fw")
			} else {
				assert.Empty(t, sum.NodeFailures)
			}
			assert.Equal(t, 24-tc.fails, sum.Measured)
			assert.NotContains(t, buf.String(), "\nBenchmarkX")
			if sum.Measured > 0 {
				_, err := blame.Read(strings.NewReader(buf.String()))
				assert.NoError(t, err)
			}
		})
	}
}

func nan() float64 { z := 0.0; return z / z }

func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*coord.Options)
		want string
	}{
		{"plan nodes", func(o *coord.Options) { o.Nodes = o.Nodes[:3] }, "plan all is for 4 nodes, the node list has 3"},
		{"bad plan", func(o *coord.Options) { o.Plan.Rounds = []schedule.Round{{{Src: 0, Dst: 0}}} }, "a node cannot be paired with itself"},
		{"empty plan", func(o *coord.Options) { o.Plan.Rounds = nil }, "plan all has no pair"},
		{"node name", func(o *coord.Options) { o.Nodes[2] = "no de" }, `node 2: node name "no de" holds ' '`},
		{"node case", func(o *coord.Options) { o.Nodes[2] = "NODE1" }, `nodes 1 ("node1") and 2 ("NODE1")`},
		{"no scenario", func(o *coord.Options) { o.Scenarios = nil }, "no scenario: at least 1"},
		{"too many scenarios", func(o *coord.Options) { o.Scenarios = make([]coord.Scenario, coord.MaxScenarios+1) }, "1001 scenarios: at most 1000"},
		{"duplicate", func(o *coord.Options) { o.Scenarios = append(o.Scenarios, writeSc) }, `scenario "op=write/size=65536" is listed twice (0 and 2)`},
		{"empty scenario", func(o *coord.Options) { o.Scenarios[1].Name = "" }, "scenario: empty name"},
		{"space", func(o *coord.Options) { o.Scenarios[1].Name = "op=write size=1" }, "holds ' '"},
		{"not key=value", func(o *coord.Options) { o.Scenarios[1].Name = "op=write/64" }, `part "64" is not key=value`},
		{"src part", func(o *coord.Options) { o.Scenarios[1].Name = "op=write/src=a" }, `part "src=a": src= and dst=`},
		{"dst part", func(o *coord.Options) { o.Scenarios[1].Name = "dst=a" }, `part "dst=a"`},
		{"runs 0", func(o *coord.Options) { o.Runs = 0 }, "runs 0: must be within 1..100"},
		{"runs high", func(o *coord.Options) { o.Runs = coord.MaxRuns + 1 }, "runs 101: must be within 1..100"},
		{"timeout", func(o *coord.Options) { o.PairTimeout = 0 }, "pair timeout 0s: must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(t, 4, 2)
			tc.edit(&o)
			f := newFake()
			var buf bytes.Buffer
			_, err := coord.Run(context.Background(), o, f.dial, &buf)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, err.Error(), o.Check().Error())
			assert.Zero(t, buf.Len(), "nothing written")
			assert.Zero(t, f.runs)
		})
	}
	require.NoError(t, options(t, 4, 2).Check())
}

func TestCancel(t *testing.T) {
	for _, conc := range []bool{true, false} {
		t.Run(fmt.Sprintf("concurrency=%v", conc), func(t *testing.T) {
			o := options(t, 4, 1)
			o.Scenarios = o.Scenarios[:1] // one Run a pair
			o.Concurrency = conc
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := newFake()
			f.delay = 5 * time.Millisecond
			// Cancel during the 5th Run (round 3 of 6).
			var n int
			mu := &f.mu
			f.onRun = func() {
				mu.Lock()
				n++
				hit := n == 5
				mu.Unlock()
				if hit {
					cancel()
				}
			}
			var buf bytes.Buffer
			sum, err := coord.Run(ctx, o, f.dial, &buf)
			require.Error(t, err)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Contains(t, err.Error(), "run stopped")
			if conc {
				assert.Equal(t, 3, sum.Rounds, "round 3's pairs all ran, cancelled")
			} else {
				assert.Equal(t, 2, sum.Rounds, "round 3's second pair did not start")
				assert.Equal(t, 5, f.runs)
			}
			assert.Zero(t, f.inFlight(), "a Run still in progress")
			assert.LessOrEqual(t, f.runs, 6, "pairs started after the cancel")
			// What was measured is in the stream.
			fab, rerr := blame.Read(strings.NewReader(buf.String()))
			require.NoError(t, rerr)
			assert.Len(t, fab.Links, sum.Links)
		})
	}
}

func TestWriterFails(t *testing.T) {
	for _, after := range []int{0, 2000} {
		o := options(t, 4, 3)
		f := newFake()
		w := &failWriter{left: after}
		_, err := coord.Run(context.Background(), o, f.dial, w)
		require.Error(t, err)
		assert.ErrorIs(t, err, errDiskFull)
		assert.Contains(t, err.Error(), "coord: writing")
		assert.Zero(t, f.inFlight())
	}
}

var errDiskFull = errors.New("disk full")

// failWriter accepts left bytes, then fails.
type failWriter struct{ left int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n := w.left
		w.left = 0
		return n, errDiskFull
	}
	w.left -= len(p)
	return len(p), nil
}
