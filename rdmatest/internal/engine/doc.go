// Package engine builds and runs rdmabench's measured RDMA scenarios: it
// opens the device, connects the sides of a pair (locally or with a
// remote rdmapeer as side B), runs the C loops of a scenario's timed
// region on pinned threads, verifies the results and reports the
// metrics; it also serves the passive side of a scenario to a remote
// client, and runs the programs of a pattern of one's own
// (MeasureProgram, ServeProgram; the programs are package prog's).
//
// The jobs around the runners are packages of their own beside it, each
// with one job: flags (the -rdma.* flags and their environment), cpus
// (where the loops' threads run), counters (the port's counters around a
// run), hist (latency histograms, their metrics and .hlog files), units
// (the metric units and their Unit lines), turn (taking turns with
// another benchmark process), sizes (message-size lists), peerclient
// (the client end of a session with a remote rdmapeer) and prog (a
// side's program as data, resolved against a side's layout).
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
