package gate

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/rdmabench/rdmabench/internal/results"
)

// Key identifies one benchmark: its full name and the file configuration
// lines (goos, pkg, rdma-device, ...) that are not ignored.
type Key struct {
	// Name is the full benchmark name without the "Benchmark" prefix,
	// including sub-benchmark parts and the -GOMAXPROCS suffix,
	// e.g. "WriteLat/transport=RC/size=8-2".
	Name string
	// Config is the non-ignored file configuration as sorted
	// key=value pairs, one per line (values may contain spaces).
	Config string
}

// Bench holds all samples of one benchmark read from one results file.
type Bench struct {
	Key Key
	// Units lists the units as written in the file (e.g. "ns/op",
	// "p99-ns", "MB/s"), in order of first appearance.
	Units []string
	// Samples maps a unit as written to its values as written, one per
	// result line (i.e. per -count repetition).
	Samples map[string][]float64
	// Tidy maps a unit as written to benchfmt's tidied unit ("ns/op" →
	// "sec/op", "MB/s" → "B/s"), the form unit metadata is keyed by
	// (results.Value.Tidy).
	Tidy map[string]string
	// Runs counts the result lines of the benchmark.
	Runs int
	// Procs and Boots name, per run, the process and the boot that made
	// it: the configuration lines rdma-process (ci/interleave.sh) and
	// rdma-boot (the engine: the kernel's boot_id), "" where absent.
	// They are replication labels, never part of Key.
	Procs, Boots []string
}

// Replication labels: configuration lines that say which process and
// which boot made a run. They never take part in pairing.
const (
	ProcessKey = "rdma-process"
	BootKey    = "rdma-boot"
)

// ClockMHzKey is the loops' counter frequency as each process
// calibrated it (verbs.Clock.Config): a few ppm apart from one process
// to the next, so never part of pairing either (rdma-clock, the clock's
// name, is).
const ClockMHzKey = "rdma-clock-mhz"

// samples returns the values of unit, and ok false for a unit absent
// from this benchmark's runs. A /run unit (results.PerRun) that some run
// reported has one value per run: the runs that did not report it
// counted 0 (see add); one that never moved here is all zeros, so that
// a counter that moved only in OLD (or only in NEW) is compared with
// zeros rather than reported as a missing unit.
func (b *Bench) samples(unit string) (vals []float64, ok bool) {
	if v, ok := b.Samples[unit]; ok {
		return v, true
	}
	if results.PerRun(unit) {
		return make([]float64, b.Runs), true
	}
	return nil, false
}

// Set is the parsed content of one results file.
type Set struct {
	// Path is the file name used in messages.
	Path string
	// Benches maps each benchmark to its samples.
	Benches map[Key]*Bench
	// Order lists the keys in order of first appearance.
	Order []Key
	// Units holds the unit metadata from "Unit ... better=..." lines.
	Units benchfmt.UnitMetadataMap
	// SyntaxErrors lists the malformed lines and the values that are no
	// number, left out (results.Reader.Skipped; reported, not fatal).
	SyntaxErrors []string
	// Results counts result lines read.
	Results int
}

// ReadFile parses the benchmark results file at path; see ReadSet.
func ReadFile(path string, ignore map[string]bool) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open results: %w", err)
	}
	defer f.Close()
	return ReadSet(f, path, ignore)
}

// ReadSet reads a results file from r (internal/results: values as
// written, those that are no number left out). File configuration keys
// in ignore do not take part in pairing. It fails when the input cannot
// be read or contains no benchmark result at all.
func ReadSet(r io.Reader, path string, ignore map[string]bool) (*Set, error) {
	s := &Set{Path: path, Benches: make(map[Key]*Bench)}
	rd := results.NewReader(r, path)
	for rd.Scan() {
		s.Results++
		s.add(rd.Result(), ignore)
	}
	s.SyntaxErrors = rd.Skipped()
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("read results %s: %w", path, err)
	}
	s.Units = rd.Units()
	if s.Results == 0 {
		return nil, fmt.Errorf("read results %s: no benchmark results (%d malformed lines)", path, len(s.SyntaxErrors))
	}
	return s, nil
}

// add files one result under its benchmark: a /run unit (results.PerRun)
// that a run did not report counted 0 in it.
func (s *Set) add(res *results.Result, ignore map[string]bool) {
	var cfg []string
	var proc, boot string
	for k, v := range res.Configs() {
		switch {
		case k == ProcessKey:
			proc = v
		case k == BootKey:
			boot = v
		case k == ClockMHzKey:
		case !ignore[k]:
			cfg = append(cfg, k+"="+v)
		}
	}
	slices.Sort(cfg)
	key := Key{Name: res.Name, Config: strings.Join(cfg, "\n")}
	b := s.Benches[key]
	if b == nil {
		b = &Bench{Key: key, Samples: make(map[string][]float64), Tidy: make(map[string]string)}
		s.Benches[key] = b
		s.Order = append(s.Order, key)
	}
	b.Runs++
	b.Procs = append(b.Procs, proc)
	b.Boots = append(b.Boots, boot)
	for _, v := range res.Values {
		if _, ok := b.Samples[v.Unit]; !ok {
			b.Units = append(b.Units, v.Unit)
			b.Tidy[v.Unit] = v.Tidy
			if results.PerRun(v.Unit) {
				b.Samples[v.Unit] = make([]float64, b.Runs-1) // earlier runs: did not move
			}
		}
		b.Samples[v.Unit] = append(b.Samples[v.Unit], v.Value)
	}
	for _, u := range b.Units {
		if results.PerRun(u) && len(b.Samples[u]) < b.Runs {
			b.Samples[u] = append(b.Samples[u], 0) // this run: did not move
		}
	}
}

// configDiff describes how the configuration strings a and b differ,
// e.g. "rdma-fw: 1.0 → 2.0".
func configDiff(a, b string) string {
	am, bm := splitConfig(a), splitConfig(b)
	var diffs []string
	for k, av := range am {
		if bv, ok := bm[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %q → (absent)", k, av))
		} else if av != bv {
			diffs = append(diffs, fmt.Sprintf("%s: %q → %q", k, av, bv))
		}
	}
	for k, bv := range bm {
		if _, ok := am[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: (absent) → %q", k, bv))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, ", ")
}

func splitConfig(c string) map[string]string {
	m := make(map[string]string)
	for kv := range strings.SplitSeq(c, "\n") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
