// Package hist records latency samples in HDR histograms and reports
// them: as percentile metrics of a benchmark and, with -rdma.hlog, as
// intervals of HdrHistogram .hlog files, one file per benchmark.
package hist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rdmabench/rdmabench/rdmatest/benchname"
	"github.com/rdmabench/rdmabench/rdmatest/internal/flags"
)

// Histogram geometry shared by every recorder: 1 ns … 100 s, 3
// significant digits (values are exact to within 0.1%). A recorder of
// samples kept elsewhere (a C loop's) lays its counts out for the same
// geometry (see Recorder.AddCounts).
const (
	Lowest  = 1
	Highest = int64(100 * time.Second)
	SigFigs = 3
)

// Recorder collects latency samples (in nanoseconds) of one goroutine.
// It is not safe for concurrent use: give each goroutine its own and
// Merge them after the goroutines are done.
type Recorder struct {
	h        *hdrhistogram.Histogram
	overflow int64 // samples above Highest, counted, never dropped silently
}

// NewRecorder returns an empty recorder. Creating one allocates about
// 200 KB: do it outside the measured loop.
func NewRecorder() *Recorder {
	return &Recorder{h: hdrhistogram.New(Lowest, Highest, SigFigs)}
}

// Record adds one sample of ns nanoseconds. Values below 1 ns are
// recorded as 1 ns (the clock's resolution); values above 100 s are
// recorded as 100 s and counted as overflow, which Report turns into a
// test failure. It does not allocate.
func (r *Recorder) Record(ns int64) {
	if ns < Lowest {
		ns = Lowest
	}
	if ns > Highest {
		r.overflow++
		ns = Highest
	}
	_ = r.h.RecordValue(ns) // in range by construction
}

// Merge adds o's samples to r.
func (r *Recorder) Merge(o *Recorder) {
	r.h.Merge(o.h)
	r.overflow += o.overflow
}

// AddCounts adds samples recorded elsewhere to r: counts is a counts
// array laid out as hdrhistogram-go's for this package's geometry
// (Lowest, Highest, SigFigs), as a C loop records it; samples is how
// many samples the recorder says it holds, overflow how many of them
// exceeded Highest. A counts array that does not hold samples samples is
// an error, and nothing is added.
func (r *Recorder) AddCounts(counts []int64, samples, overflow int64) error {
	h := hdrhistogram.Import(&hdrhistogram.Snapshot{LowestTrackableValue: Lowest,
		HighestTrackableValue: Highest, SignificantFigures: SigFigs, Counts: counts})
	if h.TotalCount() != samples {
		return fmt.Errorf("rdmatest: the loop recorded %d samples but its histogram holds %d", samples, h.TotalCount())
	}
	r.h.Merge(h)
	r.overflow += overflow
	return nil
}

// Count is the number of samples.
func (r *Recorder) Count() int64 { return r.h.TotalCount() }

// Quantile returns the value at percentile p (0..100): the highest value
// equivalent (to 3 significant digits) to the sample of rank
// round(p/100·n), at least 1 (hdrhistogram-go's ValueAtPercentile).
func (r *Recorder) Quantile(p float64) int64 { return r.h.ValueAtPercentile(p) }

// Max is the largest sample: the highest value equivalent (to 3
// significant digits) to it.
func (r *Recorder) Max() int64 { return r.h.Max() }

// Percentiles are the quantiles every latency report carries, with their
// metric units.
var Percentiles = []struct {
	P    float64
	Unit string
}{
	{50, "p50-ns"}, {90, "p90-ns"}, {99, "p99-ns"}, {99.9, "p99.9-ns"}, {99.99, "p99.99-ns"},
}

// ReportLatency reports the recorder's percentiles and maximum on b
// (p50-ns … p99.99-ns, max-ns) and, when -rdma.hlog is set, writes the
// histogram to <dir>/<benchmark name>.hlog. Call it after the loop. A
// recorder without samples fails b: a latency metric with nothing behind
// it would be a lie.
func ReportLatency(b *testing.B, r *Recorder) {
	b.Helper()
	reportPercentiles(b, r)
	if o, _ := flags.Opts(); o.HlogDir != "" {
		if err := writeHlog(o.HlogDir, b.Name(), r); err != nil {
			b.Errorf("rdmatest: %v", err)
		}
	}
}

