package facts_test

import (
	"fmt"

	"github.com/rdmabench/rdmabench/cmd/internal/facts"
)

// Collect the facts of an mlx5 port (a fake sysfs tree: PCIe gen3 x16
// trained at x8), take counter snapshots around a run, and write the
// lines of the coordinator's stream.
func Example() {
	src := facts.Source{Sys: "testdata/mlx5/sys", Proc: "testdata/mlx5/proc"}
	verbs := facts.PortAttrs{ActiveMTU: 4096, ActiveWidth: 4, ActiveSpeed: 25, GIDType: "IB"}
	f, err := facts.Collect(src, "mlx5_0", 1, verbs)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range f.ConfigLines("Node7") {
		fmt.Println(line)
	}

	// Snapshot(src, "mlx5_0", 1) before and after the run gives:
	before := facts.Counters{"symbol_error": 3, "port_xmit_data": 100, "link_downed": 1}
	after := facts.Counters{"symbol_error": 15, "port_xmit_data": 900, "link_downed": 1}
	d, err := facts.Delta(before, after)
	if err != nil {
		fmt.Println(err)
	}
	for _, line := range facts.CounterLines("Node7", d) {
		fmt.Println(line)
	}
	// Output:
	// fabric.node.node7.dev: mlx5_0
	// fabric.node.node7.fw: 28.39.1002
	// fabric.node.node7.kernel: 6.8.0-45-generic
	// fabric.node.node7.mtu: 4096
	// fabric.node.node7.link-speed: 100 Gb/sec (4X EDR)
	// fabric.node.node7.link-rate-mbps: 12500
	// fabric.node.node7.gid-type: IB
	// fabric.node.node7.pcie-speed: 8.0 GT/s
	// fabric.node.node7.pcie-width: x8
	// fabric.node.node7.pcie-max-speed: 8.0 GT/s
	// fabric.node.node7.pcie-max-width: x16
	// fabric.node.node7.governor: performance
	// fabric.node.node7.numa-node: 1
	// fabric.node.node7.counter.port_xmit_data: 800
	// fabric.node.node7.counter.symbol_error: 12
}
