// Package units keeps the custom metric units rdmabench's benchmarks
// report with the direction in which each is better, and prints them as
// the `Unit NAME better=higher|lower` lines (golang.org/x/perf benchfmt)
// from which benchstat and the regression gate know which way is worse.
package units

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// Unit is a custom metric unit with its direction: Better is "higher" or
// "lower".
type Unit struct{ Name, Better string }

// list is the custom units rdmabench reports, with their direction, as
// printed in `Unit … better=` lines (golang.org/x/perf benchfmt) so that
// benchstat and the regression gate know which way is worse. Register
// adds one.
var list = []Unit{
	{"p50-ns", "lower"}, {"p90-ns", "lower"}, {"p99-ns", "lower"}, {"p99.9-ns", "lower"},
	{"p99.99-ns", "lower"}, {"max-ns", "lower"}, {"cycle-p50-ns", "lower"}, {"cycle-p99-ns", "lower"}, {"msgs/s", "higher"},
	{"msgs/s/thread", "higher"}, {"ops/s", "higher"}, {"MB/s", "higher"},
	{"delivered-msgs/s", "higher"}, {"lost-msgs/op", "lower"}, {"recv-MB/s", "higher"}, {"cpu-ns/op", "lower"},
	{"start-skew-ns", "lower"},
}

// mu guards list.
var mu sync.Mutex

// Register adds a custom unit and its direction (better "higher" or
// "lower") to the list, so that its `Unit … better=` line is printed (by
// the engine's Main: at the start, or after the run for a unit registered
// while the benchmarks ran; by its Benchmark with its result) and
// benchstat and the gate know which way is worse. Registering a unit
// again with the same direction does nothing; with the other direction
// it is an error.
func Register(name, better string) error {
	if better != "higher" && better != "lower" {
		return fmt.Errorf("rdmatest: unit %q: better=%q: want higher or lower", name, better)
	}
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return fmt.Errorf("rdmatest: unit %q: a unit is one word", name)
	}
	mu.Lock()
	defer mu.Unlock()
	if i := slices.IndexFunc(list, func(u Unit) bool { return u.Name == name }); i >= 0 {
		if list[i].Better != better {
			return fmt.Errorf("rdmatest: unit %q is registered as better=%s, not %s", name, list[i].Better, better)
		}
		return nil
	}
	list = append(list, Unit{name, better})
	return nil
}

// All returns every unit with a known direction: a copy of the list,
// taken under its lock.
func All() []Unit {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(list)
}

// Count is how many units the list holds: PrintFrom(w, Count()) later
// prints those registered since.
func Count() int {
	mu.Lock()
	defer mu.Unlock()
	return len(list)
}

// PrintFrom writes the `Unit … better=` lines of the units from the
// from-th (counting from 0) on: every unit for 0, those registered since
// for a Count taken earlier.
func PrintFrom(w io.Writer, from int) {
	mu.Lock()
	defer mu.Unlock()
	for _, u := range list[min(from, len(list)):] {
		fmt.Fprintf(w, "Unit %s better=%s\n", u.Name, u.Better)
	}
}