// ReportLatencyHeld is ReportLatency for a benchmark that loops over b.N
// instead of b.Loop (every family whose loop runs in C: b.Loop cannot
// hand a count to C): the testing package calls such a function
// several times per run with growing b.N and reports only the last call,
// so its .hlog interval is held back until it is known to be that call's
// (see holdHlog). r is nil when a call has nothing to report.
func ReportLatencyHeld(b *testing.B, r *Recorder) {
	b.Helper()
	if r != nil {
		reportPercentiles(b, r)
	}
	// A run of Benchmark (testing.Benchmark) has no name to file it under.
	if o, _ := flags.Opts(); o.HlogDir != "" && b.Name() != "" {
		if err := holdHlog(o.HlogDir, b.Name(), b.N, r); err != nil {
			b.Errorf("rdmatest: %v", err)
		}
	}
}

func reportPercentiles(b *testing.B, r *Recorder) {
	b.Helper()
	if r.Count() == 0 {
		b.Fatal("rdmatest: no latency samples were recorded")
	}
	if r.overflow > 0 {
		b.Fatalf("rdmatest: %d latency samples exceeded the histogram's 100 s range", r.overflow)
	}
	for _, p := range Percentiles {
		b.ReportMetric(float64(r.Quantile(p.P)), p.Unit)
	}
	b.ReportMetric(float64(r.Max()), "max-ns")
}

// CyclePercentiles are the quantiles of the cycle samples a latency run
// also reports: perftest's sample, from one post to the next (the whole
// iteration), in the same geometry and halving as the p50-ns ….
var CyclePercentiles = []struct {
	P    float64
	Unit string
}{
	{50, "cycle-p50-ns"}, {99, "cycle-p99-ns"},
}

// ReportCycles reports the cycle percentiles of r (cycle-p50-ns,
// cycle-p99-ns) on b. A run of one round trip has no cycle and reports
// none; samples beyond the histogram's range fail b. With -rdma.hlog
// DIR the cycle histogram goes to DIR/CyclesDir/<benchmark name>.hlog
// (perftest's sample, for calibrate -phases), held as ReportLatencyHeld
// holds its interval: it is called from a b.N benchmark.
func ReportCycles(b *testing.B, r *Recorder) {
	b.Helper()
	if r != nil && r.Count() == 0 {
		r = nil
	}
	if r != nil && r.overflow > 0 {
		b.Fatalf("rdmatest: %d cycle samples exceeded the histogram's 100 s range", r.overflow)
	}
	if r != nil {
		for _, p := range CyclePercentiles {
			b.ReportMetric(float64(r.Quantile(p.P)), p.Unit)
		}
	}
	if o, _ := flags.Opts(); o.HlogDir != "" && b.Name() != "" {
		if err := holdHlog(filepath.Join(o.HlogDir, CyclesDir), b.Name(), b.N, r); err != nil {
			b.Errorf("rdmatest: %v", err)
		}
	}
}

// CyclesDir is the subdirectory of -rdma.hlog that holds the cycle
// histograms (ReportCycles): apart, so that the latency .hlog files of
// the directory stay one per benchmark.
const CyclesDir = "cycles"

var (
	hlogMu sync.Mutex
	// held is, per directory, the interval of the last call of a b.N
	// benchmark, not yet written (holdHlog).
	held = map[string]heldInterval{}
)

// heldInterval is an interval holdHlog keeps back.
type heldInterval struct {
	name string
	r    *Recorder
}

// holdHlog keeps r as the pending interval of benchmark name, called with
// n = b.N on every call of a b.N benchmark. A run of such a benchmark
// starts with a call with b.N = 1, so the interval held when a call with
// n = 1 or another benchmark's arrives is the last of its run, the
// reported one, and is written then; FlushHlog writes the last one.
func holdHlog(dir, name string, n int, r *Recorder) error {
	hlogMu.Lock()
	defer hlogMu.Unlock()
	var err error
	if h := held[dir]; n == 1 || h.name != name {
		err = flushHeldLocked(dir)
	}
	if r != nil {
		held[dir] = heldInterval{name: name, r: r}
	}
	return err
}

