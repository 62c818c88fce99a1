package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/internal/results"
	"github.com/rdmabench/rdmabench/rdmatest/benchname"
)

// Point is one message size of one family: the median over the repeated
// runs of that benchmark, with the smallest and largest run.
type Point struct {
	Size             int64 // bytes, from the /size= name part
	Median, Min, Max float64
	N                int // runs
}

// Series is one benchmark family's values of one unit, by size.
type Series struct {
	Family string
	Points []Point // ascending Size
}

// Results holds benchmark values grouped by unit, family and size.
type Results struct {
	// byUnit maps unit as written → family → size → values (one per run).
	byUnit   map[string]map[string]map[int64][]float64
	families []string // in order of first appearance
	// loads maps unit → load family → rate= value → values, for
	// benchmarks with a /rate= part (kept out of byUnit: one size, many
	// offered loads).
	loads        map[string]map[string]map[string][]float64
	loadFamilies []string // in order of first appearance
	// NoSize counts results skipped because their name has neither a
	// /size= nor a /rate= part.
	NoSize int
}

// ReadResultsFile parses a Go benchmark results file; see ReadResults.
func ReadResultsFile(path string) (*Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open results: %w", err)
	}
	defer f.Close()
	return ReadResults(f, path)
}

// ReadResults reads a results file (internal/results: values as
// written, those that are no number left out) and groups the values of
// benchmarks with a /rate= name part by load family and rate (see
// SplitRate), and those of the other benchmarks with a /size=<bytes>
// part by family and size (see SplitName). It fails on I/O errors and
// when no result has a rate or a size.
func ReadResults(r io.Reader, path string) (*Results, error) {
	res := &Results{
		byUnit: make(map[string]map[string]map[int64][]float64),
		loads:  make(map[string]map[string]map[string][]float64),
	}
	rd := results.NewReader(r, path)
	seen, seenLoad := make(map[string]bool), make(map[string]bool)
	for rd.Scan() {
		rec := rd.Result()
		if family, rate, ok := SplitRate(rec.Name); ok {
			if !seenLoad[family] {
				seenLoad[family] = true
				res.loadFamilies = append(res.loadFamilies, family)
			}
			addValues(res.loads, family, rate, rec.Values)
			continue
		}
		family, size, ok := SplitName(rec.Name)
		if !ok {
			res.NoSize++
			continue
		}
		if !seen[family] {
			seen[family] = true
			res.families = append(res.families, family)
		}
		addValues(res.byUnit, family, size, rec.Values)
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("read results %s: %w", path, err)
	}
	if len(res.families) == 0 && len(res.loadFamilies) == 0 {
		return nil, fmt.Errorf("read results %s: no benchmark result with a /size=<bytes> or /rate= name part (%d without)", path, res.NoSize)
	}
	return res, nil
}

// addValues files the values of one result under unit → family → key
// (a size or a rate).
func addValues[K comparable](index map[string]map[string]map[K][]float64, family string, key K, values []results.Value) {
	for _, v := range values {
		fams := index[v.Unit]
		if fams == nil {
			fams = make(map[string]map[K][]float64)
			index[v.Unit] = fams
		}
		keys := fams[family]
		if keys == nil {
			keys = make(map[K][]float64)
			fams[family] = keys
		}
		keys[key] = append(keys[key], v.Value)
	}
}

// SplitName splits a full benchmark name such as
// "WriteBW/transport=RC/size=4096/qd=64-2" into its family, the name
// without the size part ("WriteBW/transport=RC/qd=64-2"; the -GOMAXPROCS
// suffix stays so that different GOMAXPROCS are not merged), and the
// size in bytes. ok is false when there is no valid size=<positive
// integer> part.
func SplitName(name string) (family string, size int64, ok bool) {
	family, v, ok := cutPart(name, "size", func(v string) bool {
		n, err := strconv.ParseInt(v, 10, 64)
		return err == nil && n > 0
	})
	if !ok {
		return "", 0, false
	}
	size, _ = strconv.ParseInt(v, 10, 64) // checked by cutPart
	return family, size, true
}

