package gate

import (
	"fmt"
	"slices"
	"strings"
)

// The deciding unit of a benchmark: the first of these lists' units it
// reports. Latency benchmarks
// (the family, the name's first element, ends in "Lat": WriteLat,
// SendLat, ReadLat, AtomicLat, WriteLatGap, ...) are decided by the
// median latency of their operations; everything else by its headline
// rate: MB/s where it moves bytes, msgs/s (own patterns, message rates),
// ops/s (control-plane operations), then ns/op. Options.Decide overrides
// it per family (-decide). DecidingUnit says which unit a benchmark
// gets.
//
// Why these: they are what a user of perftest reads first (its t_typical
// and BW average), and on the stored real make compare runs of 30 pairs
// (ci/gate/testdata/compare-count30-*) p50-ns and MB/s see as small a
// slowdown as any unit of their benchmarks (median 8-14% per family;
// docs/compare.md, "The deciding unit").
var (
	latencyUnits = []string{"p50-ns", "ns/op"}
	rateUnits    = []string{"MB/s", "msgs/s", "ops/s", "ns/op", "p50-ns"}
)

// Family name of a benchmark: its name's first element, e.g. "WriteLat"
// for "WriteLat/transport=RC/size=8-2".
func familyName(name string) string {
	f, _, _ := strings.Cut(name, "/")
	if i := strings.LastIndexByte(f, '-'); i > 0 && !strings.Contains(name, "/") {
		f = f[:i] // "WriteLat-2": no sub-benchmark, the GOMAXPROCS suffix
	}
	return f
}

// decider returns the index in r.Rows of the deciding row among rows
// (one benchmark's gated relative rows): the unit Options.Decide names
// for its family, else the first of DecidingUnits' list it reports, else
// its first gated row. A row whose runs do not line up with the
// benchmark's (missing in some runs) decides only when nothing else can.
func (r *Report) decider(k Key, rows []int) int {
	fam := familyName(k.Name)
	want := rateUnits
	if strings.HasSuffix(fam, "Lat") {
		want = latencyUnits
	}
	if u, ok := r.Opt.Decide[fam]; ok {
		want = []string{u}
	}
	for _, u := range want {
		if i := slices.IndexFunc(rows, func(i int) bool { return r.Rows[i].Unit == u }); i >= 0 {
			return rows[i]
		}
	}
	return rows[0]
}

// ParseDecide parses -decide's "Family=unit,Family=unit" (e.g.
// "SendLat=p99-ns,ReadBW=msgs/s") into a map.
func ParseDecide(s string) (map[string]string, error) {
	m := map[string]string{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		fam, unit, ok := strings.Cut(item, "=")
		fam, unit = strings.TrimSpace(strings.TrimPrefix(fam, "Benchmark")), strings.TrimSpace(unit)
		if !ok || fam == "" || unit == "" || strings.Contains(fam, "/") {
			return nil, fmt.Errorf("deciding unit %q: want Family=unit, e.g. SendLat=p99-ns (the family is the benchmark name's first element)", item)
		}
		m[fam] = unit
	}
	return m, nil
}
