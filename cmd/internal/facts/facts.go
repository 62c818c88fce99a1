package facts

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Source is where a node's facts are read: the roots of sysfs and of
// /proc. The zero Source reads the running machine.
type Source struct {
	// Sys is the sysfs root; empty means "/sys".
	Sys string
	// Proc is the procfs root; empty means "/proc".
	Proc string
	// ReadCounters reads a port's counters for Snapshot; nil means
	// rdmatest.ReadCountersIn under Sys's class/infiniband.
	ReadCounters func(dev string, port int) (Counters, error)
}

// sys returns the sysfs root.
func (s Source) sys() string { return orDefault(s.Sys, "/sys") }

// proc returns the procfs root.
func (s Source) proc() string { return orDefault(s.Proc, "/proc") }

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// PortAttrs are the port attributes the caller read through verbs
// (verbs.PortAttr, the device's FWVersion and the GID entry's type); a
// zero field is unknown and leaves its fact to sysfs or absent.
type PortAttrs struct {
	// ActiveMTU is the active MTU in bytes (256 to 4096).
	ActiveMTU int
	// ActiveWidth is the number of lanes: 1, 2, 4, 8 or 12.
	ActiveWidth int
	// ActiveSpeed is the per-lane signalling rate in Gb/s (25 for EDR).
	ActiveSpeed float64
	// GIDType is the GID's type as the contract writes it ("RoCE v2",
	// "IB").
	GIDType string
	// FW is the firmware version.
	FW string
	// Software marks a software device (rxe, siw): the rate it reports
	// is a default (rxe: 2.5 Gb/s, 1X SDR, when it cannot tell the
	// Ethernet's), not a wire's, so link-rate-mbps is left out and blame
	// applies no floor to it; link-speed stays, as the device says.
	Software bool
}

// Facts are a node's facts, each the text its configuration line
// carries; an empty field is an absent fact.
type Facts struct {
	Dev          string // "mlx5_0"
	FW           string // "28.39.1002"
	Kernel       string // "6.8.0-45-generic"
	MTU          string // active MTU in bytes, "4096"
	LinkSpeed    string // "100 Gb/sec (4X EDR)"
	LinkRateMBps string // "12500"
	GIDType      string // "RoCE v2"
	PCIeSpeed    string // "8.0 GT/s"
	PCIeWidth    string // "x8"
	PCIeMaxSpeed string // "8.0 GT/s"
	PCIeMaxWidth string // "x16"
	Governor     string // "performance"
	NUMANode     string // "0"
	Netdev       string // the RoCE port's netdev, "eth0"
	ECNNP        string // QoS.ECNNP, "3"
	ECNRP        string // QoS.ECNRP, "3"
	Trust        string // QoS.Trust, "dscp"
	PFC          string // QoS.PFC
}

// Collect gathers the facts of port of device dev from src and from the
// verbs attributes a. A missing device or port, an unreadable or
// unparsable file, an attribute out of range, and a rate that disagrees
// with a's width × speed are errors naming the file and the value.
func Collect(src Source, dev string, port int, a PortAttrs) (Facts, error) {
	f, err := collect(src, dev, port, a)
	if err != nil {
		return Facts{}, fmt.Errorf("facts: %s port %d: %w", dev, port, err)
	}
	return f, nil
}

// collect is Collect without the error's prefix.
func collect(src Source, dev string, port int, a PortAttrs) (Facts, error) {
	devDir, err := deviceDir(src, dev, port)
	if err != nil {
		return Facts{}, err
	}
	f := Facts{Dev: dev, GIDType: a.GIDType}
	steps := []func() error{
		func() error { return f.addAttrs(a) },
		func() error { return f.addFW(devDir, a.FW) },
		func() error { return f.addKernel(src) },
		func() error { return f.addRate(devDir, port, a) },
		func() error { return f.addPCI(filepath.Join(devDir, "device")) },
		func() error { return f.addGovernor(src) },
		func() error { return f.addQoS(src, devDir, port) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return Facts{}, err
		}
	}
	f.clean()
	return f, nil
}

// deviceDir returns dev's sysfs directory, checking that it and its
// port exist.
func deviceDir(src Source, dev string, port int) (string, error) {
	if dev == "" || dev == "." || dev == ".." || strings.ContainsAny(dev, "/\x00") {
		return "", fmt.Errorf("device name %q is not a device's", dev)
	}
	dir := filepath.Join(src.sys(), "class", "infiniband", dev)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("no device: %w", err)
	}
	portDir := filepath.Join(dir, "ports", strconv.Itoa(port))
	if _, err := os.Stat(portDir); err != nil {
		return "", fmt.Errorf("no such port: %w", err)
	}
	return dir, nil
}

// addAttrs checks the verbs attributes and files the MTU.
func (f *Facts) addAttrs(a PortAttrs) error {
	switch {
	case a.ActiveMTU != 0 && !validMTU(a.ActiveMTU):
		return fmt.Errorf("verbs active MTU %d: want 256, 512, 1024, 2048 or 4096 bytes", a.ActiveMTU)
	case a.ActiveWidth != 0 && !validWidth(a.ActiveWidth):
		return fmt.Errorf("verbs active width %d: want 1, 2, 4, 8 or 12 lanes", a.ActiveWidth)
	case a.ActiveSpeed < 0 || math.IsNaN(a.ActiveSpeed) || math.IsInf(a.ActiveSpeed, 0):
		return fmt.Errorf("verbs active speed %v: want a positive number of Gb/s per lane", a.ActiveSpeed)
	}
	if a.ActiveMTU != 0 {
		f.MTU = strconv.Itoa(a.ActiveMTU)
	}
	return nil
}

