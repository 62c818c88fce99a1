package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmabench/rdmabench/ci/gate/internal/gate"
)

// FuzzGate feeds arbitrary OLD/NEW contents through parsing, comparison
// and report formatting; it must never panic and must return a defined
// exit code. Seeds are the fixtures cut to seedLen bytes: whole files make
// the fuzzer spend minutes minimizing each new input
// (or run with -fuzzminimizetime 2s).
const seedLen = 1500

func FuzzGate(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seed fixtures: %v", err)
	}
	base, err := os.ReadFile(filepath.Join("testdata", "base.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(base[:min(len(base), seedLen)], data[:min(len(data), seedLen)])
	}
	f.Add([]byte("BenchmarkX 1 0 ns/op\n"), []byte("BenchmarkX 1 0 ns/op\n"))
	f.Add([]byte("Unit x better=higher\nBenchmarkX 1 1 x\n"), []byte("Unit x better=lower\nBenchmarkX 1 -1 x\n"))
	f.Add([]byte("BenchmarkX 1 NaN ns/op\nBenchmarkX 1 +Inf ns/op\n"), []byte("BenchmarkX 1 1e308 ns/op\n"))
	f.Add([]byte("BenchmarkX 1 1e308 ns/op\nBenchmarkX 1 -1e308 ns/op\n"), []byte("BenchmarkX 1 -1e308 ns/op\nBenchmarkX 1 5e-324 ns/op\n"))
	opt, err := gate.NewOptions(0.05, "5%", "")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, oldData, newData []byte) {
		old, err1 := gate.ReadSet(bytes.NewReader(oldData), "old", nil)
		cur, err2 := gate.ReadSet(bytes.NewReader(newData), "new", nil)
		if err1 != nil || err2 != nil {
			return
		}
		rep := gate.Compare(old, cur, opt)
		var out bytes.Buffer
		if err := rep.WriteTable(&out, "old", "new"); err != nil {
			t.Fatal(err)
		}
		rep.WriteSummary(&out)
		switch code := rep.ExitCode(false, false); code {
		case gate.ExitOK, gate.ExitRegression, gate.ExitInput, gate.ExitUndecided:
		default:
			t.Fatalf("undefined exit code %d", code)
		}
	})
}
