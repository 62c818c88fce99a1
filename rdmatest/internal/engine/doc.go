// Package engine builds and runs rdmabench's measured RDMA scenarios: it
// opens the device, connects the sides of a pair (locally or with a
// remote rdmapeer as side B), runs the C loops on pinned threads, records
// their samples in HDR histograms, verifies the results and reports the
// metrics.
//
// It has three doors, each a public package that says what it is for:
// rdmatest (helpers and the own-pattern API for one's own tests and
// benchmarks, with the metric definitions), rdmatest/scenario (the
// standard scenarios bench_test declares) and rdmatest/peer (side B
// served to another host by cmd/rdmapeer). Nothing outside rdmatest/...
// can import it.
//
// Its own tests cover the rules (CheckLimits and CheckSetup against bad
// input), the wire protocol's faults, verification and, on a device
// (make test's device pass), every runner and the passive side.
package engine
