package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/perf/benchmath"

	"github.com/rdmabench/rdmabench/internal/results"
	"github.com/rdmabench/rdmabench/rdmatest/benchname"
)

// Summary is a results file read for the summary.
type Summary struct {
	// Path names the file in the heading.
	Path string
	// Setup lists the file configuration that says where the numbers come
	// from (rdma-device, rdma-provider, ...), as "key: value", each
	// key once with its distinct values.
	Setup []string
	// Families are the families in order of first appearance.
	Families []*Family
}

// Family is the benchmarks of one base name.
type Family struct {
	// Base is the base name, e.g. "WriteBW".
	Base string
	// Rows are its benchmarks in order of first appearance.
	Rows []*Row
}

// Row is one benchmark: every result line of one full name.
type Row struct {
	// Parts are the name's sub-benchmark parts in order ("transport=RC",
	// "size=64"; the -GOMAXPROCS suffix as "GOMAXPROCS=2").
	Parts []benchname.Part
	// Runs counts its result lines.
	Runs int
	// Values maps a unit as written in the file ("MB/s", "p50-ns") to its
	// values, one per line that has the unit.
	Values map[string][]float64
}

// setupKeys are the configuration lines shown in the heading.
var setupKeys = []string{"rdma-device", "rdma-provider", "rdma-fw", "rdma-host", "kernel", "cpu"}

// Read reads a results file (internal/results: values as written, those
// that are no number left out). It fails when r cannot be read or holds
// no result line; malformed lines are skipped.
func Read(r io.Reader, path string) (*Summary, error) {
	s := &Summary{Path: path}
	families := map[string]*Family{}
	rows := map[string]*Row{}
	setup := map[string][]string{}
	rd := results.NewReader(r, path)
	for rd.Scan() {
		res := rd.Result()
		for _, k := range setupKeys {
			if v := res.Config(k); v != "" && !slices.Contains(setup[k], v) {
				setup[k] = append(setup[k], v)
			}
		}
		row := rows[res.Name]
		if row == nil {
			base, parts := benchParts(res.Name)
			fam := families[base]
			if fam == nil {
				fam = &Family{Base: base}
				families[base] = fam
				s.Families = append(s.Families, fam)
			}
			row = &Row{Parts: parts, Values: map[string][]float64{}}
			rows[res.Name] = row
			fam.Rows = append(fam.Rows, row)
		}
		row.Runs++
		for _, v := range res.Values {
			row.Values[v.Unit] = append(row.Values[v.Unit], v.Value)
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no benchmark results", path)
	}
	for _, k := range setupKeys {
		if vs := setup[k]; len(vs) > 0 {
			s.Setup = append(s.Setup, k+": "+strings.Join(vs, ", "))
		}
	}
	return s, nil
}

// benchParts splits a benchmark name as benchfmt gives it (without
// "Benchmark") into its base and parts with benchname, the -GOMAXPROCS
// suffix as the part GOMAXPROCS=N. A name outside the grammar has no
// parts: it is a family of its own, named by the whole name.
func benchParts(full string) (string, []benchname.Part) {
	n, err := benchname.Parse(benchname.Prefix + full)
	if err != nil {
		return full, nil
	}
	if n.Procs != 0 {
		n.Parts = append(n.Parts, benchname.Part{Key: "GOMAXPROCS", Value: fmt.Sprint(n.Procs)})
	}
	return n.Base, n.Parts
}

// column is a unit the summary can show.
type column struct {
	unit, title string
	format      func(float64) string
	// perMessage marks rates that a ping-pong family (*Lat) counts per
	// round trip: left out there.
	perMessage bool
}

var columns = []column{
	{"MB/s", "MB/s", plain, true},
	{"msgs/s", "msgs/s", decimal, true},
	{"msgs/s/thread", "msgs/s/thread", decimal, false},
	{"ops/s", "ops/s", decimal, false},
	{"p50-ns", "p50", nanos, false},
	{"p99-ns", "p99", nanos, false},
	{"p99.9-ns", "p99.9", nanos, false},
}

// pingPong tells the families whose MB/s and msgs/s count one message
// per round trip.
func pingPong(base string) bool { return strings.HasSuffix(base, "Lat") }

// columns returns the columns worth showing for f: some row has the unit
// with a value other than 0, and it means something for the family.
func (f *Family) columns() []column {
	var out []column
	for _, c := range columns {
		if c.perMessage && pingPong(f.Base) {
			continue
		}
		if slices.ContainsFunc(f.Rows, func(r *Row) bool {
			return slices.ContainsFunc(r.Values[c.unit], func(v float64) bool { return v != 0 })
		}) {
			out = append(out, c)
		}
	}
	return out
}

// keys splits the keys of f's names into those whose value varies (or
// that some names lack), in order of first appearance, and the parts
// every name shares.
func (f *Family) keys() (vary []string, common []benchname.Part) {
	seen := map[string]map[string]bool{}
	count := map[string]int{}
	var order []string
	first := map[string]benchname.Part{}
	for _, r := range f.Rows {
		for _, p := range r.Parts {
			if seen[p.Key] == nil {
				seen[p.Key] = map[string]bool{}
				order = append(order, p.Key)
				first[p.Key] = p
			}
			seen[p.Key][p.Value] = true
			count[p.Key]++
		}
	}
	for _, k := range order {
		if len(f.Rows) > 1 && (len(seen[k]) > 1 || count[k] != len(f.Rows)) {
			vary = append(vary, k)
		} else {
			common = append(common, first[k])
		}
	}
	return vary, common
}

// preempted returns the median, minimum and maximum of f's preempted/run
// over all its runs, and how many runs carry it.
func (f *Family) preempted() (med, lo, hi float64, n int) {
	var all []float64
	for _, r := range f.Rows {
		all = append(all, r.Values[results.Preempted]...)
	}
	if len(all) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(all)
	return (all[(len(all)-1)/2] + all[len(all)/2]) / 2, all[0], all[len(all)-1], len(all)
}

// counters returns the port counters (results.Counter) that moved in f,
// sorted, and in how many rows.
func (f *Family) counters() (names []string, rows int) {
	for _, r := range f.Rows {
		moved := false
		for u, vs := range r.Values {
			name, ok := results.Counter(u)
			if !ok || !slices.ContainsFunc(vs, func(v float64) bool { return v != 0 }) {
				continue
			}
			moved = true
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		if moved {
			rows++
		}
	}
	slices.Sort(names)
	return names, rows
}

// confidence is the level of the intervals shown.
const confidence = 0.95

// cell is the median of vals formatted, and its confidence interval as
// "±x%" ("" when there is none: too few values for the level, or an
// interval that a percentage cannot express).
func cell(vals []float64, format func(float64) string) (median, interval string) {
	if len(vals) == 0 {
		return "—", ""
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(slices.Clone(vals), &benchmath.DefaultThresholds), confidence)
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return format(s.Center), ""
	}
	pct := s.PctRangeString()
	if !strings.HasSuffix(pct, "%") {
		return format(s.Center), ""
	}
	return format(s.Center), "±" + pct
}

// Write prints the summary: a heading, then one table per family.
func (s *Summary) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Summary of %s\n", s.Path)
	if len(s.Setup) > 0 {
		fmt.Fprintf(bw, "%s\n", strings.Join(s.Setup, "; "))
	}
	fmt.Fprintf(bw, "medians of n runs; ±x%% = %.0f%% confidence interval of the median, none with fewer than 6 runs;\n", 100*confidence)
	fmt.Fprintf(bw, "MB/s = 10^6 bytes/s, k = 10^3, M = 10^6; p50/p99/p99.9 = latency percentiles (*BW: under load)\n")
	for _, f := range s.Families {
		fmt.Fprintln(bw)
		f.write(bw)
	}
	return bw.Flush()
}

