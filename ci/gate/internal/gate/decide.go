package gate

import (
	"fmt"
	"slices"
	"strings"
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
// (one benchmark's gated relative rows), the first of its family's
// list that the benchmark reports, else its first gated row:
//   - the unit Options.Decide (-decide) names for its family;
//   - a latency family (the name's first element ends in "Lat":
//     WriteLat, SendLat, ReadLat, AtomicLat): p50-ns,
//     the median latency of its operations, then ns/op;
//   - any other: its headline rate, MB/s where it moves bytes, msgs/s
//     (message rates), ops/s (control-plane operations), the first
//     higher-is-better unit per second (an own pattern's
//     MeasureOpts.Rate, "commits/s"), then ns/op, p50-ns.
//
// Why these: they are what a user of perftest reads first (t_typical,
// BW average), and on the stored make compare runs of 30 pairs a side
// (ci/gate/testdata/compare-count30-*) p50-ns and MB/s saw as small a
// slowdown as any unit of their benchmarks (median 8–14% per family).
func (r *Report) decider(k Key, rows []int) int {
	fam := familyName(k.Name)
	unit := func(u string) func(Row) bool { return func(r Row) bool { return r.Unit == u } }
	var want []func(Row) bool
	switch u, ok := r.Opt.Decide[fam]; {
	case ok:
		want = []func(Row) bool{unit(u)}
	case strings.HasSuffix(fam, "Lat"):
		want = []func(Row) bool{unit("p50-ns"), unit("ns/op")}
	default:
		want = []func(Row) bool{unit("MB/s"), unit("msgs/s"), unit("ops/s"),
			// an own pattern's MeasureOpts.Rate ("commits/s")
			func(r Row) bool { return r.Better > 0 && strings.HasSuffix(r.Unit, "/s") },
			unit("ns/op"), unit("p50-ns")}
	}
	for _, ok := range want {
		if i := slices.IndexFunc(rows, func(i int) bool { return ok(r.Rows[i]) }); i >= 0 {
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
