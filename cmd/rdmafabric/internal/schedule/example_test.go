package schedule_test

import (
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
)

// All pairs of four nodes: three circle rounds, each run both ways.
func Example() {
	p, err := schedule.All(4)
	if err != nil {
		panic(err)
	}
	for i, r := range p.Rounds {
		fmt.Println("round", i, r)
	}
	wall, err := schedule.Estimate(p, 10*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(p.Rounds), "rounds,", p.Pairs(), "directed pairs,", wall)
	// Output:
	// round 0 [0->3 1->2]
	// round 1 [3->0 2->1]
	// round 2 [1->3 2->0]
	// round 3 [3->1 0->2]
	// round 4 [2->3 0->1]
	// round 5 [3->2 1->0]
	// 6 rounds, 12 directed pairs, 1m0s
}

// A ring shift whose cycle is odd needs a third round.
func ExampleRing() {
	p, err := schedule.Ring(5, 2)
	if err != nil {
		panic(err)
	}
	for i, r := range p.Rounds {
		fmt.Println("round", i, r)
	}
	// Output:
	// round 0 [0->2 4->1]
	// round 1 [1->3 2->4]
	// round 2 [3->0]
}
