package coord_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/coord"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
	"github.com/rdmabench/rdmabench/internal/results"
)

var (
	stream = coord.Scenario{Name: "bench=WriteBW/size=65536"}
	victim = coord.Scenario{Name: "bench=WriteLat/size=8"}
)

// incastFake is a fake fabric for incast: a stream's Run sleeps its
// setup, then its timed region (iterations × 64 KiB at the sender's
// rate) and returns that as its result; a victim's Run sleeps its setup
// and timed region and returns percentiles, higher when it overlapped a
// stream into its node.
type incastFake struct {
	setup   time.Duration
	rate    map[string]float64 // sender node → MB/s
	iters   int64
	vIters  int64
	vNs     float64 // the victim's ns/op
	fail    map[string]error
	counted map[string]bool // nodes whose device has congestion counters

	// With clock set, the agents tell their clocks (coord.Clocked),
	// each node's clock[node] ahead of the real one, and their results
	// carry their timed regions on it; teardown[node] is slept after the
	// region before the result returns (a device closing under TCG).
	clock    map[string]time.Duration
	teardown map[string]time.Duration

	mu      sync.Mutex
	streams int // streams in their timed region
	// regions are the last true timed region of each node's Run, on the
	// real clock.
	regions map[string][2]time.Time
}

func (f *incastFake) dial(node string) (coord.Agent, error) {
	a := &incastAgent{f: f, node: node}
	if f.clock != nil {
		return clockedAgent{a}, nil
	}
	return a, nil
}

// clockedAgent is an incastAgent that tells its node's clock.
type clockedAgent struct{ *incastAgent }

func (a clockedAgent) Clock(ctx context.Context) (coord.ClockSample, error) {
	sent := time.Now()
	now := time.Now().Add(a.f.clock[a.node])
	return coord.ClockSample{Sent: sent, Agent: now, Back: time.Now()}, ctx.Err()
}

// region records the true region [start, now) of a's Run and returns
// its result with the region on the node's clock when clocks are on,
// after the node's teardown.
func (a *incastAgent) region(ctx context.Context, start time.Time, res coord.Result) ([]coord.Result, error) {
	f, end := a.f, time.Now()
	f.mu.Lock()
	if f.regions == nil {
		f.regions = map[string][2]time.Time{}
	}
	f.regions[a.node] = [2]time.Time{start, end}
	f.mu.Unlock()
	if f.clock != nil {
		res.Start, res.End = start.Add(f.clock[a.node]), end.Add(f.clock[a.node])
	}
	if err := sleep(ctx, f.teardown[a.node]); err != nil {
		return nil, err
	}
	return []coord.Result{res}, nil
}

type incastAgent struct {
	f    *incastFake
	node string
}

func (a *incastAgent) Facts(context.Context) ([]string, error) {
	return []string{"fabric.node." + strings.ToLower(a.node) + ".fw: 1"}, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *incastAgent) Run(ctx context.Context, dst string, sc coord.Scenario, runs int) ([]coord.Result, error) {
	f := a.f
	if err := f.fail[a.node]; err != nil {
		return nil, err
	}
	if err := sleep(ctx, f.setup); err != nil {
		return nil, err
	}
	counters := map[string]uint64{"rcvd_seq_err": 2}
	if f.counted[a.node] {
		counters["np_cnp_sent"] = 0
	}
	if sc == stream {
		mbs := f.rate[a.node]
		d := time.Duration(float64(f.iters) * 65536 / mbs * 1e3)
		f.mu.Lock()
		f.streams++
		f.mu.Unlock()
		start := time.Now()
		err := sleep(ctx, d)
		f.mu.Lock()
		f.streams--
		f.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return a.region(ctx, start, coord.Result{Iters: f.iters, Values: map[string]float64{"ns/op": float64(d) / float64(f.iters), "MB/s": mbs}, Counters: counters})
	}
	f.mu.Lock()
	loaded := f.streams > 0
	f.mu.Unlock()
	d := time.Duration(f.vNs * float64(f.vIters))
	start := time.Now()
	if err := sleep(ctx, d); err != nil {
		return nil, err
	}
	p50, p99, p999 := 5000.0, 9000.0, 20000.0
	if loaded {
		p50, p99, p999 = 3*p50, 4*p99, 5*p999
	}
	return a.region(ctx, start, coord.Result{Iters: f.vIters,
		Values:   map[string]float64{"ns/op": f.vNs, "p50-ns": p50, "p99-ns": p99, "p99.9-ns": p999},
		Units:    map[string]string{"p50-ns": "lower", "p99-ns": "lower", "p99.9-ns": "lower"},
		Counters: counters})
}

