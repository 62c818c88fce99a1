package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The C-only control (-control, ci/cping): rdmabench's own WRITE
// ping-pong loops (verbs/loop.c) in a process without the Go runtime,
// run as a third contestant of the write_lat scenario, so that one boot
// shows perftest, the benchmark and the same C loop without Go side by
// side (issue #13: is what the benchmark adds to perftest the Go
// process, or the loop?). It uses a setup like the benchmark's (one RC
// QP per side, 64-byte slots, send depth 64, receive depth 512 where the
// benchmark's WRITE has 1: ci/cping/cping.c lists the differences and
// its CPING_GO_SETUP build aligns them), one warm-up round trip, RTT/2
// samples in the same HDR geometry) and its CPUs (requester on CPU 0,
// passive side on CPU 1, as the benchmark pins them in the guest), the
// GID index -control-gid (the benchmark's best GID; 1 on rxe). It runs
// twice per pair: C measures our own definition (post → answer, 1 WR in
// 32 signaled, one warm-up round trip), so its row compares with the
// own-definition contestant O; CL (cping -S) does perftest's work and
// reports perftest's sample (every WR signaled and awaited, no warm-up,
// post → next post ÷ 2), so its row compares with L: L/CL is what the Go
// process around the same loop adds under perftest's definition, CL/P1
// what the loop itself differs from perftest's.

// hasControl tells the scenarios the control can run: WRITE ping-pong,
// connected by hand (cping has no rdma_cm), of at most cpingMaxSize
// bytes (its slots).
func hasControl(s scenario) bool {
	return s.program == "ib_write_lat" && !s.cm && s.size <= cpingMaxSize
}

// cpingMaxSize is the largest message cping takes (-s; its SLOT).
const cpingMaxSize = 64

// controlName labels the control's own-definition rows (C) of a scenario
// in the tables: its ratio to perftest stands in the own-definition
// column, next to O's.
func controlName(scenario string) string { return scenario + " [C-only control]" }

// controlLikeName labels the control's like-for-like rows (CL): its
// ratio to perftest stands in the ratio column, next to L's.
func controlLikeName(scenario string) string { return scenario + " [C-only control, like for like]" }

// controlFigures returns p50 and p99 of one cping run's output in µs,
// read with hdrhistogram-go as rdmatest reads its loops' counts: of the
// post → answer histogram (cping-counts: the figures' own metrics), or
// with like of the cycle histogram (cping-cycle-counts: their like-for-like
// metrics).
func controlFigures(r io.Reader, figs []figure, like bool) ([]float64, error) {
	h, err := controlHist(r, like)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(figs))
	for j, fg := range figs {
		var p float64
		metric := fg.own
		if like {
			metric = fg.like
		}
		switch metric {
		case "p50-ns", "cycle-p50-ns":
			p = 50
		case "p99-ns", "cycle-p99-ns":
			p = 99
		default:
			return nil, fmt.Errorf("cping reports latencies only (p50-ns, p99-ns, cycle-p50-ns, cycle-p99-ns), not %q", metric)
		}
		out[j] = fromBase(float64(h.ValueAtPercentile(p)), fg.display)
	}
	return out, nil
}

// controlHist reads one cping run's output: the post → answer histogram
// (cping-counts), or with like the cycle histogram (cping-cycle-counts),
// checked against hdrhistogram-go's geometry (the probe lines) and its
// header's total. Values are ns (halved as the loop halves them).
func controlHist(r io.Reader, like bool) (*hdrhistogram.Histogram, error) {
	want := "cping-counts"
	if like {
		want = "cping-cycle-counts"
	}
	sc := bufio.NewScanner(r)
	var snap *hdrhistogram.Snapshot
	var total int64
	probes := 0
	in := false // the count lines that follow belong to the wanted histogram
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 6 && (f[0] == "cping-counts" || f[0] == "cping-cycle-counts"):
			if in = f[0] == want; !in {
				continue
			}
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
		case len(f) == 2 && !in:
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
		return nil, fmt.Errorf("cping: no %s line", want)
	}
	h := hdrhistogram.Import(snap)
	if h.TotalCount() != total || total == 0 {
		return nil, fmt.Errorf("cping: %d samples in the counts, header says %d", h.TotalCount(), total)
	}
	if probes == 0 {
		return nil, fmt.Errorf("cping: no cping-probe lines (its histogram geometry is unchecked)")
	}
	return h, nil
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

// controlRun runs the C-only control once for s on the benchmark's CPUs
// (its output kept as <stem>.<run>.<id>.cping) and returns its figures:
// with like, cping -S's cycle figures (perftest's work and sample).
func controlRun(ctx context.Context, c config, s scenario, run int, id string, like bool) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cpuA, cpuB := strconv.Itoa(c.cpus[0]), strconv.Itoa(c.cpus[1])
	args := []string{"-d", c.dev, "-i", strconv.Itoa(perftestPort), "-x", strconv.Itoa(c.controlGID),
		"-s", strconv.Itoa(s.size), "-n", strconv.Itoa(c.iters), "-a", cpuA, "-b", cpuB}
	if like {
		args = append(args, "-S")
	}
	cmd := exec.CommandContext(ctx, c.control, args...)
	cmd.WaitDelay = waitDelay
	out, err := cmd.Output()
	path := filepath.Join(c.keep, fmt.Sprintf("%s.%d.%s.cping", s.stem(), run, id))
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
	v, err := controlFigures(strings.NewReader(string(out)), s.figures, like)
	if err != nil {
		return nil, fmt.Errorf("%s (kept in %s): %w", c.control, path, err)
	}
	return v, nil
}
