package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The C-only control (-control, ci/cping): rdmabench's own WRITE
// ping-pong loops (verbs/loop.c) in a process without the Go runtime,
// run as a third contestant of the write_lat scenario, so that one boot
// shows perftest, the benchmark and the same C loop without Go side by
// side (issue #13: is what the benchmark adds to perftest the Go
// process, or the loop?). It uses the benchmark's setup (one RC QP per
// side, 64-byte slots, depths 128/512, one warm-up round trip, RTT/2
// samples in the same HDR geometry) and its CPUs (requester on CPU 0,
// passive side on CPU 1, as the benchmark pins them in the guest), the
// GID index -control-gid (the benchmark's best GID; 1 on rxe).

// controlSetup takes the control's GID index and CPUs from the
// benchmark's own configuration lines (rdmatest.Config: rdma-gid-index,
// rdma-cpus), so that it runs where the benchmark runs; -control-gid
// overrides the GID index.
func controlSetup(c *config, cfg [][2]string) error {
	c.controlCPUs = [2]int{-1, -1}
	for _, kv := range cfg {
		switch kv[0] {
		case "rdma-gid-index":
			if c.controlGID < 0 {
				n, err := strconv.Atoi(kv[1])
				if err != nil {
					return fmt.Errorf("the benchmark's rdma-gid-index %q is not a number", kv[1])
				}
				c.controlGID = n
			}
		case "rdma-cpus":
			if m := cpusLine.FindStringSubmatch(kv[1]); m != nil {
				c.controlCPUs[0], _ = strconv.Atoi(m[1])
				if m[2] != "unpinned" {
					c.controlCPUs[1], _ = strconv.Atoi(m[2])
				}
			}
		}
	}
	if c.controlGID < 0 {
		return fmt.Errorf("no GID index for the control: the benchmark's configuration has no rdma-gid-index (no device?); give -control-gid")
	}
	return nil
}

// cpusLine reads rdmatest's rdma-cpus line, e.g.
// "requester=0,passive=1(numa-local),runtime=2-7".
var cpusLine = regexp.MustCompile(`^requester=(\d+),passive=(\d+|unpinned)`)

// hasControl tells the scenarios the control can run: WRITE ping-pong.
func hasControl(s scenario) bool { return s.program == "ib_write_lat" }

// controlScenario labels the control's rows of s in the table.
func controlScenario(s scenario) scenario {
	s.name += " [C-only control]"
	s.differs = "the benchmark's own C loops (verbs/loop.c) in a C-only process (ci/cping): same setup, samples, histogram and CPUs, no Go runtime"
	return s
}

// controlFigures returns p50 and p99 of one cping run's output in µs,
// read with hdrhistogram-go as rdmatest reads its loops' counts.
func controlFigures(r io.Reader, figs []figure) ([]float64, error) {
	sc := bufio.NewScanner(r)
	var snap *hdrhistogram.Snapshot
	var total int64
	probes := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 6 && f[0] == "cping-counts":
			var v [5]int64
			for i := range v {
				n, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("cping: bad header %q", sc.Text())
				}
				v[i] = n
			}
			if v[0] != 1 || v[1] != int64(100e9) || v[2] != 3 {
				return nil, fmt.Errorf("cping: histogram geometry %d..%d/%d, want 1..100000000000/3", v[0], v[1], v[2])
			}
			snap = &hdrhistogram.Snapshot{LowestTrackableValue: v[0], HighestTrackableValue: v[1], SignificantFigures: v[2]}
			snap.Counts = make([]int64, len(hdrhistogram.New(v[0], v[1], int(v[2])).Export().Counts))
			if v[4] != int64(len(snap.Counts)) {
				return nil, fmt.Errorf("cping: %d counts, hdrhistogram-go has %d for this geometry", v[4], len(snap.Counts))
			}
			total = v[3]
		case len(f) == 3 && f[0] == "cping-probe":
			probes++
			v, err1 := strconv.ParseInt(f[1], 10, 64)
			idx, err2 := strconv.Atoi(f[2])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("cping: bad probe line %q", sc.Text())
			}
			if want := hdrIndex(v); idx != want {
				return nil, fmt.Errorf("cping: value %d lands in count %d, hdrhistogram-go puts it in %d: its geometry differs", v, idx, want)
			}
		case len(f) == 2 && (f[0] == "cping-elapsed-ns" || f[0] == "cping-preempted"):
		case len(f) == 2 && snap != nil:
			i, err1 := strconv.Atoi(f[0])
			c, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 != nil || err2 != nil || i < 0 || i >= len(snap.Counts) || c <= 0 {
				return nil, fmt.Errorf("cping: bad count line %q", sc.Text())
			}
			snap.Counts[i] += c
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if snap == nil {
		return nil, fmt.Errorf("cping: no cping-counts line")
	}
	h := hdrhistogram.Import(snap)
	if h.TotalCount() != total || total == 0 {
		return nil, fmt.Errorf("cping: %d samples in the counts, header says %d", h.TotalCount(), total)
	}
	if probes == 0 {
		return nil, fmt.Errorf("cping: no cping-probe lines (its histogram geometry is unchecked)")
	}
	out := make([]float64, len(figs))
	for j, fg := range figs {
		var p float64
		switch fg.unit {
		case "p50-ns":
			p = 50
		case "p99-ns":
			p = 99
		default:
			return nil, fmt.Errorf("cping reports latencies only, not %s", fg.unit)
		}
		out[j] = fromBase(float64(h.ValueAtPercentile(p)), fg.display)
	}
	return out, nil
}

// hdrIndex is the index of v in hdrhistogram-go's counts for the loops'
// geometry (1 ns … 100 s, 3 figures).
func hdrIndex(v int64) int {
	h := hdrhistogram.New(1, 100e9, 3)
	if err := h.RecordValue(v); err != nil {
		return -1
	}
	for i, c := range h.Export().Counts {
		if c != 0 {
			return i
		}
	}
	return -1
}

// controlRun runs the C-only control once for s (its output kept as
// <program>.cping.<run>) and returns its figures.
func controlRun(ctx context.Context, c config, s scenario, run int) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cpuA, cpuB := strconv.Itoa(c.controlCPUs[0]), strconv.Itoa(c.controlCPUs[1])
	args := []string{"-d", c.dev, "-i", strconv.Itoa(perftestPort), "-x", strconv.Itoa(c.controlGID),
		"-s", strconv.Itoa(s.size), "-n", strconv.Itoa(c.iters), "-a", cpuA, "-b", cpuB}
	cmd := exec.CommandContext(ctx, c.control, args...)
	cmd.WaitDelay = waitDelay
	out, err := cmd.Output()
	path := filepath.Join(c.keep, fmt.Sprintf("%s.cping.%d", s.program, run))
	if werr := os.WriteFile(path, out, 0o644); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, fmt.Errorf("%s %s: %v %s%s", c.control, strings.Join(args, " "), err, stderr, deadlineNote(ctx, c))
	}
	v, err := controlFigures(strings.NewReader(string(out)), s.figures)
	if err != nil {
		return nil, fmt.Errorf("%s (kept in %s): %w", c.control, path, err)
	}
	return v, nil
}
