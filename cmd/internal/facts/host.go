package facts

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// unknownSpeed is what the kernel prints for a PCIe speed it cannot tell.
const unknownSpeed = "Unknown"

// pcieSpeedRE matches a PCIe link speed once " PCIe" is cut: "8.0 GT/s",
// "2.5 GT/s", "16 GT/s" (older kernels).
var pcieSpeedRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)? GT/s$`)

// addPCI files the PCIe and NUMA facts of the device behind dev, the
// directory (normally a symlink) dev/device; without it (rxe) they stay
// absent.
func (f *Facts) addPCI(pci string) error {
	if _, err := os.Stat(pci); os.IsNotExist(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("device link: %w", err)
	}
	files := []struct {
		name  string
		dst   *string
		parse func(string) (string, error)
	}{
		{"current_link_speed", &f.PCIeSpeed, parsePCIeSpeed},
		{"current_link_width", &f.PCIeWidth, parsePCIeWidth},
		{"max_link_speed", &f.PCIeMaxSpeed, parsePCIeSpeed},
		{"max_link_width", &f.PCIeMaxWidth, parsePCIeWidth},
	}
	for _, file := range files {
		if err := readInto(filepath.Join(pci, file.name), file.dst, file.parse); err != nil {
			return err
		}
	}
	return readInto(filepath.Join(pci, "numa_node"), &f.NUMANode, parseNUMANode)
}

// readInto reads an optional file and files parse's result in dst; a
// missing file leaves dst alone and a parse error names the file.
func readInto(file string, dst *string, parse func(string) (string, error)) error {
	v, ok, err := readOptional(file)
	if err != nil || !ok {
		return err
	}
	out, err := parse(v)
	if err != nil {
		return fmt.Errorf("%s holds %q: %w", file, v, err)
	}
	*dst = out
	return nil
}

// parsePCIeSpeed turns "8.0 GT/s PCIe" into "8.0 GT/s"; "Unknown" is an
// absent fact ("").
func parsePCIeSpeed(v string) (string, error) {
	if v == unknownSpeed || strings.HasPrefix(v, unknownSpeed+" ") {
		return "", nil
	}
	s := strings.TrimSpace(strings.TrimSuffix(v, "PCIe"))
	if !pcieSpeedRE.MatchString(s) {
		return "", fmt.Errorf(`want a PCIe speed such as "8.0 GT/s PCIe"`)
	}
	return s, nil
}

// parsePCIeWidth turns "16" into "x16"; 0 (a link the kernel cannot
// read) is an absent fact ("").
func parsePCIeWidth(v string) (string, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(v, "x"))
	switch {
	case err != nil || n < 0:
		return "", fmt.Errorf("want a PCIe width in lanes such as 16")
	case n == 0:
		return "", nil
	}
	return "x" + strconv.Itoa(n), nil
}

// parseNUMANode checks a NUMA node number; -1 (none) is absent ("").
func parseNUMANode(v string) (string, error) {
	n, err := strconv.Atoi(v)
	switch {
	case err != nil || n < -1:
		return "", fmt.Errorf("want a NUMA node number or -1")
	case n == -1:
		return "", nil
	}
	return strconv.Itoa(n), nil
}

// addGovernor files the CPUs' cpufreq governor: their common one, or
// "mixed:<governor>=<cpus>,…" by governor name; none without cpufreq.
func (f *Facts) addGovernor(src Source) error {
	pattern := filepath.Join(src.sys(), "devices", "system", "cpu", "cpu[0-9]*", "cpufreq", "scaling_governor")
	files, err := filepath.Glob(pattern)
	if err != nil {
		return fmt.Errorf("governors %s: %w", pattern, err)
	}
	counts := make(map[string]int)
	for _, file := range files {
		g, err := readValue(file)
		if err != nil {
			return err
		}
		if g == "" || strings.ContainsAny(g, " \t=,:") {
			return fmt.Errorf("%s holds %q: want a governor name", file, g)
		}
		counts[g]++
	}
	f.Governor = governorText(counts)
	return nil
}

// governorText formats the CPU counts by governor.
func governorText(counts map[string]int) string {
	names := make([]string, 0, len(counts))
	for g := range counts {
		names = append(names, g)
	}
	slices.Sort(names)
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	parts := make([]string, len(names))
	for i, g := range names {
		parts[i] = g + "=" + strconv.Itoa(counts[g])
	}
	return "mixed:" + strings.Join(parts, ",")
}