// incastRows reads a stream's rows by name: unit → values.
func incastRows(t *testing.T, data []byte) (map[string]map[string][]float64, []string) {
	t.Helper()
	rows := make(map[string]map[string][]float64)
	var config []string
	rd := results.NewReader(bytes.NewReader(data), "incast")
	rd.Strict()
	for rd.Scan() {
		rec := rd.Result()
		name := "Benchmark" + strings.TrimSuffix(rec.Name, "-1")
		if rows[name] == nil {
			rows[name] = make(map[string][]float64)
		}
		for _, v := range rec.Values {
			rows[name][v.Unit] = append(rows[name][v.Unit], v.Value)
		}
	}
	require.NoError(t, rd.Err())
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "fabric.") {
			config = append(config, l)
		}
	}
	return rows, config
}

// TestRunIncastRandom runs random incast sweeps on the fake (the seed is
// printed) and checks the case rows against the flows' rows: the
// aggregate, Jain's index from the senders' MB/s, the FCTs, the victim's
// ratios, an overlap near 1 when the victim runs inside the streams, and
// a row per flow and run.
func TestRunIncastRandom(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for trial := range 3 {
		n := 3 + rng.IntN(3)
		nodes := make([]string, n)
		f := &incastFake{setup: 5 * time.Millisecond, rate: make(map[string]float64), iters: 20, vIters: 10, vNs: 2e6}
		for i := range nodes {
			nodes[i] = fmt.Sprintf("node%d", i+1)
			f.rate[nodes[i]] = 50 + 200*rng.Float64() // 20 × 64 KiB: 5–26 ms
		}
		cases, err := schedule.Incast(n, []int{rng.IntN(n)}, nil)
		require.NoError(t, err)
		o := coord.IncastOptions{Nodes: nodes, Cases: cases, Stream: stream, Victim: victim, Runs: 2, CaseTimeout: 10 * time.Second}
		// The victim's 20 ms run starts with the streams: they last
		// longer only when slow, so the overlap is checked below
		// against its definition, not assumed.
		var buf bytes.Buffer
		sum, err := coord.RunIncast(context.Background(), o, f.dial, &buf)
		require.NoError(t, err, "trial %d", trial)
		assert.Equal(t, len(cases), sum.Measured)
		rows, config := incastRows(t, buf.Bytes())
		assert.Contains(t, config, "fabric.incast.congestion-counters: not counted by these devices (none of np_cnp_sent, np_ecn_marked_roce_packets, rp_cnp_handled, rp_cnp_ignored; rxe and siw have none)")
		for _, c := range cases {
			prefix := fmt.Sprintf("BenchmarkIncast/dst=%s/n=%d/flow=", nodes[c.Dst], c.N())
			cr := rows[prefix+"case/"+stream.Name]
			require.NotNil(t, cr, "case row of %+v in\n%s", c, buf.String())
			for run := range 2 {
				var sum, sumSq float64
				var fcts []float64
				for _, s := range c.Senders {
					sr := rows[prefix+"sender/src="+nodes[s]+"/"+stream.Name]
					require.Len(t, sr["MB/s"], 2, "%s in %v", prefix+"sender/src="+nodes[s]+"/"+stream.Name, rows)
					x := sr["MB/s"][run]
					sum, sumSq = sum+x, sumSq+x*x
					fcts = append(fcts, sr["fct-ns"][run])
					assert.InDelta(t, sr["ns/op"][run]*20, sr["fct-ns"][run], 1)
				}
				jain := cr["jain"][run]
				assert.InDelta(t, sum*sum/(float64(c.N())*sumSq), jain, 1e-9)
				assert.True(t, jain >= 1/float64(c.N())-1e-12 && jain <= 1+1e-12, "jain %v", jain)
				var maxFCT float64
				for _, x := range fcts {
					maxFCT = math.Max(maxFCT, x)
				}
				assert.Equal(t, maxFCT, cr["fct-max-ns"][run])
				assert.LessOrEqual(t, cr["fct-p50-ns"][run], maxFCT)
				// The aggregate is the bytes over the span, so at most the
				// sum of the rates (flows that overlap fully).
				assert.LessOrEqual(t, cr["MB/s"][run], sum*1.0001)
				assert.GreaterOrEqual(t, cr["sender-skew-ns"][run], 0.0)
				ov := cr["victim-overlap"][run]
				assert.True(t, ov >= 0 && ov <= 1, "overlap %v", ov)
				idle := rows[prefix+"victim-idle/src="+nodes[c.Dst]+"/"+victim.Name]
				load := rows[prefix+"victim/src="+nodes[c.Dst]+"/"+victim.Name]
				assert.InDelta(t, load["p99-ns"][run]/idle["p99-ns"][run], cr["victim-p99-x"][run], 1e-9)
				assert.InDelta(t, load["p99.9-ns"][run]/idle["p99.9-ns"][run], cr["victim-p99.9-x"][run], 1e-9)
			}
		}
		want := 0
		for _, c := range cases {
			want += 2 * (c.N() + 3) // a run: idle victim, senders, victim, case
		}
		assert.Equal(t, want, sum.Rows, "rows")
	}
}

