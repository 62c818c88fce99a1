package facts

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// Counters are a port's counter values by sysfs file name (see
// rdmatest.Counters).
type Counters = rdmatest.Counters

// CongestionCounters are the counters of RoCE congestion control
// (DCQCN) where a device has them: mlx5's notification point (the
// receiver: CNPs sent, ECN-marked packets received) and reaction point
// (the sender: CNPs handled and ignored). An agent sends them even when
// they did not move, so that a reader can tell "none happened" from "not
// counted" (rxe and siw have none).
var CongestionCounters = []string{"np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored"}

// Congestion tells whether name is one of CongestionCounters.
func Congestion(name string) bool { return slices.Contains(CongestionCounters, name) }

// Snapshot reads the counters and hw_counters of port of device dev
// under src's sysfs root (rdmatest.ReadCountersIn), or with
// src.ReadCounters when that is set.
func Snapshot(src Source, dev string, port int) (Counters, error) {
	read := src.ReadCounters
	if read == nil {
		root := filepath.Join(src.sys(), "class", "infiniband")
		read = func(dev string, port int) (Counters, error) { return rdmatest.ReadCountersIn(root, dev, port) }
	}
	c, err := read(dev, port)
	if err != nil {
		return nil, fmt.Errorf("facts: counters of %s port %d: %w", dev, port, err)
	}
	return c, nil
}

// Delta returns after−before for every counter that moved (zero deltas
// left out; a counter new in after counts from 0). A counter that went
// backwards (a reset or a wrap during the run) or disappeared makes it
// also return an error naming the counter and its two values; the
// deltas of the other counters are still returned.
func Delta(before, after Counters) (Counters, error) {
	return rdmatest.Delta(before, after)
}

// CounterLines returns the configuration lines of the nonzero deltas,
// "fabric.node.<node>.counter.<counter>: <delta>", node and counter in
// lower case, sorted by counter. A character no key may hold (white
// space, ':', a control character, a capital with no lower case)
// becomes '_'; counters whose names meet in lower case are added up.
func CounterLines(node string, delta Counters) []string {
	sum := make(map[string]uint64)
	for name, d := range delta {
		if d != 0 {
			sum[counterKey(name)] += d
		}
	}
	names := make([]string, 0, len(sum))
	for name := range sum {
		names = append(names, name)
	}
	slices.Sort(names)
	lines := make([]string, len(names))
	for i, name := range names {
		lines[i] = keyPrefix(node) + "counter." + name + ": " + strconv.FormatUint(sum[name], 10)
	}
	return lines
}

// counterKey is a counter's name as a key part: lower case, with '_'
// for a character no key may hold.
func counterKey(name string) string {
	return strings.Map(func(r rune) rune {
		if r == ':' || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.IsUpper(r) {
			return '_'
		}
		return r
	}, strings.ToLower(name))
}
