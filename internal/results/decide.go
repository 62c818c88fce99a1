package results

import (
	"fmt"
	"slices"
	"strings"
)

// Family is a benchmark's family: its full name's first element, e.g.
// "WriteLat" for "WriteLat/transport=RC/size=8-2" (a name without
// sub-benchmarks loses its -GOMAXPROCS suffix: "Other" for "Other-2").
func Family(name string) string {
	f, _, _ := strings.Cut(name, "/")
	if i := strings.LastIndexByte(f, '-'); i > 0 && !strings.Contains(name, "/") {
		f = f[:i]
	}
	return f
}

// Deciding returns the index in units of a benchmark's deciding unit:
// the one unit its verdicts (the regression gate's, the history's
// change points) are taken on, so that one run's ns/op, msgs/s, MB/s and
// p50-ns, largely one measurement, are not counted as separate tests.
// It is the first of its family's list that the benchmark reports,
// else units[0]:
//   - override[family], when override names the family;
//   - a latency family (its name ends in "Lat": WriteLat, SendLat,
//     ReadLat, AtomicLat): p50-ns, the median latency of its
//     operations, then ns/op;
//   - any other: its headline rate, MB/s where it moves bytes, msgs/s
//     (message rates), ops/s (control-plane operations), the first
//     higher-is-better unit per second (an own pattern's
//     MeasureOpts.Rate, "commits/s"), then ns/op, p50-ns.
//
// higher(i) tells whether units[i] is better higher. Why these: they
// are what a user of perftest reads first (t_typical, BW average), and
// on the stored make compare runs of 30 pairs a side
// (ci/gate/testdata/compare-count30-*) p50-ns and MB/s saw as small a
// slowdown as any unit of their benchmarks (median 8–14% per family).
// Deciding returns -1 for no units.
func Deciding(name string, units []string, higher func(i int) bool, override map[string]string) int {
	if len(units) == 0 {
		return -1
	}
	fam := Family(name)
	is := func(u string) func(int) bool { return func(i int) bool { return units[i] == u } }
	var want []func(int) bool
	switch u, ok := override[fam]; {
	case ok:
		want = []func(int) bool{is(u)}
	case strings.HasSuffix(fam, "Lat"):
		want = []func(int) bool{is("p50-ns"), is("ns/op")}
	default:
		want = []func(int) bool{is("MB/s"), is("msgs/s"), is("ops/s"),
			func(i int) bool { return higher(i) && strings.HasSuffix(units[i], "/s") },
			is("ns/op"), is("p50-ns")}
	}
	idx := make([]int, len(units))
	for i := range idx {
		idx[i] = i
	}
	for _, ok := range want {
		if i := slices.IndexFunc(idx, ok); i >= 0 {
			return i
		}
	}
	return 0
}

// ParseDecide parses a -decide flag's "Family=unit,Family=unit" (e.g.
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