// TestRunIncastOverlap checks victim-overlap against its definition: a
// victim well inside long streams overlaps them fully; one sent after
// they end overlaps nothing.
func TestRunIncastOverlap(t *testing.T) {
	nodes := []string{"a1", "a2", "a3"}
	for _, tc := range []struct {
		delay    time.Duration
		min, max float64
		ratio    float64
	}{
		{50 * time.Millisecond, 0.99, 1, 4}, // streams 200 ms, victim 20 ms from 50 ms
		{400 * time.Millisecond, 0, 0, 1},   // victim after the streams: idle again
	} {
		f := &incastFake{setup: time.Millisecond, rate: map[string]float64{"a2": 6.5536, "a3": 6.5536}, iters: 20, vIters: 10, vNs: 2e6}
		cases, err := schedule.Incast(3, []int{0}, nil)
		require.NoError(t, err)
		var buf bytes.Buffer
		o := coord.IncastOptions{Nodes: nodes, Cases: cases, Stream: stream, Victim: victim, Runs: 1, CaseTimeout: 10 * time.Second, VictimDelay: tc.delay}
		_, err = coord.RunIncast(context.Background(), o, f.dial, &buf)
		require.NoError(t, err)
		rows, _ := incastRows(t, buf.Bytes())
		cr := rows["BenchmarkIncast/dst=a1/n=2/flow=case/"+stream.Name]
		require.NotNil(t, cr, buf.String())
		ov := cr["victim-overlap"][0]
		assert.True(t, ov >= tc.min && ov <= tc.max, "delay %v: overlap %v, want %v..%v", tc.delay, ov, tc.min, tc.max)
		assert.Equal(t, tc.ratio, cr["victim-p99-x"][0], "delay %v", tc.delay)
		assert.InDelta(t, 1.0, cr["jain"][0], 1e-12, "equal rates")
	}
}

// TestRunIncastMeasuredOverlap: with agents that tell their clocks and
// regions, victim-overlap is the true overlap of the victim's region
// with every sender's, whatever the nodes' clock offsets (up to an hour
// either way) and their teardowns after each run (0–150 ms, which the
// estimate would count as part of the region), drawn at random (seed
// printed); the stream says the timing was measured. The same fabric
// without clocks says it was estimated.
func TestRunIncastMeasuredOverlap(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	nodes := []string{"a1", "a2", "a3"}
	for trial := range 4 {
		f := &incastFake{setup: time.Millisecond, rate: map[string]float64{"a2": 13.1072 * (1 + rng.Float64()), "a3": 13.1072 * (1 + rng.Float64())},
			iters: 20, vIters: 10, vNs: 4e6 + 4e6*rng.Float64(), // streams 50–100 ms, victim 40–80 ms
			clock: map[string]time.Duration{}, teardown: map[string]time.Duration{}}
		for _, n := range nodes {
			f.clock[n] = time.Duration((rng.Float64()*2 - 1) * float64(time.Hour))
			f.teardown[n] = time.Duration(rng.Float64() * float64(150*time.Millisecond))
		}
		delay := time.Duration(rng.Float64() * float64(60*time.Millisecond))
		cases, err := schedule.Incast(3, []int{0}, nil)
		require.NoError(t, err)
		var buf bytes.Buffer
		o := coord.IncastOptions{Nodes: nodes, Cases: cases, Stream: stream, Victim: victim, Runs: 1, CaseTimeout: 10 * time.Second, VictimDelay: delay}
		_, err = coord.RunIncast(context.Background(), o, f.dial, &buf)
		require.NoError(t, err, "trial %d", trial)
		rows, config := incastRows(t, buf.Bytes())
		cr := rows["BenchmarkIncast/dst=a1/n=2/flow=case/"+stream.Name]
		require.NotNil(t, cr, buf.String())
		v, s2, s3 := f.regions["a1"], f.regions["a2"], f.regions["a3"]
		lo := slices.MaxFunc([]time.Time{v[0], s2[0], s3[0]}, time.Time.Compare)
		hi := slices.MinFunc([]time.Time{v[1], s2[1], s3[1]}, time.Time.Compare)
		want := max(0, float64(hi.Sub(lo))) / float64(v[1].Sub(v[0]))
		// The fake's clocks are exact; what is left is the probes' own
		// round trips on this machine, microseconds in a 40 ms region.
		assert.InDelta(t, want, cr["victim-overlap"][0], 0.02, "trial %d: clocks %v, teardowns %v, victim delay %v", trial, f.clock, f.teardown, delay)
		assert.Condition(t, func() bool {
			for _, l := range config {
				if ok, _ := regexp.MatchString(`^fabric\.incast\.timing: measured \(each flow's timed region from its agent, on the coordinator's clock within ±[0-9.]+ ms`, l); ok {
					return true
				}
			}
			return false
		}, "a measured timing line in %q", config)
	}
	f := &incastFake{setup: time.Millisecond, rate: map[string]float64{"a2": 100, "a3": 100}, iters: 5, vIters: 5, vNs: 1e5}
	cases, err := schedule.Incast(3, []int{0}, nil)
	require.NoError(t, err)
	var buf bytes.Buffer
	o := coord.IncastOptions{Nodes: nodes, Cases: cases, Stream: stream, Victim: victim, Runs: 1, CaseTimeout: 10 * time.Second}
	_, err = coord.RunIncast(context.Background(), o, f.dial, &buf)
	require.NoError(t, err)
	_, config := incastRows(t, buf.Bytes())
	assert.Contains(t, config, "fabric.incast.timing: estimated for 3 of 3 flows (agents that do not tell their clock or region: a region is taken to end when its result came back, so victim-overlap and sender-skew-ns may be off by the agents' teardown)")
}