// FlushHlog writes the intervals holdHlog still holds, if any. The
// engine's Main calls it after the tests and benchmarks.
func FlushHlog() error {
	hlogMu.Lock()
	defer hlogMu.Unlock()
	var errs []error
	for dir := range held {
		errs = append(errs, flushHeldLocked(dir))
	}
	return errors.Join(errs...)
}

// flushHeldLocked writes dir's held interval, if any, and forgets it. It
// runs when the next benchmark reports and at the end (FlushHlog, from
// the engine's Main), so an error names the benchmark whose interval was
// lost: at the first, it is not the one that reports it.
func flushHeldLocked(dir string) error {
	h, ok := held[dir]
	if !ok {
		return nil
	}
	delete(held, dir)
	if err := writeHlogLocked(dir, h.name, h.r); err != nil {
		return fmt.Errorf("the last interval of %s was not written: %w", h.name, err)
	}
	return nil
}

// CheckHlogDir makes dir and checks that a file can be written in it, so
// that an unwritable -rdma.hlog stops the run before any benchmark
// instead of failing each one after its measurement. The engine's Main
// calls it.
func CheckHlogDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("rdmatest: -rdma.hlog %q: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".rdmatest-probe-*")
	if err != nil {
		return fmt.Errorf("rdmatest: -rdma.hlog %q is not writable: %w", dir, err)
	}
	if err := errors.Join(f.Close(), os.Remove(f.Name())); err != nil {
		return fmt.Errorf("rdmatest: -rdma.hlog %q: the probe file: %w", dir, err)
	}
	return nil
}

// writeHlog appends r as one interval to dir/benchname.HlogFile(name)
// in the HdrHistogram interval-log format (readable by HdrHistogram's
// HistogramLogProcessor and by cmd/rdmaplot). Repeated runs (-count) of
// one benchmark append further intervals to the same file: one per run.
func writeHlog(dir, name string, r *Recorder) error {
	hlogMu.Lock()
	defer hlogMu.Unlock()
	return writeHlogLocked(dir, name, r)
}

func writeHlogLocked(dir, name string, r *Recorder) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("hlog: %w", err)
	}
	path := filepath.Join(dir, benchname.HlogFile(name))
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("hlog: %w", err)
	}
	defer f.Close()
	w := hdrhistogram.NewHistogramLogWriter(f)
	if statErr != nil { // a new file gets the header
		if err := w.OutputLogFormatVersion(); err != nil {
			return fmt.Errorf("hlog %s: %w", path, err)
		}
		if err := w.OutputLegend(); err != nil {
			return fmt.Errorf("hlog %s: %w", path, err)
		}
	}
	r.h.SetTag(name)
	if err := w.OutputIntervalHistogram(r.h); err != nil {
		return fmt.Errorf("hlog %s: %w", path, err)
	}
	return nil
}

// ScaleCounts returns counts (laid out as AddCounts takes them) with
// every sample's value multiplied by f > 0: each recorded value, the
// highest equivalent to its bucket, times f, in the bucket of that
// product (to 3 significant digits, as any value). Values above Highest
// stay in its bucket. The gate's self-check build uses it to slow a
// loop's percentiles by exactly its factor (verbs.Loop.SetSlowdown).
func ScaleCounts(counts []int64, f float64) []int64 {
	snap := &hdrhistogram.Snapshot{LowestTrackableValue: Lowest,
		HighestTrackableValue: Highest, SignificantFigures: SigFigs, Counts: counts}
	in, out := hdrhistogram.Import(snap), hdrhistogram.New(Lowest, Highest, SigFigs)
	for _, bar := range in.Distribution() {
		if bar.Count == 0 {
			continue
		}
		v := min(int64(float64(bar.To)*f), Highest)
		_ = out.RecordValues(max(v, Lowest), bar.Count) // in range by construction
	}
	return out.Export().Counts
}
