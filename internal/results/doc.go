// Package results has one job: reading rdmabench result files, for
// every tool that reads them (ci/gate, rdmaplot, rdmasummary and
// rdmafabric's blame). What a tool makes of the results (the gate's
// pairs, the charts' series, the summary's tables, the fabric's links)
// is the tool's.
//
// A result file is Go benchmark format (golang.org/x/perf/benchfmt), as
// go test prints it for rdmabench's benchmarks and as rdmafabric writes
// its streams:
//
//	goos: linux
//	rdma-device: rxe0
//	rdma-fw: 1.0.0
//	Unit p99-ns better=lower
//	BenchmarkWriteLat/transport=RC/size=8-2   1000   30000 ns/op   0.27 MB/s   31000 p99-ns   2 duplicate_request/run
//
// Configuration lines ("key: value") describe the results after them:
// rdmatest's rdma-* lines (device, provider, firmware, node GUID, ...),
// kernel and cpu, rdmafabric's fabric.node.* facts. A later line
// replaces an earlier one of its key; an empty value deletes the key.
// Result.Config gives the configuration in force at a result line,
// Reader.FinalConfig the configuration as the whole file leaves it,
// lines after the last result included.
//
// Unit lines give a unit its direction, better=higher or better=lower
// (benchfmt knows ns/op, MB/s, B/op and allocs/op itself):
// Reader.Units.
//
// Result lines are one run of one benchmark each: its full name, then
// its values. Reader gives them as written: MB/s in 10^6 bytes/s, not
// benchfmt's tidied B/s (Value.Tidy has that). A value that is no
// number (NaN or ±Inf: the testing package prints NaN ns/op for a run
// it could not time) is not a measurement and is left out; so is a
// malformed line, unless the Reader is Strict. Reader.Skipped names
// each.
//
// Units ending in /run count events of one run (PerRun): the port
// counters rdmatest watches (Counter) and the timed loops' preemptions
// (Preempted). rdmatest reports a port counter only in the runs where
// it moved: a run without it counted none.
package results
