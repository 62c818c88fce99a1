package coord_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/coord"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
)

// exampleAgent measures 1000 MB/s plus 100 per source number, and
// reports one symbol error a run.
type exampleAgent struct{ node string }

func (a exampleAgent) Facts(context.Context) ([]string, error) {
	return []string{"fabric.node." + a.node + ".fw: 28.39.1002"}, nil
}

func (a exampleAgent) Run(_ context.Context, dst string, sc coord.Scenario, runs int) ([]coord.Result, error) {
	mbps := 1000.0
	if a.node == "b" {
		mbps = 1100
	}
	res := make([]coord.Result, runs)
	for i := range res {
		res[i] = coord.Result{
			Iters:    2000,
			Values:   map[string]float64{"MB/s": mbps, "ns/op": 65536 / mbps * 1000, "p50-ns": 5300},
			Units:    map[string]string{"p50-ns": "lower"},
			Counters: map[string]uint64{"symbol_error": 1},
		}
	}
	return res, nil
}

// A fabric run of two nodes, a and b: both directions, one scenario,
// two runs each, in two passes over the plan.
func ExampleRun() {
	plan, err := schedule.All(2)
	if err != nil {
		panic(err)
	}
	o := coord.DefaultOptions()
	o.Nodes = []string{"a", "b"}
	o.Plan = plan
	o.Scenarios = []coord.Scenario{{Name: "op=write/size=65536"}}
	o.Runs = 2
	o.PairTimeout = time.Minute
	dial := func(node string) (coord.Agent, error) { return exampleAgent{node}, nil }
	sum, err := coord.Run(context.Background(), o, dial, os.Stdout)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", sum)
	// Output:
	// pkg: github.com/rdmabench/rdmabench/cmd/rdmafabric
	// fabric.node.a.fw: 28.39.1002
	// fabric.node.b.fw: 28.39.1002
	// Unit p50-ns better=lower
	// BenchmarkFabric/src=a/dst=b/op=write/size=65536-1	2000	65536 ns/op	1000 MB/s	5300 p50-ns
	// BenchmarkFabric/src=b/dst=a/op=write/size=65536-1	2000	59578.181818181816 ns/op	1100 MB/s	5300 p50-ns
	// BenchmarkFabric/src=a/dst=b/op=write/size=65536-1	2000	65536 ns/op	1000 MB/s	5300 p50-ns
	// BenchmarkFabric/src=b/dst=a/op=write/size=65536-1	2000	59578.181818181816 ns/op	1100 MB/s	5300 p50-ns
	// fabric.node.a.counter.symbol_error: 2
	// fabric.node.b.counter.symbol_error: 2
	// {Rounds:4 Links:2 Measured:2 Rows:4 Failures:[] NodeFailures:[]}
}