// TestRunIncastFailure checks that a failing sender fails its case
// only: the case is a Failure with an error line and no rows, the other
// cases are measured; and that a counted congestion counter is said.
func TestRunIncastFailure(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4"}
	boom := errors.New("boom")
	f := &incastFake{setup: time.Millisecond, rate: map[string]float64{"n1": 100, "n2": 100, "n3": 100, "n4": 100}, iters: 5, vIters: 5, vNs: 1e5,
		fail: map[string]error{"n4": boom}, counted: map[string]bool{"n2": true}}
	cases, err := schedule.Incast(4, nil, []int{2})
	require.NoError(t, err)
	var buf bytes.Buffer
	o := coord.IncastOptions{Nodes: nodes, Cases: cases, Stream: stream, Victim: victim, Runs: 2, CaseTimeout: 10 * time.Second}
	sum, err := coord.RunIncast(context.Background(), o, f.dial, &buf)
	require.NoError(t, err)
	// n4 sends to n2 and n3 (2 senders after the receiver), is the
	// victim partner of n1's case and the receiver of its own (whose
	// victim flow n4's agent runs).
	for _, fl := range sum.Failures {
		assert.ErrorIs(t, fl.Err, boom)
	}
	assert.Len(t, sum.Failures, 3)
	assert.Equal(t, 1, sum.Measured)
	rows, config := incastRows(t, buf.Bytes())
	assert.NotNil(t, rows["BenchmarkIncast/dst=n1/n=2/flow=case/"+stream.Name])
	assert.Nil(t, rows["BenchmarkIncast/dst=n2/n=2/flow=case/"+stream.Name])
	assert.Contains(t, config, "fabric.incast.congestion-counters: counted on n2 (a counter with no line there did not move)")
	assert.Contains(t, buf.String(), "fabric.error.src=incast/dst=n2/n=2/bench=writebw/size=65536: n4 -> n2 bench=WriteBW/size=65536: boom")
}

// TestIncastOptionsCheck checks that bad options are refused with the
// value and the limit.
func TestIncastOptionsCheck(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	good := func() coord.IncastOptions {
		cases, _ := schedule.Incast(3, nil, nil)
		return coord.IncastOptions{Nodes: nodes, Cases: cases, Stream: stream, Victim: victim, Runs: 1, CaseTimeout: time.Second}
	}
	require.NoError(t, good().Check())
	for _, tc := range []struct {
		change func(*coord.IncastOptions)
		want   string
	}{
		{func(o *coord.IncastOptions) { o.Nodes = nodes[:2] }, "2 nodes: at least 3"},
		{func(o *coord.IncastOptions) { o.Cases = nil }, "no case"},
		{func(o *coord.IncastOptions) { o.Runs = 0 }, "runs 0: must be within 1..100"},
		{func(o *coord.IncastOptions) { o.VictimDelay = -1 }, "victim delay -1ns"},
		{func(o *coord.IncastOptions) { o.Victim = stream }, "listed twice"},
		{func(o *coord.IncastOptions) { o.Cases[0].Senders = []int{1, 1} }, "node 1 is in it twice"},
		{func(o *coord.IncastOptions) { o.Cases[0].Senders = []int{1, 5} }, "node 5: nodes are 0..2"},
		{func(o *coord.IncastOptions) { o.Cases[0].Victim = o.Cases[0].Dst }, "victim partner 0"},
	} {
		o := good()
		tc.change(&o)
		assert.ErrorContains(t, o.Check(), tc.want)
	}
}
