package main

import (
	"bytes"
	"os"
	"testing"
)

// readSeed reads a file of the seed corpus.
func readSeed(f *testing.F, name string) []byte {
	f.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		f.Fatal(err)
	}
	return data
}

// FuzzReadResults checks that any input parses without panicking and
// that every series it yields, by size or by offered rate, is well formed.
func FuzzReadResults(f *testing.F) {
	data := readSeed(f, "testdata/results.txt")
	f.Add(data[:min(len(data), 2000)])
	f.Add([]byte("BenchmarkX/size=8-2 1 1 ns/op 3 MB/s 4 p50-ns\n"))
	f.Add([]byte("BenchmarkX/size=9223372036854775807/size=1 1 NaN MB/s +Inf msgs/s\n"))
	f.Add([]byte("BenchmarkX/size=-1 1 1 ns/op\nBenchmark/size=8 x\n"))
	f.Add([]byte("BenchmarkL/size=64/rate=90%-2 1 1 ns/op 3 msgs/s 4 p99-ns\nBenchmarkL/size=64/rate=1e3-2 1 1 ns/op 5 msgs/s\nBenchmarkL/rate=0%/rate=9.5% 1 1 ns/op\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ReadResults(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for _, unit := range []string{"MB/s", "msgs/s", "p50-ns", "p99-ns", "ns/op"} {
			for _, fam := range res.LoadFamilies() {
				s, ok := res.LoadSeries(unit, fam)
				for i, p := range s.Points {
					if _, valid := rateValue(p.Rate); !ok || !valid || (i > 0 && compareRates(s.Points[i-1].Rate, p.Rate) >= 0) {
						t.Fatalf("%s %s: rates not valid ascending: %+v", fam, unit, s.Points)
					}
					if p.N < 1 || p.Min > p.Median || p.Median > p.Max {
						t.Fatalf("%s %s: bad summary %+v", fam, unit, p)
					}
				}
			}
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

// FuzzReadHlog checks that any interval log parses without panicking and
// that a spectrum it yields is well formed: quantiles in [0,1) ascending,
// values not decreasing.
func FuzzReadHlog(f *testing.F) {
	for _, name := range []string{"testdata/BenchmarkWriteLat_transport=RC_size=8.hlog", "testdata/BenchmarkSendLat_transport=UD_size=64.hlog"} {
		f.Add(readSeed(f, name))
	}
	f.Add([]byte("#[StartTime: 1 (seconds since epoch)]\n0.000,1.000,100.0,HISTFAAAABx4nJNpmSzMwMDAxAABzFCaEUTPmgQAJRkCCQ==\n"))
	f.Add([]byte("Tag=x,0.0,1.0,1.0,!!!\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReadHlog(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		if len(s.Quantiles) != len(s.Values) {
			t.Fatalf("%d quantiles for %d values", len(s.Quantiles), len(s.Values))
		}
		for i, q := range s.Quantiles {
			if q < 0 || q >= 1 || (i > 0 && q < s.Quantiles[i-1]) {
				t.Fatalf("quantiles not ascending in [0,1): %v", s.Quantiles)
			}
			if i > 0 && s.Values[i] < s.Values[i-1] {
				t.Fatalf("values decrease: %v", s.Values)
			}
		}
	})
}
