package blame

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Reason codes of verdicts and evidence: stable strings, for JSON and
// for the drain reasons.
const (
	CodeSlowWithAll    = "slow-with-all"            // node: an outlier on its links
	CodeBelowFloor     = "below-floor"              // node: under Floor of its link rate
	CodeNoResults      = "no-results"               // node: facts but no row
	CodeSlowLink       = "slow-link"                // link: an outlier between healthy ends
	CodeCounterMoved   = "counter-moved"            // an error, retransmission or ECN/CNP counter moved
	CodeFWDiffers      = "fw-differs"               // firmware differs from the majority
	CodeKernelDiffers  = "kernel-differs"           // kernel differs from the majority
	CodeMTUDiffers     = "mtu-differs"              // active MTU differs from the majority
	CodeSpeedDiffers   = "speed-differs"            // link speed differs from the majority
	CodeWidthDiffers   = "width-differs"            // link width (4X) differs from the majority
	CodeGIDTypeDiffers = "gid-type-differs"         // GID type differs from the majority
	CodeECNDiffers     = "ecn-differs"              // RoCE ECN priorities (np or rp) differ from the majority
	CodeTrustDiffers   = "qos-trust-differs"        // trust mode (pcp, dscp) differs from the majority
	CodePFCDiffers     = "pfc-differs"              // PFC setting differs from the majority
	CodePCIeBelowMax   = "pcie-below-max"           // PCIe trained below its maximum
	CodeGovernor       = "governor-not-performance" // cpufreq governor not performance
)

// Node facts (see the package documentation).
const (
	factFW           = "fw"
	factKernel       = "kernel"
	factMTU          = "mtu"
	factLinkSpeed    = "link-speed"
	factRate         = "link-rate-mbps"
	factGIDType      = "gid-type"
	factPCIeSpeed    = "pcie-speed"
	factPCIeWidth    = "pcie-width"
	factPCIeMaxSpeed = "pcie-max-speed"
	factPCIeMaxWidth = "pcie-max-width"
	factGovernor     = "governor"
	factECNNP        = "ecn-np"
	factECNRP        = "ecn-rp"
	factTrust        = "qos-trust"
	factPFC          = "pfc"
	// derived from link-speed
	factSpeed = "speed"
	factWidth = "width"
)

// performance is the governor a benchmark node should run.
const performance = "performance"

// Evidence is one fact or counter beside a verdict.
type Evidence struct {
	Code string `json:"code"`
	Node string `json:"node"`
	// Key is the fact or counter ("mtu", "symbol_error", "pcie").
	Key string `json:"key"`
	// Value is the node's value; for a counter its delta ("+12").
	Value string `json:"value"`
	// Expected is the majority's value, the PCIe maximum, or
	// "performance"; empty for a counter.
	Expected string `json:"expected,omitempty"`
}

// Short formats e without its node: "mtu-differs mtu=1024 (majority
// 4096)".
func (e Evidence) Short() string {
	s := e.Code + " " + e.Key + "=" + e.Value
	switch e.Code {
	case CodePCIeBelowMax:
		s += " (max " + e.Expected + ")"
	case CodeGovernor:
		s += " (want " + e.Expected + ")"
	case CodeCounterMoved:
	default:
		s += " (majority " + e.Expected + ")"
	}
	return s
}

// differsCodes maps the facts compared with the majority to their code,
// in the order evidence lists them.
func differsCodes() []struct{ fact, code string } {
	return []struct{ fact, code string }{
		{factFW, CodeFWDiffers}, {factKernel, CodeKernelDiffers}, {factMTU, CodeMTUDiffers},
		{factSpeed, CodeSpeedDiffers}, {factWidth, CodeWidthDiffers}, {factGIDType, CodeGIDTypeDiffers},
		{factECNNP, CodeECNDiffers}, {factECNRP, CodeECNDiffers}, {factTrust, CodeTrustDiffers}, {factPFC, CodePFCDiffers},
	}
}

// compared are a node's facts compared with the majority, link-speed
// split into speed and width.
func compared(facts map[string]string) map[string]string {
	out := make(map[string]string)
	for _, d := range differsCodes() {
		if v, ok := facts[d.fact]; ok {
			out[d.fact] = v
		}
	}
	if ls, ok := facts[factLinkSpeed]; ok {
		out[factSpeed], out[factWidth] = splitLinkSpeed(ls)
		if out[factWidth] == "" {
			delete(out, factWidth)
		}
	}
	return out
}

// splitLinkSpeed splits "100 Gb/sec (4X EDR)" into "100 Gb/sec" and
// "4X" (empty when there is no width).
func splitLinkSpeed(s string) (speed, width string) {
	speed, paren, _ := strings.Cut(s, "(")
	for _, w := range strings.Fields(strings.TrimSuffix(strings.TrimSpace(paren), ")")) {
		if n, ok := strings.CutSuffix(strings.ToUpper(w), "X"); ok {
			if _, err := strconv.Atoi(n); err == nil {
				width = n + "X"
			}
		}
	}
	return strings.TrimSpace(speed), width
}

