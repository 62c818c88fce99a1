package main

// storeFormat is the version of the stored calibration format; -render
// refuses any other.
const storeFormat = 1

// record is one calibration: what its table is made from, and what
// -store writes (DIR/<UTC time>-<commit>.json, with the printed table
// beside it as .txt).
type record struct {
	Format int    `json:"format"`  // storeFormat
	Time   string `json:"time"`    // UTC start of the calibration, RFC 3339
	Commit string `json:"commit"`  // -commit: the commit measured
	BootID string `json:"boot_id"` // /proc/sys/kernel/random/boot_id: same boot, same id
	Kernel string `json:"kernel"`  // /proc/sys/kernel/osrelease (uname -r)
	Device string `json:"device"`
	Iters  int    `json:"iters"` // perftest -n, rdmabench -test.benchtime Nx
	Runs   int    `json:"runs"`  // pairs per scenario: every array of values has this length
	// CPUs is the benchmark's rdma-cpus line; perftest's server ran on
	// its passive CPU and its client on its requester CPU.
	CPUs      string           `json:"cpus"`
	Scenarios []scenarioRecord `json:"scenarios"`
	Table     string           `json:"table"` // the table as printed
}

// scenarioRecord is one scenario of a calibration.
type scenarioRecord struct {
	Name     string `json:"name"`     // e.g. "write_lat 8 B"
	Perftest string `json:"perftest"` // program and options
	Bench    string `json:"bench"`    // the benchmark's name
	Differs  string `json:"differs"`  // the scenario's note
	// Order is the contestants in the first pair's order; pair i starts
	// with the i-th (0-based, modulo their number).
	Order []string `json:"order"`
	// PerftestCounters and BenchCounters are the watched port counters
	// that moved during the perftest runs and the benchmark runs (totals).
	PerftestCounters string         `json:"perftest_counters"`
	BenchCounters    string         `json:"bench_counters"`
	Figures          []figureRecord `json:"figures"`
}

// figureRecord is one figure of a scenario with every contestant's raw
// value of every pair.
type figureRecord struct {
	Label          string `json:"label"`           // p50, p99, bandwidth, …
	Unit           string `json:"unit"`            // the values' unit: µs or MB/s (10^6 B/s)
	PerftestColumn string `json:"perftest_column"` // e.g. "ib_write_lat client t_typical[usec]"
	LikeMetric     string `json:"like_metric,omitempty"`
	OwnMetric      string `json:"own_metric,omitempty"`
	// Values maps a contestant (P1, P2, L1, L2, O, B1, B2, C) to its
	// value in each pair, in pair order.
	Values map[string][]float64 `json:"values"`
}

// rows summarises every scenario and figure of rec.
func (rec *record) rows() []row {
	var out []row
	for _, s := range rec.Scenarios {
		var control []row
		for _, f := range s.Figures {
			rs := summarize(s.Name, f)
			out = append(out, rs[0])
			control = append(control, rs[1:]...)
		}
		out = append(out, control...)
	}
	return out
}
