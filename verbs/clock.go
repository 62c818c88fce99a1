package verbs

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// # The loops' clock
//
// Every timed loop reads one clock, once per sample point (a post, an
// answer seen), in C. Two clocks can be that clock:
//
//   - the CPU's counter, as perftest's get_cycles: rdtsc on x86-64,
//     cntvct_el0 on arm64. One read with its scaling to ns costs 46–49
//     ns under qemu TCG, where clock_gettime costs 90–94 ns (10 and 17
//     ns on the host of 2026-12-06: ClockCost). Ticks become ns through
//     a frequency calibrated against CLOCK_MONOTONIC_RAW when the process
//     first builds a loop (a 50 ms busy wait), never through a nominal
//     MHz (perftest trusts /proc/cpuinfo's unless its own sample
//     disagrees by 2%), and every Run longer than 10 ms measures the
//     frequency again over itself: a run whose counter ran more than 0.1%
//     (the histogram's resolution) off the calibration, beyond what the
//     two reads' own uncertainty allows, fails with ErrClockDrift.
//   - CLOCK_MONOTONIC through the vDSO (clock_gettime), in ns, where the
//     counter is not to be trusted.
//
// The counter is trusted (ClockAuto) where the kernel trusts it: on
// x86-64 when the kernel's clocksource is tsc (it checked the TSC's
// synchronisation across CPUs and watches it, or was told with
// tsc=reliable, as the qemu guests of loopback/ are), or, where the
// clocksource cannot be read, when /proc/cpuinfo shows constant_tsc and
// nonstop_tsc (an invariant TSC); on arm64 when the clocksource is
// arch_sys_counter (or cannot be read: the architected counter has a
// fixed frequency). A clocksource of another name (hpet, acpi_pm,
// kvm-clock) means the kernel did not take the counter: the loops take
// CLOCK_MONOTONIC, and the results' configuration says so
// (rdma-clock, rdma-clock-mhz).

// ClockKind chooses the loops' clock (SetClock).
type ClockKind int

const (
	// ClockAuto takes the CPU's counter where it is trusted (see the
	// package notes above), else CLOCK_MONOTONIC.
	ClockAuto ClockKind = iota
	// ClockCounter takes the CPU's counter (rdtsc, cntvct_el0) on x86-64
	// and arm64 even where the kernel did not take it.
	ClockCounter
	// ClockMonotonic takes CLOCK_MONOTONIC (clock_gettime).
	ClockMonotonic
)

var clockKindNames = map[ClockKind]string{ClockAuto: "auto", ClockCounter: "tsc", ClockMonotonic: "monotonic"}

// String is the kind's name as ParseClockKind reads it.
func (k ClockKind) String() string {
	if s, ok := clockKindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("ClockKind(%d)", int(k))
}

// ParseClockKind reads auto, tsc (the CPU's counter, cntvct_el0 on
// arm64 included) or monotonic.
func ParseClockKind(s string) (ClockKind, error) {
	for k, name := range clockKindNames {
		if s == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("verbs: clock %q: want auto, tsc or monotonic", s)
}

// ErrClockDrift is returned (wrapped) by a Run over which the CPU's
// counter ran off its calibrated frequency by more than 0.1%.
var ErrClockDrift = errors.New("verbs: the CPU counter's frequency moved during the run")

// Clock is the loops' clock in use.
type Clock struct {
	// Name is the clock: "tsc", "cntvct" or "monotonic".
	Name string
	// MHz is the counter's frequency calibrated against
	// CLOCK_MONOTONIC_RAW (0 for monotonic).
	MHz float64
	// Why says why this clock was taken.
	Why string
}

// Counter tells whether the clock is the CPU's counter.
func (c Clock) Counter() bool { return c.Name != "monotonic" }

// Config returns the results' configuration lines of the clock:
// rdma-clock (its name) and, for a counter, rdma-clock-mhz (its
// calibrated frequency, which differs by a few ppm from one process to
// the next: the gate takes it as a label, never for pairing).
func (c Clock) Config() [][2]string {
	cfg := [][2]string{{"rdma-clock", c.Name}}
	if c.Counter() {
		cfg = append(cfg, [2]string{"rdma-clock-mhz", fmt.Sprintf("%.3f", c.MHz)})
	}
	return cfg
}

// clockHost is what the choice reads of the machine (a seam for tests).
type clockHost struct {
	goarch      string
	cpuinfo     string // /proc/cpuinfo ("" unread)
	clocksource string // the kernel's current clocksource ("" unread)
}

func readClockHost() clockHost {
	h := clockHost{goarch: runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.cpuinfo = string(b)
	}
	if b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil {
		h.clocksource = strings.TrimSpace(string(b))
	}
	return h
}

// cpuFlags returns the flags of /proc/cpuinfo's first "flags" line.
func cpuFlags(cpuinfo string) map[string]bool {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "flags" {
			m := map[string]bool{}
			for _, f := range strings.Fields(v) {
				m[f] = true
			}
			return m
		}
	}
	return nil
}

// chooseClock picks the clock for want on h: the counter's name
// ("tsc", "cntvct") or "monotonic", and why.
func chooseClock(h clockHost, want ClockKind) (name, why string, err error) {
	counter := map[string]string{"amd64": "tsc", "arm64": "cntvct"}[h.goarch]
	kernel := map[string]string{"amd64": "tsc", "arm64": "arch_sys_counter"}[h.goarch]
	switch want {
	case ClockMonotonic:
		return "monotonic", "chosen", nil
	case ClockCounter:
		if counter == "" {
			return "", "", fmt.Errorf("verbs: clock tsc: %s has no CPU counter rdmabench reads (x86-64 and arm64 have)", h.goarch)
		}
		return counter, "chosen", nil
	case ClockAuto:
	default:
		return "", "", fmt.Errorf("verbs: clock %v: want auto, tsc or monotonic", want)
	}
	switch {
	case counter == "":
		return "monotonic", fmt.Sprintf("no CPU counter read on %s", h.goarch), nil
	case h.clocksource == kernel:
		return counter, "the kernel's clocksource is " + kernel, nil
	case h.clocksource != "":
		return "monotonic", fmt.Sprintf("the kernel's clocksource is %s, not %s", h.clocksource, kernel), nil
	case h.goarch == "arm64":
		return counter, "the architected counter (clocksource unread)", nil
	}
	f := cpuFlags(h.cpuinfo)
	if f["constant_tsc"] && f["nonstop_tsc"] {
		return counter, "constant_tsc and nonstop_tsc (clocksource unread)", nil
	}
	return "monotonic", "no invariant TSC (constant_tsc and nonstop_tsc) and the clocksource unread", nil
}
