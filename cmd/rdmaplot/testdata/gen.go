//go:build ignore

// gen writes rdmaplot's fixtures (go run gen.go in testdata/): a results
// file with three families over several sizes and -count 6, and two
// HdrHistogram interval logs. Values are synthetic Soft-RoCE-like numbers.
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

const header = `goos: linux
goarch: amd64
pkg: github.com/rdmabench/rdmabench/bench_test
cpu: QEMU Virtual CPU version 2.5+
rdma-device: rxe0
rdma-provider: rxe
Unit p50-ns better=lower
Unit p99-ns better=lower
Unit p99.9-ns better=lower
Unit max-ns better=lower
Unit msgs/s better=higher
`

func main() {
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	sb.WriteString(header)
	jit := func(rel float64) float64 { return 1 + rel*rng.NormFloat64() }
	for run := 0; run < 6; run++ {
		for e := 3; e <= 20; e++ { // 8 B .. 1 MiB
			size := 1 << e
			// ~1.1 GB/s on the wire plus ~1.1 µs per message (9 µs
			// overlapped 8 deep).
			ns := (9000/8 + float64(size)/1.1) * jit(0.02)
			rate := 1e9 / ns
			fmt.Fprintf(&sb, "BenchmarkWriteBW/transport=RC/size=%d/qd=64-2 %d %.0f ns/op %.2f MB/s %.0f msgs/s %.0f p50-ns %.0f p99-ns %.0f p99.9-ns 0 B/op 0 allocs/op\n",
				size, 10000, ns, rate*float64(size)/1e6, rate, 8*ns*jit(0.02), 16*ns*jit(0.05), 40*ns*jit(0.1))
		}
		for e := 3; e <= 12; e++ { // UD: one message per MTU-sized datagram, up to 4 KiB
			size := 1 << e
			ns := (11000/8 + float64(size)/0.9) * jit(0.03)
			rate := 1e9 / ns
			fmt.Fprintf(&sb, "BenchmarkSendBW/transport=UD/size=%d/qd=64-2 %d %.0f ns/op %.2f MB/s %.0f msgs/s 0 B/op 0 allocs/op\n",
				size, 10000, ns, rate*float64(size)/1e6, rate)
		}
		for e := 3; e <= 16; e++ {
			size := 1 << e
			p50 := (30000 + float64(size)*0.9) * jit(0.01)
			fmt.Fprintf(&sb, "BenchmarkWriteLat/transport=RC/size=%d-2 %d %.0f ns/op %.0f p50-ns %.0f p99-ns %.0f p99.9-ns %.0f max-ns %.0f msgs/s 0 B/op 0 allocs/op\n",
				size, 2000, p50*1.03, p50, p50*1.5*jit(0.03), p50*2.8*jit(0.08), p50*6*jit(0.3), 1e9/(p50*1.03))
		}
	}
	sb.WriteString("BenchmarkSetup 1 123 ns/op\n") // no size: ignored by rdmaplot
	must(os.WriteFile("results.txt", []byte(sb.String()), 0o644))
	writeHlog(rng, "BenchmarkWriteLat_transport=RC_size=8.hlog", 30000, 20000)
	writeHlog(rng, "BenchmarkSendLat_transport=UD_size=64.hlog", 36000, 20000)
}

// writeHlog writes 4 one-second intervals of n lognormal-ish latencies (ns).
func writeHlog(rng *rand.Rand, name string, median float64, n int) {
	f, err := os.Create(name)
	must(err)
	defer f.Close()
	w := hdrhistogram.NewHistogramLogWriter(f)
	must(w.OutputLogFormatVersion())
	must(w.OutputStartTime(0))
	must(w.OutputLegend())
	for i := 0; i < 4; i++ {
		h := hdrhistogram.New(1, 10_000_000_000, 3)
		h.SetStartTimeMs(int64(i) * 1000)
		h.SetEndTimeMs(int64(i+1) * 1000)
		for j := 0; j < n/4; j++ {
			v := median * math.Exp(0.15*rng.NormFloat64())
			if rng.IntN(500) == 0 { // rare stalls: the tail
				v *= 5 + 20*rng.Float64()
			}
			must(h.RecordValue(int64(v)))
		}
		must(w.OutputIntervalHistogram(h))
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