// validMTU tells whether mtu is an InfiniBand MTU in bytes.
func validMTU(mtu int) bool {
	return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096
}

// validWidth tells whether w is a port width in lanes.
func validWidth(w int) bool { return w == 1 || w == 2 || w == 4 || w == 8 || w == 12 }

// addFW files the firmware version: verbs', else the device's fw_ver.
func (f *Facts) addFW(devDir, verbsFW string) error {
	if strings.TrimSpace(verbsFW) != "" {
		f.FW = verbsFW
		return nil
	}
	fw, _, err := readOptional(filepath.Join(devDir, "fw_ver"))
	f.FW = fw
	return err
}

// addKernel files the kernel release.
func (f *Facts) addKernel(src Source) error {
	file := filepath.Join(src.proc(), "sys", "kernel", "osrelease")
	k, err := readValue(file)
	if err != nil {
		return err
	}
	if k == "" {
		return fmt.Errorf("%s is empty", file)
	}
	f.Kernel = k
	return nil
}

// addRate files link-speed and link-rate-mbps from the port's rate,
// checked against the verbs width and speed.
func (f *Facts) addRate(devDir string, port int, a PortAttrs) error {
	file := filepath.Join(devDir, "ports", strconv.Itoa(port), "rate")
	text, err := readValue(file)
	if err != nil {
		return err
	}
	r, err := ParseRate(text)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := crossCheck(r, a); err != nil {
		return fmt.Errorf("%s holds %q, but %w", file, text, err)
	}
	f.LinkSpeed = text
	if !a.Software {
		f.LinkRateMBps = strconv.FormatFloat(r.MBps(), 'f', -1, 64)
	}
	return nil
}

// crossCheck tells how the verbs width and speed, where known, disagree
// with r.
func crossCheck(r Rate, a PortAttrs) error {
	if a.ActiveWidth != 0 && a.ActiveWidth != r.Width {
		return fmt.Errorf("verbs says %d lanes", a.ActiveWidth)
	}
	if a.ActiveSpeed == 0 {
		return nil
	}
	if total := float64(r.Width) * a.ActiveSpeed; !near(total, r.Gbps) {
		return fmt.Errorf("verbs says %dX × %g Gb/s = %g Gb/s", r.Width, a.ActiveSpeed, total)
	}
	return nil
}

// clean makes every fact one line: white space runs, newlines included,
// become one space, and none leads or trails.
func (f *Facts) clean() {
	for _, p := range f.fields() {
		*p.value = strings.Join(strings.Fields(*p.value), " ")
	}
}

// field is a fact's name and its place in Facts.
type field struct {
	name  string
	value *string
}

// fields lists the facts in the contract's order.
func (f *Facts) fields() []field {
	return []field{
		{"dev", &f.Dev}, {"fw", &f.FW}, {"kernel", &f.Kernel}, {"mtu", &f.MTU},
		{"link-speed", &f.LinkSpeed}, {"link-rate-mbps", &f.LinkRateMBps}, {"gid-type", &f.GIDType},
		{"pcie-speed", &f.PCIeSpeed}, {"pcie-width", &f.PCIeWidth},
		{"pcie-max-speed", &f.PCIeMaxSpeed}, {"pcie-max-width", &f.PCIeMaxWidth},
		{"governor", &f.Governor}, {"numa-node", &f.NUMANode},
		{"netdev", &f.Netdev}, {"ecn-np", &f.ECNNP}, {"ecn-rp", &f.ECNRP}, {"qos-trust", &f.Trust}, {"pfc", &f.PFC},
	}
}

// Map returns the present facts by their contract names ("link-speed").
func (f Facts) Map() map[string]string {
	m := make(map[string]string)
	for _, p := range f.fields() {
		if *p.value != "" {
			m[p.name] = *p.value
		}
	}
	return m
}

// ConfigLines returns the configuration lines of the present facts,
// "fabric.node.<node>.<fact>: <value>" in the contract's order (dev, fw,
// kernel, mtu, link-speed, link-rate-mbps, gid-type, pcie-speed,
// pcie-width, pcie-max-speed, pcie-max-width, governor, numa-node,
// netdev, ecn-np, ecn-rp, qos-trust, pfc), node
// in lower case. node must be a valid node name (ASCII letters, digits,
// ".-_:"), as the coordinator's nodes file requires. Values are made one
// line as Collect makes them.
func (f Facts) ConfigLines(node string) []string {
	f.clean()
	var lines []string
	for _, p := range f.fields() {
		if *p.value != "" {
			lines = append(lines, keyPrefix(node)+p.name+": "+*p.value)
		}
	}
	return lines
}

// keyPrefix starts every configuration key of node.
func keyPrefix(node string) string { return "fabric.node." + strings.ToLower(node) + "." }

// readValue reads a one-value file, trimmed; an error names the file.
func readValue(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// readOptional reads a one-value file that may not exist: a missing file
// gives "", false and no error.
func readOptional(file string) (string, bool, error) {
	v, err := readValue(file)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	return v, err == nil, err
}
