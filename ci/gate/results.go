package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
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
	// "sec/op", "MB/s" → "B/s"), the form unit metadata is keyed by.
	Tidy map[string]string
	// Runs counts the result lines of the benchmark.
	Runs int
}

// IsCounter tells port counter units ("<counter>/run", e.g.
// "duplicate_request/run"): rdmatest reports a counter only in the runs
// where it moved, so a run without it means 0 (see rdmatest's
// ReportCounters). The gate fills those zeros in, so that a counter
// seen in some runs has one sample per run and a counter that moved only
// in OLD (or only in NEW) is compared with zeros rather than reported as
// a missing unit.
func IsCounter(unit string) bool { return strings.HasSuffix(unit, "/run") }

// samples returns the values of unit, zeros for a counter unit that never
// moved in this benchmark's runs, and ok false for any other absent unit.
func (b *Bench) samples(unit string) (vals []float64, ok bool) {
	if v, ok := b.Samples[unit]; ok {
		return v, true
	}
	if IsCounter(unit) {
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
	// SyntaxErrors lists malformed benchmark lines (reported, not fatal).
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

// ReadSet parses Go benchmark format from r. File configuration keys in
// ignore do not take part in pairing. It fails when the input cannot be
// read or contains no benchmark result at all.
func ReadSet(r io.Reader, path string, ignore map[string]bool) (*Set, error) {
	s := &Set{Path: path, Benches: make(map[Key]*Bench)}
	rd := benchfmt.NewReader(r, path)
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			s.SyntaxErrors = append(s.SyntaxErrors, rec.Error())
		case *benchfmt.Result:
			s.Results++
			s.add(rec, ignore)
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("read results %s: %w", path, err)
	}
	s.Units = rd.Units()
	if s.Results == 0 {
		return nil, fmt.Errorf("read results %s: no benchmark results (%d malformed lines)", path, len(s.SyntaxErrors))
	}
	return s, nil
}

func (s *Set) add(res *benchfmt.Result, ignore map[string]bool) {
	var cfg []string
	for _, c := range res.Config {
		if c.File && !ignore[c.Key] {
			cfg = append(cfg, c.Key+"="+string(c.Value))
		}
	}
	slices.Sort(cfg)
	key := Key{Name: res.Name.String(), Config: strings.Join(cfg, "\n")}
	b := s.Benches[key]
	if b == nil {
		b = &Bench{Key: key, Samples: make(map[string][]float64), Tidy: make(map[string]string)}
		s.Benches[key] = b
		s.Order = append(s.Order, key)
	}
	b.Runs++
	for _, v := range res.Values {
		unit, val := v.Unit, v.Value
		if v.OrigUnit != "" {
			unit, val = v.OrigUnit, v.OrigValue
		}
		if math.IsNaN(val) || math.IsInf(val, 0) {
			// Not a measurement; statistics on it are meaningless.
			file, line := res.Pos()
			s.SyntaxErrors = append(s.SyntaxErrors, fmt.Sprintf("%s:%d: non-finite value %v %s dropped", file, line, val, unit))
			continue
		}
		if _, ok := b.Samples[unit]; !ok {
			b.Units = append(b.Units, unit)
			b.Tidy[unit] = v.Unit
			if IsCounter(unit) {
				b.Samples[unit] = make([]float64, b.Runs-1) // earlier runs: did not move
			}
		}
		b.Samples[unit] = append(b.Samples[unit], val)
	}
	for _, u := range b.Units {
		if IsCounter(u) && len(b.Samples[u]) < b.Runs {
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
