package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Spectrum is the latency-by-percentile curve of one .hlog file.
type Spectrum struct {
	Name string // file name without directory and .hlog
	// Count is the number of recorded values over all intervals.
	Count int64
	// Quantiles are fractions in [0,1) and Values the latency in ns at
	// each; the last point is the maximum, placed at q = 1 − 1/Count.
	Quantiles, Values []float64
}

// ReadHlogFile reads an HdrHistogram interval log; see ReadHlog.
func ReadHlogFile(path string) (*Spectrum, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open hlog: %w", err)
	}
	defer f.Close()
	return ReadHlog(f, strings.TrimSuffix(filepath.Base(path), ".hlog"))
}

// pointsPerDecade is the resolution of the spectrum in 1/(1−q).
const pointsPerDecade = 20

// ReadHlog merges all interval histograms of an HdrHistogram log (as
// written by hdrhistogram-go's HistogramLogWriter, values in ns) and
// computes its percentile spectrum: points at 1/(1−q) = 10^(i/20) up to
// the resolution of the data (1−q ≥ 1/Count), then the maximum.
func ReadHlog(r io.Reader, name string) (*Spectrum, error) {
	lr := hdrhistogram.NewHistogramLogReader(r)
	var acc *hdrhistogram.Histogram
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			return nil, fmt.Errorf("read hlog %s: %w", name, err)
		}
		if h == nil {
			break
		}
		if acc == nil {
			acc = h
			continue
		}
		if dropped := acc.Merge(h); dropped > 0 {
			return nil, fmt.Errorf("read hlog %s: %d values outside the first interval's range", name, dropped)
		}
	}
	if acc == nil || acc.TotalCount() == 0 {
		return nil, fmt.Errorf("read hlog %s: no recorded values", name)
	}
	s := &Spectrum{Name: name, Count: acc.TotalCount()}
	for i := 0; ; i++ {
		q := 1 - math.Pow(10, -float64(i)/pointsPerDecade)
		if 1-q < 1/float64(s.Count) {
			break
		}
		s.Quantiles = append(s.Quantiles, q)
		s.Values = append(s.Values, float64(acc.ValueAtQuantile(q*100)))
	}
	s.Quantiles = append(s.Quantiles, 1-1/float64(s.Count))
	s.Values = append(s.Values, float64(acc.Max()))
	return s, nil
}