// SplitRate splits a benchmark name with an offered load, such as
// "SendLoad/transport=RC/size=64/qd=128/rate=25%-2", into its load
// family, the name without the rate part
// ("SendLoad/transport=RC/size=64/qd=128-2"), and the rate as written
// ("25%": a share of the peak rate measured just before; a number
// without % is in msgs/s). ok is false when there is no rate=<positive
// number>[%] part.
func SplitRate(name string) (family, rate string, ok bool) {
	return cutPart(name, "rate", func(v string) bool {
		_, ok := rateValue(v)
		return ok
	})
}

// rateValue is the number of a rate= value ("25%" → 25, "5000" → 5000)
// and whether it is a positive finite number.
func rateValue(v string) (float64, bool) {
	n, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	return n, err == nil && n > 0 && !math.IsInf(n, 0)
}

// cutPart removes the first /key=value part of name whose value valid
// accepts and returns the rest of the name and that value. A name
// outside benchname's grammar has no parts: ok is false.
func cutPart(name, key string, valid func(string) bool) (rest, val string, ok bool) {
	n, err := benchname.Parse(name)
	if err != nil {
		return "", "", false
	}
	for i, p := range n.Parts {
		if p.Key == key && valid(p.Value) {
			n.Parts = slices.Delete(n.Parts, i, i+1)
			return n.String(), p.Value, true
		}
	}
	return "", "", false
}

// Families lists all families in order of first appearance.
func (r *Results) Families() []string { return r.families }

// Series returns, for every family that reported unit, its medians by
// size. Families without the unit are left out.
func (r *Results) Series(unit string) []Series {
	var out []Series
	for _, fam := range r.families {
		sizes := r.byUnit[unit][fam]
		if len(sizes) == 0 {
			continue
		}
		s := Series{Family: fam}
		for size, vals := range sizes {
			s.Points = append(s.Points, summarize(size, vals))
		}
		slices.SortFunc(s.Points, func(a, b Point) int { return cmp.Compare(a.Size, b.Size) })
		out = append(out, s)
	}
	return out
}

// LoadPoint is one offered load of a load family: the median over the
// repeated runs of one unit, with the smallest and largest run.
type LoadPoint struct {
	Rate             string // the rate= value as written ("25%")
	Median, Min, Max float64
	N                int // runs
}

// LoadSeries is one load family's values of one unit, by offered rate.
type LoadSeries struct {
	Family string
	Points []LoadPoint // ascending rate (all % values before all msgs/s values)
}

// LoadFamilies lists the load families (names with a /rate= part, less
// that part) in order of first appearance.
func (r *Results) LoadFamilies() []string { return r.loadFamilies }

// LoadSeries returns the medians of unit by offered rate for family,
// and false when the family did not report unit.
func (r *Results) LoadSeries(unit, family string) (LoadSeries, bool) {
	rates := r.loads[unit][family]
	if len(rates) == 0 {
		return LoadSeries{}, false
	}
	s := LoadSeries{Family: family}
	for rate, vals := range rates {
		p := summarize(0, vals)
		s.Points = append(s.Points, LoadPoint{Rate: rate, Median: p.Median, Min: p.Min, Max: p.Max, N: p.N})
	}
	slices.SortFunc(s.Points, func(a, b LoadPoint) int { return compareRates(a.Rate, b.Rate) })
	return s, true
}

// compareRates orders rate= values: shares of the peak (%) before
// absolute rates, each by number, then as written ("25%" and "25.0%").
func compareRates(a, b string) int {
	pa, pb := strings.HasSuffix(a, "%"), strings.HasSuffix(b, "%")
	va, _ := rateValue(a)
	vb, _ := rateValue(b)
	switch {
	case pa != pb && pa:
		return -1
	case pa != pb:
		return 1
	}
	return cmp.Or(cmp.Compare(va, vb), strings.Compare(a, b))
}

// summarize computes the median (mean of the middle two for an even
// count), minimum and maximum of vals.
func summarize(size int64, vals []float64) Point {
	v := slices.Clone(vals)
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = v[n/2-1]/2 + v[n/2]/2 // no overflow near MaxFloat64
	}
	return Point{Size: size, Median: med, Min: v[0], Max: v[n-1], N: n}
}
