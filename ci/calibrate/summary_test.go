package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// synthetic is a calibration (one pair) of one latency scenario and one
// stream whose values give, per calibration, the like-for-like ratio
// lat (L1/P1 and L2/P2 both) and perftest's A/A ratio aa (P2/P1) on the
// latency scenario, and both 1 on the stream.
func synthetic(day int, lat, aa float64) record {
	return record{Format: storeFormat, Time: fmt.Sprintf("2026-12-%02dT08:00:00Z", day), Commit: fmt.Sprintf("synthetic-%d", day),
		Kernel: "6.1.0-57-amd64", Device: "rxe0", Iters: 5000, Runs: 1,
		Scenarios: []scenarioRecord{
			{Name: "write_lat 8 B", Figures: []figureRecord{
				{Label: "p50", Unit: "µs", Values: map[string][]float64{"P1": {10}, "P2": {10 * aa}, "L1": {10 * lat}, "L2": {10 * aa * lat}}},
				// The p99 is not the headline figure: it must not count.
				{Label: "p99", Unit: "µs", Values: map[string][]float64{"P1": {10}, "P2": {10}, "L1": {100}, "L2": {100}}},
			}},
			{Name: "read_bw 4 KiB", Figures: []figureRecord{
				{Label: "bandwidth", Unit: "MB/s", Values: map[string][]float64{"P1": {30}, "P2": {30}, "B1": {30}, "B2": {30}}},
			}},
		}}
}

// TestSummaryVerdictCanFail: synthetic calibrations where rdmabench's
// ratio lies beyond every calibration's perftest A/A ratio must say
// OUTSIDE; the same ratios within perftest's A/A range say inside; fewer
// than minPooledAA calibrations give no verdict.
func TestSummaryVerdictCanFail(t *testing.T) {
	for _, tt := range []struct {
		name    string
		lat, aa []float64 // per calibration
		want    string
		like    string // median (min–max) of the ratio
		aaBand  string
	}{
		{"15% slower, perftest within 3% of itself", []float64{1.15, 1.14, 1.16}, []float64{1.0, 0.97, 1.03}, "OUTSIDE", "1.15 (1.14–1.16)", "1.00 (0.97–1.03)"},
		{"5% faster, perftest within 3% of itself", []float64{0.95, 0.94, 0.96}, []float64{1.0, 0.97, 1.03}, "OUTSIDE", "0.95 (0.94–0.96)", "1.00 (0.97–1.03)"},
		{"2% slower, perftest within 3% of itself", []float64{1.02, 1.01, 1.04}, []float64{1.0, 0.97, 1.03}, "inside", "1.02 (1.01–1.04)", "1.00 (0.97–1.03)"},
		{"the median on the A/A band's edge", []float64{1.03, 1.0, 1.2}, []float64{1.0, 0.97, 1.03}, "inside", "1.03 (1.00–1.20)", "1.00 (0.97–1.03)"},
		{"two calibrations: no verdict", []float64{1.5, 1.5}, []float64{1.0, 1.0}, "—", "1.50 (1.50–1.50)", "1.00 (1.00–1.00)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var recs []record
			for i := range tt.lat {
				recs = append(recs, synthetic(i+1, tt.lat[i], tt.aa[i]))
			}
			sums := summarizeTools(recs)
			require.Len(t, sums, 2)
			w := sums[0]
			assert.Equal(t, "write_lat", w.tool)
			assert.Equal(t, []string{"p50"}, w.figures, "only the headline figure")
			assert.Equal(t, tt.want, w.verdict())
			assert.Equal(t, tt.like, medBand(w.like))
			assert.Equal(t, tt.aaBand, medBand(w.aa))

			var b strings.Builder
			renderSummary(&b, recs)
			out := b.String()
			t.Logf("\n%s", out)
			assert.Contains(t, out, fmt.Sprintf("| write_lat | p50 | 1 | %d | %s | %s | %s |", len(recs), tt.like, tt.aaBand, tt.want))
		})
	}
}

