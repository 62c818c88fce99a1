package results

import "strings"

// Preempted is rdmatest's count of the times the kernel took the CPU
// from the timed loops' threads during a run: a /run unit, not a port
// counter.
const Preempted = "preempted/run"

// PerRun tells the units that count events of one run, "<name>/run":
// the port counters that moved (Counter) and Preempted. rdmatest reports
// a port counter only in the runs where it moved, so a run without a
// /run unit counted none of it.
func PerRun(unit string) bool { return strings.HasSuffix(unit, "/run") }

// Counter returns the port counter unit counts ("duplicate_request" for
// "duplicate_request/run"), and "", false for a unit that counts none
// (Preempted included).
func Counter(unit string) (name string, ok bool) {
	name, ok = strings.CutSuffix(unit, "/run")
	if !ok || unit == Preempted {
		return "", false
	}
	return name, true
}
