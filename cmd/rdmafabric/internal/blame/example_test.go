package blame_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/blame"
)

// A 4-node fabric, one run per directed link: node3 is slow with
// everyone, and node0 → node1 is slow between two healthy nodes.
const tinyFabric = `Unit MB/s better=higher
fabric.node.node0.mtu: 4096
fabric.node.node1.mtu: 4096
fabric.node.node2.mtu: 4096
fabric.node.node3.mtu: 1024
fabric.node.node3.counter.symbol_error: 12
BenchmarkFabric/src=node0/dst=node1/op=write/size=65536 	20000	10005 ns/op	6550 MB/s
BenchmarkFabric/src=node0/dst=node2/op=write/size=65536 	20000	5985 ns/op	10950 MB/s
BenchmarkFabric/src=node0/dst=node3/op=write/size=65536 	20000	9885 ns/op	6630 MB/s
BenchmarkFabric/src=node1/dst=node0/op=write/size=65536 	20000	5931 ns/op	11050 MB/s
BenchmarkFabric/src=node1/dst=node2/op=write/size=65536 	20000	5983 ns/op	10953 MB/s
BenchmarkFabric/src=node1/dst=node3/op=write/size=65536 	20000	9952 ns/op	6585 MB/s
BenchmarkFabric/src=node2/dst=node0/op=write/size=65536 	20000	5945 ns/op	11024 MB/s
BenchmarkFabric/src=node2/dst=node1/op=write/size=65536 	20000	5948 ns/op	11018 MB/s
BenchmarkFabric/src=node2/dst=node3/op=write/size=65536 	20000	9957 ns/op	6582 MB/s
BenchmarkFabric/src=node3/dst=node0/op=write/size=65536 	20000	9904 ns/op	6617 MB/s
BenchmarkFabric/src=node3/dst=node1/op=write/size=65536 	20000	9852 ns/op	6652 MB/s
BenchmarkFabric/src=node3/dst=node2/op=write/size=65536 	20000	9970 ns/op	6573 MB/s
`

func Example() {
	f, err := blame.Read(strings.NewReader(tinyFabric))
	if err != nil {
		fmt.Println(err)
		return
	}
	rep := blame.Judge(f, blame.DefaultOptions())
	if err := rep.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
	}
	for _, line := range rep.DrainLines(true) {
		fmt.Println(line)
	}
	fmt.Println("exit", rep.Exit())
	// Output:
	// BAD NODE node3 (slow-with-all)
	//   slow-with-all sending op=write/size=65536 MB/s: score 0.60 (bad below 0.90), median 6617 MB/s against fabric median 11018 MB/s (3 links)
	//   slow-with-all receiving op=write/size=65536 MB/s: score 0.60 (bad below 0.90), median 6585 MB/s against fabric median 11018 MB/s (3 links)
	//   evidence: counter-moved symbol_error=+12; mtu-differs mtu=1024 (majority 4096)
	// BAD LINK node0 -> node1 (slow-link)
	//   slow-link op=write/size=65536 MB/s: score 0.60 (bad below 0.90), median 6550 MB/s against fabric median 11018 MB/s
	// healthy: 3 nodes, 5 links
	// judged 4 nodes, 12 links on 1 metric: K=4 MADs, min drop 10%, floor 0.50 of link rate
	// scontrol update NodeName=node3 State=DRAIN Reason="rdmabench: slow-with-all sending op=write/size=65536 score=0.60 6617/11018MB/s symbol_error=+12 mtu=1024"
	// # bad link node0 -> node1: slow-link op=write/size=65536 score=0.60 6550/11018MB/s; not drained (a link is not a node): check the cable, transceivers and switch ports between node0 and node1
	// exit 1
}
