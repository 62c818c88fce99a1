package coord_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/coord"
)

// link is a directed link of the fake fabric.
type link struct{ src, dst string }

// fakeFabric is a fake set of agents: per-link values, injectable
// delays, failures and blocking, and a check that no node is in two
// Runs at once.
type fakeFabric struct {
	delay    time.Duration                                  // each Run sleeps this long (or until ctx is done)
	delays   map[link]time.Duration                         // replaces delay on the link
	fail     map[link]error                                 // Run on the link fails
	failFrom map[link]int                                   // Runs on the link fail from this call on (1: the first)
	block    map[link]bool                                  // Run on the link blocks until ctx is done
	dialErr  map[string]error                               // dialling the node fails
	factsErr map[string]error                               // Facts of the node fails
	facts    map[string][]string                            // Facts of the node returns these instead
	results  func(link, coord.Scenario, int) []coord.Result // replaces the default results
	onRun    func()                                         // called at the start of every Run

	mu         sync.Mutex
	busy       map[string]bool
	calls      map[link]int
	done       map[string]int // link and scenario → runs asked for so far
	cur, max   int
	runs       int
	violations []string
}

func newFake() *fakeFabric {
	return &fakeFabric{busy: make(map[string]bool), calls: make(map[link]int), done: make(map[string]int)}
}

// errLater is the failure of failFrom.
var errLater = errors.New("fails from now on")

func (f *fakeFabric) dial(node string) (coord.Agent, error) {
	if err := f.dialErr[node]; err != nil {
		return nil, err
	}
	return &fakeAgent{f: f, node: node}, nil
}

// inFlight is the number of Runs in progress.
func (f *fakeFabric) inFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

// mbps is the fake bandwidth of a link in a run.
func mbps(l link, sc coord.Scenario, run int) float64 {
	return 1000 + 100*float64(nodeNum(l.src)) + 10*float64(nodeNum(l.dst)) + float64(len(sc.Name)) + float64(run)/10
}

func nodeNum(n string) int {
	var i int
	fmt.Sscanf(strings.TrimLeft(n, "abcdefghijklmnopqrstuvwxyzN"), "%d", &i)
	return i
}

// defaultResults are runs results: ns/op, MB/s, p50-ns (lower), and
// msgs/s (higher) for the scenarios with op=send; one symbol_error a run.
func defaultResults(l link, sc coord.Scenario, runs int) []coord.Result {
	return resultsFrom(l, sc, 0, runs)
}

// resultsFrom is defaultResults for the runs first..first+runs−1 of the
// link and scenario (coord asks for one run a pass).
func resultsFrom(l link, sc coord.Scenario, first, runs int) []coord.Result {
	res := make([]coord.Result, runs)
	for i := range res {
		bw := mbps(l, sc, first+i)
		res[i] = coord.Result{
			Iters:    1000,
			Values:   map[string]float64{"MB/s": bw, "ns/op": 65536 / bw * 1000, "p50-ns": 5000},
			Units:    map[string]string{"p50-ns": "lower"},
			Counters: map[string]uint64{"symbol_error": 1},
		}
		if strings.Contains(sc.Name, "op=send") {
			res[i].Values["msgs/s"] = bw * 10
			res[i].Units["msgs/s"] = "higher"
		}
	}
	return res
}

type fakeAgent struct {
	f    *fakeFabric
	node string
}

func (a *fakeAgent) Facts(ctx context.Context) ([]string, error) {
	if err := a.f.factsErr[a.node]; err != nil {
		return nil, err
	}
	if lines, ok := a.f.facts[a.node]; ok {
		return lines, nil
	}
	p := "fabric.node." + strings.ToLower(a.node) + "."
	return []string{p + "fw: 28.39.1002", p + "link-rate-mbps: 12500"}, nil
}

func (a *fakeAgent) Run(ctx context.Context, dst string, sc coord.Scenario, runs int) ([]coord.Result, error) {
	f := a.f
	l := link{a.node, dst}
	f.mu.Lock()
	for _, n := range []string{l.src, l.dst} {
		if f.busy[n] {
			f.violations = append(f.violations, fmt.Sprintf("%s busy during %s -> %s", n, l.src, l.dst))
		}
		f.busy[n] = true
	}
	f.cur++
	f.max = max(f.max, f.cur)
	f.runs++
	f.calls[l]++
	call := f.calls[l]
	key := l.src + ">" + l.dst + "/" + sc.Name
	first := f.done[key]
	f.done[key] += runs
	onRun := f.onRun
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.busy[l.src], f.busy[l.dst] = false, false
		f.cur--
		f.mu.Unlock()
	}()
	if onRun != nil {
		onRun()
	}
	if f.block[l] {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := f.fail[l]; err != nil {
		return nil, err
	}
	if from, ok := f.failFrom[l]; ok && call >= from {
		return nil, errLater
	}
	delay := f.delay
	if d, ok := f.delays[l]; ok {
		delay = d
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.results != nil {
		return f.results(l, sc, runs), nil
	}
	return resultsFrom(l, sc, first, runs), nil
}