// TestSummaryMergesPerTool: a tool's row pools every scenario of that
// tool within a calibration (transports, sizes, rdma_cm) before the
// median, skips a figure rdmabench has no value for, and leaves out the
// C-only control; tools keep the order first seen.
func TestSummaryMergesPerTool(t *testing.T) {
	rec := func(day int) record {
		return record{Format: storeFormat, Time: fmt.Sprintf("2026-12-%02dT08:00:00Z", day), Commit: "m", Device: "rxe0", Iters: 1, Runs: 2,
			Scenarios: []scenarioRecord{
				{Name: "send_lat 8 B", Figures: []figureRecord{{Label: "p50", Values: map[string][]float64{
					"P1": {10, 10}, "P2": {10, 10}, "L1": {11, 11}, "L2": {11, 11}, "C": {50, 50}, "CL": {50, 50}}}}},
				{Name: "send_lat UD 8 B", Figures: []figureRecord{{Label: "p50", Values: map[string][]float64{
					"P1": {10, 10}, "P2": {12, 12}, "L1": {13, 13}, "L2": {13, 13}}}}},
				{Name: "send_bw 4 KiB", Figures: []figureRecord{
					{Label: "receiver bandwidth (perftest only)", Values: map[string][]float64{"P1": {1, 1}, "P2": {9, 9}}}}},
				{Name: "send_bw UC 1024 B", Figures: []figureRecord{
					{Label: "bandwidth", Values: map[string][]float64{"P1": {10, 10}, "P2": {10, 10}, "B1": {9, 9}, "B2": {9, 9}}}}},
			}}
	}
	sums := summarizeTools([]record{rec(1), rec(2), rec(3)})
	require.Len(t, sums, 2)
	s := sums[0]
	assert.Equal(t, "send_lat", s.tool)
	assert.Equal(t, []string{"send_lat 8 B", "send_lat UD 8 B"}, s.scenarios)
	// Per calibration the ratios pooled over both scenarios, sorted:
	// 13/12 13/12 (UD, L2/P2) 1.1 1.1 1.1 1.1 (RC) 1.3 1.3 (UD, L1/P1),
	// median 1.1; perftest's A/A 1 1 1.2 1.2, median 1.1.
	assert.InDelta(t, 1.1, s.like.median, 1e-9)
	assert.InDelta(t, 1.1, s.aa.median, 1e-9)
	assert.Equal(t, 3, s.n)
	b := sums[1]
	assert.Equal(t, "send_bw", b.tool)
	assert.Equal(t, []string{"send_bw UC 1024 B"}, b.scenarios, "the perftest-only figure has no ratio")
	assert.Equal(t, "0.90 (0.90–0.90)", medBand(b.like))
	assert.Equal(t, "OUTSIDE", b.verdict())
}

// TestRenderSummaryStored: the summary of the stored test fixtures,
// worked out by hand (testdata/stored-fixtures: three calibrations of
// write_lat, two of read_bw).
func TestRenderSummaryStored(t *testing.T) {
	out, err := RenderSummary(fixtures)
	require.NoError(t, err)
	t.Logf("\n%s", out)
	for _, want := range []string{
		"From all 3 stored calibrations in docs/calibration/ (2026-12-01 to 2026-12-03).",
		"| perftest tool | figure | scenarios merged | calibrations | rdmabench ÷ perftest: median (min–max) | perftest ÷ perftest (A/A): median (min–max) | verdict |",
		// Per calibration the median like-for-like p50 ratio is 1.05,
		// 1.2 and 1.1056, perftest's median P2/P1 1, 1.1 and 0.9:
		// 1.1056 lies above 1.1.
		"| write_lat | p50 | 1 | 3 | 1.11 (1.05–1.20) | 1.00 (0.90–1.10) | OUTSIDE |",
		"| read_bw | bandwidth | 1 | 2 | 0.95 (0.90–1.00) | 1.00 (1.00–1.00) | — |",
	} {
		assert.Contains(t, out, want)
	}
}
