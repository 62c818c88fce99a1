package gate

import (
	"github.com/rdmabench/rdmabench/internal/results"
)

// familyName is the benchmark's family (results.Family).
func familyName(name string) string { return results.Family(name) }

// decider returns the index in r.Rows of the deciding row among rows
// (one benchmark's gated relative rows): results.Deciding's unit, with
// -decide (Options.Decide) overriding a family's.
func (r *Report) decider(k Key, rows []int) int {
	units := make([]string, len(rows))
	for i, row := range rows {
		units[i] = r.Rows[row].Unit
	}
	return rows[results.Deciding(k.Name, units, func(i int) bool { return r.Rows[rows[i]].Better > 0 }, r.Opt.Decide)]
}
