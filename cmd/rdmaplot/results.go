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

	"golang.org/x/perf/benchfmt"
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
	// NoSize counts results skipped because their name has no /size=.
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

// ReadResults parses Go benchmark format and groups the values of
// benchmarks with a /size=<bytes> name part by family (see SplitName).
// It fails on I/O errors and when no result has a size.
func ReadResults(r io.Reader, path string) (*Results, error) {
	res := &Results{byUnit: make(map[string]map[string]map[int64][]float64)}
	rd := benchfmt.NewReader(r, path)
	seen := make(map[string]bool)
	for rd.Scan() {
		rec, ok := rd.Result().(*benchfmt.Result)
		if !ok {
			continue // syntax errors and unit metadata
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
		for _, v := range rec.Values {
			unit, val := v.Unit, v.Value
			if v.OrigUnit != "" {
				unit, val = v.OrigUnit, v.OrigValue
			}
			if math.IsNaN(val) || math.IsInf(val, 0) {
				continue
			}
			fams := res.byUnit[unit]
			if fams == nil {
				fams = make(map[string]map[int64][]float64)
				res.byUnit[unit] = fams
			}
			sizes := fams[family]
			if sizes == nil {
				sizes = make(map[int64][]float64)
				fams[family] = sizes
			}
			sizes[size] = append(sizes[size], val)
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("read results %s: %w", path, err)
	}
	if len(res.families) == 0 {
		return nil, fmt.Errorf("read results %s: no benchmark result with a /size=<bytes> name part (%d without)", path, res.NoSize)
	}
	return res, nil
}

// SplitName splits a full benchmark name such as
// "WriteBW/transport=RC/size=4096/qd=64-2" into its family, the name
// without the size part ("WriteBW/transport=RC/qd=64-2"; the -GOMAXPROCS
// suffix stays so that different GOMAXPROCS are not merged), and the
// size in bytes. ok is false when there is no valid size=<positive
// integer> part.
func SplitName(name benchfmt.Name) (family string, size int64, ok bool) {
	base, parts := name.Parts()
	var sb strings.Builder
	sb.Write(base)
	for _, p := range parts {
		if v, found := strings.CutPrefix(string(p), "/size="); found && !ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil && n > 0 {
				size, ok = n, true
				continue
			}
		}
		sb.Write(p)
	}
	if !ok {
		return "", 0, false
	}
	return sb.String(), size, true
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
