package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rdmabench/rdmabench/cmd/internal/facts"
	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/rdmatest/peer"
	"github.com/rdmabench/rdmabench/rdmatest/scenario"
)

// rdmaMeasurer is the agent's real measurer: rdmabench's scenarios
// (package rdmatest/scenario, chosen by name) on this node's device, as
// the requester, with another node's rdmapeer as side B.
type rdmaMeasurer struct {
	d     *rdmatest.Dev    // rdmapeer's device, for the facts
	opts  rdmatest.Options // the device options; Peer and PeerToken are set per run
	token string           // the other agents' token (this one's)
}

// initTesting lets testing.Benchmark run outside go test, and its
// -test.benchtime be set to a fixed count.
var initTesting = sync.OnceFunc(testing.Init)

func (r *rdmaMeasurer) facts(node string) ([]string, error) {
	d := r.d
	speed, _ := strconv.ParseFloat(strings.TrimSuffix(d.PortAttr.ActiveSpeed, " Gb/s"), 64) // "code N": unknown, 0
	f, err := facts.Collect(facts.Source{}, d.Name(), d.PortNum, facts.PortAttrs{
		ActiveMTU: d.PortAttr.ActiveMTU, ActiveWidth: d.PortAttr.ActiveWidth, ActiveSpeed: speed,
		GIDType: d.GIDEntry.Type.String(), FW: d.Attr().FWVersion, Software: software(d.Attr().Provider),
	})
	if err != nil {
		return nil, err
	}
	return f.ConfigLines(node), nil
}

// software tells a software RDMA device by its provider: Soft-RoCE
// (rxe) and Soft-iWARP (siw).
func software(provider string) bool { return provider == "rxe" || provider == "siw" }

func (r *rdmaMeasurer) check(name string) (int64, error) {
	n, err := scenario.Parse(name)
	if err != nil {
		return 0, err
	}
	return specMemory(n.Spec)
}

// specMemory is what a run of s costs this node in memory, before
// anything is built: the registered buffers of its pair (two slots a QP,
// counters × stride for the atomics) and the rings of its queues, priced
// as the peer prices the destination's side of the same Setup (costOf;
// the device's CQ limit unknown here, so not applied: an upper bound),
// times the threads, each with a pair of its own.
func specMemory(s scenario.Spec) (int64, error) {
	req, err := s.PeerSetup()
	if err != nil {
		return 0, err
	}
	return costOf(req, peer.Limits{}).Mem * int64(max(s.Threads, 1)), nil
}

func (r *rdmaMeasurer) run(ctx context.Context, addr, name string, iters int) (res *oob.RunResult, err error) {
	n, err := scenario.Parse(name)
	if err != nil {
		return nil, err
	}
	o := r.opts
	o.Peer, o.PeerToken = addr, r.token
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := rdmatest.OpenDevWith(o)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	// The run's deadline, its client leaving and the agent's shutdown
	// end it inside its loops: their stop flag, raised through ctx.
	defer context.AfterFunc(ctx, d.StopLoops)()
	before, err := rdmatest.ReadCounters(d.Name(), d.PortNum)
	if err != nil {
		return nil, err
	}
	initTesting()
	if err := flag.CommandLine.Set("test.benchtime", fmt.Sprintf("%dx", iters)); err != nil {
		return nil, err
	}
	defer func() {
		// rdmatest.Benchmark panics with the reason a run failed.
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("%v", p)
		}
	}()
	br := rdmatest.Benchmark(n.String(), func(b *testing.B) { n.Run(b, d) })
	if br.N == 0 {
		return nil, fmt.Errorf("%s skipped on this node (its reason is in the agent's log)", n)
	}
	after, err := rdmatest.ReadCounters(d.Name(), d.PortNum)
	if err != nil {
		return nil, err
	}
	delta, err := rdmatest.Delta(before, after)
	if err != nil {
		return nil, err
	}
	res = resultOf(br, delta)
	if start, end, ok := d.LastRegion(); ok {
		res.Start, res.End = start.UnixNano(), end.UnixNano()
	}
	// The congestion counters this device has travel even at zero, so
	// that the coordinator can tell "none happened" from "not counted".
	for _, c := range facts.CongestionCounters {
		if _, ok := before[c]; ok {
			res.Counters[c] = delta[c]
		}
	}
	return res, nil
}

// resultOf converts a benchmark result: its metrics (ns/op, MB/s from
// SetBytes unless the benchmark reported its own, the custom units whose
// direction rdmatest knows: p50-ns…, msgs/s),
// the directions of the custom units, and the counters that moved.
func resultOf(br testing.BenchmarkResult, delta rdmatest.Counters) *oob.RunResult {
	res := &oob.RunResult{Iters: int64(br.N), Values: make(map[string]float64), Units: make(map[string]string), Counters: make(map[string]uint64)}
	res.Values["ns/op"] = float64(br.T.Nanoseconds()) / float64(br.N)
	if br.Bytes > 0 && br.T > 0 {
		res.Values["MB/s"] = float64(br.Bytes) * float64(br.N) / 1e6 / br.T.Seconds()
	}
	// Only the units with a direction: the port counters' per-run
	// metrics (…/run) travel as Counters, the run's own deltas.
	for _, u := range rdmatest.Units() {
		if v, ok := br.Extra[u.Name]; ok {
			res.Values[u.Name] = v
			if u.Name != "ns/op" && u.Name != "MB/s" {
				res.Units[u.Name] = u.Better
			}
		}
	}
	for c, v := range delta {
		if v != 0 {
			res.Counters[c] = v
		}
	}
	return res
}