// write prints one family's table.
func (f *Family) write(w io.Writer) {
	vary, common := f.keys()
	cols := f.columns()
	head := f.Base
	for _, p := range common {
		head += " " + p.String()
	}
	fmt.Fprintln(w, head)

	var t table
	hdr := append(slices.Clone(vary), "n")
	for _, c := range cols {
		hdr = append(hdr, c.title, "")
	}
	t.add(hdr...)
	for _, r := range f.Rows {
		var line []string
		for _, k := range vary {
			v := ""
			for _, p := range r.Parts {
				if p.Key == k {
					v = p.Value
				}
			}
			line = append(line, v)
		}
		line = append(line, fmt.Sprint(r.Runs))
		for _, c := range cols {
			m, ci := cell(r.Values[c.unit], c.format)
			line = append(line, m, ci)
		}
		t.add(line...)
	}
	// Key columns read left-aligned; n and the medians right-aligned,
	// each interval left-aligned one space after its median.
	t.write(w, "  ", func(i int) (right, tight bool) {
		off := i - len(vary)
		return off == 0 || off%2 == 1, off >= 2 && off%2 == 0
	})
	if names, rows := f.counters(); len(names) > 0 {
		fmt.Fprintf(w, "  port counters moved in %d of %d rows: %s (see the results file)\n", rows, len(f.Rows), strings.Join(names, ", "))
	}
	if med, lo, hi, n := f.preempted(); n > 0 {
		fmt.Fprintf(w, "  timed loops preempted (preempted/run): median %.0f per run, %.0f–%.0f over %d runs\n", med, lo, hi, n)
	}
	if len(cols) == 0 {
		fmt.Fprintln(w, "  (no rate or latency units)")
	}
}

// table collects rows of cells and prints them in aligned columns.
type table struct{ rows [][]string }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the rows indented, padded to each column's widest cell:
// on the left where align(column) says right, else on the right; columns
// are two spaces apart, one before a tight column. Trailing blanks are
// cut.
func (t *table) write(w io.Writer, indent string, align func(int) (right, tight bool)) {
	var width []int
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			right, tight := align(i)
			switch {
			case i == 0:
			case tight:
				b.WriteString(" ")
			default:
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if right {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// plain formats a value with three significant digits, no prefix
// (MB/s: the unit already carries it).
func plain(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a == 0:
		return "0"
	}
	return fmt.Sprintf("%.3g", v)
}

// decimal formats a rate with a decimal prefix: 876528 → "877k".
func decimal(v float64) string {
	for _, p := range []struct {
		scale  float64
		prefix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= p.scale {
			return plain(v/p.scale) + p.prefix
		}
	}
	return plain(v)
}

// nanos formats a duration given in ns in ns, µs, ms or s.
func nanos(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return plain(v/1e9) + " s"
	case a >= 1e6:
		return plain(v/1e6) + " ms"
	case a >= 1e3:
		return plain(v/1e3) + " µs"
	}
	return plain(v) + " ns"
}
