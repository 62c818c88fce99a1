package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
)

// Same conditions: perftest runs where the benchmark's loops run. The
// benchmark pins its requester's loop and its passive side's loop to CPUs
// of their own (rdmatest's plan, printed as its rdma-cpus configuration
// line); calibrate reads that line and starts perftest's client (the
// requester) on the requester CPU and its server (the passive side) on
// the passive CPU with taskset -c (util-linux). A side the benchmark
// leaves unpinned runs unpinned in perftest too. Each benchmark run's own
// rdma-cpus line is checked against the CPUs perftest was given.

// setup reads the benchmark's configuration lines (rdmatest.Config on the
// same device, as the benchmark prints them): the CPUs (rdma-cpus,
// always) and, for the C-only control, its GID index (rdma-gid-index,
// unless -control-gid gave one); it finds taskset when a CPU is pinned.
func setup(c *config, cfg [][2]string) error {
	line, gid := "", ""
	for _, kv := range cfg {
		switch kv[0] {
		case "rdma-cpus":
			line = kv[1]
		case "rdma-gid-index":
			gid = kv[1]
		}
	}
	if line == "" {
		return fmt.Errorf("the benchmark's configuration has no rdma-cpus line (no device?): perftest cannot be pinned where the benchmark runs")
	}
	cpus, err := parseCPUs(line)
	if err != nil {
		return err
	}
	c.cpusLine, c.cpus = line, cpus
	c.benchGID = -1
	if gid != "" {
		n, err := strconv.Atoi(gid)
		if err != nil {
			return fmt.Errorf("the benchmark's rdma-gid-index %q is not a number", gid)
		}
		c.benchGID = n
	}
	if c.control != "" && c.controlGID < 0 {
		if c.benchGID < 0 {
			return fmt.Errorf("no GID index for the control: the benchmark's configuration has no rdma-gid-index (no device?); give -control-gid")
		}
		c.controlGID = c.benchGID
	}
	if (cpus[0] >= 0 || cpus[1] >= 0) && c.taskset == "" {
		p, err := exec.LookPath("taskset")
		if err != nil {
			return fmt.Errorf("perftest must run pinned like the benchmark (%s) with taskset, from util-linux, which is not installed: %w", pinText(cpus), err)
		}
		c.taskset = p
	}
	return nil
}

// cpusLine reads rdmatest's rdma-cpus line, e.g.
// "requester=0,passive=1(numa-local),runtime=2-7" or
// "requester=4,passive=unpinned(allowed)"; "unpinned" pins nothing.
var cpusLine = regexp.MustCompile(`^requester=(\d+),passive=(\d+|unpinned)\b`)

// parseCPUs returns the requester's and the passive side's CPUs of an
// rdma-cpus line (-1: unpinned).
func parseCPUs(line string) ([2]int, error) {
	if line == "unpinned" {
		return [2]int{-1, -1}, nil
	}
	m := cpusLine.FindStringSubmatch(line)
	if m == nil {
		return [2]int{}, fmt.Errorf("the benchmark's rdma-cpus %q: want requester=N,passive=M(…) or unpinned", line)
	}
	cpus := [2]int{-1, -1}
	cpus[0], _ = strconv.Atoi(m[1])
	if m[2] != "unpinned" {
		cpus[1], _ = strconv.Atoi(m[2])
	}
	return cpus, nil
}

// pinText says where perftest's sides run.
func pinText(cpus [2]int) string {
	on := func(cpu int) string {
		if cpu < 0 {
			return "unpinned"
		}
		return fmt.Sprintf("on CPU %d", cpu)
	}
	if cpus[0] < 0 && cpus[1] < 0 {
		return "the benchmark runs unpinned, and so does perftest"
	}
	return fmt.Sprintf("perftest's client (requester) %s, its server (passive side) %s, as the benchmark's loops (taskset -c)", on(cpus[0]), on(cpus[1]))
}

// pinned returns the command line that runs prog with args on cpu:
// through taskset -c when cpu ≥ 0 (taskset execs prog, so a deadline's
// kill reaches it).
func pinned(c config, cpu int, prog string, args []string) (string, []string) {
	if cpu < 0 {
		return prog, args
	}
	return c.taskset, append([]string{"-c", strconv.Itoa(cpu), prog}, args...)
}
