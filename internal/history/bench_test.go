package history_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/internal/history"
)

// BenchmarkLoad100k: issue #45's scale bar, 100,000 stored results
// queried into series in under 5 s. The store holds 1,000 uploads (runs)
// of 20 benchmarks × 5 results each, with the labels make bench's files
// carry; one op is Load of all of it into 20 series of 1,000 points.
// Measured figures: docs/history.md.
func BenchmarkLoad100k(b *testing.B) {
	const runs, benches, count = 1000, 20, 5
	ctx := context.Background()
	l, err := history.OpenLocal(filepath.Join(b.TempDir(), "history.db"))
	require.NoError(b, err)
	defer l.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	for r := range runs {
		var f strings.Builder
		fmt.Fprintf(&f, "goos: linux\ngoarch: amd64\npkg: github.com/rdmabench/rdmabench/bench_test\ncpu: QEMU Virtual CPU version 2.5+\n")
		fmt.Fprintf(&f, "rdma-device: rxe0\nrdma-provider: rxe\nrdma-fw: 0.0.%d\nkernel: 6.1.0-57-amd64\nUnit p50-ns better=lower\nUnit p99-ns better=lower\nUnit msgs/s better=higher\n", r/100)
		for k := range benches {
			for c := range count {
				fmt.Fprintf(&f, "BenchmarkWriteLat/transport=RC/size=%d-2 2000 %d ns/op %d p50-ns %d p99-ns 30000 msgs/s 0 B/op 0 allocs/op\n",
					8<<k, 30000+r+c, 29000+r+c, 44000+r)
			}
		}
		_, err := history.Put(ctx, l, fmt.Sprintf("bench-%d.txt", r), []byte(f.String()), history.Labels{Commit: fmt.Sprintf("c%d", r), Host: "h", RunTime: t0.Add(time.Duration(r) * time.Hour)})
		require.NoError(b, err)
	}
	b.Logf("stored %d results in %v", runs*benches*count, time.Since(start).Round(time.Millisecond))
	var series []history.Series
	for b.Loop() {
		series, err = history.Load(ctx, l, "", history.Options{})
		require.NoError(b, err)
	}
	require.Len(b, series, benches)
	for _, s := range series {
		require.Len(b, s.Points, runs)
		require.Equal(b, count, s.Points[0].N)
	}
}
