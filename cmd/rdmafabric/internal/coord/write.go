package coord

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/perf/benchfmt"

	"github.com/rdmabench/rdmabench/cmd/internal/facts"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
)

// builtinDir is the direction benchfmt itself gives a unit without a
// Unit line (its built-in defaults: ns/op, MB/s, …), 0 for none: such
// units need no Unit line.
func builtinDir(unit string) int { return benchfmt.UnitMetadataMap(nil).GetBetter(unit) }

// maxMessage is the longest failure message written to the stream, in
// bytes.
const maxMessage = 1000

// writePair writes a pair's rows, and the Unit lines they need first,
// and records its failures.
func (r *runner) writePair(out pairOutcome) {
	src, dst := r.o.Nodes[out.pair.Src], r.o.Nodes[out.pair.Dst]
	for i, so := range out.scen {
		if so.skip {
			continue
		}
		var declare map[string]int
		err := so.err
		if err == nil {
			declare, err = r.directions(so.results)
		}
		if err != nil {
			r.sum.Failures = append(r.sum.Failures, Failure{Src: src, Dst: dst, Scenario: so.sc.Name, Err: err})
			r.failed[linkScenario{out.pair, i}] = true
			continue
		}
		r.declare(declare)
		name := "BenchmarkFabric/src=" + src + "/dst=" + dst + "/" + so.sc.Name + "-1"
		for _, res := range so.results {
			r.line(row(name, res))
			r.addCounters(out.pair.Src, res.Counters)
		}
		r.sum.Rows += len(so.results)
		r.rows[linkScenario{out.pair, i}] += len(so.results)
	}
}

// declare writes the Unit lines of units first used now.
func (r *runner) declare(declare map[string]int) {
	for _, u := range slices.Sorted(maps.Keys(declare)) {
		better := "higher"
		if declare[u] < 0 {
			better = "lower"
		}
		r.line("Unit " + u + " better=" + better)
		r.dirs[u] = declare[u]
	}
}

// count sets the Summary's Measured and Links: the link scenarios with
// a row from every pass and no failure, and their links.
func (r *runner) count() {
	linked := make(map[schedule.Pair]bool)
	for ls, n := range r.rows {
		if n == r.o.Runs && !r.failed[ls] {
			r.sum.Measured++
			linked[ls.pair] = true
		}
	}
	r.sum.Links = len(linked)
}

// directions checks the unit directions of a scenario's results against
// those of the stream so far, and returns the custom units they declare
// for the first time. It fails on a unit given two directions and on a
// value in a custom unit with none.
func (r *runner) directions(res []Result) (map[string]int, error) {
	declare := make(map[string]int)
	for _, x := range res {
		for u, d := range x.Units {
			dir := +1
			if d == "lower" {
				dir = -1
			}
			have := builtinDir(u)
			ok := have != 0
			if !ok {
				have, ok = r.dirs[u]
			}
			if !ok {
				have, ok = declare[u]
			}
			if ok && have != dir {
				return nil, fmt.Errorf("unit %s: better=%s contradicts the direction it already has", u, d)
			}
			if !ok {
				declare[u] = dir
			}
		}
	}
	for _, x := range res {
		for u := range x.Values {
			if builtinDir(u) == 0 && r.dirs[u] == 0 && declare[u] == 0 {
				return nil, fmt.Errorf("unit %s has no direction: Result.Units must say higher or lower", u)
			}
		}
	}
	return declare, nil
}

// row formats one benchmark row: ns/op, MB/s, then the other units
// sorted.
func row(name string, res Result) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('\t')
	b.WriteString(strconv.FormatInt(res.Iters, 10))
	for _, u := range unitOrder(res.Values) {
		b.WriteByte('\t')
		b.WriteString(formatValue(res.Values[u]))
		b.WriteByte(' ')
		b.WriteString(u)
	}
	return b.String()
}

// unitOrder is the order of a row's units: ns/op, MB/s, the rest
// sorted.
func unitOrder(values map[string]float64) []string {
	units := make([]string, 0, len(values))
	for _, first := range []string{"ns/op", "MB/s"} {
		if _, ok := values[first]; ok {
			units = append(units, first)
		}
	}
	head := len(units)
	for u := range values {
		if u != "ns/op" && u != "MB/s" {
			units = append(units, u)
		}
	}
	slices.Sort(units[head:])
	return units
}

// formatValue formats v exactly: plain decimals in the usual range,
// exponent form outside it.
func formatValue(v float64) string {
	if a := math.Abs(v); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// addCounters adds one run's counter deltas to node's totals, saturating
// rather than wrapping.
func (r *runner) addCounters(node int, delta map[string]uint64) {
	if len(delta) == 0 {
		return
	}
	if r.counts[node] == nil {
		r.counts[node] = make(map[string]uint64)
	}
	for c, d := range delta {
		t := r.counts[node][c]
		if t > math.MaxUint64-d {
			t = math.MaxUint64
		} else {
			t += d
		}
		r.counts[node][c] = t
	}
}

// writeTrailer writes the counter totals and the failure lines.
func (r *runner) writeTrailer() {
	for i, c := range r.counts {
		for _, l := range facts.CounterLines(r.o.Nodes[i], facts.Counters(c)) {
			r.line(l)
		}
	}
	for _, f := range r.sum.NodeFailures {
		r.line("fabric.error.node=" + keyPart(f.Node) + ": " + oneLine(f.Err))
	}
	for _, f := range r.sum.Failures {
		r.line("fabric.error.src=" + keyPart(f.Src) + "/dst=" + keyPart(f.Dst) + "/" + keyPart(f.Scenario) + ": " + oneLine(f.Err))
	}
}

// isBadKeyRune tells whether c cannot be in a benchfmt configuration
// key (or ends it, for ':').
func isBadKeyRune(c rune) bool {
	return c == ':' || unicode.IsSpace(c) || unicode.IsControl(c) || unicode.IsUpper(c) || c == utf8.RuneError
}

// keyPart is s as part of a configuration key: lower case, with '_' for
// a character no key may hold.
func keyPart(s string) string {
	return strings.Map(func(c rune) rune {
		if isBadKeyRune(c) {
			return '_'
		}
		return c
	}, strings.ToLower(s))
}

// oneLine is err's message on one line of at most maxMessage bytes,
// never empty.
func oneLine(err error) string {
	s := "unknown error"
	if err != nil {
		if m := strings.Join(strings.Fields(err.Error()), " "); m != "" {
			s = m
		}
	}
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.Map(func(c rune) rune {
		if unicode.IsControl(c) {
			return ' '
		}
		return c
	}, s)
}

// checkUnit tells why u cannot be a unit: empty, white space or a
// control character, or a number (benchfmt would read it as a value).
func checkUnit(u string) error {
	if u == "" || !utf8.ValidString(u) {
		return fmt.Errorf("unit %q: want a non-empty UTF-8 name", u)
	}
	for _, c := range u {
		if unicode.IsSpace(c) || unicode.IsControl(c) {
			return fmt.Errorf("unit %q holds %q: a unit holds no space", u, c)
		}
	}
	if _, err := strconv.ParseFloat(u, 64); err == nil {
		return fmt.Errorf("unit %q is a number", u)
	}
	return nil
}
