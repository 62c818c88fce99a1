package main

import (
	"bytes"
	"os"
	"testing"
)

// FuzzReadResults checks that any input parses without panicking and
// that every series it yields is well formed.
func FuzzReadResults(f *testing.F) {
	data, err := os.ReadFile("testdata/results.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data[:min(len(data), 2000)])
	f.Add([]byte("BenchmarkX/size=8-2 1 1 ns/op 3 MB/s 4 p50-ns\n"))
	f.Add([]byte("BenchmarkX/size=9223372036854775807/size=1 1 NaN MB/s +Inf msgs/s\n"))
	f.Add([]byte("BenchmarkX/size=-1 1 1 ns/op\nBenchmark/size=8 x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ReadResults(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for _, unit := range []string{"MB/s", "msgs/s", "p50-ns", "ns/op"} {
			for _, s := range res.Series(unit) {
				for i, p := range s.Points {
					if p.Size <= 0 || (i > 0 && p.Size <= s.Points[i-1].Size) {
						t.Fatalf("%s %s: sizes not positive ascending: %+v", s.Family, unit, s.Points)
					}
					if p.N < 1 || p.Min > p.Median || p.Median > p.Max {
						t.Fatalf("%s %s: bad summary %+v", s.Family, unit, p)
					}
				}
			}
		}
	})
}
