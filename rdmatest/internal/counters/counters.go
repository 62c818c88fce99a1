// Package counters reads an RDMA port's sysfs counters around a timed
// region and reports the troubling ones as benchmark metrics.
//
// Read reads a port's sysfs counters (counters/ and hw_counters/) before
// and after a benchmark; Delta subtracts them and Report turns the
// troubling ones into benchmark metrics, so that a "fast" run with
// retransmissions or sequence errors is visible next to its result.
//
// Reporting choice: Report reports a counter of the delta that is
// Watched (retransmission, retry, sequence, RNR, timeout, duplicate,
// error, drop, discard, out-of-buffer and link-down counters) as
// b.ReportMetric(delta, "<name>/run"), and only when its delta is
// non-zero. A fixed column per counter would print zeros for counters a
// device does not have (names differ between rxe, mlx5 and others), and
// every printed number must be true; benchstat shows a missing metric as
// missing, which here means "none happened". The unit is "/run" because
// the delta is a total over one execution of the benchmark function (from
// just before its timed region to just after it; setup excluded), not a
// per-operation value.
package counters

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// SysfsRoot is the directory holding the RDMA devices' sysfs entries
// (tests point it at a fake tree).
var SysfsRoot = "/sys/class/infiniband"

// Values are a port's counter values by file name (hw_counters entries
// carry the same names as their files; a name present in both
// directories keeps the counters/ value under its name and the
// hw_counters one under "hw_<name>").
type Values map[string]uint64

// WatchedWords are the words (parts of a counter's name between
// underscores, any case) that make a counter worth reporting (see
// Report): rxe's rcvd_seq_err, out_of_seq_request and
// retry_exceeded_err, mlx5's out_of_sequence, out_of_buffer and
// roce_adp_retrans, the IB counters' port_rcv_errors, VL15_dropped and
// link_downed. Whole words, not substrings: rxe's ack_deferred (ACK
// coalescing, normal) is not an error.
var WatchedWords = []string{
	"err", "error", "errors", "retrans", "retry", "retries", "seq", "sequence", "rnr",
	"timeout", "dup", "duplicate", "drop", "dropped", "discard", "discards", "buffer", "downed",
}

// Read reads every file of
// <SysfsRoot>/<dev>/ports/<port>/counters and …/hw_counters. A missing
// directory is fine as long as one of the two exists (rxe has only
// hw_counters); a file that cannot be read or does not hold a decimal
// number is an error naming it.
func Read(dev string, port int) (Values, error) {
	return ReadIn(SysfsRoot, dev, port)
}

// ReadIn is Read under root instead of SysfsRoot (a
// directory laid out as /sys/class/infiniband).
func ReadIn(root, dev string, port int) (Values, error) {
	c := Values{}
	base := filepath.Join(root, dev, "ports", strconv.Itoa(port))
	found := 0
	for _, d := range []struct{ dir, prefix string }{{"counters", ""}, {"hw_counters", "hw_"}} {
		dir := filepath.Join(base, d.dir)
		ents, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("rdmatest: reading counters: %w", err)
		}
		found++
		for _, e := range ents {
			if e.IsDir() {
				continue
			}
			v, err := readCounter(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			name := e.Name()
			if _, dup := c[name]; dup {
				name = d.prefix + name
			}
			c[name] = v
		}
	}
	if found == 0 {
		return nil, fmt.Errorf("rdmatest: %s has neither counters nor hw_counters", base)
	}
	return c, nil
}

func readCounter(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("rdmatest: reading counter: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("rdmatest: counter %s holds %q, not a number", path, strings.TrimSpace(string(b)))
	}
	return v, nil
}

// Delta returns after-before for every counter that grew (zero deltas
// are left out). Counters that went backwards (a reset or wrap during the
// run) or disappeared make it also return an error naming them; the
// returned deltas are still valid for the other counters.
func Delta(before, after Values) (Values, error) {
	d := Values{}
	var bad []string
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s disappeared (was %d)", name, b))
		case a < b:
			bad = append(bad, fmt.Sprintf("%s went backwards from %d to %d", name, b, a))
		case a > b:
			d[name] = a - b
		}
	}
	for name, a := range after {
		if _, ok := before[name]; !ok && a > 0 {
			d[name] = a // appeared during the run: counted from 0
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return d, fmt.Errorf("rdmatest: counters not comparable: %s", strings.Join(bad, "; "))
	}
	return d, nil
}

// Watched tells whether one of the words of a counter's name is one of
// WatchedWords.
func Watched(name string) bool {
	for w := range strings.SplitSeq(strings.ToLower(name), "_") {
		if slices.Contains(WatchedWords, w) {
			return true
		}
	}
	return false
}

// Report reports the watched counters of delta d as metrics
// "<name>/run" (see the reporting choice in the package doc).
func Report(b *testing.B, d Values) {
	for name, v := range d {
		if v != 0 && Watched(name) {
			b.ReportMetric(float64(v), name+"/run")
		}
	}
}
