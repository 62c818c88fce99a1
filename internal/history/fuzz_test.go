package history

import (
	"testing"
)

// FuzzAdd: a stored result line, whatever a server returns, never panics
// the series builder, and a line it takes yields finite-or-skipped
// values under its benchmark.
func FuzzAdd(f *testing.F) {
	f.Add("BenchmarkWriteLat/transport=RC/size=8-2 1000 30000 ns/op 29000 p50-ns", "p50-ns=lower msgs/s=higher")
	f.Add("BenchmarkX 1 NaN ns/op +Inf MB/s", "")
	f.Add("Benchmark", "=")
	f.Fuzz(func(t *testing.T, line, units string) {
		benches := map[Key]*bench{}
		err := add(benches, map[string]string{"upload": "20261206.1", "rdmabench-units": units, "host": "h"}, line)
		if err != nil {
			return
		}
		for _, b := range benches {
			s := b.series(Options{})
			for _, p := range s.Points {
				if p.N < 1 || p.Best != p.Best || p.Median != p.Median {
					t.Fatalf("line %q: point %+v", line, p)
				}
			}
		}
	})
}
