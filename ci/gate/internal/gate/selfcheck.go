package gate

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// SelfCheck is the gate's verdict on its own self-check: NEW made worse,
// on purpose, in the benchmarks a regexp picks (ci/compare.sh SLOW=...).
// It holds when every pick is named (REGRESSION) or UNDECIDED, none
// passes silently, and no other benchmark is named.
type SelfCheck struct {
	// Named, Undecided and Silent are the picks the gate named, called
	// UNDECIDED, and passed (their keys' names).
	Named, Undecided, Silent []string
	// Others are the benchmarks named that were not picked.
	Others []string
}

// Holds reports whether the self-check passed.
func (s SelfCheck) Holds() bool {
	return len(s.Silent) == 0 && len(s.Others) == 0 && len(s.Named)+len(s.Undecided) > 0
}

// benchName is the name the testing package gives a benchmark key (and
// the engine's slowdown regexp matches): "Benchmark" and the name without
// its -GOMAXPROCS suffix.
func benchName(k Key) string {
	n := k.Name
	if i := strings.LastIndexByte(n, '-'); i > strings.LastIndexByte(n, '/') {
		n = n[:i]
	}
	return "Benchmark" + n
}

// CheckSelf sorts the report's benchmarks by whether picked matches them
// and what the gate said of each.
func (r *Report) CheckSelf(picked *regexp.Regexp) SelfCheck {
	var s SelfCheck
	named := map[Key]bool{}
	for _, row := range r.Regressions() {
		named[row.Key] = true
	}
	for _, f := range r.Families {
		pick := picked.MatchString(benchName(f.Key))
		switch {
		case pick && named[f.Key]:
			s.Named = append(s.Named, f.Key.Name)
		case pick && f.Undecided:
			s.Undecided = append(s.Undecided, f.Key.Name)
		case pick:
			s.Silent = append(s.Silent, f.Key.Name)
		case named[f.Key]:
			s.Others = append(s.Others, f.Key.Name)
		}
	}
	return s
}

// Write prints the self-check's verdict, each pick with what the gate
// said and its deciding unit's change.
func (s SelfCheck) Write(w io.Writer, r *Report) {
	delta := map[string]string{}
	for _, f := range r.Families {
		row := r.Rows[f.Row]
		delta[f.Key.Name] = fmt.Sprintf("%s %s, sees %s", f.Unit, row.deltaText(), seesText(f.Detectable))
	}
	picks := len(s.Named) + len(s.Undecided) + len(s.Silent)
	fmt.Fprintf(w, "\nself-check: %d picks made worse on purpose: %d named, %d UNDECIDED, %d passed silently; %d other benchmarks named\n",
		picks, len(s.Named), len(s.Undecided), len(s.Silent), len(s.Others))
	for _, l := range []struct {
		what  string
		names []string
	}{{"named", s.Named}, {"UNDECIDED", s.Undecided}, {"PASSED SILENTLY", s.Silent}, {"NAMED, NOT PICKED", s.Others}} {
		for _, n := range l.names {
			fmt.Fprintf(w, "  %s: %s (%s)\n", l.what, n, delta[n])
		}
	}
	verdict := "holds"
	switch {
	case picks == 0:
		verdict = "FAILS: the pattern picked no benchmark of the report"
	case !s.Holds():
		verdict = "FAILS: a pick passed silently or another benchmark was named"
	}
	fmt.Fprintf(w, "self-check: %s\n", verdict)
}