// majorities maps each compared fact to the value more than half of
// the nodes reporting it have; a fact without one is absent.
func majorities(f *Fabric) map[string]string {
	counts := make(map[string]map[string]int)
	totals := make(map[string]int)
	for _, facts := range f.Facts {
		for k, v := range compared(facts) {
			mapFor(counts, k)[v]++
			totals[k]++
		}
	}
	out := make(map[string]string)
	for k, vs := range counts {
		for v, c := range vs {
			if 2*c > totals[k] {
				out[k] = v
			}
		}
	}
	return out
}

// mismatches lists, node by node, the facts that differ from major.
func mismatches(f *Fabric, major map[string]string) []Evidence {
	var out []Evidence
	for _, node := range slices.Sorted(maps.Keys(f.Facts)) {
		out = append(out, differs(f, node, major)...)
	}
	return out
}

// differs lists node's facts that differ from major.
func differs(f *Fabric, node string, major map[string]string) []Evidence {
	var out []Evidence
	mine := compared(f.Facts[node])
	for _, d := range differsCodes() {
		v, ok := mine[d.fact]
		if m, known := major[d.fact]; ok && known && v != m {
			out = append(out, Evidence{Code: d.code, Node: node, Key: d.fact, Value: v, Expected: m})
		}
	}
	return out
}

// evidenceFor lists the evidence about node: moved counters, facts
// against the majority, PCIe below its maximum, the governor.
func evidenceFor(f *Fabric, node string, major map[string]string) []Evidence {
	out := append(movedCounters(f, node), differs(f, node, major)...)
	if e, ok := pcieBelowMax(f.Facts[node]); ok {
		e.Node = node
		out = append(out, e)
	}
	if g, ok := f.Facts[node][factGovernor]; ok && g != performance {
		out = append(out, Evidence{Code: CodeGovernor, Node: node, Key: factGovernor, Value: g, Expected: performance})
	}
	return out
}

// movedCounters lists node's counters with a nonzero delta, traffic
// counters left out.
func movedCounters(f *Fabric, node string) []Evidence {
	var out []Evidence
	for _, c := range slices.Sorted(maps.Keys(f.Counters[node])) {
		d := f.Counters[node][c]
		if d == 0 || isTraffic(c) {
			continue
		}
		v := strconv.FormatFloat(d, 'f', -1, 64)
		if d > 0 {
			v = "+" + v
		}
		out = append(out, Evidence{Code: CodeCounterMoved, Node: node, Key: c, Value: v})
	}
	return out
}

// isTraffic reports whether a counter counts traffic, which moves in
// every run, rather than errors, retransmissions or congestion.
func isTraffic(counter string) bool {
	switch counter {
	case "port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets",
		"unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets",
		"port_unicast_xmit_packets", "port_unicast_rcv_packets",
		"port_multicast_xmit_packets", "port_multicast_rcv_packets",
		"rx_write_requests", "rx_read_requests", "rx_atomic_requests",
		"sent_pkts", "rcvd_pkts": // rxe's hw_counters
		return true
	}
	return false
}

// pcieBelowMax reports PCIe trained below its maximum speed or width.
func pcieBelowMax(facts map[string]string) (Evidence, bool) {
	speed, okS := leadingNumber(facts[factPCIeSpeed])
	maxSpeed, okMS := leadingNumber(facts[factPCIeMaxSpeed])
	width, okW := leadingNumber(facts[factPCIeWidth])
	maxWidth, okMW := leadingNumber(facts[factPCIeMaxWidth])
	below := (okS && okMS && speed < maxSpeed) || (okW && okMW && width < maxWidth)
	if !below {
		return Evidence{}, false
	}
	return Evidence{
		Code:     CodePCIeBelowMax,
		Key:      "pcie",
		Value:    pcieText(facts[factPCIeSpeed], facts[factPCIeWidth]),
		Expected: pcieText(facts[factPCIeMaxSpeed], facts[factPCIeMaxWidth]),
	}, true
}

// pcieText formats a PCIe speed and width: "8.0 GT/s x8".
func pcieText(speed, width string) string {
	if width != "" && !strings.HasPrefix(strings.ToLower(width), "x") {
		width = "x" + width
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s", speed, width))
}

// leadingNumber parses the number a fact starts with, after an
// optional 'x': "16.0 GT/s PCIe" → 16, "x8" → 8.
func leadingNumber(s string) (float64, bool) {
	s = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "x")
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.') {
		end++
	}
	v, err := strconv.ParseFloat(s[:end], 64)
	return v, err == nil
}
